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
    GoalPhase,
    ReachSettings,
    ReachSupervisor,
    ReactionlessController,
    attitude_error,
)
from ffsim_ros.control.closed_loop import ClosedLoop
from ffsim_ros.control.loops import (
    LOOP_SPEED,
    MAX_LEG_SLOWDOWN,
    LoopPlanner,
    leg_pace,
    loop_rates,
)
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

    sup = ReachSupervisor(law, ReachSettings(max_path_plans=0))  # (the loops alone)
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
    settings = ReachSettings(plan_max_steps=300, max_plans=1, max_loop_plans=2, max_path_plans=0)
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


@pytest.mark.parametrize('degrees', [0.2, 5.0, 30.0])
def test_loop_rates_stay_within_the_speed_limits_at_any_attitude_error(degrees: float) -> None:
    """The attitude hold is part of the rates scaled to the speed limits: at 5 deg of attitude
    error it alone asked for ~14 times the servicer's limits on every leg (it was added after
    the scaling). Below the limits the rates are the leg plus the hold, unscaled."""
    law = ReactionlessController(SERVICER, 'ee_link')
    q0 = start()
    terms = law.task_terms(q0)
    vmax = law.gains.max_joint_speed * SERVICER.velocity_limit
    assert np.array_equal(q0[3:7], [0.0, 0.0, 0.0, 1.0])  # the reference: a turn from it
    axis = np.array([0.3, -0.2, 1.0]) / np.linalg.norm([0.3, -0.2, 1.0])
    half = 0.5 * math.radians(degrees)
    ref = np.r_[axis * math.sin(half), math.cos(half)]
    e = attitude_error(q0[3:7], ref)
    assert np.linalg.norm(e) == pytest.approx(math.radians(degrees), rel=1e-9)
    A = terms.B[3:6]
    for joint in range(SERVICER.n):
        for sign in (1.0, -1.0):
            rates = loop_rates(law, q0, terms, joint, sign, ref)
            assert np.max(np.abs(rates) / vmax) <= 1.0 + 1e-12
            leg = loop_rates(law, q0, terms, joint, sign, None)
            hold = -np.linalg.pinv(A) @ (law.gains.kp_attitude * e)
            unscaled = leg + hold
            if np.max(np.abs(unscaled) / vmax) <= 1.0:
                np.testing.assert_allclose(rates, unscaled, atol=1e-12)
            else:  # scaled as a whole: the direction kept, the fastest joint at its limit
                assert np.max(np.abs(rates) / vmax) == pytest.approx(1.0, rel=1e-12)
                k = np.argmax(np.abs(unscaled))
                np.testing.assert_allclose(rates, unscaled * rates[k] / unscaled[k], atol=1e-12)


def test_the_loop_search_refuses_legs_far_slower_than_their_pace() -> None:
    """A leg whose joint moves far slower than its speed limit allows (the other joints carry
    the motion: ``X_k`` ill-conditioned) is refused by the search. From this servicer pose the
    loop (arm_joint_1, arm_joint_3, 1 rad) was predicted with a first leg of 55.8 s, 8 times
    its pace (on a 7-joint arm with a prismatic joint such a leg, 26 times its pace, stalled
    in the closed loop); every leg of a loop it keeps is within ``MAX_LEG_SLOWDOWN``."""
    law = ReactionlessController(SERVICER, 'ee_link')
    q0 = D.neutral(SERVICER)
    q0[7:] = [0.313, 0.914, -1.173, -0.093, 0.419, -0.465, -1.52]
    planner = LoopPlanner(
        law,
        q0,
        law.task_terms(q0).position + np.array([0.0, 0.0, 0.1]),
        q0[3:7],
        budget=0.9 * SETTINGS.attitude_budget,
        position_tolerance=SETTINGS.position_tolerance,
        attitude_tolerance=SETTINGS.attitude_tolerance,
        stall_time=SETTINGS.stall_time,
        stall_progress=SETTINGS.stall_progress,
        dt=SETTINGS.plan_dt,
        radius=SETTINGS.plan_radius,
        max_steps=10**6,
        seed=0,
    )
    end, legs = planner.predict_loop(q0, 0, 2, 1.0)
    assert end is None and legs == ()
    end, legs = planner.predict_loop(q0, 5, 6, 1.0)  # a well-conditioned one is kept
    assert end is not None and len(legs) == 4
    for leg in legs:
        assert leg.duration <= MAX_LEG_SLOWDOWN * leg_pace(law, leg.joint, leg.sweep)
    assert leg_pace(law, 0, -1.0) == pytest.approx(1.0 / (LOOP_SPEED * 0.9 * 0.2))


