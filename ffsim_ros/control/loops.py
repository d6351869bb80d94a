"""Cyclic joint motions inside the reaction null space: Lie-bracket loops that move the arm to
another leaf (no ROS).

A *loop* ``(i, j, a)`` is four legs along the reaction-null-space fields ``X_i``, ``X_j``,
``-X_i``, ``-X_j``, each until its joint has turned by ``a``, where ``X_k = e_k - A^+ A e_k``
(``A``: the angular rows of ``H0^-1 H0m``, ``w0 = -A phidot`` under zero momentum [S0 eq. 21])
is joint ``k``'s rate with the base reaction removed by the least-norm motion of the others.
Every leg leaves the base attitude untouched; the loop does not close in the joint space: it
ends displaced along the Lie bracket ``[X_i, X_j]``, which has a component across the reaction
null space -- the arm ends on another leaf (the non-holonomy used on purpose, at no attitude
cost). On the sample servicer the distribution is nearly integrable: a 0.3 rad loop moves the
arm by at most 0.007 deg of leaf (measured as the attitude of the straight joint path back),
but the shift grows faster than the loop's area, and 1 rad loops of the wrist pairs
(``arm_joint_4``-``_6``) shift it by 0.05-0.18 deg each.

:class:`LoopPlanner` uses them at a goal's first stall (complete plans only) and where
:class:`~.planner.RnsPlanner` found no detour: the goal
lies beyond a fold of the leaf the arm is on, and the budget law would need more attitude than
the budget (``delta``, the attitude a greedy approach with a large probe budget ends with:
0.3-1.1 deg on the servicer's aborted goals). It evaluates every candidate loop (ordered joint
pairs, both quadrants) by the ``delta`` it leaves, then applies greedily the loops predicted to
shrink ``|delta|`` the most (each checked by a rollout) until the approach with the real
budget reaches the goal: the plan is the loops' legs, then that approach. All predictions use
the zero-momentum kinematics (:func:`~.rns.zero_momentum_step`) with the rates the supervisor
commands (:func:`loop_rates`); the search is resumable as the planner's.
"""

from __future__ import annotations

import math
from collections.abc import Generator
from itertools import permutations

import numpy as np

from .planner import Approach, Plan, RnsPlanner, Segment
from .reactionless import ReactionlessController
from .rns import (
    TaskTerms,
    attitude_error,
    limit_zones,
    near_limits,
    scaled_to_limits,
    zero_momentum_step,
)

#: Joint turn of each leg of a loop [rad].
LOOP_AMPLITUDE = 1.0
#: Speed of a leg: this share of the joint speed limits (the fastest joint of ``X_k``).
LOOP_SPEED = 0.8
#: A predicted leg slower than this many times its joint's own pace (``|sweep|`` at
#: ``LOOP_SPEED`` of its speed limit, :func:`leg_pace`) is refused: the other joints then move
#: far more than the leg's joint (``X_k`` ill-conditioned, its joint's component near 0). On the
#: servicer the legs of the loop searches take 1.0-2.1 times their pace; on a 7-joint arm with
#: a prismatic joint a search once planned a leg at 26 times it (36 s for 1 rad), which
#: stalled in the closed loop where the joint's component of ``X_k`` went to 0.
MAX_LEG_SLOWDOWN = 4.0
#: Budget of the probing approach that measures ``delta`` [deg] (large: the attitude the fold
#: costs, not what the barrier allows).
PROBE_BUDGET_DEG = 5.0
#: Longest probing approach [s].
PROBE_TIME = 20.0
#: Most loops in one plan.
MAX_LOOPS = 8
#: Candidates tried (by their predicted ``delta``) before the table is evaluated again, each
#: with its amplitude scaled by ``SCALES`` (the leaf shift grows faster than the loop's time).
TRIES = 3
SCALES = (2.0, 1.5, 1.0)
#: A search that ends without reaching but with ``|delta|`` below this share of the first
#: returns its loops as a partial plan.
PARTIAL = 0.8


