"""Free-floating robot simulator node (``ffsim_simulator``).

Integrates the free-floating equations of motion of :mod:`ffsim_ros.dynamics` (seed 000,
eq. 39) at ``physics_rate_hz`` in a physics thread, paced against the wall clock by
``real_time_factor``, and publishes at ``publish_rate_hz`` of *simulated* time. All messages
of one publish step carry the same stamp, the simulated time, which advances by exactly one
physics step (an integer number of nanoseconds) per step. ``real_time_factor`` is an upper
bound: when the machine cannot keep up, the simulation runs slower rather than catching up in
bursts (a lag over two publish periods is dropped), so controllers closing the loop over DDS
always get their share of simulated time.

Topics (relative names, so a namespace moves them all):

=========================  ===================================  ==============================
topic                      type                                 content
=========================  ===================================  ==============================
``joint_states``           sensor_msgs/JointState               position, velocity, applied
                                                                effort, model joint order
``/tf``                    tf2_msgs/TFMessage                   world_frame -> base link frame
``base_odom``              nav_msgs/Odometry                    base link frame pose in
                                                                world_frame; twist of the base
                                                                link frame expressed in its own
                                                                axes (REP 105, child frame)
``momentum``               std_msgs/Float64MultiArray           ``[P (3), L_g (3), r_g (3)]``
``markers``                visualization_msgs/MarkerArray       CoM sphere, P and L_g arrows
                                                                (a tenth of the publish rate)
``robot_description``      std_msgs/String (transient local)    the URDF
``/clock``                 rosgraph_msgs/Clock                  simulated time
``joint_effort_commands``  std_msgs/Float64MultiArray (sub)     joint efforts, joint order
``base_wrench``            geometry_msgs/WrenchStamped (sub)    wrench at the base CoM, frame
                                                                world_frame or the base link
=========================  ===================================  ==============================

``momentum``: linear momentum ``P`` [kg m/s], angular momentum about the system CoM ``L_g``
[kg m^2/s] (seed 000, eqs. 9 and 12-16) and the CoM ``r_g`` [m], all in world_frame. ROS has
no standard message for a momentum plus a point, and misusing Wrench/Twist would mislabel the
units; a Float64MultiArray with a labeled layout (dims ``quantity`` = ``P,L_g,com`` x
``axis`` = ``x,y,z``) is explicit and plots directly.

Services: ``~/reset`` (std_srvs/Trigger: back to the initial state; simulated time keeps
running forward so ``use_sim_time`` nodes never see time jump back) and ``~/pause``
(std_srvs/SetBool).

Guards (ros2_controllers style): a command of the wrong length or with NaN/inf is rejected
with a throttled error and the last good command stays; no command for ``command_timeout``
seconds of simulated time -> zero effort; efforts are clipped to the URDF effort limits and
what is applied is what ``joint_states.effort`` shows; a non-finite state after a step stops
the integration with an error and is never published.
"""

from __future__ import annotations

import math
import sys
import threading
import time
from dataclasses import dataclass

import numpy as np
import rclpy
from builtin_interfaces.msg import Time
from geometry_msgs.msg import Point, TransformStamped, WrenchStamped
from nav_msgs.msg import Odometry
from rcl_interfaces.msg import ParameterDescriptor, ParameterType
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray, MultiArrayDimension, String
from std_srvs.srv import SetBool, Trigger
from visualization_msgs.msg import Marker, MarkerArray

import ffsim_ros.dynamics as D
from ffsim_ros.dynamics.lie import quat_to_matrix
from ffsim_ros.resources import sample_robot

try:  # a real ROS install has tf2_ros; the PyPI wheels do not
    from tf2_ros import TransformBroadcaster
except ImportError:  # pragma: no cover - depends on the installation
    TransformBroadcaster = None
from tf2_msgs.msg import TFMessage

DEFAULT_ROBOT = 'ffsim_servicer_7dof'
INTEGRATORS = D.FIXED_STEP_METHODS + D.SCIPY_METHODS


class ParameterValueError(ValueError):
    """A parameter value the node cannot start with (names the parameter)."""


def _descriptor(text: str, ptype: int, read_only: bool = True) -> ParameterDescriptor:
    return ParameterDescriptor(description=text, type=ptype, read_only=read_only)


