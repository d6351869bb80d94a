"""Sparse ``L^T L`` factorization of the inertia matrix with the tree's sparsity, and solves
with many right-hand sides (Featherstone 2008, sec. 6.5).

``H[a, b]`` is zero unless DoF ``a`` is an ancestor of ``b`` or the other way round, so ``H``
factors as ``L^T L`` with ``L`` lower triangular and zero wherever ``H`` is: no fill-in. The
DoF-level parent array ``lam`` (:func:`dof_parents`) drives the loops: the cost is
``O(sum of depth^2)`` for the factorization and ``O(sum of depths)`` per right-hand side, the
dense Cholesky's ``O(nv^3)`` and ``O(nv^2)`` on a chain.
"""

from __future__ import annotations

import numpy as np

from ..jit import njit, njit_leaf
from .layout import ModelArrays


@njit_leaf
def dof_parents(m: ModelArrays, lam: np.ndarray) -> None:
    """``lam[c]``: the DoF before ``c`` on the path to the root (the previous DoF of the same
    joint, else the last DoF of the nearest ancestor joint that has one), or -1.

    Parameters
    ----------
    lam : (nv,) int64 output.
    """
    for i in range(m.parent.shape[0]):
        c0 = m.iv[i]
        nj = m.nvj[i]
        if nj == 0:
            continue
        k = m.parent[i]
        while k >= 0 and m.nvj[k] == 0:
            k = m.parent[k]
        lam[c0] = m.iv[k] + m.nvj[k] - 1 if k >= 0 else -1
        for c in range(c0 + 1, c0 + nj):
            lam[c] = c - 1


@njit
def ltl_factor(H: np.ndarray, lam: np.ndarray) -> None:
    """Overwrite the lower triangle of ``H`` (nv, nv), symmetric positive definite with the
    tree sparsity of ``lam``, by ``L`` with ``H = L^T L`` (RBDA Table 6.3; the strictly upper
    triangle is left as it was).

    Raises
    ------
    ValueError
        When a pivot is not finite (a non-finite state or an overflow) or not positive (a
        degenerate model), saying which.
    """
    for k in range(H.shape[0] - 1, -1, -1):
        d = H[k, k]
        if not d > 0.0:
            if not np.isfinite(d):
                raise ValueError('mass matrix is not finite: a NaN or an overflow')
            raise ValueError('mass matrix is not positive definite')
        d = np.sqrt(d)
        H[k, k] = d
        i = lam[k]
        while i >= 0:
            H[k, i] /= d
            i = lam[i]
        i = lam[k]
        while i >= 0:
            hki = H[k, i]
            j = i
            while j >= 0:
                H[i, j] -= hki * H[k, j]
                j = lam[j]
            i = lam[i]


@njit
def ltl_solve_rows(L: np.ndarray, lam: np.ndarray, X: np.ndarray) -> None:
    """``X <- H^-1 X`` in place for ``H = L^T L`` from :func:`ltl_factor`; ``X`` (nv, k) holds
    ``k`` right-hand sides as columns (each step is an operation on whole rows, contiguous)."""
    n = L.shape[0]
    k = X.shape[1]
    for c in range(n - 1, -1, -1):  # L^T y = x
        d = 1.0 / L[c, c]
        for j in range(k):
            X[c, j] *= d
        i = lam[c]
        while i >= 0:
            lci = L[c, i]
            for j in range(k):
                X[i, j] -= lci * X[c, j]
            i = lam[i]
    for c in range(n):  # L x = y
        i = lam[c]
        while i >= 0:
            lci = L[c, i]
            for j in range(k):
                X[c, j] -= lci * X[i, j]
            i = lam[i]
        d = 1.0 / L[c, c]
        for j in range(k):
            X[c, j] *= d


@njit
def ltl_solve(L: np.ndarray, lam: np.ndarray, x: np.ndarray) -> None:
    """``x <- H^-1 x`` in place for one right-hand side ``x`` (nv,)."""
    n = L.shape[0]
    for c in range(n - 1, -1, -1):
        x[c] /= L[c, c]
        i = lam[c]
        while i >= 0:
            x[i] -= L[c, i] * x[c]
            i = lam[i]
    for c in range(n):
        i = lam[c]
        while i >= 0:
            x[c] -= L[c, i] * x[i]
            i = lam[i]
        x[c] /= L[c, c]
