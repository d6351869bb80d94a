"""Campaign throughput (issue 20): batched closed loops against the same runs one by one.

The issue's case: the 7-DoF servicer, reactionless mode, RK4 at 1 kHz with the controller at
100 Hz. Every run gets one goal far enough that it is still tracking when the run's bound ends
(``--seconds`` of simulated time each), so every run advances the same simulated time and
the figures are simulated seconds per wall second:

* ``batched``: ``--batch`` runs advanced in lockstep by one :class:`BatchRunner` (the batched
  dynamics use every core; their threads wait passively, as ``ffsim campaign`` sets);
* ``batched, 1 thread``: the same with numba's parallel loops on one thread (one core);
* ``one by one``: ``--single`` of the same runs, each in its own :class:`ClosedLoop` with a
  :class:`ReachSupervisor` (what a campaign without batching does);
* ``dynamics only``: the batched physics of ``--batch`` states over the same simulated time
  with the efforts held (no controller): the bound the closed loop can approach;
* ``ray 1 / ray 2``: the batched runs as Ray tasks (batches of ``--ray-batch``) on a local Ray
  with one and with two workers (``--no-ray`` skips);
* ``memory``: the resident set size over a campaign of ``--memory-runs`` short runs
  (``--memory-seconds`` each) written to the CSV and Parquet tables as they end, at every
  tenth of it (flat when the results are not kept in memory).

Reported as ratios in one run: batched / one-by-one (and per core: batched on one thread /
one-by-one), batched / dynamics-only, ray 2 / ray 1, and per core (wall time x cores used),
each row with the machine's 1-minute load average (a shared machine gives pessimistic rates)
and the simulated seconds per CPU second this process used (all its threads; spinning
included): a per-core rate that the other jobs of a shared machine do not lower.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib.util
import math
import os
import resource
import tempfile
import time

import numba
import numpy as np

import ffsim_ros.dynamics as D
from ffsim_ros.campaign.batch import BatchRunner, Campaign
from ffsim_ros.campaign.dispersions import sample_inputs
from ffsim_ros.campaign.executors import import_ray, passive_thread_waits, run_ray
from ffsim_ros.campaign.results import ResultsWriter
from ffsim_ros.campaign.scenario import Scenario
from ffsim_ros.control import ReachSupervisor, ReactionlessController
from ffsim_ros.control.closed_loop import ClosedLoop


def scenario(runs: int, seconds: float, batch: int) -> Scenario:
    return Scenario.from_dict(
        {
            'name': 'bench',
            'robot': 'ffsim_servicer_7dof',
            'mode': 'reactionless',
            'runs': runs,
            'seed': 20,
            'batch_size': batch,
            'timing': {
                'physics_dt': 0.001,
                'control_dt': 0.01,
                'settle': 0.0,
                'run_goal_timeout': seconds,
            },
            'goals': {'kind': 'offsets', 'offsets': [[0.3, 0.25, -0.3]]},
            'dispersions': {
                'joint_positions': {'dist': 'uniform', 'low': -0.1, 'high': 0.1},
                'angular_momentum': {'dist': 'normal', 'std': 0.01},
                'goal_offset': {'dist': 'normal', 'std': 0.02},
            },
        }
    )


def sim_seconds(results) -> float:
    return float(sum(r.t for r in results))


class Timer:
    """Wall time and this process's CPU time (all its threads) since it was made."""

    def __init__(self) -> None:
        self.wall, self.cpu = time.perf_counter(), time.process_time()

    def __call__(self) -> tuple[float, float]:
        return time.perf_counter() - self.wall, time.process_time() - self.cpu


def batched(s: Scenario) -> tuple[float, float, float]:
    c = Campaign(s)
    list(BatchRunner(c, range(min(4, s.runs)), batch_size=4))  # warm
    timer = Timer()
    results = list(BatchRunner(c, range(s.runs)))
    wall, cpu = timer()
    assert not any(r.failure for r in results)
    return sim_seconds(results), wall, cpu


