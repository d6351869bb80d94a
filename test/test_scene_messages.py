"""The simulator's target messages and entity helpers without DDS: a URDF target spawned from a
``SpawnEntity`` request, its TF frames composing to the link poses, its odometry twist in the
child frame, a state set through ``set_entity_state``'s path read back, events as
``DiagnosticStatus``."""

from __future__ import annotations

import os

import numpy as np
import pytest

import ffsim_ros.dynamics as D
from ffsim_ros.dynamics.lie import quat_normalize, quat_to_matrix
from ffsim_ros.node_support.scene_services import entity_state, move_target, parse_spawn
from ffsim_ros.node_support.scene_support import TargetMessages, event_status, world_setup
from ffsim_ros.resources import share_path
from ffsim_ros.scene import ContactEvent
from ffsim_ros.sim import Engine

TARGET_URDF = """<robot name="sat">
  <link name="hub"><inertial><mass value="20"/>
      <inertia ixx="1" ixy="0" ixz="0" iyy="1.2" iyz="0" izz="1.4"/></inertial>
    <collision><geometry><box size="0.4 0.3 0.2"/></geometry></collision></link>
  <link name="panel"><inertial><origin xyz="0.3 0 0"/><mass value="2"/>
      <inertia ixx="0.02" ixy="0" ixz="0" iyy="0.05" iyz="0" izz="0.06"/></inertial>
    <collision><geometry><cylinder radius="0.1" length="0.02"/></geometry></collision></link>
  <joint name="hinge" type="revolute"><parent link="hub"/><child link="panel"/>
    <origin xyz="0.3 0 0"/><axis xyz="0 0 1"/>
    <limit lower="-3" upper="3" effort="1" velocity="1"/></joint>
</robot>"""


def _vec(msg, keys='xyz') -> np.ndarray:
    return np.array([getattr(msg, k) for k in keys])


@pytest.fixture
def engine():
    """A fresh engine on the sample servicer (a test changes its world)."""
    urdf = share_path('urdf', 'ffsim_servicer_7dof.urdf').read_text()
    model = D.load_urdf(urdf)
    q0 = np.r_[D.base_state_from_link(model, np.zeros(3), [0, 0, 0, 1])[0], np.zeros(model.n)]
    v0 = np.zeros(model.nv)
    world = world_setup('', model, urdf, 1_000_000).world(model, q0, v0, 1_000_000)
    return Engine(model, q0, v0, dt_ns=1_000_000, world=world)


def test_urdf_target_frames_odometry_and_state(engine) -> None:
    from simulation_interfaces.srv import SpawnEntity

    request = SpawnEntity.Request(name='sat', resource_string=TARGET_URDF)
    quat = quat_normalize([0.1, -0.2, 0.3, 0.9])
    p, o = request.initial_pose.pose.position, request.initial_pose.pose.orientation
    p.x, p.y, p.z = 1.0, 6.0, -2.0
    o.x, o.y, o.z, o.w = quat.tolist()
    target = parse_spawn(request, 'sat', 'world')
    engine.change_world(lambda w: w.add(target))
    # set_entity_state's path: root pose and twist (origin velocity, world), joints kept
    position, lin = np.array([1.5, 6.0, -2.0]), np.array([0.01, -0.02, 0.03])
    ang = np.array([0.05, -0.1, 0.2])
    engine.change_world(lambda w: w.move('sat', joint_velocities=[0.4]))
    engine.change_world(lambda w: move_target(w, 'sat', position, quat, lin, ang))
    snap = engine.snapshot()
    state = entity_state(snap, 'sat', 'world')
    np.testing.assert_allclose(_vec(state.pose.position), position, atol=1e-12)
    np.testing.assert_allclose(_vec(state.pose.orientation, 'xyzw'), quat, atol=1e-12)
    np.testing.assert_allclose(_vec(state.twist.linear), lin, atol=1e-12)
    np.testing.assert_allclose(_vec(state.twist.angular), ang, atol=1e-12)
    t = snap.world.targets['sat']
    assert abs(t.v[6] - 0.4) < 1e-12  # the joint rate kept through the move

    messages = TargetMessages('world', 'robot1/')
    specs = engine.world.targets
    tfs = {tf.child_frame_id: tf for tf in messages.transforms(snap.world, specs, None)}
    assert set(tfs) == {'robot1/target/sat', 'robot1/target/sat/panel'}
    root, panel = tfs['robot1/target/sat'], tfs['robot1/target/sat/panel']
    assert root.header.frame_id == 'world' and panel.header.frame_id == 'robot1/target/sat'
    R0 = quat_to_matrix(_vec(root.transform.rotation, 'xyzw'))
    p_panel = _vec(root.transform.translation) + R0 @ _vec(panel.transform.translation)
    R_panel = R0 @ quat_to_matrix(_vec(panel.transform.rotation, 'xyzw'))
    p_ref, R_ref = D.link_pose(specs['sat'].model, t.q, 'panel')
    np.testing.assert_allclose(p_panel, p_ref, atol=1e-12)
    np.testing.assert_allclose(R_panel, R_ref, atol=1e-12)
    # odometry: the same pose, the twist in the root's own axes (REP 105)
    odom = messages.odometry('sat', snap.world, None)
    assert odom.child_frame_id == 'robot1/target/sat'
    R = quat_to_matrix(quat)
    np.testing.assert_allclose(_vec(odom.twist.twist.linear), R.T @ lin, atol=1e-12)
    np.testing.assert_allclose(_vec(odom.twist.twist.angular), R.T @ ang, atol=1e-12)
    markers = messages.markers(snap.world, specs, set(), None).markers
    assert [m.type for m in markers[1:]] == [markers[1].CUBE, markers[1].CYLINDER]


