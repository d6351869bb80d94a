"""Joint friction too stiff for the step on a closed chain [S0 eq. 41]
(:mod:`ffsim_ros.dynamics.mufti.chain_friction`).

The closed chain's RK4 step took the joint friction explicitly: the floating spatial loop of
:mod:`.mufti.samples` (7 revolute joints closed by a revolute cut hinge), 0.5 N m of Coulomb
friction on each joint, has ``dt k_j W_jj`` up to 3.0 at 1 ms (``W`` the mobility with the
loop) and a coupled ratio of 8.3, beyond RK4's 2.785: released, its joints crept at 2.0e-3
rad/s for ever, while the friction's work ran 9 % past the kinetic energy lost. The step now
takes the joints' friction as a backward-Euler impulse on the loop's manifold where some joint
is stiff; the references are the law's own steady states (solved here on the manifold, from
the loop rows of ``constraint_error``) and steps small enough for the explicit method alone.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import ffsim_ros.dynamics as D
from ffsim_ros.dynamics.kernels.closed_step import e_closed_chain_steps
from ffsim_ros.dynamics.mufti.articulated import LoopKernel
from ffsim_ros.dynamics.mufti.samples import spatial_loop_cut, spatial_loop_urdf
from ffsim_ros.sim import Engine

EPS = 1e-3  # the law's regularization [rad/s]
F_C = 0.5  # Coulomb friction of every joint [N m]
DT = 1e-3


def loop_chain(friction: float = F_C, damping: float = 0.0, method: str = 'aba'):
    """The floating spatial loop with ``friction`` and ``damping`` on every joint."""
    model = D.load_urdf(spatial_loop_urdf(), floating_base=True)
    d, f = np.zeros(model.nv), np.zeros(model.nv)
    d[6:], f[6:] = damping, friction
    model = dataclasses.replace(model, arrays=model.arrays._replace(damping=d, friction=f))
    model = D.with_joint_dynamics(model, True)
    return D.ClosedChain(model, [spatial_loop_cut('revolute')], method=method)


def released(chain: D.ClosedChain, spin: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Assembled with every joint released at 0.5 rad/s; without ``spin``, the momentum
    zero (the base velocity projected), so that the chain can come to rest."""
    model = chain.model
    q0 = D.neutral(model)
    q0[7:] = 0.1 * np.random.default_rng(2).normal(size=model.n)
    v0 = np.zeros(model.nv)
    v0[6:] = 0.5
    q, v = chain.assemble(q0, v0, move_base=True)
    return (q, v) if spin else chain.project(q, v, momentum=np.zeros(6))


def loop_rows(chain: D.ClosedChain, q: np.ndarray) -> np.ndarray:
    """``G`` (rows, nv): the loop's velocity errors are linear in ``v``."""
    return np.array([chain.constraint_error(q, e)[1] for e in np.eye(chain.model.nv)]).T


def null_space(G: np.ndarray) -> np.ndarray:
    _, s, Vt = np.linalg.svd(G)
    return Vt[int(np.sum(s > 1e-9 * s[0])) :].T


def manifold_mobility(chain: D.ClosedChain, q: np.ndarray) -> np.ndarray:
    """``W = N (N^T H N)^-1 N^T`` (nv, nv), ``N`` spanning the manifold ``G v = 0``."""
    N = null_space(loop_rows(chain, q))
    return N @ np.linalg.solve(N.T @ D.mass_matrix(chain.model, q) @ N, N.T)


@pytest.fixture(scope='module')
def chain() -> D.ClosedChain:
    return loop_chain()


def test_the_loop_is_stiff_at_1_ms_and_its_mobility_is_the_manifolds(chain) -> None:
    q, _ = released(chain)
    model = chain.model
    W = manifold_mobility(chain, q)  # (an independent evaluation)
    split = chain._split
    np.testing.assert_array_equal(split.cols, np.arange(6, model.nv))
    np.testing.assert_allclose(split.mobility(q), W[:, 6:], rtol=0, atol=1e-10 * np.abs(W).max())
    assert np.abs(W[:6, 6:] @ np.ones(model.n)).max() > 0.01  # the base moves with the joints
    rho = DT * F_C / EPS * np.diag(W)[6:]
    assert rho.max() == pytest.approx(3.01, abs=0.01)
    assert split.stiff(q, DT)
    assert not split.stiff(q, 2.5e-5)


