"""A closed chain at a loop singularity: planar parallelograms of 2 and 3 cranks (floating base,
no gravity) stretched flat, where the in-plane loop rows lose rank.

The 3-crank one (two revolute loops, passively overconstrained) was frozen there: at the flat
pose or within 1e-8 rad of it, 1 N m on a crank left every joint at 0 (``'aba'``), and
``'kkt'`` / ``'nullspace'`` raised ``project: ... no convergence``. Within the projection's
1e-13 tolerance of the flat pose the rows had singular values ~1e-7 that are not there on the
manifold (spurious: loop errors quadratic in the distance from it), so the mechanism was
locked; and Gauss-Newton's projection converged onto the flat pose itself, undoing each step.
Now such rows do not count for the motion (the closure floor of
``kernels.cut_hinges.rank_floor``) and a projection that takes most of a step back is redone as
the nearest closed configuration (``dynamics.mufti.closing``).

References, independent of the loop rows: the branch's own Lagrangian -- on the parallelogram
branch every crank turns by ``theta`` and the coupler by ``-theta``, a constant map ``J`` from
``(base velocity, theta')`` to the tree's velocities, so ``J^T M J x'' = J^T (tau - h)`` with
the tree's ``M`` and bias forces ``h`` (``D.mass_matrix``, ``D.bias_forces``), integrated by
the same RK4 (``D.rk4_step``).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import ffsim_ros.dynamics as D
from ffsim_ros.dynamics import mufti as M
from ffsim_ros.dynamics.mufti import samples as S
from ffsim_ros.sim import Engine

DT = 1e-3


def parallelogram(cranks: int) -> str:
    """A floating planar parallelogram: ``cranks`` cranks of 0.5 m about z, 0.6 m apart on a
    10 kg base; the coupler hangs on crank 1, the other cranks close onto it by revolute
    loops. Flat (every joint 0): cranks and coupler on one line."""
    inertia = '<inertia ixx="{}" iyy="{}" izz="{}" ixy="0" ixz="0" iyz="0"/>'
    limit = '<limit lower="-100" upper="100" effort="1000" velocity="1000"/>'
    parts = [
        '<robot name="parallelogram"><link name="base"><inertial><mass value="10"/>'
        + inertia.format(0.5, 0.6, 0.7)
        + '</inertial></link>'
    ]
    for k in range(1, cranks + 1):
        parts.append(
            f'<link name="c{k}"><inertial><origin xyz="0.25 0 0"/><mass value="1"/>'
            + inertia.format(0.001, 0.02, 0.02)
            + f'</inertial></link><joint name="crank{k}" type="revolute"><parent link="base"/>'
            f'<child link="c{k}"/><origin xyz="{0.6 * (k - 1)} 0 0"/><axis xyz="0 0 1"/>'
            f'{limit}</joint>'
        )
    parts.append(
        f'<link name="cp"><inertial><origin xyz="{0.3 * (cranks - 1)} 0 0"/><mass value="2"/>'
        + inertia.format(0.002, 0.1, 0.1)
        + '</inertial></link><joint name="coupler" type="revolute"><parent link="c1"/>'
        f'<child link="cp"/><origin xyz="0.5 0 0"/><axis xyz="0 0 1"/>{limit}</joint>'
    )
    for k in range(2, cranks + 1):
        parts.append(
            f'<loop name="loop{k}" type="revolute"><predecessor link="c{k}"><origin '
            f'xyz="0.5 0 0"/></predecessor><successor link="cp"><origin '
            f'xyz="{0.6 * (k - 1)} 0 0"/></successor><axis xyz="0 0 1"/></loop>'
        )
    return ''.join(parts) + '</robot>'


def chain_of(cranks: int, method: str = 'aba') -> M.ClosedChain:
    urdf = parallelogram(cranks)
    return M.ClosedChain(D.load_urdf(urdf), D.loop_closures_from_urdf(urdf), method=method)


def branch(model: D.Model) -> np.ndarray:
    """The parallelogram branch's joint rates per unit crank rate: cranks +1, coupler -1."""
    return np.array([-1.0 if name == 'coupler' else 1.0 for name in model.joint_names])


def on_branch(model: D.Model, theta: float) -> np.ndarray:
    q = D.neutral(model)
    q[7:] = theta * branch(model)
    return q


