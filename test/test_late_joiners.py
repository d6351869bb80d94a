"""Subscribers that join while the physics is idle get the last published state
(node_support/late_joiners.py): the poll's logic with stand-in publishers, then over DDS a
probe and a controller started after a simulator that started paused, and probes joining a
paused capture scene (its target's odometry, /tf, scene_markers, grasp_wrench)."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip('rclpy')

from geometry_msgs.msg import TransformStamped  # noqa: E402
from nav_msgs.msg import Odometry  # noqa: E402
from tf2_msgs.msg import TFMessage  # noqa: E402

import ffsim_ros.dynamics as D  # noqa: E402
from ffsim_ros.node_support.late_joiners import POLL_PERIOD, LateJoiners  # noqa: E402
from ffsim_ros.node_support.state_messages import StateMessages  # noqa: E402
from ffsim_ros.resources import sample_robot  # noqa: E402
from ffsim_ros.sim import Engine  # noqa: E402

MODEL = D.load_urdf(sample_robot('ffsim_servicer_7dof'))


class Publisher:
    """A publisher's subscription count (set by the test) and what it sent."""

    def __init__(self, topic_name: str) -> None:
        self.topic_name, self.count, self.sent = topic_name, 0, []

    def get_subscription_count(self) -> int:
        return self.count

    def publish(self, msg) -> None:
        self.sent.append(msg)


class Poller:
    """:class:`LateJoiners` on stand-in publishers, polled once per period."""

    def __init__(self, tf=None, scene=lambda: ({}, [])) -> None:
        self.messages = StateMessages(MODEL.joint_names, 'world', 'base_link', clock=True)
        names = ('/clock', 'joint_states', 'base_odom', 'momentum', 'markers')
        self.pubs = {name: Publisher(name) for name in names}
        self.tf = Publisher('/tf') if tf is None else tf
        self.joiners = LateJoiners(self.messages, tuple(self.pubs.values()), self.tf, scene)
        q = D.neutral(MODEL)
        q[7:] = np.linspace(-0.3, 0.3, MODEL.n)
        self.snap = Engine(MODEL, q, np.zeros(MODEL.nv), dt_ns=1_000_000).snapshot()
        self.now = 0.0

    def publish(self) -> tuple:
        """What the simulator's publish serializes and sends (with the markers)."""
        return self.messages.serialized(self.snap, markers=True)

    def poll(self) -> list[str]:
        self.now += POLL_PERIOD
        return self.joiners.poll(self.now, self.snap)


def test_the_last_published_bytes_go_to_a_gain_once_the_counts_settle() -> None:
    p = Poller()
    assert p.joiners.poll(0.0, None) == []  # nothing published yet: nothing to repeat
    wire = p.publish()
    assert p.poll() == [] and p.poll() == []  # no subscriber
    p.pubs['joint_states'].count = p.pubs['/clock'].count = 1
    assert p.poll() == []  # a gain: served once the counts stand still for a poll
    assert p.joiners.poll(p.now + 0.5 * POLL_PERIOD, p.snap) == []  # (once per period)
    assert p.poll() == ['/clock', 'joint_states']  # /clock first
    assert p.pubs['/clock'].sent == [wire[0]] and p.pubs['joint_states'].sent == [wire[1]]
    assert p.poll() == [] and p.poll() == []  # once: no repeat without a newcomer
    # a second joiner: one repeat on its topic alone; one that leaves changes nothing
    p.pubs['joint_states'].count = 2
    assert p.poll() == [] and p.poll() == ['joint_states']
    p.pubs['joint_states'].count = 1
    assert p.poll() == [] and p.poll() == []
    p.pubs['joint_states'].count = 2  # (one joins after it: served)
    assert p.poll() == [] and p.poll() == ['joint_states']
    # the physics ran (and published to the subscribers there): rebased, nothing repeated
    p.pubs['base_odom'].count = p.pubs['markers'].count = p.tf.count = 1
    wire = p.publish()
    p.joiners.rebase(p.snap)
    assert p.poll() == [] and p.poll() == []
    p.tf.count = p.pubs['momentum'].count = 2
    assert p.poll() == [] and p.poll() == ['momentum', '/tf']
    assert p.pubs['momentum'].sent == [wire[3]] and p.tf.sent == [wire[-1]]  # the base alone
    assert [len(pub.sent) for pub in p.pubs.values()] == [1, 3, 0, 1, 0]