def test_contact_event_status_keeps_full_precision() -> None:
    point, normal, impulse = np.array([0.1, 1 / 3, -2.0]), np.array([0.0, 0.0, 1.0]), np.zeros(3)
    impulse[2] = np.pi
    status = event_status(
        ContactEvent(
            0.5, 'impact', 'robot/ee_link', 'sat/hub', point, normal, impulse, -normal, 0.25, True
        )
    )
    values = {kv.key: kv.value for kv in status.values}
    assert status.name == 'impact' and status.hardware_id == 'robot/ee_link|sat/hub'
    np.testing.assert_array_equal(np.array(values['point'].split(), dtype=float), point)
    np.testing.assert_array_equal(np.array(values['impulse'].split(), dtype=float), impulse)
    assert values['sticking'] == 'true' and float(values['energy_loss']) == 0.25


def test_scenario_base_pose_and_joints_apply_where_parameters_are_left_default(tmp_path) -> None:
    """The scenario's ``robot.base_position`` / ``base_orientation`` / ``joint_positions``
    replace the simulator's ``initial_*`` parameters left at their defaults, never ones set."""
    import yaml

    urdf_path = share_path('urdf', 'ffsim_servicer_7dof.urdf')
    model = D.load_urdf(urdf_path.read_text())
    robot = {
        'urdf': str(urdf_path),
        'gripper': {'link': 'ee_link'},
        'base_position': [1.0, 2.0, 3.0],
        'base_orientation': [0.0, 0.0, 1.0, 0.0],
        'joint_positions': [0.1] * model.n,
    }
    path = tmp_path / 'scenario.yaml'
    path.write_text(yaml.safe_dump({'robot': robot}))
    setup = world_setup(str(path), model, urdf_path.read_text(), 1_000_000)
    defaults = {
        'initial_joint_positions': [],
        'initial_joint_velocities': [],
        'initial_base_position': [0.0, 0.0, 0.0],
        'initial_base_orientation': [0.0, 0.0, 0.0, 1.0],
    }
    got = setup.initial_values(defaults)
    assert got['initial_base_position'] == [1.0, 2.0, 3.0]
    assert got['initial_base_orientation'] == [0.0, 0.0, 1.0, 0.0]
    assert got['initial_joint_positions'] == [0.1] * model.n
    assert got['initial_joint_velocities'] == []
    chosen = {**defaults, 'initial_base_position': [0.0, 0.0, 5.0]}
    got = setup.initial_values(chosen)
    assert got['initial_base_position'] == [0.0, 0.0, 5.0]
    assert got['initial_base_orientation'] == [0.0, 0.0, 1.0, 0.0]


def test_an_initial_base_position_override_moves_the_scenario_targets(tmp_path) -> None:
    """An ``initial_base_position`` other than the scenario's ``robot.base_position``
    translates the scenario's targets by the difference (orientation and velocity kept) and
    says so; left at its default, or equal to the scenario's, nothing moves."""
    import yaml

    urdf_path = share_path('urdf', 'ffsim_servicer_7dof.urdf')
    model = D.load_urdf(urdf_path.read_text())
    sphere = {'shape': {'type': 'sphere', 'radius': 0.2}, 'mass': 40.0}
    path = tmp_path / 'scenario.yaml'
    path.write_text(
        yaml.safe_dump(
            {
                'robot': {
                    'urdf': str(urdf_path),
                    'gripper': {'link': 'ee_link'},
                    'base_position': [1.0, 2.0, 3.0],
                },
                'targets': [
                    {'name': 'a', **sphere, 'position': [4.0, 2.0, 3.0]},
                    {
                        'name': 'b',
                        **sphere,
                        'position': [1.0, 2.0, 9.0],
                        'orientation': [0.0, 0.0, 1.0, 0.0],
                        'linear_velocity': [0.0, 0.01, 0.0],
                    },
                ],
            }
        )
    )
    setup = world_setup(str(path), model, urdf_path.read_text(), 1_000_000)
    for kept in ([0.0, 0.0, 0.0], [1.0, 2.0, 3.0]):
        same, note = setup.placed({'initial_base_position': kept})
        assert same is setup and note == ''
    moved, note = setup.placed({'initial_base_position': [1.0, -3.0, 3.5]})
    assert note == (
        'scenario: initial_base_position [1.0, -3.0, 3.5] overrides the base position '
        f'[1.0, 2.0, 3.0] of {path}: its targets (a, b) moved by [0.0, -5.0, 0.5] m with it'
    )
    assert [t.name for t in moved.targets] == ['a', 'b']
    for before, after in zip(setup.targets, moved.targets, strict=True):
        np.testing.assert_array_equal(after.q[:3], before.q[:3] + [0.0, -5.0, 0.5])
        np.testing.assert_array_equal(after.q[3:], before.q[3:])
        np.testing.assert_array_equal(after.v, before.v)
        assert after.model is before.model and after.handles == before.handles
    assert moved.initial_values(
        {
            'initial_joint_positions': [],
            'initial_joint_velocities': [],
            'initial_base_position': [1.0, -3.0, 3.5],
            'initial_base_orientation': [0.0, 0.0, 0.0, 1.0],
        }
    )['initial_base_position'] == [1.0, -3.0, 3.5]