def crank1_effort(model: D.Model) -> np.ndarray:
    tau = np.zeros(model.n)
    tau[model.joint_names.index('crank1')] = 1.0
    return tau


def branch_trajectory(model: D.Model, q: np.ndarray, tau: np.ndarray, steps: int) -> np.ndarray:
    """(steps + 1, nq): the branch's own Lagrangian (module docstring) from rest at ``q``."""
    J = np.zeros((model.nv, 7))
    J[:6, :6] = np.eye(6)
    J[6:, 6] = branch(model)
    force = np.r_[np.zeros(6), tau]

    def acceleration(_t: float, q: np.ndarray, v: np.ndarray) -> np.ndarray:
        H = J.T @ D.mass_matrix(model, q) @ J
        return J @ np.linalg.solve(H, J.T @ (force - D.bias_forces(model, q, v)))

    out = [q]
    v = np.zeros(model.nv)
    for _ in range(steps):
        q, v = D.rk4_step(model, q, v, DT, acceleration)
        out.append(q)
    return np.array(out)


def simulated(chain: M.ClosedChain, q: np.ndarray, tau: np.ndarray, steps: int):
    effort = tau if chain.method == 'aba' else (lambda t, q, v: tau)  # (the per-step path)
    with warnings.catch_warnings():
        warnings.simplefilter('ignore', M.RedundantConstraintWarning)
        return chain.simulate(q, np.zeros(chain.model.nv), effort, steps * DT, DT)[1:]


def loop_error(chain: M.ClosedChain, Q: np.ndarray, V: np.ndarray) -> float:
    """The loops' largest position or velocity error over the states ``Q``, ``V``."""
    errors = (chain.constraint_error(q, v) for q, v in zip(Q, V, strict=True))
    return max(float(max(np.abs(xi).max(), np.abs(dxi).max())) for xi, dxi in errors)


@pytest.mark.parametrize('method', ['aba', 'kkt', 'nullspace'])
@pytest.mark.parametrize(('start', 'effort'), [(0.0, 1.0), (1e-9, 1.0), (1e-8, 1.0), (0.0, 100.0)])
def test_flat_parallelogram_moves_along_its_branch(
    method: str, start: float, effort: float
) -> None:
    """The 3-crank parallelogram from rest at (or ``start`` rad along its branch from) the
    flat pose, ``effort`` N m on crank 1: the joints follow the branch's own Lagrangian --
    measured 1e-9 to 7e-9 rad off at 0.024 rad after 0.1 s under 1 N m (``'aba'``: 9e-8 at
    5.5 rad after 2 s, through the other flat pose, pi, at speed), 2.6e-9 at 1.81 rad after
    0.1 s under 100 N m; the crank's mean acceleration over the first 10 ms the branch's
    (4.7206 rad/s^2 per N m) to 3e-6 -- with every method, the loops closed (1e-13)."""
    chain = chain_of(3, method)
    model = chain.model
    tau = effort * crank1_effort(model)
    steps = 2000 if method == 'aba' and effort == 1.0 else 100
    q0 = on_branch(model, start)
    Q, V = simulated(chain, q0, tau, steps)
    ref = branch_trajectory(model, q0, tau, steps)
    assert np.abs(Q[:, 7:] - ref[:, 7:]).max() < 1e-6
    crank = 7 + model.joint_names.index('crank1')
    mean_acceleration = 2.0 * (Q[10, crank] - start) / (10 * DT) ** 2
    expected = 2.0 * (ref[10, crank] - start) / (10 * DT) ** 2  # 4.7206 rad/s^2
    assert abs(mean_acceleration - expected) < 1e-4 * expected
    assert loop_error(chain, Q[::10], V[::10]) < 1e-12
    if steps == 2000:
        assert ref[-1, crank] > np.pi + 1.0  # through the other flat pose (pi), at speed