def test_a_released_chain_comes_to_rest_with_the_energy_balanced(chain) -> None:
    """Zero momentum, every joint released at 0.5 rad/s, 1 s at 1 ms: the joints stop (they
    crept at 2.0e-3 rad/s for ever); the kinetic energy lost is the friction's work (the old
    explicit step: 9 % apart); momentum and loop closure held."""
    model = chain.model
    q, v = released(chain)
    _, Q, V = chain.simulate(q, v, np.zeros(model.n), 1.0, DT)
    W = V[:, 6:]
    assert np.abs(W[-100:]).max() < 1e-8  # (8e-17 measured)
    # the friction's work, its impulses at the step ends (backward Euler) times the mean rate
    p = -DT * F_C * np.tanh(W[1:] / EPS)
    work = float(np.sum(p * 0.5 * (W[1:] + W[:-1])))
    ke = [D.kinetic_energy(model, Q[k], V[k]) for k in (0, -1)]
    assert ke[0] > 0.03 and ke[1] < 1e-25
    # first order in dt (2.9e-6 of ke[0] at 1 ms, 1.3e-6 at 0.5 ms; 6.8e-6 at 1 ms without the
    # impulse's displacement)
    assert abs(ke[1] - ke[0] - work) < 1e-4 * ke[0]
    h = np.array([D.momentum(model, Q[k], V[k]) for k in range(0, Q.shape[0], 50)])
    assert np.abs(h).max() < 1e-13
    for k in range(0, Q.shape[0], 50):
        xi, xi_dot = chain.constraint_error(Q[k], V[k])
        assert np.abs(xi).max() < 1e-12 and np.abs(xi_dot).max() < 1e-12


def test_a_spinning_chain_creeps_as_the_law_does(chain) -> None:
    """With the momentum of the release, the chain spins at 0.3 rad/s and its joints creep
    under the centrifugal loads, as the regularized law makes them (no rest: ``tanh`` has no
    stiction): at 1 ms as with the explicit step at 25 us, where nothing is stiff (the old
    step at 1 ms cycled 1.8e-3 rad/s off them)."""
    model = chain.model
    q, v = released(chain, spin=True)
    assert np.abs(D.momentum(model, q, v)).max() > 0.1
    tau = np.zeros(model.n)
    coarse = chain.simulate(q, v, tau, 0.3, DT)[2][-1, 6:]
    fine = chain.simulate(q, v, tau, 0.3, 2.5e-5)[2][-1, 6:]
    assert 1e-7 < np.abs(fine).max() < 1e-6
    assert np.abs(coarse - fine).max() < 1e-2 * np.abs(fine).max()  # (9.2e-4 measured)
    assert not chain._split.stiff(q, 2.5e-5)  # (the reference: the explicit step alone)


def law_creep(chain: D.ClosedChain, q: np.ndarray, tau: np.ndarray) -> np.ndarray:
    """The joint rates (n,) of the regularized law's steady creep under ``tau`` on the
    manifold: ``w = N y`` with ``N^T (tau - f tanh(w / eps)) = 0`` (Newton)."""
    N = null_space(loop_rows(chain, q)[:, 6:])  # the loop rows have no base columns
    y = np.zeros(N.shape[1])
    for _ in range(100):
        th = np.tanh(N @ y / EPS)
        step = np.linalg.solve(
            N.T @ ((F_C / EPS * (1.0 - th * th))[:, None] * N), N.T @ (tau - F_C * th)
        )
        y += step
        if np.abs(step).max() < 1e-18:
            break
    return N @ y


def test_a_sub_breakaway_effort_creeps_at_the_laws_own_rate(chain) -> None:
    """0.15 N m on two joints (each joint's friction at most 16 % of its breakaway):
    the regularized law's steady creep, steady at 1 ms (the old step cycled 1e-2 rad/s), in
    the rates and in the angles (the impulse's displacement, ``dt/2`` of its velocity change:
    without it the angles crept at 3.4-3.6 times the law's rates, 2.2-2.3 at 0.5 ms), the
    loops closed, the momentum and the CoM kept."""
    model = chain.model
    q, v = released(chain)
    v = np.zeros(model.nv)
    tau = np.zeros(model.n)
    tau[[0, 4]] = 0.15, -0.1
    _, Q, V = chain.simulate(q, v, tau, 0.5, DT)
    w = law_creep(chain, Q[-1], tau)
    assert np.abs(F_C * np.tanh(w / EPS)).max() < 0.2 * F_C
    assert np.abs(w).max() > 1e-5
    np.testing.assert_allclose(V[-1, 6:], w, rtol=0, atol=1e-6 * np.abs(w).max())
    tail = V[-50:, 6:]
    assert np.ptp(tail, axis=0).max() < 1e-4 * np.abs(w).max()  # steady, no cycle
    np.testing.assert_allclose(D.momentum(model, Q[-1], V[-1]), np.zeros(6), rtol=0, atol=1e-13)
    # the angles over the last 0.1 s (6.7e-6 of the largest rate apart)
    creep = D.difference(model, Q[-101], Q[-1])[6:] / 0.1
    np.testing.assert_allclose(creep, w, rtol=0, atol=1e-3 * np.abs(w).max())
    c0 = D.center_of_mass(model, Q[0])
    for k in range(0, Q.shape[0], 25):
        xi, xi_dot = chain.constraint_error(Q[k], V[k])
        assert np.abs(xi).max() <= 1e-13 and np.abs(xi_dot).max() < 1e-13
        np.testing.assert_allclose(D.center_of_mass(model, Q[k]), c0, rtol=0, atol=1e-13)


