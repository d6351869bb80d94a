"""Re-planning through the reaction null space: a bounded, resumable tree search (no ROS).

When greedy reactionless descent stalls at a fold of the reaction null space (see
:mod:`~ffsim_ros.control.rns`), the goal is often still reachable without turning the base, from
another sheet of the same leaf: the arm has to go around the fold. :class:`RnsPlanner` searches
for such a detour with a rapidly-exploring random tree whose edges are the controller's own
reactionless law run toward sampled end-effector waypoints, predicted with the zero-momentum
kinematics (:func:`~ffsim_ros.control.rns.zero_momentum_step`): every node is a configuration
the real closed loop reaches with the base attitude held. From every new node the final
approach to the goal is predicted with the law that may spend the attitude budget; the first
approach that ends within the tolerances (and never beyond the budget) gives the plan: the
waypoints and how long to steer toward each, then the approach. Half of the tree's edges are
steered with that budget law too: attitude spent on one edge is restored by the reactionless
law (attitude first) on a later one, elsewhere, which moves the arm to another leaf of the
reaction null space -- the non-holonomy used on purpose, within the budget.

The search costs one evaluation of the kinematics and inertia per rollout step and is
resumable (:meth:`RnsPlanner.advance` takes a step budget), so a controller spreads it over
its updates with a bounded cost per update and a bounded total (``max_steps``).
"""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass

import numpy as np

from .reactionless import ReactionlessController
from .rns import attitude_error, zero_momentum_step

#: The strict law stops steering toward a waypoint closer than this [m].
WAYPOINT_REACHED = 1e-3
#: Longest steering toward one waypoint [s] and longest predicted approach [s].
STEER_TIME = 5.0
APPROACH_TIME = 30.0
#: Share of the samples that are the goal itself.
GOAL_BIAS = 0.2
#: Share of the tree's edges steered with the budget law (when a budget is set): spending
#: attitude at one place and restoring it at another changes the leaf of the reaction null
#: space the arm is on (the non-holonomy used on purpose).
SPEND_SHARE = 0.5
#: The predicted approach must end within these fractions of the tolerances (margin for the
#: difference between the kinematic prediction and the dynamic closed loop).
POSITION_MARGIN = 0.5
ATTITUDE_MARGIN = 0.9


@dataclass(frozen=True)
class Segment:
    """Steer toward ``target`` (3,) [m, inertial] for ``duration`` [s], with the reactionless
    law (attitude first), or with the budget law (end effector first) when ``spend``."""

    target: np.ndarray
    duration: float
    spend: bool = False


@dataclass(frozen=True)
class Approach:
    """A predicted final approach: where it ends and what it spends (SI units, rad)."""

    error: float  #: final position error [m]
    offset: float  #: final attitude offset [rad]
    max_offset: float  #: largest attitude offset on the way [rad]
    duration: float  #: [s]

    def residual(self, position_tolerance: float, attitude_tolerance: float) -> float:
        """``max(error / position tolerance, offset / attitude tolerance)``: <= 1 is reached."""
        return max(self.error / position_tolerance, self.offset / attitude_tolerance)


@dataclass(frozen=True)
class Plan:
    """A detour found by :class:`RnsPlanner`: the segments, then the approach it predicts."""

    segments: tuple[Segment, ...]
    approach: Approach
    steps: int  #: rollout steps the search used
    nodes: int  #: tree nodes when it was found


