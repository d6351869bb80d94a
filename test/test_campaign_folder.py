"""A campaign's output folder (issue 20, probe of ``ffsim campaign``): one campaign at a time
(a lock), damaged or repeated rows, ``scenario.json``'s mode and the settings named on a
mismatch, SIGTERM taken as Ctrl-C, goals cut off by ``timing.run_goal_timeout``, ``--workers``
with the local executor."""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import signal

import numba
import numpy as np
import pytest
from campaign_samples import TINY, interrupted_campaign

from ffsim_ros.campaign.batch import BatchRunner, Campaign
from ffsim_ros.campaign.cli import main
from ffsim_ros.campaign.results import read_parquet, read_rows, summarize
from ffsim_ros.campaign.scenario import load_scenario
from ffsim_ros.control import ReachSupervisor, ReactionlessController
from ffsim_ros.control.closed_loop import ClosedLoop

QUIET = ['--quiet', '--no-plots']


@pytest.fixture
def tiny(tmp_path):
    file = tmp_path / 'tiny.yaml'
    file.write_text(TINY)
    return file


def test_a_second_campaign_on_a_folder_in_use_exits_2(tmp_path, tiny, capsys):
    """Two campaigns on one folder at once wrote every row twice (the summary counted 600 runs
    of 300): the folder's lock is held by the first, the second exits 2 naming its pid."""
    out = tmp_path / 'out'
    out.mkdir()
    fd = os.open(out / '.lock', os.O_RDWR | os.O_CREAT)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        os.write(fd, b'4242\n')
        assert main([str(tiny), '--output', str(out), *QUIET]) == 2
        assert f'{out} is in use by another campaign (pid 4242)' in capsys.readouterr().err
        assert not (out / 'runs.csv').exists()
    finally:
        os.close(fd)
    assert main([str(tiny), '--output', str(out), *QUIET]) == 0
    assert main([str(tiny), '--output', str(out), *QUIET]) == 0  # (released when done)
    assert (out / '.lock').read_text() == f'{os.getpid()}\n'


def test_repeated_rows_count_once_and_conflicting_ones_are_refused(tmp_path, tiny, capsys):
    """A run's row twice (left by two campaigns at once) was resumed and summarized twice: the
    same row again counts once; a run on two rows with other values exits 2 naming the line."""
    out = tmp_path / 'out'
    assert main([str(tiny), '--output', str(out), *QUIET]) == 0
    table = out / 'runs.csv'
    lines = table.read_text().splitlines()
    table.write_text('\n'.join([*lines, *lines[1:]]) + '\n')
    capsys.readouterr()
    assert main([str(tiny), '--output', str(out), *QUIET]) == 0
    assert '2 runs (planar_2link' in capsys.readouterr().out
    assert [r['run'] for r in read_rows(out)] == [0, 1]
    other = lines[1].replace(',1,', ',2,', 1)  # run 0 with another number of goals
    table.write_text('\n'.join([*lines, other]) + '\n')
    assert main([str(tiny), '--output', str(out), *QUIET]) == 2
    assert 'runs.csv: line 4: run 0 is on an earlier line too, with other values' in (
        capsys.readouterr().err
    )


def test_repeated_parquet_rows_count_once_and_conflicting_ones_are_refused(tmp_path, tiny):
    pq = pytest.importorskip('pyarrow.parquet')
    out = tmp_path / 'out'
    assert main([str(tiny), '--output', str(out), '--format', 'parquet', *QUIET]) == 0
    parts = out / 'runs.parquet'
    shutil.copy(parts / 'part-00000.parquet', parts / 'part-00001.parquet')
    assert read_parquet(out).column('run').to_pylist() == [0, 1]
    assert summarize(read_rows(out))['runs'] == 2
    table = pq.read_table(parts / 'part-00001.parquet')
    pq.write_table(table.set_column(3, 'goals', [[7, 7]]), parts / 'part-00001.parquet')
    with pytest.raises(ValueError, match='run 0 is in part-00000.parquet and part-00001.parquet'):
        read_parquet(out)


