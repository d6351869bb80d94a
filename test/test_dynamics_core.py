"""Core dynamics: hand-derived references, the seed's summation formulas, invariants.

Independent of Pinocchio (see test_pinocchio_oracle.py for that oracle): every check here
compares against a closed form, the seed's own equations evaluated term by term, a finite
difference, or a conservation law.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import ffsim_ros.dynamics as D
from ffsim_ros.dynamics.random_urdf import random_urdf
from ffsim_ros.resources import sample_robot

# --------------------------------------------------------------------------------------------
# models
# --------------------------------------------------------------------------------------------

# Planar 2-link arm on a free base, round numbers (the sample planar_2link.urdf, exact values).
M0, A0, B0, C0 = 10.0, 0.8, 0.9, 1.6  # base mass, principal moments (base CoM at its origin)
M1, L1, LC1, I1 = 2.0, 1.0, 0.5, 0.17  # link 1: mass, length, CoM distance, izz about CoM
M2, L2, LC2, I2 = 1.0, 0.8, 0.4, 0.06
JX = 0.5  # joint 1 on the base +x face

PLANAR = f"""<robot name="planar">
  <link name="base_link"><inertial><mass value="{M0}"/>
    <inertia ixx="{A0}" iyy="{B0}" izz="{C0}" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <joint name="joint_1" type="revolute"><parent link="base_link"/><child link="link_1"/>
    <origin xyz="{JX} 0 0"/><axis xyz="0 0 1"/>
    <limit lower="-3" upper="3" effort="50" velocity="1"/></joint>
  <link name="link_1"><inertial><origin xyz="{LC1} 0 0"/><mass value="{M1}"/>
    <inertia ixx="0.01" iyy="{I1}" izz="{I1}" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <joint name="joint_2" type="revolute"><parent link="link_1"/><child link="link_2"/>
    <origin xyz="{L1} 0 0"/><axis xyz="0 0 1"/>
    <limit lower="-3" upper="3" effort="50" velocity="1"/>
    <dynamics damping="0.3" friction="0.2"/></joint>
  <link name="link_2"><inertial><origin xyz="{LC2} 0 0"/><mass value="{M2}"/>
    <inertia ixx="0.01" iyy="{I2}" izz="{I2}" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <joint name="ee_joint" type="fixed"><parent link="link_2"/><child link="ee_link"/>
    <origin xyz="{L2} 0 0"/></joint>
  <link name="ee_link"/>
</robot>"""


@pytest.fixture(scope='module')
def planar() -> D.Model:
    return D.load_urdf(PLANAR)


@pytest.fixture(scope='module')
def servicer() -> D.Model:
    return D.load_urdf(sample_robot('ffsim_servicer_7dof'))


def random_state(model: D.Model, rng: np.random.Generator, speed: float = 0.5):
    q = D.neutral(model)
    off = 0
    if model.floating_base:
        q[:3] = rng.normal(size=3)
        quat = rng.normal(size=4)
        q[3:7] = quat / np.linalg.norm(quat)
        off = 7
    q[off:] = rng.uniform(-1.5, 1.5, size=model.n)
    v = speed * rng.normal(size=model.nv)
    return q, v


def rel_err(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.linalg.norm(np.asarray(a) - np.asarray(b)) / max(1.0, np.linalg.norm(b)))


def skew(x: np.ndarray) -> np.ndarray:
    return np.array([[0, -x[2], x[1]], [x[2], 0, -x[0]], [-x[1], x[0], 0]])


# --------------------------------------------------------------------------------------------
# hand-derived and seed-formula references
# --------------------------------------------------------------------------------------------


def test_planar_manipulator_block_closed_form(planar: D.Model) -> None:
    """Hm equals the textbook fixed-base 2-link inertia matrix (it is the joint-joint block)."""
    rng = np.random.default_rng(1)
    for _ in range(5):
        q, _ = random_state(planar, rng)
        c2 = np.cos(q[8])
        h11 = I1 + I2 + M1 * LC1**2 + M2 * (L1**2 + LC2**2 + 2 * L1 * LC2 * c2)
        h12 = I2 + M2 * (LC2**2 + L1 * LC2 * c2)
        h22 = I2 + M2 * LC2**2
        _, _, Hm = D.inertia_blocks(planar, q)
        # joint axes are the base z axis, inclined by the base attitude: Hm is invariant
        assert Hm == pytest.approx(np.array([[h11, h12], [h12, h22]]), abs=1e-12)


def test_planar_base_blocks_hand_derived(planar: D.Model) -> None:
    """H0 and H0m of the planar arm with the base attitude at identity, derived by hand."""
    phi1, phi2 = 0.4, -0.9
    q = np.array([0.3, -0.2, 0.1, 0, 0, 0, 1, phi1, phi2])
    r0 = q[:3]
    a1, a12 = phi1, phi1 + phi2
    p1 = r0 + np.array([JX, 0, 0])
    r1 = p1 + LC1 * np.array([np.cos(a1), np.sin(a1), 0])
    p2 = p1 + L1 * np.array([np.cos(a1), np.sin(a1), 0])
    r2 = p2 + LC2 * np.array([np.cos(a12), np.sin(a12), 0])
    mt = M0 + M1 + M2
    rg = (M0 * r0 + M1 * r1 + M2 * r2) / mt
    z = np.array([0.0, 0, 1])

    # H_Omega (eq. 19): inertias about the base CoM; links are bars along their x axis
    def link_inertia(angle: float, iz: float) -> np.ndarray:
        c, s = np.cos(angle), np.sin(angle)
        R = np.array([[c, -s, 0], [s, c, 0], [0, 0, 1]])
        return R @ np.diag([0.01, iz, iz]) @ R.T

    Iw1, Iw2 = link_inertia(a1, I1), link_inertia(a12, I2)
    H_om = np.diag([A0, B0, C0]) + Iw1 + Iw2
    for m_i, r_i in ((M1, r1), (M2, r2)):
        d = r_i - r0
        H_om += m_i * (d @ d * np.eye(3) - np.outer(d, d))
    H0_ref = np.block([[mt * np.eye(3), mt * skew(rg - r0).T], [mt * skew(rg - r0), H_om]])
    # H0m (eq. 23): J_Tw = sum m_i k_j x (r_i - p_j), H_Omega_phi = sum m_i r0i x (...) + I_i k_j
    jt1 = M1 * np.cross(z, r1 - p1) + M2 * np.cross(z, r2 - p1)
    jt2 = M2 * np.cross(z, r2 - p2)
    ho1 = (
        M1 * np.cross(r1 - r0, np.cross(z, r1 - p1))
        + M2 * np.cross(r2 - r0, np.cross(z, r2 - p1))
        + Iw1 @ z
        + Iw2 @ z
    )
    ho2 = M2 * np.cross(r2 - r0, np.cross(z, r2 - p2)) + Iw2 @ z
    H0m_ref = np.column_stack([np.r_[jt1, ho1], np.r_[jt2, ho2]])
    H0, H0m, _ = D.inertia_blocks(planar, q)
    assert H0 == pytest.approx(H0_ref, abs=1e-12)
    assert H0m == pytest.approx(H0m_ref, abs=1e-12)


def seed_blocks(model: D.Model, q: np.ndarray) -> np.ndarray:
    """The full inertia matrix from the seed's sums (eqs. 9-11, 19-24) for a serial chain."""
    R, p = D.body_poses(model, q)
    a = model.arrays
    assert list(a.parent) == list(range(-1, len(a.parent) - 1)), 'serial chain expected'
    nb = len(a.parent)
    r = p + np.einsum('bij,bj->bi', R, a.com)  # link CoMs r_i
    k = np.einsum('bij,bj->bi', R, a.axis)  # joint axes k_i (world)
    I = np.einsum('bij,bjk,blk->bil', R, a.inertia, R)  # noqa: E741 - I_i, world frame
    mt, r0 = a.mass.sum(), q[:3]
    rg = (a.mass @ r) / mt
    n = nb - 1
    JT = np.zeros((nb, 3, n))
    JR = np.zeros((nb, 3, n))
    for i in range(1, nb):
        for j in range(1, i + 1):
            JT[i, :, j - 1] = np.cross(k[j], r[i] - p[j])
            JR[i, :, j - 1] = k[j]
    H_om = I[0] + sum(I[i] + a.mass[i] * skew(r[i] - r0).T @ skew(r[i] - r0) for i in range(1, nb))
    H_omphi = sum(a.mass[i] * skew(r[i] - r0) @ JT[i] + I[i] @ JR[i] for i in range(1, nb))
    J_tw = sum(a.mass[i] * JT[i] for i in range(1, nb))
    H_phi = sum(JR[i].T @ I[i] @ JR[i] + a.mass[i] * JT[i].T @ JT[i] for i in range(1, nb))
    H0 = np.block([[mt * np.eye(3), mt * skew(rg - r0).T], [mt * skew(rg - r0), H_om]])
    H0m = np.vstack([J_tw, H_omphi])
    return np.block([[H0, H0m], [H0m.T, H_phi]])