def loop_rates(
    law: ReactionlessController,
    q: np.ndarray,
    terms: TaskTerms,
    joint: int,
    sign: float,
    attitude_reference: np.ndarray | None,
    frozen: tuple[int, ...] = (),
) -> np.ndarray:
    """Joint rates (n,) [rad/s | m/s] of a loop leg: ``sign X_joint`` (see the module
    docstring) scaled to ``LOOP_SPEED`` of the joint speed limits, plus the attitude hold
    ``-A^+ kp_attitude e_att`` (``w0 = kp_attitude e_att``, as the reactionless law's first
    task) toward ``attitude_reference`` (4,) when given; the sum is scaled down (direction
    kept) where a joint would exceed its speed limit (the law's ``max_joint_speed`` share of
    it): the hold alone was unbounded, 12-14 times the limits at 5 deg of attitude error (the
    servicer, a 7-joint arm with a prismatic joint). The joints ``frozen`` (indices, e.g.
    those near a position limit) do not move: the reaction is removed by the others.

    Parameters
    ----------
    law : ReactionlessController
        Supplies the gains and the joint speed limits.
    q : (nq,) configuration ``[r0, Q0, phi]``, base in the inertial frame [m, -, rad | m].
    terms : TaskTerms
        At ``q`` (its ``B``).
    joint : int
        Index of the leg's joint.
    sign : float
        +1 or -1: the sense of the leg.
    attitude_reference : (4,) base quaternion (x, y, z, w) to hold, inertial frame [-]; None:
        no attitude hold.
    frozen : tuple of int
        Joint indices that do not move.

    Returns
    -------
    (n,) ndarray
        [rad/s | m/s]
    """
    A = terms.B[3:6]
    free = A.copy()
    free[:, list(frozen)] = 0.0
    Ap = np.linalg.pinv(free)
    x = -Ap @ A[:, joint]
    x[joint] += 1.0
    x *= sign
    vmax = law.gains.max_joint_speed * law.model.velocity_limit
    rates = scaled_to_limits(x, vmax, LOOP_SPEED)
    if attitude_reference is not None:
        e_att = attitude_error(q[3:7], np.asarray(attitude_reference, float))
        rates -= Ap @ (law.gains.kp_attitude * e_att)
        capped = scaled_to_limits(rates, vmax, 1.0)
        if np.any(np.abs(capped) < np.abs(rates)):
            rates = capped
    return rates


def loops_note(searches: int, max_searches: int, first: bool, loops: int, delta: float) -> str:
    """For an abort's reason: the loop searches of a goal ('' if none ran).

    Parameters
    ----------
    searches : int
        Loop searches counted in ``max_loop_plans`` (``max_searches``).
    max_searches : int
    first : bool
        The search for complete plans at the first stall ran.
    loops : int
        Loops planned.
    delta : float
        Smallest attitude the goal was predicted to need [rad].

    Returns
    -------
    str
    """
    if searches == 0 and not first:
        return ''
    at_first = ' and 1 for complete plans at the first stall' if first else ''
    return (
        f', {searches} loop search(es) (max_loop_plans {max_searches}){at_first} planning '
        f'{loops} Lie-bracket loop(s), the attitude the goal needs brought to '
        f'{math.degrees(delta):.3f} deg at best'
    )


def leg_pace(law: ReactionlessController, joint: int, sweep: float) -> float:
    """The quickest a loop leg can turn its joint by ``sweep``: at ``LOOP_SPEED`` of the joint's
    speed limit (the law's ``max_joint_speed`` share of it; a joint without a finite limit
    counts as :func:`~.rns.scaled_to_limits` counts it) [s].

    Parameters
    ----------
    law : ReactionlessController
        Supplies the joint speed limits.
    joint : int
        Index of the leg's joint.
    sweep : float
        Its turn [rad | m].

    Returns
    -------
    float
        [s]
    """
    vmax = law.gains.max_joint_speed * law.model.velocity_limit
    unit = np.zeros(vmax.size)
    unit[joint] = 1.0
    speed = float(scaled_to_limits(unit, vmax, LOOP_SPEED)[joint])
    return abs(sweep) / speed


