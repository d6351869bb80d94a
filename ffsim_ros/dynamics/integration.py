"""Time integration on the configuration manifold (Lie group R^3 x SO(3) x R^n).

``q`` is never advanced by ``q += v dt``: :func:`integrate` applies the exact flow of a
constant velocity (unit quaternions kept) and the Runge-Kutta methods run in the local chart
``theta -> integrate(q, theta)`` (Munthe-Kaas), so the 4th order of RK4 holds for the
attitudes too. There is one RK4 scheme (:mod:`.kernels.lie_group`): :func:`step` runs it
compiled with the ABA accelerations, :func:`rk4_step` runs it with any acceleration function
(closed chains, prescribed base motion).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping

import numpy as np

from .algorithms import body_wrenches
from .inputs import (
    ArrayLike,
    about_the_base,
    any_link_wrench,
    as_bool,
    as_count,
    as_q,
    as_q_rows,
    as_rows,
    as_v,
    as_vector,
    back_from_the_base,
    batch_shape,
    generalized_force,
    generalized_force_parts,
    generalized_forces,
    input_error,
    is_batch,
    link_wrench_items,
    no_batched_wrenches,
    positive_step,
    real_number,
    require_floating,
)
from .kernels.batched import b_integrate, b_mass_matrix, b_rk4_step
from .kernels.entry import (
    e_chart_rate,
    e_conserving_rk4_steps,
    e_correct_momentum,
    e_forward_dynamics,
    e_integrate,
    e_mass_matrix,
    e_momentum_target,
    e_rk4_stage,
    e_rk4_steps,
    taken,
)
from .kernels.lie_group import RK4_NODES, RK4_WEIGHTS
from .lie import quat_conjugate, quat_log, quat_multiply, quat_to_matrix, quat_unit
from .model import Model
from .solver_step import SolverFailure, rates_text, solve_ivp_step
from .state_errors import is_finite, is_kernel_failure, require_finite_inputs, state_error
from .stiff_friction import (
    DISPLACEMENT_SHARE,
    explicit_part,
    friction_displacement,
    friction_impulse,
    friction_slopes,
    implicit_dofs,
)

#: Fixed-step methods of :func:`step`.
FIXED_STEP_METHODS = ('rk4', 'euler')
#: Variable-step methods of :func:`step` (``scipy.integrate.solve_ivp``).
SCIPY_METHODS = ('RK45', 'DOP853', 'Radau', 'BDF', 'LSODA')
#: Every method of :func:`step`.
STEP_METHODS = FIXED_STEP_METHODS + SCIPY_METHODS

_NO_WRENCH = np.empty(0)
_NO_LINK_WRENCH = np.empty((0, 6))
_NO_DOFS = np.empty(0, dtype=np.int64)
#: Rates [m/s, rad/s] beyond which the velocity products of the dynamics overflow float64.
_OVERFLOW_RATE = 1e150
#: The most steps :func:`step` takes in one call (the compiled kernels count in int64).
MAX_STEPS = 2**63 - 1
#: The rotation [rad] of the base or of a ball joint over one step, at the rates at its start,
#: from which :func:`step` (every method), :func:`rk4_step` and the closed chains' steps refuse
#: the step (:func:`check_step_rotation`): RK4 runs the attitudes in the exponential chart about
#: the step's start (:func:`.lie.so3_chart_rate`), singular at a full turn (the servicer made
#: one rigid body, spun at one turn per step about a principal axis, came out 0.6-2.6 rad off
#: in attitude, silently) and inaccurate well before it (0.57 rad at 3 rad per step about a
#: generic axis, 3e-3 at 1 rad); a step of pi rad is a poor one for any method.
MAX_STEP_ROTATION = math.pi


def integrate(model: Model, q: ArrayLike, v: ArrayLike, dt: float = 1.0) -> np.ndarray:
    """Configuration reached from ``q`` after moving with constant ``v`` for ``dt`` seconds.

    Parameters
    ----------
    model : Model
    q, v : (nq,), (nv,) state [m, -, rad | m], [m/s, rad/s, rad/s | m/s], inertial frame.
    dt : float [s], finite (any sign).

    Returns
    -------
    (nq,) ndarray with unit quaternions; (..., nq) for batched ``q`` (..., nq), ``v`` (..., nv).

    Raises
    ------
    ValueError
        Wrong sizes, a non-finite input or a zero quaternion, named; a motion ``v dt`` that
        overflows float64 (``dt = 1e300``), naming ``dt``.
    """
    dt = _finite_time(dt)
    if is_batch(q):
        lead = batch_shape(q)
        Q = as_q_rows(model, q, lead)
        V = as_rows(v, model.nv, 'v', lead)
        out = b_integrate(*model.packed, Q, V, dt)
        if not (math.isfinite(out.sum()) or np.isfinite(out).all()):  # (rows: finite)
            r = int(np.flatnonzero(~np.isfinite(out).all(axis=1))[0])
            raise ValueError(f'{_flow_overflow(V[r], dt)} in row {r}')
        return out.reshape(lead + (model.nq,))
    q = as_q(model, q)
    v = as_v(model, v)
    try:
        return e_integrate(*model.packed, q, v, dt)  # (checks its result finite)
    except ZeroDivisionError as e:  # a zero quaternion
        raise state_error(model, e, q=q, v=v) from e
    except ValueError as e:  # not finite: a NaN input, named, else v dt overflowed
        raise input_error(model, q=q, v=v) or ValueError(_flow_overflow(v, dt)) from e


def _flow_overflow(v: np.ndarray, dt: float) -> str:
    """The message of a configuration that is not finite after a motion of ``v`` for ``dt``
    from a finite one."""
    return (
        f'dt: the motion v dt overflows float64 (dt = {dt:g} s, max |v| = '
        f'{float(np.max(np.abs(v), initial=0.0)):.3g}): expected a finite configuration'
    )


def difference(model: Model, q0: ArrayLike, q1: ArrayLike) -> np.ndarray:
    """Velocity ``v`` with ``integrate(model, q0, v, 1) == q1`` (the inverse of integrate).

    Parameters
    ----------
    model : Model
    q0, q1 : (nq,) configurations [m, -, rad | m].

    Returns
    -------
    (nv,) ndarray: ``[r0_1 - r0_0, rotation vector of Q1 Q0^-1 (inertial frame), phi1 - phi0]``
    where a spherical joint's entry is the rotation vector of ``Q0^-1 Q1`` (child frame).

    Raises
    ------
    ValueError
        Naming ``q0`` or ``q1``: a wrong size, a value that is not finite, a zero quaternion
        (a quaternion of any other norm is normalized, as :func:`integrate` does).
    """
    q0 = as_vector(q0, model.nq, 'q0')
    q1 = as_vector(q1, model.nq, 'q1')
    if not math.isfinite(q0.sum() + q1.sum()):  # (finite sums: no entry to look for)
        error = input_error(model, q0=q0, q1=q1)
        if error is not None:
            raise error

    def unit(name: str, x: np.ndarray, i: int) -> np.ndarray:
        return quat_unit(x[i : i + 4], f'{name}[{i}:{i + 4}]')

    out = np.empty(model.nv)
    if model.floating_base:
        out[:3] = q1[:3] - q0[:3]
        # inertial-frame rotation vector of Q1 Q0^-1 (the base turns by left multiplication)
        out[3:6] = quat_log(quat_multiply(unit('q1', q1, 3), quat_conjugate(unit('q0', q0, 3))))
    for k, kind in enumerate(model.joint_types):
        iq, iv = model.idx_q[k], model.idx_v[k]
        if kind == 'spherical':
            # child-frame rotation vector of Q0^-1 Q1 (a ball joint turns by right multiplication)
            a, b = unit('q0', q0, iq), unit('q1', q1, iq)
            out[iv : iv + 3] = quat_log(quat_multiply(quat_conjugate(a), b))
        else:
            nj = model.nvs[k]
            out[iv : iv + nj] = q1[iq : iq + nj] - q0[iq : iq + nj]
    return out


def _finite_time(dt: object) -> float:
    """``dt`` as a finite float (a duration of any sign)."""
    value = dt if dt.__class__ is float else real_number(dt, 'dt')
    if not -math.inf < value < math.inf:  # type: ignore[operator]
        raise ValueError(f'dt: expected a finite duration, got {value}')
    return value


def check_step_rotation(model: Model, v: np.ndarray, dt: float, what: str = 'step') -> None:
    """Refuse a step of ``dt`` [s] that turns the base or a ball joint by
    :data:`MAX_STEP_ROTATION` (pi rad) or more at the rates ``v`` (nv,) or (B, nv) (rows) at
    its start [rad/s].

    Parameters
    ----------
    model : Model
    v : (nv,) or (B, nv) velocity [m/s, rad/s, rad/s | m/s].
    dt : float, step [s].
    what : str, names the step in the message.

    Raises
    ------
    StepFailure
        Naming the base or the joint (and of a batch the row turning it fastest), its
        rotation per step, its rate and the largest ``dt`` allowed (``what``: the function
        named at the start of the message). A non-finite rate is left to the checks that
        name it.
    """
    if model.floating_base:
        if v.ndim == 1:  # (the per-call path: 0.5 us)
            rate = math.hypot(v[3], v[4], v[5])
        else:
            rate = float(np.max(np.sqrt(np.sum(v[:, 3:6] ** 2, axis=1)), initial=0.0))
        if rate * dt >= MAX_STEP_ROTATION:
            _refuse_rotation(model, v, dt, 'the base', 3, what)
    if model.nq - model.nv == (1 if model.floating_base else 0):
        return  # (no ball joint)
    for k, kind in enumerate(model.joint_types):
        if kind == 'spherical':
            w = v[..., model.idx_v[k] : model.idx_v[k] + 3]
            rate = float(np.max(np.sqrt(np.sum(w * w, axis=-1)), initial=0.0))
            if rate * dt >= MAX_STEP_ROTATION:
                joint = f'ball joint {model.joint_names[k]!r}'
                _refuse_rotation(model, v, dt, joint, model.idx_v[k], what)


def _refuse_rotation(
    model: Model, v: np.ndarray, dt: float, who: str, first: int, what: str
) -> None:
    """Raise the :class:`StepFailure` of :func:`check_step_rotation` for the angular velocity
    ``v[..., first:first + 3]`` (or the error naming a non-finite ``v``)."""
    error = input_error(model, v=v)
    if error is not None:
        raise error
    rates = np.sqrt(np.sum(v[..., first : first + 3] ** 2, axis=-1))
    row = int(np.argmax(rates)) if v.ndim > 1 else -1  # (of a batch: the fastest row)
    rate = float(rates[row]) if v.ndim > 1 else float(rates)
    where = f'row {row}: ' if row >= 0 else ''
    raise StepFailure(
        f'{what}: {who} would turn by {rate * dt:.3g} rad in one step ({where}|w| = '
        f'{rate:.4g} rad/s at its start, dt = {dt:g} s): expected less than pi rad per step '
        '(the step runs the attitude in a chart about its start, inaccurate from there and '
        f'singular at a full turn): a smaller dt, below {MAX_STEP_ROTATION / rate:.3g} s'
    )


def step(
    model: Model,
    q: ArrayLike,
    v: ArrayLike,
    tau: ArrayLike,
    dt: float,
    *,
    method: str = 'rk4',
    base_wrench: ArrayLike | None = None,
    base_wrench_body: ArrayLike | None = None,
    link_wrenches: Mapping[str, ArrayLike] | None = None,
    steps: int = 1,
    conserve_momentum: bool = False,
    rtol: float = 1e-10,
    atol: float = 1e-12,
) -> tuple[np.ndarray, np.ndarray]:
    """Advance the state by ``steps`` steps of ``dt`` under constant inputs [S0 eq. 39].

    Parameters
    ----------
    model : Model
    q, v : (nq,), (nv,) state [m, -, rad | m], [m/s, rad/s, rad/s | m/s], inertial frame.
    tau : (n,) joint efforts [N m | N].
    dt : float, step [s].
    method : str
        ``'rk4'`` (classical RK4 in the local chart, 4 dynamics calls), ``'euler'``
        (semi-implicit Euler, 1 call), or a ``scipy.integrate.solve_ivp`` method
        (``'RK45'``, ``'DOP853'``, ``'Radau'``, ``'BDF'``, ``'LSODA'``; variable step inside
        ``[0, dt]`` with tolerances ``rtol``/``atol``, in at most
        :data:`.solver_step.SOLVER_STEPS` + one per :data:`.solver_step.SOLVER_STEP_FLOOR` of
        ``dt`` internal steps, :data:`.solver_step.SOLVER_MAX_STEPS` at most).
    base_wrench : (6,) optional
        ``[F; T]`` at the base CoM, inertial frame [N, N m], constant in the inertial frame.
    base_wrench_body : (6,) optional
        ``[f; n]`` at the base CoM in the *base* frame [N, N m]: it turns with the base (a
        thruster), re-expressed in the inertial frame wherever the dynamics are evaluated
        (each RK4 stage). Added to ``base_wrench``.
    link_wrenches : dict, optional
        ``{link: [f; n]}`` at link origins, inertial frame [N, N m], constant in the inertial
        frame; each acts at its link's origin *where the link is* at every evaluation of the
        dynamics (each RK4 stage, the ``solve_ivp`` right-hand side), so RK4 keeps its 4th
        order under them (the step runs the scheme of :func:`rk4_step` in Python: slower than
        the compiled step without link wrenches, the same results to round-off).
    steps : int
        Number of steps (>= 1) under the same inputs (a Python or NumPy integer).
    conserve_momentum : bool
        Floating base without external wrenches (joint efforts and gravity only): after each
        step, restore the momentum the step must end with (the momentum before it, plus the
        weight's impulse) by the kinetic-energy-metric projection of the base velocity
        (:mod:`.kernels.conservation`). The momentum then holds to round-off at any step size;
        the trajectory keeps the method's order. A base or link wrench is a ``ValueError``.
    rtol, atol : float
        Relative and absolute tolerances of the ``solve_ivp`` methods (finite, > 0; unused by
        ``'rk4'`` and ``'euler'``).

    Returns
    -------
    q_next, v_next : (nq,), (nv,) ndarray

    Raises
    ------
    TypeError
        An argument of the wrong type (``model`` not a Model, ``steps`` not an integer,
        ``conserve_momentum`` not a bool, ``dt`` not a real number, values that are not real
        numbers, ``link_wrenches`` not a mapping).
    ValueError
        Wrong sizes or values (``steps`` above :data:`MAX_STEPS`); a non-finite input or a
        zero quaternion, named, whatever the method (the compiled steps check the state they
        reach, the ``solve_ivp`` methods their inputs before solving); the dynamics failing
        within the step although the state it started from is finite (too large a step or
        too fast a motion, said so: :class:`StepFailure`, naming the step that failed among
        ``steps``); a step that would turn the base or a ball joint by pi rad or more at the
        rates at its start (:class:`StepFailure`, :func:`check_step_rotation`; with
        ``steps`` > 1 only the first step's rates are checked); a ``solve_ivp`` method failing
        or taking more internal steps than allowed within a step (:class:`StepFailure` naming
        the method, its evaluations of the dynamics, the time, step size and rates it
        reached).

    Notes
    -----
    Batched use (``'rk4'`` only, no body-frame or link wrenches): ``q`` (..., nq), ``v``
    (..., nv), ``tau`` (..., n), ``base_wrench`` (..., 6) give (..., nq), (..., nv),
    computed on all cores (with ``conserve_momentum``, row by row through the single-state
    scheme: the rows are the single-state results).

    Joint friction (``model.joint_dynamics``) [S0 eq. 41]: where a joint's friction is too
    stiff for an explicit step of ``dt`` (``dt (d + f_c / 1e-3) (H^-1)_jj`` above
    :data:`.stiff_friction.STIFF_RATIO`, e.g. the servicer's wrist at 1 ms), ``'rk4'`` and
    ``'euler'`` split each step: the method without joint friction, then every joint's
    friction as a backward-Euler impulse over the step and its displacement (``dt/2`` of the
    impulse's velocity change after RK4, ``dt`` after Euler) (:mod:`.stiff_friction`: stable
    at any ``dt``, internal, so the momentum is kept; a released joint comes to rest and a
    sub-breakaway effort creeps at the law's rates, angles too). Whether to split is decided
    at the start of the call (then at each step while some joint is stiff, after a split step
    with the inertia where its impulse acted); where no joint is stiff the
    results are those of the method alone, bit for bit. :func:`~.derivatives.step_derivatives`
    linearizes the split step too.

    The steps are integrated with the world origin moved to the base CoM ``q[0:3]`` at their
    start (:func:`about_the_base`): the motion does not depend on where the origin is, but the
    kernels take their spatial quantities about it, with round-off growing with the square of
    the distance (docs/dynamics.md); the base position is added back at the end, so a robot
    far from the origin steps as precisely as one at it.
    """
    dt = positive_step(dt)
    if steps.__class__ is not int or not 1 <= steps <= MAX_STEPS:
        steps = as_count(steps, 'steps', maximum=MAX_STEPS)
    if conserve_momentum is not False and conserve_momentum is not True:
        conserve_momentum = as_bool(conserve_momentum, 'conserve_momentum')
    if conserve_momentum:
        _check_conservable(model, base_wrench, base_wrench_body, link_wrenches)
    if is_batch(q):
        no_batched_wrenches(link_wrenches)
        if method != 'rk4' or base_wrench_body is not None:
            raise ValueError(
                f"method: expected 'rk4' without base_wrench_body with batched states, got "
                f'{method!r}' + (' with base_wrench_body' if base_wrench_body is not None else '')
            )
        lead = batch_shape(q)
        given_rows = as_q_rows(model, q, lead)
        qn, origin = about_the_base(model, given_rows)
        vn = as_rows(v, model.nv, 'v', lead)
        check_step_rotation(model, vn, dt)
        gen = generalized_forces(model, tau, base_wrench, lead)
        if _stiff_rows(model, qn, dt):  # (each row as the single-state step: split steps)
            qn, vn = _single_rows(model, given_rows, vn, gen, dt, steps, conserve_momentum)
            return qn.reshape(lead + (model.nq,)), vn.reshape(lead + (model.nv,))
        if conserve_momentum:
            qn, vn = _conserving_rows(model, qn, vn, gen, dt, steps)
        else:
            for _ in range(steps):
                qn, vn = b_rk4_step(*model.packed, qn, vn, gen, model.joint_dynamics, dt)
        qn = back_from_the_base(qn, origin)
        return qn.reshape(lead + (model.nq,)), vn.reshape(lead + (model.nv,))
    q = as_q(model, q)
    v = as_v(model, v)
    check_step_rotation(model, v, dt)
    given = q, v  # what a failure is judged by: the loop below moves q, v on
    q, origin = about_the_base(model, q)
    gen = generalized_force(model, tau, base_wrench)
    body = _NO_WRENCH
    if base_wrench_body is not None:
        require_floating(model, 'base_wrench_body')
        body = as_vector(base_wrench_body, 6, 'base_wrench_body')
        error = input_error(model, base_wrench_body=body)
        if error is not None:
            raise error
    if method not in STEP_METHODS:
        raise ValueError(f'method: expected one of {STEP_METHODS}, got {method!r}')
    if method in SCIPY_METHODS:
        rtol, atol = positive_step(rtol, 'rtol'), positive_step(atol, 'atol')
        # checked first: solve_ivp's step-size loop never ends on a NaN right-hand side
        require_finite_inputs(model, q=given[0], v=v, **generalized_force_parts(model, gen))
    packed, fric = model.packed, model.joint_dynamics
    links = dict(link_wrench_items(link_wrenches))  # (checked once, not at each stage)

    def advance(
        pk: tuple[np.ndarray, np.ndarray], q: np.ndarray, v: np.ndarray, count: int
    ) -> tuple[np.ndarray, np.ndarray]:
        """``count`` steps of ``method`` with the packed model ``pk``."""
        if conserve_momentum and method == 'rk4':
            return e_conserving_rk4_steps(*pk, q, v, gen, fric, dt, count)
        if method == 'rk4' and not links:
            return e_rk4_steps(*pk, q, v, gen, _NO_LINK_WRENCH, fric, dt, body, count)

        def acceleration(qt: np.ndarray, vel: np.ndarray) -> np.ndarray:
            # the link wrenches act where their links are at (qt): re-evaluated at each stage
            force = gen if body.size == 0 else _with_body_wrench(model, qt, gen, body)
            fext = body_wrenches(model, qt, links) if links else _NO_LINK_WRENCH
            return e_forward_dynamics(*pk, qt, vel, force, fext, fric, True)

        for _ in range(count):
            target = e_momentum_target(*pk, q, v, dt) if conserve_momentum else None
            if method == 'rk4':
                q, v = _rk4(model, q, v, dt, lambda _h, qs, vs: acceleration(qs, vs))
                continue
            if method == 'euler':
                v = v + dt * acceleration(q, v)
                q = e_integrate(*pk, q, v, dt)
            else:
                q, v = solve_ivp_step(model, q, v, dt, acceleration, method, rtol, atol)
            if target is not None:
                q, v = e_correct_momentum(*pk, q, v, target)
        return q, v

    # the compiled steps check the state they reach (a few ns: a NaN input or a failure is
    # raised there, named below); the Python loops' results are checked at the end
    compiled = method == 'rk4' and (conserve_momentum or not links)
    start, whole = (q, v), False  # (whole: the steps run in one call of ``advance``)

    def failure(error: Exception | None) -> Exception:
        """:func:`step_error`; where the steps ran in one call, naming the step that failed
        among several (found again by :func:`_failing_step`) and, for RK4, the stage where it
        failed (:func:`_last_stage`): the failure path only."""
        out = step_error(model, error, *given, gen, dt, steps, wrench_body=body)
        if not (isinstance(out, StepFailure) and whole):
            return out
        k, q_k, v_k = 1, *start
        if steps > 1:
            k, q_k, v_k = _failing_step(lambda a, b, c: advance(packed, a, b, c), *start, steps)
        stage = _last_stage(model, q_k, v_k, dt, gen, body, links) if method == 'rk4' else ''
        failing = (k, v_k, stage)
        return step_error(model, error, *given, gen, dt, steps, wrench_body=body, failing=failing)

    try:  # a kernel failing on the state: the argument that is not finite, named
        H = None
        dofs = _NO_DOFS
        if fric and method in FIXED_STEP_METHODS:  # joint friction too stiff? [S0 eq. 41]
            slopes = friction_slopes(model)
            if slopes.any():
                H = _mass_matrix(model, q)
                dofs = implicit_dofs(H, slopes, dt)
        if dofs.size == 0:  # (friction nowhere too stiff at the start: the method alone)
            whole = True
            q, v = advance(packed, q, v, steps)
        else:
            for k in range(steps):
                if k > 0:  # (H where the last step's impulse acted: its displacement is small)
                    dofs = implicit_dofs(H, slopes, dt)
                if dofs.size == 0:
                    q, v = advance(packed, q, v, 1)
                    H = _mass_matrix(model, q)
                    continue
                # the explicit method without joint friction, then every joint's implicit
                # friction impulse at the step's end and its displacement (.stiff_friction)
                target = e_momentum_target(*packed, q, v, dt) if conserve_momentum else None
                q, v_explicit = advance(explicit_part(model, dofs), q, v, 1)
                H = _mass_matrix(model, q)
                v = friction_impulse(model, H, v_explicit, dofs, dt)
                q, v = friction_displacement(
                    model, q, v_explicit, v, DISPLACEMENT_SHARE[method] * dt
                )
                if target is not None:  # (the impulse is internal: round-off only)
                    q, v = e_correct_momentum(*packed, q, v, target)
            compiled = False
    except (ValueError, ZeroDivisionError) as e:
        raise failure(e) from e
    except RuntimeError as e:  # solve_ivp failed: an input's overflow when there is one
        error = step_error(model, None, *given, gen, dt, steps, wrench_body=body)
        if type(error) is not StepFailure:
            raise error from e
        if isinstance(e, SolverFailure):  # (solve_ivp's own words; an overflow is named)
            raise StepFailure(str(e)) from e
        raise
    if not compiled and not (is_finite(q) and is_finite(v)):
        raise failure(None)
    return back_from_the_base(q, origin), v


def _failing_step(
    advance: Callable[[np.ndarray, np.ndarray, int], tuple[np.ndarray, np.ndarray]],
    q: np.ndarray,
    v: np.ndarray,
    steps: int,
) -> tuple[int, np.ndarray, np.ndarray]:
    """The first of ``steps`` steps from ``(q, v)`` that fails (1-based) and the state at its
    start, by bisection over ``advance(q, v, count)``: about log2(steps) calls, the halves
    that succeed kept, so it costs about what the failed call did."""
    done = 0
    while steps > 1:
        half = steps // 2
        try:
            q1, v1 = advance(q, v, half)
            good = is_finite(q1) and is_finite(v1)
        except (ValueError, ZeroDivisionError, RuntimeError):
            good = False
        if good:
            q, v, done, steps = q1, v1, done + half, steps - half
        else:
            steps = half
    return done + 1, q, v


def _last_stage(
    model: Model,
    q: np.ndarray,
    v: np.ndarray,
    dt: float,
    gen: np.ndarray,
    body: np.ndarray,
    links: dict,
) -> str:
    """Where the RK4 step from ``(q, v)`` (about the base) under ``gen`` (and the base-frame
    wrench ``body``, the link wrenches ``links``) fails, for a message: the rates of its last
    stage and how far the base got (the failure path only: one step run again, in Python)."""
    packed, fric = model.packed, model.joint_dynamics
    reached = [(q, v)]

    def acceleration(_h: float, qs: np.ndarray, vs: np.ndarray) -> np.ndarray:
        reached.append((qs, vs))
        force = gen if body.size == 0 else _with_body_wrench(model, qs, gen, body)
        fext = body_wrenches(model, qs, links) if links else _NO_LINK_WRENCH
        return e_forward_dynamics(*packed, qs, vs, force, fext, fric, True)

    try:
        with np.errstate(all='ignore'):
            _rk4(model, q, v, dt, acceleration)
    except Exception:  # noqa: BLE001 - the failure looked for, whatever it is
        pass
    qs, vs = reached[-1]
    if not (is_finite(qs) and is_finite(vs)):
        return ' at a stage of the step whose state is not finite'
    text = f' at a stage of the step with {rates_text(model, vs)}'
    if model.floating_base:
        moved = math.hypot(*(qs[:3] - q[:3]).tolist())
        text += f', the base {moved:.3g} m from where the step began'
    return text


def _mass_matrix(model: Model, q: np.ndarray) -> np.ndarray:
    """The inertia matrix (nv, nv) at ``q`` (nq,)."""
    H = np.empty((model.nv, model.nv))
    taken(e_mass_matrix(*model.packed, q, H))
    return H


def _stiff_rows(model: Model, Q: np.ndarray, dt: float) -> bool:
    """Whether the joint friction of any row of ``Q`` (B, nq) is too stiff for RK4 at ``dt``
    (:func:`.stiff_friction.implicit_dofs`)."""
    if not model.joint_dynamics:
        return False
    slopes = friction_slopes(model)
    if not slopes.any():
        return False
    Hs = b_mass_matrix(*model.packed, Q)
    return any(implicit_dofs(H, slopes, dt).size for H in Hs)


def _single_rows(
    model: Model,
    Q: np.ndarray,
    V: np.ndarray,
    gen: np.ndarray,
    dt: float,
    steps: int,
    conserve_momentum: bool,
) -> tuple[np.ndarray, np.ndarray]:
    """``steps`` RK4 steps of each row of ``Q`` (B, nq), ``V`` (B, nv) under ``gen`` (B, nv)
    by the single-state :func:`step` (a row's error names it)."""
    Qn, Vn = np.empty_like(Q), np.empty_like(V)
    for r in range(Q.shape[0]):
        parts = generalized_force_parts(model, gen[r])
        try:
            Qn[r], Vn[r] = step(
                model,
                Q[r],
                V[r],
                parts['tau'],
                dt,
                base_wrench=parts.get('base_wrench'),
                steps=steps,
                conserve_momentum=conserve_momentum,
            )
        except ValueError as e:
            raise ValueError(f'{e} (row {r})') from e
    return Qn, Vn


def _conserving_rows(
    model: Model, Q: np.ndarray, V: np.ndarray, gen: np.ndarray, dt: float, steps: int
) -> tuple[np.ndarray, np.ndarray]:
    """``steps`` momentum-conserving RK4 steps of each row of ``Q`` (B, nq), ``V`` (B, nv)
    under ``gen`` (B, nv), row by row through the single-state kernel (there is no batched
    one): each row is exactly the single-state :func:`step`."""
    packed, fric = model.packed, model.joint_dynamics
    Qn, Vn = np.empty_like(Q), np.empty_like(V)
    for r in range(Q.shape[0]):
        q, v, g = Q[r].copy(), V[r].copy(), gen[r].copy()
        try:
            Qn[r], Vn[r] = e_conserving_rk4_steps(*packed, q, v, g, fric, dt, steps)
        except (ValueError, ZeroDivisionError) as e:
            raise ValueError(f'{step_error(model, e, q, v, g, dt, steps)} (row {r})') from e
    return Qn, Vn


class StepFailure(ValueError):
    """:func:`step` failed from a finite state where the dynamics are defined: too large a
    step or too fast a motion for it (the message says so, with the joint rates)."""


class StepOverflow(StepFailure):
    """A :class:`StepFailure` whose inputs drive rates beyond ~1e150 within the step, whose
    squares overflow float64 whatever the step (the message names the inputs' sizes)."""


def step_error(
    model: Model,
    error: Exception | None,
    q: np.ndarray,
    v: np.ndarray,
    gen: np.ndarray,
    dt: float,
    steps: int = 1,
    *,
    wrench_body: np.ndarray | None = None,
    failing: tuple[int, np.ndarray, str] | None = None,
) -> Exception:
    """The exception to raise when a kernel failed within :func:`step` (or its linearization,
    :func:`~.derivatives.step_derivatives`) from the given state ``(q, v)`` under ``gen``
    (``error`` None: the kernel returned a result that is not finite): the argument that is
    not finite or the zero quaternion, named; the model degenerate when its dynamics are not
    defined at the given state already; else the failure of the step(s) from a finite state
    (:class:`StepFailure`: too large a step or too fast a motion, as the simulation engine
    words it), not the model's; else ``error`` itself.

    Parameters
    ----------
    model : Model
    error : Exception or None
    q, v : (nq,), (nv,) state [m, -, rad | m], [m/s, rad/s, rad/s | m/s], inertial frame.
    gen : (nv,) generalized force ``[F_b; tau]`` [N, N m | N m | N].
    dt : float, step [s].
    steps : int, steps asked.
    wrench_body : (6,) or (0,) the step's ``base_wrench_body`` (base frame) [N, N m], optional.
    failing : (failed step (1-based), (nv,) velocity at its start, where it failed), optional.

    Returns
    -------
    Exception
    """
    parts = generalized_force_parts(model, gen)
    if wrench_body is not None and wrench_body.size:
        parts['base_wrench_body'] = wrench_body
    named = input_error(model, q=q, v=v, **parts)
    if named is not None:
        return named
    if error is not None and 'non-finite result' in str(error):  # (a compiled step's check)
        error = None
    if error is not None and not is_kernel_failure(error):
        return error
    local, _ = about_the_base(model, q)  # (as the step takes it: precise far from the origin)
    force = gen
    if wrench_body is not None and wrench_body.size:
        force = _with_body_wrench(model, local, gen, wrench_body)
    try:  # the dynamics at the start: not defined there, the model is (state_error says so)
        if not np.isfinite(force).all():  # (a huge base-frame wrench turned into the world)
            raise ValueError('non-finite result')
        a0 = e_forward_dynamics(
            *model.packed, local, v, force, np.empty((0, 6)), model.joint_dynamics, True
        )
    except (ValueError, ZeroDivisionError) as start:
        return state_error(model, error or start, q=q, v=v, **parts)
    within = 'the step' if steps == 1 else f'the {steps} steps'
    why = 'a non-finite result' if error is None else str(error) or 'division by zero'
    where, rates, stage = '', f'{rates_text(model, v)} at the start', ''
    if failing is not None:
        stage = failing[2]
    if failing is not None and steps > 1:  # (the rates at its start, then at the first's)
        where = f'in step {failing[0]}: '
        rates = (
            f'{rates_text(model, failing[1])} at its start ({rates_text(model, v)} at the first)'
        )
    text = (
        f'step: the dynamics failed within {within} from a finite state ({where}{why}{stage}; '
        f'{rates}): too large a step (dt = {dt:g} s) or too fast a motion for it?'
    )
    # the rates the inputs drive within the steps: beyond ~1e150 their squares (the velocity
    # products of the dynamics) overflow float64 whatever the step -- said, the inputs named
    reach = float(np.max(np.abs(v), initial=0.0) + steps * dt * np.max(np.abs(a0), initial=0.0))
    if not reach <= _OVERFLOW_RATE:
        largest = {name: float(np.max(np.abs(x), initial=0.0)) for name, x in parts.items()}
        largest = {'v': float(np.max(np.abs(v), initial=0.0)), **largest}
        sizes = ', '.join(f'max |{k}| = {x:.3g}' for k, x in largest.items() if x > 0.0)
        text += f' Overflow: the inputs drive rates up to {reach:.3g} within {within} ({sizes})'
        return StepOverflow(text)
    return StepFailure(text)


def momentum_after(model: Model, q: ArrayLike, v: ArrayLike, dt: float) -> np.ndarray:
    """The momentum ``[P; L_O]`` (6,) about the inertial origin that the state ``(q, v)`` has
    after ``dt`` seconds when gravity is the only external force (exact: ``P`` gains
    ``M g dt`` and the CoM follows its ballistic path); inertial frame [kg m/s, kg m^2/s].

    Parameters
    ----------
    model : Model, floating base.
    q, v : (nq,), (nv,) state [m, -, rad | m], [m/s, rad/s, rad/s | m/s], inertial frame.
    dt : float [s].

    Returns
    -------
    (6,) ndarray
    """
    require_floating(model, 'momentum_after')
    q, v = as_q(model, q), as_v(model, v)
    dt = _finite_time(dt)
    try:
        out = e_momentum_target(*model.packed, q, v, dt)[:6]
    except ZeroDivisionError as e:  # a zero quaternion
        raise state_error(model, e, q=q, v=v) from e
    if not is_finite(out):  # a NaN input, named; else the CoM's path overflowed in dt
        require_finite_inputs(model, q=q, v=v)
        raise ValueError(
            f'dt: the momentum after dt = {dt:g} s overflows float64 (max |v| = '
            f'{float(np.max(np.abs(v), initial=0.0)):.3g}): expected a shorter time'
        )
    return out


def _check_conservable(
    model: Model,
    base_wrench: ArrayLike | None,
    base_wrench_body: ArrayLike | None,
    link_wrenches: Mapping[str, ArrayLike] | None,
) -> None:
    require_floating(model, 'conserve_momentum')
    links = any_link_wrench(link_wrenches)
    if base_wrench is not None or base_wrench_body is not None or links:
        raise ValueError(
            'conserve_momentum: expected no base or link wrench (their impulse over a step '
            'is not known in advance), got '
            + ', '.join(
                name
                for name, given in (
                    ('base_wrench', base_wrench is not None),
                    ('base_wrench_body', base_wrench_body is not None),
                    ('link_wrenches', links),
                )
                if given
            )
        )


def _with_body_wrench(
    model: Model, q: np.ndarray, gen: np.ndarray, body: np.ndarray
) -> np.ndarray:
    """``gen`` with the base-frame wrench ``body`` added to its base part in the inertial
    frame (the attitude of ``q``)."""
    R = quat_to_matrix(q[3:7])
    out = gen.copy()
    out[:3] += R @ body[:3]
    out[3:6] += R @ body[3:]
    return out


def rk4_step(
    model: Model,
    q: ArrayLike,
    v: ArrayLike,
    dt: float,
    acceleration: Callable[[float, np.ndarray, np.ndarray], np.ndarray],
    *,
    t: float = 0.0,
) -> tuple[np.ndarray, np.ndarray]:
    """One step of the package's RK4 scheme (:mod:`.kernels.lie_group`) with any dynamics.

    Parameters
    ----------
    model : Model
    q, v : (nq,), (nv,) state [m, -, rad | m], [m/s, rad/s, rad/s | m/s], inertial frame.
    dt : float, step [s].
    acceleration : callable
        ``acceleration(t, q, v) -> (nv,)`` accelerations at time ``t`` [s] (closed-chain
        dynamics, a prescribed base motion, ...).
    t : float
        Time at the start of the step [s].

    Returns
    -------
    q_next, v_next : (nq,), (nv,) ndarray

    Raises
    ------
    ValueError
        ``q``, ``v`` or an acceleration returned not finite, named; the step's result not
        finite from finite stages, or a step turning the base or a ball joint by pi rad or
        more (:class:`StepFailure`).
    """
    dt = positive_step(dt)
    q = as_q(model, q)
    v = as_v(model, v)
    require_finite_inputs(model, q=q, v=v)
    check_step_rotation(model, v, dt, 'rk4_step')

    def checked(h: float, qs: np.ndarray, vs: np.ndarray) -> np.ndarray:
        a = as_v(model, acceleration(t + h, qs, vs), 'acceleration')
        require_finite_inputs(model, acceleration=a)
        return a

    try:
        return _rk4(model, q, v, dt, checked)
    except ValueError as e:  # (the kernels' check of the state reached)
        if 'non-finite result' not in str(e):
            raise
        raise StepFailure(
            f'rk4_step: the step failed from a finite state (a non-finite result; dt = {dt:g} '
            's): too large a step or too fast a motion for it?'
        ) from e


def _rk4(
    model: Model,
    q: np.ndarray,
    v: np.ndarray,
    dt: float,
    acceleration: Callable[[float, np.ndarray, np.ndarray], np.ndarray],
) -> tuple[np.ndarray, np.ndarray]:
    """One step of the package's RK4 scheme from ``q`` (nq,), ``v`` (nv,) over ``dt`` [s]:
    the same stage points, weights and order of operations as the compiled
    :func:`.kernels.lie_group.rk4_step_into`, with ``acceleration(h, q_s, v_s)`` (nv,) at
    each stage, ``h = c_s dt`` [s] its time from the step's start."""
    packed = model.packed
    d = np.zeros(model.nv)
    a = d
    theta = np.zeros(model.nv)
    v_sum = np.zeros(model.nv)
    qs, vs, ths = q, v, d
    for s, (node, weight) in enumerate(zip(RK4_NODES, RK4_WEIGHTS, strict=True)):
        if s > 0:
            qs, vs, ths = e_rk4_stage(*packed, q, v, d, a, node * dt)
        a = acceleration(node * dt, qs, vs)
        d = e_chart_rate(*packed, ths, vs)
        theta += weight * dt * d
        v_sum += weight * dt * a
    return e_integrate(*packed, q, theta, 1.0), v + v_sum
