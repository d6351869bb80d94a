"""Launch files, node configs, RViz config and sample robots fit together.

Where ``launch``/``launch_ros`` are importable (a ROS 2 install), the launch files are loaded
and their actions evaluated. Everywhere (also with the PyPI ROS wheels, which have neither),
the launch files are checked statically with ``ast``: executables, installed files, argument
descriptions; and the YAML configs are loaded into the real node classes with rclpy.
"""

from __future__ import annotations

import ast
import importlib.util
import os
import re
import runpy
import sys
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import yaml

from ffsim_ros import launch_support as ls
from ffsim_ros.resources import sample_robot

ROOT = Path(__file__).resolve().parent.parent
LAUNCH_FILES = sorted((ROOT / 'launch').glob('*.launch.py'))
SIMULATOR_YAML = ROOT / 'config' / 'simulator.yaml'
CONTROLLER_YAML = ROOT / 'config' / 'reactionless_controller.yaml'
RVIZ = ROOT / 'config' / 'rviz' / 'ffsim.rviz'
NODE_SOURCES = {
    'ffsim_simulator': ROOT / 'ffsim_ros' / 'simulator.py',
    'ffsim_reactionless_controller': ROOT / 'ffsim_ros' / 'reactionless_controller.py',
}
#: Executables of other packages the launch files may start.
EXTERNAL_EXECUTABLES = {
    'robot_state_publisher': {'robot_state_publisher'},
    'rviz2': {'rviz2'},
}
#: Arguments of ffsim.launch.py (the documented interface).
FFSIM_ARGUMENTS = {
    'robot',
    'controller_mode',
    'ee_link',
    'rviz',
    'use_sim_time',
    'namespace',
    'initial_base_position',
    'params_file',
    'localhost_only',
    'record',
    'bag_path',
    'scenario',
    'capture',
}
SAMPLES = sorted(p.stem for p in (ROOT / 'urdf').glob('*.urdf'))
#: The samples the controller runs (trees with an end effector; floating_platform closes
#: loops and runs without it).
ARMS = [s for s in SAMPLES if s != 'floating_platform']


# --------------------------------------------------------------------------------- helpers
@pytest.fixture(scope='module')
def setup_kwargs() -> dict[str, Any]:
    """The keyword arguments setup.py passes to setuptools.setup (globs evaluated in ROOT)."""
    import setuptools

    captured: dict[str, Any] = {}
    original_setup = setuptools.setup
    cwd = Path.cwd()
    setuptools.setup = lambda **kwargs: captured.update(kwargs)
    try:
        os.chdir(ROOT)
        runpy.run_path(str(ROOT / 'setup.py'), run_name='__main__')
    finally:
        setuptools.setup = original_setup
        os.chdir(cwd)
    assert captured, 'setup.py did not call setuptools.setup'
    return captured


def installed_files(setup_kwargs: dict[str, Any]) -> dict[str, str]:
    """Repository path (relative) -> install directory, from setup.py's data_files."""
    out = {}
    for target, sources in setup_kwargs['data_files']:
        for source in sources:
            out[str(Path(source))] = target
    return out


def console_scripts(setup_kwargs: dict[str, Any]) -> set[str]:
    """The executables setup.py installs: its console scripts and its plain scripts (the
    nodes', ffsim_ros.console)."""
    scripts = setup_kwargs['entry_points']['console_scripts']
    plain = {Path(path).name for path in setup_kwargs.get('scripts', [])}
    return {entry.split('=')[0].strip() for entry in scripts} | plain


def module_constants(tree: ast.Module) -> dict[str, Any]:
    """Module-level ``NAME = <literal>`` assignments, and the constants imported from the
    package (``from ffsim_ros.control import CONTROL_MODES``: their values)."""
    out = {}
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and (node.module or '').startswith('ffsim_ros'):
            module = importlib.import_module(node.module)
            for alias in node.names:
                value = getattr(module, alias.name)
                if alias.name.isupper() and isinstance(value, tuple | list | str):
                    out[alias.asname or alias.name] = value
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
            if isinstance(target, ast.Name):
                try:
                    out[target.id] = ast.literal_eval(node.value)
                except ValueError:
                    pass
    return out


def value_of(node: ast.AST, constants: dict[str, Any]) -> Any:
    """Literal value of an expression, resolving module constants; ``...`` if not static."""
    if isinstance(node, ast.Name):
        return constants.get(node.id, ...)
    if (  # list(CONSTANT) / tuple(CONSTANT)
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in ('list', 'tuple')
        and len(node.args) == 1
        and not node.keywords
    ):
        inner = value_of(node.args[0], constants)
        return ... if inner is ... else {'list': list, 'tuple': tuple}[node.func.id](inner)
    try:
        return ast.literal_eval(node)
    except ValueError:
        return ...


