"""Targets in the simulator node over DDS (issue 17, ROS side): spawn/delete/set through the
standard ``simulation_interfaces`` services, bad spawns refused naming the culprit with nothing
applied while the clock runs on, and the shipped capture scenario -- target odometry equal to a
ROS-free :class:`~ffsim_ros.scene.Scene` stepped alike, a grasp refused outside the envelope
then made once the handle is placed at the gripper, the total momentum on ``momentum``
constant through capture, welded steps and release. Paused simulations stepped exactly:
nothing depends on the machine's speed."""

from __future__ import annotations

import math
import time

import numpy as np
import pytest

import ffsim_ros.dynamics as D
from ffsim_ros.dynamics.lie import quat_to_matrix
from ffsim_ros.node_support.scene_support import resolve_scenario
from ffsim_ros.scene import load_scenario

pytestmark = pytest.mark.ros
SPHERE = '{shape: {type: sphere, radius: 0.2}, mass: 40.0}'


class Probe:
    """Service clients and subscriptions keeping every message."""

    def __init__(self, node, executor, wait_until) -> None:
        from diagnostic_msgs.msg import DiagnosticArray
        from geometry_msgs.msg import WrenchStamped
        from nav_msgs.msg import Odometry
        from rosgraph_msgs.msg import Clock
        from std_msgs.msg import Float64MultiArray

        self.node, self.executor, self.wait_until = node, executor, wait_until
        executor.add_node(node)
        self.clock, self.momentum, self.odom, self.events = [], [], [], []
        self.wrench = []
        self.subs = [
            node.create_subscription(Clock, '/clock', lambda m: self.clock.append(_ns(m)), 100),
            node.create_subscription(Float64MultiArray, 'momentum', self.momentum.append, 1000),
        ]
        self.extra = [
            node.create_subscription(Odometry, 'targets/client/odom', self.odom.append, 1000),
            node.create_subscription(DiagnosticArray, 'scene_events', self.events.append, 100),
            node.create_subscription(WrenchStamped, 'grasp_wrench', self.wrench.append, 1000),
        ]
        self.clients: dict[str, object] = {}

    def spin_until(self, predicate, timeout: float = 30.0) -> bool:
        return self.wait_until(predicate, timeout, self.executor)

    def call(self, srv_type, name: str, request=None):
        client = self.clients.get(name)
        if client is None:
            client = self.clients[name] = self.node.create_client(
                srv_type, f'/ffsim_simulator/{name}'
            )
            assert self.spin_until(client.service_is_ready, 60), f'{name} not available'
        future = client.call_async(request if request is not None else srv_type.Request())
        assert self.spin_until(future.done, 30), f'{name} did not answer'
        return future.result()

    def step(self, steps: int) -> None:
        from simulation_interfaces.msg import Result
        from simulation_interfaces.srv import StepSimulation

        reply = self.call(StepSimulation, 'step_simulation', StepSimulation.Request(steps=steps))
        assert reply.result.result == Result.RESULT_OK, reply.result.error_message


def _ns(msg) -> int:
    stamp = msg.clock if hasattr(msg, 'clock') else msg.header.stamp
    return stamp.sec * 10**9 + stamp.nanosec


def _spawn(name: str, text: str, position, quat=(0.0, 0.0, 0.0, 1.0)):
    from simulation_interfaces.srv import SpawnEntity

    request = SpawnEntity.Request(name=name, resource_string=text)
    p, o = request.initial_pose.pose.position, request.initial_pose.pose.orientation
    p.x, p.y, p.z = (float(x) for x in position)
    o.x, o.y, o.z, o.w = (float(x) for x in quat)
    return request


@pytest.fixture
def probe(ros_node, ros_executor, wait_until):
    return Probe(ros_node('probe'), ros_executor, wait_until)