def _stamp(ns: int) -> Time:
    return Time(sec=ns // 1_000_000_000, nanosec=ns % 1_000_000_000)


def load_robot(node: Node) -> tuple[D.Model, str]:
    """Model and URDF text from ``robot_description`` or ``robot_file`` (default sample).

    Raises
    ------
    ParameterValueError
        Unreadable file or an invalid URDF (the message says which parameter).
    """
    text = node.get_parameter('robot_description').value
    source = 'robot_description'
    if not text:
        path = node.get_parameter('robot_file').value or str(sample_robot(DEFAULT_ROBOT))
        source = f'robot_file ({path})'
        try:
            with open(path, encoding='utf-8') as handle:
                text = handle.read()
        except OSError as exc:
            raise ParameterValueError(f'robot_file: cannot read {path!r}: {exc}') from None
    try:
        return D.load_urdf(text), text
    except (ValueError, NotImplementedError) as exc:
        raise ParameterValueError(f'{source}: invalid robot: {exc}') from None


@dataclass
class _Command:
    tau: np.ndarray  # (n,) requested efforts
    stamp_ns: int  # sim time of reception


class Simulator(Node):
    """The ``ffsim_simulator`` node (see the module docstring)."""

    def __init__(self, **kwargs) -> None:
        super().__init__('ffsim_simulator', **kwargs)
        P = ParameterType
        self.declare_parameter(
            'robot_description',
            '',
            _descriptor('URDF XML (wins over robot_file)', P.PARAMETER_STRING),
        )
        self.declare_parameter(
            'robot_file',
            '',
            _descriptor('URDF path; empty: the sample space robot', P.PARAMETER_STRING),
        )
        self.declare_parameter(
            'physics_rate_hz', 1000.0, _descriptor('integration rate [Hz]', P.PARAMETER_DOUBLE)
        )
        self.declare_parameter(
            'publish_rate_hz',
            100.0,
            _descriptor('publishing rate in simulated time [Hz]', P.PARAMETER_DOUBLE),
        )
        self.declare_parameter(
            'integrator', 'rk4', _descriptor(f'one of {INTEGRATORS}', P.PARAMETER_STRING)
        )
        self.declare_parameter(
            'real_time_factor',
            1.0,
            _descriptor(
                'sim time / wall time (upper bound); 0 = as fast as possible', P.PARAMETER_DOUBLE
            ),
        )
        self.declare_parameter(
            'world_frame', 'world', _descriptor('inertial frame id', P.PARAMETER_STRING)
        )
        self.declare_parameter(
            'frame_prefix', '', _descriptor('prefix of the robot link frames', P.PARAMETER_STRING)
        )
        self.declare_parameter(
            'command_timeout',
            0.5,
            _descriptor('sim seconds without command before zero effort', P.PARAMETER_DOUBLE),
        )
        self.declare_parameter(
            'publish_clock', True, _descriptor('publish /clock', P.PARAMETER_BOOL)
        )
        self.declare_parameter(
            'gravity',
            [0.0, 0.0, 0.0],
            _descriptor('gravity in world_frame [m/s^2]', P.PARAMETER_DOUBLE_ARRAY),
        )
        self.declare_parameter(
            'joint_dynamics',
            False,
            _descriptor('apply the URDF joint damping/friction', P.PARAMETER_BOOL),
        )
        self.declare_parameter(
            'initial_base_position',
            [0.0, 0.0, 0.0],
            _descriptor('base link frame origin in world_frame [m]', P.PARAMETER_DOUBLE_ARRAY),
        )
        self.declare_parameter(
            'initial_base_orientation',
            [0.0, 0.0, 0.0, 1.0],
            _descriptor('base link quaternion (x, y, z, w)', P.PARAMETER_DOUBLE_ARRAY),
        )
        self.declare_parameter(
            'initial_base_twist',
            [0.0] * 6,
            _descriptor(
                'base link origin velocity and angular velocity, world_frame [m/s, rad/s]',
                P.PARAMETER_DOUBLE_ARRAY,
            ),
        )
        self.declare_parameter(
            'initial_joint_positions',
            [0.0],
            _descriptor('joint positions (empty or [0.0]: zeros)', P.PARAMETER_DOUBLE_ARRAY),
        )
        self.declare_parameter(
            'initial_joint_velocities',
            [0.0],
            _descriptor('joint velocities (empty or [0.0]: zeros)', P.PARAMETER_DOUBLE_ARRAY),
        )
        self.declare_parameter(
            'start_paused', False, _descriptor('start with physics paused', P.PARAMETER_BOOL)
        )
        self._configure()

    # ------------------------------------------------------------------------------ set-up
    def _param(self, name: str):
        return self.get_parameter(name).value

    def _positive(self, name: str, allow_zero: bool = False) -> float:
        value = float(self._param(name))
        ok = math.isfinite(value) and (value >= 0.0 if allow_zero else value > 0.0)
        if not ok:
            bound = '>= 0' if allow_zero else '> 0'
            raise ParameterValueError(f'{name}: expected a finite value {bound}, got {value}')
        return value

    def _vector(self, name: str, size: int, zeros_ok: bool = False) -> np.ndarray:
        value = np.asarray(self._param(name), dtype=float)
        if zeros_ok and (value.size == 0 or (value.size == 1 and value[0] == 0.0)):
            return np.zeros(size)
        if value.shape != (size,) or not np.all(np.isfinite(value)):
            raise ParameterValueError(
                f'{name}: expected {size} finite values, got {value.tolist()}'
            )
        return value

    def _configure(self) -> None:
        model, self.urdf = load_robot(self)
        model = D.with_gravity(model, self._vector('gravity', 3))
        model = D.with_joint_dynamics(model, bool(self._param('joint_dynamics')))
        if not model.floating_base:  # pragma: no cover - load_robot always floats
            raise ParameterValueError('robot: expected a floating base')
        self.model = model
        physics = self._positive('physics_rate_hz')
        publish = self._positive('publish_rate_hz')
        if publish > physics:
            raise ParameterValueError(
                f'publish_rate_hz: expected <= physics_rate_hz ({physics}), got {publish}'
            )
        self.dt_ns = int(round(1e9 / physics))
        self.dt = self.dt_ns * 1e-9
        # publishing happens every `decimation` physics steps (rounded; the achieved rate is
        # physics_rate / decimation)
        self.decimation = max(1, int(round(physics / publish)))
        self.integrator = str(self._param('integrator'))
        if self.integrator not in INTEGRATORS:
            raise ParameterValueError(
                f'integrator: expected one of {INTEGRATORS}, got {self.integrator!r}'
            )
        self.rtf = self._positive('real_time_factor', allow_zero=True)
        # wall-clock lag [s] tolerated before the pacing stops catching up (two publish periods)
        self.max_lag = 2.0 * self.decimation * self.dt / max(self.rtf, 1e-9)
        self.timeout_ns = int(self._positive('command_timeout') * 1e9)
        self.world = str(self._param('world_frame')) or 'world'
        prefix = str(self._param('frame_prefix'))
        self.base_frame = prefix + model.base_link
        n = model.n
        q_base, v_base = D.base_state_from_link(
            model,
            self._vector('initial_base_position', 3),
            self._vector('initial_base_orientation', 4),
            *np.split(self._vector('initial_base_twist', 6), 2),
        )
        self.q0 = np.r_[q_base, self._vector('initial_joint_positions', n, zeros_ok=True)]
        self.v0 = np.r_[v_base, self._vector('initial_joint_velocities', n, zeros_ok=True)]

        # state (guarded by self._lock)
        self._lock = threading.Lock()
        self.q = self.q0.copy()
        self.v = self.v0.copy()
        self.steps = 0
        self.applied = np.zeros(n)
        self._command: _Command | None = None
        self._base_wrench = np.zeros(6)
        self._paused = threading.Event()
        if self._param('start_paused'):
            self._paused.set()
        self._stop = threading.Event()
        self._wake = threading.Event()
        self.faulted = False

        # publishers
        latched = QoSProfile(
            depth=1,
            reliability=ReliabilityPolicy.RELIABLE,
            durability=DurabilityPolicy.TRANSIENT_LOCAL,
        )
        self.pub_joints = self.create_publisher(JointState, 'joint_states', 10)
        self.pub_odom = self.create_publisher(Odometry, 'base_odom', 10)
        self.pub_momentum = self.create_publisher(Float64MultiArray, 'momentum', 10)
        self.pub_markers = self.create_publisher(MarkerArray, 'markers', 10)
        self.pub_description = self.create_publisher(String, 'robot_description', latched)
        self.pub_clock = (
            self.create_publisher(Clock, '/clock', 10) if self._param('publish_clock') else None
        )
        if TransformBroadcaster is not None:
            self._tf = TransformBroadcaster(self)
            self._send_tf = self._tf.sendTransform
        else:  # same topic and QoS as tf2_ros.TransformBroadcaster (depth 100, reliable)
            self._tf = self.create_publisher(TFMessage, '/tf', QoSProfile(depth=100))
            self._send_tf = lambda t: self._tf.publish(TFMessage(transforms=[t]))
        self.pub_description.publish(String(data=self.urdf))
        self.create_subscription(Float64MultiArray, 'joint_effort_commands', self._on_command, 10)
        self.create_subscription(WrenchStamped, 'base_wrench', self._on_base_wrench, 10)
        self.create_service(Trigger, '~/reset', self._on_reset)
        self.create_service(SetBool, '~/pause', self._on_pause)

        # messages reused at every publish step (only their fields change)
        self._joint_msg = JointState(name=list(model.joint_names))
        self._tf_msg = TransformStamped()
        self._tf_msg.header.frame_id = self.world
        self._tf_msg.child_frame_id = self.base_frame
        self._odom_msg = Odometry()
        self._odom_msg.header.frame_id = self.world
        self._odom_msg.child_frame_id = self.base_frame
        self._momentum_msg = Float64MultiArray()
        self._momentum_msg.layout.dim = [
            MultiArrayDimension(label='P,L_g,com', size=3, stride=9),
            MultiArrayDimension(label='x,y,z', size=3, stride=3),
        ]
        self.get_logger().info(
            f'{model.name}: {n} joints, {model.total_mass:.1f} kg; physics {physics:g} Hz '
            f'({self.integrator}), publish every {self.decimation} steps, real-time factor '
            f'{self.rtf:g}{" (as fast as possible)" if self.rtf == 0 else ""}'
        )
        self._publish(self.q, self.v, self.applied, 0)
        self._thread = threading.Thread(target=self._run, name='ffsim_physics', daemon=True)
        self._thread.start()

    # --------------------------------------------------------------------------- callbacks
    def _on_command(self, msg: Float64MultiArray) -> None:
        data = np.asarray(msg.data, dtype=float)
        n = self.model.n
        if data.shape != (n,):
            self.get_logger().error(
                f'joint_effort_commands: expected {n} values in joint_states order '
                f'{list(self.model.joint_names)}, got {data.size}; command ignored',
                throttle_duration_sec=1.0,
            )
            return
        if not np.all(np.isfinite(data)):
            self.get_logger().error(
                f'joint_effort_commands: expected finite values, got {data.tolist()}; '
                'command ignored',
                throttle_duration_sec=1.0,
            )
            return
        with self._lock:
            self._command = _Command(data.copy(), self.steps * self.dt_ns)

    def _on_base_wrench(self, msg: WrenchStamped) -> None:
        f, t = msg.wrench.force, msg.wrench.torque
        w = np.array([f.x, f.y, f.z, t.x, t.y, t.z])
        frame = msg.header.frame_id
        if not np.all(np.isfinite(w)):
            self.get_logger().error(
                f'base_wrench: expected finite values, got {w.tolist()}; ignored',
                throttle_duration_sec=1.0,
            )
            return
        if frame not in (self.world, self.base_frame, '', self.model.base_link):
            self.get_logger().error(
                f'base_wrench: expected frame_id {self.world!r} or {self.base_frame!r}, '
                f'got {frame!r}; ignored',
                throttle_duration_sec=1.0,
            )
            return
        with self._lock:
            if frame in (self.base_frame, self.model.base_link):
                R = D.link_pose(self.model, self.q, self.model.base_link)[1]
                w = np.r_[R @ w[:3], R @ w[3:]]
            self._base_wrench = w

    def _on_reset(self, request: Trigger.Request, response: Trigger.Response):
        with self._lock:
            self.q = self.q0.copy()
            self.v = self.v0.copy()
            self._command = None
            self._base_wrench = np.zeros(6)
            self.applied = np.zeros(self.model.n)
            self.faulted = False
            q, v, steps = self.q.copy(), self.v.copy(), self.steps
        self._publish(q, v, np.zeros(self.model.n), steps)
        self._wake.set()
        response.success = True
        response.message = f'reset to the initial state at sim time {steps * self.dt:.6f} s'
        return response

    def _on_pause(self, request: SetBool.Request, response: SetBool.Response):
        if request.data:
            self._paused.set()
        else:
            if self.faulted:
                response.success = False
                response.message = 'state is not finite: call ~/reset first'
                return response
            self._paused.clear()
            self._wake.set()
        response.success = True
        response.message = 'paused' if request.data else 'running'
        return response

    # ----------------------------------------------------------------------------- physics
    def _efforts(self, now_ns: int) -> np.ndarray:
        cmd = self._command
        if cmd is None or now_ns - cmd.stamp_ns > self.timeout_ns:
            return np.zeros(self.model.n)
        limit = self.model.effort_limit
        return np.clip(cmd.tau, -limit, limit)

    def _advance(self, count: int) -> bool:
        """Integrate ``count`` steps under the current inputs; False on a non-finite state."""
        with self._lock:
            q, v, steps = self.q, self.v, self.steps
            tau = self._efforts(steps * self.dt_ns)
            wrench = self._base_wrench
            model = self.model
        try:
            q_new, v_new = D.step(
                model,
                q,
                v,
                tau,
                self.dt,
                method=self.integrator,
                base_wrench=wrench,
                steps=count,
            )
            finite = bool(np.all(np.isfinite(q_new)) and np.all(np.isfinite(v_new)))
            reason = 'non-finite state'
        except (ValueError, RuntimeError, FloatingPointError) as exc:
            # the dynamics reject a non-finite state (e.g. no positive definite inertia)
            finite, reason = False, f'non-finite state ({exc})'
        if not finite:
            self.faulted = True
            self._paused.set()
            self.get_logger().error(
                f'{reason} after sim time {steps * self.dt:.6f} s: integration paused, '
                'the last finite state stays published; call ~/reset'
            )
            return False
        with self._lock:
            if self.steps != steps:  # pragma: no cover - only the physics thread steps
                return True
            if self.q is q:  # not reset meanwhile
                self.q, self.v = q_new, v_new
                self.applied = tau
            self.steps = steps + count
            q_pub, v_pub, applied = self.q.copy(), self.v.copy(), self.applied.copy()
        if self.steps % self.decimation == 0:
            self._publish(q_pub, v_pub, applied, self.steps)
        return True

    def _run(self) -> None:
        wall0 = time.monotonic()
        sim0 = self.steps
        while not self._stop.is_set():
            if self._paused.is_set():
                self._wake.wait(0.05)
                self._wake.clear()
                wall0, sim0 = time.monotonic(), self.steps
                continue
            # step up to the next publish instant in one batch (inputs are held over a batch;
            # commands arrive at most at the publish rate of the controllers in practice)
            count = self.decimation - self.steps % self.decimation
            if self.rtf > 0.0:
                now = time.monotonic()
                due = wall0 + (self.steps + count - sim0) * self.dt / self.rtf
                delay = due - now
                if delay > 0.0:
                    self._stop.wait(delay)
                    continue
                if -delay > self.max_lag:
                    # Behind schedule (a loaded machine): slow down instead of bursting ahead
                    # to catch up, which would starve the controllers of sim time to react in.
                    wall0, sim0 = now, self.steps
            try:
                self._advance(count)
            except Exception as exc:  # noqa: BLE001 - never let the physics thread die silently
                self.faulted = True
                self._paused.set()
                self.get_logger().error(f'physics step failed: {exc!r}; paused, call ~/reset')

    def stop(self) -> None:
        """Stop the physics thread."""
        self._stop.set()
        self._wake.set()
        self._thread.join(timeout=5.0)

    # --------------------------------------------------------------------------- publish
    def _publish(self, q: np.ndarray, v: np.ndarray, applied: np.ndarray, steps: int) -> None:
        """Publish one step's messages, all stamped with the simulated time ``steps * dt``."""
        try:
            self._publish_unchecked(q, v, applied, steps)
        except Exception as exc:  # noqa: BLE001 - rclpy raises RCLError subclasses
            if not rclpy.ok(context=self.context):  # shutting down: nothing to publish to
                self._stop.set()
                return
            raise exc

    def _publish_unchecked(
        self, q: np.ndarray, v: np.ndarray, applied: np.ndarray, steps: int
    ) -> None:
        model = self.model
        stamp = _stamp(steps * self.dt_ns)
        if self.pub_clock is not None:
            self.pub_clock.publish(Clock(clock=stamp))
        js = self._joint_msg
        js.header.stamp = stamp
        js.position = q[7:].tolist()
        js.velocity = v[6:].tolist()
        js.effort = applied.tolist()
        self.pub_joints.publish(js)

        # base link frame: origin r0 - R c0, its velocity V0 + w0 x (origin - r0)
        p, quat, lin, w = D.base_link_state(model, q, v)
        R = quat_to_matrix(quat)
        px, py, pz = p.tolist()
        qx, qy, qz, qw = quat.tolist()
        t = self._tf_msg
        t.header.stamp = stamp
        t.transform.translation.x, t.transform.translation.y, t.transform.translation.z = (
            px,
            py,
            pz,
        )
        ro = t.transform.rotation
        ro.x, ro.y, ro.z, ro.w = qx, qy, qz, qw
        self._send_tf(t)

        odom = self._odom_msg
        odom.header.stamp = stamp
        pos = odom.pose.pose.position
        pos.x, pos.y, pos.z = px, py, pz
        o = odom.pose.pose.orientation
        o.x, o.y, o.z, o.w = qx, qy, qz, qw
        tw = odom.twist.twist
        tw.linear.x, tw.linear.y, tw.linear.z = (R.T @ lin).tolist()
        tw.angular.x, tw.angular.y, tw.angular.z = (R.T @ w).tolist()
        self.pub_odom.publish(odom)

        h, com = D.momentum_and_com(model, q, v)  # [P; L_g] and r_g
        mom = self._momentum_msg
        mom.data = np.r_[h, com].tolist()
        self.pub_momentum.publish(mom)
        if steps % (10 * self.decimation) == 0:  # markers are for the eye: a tenth of the rate
            self.pub_markers.publish(self._markers(stamp, h, com))

    def _markers(self, stamp: Time, h: np.ndarray, com: np.ndarray) -> MarkerArray:
        out = MarkerArray()
        sphere = Marker()
        sphere.header.stamp = stamp
        sphere.header.frame_id = self.world
        sphere.ns, sphere.id, sphere.type = 'system_com', 0, Marker.SPHERE
        sphere.pose.position.x, sphere.pose.position.y, sphere.pose.position.z = (
            float(x) for x in com
        )
        sphere.pose.orientation.w = 1.0
        sphere.scale.x = sphere.scale.y = sphere.scale.z = 0.15
        sphere.color.r, sphere.color.g, sphere.color.b, sphere.color.a = 1.0, 0.8, 0.0, 1.0
        out.markers.append(sphere)
        for k, (name, vec, rgb) in enumerate(
            (
                ('linear_momentum', h[:3], (0.1, 0.6, 1.0)),
                ('angular_momentum', h[3:], (1.0, 0.2, 0.2)),
            )
        ):
            arrow = Marker()
            arrow.header.stamp = stamp
            arrow.header.frame_id = self.world
            arrow.ns, arrow.id, arrow.type = name, k + 1, Marker.ARROW
            arrow.scale.x, arrow.scale.y, arrow.scale.z = 0.04, 0.08, 0.1
            arrow.color.r, arrow.color.g, arrow.color.b = rgb
            arrow.color.a = 1.0
            # arrow length 1 m per 10 units of momentum, from the CoM
            tip = com + 0.1 * vec
            arrow.points = [
                Point(x=float(com[0]), y=float(com[1]), z=float(com[2])),
                Point(x=float(tip[0]), y=float(tip[1]), z=float(tip[2])),
            ]
            out.markers.append(arrow)
        return out


def main(args: list[str] | None = None) -> int:
    """Console script ``simulator`` (``ros2 run ffsim_ros simulator``)."""
    rclpy.init(args=args)
    node = None
    code = 0
    try:
        node = Simulator()
        rclpy.spin(node)
    except ParameterValueError as exc:
        print(f'ffsim_simulator: invalid parameter: {exc}', file=sys.stderr)
        code = 2
    except KeyboardInterrupt:
        pass
    except rclpy.executors.ExternalShutdownException:
        pass
    finally:
        if node is not None:
            node.stop()
            node.destroy_node()
        rclpy.try_shutdown()
    return code


if __name__ == '__main__':
    sys.exit(main())
