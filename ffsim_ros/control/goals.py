"""Goal outcome model of the reach supervisor: settings, outcome, phase and status (no ROS).

Plain enums and frozen dataclasses in SI units, so that a node maps them onto a message field
by field (:meth:`GoalStatus.as_dict`). :class:`~ffsim_ros.control.supervisor.ReachSupervisor`
produces them.

Attitude reference (what ``reactionless`` mode holds): the base attitude measured when
reactionless mode is entered -- the first update of a supervisor created in that mode, every
switch into it from another mode (:meth:`ReachSupervisor.set_mode`), or an explicit
:meth:`ReachSupervisor.reset_attitude_reference`. It is kept across goals, so the base stays
within the budget of one attitude for a whole session instead of drifting by up to the
tolerance at every goal; it is *not* restored after a ``gjm_tracking`` or ``joint_pd`` phase
(turning the base back is not reactionless), the attitude reached there becomes the new one.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, fields
from enum import Enum


class GoalOutcome(str, Enum):
    """Outcome of the current goal; ``none``: no goal yet (or cancelled)."""

    NONE = 'none'
    ACTIVE = 'active'
    REACHED = 'reached'
    ABORTED = 'aborted'


#: The values of :class:`GoalOutcome`, in order (an index for numeric status fields).
GOAL_OUTCOMES = tuple(o.value for o in GoalOutcome)

#: How the reason of a goal refused at acceptance begins (``'rejected: unreachable ...'``).
REJECTED = 'rejected'


class GoalPhase(str, Enum):
    """What the supervisor is doing for the current goal.

    ``idle``: no goal, arm held still; ``tracking``: the mode's law toward the goal;
    ``planning``: stalled, a path is searched in the reaction null space (arm held still);
    ``detour``: following the planned waypoints (reactionless); ``approach``: the final leg,
    end effector first with the attitude within the budget; ``holding``: goal reached, the
    end effector held on it; ``restoring``: aborted, the base attitude brought back under the
    tolerance (end effector held where it is as far as the reaction null space allows);
    ``stopped``: aborted, arm held still; ``spend`` and ``restore``, the two halves of a
    recovery cycle after a stall: ``spend``, the end effector toward the goal first, the base
    attitude spent within the budget; ``restore``, the attitude given back with the end
    effector held (motion in the end effector's null space).
    """

    IDLE = 'idle'
    TRACKING = 'tracking'
    PLANNING = 'planning'
    DETOUR = 'detour'
    APPROACH = 'approach'
    HOLDING = 'holding'
    RESTORING = 'restoring'
    STOPPED = 'stopped'
    SPEND = 'spend'
    RESTORE = 'restore'


#: The values of :class:`GoalPhase`, in order (an index for numeric status fields).
GOAL_PHASES = tuple(p.value for p in GoalPhase)

#: Ranges of the :class:`ReachSettings` fields a user sets, ``field: (low, high)`` in the
#: field's unit: the one source of the controller's ``reach.*`` parameter bounds and of a
#: campaign scenario's ``reach`` (``max_plans: 1e9`` searched for days per goal there).
REACH_BOUNDS: dict[str, tuple[float, float]] = {
    'position_tolerance': (1e-6, 1.0),
    'attitude_budget_deg': (0.0, 180.0),
    'stall_time': (0.01, 3600.0),
    'goal_timeout': (0.01, 1e6),
    'max_plans': (0, 100),
    'max_cycles': (0, 100),
    'max_loop_plans': (0, 100),
    'max_path_plans': (0, 100),
}


@dataclass(frozen=True)
class ReachSettings:
    """How goals are judged and recovered (SI units, except the two attitude angles in degrees
    as a user sets them).

    Attributes
    ----------
    position_tolerance : float
        A goal is reached when the end effector is this close [m] ...
    attitude_tolerance_deg : float
        ... and, in ``reactionless`` mode, the base attitude is within this angle of the
        reference [deg].
    attitude_budget_deg : float
        Largest base attitude offset [deg] the recovery may spend to leave a fold of the
        reaction null space; restored below ``attitude_tolerance_deg`` before the goal counts
        as reached. 0 disables the spending (the planner then keeps the attitude).
    stall_time : float
        A goal stalls when its residual has not dropped by ``stall_progress`` for this long
        [s] (normal tracking and the final approach).
    stall_progress : float
        Progress that resets the stall timer [m]; an attitude change of ``attitude_tolerance``
        counts as ``position_tolerance``.
    goal_timeout : float
        Longest time a goal stays active [s]; then it is aborted.
    restore_timeout : float
        Longest time spent restoring the attitude after an abort [s].
    plan_max_steps : int
        Planner effort per plan: kinematic rollout steps (each one evaluation of the
        kinematics and inertia, ~0.2 ms on the servicer).
    plan_steps_per_update : int
        Rollout steps the planner may take in one :meth:`ReachSupervisor.update` (bounds the
        cost of an update while planning; the arm is held still meanwhile).
    max_plans : int
        Plans tried for one goal (a stall after a planned detour plans again).
    max_cycles : int
        Spend-and-restore cycles tried for one goal (0: off): after a stall, before planning,
        the attitude budget is spent toward the goal and restored with the end effector held,
        cycle after cycle, as long as the cycles bring the end effector closer. Off by
        default: over the 120 chained goals of the servicer (``benchmarks/reach.py``) 40
        cycles reached 101, as many as without; at a fold of the reaction null space
        ``rank [J*; A] = 3 + rank(A N_J) = 3 + rank(J* N_A)``, so the restoring (end effector
        held) loses the very attitude direction the spending used.
    max_loop_plans : int
        Searches of Lie-bracket loops (:class:`~ffsim_ros.control.loops.LoopPlanner`) for one
        goal once the ``max_plans`` detour searches found no path (0: off, also the search
        for a complete loop plan at the first stall, which is not counted): cyclic joint
        motions inside the reaction null space that move the arm to another leaf, from which
        the budget approach reaches the goal.
    max_path_plans : int
        Searches of a joint path through the attitude budget
        (:class:`~ffsim_ros.control.paths.PathPlanner`, direct collocation) for one goal, the
        first at its first stall, before the other searches (0: off; also off without an
        attitude budget): a path along which the base attitude stays within the budget and
        ends within the tolerance, the end effector on the goal -- the way across a fold that
        the detour and loop searches do not find.
    plan_dt : float
        Time step of the planner's rollouts [s].
    plan_radius : float
        Radius around the goal in which the planner samples detour waypoints [m].
    plan_seed : int
        Seed of the planner's random numbers (each goal and plan gets its own stream derived
        from it, so runs are reproducible).

    Each field is checked (finite, not negative; the ranges of :data:`REACH_BOUNDS` for those
    a user sets, e.g. at most 100 ``max_plans`` and 180 deg of ``attitude_budget_deg``).
    """

    position_tolerance: float = 0.005
    attitude_tolerance_deg: float = 0.1
    attitude_budget_deg: float = 0.2
    stall_time: float = 2.0
    stall_progress: float = 0.001
    goal_timeout: float = 300.0
    restore_timeout: float = 10.0
    plan_max_steps: int = 12000
    plan_steps_per_update: int = 20
    max_plans: int = 3
    max_cycles: int = 0
    max_loop_plans: int = 4
    max_path_plans: int = 2
    plan_dt: float = 0.1
    plan_radius: float = 1.0
    plan_seed: int = 0

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if f.type in ('int', int):
                if not isinstance(value, int) or isinstance(value, bool):
                    raise ValueError(f'{f.name}: expected an integer, got {value!r}')
                low = 0 if f.name == 'plan_seed' else 1
                if f.name in ('max_plans', 'max_cycles', 'max_loop_plans', 'max_path_plans'):
                    low = 0
                if value < low:
                    raise ValueError(f'{f.name}: expected an integer >= {low}, got {value}')
                continue
            if not isinstance(value, (int, float)) or not math.isfinite(value):
                raise ValueError(f'{f.name}: expected a finite number, got {value!r}')
            zero_ok = f.name == 'attitude_budget_deg'
            if value < 0.0 or (value == 0.0 and not zero_ok):
                raise ValueError(
                    f'{f.name}: expected a value {">= 0" if zero_ok else "> 0"}, got {value}'
                )
        for name, (low, high) in REACH_BOUNDS.items():
            value = getattr(self, name)
            if not low <= value <= high:
                kind = 'an integer' if isinstance(value, int) else 'a value'
                raise ValueError(f'{name}: expected {kind} in [{low:g}, {high:g}], got {value}')
        if 0.0 < self.attitude_budget_deg <= self.attitude_tolerance_deg:
            raise ValueError(
                'attitude_budget_deg: expected 0 (off) or more than attitude_tolerance_deg '
                f'({self.attitude_tolerance_deg}), got {self.attitude_budget_deg}'
            )

    @property
    def attitude_budget(self) -> float:
        """The budget [rad]."""
        return math.radians(self.attitude_budget_deg)

    @property
    def attitude_tolerance(self) -> float:
        """The tolerance [rad]."""
        return math.radians(self.attitude_tolerance_deg)


@dataclass(frozen=True)
class GoalStatus:
    """The current goal as a client sees it (a snapshot; SI units, angles in rad).

    Attributes
    ----------
    goal_id : int, counts the goals given to the supervisor (0: none yet).
    outcome : GoalOutcome
    phase : GoalPhase
    reason : str, why the goal was aborted, or how it was reached ('' while active).
    mode : str, the control mode (a value of ``CONTROL_MODES``).
    position_error : float, distance from the end effector to the goal [m] (0: no goal).
    initial_error : float, that distance when the goal was given [m].
    progress : float, ``1 - best error / initial error`` in [0, 1].
    attitude_offset : float, base attitude angle from the held reference [rad]
        (``reactionless``), or from the attitude at the goal's start (other modes).
    max_attitude_offset : float, largest ``attitude_offset`` during this goal [rad].
    attitude_budget : float, the budget [rad] (0: spending off).
    stall_time : float, time since the residual last made progress [s].
    elapsed : float, time since the goal was given [s].
    plans : int, plans made for this goal.
    planner_steps : int, planner rollout steps spent on this goal.
    """

    goal_id: int = 0
    outcome: GoalOutcome = GoalOutcome.NONE
    phase: GoalPhase = GoalPhase.IDLE
    reason: str = ''
    mode: str = ''
    position_error: float = 0.0
    initial_error: float = 0.0
    progress: float = 0.0
    attitude_offset: float = 0.0
    max_attitude_offset: float = 0.0
    attitude_budget: float = 0.0
    stall_time: float = 0.0
    elapsed: float = 0.0
    plans: int = 0
    planner_steps: int = 0

    @property
    def active(self) -> bool:
        """The goal is still being worked on."""
        return self.outcome is GoalOutcome.ACTIVE

    def as_dict(self) -> dict:
        """Field name -> value, enums as their string values (for a message or a log).

        Returns
        -------
        dict
        """
        out = asdict(self)
        out['outcome'] = self.outcome.value
        out['phase'] = self.phase.value
        return out
