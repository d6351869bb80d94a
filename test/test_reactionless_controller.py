"""Reactionless control: the law on the core alone, then closed loop over DDS."""

from __future__ import annotations

import re
import time

import numpy as np
import pytest

import ffsim_ros.dynamics as D
from ffsim_ros.control import (
    ControlMode,
    Gains,
    ReactionlessController,
    attitude_error,
    base_rate_map,
    budget_rates,
    dls_pinv,
    generalized_inertia,
    rate_weights,
    reactionless_basis,
    rns_manipulability,
    self_motion,
)
from ffsim_ros.control.rns import momentum_drift, zero_momentum_step
from ffsim_ros.resources import sample_robot

MODEL = D.load_urdf(sample_robot('ffsim_servicer_7dof'))
N = MODEL.n


def random_q(rng: np.random.Generator) -> np.ndarray:
    q = D.neutral(MODEL)
    quat = rng.normal(size=4)
    q[:3], q[3:7] = rng.normal(size=3), quat / np.linalg.norm(quat)
    q[7:] = rng.uniform(-1.0, 1.0, size=N)
    return q


def skew(x: np.ndarray) -> np.ndarray:
    return np.array([[0, -x[2], x[1]], [x[2], 0, -x[0]], [-x[1], x[0], 0]])


# ------------------------------------------------------------------------------ the law alone


@pytest.mark.parametrize('seed', range(4))
def test_reactionless_projection_leaves_the_base_attitude_alone(seed: int) -> None:
    rng = np.random.default_rng(seed)
    q = random_q(rng)
    Nb = reactionless_basis(MODEL, q)
    assert Nb.shape == (N, N - 3)
    phidot = Nb @ rng.normal(size=N - 3)
    A = base_rate_map(MODEL, q)
    scale = np.linalg.norm(A) * np.linalg.norm(phidot)
    assert np.abs(A @ phidot).max() <= 1e-12 * scale
    x0 = D.base_velocity_from_momentum(MODEL, q, phidot)
    assert np.abs(x0[3:]).max() <= 1e-12 * max(1.0, np.linalg.norm(x0))
    # The angular momentum coupling about the system CoM vanishes (H_wphi phidot = 0, seed
    # eq. 16): with w0 = 0 and M V0 = -J_Tw phidot, L0 = M r0g~ V0 + H_Omega_phi phidot = 0.
    H0, H0m, _ = D.inertia_blocks(MODEL, q)
    M = MODEL.total_mass
    V0 = -H0m[:3] @ phidot / M
    r0g = D.center_of_mass(MODEL, q) - q[:3]
    L0 = M * skew(r0g) @ V0 + H0m[3:] @ phidot
    assert np.abs(L0).max() <= 1e-12 * np.linalg.norm(H0m) * np.linalg.norm(phidot)
    # ... whereas the base-CoM rows alone (H_Omega_phi) are not zero: they are not the condition
    assert np.abs(H0m[3:] @ phidot).max() > 1e-6 * np.linalg.norm(H0m) * np.linalg.norm(phidot)


def test_generalized_jacobian_gives_the_simulated_ee_velocity() -> None:
    rng = np.random.default_rng(7)
    q = random_q(rng)
    phidot = 0.2 * rng.normal(size=N)
    v = np.r_[D.base_velocity_from_momentum(MODEL, q, phidot), phidot]
    h = 1e-6
    pp = D.link_pose(MODEL, D.integrate(MODEL, q, v, h), 'ee_link')[0]
    pm = D.link_pose(MODEL, D.integrate(MODEL, q, -v, h), 'ee_link')[0]
    vel = (pp - pm) / (2 * h)
    Jstar = D.generalized_jacobian(MODEL, q, 'ee_link')
    assert np.linalg.norm(Jstar[:3] @ phidot - vel) < 1e-8 * max(1.0, np.linalg.norm(vel))


