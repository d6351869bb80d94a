"""The rank of a cut hinge's rows (:meth:`~.closed.ClosedChain.independent_rows`) and the rows
reduced to their independent combinations -- the NumPy twin of the compiled decision of
:func:`ffsim_ros.dynamics.kernels.constrained.reduced_responses`.

A hinge's rows are judged on ``C_k``, the map from the tree's velocities to the hinge's
relative velocity along them: singular values are kept above ``rtol`` times the largest *and*
above ``rtol beta_k``, ``beta_k = sqrt(rows_k) |S_k|_F`` the bound on them from the rows (a
unit force or couple at the point of application ``o_m``, the midpoint of the hinge points)
and the motion subspaces ``S_k`` of the joints on the loop's path, taken at ``o_m``
(velocity of the point and angular velocity per unit rate, [m/s, rad/s]). The floor makes
the test dimensionless against the norms involved: a hinge whose rows the tree's motion
cannot violate at all (a closure placed on an existing joint) has round-off singular values
only, which a purely relative test passes -- the largest against itself.

For the motion (the dynamics, the velocity projection) a second floor, ``sqrt(kappa beta_k
|xi|)`` at a configuration whose loop errors have the norm ``|xi|``
(:func:`ffsim_ros.dynamics.kernels.cut_hinges.rank_floor`): near a loop singularity a
configuration within the projection's tolerance of the manifold has rows of singular value up
to ``~sqrt(2 |H| |xi|)`` that are not there on it (``H`` the rows' curvature), and that would
lock the mechanism. The position projection keeps the round-off floor alone: it needs those
rows to close the loops.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..kernels.cut_hinges import CLOSURE_FLOOR_CAP, CLOSURE_FLOOR_GAIN
from ..lie import cross
from ..model import Model
from .tree import Bodies, Rows


def hinge_scale(model: Model, bd: Bodies, ia: int, ib: int, mid: np.ndarray, rows: int) -> float:
    """``beta_k`` (module docstring) of a hinge between bodies ``ia`` and ``ib`` with ``rows``
    rows applied at ``mid`` (3,) [m].

    Parameters
    ----------
    model : Model
    bd : Bodies
        :class:`~.tree.Bodies` at the state (its motion subspaces ``S``).
    ia, ib : int
        Body indices of the hinge's two sides.
    mid : (3,) ndarray
        Point of application ``o_m`` of the rows, inertial frame, from the inertial origin [m].
    rows : int
        Row count of the hinge.

    Returns
    -------
    float
        ``beta_k``, in the mixed units of ``S_k`` (module docstring).
    """
    a = model.arrays
    paths = []
    for i in (ia, ib):
        chain = set()
        while i >= 0:
            chain.add(int(i))
            i = a.parent[i]
        paths.append(chain)
    cols = [c for i in sorted(paths[0] ^ paths[1]) for c in range(a.iv[i], a.iv[i] + a.nvj[i])]
    Sk = bd.S[:, cols]
    v = Sk[:3] + cross(Sk[3:].T, mid[None, :]).T  # the velocity at mid: v_O + w x mid
    return float(np.sqrt(rows * (np.sum(v * v) + np.sum(Sk[3:] ** 2))))


def hinge_basis(
    C: np.ndarray, scale: float, rtol: float, closure: float = 0.0
) -> np.ndarray | None:
    """An orthonormal basis ``U_k`` (rows_k, K_k) of the independent combinations of the rows
    of ``C`` (rows_k, nv), or None when all are independent: singular values above ``rtol``
    times the largest, above ``rtol * scale`` and above the closure floor
    :func:`~ffsim_ros.dynamics.kernels.cut_hinges.rank_floor` (module docstring).

    Parameters
    ----------
    C : (rows_k, nv) ndarray
        The hinge's rows on the tree velocities ``v`` (``G_k`` times
        :func:`~.tree.body_velocity_jacobian`): each row maps ``v`` to the relative velocity
        along it, inertial-frame row directions [m/s or rad/s per unit of ``v``].
    scale : float
        ``beta_k`` of :func:`hinge_scale`.
    rtol : float
        Relative rank threshold [-].
    closure : float
        Norm of the loop errors [m, rad] (zero: the round-off floor alone).

    Returns
    -------
    (rows_k, K_k) ndarray or None
        ``U_k`` [-], orthonormal columns.
    """
    U, sv, _ = np.linalg.svd(C, full_matrices=False)
    closing = min(np.sqrt(CLOSURE_FLOOR_GAIN * scale * closure), CLOSURE_FLOOR_CAP * scale)
    floor = max(rtol * scale, float(closing))
    keep = int(np.sum((sv > rtol * sv[0]) & (sv > floor))) if sv.size else 0
    return None if keep == C.shape[0] else U[:, :keep]


def reduced_rows(
    counts: Sequence[int], rows: Rows, bases: Sequence[np.ndarray | None]
) -> tuple[Rows, list[np.ndarray]]:
    """``rows`` with each hinge's rows (``counts`` of them per hinge) replaced by their
    independent combinations ``U_k^T`` (:func:`hinge_basis`), and the per-hinge maps back
    ``U_k``.

    Parameters
    ----------
    counts : sequence of int
        Row count of each hinge, in the order of ``rows``.
    rows : Rows
        The hinges' rows, stacked.
    bases : sequence of (rows_k, K_k) ndarray or None
        ``U_k`` per hinge [-] (:func:`hinge_basis`; None: all rows kept).

    Returns
    -------
    Rows
        The reduced rows (same frames and units as ``rows``).
    list of ndarray
        ``U_k`` per hinge (the identity where ``bases`` had None).
    """
    parts, maps = [], []
    r0 = 0
    for n, U in zip(counts, bases, strict=True):
        sl = slice(r0, r0 + n)
        U = np.eye(n) if U is None else U
        k = U.shape[1]
        parts.append(
            Rows(
                rows.a[sl][:k].copy(),
                rows.b[sl][:k].copy(),
                U.T @ rows.Ga[sl],
                U.T @ rows.Gb[sl],
                U.T @ rows.rhs[sl],
            )
        )
        maps.append(U)
        r0 += n
    return Rows.concat(parts), maps


def metric_correction(H: np.ndarray, G: np.ndarray, r: np.ndarray, rtol: float) -> np.ndarray:
    """``-H^-1 G^T (G H^-1 G^T)^+ r`` (nv,): the smallest correction in the metric ``H``
    (nv, nv) that takes ``G x`` (K, nv) by ``-r`` (K,) -- the position step of the projection
    onto the loops (``r`` their errors) and its velocity change (``r`` the velocity errors).
    Solved in the square-root form ``-L^-T pinv(G L^-T) r`` (``H = L L^T``), directions kept
    above ``rtol`` times the largest singular value of ``G L^-T``: the pseudo-inverse of
    ``G H^-1 G^T`` would decide on their squares, and drop at its ``1e-10`` the rows of
    singular value ratio below 1e-5 that close a loop near a singular configuration (no
    convergence there).

    Parameters
    ----------
    H : (nv, nv) ndarray
        Symmetric positive definite metric (the mass matrix [kg, kg m, kg m^2]).
    G : (K, nv) ndarray
        Loop rows.
    r : (K,) ndarray
        Errors to remove, in the units of ``G x``.
    rtol : float
        Relative singular value threshold.

    Returns
    -------
    (nv,) ndarray
    """
    L = np.linalg.cholesky(H)
    Gw = np.linalg.solve(L, G.T).T  # G L^-T
    return -np.linalg.solve(L.T, np.linalg.pinv(Gw, rcond=rtol) @ r)
