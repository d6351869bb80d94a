"""Why reactionless goals abort: the leaf gap of each aborted goal of a ``benchmarks/reach.py``
run, and how long Lie-bracket loops would take to close it (issue 15's analysis).

Under zero momentum the base attitude is a path functional of the joint motion; the sample
servicer's reaction null space is nearly integrable, so the attitude a straight joint path
from ``phi`` to ``phi*`` turns the base by is close to a difference of three functions of
the configuration (the *leaf* coordinates). For each aborted goal, from its recorded start
(``reach.py --json`` keeps it) this script

1. runs the reactionless law kinematically to where it stalls (``phi_s``);
2. finds the *leaf gap*: the smallest attitude, over configurations ``phi*`` within the joint
   limits (0.25 rad margin) whose end effector is at the goal (base attitude held, CoM
   fixed), of the straight path from ``phi_s`` to ``phi*`` -- least squares from 20 inverse
   kinematics starts (the attitude weighted 1 per 0.05 deg, the end-effector error 1 per
   0.5 mm, so that the configurations found reach the goal; the error left is printed);
3. measures, from ``phi_s``, the attitude shift of every 1 and 2 rad Lie-bracket loop
   (:func:`ffsim_ros.control.loops.loop_rates`, the legs of the supervisor's loops; the shift
   read as the attitude of the straight path back) and the non-negative combination that
   cancels the gap (NNLS): the loops' total duration is an estimate, to first order, of the
   time loops from there would need.

A gap above the 0.1 deg tolerance means no path to the goal keeps the base within it unless
it changes leaf (loops); thousands of seconds of loops mean the goal is out of reach in
practice. Run: ``python benchmarks/reach.py --robots servicer --modes reactionless --json
out.json`` then ``python benchmarks/reach_gap.py out.json`` (about 20 s of CPU per goal).
"""

from __future__ import annotations

import argparse
import json
import math
from itertools import permutations

import numpy as np
from scipy.optimize import least_squares, nnls

import ffsim_ros.dynamics as D
from ffsim_ros.control import ReactionlessController
from ffsim_ros.control.loops import loop_rates
from ffsim_ros.control.rns import attitude_error, near_limits, zero_momentum_step
from ffsim_ros.resources import sample_robot

MARGIN = 0.25  # joint-limit margin of the configurations searched [rad]
DT = 0.05  # kinematic step of the rollouts [s]


