"""URDF readings the controllers must honour: ``velocity="0"`` (no speed limit) in every rate
cap, ``<mimic>`` couplings recorded on the model and held by the reactionless law, a limit
without ``lower``/``upper`` (0 and 0) warned about, a massless base under one joint named."""

from __future__ import annotations

import re

import numpy as np
import pytest

import ffsim_ros.dynamics as D
from ffsim_ros.control import ReactionlessController
from ffsim_ros.control.batched import BatchedLaw
from ffsim_ros.control.capture import secondary_scale, storage_rollout
from ffsim_ros.control.rns import (
    capped_to_limits,
    default_joint_masks,
    mimic_joints,
    speed_limits,
)
from ffsim_ros.resources import sample_robot

SERVICER_URDF = sample_robot('ffsim_servicer_7dof').read_text()


def servicer(velocity7: str = '0') -> D.Model:
    """The servicer with arm_joint_7's ``<limit velocity>`` set to ``velocity7``."""
    text = re.sub(
        r'(<joint name="arm_joint_7".*?<limit [^>]*velocity=")[^"]*"',
        rf'\g<1>{velocity7}"',
        SERVICER_URDF,
        flags=re.S,
    )
    return D.load_urdf(text)


# ------------------------------------------------------------------ velocity="0": no limit


def test_speed_limits_read_zero_and_inf_as_unlimited() -> None:
    np.testing.assert_array_equal(
        speed_limits(np.array([0.2, 0.0, np.inf, np.nan]), 0.5), [0.1, np.inf, np.inf, np.inf]
    )
    # a scale of 0 (kv_joint 0) caps the limited joints at 0, leaves the others unlimited
    np.testing.assert_array_equal(speed_limits(np.array([0.2, 0.0]), 0.0), [0.0, np.inf])
    vmax = np.array([0.2, 0.2, 0.0])
    # the unlimited joint moves at any rate; the others scale the whole vector
    np.testing.assert_allclose(capped_to_limits(np.array([0.1, 0.4, 5.0]), vmax), [0.05, 0.2, 2.5])
    np.testing.assert_array_equal(
        capped_to_limits(np.array([0.1, 0.2, 5.0]), vmax), [0.1, 0.2, 5.0]
    )
    rows = capped_to_limits(np.array([[0.1, 0.4, 5.0], [0.1, 0.1, 0.0]]), vmax)
    np.testing.assert_allclose(rows, [[0.05, 0.2, 2.5], [0.1, 0.1, 0.0]])


def test_one_unlimited_joint_leaves_the_laws_speed_scaling_of_the_others_on() -> None:
    """With arm_joint_7 at velocity="0" the reactionless law and its batched twin still
    scale the rate vector to the other joints' limits (they returned it unscaled: arm_joint_5
    ran at 2.99 times its limit in closed loop), and arm_joint_7 keeps its feedforward."""
    model = servicer('0')
    law = ReactionlessController(model, 'ee_link')
    allowed = law.gains.max_joint_speed * model.velocity_limit
    rates = np.full(model.n, 1.0)
    out = law._limit_rates(rates)
    np.testing.assert_allclose(out, rates * allowed[0] / 1.0)  # (0.2 rad/s: the tightest)
    assert np.all(np.abs(out[:6]) <= allowed[:6] * (1 + 1e-12))
    batched = BatchedLaw(law)._limit_rates(np.vstack((rates, 0.1 * rates)))
    np.testing.assert_allclose(batched, [out, 0.1 * rates])
    # the feedforward of the unlimited joint is not capped at 0
    q, v = D.neutral(model), np.zeros(model.nv)
    ramp = np.zeros(model.n)
    ramp[6] = 1.0

    def field(qq: np.ndarray) -> np.ndarray:
        return ramp * (qq[0] - q[0] + 0.01)  # (moves with the base: nonzero along v)

    v[0] = 1.0
    acc = law.rate_feedforward(q, v, np.zeros(model.n), field)
    assert acc[6] > 0.0 and not acc[:6].any()


