"""Capture scenarios from YAML (:mod:`ffsim_ros.scene.scenario`): what a file sets is what the
scene holds, and every bad field is refused with its name."""

from __future__ import annotations

import copy
import os
from pathlib import Path

import numpy as np
import pytest
import yaml

import ffsim_ros.dynamics as D
from ffsim_ros.dynamics.lie import quat_to_matrix
from ffsim_ros.scene import (
    CompliantLaw,
    ImpactLaw,
    ScenarioError,
    load_scenario,
    scene_from_dict,
    target_from_dict,
)

ROOT = Path(__file__).resolve().parents[1]

SCENARIO = {
    'dt': 0.002,
    'robot': {
        'urdf': 'urdf/ffsim_servicer_7dof.urdf',
        'gripper': {'link': 'ee_link', 'translation': [0.0, 0.0, 0.05]},
        'exclude_links': ['arm_link_7', 'ee_link'],
        'joint_positions': [0.1, -0.2, 0.3, 0.4, -0.1, 0.2, 0.0],
    },
    'contact': {'law': 'impact', 'restitution': 0.4, 'friction': 0.2},
    'targets': [
        {
            'name': 'sat',
            'shape': {'type': 'box', 'size': [0.6, 0.5, 0.4]},
            'mass': 150.0,
            'position': [4.0, 0.0, 0.0],
            'tumble': {'spin_rate': 0.0872665, 'nutation': 0.2},
            'linear_velocity': [-0.02, 0.0, 0.0],
            'handles': [{'name': 'bar', 'link': 'body', 'translation': [-0.35, 0, 0]}],
        },
        {
            'name': 'ball',
            'shape': {'type': 'sphere', 'radius': 0.1},
            'mass': 2.0,
            'position': [0.0, 5.0, 0.0],
            'angular_velocity': [0.0, 0.0, 0.1],
        },
    ],
}


def test_scenario_builds_what_it_says(tmp_path):
    path = tmp_path / 'capture.yaml'
    data = copy.deepcopy(SCENARIO)
    data['robot']['urdf'] = str(ROOT / data['robot']['urdf'])
    path.write_text(yaml.safe_dump(data))
    scene = load_scenario(path)
    assert scene.dt == 0.002
    assert scene.contact == ImpactLaw(restitution=0.4, friction=0.2)
    assert scene.target_names == ('sat', 'ball')
    q, v = scene.robot_state
    np.testing.assert_array_equal(q[7:], SCENARIO['robot']['joint_positions'])
    np.testing.assert_array_equal(scene.gripper.translation, [0, 0, 0.05])
    snap = scene.snapshot()
    sat = snap.targets['sat']
    np.testing.assert_allclose(sat.root.position, [4, 0, 0], atol=1e-15)
    np.testing.assert_allclose(sat.momentum[:3] / 150.0, [-0.02, 0, 0], atol=1e-15)
    # the tumble: spin rate about the body z axis, momentum along world z at 0.2 rad from it
    R = quat_to_matrix(sat.root.orientation)
    assert sat.root.angular_velocity @ R[:, 2] == pytest.approx(0.0872665, abs=1e-12)
    h = sat.momentum[3:] - np.cross(sat.com, sat.momentum[:3])
    np.testing.assert_allclose(h / np.linalg.norm(h), [0, 0, 1], atol=1e-12)
    assert np.arccos(R[:, 2] @ h / np.linalg.norm(h)) == pytest.approx(0.2, abs=1e-12)
    assert set(sat.handles) == {'bar'}
    np.testing.assert_allclose(snap.targets['ball'].root.angular_velocity, [0, 0, 0.1])


