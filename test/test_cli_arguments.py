"""Bad arguments of ``ffsim demo`` and ``ffsim campaign`` end the command at once with exit 2
and a message naming them (argparse's convention), before anything starts: no traceback, no
node started, no hang on a FIFO, no MemoryError on ``/dev/zero``, no minute of Ray retries."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest

from ffsim_ros import cli
from ffsim_ros.campaign.scenario import ScenarioError, read_scenario_file

SCENARIO = """\
name: tiny
robot: ffsim_servicer_7dof
ee_link: ee_link
mode: reactionless
timing: {physics_dt: 0.001, control_dt: 0.01, settle: 0.1, run_goal_timeout: 0.3}
reach: {goal_timeout: 0.2}
goals: {kind: offsets, offsets: [[0.05, 0.0, 0.0]]}
runs: 2
seed: 1
batch_size: 2
"""


@pytest.fixture
def nothing_starts(monkeypatch):
    """Fail the test if the demo gets as far as leasing a domain or running a scenario."""

    def started(*args, **kwargs):
        raise AssertionError('the demo started despite a bad argument')

    monkeypatch.setattr(cli, 'DomainLease', started)
    monkeypatch.setattr(cli, 'run_mode', started)
    import ffsim_ros.capture_demo

    monkeypatch.setattr(ffsim_ros.capture_demo, 'run_demo', started)


def demo_error(argv: list[str], capsys) -> str:
    with pytest.raises(SystemExit) as exc:
        cli.main(['demo', *argv])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert 'Traceback' not in err
    return err


@pytest.mark.ros
@pytest.mark.parametrize(
    ('argv', 'message'),
    [
        (['--robot', 'nosuch'], "--robot: unknown sample robot 'nosuch'"),
        (['--robot', ''], '--robot: expected a sample robot name or a URDF path'),
        (['--robot', '{tmp}'], '--robot: expected a regular file'),
        (['--robot', '{tmp}/fifo.urdf'], '--robot: expected a regular file'),
        (['--robot', '{tmp}/bad.urdf'], '--robot: expected a URDF (XML), got malformed XML'),
        (
            ['--robot', '{tmp}/dtd.urdf'],
            '--robot: expected XML without a DTD (entity declarations and external DTDs are '
            "refused: URDF uses none), got <!DOCTYPE r [...]> (declarations) in '{tmp}/dtd.urdf'",
        ),
        (
            ['--robot', '{tmp}/sdf.urdf'],  # (the nodes' check, as the launch file's)
            "--robot: expected a URDF with a <robot> root, got <sdf> in '{tmp}/sdf.urdf'",
        ),
        (['--robot', '{tmp}/r.xacro'], '--robot: expected a sample robot name or a .urdf file'),
        (['--rtf', '-1'], '--rtf: expected 0 (as fast as possible) or in [0.001, 1000]'),
        (['--rtf', 'nan'], '--rtf: expected 0'),
        (['--rtf', '1e4'], '--rtf: expected 0'),
        (['--seconds-per-goal', '-5'], '--seconds-per-goal: expected'),
        (['--seconds-per-goal', '0'], '--seconds-per-goal: expected'),
        (['--seconds-per-goal', 'inf'], '--seconds-per-goal: expected'),
        (['--output', '{tmp}/afile'], '--output: expected a folder'),
        (['--output', ''], "--output: expected a folder, got ''"),
        (['--scenario', 'capture', '--output', ''], "--output: expected a folder, got ''"),
        (['--output', '{tmp}/fifo.urdf'], '--output: expected a folder'),
        (['--output', '/proc/ffsim_out'], '--output: cannot create the folder'),
        (['--scenario', 'capture', '--output', '{tmp}/afile'], '--output: expected a folder'),
        (['--scenario', 'capture', '--output', '/proc/x'], '--output: cannot create'),
        (['--scenario', 'capture', '--robot', 'planar_2link'], '--robot: do not apply'),
        (['--scenario', 'capture', '--rtf', '2'], '--rtf: do not apply to --scenario capture'),
        (
            ['--scenario', 'capture', '--seconds-per-goal', '3', '--rtf', '1'],
            '--rtf, --seconds-per-goal: do not apply',
        ),
    ],
)
def test_demo_refuses_bad_arguments_before_starting(
    tmp_path: Path, capsys, nothing_starts, argv, message
) -> None:
    os.mkfifo(tmp_path / 'fifo.urdf')
    (tmp_path / 'afile').write_text('x')
    (tmp_path / 'bad.urdf').write_text('<robot name="r"><link')
    (tmp_path / 'dtd.urdf').write_text('<!DOCTYPE r [<!ENTITY a "1">]><robot name="&a;"/>')
    (tmp_path / 'r.xacro').write_text('<robot name="r"/>')
    (tmp_path / 'sdf.urdf').write_text('<sdf version="1.6"/>')
    argv = [a.replace('{tmp}', str(tmp_path)) for a in argv]
    message = message.replace('{tmp}', str(tmp_path))
    if '--output' not in argv:
        argv += ['--output', str(tmp_path / 'out')]
    assert message in demo_error(argv, capsys)


@pytest.mark.ros
def test_demo_takes_good_arguments(tmp_path: Path, monkeypatch) -> None:
    """The checks let the good values through, with the defaults filled in (0: as fast as
    possible is the simulator's own value)."""
    seen = {}
    monkeypatch.setattr(cli, 'demo', lambda args: seen.update(vars(args)) or 0)
    out = tmp_path / 'a' / 'b'
    assert cli.main(['demo', '--rtf', '0', '--seconds-per-goal', '2', '--output', str(out)]) == 0
    assert seen['robot'] == cli.DEFAULT_ROBOT and seen['rtf'] == 0.0
    assert seen['seconds_per_goal'] == 2.0 and out.is_dir()
    assert seen['robot_text'].lstrip().startswith('<')
    assert cli.main(['demo', '--scenario', 'capture', '--output', str(out)]) == 0


def campaign_error(argv: list[str], capsys) -> str:
    assert cli.main(['campaign', *argv]) == 2
    err = capsys.readouterr().err
    assert 'Traceback' not in err
    return err


def test_campaign_refuses_a_scenario_that_is_not_a_regular_file(tmp_path: Path, capsys) -> None:
    os.mkfifo(tmp_path / 'fifo.yaml')  # read blocking, this would wait for a writer forever
    for path in (str(tmp_path / 'fifo.yaml'), '/dev/zero'):
        assert 'expected a regular file' in campaign_error([path, '--quiet'], capsys)


def test_scenario_file_size_is_bounded(tmp_path: Path) -> None:
    path = tmp_path / 's.yaml'
    path.write_bytes(b'#' * 101)
    with pytest.raises(ScenarioError, match='at most 100 bytes'):
        read_scenario_file(path, max_bytes=100)
    assert read_scenario_file(path, max_bytes=101) == b'#' * 101


def test_campaign_refuses_an_mcap_output_that_is_not_a_regular_file(
    tmp_path: Path, capsys, monkeypatch
) -> None:
    import ffsim_ros.campaign.cli as campaign_cli

    monkeypatch.setattr(campaign_cli, '_replay', lambda *a: pytest.fail('replayed'))
    scenario = tmp_path / 'tiny.yaml'
    scenario.write_text(SCENARIO)
    os.mkfifo(tmp_path / 'fifo.mcap')  # opening it for writing would wait for a reader
    base = [str(scenario), '--output', str(tmp_path / 'o'), '--replay', '0', '--mcap']
    for target, message in (
        (tmp_path / 'fifo.mcap', '--mcap: expected a regular file'),
        (tmp_path, '--mcap: expected a regular file'),
        (tmp_path / 'missing' / 'x.mcap', '--mcap: expected a file in an existing folder'),
    ):
        assert message in campaign_error([*base, str(target)], capsys)


def test_campaign_refuses_an_unreachable_ray_address_at_once(tmp_path: Path, capsys) -> None:
    scenario = tmp_path / 'tiny.yaml'
    scenario.write_text(SCENARIO)
    with socket.socket() as s:  # a port nothing listens on
        s.bind(('127.0.0.1', 0))
        port = s.getsockname()[1]
    base = [str(scenario), '--output', str(tmp_path / 'o'), '--quiet', '--executor', 'ray']
    err = campaign_error([*base, '--address', f'127.0.0.1:{port}'], capsys)
    assert '--address: no Ray cluster reachable' in err
    assert 'expected HOST:PORT' in campaign_error([*base, '--address', 'nohost'], capsys)
    assert not (tmp_path / 'o').exists()
