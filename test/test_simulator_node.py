"""The simulator node over real DDS: a separate process, probed by a client in the test.

Every check waits for discovery or for messages; nothing sleeps blindly.
"""

from __future__ import annotations

import time

import numpy as np
import pytest

import ffsim_ros.dynamics as D
from ffsim_ros.resources import sample_robot

pytestmark = pytest.mark.ros

MODEL = D.load_urdf(sample_robot('ffsim_servicer_7dof'))
N = MODEL.n


class Probe:
    """Test-side client: subscriptions that store every message, a command publisher."""

    def __init__(self, node, executor, wait_until) -> None:
        from nav_msgs.msg import Odometry
        from rosgraph_msgs.msg import Clock
        from sensor_msgs.msg import JointState
        from std_msgs.msg import Float64MultiArray
        from tf2_msgs.msg import TFMessage
        from visualization_msgs.msg import MarkerArray

        self.node, self.executor, self.wait_until = node, executor, wait_until
        executor.add_node(node)
        self.msgs: dict[str, list] = {k: [] for k in ('js', 'odom', 'tf', 'mom', 'clock', 'mk')}
        self.arrival: list[float] = []

        def keep(key):
            def cb(msg):
                self.msgs[key].append(msg)
                if key == 'js':
                    self.arrival.append(time.monotonic())

            return cb

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
def probe(ros_node, ros_executor, wait_until):
    return Probe(ros_node('probe'), ros_executor, wait_until)


def start_sim(ros_process, *params: str):
    ros_args = []
    for p in params:
        ros_args += ['-p', p]
    return ros_process('ffsim_ros.simulator', ros_args=ros_args, name='sim')


def test_messages_frames_stamps_and_rate(ros_process, probe) -> None:
    sim = start_sim(ros_process)
    probe.connect()
    probe.msgs['js'].clear()
    probe.arrival.clear()
    assert probe.spin_until(lambda: len(probe.msgs['js']) >= 300, 30), sim.describe()
    js = probe.msgs['js'][-250:]
    arrival = probe.arrival[-250:]
    # rate within 10 % of 100 Hz at real_time_factor 1 (wall clock, over 2.5 s)
    rate = (len(arrival) - 1) / (arrival[-1] - arrival[0])
    assert 90.0 <= rate <= 110.0
    # shapes, names, no motion at rest, stamps exactly one publish period apart
    for m in js:
        assert list(m.name) == list(MODEL.joint_names)
        assert len(m.position) == len(m.velocity) == len(m.effort) == N
        assert np.all(np.asarray(m.position) == 0.0) and np.all(np.asarray(m.velocity) == 0.0)
    stamps = np.array([stamp_ns(m) for m in js])
    assert np.all(np.diff(stamps) == 10_000_000)
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
    # a use_sim_time node follows /clock
    follower = ros_node('follower', parameter_overrides=[Parameter('use_sim_time', value=True)])
    probe.executor.add_node(follower)
    probe.msgs['clock'].clear()
    assert probe.spin_until(lambda: len(probe.msgs['clock']) > 20, 20)
    last = probe.msgs['clock'][-1].clock
    now = follower.get_clock().now().nanoseconds
    # the follower's time is a recent /clock value, i.e. simulated time, not wall time
    assert abs(now - (last.sec * 10**9 + last.nanosec)) <= 50_000_000
    assert now < 3600 * 10**9