def test_crba_matches_seed_summation_formulas(servicer: D.Model) -> None:
    rng = np.random.default_rng(2)
    for _ in range(5):
        q, _ = random_state(servicer, rng)
        assert rel_err(D.mass_matrix(servicer, q), seed_blocks(servicer, q)) < 1e-12


def test_kinetic_energy_is_sum_of_body_energies(servicer: D.Model) -> None:
    """Eq. 23: T = 1/2 sum(w^T I w + m rdot^T rdot), body velocities by finite differences."""
    rng = np.random.default_rng(3)
    q, v = random_state(servicer, rng)
    a = servicer.arrays
    h = 1e-6

    def coms_and_rots(qq):
        R, p = D.body_poses(servicer, qq)
        return p + np.einsum('bij,bj->bi', R, a.com), R

    (rp, Rp), (rm, Rm) = (coms_and_rots(D.integrate(servicer, q, s * v, h)) for s in (1, -1))
    rdot = (rp - rm) / (2 * h)
    T = 0.0
    for i in range(len(a.mass)):
        W = (Rp[i] - Rm[i]) / (2 * h) @ ((Rp[i] + Rm[i]) / 2).T
        w = np.array([W[2, 1], W[0, 2], W[1, 0]])
        Iw = ((Rp[i] + Rm[i]) / 2) @ a.inertia[i] @ ((Rp[i] + Rm[i]) / 2).T
        T += 0.5 * (w @ Iw @ w + a.mass[i] * rdot[i] @ rdot[i])
    assert D.kinetic_energy(servicer, q, v) == pytest.approx(T, rel=1e-8)


# --------------------------------------------------------------------------------------------
# consistency between algorithms
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize('seed', [0, 1, 2])
@pytest.mark.parametrize('floating', [True, False])
def test_forward_inverse_dynamics_agree(seed: int, floating: bool) -> None:
    model = D.load_urdf(random_urdf(seed, 8), floating_base=floating, gravity=(0.1, -0.3, -9.81))
    rng = np.random.default_rng(seed)
    q, v = random_state(model, rng)
    tau = rng.normal(size=model.n)
    wrench = {model.link_names[-1]: rng.normal(size=6)}
    a = D.forward_dynamics(model, q, v, tau, link_wrenches=wrench)
    gen = D.inverse_dynamics(model, q, v, a, link_wrenches=wrench)
    assert np.abs(gen[: model.nv - model.n]).max(initial=0.0) < 1e-9
    assert rel_err(gen[model.nv - model.n :], tau) < 1e-10
    H = D.mass_matrix(model, q)
    c = D.bias_forces(model, q, v, link_wrenches=wrench)
    assert rel_err(H @ a + c, np.r_[np.zeros(model.nv - model.n), tau]) < 1e-10
    assert np.allclose(H, H.T, atol=1e-12) and np.linalg.eigvalsh(H)[0] > 0


def test_wrenches_enter_through_jacobian_transpose(servicer: D.Model) -> None:
    """Eq. 41: a link wrench acts as J^T F_c; a base wrench as [F; T] on the base rows."""
    rng = np.random.default_rng(4)
    q, v = random_state(servicer, rng)
    tau = rng.normal(size=servicer.n)
    w = rng.normal(size=6) * np.r_[10, 10, 10, 3, 3, 3]
    J = D.link_jacobian(servicer, q, 'arm_link_5')
    a_link = D.forward_dynamics(servicer, q, v, tau, link_wrenches={'arm_link_5': w})
    gen = J.T @ w
    a_gen = D.forward_dynamics(servicer, q, v, tau + gen[6:], base_wrench=gen[:6])
    assert rel_err(a_link, a_gen) < 1e-10
    # a wrench on a link merged into the base equals the same wrench moved to the base CoM
    p_sa, _ = D.link_pose(servicer, q, 'solar_array')
    moved = np.r_[w[:3], w[3:] + np.cross(p_sa - q[:3], w[:3])]
    a_sa = D.forward_dynamics(servicer, q, v, tau, link_wrenches={'solar_array': w})
    assert rel_err(a_sa, D.forward_dynamics(servicer, q, v, tau, base_wrench=moved)) < 1e-10


def test_link_jacobian_matches_finite_differences(servicer: D.Model) -> None:
    rng = np.random.default_rng(5)
    q, v = random_state(servicer, rng)
    h = 1e-6
    for link in ('ee_link', 'arm_link_3', servicer.base_link):
        (pp, Rp), (pm, Rm) = (
            D.link_pose(servicer, D.integrate(servicer, q, s * v, h), link) for s in (1, -1)
        )
        W = (Rp - Rm) / (2 * h) @ D.link_pose(servicer, q, link)[1].T
        fd = np.r_[(pp - pm) / (2 * h), W[2, 1], W[0, 2], W[1, 0]]
        assert rel_err(D.link_jacobian(servicer, q, link) @ v, fd) < 1e-7


def test_momentum_forms_agree(servicer: D.Model) -> None:
    """Eqs. 12, 17, 21: [P; L0] = H0 x0dot + H0m phidot and the reference-point shifts."""
    rng = np.random.default_rng(6)
    q, v = random_state(servicer, rng)
    H0, H0m, _ = D.inertia_blocks(servicer, q)
    h0 = D.momentum(servicer, q, v, about='base')
    assert rel_err(h0, H0 @ v[:6] + H0m @ v[6:]) < 1e-12
    hO = D.momentum(servicer, q, v, about='origin')
    hg = D.momentum(servicer, q, v, about='com')
    rg = D.center_of_mass(servicer, q)
    assert rel_err(hO[3:], hg[3:] + np.cross(rg, hg[:3])) < 1e-12  # eq. 12
    assert rel_err(hO[3:], h0[3:] + np.cross(q[:3], h0[:3])) < 1e-12  # eq. 17
    # P = M d(r_g)/dt (eq. 9), finite differences
    h = 1e-6
    drg = (
        D.center_of_mass(servicer, D.integrate(servicer, q, v, h))
        - D.center_of_mass(servicer, D.integrate(servicer, q, -v, h))
    ) / (2 * h)
    assert rel_err(hO[:3], servicer.total_mass * drg) < 1e-7
    with pytest.raises(ValueError, match='about'):
        D.momentum(servicer, q, v, about='tip')


def test_base_velocity_from_momentum_inverts_momentum(servicer: D.Model) -> None:
    rng = np.random.default_rng(7)
    q, v = random_state(servicer, rng)
    for about in ('origin', 'com', 'base'):
        h = D.momentum(servicer, q, v, about=about)
        x0 = D.base_velocity_from_momentum(servicer, q, v[6:], h, about=about)
        assert rel_err(x0, v[:6]) < 1e-10


def test_generalized_jacobian_gives_end_effector_velocity(servicer: D.Model) -> None:
    """J* phidot is the end-effector velocity of a zero-momentum motion (finite difference)."""
    rng = np.random.default_rng(8)
    q, _ = random_state(servicer, rng)
    phidot = rng.normal(size=servicer.n) * 0.3
    v = np.r_[D.base_velocity_from_momentum(servicer, q, phidot), phidot]
    assert np.abs(D.momentum(servicer, q, v)).max() < 1e-10
    Jstar = D.generalized_jacobian(servicer, q, 'ee_link')
    h = 1e-6
    (pp, Rp), (pm, Rm) = (
        D.link_pose(servicer, D.integrate(servicer, q, s * v, h), 'ee_link') for s in (1, -1)
    )
    W = (Rp - Rm) / (2 * h) @ D.link_pose(servicer, q, 'ee_link')[1].T
    fd = np.r_[(pp - pm) / (2 * h), W[2, 1], W[0, 2], W[1, 0]]
    assert rel_err(Jstar @ phidot, fd) < 1e-7
    # J* differs from the fixed-base Jacobian Jm: the base reacts
    assert rel_err(Jstar, D.link_jacobian(servicer, q, 'ee_link')[:, 6:]) > 1e-3


