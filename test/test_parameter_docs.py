"""The parameter tables of the nodes against their reference (README, config YAML) and the
checks of the table machinery.

The README tables and ``config/*.yaml`` are generated from the tables
(``ParameterTable.markdown``/``config_yaml``): this test fails when they drift. To regenerate
them after changing a table: ``FFSIM_WRITE_PARAMETER_DOCS=1 pytest test/test_parameter_docs.py``
(then review the diff).
"""

from __future__ import annotations

import math
import os
import re
from pathlib import Path

import pytest
import yaml

pytestmark = pytest.mark.ros  # the tables live in the node modules (rclpy messages)

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / 'README.md'
WRITE = os.environ.get('FFSIM_WRITE_PARAMETER_DOCS') == '1'


def tables() -> dict[str, object]:
    from ffsim_ros import reactionless_controller, simulator

    return {
        'simulator': simulator.PARAMETERS,
        'reactionless_controller': reactionless_controller.PARAMETERS,
    }


def _marked(text: str, node_name: str) -> re.Match:
    pattern = (
        rf'(<!-- parameters of {node_name}: generated from its table, see '
        rf'test/test_parameter_docs.py -->\n)(.*?)(<!-- end of the parameters of {node_name} -->)'
    )
    match = re.search(pattern, text, flags=re.S)
    assert match, f'README: no marked parameter table for {node_name}'
    return match


@pytest.mark.parametrize('module', ['simulator', 'reactionless_controller'])
def test_readme_table_is_the_generated_one(module: str) -> None:
    table = tables()[module]
    text = README.read_text()
    match = _marked(text, table.node_name)
    if WRITE:
        text = text[: match.start(2)] + table.markdown() + text[match.end(2) :]
        README.write_text(text)
        match = _marked(text, table.node_name)
    assert match.group(2) == table.markdown()
    # every parameter has its row, in table order
    names = re.findall(r'^\| `([^`]+)`', match.group(2), flags=re.M)
    assert names == list(table.names)


@pytest.mark.parametrize('module', ['simulator', 'reactionless_controller'])
def test_config_yaml_is_the_generated_one(module: str) -> None:
    table = tables()[module]
    path = ROOT / 'config' / f'{module}.yaml'
    if WRITE:
        path.write_text(table.config_yaml())
    assert path.read_text() == table.config_yaml()
    # ... and it loads to the table's defaults, with their types, for the in_config parameters
    (key,) = yaml.safe_load(path.read_text())
    assert key == f'/**/{table.node_name}'
    params = yaml.safe_load(path.read_text())[key]['ros__parameters']
    flat = {}
    for name, value in params.items():
        if isinstance(value, dict):
            flat.update({f'{name}.{k}': v for k, v in value.items()})
        else:
            flat[name] = value
    assert list(flat) == [s.name for s in table if s.in_config]
    for name, value in flat.items():
        default = table[name].default
        assert value == default and type(value) is type(default), name
    # the description of each parameter is the comment right above it
    lines = path.read_text().splitlines()
    for spec in table:
        if spec.in_config:
            key = spec.name.rpartition('.')[2]
            index = next(k for k, line in enumerate(lines) if line.strip().startswith(f'{key}:'))
            block = []
            while lines[index - 1 - len(block)].strip().startswith('#'):
                block.insert(0, lines[index - 1 - len(block)].strip()[1:].strip())
            assert ' '.join(block).startswith(spec.description), spec.name
    assert max(len(line) for line in lines) <= 99


