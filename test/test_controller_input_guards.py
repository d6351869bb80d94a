"""The controller node's guards against bad input, in process (no DDS between the test and the
node: its callbacks are called directly): a malformed ``ee_goal`` changes nothing in progress,
a clock jumping ahead ends the goal saying so, a ``/clock`` message that is no valid time is
dropped, a ``joint_states`` naming a joint twice is refused, and each kind of bad state
message is logged."""

from __future__ import annotations

import re
import time
import warnings

import numpy as np
import pytest
from clock_source import clock_source

import ffsim_ros.dynamics as D

pytestmark = pytest.mark.ros


def slow_state() -> list:
    """``state_timeout`` 60 s for the nodes fed on the wall clock: the state fed stays fresh
    however slow the machine is between a feed and the callbacks that use it."""
    from rclpy.parameter import Parameter

    return [Parameter('state_timeout', value=60.0)]


class Probe:
    """A :class:`ReactionlessControllerNode` fed by calling its subscriptions' callbacks:
    fresh state at the node clock's time, goals, and what it publishes on ``goal_status``."""

    def __init__(self, node) -> None:
        self.node = node
        self.callbacks = {s.topic_name: s.callback for s in node.subscriptions}
        self.names = list(node.model.joint_names)
        self.published: list = []
        node.goal_status.publisher.publish = self.published.append  # type: ignore[method-assign]

    def feed(self, positions: float = 0.0) -> None:
        """``joint_states`` and ``base_odom`` of a robot at rest, stamped now."""
        from nav_msgs.msg import Odometry
        from sensor_msgs.msg import JointState

        from ffsim_ros.node_support import to_stamp

        stamp = to_stamp(self.node.get_clock().now().nanoseconds)
        joints = JointState(name=self.names, position=[positions] * len(self.names))
        joints.velocity = [0.0] * len(self.names)
        joints.header.stamp = stamp
        odom = Odometry()
        odom.header.stamp = stamp
        odom.pose.pose.orientation.w = 1.0
        self.callbacks['/joint_states'](joints)
        self.callbacks['/base_odom'](odom)

    def update(self) -> None:
        """One control update on fresh state."""
        self.feed()
        self.node._on_timer()

    def goal(self, offset=(0.03, 0.0, 0.0), frame: str = 'world', quat=(0.0, 0.0, 0.0, 1.0)):
        """An ``ee_goal`` ``offset`` from the end effector at rest (``offset``: a 3-vector, or
        absolute coordinates when given as a tuple ``('at', xyz)``)."""
        from geometry_msgs.msg import PoseStamped

        if offset[0] == 'at':
            xyz = np.asarray(offset[1], dtype=float)
        else:
            q = D.neutral(self.node.model)
            xyz = D.link_pose(self.node.model, q, 'ee_link')[0] + np.asarray(offset)
        msg = PoseStamped()
        msg.header.frame_id = frame
        msg.pose.position.x, msg.pose.position.y, msg.pose.position.z = (float(x) for x in xyz)
        o = msg.pose.orientation
        o.x, o.y, o.z, o.w = (float(x) for x in quat)
        return msg

    def send(self, msg) -> None:
        self.callbacks['/ee_goal'](msg)


def _trajectory_request(model, seconds: float, t: float):
    """A FollowJointTrajectory-like request holding the joints at 0 for ``seconds`` from time
    ``t`` (nobody waits for it: no goal handle)."""
    from ffsim_ros.control.trajectory import JointTrajectory, Tolerances, check_waypoints
    from ffsim_ros.node_support.trajectory_action import TrajectoryRequest

    phi = np.zeros(model.n)
    names = list(model.joint_names)
    waypoints = check_waypoints(model, names, [seconds], [phi], [[]], [[]], [[]])
    return TrajectoryRequest(
        JointTrajectory.start(waypoints, t, phi, phi),
        Tolerances.uniform(model.n, 0.0, 0.05, 0.05, 1.0),
    )