def weakened(joint: str, effort: float) -> D.Model:
    """The servicer with ``joint``'s effort limit set to ``effort`` [N m]."""
    text = sample_robot('ffsim_servicer_7dof').read_text()
    pattern = re.compile(rf'(<joint name="{re.escape(joint)}".*?effort=")[^"]*(")', re.S)
    text, count = pattern.subn(lambda m: f'{m.group(1)}{effort:g}{m.group(2)}', text, count=1)
    assert count == 1
    return D.load_urdf(text)


def follow_leg(
    model: D.Model,
    settings: ReachSettings,
    until: float,
    leg=None,
    q0: np.ndarray | None = None,
):
    """A goal 0.1 m above the tip, then a detour of one loop leg (``leg``; by default
    arm_joint_4 by 1 rad, planned 10 s, without a predicted course) followed from ``q0`` (the
    default: :func:`start`) at rest; the statuses and base offsets until ``until`` [s] or the
    goal's end."""
    from ffsim_ros.control.planner import Approach, Plan, Segment

    law = ReactionlessController(model, 'ee_link')
    sup = ReachSupervisor(law, settings)
    loop = ClosedLoop(sup, start() if q0 is None else q0)
    ref = loop.q[3:7].copy()
    p = loop.ee_position()
    sup.set_goal(loop.t, loop.q, p + np.array([0.0, 0.0, 0.1]))
    leg = Segment(p, 10.0, joint=3, sweep=1.0) if leg is None else leg
    sup.follow(loop.t, Plan((leg,), Approach(0, 0, 0, 0), 0, 1))
    statuses, offsets = [], []
    while loop.t < until:
        statuses.append(loop.update())
        offsets.append(angle(loop.q[3:7], ref))
        if not statuses[-1].active:
            break
    return statuses, offsets


def predicted_leg(model: D.Model, q0: np.ndarray, i: int, j: int, a: float):
    """The first leg of the loop ``(i, j, a)`` as the loop search predicts it from ``q0``."""
    law = ReactionlessController(model, 'ee_link')
    planner = LoopPlanner(
        law,
        q0,
        law.task_terms(q0).position + np.array([0.0, 0.0, 0.1]),
        q0[3:7],
        budget=0.9 * SETTINGS.attitude_budget,
        position_tolerance=SETTINGS.position_tolerance,
        attitude_tolerance=SETTINGS.attitude_tolerance,
        stall_time=SETTINGS.stall_time,
        stall_progress=SETTINGS.stall_progress,
        dt=SETTINGS.plan_dt,
        radius=SETTINGS.plan_radius,
        max_steps=10**6,
        seed=0,
    )
    end, legs = planner.predict_loop(q0, i, j, a)
    assert end is not None
    return legs[0]