def calls(tree: ast.AST, name: str) -> Iterator[ast.Call]:
    """Calls of ``name(...)`` or ``<something>.name(...)``."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            called = func.id if isinstance(func, ast.Name) else getattr(func, 'attr', None)
            if called == name:
                yield node


def keywords(call: ast.Call, constants: dict[str, Any]) -> dict[str, Any]:
    return {k.arg: value_of(k.value, constants) for k in call.keywords if k.arg}


def parse(path: Path) -> tuple[ast.Module, dict[str, Any]]:
    tree = ast.parse(path.read_text(), filename=str(path))
    return tree, module_constants(tree)


def declared_arguments(path: Path) -> dict[str, dict[str, Any]]:
    """``DeclareLaunchArgument`` calls of a launch file: name -> keyword values."""
    tree, constants = parse(path)
    out = {}
    for call in calls(tree, 'DeclareLaunchArgument'):
        name = value_of(call.args[0], constants) if call.args else None
        assert isinstance(name, str), f'{path.name}: argument name is not a literal'
        assert name not in out, f'{path.name}: argument {name} declared twice'
        out[name] = keywords(call, constants)
    return out


def flatten(params: dict[str, Any], prefix: str = '') -> dict[str, Any]:
    """Nested ``ros__parameters`` -> dotted parameter names."""
    out = {}
    for key, value in params.items():
        name = f'{prefix}{key}'
        if isinstance(value, dict):
            out.update(flatten(value, f'{name}.'))
        else:
            out[name] = value
    return out


def node_sections(path: Path) -> dict[str, dict[str, Any]]:
    """Top-level key -> flattened ros__parameters of a node parameter YAML file."""
    data = yaml.safe_load(path.read_text())
    assert isinstance(data, dict) and data, f'{path.name}: expected a mapping of node names'
    out = {}
    for key, section in data.items():
        assert set(section) == {'ros__parameters'}, f'{path.name}: {key}: only ros__parameters'
        out[key] = flatten(section['ros__parameters'])
    return out


def topics_of(source: Path, method: str) -> set[str]:
    """Literal topic names of ``create_publisher``/``create_subscription`` calls."""
    tree, constants = parse(source)
    out = set()
    for call in calls(tree, method):
        topic = value_of(call.args[1], constants)
        if isinstance(topic, str):
            out.add(topic)
    return out


def rviz_topics(config: dict) -> dict[str, str]:
    """Display name -> topic of every display that subscribes to something."""
    out = {}
    for display in config['Visualization Manager']['Displays']:
        for key in ('Topic', 'Description Topic'):
            entry = display.get(key)
            if isinstance(entry, dict) and 'Value' in entry:
                out[display['Name']] = entry['Value']
    return out


# ------------------------------------------------------------------- launch files (static)
def test_launch_files_exist() -> None:
    names = {p.name for p in LAUNCH_FILES}
    assert {'ffsim.launch.py', 'multi_robot.launch.py'} <= names


@pytest.mark.parametrize('path', LAUNCH_FILES, ids=lambda p: p.name)
def test_launch_file_executables_exist(path: Path, setup_kwargs: dict[str, Any]) -> None:
    tree, constants = parse(path)
    scripts = console_scripts(setup_kwargs)
    started = set()
    for call in calls(tree, 'Node'):
        kw = keywords(call, constants)
        package, executable = kw.get('package'), kw.get('executable')
        assert isinstance(package, str) and isinstance(executable, str), (
            f'{path.name}:{call.lineno}: package/executable must be literals'
        )
        if package == setup_kwargs['name']:
            assert executable in scripts, f'{executable} is not a console script of setup.py'
        else:
            assert executable in EXTERNAL_EXECUTABLES.get(package, set()), (package, executable)
        assert isinstance(kw.get('name'), str), f'{path.name}:{call.lineno}: give the node a name'
        started.add((package, executable))
    assert started, f'{path.name} starts no node'
    if path.name == 'ffsim.launch.py':
        assert started == {
            ('ffsim_ros', 'simulator'),
            ('ffsim_ros', 'reactionless_controller'),
            ('robot_state_publisher', 'robot_state_publisher'),
            ('rviz2', 'rviz2'),
        }
    for call in calls(tree, 'ExecuteProcess'):  # the bag recorder: ros2 bag record, via ls
        assert ast.unparse(call).find('bag_command') >= 0


@pytest.mark.parametrize('path', LAUNCH_FILES, ids=lambda p: p.name)
def test_launch_file_names_only_installed_files(path: Path, setup_kwargs: dict[str, Any]) -> None:
    installed = installed_files(setup_kwargs)
    tree, constants = parse(path)
    named = []
    for call in calls(tree, 'share_path'):
        parts = [value_of(a, constants) for a in call.args]
        assert all(isinstance(p, str) for p in parts), ast.unparse(call)
        named.append(str(Path(*parts)))
    for node in ast.walk(tree):  # e.g. 'ffsim.launch.py' next to this file
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            if node.value.endswith(('.yaml', '.rviz', '.urdf', '.launch.py')):
                matches = [f for f in installed if Path(f).name == node.value]
                assert matches, f'{path.name} names {node.value!r}, which is not installed'
                named.extend(matches)
    assert named, f'{path.name} names no package file'
    for rel in named:
        assert (ROOT / rel).is_file(), f'{path.name} names {rel}, which does not exist'
        assert rel in installed, f'{rel} is not matched by the data_files globs of setup.py'
        assert installed[rel] == f'share/ffsim_ros/{Path(rel).parent}'
    # the launch files themselves are installed too
    assert str(path.relative_to(ROOT)) in installed


@pytest.mark.parametrize('path', LAUNCH_FILES, ids=lambda p: p.name)
def test_every_launch_argument_has_a_description(path: Path) -> None:
    arguments = declared_arguments(path)
    assert arguments, f'{path.name} declares no arguments'
    for name, kw in arguments.items():
        text = kw.get('description')
        assert isinstance(text, str) and len(text.strip()) > 10, f'{path.name}: {name}'
        choices = kw.get('choices')
        if choices is not None:
            assert kw.get('default_value') in choices, f'{path.name}: {name} default not a choice'


def test_ffsim_launch_arguments() -> None:
    from ffsim_ros.control import CONTROL_MODES, ControlMode

    arguments = declared_arguments(ROOT / 'launch' / 'ffsim.launch.py')
    assert set(arguments) == FFSIM_ARGUMENTS
    assert arguments['controller_mode']['choices'] == [m.value for m in ControlMode]
    # the one list of modes: both launch files take their choices from CONTROL_MODES
    for path in LAUNCH_FILES:
        (call,) = [
            c
            for c in calls(parse(path)[0], 'DeclareLaunchArgument')
            if ast.literal_eval(c.args[0]) == 'controller_mode'
        ]
        (choices,) = [k.value for k in call.keywords if k.arg == 'choices']
        assert ast.unparse(choices) == 'list(CONTROL_MODES)', path.name
        assert value_of(choices, parse(path)[1]) == list(CONTROL_MODES)
    assert arguments['use_sim_time']['default_value'] == 'true'  # the simulator owns /clock
    for flag in ('rviz', 'use_sim_time', 'record'):
        assert arguments[flag]['choices'] == ['true', 'false']
    assert arguments['robot']['default_value'] in SAMPLES
    assert arguments['namespace']['default_value'] == ''
    # DDS discovery: the environment's own setting unless asked, in both launch files
    for path in LAUNCH_FILES:
        localhost = declared_arguments(path)['localhost_only']
        assert localhost['default_value'] == '' and localhost['choices'] == ['', 'true', 'false']


def test_multi_robot_passes_only_arguments_ffsim_launch_declares() -> None:
    path = ROOT / 'launch' / 'multi_robot.launch.py'
    tree, constants = parse(path)
    forwarded = set(constants['FORWARDED'])
    own = set(declared_arguments(path))
    assert forwarded <= FFSIM_ARGUMENTS and forwarded <= own
    set_here = set()
    for call in calls(tree, 'update'):
        set_here |= {k.arg for k in call.keywords}
    assert set_here == {'namespace', 'initial_base_position', 'rviz', 'record'}
    assert set_here <= FFSIM_ARGUMENTS
    robots = constants['ROBOTS']
    assert len(robots) == 2 and len(set(robots)) == 2
    for ns in robots:
        assert f'{ns}_position' in own
        assert ls.clean_namespace(ns) == ns
    positions = [
        ls.parse_vector(declared_arguments(path)[f'{ns}_position']['default_value'], 3, ns)
        for ns in robots
    ]
    assert positions[0] != positions[1], 'the robots must not start on top of each other'


# ------------------------------------------------------------------------- node configs
@pytest.mark.parametrize(
    ('path', 'node_name'),
    [(SIMULATOR_YAML, 'ffsim_simulator'), (CONTROLLER_YAML, 'ffsim_reactionless_controller')],
    ids=['simulator', 'controller'],
)
def test_config_keys_are_launched_nodes(path: Path, node_name: str) -> None:
    launched = set()
    for launch_file in LAUNCH_FILES:
        tree, constants = parse(launch_file)
        launched |= {keywords(c, constants).get('name') for c in calls(tree, 'Node')}
    sections = node_sections(path)
    assert list(sections) == [f'/**/{node_name}'], 'match the node in any namespace'
    for key in sections:
        assert key == '/**' or key.rsplit('/', 1)[-1] in launched, key
    assert node_name in launched


def _declared_parameter_names(node_name: str) -> set[str]:
    """Parameters the node declares: the names of its parameter table."""
    from ffsim_ros import reactionless_controller, simulator

    table = {
        'ffsim_simulator': simulator.PARAMETERS,
        'ffsim_reactionless_controller': reactionless_controller.PARAMETERS,
    }[node_name]
    assert table.node_name == node_name
    return set(table.names)


@pytest.mark.ros  # the tables live in the node modules
@pytest.mark.parametrize(
    ('path', 'node_name'),
    [(SIMULATOR_YAML, 'ffsim_simulator'), (CONTROLLER_YAML, 'ffsim_reactionless_controller')],
    ids=['simulator', 'controller'],
)
def test_config_parameters_are_declared_by_the_node(path: Path, node_name: str) -> None:
    declared = _declared_parameter_names(node_name)
    assert 'robot_description' in declared and 'world_frame' in declared
    for params in node_sections(path).values():
        assert params, f'{path.name}: no parameters'
        unknown = set(params) - declared
        assert not unknown, f'{path.name}: {node_name} does not declare {sorted(unknown)}'


def test_world_frame_agrees_everywhere() -> None:
    sim = next(iter(node_sections(SIMULATOR_YAML).values()))
    ctl = next(iter(node_sections(CONTROLLER_YAML).values()))
    rviz = yaml.safe_load(RVIZ.read_text())
    assert sim['world_frame'] == ctl['world_frame'] == 'world'
    assert rviz['Visualization Manager']['Global Options']['Fixed Frame'] == 'world'


def _values_equal(actual: Any, expected: Any) -> bool:
    if isinstance(expected, list):
        return list(actual) == expected
    return type(actual) is type(expected) and actual == expected


@pytest.mark.ros
def test_simulator_accepts_its_config_under_a_namespace(rclpy_context, tmp_path: Path) -> None:
    """The real node, started as the launch file starts it (params file, overrides, remap)."""
    from rclpy.parameter import Parameter

    from ffsim_ros.simulator import Simulator

    params = next(iter(node_sections(SIMULATOR_YAML).values()))
    urdf = sample_robot('planar_2link').read_text()
    # the dict the launch file adds, as a second params file (what launch_ros does with dicts)
    launch_overrides = tmp_path / 'launch_params.yaml'
    launch_overrides.write_text(
        yaml.safe_dump(
            {
                '/**': {
                    'ros__parameters': {
                        'frame_prefix': ls.frame_prefix('robot1'),
                        'initial_base_position': ls.parse_vector('[0, 5, 0]', 3, 'p'),
                        'use_sim_time': True,
                    }
                }
            }
        )
    )
    node = Simulator(
        context=rclpy_context,
        namespace='/robot1',
        cli_args=[
            '--ros-args',
            '--params-file',
            str(SIMULATOR_YAML),
            '--params-file',
            str(launch_overrides),
            '-r',
            '/clock:=clock',
        ],
        parameter_overrides=[Parameter('robot_description', value=urdf)],
    )
    try:
        for name, value in params.items():
            if name == 'initial_base_position':
                continue
            actual = node.get_parameter(name).value
            assert _values_equal(actual, value), (name, actual, value)
        assert list(node.get_parameter('initial_base_position').value) == [0.0, 5.0, 0.0]
        assert node.model.n == 2  # the URDF given as robot_description
        assert node.base_frame == 'robot1/base_link'
        assert not node.running  # the physics thread starts with start(), not here
        _, _, transform, odom, _, _ = node.messages(node.engine.snapshot())
        assert odom.child_frame_id == transform.child_frame_id == 'robot1/base_link'
        assert odom.header.frame_id == transform.header.frame_id == 'world'
        assert list(node.engine.snapshot().base_position) == [0.0, 5.0, 0.0]
        assert node.get_fully_qualified_name() == '/robot1/ffsim_simulator'
        assert node.pub_markers.topic_name == '/robot1/markers'
        assert node.pub_clock.topic_name == '/robot1/clock'  # each robot its own sim time
        assert node.get_parameter('use_sim_time').value is True
    finally:
        node.destroy_node()


@pytest.mark.ros
@pytest.mark.parametrize('robot', ARMS)
def test_controller_accepts_its_config_for_every_sample(rclpy_context, robot: str) -> None:
    from rclpy.parameter import Parameter

    from ffsim_ros.reactionless_controller import ReactionlessControllerNode

    params = next(iter(node_sections(CONTROLLER_YAML).values()))
    urdf = sample_robot(robot).read_text()
    ee_link = ls.default_ee_link(urdf)  # what ffsim.launch.py passes when ee_link:=''
    node = ReactionlessControllerNode(
        context=rclpy_context,
        namespace='/robot2',
        cli_args=['--ros-args', '--params-file', str(CONTROLLER_YAML)],
        parameter_overrides=[
            Parameter('robot_description', value=urdf),
            Parameter('ee_link', value=ee_link),
            Parameter('mode', value='gjm_tracking'),
        ],
    )
    try:
        for name, value in params.items():
            if name == 'ee_link':
                continue
            actual = node.get_parameter(name).value
            assert _values_equal(actual, value), (name, actual, value)
        assert node.get_parameter('ee_link').value == ee_link
        assert node.law.mode.value == 'gjm_tracking'
        assert node.pub_path.topic_name == '/robot2/ee_path'
    finally:
        node.destroy_node()


@pytest.mark.ros
def test_ee_path_is_bounded_and_throttled(rclpy_context, monkeypatch) -> None:
    from geometry_msgs.msg import PoseStamped

    from ffsim_ros import reactionless_controller as rc

    node = rc.ReactionlessControllerNode(context=rclpy_context)
    try:
        published = []
        monkeypatch.setattr(node.pub_path, 'publish', published.append)

        def pose(x: float) -> PoseStamped:
            msg = PoseStamped()
            msg.header.frame_id = 'world'
            msg.pose.position.x = x
            return msg

        node._append_path(pose(0.0))
        node._append_path(pose(1.0))  # within EE_PATH_PERIOD of the first: dropped
        assert len(published) == 1 and len(published[0].poses) == 1
        monkeypatch.setattr(rc, 'EE_PATH_PERIOD', 0.0)
        for k in range(rc.EE_PATH_LENGTH + 20):
            node._append_path(pose(float(k)))
        last = published[-1]
        assert last.header.frame_id == 'world'
        assert len(last.poses) == rc.EE_PATH_LENGTH
        assert last.poses[-1].pose.position.x == rc.EE_PATH_LENGTH + 19
        assert last.poses[0].pose.position.x == 20.0  # the oldest dropped out
    finally:
        node.destroy_node()


# ---------------------------------------------------------------------------------- RViz
def test_rviz_config_shows_the_nodes_topics() -> None:
    config = yaml.safe_load(RVIZ.read_text())
    manager = config['Visualization Manager']
    assert manager['Global Options']['Fixed Frame'] == 'world'
    classes = {d['Class'] for d in manager['Displays']}
    for needed in ('RobotModel', 'TF', 'MarkerArray', 'Pose', 'Path'):
        assert f'rviz_default_plugins/{needed}' in classes
    published = set().union(*(topics_of(p, 'create_publisher') for p in NODE_SOURCES.values()))
    # the simulator's target topics (issue 17) are created by its helper module
    published |= topics_of(
        ROOT / 'ffsim_ros' / 'node_support' / 'scene_services.py', 'create_publisher'
    )
    subscribed = topics_of(NODE_SOURCES['ffsim_reactionless_controller'], 'create_subscription')
    topics = rviz_topics(config)
    assert set(topics.values()) >= {'robot_description', 'markers', 'ee_goal', 'ee_path'}
    for name, topic in topics.items():
        assert not topic.startswith('/'), f'{name}: relative topic, so namespaces move it'
        if topic == 'ee_goal':  # the goal the controller takes (published by the user)
            assert topic in subscribed
        else:
            assert topic in published, f'display {name}: no node publishes {topic!r}'
    robot_model = next(
        d for d in manager['Displays'] if d['Class'] == 'rviz_default_plugins/RobotModel'
    )
    assert robot_model['Description Source'] == 'Topic'
    assert robot_model['Description Topic']['Durability Policy'] == 'Transient Local'


def test_rviz_config_for_namespaced_robots(tmp_path: Path) -> None:
    assert ls.write_rviz_config([''], RVIZ) == RVIZ  # no namespace: the file as is
    path = ls.write_rviz_config(['robot1', '/robot2/'], RVIZ, tmp_path)
    assert path.parent == tmp_path and path.suffix == '.rviz'
    config = yaml.safe_load(path.read_text())
    template = yaml.safe_load(RVIZ.read_text())
    topics = rviz_topics(config)
    for ns in ('robot1', 'robot2'):
        for topic in rviz_topics(template).values():
            assert f'/{ns}/{topic}' in topics.values()
    models = [
        d
        for d in config['Visualization Manager']['Displays']
        if d['Class'] == 'rviz_default_plugins/RobotModel'
    ]
    # RViz resolves link frames as '<TF Prefix>/<link>' = robot_state_publisher's frame_prefix
    assert sorted(m['TF Prefix'] for m in models) == ['robot1', 'robot2']
    for m in models:
        assert f'{m["TF Prefix"]}/base_link' == ls.frame_prefix(m['TF Prefix']) + 'base_link'
    shared = [d['Class'] for d in config['Visualization Manager']['Displays']]
    assert shared.count('rviz_default_plugins/TF') == 1  # one TF display for all robots
    assert config['Visualization Manager']['Global Options']['Fixed Frame'] == 'world'


# --------------------------------------------------------------------- robots and helpers
@pytest.mark.parametrize('robot', ARMS)
def test_sample_robots_load_and_have_an_end_effector(robot: str) -> None:
    from ffsim_ros.dynamics import load_urdf

    path = ls.resolve_robot(robot)
    assert path == sample_robot(robot)
    model = load_urdf(path)
    assert model.floating_base and model.n > 0
    ee_link = ls.default_ee_link(path.read_text())
    assert ee_link in model.link_names
    assert set(ls.link_names(path.read_text())) >= set(model.link_names)


def test_sample_robot_set() -> None:
    assert SAMPLES == [
        'dual_arm_servicer',
        'ffsim_servicer_7dof',
        'floating_platform',
        'planar_2link',
    ]
    assert [s for s in SAMPLES if ls.has_loops(sample_robot(s).read_text())] == [
        'floating_platform'
    ]
    assert ls.default_ee_link(sample_robot('dual_arm_servicer').read_text()) == 'left_ee_link'


def test_resolve_robot_paths_and_errors(tmp_path: Path) -> None:
    copy = tmp_path / 'my robot.urdf'
    copy.write_text(sample_robot('planar_2link').read_text())
    assert ls.resolve_robot(str(copy)) == copy.resolve()
    xacro = tmp_path / 'arm.urdf.xacro'
    xacro.write_text('<robot/>')
    assert ls.is_xacro(ls.resolve_robot(str(xacro)))
    assert not ls.is_xacro(copy)
    with pytest.raises(
        FileNotFoundError,
        match=r"^robot: unknown sample robot 'no_such_robot'; expected one of \[.*'planar_2link'"
        r'.*\] \(or a path to a \.urdf or \.xacro file\)$',
    ):
        ls.resolve_robot('no_such_robot')  # names the argument, lists the samples
    with pytest.raises(FileNotFoundError, match='no such file'):
        ls.resolve_robot(str(tmp_path / 'missing.urdf'))
    with pytest.raises(FileNotFoundError) as info:  # (it said "no such file" of a directory)
        ls.resolve_robot(str(tmp_path))
    assert str(info.value) == (
        f"robot: expected a sample robot name or a .urdf or .xacro file, got '{tmp_path}' "
        '(a directory)'
    )
    with pytest.raises(FileNotFoundError):
        ls.resolve_robot('  ')
    with pytest.raises(ValueError, match='ee_link'):
        ls.default_ee_link('<robot name="r"><link name="base_link"/></robot>')


def test_argument_parsers() -> None:
    assert ls.frame_prefix('') == '' and ls.frame_prefix('/robot1/') == 'robot1/'
    assert ls.frame_prefix('fleet/robot1') == 'fleet/robot1/'
    with pytest.raises(ValueError, match='namespace'):
        ls.clean_namespace('robot-1')
    with pytest.raises(ValueError, match='namespace'):
        ls.clean_namespace('1robot')
    assert ls.parse_vector('[0, -5.5, 1e-1]', 3, 'p') == [0.0, -5.5, 0.1]
    assert ls.parse_vector('1 2 3', 3, 'p') == [1.0, 2.0, 3.0]
    for bad in ('[1, 2]', '[a, b, c]', '', '[nan, 0, 0]', '[0, -inf, 0]', '[1e400, 0, 0]'):
        with pytest.raises(ValueError, match='^initial_base_position: expected 3 finite numbers'):
            ls.parse_vector(bad, 3, 'initial_base_position')
    assert ls.parse_vector('[-1e6, 0, 1e6]', 3, 'p', bound=1e6) == [-1e6, 0.0, 1e6]
    with pytest.raises(ValueError, match=r'^p: expected 3 finite numbers of magnitude <= 1e\+06'):
        ls.parse_vector('[0, 1e7, 0]', 3, 'p', bound=1e6)
    assert ls.as_bool('True', 'rviz') is True and ls.as_bool('false', 'rviz') is False
    with pytest.raises(ValueError, match='rviz'):
        ls.as_bool('maybe', 'rviz')
    cmd = ls.bag_command('/tmp/run1')
    assert cmd == ['ros2', 'bag', 'record', '-a', '-s', 'mcap', '-o', '/tmp/run1']
    assert ls.bag_command('')[-1].startswith('ffsim_')


def test_package_xml_declares_what_the_launch_files_start() -> None:
    text = (ROOT / 'package.xml').read_text()
    for dep in (
        'launch',
        'launch_ros',
        'robot_state_publisher',
        'rviz2',
        'xacro',
        'ros2bag',
        'rosbag2_storage_mcap',
        'python3-yaml',
    ):
        assert f'<exec_depend>{dep}</exec_depend>' in text, dep


# ------------------------------------------------- launch files, loaded (ROS 2 install only)
def _load_launch_module(path: Path):
    spec = importlib.util.spec_from_file_location(path.stem.replace('.', '_'), path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _evaluate(description, overrides: dict[str, str]):
    """Declare the arguments (defaults + ``overrides``) and run the OpaqueFunctions."""
    from launch import LaunchContext
    from launch.actions import DeclareLaunchArgument, OpaqueFunction

    context = LaunchContext()
    context.launch_configurations.update(overrides)
    actions = []
    for entity in description.entities:
        if isinstance(entity, DeclareLaunchArgument):
            entity.execute(context)  # sets the default, checks the choices
    for entity in description.entities:
        if isinstance(entity, OpaqueFunction):
            actions.extend(entity.execute(context) or [])
    return context, actions


@pytest.mark.parametrize('installed', ['as found', 'all', 'none'])
def test_launch_descriptions_load_and_evaluate(installed: str, monkeypatch) -> None:
    """The real launch API evaluates the launch files. robot_state_publisher, rviz2 and the
    bag recorder are started where their packages are installed and left out (with a warning)
    where not: the nodes expected follow ``ls.missing_packages``/``ls.recorder_warning`` as
    found on this install ('as found': a ros-base install has no rviz2), and with every or no
    package installed."""
    pytest.importorskip('launch_ros', reason='launch_ros is not installed (PyPI ROS wheels)')
    from launch.actions import DeclareLaunchArgument, ExecuteProcess
    from launch.utilities import normalize_to_list_of_substitutions, perform_substitutions
    from launch_ros.actions import Node

    if installed != 'as found':
        everything = installed == 'all'
        monkeypatch.setattr(
            ls, 'missing_packages', lambda packages: [] if everything else list(packages)
        )
    warnings = []  # the messages of the LaunchWarnings the launch file makes

    class Warning_(ls.LaunchWarning):
        def __init__(self, message: str) -> None:
            super().__init__(message)
            warnings.append(message)

    monkeypatch.setattr(ls, 'LaunchWarning', Warning_)
    for path in LAUNCH_FILES:
        description = _load_launch_module(path).generate_launch_description()
        arguments = [e for e in description.entities if isinstance(e, DeclareLaunchArgument)]
        assert arguments and all(a.description.strip() for a in arguments), path.name
        assert {a.name for a in arguments} == set(declared_arguments(path))

    module = _load_launch_module(ROOT / 'launch' / 'ffsim.launch.py')
    context, actions = _evaluate(
        module.generate_launch_description(),
        {'namespace': 'robot1', 'robot': 'dual_arm_servicer', 'record': 'true'},
    )

    def text(value) -> str:
        return perform_substitutions(context, normalize_to_list_of_substitutions(value))

    others = ['robot_state_publisher', 'rviz2']
    missing = ls.missing_packages(others)
    if installed != 'as found':
        assert missing == ([] if installed == 'all' else others)
    nodes = {text(a.node_executable): a for a in actions if isinstance(a, Node)}
    expected = {'simulator', 'reactionless_controller'} | {p for p in others if p not in missing}
    assert set(nodes) == expected
    recorders = [a for a in actions if isinstance(a, ExecuteProcess) and not isinstance(a, Node)]
    assert len(recorders) == (0 if ls.recorder_warning() else 1)
    assert any('record:=true ignored' in w for w in warnings) == bool(ls.recorder_warning())
    assert any(f'{missing} not installed' in w for w in warnings) == bool(missing)


# ---------------------------------------- launch files, run against a stub of the launch API
class _Recorded:
    """Stand-in for a launch/launch_ros class: keeps its constructor arguments."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.args, self.kwargs = args, kwargs


