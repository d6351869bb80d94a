"""Helpers shared by the nodes (ffsim_ros.node_support) and the controller's parameters."""

from __future__ import annotations

import signal
from pathlib import Path

import numpy as np
import pytest

import ffsim_ros.dynamics as D
from ffsim_ros.resources import sample_robot

pytestmark = pytest.mark.ros


def test_load_robot_sources_and_errors(tmp_path: Path) -> None:
    from ffsim_ros.node_support import DEFAULT_ROBOT, ParameterValueError, load_robot

    planar = sample_robot('planar_2link').read_text()
    model, text, loops = load_robot(planar, '/no/such/file.urdf')  # the description wins
    assert text == planar and model.n == 2 and loops == ()
    path = tmp_path / 'robot.urdf'
    path.write_text(planar)
    model, text, _ = load_robot('', str(path))
    assert text == planar and model.n == 2
    model, text, _ = load_robot('', '')
    assert model.joint_names == D.load_urdf(sample_robot(DEFAULT_ROBOT)).joint_names
    with pytest.raises(ParameterValueError, match=r"^robot_file: cannot read '/no/such'"):
        load_robot('', '/no/such')
    with pytest.raises(ParameterValueError, match='^robot_description: invalid robot'):
        load_robot('<robot name="r"></robot>', '')
    bad = tmp_path / 'bad.urdf'
    bad.write_text('<robot name="r"></robot>')
    with pytest.raises(ParameterValueError, match=r'^robot_file \(.*bad.urdf\): invalid robot'):
        load_robot('', str(bad))
    # a DTD (XML entities): refused naming the parameter, the entity never expanded
    entity = planar.replace('<?xml version="1.0"?>', '<!DOCTYPE r [<!ENTITY a "0.1">]>', 1)
    entity = entity.replace('ixx="0.866666666667"', 'ixx="&a;"', 1)
    assert entity.count('&a;') == 1 and entity.startswith('<!DOCTYPE')
    with pytest.raises(ParameterValueError) as info:
        load_robot(entity, '')
    assert str(info.value) == (
        'robot_description: invalid robot: URDF: expected XML without a DTD (entity '
        'declarations and external DTDs are refused: URDF uses none), got <!DOCTYPE r [...]> '
        '(declarations)'
    )


def test_load_robot_reads_and_checks_loop_closures(tmp_path: Path) -> None:
    from ffsim_ros.node_support import ParameterValueError, load_robot

    platform = sample_robot('floating_platform')
    model, _, loops = load_robot('', str(platform))
    assert [lp.name for lp in loops] == ['b_tip', 'c_tip'] and model.n == 10
    with pytest.raises(ParameterValueError, match=r'^robot_file \(.*\): expected a tree, got'):
        load_robot('', str(platform), tree_only=True)
    text = platform.read_text()
    moon = text.replace('<successor link="platform">', '<successor link="moon">', 1)
    with pytest.raises(ParameterValueError, match='^robot_description: invalid loop closure'):
        load_robot(moon, '')
    within = text.replace('<successor link="platform">', '<successor link="b3">', 1)
    with pytest.raises(ParameterValueError, match='same body'):
        load_robot(within, '')


def test_stamps_round_trip() -> None:
    from ffsim_ros.node_support import stamp_ns, to_stamp

    for ns in (0, 1, 999_999_999, 1_000_000_000, 12_345_678_901_234):
        stamp = to_stamp(ns)
        assert 0 <= stamp.nanosec < 1_000_000_000 and stamp_ns(stamp) == ns


def test_controller_mode_is_applied_after_the_set_only(rclpy_context) -> None:
    """The mode is checked in the on-set callback and applied in the post-set callback: a
    refused set (alone or atomic with a good value) changes neither the parameter nor the law."""
    from rclpy.parameter import Parameter

    from ffsim_ros.control import CONTROL_MODES, ControlMode
    from ffsim_ros.reactionless_controller import PARAMETERS, ReactionlessControllerNode

    node = ReactionlessControllerNode(context=rclpy_context)
    try:
        assert node.law.mode is ControlMode.REACTIONLESS
        result = node.set_parameters_atomically(
            [Parameter('trajectory.reactionless', value=True), Parameter('mode', value='foo')]
        )
        assert not result.successful and "got 'foo'" in result.reason
        assert node.law.mode is ControlMode.REACTIONLESS
        assert node.get_parameter('mode').value == 'reactionless'
        assert node.get_parameter('trajectory.reactionless').value is False
        for mode in reversed(CONTROL_MODES):
            assert node.set_parameters([Parameter('mode', value=mode)])[0].successful
            assert node.law.mode.value == mode == node.get_parameter('mode').value
        result = node.set_parameters([Parameter('gains.kp_task', value=3.0)])
        assert not result[0].successful and 'read-only' in result[0].reason
        assert node.law.gains.kp_task == PARAMETERS['gains.kp_task'].default
        described = node.describe_parameters(list(PARAMETERS.names))
        for spec, d in zip(PARAMETERS, described, strict=True):
            assert d.description == spec.description and d.read_only is not spec.dynamic
            assert d.additional_constraints == spec.constraint
    finally:
        node.destroy_node()


def test_unknown_parameters_are_named_with_a_suggestion(rclpy_context) -> None:
    """A misspelled key of a parameter file (or ``-p``) is named at start with the parameter it
    was probably meant for (rclpy ignores it without a word); ``validate`` names unknown
    names instead of raising a KeyError."""
    from rclpy.parameter import Parameter

    from ffsim_ros.node_support import ParameterValueError
    from ffsim_ros.reactionless_controller import PARAMETERS, ReactionlessControllerNode

    with pytest.raises(ParameterValueError) as info:
        PARAMETERS.validate({'control_rate_hx': 50.0})
    assert str(info.value) == (
        'ffsim_reactionless_controller: unknown parameters control_rate_hx '
        '(did you mean control_rate_hz?)'
    )
    node = ReactionlessControllerNode(
        context=rclpy_context,
        parameter_overrides=[
            Parameter('control_rate_hx', value=50.0),
            Parameter('control_rate_hz', value=50.0),
            Parameter('zzz', value=1),
        ],
    )
    try:
        assert PARAMETERS.unused_overrides(node) == ['control_rate_hx', 'zzz']
        assert node.get_parameter('control_rate_hz').value == 50.0
    finally:
        node.destroy_node()


def test_a_parameter_of_the_other_node_is_not_warned_about_as_unknown(
    rclpy_context, capfd
) -> None:
    """A parameter file shared by both nodes (``/**:`` with use_sim_time, physics_rate_hz,
    control_rate_hz; the launch files' params_file merge copies ``/**`` sections into both
    nodes' files) made the simulator warn "unknown parameters control_rate_hz: ignored" and
    the controller warn about physics_rate_hz, though the node owning each applied it. A name
    of the other node's table is now said at info level, naming that node; a name of neither
    is still warned about, with its suggestion."""
    from rclpy.parameter import Parameter

    from ffsim_ros.reactionless_controller import ReactionlessControllerNode
    from ffsim_ros.simulator import Simulator

    shared = [
        Parameter('use_sim_time', value=True),
        Parameter('physics_rate_hz', value=500.0),
        Parameter('control_rate_hz', value=50.0),
        Parameter('publish_rate_hx', value=10.0),  # (a typo: of neither node)
    ]
    for make, owner, other, mine in (
        (Simulator, 'ffsim_simulator', 'control_rate_hz', 'physics_rate_hz'),
        (ReactionlessControllerNode, 'ffsim_reactionless_controller', 'physics_rate_hz', None),
    ):
        capfd.readouterr()
        node = make(context=rclpy_context, parameter_overrides=shared)
        try:
            if mine is not None:
                assert node.get_parameter(mine).value == 500.0
            logged = capfd.readouterr().err
            warnings = [line for line in logged.splitlines() if line.startswith('[WARN]')]
            assert not any(other in line for line in warnings), warnings
            unknown = f'{owner}: unknown parameters publish_rate_hx'
            assert sum(unknown in line for line in warnings) == 1, warnings
            theirs = (
                'ffsim_simulator'
                if make is ReactionlessControllerNode
                else ('ffsim_reactionless_controller')
            )
            info = f'{owner}: ignored {other} (a parameter of {theirs})'
            assert any(line.startswith('[INFO]') and info in line for line in logged.splitlines())
        finally:
            node.destroy_node()


