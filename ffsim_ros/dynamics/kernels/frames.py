"""Pose and Jacobian of one link frame, for one configuration or a batch (rows over all
cores).

One kinematics pass (poses and motion subspaces, no inertias) gives the three things a
task-space controller needs at a state: the frame's position, its orientation and its
Jacobian ``[Js | Jm]`` [S0 eq. 5]. :func:`e_link_frame` is the single-state entry point
(:func:`ffsim_ros.dynamics.link_pose`, :func:`ffsim_ros.dynamics.link_jacobian`),
:func:`b_link_frame` the batched one; both run :func:`link_frame_into` on each state, so a
batch's rows are the single calls' results to the bit.
"""

from __future__ import annotations

import numpy as np

from ..jit import borrow, carve, keep_alive, njit, njit_parallel, prange
from .kinematics import forward_kinematics, motion_subspace
from .layout import ModelArrays, plain_vector, unpack
from .spatial import require_finite

CHUNK = 32


@njit
def frame_origin(
    R: np.ndarray, p: np.ndarray, body: int, trans: np.ndarray, P: np.ndarray
) -> None:
    """The origin ``P`` (3,) [m], inertial frame, of the point at ``trans`` (3,) [m] on body
    ``body``, from the body poses ``R`` (nb, 3, 3), ``p`` (nb, 3)."""
    for r in range(3):
        P[r] = p[body, r] + (
            R[body, r, 0] * trans[0] + R[body, r, 1] * trans[1] + R[body, r, 2] * trans[2]
        )


@njit
def frame_placement(
    R: np.ndarray,
    p: np.ndarray,
    body: int,
    rot: np.ndarray,
    trans: np.ndarray,
    P: np.ndarray,
    Rf: np.ndarray,
) -> None:
    """The origin ``P`` (3,) [m] and orientation ``Rf`` (3, 3) in the inertial frame of the
    frame at ``trans`` (3,) [m], ``rot`` (3, 3) on body ``body``, from the body poses ``R``
    (nb, 3, 3), ``p`` (nb, 3) (:func:`frame_origin`)."""
    frame_origin(R, p, body, trans, P)
    for r in range(3):
        for c in range(3):
            Rf[r, c] = (
                R[body, r, 0] * rot[0, c] + R[body, r, 1] * rot[1, c] + R[body, r, 2] * rot[2, c]
            )


@njit
def frame_jacobian(S: np.ndarray, P: np.ndarray, mask: np.ndarray, J: np.ndarray) -> None:
    """The Jacobian ``J`` (6, nv) ``[linear velocity of the point P; angular velocity]``,
    inertial frame, from the motion subspaces ``S`` (6, nv) at O (:func:`motion_subspace`)
    and ``mask`` (nv,) bool, the velocity coordinates that move the point's body."""
    px = P[0]
    py = P[1]
    pz = P[2]
    for c in range(S.shape[1]):
        if mask[c]:
            s0, s1, s2, s3, s4, s5 = S[0, c], S[1, c], S[2, c], S[3, c], S[4, c], S[5, c]
        else:
            s0 = s1 = s2 = s3 = s4 = s5 = 0.0
        # velocity of the point = v_O + w x point = v_O - point x w
        J[0, c] = s0 - (py * s5 - pz * s4)
        J[1, c] = s1 - (pz * s3 - px * s5)
        J[2, c] = s2 - (px * s4 - py * s3)
        J[3, c] = s3
        J[4, c] = s4
        J[5, c] = s5


@njit
def support_mask(m: ModelArrays, body: int, mask: np.ndarray) -> None:
    """``mask`` (nv,) bool: the velocity coordinates of the joints from ``body`` to the
    root (those that move it)."""
    for c in range(mask.shape[0]):
        mask[c] = False
    j = body
    while j >= 0:
        for c in range(m.iv[j], m.iv[j] + m.nvj[j]):
            mask[c] = True
        j = m.parent[j]


@njit
def link_frame_into(
    m: ModelArrays,
    q: np.ndarray,
    body: int,
    rot: np.ndarray,
    trans: np.ndarray,
    mask: np.ndarray,
    P: np.ndarray,
    Rf: np.ndarray,
    J: np.ndarray,
    scratch: tuple,
) -> None:
    """Pose ``P`` (3,), ``Rf`` (3, 3) and, unless ``J`` is empty, Jacobian ``J`` (6, nv) of
    the frame (:func:`frame_placement`, :func:`frame_jacobian`) at ``q`` (nq,);
    ``scratch``: ``(R (nb, 3, 3), p (nb, 3), T (3, 3, 3), S (6, nv))``."""
    R, p, T, S = scratch
    forward_kinematics(m, q, R, p, T)
    frame_placement(R, p, body, rot, trans, P, Rf)
    if J.shape[0] > 0:
        motion_subspace(m, q, R, p, S)
        frame_jacobian(S, P, mask, J)


