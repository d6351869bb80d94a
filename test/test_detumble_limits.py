"""Detumbling within the joint limits: a momentum distribution the arm cannot store is
re-planned at the capture (``Detumbler.plan``), and the braking clamps the joints heading into
a limit."""

from __future__ import annotations

import math

import numpy as np
import pytest

import ffsim_ros.dynamics as D
from ffsim_ros.control.capture import CaptureGains, Detumbler, momentum_terms, storage_rollout
from ffsim_ros.resources import sample_robot
from ffsim_ros.scene import Sphere, rigid_target, welded_model

CONTROL_DT = 0.01


def light_servicer() -> D.Model:
    """The sample servicer on a 30 kg bus (600 kg shipped) with a 4 kg solar array (36 kg):
    a base about as heavy as its 108 kg arm."""
    text = open(sample_robot('ffsim_servicer_7dof'), encoding='utf-8').read()
    swaps = {
        '<mass value="600"/>': '<mass value="30"/>',
        'ixx="256" ixy="0" ixz="0" iyy="290" iyz="0" izz="290"': (
            'ixx="12.8" ixy="0" ixz="0" iyy="14.5" iyz="0" izz="14.5"'
        ),
        '<mass value="36"/>': '<mass value="4"/>',
        'ixx="35.643976" ixy="0" ixz="0" iyy="3.845552" iyz="0" izz="39.481576"': (
            'ixx="3.96" ixy="0" ixz="0" iyy="0.43" iyz="0" izz="4.39"'
        ),
    }
    for old, new in swaps.items():
        assert text.count(old) == 1, old
        text = text.replace(old, new)
    return D.load_urdf(text)


ROBOT = light_servicer()
ARM = np.array([0.3, 0.6, -0.2, 1.2, 0.3, -0.5, 0.2])


def captured(target_mass: float, joint_rates, arm=ARM):
    """The robot welded to a sphere of ``target_mass`` [kg] 0.35 m ahead of its gripper, the
    state right after the capture: ``(model, q, v)``."""
    q = D.neutral(ROBOT)
    q[7:] = arm
    p, R = D.link_pose(ROBOT, q, 'ee_link')
    at = p + R @ np.array([0.0, 0.0, 0.35])
    inertia = np.diag([1.0, 1.2, 1.4]) * target_mass / 10.0
    target = rigid_target('t', mass=target_mass, shape=Sphere(0.3), inertia=inertia, position=at)
    model = welded_model(ROBOT, q, 'ee_link', target.model, np.r_[at, 0.0, 0.0, 0.0, 1.0], 't/')
    v = np.zeros(model.nv)
    v[3:6] = [0.01, -0.02, 0.015]
    v[6:] = joint_rates
    return model, q, v


def detumble(det: Detumbler, model: D.Model, q, v, duration: float):
    """Closed loop (physics 1 ms RK4, law every 10 ms): the largest excursion beyond a joint
    limit [rad], the peak base angular acceleration after 0.3 s [rad/s^2], the end state."""
    excess, peak, w_prev, t = -np.inf, 0.0, v[3:6].copy(), 0.0
    for _ in range(int(round(duration / CONTROL_DT))):
        tau, _, _ = det.update(t, q, v)
        q, v = D.step(model, q, v, tau, 1e-3, steps=10)
        t += CONTROL_DT
        excess = max(excess, float(np.max(np.r_[q[7:] - model.upper, model.lower - q[7:]])))
        if t > 0.3:
            peak = max(peak, float(np.linalg.norm(v[3:6] - w_prev)) / CONTROL_DT)
        w_prev = v[3:6].copy()
    return excess, peak, q, v


def test_a_momentum_the_arm_cannot_store_is_released_faster_within_the_limits() -> None:
    """A 150 kg target on a light base: storing the momentum (7.9 deg/s of locked base rate)
    3 s and releasing it at 0.05 deg/s^2 would drive the joints through their limits (the
    law took a joint 0.66 rad past its limit within 25 s). The plan releases it
    at once at the least doubled acceleration its prediction keeps within the limit zones."""
    model, q, v = captured(150.0, 0.2 * np.array([0.5, -0.8, 0.3, 0.6, -0.4, 0.9, -0.7]))
    gains = CaptureGains()
    vmax = gains.max_joint_speed * model.velocity_limit
    assert 'limit zone' in storage_rollout(
        model, q, v, gains.store_time, gains.base_acceleration, vmax
    )
    det = Detumbler(model, ROBOT.n, 'momentum_distribution', gains, 0.0, q, v)
    assert det.store_time == 0.0
    assert det.base_acceleration > gains.base_acceleration
    ratio = det.base_acceleration / gains.base_acceleration
    assert ratio == 2.0 ** round(math.log2(ratio))
    assert 'cannot store the momentum' in det.reason and 'limit zone' in det.reason
    assert f'released at {np.degrees(det.base_acceleration):.3g} deg/s^2' in det.reason
    excess, peak, q, v = detumble(det, model, q, v, 25.0)
    assert excess < -0.01  # never at a limit
    assert peak <= 1.05 * det.base_acceleration
    assert det.phase == 'hold' and np.abs(v[6:]).max() < 1e-4
    c = momentum_terms(model, q, v).locked_rate
    np.testing.assert_allclose(v[3:6], c, atol=1e-5)


def test_braking_when_even_a_fast_release_would_not_fit() -> None:
    """Momentum so large that any release within the limits would be faster than braking over
    ``brake_time``: the law brakes (gjm) and says so."""
    model, q, v = captured(400.0, 0.6 * np.array([0.5, -0.8, 0.3, 0.6, -0.4, 0.9, -0.7]))
    gains = CaptureGains(brake_time=4.0)
    det = Detumbler(model, ROBOT.n, 'momentum_distribution', gains, 0.0, q, v)
    assert det.phase == 'brake' and det.reason.endswith('braking (gjm) instead')
    excess, _, _, v = detumble(det, model, q, v, 6.0)
    assert excess < 0.0
    assert det.phase == 'hold' and np.abs(v[6:]).max() < 1e-4


@pytest.mark.parametrize('mode', ['gjm', 'momentum_distribution'])
def test_braking_clamps_a_joint_heading_into_its_limit(mode: str) -> None:
    """A wrist joint 0.1 rad from its limit turning toward it at 0.45 rad/s: braking over 2 s
    would take it 0.35 rad past (it did); the joint is clamped in the limit's zone."""
    arm = ARM.copy()
    arm[6] = ROBOT.upper[6] - 0.1
    rates = np.zeros(ROBOT.n)
    rates[6] = 0.45
    model, q, v = captured(150.0, rates, arm)
    gains = CaptureGains(brake_time=2.0)
    det = Detumbler(model, ROBOT.n, mode, gains, 0.0, q, v)
    assert det.phase == 'brake'  # (momentum distribution: the joint is in its zone already)
    excess, _, q, v = detumble(det, model, q, v, 3.0)
    assert excess < 0.0
    assert det.phase == 'hold' and np.abs(v[6:]).max() < 1e-4
