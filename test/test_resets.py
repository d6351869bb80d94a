"""Resets of the simulated state: announced by the simulator on ``resets``, seen by the
controller (:mod:`ffsim_ros.node_support.resets`).

A reset that moved the arm by less than the controller's ``jump_threshold`` went unseen: a
FollowJointTrajectory pulled the arm back onto its time-indexed path (190 N m one sample after
the reset, 0.2-3 N m before) and ended SUCCEEDED, an ee_goal stayed active. The simulator now
announces every reset of the robot's state before the first state after it, acknowledged;
the controller drops its goal and trajectory saying so and holds from the new state.
"""

from __future__ import annotations

import numpy as np
import pytest

# ----------------------------------------------------------------------------- no DDS


@pytest.mark.ros
def test_an_announcement_reads_back_and_a_malformed_one_is_named() -> None:
    from diagnostic_msgs.msg import DiagnosticArray, KeyValue

    from ffsim_ros.node_support.resets import Reset, read_reset, reset_message

    reset = Reset(3, 12_345_000_001, '~/reset: the initial state, inputs cleared')
    msg = reset_message(reset, '/ffsim_simulator', 'robot')
    assert msg.header.stamp.sec == 12 and msg.header.stamp.nanosec == 345_000_001
    assert {kv.key: kv.value for kv in msg.status[0].values} == {
        'count': '3',
        'stamp': '12.345000001',
    }
    assert read_reset(msg) == reset
    with pytest.raises(ValueError, match='expected one status, got 0'):
        read_reset(DiagnosticArray())
    for count in ('0', '-1', 'x', '', '1e3', '٣'):
        msg.status[0].values = [KeyValue(key='count', value=count)]
        with pytest.raises(ValueError, match=r"expected a value 'count' \(an integer >= 1\)"):
            read_reset(msg)


def test_which_resets_are_news_and_which_messages_came_before_them() -> None:
    """A reset is news when it is later than the first state taken (the announcement a node
    gets on joining is of a reset before anything it took); the messages of each stream
    stamped before it are skipped until the stream's first one of after it; a message stamped
    before its stream's previous one (stamps going back: a new simulator) is taken."""
    from ffsim_ros.node_support.resets import Reset, ResetWatch

    watch = ResetWatch()
    assert not watch.announced(Reset(1, 100, 'before anything taken'))
    assert watch.admit('joint_states', 200) and watch.admit('base_odom', 200)
    assert not watch.announced(Reset(1, 100, 'the same again'))
    assert not watch.announced(Reset(2, 150, 'of before the first state taken (200)'))
    assert watch.announced(Reset(3, 300, 'news'))
    assert not watch.announced(Reset(3, 300, 'the same again'))
    # in flight when it was announced: skipped, per stream, until one of after it
    assert not watch.admit('joint_states', 210)
    assert not watch.admit('base_odom', 290)
    assert watch.admit('joint_states', 300)
    assert watch.admit('joint_states', 250)  # (after one of after it: no longer skipped)
    assert not watch.admit('base_odom', 295)
    assert watch.admit('base_odom', 40)  # stamps going back: taken
    # a clock jump drops the state: the next message taken is the new first one
    watch.restart()
    assert not watch.announced(Reset(4, 30, 'before anything taken since'))
    assert watch.admit('joint_states', 50)
    assert watch.announced(Reset(5, 60, 'news'))
    # a new simulator (the clock went back) replaying the same script: its first reset is the
    # same (count, stamp) as the last one of the simulator before, and is news all the same
    watch.restart()
    assert watch.admit('joint_states', 10)
    assert watch.announced(Reset(5, 60, 'the same count and stamp, of another simulator'))


