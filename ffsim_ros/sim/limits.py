"""Joint limits as a real arm enforces them: drives with a torque-speed characteristic, hard
stops (no ROS).

Speed limits (on by default): a joint with a speed limit ``w_max`` (> 0, finite) and a drive
(effort limit ``T_max`` > 0) is driven as by an electric motor, whose back-EMF leaves less
torque the faster it turns:

* the torque-speed characteristic: in the direction of motion (``tau w > 0``) the effort the
  drive can apply is ``T_max (1 - |w| / w_max)``, falling linearly to zero at the speed limit
  (``T_max`` up to it when the effort limit is unset); braking (``tau w <= 0``) is always
  possible up to ``T_max``. The command, already clipped to ``T_max``, is clipped to this at
  the start of every physics step and held over it (a zero-order hold, as a drive's current
  loop holds its set point between two updates of the controller);
* the speed limit itself: a drive reaches its speed limit within a fraction of a physics step
  when one step of full effort would carry the joint past it (the servicer's wrist: 0.15 ms at
  80 N m), which the held characteristic alone cannot resolve (it would overshoot and
  oscillate). So after a step a joint faster than ``w_max`` is brought back to ``w_max`` by
  the drive's braking impulse, at most ``T_max dt`` (what the drive can brake with over the
  step): a joint torque impulse ``lambda`` on the joints concerned, ``dv = H^-1 S^T lambda``,
  solved on them together (the arm is coupled). A joint torque acts equally and oppositely on
  the two bodies it joins, so the total momentum does not change; the impulse removes kinetic
  energy (it opposes the motion). ``joint_states.effort`` shows the mean effort of the drive
  over the step, braking included.

A joint without drive (effort limit 0: a passive joint) or without a known speed limit
(``velocity="0"`` or unset, as published URDFs write an unknown value) is not speed-limited.

Position limits (an option): beyond ``lower``/``upper`` a joint meets a hard stop, a
critically damped spring-damper acting between the two bodies (a joint torque: momentum is
kept), one-sided (it pushes the joint back, never pulls it into the stop), whose stiffness
comes from the joint's effective inertia ``m = 1 / (H^-1)_jj`` at the current configuration
so that its natural period is :data:`STOP_PERIOD_STEPS` physics steps, stiff and still stable
under the zero-order hold at any step size. A joint hitting its stop at ``w`` sinks in by about
``w / (e omega)`` (``omega = 2 pi / (20 dt)``: 0.6 mrad at 0.5 rad/s and 1 kHz) and comes back
out at a fraction of that speed. The stop is structural, not the drive's: its torque is not
in ``joint_states.effort``.
"""

from __future__ import annotations

import math

import numpy as np

import ffsim_ros.dynamics as D
from ffsim_ros.dynamics.inputs import as_bool

#: Natural period of a hard stop in physics steps (see the module docstring).
STOP_PERIOD_STEPS = 20
#: Relative excess of speed over its limit that the braking impulse removes.
SPEED_TOLERANCE = 1e-9

#: Block changes of the braking's active set tried without lowering the count of joints in
#: the wrong state before single changes (:func:`_braking_impulses`).
BLOCK_TRIES = 3

#: Round-off allowed in the braking active set's tests, relative to the quantities compared.
RELATIVE_SLACK = 1e-9

#: Active-set iterations allowed per driven joint before the coordinate-descent fallback.
MAX_PIVOTS_PER_JOINT = 10

#: A driven joint faster after a step (its drive's braking included) than this many times both
#: its speed limit and its speed at the step's start marks the step as a runaway, a fault
#: (:meth:`JointLimits.runaway`). The braking impulse, up to ``T_max dt``, takes back what the
#: drive's own effort added over the step; what is left over the limit comes from the other
#: joints through the coupling, and a step too long for that coupling's motion leaves the joint
#: orders of magnitude over. Measured on the servicer from rest at rated effort: at most 15.6
#: times after a sound step (10 % of rated at 0.2 s, all of rated at 0.05 s: the next steps
#: settle at the limits), 337 times and more (to 4e15) after steps of 0.1 to 1 s, which the next
#: step turned into a diverging state (1e10 times). A joint back-driven from rest (a weak drive
#: on a strong one's link) passes it after a sound step: the engine confirms a trip by the
#: step taken as two halves (:data:`.runaway.HALVES_AGREEMENT`).
RUNAWAY_FACTOR = 100.0