def test_compliant_law_and_urdf_target(tmp_path):
    urdf = tmp_path / 'tgt.urdf'
    urdf.write_text(
        '<robot name="t"><link name="hub"><inertial><mass value="5"/>'
        '<inertia ixx="0.1" ixy="0" ixz="0" iyy="0.1" iyz="0" izz="0.1"/></inertial>'
        '<collision><geometry><sphere radius="0.2"/></geometry></collision></link></robot>'
    )
    data = copy.deepcopy(SCENARIO)
    data['robot']['urdf'] = str(ROOT / data['robot']['urdf'])
    data['contact'] = {'law': 'compliant', 'stiffness': 1e4, 'damping': 20.0}
    data['targets'] = [
        {
            'name': 'u',
            'urdf': 'tgt.urdf',
            'position': [0, 4, 0],
            'tumble': {'spin_rate': 0.1, 'nutation': 0.0},
        }
    ]
    scene = scene_from_dict(data, tmp_path)
    assert scene.contact == CompliantLaw(stiffness=1e4, damping=20.0)
    w = scene.snapshot().targets['u'].root.angular_velocity
    np.testing.assert_allclose(np.linalg.norm(w), 0.1, atol=1e-14)


def _set(data, path, value):
    d = data
    for k in path[:-1]:
        d = d[k]
    if value is _DELETE:
        del d[path[-1]]
    else:
        d[path[-1]] = value


_DELETE = object()


