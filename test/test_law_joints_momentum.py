"""The end-effector law's joint set (the joints it may move) and its momentum terms."""

from __future__ import annotations

import math

import numpy as np
import pytest

import ffsim_ros.control.reactionless as reactionless_module
import ffsim_ros.dynamics as D
from ffsim_ros.control import ReachSettings, ReachSupervisor, ReactionlessController
from ffsim_ros.control.batched import BatchedLaw
from ffsim_ros.control.closed_loop import ClosedLoop
from ffsim_ros.control.rns import (
    LOCKED_RATE_NOTICE,
    MomentumWatch,
    active_joint_mask,
    chain_joints,
    momentum_notice,
    self_motion,
)
from ffsim_ros.resources import sample_robot

DUAL = D.load_urdf(sample_robot('dual_arm_servicer'))
RIGHT = [k for k, name in enumerate(DUAL.joint_names) if name.startswith('right_')]
LEFT = [k for k, name in enumerate(DUAL.joint_names) if name.startswith('left_')]
LEFT_NAMES = tuple(DUAL.joint_names[k] for k in LEFT)
SERVICER = D.load_urdf(sample_robot('ffsim_servicer_7dof'))


def run_goal(law: ReactionlessController, offset, v0=None, timeout: float = 30.0):
    """One goal ``offset`` [m] from the end effector, closed loop (physics 1 kHz, law 100 Hz)."""
    loop = ClosedLoop(ReachSupervisor(law, ReachSettings(goal_timeout=timeout)), None, v0)
    q0 = loop.q.copy()
    record = loop.run_goal(loop.ee_position() + np.asarray(offset), timeout=timeout, settle=0.5)
    return loop, q0, record


# --------------------------------------------------------------------------- the joint set


def test_the_path_to_each_arms_end_effector() -> None:
    assert list(chain_joints(DUAL, 'left_ee_link')) == LEFT
    assert list(chain_joints(DUAL, 'right_ee_link')) == RIGHT
    assert chain_joints(SERVICER, 'ee_link') == tuple(range(SERVICER.n))
    # by default: every joint in reactionless mode, the goal arm's in the others
    law = ReactionlessController(DUAL, 'left_ee_link')
    assert law.active_joints == DUAL.joint_names and np.all(law.weights > 0.0)
    for mode in ('gjm_tracking', 'joint_pd'):
        law.mode = mode
        assert law.active_joints == LEFT_NAMES
        np.testing.assert_array_equal(law.weights[RIGHT], 0.0)
    law.mode = 'reactionless'
    assert law.active_joints == DUAL.joint_names
    # given: in every mode
    law = ReactionlessController(DUAL, 'left_ee_link', active_joints=LEFT_NAMES)
    for mode in ('reactionless', 'gjm_tracking', 'joint_pd'):
        law.mode = mode
        assert law.active_joints == LEFT_NAMES
        np.testing.assert_array_equal(law.active[RIGHT], 0.0)


@pytest.mark.parametrize('mode', ['reactionless', 'gjm_tracking'])
def test_a_goal_for_one_arm_leaves_the_other_arm_still(mode: str) -> None:
    """``gjm_tracking`` by default, ``reactionless`` with the goal arm's joints given, move
    the goal arm only: the other arm was swung by up to 0.058 rad (gjm_tracking, to move this
    tip through the base reaction) and 0.068 rad (reactionless, recruited against the
    reaction, with no way to keep it still) for a 0.32 m goal of the left arm."""
    joints = LEFT_NAMES if mode == 'reactionless' else None
    law = ReactionlessController(DUAL, 'left_ee_link', mode=mode, active_joints=joints)
    loop, q0, record = run_goal(law, [0.0, 0.1, -0.3])
    assert record.outcome.value == 'reached', record.reason
    assert np.abs(loop.q[7:][RIGHT] - q0[7:][RIGHT]).max() < 1e-3
    assert np.abs(loop.q[7:][LEFT] - q0[7:][LEFT]).max() > 0.1
    if mode == 'reactionless':
        assert math.degrees(record.max_offset) < 0.2


