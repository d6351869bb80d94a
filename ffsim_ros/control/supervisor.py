"""Goal supervision: reach every accepted goal, or abort it with a reason (no ROS).

:class:`ReachSupervisor` wraps a :class:`~ffsim_ros.control.reactionless.ReactionlessController`
and owns the current goal, its outcome (:mod:`~ffsim_ros.control.goals`) and, in
``reactionless`` mode, the held base attitude. Each :meth:`ReachSupervisor.update` computes the
efforts and a :class:`~ffsim_ros.control.goals.GoalStatus`.

In ``reactionless`` mode a goal goes through these phases::

    tracking --stall--> spend <--> restore --no progress--> planning --plan--> detour
       |                  |           |                        |
       |                  +--reached--+--> holding             +--no plan / max_plans /
       +--reached--> holding                                      timeout--> restoring --> stopped
    detour --> approach --stall--> (spend <--> restore, if cycles are left) --> planning ...
                  +--reached--> holding

* **tracking**: the reactionless law (attitude first, end effector in the reaction null
  space), with the self-motion that keeps the RNS manipulability up when ``Gains.k_null`` > 0
  (off by default: it did not raise the share reached, and costs ~0.25 ms per update).
* **stall** (a fold of the reaction null space, see :mod:`~ffsim_ros.control.rns`): the
  residual ``max(error / position_tolerance, attitude offset / attitude_tolerance)`` has not
  dropped by ``stall_progress`` for ``stall_time``.
* **spend / restore** (recovery cycles, ``max_cycles``): *spend*, the budget law (end effector
  first, the attitude within ``SPEND_MARGIN`` of the budget) toward the goal until the offset
  reaches ``CYCLE_SPENT`` of that, the end effector is within the tolerance, or no progress;
  *restore*, the attitude turned back below ``CYCLE_RESTORED`` of the tolerance with the end
  effector held where spending left it (:func:`~ffsim_ros.control.rns.restore_rates`:
  motion in the end effector's null space, whose reaction turns the base -- the 4-dimensional
  self-motion manifold of a 7-joint arm's position task has room for the 3 attitude
  coordinates). After ``CYCLE_PATIENCE`` cycles in a row without progress (or ``max_cycles``
  in all) the planner takes over.
* **planning**: at the first stall of a goal (``max_path_plans`` > 0 and a budget), a joint
  path through the attitude budget (:class:`~ffsim_ros.control.paths.PathPlanner`, direct
  collocation: the base within a share of the budget all the way, back within the tolerance
  at the end, the end effector on the goal), followed in time (**detour**), then the
  approach; a stall after it plans the next path (at most ``max_path_plans``). Then, or when
  none is found, ``max_loop_plans`` > 0: a search of
  Lie-bracket loops for a *complete* plan (see **loops**; not counted in ``max_loop_plans``):
  the detours' budget edges change the leaf too, often for the worse (seed 0's goal 11 of
  ``benchmarks/reach.py`` needs 0.27 deg of attitude where it first stalls, 1.7 deg where the
  detour searches ended), so the loops get the arm where it first stalled. Then, or when that
  search finds none, :class:`~ffsim_ros.control.planner.RnsPlanner` searches a detour
  through the reaction null space, ``plan_steps_per_update`` rollout steps per update and at most
  ``plan_max_steps`` in all, the arm held still meanwhile. Its first attempt is the budget
  approach from where the arm stands. A search that ends without a plan is followed by
  another with another seed (multi-start) as long as searches are left (``max_plans``
  counts every search of the goal); the abort reason then gives all of them.
* **loops** (at the first stall, complete plans only; after the ``max_plans`` searches
  found no detour, at most ``max_loop_plans`` searches):
  :class:`~ffsim_ros.control.loops.LoopPlanner` searches Lie-bracket loops -- cyclic joint
  motions inside the reaction null space, the base untouched, that end on
  another leaf -- until the budget approach is predicted to reach the goal; the loops' legs
  are followed as a detour (:func:`~ffsim_ros.control.loops.loop_rates` through the law's
  inner loop, each leg until its joint turned by its sweep), then the approach. A search
  that only shrinks the attitude the goal needs returns its loops (a partial plan); the
  approach's stall then starts the next search from there.
* **detour**: a planned joint path followed in time (:func:`~.legs.path_leg_command`); or
  the planned waypoints, each steered toward for the planned time with the
  reactionless law, or with the budget law on the legs where the plan spends attitude to
  restore it elsewhere (which moves the arm to another leaf of the reaction null space), or
  self-motion legs (end effector held, base untouched: :func:`~.planner.self_motion_rates`
  through the law's inner loop) when the planner has them. A leg is stopped, and the goal
  planned again (or aborted, saying why), when the base attitude goes beyond the leg's limit
  (the spend budget on loop and self-motion legs, the offset plus the base's rate over
  ``LEG_HORIZON``; the budget on the others) or a loop leg's joint stalls on its predicted course
  (:class:`~.legs.LegWatch`); the search refuses legs far slower than their joint's pace;
  **approach**: the end effector first, the base attitude within the budget
  (``attitude_budget_deg``, of which the laws spend at most ``SPEND_MARGIN``) and pulled back
  toward the reference (:func:`~.rns.budget_rates`).
* **reached**: error within ``position_tolerance`` and attitude offset within
  ``attitude_tolerance_deg`` -- the goal is then held with the law that reached it, except
  after the budget law (approach, spend, restore): then with the restoring law
  (:func:`~.rns.restore_rates`: the end effector held where it reached the goal,
  ``HOLD_INSET`` closer unless a joint is near a limit (:func:`~.legs.hold_point`), the spent
  attitude turned back in its null space; holding with the budget law, or pulling the end
  effector onto the goal, could spend attitude again). A base held beyond the tolerance is
  said in the reason.
* **aborted** (no plan, ``max_plans`` plans used, ``goal_timeout``): the reason names the
  figures; the attitude is restored below the tolerance if it was spent (``restoring``, at
  most ``restore_timeout``), then the arm is held still (``stopped``).

Other modes (``gjm_tracking``, ``joint_pd``) have no recovery: a stall aborts the goal. An
outcome comes within ``goal_timeout``. Cost of an update: the law's (~0.5 ms on the servicer),
plus ``plan_steps_per_update`` rollout steps (~0.24 ms each) while planning.
"""

