"""Closing the loops after a step: Gauss-Newton on the loop errors, and near a loop
singularity the nearest closed configuration instead (:meth:`~.closed.ClosedChain.project`).

Gauss-Newton's position step ``dq = -H^-1 G^T (G H^-1 G^T)^+ xi`` is the displacement loop
impulses would make, and lands next to the nearest closed configuration wherever the loop rows
are regular. Near a configuration where they lose rank it does not: there the loop errors are
quadratic in the displacement ``x`` from it (``xi ~ 1/2 x^T H_u x``), and a Newton step on a
homogeneous quadratic halves ``x`` -- the iteration converges onto the singular configuration
itself, undoing the step. Measured on a 3-crank parallelogram (floating base) started at rest in
its flat configuration: each step's 1.3e-6 rad was taken back to within 5e-7 rad of the flat
pose, so the mechanism never moved (and its velocity, which the rows there cannot resolve,
grew without it). A projection that takes back more than :data:`COLLAPSE_RATIO` of the step
(kinetic-energy metric) is therefore redone as the nearest closed configuration: Gauss-Newton
with the step's own extent held, ``n . difference(q_end, q) = 0`` for ``n = H d``, first along
the step ``d`` (a closed configuration as far out as the step went), then along the line from
the step's start to that configuration (the direction of the branch the loops allow), whose
hyperplane through the step's end holds the nearest one. On a branch through the singular
configuration this is the step's displacement projected onto the branch in the kinetic-energy
metric -- with the first-order dynamics there, the acceleration of Gauss's principle on that
branch (the least constraint among the motions the loops allow).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..algorithms import mass_matrix
from ..integration import difference, integrate
from ..kernels.closed_step import COLLAPSE_RATIO
from ..model import Model
from .loop_rank import metric_correction

#: ``closing_rows(q) -> (max |xi|, xi_r, G)``: the loop errors' largest magnitude, the errors
#: along the independent loop rows (round-off floor) and those rows on the tree's velocities.
ClosingRows = Callable[[np.ndarray], tuple[float, np.ndarray, np.ndarray]]

__all__ = ['COLLAPSE_RATIO', 'close_after_step', 'close_loops', 'collapsed', 'nearest_closure']


def close_loops(
    model: Model,
    closing_rows: ClosingRows,
    q: np.ndarray,
    tol: float,
    max_iter: int,
    rtol: float,
    hyperplane: tuple[np.ndarray, np.ndarray] | None = None,
) -> tuple[np.ndarray, float, bool]:
    """Gauss-Newton on the loop errors in the kinetic-energy metric from ``q``.

    Parameters
    ----------
    model : Model
    closing_rows : ClosingRows
        The loop rows (:data:`ClosingRows`).
    q : (nq,) ndarray
        Start configuration [m, -, rad | m], base parts in the inertial frame.
    tol : float
        Convergence threshold on ``max |xi|`` [m, rad].
    max_iter : int
    rtol : float
        Rank threshold of :func:`.loop_rank.metric_correction`.
    hyperplane : ``(n, q_ref)``, optional
        Also hold ``n . difference(q_ref, q) = 0`` (n (nv,) a covector, ``q_ref`` (nq,)).

    Returns
    -------
    q : (nq,) ndarray
        The last iterate.
    err : float
        Its ``max |xi|`` [m, rad].
    converged : bool
    """
    err = np.inf
    for it in range(max_iter + 1):
        err, xi_r, G = closing_rows(q)
        if not np.isfinite(err):
            raise ValueError('project: non-finite state')
        if hyperplane is not None:
            n, ref = hyperplane
            res = float(n @ difference(model, ref, q))
            scale = float(np.sqrt(n @ np.linalg.solve(mass_matrix(model, q), n)))
            held = abs(res) <= 1e-12 * scale  # [kinetic-energy-metric length]
            G, xi_r = np.vstack((G, n)), np.append(xi_r, res)
        else:
            held = True
        if err <= tol and held:
            return q, err, True
        if it == max_iter:
            break
        q = integrate(model, q, metric_correction(mass_matrix(model, q), G, xi_r, rtol))
    return q, err, False


def collapsed(model: Model, q_start: np.ndarray, q_end: np.ndarray, q_closed: np.ndarray) -> bool:
    """Whether closing the loops took the configuration back from ``q_end`` by more than
    :data:`COLLAPSE_RATIO` of the step from ``q_start`` (kinetic-energy metric at ``q_end``).

    Parameters
    ----------
    model : Model
    q_start, q_end : (nq,) ndarray
        The step's start and end [m, -, rad | m].
    q_closed : (nq,) ndarray
        ``q_end`` after closing the loops.

    Returns
    -------
    bool
    """
    H = mass_matrix(model, q_end)
    d = difference(model, q_start, q_end)
    p = difference(model, q_end, q_closed)
    step = float(d @ H @ d)
    return step > 0.0 and float(p @ H @ p) > COLLAPSE_RATIO**2 * step


def _loop_metric(model: Model, closing_rows: ClosingRows, q: np.ndarray) -> np.ndarray:
    """The kinetic-energy metric at ``q`` with the coordinates no loop row involves (the
    base's, joints off every loop path: their columns of the rows are exactly zero) minimized
    out: ``H_LL - H_LF H_FF^-1 H_FL`` on the loop coordinates ``L``, zero elsewhere (nv, nv).
    A displacement of the loop coordinates costs that much with the others free, as a loop
    impulse would leave them (the base moving to keep the momentum)."""
    H = mass_matrix(model, q)
    G = closing_rows(q)[2]
    loop = np.any(G != 0.0, axis=0) if G.size else np.zeros(model.nv, dtype=bool)
    free = ~loop
    out = np.zeros_like(H)
    HLF = H[np.ix_(loop, free)]
    reduced = H[np.ix_(loop, loop)]
    if free.any():
        reduced = reduced - HLF @ np.linalg.solve(H[np.ix_(free, free)], HLF.T)
    out[np.ix_(loop, loop)] = reduced
    return out


def nearest_closure(
    model: Model,
    closing_rows: ClosingRows,
    q_start: np.ndarray,
    q_end: np.ndarray,
    tol: float,
    max_iter: int,
    rtol: float,
) -> np.ndarray | None:
    """The closed configuration nearest ``q_end`` near a loop singularity (module
    docstring), or None when it is not found in ``max_iter`` iterations of each pass or the
    step did not move. The hyperplanes hold the loop coordinates alone (the metric of
    :func:`_loop_metric`): the others, free, would let a hyperplane be met by moving them.

    Parameters
    ----------
    model : Model
    closing_rows : ClosingRows
    q_start, q_end : (nq,) ndarray
        The step's start and end [m, -, rad | m].
    tol, max_iter, rtol
        As :func:`close_loops`.

    Returns
    -------
    (nq,) ndarray or None
    """
    H = _loop_metric(model, closing_rows, q_end)
    d = difference(model, q_start, q_end)
    if not float(d @ H @ d) > 0.0:
        return None
    q, _, ok = close_loops(model, closing_rows, q_end, tol, max_iter, rtol, (H @ d, q_end))
    if not ok:
        return None
    t = difference(model, q_start, q)  # along the branch the loops allow
    if not float(t @ H @ t) > 0.0:
        return None
    # to round-off where it can (the rows there resolve the branch the better, and the
    # velocity projection then keeps them): iterate on while the errors still halve
    near, err, ok = close_loops(model, closing_rows, q, tol, max_iter, rtol, (H @ t, q_end))
    if not ok:
        return q
    for _ in range(max_iter):
        nearer, tighter, _ = close_loops(model, closing_rows, near, 0.0, 1, rtol, (H @ t, q_end))
        if not tighter < 0.5 * err:
            break
        near, err = nearer, tighter
    return near


def close_after_step(
    model: Model,
    gauss_newton: Callable[[np.ndarray], tuple[np.ndarray, float, bool]],
    closing_rows: ClosingRows,
    q: np.ndarray,
    start: np.ndarray | None,
    settings: tuple[float, int, float],
    names: str,
) -> np.ndarray:
    """The closed configuration for ``q`` (nq,): ``gauss_newton(q) -> (q, max |xi|,
    converged)``, and with ``start`` (the configuration the step to ``q`` started from) the
    nearest closed configuration where that took most of the step back or did not converge
    (module docstring).

    Parameters
    ----------
    model : Model
    gauss_newton : callable
        ``q -> (q, max |xi|, converged)``, e.g. :func:`close_loops` bound to its settings.
    closing_rows : ClosingRows
    q : (nq,) ndarray
        The configuration after the step [m, -, rad | m].
    start : (nq,) ndarray or None
        The configuration the step started from.
    settings : (float, int, float)
        ``(tol, max_iter, rtol)`` as :func:`close_loops`.
    names : str
        The loops, for the message.

    Returns
    -------
    (nq,) ndarray

    Raises
    ------
    RuntimeError
        No closed configuration found (names the loops, ``names``, and the error left).
    """
    tol, max_iter, rtol = settings
    closed_q, err, closed = gauss_newton(q)
    if start is not None and (not closed or collapsed(model, start, q, closed_q)):
        near = nearest_closure(model, closing_rows, start, q, tol, max_iter, rtol)
        if near is not None:
            return near
    if not closed:
        raise RuntimeError(
            f'project: {names}: no convergence in {max_iter} iterations (max |xi| = {err:.3e})'
        )
    return closed_q