class JointLimits:
    """The joint limits an :class:`~ffsim_ros.sim.Engine` enforces (module docstring).

    Parameters
    ----------
    model : Model
        Floating-base model; its limits per joint DoF (``velocity_limit``, ``effort_limit``,
        ``lower``, ``upper``).
    velocity : bool
        Enforce the speed limits (drives with a torque-speed characteristic).
    position : bool
        Enforce the position limits (hard stops).

    Raises
    ------
    TypeError
        ``velocity`` or ``position`` not a bool (a string such as ``'off'`` would be true).
    """

    def __init__(self, model: D.Model, *, velocity: bool = True, position: bool = False) -> None:
        self.model = model
        self.velocity, self.position = as_bool(velocity, 'velocity'), as_bool(position, 'position')
        n = model.n
        speed = np.asarray(model.velocity_limit, dtype=float)
        effort = np.asarray(model.effort_limit, dtype=float)
        self.speed_limit = speed
        self.effort_limit = effort
        self.lower = np.asarray(model.lower, dtype=float)
        self.upper = np.asarray(model.upper, dtype=float)
        # q index of each joint DoF (-1: a spherical joint's DoF, which has no position limits)
        self._q_index = np.full(n, -1)
        for k, kind in enumerate(model.joint_types):
            first = model.idx_v[k] - 6
            if kind != 'spherical':
                for i in range(model.nvs[k]):
                    self._q_index[first + i] = model.idx_q[k] + i
        driven = np.isfinite(speed) & (speed > 0.0) & (effort > 0.0)
        self.driven = driven if self.velocity else np.zeros(n, dtype=bool)
        bounded = (np.isfinite(self.lower) | np.isfinite(self.upper)) & (self._q_index >= 0)
        self.bounded = bounded if self.position else np.zeros(n, dtype=bool)
        # for threshold(): w_max (inf where not driven) and 1 / T_max (0 without a limit)
        self._w_max = np.where(self.driven, speed, np.inf)
        self._runaway_speed = RUNAWAY_FACTOR * self._w_max
        self._inverse_effort = np.zeros(n)
        finite = self.driven & np.isfinite(effort)
        self._inverse_effort[finite] = 1.0 / effort[finite]
        self._any_driven, self._any_bounded = bool(self.driven.any()), bool(self.bounded.any())

    @property
    def active(self) -> bool:
        """Whether any limit is enforced on this model."""
        return self._any_driven or self._any_bounded

    def joint_positions(self, q: np.ndarray) -> np.ndarray:
        """Positions (n,) of the joint DoFs with a position coordinate (0 for the others).

        Parameters
        ----------
        q : (nq,) configuration ``[r0, Q0, phi]``, base in the inertial frame [m, -, rad | m].

        Returns
        -------
        (n,) ndarray
            Joint positions [rad | m] (0 for a spherical joint's DoFs).
        """
        return np.where(self._q_index >= 0, q[np.maximum(self._q_index, 0)], 0.0)

    # ----------------------------------------------------------------------- the drives
    def drive_efforts(self, tau: np.ndarray, speed: np.ndarray) -> np.ndarray:
        """The efforts (n,) the drives apply for the command ``tau`` (n,) (already within the
        effort limits) at joint speeds ``speed`` (n,): the torque-speed characteristic.

        Parameters
        ----------
        tau : (n,) commanded joint efforts [N m | N].
        speed : (n,) joint speeds [rad/s | m/s].

        Returns
        -------
        (n,) ndarray
            Joint efforts [N m | N].
        """
        motoring = self.driven & (tau * speed > 0.0)
        if not motoring.any():
            return tau
        out = tau.copy()
        j = np.flatnonzero(motoring)
        ratio = np.clip(1.0 - np.abs(speed[j]) / self.speed_limit[j], 0.0, 1.0)
        limit = self.effort_limit[j]
        finite = np.isfinite(limit)
        cap = np.where(ratio > 0.0, np.inf, 0.0)  # no effort limit: all of it below the limit
        cap[finite] = limit[finite] * ratio[finite]
        out[j] = np.sign(tau[j]) * np.minimum(np.abs(tau[j]), cap)
        return out

    def threshold(self, tau: np.ndarray) -> np.ndarray:
        """Per joint DoF (n,), the speed below which the characteristic leaves ``tau`` as it
        is whatever the direction of motion, and no braking is needed (inf: not driven).

        Parameters
        ----------
        tau : (n,) joint efforts [N m | N].

        Returns
        -------
        (n,) ndarray
            Joint speeds [rad/s | m/s].
        """
        return self._w_max * (1.0 - np.abs(tau) * self._inverse_effort)

    def brake(self, q: np.ndarray, v: np.ndarray, dt: float) -> tuple[np.ndarray, np.ndarray]:
        """``v`` after the drives' braking impulses bring every driven joint faster than its
        limit back to it, and those impulses (n,) [N m s] (at most ``effort_limit dt`` each).

        The impulses ``lambda`` on the driven joints ``J`` (``dv = H^-1 S_J^T lambda``) are the
        minimum of the convex ``1/2 lambda^T W lambda + lambda^T w + sum_j w_max,j |lambda_j|``
        over ``|lambda_j| <= T_max,j dt`` (``W = (H^-1)_JJ``, ``w`` the joint speeds): its
        optimality conditions are the drives' -- a joint braked (``lambda_j != 0``) ends at
        its limit with the impulse opposing its motion, a joint not braked ends within its
        limit, a drive at its bound leaves its joint over the limit, slower. Solved by
        :func:`_braking_impulses` (an active-set method, exact in a few iterations).

        Parameters
        ----------
        q : (nq,) configuration ``[r0, Q0, phi]``, base in the inertial frame [m, -, rad | m].
        v : (nv,) velocity ``[V0, w0, phidot]``, base parts in the inertial frame
            [m/s, rad/s, rad/s | m/s].
        dt : float
            Physics step [s].

        Returns
        -------
        v : (nv,) ndarray
            The velocity after braking (same conventions).
        impulse : (n,) ndarray
            Joint impulses [N m s | N s].
        """
        impulse = np.zeros(self.model.n)
        if not self._over(v).any():
            return v, impulse
        H_inv = np.linalg.inv(D.mass_matrix(self.model, q))  # nv x nv, symmetric
        J = 6 + np.flatnonzero(self.driven)
        X = H_inv[:, J]  # H^-1 S^T of the driven joints
        lam = _braking_impulses(X[J], v[J], self.speed_limit[J - 6], self.effort_limit[J - 6] * dt)
        impulse[J - 6] = lam
        return v + X @ lam, impulse

    def runaway(self, before: np.ndarray, after: np.ndarray) -> int:
        """The driven joint DoF (index in ``phi``'s rates) that a step took beyond
        :data:`RUNAWAY_FACTOR` times both its speed limit and its speed at the step's start --
        the one furthest over its limit -- or -1 when none is.

        Parameters
        ----------
        before, after : (n,) joint speeds at the step's start and after it, braking included
            [rad/s | m/s].

        Returns
        -------
        int
        """
        if not self._any_driven:
            return -1
        fast = np.abs(after) > self._runaway_speed  # (inf where not driven: 1 us)
        if not fast.any():
            return -1
        fast &= np.abs(after) > RUNAWAY_FACTOR * np.abs(before)
        if not fast.any():
            return -1
        return int(np.argmax(np.where(fast, np.abs(after) / self._w_max, 0.0)))

    def runaway_joints(self, before: np.ndarray, after: np.ndarray) -> np.ndarray:
        """The driven joint DoFs (n,) bool that a step took beyond :data:`RUNAWAY_FACTOR`
        times both their speed limit and their speed at the step's start (:meth:`runaway`).

        Parameters
        ----------
        before, after : (n,) joint speeds at the step's start and after it, braking included
            [rad/s | m/s].

        Returns
        -------
        (n,) ndarray of bool
        """
        speed = np.abs(after)
        return (speed > self._runaway_speed) & (speed > RUNAWAY_FACTOR * np.abs(before))

    def _over(self, v: np.ndarray) -> np.ndarray:
        return self.driven & (np.abs(v[6:]) > self.speed_limit * (1.0 + SPEED_TOLERANCE))

    # ------------------------------------------------------------------------ the stops
    def stop_efforts(self, q: np.ndarray, v: np.ndarray, dt: float) -> np.ndarray | None:
        """Hard-stop torques (n,) of the joints beyond a position limit (None: none is).

        Parameters
        ----------
        q : (nq,) configuration ``[r0, Q0, phi]``, base in the inertial frame [m, -, rad | m].
        v : (nv,) velocity ``[V0, w0, phidot]``, base parts in the inertial frame
            [m/s, rad/s, rad/s | m/s].
        dt : float
            Physics step [s] (sets the stops' stiffness).

        Returns
        -------
        (n,) ndarray or None
            Joint efforts [N m | N].
        """
        if not self.bounded.any():
            return None
        pos = self.joint_positions(q)
        above = self.bounded & (pos > self.upper)
        below = self.bounded & (pos < self.lower)
        if not (above.any() or below.any()):
            return None
        H = D.mass_matrix(self.model, q)
        out = np.zeros(self.model.n)
        omega = 2.0 * math.pi / (STOP_PERIOD_STEPS * dt)
        for j in np.flatnonzero(above | below):
            e = np.zeros(self.model.nv)
            e[6 + j] = 1.0
            mass = 1.0 / np.linalg.solve(H, e)[6 + j]  # effective inertia of the joint
            k, c = mass * omega * omega, 2.0 * mass * omega
            w = v[6 + j]
            if above[j]:
                out[j] = min(0.0, -k * (pos[j] - self.upper[j]) - c * w)
            else:
                out[j] = max(0.0, k * (self.lower[j] - pos[j]) - c * w)
        return out

    # ------------------------------------------------------------------------- batches
    def quiet(
        self,
        tau: np.ndarray,
        q: np.ndarray,
        v: np.ndarray,
        a: np.ndarray | None = None,
        span: float = 0.0,
    ) -> bool:
        """Whether no limit acts at ``(q, v)`` under ``tau``, with a margin for the motion
        over the next ``span`` seconds at the accelerations ``a`` (nv,) (twice what they
        would carry the joints): then steps under ``tau`` can be integrated in one call.

        Parameters
        ----------
        tau : (n,) joint efforts [N m | N].
        q : (nq,) configuration ``[r0, Q0, phi]``, base in the inertial frame [m, -, rad | m].
        v : (nv,) velocity ``[V0, w0, phidot]``, base parts in the inertial frame
            [m/s, rad/s, rad/s | m/s].
        a : (nv,) ndarray, optional
            Accelerations ``[dV0, dw0, phiddot]`` (only the joint part is used)
            [m/s^2, rad/s^2, rad/s^2 | m/s^2].
        span : float
            [s].

        Returns
        -------
        bool
        """
        rate = np.abs(v[6:])
        change = 0.0 if a is None else 2.0 * span * np.abs(a[6:])
        if self._any_driven and (rate + change >= self.threshold(tau)).any():
            return False
        if self._any_bounded:
            pos = self.joint_positions(q)
            reach = 0.0 if a is None else 2.0 * (rate * span + np.abs(a[6:]) * span**2)
            b = self.bounded
            if ((pos - reach)[b] <= self.lower[b]).any() or (
                (pos + reach)[b] >= self.upper[b]
            ).any():
                return False
        return True

    def quiet_prefix(self, tau: np.ndarray, Q: np.ndarray, V: np.ndarray) -> int:
        """How many leading steps of a trajectory under ``tau`` no limit acts on: the largest
        ``j`` such that the states ``1..j`` are finite and :meth:`quiet` (no margin). With its
        start quiet too, each of those steps is the one a step at a time takes: the drives
        leave ``tau`` as it is at its start and have nothing to brake at its end, and no stop
        acts.

        Parameters
        ----------
        tau : (n,) joint efforts held over the steps [N m | N].
        Q : (k + 1, nq) ;  V : (k + 1, nv) the states, row 0 the start (units as :meth:`quiet`).

        Returns
        -------
        int
            In ``0..k``.
        """
        k = Q.shape[0] - 1
        ok = np.ones(k, dtype=bool)
        if not math.isfinite(Q.sum() + V.sum()):  # (a finite sum: every value finite)
            ok = np.isfinite(Q[1:]).all(axis=1) & np.isfinite(V[1:]).all(axis=1)
        if self._any_driven:
            ok &= (np.abs(V[1:, 6:]) < self.threshold(tau)).all(axis=1)
        if self._any_bounded:
            b = self.bounded
            pos = Q[1:, self._q_index[b]]
            ok &= ((pos > self.lower[b]) & (pos < self.upper[b])).all(axis=1)
        return k if ok.all() else int(np.argmin(ok))


