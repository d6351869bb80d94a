"""The Delassus system ``(C M^-1 C^T) lambda = b`` of the compiled closed-chain solver
(:mod:`.constrained`), ``C`` its per-hinge reduced loop rows on the tree's velocities.

Cholesky first: on a well-conditioned system the whole of the solve. Where a pivot falls
below :data:`DELASSUS_PIVOT_RTOL` of the largest diagonal -- rows dependent across cut hinges,
or nearly so near a loop singularity -- the rank is decided on the rows ``C`` themselves,
not on the Delassus matrix, whose eigenvalues are their singular values *squared* (times
``M^-1``'s): with ``C^T = U diag(s) V^T`` (one-sided Jacobi), the directions ``V_j`` with
``s_j > rtol s_0`` are kept, as the per-hinge reduction keeps a hinge's rows, and the system
is solved in the square-root form ``N z = diag(s)^-1 V^T b``, ``N = U^T M^-1 U`` (its
condition that of ``M`` alone; ``M^-1 U`` from the test responses ``M^-1 C^T``), ``lambda =
V diag(s)^-1 z``: the minimum-norm loop multipliers. A direction along a singular value
ratio ``r`` then costs ``eps / r`` of the accelerations' accuracy, where the Delassus matrix
would cost ``eps / r^2`` -- and drop it, below ``r ~ 1e-5``, at its own pivot threshold.
"""

from __future__ import annotations

import numpy as np

from ..jit import borrow, keep_alive, njit
from .cholesky import cholesky_factor_above, cholesky_substitute
from .cut_hinges import jacobi_svd
from .layout import ModelArrays

#: Pivot of the Delassus Cholesky factor, relative to the largest diagonal, below which the
#: rank-revealing solve is used instead.
DELASSUS_PIVOT_RTOL = 1e-10
#: Pivot of ``N`` (condition that of ``M``), relative to its largest diagonal, below which a
#: kept direction is dropped after all: a guard against a singular mass matrix.
N_PIVOT_RTOL = 1e-14


@njit
def _cholesky_solve(A: np.ndarray, b: np.ndarray, rtol: float) -> tuple:
    """``A x = b`` by Cholesky for the symmetric ``A`` (K, K); ``(x, True)``, or an empty
    ``x`` and False when a pivot is not above ``rtol`` times the largest diagonal."""
    K = A.shape[0]
    dmax = 0.0
    for j in range(K):
        dmax = max(dmax, abs(A[j, j]))
    own = A.copy()  # (borrowed: no reference counting; held up to keep_alive)
    L = borrow(own)
    if not (dmax > 0.0 and cholesky_factor_above(L, K, rtol * dmax)):
        keep_alive(own)
        return np.empty(0), False
    x = b.copy()
    cholesky_substitute(L, x, K)
    keep_alive(own)
    return x, True


@njit
def loop_rows_on_velocities(
    m: ModelArrays, S: np.ndarray, Wr: np.ndarray, ra: np.ndarray, rb: np.ndarray
) -> np.ndarray:
    """``C^T`` (nv, K): the rows ``Wr`` (K, 6) (``+`` on body ``ra``, ``-`` on ``rb``) on the
    tree's velocities; the columns of common ancestors are exactly zero."""
    nb = m.parent.shape[0]
    K = Wr.shape[0]
    Ct = np.zeros((S.shape[1], K))
    flag = np.empty(nb, dtype=np.int64)
    for j in range(K):
        for i in range(nb):
            flag[i] = 0
        i = ra[j]
        while i >= 0:
            flag[i] = 1
            i = m.parent[i]
        i = rb[j]
        while i >= 0:
            flag[i] = 2 if flag[i] == 1 else 3
            i = m.parent[i]
        for i in range(nb):
            if flag[i] == 1 or flag[i] == 3:
                sgn = 1.0 if flag[i] == 1 else -1.0
                for c in range(m.iv[i], m.iv[i] + m.nvj[i]):
                    s = 0.0
                    for k in range(6):
                        s += Wr[j, k] * S[k, c]
                    Ct[c, j] = sgn * s
    return Ct


