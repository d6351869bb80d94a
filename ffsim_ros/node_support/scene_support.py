"""Targets in the simulator node: the scenario, the target world, and their messages.

The ``scenario`` parameter names a capture scenario (:mod:`ffsim_ros.scene.scenario`): a path
to its YAML file, or the name of a shipped one (``capture`` ->
``config/scenarios/capture.yaml``). Its robot section must describe the simulator's robot
(same joints and links: the simulator's model, with its gravity and joint dynamics, is the one
stepped); it gives the gripper, the links without collision shapes and, when the
``initial_joint_*`` parameters are left at their default, the initial joint positions and
rates. Its ``dt``, when given, must equal the physics step. Without a scenario the simulator
still has a (target-less) world, so targets can be spawned at run time: the gripper is then
:func:`default_gripper_link` (``ee_link``, or the first link named ``*ee_link``, on a moving
body, else the last link of the deepest moving body; none for a robot that is only a base:
``~/grasp`` then refuses, saying so), the robot's
``<collision>`` primitives come from its URDF (meshes ignored), the contact law is
:class:`~ffsim_ros.scene.ImpactLaw` with its defaults (restitution 0.5, no friction).

Messages (all stamped with the simulated time, frames prefixed by ``frame_prefix``):

* ``/tf``: ``world_frame -> target/<name>`` (the target's root link frame) and, for a URDF
  target, ``target/<name> -> target/<name>/<link>`` for its other links;
* ``targets/<name>/odom`` (nav_msgs/Odometry): pose of ``target/<name>`` in ``world_frame``,
  twist of that frame in its own axes (REP 105: the child frame);
* ``scene_events`` (diagnostic_msgs/DiagnosticArray, one message per event, stamped at the
  event's simulated time): :func:`event_status`;
* ``grasp_wrench`` (geometry_msgs/WrenchStamped, while a target is held): the weld's
  constraint force on the target at the gripper link's origin, in its axes
  (:meth:`TargetMessages.grasp_wrench`);
* ``scene_markers`` (visualization_msgs/MarkerArray): target shapes, the capture envelope of
  each handle (a sphere of its radius: green when the gripper is inside it, grey else, blue
  while held), contact points with impulse arrows (2 s lifetime).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from geometry_msgs.msg import Point, TransformStamped, WrenchStamped
from nav_msgs.msg import Odometry
from visualization_msgs.msg import Marker, MarkerArray

import ffsim_ros.dynamics as D
from ffsim_ros.dynamics.lie import matrix_to_quat, quat_to_matrix
from ffsim_ros.resources import SHIPPED_SCENARIOS, share_path
from ffsim_ros.scene import (
    Box,
    CaptureEvent,
    ContactEvent,
    Cylinder,
    Gripper,
    ImpactLaw,
    ReleaseEvent,
    ScenarioError,
    Scene,
    SceneSnapshot,
    Sphere,
    Target,
    scene_from_dict,
    shapes_from_urdf,
    target_from_dict,
)
from ffsim_ros.sim import TargetWorld

from ..dynamics.yaml_input import YamlInputError, load_yaml
from .common import ParameterValueError, read_robot_file, to_stamp
from .target_names import target_name_problem

#: The simulator's parameters a scenario's robot section sets when they are left at their
#: defaults: ``(parameter, robot field, the parameter's default values)``.
SCENARIO_INITIAL = (
    ('initial_joint_positions', 'joint_positions', ([], [0.0])),
    ('initial_joint_velocities', 'joint_velocities', ([], [0.0])),
    ('initial_base_position', 'base_position', ([0.0, 0.0, 0.0],)),
    ('initial_base_orientation', 'base_orientation', ([0.0, 0.0, 0.0, 1.0],)),
)
#: Lifetime of the contact markers [s].
CONTACT_MARKER_LIFETIME = 2.0
#: Length of an impulse arrow per N s [m].
IMPULSE_ARROW_SCALE = 0.5


def resolve_scenario(text: str, what: str = 'scenario') -> Path:
    """The file of a ``scenario`` value: a shipped name (:data:`SHIPPED_SCENARIOS`, from the
    package's share folder), else a path, a relative one taken from the node's working
    directory.

    Parameters
    ----------
    text : str
        A name of :data:`SHIPPED_SCENARIOS` or a path.
    what : str
        The parameter, for the message.

    Returns
    -------
    Path
        Existing, not checked to be a readable file.

    Raises
    ------
    ParameterValueError
        Listing the shipped names, when ``text`` is neither one of them nor an existing path.
    """
    if text in SHIPPED_SCENARIOS:
        return share_path('config', 'scenarios', f'{text}.yaml')
    path = Path(text)
    if not path.exists():
        raise ParameterValueError(
            f'{what}: expected a shipped scenario name {list(SHIPPED_SCENARIOS)} or a scenario '
            f'YAML file, got {text!r}: neither a shipped name nor a file (no such file)'
        )
    return path


def default_gripper_link(model: D.Model) -> str | None:
    """The gripper of a simulation without a scenario: a link on a moving body (the grasp
    welds a target to it), ``ee_link`` if it is one, else the first ``*ee_link``, else the last
    link of the deepest moving body (the end of the longest chain; the last of them at equal
    depth).

    Parameters
    ----------
    model : Model
        The robot.

    Returns
    -------
    str or None
        The link; None when the robot has no moving body (only its base: no grasp).
    """
    moving = [n for n in model.link_names if model.frame(n).body != 0]
    if not moving:
        return None
    for name in ('ee_link', *(n for n in moving if n.endswith('ee_link'))):
        if name in moving:
            return name
    parent = model.arrays.parent
    depth = [0] * len(parent)
    for body in range(1, len(parent)):  # (a parent's index is below its child's)
        depth[body] = depth[parent[body]] + 1
    deepest = max(range(len(parent)), key=lambda body: (depth[body], body))
    return [n for n in moving if model.frame(n).body == deepest][-1]


@dataclass
class WorldSetup:
    """What builds the simulator's :class:`~ffsim_ros.sim.TargetWorld` (:func:`world_setup`).

    ``joint_positions`` / ``joint_velocities``: the scenario's initial joints,
    ``base_position`` / ``base_orientation``: its base link frame pose in the world (None: not
    given)."""

    gripper: Gripper | None
    shapes: tuple
    contact: object
    targets: tuple[Target, ...]
    joint_positions: np.ndarray | None = None
    joint_velocities: np.ndarray | None = None
    base_position: np.ndarray | None = None
    base_orientation: np.ndarray | None = None
    source: str = ''

    def initial_values(self, values: dict) -> dict:
        """The node's parameter ``values`` with the scenario's initial joints and base pose
        where the ``initial_joint_*`` / ``initial_base_*`` parameters are left at their
        default (``[]`` or ``[0.0]``; the origin; the identity).

        Parameters
        ----------
        values : dict
            Checked parameter values by name.

        Returns
        -------
        dict
            A copy.
        """
        out = dict(values)
        for key, field in self._taken(values).items():
            out[key] = getattr(self, field).tolist()
        return out

    def value_names(self, values: dict) -> dict[str, str]:
        """The names of the values :meth:`initial_values` takes from the scenario, for the
        messages about them: ``{'initial_joint_positions': "scenario: '<file>':
        robot.joint_positions"}`` (a value from the scenario is named by its field, not by a
        parameter the user did not set)."""
        return {
            key: f'scenario: {self.source!r}: robot.{field}'
            for key, field in self._taken(values).items()
        }

    def _taken(self, values: dict) -> dict[str, str]:
        """``{parameter: field}`` of the scenario values that replace parameters left at
        their default."""
        return {
            key: field
            for key, field, defaults in SCENARIO_INITIAL
            if getattr(self, field) is not None and list(values[key]) in defaults
        }

    def placed(self, values: dict) -> tuple[WorldSetup, str]:
        """This set-up with its targets moved as the robot is when the
        ``initial_base_position`` parameter overrides the scenario's base position.

        The scenario's targets are world poses placed around its robot (``robot.base_position``,
        the origin when not given): a robot moved by the parameter (:meth:`initial_values`)
        would leave them behind, out of reach. They are translated by the same offset, the
        scenario's geometry relative to the base position kept (orientations, velocities and
        an ``initial_base_orientation`` override untouched).

        Parameters
        ----------
        values : dict
            The node's parameter values (``initial_base_position``).

        Returns
        -------
        setup : WorldSetup
            This one when nothing moves, else a copy with the targets translated.
        note : str
            The line to log saying so ('' when nothing moves).
        """
        given = [float(x) for x in values['initial_base_position']]
        if not self.targets or given == [0.0, 0.0, 0.0]:  # (the default: the scenario's)
            return self, ''
        scenario = np.zeros(3) if self.base_position is None else self.base_position
        offset = np.array(given) - scenario
        if not offset.any():
            return self, ''
        targets = tuple(
            replace(t, q=np.concatenate([t.q[:3] + offset, t.q[3:]])) for t in self.targets
        )
        note = (
            f'scenario: initial_base_position {given} overrides the base position '
            f'{scenario.tolist()} of {self.source}: its targets '
            f'({", ".join(t.name for t in targets)}) moved by {offset.tolist()} m with it'
        )
        return replace(self, targets=targets), note

    def world(self, model: D.Model, q0: np.ndarray, v0: np.ndarray, dt_ns: int) -> TargetWorld:
        """The world around the robot at ``(q0, v0)``.

        Parameters
        ----------
        model : Model
            The robot.
        q0 : (nq,) ndarray
            Robot configuration [m, -, rad | m], base parts in the world frame.
        v0 : (nv,) ndarray
            Robot velocity [m/s, rad/s, rad/s | m/s], base parts in the world frame.
        dt_ns : int
            Physics step [ns].

        Returns
        -------
        TargetWorld

        Raises
        ------
        ParameterValueError
            A target refused at the initial state (overlap, gravity), named.
        """
        try:
            scene = Scene(
                model,
                gripper=self.gripper,
                shapes=self.shapes,
                dt=dt_ns * 1e-9,
                contact=self.contact,
                q=q0,
                v=v0,
            )
            return TargetWorld(scene, self.targets, self.shapes)
        except ValueError as exc:  # UnknownNameError is one
            raise ParameterValueError(f'scenario: {self.source}: {exc}') from None


def _robot_shapes(urdf: str, model: D.Model, exclude: Any = ()) -> Any:
    """The robot's collision shapes of ``urdf`` (primitives; meshes left out), with one
    warning naming every link whose mesh was left out (one per mesh before: a robot from a
    CAD export printed dozens of lines)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter('always')
        shapes = shapes_from_urdf(urdf, model=model, meshes='ignore', exclude=exclude)
    meshes = []
    for w in caught:
        text = str(w.message)
        if 'ignored' in text:
            meshes.append(text.split(' <collision>')[0])
        else:
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    if meshes:
        warnings.warn(
            f'{len(meshes)} collision mesh(es) left out (contact with targets uses the '
            f'primitive shapes only): {", ".join(sorted(set(meshes)))}',
            stacklevel=3,
        )
    return shapes


