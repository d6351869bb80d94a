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
    rows applied at ``mid`` (3,) [m]."""
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
    times the largest and above ``rtol * scale`` (module docstring)."""
    U, sv, _ = np.linalg.svd(C, full_matrices=False)
    keep = int(np.sum((sv > rtol * sv[0]) & (sv > rtol * scale))) if sv.size else 0
    return None if keep == C.shape[0] else U[:, :keep]


def reduced_rows(
    counts: Sequence[int], rows: Rows, bases: Sequence[np.ndarray | None]
) -> tuple[Rows, list[np.ndarray]]:
    """``rows`` with each hinge's rows (``counts`` of them per hinge) replaced by their
    independent combinations ``U_k^T`` (:func:`hinge_basis`), and the per-hinge maps back
    ``U_k``."""
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