def test_a_malformed_ee_goal_leaves_the_active_goal_and_the_trajectory(
    rclpy_context, capfd
) -> None:
    """A goal with a NaN, out of reach (1e308), in another frame or with a NaN orientation is
    refused with an error naming what was expected and what came: the active goal goes on
    (it used to end as "replaced by a rejected goal"), its status stays on ``goal_status``;
    a trajectory followed goes on (it used to be aborted, "preempted by an ee_goal", before the
    goal was checked). With no goal active the rejection is a goal of its own on
    ``goal_status``, as before."""
    from ffsim_ros.control import GoalOutcome
    from ffsim_ros.node_support import LogThrottle
    from ffsim_ros.reactionless_controller import LOG_PERIOD, ReactionlessControllerNode

    node = ReactionlessControllerNode(context=rclpy_context, parameter_overrides=slow_state())
    try:
        # (no cap on the lines of all kinds a second: a dozen kinds come within one here)
        node._log_throttle = LogThrottle(LOG_PERIOD, max_lines=100)
        probe = Probe(node)
        nan = float('nan')
        malformed = [
            (probe.goal(('at', (nan, 0.0, 0.0))), 'goal: expected 3 finite coordinates, got [nan'),
            (
                probe.goal(('at', (1e308, 0.0, 0.0))),
                'goal unreachable: [1e+308, 0.0, 0.0] is 1e+308 m from the shoulder, expected '
                'at most',
            ),
            (probe.goal(frame='base_link'), "expected frame_id 'world', got 'base_link'"),
            (
                probe.goal(quat=(0.0, nan, 0.0, 1.0)),
                'orientation: expected finite values, got [0.0, nan, 0.0, 1.0]',
            ),
        ]
        # nothing in progress: each rejection is a goal of its own on goal_status
        probe.feed()
        with warnings.catch_warnings():
            warnings.simplefilter('error')  # (1e308: no overflow in the status's figures)
            for k, (msg, text) in enumerate(malformed):
                probe.send(msg)
                probe.update()
                status = node.supervisor.status
                assert status.outcome is GoalOutcome.ABORTED and status.goal_id == k + 1
                assert status.reason.startswith(f'rejected: {text}'), status.reason
                assert probe.published[-1].message.startswith(
                    f'aborted (stopped): rejected: {text}'
                )
                assert f'ee_goal rejected ({text}' in capfd.readouterr().err
        count = len(probe.published)
        assert count == len(malformed)
        good = probe.goal((0.03, 0.0, 0.0))
        probe.send(good)
        probe.update()
        status = node.supervisor.status
        assert status.outcome is GoalOutcome.ACTIVE and status.goal_id == 1 + len(malformed)
        target = node.supervisor.goal
        capfd.readouterr()
        count = len(probe.published)
        for msg, text in malformed:
            probe.send(msg)
            probe.update()  # (a goal kept for the update would be taken here)
            status = node.supervisor.status
            assert status.outcome is GoalOutcome.ACTIVE, (text, status.reason)
            assert status.goal_id == 1 + len(malformed) and status.reason == ''
            np.testing.assert_array_equal(node.supervisor.goal, target)
            err = capfd.readouterr().err
            assert f'ee_goal rejected ({text}' in err, err
            assert 'ignored: the active goal goes on' in err, err
        assert len(probe.published) == count  # goal_status still holds the active goal's
        # a trajectory followed: a malformed goal leaves it running
        request = _trajectory_request(node.model, 5.0, node.get_clock().now().nanoseconds * 1e-9)
        node.submit_trajectory(request)
        probe.update()
        assert node._request is request and request.outcome is None
        assert node.supervisor.status.reason == 'preempted by a joint trajectory'
        for msg, text in malformed:
            probe.send(msg)
            probe.update()
            assert node._request is request and request.outcome is None, request.outcome
            err = capfd.readouterr().err
            assert f'ee_goal rejected ({text}' in err and 'the joint trajectory goes on' in err
        # no goal active: each rejection is on goal_status, a goal of its own
        rejected = [m.message for m in probe.published[count:]]
        assert len(rejected) == 1 + len(malformed), rejected  # (the preempted goal, first)
        assert all(m.startswith('aborted (stopped): rejected: ') for m in rejected[1:]), rejected
        assert node.supervisor.status.goal_id == 1 + 2 * len(malformed)
        # a well-formed goal still preempts the trajectory
        probe.send(good)
        probe.update()
        assert request.outcome is not None and request.outcome[2] == 'preempted by an ee_goal'
        assert node.supervisor.status.outcome is GoalOutcome.ACTIVE
    finally:
        node.destroy_node()


def test_a_forward_clock_jump_ends_the_goal_saying_so(rclpy_context, capfd) -> None:
    """``/clock`` jumping from 1.36 s to 99999 s while a goal is active (since 1 s) ends it as
    aborted, "the clock jumped ahead by 99997.640 s" -- it ended as "timeout: not reached after
    300 s", which it never was. Advances up to 1 s (or state_timeout, if longer) between two
    readings are no jump; the first /clock after a start (the clock at 0 before) neither."""
    from rclpy.clock import ClockType
    from rclpy.parameter import Parameter
    from rclpy.time import Time

    from ffsim_ros.control import GoalOutcome
    from ffsim_ros.reactionless_controller import CLOCK_JUMP_AHEAD, ReactionlessControllerNode

    node = ReactionlessControllerNode(
        context=rclpy_context, parameter_overrides=[Parameter('use_sim_time', value=True)]
    )
    try:
        clock = node.get_clock()

        def at(seconds: float) -> None:
            clock.set_ros_time_override(Time(seconds=seconds, clock_type=ClockType.ROS_TIME))

        probe = Probe(node)
        assert clock.now().nanoseconds == 0  # no /clock yet
        probe.feed()
        at(1.0)  # the first /clock: no jump
        probe.feed()
        assert 'jumped' not in capfd.readouterr().err
        probe.send(probe.goal())
        probe.update()
        status = node.supervisor.status
        assert status.outcome is GoalOutcome.ACTIVE and status.goal_id == 1, status.reason
        at(1.36)
        probe.update()
        assert node.supervisor.status.outcome is GoalOutcome.ACTIVE
        assert node.clock_jump_ns == CLOCK_JUMP_AHEAD * 1e9  # (state_timeout 0.2 s)
        at(1.36 + 0.9 * CLOCK_JUMP_AHEAD)  # a stall of 0.9 s: no jump
        probe.update()
        assert node.supervisor.status.outcome is GoalOutcome.ACTIVE
        before = clock.now().nanoseconds * 1e-9
        at(99999.0)
        node._on_timer()  # (the timer first: the state is stale there)
        probe.update()  # fresh state on the new clock
        status = node.supervisor.status
        assert status.outcome is GoalOutcome.ABORTED, status.reason
        assert status.reason.startswith(
            f'dropped: the clock jumped ahead by {99999.0 - before:.3f} s, from {before:.3f} s '
            'to 99999.000 s'
        ), status.reason
        assert 'timeout' not in status.reason
        assert any('the clock jumped ahead by' in m.message for m in probe.published), (
            probe.published
        )
        assert 'the clock jumped ahead by' in capfd.readouterr().err
        # control goes on from the new clock: a new goal is taken
        probe.send(probe.goal())
        probe.update()
        assert node.supervisor.status.outcome is GoalOutcome.ACTIVE
    finally:
        node.destroy_node()