def test_a_subscriber_replacing_another_between_two_polls_is_served_by_its_reader_id() -> None:
    """A subscription destroyed and another created on the same topic between two polls (an
    RViz display re-subscribing with new QoS while paused) leaves the count as it was: counts
    alone never served the newcomer. With the graph's reader ids it is served, once the ids
    have stood still for a poll; the one that left changes nothing."""
    ids = {'joint_states': frozenset({b'a'})}
    p = Poller()
    p.joiners = LateJoiners(
        p.messages,
        tuple(p.pubs.values()),
        p.tf,
        lambda: ({}, []),
        readers=lambda topic: ids.get(topic, frozenset()),
    )
    wire = p.publish()
    p.pubs['joint_states'].count = 1
    p.joiners.rebase(p.snap)  # (reader 'a' had the state: published while it was there)
    assert p.poll() == [] and p.poll() == []
    ids['joint_states'] = frozenset({b'b'})  # 'a' left, 'b' joined: the count stays 1
    assert p.poll() == []  # (the ids changed: served once they settle)
    assert p.poll() == ['joint_states'] and p.pubs['joint_states'].sent == [wire[1]]
    assert p.poll() == [] and p.poll() == []  # once
    ids['joint_states'] = frozenset()  # 'b' leaves
    p.pubs['joint_states'].count = 0
    assert p.poll() == [] and p.poll() == []
    # counts alone (no graph): the same replacement goes unserved, as before
    p = Poller()
    p.publish()
    p.pubs['joint_states'].count = 1
    p.joiners.rebase(p.snap)
    assert p.poll() == [] and p.poll() == [] and p.poll() == []


def test_with_targets_or_tf2_ros_tf_is_the_message_of_all_transforms() -> None:
    target_tf = TransformStamped(child_frame_id='target/client')
    target_odom, odom_pub = Odometry(child_frame_id='target/client'), Publisher('odom')
    p = Poller(scene=lambda: ({odom_pub: target_odom}, [target_tf]))
    p.publish()
    p.tf.count = odom_pub.count = 1
    assert p.poll() == [] and p.poll() == ['/tf', 'odom']
    assert odom_pub.sent == [target_odom]
    (sent,) = p.tf.sent
    assert isinstance(sent, TFMessage)
    assert [t.child_frame_id for t in sent.transforms] == ['base_link', 'target/client']
    assert sent.transforms[0] == p.messages.base_transform(p.snap)

    class Broadcaster:  # tf2_ros.TransformBroadcaster: its publisher is pub_tf
        pub_tf = Publisher('/tf')

    p = Poller(tf=Broadcaster())
    p.publish()
    Broadcaster.pub_tf.count = 1
    assert p.poll() == [] and p.poll() == ['/tf']
    (sent,) = Broadcaster.pub_tf.sent
    assert [t.child_frame_id for t in sent.transforms] == ['base_link']

    class Bare:  # a broadcaster without a publisher to poll: /tf left out
        def sendTransform(self, transforms) -> None:  # noqa: N802 - tf2_ros's name
            raise AssertionError('not called')

    p = Poller(tf=Bare())
    p.publish()
    p.pubs['joint_states'].count = 1
    assert p.poll() == [] and p.poll() == ['joint_states']