def test_undeclared_and_empty_parameter_names_are_refused_by_name(
    rclpy_context, ros_executor, wait_until
) -> None:
    """A set of a name neither node declares is refused with a reason naming it: an empty name
    was taken (``successful=True``, then listed by list_parameters: rclpy's own check let it
    through), ``nonexistent`` was refused as ``Invalid access to undeclared parameter(s): []``.
    Parameters of rclpy's (``use_sim_time``) and of the table still set, alone or atomically."""
    from rclpy.node import Node
    from rclpy.parameter import Parameter
    from rclpy.parameter_client import AsyncParameterClient

    from ffsim_ros.node_support import UndeclaredParameterError
    from ffsim_ros.reactionless_controller import ReactionlessControllerNode
    from ffsim_ros.simulator import Simulator

    def call(future):
        assert wait_until(future.done, 20, ros_executor)
        return future.result()

    nodes = [
        (Simulator(context=rclpy_context), 'command_timeout', 0.05),
        (ReactionlessControllerNode(context=rclpy_context), 'mode', 'gjm_tracking'),
    ]
    probe = Node('parameter_probe', context=rclpy_context)
    try:
        ros_executor.add_node(probe)
        for node, _, _ in nodes:
            ros_executor.add_node(node)
        for node, dynamic, value in nodes:
            name = node.get_name()
            client = AsyncParameterClient(probe, name)
            assert wait_until(client.services_are_ready, 20, ros_executor)
            before = node.get_parameter(dynamic).value
            results = call(
                client.set_parameters(
                    [
                        Parameter('', value=1.0),
                        Parameter('', value='x'),
                        Parameter('nonexistent', value=1.0),
                        Parameter(' mode', value='x'),
                        Parameter('use_sim_time', value=False),
                        Parameter(dynamic, value=value),
                        Parameter('start_type_description_service', value=False),
                    ]
                )
            ).results
            got = [(r.successful, r.reason) for r in results]
            expected = (
                f'{name}: expected a parameter the node declares (ros2 param list shows '
                'them), got '
            )
            assert got[:4] == [
                (False, expected + "'' (an empty name)"),
                (False, expected + "'' (an empty name)"),
                (False, expected + "'nonexistent'"),
                (False, expected + "' mode' (a name with whitespace or control characters)"),
            ], got
            assert got[4:6] == [(True, ''), (True, '')], got
            # rclpy's own read-only parameter: rclpy's answer, as before
            assert got[6] == (
                False,
                'Trying to set a read-only parameter: start_type_description_service.',
            ), got
            assert node.get_parameter(dynamic).value == value
            # atomically: one undeclared name refuses the whole set
            result = call(
                client.set_parameters_atomically(
                    [Parameter(dynamic, value=before), Parameter('', value=1.0)]
                )
            ).result
            assert not result.successful and result.reason == expected + "'' (an empty name)"
            assert node.get_parameter(dynamic).value == value
            names = call(client.list_parameters()).result.names
            assert '' not in names and 'nonexistent' not in names and dynamic in names
            # in-process: rclpy's exception type (its callers catch it), the same message
            with pytest.raises(UndeclaredParameterError) as info:
                node.set_parameters([Parameter('', value=1.0)])
            assert str(info.value) == expected + "'' (an empty name)"
            assert not node.has_parameter('')
            with pytest.raises(UndeclaredParameterError) as info:
                node.set_parameters([Parameter(dynamic + 's', value=value)])
            assert str(info.value) == expected + f"'{dynamic}s' (did you mean {dynamic}?)"
    finally:
        probe.destroy_node()
        for node, _, _ in nodes:
            node.destroy_node()


def test_wrong_types_and_a_parameter_given_twice_are_refused_by_name(
    rclpy_context, ros_executor, wait_until
) -> None:
    """Over the parameter services: a value of the wrong type is refused with the message of a
    bad start-up value (rclpy's said ``Wrong parameter type, expected '3' got '4'``: no name,
    type codes, no value), for a double, a string and a bool of the tables and for rclpy's
    ``use_sim_time``; an integer for a double is still taken. An atomic set naming a parameter
    twice is refused (only its last value was checked: ``[real_time_factor=nan,
    real_time_factor=1.0]`` was taken and /parameter_events announced nan); a non-atomic one
    is set one parameter at a time by rclpy (the callbacks never see the name twice)."""
    from rclpy.node import Node
    from rclpy.parameter import Parameter
    from rclpy.parameter_client import AsyncParameterClient

    from ffsim_ros.reactionless_controller import ReactionlessControllerNode
    from ffsim_ros.simulator import Simulator

    def call(future):
        assert wait_until(future.done, 20, ros_executor)
        return future.result()

    sim = Simulator(context=rclpy_context)
    ctl = ReactionlessControllerNode(context=rclpy_context)
    probe = Node('parameter_probe', context=rclpy_context)
    try:
        clients = {}
        for node in (probe, sim, ctl):
            ros_executor.add_node(node)
        for node in (sim, ctl):
            clients[node] = AsyncParameterClient(probe, node.get_name())
            assert wait_until(clients[node].services_are_ready, 20, ros_executor)

        def set_one(node, name, value):
            results = call(clients[node].set_parameters([Parameter(name, value=value)])).results
            return results[0].successful, results[0].reason

        for node, name, value, expected in [
            (sim, 'real_time_factor', 'fast', "expected a double, got 'fast' (a string)"),
            (sim, 'real_time_factor', True, 'expected a double, got True (a bool)'),
            (sim, 'command_timeout', [0.5], 'expected a double, got [0.5] (an array of double)'),
            (sim, 'use_sim_time', 1.0, 'expected a bool, got 1.0 (a double)'),
            (ctl, 'mode', 1, 'expected a string, got 1 (an integer)'),
            (ctl, 'trajectory.reactionless', 'true', "expected a bool, got 'true' (a string)"),
        ]:
            before = node.get_parameter(name).value
            assert set_one(node, name, value) == (False, f'{name}: {expected}'), (name, value)
            assert node.get_parameter(name).value == before
        # a read-only parameter: rclpy's answer (read-only before the type, as rclpy checks)
        assert set_one(sim, 'integrator', 5) == (
            False,
            'Trying to set a read-only parameter: integrator.',
        )
        assert set_one(sim, 'real_time_factor', 2) == (True, '')  # an integer for a double
        value = sim.get_parameter('real_time_factor')
        assert value.type_ is Parameter.Type.DOUBLE and value.value == 2.0
        # a parameter twice in one atomic set: refused, nothing changes
        for node, first, last in [
            (sim, ('real_time_factor', float('nan')), ('real_time_factor', 1.0)),
            (sim, ('real_time_factor', 1.0), ('real_time_factor', float('nan'))),
            (ctl, ('mode', 'bad'), ('mode', 'reactionless')),
            (ctl, ('use_sim_time', False), ('use_sim_time', False)),
        ]:
            name = first[0]
            before = node.get_parameter(name).value
            params = [Parameter(first[0], value=first[1]), Parameter(last[0], value=last[1])]
            result = call(clients[node].set_parameters_atomically(params)).result
            assert (result.successful, result.reason) == (
                False,
                f'{name}: given twice in one set',
            ), (first, last)
            assert node.get_parameter(name).value == before
        # non-atomic: one set per parameter, each checked (rclpy's parameter service)
        params = [
            Parameter('real_time_factor', value=float('nan')),
            Parameter('real_time_factor', value=3.0),
        ]
        results = call(clients[sim].set_parameters(params)).results
        assert [r.successful for r in results] == [False, True], results
        assert sim.get_parameter('real_time_factor').value == 3.0
    finally:
        probe.destroy_node()
        sim.destroy_node()
        ctl.destroy_node()


