"""``ffsim campaign SCENARIO.yaml``: run a Monte Carlo campaign from a scenario file (no ROS).

Writes into ``--output`` (default: ``campaign_<name>``): ``scenario.json``, the table of runs
(``--format``: ``runs.csv``, one row per run appended as runs end, and/or ``runs.parquet/``,
Parquet parts written as runs end; :mod:`.results`), ``summary.md`` (success rate with its
95 % interval, percentiles of the outcome metrics) and PNG plots. Running it again on the same
folder resumes the campaign (finished runs are not redone); ``--runs`` extends it.
``--replay RUN`` runs one run alone and writes its trajectory at the control rate to
``run_<RUN>.npz``; with ``--mcap PATH`` also its ROS 2 messages to an MCAP file
(:mod:`.replay`).

Exit codes: 0 done, 1 a file of the campaign cannot be written (disk full, no permission: one
line naming it; the rows written so far are kept, running it again resumes), 2 a bad scenario or
argument, or a module it needs not installed (Ray, pyarrow, matplotlib without ``--no-plots``,
ROS 2 for ``--mcap``; the message names it; nothing is written), a folder another campaign is
writing (it holds the folder's lock) or a damaged table, 130 interrupted (Ctrl-C: taken at the
end of a control period, never inside a kernel, so that no run is failed by it), 143 terminated
(SIGTERM, as batch schedulers stop a job: taken as a Ctrl-C, the tables closed and the buffered
rows written).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import socket
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import numpy as np

from ffsim_ros.dependencies import check

from .batch import BatchRunner, Campaign
from .executors import (
    EXECUTORS,
    Progress,
    import_ray,
    passive_thread_waits,
    run_local,
    run_ray,
)
from .folder import FolderLock, check_folder, write_scenario
from .interrupts import Terminated, deferred_interrupts, find_interrupt
from .results import (
    FORMATS,
    METRICS,
    PARQUET,
    PLOT_INPUTS,
    PLOTS,
    ResultsWriter,
    WriteError,
    plot,
    pyarrow_modules,
    pyplot,
    read_columns,
    summarize,
    summary_markdown,
)
from .scenario import ScenarioError, load_scenario


def parser(prog: str = 'ffsim campaign') -> argparse.ArgumentParser:
    """The command's argument parser.

    Parameters
    ----------
    prog : str
        The program name in the usage line.

    Returns
    -------
    argparse.ArgumentParser
    """
    p = argparse.ArgumentParser(prog=prog, description=__doc__.split('\n\n')[0].split(': ', 1)[1])
    p.add_argument('scenario', help='scenario YAML file (see ffsim_ros.campaign.scenario)')
    p.add_argument('--output', default=None, help='output folder (default: campaign_<name>)')
    p.add_argument('--runs', type=int, default=None, help="number of runs (default: the file's)")
    p.add_argument(
        '--batch-size',
        type=int,
        default=None,
        help="runs per batch (default: the file's; at most the number of runs: cut to it)",
    )
    p.add_argument(
        '--executor',
        choices=EXECUTORS,
        default='local',
        help='where the batches run: local (this process, default) or ray',
    )
    p.add_argument('--address', default=None, help='Ray cluster address (default: a local Ray)')
    p.add_argument(
        '--workers',
        type=int,
        default=None,
        help='local: threads of the batched kernels (default: every CPU numba may use); ray: '
        'the CPUs of a local Ray, tasks in flight / 2 (default 2)',
    )
    p.add_argument(
        '--no-plots', action='store_true', help='skip the PNG plots (they need matplotlib)'
    )
    p.add_argument('--quiet', action='store_true', help='no progress line')
    p.add_argument(
        '--format',
        choices=(*FORMATS, 'both'),
        default='csv',
        help='table format (Parquet needs pyarrow); formats already in the folder are kept',
    )
    p.add_argument('--replay', type=int, default=None, metavar='RUN', help='replay one run')
    p.add_argument('--mcap', default=None, metavar='PATH', help='--replay: also write an MCAP')
    return p


def main(argv: list[str] | None = None) -> int:
    """Entry point (``ffsim campaign`` and the ``ffsim_campaign`` console script). Ctrl-C: one
    line (the rows written so far are kept: running it again resumes), exit 130; a file that
    cannot be written: one line, exit 1.

    Parameters
    ----------
    argv : list of str, optional
        The arguments (default ``sys.argv[1:]``).

    Returns
    -------
    int
        The exit status.
    """
    try:
        return _main(argv)
    except KeyboardInterrupt as exc:
        return _interrupted(exc)
    except WriteError as exc:
        print(f'ffsim campaign: error: {exc}', file=sys.stderr)
        return 1
    except Exception as exc:
        found = find_interrupt(exc)  # a Ctrl-C that landed in a kernel (numba's SystemError)
        if found is not None:
            return _interrupted(found)
        raise


def _interrupted(exc: KeyboardInterrupt) -> int:
    """One line; 130 for a Ctrl-C, 143 (128 + 15) for a SIGTERM (:class:`Terminated`)."""
    what = 'terminated (SIGTERM)' if isinstance(exc, Terminated) else 'interrupted'
    print(
        f'ffsim campaign: {what}; the rows written so far are kept (run again to resume)',
        file=sys.stderr,
    )
    return 143 if isinstance(exc, Terminated) else 130


def _main(argv: list[str] | None) -> int:
    passive_thread_waits()
    args = parser().parse_args(argv)
    try:
        scenario = load_scenario(args.scenario)
        changes = {}
        if args.runs is not None:
            changes['runs'] = args.runs
        if args.batch_size is not None:
            changes['batch_size'] = args.batch_size
        if changes:
            scenario = scenario.with_changes(**changes)
        if args.workers is not None:
            _check_workers(args.workers, args.executor)
        if args.mcap is not None and args.replay is None:
            raise ScenarioError('--mcap: expected with --replay RUN')
        # the modules needed after the runs, found missing before the model is built (its
        # kernels can take minutes to compile on first use) and anything is written
        if args.mcap is not None:
            try:  # ROS 2 and the MCAP writer (the replay writes run_<RUN>.npz first)
                check('replay')
            except ImportError as exc:
                raise ScenarioError(f'--mcap: {exc}') from None
        if args.replay is None and not args.no_plots:
            pyplot()  # (the plots come after every run)
        campaign = Campaign(scenario)
        out = Path(args.output or f'campaign_{scenario.name}')
        if args.mcap is not None:
            _check_mcap(Path(args.mcap))
        if args.executor == 'ray' and args.address is not None:
            _check_ray_address(args.address)
        if args.replay is not None:
            return _replay(campaign, args.replay, out, args.mcap)
        if args.executor == 'ray':
            try:  # (before anything is written)
                import_ray(local=args.address is None)
            except ImportError as exc:
                raise ScenarioError(f'--executor ray: {exc}') from None
        formats = FORMATS if args.format == 'both' else (args.format,)
        if 'parquet' in formats or (out / PARQUET).exists():
            pyarrow_modules()  # (refused before the folder is made)
        out.mkdir(parents=True, exist_ok=True)
        lock = FolderLock(out)  # (held to the summary: one campaign at a time in a folder)
    except (ScenarioError, OSError, UnicodeDecodeError) as exc:
        print(f'ffsim campaign: error: {exc}', file=sys.stderr)
        return 2
    try:
        return _run(args, campaign, out, formats, lock)
    finally:
        lock.release()


def _run(
    args: argparse.Namespace, campaign: Campaign, out: Path, formats: tuple, lock: FolderLock
) -> int:
    """The campaign into ``out`` (locked by the caller): the runs to do, then the summary."""
    scenario = campaign.scenario
    try:
        writer = ResultsWriter(out, campaign, formats, lock=lock)
        for name in ('summary.md', *PLOTS):  # (of an earlier state; written again at the end)
            (out / name).unlink(missing_ok=True)
    except (ScenarioError, OSError, UnicodeDecodeError) as exc:
        print(f'ffsim campaign: error: {exc}', file=sys.stderr)
        return 2
    todo = [i for i in range(scenario.runs) if i not in writer.done]
    progress = Progress(len(todo), None if args.quiet else sys.stderr)
    with writer, _local_threads(args), deferred_interrupts():  # (tables closed after a signal)
        if args.executor == 'local':
            results = run_local(campaign, todo)
        else:
            workers = 2 if args.workers is None else args.workers
            results = run_ray(scenario, todo, address=args.address, workers=workers)
        for result in results:
            writer.write(result)
            progress.update()
    names = ['reached', 'failure', *(key for key, _ in METRICS), *campaign.inputs[:PLOT_INPUTS]]
    try:  # (by columns: memory of arrays, not of a dict per row)
        table = read_columns(out, names, below=scenario.runs)
    except ScenarioError as exc:
        print(f'ffsim campaign: error: {exc}', file=sys.stderr)
        return 2
    text = summary_markdown(scenario, summarize(table))
    path = out / 'summary.md'
    try:
        path.write_text(text)
        if not args.no_plots:
            path = out
            plot(table, out, campaign.inputs)
    except OSError as exc:
        raise WriteError(Path(exc.filename or path), exc) from None
    print(text)
    return 0


def _check_workers(workers: int, executor: str) -> None:
    """``--workers``: >= 1; with the local executor at most the threads numba may start."""
    if workers < 1:
        raise ScenarioError(f'--workers: expected an integer >= 1, got {workers}')
    if executor == 'local':
        numba = _numba()
        most = 1 if numba is None else numba.config.NUMBA_NUM_THREADS
        if workers > most:
            raise ScenarioError(
                f'--workers: expected 1..{most} with --executor local (the threads numba may '
                f'start, NUMBA_NUM_THREADS), got {workers}'
            )


def _numba() -> ModuleType | None:
    """numba, or None without it (the kernels then run as plain Python, on one thread)."""
    try:
        return importlib.import_module('numba')
    except ImportError:
        return None


@contextlib.contextmanager
def _local_threads(args: argparse.Namespace) -> Iterator[None]:
    """Within: the batched kernels on ``--workers`` threads (local executor; the count before
    restored after)."""
    numba = _numba()
    if args.executor != 'local' or args.workers is None or numba is None:
        yield
        return
    before = numba.get_num_threads()
    numba.set_num_threads(args.workers)
    try:
        yield
    finally:
        numba.set_num_threads(before)


#: Seconds ``--address`` is given to accept a connection (:func:`_check_ray_address`).
ADDRESS_TIMEOUT = 5.0


def _check_mcap(path: Path) -> None:
    """``--mcap``: a new file, or an existing regular one (replaced), in an existing folder; not
    a FIFO (opening it would wait for a reader), a device or a folder."""
    if path.exists() and not path.is_file():
        raise ScenarioError(f'--mcap: expected a regular file (or a new one), got {str(path)!r}')
    if not path.parent.is_dir():
        raise ScenarioError(f'--mcap: expected a file in an existing folder, got {str(path)!r}')
    existed = path.exists()
    try:  # (writable: found now, not after the replay ran)
        with open(path, 'ab'):
            pass
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise ScenarioError(f'--mcap: cannot write {str(path)!r}: {reason}') from None
    if not existed:
        path.unlink(missing_ok=True)
    if not os.access(path.parent, os.W_OK | os.X_OK):  # (written as <name>.part, then renamed)
        raise ScenarioError(f'--mcap: cannot write into the folder of {str(path)!r}')


def _check_ray_address(address: str) -> None:
    """``--address HOST:PORT`` (or ``ray://HOST:PORT``) of a Ray cluster accepts a TCP
    connection within :data:`ADDRESS_TIMEOUT` seconds: ``ray.init`` has no timeout and retries
    an unreachable one for over a minute, ignoring Ctrl-C. ``auto`` and ``local`` are Ray's
    to resolve."""
    if address in ('auto', 'local'):
        return
    host, _, port = address.removeprefix('ray://').rpartition(':')
    host = host.strip('[]')
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ScenarioError(f'--address: expected HOST:PORT (or auto), got {address!r}')
    try:
        socket.create_connection((host, int(port)), timeout=ADDRESS_TIMEOUT).close()
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise ScenarioError(
            f'--address: no Ray cluster reachable at {address!r}: {reason}'
        ) from None


def _replay(campaign: Campaign, index: int, out: Path, mcap: str | None) -> int:
    runs = campaign.scenario.runs
    if not 0 <= index < runs:
        raise ScenarioError(f'--replay: expected a run index in 0..{runs - 1}, got {index}')
    out.mkdir(parents=True, exist_ok=True)
    check_folder(out, campaign.scenario)  # (not into another scenario's campaign)
    write_scenario(out, campaign.scenario)
    result = next(iter(BatchRunner(campaign, [index], batch_size=1, record=True)))
    path = out / f'run_{index}.npz'
    np.savez(path, q_final=result.q, v_final=result.v, t_final=result.t, **result.trajectory)
    print(f'run {index}: reached {result.reached}, failure {result.failure!r}; wrote {path}')
    if mcap is not None:
        from .replay import write_mcap  # ROS 2 messages: only for this

        counts = write_mcap(campaign, result, Path(mcap))
        print(f'wrote {mcap}: ' + ', '.join(f'{n} {t}' for t, n in counts.items()))
    return 0


if __name__ == '__main__':
    sys.exit(main())
