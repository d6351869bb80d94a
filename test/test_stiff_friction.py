"""Joint friction too stiff for an explicit step [S0 eq. 41] (:mod:`ffsim_ros.dynamics.
stiff_friction`).

The servicer's wrist (joint 7: Coulomb 0.2 N m, regularized below 1e-3 rad/s, against an
effective inertia of 0.0218 kg m^2) has ``dt f_c / (eps I) = 9.2`` at 1 ms, beyond RK4's
stability limit 2.785: released at 0.05 rad/s it kept a false 2.063e-3 rad/s for ever (RK4)
or oscillated by 5.1e-3 rad/s (Euler). The step now takes such joints' friction as an
implicit (backward-Euler) impulse over the step; the references are the law's own steady
states and the steps small enough for the explicit method alone.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest

import ffsim_ros.dynamics as D
from ffsim_ros.dynamics.builder import random_configuration, random_model
from ffsim_ros.dynamics.kernels.entry import e_rk4_steps
from ffsim_ros.dynamics.stiff_friction import (
    COUPLED_RATIO,
    STIFF_RATIO,
    friction_impulse,
    friction_slopes,
    implicit_dofs,
    stiff_dofs,
)

URDF = Path(__file__).resolve().parents[1] / 'urdf' / 'ffsim_servicer_7dof.urdf'
DUAL_ARM = URDF.parent / 'dual_arm_servicer.urdf'
EPS = 1e-3  # the law's regularization [rad/s]


@pytest.fixture(scope='module')
def servicer() -> D.Model:
    return D.with_joint_dynamics(D.load_urdf(str(URDF)), True)


def run(model, tau7, v7, dt, T, method='rk4', conserve=False):
    """Joint 7 from rest or released at ``v7`` under the effort ``tau7``: its rates."""
    q, v = D.neutral(model).copy(), np.zeros(model.nv)
    v[-1] = v7
    tau = np.zeros(model.n)
    tau[-1] = tau7
    rates = []
    for _ in range(int(round(T / dt))):
        q, v = D.step(model, q, v, tau, dt, method=method, conserve_momentum=conserve)
        rates.append(v[-1])
    return q, v, np.array(rates)


def test_the_wrist_is_stiff_at_1_ms_and_not_at_0_1_ms(servicer) -> None:
    H = D.mass_matrix(servicer, D.neutral(servicer))
    slopes = friction_slopes(servicer)
    rho = 1e-3 * slopes * np.diag(np.linalg.inv(H))
    assert rho[-1] == pytest.approx(9.19, abs=0.01)  # the probe's figure
    cols = np.flatnonzero(slopes)
    mobility = np.linalg.inv(H)[np.ix_(cols, cols)]
    np.testing.assert_array_equal(
        stiff_dofs(mobility, cols, slopes, 1e-3), np.flatnonzero(rho > 1.0)
    )
    # one joint stiff: every joint with friction taken implicitly (as a closed chain's step)
    np.testing.assert_array_equal(implicit_dofs(H, slopes, 1e-3), np.arange(6, servicer.nv))
    assert stiff_dofs(mobility, cols, slopes, 1e-4).size == 0
    assert implicit_dofs(H, slopes, 1e-4).size == 0
    assert friction_slopes(D.with_joint_dynamics(servicer, False)).any() == 0.0


@pytest.mark.parametrize('method', ['rk4', 'euler'])
@pytest.mark.parametrize('dt', [1e-3, 1e-2])
def test_a_released_joint_comes_to_rest(servicer, method: str, dt: float) -> None:
    """Released at 0.05 rad/s without effort, the wrist stops (it stayed at 2.063e-3 rad/s
    under RK4 and oscillated by 5.1e-3 rad/s under Euler at 1 ms)."""
    _, v, rates = run(servicer, 0.0, 0.05, dt, 1.0, method)
    assert np.abs(rates[-int(0.1 / dt) :]).max() < 1e-8
    assert np.abs(v[6:]).max() < 1e-8
    # the rate never reverses by more than round-off on the way (friction does not push)
    assert rates.min() > -1e-8


@pytest.mark.parametrize('method', ['rk4', 'euler'])
def test_a_sub_breakaway_effort_creeps_at_the_laws_own_rate(servicer, method: str) -> None:
    """Half the breakaway effort: the regularized law's steady creep ``eps atanh(1/2)`` (less
    the viscous share), the same at 1 ms (split step) as at 0.1 ms (explicit alone)."""
    _, _, fine = run(servicer, 0.1, 0.0, 1e-4, 1.0, method)
    _, _, coarse = run(servicer, 0.1, 0.0, 1e-3, 1.0, method)
    d, f = servicer.joint_damping[-1], servicer.joint_friction[-1]
    # steady state: tau = d w + f tanh(w / eps), solved by fixed point from eps atanh(tau/f)
    w = EPS * np.arctanh(0.1 / f)
    for _ in range(50):
        w = EPS * np.arctanh((0.1 - d * w) / f)
    assert fine[-1] == pytest.approx(w, rel=1e-6)
    assert coarse[-1] == pytest.approx(w, rel=1e-6)
    assert np.abs(coarse[-int(0.05 / 1e-3) :] - w).max() < 1e-6 * w  # steady, no cycle


def test_momentum_is_kept_by_the_impulse(servicer) -> None:
    """The friction impulse is internal (no base rows in ``S p``): momentum unchanged to
    round-off; with ``conserve_momentum`` the split steps keep it to round-off too."""
    rng = np.random.default_rng(3)
    q = random_configuration(servicer, rng)
    v = 0.05 * rng.normal(size=servicer.nv)
    H = D.mass_matrix(servicer, q)
    dofs = np.array([10, 11, 12])
    v1 = friction_impulse(servicer, H, v, dofs, 1e-2)
    P = D.momentum(servicer, q, v)
    np.testing.assert_allclose(
        D.momentum(servicer, q, v1), P, rtol=0, atol=1e-13 * np.abs(P).max()
    )
    # and it dissipates: the kinetic energy falls, the stiff joints' rates do not reverse
    assert D.kinetic_energy(servicer, q, v1) < D.kinetic_energy(servicer, q, v)
    assert np.all(v1[dofs] * v[dofs] >= 0.0)
    q1, v1 = q, v
    for _ in range(20):
        q1, v1 = D.step(servicer, q1, v1, np.zeros(servicer.n), 1e-2, conserve_momentum=True)
    np.testing.assert_allclose(D.momentum(servicer, q1, v1), P, rtol=0, atol=1e-12)


def test_the_impulse_solves_backward_euler(servicer) -> None:
    """``w = w* - dt A phi(w)`` holds at the solution (residual to round-off), against an
    independent evaluation of ``A = S^T H^-1 S`` and ``phi``."""
    rng = np.random.default_rng(4)
    q = random_configuration(servicer, rng)
    v = 0.2 * rng.normal(size=servicer.nv)
    H = D.mass_matrix(servicer, q)
    dofs = np.array([9, 10, 12])
    dt = 5e-3
    v1 = friction_impulse(servicer, H, v, dofs, dt)
    A = np.linalg.inv(H)[np.ix_(dofs, dofs)]
    d, f = servicer.arrays.damping[dofs], servicer.arrays.friction[dofs]
    w = v1[dofs]
    residual = w - v[dofs] + dt * A @ (d * w + f * np.tanh(w / EPS))
    assert np.abs(residual).max() < 1e-13
    # the other DoFs move by H^-1 S p only
    p = np.linalg.solve(A, w - v[dofs])  # the impulse: w = w* + A p
    np.testing.assert_allclose(p, -dt * (d * w + f * np.tanh(w / EPS)), rtol=1e-10, atol=1e-15)
    np.testing.assert_allclose(
        v1, v + np.linalg.solve(H, np.eye(servicer.nv)[:, dofs] @ p), atol=1e-13
    )
    # every joint, random postures, rates from near stick to fast, dt 1e-3..2e-2: solved to
    # round-off (a probe found 24 of 300 solves stopped 1.6e-9 rad/s short of the root, the
    # line search stalled on the merit's round-off: steps then noisy, finite differences not
    # usable)
    dofs = np.arange(6, servicer.nv)
    worst = 0.0
    for _ in range(200):
        q = random_configuration(servicer, rng)
        H = D.mass_matrix(servicer, q)
        A = np.linalg.inv(H)[np.ix_(dofs, dofs)]
        v = np.zeros(servicer.nv)
        v[dofs] = 10.0 ** rng.uniform(-2.5, 0.5, dofs.size) * rng.choice([-1.0, 1.0], dofs.size)
        dt = 10.0 ** rng.uniform(-3.0, np.log10(2e-2))
        w = friction_impulse(servicer, H, v, dofs, dt)[dofs]
        d, f = servicer.arrays.damping[dofs], servicer.arrays.friction[dofs]
        # the distance to the root of A^-1 (w - w*) + dt phi(w), by one Newton step from w
        th = np.tanh(w / EPS)
        residual = np.linalg.solve(A, w - v[dofs]) + dt * (d * w + f * th)
        jacobian = np.linalg.inv(A) + np.diag(dt * (d + f / EPS * (1.0 - th * th)))
        distance = np.abs(np.linalg.solve(jacobian, residual)).max()
        worst = max(worst, distance / (np.abs(v[dofs]).max() + EPS))
    assert worst < 1e-10, worst  # [rad/s] per unit of the rates' scale (1e-14 in w: round-off)


def with_friction(model: D.Model, damping: float, friction: float) -> D.Model:
    """``model`` with every joint's damping and Coulomb friction set, joint dynamics on."""
    a = model.arrays
    d, f = np.zeros(model.nv), np.zeros(model.nv)
    d[model.nv - model.n :], f[model.nv - model.n :] = damping, friction
    model = dataclasses.replace(model, arrays=a._replace(damping=d, friction=f))
    return D.with_joint_dynamics(model, True)


