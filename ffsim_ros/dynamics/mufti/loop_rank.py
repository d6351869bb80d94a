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
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..lie import cross
from ..model import Model
from .tree import Bodies, Rows


def hinge_scale(model: Model, bd: Bodies, ia: int, ib: int, mid: np.ndarray, rows: int) -> float:
    """``beta_k`` (module docstring) of a hinge between bodies ``ia`` and ``ib`` with ``rows``
    rows applied at ``mid`` (3,) [m].

    Parameters
    ----------
    model : Model;  bd : :class:`~.tree.Bodies` at the state (its motion subspaces ``S``).
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


def hinge_basis(C: np.ndarray, scale: float, rtol: float) -> np.ndarray | None:
    """An orthonormal basis ``U_k`` (rows_k, K_k) of the independent combinations of the rows
    of ``C`` (rows_k, nv), or None when all are independent: singular values above ``rtol``
    times the largest and above ``rtol * scale`` (module docstring).

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

    Returns
    -------
    (rows_k, K_k) ndarray or None
        ``U_k`` [-], orthonormal columns.
    """
    U, sv, _ = np.linalg.svd(C, full_matrices=False)
    keep = int(np.sum((sv > rtol * sv[0]) & (sv > rtol * scale))) if sv.size else 0
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