def test_a_clock_message_with_nanosec_beyond_a_second_is_dropped(rclpy_context) -> None:
    """``/clock`` with ``nanosec`` = 4294967295 is no valid time (nanosec < 1e9): the package's
    executors drop it with a warning naming the field, as a negative ``sec``; rclpy's own
    executor lets the time source read it as 4.295 s (the check can fail)."""
    import rclpy
    from rclpy.clock import JumpThreshold
    from rclpy.duration import Duration
    from rclpy.executors import SingleThreadedExecutor
    from rclpy.parameter import Parameter
    from rosgraph_msgs.msg import Clock

    from ffsim_ros.node_support import GuardedSingleThreadedExecutor, TopicsInlineExecutor

    invalid = 4_294_967_295

    def run(executor) -> tuple[list[int], list[str]]:
        """Send 3 s, then the invalid time and 5 s alternately until the invalid one was
        handled (read or dropped); the clock's values and the warnings."""
        node = rclpy.create_node(
            'clock_probe',
            context=rclpy_context,
            parameter_overrides=[Parameter('use_sim_time', value=True)],
        )
        warnings: list[str] = []

        class Logger:
            def warning(self, text: str, **_: object) -> None:
                warnings.append(text)

        node.get_logger = Logger  # type: ignore[method-assign]
        clock = node.get_clock()
        seen: list[int] = []
        handle = clock.create_jump_callback(
            JumpThreshold(
                min_forward=Duration(nanoseconds=1), min_backward=Duration(nanoseconds=-1)
            ),
            post_callback=lambda _: seen.append(clock.now().nanoseconds),
        )
        with clock_source(rclpy_context, executor, node) as (pub, deadline):
            try:
                bad = Clock()
                bad.clock.nanosec = invalid
                three, five = Clock(), Clock()
                three.clock.sec, five.clock.sec = 3, 5

                def handled() -> bool:  # the invalid time read, or dropped with a warning
                    return invalid in seen or any('nanosec' in w for w in warnings)

                while time.monotonic() < deadline and clock.now().nanoseconds != 3 * 10**9:
                    pub.publish(three)
                    executor.spin_once(timeout_sec=0.05)
                while time.monotonic() < deadline and not (
                    handled() and clock.now().nanoseconds == 5 * 10**9
                ):
                    pub.publish(bad)  # (depth 1: it may be overwritten before it is taken)
                    executor.spin_once(timeout_sec=0.05)
                    pub.publish(five)
                    executor.spin_once(timeout_sec=0.05)
                assert time.monotonic() < deadline, 'the clock never followed /clock'
                return seen, warnings
            finally:
                handle.unregister()

    for executor in (
        GuardedSingleThreadedExecutor(context=rclpy_context),
        TopicsInlineExecutor(num_threads=2, context=rclpy_context),
    ):
        seen, warnings = run(executor)
        assert invalid not in seen and seen[-1] == 5 * 10**9, seen
        assert any(
            f'/clock message dropped (clock.nanosec: expected less than 1000000000, got {invalid})'
            in w
            for w in warnings
        ), warnings
    seen, _ = run(SingleThreadedExecutor(context=rclpy_context))
    assert invalid in seen, seen


def test_joint_states_naming_a_joint_twice_are_refused(rclpy_context, capfd) -> None:
    """A ``joint_states`` naming a joint of the robot twice is refused whole, naming it (the
    last value was taken silently), as the simulator's joint_commands refuses one; the last good
    state is kept. Other names repeated are ignored with the rest of the other names."""
    from sensor_msgs.msg import JointState

    from ffsim_ros.node_support.state_messages import joint_state_values
    from ffsim_ros.reactionless_controller import ReactionlessControllerNode

    joints = ('a', 'b', 'c')
    with pytest.raises(ValueError) as info:
        joint_state_values(joints, ['a', 'b', 'c', 'b'], [1.0, 2.0, 3.0, 9.0], [])
    assert str(info.value) == (
        "expected each joint of ['a', 'b', 'c'] named at most once, got ['b'] named more than once"
    )
    pos, _ = joint_state_values(joints, ['x', 'a', 'b', 'x', 'c'], [0, 1.0, 2.0, 0, 3.0], [])
    assert pos.tolist() == [1.0, 2.0, 3.0]
    node = ReactionlessControllerNode(context=rclpy_context, parameter_overrides=slow_state())
    try:
        probe = Probe(node)
        probe.feed(0.1)
        q, _ = node._measured()
        names = probe.names
        twice = JointState(name=[*names, names[2]], position=[0.1] * len(names) + [0.7])
        capfd.readouterr()
        probe.callbacks['/joint_states'](twice)
        again, _ = node._measured()
        np.testing.assert_array_equal(again, q)
        err = capfd.readouterr().err
        assert f"got ['{names[2]}'] named more than once; ignored, the last good state kept" in err
    finally:
        node.destroy_node()