def test_what_is_resent_is_built_once_per_idle_instant_not_at_every_poll() -> None:
    """The scene's messages (targets' odometry, scene_markers, grasp_wrench) and /tf's were
    built again at every poll while idle (five times a second, for as long as the simulation
    stayed paused): now once for the instant last published, at the turn to idle, and once
    more only after a publish made while idle (a new instant: a reset, a spawn, a grasp)."""
    from geometry_msgs.msg import WrenchStamped
    from visualization_msgs.msg import MarkerArray

    calls: list[int] = []
    odom_pub, markers_pub, wrench_pub = (
        Publisher(name) for name in ('targets/client/odom', 'scene_markers', 'grasp_wrench')
    )
    odom, markers, wrench = Odometry(), MarkerArray(), WrenchStamped()
    target_tf = TransformStamped(child_frame_id='target/client')

    def scene(*_snap):  # (any arguments: the same stand-in for the code before)
        calls.append(1)
        return {odom_pub: odom, markers_pub: markers, wrench_pub: wrench}, [target_tf]

    p = Poller(scene=scene)
    p.publish()
    p.joiners.rebase(p.snap)  # the physics turned idle: what a late joiner gets is built
    for _ in range(20):
        assert p.poll() == []
    assert len(calls) == 1
    markers_pub.count = wrench_pub.count = p.tf.count = 1
    assert p.poll() == [] and p.poll() == ['/tf', 'scene_markers', 'grasp_wrench']
    assert markers_pub.sent == [markers] and wrench_pub.sent == [wrench] and odom_pub.sent == []
    (tf,) = p.tf.sent
    assert [t.child_frame_id for t in tf.transforms] == ['base_link', 'target/client']
    assert len(calls) == 1
    # a publish while idle: a new instant (the base moved), its messages built once; the
    # base's transform kept is a copy (the shared message is refilled at every publish)
    before = p.snap
    q = D.neutral(MODEL)
    q[0] = 0.5
    p.snap = Engine(MODEL, q, np.zeros(MODEL.nv), dt_ns=1_000_000).snapshot()
    p.publish()
    odom_pub.count, p.tf.count = 1, 2
    assert p.poll() == [] and p.poll() == ['/tf', 'targets/client/odom']
    for _ in range(10):
        assert p.poll() == []
    assert len(calls) == 2
    for sent, snap in zip(p.tf.sent, (before, p.snap), strict=True):
        t = sent.transforms[0].transform.translation
        assert [t.x, t.y, t.z] == snap.base_position.tolist()
    assert before.base_position[0] != p.snap.base_position[0]


