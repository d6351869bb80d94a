"""The law of :meth:`ReactionlessController.compute` for a batch of states (no ROS).

One update of ``B`` states with stacked NumPy linear algebra (``np.linalg`` and ``@`` over a
leading batch axis) on the batched dynamics: the mass matrices and bias forces of
:func:`ffsim_ros.dynamics.mass_matrix` / :func:`~ffsim_ros.dynamics.bias_forces` and the link
poses and Jacobians of :func:`~ffsim_ros.dynamics.link_pose_and_jacobian` with leading batch
dimensions. Each row goes through the same operations, in the same order, as the single-state
law (:mod:`~ffsim_ros.control.reactionless` and :mod:`~ffsim_ros.control.rns`), so a row agrees
with :meth:`ReactionlessController.compute` to round-off (~1e-15 relative), and a row's result
does not depend on the other rows of the batch (a run computed alone gives the same bits as
inside a batch).

Covered: the ``reactionless`` law (attitude first, end effector in the reaction null space) and
``gjm_tracking`` (damped least squares on J*), a position task, toward a target or braking
(no goal), with the rate feedforward (``Gains.rate_feedforward``). Not covered --
:func:`batch_supported` says why: ``joint_pd`` (fixed-base inverse kinematics per goal),
orientation tracking, the self-motion (``Gains.k_null`` > 0) and the attitude budget of the
supervisor's recovery phases; those run through the single-state
:class:`~ffsim_ros.control.supervisor.ReachSupervisor`.

The controller's model may differ per row (a model with mass and inertia errors per run, the
geometry the same): the mass matrices and bias forces are then evaluated row by row with each
row's model, everything else stays stacked.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

import ffsim_ros.dynamics as D
from ffsim_ros.dynamics.jit import njit
from ffsim_ros.dynamics.lie import qconj, qexp, qlog, qmul, qnormalize

from .modes import ControlMode
from .reactionless import FEEDFORWARD_STEP, ReactionlessController
from .rns import (
    RANK_TOL,
    TaskTerms,
    capped_to_limits,
    near_limits,
    reactionless_rates,
    speed_limits,
)


class BatchTerms(NamedTuple):
    """The free-floating terms of ``B`` states (inertial frame, SI units)."""

    position: np.ndarray  #: (B, 3) end-effector position [m]
    H: np.ndarray  #: (B, nv, nv) generalized inertia
    B: np.ndarray  #: (B, 6, n) ``H0^-1 H0m`` (B states; not the control map B(q) of [S0 eq. 41])
    J_star: np.ndarray  #: (B, 6, n) generalized Jacobian
    H_star: np.ndarray  #: (B, n, n) generalized inertia of the joints
    c_star: np.ndarray  #: (B, n) bias of the joints
    ee_drift: np.ndarray  #: (B, 6) end-effector twist with the joints locked [m/s, rad/s]
    locked_rate: np.ndarray  #: (B, 3) base angular velocity with the joints locked [rad/s]


@njit
def _attitude_errors(quats: np.ndarray, refs: np.ndarray) -> np.ndarray:
    """Rows of :func:`~ffsim_ros.control.rns.attitude_error`: (B, 4), (B, 4) -> (B, 3)."""
    out = np.empty((quats.shape[0], 3))
    for k in range(quats.shape[0]):
        a = (refs[k, 0], refs[k, 1], refs[k, 2], refs[k, 3])
        b = qconj((quats[k, 0], quats[k, 1], quats[k, 2], quats[k, 3]))
        x, y, z, w = qnormalize(qmul(a, b))
        out[k, 0], out[k, 1], out[k, 2] = qlog(x, y, z, w)
    return out


@njit
def _turned(quats: np.ndarray, rotvecs: np.ndarray) -> np.ndarray:
    """Rows ``exp(r) * Q`` (B, 4): each base quaternion turned by an inertial-frame rotation
    vector [rad] (how the base turns, [S0 eq. 22])."""
    out = np.empty_like(quats)
    for k in range(quats.shape[0]):
        d = qexp(rotvecs[k, 0], rotvecs[k, 1], rotvecs[k, 2])
        x, y, z, w = qnormalize(qmul(d, (quats[k, 0], quats[k, 1], quats[k, 2], quats[k, 3])))
        out[k, 0], out[k, 1], out[k, 2], out[k, 3] = x, y, z, w
    return out


def attitude_errors(quaternions: np.ndarray, references: np.ndarray) -> np.ndarray:
    """Rotation vectors (B, 3) [rad], inertial frame, turning each base quaternion (B, 4) into
    its reference (B, 4): the rows of :func:`~ffsim_ros.control.rns.attitude_error`.

    Parameters
    ----------
    quaternions, references : (B, 4) ndarray
        Base attitudes and their references, unit quaternions (x, y, z, w) in the inertial
        frame [-].

    Returns
    -------
    (B, 3) ndarray
        ``log(reference quaternion^-1)`` per row [rad], inertial frame.
    """
    q = np.ascontiguousarray(quaternions, dtype=float)
    r = np.ascontiguousarray(references, dtype=float)
    if q.shape != r.shape or q.ndim != 2 or q.shape[1] != 4:
        raise ValueError(f'attitude_errors: expected two (B, 4) arrays, got {q.shape}, {r.shape}')
    return _attitude_errors(q, r)


def turn_quaternions(quaternions: np.ndarray, rotvecs: np.ndarray) -> np.ndarray:
    """Unit quaternions (B, 4) ``exp(r) Q`` of base quaternions (B, 4) turned by inertial-frame
    rotation vectors (B, 3) [rad] (e.g. an attitude measurement error).

    Parameters
    ----------
    quaternions : (B, 4) ndarray
        Base attitudes, quaternions (x, y, z, w) in the inertial frame [-].
    rotvecs : (B, 3) ndarray
        Rotation vectors applied on the left, inertial frame [rad].

    Returns
    -------
    (B, 4) ndarray
        Unit quaternions (x, y, z, w) [-].
    """
    q = np.ascontiguousarray(quaternions, dtype=float)
    r = np.ascontiguousarray(rotvecs, dtype=float)
    if q.ndim != 2 or q.shape[1] != 4 or r.shape != (q.shape[0], 3):
        raise ValueError(f'turn_quaternions: expected (B, 4) and (B, 3), got {q.shape}, {r.shape}')
    return _turned(q, r)


def _solve(A: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.linalg.solve(A, b)


def _tr(x: np.ndarray) -> np.ndarray:
    return np.swapaxes(x, -1, -2)


def _mv(A: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Stacked matrix-vector products (B, m, n) @ (B, n) -> (B, m)."""
    return (A @ x[:, :, None])[:, :, 0]