def test_the_controller_drops_goal_and_trajectory_on_an_announced_reset(rclpy_context) -> None:
    """In process: an announced reset aborts the active ee_goal and the trajectory followed,
    each saying 'the simulation was reset', however little the arm moved (0.01 rad here, a
    tenth of ``jump_threshold``); the state of before the reset still in flight is skipped,
    so the arm is held from the first state after it."""
    from nav_msgs.msg import Odometry
    from sensor_msgs.msg import JointState
    from test_controller_input_guards import Probe, _trajectory_request

    from ffsim_ros.control import GoalOutcome
    from ffsim_ros.node_support import to_stamp
    from ffsim_ros.node_support.resets import Reset, reset_message
    from ffsim_ros.reactionless_controller import ReactionlessControllerNode

    node = ReactionlessControllerNode(context=rclpy_context)
    try:
        probe = Probe(node)

        def announce(count: int, stamp: int) -> None:
            reset = Reset(count, stamp, '~/reset: the initial state, inputs cleared')
            probe.callbacks['/resets'](reset_message(reset, '/ffsim_simulator', 'robot'))

        probe.feed()
        probe.send(probe.goal())
        node._on_timer()
        assert node.supervisor.status.outcome is GoalOutcome.ACTIVE
        probe.feed(0.01)  # (below jump_threshold: no jump seen)
        assert node.supervisor.status.outcome is GoalOutcome.ACTIVE
        announce(1, node.get_clock().now().nanoseconds)
        status = node.supervisor.status
        assert status.outcome is GoalOutcome.ABORTED, status
        assert status.reason.startswith('dropped: the simulation was reset (~/reset: the '), status
        assert any('the simulation was reset' in m.message for m in probe.published)
        with node._state_lock:
            assert node._state.latest() == (None, None)
        # a trajectory followed, then a reset: aborted (INVALID_GOAL) saying so
        probe.update()
        request = _trajectory_request(node.model, 5.0, node.get_clock().now().nanoseconds * 1e-9)
        node.submit_trajectory(request)
        probe.update()
        assert node._request is request and request.outcome is None
        stamp = node.get_clock().now().nanoseconds + 20_000_000  # (the first state after it)
        announce(2, stamp)
        assert request.outcome is not None and request.outcome[0] == 'aborted', request.outcome
        assert request.outcome[2].startswith('aborted: the simulation was reset'), request.outcome
        assert node._request is None and node._follower is None
        # in flight: a state of before the reset is skipped, the one after it taken
        names = probe.names
        for when, position in ((stamp - 10_000_000, 0.02), (stamp, 0.0)):
            joints = JointState(name=names, position=[position] * len(names))
            joints.velocity = [0.0] * len(names)
            joints.header.stamp = to_stamp(when)
            odom = Odometry()
            odom.header.stamp = to_stamp(when)
            odom.pose.pose.orientation.w = 1.0
            probe.callbacks['/joint_states'](joints)
            probe.callbacks['/base_odom'](odom)
            with node._state_lock:
                kept = node._state.latest()[0]
            if when < stamp:
                assert kept is None  # skipped
            else:
                np.testing.assert_array_equal(kept[0], np.zeros(node.model.n))
    finally:
        node.destroy_node()