class RnsPlanner:
    """Tree search for a reactionless detour to ``goal`` (see the module docstring).

    Parameters
    ----------
    law : ReactionlessController
        The controller whose ``reactionless`` law the rollouts run (its mode must stay
        ``reactionless`` while the planner runs).
    q : (nq,) configuration to plan from (zero momentum is assumed).
    goal : (3,) end-effector goal, inertial frame [m].
    attitude_reference : (4,) the base attitude to hold.
    budget : float
        Attitude budget the final approach may spend [rad]; 0: the strict law only.
    position_tolerance, attitude_tolerance : float
        What counts as reached [m], [rad].
    stall_time, stall_progress : float
        A rollout stops when its residual has not dropped by ``stall_progress`` [m] (an
        attitude change of ``attitude_tolerance`` counts as ``position_tolerance``) for
        ``stall_time`` [s].
    dt : float, rollout time step [s];  radius : float, waypoint sampling radius [m];
    max_steps : int, total rollout steps;  seed : int, random stream.
    """

    def __init__(
        self,
        law: ReactionlessController,
        q: np.ndarray,
        goal: np.ndarray,
        attitude_reference: np.ndarray,
        *,
        budget: float,
        position_tolerance: float,
        attitude_tolerance: float,
        stall_time: float,
        stall_progress: float,
        dt: float,
        radius: float,
        max_steps: int,
        seed: int,
    ) -> None:
        self.law = law
        self.goal = np.asarray(goal, dtype=float).copy()
        self.reference = np.asarray(attitude_reference, dtype=float).copy()
        self.budget = float(budget)
        self.tol_p = float(position_tolerance)
        self.tol_a = float(attitude_tolerance)
        self.window = max(1, int(round(stall_time / dt)))
        self.progress = float(stall_progress) / self.tol_p
        self.dt = float(dt)
        self.radius = float(radius)
        self.max_steps = int(max_steps)
        self.rng = np.random.default_rng(seed)
        self.steps = 0
        self.nodes = 1
        self.plan: Plan | None = None
        self.best: Approach | None = None
        self.done = False
        self._search = self._run(np.asarray(q, dtype=float).copy())

    # ------------------------------------------------------------------------------ driver
    def advance(self, steps: int) -> bool:
        """Run at most ``steps`` more rollout steps; True once the search is over (a plan was
        found, see :attr:`plan`, or ``max_steps`` were spent)."""
        for _ in range(int(steps)):
            if self.done:
                break
            try:
                next(self._search)
            except StopIteration:
                self.done = True
        return self.done

    def _tick(self) -> Generator[None, None, None]:
        self.steps += 1
        if self.steps > self.max_steps:
            self.done = True
        yield

    # ---------------------------------------------------------------------------- rollouts
    def _rates(self, q: np.ndarray, target: np.ndarray, budget: float | None):
        terms = self.law.task_terms(q)
        rates = self.law.desired_rates(
            q,
            terms,
            target,
            attitude_reference=self.reference,
            attitude_budget=budget,
            self_motion=False,
        )
        return rates, terms

    def _steer(self, q: np.ndarray, target: np.ndarray, spend: bool):
        """The reactionless law (the budget law if ``spend``) toward ``target``: (end
        configuration, duration)."""
        hist: list[float] = []
        taken = 0
        budget = self.budget if spend else None
        for _ in range(int(round(STEER_TIME / self.dt))):
            rates, terms = self._rates(q, target, budget)
            err = float(np.linalg.norm(target - terms.position))
            if err < WAYPOINT_REACHED:
                break
            hist.append(err)
            stalled = hist[-1 - self.window] - err if len(hist) > self.window else np.inf
            if stalled < self.progress * self.tol_p:
                break
            q = zero_momentum_step(self.law.model, q, rates, terms.B, self.dt)
            taken += 1
            yield from self._tick()
        return q, taken * self.dt

    def _approach(self, q: np.ndarray):
        """The final approach (budget law when a budget is set): (Approach, success)."""
        budget = self.budget if self.budget > 0.0 else None
        hist: list[float] = []
        max_offset = 0.0
        n = int(round(APPROACH_TIME / self.dt))
        err = offset = 0.0
        taken = 0
        for _ in range(n):
            rates, terms = self._rates(q, self.goal, budget)
            err = float(np.linalg.norm(self.goal - terms.position))
            offset = float(np.linalg.norm(attitude_error(q[3:7], self.reference)))
            max_offset = max(max_offset, offset)
            if err <= POSITION_MARGIN * self.tol_p and offset <= ATTITUDE_MARGIN * self.tol_a:
                break
            r = max(err / self.tol_p, offset / self.tol_a)
            hist.append(r)
            if len(hist) > self.window and hist[-1 - self.window] - r < self.progress:
                break
            q = zero_momentum_step(self.law.model, q, rates, terms.B, self.dt)
            taken += 1
            yield from self._tick()
        self._approach_end = q
        result = Approach(err, offset, max_offset, taken * self.dt)
        ok = (
            err <= POSITION_MARGIN * self.tol_p
            and offset <= ATTITUDE_MARGIN * self.tol_a
            and (budget is None or max_offset < budget)
        )
        if self.best is None or result.residual(self.tol_p, self.tol_a) < self.best.residual(
            self.tol_p, self.tol_a
        ):
            self.best = result
        return result, ok

    # ------------------------------------------------------------------------------ search
    def _sample(self) -> np.ndarray:
        if self.rng.random() < GOAL_BIAS:
            return self.goal
        d = self.rng.normal(size=3)
        d /= np.linalg.norm(d)
        return self.goal + self.radius * self.rng.random() ** (1.0 / 3.0) * d

    def _run(self, q0: np.ndarray) -> Generator[None, None, None]:
        # nodes: configuration, end-effector position, parent index, segment that led there
        configs = [q0]
        points = [self.law.task_terms(q0).position]
        parents = [-1]
        segments: list[Segment | None] = [None]
        leaf = 0
        while True:
            approach, ok = yield from self._approach(configs[leaf])
            if ok:
                path = []
                j = leaf
                while parents[j] >= 0:
                    path.append(segments[j])
                    j = parents[j]
                self.plan = Plan(tuple(reversed(path)), approach, self.steps, len(configs))
                return
            if self.done:
                return
            if approach.duration > 0.0 and self.budget > 0.0:
                # where the failed approach ended is a state the loop can reach too
                configs.append(self._approach_end)
                points.append(self.law.task_terms(self._approach_end).position)
                parents.append(leaf)
                segments.append(Segment(self.goal.copy(), approach.duration, True))
            target = self._sample()
            spend = self.budget > 0.0 and self.rng.random() < SPEND_SHARE
            near = int(np.argmin(np.linalg.norm(np.asarray(points) - target, axis=1)))
            q1, duration = yield from self._steer(configs[near], target, spend)
            if self.done:
                return
            configs.append(q1)
            points.append(self.law.task_terms(q1).position)
            parents.append(near)
            segments.append(Segment(target.copy(), duration, spend))
            leaf = len(configs) - 1
            self.nodes = len(configs)
