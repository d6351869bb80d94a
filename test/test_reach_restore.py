"""Issue 15: joint position limits in the law (joint clamping), the restoring law (the base
attitude given back with the end effector held) and the supervisor's use of it (holding a goal
reached with spent attitude; spend-and-restore cycles), in process, no DDS.

The restoring law moves the arm in the end effector's null space (four dimensions for the
servicer's seven joints and a position task) so that the reaction turns the base back: checked
in the dynamic closed loop (``D.step``, RK4 at 1 kHz, the law at 100 Hz) on the attitude and
the end effector, and against the reactionless law, which restores the attitude too but first.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import ffsim_ros.dynamics as D
from ffsim_ros.control import (
    Gains,
    GoalOutcome,
    GoalPhase,
    Plan,
    ReachSettings,
    ReachSupervisor,
    ReactionlessController,
    attitude_error,
)
from ffsim_ros.control.closed_loop import ClosedLoop
from ffsim_ros.control.planner import Approach
from ffsim_ros.control.rns import (
    LIMIT_STOP,
    LIMIT_ZONE,
    limit_scales,
    limit_zones,
    near_limits,
    reactionless_rates,
    restore_rates,
    saturate,
    zero_momentum_step,
)
from ffsim_ros.control.supervisor import CYCLE_PATIENCE
from ffsim_ros.dynamics.lie import quat_exp, quat_multiply
from ffsim_ros.resources import sample_robot

SERVICER = D.load_urdf(sample_robot('ffsim_servicer_7dof'))
BENT = np.array([0.3, -0.5, 0.4, 1.1, -0.3, 0.6, 0.2])


def bent() -> np.ndarray:
    q = D.neutral(SERVICER)
    q[7:] = BENT
    return q


def offset_deg(q: np.ndarray, ref: np.ndarray) -> float:
    return math.degrees(float(np.linalg.norm(attitude_error(q[3:7], ref))))


def test_limit_scales_closed_form() -> None:
    """1 outside the zone or moving away, 0 within LIMIT_STOP of the limit ahead (and beyond
    it), linear in between."""
    lower, upper = np.full(5, -2.0), np.full(5, 2.0)
    mid = 2.0 - 0.5 * (LIMIT_ZONE + LIMIT_STOP)
    phi = np.array([0.0, 2.0 - LIMIT_STOP, mid, -mid, 2.3])
    rates = np.array([1.0, 1.0, 1.0, -1.0, 1.0])
    np.testing.assert_allclose(
        limit_scales(phi, lower, upper, rates), [1, 0, 0.5, 0.5, 0], rtol=0, atol=1e-12
    )
    np.testing.assert_array_equal(limit_scales(phi, lower, upper, -rates), [1, 1, 1, 1, 1])
    np.testing.assert_array_equal(limit_scales(phi, lower, upper, 0.0 * rates), np.ones(5))


def test_limit_zones_of_short_locked_and_unlimited_joints() -> None:
    """A gripper finger's 0.04 m: zone 0.01 m and stop 0.0012 m (the same 0.12 ratio), so it
    moves freely at mid-range (with the 0.25 / 0.03 of the arm joints it could not move at
    all: 0.03 from both ends covers the whole range) and stops 1.2 mm short of a limit; a 1 rad
    joint and the servicer's are unchanged; a locked joint (no range) never moves toward its
    limit and gives no NaN; an unlimited one is never clamped."""
    lower = np.array([0.0, -0.5, -2.0, 0.3, -np.inf])
    upper = np.array([0.04, 0.5, 2.0, 0.3, np.inf])
    zone, stop = limit_zones(lower, upper)
    np.testing.assert_allclose(zone, [0.01, LIMIT_ZONE, LIMIT_ZONE, 0.0, LIMIT_ZONE], atol=1e-15)
    np.testing.assert_allclose(stop, zone * LIMIT_STOP / LIMIT_ZONE, atol=1e-15)
    phi = np.array([0.02, 0.0, 0.0, 0.3, 1e9])
    for sign in (1.0, -1.0):
        scales = limit_scales(phi, lower, upper, sign * np.ones(5))
        np.testing.assert_array_equal(scales, [1, 1, 1, 0, 1])
    assert near_limits(phi, lower, upper).tolist() == [False, False, False, True, False]
    finger = np.array([0.04 - 0.0012, 0.04 - 0.5 * (0.01 + 0.0012), 0.025, 0.005, 0.0])
    scales = limit_scales(finger, np.zeros(5), np.full(5, 0.04), np.ones(5))
    np.testing.assert_allclose(scales, [0.0, 0.5, 1.0, 1.0, 1.0], atol=1e-12)
    near = near_limits(finger, np.zeros(5), np.full(5, 0.04))
    assert near.tolist() == [True, True, False, True, True]
    servicer = limit_zones(SERVICER.lower, SERVICER.upper)
    assert np.all(servicer[0] == LIMIT_ZONE) and np.all(servicer[1] == LIMIT_STOP)


def test_rates_unchanged_away_from_the_limits_and_clamped_near_them() -> None:
    """Away from the limits the law's rates are the plain reactionless rates (to rounding); a
    goal that drives arm_joint_4 into its upper limit (2 rad) stops it LIMIT_STOP short while
    the others go on, with the base attitude held (the clamped joint out of the null space)."""
    law = ReactionlessController(SERVICER, 'ee_link')
    q = bent()
    terms = law.task_terms(q)
    goal = terms.position + np.array([0.0, 0.05, -0.05])
    rates = law.desired_rates(q, terms, goal, attitude_reference=q[3:7])
    g = law.gains
    xdot = saturate(g.kp_task * (goal - terms.position), g.max_ee_speed)
    plain, _ = reactionless_rates(
        terms.J_star[:3], terms.B[3:6], xdot, np.zeros(3), law.weights, g.damping
    )
    np.testing.assert_allclose(rates, plain, rtol=0, atol=1e-15)
    # arm_joint_4 bends the elbow: pull the tool toward the shoulder until it runs out
    q = bent()
    q[7 + 3] = 1.9
    ref = q[3:7].copy()
    terms = law.task_terms(q)
    goal = terms.position + 0.6 * (law.shoulder_position(q) - terms.position) / np.linalg.norm(
        law.shoulder_position(q) - terms.position
    )
    highest = q[7 + 3]
    for _ in range(300):
        terms = law.task_terms(q)
        r = law.desired_rates(q, terms, goal, attitude_reference=ref)
        q = zero_momentum_step(SERVICER, q, r, terms.B, 0.05)
        highest = max(highest, q[7 + 3])
    assert highest > 2.0 - LIMIT_ZONE  # the goal did push it into the zone
    assert highest <= 2.0 - LIMIT_STOP + 1e-6
    assert offset_deg(q, ref) < 1e-3


def spent_state() -> tuple[np.ndarray, np.ndarray]:
    """The bent arm with its attitude reference turned by 0.15 deg (a spent attitude)."""
    q = bent()
    ref = quat_multiply(quat_exp(np.radians(0.15) * np.array([0.6, -0.8, 0.0])), q[3:7])
    return q, ref


def test_restore_rates_hold_the_end_effector_and_turn_the_base_back() -> None:
    """First order: ``J* phidot`` = the end-effector rate asked (zero: held) to rounding and
    the base angular velocity ``-A phidot`` = the one asked within 5 % (the damping
    ``RESTORE_DAMPING`` against the small singular values of ``A W N_J``); the reactionless
    law meets the attitude rate exactly but moves the end effector."""
    law = ReactionlessController(SERVICER, 'ee_link')
    q, ref = spent_state()
    t = law.task_terms(q)
    w0_d = law.gains.kp_attitude * attitude_error(q[3:7], ref)
    J, A = t.J_star[:3], t.B[3:6]
    r = restore_rates(J, A, np.zeros(3), w0_d, law.weights, law.gains.damping)
    assert np.abs(J @ r).max() < 1e-12
    assert np.linalg.norm(-A @ r - w0_d) < 0.05 * np.linalg.norm(w0_d)
    xdot = np.zeros(3)
    other, _ = reactionless_rates(J, A, xdot, w0_d, law.weights, law.gains.damping)
    np.testing.assert_allclose(-A @ other, w0_d, rtol=0, atol=1e-12)
    assert np.linalg.norm(J @ other) > 1e-3 * np.linalg.norm(w0_d)


def test_closed_loop_restores_the_attitude_with_the_end_effector_held() -> None:
    """The dynamic closed loop under ``compute(..., restore=True)``: the base turned back from
    0.15 deg to under 0.02 deg (0.1 deg: the tolerance) within 10 s, the end effector within
    1 mm of where it was all the way, momentum conserved."""
    law = ReactionlessController(SERVICER, 'ee_link')
    q, ref = spent_state()
    v = np.zeros(SERVICER.nv)
    p0 = law.task_terms(q).position
    worst = 0.0
    t = 0.0
    assert offset_deg(q, ref) == pytest.approx(0.15, abs=1e-9)
    while t < 10.0 and offset_deg(q, ref) > 0.02:
        out = law.compute(q, v, p0, None, ref, restore=True)
        q, v = D.step(SERVICER, q, v, out.tau, 0.001, steps=10)
        worst = max(worst, float(np.linalg.norm(law.task_terms(q).position - p0)))
        t += 0.01
    assert offset_deg(q, ref) <= 0.02
    assert worst < 1e-3
    assert np.abs(out.momentum).max() < 1e-9


def test_reached_after_spending_the_goal_is_held_while_the_attitude_is_restored() -> None:
    """A goal reached by the budget law (the approach, started by an empty plan) with the base
    0.15 deg off the reference: reached once the offset is within the 0.1 deg tolerance, then
    held with the restoring law: 3 s later the offset is under 0.03 deg, the end effector still
    within the tolerance."""
    law = ReactionlessController(SERVICER, 'ee_link')
    sup = ReachSupervisor(law, ReachSettings())
    q, ref = spent_state()
    sup.reset_attitude_reference(np.concatenate((q[:3], ref, q[7:])))
    loop = ClosedLoop(sup, q=q)
    goal = loop.ee_position() + np.array([0.0, 0.02, 0.0])
    sup.set_goal(loop.t, loop.q, goal)
    sup.follow(loop.t, Plan((), Approach(0.0, 0.0, 0.0, 0.0), 0, 1))
    assert loop.update().phase is GoalPhase.APPROACH
    while loop.t < 20.0 and sup.status.active:
        loop.update()
    status = sup.status
    assert status.outcome is GoalOutcome.REACHED, status.reason
    assert status.reason.startswith('reached after 0 plan(s)')
    assert 0.05 < offset_deg(loop.q, ref) <= 0.1
    t_end = loop.t + 3.0
    while loop.t < t_end:
        status = loop.update()
        assert status.phase is GoalPhase.HOLDING
        assert status.position_error <= ReachSettings().position_tolerance
    assert offset_deg(loop.q, ref) < 0.03


def test_spend_and_restore_cycles_give_up_without_progress() -> None:
    """With ``max_cycles`` > 0 a stall starts the cycles (spend, then restore); a law that
    cannot move toward the goal (kp_task 0) makes no progress, so after CYCLE_PATIENCE cycles
    they give up and, with no plans allowed, the goal is aborted naming the cycles."""
    settings = ReachSettings(
        stall_time=0.3, max_plans=0, max_cycles=5, max_loop_plans=0, max_path_plans=0
    )
    law = ReactionlessController(SERVICER, 'ee_link', gains=Gains(kp_task=0.0))
    sup = ReachSupervisor(law, settings)
    loop = ClosedLoop(sup, q=bent())
    goal = loop.ee_position() + np.array([0.0, 0.2, 0.0])
    sup.set_goal(loop.t, loop.q, goal)
    phases = []
    while loop.t < 10.0 and sup.status.active:
        phase = loop.update().phase
        if not phases or phases[-1] is not phase:
            phases.append(phase)
    status = sup.status
    assert status.outcome is GoalOutcome.ABORTED
    cycle = [GoalPhase.SPEND, GoalPhase.RESTORE]
    assert phases[:7] == [GoalPhase.TRACKING, *cycle * CYCLE_PATIENCE]
    assert status.reason.startswith(
        f'stalled 200.0 mm short ({CYCLE_PATIENCE} spend-and-restore cycle(s), the last '
        f'{CYCLE_PATIENCE} without 1 mm of progress) after 0 plan(s) (max_plans 0), '
        f'{CYCLE_PATIENCE} cycle(s) (max_cycles 5)'
    )
    # the stall, then each cycle a spending stall (nothing to restore): 0.3 s each
    assert status.elapsed < (1 + CYCLE_PATIENCE) * 0.3 + 0.1