class _LaunchConfiguration(_Recorded):
    def perform(self, context) -> str:
        return context.launch_configurations[self.args[0]]


class _LaunchContext:
    def __init__(self) -> None:
        self.launch_configurations: dict[str, str] = {}


def _stub_modules() -> dict[str, Any]:
    """``launch``/``launch_ros`` modules whose classes just record how they are called."""
    import types

    def module(name: str, **attrs: Any) -> types.ModuleType:
        mod = types.ModuleType(name)
        mod.__dict__.update(attrs)
        return mod

    def recorded(name: str) -> type:
        return type(name, (_Recorded,), {})

    actions = {
        n: recorded(n)
        for n in (
            'DeclareLaunchArgument',
            'ExecuteProcess',
            'LogInfo',
            'OpaqueFunction',
            'GroupAction',
            'IncludeLaunchDescription',
            'RegisterEventHandler',
            'SetEnvironmentVariable',
            'Shutdown',
            'UnsetEnvironmentVariable',
        )
    }
    return {
        'launch': module(
            'launch', LaunchContext=_LaunchContext, LaunchDescription=recorded('LaunchDescription')
        ),
        'launch.actions': module('launch.actions', **actions),
        'launch.event_handlers': module(
            'launch.event_handlers', OnShutdown=recorded('OnShutdown')
        ),
        'launch.substitutions': module(
            'launch.substitutions',
            Command=recorded('Command'),
            LaunchConfiguration=_LaunchConfiguration,
        ),
        'launch.launch_description_sources': module(
            'launch.launch_description_sources',
            PythonLaunchDescriptionSource=recorded('PythonLaunchDescriptionSource'),
        ),
        'launch_ros': module('launch_ros'),
        'launch_ros.actions': module('launch_ros.actions', Node=recorded('Node')),
        'launch_ros.parameter_descriptions': module(
            'launch_ros.parameter_descriptions', ParameterValue=recorded('ParameterValue')
        ),
    }