@njit
def frame_ws_size(nb: int, nv: int) -> int:
    """Length of the scratch of :func:`link_frame_into` (:func:`frame_scratch`)."""
    return 12 * nb + 27 + 6 * nv


@njit
def frame_scratch(ws: np.ndarray, nb: int, nv: int) -> tuple:
    """The views ``(R, p, T, S)`` of :func:`link_frame_into` carved from ``ws``
    (:func:`frame_ws_size`)."""
    return (
        carve(ws, 0, (nb, 3, 3)),
        carve(ws, 9 * nb, (nb, 3)),
        carve(ws, 12 * nb, (3, 3, 3)),
        carve(ws, 12 * nb + 27, (6, nv)),
    )


@njit
def e_link_frame(
    idata: np.ndarray,
    fdata: np.ndarray,
    q: np.ndarray,
    body: int,
    rot: np.ndarray,
    trans: np.ndarray,
    pose: np.ndarray,
    J: np.ndarray,
) -> bool:
    """Entry point: the pose into ``pose`` (12,) ``[p (3) [m]; R (3, 3) row by row]`` (or an
    empty (0,) array: not returned) and the Jacobian into ``J`` (6, nv) (or an empty (0, k)
    array: not computed) of the frame at ``trans`` (3,), ``rot`` (3, 3) on body ``body``
    (:func:`link_frame_into`), checked finite (a NaN in ``q`` raised). False, and nothing
    done, when ``q`` is not a :func:`.layout.plain_vector` of ``nq`` entries."""
    if not plain_vector(q, idata[12]):
        return False
    m = unpack(idata, fdata)
    nb = m.parent.shape[0]
    nv = idata[1]
    size = frame_ws_size(nb, nv)
    owner = np.empty(size + 12)
    ws = borrow(owner)
    mask = np.empty(nv, dtype=np.bool_)
    support_mask(m, body, mask)
    out = borrow(pose) if pose.shape[0] > 0 else ws[size:]
    P = out[:3]
    Rf = carve(out, 3, (3, 3))
    J = borrow(J)
    scratch = frame_scratch(ws, nb, nv)
    link_frame_into(m, borrow(q), body, borrow(rot), borrow(trans), mask, P, Rf, J, scratch)
    require_finite(out[:12])
    for r in range(J.shape[0]):
        require_finite(J[r])
    keep_alive(owner)
    return True


@njit
def _frame_rows(
    idata: np.ndarray,
    fdata: np.ndarray,
    Q: np.ndarray,
    body: int,
    rot: np.ndarray,
    trans: np.ndarray,
    P: np.ndarray,
    Rf: np.ndarray,
    J: np.ndarray,
    lo: int,
    hi: int,
) -> None:
    m = unpack(idata, fdata)
    nb = m.parent.shape[0]
    nv = idata[1]
    mask = np.empty(nv, dtype=np.bool_)
    support_mask(m, body, mask)
    owner = np.empty(frame_ws_size(nb, nv))
    scratch = frame_scratch(owner, nb, nv)
    for k in range(lo, hi):
        link_frame_into(m, Q[k], body, rot, trans, mask, P[k], Rf[k], J[k], scratch)


@njit_parallel
def b_link_frame(
    idata: np.ndarray,
    fdata: np.ndarray,
    Q: np.ndarray,
    body: int,
    rot: np.ndarray,
    trans: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Position (B, 3), orientation (B, 3, 3) and Jacobian (B, 6, nv) of the frame at
    ``trans`` (3,), ``rot`` (3, 3) on body ``body`` for each row of ``Q`` (B, nq)."""
    B = Q.shape[0]
    nv = idata[1]
    P = np.empty((B, 3))
    Rf = np.empty((B, 3, 3))
    J = np.empty((B, 6, nv))
    for c in prange((B + CHUNK - 1) // CHUNK):
        lo = c * CHUNK
        _frame_rows(idata, fdata, Q, body, rot, trans, P, Rf, J, lo, min(lo + CHUNK, B))
    return P, Rf, J
