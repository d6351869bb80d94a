"""Momentum conservation and its cost (issue 16), in one run: ``make bench``.

1. The momentum-preserving RK4 step against the plain one on the sample servicer and a
   humanoid (example-robot-data's simple humanoid, 29 joints): cost per step (minimum of
   repeats, the two in alternation) and the momentum drift over 10 s at 1 kHz.
2. Free-floating closed loops (the planar four-bar and the spatial loop of
   ``test/test_conservation.py``, closed by revolute, ball and weld cuts) for 10 s at 1, 2,
   4 and 10 ms: the largest relative momentum drift and constraint error, and the wall time
   per step of the seed 001 forms (NumPy).
"""

from __future__ import annotations

import argparse
import importlib.metadata
import time
import warnings
from pathlib import Path

import numpy as np

import ffsim_ros.dynamics as D
from ffsim_ros.dynamics import mufti as M
from ffsim_ros.dynamics.mufti.samples import TUMBLING_LOOPS
from ffsim_ros.resources import sample_robot


def _humanoid() -> D.Model:
    root = importlib.metadata.distribution('example-robot-data').locate_file(
        'cmeel.prefix/share/example-robot-data/robots'
    )
    return D.load_urdf(
        (Path(str(root)) / 'simple_humanoid_description/urdf/simple_humanoid.urdf').read_text()
    )


def _state(model: D.Model, rate: float) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    q = D.neutral(model)
    q[7:] = np.clip(rng.uniform(-0.5, 0.5, model.n), model.lower, model.upper)
    v = np.zeros(model.nv)
    v[6:] = rng.uniform(-rate, rate, model.n)
    v[:6] = D.base_velocity_from_momentum(
        model, q, v[6:], [0.5, -0.2, 0.3, 5.0, -8.0, 3.0], about='com'
    )
    return q, v


def open_trees(repeats: int) -> None:
    print('# momentum-preserving RK4 step (1 kHz, 10 steps a call, as the simulator steps)')
    print(
        '| robot | joint rates | plain [us/step] | preserving [us/step] | cost | '
        'drift plain, 10 s | drift preserving, 10 s |'
    )
    print('|---|---|---|---|---|---|---|')
    robots = [('servicer', D.load_urdf(sample_robot('ffsim_servicer_7dof').read_text()), 1.0)]
    try:
        robots.append(('simple humanoid', _humanoid(), 30.0))
    except importlib.metadata.PackageNotFoundError:
        pass
    for name, model, rate in robots:
        q, v = _state(model, rate)
        tau = np.zeros(model.n)
        times = {False: [], True: []}
        for cons in (False, True):
            D.step(model, q, v, tau, 1e-3, steps=10, conserve_momentum=cons)
        for _ in range(repeats):
            for cons in (False, True):
                t0 = time.perf_counter()
                for _ in range(100):
                    D.step(model, q, v, tau, 1e-3, steps=10, conserve_momentum=cons)
                times[cons].append((time.perf_counter() - t0) / 1000)
        h0 = D.momentum(model, q, v)
        drift = {}
        for cons in (False, True):
            qq, vv = q, v
            for _ in range(1000):
                qq, vv = D.step(model, qq, vv, tau, 1e-3, steps=10, conserve_momentum=cons)
            drift[cons] = np.abs(D.momentum(model, qq, vv) - h0).max() / np.abs(h0).max()
        plain, cons = min(times[False]), min(times[True])
        print(
            f'| {name} | {rate:g} rad/s | {plain * 1e6:.2f} | {cons * 1e6:.2f} | '
            f'+{100 * (cons / plain - 1):.1f} % | {drift[False]:.1e} | {drift[True]:.1e} |'
        )


def closed_loops(duration: float, steps: tuple[float, ...]) -> None:
    print(f'\n# free-floating closed loops, {duration:g} s each (default step: projection)')
    print(
        '| loop | step [ms] | momentum drift (relative) | constraint error [m, rad] | '
        'wall per step [ms] |'
    )
    print('|---|---|---|---|---|')
    for name, build in TUMBLING_LOOPS.items():
        for dt in steps:
            chain, q, v = build()
            model = chain.model
            h0 = D.momentum(model, q, v)
            worst_h = worst_xi = 0.0
            n = int(round(duration / dt))
            t0 = time.perf_counter()
            with warnings.catch_warnings():
                warnings.simplefilter('ignore', M.RedundantConstraintWarning)
                for k in range(n):
                    q, v = chain.step(q, v, np.zeros(model.n), dt)
                    if k % 10 == 9 or k == n - 1:
                        worst_h = max(worst_h, np.abs(D.momentum(model, q, v) - h0).max())
                        worst_xi = max(worst_xi, np.abs(chain.constraint_error(q, v)[0]).max())
            wall = (time.perf_counter() - t0) / n
            print(
                f'| {name} | {dt * 1e3:g} | {worst_h / np.abs(h0).max():.1e} | {worst_xi:.1e} '
                f'| {wall * 1e3:.1f} |'
            )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--repeats', type=int, default=7)
    parser.add_argument('--duration', type=float, default=10.0, help='closed loops [s]')
    parser.add_argument('--quick', action='store_true', help='1 s loops at 4 and 10 ms only')
    args = parser.parse_args(argv)
    open_trees(args.repeats)
    if args.quick:
        closed_loops(1.0, (0.004, 0.01))
    else:
        closed_loops(args.duration, (0.001, 0.002, 0.004, 0.01))


if __name__ == '__main__':
    main()
