"""Mufti's maximal-coordinate formulation (seed 001) against the core, hand derivations and
Pinocchio's constraint dynamics.

Tolerances are norm-relative: ``||ours - ref|| <= tol * max(1, ||ref||)``.
"""

from __future__ import annotations

import warnings
import xml.etree.ElementTree as ET

import numpy as np
import pytest

import ffsim_ros.dynamics as D
from ffsim_ros.dynamics import mufti as M
from ffsim_ros.dynamics.mufti import samples as S
from ffsim_ros.dynamics.random_urdf import random_urdf
from ffsim_ros.resources import sample_robot

try:  # Pinocchio is a test-only oracle: only the tests comparing with it need it
    import pinocchio as pin
except ImportError:  # pragma: no cover - exercised where pinocchio is not installed
    pin = None

needs_pinocchio = pytest.mark.skipif(pin is None, reason='pinocchio (test-only oracle) missing')

G = (0.1, -0.3, -9.81)


def rel_err(a, b) -> float:
    a, b = np.asarray(a, float), np.asarray(b, float)
    return float(np.linalg.norm(a - b) / max(1.0, np.linalg.norm(b)))


def skew(x: np.ndarray) -> np.ndarray:
    return np.array([[0, -x[2], x[1]], [x[2], 0, -x[0]], [-x[1], x[0], 0]])


def random_state(model: D.Model, rng: np.random.Generator, speed: float = 1.0):
    q = D.neutral(model)
    off = 0
    if model.floating_base:
        q[:3] = rng.normal(size=3)
        quat = rng.normal(size=4)
        q[3:7] = quat / np.linalg.norm(quat)
        off = 7
    q[off:] = rng.uniform(-1.5, 1.5, size=model.n)
    return q, speed * rng.normal(size=model.nv)


def random_inputs(model: D.Model, rng: np.random.Generator):
    tau = rng.normal(size=model.n)
    bw = rng.normal(size=6) if model.floating_base else None
    links = [nm for nm in model.link_names if nm != model.base_link]
    lw = {nm: rng.normal(size=6) for nm in rng.choice(links, size=min(3, len(links)))}
    return tau, bw, lw


# --------------------------------------------------------------------------------------------
# graph (section 2)
# --------------------------------------------------------------------------------------------

# Fig. 3a of the seed (regular labeling), 0-based: arcs b1->b2, b1->b3, b2->b4, b2->b5, b2->b6
FIG3A = [-1, 0, 0, 1, 1, 1]


def test_incidence_and_path_matrix_of_the_seed_example() -> None:
    C_a = np.array(
        [
            [1, 1, 0, 0, 0],
            [-1, 0, 1, 1, 1],
            [0, -1, 0, 0, 0],
            [0, 0, -1, 0, 0],
            [0, 0, 0, -1, 0],
            [0, 0, 0, 0, -1],
        ]
    )  # eq. 1
    T_25 = np.array(
        [
            [-1, -1, -1, -1, -1, -1],
            [0, -1, 0, -1, -1, -1],
            [0, 0, -1, 0, 0, 0],
            [0, 0, 0, -1, 0, 0],
            [0, 0, 0, 0, -1, 0],
            [0, 0, 0, 0, 0, -1],
        ]
    )  # eq. 25
    C = M.incidence_matrix(FIG3A)
    np.testing.assert_array_equal(C, C_a)
    T = M.path_matrix(FIG3A)
    np.testing.assert_array_equal(T, T_25)
    S = np.column_stack((-np.eye(6, 1), C))  # eq. 22
    np.testing.assert_array_equal(T @ S, np.eye(6))
    # with the first row removed, C of a regular labeling is upper triangular, -1 diagonal
    np.testing.assert_array_equal(np.tril(C[1:], -1), 0)
    np.testing.assert_array_equal(np.diag(C[1:]), -1)


def test_regular_labeling_of_an_arbitrary_one() -> None:
    # Fig. 3b: b1->b5, b1->b4, b4->b6, b4->b2, b4->b3 (0-based parents)
    parent_b = [-1, 3, 3, 0, 0, 3]
    new = M.regular_labeling(parent_b)
    assert sorted(new.tolist()) == list(range(6)) and new[0] == 0
    relabeled = np.empty(6, dtype=int)
    for i, p in enumerate(parent_b):
        relabeled[new[i]] = -1 if p < 0 else new[p]
    assert all(relabeled[k] < k for k in range(1, 6))
    C = M.incidence_matrix(relabeled)
    np.testing.assert_array_equal(np.tril(C[1:], -1), 0)
    np.testing.assert_array_equal(np.diag(C[1:]), -1)
    with pytest.raises(ValueError, match='regular labeling'):
        M.path_matrix(parent_b)
    with pytest.raises(ValueError, match='exactly one root'):
        M.incidence_matrix([-1, -1, 0])
    with pytest.raises(ValueError, match='circuit'):
        M.incidence_matrix([-1, 2, 1])


# --------------------------------------------------------------------------------------------
# 1-2: KKT and null-space forward dynamics against ABA
# --------------------------------------------------------------------------------------------


SOLVERS = ('kkt', 'nullspace', 'multipliers')


def cross_motion(V: np.ndarray, X: np.ndarray) -> np.ndarray:
    """Spatial motion cross product ``V x X`` of ``[linear; angular]`` 6-vectors at O."""
    return np.r_[np.cross(V[3:], X[:3]) + np.cross(V[:3], X[3:]), np.cross(V[3:], X[3:])]


def newton_euler_reference(model: D.Model, q, v, a, bw, lw):
    """Body accelerations, joint reactions and ground wrench from Newton-Euler, body by body.

    Independent of Mufti's Lagrangian system: the spatial accelerations at the inertial
    origin O are propagated outwards from the generalized accelerations ``a`` (``A_i = A_p +
    S_i qdd_i + Sdot_i qd_i``, with ``Sdot = V x S`` for a joint column fixed in the body
    moving with ``V``); each body needs ``[m r''; I w' + w x I w]`` minus its gravity and
    external wrenches, and the subtree sums of these, moved to the hinge point, are the
    wrenches the parents exert through the joints.

    Returns
    -------
    X : (nb, 6) ``[r''_c; w']`` per body;  reactions : (n, 6) ``[f; n about o_j]`` on the
    child;  root : (6,) wrench of the ground on a fixed base at its CoM, or None.
    """
    arr = model.arrays
    nb = arr.parent.shape[0]
    R, p, S = D.body_kinematics(model, q)
    c = p + np.einsum('bij,bj->bi', R, arr.com)
    V, A = np.zeros((nb, 6)), np.zeros((nb, 6))
    if model.floating_base:  # v_O = V0 - w0 x r0 (r0 = c[0], the base CoM)
        V0, w0, dV0, dw0 = v[:3], v[3:6], a[:3], a[3:6]
        V[0] = np.r_[V0 - np.cross(w0, c[0]), w0]
        A[0] = np.r_[dV0 - np.cross(dw0, c[0]) - np.cross(w0, V0), dw0]
    for i in range(1, nb):
        k, kind = arr.parent[i], model.joint_types[i - 1]
        s = slice(arr.iv[i], arr.iv[i] + arr.nvj[i])
        V[i] = V[k] + S[:, s] @ v[s]
        A[i] = A[k] + S[:, s] @ a[s]
        for m, (col, rate) in enumerate(zip(S[:, s].T, v[s], strict=True)):
            # a universal joint's first axis is fixed in the parent, the other columns turn
            # with the child (for revolute and prismatic joints V_i x S_i = V_p x S_i)
            moving = V[k] if (kind == 'universal' and m == 0) else V[i]
            A[i] += rate * cross_motion(moving, col)
    w, wd = V[:, 3:], A[:, 3:]
    rdot = V[:, :3] + np.cross(w, c)
    rdd = A[:, :3] + np.cross(wd, c) + np.cross(w, rdot)
    Iw = np.einsum('bij,bjk,blk->bil', R, arr.inertia, R)
    need = np.zeros((nb, 6))  # [force; moment about the CoM] each body needs from its joints
    need[:, :3] = arr.mass[:, None] * (rdd - np.asarray(model.gravity))
    need[:, 3:] = np.einsum('bij,bj->bi', Iw, wd) + np.cross(w, np.einsum('bij,bj->bi', Iw, w))
    for link, wr in (lw or {}).items():
        fr = model.frame(link)
        point = p[fr.body] + R[fr.body] @ fr.translation
        need[fr.body] -= np.r_[wr[:3], wr[3:] + np.cross(point - c[fr.body], wr[:3])]
    if bw is not None:
        need[0] -= bw
    tot = need.copy()
    tot[:, 3:] += np.cross(c, need[:, :3])  # about O
    for i in range(nb - 1, 0, -1):
        assert arr.parent[i] < i
        tot[arr.parent[i]] += tot[i]
    reactions = np.array(
        [np.r_[tot[i, :3], tot[i, 3:] - np.cross(p[i], tot[i, :3])] for i in range(1, nb)]
    )
    root = None
    if not model.floating_base:
        root = np.r_[tot[0, :3], tot[0, 3:] - np.cross(c[0], tot[0, :3])]
    return np.concatenate((rdd, wd), axis=1), reactions.reshape(-1, 6), root