@pytest.mark.parametrize('mode', ['reactionless', 'gjm_tracking'])
def test_law_torques_give_the_commanded_joint_accelerations(mode: str) -> None:
    """``compute()`` turns its command ``phiddot = kv (phidot_d - phidot)`` into torques with
    the free-floating terms it evaluates (``H*, c*``: the base unactuated); ABA with those
    torques and no base wrench reproduces the command (and the exported generalized_inertia
    gives the same torques)."""
    rng = np.random.default_rng(8)
    q = random_q(rng)
    v = 0.02 * rng.normal(size=MODEL.nv)
    law = ReactionlessController(MODEL, 'ee_link', mode=mode)
    goal = D.link_pose(MODEL, q, 'ee_link')[0] + np.array([0.05, -0.03, 0.02])
    out = law.compute(q, v, goal)
    assert not out.saturated
    # the default feedforward: the commanded rates' derivative along the motion
    assert law.gains.rate_feedforward == 1.0
    # (the state has momentum: the law's terms carry it, held over the difference's step)
    ff = D.free_floating_terms(MODEL, q, v, 'ee_link')
    ee_drift, locked = momentum_drift(ff.H, ff.J, v)
    assert np.linalg.norm(locked) > 1e-3
    feedforward = law.rate_feedforward(
        q,
        v,
        out.phidot_desired,
        lambda qq: law.desired_rates(
            qq, law.task_terms(qq)._replace(ee_drift=ee_drift, locked_rate=locked), goal
        ),
    )
    assert np.linalg.norm(feedforward) > 1e-3
    phiddot = law.gains.kv_joint * (out.phidot_desired - v[6:]) + feedforward
    assert np.linalg.norm(phiddot) > 1.0  # a real command
    a = D.forward_dynamics(MODEL, q, v, out.tau)
    assert np.linalg.norm(a[6:] - phiddot) < 1e-10 * np.linalg.norm(phiddot)
    Hs, cs = generalized_inertia(MODEL, q, v)
    assert np.linalg.norm(Hs @ phiddot + cs - out.tau) < 1e-12 * np.linalg.norm(out.tau)


def test_gains_and_goals_are_validated() -> None:
    with pytest.raises(ValueError, match='kp_task'):
        Gains(kp_task=-1.0)
    with pytest.raises(ValueError, match='max_joint_speed'):
        Gains(max_joint_speed=2.0)
    law = ReactionlessController(MODEL, 'ee_link')
    q = D.neutral(MODEL)
    with pytest.raises(ValueError, match='finite'):
        law.check_goal(q, [np.nan, 0, 0])
    with pytest.raises(ValueError, match='unreachable'):
        law.check_goal(q, [12.0, 0, 0])
    # just beyond the bound the check uses (98 % of the reach): the message states that bound
    shoulder = law.shoulder_position(q)
    far = shoulder + np.array([0.99 * law.reach, 0.0, 0.0])
    with pytest.raises(ValueError) as err:
        law.check_goal(q, far)
    assert f'expected at most {0.98 * law.reach:.3f} m' in str(err.value)
    law.check_goal(q, shoulder + np.array([0.97 * law.reach, 0.0, 0.0]))
    with pytest.raises(ValueError, match='unknown link'):
        ReactionlessController(MODEL, 'no_such_link')


def test_point_distance_of_each_shape() -> None:
    from ffsim_ros.scene.geometry import Box, Capsule, Cylinder, Sphere, point_distance

    box = Box((2.0, 1.0, 0.5))
    assert point_distance(box, [0.0, 0.0, 0.0]) == pytest.approx(-0.25)  # to the nearest face
    assert point_distance(box, [1.1, 0.0, 0.0]) == pytest.approx(0.1)
    assert point_distance(box, [1.3, 0.9, 0.0]) == pytest.approx(0.5)  # (0.3, 0.4) to an edge
    assert point_distance(Sphere(0.5), [0.0, 0.3, 0.0]) == pytest.approx(-0.2)
    cyl = Cylinder(0.5, 2.0)
    assert point_distance(cyl, [0.3, 0.4, 0.9]) == pytest.approx(-0.0)
    assert point_distance(cyl, [0.0, 0.0, 0.0]) == pytest.approx(-0.5)
    assert point_distance(cyl, [0.0, 0.0, 1.5]) == pytest.approx(0.5)
    cap = Capsule(0.5, 2.0)
    assert point_distance(cap, [0.0, 0.0, 1.4]) == pytest.approx(-0.1)  # in a cap
    assert point_distance(cap, [0.0, 0.8, 0.0]) == pytest.approx(0.3)