@pytest.fixture
def stub_launch(monkeypatch) -> None:
    """Install the stub launch API, in place of the real one where it is installed (these tests
    look at how the launch files call it, which the stub records)."""
    for name, mod in _stub_modules().items():
        monkeypatch.setitem(sys.modules, name, mod)
    # as on a ROS install: robot_state_publisher and rviz2 there (see the test without them)
    monkeypatch.setattr(ls, 'missing_packages', lambda packages: [])


def _run(module, function: str, *, pushed: str | None = None, **arguments: str) -> list:
    """Run the OpaqueFunction ``function`` of the launch ``module`` with its ``arguments``
    (the others at their defaults); ``pushed``: the ``ros_namespace`` a parent's
    ``PushRosNamespace`` sets (absolute, as launch_ros stores it)."""
    description = module.generate_launch_description()
    context = _LaunchContext()
    if pushed is not None:
        context.launch_configurations['ros_namespace'] = pushed
    for entity in description.args[0]:
        if type(entity).__name__ == 'DeclareLaunchArgument':
            name, kw = entity.args[0], entity.kwargs
            value = arguments.pop(name, kw['default_value'])
            assert value in kw.get('choices', [value]), (name, value)
            context.launch_configurations[name] = value
    assert not arguments, f'not declared: {arguments}'
    functions = [
        e.kwargs['function']
        for e in description.args[0]
        if type(e).__name__ == 'OpaqueFunction' and e.kwargs['function'].__name__ == function
    ]
    assert len(functions) == 1, function
    return functions[0](context)