@pytest.mark.parametrize('method', ['rk4', 'euler'])
def test_non_stiff_friction_steps_bit_for_bit_as_before(method: str) -> None:
    """Where no joint is stiff the step is the explicit method alone, bit for bit: the
    compiled RK4 steps (the only path before) and semi-implicit Euler over ABA."""
    model = with_friction(random_model(5, 4, joint_types=('revolute', 'prismatic')), 0.05, 0.01)
    rng = np.random.default_rng(6)
    q = random_configuration(model, rng)
    q[:3] = 0.0  # (at the origin: the step's move to the base CoM changes no bit)
    v = rng.normal(size=model.nv)
    tau = rng.normal(size=model.n)
    dt = 1e-3
    H = D.mass_matrix(model, q)
    assert implicit_dofs(H, friction_slopes(model), dt).size == 0
    qs, vs = D.step(model, q, v, tau, dt, method=method, steps=3)
    gen = np.r_[np.zeros(6), tau]
    if method == 'rk4':
        qr, vr = e_rk4_steps(*model.packed, q, v, gen, np.empty((0, 6)), True, dt, np.empty(0), 3)
    else:
        qr, vr = q, v
        for _ in range(3):
            vr = vr + dt * D.forward_dynamics(model, qr, vr, tau)
            qr = D.integrate(model, qr, vr, dt)
    np.testing.assert_array_equal(qs, qr)
    np.testing.assert_array_equal(vs, vr)
    # the friction did act (the same steps without it differ)
    free = D.with_joint_dynamics(model, False)
    assert np.abs(D.step(free, q, v, tau, dt, method=method, steps=3)[1] - vs).max() > 1e-6
    if method == 'rk4':  # the batched step (no row stiff) is the single-state one
        Vb = D.step(model, np.array([q, q]), np.array([v, v]), np.array([tau, tau]), dt, steps=3)[
            1
        ]
        np.testing.assert_allclose(Vb[0], vs, rtol=0, atol=1e-14)


