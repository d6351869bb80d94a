"""Composite-rigid-body algorithm: the generalized inertia matrix [S0 eqs. 24-27], and the
forward dynamics ``H^-1 (Q - c)`` it gives with the RNEA's bias forces [S0 eq. 39]."""

from __future__ import annotations

import numpy as np

from ..jit import njit
from .cholesky import cholesky_solve
from .kinematics import kinematics_views
from .layout import ModelArrays
from .rnea import id_ws_size, inverse_dynamics_into
from .spatial import col6, inertia_times


@njit
def crba(
    m: ModelArrays, S: np.ndarray, mw: np.ndarray, hw: np.ndarray, Iw: np.ndarray, H: np.ndarray
) -> None:
    """Composite-rigid-body algorithm: the generalized inertia matrix [S0 eqs. 24-27].

    ``H[a, b] = S_a^T Ic_i S_b`` for DoF ``a`` of body ``i`` and DoF ``b`` of ``i`` or one of
    its ancestors, with ``Ic_i`` the composite inertia of the subtree rooted at ``i`` (a plain
    sum, all inertias being about O).

    Parameters
    ----------
    S : (6, nv) motion subspaces (:func:`motion_subspace`).
    mw, hw, Iw : (nb,), (nb, 3), (nb, 3, 3)
        Body inertias about O (:func:`world_inertias`); overwritten in place by the composite
        inertias ``(mc, hc, Ic)`` of the subtrees [kg, kg m, kg m^2].
    H : (nv, nv) output, zero on entry; entries of DoFs on different branches stay zero.
    """
    nb = m.parent.shape[0]
    for i in range(nb - 1, -1, -1):
        for a in range(m.iv[i], m.iv[i] + m.nvj[i]):
            F = inertia_times(mw[i], hw, Iw, i, col6(S, a))
            j = i
            while j >= 0:
                for b in range(m.iv[j], m.iv[j] + m.nvj[j]):
                    val = 0.0
                    for r in range(6):
                        val += S[r, b] * F[r]
                    H[a, b] = val
                    H[b, a] = val
                j = m.parent[j]
        k = m.parent[i]
        if k >= 0:
            mw[k] += mw[i]
            for r in range(3):
                hw[k, r] += hw[i, r]
                for c in range(3):
                    Iw[k, r, c] += Iw[i, r, c]


@njit
def forward_dynamics_crba(
    m: ModelArrays,
    q: np.ndarray,
    v: np.ndarray,
    tau: np.ndarray,
    fext: np.ndarray,
    with_friction: bool,
) -> np.ndarray:
    """``a = H^-1 (Q - c)`` with H from :func:`crba`, c from :func:`rnea` [S0 eq. 39].

    O(n^3); the reference the O(n) :func:`aba` is checked against.

    Parameters
    ----------
    tau : (nv,) generalized force ``[F_b; tau]``.
    fext : (nb, 6) body wrenches about O, or an empty (0, 6) array for none.
    """
    nb = m.parent.shape[0]
    nv = v.shape[0]
    ws = np.empty(id_ws_size(nb, nv))
    c = np.empty(nv)
    # c - J^T f_ext + F_f (friction included by inverse_dynamics_into as -F_f)
    inverse_dynamics_into(m, q, v, v[0:0], fext, with_friction, c, ws)
    R, p, S, mw, hw, Iw, T = kinematics_views(ws, nb, nv)
    H = np.zeros((nv, nv))
    crba(m, S, mw, hw, Iw, H)  # (after rnea: crba turns the body inertias into composites)
    return cholesky_solve(H, tau - c)