@pytest.mark.parametrize(
    ('column', 'value', 'message'),
    [
        (0, 'abc', "line 2: run: expected an integer >= 0, got 'abc'"),
        (1, 'maybe', "line 2: reached: expected an integer >= 0, got 'maybe'"),
        (6, 'x', "line 2: final_error: expected a number, got 'x'"),
    ],
)
def test_a_damaged_value_exits_2_naming_it(tmp_path, tiny, capsys, column, value, message):
    """A run index 'abc' or reached 'maybe' in runs.csv gave a traceback after summary.md was
    deleted: exit 2 naming the line and the column, the summary kept."""
    out = tmp_path / 'out'
    assert main([str(tiny), '--output', str(out), *QUIET]) == 0
    lines = (out / 'runs.csv').read_text().splitlines()
    cells = lines[1].split(',')
    cells[column] = value
    (out / 'runs.csv').write_text('\n'.join([lines[0], ','.join(cells), *lines[2:]]) + '\n')
    capsys.readouterr()
    assert main([str(tiny), '--output', str(out), *QUIET]) == 2
    assert message in capsys.readouterr().err
    assert (out / 'summary.md').is_file()


def test_scenario_json_mode_and_stale_plots(tmp_path, tiny, monkeypatch):
    """scenario.json was created 0600 (mkstemp) among 0644 files: the umask's mode. An
    interrupted --runs extension left the plots of the earlier state: removed at the start,
    as summary.md."""
    import ffsim_ros.campaign.cli as cli

    out = tmp_path / 'out'
    old = os.umask(0o022)
    try:
        assert main([str(tiny), '--output', str(out), *QUIET]) == 0
    finally:
        os.umask(old)
    assert (out / 'scenario.json').stat().st_mode & 0o777 == 0o644
    for name in ('histograms.png', 'inputs.png'):  # (the plots of this state)
        (out / name).write_bytes(b'PNG of 2 runs')

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt
        yield

    monkeypatch.setattr(cli, 'run_local', interrupted)
    assert main([str(tiny), '--output', str(out), *QUIET, '--runs', '3']) == 130
    assert not any((out / n).exists() for n in ('summary.md', 'histograms.png', 'inputs.png'))


def test_another_scenario_names_the_settings_that_differ(tmp_path, tiny, capsys):
    """A folder written before a setting was added was refused as 'another scenario' with
    nothing to tell why: the settings that differ are named, and the version that wrote it."""
    out = tmp_path / 'out'
    assert main([str(tiny), '--output', str(out), *QUIET]) == 0
    meta = json.loads((out / 'scenario.json').read_text())
    key, value = next(iter(meta['scenario']['reach'].items()))
    del meta['scenario']['reach'][key]  # (as written before that setting existed)
    meta.pop('version', None)
    data = {k: v for k, v in meta['scenario'].items() if k not in ('runs', 'batch_size')}
    meta['fingerprint'] = hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()
    (out / 'scenario.json').write_text(json.dumps(meta))
    capsys.readouterr()
    assert main([str(tiny), '--output', str(out), *QUIET]) == 2
    err = capsys.readouterr().err
    assert "holds the results of another scenario ('tiny'): " in err
    assert f'reach.{key}: absent in the folder, {json.dumps(value)} now' in err
    assert 'written by a version not recorded, this is ffsim_ros ' in err
    other = tmp_path / 'other.yaml'
    other.write_text(TINY.replace('runs: 2', 'runs: 2\nseed: 6'))
    assert main([str(other), '--output', str(tmp_path / 'o2'), *QUIET]) == 0
    assert main([str(tiny), '--output', str(tmp_path / 'o2'), *QUIET]) == 2
    assert '(\'other\'): name: "other" in the folder, "tiny" now; seed: 6 in the folder' in (
        capsys.readouterr().err
    )