def test_scenario_files_of_the_nodes_are_read_strictly(tmp_path) -> None:
    """The simulator's ``scenario`` and the controller's ``capture.scenario`` refuse a
    duplicated key (PyYAML keeps the last one silently) and undecodable bytes, naming the file:
    the simulator with a ParameterValueError (exit 2 at start), the controller a ValueError."""
    from ffsim_ros.node_support.capture_control import scenario_target
    from ffsim_ros.node_support.parameters import ParameterValueError

    urdf_path = share_path('urdf', 'ffsim_servicer_7dof.urdf')
    model = D.load_urdf(urdf_path.read_text())
    twice = tmp_path / 'twice.yaml'
    twice.write_text('dt: 0.001\ndt: 0.5\n')
    binary = tmp_path / 'binary.yaml'
    binary.write_bytes(b'\x00\x01\x02\xff')
    for path, text in ((twice, "duplicated key 'dt'"), (binary, 'got binary data')):
        with pytest.raises(ParameterValueError, match=f'scenario:.*{path.name}') as info:
            world_setup(str(path), model, urdf_path.read_text(), 1_000_000)
        assert text in str(info.value), str(info.value)
        with pytest.raises(ValueError, match=f'capture.scenario.*{path.name}') as info:
            scenario_target(str(path))
    # not a regular file: refused at once, never read (a FIFO hung the node, /dev/zero filled
    # the memory)
    fifo = tmp_path / 'fifo.yaml'
    os.mkfifo(fifo)
    for path, kind in ((fifo, 'a FIFO'), ('/dev/zero', 'a character device'), (tmp_path, 'a dir')):
        with pytest.raises(
            ParameterValueError, match='^scenario: expected a regular file'
        ) as info:
            world_setup(str(path), model, urdf_path.read_text(), 1_000_000)
        assert kind in str(info.value), str(info.value)
        with pytest.raises(ValueError, match='^capture.scenario: expected a regular file') as info:
            scenario_target(str(path))
        assert kind in str(info.value), str(info.value)


def test_grasp_wrench_message_is_the_weld_force_at_the_gripper_link() -> None:
    """``grasp_wrench``: the scene's weld wrench (about the weld point, world axes) moved to the
    gripper link's origin and axes, with a grasp frame offset from the link (rotation and
    translation); the link pose taken independently (``link_pose`` of the robot state). Newton
    on the held 40 kg target: the force equals its mass times its CoM acceleration (central
    differences of its velocity over the welded steps)."""
    import copy

    import yaml

    from ffsim_ros.dynamics.lie import rpy_to_matrix
    from ffsim_ros.node_support.scene_support import resolve_scenario
    from ffsim_ros.scene import scene_from_dict

    path = resolve_scenario('capture')
    data = copy.deepcopy(yaml.safe_load(path.read_text()))
    data['robot']['gripper'] = {'link': 'ee_link', 'translation': [0.02, 0.0, 0.03],
                                'rpy': [0.0, 0.0, 0.3]}  # fmt: skip
    data['robot']['joint_positions'] = [0.1, -0.2, 0.3, 0.4, -0.1, 0.2, 0.0]
    scene = scene_from_dict(data, path.parent)
    grasp = scene.snapshot().gripper
    R_g = quat_to_matrix(grasp.orientation)
    scene.set_target_state(
        'client',
        position=grasp.position - R_g @ np.array([-0.25, 0.0, 0.0]),
        orientation=grasp.orientation,
    )
    assert scene.grasp().captured
    scene.set_effort([3.0, -2.0, 1.5, 2.5, -1.0, 0.8, 0.5])
    snaps = [scene.advance(1) for _ in range(3)]
    snap = snaps[1]
    msg = TargetMessages('world', 'r1/').grasp_wrench(snap, scene.gripper, None)
    assert msg.header.frame_id == 'r1/ee_link'
    robot = scene.robot_model
    p_link, R_link = D.link_pose(robot, snap.robot_q, 'ee_link')
    R_grasp = quat_to_matrix(snap.gripper.orientation)
    np.testing.assert_allclose(R_link @ rpy_to_matrix([0, 0, 0.3]), R_grasp, atol=1e-12)
    f = R_link @ _vec(msg.wrench.force)
    n_link = R_link @ _vec(msg.wrench.torque)
    np.testing.assert_allclose(f, snap.grasp_wrench[:3], rtol=0, atol=1e-12)
    n_point = n_link - np.cross(snap.grasp_point - p_link, f)
    np.testing.assert_allclose(n_point, snap.grasp_wrench[3:], rtol=0, atol=1e-11)
    assert np.linalg.norm(f) > 1.0  # the arm pushes the target
    h = scene.dt
    accel = snaps[2].targets['client'].momentum[:3] - snaps[0].targets['client'].momentum[:3]
    np.testing.assert_allclose(f, accel / (2 * h), rtol=1e-3, atol=1e-3 * np.linalg.norm(f))