def test_controller_logs_every_parameter_change(rclpy_context, capfd) -> None:
    """Each accepted change is logged at once: quick mode switches were throttled to one line
    a second, so the last line named a mode no longer in force."""
    from rclpy.parameter import Parameter

    from ffsim_ros.reactionless_controller import ReactionlessControllerNode

    node = ReactionlessControllerNode(context=rclpy_context)
    try:
        capfd.readouterr()
        for mode in ('gjm_tracking', 'joint_pd', 'reactionless', 'joint_pd'):
            assert node.set_parameters([Parameter('mode', value=mode)])[0].successful
        assert (
            node.set_parameters_atomically(
                [Parameter('trajectory.reactionless', value=True), Parameter('mode', value='pd')]
            ).successful
            is False
        )
        assert node.set_parameters([Parameter('trajectory.reactionless', value=True)])[
            0
        ].successful
        logged = capfd.readouterr().err.splitlines()
        modes = [line.split('mode -> ', 1)[1] for line in logged if 'mode -> ' in line]
        assert modes == ['gjm_tracking', 'joint_pd', 'reactionless', 'joint_pd'], logged
        assert any('trajectory.reactionless -> True' in line for line in logged), logged
        assert node.law.mode.value == 'joint_pd'
    finally:
        node.destroy_node()


def test_controller_rejects_an_unknown_ee_link(rclpy_context) -> None:
    from rclpy.parameter import Parameter

    from ffsim_ros.node_support import ParameterValueError
    from ffsim_ros.reactionless_controller import ReactionlessControllerNode

    with pytest.raises(ParameterValueError, match="^ee_link: expected one of .*got 'tool0'"):
        ReactionlessControllerNode(
            context=rclpy_context, parameter_overrides=[Parameter('ee_link', value='tool0')]
        )
    # a link on the base body: no joint moves it, every goal would be unreachable
    with pytest.raises(
        ParameterValueError,
        match=r"^ee_link: expected a link the joints move \(one of \[.*'ee_link'.*\]\), got "
        "'base_link' on the base body",
    ):
        ReactionlessControllerNode(
            context=rclpy_context, parameter_overrides=[Parameter('ee_link', value='base_link')]
        )


def test_controller_reach_parameters_set_the_supervisor(rclpy_context) -> None:
    """``reach.*`` (doubles and the integer search counts) reach the supervisor's settings;
    the defaults are ReachSettings' own."""
    from rclpy.parameter import Parameter

    from ffsim_ros.control import ReachSettings
    from ffsim_ros.reactionless_controller import ReactionlessControllerNode

    defaults = ReachSettings()
    node = ReactionlessControllerNode(context=rclpy_context)
    try:
        s = node.supervisor.settings
        assert (s.max_plans, s.max_loop_plans) == (defaults.max_plans, defaults.max_loop_plans)
        assert node.get_parameter('reach.max_loop_plans').type_ == Parameter.Type.INTEGER
    finally:
        node.destroy_node()
    overrides = [
        Parameter('reach.max_plans', value=0),
        Parameter('reach.max_loop_plans', value=7),
        Parameter('reach.stall_time', value=3),  # an integer where a double is meant
    ]
    node = ReactionlessControllerNode(context=rclpy_context, parameter_overrides=overrides)
    try:
        s = node.supervisor.settings
        assert (s.max_plans, s.max_loop_plans, s.stall_time) == (0, 7, 3.0)
        assert type(s.stall_time) is float and type(s.max_loop_plans) is int
    finally:
        node.destroy_node()


def test_robot_file_is_read_safely(tmp_path: Path) -> None:
    """A regular text file of at most the cap, opened without blocking, decoded as an XML
    parser would (a byte-order mark, else the declared encoding, else UTF-8): /dev/zero, a
    FIFO (no writer: it would block), a directory, a binary, an undeclared non-UTF-8, an
    unknown encoding or a too large file is a clear error naming robot_file, never a hang or a
    memory blow-up."""
    import codecs
    import os
    import xml.etree.ElementTree as ET

    from ffsim_ros.node_support import ParameterValueError, read_robot_file

    good = tmp_path / 'robot.urdf'
    good.write_text('<robot name="caf\u00e9"/>', encoding='utf-8')
    assert read_robot_file(str(good)) == '<robot name="caf\u00e9"/>'
    link = tmp_path / 'link.urdf'
    link.symlink_to(good)  # a link to a regular file is that file
    assert read_robot_file(str(link)) == good.read_text(encoding='utf-8')
    fifo = tmp_path / 'fifo'
    os.mkfifo(fifo)
    big = tmp_path / 'big.urdf'
    big.write_text('<robot name="r"/>' + ' ' * 100)
    binary = tmp_path / 'robot.bin'
    binary.write_bytes(b'<robot>\x00\x01</robot>')
    latin = tmp_path / 'latin.urdf'
    latin.write_bytes('<robot name="caf\u00e9"/>'.encode('latin-1'))
    # declared or marked encodings: the text the XML parser reads from the same bytes
    declared = '<?xml version="1.0" encoding="ISO-8859-1"?>\n<robot name="caf\u00e9"/>'
    for name, data in (
        ('declared.urdf', declared.encode('latin-1')),
        ('utf16.urdf', declared.replace('ISO-8859-1', 'UTF-16').encode('utf-16')),
        ('bom8.urdf', codecs.BOM_UTF8 + declared.replace('ISO-8859-1', 'UTF-8').encode()),
    ):
        (tmp_path / name).write_bytes(data)
        text = read_robot_file(str(tmp_path / name))
        assert ET.fromstring(text).get('name') == ET.fromstring(data).get('name') == 'caf\u00e9'
    unknown = tmp_path / 'unknown.urdf'
    unknown.write_bytes(b'<?xml version="1.0" encoding="no-such-codec"?><robot name="r"/>')
    wrong = tmp_path / 'wrong.urdf'  # declared ASCII, a byte beyond it
    wrong.write_bytes('<?xml version="1.0" encoding="ascii"?><robot name="\u00e9"/>'.encode())
    for path, cap, text in (
        ('/dev/zero', 1 << 24, r"expected a regular file, got '/dev/zero' \(a character device\)"),
        (str(fifo), 1 << 24, r"expected a regular file, got '.*fifo' \(a FIFO\)"),
        (str(tmp_path), 1 << 24, r"expected a regular file, got '.*' \(a directory\)"),
        (str(big), 100, r'expected at most 100 bytes, got .* of 117 bytes'),
        (str(binary), 1 << 24, r'expected a URDF \(XML text\), got binary data'),
        (
            str(latin),
            1 << 24,
            r'expected a URDF \(XML text in UTF-8 or the encoding it declares\), .* '
            r'non-UTF-8 byte at offset 16',
        ),
        (str(unknown), 1 << 24, r".* declaring encoding 'no-such-codec'"),
        (str(wrong), 1 << 24, r'.*wrong.urdf.* with a non-ascii byte at offset 51'),
        (str(tmp_path / 'missing.urdf'), 1 << 24, "cannot read '.*missing.urdf': No such file"),
    ):
        with pytest.raises(ParameterValueError, match=f'^robot_file: {text}'):
            read_robot_file(path, cap)