def test_capture_rate_caps_read_velocity_zero_as_unlimited() -> None:
    vmax = np.array([0.2, 0.2, 0.0])
    # moving: the others' limits still apply (was: every rate zeroed, ratio inf)
    np.testing.assert_allclose(
        capped_to_limits(np.array([0.1, 0.4, 0.05]), vmax), [0.05, 0.2, 0.025]
    )
    # at rest: scaled by the others (was: NaN ratio, nothing scaled)
    np.testing.assert_allclose(capped_to_limits(np.array([0.1, 0.4, 0.0]), vmax), [0.05, 0.2, 0.0])
    # the secondary correction is not stopped by the unlimited joint
    assert secondary_scale(np.zeros(3), np.array([0.1, 0.1, 3.0]), vmax) == 1.0
    # the storage prediction does not call any motion of it too fast
    model = D.load_urdf(sample_robot('ffsim_servicer_7dof'))
    q, v = D.neutral(model), np.zeros(model.nv)
    v[5] = 0.002  # (a base rate the arm takes up: every joint moves)
    limits = np.full(model.n, 10.0)
    assert storage_rollout(model, q, v, 1.0, 0.001, limits) == ''
    limits[6] = 1e-9  # (a real, tiny limit: too fast)
    assert 'arm_joint_7 beyond its speed limit' in storage_rollout(model, q, v, 1.0, 0.001, limits)
    limits[6] = 0.0  # (velocity="0": none)
    assert storage_rollout(model, q, v, 1.0, 0.001, limits) == ''


# ------------------------------------------------------------------ mimic couplings

INERTIAL = (
    '<inertial><origin xyz="0.1 0 0"/><mass value="{m}"/><inertia ixx="0.01" iyy="0.02" '
    'izz="0.02" ixy="0" ixz="0" iyz="0"/></inertial>'
)


def hand(mimic: str = '<mimic joint="finger_a" multiplier="-1" offset="0.01"/>') -> str:
    """A base, a two-joint arm and two prismatic fingers, finger_b mimicking finger_a."""

    def link(name: str, mass: float) -> str:
        return f'<link name="{name}">{INERTIAL.format(m=mass)}</link>'

    def joint(name: str, kind: str, parent: str, child: str, axis: str, extra: str = '') -> str:
        return (
            f'<joint name="{name}" type="{kind}"><parent link="{parent}"/><child link="{child}"/>'
            f'<origin xyz="0.3 0 0"/><axis xyz="{axis}"/>'
            '<limit lower="-1" upper="1" effort="10" velocity="0.5"/>'
            f'{extra}</joint>'
        )

    return (
        '<robot name="hand">'
        + link('base', 50.0)
        + link('l1', 3.0)
        + link('l2', 2.0)
        + link('fa', 0.2)
        + link('fb', 0.2)
        + '<link name="ee_link"/>'
        + joint('j1', 'revolute', 'base', 'l1', '0 0 1')
        + joint('j2', 'revolute', 'l1', 'l2', '0 1 0')
        + joint('finger_a', 'prismatic', 'l2', 'fa', '0 1 0')
        + joint('finger_b', 'prismatic', 'l2', 'fb', '0 -1 0', mimic)
        + '<joint name="ee" type="fixed"><parent link="l2"/><child link="ee_link"/>'
        '<origin xyz="0.2 0 0"/></joint>' + '</robot>'
    )


def test_mimic_couplings_are_recorded_on_the_model() -> None:
    with pytest.warns(D.MimicWarning, match=r'finger_b \(mimics finger_a\)'):
        model = D.load_urdf(hand())
    assert model.mimics == (D.Mimic('finger_b', 'finger_a', -1.0, 0.01),)
    assert isinstance(model.mimics, tuple)  # (the model stays immutable)
    with pytest.warns(D.MimicWarning):
        default = D.load_urdf(hand('<mimic joint="finger_a"/>'))
    assert default.mimics == (D.Mimic('finger_b', 'finger_a', 1.0, 0.0),)
    # a mimic of a joint the robot does not have couples nothing
    with pytest.warns(D.MimicWarning, match='a joint the robot does not have'):
        assert D.load_urdf(hand('<mimic joint="nope"/>')).mimics == ()
    with pytest.raises(ValueError, match="finger_b <mimic>: multiplier must be a number, got 'a"):
        D.load_urdf(hand('<mimic joint="finger_a" multiplier="abc"/>'))
    # kept through pickling and welding
    import pickle

    assert pickle.loads(pickle.dumps(model)).mimics == model.mimics
    welded = D.weld_models(
        D.load_urdf(sample_robot('ffsim_servicer_7dof')), 'ee_link', model, prefix='h_'
    )
    assert welded.mimics == (D.Mimic('h_finger_b', 'h_finger_a', -1.0, 0.01),)
    assert D.load_urdf(sample_robot('ffsim_servicer_7dof')).mimics == ()


