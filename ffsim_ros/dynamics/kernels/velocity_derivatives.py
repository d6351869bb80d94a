"""Derivatives of a link's velocity under zero momentum, ``J*(q) phidot`` (the generalized
Jacobian of Yoshida & Umetani), with respect to ``q`` (tangent convention of
:mod:`.rnea_derivatives`) and ``phidot``.

Under zero total momentum the base moves with ``x0dot = -H0^-1 H0m phidot`` [S0 eq. 21], and
the link velocity is ``J(q) v`` with ``v = [x0dot; phidot]`` [S0 eq. 5]. Hence::

    d(J* phidot)/dq = d(J v)/dq |_v  -  Js H0^-1 d(H v)_base/dq |_v
    d(J* phidot)/dphidot = J* = Jm - Js H0^-1 H0m

The base rows of ``H v`` are ``S_b . h`` with ``h = sum I_l v_l`` the system momentum at O;
perturbing DoF ``a`` (joint ``k``) varies it by ``S_a x* h_k + Ic_k dV_a`` (``h_k``, ``Ic_k``
the subtree momentum and inertia), and the link's velocity by ``S_a x v + dV_a`` and its
point by ``S_a``'s velocity there (``dV_a`` as in :mod:`.rnea_derivatives`).
"""

from __future__ import annotations

import numpy as np

from ..jit import carve, njit, njit_leaf
from .kinematics import joint_velocity, kinematics_into, kinematics_views, kinematics_ws_size
from .layout import ROOT_FREE, UNIVERSAL, unpack
from .ltl import ltl_factor, ltl_solve_rows
from .rnea_derivatives import dot6, moves_column, put6
from .spatial import col6, force_cross, inertia_times, motion_cross, row6


@njit_leaf
def point_velocity_column(S: np.ndarray, a: int, x: float, y: float, z: float) -> tuple:
    """``[s_v + s_w x p; s_w]``: the velocity of the point ``p = (x, y, z)`` and the angular
    velocity under the motion ``S[:, a]`` (6-tuple)."""
    return (
        S[0, a] + S[4, a] * z - S[5, a] * y,
        S[1, a] + S[5, a] * x - S[3, a] * z,
        S[2, a] + S[3, a] * y - S[4, a] * x,
        S[3, a],
        S[4, a],
        S[5, a],
    )