@pytest.mark.parametrize('joints', [None, DUAL.joint_names])
def test_reactionless_mode_recruits_the_other_arm_by_default(joints) -> None:
    """By default (or every joint named) the other arm cancels part of the reaction."""
    law = ReactionlessController(DUAL, 'left_ee_link', active_joints=joints)
    assert law.active_joints == DUAL.joint_names
    loop, q0, record = run_goal(law, [0.0, 0.1, -0.3])
    assert record.outcome.value == 'reached', record.reason
    assert np.abs(loop.q[7:][RIGHT] - q0[7:][RIGHT]).max() > 1e-2
    assert math.degrees(record.max_offset) < 0.2


def test_held_joints_are_held_by_the_batched_law_too() -> None:
    """BatchedLaw (the campaigns' law) agrees with the single law and holds the same joints,
    states with momentum included."""
    rng = np.random.default_rng(5)
    for mode in ('reactionless', 'gjm_tracking'):
        joints = LEFT_NAMES if mode == 'reactionless' else None
        law = ReactionlessController(DUAL, 'left_ee_link', mode=mode, active_joints=joints)
        batched = BatchedLaw(law)
        Q = np.stack([D.neutral(DUAL)] * 4)
        Q[:, 7:] += rng.uniform(-0.3, 0.3, (4, DUAL.n))
        V = rng.normal(scale=0.05, size=(4, DUAL.nv))
        terms = batched.terms(Q, V)
        targets = terms.position + rng.normal(scale=0.1, size=(4, 3))
        drift = (terms.ee_drift, terms.locked_rate)
        rates = batched.desired_rates(
            Q, terms.position, terms.J_star, terms.B, targets, None, drift
        )
        np.testing.assert_array_equal(rates[:, RIGHT], 0.0)
        assert np.abs(rates[:, LEFT]).max() > 1e-2
        tau = batched.efforts(Q, V, terms, targets)
        for k in range(4):
            out = law.compute(Q[k], V[k], targets[k])
            np.testing.assert_array_equal(out.phidot_desired[RIGHT], 0.0)
            np.testing.assert_allclose(rates[k], out.phidot_desired, rtol=0, atol=1e-12)
            scale = max(1.0, np.abs(tau[k]).max())
            np.testing.assert_allclose(tau[k], out.tau, rtol=0, atol=1e-12 * scale)


def test_the_self_motion_leaves_the_held_joints_out() -> None:
    """With the other arm held (weight 0) the self-motion moves the goal arm only, and
    neither the end effector nor the base (it was NaN or on a held joint)."""
    law = ReactionlessController(DUAL, 'left_ee_link', active_joints=LEFT_NAMES)
    q = D.neutral(DUAL)
    q[7:] += np.random.default_rng(2).uniform(-0.4, 0.4, DUAL.n)
    terms = law.task_terms(q)
    d = self_motion(terms.J_star[:3], terms.B[3:6], law.weights)
    assert d is not None and np.isfinite(d).all()
    np.testing.assert_array_equal(d[RIGHT], 0.0)
    assert np.linalg.norm(d) == pytest.approx(1.0)
    assert np.abs(terms.J_star[:3] @ d).max() < 1e-12
    assert np.abs(terms.B[3:6] @ d).max() < 1e-12


@pytest.mark.parametrize(
    ('joints', 'error', 'words'),
    [
        (['left_arm_joint_1', 'elbow'], ValueError, "unknown joints ['elbow']"),
        (['right_arm_joint_1'], ValueError, 'at least one joint on the path to'),
        (['left_arm_joint_1', 'left_arm_joint_1'], ValueError, 'each joint once'),
        ('left_arm_joint_1', TypeError, 'a sequence of joint names'),
        ([1, 2], TypeError, 'a sequence of joint names'),
    ],
)
def test_bad_joint_sets_are_refused_naming_them(joints, error, words) -> None:
    with pytest.raises(error, match='active_joints') as info:
        active_joint_mask(DUAL, 'left_ee_link', joints)
    assert words in str(info.value)
    with pytest.raises(error):
        ReactionlessController(DUAL, 'left_ee_link', active_joints=joints)


# ------------------------------------------------------------------------------- momentum


