"""Analytical derivatives of the inverse dynamics (RNEA) on the configuration manifold, in the
inertial frame at O (Carpentier & Mansard 2018, "Analytical derivatives of rigid body dynamics
algorithms", in the world-frame form Pinocchio uses), for every joint type of the package.

Tangent convention. ``q`` is perturbed by ``integrate(q, dq)``: base CoM ``r0 + dq[0:3]``,
base attitude turned by the inertial-frame rotation vector ``dq[3:6]`` about the base CoM
(``Q <- exp(dq) Q``), a ball joint by its child-frame rotation vector (``Q <- Q exp(dq)``),
the other coordinates additive. Perturbing DoF ``a`` then moves every body of its subtree
rigidly by the twist ``S_a dq_a`` (``S_a`` the DoF's motion-subspace column at O): the
configuration Jacobian equals the velocity one, so the derivatives are those of the
velocity-level recursions.

Derivation (every quantity a spatial vector at O, ``x`` the motion cross product, ``x*`` the
force one). A quantity fixed in a moved body varies by ``S_a x`` (motions), ``S_a x*``
(forces) and ``S_a x* I - I S_a x`` (inertias). The body velocities and accelerations vary by
more than that, by the same amount for every body of the subtree:

* ``d v_i / dq_a = S_a x v_i + dV_a``, ``dV_a = v_pre x S_a``;
* ``d a_i / dq_a = S_a x a_i + dV_a x v_i + dA_a``, ``dA_a = a_pre x S_a + v_pre x dV_a``;
* ``d v_i / dv_a = S_a``, ``d a_i / dv_a = S_a x v_i + dAv_a``,
  ``dAv_a = v_pre x S_a + v_car x S_a``;

where ``pre`` is the frame moving just before DoF ``a`` (the parent body; for the second axis
of a universal joint and the base rotation, the child body itself; the world for the base
translation: ``dV = dA = dAv = 0``) and ``car`` the frame the column ``S_a`` is fixed in (the
child body; the parent for a universal joint's first axis; the CoM-translating frame
``[V0; 0]`` for the base rotation columns, whose axes stay parallel to the inertial ones).
The body forces ``f = I a + v x* I v`` then vary by
``S_a x* f + I (dV_a x v + dA_a) + B dV_a`` with ``B = v x* I - I v x + (I v)-bar`` the
velocity-variation matrix, which at O reduces to ``[[0, -2 [P]x], [0, Q]]`` (``P`` the body's
linear momentum, ``Q`` (3, 3) below). Summed over subtrees (composites ``Ic``, ``Bc``,
``F``), with ``tau_b = S_b . F_j``::

    dtau_b/dq_a = S_b . (Ic_j dA_a + Bc_j dV_a)           a above or at b's joint j
                  (+ S_b . (S_a x* F_j)  a of the same joint that does not move S_b)
    dtau_b/dq_a = S_b . (S_a x* F_k + Ic_k dA_a + Bc_k dV_a)  a of a joint k below j
    dtau_b/dv_a = S_b . (Bc_m S_a + Ic_m dAv_a)          m the lower of the two joints

Passes (named, each over the tree once): :func:`bias_pass` (root to leaves: velocities, bias
accelerations and forces, ``B`` blocks), :func:`composite_pass` (leaves to root: composite
inertias and forces, the bias forces ``c``, the inertia matrix ``H``),
:func:`acceleration_pass` (root to leaves: the accelerations of ``a`` and the per-DoF
``dV``, ``dA``, ``dAv``), :func:`derivative_pass` (leaves to root: the derivatives).
"""

from __future__ import annotations

import numpy as np

from ..jit import carve, njit, njit_leaf
from .kinematics import (
    joint_velocity,
    kinematics_into,
    kinematics_views,
    kinematics_ws_size,
    velocity_product,
)
from .layout import ROOT_FREE, UNIVERSAL, ModelArrays
from .ltl import dof_parents, ltl_factor, ltl_solve
from .spatial import col6, force_cross, inertia_times, motion_cross, row6

#: Regularization speed of the Coulomb friction ``tanh(v / eps)`` [rad/s | m/s] (as in
#: :func:`.friction.joint_friction`).
COULOMB_EPS = 1e-3


@njit_leaf
def dot6(x: tuple, y: tuple) -> float:
    """``x . y`` of two 6-tuples."""
    return x[0] * y[0] + x[1] * y[1] + x[2] * y[2] + x[3] * y[3] + x[4] * y[4] + x[5] * y[5]


