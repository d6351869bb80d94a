"""Batched entry points: one state per row, rows spread over all cores.

The parallel loops call row kernels that unpack the model themselves (numba's parfor
lowering cannot carry the ModelArrays named tuple into its generated loop body). Rows are
processed in chunks of :data:`CHUNK`: each chunk unpacks the model and allocates its
workspace once, carves its views once (:func:`.kinematics.kinematics_on_views`: a row's
kinematics and algorithm in one compiled body), then writes every row's result straight into
the output.
"""

from __future__ import annotations

import numpy as np

from ..jit import borrow, carve, keep_alive, njit, njit_parallel, prange
from .aba import aba_on_views, aba_views, aba_ws_size
from .crba import crba
from .friction import add_friction, joint_friction
from .kinematics import kinematics, kinematics_on_views, kinematics_views, kinematics_ws_size
from .layout import unpack
from .lie_group import integrate, rk4_step_into, rk4_ws_size
from .momentum import mass_center, spatial_momentum
from .rnea import id_ws_size, rnea, rnea_ws_size

CHUNK = 32


@njit
def _fd_rows(
    idata: np.ndarray,
    fdata: np.ndarray,
    Q: np.ndarray,
    V: np.ndarray,
    T: np.ndarray,
    with_friction: bool,
    out: np.ndarray,
    lo: int,
    hi: int,
) -> None:
    m = unpack(idata, fdata)
    nb = m.parent.shape[0]
    nv = idata[1]
    o = aba_ws_size(nb, nv)
    owner = np.empty(o + nv)
    ws = borrow(owner)
    Q, V, T, out = borrow(Q), borrow(V), borrow(T), borrow(out)
    fext = carve(ws, 0, (0, 6))
    gen = ws[o : o + nv]
    # the views carved once for the chunk, and ABA in this body (aba_on_views)
    kin = kinematics_views(ws, nb, nv)
    arts = aba_views(ws, nb, nv)
    for k in range(lo, hi):
        tau = T[k]
        if with_friction:  # as forward_dynamics_into: the friction, then plus the efforts
            joint_friction(m, V[k], gen)
            for c in range(nv):
                gen[c] += tau[c]
            tau = gen
        aba_on_views(m, Q[k], V[k], tau, fext, out[k], kin, arts)
    keep_alive(owner)


@njit
def _crba_rows(
    idata: np.ndarray, fdata: np.ndarray, Q: np.ndarray, out: np.ndarray, lo: int, hi: int
) -> None:
    m = unpack(idata, fdata)
    nb = m.parent.shape[0]
    nv = idata[1]
    owner = np.empty(kinematics_ws_size(nb, nv))
    R, p, S, mw, hw, Iw, T = kinematics_views(borrow(owner), nb, nv)
    Q, out = borrow(Q), borrow(out)
    kin = (R, p, S, mw, hw, Iw, T)
    for k in range(lo, hi):  # one compiled body per row, the views carved once
        kinematics_on_views(m, Q[k], kin)
        crba(m, S, mw, hw, Iw, out[k])
    keep_alive(owner)


@njit
def _id_rows(
    idata: np.ndarray,
    fdata: np.ndarray,
    Q: np.ndarray,
    V: np.ndarray,
    A: np.ndarray,
    with_friction: bool,
    out: np.ndarray,
    lo: int,
    hi: int,
) -> None:
    m = unpack(idata, fdata)
    owner = np.empty(id_ws_size(m.parent.shape[0], idata[1]))
    ws = borrow(owner)
    Q, V, A, out = borrow(Q), borrow(V), borrow(A), borrow(out)
    fext = carve(ws, 0, (0, 6))
    nb = m.parent.shape[0]
    nv = idata[1]
    # inverse_dynamics_into in this body, on views carved once for the chunk
    kin = kinematics_views(ws, nb, nv)
    S, mw, hw, Iw = kin[2], kin[3], kin[4], kin[5]
    o = kinematics_ws_size(nb, nv)
    rws = ws[o : o + rnea_ws_size(nb)]
    for k in range(lo, hi):
        q = Q[k]
        v = V[k]
        res = out[k]
        kinematics_on_views(m, q, kin)
        rnea(m, q, v, A[k], S, mw, hw, Iw, fext, 1.0, res, rws)
        if with_friction:
            add_friction(m, v, res, -1.0)
    keep_alive(owner)


@njit
def _momentum_row(
    idata: np.ndarray,
    fdata: np.ndarray,
    q: np.ndarray,
    v: np.ndarray,
    h: np.ndarray,
    com: np.ndarray,
) -> None:
    m = unpack(idata, fdata)
    R, p, S, mw, hw, Iw = kinematics(m, q, idata[1])
    h[:] = spatial_momentum(m, v, S, mw, hw, Iw)
    mass_center(mw, hw, com)