def test_a_stiff_batch_steps_each_row_as_the_single_state(servicer) -> None:
    rng = np.random.default_rng(7)
    Q = np.array([random_configuration(servicer, rng) for _ in range(3)])
    V = 0.05 * rng.normal(size=(3, servicer.nv))
    T = 0.1 * rng.normal(size=(3, servicer.n))
    Qb, Vb = D.step(servicer, Q, V, T, 1e-3, steps=4)
    for r in range(3):
        qs, vs = D.step(servicer, Q[r], V[r], T[r], 1e-3, steps=4)
        np.testing.assert_array_equal(Qb[r], qs)
        np.testing.assert_array_equal(Vb[r], vs)


def test_coupled_joints_are_checked_together() -> None:
    """Two DoFs each under STIFF_RATIO but coupled beyond COUPLED_RATIO: the stiffer is
    stiff, so both are taken implicitly; uncoupled, neither."""
    H = np.array([[1.0, 0.95], [0.95, 1.0]])
    Hinv = np.linalg.inv(H)
    k = 0.9 * STIFF_RATIO / Hinv[0, 0]  # rho = 0.9 each
    lam = np.linalg.eigvalsh(k * Hinv)[-1]
    assert lam > COUPLED_RATIO
    slopes = np.array([k, 1.01 * k])
    np.testing.assert_array_equal(stiff_dofs(Hinv, np.arange(2), slopes, 1.0), [1])
    np.testing.assert_array_equal(implicit_dofs(H, slopes, 1.0), [0, 1])  # (then all of them)
    assert implicit_dofs(np.eye(2), np.array([0.9, 0.9]), 1.0).size == 0