from __future__ import annotations

import math

import numpy as np

from .gaps import GapClock
from .goals import REJECTED, GoalOutcome, GoalPhase, GoalStatus, ReachSettings
from .legs import (
    LEG_HORIZON,
    LegWatch,
    hold_point,
    leaving_limits,
    limits_note,
    loop_leg_command,
    path_leg_command,
    self_motion_command,
)
from .loops import LoopPlanner, loops_note
from .modes import ControlMode
from .paths import PathPlanner
from .planner import Approach, Plan, RnsPlanner, Segment, search_options
from .reactionless import ControlOutput, ReactionlessController
from .rns import attitude_error

#: Offset below which restoring after an abort stops, as a fraction of the tolerance.
RESTORED = 0.5
#: Share of the attitude budget the laws and the planner may spend: the rest is the margin for
#: the dynamic closed loop (torque tracking, the control period) against the kinematic barrier.
SPEND_MARGIN = 0.9
#: A goal reached with spent attitude is held this far inside the point where it was reached,
#: toward the goal [m] (margin for the closed loop's tracking error against the tolerance).
HOLD_INSET = 1e-3
#: A recovery cycle's spending ends when the attitude offset reaches this share of the spend
#: budget (``SPEND_MARGIN`` of the budget): the barrier of the budget law is then close.
CYCLE_SPENT = 0.8
#: Its restoring ends when the offset is below this share of the attitude tolerance ...
CYCLE_RESTORED = 0.2
#: ... or has not dropped by this share of the tolerance in ``stall_time``.
CYCLE_RESTORE_PROGRESS = 0.05
#: Rollout steps of a loop search, in units of ``plan_max_steps``.
LOOP_STEPS = 6
#: Step budget of a collocation search (:class:`~.paths.PathPlanner`), in units of
#: ``plan_max_steps``.
PATH_STEPS = 20
#: Recovery cycles in a row without the end effector getting ``stall_progress`` closer to the
#: goal (measured after each restoring) before the cycles give up.
CYCLE_PATIENCE = 3
#: Marks the part of a reached goal's reason that says the base held beyond the tolerance.
HELD = '; since held with the base attitude'
#: A rejected goal's position is kept for the status below this magnitude per coordinate [m].
MAX_KEPT = 1e100


