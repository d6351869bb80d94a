"""The simulator's ``simulation_interfaces`` (ROS wiring; the physics stays in its thread).

The ROS 2 standard for talking to simulators (ros-simulation/simulation_interfaces, 1.6.1 as
released for Kilted; Jazzy's 1.5.1 has the same definitions), served under the node's name
like Gazebo's ``/gzserver/...`` (``/ffsim_simulator/get_simulator_features``, under a namespace
``/<ns>/ffsim_simulator/...``):

=============================  ===================================================  =========
name (``~/``)                  type                                                 feature
=============================  ===================================================  =========
``get_simulator_features``     srv GetSimulatorFeatures                             (always)
``reset_simulation``           srv ResetSimulation (scopes default/all, time,       20 21 22
                               state, spawned)                                      23
``get_simulation_state``       srv GetSimulationState                               24
``set_simulation_state``       srv SetSimulationState (stopped, playing, paused,    25 26
                               quitting)
``step_simulation``            srv StepSimulation                                   31 32
``simulate_steps``             action SimulateSteps (feedback, cancel)              33
``get_entities``               srv GetEntities (name filter, sphere bounds)         --
``get_entities_states``        srv GetEntitiesStates                                10
``get_entity_state``           srv GetEntityState                                   10
``set_entity_state``           srv SetEntityState                                   11
``spawn_entity``               srv SpawnEntity (targets: URDF or YAML, file or      0 9
                               string; :mod:`.scene_services`)
``delete_entity``              srv DeleteEntity (targets)                           1
=============================  ===================================================  =========

With loop closures (a closed chain) there are no targets: features 0, 1 and 9 are not listed,
``spawn_entity`` answers ``RESULT_FEATURE_UNSUPPORTED``, the spawned scope of a reset has
nothing to remove.

**Entities.** The robot, named as in its URDF (``<robot name=...>``), and the targets
(:mod:`.scene_services`: from the ``scenario`` or spawned; a target's state is that of its root
link frame, as the robot's; setting it moves the target, its joints kept, refused while it is
held or where it would overlap another body; a target cannot be named as the robot). The
robot's state is that of its base link: the pose of the base link frame in ``world_frame``
and its twist, the velocity of the base link origin and the angular velocity, both in
``world_frame`` (the frame of ``header.frame_id``, as the standard asks; ``base_odom`` gives
the same twist in base link axes, REP 105). The acceleration is not computed (zeros), and is
ignored when setting. Setting the state moves the base (``Engine.set_state``: the joints
keep their positions and rates, the model stays consistent -- momentum, CoM and every link
follow) and takes one physics step, published at once; it is refused while the robot holds a
target, and (INVALID_POSE) at an angular velocity turning the base by pi rad or more in a
physics step, which the step refuses (it was set, then the next step faulted); a target's
state or a spawned target's spin likewise, in the same words. While integration is stopped by
a fault, a change of the targets (spawn, delete, a target's state, a reset of the spawned
targets alone) is refused, naming the fault: a reset of the state or setting the robot's state
are the ways out.

**Time and run states.** Stepping (``step_simulation``, ``simulate_steps``) needs the
simulation paused, as the standard says, and integrates exactly the steps asked for: after
``k`` steps from ``t``, the simulated time is ``t + k dt`` to the nanosecond. One step job
runs at a time (a request while one runs, service or action, is refused at once with
``RESULT_OPERATION_FAILED``, naming the job running), of at most ``MAX_STEPS`` steps (more
is refused: ask in several requests); while it runs the node serves everything else, and
``set_simulation_state`` (playing or stopped), ``reset_simulation`` and ``~/reset`` end it
(it answers how far it got), as does canceling the action. Steps are not
paced by ``real_time_factor`` (they run as fast as the machine allows) and are published as
when playing (every publish period, and the last step). ``STATE_STOPPED`` is a pause and a
reset of every scope ("equivalent to pausing and resetting": spawned targets removed, the
initial state at time 0); from it, playing or pausing keeps the state and time; stopping again
answers ``ALREADY_IN_TARGET_STATE``, unless the state changed since (an entity set, spawned or
deleted, a grasp or release: it then reads as paused). ``STATE_QUITTING`` stops the simulation
(as above, unless stopped already), answers, reads as quitting and, :data:`QUIT_DELAY` later
(wall time: the answer goes out first), ends the node (``request_quit``): the process ends with
exit code 0, as after Ctrl-C. A reset of the spawned scope changes
nothing when nothing was spawned; one of the state scope clears the held inputs (wrenches
included) before the spawned targets are removed, so that a reset of every scope works
whatever is held. A reset of the time scope sets the simulated clock back to 0: ``/clock`` and
every stamp restart from 0 -- the one way time goes back, and only on request, as after a
restart of the simulator (``~/reset`` keeps its meaning: the state scope, time goes on). Nodes
with ``use_sim_time`` see their ROS time jump back: rclpy and rclcpp call their time-jump
callbacks, tf2 buffers clear themselves ("jump back in time"), ROS-time timers restart from
the new time, and ``ffsim_reactionless_controller`` drops its state, goals and trajectories.

Every request is checked here (bad input answered at once, naming the culprit) and the rest
runs in the physics thread, which applies it between two batches of steps and alone publishes
(see ``ffsim_ros.simulator``); the simulation runs on whatever a client sends. The name filter
of ``get_entities`` and ``get_entities_states`` is matched by Python's ``re.search`` once the
POSIX classes of its bracket expressions are translated (:mod:`.name_filter`), at a bounded
cost (the matching holds the GIL): one that could backtrack for long (a repeated group
holding a quantifier or an alternation other than literal alternatives none of which starts
another, a backreference, more than two unbounded quantifiers, ...) is refused
(:func:`name_filter_problem`). Their bounds filter takes ``TYPE_SPHERE``
(:mod:`.bounds_filter`). A spawn's name is final in the physics thread (``allow_renaming``:
chosen there, so concurrent spawns of one name all succeed under distinct names).
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np
import rclpy
from rclpy.action import ActionServer, CancelResponse, GoalResponse
from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.node import Node
from rclpy.qos import QoSProfile
from simulation_interfaces.action import SimulateSteps
from simulation_interfaces.msg import (
    EntityFilters,
    EntityState,
    Result,
    SimulationState,
    SimulatorFeatures,
)
from simulation_interfaces.srv import (
    DeleteEntity,
    GetEntities,
    GetEntitiesStates,
    GetEntityState,
    GetSimulationState,
    GetSimulatorFeatures,
    ResetSimulation,
    SetEntityState,
    SetSimulationState,
    SpawnEntity,
    StepSimulation,
)

import ffsim_ros.dynamics as D

from .bounds_filter import sphere_bounds
from .common import to_stamp
from .name_filter import compile_name_filter, name_filter_problem
from .scene_services import (
    MAX_POSITION,
    MAX_TWIST,
    SERVICE_QOS,
    EntityError,
    check_spin,
    check_values,
    entity_state,
    gone,
    move_target,
    parse_spawn,
    target_name_problem,
)

if TYPE_CHECKING:
    from rclpy.action.server import ServerGoalHandle

    from ffsim_ros.sim import Engine, Snapshot, TargetWorld

T = TypeVar('T')

#: What this simulator supports (``GetSimulatorFeatures``), and only that.
FEATURES = (
    SimulatorFeatures.ENTITY_STATE_GETTING,
    SimulatorFeatures.ENTITY_STATE_SETTING,
    SimulatorFeatures.SIMULATION_RESET,
    SimulatorFeatures.SIMULATION_RESET_TIME,
    SimulatorFeatures.SIMULATION_RESET_STATE,
    SimulatorFeatures.SIMULATION_STATE_GETTING,
    SimulatorFeatures.SIMULATION_STATE_SETTING,
    SimulatorFeatures.SIMULATION_STATE_PAUSE,
    SimulatorFeatures.STEP_SIMULATION_SINGLE,
    SimulatorFeatures.STEP_SIMULATION_MULTIPLE,
    SimulatorFeatures.STEP_SIMULATION_ACTION,
    SimulatorFeatures.SPAWNING,
    SimulatorFeatures.DELETING,
    SimulatorFeatures.SPAWNING_RESOURCE_STRING,
    SimulatorFeatures.SIMULATION_RESET_SPAWNED,
)
#: The features of :data:`FEATURES` a robot with loop closures (a closed chain) does not have:
#: targets are not supported with one (nothing spawned, nothing to delete).
TARGET_FEATURES = (
    SimulatorFeatures.SPAWNING,
    SimulatorFeatures.DELETING,
    SimulatorFeatures.SPAWNING_RESOURCE_STRING,
)
#: Formats ``spawn_entity`` takes (``GetSimulatorFeatures.spawn_formats``).
SPAWN_FORMATS = ('urdf', 'yaml')
#: A name the scene keeps for the robot's bodies (``robot/<link>`` in events): no target's.
RESERVED_NAME = 'robot'
STATE_NAMES = {
    SimulationState.STATE_STOPPED: 'stopped',
    SimulationState.STATE_PLAYING: 'playing',
    SimulationState.STATE_PAUSED: 'paused',
    SimulationState.STATE_QUITTING: 'quitting',
    SimulationState.STATE_NO_WORLD: 'no world',
    SimulationState.STATE_LOADING_WORLD: 'loading world',
}
#: Wall time [s] between the answer to ``set_simulation_state`` quitting and the shutdown.
QUIT_DELAY = 0.5
#: Most steps one ``step_simulation`` or ``simulate_steps`` request may ask for (11.6 days of
#: simulated time at 1 kHz); a request for more is refused.
MAX_STEPS = 10**9
#: Tolerance on the norm of a quaternion taken as a unit one (then normalized).
QUATERNION_TOLERANCE = 1e-3
_RESET_SCOPES = (
    ResetSimulation.Request.SCOPE_TIME
    | ResetSimulation.Request.SCOPE_STATE
    | ResetSimulation.Request.SCOPE_SPAWNED
)


class RequestError(Exception):
    """A request refused with a ``simulation_interfaces/Result`` code and message.

    Parameters
    ----------
    code : int
        A ``simulation_interfaces/Result`` code.
    message : str
    """

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = int(code)


@dataclass
class StepJob:
    """Steps for the physics thread to integrate while the simulation is paused.

    Attributes
    ----------
    steps : int
        Steps asked for (>= 1).
    progress : callable or None
        ``progress(completed, remaining)``, called by the physics thread after each batch.
    cancelled : callable
        Checked by the physics thread before each batch; True ends the job early.
    reply : Future
        Result ``(completed, cancelled, time_ns)``, or a :class:`RequestError`.
    """

    steps: int
    progress: Callable[[int, int], None] | None = None
    cancelled: Callable[[], bool] = lambda: False
    reply: Future = field(default_factory=Future)
    completed: int = 0


def _result(code: int = Result.RESULT_OK, message: str = '') -> Result:
    return Result(result=int(code), error_message=message)


def _fresh_name(stem: str, taken: set[str]) -> str:
    """``<stem>_<k>`` for the least ``k`` >= 1 not in ``taken``."""
    return next(f'{stem}_{k}' for k in range(1, len(taken) + 2) if f'{stem}_{k}' not in taken)


class SimulationInterfaces:
    """Serves ``simulation_interfaces`` for a simulator node (module docstring).

    Parameters
    ----------
    node : rclpy Node
        The simulator node, which also provides (duck-typed, the physics-thread protocol of
        ``ffsim_ros.simulator.Simulator``): ``run_physics(action, publish)`` (run
        ``action(engine)`` in the physics thread and return its value), ``submit_steps(job)``
        (a :class:`StepJob`), and for the actions run there, ``engine``, ``stopped``,
        ``reset_clock()``, ``end_step_jobs(why)`` (end the running step job, its reply
        saying why) and ``announce_reset(what)`` (the robot's state was reset or set:
        :mod:`.resets`); ``model`` and ``world`` (frame id); ``request_quit()`` (end the
        node, any thread).
    """

    def __init__(self, node: Node) -> None:
        self.node = node
        self.entity = node.model.name
        # one step job at a time: the one running holds this (and is kept to describe it)
        self._step_slot = threading.Lock()
        self._running_job: StepJob | None = None
        self.quitting = False  # (set_simulation_state quitting: the node shuts down)
        group = ReentrantCallbackGroup()  # the callbacks wait for the physics thread
        services = (
            (GetSimulatorFeatures, 'get_simulator_features', self._features),
            (ResetSimulation, 'reset_simulation', self._reset),
            (GetSimulationState, 'get_simulation_state', self._get_state),
            (SetSimulationState, 'set_simulation_state', self._set_state),
            (StepSimulation, 'step_simulation', self._step),
            (GetEntities, 'get_entities', self._entities),
            (GetEntitiesStates, 'get_entities_states', self._entities_states),
            (GetEntityState, 'get_entity_state', self._get_entity),
            (SetEntityState, 'set_entity_state', self._set_entity),
            (SpawnEntity, 'spawn_entity', self._spawn),
            (DeleteEntity, 'delete_entity', self._delete),
        )
        self.services = [
            node.create_service(
                srv,
                f'~/{name}',
                self._guarded(callback),
                qos_profile=SERVICE_QOS,  # (bursts: SERVICE_QUEUE_DEPTH requests queued)
                callback_group=group,
            )
            for srv, name, callback in services
        ]
        self.action = ActionServer(
            node,
            SimulateSteps,
            '~/simulate_steps',
            execute_callback=self._simulate_steps,
            goal_callback=lambda goal: GoalResponse.ACCEPT,
            cancel_callback=lambda goal_handle: CancelResponse.ACCEPT,
            callback_group=group,
            goal_service_qos_profile=SERVICE_QOS,
            result_service_qos_profile=SERVICE_QOS,
            cancel_service_qos_profile=SERVICE_QOS,
            feedback_pub_qos_profile=QoSProfile(depth=100),  # a burst per publish period
        )

    def destroy(self) -> None:
        """Destroy the action server (the services go with the node)."""
        self.action.destroy()

    # ---------------------------------------------------------------- service plumbing
    def _guarded(self, callback: Callable) -> Callable:
        """``callback(request, response)`` with a :class:`RequestError` (or a failure of the
        physics thread) answered as the response's ``result``, logged (throttled)."""

        def serve(request: Any, response: Any) -> Any:
            try:
                return callback(request, response)
            except (RequestError, EntityError) as exc:  # (both carry a result code)
                response.result = _result(exc.code, str(exc))
            except RuntimeError as exc:  # the physics thread is gone or did not answer
                response.result = _result(Result.RESULT_OPERATION_FAILED, str(exc))
            self.node.get_logger().warning(
                f'{type(request).__name__.split("_")[0]}: {response.result.error_message}',
                throttle_duration_sec=1.0,
            )
            return response

        return serve

    def _physics(self, action: Callable[[Engine], T], publish: bool = False) -> T:
        """Run ``action(engine)`` in the physics thread; a ValueError becomes an
        OPERATION_FAILED result naming it."""
        try:
            return self.node.run_physics(action, publish)
        except ValueError as exc:
            raise RequestError(Result.RESULT_OPERATION_FAILED, str(exc)) from None

    # ----------------------------------------------------------------------- simulation
    def _features(
        self, request: GetSimulatorFeatures.Request, response: GetSimulatorFeatures.Response
    ) -> GetSimulatorFeatures.Response:
        if self.node.engine.chain is not None:  # (no targets with loop closures)
            response.features = SimulatorFeatures(
                features=[f for f in FEATURES if f not in TARGET_FEATURES],
                spawn_formats=[],
                custom_info=(
                    f'ffsim_ros: one free-floating robot with loop closures, entity '
                    f'{self.entity!r} (its base link); no targets (not supported with a closed '
                    f'chain); physics step {self.node.engine.dt_ns} ns; resets of time and '
                    'state (the spawned scope: nothing to remove), stepping while paused '
                    '(exact in simulated time)'
                ),
            )
            return response
        response.features = SimulatorFeatures(
            features=list(FEATURES),
            spawn_formats=list(SPAWN_FORMATS),
            custom_info=(
                f'ffsim_ros: one free-floating robot, entity {self.entity!r} (its base link), '
                'and free-floating targets (their root link; spawned from URDF or a YAML '
                f'primitive); physics step {self.node.engine.dt_ns} ns; resets of time, '
                'state and spawned targets, stepping while paused (exact in simulated time)'
            ),
        )
        return response

    def state_of(self) -> int:
        """The ``SimulationState`` now (physics thread): stopped, paused (also while a fault
        stops the integration: the clock does not move) or playing.

        Returns
        -------
        int
            ``SimulationState.STATE_*``.
        """
        host = self.node
        if self.quitting:
            return SimulationState.STATE_QUITTING
        if host.stopped:
            return SimulationState.STATE_STOPPED
        engine = host.engine
        if engine.paused or engine.faulted:
            return SimulationState.STATE_PAUSED
        return SimulationState.STATE_PLAYING

    def _get_state(
        self, request: GetSimulationState.Request, response: GetSimulationState.Response
    ) -> GetSimulationState.Response:
        def read(engine: Engine) -> tuple[int, str]:
            return self.state_of(), engine.fault

        state, fault = self._physics(read)
        response.state = SimulationState(state=state)
        response.result = _result(
            message=f'integration stopped: {fault} (reset or set the entity state)'
            if fault
            else ''
        )
        return response

    def _set_state(
        self, request: SetSimulationState.Request, response: SetSimulationState.Response
    ) -> SetSimulationState.Response:
        target = request.state.state
        if target not in (
            SimulationState.STATE_STOPPED,
            SimulationState.STATE_PLAYING,
            SimulationState.STATE_PAUSED,
            SimulationState.STATE_QUITTING,
        ):
            name = STATE_NAMES.get(target, 'unknown')
            raise RequestError(
                Result.RESULT_FEATURE_UNSUPPORTED,
                f'state: expected 0 (stopped), 1 (playing), 2 (paused) or 3 (quitting), got '
                f'{target} ({name})',
            )
        host = self.node
        code = SetSimulationState.Response

        def apply(engine: Engine) -> str:
            current = self.state_of()
            if self.quitting and target != current:
                raise RequestError(
                    code.STATE_TRANSITION_ERROR,
                    f'the simulator is quitting: no transition to {STATE_NAMES[target]}',
                )
            if target == current:
                if target == SimulationState.STATE_PAUSED:
                    engine.pause()  # (a fault reads as paused: now it is)
                raise RequestError(code.ALREADY_IN_TARGET_STATE, f'already {STATE_NAMES[target]}')
            if target == SimulationState.STATE_QUITTING:  # stopped first, as the standard says
                stop = 'stopped already'
                if current != SimulationState.STATE_STOPPED:
                    engine.pause()
                    stop = f'stopped: reset {self.reset_scopes(engine, _RESET_SCOPES, "quitting")}'
                    host.stopped = True
                self.quitting = True
                return f'quitting: {stop}; the simulator exits in {QUIT_DELAY:g} s'
            if target == SimulationState.STATE_STOPPED:  # pausing and a reset of everything
                engine.pause()
                done = self.reset_scopes(engine, _RESET_SCOPES, 'stopping')
                host.stopped = True
                return f'stopped: reset {done}, paused'
            if target == SimulationState.STATE_PAUSED:
                engine.pause()
            else:
                try:
                    engine.resume()
                except RuntimeError as exc:  # EngineFault
                    raise RequestError(code.STATE_TRANSITION_ERROR, str(exc)) from None
            host.stopped = False
            return (
                f'{STATE_NAMES[current]} -> {STATE_NAMES[target]} at sim time {engine.time:.9f} s'
            )

        stopping = target in (SimulationState.STATE_STOPPED, SimulationState.STATE_QUITTING)
        response.result = _result(message=self._physics(apply, publish=stopping))
        if target == SimulationState.STATE_QUITTING:
            host.get_logger().info(f'set_simulation_state: {response.result.error_message}')
            quit_timer = threading.Timer(QUIT_DELAY, host.request_quit)
            quit_timer.daemon = True
            quit_timer.start()
        return response

    def _reset(
        self, request: ResetSimulation.Request, response: ResetSimulation.Response
    ) -> ResetSimulation.Response:
        scope = request.scope
        req = ResetSimulation.Request
        if scope in (req.SCOPE_DEFAULT, req.SCOPE_ALL):
            scope = _RESET_SCOPES
        elif scope & ~_RESET_SCOPES:
            raise RequestError(
                Result.RESULT_FEATURE_UNSUPPORTED,
                f'scope: expected 0 or 255 (all), or a sum of 1 (time), 2 (state) and 4 '
                f'(spawned), got {scope}',
            )

        def reset(engine: Engine) -> str:
            return f'reset {self.reset_scopes(engine, scope, "reset_simulation")}'

        response.result = _result(message=self._physics(reset, publish=True))
        return response

    def reset_scopes(self, engine: Engine, scope: int, source: str) -> str:
        """Reset the scopes of ``scope`` (a sum of ``ResetSimulation`` scopes; physics thread),
        end the running step job ("ended by ``source``"); what was done, worded. A reset of
        the state is announced (``announce_reset``, naming ``source``).

        The spawned targets go first (a change of targets: refused while a wrench is held, so
        the reset of the state clears the held inputs before; nothing is changed when nothing
        was spawned -- e.g. with a closed chain, which has no targets), then the state (the
        initial one, inputs cleared: :meth:`ffsim_ros.sim.Engine.reset`), then the time.

        Parameters
        ----------
        engine : Engine
        scope : int
            ``ResetSimulation.Request.SCOPE_*`` flags, summed.
        source : str
            What asked for it (``reset_simulation``, ``stopping``).

        Returns
        -------
        str
        """
        req = ResetSimulation.Request
        what = []
        if scope & req.SCOPE_STATE:
            engine.clear_efforts()
            engine.clear_base_wrench()
            engine.set_link_wrenches({})
        if scope & req.SCOPE_SPAWNED:
            spawned = engine.world.spawned if engine.world is not None else ()
            if spawned:

                def remove(world: TargetWorld) -> None:
                    if world.holding in spawned:
                        world.release()
                    for name in spawned:
                        world.remove(name)

                engine.change_world(remove, resetting=bool(scope & req.SCOPE_STATE))
            what.append(f'spawned ({len(spawned)} targets removed)')
        if scope & req.SCOPE_STATE:
            engine.reset()
            world = engine.world
            left = world.left_out if world is not None else []
            shadowed = world.shadowed if world is not None else []
            what.append(
                'state (inputs cleared'
                + (f'; targets left out, overlapping the robot: {left}' if left else '')
                + (
                    f'; scenario targets not restored, their names used by spawned ones: '
                    f'{shadowed}'
                    if shadowed
                    else ''
                )
                + ')'
            )
        if scope & req.SCOPE_TIME:
            self.node.reset_clock()
            what.append('time')
        if scope & req.SCOPE_STATE:
            self.node.announce_reset(f'{source}: {" and ".join(what)}')
        self.node.end_step_jobs(f'ended by {source}')
        return f'{" and ".join(what)}: sim time {engine.time:.9f} s'

    # ------------------------------------------------------------------------- stepping
    def _checked_steps(self, steps: int) -> None:
        if not 1 <= steps <= MAX_STEPS:
            raise RequestError(
                Result.RESULT_OPERATION_FAILED,
                f'steps: expected 1 to {MAX_STEPS} (more: in several requests), got {steps}',
            )

    def _wait(self, job: StepJob) -> tuple[int, bool, int]:
        """Hand ``job`` to the physics thread and wait for it (as long as it takes, while the
        node lives); refused at once while another job runs (one executor thread waits at
        most, the others serve the node)."""
        if not self._step_slot.acquire(blocking=False):
            running = self._running_job
            what = (
                f' ({running.completed} of {running.steps} steps done)'
                if running is not None
                else ''
            )
            raise RequestError(
                Result.RESULT_OPERATION_FAILED,
                f'expected no step job running, got one{what}: wait for its end, cancel it '
                '(simulate_steps), or end it with set_simulation_state or reset_simulation; '
                'no step made',
            )
        try:
            self._running_job = job
            self.node.submit_steps(job)
            context = self.node.context
            while True:
                try:
                    return job.reply.result(timeout=0.5)
                except FutureTimeout:
                    if not rclpy.ok(context=context):
                        raise RuntimeError('the simulator is shutting down') from None
        finally:
            self._running_job = None
            self._step_slot.release()

    def _step(
        self, request: StepSimulation.Request, response: StepSimulation.Response
    ) -> StepSimulation.Response:
        self._checked_steps(request.steps)
        completed, _, time_ns = self._wait(StepJob(int(request.steps)))
        response.result = _result(message=f'{completed} steps: sim time {time_ns * 1e-9:.9f} s')
        return response

    def _simulate_steps(self, goal_handle: ServerGoalHandle) -> SimulateSteps.Result:
        steps = int(goal_handle.request.steps)
        out = SimulateSteps.Result()

        def progress(completed: int, remaining: int) -> None:  # in the physics thread
            goal_handle.publish_feedback(
                SimulateSteps.Feedback(completed_steps=completed, remaining_steps=remaining)
            )

        try:
            self._checked_steps(steps)
            completed, cancelled, time_ns = self._wait(
                StepJob(steps, progress, lambda: goal_handle.is_cancel_requested)
            )
        except (RequestError, RuntimeError) as exc:
            code = exc.code if isinstance(exc, RequestError) else Result.RESULT_OPERATION_FAILED
            out.result = _result(code, str(exc))
            goal_handle.abort()
            return out
        text = f'{completed} of {steps} steps: sim time {time_ns * 1e-9:.9f} s'
        if cancelled:
            out.result = _result(message=f'canceled after {text}')
            goal_handle.canceled()
        else:
            out.result = _result(message=text)
            goal_handle.succeed()
        return out

    # ------------------------------------------------------------------------- entities
    def _matching(self, filters: EntityFilters) -> list[str]:
        if filters.categories or filters.tags.tags:
            raise RequestError(
                Result.RESULT_FEATURE_UNSUPPORTED,
                'filters: entity categories and tags are not supported (filter by name)',
            )
        sphere = sphere_bounds(filters.bounds)  # (None: no bounds)
        problem = name_filter_problem(filters.filter)
        if problem is not None:
            raise RequestError(Result.RESULT_OPERATION_FAILED, f'filters.filter: {problem}')
        pattern = compile_name_filter(filters.filter)

        def names(engine: Engine) -> tuple[str, ...]:
            if sphere is None:
                return (self.entity, *engine.world.targets)
            robot, targets = engine.world.near_sphere(*sphere, engine.snapshot().q)
            return (self.entity,) * robot + tuple(targets)

        return [name for name in self._physics(names) if pattern.search(name)]

    def _entities(
        self, request: GetEntities.Request, response: GetEntities.Response
    ) -> GetEntities.Response:
        response.entities = self._matching(request.filters)
        response.result = _result()
        return response

    def _entity_state(self, name: str = '', snap: Snapshot | None = None) -> EntityState:
        snap = self._physics(lambda engine: engine.snapshot()) if snap is None else snap
        if name and name != self.entity:
            if snap.world is None or name not in snap.world.targets:
                raise RequestError(Result.RESULT_NOT_FOUND, f'target {name!r} went away')
            return entity_state(snap, name, self.node.world)
        state = EntityState()
        state.header.stamp = to_stamp(snap.time_ns)
        state.header.frame_id = self.node.world
        p, o = state.pose.position, state.pose.orientation
        p.x, p.y, p.z = snap.base_position.tolist()
        o.x, o.y, o.z, o.w = snap.base_orientation.tolist()
        lin, ang = state.twist.linear, state.twist.angular
        lin.x, lin.y, lin.z = snap.base_linear_velocity.tolist()
        ang.x, ang.y, ang.z = snap.base_angular_velocity.tolist()
        return state

    def _entities_states(
        self, request: GetEntitiesStates.Request, response: GetEntitiesStates.Response
    ) -> GetEntitiesStates.Response:
        response.entities = self._matching(request.filters)
        snap = self._physics(lambda engine: engine.snapshot())
        there = set(snap.world.targets) if snap.world is not None else set()
        # (without the targets that went between the two calls)
        response.entities = [n for n in response.entities if n == self.entity or n in there]
        response.states = [self._entity_state(name, snap) for name in response.entities]
        response.result = _result()
        return response

    def _known(self, entity: str) -> None:
        names = self._physics(lambda engine: (self.entity, *engine.world.targets))
        if entity not in names:
            raise RequestError(
                Result.RESULT_NOT_FOUND,
                f'unknown entity {entity!r}: expected one of {list(names)}',
            )

    def _get_entity(
        self, request: GetEntityState.Request, response: GetEntityState.Response
    ) -> GetEntityState.Response:
        self._known(request.entity)
        response.state = self._entity_state(request.entity)
        response.result = _result()
        return response

    def _set_entity(
        self, request: SetEntityState.Request, response: SetEntityState.Response
    ) -> SetEntityState.Response:
        self._known(request.entity)
        state = request.state
        invalid = SetEntityState.Response.INVALID_POSE
        frame = state.header.frame_id
        if frame not in ('', self.node.world):
            raise RequestError(
                Result.RESULT_NOT_FOUND,
                f'state.header.frame_id: expected {self.node.world!r} (or empty), got {frame!r}',
            )
        p, o = state.pose.position, state.pose.orientation
        lin, ang = state.twist.linear, state.twist.angular
        position = {f'state.pose.position.{k}': getattr(p, k) for k in 'xyz'}
        quaternion = {f'state.pose.orientation.{k}': getattr(o, k) for k in 'xyzw'}
        twist = {f'state.twist.linear.{k}': getattr(lin, k) for k in 'xyz'}
        twist |= {f'state.twist.angular.{k}': getattr(ang, k) for k in 'xyz'}
        check_values(position, MAX_POSITION, invalid)  # (the bound of spawn_entity too)
        check_values(quaternion, 2.0, invalid)
        check_values(twist, MAX_TWIST, invalid)
        accel = state.acceleration  # ignored, as the standard allows; a NaN is still refused
        acceleration = {f'state.acceleration.linear.{k}': getattr(accel.linear, k) for k in 'xyz'}
        acceleration |= {
            f'state.acceleration.angular.{k}': getattr(accel.angular, k) for k in 'xyz'
        }
        check_values(acceleration, np.inf, invalid)
        quat = np.array(list(quaternion.values()))
        norm = float(np.linalg.norm(quat))
        if abs(norm - 1.0) > QUATERNION_TOLERANCE:
            raise RequestError(
                invalid,
                f'state.pose.orientation: expected a unit quaternion (x, y, z, w; norm 1 within '
                f'{QUATERNION_TOLERANCE:g}), got {quat.tolist()} of norm {norm:.6g}',
            )
        values = [list(d.values()) for d in (position, twist)]
        model, host = self.node.model, self.node
        robot = request.entity == self.entity  # (the physics step is fixed: read here)
        who = 'the base' if robot else f'target {request.entity!r}'
        try:
            check_spin('state.twist.angular', values[1][3:], host.engine.dt, invalid, who)
        except EntityError as exc:
            raise RequestError(exc.code, str(exc)) from None
        if request.entity != self.entity:
            name = request.entity

            def move_one(engine: Engine) -> str:
                _, jumped = engine.change_world(
                    lambda world: move_target(
                        world, name, values[0], quat, values[1][:3], values[1][3:]
                    )
                )
                host.stopped = False
                return f'{name}: state set at sim time {jumped.time:.9f} s'

            response.result = _result(message=self._physics(move_one, publish=True))
            return response

        def move(engine: Engine) -> str:
            q_base, v_base = D.base_state_from_link(
                model, values[0], quat, values[1][:3], values[1][3:]
            )
            snap = engine.snapshot()
            jumped = engine.set_state(np.r_[q_base, snap.q[7:]], np.r_[v_base, snap.v[6:]])
            host.stopped = False
            host.announce_reset(f'set_entity_state: the base state of {self.entity!r} set')
            return f'{self.entity}: base state set at sim time {jumped.time:.9f} s'

        response.result = _result(message=self._physics(move, publish=True))
        return response

    def _spawn(
        self, request: SpawnEntity.Request, response: SpawnEntity.Response
    ) -> SpawnEntity.Response:
        code = SpawnEntity.Response
        if self.node.engine.chain is not None:
            raise RequestError(
                Result.RESULT_FEATURE_UNSUPPORTED,
                'spawning: targets are not supported with a closed chain (loops)',
            )
        if request.entity_namespace:
            raise RequestError(
                code.NAMESPACE_INVALID,
                f'entity_namespace: expected empty (target frames are target/<name>), got '
                f'{request.entity_namespace!r}',
            )
        name, namespace = request.name, self.node.get_namespace()
        if name == RESERVED_NAME:
            raise RequestError(
                code.NAME_INVALID,
                f"name: expected another name than {RESERVED_NAME!r} (reserved: the robot's "
                'bodies are robot/<link> in scene_events)',
            )
        taken = self._physics(self._taken)
        if (not name or name in taken) and not request.allow_renaming:
            raise RequestError(
                code.NAME_NOT_UNIQUE if name else code.NAME_INVALID,
                f'name: expected a new name (not one of {sorted(taken)}), got {name!r}; '
                'or set allow_renaming',
            )
        stem = name or 'target'
        first = name if name and name not in taken else _fresh_name(stem, taken)
        problem = target_name_problem(first, namespace)
        if problem is not None:  # (its topics could not be made: checked before any change)
            raise RequestError(code.NAME_INVALID, problem)
        try:
            target = parse_spawn(request, first, self.node.world, self.node.engine.dt)
        except EntityError as exc:
            raise RequestError(exc.code, str(exc)) from None
        host = self.node

        def spawn(engine: Engine) -> tuple[str, str]:
            # the name is final here, where the spawns are applied one at a time (a wrench held
            # is refused by change_world: the scene steps without external wrenches)
            spawned, now = target, self._taken(engine)
            if first in now:  # taken since the check above
                if not request.allow_renaming:
                    raise RequestError(
                        code.NAME_NOT_UNIQUE,
                        f'name: {first!r} was taken by another spawn before this one was '
                        'applied; or set allow_renaming',
                    )
                fresh = _fresh_name(stem, now)
                problem = target_name_problem(fresh, namespace)
                if problem is not None:
                    raise RequestError(code.NAME_INVALID, problem)
                spawned = dataclasses.replace(target, name=fresh)
            _, jumped = engine.change_world(lambda world: world.add(spawned))
            host.stopped = False  # (no longer the reset state)
            return spawned.name, f'{spawned.name}: spawned at sim time {jumped.time:.9f} s'

        response.entity_name, message = self._physics(spawn, publish=True)
        response.result = _result(message=message)  # (its topics: made in the physics thread)
        return response

    def _taken(self, engine: Engine) -> set[str]:
        """The names a spawned target cannot have now (physics thread)."""
        return {self.entity, RESERVED_NAME, *engine.world.targets}

    def _delete(
        self, request: DeleteEntity.Request, response: DeleteEntity.Response
    ) -> DeleteEntity.Response:
        name = request.entity
        if name == self.entity:
            raise RequestError(
                Result.RESULT_OPERATION_FAILED,
                f'entity: {name!r} is the robot, which cannot be deleted (only targets)',
            )
        self._known(name)

        def delete(engine: Engine) -> str:
            if name not in engine.world.targets:  # deleted or reset since the check above
                raise gone(name)
            _, jumped = engine.change_world(lambda world: world.remove(name))
            self.node.stopped = False  # (no longer the reset state)
            return f'{name}: deleted at sim time {jumped.time:.9f} s'

        response.result = _result(message=self._physics(delete, publish=True))
        return response