def test_each_kind_of_bad_state_message_is_logged(rclpy_context, capfd) -> None:
    """Errors on ``joint_states`` and ``base_odom`` are throttled per kind of message: a
    missing joint right after a NaN (and a joint named twice, a NaN or a zero quaternion in
    base_odom) gets its own line -- rclpy's per-call-site throttle showed only the first of a
    second; a repeat of a kind is held back."""
    from nav_msgs.msg import Odometry
    from sensor_msgs.msg import JointState

    from ffsim_ros.node_support import LogThrottle
    from ffsim_ros.reactionless_controller import ReactionlessControllerNode

    node = ReactionlessControllerNode(context=rclpy_context, parameter_overrides=slow_state())
    try:
        node._log_throttle = LogThrottle(60.0)  # (a slow machine cannot let a repeat through)
        probe = Probe(node)
        probe.feed()
        names = probe.names
        n = len(names)
        nan_odom = Odometry()
        nan_odom.pose.pose.position.x = float('nan')
        nan_odom.pose.pose.orientation.w = 1.0
        zero_odom = Odometry()
        zero_odom.pose.pose.orientation.w = 0.0  # (its default is 1)
        bad = [
            (
                '/joint_states',
                JointState(name=names, position=[float('nan')] + [0.0] * (n - 1)),
                f"non-finite values {{'{names[0]}.position': nan}}",
            ),
            ('/joint_states', JointState(name=names[1:], position=[0.0] * (n - 1)), 'no position'),
            (
                '/joint_states',
                JointState(name=[*names, names[0]], position=[0.0] * (n + 1)),
                'named more than once',
            ),
            (
                '/base_odom',
                nan_odom,
                "base_odom: expected a finite pose and twist, got {'position': [nan, 0.0, 0.0]}",
            ),
            ('/base_odom', zero_odom, 'base_odom: orientation: expected a non-zero finite'),
        ]
        capfd.readouterr()
        for topic, msg, _ in bad:
            probe.callbacks[topic](msg)
        err = capfd.readouterr().err
        for _, _, text in bad:
            assert err.count(text) == 1, (text, err)
        probe.callbacks['/joint_states'](bad[1][1])  # the same kind again: held back
        assert 'no position' not in capfd.readouterr().err
        assert not isinstance(node._measured(), str)  # the last good state kept throughout
    finally:
        node.destroy_node()


def test_base_odom_in_another_frame_is_refused(rclpy_context, capfd) -> None:
    """A ``base_odom`` whose ``header.frame_id`` is not the controller's ``world_frame`` (the
    simulator started with another one) is logged and ignored, the last good state kept: the
    controller used to take it, and published ``ee_pose`` labelled in ``world`` with
    coordinates of the other frame. An empty frame id is taken as ``world_frame``."""
    from nav_msgs.msg import Odometry

    from ffsim_ros.reactionless_controller import ReactionlessControllerNode

    node = ReactionlessControllerNode(context=rclpy_context, parameter_overrides=slow_state())
    try:
        probe = Probe(node)
        probe.feed()  # frame_id '' (taken as world)
        q_good, _ = node._measured()
        odom = Odometry()
        odom.header.frame_id = 'inertial'
        odom.header.stamp = node.get_clock().now().to_msg()
        odom.pose.pose.position.x = 0.01  # (under jump_threshold)
        odom.pose.pose.orientation.w = 1.0
        probe.callbacks['/base_odom'](odom)
        err = capfd.readouterr().err
        assert "base_odom: expected header.frame_id 'world' (world_frame), got 'inertial'" in err
        q_after, _ = node._measured()
        np.testing.assert_array_equal(q_after, q_good)
        from sensor_msgs.msg import JointState

        joints = JointState(name=probe.names, position=[0.0] * len(probe.names))
        joints.velocity = [0.0] * len(probe.names)
        joints.header.stamp = odom.header.stamp  # (paired by stamp)
        probe.callbacks['/joint_states'](joints)
        odom.header.frame_id = 'world'
        probe.callbacks['/base_odom'](odom)
        q_world, _ = node._measured()
        assert abs(q_world[0] - q_good[0] - 0.01) < 1e-12  # the same message in world: taken
    finally:
        node.destroy_node()