def test_bad_spawns_refused_nothing_applied_clock_runs(ros_process, probe) -> None:
    from simulation_interfaces.msg import Result
    from simulation_interfaces.srv import DeleteEntity, GetEntities, GetEntityState, SpawnEntity

    ros_process('ffsim_ros.simulator', ros_args=['-p', 'real_time_factor:=1.0'], name='sim')
    assert probe.spin_until(lambda: all(s.get_publisher_count() for s in probe.subs), 60)
    R = SpawnEntity.Response
    for request, code, text in (
        (
            _spawn('inside', SPHERE, (0.0, 0.0, 0.0)),
            Result.RESULT_OPERATION_FAILED,
            "target 'inside': shape on 'inside/body' overlaps 'robot/",
        ),
        (
            _spawn('bad_link', SPHERE[:-1] + ', handles: [{name: h, link: nope}]}', (5, 5, 5)),
            R.RESOURCE_PARSE_ERROR,
            "'nope'",
        ),
        (_spawn('m0', SPHERE.replace('40.0', '0'), (5, 5, 5)), R.RESOURCE_PARSE_ERROR, 'mass'),
        (
            _spawn('m_neg', SPHERE.replace('40.0', '-2'), (5, 5, 5)),
            R.RESOURCE_PARSE_ERROR,
            'resource.mass: expected a finite value in [1e-06, 1e+12] kg (1 mg to an asteroid 1 '
            'km across), got -2.0',
        ),
        (
            _spawn('nan', SPHERE, (math.nan, 5, 5)),
            R.INVALID_POSE,
            "{'initial_pose.pose.position.x': nan}",
        ),
        # reserved (the scene's name of the robot's bodies), though no entity has it
        (_spawn('robot', SPHERE, (5, 5, 5)), R.NAME_INVALID, "another name than 'robot'"),
        # names that cannot make targets/<name>/odom: spawned, then the executor raised and
        # the simulator ended (exit code 1) without answering
        (_spawn('ball-1', SPHERE, (5, 5, 5)), R.NAME_INVALID, 'digit, at most 233 characters'),
        (_spawn('b' * 240, SPHERE, (5, 5, 5)), R.NAME_INVALID, '... (240 characters)'),
    ):
        before = probe.clock[-1] if probe.clock else 0
        reply = probe.call(SpawnEntity, 'spawn_entity', request)
        assert reply.result.result == code, reply.result.error_message
        assert text in reply.result.error_message, reply.result.error_message
        entities = probe.call(GetEntities, 'get_entities').entities
        assert entities == ['ffsim_servicer_7dof'], entities  # nothing applied
        assert probe.spin_until(lambda b=before: probe.clock and probe.clock[-1] > b + 20_000_000)
    # a filter of catastrophic backtracking (~70 s of frozen physics) refused at once
    request = GetEntities.Request()
    request.filters.filter = r'^(\w|\w|\w)*!'
    reply = probe.call(GetEntities, 'get_entities', request)
    assert reply.result.result == Result.RESULT_OPERATION_FAILED
    assert 'use a character class' in reply.result.error_message, reply.result.error_message
    # a good one: listed, its state read back in world, then deleted
    reply = probe.call(SpawnEntity, 'spawn_entity', _spawn('ball', SPHERE, (5.0, 0.0, 1.0)))
    assert reply.result.result == Result.RESULT_OK and reply.entity_name == 'ball'
    assert probe.call(GetEntities, 'get_entities').entities == ['ffsim_servicer_7dof', 'ball']
    state = probe.call(
        GetEntityState, 'get_entity_state', GetEntityState.Request(entity='ball')
    ).state
    assert [state.pose.position.x, state.pose.position.y, state.pose.position.z] == [5, 0, 1]
    reply = probe.call(DeleteEntity, 'delete_entity', DeleteEntity.Request(entity='ball'))
    assert reply.result.result == Result.RESULT_OK, reply.result.error_message
    assert probe.call(GetEntities, 'get_entities').entities == ['ffsim_servicer_7dof']