def batched_one_thread(s: Scenario) -> tuple[float, float, float]:
    """:func:`batched` with numba's parallel loops on one thread: the throughput of one core
    (what a Ray worker runs), free of the waits between threads of a shared machine."""
    threads = numba.get_num_threads()
    numba.set_num_threads(1)
    try:
        return batched(s)
    finally:
        numba.set_num_threads(threads)


def one_by_one(s: Scenario, runs: int) -> tuple[float, float, float]:
    c = Campaign(s)
    t = s.timing
    sim = 0.0
    timer = Timer()
    for i in range(runs):
        inputs = sample_inputs(s, c.model, i)
        law = ReactionlessController(c.model, s.ee_link, mode=s.mode, gains=s.gains)
        settings = dataclasses.replace(s.reach, plan_seed=inputs.plan_seed)
        loop = ClosedLoop(
            ReachSupervisor(law, settings),
            inputs.q0,
            inputs.v0,
            control_dt=t.control_dt,
            physics_dt=t.physics_dt,
        )
        goal = loop.ee_position() + inputs.goal_offsets[0]
        loop.run_goal(goal, timeout=t.run_goal_timeout, settle=t.settle)
        sim += loop.t
    return (sim, *timer())


def dynamics_only(s: Scenario) -> tuple[float, float, float]:
    c = Campaign(s)
    B = s.runs
    Q = np.stack([sample_inputs(s, c.model, i).q0 for i in range(B)])
    V = np.stack([sample_inputs(s, c.model, i).v0 for i in range(B)])
    tau = np.zeros((B, c.model.n))
    periods = int(round(s.timing.run_goal_timeout / s.timing.control_dt))
    D.step(c.model, Q[:2], V[:2], tau[:2], 0.001, steps=2)
    timer = Timer()
    for _ in range(periods):
        Q, V = D.step(c.model, Q, V, tau, c.physics_dt, steps=c.steps)
    return (B * periods * s.timing.control_dt, *timer())


def ray_rate(s: Scenario, workers: int, batch: int) -> tuple[float, float, float]:
    ray = import_ray(local=True)  # before any `import ray`: the local Ray on loopback only
    try:
        list(
            run_ray(
                s.with_changes(runs=2 * workers),
                list(range(2 * workers)),
                workers=workers,
                batch_size=1,
            )
        )  # start the workers, load the caches
        t0 = time.perf_counter()
        results = list(run_ray(s, list(range(s.runs)), workers=workers, batch_size=batch))
        return sim_seconds(results), time.perf_counter() - t0, math.nan  # CPU: in workers
    finally:
        ray.shutdown()