def test_goals_inside_the_base_are_refused_at_the_measured_base_pose() -> None:
    """A goal inside the collision geometry of the base body (the base link and the links
    fixed to it) is refused, naming the link and the shape, with the margin; where the base is
    now (free-floating: it moved and turned), not where it started; shapes of the arm's links
    are no such volume; a robot without collision geometry has no such check."""
    from ffsim_ros.scene.geometry import shapes_from_urdf

    shapes = shapes_from_urdf(sample_robot('ffsim_servicer_7dof'), model=MODEL, meshes='ignore')
    margin = 0.005
    law = ReactionlessController(
        MODEL, 'ee_link', collision_shapes=shapes, collision_margin=margin
    )
    assert {s.link for s in law.base_shapes.shapes} >= {'base_link', 'arm_mount'}
    q = D.neutral(MODEL)
    pb, Rb = D.link_pose(MODEL, q, 'base_link')
    inside = pb + Rb @ [0.7, 0.0, 0.3]  # in the base box (1.8 x 1.6 x 1.6 m) by 0.2 m
    with pytest.raises(ValueError, match="inside the robot's base") as err:
        law.check_goal(q, inside)
    assert "box 1.8 x 1.6 x 1.6 m of link 'base_link'" in str(err.value)
    # the margin: a goal just outside the face is refused, one beyond the margin is not
    face = pb + Rb @ [0.9 + 0.5 * margin, 0.0, -0.5]
    with pytest.raises(ValueError, match="too close to the robot's base"):
        law.check_goal(q, face)
    law.check_goal(q, pb + Rb @ [0.9 + 2.0 * margin, 0.0, -0.5])
    # the base moved back by 0.5 m and turned about z: the same point is now outside its box
    moved = q.copy()
    moved[0] -= 0.5
    moved[3:7] = [0.0, 0.0, np.sin(0.05), np.cos(0.05)]
    pm, Rm = D.link_pose(MODEL, moved, 'base_link')
    assert np.abs(Rm.T @ (inside - pm)).max() > 0.9 + margin  # (outside the box)
    law.check_goal(moved, inside)
    with pytest.raises(ValueError, match="'base_link'"):  # where the base is now
        law.check_goal(moved, pm + Rm @ [0.7, 0.0, 0.3])
    # the arm's own shapes are not the base: the gripper box is no refused volume
    law.check_goal(q, D.link_pose(MODEL, q, 'arm_link_7')[0])
    # no collision geometry: only the reach is checked (the goal inside the base accepted)
    ReactionlessController(MODEL, 'ee_link').check_goal(q, inside)
    with pytest.raises(ValueError, match='collision_margin'):
        ReactionlessController(MODEL, 'ee_link', collision_margin=-1.0)


def test_gains_must_be_real_scalars() -> None:
    """A string, None, a bool, a complex number or an array is no gain: a TypeError names it
    (not numpy's ufunc error or 'truth value is ambiguous'); ints and float32 are taken, as
    floats."""
    for bad in ('1', None, True, 1 + 0j, np.array([1, 2]), np.array(1.0), [1.0]):
        with pytest.raises(TypeError, match='^gain kp_task: expected a real number'):
            Gains(kp_task=bad)
    with pytest.raises(ValueError, match='^gain k_null: expected a finite value >= 0'):
        Gains(k_null=float('nan'))
    gains = Gains(kp_task=2, kv_joint=np.float32(10.0), kp_attitude=np.int64(3))
    assert (gains.kp_task, gains.kv_joint, gains.kp_attitude) == (2.0, 10.0, 3.0)
    assert all(type(value) is float for value in gains.__dict__.values())


def test_an_unknown_mode_and_a_singular_inverse_are_named() -> None:
    """mode='bogus' said "'bogus' is not a valid ControlMode" (the modes there are unsaid);
    dls_pinv of a rank-deficient J without damping raised NumPy's bare 'Singular matrix'."""
    modes = r"\('reactionless', 'gjm_tracking', 'joint_pd'\)"
    with pytest.raises(ValueError, match=f"^mode: expected one of {modes}, got 'bogus'$"):
        ReactionlessController(MODEL, 'ee_link', mode='bogus')
    law = ReactionlessController(MODEL, 'ee_link')
    with pytest.raises(ValueError, match='^mode: expected one of'):
        law.mode = 'reactionles'
    assert law.mode is ControlMode.REACTIONLESS  # (unchanged)
    with pytest.raises(ValueError, match=r'^damping: J J\^T \+ damping\^2 E is singular'):
        dls_pinv(np.zeros((3, 7)), 0.0)
    J = np.random.default_rng(3).normal(size=(3, 7))
    np.testing.assert_allclose(dls_pinv(J, 0.0), np.linalg.pinv(J), atol=1e-12)