def _nodes(actions: list) -> dict[str, _Recorded]:
    return {a.kwargs['executable']: a for a in actions if type(a).__name__ == 'Node'}


def _parameters(node: _Recorded) -> dict[str, Any]:
    """The node's parameter dict (the last entry, after the YAML files)."""
    return node.kwargs['parameters'][-1]


def test_ffsim_launch_actions(stub_launch, tmp_path: Path) -> None:
    module = _load_launch_module(ROOT / 'launch' / 'ffsim.launch.py')

    # defaults: one robot, no namespace, RViz, no recorder
    nodes = _nodes(_run(module, 'robot_actions'))
    assert set(nodes) == {'simulator', 'reactionless_controller', 'robot_state_publisher', 'rviz2'}
    sim, ctl = nodes['simulator'], nodes['reactionless_controller']
    assert sim.kwargs['parameters'][0] == str(SIMULATOR_YAML)
    assert ctl.kwargs['parameters'][0] == str(CONTROLLER_YAML)
    assert sim.kwargs['name'] == 'ffsim_simulator'
    assert ctl.kwargs['name'] == 'ffsim_reactionless_controller'
    urdf = sample_robot('ffsim_servicer_7dof').read_text()
    for node in nodes.values():
        assert node.kwargs['namespace'] is None
        assert node.kwargs['remappings'] == [('/clock', 'clock')]
        assert _parameters(node)['use_sim_time'] is True
    for name in ('simulator', 'reactionless_controller', 'robot_state_publisher'):
        description = _parameters(nodes[name])['robot_description']
        assert description.args == (urdf,) and description.kwargs == {'value_type': str}
    assert _parameters(sim)['frame_prefix'] == ''
    assert _parameters(nodes['robot_state_publisher'])['frame_prefix'] == ''
    assert 'initial_base_position' not in _parameters(sim)  # the YAML's value
    assert 'scenario' not in _parameters(sim)  # no target
    assert 'capture.scenario' not in _parameters(ctl)
    captured = _nodes(_run(module, 'robot_actions', scenario='capture'))
    # a shipped name: resolved by each node; the controller captures the same scenario's target
    assert _parameters(captured['simulator'])['scenario'] == 'capture'
    assert _parameters(captured['reactionless_controller'])['capture.scenario'] == 'capture'
    own = tmp_path / 'mine.yaml'
    own.write_text('targets: []\n')
    captured = _nodes(_run(module, 'robot_actions', scenario=str(own), capture='false'))
    assert _parameters(captured['simulator'])['scenario'] == str(own.resolve())
    assert 'capture.scenario' not in _parameters(captured['reactionless_controller'])
    assert _parameters(ctl)['mode'] == 'reactionless' and _parameters(ctl)['ee_link'] == 'ee_link'
    assert nodes['rviz2'].kwargs['arguments'] == ['-d', str(RVIZ)]
    assert not _of_type(_run(module, 'robot_actions'), 'RegisterEventHandler')  # no temp file

    # a namespaced dual-arm robot, recorded, with an extra params file
    extra = tmp_path / 'extra.yaml'
    extra.write_text('{}')
    actions = _run(
        module,
        'robot_actions',
        robot='dual_arm_servicer',
        namespace='robot1',
        controller_mode='joint_pd',
        initial_base_position='[1, 2, 3]',
        use_sim_time='false',
        record='true',
        bag_path=str(tmp_path / 'bag'),
        params_file=str(extra),
    )
    nodes = _nodes(actions)
    for node in nodes.values():
        assert node.kwargs['namespace'] == 'robot1'  # (relative: under a parent's push too)
        assert _parameters(node)['use_sim_time'] is False
    sim, ctl = nodes['simulator'], nodes['reactionless_controller']
    # with a params_file: one temporary file per node, the package's values and the user's
    merged = [Path(node.kwargs['parameters'][0]) for node in (sim, ctl)]
    assert [len(node.kwargs['parameters']) for node in (sim, ctl)] == [2, 2]
    assert node_sections(merged[0]) == node_sections(SIMULATOR_YAML)  # (extra: {})
    assert node_sections(merged[1]) == node_sections(CONTROLLER_YAML)
    assert _parameters(sim)['frame_prefix'] == 'robot1/'
    assert _parameters(nodes['robot_state_publisher'])['frame_prefix'] == 'robot1/'
    assert _parameters(sim)['initial_base_position'] == [1.0, 2.0, 3.0]
    assert _parameters(ctl)['mode'] == 'joint_pd'
    # a params file without ee_link: the robot's default, as without one (dual-arm: left_...)
    assert _parameters(ctl)['ee_link'] == 'left_ee_link'
    rviz_file = Path(nodes['rviz2'].kwargs['arguments'][1])
    rviz_models = [
        d
        for d in yaml.safe_load(rviz_file.read_text())['Visualization Manager']['Displays']
        if d['Class'] == 'rviz_default_plugins/RobotModel'
    ]
    assert [m['TF Prefix'] for m in rviz_models] == ['robot1']
    _shut_down(actions)  # the temporary RViz config and parameter files are removed at shutdown
    assert not rviz_file.exists()
    assert not any(path.exists() for path in merged)
    recorders = [a for a in actions if type(a).__name__ == 'ExecuteProcess']
    assert [r.kwargs['cmd'] for r in recorders] == [ls.bag_command(str(tmp_path / 'bag'))]

    # dual-arm without params file: the controller gets left_ee_link
    ctl = _nodes(_run(module, 'robot_actions', robot='dual_arm_servicer', rviz='false'))
    assert _parameters(ctl['reactionless_controller'])['ee_link'] == 'left_ee_link'
    assert 'rviz2' not in ctl
    with pytest.raises(ValueError, match='initial_base_position'):
        _run(module, 'robot_actions', initial_base_position='[1, 2]')
    with pytest.raises(FileNotFoundError):
        _run(module, 'robot_actions', robot='no_such_robot')