class Gap:
    """The analysis of one goal start (module docstring) on the servicer."""

    def __init__(self, law: ReactionlessController) -> None:
        self.law, self.model = law, law.model
        self.lo, self.hi = self.model.lower + MARGIN, self.model.upper - MARGIN

    def offset(self, q: np.ndarray, ref: np.ndarray) -> np.ndarray:
        return attitude_error(q[3:7], ref)

    def stall(self, q: np.ndarray, goal: np.ndarray, ref: np.ndarray) -> np.ndarray:
        """The reactionless law toward ``goal`` until it stops progressing by 1 mm in 2 s."""
        errors: list[float] = []
        for _ in range(int(60.0 / DT)):
            terms = self.law.task_terms(q)
            errors.append(float(np.linalg.norm(goal - terms.position)))
            window = int(2.0 / DT)
            if errors[-1] < 2.5e-3 or (
                len(errors) > window and errors[-1 - window] - errors[-1] < 1e-3
            ):
                break
            rates = self.law.desired_rates(
                q, terms, goal, attitude_reference=ref, self_motion=False
            )
            q = zero_momentum_step(self.model, q, rates, terms.B, DT)
        return q

    def straight(self, q: np.ndarray, phi: np.ndarray, steps: int = 20) -> np.ndarray:
        """The configuration after the straight joint path from ``q`` to ``phi``."""
        d = phi - q[7:]
        for _ in range(steps):
            q = zero_momentum_step(self.model, q, d, self.law.task_terms(q).B, 1.0 / steps)
        return q

    def _held(self, q: np.ndarray, phi: np.ndarray, ref: np.ndarray, com: np.ndarray):
        """``q`` with joints ``phi``, the base attitude ``ref`` and the CoM at ``com``."""
        q = q.copy()
        q[7:], q[3:7] = phi, ref
        q[:3] += com - D.center_of_mass(self.model, q)
        return q

    def inverse_kinematics(self, q, goal, ref, com, phi0):
        """Joints in the limits (margin) with the end effector at ``goal``, base held."""
        ee = self.law.ee_link

        def residual(phi):
            return D.link_pose(self.model, self._held(q, phi, ref, com), ee)[0] - goal

        r = least_squares(residual, phi0, bounds=(self.lo, self.hi), max_nfev=200)
        return r.x if np.linalg.norm(r.fun) < 1e-4 else None

    def leaf_gap(self, qs: np.ndarray, goal: np.ndarray, ref: np.ndarray, rng) -> tuple:
        """(gap vector (3,) [rad], end-effector error left [m]) from the stall ``qs``."""
        com = D.center_of_mass(self.model, qs)
        starts = [np.clip(qs[7:], self.lo, self.hi)]
        starts += [rng.uniform(self.lo, self.hi) for _ in range(19)]
        solved = (self.inverse_kinematics(qs, goal, ref, com, s) for s in starts)
        found = [p for p in solved if p is not None]
        if not found:
            return None, math.inf

        def residual(phi):
            qe = self.straight(qs, phi)
            err = goal - D.link_pose(self.model, qe, self.law.ee_link)[0]
            return np.r_[self.offset(qe, ref) / math.radians(0.05), err / 0.0005]

        best = min(found, key=lambda p: np.linalg.norm(self.offset(self.straight(qs, p), ref)))
        r = least_squares(residual, best, bounds=(self.lo, self.hi), max_nfev=60, diff_step=1e-5)
        qe = self.straight(qs, r.x)
        return self.offset(qe, ref), float(
            np.linalg.norm(goal - D.link_pose(self.model, qe, self.law.ee_link)[0])
        )

    def loop(self, q, i, j, a, ref):
        """A loop ``(i, j, a)`` from ``q``: (end configuration, duration [s]) or (None, 0)."""
        model = self.model
        frozen = tuple(
            int(k) for k in np.flatnonzero(near_limits(q[7:], model.lower, model.upper))
        )
        if i in frozen or j in frozen:
            return None, 0.0
        duration = 0.0
        for joint, sweep in ((i, a), (j, a), (i, -a), (j, -a)):
            start, sign = q[7 + joint], math.copysign(1.0, sweep)
            while sign * (q[7 + joint] - start) < abs(sweep):
                terms = self.law.task_terms(q)
                rates = loop_rates(self.law, q, terms, joint, sign, ref, frozen)
                q = zero_momentum_step(model, q, rates, terms.B, DT)
                duration += DT
                outside = np.any(q[7:] > model.upper - 0.03) or np.any(q[7:] < model.lower + 0.03)
                if outside or duration > 200.0:
                    return None, 0.0
        return q, duration

    def loop_time(self, qs, gap, ref) -> tuple[int, float, float]:
        """(loops feasible from ``qs``, NNLS residual [rad], loop time [s]) to cancel ``gap``."""
        shifts, times = [], []
        for i, j in permutations(range(self.model.n), 2):
            for a in (1.0, -1.0, 2.0, -2.0):
                q2, duration = self.loop(qs, i, j, a, ref)
                if q2 is not None:
                    shifts.append(self.offset(self.straight(q2, qs[7:]), ref))
                    times.append(duration)
        if not shifts:
            return 0, float(np.linalg.norm(gap)), math.inf
        x, residual = nnls(np.array(shifts).T, -gap)
        return len(shifts), residual, float(x @ np.array(times))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('json', help='output of benchmarks/reach.py --json')
    args = parser.parse_args(argv)
    rows = json.load(open(args.json, encoding='utf-8'))
    model = D.load_urdf(sample_robot('ffsim_servicer_7dof'))
    gap = Gap(ReactionlessController(model, 'ee_link'))
    rng = np.random.default_rng(0)
    print(
        '| seed / goal | stalled [mm] | leaf gap [deg] | EE error left [mm] | loops | '
        'NNLS residual [deg] | loop time [s] |'
    )
    print('|---|---|---|---|---|---|---|')
    for r in rows:
        if r['robot'] != 'servicer' or r['mode'] != 'reactionless':
            continue
        for k, g in enumerate(r['goals']):
            if g['outcome'] == 'reached' or g.get('start') is None:
                continue
            goal, ref = np.array(g['goal']), np.array(g['reference'])
            qs = gap.stall(np.array(g['start']), goal, ref)
            left = np.linalg.norm(goal - gap.law.task_terms(qs).position)
            vec, err = gap.leaf_gap(qs, goal, ref, rng)
            if vec is None:
                print(f'| {r["seed"]} / {k} | {left * 1e3:.0f} | no inverse kinematics | | | | |')
                continue
            count, res, seconds = gap.loop_time(qs, vec, ref)
            size = float(np.linalg.norm(vec))
            time_text = f'{seconds:.0f}' if res < 0.5 * size else 'not cancelled'
            print(
                f'| {r["seed"]} / {k} | {left * 1e3:.0f} | {math.degrees(size):.3f} | '
                f'{err * 1e3:.0f} | {count} | {math.degrees(res):.3f} | {time_text} |',
                flush=True,
            )


if __name__ == '__main__':
    main()
