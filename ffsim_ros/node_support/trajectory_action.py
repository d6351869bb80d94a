"""``FollowJointTrajectory`` and ``joint_trajectory`` for the controller node (ROS wiring).

The joint-space interface of ros2_controllers' ``joint_trajectory_controller``, which MoveIt
and every trajectory tool speak, served by ``ffsim_reactionless_controller`` under its name:
the action ``~/follow_joint_trajectory`` (control_msgs/action/FollowJointTrajectory) and the
topic ``~/joint_trajectory`` (trajectory_msgs/JointTrajectory). The law, the checks and the
outcome rules are :mod:`ffsim_ros.control.trajectory`'s; here are the messages and the
threads:

* the action server lives on a companion node, ``<node name>_action`` (no parameters, no
  command-line remaps of its own; the action is named as the controller node resolves
  ``~/follow_joint_trajectory``, its node-name, namespace and action remaps included),
  spun by a multi-threaded executor in a thread of its own, so that goals wait without
  holding up the controller's single-threaded executor (rclpy's multi-threaded one costs the
  control loop throughput);
* the topic's subscription lives on that node too (under the name the controller node
  resolves, remaps included): a message is converted and checked in the action's thread,
  not in the control loop's;
* a goal is accepted and checked in its execute callback (a thread of that executor): a
  bad one ends at once, aborted with the standard error code (INVALID_JOINTS,
  INVALID_GOAL, OLD_HEADER_TIMESTAMP) and an ``error_string`` naming the culprit -- where
  JTC refuses the goal without a word, which no client can read; more than
  :data:`~ffsim_ros.control.trajectory.MAX_POINTS` points are refused before any per-point
  work;
* a good one starts when it arrived (or at ``header.stamp``) from the state measured then
  (taken before the checks, so that their time cannot make it stale), is corrected into the
  reaction null space when ``trajectory.reactionless`` is set, and is handed to the control
  loop (:class:`TrajectoryRequest`), which follows it at the control rate, publishes
  the feedback each update and sets the outcome; the execute callback waits for it;
* a new goal, a ``joint_trajectory`` message or a well-formed ``ee_goal`` (a malformed one
  changes nothing) preempts the running goal
  (aborted, INVALID_GOAL, "preempted ...", as JTC does), in the order they were received:
  a goal whose checks end after those of a goal received later is aborted as preempted,
  never run after it; with ``trajectory.reactionless`` a correction that ends a joint beyond
  its goal position tolerance of the last point sent is refused (INVALID_GOAL, naming the
  joint), since the goal could not succeed as JTC judges it; a cancel holds the position reached
  (canceled); a reset of the simulation, a jump of the measured state or of the clock aborts
  it (INVALID_GOAL, saying which). The control loop runs only on fresh state: a cancel it has
  not taken within :data:`CANCEL_GRACE` of stale state, or :data:`CLOCK_STOOD` of a node clock
  standing still (a paused simulation), is completed by the action (otherwise the loop takes
  it at its next update, however long a control period lasts: at a real-time factor of 0.01,
  1 s), and a goal whose state stays stale for :data:`STALE_ABORT`
  is aborted saying so (both waited forever before); the loop holds the position it measures
  next.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
import rclpy
from control_msgs.action import FollowJointTrajectory
from rclpy.action import ActionServer, CancelResponse, GoalResponse
from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.executors import ExternalShutdownException, MultiThreadedExecutor, ShutdownException
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy
from rclpy.time_source import TimeSource
from trajectory_msgs.msg import JointTrajectory as JointTrajectoryMsg
from trajectory_msgs.msg import JointTrajectoryPoint

import ffsim_ros.dynamics as D
from ffsim_ros.control.trajectory import (
    MAX_POINTS,
    Correction,
    JointTrajectory,
    Tolerances,
    TrajectoryError,
    Update,
    check_waypoints,
    correction_beyond_goal,
    reactionless_correction,
)

from .common import LogThrottle

if TYPE_CHECKING:
    from builtin_interfaces.msg import Duration, Time
    from control_msgs.msg import JointTolerance
    from rclpy.action.server import ServerGoalHandle

_Result = FollowJointTrajectory.Result
#: FollowJointTrajectory error code of each refusal kind and outcome.
ERROR_CODES = {
    'joints': _Result.INVALID_JOINTS,
    'goal': _Result.INVALID_GOAL,
    'old': _Result.OLD_HEADER_TIMESTAMP,
    'succeeded': _Result.SUCCESSFUL,
    'path_tolerance_violated': _Result.PATH_TOLERANCE_VIOLATED,
    'goal_tolerance_violated': _Result.GOAL_TOLERANCE_VIOLATED,
}
#: Threads of the action's executor (execute callbacks waiting, goal, cancel and result
#: requests served meanwhile).
ACTION_THREADS = 4
#: The goal status each outcome ends in.
STATUSES = {
    'succeeded': 'succeeded',
    'path_tolerance_violated': 'aborted',
    'goal_tolerance_violated': 'aborted',
}


def _seconds(duration: Duration | Time) -> float:
    """Seconds of a ``builtin_interfaces/Duration`` (or Time)."""
    return duration.sec + duration.nanosec * 1e-9


#: QoS of the action's goal, result and cancel services: ROS's service defaults with a deeper
#: request queue.
REQUEST_QOS = QoSProfile(
    history=HistoryPolicy.KEEP_LAST,
    depth=100,
    reliability=ReliabilityPolicy.RELIABLE,
    durability=DurabilityPolicy.VOLATILE,
)
#: Wall seconds between two looks of a waiting execute callback at its goal.
WAIT_PERIOD = 0.1
#: Wall seconds a cancel may wait for the control loop, the state stale, before the action
#: ends it.
CANCEL_GRACE = 0.5
#: Wall seconds a cancel may wait for the control loop, the node's clock standing (a paused
#: simulation: no control update comes; the controller's ``CLOCK_STALL``), before the
#: action ends it.
CLOCK_STOOD = 2.0
#: Wall seconds of stale measured state after which the action aborts its goal.
STALE_ABORT = 1.0


@dataclass
class TrajectoryRequest:
    """A trajectory handed from the action (or the topic) to the control loop.

    Attributes
    ----------
    trajectory : JointTrajectory
        From the state measured at acceptance (corrected when asked).
    tolerances : Tolerances
    goal_handle : ServerGoalHandle or None
        None for a ``joint_trajectory`` message (nobody waits for it).
    correction : Correction or None
        The reactionless correction applied.
    outcome : (status, error code, message) or None
        Set once by :meth:`finish` (status: succeeded, aborted or canceled).
    """

    trajectory: JointTrajectory
    tolerances: Tolerances
    goal_handle: object | None = None
    correction: Correction | None = None
    outcome: tuple[str, int, str] | None = None
    done: threading.Event = field(default_factory=threading.Event)

    @property
    def cancel_requested(self) -> bool:
        """Whether the client asked to cancel."""
        return self.goal_handle is not None and self.goal_handle.is_cancel_requested

    def finish(self, status: str, code: int, message: str) -> None:
        """Set the outcome (the first one wins) and release the waiting execute callback.

        Parameters
        ----------
        status : str
            ``'succeeded'`` or ``'aborted'``.
        code : int
            ``FollowJointTrajectory.Result`` error code.
        message : str
        """
        if self.outcome is None:
            if self.correction is not None:
                message = f'{message}; {self.correction.summary()}'
            self.outcome = (status, int(code), message)
        self.done.set()

    def abort(self, message: str) -> None:
        """Aborted with INVALID_GOAL (preemption, reset, shutdown).

        Parameters
        ----------
        message : str
        """
        self.finish('aborted', _Result.INVALID_GOAL, message)

    def publish_feedback(self, update: Update, stamp: Time, joint_names: Sequence[str]) -> None:
        """FollowJointTrajectory feedback of one control update (action goals only).

        Parameters
        ----------
        update : Update
            The follower's update (desired, actual and error: positions [rad | m], velocities
            [rad/s | m/s], accelerations [rad/s^2 | m/s^2]).
        stamp : Time
        joint_names : sequence of str
        """
        if self.goal_handle is None:
            return
        feedback = FollowJointTrajectory.Feedback(joint_names=list(joint_names))
        feedback.header.stamp = stamp
        p, v, a = update.desired
        feedback.desired = JointTrajectoryPoint(
            positions=p.tolist(), velocities=v.tolist(), accelerations=a.tolist()
        )
        feedback.actual = JointTrajectoryPoint(
            positions=update.actual[0].tolist(), velocities=update.actual[1].tolist()
        )
        feedback.error = JointTrajectoryPoint(
            positions=update.error[0].tolist(), velocities=update.error[1].tolist()
        )
        feedback.index = int(update.index)
        self.goal_handle.publish_feedback(feedback)


class TrajectoryInterfaces:
    """The action server and the topic (module docstring).

    Parameters
    ----------
    node : Node
        The controller node.
    model : Model
    measured : callable
        ``measured() -> (q, v) or str``: the latest fresh measured state, or why there is
        none (any thread).
    now : callable
        ``now() -> float``: the node clock's time [s].
    settings : callable
        ``settings() -> (Tolerances, reactionless: bool, correction step [s])``: the defaults
        of the parameters now.
    submit : callable
        ``submit(request)``: hand a :class:`TrajectoryRequest` to the control loop (any
        thread; it preempts the running one).
    """

    def __init__(
        self,
        node: Node,
        model: D.Model,
        measured: Callable[[], tuple[np.ndarray, np.ndarray] | str],
        now: Callable[[], float],
        settings: Callable[[], tuple[Tolerances, bool, float]],
        submit: Callable[[TrajectoryRequest], None],
    ) -> None:
        self.node, self.model = node, model
        self._measured, self._now, self._settings, self._submit = measured, now, settings, submit
        self._throttle = LogThrottle(1.0)
        self._log_lock = threading.Lock()
        # arrival order: goals and messages are numbered when received, and one is handed to
        # the control loop only if none received after it was handed first (checks take
        # their own time in the action's threads: the older of two close goals finished its
        # checks last and ran after the newer one, from a stale start)
        self._order_lock = threading.Lock()
        self._received = 0
        self._handed = 0
        self._numbers: dict[bytes, int] = {}
        # the action lives on a node of its own, spun by its own executor in a thread of its
        # own: its execute callbacks wait (as long as a trajectory lasts) without holding up
        # the control node, which keeps rclpy's fast single-threaded executor
        self.action_node = Node(
            f'{node.get_name()}_action',
            namespace=node.get_namespace(),
            context=node.context,
            use_global_arguments=False,  # (a __node remap would name it as the node)
            start_parameter_services=False,
        )
        # its clock follows the control node's (simulated time under use_sim_time) through a
        # time source on the control node: no /clock subscription of its own, whose 100 Hz
        # callbacks in the action's multi-threaded executor took the GIL from the control
        # loop (measured: the control timer ran at 35-50 % of its rate in the demo)
        self._time_source = TimeSource(node=node)
        self._time_source.attach_clock(self.action_node.get_clock())
        # the name the control node resolves, its remaps included (``-r
        # ~/follow_joint_trajectory:=...``; rcl_action applies a node's topic remap rules to
        # action names, and the companion node, without arguments of its own, keeps this
        # absolute name as it is)
        self.action_name = node.resolve_topic_name('~/follow_joint_trajectory')
        self.action = ActionServer(
            self.action_node,
            FollowJointTrajectory,
            self.action_name,
            execute_callback=self._execute,
            goal_callback=lambda goal: GoalResponse.ACCEPT,
            handle_accepted_callback=self._accepted,
            cancel_callback=lambda goal_handle: CancelResponse.ACCEPT,
            callback_group=ReentrantCallbackGroup(),
            # deeper request queues than the default 10: a burst of goals from several
            # clients lost requests silently, their callers waiting forever
            goal_service_qos_profile=REQUEST_QOS,
            result_service_qos_profile=REQUEST_QOS,
            cancel_service_qos_profile=REQUEST_QOS,
        )
        self._executor = MultiThreadedExecutor(num_threads=ACTION_THREADS, context=node.context)
        self._executor.add_node(self.action_node)
        self._thread = threading.Thread(
            target=self._spin, name='follow_joint_trajectory', daemon=True
        )
        self._thread.start()
        # on the action's node and thread (its conversion and checks do not hold up the
        # control loop), under the name the control node resolves (its remaps apply)
        self.subscription = self.action_node.create_subscription(
            JointTrajectoryMsg,
            node.resolve_topic_name('~/joint_trajectory'),
            self._on_topic,
            10,
        )

    def _spin(self) -> None:
        try:
            self._executor.spin()
        except (ExternalShutdownException, ShutdownException):
            pass

    def destroy(self) -> None:
        """Stop the action's executor, destroy the action server and its node (after the
        waiting goals were released: :meth:`TrajectoryRequest.abort`)."""
        self._executor.shutdown(timeout_sec=2.0)
        self._thread.join(timeout=2.0)
        self.action.destroy()
        self.action_node.destroy_node()
        self._time_source.detach_node()

    def _log(self, text: str, error: bool = True) -> None:
        with self._log_lock:  # (the action's threads and the node's)
            line = self._throttle.admit(text)
        if line:
            logger = self.node.get_logger()  # (rclpy: one severity per call site)
            if error:
                logger.error(line)
            else:
                logger.info(line)

    def request(
        self,
        msg: JointTrajectoryMsg,
        goal: FollowJointTrajectory.Goal | None = None,
        goal_handle: ServerGoalHandle | None = None,
    ) -> TrajectoryRequest:
        """A checked :class:`TrajectoryRequest` from the state measured now.

        The time and the state are taken first, then the message is checked and converted:
        the trajectory starts from the state measured when it arrived, however long the
        checks take.

        Parameters
        ----------
        msg : JointTrajectory
        goal : FollowJointTrajectory.Goal, optional
            For an action goal (its tolerances).
        goal_handle : ServerGoalHandle, optional

        Returns
        -------
        TrajectoryRequest

        Raises
        ------
        TrajectoryError
            Naming the culprit (also: more than :data:`MAX_POINTS` points, no fresh state to
            start from, a trajectory that ends before now).
        """
        now = self._now()
        state = self._measured()
        model = self.model
        if not model.single_dof_joints:
            raise TrajectoryError(
                'joints', 'the robot has joints with several DoFs: not supported'
            )
        points = msg.points
        if len(points) > MAX_POINTS:  # before any per-point work
            raise TrajectoryError(
                'goal', f'points: expected at most {MAX_POINTS} points, got {len(points)}'
            )
        waypoints = check_waypoints(
            model,
            msg.joint_names,
            [_seconds(p.time_from_start) for p in points],
            [p.positions for p in points],
            [p.velocities for p in points],
            [p.accelerations for p in points],
            [p.effort for p in points],
        )
        defaults, reactionless, step = self._settings()
        tolerances = defaults
        if goal is not None:
            if goal.multi_dof_trajectory.points or goal.multi_dof_trajectory.joint_names:
                raise TrajectoryError(
                    'joints', 'multi_dof_trajectory: not supported (no such joints)'
                )
            for field in ('component_path_tolerance', 'component_goal_tolerance'):
                components = getattr(goal, field)
                if components:  # tolerances of multi-DOF joints' components: none to check
                    raise TrajectoryError(
                        'joints',
                        f'{field}: expected none (no multi-DOF joints: their tolerances could '
                        f'not be checked), got {len(components)} for '
                        f'{sorted({c.joint_name for c in components})[:5]}',
                    )

            def entries(
                tolerance_list: Sequence[JointTolerance],
            ) -> list[tuple[str, float, float, float]]:
                return [(t.name, t.position, t.velocity, t.acceleration) for t in tolerance_list]

            tolerances = defaults.overridden(
                model,
                entries(goal.path_tolerance),
                entries(goal.goal_tolerance),
                _seconds(goal.goal_time_tolerance),
            )
        origin = _seconds(msg.header.stamp) or None  # zero: start now
        if origin is not None and origin + waypoints.times[-1] < now:
            raise TrajectoryError(
                'old',
                f'header.stamp: the trajectory starts at {origin:.3f} s and ends at '
                f'{origin + waypoints.times[-1]:.3f} s, before now ({now:.3f} s)',
            )
        if isinstance(state, str):
            raise TrajectoryError('goal', f'{state}: no state to start the trajectory from')
        q, v = state
        trajectory = JointTrajectory.start(waypoints, now, q[7:], v[6:], origin)
        correction = None
        if reactionless:
            sent = trajectory.final_positions
            trajectory, correction = reactionless_correction(model, q, trajectory, step)
            self._log(correction.summary(), error=False)
            beyond = correction_beyond_goal(model, sent, trajectory.final_positions, tolerances)
            if beyond is not None:
                raise beyond
        return TrajectoryRequest(trajectory, tolerances, goal_handle, correction)

    def _number(self) -> int:
        """The next arrival number (any thread)."""
        with self._order_lock:
            self._received += 1
            return self._received

    def _accepted(self, goal_handle: ServerGoalHandle) -> None:
        """A goal accepted: numbered in the order of acceptance, then executed."""
        number = self._number()
        with self._order_lock:
            self._numbers[bytes(goal_handle.goal_id.uuid)] = number
        goal_handle.execute()

    def _hand_over(self, request: TrajectoryRequest, number: int) -> bool:
        """Hand ``request`` (arrival ``number``) to the control loop unless one received
        after it was handed over first: then it is aborted as preempted, as JTC preempts
        at arrival (False)."""
        with self._order_lock:
            if number < self._handed:
                request.abort(
                    'preempted by a newer trajectory (received after this one, its checks '
                    'done first)'
                )
                return False
            self._handed = number
            self._submit(request)
        return True

    def _execute(self, goal_handle: ServerGoalHandle) -> FollowJointTrajectory.Result:
        """A goal's execute callback: check, hand over, wait for the outcome."""
        goal = goal_handle.request
        with self._order_lock:
            number = self._numbers.pop(bytes(goal_handle.goal_id.uuid), None)
        if number is None:  # (not through _accepted: numbered now)
            number = self._number()
        try:
            request = self.request(goal.trajectory, goal, goal_handle)
        except TrajectoryError as exc:
            self._log(f'follow_joint_trajectory: goal aborted: {exc}')
            goal_handle.abort()
            return _Result(error_code=ERROR_CODES[exc.kind], error_string=str(exc))
        self._hand_over(request, number)
        context = self.node.context
        stale_since = cancel_since = clock_seen = None
        while not request.done.wait(WAIT_PERIOD):
            if not rclpy.ok(context=context):
                request.abort('the controller is shutting down')
                continue
            # the control loop ends a goal only while it runs (fresh state, a clock that
            # advances): a cancel it has not taken within CANCEL_GRACE of stale state or
            # CLOCK_STOOD of a clock standing, or a state stale for STALE_ABORT, ends it here
            # (it held the goal forever, a cancel stayed CANCELING; the loop then holds);
            # otherwise the loop takes the cancel at its next update, however long a control
            # period lasts in wall time (at a real-time factor of 0.01: 1 s)
            now = time.monotonic()
            why = self._measured()
            stale = isinstance(why, str)
            if request.cancel_requested:
                cancel_since = now if cancel_since is None else cancel_since
                clock = self._now()
                if clock_seen is None or clock != clock_seen[1]:
                    clock_seen = (now, clock)
                stood = now - clock_seen[0]
                if stood >= CLOCK_STOOD or (stale and now - cancel_since >= CANCEL_GRACE):
                    cause = (
                        f'had no fresh state to follow it with ({why})'
                        if stale
                        else f'clock stood still for {stood:.1f} s (a paused simulation?)'
                    )
                    request.finish(
                        'canceled',
                        ERROR_CODES['succeeded'],
                        f'canceled while the controller {cause}: it holds the position '
                        'measured next',
                    )
                    continue
            if not stale:
                stale_since = None
            elif stale_since is None:
                stale_since = now
            elif now - stale_since >= STALE_ABORT:
                request.abort(f'{why}: no fresh state for {now - stale_since:.1f} s')
        status, code, message = request.outcome
        {'succeeded': goal_handle.succeed, 'canceled': goal_handle.canceled}.get(
            status, goal_handle.abort
        )()
        return _Result(error_code=code, error_string=message)

    def _on_topic(self, msg: JointTrajectoryMsg) -> None:
        number = self._number()
        try:
            request = self.request(msg)
        except TrajectoryError as exc:
            self._log(f'joint_trajectory: ignored: {exc}')
            return
        if not self._hand_over(request, number):
            self._log('joint_trajectory: ignored: a newer trajectory was received after it')