@pytest.mark.parametrize(
    'path, value, words',
    [
        (('targets', 0, 'mass'), 0.0, ['targets[0]', 'mass']),
        (('targets', 0, 'mass'), -2.0, ['targets[0]', 'mass']),
        (('targets', 0, 'mass'), 1e-300, ['targets[0].mass: expected a finite value in [1e-06']),
        (('targets', 1, 'mass'), 1e15, ['targets[1].mass: expected', 'got 1000000000000000.0']),
        (('targets', 1, 'inertia'), (np.eye(3) * 1e13).tolist(), ['targets[1].inertia', '1e+13]']),
        (('targets', 1, 'inertia'), np.zeros((3, 3)).tolist(), ['targets[1].inertia', '[0, 0']),
        (('targets', 1, 'position'), [float('nan'), 0, 0], ['targets[1].position']),
        (('targets', 1, 'position'), [0.0, 0.0, 0.0], ['targets[1]', 'overlaps']),
        (('targets', 0, 'handles', 0, 'link'), 'nolink', ['targets[0]', 'nolink']),
        (('targets', 0, 'colour'), 'red', ['targets[0]', 'colour']),
        (('targets', 0, 'shape', 'type'), 'cone', ['targets[0].shape.type', 'cone']),
        (('targets', 0, 'angular_velocity'), [0, 0, 1], ['targets[0].tumble']),
        (('robot', 'gripper', 'link'), 'nolink', ['robot.gripper', 'nolink']),
        (('robot', 'exclude_links'), ['nolink'], ['robot.exclude_links', 'nolink']),
        (('robot', 'urdf'), 'missing.urdf', ['robot.urdf', 'missing.urdf']),
        (('robot', 'joint_positions'), [0.0, 1.0], ['robot.joint_positions']),
        (('robot', 'base_position'), [0.0, float('inf'), 0], ['robot.base_position']),
        (('robot', 'base_orientation'), [0, 0, 0, 0], ['robot.base_orientation', 'norm 0']),
        (('robot', 'base_orientation'), [0, 0, 1], ['robot.base_orientation', '4']),
        (('contact', 'restitution'), 2.0, ['contact', 'restitution']),
        (('contact', 'law'), 'glue', ['contact.law', 'glue']),
        (('dt',), -1.0, ['dt']),
        (('robot',), _DELETE, ['scenario', 'robot']),
        (('targets', 0, 'inertia'), 'x', ['targets[0].inertia', "got 'x'"]),
        (('targets', 0, 'handles'), ['x'], ['targets[0]']),
        # names are strings: null or a list is not turned into 'None' / '[1, 2]'
        (('targets', 0, 'handles', 0, 'name'), None, ['targets[0].handles[0].name', 'None']),
        (('targets', 0, 'handles', 0, 'name'), [1, 2], ['handles[0].name', 'list of length']),
        (('targets', 0, 'handles', 0, 'link'), None, ['targets[0].handles[0].link', 'string']),
        (('targets', 0, 'name'), [1, 2], ['targets[0].name', 'list of length 2']),
        (('robot', 'gripper', 'link'), None, ['robot.gripper.link', 'string, got None']),
        (('robot', 'exclude_links'), ['ee_link', None], ['robot.exclude_links[1]', 'None']),
        # an unhashable type or law
        (('targets', 0, 'shape', 'type'), ['box'], ['targets[0].shape.type', 'list']),
        (('contact', 'law'), ['impact'], ['contact.law', 'list']),
        # a YAML boolean is not a number
        (('robot', 'joint_positions'), [True] * 7, ['robot.joint_positions', 'booleans']),
        (('robot', 'base_position'), [0, False, 0], ['robot.base_position', 'booleans']),
        (('targets', 0, 'inertia'), np.eye(3, dtype=bool).tolist(), ['targets[0].inertia']),
        # quaternions: norm 1 within 1e-3 (as the simulator's parameters), not rescaled
        (('robot', 'base_orientation'), [0, 0, 1, 1], ['robot.base_orientation', 'norm 1.41']),
        (('targets', 1, 'orientation'), [0, 0, 0, 5], ['targets[1].orientation', 'norm 5']),
        (('targets', 1, 'orientation'), [0, 0, 0, 1.0011], ['targets[1].orientation', '1.0011']),
        # dt: the simulator's physics step range [1e-6, 1] s
        (('dt',), 1e6, ['dt', '[1e-06, 1]', '1000000']),
        (('dt',), 1.5, ['dt', '1.5']),
        (('dt',), 5e-7, ['dt', '5e-07']),
        (('dt',), float('nan'), ['dt', 'nan']),
        # a law's field without a default is required by name (a TypeError traceback before)
        (('contact',), {'law': 'compliant', 'damping': 1.0}, ['contact.stiffness', 'required']),
        # an integer beyond a float (401 digits): refused by name, no OverflowError traceback
        (('targets', 0, 'mass'), 10**400, ['targets[0].mass', 'too large for a float']),
        (('dt',), 10**400, ['dt: expected a finite number', '401 digits']),
        (('targets', 1, 'position'), [10**400, 0, 0], ['targets[1].position', 'too large']),
        (('targets', 0, 'handles', 0, 'radius'), -(10**400), ['handles[0].radius', 'too large']),
        (('robot', 'joint_positions'), [10**400] + [0] * 6, ['robot.joint_positions', 'large']),
        (
            ('targets', 1, 'inertia'),
            [[10**400, 0, 0], [0, 1, 0], [0, 0, 1]],
            ['targets[1].inertia: expected a finite 3x3 matrix'],
        ),
        # frame offsets bounded as positions are (1e9 m was taken)
        (
            ('targets', 0, 'handles', 0, 'translation'),
            [1e9, 0, 0],
            ['targets[0].handles[0].translation', 'magnitude <= 1e+06 m'],
        ),
        (
            ('robot', 'gripper', 'translation'),
            [0, 0, -1.000001e6],
            ['robot.gripper.translation', 'magnitude <= 1e+06 m'],
        ),
    ],
)
def test_bad_fields_are_named(path, value, words):
    data = copy.deepcopy(SCENARIO)
    _set(data, path, value)
    with pytest.raises(ScenarioError) as info:
        scene_from_dict(data, ROOT)
    for w in words:
        assert w in str(info.value), str(info.value)


def test_base_placed_by_its_link_frame():
    """``robot.base_position`` / ``base_orientation`` place the base link frame (as the
    simulator's ``initial_base_*`` do; default: at the origin, world axes), not the base CoM."""
    data = copy.deepcopy(SCENARIO)
    scene = scene_from_dict(data, ROOT)
    robot = scene.robot_model
    pose = D.base_link_state(robot, *scene.robot_state)
    np.testing.assert_allclose(pose[0], [0, 0, 0], atol=1e-15)
    np.testing.assert_allclose(pose[1], [0, 0, 0, 1], atol=1e-15)
    # the base CoM is off the link frame: the default is not the neutral (CoM at the origin)
    assert np.linalg.norm(scene.robot_state[0][:3]) > 0.01
    half = np.sqrt(0.5)
    data['robot']['base_position'] = [1.0, -2.0, 0.5]
    data['robot']['base_orientation'] = [0.0, 0.0, 1.0009 * half, half]  # normalized on read
    pose = D.base_link_state(robot, *scene_from_dict(data, ROOT).robot_state)
    np.testing.assert_allclose(pose[0], [1.0, -2.0, 0.5], atol=1e-14)
    n = np.hypot(1.0009 * half, half)
    np.testing.assert_allclose(pose[1], [0, 0, 1.0009 * half / n, half / n], atol=1e-15)