def test_compute_refuses_a_goal_or_state_nobody_gave() -> None:
    """compute checks its inputs (cheaply) before using them: one coordinate is not broadcast
    to three, a NaN or infinite goal does not give NaN efforts, a NaN in q or v is named
    rather than failing in an SVD; complex or string coordinates are a TypeError."""
    law = ReactionlessController(MODEL, 'ee_link')
    q, v = D.neutral(MODEL), np.zeros(MODEL.nv)
    goal = law.task_terms(q).position + 0.05
    good = law.compute(q, v, goal)
    assert np.all(np.isfinite(good.tau)) and np.any(good.tau)
    for bad in ([goal[0]], goal[:2], np.r_[goal, 0.0], [np.nan, 0, 0], [np.inf, 0, 0]):
        with pytest.raises(ValueError, match='^goal_position: expected 3 finite coordinates'):
            law.compute(q, v, bad)
    for bad in (goal + 1e-3j, 'abc', [True, False, True]):
        with pytest.raises(TypeError, match='^goal_position: expected real numbers, got'):
            law.compute(q, v, bad)
    with pytest.raises(TypeError, match='^goal: expected real numbers, got complex'):
        law.check_goal(q, goal + 1e-3j)
    bad_v = v.copy()
    bad_v[8] = np.nan
    with pytest.raises(ValueError, match=f'^v: expected {MODEL.nv} finite values'):
        law.compute(q, bad_v, goal)
    bad_q = q.copy()
    bad_q[9] = np.inf
    with pytest.raises(ValueError, match=f'^q: expected {MODEL.nq} finite values'):
        law.compute(bad_q, v, goal)
    for ref in ([np.nan, 0, 0, 1], [0, 0, 0, 0], [0, 0, 1]):
        with pytest.raises(ValueError, match='^attitude_reference: expected'):
            law.compute(q, v, goal, attitude_reference=ref)
    with pytest.raises(ValueError, match='^goal_rotation: expected'):
        law.compute(q, v, goal, np.full((3, 3), np.nan))
    # the checks take what the law took: lists, ints
    again = law.compute(q.tolist(), [0] * MODEL.nv, goal.tolist())
    assert np.array_equal(again.tau, good.tau)


def test_in_process_closed_loop_reactionless_vs_gjm() -> None:
    """Core-only loop (1 kHz RK4, 100 Hz control): reach 0.3 m; base still vs base turned."""
    results = {}
    for mode in ('reactionless', 'gjm_tracking'):
        law = ReactionlessController(MODEL, 'ee_link', mode=mode)
        q, v = D.neutral(MODEL), np.zeros(MODEL.nv)
        goal = D.link_pose(MODEL, q, 'ee_link')[0] + np.array([0.0, -0.15, 0.26])
        att = 0.0
        for k in range(8000):
            if k % 10 == 0:
                out = law.compute(q, v, goal, attitude_reference=D.neutral(MODEL)[3:7])
            q, v = D.step(MODEL, q, v, out.tau, 1e-3)
            if k % 100 == 0:
                att = max(
                    att, np.degrees(np.linalg.norm(D.difference(MODEL, D.neutral(MODEL), q)[3:6]))
                )
        err = np.linalg.norm(D.link_pose(MODEL, q, 'ee_link')[0] - goal)
        results[mode] = (err, att, np.abs(D.momentum(MODEL, q, v)).max())
    assert results['reactionless'][0] < 5e-3 and results['reactionless'][1] < 0.1
    assert results['gjm_tracking'][0] < 5e-3 and results['gjm_tracking'][1] > 1.0
    assert max(r[2] for r in results.values()) < 1e-8


# ------------------------------------------------------ the reaction null space (issue 15)


def null_space(A: np.ndarray) -> np.ndarray:
    """Orthonormal null-space basis from a QR of A^T (another basis than the law's SVD)."""
    Q, _ = np.linalg.qr(A.T, mode='complete')
    return Q[:, A.shape[0] :]


def test_budget_rates_meet_both_tasks_where_the_reaction_null_space_can() -> None:
    """Away from a fold ([J; A] of full rank 6 < 7) the budget law spends no attitude: the
    end-effector rate and the attitude correction are both met (damping 1e-6)."""
    rng = np.random.default_rng(3)
    q = random_q(rng)
    terms = ReactionlessController(MODEL, 'ee_link').task_terms(q)
    J, A = terms.J_star[:3], terms.B[3:6]
    assert np.linalg.svd(np.vstack((J, A)), compute_uv=False)[-1] > 1e-2
    xdot, w0_d = rng.normal(size=3) * 0.05, rng.normal(size=3) * 1e-3
    for offset in (0.0, 0.5e-3, 0.9e-3):
        phidot = budget_rates(J, A, xdot, w0_d, rate_weights(MODEL), 1e-6, offset, 1e-3)
        assert np.linalg.norm(J @ phidot - xdot) < 1e-7 * np.linalg.norm(xdot)
        assert np.linalg.norm(-A @ phidot - w0_d) < 1e-7 * np.linalg.norm(w0_d)


