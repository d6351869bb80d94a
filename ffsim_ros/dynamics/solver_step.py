"""One step of a ``scipy.integrate`` variable-step method (the ``solve_ivp`` methods of
:func:`.integration.step`) in the local chart of the configuration manifold, in a bounded
number of internal steps.

The solver runs the loop of ``scipy.integrate.solve_ivp`` without output (the same results,
bit for bit) and stops after ``SOLVER_STEPS + dt / SOLVER_STEP_FLOOR`` internal steps
(:data:`SOLVER_MAX_STEPS` at most): on a motion far too fast for the step (finite joint rates
of 1e12 rad/s, efforts of 1e15 N m on the servicer) the solvers took steps of 1e-16 to 1e-10 s
and did not come back.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
from scipy.integrate import BDF, DOP853, LSODA, RK45, OdeSolver, Radau

from .kernels.entry import e_chart_rate, e_integrate
from .model import Model
from .state_errors import is_finite

_SOLVERS: dict[str, type[OdeSolver]] = {
    'RK45': RK45,
    'DOP853': DOP853,
    'Radau': Radau,
    'BDF': BDF,
    'LSODA': LSODA,
}
#: The internal steps a ``solve_ivp`` method may take within one step of ``dt`` [s]:
#: ``SOLVER_STEPS + dt / SOLVER_STEP_FLOOR`` (an average step of at least 0.1 ms beyond a
#: start-up allowance), at most :data:`SOLVER_MAX_STEPS`; then the step fails
#: (:class:`.integration.StepFailure`) in bounded time. A sound step takes far fewer: at most
#: 27 steps at 1 ms, 537 at 0.1 s and 3711 at 1 s over the sample robots (the dual-arm
#: servicer's stiff joint friction under RK45, tolerances 1e-10); a motion that needs more is
#: far too fast for ``dt`` (joint rates of 1e12 rad/s or efforts of 1e15 N m on the servicer:
#: steps of 1e-16 to 1e-10 s, ~1e9 of them within 1 ms, which the solvers took minutes or
#: hours over).
SOLVER_STEPS = 1000
#: See :data:`SOLVER_STEPS` [s].
SOLVER_STEP_FLOOR = 1e-4
#: The most internal steps within any step: those of a step of 1 s (the simulator's longest),
#: 11 000 (a step of 1e6 s of joints at 1e3 rad/s did not come back).
SOLVER_MAX_STEPS = SOLVER_STEPS + round(1.0 / SOLVER_STEP_FLOOR)


def solve_ivp_step(
    model: Model,
    q: np.ndarray,
    v: np.ndarray,
    dt: float,
    acceleration: Callable[[np.ndarray, np.ndarray], np.ndarray],
    method: str,
    rtol: float,
    atol: float,
) -> tuple[np.ndarray, np.ndarray]:
    """One step of a ``solve_ivp`` method in the local chart at ``q`` (the solver's loop of
    ``scipy.integrate.solve_ivp`` without output: the same results), in at most
    ``SOLVER_STEPS + dt / SOLVER_STEP_FLOOR`` internal steps, :data:`SOLVER_MAX_STEPS` at most.

    Raises
    ------
    ValueError
        The right-hand side not finite (solve_ivp would shrink its step for ever).
    SolverFailure
        The solver failed (its step below the spacing of floating-point numbers) or took
        more internal steps than allowed, with its figures (:func:`.integration.step` turns
        it into a :class:`.integration.StepFailure`).
    """
    nv = model.nv
    packed = model.packed
    evaluations = 0

    def rhs(_t: float, y: np.ndarray) -> np.ndarray:
        nonlocal evaluations
        evaluations += 1
        theta, vel = y[:nv], y[nv:]
        qt = e_integrate(*packed, q, theta, 1.0)
        out = np.concatenate((e_chart_rate(*packed, theta, vel), acceleration(qt, vel)))
        if not is_finite(out):  # (solve_ivp would shrink its step for ever)
            raise ValueError('non-finite result (the dynamics within the step)')
        return out

    solver = _SOLVERS[method](
        rhs, 0.0, np.concatenate((np.zeros(nv), v)), dt, rtol=rtol, atol=atol
    )
    allowed = SOLVER_MAX_STEPS if dt >= 1.0 else SOLVER_STEPS + math.ceil(dt / SOLVER_STEP_FLOOR)
    taken = 0
    while solver.status == 'running':
        if taken == allowed:
            why = (
                f'stopped after the {allowed} steps it may take within a step of {dt:g} s '
                f'({SOLVER_STEPS} + one per {SOLVER_STEP_FLOOR:g} s, at most {SOLVER_MAX_STEPS})'
            )
            raise SolverFailure(_failure(model, solver, method, why, evaluations, v))
        message = solver.step()
        taken += 1
        if solver.status == 'failed':
            why = f'failed after {taken} steps ({message})'
            raise SolverFailure(_failure(model, solver, method, why, evaluations, v))
    y = solver.y
    return e_integrate(*packed, q, y[:nv], 1.0), y[nv:].copy()


class SolverFailure(RuntimeError):
    """A ``solve_ivp`` method failed or ran out of internal steps within a step of
    :func:`.integration.step`, from a finite right-hand side (raised as a
    :class:`.integration.StepFailure`)."""


def _failure(
    model: Model,
    solver: OdeSolver,
    method: str,
    why: str,
    evaluations: int,
    v: np.ndarray,
) -> str:
    """The message of a :class:`SolverFailure` of ``method``: ``why``, the evaluations of the
    dynamics, the time and the rates reached, the last step's size and the rates at the
    start (``v``)."""
    dt, h = solver.t_bound, solver.step_size
    last = f'its last step {h:.3g} s long' if h else 'no step done'
    there = rates_text(model, solver.y[model.nv :])
    return (
        f'step: solve_ivp({method}) {why} with {evaluations} evaluations of the dynamics, '
        f'at t = {solver.t:.3g} s of the {dt:g} s step ({last}; there {there}; at the start '
        f'{rates_text(model, v)}): too large a step (dt = {dt:g} s) or too fast a motion for '
        'it, or, at modest rates, a stiff system (joint friction, damping) for an explicit '
        f'method{_stiff_hint(method)}'
    )


def _stiff_hint(method: str) -> str:
    """For an explicit method, the methods that take a stiff system in few steps."""
    if method in ('RK23', 'RK45', 'DOP853'):
        return ": 'LSODA', 'Radau' or 'BDF' (implicit), or 'rk4' (stiff friction split off)"
    return ''


def rates_text(model: Model, v: np.ndarray) -> str:
    """The rates of the velocity ``v`` (nv,) for a message: the base's angular rate and speed
    (of its CoM), the fastest joint's."""
    parts = []
    if model.floating_base:
        turn, move = math.hypot(*v[3:6].tolist()), math.hypot(*v[:3].tolist())
        parts.append(f'the base turning at {turn:.3g} rad/s and moving at {move:.3g} m/s')
    if model.n:
        rate = float(np.max(np.abs(v[model.nv - model.n :])))
        parts.append(f'joint rates up to {rate:.3g} rad/s or m/s')
    return ', '.join(parts)
