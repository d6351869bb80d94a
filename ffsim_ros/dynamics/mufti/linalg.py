"""Solvers of the Lagrangian (KKT) system of Gauss's principle (seed 001, eqs. 10, 49, 63).

The system, in the seed's sign convention, is::

    [ J   -G^T ] [x]   [ u]
    [-G    0   ] [l] = [-b]          (J x = u + G^T l,  G x = b)

with ``J = diag(m_i E_3, I_i)`` (``6 nb x 6 nb``, the body masses and inertia matrices about
the CoMs in the inertial frame), ``x = [r''_i; w'_i]`` the body accelerations, ``G`` the
constraint Jacobian (``H^T`` of the Appendix) and ``l`` the Lagrange multipliers (hinge forces
and constraint torques).

Three ways of solving it are provided:

* :func:`solve_kkt` -- the sparse symmetric indefinite matrix is assembled with
  :mod:`scipy.sparse` and factorized by ``splu`` (the seed: "sparse matrix techniques can be
  used", after eq. 10 and eq. 49);
* :func:`solve_nullspace` -- Remark 2, eq. 40-c: ``Z`` spans the null space of ``G``
  (``Z^T H = 0``), found from the QR factorization of ``H = G^T`` (Appendix, case 1):
  ``H = (Q, Q') (R; 0)`` gives ``Z = Q'`` and the particular solution ``Y b`` with
  ``Y = Q R^-T`` (eq. A-6); the reduced matrix ``Z^T J Z`` is symmetric positive definite and
  factorized by Cholesky;
* rank-deficient constraints (Appendix, case 2, eqs. A-7 to A-10): ``G = U S W^T`` by SVD;
  the ``K`` independent combinations ``U_K^T G x = U_K^T b`` replace ``G x = b`` and the
  multipliers are returned as ``l = U_K l'``, the minimum-norm multipliers (the redundant
  constraint forces are statically indeterminate).
"""

from __future__ import annotations

import warnings
from typing import NamedTuple

import numpy as np
import scipy.linalg as sla
import scipy.sparse as sp
import scipy.sparse.linalg as spla


class RedundantConstraintWarning(UserWarning):
    """The constraint Jacobian is rank deficient (Appendix, case 2); solved by SVD."""


class Triplets(NamedTuple):
    """A sparse matrix as COO triplets (cheaper to build than a scipy object per call)."""

    row: np.ndarray
    col: np.ndarray
    val: np.ndarray
    shape: tuple[int, int]

    def dense(self) -> np.ndarray:
        """The matrix as a dense ndarray (duplicates summed)."""
        out = np.zeros(self.shape)
        np.add.at(out, (self.row, self.col), self.val)
        return out

    def csr(self) -> sp.csr_matrix:
        """The matrix as ``scipy.sparse.csr_matrix``."""
        return sp.csr_matrix((self.val, (self.row, self.col)), shape=self.shape)


def _triplets(A: Triplets | np.ndarray) -> Triplets:
    if isinstance(A, Triplets):
        return A
    A = np.asarray(A, dtype=float)
    r, c = np.nonzero(A)
    return Triplets(r, c, A[r, c], A.shape)


def _dense(A: Triplets | np.ndarray) -> np.ndarray:
    return A.dense() if isinstance(A, Triplets) else np.asarray(A, dtype=float)


def block_mass_matrix(mass: np.ndarray, inertia: np.ndarray) -> Triplets:
    """``J = diag(m_1 E_3, I_1, ..., m_nb E_3, I_nb)`` (seed 001, eq. 10), sparse.

    Parameters
    ----------
    mass : (nb,) body masses [kg].
    inertia : (nb, 3, 3) inertia matrices about the CoMs, inertial frame [kg m^2].

    Returns
    -------
    Triplets, (6 nb, 6 nb)
    """
    nb = mass.shape[0]
    base = 6 * np.arange(nb)
    lin = base[:, None] + np.arange(3)[None, :]  # (nb, 3)
    ang = base[:, None, None] + 3 + np.arange(3)[None, :, None]
    ang_c = base[:, None, None] + 3 + np.arange(3)[None, None, :]
    rows = np.concatenate((lin.ravel(), np.broadcast_to(ang, (nb, 3, 3)).ravel()))
    cols = np.concatenate((lin.ravel(), np.broadcast_to(ang_c, (nb, 3, 3)).ravel()))
    vals = np.concatenate((np.repeat(mass, 3), inertia.ravel()))
    return Triplets(rows, cols, vals, (6 * nb, 6 * nb))