def test_budget_rates_stop_turning_the_base_at_the_budget() -> None:
    """At a fold (here made by hand: the first attitude row a combination of the first task
    row and the second attitude row, so moving the end effector along x0 needs a base rate)
    the end effector goes on by turning the base, less and less as the offset nears the
    budget: the barrier weight grows as 1 / (1 - offset / budget)^2."""
    rng = np.random.default_rng(4)
    J = rng.normal(size=(3, 7))
    A = rng.normal(size=(3, 7)) * 0.3
    A[0] = J[0] + A[1]
    assert np.linalg.matrix_rank(np.vstack((J, A)), tol=1e-9) == 5
    xdot = np.array([0.05, 0.0, 0.0])
    w = np.ones(7)
    rates = []
    for ratio in (0.0, 0.5, 0.9, 0.99, 0.999, 1.0, 2.0):
        phidot = budget_rates(J, A, xdot, np.zeros(3), w, 1e-3, ratio * 1e-3, 1e-3)
        assert np.all(np.isfinite(phidot))
        rates.append(np.linalg.norm(A @ phidot))
    assert rates[0] > 1e-3  # the end effector is moved, at the price of a base rate
    assert all(b < a for a, b in zip(rates[:4], rates[1:5], strict=True))
    assert rates[4] < 1e-5 * rates[0]
    assert rates[5] == rates[6]  # past the budget: the floor of the barrier
    with pytest.raises(ValueError, match='budget > 0'):
        budget_rates(J, A, xdot, np.zeros(3), w, 1e-3, 0.0, 0.0)


@pytest.mark.parametrize('seed', range(3))
def test_rns_manipulability_is_the_volume_of_the_reactionless_jacobian(seed: int) -> None:
    """``sqrt(det(J_N J_N^T))`` with another null-space basis, the same in any base attitude,
    zero where a task row lies in the span of the attitude rows."""
    rng = np.random.default_rng(seed)
    q = random_q(rng)
    law = ReactionlessController(MODEL, 'ee_link')
    terms = law.task_terms(q)
    J, A, w = terms.J_star[:3], terms.B[3:6], law.weights
    JN = (J * w) @ null_space(A * w)
    expected = np.sqrt(np.linalg.det(JN @ JN.T))
    assert rns_manipulability(J, A, w) == pytest.approx(expected, rel=1e-10)
    q2 = q.copy()
    q2[3:7] = rng.normal(size=4) / 2
    q2[3:7] /= np.linalg.norm(q2[3:7])
    t2 = law.task_terms(q2)
    assert rns_manipulability(t2.J_star[:3], t2.B[3:6], w) == pytest.approx(expected, rel=1e-9)
    J_bad = J.copy()
    J_bad[1] = 0.7 * A[2]
    assert rns_manipulability(J_bad, A, w) < 1e-12 * expected
    out = law.compute(q, np.zeros(MODEL.nv), terms.position + 0.1)
    assert out.rns_manipulability == pytest.approx(expected, rel=1e-10)


def test_self_motion_moves_neither_the_end_effector_nor_the_base() -> None:
    """Along the self-motion, under zero momentum, the end effector and the base attitude move
    only to second order (halving the step quarters the drift)."""
    rng = np.random.default_rng(5)
    q = random_q(rng)
    law = ReactionlessController(MODEL, 'ee_link')
    terms = law.task_terms(q)
    d = self_motion(terms.J_star[:3], terms.B[3:6], law.weights)
    assert np.linalg.norm(d) == pytest.approx(1.0)
    assert np.linalg.norm(terms.J_star[:3] @ d) < 1e-12
    assert np.linalg.norm(terms.B[3:6] @ d) < 1e-12
    drift = []
    for h in (0.02, 0.01):
        q1 = q.copy()
        for _ in range(20):  # joint rates d, the base moving with them (B re-evaluated)
            q1 = zero_momentum_step(MODEL, q1, d, law.task_terms(q1).B, h / 20)
        drift.append(
            (
                np.linalg.norm(law.task_terms(q1).position - terms.position),
                np.linalg.norm(attitude_error(q1[3:7], q[3:7])),
            )
        )
    assert drift[0][0] < 0.01 * 0.02 and drift[0][1] < 0.01 * 0.02
    assert drift[0][0] / drift[1][0] == pytest.approx(4.0, rel=0.05)
    assert drift[0][1] / drift[1][1] == pytest.approx(4.0, rel=0.05)
    assert self_motion(terms.J_star, terms.B[3:6], law.weights) is None  # 6 + 3 > 7 - 1