def check_against_aba_and_newton_euler(model, q, v, tau, bw, lw, method: str, label) -> None:
    """``method``'s accelerations equal ABA's (1e-9), and its body accelerations, hinge
    wrenches and ground wrench equal the Newton-Euler ones of ABA's motion (1e-9)."""
    ref = D.forward_dynamics(model, q, v, tau, base_wrench=bw, link_wrenches=lw)
    a = D.forward_dynamics(model, q, v, tau, base_wrench=bw, link_wrenches=lw, method=method)
    assert rel_err(a, ref) < 1e-9, (label, method, rel_err(a, ref))
    sol = M.maximal_dynamics(model, q, v, tau, base_wrench=bw, link_wrenches=lw, method=method)
    np.testing.assert_array_equal(sol.a, a)
    X, reac, root = newton_euler_reference(model, q, v, ref, bw, lw)
    assert rel_err(sol.body_accelerations, X) < 1e-9, (label, method, rel_err(sol.a, X))
    got = M.joint_reactions(model, q, v, tau, base_wrench=bw, link_wrenches=lw, method=method)
    got = np.array([got[name] for name in model.joint_names]).reshape(-1, 6)
    assert rel_err(got, reac) < 1e-9, (label, method, 'reactions', rel_err(got, reac))
    # the constraint part of a reaction: all of it but the actuated component along the axis
    # (a torque about a revolute axis, a force along a prismatic one); seed sign: on the parent
    R, _ = D.body_poses(model, q)
    f_c, g_c = -reac[:, :3].copy(), -reac[:, 3:].copy()
    for j, kind in enumerate(model.joint_types):
        k = R[j + 1] @ model.arrays.axis[j + 1]
        assert kind in ('revolute', 'continuous', 'prismatic'), kind
        part = f_c if kind == 'prismatic' else g_c
        part[j] -= (part[j] @ k) * k
    assert rel_err(sol.hinge_forces, f_c) < 1e-9, (label, method, rel_err(sol.hinge_forces, f_c))
    err = rel_err(sol.constraint_torques, g_c)
    assert err < 1e-9, (label, method, 'constraint_torques', err)
    if model.floating_base:
        assert sol.root_wrench is None
    else:
        err = rel_err(sol.root_wrench, root)
        assert err < 1e-9, (label, method, 'root_wrench', err)


def with_friction(urdf: str, damping: float = 0.4, friction: float = 0.3) -> str:
    """``urdf`` with ``<dynamics damping friction>`` on every moving joint."""
    root = ET.fromstring(urdf)
    for joint in root.iter('joint'):
        if joint.get('type') != 'fixed':
            assert joint.find('dynamics') is None
            ET.SubElement(joint, 'dynamics', damping=str(damping), friction=str(friction))
    return ET.tostring(root, encoding='unicode')


@pytest.mark.parametrize('method', SOLVERS)
@pytest.mark.parametrize('seed', range(8))
def test_solvers_match_aba_on_random_trees(seed: int, method: str) -> None:
    rng = np.random.default_rng(100 + seed)
    for floating in (True, False):
        urdf = random_urdf(seed, 2 + 2 * seed, branching=0.4, prismatic=0.3)
        if seed % 2:  # joint damping and friction [S0 eq. 41]
            urdf = with_friction(urdf)
        model = D.load_urdf(urdf, floating_base=floating, gravity=G)
        if seed % 2:
            model = D.with_joint_dynamics(model)
        q, v = random_state(model, rng)
        tau, bw, lw = random_inputs(model, rng)
        check_against_aba_and_newton_euler(model, q, v, tau, bw, lw, method, floating)


@pytest.mark.parametrize('method', SOLVERS)
@pytest.mark.parametrize('robot', ['planar_2link', 'ffsim_servicer_7dof', 'dual_arm_servicer'])
def test_solvers_match_aba_on_sample_robots(robot: str, method: str) -> None:
    rng = np.random.default_rng(7)
    for floating in (True, False):
        model = D.load_urdf(sample_robot(robot), floating_base=floating, gravity=(0, 0, -9.81))
        for _ in range(3):
            q, v = random_state(model, rng)
            tau, bw, lw = random_inputs(model, rng)
            check_against_aba_and_newton_euler(model, q, v, tau, bw, lw, method, (robot, floating))


def test_body_accelerations_satisfy_newton_euler_and_the_joints() -> None:
    """The solution solves eq. 49: each body's equation holds with the hinge wrenches."""
    rng = np.random.default_rng(3)
    model = D.load_urdf(random_urdf(4, 7, prismatic=0.4), gravity=G)
    q, v = random_state(model, rng)
    tau, bw, lw = random_inputs(model, rng)
    sol = M.maximal_dynamics(model, q, v, tau, base_wrench=bw, link_wrenches=lw)
    # torque about a revolute axis is zero (eq. 54), force along a prismatic axis is zero
    R, p = D.body_poses(model, q)
    for j, jt in enumerate(model.joint_types):
        k = R[j + 1] @ model.arrays.axis[j + 1]
        if jt == 'prismatic':
            assert abs(sol.hinge_forces[j] @ k) < 1e-9 * max(1, np.linalg.norm(sol.hinge_forces))
        else:
            assert abs(sol.constraint_torques[j] @ k) < 1e-9 * max(
                1, np.linalg.norm(sol.constraint_torques)
            )
        np.testing.assert_allclose(sol.hinge_points[j], p[j + 1], atol=1e-14)
    assert sol.root_wrench is None
    assert sol.body_accelerations.shape == (model.n + 1, 6)


