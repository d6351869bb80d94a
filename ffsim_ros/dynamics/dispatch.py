"""One forward-dynamics entry point over every formulation of the package.

:data:`FORWARD_DYNAMICS_METHODS` maps a method name to the function computing the
accelerations of [S0 eq. 39] ([S0 eq. 41] with wrenches and friction) with it:

================  ================================================================================
``'aba'``         O(n) articulated-body algorithm (:func:`~.algorithms.aba`, the default)
``'crba'``        ``H^-1 (Q - c)`` by Cholesky, O(n^3) (:func:`~.algorithms.forward_dynamics_crba`)
``'kkt'``         Mufti's Lagrangian system [M eqs. 10, 49] solved sparse
``'nullspace'``   its null-space form [M eq. 40-c], ``Z`` from a QR [M Appendix case 1]
``'multipliers'`` the multiplier system with the accelerations eliminated [M eqs. 14, 50]
``'barycentric'`` the reduced form of augmented bodies and barycentric vectors [M eqs. 30-38, 51]
================  ================================================================================

The recursive algorithms and Mufti's formulations import nothing from here: data flows
from the inputs through the algorithms to this table, and from it to the formulations.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import numpy as np

from .algorithms import aba, forward_dynamics_crba
from .inputs import ArrayLike
from .model import Model
from .mufti.barycentric import barycentric_dynamics
from .mufti.tree import maximal_dynamics
from .state_errors import overflow_error


def _maximal(method: str) -> Callable[..., np.ndarray]:
    def solve(
        model: Model,
        q: ArrayLike,
        v: ArrayLike,
        tau: ArrayLike,
        base_wrench: ArrayLike | None = None,
        link_wrenches: Mapping[str, ArrayLike] | None = None,
    ) -> np.ndarray:
        return maximal_dynamics(
            model,
            q,
            v,
            tau,
            base_wrench=base_wrench,
            link_wrenches=link_wrenches,
            method=method,
        ).a

    solve.__name__ = solve.__qualname__ = f'maximal_dynamics_{method}'
    solve.__doc__ = f':func:`~.mufti.tree.maximal_dynamics` with ``method={method!r}``.'
    return solve


def _barycentric(
    model: Model,
    q: ArrayLike,
    v: ArrayLike,
    tau: ArrayLike,
    base_wrench: ArrayLike | None = None,
    link_wrenches: Mapping[str, ArrayLike] | None = None,
) -> np.ndarray:
    return barycentric_dynamics(
        model, q, v, tau, base_wrench=base_wrench, link_wrenches=link_wrenches
    )


#: Method name -> ``f(model, q, v, tau, base_wrench, link_wrenches) -> (nv,) accelerations``.
FORWARD_DYNAMICS_METHODS: Mapping[str, Callable[..., np.ndarray]] = {
    'aba': aba,
    'crba': forward_dynamics_crba,
    'kkt': _maximal('kkt'),
    'nullspace': _maximal('nullspace'),
    'multipliers': _maximal('multipliers'),
    'barycentric': _barycentric,
}


def forward_dynamics(
    model: Model,
    q: ArrayLike,
    v: ArrayLike,
    tau: ArrayLike,
    *,
    base_wrench: ArrayLike | None = None,
    link_wrenches: Mapping[str, ArrayLike] | None = None,
    method: str = 'aba',
) -> np.ndarray:
    """Accelerations of [S0 eq. 39] ([S0 eq. 41] with contact wrenches and friction).

    Parameters
    ----------
    model : Model
    q : (nq,) ndarray
        Configuration [m, -, rad | m].
    v : (nv,) ndarray
        Velocity ``[V0, w0, phidot]``, base parts in the inertial frame [m/s, rad/s, rad/s | m/s].
    tau : (n,) joint efforts [N m | N].
    base_wrench : (6,) array_like, optional
        ``[F; T]`` acting at the base CoM, inertial frame [N, N m] (``F_b`` of [S0 eq. 39]).
    link_wrenches : dict, optional
        ``{link: (6,) [f; n]}`` acting at each link frame's origin, inertial frame [N, N m].
    method : str
        A key of :data:`FORWARD_DYNAMICS_METHODS` (see the module docstring). Mufti's forms are
        pure NumPy/SciPy and single state only; ``'barycentric'`` takes floating-base models of
        spherical and revolute joints.

    Returns
    -------
    (nv,) ndarray
        ``[dV0, dw0, phiddot]`` (floating base) or ``phiddot``.

    Notes
    -----
    Batched use (``'aba'`` only): ``q`` (..., nq) with leading batch dimensions sets the batch
    shape; ``v`` (..., nv), ``tau`` (..., n) and ``base_wrench`` (..., 6) broadcast to it (a
    batched ``v`` needs a batched ``q``), and the result is (..., nv); the states are spread
    over all cores. ``link_wrenches`` is single-state only.
    """
    if method == 'aba':
        return aba(model, q, v, tau, base_wrench, link_wrenches)
    try:
        solve = FORWARD_DYNAMICS_METHODS[method]
    except (KeyError, TypeError):
        raise ValueError(
            f'method: expected one of {tuple(FORWARD_DYNAMICS_METHODS)}, got {method!r}'
        ) from None
    if np.ndim(q) > 1:
        raise ValueError(f"method: expected 'aba' with batched states, got {method!r}")
    with np.errstate(over='raise'):  # (the methods check their arguments finite first)
        try:
            out = solve(model, q, v, tau, base_wrench, link_wrenches)
        except FloatingPointError as e:  # not the NaN, SciPy or argument error it would cause
            raise overflow_error(model, **_given(v, tau, base_wrench)) from e
    if not np.isfinite(out).all():
        raise overflow_error(model, **_given(v, tau, base_wrench))
    return out


def _given(
    v: ArrayLike, tau: ArrayLike, base_wrench: ArrayLike | None
) -> dict[str, np.ndarray | None]:
    """The arguments named in an overflow's message (of the right sizes and finite: the
    method checked them)."""
    return {
        'v': np.asarray(v, dtype=float),
        'base_wrench': None if base_wrench is None else np.asarray(base_wrench, dtype=float),
        'tau': np.asarray(tau, dtype=float),
    }