def creep_rates(d: np.ndarray, f: np.ndarray, tau: np.ndarray) -> np.ndarray:
    """The law's steady creep per joint, ``tau_j = d_j w_j + f_j tanh(w_j / eps)`` (``|tau_j| <
    f_j``), by bisection on [-1, 1] rad/s (``phi`` increasing)."""
    lo, hi = -np.ones_like(tau), np.ones_like(tau)
    for _ in range(200):
        w = 0.5 * (lo + hi)
        low = d * w + f * np.tanh(w / EPS) < tau
        lo, hi = np.where(low, w, lo), np.where(low, hi, w)
    return 0.5 * (lo + hi)


@pytest.mark.parametrize(
    ('dt', 'method'), [(1e-3, 'rk4'), (5e-4, 'rk4'), (2e-4, 'rk4'), (1e-3, 'euler')]
)
def test_every_joint_creeps_at_the_laws_rate_where_some_are_stiff(dt: float, method: str) -> None:
    """The shipped dual arm (14 joints, floating, zero momentum), 30 % of each joint's
    breakaway effort (alternate signs): every joint creeps at the law's own rate, its rate and
    its angle. Where some joint is stiff, every joint's friction is in the impulse: with the
    stiff ones only (an earlier step), the joints left explicit met the rates the explicit part
    reaches within the step, past ``eps``, and crept at 0.95-1.16 of the law's rates (1.158 at
    0.5 ms). The angles follow the impulse's displacement (``dt/2`` of its velocity change
    after RK4, ``dt`` after Euler): without it they crept at up to 4.6 times the law's rate
    (RK4 at 1 ms; 2.8 at 0.5 ms, 1.7 at 0.2 ms), the rates being right."""
    model = D.with_joint_dynamics(D.load_urdf(str(DUAL_ARM)), True)
    a = model.arrays
    d, f = a.damping[6:], a.friction[6:]
    tau = 0.3 * f * np.where(np.arange(model.n) % 2, 1.0, -1.0)
    law = creep_rates(d, f, tau)
    q = D.neutral(model)
    H = D.mass_matrix(model, q)
    slopes = friction_slopes(model)
    cols = np.flatnonzero(slopes)
    stiff = stiff_dofs(np.linalg.inv(H)[np.ix_(cols, cols)], cols, slopes, dt)
    assert 0 < stiff.size < cols.size  # (some joints stiff, not all: the case in question)
    np.testing.assert_array_equal(implicit_dofs(H, slopes, dt), cols)
    # the law's rates with zero momentum are a rest point of the dynamics (accelerations
    # 1e-7 of those the efforts alone give)
    v_law = np.zeros(model.nv)
    v_law[6:] = law
    v_law[:6] = -np.linalg.solve(H[:6, :6], H[:6, 6:] @ law)
    scale = np.abs(np.linalg.solve(H, np.r_[np.zeros(6), tau])).max()
    assert np.abs(D.forward_dynamics(model, q, v_law, tau)).max() < 1e-6 * scale
    q1, v = D.step(
        model, q, np.zeros(model.nv), tau, dt, steps=int(round(1.5 / dt)), method=method
    )
    np.testing.assert_allclose(v[6:], law, rtol=1e-3)  # 3.5e-5 apart (still settling)
    # the angles over the next 0.1 s: at the law's rates too (3.5e-5 apart)
    q2, v2 = D.step(model, q1, v, tau, dt, steps=int(round(0.1 / dt)), method=method)
    np.testing.assert_allclose(D.difference(model, q1, q2)[6:] / 0.1, law, rtol=1e-3)
    if method == 'rk4':  # the displacement is internal: momentum and CoM kept (2.7e-15)
        np.testing.assert_allclose(D.momentum(model, q2, v2), np.zeros(6), rtol=0, atol=1e-13)
        np.testing.assert_allclose(
            D.center_of_mass(model, q2), D.center_of_mass(model, q), rtol=0, atol=1e-13
        )


