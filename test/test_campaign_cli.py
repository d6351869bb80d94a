"""The campaign command (issue 20): results table written as runs end, resume, summary, bad
files (exit 2), the Ray executor against the local one."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ffsim_ros.campaign.batch import BatchRunner, Campaign
from ffsim_ros.campaign.cli import main
from ffsim_ros.campaign.executors import run_ray
from ffsim_ros.campaign.results import (
    columns,
    read_rows,
    run_row,
    summarize,
    wilson_interval,
)
from ffsim_ros.campaign.scenario import load_scenario
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
        ('robot: [1\n', 'not valid YAML'),
    ],
)
def test_cli_bad_scenario_exits_2_naming_it(tmp_path, capsys, text, message):
    file = tmp_path / 'bad.yaml'
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


def test_ray_executor_gives_the_local_table():
    ray = pytest.importorskip('ray')
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
    finally:
        ray.shutdown()
    assert remote == local


def test_results_rows_have_the_table_columns(tmp_path):
    file = tmp_path / 's.yaml'
    file.write_text(SCENARIO)
    c = Campaign(load_scenario(file))
    r = next(iter(BatchRunner(c, [0], batch_size=1)))
    row = run_row(r)
    assert list(row) == columns(c)
    assert row['goals'] == 1 and row['reached'] == int(r.reached)
    assert row['final_error'] == r.goals[0]['error']