def test_log_throttle_one_line_a_second_per_kind(monkeypatch) -> None:
    """Kinds are the text with numbers and quoted strings masked: a flood of one kind gives
    one line per period with the count held back; another kind gets its own line; the kinds
    remembered are bounded."""
    from ffsim_ros.node_support import LogThrottle, common

    now = [100.0]
    monkeypatch.setattr(common.time, 'monotonic', lambda: now[0])
    throttle = LogThrottle(period=1.0, max_kinds=3)
    nan_goal = 'ee_goal rejected (goal: expected 3 finite coordinates, got [nan 0. {}])'
    frame = "ee_goal rejected (expected frame_id 'world', got '{}')"
    assert throttle.admit(nan_goal.format(1)) == nan_goal.format(1)
    assert throttle.admit(frame.format('base_link')) == frame.format('base_link')  # other kind
    assert all(throttle.admit(nan_goal.format(k)) is None for k in range(2, 100))
    assert throttle.admit(frame.format('map')) is None
    now[0] += 1.0
    assert throttle.admit(nan_goal.format(-3.5e-2)) == (
        nan_goal.format(-3.5e-2) + ' (98 more like it not shown)'
    )
    assert throttle.admit(frame.format('x')) == frame.format('x') + ' (1 more like it not shown)'
    for k in range(10):  # distinct kinds beyond the bound: the oldest are forgotten
        throttle.admit(f'kind {"x" * k}')
    assert len(throttle._kinds) == 3
    # names holding both quotes (repr escapes one) are masked too, and distinct kinds are
    # capped per period whatever the masking; very long lines are cut
    now[0] += 10.0
    throttle = LogThrottle(period=1.0, max_kinds=64, max_lines=4, max_chars=100)
    quoted = [
        throttle.admit(f'unknown joint {"a" + chr(39) + "b" + chr(34) + str(k)!r}')
        for k in range(50)
    ]
    assert sum(line is not None for line in quoted) == 1
    kinds = [throttle.admit(f'kind {"x" * k}: y') for k in range(50)]
    assert sum(line is not None for line in kinds) == 3  # 4 lines a period in all
    now[0] += 1.0
    held = f'kind {"x" * 10}: y'  # held back by the cap: counted, shown with its count
    assert throttle.admit(held) == held + ' (1 more like it not shown)'
    long = throttle.admit('z' * 1000)
    assert long == 'z' * 100 + '... (900 more characters)'


def test_parameter_types_are_coerced_or_refused() -> None:
    from ffsim_ros.node_support import ParameterSpec, ParameterValueError, unit_quaternion

    rate = ParameterSpec('rate', 1.0, 'a rate')
    assert rate.coerce(500) == 500.0 and type(rate.coerce(500)) is float
    for bad, message in (
        (True, 'rate: expected a double, got True (a bool)'),
        ('5', "rate: expected a double, got '5' (a string)"),
        ([1.0], 'rate: expected a double, got [1.0] (an array of double)'),
    ):
        with pytest.raises(ParameterValueError) as info:
            rate.coerce(bad)
        assert str(info.value) == message
    vector = ParameterSpec('v', [0.0], 'a vector')
    assert vector.coerce([1, 2.5]) == [1.0, 2.5] and vector.coerce(None) == []
    with pytest.raises(ParameterValueError, match=r'^v: expected an array of doubles'):
        vector.coerce(['a'])
    flag = ParameterSpec('flag', False, 'a flag')
    with pytest.raises(ParameterValueError, match=r'^flag: expected a bool, got 1 \(an integer\)'):
        flag.coerce(1)
    name = ParameterSpec('name', 'x', 'a name')
    with pytest.raises(ParameterValueError, match=r'^name: expected a string, got 5'):
        name.coerce(5)
    quaternion = unit_quaternion()
    assert quaternion.test([0.0, 0.0, 0.70710678, 0.70710678]) == pytest.approx(
        [0.0, 0.0, 2**-0.5, 2**-0.5], abs=1e-15
    )
    for bad in ([0.0] * 4, [1.0, 1.0, 0.0, 0.0], [0.0, 0.0, 1.0], [float('nan'), 0, 0, 1]):
        with pytest.raises(ValueError, match='expected a unit quaternion'):
            quaternion.test(bad)


def test_joint_state_values_refuse_a_bad_message_whole() -> None:
    """A ``joint_states`` message read in joint order (others ignored, no velocity: 0) or
    refused whole, naming the joints without a position and the non-finite values."""
    from ffsim_ros.node_support.state_messages import joint_state_values

    joints = ('a', 'b', 'c')
    pos, vel = joint_state_values(joints, ['c', 'x', 'a', 'b'], [3.0, 9.0, 1.0, 2.0], [0.3])
    assert pos.tolist() == [1.0, 2.0, 3.0] and vel.tolist() == [0.0, 0.0, 0.3]
    for names, positions, velocities, text in (
        (['a', 'b'], [1.0, 2.0], [], "no position for ['c']"),
        (['a', 'b', 'c'], [1.0, 2.0], [], "no position for ['c']"),
        (['a', 'b', 'c'], [1.0, float('nan'), 3.0], [], "non-finite values {'b.position': nan}"),
        (['a', 'b', 'c'], [1.0, 2.0, 3.0], [0.0, float('inf')], "{'b.velocity': inf}"),
    ):
        with pytest.raises(ValueError) as info:
            joint_state_values(joints, names, positions, velocities)
        assert text in str(info.value)
        assert str(info.value).startswith(
            "expected a finite position (and velocity, if given) for each joint of ['a', 'b', 'c']"
        )


def test_controller_keeps_its_last_good_joint_state(rclpy_context) -> None:
    """One malformed ``joint_states`` message (a NaN) is logged and ignored: the controller
    keeps the last good state (it used to drop it and stop commanding until the next good
    message), as it does for ``base_odom``."""
    from nav_msgs.msg import Odometry
    from sensor_msgs.msg import JointState

    from ffsim_ros.reactionless_controller import ReactionlessControllerNode

    node = ReactionlessControllerNode(context=rclpy_context)
    try:
        callbacks = {s.topic_name: s.callback for s in node.subscriptions}
        names = list(node.model.joint_names)
        good = JointState(name=names, position=[0.1] * len(names), velocity=[0.0] * len(names))
        odom = Odometry()
        odom.pose.pose.orientation.w = 1.0
        callbacks['/joint_states'](good)
        callbacks['/base_odom'](odom)
        measured = node._measured()
        assert not isinstance(measured, str), measured
        bad = JointState(name=names, position=[float('nan')] * len(names))
        callbacks['/joint_states'](bad)
        again = node._measured()
        assert not isinstance(again, str), again  # still fresh: the last good state
        np.testing.assert_array_equal(again[0], measured[0])
        short = JointState(name=names[:2], position=[0.5, 0.5])  # joints missing: refused
        callbacks['/joint_states'](short)
        np.testing.assert_array_equal(node._measured()[0], measured[0])
    finally:
        node.destroy_node()


def test_state_pairing_gives_one_instant_where_the_stamps_allow() -> None:
    """Joints and base of the same stamp are paired even when a newer message of one stream
    has come (a control update between a simulator's two publishes); streams with no stamp
    in common (two publishers at their own rates) give the newest of each."""
    from ffsim_ros.node_support.state_pairing import StatePairing

    pairing: StatePairing[str] = StatePairing(depth=4)
    assert pairing.latest() == (None, None)
    pairing.add_joints(10, 'j10')
    assert pairing.latest() == ('j10', None)
    pairing.add_base(10, 'b10')
    pairing.add_joints(20, 'j20')  # its base not yet received
    assert pairing.latest() == ('j10', 'b10')
    pairing.add_base(20, 'b20')
    assert pairing.latest() == ('j20', 'b20')
    pairing.add_base(30, 'b30')  # the base first, this time
    assert pairing.latest() == ('j20', 'b20')
    assert pairing.latest_stamped() == ('j20', 'b20', 20)  # the stamp of the pair
    pairing.clear_base()
    assert pairing.latest() == ('j20', None)
    for k in range(5):  # other stamps: the newest of each; the old pair has left the window
        pairing.add_joints(41 + 10 * k, f'j{41 + 10 * k}')
        pairing.add_base(45 + 10 * k, f'b{45 + 10 * k}')
    assert pairing.latest() == ('j81', 'b85')
    assert pairing.latest_stamped() == ('j81', 'b85', 81)  # (the joints' stamp)
    pairing.add_base(81, 'b81')
    assert pairing.latest_stamped() == ('j81', 'b81', 81)
    pairing.clear_joints()
    assert pairing.latest_stamped() == (None, 'b81', None)
    pairing.clear()
    assert pairing.latest() == (None, None)
    with pytest.raises(ValueError, match='depth: expected an integer >= 1, got 0'):
        StatePairing(depth=0)


