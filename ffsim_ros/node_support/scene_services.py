"""The simulator's target interfaces (ROS wiring; the physics stays in its thread).

Publishes what :mod:`.scene_support` builds (target TF, ``targets/<name>/odom``,
``scene_events``, ``scene_markers``, ``grasp_wrench``), serves ``~/grasp`` and ``~/release``
(std_srvs/Trigger:
:meth:`ffsim_ros.scene.Scene.grasp` / ``release``; a refused grasp answers ``success`` false
with the reason, e.g. ``client/bar outside its capture envelope: distance 0.155 > 0.05``, and
changes nothing), and gives :mod:`.sim_interfaces` the target entities: their names, states,
spawning, moving and deleting.

**Spawning** (``simulation_interfaces/SpawnEntity``): the resource is a URDF (``uri`` a
``.urdf`` file, or ``resource_string`` URDF XML: a free-floating multibody with its
``<collision>`` primitives) or a primitive described in YAML (``uri`` a ``.yaml`` file, or
``resource_string`` a YAML mapping; with both, ``uri``: "If uri field is not empty,
resource_string field will be ignored") with the keys of a scenario target
(:func:`ffsim_ros.scene.target_from_dict`): ``shape``, ``mass``, ``inertia``,
``linear_velocity``, ``angular_velocity``, ``tumble``, ``handles``, e.g.
``{shape: {type: sphere, radius: 0.2}, mass: 40, handles: [{name: bar, link: body,
translation: [-0.25, 0, 0]}]}``. The pose is ``initial_pose`` (in ``world_frame``), not the
description's (``position``/``orientation`` there are refused; with ``tumble`` the
orientation comes from the tumble and ``initial_pose`` must leave it at identity). A spawn
that overlaps the robot or another target, or is otherwise refused, changes nothing and
answers the reason.

**Names.** A target's name is a token of its topics (:func:`.target_names.target_topics`:
``targets/<name>/odom``): ASCII letters, digits and underscores, not starting with a digit,
short enough for those topics to be valid ROS names
(:func:`.target_names.target_name_problem`); a spawn under another name is refused
(``NAME_INVALID``) before anything changes, a scenario target under one ends the simulator's
start (:func:`.scene_support.world_setup`).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Collection
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import unquote, urlsplit

import numpy as np
from diagnostic_msgs.msg import DiagnosticArray
from geometry_msgs.msg import Pose, WrenchStamped
from nav_msgs.msg import Odometry
from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy
from simulation_interfaces.msg import EntityState, Result
from simulation_interfaces.srv import SpawnEntity
from std_srvs.srv import Trigger
from visualization_msgs.msg import MarkerArray

import ffsim_ros.dynamics as D
from ffsim_ros.dynamics.integration import MAX_STEP_ROTATION
from ffsim_ros.scene import ContactEvent, ScenarioError, Target, target_from_dict, urdf_target

from ..dynamics.inputs import ArrayLike
from ..dynamics.yaml_input import load_yaml
from .common import ParameterValueError, read_robot_file, to_stamp
from .scene_support import TargetMessages, event_message
from .target_names import MAX_TOPIC_LENGTH, TARGET_TOPICS, target_name_problem, target_topics

if TYPE_CHECKING:
    from ffsim_ros.sim import Engine, Snapshot, TargetWorld

#: Depth of the ``scene_events`` queue (events come in bursts at impacts).
EVENT_QUEUE_DEPTH = 100
#: Depth of the request queue of the simulator's services and action servers (rclpy's
#: default, 10, dropped the rest of a burst silently: their callers waited forever; 100
#: answered 107 of a burst of 300 spawns; 1000 answers such a burst whole). A burst of more
#: requests than this, sent faster than they are served, still loses some (keep last: a
#: bounded queue; keep all answered bursts of 5000 but at 20000 lost requests too, or made
#: the clients' sends fail, and kept serving the requests of clients gone).
SERVICE_QUEUE_DEPTH = 1000
#: QoS of the simulator's services and action servers (reliable, volatile, keep last
#: :data:`SERVICE_QUEUE_DEPTH`).
SERVICE_QOS = QoSProfile(
    depth=SERVICE_QUEUE_DEPTH,
    history=HistoryPolicy.KEEP_LAST,
    reliability=ReliabilityPolicy.RELIABLE,
    durability=DurabilityPolicy.VOLATILE,
)
#: Largest position [m] and twist [m/s, rad/s] of an entity set or spawned (the bounds of the
#: simulator's ``initial_base_*`` parameters): beyond them the pose is outside the simulated
#: world (the dynamics lose their precision, then fail).
MAX_POSITION, MAX_TWIST = 1e6, 1e3


class EntityError(Exception):
    """A target request refused with a ``simulation_interfaces`` result code.

    Parameters
    ----------
    code : int
        The ``simulation_interfaces`` result code.
    message : str
    """

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = int(code)


def check_values(values: dict[str, float], bound: float, code: int) -> None:
    """Refuse values that are not finite or of magnitude beyond ``bound``.

    Parameters
    ----------
    values : dict
        The values, by the name of their field (named in the error).
    bound : float
        Largest magnitude taken.
    code : int
        The result code of the refusal.

    Raises
    ------
    EntityError
        With ``code``, naming the values that are not finite, else those beyond ``bound``.
    """
    bad = {k: v for k, v in values.items() if not math.isfinite(v)}
    if bad:
        raise EntityError(code, f'expected finite values, got {bad}')
    far = {k: v for k, v in values.items() if abs(v) > bound}
    if far:
        raise EntityError(code, f'expected values of magnitude <= {bound:g}, got {far}')


def check_spin(
    field: str, angular: ArrayLike, dt: float, code: int, who: str = 'the base'
) -> None:
    """Refuse an angular velocity ``angular`` (3,) [rad/s] (the request's ``field``) that
    turns ``who`` (the robot's base, a target) by pi rad or more in a physics step of ``dt``
    [s]: the step refuses it (a fault at the next step,
    :func:`~ffsim_ros.dynamics.integration.check_step_rotation`).

    Parameters
    ----------
    field : str
        The field of the request, named in the error.
    angular : (3,) array_like
        [rad/s].
    dt : float
        The physics step [s].
    code : int
        The result code of the refusal.
    who : str
        What turns, for the message.

    Raises
    ------
    EntityError
        With ``code``: the bound at this physics rate and the rotation per step.
    """
    spin = float(np.linalg.norm(np.asarray(angular, dtype=float)))
    if spin * dt >= MAX_STEP_ROTATION:
        raise EntityError(
            code,
            f'{field}: expected {who} to turn by less than pi rad per physics step (the step '
            f'refuses more), |w| below {MAX_STEP_ROTATION / dt:.4g} rad/s at physics_rate_hz '
            f'{1.0 / dt:g}, got |w| = {spin:.4g} rad/s ({spin * dt:.3g} rad per step)',
        )


def _finite_pose(pose: Pose, where: str) -> tuple[np.ndarray, np.ndarray]:
    """Position (3,) and unit quaternion (4,) of a ``geometry_msgs/Pose``, the position
    within ``MAX_POSITION``."""
    invalid = SpawnEntity.Response.INVALID_POSE
    p = {f'{where}.position.{k}': getattr(pose.position, k) for k in 'xyz'}
    o = {f'{where}.orientation.{k}': getattr(pose.orientation, k) for k in 'xyzw'}
    check_values(p | o, math.inf, invalid)
    check_values(p, MAX_POSITION, invalid)
    quat = np.array(list(o.values()))
    norm = float(np.linalg.norm(quat))
    if abs(norm - 1.0) > 1e-3:
        raise EntityError(
            invalid,
            f'{where}.orientation: expected a unit quaternion (x, y, z, w), got '
            f'{quat.tolist()} of norm {norm:.6g}',
        )
    return np.array(list(p.values())), quat / norm


def uri_path(uri: str) -> str:
    """The file path of a ``SpawnEntity.uri``: a path, or a ``file://`` URI.

    Parameters
    ----------
    uri : str

    Returns
    -------
    str

    Raises
    ------
    EntityError
        UNSUPPORTED_FORMAT for a URI of another scheme (``http://``, ``package://``: not
        fetched) or a ``file://`` URI of another host.
    """
    scheme = re.match(r'([A-Za-z][A-Za-z0-9+.-]*)://', uri)
    if scheme is None:
        return uri
    parts = urlsplit(uri)
    if parts.scheme.lower() != 'file':
        raise EntityError(
            SpawnEntity.Response.UNSUPPORTED_FORMAT,
            f'uri: expected a file path or a file:// URI, got {uri!r} (a {scheme.group(1)}:// '
            'URI: not fetched)',
        )
    if parts.netloc not in ('', 'localhost'):
        raise EntityError(
            SpawnEntity.Response.UNSUPPORTED_FORMAT,
            f'uri: expected a file:// URI of this host (file:///path), got {uri!r}',
        )
    return unquote(parts.path)


def _unreadable(path: Path, missing: int) -> int:
    """The ``SpawnEntity`` code for a file :func:`read_robot_file` refused: ``missing`` when
    there is none at ``path``, else RESOURCE_PARSE_ERROR (a directory, a device, a FIFO, too
    large, not text)."""
    return missing if not path.exists() else SpawnEntity.Response.RESOURCE_PARSE_ERROR


def parse_spawn(
    request: SpawnEntity.Request, name: str, world_frame: str, dt: float = 0.0
) -> Target:
    """The :class:`~ffsim_ros.scene.Target` a ``SpawnEntity`` request describes (module
    docstring), named ``name``.

    Parameters
    ----------
    request : SpawnEntity.Request
    name : str
        The target's name.
    world_frame : str
        The simulator's world frame id (the accepted ``initial_pose`` frame, with '').
    dt : float
        The physics step [s]: a target turning by pi rad or more in it is refused (0: not
        checked; the scene refuses it too, :func:`ffsim_ros.scene.targets.checked_state`).

    Returns
    -------
    Target

    Raises
    ------
    EntityError
        With the ``SpawnEntity.Response`` code (the standard's meanings): NO_RESOURCE when
        neither ``uri`` nor ``resource_string`` is given; UNSUPPORTED_FORMAT for a ``uri``
        that is not a ``.urdf`` or ``.yaml`` file (decided before reading it) or not a file
        path; ``Result.RESULT_NOT_FOUND`` when the ``uri`` file does not exist and
        MISSING_ASSETS when the ``urdf`` file of a YAML description does not; both files
        take the checks of :func:`~ffsim_ros.node_support.common.read_robot_file` (a regular
        file of at most 16 MiB, opened without blocking), RESOURCE_PARSE_ERROR otherwise, as
        for a description that does not parse (naming the field: ``resource.mass: ...``);
        INVALID_POSE, also for an ``angular_velocity`` (or a ``tumble``) turning the target
        by pi rad or more per physics step (:func:`check_spin`, the words of a set twist).
    """
    R = SpawnEntity.Response
    frame = request.initial_pose.header.frame_id
    if frame not in ('', world_frame):
        raise EntityError(
            R.INVALID_POSE,
            f'initial_pose.header.frame_id: expected {world_frame!r} (or empty), got {frame!r}',
        )
    position, quat = _finite_pose(request.initial_pose.pose, 'initial_pose.pose')
    uri, text = request.uri, request.resource_string
    if not uri and not text:
        raise EntityError(
            R.NO_RESOURCE,
            'expected uri (a .urdf or .yaml file) or resource_string (URDF XML or a YAML '
            'mapping), got neither',
        )
    base = Path.cwd()
    if uri:
        path = Path(uri_path(uri))
        if path.suffix not in ('.urdf', '.yaml', '.yml'):
            raise EntityError(
                R.UNSUPPORTED_FORMAT, f'uri: expected a .urdf or .yaml file, got {uri!r}'
            )
        try:
            source = read_robot_file(
                str(path), what='uri', content='a URDF or YAML description', text='text'
            )
        except ParameterValueError as exc:
            raise EntityError(_unreadable(path, Result.RESULT_NOT_FOUND), str(exc)) from None
        base = path.parent
        is_urdf = path.suffix == '.urdf'
    else:
        is_urdf, source = text.lstrip().startswith('<'), text
    try:
        if is_urdf:
            return urdf_target(name, source, position=position, orientation=quat)
        desc = load_yaml(source, 'resource')
    except ValueError as exc:  # UnknownNameError and YamlInputError are ValueErrors
        raise EntityError(R.RESOURCE_PARSE_ERROR, f'resource: {exc}') from None
    if not isinstance(desc, dict):
        raise EntityError(
            R.RESOURCE_PARSE_ERROR,
            f'resource: expected URDF XML or a YAML mapping, got {type(desc).__name__}',
        )
    for key in ('name', 'position', 'orientation'):
        if key in desc:
            raise EntityError(
                R.RESOURCE_PARSE_ERROR,
                f'resource.{key}: not in a spawned description (the name and initial_pose '
                'of the request give them)',
            )
    desc = {**desc, 'name': name, 'position': position.tolist()}
    if 'tumble' in desc:
        if not np.allclose(np.abs(quat), [0, 0, 0, 1], atol=1e-12):
            raise EntityError(
                R.INVALID_POSE,
                'initial_pose.pose.orientation: the description has a tumble, which sets the '
                f'orientation: expected identity, got {quat.tolist()}',
            )
    else:
        desc['orientation'] = quat.tolist()
    urdf = desc.get('urdf')
    if isinstance(urdf, str) and urdf:  # (else target_from_dict names what is wrong)
        # the checks of a uri (a regular file of at most 16 MiB, opened without blocking)
        # before target_from_dict reads it (a 1 GB file was read whole)
        try:
            read_robot_file(str(base / urdf), what='resource.urdf')
        except ParameterValueError as exc:
            raise EntityError(_unreadable(base / urdf, R.MISSING_ASSETS), str(exc)) from None
    try:
        target = target_from_dict(desc, 'resource', base)
    except ScenarioError as exc:
        raise EntityError(R.RESOURCE_PARSE_ERROR, str(exc)) from None
    if dt:  # (a URDF target starts at rest)
        field = f'resource.{"tumble" if "tumble" in desc else "angular_velocity"}'
        check_spin(field, target.v[3:6], dt, R.INVALID_POSE, f'target {name!r}')
    return target


def entity_state(snap: Snapshot, name: str, world_frame: str) -> EntityState:
    """``EntityState`` of target ``name`` in a simulator snapshot: the pose of its root link
    frame in world, the velocity of its origin and the angular velocity, world frame.

    Parameters
    ----------
    snap : Snapshot
    name : str
    world_frame : str

    Returns
    -------
    EntityState
    """
    root = snap.world.targets[name].root
    state = EntityState()
    state.header.stamp = to_stamp(snap.time_ns)
    state.header.frame_id = world_frame
    p, o = state.pose.position, state.pose.orientation
    p.x, p.y, p.z = root.position.tolist()
    o.x, o.y, o.z, o.w = root.orientation.tolist()
    lin, ang = state.twist.linear, state.twist.angular
    lin.x, lin.y, lin.z = root.linear_velocity.tolist()
    ang.x, ang.y, ang.z = root.angular_velocity.tolist()
    return state


def gone(name: str) -> EntityError:
    """The refusal of a request on target ``name`` that went (deleted, or removed by a reset)
    between the request's check and its turn in the physics thread.

    Parameters
    ----------
    name : str

    Returns
    -------
    EntityError
    """
    return EntityError(
        Result.RESULT_NOT_FOUND,
        f'unknown entity {name!r}: it went (deleted or reset) before the request was applied',
    )


def move_target(
    world: TargetWorld,
    name: str,
    position: ArrayLike,
    quat: ArrayLike,
    linear: ArrayLike,
    angular: ArrayLike,
) -> None:
    """Set target ``name``'s root link frame pose and twist (origin velocity, angular
    velocity; world frame), its joints kept (physics thread).

    Parameters
    ----------
    world : TargetWorld
    name : str
    position : (3,) array_like
        Root link frame origin, world frame [m].
    quat : (4,) array_like
        Its orientation (x, y, z, w) [-].
    linear, angular : (3,) array_like
        Origin velocity and angular velocity, world frame [m/s, rad/s].

    Raises
    ------
    EntityError
        RESULT_NOT_FOUND when there is no target ``name`` (any more: :func:`gone`).
    """
    spec = world.targets.get(name)
    if spec is None:
        raise gone(name)
    model = spec.model
    q, v = world.scene.target_state(name)
    q_base, v_base = D.base_state_from_link(model, position, quat, linear, angular)
    q1, v1 = np.r_[q_base, q[7:]], np.r_[v_base, v[6:]]
    com_velocity = D.momentum(model, q1, v1)[:3] / model.total_mass
    world.move(
        name,
        position=position,
        orientation=quat,
        linear_velocity=com_velocity,
        angular_velocity=angular,
    )


class SceneInterfaces:
    """Target topics and the grasp services of a simulator node (module docstring).

    Parameters
    ----------
    node : Simulator
        Provides ``run_physics(action, publish)``, ``engine`` (its ``world``), ``world``
        (frame id) and ``frame_prefix``.
    frame_prefix : str
        TF frame prefix of the targets' frames.
    """

    def __init__(self, node: Node, frame_prefix: str) -> None:
        self.node = node
        self.messages = TargetMessages(node.world, frame_prefix)
        reliable = QoSProfile(depth=EVENT_QUEUE_DEPTH, reliability=ReliabilityPolicy.RELIABLE)
        self.pub_events = node.create_publisher(DiagnosticArray, 'scene_events', reliable)
        self.pub_markers = node.create_publisher(MarkerArray, 'scene_markers', 10)
        self.pub_wrench = node.create_publisher(WrenchStamped, 'grasp_wrench', 10)
        self._odom: dict[str, object] = {}
        self._shown = False  # target markers on display
        # what publish() sent of the last instant, for late joiners (last_state)
        self._last: tuple[dict, list] = ({}, [])
        self._last_markers: MarkerArray | None = None  # the last target markers on display
        self.sync_topics(node.engine.world.targets)
        group = ReentrantCallbackGroup()
        for name, callback in (('grasp', self._on_grasp), ('release', self._on_release)):
            node.create_service(
                Trigger, f'~/{name}', callback, qos_profile=SERVICE_QOS, callback_group=group
            )

    def sync_topics(self, names: Collection[str]) -> None:
        """The per-target publishers (``targets/<name>/odom``) of exactly the targets
        ``names``: those of new targets created, those of targets gone destroyed (a spawn and
        delete of many names kept every publisher). Physics thread (and the constructor):
        where the targets change and publish, so none is published after its destruction.

        Parameters
        ----------
        names : collection of str
        """
        gone = [k for k in self._odom if k not in names]
        for name in gone:
            self._last[0].pop(self._odom[name], None)  # (never polled once destroyed)
            self.node.destroy_publisher(self._odom.pop(name))
        if gone:  # rclpy keeps the weak references of a destroyed publisher's QoS event
            # handlers in its callback group for ever (ros2/rclpy#1356): ~110 B a target
            entities = self.node.default_callback_group.entities  # (in place: no add lost)
            entities.difference_update([ref for ref in list(entities) if ref() is None])
        for name in names:
            if name not in self._odom:
                (topic,) = target_topics(name)
                self._odom[name] = self.node.create_publisher(Odometry, topic, 10)

    # --------------------------------------------------------------- physics thread
    def publish(self, snap: Snapshot, markers: bool) -> list:
        """Publish the targets' odometry, the events and (``markers``) the markers of
        ``snap``; return the targets' transforms (sent with the robot's). What was sent is
        kept for :meth:`last_state`.

        Parameters
        ----------
        snap : Snapshot
        markers : bool
            Whether to publish the markers.

        Returns
        -------
        list of TransformStamped
        """
        world = self.node.engine.world
        specs = world.targets
        if specs.keys() != self._odom.keys():  # targets spawned, deleted, reset
            self.sync_topics(specs)
        stamp = to_stamp(snap.time_ns)
        events = world.take_events()
        for time_ns, event in events:
            self.pub_events.publish(event_message(time_ns, event))
        if any(isinstance(e, ContactEvent) for _, e in events):
            self.pub_markers.publish(self.messages.contact_markers(events, stamp))
        scene = snap.world
        if scene is None:
            if self._shown:  # the last target went: clear its markers once
                self.pub_markers.publish(self.messages.markers(None, {}, set(), stamp))
                self._shown = False
            self._last, self._last_markers = ({}, []), None
            return []
        self._shown = True
        sent: dict = {}
        for name in scene.targets:
            pub = self._odom.get(name)
            if pub is not None:
                sent[pub] = self.messages.odometry(name, scene, stamp)
                pub.publish(sent[pub])
        wrench = None
        if scene.holding:
            wrench = self.messages.grasp_wrench(scene, world.scene.gripper, stamp)
            self.pub_wrench.publish(wrench)
        if markers:
            inside = {(c.target, c.handle) for c in world.scene.envelope_checks() if c.inside}
            self._last_markers = self.messages.markers(scene, specs, inside, stamp)
            self.pub_markers.publish(self._last_markers)
        if self._last_markers is not None:
            sent[self.pub_markers] = self._last_markers
        if wrench is not None:
            sent[self.pub_wrench] = wrench
        transforms = self.messages.transforms(scene, specs, stamp)
        self._last = (sent, transforms)
        return transforms

    def last_state(self) -> tuple[dict, list]:
        """What :meth:`publish` sent at the last published instant, for subscribers that
        join while the physics is idle (:mod:`.late_joiners`; physics thread): the targets'
        odometry, the last target markers (shapes and envelopes, of the last instant that
        had them: a tenth of the publish rate; the contact markers are events, left out),
        the grasp wrench while a target was held; not ``scene_events`` (an event log,
        :mod:`.late_joiners`).

        Returns
        -------
        tuple
            ``({publisher: message}, [TransformStamped])``: odometry, then ``scene_markers``,
            then ``grasp_wrench``; the targets' transforms. Empty without targets.
        """
        return self._last

    # ---------------------------------------------------------------- services
    def _on_grasp(self, request: Trigger.Request, response: Trigger.Response) -> Trigger.Response:
        def grasp(engine: Engine) -> tuple[bool, str]:
            world = engine.world
            snap = engine.snapshot()
            world.sync(snap.q, snap.v, snap.time_ns)
            if not world.holding:
                checks = world.scene.envelope_checks()
                if not any(c.inside for c in checks):
                    event = world.scene.grasp()  # the refusal, with its reason (no change)
                    return False, f'grasp refused: {event.reason}'
            event, jumped = engine.change_world(lambda w: w.grasp())
            if not event.captured:
                return False, f'grasp refused: {event.reason}'
            self.node.stopped = False  # (STATE_STOPPED is the reset state: no longer)
            return True, (  # (read back by grasped_target: keep the two together)
                f'captured {event.target}/{event.handle} at sim time {jumped.time:.6f} s: '
                f'impulse {np.round(event.impulse, 9).tolist()} N s, energy loss '
                f'{event.energy_loss:.6g} J'
            )

        response.success, response.message = self._call(grasp)
        return response

    def _on_release(
        self, request: Trigger.Request, response: Trigger.Response
    ) -> Trigger.Response:
        def release(engine: Engine) -> tuple[bool, str]:
            if not engine.world.holding:
                return False, 'release refused: not holding a target'
            event, jumped = engine.change_world(lambda w: w.release())
            self.node.stopped = False  # (STATE_STOPPED is the reset state: no longer)
            return True, f'released {event.target} at sim time {jumped.time:.6f} s'

        response.success, response.message = self._call(release)
        return response

    def _call(self, action: Callable[[Engine], tuple[bool, str]]) -> tuple[bool, str]:
        try:
            return self.node.run_physics(action, publish=True)
        except (ValueError, RuntimeError, EntityError) as exc:
            return False, str(exc)


def grasped_target(message: str) -> str | None:
    """The target a successful ``~/grasp`` reply names (``'captured <target>/<handle> at sim
    time ...'``, written by :class:`SceneInterfaces`), or None when the message is not of that
    form (the capture controller's check that the simulator welded its target).

    Parameters
    ----------
    message : str

    Returns
    -------
    str or None
    """
    match = re.match(r'captured ([^/]+)/.* at sim time ', message)  # (no '/' in a target name)
    return match.group(1) if match else None


__all__ = [
    'EVENT_QUEUE_DEPTH',
    'MAX_POSITION',
    'MAX_TOPIC_LENGTH',
    'MAX_TWIST',
    'SERVICE_QOS',
    'SERVICE_QUEUE_DEPTH',
    'TARGET_TOPICS',
    'EntityError',
    'SceneInterfaces',
    'check_spin',
    'check_values',
    'entity_state',
    'gone',
    'grasped_target',
    'uri_path',
    'move_target',
    'parse_spawn',
    'target_name_problem',
    'target_topics',
]
