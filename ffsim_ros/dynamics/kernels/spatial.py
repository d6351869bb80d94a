"""Small 3x3 and spatial-vector helpers, inlined into the recursions.

They take an array and a row index rather than a view such as ``R[i]``: every view made
inside a per-body loop costs two atomic reference-count updates in the compiled code, which
for a 7-DoF robot added up to more than the arithmetic. Spatial 6-vectors are passed and
returned as tuples of floats (values, no arrays); the ordering is ``[linear; angular]`` at O
(see :mod:`ffsim_ros.dynamics.kernels`).
"""

from __future__ import annotations

import numpy as np

from ..jit import njit_leaf


@njit_leaf
def mul33(A: np.ndarray, ia: int, B: np.ndarray, ib: int, out: np.ndarray, io: int) -> None:
    """``out[io] = A[ia] @ B[ib]`` on stacks of 3x3 matrices (``out[io]`` neither input)."""
    for r in range(3):
        a0 = A[ia, r, 0]
        a1 = A[ia, r, 1]
        a2 = A[ia, r, 2]
        for c in range(3):
            out[io, r, c] = a0 * B[ib, 0, c] + a1 * B[ib, 1, c] + a2 * B[ib, 2, c]


@njit_leaf
def entries33(A: np.ndarray, i: int) -> tuple:
    """The 9 entries of the 3x3 ``A[i]``, row by row, as a tuple (for kernels that keep a
    matrix in registers)."""
    return (
        A[i, 0, 0],
        A[i, 0, 1],
        A[i, 0, 2],
        A[i, 1, 0],
        A[i, 1, 1],
        A[i, 1, 2],
        A[i, 2, 0],
        A[i, 2, 1],
        A[i, 2, 2],
    )


@njit_leaf
def rowdot(A: np.ndarray, ia: int, r: int, X: np.ndarray, ix: int) -> float:
    """``A[ia, r, :] . X[ix, :]``: row ``r`` of the 3x3 ``A[ia]`` times the 3-vector ``X[ix]``."""
    return A[ia, r, 0] * X[ix, 0] + A[ia, r, 1] * X[ix, 1] + A[ia, r, 2] * X[ix, 2]


@njit_leaf
def row6(X: np.ndarray, i: int) -> tuple:
    """Row ``X[i]`` of an (n, 6) array as a tuple."""
    return (X[i, 0], X[i, 1], X[i, 2], X[i, 3], X[i, 4], X[i, 5])


@njit_leaf
def col6(S: np.ndarray, c: int) -> tuple:
    """Column ``S[:, c]`` of a (6, n) array as a tuple."""
    return (S[0, c], S[1, c], S[2, c], S[3, c], S[4, c], S[5, c])


@njit_leaf
def force_cross(x: tuple, h: tuple) -> tuple:
    """``x x* h``: spatial cross product of the motion ``x = [v; w]`` with the force
    ``h = [f; n]`` (``[w x f; w x n + v x f]``)."""
    return (
        x[4] * h[2] - x[5] * h[1],
        x[5] * h[0] - x[3] * h[2],
        x[3] * h[1] - x[4] * h[0],
        x[4] * h[5] - x[5] * h[4] + x[1] * h[2] - x[2] * h[1],
        x[5] * h[3] - x[3] * h[5] + x[2] * h[0] - x[0] * h[2],
        x[3] * h[4] - x[4] * h[3] + x[0] * h[1] - x[1] * h[0],
    )


@njit_leaf
def motion_cross(x: tuple, y: tuple) -> tuple:
    """``x x y``: spatial cross product of two motion vectors ``[v; w]`` (6-tuples):
    ``[w_x x v_y + v_x x w_y; w_x x w_y]``."""
    return (
        x[4] * y[2] - x[5] * y[1] + x[1] * y[5] - x[2] * y[4],
        x[5] * y[0] - x[3] * y[2] + x[2] * y[3] - x[0] * y[5],
        x[3] * y[1] - x[4] * y[0] + x[0] * y[4] - x[1] * y[3],
        x[4] * y[5] - x[5] * y[4],
        x[5] * y[3] - x[3] * y[5],
        x[3] * y[4] - x[4] * y[3],
    )


@njit_leaf
def scaled(x: tuple, a: float) -> tuple:
    """The 6-tuple ``a x``."""
    return (a * x[0], a * x[1], a * x[2], a * x[3], a * x[4], a * x[5])


@njit_leaf
def inertia_times(mi: float, h: np.ndarray, Ib: np.ndarray, i: int, x: tuple) -> tuple:
    """``I x`` for the spatial inertia ``(mi, h[i], Ib[i])`` and the motion vector ``x``
    (6-tuple ``[v; w]``): the force ``[m v + w x h; h x v + Ib w]``, a 6-tuple."""
    h0 = h[i, 0]
    h1 = h[i, 1]
    h2 = h[i, 2]
    return (
        mi * x[0] + (x[4] * h2 - x[5] * h1),
        mi * x[1] + (x[5] * h0 - x[3] * h2),
        mi * x[2] + (x[3] * h1 - x[4] * h0),
        (h1 * x[2] - h2 * x[1]) + Ib[i, 0, 0] * x[3] + Ib[i, 0, 1] * x[4] + Ib[i, 0, 2] * x[5],
        (h2 * x[0] - h0 * x[2]) + Ib[i, 1, 0] * x[3] + Ib[i, 1, 1] * x[4] + Ib[i, 1, 2] * x[5],
        (h0 * x[1] - h1 * x[0]) + Ib[i, 2, 0] * x[3] + Ib[i, 2, 1] * x[4] + Ib[i, 2, 2] * x[5],
    )


@njit_leaf
def spatial_inertia_matrix(
    mi: float, h: np.ndarray, Ib: np.ndarray, i: int, out: np.ndarray
) -> None:
    """``out[i]``: the dense 6x6 ``[[m E, -h~], [h~, Ib]]`` of the compact inertia
    ``(mi, h[i], Ib[i])``."""
    for r in range(6):
        for c in range(6):
            out[i, r, c] = 0.0
    for r in range(3):
        out[i, r, r] = mi
        for c in range(3):
            out[i, 3 + r, 3 + c] = Ib[i, r, c]
    # h~ in the lower left block; the upper right one is its transpose, -h~
    out[i, 4, 0] = h[i, 2]
    out[i, 5, 0] = -h[i, 1]
    out[i, 3, 1] = -h[i, 2]
    out[i, 5, 1] = h[i, 0]
    out[i, 3, 2] = h[i, 1]
    out[i, 4, 2] = -h[i, 0]
    for r in range(3):
        for c in range(3):
            out[i, c, 3 + r] = out[i, 3 + r, c]


@njit_leaf
def require_finite(x: np.ndarray) -> None:
    """Raise ``ValueError('non-finite result ...')`` unless every entry of ``x`` (n,) is
    finite: the entry points' check of their result (a few ns), which
    :func:`ffsim_ros.dynamics.state_errors.state_error` turns into the argument that is not finite,
    or else an overflow from finite inputs."""
    for c in range(x.shape[0]):
        if not np.isfinite(x[c]):
            raise ValueError('non-finite result (a non-finite input, or an overflow)')
