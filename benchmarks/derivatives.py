"""Cost of the analytical derivatives side by side with Pinocchio's, in one run (``make bench``).

Rows, per robot (floating base, zero gravity, the robots of ``benchmarks/run.py``):

* ``forward dynamics derivatives``: ``D.forward_dynamics_derivatives`` (``d qdd / dq, dv,
  dtau`` and the base wrench) against ``pin.computeABADerivatives`` (``ddq_dq, ddq_dv, Minv``);
* ``inverse dynamics derivatives``: ``D.inverse_dynamics_derivatives`` against
  ``pin.computeRNEADerivatives``;
* ``step linearization (A, B)``: ``D.step_derivatives`` against what it replaces, central
  differences of ``D.step`` (``2 (2 nv + n)`` steps);
* ``J* velocity derivatives``: ``D.generalized_velocity_derivatives`` (no Pinocchio twin).

Every figure is, as in ``run.py``, the minimum over repeats of the mean time per call from
Python, ours and the reference measured in alternation (one repeat of each in turn); the ratio
is ours / reference.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

import numpy as np
from run import REAL_ROBOTS, machine, real_robot_urdf, workload

import ffsim_ros.dynamics as D
from ffsim_ros.dynamics.random_urdf import random_urdf
from ffsim_ros.resources import sample_robot


def time_per_call(fn: Callable[[int], object], states: int) -> float:
    """Mean seconds per call of ``fn(k)`` over ``k = 0..states-1``."""
    t0 = time.perf_counter()
    for k in range(states):
        fn(k)
    return (time.perf_counter() - t0) / states


def time_pair(
    ours: Callable[[int], object], ref: Callable[[int], object], states: int, repeats: int
) -> tuple[float, float]:
    """Seconds per call of ``ours`` and ``ref`` in alternation; minimum over the repeats."""
    ours(0)  # warm-up (JIT cache, imports)
    ref(0)
    t_ours, t_ref = [], []
    for _ in range(repeats):
        t_ours.append(time_per_call(ours, states))
        t_ref.append(time_per_call(ref, states))
    return min(t_ours), min(t_ref)


def finite_difference_step(model: D.Model, q, v, tau, dt: float) -> None:
    """``(A, B)`` by central differences of ``D.step`` (the cost the linearization replaces)."""
    nv = model.nv
    for e in np.eye(nv):
        for s in (1.0, -1.0):
            D.step(model, D.integrate(model, q, s * 1e-6 * e), v, tau, dt)
            D.step(model, q, v + s * 1e-6 * e, tau, dt)
    for e in np.eye(model.n):
        for s in (1.0, -1.0):
            D.step(model, q, v, tau + s * 1e-6 * e, dt)


def bench_robot(name: str, urdf: str, states: int, repeats: int) -> list[tuple]:
    import pinocchio as pin

    w = workload(urdf, states)
    model, pm, pd = w.model, w.pm, w.pd
    qs, vs, taus, pqs, pvs, ptaus = w.qs, w.vs, w.taus, w.pqs, w.pvs, w.ptaus
    link = model.link_names[-1]
    dt = 1e-3
    pairs = [
        (
            'forward dynamics derivatives',
            lambda k: D.forward_dynamics_derivatives(model, qs[k], vs[k], taus[k]),
            lambda k: pin.computeABADerivatives(pm, pd, pqs[k], pvs[k], ptaus[k]),
            'Pinocchio computeABADerivatives',
            states,
        ),
        (
            'inverse dynamics derivatives',
            lambda k: D.inverse_dynamics_derivatives(model, qs[k], vs[k], vs[k]),
            lambda k: pin.computeRNEADerivatives(pm, pd, pqs[k], pvs[k], ptaus[k]),
            'Pinocchio computeRNEADerivatives',
            states,
        ),
        (
            'step linearization (A, B)',
            lambda k: D.step_derivatives(model, qs[k], vs[k], taus[k], dt),
            lambda k: finite_difference_step(model, qs[k], vs[k], taus[k], dt),
            f'central differences of D.step ({2 * (2 * model.nv + model.n)} steps)',
            max(4, states // 20),
        ),
        (
            'J* velocity derivatives',
            lambda k: D.generalized_velocity_derivatives(model, qs[k], taus[k], link),
            lambda k: D.generalized_jacobian(model, qs[k], link),
            'D.generalized_jacobian (J* alone)',
            states,
        ),
    ]
    rows = []
    for label, ours, ref, ref_label, count in pairs:
        t_ours, t_ref = time_pair(ours, ref, count, repeats)
        rows.append((name, model.n, label, t_ours, ref_label, t_ref))
    return rows


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--states', type=int, default=200, help='random states per repeat')
    parser.add_argument('--repeats', type=int, default=7)
    args = parser.parse_args(argv)
    robots = [
        ('ffsim_servicer_7dof', sample_robot('ffsim_servicer_7dof').read_text()),
        ('random tree (seed 0)', random_urdf(0, 9)),
    ]
    for name, rel in REAL_ROBOTS.items():
        urdf = real_robot_urdf(rel)
        if urdf is not None:
            robots.append((name, urdf))
    rows = []
    for name, urdf in robots:
        rows += bench_robot(name, urdf, args.states, args.repeats)
    print(f'# analytical derivatives ({machine()})')
    print('| robot | n | ffsim | [us] | reference | [us] | ratio |')
    print('|---|---|---|---|---|---|---|')
    for name, n, label, t_ours, ref_label, t_ref in rows:
        print(
            f'| {name} | {n} | {label} | {t_ours * 1e6:.2f} | {ref_label} | '
            f'{t_ref * 1e6:.2f} | {t_ours / t_ref:.2f}x |'
        )


if __name__ == '__main__':
    main()
