"""Joint friction too stiff for an explicit step: the implicit friction impulse [S0 eq. 41].

The joint friction ``F_f = -d qdot - f_c tanh(qdot / eps)`` (``eps`` = 1e-3 rad/s or m/s,
:func:`.kernels.friction.joint_friction`) has the slope ``k_j = d_j + f_c,j / eps`` at rest.
Against the effective inertia ``I_j = 1 / (H^-1)_jj`` that a joint's own effort meets (the
rest of the tree, the base included, free), the rate of joint ``j`` decays at ``k_j / I_j``;
an explicit step of ``dt`` is stable only while ``rho_j = dt k_j / I_j`` stays under 2.785
(RK4) or 2 (Euler). The servicer's wrist has ``f_c = 0.2 N m`` against 0.0218 kg m^2:
``rho = 9.2`` at 1 ms, and RK4 held a released joint at a false 2e-3 rad/s for ever.

Where some ``rho_j`` exceeds :data:`STIFF_RATIO` (or several joints' coupled ``dt K^1/2
H^-1 K^1/2`` exceeds :data:`COUPLED_RATIO`; :func:`stiff_dofs`), the step is split
(:func:`implicit_dofs`): the explicit method integrates the dynamics without joint friction,
then the friction of every joint that has some acts as one impulse over the step, backward
Euler on the same law at the step's end (:func:`friction_impulse`):

    w = w* - dt A phi(w),   A = S^T H^-1 S,   p = -dt phi(w),   v = v* + H^-1 S p

(``S`` selects the rates of the joints with friction, ``w*`` their rates after the explicit
part, ``phi_j(x) = d_j x + f_c,j tanh(x / eps)``). It is unconditionally stable, dissipative
and cannot reverse a joint's rate within a step; its equilibria are those of the law (a
joint under a constant effort below the breakaway creeps at ``eps atanh(tau / f_c)``, as the
regularized law does, and a released joint comes to rest); ``S p`` has no base rows, so the
momentum is unchanged (the friction is internal). Every joint, not only the stiff ones: the
joints couple through ``H^-1``, and a joint left explicit meets the rates the explicit part
reaches within the step, where the stiff joints' unopposed load has moved it past ``eps``
(by ``dt (H^-1 S tau)_j``) -- with the stiff joints only in the impulse, a dual arm under 30 %
of each joint's breakaway crept at 0.95 to 1.16 times the law's rates. The explicit part
moved the positions with the rates the friction did not oppose; the impulse's velocity change
``v - v*``, spread over the step, moves them by ``h (v - v*)`` (:func:`friction_displacement`:
``h = dt/2`` after RK4, ``dt`` after semi-implicit Euler, :data:`DISPLACEMENT_SHARE`), the
momentum and the CoM kept. Without it a sub-breakaway effort made the joints' rates creep at
the law's rates but their angles at ``w + dt (H^-1 S tau) / 2``: on the shipped dual arm up
to 4.6 times the law's rate at 1 ms. The split step is first order in ``dt`` for the
friction; where no joint is stiff nothing changes.

Closed chains (:mod:`.mufti.chain_friction`): the same criteria on the mobility with the
loops, ``W`` in place of ``H^-1`` (:func:`stiff_dofs`), and the same impulse on the loops'
constraint manifold, ``v = v* + W S p`` (:func:`constrained_friction_impulse`), likewise for
every joint with friction where some joint is stiff, and the same displacement (the loops
closed again by the chain's projection).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from .kernels.entry import e_correct_momentum, e_integrate, e_momentum_target
from .kernels.implicit_friction import NEWTON_DONE, NEWTON_FULL, implicit_friction_rates
from .kernels.layout import pack
from .kernels.rnea_derivatives import COULOMB_EPS
from .model import Model

#: Largest ``rho_j = dt k_j (H^-1)_jj`` [-] left to the explicit method (RK4's real-axis
#: stability limit is 2.785, Euler's 2): its per-step decay ``R(-1)`` = 0.375 (RK4) is within
#: 2 % of the exact ``exp(-1)``.
STIFF_RATIO = 1.0
#: Largest eigenvalue [-] of ``dt K^1/2 H^-1 K^1/2`` over the joints left explicit: several
#: coupled joints, each under :data:`STIFF_RATIO`, can add up.
COUPLED_RATIO = 1.5
#: The share of the step ``dt`` by which :func:`friction_displacement` moves the positions
#: along the impulse's velocity change, per explicit method: RK4's positions follow its rates
#: through the step (the impulse's change, spread over the step, moves them by half of it),
#: semi-implicit Euler's follow the step's end rates (``q+ = q + dt v+``: all of it).
DISPLACEMENT_SHARE = {'rk4': 0.5, 'euler': 1.0}
#: Eigenvalues of a closed chain's ``A = S^T W S`` below this fraction of the largest are
#: zero: combinations of the stiff joints' rates the loops lock (round-off, ~1e-16, there).
MOBILITY_RTOL = 1e-9


def friction_slopes(model: Model) -> np.ndarray:
    """(nv,) slope of each DoF's friction at rest, ``d + f_c / eps`` [N m s/rad | N s/m]
    (zero for the base DoFs and without joint dynamics).

    Parameters
    ----------
    model : Model

    Returns
    -------
    (nv,) ndarray
        Per velocity DoF (the order of ``v``) [N m s/rad | N s/m].
    """
    if not model.joint_dynamics:
        return np.zeros(model.nv)
    a = model.arrays
    return a.damping + a.friction / COULOMB_EPS


def implicit_dofs(H: np.ndarray, slopes: np.ndarray, dt: float) -> np.ndarray:
    """The DoFs whose friction a step of ``dt`` takes implicitly: every DoF with friction
    where some is too stiff for an explicit step, else none.

    Parameters
    ----------
    H : (nv, nv) inertia matrix at the step's start, base rows and columns in the inertial
        frame [kg, kg m, kg m^2].
    slopes : (nv,) :func:`friction_slopes`, per velocity DoF (joint space) [N m s/rad | N s/m].
    dt : float
        Step [s].

    Returns
    -------
    (k,) int ndarray
        Velocity indices, ascending: every DoF with friction (``slopes`` nonzero) where some
        is stiff (:func:`stiff_dofs`: ``rho_j > STIFF_RATIO``, or a coupled ratio over
        :data:`COUPLED_RATIO`), as a closed chain's split step takes them (module
        docstring); empty when none is stiff.
    """
    cols = np.flatnonzero(slopes)
    if cols.size == 0 or stiff_dofs(np.linalg.inv(H)[np.ix_(cols, cols)], cols, slopes, dt).size:
        return cols
    return cols[:0]


def stiff_dofs(
    mobility: np.ndarray, cols: np.ndarray, slopes: np.ndarray, dt: float
) -> np.ndarray:
    """:func:`implicit_dofs` given the mobility of the DoFs with friction.

    Parameters
    ----------
    mobility : (k, k) ``S^T W S`` on the DoFs ``cols`` [1/(kg m^2) | 1/kg]: the rate change
        per unit impulse of those joints' efforts, ``W = H^-1`` for a tree, the mobility on
        the loops' constraint manifold for a closed chain (:mod:`.mufti.chain_friction`).
    cols : (k,) velocity indices of the DoFs with friction (``slopes`` nonzero), ascending.
    slopes : (nv,) ndarray
        :func:`friction_slopes`.
    dt : float
        The step [s].

    Returns
    -------
    (m,) int ndarray, the stiff DoFs of ``cols``: those with ``rho_j > STIFF_RATIO``, then
    the stiffest of the others while their coupled ratio exceeds :data:`COUPLED_RATIO`; empty
    when none is stiff.
    """
    rho = dt * slopes[cols] * np.diag(mobility)
    stiff = rho > STIFF_RATIO
    for _ in range(cols.size):  # coupled joints: move the stiffest to the stiff set
        keep = ~stiff
        if keep.sum() < 2 or rho[keep].sum() <= COUPLED_RATIO:  # (the trace bounds lambda)
            break
        k = np.sqrt(dt * slopes[cols[keep]])
        lam = float(np.linalg.eigvalsh(k[:, None] * mobility[np.ix_(keep, keep)] * k[None, :])[-1])
        if lam <= COUPLED_RATIO:
            break
        stiff[np.flatnonzero(keep)[np.argmax(rho[keep])]] = True
    return cols[stiff]


def explicit_part(model: Model, dofs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``model.packed`` with the damping and Coulomb friction of ``dofs`` set to zero (the
    explicit part of the split step).

    Parameters
    ----------
    model : Model
    dofs : (k,) int ndarray
        Velocity indices (positions in ``v``, joint space) [-], as :func:`implicit_dofs`.

    Returns
    -------
    tuple of ndarray
        The packed integer and float arrays, as ``model.packed``.
    """
    a = model.arrays
    damping, friction = a.damping.copy(), a.friction.copy()
    damping[dofs] = friction[dofs] = 0.0
    return pack(a._replace(damping=damping, friction=friction))


