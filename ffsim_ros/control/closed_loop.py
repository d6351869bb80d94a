"""In-process closed loop of a supervised controller and the physics (no ROS, no DDS).

What the simulator node and the controller node do over DDS, in one process: the physics
steps with :func:`ffsim_ros.dynamics.step` (RK4 at ``physics_dt``, the efforts held over each
control period: ``steps=`` physics steps per update) and the
:class:`~ffsim_ros.control.supervisor.ReachSupervisor` updates at ``1 / control_dt``. Used by
``benchmarks/reach.py`` and the tests; :func:`chained_goals` draws the goals of the issue-15
scheme (each 0.1-0.45 m from wherever the previous one ended).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

import ffsim_ros.dynamics as D

from .goals import GoalOutcome, GoalPhase, GoalStatus
from .modes import ControlMode
from .rns import attitude_error
from .supervisor import ReachSupervisor


@dataclass(frozen=True)
class GoalRecord:
    """One goal of a run (SI units, angles in rad).

    Attributes
    ----------
    goal : (3,) [m];  distance : float, from the end effector when given [m].
    outcome : GoalOutcome at the end (``aborted`` when the run's time bound ended the goal
        first: :func:`cut_off_reason`);  reason : str.
    time : float, from the goal to its outcome [s] (the timeout if none).
    error : float, final position error [m].
    max_offset : float, largest base attitude offset during the goal [rad] (from the held
        reference in ``reactionless`` mode, else from the attitude at the goal's start).
    final_offset : float, that offset when the goal ended (after settling) [rad].
    plans : int;  planner_steps : int.
    limit_excess : float, largest excursion of a joint beyond its URDF position limits during
        the goal and its settling [rad | m] (0: always within; the law clamps the joints near
        their limits, this loop has no stops, as the simulator without ``position_limits``).
    start : (nq,) configuration the goal was given from (replays start there at rest: the
        chains run at zero momentum and every goal starts after its predecessor settled).
    reference : (4,) the held base attitude (x, y, z, w) when the goal was given (None
        outside ``reactionless`` mode or before any reference).
    """

    goal: np.ndarray
    distance: float
    outcome: GoalOutcome
    reason: str
    time: float
    error: float
    max_offset: float
    final_offset: float
    plans: int
    planner_steps: int
    limit_excess: float = 0.0
    start: np.ndarray | None = None
    reference: np.ndarray | None = None


class ClosedLoop:
    """A supervisor closing the loop on :func:`ffsim_ros.dynamics.step`.

    Parameters
    ----------
    supervisor : ReachSupervisor
    q : (nq,) initial configuration ``[r0, Q0, phi]``, base in the inertial frame
        [m, -, rad | m] (default: the neutral configuration).
    v : (nv,) initial velocity ``[V0, w0, phidot]``, base parts in the inertial frame
        [m/s, rad/s, rad/s | m/s] (default: at rest, zero momentum).
    control_dt : float
        Control period [s].
    physics_dt : float
        RK4 step [s].
    """

    def __init__(
        self,
        supervisor: ReachSupervisor,
        q: np.ndarray | None = None,
        v: np.ndarray | None = None,
        *,
        control_dt: float = 0.01,
        physics_dt: float = 0.001,
    ) -> None:
        self.supervisor = supervisor
        self.model = supervisor.law.model
        self.q = D.neutral(self.model) if q is None else np.asarray(q, float).copy()
        self.v = np.zeros(self.model.nv) if v is None else np.asarray(v, float).copy()
        self.t = 0.0
        self.steps = max(1, int(round(control_dt / physics_dt)))
        self.physics_dt = control_dt / self.steps
        self.control_dt = control_dt
        self.status: GoalStatus = supervisor.status

    def update(self) -> GoalStatus:
        """One control period: a supervisor update, then the physics over the period.

        Returns
        -------
        GoalStatus
        """
        out, self.status = self.supervisor.update(self.t, self.q, self.v)
        self.q, self.v = D.step(
            self.model, self.q, self.v, out.tau, self.physics_dt, steps=self.steps
        )
        self.t += self.control_dt
        return self.status

    def ee_position(self) -> np.ndarray:
        """(3,) end-effector position [m].

        Returns
        -------
        (3,) ndarray
            Inertial frame [m].
        """
        return self.supervisor.law.task_terms(self.q).position

    def run_goal(
        self,
        goal: np.ndarray,
        *,
        timeout: float = 400.0,
        settle: float = 1.0,
        timeout_name: str = "run_goal's timeout",
    ) -> GoalRecord:
        """Give ``goal`` and run until its outcome, then ``settle`` seconds more (the end of an
        abort's restoring included); ``timeout`` [s] bounds the run (the supervisor's own
        ``goal_timeout`` normally ends it first). A goal still active when ``timeout`` ends it
        is recorded ``aborted``, with the reason :func:`cut_off_reason` (the supervisor's own
        timeout's words, naming ``timeout_name``).

        Parameters
        ----------
        goal : (3,) end-effector goal, inertial frame [m].
        timeout : float
            [s], simulated.
        settle : float
            [s], simulated.
        timeout_name : str
            What ``timeout`` is called in the reason of a goal it cuts off.

        Returns
        -------
        GoalRecord
        """
        sup = self.supervisor
        distance = float(np.linalg.norm(np.asarray(goal, float) - self.ee_position()))
        start = self.q.copy()
        sup.set_goal(self.t, self.q, goal)
        reference = sup.attitude_reference
        t_end = self.t + timeout
        status = sup.status
        excess = self.limit_excess()
        while self.t < t_end:
            status = self.update()
            excess = max(excess, self.limit_excess())
            if not status.active:
                break
        t_outcome = status.elapsed
        t_settle = self.t + settle
        while self.t < t_end and (self.t < t_settle or status.phase is GoalPhase.RESTORING):
            status = self.update()
            excess = max(excess, self.limit_excess())
        outcome, reason = status.outcome, status.reason
        if outcome is GoalOutcome.ACTIVE:  # cut off by ``timeout``, not by the supervisor
            outcome, reason = GoalOutcome.ABORTED, cut_off_reason(timeout, timeout_name)
        return GoalRecord(
            goal=np.asarray(goal, float).copy(),
            distance=distance,
            outcome=outcome,
            reason=reason,
            time=t_outcome,
            error=status.position_error,
            max_offset=status.max_attitude_offset,
            final_offset=self.attitude_offset(),
            plans=status.plans,
            planner_steps=status.planner_steps,
            limit_excess=excess,
            start=start,
            reference=None if reference is None else np.array(reference, float),
        )

    def limit_excess(self) -> float:
        """How far the joints are beyond their position limits now [rad | m] (0: within).

        Returns
        -------
        float
        """
        phi = self.q[7:]
        return float(max(0.0, np.max(phi - self.model.upper), np.max(self.model.lower - phi)))

    def attitude_offset(self) -> float:
        """Base attitude angle from the supervisor's reference [rad] (``reactionless``), else
        the supervisor's per-goal figure.

        Returns
        -------
        float
        """
        ref = self.supervisor.attitude_reference
        if self.supervisor.mode is ControlMode.REACTIONLESS and ref is not None:
            return float(np.linalg.norm(attitude_error(self.q[3:7], ref)))
        return self.status.attitude_offset


def cut_off_reason(timeout: float, name: str) -> str:
    """The reason of a goal still active when a run's time bound (not the supervisor's
    ``goal_timeout``) ended it, in the words of the supervisor's own timeout:
    ``timeout: not reached after 0.5 s (timing.run_goal_timeout, before the supervisor's
    goal_timeout)``.

    Parameters
    ----------
    timeout : float
        The bound [s].
    name : str
        What the bound is called (``timing.run_goal_timeout`` in a campaign).

    Returns
    -------
    str
    """
    return (
        f"timeout: not reached after {timeout:g} s ({name}, before the supervisor's goal_timeout)"
    )


def chained_goals(
    loop: ClosedLoop,
    rng: np.random.Generator,
    count: int,
    *,
    near: float = 0.1,
    far: float = 0.45,
    **run_options: float,
) -> list[GoalRecord]:
    """Run ``count`` goals, each drawn ``near``-``far`` m [m] (uniform) in a uniformly random
    direction from wherever the end effector is when it is drawn, redrawn until the
    controller's :meth:`~ffsim_ros.control.reactionless.ReactionlessController.check_goal`
    accepts it. ``run_options`` go to :meth:`ClosedLoop.run_goal`.

    Parameters
    ----------
    loop : ClosedLoop
    rng : numpy.random.Generator
    count : int
        Number of goals.
    near, far : float
        Distance range of each goal from the end effector [m].
    **run_options : float
        ``timeout``, ``settle`` of :meth:`ClosedLoop.run_goal` [s].

    Returns
    -------
    list of GoalRecord
    """
    records = []
    law = loop.supervisor.law
    for _ in range(count):
        p = loop.ee_position()
        while True:
            d = rng.normal(size=3)
            goal = p + rng.uniform(near, far) * d / np.linalg.norm(d)
            try:
                law.check_goal(loop.q, goal)
            except ValueError:
                continue
            break
        records.append(loop.run_goal(goal, **run_options))
    return records