def test_a_loop_leg_whose_joint_stalls_is_stopped_saying_why() -> None:
    """A loop leg followed in the closed loop is watched: its joint must turn by a quarter of
    the planned pace in every ``stall_time``. Here arm_joint_4 cannot (0.01 N m): the leg is
    stopped after ``stall_time`` (it ran on before, twice its planned time at most, unnoticed)
    and, no search left, the goal aborted naming the leg; with searches left the supervisor
    plans again from where the arm is."""
    model = weakened('arm_joint_4', 0.01)
    settings = ReachSettings(max_plans=0, max_loop_plans=0, max_path_plans=0)
    statuses, _ = follow_leg(model, settings, until=SETTINGS.stall_time + 1.0)
    end = statuses[-1]
    assert end.outcome is GoalOutcome.ABORTED, (end.phase, end.reason)
    assert end.elapsed <= SETTINGS.stall_time + 0.05
    assert end.reason.startswith(
        'loop leg 1 of 1 of a detour stopped (stalled: arm_joint_4 by 1: turned '
    ), end.reason
    assert 'planned 10.0 s' in end.reason
    statuses, _ = follow_leg(model, SETTINGS, until=SETTINGS.stall_time + 0.1)
    phases = [s.phase for s in statuses]
    assert GoalPhase.PLANNING in phases
    assert all(ph is GoalPhase.DETOUR for ph in phases[: phases.index(GoalPhase.PLANNING)])


def test_a_loop_leg_that_turns_the_base_is_stopped_within_the_budget() -> None:
    """A loop leg must leave the base untouched; here arm_joint_2, which takes most of the
    reaction of arm_joint_4's leg, cannot follow (0.05 N m) and the base turns at 0.2 deg/s.
    The leg is stopped before the offset (plus the base's rate over ``LEG_HORIZON``) passes
    the spend budget and, no search left, the goal aborted saying so; the attitude restored,
    never beyond the budget (it ran on to 0.88 deg before)."""
    from ffsim_ros.control.legs import LEG_HORIZON

    model = weakened('arm_joint_2', 0.05)
    settings = ReachSettings(max_plans=0, max_loop_plans=0, max_path_plans=0)
    statuses, offsets = follow_leg(model, settings, until=2.0)
    end = statuses[-1]
    assert end.outcome is GoalOutcome.ABORTED, (end.phase, end.reason)
    assert end.reason.startswith('loop leg 1 of 1 of a detour stopped (the base attitude ')
    m = re.search(r'attitude ([0-9.]+) deg off, turning at ([0-9.]+) deg/s', end.reason)
    assert float(m[1]) + LEG_HORIZON * float(m[2]) > 0.9 * SETTINGS.attitude_budget_deg
    assert float(m[1]) < 0.9 * SETTINGS.attitude_budget_deg
    assert max(offsets) <= SETTINGS.attitude_budget


#: Joint angles [rad] where a loop leg of arm_joint_3 started on the servicer's goal 12 of
#: seed 3 (``benchmarks/reach.py``).
PHI_SLOW_START = np.array([0.0968, 0.1983, 0.029, -0.6282, 2.0386, 1.9513, -2.2284])


def test_a_loop_leg_slow_at_first_as_predicted_is_not_stopped_as_stalled() -> None:
    """A loop leg's field turns its joint at a pace that varies along the leg: from this pose
    arm_joint_3's leg (1 rad, arm_joint_6 frozen near its limit) is predicted in 13.7 s, its
    joint turning 0.017 rad in the first 2 s (a quarter of the mean pace asks for 0.036). The
    closed loop follows the prediction; the watch judges the joint against the predicted
    course, so the leg runs to its end in its planned time (it was stopped as stalled after
    2 s, and the goal, reached after 238 s of loops before the watch, aborted)."""
    from ffsim_ros.control.legs import LEG_PROGRESS, LegWatch

    q0 = D.neutral(SERVICER)
    q0[7:] = PHI_SLOW_START
    leg = predicted_leg(SERVICER, q0, 2, 3, 1.0)
    assert (leg.joint, leg.sweep, leg.frozen) == (2, 1.0, (5,))
    assert leg.duration <= MAX_LEG_SLOWDOWN * leg_pace(
        ReactionlessController(SERVICER, 'ee_link'), 2, 1.0
    )
    steps = round(SETTINGS.stall_time / (leg.duration / (len(leg.course) - 1)))
    mean_pace = LEG_PROGRESS * abs(leg.sweep) / leg.duration * SETTINGS.stall_time
    assert leg.course[steps] < mean_pace  # slow at first, as predicted
    watch = LegWatch(leg, 0.0, q0, SETTINGS.stall_time)
    assert watch.predicted_gain(0.0) == pytest.approx(leg.course[steps])
    settings = ReachSettings(max_plans=0, max_loop_plans=0, max_path_plans=0)
    statuses, offsets = follow_leg(SERVICER, settings, 1.5 * leg.duration, leg, q0)
    phases = [s.phase for s in statuses]
    assert GoalPhase.APPROACH in phases, statuses[-1].reason
    end = phases.index(GoalPhase.APPROACH)
    assert end * 0.01 <= 1.05 * leg.duration
    assert all(ph is GoalPhase.DETOUR for ph in phases[:end])
    assert max(offsets[:end]) < 0.1 * SETTINGS.attitude_tolerance  # the leg left it untouched


