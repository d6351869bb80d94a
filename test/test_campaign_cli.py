"""The campaign command (issue 20): results table written as runs end, resume, summary, bad
files (exit 2), the Ray executor against the local one."""

from __future__ import annotations

import importlib.util
import ipaddress
import math
import os
import sys
from pathlib import Path

import numpy as np
import pytest
from campaign_samples import TINY, interrupted_campaign

import ffsim_ros.dynamics as D
from ffsim_ros.campaign.batch import BatchRunner, Campaign
from ffsim_ros.campaign.cli import main
from ffsim_ros.campaign.executors import run_ray
from ffsim_ros.campaign.results import (
    ResultsWriter,
    columns,
    read_parquet,
    read_rows,
    run_row,
    summarize,
    wilson_interval,
)
from ffsim_ros.campaign.scenario import ScenarioError, load_scenario
from ffsim_ros.cli import main as ffsim_main

SCENARIO = """\
robot: ffsim_servicer_7dof
runs: 4
seed: 5
batch_size: 2
timing: {settle: 0.1, run_goal_timeout: 0.8}
goals: {kind: offsets, offsets: [[0.05, 0.03, -0.04]]}
dispersions:
  joint_positions: {dist: uniform, low: -0.05, high: 0.05}
  mass_scale: {dist: normal, mean: 1.0, std: 0.05}
  noise_joint_rate: 1.0e-4
"""


def csv_lines(path):
    return path.read_text().splitlines()


def same_rows(a: list[dict], b: list[dict]) -> bool:
    """Rows equal key by key and value by value, a NaN equal to a NaN (and to nothing else)."""

    def same(x, y):
        return x == y or (isinstance(x, float) and isinstance(y, float) and x != x and y != y)

    return len(a) == len(b) and all(
        list(r) == list(s) and all(same(r[k], s[k]) for k in r) for r, s in zip(a, b, strict=True)
    )