# ------------------------------------------------------------------------------- DDS
@pytest.mark.ros
def test_the_simulator_announces_each_reset_of_the_state_before_that_state(
    ros_process, ros_node, ros_executor, wait_until
) -> None:
    """Every reset or setting of the robot's state (``~/reset``, ``reset_simulation`` with the
    state scope, ``set_entity_state`` of the robot, ``set_simulation_state`` stopped) is
    announced on ``resets``: its count and the stamp of the first state after it, taken by a
    single-threaded executor before that state (acknowledged before the state is sent); a
    reset of the time alone or of the spawned targets is not (the robot did not move); a
    node that subscribes later gets the last one (transient local)."""
    from diagnostic_msgs.msg import DiagnosticArray
    from sensor_msgs.msg import JointState
    from simulation_interfaces.msg import EntityState, SimulationState
    from simulation_interfaces.srv import ResetSimulation, SetEntityState, SetSimulationState
    from std_srvs.srv import Trigger
    from test_sim_interfaces import ENTITY

    from ffsim_ros.node_support.resets import RESETS_QOS, read_reset

    sim = ros_process('ffsim_ros.simulator', ros_args=['-p', 'real_time_factor:=1.0'], name='sim')
    node = ros_node('probe')
    ros_executor.add_node(node)
    events: list = []  # ('reset', Reset) and ('state', stamp) in the order taken
    # the announcements' subscription first: the executor takes ready ones in creation order
    subs = [
        node.create_subscription(
            DiagnosticArray,
            'resets',
            lambda m: events.append(('reset', read_reset(m))),
            RESETS_QOS,
        ),
        node.create_subscription(
            JointState,
            'joint_states',
            lambda m: events.append(
                ('state', m.header.stamp.sec * 10**9 + m.header.stamp.nanosec)
            ),
            1000,
        ),
    ]
    clients = {
        name: node.create_client(kind, f'/ffsim_simulator/{name}')
        for kind, name in (
            (Trigger, 'reset'),
            (ResetSimulation, 'reset_simulation'),
            (SetEntityState, 'set_entity_state'),
            (SetSimulationState, 'set_simulation_state'),
        )
    }
    assert wait_until(
        lambda: (
            all(s.get_publisher_count() for s in subs)
            and all(c.service_is_ready() for c in clients.values())
            and len(events) > 5
        ),
        60,
        ros_executor,
    ), sim.describe()

    def call(name: str, request) -> object:
        future = clients[name].call_async(request)
        assert wait_until(future.done, 30, ros_executor), name
        return future.result()

    def after(name: str, request) -> list:
        """The events from the call on, once five states came after the reply (an
        announcement, acknowledged before the state after it was sent, which came before the
        reply, is taken by then)."""
        start = len(events)
        reply = call(name, request)
        assert getattr(reply, 'success', None) or reply.result.result == 1, reply
        mark = len(events)
        assert wait_until(
            lambda: sum(e[0] == 'state' for e in events[mark:]) >= 5, 20, ros_executor
        )
        return events[start:]

    def announced(taken: list, count: int) -> str:
        """That ``taken`` holds one announcement, the ``count``-th, taken before the first
        state after it, whose stamp it gives; its text."""
        resets = [(k, e) for k, e in enumerate(taken) if e[0] == 'reset']
        assert [e[1].count for _, e in resets] == [count], taken
        k, (_, reset) = resets[0]
        states = [(j, s) for j, (kind, s) in enumerate(taken) if kind == 'state']
        first = next((j, s) for j, s in states if s >= reset.stamp_ns)
        assert first[1] == reset.stamp_ns, (first, reset)  # the stamp of the first state after
        assert first[0] > k, taken  # taken after the announcement
        return reset.what

    assert announced(after('reset', Trigger.Request()), 1).startswith('~/reset')
    state = ResetSimulation.Request(scope=ResetSimulation.Request.SCOPE_STATE)
    assert announced(after('reset_simulation', state), 2).startswith('reset_simulation: state')
    entity = SetEntityState.Request(entity=ENTITY)
    entity.state = EntityState()
    entity.state.pose.position.x = 0.05
    entity.state.pose.orientation.w = 1.0
    assert announced(after('set_entity_state', entity), 3).startswith('set_entity_state')
    for scope in (ResetSimulation.Request.SCOPE_TIME, ResetSimulation.Request.SCOPE_SPAWNED):
        taken = after('reset_simulation', ResetSimulation.Request(scope=scope))
        assert not [e for e in taken if e[0] == 'reset'], (scope, taken)
    stop = SetSimulationState.Request(state=SimulationState(state=SimulationState.STATE_STOPPED))
    start = len(events)
    assert call('set_simulation_state', stop).result.result == 1
    assert wait_until(lambda: any(e[0] == 'reset' for e in events[start:]), 20, ros_executor)
    stopped = [e[1] for e in events[start:] if e[0] == 'reset']
    assert [r.count for r in stopped] == [4] and stopped[0].what.startswith('stopping: '), stopped
    # a late subscriber gets the last one
    late: list = []
    node.create_subscription(DiagnosticArray, 'resets', late.append, RESETS_QOS)
    assert wait_until(lambda: late, 20, ros_executor)
    assert read_reset(late[-1]).count == 4
    assert sim.is_running()


