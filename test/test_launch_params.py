"""The launch's ``params_file`` reaches the nodes whatever the types of its values.

Found with the real ``ros2 launch`` (2026-11-27): given the package's config and then the user's
file, rcl kept the earlier value where the later one had another type (it keeps both and reads
them in the order bool, integer, double, string, arrays), so ``control_rate_hz: "fast"`` ran at
the package's 100 Hz where the node alone refuses it (exit 2, named). The launch files now merge
the files for each node into one (``ls.merged_parameter_file``), which the node is given
instead.
"""

from __future__ import annotations

import sys
import types
from pathlib import Path
from typing import Any

import pytest
import yaml

from ffsim_ros import launch_support as ls

ROOT = Path(__file__).resolve().parent.parent
SIMULATOR_YAML = ROOT / 'config' / 'simulator.yaml'
CONTROLLER_YAML = ROOT / 'config' / 'reactionless_controller.yaml'
SIM, CTL = 'ffsim_simulator', 'ffsim_reactionless_controller'

#: A user's params_file: a wrongly typed rate for the controller, a good one for the
#: simulator, keys of other nodes and namespaces, a wildcard for all.
USER_FILE = """
/**/ffsim_reactionless_controller:
  ros__parameters:
    control_rate_hz: "fast"
    gains:
      kp_task: 2
/**/ffsim_simulator:
  ros__parameters:
    physics_rate_hz: 500
robot2:
  ffsim_reactionless_controller:
    ros__parameters:
      state_timeout: 0.5
/robot1/ffsim_simulator:
  ros__parameters:
    publish_rate_hz: 50.0
/**:
  ros__parameters:
    world_frame: map
"""


def _values(path: Path) -> tuple[str, dict[str, Any]]:
    """The one section of a merged file: its key and ``{parameter: value}`` (as PyYAML reads
    them)."""
    data = yaml.safe_load(path.read_text())
    ((key, section),) = data.items()
    assert set(section) == {ls.PARAMS_KEY}
    return key, section[ls.PARAMS_KEY]


@pytest.mark.parametrize(
    ('key', 'fqn', 'applies'),
    [
        ('/**', '/ffsim_simulator', True),
        ('/**', '/robot1/ffsim_simulator', True),
        ('/**/ffsim_simulator', '/ffsim_simulator', True),
        ('/**/ffsim_simulator', '/a/b/ffsim_simulator', True),
        ('/**/ffsim_simulator', '/ffsim_reactionless_controller', False),
        ('ffsim_simulator', '/ffsim_simulator', True),  # a leading / is implied
        ('ffsim_simulator', '/robot1/ffsim_simulator', False),
        ('robot1/ffsim_simulator', '/robot1/ffsim_simulator', True),
        ('/robot1/ffsim_simulator', '/robot2/ffsim_simulator', False),
        ('/*/ffsim_simulator', '/robot1/ffsim_simulator', True),
        ('/*/ffsim_simulator', '/ffsim_simulator', False),
        ('/*/ffsim_simulator', '/a/b/ffsim_simulator', False),
        ('/robot1/*', '/robot1/ffsim_simulator', True),
        ('/ffsim_sim', '/ffsim_simulator', False),
    ],
)
@pytest.mark.ros
def test_node_keys_apply_as_rclpy_applies_them(
    key: str, fqn: str, applies: bool, ros_domain_id: int, tmp_path: Path
) -> None:
    """The package's matching against rcl's own: a node named ``fqn`` started with a file
    whose one section is ``key`` gets its parameter exactly when ``key`` applies (rclpy's
    ``parameter_dict_from_yaml_file`` is no oracle: it knows no wildcard but a lone ``/**``)."""
    import rclpy
    from rclpy.context import Context

    path = tmp_path / 'params.yaml'
    path.write_text(yaml.safe_dump({key: {ls.PARAMS_KEY: {'probe': 1}}}))
    namespace, name = fqn.rsplit('/', 1)
    context = Context()
    args = ['--ros-args', '--params-file', str(path)]
    rclpy.init(args=args, context=context, domain_id=ros_domain_id)
    try:
        node = rclpy.create_node(
            name,
            namespace=namespace or '/',
            context=context,
            enable_rosout=False,
            start_parameter_services=False,
        )
        try:
            assert node.get_fully_qualified_name() == fqn
            by_rcl = node.declare_parameter('probe', 0).value == 1
        finally:
            node.destroy_node()
    finally:
        context.try_shutdown()
    assert by_rcl is applies  # (the table, as documentation)
    assert ls.key_matches_node(key, fqn) is by_rcl


def test_node_names_as_launch_ros_makes_them() -> None:
    assert ls.node_fqn(SIM) == '/ffsim_simulator'
    assert ls.node_fqn(SIM, '/robot1') == '/robot1/ffsim_simulator'
    assert ls.node_fqn(SIM, '/robot1', 'outer') == '/robot1/ffsim_simulator'  # absolute
    assert ls.node_fqn(SIM, None, '/outer') == '/outer/ffsim_simulator'
    assert ls.node_fqn(SIM, 'robot1', 'outer') == '/outer/robot1/ffsim_simulator'


