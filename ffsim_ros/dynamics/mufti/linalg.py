"""Solvers of the Lagrangian (KKT) system of Gauss's principle [M eqs. 10, 49, 63].

The system, in the seed's sign convention, is::

    [ J   -G^T ] [x]   [ u]
    [-G    0   ] [l] = [-b]          (J x = u + G^T l,  G x = b)

with ``J = diag(m_i E_3, I_i)`` (``6 nb x 6 nb``, the body masses and inertia matrices about
the CoMs in the inertial frame), ``x = [r''_i; w'_i]`` the body accelerations, ``G`` the
constraint Jacobian (``H^T`` of [M Appendix]) and ``l`` the Lagrange multipliers (hinge forces
and constraint torques).

Four ways of solving it are provided:

* :func:`solve_kkt` -- the sparse symmetric indefinite matrix is assembled with
  :mod:`scipy.sparse` and factorized by ``splu`` (the seed: "sparse matrix techniques can be
  used", after [M eqs. 10, 49]);
* :func:`solve_nullspace` -- [M Remark 2, eq. 40-c]: ``Z`` spans the null space of ``G``
  (``Z^T H = 0``), found from the QR factorization of ``H = G^T`` [M Appendix case 1]:
  ``H = (Q, Q') (R; 0)`` gives ``Z = Q'`` and the particular solution ``Y b`` with
  ``Y = Q R^-T`` [M eq. A-6]; the reduced matrix ``Z^T J Z`` [M eq. A-2] is symmetric positive
  definite and factorized by Cholesky;
* :func:`solve_multipliers` -- [M eqs. 12-14] (and [M eq. 50], their analogue for
  [M eq. 49]): the accelerations are eliminated, ``x = J^-1 (u + G^T l)``, and the multipliers
  solve ``(G J^-1 G^T) l = b - G J^-1 u`` (the matrix of [M eq. A-1] with ``H = G^T``;
  symmetric positive definite for a full-row-rank ``G``). ``J^-1`` is block diagonal:
  ``diag(E_3 / m_i, I_i^-1)`` with each 3x3 ``I_i^-1`` in closed form (adjugate over
  determinant), so the only factorization is that of the sparse ``m x m`` multiplier matrix
  (SuperLU in symmetric mode, no pivoting, minimum-degree ordering on its pattern, i.e. a
  sparse ``L D L^T``);
* rank-deficient constraints [M Appendix case 2, eqs. A-7 to A-10]: ``G = U S W^T`` by SVD;
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
    """The constraint Jacobian is rank deficient [M Appendix case 2]; solved by SVD."""


class Triplets(NamedTuple):
    """A sparse matrix as COO triplets (cheaper to build than a scipy object per call)."""

    row: np.ndarray
    col: np.ndarray
    val: np.ndarray
    shape: tuple[int, int]

    def dense(self) -> np.ndarray:
        """The matrix as a dense ndarray (duplicates summed).

        Returns
        -------
        ndarray
            Of :attr:`shape`.
        """
        out = np.zeros(self.shape)
        np.add.at(out, (self.row, self.col), self.val)
        return out

    def csr(self) -> sp.csr_matrix:
        """The matrix as ``scipy.sparse.csr_matrix``.

        Returns
        -------
        scipy.sparse.csr_matrix
        """
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
    """``J = diag(m_1 E_3, I_1, ..., m_nb E_3, I_nb)`` [M eq. 10], sparse.

    Parameters
    ----------
    mass : (nb,) body masses [kg].
    inertia : (nb, 3, 3) inertia matrices about the CoMs, inertial frame [kg m^2].

    Returns
    -------
    Triplets, (6 nb, 6 nb) [kg, kg m^2]
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