@njit
def e_generalized_velocity_derivatives(
    idata: np.ndarray,
    fdata: np.ndarray,
    q: np.ndarray,
    phidot: np.ndarray,
    body: int,
    point: np.ndarray,
    dq: np.ndarray,
    dphi: np.ndarray,
) -> None:
    """Entry point: ``d(J* phidot)/dq`` and ``J*`` of the point ``point`` (3,) fixed in body
    ``body`` (body-frame coordinates [m]); floating base only.

    Parameters
    ----------
    phidot : (n,) joint rates.
    dq : (6, nv) output, rows ``[linear velocity of the point; angular velocity]``,
        inertial frame.
    dphi : (6, n) output, ``J*``.
    """
    m = unpack(idata, fdata)
    nb = m.parent.shape[0]
    nv = phidot.shape[0] + 6
    n = nv - 6
    ws = np.empty(kinematics_ws_size(nb, nv) + 33 * nb + 12 * nv + 36 + 6 * (n + 1 + nv))
    R, p, S, mw, hw, Iw, T = kinematics_views(ws, nb, nv)
    kinematics_into(m, q, R, p, S, mw, hw, Iw, T)
    o = kinematics_ws_size(nb, nv)
    mc = ws[o : o + nb]
    hc = carve(ws, o + nb, (nb, 3))
    Ic = carve(ws, o + 4 * nb, (nb, 3, 3))
    vel = carve(ws, o + 13 * nb, (nb, 6))
    mom = carve(ws, o + 19 * nb, (nb, 6))
    hsub = carve(ws, o + 25 * nb, (nb, 6))
    o += 33 * nb
    r1 = carve(ws, o, (nv, 6))
    dV = carve(ws, o + 6 * nv, (nv, 6))
    H0 = carve(ws, o + 12 * nv, (6, 6))
    o += 12 * nv + 36
    X = carve(ws, o, (6, n + 1 + nv))  # [H0m | H0m phidot | d(Hv)_base/dq] -> solved by H0
    lam = np.empty(6, dtype=np.int64)
    for c in range(6):
        lam[c] = c - 1
    # composite inertias (leaves to root) and the base rows of H
    for i in range(nb):
        mc[i] = mw[i]
        for r in range(3):
            hc[i, r] = hw[i, r]
            for c in range(3):
                Ic[i, r, c] = Iw[i, r, c]
    for i in range(nb - 1, -1, -1):
        for a in range(m.iv[i], m.iv[i] + m.nvj[i]):
            put6(r1, a, inertia_times(mc[i], hc, Ic, i, col6(S, a)))
            for b in range(6):
                val = dot6(col6(S, b), row6(r1, a))
                if a < 6:
                    H0[b, a] = val
                else:
                    X[b, a - 6] = val
        k = m.parent[i]
        if k >= 0:
            mc[k] += mc[i]
            for r in range(3):
                hc[k, r] += hc[i, r]
                for c in range(3):
                    Ic[k, r, c] += Ic[i, r, c]
    ltl_factor(H0, lam)
    for b in range(6):
        s = 0.0
        for c in range(n):
            s += X[b, c] * phidot[c]
        X[b, n] = s
    ltl_solve_rows(H0, lam, X[:, : n + 1])
    # the zero-momentum velocity v = [-H0^-1 H0m phidot; phidot]
    v = np.empty(nv)
    for c in range(6):
        v[c] = -X[c, n]
    for c in range(n):
        v[6 + c] = phidot[c]
    for i in range(nb):
        k = m.parent[i]
        c0 = m.iv[i]
        sv = joint_velocity(S, c0, m.nvj[i], v)
        for r in range(6):
            vel[i, r] = (vel[k, r] if k >= 0 else 0.0) + sv[r]
        vi = row6(vel, i)
        put6(mom, i, inertia_times(mw[i], hw, Iw, i, vi))
        jt = m.jtype[i]
        for t in range(m.nvj[i]):
            c = c0 + t
            if jt == ROOT_FREE and t < 3:
                vp = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
            elif jt == ROOT_FREE or (jt == UNIVERSAL and t == 1):
                vp = vi
            else:
                vp = row6(vel, k)
            put6(dV, c, motion_cross(vp, col6(S, c)))
    for i in range(nb - 1, -1, -1):
        for r in range(6):
            hsub[i, r] = mom[i, r]
    for i in range(nb - 1, 0, -1):
        for r in range(6):
            hsub[m.parent[i], r] += hsub[i, r]
    # d (H v)_base / dq: base rows b, every DoF a (joint j)
    for j in range(nb):
        hj = row6(hsub, j)
        for a in range(m.iv[j], m.iv[j] + m.nvj[j]):
            sa = col6(S, a)
            dh = inertia_times(mc[j], hc, Ic, j, row6(dV, a))
            fh = force_cross(sa, hj)
            for b in range(6):
                sb = col6(S, b)
                val = dot6(sb, dh)
                if j > 0 or not moves_column(ROOT_FREE, a, b):
                    val += dot6(sb, fh)
                X[b, n + 1 + a] = val
    ltl_solve_rows(H0, lam, X[:, n + 1 :])
    # the point and its velocity at fixed v
    px = (
        p[body, 0] + R[body, 0, 0] * point[0] + R[body, 0, 1] * point[1] + R[body, 0, 2] * point[2]
    )
    py = (
        p[body, 1] + R[body, 1, 0] * point[0] + R[body, 1, 1] * point[1] + R[body, 1, 2] * point[2]
    )
    pz = (
        p[body, 2] + R[body, 2, 0] * point[0] + R[body, 2, 1] * point[1] + R[body, 2, 2] * point[2]
    )
    ve = row6(vel, body)
    for r in range(6):
        for c in range(nv):
            dq[r, c] = 0.0
        for c in range(n):
            dphi[r, c] = 0.0
    j = body
    while j >= 0:
        for a in range(m.iv[j], m.iv[j] + m.nvj[j]):
            dve = motion_cross(col6(S, a), ve)
            dw = (dve[3] + dV[a, 3], dve[4] + dV[a, 4], dve[5] + dV[a, 5])
            dpt = point_velocity_column(S, a, px, py, pz)
            dq[0, a] = (
                dve[0] + dV[a, 0] + (dw[1] * pz - dw[2] * py) + (ve[4] * dpt[2] - ve[5] * dpt[1])
            )
            dq[1, a] = (
                dve[1] + dV[a, 1] + (dw[2] * px - dw[0] * pz) + (ve[5] * dpt[0] - ve[3] * dpt[2])
            )
            dq[2, a] = (
                dve[2] + dV[a, 2] + (dw[0] * py - dw[1] * px) + (ve[3] * dpt[1] - ve[4] * dpt[0])
            )
            dq[3, a] = dw[0]
            dq[4, a] = dw[1]
            dq[5, a] = dw[2]
            if a >= 6:
                for r in range(6):
                    dphi[r, a - 6] = dpt[r]
        j = m.parent[j]
    # the base's response: Js times -H0^-1 H0m (for J*) and -H0^-1 d(Hv)_base/dq
    for b in range(6):
        js = point_velocity_column(S, b, px, py, pz)
        for r in range(6):
            for c in range(n):
                dphi[r, c] -= js[r] * X[b, c]
            for c in range(nv):
                dq[r, c] -= js[r] * X[b, n + 1 + c]
