"""First start: how long until the compiled kernels a process needs are ready (issue 19).

Each figure is one fresh interpreter, timed from its start to the end of its first work, wall
and CPU (CPU is what a loaded machine cannot inflate much: the compile runs on one thread):

- ``cold``: no numba cache at all (an empty ``NUMBA_CACHE_DIR``), what a colcon install pays on
  its first start before any warm-up, or any process after an edit of the kernels;
- ``cached``: the same once the cache is on disk, what every start pays after ``make setup``
  (which compiles all kernels in a background process while the interface packages build);
- ``warmup``: ``python -m ffsim_ros.dynamics.warmup`` with no cache, every kernel and signature
  of the core (``--full``; about 4 minutes on a 2-core machine).

The workloads: the simulator's engine (the sample servicer, ten momentum-preserving RK4
steps) and the reactionless controller's first update (the generalized Jacobian, the reaction
null space and the task), each alone in a cold cache, then both in one cache.

With ``--colcon``, a fresh clone instead: ``git clone`` of this repository (no cache: a clone
carries none) into a temporary colcon workspace, ``colcon build`` (which compiles the kernels
into the install), then both workloads in one process run from the install after sourcing it
(``install/setup.sh``), with the install's numba cache files counted before and after (equal:
nothing compiled). About 5 minutes on a 2-core machine.

Run with ``python benchmarks/first_start.py [--full] [--colcon]`` (``make bench`` runs
``--colcon``).
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from run import machine

ROOT = Path(__file__).resolve().parents[1]

ENGINE = """
import numpy as np
import ffsim_ros.dynamics as D
from ffsim_ros.resources import sample_robot
from ffsim_ros.sim import Engine
model = D.load_urdf(sample_robot('ffsim_servicer_7dof'))
engine = Engine(model, D.neutral(model), np.zeros(model.nv), dt_ns=1_000_000)
engine.command_efforts(np.full(model.n, 0.1))
assert engine.advance(10).step == 10
"""

CONTROLLER = """
import numpy as np
import ffsim_ros.dynamics as D
from ffsim_ros.control import ReactionlessController
from ffsim_ros.resources import sample_robot
model = D.load_urdf(sample_robot('ffsim_servicer_7dof'))
q, v = D.neutral(model), np.zeros(model.nv)
goal = D.link_pose(model, q, 'ee_link')[0] + np.array([0.1, 0.2, -0.2])
law = ReactionlessController(model, 'ee_link', mode='reactionless')
assert np.all(np.isfinite(law.compute(q, v, goal, attitude_reference=q[3:7]).tau))
"""

WARMUP = 'from ffsim_ros.dynamics.warmup import warm_up; warm_up()'


def timed(code: str, cache_dir: str) -> tuple[float, float]:
    """Wall and CPU seconds of ``python -c code`` with numba's cache in ``cache_dir``."""
    env = dict(os.environ, NUMBA_CACHE_DIR=cache_dir)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run([sys.executable, '-c', code], env=env, cwd=ROOT, check=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    return wall, cpu


def fresh_clone_colcon() -> None:
    """Print the ``--colcon`` rows (module docstring)."""
    with tempfile.TemporaryDirectory(prefix='ffsim-colcon-') as tmp:
        ws = Path(tmp)
        subprocess.run(
            ['git', 'clone', '--quiet', str(ROOT), str(ws / 'src' / 'ffsim_ros')], check=True
        )
        env = {k: v for k, v in os.environ.items() if k != 'NUMBA_CACHE_DIR'}
        env['AMENT_PREFIX_PATH'] = ''
        colcon = 'import sys; from colcon_core.command import main; sys.exit(main())'
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        done = subprocess.run(
            [sys.executable, '-c', colcon, 'build'],
            cwd=ws,
            env=env,
            capture_output=True,
            text=True,
        )
        if done.returncode:
            raise RuntimeError(f'colcon build failed:\n{done.stdout[-3000:]}{done.stderr[-3000:]}')
        build_wall = time.perf_counter() - t0
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        build_cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
        site = next((ws / 'install' / 'ffsim_ros' / 'lib').glob('python3*/site-packages'))
        caches = sorted(site.rglob('__pycache__/*.nb[ic]'))
        script = f'. ./install/setup.sh && exec "{sys.executable}" -c "$FFSIM_CODE"'
        t0 = time.perf_counter()
        subprocess.run(
            ['sh', '-c', script],
            cwd=ws,
            env={**env, 'FFSIM_CODE': ENGINE + CONTROLLER},
            check=True,
        )
        first = time.perf_counter() - t0
        compiled = len(sorted(site.rglob('__pycache__/*.nb[ic]'))) - len(caches)
    print(
        f'fresh clone, `colcon build` (kernels compiled into the install): {build_wall:.1f} s '
        f'wall, {build_cpu:.1f} s CPU; {len(caches)} cache files installed'
    )
    print(
        f'then engine + controller in one process from the install: {first:.1f} s wall, '
        f'{compiled} cache files written (0: nothing compiled)'
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--full', action='store_true', help='also the whole warm-up, cold')
    parser.add_argument(
        '--colcon', action='store_true', help='also a fresh clone built with colcon (~5 min)'
    )
    args = parser.parse_args(argv)
    print(f'# first start ({machine()}; load {os.getloadavg()[0]:.1f})')
    print(f'{"workload":<34} {"cold wall":>10} {"cold CPU":>9} {"cached wall":>12}')
    rows = [('simulator engine (servicer)', ENGINE), ('reactionless controller', CONTROLLER)]
    rows.append(('both in one process', ENGINE + CONTROLLER))
    if args.full:
        rows.append(('the whole warm-up', WARMUP))
    for name, code in rows:
        with tempfile.TemporaryDirectory(prefix='ffsim-numba-') as cache:
            cold_wall, cold_cpu = timed(code, cache)
            cached_wall, _ = timed(code, cache)
        print(f'{name:<34} {cold_wall:>9.1f}s {cold_cpu:>8.1f}s {cached_wall:>11.1f}s')
    if args.colcon:
        fresh_clone_colcon()


if __name__ == '__main__':
    main()
