"""Free-floating robot simulator node (``ffsim_simulator``).

Parameters and ROS I/O around a :class:`ffsim_ros.sim.Engine`, which integrates the
free-floating equations of motion of :mod:`ffsim_ros.dynamics` [S0 eq. 39] at
``physics_rate_hz``. A physics thread (started by :meth:`Simulator.start`; ``main`` calls it)
paces the engine against the wall clock by ``real_time_factor`` and publishes at
``publish_rate_hz`` of *simulated* time. All messages of one publish step carry the same
stamp, the simulated time, which advances by exactly one physics step (an integer number of
nanoseconds) per step. ``real_time_factor`` is an upper bound: when the machine cannot keep
up, the simulation runs slower rather than catching up in bursts (a lag over two publish
periods is dropped), so controllers closing the loop over DDS always get their share of
simulated time.

Threads: the executor thread runs the subscriptions, services and parameter callbacks; they
check their input and queue it (:mod:`.node_support.inbox`: bounded, a stream of commands
held as values). The physics thread alone touches the engine and alone
publishes: between two batches of steps it applies the queued inputs in arrival order
(efforts, wrenches, reset, pause, parameter changes), then steps and publishes. A reset (or
any jump of the state) takes one physics step of simulated time, so it is published at once
with a stamp later than everything published before: stamps never go back. They repeat only
for late joiners: while the physics is idle (paused, stopped, faulted) a publisher that gains
subscribers sends its last message again (:mod:`.node_support.late_joiners`).

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
``resets``                 diagnostic_msgs/DiagnosticArray      a reset of the robot's state:
                           (transient local)                    its count, the stamp of the
                                                                first state after it (sent and
                                                                acknowledged before that state)
``/clock``                 rosgraph_msgs/Clock                  simulated time
``joint_effort_commands``  std_msgs/Float64MultiArray (sub)     joint efforts, joint order
``base_wrench``            geometry_msgs/WrenchStamped (sub)    wrench at the base CoM, frame
                                                                world_frame or the base link
``/diagnostics``           diagnostic_msgs/DiagnosticArray      physics status, step rate,
                                                                real-time factor, command age,
                                                                the watchdog's figures (once a
                                                                wall second)
=========================  ===================================  ==============================

``momentum``: linear momentum ``P`` [kg m/s], angular momentum about the system CoM ``L_g``
[kg m^2/s] [S0 eqs. 9, 12-16] and the CoM ``r_g`` [m], all in world_frame (with targets: of
robot and targets together, about their common CoM); no standard message holds a momentum and
a point: a labeled Float64MultiArray (``quantity`` = ``P,L_g,com`` x ``axis`` = ``x,y,z``).

``base_wrench``: held until the next message. In world_frame it stays fixed in the world; in
the base link frame it turns with the base, as a thruster's force does (re-expressed at every
evaluation of the dynamics).

Closed chains: a robot whose URDF has URDF+ ``<loop>`` elements is integrated with its loops
closed (:func:`ffsim_ros.node_support.initial_state.initial_state`; no targets then).

Targets (``scenario``, spawning, TF, ``targets/<name>/odom``, ``scene_events``,
``scene_markers``, ``~/grasp``, ``~/release``): :mod:`ffsim_ros.node_support.scene_support`.

Services: ``~/reset`` (std_srvs/Trigger: back to the initial state, inputs cleared, one physics
step later; simulated time never goes back, so ``use_sim_time`` nodes never see time jump
back) and ``~/pause`` (std_srvs/SetBool). Both answer once the physics thread has applied them.
Every reset or setting of the robot's state (``~/reset``, ``reset_simulation`` with the
state scope, ``set_simulation_state`` stopped, ``set_entity_state`` of the robot) is
announced on ``resets`` (:mod:`.node_support.resets`): a controller drops what it pursued.

Guards (ros2_controllers style): a command of the wrong length or with NaN/inf is rejected
with a throttled error and the last good command stays; no command for ``command_timeout``
seconds of simulated time -> zero effort; efforts are clipped to the URDF effort limits, then
to what the drives give at the joints' speeds (:mod:`ffsim_ros.sim.limits`), and what is
applied is what ``joint_states.effort`` shows; a non-finite state stops the integration with
an error, the last finite state stays published (``~/reset`` resumes). The physics watchdog
(:mod:`ffsim_ros.sim.watchdog`) checks momentum and energy after each batch of steps: a failed
check is a warning in the log (the figures, at most every ``WATCHDOG_LOG_PERIOD`` s) and a WARN
on ``/diagnostics``.

Parameters: :data:`~ffsim_ros.node_support.simulator_parameters.PARAMETERS`
(``real_time_factor`` and ``command_timeout`` can be set at run time; the README and
``config/simulator.yaml`` are generated from the table).
"""