def test_the_self_motion_raises_the_rns_manipulability_and_holds_the_goal() -> None:
    """k_null > 0 with the goal where the end effector is: the arm moves only in its
    self-motion, the RNS manipulability climbs, the end effector and the base stay put; with
    k_null = 0 the same law leaves the arm where it is."""
    rng = np.random.default_rng(6)
    q0 = random_q(rng)
    for k_null, moved in ((2.0, True), (0.0, False)):
        law = ReactionlessController(MODEL, 'ee_link', gains=Gains(k_null=k_null))
        q = q0.copy()
        goal = law.task_terms(q).position
        values = []
        for _ in range(100):
            terms = law.task_terms(q)
            values.append(rns_manipulability(terms.J_star[:3], terms.B[3:6], law.weights))
            rates = law.desired_rates(q, terms, goal, attitude_reference=q0[3:7])
            q = zero_momentum_step(MODEL, q, rates, terms.B, 0.05)
        err = np.linalg.norm(law.task_terms(q).position - goal)
        turned = np.linalg.norm(attitude_error(q[3:7], q0[3:7]))
        assert err < 1e-3 and turned < 1e-6
        if moved:
            assert values[-1] > 1.02 * values[0]
            assert np.all(np.diff(values) > -1e-6 * values[0])  # climbs to a maximum
            assert np.linalg.norm(q[7:] - q0[7:]) > 0.05
        else:
            assert np.linalg.norm(q[7:] - q0[7:]) < 1e-12


def test_attitude_budget_needs_a_reference() -> None:
    law = ReactionlessController(MODEL, 'ee_link')
    q = D.neutral(MODEL)
    goal = law.task_terms(q).position + 0.1
    with pytest.raises(ValueError, match='attitude_reference'):
        law.compute(q, np.zeros(MODEL.nv), goal, attitude_budget=1e-3)
    with pytest.raises(ValueError, match='budget > 0'):
        law.compute(q, np.zeros(MODEL.nv), goal, attitude_reference=q[3:7], attitude_budget=0.0)
    law.mode = 'joint_pd'  # a mode name is turned into its ControlMode
    assert law.mode is ControlMode.JOINT_PD
    with pytest.raises(ValueError, match='reactionless or gjm_tracking'):
        law.desired_rates(q, law.task_terms(q), goal)


# ------------------------------------------------------------------------ closed loop over DDS


class Loop:
    def __init__(self, node, executor, wait_until) -> None:
        from geometry_msgs.msg import PoseStamped
        from nav_msgs.msg import Odometry
        from std_msgs.msg import Float64MultiArray

        self.node, self.executor, self.wait_until = node, executor, wait_until
        executor.add_node(node)
        from sensor_msgs.msg import JointState

        self.odom, self.mom, self.status, self.pose, self.cmd = [], [], [], [], []
        self.joints = []
        self.subs = [
            node.create_subscription(Odometry, 'base_odom', self.odom.append, 1000),
            node.create_subscription(JointState, 'joint_states', self.joints.append, 1000),
            node.create_subscription(
                Float64MultiArray, 'momentum', lambda m: self.mom.append(np.array(m.data)), 1000
            ),
            node.create_subscription(
                Float64MultiArray, 'status', lambda m: self.status.append(np.array(m.data)), 1000
            ),
            node.create_subscription(PoseStamped, 'ee_pose', self.pose.append, 1000),
            node.create_subscription(
                Float64MultiArray,
                'joint_effort_commands',
                lambda m: self.cmd.append((time.monotonic(), np.array(m.data))),
                1000,
            ),
        ]
        self.goal = node.create_publisher(PoseStamped, 'ee_goal', 10)

    def connect(self) -> None:
        assert self.wait_until(
            lambda: (
                all(s.get_publisher_count() > 0 for s in self.subs)
                and self.goal.get_subscription_count() > 0
                and self.pose
                and self.odom
            ),
            60,
            self.executor,
        ), 'simulator/controller not discovered'

    def sim_time(self) -> float:
        s = self.odom[-1].header.stamp
        return s.sec + s.nanosec * 1e-9

    def send_goal(self, xyz, frame: str = 'world') -> None:
        from geometry_msgs.msg import PoseStamped

        g = PoseStamped()
        g.header.frame_id = frame
        g.pose.position.x, g.pose.position.y, g.pose.position.z = (float(x) for x in xyz)
        g.pose.orientation.w = 1.0
        self.goal.publish(g)

    def run_for(self, seconds: float) -> None:
        t_end = self.sim_time() + seconds
        assert self.wait_until(lambda: self.sim_time() >= t_end, 10 * seconds + 30, self.executor)

    def max_attitude_deg(self, since: int = 0) -> float:
        return max(
            np.degrees(2 * np.arccos(min(1.0, abs(o.pose.pose.orientation.w))))
            for o in self.odom[since:]
        )


