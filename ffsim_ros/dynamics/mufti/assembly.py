"""The positions of :meth:`~.closed.ClosedChain.assemble`: Levenberg-Marquardt on the loop
errors, then the joint angles moved by whole turns toward the values asked.

An undamped minimum-norm Gauss-Newton step (``lstsq``) near a configuration where the loop
Jacobian loses rank is unbounded: on a 3-crank parallelogram it turned a crank by five whole
turns (32.1 rad for a requested 3.14), landing on a closed configuration far from the one
asked. Here each step solves ``min |xi + J dq|^2 + lambda |dq|^2`` (least squares, so
redundant rows are harmless) and moves no coordinate by more than :data:`MAX_STEP`; a step is
taken only where it lowers ``|xi|``, and ``lambda`` follows the gain ratio (Nielsen's update,
Madsen, Nielsen & Tingleff, *Methods for non-linear least squares problems*, 2004, sec. 3.2):
large where the linear model fails, vanishing as it holds, so the last steps are
Gauss-Newton's. Where no damped step lowers ``|xi|`` any more (a local minimum of it, not a
closed configuration), one undamped step, capped alike, is taken to leave it (200 starts of
ten loops, every joint offset from a closed configuration by 0.3 or 1.5 rad standard
deviation: 1 failed, 7 without that step; the undamped steps alone failed 1, and moved joints
by up to 20 turns).

Once the loops are closed, every joint angle the assembly may move (revolute, continuous and
universal joints) is moved by whole turns -- which leaves every body where it is, so the loops
stay closed -- to the equivalent nearest the value asked among those within its position
limits, or nearest the value asked when none is.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..integration import integrate
from ..model import Model

#: Largest change of one coordinate in one assembly step [rad | m].
MAX_STEP = 0.5
#: Initial damping relative to the largest diagonal entry of ``J^T J`` (Nielsen's tau).
_TAU = 1e-3
#: Damping relative to that entry beyond which no step lowers ``|xi|``: a local minimum.
_STUCK = 1e12
_TURN = 2.0 * np.pi

#: ``q -> (xi, jacobian)``: the loop errors (rows,) at ``q`` and a function that returns their
#: Jacobian (rows, nv) on the tree's velocities there.
LoopErrors = Callable[[np.ndarray], tuple[np.ndarray, Callable[[], np.ndarray]]]


def assemble_positions(
    model: Model,
    loop_errors: LoopErrors,
    q: np.ndarray,
    free: np.ndarray,
    tol: float,
    max_iter: int,
    names: str,
) -> np.ndarray:
    """A configuration near ``q`` (nq,) with ``max |xi| <= tol``, moving the coordinates
    ``free`` (nv,) bool only (module docstring).

    Parameters
    ----------
    model : Model
    loop_errors : LoopErrors
        ``q -> (xi, jacobian)`` (:data:`LoopErrors`).
    q : (nq,) ndarray
        Start configuration [m, -, rad | m], base parts in the inertial frame.
    free : (nv,) bool ndarray
        The coordinates that may move.
    tol : float
        On ``max |xi|`` [m, rad].
    max_iter : int
    names : str
        The loops, for messages.

    Returns
    -------
    (nq,) ndarray

    Raises
    ------
    ValueError
        A non-finite loop error on the way (``names`` the loops, in the message).
    RuntimeError
        No convergence in ``max_iter`` steps (the steps tried and not taken included).
    """
    iq, idof = angle_coordinates(model, free)
    asked = q[iq]
    xi, jacobian = _checked(loop_errors, q, names)
    err = float(np.max(np.abs(xi)))
    damping, growth, steps, turned = -1.0, 2.0, 0, False
    while True:
        if err <= tol and turned:
            return q
        if err <= tol:  # closed: whole turns toward the values asked, then checked again
            q = q.copy()
            q[iq] = nearest_turns(q[iq], asked, model.lower[idof], model.upper[idof])
            xi, jacobian = _checked(loop_errors, q, names)
            err, turned = float(np.max(np.abs(xi))), True
            continue
        if steps == max_iter:
            raise RuntimeError(
                f'assemble: {names}: no convergence in {max_iter} iterations (max |xi| = '
                f'{err:.3e} > {tol:.1e}); start closer to an assembled configuration'
            )
        steps += 1
        J = jacobian()[:, free]
        if damping < 0.0:
            scale = float(np.max(np.sum(J * J, axis=0), initial=0.0))  # max diag(J^T J)
            damping = _TAU * scale
        stuck = damping > _STUCK * scale  # at a local minimum of |xi|: step out of it
        dq = np.zeros(model.nv)
        dq[free] = damped_step(J, xi, 0.0 if stuck else damping)
        predicted = float(xi @ xi - np.sum((xi + J @ dq[free]) ** 2))
        q_try = integrate(model, q, dq)
        xi_try, jacobian_try = _checked(loop_errors, q_try, names)
        gain = float(xi @ xi - xi_try @ xi_try) / predicted if predicted > 0.0 else -1.0
        if gain > 0.0 or stuck:  # Nielsen's update of the damping
            q, xi, jacobian = q_try, xi_try, jacobian_try
            err = float(np.max(np.abs(xi)))
            damping = _TAU * scale if stuck else damping * max(1 / 3, 1 - (2 * gain - 1) ** 3)
            growth = 2.0
        else:
            damping *= growth
            growth *= 2.0


def _checked(
    loop_errors: LoopErrors, q: np.ndarray, names: str
) -> tuple[np.ndarray, Callable[[], np.ndarray]]:
    xi, jacobian = loop_errors(q)
    if not np.all(np.isfinite(xi)):
        raise ValueError(f'assemble: {names}: non-finite configuration')
    return xi, jacobian


def damped_step(jacobian: np.ndarray, xi: np.ndarray, damping: float) -> np.ndarray:
    """``argmin |xi + J dq|^2 + damping |dq|^2``, scaled down so that no coordinate moves
    more than :data:`MAX_STEP`.

    Parameters
    ----------
    jacobian : (rows, k) ndarray
        ``d xi / dq`` in the free coordinates.
    xi : (rows,) ndarray
        Loop errors [m, rad].
    damping : float
        ``lambda`` >= 0.

    Returns
    -------
    (k,) ndarray
    """
    k = jacobian.shape[1]
    system = np.vstack((jacobian, np.sqrt(damping) * np.eye(k)))
    step = -np.linalg.lstsq(system, np.concatenate((xi, np.zeros(k))), rcond=None)[0]
    largest = float(np.max(np.abs(step), initial=0.0))
    return step * (MAX_STEP / largest) if largest > MAX_STEP else step


def angle_coordinates(model: Model, free: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The configuration indices of the free joint angles (revolute, continuous and universal
    joints) and their DoF indices into ``model.lower`` / ``model.upper``.

    Parameters
    ----------
    model : Model
    free : (nv,) bool ndarray
        The coordinates the assembly may move.

    Returns
    -------
    iq, idof : (m,) int ndarray
    """
    iq, idof = [], []
    base = model.nv - model.n
    for k, kind in enumerate(model.joint_types):
        if kind not in ('revolute', 'continuous', 'universal'):
            continue
        for j in range(model.nvs[k]):
            if free[model.idx_v[k] + j]:
                iq.append(model.idx_q[k] + j)
                idof.append(model.idx_v[k] + j - base)
    return np.array(iq, dtype=np.int64), np.array(idof, dtype=np.int64)