def inverse_3x3(A: np.ndarray) -> np.ndarray:
    """Inverses of (..., 3, 3) matrices in closed form (adjugate / determinant).

    Parameters
    ----------
    A : (..., 3, 3) ndarray
        Matrices (inertia tensors here [kg m^2], any frame: the inverse is in the same frame,
        in the inverse unit).

    Returns
    -------
    (..., 3, 3) ndarray

    Raises
    ------
    numpy.linalg.LinAlgError
        If a matrix is singular (zero determinant).
    """
    a, b, c = A[..., 0, 0], A[..., 0, 1], A[..., 0, 2]
    d, e, f = A[..., 1, 0], A[..., 1, 1], A[..., 1, 2]
    g, h, i = A[..., 2, 0], A[..., 2, 1], A[..., 2, 2]
    co = np.stack(
        (
            np.stack((e * i - f * h, c * h - b * i, b * f - c * e), axis=-1),
            np.stack((f * g - d * i, a * i - c * g, c * d - a * f), axis=-1),
            np.stack((d * h - e * g, b * g - a * h, a * e - b * d), axis=-1),
        ),
        axis=-2,
    )  # adjugate
    det = a * co[..., 0, 0] + b * co[..., 1, 0] + c * co[..., 2, 0]
    if np.any(det == 0.0):
        raise np.linalg.LinAlgError('singular 3x3 inertia block (zero determinant)')
    return co / det[..., None, None]


