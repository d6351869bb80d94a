"""Trees of ball-and-socket joints and their reduced forms [M sec. 3.1, eqs. 6-38].

This module takes the maximal-coordinate description the seed itself uses (:class:`BallTree`;
:func:`model_ball_tree` / :func:`barycentric_dynamics` build it from a floating-base
:class:`~ffsim_ros.dynamics.model.Model` of spherical and revolute joints): ``n`` rigid bodies,
the directed tree of their ``n - 1`` hinges in a regular labeling, masses ``m_i``, inertia
matrices ``I_i`` about the CoMs ``C_i`` (body frames) and hinge vectors ``l_ij`` from ``C_i``
to hinge ``j`` (body frames). Bodies are numbered from 0 (the root, the seed's ``b_1``) and
hinge ``j`` is the arc into body ``j + 1`` (module :mod:`.graph`): its initial vertex ``j+``
is ``parent[j + 1]``, its final vertex ``j-`` is ``j + 1``. The hinge force ``f_j`` and torque
``g_j`` act positively on ``j+`` and negatively on ``j-``.

Everything below is in the inertial frame: ``L_ij = c_ij R_i l_ij`` (the seed's matrix ``L``,
which carries the incidence sign), ``I = diag(R_i I_i R_i^T)``, ``w_i`` the angular velocities,
``x~`` the cross-product matrix [M eq. 11]. The Lagrangian system [M eq. 10] is::

    [ M    0    -C   ] [r'']   [u_1]     u_1 = F
    [ 0    I    -L~  ] [w' ] = [u_2]     u_2 = G + C g - h^,   h^_i = w_i x I_i w_i
    [-C^T -L~^T  0   ] [f  ]   [u_3]     u_3_j = sum_i w_i x (w_i x L_ij)   (= L^^T 1_n)

**OCR notes.** The second row of the printed [M eq. 10] shows ``-L''`` for ``-L~``;
``E = T_1 (T_1 M T_1^T)^-1 T_1^T`` after [M eq. 19] has its transposes swapped (it must be the
``n x n`` matrix ``T_1^T (T_1 M T_1^T)^-1 T_1``, which gives the ``1_n 1_n^T / m`` of
[M eq. 26]); the last velocity term of [M eq. 29] is ``-D~ M D^^T 1_n`` with
``D^_ik = w_i x (w_i x d_ik)`` (printed ``-D~ M (D~)^T L^_n``); [M eqs. 30-31] lost the
subscript and tildes of ``-sum_k m_k d~_ik d~_ik`` and ``-sum_k m_k d~_ik d~_jk = m d~_ij d~_ji``;
in [M eqs. 35-38] ``K_ij = m d~_ij d~_ji``, ``h'_i = w_i x K_ii w_i`` and the garbled
``N (1/n) Delta u~_2`` is ``+ N 1_n`` with the 3-vectors
``N_ij = -w_j x (K_ji w_j) + m |w_j|^2 d_ji x d_ij`` (``i != j``, ``N_ii = 0``); [M eq. 50]
is the display before [M eq. 51], whose number the OCR lost. Each of these was derived again
(docs/mufti.md) and the forms are checked against each other, the KKT system and Pinocchio's
ABA.

Methods of :func:`ball_tree_dynamics`:

* ``'kkt'``: [M eq. 10], sparse LU (:func:`.linalg.solve_kkt`);
* ``'eq14'``: [M eqs. 12-14], the ``3(n-1)`` hinge-force system
  (:func:`.linalg.solve_multipliers`);
* ``'eq16'``: [M eqs. 15-16], an ``n``-block system in ``w'`` with ``A = (C^T M^-1 C)^-1``
  inverted numerically;
* ``'eq28'``: [M eqs. 17-28], ``A = B M B^T`` and ``B = T_2 mu`` analytic, the barycentric
  matrix ``D = -L T_2 mu``; ``r''`` and ``f`` from the analytic inverse of [M eq. 19];
* ``'eq38'``: [M eqs. 30-38], ``K`` assembled from the augmented-body inertias ``K_ii`` and
  ``K_ij = m d~_ij d~_ji``, right-hand side ``-h' + D~ F + G + C g + N 1_n``.

Pin joints ([M sec. 3.2], ``BallTree.pin_axes``) add the rows ``Q^T C^T w' = ...`` of
[M eq. 48]: ``'kkt'`` then solves [M eq. 49], ``'eq14'`` [M eq. 50], and ``'eq16'``,
``'eq28'``, ``'eq38'`` solve [M eq. 51] ``[[K, -C Q], [-Q^T C^T, 0]] [w'; lambda] =
[u~_2; u_4]`` with their ``K``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np
import scipy.linalg as sla

from ..inputs import ArrayLike, real_array
from ..kernels.layout import REVOLUTE
from ..lie import are_rotations, perpendicular_basis, skew
from ..model import Model
from .graph import incidence_matrix, path_matrix
from .linalg import block_mass_matrix, singular_bodies, solve_kkt, solve_multipliers
from .tree import (
    actuation,
    applied_forces,
    bodies,
    checked_state,
    effective_efforts,
    joint_accelerations,
)

METHODS = ('kkt', 'eq14', 'eq16', 'eq28', 'eq38')


def _blocks(X: np.ndarray) -> np.ndarray:
    """(p, q, 3, 3) blocks as a dense (3p, 3q) matrix."""
    p, q = X.shape[:2]
    return X.transpose(0, 2, 1, 3).reshape(3 * p, 3 * q)


def _array(x: ArrayLike, shape: tuple[int, ...], name: str) -> np.ndarray:
    a = np.asarray(real_array(x, name), dtype=float)
    if a.shape != shape:
        raise ValueError(f'{name}: expected shape {shape}, got {a.shape}')
    if not np.all(np.isfinite(a)):
        raise ValueError(f'{name}: expected finite values, got {a}')
    return a


# ----------------------------------------------------------------------------------------------
# the system
# ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class BallTree:
    """``n`` rigid bodies joined by ``n - 1`` ball-and-socket joints [M sec. 3.1].

    Parameters
    ----------
    parent : (n,) array_like of int
        Parent (initial vertex of the hinge into the body) of each body, ``-1`` for the root
        (body 0); a regular labeling: ``parent[i] < i``.
    mass : (n,) array_like
        ``m_i`` [kg], positive.
    inertia : (n, 3, 3) array_like
        ``I_i`` about ``C_i``, body frame ``i`` [kg m^2], symmetric positive definite.
    hinge_in_parent : (n - 1, 3) array_like
        ``l_{j+, j}``: from the CoM of the parent ``j+ = parent[j + 1]`` to hinge ``j``, in the
        parent's body frame [m].
    hinge_in_child : (n - 1, 3) array_like
        ``l_{j-, j}``: from the CoM of the child ``j- = j + 1`` to hinge ``j``, in the child's
        body frame [m].
    pin_axes : (n - 1, 3) array_like, optional
        [M sec. 3.2]: a unit row makes hinge ``j`` a pin joint about that axis, fixed in the
        parent's body frame (``p_j`` of [M eq. 43]); a zero row (the default for all) keeps it a
        ball-and-socket joint.

    Attributes
    ----------
    n : int
    total_mass : float
        ``m`` [kg].
    C : (n, n - 1) ndarray
        Incidence matrix [M eq. 1].
    T2 : (n - 1, n) ndarray
        Last rows of ``T = S^-1`` [M eqs. 22-25].
    l : (n, n - 1, 3) ndarray
        ``l_ij`` in body frame ``i`` (zero when hinge ``j`` is not on body ``i``) [m].
    """

    parent: np.ndarray
    mass: np.ndarray
    inertia: np.ndarray
    hinge_in_parent: np.ndarray
    hinge_in_child: np.ndarray
    pin_axes: np.ndarray | None = None
    n: int = field(init=False)
    total_mass: float = field(init=False)
    C: np.ndarray = field(init=False, repr=False)
    T2: np.ndarray = field(init=False, repr=False)
    l: np.ndarray = field(init=False, repr=False)  # noqa: E741

    def __post_init__(self) -> None:
        par = np.asarray(self.parent)
        if par.ndim != 1 or par.size < 1 or not np.issubdtype(par.dtype, np.integer):
            raise ValueError(
                f'parent: expected a non-empty 1-D integer array, got {par.dtype} {par.shape}'
            )
        n = par.size
        T = path_matrix(par)  # checks the tree and its regular labeling
        mass = _array(self.mass, (n,), 'mass')
        if np.any(mass <= 0.0):
            raise ValueError(f'mass: expected positive masses, got {mass.tolist()}')
        inertia = _array(self.inertia, (n, 3, 3), 'inertia')
        if not np.allclose(inertia, np.swapaxes(inertia, 1, 2), rtol=0.0, atol=1e-12):
            raise ValueError('inertia: expected symmetric 3x3 matrices, got an asymmetric one')
        singular = np.flatnonzero(np.linalg.eigvalsh(inertia)[:, 0] <= 0.0)
        if singular.size:
            raise ValueError(
                'inertia: expected positive definite matrices (the forms of section 3.1 invert '
                f'each body inertia), got singular ones at bodies {singular.tolist()} (a point '
                "mass or a rod: use method 'kkt', 'nullspace' or 'multipliers')"
            )
        lp = _array(self.hinge_in_parent, (n - 1, 3), 'hinge_in_parent')
        lc = _array(self.hinge_in_child, (n - 1, 3), 'hinge_in_child')
        axes = (
            np.zeros((n - 1, 3))
            if self.pin_axes is None
            else _array(self.pin_axes, (n - 1, 3), 'pin_axes')
        )
        norms = np.linalg.norm(axes, axis=1)
        if np.any((norms != 0.0) & (np.abs(norms - 1.0) > 1e-9)):
            raise ValueError(f'pin_axes: expected unit or zero rows, got norms {norms.tolist()}')
        lb = np.zeros((n, n - 1, 3))
        j = np.arange(n - 1)
        lb[par[1:], j] = lp
        lb[j + 1, j] = lc
        for name, val in (
            ('parent', par.astype(np.int64)),
            ('mass', mass),
            ('inertia', inertia),
            ('hinge_in_parent', lp),
            ('hinge_in_child', lc),
            ('pin_axes', axes),
            ('n', n),
            ('total_mass', float(mass.sum())),
            ('C', incidence_matrix(par).astype(float)),
            ('T2', T[1:].astype(float)),
            ('l', lb),
        ):
            if isinstance(val, np.ndarray):
                val.setflags(write=False)
            object.__setattr__(self, name, val)

    @property
    def mu(self) -> np.ndarray:
        """``mu = E_n - M 1_n 1_n^T / m`` [M eq. 26], (n, n): ``mu_kl = delta_kl - m_k / m``."""
        return np.eye(self.n) - np.outer(self.mass, np.ones(self.n)) / self.total_mass

    @property
    def B(self) -> np.ndarray:
        """``B = T_2 mu`` [M eq. 26] (the ``T_2 - T_2 M E`` of [M eq. 20]), (n - 1, n)."""
        return self.T2 @ self.mu

    def subtree_mass(self) -> np.ndarray:
        """(n,) mass of each body with all its descendants [kg].

        Returns
        -------
        (n,) ndarray
            [kg]
        """
        out = self.mass.copy()
        for i in range(self.n - 1, 0, -1):
            out[self.parent[i]] += out[i]
        return out


@dataclass(frozen=True)
class AugmentedBodies:
    """The augmented bodies of seed 001 (defined after [M eq. 29]), all in body frames.

    Body ``i`` with, at each of its hinges ``j``, a point mass equal to the mass of all bodies
    connected to ``i`` through ``j`` (directly or indirectly).

    Attributes
    ----------
    mass : (n,) [kg] -- each equals the total mass ``m``.
    barycenter : (n, 3) position of the barycenter (centre of mass of the augmented body)
        from ``C_i``, body frame ``i`` [m] (``= -d_ii``).
    hinge_masses : (n, n - 1) point mass of body ``i`` at hinge ``j`` (0 if not on ``i``) [kg].
    inertia : (n, 3, 3) ``K_ii`` in body frame ``i``: the inertia of the augmented body about
        its barycenter, ``I_i`` plus the point masses' ``-sum_k m_k d~_ik d~_ik`` [M eqs. 30, 35]
        [kg m^2]. Constant in the body frame (``K_ii = R_i (.) R_i^T`` inertial).
    """

    mass: np.ndarray
    barycenter: np.ndarray
    hinge_masses: np.ndarray
    inertia: np.ndarray


def augmented_bodies(tree: BallTree) -> AugmentedBodies:
    """Augmented bodies, barycenters and inertias ``K_ii`` [M eqs. 30, 35].

    Built geometrically from the point masses (not from ``D = -L T_2 mu``): the point mass at
    hinge ``j`` on its parent is the subtree mass below ``j``, on its child the rest ``m``
    minus that.

    Parameters
    ----------
    tree : BallTree

    Returns
    -------
    AugmentedBodies
        Masses [kg], barycenters [m] and inertias ``K_ii`` [kg m^2] in body frames.
    """
    n, m = tree.n, tree.total_mass
    sub = tree.subtree_mass()
    hm = np.zeros((n, n - 1))
    j = np.arange(n - 1)
    hm[tree.parent[1:], j] = sub[j + 1]
    hm[j + 1, j] = m - sub[j + 1]
    mass = tree.mass + hm.sum(axis=1)
    bary = np.einsum('ij,ijk->ik', hm, tree.l) / mass[:, None]
    rel_c = -bary  # C_i from the barycenter
    rel_h = tree.l - bary[:, None, :]  # hinges from the barycenter
    Sc = skew(rel_c)
    Sh = skew(rel_h)
    K = (
        tree.inertia
        - tree.mass[:, None, None] * Sc @ Sc
        - np.einsum('ij,ijab,ijbc->iac', hm, Sh, Sh)
    )
    return AugmentedBodies(mass, bary, hm, K)


def barycentric_vectors(tree: BallTree) -> np.ndarray:
    """Barycentric vectors ``d_ik`` from ``D = -L T_2 mu`` [M eqs. 28-31].

    ``d_ii`` is the vector from the barycenter of body ``i`` to its CoM ``C_i``; for ``k != i``
    ``d_ik`` is the vector from the barycenter of ``i`` to the hinge of ``i`` through which
    body ``k`` is connected to ``i``. All rows of ``L`` of body ``i`` share ``R_i``, so ``d_ik``
    is constant in body frame ``i``: ``d_ik(inertial) = R_i d_ik``.

    Parameters
    ----------
    tree : BallTree

    Returns
    -------
    (n, n, 3) ndarray
        ``d[i, k]`` in body frame ``i`` [m].
    """
    Lb = tree.C[:, :, None] * tree.l  # c_ij l_ij, body frame i
    return -np.einsum('ijx,jk->ikx', Lb, tree.B)


# ----------------------------------------------------------------------------------------------
# state and solution
# ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class BallSolution:
    """Forward dynamics of a :class:`BallTree` ([M eq. 10] and its reductions).

    Attributes
    ----------
    angular_accelerations : (n, 3) ``w'_i``, inertial frame [rad/s^2].
    com_accelerations : (n, 3) ``r''_i`` of every CoM, inertial frame [m/s^2].
    hinge_forces : (n - 1, 3) ``f_j``, inertial frame [N]: the force on the parent ``j+`` at
        the hinge (the child receives ``-f_j``).
    constraint_torques : (n - 1, 3) ``g^c_j = Q_j lambda_j`` [M eq. 53], inertial frame [N m],
        on the parent (zero at ball joints; normal to the axis at pin joints).
    """

    angular_accelerations: np.ndarray
    com_accelerations: np.ndarray
    hinge_forces: np.ndarray
    constraint_torques: np.ndarray


@dataclass(frozen=True)
class _Terms:
    """The inertial-frame pieces of [M eq. 10] for one state."""

    R: np.ndarray  # (n, 3, 3)
    w: np.ndarray  # (n, 3)
    I: np.ndarray  # (n, 3, 3) R_i I_i R_i^T  # noqa: E741
    L: np.ndarray  # (n, n - 1, 3) c_ij R_i l_ij
    u1: np.ndarray  # (n, 3)
    u2: np.ndarray  # (n, 3)
    u3: np.ndarray  # (n - 1, 3)
    q: np.ndarray  # (p, 3) constraint directions q_jk of the pin joints [M eq. 44]
    qj: np.ndarray  # (p,) their hinges
    bq: np.ndarray  # (p,) q . (w'_+ - w'_-) = (w_+ x q) . (w_- - w_+)  [M eq. 48]


def _terms(
    tree: BallTree,
    R: np.ndarray,
    w: np.ndarray,
    forces: np.ndarray | None,
    torques: np.ndarray | None,
    hinge_torques: np.ndarray | None,
) -> _Terms:
    n = tree.n
    R = _array(R, (n, 3, 3), 'R')
    bad = np.flatnonzero(~are_rotations(R))
    if bad.size:
        i = int(bad[0])
        err = float(np.abs(R[i] @ R[i].T - np.eye(3)).max())
        raise ValueError(
            f'R: expected rotation matrices (orthonormal, det +1), got R[{i}] with R R^T - E '
            f'up to {err:.2e} and det {np.linalg.det(R[i]):.6g}'
        )
    w = _array(w, (n, 3), 'w')
    F = np.zeros((n, 3)) if forces is None else _array(forces, (n, 3), 'forces')
    G = np.zeros((n, 3)) if torques is None else _array(torques, (n, 3), 'torques')
    g = (
        np.zeros((n - 1, 3))
        if hinge_torques is None
        else _array(hinge_torques, (n - 1, 3), 'hinge_torques')
    )
    inertia = R @ tree.inertia @ np.swapaxes(R, 1, 2)
    L = tree.C[:, :, None] * np.einsum('iab,ijb->ija', R, tree.l)
    u2 = G + tree.C @ g - np.cross(w, np.einsum('iab,ib->ia', inertia, w))
    u3 = np.einsum('ija->ja', np.cross(w[:, None, :], np.cross(w[:, None, :], L)))
    pins = np.flatnonzero(np.linalg.norm(tree.pin_axes, axis=1) > 0.0)
    par = tree.parent[pins + 1]
    k = np.einsum('jab,jb->ja', R[par], tree.pin_axes[pins])
    q1, q2 = perpendicular_basis(k) if pins.size else (np.zeros((0, 3)), np.zeros((0, 3)))
    q = np.stack((q1, q2), axis=1).reshape(-1, 3)
    qj = np.repeat(pins, 2)
    wp, wc = w[tree.parent[qj + 1]], w[qj + 1]
    bq = np.einsum('ra,ra->r', np.cross(wp, q), wc - wp)
    return _Terms(R, w, inertia, L, F, u2, u3, q, qj, bq)


# ----------------------------------------------------------------------------------------------
# the forms
# ----------------------------------------------------------------------------------------------


def _lagrangian(
    tree: BallTree, t: _Terms
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``J``, ``G``, ``u``, ``b`` of [M eq. 10] in :mod:`.linalg`'s convention (x per body)."""
    n = tree.n
    J = block_mass_matrix(tree.mass, t.I)
    Gm = np.zeros((n - 1, 3, n, 6))  # [hinge j, row a, body i, column b]
    Gm[:, :, :, :3] = tree.C.T[:, None, :, None] * np.eye(3)[None, :, None, :]
    # G^T l on body i is [C f; L~ f], so the rows of G on w'_i are (L~_ij)^T = -L~_ij
    Gm[:, :, :, 3:] = -skew(t.L).transpose(1, 2, 0, 3)
    G = np.concatenate((Gm.reshape(3 * (n - 1), 6 * n), _pin_rows(tree, t, 6, 3)))
    u = np.concatenate((t.u1, t.u2), axis=1).ravel()
    return J, G, u, np.concatenate((-t.u3.ravel(), t.bq))