def _spawn_request(uri: str = '', text: str = '', x: float = 5.0):
    from simulation_interfaces.srv import SpawnEntity

    request = SpawnEntity.Request(name='t', uri=uri, resource_string=text)
    request.initial_pose.pose.position.x = x
    request.initial_pose.pose.orientation.w = 1.0
    return request


def test_spawn_pose_within_the_bound_of_set_entity_state() -> None:
    """A finite but absurd position (1e9 m) used to be spawned and then stop the simulation
    (a mass matrix not positive definite): spawn takes the bound of set_entity_state, with
    the same check and message."""
    from simulation_interfaces.srv import SpawnEntity

    from ffsim_ros.node_support import sim_interfaces
    from ffsim_ros.node_support.scene_services import MAX_POSITION, EntityError

    ball = '{shape: {type: sphere, radius: 0.2}, mass: 40}'
    assert sim_interfaces.MAX_POSITION is MAX_POSITION == 1e6
    for x in (1e9, -1e6 - 1.0):
        with pytest.raises(EntityError) as info:
            parse_spawn(_spawn_request(text=ball, x=x), 't', 'world')
        assert info.value.code == SpawnEntity.Response.INVALID_POSE
        assert str(info.value) == (
            f"expected values of magnitude <= 1e+06, got {{'initial_pose.pose.position.x': {x!r}}}"
        )
    target = parse_spawn(_spawn_request(text=ball, x=-1e6), 't', 'world')
    np.testing.assert_allclose(target.q[:3], [-1e6, 0.0, 0.0])  # at the bound: taken


def test_spawn_resource_errors_say_what_was_expected_and_what_came(tmp_path) -> None:
    """A directory, a device, a FIFO, a missing file and a URI of another scheme are named as
    such (they all read "no such file" before, the http URI with a slash lost); YAML 1.1's
    strings that are numbers (``1e-1``) are numbers, a huge radius is refused with the bound."""
    import os

    from simulation_interfaces.msg import Result
    from simulation_interfaces.srv import SpawnEntity

    from ffsim_ros.node_support.scene_services import EntityError

    R = SpawnEntity.Response
    fifo = tmp_path / 'target.yaml'
    os.mkfifo(fifo)
    folder = tmp_path / 'robot.urdf'
    folder.mkdir()
    for request, code, text in (
        (_spawn_request(uri=str(folder)), R.RESOURCE_PARSE_ERROR, f"got '{folder}' (a directory)"),
        (
            _spawn_request(uri='/dev/zero'),
            R.UNSUPPORTED_FORMAT,
            "uri: expected a .urdf or .yaml file, got '/dev/zero'",
        ),
        (_spawn_request(uri=f'file://{fifo}'), R.RESOURCE_PARSE_ERROR, f"got '{fifo}' (a FIFO)"),
        (
            _spawn_request(uri=f'file://{tmp_path}/missing.urdf'),
            Result.RESULT_NOT_FOUND,
            f"uri: cannot read '{tmp_path}/missing.urdf': No such file or directory",
        ),
        (  # the format is decided before the file is read (a missing .sdf was NO_RESOURCE)
            _spawn_request(uri=f'{tmp_path}/missing.sdf'),
            R.UNSUPPORTED_FORMAT,
            f"uri: expected a .urdf or .yaml file, got '{tmp_path}/missing.sdf'",
        ),
        (  # NO_RESOURCE is the standard's "both uri and resource string are empty"
            _spawn_request(),
            R.NO_RESOURCE,
            'expected uri (a .urdf or .yaml file) or resource_string',
        ),
        (
            _spawn_request(uri='http://example.com/x.urdf'),
            R.UNSUPPORTED_FORMAT,
            "uri: expected a file path or a file:// URI, got 'http://example.com/x.urdf' "
            '(a http:// URI: not fetched)',
        ),
        (
            _spawn_request(uri='package://ffsim_ros/urdf/x.urdf'),
            R.UNSUPPORTED_FORMAT,
            '(a package:// URI: not fetched)',
        ),
        (
            _spawn_request(text='{shape: {type: sphere, radius: 1e300}, mass: 1}'),
            R.RESOURCE_PARSE_ERROR,
            'resource.shape: sphere radius: expected at most 1e+06 m, got 1e+300',
        ),
        (
            _spawn_request(text='{shape: {type: sphere, radius: 1e0x}, mass: 1}'),
            R.RESOURCE_PARSE_ERROR,
            "resource.shape.radius: expected a number, got the string '1e0x' (not a number)",
        ),
        (
            _spawn_request(text='{shape: {type: sphere, radius: 0.1}, mass: 1, mass: 900}'),
            R.RESOURCE_PARSE_ERROR,
            "resource: malformed YAML: duplicated key 'mass'",
        ),
    ):
        with pytest.raises(EntityError) as info:
            parse_spawn(request, 't', 'world')
        assert info.value.code == code and text in str(info.value), str(info.value)
    target = parse_spawn(
        _spawn_request(text='{shape: {type: sphere, radius: 1e-1}, mass: 4e1}'), 't', 'world'
    )
    assert target.shapes[0].shape.radius == 0.1 and target.model.total_mass == 40.0
    good = tmp_path / 'good.yaml'
    good.write_text('{shape: {type: sphere, radius: 0.2}, mass: 40}')
    assert parse_spawn(_spawn_request(uri=f'file://{good}'), 't', 'world').name == 't'