def test_published_state_matches_the_core(ros_process, probe) -> None:
    """The same efforts give the same state as the core alone (1e-9 after 500 steps)."""
    sim = start_sim(ros_process, 'real_time_factor:=0.0', 'command_timeout:=5.0')
    probe.connect()
    tau = np.array([30.0, -20.0, 15.0, -10.0, 5.0, 4.0, -3.0])
    probe.send(tau)
    assert probe.spin_until(
        lambda: probe.msgs['js'] and np.allclose(probe.msgs['js'][-1].effort, tau), 20
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
        q, v = D.step(MODEL, q, v, tau, 1e-3)
    q_pub, v_pub = state_from(last, odom[stamp_ns(last)])
    assert np.abs(D.difference(MODEL, q, q_pub)).max() < 1e-9
    assert np.abs(v_pub - v).max() < 1e-9
    assert np.abs(v[6:]).max() > 1e-3  # it really moved


def test_commands_guarded_timeout_and_sign(ros_process, probe) -> None:
    sim = start_sim(ros_process, 'command_timeout:=0.3', 'real_time_factor:=2.0')
    probe.connect()
    tau = np.zeros(N)
    tau[0] = 50.0
    tau[1] = 1e6  # beyond the 300 N m limit: clipped

    def effort():
        return np.asarray(probe.msgs['js'][-1].effort) if probe.msgs['js'] else None

    probe.send(tau)
    assert probe.spin_until(lambda: effort() is not None and effort()[0] == 50.0, 20)
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
    from std_srvs.srv import SetBool, Trigger

    start_sim(ros_process, 'real_time_factor:=2.0', 'command_timeout:=5.0')
    probe.connect()
    tau = np.full(N, 20.0)
    probe.send(tau)
    assert probe.spin_until(
        lambda: probe.msgs['js'] and abs(probe.msgs['js'][-1].position[0]) > 1e-3, 20
    )
    assert probe.call(SetBool, '/ffsim_simulator/pause', SetBool.Request(data=True)).success
    probe.spin_until(lambda: False, 0.3)  # let in-flight messages arrive
    count = len(probe.msgs['js'])
    paused_stamp = stamp_ns(probe.msgs['js'][-1])
    assert not probe.spin_until(lambda: len(probe.msgs['js']) > count, 0.5)  # nothing new
    reply = probe.call(Trigger, '/ffsim_simulator/reset', Trigger.Request())
    assert reply.success
    assert probe.spin_until(lambda: len(probe.msgs['js']) > count, 10)
    after = probe.msgs['js'][-1]
    assert np.all(np.asarray(after.position) == 0.0) and np.all(np.asarray(after.velocity) == 0.0)
    assert stamp_ns(after) == paused_stamp  # reset keeps simulated time (no jump back)
    assert probe.call(SetBool, '/ffsim_simulator/pause', SetBool.Request(data=False)).success
    assert probe.spin_until(lambda: stamp_ns(probe.msgs['js'][-1]) > paused_stamp, 10)


def test_non_finite_state_stops_integration(ros_process, probe) -> None:
    from geometry_msgs.msg import WrenchStamped

    sim = start_sim(ros_process, 'real_time_factor:=0.0')
    probe.connect()
    pub = probe.node.create_publisher(WrenchStamped, 'base_wrench', 10)
    assert probe.spin_until(lambda: pub.get_subscription_count() > 0, 20)
    msg = WrenchStamped()
    msg.header.frame_id = 'world'
    msg.wrench.force.x = 1e308
    msg.wrench.torque.y = 1e308
    pub.publish(msg)
    assert probe.spin_until(lambda: 'non-finite state' in sim.stderr(), 20), sim.describe()
    assert sim.is_running()
    for m in probe.msgs['js']:
        assert np.all(np.isfinite(m.position)) and np.all(np.isfinite(m.velocity))
    for m in probe.msgs['odom']:
        assert np.isfinite(m.pose.pose.position.x) and np.isfinite(m.twist.twist.linear.x)


@pytest.mark.parametrize(
    ('param', 'expected'),
    [
        ('physics_rate_hz:=-5.0', 'physics_rate_hz: expected a finite value > 0'),
        ('integrator:=leapfrog', 'integrator: expected one of'),
        ('robot_file:=/no/such.urdf', 'robot_file: cannot read'),
        ('initial_base_orientation:=[0.0, 0.0, 0.0]', 'initial_base_orientation: expected 4'),
    ],
)
def test_bad_parameter_is_a_clear_error(ros_process, param: str, expected: str) -> None:
    sim = start_sim(ros_process, param)
    deadline = time.monotonic() + 60
    while sim.is_running() and time.monotonic() < deadline:
        time.sleep(0.1)  # waiting for the process to exit, not for DDS
    assert sim.returncode == 2, sim.describe()
    assert expected in sim.stderr()