@pytest.mark.ros
def test_a_reset_below_the_jump_threshold_ends_trajectory_and_goal_without_a_spike(
    ros_process, ros_node, ros_executor, wait_until
) -> None:
    """A reset that moves the arm by less than ``jump_threshold`` (0.1 rad): the trajectory
    followed is aborted (INVALID_GOAL) saying 'the simulation was reset' (it ended SUCCEEDED,
    the arm pulled back onto its path: 190 N m one sample after the reset), an active ee_goal
    ends as aborted saying so (it stayed active); the efforts applied after the reset
    (``joint_states.effort``) stay small: the arm is held from the new state."""
    from action_msgs.msg import GoalStatus
    from control_msgs.action import FollowJointTrajectory
    from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus
    from geometry_msgs.msg import PoseStamped
    from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
    from simulation_interfaces.srv import ResetSimulation
    from std_srvs.srv import Trigger
    from test_trajectory import Arm

    from ffsim_ros.node_support.resets import RESETS_QOS, read_reset

    sim = ros_process('ffsim_ros.simulator', ros_args=['-p', 'real_time_factor:=1.0'], name='sim')
    ctl = ros_process(
        'ffsim_ros.reactionless_controller',
        ros_args=['-p', 'use_sim_time:=true', '-p', 'mode:=gjm_tracking'],
        name='controller',
    )
    arm = Arm(ros_node('probe'), ros_executor, wait_until)
    node = arm.node
    resets: list = []
    statuses: list = []
    poses: list = []
    latched = QoSProfile(
        depth=50,
        reliability=ReliabilityPolicy.RELIABLE,
        durability=DurabilityPolicy.TRANSIENT_LOCAL,
    )
    subs = [
        node.create_subscription(
            DiagnosticArray, 'resets', lambda m: resets.append(read_reset(m)), RESETS_QOS
        ),
        node.create_subscription(DiagnosticStatus, 'goal_status', statuses.append, latched),
        node.create_subscription(PoseStamped, 'ee_pose', poses.append, 100),
    ]
    trigger = node.create_client(Trigger, '/ffsim_simulator/reset')
    goals = node.create_publisher(PoseStamped, 'ee_goal', 10)
    arm.connect()
    assert arm.spin_until(
        lambda: (
            all(s.get_publisher_count() for s in subs)
            and trigger.service_is_ready()
            and goals.get_subscription_count()
            and poses
        ),
        60,
    ), ctl.describe()
    R = FollowJointTrajectory.Result

    def stamp_of(msg) -> int:
        return msg.header.stamp.sec * 10**9 + msg.header.stamp.nanosec

    def after_reset(count: int) -> tuple[float, float, float]:
        """The largest joint motion at the reset (the last state before it against the first
        after it) [rad], the largest effort applied over the 5 states before it and over the
        50 after it [N m]."""
        assert arm.spin_until(lambda: len(resets) >= count, 20)
        reset = resets[count - 1]
        assert arm.spin_until(
            lambda: sum(stamp_of(m) >= reset.stamp_ns for m in arm.joints) >= 50, 30
        )
        before = [m for m in arm.joints if stamp_of(m) < reset.stamp_ns][-5:]
        later = [m for m in arm.joints if stamp_of(m) >= reset.stamp_ns][:50]
        moved = np.abs(np.array(later[0].position) - np.array(before[-1].position)).max()

        def peak(messages: list) -> float:
            return float(max(np.abs(m.effort).max() for m in messages))

        return float(moved), peak(before), peak(later)

    def check(motion: float, applied: float, peak: float) -> None:
        """Below jump_threshold (the jump alone went unseen); after the reset no more than
        5 N m -- or than the command applied at the reset, which the controller sent before
        it learned of it (kept until its next update: up to two samples)."""
        assert motion < 0.1, motion
        assert peak <= max(5.0, applied), (peak, applied)

    # a slow trajectory, reset 0.03-0.08 rad into it (below jump_threshold)
    start = arm.position
    names = ['arm_joint_2', 'arm_joint_4']
    target = start[[1, 3]] + [0.5, -0.5]
    feedback: list = []
    handle = arm.send(arm.goal(names, [5.0], [target]), feedback)

    def moved() -> float:
        return float(np.abs(arm.position - start).max())

    assert arm.spin_until(lambda: moved() >= 0.03, 20), moved()
    assert moved() < 0.08, moved()
    future = trigger.call_async(Trigger.Request())
    assert arm.spin_until(future.done) and future.result().success
    reply = arm.result(handle)
    assert reply.status == GoalStatus.STATUS_ABORTED, reply.result.error_string
    assert reply.result.error_code == R.INVALID_GOAL
    assert 'the simulation was reset (~/reset' in reply.result.error_string, (
        reply.result.error_string
    )
    motion, applied, peak = after_reset(1)
    print(
        f'trajectory reset: moved {motion:.4f} rad, peak effort after it {peak:.3g} N m '
        f'(before it {applied:.3g} N m)'
    )
    check(motion, applied, peak)

    # an ee_goal 0.15 m away, reset (reset_simulation, the state) once the arm moved
    p = poses[-1].pose.position
    goal = PoseStamped()
    goal.header.frame_id = 'world'
    goal.pose.position.x, goal.pose.position.y, goal.pose.position.z = p.x + 0.15, p.y, p.z
    goal.pose.orientation.w = 1.0
    start = arm.position
    count = len(statuses)
    goals.publish(goal)
    assert arm.spin_until(
        lambda: any(s.message.startswith('active') for s in statuses[count:]), 20
    ), ctl.describe()
    assert arm.spin_until(lambda: moved() >= 0.02, 20), moved()
    assert moved() < 0.08, moved()
    arm.reset.call_async(ResetSimulation.Request(scope=ResetSimulation.Request.SCOPE_STATE))
    assert arm.spin_until(
        lambda: any(s.message.startswith('aborted') for s in statuses[count:]), 20
    ), [s.message for s in statuses]
    aborted = next(s for s in statuses[count:] if s.message.startswith('aborted'))
    assert 'dropped: the simulation was reset (reset_simulation: state' in aborted.message, (
        aborted.message
    )
    motion, applied, peak = after_reset(2)
    print(
        f'ee_goal reset: moved {motion:.4f} rad, peak effort after it {peak:.3g} N m '
        f'(before it {applied:.3g} N m)'
    )
    check(motion, applied, peak)
    assert not [s for s in statuses[count:] if s.message.startswith('reached')]
    assert sim.is_running() and ctl.is_running()
