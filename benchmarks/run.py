"""Speed of the dynamics core side by side with Pinocchio (the reference), in one run.

Run with ``make bench``. Every figure is the minimum over repeats of the mean time per call
from Python, ours and Pinocchio's measured in alternation; the ratio is ours / Pinocchio's.
Pinocchio is given the same URDF with a free-flyer root and the same gravity (zero). The
robots: the sample servicer, a random tree, and real arms from example-robot-data (Franka
Panda with its fingers, UR5, xArm7, Kinova), all on a floating base.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import os
import platform
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

import ffsim_ros.dynamics as D
from ffsim_ros.dynamics.random_urdf import random_urdf
from ffsim_ros.resources import sample_robot


def machine() -> str:
    """CPU model, cores, Python, and numba's LLVM target CPU: the generated code, and so the
    single-call figures, depend on it (an AVX-512 host gets other code than an AVX2 one)."""
    cpu = platform.processor() or platform.machine()
    try:
        with open('/proc/cpuinfo') as f:
            cpu = next(ln.split(':', 1)[1].strip() for ln in f if ln.startswith('model name'))
    except (OSError, StopIteration):
        pass
    try:
        import llvmlite.binding as llvm
        import numba

        target = f'numba {numba.__version__}, LLVM target {llvm.get_host_cpu_name()}'
    except ImportError:  # pragma: no cover
        target = 'numba not installed'
    return (
        f'{cpu}, {os.cpu_count()} cores, {platform.python_implementation()} '
        f'{platform.python_version()}, {target}'
    )


def _time_per_call(fn: Callable[[int], object], states: int, repeats: int) -> float:
    """Minimum over ``repeats`` of the mean seconds per call over ``states`` calls.

    The minimum, not the median: on a shared 2-core machine every disturbance only adds time,
    so the fastest repeat is the best estimate of the cost itself (as ``timeit`` advises).
    """
    fn(0)  # warm-up (JIT compile / caches)
    samples = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for k in range(states):
            fn(k)
        samples.append((time.perf_counter() - t0) / states)
    return min(samples)


def _time_pair(
    ours: Callable[[int], object],
    ref: Callable[[int], object] | None,
    states: int,
    repeats: int,
) -> tuple[float, float]:
    """Seconds per call of ``ours`` and ``ref``, measured in alternation (one repeat of each
    in turn) so that both see the same machine load; minimum over the repeats of each."""
    t_ours, t_ref = [], []
    for _ in range(repeats):
        t_ours.append(_time_per_call(ours, states, 1))
        if ref is not None:
            t_ref.append(_time_per_call(ref, states, 1))
    return min(t_ours), (min(t_ref) if t_ref else float('nan'))


# Real robots (example-robot-data, installed by `make setup` for the tests and benchmarks).
REAL_ROBOTS = {
    'panda': 'panda_description/urdf/panda.urdf',
    'ur5': 'ur_description/urdf/ur5_robot.urdf',
    'xarm7': 'xarm_description/urdf/xarm7.urdf',
    'kinova': 'kinova_description/robots/kinova.urdf',
}


def real_robot_urdf(rel: str) -> str | None:
    """A URDF of example-robot-data, or None where that package is not installed."""
    try:
        dist = importlib.metadata.distribution('example-robot-data')
    except importlib.metadata.PackageNotFoundError:
        return None
    path = Path(str(dist.locate_file('cmeel.prefix/share/example-robot-data/robots'))) / rel
    return path.read_text() if path.is_file() else None


@dataclass
class Workload:
    """The same number of random states for ours and for Pinocchio, floating base, no gravity
    (Pinocchio's drawn with its own ``randomConfiguration``: the timings, not the values,
    are compared)."""

    model: D.Model
    pm: Any  # pinocchio.Model
    pd: Any  # pinocchio.Data
    qs: list[np.ndarray]
    vs: list[np.ndarray]
    taus: list[np.ndarray]
    pqs: list[np.ndarray]
    pvs: list[np.ndarray]
    ptaus: list[np.ndarray]


def workload(urdf: str, states: int) -> Workload:
    """``states`` random states of the robot ``urdf`` for ours and for Pinocchio."""
    import pinocchio as pin

    model = D.load_urdf(urdf)
    pm = pin.buildModelFromXML(urdf, pin.JointModelFreeFlyer())
    pm.gravity.linear[:] = 0.0
    w = Workload(model, pm, pm.createData(), [], [], [], [], [], [])
    rng = np.random.default_rng(0)
    for _ in range(states):
        q = D.neutral(model)
        quat = rng.normal(size=4)
        q[:3], q[3:7] = rng.normal(size=3), quat / np.linalg.norm(quat)
        q[7:] = rng.uniform(-1, 1, size=model.n)
        w.qs.append(q)
        w.vs.append(rng.normal(size=model.nv))
        w.taus.append(rng.normal(size=model.n))
        w.pqs.append(pin.randomConfiguration(pm, -np.ones(pm.nq), np.ones(pm.nq)))
        w.pvs.append(rng.normal(size=pm.nv))
        w.ptaus.append(rng.normal(size=pm.nv))
    return w


def end_link(model: D.Model) -> str:
    """The link of the body furthest from the root (the last such link named): an end
    effector's, for the task-space rows."""
    parent = model.arrays.parent

    def depth(body: int) -> int:
        return 0 if parent[body] < 0 else 1 + depth(int(parent[body]))

    deepest = max(range(len(parent)), key=depth)
    return [name for name in model.link_names if model.frame(name).body == deepest][-1]