def test_sigterm_mid_campaign_exits_143_with_the_buffered_rows_written(tmp_path, tiny):
    """SIGTERM (how batch schedulers stop a job) killed the campaign at once (exit -15), the
    Parquet rows still buffered lost: taken as a Ctrl-C, one line, exit 143, every table
    holding the same runs."""
    pytest.importorskip('pyarrow')
    tiny.write_text(TINY.replace('runs: 2', 'runs: 400'))
    out = tmp_path / 'out'
    returncode, stderr = interrupted_campaign(
        tiny, out, signal.SIGTERM, '--format', 'both', *QUIET
    )
    assert returncode == 143, stderr
    assert stderr == (
        'ffsim campaign: terminated (SIGTERM); the rows written so far are kept '
        '(run again to resume)\n'
    )
    rows = read_rows(out)
    assert 4 <= len(rows) < 400
    assert read_parquet(out).column('run').to_pylist() == [int(r['run']) for r in rows]


def test_ray_init_sigterm_handler_is_replaced_within_a_campaign(tmp_path, tiny, monkeypatch):
    """ray.init installs a SIGTERM handler that exits at once (buffered rows lost): within a
    campaign the deferred handler is installed again after it. A SIGTERM landing in a kernel
    is raised again as a SIGTERM (exit 143), not as a Ctrl-C."""
    import types

    import ffsim_ros.campaign.executors as executors
    from ffsim_ros.campaign.interrupts import Terminated, deferred_interrupts, reraise_interrupt

    def ray_handler(signum, frame):
        raise SystemExit(signum)

    fake = types.SimpleNamespace(
        is_initialized=lambda: False,
        init=lambda **kw: signal.signal(signal.SIGTERM, ray_handler),
        nodes=lambda: [{'NodeManagerAddress': '127.0.0.1'}],
        remote=lambda **kw: lambda f: f,
    )
    monkeypatch.setattr(executors, 'import_ray', lambda local: fake)
    before = signal.signal(signal.SIGTERM, signal.SIG_DFL)  # (a real ray.init may have run)
    try:
        with deferred_interrupts():
            taken = signal.getsignal(signal.SIGTERM)
            assert taken is not signal.SIG_DFL
            assert list(executors.run_ray(load_scenario(tiny), [])) == []
            assert signal.getsignal(signal.SIGTERM) is taken
        assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL
    finally:
        signal.signal(signal.SIGTERM, before)
    try:
        raise Terminated
    except Terminated:
        try:
            raise SystemError('returned a result with an exception set')  # noqa: B904
        except SystemError as exc:
            with pytest.raises(Terminated):
                reraise_interrupt(exc)


CUT = TINY.replace('run_goal_timeout: 0.2', 'run_goal_timeout: 0.1').replace(
    'reach: {goal_timeout: 0.2}', 'reach: {goal_timeout: 30.0}'
)


def test_a_goal_cut_off_by_run_goal_timeout_is_aborted_with_the_reason(tmp_path):
    """A goal still active when timing.run_goal_timeout ended it was recorded 'active' with an
    empty reason (the row said nothing): 'aborted' with a timeout reason naming the setting, in
    the campaign and in ClosedLoop.run_goal alike."""
    file = tmp_path / 'cut.yaml'
    file.write_text(CUT.replace('[0.01, 0.01, 0.0]', '[0.05, 0.05, 0.0]'))
    s = load_scenario(file)
    r = next(iter(BatchRunner(Campaign(s), [0])))
    why = "timeout: not reached after 0.1 s (timing.run_goal_timeout, before the supervisor's"
    assert r.goals[0]['outcome'] == 'aborted' and r.goals[0]['reason'].startswith(why)
    model = Campaign(s).model
    law = ReactionlessController(model, s.ee_link, mode=s.mode, gains=s.gains)
    q0 = r.inputs.q0
    loop = ClosedLoop(ReachSupervisor(law, s.reach), q0, np.zeros(model.nv))
    record = loop.run_goal(loop.ee_position() + np.array([0.05, 0.05, 0.0]), timeout=0.1)
    assert record.outcome.value == 'aborted'
    assert record.reason.startswith("timeout: not reached after 0.1 s (run_goal's timeout")