# --------------------------------------------------------------------------------------------
# invariants of the free-floating system
# --------------------------------------------------------------------------------------------


def test_momentum_and_energy_conserved_rk4_10s(servicer: D.Model) -> None:
    """No external wrench: P, L conserved (rel. drift <= 1e-9) along 10 s of RK4 at 1 ms."""
    rng = np.random.default_rng(9)
    q, v = random_state(servicer, rng, speed=0.2)
    h_start = D.momentum(servicer, q, v)
    T_start = D.kinetic_energy(servicer, q, v)
    rg_start = D.center_of_mass(servicer, q)
    P = h_start[:3]
    tau = np.zeros(servicer.n)
    for _ in range(10_000):
        q, v = D.step(servicer, q, v, tau, 1e-3)
    h_end = D.momentum(servicer, q, v)
    assert np.linalg.norm(h_end - h_start) <= 1e-9 * np.linalg.norm(h_start)
    assert abs(D.kinetic_energy(servicer, q, v) / T_start - 1) < 1e-9
    # the CoM moves uniformly: r_g(t) = r_g(0) + P t / M
    assert rel_err(D.center_of_mass(servicer, q), rg_start + P * 10.0 / servicer.total_mass) < 1e-9


def test_joint_torques_keep_momentum_and_com(servicer: D.Model) -> None:
    """Internal torques only: zero initial momentum stays zero and the CoM does not move.

    The bound is relative to the momentum the arm exchanges with the base (``|H0m phidot|``),
    the scale of RK4's truncation error here (which falls 16x when dt halves).
    """
    rng = np.random.default_rng(10)
    q, _ = random_state(servicer, rng)
    v = np.zeros(servicer.nv)
    rg = D.center_of_mass(servicer, q)
    exchanged = 0.0
    for k in range(2000):
        tau = 5.0 * np.sin(0.01 * k + np.arange(servicer.n))
        q, v = D.step(servicer, q, v, tau, 1e-3)
        exchanged = max(exchanged, np.linalg.norm(D.inertia_blocks(servicer, q)[1] @ v[6:]))
    assert np.abs(v[6:]).max() > 1e-1  # the arm really moved
    assert np.linalg.norm(D.momentum(servicer, q, v)) <= 1e-9 * exchanged
    assert np.abs(D.center_of_mass(servicer, q) - rg).max() < 1e-10


def test_nonholonomic_closed_joint_loop_changes_attitude(planar: D.Model) -> None:
    """A closed loop in joint space returns phi but leaves the base attitude changed."""
    q = np.array([0, 0, 0, 0, 0, 0, 1, 0.3, 1.2])
    side, T = 0.6, 1.0
    dirs = [np.array([1, 0]), np.array([0, 1]), np.array([-1, 0]), np.array([0, -1])]
    dt = 1e-3
    for d in dirs:
        phidot = d * side / T
        for _ in range(int(round(T / dt))):
            # zero-momentum base velocity (eq. 21), integrated with RK4 on the manifold
            def vel(qq: np.ndarray, phidot: np.ndarray = phidot) -> np.ndarray:
                return np.r_[D.base_velocity_from_momentum(planar, qq, phidot), phidot]

            k1 = vel(q)
            k2 = vel(D.integrate(planar, q, k1, dt / 2))
            k3 = vel(D.integrate(planar, q, k2, dt / 2))
            k4 = vel(D.integrate(planar, q, k3, dt))
            q = D.integrate(planar, q, (k1 + 2 * k2 + 2 * k3 + k4) / 6, dt)
    assert q[7:] == pytest.approx([0.3, 1.2], abs=1e-9)
    angle = np.linalg.norm(D.difference(planar, D.neutral(planar), q)[3:6])
    assert angle > 1e-2  # about 0.05 rad for this loop
    assert (
        np.abs(
            D.center_of_mass(planar, q)
            - D.center_of_mass(planar, np.r_[0, 0, 0, 0, 0, 0, 1, 0.3, 1.2])
        ).max()
        < 1e-9
    )


def test_rk4_is_fourth_order(servicer: D.Model) -> None:
    rng = np.random.default_rng(11)
    q0, v0 = random_state(servicer, rng, speed=1.0)
    tau = rng.normal(size=servicer.n) * 10

    def run(dt: float):
        q, v = q0, v0
        for _ in range(int(round(0.2 / dt))):
            q, v = D.step(servicer, q, v, tau, dt)
        return q, v

    ref_q, ref_v = D.step(servicer, q0, v0, tau, 0.2, method='DOP853', rtol=1e-13, atol=1e-13)
    errs = []
    for dt in (0.02, 0.01):
        q, v = run(dt)
        errs.append(np.linalg.norm(np.r_[D.difference(servicer, ref_q, q), v - ref_v]))
    assert 12 < errs[0] / errs[1] < 20  # 2^4 = 16


def test_integrate_and_difference(servicer: D.Model) -> None:
    rng = np.random.default_rng(12)
    q, v = random_state(servicer, rng, speed=2.0)
    q1 = D.integrate(servicer, q, v, 0.7)
    assert np.linalg.norm(q1[3:7]) == pytest.approx(1.0, abs=1e-15)
    assert rel_err(D.difference(servicer, q, q1), 0.7 * v) < 1e-12
    # constant inertial angular velocity: R(t) = exp(w t) R0 (Rodrigues, independent)
    w = v[3:6]
    th = np.linalg.norm(w) * 0.7
    k = skew(w / np.linalg.norm(w))
    Rexp = np.eye(3) + np.sin(th) * k + (1 - np.cos(th)) * k @ k
    R0 = D.link_pose(servicer, q, servicer.base_link)[1]
    R1 = D.link_pose(servicer, q1, servicer.base_link)[1]
    assert R1 == pytest.approx(Rexp @ R0, abs=1e-12)


def test_variable_step_scipy_matches_rk4(servicer: D.Model) -> None:
    rng = np.random.default_rng(13)
    q, v = random_state(servicer, rng)
    tau = rng.normal(size=servicer.n)
    qa, va = D.step(servicer, q, v, tau, 1e-3)
    qb, vb = D.step(servicer, q, v, tau, 1e-3, method='RK45', rtol=1e-12, atol=1e-14)
    assert rel_err(vb, va) < 1e-10 and rel_err(qb, qa) < 1e-10
    with pytest.raises(ValueError, match='method'):
        D.step(servicer, q, v, tau, 1e-3, method='leapfrog')


def test_joint_dynamics_only_when_enabled(planar: D.Model) -> None:
    q = np.array([0, 0, 0, 0, 0, 0, 1, 0.3, 1.2])
    v = np.r_[np.zeros(6), 0.0, 0.5]
    a_off = D.forward_dynamics(planar, q, v, np.zeros(2))
    damped = D.with_joint_dynamics(planar)
    a_on = D.forward_dynamics(damped, q, v, np.zeros(2))
    # friction = -d qdot - f tanh(qdot / 1e-3) on joint 2 (d = 0.3, f = 0.2)
    ff = -0.3 * 0.5 - 0.2 * np.tanh(0.5 / 1e-3)
    H = D.mass_matrix(planar, q)
    assert rel_err(H @ (a_on - a_off), np.r_[np.zeros(7), ff]) < 1e-12
    assert D.inverse_dynamics(damped, q, v, a_off)[7] == pytest.approx(-ff, abs=1e-12)


def test_fixed_base_pendulum_closed_form() -> None:
    """A fixed-base pendulum in gravity: phiddot = -(m g lc / I_pivot) sin(phi)."""
    m, lc, ic = 3.0, 0.6, 0.05
    urdf = f"""<robot name="pend"><link name="world_link"/>
      <joint name="pivot" type="continuous"><parent link="world_link"/><child link="bob"/>
        <axis xyz="0 1 0"/></joint>
      <link name="bob"><inertial><origin xyz="0 0 {-lc}"/><mass value="{m}"/>
        <inertia ixx="{ic}" iyy="{ic}" izz="0.01" ixy="0" ixz="0" iyz="0"/></inertial></link>
    </robot>"""
    model = D.load_urdf(urdf, floating_base=False, gravity=(0, 0, -9.81))
    assert model.nq == model.nv == 1 and model.joint_types == ('continuous',)
    for phi in (0.0, 0.4, 2.0):
        a = D.forward_dynamics(model, [phi], [0.0], [0.0])
        assert a[0] == pytest.approx(-m * 9.81 * lc * np.sin(phi) / (ic + m * lc**2), rel=1e-12)
    assert D.potential_energy(model, [0.0]) == pytest.approx(-m * 9.81 * lc, rel=1e-12)


