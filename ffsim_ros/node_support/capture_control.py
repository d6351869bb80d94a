"""Capture in the controller node: interception from a target's odometry, grasp, detumbling.

The node side of :mod:`ffsim_ros.control.capture` (issue 17). The controller reads the same
capture scenario as the simulator (``capture.scenario``: a path or a shipped name,
:func:`~ffsim_ros.node_support.scene_support.resolve_scenario`) for the target's model and its
handle, subscribes to ``targets/<name>/odom`` (nav_msgs/Odometry: pose of the target's root
link in the world frame, its twist in the root link's axes, REP 105) and, once the handle is
well inside its capture envelope, asks the simulator's ``~/grasp`` service (std_srvs/Trigger)
to close the gripper; after the grasp it detumbles the welded system
(:class:`~ffsim_ros.control.capture.Detumbler`). :class:`CaptureControl` holds that state
machine without any ROS object (the node owns the subscription and the client).

Names that reach rclpy are checked before any ROS entity is made, so a bad one is an error
naming its parameter (exit code 2), not an rclpy exception (:func:`ros_name_problem`):
``capture.grasp_service`` by its check (:func:`service_name`), the target's odometry topic
by :func:`scenario_target`.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from diagnostic_msgs.msg import DiagnosticStatus, KeyValue
from nav_msgs.msg import Odometry
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from rclpy.task import Future
from std_msgs.msg import Float64MultiArray
from std_srvs.srv import Trigger

import ffsim_ros.dynamics as D
from ffsim_ros.control.capture import (
    CaptureGains,
    DetumbleMode,
    Detumbler,
    GraspPoint,
    computed_torque,
    grasp_point,
    intercept,
    momentum_terms,
)
from ffsim_ros.dynamics.lie import matrix_log, quat_to_matrix
from ffsim_ros.scene import (
    Gripper,
    ScenarioError,
    Target,
    gripper_from_dict,
    target_from_dict,
    welded_model,
)

from ..dynamics.yaml_input import load_yaml
from .common import LogThrottle, read_robot_file
from .scene_services import grasped_target
from .scene_support import resolve_scenario
from .target_names import CHECK_NODE_NAME, ros_name_problem, service_name

#: Fraction of the handle's capture envelope (radius, speed) inside which the grasp is asked.
GRASP_MARGIN = 0.5
#: After a grasp, a handle this much farther from the gripper than its capture radius is no
#: longer held (released by ``~/release``, or a reset of the simulation) [m].
LOST_MARGIN = 0.05
#: Seconds (node clock) after a refused or unanswered grasp before the next request (a target
#: outside its rate limit drew 88 requests a second, each an event and three log lines).
GRASP_RETRY = 0.5
#: Time [s] the rate match may stay blocked by a joint at its stop (the handle within its
#: radius and turning beyond half its ``max_rate`` against the gripper all along) before the
#: capture is aborted (farther, the approach goes on: the wrist may yet be freed).
LIMIT_ABORT = 1.0
#: Phases of :class:`CaptureControl` (``wait``: no target odometry yet).
PHASES = ('wait', 'intercept', 'grasping', 'store', 'release', 'brake', 'hold', 'aborted')


def _brief(value: Any) -> str:
    """A short description of a YAML value for a message (a container by its type only)."""
    if isinstance(value, str | int | float | bool) or value is None:
        text = repr(value)
        return text if len(text) <= 80 else f'{text[:77]}...'
    return f'a {type(value).__name__}'


def scenario_target(scenario: str, name: str = '') -> tuple[Target, Path]:
    """The target ``name`` (the first when '') of a capture scenario, and the file read.

    Parameters
    ----------
    scenario : str
        A scenario name or path (:func:`~.scene_support.resolve_scenario`).
    name : str
        The target's name; '' for the first.

    Returns
    -------
    target : Target
    path : Path
        The scenario file.

    Raises
    ------
    ValueError
        An unknown scenario or target, a scenario that is not a mapping, ``targets`` not a
        list of mappings with a string ``name`` each, a target without handles, a target
        name that makes no valid odometry topic (named).
    """
    data, path, where = _scenario_data(scenario)
    targets = data.get('targets', [])
    if not isinstance(targets, list):
        raise ValueError(f'{where}: targets: expected a list of targets, got {_brief(targets)}')
    names = []
    for k, entry in enumerate(targets):
        if not isinstance(entry, dict):
            raise ValueError(f'{where}: targets[{k}]: expected a mapping, got {_brief(entry)}')
        target_name = entry.get('name')
        if not isinstance(target_name, str) or not target_name:
            raise ValueError(
                f'{where}: targets[{k}].name: expected a non-empty string, got '
                f'{_brief(target_name)}'
            )
        names.append(target_name)
    if not names:
        raise ValueError(f'{where}: expected targets, got none')
    chosen = names[0] if not name else name
    if chosen not in names:
        raise ValueError(f'capture.target: expected one of {names}, got {name!r}')
    k = names.index(chosen)
    try:
        target = target_from_dict(targets[k], f'targets[{k}]', path.parent)
    except ScenarioError as exc:  # (named by the file too)
        raise ValueError(f'{where}: {exc}') from None
    if not target.handles:
        raise ValueError(f'capture.target {chosen!r}: expected a handle, it has none')
    if target.model.n:
        # the detumbling law welds a rigid body to the gripper (a URDF target with joints
        # ended the node at the grasp: its welded model was built without joint positions)
        raise ValueError(
            f'capture.target {chosen!r}: expected a rigid target (the detumbling law welds '
            f'one rigid body to the gripper), got one with {target.model.n} joint(s) '
            f'{list(target.model.joint_names)}'
        )
    topic = odometry_topic(chosen)
    problem = ros_name_problem(topic)
    if problem is not None:
        raise ValueError(
            f'{where}: targets[{k}].name {chosen!r}: expected a name that makes a valid '
            f'odometry topic, got {topic!r} ({problem})'
        )
    return target, path


def scenario_gripper(scenario: str, robot: D.Model) -> Gripper:
    """The gripper of a capture scenario (``robot.gripper``: link, ``translation``, ``rpy``),
    checked against the controller's ``robot``: the grasp point the capture aims (the
    simulator checks the capture envelope there and welds the target to that link).

    Raises
    ------
    ValueError
        A scenario without a valid ``robot.gripper``, or one on a link ``robot`` does not have
        or on its base body (named).
    """
    data, _, where = _scenario_data(scenario)
    section = data.get('robot')
    if not isinstance(section, dict) or 'gripper' not in section:
        raise ValueError(
            f'{where}: robot.gripper: expected the gripper ({{link: ..., translation: [...]}}: '
            'where the capture aims and the simulator grasps), got none'
        )
    try:
        gripper = gripper_from_dict(section['gripper'])
    except ScenarioError as exc:
        raise ValueError(f'{where}: {exc}') from None
    moving = [n for n in robot.link_names if robot.frame(n).body != 0]
    if gripper.link not in moving:
        raise ValueError(
            f'{where}: robot.gripper.link: expected a link of the controlled robot the joints '
            f'move (one of {moving}), got {gripper.link!r}'
        )
    return gripper


def _scenario_data(scenario: str) -> tuple[dict, Path, str]:
    """The mapping of a capture scenario, its file and the prefix of its messages."""
    path = resolve_scenario(scenario, 'capture.scenario')
    where = f'capture.scenario {str(path)!r}'
    # read as robot_file is: a regular text file of at most 16 MiB, opened without blocking (a
    # FIFO hung the node beyond SIGTERM, /dev/zero filled the memory)
    text = read_robot_file(
        str(path), what='capture.scenario', content='a capture scenario', text='YAML text'
    )
    data = load_yaml(text, where)
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ValueError(f'{where}: expected a mapping of scenario keys, got {_brief(data)}')
    return data, path, where


def odometry_topic(target: str) -> str:
    """The odometry topic of a target (relative: ``targets/<name>/odom``).

    Parameters
    ----------
    target : str
        The target's name.

    Returns
    -------
    str
    """
    return f'targets/{target}/odom'


def odometry_state(msg: Odometry) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(position, quaternion (x, y, z, w), linear velocity, angular velocity)`` of an
    Odometry message, velocities rotated from the child frame's axes to the world's.

    Parameters
    ----------
    msg : Odometry

    Returns
    -------
    position : (3,) ndarray
        Child frame origin, world frame [m].
    quaternion : (4,) ndarray
        Unit (x, y, z, w) [-].
    linear, angular : (3,) ndarray
        Velocities, world frame [m/s, rad/s].

    Raises
    ------
    ValueError
        Non-finite values or a zero quaternion.
    """
    p, o = msg.pose.pose.position, msg.pose.pose.orientation
    lin, ang = msg.twist.twist.linear, msg.twist.twist.angular
    pos = np.array([p.x, p.y, p.z])
    quat = np.array([o.x, o.y, o.z, o.w])
    v = np.array([lin.x, lin.y, lin.z])
    w = np.array([ang.x, ang.y, ang.z])
    n = float(np.linalg.norm(quat))
    if not (np.all(np.isfinite(np.r_[pos, quat, v, w])) and n > 0.5):
        raise ValueError(
            f'target odometry: expected finite values and a unit quaternion, got position '
            f'{pos.tolist()}, orientation {quat.tolist()}'
        )
    quat = quat / n
    R = quat_to_matrix(quat)
    return pos, quat, R @ v, R @ w