#: A robot whose last link (a camera) is on the base body, and one that is only a base.
CAMERA_ROBOT = """<robot name="r">
  <link name="base"><inertial><mass value="10"/>
    <inertia ixx="1" iyy="1" izz="1" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <link name="arm"><inertial><mass value="1"/>
    <inertia ixx="0.1" iyy="0.1" izz="0.1" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <joint name="j1" type="revolute"><parent link="base"/><child link="arm"/>
    <axis xyz="0 0 1"/><origin xyz="0.5 0 0"/>
    <limit lower="-1" upper="1" effort="10" velocity="1"/></joint>
  <link name="camera"><inertial><mass value="0.1"/>
    <inertia ixx="0.01" iyy="0.01" izz="0.01" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <joint name="cam_joint" type="fixed"><parent link="base"/><child link="camera"/>
    <origin xyz="0 0.5 0"/></joint>
</robot>"""
BASE_ONLY_ROBOT = """<robot name="r">
  <link name="base"><inertial><mass value="10"/>
    <inertia ixx="1" iyy="1" izz="1" ixy="0" ixz="0" iyz="0"/></inertial></link>
</robot>"""


def test_default_gripper_is_on_a_moving_body_or_none() -> None:
    """Without a scenario the gripper is a link on a moving body (not the last link, a camera
    on the base here); a robot that is only a base has none: its world builds and a grasp is
    refused, saying why."""
    from ffsim_ros.node_support.scene_support import default_gripper_link

    servicer = D.load_urdf(share_path('urdf', 'ffsim_servicer_7dof.urdf'))
    assert default_gripper_link(servicer) == 'ee_link'
    for urdf, link, reason in (
        (CAMERA_ROBOT, 'arm', 'no handle to grasp'),
        (BASE_ONLY_ROBOT, None, "robot 'r' has no gripper: no link on a moving body"),
    ):
        model = D.load_urdf(urdf)
        assert default_gripper_link(model) == link
        q0 = np.r_[D.base_state_from_link(model, np.zeros(3), [0, 0, 0, 1])[0], np.zeros(model.n)]
        world = world_setup('', model, urdf, 1_000_000).world(
            model, q0, np.zeros(model.nv), 1_000_000
        )
        event = world.scene.grasp()
        assert not event.captured and event.reason == reason
        assert world.scene.envelope_checks() == []


def test_left_out_robot_meshes_are_warned_about_once() -> None:
    """A robot whose collision geometry is meshes (a CAD export): the simulator's contact
    shapes are primitives only, said by one warning naming every link (one warning per mesh
    before: dozens of lines for a real robot)."""
    mesh = '<collision><geometry><mesh filename="package://x/{0}.dae"/></geometry></collision>'
    urdf = TARGET_URDF.replace(
        '<collision><geometry><box size="0.4 0.3 0.2"/></geometry></collision>',
        mesh.format('hub'),
    ).replace(
        '<collision><geometry><cylinder radius="0.1" length="0.02"/></geometry></collision>',
        mesh.format('panel') + mesh.format('panel2'),
    )
    model = D.load_urdf(urdf)
    with pytest.warns(UserWarning) as caught:
        setup = world_setup('', model, urdf, 1_000_000)
    texts = [str(w.message) for w in caught]
    assert texts == [
        '3 collision mesh(es) left out (contact with targets uses the primitive shapes only): '
        'link hub, link panel'
    ], texts
    assert len(setup.shapes) == 0  # no primitive left


def test_target_names_are_tokens_of_their_topics() -> None:
    """``ball-1``, ``my ball`` or a name of 240 characters used to be added to the world, then
    ``targets/<name>/odom`` could not be made (rclpy's InvalidTopicNameException), the
    request never answered and the simulator ended (exit code 1): names are checked first,
    rclpy's validator deciding on the very topics made, its length bound said."""
    from rclpy.expand_topic_name import expand_topic_name
    from rclpy.validate_full_topic_name import validate_full_topic_name

    from ffsim_ros.node_support.scene_services import target_name_problem, target_topics

    allowed = (
        'name: expected ASCII letters, digits and underscores, not starting with a digit, at '
        "most 233 characters (a token of the topic targets/<name>/odom in namespace '/', at "
        'most 247 characters in all), got '
    )
    for name, got in (
        ('ball-1', "'ball-1'"),
        ('my ball', "'my ball'"),
        ('1ball', "'1ball'"),
        ('a/b', "'a/b'"),
        ('{node}', "'{node}'"),  # (a substitution: a valid topic of another name)
        ('~x', "'~x'"),
        ('a\x00b', "'a\\x00b'"),  # (valid for rclpy: the C string ends at the NUL)
        ('bäll', "'bäll'"),
        ('', "''"),
        ('b' * 234, f'{"b" * 60!r}... (234 characters)'),
        ('n' * 100_000, f'{"n" * 60!r}... (100000 characters)'),
    ):
        assert target_name_problem(name) == allowed + got, name
    for name in ('ball', 'ball_1', '_b', 'B9', 'b' * 233):
        assert target_name_problem(name) is None, name
    # the bound is rclpy's, in any namespace: the longest name taken makes valid topics, one
    # character more does not
    for namespace in ('/', '/a', '/robots/servicer_1'):
        longest = max(n for n in range(1, 300) if target_name_problem('b' * n, namespace) is None)
        for n, valid in ((longest, True), (longest + 1, False)):
            (topic,) = target_topics('b' * n)
            full = expand_topic_name(topic, 'ffsim_simulator', namespace)
            try:
                validate_full_topic_name(full)
            except Exception:
                assert not valid, full
            else:
                assert valid, full
        assert f'at most {longest} characters' in target_name_problem('b' * 999, namespace)