def world_setup(
    scenario: str, model: D.Model, urdf: str, dt_ns: int, namespace: str = '/'
) -> WorldSetup:
    """The world of the ``scenario`` parameter ('' : no target, the defaults of the module
    docstring) of a simulator in ``namespace``.

    Parameters
    ----------
    scenario : str
        The ``scenario`` parameter: a shipped name, a path, or ''.
    model : Model
        The robot.
    urdf : str
        Its URDF text (collision shapes).
    dt_ns : int
        Physics step [ns].

    Returns
    -------
    WorldSetup

    Raises
    ------
    ParameterValueError
        Starting with ``scenario:`` and naming the file and field, e.g. a target name that is
        no token of its topics (:func:`.target_names.target_name_problem`: ``sat-1``, ``2nd``;
        rclpy refused its publisher, the node ended with a traceback).
    """
    if not scenario:
        shapes = _robot_shapes(urdf, model)
        link = default_gripper_link(model)
        gripper = None if link is None else Gripper(link)
        return WorldSetup(gripper, shapes, ImpactLaw(), ())
    path = resolve_scenario(scenario)
    where = f'scenario: {str(path)!r}'
    # read as robot_file is: a regular text file of at most 16 MiB, opened without blocking (a
    # FIFO hung the node beyond SIGTERM, /dev/zero filled the memory)
    text = read_robot_file(str(path), what='scenario', content='a scenario', text='YAML text')
    try:
        data = load_yaml(text, where)
    except YamlInputError as exc:
        raise ParameterValueError(str(exc)) from None
    if not isinstance(data, dict):
        raise ParameterValueError(f'{where}: expected a mapping, got {type(data).__name__}')
    targets = data.get('targets', [])
    try:
        alone = scene_from_dict({k: v for k, v in data.items() if k != 'targets'}, path.parent)
        if not isinstance(targets, list):
            raise ScenarioError(f'targets: expected a list, got {type(targets).__name__}')
        built = tuple(
            target_from_dict(t, f'targets[{k}]', path.parent) for k, t in enumerate(targets)
        )
    except ScenarioError as exc:
        raise ParameterValueError(f'{where}: {exc}') from None
    for k, target in enumerate(built):
        problem = target_name_problem(target.name, namespace)
        if problem is not None:
            raise ParameterValueError(f'{where}: targets[{k}].{problem}')
    theirs = alone.robot_model
    if (theirs.joint_names, theirs.link_names) != (model.joint_names, model.link_names):
        raise ParameterValueError(
            f'{where}: robot.urdf: expected the simulated robot {model.name!r} (joints '
            f'{list(model.joint_names)}), got {theirs.name!r} (joints {list(theirs.joint_names)})'
        )
    if 'dt' in data and abs(alone.dt - dt_ns * 1e-9) > 1e-15:
        raise ParameterValueError(
            f'{where}: dt: expected the physics step {dt_ns * 1e-9:g} s (physics_rate_hz), '
            f'got {alone.dt:g}'
        )
    robot = data['robot']
    exclude = [str(x) for x in robot.get('exclude_links', [])]
    shapes = _robot_shapes(urdf, model, exclude)
    q, v = alone.robot_state
    return WorldSetup(
        alone.gripper,
        shapes,
        alone.contact,
        built,
        q[7:] if 'joint_positions' in robot else None,
        v[6:] if 'joint_velocities' in robot else None,
        np.array(robot['base_position'], float) if 'base_position' in robot else None,
        np.array(robot['base_orientation'], float) if 'base_orientation' in robot else None,
        str(path),
    )