def test_the_users_values_win_whatever_their_type(tmp_path: Path) -> None:
    """Later values replace earlier ones, of any type; a node gets only the sections that
    apply to it (other nodes' keys, other namespaces' keys untouched)."""
    user = tmp_path / 'user.yaml'
    user.write_text(USER_FILE)
    ctl = ls.merged_parameter_file(CTL, '/' + CTL, [CONTROLLER_YAML], user, tmp_path)
    key, values = _values(ctl)
    assert key == f'/**/{CTL}'
    assert values['control_rate_hz'] == 'fast'  # a string over the package's double
    assert values['gains.kp_task'] == 2  # nested, an integer over a double
    assert values['world_frame'] == 'map'  # the /** section
    assert values['state_timeout'] == 0.2  # robot2's value: not for /ffsim_reactionless_...
    assert 'physics_rate_hz' not in values  # the simulator's
    package = yaml.safe_load(CONTROLLER_YAML.read_text())[f'/**/{CTL}'][ls.PARAMS_KEY]
    assert values['gains.damping'] == package['gains']['damping']  # the rest: the package's
    assert ctl.read_text().count('control_rate_hz: "fast"') == 1  # quoted as written

    ctl2 = ls.merged_parameter_file(CTL, f'/robot2/{CTL}', [CONTROLLER_YAML], user, tmp_path)
    assert _values(ctl2)[1]['state_timeout'] == 0.5
    sim = ls.merged_parameter_file(SIM, f'/robot1/{SIM}', [SIMULATOR_YAML], user, tmp_path)
    values = _values(sim)[1]
    assert values['physics_rate_hz'] == 500 and values['publish_rate_hz'] == 50.0
    assert 'control_rate_hz' not in values and 'gains.kp_task' not in values
    assert values['world_frame'] == 'map'


def test_sections_are_applied_in_rcls_order(tmp_path: Path) -> None:
    """As rcl: the sections of one node key are one entry, placed where the key first
    appeared (the package's ``/**/<node>``); a later entry (``/**`` of the user's file) wins
    over it even when written first in the file."""
    user = tmp_path / 'user.yaml'
    user.write_text(
        f'/**:\n  ros__parameters:\n    control_rate_hz: 20.0\n'
        f'/**/{CTL}:\n  ros__parameters:\n    control_rate_hz: 30.0\n'
    )
    merged = ls.node_parameters(f'/{CTL}', [(CONTROLLER_YAML, 'config'), (user, 'params_file')])
    assert merged['control_rate_hz'].value == '20.0'


@pytest.mark.parametrize(
    ('text', 'message'),
    [
        ('not: [yaml', "^params_file: expected a YAML parameter file, got '.*bad.yaml'"),
        ('- a\n- b\n', 'expected a mapping of node names to ros__parameters, got sequence'),
        ('ros__parameters: {a: 1}\n', 'expected a node name before ros__parameters'),
        (f'{CTL}:\n  ros__parameters: [1]\n', 'expected parameter names under ros__param'),
    ],
)
def test_a_malformed_params_file_is_named(tmp_path: Path, text: str, message: str) -> None:
    bad = tmp_path / 'bad.yaml'
    bad.write_text(text)
    with pytest.raises(ValueError, match=message):
        ls.merged_parameter_file(CTL, f'/{CTL}', [CONTROLLER_YAML], bad, tmp_path)
    assert [p.name for p in tmp_path.iterdir()] == ['bad.yaml']  # nothing written


@pytest.mark.ros
def test_rcl_reads_the_merged_file_as_the_users_file(rclpy_context, tmp_path: Path) -> None:
    """The values are written as they were typed (text and quoting), so rcl types them as in
    the user's file: YAML 1.1 (PyYAML) and rcl disagree on some (``1e3``, ``y``)."""
    from rclpy.node import Node

    user = tmp_path / 'user.yaml'
    user.write_text(
        '/**:\n  ros__parameters:\n'
        '    a: 1e3\n    b: !!float 5\n    c: !!str 5\n    d: y\n    e: "100"\n    f: 0x1F\n'
        "    g: .inf\n    h: [1.5, 2.0]\n    i: ['x', z]\n    j: 'yes'\n    k: 1_000\n"
        '    m: |\n      two\n      lines\n    n: [yes, no]\n    o: -.5\n    p: ~\n'
        '    q: {r: {s: 1}}\n'
    )
    merged = ls.merged_parameter_file('probe', '/probe', [], user, tmp_path)

    def read(path: Path) -> dict[str, Any]:
        node = Node(
            'probe',
            context=rclpy_context,
            cli_args=['--ros-args', '--params-file', str(path)],
            automatically_declare_parameters_from_overrides=True,
        )
        try:
            return {n: p.value for n, p in node.get_parameters_by_prefix('').items()}
        finally:
            node.destroy_node()

    expected = read(user)
    assert expected['a'] == 1000.0 and expected['d'] is True and expected['k'] == '1_000'
    assert expected['q.r.s'] == 1
    assert read(merged) == expected