def rss_mb() -> float:
    with open('/proc/self/status') as f:
        for line in f:
            if line.startswith('VmRSS:'):
                return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def memory(runs: int, batch: int, seconds: float) -> list[tuple[int, float]]:
    """``(runs done, RSS [MB])`` at every tenth of a campaign of ``runs`` short runs, rows
    written to the tables (CSV, and Parquet when pyarrow is installed) as they end."""
    s = scenario(runs, seconds, batch)
    c = Campaign(s)
    formats = ('csv', 'parquet') if importlib.util.find_spec('pyarrow') else ('csv',)
    at = {runs * k // 10 for k in range(1, 11)}
    marks = []
    with tempfile.TemporaryDirectory() as folder, ResultsWriter(folder, c, formats) as writer:
        for k, r in enumerate(BatchRunner(c, range(runs))):
            writer.write(r)
            if k + 1 in at:
                marks.append((k + 1, rss_mb()))
    return marks


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--batch', type=int, default=256, help='runs in the batch (B)')
    parser.add_argument('--single', type=int, default=8, help='runs done one by one')
    parser.add_argument('--seconds', type=float, default=2.0, help='simulated seconds per run')
    parser.add_argument('--ray-batch', type=int, default=64, help='runs per Ray task')
    parser.add_argument('--no-ray', action='store_true')
    parser.add_argument('--memory-runs', type=int, default=10_000)
    parser.add_argument('--memory-seconds', type=float, default=0.05, help='per run')
    parser.add_argument('--quick', action='store_true', help='B = 32, 2 runs one by one')
    args = parser.parse_args(argv)
    if args.quick:
        args.batch, args.single, args.seconds, args.memory_runs = 32, 2, 1.0, 200
        args.ray_batch = 8
    if not args.no_ray and importlib.util.find_spec('ray') is None:
        print('ray is not installed (pip install -r requirements/ray.txt): Ray rows skipped')
        args.no_ray = True
    passive_thread_waits()  # as `ffsim campaign` does, before the first parallel loop
    cores = len(os.sched_getaffinity(0))
    s = scenario(args.batch, args.seconds, args.batch)
    rows = []

    def add(name, n, sim, wall, cpu, used):
        rows.append((name, n, sim, wall, cpu, used, os.getloadavg()[0]))

    add('batched', args.batch, *batched(s), cores)
    add('batched, 1 thread', args.batch, *batched_one_thread(s), 1)
    add('one by one', args.single, *one_by_one(s, args.single), 1)
    add('dynamics only', args.batch, *dynamics_only(s), cores)
    if not args.no_ray:
        for w in (1, 2):
            add(f'ray {w} worker(s)', args.batch, *ray_rate(s, w, args.ray_batch), w)
    print(
        f'\ncampaign throughput: 7-DoF servicer, reactionless, RK4 1 kHz, controller 100 Hz, '
        f'{args.seconds:g} s per run, {cores} cores (load: 1-min load average after the row)'
    )
    print(
        '| executor | runs | sim s | wall s | sim s / wall s | per core | sim s / CPU s | load |'
    )
    print('|---|---|---|---|---|---|---|---|')
    rate, per_cpu = {}, {}
    for name, n, sm, wl, cpu, used, load in rows:
        rate[name], per_cpu[name] = sm / wl, sm / cpu
        print(
            f'| {name} | {n} | {sm:.0f} | {wl:.2f} | {sm / wl:.1f} | {sm / wl / used:.1f} '
            f'| {sm / cpu:.1f} | {load:.1f} |'
        )
    one, single = rate['one by one'], rate['batched, 1 thread']
    print(
        f'ratios: batched / one by one {rate["batched"] / one:.1f}x (>= 5), per core '
        f'{single / one:.1f}x; batched per core {rate["batched"] / cores:.0f}x real time, on '
        f'one thread {single:.0f}x (>= 50); batched / dynamics only '
        f'{rate["batched"] / rate["dynamics only"]:.2f}'
    )
    cpu_ratio = per_cpu['batched'] / per_cpu['one by one']
    print(
        f'ratios in CPU time: batched / one by one {cpu_ratio:.1f}x, batched '
        f'{per_cpu["batched"]:.0f}x real time per CPU second (>= 50)'
    )
    if not args.no_ray:
        r2 = rate['ray 2 worker(s)'] / rate['ray 1 worker(s)']
        print(f'ratios: ray 2 workers / ray 1 worker {r2:.2f}x (>= 1.6)')
    t0 = time.perf_counter()
    marks = memory(args.memory_runs, min(args.batch, 256), args.memory_seconds)
    wall = time.perf_counter() - t0
    print(
        f'memory: {args.memory_runs} runs of {args.memory_seconds:g} s in {wall:.0f} s, rows '
        'written as they end; RSS [MB] after ' + ', '.join(f'{n}: {m:.0f}' for n, m in marks)
    )
    print(f'memory: RSS at the end / at a tenth {marks[-1][1] / marks[0][1]:.3f}')


if __name__ == '__main__':
    main()
