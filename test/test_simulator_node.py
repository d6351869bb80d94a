"""The simulator node over real DDS: a separate process, probed by a client in the test.

Every check waits for discovery or for messages; nothing sleeps blindly.
"""

from __future__ import annotations

import time

import numpy as np
import pytest

import ffsim_ros.dynamics as D
from ffsim_ros.dynamics.lie import quat_to_matrix
from ffsim_ros.resources import sample_robot

pytestmark = pytest.mark.ros

MODEL = D.load_urdf(sample_robot('ffsim_servicer_7dof'))
N = MODEL.n


class Probe:
    """Test-side client: subscriptions that store every message, a command publisher."""

    def __init__(self, node, executor, wait_until, publish_until) -> None:
        from nav_msgs.msg import Odometry
        from rosgraph_msgs.msg import Clock
        from sensor_msgs.msg import JointState
        from std_msgs.msg import Float64MultiArray
        from tf2_msgs.msg import TFMessage
        from visualization_msgs.msg import MarkerArray

        self.node, self.executor, self.wait_until = node, executor, wait_until
        self.publish_until = publish_until
        executor.add_node(node)
        self.msgs: dict[str, list] = {k: [] for k in ('js', 'odom', 'tf', 'mom', 'clock', 'mk')}

        def keep(key):
            return self.msgs[key].append

        self.subs = [
            node.create_subscription(JointState, 'joint_states', keep('js'), 1000),
            node.create_subscription(Odometry, 'base_odom', keep('odom'), 1000),
            node.create_subscription(TFMessage, '/tf', keep('tf'), 1000),
            node.create_subscription(Float64MultiArray, 'momentum', keep('mom'), 1000),
            node.create_subscription(Clock, '/clock', keep('clock'), 1000),
            node.create_subscription(MarkerArray, 'markers', keep('mk'), 100),
        ]
        self.cmd = node.create_publisher(Float64MultiArray, 'joint_effort_commands', 10)

    def connect(self, timeout: float = 60.0) -> None:
        ok = self.wait_until(
            lambda: (
                all(s.get_publisher_count() > 0 for s in self.subs)
                and self.cmd.get_subscription_count() > 0
            ),
            timeout,
            self.executor,
        )
        assert ok, 'simulator not discovered'

    def spin_until(self, predicate, timeout: float = 20.0) -> bool:
        return self.wait_until(predicate, timeout, self.executor)

    def send(self, values) -> None:
        from std_msgs.msg import Float64MultiArray

        self.cmd.publish(Float64MultiArray(data=[float(x) for x in values]))

    def send_until(self, values, predicate, timeout: float = 20.0) -> bool:
        """Publish ``values`` until ``predicate()`` holds (conftest.publish_until: a first
        message right after discovery can be lost)."""
        return self.publish_until(lambda: self.send(values), predicate, timeout)

    def call(self, srv_type, name: str, request, timeout: float = 20.0):
        client = self.node.create_client(srv_type, name)
        assert self.spin_until(client.service_is_ready, timeout), f'{name} not available'
        future = client.call_async(request)
        assert self.spin_until(future.done, timeout), f'{name} did not answer'
        return future.result()


def stamp_ns(msg) -> int:
    return msg.header.stamp.sec * 1_000_000_000 + msg.header.stamp.nanosec


def state_from(js, odom) -> tuple[np.ndarray, np.ndarray]:
    """Full (q, v) of the core from one joint_states and the base_odom of the same stamp."""
    p = odom.pose.pose.position
    o = odom.pose.pose.orientation
    quat = np.array([o.x, o.y, o.z, o.w])
    R = D.link_pose(MODEL, np.r_[0, 0, 0, quat, np.zeros(N)], MODEL.base_link)[1]
    tw = odom.twist.twist
    lin = R @ [tw.linear.x, tw.linear.y, tw.linear.z]
    ang = R @ [tw.angular.x, tw.angular.y, tw.angular.z]
    qb, vb = D.base_state_from_link(MODEL, [p.x, p.y, p.z], quat, lin, ang)
    return np.r_[qb, js.position], np.r_[vb, js.velocity]


@pytest.fixture
def probe(ros_node, ros_executor, wait_until, publish_until):
    return Probe(ros_node('probe'), ros_executor, wait_until, publish_until)


def start_sim(ros_process, *params: str):
    ros_args = []
    for p in params:
        ros_args += ['-p', p]
    return ros_process('ffsim_ros.simulator', ros_args=ros_args, name='sim')