def start_loop(ros_process, mode: str, *extra: str):
    sim = ros_process('ffsim_ros.simulator', ros_args=['-p', 'real_time_factor:=1.0'], name='sim')
    args = ['-p', 'use_sim_time:=true', '-p', f'mode:={mode}']
    for e in extra:
        args += ['-p', e]
    ctl = ros_process('ffsim_ros.reactionless_controller', ros_args=args, name='controller')
    return sim, ctl


@pytest.mark.ros
@pytest.mark.parametrize('mode', ['reactionless', 'gjm_tracking'])
def test_closed_loop_over_dds(mode: str, ros_process, ros_node, ros_executor, wait_until) -> None:
    sim, ctl = start_loop(ros_process, mode)
    loop = Loop(ros_node('probe'), ros_executor, wait_until)
    loop.connect()
    p0 = loop.pose[-1].pose.position
    goal = np.array([p0.x, p0.y, p0.z]) + np.array([0.1, 0.2, -0.2])  # 0.3 m away
    start = len(loop.odom)
    loop.send_goal(goal)
    loop.run_for(10.0)
    p = loop.pose[-1].pose.position
    err = np.linalg.norm(np.array([p.x, p.y, p.z]) - goal)
    assert err <= 5e-3, ctl.describe()
    att = loop.max_attitude_deg(start)
    if mode == 'reactionless':
        assert att <= 0.1
    else:
        assert att >= 1.0
    moms = np.array(loop.mom[start:])
    assert np.abs(moms[:, :6]).max() <= 1e-8
    assert sim.is_running() and ctl.is_running()
    _check_pose_stamps(loop)


def _ns(stamp) -> int:
    return stamp.sec * 1_000_000_000 + stamp.nanosec


def _check_pose_stamps(loop: Loop) -> None:
    """Each ee_pose carries the stamp of the measured state it was computed from (it carried
    the control update's time, up to 50 ms later: 3.7-17.6 mm off the state of that stamp on a
    tumbling base, found by a probe): its position is the end effector's in the simulator's
    state of that stamp."""
    odom = {_ns(o.header.stamp): o for o in loop.odom}
    joints = {_ns(j.header.stamp): j for j in loop.joints}
    checked = 0
    for pose in loop.pose:  # (while the arm moves too: a pose of another instant differs)
        k = _ns(pose.header.stamp)
        assert k in odom or k < min(odom), k  # (one of the simulator's stamps)
        if k not in odom or k not in joints:
            continue
        o, j = odom[k].pose.pose, joints[k]
        qb, _ = D.base_state_from_link(
            MODEL,
            [o.position.x, o.position.y, o.position.z],
            [o.orientation.x, o.orientation.y, o.orientation.z, o.orientation.w],
            np.zeros(3),
            np.zeros(3),
        )
        q = np.r_[qb, j.position]
        p = pose.pose.position
        assert np.abs(D.link_pose(MODEL, q, 'ee_link')[0] - [p.x, p.y, p.z]).max() <= 1e-9
        checked += 1
    assert checked >= 100, checked


