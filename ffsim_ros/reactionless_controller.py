"""Reactionless end-effector controller node (``ffsim_reactionless_controller``).

Closes the loop around the simulator (or a real robot with the same interface) with the law
of :mod:`ffsim_ros.control.reactionless`: task-space motion through the generalized Jacobian
J* under zero momentum (Yoshida & Umetani 1993), restricted to the reactionless null space of
the base-arm coupling (Nguyen-Huynh 2013; Dimitrov & Yoshida 2004), turned into joint torques
by computed torque on the unactuated-base dynamics ``tau = H* phiddot + c*``.

Topics (relative names), parameters and services: the node's tables in README.md
(``ffsim_reactionless_controller``); ``status`` (a Float64MultiArray labeled with its field
names) in :data:`~ffsim_ros.node_support.goal_status.STATUS_FIELDS`.

Capture (``capture.*`` parameters, issue 17): with a ``capture.scenario`` the node intercepts
that scenario's target from its odometry inside the reaction null space with the scenario's
grasp point (``robot.gripper``: link and translation, not ``ee_link``), asks the simulator's
grasp service (``capture.grasp_service``, std_srvs/Trigger) once the handle is well inside its
capture envelope, then detumbles the welded system (``capture.detumble_mode``); ``ee_goal``
is then ignored. The logic: :mod:`ffsim_ros.node_support.capture_control`.

Goals: a :class:`~ffsim_ros.control.ReachSupervisor` (``reach.*`` parameters) owns the
``ee_goal``, the held base attitude and the outcome: every accepted goal ends reached or
aborted with a reason (stall without recovery, ``reach.goal_timeout``), published on
``goal_status`` (:mod:`ffsim_ros.node_support.goal_status`).

Action ``~/follow_joint_trajectory`` (control_msgs/action/FollowJointTrajectory): joint
trajectories followed by computed torque on the free-floating dynamics, with JTC's
interpolation, tolerances, result codes, feedback (at the control rate), preemption and
cancel; optionally corrected into the reaction null space (``trajectory.reactionless``). The
law is :mod:`ffsim_ros.control.trajectory`, the wiring
:mod:`ffsim_ros.node_support.trajectory_action`. A trajectory and a well-formed ``ee_goal``
preempt each other (a malformed one changes nothing, see Guards); after a trajectory the arm
holds its last point (or, after a violation or a cancel, the position reached) until the next
goal.

Guards (README.md, "Reliability and security", has the details): an ``ee_goal`` that is
malformed (NaN/inf, a frame other than world_frame), out of reach, inside (or within
``reach.position_tolerance`` of) a ``<collision>`` primitive of the base body at the measured
base pose, or received without fresh ``joint_states`` and ``base_odom`` (at most
``state_timeout`` old on the node's clock) is rejected naming what was expected and what came:
an active goal goes on (the rejection logged), else the rejection is a goal of its own on
``goal_status``, aborted at once (``rejected: ...``), the arm held still. Without fresh state
no command is published (the simulator's command timeout zeroes the efforts); a malformed
``joint_states`` or ``base_odom`` is logged and ignored, the last good state kept. A clock
jumping back, or ahead by more than ``CLOCK_JUMP_AHEAD`` (or ``state_timeout``), or a change
of ``use_sim_time``, drops what was learned under the old clock -- state, goals (aborted or
rejected saying how the clock jumped), held attitude, path, trajectory -- and control resumes,
holding still, on fresh state; so does a jump of the measured state (stamps going back, or a
position farther than ``jump_threshold`` from where the previous message and the velocities
lead, for messages at most ``JUMP_WINDOW`` apart); a reset the simulator announces on
``resets`` (:mod:`~ffsim_ros.node_support.resets`) does the same whatever it moved, the state
messages of before it skipped: the arm is held from the first state after it. On simulated
time a wall-clock watchdog (:meth:`_on_watchdog`) notices a clock stopped for ``CLOCK_STALL``
wall seconds: paused simulator (its publishers still there), the goal goes on and a pending
one is taken; dead simulator, or no publisher on the clock topic (a missing remap,
``publish_clock`` false), the goals are dropped and ``ee_goal`` is rejected at once, saying
which, until the clock advances. On wall time no fresh state for ``CLOCK_STALL`` is the stall
(the goal is dropped when the simulator's publishers are gone).
The attitude held in reactionless mode is captured from the measurement when a goal is
accepted. Log lines that can repeat are throttled per kind (``LogThrottle``).

Threads: the node is spun by rclpy's single-threaded executor (subscriptions, the control
timer, parameters: the control state is touched by one callback at a time). The action and
the ``~/joint_trajectory`` subscription are served by a companion node (``<name>_action``, no
parameters of its own) spun by a multi-threaded executor in a thread of its own
(:class:`~ffsim_ros.node_support.trajectory_action.TrajectoryInterfaces`), whose callbacks
convert and check trajectories and wait for their outcome without holding up the control
loop; trajectories cross over through one locked slot
(:meth:`ReactionlessControllerNode.submit_trajectory`), the measured state is read there
under a lock (:meth:`ReactionlessControllerNode._measured`).

Parameters: :data:`PARAMETERS` (``mode`` and ``trajectory.reactionless`` can be set at run
time, but for a capture: checked in an on-set callback, applied in a post-set callback, so a
rejected set changes nothing; the README and ``config/reactionless_controller.yaml`` are
generated from the table).
"""