# --------------------------------------------------------------------------------------------
# model construction
# --------------------------------------------------------------------------------------------


def test_fixed_links_merge_and_stay_frames(servicer: D.Model) -> None:
    assert servicer.nq == 7 + 7 and servicer.nv == 6 + 7 and servicer.n == 7
    assert servicer.joint_names == tuple(f'arm_joint_{i}' for i in range(1, 8))
    assert 'ee_link' in servicer.link_names and 'arm_mount' in servicer.link_names
    assert len(servicer.body_names) == 8  # base + 7 arm links: fixed children merged
    assert servicer.frame('ee_link').body == 7
    q = D.neutral(servicer)
    # r0 is the merged base CoM, so at the neutral q the CoM of the base body is the origin
    R, p = D.body_poses(servicer, q)
    assert p[0] + R[0] @ servicer.arrays.com[0] == pytest.approx(np.zeros(3), abs=1e-15)


def test_merged_inertia_matches_unmerged_revolute_locked() -> None:
    """A fixed child gives the same dynamics as a stiff revolute joint held at zero."""
    base = random_urdf(3, 5, fixed_children=True)
    model = D.load_urdf(base)
    assert len(model.link_names) > len(model.body_names)
    rng = np.random.default_rng(14)
    q, v = random_state(model, rng)
    # the momentum of merged bodies is the sum of their parts: check against FD of CoM
    h = 1e-6
    drg = (
        D.center_of_mass(model, D.integrate(model, q, v, h))
        - D.center_of_mass(model, D.integrate(model, q, -v, h))
    ) / (2 * h)
    assert rel_err(D.momentum(model, q, v)[:3], model.total_mass * drg) < 1e-7


BAD_URDFS = {
    'malformed': ('<robot name="x"><link name="a"></robot>', 'malformed'),
    'unknown_parent': (
        '<robot name="x"><link name="a"/><joint name="j" type="fixed"><parent link="zz"/>'
        '<child link="a"/></joint></robot>',
        'joint j',
    ),
    'unknown_child': (
        '<robot name="x"><link name="a"/><joint name="j" type="fixed"><parent link="a"/>'
        '<child link="zz"/></joint></robot>',
        'joint j',
    ),
    'two_roots': (
        '<robot name="x"><link name="a"><inertial><mass value="1"/><inertia ixx="1" iyy="1" '
        'izz="1" ixy="0" ixz="0" iyz="0"/></inertial></link><link name="b"/></robot>',
        r"\['a', 'b'\]",
    ),
    'cycle': (
        '<robot name="x"><link name="r"><inertial><mass value="1"/><inertia ixx="1" iyy="1" '
        'izz="1" ixy="0" ixz="0" iyz="0"/></inertial></link><link name="a"/><link name="b"/>'
        '<joint name="j1" type="fixed"><parent link="a"/><child link="b"/></joint>'
        '<joint name="j2" type="fixed"><parent link="b"/><child link="a"/></joint></robot>',
        'cycle',
    ),
    'massless_subtree': (
        '<robot name="x"><link name="r"><inertial><mass value="1"/><inertia ixx="1" iyy="1" '
        'izz="1" ixy="0" ixz="0" iyz="0"/></inertial></link><link name="a"/>'
        '<joint name="jm" type="revolute"><parent link="r"/><child link="a"/>'
        '<limit lower="-1" upper="1" effort="1" velocity="1"/></joint></robot>',
        'joint jm',
    ),
    'negative_mass': (
        '<robot name="x"><link name="neg"><inertial><mass value="-1"/><inertia ixx="1" '
        'iyy="1" izz="1" ixy="0" ixz="0" iyz="0"/></inertial></link></robot>',
        'link neg',
    ),
    'not_positive_semi_definite': (
        '<robot name="x"><link name="npd"><inertial><mass value="1"/><inertia ixx="1" '
        'iyy="1" izz="-1" ixy="0" ixz="0" iyz="0"/></inertial></link></robot>',
        'npd.*not positive semi-definite',
    ),
    'zero_axis': (
        '<robot name="x"><link name="r"><inertial><mass value="1"/><inertia ixx="1" iyy="1" '
        'izz="1" ixy="0" ixz="0" iyz="0"/></inertial></link><link name="a"><inertial>'
        '<mass value="1"/><inertia ixx="1" iyy="1" izz="1" ixy="0" ixz="0" iyz="0"/>'
        '</inertial></link><joint name="jz" type="continuous"><parent link="r"/>'
        '<child link="a"/><axis xyz="0 0 0"/></joint></robot>',
        'joint jz.*axis',
    ),
    # urdfdom refuses an <inertia> without its six attributes: a typo is not a zero
    'misspelled_inertia_attribute': (
        '<robot name="x"><link name="typo"><inertial><mass value="1"/><inertia ixx="1" '
        'iyy="1" izzz="1" ixy="0" ixz="0" iyz="0"/></inertial></link></robot>',
        r'link typo: <inertia> needs .* missing izz \(unknown attributes: izzz\)',
    ),
    'diagonal_only_inertia': (
        '<robot name="x"><link name="d"><inertial><mass value="1"/><inertia ixx="1" '
        'iyy="1" izz="1"/></inertial></link></robot>',
        'link d: <inertia> needs .* missing ixy, ixz, iyz$',
    ),
    # an indefinite link merged by a fixed joint into a body that stays indefinite
    'indefinite_merged_body': (
        '<robot name="x"><link name="r"><inertial><mass value="1"/><inertia ixx="1" '
        'iyy="1" izz="1" ixy="0" ixz="0" iyz="0"/></inertial></link><link name="bad">'
        '<inertial><mass value="1"/><inertia ixx="-5" iyy="1" izz="1" ixy="0" ixz="0" '
        'iyz="0"/></inertial></link><joint name="jf" type="fixed"><parent link="r"/>'
        '<child link="bad"/></joint></robot>',
        r"body r: .*not positive semi-definite.*links and frames on it: \['r', 'bad'\]",
    ),
    'overflowing_merge': (
        '<robot name="x"><link name="r"><inertial><mass value="1"/><inertia ixx="1" '
        'iyy="1" izz="1" ixy="0" ixz="0" iyz="0"/></inertial></link><link name="huge">'
        '<inertial><origin xyz="1e200 0 0"/><mass value="1e200"/><inertia ixx="1" iyy="1" '
        'izz="1" ixy="0" ixz="0" iyz="0"/></inertial></link><joint name="jf" type="fixed">'
        '<parent link="r"/><child link="huge"/></joint></robot>',
        r"body r: the mass properties of its links \['r', 'huge'\] overflow",
    ),
}


def test_a_tiny_axis_is_a_direction_and_indefinite_links_are_warned_honestly() -> None:
    """An axis like (0, 0, 1e-13) is a direction (normalized, as Pinocchio does), not a zero;
    an indefinite link merged into a positive definite body loads, its warning saying so."""
    body = (
        '<inertial><mass value="1"/><inertia ixx="1" iyy="1" izz="1" ixy="0" ixz="0" '
        'iyz="0"/></inertial>'
    )
    xml = (
        f'<robot name="x"><link name="r">{body}</link><link name="a">{body}</link>'
        '<joint name="j" type="continuous"><parent link="r"/><child link="a"/>'
        '<axis xyz="0 0 1e-13"/></joint></robot>'
    )
    tiny = D.load_urdf(xml)
    unit = D.load_urdf(xml.replace('1e-13', '1'))
    q = D.neutral(unit)
    q[7] = 0.4
    v = np.linspace(-1.0, 1.0, unit.nv)
    np.testing.assert_array_equal(D.mass_matrix(tiny, q), D.mass_matrix(unit, q))
    np.testing.assert_allclose(
        D.bias_forces(tiny, q, v), D.bias_forces(unit, q, v), rtol=0, atol=1e-15
    )
    # a slightly indefinite link on a heavy body: the merged body is positive definite
    merged = (
        '<robot name="x"><link name="r"><inertial><mass value="10"/><inertia ixx="10" '
        'iyy="10" izz="10" ixy="0" ixz="0" iyz="0"/></inertial></link><link name="cad">'
        '<inertial><mass value="1"/><inertia ixx="-0.01" iyy="1" izz="1" ixy="0" ixz="0" '
        'iyz="0"/></inertial></link><joint name="jf" type="fixed"><parent link="r"/>'
        '<child link="cad"/></joint></robot>'
    )
    with pytest.warns(D.InertiaWarning, match='link cad: .*kept only if fixed joints merge'):
        model = D.load_urdf(merged)
    np.testing.assert_allclose(np.diag(model.arrays.inertia[0]), [9.99, 11.0, 11.0], rtol=1e-12)