def _pin_rows(tree: BallTree, t: _Terms, stride: int, off: int) -> np.ndarray:
    """Rows ``Q^T C^T`` of [M eq. 48] on ``w'`` (body ``i`` at columns ``stride i + off``)."""
    p = t.qj.size
    Gq = np.zeros((p, stride * tree.n))
    cols = np.arange(3)
    r = np.arange(p)[:, None]
    Gq[r, stride * tree.parent[t.qj + 1][:, None] + off + cols] = t.q
    Gq[r, stride * (t.qj + 1)[:, None] + off + cols] = -t.q
    return Gq


def _torques(tree: BallTree, t: _Terms, lam_q: np.ndarray) -> np.ndarray:
    """``g^c = Q lambda`` [M eq. 53], (n - 1, 3)."""
    gc = np.zeros((tree.n - 1, 3))
    np.add.at(gc, t.qj, lam_q[:, None] * t.q)
    return gc


def _from_x(tree: BallTree, t: _Terms, x: np.ndarray, lam: np.ndarray) -> BallSolution:
    X = x.reshape(tree.n, 6)
    nf = 3 * (tree.n - 1)
    f = lam[:nf].reshape(tree.n - 1, 3).copy()
    return BallSolution(X[:, 3:].copy(), X[:, :3].copy(), f, _torques(tree, t, lam[nf:]))