def test_a_run_time_change_of_use_sim_time_is_named_as_such(rclpy_context, capfd) -> None:
    """``use_sim_time`` set at run time moves the node's clock from the wall clock to the
    simulated time (0 before any /clock): the goal is dropped saying that use_sim_time
    changed, not "the clock went back ... (a new simulator?)"; and back to the wall clock
    (a jump ahead) likewise."""
    from rclpy.parameter import Parameter

    from ffsim_ros.control import GoalOutcome
    from ffsim_ros.reactionless_controller import ReactionlessControllerNode

    node = ReactionlessControllerNode(context=rclpy_context, parameter_overrides=slow_state())
    try:
        probe = Probe(node)
        probe.feed()
        probe.send(probe.goal())
        probe.update()
        assert node.supervisor.status.outcome is GoalOutcome.ACTIVE
        capfd.readouterr()
        for value in (True, False):
            assert node.set_parameters([Parameter('use_sim_time', value=value)])[0].successful
            probe.feed()  # (read the clock)
            changed = f"the node's use_sim_time changed to {str(value).lower()}: the clock went "
            logged = capfd.readouterr().err
            assert changed in logged, logged
            assert 'a new simulator?' not in logged and 'jumped ahead' not in logged, logged
            if value:
                status = node.supervisor.status
                assert status.outcome is GoalOutcome.ABORTED
                assert status.reason.startswith('dropped: ' + changed), status.reason
                assert status.reason.endswith('(use_sim_time set at run time)'), status.reason
    finally:
        node.destroy_node()


def test_the_watchdog_tells_a_missing_clock_from_a_paused_or_dead_simulator() -> None:
    """``stall_reason``: the state's publishers gone, a dead simulator; the state published
    but nothing on the (remapped) clock topic, ``use_sim_time`` without a clock; all there, a
    paused simulation (None); on wall time no clock topic is counted."""
    from ffsim_ros.node_support.controller_watch import clock_jump, stall_reason

    state = ['/sim/joint_states', '/sim/base_odom']
    everything = {'/sim/joint_states': 1, '/sim/base_odom': 1, '/sim/clock': 1}

    def reason(counts: dict, clock: str | None = '/sim/clock'):
        return stall_reason(2.5, state, clock, lambda topic: counts.get(topic, 0))

    assert reason(everything) is None  # paused
    assert reason({**everything, '/sim/clock': 0}, None) is None  # (wall time)
    assert reason({**everything, '/sim/clock': 0, '/clock': 1}) == (
        'use_sim_time is true but no publisher on /sim/clock: remap the clock topic or start '
        'the simulator with publish_clock',
        'no simulation clock',
    )
    assert reason({'/sim/joint_states': 1}) == (
        'the simulation clock has not advanced for 2.5 s and no simulator publishes '
        '/sim/base_odom',
        'the simulator stopped?',
    )
    # clock jumps: a use_sim_time change first, whichever way the time went
    assert clock_jump(None, 5, True, 10) is None
    assert clock_jump((5, True), 7, True, 10) is None
    assert clock_jump((5, True), 3, True, 10)[0].startswith('the clock went back')
    assert clock_jump((5, True), 16, True, 10)[0].startswith('the clock jumped ahead')
    assert clock_jump((0, True), 10**12, True, 10) is None  # (the first /clock)
    for last, now, sim in (((10**18, False), 0, True), ((0, True), 10**18, False)):
        assert clock_jump(last, now, sim, 10)[0].startswith("the node's use_sim_time changed")


def test_use_sim_time_without_a_clock_publisher_drops_the_goal_saying_so(
    rclpy_context, ros_node, wait_until, capfd
) -> None:
    """A controller on ``use_sim_time`` whose clock topic (``/clock`` remapped to
    ``/sim/clock`` here) has no publisher, with the state published (a simulator with
    ``publish_clock`` false, or the remap missing): its clock stands at 0 and the control timer
    never fires. It took this for a paused simulation -- the goal "active", nothing commanded,
    nothing logged. Counted over DDS on the topic the time source subscribes to (remapped), it
    drops the goal and rejects the next one naming the cause, and warns; with a publisher on
    /sim/clock the stall is a pause again (the goal taken), also after a rejection (the reason
    was kept until the clock advanced: goals rejected for a cause gone)."""
    from nav_msgs.msg import Odometry
    from rclpy.parameter import Parameter
    from rosgraph_msgs.msg import Clock
    from sensor_msgs.msg import JointState

    from ffsim_ros.control import GoalOutcome
    from ffsim_ros.reactionless_controller import ReactionlessControllerNode

    node = ReactionlessControllerNode(
        context=rclpy_context,
        parameter_overrides=[Parameter('use_sim_time', value=True)],
        cli_args=['--ros-args', '-r', '/clock:=/sim/clock'],
    )
    try:
        assert '/sim/clock' in [s.topic_name for s in node.subscriptions]  # (rclpy's)
        peer = ros_node('simulator_stand_in')
        peer.create_publisher(JointState, '/joint_states', 1)
        peer.create_publisher(Odometry, '/base_odom', 1)
        clock_pub = peer.create_publisher(Clock, '/sim/clock', 1)

        def counts() -> tuple[int, ...]:
            return tuple(
                node.count_publishers(t)
                for t in ('/joint_states', '/base_odom', '/sim/clock', '/clock')
            )

        assert wait_until(lambda: counts() == (1, 1, 1, 0), 20), counts()
        node.clock_stall = 0.0  # (the stall noticed at the next look, not after 2 s)
        probe = Probe(node)
        probe.feed()  # (fresh at the node clock's 0: no /clock came)
        probe.send(probe.goal())
        node._on_watchdog()  # paused: the goal is taken on the last state
        assert node.supervisor.status.outcome is GoalOutcome.ACTIVE
        # the clock's publisher on /clock, not on the topic the controller listens to
        peer.destroy_publisher(clock_pub)
        peer.create_publisher(Clock, '/clock', 1)
        assert wait_until(lambda: counts() == (1, 1, 0, 1), 20), counts()
        capfd.readouterr()
        node._on_watchdog()
        why = (
            'use_sim_time is true but no publisher on /sim/clock: remap the clock topic or start '
            'the simulator with publish_clock'
        )
        status = node.supervisor.status
        assert status.outcome is GoalOutcome.ABORTED, status.reason
        assert status.reason == f'dropped: {why} (no simulation clock)', status.reason
        assert why in capfd.readouterr().err
        probe.send(probe.goal())  # rejected at once, saying why
        status = node.supervisor.status
        assert status.outcome is GoalOutcome.ABORTED and status.goal_id == 2, status
        assert status.reason.startswith(f'rejected: {why}'), status.reason
        assert any(why in m.message for m in probe.published), probe.published
        # a clock's publisher on /sim/clock again, the clock still at 0 (a simulator that came
        # up paused after the watchdog found none): a pause, the reason gone with it -- the
        # goals were rejected for it until the clock advanced
        peer.create_publisher(Clock, '/sim/clock', 1)
        assert wait_until(lambda: counts() == (1, 1, 1, 1), 20), counts()
        node._on_watchdog()
        probe.send(probe.goal())
        node._on_watchdog()  # the pending goal taken on the last state
        status = node.supervisor.status
        assert status.outcome is GoalOutcome.ACTIVE and status.goal_id == 3, status
    finally:
        node.destroy_node()