from __future__ import annotations

import math
import sys
import threading
import time
from collections import deque
from typing import Any

import numpy as np
from diagnostic_msgs.msg import DiagnosticArray
from geometry_msgs.msg import PoseStamped
from nav_msgs.msg import Odometry, Path
from rclpy.clock import Clock, ClockType
from rclpy.node import Node
from rclpy.time import Time
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray

import ffsim_ros.dynamics as D
from ffsim_ros.control import (
    REJECTED,
    ControlMode,
    GoalOutcome,
    ReachSupervisor,
    ReactionlessController,
)
from ffsim_ros.control.capture import CaptureGains
from ffsim_ros.control.rns import MomentumWatch
from ffsim_ros.control.trajectory import Tolerances, TrackingGains, TrajectoryFollower
from ffsim_ros.dynamics.lie import matrix_to_quat, quat_angle
from ffsim_ros.node_support import (
    LogThrottle,
    ParameterValueError,
    clock_publishers,
    clock_topic,
    destroy_on_failure,
    load_robot,
    run_node,
    stamp_ns,
)
from ffsim_ros.node_support.capture_control import (
    CaptureControl,
    CaptureInterfaces,
    scenario_gripper,
    scenario_target,
)
from ffsim_ros.node_support.controller_parameters import (
    PARAMETERS,
    active_joints_from,
    activity,
    check_robot,
    gains_from,
    held_mimics_note,
    refuse_in_capture,
)
from ffsim_ros.node_support.controller_watch import (
    ClockStall,
    LateUpdates,
    base_collision_shapes,
    clock_jump,
    late_update_warning,
    stale_reason,
    stall_reason,
    state_age,
)
from ffsim_ros.node_support.goal_status import (
    GoalStatusPublisher,
    control_status_message,
    reach_settings_from,
)
from ffsim_ros.node_support.resets import (
    RESETS_QOS,
    RESETS_TOPIC,
    ResetWatch,
    StampGate,
    StateJumps,
    read_reset,
)
from ffsim_ros.node_support.simulator_parameters import PARAMETERS as SIMULATOR_PARAMETERS
from ffsim_ros.node_support.state_messages import (
    goal_accepted_text,
    goal_pose,
    joint_state_values,
    odometry_base_state,
)
from ffsim_ros.node_support.state_pairing import StatePairing
from ffsim_ros.node_support.trajectory_action import (
    ERROR_CODES,
    STATUSES,
    TrajectoryInterfaces,
    TrajectoryRequest,
)

#: ``ee_path``: poses kept (the oldest drop out) and node-clock seconds between two of them.
EE_PATH_LENGTH = 500
EE_PATH_PERIOD = 0.1

#: Seconds between two repeats of a log line that can repeat (bad input, goals).
LOG_PERIOD = 1.0
#: Largest interval [s] between two measurements compared for a jump (``jump_threshold``).
JUMP_WINDOW = 0.1
#: The node's clock jumped ahead when it advanced by more than this [s] (or ``state_timeout``,
#: if longer) between two readings -- the callbacks read it at least once a control period
#: (10 ms), the simulator's ``/clock`` ticks 10 ms apart by default; but ``/clock`` is taken
#: with a queue of one, so a node that lags a simulator running faster than real time sees
#: the clock advance by the lag times the real-time factor (a 0.5 s stall at 20x: 10 s).
#: 30 s is beyond such lags and still catches the jumps that mattered: a clock set forward
#: by minutes ended the goal as a false ``goal_timeout`` (300 s by default).
CLOCK_JUMP_AHEAD = 30.0
#: The node's clock is stalled when it has not advanced for this many wall seconds (or
#: ``state_timeout``, if longer): on simulated time, a paused or dead simulator (its ``/clock``
#: ticks 10 ms of simulated time apart, > 100 times a wall second at a real-time factor >= 1).
CLOCK_STALL = 2.0
#: Wall seconds between two looks at the node's clock (:meth:`_on_watchdog`).
WATCHDOG_PERIOD = 0.5