def test_messages_frames_and_stamps(ros_process, probe) -> None:
    sim = start_sim(ros_process)
    probe.connect()
    probe.msgs['js'].clear()
    assert probe.spin_until(lambda: len(probe.msgs['js']) >= 300, 30), sim.describe()
    js = probe.msgs['js'][-250:]
    # shapes, names, no motion at rest, stamps exactly one publish period apart
    for m in js:
        assert list(m.name) == list(MODEL.joint_names)
        assert len(m.position) == len(m.velocity) == len(m.effort) == N
        assert np.all(np.asarray(m.position) == 0.0) and np.all(np.asarray(m.velocity) == 0.0)
    stamps = np.array([stamp_ns(m) for m in js])
    # the publish rate in simulated time: one message per 10 ms of simulated time, none
    # skipped (the wall-clock rate depends on the machine's load; this does not)
    assert np.all(np.diff(stamps) == 10_000_000)
    assert np.all(stamps % 10_000_000 == 0)
    # the other stamped topics share the joint_states stamps
    odom = {stamp_ns(m): m for m in probe.msgs['odom']}
    tf = {stamp_ns(m.transforms[0]): m.transforms[0] for m in probe.msgs['tf']}
    clock = {m.clock.sec * 1_000_000_000 + m.clock.nanosec for m in probe.msgs['clock']}
    common = [s for s in stamps[:-5] if s in odom and s in tf]
    assert len(common) >= 200 and all(s in clock for s in common)
    o = odom[common[0]]
    t = tf[common[0]]
    assert (o.header.frame_id, o.child_frame_id) == ('world', 'base_link')
    assert (t.header.frame_id, t.child_frame_id) == ('world', 'base_link')
    assert o.pose.pose.position.x == pytest.approx(0.0, abs=1e-15)
    assert t.transform.rotation.w == pytest.approx(1.0)
    mom = np.asarray(probe.msgs['mom'][-1].data)
    assert mom.shape == (9,) and np.abs(mom[:6]).max() == 0.0
    # initial state: base LINK frame at the world origin (so the base CoM is at R c0)
    q0 = np.r_[D.base_state_from_link(MODEL, np.zeros(3), [0, 0, 0, 1])[0], np.zeros(N)]
    assert mom[6:] == pytest.approx(D.center_of_mass(MODEL, q0), abs=1e-12)
    assert probe.msgs['mk'] and len(probe.msgs['mk'][-1].markers) == 3


def test_robot_description_latched_and_clock_drives_sim_time(
    ros_process, probe, ros_node, wait_until
) -> None:
    from rclpy.parameter import Parameter
    from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
    from std_msgs.msg import String

    start_sim(ros_process, 'real_time_factor:=2.0')
    probe.connect()
    # a late subscriber still gets the description (transient local)
    got = []
    latched = QoSProfile(
        depth=1,
        reliability=ReliabilityPolicy.RELIABLE,
        durability=DurabilityPolicy.TRANSIENT_LOCAL,
    )
    probe.node.create_subscription(String, 'robot_description', got.append, latched)
    assert probe.spin_until(lambda: got, 20)
    assert D.load_urdf(got[0].data).joint_names == MODEL.joint_names
    # a use_sim_time node follows /clock: its time is one of the /clock values (exactly: the
    # ROS time source takes the message's time), recent, i.e. simulated time, not wall time
    follower = ros_node('follower', parameter_overrides=[Parameter('use_sim_time', value=True)])
    probe.executor.add_node(follower)
    start = len(probe.msgs['clock'])

    def clock() -> list[int]:
        return [m.clock.sec * 10**9 + m.clock.nanosec for m in probe.msgs['clock'][start:]]

    assert probe.spin_until(
        lambda: len(clock()) > 20 and follower.get_clock().now().nanoseconds > 0, 20
    )
    now = follower.get_clock().now().nanoseconds
    assert probe.spin_until(lambda: clock()[-1] >= now, 20)  # the probe has it too
    assert now in clock()
    assert clock()[-1] - now <= 50_000_000
    assert now < 3600 * 10**9