def test_the_default_end_effector_unless_the_params_file_sets_one(stub_launch, tmp_path) -> None:
    """With a params_file that sets no ee_link for the controller, the dual-arm robot gets its
    default end effector (left_ee_link) as without one: it got none, so the package's
    ``ee_link`` (no such link) and the controller exited 2. One that sets ee_link for the
    controller (a key that applies to it) keeps it."""
    module = _load_launch_module(ROOT / 'launch' / 'ffsim.launch.py')

    def controller(text: str, **arguments: str) -> tuple[dict, dict]:
        """The launch's parameters of the controller, and those of its merged file."""
        path = tmp_path / 'user.yaml'
        path.write_text(text)
        actions = _run(
            module,
            'robot_actions',
            robot='dual_arm_servicer',
            rviz='false',
            params_file=str(path),
            **arguments,
        )
        ctl = _nodes(actions)['reactionless_controller']
        (section,) = node_sections(Path(ctl.kwargs['parameters'][0])).values()
        _shut_down(actions)
        return _parameters(ctl), section

    others = '/**/ffsim_simulator: {ros__parameters: {ee_link: right_ee_link}}\n'
    elsewhere = (
        'robot9/ffsim_reactionless_controller: {ros__parameters: {ee_link: right_ee_link}}\n'
    )
    gains = '/**/ffsim_reactionless_controller: {ros__parameters: {control_rate_hz: 50.0}}\n'
    for text in (others, elsewhere, gains):
        launched, _ = controller(text, namespace='robot1')
        assert launched['ee_link'] == 'left_ee_link', text
    for key in (
        '/**/ffsim_reactionless_controller',
        '/**',
        'robot1/ffsim_reactionless_controller',
    ):
        launched, merged = controller(
            f'{key}: {{ros__parameters: {{ee_link: right_ee_link}}}}\n', namespace='robot1'
        )
        assert 'ee_link' not in launched, key  # the file's value, not overridden
        assert merged['ee_link'] == 'right_ee_link', key
    # the launch argument wins over the file
    launched, _ = controller(others.replace('simulator', 'reactionless_controller'), ee_link='x')
    assert launched['ee_link'] == 'x'


def test_a_pushed_namespace_is_kept_and_prefixes_the_frames(stub_launch, tmp_path) -> None:
    """Included under a parent's ``PushRosNamespace`` (launch_ros' ``ros_namespace``), the
    robot's nodes get a relative namespace, which launch_ros prefixes with the pushed one, and
    the TF frame prefix, the RViz displays and the parameter files' node names are those of
    the whole namespace (the namespace was made absolute: the push was dropped)."""
    module = _load_launch_module(ROOT / 'launch' / 'ffsim.launch.py')
    extra = tmp_path / 'extra.yaml'
    extra.write_text('fleet/robot1/ffsim_simulator: {ros__parameters: {real_time_factor: 2.0}}\n')
    # ... and an absolute one (a leading /) keeps its place, as launch_ros' Node does (it was
    # made relative: the push prefixed it)
    for namespace, full in (('robot1', 'fleet/robot1'), ('', 'fleet'), ('/robot1', 'robot1')):
        actions = _run(
            module, 'robot_actions', pushed='/fleet', namespace=namespace, params_file=str(extra)
        )
        nodes = _nodes(actions)
        for node in nodes.values():
            # launch_ros: a relative namespace is prefixed with ros_namespace, None gets it
            assert node.kwargs['namespace'] == (namespace or None)
        assert _parameters(nodes['simulator'])['frame_prefix'] == f'{full}/'
        assert _parameters(nodes['robot_state_publisher'])['frame_prefix'] == f'{full}/'
        (log,) = _of_type(actions, 'LogInfo')
        assert f'in namespace "/{full}", TF frames "{full}/<link>"' in log.kwargs['msg']
        config = yaml.safe_load(Path(nodes['rviz2'].kwargs['arguments'][1]).read_text())
        models = [
            d
            for d in config['Visualization Manager']['Displays']
            if d['Class'] == 'rviz_default_plugins/RobotModel'
        ]
        assert [m['TF Prefix'] for m in models] == [full]
        assert f'/{full}/markers' in set(rviz_topics(config).values())
        # the params_file's section for /fleet/robot1/ffsim_simulator applies there only
        (sim_section,) = node_sections(Path(nodes['simulator'].kwargs['parameters'][0])).values()
        assert (sim_section.get('real_time_factor') == 2.0) == (full == 'fleet/robot1')
        _shut_down(actions)
    # multi_robot under a push: one RViz on the robots' whole namespaces and robot1's clock
    multi = _load_launch_module(ROOT / 'launch' / 'multi_robot.launch.py')
    actions = _run(multi, 'shared_actions', pushed='/fleet')
    (rviz,) = _nodes(actions).values()
    assert rviz.kwargs['remappings'] == [('/clock', '/fleet/robot1/clock')]
    config = yaml.safe_load(Path(rviz.kwargs['arguments'][1]).read_text())
    _shut_down(actions)
    assert {'/fleet/robot1/markers', '/fleet/robot2/markers'} <= set(rviz_topics(config).values())


def test_ffsim_launch_without_the_other_packages_and_with_bad_files(
    stub_launch, tmp_path: Path, monkeypatch
) -> None:
    """Where robot_state_publisher and rviz2 are not installed (a wheel environment) they are
    left out with a warning naming them, instead of failing the launch after the simulator
    and controller started (left running as orphans); the simulator and the controller end
    the launch when they exit (a bad parameter: exit 2); a robot file that is not a URDF or a
    params_file that does not exist is an error naming its argument before anything starts."""
    module = _load_launch_module(ROOT / 'launch' / 'ffsim.launch.py')
    nodes = _nodes(_run(module, 'robot_actions'))
    for name in ('simulator', 'reactionless_controller'):
        handler = nodes[name].kwargs['on_exit']
        # ended with 0, or while the launch shuts down: the rest is shut down
        for code, shutting_down in ((0, False), (0, True), (2, True), (-15, True)):
            event = SimpleNamespace(returncode=code)
            (action,) = handler(event, SimpleNamespace(is_shutdown=shutting_down))
            assert type(action).__name__ == 'Shutdown'
            assert action.kwargs['reason'] == f'ffsim_{name} exited'
        # ended by itself with a failure: an error launch logs, shutting down, returning 1
        for code, how in ((2, 'exit code 2'), (1, 'exit code 1'), (-9, 'killed by signal 9')):
            with pytest.raises(ls.NodeExitError, match=f'ffsim_{name} ended \\({how}\\)'):
                handler(SimpleNamespace(returncode=code), SimpleNamespace(is_shutdown=False))
    monkeypatch.setattr(
        ls, 'missing_packages', lambda packages: [p for p in packages if p != 'rclpy']
    )
    actions = _run(module, 'robot_actions')
    assert set(_nodes(actions)) == {'simulator', 'reactionless_controller'}
    warnings = _warnings(actions)
    assert len(warnings) == 1 and "['robot_state_publisher', 'rviz2'] not installed" in warnings[0]
    assert not any('WARNING' in a.kwargs['msg'] for a in _of_type(actions, 'LogInfo'))
    # record:=true without ros2 bag (a pip or wheel environment): a warning, no recorder (it
    # failed with a traceback, FileNotFoundError 'ros2', found with the real launch system)
    actions = _run(module, 'robot_actions', record='true', rviz='false')
    assert not _of_type(actions, 'ExecuteProcess')
    warnings = _warnings(actions)
    assert any(
        "['ros2cli', 'ros2bag', 'rosbag2_storage_mcap'] not installed: record:=true ignored" in w
        for w in warnings
    ), warnings
    not_urdf = tmp_path / 'notes.urdf'
    not_urdf.write_text('# not XML')
    with pytest.raises(
        ValueError, match=r"^robot: expected a URDF \(XML\), got malformed XML in '.*notes"
    ):
        _run(module, 'robot_actions', robot=str(not_urdf))
    entity = tmp_path / 'entity.urdf'  # the nodes refuse a DTD: named here, before they start
    entity.write_text('<!DOCTYPE robot [<!ENTITY a "x">]><robot name="&a;"/>')
    with pytest.raises(ValueError) as info:
        _run(module, 'robot_actions', robot=str(entity))
    assert str(info.value) == (
        'robot: expected XML without a DTD (entity declarations and external DTDs are refused: '
        f"URDF uses none), got <!DOCTYPE robot [...]> (declarations) in '{entity}'"
    )
    not_robot = tmp_path / 'sdf.urdf'
    not_robot.write_text('<sdf version="1.6"/>')
    with pytest.raises(ValueError, match='^robot: expected a URDF with a <robot> root, got <sdf>'):
        _run(module, 'robot_actions', robot=str(not_robot))
    with pytest.raises(ValueError, match="^params_file: expected a YAML parameter file, got '/no"):
        _run(module, 'robot_actions', params_file='/nonexistent.yaml')