def test_bad_inputs_raise_value_error() -> None:
    model = D.load_urdf(random_urdf(1, 3), gravity=G)
    fixed = D.load_urdf(random_urdf(1, 3), floating_base=False)
    q, v = D.neutral(model), np.zeros(model.nv)
    with pytest.raises(ValueError, match="expected one of .*'kkt'"):
        D.forward_dynamics(model, q, v, np.zeros(3), method='gauss')
    with pytest.raises(ValueError, match='tau: expected 3 values, got 2'):
        M.maximal_dynamics(model, q, v, np.zeros(2))
    with pytest.raises(ValueError, match='q: expected 10 values'):
        D.forward_dynamics(model, q[:-1], v, np.zeros(3), method='nullspace')
    with pytest.raises(ValueError, match='base_wrench: expected a floating-base'):
        M.maximal_dynamics(fixed, np.zeros(3), np.zeros(3), np.zeros(3), base_wrench=np.ones(6))
    with pytest.raises(ValueError, match='base_acceleration: expected 6 values'):
        M.maximal_dynamics(model, q, v, np.zeros(3), base_acceleration=np.ones(5))
    with pytest.raises(D.UnknownNameError):
        M.maximal_dynamics(model, q, v, np.zeros(3), link_wrenches={'nope': np.ones(6)})


def test_closed_chain_bad_inputs_name_what_is_wrong() -> None:
    """A non-finite anchor is refused (it was accepted, then its rows dropped as redundant:
    the loop silently open); a NaN in the state is named by argument in every entry (it came
    back as "articulated inertia is not positive definite"); a run that diverges names the
    step; a non-LoopClosure item is refused before its name is read."""
    from ffsim_ros.dynamics.builder import random_configuration, random_model

    with pytest.raises(ValueError, match=r"loop 'bad' translation_a: expected 3 finite"):
        M.LoopClosure('bad', 'body_1', 'body_4', 'ball', translation_a=[np.nan, 0.0, 0.0])
    with pytest.raises(ValueError, match=r'translation_b: expected 3 finite values \[m\]'):
        M.LoopClosure('bad', 'body_1', 'body_4', 'weld', translation_b=[0.0, np.inf, 0.0])
    model = random_model(
        3, 5, joint_types=('revolute', 'spherical'), floating_base=True, gravity=(0, 0, -9.81)
    )
    q = random_configuration(model, np.random.default_rng(0))
    v, tau = np.zeros(model.nv), np.zeros(model.n)
    pa, _ = D.link_pose(model, q, 'body_2')
    pb, Rb = D.link_pose(model, q, 'body_5')
    loop = M.LoopClosure('L', 'body_2', 'body_5', 'ball', translation_b=Rb.T @ (pa - pb))
    chain = M.ClosedChain(model, [loop])
    chain.acceleration(q, v, tau)  # compiled and typed: the fast path from here on
    qn = q.copy()
    qn[8] = np.nan
    named = "loop closure 'L': {}: expected finite values, got nan at index 8"
    for call, arg in (
        (lambda: chain.acceleration(qn, v, tau), 'q'),
        (lambda: chain.acceleration(q, qn[: model.nv], tau), 'v'),
        (lambda: chain.step(qn, v, tau, 1e-3), 'q'),
        (lambda: chain.project(qn, v), 'q'),
        (lambda: chain.simulate(qn, v, tau, 0.01, 1e-3), 'q0'),
    ):
        with pytest.raises(ValueError) as info:
            call()
        assert str(info.value) == named.format(arg)
    # on the compiled solver too, every input is named: a zero base quaternion, a NaN in the
    # base wrench or in a link wrench (unnamed LinAlgErrors before), and a NaN off the loop in
    # assemble (LAPACK's "SVD did not converge" before: the loop error stayed finite)
    qz = q.copy()
    qz[3:7] = 0.0
    wrench = np.array([np.nan, 0.0, 0.0, 0.0, 0.0, 0.0])
    for call, text in (
        (lambda: chain.acceleration(qz, v, tau), 'q: expected a non-zero quaternion'),
        (lambda: chain.dynamics(qz, v, tau), 'q: expected a non-zero quaternion'),
        (
            lambda: chain.acceleration(q, v, tau, base_wrench=wrench),
            'base_wrench: expected finite values, got nan at index 0',
        ),
        (
            lambda: chain.dynamics(q, v, tau, base_wrench=wrench),
            'base_wrench: expected finite values, got nan at index 0',
        ),
        (
            lambda: chain.acceleration(q, v, tau, link_wrenches={'body_1': wrench}),
            "link_wrenches['body_1']: expected finite values, got nan at index 0",
        ),
    ):
        with pytest.raises(ValueError) as info:
            call()
        assert str(info.value).startswith(f"loop closure 'L': {text}"), str(info.value)
    off_loop = [
        i
        for i in range(7, model.nq)
        if np.allclose(
            chain.constraint_error(np.where(np.arange(model.nq) == i, q + 0.3, q), v)[0],
            chain.constraint_error(q, v)[0],
        )
    ]
    assert off_loop  # joint_1 and joint_2 (indices 7, 8): body_1 is not on the loop
    qa = q.copy()
    qa[off_loop[0]] = np.nan
    with pytest.raises(ValueError) as info:
        chain.assemble(qa)
    assert str(info.value) == named.format('q').replace('index 8', f'index {off_loop[0]}')
    far = M.LoopClosure('far', 'body_2', 'body_5', 'ball', translation_a=[50.0, 0, 0])
    with pytest.raises(np.linalg.LinAlgError, match=r"in loop closure 'far'.*\(step \d+ of 200"):
        M.ClosedChain(model, [far]).simulate(q, v, tau, 0.2, 1e-3, stabilize=True, project=False)
    with pytest.raises(ValueError, match='expected LoopClosure items, got tuple'):
        M.ClosedChain(model, [loop, ('a', 'b')])


def test_closed_form_block_inverse_and_multiplier_solver() -> None:
    """The per-body closed-form ``J^-1`` of eqs. 12-13 and the eq. 14 solve on a tiny system."""
    from ffsim_ros.dynamics.mufti import linalg as LA

    rng = np.random.default_rng(4)
    A = rng.normal(size=(5, 3, 3))
    A = A @ np.swapaxes(A, 1, 2) + 0.1 * np.eye(3)
    np.testing.assert_allclose(LA.inverse_3x3(A), np.linalg.inv(A), rtol=1e-12, atol=1e-12)
    with pytest.raises(np.linalg.LinAlgError, match='singular'):
        LA.inverse_3x3(np.zeros((3, 3)))
    mass = rng.uniform(0.5, 2.0, 5)
    J = LA.block_mass_matrix(mass, A)
    m_out, I_out = LA.mass_blocks(J)
    np.testing.assert_array_equal(m_out, mass)
    np.testing.assert_array_equal(I_out, A)
    np.testing.assert_allclose(
        LA.block_mass_inverse(mass, A).dense() @ J.dense(), np.eye(30), atol=1e-12
    )
    Gd = rng.normal(size=(7, 30))
    u, b = rng.normal(size=30), rng.normal(size=7)
    x, lam = LA.solve_multipliers(J, Gd, u, b)
    np.testing.assert_allclose(J.dense() @ x, u + Gd.T @ lam, atol=1e-11)
    np.testing.assert_allclose(Gd @ x, b, atol=1e-11)
    with pytest.raises(ValueError, match='block-diagonal'):
        LA.mass_blocks(LA.Triplets(np.array([0]), np.array([7]), np.array([1.0]), (12, 12)))
    with pytest.raises(ValueError, match=r'diag\(m E_3, I\)'):
        LA.mass_blocks(LA.Triplets(np.array([0]), np.array([4]), np.array([1.0]), (6, 6)))