from __future__ import annotations

import queue
import sys
import threading
import time
import traceback
from collections import deque
from collections.abc import Callable, Hashable
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass
from typing import Any

import rclpy
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from geometry_msgs.msg import WrenchStamped
from nav_msgs.msg import Odometry
from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import JointState
from simulation_interfaces.msg import Result
from std_msgs.msg import Float64MultiArray, String
from std_srvs.srv import SetBool, Trigger
from tf2_msgs.msg import TFMessage
from visualization_msgs.msg import MarkerArray

import ffsim_ros.dynamics as D
from ffsim_ros.node_support import (
    FatalNodeError,
    LogThrottle,
    ParameterValueError,
    QuitRequested,
    TopicsInlineExecutor,
    destroy_on_failure,
    frame_id,
    load_robot,
    run_node,
    to_stamp,
)
from ffsim_ros.node_support.controller_parameters import PARAMETERS as CONTROLLER_PARAMETERS
from ffsim_ros.node_support.inbox import Inbox, InboxFull
from ffsim_ros.node_support.initial_state import initial_state, outside_limits
from ffsim_ros.node_support.joint_commands import JointCommandError, JointCommands
from ffsim_ros.node_support.late_joiners import LateJoiners
from ffsim_ros.node_support.physics_status import ClockWatch, physics_status
from ffsim_ros.node_support.resets import (
    RESETS_QOS,
    RESETS_TOPIC,
    Reset,
    reset_message,
    wait_acked,
)
from ffsim_ros.node_support.scene_services import SERVICE_QOS, EntityError, SceneInterfaces
from ffsim_ros.node_support.scene_support import world_setup
from ffsim_ros.node_support.sim_interfaces import RequestError, SimulationInterfaces, StepJob
from ffsim_ros.node_support.simulator_parameters import PARAMETERS
from ffsim_ros.node_support.state_messages import StateMessages
from ffsim_ros.sim import (
    Engine,
    EngineFault,
    NonFiniteError,
    Pacer,
    RateMeter,
    Snapshot,
    WrongSizeError,
    check_efforts,
    check_wrench,
)

try:  # a real ROS install has tf2_ros; the PyPI wheels do not
    from tf2_ros import TransformBroadcaster
except ImportError:  # pragma: no cover - depends on the installation
    TransformBroadcaster = None


#: Most physics steps integrated between two looks at the request queue: 10 ms of simulated
#: time, or one step (a reset or a command waits at most that long).
MAX_BATCH_SECONDS = 0.01
#: Wall seconds between two messages on /diagnostics.
DIAGNOSTICS_PERIOD = 1.0
#: Wall seconds between two repeats of one warning of the watchdog in the log.
WATCHDOG_LOG_PERIOD = 5.0


#: Seconds a service callback waits for the physics thread to apply its request.
SERVICE_TIMEOUT = 10.0


def _ns(seconds: float) -> int:
    """Whole nanoseconds of a time in seconds (at least 1)."""
    return max(1, int(round(seconds * 1e9)))


@dataclass
class _Request:
    """Work for the physics thread: ``action(engine)`` returns a reply text or raises."""

    action: Callable[[Engine], str]
    publish: bool = False  # the state jumped: publish it right away
    reply: Future | None = None
    job: StepJob | None = None  # steps handed to the physics loop (answered when done)


