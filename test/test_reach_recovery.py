"""Issue 15, the recovery's additions: self-motion edges and multi-start (in-process, no DDS).

A self-motion edge moves the arm along the null space of ``[J* W; A W]``: the end effector
held and the base untouched, to another point of the same fibre (the direction the waypoint
edges never take). Checked on the kinematic prediction the planner uses and in the dynamic
closed loop (``D.step`` under the :class:`ReachSupervisor`) against that prediction.
"""

from __future__ import annotations

import numpy as np
import pytest

import ffsim_ros.dynamics as D
from ffsim_ros.control import (
    GoalOutcome,
    GoalPhase,
    Plan,
    ReachSettings,
    ReachSupervisor,
    ReactionlessController,
    Segment,
    attitude_error,
)
from ffsim_ros.control.closed_loop import ClosedLoop
from ffsim_ros.control.planner import Approach, self_motion_rates
from ffsim_ros.control.rns import zero_momentum_step
from ffsim_ros.resources import sample_robot

SERVICER = D.load_urdf(sample_robot('ffsim_servicer_7dof'))
SETTINGS = ReachSettings()
#: A bent arm away from the home pose (joint angles [rad]).
BENT = np.array([0.3, -0.5, 0.4, 1.1, -0.3, 0.6, 0.2])


def bent() -> np.ndarray:
    q = D.neutral(SERVICER)
    q[7:] = BENT
    return q


def angle(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.linalg.norm(attitude_error(a, b)))


def predict(law: ReactionlessController, q: np.ndarray, sense: int, duration: float, dt: float):
    """The planner's prediction of a self-motion edge: (end configuration, first direction)."""
    hold = law.task_terms(q).position
    previous = first = None
    for _ in range(int(round(duration / dt))):
        terms = law.task_terms(q)
        rates, previous = self_motion_rates(law, terms, hold, previous, sense)
        first = previous if first is None else first
        q = zero_momentum_step(SERVICER, q, rates, terms.B, dt)
    return q, first


def test_self_motion_edge_holds_the_end_effector_and_the_base() -> None:
    """The predicted edge turns the joints by tenths of a radian while the end effector stays
    within 0.5 mm and the base attitude does not move (the rates lie in the reaction null
    space: to rounding); the two senses start in opposite directions along a unit vector that
    neither the end-effector rows nor the attitude rows of the Jacobians see."""
    law = ReactionlessController(SERVICER, 'ee_link')
    q0 = bent()
    terms = law.task_terms(q0)
    for sense in (1, -1):
        q, _ = predict(law, q0, sense, 4.0, 0.02)
        moved = float(np.linalg.norm(q[7:] - q0[7:]))
        assert moved > 0.1
        assert np.linalg.norm(law.task_terms(q).position - terms.position) < 5e-4
        assert angle(q[3:7], q0[3:7]) < 1e-12
    _, d_plus = predict(law, q0, 1, 0.02, 0.02)
    _, d_minus = predict(law, q0, -1, 0.02, 0.02)
    np.testing.assert_allclose(d_plus, -d_minus, atol=1e-14)
    assert np.linalg.norm(d_plus) == pytest.approx(1.0, abs=1e-12)
    assert np.abs(terms.J_star[:3] @ d_plus).max() < 1e-9
    assert np.abs(terms.B[3:6] @ d_plus).max() < 1e-9


def test_closed_loop_follows_a_self_motion_leg_then_reaches_the_goal() -> None:
    """A plan of one self-motion leg, followed by the supervisor in the dynamic closed loop:
    during the leg the phase is ``detour``, the end effector stays within 2 mm of where it was,
    the base within 0.01 deg; the joints end within 10 % of the predicted displacement; the
    approach then reaches the goal within the tolerances."""
    law = ReactionlessController(SERVICER, 'ee_link')
    sup = ReachSupervisor(law, SETTINGS)
    q0 = bent()
    loop = ClosedLoop(sup, q=q0)
    p0 = loop.ee_position()
    goal = p0 + np.array([0.0, 0.1, 0.05])
    sup.set_goal(loop.t, loop.q, goal)
    duration = 3.0
    plan = Plan((Segment(p0.copy(), duration, False, 1),), Approach(0.0, 0.0, 0.0, 0.0), 0, 2)
    sup.follow(loop.t, plan)
    predicted, _ = predict(law, q0, 1, duration, 0.01)
    worst_p = worst_a = 0.0
    while loop.t < duration - 1e-9:
        status = loop.update()
        assert status.phase is GoalPhase.DETOUR
        worst_p = max(worst_p, float(np.linalg.norm(loop.ee_position() - p0)))
        worst_a = max(worst_a, angle(loop.q[3:7], q0[3:7]))
    assert worst_p < 2e-3
    assert worst_a < np.radians(0.01)
    want = predicted[7:] - q0[7:]
    assert np.linalg.norm(want) > 0.05
    assert np.linalg.norm(loop.q[7:] - predicted[7:]) < 0.1 * np.linalg.norm(want)
    while loop.t < 60.0 and sup.status.active:
        loop.update()
    status = sup.status
    assert status.outcome is GoalOutcome.REACHED, status.reason
    assert status.position_error <= SETTINGS.position_tolerance
    assert status.attitude_offset <= SETTINGS.attitude_tolerance
    assert status.max_attitude_offset < SETTINGS.attitude_budget


def test_follow_needs_an_active_reactionless_goal() -> None:
    law = ReactionlessController(SERVICER, 'ee_link', mode='gjm_tracking')
    sup = ReachSupervisor(law, SETTINGS)
    plan = Plan((), Approach(0.0, 0.0, 0.0, 0.0), 0, 1)
    with pytest.raises(ValueError, match='expected an active goal in reactionless mode'):
        sup.follow(0.0, plan)
    law.mode = 'reactionless'
    with pytest.raises(ValueError, match='got outcome none'):
        sup.follow(0.0, plan)


def test_limit_excess_measures_the_joint_beyond_its_limit() -> None:
    """:meth:`ClosedLoop.limit_excess`: 0 within the URDF limits, else the largest excursion."""
    loop = ClosedLoop(ReachSupervisor(ReactionlessController(SERVICER, 'ee_link')))
    assert loop.limit_excess() == 0.0
    loop.q[7 + 3] = SERVICER.upper[3] + 0.25  # arm_joint_4, limit 2 rad
    loop.q[7 + 1] = SERVICER.lower[1] - 0.1
    assert loop.limit_excess() == pytest.approx(0.25, abs=1e-15)