# --------------------------------------------------------------------------------------------
# 3: joint reactions
# --------------------------------------------------------------------------------------------


def pendulum(m: float = 3.0, lc: float = 0.6, ic: float = 0.05, gravity=(0, 0, -9.81)):
    urdf = f"""<robot name="pend"><link name="world_link"/>
      <joint name="pivot" type="continuous"><parent link="world_link"/><child link="bob"/>
        <axis xyz="0 1 0"/></joint>
      <link name="bob"><inertial><origin xyz="0 0 {-lc}"/><mass value="{m}"/>
        <inertia ixx="{ic}" iyy="{ic}" izz="0.01" ixy="0" ixz="0" iyz="0"/></inertial></link>
    </robot>"""
    return D.load_urdf(urdf, floating_base=False, gravity=gravity)


@pytest.mark.parametrize('phi,phid,tau', [(0.0, 0.0, 0.0), (0.4, 1.3, 0.7), (2.0, -2.5, -1.1)])
def test_reaction_of_a_pendulum_in_gravity_closed_form(phi: float, phid: float, tau: float):
    m, lc, ic, g = 3.0, 0.6, 0.05, np.array([0, 0, -9.81])
    model = pendulum(m, lc, ic)
    # by hand: rotation about y, CoM at r = Ry(phi) (0, 0, -lc)
    phidd = (tau - m * 9.81 * lc * np.sin(phi)) / (ic + m * lc**2)
    r = np.array([-lc * np.sin(phi), 0.0, -lc * np.cos(phi)])
    w, alpha = np.array([0, phid, 0]), np.array([0, phidd, 0])
    a_c = np.cross(alpha, r) + np.cross(w, np.cross(w, r))
    f = m * (a_c - g)  # f + m g = m a_c
    n = np.array([0, ic * phidd, 0]) + np.cross(r, f)  # about the CoM: n - r x f = I_c alpha
    reac = M.joint_reactions(model, [phi], [phid], [tau])['pivot']
    assert rel_err(reac, np.r_[f, n]) < 1e-12
    assert reac[4] == pytest.approx(tau, abs=1e-12)  # only the actuation about the axis
    assert D.forward_dynamics(model, [phi], [phid], [tau], method='kkt')[0] == pytest.approx(
        phidd, rel=1e-12
    )


def test_reaction_of_bodies_at_rest_under_gravity() -> None:
    """Two links held still by their motors: joint 1 carries the weight of both."""
    m1, m2, l1, c1, c2 = 2.0, 1.5, 0.8, 0.4, 0.3
    urdf = f"""<robot name="arm"><link name="world_link"/>
      <joint name="j1" type="revolute"><parent link="world_link"/><child link="l1"/>
        <axis xyz="0 1 0"/><limit lower="-3" upper="3" effort="1" velocity="1"/></joint>
      <link name="l1"><inertial><origin xyz="{c1} 0 0"/><mass value="{m1}"/>
        <inertia ixx="0.01" iyy="0.05" izz="0.05" ixy="0" ixz="0" iyz="0"/></inertial></link>
      <joint name="j2" type="revolute"><parent link="l1"/><child link="l2"/>
        <origin xyz="{l1} 0 0"/><axis xyz="0 1 0"/>
        <limit lower="-3" upper="3" effort="1" velocity="1"/></joint>
      <link name="l2"><inertial><origin xyz="{c2} 0 0"/><mass value="{m2}"/>
        <inertia ixx="0.01" iyy="0.03" izz="0.03" ixy="0" ixz="0" iyz="0"/></inertial></link>
    </robot>"""
    g = 9.81
    model = D.load_urdf(urdf, floating_base=False, gravity=(0, 0, -g))
    q = np.array([0.0, 0.0])  # both links horizontal along +x
    # by hand: a weight m g (along -z) at +c x has the y moment (c x) x (-m g z) = +m g c y,
    # so the motors hold the links with tau2 = -m2 g c2 and tau1 = -(m1 g c1 + m2 g (l1 + c2))
    tau2 = -m2 * g * c2
    tau1 = -(m1 * g * c1 + m2 * g * (l1 + c2))
    a = D.forward_dynamics(model, q, [0, 0], [tau1, tau2], method='kkt')
    np.testing.assert_allclose(a, 0.0, atol=1e-12)
    reac = M.joint_reactions(model, q, [0, 0], [tau1, tau2])
    np.testing.assert_allclose(reac['j1'], [0, 0, (m1 + m2) * g, 0, tau1, 0], atol=1e-12)
    np.testing.assert_allclose(reac['j2'], [0, 0, m2 * g, 0, tau2, 0], atol=1e-12)
    # the ground holds the whole robot (the base hinge h_0, Remark 3)
    sol = M.maximal_dynamics(model, q, [0, 0], [tau1, tau2])
    assert sol.root_wrench[2] == pytest.approx((m1 + m2) * g, rel=1e-12)


def test_reaction_of_a_spinning_unbalanced_body_gyroscopic() -> None:
    """A body spun about z at constant rate with products of inertia and an offset CoM."""
    m, Om = 2.5, 3.0
    cx, cy, h = 0.1, -0.05, 0.3
    Ixx, Iyy, Izz, Ixz, Iyz = 0.5, 0.6, 0.4, 0.07, -0.04
    urdf = f"""<robot name="rotor"><link name="world_link"/>
      <joint name="spin" type="continuous"><parent link="world_link"/><child link="rotor"/>
        <axis xyz="0 0 1"/></joint>
      <link name="rotor"><inertial><origin xyz="{cx} {cy} {h}"/><mass value="{m}"/>
        <inertia ixx="{Ixx}" iyy="{Iyy}" izz="{Izz}" ixy="0" ixz="{Ixz}" iyz="{Iyz}"/>
      </inertial></link></robot>"""
    model = D.load_urdf(urdf, floating_base=False)
    a = D.forward_dynamics(model, [0.0], [Om], [0.0], method='nullspace')
    assert abs(a[0]) < 1e-12  # the gyroscopic moment is normal to the axis
    r = np.array([cx, cy, h])
    f = m * (-(Om**2) * np.array([cx, cy, 0.0]))  # centripetal
    n_c = Om**2 * np.array([-Iyz, Ixz, 0.0])  # w x I w with w = Om z
    n = n_c + np.cross(r, f)  # moment about the pivot (origin)
    reac = M.joint_reactions(model, [0.0], [Om], [0.0], method='nullspace')['spin']
    assert rel_err(reac, np.r_[f, n]) < 1e-12


def body_momentum(model: D.Model, q: np.ndarray, v: np.ndarray) -> np.ndarray:
    """(nb, 6) ``[m r'_c; I_w w]`` of each body, from the core's link Jacobians."""
    out = []
    for i, link in enumerate(model.body_names):
        p, R = D.link_pose(model, q, link)
        J = D.link_jacobian(model, q, link)
        w = J[3:] @ v
        lever = R @ model.arrays.com[i]
        rdot = J[:3] @ v + np.cross(w, lever)
        Iw = R @ model.arrays.inertia[i] @ R.T
        out.append(np.r_[model.arrays.mass[i] * rdot, Iw @ w])
    return np.array(out)