@pytest.mark.parametrize('module', ['simulator', 'reactionless_controller'])
def test_descriptors_come_from_the_table(module: str) -> None:
    from rcl_interfaces.msg import ParameterType

    table = tables()[module]
    types = {
        bool: ParameterType.PARAMETER_BOOL,
        int: ParameterType.PARAMETER_INTEGER,
        float: ParameterType.PARAMETER_DOUBLE,
        str: ParameterType.PARAMETER_STRING,
    }
    for spec in table:
        d = spec.descriptor()
        assert d.name == spec.name and d.description == spec.description
        assert d.read_only is (not spec.dynamic)
        assert d.additional_constraints == spec.constraint
        if isinstance(spec.default, list):
            assert d.type == ParameterType.PARAMETER_DOUBLE_ARRAY
        else:
            assert d.type == types[type(spec.default)]
        # the default passes its own check
        assert spec.validate(spec.default) == spec.default
        # a closed interval or count is the descriptor's range too (step 0: any value in it)
        ranges = [
            (r.from_value, r.to_value, r.step) for r in (*d.floating_point_range, *d.integer_range)
        ]
        bounds = spec.check.bounds if spec.check is not None else None
        assert ranges == ([(*bounds, 0)] if bounds is not None else []), spec.name
        if bounds is not None:  # its ends are the check's: rclpy enforces both
            assert spec.validate(bounds[0]) == bounds[0] and spec.validate(bounds[1]) == bounds[1]
    for name in ('robot_description', 'robot_file', 'world_frame'):
        assert name in table
    ranged = {s.name: s.descriptor() for s in table if s.bounds is not None}
    if module == 'simulator':
        assert ranged['command_timeout'].floating_point_range[0].to_value == 3600.0
        # composite rules (0 or a range) and arrays keep their text only
        assert 'real_time_factor' not in ranged and 'gravity' not in ranged
    else:
        assert ranged['reach.max_plans'].integer_range[0].to_value == 100
        assert 'gains.max_joint_speed' not in ranged  # (0 excluded: an open bound)
        assert ranged['gains.kp_task'].floating_point_range[0].from_value == 0.0


def test_messages_show_a_huge_value_or_name_briefly(rclpy_context) -> None:
    """A refused value or name is echoed in about 200 characters: a 2 000 000-element array
    made a 10 MB reason of a refused set (and of a start-up error), a 100 000-character name
    a 100 kB one."""
    from rcl_interfaces.msg import ParameterDescriptor, ParameterType
    from rclpy.parameter import Parameter

    from ffsim_ros.node_support import ParameterValueError, one_of
    from ffsim_ros.node_support.parameters import wrong_type_message
    from ffsim_ros.simulator import Simulator

    sim, ctl = tables()['simulator'], tables()['reactionless_controller']
    huge = [1.0] * 2_000_000
    shown = 'an array of 2000000 doubles [1.0, 1.0, 1.0, '
    for call, start in [
        (lambda: sim['gravity'].validate(huge), 'gravity: expected 3 finite values'),
        (lambda: sim['initial_joint_positions'].validate([math.nan] * 1000), 'initial_joint'),
        (lambda: sim['command_timeout'].coerce(huge), 'command_timeout: expected a double'),
        (lambda: ctl['mode'].validate('x' * 10**6), 'mode: expected one of'),
        (lambda: ctl['world_frame'].validate('/' * 10**6), 'world_frame: expected'),
    ]:
        with pytest.raises(ParameterValueError) as info:
            call()
        message = str(info.value)
        assert message.startswith(start) and len(message) < 450, message[:500]
    with pytest.raises(ParameterValueError, match=r'got an array of 2000000 doubles \[1\.0, '):
        sim['gravity'].validate(huge)
    with pytest.raises(ParameterValueError, match=r'\.\.\. \(1000000 characters\)'):
        ctl['mode'].validate('x' * 10**6)
    with pytest.raises(ValueError, match=r"got '(ab){100}'\.\.\. \(100000 characters\)$"):
        one_of(['a']).test('ab' * 50_000)
    # short values as they were
    with pytest.raises(ParameterValueError, match=r'got \[1\.0, 2\.0\]$'):
        sim['gravity'].validate([1.0, 2.0])
    # rclpy's own parameters (use_sim_time) and names: a set of a huge name, or of many
    message = wrong_type_message(
        'use_sim_time',
        ParameterDescriptor(type=ParameterType.PARAMETER_BOOL),
        Parameter('use_sim_time', value=huge),
    )
    assert message.startswith(f'use_sim_time: expected a bool, got {shown}') and len(message) < 400
    for message in (sim.undeclared_message(['x' * 100_000]), sim.unknown_message(['y' * 100_000])):
        assert '(100000 characters)' in message and len(message) < 400, message[:500]
    many = sim.undeclared_message([f'p{k}' for k in range(2000)])
    assert many.endswith("got 'p0', 'p1', 'p2', 'p3', 'p4' and 1995 more"), many[-200:]
    assert sim.unknown_message(['a', 'b']) == 'ffsim_simulator: unknown parameters a, b'
    # at start-up: the node's error
    with pytest.raises(ParameterValueError) as info:
        Simulator(context=rclpy_context, parameter_overrides=[Parameter('gravity', value=huge)])
    message = str(info.value)
    assert message.startswith(
        f'gravity: expected 3 finite values of magnitude <= 1000, got {shown}'
    )
    assert len(message) < 400