# ------------------------------------------------------------------------------------ messages
def _set_point(p: Any, xyz: np.ndarray) -> None:
    p.x, p.y, p.z = (float(x) for x in xyz)


def _set_quat(o: Any, xyzw: np.ndarray) -> None:
    o.x, o.y, o.z, o.w = (float(x) for x in xyzw)


def _floats(x: np.ndarray) -> str:
    return ' '.join(repr(float(v)) for v in np.ravel(x))


def event_status(event: ContactEvent | CaptureEvent | ReleaseEvent) -> DiagnosticStatus:
    """One event as a ``DiagnosticStatus``: ``name`` the kind (``impact``, ``contact``,
    ``capture``, ``release``), ``level`` OK (WARN for a refused grasp or release), ``message``
    a sentence, ``hardware_id`` the bodies (``robot/<link>|<target>/<link>``), ``values`` the
    figures in full precision (vectors as space-separated floats, world frame): contact:
    ``body_a``, ``body_b``, ``point`` [m], ``normal`` (from b into a), ``impulse`` on a [N s],
    ``relative_velocity`` before [m/s], ``energy_loss`` [J], ``sticking``; capture: ``target``,
    ``handle``, ``captured``, ``reason``, ``point``, ``impulse`` (6: on the target, force then
    torque about the point [N s, N m s]), ``energy_loss``; release: ``target``, ``released``,
    ``reason``.

    Parameters
    ----------
    event : ContactEvent, CaptureEvent or ReleaseEvent

    Returns
    -------
    DiagnosticStatus
    """
    s = DiagnosticStatus()
    if isinstance(event, ContactEvent):
        s.name = event.kind
        s.level = DiagnosticStatus.OK
        s.hardware_id = f'{event.body_a}|{event.body_b}'
        s.message = (
            f'{event.kind} {event.body_a} / {event.body_b}: impulse '
            f'{float(np.linalg.norm(event.impulse)):.6g} N s'
        )
        values = {
            'body_a': event.body_a,
            'body_b': event.body_b,
            'point': _floats(event.point),
            'normal': _floats(event.normal),
            'impulse': _floats(event.impulse),
            'relative_velocity': _floats(event.relative_velocity),
            'energy_loss': repr(float(event.energy_loss)),
            'sticking': str(event.sticking).lower(),
        }
    elif isinstance(event, CaptureEvent):
        s.name = 'capture'
        s.level = DiagnosticStatus.OK if event.captured else DiagnosticStatus.WARN
        s.hardware_id = f'robot|{event.target}'
        s.message = (
            f'captured {event.target}/{event.handle}'
            if event.captured
            else f'grasp refused: {event.reason}'
        )
        values = {
            'target': event.target,
            'handle': event.handle,
            'captured': str(event.captured).lower(),
            'reason': event.reason,
            'point': _floats(event.point),
            'impulse': _floats(event.impulse),
            'energy_loss': repr(float(event.energy_loss)),
        }
    else:
        s.name = 'release'
        s.level = DiagnosticStatus.OK if event.released else DiagnosticStatus.WARN
        s.hardware_id = f'robot|{event.target}'
        s.message = f'released {event.target}' if event.released else event.reason
        values = {
            'target': event.target,
            'released': str(event.released).lower(),
            'reason': event.reason,
        }
    s.values = [KeyValue(key=k, value=v) for k, v in values.items()]
    return s