@njit_leaf
def add6(x: tuple, y: tuple) -> tuple:
    """``x + y`` of two 6-tuples."""
    return (x[0] + y[0], x[1] + y[1], x[2] + y[2], x[3] + y[3], x[4] + y[4], x[5] + y[5])


@njit_leaf
def put6(X: np.ndarray, i: int, x: tuple) -> None:
    """``X[i, :] = x`` for a 6-tuple."""
    for r in range(6):
        X[i, r] = x[r]


@njit_leaf
def velocity_variation(P: np.ndarray, Q: np.ndarray, i: int, x: tuple) -> tuple:
    """``B x`` for ``B = [[0, -2 [P_i]x], [0, Q_i]]`` (the module's velocity-variation matrix,
    body or composite): ``[-2 P x x_w; Q x_w]``."""
    w0 = x[3]
    w1 = x[4]
    w2 = x[5]
    return (
        -2.0 * (P[i, 1] * w2 - P[i, 2] * w1),
        -2.0 * (P[i, 2] * w0 - P[i, 0] * w2),
        -2.0 * (P[i, 0] * w1 - P[i, 1] * w0),
        Q[i, 0, 0] * w0 + Q[i, 0, 1] * w1 + Q[i, 0, 2] * w2,
        Q[i, 1, 0] * w0 + Q[i, 1, 1] * w1 + Q[i, 1, 2] * w2,
        Q[i, 2, 0] * w0 + Q[i, 2, 1] * w1 + Q[i, 2, 2] * w2,
    )


@njit_leaf
def velocity_variation_row(P: np.ndarray, Q: np.ndarray, i: int, s: tuple) -> tuple:
    """``B^T s`` (the row ``s^T B``) for the matrix of :func:`velocity_variation`:
    ``[0; 2 P x s_v + Q^T s_w]``."""
    return (
        0.0,
        0.0,
        0.0,
        2.0 * (P[i, 1] * s[2] - P[i, 2] * s[1])
        + Q[i, 0, 0] * s[3]
        + Q[i, 1, 0] * s[4]
        + Q[i, 2, 0] * s[5],
        2.0 * (P[i, 2] * s[0] - P[i, 0] * s[2])
        + Q[i, 0, 1] * s[3]
        + Q[i, 1, 1] * s[4]
        + Q[i, 2, 1] * s[5],
        2.0 * (P[i, 0] * s[1] - P[i, 1] * s[0])
        + Q[i, 0, 2] * s[3]
        + Q[i, 1, 2] * s[4]
        + Q[i, 2, 2] * s[5],
    )


@njit_leaf
def moves_column(jt: int, ta: int, tb: int) -> bool:
    """Whether perturbing DoF ``ta`` of a joint of type ``jt`` moves the frame its column
    ``tb`` is fixed in (its local indices). Not so for the first axis of a universal joint
    (fixed in the parent) nor the base columns, except the rotation ones under a translation;
    the other joints' columns are fixed in the child."""
    if jt == ROOT_FREE:
        return tb >= 3 and ta < 3
    if jt == UNIVERSAL:
        return tb == 1
    return True


@njit
def derivatives_ws_size(nb: int, nv: int) -> int:
    """Length of the workspace of :func:`dynamics_derivatives_into`."""
    return kinematics_ws_size(nb, nv) + 55 * nb + 30 * nv