def friction_impulse(
    model: Model, H: np.ndarray, v: np.ndarray, dofs: np.ndarray, dt: float
) -> np.ndarray:
    """The velocity (nv,) after the implicit friction impulse of ``dofs`` over ``dt`` [s].

    Parameters
    ----------
    model : Model
    H : (nv, nv) inertia matrix at the configuration the impulse acts at, base rows and
        columns in the inertial frame [kg, kg m, kg m^2].
    v : (nv,) velocity ``[V0, w0, phidot]`` before it (after the explicit part of the step),
        base parts in the inertial frame [m/s, rad/s, rad/s | m/s].
    dofs : (k,) velocity indices of :func:`implicit_dofs` (positions in ``v``, joint space):
        the DoFs whose friction the impulse takes [-].
    dt : float
        Step [s].

    Returns
    -------
    (nv,) ndarray ``v + H^-1 S p`` (module docstring): ``p`` minimizes the strictly convex
    ``F(w) = (w - w*)^T A^-1 (w - w*) / 2 + dt sum_j Phi_j(w_j)``, ``Phi_j' = phi_j``, solved
    by Newton's method with a backtracking line search (global convergence;
    :func:`.kernels.implicit_friction.implicit_friction_rates`).
    """
    a = model.arrays
    k = dofs.size
    E = np.zeros((model.nv, k))
    E[dofs, np.arange(k)] = 1.0
    HinvS = np.linalg.solve(H, E)  # (nv, k)
    A = HinvS[dofs]
    Ainv = np.linalg.inv(0.5 * (A + A.T))
    d, f = a.damping[dofs], a.friction[dofs]
    w = implicit_friction_rates(Ainv, v[dofs], d, f, COULOMB_EPS, dt)
    p = -dt * (d * w + f * np.tanh(w / COULOMB_EPS))  # the friction impulse [N m s | N s]
    return v + HinvS @ p


