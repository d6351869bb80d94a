"""The one RK4 scheme on the Lie group (``D.step`` compiled, ``D.rk4_step`` with any
acceleration function) and the body-frame base wrench (a thruster: it turns with the base).

References: the Python driver ``D.rk4_step`` fed with ABA accelerations (the same tableau
evaluated by other code), repeated single steps, a fine-step reference run for the order of
convergence, and closed forms for a torque-free rigid body spinning about a principal axis
pushed by a body-fixed force (``P(t) = P0 + int_0^t exp(s [w]x) ds R0 f``).
"""

from __future__ import annotations

import re

import numpy as np
import pytest
from solver_guard import bound_solvers

import ffsim_ros.dynamics as D
from ffsim_ros.dynamics.builder import ModelBuilder, random_configuration, random_model
from ffsim_ros.dynamics.lie import matrix_exp, quat_to_matrix, skew
from ffsim_ros.resources import sample_robot

MIXED = ('revolute', 'prismatic', 'spherical', 'universal')
G = (0.2, -0.1, -9.81)


def robot(seed: int = 21, gravity=G) -> D.Model:
    """A floating base with ball, universal, revolute and prismatic joints."""
    return random_model(seed, 5, joint_types=MIXED, gravity=gravity)


def tumbling_state(model: D.Model, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    q = random_configuration(model, rng)
    v = rng.normal(size=model.nv)
    v[3:6] = 2.0 * rng.normal(size=3)  # a tumbling base [rad/s]
    return q, v


def rotated(q: np.ndarray, wrench_body: np.ndarray) -> np.ndarray:
    """A base-frame wrench ``[f; n]`` in the inertial frame at the attitude of ``q``."""
    R = quat_to_matrix(q[3:7])
    return np.r_[R @ wrench_body[:3], R @ wrench_body[3:]]


def aba_acceleration(model, tau, base_wrench=None, base_wrench_body=None):
    """``acceleration(t, q, v)`` for ``D.rk4_step``: ABA with the body-frame wrench turned
    into the inertial frame at each evaluation."""

    def acceleration(_t: float, q: np.ndarray, v: np.ndarray) -> np.ndarray:
        world = np.zeros(6) if base_wrench is None else np.array(base_wrench, float)
        if base_wrench_body is not None:
            world = world + rotated(q, base_wrench_body)
        return D.forward_dynamics(model, q, v, tau, base_wrench=world)

    return acceleration


def state_error(model: D.Model, qa, va, qb, vb) -> float:
    return float(np.linalg.norm(D.difference(model, qa, qb)) + np.linalg.norm(va - vb))


WRENCHES = ['none', 'world', 'body', 'both']


def wrenches(kind: str, rng: np.random.Generator):
    bw = 5.0 * rng.normal(size=6) if kind in ('world', 'both') else None
    bwb = 5.0 * rng.normal(size=6) if kind in ('body', 'both') else None
    return bw, bwb


# --------------------------------------------------------------------------------------------
# the compiled scheme and the Python driver are one scheme
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize('kind', WRENCHES)
def test_compiled_rk4_step_equals_the_python_driver_with_aba(kind: str) -> None:
    model = robot()
    q, v = tumbling_state(model, 1)
    rng = np.random.default_rng(2)
    tau = rng.normal(size=model.n)
    bw, bwb = wrenches(kind, rng)
    for dt in (1e-3, 0.05):
        qc, vc = D.step(model, q, v, tau, dt, base_wrench=bw, base_wrench_body=bwb)
        qp, vp = D.rk4_step(model, q, v, dt, aba_acceleration(model, tau, bw, bwb))
        np.testing.assert_allclose(qc, qp, rtol=0, atol=1e-14)
        np.testing.assert_allclose(vc, vp, rtol=0, atol=1e-14 * max(1.0, np.linalg.norm(v)))


def test_python_driver_names_a_non_finite_acceleration() -> None:
    """An acceleration function returning NaN gave a NaN state; named now, as the inputs."""
    model = robot()
    q, v = tumbling_state(model, 5)

    def nan_at(index: int):  # noqa: ANN202
        def acceleration(_t: float, _q: np.ndarray, _v: np.ndarray) -> np.ndarray:
            a = np.zeros(model.nv)
            a[index] = np.nan
            return a

        return acceleration

    with pytest.raises(ValueError, match='^acceleration: expected finite values, got nan at'):
        D.rk4_step(model, q, v, 1e-3, nan_at(4))
    bad = v.copy()
    bad[2] = np.inf
    with pytest.raises(ValueError, match='^v: expected finite values, got inf at index 2'):
        D.rk4_step(model, q, bad, 1e-3, lambda _t, _q, _v: np.zeros(model.nv))


def test_python_driver_passes_the_stage_times() -> None:
    """``acceleration(t, q, v)`` is called at ``t0 + c_s dt`` (c = 0, 1/2, 1/2, 1) from the
    stage states: a time-dependent force integrates like a quadrature rule of order 4."""
    b = ModelBuilder('box')
    b.add_base('box', mass=2.0, inertia=[1.0, 0, 0, 2.0, 0, 3.0])
    model = b.build()
    times = []

    def acceleration(t, q, v):  # a(t) = [3 t^2, 0, 0, 0, 0, 0]
        times.append(t)
        return np.r_[3.0 * t * t, np.zeros(5)]

    t0, dt = 0.7, 0.1
    q, v = D.rk4_step(model, D.neutral(model), np.zeros(6), dt, acceleration, t=t0)
    np.testing.assert_allclose(times, [t0, t0 + dt / 2, t0 + dt / 2, t0 + dt], rtol=1e-15)
    # Simpson's rule is exact for a cubic velocity: v = (t0 + dt)^3 - t0^3
    assert v[0] == pytest.approx((t0 + dt) ** 3 - t0**3, rel=1e-14)


@pytest.mark.parametrize('method', ['rk4', 'euler', 'DOP853'])
@pytest.mark.parametrize('kind', ['none', 'both'])
def test_steps_equal_repeated_single_steps(method: str, kind: str) -> None:
    model = robot()
    q0, v0 = tumbling_state(model, 3)
    rng = np.random.default_rng(4)
    tau = rng.normal(size=model.n)
    bw, bwb = wrenches(kind, rng)
    n, dt = 7, 2e-3
    kw = {'method': method, 'base_wrench': bw, 'base_wrench_body': bwb}
    qn, vn = D.step(model, q0, v0, tau, dt, steps=n, **kw)
    q, v = q0, v0
    for _ in range(n):
        q, v = D.step(model, q, v, tau, dt, **kw)
    np.testing.assert_allclose(qn, q, rtol=0, atol=1e-15)
    np.testing.assert_allclose(vn, v, rtol=0, atol=1e-15 * max(1.0, np.linalg.norm(v)))
    assert state_error(model, q0, v0, qn, vn) > 1e-3  # it did move
    with pytest.raises(ValueError, match='steps: expected an integer >= 1, got 0'):
        D.step(model, q0, v0, tau, dt, steps=0, **kw)


def test_steps_of_a_batch_equal_repeated_single_steps() -> None:
    model = robot()
    rng = np.random.default_rng(5)
    Q = np.array([random_configuration(model, rng) for _ in range(3)])
    V, T = rng.normal(size=(3, model.nv)), rng.normal(size=(3, model.n))
    Qn, Vn = D.step(model, Q, V, T, 1e-3, steps=4)
    for k in range(3):
        q, v = Q[k], V[k]
        for _ in range(4):
            q, v = D.step(model, q, v, T[k], 1e-3)
        np.testing.assert_allclose(Qn[k], q, rtol=0, atol=1e-14)
        np.testing.assert_allclose(Vn[k], v, rtol=0, atol=1e-13)


# --------------------------------------------------------------------------------------------
# 4th order on the Lie group
# --------------------------------------------------------------------------------------------


def convergence_order(model, q0, v0, tau, horizon: float, dts, **kw) -> float:
    """log2 of the ratio of the errors at ``dts = (dt, dt/2)`` against a run at ``dt/32``."""

    def run(dt: float):
        return D.step(model, q0, v0, tau, dt, steps=int(round(horizon / dt)), **kw)

    qr, vr = run(dts[1] / 16)
    errs = [state_error(model, qr, vr, *run(dt)) for dt in dts]
    return float(np.log2(errs[0] / errs[1]))


@pytest.mark.parametrize('kind', WRENCHES)
def test_rk4_is_fourth_order_for_a_tumbling_base_with_a_ball_joint(kind: str) -> None:
    """Error ratio ~16 when halving dt: the attitudes (base: left chart, ball joint: right
    chart) are integrated to 4th order, and so is a base-frame wrench, re-expressed at every
    stage (held at the step's start attitude, the order measured here drops to 1.0)."""
    model = random_model(12, 3, joint_types=('spherical', 'revolute'), gravity=G)
    assert 'spherical' in model.joint_types
    q0, v0 = tumbling_state(model, 6)
    rng = np.random.default_rng(7)
    bw, bwb = wrenches(kind, rng)
    tau = rng.normal(size=model.n)
    kw = {'base_wrench': bw, 'base_wrench_body': bwb}
    order = convergence_order(model, q0, v0, tau, 0.4, (8e-3, 4e-3), **kw)
    assert 3.6 < order < 4.4, order


# --------------------------------------------------------------------------------------------
# the base-frame wrench (a thruster)
# --------------------------------------------------------------------------------------------

INERTIA = np.diag([1.0, 2.0, 3.0])
MASS = 4.0


def rigid_body() -> D.Model:
    b = ModelBuilder('rigid_body')
    b.add_base('body', mass=MASS, com=(0.1, -0.2, 0.3), inertia=INERTIA)
    return b.build()


def spinning(rate: float, seed: int = 8) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A rigid body turning at ``rate`` about its principal axis z (torque-free: ``w`` stays
    constant), and the world angular velocity."""
    rng = np.random.default_rng(seed)
    quat = rng.normal(size=4)
    q = np.r_[rng.normal(size=3), quat / np.linalg.norm(quat)]
    w = quat_to_matrix(q[3:7]) @ np.array([0.0, 0.0, rate])
    return q, np.r_[rng.normal(size=3), w], w


def momentum_of_a_body_force(q0, v0, w, f_body, t: float) -> np.ndarray:
    """``P(t) = m V0 + int_0^t exp(s [w]x) R0 f ds`` (closed form of the integral)."""
    W = skew(w)
    om = np.linalg.norm(w)
    integral = t * np.eye(3)
    if om > 0:
        integral += (1 - np.cos(om * t)) / om**2 * W + (om * t - np.sin(om * t)) / om**3 * W @ W
    return MASS * v0[:3] + integral @ quat_to_matrix(q0[3:7]) @ f_body


def test_body_wrench_without_rotation_is_the_world_wrench() -> None:
    """No angular velocity and a force through the CoM: the attitude stays, so the body-frame
    wrench is the world wrench ``R f`` (to round-off); with the body turning, it is not."""
    model = rigid_body()
    rng = np.random.default_rng(9)
    f = rng.normal(size=3)
    q, v, _ = spinning(0.0)
    for method in ('rk4', 'euler', 'RK45'):
        body = D.step(
            model, q, v, np.zeros(0), 0.1, method=method, base_wrench_body=np.r_[f, 0, 0, 0]
        )
        world = D.step(
            model, q, v, np.zeros(0), 0.1, method=method, base_wrench=rotated(q, np.r_[f, 0, 0, 0])
        )
        for a, b in zip(body, world, strict=True):
            np.testing.assert_allclose(a, b, rtol=0, atol=1e-15)
        np.testing.assert_allclose(body[0][3:7], q[3:7], rtol=0, atol=1e-15)  # no rotation
    q, v, _ = spinning(3.0)
    body = D.step(model, q, v, np.zeros(0), 0.1, base_wrench_body=np.r_[f, 0, 0, 0])
    world = D.step(model, q, v, np.zeros(0), 0.1, base_wrench=rotated(q, np.r_[f, 0, 0, 0]))
    assert np.linalg.norm(body[1][:3] - world[1][:3]) > 1e-3 * np.linalg.norm(f)


@pytest.mark.parametrize('method', ['rk4', 'DOP853', 'Radau'])
def test_thruster_momentum_turns_with_the_body(method: str) -> None:
    """A body-fixed force on a body spinning about a principal axis: the momentum follows the
    rotated force, ``P(t) - P0 = int R(s) f ds`` in closed form, to 1e-9; the angular
    momentum about the moving CoM stays (the force acts through it)."""
    model = rigid_body()
    q0, v0, w = spinning(2.5)
    f = np.array([3.0, -1.0, 2.0])
    dt, n = (1e-3, 500) if method == 'rk4' else (0.05, 10)
    q, v = q0, v0
    L0 = D.momentum(model, q0, v0, about='base')[3:]
    for k in range(1, n + 1):
        q, v = D.step(
            model, q, v, np.zeros(0), dt, method=method, base_wrench_body=np.r_[f, 0, 0, 0]
        )
        if k % (n // 5) == 0:
            P = D.momentum(model, q, v)[:3]
            ref = momentum_of_a_body_force(q0, v0, w, f, k * dt)
            assert np.linalg.norm(P - ref) < 1e-9 * np.linalg.norm(ref), (k, P - ref)
    np.testing.assert_allclose(D.momentum(model, q, v, about='base')[3:], L0, rtol=0, atol=1e-9)
    R_end = matrix_exp(w * n * dt) @ quat_to_matrix(q0[3:7])
    np.testing.assert_allclose(quat_to_matrix(q[3:7]), R_end, rtol=0, atol=1e-9)
    # a force held fixed in the world would have given m V0 + t R0 f instead
    P_fixed = MASS * v0[:3] + n * dt * quat_to_matrix(q0[3:7]) @ f
    assert np.linalg.norm(D.momentum(model, q, v)[:3] - P_fixed) > 0.1


def test_thruster_on_a_robot_changes_the_momentum_by_the_rotated_wrench() -> None:
    """Floating robot with ball joints, no gravity, joint torques (internal), a base-frame
    wrench ``[f; n]`` at the base CoM ``r0``: the momentum ``[P; L_O]`` changes by
    ``int [R f; R n + r0 x R f] dt`` (Simpson's rule over the simulated states), to 1e-9."""
    model = robot(gravity=(0.0, 0.0, 0.0))
    q0, v0 = tumbling_state(model, 10)
    rng = np.random.default_rng(11)
    tau, wb = rng.normal(size=model.n), np.r_[5.0 * rng.normal(size=3), rng.normal(size=3)]
    dt, n = 1e-3, 400
    q, v, rates = q0, v0, []
    for k in range(n + 1):
        world = rotated(q, wb)
        rates.append(np.r_[world[:3], world[3:] + np.cross(q[:3], world[:3])])
        if k < n:
            q, v = D.step(model, q, v, tau, dt, base_wrench_body=wb)
    rates = np.array(rates)
    simpson = dt / 3 * (rates[0] + rates[-1] + 4 * rates[1:-1:2].sum(0) + 2 * rates[2:-1:2].sum(0))
    change = D.momentum(model, q, v) - D.momentum(model, q0, v0)
    assert np.linalg.norm(change - simpson) < 1e-9 * np.linalg.norm(change)
    # the wrench held at the start attitude would have changed P by t R0 f instead
    assert np.linalg.norm(change[:3] - n * dt * rotated(q0, wb)[:3]) > 0.1


def test_body_wrench_is_checked() -> None:
    model = robot()
    q, v = tumbling_state(model, 12)
    tau = np.zeros(model.n)
    with pytest.raises(ValueError, match='base_wrench_body: expected 6 values, got 5'):
        D.step(model, q, v, tau, 1e-3, base_wrench_body=np.ones(5))
    fixed = random_model(12, 3, joint_types=('revolute',), floating_base=False)
    with pytest.raises(ValueError, match='base_wrench_body: expected a floating-base model'):
        D.step(
            fixed, D.neutral(fixed), np.zeros(3), np.zeros(3), 1e-3, base_wrench_body=np.ones(6)
        )
    with pytest.raises(ValueError, match="expected 'rk4' without base_wrench_body with batched"):
        D.step(
            model,
            np.array([q, q]),
            np.array([v, v]),
            np.zeros((2, model.n)),
            1e-3,
            base_wrench_body=np.ones(6),
        )
    with pytest.raises(ValueError, match='method: expected one of'):
        D.step(model, q, v, tau, 1e-3, method='rk5')
    with pytest.raises(ValueError, match='dt: expected a finite positive step, got -0.001'):
        D.rk4_step(model, q, v, -1e-3, aba_acceleration(model, tau))
    with pytest.raises(ValueError, match=f'acceleration: expected {model.nv} values, got 3'):
        D.rk4_step(model, q, v, 1e-3, lambda t, q, v: np.zeros(3))


# --------------------------------------------------------------------------------------------
# link wrenches act where their links are at each stage
# --------------------------------------------------------------------------------------------

LINK_WRENCH = {'tip_1': np.array([0.0, 3.0, 20.0, 0.5, 0.0, -0.2])}


def link_wrench_acceleration(model, tau, links, base_wrench_body=None):
    """``acceleration(t, q, v)`` for ``D.rk4_step``: ABA with the link wrenches applied at
    the stage's link origins (independent of the step's own per-stage code)."""

    def acceleration(_t: float, q: np.ndarray, v: np.ndarray) -> np.ndarray:
        world = None if base_wrench_body is None else rotated(q, base_wrench_body)
        return D.forward_dynamics(model, q, v, tau, base_wrench=world, link_wrenches=links)

    return acceleration


@pytest.mark.parametrize('method', ['rk4', 'euler'])
def test_a_zero_link_wrench_steps_as_none(method: str) -> None:
    """A (zero) link wrench takes the Python path of the scheme; with no link wrench the
    compiled one: the two agree to round-off, with a body-frame base wrench too."""
    model = robot()
    q, v = tumbling_state(model, 31)
    rng = np.random.default_rng(32)
    tau, bwb = rng.normal(size=model.n), 5.0 * rng.normal(size=6)
    zero = {'tip_1': np.zeros(6)}
    for dt, steps in ((1e-3, 3), (0.05, 1)):
        kw = {'method': method, 'base_wrench_body': bwb, 'steps': steps}
        qc, vc = D.step(model, q, v, tau, dt, **kw)
        qp, vp = D.step(model, q, v, tau, dt, link_wrenches=zero, **kw)
        np.testing.assert_allclose(qp, qc, rtol=0, atol=1e-14)
        np.testing.assert_allclose(vp, vc, rtol=0, atol=1e-13 * max(1.0, np.linalg.norm(v)))


def test_link_wrench_step_equals_the_driver_at_each_stage() -> None:
    """The step with a link wrench is the package's RK4 scheme with the wrench applied at
    each stage's link origin (``rk4_step`` over ``forward_dynamics``), to round-off."""
    model = robot()
    q, v = tumbling_state(model, 33)
    tau = np.random.default_rng(34).normal(size=model.n)
    bwb = np.array([1.0, -2.0, 0.5, 0.1, 0.0, 0.3])
    for dt in (1e-3, 0.05):
        qs, vs = D.step(model, q, v, tau, dt, link_wrenches=LINK_WRENCH, base_wrench_body=bwb)
        acc = link_wrench_acceleration(model, tau, LINK_WRENCH, bwb)
        qp, vp = D.rk4_step(model, q, v, dt, acc)
        np.testing.assert_allclose(qs, qp, rtol=0, atol=1e-14)
        np.testing.assert_allclose(vs, vp, rtol=0, atol=1e-13 * max(1.0, np.linalg.norm(v)))


def test_link_wrench_keeps_the_fourth_order() -> None:
    """Held at the step's start, the link wrench's point cut RK4 to first order (error
    ratio 2 when dt halves); applied at each stage the ratio is 2^4 = 16."""
    model = robot(gravity=(0.0, 0.0, 0.0))
    q, v = tumbling_state(model, 35)
    v *= 0.3
    tau = np.zeros(model.n)
    T = 0.2

    def run(dt: float) -> tuple[np.ndarray, np.ndarray]:
        steps = int(round(T / dt))
        return D.step(model, q, v, tau, dt, link_wrenches=LINK_WRENCH, steps=steps)

    q_ref, v_ref = run(T / 400)
    errors = [state_error(model, *run(dt), q_ref, v_ref) for dt in (T / 20, T / 40)]
    ratio = errors[0] / errors[1]
    assert 13.0 < ratio < 19.0, (errors, ratio)


# --------------------------------------------------------------------------------------------
# the body-frame base wrench is checked like the base wrench
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize('method', ['rk4', 'euler', 'RK45'])
@pytest.mark.parametrize('index', [0, 4])
@pytest.mark.parametrize('bad', [np.nan, np.inf])
def test_non_finite_body_wrench_is_named(method: str, index: int, bad: float) -> None:
    """It raised 'mass matrix is not positive definite ... too large a step'."""
    model = robot()
    q, v = tumbling_state(model, 36)
    w = np.zeros(6)
    w[index] = bad
    with pytest.raises(
        ValueError, match=f'base_wrench_body: expected finite values, got {bad} at index {index}'
    ):
        D.step(model, q, v, np.zeros(model.n), 1e-3, method=method, base_wrench_body=w)


@pytest.mark.parametrize('method', ['rk4', 'euler', 'RK45'])
@pytest.mark.parametrize('name', ['base_wrench', 'base_wrench_body'])
def test_huge_base_wrench_is_an_overflow_naming_it(method: str, name: str) -> None:
    """A finite 1e200 N wrench drives rates whose squares overflow: said so, with the
    wrench's size (it said only 'too large a step')."""
    model = robot()
    q, v = tumbling_state(model, 37)
    with (
        np.errstate(all='ignore'),
        pytest.raises(
            D.StepFailure,
            match=rf'Overflow: the inputs drive rates up to .*max \|{name}\| = 1e\+200',
        ),
    ):
        D.step(
            model, q, v, np.zeros(model.n), 1e-3, method=method, **{name: [1e200, 0, 0, 0, 0, 0]}
        )


def test_non_finite_base_wrench_is_named_by_euler() -> None:
    """Euler returned NaN states for a NaN base wrench (its Python loop was not checked)."""
    model = robot()
    q, v = tumbling_state(model, 38)
    with pytest.raises(
        ValueError, match='base_wrench: expected finite values, got nan at index 2'
    ):
        D.step(
            model,
            q,
            v,
            np.zeros(model.n),
            1e-3,
            method='euler',
            base_wrench=[0, 0, np.nan, 0, 0, 0],
        )


# --------------------------------------------------------------------------------------------
# the solve_ivp methods on a non-finite right-hand side
# --------------------------------------------------------------------------------------------


@pytest.fixture
def bounded_solver(monkeypatch: pytest.MonkeyPatch) -> None:
    """A solver that would never return fails the test instead of hanging it."""
    bound_solvers(monkeypatch)


def _servicer_fixed() -> D.Model:
    return D.load_urdf(sample_robot('ffsim_servicer_7dof'), floating_base=False)


@pytest.mark.usefixtures('bounded_solver')
@pytest.mark.parametrize('name', ['q', 'tau'])
def test_solver_methods_name_a_non_finite_input_of_a_fixed_base(name: str) -> None:
    """RK45 and DOP853 never returned for a NaN joint angle or effort on a fixed base (its
    dynamics have no Cholesky factor to fail on NaN: the right-hand side was NaN, the step
    size loop endless); the inputs are checked before any solver starts."""
    model = _servicer_fixed()
    given = {'q': np.full(7, 0.2), 'v': np.full(7, 0.1), 'tau': np.ones(7)}
    given[name][1] = np.nan
    outcomes = {}
    for method in D.SCIPY_METHODS:
        try:
            D.step(model, **given, dt=1e-3, method=method)
        except Exception as e:  # noqa: BLE001 (every method's outcome listed)
            outcomes[method] = f'{type(e).__name__}: {e}'
    expected = f'ValueError: {name}: expected finite values, got nan at index 1'
    assert outcomes == dict.fromkeys(D.SCIPY_METHODS, expected)


@pytest.mark.usefixtures('bounded_solver')
def test_solver_methods_stop_on_a_right_hand_side_that_overflows() -> None:
    """Finite joint rates of 1e200 on a fixed base (their squares overflow): RK45, DOP853 and
    LSODA never returned, Radau and BDF raised SciPy's 'array must not contain infs or
    NaNs'. The right-hand side is checked finite at each evaluation: the step's failure from
    a finite state, said so."""
    model = _servicer_fixed()
    q, v = np.full(7, 0.2), np.full(7, 1e200)
    outcomes = {}
    for method in D.SCIPY_METHODS:
        try:
            with np.errstate(all='ignore'):
                D.step(model, q, v, np.zeros(7), 1e-3, method=method)
        except Exception as e:  # noqa: BLE001 (every method's outcome listed)
            outcomes[method] = f'{type(e).__name__}: {str(e)[:41]}'
    expected = 'StepOverflow: step: the dynamics failed within the step'
    assert outcomes == dict.fromkeys(D.SCIPY_METHODS, expected)


def _servicer(floating_base: bool) -> D.Model:
    return D.load_urdf(sample_robot('ffsim_servicer_7dof'), floating_base=floating_base)


#: The message of a solver stopped at its steps' bound within a step of 1 ms, up to the rates
#: at the start (the time and the step reached: figures of the solver's own, checked below).
_STOPPED = (
    r'^step: solve_ivp\((?P<method>\w+)\) stopped after the 1010 steps it may take within a '
    r'step of 0\.001 s \(1000 \+ one per 0\.0001 s, at most 11000\) with (?P<calls>\d+) '
    r'evaluations of the dynamics, at t = (?P<t>\S+) s of the 0\.001 s step \(its last step '
    r'(?P<h>\S+) s long; there (?P<there>.+); at the start (?P<start>.+)\): too large a step '
    r'\(dt = 0\.001 s\) or too fast a motion for it, or, at modest rates, a stiff system '
    r'\(joint friction, damping\) for an explicit method(?P<hint>.*)$'
)


@pytest.mark.usefixtures('bounded_solver')
@pytest.mark.parametrize(
    ('floating_base', 'rate', 'effort'),
    [(False, 1e12, 0.0), (True, 1e12, 0.0), (False, 0.0, 1e15), (True, 0.0, 1e15)],
)
def test_solver_methods_stop_on_a_motion_far_too_fast_for_the_step(
    floating_base: bool, rate: float, effort: float
) -> None:
    """Finite, enormous rates (joint rates of 1e12 rad/s, or efforts of 1e15 N m from rest)
    on the servicer, fixed or floating: every solve_ivp method but DOP853 under the efforts
    (a non-finite stage) did not return within 30 s (steps of 1e-16 to 1e-10 s, ~1e9 of them
    within the 1 ms step) or took 1 to 22 s to fail. Each now stops after its 1010 steps
    (1000 + one per 0.1 ms of the step): a StepFailure naming the method, its evaluations,
    the time and the step size it reached, the rates there and at the start."""
    model = _servicer(floating_base)
    q = D.neutral(model)
    q[-7:] = 0.2
    v = np.zeros(model.nv)
    v[-7:] = rate
    tau = np.full(7, effort)
    start = ('the base turning at 0 rad/s and moving at 0 m/s, ' if floating_base else '') + (
        f'joint rates up to {rate:.3g} rad/s or m/s'
    )
    for method in D.SCIPY_METHODS:
        with pytest.raises(D.StepFailure) as failed:
            D.step(model, q, v, tau, 1e-3, method=method)
        text = str(failed.value)
        if method == 'DOP853' and effort:  # (its first stages already beyond float64)
            assert text.startswith('step: the dynamics failed within the step from a finite '), (
                text
            )
            continue
        found = re.match(_STOPPED, text)
        assert found is not None, text
        assert found['method'] == method and found['start'] == start
        assert int(found['calls']) >= 1010  # (one evaluation or more per step)
        assert 0.0 < float(found['h']) < float(found['t']) < 1e-6  # stuck near the start
        assert 'joint rates up to ' in found['there']
        explicit = method in ('RK23', 'RK45', 'DOP853')
        assert found['hint'] == (
            ": 'LSODA', 'Radau' or 'BDF' (implicit), or 'rk4' (stiff friction split off)"
            if explicit
            else ''
        )


@pytest.mark.usefixtures('bounded_solver')
def test_the_solver_steps_allowed_grow_with_the_step() -> None:
    """1000 steps plus one per 0.1 ms of dt, at most 11 000 (a step of 1 s): 1100 within a step
    of 10 ms (a sound step takes at most 27 at 1 ms, 537 at 0.1 s, 3711 at 1 s on the sample
    robots); with several steps, each step's own; a step of 1e6 s at 1e3 rad/s, whose
    allowance would have been 1e10 steps, did not come back."""
    model = _servicer(False)
    q, v = np.full(7, 0.2), np.full(7, 1e12)
    with pytest.raises(D.StepFailure, match=r'^step: solve_ivp\(LSODA\) stopped after the 1100 '):
        D.step(model, q, v, np.zeros(7), 0.01, method='LSODA')
    with pytest.raises(D.StepFailure, match=r'^step: solve_ivp\(BDF\) stopped after the 1010 '):
        D.step(model, q, v, np.zeros(7), 1e-3, method='BDF', steps=3)
    with pytest.raises(D.StepFailure, match=r'^step: solve_ivp\(LSODA\) stopped after the 11000 '):
        D.step(model, q, np.full(7, 1e3), np.zeros(7), 1e6, method='LSODA')
