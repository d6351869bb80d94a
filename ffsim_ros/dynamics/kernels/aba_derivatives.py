"""Analytical derivatives of the forward dynamics on the configuration manifold, as
``-H^-1`` times those of the inverse dynamics (Carpentier & Mansard 2018, the way Pinocchio's
``computeABADerivatives`` obtains them), and the entry point of both.

``H(q) qdd + c(q, v) - F_f(v) = Q`` [S0 eqs. 39, 41] holds identically, so differentiating it
at the forward-dynamics accelerations ``qdd``::

    d qdd / dq = -H^-1 d ID / dq,   d qdd / dv = -H^-1 d ID / dv,   d qdd / dQ = H^-1

with ``ID(q, v, a) = H a + c - F_f`` and its derivatives from :mod:`.rnea_derivatives`
(same tangent convention), ``H`` factored with the tree's sparsity (:mod:`.ltl`). The
accelerations come from that same factorization (``H^-1 (Q + F_f - c)``, equal to ABA's to
round-off).

Compile time: the four passes of :mod:`.rnea_derivatives` are compiled once, as functions;
the orchestration above them is inlined into the two compiled roots that use it (the entry
point :func:`e_dynamics_derivatives` and the step linearization), since every compiled layer
re-optimizes all the code it links.
"""

from __future__ import annotations

import numpy as np

from ..jit import carve, njit
from .layout import ModelArrays, unpack
from .ltl import ltl_solve_rows
from .rnea_derivatives import derivatives_ws_size, dynamics_derivatives_into
from .spatial import require_finite


@njit
def fd_derivatives_ws_size(nb: int, nv: int) -> int:
    """Length of the workspace of :func:`forward_dynamics_derivatives_into`."""
    return derivatives_ws_size(nb, nv) + nv * nv + nv


@njit
def forward_dynamics_derivatives_into(
    m: ModelArrays,
    q: np.ndarray,
    v: np.ndarray,
    gen: np.ndarray,
    with_friction: bool,
    qdd: np.ndarray,
    dq: np.ndarray,
    dv: np.ndarray,
    minv: np.ndarray,
    lam: np.ndarray,
    ws: np.ndarray,
) -> None:
    """Forward dynamics and its derivatives at ``(q, v)`` under the generalized force ``gen``.

    Parameters
    ----------
    gen : (nv,) ``[F_b; tau]``, held constant (it does not depend on ``q`` or ``v``).
    with_friction : include the joint friction ``F_f(v)`` [S0 eq. 41].
    qdd : (nv,) output accelerations.
    dq, dv : (nv, nv) outputs ``d qdd / dq`` (tangent convention of
        :mod:`.rnea_derivatives`) and ``d qdd / dv``.
    minv : (nv, nv) output ``H^-1 = d qdd / d gen``.
    lam : (nv,) int64 scratch;  ws : (fd_derivatives_ws_size(nb, nv),) scratch.
    """
    nb = m.parent.shape[0]
    nv = v.shape[0]
    H = carve(ws, 0, (nv, nv))
    tau = carve(ws, nv * nv, (nv,))
    rest = carve(ws, nv * nv + nv, (derivatives_ws_size(nb, nv),))
    dynamics_derivatives_into(m, q, v, qdd, gen, with_friction, tau, H, dq, dv, lam, rest)
    for r in range(nv):
        for c in range(nv):
            minv[r, c] = 1.0 if r == c else 0.0
            dq[r, c] = -dq[r, c]
            dv[r, c] = -dv[r, c]
    ltl_solve_rows(H, lam, dq)
    ltl_solve_rows(H, lam, dv)
    ltl_solve_rows(H, lam, minv)


@njit
def e_dynamics_derivatives(
    idata: np.ndarray,
    fdata: np.ndarray,
    q: np.ndarray,
    v: np.ndarray,
    a: np.ndarray,
    gen: np.ndarray,
    with_friction: bool,
    vec: np.ndarray,
    mat: np.ndarray,
    dq: np.ndarray,
    dv: np.ndarray,
) -> None:
    """Entry point of the forward dynamics derivatives (``gen`` (nv,) given) or the inverse
    dynamics ones (``gen`` empty, at the accelerations ``a``): one compiled signature.

    Forward (``gen`` (nv,)): ``a`` (nv,) output accelerations, ``vec`` unused (nv,),
    ``mat = H^-1``, ``dq``, ``dv`` the accelerations' derivatives.
    Inverse (``gen`` (0,)): ``a`` (nv,) input, ``vec`` the generalized force ``ID(q, v, a)``,
    ``mat = H``, ``dq``, ``dv`` its derivatives.

    Raises ``ValueError`` when the accelerations (or the generalized force) are not finite
    (a non-finite input, or an overflow: :func:`.spatial.require_finite`), or the inertia
    matrix is not positive definite.
    """
    m = unpack(idata, fdata)
    nb = m.parent.shape[0]
    nv = idata[1]
    ws = np.empty(fd_derivatives_ws_size(nb, nv))
    lam = np.empty(nv, dtype=np.int64)
    if gen.shape[0] > 0:
        forward_dynamics_derivatives_into(m, q, v, gen, with_friction, a, dq, dv, mat, lam, ws)
        require_finite(a)
    else:
        dynamics_derivatives_into(m, q, v, a, gen, with_friction, vec, mat, dq, dv, lam, ws)
        require_finite(vec)