def test_capture_scenario_odometry_grasp_and_momentum(ros_process, probe) -> None:
    from diagnostic_msgs.msg import DiagnosticStatus
    from simulation_interfaces.msg import Result
    from simulation_interfaces.srv import GetEntityState, SetEntityState
    from std_srvs.srv import Trigger

    ros_process(
        'ffsim_ros.simulator',
        ros_args=['-p', 'scenario:=capture', '-p', 'start_paused:=true'],
        name='sim',
    )
    assert probe.spin_until(
        lambda: all(s.get_publisher_count() for s in probe.subs + probe.extra), 60
    )
    # the same scenario stepped by a Scene alone: the robot at rest and unpowered, as in the node
    scene = load_scenario(resolve_scenario('capture'))
    robot = scene.robot_model  # placed as the node places it: base link frame at the origin
    q_base, _ = D.base_state_from_link(robot, np.zeros(3), [0.0, 0.0, 0.0, 1.0])
    np.testing.assert_allclose(scene.robot_state[0], np.r_[q_base, np.zeros(robot.n)], atol=0)
    probe.step(37)
    expected = scene.advance(37).targets['client'].root
    assert probe.spin_until(lambda: probe.odom and _ns(probe.odom[-1]) == 37_000_000)
    odom = probe.odom[-1]
    assert odom.header.frame_id == 'world' and odom.child_frame_id == 'target/client'
    pose, twist = odom.pose.pose, odom.twist.twist
    got = np.array([pose.position.x, pose.position.y, pose.position.z])
    np.testing.assert_allclose(got, expected.position, atol=1e-12)
    quat = [pose.orientation.x, pose.orientation.y, pose.orientation.z, pose.orientation.w]
    np.testing.assert_allclose(quat, expected.orientation, atol=1e-12)
    # REP 105: twist in the child frame
    R = quat_to_matrix(expected.orientation)
    lin = [twist.linear.x, twist.linear.y, twist.linear.z]
    ang = [twist.angular.x, twist.angular.y, twist.angular.z]
    np.testing.assert_allclose(lin, R.T @ expected.linear_velocity, atol=1e-12)
    np.testing.assert_allclose(ang, R.T @ expected.angular_velocity, atol=1e-12)
    assert abs(np.degrees(np.linalg.norm(ang)) - 5.0) < 0.01  # the tumble: 5 deg/s

    # out of reach: refused with the reason, nothing changes
    reply = probe.call(Trigger, 'grasp')
    assert not reply.success and 'client/bar outside its capture envelope' in reply.message

    # place the handle on the gripper (same axes), keeping the target's twist
    state = probe.call(
        GetEntityState, 'get_entity_state', GetEntityState.Request(entity='client')
    ).state
    gripper = scene.snapshot().gripper
    R_g = quat_to_matrix(gripper.orientation)
    root = gripper.position - R_g @ np.array([-0.25, 0.0, 0.0])
    request = SetEntityState.Request(entity='client', state=state)
    p, o = request.state.pose.position, request.state.pose.orientation
    p.x, p.y, p.z = root.tolist()
    o.x, o.y, o.z, o.w = (float(x) for x in gripper.orientation)
    reply = probe.call(SetEntityState, 'set_entity_state', request)
    assert reply.result.result == Result.RESULT_OK, reply.result.error_message
    probe.step(1)
    count = len(probe.momentum)
    reply = probe.call(Trigger, 'grasp')
    assert reply.success and reply.message.startswith('captured client/bar'), reply.message
    probe.step(300)
    assert probe.call(Trigger, 'release').success
    probe.step(50)
    assert probe.spin_until(lambda: any(e.status[0].name == 'release' for e in probe.events))
    # the weld's force while held, and only then (the unpowered arm turns with the tumbling
    # target: the weld carries the target's share of the motion)
    t_capture = max(_ns(e) for e in probe.events if e.status[0].name == 'capture')
    t_release = max(_ns(e) for e in probe.events if e.status[0].name == 'release')
    assert probe.spin_until(lambda: len(probe.wrench) >= 2)
    held = [_ns(m) for m in probe.wrench]
    assert t_capture <= min(held) and max(held) <= t_release, (t_capture, held, t_release)
    assert {m.header.frame_id for m in probe.wrench} == {'ee_link'}
    forces = [[m.wrench.force.x, m.wrench.force.y, m.wrench.force.z] for m in probe.wrench]
    assert np.all(np.isfinite(forces)) and np.abs(forces).max() > 1e-6
    h = np.array([m.data[:6] for m in probe.momentum[count - 1 :]])
    assert len(h) >= 4, len(h)
    drift = np.abs(h - h[0]).max()
    print(f'momentum through capture: {len(h)} messages, largest change {drift:.3g}')
    assert drift < 1e-10, drift
    assert np.linalg.norm(h[0][:3]) > 0.5  # the target's drift is in it (40 kg at 2 cm/s)
    captures = [e.status[0] for e in probe.events if e.status[0].name == 'capture']
    values = [{kv.key: kv.value for kv in c.values} for c in captures]
    # the refused grasp (WARN, its reason) then the capture (OK, its impulse)
    assert [v['captured'] for v in values] == ['false', 'true']
    assert [c.level for c in captures] == [DiagnosticStatus.WARN, DiagnosticStatus.OK]
    assert values[1]['target'] == 'client'
    assert 'outside its capture envelope' in values[0]['reason']
    assert len(values[1]['impulse'].split()) == 6