@njit
def _rank_revealing_solve(
    m: ModelArrays,
    S: np.ndarray,
    b: np.ndarray,
    Wr: np.ndarray,
    ra: np.ndarray,
    rb: np.ndarray,
    Mq: np.ndarray,
    rtol: float,
    floor: float,
) -> tuple:
    """The fallback of :func:`solve_delassus` (module docstring). Returns ``(x, rank)``."""
    K = Wr.shape[0]
    nv = S.shape[1]
    X = loop_rows_on_velocities(m, S, Wr, ra, rb)  # becomes U diag(s)
    V = np.empty((K, K))
    sv = np.empty(K)
    jacobi_svd(X, V, sv)
    r = 0
    while r < K and sv[r] > rtol * sv[0] and sv[r] > floor and sv[r] > 0.0:
        r += 1
    # G = M^-1 U_r = Mq^T V_r diag(s)^-1;  N = U_r^T G;  c = diag(s)^-1 V_r^T b
    G = np.zeros((nv, r))
    c = np.zeros(r)
    for j in range(r):
        for k in range(K):
            f = V[k, j] / sv[j]
            c[j] += f * b[k]
            for i in range(nv):
                G[i, j] += f * Mq[k, i]
    N = np.zeros((r, r))
    for i in range(r):
        for j in range(i + 1):
            s = 0.0
            t = 0.0
            for k in range(nv):
                s += X[k, i] * G[k, j]
                t += X[k, j] * G[k, i]
            N[i, j] = 0.5 * (s / sv[i] + t / sv[j])  # U_i = X_i / s_i; N_ij and N_ji averaged
            N[j, i] = N[i, j]
    # N = L L^T, a direction whose pivot vanishes (a singular M) dropped
    L = np.zeros((r, r))
    nmax = 0.0
    for j in range(r):
        nmax = max(nmax, N[j, j])
    rank = 0
    for j in range(r):
        s = N[j, j]
        for k in range(j):
            s -= L[j, k] * L[j, k]
        if not s > N_PIVOT_RTOL * nmax:
            continue  # its column of L stays zero
        rank += 1
        d = np.sqrt(s)
        L[j, j] = d
        for i in range(j + 1, r):
            s = N[i, j]
            for k in range(j):
                s -= L[i, k] * L[j, k]
            L[i, j] = s / d
    z = c.copy()
    for i in range(r):
        s = z[i]
        for k in range(i):
            s -= L[i, k] * z[k]
        z[i] = s / L[i, i] if L[i, i] > 0.0 else 0.0
    for i in range(r - 1, -1, -1):
        s = z[i]
        for k in range(i + 1, r):
            s -= L[k, i] * z[k]
        z[i] = s / L[i, i] if L[i, i] > 0.0 else 0.0
    x = np.zeros(K)
    for j in range(r):
        f = z[j] / sv[j]
        for k in range(K):
            x[k] += V[k, j] * f
    return x, rank


@njit
def solve_delassus(
    m: ModelArrays,
    S: np.ndarray,
    A: np.ndarray,
    b: np.ndarray,
    Wr: np.ndarray,
    ra: np.ndarray,
    rb: np.ndarray,
    Mq: np.ndarray,
    rtol: float,
    floor: float,
) -> tuple:
    """``A x = b`` for the Delassus matrix ``A = C M^-1 C^T`` (K, K) of the rows ``Wr`` (K, 6)
    (``+`` on bodies ``ra``, ``-`` on ``rb``), ``Mq`` (K, nv) their responses ``(M^-1
    C^T)^T``: Cholesky, or where a pivot falls below :data:`DELASSUS_PIVOT_RTOL` of the
    largest diagonal the rank-revealing solve on ``C`` (module docstring: rank at ``rtol`` of
    the largest singular value of ``C``, minimum-norm ``x``). Returns ``(x, rank)``."""
    K = A.shape[0]
    if K == 0:
        return np.zeros(0), 0
    x, ok = _cholesky_solve(A, b, DELASSUS_PIVOT_RTOL)
    if ok:
        return x, K
    return _rank_revealing_solve(m, S, b, Wr, ra, rb, Mq, rtol, floor)


@njit
def solve_firm(
    m: ModelArrays,
    S: np.ndarray,
    A: np.ndarray,
    b: np.ndarray,
    Wr: np.ndarray,
    ra: np.ndarray,
    rb: np.ndarray,
    Mq: np.ndarray,
    rtol: float,
    floor: float,
    keep: np.ndarray,
    firm: np.ndarray,
) -> tuple:
    """:func:`solve_delassus` on the rows that count for the motion: of the ``keep[k]`` rows
    of each cut hinge ``k`` (consecutive, in hinge order) the ``firm[k]`` leading ones; the
    other rows' entries of ``x`` are zero (their multipliers none). Returns ``(x, rank)``
    (x (K,) over all the rows); the plain solve when every row counts (the common case,
    away from loop singularities)."""
    nl = keep.shape[0]
    K = b.shape[0]
    n = 0
    for lp in range(nl):
        n += firm[lp]
    if n == K:
        return solve_delassus(m, S, A, b, Wr, ra, rb, Mq, rtol, floor)
    idx = np.empty(n, dtype=np.int64)
    j = 0
    k0 = 0
    for lp in range(nl):
        for t in range(firm[lp]):
            idx[j] = k0 + t
            j += 1
        k0 += keep[lp]
    Af = np.empty((n, n))
    for a in range(n):
        for c in range(n):
            Af[a, c] = A[idx[a], idx[c]]
    xf, rank = solve_delassus(m, S, Af, b[idx], Wr[idx], ra[idx], rb[idx], Mq[idx], rtol, floor)
    x = np.zeros(K)
    for a in range(n):
        x[idx[a]] = xf[a]
    return x, rank