@pytest.mark.parametrize('method', ['aba', 'kkt', 'nullspace'])
def test_flat_two_crank_parallelogram_takes_the_branch_of_least_constraint(method: str) -> None:
    """The 2-crank parallelogram (one loop) stretched flat is a bifurcation: the parallelogram
    branch and the crossed one meet there. From rest with 1 N m on crank 1 the joints take the
    branch of least constraint (Gauss's principle over the two: the deviation from the free
    accelerations in the kinetic-energy metric, 0.96 against 5.5 for the crossed branch, whose
    tangent turns the coupler and crank 2 by -11 per crank-1 radian), as every method now does
    to 1.5e-8 rad over 0.3 s; before, ``'aba'`` ended 1.7e-4 rad off it and the others raised
    ``project: ... no convergence``."""
    chain = chain_of(2, method)
    model = chain.model
    tau = crank1_effort(model)
    q0 = D.neutral(model)
    H = D.mass_matrix(model, q0)
    free = np.linalg.solve(H, np.r_[np.zeros(6), tau])
    crossed = np.array([-11.0 if name != 'crank1' else 1.0 for name in model.joint_names])
    deviation = []
    for rates in (branch(model), crossed):
        J = np.zeros((model.nv, 7))
        J[:6, :6] = np.eye(6)
        J[6:, 6] = rates
        a = J @ np.linalg.solve(J.T @ H @ J, J.T @ (H @ free))
        deviation.append(float((a - free) @ H @ (a - free)))
    assert deviation[0] < 0.5 * deviation[1]  # the parallelogram branch: least constraint
    Q, V = simulated(chain, q0, tau, 300)
    ref = branch_trajectory(model, q0, tau, 300)
    assert np.abs(Q[:, 7:] - ref[:, 7:]).max() < 1e-7
    assert loop_error(chain, Q[::10], V[::10]) < 1e-12


def test_spurious_rows_within_the_tolerance_of_the_flat_pose_do_not_lock_it() -> None:
    """A configuration 2e-7 rad off the flat pose, closed by the projection to within its
    1e-13: the in-plane rows there have singular values ~1e-7 (the loop errors of the
    displacement, second order, stay below the tolerance), which counted as independent and
    locked the mechanism (zero accelerations under 1 N m). Below the closure floor
    ``sqrt(4 beta_k |xi|)`` they count as the flat pose's: its accelerations to 1e-6, every
    method alike, and the reduced rows of the NumPy twin drop them."""
    chain = chain_of(3)
    model = chain.model
    tau = crank1_effort(model)
    q = D.neutral(model)
    q[7:] = 2e-7 * np.array([1.0, -1.4, 0.5, -0.1])  # off the branch
    q, v = chain.project(q, np.zeros(model.nv))
    xi = chain.constraint_error(q, v)[0]
    assert 0.0 < np.abs(xi).max() <= 1e-13
    bd = M.tree.bodies(model, q, v)
    rows = chain.loop_rows(bd)[0]
    C = rows.matrix(len(bd.mass)).dense() @ M.tree.body_velocity_jacobian(model, bd)
    sv = [np.linalg.svd(C[5 * k : 5 * k + 5], compute_uv=False) for k in range(2)]
    assert all(1e-8 < s[1] < 1e-6 for s in sv)  # the spurious rows
    flat = chain.acceleration(D.neutral(model), v, tau, stabilize=False)
    assert np.abs(flat[6:]).max() > 1.0
    with warnings.catch_warnings():
        warnings.simplefilter('ignore', M.RedundantConstraintWarning)
        for method in M.closed.CHAIN_METHODS:
            a = chain.acceleration(q, v, tau, stabilize=False, method=method)
            assert np.abs(a - flat).max() < 1e-6 * np.abs(flat).max(), method
    closure = float(np.linalg.norm(xi))
    kept = [U.shape[1] for U in chain.independent_rows(bd, rows, closure)]
    assert kept == [1, 1]  # the in-plane row along the cranks' normal, per hinge
    assert [U.shape[1] for U in chain.independent_rows(bd, rows)] == [2, 2]  # round-off floor