def test_cli_writes_resumes_and_summarizes(tmp_path, capsys):
    file = tmp_path / 'short.yaml'
    file.write_text(SCENARIO)
    out = tmp_path / 'out'
    assert main([str(file), '--output', str(out), '--quiet', '--no-plots']) == 0
    lines = csv_lines(out / 'runs.csv')
    assert len(lines) == 5
    rows = read_rows(out)
    assert [r['run'] for r in rows] == [0, 1, 2, 3]
    # each row is the run's result (a run alone gives the same bits as in a batch)
    c = Campaign(load_scenario(file))
    assert lines[0].split(',') == columns(c)
    alone = run_row(next(iter(BatchRunner(c, [2], batch_size=1))))
    row = next(r for r in rows if r['run'] == 2)
    for key in ('final_error', 'max_attitude_change_deg', 'in.mass_scale.base_link'):
        assert row[key] == alone[key]
    # the summary counts what the table holds
    n_ok = sum(int(r['reached']) for r in rows)
    text = (out / 'summary.md').read_text()
    assert f'4 runs (ffsim_servicer_7dof, reactionless, seed 5): {n_ok} reached' in text
    # interrupted after two rows: the run again does only the missing runs, same rows
    by_run = {int(x.split(',')[0]): x for x in lines[1:]}
    (out / 'runs.csv').write_text('\n'.join(lines[:3]) + '\n')
    assert main([str(file), '--output', str(out), '--quiet', '--no-plots']) == 0
    again = csv_lines(out / 'runs.csv')
    assert again[:3] == lines[:3] and len(again) == 5
    assert {int(x.split(',')[0]): x for x in again[1:]} == by_run
    # a row cut off mid-write (no line end): dropped, its run done again, the table sound
    text = (out / 'runs.csv').read_bytes()
    (out / 'runs.csv').write_bytes(text[: -len(lines[-1]) // 2 - 2])
    assert main([str(file), '--output', str(out), '--quiet', '--no-plots']) == 0
    assert {int(x.split(',')[0]): x for x in csv_lines(out / 'runs.csv')[1:]} == by_run
    assert len(read_rows(out)) == 4
    again = csv_lines(out / 'runs.csv')
    # more runs extend the campaign
    assert main([str(file), '--output', str(out), '--quiet', '--no-plots', '--runs', '5']) == 0
    extended = csv_lines(out / 'runs.csv')
    assert extended[:5] == again and len(extended) == 6
    # another scenario in that folder is refused
    file.write_text(SCENARIO.replace('seed: 5', 'seed: 6'))
    capsys.readouterr()
    assert main([str(file), '--output', str(out), '--quiet', '--no-plots']) == 2
    assert 'holds the results of another scenario' in capsys.readouterr().err


@pytest.mark.parametrize(
    ('text', 'message'),
    [
        ('robot: ffsim_servicer_7dof\nruns: -1\ngoals: {kind: chained}\n', 'runs: expected'),
        ('robot: nobody\nruns: 2\ngoals: {kind: chained}\n', "unknown sample robot 'nobody'"),
        ('robot: [1\n', 'malformed YAML'),
        (
            'robot: ffsim_servicer_7dof\nruns: 2\nruns: 0\ngoals: {kind: chained}\n',
            "malformed YAML: duplicated key 'runs' (first on line 2)",
        ),
        ('robot: ' + '[' * 5000 + ']' * 5000 + '\n', 'expected at most 100 nesting levels'),
        (
            'robot: ffsim_servicer_7dof\nruns: 2\ngoals: {kind: chained}\ngains: {kp_task: yes}\n',
            'gains.kp_task: expected a finite number, got True (a boolean',
        ),
        (
            'robot: ffsim_servicer_7dof\nruns: 100000000\ngoals: {kind: chained}\n',
            'runs: expected an integer <= 10000000, got 100000000',
        ),
        (
            'robot: ffsim_servicer_7dof\nruns: 2\ngoals: {kind: chained}\n'
            'timing: {physics_dt: 1.0e-9, control_dt: 0.01}\n',
            'timing.physics_dt: expected at least 1e-06 s',
        ),
        (
            'robot: ffsim_servicer_7dof\nruns: 2\ngoals: {kind: chained}\n'
            'initial: {joint_positions: 5}\n',
            'initial.joint_positions: expected a list of joint positions, got 5',
        ),
        (
            'robot: ffsim_servicer_7dof\nruns: 2\ngoals: {kind: chained}\ndispersions:\n'
            '  joint_positions: {dist: uniform, low: 0.5, high: [0, 0, 0, 0, 0, 0, 0]}\n',
            'dispersions.joint_positions: expected low <= high',
        ),
        (b'\xff\xfe robot', 'expected a YAML text file (UTF-8)'),
    ],
)
def test_cli_bad_scenario_exits_2_naming_it(tmp_path, capsys, text, message):
    file = tmp_path / 'bad.yaml'
    if isinstance(text, bytes):
        file.write_bytes(text)
    else:
        file.write_text(text)
    assert main([str(file), '--output', str(tmp_path / 'o'), '--quiet']) == 2
    err = capsys.readouterr().err
    assert err.startswith('ffsim campaign: error:') and message in err
    assert not (tmp_path / 'o' / 'runs.csv').exists()
    assert main([str(tmp_path / 'missing.yaml'), '--quiet']) == 2
    # the same through `ffsim campaign`
    capsys.readouterr()
    assert ffsim_main(['campaign', str(file), '--output', str(tmp_path / 'o'), '--quiet']) == 2
    assert message in capsys.readouterr().err


def test_cli_refusals_of_files_and_runs_that_cannot_start(tmp_path, capsys):
    """A directory as the scenario, an output path under a file: exit 2 naming the path
    (tracebacks before). A run whose drawn inputs are impossible (a scale factor <= 0) is a
    failed run with the reason and the campaign goes on (it stopped with a traceback), its
    summary replacing an earlier one. Chained goals no controller accepts (50-60 m away) fail
    their run with the reason instead of being drawn forever."""
    (tmp_path / 'adir.yaml').mkdir()
    assert main([str(tmp_path / 'adir.yaml'), '--quiet']) == 2
    assert 'adir.yaml: expected a regular file' in capsys.readouterr().err
    file = tmp_path / 'short.yaml'
    file.write_text(SCENARIO)
    (tmp_path / 'afile').write_text('')
    assert main([str(file), '--output', str(tmp_path / 'afile' / 'sub'), '--quiet']) == 2
    assert 'afile' in capsys.readouterr().err
    wide = SCENARIO.replace('runs: 4', 'runs: 40').replace('std: 0.05}', 'std: 0.4}')
    file.write_text(wide)
    out = tmp_path / 'wide'
    out.mkdir()
    (out / 'summary.md').write_text('an old summary')
    assert main([str(file), '--output', str(out), '--quiet', '--no-plots']) == 0
    rows = read_rows(out)
    assert [r['run'] for r in rows] == list(range(40))  # every run has its row
    bad = [r for r in rows if r['failure'].startswith('inputs: dispersions.mass_scale: run')]
    assert bad and all('factors must be > 0' in r['failure'] for r in bad)
    assert all(r['goals'] == 0 and math.isnan(r['in.mass_scale.base_link']) for r in bad)
    # not run: metrics NaN (they were 0.0 and entered the percentiles as real zeros)
    assert all(math.isnan(r['max_base_rate_deg_s']) for r in bad)
    assert all(math.isnan(r['peak_effort_ratio']) for r in bad)
    ran = [r['max_base_rate_deg_s'] for r in rows if r not in bad]
    assert summarize(rows)['percentiles']['max_base_rate_deg_s'][5] == np.percentile(ran, 5)
    assert all(not r['failure'] for r in rows if r not in bad)  # the others ran
    text = (out / 'summary.md').read_text()
    assert f'{len(bad)} failed (non-finite state, controller error or inputs' in text
    far = SCENARIO.replace(
        'goals: {kind: offsets, offsets: [[0.05, 0.03, -0.04]]}',
        'goals: {kind: chained, count: 2, near: 50.0, far: 60.0}',
    ).replace('runs: 4', 'runs: 1')
    file.write_text(far)
    assert main([str(file), '--output', str(tmp_path / 'far'), '--quiet', '--no-plots']) == 0
    (row,) = read_rows(tmp_path / 'far')
    assert row['failure'].startswith('goals.near/far: no goal 50-60 m away accepted')


def test_cli_replay_writes_the_trajectory(tmp_path):
    file = tmp_path / 'short.yaml'
    file.write_text(SCENARIO)
    assert main([str(file), '--output', str(tmp_path), '--replay', '1']) == 0
    data = np.load(tmp_path / 'run_1.npz')
    c = Campaign(load_scenario(file))
    r = next(iter(BatchRunner(c, [1], batch_size=1)))
    np.testing.assert_array_equal(data['q_final'], r.q)
    # the trajectory is at the control rate, its states the loop's
    assert np.allclose(np.diff(data['time']), 0.01)
    assert data['q'].shape == (data['time'].size, c.model.nq)
    assert np.isfinite(data['effort']).all()


def test_cli_replay_writes_an_mcap_of_the_simulator_messages(tmp_path):
    """The replayed run's ROS 2 messages, read back with mcap_ros2: one message per topic per
    instant at its simulated time, joint positions and base pose those of the npz
    trajectory."""
    from mcap.reader import make_reader
    from mcap_ros2.decoder import DecoderFactory

    file = tmp_path / 'short.yaml'
    file.write_text(SCENARIO)
    path = tmp_path / 'run_1.mcap'
    assert main([str(file), '--output', str(tmp_path), '--replay', '1', '--mcap', str(path)]) == 0
    data = np.load(tmp_path / 'run_1.npz')
    c = Campaign(load_scenario(file))
    model = c.model
    t = np.r_[data['time'], data['t_final']]
    q = np.vstack((data['q'], data['q_final']))
    v = np.vstack((data['v'], data['v_final']))
    n = t.size
    topics: dict[str, list] = {}
    with open(path, 'rb') as stream:
        reader = make_reader(stream, decoder_factories=[DecoderFactory()])
        assert reader.get_header().profile == 'ros2'
        for _, channel, message, msg in reader.iter_decoded_messages():
            topics.setdefault(channel.topic, []).append((message.log_time, msg))
    counts = {k: len(x) for k, x in topics.items()}
    assert counts == {
        '/robot_description': 1,
        '/clock': n,
        '/joint_states': n,
        '/tf': n,
        '/base_odom': n,
        '/momentum': n,
        '/joint_effort_commands': n - 1,
    }
    ns = np.round(t * 1e9).astype(np.int64)
    assert np.all(np.diff(ns) == 10_000_000)  # the control period, 10 ms
    for topic in ('/clock', '/joint_states', '/tf', '/base_odom', '/momentum'):
        assert [x[0] for x in topics[topic]] == ns.tolist()
    assert [x[0] for x in topics['/joint_effort_commands']] == ns[:-1].tolist()
    stamps = [m.header.stamp.sec * 10**9 + m.header.stamp.nanosec for _, m in topics['/base_odom']]
    assert stamps == ns.tolist()
    assert [m.clock.sec * 10**9 + m.clock.nanosec for _, m in topics['/clock']] == ns.tolist()
    # joint positions and rates: the trajectory's
    joints = topics['/joint_states']
    assert list(joints[0][1].name) == list(model.joint_names)
    np.testing.assert_allclose([m.position for _, m in joints], q[:, 7:], rtol=0, atol=1e-12)
    np.testing.assert_allclose([m.velocity for _, m in joints], v[:, 6:], rtol=0, atol=1e-12)
    # efforts: the command of each instant, shown by joint_states over the next period
    commands = np.array([m.data for _, m in topics['/joint_effort_commands']])
    np.testing.assert_array_equal(commands, data['effort'])
    np.testing.assert_array_equal([m.effort for _, m in joints][1:], data['effort'])
    # base pose: the base link frame (its origin from the base CoM q[:3] and the attitude)
    R = np.array([D.link_pose(model, qi, model.base_link)[1] for qi in q])
    origin = np.array([D.link_pose(model, qi, model.base_link)[0] for qi in q])
    odom = [m for _, m in topics['/base_odom']]
    pos = np.array(
        [[m.pose.pose.position.x, m.pose.pose.position.y, m.pose.pose.position.z] for m in odom]
    )
    quat = np.array(
        [
            [
                m.pose.pose.orientation.x,
                m.pose.pose.orientation.y,
                m.pose.pose.orientation.z,
                m.pose.pose.orientation.w,
            ]
            for m in odom
        ]
    )
    np.testing.assert_allclose(pos, origin, rtol=0, atol=1e-12)
    np.testing.assert_allclose(quat, q[:, 3:7], rtol=0, atol=1e-12)
    assert odom[0].header.frame_id == 'world' and odom[0].child_frame_id == model.base_link
    tf = [m.transforms[0] for _, m in topics['/tf']]
    np.testing.assert_array_equal(
        [
            [x.transform.translation.x, x.transform.translation.y, x.transform.translation.z]
            for x in tf
        ],
        pos,
    )
    # the twist in base link axes, the momentum conserved by the RK4 loop up to its drift
    w = np.array(
        [[m.twist.twist.angular.x, m.twist.twist.angular.y, m.twist.twist.angular.z] for m in odom]
    )
    np.testing.assert_allclose(np.einsum('kji,kj->ki', R, v[:, 3:6]), w, rtol=0, atol=1e-12)
    h = np.array([m.data[:6] for _, m in topics['/momentum']])
    np.testing.assert_allclose(
        h, [D.momentum(model, qi, vi, about='com') for qi, vi in zip(q, v, strict=True)], atol=1e-9
    )
    assert topics['/robot_description'][0][1].data == Path(c.robot_path).read_text()


def test_parquet_table_equals_the_csv_and_the_runs_and_resumes(tmp_path):
    """``--format both``: the Parquet table read back equals the CSV table and the rows of the
    runs done in memory (bit for bit, typed); a Parquet part lost to an interruption is redone
    (and written only to Parquet), and a CSV row lost only to CSV."""
    pq = pytest.importorskip('pyarrow.parquet')
    file = tmp_path / 'short.yaml'
    file.write_text(SCENARIO.replace('runs: 4', 'runs: 5'))
    out = tmp_path / 'out'
    c = Campaign(load_scenario(file))
    expected = [run_row(r) for r in sorted(BatchRunner(c, range(5)), key=lambda r: r.index)]
    # a part every 2 rows: the table arrives in parts as runs end
    with ResultsWriter(out, c, ('csv', 'parquet'), part_rows=2) as writer:
        for r in BatchRunner(c, range(5)):
            writer.write(r)
            parts = sorted((out / 'runs.parquet').glob('part-*.parquet'))
            assert len(parts) == len(writer.done) // 2
    table = read_parquet(out)
    assert table.column_names == columns(c)
    assert table.schema.field('run').type == 'int64'
    assert table.schema.field('failure').type == 'string'
    assert table.schema.field('final_error').type == 'double'
    assert same_rows(table.to_pylist(), expected)
    assert [pq.read_metadata(p).num_row_groups for p in parts] == [1, 1]
    # the CSV holds the same values
    typed = [{k: (x if isinstance(x, str) else float(x)) for k, x in r.items()} for r in expected]
    assert same_rows(read_rows(out), typed)
    # interrupted: the last part lost (and a part half written), two CSV rows lost
    full_csv = csv_lines(out / 'runs.csv')
    last = sorted((out / 'runs.parquet').glob('part-*.parquet'))[-1]
    lost = set(pq.read_table(last, columns=['run']).column(0).to_pylist())
    last.unlink()
    (out / 'runs.parquet' / '.part-00009.parquet.tmp').write_bytes(b'PAR1 half')
    (out / 'runs.csv').write_text('\n'.join(full_csv[:4]) + '\n')
    csv_lost = {int(x.split(',')[0]) for x in full_csv[4:]}
    # resumed with only csv asked: the Parquet table in the folder is kept up to date
    writer = ResultsWriter(out, c, ('csv',))
    assert writer.formats == ['csv', 'parquet']
    assert writer.done == set(range(5)) - lost - csv_lost
    writer.close()
    assert main([str(file), '--output', str(out), '--quiet', '--no-plots']) == 0
    assert not list((out / 'runs.parquet').glob('.*.tmp'))
    assert same_rows(read_parquet(out).to_pylist(), expected)
    again = csv_lines(out / 'runs.csv')
    assert again[:4] == full_csv[:4] and sorted(again[1:]) == sorted(full_csv[1:])


def test_parquet_only_cli_and_refusals(tmp_path, capsys):
    pytest.importorskip('pyarrow')
    file = tmp_path / 'short.yaml'
    file.write_text(SCENARIO)
    out = tmp_path / 'p'
    assert (
        main([str(file), '--output', str(out), '--quiet', '--no-plots', '--format', 'parquet'])
        == 0
    )
    assert not (out / 'runs.csv').exists()
    rows = read_rows(out)  # from Parquet when there is no CSV
    assert [r['run'] for r in rows] == [0, 1, 2, 3]
    c = Campaign(load_scenario(file))
    alone = run_row(next(iter(BatchRunner(c, [2], batch_size=1))))
    assert same_rows(read_parquet(out).to_pylist()[2:3], [alone])
    n_ok = sum(int(r['reached']) for r in rows)
    assert (
        f'4 runs (ffsim_servicer_7dof, reactionless, seed 5): {n_ok} reached'
        in (out / 'summary.md').read_text()
    )
    # a part of another table (other columns) is refused, naming it
    other = tmp_path / 'other'
    ResultsWriter(other, c, ('parquet',)).close()
    pq = pytest.importorskip('pyarrow.parquet')
    pq.write_table(
        read_parquet(out).drop_columns(['plans']), other / 'runs.parquet' / 'part-00000.parquet'
    )
    with pytest.raises(ScenarioError, match='part-00000.parquet: columns differ'):
        ResultsWriter(other, c, ('parquet',))
    with pytest.raises(ScenarioError, match='format: expected one or more of'):
        ResultsWriter(tmp_path / 'x', c, ('xlsx',))


def test_cli_mcap_without_replay_exits_2(tmp_path, capsys):
    file = tmp_path / 'short.yaml'
    file.write_text(SCENARIO)
    assert main([str(file), '--output', str(tmp_path), '--mcap', str(tmp_path / 'x.mcap')]) == 2
    assert '--mcap: expected with --replay' in capsys.readouterr().err
    assert not (tmp_path / 'x.mcap').exists()


def test_cli_batch_size_beyond_the_runs_is_cut_to_them(tmp_path, capsys):
    """``--batch-size`` up to the runs' cap (10**7) with 2 runs: a batch of 2 (10**9 tried to
    allocate 67 GiB and crashed with exit 1); beyond the cap: exit 2 naming it."""
    file = tmp_path / 'tiny.yaml'
    file.write_text(TINY)
    out = tmp_path / 'out'
    args = [str(file), '--output', str(out), '--quiet', '--no-plots', '--batch-size']
    assert main([*args, '10000000']) == 0
    assert [r['run'] for r in read_rows(out)] == [0, 1]
    capsys.readouterr()
    assert main([*args, '1000000000']) == 2
    assert 'batch_size: expected an integer <= 10000000, got 1000000000' in capsys.readouterr().err


@pytest.mark.parametrize('index', [-1, 2, 999999999999])
def test_cli_replay_of_a_run_not_in_the_campaign_exits_2(tmp_path, capsys, index):
    """``--replay`` outside ``0..runs-1`` (it wrote ``run_999999999999.npz`` of a run the
    campaign does not have, exit 0)."""
    file = tmp_path / 'tiny.yaml'
    file.write_text(TINY)
    out = tmp_path / 'out'
    assert main([str(file), '--output', str(out), '--replay', str(index)]) == 2
    assert f'--replay: expected a run index in 0..1, got {index}' in capsys.readouterr().err
    assert not out.exists()


def test_wilson_interval_and_percentiles():
    # hand values (Wilson score, z = 1.96): 0/10 -> [0, 0.2775], 10/10 -> [0.7225, 1],
    # 5/10 -> [0.2366, 0.7634]
    assert wilson_interval(0, 10) == pytest.approx((0.0, 0.27753), abs=1e-5)
    assert wilson_interval(10, 10) == pytest.approx((0.72247, 1.0), abs=1e-5)
    assert wilson_interval(5, 10) == pytest.approx((0.23659, 0.76341), abs=1e-5)
    rows = [
        {
            'reached': k % 4 != 0,
            'failure': 'boom' if k == 0 else '',
            'time_to_reach': float(k) if k % 4 else math.nan,
            'final_error': 0.001 * k,
            'max_attitude_change_deg': 0.0,
            'max_base_rate_deg_s': 0.0,
            'momentum_error_angular': 0.0,
            'peak_effort_ratio': 0.5,
        }
        for k in range(20)
    ]
    s = summarize(rows)
    assert (s['runs'], s['reached'], s['failed']) == (20, 15, 1)
    assert s['success_rate'] == 0.75
    t = [float(k) for k in range(20) if k % 4]
    assert s['percentiles']['time_to_reach'][50] == np.percentile(t, 50)
    assert s['percentiles']['final_error'][100] == pytest.approx(0.019)


def listening_addresses_of_descendants() -> list[ipaddress.IPv4Address | ipaddress.IPv6Address]:
    """The local addresses of the listening TCP sockets of this process's descendants (from
    /proc: sockets by inode, their owners by file descriptor, owners' parents by stat)."""
    listening = {}
    for name in ('tcp', 'tcp6'):
        for line in Path(f'/proc/net/{name}').read_text().splitlines()[1:]:
            f = line.split()
            if f[3] != '0A':  # TCP_LISTEN
                continue
            raw = bytes.fromhex(f[1].split(':')[0])
            words = b''.join(raw[i : i + 4][::-1] for i in range(0, len(raw), 4))
            listening[f[9]] = ipaddress.ip_address(words)
    parents = {}
    for proc in Path('/proc').iterdir():
        if proc.name.isdigit():
            try:
                parents[int(proc.name)] = int(
                    (proc / 'stat').read_text().rsplit(')', 1)[1].split()[1]
                )
            except (OSError, IndexError, ValueError):
                continue

    def descends(pid: int) -> bool:
        while pid > 1:
            pid = parents.get(pid, 0)
            if pid == os.getpid():
                return True
        return False

    out = []
    for pid in filter(descends, list(parents)):
        try:
            fds = list(Path(f'/proc/{pid}/fd').iterdir())
        except OSError:
            continue
        for fd in fds:
            try:
                target = os.readlink(fd)
            except OSError:
                continue
            if target.startswith('socket:[') and target[8:-1] in listening:
                out.append(listening[target[8:-1]])
    return out


def loopback(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    mapped = getattr(address, 'ipv4_mapped', None)
    return (mapped or address).is_loopback


@pytest.mark.skipif(importlib.util.find_spec('ray') is None, reason='Ray is not installed')
def test_ray_executor_gives_the_local_table():
    """A local Ray of two workers gives the local table; every socket its processes listen on
    is on the loopback address."""
    from ffsim_ros.campaign.scenario import Scenario

    s = Scenario.from_dict(
        {
            'robot': 'ffsim_servicer_7dof',
            'runs': 4,
            'seed': 9,
            'batch_size': 2,
            'timing': {'settle': 0.1, 'run_goal_timeout': 0.5},
            'goals': {'kind': 'offsets', 'offsets': [[0.05, 0.03, -0.04]]},
            'dispersions': {'joint_positions': {'dist': 'uniform', 'low': -0.05, 'high': 0.05}},
        }
    )
    local = {r.index: run_row(r) for r in BatchRunner(Campaign(s), range(4))}
    try:
        remote = {r.index: run_row(r) for r in run_ray(s, list(range(4)), workers=2)}
        ray = sys.modules['ray']  # imported by run_ray, with its local environment
        nodes, resources = ray.nodes(), ray.cluster_resources()
        addresses = listening_addresses_of_descendants()
    finally:
        if 'ray' in sys.modules:
            sys.modules['ray'].shutdown()
    assert same_rows([remote[k] for k in range(4)], [local[k] for k in range(4)])
    assert [n['NodeManagerAddress'] for n in nodes] == ['127.0.0.1']
    assert resources['CPU'] == 2
    # the GCS, the raylet (2 servers), the workers... all on loopback
    assert len(addresses) >= 3 and all(map(loopback, addresses)), addresses


def test_results_rows_have_the_table_columns(tmp_path):
    file = tmp_path / 's.yaml'
    file.write_text(SCENARIO)
    c = Campaign(load_scenario(file))
    r = next(iter(BatchRunner(c, [0], batch_size=1)))
    row = run_row(r)
    assert list(row) == columns(c)
    assert row['goals'] == 1 and row['reached'] == int(r.reached)
    assert row['final_error'] == r.goals[0]['error']


def test_cli_refuses_damaged_or_unknown_output_folders(tmp_path, capsys):
    """A damaged scenario.json gave a traceback (exit 1); result tables without one were
    adopted by a resume of another seed; --replay wrote into another scenario's folder; an
    --mcap that cannot be written failed only after the replay ran. All exit 2 now, naming
    the file and what is wrong."""
    file = tmp_path / 'tiny.yaml'
    file.write_text(TINY)
    out = tmp_path / 'out'
    assert main([str(file), '--output', str(out), '--quiet', '--no-plots']) == 0
    capsys.readouterr()
    meta = out / 'scenario.json'
    good = meta.read_text()
    for text, message in [
        (good[:20], 'scenario.json: damaged, expected the JSON of a scenario'),
        ('', 'scenario.json: damaged, expected the JSON of a scenario'),
        ('[1]', 'expected an object with a "fingerprint" text and a "scenario" object, got list'),
    ]:
        meta.write_text(text)
        assert main([str(file), '--output', str(out), '--quiet', '--no-plots']) == 2
        assert message in capsys.readouterr().err
    meta.unlink()
    other = tmp_path / 'other.yaml'
    other.write_text(TINY + 'seed: 21\n')
    assert main([str(other), '--output', str(out), '--quiet', '--no-plots']) == 2
    assert 'holds result tables (runs.csv) but no scenario.json' in capsys.readouterr().err
    meta.write_text(good)
    assert main([str(other), '--output', str(out), '--replay', '1']) == 2
    assert 'holds the results of another scenario' in capsys.readouterr().err
    assert not (out / 'run_1.npz').exists()
    args = [str(file), '--output', str(out), '--replay', '1', '--mcap', '/proc/x.mcap']
    assert main(args) == 2
    assert "--mcap: cannot write '/proc/x.mcap'" in capsys.readouterr().err
    assert not (out / 'run_1.npz').exists()


def test_scenario_json_is_replaced_atomically(tmp_path, monkeypatch):
    """scenario.json was rewritten in place at every start (a cut file on an interruption):
    it is written to a temporary file in the folder that replaces it."""
    import ffsim_ros.campaign.results as results

    file = tmp_path / 'tiny.yaml'
    file.write_text(TINY)
    c = Campaign(load_scenario(file))
    replaced = []
    real = os.replace

    def spy(src, dst):
        replaced.append((Path(src).parent, Path(dst)))
        real(src, dst)

    monkeypatch.setattr(results.os, 'replace', spy)
    for _ in range(2):
        ResultsWriter(tmp_path / 'out', c).close()
    assert replaced == [(tmp_path / 'out', tmp_path / 'out' / 'scenario.json')] * 2
    names = sorted(p.name for p in (tmp_path / 'out').iterdir())
    assert names == ['.lock', 'runs.csv', 'scenario.json']


def test_cli_interrupt_prints_one_line_and_exits_130(tmp_path, capsys, monkeypatch):
    """Ctrl-C printed a KeyboardInterrupt traceback."""
    import ffsim_ros.campaign.cli as cli

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt
        yield

    monkeypatch.setattr(cli, 'run_local', interrupted)
    file = tmp_path / 'tiny.yaml'
    file.write_text(TINY)
    assert main([str(file), '--output', str(tmp_path / 'out'), '--quiet', '--no-plots']) == 130
    err = capsys.readouterr().err
    assert (
        err
        == 'ffsim campaign: interrupted; the rows written so far are kept (run again to resume)\n'
    )


def interrupted_kernel(*args, **kwargs):
    """What numba raises when a Ctrl-C lands inside a kernel: a SystemError whose context is
    the KeyboardInterrupt."""
    try:
        raise KeyboardInterrupt
    except KeyboardInterrupt:
        raise SystemError(  # noqa: B904 - as numba: the interrupt is its context
            'CPUDispatcher(<function rk4>) returned a result with an exception set'
        )


@pytest.mark.parametrize('where', ['physics', 'law'])
def test_interrupt_inside_a_kernel_is_not_a_failed_run(tmp_path, monkeypatch, where):
    """A Ctrl-C inside a numba kernel came as a SystemError that the handlers isolating a bad
    row took for the run's failure (retried, the campaign went on or ended with exit 1): it
    is raised as KeyboardInterrupt, and the CLI exits 130 with its one line."""
    import ffsim_ros.campaign.batch as batch
    from ffsim_ros.campaign.interrupts import interrupted

    file = tmp_path / 'tiny.yaml'
    file.write_text(TINY)
    c = Campaign(load_scenario(file))
    if where == 'physics':
        monkeypatch.setattr(batch.D, 'step', interrupted_kernel)
    else:
        monkeypatch.setattr(batch.BatchRunner, '_update', interrupted_kernel)
    with pytest.raises(KeyboardInterrupt):
        list(BatchRunner(c, range(2)))
    assert interrupted(SystemError('x')) is False


def test_cli_kernel_interrupt_exits_130(tmp_path, capsys, monkeypatch):
    import ffsim_ros.campaign.cli as cli

    monkeypatch.setattr(cli, 'run_local', interrupted_kernel)
    file = tmp_path / 'tiny.yaml'
    file.write_text(TINY)
    assert main([str(file), '--output', str(tmp_path / 'out'), '--quiet', '--no-plots']) == 130
    assert capsys.readouterr().err == (
        'ffsim campaign: interrupted; the rows written so far are kept (run again to resume)\n'
    )


def test_cli_sigint_mid_campaign_exits_130_and_resumes_to_the_same_table(tmp_path, capsys):
    """SIGINT to a running campaign (after its first rows): one line, exit 130, the rows kept;
    a resume completes the table an uninterrupted campaign writes (no run failed by the
    interrupt)."""
    import signal

    file = tmp_path / 'tiny.yaml'
    file.write_text(TINY.replace('runs: 2', 'runs: 400'))
    out = tmp_path / 'out'
    returncode, stderr = interrupted_campaign(file, out, signal.SIGINT, '--quiet', '--no-plots')
    assert returncode == 130, stderr
    assert stderr == (
        'ffsim campaign: interrupted; the rows written so far are kept (run again to resume)\n'
    )
    kept = read_rows(out)
    assert 4 <= len(kept) < 400
    runs = int(max(r['run'] for r in kept)) + 3  # (some of them not done yet)
    args = ['--runs', str(runs), '--quiet', '--no-plots']
    assert main([str(file), '--output', str(out), *args]) == 0
    assert main([str(file), '--output', str(tmp_path / 'ref'), *args]) == 0
    resumed = [r for r in read_rows(out) if r['run'] < runs]
    assert same_rows(resumed, read_rows(tmp_path / 'ref'))
    assert not any(r['failure'] for r in resumed)


def test_cli_ray_not_importable_exits_2_before_writing(tmp_path):
    """``--executor ray`` without an importable Ray gave an ImportError traceback (exit 1)
    after runs.csv and scenario.json were written and the summary deleted: exit 2 with the
    install hint, nothing written."""
    import subprocess

    stub = tmp_path / 'stub' / 'ray'
    stub.mkdir(parents=True)
    (stub / '__init__.py').write_text("raise ImportError('no Ray here')\n")
    file = tmp_path / 'tiny.yaml'
    file.write_text(TINY)
    out = tmp_path / 'out'
    out.mkdir()
    (out / 'summary.md').write_text('kept')
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(stub.parent), *sys.path]))
    cmd = [sys.executable, '-m', 'ffsim_ros.campaign.cli', str(file), '--output', str(out)]
    proc = subprocess.run(
        [*cmd, '--executor', 'ray', '--quiet', '--no-plots'],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr == (
        'ffsim campaign: error: --executor ray: the Ray executor needs Ray: pip install '
        "'ffsim_ros[ray]' (or -r requirements/ray.txt)\n"
    )
    assert sorted(p.name for p in out.iterdir()) == ['summary.md']


def test_cli_table_that_cannot_be_written_one_line_exit_1_and_resumes(tmp_path):
    """A full disk (here a file size limit) mid-campaign gave three chained OSError tracebacks
    (exit 1), and a CSV that failed to close skipped the Parquet part: one line naming the
    file, exit 1, no temporary part left; a resume completes the table."""
    import resource
    import subprocess

    pytest.importorskip('pyarrow')
    file = tmp_path / 'tiny.yaml'
    spread = 'dispersions: {joint_positions: {dist: uniform, low: -0.05, high: 0.05}}\n'
    file.write_text(TINY.replace('runs: 2', 'runs: 40').replace('batch_size: 2', 'batch_size: 4'))
    file.write_text(file.read_text() + spread)
    out = tmp_path / 'out'
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    cmd = [sys.executable, '-m', 'ffsim_ros.campaign.cli', str(file), '--output', str(out)]
    args = ['--quiet', '--no-plots', '--format', 'both']

    def limit() -> None:  # runs.csv reaches 4096 bytes after some 20 rows of 40
        resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))

    proc = subprocess.run(
        [*cmd, *args], env=env, capture_output=True, text=True, timeout=300, preexec_fn=limit
    )
    assert proc.returncode == 1, proc.stderr
    assert proc.stderr == (
        f'ffsim campaign: error: cannot write {out / "runs.csv"}: File too large; the rows '
        'written so far are kept (run again to resume)\n'
    )
    assert not list((out / 'runs.parquet').iterdir())  # (the part too large: no .tmp left)
    assert 1 <= (out / 'runs.csv').read_text().count('\n') - 1 < 40  # (whole rows kept)
    assert main([str(file), '--output', str(out), *args]) == 0
    assert main([str(file), '--output', str(tmp_path / 'ref'), *args]) == 0
    assert same_rows(read_rows(out), read_rows(tmp_path / 'ref'))
    parquet = [read_parquet(d).to_pylist() for d in (out, tmp_path / 'ref')]
    assert same_rows(*parquet) and len(parquet[0]) == 40


