"""Where the batches of a campaign run: in this process, or as tasks on a Ray cluster.

Both executors yield :class:`~.batch.RunResult` objects as runs end (in no fixed order); a run's
result does not depend on the executor, its batch or its slot (:mod:`.dispersions`), so the
two give the same table.

* :func:`run_local`: one :class:`~.batch.BatchRunner` over the runs, the batched dynamics on all
  the cores of this machine. Needs nothing beyond the package. Its threads wait passively
  between parallel loops (:func:`passive_thread_waits`, called by ``ffsim campaign``).
* :func:`run_ray`: the runs cut into chunks of ``batch_size``, each chunk one Ray task (a
  :class:`~.batch.BatchRunner` in a worker, numba on one thread per worker), at most
  ``2 * workers`` tasks in flight (memory stays flat), results streamed back as tasks end.
  Ray is an optional dependency (``pip install ffsim_ros[ray]``, or
  ``requirements/ray.txt``); without it :func:`run_ray` raises naming the install.
"""

from __future__ import annotations

import importlib
import os
import sys
import time
from collections.abc import Iterable, Iterator, Sequence
from types import ModuleType
from typing import TextIO

from .batch import BatchRunner, Campaign, Faults, RunResult
from .interrupts import check_interrupt, take_signals_again
from .scenario import Scenario

EXECUTORS = ('local', 'ray')
#: Threads of the batched kernels (numba's OpenMP layer) sleep at once when a parallel loop
#: ends instead of spinning: a control period is a dozen short parallel loops with the law's
#: NumPy in between, and a spinning thread takes the core the others wait for as soon as the
#: machine runs anything else. Measured (B = 256, 2 cores shared, load 4-7): 1.4-2.6x the
#: throughput of the default. On an idle machine it costs a thread wake-up per loop (tens of
#: microseconds, against some 1 ms per RK4 loop at B = 256: estimated, not measured here).
THREAD_ENVIRONMENT = {'OMP_WAIT_POLICY': 'PASSIVE'}


def passive_thread_waits() -> None:
    """Set :data:`THREAD_ENVIRONMENT` (a variable set by the user is kept). Takes effect
    only before the first parallel loop of the process (OpenMP reads it when it starts)."""
    for key, value in THREAD_ENVIRONMENT.items():
        os.environ.setdefault(key, value)


class Progress:
    """A one-line progress report: runs done, rate, ETA (every ``every`` s of wall time).

    Parameters
    ----------
    total : int
        Runs to do.
    stream : text stream or None
        Where the line is written (None: nowhere).
    every : float
        Wall seconds between two reports [s].
    """

    def __init__(self, total: int, stream: TextIO | None = sys.stderr, every: float = 1.0) -> None:
        self.total, self.stream, self.every = total, stream, every
        self.done = 0
        self.t0 = self.t_shown = time.perf_counter()

    def update(self, n: int = 1) -> None:
        """``n`` more runs done.

        Parameters
        ----------
        n : int
        """
        self.done += n
        now = time.perf_counter()
        if now - self.t_shown >= self.every or self.done >= self.total:
            self.t_shown = now
            self.show(now)

    def line(self, now: float | None = None) -> str:
        """The report line.

        Parameters
        ----------
        now : float, optional
            ``time.perf_counter()`` now [s] (None: read).

        Returns
        -------
        str
        """
        elapsed = (time.perf_counter() if now is None else now) - self.t0
        rate = self.done / elapsed if elapsed > 0 else 0.0
        left = self.total - self.done
        eta = f'{left / rate:.0f} s' if rate > 0 else '?'
        return f'{self.done}/{self.total} runs, {rate:.2f} runs/s, ETA {eta}'

    def show(self, now: float | None = None) -> None:
        """Write the report line (:meth:`line`) over the previous one (a carriage return
        first), with a newline once every run is done; nothing without a ``stream``.

        Parameters
        ----------
        now : float, optional
            ``time.perf_counter()`` reading [s] the rate and ETA are computed at (now when
            None).
        """
        if self.stream is not None:
            end = '\n' if self.done >= self.total else ''
            self.stream.write('\r' + self.line(now) + end)
            self.stream.flush()


def run_local(
    campaign: Campaign,
    indices: Iterable[int],
    *,
    batch_size: int | None = None,
    faults: Faults | None = None,
) -> Iterator[RunResult]:
    """The runs ``indices`` of ``campaign`` in one batch runner in this process.

    Parameters
    ----------
    campaign : Campaign
    indices : iterable of int
        The runs to do.
    batch_size : int, optional
        Slots of the batch (default: the scenario's).
    faults : Faults, optional
        Injected faults (tests).

    Yields
    ------
    RunResult
        Each run as it ends.
    """
    yield from BatchRunner(campaign, indices, batch_size=batch_size, faults=faults)


def _chunk_task(scenario_data: dict, indices: list[int], batch_size: int) -> list[RunResult]:
    """A Ray task: the runs ``indices`` of the scenario, batched (in a worker, whose parallel
    loops run on one thread: each worker is one CPU of the cluster; Ray sets the worker's
    ``OMP_NUM_THREADS`` to the task's one CPU)."""
    try:
        numba = importlib.import_module('numba')
        numba.set_num_threads(1)
    except ImportError:  # the kernels run as plain Python: one thread anyway
        pass
    campaign = Campaign(Scenario.from_dict(scenario_data))
    return list(BatchRunner(campaign, indices, batch_size=batch_size))


