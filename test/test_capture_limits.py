"""Capture of tumbling targets within the robot's limits (the capture probe's findings):

* the interception keeps every joint inside its position limits (the rate match rolled the
  wrist with a 60 deg/s spin to 7.9 rad against a limit of 3.05) and gives the capture up,
  naming the joint, when matching the rate needs more travel than the limits allow;
* the handle's orientation (``max_angle``) is checked before the grasp is asked, and a
  refusal's reason reaches the abort's (15 refused requests ended in a reason about the
  distance only);
* a handle inside its own target's body is refused at scenario load.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import ffsim_ros.dynamics as D
from ffsim_ros.control.capture import (
    CaptureGains,
    GraspPoint,
    intercept,
    intercept_rates,
    momentum_terms,
)
from ffsim_ros.control.capture_loop import tumbling_target_scene
from ffsim_ros.control.rns import limit_zones
from ffsim_ros.dynamics.lie import rpy_to_matrix
from ffsim_ros.resources import sample_robot
from ffsim_ros.scene import ScenarioError, target_from_dict

#: The wrist's roll (arm_joint_7) axis at the arm's zero: world x (the ee_link's x).
ROLL = np.array([1.0, 0.0, 0.0])


@pytest.fixture(scope='module')
def robot():
    return D.load_urdf(sample_robot('ffsim_servicer_7dof'), floating_base=True)


def _wrist_near_its_limit(robot, offset=0.4):
    q = D.neutral(robot)
    q[7:] = [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, robot.upper[6] - offset]
    return q


def test_the_interception_keeps_the_joints_inside_their_limits(robot):
    """A handle at the gripper spinning at 60 deg/s about the wrist's roll axis: the rate
    match turns arm_joint_7 toward its upper limit. Followed kinematically (zero momentum,
    the rates of the law integrated), the joint stops short of the limit (old law: it went
    through it, the wrist winding with the spin) and is reported as held by the rate match."""
    q = _wrist_near_its_limit(robot)
    gains = CaptureGains()
    _, stop = limit_zones(robot.lower, robot.upper)
    dt, worst = 0.05, -np.inf
    for _ in range(120):  # 6 s at up to 0.45 rad/s: 2.7 rad of travel asked, 0.4 left
        v = np.zeros(robot.nv)
        terms = momentum_terms(robot, q, v)
        p = D.link_pose(robot, q, 'ee_link')[0]
        target = GraspPoint(p, np.zeros(3), np.radians(60.0) * ROLL)
        phidot, dist = intercept_rates(robot, q, terms, ('ee_link', np.zeros(3)), target, gains)
        assert dist < 1e-9
        q = D.integrate(robot, q, np.r_[-terms.ff.B @ phidot, phidot], dt)
        worst = max(worst, float(np.max(q[7:] - robot.upper)))
    assert worst < 0.0, f'a joint beyond its upper limit by {worst:.3g} rad'
    assert q[13] > robot.upper[6] - 0.25  # (it did go into the zone: the rate match asked)
    out = intercept(robot, q, terms, ('ee_link', np.zeros(3)), target, gains)
    # (at its stop by now: 0.031 rad from the limit, 0.03 the stop)
    assert out.blocked_by_rate == ('arm_joint_7',) and 'arm_joint_7' in out.blocked


def _spinning_handle_control(robot, target, handle, offset: float, away: float):
    """A CaptureControl with the wrist ``offset`` from its upper limit and the handle,
    spinning at 60 deg/s about the roll axis, ``away`` [m] beyond the gripper along it."""
    from nav_msgs.msg import Odometry

    from ffsim_ros.node_support.capture_control import CaptureControl

    control = CaptureControl(robot, 'ee_link', target, 'gjm')
    q, v = _wrist_near_its_limit(robot, offset), np.zeros(robot.nv)
    msg = Odometry()
    p = D.link_pose(robot, q, 'ee_link')[0] - handle.translation + away * ROLL
    msg.pose.pose.position.x, msg.pose.pose.position.y, msg.pose.pose.position.z = p
    msg.pose.pose.orientation.w = 1.0
    msg.twist.twist.angular.x = np.radians(60.0)
    control.on_odometry(msg)
    return control, q, v


@pytest.mark.ros  # (the controller's capture module: rclpy messages)
@pytest.mark.parametrize(('offset', 'away'), [(0.2, 0.0), (0.03, 0.4)])
def test_a_wrist_only_in_its_limit_zone_or_far_from_the_handle_does_not_abort(
    robot, offset: float, away: float
):
    """The limit abort waits for the wrist at its stop with the handle within its radius: the
    shipped capture started 0.2 rad from the wrist's limit was aborted 1 s into the approach,
    40 cm from the handle, where it captured without the rule (regression probe)."""
    from ffsim_ros.node_support.capture_control import LIMIT_ABORT

    _, target = tumbling_target_scene()
    handle = dataclasses.replace(target.handles[0], max_rate=0.2, translation=-0.45 * ROLL)
    target = dataclasses.replace(target, handles=(handle,))
    control, q, v = _spinning_handle_control(robot, target, handle, offset, away)
    for t in np.arange(1.0, 1.0 + 3.0 * LIMIT_ABORT, 0.1):
        control.update(float(t), q, v)
    assert control.phase == 'intercept', control.reason


@pytest.mark.ros  # (the controller's capture module: rclpy messages)
def test_a_rate_match_beyond_the_joint_limits_aborts_naming_the_joint(robot):
    """The wrist at its limit's stop, the handle at the gripper spinning at 60 deg/s about the
    roll axis (beyond half its max_rate): the capture is aborted after LIMIT_ABORT with the
    joint in the reason, and the arm held (before: intercepting without end, the wrist wound
    past its limit)."""

    from ffsim_ros.node_support.capture_control import LIMIT_ABORT

    _, target = tumbling_target_scene()
    # the handle on the spin axis (it does not move, it turns)
    handle = dataclasses.replace(target.handles[0], max_rate=0.2, translation=-0.45 * ROLL)
    target = dataclasses.replace(target, handles=(handle,))
    control, q, v = _spinning_handle_control(robot, target, handle, 0.03, 0.0)
    control.update(1.0, q, v)
    assert control.phase == 'intercept' and 'position limits' in control.blocker
    control.update(1.0 + 0.5 * LIMIT_ABORT, q, v)
    assert control.phase == 'intercept'
    _, ask = control.update(1.0 + LIMIT_ABORT + 0.01, q, v)
    assert control.phase == 'aborted' and control.outcome == 'aborted' and not ask
    assert "needs ['arm_joint_7'] beyond their position limits" in control.reason
    assert 'arm_joint_7 [-3.05, 3.05]' in control.reason
    assert control.reason.endswith('holding the arm still')


@pytest.mark.ros  # (the controller's capture module: rclpy messages)
def test_a_handle_turned_beyond_max_angle_is_not_asked_and_refusals_are_reported(robot):
    """The handle at the gripper, still, its frame turned 2 rad about z from the gripper's
    with max_angle 0.3: the grasp is not asked (the simulator's envelope would refuse it:
    15 refused requests), the wait and goal_status's blocker say the angle; turned 0.2 rad
    it is asked. A refusal's reason is kept and said by the timeout's abort."""
    from nav_msgs.msg import Odometry

    from ffsim_ros.node_support.capture_control import CaptureControl

    _, target = tumbling_target_scene()
    q, v = _wrist_near_its_limit(robot, 2.0), np.zeros(robot.nv)

    def control_for(yaw: float, q: np.ndarray) -> CaptureControl:
        handle = dataclasses.replace(
            target.handles[0], rotation=rpy_to_matrix([0.0, 0.0, yaw]), max_angle=0.3
        )
        control = CaptureControl(
            robot, 'ee_link', dataclasses.replace(target, handles=(handle,)), 'gjm', timeout=2.0
        )
        msg = Odometry()
        p = D.link_pose(robot, q, 'ee_link')[0] - handle.translation
        msg.pose.pose.position.x, msg.pose.pose.position.y, msg.pose.pose.position.z = p
        # the target unturned: the handle frame is its rotation, the gripper's the ee_link's
        # (arm_joint_7 at 1.05 rad turns it about world x)
        msg.pose.pose.orientation.w = 1.0
        control.on_odometry(msg)
        return control

    Rg = D.link_pose(robot, q, 'ee_link')[1]
    turned = control_for(2.0, q)
    _, ask = turned.update(1.0, q, v)
    assert not ask and turned.phase == 'intercept'
    angle = np.linalg.norm(D.lie.matrix_log(Rg.T @ rpy_to_matrix([0.0, 0.0, 2.0])))
    assert turned.angle == pytest.approx(angle) and angle > 0.3
    assert 'frame is 2.' in turned.waiting and 'beyond its max_angle 0.3 rad' in turned.waiting
    assert 'does not align the gripper' in turned.waiting
    assert 'max_angle 0.3 rad' in turned.blocker
    q_aligned = q.copy()
    q_aligned[13] = 0.0  # the ee_link's axes along world's
    near = control_for(0.2, q_aligned)
    _, ask = near.update(1.0, q_aligned, v)
    assert ask and not near.blocker and near.angle == pytest.approx(0.2)
    near.on_grasp_reply(False, 1.01, np.zeros(0), np.zeros(0), 'client/bar: rate 0.5 > 0.2')
    near.update(3.5, q_aligned, v)
    assert near.phase == 'aborted'
    assert 'grasp last refused at t = 1.01 s: client/bar: rate 0.5 > 0.2' in near.reason


def _ball(translation, shape=None):
    return {
        'name': 'ball',
        'shape': shape or {'type': 'sphere', 'radius': 0.3},
        'mass': 40.0,
        'position': [3.8, 0.0, 0.55],
        'orientation': [0.0, 0.0, 0.3826834, 0.9238795],
        'handles': [{'name': 'bar', 'link': 'body', 'translation': translation, 'radius': 0.05}],
    }


def test_a_handle_inside_its_target_is_refused_at_load():
    """A handle 0.1 m from the centre of a ball of radius 0.3 was captured with no contact,
    the grasp point 0.2 m inside the solid: refused naming the target, the shape and the
    depth. On the surface or outside it is accepted (the shipped scenario's is 5 cm out)."""
    with pytest.raises(ScenarioError) as err:
        target_from_dict(_ball([-0.1, 0.0, 0.0]), 'targets[0]')
    text = str(err.value)
    assert text.startswith("targets[0].handles[0] 'bar': expected a handle origin outside")
    assert 'within its radius 0.05 m of the surface' in text
    assert "target 'ball'" in text and '0.2 m inside' in text and 'sphere of radius 0.3' in text
    box = {'type': 'box', 'size': [0.4, 1.0, 0.2]}
    with pytest.raises(ScenarioError, match=r'0\.1 m inside its collision shape \(box'):
        target_from_dict(_ball([0.0, 0.0, 0.0], box), 'targets[0]')
    # a grapple bar: the grasp point on the axis of a 2 cm cylinder the fingers close round,
    # within the handle's 5 cm radius (refused by the first version of the check)
    bar = {'type': 'cylinder', 'radius': 0.02, 'length': 0.3}
    for translation, shape in (
        ([-0.3, 0.0, 0.0], None),
        ([0.0, 0.0, -0.35], None),
        ([0.0, 0.0, 0.1], box),
        ([0.0, 0.0, 0.06], box),
        ([0.0, 0.5, 0.0], box),
        ([0.0, 0.0, 0.0], bar),
    ):
        target_from_dict(_ball(translation, shape), 'targets[0]')