@pytest.mark.parametrize('seed', [2, 5])
def test_reactions_balance_each_body_momentum_rate(seed: int) -> None:
    """Sum of wrenches on each body (gravity, external, reactions) = its rate of momentum.

    The rate is a central finite difference (h = 1e-4, O(h^2)) of the body momenta computed
    from the core's Jacobians along the ABA motion: independent of the Lagrangian solution.
    """
    rng = np.random.default_rng(seed)
    for floating in (True, False):
        model = D.load_urdf(random_urdf(seed, 6, prismatic=0.4), floating_base=floating, gravity=G)
        q, v = random_state(model, rng)
        tau, bw, lw = random_inputs(model, rng)
        a = D.forward_dynamics(model, q, v, tau, base_wrench=bw, link_wrenches=lw)
        h = 1e-4
        qp = D.integrate(model, q, h * v + 0.5 * h * h * a)
        qm = D.integrate(model, q, -h * v + 0.5 * h * h * a)
        rate = (body_momentum(model, qp, v + h * a) - body_momentum(model, qm, v - h * a)) / (
            2 * h
        )
        reac = M.joint_reactions(model, q, v, tau, base_wrench=bw, link_wrenches=lw)
        sol = M.maximal_dynamics(model, q, v, tau, base_wrench=bw, link_wrenches=lw)
        R, p = D.body_poses(model, q)
        c = p + np.einsum('bij,bj->bi', R, model.arrays.com)
        total = np.zeros((model.n + 1, 6))
        total[:, :3] = model.arrays.mass[:, None] * np.asarray(G)
        for link, w in lw.items():
            fr = model.frame(link)
            pt = p[fr.body] + R[fr.body] @ fr.translation
            total[fr.body] += np.r_[w[:3], w[3:] + np.cross(pt - c[fr.body], w[:3])]
        if floating:
            total[0] += bw
        else:
            total[0] += sol.root_wrench
        for j, name in enumerate(model.joint_names):
            child, parent = j + 1, model.arrays.parent[j + 1]
            o = p[child]
            wr = reac[name]
            total[child] += np.r_[wr[:3], wr[3:] + np.cross(o - c[child], wr[:3])]
            total[parent] -= np.r_[wr[:3], wr[3:] + np.cross(o - c[parent], wr[:3])]
        assert rel_err(total, rate) < 1e-6, rel_err(total, rate)


# --------------------------------------------------------------------------------------------
# 4: prescribed-motion base (Remark 3)
# --------------------------------------------------------------------------------------------


def test_prescribed_rest_equals_fixed_base() -> None:
    rng = np.random.default_rng(11)
    urdf = random_urdf(6, 6)
    fixed = D.load_urdf(urdf, floating_base=False, gravity=G)
    free = D.load_urdf(urdf, floating_base=True, gravity=G)
    phi, phid, tau = rng.uniform(-1, 1, 6), rng.normal(size=6), rng.normal(size=6)
    ref = D.forward_dynamics(fixed, phi, phid, tau)
    at_rest = (np.r_[free.arrays.com[0], 0, 0, 0, 1], np.zeros(6), np.zeros(6))
    for method in SOLVERS:
        sol = M.prescribed_base_dynamics(
            free, lambda t: at_rest, 0.0, phi, phid, tau, method=method
        )
        assert rel_err(sol.a[6:], ref) < 1e-9
        np.testing.assert_array_equal(sol.a[:6], 0.0)
        # the same ground wrench as the fixed base's hinge h_0
        fixed_sol = M.maximal_dynamics(fixed, phi, phid, tau, method=method)
        assert rel_err(sol.root_wrench, fixed_sol.root_wrench) < 1e-9
    # a trajectory of the prescribed-at-rest base = the fixed-base RK4 trajectory of the core
    t, P, Pd = M.simulate_prescribed_base(free, lambda t: at_rest, phi, phid, tau, 0.2, 0.01)
    qf, vf = phi.copy(), phid.copy()
    for _ in range(20):
        qf, vf = D.step(fixed, qf, vf, tau, 0.01)
    assert t[-1] == pytest.approx(0.2) and rel_err(P[-1], qf) < 1e-9 and rel_err(Pd[-1], vf) < 1e-9


def test_prescribed_free_floating_base_acceleration_reproduces_free_motion() -> None:
    rng = np.random.default_rng(12)
    model = D.load_urdf(random_urdf(7, 7, prismatic=0.3), gravity=G)
    q, v = random_state(model, rng)
    tau, bw, lw = random_inputs(model, rng)
    a = D.forward_dynamics(model, q, v, tau, base_wrench=bw, link_wrenches=lw)
    sol = M.maximal_dynamics(
        model, q, v, tau, base_wrench=bw, link_wrenches=lw, base_acceleration=a[:6]
    )
    assert rel_err(sol.a, a) < 1e-9
    # no extra wrench is needed to impose the motion the base has anyway
    assert np.linalg.norm(sol.root_wrench) < 1e-9 * max(1.0, np.linalg.norm(bw))


def test_prescribed_arbitrary_motion_is_consistent_with_inverse_dynamics() -> None:
    """Base on a tumbling, accelerating trajectory: RNEA of the result gives back tau and the
    wrench the prescribing body applies."""
    rng = np.random.default_rng(13)
    model = D.load_urdf(random_urdf(8, 5), gravity=G)
    w0, dw0 = np.array([0.3, -0.2, 0.5]), np.array([0.1, 0.4, -0.3])

    def motion(t: float):
        r = np.array([np.sin(t), 0.5 * t**2, np.cos(2 * t)])
        V = np.array([np.cos(t), t, -2 * np.sin(2 * t)])
        A = np.array([-np.sin(t), 1.0, -4 * np.cos(2 * t)])
        rv = w0 * t + 0.5 * dw0 * t * t  # not the attitude of w, but any pose will do here
        ang = np.linalg.norm(rv)
        quat = np.r_[np.sin(ang / 2) * rv / ang, np.cos(ang / 2)]
        return np.r_[r, quat], np.r_[V, w0 + dw0 * t], np.r_[A, dw0]

    phi, phid, tau = rng.uniform(-1, 1, 5), rng.normal(size=5), rng.normal(size=5)
    sol = M.prescribed_base_dynamics(model, motion, 0.7, phi, phid, tau)
    qb, vb, ab = motion(0.7)
    gen = D.inverse_dynamics(model, np.r_[qb, phi], np.r_[vb, phid], sol.a)
    assert rel_err(gen[6:], tau) < 1e-9
    assert rel_err(gen[:6], sol.root_wrench) < 1e-9
    np.testing.assert_array_equal(sol.a[:6], ab)
    with pytest.raises(ValueError, match='floating-base'):
        fixed = D.load_urdf(random_urdf(8, 5), floating_base=False)
        M.prescribed_base_dynamics(fixed, motion, 0.0, phi, phid, tau)


# --------------------------------------------------------------------------------------------
# 5: closed chains (section 4) against Pinocchio's constraint dynamics
# --------------------------------------------------------------------------------------------

FB = S.FOURBAR
FOURBAR = S.fourbar_urdf()
TIP_A, TIP_B = S.TIP_A, S.TIP_B
spatial_loop_urdf = S.spatial_loop_urdf


def fourbar_chain(kind: str, gravity=(0, -9.81, 0), **kw) -> M.ClosedChain:
    model = D.load_urdf(FOURBAR, floating_base=False, gravity=gravity)
    return M.ClosedChain(model, [S.fourbar_cut(kind)], **kw)