def locked_rate_of_the_rigid_system(model: D.Model, q: np.ndarray, v: np.ndarray) -> np.ndarray:
    """``I^-1 L_g`` of the system frozen at ``q``: the inertia summed body by body about the
    system CoM (parallel axis), ``L_g`` from :func:`ffsim_ros.dynamics.momentum`."""
    R, p = D.body_poses(model, q)
    a = model.arrays
    com = np.array([p[b] + R[b] @ a.com[b] for b in range(len(a.mass))])
    rg = (a.mass[:, None] * com).sum(axis=0) / a.mass.sum()
    inertia = np.zeros((3, 3))
    for b in range(len(a.mass)):
        r = com[b] - rg
        inertia += R[b] @ a.inertia[b] @ R[b].T + a.mass[b] * (r @ r * np.eye(3) - np.outer(r, r))
    return np.linalg.solve(inertia, D.momentum(model, q, v, about='com')[3:])


@pytest.mark.parametrize('seed', range(3))
def test_the_locked_rate_is_the_rigid_systems_rate(seed: int) -> None:
    rng = np.random.default_rng(seed)
    for model, link in ((SERVICER, 'ee_link'), (DUAL, 'right_ee_link')):
        q = D.neutral(model)
        q[:3] = rng.normal(size=3)
        quat = rng.normal(size=4)
        q[3:7] = quat / np.linalg.norm(quat)
        q[7:] += rng.uniform(-0.5, 0.5, model.n)
        v = rng.normal(scale=0.1, size=model.nv)
        out = ReactionlessController(model, link).compute(q, v, None)
        expected = locked_rate_of_the_rigid_system(model, q, v)
        np.testing.assert_allclose(out.locked_rate, expected, rtol=0, atol=1e-12)
        assert np.linalg.norm(expected) > 1e-3


def test_the_locked_rate_is_zero_without_momentum_and_no_notice_is_given() -> None:
    law = ReactionlessController(SERVICER, 'ee_link')
    q = D.neutral(SERVICER)
    out = law.compute(q, np.zeros(SERVICER.nv), None)
    np.testing.assert_array_equal(out.locked_rate, 0.0)
    assert momentum_notice(out.locked_rate, 'reactionless') == ''
    tiny = np.array([0.0, 0.0, 0.5 * LOCKED_RATE_NOTICE])
    assert momentum_notice(tiny, 'reactionless') == ''
    big = np.array([0.0, 0.0, math.radians(0.2)])
    assert 'angular momentum' in momentum_notice(big, 'reactionless')
    assert '0.2 deg/s' in momentum_notice(big, 'reactionless')
    assert momentum_notice(big, 'gjm_tracking') == ''
    watch = MomentumWatch()  # (once per onset, for a log)
    said = [watch.update(rate, 'reactionless') for rate in (tiny, big, 1.1 * big, tiny, big)]
    assert [bool(x) for x in said] == [False, True, False, False, True]
    assert watch.notice == momentum_notice(big, 'reactionless')


V_DRIFT = np.zeros(SERVICER.nv)
V_DRIFT[3:6] = np.array([0.3, -0.5, 0.8]) / np.linalg.norm([0.3, -0.5, 0.8])


def test_gjm_tracking_reaches_a_goal_with_the_base_drifting(monkeypatch) -> None:
    """A base turning at 1 deg/s (the system has angular momentum): the end effector moves
    with ``J* phidot + J_s H0^-1 h0``. With the drift term the goal is reached; without it
    (the zero-momentum law) the arm lags the drifting tip and stalls some 36 mm short."""
    v0 = V_DRIFT * math.radians(1.0)
    law = ReactionlessController(SERVICER, 'ee_link', mode='gjm_tracking')
    _, _, record = run_goal(law, [0.1, 0.1, -0.1], v0, timeout=15.0)
    assert record.outcome.value == 'reached', record.reason
    assert record.error < 5e-3
    zero = (np.zeros(6), np.zeros(3))
    monkeypatch.setattr(reactionless_module, 'momentum_drift', lambda H, J, v: zero)
    law = ReactionlessController(SERVICER, 'ee_link', mode='gjm_tracking')
    _, _, blind = run_goal(law, [0.1, 0.1, -0.1], v0, timeout=15.0)
    assert blind.outcome.value != 'reached' and blind.error > 0.02