def test_published_state_matches_the_core(ros_process, probe) -> None:
    """The same efforts give the same state as the core alone (1e-9 after 500 steps): its
    momentum-preserving step (the simulator's default without a base wrench). The speed
    limits are off: these efforts turn the joints faster than the servicer's drives allow
    (test_engine and test_reliability test the drives)."""
    sim = start_sim(
        ros_process, 'real_time_factor:=0.0', 'command_timeout:=5.0', 'velocity_limits:=false'
    )
    probe.connect()
    tau = np.array([30.0, -20.0, 15.0, -10.0, 5.0, 4.0, -3.0])
    assert probe.send_until(
        tau, lambda: probe.msgs['js'] and np.allclose(probe.msgs['js'][-1].effort, tau), 20
    ), sim.describe()
    for _ in range(5):
        probe.send(tau)
    start = len(probe.msgs['js'])
    assert probe.spin_until(lambda: len(probe.msgs['js']) > start + 60, 30)
    odom = {stamp_ns(m): m for m in probe.msgs['odom']}
    js = [m for m in probe.msgs['js'][start:] if stamp_ns(m) in odom]
    first = next(m for m in js if np.array_equal(m.effort, tau))
    later = [m for m in js if stamp_ns(m) >= stamp_ns(first) + 500_000_000]
    assert later, 'no state 0.5 s later'
    last = later[0]
    between = [m for m in js if stamp_ns(first) < stamp_ns(m) <= stamp_ns(last)]
    assert all(np.array_equal(m.effort, tau) for m in between)  # constant inputs throughout
    q, v = state_from(first, odom[stamp_ns(first)])
    steps = (stamp_ns(last) - stamp_ns(first)) // 1_000_000
    for _ in range(steps):
        q, v = D.step(MODEL, q, v, tau, 1e-3, conserve_momentum=True)
    q_pub, v_pub = state_from(last, odom[stamp_ns(last)])
    assert np.abs(D.difference(MODEL, q, q_pub)).max() < 1e-9
    assert np.abs(v_pub - v).max() < 1e-9
    assert np.abs(v[6:]).max() > 1e-3  # it really moved


def test_commands_guarded_timeout_and_sign(ros_process, probe) -> None:
    # the clipping to the effort limits alone: without the drives' torque-speed
    # characteristic, which lowers the effort as the joints speed up (test_reliability)
    sim = start_sim(
        ros_process, 'command_timeout:=0.3', 'real_time_factor:=2.0', 'velocity_limits:=false'
    )
    probe.connect()
    tau = np.zeros(N)
    tau[0] = 50.0
    tau[1] = 1e6  # beyond the 300 N m limit: clipped

    def effort():
        return np.asarray(probe.msgs['js'][-1].effort) if probe.msgs['js'] else None

    assert probe.send_until(tau, lambda: effort() is not None and effort()[0] == 50.0, 20)
    limit = MODEL.effort_limit[1]
    assert effort()[1] == limit
    # torque sign from rest: positive effort -> positive joint velocity
    assert probe.spin_until(lambda: probe.msgs['js'][-1].velocity[0] > 0.0, 10)
    # malformed commands: wrong length, NaN, inf -> rejected, last good command kept
    mark = len(probe.msgs['js'])
    for bad in (np.ones(N - 1), np.r_[np.nan, np.ones(N - 1)], np.r_[np.inf, np.ones(N - 1)]):
        probe.send(bad)
        sent_after = stamp_ns(probe.msgs['js'][-1])  # the good command arrives after this
        probe.send(tau)  # keep the good command fresh
    assert probe.spin_until(lambda: len(probe.msgs['js']) > mark + 20, 20)
    assert all(m.effort[0] == 50.0 for m in probe.msgs['js'][mark:])
    assert probe.spin_until(lambda: 'expected 7 values' in sim.stderr(), 10), sim.describe()
    assert 'expected finite values' in sim.stderr()
    assert sim.is_running()
    # momentum stays zero while the arm accelerates (joint torques are internal)
    moms = np.array([m.data for m in probe.msgs['mom'][-50:]])
    assert np.abs(moms[:, :6]).max() < 1e-8  # RK4 truncation only (issue bar: 1e-8)
    # silence -> zero effort once command_timeout (0.3 s of sim time) has passed since the
    # last good command was received (which was after `sent_after`)
    assert probe.spin_until(lambda: not np.any(effort()), 20)
    last_nonzero = max(stamp_ns(m) for m in probe.msgs['js'] if np.any(m.effort))
    zero_at = min(
        stamp_ns(m)
        for m in probe.msgs['js']
        if stamp_ns(m) > last_nonzero and not np.any(m.effort)
    )
    assert zero_at - last_nonzero == 10_000_000
    assert zero_at - sent_after > 0.3e9