def test_on_wall_time_the_watchdog_drops_the_goal_when_the_state_publishers_go(
    rclpy_context, ros_node, wait_until
) -> None:
    """On wall time the node's clock never stops: the watchdog takes state older than
    ``clock_stall`` as the stall (it looked at the clock only, so a vanished simulator left the
    goal active for ever). With the state's publishers there (a pause) the goal is kept; with
    one gone it is dropped saying so, and a goal sent then is rejected for it; once the state
    is fresh again the reason is gone."""
    from nav_msgs.msg import Odometry
    from sensor_msgs.msg import JointState

    from ffsim_ros.control import GoalOutcome
    from ffsim_ros.reactionless_controller import ReactionlessControllerNode

    node = ReactionlessControllerNode(context=rclpy_context)
    try:
        assert not node.get_clock().ros_time_is_active
        peer = ros_node('simulator_stand_in')
        joints = peer.create_publisher(JointState, '/joint_states', 1)
        peer.create_publisher(Odometry, '/base_odom', 1)

        def counts() -> tuple[int, ...]:
            return tuple(node.count_publishers(t) for t in ('/joint_states', '/base_odom'))

        assert wait_until(lambda: counts() == (1, 1), 20), counts()
        probe = Probe(node)
        probe.feed()
        probe.send(probe.goal())
        node._on_timer()
        assert node.supervisor.status.outcome is GoalOutcome.ACTIVE
        stall = node.clock_stall
        node.clock_stall = 1e-9  # (any age of the state is a stall now, not after 2 s)
        node._on_watchdog()  # the publishers there: a pause, the goal kept
        assert node.supervisor.status.outcome is GoalOutcome.ACTIVE
        peer.destroy_publisher(joints)
        assert wait_until(lambda: counts() == (0, 1), 20), counts()
        node._on_watchdog()
        status = node.supervisor.status
        assert status.outcome is GoalOutcome.ABORTED, status
        why = r'no fresh state came for \d+\.\d s and no simulator publishes /joint_states'
        assert re.fullmatch(f'dropped: {why} \\(the simulator stopped\\?\\)', status.reason), (
            status.reason
        )
        probe.send(probe.goal())  # rejected, saying why
        status = node.supervisor.status
        assert status.outcome is GoalOutcome.ABORTED and status.goal_id == 2, status
        assert re.match(f'rejected: {why}', status.reason), status.reason
        node.clock_stall = stall  # fresh state again: the reason gone, goals taken
        probe.feed()
        node._on_watchdog()
        probe.send(probe.goal())
        node._on_timer()
        status = node.supervisor.status
        assert status.outcome is GoalOutcome.ACTIVE and status.goal_id == 3, status
    finally:
        node.destroy_node()


def test_late_updates_on_wall_time_blame_the_load_not_the_simulation(rclpy_context) -> None:
    """Control updates that keep coming late are warned about; on the wall clock the cause is
    the process not being scheduled (machine load), not the simulation's pace: the warning
    said "the simulation ran faster than this controller keeps up (a real_time_factor too
    high ...)" whatever the clock. On simulated time it still says so."""
    from rclpy.parameter import Parameter

    from ffsim_ros.reactionless_controller import ReactionlessControllerNode

    node = ReactionlessControllerNode(context=rclpy_context)
    try:
        warned: list[str] = []

        class Logger:
            def warning(self, text: str, **_: object) -> None:
                warned.append(text)

        real_logger = node.get_logger
        node.get_logger = Logger  # type: ignore[method-assign]
        period = int(node.control_period * 1e9)

        def late_updates() -> str:
            """Updates 3 periods apart until one is warned about; its warning."""
            node._late.clear()
            count = len(warned)
            for k in range(6):
                node._check_period(3 * k * period)
            assert len(warned) > count
            return warned[-1]

        assert not node.get_clock().ros_time_is_active
        text = late_updates()
        assert text.startswith('control update 30.0 ms after the previous one'), text
        assert 'this process was not scheduled for 30.0 ms (machine load' in text, text
        assert 'simulation' not in text and 'real_time_factor' not in text, text
        node.get_logger = real_logger  # type: ignore[method-assign]
        assert node.set_parameters([Parameter('use_sim_time', value=True)])[0].successful
        node.get_logger = Logger  # type: ignore[method-assign]
        assert node.get_clock().ros_time_is_active
        text = late_updates()
        assert 'the simulation ran faster than this controller keeps up' in text, text
        assert 'not scheduled' not in text, text
    finally:
        node.destroy_node()


