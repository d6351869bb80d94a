"""Recursive Newton-Euler algorithm in the inertial frame: inverse dynamics [S0 eqs. 39, 41]
and, with zero accelerations, the bias forces ``c`` [S0 eq. 38]."""

from __future__ import annotations

import numpy as np

from ..jit import carve, njit
from .friction import add_friction
from .kinematics import (
    joint_velocity,
    kinematics_into,
    kinematics_views,
    kinematics_ws_size,
    velocity_product,
)
from .layout import ModelArrays
from .spatial import force_cross, inertia_times, row6


@njit
def rnea_ws_size(nb: int) -> int:
    """Length of the scratch of :func:`rnea` (``18 nb``)."""
    return 18 * nb


@njit
def id_ws_size(nb: int, nv: int) -> int:
    """Workspace of :func:`inverse_dynamics_into`: kinematics and :func:`rnea`."""
    return kinematics_ws_size(nb, nv) + rnea_ws_size(nb)


@njit
def rnea(
    m: ModelArrays,
    q: np.ndarray,
    v: np.ndarray,
    a: np.ndarray,
    S: np.ndarray,
    mw: np.ndarray,
    hw: np.ndarray,
    Iw: np.ndarray,
    fext: np.ndarray,
    gravity_scale: float,
    tau: np.ndarray,
    ws: np.ndarray,
) -> None:
    """Recursive Newton-Euler inverse dynamics in the inertial frame.

    Solves ``H a + c = Q + J^T f_ext`` for ``Q`` ([S0 eqs. 39, 41] with ``F_c = f_ext``).
    With ``a = 0`` the result is ``c - J^T f_ext`` (bias forces, [S0 eq. 38]). Gravity enters as
    a fictitious base acceleration ``-g`` (scaled by ``gravity_scale``, 0 or 1).

    Parameters
    ----------
    a : (nv,) generalized acceleration, or an empty array for ``a = 0`` (the bias forces
        ``nle``: the ``S a`` terms are skipped).
    fext : (nb, 6) external wrenches on each body, ``[f; n_O]`` about O, inertial frame; or an
        empty (0, 6) array when there are none.
    tau : (nv,) output generalized force: ``[F; T]`` at the base CoM then joint efforts.
    ws : (rnea_ws_size(nb),) scratch.
    """
    nb = m.parent.shape[0]
    vel = carve(ws, 0, (nb, 6))
    acc = carve(ws, 6 * nb, (nb, 6))
    f = carve(ws, 12 * nb, (nb, 6))
    with_a = a.shape[0] > 0
    with_fext = fext.shape[0] > 0
    g = m.gravity
    for i in range(nb):
        k = m.parent[i]
        if k >= 0:
            for r in range(6):
                vel[i, r] = vel[k, r]
                acc[i, r] = acc[k, r]
        else:
            for r in range(3):
                vel[i, r] = 0.0
                vel[i, 3 + r] = 0.0
                acc[i, r] = -gravity_scale * g[r]
                acc[i, 3 + r] = 0.0
        iv = m.iv[i]
        sv = joint_velocity(S, iv, m.nvj[i], v)
        if with_a:
            for c in range(iv, iv + m.nvj[i]):
                ac = a[c]
                for r in range(6):
                    acc[i, r] += S[r, c] * ac
        for r in range(6):
            vel[i, r] += sv[r]
        vi = row6(vel, i)
        cb = velocity_product(m.jtype[i], iv, vi, sv, S, v)
        for r in range(6):
            acc[i, r] += cb[r]
        # f = I a + v x* (I v) - f_ext
        fa = inertia_times(mw[i], hw, Iw, i, row6(acc, i))
        fv = force_cross(vi, inertia_times(mw[i], hw, Iw, i, vi))
        for r in range(6):
            f[i, r] = fa[r] + fv[r]
        if with_fext:
            for r in range(6):
                f[i, r] -= fext[i, r]
    for i in range(nb - 1, -1, -1):
        for c in range(m.iv[i], m.iv[i] + m.nvj[i]):
            val = 0.0
            for r in range(6):
                val += S[r, c] * f[i, r]
            tau[c] = val
        k = m.parent[i]
        if k >= 0:
            for r in range(6):
                f[k, r] += f[i, r]


@njit
def inverse_dynamics_into(
    m: ModelArrays,
    q: np.ndarray,
    v: np.ndarray,
    a: np.ndarray,
    fext: np.ndarray,
    with_friction: bool,
    out: np.ndarray,
    ws: np.ndarray,
) -> None:
    """Kinematics, :func:`rnea` (gravity included) and, when enabled, minus the friction.

    Parameters
    ----------
    a : (nv,) or empty for ``a = 0``;  fext : (nb, 6) or empty (0, 6), as in :func:`rnea`.
    out : (nv,) output generalized force [N, N m].
    ws : (id_ws_size(nb, nv),) scratch.
    """
    nb = m.parent.shape[0]
    nv = v.shape[0]
    R, p, S, mw, hw, Iw, T = kinematics_views(ws, nb, nv)
    o = kinematics_ws_size(nb, nv)
    kinematics_into(m, q, R, p, S, mw, hw, Iw, T)
    rnea(m, q, v, a, S, mw, hw, Iw, fext, 1.0, out, ws[o : o + rnea_ws_size(nb)])
    if with_friction:
        add_friction(m, v, out, -1.0)