def test_the_reactionless_law_holds_mimic_joints_by_default() -> None:
    """``auto``: finger_a and finger_b (the coupling finger_b = -finger_a + 0.01, not
    modelled) are held in every mode -- the law recruited both as momentum compensators,
    moving them apart; names given are moved as given."""
    with pytest.warns(D.MimicWarning):
        model = D.load_urdf(hand())
    assert mimic_joints(model) == ('finger_a', 'finger_b')
    law = ReactionlessController(model, 'ee_link')
    assert law.active_joints == ('j1', 'j2')
    assert not law.weights[2:].any()
    law.mode = 'gjm_tracking'
    assert law.active_joints == ('j1', 'j2')
    every, path = default_joint_masks(model, 'ee_link')
    np.testing.assert_array_equal(every, [1, 1, 0, 0])
    np.testing.assert_array_equal(path, [1, 1, 0, 0])
    # commanded rates: zero for the held fingers (gjm_tracking: the two arm joints move)
    q, v = D.neutral(model), np.zeros(model.nv)
    goal = D.link_pose(model, q, 'ee_link')[0] + np.array([0.0, 0.05, 0.02])
    out = law.compute(q, v, goal)
    assert np.any(out.phidot_desired[:2]) and not np.any(out.phidot_desired[2:])
    given = ReactionlessController(model, 'ee_link', active_joints=['j1', 'finger_b'])
    assert given.active_joints == ('j1', 'finger_b')
    # a link only mimic joints move (fingers on the base): nothing left to move it by default
    with pytest.warns(D.MimicWarning):
        fingers = D.load_urdf(
            hand().replace(
                '<parent link="l2"/><child link="f', '<parent link="base"/><child link="f'
            )
        )
    with pytest.raises(ValueError, match='at least one joint on the path to'):
        ReactionlessController(fingers, 'fb')


def test_the_active_joints_parameter_holds_or_refuses_mimic_joints() -> None:
    from ffsim_ros.node_support import ParameterValueError
    from ffsim_ros.node_support.controller_parameters import (
        PARAMETERS,
        active_joints_from,
        held_mimics_note,
    )

    with pytest.warns(D.MimicWarning):
        model = D.load_urdf(hand())

    def joints(text: str):
        values = {'active_joints': PARAMETERS['active_joints'].validate(text), 'ee_link': 'fa'}
        return active_joints_from(values, model), held_mimics_note(values, model)

    assert joints('auto')[0] is None
    assert 'finger_a, finger_b held' in joints('auto')[1]
    assert joints('all')[0] == ('j1', 'j2')
    assert 'finger_b mimics finger_a' in joints('all')[1]
    # chain: the path to fa less the coupling (it moved finger_a, breaking finger_b's mimic)
    assert joints('chain')[0] == ('j1', 'j2') and 'finger_a, finger_b held' in joints('chain')[1]
    for names in ('j1,finger_b', 'j1,finger_a'):  # (either joint of a coupling)
        with pytest.raises(ParameterValueError, match=r'^active_joints: .*finger_b \(mimics f'):
            joints(names)
    with pytest.warns(D.MimicWarning):  # (fingers on the base: only mimic joints move them)
        fingers = D.load_urdf(
            hand().replace(
                '<parent link="l2"/><child link="f', '<parent link="base"/><child link="f'
            )
        )
    with pytest.raises(ParameterValueError, match='^active_joints: .*on the path to'):
        active_joints_from({'active_joints': 'auto', 'ee_link': 'fb'}, fingers)


# ------------------------------------------------------------------ other URDF readings


LIMIT = '<limit lower="-1" upper="1" effort="10" velocity="1"/>'


def two_links(root_mass: str, joint: str, limit: str = LIMIT) -> str:
    root = '' if root_mass == '' else INERTIAL.format(m=root_mass)
    return (
        f'<robot name="t"><link name="root">{root}</link>'
        f'<link name="a">{INERTIAL.format(m=5)}</link>'
        f'<link name="b">{INERTIAL.format(m=1)}</link>'
        f'<joint name="j1" type="{joint}"><parent link="root"/><child link="a"/>'
        f'<axis xyz="0 0 1"/>{limit}</joint>'
        '<joint name="j2" type="revolute"><parent link="a"/><child link="b"/>'
        f'<origin xyz="0.3 0 0"/><axis xyz="0 1 0"/>{LIMIT}</joint></robot>'
    )