@njit
def _integrate_row(
    idata: np.ndarray, fdata: np.ndarray, q: np.ndarray, v: np.ndarray, dt: float
) -> np.ndarray:
    return integrate(unpack(idata, fdata), q, v, dt)


@njit
def _rk4_rows(
    idata: np.ndarray,
    fdata: np.ndarray,
    Q: np.ndarray,
    V: np.ndarray,
    T: np.ndarray,
    with_friction: bool,
    dt: float,
    Qn: np.ndarray,
    Vn: np.ndarray,
    lo: int,
    hi: int,
) -> None:
    m = unpack(idata, fdata)
    owner = np.empty(rk4_ws_size(m.parent.shape[0], Q.shape[1], V.shape[1]))
    ws = borrow(owner)
    none = ws[0:0]
    fext = carve(ws, 0, (0, 6))
    Q, V, T, Qn, Vn = borrow(Q), borrow(V), borrow(T), borrow(Qn), borrow(Vn)
    for k in range(lo, hi):
        rk4_step_into(m, Q[k], V[k], T[k], fext, with_friction, dt, none, none, ws, Qn[k], Vn[k])
    keep_alive(owner)


@njit_parallel
def b_forward_dynamics(
    idata: np.ndarray,
    fdata: np.ndarray,
    Q: np.ndarray,
    V: np.ndarray,
    T: np.ndarray,
    with_friction: bool,
) -> np.ndarray:
    """Forward dynamics of ``B`` states: Q (B, nq), V (B, nv), T (B, nv) -> (B, nv)."""
    B = Q.shape[0]
    out = np.empty((B, V.shape[1]))
    for c in prange((B + CHUNK - 1) // CHUNK):
        lo = c * CHUNK
        _fd_rows(idata, fdata, Q, V, T, with_friction, out, lo, min(lo + CHUNK, B))
    return out


@njit_parallel
def b_mass_matrix(idata: np.ndarray, fdata: np.ndarray, Q: np.ndarray) -> np.ndarray:
    """Inertia matrices of ``B`` configurations: (B, nq) -> (B, nv, nv)."""
    B = Q.shape[0]
    nv = idata[1]
    out = np.zeros((B, nv, nv))
    for c in prange((B + CHUNK - 1) // CHUNK):
        lo = c * CHUNK
        _crba_rows(idata, fdata, Q, out, lo, min(lo + CHUNK, B))
    return out


@njit_parallel
def b_inverse_dynamics(
    idata: np.ndarray,
    fdata: np.ndarray,
    Q: np.ndarray,
    V: np.ndarray,
    A: np.ndarray,
    with_friction: bool,
) -> np.ndarray:
    """Inverse dynamics of ``B`` states: (B, nq), (B, nv), (B, nv) -> (B, nv).

    ``A`` (B, 0) stands for zero accelerations (the bias forces).
    """
    B = Q.shape[0]
    out = np.empty((B, idata[1]))
    for c in prange((B + CHUNK - 1) // CHUNK):
        lo = c * CHUNK
        _id_rows(idata, fdata, Q, V, A, with_friction, out, lo, min(lo + CHUNK, B))
    return out


@njit_parallel
def b_momentum(
    idata: np.ndarray, fdata: np.ndarray, Q: np.ndarray, V: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """``[P; L_O]`` (B, 6) and system CoM (B, 3) of ``B`` states."""
    h = np.empty((Q.shape[0], 6))
    com = np.empty((Q.shape[0], 3))
    for k in prange(Q.shape[0]):
        _momentum_row(idata, fdata, Q[k], V[k], h[k], com[k])
    return h, com


@njit_parallel
def b_integrate(
    idata: np.ndarray, fdata: np.ndarray, Q: np.ndarray, V: np.ndarray, dt: float
) -> np.ndarray:
    """:func:`integrate` of ``B`` states."""
    out = np.empty_like(Q)
    for k in prange(Q.shape[0]):
        out[k] = _integrate_row(idata, fdata, Q[k], V[k], dt)
    return out


@njit_parallel
def b_rk4_step(
    idata: np.ndarray,
    fdata: np.ndarray,
    Q: np.ndarray,
    V: np.ndarray,
    T: np.ndarray,
    with_friction: bool,
    dt: float,
) -> tuple[np.ndarray, np.ndarray]:
    """One RK4 step of ``B`` states under constant generalized forces T (B, nv)."""
    B = Q.shape[0]
    Qn = np.empty_like(Q)
    Vn = np.empty_like(V)
    for c in prange((B + CHUNK - 1) // CHUNK):
        lo = c * CHUNK
        _rk4_rows(idata, fdata, Q, V, T, with_friction, dt, Qn, Vn, lo, min(lo + CHUNK, B))
    return Qn, Vn