@pytest.mark.ros
def test_nodes_started_after_a_paused_simulator_get_its_state_and_goals_go_active(
    ros_process, ros_node, ros_executor, wait_until, publish_until
) -> None:
    """A simulator started paused published its initial state once, before anybody could
    hear it (its topics are volatile): a probe subscribing once it is up got nothing, and a
    controller started after it rejected every ee_goal ("no fresh joint_states"). Now each
    joiner gets the last published state, stamp and content, with no step taken, and the
    controller takes a goal (active: the paused clock read as a paused simulation)."""
    from diagnostic_msgs.msg import DiagnosticStatus
    from geometry_msgs.msg import PoseStamped
    from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
    from rosgraph_msgs.msg import Clock
    from sensor_msgs.msg import JointState
    from simulation_interfaces.msg import SimulationState
    from simulation_interfaces.srv import GetSimulationState
    from std_msgs.msg import Float64MultiArray

    joints0, base0 = [0.1, -0.2, 0.3, 0.0, 0.2, 0.0, 0.0], [0.5, 0.0, 0.0]
    sim = ros_process(
        'ffsim_ros.simulator',
        ros_args=[
            '-p', 'start_paused:=true',
            '-p', f'initial_joint_positions:={joints0}',
            '-p', f'initial_base_position:={base0}',
        ],
        name='sim',
    )  # fmt: skip
    node = ros_node('probe')
    ros_executor.add_node(node)

    def paused() -> bool:  # answered by the physics thread: after its first publish
        future = client.call_async(GetSimulationState.Request())
        assert wait_until(future.done, 20, ros_executor), sim.describe()
        return future.result().state.state == SimulationState.STATE_PAUSED

    client = node.create_client(GetSimulationState, '/ffsim_simulator/get_simulation_state')
    assert wait_until(client.service_is_ready, 60, ros_executor), sim.describe()
    assert paused()
    got: dict[str, list] = {}
    for msg_type, topic in (
        (Clock, '/clock'),
        (JointState, 'joint_states'),
        (Odometry, 'base_odom'),
        (TFMessage, '/tf'),
        (Float64MultiArray, 'momentum'),
    ):
        node.create_subscription(msg_type, topic, got.setdefault(topic, []).append, 10)
    assert wait_until(lambda: all(got.values()), 20, ros_executor), (
        {k: len(v) for k, v in got.items()},
        sim.describe(),
    )
    assert {k: len(v) for k, v in got.items()} == dict.fromkeys(got, 1)  # (no other joiner)
    (clock,), (js,), (odom,), (tf,), _ = got.values()
    stamps = [clock.clock, js.header.stamp, odom.header.stamp, tf.transforms[0].header.stamp]
    assert all(s.sec == 0 and s.nanosec == 0 for s in stamps), stamps  # the initial instant
    assert list(js.position) == joints0 and list(js.name) == list(MODEL.joint_names)
    p = odom.pose.pose.position
    assert [p.x, p.y, p.z] == pytest.approx(base0, abs=1e-12)
    assert tf.transforms[0].child_frame_id == 'base_link'

    # a controller on simulated time started now: the state and /clock reach it, and the
    # clock that stands still reads as a paused simulation, so a goal is taken
    ctl = ros_process(
        'ffsim_ros.reactionless_controller', ros_args=['-p', 'use_sim_time:=true'], name='ctl'
    )
    statuses: list = []
    latched = QoSProfile(
        depth=20,
        reliability=ReliabilityPolicy.RELIABLE,
        durability=DurabilityPolicy.TRANSIENT_LOCAL,
    )
    node.create_subscription(DiagnosticStatus, 'goal_status', statuses.append, latched)
    goals = node.create_publisher(PoseStamped, 'ee_goal', 10)
    assert wait_until(goals.get_subscription_count, 60, ros_executor), ctl.describe()
    q0 = np.r_[D.base_state_from_link(MODEL, base0, [0, 0, 0, 1])[0], joints0]
    goal = PoseStamped()
    goal.header.frame_id = 'world'
    p = goal.pose.position
    p.x, p.y, p.z = (D.link_pose(MODEL, q0, 'ee_link')[0] + [0.1, 0.2, -0.2]).tolist()
    goal.pose.orientation.w = 1.0

    def active() -> bool:
        return any(s.message.startswith('active') for s in statuses)

    assert publish_until(lambda: goals.publish(goal), active, 30), (
        [s.message for s in statuses],
        ctl.describe(),
    )
    assert paused() and all(m.header.stamp.sec == 0 for m in got['joint_states'])  # no step
    assert sim.is_running() and ctl.is_running()


def _held_scenario(path):
    """The shipped capture scenario with its target still, its handle at the gripper (the
    end effector at (3.256, 0, 0.55) m, axes along world's): a grasp succeeds at once."""
    import yaml

    from ffsim_ros.node_support.scene_support import resolve_scenario
    from ffsim_ros.resources import sample_robot

    data = yaml.safe_load(resolve_scenario('capture').read_text())
    data['robot']['urdf'] = str(sample_robot('ffsim_servicer_7dof'))
    (target,) = data['targets']
    del target['tumble']
    target.update(position=[3.506, 0.0, 0.55], orientation=[0.0, 0.0, 0.0, 1.0])
    target.update(linear_velocity=[0.0, 0.0, 0.0], angular_velocity=[0.0, 0.0, 0.0])
    path.write_text(yaml.safe_dump(data))
    return path