def _norms(x: np.ndarray) -> np.ndarray:
    return np.sqrt(np.einsum('ij,ij->i', x, x))


def _mass_matrices(
    models: D.Model | Sequence[D.Model], Q: np.ndarray
) -> tuple[D.Model, np.ndarray]:
    """The model whose geometry serves the kinematics, and the mass matrices (B, nv, nv) of
    ``Q`` (B, nq) with the model, or with each row's."""
    if isinstance(models, D.Model):
        return models, D.mass_matrix(models, Q)
    if len(models) != Q.shape[0]:
        raise ValueError(f'models: expected {Q.shape[0]} (one per row), got {len(models)}')
    return models[0], np.stack([D.mass_matrix(m, Q[k]) for k, m in enumerate(models)])


def batch_terms(
    models: D.Model | Sequence[D.Model], Q: np.ndarray, V: np.ndarray, link: str
) -> BatchTerms:
    """The free-floating terms of :func:`ffsim_ros.dynamics.free_floating_terms` for ``B``
    states ``Q`` (B, nq), ``V`` (B, nv), with the Jacobians of ``link``.

    Parameters
    ----------
    models : Model, or one Model per row (the same geometry, e.g. different masses): the
        model(s) the terms are computed with.
    Q : (B, nq) ndarray
        Configurations ``[r0, Q0 (x, y, z, w), phi]``, one per row: base CoM [m] and attitude
        [-] in the inertial frame, joint coordinates [rad | m].
    V : (B, nv) ndarray
        Velocities ``[V0, w0, phidot]``, one per row: base CoM velocity [m/s] and angular
        velocity [rad/s] in the inertial frame, joint rates [rad/s | m/s].
    link : str
        End-effector link (its frame origin is the point of ``J_star`` and ``position``).

    Returns
    -------
    BatchTerms
    """
    Q = np.ascontiguousarray(Q, dtype=float)
    V = np.ascontiguousarray(V, dtype=float)
    model, H = _mass_matrices(models, Q)
    if isinstance(models, D.Model):
        c = D.bias_forces(model, Q, V)
    else:
        c = np.stack([D.bias_forces(m, Q[k], V[k]) for k, m in enumerate(models)])
    p, _, J = D.link_pose_and_jacobian(model, Q, link)
    n = model.n
    H0m = H[:, :6, 6:]
    X = _solve(H[:, :6, :6], np.concatenate((H0m, c[:, :6, None]), axis=2))
    Bm = X[:, :, :n]
    H0mT = _tr(H0m)
    drift = _solve(H[:, :6, :6], _mv(H[:, :6], V)[:, :, None])[:, :, 0]  # (rns.momentum_drift)
    return BatchTerms(
        position=p,
        H=H,
        B=Bm,
        J_star=J[:, :, 6:] - J[:, :, :6] @ Bm,
        H_star=H[:, 6:, 6:] - H0mT @ Bm,
        c_star=c[:, 6:] - (H0mT @ X[:, :, n:])[:, :, 0],
        ee_drift=_mv(J[:, :, :6], drift),
        locked_rate=drift[:, 3:],
    )