def test_positions_are_checked_against_the_simulators_bound(stub_launch) -> None:
    """``initial_base_position`` (and multi_robot's positions, above) are refused by the launch
    when not finite or beyond the simulator's own bound, naming the argument, before any
    process starts (they passed, every process started, then the simulator exited 2)."""
    from ffsim_ros.node_support.simulator_parameters import MAX_BASE_POSITION, PARAMETERS

    check = PARAMETERS['initial_base_position'].check.test
    module = _load_launch_module(ROOT / 'launch' / 'ffsim.launch.py')
    edge = f'[{MAX_BASE_POSITION!r}, 0, 0]'
    sim = _nodes(_run(module, 'robot_actions', initial_base_position=edge))['simulator']
    given = _parameters(sim)['initial_base_position']
    assert given == [MAX_BASE_POSITION, 0.0, 0.0] and check(given) == given
    beyond = [MAX_BASE_POSITION * (1 + 1e-9), 0.0, 0.0]
    with pytest.raises(ValueError):
        check(beyond)  # the node refuses it...
    for bad in (str(beyond), '[nan,0,0]', '[0,inf,0]', '[1e400,0,0]'):  # ... and so does this
        with pytest.raises(ValueError, match='^initial_base_position: expected 3 finite numbers'):
            _run(module, 'robot_actions', initial_base_position=bad)


def test_the_scenario_argument(stub_launch, tmp_path: Path, monkeypatch) -> None:
    """A shipped scenario name goes to the nodes as is, a file as an absolute path; anything
    else is an error naming the argument and listing the shipped names, before any process
    starts (the nodes started and exited 2 on "cannot read 'nosuch'")."""
    from ffsim_ros.resources import SHIPPED_SCENARIOS

    module = _load_launch_module(ROOT / 'launch' / 'ffsim.launch.py')

    def scenario_of(value: str) -> tuple[str, str]:
        nodes = _nodes(_run(module, 'robot_actions', scenario=value, rviz='false'))
        return (
            _parameters(nodes['simulator'])['scenario'],
            _parameters(nodes['reactionless_controller'])['capture.scenario'],
        )

    assert scenario_of('capture') == ('capture', 'capture')
    own = tmp_path / 'mine'  # (a file without a suffix is a file too)
    own.write_text('targets: []\n')
    monkeypatch.chdir(tmp_path)
    assert scenario_of('mine') == (str(own), str(own))
    assert ls.resolve_scenario_argument('') == ''
    names = re.escape(str(list(SHIPPED_SCENARIOS)))
    for value, kind in (('nosuch', 'no such file'), (str(tmp_path), 'a directory')):
        with pytest.raises(ValueError) as info:
            _run(module, 'robot_actions', scenario=value)
        assert str(info.value) == (
            f'scenario: expected a shipped scenario name {list(SHIPPED_SCENARIOS)} or a '
            f'scenario YAML file, got {value!r}: neither a shipped name nor a file ({kind})'
        )
    with pytest.raises(ValueError, match=f'^scenario: expected a shipped scenario name {names}'):
        ls.resolve_scenario_argument('/dev/null')


def test_missing_packages_reads_the_ament_index() -> None:
    """rclpy is in the index (wheel environment or ROS install), a made-up package is not."""
    pytest.importorskip('ament_index_python')
    assert ls.missing_packages(['rclpy', 'no_such_package_of_ffsim']) == [
        'no_such_package_of_ffsim'
    ]


def test_multi_robot_launch_actions(stub_launch, monkeypatch) -> None:
    module = _load_launch_module(ROOT / 'launch' / 'multi_robot.launch.py')
    groups = _run(module, 'robot_groups', robot2_position='1 2 3')
    assert len(groups) == 2
    included = []
    for group, position in zip(groups, ('[0.0, -5.0, 0.0]', '[1.0, 2.0, 3.0]'), strict=True):
        assert group.kwargs['scoped'] is True  # the includes' arguments stay in the group
        (include,) = group.args[0]
        source = include.args[0].args[0]
        assert source == str(ROOT / 'launch' / 'ffsim.launch.py')
        arguments = dict(include.kwargs['launch_arguments'])
        assert set(arguments) <= FFSIM_ARGUMENTS
        assert arguments['rviz'] == 'false' and arguments['record'] == 'false'
        assert arguments['initial_base_position'] == position  # checked, as the include parses
        assert ls.parse_vector(position, 3, 'initial_base_position')
        assert arguments['localhost_only'].args[0] == 'localhost_only'  # passed on
        included.append(arguments['namespace'])
    assert included == ['robot1', 'robot2']
    # a bad position is reported under the name the user typed, before anything starts
    for name in ('robot1_position', 'robot2_position'):
        for bad in ('[1,2]', '[inf,0,0]', '[nan,0,0]', '[1e7,0,0]'):
            with pytest.raises(ValueError, match=rf"^{name}: expected 3 finite numbers .*got '"):
                _run(module, 'robot_groups', **{name: bad})

    actions = _run(module, 'shared_actions', record='true')
    (rviz,) = _nodes(actions).values()
    assert rviz.kwargs['remappings'] == [('/clock', '/robot1/clock')]
    config = yaml.safe_load(Path(rviz.kwargs['arguments'][1]).read_text())
    _shut_down(actions)
    assert not Path(rviz.kwargs['arguments'][1]).exists()
    topics = set(rviz_topics(config).values())
    assert {'/robot1/markers', '/robot2/markers', '/robot1/ee_path', '/robot2/ee_path'} <= topics
    assert [type(a).__name__ for a in actions].count('ExecuteProcess') == 1
    assert _run(module, 'shared_actions', rviz='false') == []
    # without ros2 bag: the warning instead of the recorder
    monkeypatch.setattr(ls, 'missing_packages', lambda packages: list(packages))
    actions = _run(module, 'shared_actions', record='true', rviz='false')
    assert [type(a).__name__ for a in actions] == ['OpaqueFunction']
    assert 'record:=true ignored' in _warnings(actions)[0]
    assert _warnings(_run(module, 'shared_actions')) == ['ffsim: rviz2 not installed: not started']


def _of_type(actions: list, name: str) -> list:
    return [a for a in actions if type(a).__name__ == name]


def _warnings(actions: list) -> list[str]:
    """The messages of the warnings the actions log (``ls.LaunchWarning``, warning level)."""
    functions = [a.kwargs['function'] for a in _of_type(actions, 'OpaqueFunction')]
    return [f.message for f in functions if isinstance(f, ls.LaunchWarning)]


def _shut_down(actions: list) -> None:
    """What launch does at shutdown: run the OnShutdown handlers the actions registered."""
    handlers = _of_type(actions, 'RegisterEventHandler')
    assert handlers, 'no shutdown handler registered'
    for handler in handlers:
        (on_shutdown,) = handler.args
        assert type(on_shutdown).__name__ == 'OnShutdown'
        on_shutdown.kwargs['on_shutdown'](object(), object())


# -------------------------------------------------------- safe defaults, xacro, initial poses
def test_discovery_environment() -> None:
    jazzy, humble = {'ROS_DISTRO': 'jazzy'}, {'ROS_DISTRO': 'humble'}
    assert ls.discovery_environment('', jazzy) == ({}, [])  # the environment's own setting
    assert ls.discovery_environment('true', jazzy) == (
        {'ROS_AUTOMATIC_DISCOVERY_RANGE': 'LOCALHOST'},
        ['ROS_LOCALHOST_ONLY'],
    )
    assert ls.discovery_environment('false', {'ROS_DISTRO': 'kilted'}) == (
        {'ROS_AUTOMATIC_DISCOVERY_RANGE': 'SUBNET'},
        ['ROS_LOCALHOST_ONLY'],
    )
    assert ls.discovery_environment('True', humble) == ({'ROS_LOCALHOST_ONLY': '1'}, [])
    assert ls.discovery_environment('false', humble) == ({'ROS_LOCALHOST_ONLY': '0'}, [])
    with pytest.raises(ValueError, match="^localhost_only: expected one of .*got 'yes'"):
        ls.discovery_environment('yes', jazzy)