def event_message(
    time_ns: int, event: ContactEvent | CaptureEvent | ReleaseEvent
) -> DiagnosticArray:
    """``scene_events`` message of one event at simulated time ``time_ns``.

    Parameters
    ----------
    time_ns : int
        Simulated time [ns].
    event : ContactEvent, CaptureEvent or ReleaseEvent

    Returns
    -------
    DiagnosticArray
    """
    out = DiagnosticArray(status=[event_status(event)])
    out.header.stamp = to_stamp(max(0, int(time_ns)))
    return out


class TargetMessages:
    """TF, odometry and markers of the targets (module docstring).

    Parameters
    ----------
    world_frame, prefix : str
        The inertial frame id and the frame prefix.
    """

    def __init__(self, world_frame: str, prefix: str) -> None:
        self.world, self.prefix = world_frame, prefix

    def frame(self, name: str, link: str = '') -> str:
        """Frame id of target ``name``'s root (or of its ``link``).

        Parameters
        ----------
        name : str
        link : str

        Returns
        -------
        str
        """
        return f'{self.prefix}target/{name}' + (f'/{link}' if link else '')

    def transforms(
        self, scene: SceneSnapshot, targets: dict[str, Target], stamp: Any
    ) -> list[TransformStamped]:
        """``world -> target/<name>`` and, for URDF targets, each other link from the root.

        Parameters
        ----------
        scene : SceneSnapshot
        targets : dict of str to Target
        stamp : builtin_interfaces.msg.Time

        Returns
        -------
        list of TransformStamped
        """
        out = []
        for name, t in scene.targets.items():
            root = t.root
            tf = TransformStamped()
            tf.header.stamp, tf.header.frame_id = stamp, self.world
            tf.child_frame_id = self.frame(name)
            _set_point(tf.transform.translation, root.position)
            _set_quat(tf.transform.rotation, root.orientation)
            out.append(tf)
            model = targets[name].model
            if len(model.link_names) < 2:
                continue
            R0 = quat_to_matrix(root.orientation)
            for link in model.link_names[1:]:
                p, R = D.link_pose(model, t.q, link)
                tl = TransformStamped()
                tl.header.stamp, tl.header.frame_id = stamp, self.frame(name)
                tl.child_frame_id = self.frame(name, link)
                _set_point(tl.transform.translation, R0.T @ (p - root.position))
                _set_quat(tl.transform.rotation, matrix_to_quat(R0.T @ R))
                out.append(tl)
        return out

    def odometry(self, name: str, scene: SceneSnapshot, stamp: Any) -> Odometry:
        """``targets/<name>/odom``: the root frame's pose in world, its twist in its axes.

        Parameters
        ----------
        name : str
        scene : SceneSnapshot
        stamp : builtin_interfaces.msg.Time

        Returns
        -------
        Odometry
        """
        root = scene.targets[name].root
        odom = Odometry()
        odom.header.stamp, odom.header.frame_id = stamp, self.world
        odom.child_frame_id = self.frame(name)
        _set_point(odom.pose.pose.position, root.position)
        _set_quat(odom.pose.pose.orientation, root.orientation)
        R = quat_to_matrix(root.orientation)
        _set_point(odom.twist.twist.linear, R.T @ root.linear_velocity)
        _set_point(odom.twist.twist.angular, R.T @ root.angular_velocity)
        return odom

    def grasp_wrench(self, scene: SceneSnapshot, gripper: Gripper, stamp: Any) -> WrenchStamped:
        """``grasp_wrench``: the wrench the robot exerts on the held target (the weld's
        constraint force, read off the robot's base rows of [S0 eq. 41] by
        :func:`ffsim_ros.scene.grasp.weld_wrench`) as a wrist force-torque sensor reads it:
        about the origin of the gripper's link frame (``<prefix><gripper.link>``), in its axes
        [N, N m].

        ``scene.grasp_wrench`` is ``[f; n]`` about the weld point, world axes; the grasp frame
        ``scene.gripper`` is the link frame moved by ``gripper.rotation`` and
        ``gripper.translation``.

        Parameters
        ----------
        scene : SceneSnapshot
            With a held target.
        gripper : Gripper
        stamp : builtin_interfaces.msg.Time

        Returns
        -------
        WrenchStamped
        """
        R_grasp = quat_to_matrix(scene.gripper.orientation)
        R_link = R_grasp @ gripper.rotation.T
        p_link = scene.gripper.position - R_link @ gripper.translation
        f = np.asarray(scene.grasp_wrench[:3], dtype=float)
        n = scene.grasp_wrench[3:] + np.cross(scene.grasp_point - p_link, f)
        msg = WrenchStamped()
        msg.header.stamp, msg.header.frame_id = stamp, f'{self.prefix}{gripper.link}'
        _set_point(msg.wrench.force, R_link.T @ f)
        _set_point(msg.wrench.torque, R_link.T @ n)
        return msg

    def markers(
        self, scene: SceneSnapshot | None, targets: dict[str, Target], inside: set, stamp: Any
    ) -> MarkerArray:
        """Target shapes and capture envelopes (``inside``: ``(target, handle)`` pairs whose
        envelope holds the gripper now); all deleted first (``scene`` None: only that).

        Parameters
        ----------
        scene : SceneSnapshot or None
        targets : dict of str to Target
        inside : set of (str, str)
        stamp : builtin_interfaces.msg.Time

        Returns
        -------
        MarkerArray
        """
        out = MarkerArray()
        clear = Marker(action=Marker.DELETEALL)
        clear.ns = 'targets'
        out.markers.append(clear)
        k = 0
        for name, t in () if scene is None else scene.targets.items():
            model = targets[name].model
            for shape in targets[name].shapes:
                p, R = D.link_pose(model, t.q, shape.link)
                m = self._marker(stamp, 'targets', k, (0.75, 0.75, 0.8, 0.9))
                k += 1
                _set_point(m.pose.position, p + R @ shape.translation)
                _set_quat(m.pose.orientation, matrix_to_quat(R @ shape.rotation))
                g = shape.shape
                if isinstance(g, Sphere):
                    m.type = Marker.SPHERE
                    m.scale.x = m.scale.y = m.scale.z = 2.0 * g.radius
                elif isinstance(g, Box):
                    m.type = Marker.CUBE
                    m.scale.x, m.scale.y, m.scale.z = (float(x) for x in g.size)
                else:  # cylinder; a capsule is drawn as its cylinder with the caps' length
                    m.type = Marker.CYLINDER
                    extra = 0.0 if isinstance(g, Cylinder) else 2.0 * g.radius
                    m.scale.x = m.scale.y = 2.0 * g.radius
                    m.scale.z = g.length + extra
                out.markers.append(m)
            for h in targets[name].handles:
                hs = t.handles[h.name]
                rgba = (
                    (0.2, 0.4, 1.0, 0.35)
                    if t.held
                    else (0.1, 0.9, 0.2, 0.35)
                    if (name, h.name) in inside
                    else (0.6, 0.6, 0.6, 0.25)
                )
                m = self._marker(stamp, 'targets', k, rgba)
                k += 1
                m.type = Marker.SPHERE
                m.scale.x = m.scale.y = m.scale.z = 2.0 * h.radius
                _set_point(m.pose.position, hs.position)
                m.pose.orientation.w = 1.0
                out.markers.append(m)
        return out

    def contact_markers(self, events: list, stamp: Any) -> MarkerArray:
        """A point and an impulse arrow per contact event (``(time_ns, event)``).

        Parameters
        ----------
        events : list of (int, event)
            ``(time_ns, event)``; the contact events are shown.
        stamp : builtin_interfaces.msg.Time
            Unused: each marker is stamped with its event's time.

        Returns
        -------
        MarkerArray
        """
        out = MarkerArray()
        for k, (time_ns, ev) in enumerate(e for e in events if isinstance(e[1], ContactEvent)):
            point = self._marker(to_stamp(time_ns), 'contacts', 2 * k, (1.0, 0.3, 0.0, 1.0))
            point.type = Marker.SPHERE
            point.scale.x = point.scale.y = point.scale.z = 0.03
            _set_point(point.pose.position, ev.point)
            point.pose.orientation.w = 1.0
            arrow = self._marker(to_stamp(time_ns), 'contact_impulses', 2 * k + 1, (1, 1, 0, 1))
            arrow.type = Marker.ARROW
            arrow.scale.x, arrow.scale.y, arrow.scale.z = 0.01, 0.02, 0.03
            tip = ev.point + IMPULSE_ARROW_SCALE * ev.impulse
            arrow.points = [Point(), Point()]
            _set_point(arrow.points[0], ev.point)
            _set_point(arrow.points[1], tip)
            for m in (point, arrow):
                m.lifetime.sec = int(CONTACT_MARKER_LIFETIME)
                out.markers.append(m)
        return out

    def _marker(self, stamp: Any, ns: str, k: int, rgba: tuple) -> Marker:
        m = Marker()
        m.header.stamp, m.header.frame_id = stamp, self.world
        m.ns, m.id, m.action = ns, k, Marker.ADD
        m.color.r, m.color.g, m.color.b, m.color.a = (float(c) for c in rgba)
        return m


__all__ = [
    'CONTACT_MARKER_LIFETIME',
    'IMPULSE_ARROW_SCALE',
    'SCENARIO_INITIAL',
    'SHIPPED_SCENARIOS',
    'TargetMessages',
    'WorldSetup',
    'default_gripper_link',
    'event_message',
    'event_status',
    'resolve_scenario',
    'world_setup',
]