def test_controller_pairs_joints_and_base_of_one_instant(rclpy_context) -> None:
    """The controller's measured state is the joints and base of one stamp: a newer
    ``joint_states`` whose ``base_odom`` has not come yet does not join the older base (the
    momentum of such a mix is not the robot's: a probe at real-time factor 4 saw |P| 0.07 on
    a robot at rest)."""
    from nav_msgs.msg import Odometry
    from sensor_msgs.msg import JointState

    from ffsim_ros.node_support import to_stamp
    from ffsim_ros.reactionless_controller import ReactionlessControllerNode

    node = ReactionlessControllerNode(context=rclpy_context)
    try:
        callbacks = {s.topic_name: s.callback for s in node.subscriptions}
        names = list(node.model.joint_names)

        def joints(stamp_ns: int, value: float) -> JointState:
            msg = JointState(name=names, position=[value] * len(names))
            msg.velocity = [0.0] * len(names)
            msg.header.stamp = to_stamp(stamp_ns)
            return msg

        odom = Odometry()
        odom.pose.pose.orientation.w = 1.0
        odom.header.stamp = to_stamp(10_000_000)
        callbacks['/joint_states'](joints(10_000_000, 0.1))
        callbacks['/base_odom'](odom)
        callbacks['/joint_states'](joints(20_000_000, 0.1001))  # its base_odom still to come
        q, _ = node._measured()
        np.testing.assert_array_equal(q[7:], 0.1)  # the joints of the base's instant
        odom.header.stamp = to_stamp(20_000_000)
        callbacks['/base_odom'](odom)
        q, _ = node._measured()
        np.testing.assert_array_equal(q[7:], 0.1001)
        # updates more than 2.5 periods apart on the node clock are late; warned about when
        # 3 of the last 20 were (a persistent overload, not a start-up hiccup)
        period = int(node.control_period * 1e9)
        warned: list[str] = []

        class Logger:
            def warning(self, text: str, **_: object) -> None:
                warned.append(text)

        node.get_logger = Logger  # type: ignore[method-assign]
        late = [node._check_period(t) for t in (0, period, 2 * period, 5 * period, 6 * period)]
        assert late == [False, False, False, True, False] and warned == []
        node._check_period(9 * period)
        assert warned == []
        node._check_period(12 * period)
        assert len(warned) == 1 and 'control update' in warned[0]
    finally:
        node.destroy_node()


def test_ee_pose_stamp_of_the_state_and_a_negative_stamp_survived(rclpy_context) -> None:
    """ee_pose carries the stamp of the measured state it was computed from; a state stamped
    before the epoch (some other publisher's) made building that stamp raise inside the
    control update and end the node (exit 1): such a pose is stamped with the update's time."""
    from builtin_interfaces.msg import Time as TimeMsg
    from nav_msgs.msg import Odometry
    from sensor_msgs.msg import JointState

    from ffsim_ros.node_support.common import stamp_ns
    from ffsim_ros.reactionless_controller import ReactionlessControllerNode

    node = ReactionlessControllerNode(context=rclpy_context)
    try:
        callbacks = {s.topic_name: s.callback for s in node.subscriptions}
        names = list(node.model.joint_names)
        poses: list = []
        node.pub_pose.publish = poses.append  # type: ignore[method-assign]
        for stamp in (TimeMsg(sec=-3, nanosec=0), TimeMsg(sec=7, nanosec=5_000_000)):
            joints = JointState(name=names, position=[0.1] * len(names))
            joints.velocity = [0.0] * len(names)
            joints.header.stamp = stamp
            odom = Odometry()
            odom.pose.pose.orientation.w = 1.0
            odom.header.stamp = stamp
            callbacks['/joint_states'](joints)
            callbacks['/base_odom'](odom)
            before = node.get_clock().now().nanoseconds
            node._on_timer()
            got = stamp_ns(poses[-1].header.stamp)
            if stamp.sec >= 0:
                assert got == stamp_ns(stamp)
            else:
                assert got >= before
    finally:
        node.destroy_node()


def test_a_jump_ends_the_goal_as_aborted_and_only_close_messages_are_compared(
    rclpy_context,
) -> None:
    """A jump of the measured state drops the ee_goal as *aborted* with the reason (it used to
    go back to 'none', the reason empty); two messages more than ``JUMP_WINDOW`` apart (a
    stalled executor) are not compared, since the arm's own motion then reads as a jump."""
    from ffsim_ros.control import GoalOutcome
    from ffsim_ros.reactionless_controller import JUMP_WINDOW, ReactionlessControllerNode

    node = ReactionlessControllerNode(context=rclpy_context)
    try:
        model = node.model
        q = D.neutral(model)
        goal = D.link_pose(model, q, 'ee_link')[0] + np.array([0.05, 0.0, 0.05])
        node.supervisor.set_goal(0.0, q, goal)
        assert node.supervisor.status.outcome is GoalOutcome.ACTIVE
        jumps, rest = node._jumps, np.zeros(model.n)
        assert jumps.joints(1.0, rest, rest) is None  # (nothing to compare with)
        assert jumps.joints(1.0 + 2 * JUMP_WINDOW, rest + 0.5, rest) is None
        assert jumps.joints(1.01 + 2 * JUMP_WINDOW, rest, rest) == (
            'joint_states jumped by 0.5 (jump_threshold 0.1)'
        )
        assert node.supervisor.status.outcome is GoalOutcome.ACTIVE
        node._on_jump('joint_states jumped by 0.5 (jump_threshold 0.1)', 1_010_000_000)
        status = node.supervisor.status
        assert status.outcome is GoalOutcome.ABORTED
        assert status.reason.startswith('dropped: joint_states jumped by 0.5'), status.reason
        out, after = node.supervisor.update(1.02, q, np.zeros(model.nv))
        assert after.outcome is GoalOutcome.ABORTED and after.reason == status.reason
        # stamps back: always a jump
        assert jumps.joints(0.5, rest, rest).startswith('joint_states stamps went back')
    finally:
        node.destroy_node()