def test_reactionless_mode_holds_the_base_under_a_small_momentum() -> None:
    """0.2 deg/s of locked base rate (e.g. a target released after its detumbling): the
    attitude task asks ``A phidot = c - w0_d``, so the base is held (the arm absorbing the
    momentum) and the goal reached; the notice says the base cannot be held for ever. (The
    zero-momentum law held a 2 deg offset and missed the goal by 0.38 m.)"""
    law = ReactionlessController(SERVICER, 'ee_link')
    loop, _, record = run_goal(law, [0.1, 0.1, -0.1], V_DRIFT * math.radians(0.2), timeout=15.0)
    assert record.outcome.value == 'reached', record.reason
    assert math.degrees(record.max_offset) < 0.05
    out = law.compute(loop.q, loop.v, None)
    assert math.degrees(np.linalg.norm(out.locked_rate)) == pytest.approx(0.2, rel=0.1)
    assert 'holds the base only while the arm keeps moving' in momentum_notice(
        out.locked_rate, law.mode
    )


@pytest.mark.ros  # (the parameter table lives with the node's rclpy types; no DDS)
def test_the_active_joints_parameter() -> None:
    """``active_joints``: ``auto`` (default: the law's own), ``chain``, ``all``, or names;
    bad values named (the node exits 2 on them)."""
    from ffsim_ros.node_support import ParameterValueError
    from ffsim_ros.node_support.controller_parameters import PARAMETERS, active_joints_from

    spec = PARAMETERS['active_joints']
    assert spec.default == 'auto' and not spec.dynamic

    def joints(text: str):
        value = spec.validate(text)
        return active_joints_from({'active_joints': value, 'ee_link': 'left_ee_link'}, DUAL)

    assert joints('auto') is None
    assert joints('chain') == LEFT_NAMES
    assert joints('all') == DUAL.joint_names
    assert joints(' left_arm_joint_1 , right_arm_joint_2') == (
        'left_arm_joint_1',
        'right_arm_joint_2',
    )
    for bad, words in (
        ('', "expected 'auto', 'chain', 'all' or joint names"),
        ('left_arm_joint_1,,left_arm_joint_2', 'joint names separated by commas'),
    ):
        with pytest.raises(ParameterValueError, match='active_joints') as info:
            joints(bad)
        assert words in str(info.value)
    for bad, words in (
        ('left_arm_joint_1,wrist', "unknown joints ['wrist']"),
        ('right_arm_joint_1', 'at least one joint on the path to'),
    ):
        with pytest.raises(ParameterValueError, match='^active_joints: ') as info:
            joints(bad)
        assert words in str(info.value)


@pytest.mark.ros
def test_the_controller_node_passes_active_joints_to_its_law(rclpy_context) -> None:
    """The node's ``active_joints`` reaches the law (``chain``: the left arm alone on the dual
    arm, in reactionless mode too), and a joint the robot lacks ends the start naming it."""
    from rclpy.parameter import Parameter

    from ffsim_ros.node_support import ParameterValueError
    from ffsim_ros.reactionless_controller import ReactionlessControllerNode

    common = [
        Parameter('robot_file', value=str(sample_robot('dual_arm_servicer'))),
        Parameter('ee_link', value='left_ee_link'),
    ]
    node = ReactionlessControllerNode(
        context=rclpy_context,
        parameter_overrides=[*common, Parameter('active_joints', value='chain')],
    )
    try:
        assert node.law.mode.value == 'reactionless'
        left = tuple(DUAL.joint_names[k] for k in chain_joints(DUAL, 'left_ee_link'))
        assert node.law.active_joints == left and len(left) < DUAL.n
    finally:
        node.destroy_node()
    with pytest.raises(ParameterValueError, match='active_joints'):
        ReactionlessControllerNode(
            context=rclpy_context,
            parameter_overrides=[*common, Parameter('active_joints', value='no_such_joint')],
        )