def test_spawned_urdf_of_a_yaml_description_takes_the_checks_of_uri(tmp_path) -> None:
    """``{urdf: <path>}`` read its file whole (a sparse 1 GB file: 6-8 s and 1 GB of memory,
    a FIFO named "no such file"): it takes the checks of ``uri``; a missing one is the
    standard's MISSING_ASSETS (a resource's asset not found), one that is not a regular text
    file of at most 16 MiB RESOURCE_PARSE_ERROR."""
    from simulation_interfaces.srv import SpawnEntity

    from ffsim_ros.node_support.common import MAX_ROBOT_BYTES
    from ffsim_ros.node_support.scene_services import EntityError

    big, fifo = tmp_path / 'big.urdf', tmp_path / 'fifo.urdf'
    with open(big, 'wb') as f:
        f.truncate(MAX_ROBOT_BYTES + 1)  # (sparse: no disk used)
    os.mkfifo(fifo)
    R = SpawnEntity.Response
    for path, code, text in (
        (
            big,
            R.RESOURCE_PARSE_ERROR,
            f"expected at most {MAX_ROBOT_BYTES} bytes, got '{big}' of {MAX_ROBOT_BYTES + 1}",
        ),
        (fifo, R.RESOURCE_PARSE_ERROR, f"expected a regular file, got '{fifo}' (a FIFO)"),
        (
            '/dev/zero',
            R.RESOURCE_PARSE_ERROR,
            "expected a regular file, got '/dev/zero' (a character device)",
        ),
        (tmp_path / 'missing.urdf', R.MISSING_ASSETS, 'No such file or directory'),
    ):
        with pytest.raises(EntityError) as info:
            parse_spawn(_spawn_request(text=f'{{urdf: {path}}}'), 't', 'world')
        assert info.value.code == code, str(info.value)
        assert str(info.value).startswith('resource.urdf: ') and text in str(info.value)
    # a good one, relative to the folder of a YAML uri, as before
    (tmp_path / 'sat.urdf').write_text(TARGET_URDF)
    (tmp_path / 'sat.yaml').write_text('{urdf: sat.urdf}')
    target = parse_spawn(_spawn_request(uri=str(tmp_path / 'sat.yaml')), 't', 'world')
    assert target.name == 't' and target.model.total_mass == 22.0


def test_spawned_urdf_with_a_dtd_is_refused_unread(tmp_path) -> None:
    """A DTD in a spawned URDF (``resource_string``, a ``.urdf`` uri, the ``urdf`` of a YAML
    description) was read, its entities expanded (``ixx="&a;"`` spawned): refused as
    RESOURCE_PARSE_ERROR naming it, before any of it is read -- a "billion laughs" document
    gets this message, not expat's amplification limit after expanding part of it. A bare
    ``<!DOCTYPE robot>`` and the predefined entities are plain XML and still spawn."""
    from simulation_interfaces.srv import SpawnEntity

    from ffsim_ros.dynamics.urdf import NO_DTD
    from ffsim_ros.node_support.scene_services import EntityError

    prolog = '<!DOCTYPE robot [<!ENTITY a "1">]>\n'
    entity = prolog + TARGET_URDF.replace('ixx="1"', 'ixx="&a;"', 1)
    nested = ''.join(f'<!ENTITY a{i} "{f"&a{i - 1};" * 10}">' for i in range(1, 10))
    laughs = f'<!DOCTYPE robot [<!ENTITY a0 "lol">{nested}]>\n<robot name="&a9;"></robot>'
    external = '<!DOCTYPE robot SYSTEM "file:///etc/passwd">\n' + TARGET_URDF
    (tmp_path / 'entity.urdf').write_text(entity)
    (tmp_path / 'entity.yaml').write_text('{urdf: entity.urdf}')
    declared = f"resource: target 't': URDF: {NO_DTD}, got <!DOCTYPE robot [...]> (declarations)"
    for request, message in (
        (_spawn_request(text=entity), declared),
        (_spawn_request(text=laughs), declared),
        (_spawn_request(uri=f'file://{tmp_path}/entity.urdf'), declared),
        (
            _spawn_request(uri=str(tmp_path / 'entity.yaml')),
            f"resource: target 't': URDF in {tmp_path}/entity.urdf: {NO_DTD}, got "
            '<!DOCTYPE robot [...]> (declarations)',
        ),
        (
            _spawn_request(text=external),
            f"resource: target 't': URDF: {NO_DTD}, got <!DOCTYPE robot SYSTEM "
            '"file:///etc/passwd"> (an external DTD)',
        ),
    ):
        with pytest.raises(EntityError) as info:
            parse_spawn(request, 't', 'world')
        assert info.value.code == SpawnEntity.Response.RESOURCE_PARSE_ERROR
        assert str(info.value) == message
    plain = '<!DOCTYPE robot>\n' + TARGET_URDF.replace('name="sat"', 'name="s&amp;t&#33;"', 1)
    target = parse_spawn(_spawn_request(text=plain), 't', 'world')
    assert target.model.total_mass == 22.0