#: Environment of a local Ray, set before Ray is imported: its node on the loopback address (Ray
#: takes the node address from this switch, read once when Ray is imported, and then binds its
#: servers to that address only; otherwise to every interface), no usage stats sent.
LOCAL_RAY_ENVIRONMENT = {'RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER': '0', 'RAY_USAGE_STATS_ENABLED': '0'}
LOOPBACK = '127.0.0.1'


def local_ray_options(workers: int) -> dict:
    """``ray.init`` options of the local Ray :func:`run_ray` starts: a new cluster
    (``address='local'``, never one named by ``RAY_ADDRESS``) of ``workers`` CPUs on this
    machine only, no dashboard, the workers' logs not streamed to this process.

    Parameters
    ----------
    workers : int
        CPUs of the local cluster.

    Returns
    -------
    dict
    """
    return {
        'address': 'local',
        'num_cpus': int(workers),
        'include_dashboard': False,
        'log_to_driver': False,
    }


def import_ray(local: bool) -> ModuleType:
    """Ray, imported with :data:`LOCAL_RAY_ENVIRONMENT` when ``local`` (a variable set by the
    user is kept).

    Parameters
    ----------
    local : bool
        Set :data:`LOCAL_RAY_ENVIRONMENT` first (a local Ray is to be started).

    Returns
    -------
    module
        ``ray``.

    Raises
    ------
    ImportError
        Ray is not installed (naming the install).
    """
    if local:
        for key, value in LOCAL_RAY_ENVIRONMENT.items():
            os.environ.setdefault(key, value)
    try:
        # optional: declared in setup.py's extras and requirements/ray.txt, not as a package.xml
        # exec_depend (rosdep has no key for Ray, and the local executor does not need it)
        return importlib.import_module('ray')
    except ImportError:
        raise ImportError(
            "the Ray executor needs Ray: pip install 'ffsim_ros[ray]' (or -r requirements/ray.txt)"
        ) from None


#: Seconds :func:`run_ray` waits for a task at a time before checking for a Ctrl-C.
RAY_WAIT = 0.2


def run_ray(
    scenario: Scenario,
    indices: Sequence[int],
    *,
    address: str | None = None,
    workers: int = 2,
    batch_size: int | None = None,
) -> Iterator[RunResult]:
    """The runs ``indices`` of ``scenario`` as Ray tasks (module docstring).

    Parameters
    ----------
    scenario : Scenario
    indices : sequence of int
        The runs to do.
    batch_size : int, optional
        Slots per task's batch (default: the scenario's).
    address : an existing cluster (``ray.init(address=...)``); None starts a local Ray with
        ``workers`` CPUs, on localhost only (:func:`local_ray_options`), or uses the one this
        process already started.
    workers : int, tasks in flight are at most ``2 * workers``; the CPUs of a local Ray.

    Yields
    ------
    RunResult
        One per run, task by task in the order the tasks finish.

    Raises
    ------
    ImportError
        Ray is not installed (naming the install).
    RuntimeError
        The local Ray would not be on the loopback address only (Ray was imported before
        without :data:`LOCAL_RAY_ENVIRONMENT`); it is shut down.
    """
    ray = import_ray(local=address is None)
    if not ray.is_initialized():
        if address is None:
            ray.init(**local_ray_options(workers))
            where = {node['NodeManagerAddress'] for node in ray.nodes()}
            if where != {LOOPBACK}:
                ray.shutdown()
                raise RuntimeError(
                    f'the local Ray would listen on {sorted(where)}, expected {LOOPBACK} only: '
                    'Ray was imported before without RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0; set '
                    'it, or start a cluster yourself and pass its address'
                )
        else:
            ray.init(address=address, log_to_driver=False)
        take_signals_again()  # (ray.init's SIGTERM handler exits at once: taken as a Ctrl-C)
    task = ray.remote(num_cpus=1)(_chunk_task)
    B = int(batch_size or scenario.batch_size)
    data = scenario.as_dict()
    chunks = [list(indices[i : i + B]) for i in range(0, len(indices), B)]
    pending: list = []
    try:
        while chunks or pending:
            while chunks and len(pending) < 2 * int(workers):
                pending.append(task.remote(data, chunks.pop(0), B))
            ready: list = []
            while not ready:  # (a Ctrl-C noted by deferred_interrupts is taken between waits)
                check_interrupt()
                ready, pending = ray.wait(pending, num_returns=1, timeout=RAY_WAIT)
            try:
                done = ray.get(ready[0])
            except Exception:
                check_interrupt()  # a task ended by the same Ctrl-C: the interrupt, not its error
                raise
            yield from done
    except (KeyboardInterrupt, GeneratorExit):
        for ref in pending:  # the tasks in flight are not left running
            try:
                ray.cancel(ref, force=True)
            except Exception:  # noqa: BLE001, S112 - ended or Ray gone: nothing to cancel
                continue
        raise
