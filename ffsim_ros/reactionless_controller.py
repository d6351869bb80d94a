"""Reactionless end-effector controller node (``ffsim_reactionless_controller``).

Closes the loop around the simulator (or a real robot with the same interface) with the law
of :mod:`ffsim_ros.control.reactionless`: task-space motion through the generalized Jacobian
J* under zero momentum (Yoshida & Umetani 1993), restricted to the reactionless null space of
the base-arm coupling (Nguyen-Huynh 2013; Dimitrov & Yoshida 2004), turned into joint torques
by computed torque on the unactuated-base dynamics ``tau = H* phiddot + c*``.

Topics (relative names):

=========================  ===================================  ==============================
topic                      type                                 content
=========================  ===================================  ==============================
``joint_states`` (sub)     sensor_msgs/JointState               joint positions and rates,
                                                                matched by joint name
``base_odom`` (sub)        nav_msgs/Odometry                    base link pose in world_frame,
                                                                twist in base link axes
``ee_goal`` (sub)          geometry_msgs/PoseStamped            goal in world_frame
``joint_effort_commands``  std_msgs/Float64MultiArray           efforts, model joint order
``ee_pose``                geometry_msgs/PoseStamped            end effector in world_frame
``ee_path``                nav_msgs/Path                        last ``EE_PATH_LENGTH`` end-
                                                                effector poses in world_frame,
                                                                one per ``EE_PATH_PERIOD``
``status``                 std_msgs/Float64MultiArray           see ``STATUS_FIELDS``
=========================  ===================================  ==============================

``status`` is a Float64MultiArray whose single layout dimension is labeled with the comma-
separated field names of ``STATUS_FIELDS`` (tracking error [m], base angular rate [rad/s],
``|P|`` [kg m/s], ``|L_g|`` [kg m^2/s], manipulability and condition number of the task rows
of J*, mode index into ``MODES``, goal active 0/1): numeric, so it plots and records directly.

Guards: goals with NaN/inf, in a frame other than world_frame, or out of reach are rejected
with an error and the arm is held still (zero commanded joint rates: a computed-torque brake);
without fresh ``joint_states`` and ``base_odom`` (``state_timeout`` on the node's clock) no
command is published, so the simulator's command timeout zeroes the efforts. The base attitude
held in reactionless mode is captured from the measurement when a goal is accepted, so a
restarted controller picks up where the robot is.
"""

from __future__ import annotations

import math
import sys
from collections import deque

import numpy as np
import rclpy
from geometry_msgs.msg import PoseStamped
from nav_msgs.msg import Odometry, Path
from rcl_interfaces.msg import ParameterDescriptor, ParameterType, SetParametersResult
from rclpy.node import Node
from rclpy.time import Time
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray, MultiArrayDimension

import ffsim_ros.dynamics as D
from ffsim_ros.control import ControlMode, Gains, ReactionlessController
from ffsim_ros.simulator import ParameterValueError, load_robot

MODES = tuple(m.value for m in ControlMode)
STATUS_FIELDS = (
    'tracking_error',
    'base_angular_rate',
    'linear_momentum',
    'angular_momentum',
    'manipulability',
    'condition',
    'mode',
    'goal_active',
)
#: ``ee_path``: poses kept (the oldest drop out) and node-clock seconds between two of them.
EE_PATH_LENGTH = 500
EE_PATH_PERIOD = 0.1