@pytest.mark.parametrize('case', sorted(BAD_URDFS))
def test_bad_urdf_raises_value_error_naming_the_culprit(case: str) -> None:
    xml, pattern = BAD_URDFS[case]
    with warnings.catch_warnings():  # the link's own warning comes first (tested below)
        warnings.simplefilter('ignore', D.InertiaWarning)
        with pytest.raises(ValueError, match=pattern):
            D.load_urdf(xml)


@pytest.mark.parametrize('jtype', ['planar', 'floating'])
def test_unsupported_joint_types(jtype: str) -> None:
    xml = (
        '<robot name="x"><link name="r"><inertial><mass value="1"/><inertia ixx="1" iyy="1" '
        'izz="1" ixy="0" ixz="0" iyz="0"/></inertial></link><link name="a"><inertial>'
        '<mass value="1"/><inertia ixx="1" iyy="1" izz="1" ixy="0" ixz="0" iyz="0"/>'
        f'</inertial></link><joint name="odd" type="{jtype}"><parent link="r"/>'
        '<child link="a"/></joint></robot>'
    )
    with pytest.raises(NotImplementedError, match='joint odd'):
        D.load_urdf(xml)


def test_wrong_sizes_are_clear_errors(servicer: D.Model) -> None:
    q, v = D.neutral(servicer), np.zeros(servicer.nv)
    with pytest.raises(ValueError, match='q: expected 14 values, got 13'):
        D.mass_matrix(servicer, q[:-1])
    with pytest.raises(ValueError, match='v: expected 13 values, got 7'):
        D.bias_forces(servicer, q, v[:7])
    with pytest.raises(ValueError, match='tau: expected 7 values, got 6'):
        D.forward_dynamics(servicer, q, v, np.zeros(6))
    with pytest.raises(ValueError, match='base_wrench: expected 6 values, got 3'):
        D.forward_dynamics(servicer, q, v, np.zeros(7), base_wrench=[1, 2, 3])
    with pytest.raises(ValueError, match=r"link_wrenches\['ee_link'\]: expected 6"):
        D.forward_dynamics(servicer, q, v, np.zeros(7), link_wrenches={'ee_link': [1, 2]})
    with pytest.raises(ValueError, match='unknown link'):
        D.link_pose(servicer, q, 'no_such_link')
    with pytest.raises(ValueError, match='a: expected 13 values'):
        D.inverse_dynamics(servicer, q, v, np.zeros((13, 2)))


def test_base_link_state_roundtrip(servicer: D.Model) -> None:
    rng = np.random.default_rng(15)
    q, v = random_state(servicer, rng)
    p, quat, lin, w = D.base_link_state(servicer, q, v)
    p_ref, R_ref = D.link_pose(servicer, q, servicer.base_link)
    assert p == pytest.approx(p_ref, abs=1e-14)
    J = D.link_jacobian(servicer, q, servicer.base_link)
    assert np.r_[lin, w] == pytest.approx(J @ v, abs=1e-12)
    qb, vb = D.base_state_from_link(servicer, p, quat, lin, w)
    assert qb == pytest.approx(q[:7], abs=1e-14) and vb == pytest.approx(v[:6], abs=1e-13)
    with pytest.raises(ValueError, match='quaternion'):
        D.base_state_from_link(servicer, p, [0, 0, 0, 0])


@pytest.mark.parametrize('seed', range(3))
def test_state_summary_is_the_separate_quantities_in_one_pass(seed: int) -> None:
    """The compiled summary (what the simulator publishes) against the link pose and
    Jacobian, the momentum about the CoM and ``1/2 v^T H v``, on a random tree."""
    model = D.load_urdf(random_urdf(seed, 5 + seed))
    rng = np.random.default_rng(40 + seed)
    q, v = random_state(model, rng)
    q[:3] = rng.normal(size=3)
    s = D.state_summary(model, q, v)
    p_ref, R_ref = D.link_pose(model, q, model.base_link)
    twist = D.link_jacobian(model, q, model.base_link) @ v
    h, com = D.momentum_and_com(model, q, v)
    assert s.base_position == pytest.approx(p_ref, abs=1e-13)
    R = D.lie.quat_to_matrix(s.base_orientation)
    assert np.abs(R - R_ref).max() < 1e-14 and np.linalg.norm(s.base_orientation) == pytest.approx(
        1
    )
    assert np.r_[s.base_linear_velocity, s.base_angular_velocity] == pytest.approx(
        twist, abs=1e-12
    )
    assert s.momentum == pytest.approx(h, abs=1e-12) and s.com == pytest.approx(com, abs=1e-14)
    H = D.mass_matrix(model, q)
    assert s.kinetic_energy == pytest.approx(0.5 * v @ H @ v, rel=1e-13)
    with pytest.raises(ValueError, match='floating-base'):
        fixed = D.load_urdf(random_urdf(seed, 3), floating_base=False)
        D.state_summary(fixed, D.neutral(fixed), np.zeros(fixed.nv))


@pytest.mark.parametrize('seed', range(6))
def test_aba_matches_crba_cholesky(seed: int) -> None:
    """The O(n) ABA against the O(n^3) H^-1 (Q - c) on random trees, all wrenches present."""
    floating = seed % 2 == 0
    model = D.load_urdf(
        random_urdf(seed, 4 + 3 * seed), floating_base=floating, gravity=(0.2, 0.1, -9.81)
    )
    model = D.with_joint_dynamics(model, seed % 3 == 0)
    rng = np.random.default_rng(100 + seed)
    q, v = random_state(model, rng)
    tau = rng.normal(size=model.n)
    wrenches = {name: rng.normal(size=6) for name in model.link_names[:: max(1, seed)]}
    base = rng.normal(size=6) if floating else None
    a_aba = D.forward_dynamics(model, q, v, tau, base_wrench=base, link_wrenches=wrenches)
    a_crba = D.forward_dynamics(
        model, q, v, tau, base_wrench=base, link_wrenches=wrenches, method='crba'
    )
    assert rel_err(a_aba, a_crba) < 1e-11


@pytest.mark.parametrize('joint_dynamics', [False, True])
@pytest.mark.parametrize('robot', ['servicer', 'tree'])
def test_batched_rows_equal_single_calls_bit_for_bit(robot: str, joint_dynamics: bool) -> None:
    """The batched rows run a row's kinematics and algorithm (ABA, CRBA, RNEA) in one compiled
    body on views carved once per chunk of 32 rows; a single call goes through the entry
    point. Same operations in the same order:
    equal bit for bit, over several chunks (a row's workspace left by the row before), with
    the joint friction (the servicer's) and prismatic joints and fixed children (the tree)."""
    urdf = (
        sample_robot('ffsim_servicer_7dof').read_text()
        if robot == 'servicer'
        else random_urdf(23, 9, prismatic=0.4)
    )
    model = D.with_joint_dynamics(D.load_urdf(urdf), joint_dynamics)
    rng = np.random.default_rng(23)
    states = [random_state(model, rng, speed=2.0) for _ in range(70)]
    Q = np.array([s[0] for s in states])
    V = np.array([s[1] for s in states])
    T = rng.normal(size=(70, model.n)) * 5.0
    A = D.forward_dynamics(model, Q, V, T)
    single = [D.forward_dynamics(model, Q[k], V[k], T[k]) for k in range(70)]
    np.testing.assert_array_equal(A, single)
    # the mass matrices and the inverse dynamics' rows too (their kinematics in the row's body)
    np.testing.assert_array_equal(
        D.mass_matrix(model, Q), [D.mass_matrix(model, Q[k]) for k in range(70)]
    )
    np.testing.assert_array_equal(
        D.bias_forces(model, Q, V), [D.bias_forces(model, Q[k], V[k]) for k in range(70)]
    )
    np.testing.assert_array_equal(
        D.inverse_dynamics(model, Q, V, A),
        [D.inverse_dynamics(model, Q[k], V[k], A[k]) for k in range(70)],
    )
    # and the rows are the accelerations: H a + c = Q with the friction (CRBA, RNEA)
    for k in (0, 33, 69):
        H = D.mass_matrix(model, Q[k])
        rhs = np.concatenate([np.zeros(model.nv - model.n), T[k]])
        np.testing.assert_allclose(
            H @ A[k] + D.bias_forces(model, Q[k], V[k]), rhs, atol=1e-9 * (1 + abs(rhs).max())
        )


