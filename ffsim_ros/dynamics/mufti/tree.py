"""Maximal-coordinate dynamics of a tree [M sec. 3, eqs. 2-10, 41-49, Remarks 3, 5].

Every body ``i`` of the :class:`~ffsim_ros.dynamics.model.Model` (links welded by fixed joints
are already merged into one body) is a free rigid body with the Newton-Euler equations
([M eqs. 2-3], inertial frame, about the CoM ``C_i``)::

    m_i r''_i = F_i + sum_j c_ij f_j
    I_i w'_i + w_i x I_i w_i = G_i + sum_j c_ij (l_ij x f_j + g_j)

where ``I_i = R_i I_i^body R_i^T``. The ``nb - 1`` moving joints are the arcs of the directed
tree (module :mod:`.graph`): hinge forces ``f_j`` and torques ``g_j`` act positively on the
initial vertex ``j+`` (the parent) and negatively on the final vertex ``j-`` (the child).
``g_j`` is the constraint torque ``g^c_j`` plus the actuation.

Constraint rows (acceleration level, "parent minus child", ``G x = b``) per joint, with ``o``
the hinge point (the child body's frame origin) and ``k`` the joint axis, inertial frame:

* revolute/continuous (pin joint, ``n_j = 1``): 3 translational rows ([M eqs. 6-9]: the hinge
  point of both bodies has the same acceleration) and 2 rotational rows ``q_jk . (w'_+ - w'_-)``
  with ``q_j1, q_j2 _|_ k`` ([M eqs. 44-48], ``Q_j^T C^T w = 0``);
* prismatic along any axis [M Remark 5]: 2 translational rows along ``q_j1, q_j2 _|_ k`` and
  3 rotational rows (``Q_j = E_3``, no relative rotation).

Each row is a unit constraint wrench ``w`` (a spatial force at the inertial origin O,
``[d; o x d]`` for a force of direction ``d`` through ``o``, ``[0; q]`` for a torque), and
its coefficients on body ``i`` are ``w^T X_i`` with ``X_i = [[E, r_i~], [0, E]]`` mapping
``[r''_i; w'_i]`` to the spatial acceleration at O (minus the velocity term
``[-w_i x r'_i; 0]``). Differentiating the velocity constraint ``T^T (V_- - V_+) = 0``
(``T`` fixed in the parent up to a change of basis inside the annihilator) gives::

    T^T (A_- - A_+) = T^T (V_+ x V_-)          (spatial motion cross product)

which, for the translational rows of a pin joint, is the seed's [M eq. 9] (``-d . (w_+ x
(w_+ x l_+) - w_- x (w_- x l_-))``) and, for the rotational rows, [M eq. 48] with ``Q'_j = w_+ x
Q_j``. **OCR note:** [M eq. 49] prints ``u_4 = Q^T C^T w``; differentiating [M eq. 47] gives
``Q^T C^T w' = -Q'^T C^T w``, so the right-hand side is ``-Q'^T C^T w`` (with the seed's ``-Q^T
C^T`` row sign, ``u_4 = Q'^T C^T w``): the dot and the velocity are what the OCR lost.

A fixed base (and a base whose motion is prescribed, [M Remark 3]) is welded to an external body
``b_0`` by a hinge ``h_0`` of 6 rows at the base CoM: ``r''_0 = a_presc``, ``w'_0 = alpha`` (not
the Baumgarte gain of [M Remark 4]: docs/equations.md, code names).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np

from ..algorithms import body_kinematics
from ..inputs import (
    ArrayLike,
    as_q,
    as_v,
    as_vector,
    link_wrench_items,
    positive_step,
    real_number,
    step_count,
)
from ..integration import rk4_step
from ..kernels.layout import PRISMATIC, REVOLUTE, SPHERICAL, UNIVERSAL
from ..lie import cross, perpendicular_basis
from ..model import Model
from ..state_errors import require_state
from .linalg import Triplets, block_mass_matrix, solve_lagrangian

METHODS = ('kkt', 'nullspace', 'multipliers')


# ----------------------------------------------------------------------------------------------
# small vector helpers (vectorized over a leading axis)
# ----------------------------------------------------------------------------------------------


def _cross_motion(V1: np.ndarray, V2: np.ndarray) -> np.ndarray:
    """Spatial motion cross product ``V1 x V2 = [w1 x v2 + v1 x w2; w1 x w2]``, (.., 6)."""
    v1, w1 = V1[..., :3], V1[..., 3:]
    v2, w2 = V2[..., :3], V2[..., 3:]
    return np.concatenate((cross(w1, v2) + cross(v1, w2), cross(w1, w2)), axis=-1)


# ----------------------------------------------------------------------------------------------
# bodies
# ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Bodies:
    """Pose, velocity and inertia of every body (all inertial frame).

    Attributes
    ----------
    R : (nb, 3, 3) orientations;  p : (nb, 3) frame origins [m];  c : (nb, 3) CoMs [m].
    mass : (nb,) [kg];  inertia : (nb, 3, 3) about the CoM [kg m^2].
    w : (nb, 3) angular velocities [rad/s];  rdot : (nb, 3) CoM velocities [m/s].
    V : (nb, 6) spatial velocities at O ``[v_O; w]``.
    S : (6, nv) joint motion subspaces at O (``kernels.motion_subspace``).
    v : (nv,) the generalized velocity they come from.
    """

    R: np.ndarray
    p: np.ndarray
    c: np.ndarray
    mass: np.ndarray
    inertia: np.ndarray
    w: np.ndarray
    rdot: np.ndarray
    V: np.ndarray
    S: np.ndarray
    v: np.ndarray

    @property
    def x_vel(self) -> np.ndarray:
        """(6 nb,) stacked ``[r'_i; w_i]``."""
        return np.concatenate((self.rdot, self.w), axis=1).ravel()


def bodies(model: Model, q: np.ndarray, v: np.ndarray) -> Bodies:
    """Poses, inertias and velocities of all bodies from ``(q, v)``.

    The spatial velocity of body ``i`` at O is ``V_i = V_parent + S_i qdot_i`` (the ``w = w_1
    1_n - T_2^T P gamma'`` of [M eq. 60] in spatial form); ``r'_i = v_O + w_i x r_i`` (the CoM
    velocity of [S0 eq. 8]).

    Parameters
    ----------
    model : Model;  q : (nq,) configuration ``[r0, Q0, phi]`` [m, -, rad | m].
    v : (nv,) velocity ``[V0, w0, phidot]``, base parts inertial [m/s, rad/s, rad/s | m/s].
    """
    a = model.arrays
    R, p, S = body_kinematics(model, q)
    c = p + np.einsum('bij,bj->bi', R, a.com)
    inertia = np.einsum('bij,bjk,blk->bil', R, a.inertia, R)
    nb = a.parent.shape[0]
    V = np.zeros((nb, 6))
    for i in range(nb):
        k = a.parent[i]
        if k >= 0:
            V[i] = V[k]
        s = slice(a.iv[i], a.iv[i] + a.nvj[i])
        V[i] += S[:, s] @ v[s]
    w = V[:, 3:].copy()
    rdot = V[:, :3] + cross(w, c)
    return Bodies(R, p, c, a.mass.copy(), inertia, w, rdot, V, S, np.array(v, dtype=float))


def body_velocity_jacobian(model: Model, bd: Bodies) -> np.ndarray:
    """``Z = d(r', w)/dq'`` of [M Remark 2] (named ``B`` here; docs/equations.md, code names),
    (6 nb, nv): ``[r'_i; w_i] = Z v``."""
    a = model.arrays
    nb = a.parent.shape[0]
    nv = bd.S.shape[1]
    Js = np.zeros((nb, 6, nv))
    for i in range(nb):
        k = a.parent[i]
        if k >= 0:
            Js[i] = Js[k]
        s = slice(a.iv[i], a.iv[i] + a.nvj[i])
        Js[i][:, s] = bd.S[:, s]
    B = Js.copy()
    B[:, :3, :] = Js[:, :3, :] - np.swapaxes(
        cross(bd.c[:, None, :], np.swapaxes(Js[:, 3:, :], 1, 2)), 1, 2
    )
    return B.reshape(6 * nb, nv)


# ----------------------------------------------------------------------------------------------
# constraint rows
# ----------------------------------------------------------------------------------------------


@dataclass
class Rows:
    """Constraint rows ``G x = b`` between body ``a`` (+, initial vertex) and ``b`` (-).

    Attributes
    ----------
    a, b : (m,) int body indices, -1 for the external (ground / prescribing) body.
    Ga, Gb : (m, 6) coefficients on ``[r''; w']`` of body a / b (Gb carries the minus sign);
        equivalently the wrench ``[force; moment about the CoM]`` a unit multiplier exerts.
    rhs : (m,) velocity-product (and prescribed-motion) terms ``b``.
    """

    a: np.ndarray
    b: np.ndarray
    Ga: np.ndarray
    Gb: np.ndarray
    rhs: np.ndarray

    @staticmethod
    def concat(parts: list[Rows]) -> Rows:
        """The rows of ``parts`` stacked in order (the empty blocks skipped).

        Parameters
        ----------
        parts : list of Rows
            Blocks of ``m_k`` rows each.

        Returns
        -------
        Rows
            ``sum m_k`` rows; with no row at all, empty arrays: ``a``, ``b`` (0,) int64,
            ``Ga``, ``Gb`` (0, 6), ``rhs`` (0,).
        """
        parts = [r for r in parts if r.a.size]
        if not parts:
            z = np.zeros(0, dtype=np.int64)
            return Rows(z, z.copy(), np.zeros((0, 6)), np.zeros((0, 6)), np.zeros(0))
        return Rows(
            np.concatenate([r.a for r in parts]),
            np.concatenate([r.b for r in parts]),
            np.concatenate([r.Ga for r in parts]),
            np.concatenate([r.Gb for r in parts]),
            np.concatenate([r.rhs for r in parts]),
        )

    def matrix(self, nb: int) -> Triplets:
        """Sparse ``G`` (m, 6 nb)."""
        m = self.a.size
        rows, cols, vals = [], [], []
        for idx, coef in ((self.a, self.Ga), (self.b, self.Gb)):
            ok = idx >= 0
            r = np.repeat(np.flatnonzero(ok), 6)
            c = (6 * idx[ok][:, None] + np.arange(6)[None, :]).ravel()
            rows.append(r)
            cols.append(c)
            vals.append(coef[ok].ravel())
        return Triplets(
            np.concatenate(rows), np.concatenate(cols), np.concatenate(vals), (m, 6 * nb)
        )

    def times(self, x: np.ndarray) -> np.ndarray:
        """``G x`` for stacked body vectors ``x`` (6 nb,)."""
        X = x.reshape(-1, 6)
        out = np.zeros(self.a.size)
        for idx, coef in ((self.a, self.Ga), (self.b, self.Gb)):
            ok = idx >= 0
            out[ok] += np.einsum('rk,rk->r', coef[ok], X[idx[ok]])
        return out


def _wrench_rows(
    W: np.ndarray, a: np.ndarray, b: np.ndarray, bd: Bodies, *, ground: bool = False
) -> Rows:
    """Rows of unit constraint wrenches ``W`` (m, 6) at O on the same line for both bodies.

    ``G_i = +-w^T X_i``: ``[w_lin; w_ang - c_i x w_lin]``, and
    ``b = -w^T (V_a x V_b) + w_lin . (w_a x r'_a - w_b x r'_b)`` (module docstring).
    """
    Va = np.where((a >= 0)[:, None], bd.V[a], 0.0)
    Vb = bd.V[b]
    ca = np.where((a >= 0)[:, None], bd.c[a], 0.0)
    Ga = np.concatenate((W[:, :3], W[:, 3:] - cross(ca, W[:, :3])), axis=1)
    Gb = -np.concatenate((W[:, :3], W[:, 3:] - cross(bd.c[b], W[:, :3])), axis=1)
    zeta_a = np.where((a >= 0)[:, None], cross(bd.w[a], bd.rdot[a]), 0.0)
    zeta_b = cross(bd.w[b], bd.rdot[b])
    rhs = -np.einsum('rk,rk->r', W, _cross_motion(Va, Vb))
    rhs += np.einsum('rk,rk->r', W[:, :3], zeta_a - zeta_b)
    if ground:
        Ga[:] = 0.0
    return Rows(a.copy(), b.copy(), Ga, Gb, rhs)


def joint_frames(model: Model, bd: Bodies) -> tuple[np.ndarray, np.ndarray]:
    """Hinge points ``o_j`` (child frame origins) and unit axes ``k_j``, (n, 3) each.

    ``k_j`` is the first axis (meaningless for a spherical joint: see :func:`joint_axes`).
    """
    a = model.arrays
    child = np.arange(1, a.parent.shape[0])
    o = bd.p[child]
    k = np.einsum('bij,bj->bi', bd.R[child], a.axis[child])
    return o, k


def joint_axes(model: Model, bd: Bodies, j: int) -> np.ndarray:
    """World axes ``K_j`` (3, nv_j) of joint ``j``: relative rates ``w_- - w_+ = K_j qdot_j``.

    Revolute / prismatic: the axis ``k`` (for a prismatic joint the sliding direction).
    Spherical: the child frame's axes ``R_-`` (the rate is in the child frame). Universal:
    the first axis (fixed in the parent) and the second (fixed in the child).
    """
    a = model.arrays
    c = j + 1
    kind = a.jtype[c]
    if kind == SPHERICAL:
        return bd.R[c].copy()
    k = bd.R[c] @ a.axis[c]
    if kind == UNIVERSAL:
        k1 = bd.R[a.parent[c]] @ (a.rot[c] @ a.axis[c])
        return np.stack((k1, bd.R[c] @ a.axis2[c]), axis=1)
    return k[:, None]


def _rows_per_joint(model: Model) -> np.ndarray:
    """Constraint rows of each moving joint: 6 minus its DoFs (5, 5, 3, 4)."""
    return 6 - model.arrays.nvj[1:]


def tree_rows(model: Model, bd: Bodies) -> Rows:
    """The rows of the moving joints, ``6 - nv_j`` per joint in joint order.

    Row order per joint: revolute ``[x, y, z force; q1, q2 torque]`` [M eqs. 6-9, 44-48],
    prismatic ``[q1, q2 force; x, y, z torque]`` [M Remark 5], spherical ``[x, y, z force]``
    (ball-and-socket, [M eqs. 6-9]), universal ``[x, y, z force; n torque]`` with
    ``n = k_1 x k_2 / |k_1 x k_2|`` ([M sec. 3.2] with ``n_j = 2`` axes, ``n'_j = 1``
    constraint direction).

    A universal joint's ``n`` is not fixed in the parent: it turns with the first angle, which
    adds ``qdot_1 (k_1 x n) . (w_- - w_+)`` to the right-hand side of its torque row.
    """
    a = model.arrays
    n = a.parent.shape[0] - 1
    if n == 0:
        return Rows.concat([])
    o, k = joint_frames(model, bd)
    cnt = _rows_per_joint(model)
    start = np.concatenate(([0], np.cumsum(cnt)[:-1]))
    W = np.zeros((int(cnt.sum()), 6))
    jt = a.jtype[1:]
    single = np.flatnonzero((jt == REVOLUTE) | (jt == PRISMATIC))
    if single.size:
        ks, os_ = k[single], o[single]
        q1, q2 = perpendicular_basis(ks)
        m = single.size
        pris = (jt[single] == PRISMATIC)[:, None, None]
        E = np.broadcast_to(np.eye(3), (m, 3, 3))
        Z = np.zeros((m, 2, 3))
        Q = np.stack((q1, q2), axis=1)  # (m, 2, 3)
        # revolute: forces x, y, z through o, torques q1, q2; prismatic: forces q1, q2, torques E
        F = np.where(
            pris, np.concatenate((Q, Z, Z[:, :1]), axis=1), np.concatenate((E, Z), axis=1)
        )
        Tq = np.where(
            pris, np.concatenate((Z, E), axis=1), np.concatenate((Z, Z[:, :1], Q), axis=1)
        )
        Ws = np.concatenate((F, Tq + cross(os_[:, None, :], F)), axis=2)  # (m, 5, 6)
        W[(start[single][:, None] + np.arange(5)[None, :]).ravel()] = Ws.reshape(5 * m, 6)
    extra: list[tuple[int, float]] = []
    for j in np.flatnonzero((jt == SPHERICAL) | (jt == UNIVERSAL)):
        r0 = start[j]
        for r in range(3):  # the joint centre is common to both bodies
            W[r0 + r, r] = 1.0
            W[r0 + r, 3:] = cross(o[j], np.eye(3)[r])
        if jt[j] == UNIVERSAL:
            Kj = joint_axes(model, bd, j)
            nrm = cross(Kj[:, 0], Kj[:, 1])
            nrm /= np.linalg.norm(nrm)
            W[r0 + 3, 3:] = nrm
            qd1 = bd.v[a.iv[j + 1]]
            dw = bd.w[j + 1] - bd.w[a.parent[j + 1]]
            extra.append((r0 + 3, qd1 * float(cross(Kj[:, 0], nrm) @ dw)))
    parent = np.repeat(a.parent[1:], cnt)
    child = np.repeat(np.arange(1, n + 1), cnt)
    rows = _wrench_rows(W, parent, child, bd)
    for r, val in extra:
        rows.rhs[r] += val
    return rows


def root_rows(base_acceleration: np.ndarray) -> Rows:
    """Hinge ``h_0`` welding the base to an external body of prescribed motion
    [M Remark 3, eq. 41].

    ``G x = b`` reads ``-[r''_0; w'_0] = -a_presc`` ("external minus base"): the multiplier
    ``l_0`` is minus the wrench ``[F; T]`` (at the base CoM, inertial frame) the external
    body exerts on the base.
    """
    a = np.full(6, -1, dtype=np.int64)
    b = np.zeros(6, dtype=np.int64)
    return Rows(a, b, np.zeros((6, 6)), -np.eye(6), -np.asarray(base_acceleration, float))


# ----------------------------------------------------------------------------------------------
# applied forces
# ----------------------------------------------------------------------------------------------


def effective_efforts(model: Model, v: np.ndarray, tau: np.ndarray) -> np.ndarray:
    """Joint efforts plus the joint friction ``F_f`` [S0 eq. 41] when the model enables it:
    ``tau - d phidot - f_c tanh(phidot / 1e-3)`` (n,) [N m | N], velocity order, from ``v``
    (nv,) (its joint rates ``phidot = v[nv - n:]`` [rad/s | m/s]) and ``tau`` (n,) [N m | N];
    ``tau`` itself when the joint dynamics are off."""
    if not model.joint_dynamics:
        return tau
    off = model.nv - model.n
    d = model.arrays.damping[off:]
    f = model.arrays.friction[off:]
    phid = v[off:]
    return tau - d * phid - f * np.tanh(phid / 1e-3)


def applied_forces(
    model: Model,
    bd: Bodies,
    tau: np.ndarray,
    base_wrench: np.ndarray | None,
    link_wrenches: Mapping[str, ArrayLike] | None,
) -> np.ndarray:
    """``u = [u_1; u_2]`` per body [M eq. 10]: ``[F_i + m_i g; G_i + actuation - w_i x I_i w_i]``.

    Joint efforts act as equal and opposite hinge torques or forces (:func:`actuation`) on
    child (+) and parent (-).

    Returns
    -------
    (nb, 6) ndarray [N, N m], moments about each body's CoM.
    """
    a = model.arrays
    nb = a.parent.shape[0]
    u = np.zeros((nb, 6))
    u[:, :3] = bd.mass[:, None] * model.gravity[None, :]
    u[:, 3:] = -cross(bd.w, np.einsum('bij,bj->bi', bd.inertia, bd.w))
    if base_wrench is not None:
        u[0] += base_wrench
    for link, wr in link_wrench_items(link_wrenches):
        frame = model.frame(link)
        i = frame.body
        point = bd.p[i] + bd.R[i] @ frame.translation
        u[i, :3] += wr[:3]
        u[i, 3:] += wr[3:] + cross(point - bd.c[i], wr[:3])
    if nb > 1:
        o, _ = joint_frames(model, bd)
        force, torque = actuation(model, bd, tau)
        child = np.arange(1, nb)
        par = a.parent[1:]
        wc = np.concatenate((force, torque + cross(o - bd.c[child], force)), axis=1)
        wp = np.concatenate((force, torque + cross(o - bd.c[par], force)), axis=1)
        u[child] += wc
        np.add.at(u, par, -wp)
    return u


def actuation(model: Model, bd: Bodies, tau: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Force and torque (inertial frame) each joint's efforts apply to its child body.

    Prismatic: the force ``tau k`` through the hinge point. Rotational joints: the torque
    ``T = K (K^T K)^-1 tau`` in the span of the joint axes ``K`` (:func:`joint_axes`), the one
    whose power on the relative rates is ``tau . qdot`` (``T = tau k`` for a revolute joint,
    ``R_- tau`` for a spherical one, whose effort is a child-frame torque).

    Parameters
    ----------
    tau : (n,) joint efforts (velocity order) [N m | N].

    Returns
    -------
    force, torque : (nb - 1, 3) ndarrays [N], [N m]; the parent receives the opposite.
    """
    a = model.arrays
    n = a.parent.shape[0] - 1
    off = model.nv - model.n
    _, k = joint_frames(model, bd)
    jt = a.jtype[1:]
    first = a.iv[1:] - off
    single = (jt == REVOLUTE) | (jt == PRISMATIC)
    vec = np.where(single[:, None], tau[np.where(single, first, 0)][:, None] * k, 0.0)
    pris = (jt == PRISMATIC)[:, None]
    force = np.where(pris, vec, 0.0)
    torque = np.where(pris, 0.0, vec)
    for j in np.flatnonzero(~single):
        Kj = joint_axes(model, bd, j)
        tj = tau[first[j] : first[j] + Kj.shape[1]]
        torque[j] = Kj @ np.linalg.solve(Kj.T @ Kj, tj)
    assert torque.shape == (n, 3)
    return force, torque


# ----------------------------------------------------------------------------------------------
# joint accelerations from body accelerations
# ----------------------------------------------------------------------------------------------


def joint_accelerations(model: Model, q: np.ndarray, bd: Bodies, X: np.ndarray) -> np.ndarray:
    """Generalized accelerations ``[dV0, dw0, phiddot]`` from body accelerations ``X`` (nb, 6).
    ``X[i] = [r''_i; w'_i]`` (CoM, inertial frame) [m/s^2, rad/s^2]; returns (nv,).

    Revolute (``w_- - w_+ = k gamma'`` with ``k`` fixed in the parent, [M eq. 43]):
    ``gamma'' = k . (w'_- - w'_+)`` (the term ``(w_+ x k) gamma'`` is normal to ``k``).
    Spherical and universal (``w_- - w_+ = K qdot``, :func:`joint_axes`): least squares of
    ``K qddot = w'_- - w'_+ - Kdot qdot`` (exact: ``K`` has full column rank).
    Prismatic (``d = o_- - o_+ = k s``, ``o_+`` the joint frame origin fixed in the parent):
    ``s'' = k . (a_-(o_-) - a_+(o_+)) + |w_+ x k|^2 s`` with the point accelerations
    ``a(o) = r'' + w' x l + w x (w x l)``, ``l = o - r``.
    """
    a = model.arrays
    out = np.zeros(model.nv)
    if model.floating_base:
        out[:6] = X[0]
    nb = a.parent.shape[0]
    if nb == 1:
        return out
    o, k = joint_frames(model, bd)
    child = np.arange(1, nb)
    par = a.parent[1:]
    dw = X[child, 3:] - X[par, 3:]
    acc = np.einsum('ri,ri->r', k, dw)
    pris = np.flatnonzero(a.jtype[1:] == PRISMATIC)
    if pris.size:
        ch, pa = child[pris], par[pris]
        o_c = o[pris]
        o_p = bd.p[pa] + np.einsum('bij,bj->bi', bd.R[pa], a.trans[ch])

        def point_acc(i: np.ndarray, pt: np.ndarray) -> np.ndarray:
            lv = pt - bd.c[i]
            wi = bd.w[i]
            return X[i, :3] + cross(X[i, 3:], lv) + cross(wi, cross(wi, lv))

        kk = k[pris]
        s = q[a.iq[ch]]
        wk = cross(bd.w[pa], kk)
        d2 = point_acc(ch, o_c) - point_acc(pa, o_p)
        acc[pris] = np.einsum('ri,ri->r', kk, d2) + np.einsum('ri,ri->r', wk, wk) * s
    single = (a.jtype[1:] == REVOLUTE) | (a.jtype[1:] == PRISMATIC)
    out[a.iv[child[single]]] = acc[single]
    for j in np.flatnonzero(~single):
        # w_- - w_+ = K qdot  =>  w'_- - w'_+ = K qddot + Kdot qdot, with Kdot qdot =
        # w_- x (R_- qdot) (spherical: child-fixed axes) or qdot_1 w_+ x k_1 + qdot_2 w_- x k_2
        c, pa = child[j], par[j]
        Kj = joint_axes(model, bd, j)
        qd = bd.v[a.iv[c] : a.iv[c] + a.nvj[c]]
        if a.jtype[c] == SPHERICAL:
            kdot = cross(bd.w[c], Kj @ qd)
        else:
            kdot = qd[0] * cross(bd.w[pa], Kj[:, 0]) + qd[1] * cross(bd.w[c], Kj[:, 1])
        out[a.iv[c] : a.iv[c] + a.nvj[c]] = np.linalg.solve(Kj.T @ Kj, Kj.T @ (dw[j] - kdot))
    return out


# ----------------------------------------------------------------------------------------------
# public API
# ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class MaximalSolution:
    """Solution of the Lagrangian system of a tree [M eqs. 10, 49].

    Attributes
    ----------
    a : (nv,) ndarray
        Generalized accelerations ``[dV0, dw0, phiddot]`` (floating) or ``phiddot``.
    body_accelerations : (nb, 6) ndarray
        ``[r''_i; w'_i]``: CoM acceleration [m/s^2] and angular acceleration [rad/s^2] of every
        body, inertial frame.
    hinge_forces : (n, 3) ndarray
        ``f_j`` [N], inertial frame: the force the child exerts on the parent at the hinge
        point (seed sign: positive on the initial vertex ``j+``); the child receives ``-f_j``.
    constraint_torques : (n, 3) ndarray
        ``g^c_j = Q_j lambda_j`` [M eq. 53] [N m]: the constraint moment on the parent about
        the hinge point (no component along a revolute axis, ``P^T g^c = 0`` of [M eq. 54]).
    hinge_points : (n, 3) ndarray
        ``o_j``: the child body frame origin (on the axis of a revolute joint), inertial [m].
    multipliers : (m,) ndarray
        The raw Lagrange multipliers, ``6 - nv_j`` per joint (see :func:`tree_rows`), then 6
        for the base hinge ``h_0`` when the base is fixed or prescribed.
    root_wrench : (6,) ndarray or None
        ``[F; T]`` [N, N m] the external body (ground or prescribing body, [M Remark 3]) exerts on
        the base at the base CoM, inertial frame; None for a free-floating base.
    """

    a: np.ndarray
    body_accelerations: np.ndarray
    hinge_forces: np.ndarray
    constraint_torques: np.ndarray
    hinge_points: np.ndarray
    multipliers: np.ndarray
    root_wrench: np.ndarray | None


def check_method(method: str) -> None:
    """Refuse a tree solver name that is not one of :data:`METHODS`.

    Raises
    ------
    ValueError
        ``method`` is not ``'kkt'``, ``'nullspace'`` or ``'multipliers'``.
    """
    if method not in METHODS:
        raise ValueError(f'method: expected one of {METHODS}, got {method!r}')


def checked_inputs(
    model: Model,
    q: ArrayLike,
    v: ArrayLike,
    tau: ArrayLike,
    base_wrench: ArrayLike | None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray | None]:
    """``(q, v, tau, base_wrench)`` as float arrays of the model's sizes.

    Raises
    ------
    ValueError
        A wrong size (naming expected and got), or a base wrench on a fixed-base model.
    """
    bw = None
    if base_wrench is not None:
        if not model.floating_base:
            raise ValueError('base_wrench: expected a floating-base model, got a fixed-base one')
        bw = as_vector(base_wrench, 6, 'base_wrench')
    return as_q(model, q), as_v(model, v), as_vector(tau, model.n, 'tau'), bw


def checked_state(
    model: Model,
    q: ArrayLike,
    v: ArrayLike,
    tau: ArrayLike,
    base_wrench: ArrayLike | None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray | None]:
    """:func:`checked_inputs`, each checked finite and the quaternions of ``q`` non-zero (the
    NumPy/SciPy solvers would fail on such a state with errors naming no argument: a singular
    Lagrangian matrix, eigenvalues that did not converge).

    Parameters
    ----------
    model, q, v, tau, base_wrench : as :func:`maximal_dynamics` (shapes (nq,), (nv,), (n,), (6,)).

    Raises
    ------
    ValueError
        As :func:`checked_inputs`, or naming the argument that is not finite or the zero
        quaternion.
    """
    q, v, tau, bw = checked_inputs(model, q, v, tau, base_wrench)
    require_state(model, q=q, v=v, tau=tau, base_wrench=bw)
    return q, v, tau, bw


def hinge_wrenches(
    model: Model, bd: Bodies, rows: Rows, lam: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``f_j`` [N], ``g^c_j`` (about ``o_j``) [N m] on the parent, and ``o_j`` [m], (n, 3) each,
    inertial frame, from ``rows`` and their multipliers ``lam`` (m,) (the tree rows first)."""
    n = model.arrays.parent.shape[0] - 1
    o, _ = joint_frames(model, bd)
    if n == 0:
        return np.zeros((0, 3)), np.zeros((0, 3)), o
    cnt = _rows_per_joint(model)
    m = int(cnt.sum())
    wa = np.zeros((n, 6))  # about the parent CoM
    np.add.at(wa, np.repeat(np.arange(n), cnt), rows.Ga[:m] * lam[:m, None])
    f = wa[:, :3]
    par = model.arrays.parent[1:]
    g = wa[:, 3:] - cross(o - bd.c[par], f)
    return f, g, o


def maximal_dynamics(
    model: Model,
    q: ArrayLike,
    v: ArrayLike,
    tau: ArrayLike,
    *,
    base_wrench: ArrayLike | None = None,
    link_wrenches: Mapping[str, ArrayLike] | None = None,
    base_acceleration: ArrayLike | None = None,
    method: str = 'kkt',
) -> MaximalSolution:
    """Forward dynamics in maximal coordinates [M eqs. 10, 49; Remarks 3, 5].

    Assembles ``J = diag(m_i E, I_i)``, the applied forces ``u``, the ``5 n`` joint rows and,
    for a fixed or prescribed base, the 6 rows of the base hinge ``h_0``; solves the sparse
    Lagrangian system (``method='kkt'``), its null-space form (``'nullspace'``, [M eq. 40-c],
    ``Z`` from a QR of ``G^T``, [M Appendix case 1]) or its multiplier form (``'multipliers'``,
    [M eqs. 12-14, 50]: the body accelerations eliminated with the closed-form per-body
    ``J^-1``, the sparse ``(G J^-1 G^T) lambda = b - G J^-1 u`` solved for the hinge forces and
    constraint torques, the accelerations recovered by [M eqs. 12-13]), and recovers the joint
    accelerations.

    Parameters
    ----------
    model : Model
    q : (nq,) configuration [m, -, rad | m] (conventions of :mod:`..model`).
    v : (nv,) velocity ``[V0, w0, phidot]``, base parts inertial frame [m/s, rad/s, rad/s | m/s].
    tau : (n,) joint efforts [N m | N] (joint friction is added when the model enables it).
    base_wrench : (6,) array_like, optional
        ``[F; T]`` at the base CoM, inertial frame [N, N m]; floating-base models only.
    link_wrenches : dict, optional
        ``{link: (6,) [f; n]}`` at each link frame's origin, inertial frame [N, N m].
    base_acceleration : (6,) array_like, optional
        Prescribed ``[dV0; dw0]`` of the base ([M Remark 3]; floating-base models only): the base
        pose and twist are those in ``q`` and ``v``, the base acceleration is imposed, and
        ``root_wrench`` is the wrench needed to impose it. A fixed base is prescribed zero
        motion.
    method : {'kkt', 'nullspace', 'multipliers'}

    Returns
    -------
    MaximalSolution

    Raises
    ------
    ValueError
        Wrong sizes, an unknown method, a base wrench or prescribed base acceleration on a
        fixed-base model.
    """
    check_method(method)
    q, v, tau, bw = checked_state(model, q, v, tau, base_wrench)
    presc = None
    if base_acceleration is not None:
        if not model.floating_base:
            raise ValueError(
                'base_acceleration: expected a floating-base model, got a fixed-base one '
                '(whose base is already prescribed at rest)'
            )
        presc = as_vector(base_acceleration, 6, 'base_acceleration')
        require_state(model, base_acceleration=presc)
    elif not model.floating_base:
        presc = np.zeros(6)
    bd = bodies(model, q, v)
    u = applied_forces(model, bd, effective_efforts(model, v, tau), bw, link_wrenches)
    parts = [tree_rows(model, bd)]
    if presc is not None:
        parts.append(root_rows(presc))
    rows = Rows.concat(parts)
    nb = model.arrays.parent.shape[0]
    J = block_mass_matrix(bd.mass, bd.inertia)
    x, lam, _ = solve_lagrangian(J, rows.matrix(nb), u.ravel(), rows.rhs, method)
    X = x.reshape(nb, 6)
    acc = joint_accelerations(model, q, bd, X)
    if presc is not None and model.floating_base:
        acc[:6] = presc
    f, g, o = hinge_wrenches(model, bd, rows, lam)
    root = -lam[-6:].copy() if presc is not None else None
    return MaximalSolution(acc, X, f, g, o, lam, root)


def joint_reactions(
    model: Model,
    q: ArrayLike,
    v: ArrayLike,
    tau: ArrayLike,
    *,
    base_wrench: ArrayLike | None = None,
    link_wrenches: Mapping[str, ArrayLike] | None = None,
    method: str = 'kkt',
) -> dict[str, np.ndarray]:
    """Total wrench each moving joint transmits, from the Lagrange multipliers [M eq. 49].

    Parameters
    ----------
    model : Model
    q : (nq,) configuration [m, -, rad | m].
    v : (nv,) velocity ``[V0, w0, phidot]``, base parts inertial frame [m/s, rad/s, rad/s | m/s].
    tau : (n,) joint efforts [N m | N].
    base_wrench : (6,) optional, ``[F; T]`` at the base CoM, inertial frame [N, N m].
    link_wrenches : dict, optional, ``{link: (6,) [f; n]}`` at link origins, inertial [N, N m].
    method : as :func:`maximal_dynamics`.

    Returns
    -------
    dict[str, (6,) ndarray]
        ``{joint name: [f; n]}``: the wrench the parent body exerts on the child body, at the
        joint origin (the hinge point ``o_j``, i.e. the child body's frame origin -- for a
        prismatic joint the point of the child that slides along the axis), inertial frame
        [N, N m]. It is the constraint part (``-f_j``, ``-g^c_j``) plus the actuation
        (:func:`actuation`: ``tau k`` as a torque, or as a force for a prismatic joint, the
        child-frame torque of a spherical joint; joint friction included when enabled).
        Links welded by fixed joints are merged into bodies, so a fixed joint has no entry:
        the wrench across it is internal to a body. The key is the *moving* joint into the
        body; the parent is the body (merged links) carrying that joint's parent link.
    """
    sol = maximal_dynamics(
        model, q, v, tau, base_wrench=base_wrench, link_wrenches=link_wrenches, method=method
    )
    q = as_q(model, q)
    v = as_v(model, v)
    tau_eff = effective_efforts(model, v, as_vector(tau, model.n, 'tau'))
    bd = bodies(model, q, v)
    force, torque = actuation(model, bd, tau_eff)
    out = {}
    for j, name in enumerate(model.joint_names):
        f = -sol.hinge_forces[j] + force[j]
        nm = -sol.constraint_torques[j] + torque[j]
        out[name] = np.concatenate((f, nm))
    return out


# ----------------------------------------------------------------------------------------------
# prescribed-motion base [M Remark 3]
# ----------------------------------------------------------------------------------------------

#: ``motion(t) -> (q_base (7,), v_base (6,), a_base (6,))``: base CoM position, attitude
#: quaternion (x, y, z, w), ``[V0; w0]`` and ``[dV0; dw0]`` at time ``t``, inertial frame.
BaseMotion = Callable[[float], tuple[ArrayLike, ArrayLike, ArrayLike]]


#: The models a prescribed base motion takes: the joint angles ``phi`` are the rest of ``q``.
_PRESCRIBED_MODEL = (
    'model: expected a floating-base model with joints of one coordinate each (nq = 7 + n: no '
    'spherical joint, whose orientation is no angle)'
)


def prescribed_base_dynamics(
    model: Model,
    motion: BaseMotion,
    t: float,
    phi: ArrayLike,
    phidot: ArrayLike,
    tau: ArrayLike,
    *,
    link_wrenches: Mapping[str, ArrayLike] | None = None,
    method: str = 'kkt',
) -> MaximalSolution:
    """Joint accelerations with the base motion a given function of time [M Remark 3].

    The base is welded to an external body ``b_0`` whose motion is prescribed: its 6 rows
    replace the base's unknown accelerations by ``motion(t)``'s, and ``root_wrench`` is the
    wrench ``b_0`` must exert on the base (at its CoM) to impose that motion.

    Parameters
    ----------
    model : Model
        A floating-base model (its base is the prescribed body).
    motion : callable
        ``motion(t) -> (q_base, v_base, a_base)``, see :data:`BaseMotion`.
    t : float [s];  phi, phidot : (n,) joint positions [rad | m] and rates [rad/s | m/s];
    tau : (n,) joint efforts [N m | N];  method : as :func:`maximal_dynamics`.
    link_wrenches : dict, optional, ``{link: (6,) [f; n]}`` at link origins, inertial [N, N m].

    Returns
    -------
    MaximalSolution
        ``a = [dV0, dw0, phiddot]`` with the prescribed base part.
    """
    if not model.floating_base or model.nq != 7 + model.n:
        raise ValueError(_PRESCRIBED_MODEL + f', got nq = {model.nq}, n = {model.n}')
    qb, vb, ab = motion(real_number(t, 't'))
    q = np.concatenate((as_vector(qb, 7, 'motion q_base'), as_vector(phi, model.n, 'phi')))
    v = np.concatenate((as_vector(vb, 6, 'motion v_base'), as_vector(phidot, model.n, 'phidot')))
    return maximal_dynamics(
        model,
        q,
        v,
        tau,
        link_wrenches=link_wrenches,
        base_acceleration=as_vector(ab, 6, 'motion a_base'),
        method=method,
    )


def simulate_prescribed_base(
    model: Model,
    motion: BaseMotion,
    phi0: ArrayLike,
    phidot0: ArrayLike,
    tau: ArrayLike | Callable[[float, np.ndarray, np.ndarray], ArrayLike],
    t_final: float,
    dt: float,
    *,
    method: str = 'kkt',
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Integrate the joints of a robot on a prescribed-motion base [M Remark 3] by the package's
    RK4 scheme (:func:`ffsim_ros.dynamics.rk4_step`; the base of each stage state is taken
    from ``motion``, only the joint parts are integrated).

    Parameters
    ----------
    model, motion, method : as :func:`prescribed_base_dynamics`.
    phi0, phidot0 : (n,) initial joint positions [rad | m] and rates [rad/s | m/s].
    tau : (n,) constant joint efforts [N m | N], or ``tau(t, phi, phidot) -> (n,)``.
    t_final, dt : float [s]; ``t_final / dt`` steps (rounded); ``t_final`` finite, >= 0.

    Returns
    -------
    t : (k + 1,) ;  phi : (k + 1, n) ;  phidot : (k + 1, n)
    """
    dt = positive_step(dt)
    if not model.floating_base or model.nq != 7 + model.n:
        raise ValueError(_PRESCRIBED_MODEL + f', got nq = {model.nq}, n = {model.n}')
    steps = step_count(t_final, dt)
    n = model.n
    if callable(tau):
        effort = tau
    else:
        const = as_vector(tau, n, 'tau')

        def effort(_t: float, _p: np.ndarray, _v: np.ndarray) -> np.ndarray:
            return const

    def acceleration(t: float, q: np.ndarray, v: np.ndarray) -> np.ndarray:
        p, pd = q[7:], v[6:]
        return prescribed_base_dynamics(model, motion, t, p, pd, effort(t, p, pd), method=method).a

    qb, vb, _ = motion(0.0)
    q = np.concatenate((as_vector(qb, 7, 'motion q_base'), as_vector(phi0, n, 'phi0')))
    v = np.concatenate((as_vector(vb, 6, 'motion v_base'), as_vector(phidot0, n, 'phidot0')))
    ts = np.arange(steps + 1) * dt
    phi = np.empty((steps + 1, n))
    phidot = np.empty((steps + 1, n))
    phi[0], phidot[0] = q[7:], v[6:]
    for s in range(steps):
        q, v = rk4_step(model, q, v, dt, acceleration, t=ts[s])
        phi[s + 1], phidot[s + 1] = q[7:], v[6:]
    return ts, phi, phidot