def test_one_list_of_modes_and_gains() -> None:
    from ffsim_ros.control import CONTROL_MODES, Gains
    from ffsim_ros.node_support import ParameterValueError
    from ffsim_ros.node_support.controller_parameters import GAIN_DESCRIPTIONS
    from ffsim_ros.node_support.goal_status import MODES

    table = tables()['reactionless_controller']
    assert MODES is CONTROL_MODES
    assert table['mode'].check.text == 'one of ' + ', '.join(CONTROL_MODES)
    for mode in CONTROL_MODES:
        assert table['mode'].validate(mode) == mode
    with pytest.raises(ParameterValueError, match="mode: expected one of .*got 'foo'"):
        table['mode'].validate('foo')
    assert set(GAIN_DESCRIPTIONS) == set(Gains().__dict__)
    gains = [s.name for s in table if s.name.startswith('gains.')]
    assert gains == [f'gains.{name}' for name in Gains().__dict__]
    # the table accepts exactly what Gains accepts at the bounds
    with pytest.raises(ParameterValueError, match='gains.max_joint_speed'):
        table['gains.max_joint_speed'].validate(0.0)
    assert table['gains.max_joint_speed'].validate(1.0) == 1.0
    with pytest.raises(ValueError):
        Gains(max_joint_speed=0.0)
    Gains(max_joint_speed=1.0)
    with pytest.raises(ParameterValueError, match='gains.kp_task'):
        table['gains.kp_task'].validate(-1e-9)


def test_checks() -> None:
    from ffsim_ros.node_support import (
        ParameterSpec,
        ParameterTable,
        ParameterValueError,
        count,
        finite_values,
        interval,
        one_of,
        vector,
    )

    positive = interval(0.0, low_open=True)
    assert positive.test(1e-300) == 1e-300
    for bad in (0.0, -1.0, math.inf, math.nan):
        with pytest.raises(ValueError, match='expected a finite value > 0'):
            positive.test(bad)
    closed = interval(0.0, 1.0)
    assert closed.text == 'finite, in [0, 1]' and closed.test(0.0) == 0.0 == closed.test(-0.0)
    with pytest.raises(ValueError):
        closed.test(1.0000001)
    half_open = interval(high=2.0, high_open=True)
    assert half_open.test(-5.0) == -5.0
    with pytest.raises(ValueError, match='< 2'):
        half_open.test(2.0)
    assert vector(3).test((1, 2, 3)) == [1.0, 2.0, 3.0]
    for bad in ([1.0, 2.0], [1.0, 2.0, math.nan]):
        with pytest.raises(ValueError, match='expected 3 finite values'):
            vector(3).test(bad)
    assert finite_values().test([]) == []
    with pytest.raises(ValueError, match='finite'):
        finite_values().test([0.0, math.inf])
    with pytest.raises(ValueError, match="expected one of \\('a', 'b'\\), got 'c'"):
        one_of(['a', 'b']).test('c')
    plans = count(0, 100)
    assert plans.text == 'integer in [0, 100]'
    assert plans.test(0) == 0 and plans.test(100) == 100
    for bad in (-1, 101, True, 2.0, '3'):
        with pytest.raises(ValueError, match=f'expected an integer in \\[0, 100\\], got {bad!r}'):
            plans.test(bad)
    spec = ParameterSpec('n', 3, 'searches', plans)
    assert spec.type_name == 'int' and spec.coerce(4) == 4
    with pytest.raises(ParameterValueError, match=r'n: expected an int, got 4.0 \(a double\)'):
        spec.coerce(4.0)  # an integer parameter takes no double (ROS types are strict)
    with pytest.raises(ParameterValueError, match=r'n: expected an integer in \[0, 100\], got -2'):
        spec.validate(-2)

    def ordered(values) -> None:
        if values['low'] > values['high']:
            raise ParameterValueError('low: expected <= high')

    table = ParameterTable(
        'n',
        [ParameterSpec('low', 0.0, 'low end', interval()), ParameterSpec('high', 1.0, 'high')],
        cross_check=ordered,
    )
    assert table.validate({'low': 0.5, 'high': 1.0}) == {'low': 0.5, 'high': 1.0}
    with pytest.raises(ParameterValueError, match='low: expected <= high'):
        table.validate({'low': 2.0, 'high': 1.0})
    assert table.validate({'low': 2.0}) == {'low': 2.0}  # partial: no cross check
    with pytest.raises(ValueError, match='twice'):
        ParameterTable('n', [ParameterSpec('a', 1.0, 'x'), ParameterSpec('a', 2.0, 'y')])
    with pytest.raises(ValueError, match='must not be empty'):
        ParameterSpec('a', [], 'x')