def test_results_writer_closes_every_table_when_one_fails(tmp_path, monkeypatch):
    """A CSV whose close failed skipped the Parquet part (its rows lost)."""
    import ffsim_ros.campaign.results as results

    pytest.importorskip('pyarrow')
    file = tmp_path / 'tiny.yaml'
    file.write_text(TINY)
    c = Campaign(load_scenario(file))
    writer = ResultsWriter(tmp_path / 'out', c, ('csv', 'parquet'))
    for r in BatchRunner(c, range(2)):
        writer.write(r)

    def full(self):
        raise OSError(28, 'No space left on device')

    monkeypatch.setattr(results.CsvTable, 'close', full)
    with pytest.raises(results.WriteError) as info:
        with writer:
            pass
    assert str(info.value) == (
        f'cannot write {tmp_path / "out" / "runs.csv"}: No space left on device; the rows '
        'written so far are kept (run again to resume)'
    )
    assert [r['run'] for r in read_parquet(tmp_path / 'out').to_pylist()] == [0, 1]


def test_summary_percentiles_leave_out_the_failed_runs():
    """With every run failed the percentiles were 0 everywhere (a failed run's metrics stop
    where it failed: it read as a perfect campaign): they are over the runs without a
    failure, and the summary says over how many."""
    from ffsim_ros.campaign.results import METRICS, summary_markdown
    from ffsim_ros.campaign.scenario import Scenario

    def row(k: int, failure: str, value: float) -> dict:
        return {'reached': 0, 'failure': failure, **{key: value for key, _ in METRICS}}

    s = Scenario.from_dict({'robot': 'planar_2link', 'runs': 12, 'goals': {'kind': 'chained'}})
    failed = [row(k, 'controller error at t = 0.010 s', 0.0) for k in range(12)]
    summary = summarize(failed)
    assert (summary['failed'], summary['ran']) == (12, 0)
    assert all(pct == {} for pct in summary['percentiles'].values())
    text = summary_markdown(s, summary)
    assert 'Percentiles over the 0 runs without a failure' in text
    assert '| max base attitude change [deg] | 0 | - | - | - | - |' in text
    mixed = summarize([*failed[:3], *(row(k, '', 2.0) for k in range(9))])
    assert (mixed['failed'], mixed['ran']) == (3, 9)
    assert mixed['percentiles']['momentum_error_angular'][5] == 2.0