def mass_blocks(J: Triplets) -> tuple[np.ndarray, np.ndarray]:
    """``(m_i, I_i)`` of a block mass matrix ``J = diag(m_i E_3, I_i)`` [M eq. 10].

    Parameters
    ----------
    J : Triplets, (6 nb, 6 nb), as built by :func:`block_mass_matrix`.

    Returns
    -------
    mass : (nb,) [kg];  inertia : (nb, 3, 3) [kg m^2].

    Raises
    ------
    ValueError
        If ``J`` is not of that block-diagonal form.
    """
    N = J.shape[0]
    if J.shape[1] != N or N % 6:
        raise ValueError(f'J: expected a square matrix of size 6 nb, got shape {J.shape}')
    blk = np.zeros((N // 6, 6, 6))
    bi = J.row // 6
    if np.any(J.col // 6 != bi):
        raise ValueError('J: expected a block-diagonal matrix of 6x6 blocks, got off-block terms')
    np.add.at(blk, (bi, J.row % 6, J.col % 6), J.val)
    mass = blk[:, 0, 0].copy()
    rest = blk.copy()
    rest[:, :3, :3] -= mass[:, None, None] * np.eye(3)
    rest[:, 3:, 3:] = 0.0
    if np.any(np.abs(rest) > 1e-12 * max(1.0, float(np.max(np.abs(blk), initial=0.0)))):
        raise ValueError('J: expected 6x6 blocks diag(m E_3, I), got another structure')
    return mass, blk[:, 3:, 3:].copy()


def block_mass_inverse(mass: np.ndarray, inertia: np.ndarray) -> Triplets:
    """``J^-1 = diag(E_3 / m_i, I_i^-1)`` [M eqs. 12-13] with each ``I_i^-1`` in closed form.

    Parameters
    ----------
    mass : (nb,) body masses [kg], positive (no frame: scalars).
    inertia : (nb, 3, 3) about the CoMs, inertial frame [kg m^2].

    Returns
    -------
    Triplets, (6 nb, 6 nb) [1/kg, 1/(kg m^2)]
    """
    if np.any(mass <= 0.0):
        raise ValueError(f'mass: expected positive body masses, got {mass.tolist()}')
    return block_mass_matrix(1.0 / mass, inverse_3x3(inertia))


def reduce_redundant(
    G: Triplets | np.ndarray, b: np.ndarray, rtol: float = 1e-9
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """Independent combinations of the constraints by SVD [M Appendix case 2, eqs. A-7 to A-9].

    Parameters
    ----------
    G : (m, N) constraint Jacobian on the stacked body accelerations, inertial frame
        (coefficients [-] or lever arms [m]).
    b : (m,) right-hand side, inertial frame [m/s^2 | rad/s^2 per row].
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


def solve_kkt(
    J: Triplets, G: Triplets | np.ndarray, u: np.ndarray, b: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Solve the sparse Lagrangian system [M eqs. 10, 49, 63] by sparse LU.

    Parameters
    ----------
    J : (N, N) ``diag(m_i E_3, I_i)`` (triplets), ``N = 6 nb``, inertial frame [kg, kg m^2].
    G : (m, N) constraint Jacobian on ``x``, inertial frame (coefficients [-] on ``r''``,
        [-] or lever arms [m] on ``w'``), full row rank.
    u : (N,) applied forces and velocity-product terms ``[force; moment about the CoM]`` per
        body, inertial frame [N, N m].
    b : (m,) right-hand side of ``G x = b``, inertial frame [m/s^2 | rad/s^2 per row].

    Returns
    -------
    x : (N,) body accelerations ``[r''_i; w'_i]``, inertial frame [m/s^2, rad/s^2];
    lam : (m,) multipliers [N | N m per row].
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


def solve_nullspace(
    J: Triplets, G: Triplets | np.ndarray, u: np.ndarray, b: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Null-space (Lagrange's form of d'Alembert's principle) solution [M eqs. 40-a to 40-c].

    ``H = G^T = (Q, Q') (R; 0)`` [M Appendix case 1], ``Z = Q'``, ``x = Y b + Z y`` with
    ``Y = Q R^-T`` [M eq. A-6] and ``(Z^T J Z) y = Z^T (u - J Y b)`` solved by Cholesky; the
    multipliers follow from ``G^T l = J x - u``: ``l = R^-1 Q^T (J x - u)``.

    Parameters
    ----------
    J : (N, N) ``diag(m_i E_3, I_i)`` (triplets), ``N = 6 nb``, inertial frame [kg, kg m^2].
    G : (m, N) constraint Jacobian on ``x``, inertial frame (coefficients [-] on ``r''``,
        [-] or lever arms [m] on ``w'``), full row rank.
    u : (N,) applied forces and velocity-product terms ``[force; moment about the CoM]`` per
        body, inertial frame [N, N m].
    b : (m,) right-hand side of ``G x = b``, inertial frame [m/s^2 | rad/s^2 per row].

    Returns
    -------
    x : (N,) body accelerations ``[r''_i; w'_i]``, inertial frame [m/s^2, rad/s^2];
    lam : (m,) multipliers [N | N m per row].
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


def singular_bodies(mass: np.ndarray, inertia: np.ndarray, rtol: float = 1e-10) -> np.ndarray:
    """Indices of the bodies whose block ``diag(m_i E_3, I_i)`` has no usable inverse.

    A massless body, a point mass (``I_i = 0``) or a thin rod (``I_i`` of rank 2): physical,
    common in real robots' URDFs (a sensor frame with a mass, a gripper as a point), but
    ``J_i^-1`` of [M eqs. 12-13] does not exist. Singular means a principal moment below ``rtol``
    times the largest of the system (the system's scale, not the body's).

    Parameters
    ----------
    mass : (nb,) body masses [kg] (no frame: scalars).
    inertia : (nb, 3, 3) about the CoMs [kg m^2], in any frame (eigenvalues only).
    rtol : float
        Relative threshold on the principal moments [-].

    Returns
    -------
    (k,) int ndarray.
    """
    if mass.size == 0:
        return np.zeros(0, dtype=np.int64)
    eig = np.linalg.eigvalsh(inertia)
    scale = max(float(np.max(eig, initial=0.0)), 1e-300)
    return np.flatnonzero((mass <= 0.0) | (eig[:, 0] <= rtol * scale))


def solve_multipliers(
    J: Triplets, G: Triplets | np.ndarray, u: np.ndarray, b: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Eliminate the accelerations, solve for the multipliers [M eqs. 12-14, 50].

    From ``J x = u + G^T l``: ``x = J^-1 (u + G^T l)`` [M eqs. 12-13]; substituting into
    ``G x = b`` gives the multiplier system ([M eq. 14]; [M eq. 50] with the rotational rows of
    [M eq. 49])::

        (G J^-1 G^T) l = b - G J^-1 u

    The seed writes it with the opposite sign, ``-(C^T M^-1 C + L~^T I^-1 L~) f = C^T M^-1 u_1
    + L~^T I^-1 u_2 + u_3``, because its third row is ``-G x = u_3 = -b``. ``J^-1`` is formed
    per body in closed form (:func:`block_mass_inverse`); ``G J^-1 G^T`` is sparse, symmetric
    positive definite for a full-row-rank ``G``, and is factorized by SuperLU in symmetric
    mode without pivoting (a sparse ``L D L^T``, as in [M Appendix case 1]).

    A body with a singular block (:func:`singular_bodies`: a point mass, a massless link)
    leaves ``J`` without an inverse although the Lagrangian system has a unique solution.
    Then, exactly, ``J`` is replaced by ``J_r = J + r G^T G`` and ``u`` by ``u + r G^T b``
    (an augmented-Lagrangian term ``r G^T (G x - b)``, zero at the solution): ``J_r`` is
    positive definite whenever the system is regular, and it is factorized (sparse) instead
    of inverted per body, with ``r`` the largest body mass.

    Parameters
    ----------
    J : (N, N) ``diag(m_i E_3, I_i)`` (triplets), ``N = 6 nb``, inertial frame [kg, kg m^2].
    G : (m, N) constraint Jacobian on ``x``, inertial frame (coefficients [-] on ``r''``,
        [-] or lever arms [m] on ``w'``), full row rank.
    u : (N,) applied forces and velocity-product terms ``[force; moment about the CoM]`` per
        body, inertial frame [N, N m].
    b : (m,) right-hand side of ``G x = b``, inertial frame [m/s^2 | rad/s^2 per row].

    Returns
    -------
    x : (N,) body accelerations ``[r''_i; w'_i]``, inertial frame [m/s^2, rad/s^2];
    lam : (m,) multipliers [N | N m per row].
    """
    mass, inertia = mass_blocks(_triplets(J))
    m = G.shape[0]
    Gs = G.csr() if isinstance(G, Triplets) else sp.csr_matrix(np.asarray(G, dtype=float))
    if singular_bodies(mass, inertia).size and m:
        r = max(1.0, float(np.max(mass)))
        Jr = (_triplets(J).csr() + r * (Gs.T @ Gs)).tocsc()
        try:
            lu_j = spla.splu(Jr)
        except RuntimeError as exc:
            raise np.linalg.LinAlgError(f'singular augmented mass matrix: {exc}') from None
        u = u + r * (Gs.T @ b)
        JiGt = lu_j.solve(Gs.T.toarray())
        x0 = lu_j.solve(u)
    else:
        Jinv = block_mass_inverse(mass, inertia).csr()
        if m == 0:
            return Jinv @ u, np.zeros(0)
        JiGt = Jinv @ Gs.T
        x0 = Jinv @ u
    S = sp.csc_matrix(Gs @ JiGt)
    try:
        lu = spla.splu(
            S, permc_spec='MMD_AT_PLUS_A', diag_pivot_thresh=0.0, options={'SymmetricMode': True}
        )
        lam = lu.solve(b - Gs @ x0)
    except RuntimeError as exc:  # exactly singular factor
        raise np.linalg.LinAlgError(f'singular multiplier matrix G J^-1 G^T: {exc}') from None
    return x0 + JiGt @ lam, lam


def anchor_prescribed_bodies(
    J: Triplets, G: Triplets, u: np.ndarray, b: np.ndarray
) -> tuple[Triplets, np.ndarray]:
    """Make ``J`` invertible on bodies whose motion is prescribed [M Remark 3], exactly.

    A body welded to an external body of prescribed motion (the hinge ``h_0``) has six rows
    ``P x_i = b_P`` on its own accelerations only, with ``P^T P = E_6`` (rows ``-E_6``). Its
    block of ``J`` may be singular (a massless ground link) although the Lagrangian system is
    not. Adding ``rho P^T (P x_i - b_P) = 0`` to its Newton-Euler rows (an augmented
    Lagrangian term that vanishes at the solution) gives ``J_i + rho E_6`` and
    ``u_i + rho P^T b_P``: the same accelerations and multipliers, and a block still of the
    form ``diag(m E_3, I)`` whose closed-form inverse [M eqs. 12-13] need.

    Parameters
    ----------
    J : (N, N) ``diag(m_i E_3, I_i)`` (triplets), ``N = 6 nb``, inertial frame [kg, kg m^2].
    G : (m, N) constraint Jacobian on ``x`` (triplets), inertial frame (coefficients [-] on
        ``r''``, [-] or lever arms [m] on ``w'``).
    u : (N,) applied forces and velocity-product terms ``[force; moment about the CoM]`` per
        body, inertial frame [N, N m].
    b : (m,) right-hand side of ``G x = b``, inertial frame [m/s^2 | rad/s^2 per row].

    Returns
    -------
    J' : Triplets (N, N);  u' : (N,)
    """
    m = G.shape[0]
    if m == 0 or G.row.size == 0:
        return J, u
    row_body_min = np.full(m, np.iinfo(np.int64).max)
    row_body_max = np.full(m, -1)
    body = G.col // 6
    np.minimum.at(row_body_min, G.row, body)
    np.maximum.at(row_body_max, G.row, body)
    single = np.flatnonzero(row_body_min == row_body_max)
    if single.size < 6:
        return J, u
    Gd = np.zeros((m, 6))
    sel = np.isin(G.row, single)
    np.add.at(Gd, (G.row[sel], G.col[sel] % 6), G.val[sel])
    mass, inertia = mass_blocks(J)
    rho = max(1.0, float(np.max(mass, initial=0.0)))
    u = u.copy()
    changed = False
    for i in np.unique(row_body_min[single]):
        rows = single[row_body_min[single] == i]
        P = Gd[rows]
        if rows.size == 6 and np.allclose(P.T @ P, np.eye(6), rtol=0.0, atol=1e-14):
            mass[i] += rho
            inertia[i] = inertia[i] + rho * np.eye(3)
            u[6 * i : 6 * i + 6] += rho * (P.T @ b[rows])
            changed = True
    return (block_mass_matrix(mass, inertia), u) if changed else (J, u)


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
) -> tuple[np.ndarray, np.ndarray, int]:
    """Dispatch to :func:`solve_kkt`, :func:`solve_nullspace` or :func:`solve_multipliers`,
    with the SVD reduction.

    Parameters
    ----------
    J : (N, N) ``diag(m_i E_3, I_i)`` (triplets), ``N = 6 nb``, inertial frame [kg, kg m^2].
    G : (m, N) constraint Jacobian on ``x``, inertial frame (coefficients [-] on ``r''``,
        [-] or lever arms [m] on ``w'``) (any rank with ``check_rank``).
    u : (N,) applied forces and velocity-product terms ``[force; moment about the CoM]`` per
        body, inertial frame [N, N m].
    b : (m,) right-hand side of ``G x = b``, inertial frame [m/s^2 | rad/s^2 per row].
    method : {'kkt', 'nullspace', 'multipliers'}
    check_rank : bool
        Test ``G`` for rank deficiency first (closed chains); if deficient, warn with
        :class:`RedundantConstraintWarning` (unless ``warn`` is False) and solve the reduced
        system [M Appendix case 2].
    rtol : float
        Rank threshold relative to the largest singular value of ``G`` [-].
    warn : bool
        Warn of a rank deficiency (with ``check_rank``).

    Returns
    -------
    x : (N,) body accelerations ``[r''_i; w'_i]``, inertial frame [m/s^2, rad/s^2];
    lam : (m,) multipliers [N | N m per row] (minimum-norm when the constraints are
        redundant).
    rank : int, the rank of ``G``.
    """
    m = G.shape[0]
    U = None
    if method == 'multipliers' and isinstance(G, Triplets):
        J, u = anchor_prescribed_bodies(_triplets(J), G, u, b)
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
    elif method == 'multipliers':
        x, lam = solve_multipliers(J, G, u, b)
    else:
        raise ValueError(
            f"method: expected one of ('kkt', 'nullspace', 'multipliers'), got {method!r}"
        )
    if U is not None:
        return x, U @ lam, U.shape[1]
    return x, lam, m