@pytest.mark.parametrize('case', ['overlap', 'robot'])
def test_bad_scenario_exits_2_naming_it(ros_process, tmp_path, case: str) -> None:
    import time

    import yaml

    data = yaml.safe_load(resolve_scenario('capture').read_text())
    urdf = resolve_scenario('capture').parent / data['robot']['urdf']
    data['robot']['urdf'] = str(urdf.resolve())
    expected = {
        'overlap': "target 'client': shape on 'client/body' overlaps 'robot/",
        'robot': "robot.urdf: expected the simulated robot 'ffsim_servicer_7dof'",
    }[case]
    if case == 'overlap':
        data['targets'][0]['position'] = [0.0, 0.0, 0.0]  # inside the bus
    else:
        data['robot']['urdf'] = str(urdf.parent / 'planar_2link.urdf')
        data['robot']['gripper'] = {'link': 'ee_link'}
        del data['robot']['exclude_links'], data['targets']
    path = tmp_path / 'scenario.yaml'
    path.write_text(yaml.safe_dump(data))
    sim = ros_process('ffsim_ros.simulator', ros_args=['-p', f'scenario:={path}'], name='sim')
    deadline = time.monotonic() + 60
    while sim.is_running() and time.monotonic() < deadline:
        time.sleep(0.1)  # waiting for the process to exit, not for DDS
    assert sim.returncode == 2, sim.describe()
    assert expected in sim.stderr(), sim.describe()


def test_a_robot_moved_by_initial_base_position_takes_the_scenario_targets_along(
    rclpy_context,
) -> None:
    """``initial_base_position`` overrides the scenario's base position (the origin for
    ``capture``): the scenario's targets move with the robot, their poses relative to its base
    and gripper those of the scenario (they stayed at their world poses, 5 m away from the
    gripper, and the capture never happened). In-process, no other node."""
    from rclpy.parameter import Parameter

    from ffsim_ros.simulator import Simulator

    def scene(*overrides):
        sim = Simulator(
            context=rclpy_context,
            parameter_overrides=[
                Parameter('scenario', value='capture'),
                Parameter('start_paused', value=True),
                *(Parameter(name, value=value) for name, value in overrides),
            ],
        )
        try:
            return sim.engine.world.snapshot()
        finally:
            sim.destroy_node()

    offset = np.array([0.0, 5.0, 0.0])
    there = scene()
    moved = scene(('initial_base_position', offset.tolist()))
    np.testing.assert_allclose(moved.robot_base.position, there.robot_base.position + offset)
    for name, target in there.targets.items():
        np.testing.assert_allclose(
            moved.targets[name].root.position, target.root.position + offset, atol=1e-12
        )
        np.testing.assert_array_equal(
            moved.targets[name].root.orientation, target.root.orientation
        )
        for handle, frame in target.handles.items():  # the handle as near the gripper
            np.testing.assert_allclose(
                moved.targets[name].handles[handle].position - moved.gripper.position,
                frame.position - there.gripper.position,
                atol=1e-12,
            )


@pytest.mark.parametrize('robot', ['camera', 'base_only'])
def test_robots_without_a_gripper_link_start_and_refuse_grasps(
    rclpy_context, tmp_path, robot: str
) -> None:
    """A robot whose last link is on the base (a camera), or that is only a base, starts
    without a scenario (it used to exit 2: "gripper link 'camera' is on the base body",
    though no scenario was set); the grasp service refuses, saying why."""
    from rclpy.parameter import Parameter
    from std_srvs.srv import Trigger
    from test_scene_messages import BASE_ONLY_ROBOT, CAMERA_ROBOT

    from ffsim_ros.simulator import Simulator

    path = tmp_path / f'{robot}.urdf'
    path.write_text(CAMERA_ROBOT if robot == 'camera' else BASE_ONLY_ROBOT)
    sim = Simulator(
        context=rclpy_context, parameter_overrides=[Parameter('robot_file', value=str(path))]
    )
    try:
        sim.start()
        assert sim.running
        grasp = next(s.callback for s in sim.services if s.srv_name.endswith('/grasp'))
        reply = grasp(Trigger.Request(), Trigger.Response())
        assert not reply.success
        assert reply.message == 'grasp refused: ' + (
            'no handle to grasp'
            if robot == 'camera'
            else "robot 'r' has no gripper: no link on a moving body"
        )
        step = sim.engine.step
        deadline = time.monotonic() + 30
        while sim.engine.step <= step + 10:  # the physics runs
            assert sim.running and time.monotonic() < deadline
            time.sleep(0.01)
    finally:
        sim.destroy_node()