def test_cli_without_matplotlib_exits_2_before_running(tmp_path, capsys, monkeypatch):
    """Without matplotlib every run ran, then the plots ended the command with a
    ModuleNotFoundError traceback (exit 1): exit 2 at once with the install hint, nothing
    written; ``--no-plots`` runs without it."""
    monkeypatch.setitem(sys.modules, 'matplotlib', None)
    monkeypatch.setitem(sys.modules, 'matplotlib.pyplot', None)
    file = tmp_path / 'tiny.yaml'
    file.write_text(TINY)
    out = tmp_path / 'out'
    assert main([str(file), '--output', str(out), '--quiet']) == 2
    assert capsys.readouterr().err == (
        "ffsim campaign: error: the plots need matplotlib: pip install 'ffsim_ros[plots]' (or "
        'pip install matplotlib), or use --no-plots\n'
    )
    assert not out.exists()
    assert main([str(file), '--output', str(out), '--quiet', '--no-plots']) == 0
    assert sorted(p.name for p in out.iterdir()) == [
        '.lock',
        'runs.csv',
        'scenario.json',
        'summary.md',
    ]


def test_cli_parquet_without_pyarrow_writes_nothing(tmp_path, capsys, monkeypatch):
    """``--format parquet`` without pyarrow was refused (exit 2) after scenario.json was
    written into the output folder (created for it): refused before anything is written, as
    ``--executor ray`` without Ray is; also when the folder's Parquet table is to be resumed."""
    monkeypatch.setitem(sys.modules, 'pyarrow', None)
    monkeypatch.setitem(sys.modules, 'pyarrow.parquet', None)
    file = tmp_path / 'tiny.yaml'
    file.write_text(TINY)
    out = tmp_path / 'out'
    argv = [str(file), '--output', str(out), '--quiet', '--no-plots']
    assert main([*argv, '--format', 'parquet']) == 2
    assert capsys.readouterr().err == (
        'ffsim campaign: error: the Parquet format needs pyarrow: pip install '
        "'ffsim_ros[parquet]' (or pip install pyarrow), or use --format csv\n"
    )
    assert not out.exists()
    out.mkdir()
    (out / 'summary.md').write_text('kept')
    assert main([*argv, '--format', 'both']) == 2
    assert sorted(p.name for p in out.iterdir()) == ['summary.md']
    # a folder holding a Parquet table (formats already there are kept): the same
    (out / 'runs.parquet').mkdir()
    with pytest.raises(ScenarioError, match='the Parquet format needs pyarrow'):
        ResultsWriter(out, Campaign(load_scenario(file)), ('csv',))
    assert sorted(p.name for p in out.iterdir()) == ['runs.parquet', 'summary.md']