def fine_reference(model, q, v, tau, dt, every, count):
    """RK4 alone (compiled, unsplit) at ``dt``: the states every ``every`` seconds."""
    assert implicit_dofs(D.mass_matrix(model, q), friction_slopes(model), dt).size == 0
    gen = np.r_[np.zeros(6), tau]
    out = [(q, v)]
    for _ in range(count):
        q, v = e_rk4_steps(
            *model.packed, q, v, gen, np.empty((0, 6)), True, dt, np.empty(0), round(every / dt)
        )
        out.append((q, v))
    return out


@pytest.mark.parametrize(
    ('effort', 'bound'),
    [('sub-breakaway', 1e-5), ('driven', 2e-3)],
)
def test_the_split_steps_angles_follow_a_fine_reference(
    servicer, effort: str, bound: float
) -> None:
    """The servicer at 1 ms (every joint in the impulse) over 0.5 s against RK4 alone at 10
    us (nothing stiff): the joint angles to 3.0e-7 rad from rest under a sub-breakaway effort
    (1.05e-3 rad before the impulse's displacement: the angles crept at the explicit part's
    rates) and to 5.0e-4 rad driven at 1.5-3 times the breakaway from moving rates (4.3e-3
    rad before; first order in ``dt``)."""
    rng = np.random.default_rng(11)
    q = D.neutral(servicer)
    q[7:] = 0.4 * rng.normal(size=servicer.n)
    v = np.zeros(servicer.nv)
    if effort == 'sub-breakaway':
        tau = np.array([0.5, -0.4, 0.3, 0.2, -0.25, 0.1, -0.1])
        assert np.all(np.abs(tau) < servicer.arrays.friction[6:])
    else:
        v[6:] = [0.2, -0.2, 0.15, -0.3, 0.3, -0.25, 0.2]
        tau = np.array([2.0, -1.5, 2.5, 1.0, -1.2, 0.4, -0.5])
    H = D.mass_matrix(servicer, q)
    assert implicit_dofs(H, friction_slopes(servicer), 1e-3).size == servicer.n
    reference = fine_reference(servicer, q, v, tau, 1e-5, 0.01, 50)
    error = 0.0
    for k in range(1, 51):
        q, v = D.step(servicer, q, v, tau, 1e-3, steps=10)
        error = max(error, np.abs(D.difference(servicer, reference[k][0], q)[6:]).max())
    assert error < bound, error