def bench_robot(name: str, urdf: str, states: int, repeats: int) -> list[tuple]:
    import pinocchio as pin

    w = workload(urdf, states)
    model, pm, pd = w.model, w.pm, w.pd
    qs, vs, taus, pqs, pvs, ptaus = w.qs, w.vs, w.taus, w.pqs, w.pvs, w.ptaus
    link = end_link(model)
    frame = pm.getFrameId(link)
    rows = []
    pairs = [
        (
            'forward dynamics (aba)',
            lambda k: D.forward_dynamics(model, qs[k], vs[k], taus[k]),
            lambda k: pin.aba(pm, pd, pqs[k], pvs[k], ptaus[k]),
        ),
        (
            'mass matrix (crba)',
            lambda k: D.mass_matrix(model, qs[k]),
            lambda k: pin.crba(pm, pd, pqs[k]),
        ),
        (
            'bias forces (nle)',
            lambda k: D.bias_forces(model, qs[k], vs[k]),
            lambda k: pin.nonLinearEffects(pm, pd, pqs[k], pvs[k]),
        ),
        (
            'inverse dynamics (rnea)',
            lambda k: D.inverse_dynamics(model, qs[k], vs[k], vs[k]),
            lambda k: pin.rnea(pm, pd, pqs[k], pvs[k], pvs[k]),
        ),
        (
            'link Jacobian',
            lambda k: D.link_jacobian(model, qs[k], link),
            lambda k: pin.computeFrameJacobian(pm, pd, pqs[k], frame, pin.LOCAL_WORLD_ALIGNED),
        ),
        (
            'momentum',
            lambda k: D.momentum(model, qs[k], vs[k]),
            lambda k: pin.computeCentroidalMomentum(pm, pd, pqs[k], pvs[k]),
        ),
        (  # Pinocchio has none: the two calls it needs (the 6 x 6 solve not counted)
            'generalized Jacobian (ref: frame Jacobian + crba)',
            lambda k: D.generalized_jacobian(model, qs[k], link),
            lambda k: (
                pin.computeFrameJacobian(pm, pd, pqs[k], frame, pin.LOCAL_WORLD_ALIGNED),
                pin.crba(pm, pd, pqs[k]),
            ),
        ),
        (
            'rk4 step (4 x fd)',
            lambda k: D.step(model, qs[k], vs[k], taus[k], 1e-3),
            None,
        ),
    ]
    for label, ours, ref in pairs:
        t_ours, t_ref = _time_pair(ours, ref, states, repeats)
        rows.append((name, f'{model.n}', label, t_ours, t_ref, t_ours / t_ref))
    return rows


def bench_batched(urdf: str, batch: int, repeats: int) -> tuple[float, float]:
    """Per-state seconds of the batched forward dynamics at ``batch`` vs Pinocchio's aba."""
    import pinocchio as pin

    model = D.load_urdf(urdf)
    rng = np.random.default_rng(1)
    q = np.tile(D.neutral(model), (batch, 1))
    quat = rng.normal(size=(batch, 4))
    q[:, 3:7] = quat / np.linalg.norm(quat, axis=1, keepdims=True)
    q[:, 7:] = rng.uniform(-1, 1, size=(batch, model.n))
    v = rng.normal(size=(batch, model.nv))
    tau = rng.normal(size=(batch, model.n))
    pm = pin.buildModelFromXML(urdf, pin.JointModelFreeFlyer())
    pm.gravity.linear[:] = 0.0
    pd = pm.createData()
    pq = [pin.randomConfiguration(pm, -np.ones(pm.nq), np.ones(pm.nq)) for _ in range(256)]
    pv = rng.normal(size=(256, pm.nv))
    t_ours, t_ref = [], []
    for _ in range(repeats):  # in alternation, as _time_pair; each side in its steady state
        # (after a warm-up call, 3 calls in a row: the batch's 1.1 MB of states in cache, as
        # Pinocchio's 256 states are during its loop)
        t_ours.append(_time_per_call(lambda k: D.forward_dynamics(model, q, v, tau), 3, 1) / batch)
        t_ref.append(
            _time_per_call(
                lambda k: pin.aba(pm, pd, pq[k % 256], pv[k % 256], pv[k % 256]), 256, 1
            )
        )
    return min(t_ours), min(t_ref)