def test_a_predicted_loop_leg_whose_joint_cannot_follow_is_stopped() -> None:
    """Judged against its predicted course, a leg whose joint cannot follow it (arm_joint_4 at
    0.01 N m) is still stopped after ``stall_time``, the reason naming the course's gain."""
    model = weakened('arm_joint_4', 0.01)
    leg = predicted_leg(model, start(), 3, 5, 1.0)
    assert leg.joint == 3 and len(leg.course) > 1
    settings = ReachSettings(max_plans=0, max_loop_plans=0, max_path_plans=0)
    statuses, offsets = follow_leg(model, settings, SETTINGS.stall_time + 1.0, leg)
    end = statuses[-1]
    assert end.outcome is GoalOutcome.ABORTED, (end.phase, end.reason)
    assert end.elapsed <= SETTINGS.stall_time + 0.05
    m = re.search(
        r'stalled: arm_joint_4 by 1: turned ([0-9.-]+) in [0-9.]+ s, planned '
        r'[0-9.]+ s, predicted ([0-9.]+) in 2 s from 0.00\)',
        end.reason,
    )
    assert m is not None, end.reason
    assert float(m[1]) < 0.25 * float(m[2])
    assert max(offsets) <= SETTINGS.attitude_budget


def test_the_leg_watch_follows_the_predicted_course() -> None:
    """:class:`LegWatch` on a synthetic course (1 rad in 10 s, 0.1 s steps): 0.01 rad/s for
    4 s, then 0.16 rad/s. A joint on the course is never stalled; one that stops is, after
    ``stall_time`` with no gain of a quarter of the course's; past the course's end the gain
    asked for is what is left of the sweep."""
    from ffsim_ros.control.legs import LegWatch
    from ffsim_ros.control.planner import Segment

    times = np.arange(101) * 0.1
    course = np.where(times <= 4.0, 0.01 * times, 0.04 + 0.16 * (times - 4.0))
    course = np.minimum(course, 1.0)
    leg = Segment(np.zeros(3), 10.0, joint=0, sweep=-1.0, course=tuple(course))
    q0 = D.neutral(SERVICER)
    watch = LegWatch(leg, 0.0, q0, 2.0)
    assert watch.predicted_gain(0.0) == pytest.approx(0.02)
    assert watch.predicted_gain(0.03) == pytest.approx(course[50] - 0.03)
    assert watch.predicted_gain(0.99) == pytest.approx(0.01)
    q = q0.copy()
    for t, turned in zip(times, course, strict=True):
        q[7] = -turned
        assert not watch.stalled(t, q)
    watch = LegWatch(leg, 0.0, q0, 2.0)
    q = q0.copy()
    stalled = []
    for k in range(1, 71):  # on the course for 5 s, then stopped
        q[7] = -course[min(k, 50)]
        if watch.stalled(0.1 * k, q):
            stalled.append(0.1 * k)
    assert stalled and 6.5 - 1e-9 <= stalled[0] <= 7.0 + 1e-9  # 2 s after the last gain