def _quat_to_rot(x: float, y: float, z: float, w: float) -> np.ndarray:
    q = np.array([x, y, z, w], dtype=float)
    q /= np.linalg.norm(q)
    x, y, z, w = q
    return np.array(
        [
            [1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
            [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
            [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)],
        ]
    )


class ReactionlessControllerNode(Node):
    """The ``ffsim_reactionless_controller`` node (see the module docstring)."""

    def __init__(self, **kwargs) -> None:
        super().__init__('ffsim_reactionless_controller', **kwargs)
        P = ParameterType

        def declare(name, default, text, ptype, read_only=True):
            self.declare_parameter(
                name,
                default,
                ParameterDescriptor(description=text, type=ptype, read_only=read_only),
            )

        declare('robot_description', '', 'URDF XML (wins over robot_file)', P.PARAMETER_STRING)
        declare('robot_file', '', 'URDF path; empty: the sample space robot', P.PARAMETER_STRING)
        declare('ee_link', 'ee_link', 'controlled link frame', P.PARAMETER_STRING)
        declare('world_frame', 'world', 'inertial frame id of goals and poses', P.PARAMETER_STRING)
        declare(
            'control_rate_hz', 100.0, 'control rate on the node clock [Hz]', P.PARAMETER_DOUBLE
        )
        declare('mode', 'reactionless', f'one of {MODES}', P.PARAMETER_STRING, read_only=False)
        declare('track_orientation', False, 'track the goal orientation too', P.PARAMETER_BOOL)
        declare('state_timeout', 0.2, 'max age of joint_states/base_odom [s]', P.PARAMETER_DOUBLE)
        defaults = Gains()
        for name, value in defaults.__dict__.items():
            declare(f'gains.{name}', float(value), f'Gains.{name} (SI)', P.PARAMETER_DOUBLE)
        self._configure()

    # ---------------------------------------------------------------------------- set-up
    def _param(self, name: str):
        return self.get_parameter(name).value

    def _configure(self) -> None:
        model, _ = load_robot(self)
        self.model = model
        ee_link = str(self._param('ee_link'))
        if ee_link not in model.link_names:
            raise ParameterValueError(
                f'ee_link: expected one of {list(model.link_names)}, got {ee_link!r}'
            )
        mode = str(self._param('mode'))
        if mode not in MODES:
            raise ParameterValueError(f'mode: expected one of {MODES}, got {mode!r}')
        rate = float(self._param('control_rate_hz'))
        if not (math.isfinite(rate) and rate > 0):
            raise ParameterValueError(f'control_rate_hz: expected a finite value > 0, got {rate}')
        timeout = float(self._param('state_timeout'))
        if not (math.isfinite(timeout) and timeout > 0):
            raise ParameterValueError(f'state_timeout: expected a finite value > 0, got {timeout}')
        self.state_timeout_ns = int(timeout * 1e9)
        try:
            gains = Gains(
                **{name: float(self._param(f'gains.{name}')) for name in Gains().__dict__}
            )
        except ValueError as exc:
            raise ParameterValueError(f'gains.{exc}') from None
        self.world = str(self._param('world_frame')) or 'world'
        self.law = ReactionlessController(
            model,
            ee_link,
            mode=mode,
            gains=gains,
            track_orientation=bool(self._param('track_orientation')),
        )
        self._index = {name: k for k, name in enumerate(model.joint_names)}
        self._joints: tuple[np.ndarray, np.ndarray, Time] | None = None
        self._base: tuple[np.ndarray, np.ndarray, Time] | None = None
        self._goal_p: np.ndarray | None = None
        self._goal_R: np.ndarray | None = None
        self._attitude_ref: np.ndarray | None = None
        self._pending_goal: PoseStamped | None = None

        self.pub_cmd = self.create_publisher(Float64MultiArray, 'joint_effort_commands', 10)
        self.pub_pose = self.create_publisher(PoseStamped, 'ee_pose', 10)
        self.pub_path = self.create_publisher(Path, 'ee_path', 10)
        self._path_poses: deque[PoseStamped] = deque(maxlen=EE_PATH_LENGTH)
        self._path_last_ns: int | None = None
        self.pub_status = self.create_publisher(Float64MultiArray, 'status', 10)
        self.create_subscription(JointState, 'joint_states', self._on_joints, 10)
        self.create_subscription(Odometry, 'base_odom', self._on_odom, 10)
        self.create_subscription(PoseStamped, 'ee_goal', self._on_goal, 10)
        self.add_on_set_parameters_callback(self._on_set_parameters)
        self._cmd_msg = Float64MultiArray()
        self._status_msg = Float64MultiArray()
        self._status_msg.layout.dim = [
            MultiArrayDimension(label=','.join(STATUS_FIELDS), size=len(STATUS_FIELDS), stride=1)
        ]
        self.create_timer(1.0 / rate, self._on_timer)
        self.get_logger().info(
            f'{model.name}: controlling {ee_link} in {mode} mode at {rate:g} Hz'
            f' (use_sim_time={self.get_parameter("use_sim_time").value})'
        )

    def _on_set_parameters(self, params) -> SetParametersResult:
        for p in params:
            if p.name == 'mode':
                if p.value not in MODES:
                    return SetParametersResult(
                        successful=False, reason=f'mode: expected one of {MODES}, got {p.value!r}'
                    )
                self.law.mode = ControlMode(p.value)
                self._attitude_ref = None
                self.get_logger().info(f'mode -> {p.value}')
        return SetParametersResult(successful=True)

    # ------------------------------------------------------------------------- callbacks
    def _on_joints(self, msg: JointState) -> None:
        n = self.model.n
        pos = np.full(n, np.nan)
        vel = np.zeros(n)
        for k, name in enumerate(msg.name):
            j = self._index.get(name)
            if j is None:
                continue
            if k < len(msg.position):
                pos[j] = msg.position[k]
            if k < len(msg.velocity):
                vel[j] = msg.velocity[k]
        if not (np.all(np.isfinite(pos)) and np.all(np.isfinite(vel))):
            missing = [
                nm for nm, x in zip(self.model.joint_names, pos, strict=True) if not np.isfinite(x)
            ]
            self.get_logger().error(
                f'joint_states: expected finite values for joints {list(self.model.joint_names)}; '
                f'missing or invalid: {missing}; no command',
                throttle_duration_sec=1.0,
            )
            self._joints = None
            return
        self._joints = (pos, vel, self.get_clock().now())

    def _on_odom(self, msg: Odometry) -> None:
        p = msg.pose.pose.position
        o = msg.pose.pose.orientation
        tw = msg.twist.twist
        values = [
            p.x,
            p.y,
            p.z,
            o.x,
            o.y,
            o.z,
            o.w,
            tw.linear.x,
            tw.linear.y,
            tw.linear.z,
            tw.angular.x,
            tw.angular.y,
            tw.angular.z,
        ]
        if not all(math.isfinite(x) for x in values):
            self.get_logger().error(
                'base_odom: non-finite values; ignored', throttle_duration_sec=1.0
            )
            return
        R = _quat_to_rot(o.x, o.y, o.z, o.w)
        lin = R @ [tw.linear.x, tw.linear.y, tw.linear.z]  # base link axes -> world
        ang = R @ [tw.angular.x, tw.angular.y, tw.angular.z]
        try:
            qb, vb = D.base_state_from_link(
                self.model, [p.x, p.y, p.z], [o.x, o.y, o.z, o.w], lin, ang
            )
        except ValueError as exc:
            self.get_logger().error(f'base_odom: {exc}; ignored', throttle_duration_sec=1.0)
            return
        self._base = (qb, vb, self.get_clock().now())

    def _on_goal(self, msg: PoseStamped) -> None:
        self._pending_goal = msg

    def _accept_goal(self, msg: PoseStamped, q: np.ndarray) -> None:
        p = msg.pose.position
        o = msg.pose.orientation
        goal = np.array([p.x, p.y, p.z])
        frame = msg.header.frame_id
        try:
            if frame != self.world:
                raise ValueError(f'expected frame_id {self.world!r}, got {frame!r}')
            quat = np.array([o.x, o.y, o.z, o.w])
            if not np.all(np.isfinite(quat)):
                raise ValueError(f'orientation: expected finite values, got {quat.tolist()}')
            self.law.check_goal(q, goal)
        except ValueError as exc:
            self.get_logger().error(f'ee_goal rejected ({exc}); holding the arm still')
            self._goal_p = self._goal_R = None
            self._attitude_ref = q[3:7].copy()
            return
        self._goal_p = goal
        self._goal_R = (
            _quat_to_rot(*quat)
            if self.law.track_orientation and np.linalg.norm(quat) > 0
            else None
        )
        self._attitude_ref = q[3:7].copy()
        self.get_logger().info(f'ee_goal accepted: {np.round(goal, 4).tolist()} in {self.world}')

    # ------------------------------------------------------------------------------ loop
    def _fresh(self, item) -> bool:
        if item is None:
            return False
        return (self.get_clock().now() - item[2]).nanoseconds <= self.state_timeout_ns

    def _on_timer(self) -> None:
        if not (self._fresh(self._joints) and self._fresh(self._base)):
            self.get_logger().warning(
                'no fresh joint_states/base_odom: not commanding', throttle_duration_sec=2.0
            )
            return
        pos, vel, _ = self._joints
        qb, vb, _ = self._base
        q = np.r_[qb, pos]
        v = np.r_[vb, vel]
        if self._pending_goal is not None:
            goal, self._pending_goal = self._pending_goal, None
            self._accept_goal(goal, q)
        ref = self._attitude_ref if self.law.mode is ControlMode.REACTIONLESS else None
        out = self.law.compute(q, v, self._goal_p, self._goal_R, attitude_reference=ref)
        if not np.all(np.isfinite(out.tau)):  # pragma: no cover - defensive
            self.get_logger().error('non-finite torque computed: not commanding')
            return
        self._cmd_msg.data = out.tau.tolist()
        self.pub_cmd.publish(self._cmd_msg)
        stamp = self.get_clock().now().to_msg()
        pose = PoseStamped()
        pose.header.stamp = stamp
        pose.header.frame_id = self.world
        pose.pose.position.x, pose.pose.position.y, pose.pose.position.z = (
            float(x) for x in out.ee_position
        )
        o = pose.pose.orientation
        o.x, o.y, o.z, o.w = (float(x) for x in out.ee_quaternion)
        self.pub_pose.publish(pose)
        self._append_path(pose)
        self._status_msg.data = [
            out.position_error,
            out.base_angular_rate,
            float(np.linalg.norm(out.momentum[:3])),
            float(np.linalg.norm(out.momentum[3:])),
            out.manipulability,
            out.condition,
            float(MODES.index(out.mode.value)),
            0.0 if self._goal_p is None else 1.0,
        ]
        self.pub_status.publish(self._status_msg)

    def _append_path(self, pose: PoseStamped) -> None:
        """Append ``pose`` to ``ee_path`` at most every ``EE_PATH_PERIOD`` and publish it."""
        now_ns = self.get_clock().now().nanoseconds
        last = self._path_last_ns
        if last is not None and 0 <= now_ns - last < EE_PATH_PERIOD * 1e9:
            return  # (a clock jumping back, e.g. a restarted simulator, appends at once)
        self._path_last_ns = now_ns
        self._path_poses.append(pose)
        path = Path()
        path.header = pose.header
        path.poses = list(self._path_poses)
        self.pub_path.publish(path)


def main(args: list[str] | None = None) -> int:
    """Console script ``reactionless_controller``."""
    rclpy.init(args=args)
    node = None
    code = 0
    try:
        node = ReactionlessControllerNode()
        rclpy.spin(node)
    except ParameterValueError as exc:
        print(f'ffsim_reactionless_controller: invalid parameter: {exc}', file=sys.stderr)
        code = 2
    except (KeyboardInterrupt, rclpy.executors.ExternalShutdownException):
        pass
    finally:
        if node is not None:
            node.destroy_node()
        rclpy.try_shutdown()
    return code


if __name__ == '__main__':
    sys.exit(main())