def test_pause_and_reset(ros_process, probe) -> None:
    """While paused the simulated time stands still: every joint_states message up to the
    reset is stamped at or before the paused instant (read from the physics thread), whatever
    arrives late; the reset is published at once, one physics step after that instant."""
    from simulation_interfaces.srv import GetEntityState
    from std_srvs.srv import SetBool, Trigger

    start_sim(ros_process, 'real_time_factor:=2.0', 'command_timeout:=5.0')
    probe.connect()
    tau = np.full(N, 20.0)
    assert probe.send_until(
        tau, lambda: probe.msgs['js'] and abs(probe.msgs['js'][-1].position[0]) > 1e-3, 20
    )
    assert probe.call(SetBool, '/ffsim_simulator/pause', SetBool.Request(data=True)).success

    def sim_time_ns() -> int:  # the engine's time, read between two batches of steps
        reply = probe.call(
            GetEntityState,
            '/ffsim_simulator/get_entity_state',
            GetEntityState.Request(entity='ffsim_servicer_7dof'),
        )
        return stamp_ns(reply.state)

    paused_ns = sim_time_ns()
    assert paused_ns > 0
    reply = probe.call(Trigger, '/ffsim_simulator/reset', Trigger.Request())
    assert reply.success
    # a reset takes one physics step: published at once, later than everything before it
    reset_ns = paused_ns + 1_000_000
    assert reply.message == f'reset to the initial state at sim time {reset_ns / 1e9:.6f} s'
    assert sim_time_ns() == reset_ns  # (still paused: no step after the reset's)
    assert probe.spin_until(lambda: stamp_ns(probe.msgs['js'][-1]) > paused_ns, 10)
    stamps = [stamp_ns(m) for m in probe.msgs['js']]
    first_after = next(i for i, t in enumerate(stamps) if t > paused_ns)
    assert max(stamps[:first_after]) == paused_ns  # the paused state was published, no later
    after = probe.msgs['js'][first_after]
    assert stamps[first_after] == reset_ns
    assert np.all(np.asarray(after.position) == 0.0) and np.all(np.asarray(after.velocity) == 0.0)
    assert probe.call(SetBool, '/ffsim_simulator/pause', SetBool.Request(data=False)).success
    assert probe.spin_until(lambda: stamp_ns(probe.msgs['js'][-1]) > reset_ns, 10)


def test_non_finite_state_stops_integration(ros_process, probe) -> None:
    from geometry_msgs.msg import WrenchStamped

    sim = start_sim(ros_process, 'real_time_factor:=0.0')
    probe.connect()
    pub = probe.node.create_publisher(WrenchStamped, 'base_wrench', 10)
    assert probe.spin_until(lambda: pub.get_subscription_count() > 0, 20)
    msg = WrenchStamped()
    msg.header.frame_id = 'world'
    # the largest wrench taken (1e308 is refused now, as a NaN is): within about 11 ms a step
    # runs away (a joint at 1e5 rad/s and more after it), which is the fault, the state before
    # it kept (the base under 1 000 rad/s). Before, that state and the next were published
    # (the base at 7 000 rad/s) until a step that would turn the base by 7 rad was refused;
    # before that, the step failed from a finite state, a non-finite state
    msg.wrench.force.x = 1e7
    msg.wrench.torque.y = 1e7
    msg.wrench.torque.z = 1e7
    assert probe.publish_until(
        lambda: pub.publish(msg), lambda: 'runaway step from t' in sim.stderr()
    ), sim.describe()
    assert 'integration stopped, the last finite state' in sim.stderr()
    assert 'under a base wrench of |f| = 1e+07 N, |n| = 1.41e+07 N m' in sim.stderr()
    assert sim.is_running()
    for m in probe.msgs['js']:
        assert np.all(np.isfinite(m.position)) and np.all(np.isfinite(m.velocity))
    for m in probe.msgs['odom']:
        assert np.isfinite(m.pose.pose.position.x) and np.isfinite(m.twist.twist.linear.x)
        w = m.twist.twist.angular
        assert np.linalg.norm([w.x, w.y, w.z]) < 1e3


@pytest.mark.parametrize(
    ('param', 'expected'),
    [
        ('physics_rate_hz:=-5.0', 'physics_rate_hz: expected a finite value in [1, 1e+06]'),
        ('integrator:=leapfrog', 'integrator: expected one of'),
        ('robot_file:=/no/such.urdf', 'robot_file: cannot read'),
        (
            'initial_base_orientation:=[0.0, 0.0, 0.0]',
            'initial_base_orientation: expected a unit quaternion (x, y, z, w): 4 finite',
        ),
        (  # a start the step refuses: it started, faulted at the first step, reset back to it
            (
                'physics_rate_hz:=1.0',
                'publish_rate_hz:=1.0',
                'initial_base_twist:=[0.0, 0.0, 0.0, 0.0, 0.0, 4.0]',
            ),
            'initial_base_twist: expected the base to turn by less than pi rad per physics '
            'step (the step refuses more), |w| below 3.142 rad/s at physics_rate_hz 1, got |w| '
            '= 4 rad/s',
        ),
    ],
)
def test_bad_parameter_is_a_clear_error(
    ros_process, param: str | tuple[str, ...], expected: str
) -> None:
    sim = start_sim(ros_process, *((param,) if isinstance(param, str) else param))
    deadline = time.monotonic() + 60
    while sim.is_running() and time.monotonic() < deadline:
        time.sleep(0.1)  # waiting for the process to exit, not for DDS
    assert sim.returncode == 2, sim.describe()
    assert expected in sim.stderr()


