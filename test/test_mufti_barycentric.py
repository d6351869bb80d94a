"""Trees of ball-and-socket joints (seed 001, section 3.1): the reduced forms of eqs. 14, 16,
28 and 38 against each other and the KKT system (eq. 10), against Pinocchio's ABA (an
independent oracle), the seed's properties of the augmented bodies (eqs. 26-31), the momentum
balance and a hand derivation.

Tolerances are norm-relative: ``||ours - ref|| <= tol * max(1, ||ref||)``.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from ffsim_ros.dynamics.mufti import barycentric as BC

try:  # Pinocchio is a test-only oracle: only the tests comparing with it need it
    import pinocchio as pin
except ImportError:  # pragma: no cover - exercised where pinocchio is not installed
    pin = None

needs_pinocchio = pytest.mark.skipif(pin is None, reason='pinocchio (test-only oracle) missing')


def rel_err(a, b) -> float:
    a, b = np.asarray(a, float), np.asarray(b, float)
    return float(np.linalg.norm(a - b) / max(1.0, np.linalg.norm(b)))


def skew(x: np.ndarray) -> np.ndarray:
    return np.array([[0, -x[2], x[1]], [x[2], 0, -x[0]], [-x[1], x[0], 0]])


def random_tree(rng: np.random.Generator, n: int, chain: bool, pins: float = 0.0) -> BC.BallTree:
    """Random tree; each hinge is a pin joint with probability ``pins`` (else a ball), and
    hinge 0 is a pin whenever ``pins > 0``."""
    parent = [-1] + [i - 1 if chain else int(rng.integers(0, i)) for i in range(1, n)]
    A = rng.normal(size=(n, 3, 3))
    inertia = 0.3 * A @ np.swapaxes(A, 1, 2) + 0.05 * np.eye(3)
    axes = rng.normal(size=(n - 1, 3))
    axes /= np.linalg.norm(axes, axis=1, keepdims=True)
    ball = rng.uniform(size=n - 1) >= pins
    ball[0] &= pins == 0.0
    axes[ball] = 0.0
    return BC.BallTree(
        np.array(parent),
        rng.uniform(0.3, 4.0, n),
        inertia,
        rng.normal(scale=0.5, size=(n - 1, 3)),
        rng.normal(scale=0.5, size=(n - 1, 3)),
        axes,
    )


def consistent_state(rng: np.random.Generator, tree: BC.BallTree):
    """Orientations and angular velocities obeying the pin joints (eq. 43), and the pin
    angles and rates ``(theta, theta')`` (zero at ball joints)."""
    n = tree.n
    R, w = random_state(rng, n)
    th, thd = np.zeros(n - 1), np.zeros(n - 1)
    for i in range(1, n):
        k, ax = tree.parent[i], tree.pin_axes[i - 1]
        if ax.any():
            th[i - 1], thd[i - 1] = rng.uniform(-3, 3), rng.normal(scale=2.0)
            R[i] = R[k] @ Rotation.from_rotvec(th[i - 1] * ax).as_matrix()
            w[i] = w[k] + thd[i - 1] * R[k] @ ax
    return R, w, th, thd


def random_state(rng: np.random.Generator, n: int):
    R = Rotation.random(n, random_state=rng).as_matrix()
    return R, rng.normal(scale=2.0, size=(n, 3))


def random_loads(rng: np.random.Generator, n: int):
    return rng.normal(size=(n, 3)), rng.normal(size=(n, 3)), rng.normal(size=(n - 1, 3))


def check_newton_euler_per_body(tree, R, w, F, G, g, sol, r0) -> None:
    """``sol`` satisfies eq. 10 body by body (eqs. 2, 3 with the hinge forces and the hinge
    torques ``g_j + g^c_j`` on the parent, minus on the child) and eq. 8 (each hinge point has
    one acceleration), to 1e-12: an independent check of the multipliers of a solution."""
    n = tree.n
    r = BC.com_positions(tree, R, r0)
    hinge = np.array(
        [
            r[tree.parent[j + 1]] + R[tree.parent[j + 1]] @ tree.hinge_in_parent[j]
            for j in range(n - 1)
        ]
    )
    Iw = R @ tree.inertia @ np.swapaxes(R, 1, 2)
    for i in range(n):
        force, torque = F[i].copy(), G[i].copy()
        for j in range(n - 1):
            c = tree.C[i, j]
            if c:
                force += c * sol.hinge_forces[j]
                torque += c * (
                    np.cross(hinge[j] - r[i], sol.hinge_forces[j])
                    + g[j]
                    + sol.constraint_torques[j]
                )
        assert rel_err(tree.mass[i] * sol.com_accelerations[i], force) < 1e-12
        euler = Iw[i] @ sol.angular_accelerations[i] + np.cross(w[i], Iw[i] @ w[i])
        assert rel_err(euler, torque) < 1e-12
    for j in range(n - 1):  # eq. 8: the hinge point has one acceleration
        acc = []
        for i in (tree.parent[j + 1], j + 1):
            lv = hinge[j] - r[i]
            wd = sol.angular_accelerations[i]
            acc.append(
                sol.com_accelerations[i] + np.cross(wd, lv) + np.cross(w[i], np.cross(w[i], lv))
            )
        assert rel_err(acc[0], acc[1]) < 1e-12


CASES = [(n, chain) for n in range(2, 11) for chain in (True, False) if n > 2 or chain]


# --------------------------------------------------------------------------------------------
# (a) all forms agree
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize('n,chain', CASES)
def test_all_forms_agree_on_random_ball_trees(n: int, chain: bool) -> None:
    rng = np.random.default_rng(1000 + 10 * n + chain)
    tree = random_tree(rng, n, chain)
    R, w = random_state(rng, n)
    F, G, g = random_loads(rng, n)
    ref = BC.ball_tree_dynamics(tree, R, w, forces=F, torques=G, hinge_torques=g, method='kkt')
    # the KKT solution satisfies eq. 10 body by body (eqs. 2, 3, 8)
    check_newton_euler_per_body(tree, R, w, F, G, g, ref, rng.normal(size=3))
    for method in BC.METHODS:
        sol = BC.ball_tree_dynamics(
            tree, R, w, forces=F, torques=G, hinge_torques=g, method=method
        )
        for name in ('angular_accelerations', 'com_accelerations', 'hinge_forces'):
            err = rel_err(getattr(sol, name), getattr(ref, name))
            assert err < 1e-10, (method, name, err)


# --------------------------------------------------------------------------------------------
# (b) Pinocchio's ABA as an independent oracle
# --------------------------------------------------------------------------------------------


def pinocchio_ball_tree(tree: BC.BallTree):
    """FreeFlyer root at its CoM, a spherical joint at every hinge (joint frame = body frame)."""
    model = pin.Model()
    model.gravity = pin.Motion.Zero()
    jid, origin = [], []  # origin: the CoM's position in the body's joint frame
    for i in range(tree.n):
        if i == 0:
            j = model.addJoint(0, pin.JointModelFreeFlyer(), pin.SE3.Identity(), 'b0')
            origin.append(np.zeros(3))
        else:
            k = tree.parent[i]
            at = origin[k] + tree.hinge_in_parent[i - 1]
            ax = tree.pin_axes[i - 1]
            jm = pin.JointModelRevoluteUnaligned(ax) if ax.any() else pin.JointModelSpherical()
            j = model.addJoint(jid[k], jm, pin.SE3(np.eye(3), at), f'b{i}')
            origin.append(-tree.hinge_in_child[i - 1])
        model.appendBodyToJoint(
            j, pin.Inertia(tree.mass[i], origin[i], tree.inertia[i]), pin.SE3.Identity()
        )
        jid.append(j)
    return model, jid, origin


def pinocchio_accelerations(tree, R, w, F, G, g, rd_root, th=None, thd=None):
    model, jid, origin = pinocchio_ball_tree(tree)
    data = model.createData()
    q, v, tau = [], [], []
    for i in range(tree.n):
        if i == 0:
            q += [np.zeros(3), Rotation.from_matrix(R[0]).as_quat()]  # (x, y, z, w)
            v += [R[0].T @ rd_root, R[0].T @ w[0]]
            tau.append(np.zeros(6))
        elif tree.pin_axes[i - 1].any():  # pin joint: angle, rate, axial torque on the child
            q.append([th[i - 1]])
            v.append([thd[i - 1]])
            tau.append([-g[i - 1] @ (R[tree.parent[i]] @ tree.pin_axes[i - 1])])
        else:
            k = tree.parent[i]
            q.append(Rotation.from_matrix(R[k].T @ R[i]).as_quat())
            v.append(R[i].T @ (w[i] - w[k]))  # relative angular velocity, child frame
            tau.append(-R[i].T @ g[i - 1])  # the child receives -g_j
    q, v, tau = np.concatenate(q), np.concatenate(v), np.concatenate(tau)
    fext = [pin.Force.Zero() for _ in range(model.njoints)]
    for i in range(tree.n):
        f_loc = R[i].T @ F[i]
        n_loc = R[i].T @ G[i] + np.cross(origin[i], f_loc)  # about the joint origin
        fext[jid[i]] = pin.Force(f_loc, n_loc)
    ddq = pin.aba(model, data, q, v, tau, fext)
    pin.forwardKinematics(model, data, q, v, ddq)
    wd, rdd = np.zeros((tree.n, 3)), np.zeros((tree.n, 3))
    for i in range(tree.n):
        a, vel = data.a[jid[i]], data.v[jid[i]]
        c = origin[i]
        vc = vel.linear + np.cross(vel.angular, c)
        wd[i] = R[i] @ a.angular
        rdd[i] = R[i] @ (a.linear + np.cross(a.angular, c) + np.cross(vel.angular, vc))
    return wd, rdd


@needs_pinocchio
@pytest.mark.parametrize('n,chain', [(2, True), (4, True), (5, False), (7, False), (10, False)])
def test_forms_match_pinocchio_aba(n: int, chain: bool) -> None:
    rng = np.random.default_rng(2000 + n)
    tree = random_tree(rng, n, chain)
    R, w = random_state(rng, n)
    F, G, g = random_loads(rng, n)
    wd_ref, rdd_ref = pinocchio_accelerations(tree, R, w, F, G, g, rng.normal(size=3))
    for method in BC.METHODS:
        sol = BC.ball_tree_dynamics(
            tree, R, w, forces=F, torques=G, hinge_torques=g, method=method
        )
        assert rel_err(sol.angular_accelerations, wd_ref) < 1e-9, method
        assert rel_err(sol.com_accelerations[0], rdd_ref[0]) < 1e-9, method
        assert rel_err(sol.com_accelerations, rdd_ref) < 1e-9, method


# --------------------------------------------------------------------------------------------
# section 3.2: pin joints (eqs. 42-51) on the same forms
# --------------------------------------------------------------------------------------------


PIN_CASES = [(2, True), (4, False), (6, True), (9, False)]


def pin_joint_case(n: int, chain: bool):
    rng = np.random.default_rng(7000 + n)
    tree = random_tree(rng, n, chain, pins=0.6)
    R, w, th, thd = consistent_state(rng, tree)
    return rng, tree, R, w, th, thd, random_loads(rng, n)


@pytest.mark.parametrize('n,chain', PIN_CASES)
def test_pin_joints_eq51_forms_agree(n: int, chain: bool) -> None:
    _, tree, R, w, _, thd, (F, G, g) = pin_joint_case(n, chain)
    kkt = BC.ball_tree_dynamics(tree, R, w, forces=F, torques=G, hinge_torques=g, method='kkt')
    # the KKT solution (hinge forces and constraint torques included) solves eq. 10 body by body
    check_newton_euler_per_body(tree, R, w, F, G, g, kkt, np.zeros(3))
    pins = np.linalg.norm(tree.pin_axes, axis=1) > 0
    assert pins.any()
    for method in BC.METHODS:
        sol = BC.ball_tree_dynamics(
            tree, R, w, forces=F, torques=G, hinge_torques=g, method=method
        )
        for name in (
            'angular_accelerations',
            'com_accelerations',
            'hinge_forces',
            'constraint_torques',
        ):
            assert rel_err(getattr(sol, name), getattr(kkt, name)) < 1e-10, (method, name)
        # eq. 54: no constraint torque along a pin axis, none at all at a ball joint
        gc = sol.constraint_torques
        for j in range(n - 1):
            k = R[tree.parent[j + 1]] @ tree.pin_axes[j]
            assert abs(gc[j] @ k) < 1e-10 * max(1.0, np.abs(gc).max())
            if not pins[j]:
                np.testing.assert_array_equal(gc[j], 0.0)
        # the relative angular acceleration at a pin joint stays along the axis (eq. 48)
        for j in np.flatnonzero(pins):
            k = R[tree.parent[j + 1]] @ tree.pin_axes[j]
            wk = w[tree.parent[j + 1]]
            rel = sol.angular_accelerations[j + 1] - sol.angular_accelerations[tree.parent[j + 1]]
            # d/dt (w_- - w_+) = k theta'' + (w_+ x k) theta'
            perp = rel - np.cross(wk, k) * thd[j]
            assert np.linalg.norm(perp - (perp @ k) * k) < 1e-10 * max(1.0, np.linalg.norm(rel))


@needs_pinocchio
@pytest.mark.parametrize('n,chain', PIN_CASES)
def test_pin_joints_eq51_forms_match_pinocchio(n: int, chain: bool) -> None:
    rng, tree, R, w, th, thd, (F, G, g) = pin_joint_case(n, chain)
    wd_ref, rdd_ref = pinocchio_accelerations(tree, R, w, F, G, g, rng.normal(size=3), th, thd)
    for method in BC.METHODS:
        sol = BC.ball_tree_dynamics(
            tree, R, w, forces=F, torques=G, hinge_torques=g, method=method
        )
        assert rel_err(sol.angular_accelerations, wd_ref) < 1e-9, method
        assert rel_err(sol.com_accelerations, rdd_ref) < 1e-9, method


# --------------------------------------------------------------------------------------------
# (c) the augmented bodies and the barycentric vectors (eqs. 26-31, 35)
# --------------------------------------------------------------------------------------------


def hinge_toward(tree: BC.BallTree, i: int, k: int) -> int:
    """The hinge of body i through which body k is connected to i."""
    path = [k]
    while path[-1] != 0:
        path.append(tree.parent[path[-1]])
    if i in path:  # k is below i: the hinge into the child of i on the path
        return path[path.index(i) - 1] - 1
    return i - 1  # otherwise through the hinge into i


@pytest.mark.parametrize('n,chain', [(2, True), (3, False), (6, False), (9, True), (10, False)])
def test_augmented_bodies_and_barycentric_vectors(n: int, chain: bool) -> None:
    rng = np.random.default_rng(3000 + n)
    tree = random_tree(rng, n, chain)
    m = tree.total_mass
    aug = BC.augmented_bodies(tree)
    d = BC.barycentric_vectors(tree)  # D = -L T_2 mu, body frames
    # every augmented body has the total mass m (after eq. 29)
    np.testing.assert_allclose(aug.mass, m, rtol=1e-14)
    # the seed's example of Fig. 3a: on body 2 the masses m1 + m3, m4, m5, m6 at its hinges
    # (checked on the general tree: the hinge mass is the mass on the far side of the hinge)
    for i in range(n):
        for j in range(n - 1):
            if tree.C[i, j]:
                far = [k for k in range(n) if k != i and hinge_toward(tree, i, k) == j]
                assert aug.hinge_masses[i, j] == pytest.approx(tree.mass[far].sum(), rel=1e-14)
    for i in range(n):
        # d_ii: barycenter -> C_i; d_ik: barycenter -> the hinge toward k (after eq. 29)
        assert rel_err(d[i, i], -aug.barycenter[i]) < 1e-13
        for k in range(n):
            if k != i:
                j = hinge_toward(tree, i, k)
                assert rel_err(d[i, k], tree.l[i, j] - aug.barycenter[i]) < 1e-13
        # the barycenter is the centre of mass of the point masses m_k at d_ik
        assert np.linalg.norm(tree.mass @ d[i]) < 1e-13 * m
    # eq. 30: the diagonal blocks of D~ M D~^T = inertia of the point masses about the
    # barycenter; eq. 31: the off-diagonal blocks = m d~_ij d~_ji; eq. 35: K = I + D~ M D~^T
    R, _ = random_state(rng, n)
    dw = np.einsum('iab,ikb->ika', R, d)
    DMD = np.zeros((3 * n, 3 * n))
    for i in range(n):
        for j in range(n):
            DMD[3 * i : 3 * i + 3, 3 * j : 3 * j + 3] = sum(
                tree.mass[k] * skew(dw[i, k]) @ skew(dw[j, k]).T for k in range(n)
            )
    for i in range(n):
        pts = [(tree.mass[i], -aug.barycenter[i])] + [
            (aug.hinge_masses[i, j], tree.l[i, j] - aug.barycenter[i])
            for j in range(n - 1)
            if tree.C[i, j]
        ]
        J_pts = sum(mk * (p @ p * np.eye(3) - np.outer(p, p)) for mk, p in pts)
        blk = DMD[3 * i : 3 * i + 3, 3 * i : 3 * i + 3]
        assert rel_err(blk, R[i] @ J_pts @ R[i].T) < 1e-13
        assert rel_err(aug.inertia[i], tree.inertia[i] + J_pts) < 1e-13
        for j in range(n):
            if j != i:
                blk = DMD[3 * i : 3 * i + 3, 3 * j : 3 * j + 3]
                assert rel_err(blk, m * skew(dw[i, j]) @ skew(dw[j, i])) < 1e-13
    Iw = np.zeros((3 * n, 3 * n))
    for i in range(n):
        Iw[3 * i : 3 * i + 3, 3 * i : 3 * i + 3] = R[i] @ tree.inertia[i] @ R[i].T
    K = BC.system_inertia(tree, R)
    assert rel_err(K, Iw + DMD) < 1e-13
    assert np.linalg.eigvalsh(K).min() > 0.0


@pytest.mark.parametrize('n,chain', [(2, True), (6, False), (8, True)])
def test_analytic_inverse_of_the_translational_lagrangian(n: int, chain: bool) -> None:
    """Eqs. 17-27: T_1 = -1^T, B = T_2 mu = A C^T M^-1, A = B M B^T = (C^T M^-1 C)^-1, and
    eq. 19's blocks equal the numerical inverse of [[M, -C], [-C^T, 0]]."""
    rng = np.random.default_rng(4000 + n)
    tree = random_tree(rng, n, chain)
    C, T2, Mm, m = tree.C, tree.T2, np.diag(tree.mass), tree.total_mass
    A_num = np.linalg.inv(C.T @ np.linalg.inv(Mm) @ C)
    B = tree.B
    np.testing.assert_allclose(T2 @ C, np.eye(n - 1), atol=1e-14)
    assert rel_err(B, A_num @ C.T @ np.linalg.inv(Mm)) < 1e-12  # eqs. 18, 26
    assert rel_err(B @ Mm @ B.T, A_num) < 1e-12  # eq. 27
    mu = tree.mu
    assert rel_err(mu @ Mm @ mu.T, Mm @ mu.T) < 1e-13  # the identity used in eq. 27
    E = np.ones((n, n)) / m  # eq. 26
    inv19 = np.block(
        [[E, E @ Mm @ T2.T - T2.T], [T2 @ Mm @ E - T2, T2 @ Mm @ E @ Mm @ T2.T - T2 @ Mm @ T2.T]]
    )
    lag = np.block([[Mm, -C], [-C.T, np.zeros((n - 1, n - 1))]])
    assert rel_err(inv19 @ lag, np.eye(2 * n - 1)) < 1e-12


# --------------------------------------------------------------------------------------------
# (d) momentum balance
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize('external', [False, True])
@pytest.mark.parametrize('n,chain', [(3, True), (6, False), (10, False)])
def test_momentum_rate_equals_external_wrench(n: int, chain: bool, external: bool) -> None:
    """d/dt P = sum F_i and d/dt H_O = sum (r_i x F_i + G_i): the hinge forces and torques
    are internal, so a free system (no F, G; any hinge torques) conserves its momentum."""
    rng = np.random.default_rng(5000 + n + 100 * external)
    tree = random_tree(rng, n, chain)
    R, w = random_state(rng, n)
    F, G, g = random_loads(rng, n)
    if not external:
        F, G = np.zeros((n, 3)), np.zeros((n, 3))
    r = BC.com_positions(tree, R, rng.normal(size=3))
    Iw = R @ tree.inertia @ np.swapaxes(R, 1, 2)
    for method in BC.METHODS:
        sol = BC.ball_tree_dynamics(
            tree, R, w, forces=F, torques=G, hinge_torques=g, method=method
        )
        mr = tree.mass[:, None] * sol.com_accelerations
        dP = mr.sum(axis=0)
        dH = (
            np.cross(r, mr)
            + np.einsum('iab,ib->ia', Iw, sol.angular_accelerations)
            + np.cross(w, np.einsum('iab,ib->ia', Iw, w))
        ).sum(axis=0)
        scale = max(1.0, np.abs(mr).max(), np.abs(np.cross(r, mr)).max())
        assert np.linalg.norm(dP - F.sum(axis=0)) < 1e-10 * scale, method
        assert np.linalg.norm(dH - (np.cross(r, F) + G).sum(axis=0)) < 1e-10 * scale, method


# --------------------------------------------------------------------------------------------
# hand derivations and inputs
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize('method', BC.METHODS)
def test_two_spinning_bodies_centripetal_hinge_force(method: str) -> None:
    """Two bodies on one ball joint spinning rigidly at W about z (principal axes): w' = 0,
    each CoM circles the system CoM, and the hinge force is the centripetal one,
    f = m1 m2 / (m1 + m2) W^2 (a + b) x (on the parent, towards the child)."""
    m1, m2, a, b, W = 2.0, 3.0, 0.4, 0.7, 1.7
    tree = BC.BallTree(
        np.array([-1, 0]),
        np.array([m1, m2]),
        np.array([np.diag([0.1, 0.2, 0.3]), np.diag([0.4, 0.25, 0.35])]),
        np.array([[a, 0.0, 0.0]]),
        np.array([[-b, 0.0, 0.0]]),
    )
    sol = BC.ball_tree_dynamics(
        tree, np.stack([np.eye(3)] * 2), np.array([[0, 0, W], [0, 0, W]]), method=method
    )
    f = m1 * m2 / (m1 + m2) * W**2 * (a + b)
    np.testing.assert_allclose(sol.hinge_forces, [[f, 0, 0]], rtol=1e-13, atol=1e-13)
    np.testing.assert_allclose(sol.angular_accelerations, 0.0, atol=1e-13)
    # circular motion about the system CoM at x_c = m2 (a + b) / m
    xc = m2 * (a + b) / (m1 + m2)
    np.testing.assert_allclose(sol.com_accelerations[0], [W**2 * xc, 0, 0], rtol=1e-13)
    np.testing.assert_allclose(
        sol.com_accelerations[1], [-(W**2) * (a + b - xc), 0, 0], rtol=1e-13
    )


def test_single_body_is_euler_and_bad_inputs_raise() -> None:
    rng = np.random.default_rng(6)
    one = BC.BallTree(
        np.array([-1]),
        np.array([2.0]),
        np.diag([1.0, 2.0, 3.0])[None],
        np.zeros((0, 3)),
        np.zeros((0, 3)),
    )
    R, w = random_state(rng, 1)
    F, G = rng.normal(size=(1, 3)), rng.normal(size=(1, 3))
    sol = BC.ball_tree_dynamics(one, R, w, forces=F, torques=G)
    Iw = R[0] @ one.inertia[0] @ R[0].T
    assert rel_err(Iw @ sol.angular_accelerations[0] + np.cross(w[0], Iw @ w[0]), G[0]) < 1e-14
    assert rel_err(sol.com_accelerations, F / 2.0) < 1e-15
    tree = random_tree(rng, 3, chain=False)
    R, w = random_state(rng, 3)
    with pytest.raises(ValueError, match="method: expected one of .*'eq38'"):
        BC.ball_tree_dynamics(tree, R, w, method='eq99')
    with pytest.raises(ValueError, match=r'w: expected shape \(3, 3\), got \(2, 3\)'):
        BC.ball_tree_dynamics(tree, R, w[:2])
    with pytest.raises(ValueError, match=r'hinge_torques: expected shape \(2, 3\)'):
        BC.ball_tree_dynamics(tree, R, w, hinge_torques=np.zeros((3, 3)))
    with pytest.raises(ValueError, match='R: expected rotation matrices'):
        BC.ball_tree_dynamics(tree, 2 * R, w)
    mirrored = R.copy()
    mirrored[2] = R[2] @ np.diag([1.0, -1.0, 1.0])  # orthogonal, det -1: was accepted once
    with pytest.raises(ValueError) as info:
        BC.ball_tree_dynamics(tree, mirrored, w)
    assert str(info.value).startswith(
        'R: expected rotation matrices (orthonormal, det +1), got R[2] with R R^T - E up to '
    ) and str(info.value).endswith(' and det -1'), str(info.value)
    base = dict(
        mass=np.ones(3),
        inertia=np.stack([np.eye(3)] * 3),
        hinge_in_parent=np.zeros((2, 3)),
        hinge_in_child=np.zeros((2, 3)),
    )
    with pytest.raises(ValueError, match='regular labeling'):
        BC.BallTree(parent=np.array([-1, 2, 0]), **base)
    with pytest.raises(ValueError, match='mass: expected positive'):
        BC.BallTree(parent=np.array([-1, 0, 0]), **{**base, 'mass': np.array([1.0, 0.0, 1.0])})
    with pytest.raises(ValueError, match='positive definite'):
        BC.BallTree(parent=np.array([-1, 0, 0]), **{**base, 'inertia': np.zeros((3, 3, 3))})
    with pytest.raises(ValueError, match='pin_axes: expected unit or zero rows'):
        BC.BallTree(parent=np.array([-1, 0, 0]), **base, pin_axes=np.ones((2, 3)))
    with pytest.raises(ValueError, match=r'hinge_in_child: expected shape \(2, 3\)'):
        BC.BallTree(parent=np.array([-1, 0, 0]), **{**base, 'hinge_in_child': np.zeros((3, 3))})