def test_summary_says_how_many_runs_each_percentile_covers():
    from ffsim_ros.campaign.results import METRICS, summary_markdown
    from ffsim_ros.campaign.scenario import Scenario

    rows = [
        {'reached': k % 2, 'failure': '', **{key: 1.0 for key, _ in METRICS}} for k in range(5)
    ]
    for r in rows:
        r['time_to_reach'] = 1.0 if r['reached'] else float('nan')
    s = Scenario.from_dict({'robot': 'planar_2link', 'runs': 5, 'goals': {'kind': 'chained'}})
    summary = summarize(rows)
    assert summary['covered']['time_to_reach'] == 2 and summary['covered']['final_error'] == 5
    text = summary_markdown(s, summary)
    assert '| time to reach [s] | 2 | 1 | 1 | 1 | 1 |' in text
    assert '| final error [m] | 5 | 1 | 1 | 1 | 1 |' in text


def test_workers_sets_the_threads_of_the_local_executor(tmp_path, tiny, capsys, monkeypatch):
    """--workers did nothing with --executor local: it sets the kernels' threads (restored
    after), and more than numba may start exits 2 naming it."""
    import ffsim_ros.campaign.cli as cli

    seen = []
    real = cli.run_local

    def spy(*args, **kwargs):
        seen.append(numba.get_num_threads())
        yield from real(*args, **kwargs)

    monkeypatch.setattr(cli, 'run_local', spy)
    before = numba.get_num_threads()
    assert main([str(tiny), '--output', str(tmp_path / 'a'), '--workers', '1', *QUIET]) == 0
    assert seen == [1] and numba.get_num_threads() == before
    most = numba.config.NUMBA_NUM_THREADS
    assert main([str(tiny), '--output', str(tmp_path / 'b'), '--workers', str(most + 1)]) == 2
    assert f'--workers: expected 1..{most} with --executor local' in capsys.readouterr().err


@pytest.mark.parametrize('fmt', ['csv', 'parquet'])
def test_summary_reads_columns_not_a_dict_per_row(tmp_path, fmt):
    """The summary read the table as a dict per row (some 3 KB a row: 590 MB for 100 000
    rows): it reads the columns it needs as arrays, the same numbers, a fraction of the
    memory; runs beyond the campaign's left out, sorted by run."""
    import csv
    import tracemalloc

    from ffsim_ros.campaign.results import METRICS, read_columns

    if fmt == 'parquet':
        pytest.importorskip('pyarrow')
    file = tmp_path / 'd.yaml'
    file.write_text(TINY + 'dispersions: {joint_positions: {dist: normal, mean: 0, std: 0.01}}\n')
    out = tmp_path / 'out'
    assert main([str(file), '--output', str(out), '--format', fmt, *QUIET]) == 0
    if fmt == 'csv':  # 4000 rows (runs renumbered, in reverse order)
        lines = list(csv.DictReader((out / 'runs.csv').open()))
        with (out / 'runs.csv').open('w', newline='') as handle:
            w = csv.DictWriter(handle, fieldnames=list(lines[0]))
            w.writeheader()
            for i in reversed(range(4000)):
                w.writerow({**lines[i % 2], 'run': i})
    names = ['reached', 'failure', *(k for k, _ in METRICS), 'in.joint_positions.joint_1']
    rows = [r for r in read_rows(out) if r['run'] < 3000]
    table = read_columns(out, names, below=3000)
    assert summarize(table) == summarize(rows)
    for k in names:
        expected = [r[k] for r in rows]
        assert table[k].tolist() == expected or np.allclose(table[k], expected, equal_nan=True)
    if fmt == 'csv':
        peaks = []
        for read in (lambda: read_rows(out), lambda: read_columns(out, names)):
            tracemalloc.start()
            read()
            peaks.append(tracemalloc.get_traced_memory()[1])
            tracemalloc.stop()
        assert peaks[1] < peaks[0] / 3, peaks