def bench_growth(sizes: list[int], states: int, repeats: int) -> list[tuple[int, float, float]]:
    """Forward-dynamics seconds per call on serial chains of ``n`` joints: ours, Pinocchio."""
    import pinocchio as pin

    rows = []
    for n in sizes:
        urdf = random_urdf(n, n, branching=0.0, fixed_children=False, massless_frames=False)
        model = D.load_urdf(urdf)
        pm = pin.buildModelFromXML(urdf, pin.JointModelFreeFlyer())
        pm.gravity.linear[:] = 0.0
        pd = pm.createData()
        q, v, tau = D.neutral(model), np.zeros(model.nv), np.zeros(model.n)
        pq, pv = pin.neutral(pm), np.zeros(pm.nv)

        def ours(k, m=model, q=q, v=v, tau=tau):
            return D.forward_dynamics(m, q, v, tau)

        def ref(k, pm=pm, pd=pd, pq=pq, pv=pv):
            return pin.aba(pm, pd, pq, pv, pv)

        t_ours, t_ref = _time_pair(ours, ref, states, repeats)
        rows.append((n, t_ours, t_ref))
    return rows


def growth_exponent(ns: np.ndarray, times: np.ndarray) -> float:
    """Slope of the log-log least-squares line through ``(n, t)``."""
    return float(np.polyfit(np.log(ns), np.log(times), 1)[0])


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--states', type=int, default=500, help='random states per repeat')
    parser.add_argument('--repeats', type=int, default=7)
    parser.add_argument('--batch', type=int, default=4096, help='batch size of the batched API')
    args = parser.parse_args(argv)
    servicer = sample_robot('ffsim_servicer_7dof').read_text()
    robots = [
        ('ffsim_servicer_7dof', servicer),
        ('random tree (seed 0)', random_urdf(0, 9)),
    ]
    real = {name: real_robot_urdf(rel) for name, rel in REAL_ROBOTS.items()}
    robots += [(name, urdf) for name, urdf in real.items() if urdf is not None]
    rows = []
    for name, urdf in robots:
        rows += bench_robot(name, urdf, args.states, args.repeats)
    print(f'# ffsim_ros.dynamics vs Pinocchio ({machine()})')
    print('| robot | n | algorithm | ffsim [us] | Pinocchio [us] | ratio |')
    print('|---|---|---|---|---|---|')
    for name, n, label, t_ours, t_ref, ratio in rows:
        ref = '-' if np.isnan(t_ref) else f'{t_ref * 1e6:.2f}'
        rat = '-' if np.isnan(ratio) else f'{ratio:.1f}x'
        print(f'| {name} | {n} | {label} | {t_ours * 1e6:.2f} | {ref} | {rat} |')

    print(f'\n# batched forward dynamics, B = {args.batch} (all cores)')
    print('| robot | ffsim per state [us] | Pinocchio aba per call [us] | ratio |')
    print('|---|---|---|---|')
    for name, urdf in robots:  # the six robots of the table above (issue 19 asks <= 0.3x)
        t_b, t_ref = bench_batched(urdf, args.batch, args.repeats)
        print(f'| {name} | {t_b * 1e6:.2f} | {t_ref * 1e6:.2f} | {t_b / t_ref:.2f}x |')

    sizes = [2, 5, 10, 20, 50, 100, 200]
    growth = bench_growth(sizes, max(20, args.states // 10), args.repeats)
    ns = np.array([r[0] for r in growth], dtype=float)
    ours, ref = np.array([r[1] for r in growth]), np.array([r[2] for r in growth])
    big = ns >= 10  # the exponent of the asymptotic regime (call overhead dominates below)
    print('\n# forward dynamics (aba) on serial chains, floating base')
    print('| n | ffsim [us] | Pinocchio [us] | ratio |')
    print('|---|---|---|---|')
    for n, a, b in growth:
        print(f'| {n} | {a * 1e6:.2f} | {b * 1e6:.2f} | {a / b:.1f}x |')
    print(
        f'growth exponent (n >= 10): ffsim {growth_exponent(ns[big], ours[big]):.2f}, '
        f'Pinocchio {growth_exponent(ns[big], ref[big]):.2f}'
    )


if __name__ == '__main__':
    main()