def test_spawned_mass_and_inertia_within_their_bounds() -> None:
    """A spawned target of 1e-300 kg was taken (only > 0 was checked): a mass outside [1 mg,
    1e12 kg] and principal moments outside the mass times [(0.1 mm)^2 / 12, (1e6 m)^2] are
    refused as RESOURCE_PARSE_ERROR naming the field, the range and what came; the bounds
    themselves (and a URDF target's total mass within them) are taken."""
    from simulation_interfaces.srv import SpawnEntity

    from ffsim_ros.node_support.scene_services import EntityError
    from ffsim_ros.scene.targets import MIN_GYRATION_SQUARED

    mass = (
        'resource.mass: expected a finite value in [1e-06, 1e+12] kg (1 mg to an asteroid 1 km '
        'across), got '
    )
    low = 2.0 * MIN_GYRATION_SQUARED  # [kg m^2] for the 2 kg targets below

    def ball(m: str, inertia: str = '') -> str:
        return f'{{shape: {{type: sphere, radius: 0.2}}, mass: {m}{inertia}}}'

    for text, message in (
        (ball('1e-300'), mass + '1e-300'),
        (ball('9.9e-7'), mass + '9.9e-07'),
        (ball('2e12'), mass + '2000000000000.0'),
        (ball('.nan'), mass + 'nan'),
        (
            ball('2', ', inertia: [[1e-300, 0, 0], [0, 1e-300, 0], [0, 0, 1e-300]]'),
            f'resource.inertia: expected principal moments in [{low:.6g}, 2e+12] kg m^2 for a '
            'mass of 2 kg (mass times [(0.1 mm)^2 / 12, (1e6 m)^2]: no smaller than a 0.1 mm '
            'rod, no larger than the world), got [1e-300, 1e-300, 1e-300]',
        ),
        (
            ball('2', ', inertia: [[1, 0, 0], [0, 1, 0], [0, 0, 0]]'),
            'the world), got [0, 1, 1]',
        ),
        (
            ball('2', ', inertia: [[3e12, 0, 0], [0, 3e12, 0], [0, 0, 3e12]]'),
            'got [3e+12, 3e+12, 3e+12]',
        ),
        (
            ball('2', ', inertia: [[1, 0.5, 0], [0, 1, 0], [0, 0, 1]]'),
            'resource.inertia: expected a symmetric matrix [kg m^2], got [[1.0, 0.5, 0.0]',
        ),
        (  # with a tumble (read before the target is built): the same checks, first
            '{shape: {type: sphere, radius: 0.2}, mass: 1e-300, '
            'tumble: {spin_rate: 0.1, nutation: 0.1}}',
            mass + '1e-300',
        ),
    ):
        with pytest.raises(EntityError) as info:
            parse_spawn(_spawn_request(text=text), 't', 'world')
        assert info.value.code == SpawnEntity.Response.RESOURCE_PARSE_ERROR
        assert str(info.value).startswith(message) or message in str(info.value), str(info.value)
    for text, total in (
        (ball('1e-6'), 1e-6),
        (ball('1e12'), 1e12),
        (ball('2', f', inertia: [[{low!r}, 0, 0], [0, {low!r}, 0], [0, 0, {low!r}]]'), 2.0),
        (ball('2', ', inertia: [[2e12, 0, 0], [0, 2e12, 0], [0, 0, 2e12]]'), 2.0),
    ):
        assert parse_spawn(_spawn_request(text=text), 't', 'world').model.total_mass == total
    # a URDF target: its total mass is bounded alike
    light = (
        '<robot name="dust"><link name="grain"><inertial><mass value="1e-300"/><inertia '
        'ixx="1e-300" ixy="0" ixz="0" iyy="1e-300" iyz="0" izz="1e-300"/></inertial>'
        '<collision><geometry><sphere radius="0.01"/></geometry></collision></link></robot>'
    )
    with pytest.raises(EntityError) as info:
        parse_spawn(_spawn_request(text=light), 't', 'world')
    assert info.value.code == SpawnEntity.Response.RESOURCE_PARSE_ERROR
    assert str(info.value) == (
        "resource: target 't' total mass: expected a finite value in [1e-06, 1e+12] kg (1 mg to "
        'an asteroid 1 km across), got 1e-300'
    )


def _shipped_scenario(tmp_path, change) -> str:
    """The shipped capture scenario with ``change(data)`` applied, written to ``tmp_path``."""
    import yaml

    shipped = share_path('config', 'scenarios', 'capture.yaml')
    data = yaml.safe_load(shipped.read_text())
    data['robot']['urdf'] = str((shipped.parent / data['robot']['urdf']).resolve())
    change(data)
    path = tmp_path / 'scenario.yaml'
    path.write_text(yaml.safe_dump(data))
    return str(path)