@njit
def bias_pass(
    m: ModelArrays,
    v: np.ndarray,
    S: np.ndarray,
    mw: np.ndarray,
    hw: np.ndarray,
    Iw: np.ndarray,
    vel: np.ndarray,
    acc: np.ndarray,
    frc: np.ndarray,
    Pc: np.ndarray,
    Qc: np.ndarray,
    mc: np.ndarray,
    hc: np.ndarray,
    Ic: np.ndarray,
) -> None:
    """Pass 1, root to leaves, at ``a = 0``.

    Parameters
    ----------
    vel, acc, frc : (nb, 6) outputs: body velocities, accelerations (gravity offset
        ``[-g; 0]`` and velocity products) and forces ``I a + v x* I v``, at O.
    Pc, Qc : (nb, 3), (nb, 3, 3) outputs: the blocks ``P`` (linear momentum) and
        ``Q = [w]x Ib - Ib [w]x - (h v^T + v h^T) + 2 (v . h) E - [L]x`` of each body's
        velocity-variation matrix (``h`` the first moment, ``L`` the angular momentum at O).
    mc, hc, Ic : (nb,), (nb, 3), (nb, 3, 3) outputs: copies of the body inertias (made
        composite by :func:`composite_pass`).
    """
    g = m.gravity
    for i in range(m.parent.shape[0]):
        k = m.parent[i]
        iv = m.iv[i]
        sv = joint_velocity(S, iv, m.nvj[i], v)
        for r in range(6):
            vel[i, r] = (vel[k, r] if k >= 0 else 0.0) + sv[r]
        vi = row6(vel, i)
        cb = velocity_product(m.jtype[i], iv, vi, sv, S, v)
        for r in range(6):
            if k >= 0:
                acc[i, r] = acc[k, r] + cb[r]
            else:
                acc[i, r] = (-g[r] if r < 3 else 0.0) + cb[r]
        mi = mw[i]
        mom = inertia_times(mi, hw, Iw, i, vi)
        put6(frc, i, add6(inertia_times(mi, hw, Iw, i, row6(acc, i)), force_cross(vi, mom)))
        w = (vi[3], vi[4], vi[5])
        vh = vi[0] * hw[i, 0] + vi[1] * hw[i, 1] + vi[2] * hw[i, 2]
        mc[i] = mi
        for r in range(3):
            Pc[i, r] = mom[r]
            hc[i, r] = hw[i, r]
            r1 = (r + 1) % 3
            r2 = (r + 2) % 3
            for c in range(3):
                Ic[i, r, c] = Iw[i, r, c]
                c1 = (c + 1) % 3
                c2 = (c + 2) % 3
                # ([w]x Ib)[r, c] - (Ib [w]x)[r, c]
                q = (w[r1] * Iw[i, r2, c] - w[r2] * Iw[i, r1, c]) - (
                    Iw[i, r, c1] * w[c2] - Iw[i, r, c2] * w[c1]
                )
                q -= hw[i, r] * vi[c] + vi[r] * hw[i, c]
                if r == c:
                    q += 2.0 * vh
                elif c == r1:  # -[L]x: -(-L[r2]) at (r, r+1)
                    q += mom[3 + r2]
                else:  # c == r2: -(L[r1])
                    q -= mom[3 + r1]
                Qc[i, r, c] = q


@njit
def composite_pass(
    m: ModelArrays,
    S: np.ndarray,
    frc: np.ndarray,
    Pc: np.ndarray,
    Qc: np.ndarray,
    mc: np.ndarray,
    hc: np.ndarray,
    Ic: np.ndarray,
    r1: np.ndarray,
    r2: np.ndarray,
    tau: np.ndarray,
    H: np.ndarray,
) -> None:
    """Pass 2, leaves to root: composites, bias forces, inertia matrix.

    Folds ``frc``, ``Pc``/``Qc`` and ``mc``/``hc``/``Ic`` of each body into its parent (the
    subtree sums at O), and for each DoF ``b`` of body ``j``: ``tau[b] = S_b . F_j`` (the bias
    forces ``c``), the rows ``r1[b] = Ic_j S_b`` and ``r2[b] = Bc_j^T S_b`` (nv, 6), and
    ``H[b, a] = H[a, b] = r1[b] . S_a`` for ``a`` above or at ``b`` [S0 eqs. 24-27] (``H``
    zero on entry: entries of DoFs on different branches stay zero).
    """
    for i in range(m.parent.shape[0] - 1, -1, -1):
        c0 = m.iv[i]
        fi = row6(frc, i)
        for b in range(c0, c0 + m.nvj[i]):
            sb = col6(S, b)
            tau[b] = dot6(sb, fi)
            rb = inertia_times(mc[i], hc, Ic, i, sb)
            put6(r1, b, rb)
            put6(r2, b, velocity_variation_row(Pc, Qc, i, sb))
            j = i
            while j >= 0:
                for a in range(m.iv[j], m.iv[j] + m.nvj[j]):
                    val = dot6(rb, col6(S, a))
                    H[b, a] = val
                    H[a, b] = val
                j = m.parent[j]
        k = m.parent[i]
        if k >= 0:
            mc[k] += mc[i]
            for r in range(6):
                frc[k, r] += frc[i, r]
            for r in range(3):
                hc[k, r] += hc[i, r]
                Pc[k, r] += Pc[i, r]
                for c in range(3):
                    Ic[k, r, c] += Ic[i, r, c]
                    Qc[k, r, c] += Qc[i, r, c]