@pytest.mark.parametrize('shut_down', [True, False])
def test_run_node_exit_status_when_a_callback_fails(
    shut_down: bool, ros_domain_id: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A callback failing because Ctrl-C shut the context down under it (rcl's "context is
    invalid") is the shutdown asked for: exit 0, nothing printed; the same failure with the
    context alive is a bug: exit 1 with the traceback."""
    import rclpy
    from rclpy.node import Node

    from ffsim_ros.node_support.common import EXIT_FATAL, run_node

    monkeypatch.setenv('ROS_DOMAIN_ID', str(ros_domain_id))
    monkeypatch.setenv('ROS_AUTOMATIC_DISCOVERY_RANGE', 'LOCALHOST')

    def factory() -> Node:
        node = Node('exit_status_probe')

        def tick() -> None:
            if shut_down:
                rclpy.shutdown()  # what the SIGINT handler does
            raise RuntimeError("publisher's context is invalid")

        node.create_timer(0.01, tick)
        return node

    saved = {signum: signal.getsignal(signum) for signum in (signal.SIGINT, signal.SIGTERM)}
    try:  # (a failing node leaves the signals ignored: the process is exiting)
        assert run_node(factory, 'probe', args=[]) == (0 if shut_down else EXIT_FATAL)
    finally:
        for signum, handler in saved.items():
            signal.signal(signum, handler)


def test_initial_joints_beyond_their_limits_are_named() -> None:
    """Some URDFs' zero lies outside a joint's range (Kinova's j2s6s200_joint_2: 0.82..5.46
    rad): the simulator names such joints at start (a warning) so that a controller that
    then refuses to drive them farther out is not a mystery."""
    from ffsim_ros.node_support.initial_state import outside_limits

    model = D.load_urdf(sample_robot('ffsim_servicer_7dof'))
    q = D.neutral(model)
    assert outside_limits(model, q) == ''
    q[7 + 1] = model.upper[1] + 0.5
    q[7 + 3] = model.lower[3] - 0.25
    text = outside_limits(model, q)
    names = model.joint_names
    assert text == (
        f'{names[1]} = {q[8]:g} ({model.lower[1]:g}..{model.upper[1]:g}), '
        f'{names[3]} = {q[10]:g} ({model.lower[3]:g}..{model.upper[3]:g})'
    )


def test_controller_names_are_checked_before_rclpy_sees_them(rclpy_context) -> None:
    """``capture.grasp_service`` is checked as a ROS service name by its parameter check,
    whatever ``capture.scenario`` is: a bad one is a ParameterValueError naming it (exit code
    2), where rclpy's InvalidServiceNameException used to abort the node (exit code 134)."""
    from rclpy.parameter import Parameter

    from ffsim_ros.node_support import ParameterValueError
    from ffsim_ros.reactionless_controller import PARAMETERS, ReactionlessControllerNode

    spec = PARAMETERS['capture.grasp_service']
    for good in ('/ffsim_simulator/grasp', 'grasp', '~/grasp', '/robot_2/ffsim_simulator/grasp'):
        assert spec.validate(good) == good
    for bad, why in (
        ('not a name!', 'must not contain characters other than alphanumerics'),
        ('', 'must not be empty'),
        ('/ffsim_simulator/', 'must not end with a forward slash'),
        ('/sim/2grasp', 'must not start with a number'),
        ('{robot}/grasp', 'unknown substitution'),
    ):
        with pytest.raises(ParameterValueError) as info:
            spec.validate(bad)
        text = str(info.value)
        assert text.startswith(
            f'capture.grasp_service: expected a ROS service name (letters, digits, _ / ~ {{}}; '
            f'tokens not starting with a digit), got {bad!r} ('
        ), text
        assert why in text and '\n' not in text, text
    for scenario in ('', 'capture'):
        with pytest.raises(ParameterValueError, match=r"^capture.grasp_service: .*'not a name!'"):
            ReactionlessControllerNode(
                context=rclpy_context,
                parameter_overrides=[
                    Parameter('capture.scenario', value=scenario),
                    Parameter('capture.grasp_service', value='not a name!'),
                ],
            )


def test_a_failed_start_stops_the_action_thread(rclpy_context, monkeypatch) -> None:
    """A constructor failing after the action's thread started stops that thread before
    raising: left spinning, it aborted the interpreter at exit ("terminate called without an
    active exception", exit code 134) instead of the error's exit code."""
    import threading

    from rclpy.parameter import Parameter

    from ffsim_ros import reactionless_controller

    def spinning() -> int:
        return sum(
            t.name == 'follow_joint_trajectory' and t.is_alive() for t in threading.enumerate()
        )

    def fail(*_, **__):
        raise RuntimeError('capture interfaces failed')

    before = spinning()
    monkeypatch.setattr(reactionless_controller, 'CaptureInterfaces', fail)
    with pytest.raises(RuntimeError, match='capture interfaces failed'):
        reactionless_controller.ReactionlessControllerNode(
            context=rclpy_context,
            parameter_overrides=[Parameter('capture.scenario', value='capture')],
        )
    assert spinning() == before


def test_an_ee_goal_without_fresh_state_is_rejected_at_once(rclpy_context) -> None:
    """An ``ee_goal`` received with no fresh ``joint_states``/``base_odom`` (no simulator yet)
    is rejected at once on ``goal_status``; it used to be kept silently and carried out when a
    simulator appeared seconds later. With fresh state it waits for the next update with
    fresh state, which accepts it."""
    from geometry_msgs.msg import PoseStamped
    from nav_msgs.msg import Odometry
    from sensor_msgs.msg import JointState

    from ffsim_ros.control import GoalOutcome
    from ffsim_ros.reactionless_controller import ReactionlessControllerNode

    node = ReactionlessControllerNode(context=rclpy_context)
    try:
        published: list = []
        node.goal_status.publisher.publish = published.append  # type: ignore[method-assign]
        callbacks = {s.topic_name: s.callback for s in node.subscriptions}

        def goal(offset: float) -> PoseStamped:
            q = node._measured()
            q = D.neutral(node.model) if isinstance(q, str) else q[0]
            p = D.link_pose(node.model, q, 'ee_link')[0] + [offset, 0.0, 0.0]
            msg = PoseStamped()
            msg.header.frame_id = 'world'
            msg.pose.position.x, msg.pose.position.y, msg.pose.position.z = p.tolist()
            msg.pose.orientation.w = 1.0
            return msg

        callbacks['/ee_goal'](goal(0.03))
        status = node.supervisor.status
        assert node._pending_goal is None
        assert status.outcome is GoalOutcome.ABORTED and status.goal_id == 1
        assert status.reason.startswith(
            'rejected: no fresh joint_states (none since the start or the last jump; no '
            'publisher on /joint_states) and base_odom (none since the start or the last jump; '
            'no publisher on /base_odom) at '
        ), status.reason
        assert status.reason.endswith('no state to start the goal from'), status.reason
        assert len(published) == 1 and 'aborted (stopped): rejected: no fresh' in (
            published[0].message
        )
        # fresh state: kept for the next update, which accepts it
        names = list(node.model.joint_names)

        def feed() -> None:  # (received now: fresh for state_timeout)
            odom = Odometry()
            odom.pose.pose.orientation.w = 1.0
            callbacks['/joint_states'](
                JointState(name=names, position=[0.1] * len(names), velocity=[0.0] * len(names))
            )
            callbacks['/base_odom'](odom)

        feed()
        accepted = goal(0.03)
        callbacks['/ee_goal'](accepted)
        assert node._pending_goal is accepted and node.supervisor.status.goal_id == 1
        node._on_timer()
        assert node.supervisor.status.outcome is GoalOutcome.ACTIVE
        assert node.supervisor.status.goal_id == 2
        # a goal received with fresh state whose state looks stale at the update (the timer
        # runs before the subscriptions: a lagging clock jumps ahead of the state): kept for
        # the next fresh update, not rejected
        count = len(published)
        later = goal(0.02)
        callbacks['/ee_goal'](later)
        timeout, node.state_timeout_ns = node.state_timeout_ns, -1  # (nothing fresh)
        node._on_timer()
        assert node._pending_goal is later and len(published) == count
        node.state_timeout_ns = timeout
        feed()
        node._on_timer()
        assert node._pending_goal is None and node.supervisor.status.goal_id == 3
        assert node.supervisor.status.outcome is GoalOutcome.ACTIVE
    finally:
        node.destroy_node()


def test_joint_trajectory_is_taken_off_the_control_thread_under_the_node_name(
    rclpy_context,
) -> None:
    """``~/joint_trajectory`` is subscribed on the action's node (its thread converts and
    checks a message, not the control loop's: 20 000 points used to stall the commands for
    0.5 s), under the name the controller node resolves: its remaps still apply."""
    from ffsim_ros.reactionless_controller import ReactionlessControllerNode

    for cli_args, topic in (
        ([], '/ffsim_reactionless_controller/joint_trajectory'),
        (['--ros-args', '-r', '~/joint_trajectory:=/planner/trajectory'], '/planner/trajectory'),
    ):
        node = ReactionlessControllerNode(context=rclpy_context, cli_args=cli_args)
        try:
            subscription = node.trajectories.subscription
            assert subscription.topic_name == topic
            assert subscription in node.trajectories.action_node.subscriptions
            assert all(s.topic_name != topic for s in node.subscriptions)
        finally:
            node.destroy_node()


def test_a_trajectory_goal_ends_without_the_control_loop(rclpy_context) -> None:
    """The control loop ends a FollowJointTrajectory goal only while it runs (fresh state):
    a cancel it does not take within CANCEL_GRACE is completed by the action (it stayed
    CANCELING forever), and a goal whose state stays stale for STALE_ABORT is aborted saying
    so (it waited forever); the loop, running again, drops the ended goal and holds."""
    import threading
    import time
    import uuid

    from control_msgs.action import FollowJointTrajectory
    from nav_msgs.msg import Odometry
    from sensor_msgs.msg import JointState
    from std_msgs.msg import Header
    from trajectory_msgs.msg import JointTrajectoryPoint
    from unique_identifier_msgs.msg import UUID

    from ffsim_ros.node_support import to_stamp
    from ffsim_ros.node_support.trajectory_action import CANCEL_GRACE, STALE_ABORT
    from ffsim_ros.reactionless_controller import ReactionlessControllerNode

    node = ReactionlessControllerNode(context=rclpy_context)
    try:
        callbacks = {s.topic_name: s.callback for s in node.subscriptions}
        names = list(node.model.joint_names)

        def feed() -> None:  # fresh state, as the simulator would send it
            stamp = to_stamp(node.get_clock().now().nanoseconds)
            callbacks['/joint_states'](
                JointState(
                    header=Header(stamp=stamp),
                    name=names,
                    position=[0.0] * len(names),
                    velocity=[0.0] * len(names),
                )
            )
            odom = Odometry()
            odom.header.stamp = stamp
            odom.pose.pose.orientation.w = 1.0
            callbacks['/base_odom'](odom)

        class Handle:  # the goal handle's surface the execute callback uses
            def __init__(self, goal) -> None:
                self.request, self.is_cancel_requested, self.ended = goal, False, None
                self.goal_id = UUID(uuid=list(uuid.uuid4().bytes))

            def abort(self) -> None:
                self.ended = 'aborted'

            def succeed(self) -> None:
                self.ended = 'succeeded'

            def canceled(self) -> None:
                self.ended = 'canceled'

            def publish_feedback(self, feedback) -> None:
                pass

        goal = FollowJointTrajectory.Goal()
        goal.trajectory.joint_names = names
        point = JointTrajectoryPoint(positions=[0.1] * len(names), velocities=[0.0] * len(names))
        point.time_from_start.sec = 5
        goal.trajectory.points = [point]
        # a cancel with no control update to take it
        feed()
        handle = Handle(goal)
        results: dict = {}
        worker = threading.Thread(
            target=lambda: results.setdefault('r', node.trajectories._execute(handle)),
            daemon=True,
        )
        start = time.monotonic()
        worker.start()
        handle.is_cancel_requested = True
        worker.join(timeout=10 * CANCEL_GRACE)
        assert handle.ended == 'canceled', handle.ended
        assert results['r'].error_code == 0 and 'canceled while' in results['r'].error_string
        assert time.monotonic() - start >= CANCEL_GRACE
        # state fresh at acceptance, then none: aborted, saying why
        feed()
        handle = Handle(goal)
        worker = threading.Thread(
            target=lambda: results.__setitem__('r', node.trajectories._execute(handle)),
            daemon=True,
        )
        worker.start()
        worker.join(timeout=10 * STALE_ABORT)  # (it waited forever)
        assert handle.ended == 'aborted', handle.ended
        result = results['r']
        assert 'no fresh state for' in result.error_string, result.error_string
        seconds = float(result.error_string.split('no fresh state for ')[1].split(' s')[0])
        assert STALE_ABORT <= seconds < STALE_ABORT + 0.5
        # the loop, with fresh state again, drops the ended goal and holds still
        feed()
        node._on_timer()
        assert node._request is None
    finally:
        node.destroy_node()


@pytest.mark.ros
def test_a_namespaced_capture_calls_its_own_simulator_and_refuses_trajectories(
    rclpy_context,
) -> None:
    """The grasp service's default is relative: a controller in /robot1 calls
    /robot1/ffsim_simulator/grasp (and release), its own simulator's -- the absolute default
    called the root robot's simulator, never its own, and a capture never happened in a
    namespace. A trajectory sent in capture mode is aborted at once saying why (it waited
    for ever: the control loop does not follow trajectories then)."""
    from rclpy.parameter import Parameter

    from ffsim_ros.control.trajectory import JointTrajectory, Tolerances, check_waypoints
    from ffsim_ros.node_support.trajectory_action import TrajectoryRequest
    from ffsim_ros.reactionless_controller import ReactionlessControllerNode

    node = ReactionlessControllerNode(
        context=rclpy_context,
        namespace='robot1',
        parameter_overrides=[Parameter('capture.scenario', value='capture')],
    )
    try:
        assert node.capture.client.service_name == '/robot1/ffsim_simulator/grasp'
        assert node.capture.release_client.service_name == '/robot1/ffsim_simulator/release'
        model = node.model
        phi = np.zeros(model.n)
        waypoints = check_waypoints(model, list(model.joint_names), [1.0], [phi], [[]], [[]], [[]])
        request = TrajectoryRequest(
            JointTrajectory.start(waypoints, 0.0, phi, phi),
            Tolerances.uniform(model.n, 0.0, 0.01, 0.01, 1.0),
        )
        node.submit_trajectory(request)
        assert request.done.is_set() and request.outcome[0] == 'aborted'
        assert 'the capture owns the arm' in request.outcome[2]
    finally:
        node.destroy_node()


def test_capture_mode_refuses_the_parameters_it_does_not_use(rclpy_context, capfd) -> None:
    """With ``capture.scenario`` set the capture law drives the arm: ``mode`` and
    ``trajectory.reactionless`` were taken at run time and did nothing; they are refused
    naming the parameter, alone or atomically, and the start-up line says the node captures
    (it said "controlling ee_link in reactionless mode"). Without a capture they are set."""
    from rclpy.parameter import Parameter

    from ffsim_ros.control import ControlMode
    from ffsim_ros.reactionless_controller import ReactionlessControllerNode

    capfd.readouterr()
    node = ReactionlessControllerNode(
        context=rclpy_context,
        parameter_overrides=[Parameter('capture.scenario', value='capture')],
    )
    try:
        logged = capfd.readouterr().err
        assert "capturing with ee_link (capture.scenario 'capture'; mode and " in logged, logged
        assert 'in reactionless mode' not in logged, logged
        why = (
            ': not used while capture.scenario is set (the capture law drives the arm; ee_goal '
            'and trajectories are not taken)'
        )
        for name, value in (('mode', 'joint_pd'), ('trajectory.reactionless', True)):
            before = node.get_parameter(name).value
            result = node.set_parameters([Parameter(name, value=value)])[0]
            assert (result.successful, result.reason) == (False, name + why)
            assert node.get_parameter(name).value == before
        result = node.set_parameters_atomically(
            [Parameter('trajectory.reactionless', value=True), Parameter('mode', value='pd')]
        )
        assert not result.successful and "got 'pd'" in result.reason  # (checked first)
        assert node.law.mode is ControlMode.REACTIONLESS
        assert node.get_parameter('use_sim_time').value is False
        assert node.set_parameters([Parameter('use_sim_time', value=False)])[0].successful
    finally:
        node.destroy_node()
    node = ReactionlessControllerNode(context=rclpy_context)
    try:
        assert 'controlling ee_link in reactionless mode' in capfd.readouterr().err
        assert node.set_parameters([Parameter('mode', value='joint_pd')])[0].successful
        result = node.set_parameters([Parameter('trajectory.reactionless', value=True)])[0]
        assert result.successful
    finally:
        node.destroy_node()


def test_the_controller_captures_with_the_scenario_gripper(rclpy_context, tmp_path, capfd) -> None:
    """``capture.scenario``: the capture aims the scenario's ``robot.gripper`` point (its link
    and translation: where the simulator checks the envelope), said in the start-up line; it
    drove the ``ee_link`` origin whatever the gripper. A gripper the controlled robot's joints
    do not move, or a number too large for a float, ends the start with a ParameterValueError
    naming ``capture.scenario`` (exit 2)."""
    import yaml
    from rclpy.parameter import Parameter

    from ffsim_ros.node_support import ParameterValueError
    from ffsim_ros.node_support.scene_support import resolve_scenario
    from ffsim_ros.reactionless_controller import ReactionlessControllerNode

    shipped = resolve_scenario('capture')

    def scenario(change) -> str:
        data = yaml.safe_load(shipped.read_text())
        data['robot']['urdf'] = str((shipped.parent / data['robot']['urdf']).resolve())
        change(data)
        path = tmp_path / 'scenario.yaml'
        path.write_text(yaml.safe_dump(data))
        return str(path)

    path = scenario(
        lambda d: d['robot'].update(gripper={'link': 'ee_link', 'translation': [0.1, 0, 0]})
    )
    capfd.readouterr()
    node = ReactionlessControllerNode(
        context=rclpy_context, parameter_overrides=[Parameter('capture.scenario', value=path)]
    )
    try:
        control = node.capture.control
        assert control.gripper_link == 'ee_link'
        np.testing.assert_array_equal(control.gripper_offset, [0.1, 0.0, 0.0])
        assert 'capturing with ee_link + [0.1, 0.0, 0.0] m (capture.scenario' in (
            capfd.readouterr().err
        )
    finally:
        node.destroy_node()
    for change, text in (
        (lambda d: d['robot']['gripper'].update(link='base_link'), 'robot.gripper.link: expected'),
        (lambda d: d['targets'][0].update(mass=10**400), 'targets[0].mass: expected a finite'),
    ):
        path = scenario(change)
        with pytest.raises(ParameterValueError) as info:
            ReactionlessControllerNode(
                context=rclpy_context,
                parameter_overrides=[Parameter('capture.scenario', value=path)],
            )
        assert str(info.value).startswith(f'capture.scenario: capture.scenario {path!r}: ')
        assert text in str(info.value), str(info.value)


def _start_values(rate: float, twist: list[float], rates: list[float]) -> dict:
    """The simulator's ``initial_*`` parameter values (and those ``initial_state`` reads)."""
    return {
        'physics_rate_hz': rate,
        'integrator': 'rk4',
        'position_limits': False,
        'velocity_limits': False,
        'initial_joint_positions': [],
        'initial_joint_velocities': rates,
        'initial_base_position': [0.0, 0.0, 0.0],
        'initial_base_orientation': [0.0, 0.0, 0.0, 1.0],
        'initial_base_twist': twist,
    }


def test_a_start_the_physics_step_refuses_is_a_parameter_error() -> None:
    """physics_rate_hz 1 with the base at 4 rad/s: the simulator started, faulted at the first
    step (the base would turn by 4 rad in it, which the step refuses) and ~/reset came back to
    that start. Refused now naming initial_base_twist and physics_rate_hz, the rate allowed and
    the physics rate needed; likewise a ball joint's initial rate (initial_joint_velocities)
    and a closed chain's assembled start. Below pi rad per step the start is taken."""
    from ffsim_ros.dynamics.builder import random_model
    from ffsim_ros.node_support import ParameterValueError
    from ffsim_ros.node_support.initial_state import initial_state

    model = D.load_urdf(sample_robot('ffsim_servicer_7dof'))
    spin = [0.0, 0.0, 0.0, 0.0, 0.0, 4.0]
    with pytest.raises(ParameterValueError) as info:
        initial_state(model, (), _start_values(1.0, spin, []))
    assert str(info.value) == (
        'initial_base_twist: expected the base to turn by less than pi rad per physics step '
        '(the step refuses more), |w| below 3.142 rad/s at physics_rate_hz 1, got |w| = 4 '
        'rad/s (4 rad per step); lower it, or raise physics_rate_hz above 1.273'
    )
    for rate, twist in ((2.0, spin), (1.0, [0.0, 0.0, 0.0, 1.8, 0.0, 2.4])):  # 2, 3 rad a step
        _, _, v0 = initial_state(model, (), _start_values(rate, twist, []))
        assert v0[5] == twist[5]
    ball = random_model(4, 3, joint_types=('spherical', 'revolute'), floating_base=True)
    k = ball.joint_types.index('spherical')
    rates = np.zeros(ball.n)
    rates[ball.idx_v[k] - 6 : ball.idx_v[k] - 3] = [0.0, 4.0, 3.0]  # 5 rad/s
    with pytest.raises(ParameterValueError) as info:
        initial_state(ball, (), _start_values(1.0, [0.0] * 6, rates.tolist()))
    assert str(info.value).startswith(
        f'initial_joint_velocities: expected ball joint {ball.joint_names[k]!r} to turn by less '
        'than pi rad per physics step'
    )
    assert 'got |w| = 5 rad/s (5 rad per step)' in str(info.value)
    initial_state(ball, (), _start_values(2.0, [0.0] * 6, rates.tolist()))  # 2.5 rad a step
    # a closed chain: its assembled start (the floating four-bar)
    from ffsim_ros.dynamics.mufti import samples as S

    c, d = S.FOURBAR['c'], S.FOURBAR['d']
    urdf = S.fourbar_urdf(floating_ground=True)
    urdf = urdf[: urdf.index('</robot>')] + (
        f'<loop name="cut" type="revolute"><predecessor link="rocker"><origin xyz="{c} 0 0"/>'
        f'</predecessor><successor link="ground"><origin xyz="{d} 0 0"/></successor>'
        '<axis xyz="0 0 1"/></loop></robot>'
    )
    fourbar, loops = D.load_urdf(urdf), D.loop_closures_from_urdf(urdf)
    values = _start_values(1.0, spin, [])
    values['initial_joint_positions'] = [1.2, -0.9, -1.5]
    with pytest.raises(ParameterValueError, match='^initial_base_twist: expected the base'):
        initial_state(fourbar, loops, values)
    values['physics_rate_hz'] = 2.0
    chain, _, _ = initial_state(fourbar, loops, values)
    assert chain is not None


@pytest.mark.ros
def test_a_scenario_start_beyond_the_limits_is_warned_naming_the_scenario_field(
    rclpy_context, tmp_path, capfd
) -> None:
    """``position_limits`` off and a scenario's ``robot.joint_positions`` beyond a URDF limit:
    the start-up warning named ``initial_joint_positions``, a parameter the user never set;
    it names the scenario's field now."""
    import yaml
    from rclpy.parameter import Parameter

    from ffsim_ros.node_support.scene_support import resolve_scenario
    from ffsim_ros.simulator import Simulator

    shipped = resolve_scenario('capture')
    data = yaml.safe_load(shipped.read_text())
    data['robot']['urdf'] = str((shipped.parent / data['robot']['urdf']).resolve())
    data['robot']['joint_positions'] = [0.0] * 6 + [100.0]
    path = tmp_path / 'beyond.yaml'
    path.write_text(yaml.safe_dump(data))
    capfd.readouterr()
    node = Simulator(
        context=rclpy_context, parameter_overrides=[Parameter('scenario', value=str(path))]
    )
    try:
        err = capfd.readouterr().err
        assert 'initial joint positions beyond their URDF position limits' in err, err
        assert f"set scenario: '{path}': robot.joint_positions within them" in err, err
    finally:
        node.destroy_node()