def spatial_chain(kind: str, gravity=(0, 0, -9.81), **kw) -> M.ClosedChain:
    model = D.load_urdf(spatial_loop_urdf(), floating_base=True, gravity=gravity)
    return M.ClosedChain(model, [S.spatial_loop_cut(kind)], **kw)


def pinocchio_constraint_dynamics(
    urdf: str, model: D.Model, q, v, tau, contact, placements, bw=None
) -> tuple[np.ndarray, np.ndarray]:
    """Pinocchio's constraintDynamics in our coordinates (see test_pinocchio_oracle.py for the
    conversion: root origin ``p = r0 - R c0``, body-frame base twist, joints by name).

    Returns our-convention accelerations and Pinocchio's multipliers ``lambda_c`` (the force on
    joint 1's side, in its constraint frame).
    """
    floating = model.floating_base
    pm = (
        pin.buildModelFromXML(urdf, pin.JointModelFreeFlyer())
        if floating
        else (pin.buildModelFromXML(urdf))
    )
    pm.gravity.linear[:] = model.gravity
    pd = pm.createData()
    off_p, off = (7, 7) if floating else (0, 0)
    offv = 6 if floating else 0
    perm = [pm.joints[pm.getJointId(nm)].idx_v - offv for nm in model.joint_names]
    qp, vp, tp = np.zeros(pm.nq), np.zeros(pm.nv), np.zeros(pm.nv)
    if floating:
        c0 = pm.inertias[1].lever.copy()
        R = pin.Quaternion(q[6], q[3], q[4], q[5]).toRotationMatrix()
        qp[:3], qp[3:7] = q[:3] - R @ c0, q[3:7]
        V0, w0 = v[:3], v[3:6]
        vp[3:6] = R.T @ w0
        vp[:3] = R.T @ V0 + np.cross(c0, R.T @ w0)
        if bw is not None:
            tp[:3] = R.T @ bw[:3]
            tp[3:6] = R.T @ (bw[3:] + np.cross(R @ c0, bw[:3]))
    for k, pk in enumerate(perm):
        qp[off_p + pk], vp[offv + pk], tp[offv + pk] = q[off + k], v[offv + k], tau[k]
    (link1, X1), (link2, X2) = placements
    j1 = pm.getJointId(link1) if link1 else 0
    j2 = pm.getJointId(link2) if link2 else 0
    cm = pin.RigidConstraintModel(contact, pm, j1, X1, j2, X2, pin.ReferenceFrame.LOCAL)
    cms = pin.StdVec_RigidConstraintModel()
    cms.append(cm)
    cds = pin.StdVec_RigidConstraintData()
    cds.append(cm.createData())
    pin.initConstraintDynamics(pm, pd, cms, cds)
    prox = pin.ProximalSettings(1e-14, 1e-10, 200)
    ap = pin.constraintDynamics(pm, pd, qp, vp, tp, cms, cds, prox)
    a = np.zeros(model.nv)
    if floating:
        wp = ap[3:6]
        a[3:6] = R @ wp
        a[:3] = R @ (ap[:3] - np.cross(c0, wp)) + np.cross(w0, V0)
    for k, pk in enumerate(perm):
        a[offv + k] = ap[offv + pk]
    return a, pd.lambda_c.copy()


@needs_pinocchio
@pytest.mark.parametrize('kind', ['ball', 'revolute'])
def test_planar_fourbar_matches_pinocchio_and_warns_redundancy(kind: str) -> None:
    rng = np.random.default_rng(21)
    chain = fourbar_chain(kind, alpha=0.0, beta=0.0)
    model = chain.model
    with pytest.warns(M.RedundantConstraintWarning, match='rank'):
        chain.dynamics(*chain.assemble([1.2, -0.9, -1.5], locked=['j1']), np.zeros(3))
    worst = 0.0
    for crank in (0.3, 1.2, 2.5):
        q, v = chain.assemble([crank, -0.9, -1.5], np.r_[rng.normal(), 0, 0], locked=['j1'])
        tau = rng.normal(size=3)
        ref, lam = pinocchio_constraint_dynamics(
            FOURBAR,
            model,
            q,
            v,
            tau,
            pin.ContactType.CONTACT_3D,
            [
                ('j3', pin.SE3(np.eye(3), np.r_[FB['c'], 0, 0])),
                (None, pin.SE3(np.eye(3), np.r_[FB['d'], 0, 0])),
            ],
        )
        R_rocker = D.link_pose(model, q, 'rocker')[1]
        for method in SOLVERS + ('aba',):  # the compiled solver too
            sol = chain.dynamics(q, v, tau, method=method)
            worst = max(worst, rel_err(sol.a, ref))
            assert rel_err(sol.a, ref) < 1e-8, (method, rel_err(sol.a, ref))
            # loop-closure force on the ground = minus Pinocchio's force on the rocker
            assert rel_err(sol.loop_wrenches['cut'][:3], -R_rocker @ lam[:3]) < 1e-8
            assert sol.rank == sol.n_rows - (1 if kind == 'ball' else 3)
    assert worst < 1e-8


@needs_pinocchio
@pytest.mark.parametrize('kind', ['ball', 'weld'])
def test_spatial_loop_on_floating_base_matches_pinocchio(kind: str) -> None:
    rng = np.random.default_rng(22)
    chain = spatial_chain(kind, alpha=0.0, beta=0.0)
    model = chain.model
    contact = pin.ContactType.CONTACT_3D if kind == 'ball' else pin.ContactType.CONTACT_6D
    for _ in range(3):
        q0 = D.neutral(model)
        quat = rng.normal(size=4)
        q0[:3], q0[3:7] = rng.normal(size=3), quat / np.linalg.norm(quat)
        q0[7:] = 0.1 * rng.normal(size=7)
        q, v = chain.assemble(q0, rng.normal(size=model.nv))
        xi, xid = chain.constraint_error(q, v)
        assert np.abs(xi).max() < 1e-12 and np.abs(xid).max() < 1e-12
        tau, bw = rng.normal(size=7), rng.normal(size=6)
        ref, lam = pinocchio_constraint_dynamics(
            spatial_loop_urdf(),
            model,
            q,
            v,
            tau,
            contact,
            [('a4', pin.SE3(np.eye(3), TIP_A)), ('b3', pin.SE3(np.eye(3), TIP_B))],
            bw,
        )
        R_a = D.link_pose(model, q, 'la4')[1]
        for method in SOLVERS + ('aba',):  # the compiled solver too
            sol = chain.dynamics(q, v, tau, base_wrench=bw, method=method)
            assert rel_err(sol.a, ref) < 1e-8, (method, rel_err(sol.a, ref))
            assert sol.rank == sol.n_rows  # generic spatial loop: no redundancy
            w = sol.loop_wrenches['tips']
            assert rel_err(w[:3], -R_a @ lam[:3]) < 1e-8
            if kind == 'weld':
                assert rel_err(w[3:], -R_a @ lam[3:]) < 1e-8


