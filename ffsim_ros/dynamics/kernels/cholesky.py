"""Dense Cholesky solve of a symmetric positive definite system (the inertia matrix)."""

from __future__ import annotations

import numpy as np

from ..jit import njit, njit_leaf


@njit_leaf
def cholesky_factor_inplace(A: np.ndarray, n: int) -> bool:
    """The lower Cholesky factor of ``A[:n, :n]`` (symmetric positive definite) into its lower
    triangle; ``False`` (``A`` partly overwritten) when a pivot is not positive."""
    return cholesky_factor_above(A, n, 0.0)


@njit_leaf
def cholesky_factor_above(A: np.ndarray, n: int, floor: float) -> bool:
    """:func:`cholesky_factor_inplace` with every pivot (squared diagonal of the factor)
    required above ``floor`` (``False`` at the first that is not)."""
    for j in range(n):
        s = A[j, j]
        for k in range(j):
            s -= A[j, k] * A[j, k]
        if not s > floor:
            return False
        d = np.sqrt(s)
        A[j, j] = d
        for i in range(j + 1, n):
            s = A[i, j]
            for k in range(j):
                s -= A[i, k] * A[j, k]
            A[i, j] = s / d
    return True


#: Magnitude beyond which a factorization's squares overflow float64 (1.3e154): a matrix
#: holding one failed as not finite, not as indefinite.
OVERFLOW_ENTRY = 1e150


@njit_leaf
def overflowed(A: np.ndarray, n: int) -> bool:
    """Whether ``A[:n, :n]`` holds a value that is not finite or whose square overflows
    float64 (a Cholesky factorization failing on it fails for that, not for a pivot)."""
    for i in range(n):
        for j in range(n):
            if not abs(A[i, j]) <= OVERFLOW_ENTRY:
                return True
    return False


@njit
def cholesky_solve(H: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Solve ``H x = b`` for symmetric positive definite ``H`` (n, n) by Cholesky.

    Raises ``ValueError`` if ``H`` is not finite (a non-finite state, or an overflow within
    the dynamics) or not positive definite (a degenerate model). ``H`` and
    ``b`` are left as they are (:func:`cholesky_solve_inplace` on copies).
    """
    A = H.copy()
    x = b.copy()
    cholesky_solve_inplace(A, x)
    return x


@njit
def cholesky_solve_inplace(A: np.ndarray, x: np.ndarray) -> None:
    """Solve ``A y = x`` in place for symmetric positive definite ``A`` (n, n).

    ``A``'s lower triangle is overwritten by its Cholesky factor and ``x`` (n,) by ``y``;
    raises ``ValueError`` like :func:`cholesky_solve` (the message says which: not finite, or
    not positive definite).
    """
    n = A.shape[0]
    if not cholesky_factor_inplace(A, n):
        if overflowed(A, n):  # (a NaN or an infinity in it, or from it, or huge values)
            raise ValueError('mass matrix is not finite: a NaN or an overflow')
        raise ValueError('mass matrix is not positive definite')
    cholesky_substitute(A, x, n)


@njit_leaf
def cholesky_substitute(L: np.ndarray, x: np.ndarray, n: int) -> None:
    """``x[:n] <- (L L^T)^-1 x[:n]`` for the Cholesky factor in the lower triangle of
    ``L[:n, :n]`` (the two triangular solves)."""
    for i in range(n):
        s = x[i]
        for k in range(i):
            s -= L[i, k] * x[k]
        x[i] = s / L[i, i]
    for i in range(n - 1, -1, -1):
        s = x[i]
        for k in range(i + 1, n):
            s -= L[k, i] * x[k]
        x[i] = s / L[i, i]


@njit
def spd_inverse_into(A: np.ndarray, n: int, out: np.ndarray) -> None:
    """``out[:n, :n] = A[:n, :n]^-1`` for symmetric positive definite ``A`` by Cholesky.

    For the small joint-space inertias ``D = S^T I^A S`` of ABA (n <= 6): loops, no LAPACK
    call and no temporary. ``A``'s lower triangle is overwritten by its Cholesky factor; raises
    ``ValueError`` if ``A`` is not finite (a non-finite state or an overflow) or not positive
    definite (a degenerate model), saying which.
    """
    if not cholesky_factor_inplace(A, n):
        if overflowed(A, n):
            raise ValueError('articulated inertia is not finite: a NaN or an overflow')
        raise ValueError('articulated inertia is not positive definite')
    for col in range(n):
        for i in range(n):
            s = 1.0 if i == col else 0.0
            for k in range(i):
                s -= A[i, k] * out[k, col]
            out[i, col] = s / A[i, i]
        for i in range(n - 1, -1, -1):
            s = out[i, col]
            for k in range(i + 1, n):
                s -= A[k, i] * out[k, col]
            out[i, col] = s / A[i, i]