def split_reference(model, q, v, tau, dt):
    """One split RK4 step from its parts, independently of ``D.step``'s: RK4 without the
    friction, the impulse, the positions moved by ``dt/2`` of the impulse's velocity change,
    and (floating base) the CoM and the momentum of the state before the move restored by a
    translation and the base velocity."""
    dofs = implicit_dofs(D.mass_matrix(model, q), friction_slopes(model), dt)
    assert dofs.size
    a = model.arrays
    d, f = a.damping.copy(), a.friction.copy()
    d[dofs] = f[dofs] = 0.0
    explicit = dataclasses.replace(model, arrays=a._replace(damping=d, friction=f))
    q1, v1 = D.rk4_step(
        model, q, v, dt, lambda _t, qq, vv: D.forward_dynamics(explicit, qq, vv, tau)
    )
    v2 = friction_impulse(model, D.mass_matrix(model, q1), v1, dofs, dt)
    q2 = D.integrate(model, q1, 0.5 * dt * (v2 - v1))
    if model.floating_base:
        q2[:3] += D.center_of_mass(model, q1) - D.center_of_mass(model, q2)
        v2 = v2.copy()
        v2[:6] = D.base_velocity_from_momentum(model, q2, v2[6:], D.momentum(model, q1, v2))
    return q2, v2


def ball_tree() -> D.Model:
    return with_friction(random_model(21, 6, joint_types=('spherical', 'revolute')), 0.02, 0.5)


@pytest.mark.parametrize(
    ('name', 'dt'),
    [('servicer', 1e-3), ('servicer', 2e-2), ('fixed servicer', 1e-2), ('ball tree', 1e-2)],
)
def test_step_derivatives_linearize_the_split_step(name: str, dt: float) -> None:
    """``D.step`` is the split step of :func:`split_reference` (to round-off), and
    ``step_derivatives`` its linearization, against central differences of that reference:
    the impulse's displacement and the restored momentum are in ``(A, B)`` (to 2e-8 of their
    norms; without the displacement the step's positions were 5.4e-6 to 4.7e-3 away from the
    reference's, 1e-16 now, and ``(A, B)`` 5e-7 to 2.7e-3 off)."""
    if name == 'ball tree':
        model = ball_tree()
    else:
        model = D.with_joint_dynamics(
            D.load_urdf(str(URDF), floating_base=name == 'servicer'), True
        )
    rng = np.random.default_rng(8)
    q = random_configuration(model, rng)
    v = rng.normal(size=model.nv)
    v += 0.05 * np.sign(v)  # (rates away from the Coulomb law's steep zero)
    tau = rng.normal(size=model.n)
    nv = model.nv
    q1, v1 = split_reference(model, q, v, tau, dt)
    qs, vs = D.step(model, q, v, tau, dt)
    np.testing.assert_allclose(D.difference(model, q1, qs), 0.0, rtol=0, atol=1e-12)
    np.testing.assert_allclose(vs, v1, rtol=0, atol=1e-11 * np.abs(v1).max())

    def out(x: np.ndarray, t: np.ndarray) -> np.ndarray:
        qn, vn = split_reference(model, D.integrate(model, q, x[:nv]), v + x[nv:], t, dt)
        return np.concatenate([D.difference(model, q1, qn), vn])

    h = 1e-5
    eye = np.eye(2 * nv)
    A_fd = np.array([(out(h * e, tau) - out(-h * e, tau)) / (2 * h) for e in eye]).T
    B_fd = np.array(
        [(out(0 * eye[0], tau + h * e) - out(0 * eye[0], tau - h * e)) / (2 * h)
         for e in np.eye(model.n)]
    ).T  # fmt: skip
    A, B = D.step_derivatives(model, q, v, tau, dt)
    for got, ref, what in ((A, A_fd, 'A'), (B, B_fd, 'B')):
        error = np.linalg.norm(got - ref) / max(1.0, np.linalg.norm(ref))
        assert error < 1e-6, f'{what}: {error:.2e}'