def _wrench_msg(frame: str, force) -> object:
    from geometry_msgs.msg import WrenchStamped

    msg = WrenchStamped()
    msg.header.frame_id = frame
    msg.wrench.force.x, msg.wrench.force.y, msg.wrench.force.z = (float(x) for x in force)
    return msg


def test_base_wrench_in_the_base_link_frame_turns_with_the_base(ros_process, probe) -> None:
    """A spinning base pushed along its own x axis: between two published instants the
    momentum grows by the integral of R(t) f (trapezoid of the published attitudes); then the
    same force in world_frame: by dt F, whatever the base does. The momentum is that of the
    published state (joint_states and base_odom of one stamp)."""
    from geometry_msgs.msg import WrenchStamped

    sim = start_sim(
        ros_process, 'real_time_factor:=4.0', 'initial_base_twist:=[0.0, 0.0, 0.0, 0.0, 0.0, 1.0]'
    )
    probe.connect()
    pub = probe.node.create_publisher(WrenchStamped, 'base_wrench', 10)
    assert probe.spin_until(lambda: pub.get_subscription_count() > 0, 20)
    assert probe.spin_until(lambda: probe.msgs['odom'], 20)
    f = np.array([20.0, 0.0, 0.0])
    dt = 0.01

    def momentum_at(js) -> np.ndarray | None:
        odom = next((o for o in reversed(probe.msgs['odom']) if stamp_ns(o) == stamp_ns(js)), None)
        return None if odom is None else D.momentum_and_com(MODEL, *state_from(js, odom))[0]

    def pushed() -> bool:  # no force yet: the momentum stays that of the initial state
        h = momentum_at(probe.msgs['js'][-2])
        return h is not None and np.linalg.norm(h[:3] - P0) > 0.5 * dt * np.linalg.norm(f)

    def world_now() -> bool:  # the last step added dt F: the world-frame force acts
        js = probe.msgs['js']
        if len(js) < 3:
            return False
        h = [momentum_at(m) for m in js[-3:-1]]
        if h[0] is None or h[1] is None or stamp_ns(js[-2]) - stamp_ns(js[-3]) != 10_000_000:
            return False
        return np.abs(h[1][:3] - h[0][:3] - dt * f).max() <= 1e-6 * np.linalg.norm(f) * dt

    def run_for(seconds: float) -> int:
        end = stamp_ns(probe.msgs['odom'][-1]) + int(seconds * 1e9)
        assert probe.spin_until(lambda: stamp_ns(probe.msgs['odom'][-1]) >= end, 60), (
            sim.describe()
        )
        return stamp_ns(probe.msgs['odom'][-1])

    # an instant of which both joint_states and base_odom arrived (they come separately)
    assert probe.spin_until(
        lambda: len(probe.msgs['js']) >= 2 and momentum_at(probe.msgs['js'][-2]) is not None, 20
    )
    P0 = momentum_at(probe.msgs['js'][-2])[:3]
    assert np.linalg.norm(P0) > 1.0  # the base link origin at rest: its CoM moves
    body = _wrench_msg('base_link', f)
    assert probe.publish_until(lambda: pub.publish(body), pushed, 30), sim.describe()
    body_start = stamp_ns(probe.msgs['js'][-2])
    body_end = run_for(1.5)  # published before the next wrench is sent, so before it applies
    pub.publish(_wrench_msg('world', f))
    assert probe.spin_until(world_now, 30), sim.describe()
    run_for(0.6)

    odom = {stamp_ns(m): m for m in probe.msgs['odom']}
    momentum = {
        stamp_ns(js): D.momentum_and_com(MODEL, *state_from(js, odom[stamp_ns(js)]))[0][:3]
        for js in probe.msgs['js']
        if stamp_ns(js) in odom
    }
    stamps = sorted(momentum)
    pairs = [(a, b) for a, b in zip(stamps[:-1], stamps[1:], strict=True) if b - a == 10_000_000]

    def rotation(stamp: int) -> np.ndarray:
        o = odom[stamp].pose.pose.orientation
        return quat_to_matrix([o.x, o.y, o.z, o.w])

    body = [(a, b) for a, b in pairs if body_start <= a and b <= body_end]
    assert len(body) >= 100
    worst, turned = 0.0, 0.0
    R_first = rotation(body[0][0])
    for a, b in body:
        expected = 0.5 * dt * (rotation(a) @ f + rotation(b) @ f)
        error = np.abs(momentum[b] - momentum[a] - expected).max()
        worst = max(worst, error / (np.linalg.norm(f) * dt))
        cos = (np.trace(R_first.T @ rotation(b)) - 1.0) / 2.0
        turned = max(turned, float(np.arccos(np.clip(cos, -1.0, 1.0))))
    assert worst <= 1e-3, worst  # the trapezoid's error, ~ (w dt)^2 / 12
    assert turned > 1.0  # the base turned: a force held in the world would be off by O(|f|)

    # world frame: from the first interval under it (the base-frame force never gives dt F
    # while the base turns) to the end, every step adds dt F (to RK4 truncation); the probe
    # sees it late (it lags behind the simulator at real_time_factor 4), not the simulator
    def world_like(pair: tuple[int, int]) -> bool:
        change = momentum[pair[1]] - momentum[pair[0]]
        return np.abs(change - dt * f).max() <= 1e-6 * np.linalg.norm(f) * dt

    later = [(a, b) for a, b in pairs if a >= body_end]
    first = next(k for k, pair in enumerate(later) if world_like(pair))
    assert len(later) - first >= 50
    assert all(world_like(pair) for pair in later[first:])
    assert not any(world_like(pair) for pair in body)