@pytest.mark.ros
def test_the_node_refuses_a_wrongly_typed_value_of_the_params_file(
    rclpy_context, tmp_path: Path
) -> None:
    """Given the merged file, the controller refuses ``control_rate_hz: "fast"`` naming it (run
    alone: exit 2), where given the package file and the user's it ran at 100 Hz; a value of
    a type it takes (an integer for a double) is applied."""
    from rclpy.exceptions import ParameterException

    from ffsim_ros.node_support.common import ParameterValueError
    from ffsim_ros.reactionless_controller import ReactionlessControllerNode

    def controller(*files: Path) -> ReactionlessControllerNode:
        args = ['--ros-args'] + [a for f in files for a in ('--params-file', str(f))]
        return ReactionlessControllerNode(context=rclpy_context, cli_args=args)

    bad = tmp_path / 'bad.yaml'
    bad.write_text(f'/**/{CTL}:\n  ros__parameters:\n    control_rate_hz: "fast"\n')
    node = controller(CONTROLLER_YAML, bad)  # what the launch passed: rcl kept 100.0
    try:
        assert node.get_parameter('control_rate_hz').value == 100.0
    finally:
        node.destroy_node()
    merged = ls.merged_parameter_file(CTL, f'/{CTL}', [CONTROLLER_YAML], bad, tmp_path)
    with pytest.raises((ParameterValueError, ParameterException), match='control_rate_hz'):
        controller(merged)

    good = tmp_path / 'good.yaml'
    good.write_text(f'/**/{CTL}:\n  ros__parameters:\n    control_rate_hz: 50\n')
    merged = ls.merged_parameter_file(CTL, f'/{CTL}', [CONTROLLER_YAML], good, tmp_path)
    node = controller(merged)
    try:
        assert node.get_parameter('control_rate_hz').value == 50.0
        assert node.get_parameter('gains.kv_joint').value == 20.0  # the package's
    finally:
        node.destroy_node()


# ------------------------------------------------------------- the launch file, on a stub API
@pytest.fixture
def ffsim_launch(monkeypatch) -> types.ModuleType:
    """``launch/ffsim.launch.py`` on test_launch.py's stand-in of the launch API (in place of
    the real one where it is installed)."""
    from test_launch import _load_launch_module, _stub_modules

    for name, mod in _stub_modules().items():
        monkeypatch.setitem(sys.modules, name, mod)
    monkeypatch.setattr(ls, 'missing_packages', lambda packages: [])
    return _load_launch_module(ROOT / 'launch' / 'ffsim.launch.py')


def test_the_launch_gives_each_node_its_merged_file(ffsim_launch, tmp_path: Path) -> None:
    from test_launch import _nodes, _run, _shut_down

    user = tmp_path / 'user.yaml'
    user.write_text(USER_FILE)
    for namespace, state_timeout, publish_rate in (('robot1', 0.2, 50.0), ('robot2', 0.5, 100.0)):
        actions = _run(
            ffsim_launch,
            'robot_actions',
            namespace=namespace,
            params_file=str(user),
            rviz='false',
            robot='planar_2link',
        )
        nodes = _nodes(actions)
        sim_file, ctl_file = (
            Path(nodes[name].kwargs['parameters'][0])
            for name in ('simulator', 'reactionless_controller')
        )
        ctl = _values(ctl_file)[1]
        assert ctl['control_rate_hz'] == 'fast' and ctl['state_timeout'] == state_timeout
        sim = _values(sim_file)[1]
        assert sim['publish_rate_hz'] == publish_rate and sim['physics_rate_hz'] == 500
        assert sim['initial_joint_positions'] == [-0.5, 1.2]  # config/planar_2link.yaml
        # the launch arguments' values after it, under the node's own key (launch_ros)
        assert nodes['simulator'].kwargs['parameters'][1]['frame_prefix'] == f'{namespace}/'
        _shut_down(actions)
        assert not sim_file.exists() and not ctl_file.exists()
    user.write_text('not: [yaml')
    with pytest.raises(ValueError, match='^params_file: expected a YAML parameter file'):
        _run(ffsim_launch, 'robot_actions', params_file=str(user))


def test_a_launch_warning_is_logged_at_warning_level(monkeypatch) -> None:
    """``LogInfo`` logs at info level (``[INFO] [launch.user]: ffsim: WARNING: ...``)."""
    logged = []

    class Logger:
        def warning(self, message: str) -> None:
            logged.append(message)

    names = []
    logging = types.ModuleType('launch.logging')
    logging.get_logger = lambda name: names.append(name) or Logger()
    launch = types.ModuleType('launch')
    launch.logging = logging
    monkeypatch.setitem(sys.modules, 'launch', launch)
    monkeypatch.setitem(sys.modules, 'launch.logging', logging)
    assert ls.LaunchWarning('ffsim: rviz2 not installed')(object()) == []
    assert logged == ['ffsim: rviz2 not installed'] and names == ['launch.user']