def test_a_clock_going_back_with_two_clock_publishers_names_them(
    rclpy_context, ros_node, capfd
) -> None:
    """Two simulators on one ``/clock`` (namespaced robots without ``-r /clock:=clock``): the
    controller's clock goes back dozens of times a second, and each time it said "(a new
    simulator?)". With more than one publisher on its clock topic it now names them and the
    remap; the goal dropped gives the cause. With one publisher (a restarted simulator) the
    hint stays. A run-time switch to simulated time names the resolved clock topic (it said
    "/clock" whatever the remap). In process: the publishers are nodes of the same context,
    the clock messages handed to the time source's subscription."""
    from builtin_interfaces.msg import Time as TimeMsg
    from rclpy.parameter import Parameter
    from rosgraph_msgs.msg import Clock

    from ffsim_ros.control import GoalOutcome
    from ffsim_ros.reactionless_controller import ReactionlessControllerNode

    overrides = [*slow_state(), Parameter('use_sim_time', value=True)]
    node = ReactionlessControllerNode(context=rclpy_context, parameter_overrides=overrides)
    try:
        probe = Probe(node)
        # (the node's time source and the trajectory action's, each its own subscription)
        clocks = [s.callback for s in node.subscriptions if s.topic_name == '/clock']

        def tick(seconds: float) -> None:
            msg = Clock(clock=TimeMsg(sec=int(seconds), nanosec=round(seconds % 1 * 1e9)))
            for callback in clocks:
                callback(msg)
            node._now()

        ros_node('ffsim_simulator', namespace='/robot1').create_publisher(Clock, '/clock', 1)
        tick(5.0)
        capfd.readouterr()
        tick(4.5)  # one publisher: a new simulator, maybe
        logged = capfd.readouterr().err
        assert 'the clock went back from 5.000 s to 4.500 s (a new simulator?)' in logged, logged
        ros_node('ffsim_simulator', namespace='/robot2').create_publisher(Clock, '/clock', 1)
        assert node.count_publishers('/clock') == 2  # (the same context: no discovery)
        tick(5.0)
        probe.feed()
        probe.send(probe.goal())
        probe.update()
        assert node.supervisor.status.outcome is GoalOutcome.ACTIVE
        tick(4.6)
        logged = capfd.readouterr().err
        assert 'a new simulator?' not in logged, logged
        assert (
            'the clock went back from 5.000 s to 4.600 s (2 publishers on the clock topic '
            "/clock ('/robot1/ffsim_simulator', '/robot2/ffsim_simulator'): their simulated "
            'times interleave' in logged
        ), logged
        assert '-r /clock:=clock in each namespace, on the simulator and its controller' in logged
        status = node.supervisor.status
        assert status.outcome is GoalOutcome.ABORTED, status
        assert status.reason == (
            'dropped: the clock went back from 5.000 s to 4.600 s (2 publishers on /clock)'
        ), status.reason
    finally:
        node.destroy_node()
    node = ReactionlessControllerNode(
        context=rclpy_context,
        parameter_overrides=slow_state(),
        cli_args=['--ros-args', '-r', '/clock:=/sim/clock'],
    )
    try:
        node._now()
        capfd.readouterr()
        assert node.set_parameters([Parameter('use_sim_time', value=True)])[0].successful
        node._now()
        logged = capfd.readouterr().err
        assert 'the node clock is the simulated time (/sim/clock) now' in logged, logged
    finally:
        node.destroy_node()


def test_stale_state_names_its_topics_and_the_ones_nobody_publishes(
    rclpy_context, ros_node
) -> None:
    """The simulator's ``joint_states`` remapped, the controller's not: the goal was rejected
    for "no fresh joint_states (none since the start or the last jump)" and the log said "no
    fresh joint_states/base_odom: not commanding" every 2 s, naming neither the topic listened
    to nor that nothing publishes on it. Both now name the resolved topics and say "no
    publisher on <topic>" for the one without (counted as the stall watchdog does)."""
    from nav_msgs.msg import Odometry
    from sensor_msgs.msg import JointState

    from ffsim_ros.control import GoalOutcome
    from ffsim_ros.reactionless_controller import ReactionlessControllerNode

    node = ReactionlessControllerNode(context=rclpy_context, namespace='/r4')
    try:
        peer = ros_node('ffsim_simulator', namespace='/r4')  # (-r joint_states:=js)
        peer.create_publisher(JointState, '/r4/js', 1)
        peer.create_publisher(Odometry, '/r4/base_odom', 1)
        probe = Probe(node)
        probe.callbacks['/r4/ee_goal'](probe.goal())
        status = node.supervisor.status
        assert status.outcome is GoalOutcome.ABORTED, status
        stale = (
            'no fresh joint_states (none since the start or the last jump; no publisher on '
            '/r4/joint_states) and base_odom on /r4/base_odom (none since the start or the '
            'last jump) at '
        )
        assert status.reason.startswith(f'rejected: {stale}'), status.reason
        warned: list[str] = []

        class Logger:
            def warning(self, text: str, **_: object) -> None:
                warned.append(text)

        node.get_logger = Logger  # type: ignore[method-assign]
        node._on_timer()
        assert len(warned) == 1 and warned[0].startswith(stale), warned
        assert warned[0].endswith(': not commanding'), warned
    finally:
        node.destroy_node()


