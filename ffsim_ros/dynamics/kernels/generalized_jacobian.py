"""The generalized Jacobian ``J* = Jm - Js H0^-1 H0m`` (Yoshida & Umetani) of one link frame
in one compiled pass: the kinematics, the frame's Jacobian [S0 eq. 5], the inertia matrix's
base rows by CRBA [S0 eqs. 24-27] and the 6 x 6 Cholesky solve of ``H0``."""

from __future__ import annotations

import numpy as np

from ..jit import borrow, carve, keep_alive, njit
from .cholesky import cholesky_factor_inplace, cholesky_substitute, overflowed
from .crba import crba
from .frames import frame_jacobian, frame_origin, support_mask
from .kinematics import kinematics_into, kinematics_views, kinematics_ws_size
from .layout import ModelArrays, plain_vector, unpack
from .spatial import require_finite


@njit
def generalized_jacobian_into(
    m: ModelArrays,
    q: np.ndarray,
    body: int,
    trans: np.ndarray,
    out: np.ndarray,
    ws: np.ndarray,
) -> None:
    """``J*`` (6, n) of the point at ``trans`` (3,) [m] on body ``body`` at ``q`` (nq,) into
    ``out``: rows ``[linear velocity of the point; angular velocity]``, inertial frame, per
    unit joint rate under zero momentum (a floating base: the root's 6 columns first);
    ``ws``: (:func:`gj_ws_size`) scratch. Raises ``ValueError`` when ``H0`` is not finite or
    not positive definite."""
    nb = m.parent.shape[0]
    nv = out.shape[1] + 6
    R, p, S, mw, hw, Iw, T = kinematics_views(ws, nb, nv)
    o = kinematics_ws_size(nb, nv)
    J = carve(ws, o, (6, nv))
    H = carve(ws, o + 6 * nv, (nv, nv))
    kinematics_into(m, q, R, p, S, mw, hw, Iw, T)
    P = np.empty(3)
    frame_origin(R, p, body, trans, P)
    mask = np.empty(nv, dtype=np.bool_)
    support_mask(m, body, mask)
    frame_jacobian(S, P, mask, J)
    for r in range(nv):
        for c in range(nv):
            H[r, c] = 0.0
    crba(m, S, mw, hw, Iw, H)
    if not cholesky_factor_inplace(H, 6):  # H0's factor in H[:6, :6]'s lower triangle
        if overflowed(H, 6):
            raise ValueError('mass matrix is not finite: a NaN or an overflow')
        raise ValueError('mass matrix is not positive definite')
    x = np.empty(6)
    for c in range(6, nv):  # column c of J* = Jm[:, c] - Js (H0^-1 H0m[:, c])
        for r in range(6):
            x[r] = H[r, c]
        cholesky_substitute(H, x, 6)
        for r in range(6):
            s = J[r, c]
            for k in range(6):
                s -= J[r, k] * x[k]
            out[r, c - 6] = s


@njit
def gj_ws_size(nb: int, nv: int) -> int:
    """Length of the scratch of :func:`generalized_jacobian_into`."""
    return kinematics_ws_size(nb, nv) + 6 * nv + nv * nv


@njit
def e_generalized_jacobian(
    idata: np.ndarray,
    fdata: np.ndarray,
    q: np.ndarray,
    body: int,
    trans: np.ndarray,
    out: np.ndarray,
) -> bool:
    """Entry point: :func:`generalized_jacobian_into` (a floating-base model) into ``out``
    (6, n), checked finite (a NaN in ``q`` raised). False, and nothing done, when ``q`` is
    not a :func:`.layout.plain_vector` of ``nq`` entries."""
    if not plain_vector(q, idata[12]):
        return False
    m = unpack(idata, fdata)
    owner = np.empty(gj_ws_size(m.parent.shape[0], idata[1]))
    out = borrow(out)
    generalized_jacobian_into(m, borrow(q), body, borrow(trans), out, borrow(owner))
    for r in range(6):
        require_finite(out[r])
    keep_alive(owner)
    return True