def test_bad_yaml_file(tmp_path):
    p = tmp_path / 'bad.yaml'
    p.write_text('robot: [unclosed')
    with pytest.raises(ScenarioError, match='malformed YAML'):
        load_scenario(p)
    with pytest.raises(ScenarioError, match='nope.yaml'):
        load_scenario(tmp_path / 'nope.yaml')
    p.write_bytes(b'\xff\xfe robot')
    with pytest.raises(ScenarioError, match='expected UTF-8 text'):
        load_scenario(p)


def test_target_from_dict_alone():
    t = target_from_dict(
        {'name': 'x', 'shape': {'type': 'capsule', 'radius': 0.1, 'length': 0.4}, 'mass': 3.0}
    )
    assert t.model.total_mass == 3.0
    np.testing.assert_allclose(D.center_of_mass(t.model, t.q), 0.0, atol=1e-15)


@pytest.mark.parametrize('dt', [1e-6, 1.0])
def test_dt_range_ends_accepted(dt):
    data = copy.deepcopy(SCENARIO)
    data['dt'] = dt
    assert scene_from_dict(data, ROOT).dt == dt


def _urdf_target(tmp_path, **fields):
    urdf = tmp_path / 'arm.urdf'
    urdf.write_text(
        '<robot name="t"><link name="hub"><inertial><mass value="5"/>'
        '<inertia ixx="0.1" ixy="0" ixz="0" iyy="0.1" iyz="0" izz="0.1"/></inertial></link>'
        '<link name="tip"><inertial><mass value="1"/>'
        '<inertia ixx="0.01" ixy="0" ixz="0" iyy="0.01" iyz="0" izz="0.01"/></inertial></link>'
        '<joint name="j" type="revolute"><parent link="hub"/><child link="tip"/>'
        '<axis xyz="0 0 1"/><limit lower="-3" upper="3" effort="1" velocity="1"/></joint>'
        '</robot>'
    )
    return {'name': 'u', 'urdf': str(urdf), **fields}


@pytest.mark.parametrize(
    'key, value, words',
    [
        ('joint_positions', 'abc', ['list of numbers', "'abc'"]),
        ('joint_positions', {'a': 1}, ['list of numbers', 'dict']),
        ('joint_positions', [True], ['booleans']),
        ('joint_positions', [float('nan')], ['finite']),
        ('joint_velocities', None, ['list of numbers', 'None']),
        ('joint_velocities', [[0.1]], ['finite numbers']),
        # bounded as the robot's are (1e9 was taken)
        ('joint_positions', [1e9], ['magnitude <= 1000 rad | m', '1000000000.0']),
        ('joint_positions', [-1000.001], ['magnitude <= 1000']),
    ],
)
def test_urdf_target_joint_values_are_named(tmp_path, key, value, words):
    t = target_from_dict(_urdf_target(tmp_path, joint_positions=[0.5]), 'targets[0]')
    assert t.q[-1] == 0.5
    with pytest.raises(ScenarioError) as info:
        target_from_dict(_urdf_target(tmp_path, **{key: value}), 'targets[0]')
    for w in [f'targets[0].{key}', *words]:
        assert w in str(info.value), str(info.value)