def test_a_state_message_stamped_far_from_the_simulated_clock_is_dropped(
    rclpy_context, capfd
) -> None:
    """On simulated time (clock at 2120.63 s) one ``joint_states`` or ``base_odom`` stamped at
    0 s or at 2^31-1 s (a bag replay, a joint_state_publisher with wall-clock stamps beside the
    simulator) aborted the active goal: "joint_states stamps went back from 2120.630 s to 0.000
    s"; the future one became the reference and the genuine next message was the jump. Such a
    message (more than the clock-jump bound, 30 s, away) is dropped, logged with its stamp, the
    clock and the publishers of its topic; the goal goes on. A reset of the simulated time (the
    clock going back with the stamps) still drops the goal."""
    from nav_msgs.msg import Odometry
    from rclpy.clock import ClockType
    from rclpy.parameter import Parameter
    from rclpy.time import Time
    from sensor_msgs.msg import JointState

    from ffsim_ros.control import GoalOutcome
    from ffsim_ros.node_support import to_stamp
    from ffsim_ros.reactionless_controller import ReactionlessControllerNode

    node = ReactionlessControllerNode(
        context=rclpy_context,
        parameter_overrides=[*slow_state(), Parameter('use_sim_time', value=True)],
    )
    try:
        clock = node.get_clock()

        def at(seconds: float) -> None:
            clock.set_ros_time_override(Time(seconds=seconds, clock_type=ClockType.ROS_TIME))

        def forged(topic: str, stamp_ns: int) -> None:
            if topic == '/joint_states':
                msg = JointState(name=probe.names, position=[0.3] * len(probe.names))
                msg.velocity = [0.0] * len(probe.names)
            else:
                msg = Odometry()
                msg.pose.pose.orientation.w = 1.0
                msg.pose.pose.position.x = 5.0
            msg.header.stamp = to_stamp(stamp_ns)
            probe.callbacks[topic](msg)

        probe = Probe(node)
        at(2120.63)
        probe.feed()
        probe.send(probe.goal())
        probe.update()
        assert node.supervisor.status.outcome is GoalOutcome.ACTIVE
        capfd.readouterr()
        t = 2120.63
        for topic in ('/joint_states', '/base_odom'):
            for stamp_ns, way in ((0, 'behind'), ((2**31 - 1) * 10**9, 'ahead of')):
                forged(topic, stamp_ns)
                t += 0.01
                at(t)
                probe.update()  # the genuine next messages
                status = node.supervisor.status
                assert status.outcome is GoalOutcome.ACTIVE, (topic, stamp_ns, status.reason)
                err = capfd.readouterr().err
                assert f'{topic}: a message stamped {stamp_ns * 1e-9:.3f} s' in err, err
                assert f' s {way} the node clock ({t - 0.01:.3f} s, simulated' in err, err
                assert f'dropped, the last good state kept (0 publisher(s) on {topic}' in err
                with node._state_lock:
                    joints, base = node._state.latest()
                np.testing.assert_array_equal(joints[0], np.zeros(node.model.n))
                assert abs(base[0][0]) < 1.0  # (not the forged 5 m)
        # a reset of the simulated time: the clock goes back with the stamps
        at(0.01)
        probe.update()
        status = node.supervisor.status
        assert status.outcome is GoalOutcome.ABORTED, status.reason
        assert 'the clock went back from' in status.reason, status.reason
    finally:
        node.destroy_node()


def test_an_ee_goal_with_a_zero_quaternion_is_accepted_as_position_only_saying_so(
    rclpy_context, capfd
) -> None:
    """With ``track_orientation`` true an ee_goal whose quaternion has norm < 1e-9 was taken as
    the position only, silently: the acceptance says so."""
    from rclpy.parameter import Parameter

    from ffsim_ros.control import GoalOutcome
    from ffsim_ros.reactionless_controller import ReactionlessControllerNode

    overrides = [*slow_state(), Parameter('track_orientation', value=True)]
    node = ReactionlessControllerNode(context=rclpy_context, parameter_overrides=overrides)
    try:
        probe = Probe(node)
        probe.feed()
        capfd.readouterr()
        probe.send(probe.goal(quat=(0.0, 0.0, 0.0, 0.0)))
        probe.update()
        assert node.supervisor.status.outcome is GoalOutcome.ACTIVE
        err = capfd.readouterr().err
        assert 'ee_goal accepted, position only: its orientation quaternion is zero' in err, err
        probe.send(probe.goal(offset=(0.02, 0.0, 0.0)))  # a unit quaternion: said as before
        probe.update()
        err = capfd.readouterr().err
        assert 'ee_goal accepted: [' in err and 'position only' not in err, err
    finally:
        node.destroy_node()
