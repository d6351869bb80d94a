"""Issue 15, Lie-bracket loops (``ffsim_ros.control.loops``): cyclic joint motions inside the
reaction null space that move the servicer to another leaf, and a goal beyond a fold reached
with them (in-process, no DDS).

The goal state is taken from ``benchmarks/reach.py`` (servicer, reactionless, seed 0, goal 11):
aborted before as "no path through the reaction null space" after three searches (the budget
law would need 0.37 deg of attitude, the budget is 0.2 deg).
"""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

import ffsim_ros.dynamics as D
from ffsim_ros.control import (
    Gains,
    GoalOutcome,
    ReachSettings,
    ReachSupervisor,
    ReactionlessController,
    attitude_error,
)
from ffsim_ros.control.closed_loop import ClosedLoop
from ffsim_ros.control.loops import LOOP_SPEED, LoopPlanner, loop_rates
from ffsim_ros.control.rns import scaled_to_limits, zero_momentum_step
from ffsim_ros.control.supervisor import LOOP_STEPS
from ffsim_ros.resources import sample_robot

SERVICER = D.load_urdf(sample_robot('ffsim_servicer_7dof'))
SETTINGS = ReachSettings()
#: Joint angles [rad] where seed 0's goal 11 started (base at the reference attitude).
PHI = np.array(
    [
        4.1938980679183341e-01,
        8.1987597651255906e-02,
        1.9237103022346458e-01,
        -6.3548566927047717e-02,
        -1.0896985863281343e00,
        -1.1034688770803966e00,
        -1.5184390976034579e00,
    ]
)
GOAL = np.array([2.7471491675567457, 0.6167545322432927, 1.0072825383757742])


def start() -> np.ndarray:
    q = D.neutral(SERVICER)
    q[7:] = PHI
    return q


def angle(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.linalg.norm(attitude_error(a, b)))


def test_loop_legs_leave_the_base_still_and_the_loop_changes_the_leaf() -> None:
    """A leg's rates lie in the reaction null space (``A phidot`` = 0 to rounding), move its
    joint in the commanded sense at ``LOOP_SPEED`` of the fastest joint's limit. The predicted
    loop (arm_joint_4, arm_joint_6, 1 rad) keeps the base attitude (< 1e-9 rad) but does not
    close: the straight joint path back to the start turns the base by > 0.05 deg (the leaf
    changed; a loop of 0.1 rad shifts it ~100 times less)."""
    law = ReactionlessController(SERVICER, 'ee_link')
    q0 = start()
    terms = law.task_terms(q0)
    vmax = law.gains.max_joint_speed * SERVICER.velocity_limit
    for joint, sign in ((3, 1.0), (5, -1.0)):
        rates = loop_rates(law, q0, terms, joint, sign, None)
        assert np.abs(terms.B[3:6] @ rates).max() < 1e-12 * np.abs(rates).max()
        assert sign * rates[joint] > 0.0
        assert np.max(np.abs(rates) / vmax) == pytest.approx(LOOP_SPEED, rel=1e-12)

    def loop(a: float) -> np.ndarray:
        q = q0.copy()
        for joint, sweep in ((3, a), (5, a), (3, -a), (5, -a)):
            s0, sign = q[7 + joint], math.copysign(1.0, sweep)
            while sign * (q[7 + joint] - s0) < abs(sweep):
                t = law.task_terms(q)
                q = zero_momentum_step(
                    SERVICER, q, loop_rates(law, q, t, joint, sign, None), t.B, 0.05
                )
            assert angle(q[3:7], q0[3:7]) < 1e-9
        back = q.copy()
        for _ in range(100):  # straight back to the start joints, base free
            t = law.task_terms(back)
            back = zero_momentum_step(SERVICER, back, (q0[7:] - q[7:]) / 100, t.B, 1.0)
        np.testing.assert_allclose(back[7:], q0[7:], atol=1e-12)
        return np.degrees(angle(back[3:7], q0[3:7]))

    big, small = loop(1.0), loop(0.1)
    assert big > 0.05
    assert small < big / 50


def test_loops_reach_a_goal_beyond_the_fold_within_the_budget() -> None:
    """From seed 0's goal 11 the loop search finds a plan (the approach alone would need
    > 0.3 deg). The supervisor, given the goal alone, stalls at the fold and searches loops
    first (complete plans only, before any detour: the detours' budget edges used to leave
    the arm where the goal needed 1.7 deg); in the closed loop (``D.step`` at 1 kHz, the
    supervisor at 100 Hz) the goal is reached within 5 mm with no detour search, the base
    attitude never beyond the 0.2 deg budget, and back under 0.1 deg after 1 s of holding."""
    law = ReactionlessController(SERVICER, 'ee_link')
    q0 = start()
    ref = q0[3:7].copy()
    planner = LoopPlanner(
        law,
        q0,
        GOAL,
        ref,
        budget=0.9 * SETTINGS.attitude_budget,
        position_tolerance=SETTINGS.position_tolerance,
        attitude_tolerance=SETTINGS.attitude_tolerance,
        stall_time=SETTINGS.stall_time,
        stall_progress=SETTINGS.stall_progress,
        dt=SETTINGS.plan_dt,
        radius=SETTINGS.plan_radius,
        max_steps=60000,
        seed=0,
    )
    planner.advance(10**9)
    assert planner.initial_delta > math.radians(0.3)
    assert planner.plan is not None and planner.loops >= 1
    legs = planner.plan.segments
    assert len(legs) == 4 * planner.loops and all(s.joint >= 0 for s in legs)

    sup = ReachSupervisor(law, SETTINGS)
    loop = ClosedLoop(sup, q0)
    sup.set_goal(loop.t, loop.q, GOAL)
    worst = 0.0
    status = sup.status
    while status.active and loop.t < 250.0:
        status = loop.update()
        worst = max(worst, angle(loop.q[3:7], ref))
    assert status.outcome is GoalOutcome.REACHED, status.reason
    assert status.position_error <= SETTINGS.position_tolerance
    assert status.plans == 0 and 'after 0 plan(s) and' in status.reason, status.reason
    assert 'Lie-bracket loop(s)' in status.reason
    t_end = loop.t + 1.0
    while loop.t < t_end:
        loop.update()
        worst = max(worst, angle(loop.q[3:7], ref))
    assert worst <= SETTINGS.attitude_budget
    assert angle(loop.q[3:7], ref) < SETTINGS.attitude_tolerance
    assert np.linalg.norm(GOAL - loop.ee_position()) < SETTINGS.position_tolerance