class _Node:
    """The part of an rclpy node that ParameterTable.watch uses; ``post_set``: whether it has
    rclpy >= Iron's post-set callbacks."""

    def __init__(self, values: dict, post_set: bool) -> None:
        self.values = dict(values)
        self.on_set: list = []
        self.post: list = []
        if post_set:
            self.add_post_set_parameters_callback = self.post.append

    def add_on_set_parameters_callback(self, callback) -> None:
        self.on_set.append(callback)

    def has_parameter(self, name: str) -> bool:
        return name in self.values

    def get_parameter(self, name: str):
        from rclpy.parameter import Parameter

        return Parameter(name, value=self.values[name])

    def set(self, params: list) -> bool:
        """What rclpy does: on-set callbacks, store, post-set callbacks."""
        if not all(cb(params).successful for cb in self.on_set):
            return False
        self.values.update({p.name: p.value for p in params})
        for cb in self.post:
            cb(params)
        return True


@pytest.mark.parametrize('post_set', [True, False], ids=['iron_and_later', 'humble'])
def test_watch_applies_checked_sets_only(post_set: bool) -> None:
    from rclpy.parameter import Parameter

    from ffsim_ros.node_support import ParameterSpec, ParameterTable, ParameterValueError
    from ffsim_ros.node_support import interval as within

    def ordered(values) -> None:
        if values['low'] > values['high']:
            raise ParameterValueError('low: expected <= high')

    table = ParameterTable(
        'n',
        [
            ParameterSpec('low', 0.0, 'low end', within(), dynamic=True),
            ParameterSpec('high', 1.0, 'high end', within(), dynamic=True),
        ],
        cross_check=ordered,
    )
    node = _Node({'low': 0.0, 'high': 1.0, 'use_sim_time': False}, post_set)
    applied: list[dict] = []
    table.watch(node, applied.append)
    assert node.set([Parameter('low', value=0.5)]) and applied == [{'low': 0.5}]
    # refused: a bad value, or a good one whose set breaks the cross check -- nothing applied
    assert not node.set([Parameter('high', value=float('nan'))])
    assert not node.set([Parameter('high', value=2.0), Parameter('low', value=3.0)])
    assert applied == [{'low': 0.5}] and node.values['low'] == 0.5
    assert node.set([Parameter('high', value=2.0), Parameter('low', value=1.5)])
    assert applied[-1] == {'high': 2.0, 'low': 1.5}
    assert node.set([Parameter('use_sim_time', value=True)])  # not the table's: not applied
    assert len(applied) == 2
    # a malformed name not declared (an empty one: rclpy's own check lets it through) is
    # refused by the on-set callback, naming it, alone or with a good value; nothing applied
    for params in (
        [Parameter('', value=1.0)],
        [Parameter('low', value=0.25), Parameter('', value='x')],
    ):
        result = node.on_set[0](params)
        assert not result.successful
        assert result.reason == (
            "n: expected a parameter the node declares (ros2 param list shows them), got '' "
            '(an empty name)'
        )
        assert not node.set(params)
    for name, problem in (
        ('a..b', 'a name with an empty part between dots'),
        ('lo w', 'a name with whitespace or control characters'),
        ('.low', 'a name with an empty part between dots'),
    ):
        assert node.on_set[0]([Parameter(name, value=1.0)]).reason.endswith(f'({problem})')
    assert '' not in node.values and node.values['low'] == 1.5 and len(applied) == 2
    # a name twice in one (atomic) set: refused by the on-set callback (every distro), whatever
    # the order of the values; only the last was checked, and rclpy announced each
    for values in ((float('nan'), 1.25), (1.25, float('nan')), (1.25, 1.25)):
        params = [Parameter('low', value=values[0]), Parameter('low', value=values[1])]
        result = node.on_set[0](params)
        assert (result.successful, result.reason) == (False, 'low: given twice in one set')
        assert not node.set(params)
    assert node.values['low'] == 1.5 and len(applied) == 2