def test_baumgarte_keeps_the_fourbar_assembled_for_10_s() -> None:
    """RK4 at 4 ms for 10 s (mild gravity): drift <= 1e-8 with Baumgarte's default gains alone
    (no projection), and much larger without (the constraint error then grows along the run)."""
    drifts = {}
    for stabilize in (True, False):
        chain = fourbar_chain('revolute', gravity=(0, -1.0, 0))
        q, v = chain.assemble([1.2, -0.9, -1.5], [1.0, 0, 0], locked=['j1'])
        with warnings.catch_warnings():
            warnings.simplefilter('ignore', M.RedundantConstraintWarning)
            t, Q, V = chain.simulate(
                q, v, np.zeros(3), 10.0, 0.004, stabilize=stabilize, project=False
            )
        assert t[-1] == pytest.approx(10.0)
        drifts[stabilize] = max(
            np.abs(chain.constraint_error(Q[k], V[k])[0]).max() for k in range(0, t.size, 25)
        )
    assert drifts[True] <= 1e-8, drifts
    assert drifts[False] > 10 * drifts[True], drifts


def spinning_two_arm_chain(gap: float) -> tuple[M.ClosedChain, np.ndarray]:
    """A floating base with two 2-link arms (revolute, then ball) whose tips are joined by a
    ball cut hinge, opened by ``gap`` [m] along the first tip's x axis; the configuration."""
    from ffsim_ros.dynamics.builder import ModelBuilder

    b = ModelBuilder('two_arms', floating_base=True)
    b.add_base('base', mass=20.0, inertia=[2, 0, 0, 3, 0, 2.5])
    link = dict(mass=1.0, com=(0.2, 0, 0), inertia=[0.01, 0, 0, 0.02, 0, 0.02])
    for arm, y in (('a', 0.2), ('b', -0.2)):
        b.add_body(
            f'{arm}1', parent='base', joint=f'{arm}j1', joint_type='revolute',
            xyz=(0.3, y, 0), axis=(0, 0, 1), **link,
        )  # fmt: skip
        b.add_body(
            f'{arm}2', parent=f'{arm}1', joint=f'{arm}j2', joint_type='spherical',
            xyz=(0.4, 0, 0), **link,
        )  # fmt: skip
    model = b.build()
    q = D.neutral(model)
    q[model.idx_q[0]], q[model.idx_q[2]] = 0.5, -0.5
    pa, Ra = D.link_pose(model, q, 'a2')
    pb, Rb = D.link_pose(model, q, 'b2')
    tip = np.array([0.4, 0.0, 0.0])
    meet = pa + Ra @ tip
    loop = M.LoopClosure(
        'tips', 'a2', 'b2', 'ball', translation_a=tip + [gap, 0, 0],
        translation_b=Rb.T @ (meet - pb),
    )  # fmt: skip
    return M.ClosedChain(model, [loop]), q


@pytest.mark.parametrize('spin', [0.0, 40.0])
def test_baumgarte_closes_a_gap_at_any_spin(spin: float) -> None:
    """Baumgarte alone (no projection) on a chain spinning rigidly at 40 rad/s, above
    ``omega = sqrt(beta) = 20 rad/s``, with its loop 1 mm open: the gap closes (4e-8 m after
    1 s; 4.3e-11 without spin, the documented critically damped law). The translational rows
    are along axes fixed in body a, so their right-hand sides carry the axes' turning; without
    it the gap grew to 0.2 m in 1 s at 40 rad/s. And ``constraint_error``'s rates are the
    exact time derivative of the errors off the manifold (central differences along the
    motion)."""
    chain, q = spinning_two_arm_chain(1e-3)
    model = chain.model
    axis = np.array([0.3, -0.5, 0.8]) / np.linalg.norm([0.3, -0.5, 0.8])
    v = np.zeros(model.nv)
    v[3:6] = spin * axis
    v[6:] = 0.3 * np.sin(np.arange(model.nv - 6))  # joints moving too: a relative motion
    h = 1e-6
    xi_p = chain.constraint_error(D.integrate(model, q, v, h), v)[0]
    xi_m = chain.constraint_error(D.integrate(model, q, v, -h), v)[0]
    xi, xi_dot = chain.constraint_error(q, v)
    assert np.linalg.norm(xi) == pytest.approx(1e-3, rel=1e-9)
    np.testing.assert_allclose(xi_dot, (xi_p - xi_m) / (2 * h), rtol=0, atol=1e-8)
    v[6:] = 0.0  # rigid rotation: no relative velocity at the hinge
    _, Q, V = chain.simulate(q, v, np.zeros(model.n), 1.0, 5e-4, stabilize=True, project=False)
    gap = [np.linalg.norm(chain.constraint_error(Q[k], V[k])[0]) for k in (0, -1)]
    assert gap[0] == pytest.approx(1e-3, rel=1e-9)
    assert gap[1] <= (1e-10 if spin == 0.0 else 1e-6), gap


def test_default_stabilization_keeps_the_fourbar_at_round_off_in_full_gravity() -> None:
    """Default ``simulate`` (the projection after every step), g = 9.81, RK4 at 4 ms for 10 s."""
    chain = fourbar_chain('revolute', gravity=(0, -9.81, 0))
    q, v = chain.assemble([1.2, -0.9, -1.5], [1.0, 0, 0], locked=['j1'])
    e0 = D.kinetic_energy(chain.model, q, v) + D.potential_energy(chain.model, q)
    with warnings.catch_warnings():
        warnings.simplefilter('ignore', M.RedundantConstraintWarning)
        t, Q, V = chain.simulate(q, v, np.zeros(3), 10.0, 0.004)
    drift = max(np.abs(chain.constraint_error(Q[k], V[k])).max() for k in range(0, t.size, 25))
    assert drift <= 1e-12, drift
    assert np.ptp(Q[:, 0]) > 1.0  # the crank swings
    # the projection removes no energy worth speaking of (passive mechanism, no friction)
    e1 = D.kinetic_energy(chain.model, Q[-1], V[-1]) + D.potential_energy(chain.model, Q[-1])
    assert abs(e1 - e0) <= 1e-5 * abs(e0), (e0, e1)


def test_free_floating_closed_chain_conserves_momentum() -> None:
    rng = np.random.default_rng(23)
    chain = spatial_chain('ball', gravity=(0, 0, 0))
    model = chain.model
    q0 = D.neutral(model)
    q0[3:7] = [0, 0, 0, 1]
    q0[7:] = 0.1 * rng.normal(size=7)
    q, v = chain.assemble(q0, rng.normal(size=model.nv), move_base=True)
    h0 = D.momentum(model, q, v)
    tau = 0.5 * rng.normal(size=7)  # internal efforts do not change the momentum
    # instantaneous: the cut-hinge forces are internal (central difference along the motion)
    a, h = chain.acceleration(q, v, tau), 1e-5
    rate = (
        D.momentum(model, D.integrate(model, q, h * v + 0.5 * h * h * a), v + h * a)
        - D.momentum(model, D.integrate(model, q, -h * v + 0.5 * h * h * a), v - h * a)
    ) / (2 * h)
    assert np.linalg.norm(rate) < 1e-7 * np.linalg.norm(h0)
    # along 0.5 s of RK4 at 2.5 ms (the residual is RK4's O(dt^4) error: 7e-9 at 5 ms)
    t, Q, V = chain.simulate(q, v, tau, 0.5, 0.0025)
    h1 = D.momentum(model, Q[-1], V[-1])
    assert np.linalg.norm(h1 - h0) <= 1e-9 * np.linalg.norm(h0)
    assert np.abs(chain.constraint_error(Q[-1], V[-1])[0]).max() < 1e-8
    assert np.linalg.norm(V[-1] - V[0]) > 0.1  # it did move


