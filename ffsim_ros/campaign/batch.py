"""Runs of a campaign advanced in lockstep as one batch: the physics and the control law of
every run at once (no ROS, no DDS).

Each run is the closed loop of :class:`ffsim_ros.control.closed_loop.ClosedLoop` -- the physics
stepped with :func:`ffsim_ros.dynamics.step` (RK4 at ``physics_dt``, the efforts held over each
control period) and the :class:`~ffsim_ros.control.supervisor.ReachSupervisor`'s law at
``1 / control_dt``, each goal run as :meth:`ClosedLoop.run_goal` runs it (until its outcome,
then ``settle`` seconds, restoring included). :class:`BatchRunner` holds ``batch_size`` runs in
slots and, every control period:

1. sequences the goals of the runs whose goal ended (records it, gives the next one, or ends
   the run and starts the next pending run in its slot);
2. measures each run's state (the true state, plus the run's sensor noise);
3. computes the efforts of all runs with the batched law
   (:class:`~ffsim_ros.control.batched.BatchedLaw`: stacked mass matrices, bias forces, link
   Jacobians and linear algebra) and the supervisors' bookkeeping in arrays
   (:class:`~.supervision.SupervisorBank`); a run whose goal stalls where the supervisor would
   plan a detour is handed to its own :class:`ReachSupervisor`: its state goes back to the
   start of that goal and the goal is run again by the supervisor (the same loop, so the same
   trajectory up to the stall, then the planner), after which the run returns to the batch;
4. steps the physics of all runs with one batched :func:`ffsim_ros.dynamics.step`;
5. checks the states (a non-finite state ends its run with the reason) and updates the
   outcome metrics.

A run's numbers do not depend on the other runs of the batch (each row goes through the same
operations whatever the batch), so a run replayed alone gives the same bits. A run that fails
-- a non-finite state, an exception of the law -- is ended with its reason; the others go on.

The physics is the plain RK4 step of the closed loop (the momentum is free to drift by the
integration error, and is reported); the simulator node's extras (the momentum projection,
the drives' speed limits, position stops) are not in it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field

import numpy as np

import ffsim_ros.dynamics as D
from ffsim_ros.control import (
    ControlMode,
    GoalOutcome,
    GoalPhase,
    GoalStatus,
    ReachSupervisor,
    ReactionlessController,
)
from ffsim_ros.control.batched import (
    BatchedLaw,
    BatchTerms,
    attitude_errors,
    batch_supported,
    turn_quaternions,
)
from ffsim_ros.control.closed_loop import cut_off_reason
from ffsim_ros.resources import sample_robot
from ffsim_ros.scene.geometry import goal_keepout_shapes

from .dispersions import (
    NOISE,
    NOISE_PARAMS,
    RunInputs,
    check_dispersions,
    controller_model,
    input_columns,
    run_rng,
    sample_inputs,
)
from .goals import GoalSource, goal_source
from .interrupts import check_interrupt, reraise_interrupt
from .scenario import Scenario, ScenarioError
from .supervision import PHASE, SupervisorBank

_RESTORING = PHASE[GoalPhase.RESTORING]
_ACTIVE = 1
#: Goal stages of a slot.
_START, _GOAL, _SETTLE, _NEXT = range(4)
#: Rows of sensor noise drawn at a time per run.
NOISE_BLOCK = 64


@dataclass(frozen=True)
class Faults:
    """Faults injected into given runs (to test that a campaign survives them).

    Attributes
    ----------
    nan_state : run index -> simulated time [s] from which the run's efforts are NaN (its
        state becomes non-finite in that control period).
    law_error : run index -> simulated time [s] from which the run's control law raises.
    """

    nan_state: Mapping[int, float] = field(default_factory=dict)
    law_error: Mapping[int, float] = field(default_factory=dict)


class InjectedFault(RuntimeError):
    """The exception a :class:`Faults` ``law_error`` raises."""


class Campaign:
    """What every run of a scenario shares, built once per process: the simulated model
    (loaded from ``robot_path``), the nominal controller and its batched law, the table's
    columns.

    Parameters
    ----------
    scenario : Scenario

    Raises
    ------
    ScenarioError
        An unknown robot or link, a robot with multi-DoF joints, bad dispersions.
    """

    def __init__(self, scenario: Scenario) -> None:
        self.scenario = scenario
        path = scenario.robot
        try:
            if not path.endswith('.urdf'):
                path = str(sample_robot(path))
            self.model = D.load_urdf(path)
        except (FileNotFoundError, ValueError) as exc:
            raise ScenarioError(f'robot: {exc}') from None
        self.robot_path = path
        model = self.model
        if not model.floating_base or not model.single_dof_joints:
            raise ScenarioError(
                f'robot: expected a floating base with one-DoF joints, got {model.name}'
            )
        try:  # goals inside the base's collision shapes refused, as by the node
            self.shapes = goal_keepout_shapes(path, model)[0]
        except ValueError as exc:
            raise ScenarioError(f'robot: invalid collision geometry: {exc}') from None
        try:
            self.law = self.make_law(model)
        except ValueError as exc:
            raise ScenarioError(f'ee_link: {exc}') from None
        self.unbatched = batch_supported(self.law)
        self.batched = None if self.unbatched else BatchedLaw(self.law)
        check_dispersions(scenario, model)
        self.per_row_models = any(
            scenario.dispersion(name) is not None for name in ('mass_scale', 'inertia_scale')
        )
        t = scenario.timing
        self.steps = int(round(t.control_dt / t.physics_dt))
        self.physics_dt = t.control_dt / self.steps
        self.inputs = input_columns(scenario, model)

    def make_law(self, model: D.Model) -> ReactionlessController:
        """The scenario's controller on ``model`` (the nominal model or a run's dispersed one),
        built as the controller node builds it: goals inside the base's collision shapes
        refused within the reach's position tolerance.

        Parameters
        ----------
        model : Model
            The model the controller uses.

        Returns
        -------
        ReactionlessController

        Raises
        ------
        ValueError
            ``ee_link`` is not a link of ``model``.
        """
        s = self.scenario
        return ReactionlessController(
            model,
            s.ee_link,
            mode=s.mode,
            gains=s.gains,
            collision_shapes=self.shapes,
            collision_margin=s.reach.position_tolerance,
        )

    def run_inputs(self, index: int) -> RunInputs:
        """The inputs of run ``index``.

        Parameters
        ----------
        index : int

        Returns
        -------
        RunInputs
        """
        return sample_inputs(self.scenario, self.model, index)


@dataclass
class RunResult:
    """A finished run: its inputs, one record per goal, the outcome metrics and the end
    state (SI units; angles in the metrics in degrees as named)."""

    index: int
    inputs: RunInputs
    goals: list[dict]
    failure: str
    metrics: dict
    q: np.ndarray
    v: np.ndarray
    t: float
    trajectory: dict | None = None

    @property
    def reached(self) -> bool:
        """Every goal reached and no failure."""
        return not self.failure and all(g['outcome'] == 'reached' for g in self.goals)


def _run_metrics(
    model: D.Model, turn: float, rate: float, dP: float, dL: float, peak: np.ndarray
) -> dict:
    """A run's outcome metrics (:class:`RunResult`): largest base attitude change and rate
    [rad, rad/s; reported in degrees], momentum errors, peak efforts (n,); the peak ratio over
    the joints with a positive effort limit (a URDF effort limit of 0 means none: 0/0 gave
    NaN), 0.0 when none has one."""
    limit = model.effort_limit
    has = limit > 0.0
    return {
        'max_attitude_change_deg': float(np.degrees(turn)),
        'max_base_rate_deg_s': float(np.degrees(rate)),
        'momentum_error_linear': float(dP),
        'momentum_error_angular': float(dL),
        'peak_effort_ratio': float(np.max(peak[has] / limit[has])) if np.any(has) else 0.0,
        'peak_effort': dict(zip(model.joint_names, peak.tolist(), strict=True)),
    }


class _Noise:
    """A run's measurement noise: standard normals in blocks from its own stream."""

    def __init__(self, rng: np.random.Generator, stds: np.ndarray, width: int) -> None:
        self.rng, self.stds, self.width = rng, stds, width
        self.block = np.empty((0, width))
        self.pos = 0

    def draw(self) -> np.ndarray:
        if self.pos >= self.block.shape[0]:
            self.block = self.rng.standard_normal((NOISE_BLOCK, self.width))
            self.pos = 0
        self.pos += 1
        return self.block[self.pos - 1]

    def save(self) -> tuple:
        return (self.rng.bit_generator.state, self.block, self.pos)

    def load(self, saved: tuple) -> None:
        self.rng.bit_generator.state, self.block, self.pos = saved