def constrained_friction_impulse(
    model: Model, WS: np.ndarray, v: np.ndarray, dofs: np.ndarray, dt: float
) -> np.ndarray:
    """:func:`friction_impulse` on a constraint manifold (a closed chain's loops, ``G v = 0``).

    The backward-Euler step ``H (v+ - v) = S p + G^T lambda``, ``G v+ = G v``, ``p = -dt
    phi(S^T v+)`` gives ``v+ = v + W S p`` with ``W`` the mobility on the manifold (``W H W =
    W``, ``G W = 0``), and ``w = w* + A p``, ``A = S^T W S``: the tree's equations with
    ``H^-1`` replaced by ``W``. The loops may lock some combinations of the stiff joints' rates
    (``A`` singular: a floating loop of 9 joints moves 4 ways), so the rates are solved in
    ``A``'s range: ``w = w* + B s``, ``B B^T = A`` (eigenvalues over :data:`MOBILITY_RTOL` of
    the largest), ``s`` minimizing the strictly convex ``|s|^2 / 2 + dt sum_j Phi_j(w_j)``
    (the kinetic energy of the impulse plus the friction's potential), by Newton's method with
    the backtracking line search and the convergence tests of
    :func:`.kernels.implicit_friction.implicit_friction_rates` (NumPy: a few 10 us per
    iteration, a handful of iterations).

    Parameters
    ----------
    model : Model
    WS : (nv, k) ``W S``: the velocity change per unit impulse of each of ``dofs``' efforts,
        the loop impulses included [1/(kg m^2) | 1/kg].
    v : (nv,) ndarray
        Velocity before the impulse [m/s, rad/s, rad/s | m/s].
    dofs : (k,) ndarray
        The DoFs whose friction acts (a closed chain's split step: every DoF with friction).
    dt : float
        Step [s].

    Returns
    -------
    (nv,) ndarray ``v + W S p``: the momentum unchanged where ``W S`` has no base impulse
    (joint and loop impulses are internal), ``G v`` unchanged, dissipative.
    """
    a = model.arrays
    A = WS[dofs]
    lam, U = np.linalg.eigh(0.5 * (A + A.T))
    keep = lam > MOBILITY_RTOL * max(float(lam[-1]), 0.0)
    if not keep.any():  # the loops lock every stiff joint: nothing for friction to stop
        return v.copy()
    B = U[:, keep] * np.sqrt(lam[keep])
    d, f = a.damping[dofs], a.friction[dofs]
    w = _range_rates(B, v[dofs], d, f, dt)
    p = -dt * (d * w + f * np.tanh(w / COULOMB_EPS))  # the friction impulse [N m s | N s]
    return v + WS @ p