def test_the_impulse_solves_backward_euler_on_the_manifold(chain) -> None:
    """``H (v+ - v) + dt S phi(S^T v+)`` has no component along the manifold, ``G v+ = G
    v``; the momentum is unchanged and the kinetic energy falls (a random state)."""
    from ffsim_ros.dynamics.stiff_friction import constrained_friction_impulse

    model = chain.model
    q, _ = released(chain)
    rng = np.random.default_rng(5)
    G = loop_rows(chain, q)
    N = null_space(G)
    v = N @ rng.normal(size=N.shape[1]) * 0.2
    dofs = np.arange(6, model.nv)
    dt = 5e-3
    v1 = constrained_friction_impulse(model, chain._split.mobility(q), v, dofs, dt)
    H = D.mass_matrix(model, q)
    r = H @ (v1 - v)
    r[6:] += dt * F_C * np.tanh(v1[6:] / EPS)
    assert np.abs(N.T @ r).max() < 1e-12
    assert np.abs(G @ v1).max() < 1e-13
    h = D.momentum(model, q, v)
    np.testing.assert_allclose(D.momentum(model, q, v1), h, rtol=0, atol=1e-14)
    assert D.kinetic_energy(model, q, v1) < D.kinetic_energy(model, q, v)


def test_every_path_of_the_step_splits_alike(chain) -> None:
    """The compiled run, the single step, the Python step under a link wrench (zero here) and
    the reference solver take the same split steps, and each brings the chain to rest."""
    model = chain.model
    q, v = released(chain)
    tau = np.zeros(model.n)
    _, Q, V = chain.simulate(q, v, tau, 250 * DT, DT)
    reference = loop_chain(method='kkt')
    paths = {
        'step': lambda a, b: chain.step(a, b, tau, DT),
        'link wrench': lambda a, b: chain.step(a, b, tau, DT, link_wrenches={'la2': np.zeros(6)}),
        'kkt': lambda a, b: reference.step(a, b, tau, DT),
    }
    for name, step in paths.items():
        qs, vs = q, v
        for k in range(250):
            qs, vs = step(qs, vs)
            if k == 4 and name == 'step':
                np.testing.assert_array_equal(qs, Q[5])
                np.testing.assert_array_equal(vs, V[5])
            elif k == 4:
                np.testing.assert_allclose(vs, V[5], rtol=0, atol=1e-9, err_msg=name)
        assert np.abs(vs[6:]).max() < 1e-8, name


@pytest.mark.parametrize('friction', [0.0, 2e-4])
def test_chains_without_stiff_friction_step_bit_for_bit_as_before(friction: float) -> None:
    """No friction, or friction nowhere stiff (2e-4 N m: ``rho`` 1e-3): ``simulate`` and
    ``step`` are the one compiled run they were, bit for bit."""
    chain = loop_chain(friction, damping=0.01 if friction else 0.0)
    if not friction:
        chain = D.ClosedChain(D.with_joint_dynamics(chain.model, False), chain.loops)
    model = chain.model
    q, v = released(chain, spin=True)
    slopes = model.arrays.damping + model.arrays.friction / EPS
    assert (DT * slopes * np.diag(manifold_mobility(chain, q))).max() < 0.01  # nowhere stiff
    tau = np.linspace(-0.2, 0.2, model.n)
    _, Q, V = chain.simulate(q, v, tau, 20 * DT, DT)
    kernel = LoopKernel(model, chain.loops, 1e-9, chain._closing_rows)
    Qr = np.full((21, model.nq), np.nan)
    Vr = np.empty((21, model.nv))
    Qr[0], Vr[0] = q, v
    e_closed_chain_steps(
        *model.packed,
        np.r_[np.zeros(6), tau],
        model.joint_dynamics,
        kernel.loop_i,
        kernel.loop_f,
        np.array((0.0, 0.0, 1e-9)),
        kernel.n_rows,
        DT,
        np.array((1.0, 1.0, 1e-13, 10.0)),
        Qr,
        Vr,
        np.empty(0),  # no base-frame wrench
    )
    np.testing.assert_array_equal(Q, Qr)
    np.testing.assert_array_equal(V, Vr)
    np.testing.assert_array_equal(chain.step(q, v, tau, DT)[1], Vr[1])
    if friction:  # the friction did act
        free = D.ClosedChain(D.with_joint_dynamics(model, False), chain.loops)
        assert np.abs(free.simulate(q, v, tau, 20 * DT, DT)[2][-1] - V[-1]).max() > 1e-6


def test_the_engine_brings_the_chain_to_rest(chain) -> None:
    """The simulator's engine (``joint_dynamics`` on, 1 kHz) steps the chain through the
    split: released, its joints come to rest."""
    q, v = released(chain)
    engine = Engine(chain.model, q, v, dt_ns=1_000_000, chain=chain, velocity_limits=False)
    snap = engine.advance(600)
    assert not snap.faulted, snap.fault
    assert np.abs(snap.v[6:]).max() < 1e-8
    assert np.abs(snap.momentum).max() < 1e-13