@njit
def acceleration_pass(
    m: ModelArrays,
    v: np.ndarray,
    a: np.ndarray,
    S: np.ndarray,
    mw: np.ndarray,
    hw: np.ndarray,
    Iw: np.ndarray,
    vel: np.ndarray,
    acc: np.ndarray,
    dacc: np.ndarray,
    dfrc: np.ndarray,
    dV: np.ndarray,
    dA: np.ndarray,
    dAv: np.ndarray,
) -> None:
    """Pass 3, root to leaves: the accelerations ``a`` and the per-DoF variations.

    Parameters
    ----------
    a : (nv,) generalized acceleration.
    acc : (nb, 6) in: bias accelerations; out: with ``a``.
    dacc, dfrc : (nb, 6) outputs: ``sum S a`` down to each body and ``I_i`` times it.
    dV, dA, dAv : (nv, 6) outputs: the module's ``dV_a``, ``dA_a``, ``dAv_a`` per DoF.
    """
    for i in range(m.parent.shape[0]):
        k = m.parent[i]
        c0 = m.iv[i]
        nj = m.nvj[i]
        jt = m.jtype[i]
        sa = joint_velocity(S, c0, nj, a)
        for r in range(6):
            d = (dacc[k, r] if k >= 0 else 0.0) + sa[r]
            dacc[i, r] = d
            acc[i, r] += d
        put6(dfrc, i, inertia_times(mw[i], hw, Iw, i, row6(dacc, i)))
        vi = row6(vel, i)
        ai = row6(acc, i)
        for t in range(nj):
            c = c0 + t
            s = col6(S, c)
            if jt == ROOT_FREE:
                if t < 3:  # translation: the columns and the bodies move alike
                    for r in range(6):
                        dV[c, r] = 0.0
                        dA[c, r] = 0.0
                        dAv[c, r] = 0.0
                    continue
                vp = vi
                ap = ai
                vc = (v[c0], v[c0 + 1], v[c0 + 2], 0.0, 0.0, 0.0)
            elif jt == UNIVERSAL and t == 1:
                vp = vi
                ap = ai
                vc = vi
            elif jt == UNIVERSAL:
                vp = row6(vel, k)
                ap = row6(acc, k)
                vc = vp
            else:
                vp = row6(vel, k)
                ap = row6(acc, k)
                vc = vi
            dv = motion_cross(vp, s)
            put6(dV, c, dv)
            put6(dA, c, add6(motion_cross(ap, s), motion_cross(vp, dv)))
            put6(dAv, c, add6(dv, motion_cross(vc, s)))


@njit
def derivative_pass(
    m: ModelArrays,
    S: np.ndarray,
    frc: np.ndarray,
    dfrc: np.ndarray,
    Pc: np.ndarray,
    Qc: np.ndarray,
    mc: np.ndarray,
    hc: np.ndarray,
    Ic: np.ndarray,
    r1: np.ndarray,
    r2: np.ndarray,
    dV: np.ndarray,
    dA: np.ndarray,
    dAv: np.ndarray,
    tau: np.ndarray,
    dq: np.ndarray,
    dv: np.ndarray,
) -> None:
    """Pass 4, leaves to root: ``tau`` and its derivatives (module docstring).

    Parameters
    ----------
    frc : (nb, 6) composite bias forces;  dfrc : (nb, 6) in: body forces of ``a``, folded
        into the parents here.
    tau : (nv,) in: bias forces; out: ``c + H a``.
    dq, dv : (nv, nv) outputs, zero on entry.
    """
    for i in range(m.parent.shape[0] - 1, -1, -1):
        c0 = m.iv[i]
        nj = m.nvj[i]
        jt = m.jtype[i]
        fi = add6(row6(frc, i), row6(dfrc, i))
        for b in range(c0, c0 + nj):
            sb = col6(S, b)
            tau[b] += dot6(sb, row6(dfrc, i))
            rb1 = row6(r1, b)
            rb2 = row6(r2, b)
            j = i
            while j >= 0:
                for a in range(m.iv[j], m.iv[j] + m.nvj[j]):
                    dq[b, a] = dot6(rb1, row6(dA, a)) + dot6(rb2, row6(dV, a))
                    dv[b, a] = dot6(rb2, col6(S, a)) + dot6(rb1, row6(dAv, a))
                j = m.parent[j]
            for a in range(c0, c0 + nj):
                if not moves_column(jt, a - c0, b - c0):
                    dq[b, a] += dot6(sb, force_cross(col6(S, a), fi))
        k = m.parent[i]
        for a in range(c0, c0 + nj):
            sa = col6(S, a)
            dfq = add6(
                add6(
                    inertia_times(mc[i], hc, Ic, i, row6(dA, a)),
                    velocity_variation(Pc, Qc, i, row6(dV, a)),
                ),
                force_cross(sa, fi),
            )
            dfv = add6(
                velocity_variation(Pc, Qc, i, sa), inertia_times(mc[i], hc, Ic, i, row6(dAv, a))
            )
            j = k
            while j >= 0:
                for b in range(m.iv[j], m.iv[j] + m.nvj[j]):
                    sb = col6(S, b)
                    dq[b, a] = dot6(sb, dfq)
                    dv[b, a] = dot6(sb, dfv)
                j = m.parent[j]
        if k >= 0:
            for r in range(6):
                dfrc[k, r] += dfrc[i, r]


