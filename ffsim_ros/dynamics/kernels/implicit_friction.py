"""Backward-Euler joint friction over a step: the rates of the stiff joints after the
implicit friction impulse (:mod:`ffsim_ros.dynamics.stiff_friction`, [S0 eq. 41])."""

from __future__ import annotations

import math

import numpy as np

from ..jit import njit
from .cholesky import cholesky_factor_inplace, cholesky_substitute

#: The Newton iteration ends when its step is at most this fraction of the rates' scale
#: (``max |w0| + eps``).
NEWTON_DONE = 1e-14
#: Newton steps within this fraction of the scale are taken whole, without a line search.
NEWTON_FULL = 1e-6


@njit
def _merit(
    Ainv: np.ndarray,
    w0: np.ndarray,
    d: np.ndarray,
    f: np.ndarray,
    eps: float,
    dt: float,
    w: np.ndarray,
) -> float:
    """``F(w) = (w - w0)^T A^-1 (w - w0) / 2 + dt sum_j (d_j w_j^2 / 2 + f_j eps log cosh
    (w_j / eps))`` (``log cosh y = |y| + log1p(exp(-2 |y|)) - log 2``: no overflow)."""
    k = w.shape[0]
    out = 0.0
    for i in range(k):
        ri = w[i] - w0[i]
        for j in range(k):
            out += 0.5 * ri * Ainv[i, j] * (w[j] - w0[j])
        y = abs(w[i] / eps)
        log_cosh = y + math.log1p(math.exp(-2.0 * y)) - math.log(2.0)
        out += dt * (0.5 * d[i] * w[i] * w[i] + f[i] * eps * log_cosh)
    return out


@njit
def implicit_friction_rates(
    Ainv: np.ndarray,
    w0: np.ndarray,
    d: np.ndarray,
    f: np.ndarray,
    eps: float,
    dt: float,
) -> np.ndarray:
    """The rates ``w`` (k,) with ``A^-1 (w - w0) + dt phi(w) = 0``, ``phi_j(x) = d_j x + f_j
    tanh(x / eps)``: the minimum of the strictly convex :func:`_merit`, by Newton's method
    with a backtracking (Armijo) line search, from ``w0``.

    Parameters
    ----------
    Ainv : (k, k) inverse of ``A = S^T H^-1 S`` [kg m^2 | kg], symmetric positive definite.
    w0 : (k,) rates before the impulse [rad/s | m/s].
    d, f : (k,) viscous damping [N m s/rad | N s/m] and Coulomb friction [N m | N], >= 0.
    eps : float, the regularization rate [rad/s | m/s];  dt : float, the step [s].
    """
    k = w0.shape[0]
    w = w0.copy()
    grad = np.empty(k)
    hess = np.empty((k, k))
    step = np.empty(k)
    trial = np.empty(k)
    scale = eps
    for i in range(k):
        scale = max(scale, abs(w0[i]) + eps)
    F = _merit(Ainv, w0, d, f, eps, dt, w)
    for _ in range(100):
        for i in range(k):
            th = math.tanh(w[i] / eps)
            g = dt * (d[i] * w[i] + f[i] * th)
            for j in range(k):
                g += Ainv[i, j] * (w[j] - w0[j])
                hess[i, j] = Ainv[i, j]
            grad[i] = g
            hess[i, i] += dt * (d[i] + f[i] / eps * (1.0 - th * th))
        # the Newton step: the (symmetric positive definite) Hessian by Cholesky, in place
        if not cholesky_factor_inplace(hess, k):
            raise ValueError('implicit friction: the Newton matrix is not positive definite')
        for r in range(k):
            step[r] = -grad[r]
        cholesky_substitute(hess, step, k)
        slope = 0.0
        size = 0.0
        for i in range(k):
            slope += grad[i] * step[i]
            size = max(size, abs(step[i]))
        if size <= NEWTON_DONE * scale:  # converged: the Newton step is round-off
            break
        t = 1.0
        if size > NEWTON_FULL * scale:  # far from the root: a line search (global convergence)
            while True:
                for i in range(k):
                    trial[i] = w[i] + t * step[i]
                F_trial = _merit(Ainv, w0, d, f, eps, dt, trial)
                if F_trial <= F + 1e-4 * t * slope or t < 1e-12:
                    break
                t *= 0.5
        else:  # near it, full steps (quadratic convergence; the merit's decrease is
            for i in range(k):  # round-off there, so a line search stalled short of the root)
                trial[i] = w[i] + step[i]
            F_trial = _merit(Ainv, w0, d, f, eps, dt, trial)
        for i in range(k):
            w[i] = trial[i]
        F = F_trial
    return w