def test_scenario_target_names_are_tokens_of_their_topics(tmp_path) -> None:
    """A scenario target whose name makes no valid topic (``sat-1``, ``2nd``, ``my sat``,
    ``~x``) ended the simulator at start with rclpy's InvalidTopicNameException (exit 1): the
    scenario is refused naming ``targets[i].name`` (a ParameterValueError: exit 2), with the
    check of a spawned name in the simulator's namespace."""
    from ffsim_ros.node_support.parameters import ParameterValueError
    from ffsim_ros.node_support.target_names import target_name_problem

    urdf_path = share_path('urdf', 'ffsim_servicer_7dof.urdf')
    model = D.load_urdf(urdf_path.read_text())
    for name in ('sat-1', '2nd', 'my sat', '~x'):

        def rename(data, name=name):
            data['targets'][0]['name'] = name

        path = _shipped_scenario(tmp_path, rename)
        with pytest.raises(ParameterValueError) as info:
            world_setup(path, model, urdf_path.read_text(), 1_000_000)
        assert str(info.value) == (
            f'scenario: {path!r}: targets[0].{target_name_problem(name)}'
        ), name
    # the namespace bounds the length: 200 characters fit in the root, not under a long one
    path = _shipped_scenario(tmp_path, lambda data: data['targets'][0].update(name='b' * 200))
    assert world_setup(path, model, urdf_path.read_text(), 1_000_000).targets[0].name == 'b' * 200
    with pytest.raises(ParameterValueError, match=r'targets\[0\]\.name: .*at most 190 char'):
        world_setup(path, model, urdf_path.read_text(), 1_000_000, '/' + 'n' * 42)


def test_a_target_with_loop_closures_is_refused_by_the_simulator(tmp_path) -> None:
    """A URDF+ target with ``<loop>`` closures was taken with its loops dropped, from a
    scenario and from a spawn: both refuse it naming the loops."""
    from simulation_interfaces.srv import SpawnEntity

    from ffsim_ros.node_support.parameters import ParameterValueError
    from ffsim_ros.node_support.scene_services import EntityError

    platform = share_path('urdf', 'floating_platform.urdf')
    loops = [lp.name for lp in D.loop_closures_from_urdf(platform)]
    urdf_path = share_path('urdf', 'ffsim_servicer_7dof.urdf')
    model = D.load_urdf(urdf_path.read_text())
    path = _shipped_scenario(
        tmp_path,
        lambda data: data['targets'].append(
            {'name': 'plat', 'urdf': str(platform), 'position': [0.0, 10.0, 0.0]}
        ),
    )
    with pytest.raises(ParameterValueError) as info:
        world_setup(path, model, urdf_path.read_text(), 1_000_000)
    assert str(info.value).startswith(f"scenario: {path!r}: targets[1]: target 'plat': expected")
    assert f'(URDF+ <loop> {loops})' in str(info.value)
    for request in (
        _spawn_request(uri=str(platform), x=10.0),
        _spawn_request(text=platform.read_text(), x=10.0),
        _spawn_request(text=f'{{urdf: {platform}}}', x=10.0),
    ):
        with pytest.raises(EntityError) as info:
            parse_spawn(request, 'plat', 'world')
        assert info.value.code == SpawnEntity.Response.RESOURCE_PARSE_ERROR
        assert f'(URDF+ <loop> {loops})' in str(info.value), str(info.value)


def test_scenario_joints_beyond_the_limits_are_named_by_their_field(tmp_path) -> None:
    """The scenario's ``robot.joint_positions`` beyond a limit (with ``position_limits``) was
    reported as ``initial_joint_positions``, a parameter the user never set: it is named by
    the scenario's field; a value the parameter sets is still named by the parameter."""
    from ffsim_ros.node_support.initial_state import initial_state
    from ffsim_ros.node_support.parameters import ParameterValueError

    urdf_path = share_path('urdf', 'ffsim_servicer_7dof.urdf')
    model = D.load_urdf(urdf_path.read_text())
    path = _shipped_scenario(
        tmp_path, lambda data: data['robot'].update(joint_positions=[0.0, 2.6] + [0.0] * 5)
    )
    setup = world_setup(path, model, urdf_path.read_text(), 1_000_000)
    values = {
        'initial_joint_positions': [],
        'initial_joint_velocities': [],
        'initial_base_position': [0.0, 0.0, 0.0],
        'initial_base_orientation': [0.0, 0.0, 0.0, 1.0],
        'initial_base_twist': [0.0] * 6,
        'position_limits': True,
        'velocity_limits': False,
        'integrator': 'rk4',
    }
    names = setup.value_names(values)
    assert names == {'initial_joint_positions': f'scenario: {path!r}: robot.joint_positions'}
    with pytest.raises(ParameterValueError) as info:
        initial_state(model, (), setup.initial_values(values), names)
    assert str(info.value) == (
        f'scenario: {path!r}: robot.joint_positions: expected joint {model.joint_names[1]} '
        f'within its position limits [{model.lower[1]:g}, {model.upper[1]:g}] '
        '(position_limits is on), got 2.6'
    )
    chosen = {**values, 'initial_joint_positions': [0.0, -2.7] + [0.0] * 5}
    assert setup.value_names(chosen) == {}
    with pytest.raises(ParameterValueError, match=r'^initial_joint_positions: expected joint'):
        initial_state(model, (), setup.initial_values(chosen), setup.value_names(chosen))