def test_engine_moves_the_flat_parallelogram_from_the_default_start() -> None:
    """The simulator's default start (every joint 0) of the 3-crank parallelogram is its flat
    singular pose; 1 N m commanded on crank 1 through the engine, as over the node's
    ``joint_commands``: 0.1 s later the joints are where the branch's own Lagrangian puts
    them (2.4e-2 rad); before, they stayed at 0 (effort [1, 0, 0, 0], rates 0, no warning)."""
    chain = chain_of(3)
    model = chain.model
    q0 = D.neutral(model)
    engine = Engine(model, q0, np.zeros(model.nv), dt_ns=1_000_000, chain=chain)
    tau = crank1_effort(model)
    engine.command_efforts(tau)
    with warnings.catch_warnings():
        warnings.simplefilter('ignore', M.RedundantConstraintWarning)
        snap = engine.advance(100)
    ref = branch_trajectory(model, q0, tau, 100)
    assert not snap.fault
    assert ref[-1, 7] > 0.02 and np.abs(snap.q[7:] - ref[-1, 7:]).max() < 1e-6


def test_a_loop_failure_at_rest_is_not_blamed_on_a_too_fast_motion(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A step of a closed chain whose loops cannot be closed (the projection's RuntimeError,
    forced here) from joints at rest was reported as 'too fast a motion for the 0.001 s
    step?' with 'joint rates up to 0 rad/s'. At rest the fault now says the loops could not be
    closed at this configuration; moving (0.5 rad/s), the hint stays. With the joints at
    rest and the base spinning (25 rad/s at 10 Hz on the tumbling platform: 2.5 rad a step),
    the fault said 'at rest ... a singular or locked configuration' too: the base's angular
    rate now counts, and is named."""
    chain = chain_of(3)
    model = chain.model
    q0 = on_branch(model, 0.7)

    def fail(*_args: object, **_kw: object) -> None:
        raise RuntimeError("project: loop closure 'loop2', 'loop3': no convergence")

    spinning = np.zeros(model.nv)
    spinning[3:6] = [0.0, 0.6, 0.8]  # 1 rad/s, 1 mrad a step: far from 'at rest'
    faults = []
    for v0 in (np.zeros(model.nv), 0.5 * np.r_[np.zeros(6), branch(model)], spinning):
        engine = Engine(model, q0, v0, dt_ns=1_000_000, chain=chain)
        with monkeypatch.context() as patch:
            patch.setattr(chain, 'simulate', fail)
            patch.setattr(chain, 'step', fail)
            snap = engine.advance(1)
        assert snap.faulted and 'no convergence' in snap.fault
        faults.append(snap.fault)
    at_rest, moving, spin = faults
    assert 'too fast' not in at_rest, at_rest
    assert at_rest.endswith(
        '; at rest (joint rates up to 0 rad/s or m/s, the base turning at 0 rad/s): the loops '
        'could not be closed here, a singular or locked configuration'
    ), at_rest
    assert moving.endswith(
        '(the state at its start is finite, joint rates up to 0.5 rad/s or m/s, the base '
        'turning at 0 rad/s): too fast a motion for the 0.001 s step?'
    ), moving
    assert 'at rest' not in spin and 'singular or locked' not in spin, spin
    assert spin.endswith(  # (the joint rates: round-off of the projection onto the loops)
        'the base turning at 1 rad/s): too fast a motion for the 0.001 s step?'
    ), spin


def test_a_spinning_platform_failing_its_step_is_not_called_at_rest() -> None:
    """The probe's case, unforced: the tumbling platform, joints at rest, its base at 25 rad/s
    about a generic axis, 10 Hz: the loops cannot be closed after the step (2.5 rad of base
    rotation in it), and the fault blamed 'a singular or locked configuration' at rest. It
    names the base's rate and too fast a motion for the step now; at 100 Hz the same spin
    runs."""
    chain, q, _ = S.tumbling_platform()
    model = chain.model
    v0 = np.zeros(model.nv)
    v0[3:6] = 25.0 * np.array([0.3, -0.5, 1.0]) / np.linalg.norm([0.3, -0.5, 1.0])
    with warnings.catch_warnings():
        warnings.simplefilter('ignore', M.RedundantConstraintWarning)
        snap = Engine(model, q, v0, dt_ns=100_000_000, chain=chain).advance(5)
        assert snap.faulted and snap.step == 0
        assert 'singular or locked' not in snap.fault and 'at rest' not in snap.fault, snap.fault
        assert snap.fault.endswith(
            'the base turning at 25 rad/s): too fast a motion for the 0.1 s step?'
        )
        assert not Engine(model, q, v0, dt_ns=10_000_000, chain=chain).advance(20).faulted
