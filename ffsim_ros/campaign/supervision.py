""":class:`~ffsim_ros.control.supervisor.ReachSupervisor`'s bookkeeping for a batch of runs.

:class:`SupervisorBank` keeps, in arrays over the slots of a batch, what a
:class:`ReachSupervisor` keeps per goal -- the goal, its outcome and phase, the attitude
reference, the timers of stall detection and of the timeout, the best error and residual, the
largest attitude offset -- and updates them exactly as :meth:`ReachSupervisor.update` does, in
the same order with the same floating-point operations, for the phases that need no planner:
``idle``, ``tracking``, ``holding`` (a goal reached directly), ``restoring`` and ``stopped``.
The efforts come from :class:`~ffsim_ros.control.batched.BatchedLaw`.

A stall in ``reactionless`` mode with plans left is where the supervisor would start its
planner: :meth:`SupervisorBank.judge` returns those slots and the batch hands them to a
per-run :class:`ReachSupervisor` (see :mod:`.batch`). Every other stall, the timeout and a
goal reached are decided here, with the supervisor's reason texts.
"""

from __future__ import annotations

import math

import numpy as np

from ffsim_ros.control import (
    GOAL_OUTCOMES,
    GOAL_PHASES,
    ControlMode,
    GoalOutcome,
    GoalPhase,
    GoalStatus,
    ReachSettings,
)
from ffsim_ros.control.batched import attitude_errors
from ffsim_ros.control.supervisor import RESTORED

OUTCOME = {o: k for k, o in enumerate(GoalOutcome)}
PHASE = {p: k for k, p in enumerate(GoalPhase)}
_NONE, _ACTIVE, _REACHED, _ABORTED = (OUTCOME[o] for o in GoalOutcome)
_IDLE = PHASE[GoalPhase.IDLE]
_TRACKING = PHASE[GoalPhase.TRACKING]
_HOLDING = PHASE[GoalPhase.HOLDING]
_RESTORING = PHASE[GoalPhase.RESTORING]
_STOPPED = PHASE[GoalPhase.STOPPED]
#: Phases whose efforts steer the end effector toward a point (the others brake).
_STEERING = (_TRACKING, _HOLDING, _RESTORING)