@pytest.mark.ros
def test_late_joiners_of_a_paused_scene_get_its_markers_and_grasp_wrench(
    ros_process, ros_node, ros_executor, wait_until, tmp_path
) -> None:
    """A simulator paused with a capture scene resent the robot's topics, the target's
    odometry and /tf to subscribers joining then, but not ``scene_markers`` (RViz started
    after the pause showed no target) nor ``grasp_wrench`` (a wrist sensor's reading of the
    held target, absent until the next step). Now each gets the last published message: the
    target markers of the start, and after a grasp made while paused the wrench of that
    instant, with no step taken."""
    from geometry_msgs.msg import WrenchStamped
    from simulation_interfaces.msg import SimulationState
    from simulation_interfaces.srv import GetSimulationState
    from std_srvs.srv import Trigger
    from visualization_msgs.msg import Marker, MarkerArray

    path = _held_scenario(tmp_path / 'held.yaml')
    sim = ros_process(
        'ffsim_ros.simulator',
        ros_args=['-p', 'start_paused:=true', '-p', f'scenario:={path}'],
        name='sim',
    )
    node = ros_node('probe')
    ros_executor.add_node(node)

    def call(client, request):
        future = client.call_async(request)
        assert wait_until(future.done, 20, ros_executor), sim.describe()
        return future.result()

    state = node.create_client(GetSimulationState, '/ffsim_simulator/get_simulation_state')
    assert wait_until(state.service_is_ready, 60, ros_executor), sim.describe()
    paused = SimulationState.STATE_PAUSED
    assert call(state, GetSimulationState.Request()).state.state == paused
    got: dict[str, list] = {}
    for msg_type, topic in (
        (Odometry, 'targets/client/odom'),
        (TFMessage, '/tf'),
        (MarkerArray, 'scene_markers'),
    ):
        node.create_subscription(msg_type, topic, got.setdefault(topic, []).append, 10)
    assert wait_until(lambda: all(got.values()), 20, ros_executor), (
        {k: len(v) for k, v in got.items()},
        sim.describe(),
    )
    assert {k: len(v) for k, v in got.items()} == dict.fromkeys(got, 1)
    (odom,), (tf,), (markers,) = got.values()
    assert odom.child_frame_id == 'target/client' and odom.header.stamp.sec == 0
    p = odom.pose.pose.position
    assert [p.x, p.y, p.z] == pytest.approx([3.506, 0.0, 0.55], abs=1e-9)
    assert [t.child_frame_id for t in tf.transforms] == ['base_link', 'target/client']
    kinds = [(m.ns, m.action, m.type) for m in markers.markers]
    assert kinds == [
        ('targets', Marker.DELETEALL, Marker.ARROW),  # (type unset: 0)
        ('targets', Marker.ADD, Marker.SPHERE),  # the target
        ('targets', Marker.ADD, Marker.SPHERE),  # the handle's envelope: green, inside
    ], kinds
    assert markers.markers[2].color.g == pytest.approx(0.9)

    # a grasp while paused: published at once (one step later) to the subscribers there,
    # the wrench to nobody; a wrist sensor's subscriber joining now gets that wrench
    grasp = node.create_client(Trigger, '/ffsim_simulator/grasp')
    assert wait_until(grasp.service_is_ready, 20, ros_executor)
    reply = call(grasp, Trigger.Request())
    assert reply.success and reply.message.startswith('captured client/bar'), reply.message
    assert wait_until(lambda: len(got['targets/client/odom']) == 2, 20, ros_executor)
    instant = got['targets/client/odom'][1].header.stamp
    assert (instant.sec, instant.nanosec) > (0, 0)
    wrenches: list = []
    node.create_subscription(WrenchStamped, 'grasp_wrench', wrenches.append, 10)
    assert wait_until(lambda: wrenches, 20, ros_executor), sim.describe()
    (wrench,) = wrenches
    assert wrench.header.frame_id == 'ee_link' and wrench.header.stamp == instant
    assert call(state, GetSimulationState.Request()).state.state == paused  # no step
    assert len(got['targets/client/odom']) == 2 and sim.is_running()