def test_a_massless_base_under_one_joint_is_named() -> None:
    with pytest.raises(ValueError, match="^base body 'root' has no mass: .* its one joint j1"):
        D.load_urdf(two_links('', 'revolute'))
    with pytest.raises(ValueError, match="^base body 'root' has no mass"):
        D.load_urdf(two_links('', 'prismatic'))
    # joined by a fixed joint the massless root is merged into a: accepted
    model = D.load_urdf(two_links('', 'fixed', ''))
    assert model.joint_names == ('j2',) and model.frame('root').body == 0
    assert D.load_urdf(two_links('1', 'revolute')).joint_names == ('j1', 'j2')


def test_a_limit_without_lower_and_upper_is_read_as_zero_with_a_warning() -> None:
    with pytest.warns(D.LimitWarning, match=r'joint j1: limit lower = upper = 0 \(no lower/up'):
        model = D.load_urdf(two_links('1', 'revolute', '<limit effort="10" velocity="1"/>'))
    assert model.lower[0] == model.upper[0] == 0.0  # (as urdfdom reads it)
    with pytest.warns(D.LimitWarning, match=r'joint j1: limit lower = upper = 0.5: the joint'):
        D.load_urdf(two_links('1', 'prismatic', LIMIT.replace('-1" upper="1', '0.5" upper="0.5')))
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter('error')
        D.load_urdf(two_links('1', 'continuous', '<limit effort="10" velocity="1"/>'))
        D.load_urdf(two_links('1', 'revolute'))


def test_the_capture_laws_hold_mimic_joints() -> None:
    """The interception and the detumbler moved the fingers of a <mimic> coupling
    (finger_b = -finger_a + 0.01) independently (regression probe: 4.55e-5 m/s each way): their
    rate weights are 0 (rns.unmimicked_rate_weights), the arm joints do the work."""
    from ffsim_ros.control.capture import (
        CaptureGains,
        Detumbler,
        GraspPoint,
        intercept,
        momentum_terms,
    )
    from ffsim_ros.control.rns import unmimicked_rate_weights

    with pytest.warns(D.MimicWarning):
        model = D.load_urdf(hand())
    np.testing.assert_array_equal(unmimicked_rate_weights(model)[2:], [0.0, 0.0])
    assert np.all(unmimicked_rate_weights(model)[:2] > 0.0)
    q, v = D.neutral(model), np.zeros(model.nv)
    v[6:8] = [0.05, -0.03]
    terms = momentum_terms(model, q, v)
    p = D.link_pose(model, q, 'ee_link')[0]
    target = GraspPoint(p + [0.0, 0.03, 0.02], np.zeros(3), None)
    out = intercept(model, q, terms, ('ee_link', np.zeros(3)), target, CaptureGains())
    assert np.any(out.phidot[:2]) and not np.any(out.phidot[2:])
    detumbler = Detumbler(model, model.n, 'momentum_distribution', CaptureGains(), 0.0, q, v)
    assert not np.any(detumbler.weights[2:])


def test_the_reach_bound_counts_prismatic_travel() -> None:
    """The goal check's reach bound summed the link lengths at the neutral pose only: an end
    effector carried by a slide standing at its limit was refused as out of reach at its own
    position (unseen-robot probe: 2.909 m against 2.901 m). Each slide on the path adds its
    farthest travel from 0."""
    model = D.load_urdf(hand(''))  # (no mimic: finger_a a 1 m slide on the path to fa)
    law = ReactionlessController(model, 'fa')
    assert law.reach == pytest.approx(0.6 + 1.0)  # (l1 to l2 to fa 0.3 + 0.3; the slide +-1)
    q = D.neutral(model)
    q[7:] = [0.0, 0.0, 1.0, 0.0]
    here = D.link_pose(model, q, 'fa')[0]
    assert np.linalg.norm(here - law.shoulder_position(q)) > 0.98 * 0.6
    law.check_goal(q, here)  # (refused before: 'goal unreachable')
    with pytest.raises(ValueError, match='unreachable'):
        law.check_goal(q, law.shoulder_position(q) + [2.0, 0.0, 0.0])