def reduce_redundant(
    G: Triplets | np.ndarray, b: np.ndarray, rtol: float = 1e-9
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """Independent combinations of the constraints by SVD (Appendix, case 2, eq. A-9).

    Parameters
    ----------
    G : (m, N) constraint Jacobian;  b : (m,) right-hand side.
    rtol : float
        Singular values below ``rtol * s_max`` count as zero.

    Returns
    -------
    G_K : (K, N) ndarray ``S_K W_K^T``;  b_K : (K,) ``U_K^T b``;
    U_K : (m, K) ndarray, or None when ``G`` has full row rank (then ``G_K = G``, ``b_K = b``).
    """
    Gd = _dense(G)
    U, s, Wt = np.linalg.svd(Gd, full_matrices=False)
    if s.size == 0:
        return Gd, b, None
    K = int(np.sum(s > rtol * s[0]))
    if K == Gd.shape[0]:
        return Gd, b, None
    return s[:K, None] * Wt[:K], U[:, :K].T @ b, U[:, :K]


def solve_kkt(J: Triplets, G: Triplets | np.ndarray, u: np.ndarray, b: np.ndarray):
    """Solve the sparse Lagrangian system (seed 001, eqs. 10 / 49 / 63) by sparse LU.

    Parameters
    ----------
    J : (N, N) block-diagonal mass matrix (triplets);  G : (m, N), full row rank.
    u : (N,) applied forces and velocity-product terms;  b : (m,) right-hand side.

    Returns
    -------
    x : (N,) accelerations;  lam : (m,) multipliers.
    """
    N = J.shape[0]
    m = G.shape[0]
    Jc, Gc = _triplets(J), _triplets(G)
    A = sp.csc_matrix(
        (
            np.concatenate((Jc.val, -Gc.val, -Gc.val)),
            (
                np.concatenate((Jc.row, N + Gc.row, Gc.col)),
                np.concatenate((Jc.col, Gc.col, N + Gc.row)),
            ),
        ),
        shape=(N + m, N + m),
    )
    rhs = np.concatenate((u, -b))
    try:
        sol = spla.splu(A).solve(rhs)
    except RuntimeError as exc:  # exactly singular factor
        raise np.linalg.LinAlgError(f'singular Lagrangian matrix: {exc}') from None
    return sol[:N], sol[N:]


def solve_nullspace(J: Triplets, G: Triplets | np.ndarray, u: np.ndarray, b: np.ndarray):
    """Null-space (Lagrange's form of d'Alembert's principle) solution, seed 001 eq. 40-c.

    ``H = G^T = (Q, Q') (R; 0)`` (Appendix, case 1), ``Z = Q'``, ``x = Y b + Z y`` with
    ``Y = Q R^-T`` (eq. A-6) and ``(Z^T J Z) y = Z^T (u - J Y b)`` solved by Cholesky; the
    multipliers follow from ``G^T l = J x - u``: ``l = R^-1 Q^T (J x - u)``.

    Returns
    -------
    x : (N,) accelerations;  lam : (m,) multipliers.
    """
    Gd = _dense(G)
    m = Gd.shape[0]
    Qf, Rf = sla.qr(Gd.T, mode='full')
    Q, Z, R = Qf[:, :m], Qf[:, m:], Rf[:m, :]
    xp = Q @ sla.solve_triangular(R, b, trans='T')
    Js = _triplets(J).csr()
    JZ = Js @ Z
    Kred = Z.T @ JZ
    y = sla.cho_solve(sla.cho_factor(Kred), Z.T @ (u - Js @ xp))
    x = xp + Z @ y
    lam = sla.solve_triangular(R, Q.T @ (Js @ x - u))
    return x, lam


def solve_lagrangian(
    J: Triplets,
    G: Triplets | np.ndarray,
    u: np.ndarray,
    b: np.ndarray,
    method: str,
    *,
    check_rank: bool = False,
    rtol: float = 1e-9,
    warn: bool = True,
):
    """Dispatch to :func:`solve_kkt` or :func:`solve_nullspace`, with the SVD reduction.

    Parameters
    ----------
    method : {'kkt', 'nullspace'}
    check_rank : bool
        Test ``G`` for rank deficiency first (closed chains); if deficient, warn with
        :class:`RedundantConstraintWarning` (unless ``warn`` is False) and solve the reduced
        system (Appendix, case 2).

    Returns
    -------
    x : (N,) ;  lam : (m,) (minimum-norm multipliers when the constraints are redundant);
    rank : int, the rank of ``G``.
    """
    m = G.shape[0]
    U = None
    if check_rank and m:
        Gk, bk, U = reduce_redundant(G, b, rtol)
        if U is not None and warn:
            warnings.warn(
                f'constraint Jacobian has rank {U.shape[1]} < {m} rows (redundant constraints, '
                'e.g. the out-of-plane rows of a planar loop): solved by SVD (seed 001, '
                'Appendix case 2) with minimum-norm multipliers',
                RedundantConstraintWarning,
                stacklevel=3,
            )
        if U is not None:
            G, b = Gk, bk
    if method == 'kkt':
        x, lam = solve_kkt(J, G, u, b)
    elif method == 'nullspace':
        x, lam = solve_nullspace(J, G, u, b)
    else:
        raise ValueError(f"method: expected one of ('kkt', 'nullspace'), got {method!r}")
    if U is not None:
        return x, U @ lam, U.shape[1]
    return x, lam, m