@pytest.mark.parametrize(
    'text, words',
    [
        ('dt: 0.001\ndt: 1000\n', ['duplicated key', "'dt'"]),
        (
            'a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n'
            + ''.join(
                f'a{k}: &a{k} [' + ', '.join([f'*a{k - 1}'] * 10) + ']\n' for k in range(1, 7)
            ),
            ['expected at most'],
        ),
        ('x: ' + '[' * 150 + ']' * 150 + '\n', ['nesting levels']),
    ],
)
def test_strict_yaml_file(tmp_path, text, words):
    """Duplicated keys, alias bombs and deep nesting are refused naming the file."""
    p = tmp_path / 'hostile.yaml'
    p.write_text(text)
    with pytest.raises(ScenarioError) as info:
        load_scenario(p)
    for w in ['hostile.yaml', *words]:
        assert w in str(info.value), str(info.value)


def test_aliased_name_not_expanded():
    """A name given as a shared nested list (what a YAML alias bomb loads into) is refused by
    its type, not turned into a string of millions of characters."""
    bomb: list = ['lol'] * 10
    for _ in range(5):
        bomb = [bomb] * 10
    data = copy.deepcopy(SCENARIO)
    data['targets'][0]['handles'][0]['name'] = bomb
    with pytest.raises(ScenarioError, match=r'handles\[0\]\.name: .*list of length 10$') as info:
        scene_from_dict(data, ROOT)
    assert len(str(info.value)) < 200


def test_offsets_and_joints_at_their_bounds_are_taken(tmp_path):
    """The bounds of handle and gripper translations (1e6 m) and of a URDF target's initial
    joint positions (1e3) are inclusive."""
    data = copy.deepcopy(SCENARIO)
    data['targets'][0]['handles'][0]['translation'] = [-1e6, 0, 0]
    data['robot']['gripper']['translation'] = [0, 1e6, 0]
    data['targets'] = data['targets'][:1]
    scene = scene_from_dict(data, ROOT)
    np.testing.assert_array_equal(scene.gripper.translation, [0, 1e6, 0])
    t = target_from_dict(_urdf_target(tmp_path, joint_positions=[-1e3]), 'targets[0]')
    assert t.q[-1] == -1e3


def test_a_urdf_target_with_loop_closures_is_refused_naming_them():
    """A URDF+ target with ``<loop>`` closures (the floating platform) was taken with its loops
    dropped: its legs came apart as the scene stepped. A target is a tree: refused, naming the
    target and its loops."""
    platform = ROOT / 'urdf' / 'floating_platform.urdf'
    loops = [lp.name for lp in D.loop_closures_from_urdf(platform)]
    assert loops
    data = copy.deepcopy(SCENARIO)
    data['targets'].append({'name': 'plat', 'urdf': str(platform), 'position': [0, 10, 0]})
    with pytest.raises(ScenarioError) as info:
        scene_from_dict(data, ROOT)
    assert str(info.value) == (
        "targets[2]: target 'plat': expected a tree (a target is simulated without loop "
        f'closures), got a URDF with loop closures (URDF+ <loop> {loops})'
    )


def test_load_scenario_reads_only_a_regular_file(tmp_path):
    """``load_scenario`` reads as the nodes do (``ffsim_ros.files.read_regular_file``): a FIFO
    hung it (``read_text`` waits for a writer) and ``/dev/zero`` was read until the memory ran
    out; both are refused at once, naming what they are."""
    import signal

    fifo = tmp_path / 'scenario.yaml'
    os.mkfifo(fifo)

    def hung(*_):  # (only the old code's open() of the FIFO gets here)
        raise TimeoutError('load_scenario blocked on a FIFO')

    previous = signal.signal(signal.SIGALRM, hung)
    signal.alarm(20)
    try:
        with pytest.raises(ScenarioError) as info:
            load_scenario(fifo)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    assert str(info.value) == f'scenario file: expected a regular file, got {str(fifo)!r} (a FIFO)'
    with pytest.raises(ScenarioError, match=r"got '/dev/zero' \(a character device\)$"):
        load_scenario('/dev/zero')
    with pytest.raises(ScenarioError, match=r'\(a directory\)$'):
        load_scenario(tmp_path)