def braking_active_set(
    W: np.ndarray, w: np.ndarray, w_max: np.ndarray, cap: np.ndarray
) -> tuple[np.ndarray, bool]:
    """The braking impulses ``lambda`` (k,) [N m s] of :meth:`JointLimits.brake` by an active
    set, and whether it settled (the conditions below all met).

    ``lambda`` minimizes ``1/2 l^T W l + l^T w + sum w_max |l|`` over ``|l| <= cap``: ``W``
    (k, k) the driven joints' block of ``H^-1`` (symmetric positive definite), ``w`` (k,) their
    speeds [rad/s | m/s], ``w_max`` (k,) their limits, ``cap`` (k,) the drives' largest
    impulses ``T_max dt``. Each joint is free (``lambda = 0``), held at its limit on one side
    (``lambda`` solved so that ``w + W lambda = +-w_max``), or at its bound (``lambda =
    -+cap``). Starting from "held" for the joints over their limit, the joints that break their
    conditions (a held joint needing the wrong sign -- free, whatever its size -- or more than
    its bound; a free joint over its limit; a bounded joint back within it) change state and
    the held ones are solved again: all of them at once while that lowers the number of joints
    in the wrong state (block principal pivoting, Judice & Pires), else, after
    :data:`BLOCK_TRIES` more tries, only the last of them (Murty's single-pivot rule). At most
    :data:`MAX_PIVOTS_PER_JOINT` ``k + 3`` iterations. A held joint needing the wrong sign and
    more than its bound used to be sent to its bound: on a 120-joint chain with 43 joints over
    their limits the set then cycled, and the coordinate descent after it took 0.44 s per
    1 ms step (now 5 iterations, about 1 ms).

    Parameters
    ----------
    W : (k, k) ndarray
        ``(H^-1)_JJ`` of the driven joints (joint space) [1/(kg m^2) | 1/kg].
    w : (k,) joint speeds [rad/s | m/s].
    w_max : (k,) joint speed limits [rad/s | m/s].
    cap : (k,) largest impulses ``T_max dt`` per driven joint [N m s | N s].

    Returns
    -------
    lam : (k,) ndarray
        Joint impulses [N m s | N s].
    settled : bool
    """
    k = w.size
    state = np.where(w > w_max, 1, np.where(w < -w_max, -1, 0))  # +-1 held, +-2 bound, 0 free
    lam = np.zeros(k)
    fewest, tries = k + 1, BLOCK_TRIES
    for _ in range(MAX_PIVOTS_PER_JOINT * k + 3):
        held, bound = np.abs(state) == 1, np.abs(state) == 2
        lam[:] = 0.0
        lam[bound] = -np.sign(state[bound]) * cap[bound]
        if held.any():
            rhs = np.sign(state[held]) * w_max[held] - w[held] - W[held][:, bound] @ lam[bound]
            lam[held] = np.linalg.solve(W[held][:, held], rhs)
        after = w + W @ lam
        new = state.copy()
        # the tests allow round-off (RELATIVE_SLACK): on an ill-conditioned W (cond 1e4-1e5)
        # a joint at a switching point flipped back and forth, and the set did not settle
        opposing = -np.sign(state) * lam  # > 0 when a held joint's impulse opposes its motion
        slack = RELATIVE_SLACK * (np.abs(lam) + cap)
        wrong_sign = held & (opposing < -slack)  # (before its bound: a joint the wrong sign
        new[wrong_sign] = 0  # would push on is free, not bound)
        beyond = held & ~wrong_sign & (np.abs(lam) > cap + slack)
        new[beyond] = 2 * state[beyond]
        free = state == 0
        new[free & (after > w_max * (1 + RELATIVE_SLACK))] = 1
        new[free & (after < -w_max * (1 + RELATIVE_SLACK))] = -1
        back = bound & (np.sign(state) * after < w_max * (1 - RELATIVE_SLACK))
        new[back] = np.sign(state[back])
        # braked past the other limit (the coupling's doing): its impulse now pushes it on,
        # free (it cycled between bound and held on the side it no longer moves to)
        new[bound & (np.sign(state) * after < -w_max * (1 + RELATIVE_SLACK))] = 0
        wrong = np.flatnonzero(new != state)
        if wrong.size == 0:
            return lam, True
        if wrong.size < fewest:
            fewest, tries = wrong.size, BLOCK_TRIES
            state = new
        elif tries > 0:
            tries -= 1
            state = new
        else:
            state[wrong[-1]] = new[wrong[-1]]
    return lam, False


def _braking_impulses(
    W: np.ndarray, w: np.ndarray, w_max: np.ndarray, cap: np.ndarray
) -> np.ndarray:
    """``lambda`` (k,) minimizing ``1/2 l^T W l + l^T w + sum w_max |l|`` over ``|l| <= cap``
    (``W`` (k, k) symmetric positive definite; see :meth:`JointLimits.brake`): by
    :func:`braking_active_set`, else (not settled) a few coordinate-descent sweeps from its
    last iterate (exact per joint: a soft threshold)."""
    lam, settled = braking_active_set(W, w, w_max, cap)
    if settled:
        return lam
    k = w.size
    for _ in range(200):  # coordinate descent from the last iterate
        change = 0.0
        for j in range(k):
            rest = w[j] + W[j] @ lam - W[j, j] * lam[j]
            value = -np.sign(rest) * max(abs(rest) - w_max[j], 0.0) / W[j, j]
            value = float(np.clip(value, -cap[j], cap[j]))
            change = max(change, abs(value - lam[j]))
            lam[j] = value
        if change <= 1e-15 * (1.0 + np.abs(lam).max()):
            break
    return lam