class LoopPlanner(RnsPlanner):
    """Greedy search of Lie-bracket loops before the budget approach (module docstring).

    Arguments as :class:`~.planner.RnsPlanner` (``radius`` and ``self_motion_share`` unused);
    :attr:`plan` gets loop legs (:class:`~.planner.Segment` with ``joint`` >= 0) and the
    approach; :attr:`loops` the loops it holds; :attr:`delta` the smallest probed ``|delta|``
    [rad], :attr:`initial_delta` the first (from the start configuration).
    """

    loops: int = 0
    delta: float = math.inf
    initial_delta: float = math.inf
    #: Whether a search that only shrinks ``delta`` returns its loops as a partial plan.
    partial_plans: bool = True

    _partial: Plan | None = None

    def advance(self, steps: int) -> bool:
        """As :meth:`RnsPlanner.advance`; a search that ends without reaching but with
        ``|delta|`` below ``PARTIAL`` of the first gets the loops it found as its plan (a
        partial plan: followed, then the approach, whose stall starts the next search from
        where the arm is then).

        Parameters
        ----------
        steps : int
            Rollout steps allowed in this call.

        Returns
        -------
        bool
        """
        done = super().advance(steps)
        if done and self.plan is None and self._partial is not None and self.partial_plans:
            if self.delta < PARTIAL * self.initial_delta:
                self.plan = self._partial
        return done

    def predict_loop(
        self, q: np.ndarray, i: int, j: int, a: float
    ) -> tuple[np.ndarray | None, tuple[Segment, ...]]:
        """The loop ``(i, j, a)`` from ``q`` as the search predicts it (its rollout steps are
        counted in :attr:`steps`, not bounded by ``max_steps``).

        Parameters
        ----------
        q : (nq,) start configuration [m, -, rad | m].
        i, j : int
            The joints of its legs (``i``, ``j``, ``i`` back, ``j`` back).
        a : float
            Each leg's turn [rad | m].

        Returns
        -------
        (nq,) ndarray or None
            Where the loop ends; None where it is refused: a leg would leave the joints'
            bounds (``i`` or ``j`` within the zone of a position limit, the others into it)
            or be too slow (``MAX_LEG_SLOWDOWN``).
        tuple of Segment
            Its four legs (empty when refused).
        """
        gen = self._loop(np.asarray(q, dtype=float).copy(), i, j, a)
        while True:
            try:
                next(gen)
            except StopIteration as end:
                return end.value

    # ---------------------------------------------------------------------------- rollouts
    def _leg(
        self, q: np.ndarray, joint: int, sweep: float, bounds: tuple, frozen: tuple
    ) -> Generator[None, None, tuple[np.ndarray | None, float, tuple[float, ...]]]:
        """One leg, predicted: (end configuration, duration, course: the joint's turn in the
        leg's sense at each step, from 0) or (None, 0, ()) where a joint would leave
        ``bounds`` (lower, upper) (n,), or the leg would take more than ``MAX_LEG_SLOWDOWN``
        times its pace (:func:`leg_pace`) or 1000 steps."""
        model = self.law.model
        lower, upper = bounds
        start = q[7 + joint]
        sign = 1.0 if sweep > 0 else -1.0
        course = [0.0]
        pace = leg_pace(self.law, joint, sweep)
        longest = min(1000, math.ceil(MAX_LEG_SLOWDOWN * pace / self.dt))
        while course[-1] < abs(sweep):
            terms = self.law.task_terms(q)
            rates = loop_rates(self.law, q, terms, joint, sign, self.reference, frozen)
            q = zero_momentum_step(model, q, rates, terms.B, self.dt)
            course.append(float(sign * (q[7 + joint] - start)))
            yield from self._tick()
            taken = len(course) - 1
            if np.any(q[7:] > upper) or np.any(q[7:] < lower) or taken > longest:
                return None, 0.0, ()
        return q, (len(course) - 1) * self.dt, tuple(course)

    def _loop(
        self, q: np.ndarray, i: int, j: int, a: float
    ) -> Generator[None, None, tuple[np.ndarray | None, tuple[Segment, ...]]]:
        """A loop ``(i, j, a)``: (end configuration, its four segments) or (None, ()). The
        joints within the zone of a position limit (:func:`~.rns.limit_zones`) at its start,
        and those the law does not move (``active_joints``), are frozen (not ``i`` nor ``j``:
        then no loop), the others stay out of that zone (the frozen ones are already in it:
        they may not go closer)."""
        model = self.law.model
        # (and the joints the law does not move, active_joints: held by the loops too)
        held = near_limits(q[7:], model.lower, model.upper) | (self.law.active <= 0.0)
        frozen = tuple(int(k) for k in np.flatnonzero(held))
        if i in frozen or j in frozen:
            return None, ()
        phi = q[7:]  # frozen joints (already in the zone) stay where they are
        zone, _ = limit_zones(model.lower, model.upper)
        bounds = (
            np.minimum(model.lower + zone, phi),
            np.maximum(model.upper - zone, phi),
        )
        segments = []
        for joint, sweep in ((i, a), (j, a), (i, -a), (j, -a)):
            point = self.law.task_terms(q).position
            q, duration, course = yield from self._leg(q, joint, sweep, bounds, frozen)
            if q is None:
                return None, ()
            segments.append(
                Segment(point, duration, joint=joint, sweep=sweep, frozen=frozen, course=course)
            )
        return q, tuple(segments)

    def _probe(self, q: np.ndarray) -> Generator[None, None, tuple[np.ndarray, float]]:
        """``(delta, error)``: the attitude error vector (3,) [rad] toward the reference and
        the position error [m] where a greedy approach with ``PROBE_BUDGET_DEG`` ends."""
        budget = math.radians(PROBE_BUDGET_DEG)
        hist: list[float] = []
        err = 0.0
        for _ in range(int(round(PROBE_TIME / self.dt))):
            rates, terms = self._rates(q, self.goal, budget)
            err = float(np.linalg.norm(self.goal - terms.position))
            if err <= 0.5 * self.tol_p:
                break
            r = err / self.tol_p
            hist.append(r)
            stalled = len(hist) > self.window and hist[-1 - self.window] - r < self.progress
            if stalled:
                break
            q = zero_momentum_step(self.law.model, q, rates, terms.B, self.dt)
            yield from self._tick()
        return attitude_error(q[3:7], self.reference), err

    def _score(self, delta: np.ndarray, err: float) -> float:
        """``|delta|`` [rad], plus the tolerance per tolerance of position error beyond half."""
        return float(np.linalg.norm(delta)) + self.tol_a * max(0.0, err / self.tol_p - 0.5)

    # ------------------------------------------------------------------------------ search
    def _run(self, q0: np.ndarray) -> Generator[None, None, None]:
        n = self.law.model.n
        q = q0
        segments: list[Segment] = []
        delta, err = yield from self._probe(q)
        score = self._score(delta, err)
        self.delta = self.initial_delta = float(np.linalg.norm(delta))
        table: dict[tuple[int, int, float], np.ndarray] | None = None
        fresh = False
        while self.loops < MAX_LOOPS and not self.done:
            if float(np.linalg.norm(delta)) < self.budget:
                approach, ok = yield from self._approach(q)
                if ok:
                    self.plan = Plan(tuple(segments), approach, self.steps, self.loops)
                    return
            if table is None:  # every candidate's change of delta, from here
                table, fresh = {}, True
                for i, j in permutations(range(n), 2):
                    for a in (LOOP_AMPLITUDE, -LOOP_AMPLITUDE):
                        q1, _ = yield from self._loop(q, i, j, a)
                        if q1 is None or self.done:
                            continue
                        d1, e1 = yield from self._probe(q1)
                        if e1 < 4.0 * self.tol_p:
                            table[i, j, a] = d1 - delta
                        if self.done:
                            return
            ranked = sorted(table, key=lambda k: float(np.linalg.norm(delta + table[k])))
            best = None  # (score, q, delta, legs, key)
            for i, j, a in ranked[:TRIES]:
                for scale in SCALES:
                    q1, legs = yield from self._loop(q, i, j, scale * a)
                    if self.done:
                        break
                    if q1 is None:
                        continue
                    d1, e1 = yield from self._probe(q1)
                    if best is None or self._score(d1, e1) < best[0]:
                        best = (self._score(d1, e1), q1, d1, legs, (i, j, a))
            if self.done:
                break
            if best is not None and best[0] < score - 0.05 * self.tol_a:
                score, q, d1, legs, key = best
                table[key] = d1 - delta
                delta = d1
                segments.extend(legs)
                self.loops += 1
                self.nodes = self.loops
                self.delta = min(self.delta, float(np.linalg.norm(delta)))
                fresh = False
                d = float(np.linalg.norm(delta))
                self._partial = Plan(
                    tuple(segments), Approach(math.inf, d, d, 0.0), self.steps, self.loops
                )
                continue
            if fresh:
                break  # no loop from here shrinks delta
            table = None

    def best_approach(self) -> Approach | None:
        """The best approach predicted (as :attr:`RnsPlanner.best`).

        Returns
        -------
        Approach or None
        """
        return self.best