class ReactionlessControllerNode(Node):
    """The ``ffsim_reactionless_controller`` node (module docstring); ``**kwargs`` go to
    ``rclpy.node.Node`` (e.g. ``parameter_overrides``, ``context``)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__('ffsim_reactionless_controller', **kwargs)
        # a constructor that raises destroys the node first (see destroy_on_failure)
        destroy_on_failure(self, self._build_or_release)

    def _build_or_release(self) -> None:
        """:meth:`_build`; if it raises once the action's thread runs, stop that thread
        first: a thread left spinning at the interpreter's exit aborts it (exit code 134,
        "terminate called without an active exception") instead of the error's exit code."""
        try:
            self._build()
        except BaseException:
            trajectories = getattr(self, 'trajectories', None)
            if trajectories is not None:
                trajectories.destroy()
            raise

    def _build(self) -> None:
        values = PARAMETERS.declare(self, siblings=(SIMULATOR_PARAMETERS,))  # (a shared file)
        # the reactionless laws and the generalized Jacobian are for trees
        model, urdf, _ = load_robot(
            values['robot_description'], values['robot_file'], tree_only=True
        )
        self.model = model
        check_robot(model, values)  # (ee_link, world_frame, no passive joints)
        ee_link = values['ee_link']
        capture_target = gripper = None
        if values['capture.scenario']:  # checked before any ROS entity exists
            try:
                capture_target = scenario_target(
                    values['capture.scenario'], values['capture.target']
                )
                # the capture aims the scenario's grasp point, where the simulator grasps
                gripper = scenario_gripper(values['capture.scenario'], model)
            except (ValueError, OSError, OverflowError) as exc:
                raise ParameterValueError(f'capture.scenario: {exc}') from None
        self.state_timeout_ns = int(values['state_timeout'] * 1e9)
        #: a clock advancing by more than this [ns] between two readings jumped ahead (_now)
        self.clock_jump_ns = max(int(CLOCK_JUMP_AHEAD * 1e9), self.state_timeout_ns)
        self.world = values['world_frame'] or 'world'
        source = 'robot_description' if values['robot_description'] else 'robot_file'
        shapes, meshes = base_collision_shapes(urdf, model, source)  # (goals kept out of them)
        if meshes:
            self.get_logger().warning(
                f'collision meshes of {meshes} left out: goals are kept out of the primitive '
                'collision shapes of the base only'
            )
        reach = reach_settings_from(values)
        self.law = ReactionlessController(
            model,
            ee_link,
            mode=values['mode'],
            gains=gains_from(values),
            track_orientation=values['track_orientation'],
            collision_shapes=shapes,
            collision_margin=reach.position_tolerance,
            active_joints=active_joints_from(values, model),
        )
        if note := held_mimics_note(values, model):
            self.get_logger().info(note)
        # the ee_goal, its outcome and the attitude held: the supervisor's (issue 15)
        self.supervisor = ReachSupervisor(self.law, reach)
        self._momentum_watch = MomentumWatch()  # (momentum the base cannot be held against)
        # (positions or q_base, velocities or v_base, received at): paired by stamp; changed
        # by the control thread under the lock, read under it by the others (_measured)
        self._state: StatePairing[tuple[np.ndarray, np.ndarray, Time]] = StatePairing()
        self._state_lock = threading.Lock()
        self._pending_goal: PoseStamped | None = None
        self._last_now: tuple[int, bool] | None = None  # latest node-clock ns, use_sim_time
        self._log_throttle = LogThrottle(LOG_PERIOD)  # one line a second per kind of message
        # resets: announced by the simulator (resets), else inferred from jumps of the state
        self._jumps = StateJumps(values['jump_threshold'], JUMP_WINDOW)
        self._resets = ResetWatch(StampGate(self, self.clock_jump_ns, self._log_warning))
        # trajectories: handed over by the action's threads through one locked slot
        self.tracking_gains = TrackingGains(values['trajectory.kp'], values['trajectory.kv'])
        self._tolerances = Tolerances.uniform(
            model.n,
            values['trajectory.path_tolerance'],
            values['trajectory.goal_tolerance'],
            values['trajectory.stopped_velocity_tolerance'],
            values['trajectory.goal_time'],
        )
        self._reactionless_trajectories = values['trajectory.reactionless']
        self._slot_lock = threading.Lock()
        self._incoming: TrajectoryRequest | None = None
        self._request: TrajectoryRequest | None = None  # the trajectory followed now
        self._follower: TrajectoryFollower | None = None  # following it, or holding after it
        self._base_at_start: np.ndarray | None = None
        self._base_turned = 0.0
        self.control_period = 1.0 / values['control_rate_hz']
        self._late = LateUpdates(self.control_period)

        self.pub_cmd = self.create_publisher(Float64MultiArray, 'joint_effort_commands', 10)
        self.pub_pose = self.create_publisher(PoseStamped, 'ee_pose', 10)
        self.pub_path = self.create_publisher(Path, 'ee_path', 10)
        self._path_poses: deque[PoseStamped] = deque(maxlen=EE_PATH_LENGTH)
        self._path_last_ns: int | None = None
        self.goal_status = GoalStatusPublisher(self, model.name)
        self.pub_status = self.create_publisher(Float64MultiArray, 'status', 10)
        # before the state's: the executor takes the ready subscriptions in creation order, an
        # announced reset before the state published after it (node_support.resets)
        self.create_subscription(DiagnosticArray, RESETS_TOPIC, self._on_reset, RESETS_QOS)
        # state feedback: only the newest message (depth 1), so that a controller running
        # behind (a loaded machine) never closes its loop on a backlog of older states
        self._state_subs = (  # (their resolved, remapped names: the watchdog counts on them)
            self.create_subscription(JointState, 'joint_states', self._on_joints, 1),
            self.create_subscription(Odometry, 'base_odom', self._on_odom, 1),
        )
        self.create_subscription(PoseStamped, 'ee_goal', self._on_goal, 10)
        self.trajectories = TrajectoryInterfaces(
            self,
            model,
            self._measured,
            lambda: self.get_clock().now().nanoseconds * 1e-9,
            lambda: (self._tolerances, self._reactionless_trajectories, self.control_period),
            self.submit_trajectory,
        )
        self.capture: CaptureInterfaces | None = None
        if capture_target is not None:
            self.capture = CaptureInterfaces(
                self,
                CaptureControl(
                    model,
                    gripper.link,
                    capture_target[0],
                    values['capture.detumble_mode'],
                    CaptureGains(
                        store_time=values['capture.store_time'],
                        base_acceleration=math.radians(values['capture.base_acceleration_deg']),
                    ),
                    timeout=values['capture.timeout'],
                    gripper_offset=gripper.translation,
                    gripper_rotation=gripper.rotation,
                ),
                values['capture.grasp_service'],
                self._measured,
                self._log_throttle,
            )
        PARAMETERS.watch(self, self._on_parameters, refuse_in_capture)
        rate = values['control_rate_hz']
        self.create_timer(1.0 / rate, self._on_timer)
        # the node's clock seen stalled: on wall time, whatever the node's clock (_on_watchdog)
        self._clock_stall = ClockStall()
        self._stalled: str | None = None  # why goals are rejected at once while it lasts
        self.clock_stall = max(CLOCK_STALL, values['state_timeout'])
        self.create_timer(
            WATCHDOG_PERIOD, self._on_watchdog, clock=Clock(clock_type=ClockType.STEADY_TIME)
        )
        self.get_logger().info(
            f'{model.name}: {activity(values, gripper)} at {rate:g} Hz'
            f' (use_sim_time={self.get_parameter("use_sim_time").value})'
        )

    def destroy_node(self) -> None:
        """Release the goals waiting for an outcome, then destroy the node."""
        self._drop_trajectories('the controller is shutting down')
        self.trajectories.destroy()
        super().destroy_node()

    def _on_parameters(self, changed: dict) -> None:
        """Post-set: apply the new values (``mode`` and ``trajectory.reactionless``)."""
        if 'trajectory.reactionless' in changed:
            self._reactionless_trajectories = changed['trajectory.reactionless']
        if 'mode' in changed:
            self.supervisor.set_mode(ControlMode(changed['mode']))
        # every change (not throttled: the last line must say the value in force)
        self.get_logger().info(
            'parameters: ' + ', '.join(f'{name} -> {value}' for name, value in changed.items())
        )

    def _log_error(self, text: str) -> None:
        """Log ``text`` as an error, throttled per kind of message (:class:`LogThrottle`: a
        kind of bad input does not hide another, as rclpy's per-call-site throttle did)."""
        line = self._log_throttle.admit(text)
        if line:
            self.get_logger().error(line)

    def _log_warning(self, text: str) -> None:
        """Log ``text`` as a warning, throttled per kind of message (as :meth:`_log_error`)."""
        line = self._log_throttle.admit(text)
        if line:
            self.get_logger().warning(line)

    # ---------------------------------------------------------------------------- time
    def _now(self) -> Time:
        """The node clock's time; a jump back (a new simulator restarting ``/clock``), ahead
        by more than :attr:`clock_jump_ns` since the last reading, or a change of
        ``use_sim_time`` drops everything learned under the old clock first (see the module
        docstring; :func:`clock_jump`). A clock still at 0 (no ``/clock`` message yet) starts
        without a jump."""
        clock = self.get_clock()
        now, sim_time = clock.now(), clock.ros_time_is_active
        now_ns, last = now.nanoseconds, self._last_now
        jump = clock_jump(
            last, now_ns, sim_time, self.clock_jump_ns, lambda: clock_publishers(self)
        )
        if jump is not None:
            self._forget(*jump)
        if sim_time and (last is None or now_ns != last[0]):
            self._stalled = None  # (the clock advances again: a resumed or new simulation)
            if self.capture is not None:
                self.capture.set_stalled(None)
        self._last_now = (now_ns, sim_time)
        return now

    def _forget(self, what: str, cause: str, hint: str) -> None:
        """Drop the state, goals, trajectory, held attitude and path after the clock jumped
        (``what``: how; ``cause``: the likely cause, for the goal's reason; ``hint``: for the
        log)."""
        with self._state_lock:
            self._state.clear()
        self._jumps.clear()
        self._resets.restart()
        self._late.clear()
        self._drop_goals(what, cause)
        self._log_warning(
            f'{what} ({hint}): measured state, goal and path dropped; holding still once '
            'fresh state arrives'
        )

    def _drop_goals(self, reason: str, cause: str = 'a reset of the simulation?') -> None:
        """Drop the goals (pending and active), the trajectory (aborted, saying ``reason`` and
        the likely ``cause``), the held attitude and the path: the arm is then held still. A
        pending goal (received, not taken yet) gets its own status after the active one's:
        rejected, saying why."""
        pending, self._pending_goal = self._pending_goal, None
        # goal (ended as aborted, saying why), its clock and the held attitude: arm held still
        self.supervisor.reset(f'dropped: {reason} ({cause})')
        if self.capture is None:  # (else goal_status is the capture's: not overwritten)
            self.goal_status.update(self.supervisor.status)
        if pending is not None:
            q, position = self._status_state(pending)
            t = self.get_clock().now().nanoseconds * 1e-9
            text = f'{reason} ({cause}) before the goal was taken'
            self._log_error(f'ee_goal rejected ({text})')
            self.supervisor.reject(t, q, text, position)
            self.goal_status.update(self.supervisor.status)
        self._path_poses.clear()
        self._path_last_ns = None
        self._drop_trajectories(f'aborted: {reason} ({cause})')

    def _drop_trajectories(self, message: str) -> None:
        with self._slot_lock:
            incoming, self._incoming = self._incoming, None
        for request in (incoming, self._request):
            if request is not None:
                request.abort(message)
        self._request = self._follower = None

    def _on_jump(self, what: str, stamp: int) -> None:
        """The measured state jumped (``what``: how, :class:`StateJumps`) at the message
        stamped ``stamp`` [ns]: drop goals and trajectory (the arm is held still); a reset
        announced for it later is no news (:class:`ResetWatch`)."""
        self._resets.restart(stamp)
        self._drop_goals(what)
        if self.capture is not None:
            self.capture.restart()
        self._log_warning(f'{what}: goals, trajectory and path dropped; holding still')

    def _on_reset(self, msg: DiagnosticArray) -> None:
        """A reset announced by the simulator (``resets``): news (:class:`ResetWatch`), the
        goals and the trajectory are dropped saying so, and the state measured before it
        forgotten: the arm is held from the first state after it."""
        self._now()
        try:
            reset = read_reset(msg)
        except ValueError as exc:
            self._log_error(f'resets: {exc}; ignored')
            return
        if not self._resets.announced(reset):
            return
        with self._state_lock:
            self._state.clear()
        self._jumps.clear()
        stamp = f'{reset.stamp_ns * 1e-9:.3f} s'
        self._drop_goals('the simulation was reset', f'{reset.what}; first state at {stamp}')
        if self.capture is not None:  # (the reset released a grasp: capture again)
            self.capture.restart()
        self._log_warning(
            f'the simulation was reset ({reset.what}): goals, trajectory and path dropped; '
            f'holding still from the state stamped {stamp}'
        )

    def submit_trajectory(self, request: TrajectoryRequest) -> None:
        """Hand a trajectory to the control loop (any thread): it starts at the next update,
        preempting the one followed (and one handed over but not started yet). With a
        capture the capture owns the arm: the trajectory is aborted at once (it waited for
        ever: the control loop never takes trajectories then). ``request``: a
        :class:`TrajectoryRequest`."""
        if self.capture is not None:
            request.abort(
                'capture.scenario is set: the capture owns the arm, trajectories are not followed'
            )
            return
        with self._slot_lock:
            earlier, self._incoming = self._incoming, request
        if earlier is not None:
            earlier.abort('preempted by a newer trajectory')

    def _measured(self) -> tuple[np.ndarray, np.ndarray] | str:
        """``(q, v)`` of the latest fresh measurement, or why there is none (any thread)."""
        with self._state_lock:  # (the control thread adds messages meanwhile)
            joints, base = self._state.latest()
        stale = self._stale_reason(joints, base, self.get_clock().now().nanoseconds)
        if stale is not None:
            return stale
        stalled = self._stalled  # (fresh on a clock that stopped with the simulator)
        if stalled is not None:
            return stalled
        return np.r_[base[0], joints[0]], np.r_[base[1], joints[1]]

    def _stale_reason(self, joints: tuple | None, base: tuple | None, now_ns: int) -> str | None:
        """:func:`stale_reason` of the state items ``joints``, ``base`` at ``now_ns`` [ns],
        naming the subscriptions' resolved topics and those without a publisher."""
        topics = [s.topic_name for s in self._state_subs]
        return stale_reason(
            joints, base, now_ns, self.state_timeout_ns, topics, self.count_publishers
        )

    # ------------------------------------------------------------------------- callbacks
    def _on_joints(self, msg: JointState) -> None:
        now = self._now()
        try:
            pos, vel = joint_state_values(
                self.model.joint_names, msg.name, msg.position, msg.velocity
            )
        except ValueError as exc:  # (the last good state is kept, as for base_odom)
            self._log_error(f'joint_states: {exc}; ignored, the last good state kept')
            return
        stamp = stamp_ns(msg.header.stamp)
        if not self._resets.admit('joint_states', stamp):  # (of before the reset announced)
            return
        jump = self._jumps.joints(stamp * 1e-9, pos, vel)
        if jump is not None:
            self._on_jump(jump, stamp)
            with self._state_lock:  # (until the base's message of after the jump)
                self._state.clear_base()
        with self._state_lock:
            self._state.add_joints(stamp, (pos, vel, now))

    def _on_odom(self, msg: Odometry) -> None:
        now = self._now()
        frame = msg.header.frame_id
        if frame and frame != self.world:  # (empty: taken as world_frame)
            self._log_error(
                f'base_odom: expected header.frame_id {self.world!r} (world_frame), got '
                f'{frame[:100]!r}; ignored, the last good state kept'
            )
            return
        try:
            qb, vb = odometry_base_state(self.model, msg)
        except ValueError as exc:
            self._log_error(f'base_odom: {exc}; ignored, the last good state kept')
            return
        stamp = stamp_ns(msg.header.stamp)
        if not self._resets.admit('base_odom', stamp):  # (of before the reset announced)
            return
        jump = self._jumps.base(stamp * 1e-9, qb, vb)
        if jump is not None:
            self._on_jump(jump, stamp)
            with self._state_lock:  # (until the joints' message of after the jump)
                self._state.clear_joints()
        with self._state_lock:
            self._state.add_base(stamp, (qb, vb, now))

    def _on_watchdog(self) -> None:
        """Every ``WATCHDOG_PERIOD`` wall seconds: a node clock stopped for ``clock_stall`` wall
        seconds (its control timer then never fires) with the publishers of the state and of
        the clock topic still there is a paused simulation (a pending goal is taken on the last
        state); with one gone (:func:`stall_reason`), a dead simulator or no clock on
        ``use_sim_time``: goals dropped saying why, ee_goal rejected until the clock
        advances; in capture mode, the capture's status says why it cannot proceed
        (:meth:`~.capture_control.CaptureInterfaces.set_stalled`). On wall time the clock
        never stops: no fresh state for ``clock_stall`` is the stall (the goal was left active
        for ever when the simulator died), the state's publishers telling a pause from a dead
        simulator the same way; not in capture mode."""
        clock = self.get_clock()
        now_ns = clock.now().nanoseconds
        sim_time = clock.ros_time_is_active
        if sim_time:
            stalled_for = self._clock_stall.observe(now_ns, time.monotonic())
        else:
            with self._state_lock:
                joints, base = self._state.latest()
            stalled_for = state_age((joints, base), now_ns)
            if self.capture is not None or stalled_for < self.clock_stall:
                self._stalled = None  # (fresh state again)
                return
        if stalled_for < self.clock_stall:
            return
        # (count_publishers does not remap a name: the subscriptions' names are remapped)
        topics = [s.topic_name for s in self._state_subs]
        what = 'the simulation clock has not advanced' if sim_time else 'no fresh state came'
        why = stall_reason(stalled_for, topics, clock_topic(self), self.count_publishers, what)
        if self.capture is not None:  # (said on its goal_status; it waits for the clock)
            self._stalled = None if why is None else why[0]
            self.capture.set_stalled(why)
            return
        if why is None:  # paused: the goal in progress goes on at the resume
            # (a reason seen before is gone with the clock still: a simulator that came up
            # paused after the watchdog found none; its goals must not be rejected for it)
            self._stalled = None
            if self._pending_goal is not None:
                goal, self._pending_goal = self._pending_goal, None
                measured = self._measured()
                t = now_ns * 1e-9
                if isinstance(measured, str):
                    self._reject_without_state(goal, t, measured)
                else:
                    self._accept_goal(goal, t, measured[0])
                    self.goal_status.update(self.supervisor.status)
            return
        first = self._stalled is None
        self._stalled, cause = why
        busy = (
            self._pending_goal is not None
            or self.supervisor.status.outcome is GoalOutcome.ACTIVE
            or self._request is not None
        )
        if busy:
            self._drop_goals(self._stalled, cause)
        if first or busy:
            until = 'the clock advances' if sim_time else 'fresh state comes'
            self._log_warning(f'{self._stalled}: goals dropped, ee_goal rejected until {until}')

    def _on_goal(self, msg: PoseStamped) -> None:
        """Check the goal and keep it for the next update (module docstring): a goal that
        cannot be taken as it came (NaN/inf, another frame than world_frame, a non-finite
        orientation, out of reach of the measured state) is refused without touching the goal
        or the trajectory in progress (:meth:`_refuse_goal`); a goal received without fresh
        state is rejected at once, never carried out on a state that arrives later."""
        if self.capture is not None:  # (ignored: the capture owns the arm)
            return
        now = self._now()  # (a clock that went back drops the state first)
        t = now.nanoseconds * 1e-9
        measured = self._measured()
        try:
            position, _ = goal_pose(msg, self.world, self.law.track_orientation)
            if not isinstance(measured, str):
                self.law.check_goal(measured[0], position)
        except ValueError as exc:
            self._refuse_goal(msg, t, str(exc))
            return
        if isinstance(measured, str):
            self._pending_goal = None
            self._reject_without_state(msg, t, measured)
            return
        self._pending_goal = msg

    def _status_state(
        self, msg: PoseStamped, q: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray | None]:
        """``(q, goal position)`` for the status of a goal rejected now: ``q`` if given, else
        the latest measurement (stale or not), else the neutral configuration and no position
        (no goal can be active then: a jump or a clock reset dropped it); no position either
        for a goal in another frame."""
        position = None
        if msg.header.frame_id == self.world:
            p = msg.pose.position
            position = np.array([p.x, p.y, p.z])
        if q is not None:
            return q, position
        with self._state_lock:
            joints, base = self._state.latest()
        if joints is None or base is None:
            return D.neutral(self.model), None
        return np.r_[base[0], joints[0]], position

    def _refuse_goal(
        self, msg: PoseStamped, t: float, reason: str, q: np.ndarray | None = None
    ) -> None:
        """Refuse the ee_goal ``msg`` at time ``t`` [s] for ``reason`` (the message's fault,
        or out of reach) without touching what is in progress. While a goal is active it goes
        on and the rejection is logged only: ``goal_status`` keeps the active goal's status
        (latched: what a client connecting later must see). Otherwise the rejection is a goal
        of its own on ``goal_status``, aborted at once (``rejected: <reason>``), and the arm
        is held still -- unless a joint trajectory is followed (or held after it): it goes on.
        ``q``: the configuration measured now (default: :meth:`_status_state`'s)."""
        if self.supervisor.status.outcome is GoalOutcome.ACTIVE:
            self._log_error(f'ee_goal rejected ({reason}); ignored: the active goal goes on')
            return
        following = self._follower is not None
        then = 'the joint trajectory goes on' if following else 'holding the arm still'
        self._log_error(f'ee_goal rejected ({reason}); {then}')
        q, position = self._status_state(msg, q)
        self.supervisor.reject(t, q, reason, position)
        self.goal_status.update(self.supervisor.status)

    def _reject_without_state(self, msg: PoseStamped, t: float, why: str) -> None:
        """Reject the ee_goal ``msg`` at time ``t`` [s] for want of fresh state (``why``: the
        text of :meth:`_measured`), on ``goal_status`` at once (no update publishes it
        without state); as any well-formed ee_goal, it preempts the trajectory followed and
        replaces the goal (an active one ends as aborted, "replaced by a rejected goal")."""
        if self._request is not None:
            self._request.abort('preempted by an ee_goal')
        self._request = self._follower = None
        q, position = self._status_state(msg)
        reason = f'{why}: no state to start the goal from'
        self._log_error(f'ee_goal rejected ({reason}); not commanding until fresh state arrives')
        self.supervisor.reject(t, q, reason, position)
        self.goal_status.update(self.supervisor.status)

    def _accept_goal(self, msg: PoseStamped, t: float, q: np.ndarray) -> None:
        """Take the goal kept by :meth:`_on_goal` at time ``t`` [s], the arm at ``q``: it
        replaces the goal and preempts the trajectory; refused now (out of reach of the state
        measured since, or the mode changed) it changes neither (:meth:`_refuse_goal`)."""
        try:
            position, rotation = goal_pose(msg, self.world, self.law.track_orientation)
            self.supervisor.set_goal(t, q, position, rotation)
        except ValueError as exc:
            self._refuse_goal(msg, t, str(exc), q)
            return
        if self._request is not None:
            self._request.abort('preempted by an ee_goal')
        self._request = self._follower = None
        line = self._log_throttle.admit(
            goal_accepted_text(position, rotation, self.world, self.law.track_orientation)
        )
        if line:
            self.get_logger().info(line)

    # ------------------------------------------------------------------------------ loop
    def _check_period(self, now_ns: int) -> bool:
        """Whether this update is late on the node's clock (:class:`LateUpdates`), warned
        (throttled) when it keeps happening: on simulated time, the simulation runs faster
        than this controller keeps up; on wall time, the process was not scheduled (machine
        load); either way the law (tuned for its period) degrades (:func:`late_update_warning`)."""
        late, gap = self._late.observe(now_ns)
        if gap is not None:
            sim_time = self.get_clock().ros_time_is_active
            text = late_update_warning(gap, self.control_period, sim_time)
            self.get_logger().warning(text, throttle_duration_sec=LOG_PERIOD)
        return late

    def _fresh(self, item: tuple[np.ndarray, np.ndarray, Time] | None, now: Time) -> bool:
        """Received at most ``state_timeout`` before ``now``, and not after it."""
        if item is None:
            return False
        age = (now - item[2]).nanoseconds
        return 0 <= age <= self.state_timeout_ns

    def _on_timer(self) -> None:
        now = self._now()
        self._check_period(now.nanoseconds)
        joints, base, state_ns = self._state.latest_stamped()  # one instant where possible
        if not (self._fresh(joints, now) and self._fresh(base, now)):
            why = self._stale_reason(joints, base, now.nanoseconds) or 'no fresh state'
            self.get_logger().warning(f'{why}: not commanding', throttle_duration_sec=2.0)
            # (a pending goal came with fresh state: it waits for the next fresh update; the
            # timer runs before the subscriptions, so after a jump of a lagging clock the
            # state looks stale here until its newest message is taken)
            return
        pos, vel, _ = joints
        qb, vb, _ = base
        q = np.r_[qb, pos]
        v = np.r_[vb, vel]
        t = now.nanoseconds * 1e-9
        if self.capture is not None:
            try:
                self.capture.step(t, q, v)
            except (ValueError, ArithmeticError, np.linalg.LinAlgError) as exc:
                self.get_logger().error(
                    f'capture law failed on the measured state ({exc}): not commanding',
                    throttle_duration_sec=LOG_PERIOD,
                )
                return
            p, R = D.link_pose(self.model, q, self.law.ee_link)  # (ee_pose, ee_path as below)
            self._publish_pose(now, state_ns, p, matrix_to_quat(R))
            return
        if self._pending_goal is not None:
            goal, self._pending_goal = self._pending_goal, None
            self._accept_goal(goal, t, q)
        self._start_trajectory(t, q)
        try:
            if self._follower is None:
                out, goal_status = self.supervisor.update(t, q, v)
            else:  # (the figures of the arm; the trajectory's efforts below)
                out, goal_status = self.law.compute(q, v, None), self.supervisor.status
        except (ValueError, ArithmeticError, np.linalg.LinAlgError) as exc:
            self.get_logger().error(
                f'control law failed on the measured state ({exc}): not commanding',
                throttle_duration_sec=LOG_PERIOD,
            )
            return
        notice = self._momentum_watch.update(out.locked_rate, self.law.mode)
        if notice:
            self.get_logger().warning(notice)
        tau = out.tau if self._follower is None else self._follow(now, q, v)
        if not np.all(np.isfinite(tau)):
            self.get_logger().error(
                'non-finite torque computed: not commanding', throttle_duration_sec=LOG_PERIOD
            )
            return
        self.pub_cmd.publish(Float64MultiArray(data=tau.tolist()))
        self._publish_pose(now, state_ns, out.ee_position, out.ee_quaternion)
        self.pub_status.publish(control_status_message(out, goal_status.active))
        published = self.goal_status.update(goal_status)
        if (
            published
            and goal_status.outcome.value in ('reached', 'aborted')
            and not goal_status.reason.startswith(REJECTED)  # (logged when rejected)
        ):
            line = self._log_throttle.admit(
                f'ee_goal {goal_status.outcome.value}: {goal_status.reason}'
            )
            if line:
                self.get_logger().info(line)

    def _publish_pose(
        self, now: Time, state_ns: int | None, position: np.ndarray, quaternion: np.ndarray
    ) -> None:
        """``ee_pose`` (and ``ee_path``): the end effector at ``position`` (3,) [m] and
        ``quaternion`` (4,) (x, y, z, w) in the world frame, stamped with the state it is
        computed from (``state_ns``), not the update's (``now``: without one, or a negative
        one from some other publisher)."""
        pose = PoseStamped()
        stamp = now if state_ns is None or state_ns < 0 else Time(nanoseconds=state_ns)
        pose.header.stamp = stamp.to_msg()
        pose.header.frame_id = self.world
        p, o = pose.pose.position, pose.pose.orientation
        p.x, p.y, p.z = (float(x) for x in position)
        o.x, o.y, o.z, o.w = (float(x) for x in quaternion)
        self.pub_pose.publish(pose)
        self._append_path(pose)

    def _start_trajectory(self, t: float, q: np.ndarray) -> None:
        """Start the trajectory handed over since the last update, if any."""
        with self._slot_lock:
            request, self._incoming = self._incoming, None
        if request is None:
            return
        if self._request is not None:
            self._request.abort('preempted by a newer trajectory')
        self.supervisor.stop(t, q, 'preempted by a joint trajectory')
        self._request = request
        self._follower = TrajectoryFollower(
            self.model, request.trajectory, request.tolerances, self.tracking_gains
        )
        self._base_at_start, self._base_turned = q[3:7].copy(), 0.0

    def _follow(self, now: Time, q: np.ndarray, v: np.ndarray) -> np.ndarray:
        """The efforts of the trajectory followed (or held); its feedback and outcome."""
        t = now.nanoseconds * 1e-9
        request, follower = self._request, self._follower
        if request is not None and request.outcome is not None:
            # ended by the action while this loop did not run (a cancel, or stale state):
            # hold the position measured now
            follower.hold(q[7:])
            request = self._request = None
        if request is not None and request.cancel_requested:
            follower.hold(q[7:])
            elapsed = t - follower.trajectory.start_time
            request.finish(
                'canceled',
                ERROR_CODES['succeeded'],
                f'canceled {elapsed:.3f} s into the trajectory: holding the position reached',
            )
            request = self._request = None
        update = follower.update(t, q, v)
        if request is not None:
            turned = quat_angle(self._base_at_start, q[3:7])
            self._base_turned = max(self._base_turned, turned)
            request.publish_feedback(update, now.to_msg(), self.model.joint_names)
            if update.outcome is not None:
                text = (
                    f'{update.message}; the base turned by up to '
                    f'{math.degrees(self._base_turned):.4f} deg'
                )
                request.finish(STATUSES[update.outcome], ERROR_CODES[update.outcome], text)
                line = self._log_throttle.admit(f'trajectory {update.outcome}: {text}')
                if line:
                    self.get_logger().info(line)
                self._request = None
        return update.tau

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
    """Console script ``reactionless_controller``.

    Parameters
    ----------
    args : list of str, optional
        Command-line arguments (default ``sys.argv``).
    """
    return run_node(ReactionlessControllerNode, 'ffsim_reactionless_controller', args)


if __name__ == '__main__':
    sys.exit(main())