class Simulator(Node):
    """The ``ffsim_simulator`` node (see the module docstring).

    Builds the engine and the ROS interfaces; :meth:`start` starts the physics thread.

    Parameters
    ----------
    **kwargs
        Passed to ``rclpy.node.Node`` (e.g. ``parameter_overrides``, ``context``).
    """

    def __init__(self, **kwargs: Any) -> None:
        super().__init__('ffsim_simulator', **kwargs)
        # a constructor that raises destroys the node first (see destroy_on_failure)
        destroy_on_failure(self, self._build)

    def _build(self) -> None:
        values = PARAMETERS.declare(self, siblings=(CONTROLLER_PARAMETERS,))  # (a shared file)
        model, self.urdf, loops = load_robot(values['robot_description'], values['robot_file'])
        model = D.with_gravity(model, values['gravity'])
        model = D.with_joint_dynamics(model, values['joint_dynamics'])
        self.model = model
        physics, publish = values['physics_rate_hz'], values['publish_rate_hz']
        dt_ns = int(round(1e9 / physics))  # >= 1000 ns: physics_rate_hz <= 1 MHz
        # publishing happens every `decimation` physics steps (rounded; the achieved rate is
        # physics_rate / decimation)
        self.decimation = max(1, int(round(physics / publish)))
        self._batch = max(1, min(self.decimation, int(round(MAX_BATCH_SECONDS * physics))))
        self.world = values['world_frame'] or 'world'
        self.base_frame = values['frame_prefix'] + model.base_link
        try:  # the root link's name is the TF child frame of world_frame (base_odom's too)
            frame_id().test(self.base_frame)
        except ValueError:
            source = 'robot_description' if values['robot_description'] else 'robot_file'
            raise ParameterValueError(
                f'{source}: expected a root link whose name is a TF frame id (letters, digits, '
                f'_ . / -; no leading /; at most 255 characters with frame_prefix), got '
                f'{model.base_link[:100]!r}'
            ) from None
        if self.base_frame == self.world:  # (URDFs rooted at a link 'world': UR5, xArm7)
            raise ParameterValueError(
                f"world_frame: expected a frame other than the robot's base link frame "
                f'{self.base_frame!r} (TF would carry a transform from it to itself), got '
                f"{self.world!r}; set world_frame (e.g. 'inertial') or frame_prefix"
            )
        setup, moved = world_setup(
            values['scenario'], model, self.urdf, dt_ns, self.get_namespace()
        ).placed(values)
        if moved:
            self.get_logger().info(moved)
        chain, q0, v0 = initial_state(
            model, loops, setup.initial_values(values), setup.value_names(values)
        )
        if chain is not None and setup.targets:
            raise ParameterValueError('scenario: expected no targets with loop closures, got some')
        self.engine = Engine(
            model,
            q0,
            v0,
            dt_ns=dt_ns,
            integrator=values['integrator'],
            command_timeout_ns=_ns(values['command_timeout']),
            paused=values['start_paused'],
            conserve_momentum=values['conserve_momentum'],
            velocity_limits=values['velocity_limits'],
            position_limits=values['position_limits'],
            world=setup.world(model, q0, v0, dt_ns),
            chain=chain,
        )
        self._pacer = Pacer(values['real_time_factor'], self.engine.dt, self.decimation)
        self._inbox: Inbox[_Request] = Inbox()
        self._wake = threading.Event()
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None
        self._last_published = -1  # engine step of the last publish
        self._published: Snapshot | None = None  # (for late joiners while idle)
        self._publish_count = 0
        self._resets = 0  # the state resets announced (physics thread: announce_reset)
        self._reset_pending: str | None = None
        self._diagnostics = RateMeter(self.engine.step, DIAGNOSTICS_PERIOD)
        self._fatal = ''
        # the physics thread reports a failure through this (the executor raises it)
        self._fatal_signal = self.create_guard_condition(self._raise_fatal)
        self._quit_signal = self.create_guard_condition(self._raise_quit)
        self._quit_raised = False
        self._destroyed = False
        # physics thread only: the run state beyond the engine's pause, pacing, step jobs
        self.stopped = False  # simulation_interfaces' STATE_STOPPED (reset and paused)
        self._idle = True  # restart the pacing before the next batch
        self._jobs: deque[StepJob] = deque()
        self._joint_commands = JointCommands(model)
        self._log_throttle = LogThrottle(1.0)
        self._create_interfaces(values['publish_clock'])
        self.scene_interfaces = SceneInterfaces(self, values['frame_prefix'])
        self._late_joiners = LateJoiners(
            self._messages,
            (self.pub_clock, self.pub_joints, self.pub_odom, self.pub_momentum, self.pub_markers),
            self._tf,
            self.scene_interfaces.last_state,
            readers=self._reader_ids,
        )
        PARAMETERS.watch(self, self._on_parameters)
        limits = self.engine.limits
        self.get_logger().info(
            f'{model.name}: {model.n} joints, {model.total_mass:.1f} kg, '
            f'{len(chain.loops) if chain else 0} loop closures; physics {physics:g} Hz '
            f'({self.engine.integrator}'
            f'{", momentum-preserving" if self.engine.conserve_momentum else ""}), '
            f'{int(limits.driven.sum())} speed-limited and {int(limits.bounded.sum())} '
            f'position-limited joints, publish every {self.decimation} steps, real-time '
            f'factor {self._pacer.rtf:g}'
            f'{" (as fast as possible)" if self._pacer.rtf == 0 else ""}'
        )
        outside = outside_limits(model, q0)
        if outside:  # (with position_limits such a start is refused above)
            source = setup.value_names(values).get(
                'initial_joint_positions', 'initial_joint_positions'
            )  # (a scenario's robot.joint_positions named as such)
            self.get_logger().warning(
                f'initial joint positions beyond their URDF position limits: {outside}; set '
                f'{source} within them (a controller moves such joints only back toward their '
                'range)'
            )

    def _create_interfaces(self, publish_clock: bool) -> None:
        names = self.model.joint_names
        self._messages = StateMessages(names, self.world, self.base_frame, publish_clock)
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
        self.pub_resets = self.create_publisher(DiagnosticArray, RESETS_TOPIC, RESETS_QOS)
        self.pub_clock = self.create_publisher(Clock, '/clock', 10) if publish_clock else None
        self.clock_watch = ClockWatch(self, self.pub_clock)  # (another publisher on it: warned)
        # the ROS convention: one /diagnostics topic for all (absolute, also under a namespace)
        self.pub_diagnostics = self.create_publisher(DiagnosticArray, '/diagnostics', 10)
        # with tf2_ros, its broadcaster; else our own publisher, which also takes the base's
        # transform alone as bytes (no targets in the scene)
        self._tf_broadcast = TransformBroadcaster is not None
        if TransformBroadcaster is not None:
            self._tf = TransformBroadcaster(self)
            self._send_tf = self._tf.sendTransform
        else:  # same topic and QoS as tf2_ros.TransformBroadcaster (depth 100, reliable)
            self._tf = self.create_publisher(TFMessage, '/tf', QoSProfile(depth=100))
            self._send_tf = lambda ts: self._tf.publish(TFMessage(transforms=ts))
        self.create_subscription(Float64MultiArray, 'joint_effort_commands', self._on_command, 10)
        self.create_subscription(JointState, 'joint_commands', self._on_joint_command, 10)
        self.create_subscription(WrenchStamped, 'base_wrench', self._on_base_wrench, 10)
        # services wait for the physics thread: a group of their own, served concurrently by
        # the multi-threaded executor of main() while the subscriptions go on
        group = ReentrantCallbackGroup()
        for srv, name, callback in (
            (Trigger, 'reset', self._on_reset),
            (SetBool, 'pause', self._on_pause),
        ):
            self.create_service(
                srv, f'~/{name}', callback, qos_profile=SERVICE_QOS, callback_group=group
            )
        self.simulation_interfaces = SimulationInterfaces(self)

    # ------------------------------------------------------------------- thread control
    def start(self) -> Simulator:
        """Start the physics thread (once); returns the node.

        Returns
        -------
        Simulator
        """
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name='ffsim_physics', daemon=True)
            self._thread.start()
        return self

    @property
    def running(self) -> bool:
        """Whether the physics thread is alive."""
        return self._thread is not None and self._thread.is_alive()

    def stop(self) -> None:
        """Stop the physics thread (pending requests are answered with a failure)."""
        self._stopping.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout=5.0)
        self._fail_pending('the simulator is shutting down')

    def destroy_node(self) -> None:
        """Stop the physics thread, then destroy the node (once: a context's shutdown destroys
        the nodes it tracks, and ``main`` destroys its node again)."""
        if self._destroyed:
            return
        self._destroyed = True
        self.stop()
        self.simulation_interfaces.destroy()
        super().destroy_node()

    def request_quit(self) -> None:
        """End the node's spinning from any thread (:class:`QuitRequested` raised in the
        executor: ``main`` exits with status 0)."""
        self._quit_signal.trigger()

    def _raise_quit(self) -> None:
        if self._quit_raised:  # (raised once: another would be a task nobody awaits)
            return
        self._quit_raised = True
        self._quit_signal.trigger()  # (again: a multi-threaded executor raises it at the next)
        raise QuitRequested('set_simulation_state: quitting')

    def _reader_ids(self, topic: str) -> frozenset:
        """The endpoint ids of the subscriptions on ``topic`` (late joiners; physics thread)."""
        return frozenset(
            bytes(info.endpoint_gid) for info in self.get_subscriptions_info_by_topic(topic)
        )

    def _raise_fatal(self) -> None:
        # once more: a multi-threaded executor raises a callback's error when it hands out the
        # next callback (this one again if nothing else comes)
        self._fatal_signal.trigger()
        raise FatalNodeError(self._fatal)

    # --------------------------------------------------------- callbacks (executor thread)
    def _submit(self, request: _Request, key: Hashable | None = None) -> None:
        """Queue ``request``; with a ``key``, a held command (:mod:`.node_support.inbox`), not
        queued but logged when the inbox is full (InboxFull raised otherwise)."""
        try:
            self._inbox.put(request, key)
        except InboxFull as exc:
            if key is None:
                raise
            self.get_logger().error(f'{exc}; command ignored', throttle_duration_sec=1.0)
        self._wake.set()

    @property
    def pending_requests(self) -> int:
        """Requests waiting for the physics thread (held commands count once per kind)."""
        return len(self._inbox)

    def run_physics(self, action: Callable[[Engine], object], publish: bool = False) -> object:
        """Run ``action(engine)`` in the physics thread between two batches of steps, wait
        for it and return its value; ``publish``: publish the state reached at once.

        Parameters
        ----------
        action : callable
            ``action(engine) -> value``.
        publish : bool

        Returns
        -------
        object
            ``action``'s value.

        Raises
        ------
        Exception
            What ``action`` raised (EngineFault, ValueError, RequestError, EntityError; a
            LookupError as an EntityError, RESULT_NOT_FOUND); RuntimeError
            when the physics thread is not running or does not answer in SERVICE_TIMEOUT.
        """
        if not self.running:
            raise RuntimeError('the physics thread is not running')
        reply: Future = Future()
        self._submit(_Request(action, publish, reply))
        try:
            return reply.result(timeout=SERVICE_TIMEOUT)
        except FutureTimeout:
            raise RuntimeError(
                f'the physics thread did not answer within {SERVICE_TIMEOUT:g} s'
            ) from None

    def _call(self, action: Callable[[Engine], str], publish: bool) -> tuple[bool, str]:
        """:meth:`run_physics` as ``(success, message)`` (the std_srvs services)."""
        try:
            return True, self.run_physics(action, publish)
        except (EngineFault, ValueError, RuntimeError, RequestError, EntityError) as exc:
            return False, str(exc)

    def submit_steps(self, job: StepJob) -> None:
        """Queue ``job`` (steps of a paused simulation) for the physics thread; its reply
        comes when it is done (jobs run one after the other).

        Parameters
        ----------
        job : StepJob
        """
        if not self.running:
            job.reply.set_exception(RuntimeError('the physics thread is not running'))
            return
        try:
            self._submit(_Request(lambda engine: self._jobs.append(job), job=job))
        except InboxFull as exc:
            job.reply.set_exception(exc)

    def reset_clock(self) -> Snapshot:
        """The simulated clock back to 0 (physics thread; ``ResetSimulation`` of the time
        scope): the engine's clock, the publishing and the pacing restart from it.

        Returns
        -------
        Snapshot
            The state at time 0.
        """
        snap = self.engine.reset_time()
        self._last_published = -1
        self._diagnostics.step = 0
        self._idle = True
        return snap

    def announce_reset(self, what: str) -> None:
        """The robot's state was reset or set (physics thread; ``what``: which reset, for
        the announcement): announced on ``resets`` before the next state published
        (:meth:`_publish`, :mod:`.node_support.resets`).

        Parameters
        ----------
        what : str
        """
        self._reset_pending = what

    def _on_command(self, msg: Float64MultiArray) -> None:
        try:  # one log line (and throttle) per kind of error; the message names the topic
            tau = check_efforts(self.model, msg.data, 'joint_effort_commands')
        except WrongSizeError as exc:
            self.get_logger().error(f'{exc}; command ignored', throttle_duration_sec=1.0)
            return
        except NonFiniteError as exc:
            self.get_logger().error(f'{exc}; command ignored', throttle_duration_sec=1.0)
            return
        self._submit(_Request(lambda engine: engine.command_efforts(tau)), 'efforts')

    def _on_joint_command(self, msg: JointState) -> None:
        try:
            index, tau = self._joint_commands.decode(
                msg.name, msg.effort, (msg.position, msg.velocity)
            )
        except JointCommandError as exc:  # one line a second per kind of error
            line = self._log_throttle.admit(f'joint_commands: {exc}; command ignored')
            if line:
                self.get_logger().error(line)
            return
        key = ('joints', *index.tolist())  # (one held command per set of joints)
        self._submit(_Request(lambda engine: engine.command_joint_efforts(index, tau)), key)

    def _on_base_wrench(self, msg: WrenchStamped) -> None:
        f, t = msg.wrench.force, msg.wrench.torque
        try:
            wrench = check_wrench([f.x, f.y, f.z, t.x, t.y, t.z], 'base_wrench')
        except NonFiniteError as exc:
            self.get_logger().error(f'{exc}; ignored', throttle_duration_sec=1.0)
            return
        frame_id = msg.header.frame_id
        if frame_id in (self.world, ''):
            frame = 'world'
        elif frame_id in (self.base_frame, self.model.base_link):
            frame = 'base'  # turns with the base: re-expressed at every step (RK4 stage)
        else:  # (LogThrottle: a 1 MB frame_id is cut, one line a second per kind)
            line = self._log_throttle.admit(
                f'base_wrench: expected frame_id {self.world!r} or {self.base_frame!r}, '
                f'got {frame_id!r}; ignored'
            )
            if line:
                self.get_logger().error(line)
            return
        self._submit(_Request(lambda engine: engine.set_base_wrench(wrench, frame)), 'wrench')

    def _on_reset(self, request: Trigger.Request, response: Trigger.Response) -> Trigger.Response:
        def reset(engine: Engine) -> str:
            snap = engine.reset()
            self.announce_reset('~/reset: the initial state, inputs cleared')
            self.end_step_jobs('ended by ~/reset')
            return f'reset to the initial state at sim time {snap.time:.6f} s'

        response.success, response.message = self._call(reset, publish=True)
        return response

    def _on_pause(self, request: SetBool.Request, response: SetBool.Response) -> SetBool.Response:
        def pause(engine: Engine) -> str:
            if request.data:
                engine.pause()
                self.stopped = False
                return 'paused'
            engine.resume()  # EngineFault while faulted
            self.stopped = False
            return 'running'

        response.success, response.message = self._call(pause, publish=False)
        return response

    def _on_parameters(self, changed: dict) -> None:
        """Post-set: hand the new dynamic parameter values to the physics thread."""

        def apply(engine: Engine) -> str:
            if 'real_time_factor' in changed:
                self._pacer.set_rtf(changed['real_time_factor'])
                self._pacer.restart(engine.step)
            if 'command_timeout' in changed:
                engine.command_timeout_ns = _ns(changed['command_timeout'])
            return ''

        self._submit(_Request(apply))
        # every change (not throttled: the last line must say the value in force)
        self.get_logger().info(
            'parameters: ' + ', '.join(f'{name} -> {value}' for name, value in changed.items())
        )

    # -------------------------------------------------------------------- physics thread
    def _run(self) -> None:
        try:
            self.pub_description.publish(String(data=self.urdf))
            self._publish(self.engine.snapshot())
            self._loop()
        except Exception as exc:  # noqa: BLE001 - a dead physics thread must end the node
            if not rclpy.ok(context=self.context):
                return  # shutting down: nothing left to publish to
            self._fatal = f'physics thread failed: {exc!r}\n{traceback.format_exc()}'
            self.get_logger().fatal(self._fatal)
            self._stopping.set()
            self._fatal_signal.trigger()
        finally:
            self._fail_pending('the physics thread stopped')

    def _loop(self) -> None:
        engine, pacer = self.engine, self._pacer
        while not self._stopping.is_set():
            self._wake.clear()
            self._apply_requests()
            if self._diagnostics.due():
                self._publish_diagnostics()
            if self._jobs:  # stepping a paused simulation: not paced
                self._step_job(self._jobs[0])
                continue
            if engine.paused or engine.faulted:  # the last state for late joiners, no step
                if not self._idle:  # (the physics ran: its subscribers had its messages)
                    self._late_joiners.rebase(self._published)
                self._idle = True
                self._late_joiners.poll(time.monotonic(), self._published)
                self._wake.wait(0.1)
                continue
            if self._idle:
                pacer.restart(engine.step)
                self._idle = False
            count = min(self._batch, self.decimation - engine.step % self.decimation)
            delay = pacer.delay(engine.step + count)
            if delay > 0.0:  # at most until the next diagnostics (1 Hz at any real_time_factor)
                self._wake.wait(min(delay, self._diagnostics.next - time.monotonic()))
                continue
            self._after_batch(engine.advance(count), False)

    def _after_batch(self, snap: Snapshot, last: bool) -> None:
        """Publish ``snap`` at each publish period (and when ``last`` or faulted); report a
        fault and the watchdog's warnings."""
        if snap.faulted:
            self.get_logger().error(
                f'{snap.fault}: integration stopped, the last finite state (sim time '
                f'{snap.time:.6f} s) stays published; call ~/reset'
            )
        if last or snap.faulted or snap.step % self.decimation == 0:
            self._publish(snap)
        if self.engine.health.warnings:
            self.get_logger().warning(
                f'physics watchdog at sim time {snap.time:.3f} s: '
                + '; '.join(self.engine.health.warnings),
                throttle_duration_sec=WATCHDOG_LOG_PERIOD,
            )

    def _step_job(self, job: StepJob) -> None:
        """One batch of the steps of ``job`` (they need the simulation paused: a job whose
        simulation is no longer paused, or faulted, ends with an error)."""
        engine = self.engine
        done = f'after {job.completed} of {job.steps} steps' if job.completed else 'no step made'
        if engine.faulted or self.stopped or not engine.paused:
            why = (
                f'integration stopped: {engine.fault} (reset or set the entity state)'
                if engine.faulted
                else f'the simulation is {"stopped" if self.stopped else "playing"}: '
                'stepping needs it paused (set_simulation_state, state 2)'
            )
            self._end_job(RequestError(Result.RESULT_OPERATION_FAILED, f'{why}; {done}'))
            return
        if job.cancelled():
            self._end_job((job.completed, True, engine.time_ns))
            return
        count = min(self._batch, job.steps - job.completed)
        count = min(count, self.decimation - engine.step % self.decimation)
        before = engine.step
        snap = engine.advance(count, stepping=True)
        job.completed += snap.step - before
        finished = job.completed == job.steps
        self._after_batch(snap, finished)
        if job.progress is not None:
            job.progress(job.completed, job.steps - job.completed)
        if finished:
            self._end_job((job.completed, False, snap.time_ns))

    def end_step_jobs(self, why: str) -> None:
        """End the step jobs (physics thread): each replies ``why`` and how far it got.

        Parameters
        ----------
        why : str
        """
        while self._jobs:
            job = self._jobs[0]
            self._end_job(
                RequestError(
                    Result.RESULT_OPERATION_FAILED,
                    f'{why} after {job.completed} of {job.steps} steps',
                )
            )

    def _end_job(self, outcome: tuple | Exception) -> None:
        job = self._jobs.popleft()
        if isinstance(outcome, Exception):
            job.reply.set_exception(outcome)
        else:
            job.reply.set_result(outcome)

    def _apply_requests(self) -> None:
        """Apply the queued requests in arrival order; publish each jump of the state."""
        while True:
            try:
                request = self._inbox.get_nowait()
            except queue.Empty:
                break
            try:
                try:
                    text = request.action(self.engine)
                except LookupError as exc:
                    if isinstance(exc, ValueError):  # (UnknownNameError: a refusal as it is)
                        raise
                    # a name gone since the request was checked (deleted or reset meanwhile):
                    # the request's error, never the end of the physics thread
                    raise EntityError(
                        Result.RESULT_NOT_FOUND, f'not found (gone before applied): {exc!r}'
                    ) from None
            except (EngineFault, ValueError, RequestError, EntityError) as exc:
                if request.reply is not None:
                    request.reply.set_exception(exc)
                else:
                    self.get_logger().error(str(exc), throttle_duration_sec=1.0)
                continue
            if request.publish:  # before answering: the caller's next message is the new state
                self._publish(self.engine.snapshot())
            if request.reply is not None:
                request.reply.set_result(text)

    def _fail_pending(self, reason: str) -> None:
        while self._jobs:
            self._end_job(RuntimeError(reason))
        while True:
            try:
                request = self._inbox.get_nowait()
            except queue.Empty:
                return
            for reply in (request.reply, request.job and request.job.reply):
                if reply is not None and not reply.done():
                    reply.set_exception(RuntimeError(reason))

    # --------------------------------------------------------------------------- publish
    def _publish_diagnostics(self) -> None:
        """``/diagnostics``: the physics status, the watchdog's figures, the step rate, the
        real-time factor achieved and the age of the effort command (physics thread); a shared
        clock topic warned."""
        self.pub_diagnostics.publish(self.diagnostics())
        self.clock_watch.check()

    def diagnostics(self) -> DiagnosticArray:
        """A new ``DiagnosticArray`` of the physics now (restarts the rate measurement).

        Returns
        -------
        DiagnosticArray
        """
        engine = self.engine
        steps_per_s, rtf = self._diagnostics.read(engine.step, engine.dt)
        level, message, values = physics_status(engine, steps_per_s, rtf, self._pacer.rtf)
        status = DiagnosticStatus(
            level=level,
            name=f'{self.get_fully_qualified_name()}: physics',
            message=message,
            hardware_id=self.model.name,
            values=[KeyValue(key=k, value=v) for k, v in values.items()],
        )
        out = DiagnosticArray(status=[status])
        out.header.stamp = to_stamp(engine.time_ns)
        return out

    def _publish(self, snap: Snapshot) -> None:
        """Publish the messages of ``snap`` if it is later than the last published instant."""
        if snap.step <= self._last_published:
            return
        self._last_published, self._published = snap.step, snap
        if self._reset_pending is not None:  # announced first, acknowledged (resets.py)
            self._resets += 1
            reset = Reset(self._resets, snap.time_ns, self._reset_pending)
            self._reset_pending = None
            self.pub_resets.publish(
                reset_message(reset, self.get_fully_qualified_name(), self.model.name)
            )
            if not wait_acked(self.pub_resets):
                self.get_logger().warning(
                    f'reset {reset.count}: not acknowledged by every subscriber of '
                    f'{self.pub_resets.topic_name} in time; the state published anyway',
                    throttle_duration_sec=WATCHDOG_LOG_PERIOD,
                )
        markers = self._publish_count % 10 == 0  # for the eye: a tenth of the rate
        self._publish_count += 1
        wire = self._messages.serialized(snap, markers)  # bytes for the fixed-layout topics
        clock, joints, odom, momentum, marker_bytes, base_tf = wire
        if clock is not None:
            self.pub_clock.publish(clock)
        self.pub_joints.publish(joints)
        targets = self.scene_interfaces.publish(snap, markers)
        if targets or self._tf_broadcast:
            self._send_tf([self._messages.base_transform(snap), *targets])
        else:
            self._tf.publish(base_tf)
        self.pub_odom.publish(odom)
        self.pub_momentum.publish(momentum)
        if marker_bytes is not None:
            self.pub_markers.publish(marker_bytes)

    def messages(self, snap: Snapshot, markers: bool = True) -> tuple:
        """The messages of one instant, all stamped with its simulated time: the tuple of
        :meth:`~ffsim_ros.node_support.state_messages.StateMessages.fill` (the same objects
        filled at every call; physics thread).

        Parameters
        ----------
        snap : Snapshot
        markers : bool
            Whether to fill the MarkerArray too.

        Returns
        -------
        tuple
        """
        return self._messages.fill(snap, markers)


#: Threads of the executor: services and actions wait for the physics thread in their own.
EXECUTOR_THREADS = 4


def main(args: list[str] | None = None) -> int:
    """Console script ``simulator`` (``ros2 run ffsim_ros simulator``).

    Parameters
    ----------
    args : list of str, optional
        Command-line arguments (default ``sys.argv``).

    Returns
    -------
    int
        Exit status (:func:`~.node_support.common.run_node`).
    """
    return run_node(
        lambda: Simulator().start(),
        'ffsim_simulator',
        args,
        executor=lambda: TopicsInlineExecutor(num_threads=EXECUTOR_THREADS),
    )


if __name__ == '__main__':
    sys.exit(main())