def test_a_goal_no_loop_helps_is_aborted_naming_the_loop_searches() -> None:
    """A law that cannot move toward the goal (kp_task 0): the loop search at the first stall
    and, after the detour searches, every loop search (``max_loop_plans``) end without a plan
    within their step budget
    (``LOOP_STEPS`` x ``plan_max_steps``) and the goal is aborted with a reason that names
    them, the attitude within the budget."""
    settings = ReachSettings(plan_max_steps=300, max_plans=1, max_loop_plans=2)
    law = ReactionlessController(SERVICER, 'ee_link', gains=Gains(kp_task=0.0))
    loop = ClosedLoop(ReachSupervisor(law, settings), start())
    goal = loop.ee_position() + np.array([0.0, 0.2, 0.0])
    record = loop.run_goal(goal, timeout=120.0, settle=1.0)
    assert record.outcome is GoalOutcome.ABORTED
    assert record.reason.startswith('no path through the reaction null space: 1 search(es)')
    assert (
        '2 loop search(es) (max_loop_plans 2) and 1 for complete plans at the first stall '
        'planning 0 Lie-bracket loop(s)'
    ) in record.reason
    assert record.planner_steps <= 301 + 3 * (LOOP_STEPS * 300 + 1)
    assert record.max_offset <= settings.attitude_budget


def test_a_loop_leg_heading_into_a_joint_limit_is_dropped_for_the_approach() -> None:
    """A loop leg followed in the closed loop is watched: once a joint it moves is over half
    way into the ``LIMIT_ZONE`` of a position limit and heads on to it, the loop's remaining
    legs are dropped and the approach (with the law's joint clamping) takes over; the joint
    never reaches its limit. Here a leg that would turn arm_joint_4 by -1.5 rad from 0.3 rad
    inside its lower limit (-2 rad)."""
    from ffsim_ros.control import GoalPhase
    from ffsim_ros.control.planner import Approach, Plan, Segment
    from ffsim_ros.control.rns import LIMIT_ZONE

    law = ReactionlessController(SERVICER, 'ee_link')
    q0 = start()
    q0[7 + 3] = SERVICER.lower[3] + 0.3
    sup = ReachSupervisor(law, SETTINGS)
    loop = ClosedLoop(sup, q0)
    p = loop.ee_position()
    sup.set_goal(loop.t, loop.q, p + np.array([0.0, 0.0, 0.1]))
    legs = tuple(
        Segment(p, 10.0, joint=j, sweep=a) for j, a in ((3, -1.5), (5, -1.5), (3, 1.5), (5, 1.5))
    )
    sup.follow(loop.t, Plan(legs, Approach(0.0, 0.0, 0.0, 0.0), 0, 1))
    lowest, phases = math.inf, []
    while loop.t < 3.0:
        status = loop.update()
        lowest = min(lowest, float(loop.q[7 + 3]))
        phases.append(status.phase)
    dropped = phases.index(GoalPhase.APPROACH)  # the leg dropped, the approach on
    assert dropped > 10 and all(ph is GoalPhase.DETOUR for ph in phases[:dropped])
    assert SERVICER.lower[3] < lowest < SERVICER.lower[3] + 0.5 * LIMIT_ZONE
    assert GoalPhase.DETOUR not in phases[dropped:]


def test_rates_scale_to_limits_also_without_finite_limits() -> None:
    """Joints without a velocity limit (``inf``: a URDF without ``<limit>``) count with the
    largest finite limit, 1 where none is: loop legs then stay finite (a division by zero
    stopped the law, and the base turned 7 deg)."""
    x = np.array([0.2, -0.4, 0.1])
    np.testing.assert_allclose(scaled_to_limits(x, np.full(3, np.inf), 0.8), 2.0 * x)
    np.testing.assert_allclose(
        scaled_to_limits(x, np.array([1.0, np.inf, 2.0]), 0.5), x * 0.5 / 0.2
    )
    assert not scaled_to_limits(np.zeros(3), np.ones(3), 0.5).any()
    urdf = sample_robot('ffsim_servicer_7dof').read_text()
    continuous = urdf.replace('type="revolute"', 'type="continuous"')
    unlimited = D.load_urdf(re.sub(r'<limit[^>]*/>', '', continuous))
    assert np.isinf(unlimited.velocity_limit).all()
    law = ReactionlessController(unlimited, 'ee_link')
    q0 = start()
    rates = loop_rates(law, q0, law.task_terms(q0), 3, 1.0, None)
    assert np.isfinite(rates).all() and np.abs(rates).max() == pytest.approx(LOOP_SPEED)