def test_batched_api_matches_single_states(servicer: D.Model) -> None:
    rng = np.random.default_rng(16)
    states = [random_state(servicer, rng) for _ in range(6)]
    Q = np.array([s[0] for s in states]).reshape(2, 3, -1)
    V = np.array([s[1] for s in states]).reshape(2, 3, -1)
    T = rng.normal(size=(2, 3, servicer.n))
    W = rng.normal(size=6)  # broadcast over the batch
    A = D.forward_dynamics(servicer, Q, V, T, base_wrench=W)
    H = D.mass_matrix(servicer, Q)
    C = D.bias_forces(servicer, Q, V)
    hg = D.momentum(servicer, Q, V, about='com')
    rg = D.center_of_mass(servicer, Q)
    Qn, Vn = D.step(servicer, Q, V, T, 1e-3)
    Qi = D.integrate(servicer, Q, V, 0.3)
    assert A.shape == (2, 3, servicer.nv) and H.shape == (2, 3, servicer.nv, servicer.nv)
    for i in range(2):
        for j in range(3):
            q, v, tau = Q[i, j], V[i, j], T[i, j]
            assert A[i, j] == pytest.approx(D.forward_dynamics(servicer, q, v, tau, base_wrench=W))
            assert H[i, j] == pytest.approx(D.mass_matrix(servicer, q), abs=1e-12)
            assert C[i, j] == pytest.approx(D.bias_forces(servicer, q, v), abs=1e-12)
            assert hg[i, j] == pytest.approx(D.momentum(servicer, q, v, about='com'), abs=1e-12)
            assert rg[i, j] == pytest.approx(D.center_of_mass(servicer, q), abs=1e-14)
            qn, vn = D.step(servicer, q, v, tau, 1e-3)
            assert Qn[i, j] == pytest.approx(qn, abs=1e-14) and Vn[i, j] == pytest.approx(vn)
            assert Qi[i, j] == pytest.approx(D.integrate(servicer, q, v, 0.3), abs=1e-14)
    with pytest.raises(ValueError, match='tau: expected 7 values in the last axis, got 6'):
        D.forward_dynamics(servicer, Q, V, T[..., :6])
    with pytest.raises(ValueError, match='batch shape'):
        D.forward_dynamics(servicer, Q, V[:1, :2], T)
    with pytest.raises(ValueError, match='link_wrenches'):
        D.forward_dynamics(servicer, Q, V, T, link_wrenches={'ee_link': np.ones(6)})


_I = '<inertia ixx="0.01" iyy="0.02" izz="0.03" ixy="0" ixz="0" iyz="0"/>'
_LIM = '<limit lower="-1" upper="1" effort="1" velocity="1"/>'


def _robot(body: str) -> str:
    return f'<robot name="r">{body}</robot>'


def test_a_robot_without_joints_gets_every_algorithm() -> None:
    """A lone rigid body (a satellite; no joint: empty arrays, stride 0): single and batched
    calls agree with Euler's equations, on a fixed and a floating base."""
    sat = _robot(f'<link name="b"><inertial><mass value="2"/>{_I}</inertial></link>')
    fixed = D.load_urdf(sat, floating_base=False)
    empty = np.zeros(0)
    for out in (
        D.bias_forces(fixed, empty, empty),
        D.inverse_dynamics(fixed, empty, empty, empty),
        D.forward_dynamics(fixed, empty, empty, empty),
        D.mass_matrix(fixed, np.zeros((3, 0))),
        D.bias_forces(fixed, np.zeros((3, 0)), np.zeros((3, 0))),
        D.forward_dynamics(fixed, np.zeros((3, 0)), np.zeros((3, 0)), np.zeros((3, 0))),
    ):
        assert out.size == 0
    free = D.load_urdf(sat)
    rng = np.random.default_rng(7)
    Q = np.tile(D.neutral(free), (5, 1))
    V = rng.normal(size=(5, 6))
    W = rng.normal(size=(5, 6))
    A = D.forward_dynamics(free, Q, V, np.zeros((5, 0)), base_wrench=W)
    Qn, Vn = D.step(free, Q, V, np.zeros((5, 0)), 1e-3, base_wrench=W)
    inertia = np.diag([0.01, 0.02, 0.03])
    for k in range(5):
        w = V[k, 3:]
        dw = np.linalg.solve(inertia, W[k, 3:] - np.cross(w, inertia @ w))
        assert A[k] == pytest.approx(np.r_[W[k, :3] / 2.0, dw], rel=1e-13, abs=1e-13)
        qn, vn = D.step(free, Q[k], V[k], [], 1e-3, base_wrench=W[k])
        assert np.abs(Qn[k] - qn).max() < 1e-15 and np.abs(Vn[k] - vn).max() < 1e-14


def test_non_finite_states_and_zero_quaternions_are_named() -> None:
    """A batched call checks its rows before its parallel loops (a kernel failing there could
    not report it); a single call names the bad argument when its kernel fails or its result
    is not finite (the per-call fast paths check their result, not their inputs)."""
    model = D.load_urdf(sample_robot('ffsim_servicer_7dof').read_text())
    rng = np.random.default_rng(8)
    Q = np.array([random_state(model, rng)[0] for _ in range(4)])
    V = rng.normal(size=(4, model.nv))
    T = rng.normal(size=(4, model.n))
    Q[2, 8] = np.nan
    with pytest.raises(ValueError, match=r'q: expected finite values, got nan in row 2 \(index 8'):
        D.forward_dynamics(model, Q, V, T)
    Q[2, 8] = 0.1
    T[3, 1] = np.inf
    with pytest.raises(ValueError, match='tau: expected finite values, got inf in row 3'):
        D.step(model, Q, V, T, 1e-3)
    Q[1, 3:7] = 0.0
    for call in (
        lambda: D.mass_matrix(model, Q),
        lambda: D.integrate(model, Q, V, 0.1),
        lambda: D.bias_forces(model, Q, V),
    ):
        with pytest.raises(ValueError, match=r'non-zero quaternion .* at index 3, got .* row 1'):
            call()
    q, v, tau = Q[1].copy(), V[1].copy(), rng.normal(size=model.n)
    for call in (
        lambda: D.forward_dynamics(model, q, v, tau),
        lambda: D.mass_matrix(model, q),
        lambda: D.integrate(model, q, v, 0.1),
        lambda: D.step(model, q, v, tau, 1e-3),
        # every entry point whose kernel normalizes the base quaternion names it too
        lambda: D.momentum(model, q, v),
        lambda: D.momentum_and_com(model, q, v),
        lambda: D.center_of_mass(model, q),
        lambda: D.link_pose(model, q, 'ee_link'),
        lambda: D.link_jacobian(model, q, 'ee_link'),
        lambda: D.link_pose_and_jacobian(model, q, 'ee_link'),
        lambda: D.body_poses(model, q),
        lambda: D.state_summary(model, q, v),
        lambda: D.momentum_after(model, q, v, 0.1),
        lambda: D.forward_dynamics_derivatives(model, q, v, tau),
        lambda: D.inverse_dynamics_derivatives(model, q, v, v),
        lambda: D.step_derivatives(model, q, v, tau, 1e-3),
        lambda: D.generalized_velocity_derivatives(model, q, tau, 'ee_link'),
        lambda: D.forward_dynamics(model, q, v, tau, link_wrenches={'ee_link': np.ones(6)}),
    ):
        with pytest.raises(ValueError, match=r'q: expected a non-zero quaternion .* index 3'):
            call()
    q[3:7] = Q[0, 3:7]
    q[8] = np.nan  # the kernel's Cholesky fails: the argument is named, not the symptom
    with pytest.raises(ValueError, match='q: expected finite values, got nan at index 8'):
        D.forward_dynamics(model, q, v, tau)


