"""The compiled closed-chain solver (``ClosedChain(method='aba')``, kernels/constrained.py)
against the maximal-coordinate references ``kkt``, ``nullspace`` and ``multipliers``
[M eqs. 10, 49, 63] and against Pinocchio's ``constraintDynamics`` on the floating platform.

Every field of the solution is compared: generalized and body accelerations, the multipliers
and wrench of each cut hinge, the tree's hinge forces and constraint torques, rank and row
count -- on the sample loops (planar four-bar, fixed and tumbling, with ball / revolute / weld
cuts; the spatial loop; the floating platform with two ball loops) and on random trees of
mixed joints closed by random cut hinges, on and off the constraint manifold (Baumgarte terms
of [M Remark 4]), with base and link wrenches and joint friction.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from pinocchio_twin import pinocchio_twin
from vector_layouts import LAYOUTS, laid_out

from ffsim_ros import dynamics as D
from ffsim_ros.dynamics import mufti as M
from ffsim_ros.dynamics.builder import ModelBuilder, random_configuration, random_model
from ffsim_ros.dynamics.kernels.constrained import sweep_ws_size, tree_sweep
from ffsim_ros.dynamics.kernels.layout import ModelArrays
from ffsim_ros.dynamics.kernels.loop_responses import responses_ws_size, unit_responses
from ffsim_ros.dynamics.lie import quat_to_matrix
from ffsim_ros.dynamics.mufti import samples as S
from ffsim_ros.dynamics.mufti.tree import bodies

try:  # Pinocchio is a test-only oracle
    import pinocchio as pin
except ImportError:  # pragma: no cover
    pin = None

needs_pinocchio = pytest.mark.skipif(pin is None, reason='pinocchio (test-only oracle) missing')

#: Agreement bound (relative to max(1, |reference|)) with each reference solver: 1e-12, and
#: 5e-12 with the dense null-space form (itself 1.9e-12 off ABA on trees, docs/mufti.md).
REFERENCES = {'kkt': 1e-12, 'nullspace': 5e-12, 'multipliers': 1e-12}
BOUND = 5e-12
MIXED = ('revolute', 'prismatic', 'spherical', 'universal')


def rel_err(a, b) -> float:
    a, b = np.asarray(a, float), np.asarray(b, float)
    return float(np.linalg.norm(a - b) / max(1.0, np.linalg.norm(b)))


def worst_difference(sol, ref) -> dict[str, float]:
    """Relative difference of every field of two ClosedChainSolutions."""
    out = {
        'a': rel_err(sol.a, ref.a),
        'body_accelerations': rel_err(sol.body_accelerations, ref.body_accelerations),
        'hinge_forces': rel_err(sol.hinge_forces, ref.hinge_forces),
        'constraint_torques': rel_err(sol.constraint_torques, ref.constraint_torques),
    }
    for name in ref.multipliers:
        out[f'multipliers[{name}]'] = rel_err(sol.multipliers[name], ref.multipliers[name])
        out[f'loop_wrenches[{name}]'] = rel_err(sol.loop_wrenches[name], ref.loop_wrenches[name])
    assert (sol.rank, sol.n_rows) == (ref.rank, ref.n_rows)
    return out


def check_against_references(chain, q, v, tau, **kw) -> float:
    """Assert the 'aba' solution equals every reference to BOUND; return the worst."""
    with warnings.catch_warnings():
        warnings.simplefilter('ignore', M.RedundantConstraintWarning)
        sol = chain.dynamics(q, v, tau, method='aba', **kw)
        worst = 0.0
        for method in REFERENCES:
            diff = worst_difference(sol, chain.dynamics(q, v, tau, method=method, **kw))
            field, err = max(diff.items(), key=lambda kv: kv[1])
            assert err < BOUND, (method, field, err)
            worst = max(worst, err)
    return worst


def fourbar(kind: str) -> tuple[M.ClosedChain, np.ndarray, np.ndarray]:
    """The fixed four-bar in gravity, with joint damping and Coulomb friction on."""
    urdf = S.fourbar_urdf().replace('<limit ', '<dynamics damping="0.2" friction="0.1"/><limit ')
    model = D.with_joint_dynamics(D.load_urdf(urdf, floating_base=False, gravity=(0, -9.81, 0)))
    assert model.arrays.friction.max() == 0.1
    chain = M.ClosedChain(model, [S.fourbar_cut(kind)])
    with warnings.catch_warnings():
        warnings.simplefilter('ignore', M.RedundantConstraintWarning)
        q, v = chain.assemble([1.2, -0.9, -1.5], [0.8, 0, 0], locked=['j1'])
    return chain, q, v


SAMPLES = {
    'fourbar-ball': lambda: fourbar('ball'),
    'fourbar-revolute': lambda: fourbar('revolute'),
    **S.TUMBLING_LOOPS,
    'platform': S.tumbling_platform,
}


@pytest.mark.parametrize('name', list(SAMPLES))
def test_sample_loops_equal_the_references(name: str) -> None:
    """On the manifold and off it (Baumgarte terms active), with efforts, base and link
    wrenches."""
    chain, q, v = SAMPLES[name]()
    model = chain.model
    rng = np.random.default_rng(len(name))
    tau = rng.normal(size=model.n)
    kw = {'link_wrenches': {model.link_names[-1]: rng.normal(size=6)}}
    if model.floating_base:
        kw['base_wrench'] = rng.normal(size=6)
    assert check_against_references(chain, q, v, tau, **kw) < BOUND
    # off the manifold: the position and velocity errors enter through Baumgarte's terms
    qo = D.integrate(model, q, 1e-3 * rng.normal(size=model.nv))
    vo = v + 1e-2 * rng.normal(size=model.nv)
    assert np.abs(chain.constraint_error(qo, vo)[0]).max() > 1e-5
    assert check_against_references(chain, qo, vo, tau, **kw) < BOUND
    # and the Baumgarte terms matter there: the plain system gives other accelerations
    a_plain = chain.dynamics(qo, vo, tau, stabilize=False, **kw).a
    assert rel_err(a_plain, chain.dynamics(qo, vo, tau, **kw).a) > 1e-4


def random_closed_chain(seed: int, floating: bool) -> tuple[M.ClosedChain, np.ndarray]:
    """A random tree of mixed joints closed by two random cut hinges,
    placed where the configuration ``q`` has them closed (hinge frames coincide)."""
    rng = np.random.default_rng(seed)
    model = random_model(
        seed, 9, joint_types=MIXED, gravity=(0.2, -0.1, -9.81), floating_base=floating
    )
    q = random_configuration(model, rng)
    R, p = D.body_poses(model, q)
    nb = model.arrays.parent.shape[0]
    loops = []
    for k, kind in enumerate(rng.permutation(M.closed.LOOP_KINDS)[:2]):
        a, b = rng.choice(np.arange(1 if k else 0, nb), size=2, replace=False)
        ra = np.linalg.qr(rng.normal(size=(3, 3)))[0]
        ra *= np.sign(np.linalg.det(ra))
        ta = rng.normal(size=3) * 0.2
        # the same frame seen from body b
        Rw, ow = R[a] @ ra, p[a] + R[a] @ ta
        loops.append(
            M.LoopClosure(
                f'loop{k}_{kind}',
                f'body_{a}',
                f'body_{b}',
                kind,
                rotation_a=ra,
                translation_a=ta,
                rotation_b=R[b].T @ Rw,
                translation_b=R[b].T @ (ow - p[b]),
            )
        )
    return M.ClosedChain(model, loops), q


@pytest.mark.parametrize('seed', [2, 3, 4, 5, 6, 8])
def test_random_trees_with_loops_equal_the_references(seed: int) -> None:
    """Random floating and fixed trees closed by two random hinges; seeds whose rows are
    independent across hinges (redundancy within a hinge allowed: seeds 5, 6, 8), where the
    multipliers are unique up to the per-hinge minimum norm."""
    chain, q = random_closed_chain(seed, floating=seed % 2 == 1)
    model = chain.model
    rng = np.random.default_rng(100 + seed)
    xi, _ = chain.constraint_error(q, np.zeros(model.nv))
    assert np.abs(xi).max() < 1e-12  # the loops are closed at q
    bd = bodies(model, q, np.zeros(model.nv))
    per_hinge = sum(
        lp.rows - (lp.rows if U is None else U.shape[1])
        for lp, U in zip(
            chain.loops, chain.independent_rows(bd, chain.loop_rows(bd)[0]), strict=True
        )
    )
    v = rng.normal(size=model.nv)  # off the velocity manifold: Baumgarte's alpha term acts
    tau = rng.normal(size=model.n)
    kw = {'link_wrenches': {'body_3': rng.normal(size=6)}}
    if model.floating_base:
        kw['base_wrench'] = rng.normal(size=6)
    with warnings.catch_warnings():
        warnings.simplefilter('ignore', M.RedundantConstraintWarning)
        sol = chain.dynamics(q, v, tau, method='kkt', **kw)
    assert sol.rank == sol.n_rows - per_hinge  # no dependence across hinges
    assert check_against_references(chain, q, v, tau, **kw) < BOUND
    qo = D.integrate(model, q, 1e-3 * rng.normal(size=model.nv))
    assert check_against_references(chain, qo, v, tau, stabilize=False) < BOUND


@pytest.mark.parametrize('seed', [0, 1, 2, 3])
def test_side_by_side_responses_equal_the_dense_solve(seed: int) -> None:
    """``unit_responses`` (every row's test response in one backward and one forward sweep,
    the rows innermost) against ``M^-1 C^T`` by the dense mass matrix: the joint accelerations
    ``H^-1 (J_a - J_b)^T w`` of a unit wrench ``w`` on body ``a`` and ``-w`` on ``b`` (no
    velocity, no gravity), and the body accelerations ``J_i qdd`` at O -- on random trees of
    revolute, prismatic, ball and universal joints, floating and fixed, 1 to 17 rows (one to
    three blocks of 4, 6 or 8), the first row on the root; each row the same to the bit as
    its response alone (the module's claim: a row's operations are those of its own pass)."""
    model = random_model(seed, 9, joint_types=MIXED, floating_base=seed % 2 == 0)
    rng = np.random.default_rng(40 + seed)
    q = random_configuration(model, rng)
    arrays = ModelArrays(*(np.array(a) for a in model.arrays))  # (writeable: the kernels' type)
    nb, nv = arrays.parent.shape[0], model.nv
    zeros = np.zeros(nv)
    qdd, acc = np.empty(nv), np.empty((nb, 6))
    ws = np.empty(sweep_ws_size(nb, nv))
    _, _, S_, _, U, Dinv = tree_sweep(
        arrays, q, zeros, zeros, np.empty((0, 6)), False, qdd, acc, ws, False
    )
    H = D.mass_matrix(model, q)
    on_path = np.zeros((nb, nv), dtype=bool)  # joints between body i and the root
    for i in range(nb):
        k = i
        while k >= 0:
            c = arrays.iv[k]
            on_path[i, c : c + arrays.nvj[k]] = True
            k = arrays.parent[k]
    J = [np.where(on_path[i], S_, 0.0) for i in range(nb)]  # (6, nv) each, at O
    ws = np.empty(responses_ws_size(nb, nv))  # (the views above keep the sweep's alive)
    for K in (1, 3, 4, 5, 6, 7, 8, 9, 13, 14, 17):
        W = rng.normal(size=(K, 6))
        rows_a = rng.integers(0, nb, size=K)
        rows_a[0] = 0  # a row on the root
        rows_b = (rows_a + 1 + rng.integers(0, nb - 1, size=K)) % nb
        Mq, Ma = np.full((K, nv), np.nan), np.full((K, nb, 6), np.nan)
        unit_responses(
            arrays, S_, U, Dinv, W, rows_a, rows_b, Mq, Ma, np.empty(responses_ws_size(nb, nv))
        )
        for j in range(K):
            force = (J[rows_a[j]] - J[rows_b[j]]).T @ W[j]
            ref = np.linalg.solve(H, force)
            assert np.abs(Mq[j] - ref).max() <= 1e-10 * max(1.0, np.abs(ref).max()), (K, j)
            body = np.stack([J[i] @ ref for i in range(nb)])
            assert np.abs(Ma[j] - body).max() <= 1e-10 * max(1.0, np.abs(body).max()), (K, j)
            alone_q, alone_a = np.empty((1, nv)), np.empty((1, nb, 6))
            unit_responses(
                arrays, S_, U, Dinv, W[j : j + 1], rows_a[j : j + 1], rows_b[j : j + 1],
                alone_q, alone_a, ws,
            )  # fmt: skip
            assert np.array_equal(Mq[j], alone_q[0]) and np.array_equal(Ma[j], alone_a[0])


def test_loop_repeated_across_hinges_gives_half_the_multipliers() -> None:
    """Two identical cut hinges: rows dependent across hinges (a singular Delassus matrix):
    same accelerations as one hinge, the minimum-norm split (half each), as ``kkt``."""
    chain, q, v = S.tumbling_spatial_loop('ball')
    one = chain.dynamics(q, v, np.ones(7), method='aba')
    cut = S.spatial_loop_cut('ball')
    twin = M.LoopClosure(
        'twin', cut.link_a, cut.link_b, 'ball', translation_a=S.TIP_A, translation_b=S.TIP_B
    )
    double = M.ClosedChain(chain.model, [cut, twin])
    sol = double.dynamics(q, v, np.ones(7), method='aba')
    ref = double.dynamics(q, v, np.ones(7), method='kkt')
    assert rel_err(sol.a, one.a) < 1e-10
    for name in ('tips', 'twin'):
        assert rel_err(sol.multipliers[name], 0.5 * one.multipliers['tips']) < 1e-10
        assert rel_err(sol.multipliers[name], ref.multipliers[name]) < 1e-10
    assert rel_err(sol.a, ref.a) < 1e-10


def _bar(mass: float, length: float) -> dict:
    """A slender bar along x from the joint: mass, CoM and inertia for ``add_body``."""
    izz = mass * length * length / 12
    return dict(mass=mass, com=(length / 2, 0, 0), inertia=[mass * 1e-4, 0, 0, izz, 0, izz])


def folded_fourbar(kind: str, delta: float) -> tuple[M.ClosedChain, np.ndarray, np.ndarray]:
    """A planar four-bar modelled spatially (fixed base, joints about z, gravity in the plane),
    cut at the rocker's tip by a ``kind`` hinge closed at ``q = [0.2, delta, -delta / 2]``:
    crank, coupler and rocker nearly in line, the loop ``delta`` from its folded singularity
    (the in-plane loop Jacobian's singular-value ratio ~1.1 delta). Returns the chain, ``q``
    and the in-plane loop Jacobian ``J`` (2, 3) of the rocker tip."""
    b = ModelBuilder('fb4', floating_base=False, gravity=(0, -9.81, 0))
    b.add_base('ground', mass=5.0, com=(0.5, 0, 0), inertia=[0.1, 0, 0, 0.4, 0, 0.45])
    for name, parent, x, m, length in (
        ('crank', 'ground', 0.0, 1.0, 0.5),
        ('coupler', 'crank', 0.5, 2.0, 1.0),
        ('rocker', 'coupler', 1.0, 1.5, 0.4),
    ):
        kw = dict(joint=f'j_{name}', joint_type='revolute', xyz=(x, 0, 0), axis=(0, 0, 1))
        b.add_body(name, parent=parent, **kw, **_bar(m, length))
    model = b.build()
    q = np.array([0.2, delta, -0.5 * delta])
    p, R = D.link_pose(model, q, 'rocker')
    tip = p + R @ [0.4, 0, 0]
    pg, Rg = D.link_pose(model, q, 'ground')
    cut = M.LoopClosure(
        'cut', 'rocker', 'ground', kind, translation_a=[0.4, 0, 0], translation_b=Rg.T @ (tip - pg)
    )
    Jr = D.link_jacobian(model, q, 'rocker')
    J = (Jr[:3] - np.cross(R @ [0.4, 0, 0], Jr[3:].T).T)[:2]  # the tip's in-plane velocity
    return M.ClosedChain(model, [cut]), q, J


@pytest.mark.parametrize('kind', ['ball', 'revolute'])
@pytest.mark.parametrize('delta', [1e-5, 1e-6])
def test_nearly_folded_loop_keeps_its_independent_rows(kind: str, delta: float) -> None:
    """Near a loop singularity the in-plane rows are still independent (singular-value ratio
    ~1e-6, 1e-7: far above the 1e-9 threshold); the Delassus matrix squares that ratio, and its
    pseudo-inverse, cut at 1e-9 of its own largest eigenvalue, dropped one: rank one short, 45 %
    off in the accelerations. Now the rank is decided on the rows: the rank of the references,
    and the accelerations of Gauss's principle on the null space of the loop Jacobian
    (independent of the package's loop rows) and of ``nullspace`` to 1e-8."""
    chain, q, J = folded_fourbar(kind, delta)
    model = chain.model
    sv = np.linalg.svd(J, compute_uv=False)
    assert 1e-8 < sv[1] / sv[0] < 2e-6
    v = np.zeros(model.nv)  # at rest: C a = 0 exactly
    tau = np.array([0.3, -0.2, 0.1])
    Mm = D.mass_matrix(model, q)
    a_free = np.linalg.solve(Mm, tau - D.bias_forces(model, q, v))
    Z = np.linalg.svd(J)[2][2:].T  # the loop's one degree of freedom
    a_ref = Z @ np.linalg.solve(Z.T @ Mm @ Z, Z.T @ Mm @ a_free)
    n_tree = 6 * model.arrays.parent.shape[0] - model.nv
    with warnings.catch_warnings():
        warnings.simplefilter('ignore', M.RedundantConstraintWarning)
        sol = chain.dynamics(q, v, tau, method='aba', stabilize=False)
        ref = chain.dynamics(q, v, tau, method='nullspace', stabilize=False)
    assert sol.rank == ref.rank == n_tree + 2  # the two in-plane rows
    assert rel_err(sol.a, a_ref) < 1e-8  # measured 3e-11 (delta 1e-5), 4e-10 (1e-6)
    assert np.linalg.norm(sol.a - ref.a) < 1e-8 * np.linalg.norm(ref.a)
    assert np.linalg.norm(J @ sol.a) < 1e-8 * np.linalg.norm(sol.a)
    assert np.array_equal(chain.acceleration(q, v, tau, stabilize=False), sol.a)


def closure_on_a_joint(kind: str) -> tuple[M.ClosedChain, np.ndarray, np.ndarray, np.ndarray]:
    """A floating base and one revolute link, closed by a ``kind`` cut hinge placed on the
    link's own joint (hinge frames = the joint frame, z its axis): the closure adds no
    constraint, the exact answer is the free tree's."""
    b = ModelBuilder('r', floating_base=True)
    b.add_base('base', mass=10, inertia=[1, 0, 0, 1, 0, 1])
    joint = dict(joint='j1', joint_type='revolute', xyz=(0.3, 0.1, 0.2), rpy=(0.3, 0.2, 0.1))
    inertia = dict(mass=1, com=(0.5, 0, 0), inertia=[0.01, 0, 0, 0.1, 0, 0.1])
    b.add_body('l1', parent='base', axis=(0, 0, 1), **joint, **inertia)
    model = b.build()
    q = D.neutral(model)
    q[-1] = 0.7
    p, R = D.link_pose(model, q, 'l1')
    pb, Rb = D.link_pose(model, q, 'base')
    cut = M.LoopClosure(
        'on_j1', 'l1', 'base', kind, rotation_b=Rb.T @ R, translation_b=Rb.T @ (p - pb)
    )
    v = np.array([0.1, -0.2, 0.3, 0.2, 0.1, -0.3, 1.0])
    return M.ClosedChain(model, [cut]), q, v, np.array([0.5])


@pytest.mark.parametrize('kind', ['revolute', 'ball'])
def test_closure_on_an_existing_joint_adds_no_constraint(kind: str) -> None:
    """Every row of such a hinge is redundant: its singular values on the tree's velocities
    are all round-off (~1e-17), which the purely relative rank test kept -- the largest
    against itself --, with loop wrenches of 1e16 N and accelerations 55-81 % off. The floor
    ``rtol beta_k`` (the bound from the unit rows and the joint's motion subspace) drops them
    all, in the compiled solver and in its NumPy twin: the free tree's accelerations, no loop
    wrench, the tree's rank, and the free tree's trajectory."""
    chain, q, v, tau = closure_on_a_joint(kind)
    model = chain.model
    assert np.abs(np.concatenate(chain.constraint_error(q, v))).max() < 1e-15
    a_free = D.aba(model, q, v, tau)
    n_tree = 6 * model.arrays.parent.shape[0] - model.nv
    with warnings.catch_warnings():
        warnings.simplefilter('ignore', M.RedundantConstraintWarning)
        for method in M.closed.CHAIN_METHODS:
            sol = chain.dynamics(q, v, tau, method=method, stabilize=False)
            assert rel_err(sol.a, a_free) < 1e-12, method
            assert (sol.rank, sol.n_rows) == (n_tree, n_tree + chain.loops[0].rows), method
            assert np.linalg.norm(sol.loop_wrenches['on_j1']) < 1e-9, method
        assert rel_err(chain.acceleration(q, v, tau), a_free) < 1e-12
        _, Q, V = chain.simulate(q, v, tau, 0.02, 1e-3)
    bd = bodies(model, q, v)  # the NumPy twin's decision: no row kept
    (U,) = chain.independent_rows(bd, chain.loop_rows(bd)[0])
    assert U is not None and U.shape == (chain.loops[0].rows, 0)
    qf, vf = q, v
    for _ in range(20):
        qf, vf = D.step(model, qf, vf, tau, 1e-3)
    assert np.abs(Q[-1] - qf).max() < 1e-12 and np.abs(V[-1] - vf).max() < 1e-12


def test_simulation_follows_the_reference_solver() -> None:
    """0.02 s of the floating platform (RK4, 1 ms, projection after each step): the compiled
    solver's trajectory equals the kkt one's, momentum kept, loops closed."""
    chain, q, v = S.tumbling_platform()
    model = chain.model
    tau = np.linspace(-1, 1, model.n)
    _, Q, V = chain.simulate(q, v, tau, 0.02, 1e-3)
    ref = M.ClosedChain(model, chain.loops, method='kkt')
    _, Qr, Vr = ref.simulate(q, v, tau, 0.02, 1e-3)
    assert np.abs(Q - Qr).max() < 1e-10 and np.abs(V - Vr).max() < 1e-9
    h0 = D.momentum(model, q, v)
    assert np.linalg.norm(D.momentum(model, Q[-1], V[-1]) - h0) <= 1e-10 * np.linalg.norm(h0)
    assert np.abs(chain.constraint_error(Q[-1], V[-1])).max() < 1e-12
    assert np.linalg.norm(V[-1] - V[0]) > 0.01  # it moved


@pytest.mark.parametrize('scale, dt', [(1.0, 1e-3), (3.0, 1e-3), (3.0, 4e-3)])
def test_compiled_steps_keep_the_loops_within_the_projection_tolerance(scale, dt) -> None:
    """The compiled step projects where a step leaves the loops open by more than 1e-13 in
    positions or velocities (at 1 kHz RK4's drift of most steps is below it and the
    projection is spared): along 1 s of the tumbling platform, at its rates, three times them
    and a 4 ms step, every state closes the loops to that tolerance (velocities up to the
    round-off of evaluating ``C v`` at up to 30 rad/s), the momentum is kept to 1e-12, and the
    trajectory stays with the kkt reference's, which projects every step."""
    chain, q, v = S.tumbling_platform()
    model = chain.model
    tau = np.zeros(model.n)
    _, Q, V = chain.simulate(q, scale * v, tau, 1.0, dt)
    speed = float(np.abs(V).max())
    for qk, vk in zip(Q[1:], V[1:], strict=True):
        xi, xid = chain.constraint_error(qk, vk)
        assert np.abs(xi).max() <= 1.5e-13
        assert np.abs(xid).max() <= 1e-13 + 1e-14 * speed
    h0 = D.momentum(model, Q[0], V[0])
    assert np.linalg.norm(D.momentum(model, Q[-1], V[-1]) - h0) <= 1e-12 * np.linalg.norm(h0)
    ref = M.ClosedChain(model, chain.loops, method='kkt')
    _, Qr, Vr = ref.simulate(q, scale * v, tau, 0.05, dt)
    k = Qr.shape[0]
    assert np.abs(Q[:k] - Qr).max() < 1e-10 and np.abs(V[:k] - Vr).max() < 1e-9 * max(1, speed)


def test_compiled_run_equals_its_steps() -> None:
    """``simulate`` with constant efforts runs all its steps in one compiled call: the same
    trajectory, bit for bit, as ``step`` called once per step and as ``simulate`` with the
    efforts given as a function (the per-step path), with and without the projection and
    the momentum's (a run hands each step's end momentum and kinematics to the next step,
    a step alone computes them)."""
    chain, q, v = S.tumbling_platform()
    tau = np.linspace(-1, 1, chain.model.n)
    for kw in ({}, {'conserve_momentum': False}, {'project': False, 'stabilize': True}):
        t, Q, V = chain.simulate(q, v, tau, 0.015, 1e-3, **kw)
        _, Qf, Vf = chain.simulate(q, v, lambda _t, _q, _v: tau, 0.015, 1e-3, **kw)
        assert t.shape == (16,) and t[-1] == pytest.approx(0.015)
        qs, vs = q, v
        for k in range(15):
            qs, vs = chain.step(qs, vs, tau, 1e-3, **kw)
            assert np.array_equal(Q[k + 1], qs) and np.array_equal(V[k + 1], vs), k
        assert np.array_equal(Q, Qf) and np.array_equal(V, Vf)
        assert np.array_equal(Q[0], q) and np.linalg.norm(V[-1] - V[0]) > 1e-3
    _, Q0, V0 = chain.simulate(q, v, tau, 0.0, 1e-3)
    assert Q0.shape == (1, q.size) and np.array_equal(Q0[0], q) and np.array_equal(V0[0], v)
    for bad, match in (
        ({'dt': 0.0}, 'dt: expected a finite positive step'),
        ({'dt': float('nan')}, 'dt: expected a finite positive step'),
        ({'t_final': -1.0}, 't_final: expected a finite duration'),
        ({'t_final': float('inf')}, 't_final: expected a finite duration'),
    ):
        args = {'t_final': 0.01, 'dt': 1e-3, **bad}
        with pytest.raises(ValueError, match=match):
            chain.simulate(q, v, tau, **args)
    with pytest.raises(ValueError, match='tau'):
        chain.simulate(q, v, np.ones(chain.model.n + 1), 0.01, 1e-3)


@pytest.mark.parametrize('seed', [2, 3, 4, 5, 6])
def test_compiled_run_of_a_random_chain_equals_its_steps(seed: int) -> None:
    """Random trees of revolute, prismatic, ball and universal joints, floating and fixed,
    closed by two random hinges, moving under random efforts: ``simulate``'s compiled run
    (each step handed the end momentum and kinematics of the one before) is the steps taken
    one at a time, to the bit, with and without the momentum's projection; the loops stay
    closed."""
    chain, q = random_closed_chain(seed, floating=seed % 2 == 1)
    rng = np.random.default_rng(70 + seed)
    q, v = chain.project(q, 0.3 * rng.normal(size=chain.model.nv))
    tau = rng.normal(size=chain.model.n)
    for kw in ({}, {'conserve_momentum': False}):
        _, Q, V = chain.simulate(q, v, tau, 0.012, 1e-3, **kw)
        qs, vs = q, v
        for k in range(12):
            _, Qk, Vk = chain.simulate(qs, vs, tau, 1e-3, 1e-3, **kw)
            qs, vs = Qk[-1], Vk[-1]
            assert np.array_equal(Q[k + 1], qs) and np.array_equal(V[k + 1], vs), (kw, k)
        xi, xid = chain.constraint_error(Q[-1], V[-1])
        assert np.abs(xi).max() <= 1e-12 and np.abs(xid).max() <= 1e-11, (xi, xid)
        assert np.abs(V[-1] - V[0]).max() > 1e-4  # (it moved)


def test_compiled_run_stops_at_the_failing_step() -> None:
    """A run that cannot go on raises, naming the step and its time, instead of returning a
    trajectory with a tail that was never integrated: steps of 0.5 s leave the loops too far
    apart for the projection's 10 Gauss-Newton iterations within a few steps."""
    chain, q, v = S.tumbling_platform()
    tau = np.linspace(-1, 1, chain.model.n)
    with pytest.raises(RuntimeError, match=r'no convergence .* \(step \d+ of 20, t = '):
        chain.simulate(q, v, tau, 10.0, 0.5)
    _, Q, _ = chain.simulate(q, v, tau, 1.0, 0.5)  # the first steps themselves are fine
    assert np.all(np.isfinite(Q))


def test_method_is_checked() -> None:
    chain, q, v = S.tumbling_fourbar('revolute')
    assert chain.method == 'aba'
    with pytest.raises(ValueError, match="expected one of \\('aba', 'kkt'"):
        M.ClosedChain(chain.model, chain.loops, method='lu')
    with pytest.raises(ValueError, match='expected one of'):
        chain.dynamics(q, v, np.zeros(3), method='crba')
    with pytest.raises(ValueError, match='NaN'):
        chain.dynamics(q, np.full_like(v, np.nan), np.zeros(3))


class Twin:
    """Pinocchio twin of a floating-base model in our conventions (root origin at
    ``r0 - R c0``, body-frame base twist; as test_joint_types.PinTree)."""

    def __init__(self, model: D.Model) -> None:
        self.pm, self.jid = pinocchio_twin(model, pin)
        self.pd = self.pm.createData()
        self.c0 = np.array(model.arrays.com[0])

    def q_pin(self, q: np.ndarray) -> np.ndarray:
        qp = np.array(q, float)
        qp[:3] = q[:3] - quat_to_matrix(q[3:7]) @ self.c0
        return qp

    def T(self, q: np.ndarray) -> np.ndarray:
        T = np.eye(self.pm.nv)
        Rt = quat_to_matrix(q[3:7]).T
        T[:3, :3] = Rt
        T[:3, 3:6] = np.cross(np.eye(3), self.c0) @ Rt  # c0~ R^T
        T[3:6, 3:6] = Rt
        return T

    def drift(self, q: np.ndarray, v: np.ndarray) -> np.ndarray:
        d = np.zeros(self.pm.nv)
        d[:3] = -quat_to_matrix(q[3:7]).T @ np.cross(v[3:6], v[:3])
        return d


@needs_pinocchio
def test_floating_platform_matches_pinocchio_constraint_dynamics() -> None:
    """Two ball loops on a free base: accelerations and both loop forces against Pinocchio's
    ``constraintDynamics`` (two CONTACT_3D RigidConstraintModels)."""
    chain, q, v = S.tumbling_platform(gravity=(0.0, 0.0, -9.81))
    model = chain.model
    rng = np.random.default_rng(9)
    tau, bw = rng.normal(size=model.n), rng.normal(size=6)
    twin = Twin(model)
    cms = pin.StdVec_RigidConstraintModel()
    for lp in chain.loops:
        cms.append(
            pin.RigidConstraintModel(
                pin.ContactType.CONTACT_3D,
                twin.pm,
                twin.jid[model.frame(lp.link_a).body],
                pin.SE3(np.eye(3), lp.translation_a),
                twin.jid[model.frame(lp.link_b).body],
                pin.SE3(np.eye(3), lp.translation_b),
                pin.ReferenceFrame.LOCAL,
            )
        )
    cds = pin.StdVec_RigidConstraintData()
    for cm in cms:
        cds.append(cm.createData())
    pin.initConstraintDynamics(twin.pm, twin.pd, cms, cds)
    T = twin.T(q)
    ap = pin.constraintDynamics(
        twin.pm,
        twin.pd,
        twin.q_pin(q),
        T @ v,
        np.linalg.solve(T.T, np.r_[bw, tau]),
        cms,
        cds,
        pin.ProximalSettings(1e-14, 1e-10, 200),
    )
    expect = np.linalg.solve(T, ap - twin.drift(q, v))
    sol = chain.dynamics(q, v, tau, base_wrench=bw, stabilize=False)
    assert rel_err(sol.a, expect) < 1e-9
    for k, lp in enumerate(chain.loops):
        R_a = D.link_pose(model, q, lp.link_a)[1]
        lam = twin.pd.lambda_c[3 * k : 3 * k + 3]
        assert rel_err(sol.loop_wrenches[lp.name][:3], -R_a @ lam) < 1e-9


def test_rank_certificate_agrees_with_the_svd() -> None:
    """``clearly_independent`` (the Gram-Cholesky bound that spares the per-hinge SVD) never
    certifies columns whose singular-value ratio is below ``CERTIFIED_RATIO`` -- dependent
    columns above all -- and certifies well-conditioned ones; ``jacobi_svd`` gives NumPy's
    singular values."""
    from ffsim_ros.dynamics.kernels.cut_hinges import (
        CERTIFIED_RATIO,
        clearly_independent,
        jacobi_svd,
    )

    rng = np.random.default_rng(7)
    certified = refused = 0
    for trial in range(600):
        n = int(rng.integers(1, 7))
        L = int(rng.integers(n, 14))
        U, _ = np.linalg.qr(rng.normal(size=(L, n)))
        V, _ = np.linalg.qr(rng.normal(size=(n, n)))
        sv = np.sort(10.0 ** rng.uniform(-9 if trial % 3 == 0 else -5, 1, n))[::-1]
        if trial % 5 == 0 and n > 1:
            sv[-1] = 0.0  # exactly dependent columns
        X = np.ascontiguousarray((U * sv) @ V.T)
        ratio = sv[-1] / sv[0]
        got = clearly_independent(X.copy())
        if got:
            certified += 1
            assert ratio >= CERTIFIED_RATIO * (1 - 1e-9), (trial, ratio)
        else:
            refused += 1
        if ratio > 3.0 * n * CERTIFIED_RATIO:  # the bound is within sqrt(n) of the truth
            assert got, (trial, ratio)
        Xs, Vs, s = X.copy(), np.empty((n, n)), np.empty(n)
        jacobi_svd(Xs, Vs, s)
        assert np.allclose(s, np.linalg.svd(X, compute_uv=False), rtol=1e-12, atol=1e-14 * sv[0])
    assert certified > 100 and refused > 100, (certified, refused)
    assert not clearly_independent(np.zeros((4, 3)))
    assert not clearly_independent(np.ones((2, 3)))  # fewer rows than columns
    # the floor: well-conditioned columns of round-off size (rows a closure on an existing
    # joint cannot violate) are not certified, the same columns at full size are
    X = np.linalg.qr(rng.normal(size=(5, 3)))[0]
    assert clearly_independent(X, 1e-9) and clearly_independent(1e-17 * X)
    assert not clearly_independent(1e-17 * X, 1e-9)


@pytest.mark.parametrize('how', LAYOUTS)
def test_per_call_path_takes_any_layout_of_a_float64_vector(how: str) -> None:
    """The per-call path checks class, dtype and dimension in Python, the sizes and strides
    in the compiled entry point (which refuses, reading nothing, for the converting path): a
    strided or reversed view, NaN between its values, gives the plain copy's accelerations
    bit for bit; a vector one entry short is named."""
    chain, q, v = S.tumbling_platform()
    tau = np.linspace(-1.0, 1.0, chain.model.n)
    ref = chain.acceleration(q, v, tau)
    for _ in range(2):  # the first call types the kernel, the second takes its entry point
        np.testing.assert_array_equal(
            chain.acceleration(laid_out(q, how), laid_out(v, how), laid_out(tau, how)), ref
        )
    with pytest.raises(ValueError, match='tau: expected'):
        chain.acceleration(q, v, tau[:-1])
    with pytest.raises(ValueError, match='v: expected'):
        chain.acceleration(q, np.append(v, 0.0), tau)