class SupervisorBank:
    """The per-goal state of ``capacity`` supervisors (module docstring).

    Parameters
    ----------
    capacity : int
        Number of slots.
    settings : ReachSettings
    mode : ControlMode
    track_orientation : bool
    """

    def __init__(
        self,
        capacity: int,
        settings: ReachSettings,
        mode: ControlMode,
        track_orientation: bool = False,
    ) -> None:
        self.settings = settings
        self.mode = ControlMode(mode)
        self.reactionless = self.mode is ControlMode.REACTIONLESS
        self.track_orientation = track_orientation
        B = int(capacity)
        nan = np.nan
        self.reference = np.full((B, 4), nan)
        self.goal = np.full((B, 3), nan)
        self.start_attitude = np.full((B, 4), nan)
        self.hold_position = np.full((B, 3), nan)
        self.outcome = np.zeros(B, dtype=np.int64)
        self.phase = np.zeros(B, dtype=np.int64)
        self.goal_id = np.zeros(B, dtype=np.int64)
        self.plans = np.zeros(B, dtype=np.int64)
        self.planner_steps = np.zeros(B, dtype=np.int64)
        for name in (
            't0',
            't_progress',
            't_phase_end',
            't_last',
            't_end',
            'initial_error',
            'best_error',
            'best_residual',
            'max_offset',
            'position_error',
            'offset',
        ):
            setattr(self, name, np.zeros(B))
        self.reason = [''] * B
        for k in range(B):
            self.reset(k)

    # --------------------------------------------------------------------------- per slot
    def reset(self, k: int) -> None:
        """Slot ``k`` as a new supervisor: no goal, no reference, goal count 0.

        Parameters
        ----------
        k : int
            The slot.
        """
        self.reference[k] = np.nan
        self.goal_id[k] = 0
        self._clear(k)
        self.position_error[k] = self.offset[k] = 0.0

    def _clear(self, k: int) -> None:
        self.goal[k] = np.nan
        self.outcome[k] = _NONE
        self.phase[k] = _IDLE
        self.reason[k] = ''
        self.t0[k] = self.t_progress[k] = self.t_phase_end[k] = 0.0
        self.t_last[k] = np.nan
        self.t_end[k] = np.nan
        self.initial_error[k] = self.best_error[k] = 0.0
        self.best_residual[k] = math.inf
        self.max_offset[k] = 0.0
        self.start_attitude[k] = np.nan
        self.plans[k] = self.planner_steps[k] = 0
        self.hold_position[k] = np.nan

    def set_goal(self, k: int, t: float, q: np.ndarray, goal: np.ndarray, p: np.ndarray) -> None:
        """:meth:`ReachSupervisor.set_goal` for slot ``k`` (the goal already checked), the end
        effector at ``p`` (3,) at ``q``.

        Parameters
        ----------
        k : int
            The slot.
        t : float
            Time [s] (the run's simulated clock).
        q : (nq,) ndarray
            Measured configuration ``[r0, Q0 (x, y, z, w), phi]``, base in the inertial frame
            [m, -, rad | m].
        goal : (3,) ndarray
            End-effector goal, inertial frame [m].
        p : (3,) ndarray
            End-effector position at ``q``, inertial frame [m].
        """
        goal_id = self.goal_id[k] + 1
        self._clear(k)
        self.goal_id[k] = goal_id
        self.goal[k] = goal
        self.outcome[k] = _ACTIVE
        self.phase[k] = _TRACKING
        self.t0[k] = self.t_progress[k] = self.t_last[k] = float(t)
        if self.reactionless and np.isnan(self.reference[k, 0]):
            self.reference[k] = q[3:7]
        self.start_attitude[k] = q[3:7]
        self.initial_error[k] = self.best_error[k] = float(np.linalg.norm(goal - p))
        self.position_error[k] = self.initial_error[k]
        self.offset[k] = self.offsets(np.array([k]), q[None, 3:7])[0]

    def adopt(self, k: int, reference: np.ndarray | None, goal_id: int) -> None:
        """Take over slot ``k`` from a per-run supervisor between goals: its attitude
        reference and goal count (what carries from one goal to the next).

        Parameters
        ----------
        k : int
            The slot.
        reference : (4,) ndarray or None
            The attitude reference, base quaternion (x, y, z, w) in the inertial frame [-].
        goal_id : int
        """
        self._clear(k)
        self.reference[k] = np.nan if reference is None else reference
        self.goal_id[k] = goal_id

    def status(self, k: int) -> GoalStatus:
        """The :class:`GoalStatus` of slot ``k`` after its last update.

        Parameters
        ----------
        k : int
            The slot.

        Returns
        -------
        GoalStatus
        """
        has_goal = not np.isnan(self.goal[k, 0])
        t = self.t_last[k] if not np.isnan(self.t_last[k]) else self.t0[k]
        progress = 0.0
        if self.initial_error[k] > 0.0:
            progress = min(1.0, max(0.0, 1.0 - self.best_error[k] / self.initial_error[k]))
        active = self.outcome[k] == _ACTIVE
        stall = t - self.t_progress[k] if active and self.phase[k] == _TRACKING else 0.0
        end = self.t_end[k] if not np.isnan(self.t_end[k]) else t
        return GoalStatus(
            goal_id=int(self.goal_id[k]),
            outcome=GoalOutcome(GOAL_OUTCOMES[self.outcome[k]]),
            phase=GoalPhase(GOAL_PHASES[self.phase[k]]),
            reason=self.reason[k],
            mode=self.mode.value,
            position_error=float(self.position_error[k]),
            initial_error=float(self.initial_error[k]),
            progress=progress,
            attitude_offset=float(self.offset[k]),
            max_attitude_offset=float(self.max_offset[k]),
            attitude_budget=self.settings.attitude_budget,
            stall_time=max(0.0, float(stall)),
            elapsed=float(end - self.t0[k]) if has_goal else 0.0,
            plans=int(self.plans[k]),
            planner_steps=int(self.planner_steps[k]),
        )

    def mirror(self, k: int, status: GoalStatus) -> None:
        """Record a per-run supervisor's status in slot ``k`` (outcome and phase: what the
        batch's goal sequencing reads).

        Parameters
        ----------
        k : int
            The slot.
        status : GoalStatus
        """
        self.outcome[k] = OUTCOME[status.outcome]
        self.phase[k] = PHASE[status.phase]

    # ------------------------------------------------------------------------- per update
    def offsets(self, idx: np.ndarray, quats: np.ndarray) -> np.ndarray:
        """Attitude offsets (len(idx),) [rad] of the base quaternions ``quats``: from the
        reference (reactionless), else from the attitude at the goal's start, else 0.

        Parameters
        ----------
        idx : (B,) int ndarray
            The slots (indices, unitless).
        quats : (B, 4) ndarray
            Base quaternions (x, y, z, w) in the inertial frame [-], one per slot of ``idx``.

        Returns
        -------
        (B,) ndarray
            [rad].
        """
        ref = self.start_attitude[idx]
        if self.reactionless:
            held = self.reference[idx]
            ref = np.where(np.isnan(held[:, :1]), ref, held)
        out = np.zeros(len(idx))
        has = ~np.isnan(ref[:, 0])
        if np.any(has):
            out[has] = np.linalg.norm(attitude_errors(quats[has], ref[has]), axis=1)
        return out

    def begin(self, idx: np.ndarray, t: np.ndarray, Q: np.ndarray, P: np.ndarray) -> np.ndarray:
        """The part of :meth:`ReachSupervisor.update` before the efforts, for the slots
        ``idx`` at times ``t`` with measured configurations ``Q`` and end effectors ``P``
        (B, 3): reference capture, offsets, timeouts. Returns the offsets.

        Parameters
        ----------
        idx : (B,) int ndarray
            The slots (indices, unitless).
        t : (B,) ndarray
            Times [s] (each run's simulated clock; no frame).
        Q : (B, nq) ndarray
            Measured configurations ``[r0, Q0 (x, y, z, w), phi]``, base in the inertial frame
            [m, -, rad | m].
        P : (B, 3) ndarray
            End-effector positions, inertial frame [m].

        Returns
        -------
        (B,) ndarray
            Attitude offsets [rad].
        """
        if self.reactionless:
            none = np.isnan(self.reference[idx, 0])
            if np.any(none):
                self.reference[idx[none]] = Q[none, 3:7]
        self.t_last[idx] = t
        offset = self.offsets(idx, Q[:, 3:7])
        active = self.outcome[idx] == _ACTIVE
        if np.any(active):
            a = idx[active]
            self.max_offset[a] = np.maximum(self.max_offset[a], offset[active])
            late = active & (t - self.t0[idx] > self.settings.goal_timeout)
            for j in np.flatnonzero(late):
                why = f'timeout: not reached after {self.settings.goal_timeout:g} s'
                self._abort(idx[j], t[j], offset[j], P[j], why)
        return offset

    def targets(self, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
        """What the law steers each slot toward: ``(targets (B, 3) -- NaN rows brake,
        references (B, 4) or None)``.

        Parameters
        ----------
        idx : (B,) int ndarray
            The slots (indices, unitless).

        Returns
        -------
        targets : (B, 3) ndarray
            End-effector targets, inertial frame [m]; NaN rows brake.
        references : (B, 4) ndarray or None
            Base attitude references (x, y, z, w), inertial frame [-] (reactionless mode).
        """
        phase = self.phase[idx]
        targets = np.where((phase == _RESTORING)[:, None], self.hold_position[idx], self.goal[idx])
        steer = np.isin(phase, _STEERING)
        targets[~steer] = np.nan
        refs = self.reference[idx] if self.reactionless else None
        return targets, refs

    def finish(
        self,
        idx: np.ndarray,
        t: np.ndarray,
        P: np.ndarray,
        offset: np.ndarray,
    ) -> np.ndarray:
        """The part of :meth:`ReachSupervisor.update` after the efforts: position errors,
        reached, progress, stalls, the end of restoring. Returns the slots (a subset of
        ``idx``) that stalled where the supervisor would plan a detour.

        Parameters
        ----------
        idx : (B,) int ndarray
            The slots (indices, unitless).
        t : (B,) ndarray
            Times [s] (each run's simulated clock; no frame).
        P : (B, 3) ndarray
            End-effector positions, inertial frame [m].
        offset : (B,) ndarray
            Attitude offsets from :meth:`begin` [rad] (scalars: no frame).

        Returns
        -------
        (k,) int64 ndarray
        """
        goal = self.goal[idx]
        has = ~np.isnan(goal[:, 0])
        err = np.zeros(len(idx))
        if np.any(has):
            d = goal[has] - P[has]
            err[has] = np.sqrt(np.einsum('ij,ij->i', d, d))
        self.position_error[idx] = err
        self.offset[idx] = offset
        s = self.settings
        active = self.outcome[idx] == _ACTIVE
        a = idx[active]
        self.best_error[a] = np.minimum(self.best_error[a], err[active])
        working = active & (self.phase[idx] == _TRACKING)
        r = err / s.position_tolerance
        if self.reactionless:
            r = np.maximum(r, offset / s.attitude_tolerance)
        reached = working & (r <= 1.0)
        for j in np.flatnonzero(reached):
            self._reached(idx[j], t[j], err[j], offset[j])
        pending = working & ~reached
        best = self.best_residual[idx]
        progress = pending & (r < best - s.stall_progress / s.position_tolerance)
        w = idx[progress]
        self.best_residual[w] = r[progress]
        self.t_progress[w] = t[progress]
        stalled = pending & ~progress & ~(t - self.t_progress[idx] < s.stall_time)
        planning = []
        for j in np.flatnonzero(stalled):
            if self._stall(idx[j], t[j], err[j], offset[j], P[j]):
                planning.append(idx[j])
        restoring = ~active & (self.phase[idx] == _RESTORING)
        for j in np.flatnonzero(restoring):
            k = idx[j]
            if offset[j] <= RESTORED * s.attitude_tolerance or t[j] >= self.t_phase_end[k]:
                self.phase[k] = _STOPPED
        return np.array(planning, dtype=np.int64)

    # ------------------------------------------------------------------------- outcomes
    def _reached(self, k: int, t: float, err: float, offset: float) -> None:
        self.outcome[k] = _REACHED
        self.t_end[k] = t
        self.reason[k] = (
            f'reached directly in {t - self.t0[k]:.1f} s: {err * 1e3:.1f} mm, attitude '
            f'{math.degrees(offset):.3f} deg (max {math.degrees(self.max_offset[k]):.3f})'
        )
        self.phase[k] = _HOLDING

    def _stall(self, k: int, t: float, err: float, offset: float, p: np.ndarray) -> bool:
        """Abort slot ``k`` for a stall as the supervisor does; True where it would plan."""
        s = self.settings
        what = (
            f'stalled {err * 1e3:.1f} mm short (no progress of {s.stall_progress * 1e3:g} mm '
            f'in {s.stall_time:g} s)'
        )
        if not self.reactionless:
            why = f'{what} in {self.mode.value} mode (no recovery in this mode)'
        elif self.track_orientation:
            why = f'{what}; no recovery with track_orientation (position task only)'
        elif self.plans[k] >= s.max_plans and not (
            s.max_cycles or s.max_loop_plans or (s.max_path_plans and s.attitude_budget_deg)
        ):
            why = f'{what} after {self.plans[k]} plan(s) (max_plans {s.max_plans})'
        else:
            return True
        self._abort(k, t, offset, p, why)
        return False

    def _abort(self, k: int, t: float, offset: float, p: np.ndarray, reason: str) -> None:
        self.outcome[k] = _ABORTED
        self.reason[k] = reason
        self.t_end[k] = t
        if self.reactionless and offset > RESTORED * self.settings.attitude_tolerance:
            self.phase[k] = _RESTORING
            self.hold_position[k] = p
            self.t_phase_end[k] = t + self.settings.restore_timeout
        else:
            self.phase[k] = _STOPPED