class ReachSupervisor:
    """Goal outcome, stall detection and recovery around a controller (module docstring).

    Parameters
    ----------
    law : ReactionlessController
        The control law; its ``mode`` is the supervisor's (change it with :meth:`set_mode`).
    settings : ReachSettings, optional

    Notes
    -----
    Times ``t`` are the caller's clock in seconds (the node's clock, simulated time with
    ``use_sim_time``); they must not go back except through :meth:`reset`. A gap between
    calls (no fresh state: a paused simulation on wall-clock time, :class:`~.gaps.GapClock`)
    is not counted by the goal's timers (stall, ``goal_timeout``, the phases' times, the
    status's ``elapsed``): they count the time the goal was watched.
    """

    def __init__(self, law: ReactionlessController, settings: ReachSettings | None = None) -> None:
        self.law = law
        self.settings = settings or ReachSettings()
        self._reference: np.ndarray | None = None
        self._goal_id = 0
        self._clock = GapClock()  # the caller's time less its gaps
        self._clear()
        self._status = GoalStatus(mode=law.mode.value)

    def _clear(self) -> None:
        """Forget the goal (not the goal counter nor the attitude reference)."""
        self._goal: np.ndarray | None = None
        self._goal_R: np.ndarray | None = None
        self._outcome = GoalOutcome.NONE
        self._phase = GoalPhase.IDLE
        self._reason = ''
        self._t0 = self._t_progress = self._t_phase_end = 0.0
        self._t_last: float | None = None
        self._t_end: float | None = None  # when the outcome became reached or aborted
        self._initial_error = self._best_error = 0.0
        self._best_residual = math.inf
        self._max_offset = 0.0
        self._start_attitude: np.ndarray | None = None
        self._planner: RnsPlanner | None = None
        self._plan: Plan | None = None
        self._segment = 0
        self._plans = 0
        self._planner_steps = 0
        self._hold_budget = False
        self._hold_position: np.ndarray | None = None
        self._self_motion_dir: np.ndarray | None = None
        self._searched = self._nodes = 0  # over the searches since the last stall
        self._best_approach: Approach | None = None
        self._cycles = 0  # spend-and-restore cycles of this goal
        self._idle_cycles = 0  # cycles in a row without progress
        self._cycled = False  # the cycles gave up since the last plan
        self._cycle_error = self._cycle_offset = math.inf
        self._loop_plans = 0  # Lie-bracket loop searches of this goal
        self._first_loops = False  # the search for complete loop plans at the first stall ran
        self._loops = 0  # loops planned for this goal
        self._loop_delta = math.inf  # smallest attitude the goal was predicted to need [rad]
        self._leg: LegWatch | None = None  # the loop leg followed
        self._stops = 0  # detour legs stopped (stalled, or the attitude beyond its limit)
        self._stop_note = ''  # why the last one was
        self._hold_offset = 0.0  # largest offset beyond the tolerance said while holding [rad]
        # collocation searches (PathPlanner), whether one failed, the stall that started them
        self._path_plans, self._path_failed, self._stall_note = 0, False, ''

    # ------------------------------------------------------------------------ properties
    @property
    def mode(self) -> ControlMode:
        """The control mode (the law's)."""
        return self.law.mode

    @property
    def status(self) -> GoalStatus:
        """The status computed by the last :meth:`update` (or goal change)."""
        return self._status

    @property
    def attitude_reference(self) -> np.ndarray | None:
        """(4,) base quaternion held in ``reactionless`` mode; None until captured."""
        return None if self._reference is None else self._reference.copy()

    @property
    def goal(self) -> np.ndarray | None:
        """(3,) the current goal position [m], None without one."""
        return None if self._goal is None else self._goal.copy()

    # --------------------------------------------------------------------------- commands
    def set_mode(self, mode: ControlMode | str) -> None:
        """Switch the control mode. Entering ``reactionless`` from another mode captures the
        attitude reference at the next :meth:`update` (the attitude reached in the other mode
        is kept, not undone). An active goal goes on in the new mode from ``tracking``.

        Parameters
        ----------
        mode : ControlMode or str, the mode or its value (``ValueError`` for an unknown one).
        """
        new = ControlMode(mode)
        if new is self.law.mode:
            return
        self.law.mode = new
        if new is ControlMode.REACTIONLESS:
            self._reference = None
        self._planner = self._plan = None
        if self._outcome is GoalOutcome.ACTIVE:
            self._phase = GoalPhase.TRACKING
            self._best_residual = math.inf
            if self._t_last is not None:
                self._t_progress = self._t_last
        elif self._phase is GoalPhase.HOLDING:
            self._hold_budget = False
        elif self._phase is GoalPhase.RESTORING:
            self._phase = GoalPhase.STOPPED  # the held attitude is the new mode's business

    def reset_attitude_reference(self, q: np.ndarray | None = None) -> None:
        """Hold the base attitude of ``q`` (None: the one measured at the next update).

        Parameters
        ----------
        q : (nq,) optional; its ``q[3:7]``: the base quaternion (x, y, z, w), inertial frame [-].
        """
        self._reference = None if q is None else np.asarray(q, float)[3:7].copy()

    def set_goal(
        self, t: float, q: np.ndarray, position: np.ndarray, rotation: np.ndarray | None = None
    ) -> GoalStatus:
        """Accept a new goal at time ``t`` [s] with the arm at ``q`` (replaces any goal).

        Parameters
        ----------
        t : float, time [s].
        q : (nq,) measured configuration, base inertial [m, -, rad | m].
        position : (3,) goal of the end-effector link origin, inertial frame [m].
        rotation : (3, 3), optional, goal orientation of the end-effector link frame (ee frame ->
            inertial frame) [-] (with the law's ``track_orientation``).

        Raises
        ------
        ValueError
            The goal is rejected (:meth:`ReactionlessController.check_goal`); the current goal
            is then left as it was.
        """
        q = np.asarray(q, dtype=float)
        self.law.check_goal(q, position)
        t = self._clock(t)
        goal_id = self._goal_id + 1
        self._clear()
        self._goal_id = goal_id
        self._goal = np.asarray(position, dtype=float).copy()
        self._goal_R = None if rotation is None else np.asarray(rotation, dtype=float).copy()
        self._outcome = GoalOutcome.ACTIVE
        self._phase = GoalPhase.TRACKING
        self._t0 = self._t_progress = self._t_last = float(t)
        if self.law.mode is ControlMode.REACTIONLESS and self._reference is None:
            self._reference = q[3:7].copy()
        self._start_attitude = q[3:7].copy()
        p = self.law.task_terms(q).position
        self._initial_error = self._best_error = float(np.linalg.norm(self._goal - p))
        self._status = self._make_status(self._initial_error, self._offset(q))
        return self._status

    def follow(self, t: float, plan: Plan) -> None:
        """Follow ``plan`` (its segments, then the approach) for the active goal from time
        ``t`` [s], as after a search of its own (e.g. a plan computed elsewhere by
        :class:`~ffsim_ros.control.planner.RnsPlanner` from the current state).

        Parameters
        ----------
        t : float, time [s].
        plan : Plan.

        Raises
        ------
        ValueError
            No active goal, or not in ``reactionless`` mode.
        """
        if (
            self._outcome is not GoalOutcome.ACTIVE
            or self.law.mode is not ControlMode.REACTIONLESS
        ):
            raise ValueError(
                f'follow: expected an active goal in reactionless mode, got outcome '
                f'{self._outcome.value} in {self.law.mode.value} mode'
            )
        self._planner = None
        self._plan = plan
        self._segment = -1
        self._next_segment(self._clock(t))

    def stop(self, t: float, q: np.ndarray, reason: str) -> GoalStatus:
        """Abort the current goal (if active) with ``reason`` and hold the arm still.

        The attitude spent (if any) is restored first, as after any abort.

        Parameters
        ----------
        t, q : float, (nq,): time [s] and measured configuration [m, -, rad | m].
        reason : str.
        """
        q = np.asarray(q, dtype=float)
        t = self._clock(t)
        if self._outcome is GoalOutcome.ACTIVE:
            self._abort(t, q, reason)
        else:
            self._phase = GoalPhase.STOPPED if self._goal is not None else GoalPhase.IDLE
            self._hold_position = None
        err = 0.0
        if self._goal is not None:
            err = float(np.linalg.norm(self._goal - self.law.task_terms(q).position))
        self._status = self._make_status(err, self._offset(q))
        return self._status

    def reject(
        self, t: float, q: np.ndarray, reason: str, position: np.ndarray | None = None
    ) -> GoalStatus:
        """Report a goal refused at acceptance as a goal of its own: it replaces the current
        goal, which ends as aborted if active ("replaced by a rejected goal"), gets its own
        ``goal_id`` and ends at once as aborted with the reason ``'rejected: ' + reason``, so
        that a client watching the status sees it; the arm is held still (after restoring the
        attitude spent, as after any abort).

        Calling it is the caller's choice: a refusal by :meth:`set_goal` leaves the current
        goal as it was, so a malformed goal (NaN, another frame, out of reach) is not passed
        here while :attr:`status` is active (the node only logs it then); a goal refused for
        want of fresh state is passed here in any case (it preempts what runs).

        Parameters
        ----------
        t, q : float, (7 + n,): time [s] and measured configuration [m, -, rad | m].
        reason : str.
        position : (3,) the goal, inertial frame [m], optional (kept for the status's
            position error if its coordinates are below ``MAX_KEPT`` in magnitude).
        """
        t = self._clock(t)
        q = np.asarray(q, dtype=float)
        if self._outcome is GoalOutcome.ACTIVE:
            self._abort(t, q, 'replaced by a rejected goal')
        elif self._phase is not GoalPhase.RESTORING:
            self._phase = GoalPhase.STOPPED
            self._hold_position = None
        goal = None if position is None else np.asarray(position, dtype=float)
        if goal is not None and not (goal.shape == (3,) and np.all(np.abs(goal) < MAX_KEPT)):
            goal = None  # (NaN, or 1e308: the error's square overflowed at every update)
        self._goal_id += 1
        self._goal, self._goal_R = goal, None
        self._outcome = GoalOutcome.ABORTED
        self._reason = f'{REJECTED}: {reason}'
        self._t0 = self._t_last = self._t_end = t
        self._planner = self._plan = None
        self._max_offset = 0.0
        err = 0.0
        if goal is not None:
            err = float(np.linalg.norm(goal - self.law.task_terms(q).position))
        self._initial_error = self._best_error = err
        self._status = self._make_status(err, self._offset(q))
        return self._status

    def reset(self, reason: str = '') -> None:
        """Forget the goal, the clock and the attitude reference (e.g. after the clock went
        back): the arm is held still and the reference is captured at the next update.

        A goal still active ends as aborted with ``reason`` (when given), never silently: its
        status stays until the next goal. So does the outcome and reason of a goal that had
        already ended (reached or aborted; its phase becomes ``stopped``).

        Parameters
        ----------
        reason : str, of the abort of an active goal ('': the goal is dropped without one).
        """
        outcome, why = self._outcome, self._reason
        self._clear()
        self._reference = None
        self._clock.reset()
        if outcome is GoalOutcome.ACTIVE and reason:
            outcome, why = GoalOutcome.ABORTED, reason
        if outcome in (GoalOutcome.ABORTED, GoalOutcome.REACHED):
            self._outcome = outcome
            self._phase = GoalPhase.STOPPED
            self._reason = why
        self._status = GoalStatus(
            goal_id=self._goal_id,
            outcome=self._outcome,
            phase=self._phase,
            reason=self._reason,
            mode=self.law.mode.value,
            attitude_budget=self.settings.attitude_budget,
        )

    # ----------------------------------------------------------------------------- update
    def update(self, t: float, q: np.ndarray, v: np.ndarray) -> tuple[ControlOutput, GoalStatus]:
        """One control update at time ``t`` [s] with the measured state ``(q, v)``.

        Parameters
        ----------
        t : float, time [s].
        q : (nq,) measured configuration [m, -, rad | m].
        v : (nv,) velocity ``[V0, w0, phidot]``, base parts inertial [m/s, rad/s, rad/s | m/s].

        Returns
        -------
        ControlOutput
            The efforts and figures of :meth:`ReactionlessController.compute`.
        GoalStatus
        """
        t = self._clock(t, update=True)
        q = np.asarray(q, dtype=float)
        v = np.asarray(v, dtype=float)
        reactionless = self.law.mode is ControlMode.REACTIONLESS
        if reactionless and self._reference is None:
            self._reference = q[3:7].copy()
        self._t_last = t
        offset = self._offset(q)
        if self._outcome is GoalOutcome.ACTIVE:
            self._max_offset = max(self._max_offset, offset)
            if t - self._t0 > self.settings.goal_timeout:
                self._abort(t, q, f'timeout: not reached after {self.settings.goal_timeout:g} s')
        out = self._command(t, q, v)
        err = out.position_error if self._goal is not None else 0.0
        if self._outcome is GoalOutcome.ACTIVE:
            self._judge(t, q, err, offset, float(np.linalg.norm(v[3:6])))
        elif self._phase is GoalPhase.HOLDING and reactionless:
            self._watch_hold(q, offset)
        elif self._phase is GoalPhase.RESTORING:
            if offset <= RESTORED * self.settings.attitude_tolerance or t >= self._t_phase_end:
                self._phase = GoalPhase.STOPPED
        self._status = self._make_status(err, offset)
        return out, self._status

    def _command(self, t: float, q: np.ndarray, v: np.ndarray) -> ControlOutput:
        """The efforts of the current phase."""
        law, phase, ref = self.law, self._phase, self._reference
        if law.mode is not ControlMode.REACTIONLESS:
            ref = None
        if phase in (GoalPhase.IDLE, GoalPhase.STOPPED):
            out = law.compute(q, v, None)
            if self._goal is not None:
                out.position_error = float(np.linalg.norm(self._goal - out.ee_position))
            return out
        if phase is GoalPhase.PLANNING:
            out = law.compute(q, v, None)  # arm held still while the planner runs
            out.position_error = float(np.linalg.norm(self._goal - out.ee_position))
            self._advance_planner(t, q)
            return out
        if phase is GoalPhase.RESTORING:
            out = law.compute(q, v, self._hold_position, None, ref, self_motion=False)
            if self._goal is not None:  # (None after a goal rejected without a position)
                out.position_error = float(np.linalg.norm(self._goal - out.ee_position))
            return out
        if phase is GoalPhase.DETOUR and self._plan.segments[self._segment].self_motion:
            out, self._self_motion_dir = self_motion_command(
                law, q, v, self._plan.segments[self._segment], ref, self._self_motion_dir
            )
            out.position_error = float(np.linalg.norm(self._goal - out.ee_position))
            if t >= self._t_phase_end:
                self._next_segment(t)
            return out
        if phase is GoalPhase.DETOUR and self._plan.segments[self._segment].joint >= 0:
            return self._loop_command(t, q, v, self._plan.segments[self._segment], ref)
        if phase is GoalPhase.DETOUR and self._plan.segments[self._segment].path is not None:
            segment = self._plan.segments[self._segment]
            start = self._t_phase_end - segment.duration
            out = path_leg_command(law, q, v, segment, t - start, ref)
            out.position_error = float(np.linalg.norm(self._goal - out.ee_position))
            if t >= self._t_phase_end:
                self._next_segment(t)
            return out
        if phase is GoalPhase.DETOUR:
            segment = self._plan.segments[self._segment]
            budget = self._spend_budget() if segment.spend else None
            out = law.compute(
                q, v, segment.target, None, ref, attitude_budget=budget, self_motion=False
            )
            out.position_error = float(np.linalg.norm(self._goal - out.ee_position))
            if t >= self._t_phase_end:
                self._next_segment(t)
            return out
        if phase is GoalPhase.RESTORE:
            out = law.compute(q, v, self._hold_position, None, ref, restore=True)
            out.position_error = float(np.linalg.norm(self._goal - out.ee_position))
            return out
        if phase is GoalPhase.HOLDING and self._hold_budget and ref is not None:
            # reached with attitude spent: the end effector held where it reached the goal
            # (pulling it onto the goal could spend attitude again), the attitude turned back
            out = law.compute(q, v, self._hold_position, None, ref, restore=True)
            out.position_error = float(np.linalg.norm(self._goal - out.ee_position))
            return out
        budget = None
        if ref is not None and phase in (GoalPhase.APPROACH, GoalPhase.SPEND):
            budget = self._spend_budget()
        moving = phase not in (GoalPhase.APPROACH, GoalPhase.SPEND)  # (self-motion)
        goal, R = self._goal, self._goal_R
        return law.compute(q, v, goal, R, ref, attitude_budget=budget, self_motion=moving)

    def _loop_command(
        self, t: float, q: np.ndarray, v: np.ndarray, segment: Segment, ref: np.ndarray | None
    ) -> ControlOutput:
        """A leg of a Lie-bracket loop (:func:`~.legs.loop_leg_command`) until its joint has
        turned by its sweep (or twice the predicted time has passed); watched by
        :meth:`_watch_detour`."""
        if self._leg is None:
            self._leg = LegWatch(segment, t, q, self.settings.stall_time)
        out = loop_leg_command(self.law, q, v, segment, ref)
        out.position_error = float(np.linalg.norm(self._goal - out.ee_position))
        if leaving_limits(self.law.model, q[7:], out.phidot_desired, segment.frozen):
            # the loop went elsewhere than predicted: its remaining legs are dropped, the
            # approach (with the law's joint clamping) takes over from here
            self._segment = len(self._plan.segments) - 1
            self._next_segment(t)
        elif self._leg.done(t, q):
            self._next_segment(t)
        return out

    # ------------------------------------------------------------------------ the outcome
    def _spend_budget(self) -> float | None:
        """The attitude the laws may spend [rad] (None: spending off)."""
        budget = SPEND_MARGIN * self.settings.attitude_budget
        return budget if budget > 0.0 else None

    def _offset(self, q: np.ndarray) -> float:
        ref = self._reference if self.law.mode is ControlMode.REACTIONLESS else None
        if ref is None:
            ref = self._start_attitude
        if ref is None:
            return 0.0
        return float(np.linalg.norm(attitude_error(q[3:7], ref)))

    def _residual(self, err: float, offset: float) -> float:
        s = self.settings
        r = err / s.position_tolerance
        if self.law.mode is ControlMode.REACTIONLESS:
            r = max(r, offset / s.attitude_tolerance)
        return r

    def _judge(self, t: float, q: np.ndarray, err: float, offset: float, rate: float) -> None:
        """Reached, progress, stall (only while the arm works toward the goal); ``rate``: the
        base's angular rate [rad/s]."""
        s = self.settings
        self._best_error = min(self._best_error, err)
        working = (GoalPhase.TRACKING, GoalPhase.DETOUR, GoalPhase.APPROACH, GoalPhase.SPEND)
        if self._phase not in (*working, GoalPhase.RESTORE):
            return
        r = self._residual(err, offset)
        if r <= 1.0:
            self._outcome = GoalOutcome.REACHED
            self._t_end = t
            how = {
                GoalPhase.TRACKING: 'directly',
                GoalPhase.DETOUR: f'on detour {self._plans}'
                + (f' (joint path {self._path_plans})' if self._path_plans else ''),
                GoalPhase.APPROACH: f'after {self._plans} plan(s)'
                + (f' and {self._loops} Lie-bracket loop(s)' if self._loops else '')
                + (f', {self._path_plans} joint path search(es)' if self._path_plans else ''),
                GoalPhase.SPEND: f'after {self._cycles} cycle(s), {self._plans} plan(s)',
                GoalPhase.RESTORE: f'after {self._cycles + 1} cycle(s), {self._plans} plan(s)',
            }[self._phase]
            self._reason = (
                f'reached {how} in {t - self._t0:.1f} s: {err * 1e3:.1f} mm, attitude '
                f'{math.degrees(offset):.3f} deg (max {math.degrees(self._max_offset):.3f})'
            )
            self._hold_budget = self._phase in (
                GoalPhase.APPROACH,
                GoalPhase.SPEND,
                GoalPhase.RESTORE,
            ) or (self._phase is GoalPhase.DETOUR and self._plan.segments[-1].path is not None)
            if self._hold_budget:
                p = self.law.task_terms(q).position
                self._hold_position = hold_point(self.law.model, q, p, self._goal, HOLD_INSET)
            self._phase = GoalPhase.HOLDING
            return
        if self._phase is GoalPhase.DETOUR:
            self._watch_detour(t, q, err, offset, rate)
            return
        if self._phase in (GoalPhase.SPEND, GoalPhase.RESTORE):
            self._cycle(t, q, err, offset)
            return
        if r < self._best_residual - s.stall_progress / s.position_tolerance:
            self._best_residual = r
            self._t_progress = t
            return
        if t - self._t_progress < s.stall_time:
            return
        self._on_stall(t, q, err, offset)

    def _watch_detour(
        self, t: float, q: np.ndarray, err: float, offset: float, rate: float
    ) -> None:
        """Stop the detour's leg whose base attitude offset is beyond its limit (the spend
        budget on the legs meant to leave the base untouched, loop and self-motion legs, with
        the base turning at ``rate`` [rad/s] for ``LEG_HORIZON`` more; the whole budget on the
        others; the tolerance when spending is off), or the loop leg whose joint stalled
        (:class:`~.legs.LegWatch`): then plan again, or abort saying why."""
        s = self.settings
        segment = self._plan.segments[self._segment]
        still = segment.joint >= 0 or segment.self_motion != 0
        limit = (self._spend_budget() if still else s.attitude_budget) or s.attitude_tolerance
        kind = 'loop leg' if segment.joint >= 0 else 'leg'
        where = f'{kind} {self._segment + 1} of {len(self._plan.segments)} of a detour'
        if offset + (LEG_HORIZON * rate if still else 0.0) > limit:
            why = f'the base attitude {math.degrees(offset):.3f} deg off, turning at '
            why += f"{math.degrees(rate):.3f} deg/s, the leg's limit {math.degrees(limit):.3f} deg"
        elif self._leg is not None and self._leg.stalled(t, q):
            why = f'stalled: {self._leg.describe(t, q, self.law.model.joint_names)}'
        else:
            return
        self._stops += 1
        self._stop_note = f'{where} stopped ({why}), {err * 1e3:.1f} mm from the goal'
        self._plan, self._leg = None, None
        self._plan_or_abort(t, q, self._stop_note)

    def _watch_hold(self, q: np.ndarray, offset: float) -> None:
        """A reached goal held with the base attitude beyond the tolerance: said in the reason,
        the figure renewed when it grew by ``CYCLE_RESTORE_PROGRESS`` of the tolerance."""
        tol = self.settings.attitude_tolerance
        if offset <= max(tol, self._hold_offset + CYCLE_RESTORE_PROGRESS * tol):
            return
        self._hold_offset = offset
        self._reason = self._reason.split(HELD)[0] + (
            f'{HELD} {math.degrees(offset):.3f} deg off, beyond attitude_tolerance_deg '
            f'{self.settings.attitude_tolerance_deg:g}{limits_note(self.law.model, q)}'
        )

    def _on_stall(self, t: float, q: np.ndarray, err: float, offset: float) -> None:
        s = self.settings
        what = (
            f'stalled {err * 1e3:.1f} mm short (no progress of {s.stall_progress * 1e3:g} mm '
            f'in {s.stall_time:g} s)'
        )
        if self.law.mode is not ControlMode.REACTIONLESS:
            self._abort(t, q, f'{what} in {self.law.mode.value} mode (no recovery in this mode)')
            return
        if self.law.track_orientation:
            self._abort(t, q, f'{what}; no recovery with track_orientation (position task only)')
            return
        if self._cycles < s.max_cycles and not self._cycled:
            self._idle_cycles = 0
            self._cycle_error = err
            self._spend(t)
            return
        self._plan_or_abort(t, q, what)

    def _plan_or_abort(self, t: float, q: np.ndarray, what: str) -> None:
        s = self.settings
        if self._path_plans < s.max_path_plans and self._spend_budget() and not self._path_failed:
            self._path_plans += 1  # a joint path through the budget first
            self._searched = self._nodes = 0
            self._best_approach = None
            self._stall_note = what
            seed = s.plan_seed * 100003 + self._goal_id * 101 + 90 + self._path_plans
            self._start_search(PathPlanner, q, PATH_STEPS * s.plan_max_steps, seed)
            return
        if not self._first_loops and self._plans == 0 and s.max_loop_plans > 0:
            self._first_loops = True  # loops from the first stall, before any detour
            self._searched = self._nodes = 0
            self._best_approach = None
            self._start_loop_planner(q, partial=False)
            return
        if self._plans >= s.max_plans and self._loop_plans < s.max_loop_plans:
            self._start_loop_planner(q)
            return
        if self._plans >= s.max_plans:
            cycles = f', {self._cycles} cycle(s) (max_cycles {s.max_cycles})'
            cycles += self._loops_note()
            self._abort(
                t, q, f'{what} after {self._plans} plan(s) (max_plans {s.max_plans}){cycles}'
            )
            return
        self._searched = self._nodes = 0
        self._best_approach = None
        self._start_planner(q)

    def _spend(self, t: float) -> None:
        """Start the spending half of a recovery cycle."""
        self._phase = GoalPhase.SPEND
        self._best_residual = math.inf
        self._t_progress = t

    def _cycle(self, t: float, q: np.ndarray, err: float, offset: float) -> None:
        """The recovery cycle's transitions (the goal not reached yet)."""
        s = self.settings
        if self._phase is GoalPhase.SPEND:
            if err < self._best_residual - s.stall_progress:
                self._best_residual = err
                self._t_progress = t
            spent = offset >= CYCLE_SPENT * (self._spend_budget() or 0.0)
            if err <= s.position_tolerance or spent or t - self._t_progress >= s.stall_time:
                if err <= s.position_tolerance:
                    self._hold_position = self._goal.copy()
                else:
                    self._hold_position = self.law.task_terms(q).position
                self._phase = GoalPhase.RESTORE
                self._cycle_offset = offset
                self._t_progress = t
            return
        if offset < self._cycle_offset - CYCLE_RESTORE_PROGRESS * s.attitude_tolerance:
            self._cycle_offset = offset
            self._t_progress = t
        restored = offset <= CYCLE_RESTORED * s.attitude_tolerance
        if not restored and t - self._t_progress < s.stall_time:
            return
        self._cycles += 1
        if restored and err < self._cycle_error - s.stall_progress:
            self._cycle_error = err
            self._idle_cycles = 0
        else:
            self._idle_cycles += 1
        if self._idle_cycles < CYCLE_PATIENCE and self._cycles < s.max_cycles:
            self._spend(t)
            return
        self._cycled = True
        self._t_progress = t
        what = (
            f'stalled {err * 1e3:.1f} mm short ({self._cycles} spend-and-restore cycle(s), '
            f'the last {self._idle_cycles} without {s.stall_progress * 1e3:g} mm of progress)'
        )
        self._plan_or_abort(t, q, what)

    def _start_planner(self, q: np.ndarray) -> None:
        """Start search number ``plans + 1`` from ``q``, with its own seed."""
        s = self.settings
        self._plans += 1
        seed = s.plan_seed * 100003 + self._goal_id * 101 + self._plans
        self._start_search(RnsPlanner, q, s.plan_max_steps, seed)

    def _start_loop_planner(self, q: np.ndarray, partial: bool = True) -> None:
        """Start a search of Lie-bracket loops (:class:`~.loops.LoopPlanner`) from ``q``;
        ``partial``: a search that only shrinks the attitude the goal needs returns its loops
        (else it returns complete plans only, and is not counted in ``max_loop_plans``)."""
        s = self.settings
        if partial:  # the search at the first stall is not counted
            self._loop_plans += 1
        seed = s.plan_seed * 100003 + self._goal_id * 101 + 50 + self._loop_plans
        self._start_search(LoopPlanner, q, LOOP_STEPS * s.plan_max_steps, seed)
        self._planner.partial_plans = partial

    def _start_search(
        self, planner: type[RnsPlanner], q: np.ndarray, steps: int, seed: int
    ) -> None:
        """A search by ``planner`` (:class:`RnsPlanner` or its subclass :class:`LoopPlanner`)
        from ``q`` toward the goal, of at most ``steps`` rollout steps."""
        options = search_options(self.settings, self._spend_budget() or 0.0)
        self._planner = planner(
            self.law, q, self._goal, self._reference, max_steps=steps, seed=seed, **options
        )
        self._plan = None
        self._phase = GoalPhase.PLANNING

    def _loops_note(self) -> str:  # (and the joint-path searches)
        n, first, p = self._loop_plans, self._first_loops, self._path_plans
        paths = f', {p} joint-path search(es) (max_path_plans {self.settings.max_path_plans})'
        notes = loops_note(n, self.settings.max_loop_plans, first, self._loops, self._loop_delta)
        return (paths if p else '') + notes

    def _advance_planner(self, t: float, q: np.ndarray) -> None:
        s = self.settings
        planner = self._planner
        before = planner.steps
        done = planner.advance(self.settings.plan_steps_per_update)
        self._planner_steps += planner.steps - before
        if not done:
            return
        self._planner = None
        self._searched += planner.steps
        self._nodes += planner.nodes
        best = planner.best
        if best is not None and (
            self._best_approach is None
            or best.residual(s.position_tolerance, s.attitude_tolerance)
            < self._best_approach.residual(s.position_tolerance, s.attitude_tolerance)
        ):
            self._best_approach = best
        if isinstance(planner, LoopPlanner):
            self._loops += planner.loops
            self._loop_delta = min(self._loop_delta, planner.delta)
        if isinstance(planner, PathPlanner) and planner.plan is None:
            self._path_failed = True  # (the other searches, in their order)
            self._plan_or_abort(t, q, self._stall_note)
            return
        if planner.plan is None and self._plans < s.max_plans:
            self._start_planner(q)  # multi-start: another seed, from where the arm is held
            return
        if planner.plan is None and self._loop_plans < s.max_loop_plans:
            self._start_loop_planner(q)  # the detours failed: loops to another leaf
            return
        if planner.plan is None:
            best = self._best_approach
            figures = '' if best is None else best.note(s.attitude_budget_deg)
            self._abort(
                t,
                q,
                f'no path through the reaction null space: {self._plans} search(es) '
                f'({self._plans} of max_plans {s.max_plans}) of {self._searched} steps, '
                f'{self._nodes} nodes{figures}{self._loops_note()}',
            )
            return
        self._plan = planner.plan
        self._segment = -1
        self._next_segment(t)

    def _next_segment(self, t: float) -> None:
        self._segment += 1
        self._leg = None
        self._cycled = False
        self._self_motion_dir = None
        if self._segment < len(self._plan.segments):
            self._phase = GoalPhase.DETOUR
            self._t_phase_end = t + self._plan.segments[self._segment].duration
            return
        self._phase = GoalPhase.APPROACH
        self._best_residual = math.inf
        self._t_progress = t

    def _abort(self, t: float, q: np.ndarray, reason: str) -> None:
        self._outcome = GoalOutcome.ABORTED
        if self._stops and self._stop_note not in reason:
            reason += f'; {self._stops} detour leg(s) stopped, the last: {self._stop_note}'
        self._reason = reason + limits_note(self.law.model, q)
        self._t_end = t
        self._planner = self._plan = None
        restore = (
            self.law.mode is ControlMode.REACTIONLESS
            and self._offset(q) > RESTORED * self.settings.attitude_tolerance
        )
        if restore:
            self._phase = GoalPhase.RESTORING
            self._hold_position = self.law.task_terms(q).position
            self._t_phase_end = t + self.settings.restore_timeout
        else:
            self._phase = GoalPhase.STOPPED

    def _make_status(self, err: float, offset: float) -> GoalStatus:
        active = self._outcome is GoalOutcome.ACTIVE
        t = self._t_last if self._t_last is not None else self._t0
        progress = 0.0
        if self._initial_error > 0.0:
            progress = min(1.0, max(0.0, 1.0 - self._best_error / self._initial_error))
        measured = (GoalPhase.TRACKING, GoalPhase.APPROACH)
        stall = t - self._t_progress if active and self._phase in measured else 0.0
        return GoalStatus(
            goal_id=self._goal_id,
            outcome=self._outcome,
            phase=self._phase,
            reason=self._reason,
            mode=self.law.mode.value,
            position_error=err,
            initial_error=self._initial_error,
            progress=progress,
            attitude_offset=offset,
            max_attitude_offset=self._max_offset,
            attitude_budget=self.settings.attitude_budget,
            stall_time=max(0.0, stall),
            elapsed=(self._t_end if self._t_end is not None else t) - self._t0
            if self._goal is not None
            else 0.0,
            plans=self._plans,
            planner_steps=self._planner_steps,
        )