def test_one_publishing_thread_stamps_never_go_back(ros_process, probe) -> None:
    """1 000 resets while the arm moves (issue 14: over 3 000, /tf and base_odom went back
    29-145 times): each is applied between steps and published at once, one physics step
    after the instant it interrupts; on every stamped topic the stamps only go forward."""
    from std_srvs.srv import Trigger

    sim = start_sim(ros_process, 'real_time_factor:=2.0', 'command_timeout:=5.0')
    probe.connect()
    client = probe.node.create_client(Trigger, '/ffsim_simulator/reset')
    assert probe.spin_until(client.service_is_ready, 20)
    tau = np.full(N, 40.0)
    replies = []
    in_flight = 5  # requests pipelined (the service queue holds 10)
    for _ in range(1000 // in_flight):
        probe.send(tau)  # the arm moves between resets (a reset clears the command)
        futures = [client.call_async(Trigger.Request()) for _ in range(in_flight)]
        assert probe.spin_until(lambda f=futures: all(x.done() for x in f), 20), sim.describe()
        replies += [f.result() for f in futures]
    probe.spin_until(lambda: False, 0.5)  # the last messages in flight
    assert len(replies) == 1000 and all(r.success for r in replies)
    topics = {
        'joint_states': [stamp_ns(m) for m in probe.msgs['js']],
        'base_odom': [stamp_ns(m) for m in probe.msgs['odom']],
        '/tf': [stamp_ns(m.transforms[0]) for m in probe.msgs['tf']],
        '/clock': [m.clock.sec * 1_000_000_000 + m.clock.nanosec for m in probe.msgs['clock']],
    }
    for topic, stamps in topics.items():
        assert len(stamps) > 1000, topic
        assert np.all(np.diff(stamps) > 0), f'{topic}: a stamp went back or repeated'
    # each reset is published at the time its reply names, in the initial state
    at = [round(float(r.message.rsplit(' at sim time ', 1)[1].split()[0]) * 1e9) for r in replies]
    # every reset its own instant; the five requests of a batch are served by the executor's
    # threads in any order, so their replies' instants are distinct, not in request order
    assert np.all(np.diff(np.sort(at)) > 0)
    js = {stamp_ns(m): m for m in probe.msgs['js']}
    found = [js[t] for t in at if t in js]
    assert len(found) >= 0.9 * len(replies)
    assert all(not np.any(m.position) and not np.any(m.velocity) for m in found)
    # ... and the arm did move in between (so a reset was not a no-op)
    assert max(np.abs(m.velocity).max() for m in probe.msgs['js']) > 1e-3
    assert sim.is_running()


# ------------------------------------------------------------------ the node in-process
def _in_process(rclpy_context, *overrides):
    from rclpy.parameter import Parameter

    from ffsim_ros.simulator import Simulator

    params = [Parameter(name, value=value) for name, value in overrides]
    return Simulator(context=rclpy_context, parameter_overrides=params)


def test_physics_starts_with_start_and_parameters_apply_between_steps(
    rclpy_context, ros_executor, wait_until
) -> None:
    from rclpy.parameter import Parameter

    from ffsim_ros.node_support import OutOfRangeError

    sim = _in_process(rclpy_context, ('real_time_factor', 0.0))
    try:
        ros_executor.add_node(sim)
        for _ in range(5):  # the node's ready callbacks (timers, services), no physics
            ros_executor.spin_once(timeout_sec=0)
        assert not sim.running and sim.engine.step == 0  # nothing runs before start()
        sim.start()
        assert wait_until(lambda: sim.engine.step > 100, 30, ros_executor)
        # dynamic parameters: checked on set, applied by the physics thread after the set
        result = sim.set_parameters([Parameter('command_timeout', value=0.05)])
        assert result[0].successful
        assert wait_until(lambda: sim.engine.command_timeout_ns == 50_000_000, 10, ros_executor)
        # a value outside the descriptor's range: refused before rclpy's range check (raised
        # in-process, as a wrong type; the parameter services answer its message)
        with pytest.raises(OutOfRangeError, match='^command_timeout: expected a finite value'):
            sim.set_parameters([Parameter('command_timeout', value=-1.0)])
        assert sim.get_parameter('command_timeout').value == 0.05
        result = sim.set_parameters([Parameter('physics_rate_hz', value=10.0)])
        assert not result[0].successful and 'read-only' in result[0].reason
        # an atomic set with one bad value changes nothing
        with pytest.raises(OutOfRangeError):
            sim.set_parameters_atomically(
                [Parameter('real_time_factor', value=3.0), Parameter('command_timeout', value=0.0)]
            )
        result = sim.set_parameters_atomically(
            [Parameter('command_timeout', value=0.1), Parameter('real_time_factor', value=1e-9)]
        )
        assert not result.successful and 'real_time_factor: expected 0 or in' in result.reason
        assert sim.get_parameter('real_time_factor').value == 0.0
        assert sim.get_parameter('command_timeout').value == 0.05
        # read by the physics thread after every change queued before: none was queued
        assert sim.run_physics(lambda engine: engine.command_timeout_ns) == 50_000_000
        # descriptors come from the table
        from ffsim_ros.simulator import PARAMETERS

        for spec, d in zip(
            PARAMETERS, sim.describe_parameters(list(PARAMETERS.names)), strict=True
        ):
            assert (d.description, d.read_only) == (spec.description, not spec.dynamic)
    finally:
        sim.destroy_node()
    assert not sim.running


def test_diagnostics_once_a_wall_second_at_the_lowest_real_time_factor(
    rclpy_context, ros_executor, wait_until, monkeypatch
) -> None:
    """At real_time_factor 0.001 a batch of steps (10 ms simulated) is paced to 10 s of wall
    time: the physics thread slept that long at once and /diagnostics came every 10 s, not
    once a wall second. Three messages must come before the first batch is taken (all at
    step 0), however fast the machine: a thread blocked behind each batch's wait publishes
    its second message when the first wait ends, just before that batch, and its third after
    the second batch's wait, at step 10."""
    sim = _in_process(rclpy_context, ('real_time_factor', 0.001))
    try:
        ros_executor.add_node(sim)
        assert (sim.engine.dt_ns, sim.decimation) == (1_000_000, 10)  # a batch: 10 wall s
        sent = []  # (engine step when published (in the physics thread), message)
        monkeypatch.setattr(
            sim.pub_diagnostics, 'publish', lambda msg: sent.append((sim.engine.step, msg))
        )
        sim.start()
        assert wait_until(lambda: len(sent) >= 3, 40, ros_executor), len(sent)
        assert [step for step, _ in sent[:3]] == [0, 0, 0]  # the first batch had not run
        status = sent[2][1].status[0]
        assert status.values[3].key == 'real_time_factor_target'
        assert status.values[3].value == '0.001'
    finally:
        sim.destroy_node()
    assert not sim.running


def test_a_failing_physics_thread_ends_the_node(rclpy_context, ros_executor, monkeypatch) -> None:
    from ffsim_ros.node_support import FatalNodeError

    sim = _in_process(rclpy_context, ('real_time_factor', 0.0))
    try:
        ros_executor.add_node(sim)

        def broken(n: int) -> None:
            raise TypeError('a bug in the physics loop')

        monkeypatch.setattr(sim.engine, 'advance', broken)
        sim.start()
        deadline = time.monotonic() + 30
        with pytest.raises(FatalNodeError, match='a bug in the physics loop'):
            while time.monotonic() < deadline:
                ros_executor.spin_once(timeout_sec=0.1)
        assert not sim.running
    finally:
        sim.destroy_node()


def test_tf_goes_through_tf2_ros_broadcaster_where_installed(
    rclpy_context, ros_executor, wait_until, monkeypatch
) -> None:
    """On a ROS install tf2_ros is importable and the base's transform goes through its
    ``TransformBroadcaster`` (a list of ``TransformStamped`` per publish period), not the
    node's own ``/tf`` bytes. tf2_ros is not on PyPI: a recording stand-in with its interface
    (constructed with the node, ``sendTransform(transforms)``) takes its place."""
    from geometry_msgs.msg import TransformStamped
    from rclpy.serialization import deserialize_message, serialize_message

    import ffsim_ros.simulator as simulator_module

    sent: list[list] = []

    class Broadcaster:
        def __init__(self, node) -> None:
            self.node = node

        def sendTransform(self, transforms) -> None:  # noqa: N802 - tf2_ros's name
            # copies: the node fills the same message object at every publish
            sent.append(
                [deserialize_message(serialize_message(t), TransformStamped) for t in transforms]
            )

    monkeypatch.setattr(simulator_module, 'TransformBroadcaster', Broadcaster)
    sim = _in_process(
        rclpy_context,
        ('real_time_factor', 0.0),
        ('initial_base_twist', [0.05, 0.0, 0.0, 0.0, 0.0, 0.2]),
    )
    try:
        ros_executor.add_node(sim)
        sim.start()
        assert wait_until(lambda: len(sent) >= 20, 30, ros_executor)
        sim.run_physics(lambda engine: engine.pause(), publish=True)
        snap = sim.engine.snapshot()
    finally:
        sim.destroy_node()
    assert all(len(batch) == 1 for batch in sent)  # the base alone: no targets
    transforms = [batch[0] for batch in sent]
    stamps = [t.header.stamp.sec * 10**9 + t.header.stamp.nanosec for t in transforms]
    assert stamps[0] == 0 and all(b > a for a, b in zip(stamps, stamps[1:], strict=False))
    assert all((t.header.frame_id, t.child_frame_id) == ('world', 'base_link') for t in transforms)
    last = transforms[-1].transform  # the state the pause published
    assert stamps[-1] == snap.time_ns
    assert [last.translation.x, last.translation.y, last.translation.z] == (
        snap.base_position.tolist()
    )
    assert [last.rotation.x, last.rotation.y, last.rotation.z, last.rotation.w] == (
        snap.base_orientation.tolist()
    )
    assert snap.base_position[0] > 0.0  # the base moved (and so did what was sent)


def test_a_clock_topic_shared_by_two_simulators_is_warned(
    rclpy_context, wait_until, monkeypatch
) -> None:
    """Two simulators publishing one ``/clock`` (namespaced without the ``/clock`` remap) break
    the controllers' time, which goes back; the simulator now says so on its status tick (once
    a second, the warning throttled), naming the publishers and the fix. One remapped to its
    own clock topic is not warned. In-process: the nodes of one context."""
    from ffsim_ros.node_support.common import shared_clock_warning
    from ffsim_ros.simulator import Simulator

    class Recorder:  # the node's logger, its warnings kept
        def __init__(self, real) -> None:
            self.real, self.warnings = real, []

        def warning(self, line: str) -> None:
            self.warnings.append(line)

        def __getattr__(self, name: str):
            return getattr(self.real, name)

    a = Simulator(context=rclpy_context, namespace='a')
    b = Simulator(context=rclpy_context, namespace='b')
    own = Simulator(
        context=rclpy_context, namespace='c', cli_args=['--ros-args', '-r', '/clock:=clock']
    )
    try:
        expected = shared_clock_warning('/clock', ['/a/ffsim_simulator', '/b/ffsim_simulator'])
        assert expected.startswith(
            "2 publishers on the clock topic /clock ('/a/ffsim_simulator', '/b/ffsim_simulator')"
        )
        assert '-r /clock:=clock' in expected
        logger = Recorder(a.get_logger())
        monkeypatch.setattr(a, 'get_logger', lambda: logger)
        a.start()  # the physics thread's status tick checks
        assert wait_until(lambda: logger.warnings, 20.0), 'no warning'
        assert logger.warnings[0] == expected
        # a simulator with its own clock topic: alone on it, nothing to say
        assert own.pub_clock.topic_name == '/c/clock'
        assert wait_until(lambda: own.count_publishers('/c/clock') == 1, 10.0)
        assert own.clock_watch.check() == ''
        assert a.clock_watch.check() == expected  # (and not among /clock's publishers)
    finally:
        for sim in (a, b, own):
            sim.destroy_node()