def test_projection_keeps_momentum_and_centre_of_mass() -> None:
    """``project`` removes a small constraint error with internal impulses only."""
    rng = np.random.default_rng(24)
    chain = spatial_chain('ball', gravity=(0, 0, 0))
    model = chain.model
    q0 = D.neutral(model)
    q0[7:] = 0.1 * rng.normal(size=7)
    q, v = chain.assemble(q0, rng.normal(size=model.nv), move_base=True)
    qp = D.integrate(model, q, 1e-6 * rng.normal(size=model.nv))
    vp = v + 1e-3 * rng.normal(size=model.nv)
    assert np.abs(chain.constraint_error(qp, vp)[0]).max() > 1e-8
    qn, vn = chain.project(qp, vp)
    xi, xid = chain.constraint_error(qn, vn)
    assert np.abs(xi).max() < 1e-13 and np.abs(xid).max() < 1e-12
    h = D.momentum(model, qp, vp)
    assert np.linalg.norm(D.momentum(model, qn, vn) - h) <= 1e-12 * np.linalg.norm(h)
    com_shift = D.center_of_mass(model, qn) - D.center_of_mass(model, qp)
    assert np.linalg.norm(com_shift) < 1e-10  # first order zero: a 1e-6 error moves it 1e-12


def test_assembly_and_bad_loops() -> None:
    chain = fourbar_chain('ball')
    q, v = chain.assemble([0.7, -0.5, -1.8], [0.5, 0.0, 0.0], locked=['j1'])
    assert q[0] == 0.7 and v[0] == 0.5  # the locked crank keeps its coordinate and rate
    xi, xid = chain.constraint_error(q, v)
    assert np.abs(xi).max() < 1e-12 and np.abs(xid).max() < 1e-12
    model = chain.model
    with pytest.raises(ValueError, match='kind expected one of'):
        M.LoopClosure('x', 'crank', 'ground', 'slider')
    with pytest.raises(ValueError, match='same body'):
        M.ClosedChain(model, [M.LoopClosure('x', 'crank', 'crank')])
    with pytest.raises(D.UnknownNameError):
        M.ClosedChain(model, [M.LoopClosure('x', 'crank', 'nope')])
    with pytest.raises(ValueError, match='rotation matrix'):
        M.LoopClosure('x', 'crank', 'ground', rotation_a=np.ones((3, 3)))
    with pytest.raises(ValueError, match=r"^loop 'x' rotation_b: expected a rotation matrix"):
        M.LoopClosure('x', 'crank', 'ground', rotation_b=np.diag([1.0, 1.0, -1.0]))  # a mirror
    with pytest.raises(RuntimeError, match='no convergence'):
        chain.assemble([0.7, -0.5, -1.8], locked=['j1', 'j2', 'j3'], max_iter=3)


# ---------------------------------------------------------------- URDF+ loops: typos refused
PLATFORM_PLUS = sample_robot('floating_platform').read_text()
B_PRED = '<predecessor link="b3">\n      <origin xyz="0.0 0.0 0.2" rpy="0 0 0" />'
B_LOOP = '<loop name="b_tip" type="spherical">'


def test_shipped_urdf_loops_still_load() -> None:
    """The loops of ``urdf/floating_platform.urdf`` and of the text it is generated from."""
    for text in (PLATFORM_PLUS, S.platform_urdf_plus()):
        loops = D.loop_closures_from_urdf(text)
        assert [(lp.name, lp.link_a, lp.link_b, lp.kind) for lp in loops] == [
            ('b_tip', 'b3', 'platform', 'ball'),
            ('c_tip', 'c3', 'platform', 'ball'),
        ]
        M.ClosedChain(D.load_urdf(text), loops)


@pytest.mark.parametrize(
    'old, new, words',
    [  # a typo used to fall back to a default (a different loop) or be ignored
        (B_PRED, B_PRED.replace('xyz=', 'xzy='), ['<origin>', "['xzy']", "['rpy', 'xyz']"]),
        (B_PRED, B_PRED.replace('<origin', '<orgin'), ['unknown child element <orgin>']),
        (B_LOOP, B_LOOP + '<axsi xyz="0 0 1"/>', ['<loop> unknown child element <axsi>']),
        (
            B_LOOP,
            B_LOOP.replace('spherical', 'revolute') + '<axis xzy="0 0 1"/>',
            ['<axis> unknown attributes', "['xzy']"],
        ),
        (B_LOOP, B_LOOP + '<axis xyz="0 0 1"/>', ['<axis> expected only on a revolute']),
        (B_LOOP, B_LOOP.replace('type', 'tpye'), ["<loop> unknown attributes ['tpye']"]),
        (B_PRED, B_PRED.replace('"b3"', '"b3" name="c3"'), ["got both ('b3', 'c3')"]),
        (B_PRED, B_PRED.replace('"b3"', '"b3" lnik="b3"'), ['<predecessor> unknown attr']),
        (B_PRED, B_PRED + '<origin/>', ['expected one <origin>, got 2']),
        (B_PRED, B_PRED.replace(' />', '><x/></origin>'), ['<origin> unknown child element <x>']),
        (B_PRED, B_PRED.replace('"b3"', '"b33"'), ["unknown link 'b33'", 'the URDF has']),
    ],
)
def test_urdf_loop_typos_are_refused_naming_the_loop(old: str, new: str, words: list) -> None:
    assert PLATFORM_PLUS.count(old) == 1
    text = PLATFORM_PLUS.replace(old, new, 1)
    with pytest.raises(ValueError) as info:
        D.loop_closures_from_urdf(text)
    for w in ["loop 'b_tip'", *words]:
        assert w in str(info.value), str(info.value)


@pytest.mark.parametrize(
    'build, words',
    [
        (lambda m: M.ClosedChain(m, None), ['loops: expected a sequence', 'NoneType']),
        (
            lambda m: M.ClosedChain(m, M.LoopClosure('x', 'b3', 'platform')),
            ['loops: expected a sequence', 'LoopClosure'],
        ),
        (
            lambda m: M.ClosedChain(m, [M.LoopClosure('x', ['b3'], 'platform')]),
            ["loop 'x': link_a: expected a link name", "list ['b3']"],
        ),
        (
            lambda m: M.ClosedChain(m, [M.LoopClosure('x', 'b3', None)]),
            ["loop 'x': link_b: expected a link name", 'NoneType None'],
        ),
        (
            lambda m: M.ClosedChain(m, [M.LoopClosure(None, 'b3', 'platform')]),
            ['loop name', 'None'],
        ),
        (
            lambda m: M.ClosedChain(None, [M.LoopClosure('x', 'b3', 'platform')]),
            ['model: expected a Model', 'NoneType'],
        ),
        (
            lambda m: M.ClosedChain(m, [M.LoopClosure('x', 'b3', 'platform')], alpha='abc'),
            ["alpha: expected a number, got 'abc'"],
        ),
        (
            lambda m: M.ClosedChain(m, [M.LoopClosure('x', 'b3', 'platform')], beta=True),
            ['beta: expected a number, got True'],
        ),
        (
            lambda m: M.ClosedChain(m, [M.LoopClosure('my_loop', 'b33', 'platform')]),
            ["loop 'my_loop': unknown link 'b33'"],
        ),
    ],
)
def test_closed_chain_arguments_are_checked_by_name(build, words: list) -> None:
    model = D.load_urdf(PLATFORM_PLUS)
    with pytest.raises(ValueError) as info:
        build(model)
    for w in words:
        assert w in str(info.value), str(info.value)
