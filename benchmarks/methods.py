"""Time per forward-dynamics call of each method against the number of joints n.

Methods: ``aba`` (articulated-body algorithm, numba), ``crba`` (mass matrix + Cholesky,
numba), ``kkt`` (Mufti's sparse Lagrangian system, seed 001 eqs. 10/49, NumPy/SciPy),
``nullspace`` (its null-space form, eq. 40-c with ``Z`` from a dense QR) and ``multipliers``
(eqs. 14/50: accelerations eliminated, the sparse multiplier system). Robots: serial chains
(:func:`chain_urdf`) and branched random trees (:func:`random_urdf`, branching 0.5), floating
base, n = 2..100. The growth exponent is the least-squares slope of log(time) against log(n)
over n >= 16 (below that, per-call overheads dominate).

A second, smaller table times the forms of seed 001 section 3.1 on trees of ball-and-socket
joints (:mod:`ffsim_ros.dynamics.mufti.barycentric`: ``kkt``, ``eq14``, ``eq16``, ``eq28``,
``eq38``; dense NumPy except the sparse ``kkt`` / ``eq14``), random branched trees of n bodies.

Run: ``.venv/bin/python benchmarks/methods.py`` (about a minute on 2 cores). Prints the table
and writes ``docs/methods_scaling.png``.
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

# single-threaded BLAS: per-call timings of small dense factorizations are otherwise dominated
# by thread start-up and contention on a 2-core machine (measured 2x slower at n = 64)
for _var in ('OPENBLAS_NUM_THREADS', 'OMP_NUM_THREADS', 'MKL_NUM_THREADS'):
    os.environ.setdefault(_var, '1')

import numpy as np  # noqa: E402

import ffsim_ros.dynamics as D  # noqa: E402
from ffsim_ros.dynamics.random_urdf import chain_urdf, random_urdf  # noqa: E402

METHODS = ('aba', 'crba', 'kkt', 'nullspace', 'multipliers')
BALL_SIZES = (2, 4, 8, 16, 32)
SIZES = (2, 4, 8, 16, 32, 64, 100)
FIT_FROM = 16


def time_call(model: D.Model, method: str, budget: float) -> float:
    """Median seconds per ``forward_dynamics`` call over a few batches within ``budget`` s."""
    rng = np.random.default_rng(0)
    q = D.neutral(model)
    quat = rng.normal(size=4)
    q[:3], q[3:7] = rng.normal(size=3), quat / np.linalg.norm(quat)
    q[7:] = rng.uniform(-1, 1, model.n)
    v, tau = rng.normal(size=model.nv), rng.normal(size=model.n)
    D.forward_dynamics(model, q, v, tau, method=method)  # warm-up (JIT cache, imports)
    t0 = time.perf_counter()
    D.forward_dynamics(model, q, v, tau, method=method)
    once = max(time.perf_counter() - t0, 1e-7)
    per_batch = max(1, int(budget / 5 / once))
    samples = []
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(per_batch):
            D.forward_dynamics(model, q, v, tau, method=method)
        samples.append((time.perf_counter() - t0) / per_batch)
    return float(np.median(samples))


def ball_tree(n: int, seed: int = 0):
    """A random branched tree of n bodies on ball joints, a random state and random loads."""
    from scipy.spatial.transform import Rotation

    from ffsim_ros.dynamics.mufti import barycentric as BC

    rng = np.random.default_rng(seed)
    parent = np.array([-1] + [int(rng.integers(max(0, i - 3), i)) for i in range(1, n)])
    A = rng.normal(size=(n, 3, 3))
    tree = BC.BallTree(
        parent,
        rng.uniform(0.5, 3.0, n),
        0.3 * A @ np.swapaxes(A, 1, 2) + 0.05 * np.eye(3),
        rng.normal(scale=0.5, size=(n - 1, 3)),
        rng.normal(scale=0.5, size=(n - 1, 3)),
    )
    R = Rotation.random(n, random_state=rng).as_matrix()
    loads = dict(
        forces=rng.normal(size=(n, 3)),
        torques=rng.normal(size=(n, 3)),
        hinge_torques=rng.normal(size=(n - 1, 3)),
    )
    return tree, R, rng.normal(size=(n, 3)), loads


def time_ball(n: int, method: str, budget: float) -> float:
    """Median seconds per ``ball_tree_dynamics`` call (as :func:`time_call`)."""
    from ffsim_ros.dynamics.mufti.barycentric import ball_tree_dynamics

    tree, R, w, loads = ball_tree(n)

    def call() -> None:
        ball_tree_dynamics(tree, R, w, method=method, **loads)

    call()
    t0 = time.perf_counter()
    call()
    once = max(time.perf_counter() - t0, 1e-7)
    per_batch = max(1, int(budget / 5 / once))
    samples = []
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(per_batch):
            call()
        samples.append((time.perf_counter() - t0) / per_batch)
    return float(np.median(samples))


def exponent(ns: np.ndarray, ts: np.ndarray) -> float:
    """Least-squares slope of log t against log n for n >= FIT_FROM."""
    sel = ns >= FIT_FROM
    return float(np.polyfit(np.log(ns[sel]), np.log(ts[sel]), 1)[0])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--budget', type=float, default=0.25, help='seconds per measurement')
    parser.add_argument(
        '--plot',
        type=Path,
        default=Path(__file__).resolve().parent.parent / 'docs' / 'methods_scaling.png',
    )
    args = parser.parse_args()
    shapes = {
        'chain': lambda n: chain_urdf(n, seed=1),
        'tree': lambda n: random_urdf(n, n, branching=0.5, fixed_children=False),
    }
    results: dict[tuple[str, str], np.ndarray] = {}
    ns = np.array(SIZES, dtype=float)
    t_start = time.perf_counter()
    for shape, make in shapes.items():
        models = [D.load_urdf(make(n)) for n in SIZES]
        for method in METHODS:
            results[shape, method] = np.array([time_call(m, method, args.budget) for m in models])
    elapsed = time.perf_counter() - t_start

    head = f'{"shape":6} {"method":10} ' + ' '.join(f'{f"n={n}":>9}' for n in SIZES)
    print('time per forward-dynamics call [us] (floating base)')
    print(head + f' {"exponent":>9}')
    for (shape, method), ts in results.items():
        cells = ' '.join(f'{t * 1e6:9.1f}' for t in ts)
        print(f'{shape:6} {method:10} {cells} {exponent(ns, ts):9.2f}')
    print(
        f'(exponent: log-log least-squares slope over n >= {FIT_FROM}; run took {elapsed:.0f} s)'
    )

    from ffsim_ros.dynamics.mufti.barycentric import METHODS as BALL_METHODS

    print('\ntime per call on trees of ball joints [us] (mufti.barycentric, n bodies)')
    print(f'{"method":10} ' + ' '.join(f'{f"n={n}":>9}' for n in BALL_SIZES))
    for method in BALL_METHODS:
        ts = [time_ball(n, method, args.budget / 2) for n in BALL_SIZES]
        print(f'{method:10} ' + ' '.join(f'{t * 1e6:9.1f}' for t in ts))

    import matplotlib

    matplotlib.use('Agg')
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(10, 4), sharey=True)
    for ax, shape in zip(axes, shapes, strict=True):
        for method in METHODS:
            ts = results[shape, method]
            ax.loglog(ns, ts * 1e6, 'o-', label=f'{method} (n^{exponent(ns, ts):.2f})')
        ax.set_title(f'{shape}s, floating base')
        ax.set_xlabel('joints n')
        ax.grid(True, which='both', alpha=0.3)
        ax.legend()
    axes[0].set_ylabel('time per forward_dynamics call [us]')
    fig.tight_layout()
    args.plot.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(args.plot, dpi=110)
    print(f'plot: {args.plot}')


if __name__ == '__main__':
    main()