def nearest_turns(
    q: np.ndarray, asked: np.ndarray, lower: np.ndarray, upper: np.ndarray
) -> np.ndarray:
    """Angles ``q`` moved by whole turns to the equivalent nearest ``asked`` among those within
    ``[lower, upper]``, or nearest ``asked`` when none is.

    Parameters
    ----------
    q, asked : (m,) ndarray
        Joint angles and the values asked [rad].
    lower, upper : (m,) ndarray
        Position limits [rad] (+-inf without).

    Returns
    -------
    (m,) ndarray ``q + 2 pi k``, ``k`` integers.
    """
    nearest = np.round((asked - q) / _TURN)
    k_lo = np.ceil((lower - q) / _TURN)  # (-inf, inf without limits)
    k_hi = np.floor((upper - q) / _TURN)
    turns = np.where(k_lo <= k_hi, np.clip(nearest, k_lo, k_hi), nearest)
    return q + _TURN * turns


def assemble_velocities(
    H: np.ndarray, G: np.ndarray, free: np.ndarray, v: np.ndarray
) -> np.ndarray:
    """The velocities of :meth:`~.closed.ClosedChain.assemble`: ``v`` projected onto
    ``G v = 0`` in the kinetic-energy metric of the free coordinates, ``v_f <- v_f - H_f^-1
    G_f^T (G_f H_f^-1 G_f^T)^+ G v`` (the velocity change an impulse along the constraints
    produces).

    Parameters
    ----------
    H : (nv, nv) ndarray
        Mass matrix at the assembled positions [kg, kg m, kg m^2].
    G : (m, nv) ndarray
        Loop velocity rows there (``G v`` the loops' velocity errors [m/s, rad/s]).
    free : (nv,) bool ndarray
        The coordinates the projection may change.
    v : (nv,) ndarray
        Generalized velocity ``[V0, w0, phidot]`` [m/s, rad/s, rad/s | m/s], base parts in
        the inertial frame; modified in place and returned.

    Returns
    -------
    (nv,) ndarray
        ``v`` with ``G v = 0`` (up to the pseudo-inverse's ``rcond`` 1e-10).
    """
    Gf = G[:, free]
    HiGt = np.linalg.solve(H[np.ix_(free, free)], Gf.T)
    v[free] -= HiGt @ (np.linalg.pinv(Gf @ HiGt, rcond=1e-10) @ (G @ v))
    return v


__all__ = ['MAX_STEP', 'LoopErrors', 'angle_coordinates', 'assemble_positions',
           'assemble_velocities', 'damped_step', 'nearest_turns']  # fmt: skip