def batch_task_terms(
    models: D.Model | Sequence[D.Model], Q: np.ndarray, link: str
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The end-effector terms of :func:`~.rns.task_terms` for ``B`` configurations ``Q``
    (B, nq): inertias and Jacobians only, no bias forces.

    Parameters
    ----------
    models : Model, or one Model per row (the same geometry).
    Q : (B, nq) ndarray
        Configurations ``[r0, Q0 (x, y, z, w), phi]``, one per row: base CoM [m] and attitude
        [-] in the inertial frame, joint coordinates [rad | m].
    link : str
        End-effector link.

    Returns
    -------
    position : (B, 3) end-effector position (link frame origin), inertial frame [m].
    J_star : (B, 6, n) generalized Jacobian, rows ``[v; w]``, inertial frame
        [m/s, rad/s per rad/s | m/s].
    Bm : (B, 6, n) ``H0^-1 H0m``, inertial frame [m/s, rad/s per rad/s | m/s].
    """
    Q = np.ascontiguousarray(Q, dtype=float)
    model, H = _mass_matrices(models, Q)
    p, _, J = D.link_pose_and_jacobian(model, Q, link)
    Bm = _solve(H[:, :6, :6], H[:, :6, 6:])
    return p, J[:, :, 6:] - J[:, :, :6] @ Bm, Bm


def batch_supported(law: ReactionlessController) -> str:
    """Why ``law`` cannot be batched ('' when it can; see the module docstring).

    Parameters
    ----------
    law : ReactionlessController

    Returns
    -------
    str
    """
    if law.mode is ControlMode.JOINT_PD:
        return 'joint_pd mode (fixed-base inverse kinematics per goal)'
    if law.track_orientation:
        return 'orientation tracking'
    if law.gains.k_null > 0.0:
        return f'the self-motion (k_null = {law.gains.k_null:g} > 0)'
    return ''


def _dls_pinv(J: np.ndarray, damping: float) -> np.ndarray:
    """Rows of :func:`~ffsim_ros.control.rns.dls_pinv`: (B, m, n) -> (B, n, m)."""
    m = J.shape[1]
    eye = np.eye(m)
    return _tr(J) @ _solve(J @ _tr(J) + damping**2 * eye, np.broadcast_to(eye, (J.shape[0], m, m)))


def _saturate(x: np.ndarray, limit: float) -> np.ndarray:
    """Rows of :func:`~ffsim_ros.control.rns.saturate`."""
    norm = np.linalg.norm(x, axis=1)
    long = (norm > limit) & (norm != 0.0)
    return x * np.where(long, limit / np.where(long, norm, 1.0), 1.0)[:, None]


class BatchedLaw:
    """:meth:`ReactionlessController.compute` (its efforts) for a batch of states.

    Parameters
    ----------
    law : ReactionlessController
        The law to batch: its mode, gains, end-effector link and joint limits.

    Raises
    ------
    ValueError
        A law :func:`batch_supported` refuses (the reason named).
    """

    def __init__(self, law: ReactionlessController) -> None:
        why = batch_supported(law)
        if why:
            raise ValueError(f'BatchedLaw: {why} is not batched; use ReactionlessController')
        self.law = law
        self.model = law.model
        self.gains = law.gains
        self.mode = law.mode
        self.weights = np.asarray(law.weights, dtype=float)
        # (inf: no speed limit, velocity="0" in the URDF; rns.speed_limits)
        self.vmax = speed_limits(self.model.velocity_limit, self.gains.max_joint_speed)
        self.limit = np.asarray(self.model.effort_limit, dtype=float)

    def terms(
        self, Q: np.ndarray, V: np.ndarray, models: Sequence[D.Model] | None = None
    ) -> BatchTerms:
        """:func:`batch_terms` of ``B`` states with the law's model (or one model per row).

        Parameters
        ----------
        Q : (B, nq) ndarray
            Configurations, one per row (the law's model is floating-base: ``[r0, Q0 (x, y,
            z, w), phi]``, base CoM [m] and joint coordinates [rad | m], inertial frame).
        V : (B, nv) ndarray
            Generalized velocities, one per row (``[V0, w0, phidot]``: base CoM velocity
            [m/s] and angular velocity [rad/s], inertial frame, then joint rates).
        models : sequence of Model, optional
            One model per row (the law's geometry; e.g. other masses); None: the law's model.

        Returns
        -------
        BatchTerms
            The free-floating terms of each row (inertial frame, SI units), of the law's end
            effector link.
        """
        return batch_terms(self.model if models is None else models, Q, V, self.law.ee_link)

    def efforts(
        self,
        Q: np.ndarray,
        V: np.ndarray,
        terms: BatchTerms,
        targets: np.ndarray,
        references: np.ndarray | None = None,
        models: Sequence[D.Model] | None = None,
    ) -> np.ndarray:
        """Joint efforts (B, n) [N m | N], clipped to the effort limits.

        Parameters
        ----------
        Q : (B, nq) ndarray
            Measured configurations ``[r0, Q0 (x, y, z, w), phi]``, one per row: base CoM [m]
            and attitude [-] in the inertial frame, joint coordinates [rad | m].
        V : (B, nv) ndarray
            Measured velocities ``[V0, w0, phidot]``, one per row: base CoM velocity [m/s] and
            angular velocity [rad/s] in the inertial frame, joint rates [rad/s | m/s].
        terms : BatchTerms
            Their :func:`batch_terms`.
        targets : (B, 3) end-effector targets, inertial frame [m]; a row of NaN brakes (the
            arm held still: ``compute(q, v, None)``).
        references : (B, 4) base attitudes to hold (``reactionless``), unit quaternions
            (x, y, z, w) in the inertial frame [-]; a row of NaN or None: none (rate damping
            only).
        models : the model of each row, as given to :meth:`terms` (None: the law's).

        Returns
        -------
        (B, n) ndarray
            [N m | N]
        """
        B = Q.shape[0]
        n = self.model.n
        brake = np.isnan(targets).any(axis=1)
        rates = np.zeros((B, n))
        steer = ~brake
        feedforward = np.zeros((B, n))
        if np.any(steer):
            idx = np.flatnonzero(steer)
            refs = None if references is None else references[idx]
            drift = (terms.ee_drift[idx], terms.locked_rate[idx])
            rates[idx] = self.desired_rates(
                Q[idx],
                terms.position[idx],
                terms.J_star[idx],
                terms.B[idx],
                targets[idx],
                refs,
                drift,
            )
            if self.gains.rate_feedforward > 0.0:
                rows = None if models is None else [models[k] for k in idx]
                feedforward[idx] = self.rate_feedforward(
                    Q[idx], V[idx], rates[idx], targets[idx], refs, rows, drift
                )
        phiddot = self.gains.kv_joint * (rates - V[:, 6:]) + feedforward
        tau = _mv(terms.H_star, phiddot) + terms.c_star
        return np.clip(tau, -self.limit, self.limit)

    def rate_feedforward(
        self,
        Q: np.ndarray,
        V: np.ndarray,
        rates: np.ndarray,
        targets: np.ndarray,
        references: np.ndarray | None,
        models: Sequence[D.Model] | None = None,
        drift: tuple[np.ndarray, np.ndarray] | None = None,
    ) -> np.ndarray:
        """Rows of :meth:`ReactionlessController.rate_feedforward` (B, n) [rad/s^2 | m/s^2]:
        the time derivative of :meth:`desired_rates` along the measured motion, one-sided over
        ``FEEDFORWARD_STEP`` on the Lie group, capped at ``kv_joint`` times each joint's
        commanded speed limit, times ``Gains.rate_feedforward``.

        Parameters
        ----------
        Q : (B, nq) ndarray
            Measured configurations ``[r0, Q0 (x, y, z, w), phi]``, one per row: base CoM [m]
            and attitude [-] in the inertial frame, joint coordinates [rad | m].
        V : (B, nv) ndarray
            Measured velocities ``[V0, w0, phidot]``, one per row: base CoM velocity [m/s] and
            angular velocity [rad/s] in the inertial frame, joint rates [rad/s | m/s].
        rates : (B, n) ndarray
            Their :meth:`desired_rates`, joint rates [rad/s | m/s].
        targets : (B, 3) end-effector targets, inertial frame [m] (no NaN row).
        references : (B, 4) or None
            Base attitudes to hold, unit quaternions (x, y, z, w) in the inertial frame [-]
            (as in :meth:`efforts`).
        models : the model of each row (None: the law's).
        drift : ``(ee_drift (B, 6), locked_rate (B, 3))`` of the rows
            (:class:`BatchTerms`), held over the step as the single law does; None: zero
            momentum.

        Returns
        -------
        (B, n) ndarray
            [rad/s^2 | m/s^2]
        """
        g = self.gains
        ahead = D.integrate(self.model, Q, V, FEEDFORWARD_STEP)
        position, J_star, Bm = batch_task_terms(
            self.model if models is None else models, ahead, self.law.ee_link
        )
        field = self.desired_rates(ahead, position, J_star, Bm, targets, references, drift)
        cap = speed_limits(self.model.velocity_limit, g.kv_joint * g.max_joint_speed)
        acc = np.clip((field - rates) / FEEDFORWARD_STEP, -cap, cap)
        return g.rate_feedforward * acc

    def desired_rates(
        self,
        Q: np.ndarray,
        position: np.ndarray,
        J_star: np.ndarray,
        Bm: np.ndarray,
        targets: np.ndarray,
        references: np.ndarray | None,
        drift: tuple[np.ndarray, np.ndarray] | None = None,
    ) -> np.ndarray:
        """Rows of :meth:`ReactionlessController.desired_rates` (position task, no budget, no
        self-motion), scaled to the joint velocity limits: (B, n) [rad/s | m/s].

        Parameters
        ----------
        Q : (B, nq) ndarray
            Configurations ``[r0, Q0 (x, y, z, w), phi]``: base CoM [m] and attitude [-] in
            the inertial frame, joint coordinates [rad | m].
        position : (B, 3) ndarray
            End-effector positions (link frame origin), inertial frame [m].
        J_star, Bm : (B, 6, n) ndarray
            Generalized Jacobians and ``H0^-1 H0m`` (:func:`batch_task_terms`), inertial
            frame [m/s, rad/s per rad/s | m/s].
        targets : (B, 3) ndarray
            End-effector targets, inertial frame [m].
        references : (B, 4) ndarray or None
            Base attitudes to hold, unit quaternions (x, y, z, w) in the inertial frame [-];
            a row of NaN: none.
        drift : ``(ee_drift (B, 6), locked_rate (B, 3))``, the momentum terms of the rows
            (:class:`BatchTerms`); None: zero momentum.

        Returns
        -------
        (B, n) ndarray
            [rad/s | m/s]
        """
        g = self.gains
        Jt = J_star[:, :3]
        xdot = _saturate(g.kp_task * (targets - position), g.max_ee_speed)
        if drift is not None:
            xdot = xdot - drift[0][:, :3]
        if self.mode is ControlMode.GJM_TRACKING:
            M = self.law.active  # (the held joints' rates zero)
            rates = self._limit_rates(M * _mv(_dls_pinv(Jt * M, g.damping), xdot))
            return self._clamped(Q, position, J_star, Bm, targets, None, rates, drift)
        A = Bm[:, 3:6]
        e_att = np.zeros((Q.shape[0], 3))
        if references is not None:
            held = ~np.isnan(references).any(axis=1)
            if np.any(held):
                e_att[held] = attitude_errors(Q[held, 3:7], references[held])
        w0_d = g.kp_attitude * e_att
        if drift is not None:
            w0_d = w0_d - drift[1]  # (the law solves A phidot = c - w0_d)
        rates = self._limit_rates(self._reactionless(Jt, A, xdot, w0_d))
        return self._clamped(Q, position, J_star, Bm, targets, references, rates, drift)

    def _clamped(
        self,
        Q: np.ndarray,
        position: np.ndarray,
        J_star: np.ndarray,
        Bm: np.ndarray,
        targets: np.ndarray,
        references: np.ndarray | None,
        rates: np.ndarray,
        drift: tuple[np.ndarray, np.ndarray] | None = None,
    ) -> np.ndarray:
        """``rates`` with the rows near a joint position limit replaced by the law's own
        (:meth:`ReactionlessController.desired_rates`, its joint clamping), one by one."""
        model = self.model
        near = np.any(near_limits(Q[:, 7:], model.lower, model.upper), axis=1)
        for k in np.flatnonzero(near):
            ref = None if references is None else references[k]
            if ref is not None and np.isnan(ref).any():
                ref = None
            terms = TaskTerms(position[k], np.eye(3), J_star[k], Bm[k])
            if drift is not None:
                terms = terms._replace(ee_drift=drift[0][k], locked_rate=drift[1][k])
            rates[k] = self.law.desired_rates(
                Q[k], terms, targets[k], attitude_reference=ref, self_motion=False
            )
        return rates

    def _reactionless(
        self, J: np.ndarray, A: np.ndarray, xdot: np.ndarray, w0_d: np.ndarray
    ) -> np.ndarray:
        """Rows of :func:`~ffsim_ros.control.rns.reactionless_rates` (the rates only)."""
        W = self.weights
        AW = A * W
        u, s, vt = np.linalg.svd(AW)
        rank = np.sum(s > RANK_TOL * np.maximum(1.0, s[:, :1]), axis=1)
        m = AW.shape[1]
        full = rank == m
        out = np.empty((J.shape[0], W.size))
        if np.any(~full):  # rank-deficient rows: one by one, with the single-state function
            for k in np.flatnonzero(~full):
                out[k] = reactionless_rates(J[k], A[k], xdot[k], w0_d[k], W, self.gains.damping)[0]
        if np.any(full):
            f = np.flatnonzero(full) if not np.all(full) else slice(None)
            u, s, vt = u[f], s[f], vt[f]
            pinv = _tr(vt[:, :m]) @ (_tr(u[:, :, :m]) / s[:, :m, None])
            N = _tr(vt[:, m:])
            xi_att = _mv(pinv, -w0_d[f])
            JW = J[f] * W
            JN = JW @ N
            zeta = _mv(_dls_pinv(JN, self.gains.damping), xdot[f] - _mv(JW, xi_att))
            out[f] = W * (xi_att + _mv(N, zeta))
        return out

    def _limit_rates(self, rates: np.ndarray) -> np.ndarray:
        """Rows of the law's scaling to the joint velocity limits (direction kept)."""
        return capped_to_limits(rates, self.vmax)


def ee_errors(targets: np.ndarray, positions: np.ndarray) -> np.ndarray:
    """Distances (B,) [m] from the end effectors (B, 3) to their targets (B, 3).

    Parameters
    ----------
    targets, positions : (B, 3) ndarray
        Targets and end-effector positions, same (inertial) frame [m].

    Returns
    -------
    (B,) ndarray [m]
    """
    return _norms(targets - positions)