def friction_displacement(
    model: Model,
    q: np.ndarray,
    v_explicit: np.ndarray,
    v: np.ndarray,
    h: float,
    close: Callable[[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]] | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """The state after a split step: ``q`` moved by the displacement of the friction impulse.

    The explicit part moved ``q`` with rates the friction did not oppose; the impulse's
    velocity change ``v - v_explicit``, spread over the step, moves the positions by ``h``
    times it (``h = dt / 2`` after RK4, ``dt`` after semi-implicit Euler:
    :data:`DISPLACEMENT_SHARE`): ``q+ = integrate(q, h (v - v_explicit))``. Under a constant
    sub-breakaway effort the explicit part's rates rise by ``dt (H^-1 S tau)`` within the step
    and the impulse takes them back, so without it the angles crept at ``w + dt (H^-1 S tau)
    / 2`` (up to 4.6 times the law's rate on the shipped dual arm at 1 ms); with it, at ``w``.

    The displacement is internal (``H (v - v_explicit)`` has no base rows: no momentum, so the
    system CoM moves only to second order), but the momentum ``[P; L_O]`` of ``v`` at the
    moved configuration is not that at ``q`` (``h dv`` turns the bodies under their rates).
    On a floating base both are restored, ``[P; L_O]`` and the first moment ``M r_g`` of
    ``(q, v)``, by the rigid motion of :func:`.kernels.conservation.correct_momentum` (the
    whole system translated, the base velocity changed; the joint rates as the impulse left
    them): without it the momentum drifted by ``O(dt)`` per unit time under a steady effort.

    Parameters
    ----------
    model : Model
    q : (nq,) configuration after the explicit part [m, -, rad | m].
    v_explicit, v : (nv,) ndarray
        Velocity after the explicit part, and after the impulse: ``[V0, w0, phidot]``, base
        parts in the inertial frame [m/s, rad/s, rad/s | m/s].
    h : float
        ``DISPLACEMENT_SHARE[method] * dt`` [s].
    close : ``close(q, v) -> (q, v)``, optional
        Applied to the moved state before the momentum is restored: a closed chain's
        projection onto its loops (:mod:`.mufti.chain_friction`).

    Returns
    -------
    q, v : (nq,), (nv,) ndarray
        The split step's end state [m, -, rad | m], [m/s, rad/s, rad/s | m/s].
    """
    packed = model.packed
    moved = e_integrate(*packed, q, v - v_explicit, h)
    target = e_momentum_target(*packed, q, v, 0.0) if model.floating_base else None
    if close is not None:
        moved, v = close(moved, v)
    if target is not None:  # (the momentum and first moment of (q, v): dt = 0)
        moved, v = e_correct_momentum(*packed, moved, v, target)
    return moved, v


def _merit(s: np.ndarray, w: np.ndarray, d: np.ndarray, f: np.ndarray, dt: float) -> float:
    """``|s|^2 / 2 + dt sum_j (d_j w_j^2 / 2 + f_j eps log cosh(w_j / eps))`` (no overflow)."""
    y = np.abs(w / COULOMB_EPS)
    log_cosh = y + np.log1p(np.exp(-2.0 * y)) - np.log(2.0)
    return float(0.5 * s @ s + dt * np.sum(0.5 * d * w * w + f * COULOMB_EPS * log_cosh))


def _range_rates(
    B: np.ndarray, w0: np.ndarray, d: np.ndarray, f: np.ndarray, dt: float
) -> np.ndarray:
    """The rates ``w = w0 + B s`` (k,) at the minimum over ``s`` (r,) of :func:`_merit`:
    ``s + dt B^T phi(w) = 0`` (:func:`constrained_friction_impulse`)."""
    eps = COULOMB_EPS
    s = np.zeros(B.shape[1])
    w = w0.copy()
    scale = float(np.abs(w0).max()) + eps
    F = _merit(s, w, d, f, dt)
    eye = np.eye(B.shape[1])
    for _ in range(100):
        th = np.tanh(w / eps)
        grad = s + dt * (B.T @ (d * w + f * th))
        hess = eye + dt * (B.T * (d + f / eps * (1.0 - th * th))) @ B
        step = -np.linalg.solve(hess, grad)
        size = float(np.abs(B @ step).max())  # the Newton step in the rates
        if size <= NEWTON_DONE * scale:  # converged: the step is round-off
            break
        t = 1.0
        if size > NEWTON_FULL * scale:  # far from the root: a line search
            slope = float(grad @ step)
            while True:
                trial = s + t * step
                w_trial = w0 + B @ trial
                F_trial = _merit(trial, w_trial, d, f, dt)
                if F_trial <= F + 1e-4 * t * slope or t < 1e-12:
                    break
                t *= 0.5
        else:  # near it, full steps (quadratic convergence)
            trial = s + step
            w_trial = w0 + B @ trial
            F_trial = _merit(trial, w_trial, d, f, dt)
        s, w, F = trial, w_trial, F_trial
    return w


__all__ = [
    'COUPLED_RATIO',
    'DISPLACEMENT_SHARE',
    'MOBILITY_RTOL',
    'STIFF_RATIO',
    'constrained_friction_impulse',
    'explicit_part',
    'friction_displacement',
    'friction_impulse',
    'friction_slopes',
    'implicit_dofs',
    'stiff_dofs',
]
