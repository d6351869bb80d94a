"""Reactionless end-effector control of a free-floating robot (no ROS imports).

The law has three layers, each with its source:

1. **Task-space motion through the generalized Jacobian** (Yoshida & Umetani 1993). Under
   zero total momentum, [S0 eq. 21] gives the base velocity ``x0dot = -H0^-1 H0m phidot``
   and [S0 eq. 5] the end-effector velocity ``xdot = J* phidot`` with
   ``J* = Jm - Js H0^-1 H0m``.
   The commanded end-effector velocity is a saturated proportional law
   ``xdot_d = sat(K_p (x_goal - x))``; joint rates come from damped least squares
   ``J^+ = J^T (J J^T + lambda^2 E)^-1`` so dynamic singularities of J* stay bounded.

2. **Reactionless null space** (Nguyen-Huynh 2013; Dimitrov & Yoshida 2004). With zero
   momentum the base angular velocity is ``w0 = -A phidot`` where ``A`` is the angular (lower
   three) rows of ``H0^-1 H0m``. The same null space is that of ``H_wphi`` of [S0 eq. 16]: setting
   ``w0 = 0`` in ``L_g = H_w w0 + H_wphi phidot = 0`` leaves ``H_wphi phidot = 0``. Note that
   the angular rows of ``H0m`` itself (``H_Omega_phi``, momentum about the *base* CoM, [S0 eq. 19])
   give the same null space only when the system CoM coincides with the base CoM; the base
   also translates (``M V0 = -J_Tw phidot``), which couples into ``L_0``. We therefore use
   ``A``, which is exact. With ``N`` an orthonormal basis of ``null(A)`` (SVD), joint rates
   ``phidot = N zeta`` leave the attitude untouched; the task is solved in that subspace:
   ``zeta = (J* N)^+ xdot_d``. A small attitude-hold term ``A phidot = K_att e_att`` (task
   priority, above the end-effector task) removes drift from tracking errors.

3. **Computed-torque inner loop** on the free-floating dynamics with no base actuation
   ([S0 eq. 39] with ``F_b = 0``): eliminating ``x0ddot = -H0^-1 (H0m phiddot + c_b)`` gives
   ``tau = H* phiddot + c*`` with the generalized inertia ``H* = Hm - H0m^T H0^-1 H0m`` and
   ``c* = c_m - H0m^T H0^-1 c_b``. The desired acceleration is
   ``phiddot_d = K_v (phidot_d - phidot)``. Efforts are clipped to the joint limits.

Modes: ``reactionless`` (1+2+3), ``gjm_tracking`` (1+3, no reactionless constraint: the base
rotates) and ``joint_pd`` (baseline: the goal is turned into joint angles by fixed-base
inverse kinematics that ignores the base reaction, tracked by a computed-torque PD).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

import ffsim_ros.dynamics as D
from ffsim_ros.dynamics.lie import matrix_log, matrix_to_quat

from .modes import ControlMode


@dataclass(frozen=True)
class Gains:
    """Gains of the law (SI units; rates in 1/s).

    Attributes
    ----------
    kp_task : float
        End-effector position gain [1/s].
    kp_orientation : float
        End-effector orientation gain [1/s] (only with orientation tracking).
    max_ee_speed : float
        Saturation of the commanded end-effector speed [m/s].
    max_ee_angular_speed : float
        Saturation of the commanded end-effector angular speed [rad/s].
    kv_joint : float
        Joint-rate tracking gain of the inner loop [1/s].
    kp_attitude : float
        Base attitude hold gain [1/s] (reactionless mode).
    damping : float
        Damped-least-squares factor lambda [m/s per rad/s].
    k_null : float
        Gain of the self-motion that raises the directional manipulability of the
        reactionless Jacobian ``J* N`` along the goal direction (reactionless mode). Off by
        default: on the sample servicer (TCP off the wrist-roll axis) every tested goal is
        reached without it, and its finite differences cost ~0.8 ms per update.
    kp_joint, kd_joint : float
        Joint PD gains of the ``joint_pd`` baseline [1/s^2, 1/s].
    max_joint_speed : float
        Fraction of each joint's velocity limit the law may command (0, 1].
    """

    kp_task: float = 1.5
    kp_orientation: float = 1.0
    max_ee_speed: float = 0.08
    max_ee_angular_speed: float = 0.2
    kv_joint: float = 20.0
    kp_attitude: float = 2.0
    damping: float = 0.02
    k_null: float = 0.0
    kp_joint: float = 16.0
    kd_joint: float = 8.0
    max_joint_speed: float = 0.9

    def __post_init__(self) -> None:
        for name, value in self.__dict__.items():
            if not np.isfinite(value) or value < 0.0:
                raise ValueError(f'gain {name}: expected a finite value >= 0, got {value}')
        if not 0.0 < self.max_joint_speed <= 1.0:
            raise ValueError(f'max_joint_speed: expected (0, 1], got {self.max_joint_speed}')


@dataclass
class ControlOutput:
    """Result of one control update.

    Attributes
    ----------
    tau : (n,) joint efforts [N m | N], clipped to the effort limits.
    phidot_desired : (n,) commanded joint rates [rad/s | m/s].
    ee_position : (3,) end-effector position, inertial frame [m].
    ee_quaternion : (4,) end-effector orientation (x, y, z, w).
    position_error : float, distance to the goal [m].
    base_angular_rate : float, ``|w0|`` [rad/s].
    momentum : (6,) ``[P; L]`` about the system CoM, inertial frame.
    manipulability : float, ``sqrt(det(J* J*^T))`` of the task rows.
    condition : float, condition number of the task rows of J*.
    mode : ControlMode
    """

    tau: np.ndarray
    phidot_desired: np.ndarray
    ee_position: np.ndarray
    ee_quaternion: np.ndarray
    position_error: float
    base_angular_rate: float
    momentum: np.ndarray
    manipulability: float
    condition: float
    mode: ControlMode
    saturated: bool = False


def dls_pinv(J: np.ndarray, damping: float) -> np.ndarray:
    """Damped least-squares inverse ``J^T (J J^T + lambda^2 E)^-1``, (n, m) for J (m, n)."""
    m = J.shape[0]
    return J.T @ np.linalg.solve(J @ J.T + damping**2 * np.eye(m), np.eye(m))


def base_rate_map(model: D.Model, q: np.ndarray) -> np.ndarray:
    """``A`` (3, n) with ``w0 = -A phidot`` under zero momentum [S0 eq. 21]."""
    H0, H0m, _ = D.inertia_blocks(model, q)
    return np.linalg.solve(H0, H0m)[3:6]


def reactionless_basis(model: D.Model, q: np.ndarray, tol: float = 1e-10) -> np.ndarray:
    """Orthonormal basis ``N`` (n, n - rank A) of the reactionless joint rates ``A phidot = 0``.

    Any ``phidot = N zeta`` under zero momentum leaves the base angular velocity zero.
    """
    A = base_rate_map(model, q)
    _, s, vt = np.linalg.svd(A)
    rank = int(np.sum(s > tol * max(1.0, s[0])))
    return vt[rank:].T


def _saturate(x: np.ndarray, limit: float) -> np.ndarray:
    norm = float(np.linalg.norm(x))
    return x if norm <= limit or norm == 0.0 else x * (limit / norm)


class ReactionlessController:
    """End-effector controller of a free-floating robot (see the module docstring).

    Parameters
    ----------
    model : Model
        Floating-base model of the robot.
    ee_link : str
        Controlled link frame.
    mode : ControlMode or str
    gains : Gains
    track_orientation : bool
        Track the goal orientation too (6 task rows) instead of the position only.

    Raises
    ------
    ValueError
        A fixed-base model, an unknown link or mode.
    """

    def __init__(
        self,
        model: D.Model,
        ee_link: str,
        *,
        mode: ControlMode | str = ControlMode.REACTIONLESS,
        gains: Gains | None = None,
        track_orientation: bool = False,
    ) -> None:
        if not model.floating_base:
            raise ValueError('ReactionlessController: expected a floating-base model')
        model.frame(ee_link)  # raises naming the known links
        self.model = model
        self.ee_link = ee_link
        self.mode = ControlMode(mode)
        self.gains = gains or Gains()
        self.track_orientation = bool(track_orientation)
        self._joint_goal: np.ndarray | None = None
        self._joint_goal_key: tuple | None = None
        self.reach = self._estimate_reach()

    # ------------------------------------------------------------------------------------------
    def _estimate_reach(self) -> float:
        """Upper bound of the distance from the first joint to the end effector [m]."""
        q = D.neutral(self.model)
        R, p = D.body_poses(self.model, q)
        frame = self.model.frame(self.ee_link)
        chain = []
        b = frame.body
        while b > 0:
            chain.append(p[b])
            b = int(self.model.arrays.parent[b])
        if not chain:
            return 0.0
        chain.reverse()
        tip = p[frame.body] + R[frame.body] @ frame.translation
        pts = np.vstack(chain + [tip])
        return float(np.linalg.norm(np.diff(pts, axis=0), axis=1).sum())

    def shoulder_position(self, q: np.ndarray) -> np.ndarray:
        """Inertial position of the first joint on the path to the end effector [m]."""
        R, p = D.body_poses(self.model, q)
        b = self.model.frame(self.ee_link).body
        first = b
        while b > 0:
            first = b
            b = int(self.model.arrays.parent[b])
        return p[first]

    def check_goal(self, q: np.ndarray, goal_position: np.ndarray) -> None:
        """Reject a goal that cannot be reached.

        Raises
        ------
        ValueError
            Non-finite values, or a goal farther from the shoulder than the arm's reach.
        """
        goal_position = np.asarray(goal_position, dtype=float)
        if goal_position.shape != (3,) or not np.all(np.isfinite(goal_position)):
            raise ValueError(f'goal: expected 3 finite coordinates, got {goal_position}')
        dist = float(np.linalg.norm(goal_position - self.shoulder_position(q)))
        if dist > 0.98 * self.reach:
            raise ValueError(
                f'goal unreachable: {dist:.3f} m from the shoulder, reach {self.reach:.3f} m'
            )

    # ------------------------------------------------------------------------------------------
    def compute(
        self,
        q: np.ndarray,
        v: np.ndarray,
        goal_position: np.ndarray | None,
        goal_rotation: np.ndarray | None = None,
        attitude_reference: np.ndarray | None = None,
    ) -> ControlOutput:
        """One control update.

        Parameters
        ----------
        q : (nq,) measured configuration;  v : (nv,) measured velocity.
        goal_position : (3,) end-effector goal, inertial frame [m]; None holds the arm still
            (zero joint rates, computed-torque brake).
        goal_rotation : (3, 3) goal orientation (used with ``track_orientation``).
        attitude_reference : (4,) base quaternion to hold in reactionless mode (default: the
            current attitude, i.e. rate damping only).

        Returns
        -------
        ControlOutput
        """
        model, g = self.model, self.gains
        n = model.n
        q = np.asarray(q, dtype=float)
        v = np.asarray(v, dtype=float)
        p_ee, R_ee = D.link_pose(model, q, self.ee_link)
        # one evaluation of H, c and the end-effector Jacobian serves every term below
        terms = D.free_floating_terms(model, q, v, self.ee_link)
        H, B, Jstar, Hs, cs = terms.H, terms.B, terms.J_star, terms.H_star, terms.c_star
        rows = slice(0, 6) if self.track_orientation else slice(0, 3)
        Jt = Jstar[rows]
        sv = np.linalg.svd(Jt, compute_uv=False)
        manip = float(np.prod(sv))
        cond = float(sv[0] / sv[-1]) if sv[-1] > 0 else float('inf')
        phidot = v[6:]
        err = 0.0
        if goal_position is None:
            phidot_d = np.zeros(n)
        else:
            e_p = np.asarray(goal_position, float) - p_ee
            err = float(np.linalg.norm(e_p))
            xdot = _saturate(g.kp_task * e_p, g.max_ee_speed)
            if self.track_orientation:
                R_goal = R_ee if goal_rotation is None else np.asarray(goal_rotation, float)
                e_o = matrix_log(R_goal @ R_ee.T)
                xdot = np.r_[xdot, _saturate(g.kp_orientation * e_o, g.max_ee_angular_speed)]
            if self.mode is ControlMode.JOINT_PD:
                phidot_d = None
            elif self.mode is ControlMode.GJM_TRACKING:
                phidot_d = dls_pinv(Jt, g.damping) @ xdot
            else:
                phidot_d = self._reactionless_rates(q, Jt, B[3:6], xdot, attitude_reference)
        if self.mode is ControlMode.JOINT_PD and goal_position is not None:
            phi_goal = self._joint_goal_for(q, np.asarray(goal_position, float))
            phiddot = g.kp_joint * (phi_goal - q[7:]) - g.kd_joint * phidot
            phidot_d = phi_goal - q[7:]
        else:
            if phidot_d is None:  # pragma: no cover - defensive
                phidot_d = np.zeros(n)
            phidot_d = self._limit_rates(phidot_d)
            phiddot = g.kv_joint * (phidot_d - phidot)
        tau = Hs @ phiddot + cs
        limit = model.effort_limit
        clipped = np.clip(tau, -limit, limit)
        w0 = v[3:6]
        return ControlOutput(
            tau=clipped,
            phidot_desired=phidot_d,
            ee_position=p_ee,
            ee_quaternion=matrix_to_quat(R_ee),
            position_error=err,
            base_angular_rate=float(np.linalg.norm(w0)),
            momentum=self._momentum_about_com(q, v, H),
            manipulability=manip,
            condition=cond,
            mode=self.mode,
            saturated=bool(np.any(clipped != tau)),
        )

    def _momentum_about_com(self, q: np.ndarray, v: np.ndarray, H: np.ndarray) -> np.ndarray:
        """``[P; L_g]`` from ``[P; L_0] = H[:6] v`` [S0 eqs. 12, 17]: no extra recursion."""
        h = H[:6] @ v
        rg = D.center_of_mass(self.model, q)
        h[3:] += np.cross(q[:3] - rg, h[:3])
        return h

    def _limit_rates(self, phidot_d: np.ndarray) -> np.ndarray:
        """Scale the whole rate vector (direction kept) to the joint velocity limits."""
        vmax = self.gains.max_joint_speed * self.model.velocity_limit
        ratio = np.max(np.abs(phidot_d) / vmax) if np.all(vmax > 0) else 0.0
        return phidot_d / ratio if ratio > 1.0 else phidot_d

    def _reactionless_rates(
        self,
        q: np.ndarray,
        Jt: np.ndarray,
        A: np.ndarray,
        xdot: np.ndarray,
        attitude_reference: np.ndarray | None,
    ) -> np.ndarray:
        """Joint rates: attitude task (``w0 = -A phidot``) first, end effector in its null space.

        ``A`` (3, n) is :func:`base_rate_map` at ``q``; ``Jt`` the task rows of J*.
        """
        g = self.gains
        # primary task: base angular velocity w0 = -A phidot equal to the attitude correction
        w0_d = np.zeros(3)
        if attitude_reference is not None:
            q_ref = q.copy()
            q_ref[3:7] = attitude_reference
            w0_d = g.kp_attitude * D.difference(self.model, q, q_ref)[3:6]
        # weighted least norm: phidot = W xi with W = diag(joint velocity limits), so each
        # joint moves in proportion to what it can do
        W = self._rate_weights()
        AW = A * W
        xi_att = np.linalg.pinv(AW) @ (-w0_d)
        _, s, vt = np.linalg.svd(AW)
        rank = int(np.sum(s > 1e-10 * max(1.0, s[0])))
        N = vt[rank:].T
        JN = (Jt * W) @ N
        zeta = dls_pinv(JN, g.damping) @ (xdot - (Jt * W) @ xi_att)
        phidot_task = W * (xi_att + N @ zeta)
        if g.k_null <= 0.0 or JN.shape[1] <= JN.shape[0] or not np.any(xdot):
            return phidot_task
        # Self-motion inside the reactionless subspace (it moves neither the end effector nor
        # the base attitude): climb the directional manipulability of J* N along the goal
        # direction, f = |(J* N)^T e_hat|^2, so the arm leaves configurations where the goal
        # direction is outside the range of the reactionless Jacobian (where plain damped
        # least squares would stall short of the goal).
        e_hat = xdot[:3] / np.linalg.norm(xdot[:3]) if np.any(xdot[:3]) else None
        if e_hat is None:
            return phidot_task
        _, s2, vt2 = np.linalg.svd(JN)
        rank2 = int(np.sum(s2 > 1e-6 * max(1.0, s2[0])))
        phidot_null = np.zeros_like(phidot_task)
        for ns in vt2[rank2:]:
            direction = W * (N @ ns)
            slope = self._directional_slope(q, direction, e_hat)
            phidot_null += g.k_null * slope * direction
        # the task has priority on the rate budget: shrink only the self-motion if needed
        vmax = g.max_joint_speed * self.model.velocity_limit
        room = np.max(np.abs(phidot_null) / np.maximum(vmax - np.abs(phidot_task), 1e-9))
        if room > 1.0:
            phidot_null /= room
        return phidot_task + phidot_null

    def _rate_weights(self) -> np.ndarray:
        """Joint velocity limits normalized to a maximum of 1 (1 where unlimited)."""
        vmax = self.model.velocity_limit
        finite = np.isfinite(vmax) & (vmax > 0)
        if not np.any(finite):
            return np.ones(self.model.n)
        w = np.where(finite, vmax, np.max(vmax[finite]))
        return w / np.max(w)

    def _directional_manipulability(self, q: np.ndarray, e_hat: np.ndarray) -> float:
        """``|(J* N)^T e_hat|^2`` of the rate-weighted reactionless Jacobian at ``q``."""
        W = self._rate_weights()
        A = base_rate_map(self.model, q) * W
        _, s, vt = np.linalg.svd(A)
        rank = int(np.sum(s > 1e-10 * max(1.0, s[0])))
        JN = (D.generalized_jacobian(self.model, q, self.ee_link)[:3] * W) @ vt[rank:].T
        return float(np.sum((JN.T @ e_hat) ** 2))

    def _directional_slope(
        self, q: np.ndarray, dphi: np.ndarray, e_hat: np.ndarray, eps: float = 1e-5
    ) -> float:
        """Derivative of :meth:`_directional_manipulability` along joint rates ``dphi``."""
        qp, qm = q.copy(), q.copy()
        qp[7:] += eps * dphi
        qm[7:] -= eps * dphi
        return (
            self._directional_manipulability(qp, e_hat)
            - self._directional_manipulability(qm, e_hat)
        ) / (2 * eps)

    def _joint_goal_for(self, q: np.ndarray, goal: np.ndarray) -> np.ndarray:
        """Fixed-base inverse kinematics (base frozen at its current pose), cached per goal."""
        key = tuple(np.round(goal, 9))
        if self._joint_goal is not None and self._joint_goal_key == key:
            return self._joint_goal
        model = self.model
        qi = q.copy()
        for _ in range(200):
            p, _ = D.link_pose(model, qi, self.ee_link)
            e = goal - p
            if np.linalg.norm(e) < 1e-6:
                break
            Jm = D.link_jacobian(model, qi, self.ee_link)[:3, 6:]
            step = dls_pinv(Jm, 0.05) @ _saturate(e, 0.1)
            qi[7:] = np.clip(qi[7:] + step, model.lower, model.upper)
        self._joint_goal, self._joint_goal_key = qi[7:].copy(), key
        return self._joint_goal