@pytest.mark.parametrize(
    ('body', 'floating', 'refusal'),
    [
        (  # a point mass on the joint's own axis: the joint turns nothing
            '<link name="b"><inertial><mass value="2"/>' + _I + '</inertial></link>'
            '<link name="c"><inertial><origin xyz="0 0 0.2"/><mass value="1"/><inertia '
            'ixx="0" iyy="0" izz="0" ixy="0" ixz="0" iyz="0"/></inertial></link>'
            '<joint name="j" type="revolute"><parent link="b"/><child link="c"/>'
            '<axis xyz="0 0 1"/>' + _LIM + '</joint>',
            False,
            'joint j: its motion .* moves no inertia',
        ),
        (  # two collinear joints with a massless link between: one rate is redundant
            '<link name="b"><inertial><mass value="2"/>' + _I + '</inertial></link>'
            '<link name="m"/><link name="c"><inertial><origin xyz="0.3 0 0"/>'
            '<mass value="1"/>' + _I + '</inertial></link>'
            '<joint name="j1" type="revolute"><parent link="b"/><child link="m"/>'
            '<axis xyz="0 0 1"/>' + _LIM + '</joint>'
            '<joint name="j2" type="revolute"><parent link="m"/><child link="c"/>'
            '<origin xyz="0 0 0.1"/><axis xyz="0 0 1"/>' + _LIM + '</joint>',
            False,
            'joint j2: its motion .* moves no inertia',
        ),
        (  # a massless floating base under one joint: base and joint turn the same body (the
            # base named: it was 'joint j ... moves no inertia', the joint blamed)
            '<link name="r"/><link name="c"><inertial><origin xyz="0.3 0 0"/>'
            '<mass value="1"/>' + _I + '</inertial></link>'
            '<joint name="j" type="revolute"><parent link="r"/><child link="c"/>'
            '<origin xyz="0.1 0.2 0.3"/><axis xyz="0 0 1"/>' + _LIM + '</joint>',
            True,
            "base body 'r' has no mass: the floating base and its one joint j are then the",
        ),
    ],
)
def test_a_joint_that_moves_no_inertia_is_refused_at_load(
    body: str, floating: bool, refusal: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each of these models has a singular inertia matrix at every configuration (checked by
    numpy's rank of H at a random state, with the load-time check switched off)."""
    import ffsim_ros.dynamics.model as model_module

    with pytest.raises(ValueError, match=refusal):
        D.load_urdf(_robot(body), floating_base=floating)
    monkeypatch.setattr(model_module, '_check_inertia_rank', lambda *args: None)
    model = D.load_urdf(_robot(body), floating_base=floating)
    q = random_state(model, np.random.default_rng(3))[0]
    H = D.mass_matrix(model, q)
    s = np.linalg.svd(H, compute_uv=False)
    assert s[-1] <= 1e-12 * s[0]


def _chain(n: int, collinear_at: int | None = None) -> str:
    """A chain of ``n`` revolute joints about y, 0.1 m apart, 1 kg links; with
    ``collinear_at``, joint ``cj<k>`` is followed by a collinear one through a massless link."""
    inertial = '<inertial><mass value="{m}"/>' + _I + '</inertial>'
    links = ['<link name="base_link">' + inertial.format(m=10) + '</link>']
    joints = []
    for i in range(n):
        parent = 'base_link' if i == 0 else f'c{i - 1}'
        child = f'c{i}'
        if i == collinear_at:
            links.append('<link name="massless"/>')
            joints.append(
                f'<joint name="collinear" type="revolute"><parent link="{parent}"/>'
                f'<child link="massless"/><origin xyz="0.1 0 0"/><axis xyz="0 1 0"/>'
                + _LIM
                + '</joint>'
            )
            parent = 'massless'
        links.append(f'<link name="{child}">' + inertial.format(m=1) + '</link>')
        joints.append(
            f'<joint name="cj{i}" type="revolute"><parent link="{parent}"/><child '
            f'link="{child}"/><origin xyz="{0.0 if i == collinear_at else 0.1} 0 0"/>'
            '<axis xyz="0 1 0"/>' + _LIM + '</joint>'
        )
    return '<robot name="chain">' + ''.join(links) + ''.join(joints) + '</robot>'


def test_long_chains_load_and_an_oversized_model_is_refused_by_its_size() -> None:
    """Found by a probe (2026-11-27): the load-time rank check ran a NumPy loop of rank-one
    updates, O(n^3) in Python-level steps (41-85 s at 3000 joints), and a 20000-joint chain
    (7.5 MB, within the 16 MiB file limit) died allocating a 3 GiB inertia matrix. The pivots
    come from LAPACK now, and a model of more than MAX_NV velocity coordinates is refused
    before any n^2 allocation, naming the count."""
    import ffsim_ros.dynamics.model as model_module

    n = 1200
    model = D.load_urdf(_chain(n))
    assert model.nv == 6 + n
    # a degenerate joint deep in the chain is still found and named (the pivots of LAPACK's
    # factorization): the one after the collinear pair's massless link
    with pytest.raises(ValueError, match=r'joint cj1100: its motion .* moves no inertia'):
        D.load_urdf(_chain(n, collinear_at=1100))
    limit = model_module.MAX_NV
    with pytest.raises(
        ValueError,
        match=rf'expected at most {limit} velocity coordinates .* got {limit + 1} '
        rf'\({limit - 4} bodies\)',
    ):
        D.load_urdf(_chain(limit - 5))


def test_a_posture_singular_alone_still_loads() -> None:
    """Two joint axes aligned at zero through a massless link (iCub's neck): singular at the
    neutral posture only, so the model loads and its dynamics are defined elsewhere."""
    body = (
        '<link name="b"><inertial><mass value="2"/>' + _I + '</inertial></link>'
        '<link name="m"/><link name="c"><inertial><origin xyz="0 0 0.2"/><mass value="1"/>'
        '<inertia ixx="0.01" iyy="0.01" izz="0" ixy="0" ixz="0" iyz="0"/></inertial></link>'
        '<joint name="j1" type="revolute"><parent link="b"/><child link="m"/>'
        '<axis xyz="0 0 1"/>' + _LIM + '</joint>'
        '<joint name="j2" type="revolute"><parent link="m"/><child link="c"/>'
        '<axis xyz="1 0 0"/>' + _LIM + '</joint>'
    )
    model = D.load_urdf(_robot(body), floating_base=False)
    H0 = D.mass_matrix(model, np.zeros(2))
    assert np.linalg.svd(H0, compute_uv=False)[-1] < 1e-14
    H = D.mass_matrix(model, np.array([0.0, 0.4]))
    assert np.linalg.svd(H, compute_uv=False)[-1] > 1e-4


def test_infinite_joint_damping_is_refused() -> None:
    joint = (
        '<link name="b"><inertial><mass value="2"/>' + _I + '</inertial></link>'
        '<link name="c"><inertial><origin xyz="0.2 0 0"/><mass value="1"/>' + _I + '</inertial>'
        '</link><joint name="j" type="revolute"><parent link="b"/><child link="c"/>'
        '<axis xyz="0 0 1"/>' + _LIM + '<dynamics {}/></joint>'
    )
    for attr in ('damping="inf"', 'friction="1e400"', 'damping="nan"'):
        with pytest.raises(ValueError, match='joint j: damping and friction must be finite'):
            D.load_urdf(_robot(joint.format(attr)))


def test_triangle_inequality_tolerates_printed_rounding_only() -> None:
    """A CAD inertia printed to 7 digits loads; a violation beyond rounding is rejected
    (strict) or loaded as given with a warning naming the link (default, as Pinocchio)."""
    template = (
        '<robot name="x"><link name="tri"><inertial><mass value="1"/><inertia ixx="1" '
        'iyy="1" izz="{izz}" ixy="0" ixz="0" iyz="0"/></inertial></link></robot>'
    )
    with warnings.catch_warnings():
        warnings.simplefilter('error')
        model = D.load_urdf(template.format(izz='2.000001'), strict_inertia=True)
        assert model.total_mass == 1.0
    with pytest.raises(ValueError, match='link tri.*triangle'):
        D.load_urdf(template.format(izz='2.0001'), strict_inertia=True)
    with pytest.warns(D.InertiaWarning, match='link tri.*triangle.*kept as given'):
        model = D.load_urdf(template.format(izz='3'))
    assert np.diag(model.arrays.inertia[0]) == pytest.approx([1.0, 1.0, 3.0], abs=0)


def test_inconsistent_link_inertias_of_real_urdfs() -> None:
    """What CAD exports of real robots carry: a point mass (physical, silent), an indefinite
    link merged by a fixed joint into a physical body (warned, loaded, kept as given in the
    merged inertia), and an indefinite moving body (rejected whatever the mode)."""
    inertial = (
        '<inertial><origin xyz="{c}"/><mass value="{m}"/><inertia ixx="{i[0]}" iyy="{i[1]}" '
        'izz="{i[2]}" ixy="0" ixz="0" iyz="0"/></inertial>'
    )
    base = '<link name="base">' + inertial.format(c='0 0 0', m=2, i=(1, 1, 1)) + '</link>'
    point = '<link name="tip">' + inertial.format(c='0.5 0 0', m=0.5, i=(0, 0, 0)) + '</link>'
    joint = (
        '<joint name="j" type="{t}"><parent link="base"/><child link="{c}"/>'
        '<axis xyz="0 0 1"/><limit lower="-1" upper="1" effort="1" velocity="1"/></joint>'
    )
    with warnings.catch_warnings():
        warnings.simplefilter('error')
        m = D.load_urdf(
            f'<robot name="p">{base}{point}{joint.format(t="revolute", c="tip")}</robot>',
            strict_inertia=True,
        )
    # the point mass 0.5 m off the axis: the joint's diagonal entry of Hm is m r^2 = 0.125
    assert m.arrays.inertia[1] == pytest.approx(np.zeros((3, 3)), abs=0)
    assert D.mass_matrix(m, D.neutral(m))[6, 6] == pytest.approx(0.125, rel=1e-14)
    bad = '<link name="ant">' + inertial.format(c='0 0 0', m=0.1, i=(0.1, 0.1, -0.05)) + '</link>'
    with pytest.warns(D.InertiaWarning, match='link ant.*not positive semi-definite'):
        m = D.load_urdf(f'<robot name="f">{base}{bad}{joint.format(t="fixed", c="ant")}</robot>')
    assert np.diag(m.arrays.inertia[0]) == pytest.approx([1.1, 1.1, 0.95], abs=1e-15)
    with pytest.raises(ValueError, match='link ant.*not positive semi-definite'):
        D.load_urdf(
            f'<robot name="f">{base}{bad}{joint.format(t="fixed", c="ant")}</robot>',
            strict_inertia=True,
        )
    with pytest.warns(D.InertiaWarning), pytest.raises(ValueError, match='body ant.*semi-def'):
        D.load_urdf(f'<robot name="f">{base}{bad}{joint.format(t="revolute", c="ant")}</robot>')


def test_fast_and_converting_paths_agree(servicer: D.Model) -> None:
    """Ready float64 vectors take the direct entry points, and so do read-only and unaligned
    ones; lists, float32 and strided arrays are converted. All give the same numbers."""
    rng = np.random.default_rng(31)
    q, v = random_state(servicer, rng)
    a, tau = rng.normal(size=servicer.nv), rng.normal(size=servicer.n)
    calls = {
        'fd': lambda q, v, a, tau: D.forward_dynamics(servicer, q, v, tau),
        'crba': lambda q, v, a, tau: D.mass_matrix(servicer, q),
        'nle': lambda q, v, a, tau: D.bias_forces(servicer, q, v),
        'rnea': lambda q, v, a, tau: D.inverse_dynamics(servicer, q, v, a),
    }

    def readonly(x):
        x = x.copy()
        x.setflags(write=False)
        return x

    def strided(x):
        return np.repeat(x, 2)[::2]

    def unaligned(x):
        y = np.frombuffer(bytearray(8 * x.size + 1), dtype=np.float64, count=x.size, offset=1)
        y[:] = x
        assert not y.flags.aligned
        return y

    for name, call in calls.items():
        ref = call(q, v, a, tau)
        for variant in (list, readonly, strided, unaligned):
            got = call(*(variant(x) for x in (q, v, a, tau)))
            np.testing.assert_array_equal(got, ref, err_msg=f'{name} {variant.__name__}')
        got = call(*(x.astype(np.float32) for x in (q, v, a, tau)))
        ref32 = call(*(x.astype(np.float32).astype(float) for x in (q, v, a, tau)))
        np.testing.assert_array_equal(got, ref32, err_msg=f'{name} float32')


def test_urdf_sources_encodings_and_required_elements(tmp_path) -> None:
    """A URDF file is read as bytes (its declared encoding honoured), bytes are XML, a path
    is a path whatever characters it holds; an <inertial> without <mass value> or <inertia>
    is refused (URDF spec), not read as zero; a huge axis is normalized without overflow."""
    body = (
        '<link name="base"><inertial><mass value="2"/>{i}</inertial></link>'
        '<link name="arm\u00e9"><inertial><origin xyz="0.3 0 0"/><mass value="1"/>{i}'
        '</inertial></link><joint name="j" type="revolute"><parent link="base"/>'
        '<child link="arm\u00e9"/><axis xyz="0 {axis} 0"/>'
        '<limit lower="-1" upper="1" effort="1" velocity="1"/></joint>'
    )
    inertia = '<inertia ixx="0.1" iyy="0.1" izz="0.1" ixy="0" ixz="0" iyz="0"/>'
    xml = '<robot name="r">' + body.format(i=inertia, axis='1') + '</robot>'
    ref = D.load_urdf(xml)
    files = {
        'latin1.urdf': ('<?xml version="1.0" encoding="ISO-8859-1"?>' + xml, 'latin-1'),
        'utf16.urdf': ('<?xml version="1.0" encoding="UTF-16"?>' + xml, 'utf-16'),
        'a<b.urdf': (xml, 'utf-8'),  # a '<' in a path: still a path
    }
    for name, (text, encoding) in files.items():
        path = tmp_path / name
        path.write_bytes(text.encode(encoding))
        for source in (path, str(path)):
            model = D.load_urdf(source)
            assert model.link_names == ref.link_names and 'arm\u00e9' in model.link_names
    assert D.load_urdf(xml.encode()).link_names == ref.link_names
    assert D.load_urdf('\n  ' + xml).link_names == ref.link_names  # XML after blank lines
    with pytest.raises(ValueError, match=r'malformed URDF XML in .*bad\.urdf'):
        (tmp_path / 'bad.urdf').write_text('<robot name="r"><link name="a"></robot>')
        D.load_urdf(tmp_path / 'bad.urdf')
    no_inertia = '<robot name="r">' + body.format(i='', axis='1') + '</robot>'
    with pytest.raises(ValueError, match=r'link base: <inertial> needs an <inertia> element'):
        D.load_urdf(no_inertia)
    no_mass = xml.replace('<mass value="2"/>', '<mass/>')
    with pytest.raises(ValueError, match=r'link base: <inertial> needs <mass value=\.\.\.>'):
        D.load_urdf(no_mass)
    huge = D.load_urdf('<robot name="r">' + body.format(i=inertia, axis='1e200') + '</robot>')
    np.testing.assert_array_equal(huge.arrays.axis, ref.arrays.axis)


def test_mimic_joints_load_as_independent_joints_with_a_warning() -> None:
    """As Pinocchio's URDF parser by default: a <mimic> joint is a joint of its
    own (the coupling is not modelled), said by a MimicWarning naming it; a mimic of itself
    is refused, one of a joint the robot does not have named in the warning."""
    link = (
        '<link name="{n}"><inertial><origin xyz="0.2 0 0"/><mass value="1"/><inertia '
        'ixx="0.01" iyy="0.01" izz="0.01" ixy="0" ixz="0" iyz="0"/></inertial></link>'
    )
    joint = (
        '<joint name="{n}" type="revolute"><parent link="palm"/><child link="{c}"/>'
        '<axis xyz="0 0 1"/><limit lower="-1" upper="1" effort="1" velocity="1"/>{m}</joint>'
    )
    xml = (
        '<robot name="hand">'
        + link.format(n='palm')
        + link.format(n='f1')
        + link.format(n='f2')
        + joint.format(n='j1', c='f1', m='')
        + joint.format(n='j2', c='f2', m='<mimic joint="{t}" multiplier="-1"/>')
        + '</robot>'
    )
    with pytest.warns(D.MimicWarning, match=r'independent joints.*j2 \(mimics j1\)'):
        model = D.load_urdf(xml.format(t='j1'), floating_base=False)
    assert model.joint_names == ('j1', 'j2')
    # independent: a torque on j1 alone does not move j2 (the fingers do not touch)
    a = D.forward_dynamics(model, np.zeros(2), np.zeros(2), np.array([1.0, 0.0]))
    assert a[1] == 0.0 and a[0] == pytest.approx(1.0 / 0.05, rel=1e-12)
    with pytest.raises(ValueError, match="joint j2: <mimic joint=...> expected another .*'j2'"):
        D.load_urdf(xml.format(t='j2'), floating_base=False)
    # a mimic of a joint the robot does not have (a real robot's typo): loaded, named
    with pytest.warns(D.MimicWarning, match=r"j2 \(mimics 'nope', a joint the robot does not"):
        model = D.load_urdf(xml.format(t='nope'), floating_base=False)
    assert model.joint_names == ('j1', 'j2')