def test_localhost_only_is_set_before_any_process_starts(stub_launch, monkeypatch) -> None:
    monkeypatch.setenv('ROS_DISTRO', 'jazzy')
    ffsim = _load_launch_module(ROOT / 'launch' / 'ffsim.launch.py')
    actions = _run(ffsim, 'robot_actions', localhost_only='true', rviz='false')
    kinds = [type(a).__name__ for a in actions]
    assert kinds[:2] == ['SetEnvironmentVariable', 'UnsetEnvironmentVariable']
    assert actions[0].args == ('ROS_AUTOMATIC_DISCOVERY_RANGE', 'LOCALHOST')
    assert actions[1].args == ('ROS_LOCALHOST_ONLY',)
    assert kinds.index('Node') > 1
    default = _run(ffsim, 'robot_actions', rviz='false')
    assert not _of_type(default, 'SetEnvironmentVariable')
    assert not _of_type(default, 'UnsetEnvironmentVariable')
    # multi_robot: the scoped includes get the argument, the shared RViz the variables
    multi = _load_launch_module(ROOT / 'launch' / 'multi_robot.launch.py')
    shared = _run(multi, 'shared_actions', localhost_only='true')
    assert [type(a).__name__ for a in shared][:2] == [
        'SetEnvironmentVariable',
        'UnsetEnvironmentVariable',
    ]
    _shut_down(shared)


def _fake_xacro(folder: Path, urdf: Path | None, exit_code: int = 0) -> None:
    """An executable ``xacro`` in ``folder`` printing ``urdf`` (the real one is not installed
    here; the launch file runs whatever ``xacro`` is on the PATH, as on a ROS install)."""
    folder.mkdir(exist_ok=True)
    script = folder / 'xacro'
    body = f'sys.stdout.write(open({str(urdf)!r}).read())' if urdf else 'pass'
    script.write_text(
        f'#!{sys.executable}\nimport sys\n'
        f'assert sys.argv[1].endswith(".xacro"), sys.argv\n{body}\n'
        f'sys.stderr.write("xacro: error in the file\\n") if {exit_code} else None\n'
        f'sys.exit({exit_code})\n'
    )
    script.chmod(0o755)


def test_xacro_robot_gets_the_default_end_effector(stub_launch, tmp_path, monkeypatch) -> None:
    """A .xacro robot without a link named ee_link: the launch expands it once and picks the
    end effector as for a URDF file (the controller died of 'invalid parameter: ee_link')."""
    module = _load_launch_module(ROOT / 'launch' / 'ffsim.launch.py')
    dual = sample_robot('dual_arm_servicer')
    robot = tmp_path / 'dual_arm.urdf.xacro'
    robot.write_text('<robot xmlns:xacro="http://www.ros.org/wiki/xacro" name="r"/>')
    bin_dir = tmp_path / 'bin'
    _fake_xacro(bin_dir, dual)
    monkeypatch.setenv('PATH', f'{bin_dir}{os.pathsep}{os.environ["PATH"]}')
    nodes = _nodes(_run(module, 'robot_actions', robot=str(robot), rviz='false'))
    for name in ('simulator', 'reactionless_controller', 'robot_state_publisher'):
        description = _parameters(nodes[name])['robot_description']
        assert description.args == (dual.read_text(),)  # the expanded URDF, as a string
        assert description.kwargs == {'value_type': str}
    assert _parameters(nodes['reactionless_controller'])['ee_link'] == 'left_ee_link'
    explicit = _nodes(_run(module, 'robot_actions', robot=str(robot), ee_link='right_ee_link'))
    assert _parameters(explicit['reactionless_controller'])['ee_link'] == 'right_ee_link'
    # errors name the argument: xacro failing, xacro missing
    _fake_xacro(bin_dir, None, exit_code=3)
    with pytest.raises(ValueError, match=r'^robot: xacro failed on .*error in the file'):
        _run(module, 'robot_actions', robot=str(robot))
    monkeypatch.setenv('PATH', str(tmp_path / 'nowhere'))
    with pytest.raises(ValueError, match='^robot: .* xacro is not installed'):
        _run(module, 'robot_actions', robot=str(robot))


@pytest.mark.ros
@pytest.mark.parametrize('robot', ARMS)
def test_samples_start_away_from_singularities(rclpy_context, robot: str, stub_launch) -> None:
    """The initial pose the launch file gives each sample (config/<sample>.yaml after
    simulator.yaml, loaded by the real node) has a finite, moderate condition number of the
    end effector's generalized Jacobian; planar_2link's zero pose would be singular."""
    import numpy as np

    import ffsim_ros.dynamics as D
    from ffsim_ros.control import ReactionlessController
    from ffsim_ros.simulator import Simulator

    module = _load_launch_module(ROOT / 'launch' / 'ffsim.launch.py')
    sim = _nodes(_run(module, 'robot_actions', robot=robot, rviz='false'))['simulator']
    files = [p for p in sim.kwargs['parameters'] if isinstance(p, str)]
    assert files[0] == str(SIMULATOR_YAML)
    assert files[1:] == (
        [str(ROOT / 'config' / 'planar_2link.yaml')] if robot == 'planar_2link' else []
    )
    args = ['--ros-args'] + [a for f in files for a in ('--params-file', f)]
    node = Simulator(
        context=rclpy_context,
        cli_args=args,
        parameter_overrides=[_parameter('robot_description', sample_robot(robot).read_text())],
    )
    try:
        q0 = node.engine.initial_state[0]
        model = node.model
    finally:
        node.destroy_node()
    law = ReactionlessController(model, ls.default_ee_link(sample_robot(robot).read_text()))
    condition = law.compute(q0, np.zeros(model.nv), None).condition
    assert np.isfinite(condition) and condition < 10.0, (robot, q0[7:], condition)
    if robot == 'planar_2link':
        assert list(q0[7:]) == [-0.5, 1.2]
        stretched = law.compute(D.neutral(model), np.zeros(model.nv), None).condition
        assert not np.isfinite(stretched) or stretched > 1e8  # why it needs a pose


@pytest.mark.ros
def test_the_closed_chain_sample_launches_without_controller_and_starts_closed(
    rclpy_context, stub_launch
) -> None:
    """robot:=floating_platform: simulator, robot_state_publisher and RViz, no controller
    (it takes trees only); the simulator gets config/floating_platform.yaml, whose joint
    positions close both loops: the real node starts there (to 1e-12) with the base turning."""
    import numpy as np

    import ffsim_ros.dynamics as D
    from ffsim_ros.simulator import Simulator

    module = _load_launch_module(ROOT / 'launch' / 'ffsim.launch.py')
    actions = _run(module, 'robot_actions', robot='floating_platform')
    nodes = _nodes(actions)
    assert set(nodes) == {'simulator', 'robot_state_publisher', 'rviz2'}
    files = [p for p in nodes['simulator'].kwargs['parameters'] if isinstance(p, str)]
    assert files == [str(SIMULATOR_YAML), str(ROOT / 'config' / 'floating_platform.yaml')]
    (info,) = _of_type(actions, 'LogInfo')
    assert 'no reactionless controller' in info.kwargs['msg']
    urdf = sample_robot('floating_platform').read_text()
    node = Simulator(
        context=rclpy_context,
        cli_args=['--ros-args'] + [a for f in files for a in ('--params-file', f)],
        parameter_overrides=[_parameter('robot_description', urdf)],
    )
    try:
        q0, v0 = node.engine.initial_state
        chain = node.engine.chain
    finally:
        node.destroy_node()
    positions = node_sections(ROOT / 'config' / 'floating_platform.yaml')
    given = next(iter(positions.values()))['initial_joint_positions']
    assert np.abs(q0[7:] - given).max() < 1e-12  # the configured joints are closed as given
    xi, dxi = chain.constraint_error(q0, v0)
    assert max(np.abs(xi).max(), np.abs(dxi).max()) < 1e-12
    assert np.linalg.norm(v0[3:6]) > 0.1  # tumbling
    assert [lp.name for lp in chain.loops] == [lp.name for lp in D.loop_closures_from_urdf(urdf)]


def _parameter(name: str, value: Any):
    from rclpy.parameter import Parameter

    return Parameter(name, value=value)