@pytest.mark.ros
def test_bad_goals_rejected_and_stale_state_stops_commands(
    ros_process, ros_node, ros_executor, wait_until
) -> None:
    # wall-clock controller here, so that its timer keeps running when the simulator stops
    sim, ctl = start_loop(ros_process, 'reactionless', 'use_sim_time:=false')
    loop = Loop(ros_node('probe'), ros_executor, wait_until)
    loop.connect()
    p0 = loop.pose[-1].pose.position
    here = np.array([p0.x, p0.y, p0.z])
    for goal, frame, text in (
        ([np.nan, 0.0, 0.0], 'world', 'finite'),
        (here + [0.0, 0.1, 0.0], 'base_link', "expected frame_id 'world'"),
        (here + [10.0, 0.0, 0.0], 'world', 'unreachable'),
        # inside the base box (the default servicer's, 1.8 x 1.6 x 1.6 m about the origin)
        ([0.0, 0.0, 0.0], 'world', "inside the robot's base: [0.0, 0.0, 0.0] is 0."),
    ):
        loop.send_goal(goal, frame)
        assert wait_until(lambda t=text: t in ctl.stderr(), 20, ros_executor), ctl.describe()
    # held still: after the rejections the arm stays where it was
    loop.run_for(1.0)
    p = loop.pose[-1].pose.position
    assert np.linalg.norm(np.array([p.x, p.y, p.z]) - here) < 1e-4
    assert loop.status[-1][7] == 0.0  # no goal active
    # stale state: stop the simulator -> the controller says so and stops commanding (its
    # line counted once the simulator is gone: a later one comes from a control tick without
    # state, whatever the load; it repeats every 2 s at most)
    sim.stop()

    def stale() -> int:  # (naming the topics: no fresh joint_states on /joint_states (...))
        return len(
            re.findall(r'\]: no fresh joint_states .*: not commanding$', ctl.stderr(), re.M)
        )

    before = stale()
    assert wait_until(lambda: stale() > before, 20, ros_executor), ctl.describe()
    count = len(loop.cmd)
    assert not wait_until(lambda: len(loop.cmd) > count, 1.0, ros_executor)
    assert ctl.is_running()


def test_joint_pd_desired_rate_is_the_rate_its_pd_law_tends_to() -> None:
    """In ``joint_pd`` mode the law is ``phiddot = kp e - kd phidot``, i.e. ``kd (phidot_d -
    phidot)`` with ``phidot_d = kp / kd e``: the reported rate is that, in rad/s (it was the
    joint-angle error ``e`` itself, in rad, whatever the gains). With ``kp = kd`` it is ``e``;
    other gains scale it by ``kp / kd``; it does not depend on the joint rates."""
    q = D.neutral(MODEL)
    goal = ReactionlessController(MODEL, 'ee_link').task_terms(q).position + [0.05, -0.05, 0.05]
    v = np.zeros(MODEL.nv)
    v[6:] = 0.01

    def rate(gains: Gains, v: np.ndarray) -> np.ndarray:
        law = ReactionlessController(MODEL, 'ee_link', mode='joint_pd', gains=gains)
        return law.compute(q, v, goal).phidot_desired

    error = rate(Gains(kp_joint=8.0, kd_joint=8.0), v)  # kp = kd: the joint-angle error [rad]
    assert np.linalg.norm(error) > 1e-3
    for kp, kd in ((25.0, 8.0), (4.0, 16.0)):
        np.testing.assert_allclose(rate(Gains(kp_joint=kp, kd_joint=kd), v), kp / kd * error)
        np.testing.assert_allclose(
            rate(Gains(kp_joint=kp, kd_joint=kd), np.zeros(MODEL.nv)), kp / kd * error
        )
    np.testing.assert_array_equal(rate(Gains(kd_joint=0.0), v), 0.0)


def test_models_with_spherical_joints_are_refused_by_the_law_and_prescribed_motion() -> None:
    """The law and the prescribed-base motion take ``phi = q[7:]`` as one angle per joint: a
    spherical joint (4 coordinates, 3 rates) is refused naming the sizes, not met by a shape
    error deep inside."""
    from ffsim_ros.dynamics.builder import random_model
    from ffsim_ros.dynamics.mufti import prescribed_base_dynamics

    model = random_model(3, 3, joint_types=('spherical', 'revolute'))
    assert model.nq != 7 + model.n
    with pytest.raises(ValueError, match=r'no spherical joint\), got nq = \d+, n = \d+'):
        ReactionlessController(model, model.link_names[-1])
    q = D.neutral(model)
    with pytest.raises(ValueError, match=r'no spherical joint, whose orientation is no angle'):
        prescribed_base_dynamics(
            model, lambda t: (q[:7], np.zeros(6), np.zeros(6)), 0.0, q[7:], np.zeros(model.n), 0
        )


def test_a_goal_rotation_that_is_a_mirror_is_refused() -> None:
    law = ReactionlessController(MODEL, 'ee_link', track_orientation=True)
    q = D.neutral(MODEL)
    goal = law.task_terms(q).position + 0.05
    mirror = np.diag([1.0, 1.0, -1.0])
    with pytest.raises(ValueError, match=r'goal_rotation: expected a rotation matrix .*det -1'):
        law.compute(q, np.zeros(MODEL.nv), goal, goal_rotation=mirror)
    out = law.compute(q, np.zeros(MODEL.nv), goal, goal_rotation=np.eye(3))  # a rotation: taken
    assert np.all(np.isfinite(out.tau))