@dataclass
class _Slot:
    """A run in a slot of the batch (its Python-side state)."""

    inputs: RunInputs
    model: D.Model
    source: GoalSource
    noise: _Noise | None
    settings: object
    law: ReactionlessController | None = None
    sup: ReachSupervisor | None = None
    goals: list = field(default_factory=list)
    goal: np.ndarray | None = None
    distance: float = 0.0
    t_outcome: float = 0.0
    checkpoint: tuple | None = None
    failure: str = ''
    trajectory: list | None = None


class BatchRunner:
    """Advance the runs ``indices`` of a campaign in a batch of ``batch_size`` slots; iterate
    to get each :class:`RunResult` as its run ends (module docstring).

    Parameters
    ----------
    campaign : Campaign
    indices : iterable of int, the runs to do (in the order slots are filled).
    batch_size : int, number of slots (default: the scenario's); at most the scenario's
        ``runs`` (a larger one is cut to it: a batch never holds more runs than there are).
    faults : Faults, optional; injected faults (tests).
    record : bool
        Keep each run's trajectory at the control rate (``RunResult.trajectory``: times,
        states, efforts, end-effector positions and goals), for a replay.
    """

    def __init__(
        self,
        campaign: Campaign,
        indices: Iterable[int],
        *,
        batch_size: int | None = None,
        faults: Faults | None = None,
        record: bool = False,
    ) -> None:
        self.c = campaign
        self.s = campaign.scenario
        self.pending = iter(indices)
        self.faults = faults or Faults()
        self.record = record
        B = min(int(batch_size or self.s.batch_size), self.s.runs)
        model = campaign.model
        n = model.n
        self.B = B
        self.Q = np.zeros((B, model.nq))
        self.V = np.zeros((B, model.nv))
        self.T = np.zeros(B)
        self.TAU = np.zeros((B, n))
        self.occupied = np.zeros(B, dtype=bool)
        self.fallback = np.zeros(B, dtype=bool)
        self.stage = np.zeros(B, dtype=np.int64)
        self.t_end = np.zeros(B)
        self.t_settle = np.zeros(B)
        self.slots: list[_Slot | None] = [None] * B
        self.exhausted = False
        self.bank = SupervisorBank(B, self.s.reach, ControlMode(self.s.mode))
        # metrics
        self.quat0 = np.zeros((B, 4))
        self.h0 = np.zeros((B, 6))
        self.max_rate = np.zeros(B)
        self.max_turn = np.zeros(B)
        self.dP = np.zeros(B)
        self.dL = np.zeros(B)
        self.peak = np.zeros((B, n))
        self.done: list[RunResult] = []

    # ------------------------------------------------------------------------- iteration
    def __iter__(self) -> Iterator[RunResult]:
        while True:
            self._sequence()
            yield from self._drain()
            if not np.any(self.occupied):
                return
            check_interrupt()
            self._period()
            yield from self._drain()

    def _drain(self) -> Iterator[RunResult]:
        while self.done:
            yield self.done.pop(0)

    # ------------------------------------------------------------------------ run starts
    def _fill(self, k: int) -> None:
        """Start the next pending run in slot ``k`` (or leave it empty). A run whose inputs
        cannot be drawn (a scale factor drawn <= 0) is a failed run with the reason, and the
        next one takes the slot."""
        c, s = self.c, self.s
        while True:
            index = next(self.pending, None)
            if index is None:
                self.exhausted = True
                return
            try:
                inputs = c.run_inputs(index)
                break
            except ScenarioError as exc:
                self.done.append(self._undrawn(index, str(exc)))
        model = controller_model(c.model, inputs)
        noise = None
        if inputs.noisy:
            noise = _Noise(run_rng(s.seed, index, NOISE), inputs.noise, 12 + 2 * c.model.n)
        slot = _Slot(
            inputs=inputs,
            model=model,
            source=goal_source(s, inputs, c.law),
            noise=noise,
            settings=dataclasses.replace(s.reach, plan_seed=inputs.plan_seed),
            trajectory=[] if self.record else None,
        )
        self.slots[k] = slot
        self.occupied[k] = True
        self.Q[k], self.V[k], self.T[k] = inputs.q0, inputs.v0, 0.0
        self.TAU[k] = 0.0
        self.bank.reset(k)
        self.fallback[k] = bool(c.unbatched)
        if c.unbatched:
            slot.sup = ReachSupervisor(self._law(slot), slot.settings)
        self.stage[k] = _NEXT
        self.quat0[k] = inputs.q0[3:7]
        self.h0[k] = D.momentum(c.model, inputs.q0, inputs.v0)
        self.max_rate[k] = np.linalg.norm(inputs.v0[3:6])
        self.max_turn[k] = self.dP[k] = self.dL[k] = 0.0
        self.peak[k] = 0.0

    def _undrawn(self, index: int, reason: str) -> RunResult:
        """The result of run ``index`` whose inputs cannot be drawn: failed with ``reason``,
        no goal, its input columns and metrics NaN, the nominal start state."""
        model = self.c.model
        q0, v0 = D.neutral(model), np.zeros(model.nv)
        inputs = RunInputs(
            index=index,
            q0=q0,
            v0=v0,
            goal_offsets=None,
            mass_scale=np.ones(1),
            inertia_scale=np.ones(1),
            noise=np.zeros(len(NOISE_PARAMS)),
            plan_seed=0,
            columns=dict.fromkeys(self.c.inputs, float('nan')),
        )
        nan = float('nan')  # (not run: no metric, not a zero in the percentiles)
        metrics = _run_metrics(model, nan, nan, nan, nan, np.full(model.n, nan))
        metrics['peak_effort_ratio'] = nan
        return RunResult(index, inputs, [], f'inputs: {reason}', metrics, q0, v0, 0.0)

    def _law(self, slot: _Slot) -> ReactionlessController:
        """The run's own controller (its model), made when first needed."""
        if slot.law is None:
            slot.law = self.c.make_law(slot.model)
        return slot.law

    # ---------------------------------------------------------------------- sequencing
    def _status(self, k: int) -> GoalStatus:
        slot = self.slots[k]
        return slot.sup.status if self.fallback[k] else self.bank.status(k)

    def _reference(self, k: int) -> np.ndarray | None:
        if self.fallback[k]:
            return self.slots[k].sup.attitude_reference
        ref = self.bank.reference[k]
        return None if np.isnan(ref[0]) else ref.copy()

    def _sequence(self) -> None:
        """Goal sequencing of the slots whose goal ended (as :meth:`ClosedLoop.run_goal` and
        :func:`chained_goals` run goals one after the other)."""
        t, stage, bank = self.T, self.stage, self.bank
        while True:
            for k in np.flatnonzero(~self.occupied):
                if self.exhausted:
                    break
                self._fill(int(k))
            goal_over = (stage == _GOAL) & ((bank.outcome != _ACTIVE) | ~(t < self.t_end))
            settle_over = (stage == _SETTLE) & ~(
                (t < self.t_end) & ((t < self.t_settle) | (bank.phase == _RESTORING))
            )
            flagged = self.occupied & (goal_over | settle_over | (stage == _NEXT))
            for k in np.flatnonzero(flagged):
                self._advance(int(k))
            if self.exhausted or self.occupied.all():
                return

    def _advance(self, k: int) -> None:
        slot = self.slots[k]
        while True:
            if self.stage[k] == _GOAL:
                if self.bank.outcome[k] == _ACTIVE and self.T[k] < self.t_end[k]:
                    return
                slot.t_outcome = self._status(k).elapsed
                self.t_settle[k] = self.T[k] + self.s.timing.settle
                self.stage[k] = _SETTLE
            if self.stage[k] == _SETTLE:
                t = self.T[k]
                if t < self.t_end[k] and (
                    t < self.t_settle[k] or self.bank.phase[k] == _RESTORING
                ):
                    return
                self._record_goal(k)
                self.stage[k] = _NEXT
            if self.fallback[k] and not self.c.unbatched:
                sup = slot.sup
                self.bank.adopt(k, sup.attitude_reference, sup.status.goal_id)
                self.fallback[k] = False
                slot.sup = None
            try:
                goal = slot.source.next_goal(self.Q[k].copy(), self.c.law)
            except ValueError as exc:  # no goal can be drawn (e.g. out of reach): the run fails
                self._fail(k, str(exc))
                return
            if goal is None:
                self._finish(k)
                return
            if self._give_goal(k, goal):
                return

    def _give_goal(self, k: int, goal: np.ndarray) -> bool:
        """Give ``goal`` to slot ``k`` at its current state; False when the controller
        rejects it (recorded as such)."""
        slot = self.slots[k]
        q, t = self.Q[k].copy(), float(self.T[k])
        p = D.link_pose(self.c.model, q, self.s.ee_link)[0]
        slot.goal = np.asarray(goal, float).copy()
        slot.distance = float(np.linalg.norm(slot.goal - p))
        try:
            if self.fallback[k]:
                slot.sup.set_goal(t, q, slot.goal)
                self.bank.mirror(k, slot.sup.status)
            else:
                self.c.law.check_goal(q, slot.goal)
                ref, goal_id = self._reference(k), int(self.bank.goal_id[k])
                self.bank.set_goal(k, t, q, slot.goal, p)
                slot.checkpoint = self._save(k, ref, goal_id)
        except ValueError as exc:
            slot.goals.append(self._goal_dict(slot, 'rejected', str(exc), 0.0, np.nan, 0.0))
            return False
        self.t_end[k] = t + self.s.timing.run_goal_timeout
        self.stage[k] = _GOAL
        return True

    def _goal_dict(
        self,
        slot: _Slot,
        outcome: str,
        reason: str,
        time: float,
        error: float,
        max_offset: float,
        final: float = np.nan,
        **kw: int,
    ) -> dict[str, object]:
        return {
            'goal': slot.goal.tolist(),
            'distance': slot.distance,
            'outcome': outcome,
            'reason': reason,
            'time': float(time),
            'error': float(error),
            'max_offset': float(max_offset),
            'final_offset': float(final),
            'plans': int(kw.get('plans', 0)),
            'planner_steps': int(kw.get('planner_steps', 0)),
        }

    def _record_goal(self, k: int) -> None:
        """Record the goal of slot ``k``; a goal still active (cut off by
        ``timing.run_goal_timeout``) is ``aborted``, as :meth:`ClosedLoop.run_goal` records
        it (:func:`cut_off_reason`)."""
        slot = self.slots[k]
        st = self._status(k)
        outcome, reason = st.outcome.value, st.reason
        if st.outcome is GoalOutcome.ACTIVE:
            outcome = GoalOutcome.ABORTED.value
            reason = cut_off_reason(self.s.timing.run_goal_timeout, 'timing.run_goal_timeout')
        ref = self._reference(k)
        if ControlMode(self.s.mode) is ControlMode.REACTIONLESS and ref is not None:
            e = attitude_errors(self.Q[k : k + 1, 3:7], ref[None, :])
            final = float(np.linalg.norm(e[0]))
        else:
            final = st.attitude_offset
        slot.goals.append(
            self._goal_dict(
                slot,
                outcome,
                reason,
                slot.t_outcome,
                st.position_error,
                st.max_attitude_offset,
                final,
                plans=st.plans,
                planner_steps=st.planner_steps,
            )
        )

    # ----------------------------------------------------------------------- checkpoints
    def _save(self, k: int, ref: np.ndarray | None, goal_id: int) -> tuple:
        slot = self.slots[k]
        metrics = (self.max_rate[k], self.max_turn[k], self.dP[k], self.dL[k], self.peak[k].copy())
        return (
            self.Q[k].copy(),
            self.V[k].copy(),
            float(self.T[k]),
            self.TAU[k].copy(),
            None if slot.noise is None else slot.noise.save(),
            metrics,
            ref,
            goal_id,
            None if slot.trajectory is None else len(slot.trajectory),
        )

    def _to_supervisor(self, k: int) -> np.ndarray:
        """Slot ``k`` stalled where the supervisor plans: back to the start of the goal, the
        goal given to a per-run :class:`ReachSupervisor` (numbered as the run's goals so far,
        the attitude reference kept); its efforts at that start."""
        slot = self.slots[k]
        q, v, t, tau, noise, metrics, ref, goal_id, length = slot.checkpoint
        self.Q[k], self.V[k], self.T[k], self.TAU[k] = q, v, t, tau
        if noise is not None:
            slot.noise.load(noise)
        self.max_rate[k], self.max_turn[k], self.dP[k], self.dL[k], self.peak[k] = metrics
        if length is not None:
            del slot.trajectory[length:]
        sup = ReachSupervisor(self._law(slot), slot.settings)
        if ref is not None:
            sup.reset_attitude_reference(np.concatenate((q[:3], ref, q[7:])))
        for _ in range(goal_id):  # the planner's seeds follow the goal count
            sup.set_goal(t, q, slot.goal)
        sup.set_goal(t, q, slot.goal)
        slot.sup = sup
        self.fallback[k] = True
        self.t_end[k] = t + self.s.timing.run_goal_timeout
        self.stage[k] = _GOAL
        Qm, Vm = self._measure(np.array([k]))
        return self._single(k, Qm[0], Vm[0])

    # ------------------------------------------------------------------------ the period
    def _measure(self, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The measured states of the slots ``idx``: true state plus the run's noise."""
        Qm, Vm = self.Q[idx].copy(), self.V[idx].copy()
        rows = [j for j, k in enumerate(idx) if self.slots[k].noise is not None]
        if not rows:
            return Qm, Vm
        n = self.c.model.n
        Z = np.array([self.slots[idx[j]].noise.draw() for j in rows])
        S = np.array([self.slots[idx[j]].noise.stds for j in rows])
        Qm[rows, :3] += S[:, 0:1] * Z[:, 0:3]
        Qm[rows, 3:7] = turn_quaternions(Qm[rows, 3:7], S[:, 1:2] * Z[:, 3:6])
        Qm[rows, 7:] += S[:, 2:3] * Z[:, 6 : 6 + n]
        Vm[rows, :3] += S[:, 3:4] * Z[:, 6 + n : 9 + n]
        Vm[rows, 3:6] += S[:, 4:5] * Z[:, 9 + n : 12 + n]
        Vm[rows, 6:] += S[:, 5:6] * Z[:, 12 + n :]
        return Qm, Vm

    def _period(self) -> None:
        live = np.flatnonzero(self.occupied)
        Qm, Vm = self._measure(live)
        tau = np.zeros((live.size, self.c.model.n))
        fb = self.fallback[live]
        rows = np.flatnonzero(~fb)
        if rows.size:
            tau_b, ok, planning = self._batched(live[rows], Qm[rows], Vm[rows])
            tau[rows] = tau_b
            pos = {int(k): j for j, k in enumerate(live)}
            for k in planning:
                tau[pos[int(k)]] = self._guarded(int(k), self._to_supervisor, int(k))
        for j in np.flatnonzero(fb):
            k = int(live[j])
            tau[j] = self._guarded(k, self._single, k, Qm[j], Vm[j])
        for k, t_fault in self.faults.nan_state.items():
            j = np.flatnonzero(live == self._slot_of(k))
            if j.size and self.T[live[j[0]]] >= t_fault:
                tau[j[0]] = np.nan
        alive = self.occupied[live]  # a failure above emptied its slot
        live, tau = live[alive], tau[alive]
        if not live.size:
            return
        q0, v0 = self.Q[live], self.V[live]
        t0 = self.T[live].copy()
        Q, V = self._step(q0, v0, tau)
        self.Q[live], self.V[live] = Q, V
        self.T[live] += self.s.timing.control_dt
        self.TAU[live] = tau
        finite = np.isfinite(Q).all(axis=1) & np.isfinite(V).all(axis=1)
        for j in np.flatnonzero(~finite):
            k = int(live[j])
            self.Q[k], self.V[k] = q0[j], v0[j]
            self._fail(k, f'non-finite state in the control period from t = {t0[j]:.3f} s')
        good = live[finite]
        if good.size:
            self._metrics(good, tau[finite])

    def _step(
        self, q0: np.ndarray, v0: np.ndarray, tau: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """One control period of physics for the rows ``q0``, ``v0``, ``tau``; when the batched
        step raises (a kernel meeting a non-finite state), the rows are stepped one by one (as
        batches of one: the same operations) and a row that raises comes back NaN."""
        model, dt, steps = self.c.model, self.c.physics_dt, self.c.steps
        try:
            return D.step(model, q0, v0, tau, dt, steps=steps)
        except Exception as exc:  # noqa: BLE001 - find the row(s) that raise, fail them alone
            reraise_interrupt(exc)
            Q, V = np.full_like(q0, np.nan), np.full_like(v0, np.nan)
            for j in range(q0.shape[0]):
                r = slice(j, j + 1)
                try:
                    Q[r], V[r] = D.step(model, q0[r], v0[r], tau[r], dt, steps=steps)
                except Exception as exc_j:  # noqa: BLE001 - reported as a non-finite state
                    reraise_interrupt(exc_j)
            return Q, V

    def _slot_of(self, index: int) -> int:
        for k, slot in enumerate(self.slots):
            if slot is not None and slot.inputs.index == index:
                return k
        return -1

    def _inject(self, idx: np.ndarray) -> None:
        for k in idx:
            slot = self.slots[k]
            at = self.faults.law_error.get(slot.inputs.index)
            if at is not None and self.T[k] >= at:
                raise InjectedFault(f'injected law error in run {slot.inputs.index}')

    def _models(self, idx: np.ndarray) -> list[D.Model] | None:
        """The controller's model of each slot of ``idx`` (None: the law's, shared)."""
        return [self.slots[k].model for k in idx] if self.c.per_row_models else None

    def _terms(self, idx: np.ndarray, Qm: np.ndarray, Vm: np.ndarray) -> BatchTerms:
        return self.c.batched.terms(Qm, Vm, self._models(idx))

    def _update(
        self, idx: np.ndarray, Qm: np.ndarray, Vm: np.ndarray
    ) -> tuple[BatchTerms, np.ndarray, np.ndarray, np.ndarray]:
        """The batched law of the slots ``idx`` up to their efforts: ``(terms, times,
        offsets, efforts)``. The supervisors' part before the efforts
        (:meth:`SupervisorBank.begin`) gives the same state when done again with the same
        inputs, so rows can be redone after a failure of the batch."""
        law, bank = self.c.batched, self.bank
        self._inject(idx)
        terms = self._terms(idx, Qm, Vm)
        t = self.T[idx]
        offset = bank.begin(idx, t, Qm, terms.position)
        targets, refs = bank.targets(idx)
        tau = law.efforts(Qm, Vm, terms, targets, refs, self._models(idx))
        return terms, t, offset, tau

    def _batched(
        self, idx: np.ndarray, Qm: np.ndarray, Vm: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """One update of the batched slots ``idx``: ``(efforts, rows kept, slots to hand to a
        supervisor)``. When the batched law raises (the terms, the supervisors' bookkeeping
        or the efforts), each row is tried alone: a row that raises is failed with the reason,
        the others are updated again as a batch (the same operations: the same numbers)."""
        try:
            terms, t, offset, tau = self._update(idx, Qm, Vm)
        except Exception as exc:  # noqa: BLE001 - isolate the row(s) that raise, fail them alone
            reraise_interrupt(exc)
            keep = []
            for j, k in enumerate(idx):
                r = slice(j, j + 1)
                try:
                    self._update(idx[r], Qm[r], Vm[r])
                    keep.append(j)
                except Exception as exc_j:  # noqa: BLE001
                    reraise_interrupt(exc_j)
                    self._fail(int(k), f'controller error at t = {self.T[k]:.3f} s: {exc_j!r}')
            keep = np.array(keep, dtype=np.int64)
            tau = np.zeros((idx.size, self.c.model.n))
            if keep.size:
                tau[keep], _, planning = self._batched(idx[keep], Qm[keep], Vm[keep])
                return tau, keep, planning
            return tau, keep, np.zeros(0, dtype=np.int64)
        planning = self.bank.finish(idx, t, terms.position, offset)
        if self.record:
            for j, k in enumerate(idx):
                self._trace(int(k), terms.position[j], tau[j])
        return tau, np.arange(idx.size), planning

    def _single(self, k: int, qm: np.ndarray, vm: np.ndarray) -> np.ndarray:
        """One update of slot ``k`` by its own supervisor."""
        slot = self.slots[k]
        self._inject(np.array([k]))
        out, status = slot.sup.update(float(self.T[k]), qm, vm)
        self.bank.mirror(k, status)
        if self.record:
            self._trace(k, out.ee_position, out.tau)
        return out.tau

    def _guarded(self, k: int, fn: Callable[..., np.ndarray], *args: object) -> np.ndarray:
        try:
            return fn(*args)
        except Exception as exc:  # noqa: BLE001 - a failing run ends alone, with its reason
            reraise_interrupt(exc)
            self._fail(k, f'controller error at t = {self.T[k]:.3f} s: {exc!r}')
            return np.zeros(self.c.model.n)

    def _trace(self, k: int, p: np.ndarray, tau: np.ndarray) -> None:
        slot = self.slots[k]
        goal = np.full(3, np.nan) if slot.goal is None else slot.goal
        slot.trajectory.append(
            (float(self.T[k]), self.Q[k].copy(), self.V[k].copy(), tau.copy(), p.copy(), goal)
        )

    def _metrics(self, idx: np.ndarray, tau: np.ndarray) -> None:
        Q, V = self.Q[idx], self.V[idx]
        self.max_rate[idx] = np.maximum(self.max_rate[idx], np.linalg.norm(V[:, 3:6], axis=1))
        turn = np.linalg.norm(attitude_errors(Q[:, 3:7], self.quat0[idx]), axis=1)
        self.max_turn[idx] = np.maximum(self.max_turn[idx], turn)
        h = D.momentum(self.c.model, Q, V) - self.h0[idx]
        self.dP[idx] = np.maximum(self.dP[idx], np.linalg.norm(h[:, :3], axis=1))
        self.dL[idx] = np.maximum(self.dL[idx], np.linalg.norm(h[:, 3:], axis=1))
        self.peak[idx] = np.maximum(self.peak[idx], np.abs(tau))

    # -------------------------------------------------------------------------- run ends
    def _fail(self, k: int, reason: str) -> None:
        slot = self.slots[k]
        if slot is None or slot.failure:
            return
        slot.failure = reason
        if self.stage[k] in (_GOAL, _SETTLE):
            st = self._status(k)
            slot.goals.append(
                self._goal_dict(
                    slot, 'failed', reason, st.elapsed, st.position_error, st.max_attitude_offset
                )
            )
        self._finish(k)

    def _finish(self, k: int) -> None:
        slot = self.slots[k]
        model = self.c.model
        metrics = _run_metrics(
            model, self.max_turn[k], self.max_rate[k], self.dP[k], self.dL[k], self.peak[k]
        )
        trajectory = None
        if slot.trajectory is not None:
            trajectory = {
                'time': np.array([r[0] for r in slot.trajectory]),
                'q': np.array([r[1] for r in slot.trajectory]).reshape(-1, model.nq),
                'v': np.array([r[2] for r in slot.trajectory]).reshape(-1, model.nv),
                'effort': np.array([r[3] for r in slot.trajectory]).reshape(-1, model.n),
                'ee': np.array([r[4] for r in slot.trajectory]).reshape(-1, 3),
                'goal': np.array([r[5] for r in slot.trajectory]).reshape(-1, 3),
            }
        self.done.append(
            RunResult(
                index=slot.inputs.index,
                inputs=slot.inputs,
                goals=slot.goals,
                failure=slot.failure,
                metrics=metrics,
                q=self.Q[k].copy(),
                v=self.V[k].copy(),
                t=float(self.T[k]),
                trajectory=trajectory,
            )
        )
        self.occupied[k] = False
        self.fallback[k] = False
        self.slots[k] = None


def outcome_counts(results: Iterable[RunResult]) -> dict[str, int]:
    """Goals per outcome over ``results`` (a quick tally).

    Parameters
    ----------
    results : iterable of RunResult

    Returns
    -------
    dict of str to int
    """
    out: dict[str, int] = {o.value: 0 for o in GoalOutcome}
    out.update(rejected=0, failed=0)
    for r in results:
        for g in r.goals:
            out[g['outcome']] = out.get(g['outcome'], 0) + 1
    return out