@njit
def dynamics_derivatives_into(
    m: ModelArrays,
    q: np.ndarray,
    v: np.ndarray,
    a: np.ndarray,
    gen: np.ndarray,
    with_friction: bool,
    tau: np.ndarray,
    H: np.ndarray,
    dq: np.ndarray,
    dv: np.ndarray,
    lam: np.ndarray,
    ws: np.ndarray,
) -> None:
    """The inverse dynamics and its derivatives at ``(q, v, a)``; or, given a generalized
    force ``gen``, at the forward-dynamics accelerations ``a = H^-1 (gen + F_f - c)`` (written
    to ``a``).

    Parameters
    ----------
    a : (nv,) in (``gen`` empty) or out (``gen`` given).
    gen : (nv,) generalized force ``[F_b; tau]``, or an empty (0,) array for the inverse
        dynamics at the given ``a`` (a run-time choice: one compiled signature for both).
    with_friction : the joint friction ``F_f`` [S0 eq. 41] is part of the dynamics:
        ``tau = H a + c - F_f``.
    tau : (nv,) output ``H a + c - F_f``.
    H : (nv, nv) output, the inertia matrix; with ``gen``, its lower triangle holds the
        factor ``L`` of :func:`.ltl.ltl_factor` instead (the strict upper triangle keeps
        ``H``).
    dq, dv : (nv, nv) outputs: ``d tau / dq`` (tangent convention of the module) and
        ``d tau / dv``.
    lam : (nv,) int64 output, the DoF parents (:func:`.ltl.dof_parents`).
    ws : (derivatives_ws_size(nb, nv),) scratch.
    """
    nb = m.parent.shape[0]
    nv = v.shape[0]
    R, p, S, mw, hw, Iw, T = kinematics_views(ws, nb, nv)
    kinematics_into(m, q, R, p, S, mw, hw, Iw, T)
    o = kinematics_ws_size(nb, nv)
    vel = carve(ws, o, (nb, 6))
    acc = carve(ws, o + 6 * nb, (nb, 6))
    frc = carve(ws, o + 12 * nb, (nb, 6))
    dacc = carve(ws, o + 18 * nb, (nb, 6))
    dfrc = carve(ws, o + 24 * nb, (nb, 6))
    Pc = carve(ws, o + 30 * nb, (nb, 3))
    Qc = carve(ws, o + 33 * nb, (nb, 3, 3))
    mc = ws[o + 42 * nb : o + 43 * nb]
    hc = carve(ws, o + 43 * nb, (nb, 3))
    Ic = carve(ws, o + 46 * nb, (nb, 3, 3))
    o += 55 * nb
    dV = carve(ws, o, (nv, 6))
    dA = carve(ws, o + 6 * nv, (nv, 6))
    dAv = carve(ws, o + 12 * nv, (nv, 6))
    r1 = carve(ws, o + 18 * nv, (nv, 6))
    r2 = carve(ws, o + 24 * nv, (nv, 6))
    for r in range(nv):
        for c in range(nv):
            H[r, c] = 0.0
            dq[r, c] = 0.0
            dv[r, c] = 0.0
    dof_parents(m, lam)
    bias_pass(m, v, S, mw, hw, Iw, vel, acc, frc, Pc, Qc, mc, hc, Ic)
    composite_pass(m, S, frc, Pc, Qc, mc, hc, Ic, r1, r2, tau, H)
    if gen.shape[0] > 0:
        ltl_factor(H, lam)
        for c in range(nv):
            a[c] = gen[c] - tau[c]
            if with_friction:
                a[c] -= m.damping[c] * v[c] + m.friction[c] * np.tanh(v[c] / COULOMB_EPS)
        ltl_solve(H, lam, a)
    acceleration_pass(m, v, a, S, mw, hw, Iw, vel, acc, dacc, dfrc, dV, dA, dAv)
    derivative_pass(m, S, frc, dfrc, Pc, Qc, mc, hc, Ic, r1, r2, dV, dA, dAv, tau, dq, dv)
    if with_friction:  # tau includes -F_f = d v + f_c tanh(v / eps)
        for c in range(nv):
            th = np.tanh(v[c] / COULOMB_EPS)
            tau[c] += m.damping[c] * v[c] + m.friction[c] * th
            dv[c, c] += m.damping[c] + m.friction[c] / COULOMB_EPS * (1.0 - th * th)