def _Lt_times(L: np.ndarray, f: np.ndarray) -> np.ndarray:
    """``L~ f``: (n, 3) with ``sum_j L_ij x f_j``."""
    return np.einsum('ija->ia', np.cross(L, f[None, :, :]))


def _LtT_times(L: np.ndarray, w: np.ndarray) -> np.ndarray:
    """``L~^T w``: (n - 1, 3) with ``sum_i w_i x L_ij``."""
    return np.einsum('ija->ja', np.cross(w[:, None, :], L))


def _recover(tree: BallTree, t: _Terms, wd: np.ndarray, gc: np.ndarray) -> BallSolution:
    """``r''`` and ``f`` from ``w'`` by the analytic inverse [M eqs. 17-19, 21, 26].

    ``[M, -C; -C^T, 0] [r''; f] = [u_1; u_3 + L~^T w']`` (rows 1 and 3 of [M eq. 10]) with the
    inverse of [M eq. 19], ``E = 1_n 1_n^T / m``::

        r'' = E u_1 + (E M T_2^T - T_2^T) v,   f = (T_2 M E - T_2) u_1 + (T_2 M E M T_2^T
        - T_2 M T_2^T) v,   v = u_3 + L~^T w'
    """
    m, T2, mass = tree.total_mass, tree.T2, tree.mass
    v = t.u3 + _LtT_times(t.L, wd)
    T2tv = T2.T @ v  # (n, 3)
    mean_u1 = t.u1.sum(axis=0) / m
    rdd = mean_u1[None, :] + (mass @ T2tv / m)[None, :] - T2tv
    # T_2 M E u_1 - T_2 u_1  and  T_2 M E M T_2^T v - T_2 M T_2^T v
    Tm = T2 @ mass  # (n - 1,) = T_2 M 1_n
    f = np.outer(Tm, mean_u1) - T2 @ t.u1
    f += np.outer(Tm, mass @ T2tv / m) - T2 @ (mass[:, None] * T2tv)
    return BallSolution(wd, rdd, f, gc)