class CaptureControl:
    """Interception, grasp request and detumbling (module docstring).

    Parameters
    ----------
    robot : Model
        Floating base.
    gripper_link : str
    target : Target
        From the scenario.
    mode : DetumbleMode or str
    gains : CaptureGains, optional
    timeout : float
        Longest time [s] from the target seen (or lost after a grasp) to the grasp; beyond
        it the capture is aborted (:attr:`outcome` ``'aborted'``, :attr:`reason`) and the arm
        held still until the clock goes back (a reset of the simulation). 0: no limit.
    gripper_offset : (3,) array_like
        The grasp point in the ``gripper_link`` frame [m] (the scenario's
        ``robot.gripper.translation``): the point driven to the handle and whose distance,
        speed and rate against it decide the grasp, as the simulator's envelope does.
    gripper_rotation : (3, 3) array_like, optional (identity)
        The gripper frame in the ``gripper_link`` frame (``robot.gripper.rpy``): its angle to
        the handle's frame is checked against the handle's ``max_angle`` before the grasp is
        asked (the interception does not turn the gripper to the handle: docs/capture.md).
    """

    def __init__(
        self,
        robot: D.Model,
        gripper_link: str,
        target: Target,
        mode: DetumbleMode | str,
        gains: CaptureGains | None = None,
        timeout: float = 0.0,
        gripper_offset: Any = (0.0, 0.0, 0.0),
        gripper_rotation: Any = None,
    ) -> None:
        robot.frame(gripper_link)  # raises naming the links
        self.robot, self.gripper_link = robot, gripper_link
        self.gripper_offset = np.array(gripper_offset, dtype=float).reshape(3)
        rotation = np.eye(3) if gripper_rotation is None else gripper_rotation
        self.gripper_rotation = np.array(rotation, dtype=float).reshape(3, 3)
        self.target = target
        self.handle = target.handles[0]
        self.mode = DetumbleMode(mode)
        self.gains = gains or CaptureGains()
        self.phase = 'wait'
        self.detumbler: Detumbler | None = None
        self.attitude: np.ndarray | None = None
        self._odom: tuple[np.ndarray, ...] | None = None
        self.distance = float('nan')
        self.speed = float('nan')
        self.rate = float('nan')
        self.angle = float('nan')  # between the gripper's and the handle's frames [rad]
        self.waiting = ''
        #: What keeps the grasp from being asked, worded by cause only (goal_status), or ''.
        self.blocker = ''
        #: The last refused grasp: ``(time [s], the simulator's reason)`` (None: none).
        self.refusal: tuple[float, str] | None = None
        #: Joints the interception holds at a position limit (last update).
        self.limited: tuple[str, ...] = ()
        self._blocked_since: float | None = None  # rate match blocked by a limit since [s]
        #: Closest approach of the present intercept: ``(distance [m], time [s])`` (None
        #: before the first update), for the abort's reason.
        self.closest: tuple[float, float] | None = None
        #: The last update with the handle within half its capture radius but outside half its
        #: speed or rate envelope: ``(time [s], speed [m/s], rate [rad/s])`` (None: never).
        self.violation: tuple[float, float, float] | None = None
        self.timeout = float(timeout)
        #: ``'active'`` (intercepting, grasping), ``'captured'`` (detumbling),
        #: ``'detumbled'`` (the law's ``hold``) or ``'aborted'`` (with :attr:`reason`).
        self.outcome = 'active'
        self.reason = ''
        self._since: float | None = None  # when the present intercept began [s]
        #: Node-clock time before which no grasp is asked again [s] (:data:`GRASP_RETRY`).
        self.retry_at = -np.inf

    def restart(self) -> None:
        """A reset of the simulation (announced on ``resets``, or a jump of the state that
        does not move the clock back): the capture starts again -- outcome active, its
        ``capture.timeout`` counted anew from the next update, the approach history, the held
        attitude and any detumbling forgotten (the simulator's reset releases a grasp)."""
        self.detumbler = self.attitude = None
        self.phase = 'wait' if self._odom is None else 'intercept'
        self.outcome, self.reason, self._since = 'active', '', None
        self.closest = self.violation = self.refusal = self._blocked_since = None
        self.retry_at = -np.inf

    def on_odometry(self, msg: Odometry) -> None:
        """Keep the target's state from its odometry (raises ValueError for a bad one).

        Parameters
        ----------
        msg : Odometry
            The target's ``targets/<name>/odom``.
        """
        self._odom = odometry_state(msg)
        if self.phase == 'wait':
            self.phase = 'intercept'

    def grasp_point(self) -> GraspPoint | None:
        """The handle's grasp point from the last odometry (None before any).

        Returns
        -------
        GraspPoint or None
        """
        if self._odom is None:
            return None
        p, quat, v, w = self._odom
        return grasp_point(p, quat, v, w, self.handle.translation)

    def update(self, t: float, q: np.ndarray, v: np.ndarray) -> tuple[np.ndarray, bool]:
        """Efforts (n,) for the measured robot state and whether to ask for the grasp now.

        Parameters
        ----------
        t : float
            Time [s].
        q : (nq,) ndarray
            Robot configuration [m, -, rad | m], base parts in the world frame.
        v : (nv,) ndarray
            Robot velocity [m/s, rad/s, rad/s | m/s], base parts in the world frame.

        Returns
        -------
        tau : (n,) ndarray
            Joint efforts [N m | N].
        ask : bool
            Whether to request the grasp.
        """
        if self.detumbler is not None and self._held(q):
            # (distance refreshed by _held; speed and rate too: the held handle's motion
            # against the gripper, ~0 while welded, not the figures of the grasp request)
            gp = self.grasp_point()
            if gp is not None:
                self._relative_motion(gp, q, v)
            tau, _, _ = self.detumbler.update(t, q, v)
            self.phase = self.detumbler.phase
            self.outcome = 'detumbled' if self.phase == 'hold' else 'captured'
            return tau, False
        if self.detumbler is not None:  # the target left the gripper: capture it again
            self.detumbler, self.attitude, self.phase = None, None, 'intercept'
            self.outcome, self._since = 'active', t
            self.closest = self.violation = None
        if self._since is not None and t < self._since:  # the clock went back (a reset)
            self._since = t
            self.closest = self.violation = self.refusal = self._blocked_since = None
            if self.phase == 'aborted':
                self.phase, self.outcome, self.reason = 'intercept', 'active', ''
        if self.attitude is None:
            self.attitude = np.asarray(q[3:7], float).copy()
        gp = self.grasp_point()
        terms = momentum_terms(self.robot, q, v)
        if gp is None or self.phase == 'aborted':  # no target seen yet, or given up: hold
            tau, _ = computed_torque(self.robot, terms, v, np.zeros(self.robot.n), 20.0)
            return tau, False
        if self._since is None:
            self._since = t
        if (
            self.timeout
            and t - self._since > self.timeout
            and self.phase
            in (
                'intercept',
                'grasping',  # (a grasp request never answered)
            )
        ):
            return self._abort(
                f'not captured within capture.timeout {self.timeout:g} s: the handle '
                f'{self.distance * 100:.1f} cm from the gripper'
                + (f'; {self.waiting}' if self.waiting else ''),
                terms,
                v,
            )
        out = intercept(
            self.robot,
            q,
            terms,
            (self.gripper_link, self.gripper_offset),
            gp,
            self.gains,
            attitude_reference=self.attitude,
        )
        phidot, dist, self.limited = out.phidot, out.distance, out.blocked
        self.distance = dist
        self._relative_motion(gp, q, v)
        self.angle = self._angle(q)
        if (
            not out.blocked_by_rate
            or dist >= self.handle.radius
            or self.rate < GRASP_MARGIN * self.handle.max_rate
        ):
            self._blocked_since = None
        elif self._blocked_since is None:
            self._blocked_since = t
        elif t - self._blocked_since >= LIMIT_ABORT and self.phase == 'intercept':
            r, k = self.robot, [self.robot.joint_names.index(n) for n in out.blocked_by_rate]
            limits = ', '.join(
                f'{r.joint_names[i]} [{r.lower[i]:.3g}, {r.upper[i]:.3g}]' for i in k
            )
            why = f"matching the handle's rate ({self.rate:.4f} rad/s against the gripper, the "
            why += f'grasp asked below {GRASP_MARGIN * self.handle.max_rate:.4f}) needs '
            why += f'{list(out.blocked_by_rate)} beyond their position limits ({limits} rad; '
            why += f'held in their limit zones since t = {self._blocked_since:.2f} s)'
            return self._abort(why, terms, v)
        tau, _ = computed_torque(self.robot, terms, v, phidot, self.gains.kv_joint)
        if self.closest is None or dist < self.closest[0]:
            self.closest = (dist, t)
        close = dist < GRASP_MARGIN * self.handle.radius
        matched = (
            self.speed < GRASP_MARGIN * self.handle.max_speed
            and self.rate < GRASP_MARGIN * self.handle.max_rate
        )
        # the scene's envelope test of the angle (the interception does not align the frames)
        aligned = self.angle <= self.handle.max_angle
        self.blocker = (
            ''
            if self._blocked_since is None
            else (f'the rate match needs {list(out.blocked_by_rate)} beyond their position limits')
        )
        if close and not aligned:
            self.blocker = f'the handle frame is beyond its max_angle {self.handle.max_angle:g}'
            self.blocker += " rad from the gripper's; the controller does not align the gripper"
        if self.phase == 'intercept' and close and not matched:
            self.violation = (t, self.speed, self.rate)
        #: Why the grasp is not asked with the handle in reach ('' otherwise), for the log.
        self.waiting = (
            f'the handle is {dist * 100:.2f} cm away but moves at {self.speed * 100:.2f} cm/s '
            f'and turns at {self.rate:.4f} rad/s against the gripper, beyond half its envelope '
            f'(max_speed {self.handle.max_speed:g} m/s, max_rate {self.handle.max_rate:g} '
            'rad/s): not asking for the grasp'
            if self.phase == 'intercept' and close and not matched
            else ''
        )
        if self.phase == 'intercept' and close and matched and not aligned:
            self.waiting = f'the handle is {dist * 100:.2f} cm away but its frame is '
            self.waiting += f'{self.angle:.3f} rad off, {self.blocker[20:]}'
            self.waiting += ' (docs/capture.md): not asking for the grasp'
        if self.limited and self.waiting:
            self.waiting += f'; {list(self.limited)} held at their position limits'
        ask = self.phase == 'intercept' and t >= self.retry_at and close and matched and aligned
        if ask:
            self.phase = 'grasping'
        return tau, ask

    def _abort(self, why: str, terms: Any, v: np.ndarray) -> tuple[np.ndarray, bool]:
        """Give the capture up (:attr:`reason` ``why`` and the history): hold the arm."""
        self.phase, self.outcome = 'aborted', 'aborted'
        self.reason = why + self._history() + '; holding the arm still'
        tau, _ = computed_torque(self.robot, terms, v, np.zeros(self.robot.n), 20.0)
        return tau, False

    def _angle(self, q: np.ndarray) -> float:
        """The angle between the gripper's and the handle's frames [rad] (the envelope's)."""
        _, Rg = D.link_pose(self.robot, q, self.gripper_link)
        Rh = quat_to_matrix(self._odom[1]) @ self.handle.rotation
        return float(np.linalg.norm(matrix_log((Rg @ self.gripper_rotation).T @ Rh)))

    def _gripper_point(self, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The grasp point (inertial frame [m]) and its lever from the gripper link's origin."""
        o, R = D.link_pose(self.robot, q, self.gripper_link)
        lever = R @ self.gripper_offset
        return o + lever, lever

    def _relative_motion(self, gp: GraspPoint, q: np.ndarray, v: np.ndarray) -> None:
        """:attr:`speed` [m/s] and :attr:`rate` [rad/s] of the handle against the gripper's
        grasp point (inertial frame; the robot's measured ``q``, ``v``)."""
        J = D.link_jacobian(self.robot, q, self.gripper_link)
        w = J[3:] @ v
        _, lever = self._gripper_point(q)
        self.speed = float(np.linalg.norm(gp.velocity - J[:3] @ v - np.cross(w, lever)))
        # the handle turns with the target's root link: its rate against the gripper's (the
        # envelope's max_rate; asking regardless drew a refusal every update)
        self.rate = float(np.linalg.norm(gp.angular_velocity - w))

    def _history(self) -> str:
        """The closest approach and the last envelope violation of the present intercept,
        for the abort's reason ('' before any update)."""
        h = self.handle
        text = ''
        if self.closest is not None:
            d, t = self.closest
            text += (
                f'; closest approach {d * 100:.2f} cm at t = {t:.2f} s (grasp asked within '
                f'{GRASP_MARGIN * h.radius * 100:.2f} cm)'
            )
        if self.violation is not None:
            t, speed, rate = self.violation
            text += (
                f'; last within reach at t = {t:.2f} s but moving at {speed * 100:.2f} cm/s '
                f'(limit {GRASP_MARGIN * h.max_speed * 100:.2f}) and turning at {rate:.4f} '
                f'rad/s (limit {GRASP_MARGIN * h.max_rate:.4f}) against the gripper'
            )
        if self.refusal is not None:
            text += f'; grasp last refused at t = {self.refusal[0]:.2f} s: {self.refusal[1]}'
        if self.limited:
            text += f'; {list(self.limited)} held at their position limits'
        return text

    def _held(self, q: np.ndarray) -> bool:
        """Whether the handle (from the last odometry) is still at the gripper: after
        ``~/release`` or a reset of the simulation the detumbling law, which assumes the
        target welded, drove the arm with 100+ N m for as long as it ran."""
        gp = self.grasp_point()
        if gp is None:
            return True
        gripper, _ = self._gripper_point(q)
        self.distance = float(np.linalg.norm(gp.position - gripper))
        return self.distance <= self.handle.radius + LOST_MARGIN

    def on_grasp_reply(
        self, success: bool, t: float, q: np.ndarray, v: np.ndarray, message: str = ''
    ) -> None:
        """The simulator's answer: on success, the welded model from the present robot state
        and the target's last pose (their relative pose is frozen by the weld); on a refusal,
        intercept again, asking no sooner than :data:`GRASP_RETRY` after ``t`` [s].

        Parameters
        ----------
        success : bool
        t : float
            Time [s].
        q : (nq,) ndarray
            Robot configuration [m, -, rad | m], base parts in the world frame.
        v : (nv,) ndarray
            Robot velocity [m/s, rad/s, rad/s | m/s], base parts in the world frame.
        message : str
            The reply's message (a refusal's reason: kept for the abort's, :attr:`refusal`).
        """
        if not success or self._odom is None:
            if not success:
                self.refusal = (float(t), message or 'no reason given')
            if self.phase != 'aborted':  # (a late refusal does not undo an abort)
                self.phase = 'intercept'
            self.retry_at = t + GRASP_RETRY
            return
        p, quat, _, _ = self._odom
        q_t = D.base_state_from_link(self.target.model, p, quat, np.zeros(3), np.zeros(3))[0]
        model = welded_model(
            self.robot, q, self.gripper_link, self.target.model, q_t, f'{self.target.name}/'
        )
        self.detumbler = Detumbler(model, self.robot.n, self.mode, self.gains, t, q, v)
        self.phase = self.detumbler.phase
        self.outcome, self.reason, self._since = 'captured', '', None


class CaptureInterfaces:
    """The ROS side of :class:`CaptureControl` in a controller node: the target's odometry
    subscription, the grasp client, the efforts published.

    Parameters
    ----------
    node : rclpy Node (publishes ``joint_effort_commands`` through ``node.pub_cmd``).
    control : CaptureControl
    grasp_service : str, the simulator's grasp service (std_srvs/Trigger).
    measured : callable, ``() -> (q, v)`` of the latest fresh measurement or why none (str).
    throttle : LogThrottle of the node (bad odometry logged once a period).
    """

    def __init__(
        self,
        node: Node,
        control: CaptureControl,
        grasp_service: str,
        measured: Callable[[], tuple[np.ndarray, np.ndarray] | str],
        throttle: LogThrottle,
    ) -> None:
        self.node, self.control = node, control
        self._measured, self._throttle = measured, throttle
        name = control.target.name
        topic = odometry_topic(name)
        node.create_subscription(Odometry, topic, self._on_odom, 10)
        latched = QoSProfile(
            depth=1,
            reliability=ReliabilityPolicy.RELIABLE,
            durability=DurabilityPolicy.TRANSIENT_LOCAL,
        )
        # the capture's outcome on goal_status (as an ee_goal's: the node has no ee_goal then)
        self.status = node.create_publisher(DiagnosticStatus, 'goal_status', latched)
        self._status_key: tuple | None = None
        #: Why the capture cannot proceed, ``(reason, likely cause)`` of the node's clock
        #: watchdog (``stall_reason``: no simulator, no clock on ``use_sim_time``), or None.
        self.stalled: tuple[str, str] | None = None
        self._plan = ''  # the detumbling's change from its configuration, last logged
        self.client = node.create_client(Trigger, grasp_service)
        # the simulator's release service next to its grasp service (a grasp of another
        # target than this one's is undone by it)
        self.release_client = node.create_client(Trigger, release_service(grasp_service))
        node.get_logger().info(
            f'capture of {name!r} from {topic}, grasp by {self.client.service_name}, '
            f'detumbling by {control.mode.value}'
        )

    def _on_odom(self, msg: Odometry) -> None:
        try:
            self.control.on_odometry(msg)
        except ValueError as exc:
            line = self._throttle.admit(f'bad target odometry: {exc}')
            if line:
                self.node.get_logger().error(line)

    def step(self, t: float, q: np.ndarray, v: np.ndarray) -> None:
        """One control update: efforts published, the grasp asked once in reach.

        Parameters
        ----------
        t : float
            Time [s].
        q : (nq,) ndarray
            Robot configuration [m, -, rad | m], base parts in the world frame.
        v : (nv,) ndarray
            Robot velocity [m/s, rad/s, rad/s | m/s], base parts in the world frame.
        """
        cap, log = self.control, self.node.get_logger()
        phase = cap.phase
        tau, ask = cap.update(t, q, v)
        if ask:
            if self.client.service_is_ready():
                self.client.call_async(Trigger.Request()).add_done_callback(self._reply)
                log.info(
                    f'asking for the grasp: handle {cap.distance * 100:.2f} cm away, '
                    f'{cap.speed * 100:.2f} cm/s, {cap.rate:.4f} rad/s'
                )
            else:  # (it was silent: the gripper hovered at the handle for good)
                cap.phase, cap.retry_at = 'intercept', t + GRASP_RETRY
                # (said by the abort's reason if the capture times out so)
                cap.waiting = f'the grasp service {self.client.service_name} is not available'
                line = self._throttle.admit(
                    f'capture: the grasp service {self.client.service_name} is not available: '
                    'intercepting, asking again when it is'
                )
                if line:
                    log.warning(line)
        if cap.waiting:  # (it hovered at the handle without a word)
            line = self._throttle.admit(f'capture: {cap.waiting}')
            if line:
                log.warning(line)
        if cap.phase == 'aborted' and phase != 'aborted':
            log.error(f'capture of {cap.target.name!r} aborted: {cap.reason}')
        plan = '' if cap.detumbler is None else cap.detumbler.reason
        if plan and plan != self._plan:  # (the detumbling changed from the configured one)
            log.warning(f'capture: detumbling: {plan}')
        self._plan = plan
        self.publish_status()
        if cap.phase == 'intercept' and phase not in ('wait', 'intercept', 'grasping'):
            log.warning(
                f'capture: the target is no longer held ({cap.distance * 100:.1f} cm from the '
                f'gripper: released, or the simulation reset): {phase} -> {cap.phase}'
            )
        elif cap.phase != phase:
            log.info(f'capture: {phase} -> {cap.phase}')
        if np.all(np.isfinite(tau)):
            self.node.pub_cmd.publish(Float64MultiArray(data=tau.tolist()))

    def set_stalled(self, why: tuple[str, str] | None) -> None:
        """The node's clock watchdog found the clock stopped for a reason (``why``: ``(reason,
        likely cause)`` of ``stall_reason``: no simulator, no clock on ``use_sim_time``), or
        none (None: the clock advances, or a paused simulation). A new cause is said on
        ``goal_status`` and warned in the log (throttled); the same cause again changes
        nothing (its text counts the seconds); None clears it. The capture's updates run on
        the control timer, which stands with the clock: it waits either way."""
        before = None if self.stalled is None else self.stalled[1]
        if (None if why is None else why[1]) == before:
            return
        self.stalled = why
        if why is not None:
            line = self._throttle.admit(
                f'{why[0]}: the capture of {self.control.target.name!r} cannot proceed until '
                'the clock advances'
            )
            if line:
                self.node.get_logger().warning(line)
        self.publish_status()

    def restart(self) -> None:
        """The simulation was reset: :meth:`CaptureControl.restart`, said on ``goal_status``."""
        self.control.restart()
        self.publish_status()

    def publish_status(self) -> None:
        """``goal_status`` when the capture's phase, outcome or stall changed: level OK while
        active or captured, WARN when aborted or stalled; message the outcome (and the reason;
        stalled: ``cannot proceed: <why> (<likely cause>)`` after them); values the target,
        phase and the last relative distance, speed and rate (after the grasp those of the
        held handle, refreshed every update: about zero while it is welded, not the figures at
        the grasp request)."""
        cap = self.control
        plan = '' if cap.detumbler is None else cap.detumbler.reason
        key = (cap.phase, cap.outcome, cap.reason, self.stalled, plan, cap.blocker)
        if key == self._status_key:
            return
        self._status_key = key
        message = cap.outcome + (f': {cap.reason}' if cap.reason else '')
        if self.stalled is not None:
            why, cause = self.stalled
            message += f'{"; " if cap.reason else ": "}cannot proceed: {why} ({cause})'
        warn = cap.outcome == 'aborted' or self.stalled is not None
        msg = DiagnosticStatus(
            level=DiagnosticStatus.WARN if warn else DiagnosticStatus.OK,
            name=f'{self.node.get_name()}: capture',
            message=message,
            hardware_id=cap.target.name,
        )
        msg.values = [
            KeyValue(key=k, value=str(x))
            for k, x in (
                ('target', cap.target.name),
                ('phase', cap.phase),
                ('distance', repr(cap.distance)),
                ('speed', repr(cap.speed)),
                ('rate', repr(cap.rate)),
                ('detumbling', plan),  # ('' : as configured; else what changed and why)
                ('blocked', cap.blocker),  # (what keeps the grasp from being asked, or '')
            )
        ]
        self.status.publish(msg)

    def _reply(self, future: Future) -> None:
        reply = future.result()
        measured = self._measured()
        log = self.node.get_logger()
        t = self.node.get_clock().now().nanoseconds * 1e-9
        name = self.control.target.name
        held = None if reply is None else grasped_target(reply.message)
        if reply is not None and reply.success and held is not None and held != name:
            # the simulator welds whichever handle is inside its envelope: another target's
            # was (this one's may be beyond its rate limit); detumbling it with this target's
            # model would be wrong: release it
            self.release_client.call_async(Trigger.Request())
            line = self._throttle.admit(
                f'capture: the simulator grasped {held!r}, not {name!r} ({reply.message}): '
                'releasing it, intercepting again'
            )
            if line:
                log.error(line)
            self.control.on_grasp_reply(
                False, t, np.zeros(0), np.zeros(0), f'the simulator grasped {held!r}'
            )
            return
        if reply is None or not reply.success or isinstance(measured, str):
            line = self._throttle.admit(
                f'grasp refused: {getattr(reply, "message", "no reply")}; intercepting again'
            )
            if line:
                log.warning(line)
            why = 'no reply' if reply is None else reply.message
            if reply is not None and reply.success:  # (no fresh measurement to weld with)
                why = f'granted without a fresh robot state ({measured})'
            self.control.on_grasp_reply(False, t, np.zeros(0), np.zeros(0), why)
            return
        q, v = measured
        self.control.on_grasp_reply(True, t, q, v)
        log.info(f'captured: {reply.message}; {self.control.phase}')


def release_service(grasp_service: str) -> str:
    """The simulator's release service next to its grasp service (``/ns/sim/grasp`` ->
    ``/ns/sim/release``; a name without a namespace: ``release``).

    Parameters
    ----------
    grasp_service : str

    Returns
    -------
    str
    """
    head, _, _ = grasp_service.rpartition('/')
    return f'{head}/release' if head or grasp_service.startswith('/') else 'release'


__all__ = [
    'CHECK_NODE_NAME',
    'GRASP_MARGIN',
    'GRASP_RETRY',
    'LOST_MARGIN',
    'PHASES',
    'CaptureControl',
    'CaptureInterfaces',
    'odometry_state',
    'odometry_topic',
    'release_service',
    'ros_name_problem',
    'scenario_gripper',
    'scenario_target',
    'service_name',
]
