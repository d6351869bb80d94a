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
reaction null space -- the non-holonomy used on purpose, within the budget. A share of the
edges (``SELF_MOTION_SHARE``) are self-motions instead (:func:`self_motion_rates`): the arm
moves along the one-dimensional null space of ``[J*; A]``, the end effector held and the base
untouched, to another point of the same fibre -- the direction greedy descent toward a
waypoint never takes (minimum-norm rates), and the one that leads around a fold from one sheet
of the reaction null space to the other. They are off by default (``SELF_MOTION_SHARE`` 0):
from the start poses of five goals ``benchmarks/reach.py`` aborted, three seeds each, a share
of 0.3 found plans in 3 of 15 searches against 1 of 15 without; but over the 120 chained goals
of the servicer (with multi-start) 103 were reached with a share of 0.3 against 107 without.

A search that ends without a plan is not the end of the goal: the supervisor starts another
one with another seed (multi-start) until ``max_plans`` searches were spent.

The search costs one evaluation of the kinematics and inertia per rollout step and is
resumable (:meth:`RnsPlanner.advance` takes a step budget), so a controller spreads it over
its updates with a bounded cost per update and a bounded total (``max_steps``).
"""

from __future__ import annotations

import math
from collections.abc import Generator
from dataclasses import dataclass

import numpy as np

from .goals import ReachSettings
from .reactionless import ReactionlessController
from .rns import (
    TaskTerms,
    attitude_error,
    reactionless_rates,
    scaled_to_limits,
    self_motion,
    zero_momentum_step,
)

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
#: Share of the tree's edges that are self-motions (end effector held, base untouched), their
#: duration [s] drawn uniformly in ``SELF_MOTION_TIME``, their speed the share
#: ``SELF_MOTION_SPEED`` of the joint speed limits (the fastest joint).
SELF_MOTION_SHARE = 0.0
SELF_MOTION_TIME = (1.0, 8.0)
SELF_MOTION_SPEED = 0.5
#: The predicted approach must end within these fractions of the tolerances (margin for the
#: difference between the kinematic prediction and the dynamic closed loop).
POSITION_MARGIN = 0.5
ATTITUDE_MARGIN = 0.9


@dataclass(frozen=True)
class Segment:
    """Steer toward ``target`` (3,) [m, inertial] for ``duration`` [s], with the reactionless
    law (attitude first), or with the budget law (end effector first) when ``spend``; or, when
    ``self_motion`` is +1 or -1, move along the self-motion in that sense
    (:func:`self_motion_rates`) with the end effector held at ``target``; or, when ``joint``
    >= 0, a leg of a Lie-bracket loop (:func:`~.loops.loop_rates`): joint ``joint`` turned by
    ``sweep`` [rad | m] with the base reaction removed by the joints not ``frozen``
    (``target``: where the leg starts; ``course``: the joint's predicted turn in the leg's
    sense [rad | m] at equal steps over ``duration``, from 0, empty when not predicted); or,
    when ``path`` is set, a joint path of :class:`~.paths.PathPlanner` followed in time
    (``path`` (k, n) joint positions [rad | m] at ``times`` (k,) [s] from the leg's start,
    ``attitudes`` (k, 3) the base attitude planned there, rotation vector from the reference
    [rad]; ``target``: the goal)."""

    target: np.ndarray
    duration: float
    spend: bool = False
    self_motion: int = 0
    joint: int = -1
    sweep: float = 0.0
    frozen: tuple[int, ...] = ()
    course: tuple[float, ...] = ()
    path: np.ndarray | None = None
    times: np.ndarray | None = None
    attitudes: np.ndarray | None = None


def self_motion_rates(
    law: ReactionlessController,
    terms: TaskTerms,
    hold: np.ndarray,
    previous: np.ndarray | None,
    sense: int,
) -> tuple[np.ndarray, np.ndarray | None]:
    """Joint rates (n,) [rad/s | m/s] of a self-motion edge: the unit direction ``d`` of
    :func:`~.rns.self_motion` (the null space of ``[J* W; A W]``) at ``SELF_MOTION_SPEED`` of
    the joint speed limits, plus the reactionless correction that holds the end effector at
    ``hold`` (3,) [m] (removes the drift of the first-order self-motion).

    ``d`` is signed by ``sense`` (+1 or -1) on the first step (``previous`` None), then kept
    continuous with ``previous`` (the ``d`` of the step before). Returns ``(rates, d)``; ``d``
    is None (and the rates only the hold) where the arm has no self-motion.

    Parameters
    ----------
    law : ReactionlessController
        Supplies the gains, the rate weights and the joint speed limits.
    terms : TaskTerms
        At the current configuration (inertial frame).
    hold : (3,) ndarray
        End-effector point to hold, inertial frame [m].
    previous : (n,) ndarray or None
        ``d`` of the step before (joint space, unit norm [-]); None on the first step.
    sense : int
        +1 or -1: the sign of ``d`` on the first step.

    Returns
    -------
    rates : (n,) ndarray
        Joint rates [rad/s | m/s].
    d : (n,) ndarray or None
        The self-motion direction, joint space [-].
    """
    Jt = terms.J_star[:3]
    A = terms.B[3:6]
    g = law.gains
    hold_rates, _ = reactionless_rates(
        Jt,
        A,
        g.kp_task * (np.asarray(hold, float) - terms.position),
        np.zeros(3),
        law.weights,
        g.damping,
    )
    d = self_motion(Jt, A, law.weights)
    if d is None:
        return hold_rates, None
    if previous is None:
        d = d if sense >= 0 else -d
    elif float(d @ previous) < 0.0:
        d = -d
    vmax = g.max_joint_speed * law.model.velocity_limit
    return scaled_to_limits(d, vmax, SELF_MOTION_SPEED) + hold_rates, d


@dataclass(frozen=True)
class Approach:
    """A predicted final approach: where it ends and what it spends (SI units, rad)."""

    error: float  #: final position error [m]
    offset: float  #: final attitude offset [rad]
    max_offset: float  #: largest attitude offset on the way [rad]
    duration: float  #: [s]

    def residual(self, position_tolerance: float, attitude_tolerance: float) -> float:
        """``max(error / position tolerance, offset / attitude tolerance)``: <= 1 is reached.

        Parameters
        ----------
        position_tolerance : float
            [m], > 0.
        attitude_tolerance : float
            [rad], > 0.

        Returns
        -------
        float
            [-].
        """
        return max(self.error / position_tolerance, self.offset / attitude_tolerance)

    def note(self, budget_deg: float) -> str:
        """For an abort's reason: '; best predicted approach ... short with the attitude ...'.

        Parameters
        ----------
        budget_deg : float
            The attitude budget [deg].

        Returns
        -------
        str
        """
        return (
            f'; best predicted approach {self.error * 1e3:.1f} mm short with the attitude '
            f'{math.degrees(self.offset):.3f} deg off (max {math.degrees(self.max_offset):.3f}, '
            f'budget {budget_deg:g} deg)'
        )


@dataclass(frozen=True)
class Plan:
    """A detour found by :class:`RnsPlanner`: the segments, then the approach it predicts."""

    segments: tuple[Segment, ...]
    approach: Approach
    steps: int  #: rollout steps the search used
    nodes: int  #: tree nodes when it was found


def search_options(settings: ReachSettings, budget: float) -> dict:
    """The keyword arguments every search (:class:`RnsPlanner`, its subclasses,
    :class:`~.paths.PathPlanner`) takes from the goal's settings, with the attitude ``budget``
    [rad] it may spend (0: none).

    Parameters
    ----------
    settings : ReachSettings
    budget : float

    Returns
    -------
    dict
    """
    s = settings
    return {
        'budget': budget,
        'position_tolerance': s.position_tolerance,
        'attitude_tolerance': s.attitude_tolerance,
        'stall_time': s.stall_time,
        'stall_progress': s.stall_progress,
        'dt': s.plan_dt,
        'radius': s.plan_radius,
    }


class RnsPlanner:
    """Tree search for a reactionless detour to ``goal`` (see the module docstring).

    Parameters
    ----------
    law : ReactionlessController
        The controller whose ``reactionless`` law the rollouts run (its mode must stay
        ``reactionless`` while the planner runs).
    q : (nq,) configuration to plan from (zero momentum is assumed) [m, -, rad | m].
    goal : (3,) end-effector goal, inertial frame [m].
    attitude_reference : (4,) the base attitude to hold, unit quaternion (x, y, z, w) in the
        inertial frame [-].
    budget : float
        Attitude budget the final approach may spend [rad]; 0: the strict law only.
    position_tolerance, attitude_tolerance : float
        What counts as reached [m], [rad].
    stall_time, stall_progress : float
        A rollout stops when its residual has not dropped by ``stall_progress`` [m] (an
        attitude change of ``attitude_tolerance`` counts as ``position_tolerance``) for
        ``stall_time`` [s].
    dt : float
        Rollout time step [s].
    radius : float
        Waypoint sampling radius [m].
    max_steps : int
        Total rollout steps.
    seed : int
        Random stream.
    self_motion_share : float
        Share of the tree's edges that are self-motions (default ``SELF_MOTION_SHARE``).
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
        self_motion_share: float = SELF_MOTION_SHARE,
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
        self.self_motion_share = float(self_motion_share)
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
        found, see :attr:`plan`, or ``max_steps`` were spent).

        Parameters
        ----------
        steps : int
            Rollout steps allowed in this call.

        Returns
        -------
        bool
        """
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
    def _rates(
        self, q: np.ndarray, target: np.ndarray, budget: float | None
    ) -> tuple[np.ndarray, TaskTerms]:
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

    def _steer(
        self, q: np.ndarray, target: np.ndarray, spend: bool
    ) -> Generator[None, None, tuple[np.ndarray, float]]:
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

    def _self_move(
        self, q: np.ndarray, sense: int, duration: float
    ) -> Generator[None, None, tuple[np.ndarray, np.ndarray, float]]:
        """A self-motion edge of ``duration`` [s]: (end configuration, its end-effector hold
        point, duration)."""
        hold = self.law.task_terms(q).position
        previous = None
        taken = 0
        for _ in range(int(round(duration / self.dt))):
            terms = self.law.task_terms(q)
            rates, previous = self_motion_rates(self.law, terms, hold, previous, sense)
            if previous is None:
                break
            q = zero_momentum_step(self.law.model, q, rates, terms.B, self.dt)
            taken += 1
            yield from self._tick()
        return q, hold, taken * self.dt

    def _approach(self, q: np.ndarray) -> Generator[None, None, tuple[Approach, bool]]:
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
            near = int(np.argmin(np.linalg.norm(np.asarray(points) - target, axis=1)))
            if (
                self.self_motion_share > 0.0
                and not self.law.track_orientation
                and self.rng.random() < self.self_motion_share
            ):
                sense = 1 if self.rng.random() < 0.5 else -1
                q1, hold, duration = yield from self._self_move(
                    configs[near], sense, float(self.rng.uniform(*SELF_MOTION_TIME))
                )
                segment = Segment(hold.copy(), duration, False, sense)
            else:
                spend = self.budget > 0.0 and self.rng.random() < SPEND_SHARE
                q1, duration = yield from self._steer(configs[near], target, spend)
                segment = Segment(target.copy(), duration, spend)
            if self.done:
                return
            configs.append(q1)
            points.append(self.law.task_terms(q1).position)
            parents.append(near)
            segments.append(segment)
            leaf = len(configs) - 1
            self.nodes = len(configs)