def _solve_rotational(
    tree: BallTree, t: _Terms, K: np.ndarray, rhs: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """``w'`` (n, 3) and ``g^c`` (n - 1, 3) from ``K w' = rhs`` (+ the pin rows: [M eq. 51]).

    ``K`` (any of the equal matrices of [M eqs. 16, 28, 35]) is factorized by Cholesky (the
    seed, after [M eq. 38]). With pin joints, [M eq. 51]
    ``[[K, -C Q], [-Q^T C^T, 0]] [w'; lambda] = [u~_2; u_4]`` is solved by eliminating ``w'``:
    ``(Q^T C^T K^-1 C Q) lambda = b_q - Q^T C^T K^-1 u~_2`` (``u_4 = -b_q``; **OCR note:**
    [M eq. 49] prints ``u_4 = Q^T C^T w``, whose dot was lost: it is ``Q'^T C^T w`` with
    ``Q' = w_+ x Q``, see :mod:`.tree`).
    """
    n = tree.n
    cho = sla.cho_factor(K)
    x0 = sla.cho_solve(cho, rhs)
    if t.qj.size == 0:
        return x0.reshape(n, 3), np.zeros((n - 1, 3))
    Gq = _pin_rows(tree, t, 3, 0)
    Y = sla.cho_solve(cho, Gq.T)
    lam = sla.cho_solve(sla.cho_factor(Gq @ Y), t.bq - Gq @ x0)
    return (x0 + Y @ lam).reshape(n, 3), _torques(tree, t, lam)


def _eq16(tree: BallTree, t: _Terms) -> BallSolution:
    """[M eqs. 15-16] with ``A = (C^T M^-1 C)^-1`` numerical (the ``A`` of [M eq. 18]), then row
    2 of [M eq. 15] for ``f`` and [M eq. 12] for ``r''``."""
    n, C = tree.n, tree.C
    A = np.linalg.inv(C.T @ (C / tree.mass[:, None]))  # (n - 1, n - 1), scalar blocks
    Lt = _blocks(skew(t.L))  # (3n, 3(n - 1))
    A3 = np.kron(A, np.eye(3))
    Imat = sla.block_diag(*t.I)
    w_rhs = (C.T @ (t.u1 / tree.mass[:, None]) + t.u3).ravel()  # C^T M^-1 u_1 + u_3
    lhs = Imat + Lt @ A3 @ Lt.T
    rhs = -Lt @ (A3 @ w_rhs) + t.u2.ravel()
    wd, gc = _solve_rotational(tree, t, lhs, rhs)
    f = -(A @ (_LtT_times(t.L, wd) + w_rhs.reshape(n - 1, 3)))
    rdd = (t.u1 + C @ f) / tree.mass[:, None]
    return BallSolution(wd, rdd, f, gc)


def _d_inertial(tree: BallTree, t: _Terms) -> np.ndarray:
    """``d_ik`` in the inertial frame, (n, n, 3)."""
    return np.einsum('iab,ikb->ika', t.R, barycentric_vectors(tree))


def _eq28(tree: BallTree, t: _Terms) -> BallSolution:
    """[M eq. 28]: ``(I + D~ M D~^T) w' = D~ u_1 + u_2 + D~ M B^T u_3``, ``D = -L T_2 mu``
    (``L~ A L~^T = D~ M D~^T`` by [M eq. 27])."""
    d = _d_inertial(tree, t)
    Dt = _blocks(skew(d))  # (3n, 3n)
    M3 = np.repeat(tree.mass, 3)
    lhs = sla.block_diag(*t.I) + (Dt * M3[None, :]) @ Dt.T
    y = tree.mass[:, None] * (tree.B.T @ t.u3)  # M B^T u_3
    rhs = Dt @ (t.u1 + y).ravel() + t.u2.ravel()
    return _recover(tree, t, *_solve_rotational(tree, t, lhs, rhs))


def system_inertia(tree: BallTree, R: np.ndarray) -> np.ndarray:
    """``K = I + D~ M D~^T`` assembled by [M eq. 35] from the augmented bodies.

    ``K_ii = R_i K_ii^body R_i^T`` (the augmented-body inertia, [M eq. 30]) and
    ``K_ij = m d~_ij d~_ji`` [M eq. 31], ``i != j``.

    Parameters
    ----------
    tree : BallTree
    R : (n, 3, 3) ndarray
        Body orientations ``R_i`` (body frame to inertial frame) [-].

    Returns
    -------
    (3n, 3n) ndarray [kg m^2], symmetric positive definite.
    """
    R = _array(R, (tree.n, 3, 3), 'R')
    d = np.einsum('iab,ikb->ika', R, barycentric_vectors(tree))
    return _system_inertia(tree, R, d)


def _system_inertia(tree: BallTree, R: np.ndarray, d: np.ndarray) -> np.ndarray:
    Sd = skew(d)  # (n, n, 3, 3)
    Kb = tree.total_mass * Sd @ np.swapaxes(Sd, 0, 1)  # K_ij = m d~_ij d~_ji
    Kaug = augmented_bodies(tree).inertia
    idx = np.arange(tree.n)
    Kb[idx, idx] = R @ Kaug @ np.swapaxes(R, 1, 2)
    return _blocks(Kb)


def _eq38(tree: BallTree, t: _Terms) -> BallSolution:
    """[M eq. 38]: ``K w' = -h' + D~ F + G + C g + N 1_n`` (``K`` of [M eq. 35]; the velocity
    terms of [M eqs. 32-34, 36-37])."""
    n, m, w = tree.n, tree.total_mass, t.w
    d = _d_inertial(tree, t)
    K = _system_inertia(tree, t.R, d)
    Kb = K.reshape(n, 3, n, 3).transpose(0, 2, 1, 3)  # Kb[i, j] = K_ij
    idx = np.arange(n)
    Kii = Kb[idx, idx]
    h1 = np.cross(w, np.einsum('iab,ib->ia', Kii, w))  # h'_i = w_i x K_ii w_i
    DF = np.einsum('ika->ia', np.cross(d, t.u1[None, :, :]))  # sum_k d_ik x F_k
    # N_ij = -w_j x (K_ji w_j) + m |w_j|^2 d_ji x d_ij, i != j (the diagonal terms are zero)
    Kji_wj = np.einsum('jiab,jb->ija', Kb, w)
    dji = np.swapaxes(d, 0, 1)  # dji[i, j] = d_ji
    N = -np.cross(w[None, :, :], Kji_wj) + m * np.sum(w * w, axis=1)[None, :, None] * np.cross(
        dji, d
    )
    N[idx, idx] = 0.0
    GCg = t.u2 + np.cross(w, np.einsum('iab,ib->ia', t.I, w))  # G + C g (u_2 without -h^)
    rhs = -h1 + DF + GCg + N.sum(axis=1)
    return _recover(tree, t, *_solve_rotational(tree, t, K, rhs.ravel()))


def ball_tree_dynamics(
    tree: BallTree,
    R: np.ndarray,
    w: np.ndarray,
    *,
    forces: np.ndarray | None = None,
    torques: np.ndarray | None = None,
    hinge_torques: np.ndarray | None = None,
    method: str = 'eq38',
) -> BallSolution:
    """Forward dynamics of a tree of ball-and-socket joints [M sec. 3.1].

    Parameters
    ----------
    tree : BallTree
    R : (n, 3, 3) array_like
        ``R_i``: body frame ``i`` to the inertial frame [-] (rotation matrices).
    w : (n, 3) array_like
        Absolute angular velocities ``w_i``, inertial frame [rad/s].
    forces : (n, 3) array_like, optional
        ``F_i``, resultant external force through ``C_i``, inertial frame [N] (gravity is
        ``m_i g``).
    torques : (n, 3) array_like, optional
        ``G_i``, resultant external torque on body ``i``, inertial frame [N m].
    hinge_torques : (n - 1, 3) array_like, optional
        ``g_j``, applied torque at hinge ``j``: ``+g_j`` on the parent ``j+``, ``-g_j`` on the
        child ``j- = j + 1``, inertial frame [N m].
    method : {'kkt', 'eq14', 'eq16', 'eq28', 'eq38'}
        See the module docstring; all give the same solution.

    Returns
    -------
    BallSolution

    Raises
    ------
    ValueError
        Wrong shapes, non-finite values, ``R`` not rotations, or an unknown method.
    """
    if method not in METHODS:
        raise ValueError(f'method: expected one of {METHODS}, got {method!r}')
    t = _terms(tree, R, w, forces, torques, hinge_torques)
    if tree.n == 1:  # a single free body: no hinge
        wd = np.linalg.solve(t.I[0], t.u2[0])
        z = np.zeros((0, 3))
        return BallSolution(wd[None, :], t.u1 / tree.mass[:, None], z, z.copy())
    if method in ('kkt', 'eq14'):
        J, G, u, b = _lagrangian(tree, t)
        x, lam = (solve_kkt if method == 'kkt' else solve_multipliers)(J, G, u, b)
        return _from_x(tree, t, x, lam)
    if method == 'eq16':
        return _eq16(tree, t)
    if method == 'eq28':
        return _eq28(tree, t)
    return _eq38(tree, t)


def com_positions(tree: BallTree, R: np.ndarray, r_root: np.ndarray) -> np.ndarray:
    """CoM positions ``r_i`` from the root's by the hinge constraints [M eqs. 6-7].

    Parameters
    ----------
    tree : BallTree
    R : (n, 3, 3) ndarray
        Body orientations, body frame to inertial frame [-].
    r_root : (3,) root CoM, inertial frame [m].

    Returns
    -------
    (n, 3) ndarray [m], inertial frame.
    """
    R = _array(R, (tree.n, 3, 3), 'R')
    r = np.zeros((tree.n, 3))
    r[0] = _array(r_root, (3,), 'r_root')
    for i in range(1, tree.n):
        k, j = tree.parent[i], i - 1
        r[i] = r[k] + R[k] @ tree.hinge_in_parent[j] - R[i] @ tree.hinge_in_child[j]
    return r


# ----------------------------------------------------------------------------------------------
# models of the core
# ----------------------------------------------------------------------------------------------


def model_ball_tree(model: Model) -> BallTree:
    """The :class:`BallTree` of a floating-base model whose joints are spherical or revolute.

    Hinge ``j`` is the child body's frame origin (the joint centre); a revolute joint becomes
    a pin joint [M sec. 3.2] about its axis, which is fixed in the parent's body frame.

    Raises
    ------
    ValueError
        A fixed base (the seed's root is free), a prismatic or universal joint (the forms
        of [M secs. 3.1-3.2] are written for ball and pin joints), or a body with a singular
        inertia (a point mass or a rod, which real URDFs carry), named by its link.

    Parameters
    ----------
    model : Model
        Floating base, spherical and revolute (or continuous) joints only.

    Returns
    -------
    BallTree
        Body-frame data: masses [kg], inertias about the CoMs [kg m^2], hinge vectors from
        the CoMs [m], pin axes in the parent body frame (None without revolute joints).
    """
    if not model.floating_base:
        raise ValueError('barycentric forms: expected a floating-base model, got a fixed base')
    bad = [
        f'{nm} ({kind})'
        for nm, kind in zip(model.joint_names, model.joint_types, strict=True)
        if kind not in ('spherical', 'revolute', 'continuous')
    ]
    if bad:
        raise ValueError(
            f'barycentric forms: expected spherical or revolute joints, got {", ".join(bad)}'
        )
    a = model.arrays
    singular = [model.body_names[i] for i in singular_bodies(a.mass, a.inertia)]
    if singular:
        raise ValueError(
            'barycentric forms: expected positive definite body inertias (section 3.1 inverts '
            f'them), got singular ones (point masses or rods) at {", ".join(singular)}: use '
            "method 'kkt', 'nullspace' or 'multipliers'"
        )
    child = np.arange(1, a.parent.shape[0])
    par = a.parent[1:]
    axes = np.einsum('bij,bj->bi', a.rot[child], a.axis[child])  # parent body frame
    pins = np.where((a.jtype[1:] == REVOLUTE)[:, None], axes, 0.0)
    return BallTree(
        parent=np.array(a.parent),
        mass=np.array(a.mass),
        inertia=np.array(a.inertia),
        hinge_in_parent=a.trans[child] - a.com[par],
        hinge_in_child=-np.array(a.com[child]),
        pin_axes=pins if np.any(pins) else None,
    )


def barycentric_dynamics(
    model: Model,
    q: ArrayLike,
    v: ArrayLike,
    tau: ArrayLike,
    *,
    base_wrench: ArrayLike | None = None,
    link_wrenches: Mapping[str, ArrayLike] | None = None,
    method: str = 'eq38',
) -> np.ndarray:
    """Generalized accelerations of a model by the ball-tree forms (:func:`ball_tree_dynamics`).

    Gravity, the base wrench and link wrenches become the body forces ``F_i`` and torques
    ``G_i``, the joint efforts (friction included when enabled) the hinge torques ``g_j``
    (:func:`.tree.actuation`, with the seed's sign: ``+g_j`` on the parent); the body
    accelerations are mapped back to ``[dV0, dw0, phiddot]`` as in :func:`.tree.maximal_dynamics`.

    Parameters
    ----------
    model : Model
        Floating base, spherical and revolute joints (:func:`model_ball_tree`).
    q : (nq,) ndarray
        Configuration [m, -, rad] (quaternions [-] at spherical joints).
    v : (nv,) ndarray
        Velocity ``[V0, w0, phidot]``, base parts in the inertial frame [m/s, rad/s, rad/s].
    tau : (n,) joint efforts [N m].
    base_wrench : (6,) optional ``[F; T]`` at the base CoM, inertial frame [N, N m].
    link_wrenches : dict, optional ``{link: (6,) [f; n]}`` at the link frames' origins,
        inertial frame [N, N m].
    method : {'kkt', 'eq14', 'eq16', 'eq28', 'eq38'}

    Returns
    -------
    (nv,) ndarray
        ``[dV0, dw0, phiddot]``, base parts in the inertial frame [m/s^2, rad/s^2, rad/s^2].
    """
    tree = model_ball_tree(model)
    q, v, tau, bw = checked_state(model, q, v, tau, base_wrench)
    bd = bodies(model, q, v)
    u = applied_forces(model, bd, np.zeros(model.n), bw, link_wrenches)
    gyro = np.cross(bd.w, np.einsum('bij,bj->bi', bd.inertia, bd.w))
    _, torque = actuation(model, bd, effective_efforts(model, v, tau))
    sol = ball_tree_dynamics(
        tree,
        bd.R,
        bd.w,
        forces=u[:, :3],
        torques=u[:, 3:] + gyro,
        hinge_torques=-torque,
        method=method,
    )
    X = np.concatenate((sol.com_accelerations, sol.angular_accelerations), axis=1)
    return joint_accelerations(model, q, bd, X)
