"""Pose and Jacobian of one link frame for a batch of configurations (rows over all cores).

One kinematics pass per row (poses and motion subspaces, no inertias) gives the three things a
task-space controller needs at each state: the frame's position, its orientation and its
Jacobian ``[Js | Jm]`` [S0 eq. 5]. The single-state functions
(:func:`ffsim_ros.dynamics.link_pose`, :func:`ffsim_ros.dynamics.link_jacobian`) do the same
arithmetic in NumPy on one state; this kernel is their batched counterpart (its own module,
so that adding it left the compiled caches of the other kernels valid).
"""

from __future__ import annotations

import numpy as np

from ..jit import njit, njit_parallel, prange
from .kinematics import forward_kinematics, motion_subspace
from .layout import unpack

CHUNK = 32


@njit
def _frame_rows(
    idata: np.ndarray,
    fdata: np.ndarray,
    Q: np.ndarray,
    body: int,
    rot: np.ndarray,
    trans: np.ndarray,
    mask: np.ndarray,
    P: np.ndarray,
    Rf: np.ndarray,
    J: np.ndarray,
    lo: int,
    hi: int,
) -> None:
    m = unpack(idata, fdata)
    nb = m.parent.shape[0]
    nv = idata[1]
    R = np.empty((nb, 3, 3))
    p = np.empty((nb, 3))
    T = np.empty((3, 3, 3))
    S = np.empty((6, nv))
    for k in range(lo, hi):
        forward_kinematics(m, Q[k], R, p, T)
        motion_subspace(m, Q[k], R, p, S)
        for r in range(3):
            P[k, r] = p[body, r] + (
                R[body, r, 0] * trans[0] + R[body, r, 1] * trans[1] + R[body, r, 2] * trans[2]
            )
            for c in range(3):
                Rf[k, r, c] = (
                    R[body, r, 0] * rot[0, c]
                    + R[body, r, 1] * rot[1, c]
                    + R[body, r, 2] * rot[2, c]
                )
        px = P[k, 0]
        py = P[k, 1]
        pz = P[k, 2]
        for c in range(nv):
            if mask[c]:
                s0, s1, s2, s3, s4, s5 = S[0, c], S[1, c], S[2, c], S[3, c], S[4, c], S[5, c]
            else:
                s0 = s1 = s2 = s3 = s4 = s5 = 0.0
            # velocity of the point = v_O + w x point = v_O - point x w
            J[k, 0, c] = s0 - (py * s5 - pz * s4)
            J[k, 1, c] = s1 - (pz * s3 - px * s5)
            J[k, 2, c] = s2 - (px * s4 - py * s3)
            J[k, 3, c] = s3
            J[k, 4, c] = s4
            J[k, 5, c] = s5


@njit_parallel
def b_link_frame(
    idata: np.ndarray,
    fdata: np.ndarray,
    Q: np.ndarray,
    body: int,
    rot: np.ndarray,
    trans: np.ndarray,
    mask: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Position (B, 3), orientation (B, 3, 3) and Jacobian (B, 6, nv) of the frame at
    ``trans`` (3,), ``rot`` (3, 3) on body ``body`` for each row of ``Q`` (B, nq); ``mask``
    (nv,) bool: the velocity coordinates that move the body (its support)."""
    B = Q.shape[0]
    nv = idata[1]
    P = np.empty((B, 3))
    Rf = np.empty((B, 3, 3))
    J = np.empty((B, 6, nv))
    for c in prange((B + CHUNK - 1) // CHUNK):
        lo = c * CHUNK
        _frame_rows(idata, fdata, Q, body, rot, trans, mask, P, Rf, J, lo, min(lo + CHUNK, B))
    return P, Rf, J
