"""The simulator's state messages of one instant, filled from a :class:`~ffsim_ros.sim.Snapshot`.

``joint_states``, ``/tf``, ``base_odom``, ``momentum``, ``markers`` and ``/clock`` (see
``ffsim_ros.simulator``), all stamped with the snapshot's simulated time; and, on the
receiving side, :func:`joint_state_values` (a ``joint_states`` message checked whole),
:func:`odometry_base_state` (a ``base_odom`` message as base coordinates) and
:func:`goal_pose` (an ``ee_goal``).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence

import numpy as np
from builtin_interfaces.msg import Time
from geometry_msgs.msg import Point, PoseStamped, TransformStamped
from nav_msgs.msg import Odometry
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray, MultiArrayDimension
from tf2_msgs.msg import TFMessage
from visualization_msgs.msg import Marker, MarkerArray

import ffsim_ros.dynamics as D
from ffsim_ros.dynamics.lie import quat_normalize, quat_rotate_inverse, quat_to_matrix
from ffsim_ros.sim import Snapshot

from .common import to_stamp
from .wire import WireTemplate

#: Length of the momentum markers' arrows per unit of momentum [m / (N s) and m / (N m s)]:
#: 1 m per 10 units, drawn from the CoM.
MOMENTUM_ARROW_SCALE = 0.1


def joint_state_values(
    joint_names: Sequence[str],
    names: Sequence[str],
    positions: Sequence[float],
    velocities: Sequence[float],
) -> tuple[np.ndarray, np.ndarray]:
    """Positions and velocities in joint order from the fields of a ``JointState``.

    Names of other joints are ignored; a joint without a velocity has velocity 0.

    Parameters
    ----------
    joint_names : sequence of str
        The robot's joints, in its order.
    names, positions, velocities : sequence
        The message's ``name``, ``position`` and ``velocity`` fields.

    Returns
    -------
    tuple of ndarray
        ``(positions (n,), velocities (n,))``.

    Raises
    ------
    ValueError
        A joint of the robot named more than once (which of its values would be meant?), a
        joint without a position, or with a non-finite position or velocity (the message is
        refused whole; the error names the joints).
    """
    index = {name: j for j, name in enumerate(joint_names)}
    counts = Counter(name for name in names if name in index)
    repeated = [name for name in joint_names if counts[name] > 1]
    if repeated:
        raise ValueError(
            f'expected each joint of {list(joint_names)} named at most once, got '
            f'{repeated} named more than once'
        )
    pos = np.full(len(index), np.nan)
    vel = np.zeros(len(index))
    given = [False] * len(index)
    for k, name in enumerate(names):
        j = index.get(name)
        if j is None:
            continue
        if k < len(positions):
            pos[j], given[j] = positions[k], True
        if k < len(velocities):
            vel[j] = velocities[k]
    missing = [name for name, seen in zip(joint_names, given, strict=True) if not seen]
    bad = {
        f'{name}.{field}': float(values[j])
        for j, name in enumerate(joint_names)
        for field, values in (('position', pos), ('velocity', vel))
        if given[j] and not math.isfinite(values[j])
    }
    if missing or bad:
        raise ValueError(
            f'expected a finite position (and velocity, if given) for each joint of '
            f'{list(joint_names)}, got '
            + '; '.join(
                part
                for part in (
                    f'no position for {missing}' if missing else '',
                    f'non-finite values {bad}' if bad else '',
                )
                if part
            )
        )
    return pos, vel


def odometry_base_state(model: D.Model, msg: Odometry) -> tuple[np.ndarray, np.ndarray]:
    """The base coordinates ``(q_b (7,), v_b (6,))`` of ``model`` -- base CoM [m] and
    quaternion (x, y, z, w), their world-frame velocities [m/s, rad/s] -- from a ``base_odom``
    message: the base link's pose in the world and its twist in base link axes (REP 105).

    Parameters
    ----------
    model : Model
        A floating-base model.
    msg : Odometry

    Returns
    -------
    q_b : (7,) ndarray
        ``[r0, Q0]``: base CoM in the world frame [m], orientation quaternion (x, y, z, w) [-].
    v_b : (6,) ndarray
        ``[V0, w0]``: base CoM velocity and angular velocity, world frame [m/s, rad/s].

    Raises
    ------
    ValueError
        A non-finite pose or twist (naming which), or a quaternion that is not one.
    """
    p, o, tw = msg.pose.pose.position, msg.pose.pose.orientation, msg.twist.twist
    values = {
        'position': (p.x, p.y, p.z),
        'orientation': (o.x, o.y, o.z, o.w),
        'linear': (tw.linear.x, tw.linear.y, tw.linear.z),
        'angular': (tw.angular.x, tw.angular.y, tw.angular.z),
    }
    bad = {k: list(v) for k, v in values.items() if not all(math.isfinite(x) for x in v)}
    if bad:
        raise ValueError(f'expected a finite pose and twist, got {bad}')
    R = quat_to_matrix(quat_normalize(values['orientation'], 'orientation'))
    lin = R @ values['linear']  # base link axes -> world
    ang = R @ values['angular']
    return D.base_state_from_link(model, values['position'], values['orientation'], lin, ang)


def goal_pose(
    msg: PoseStamped, world: str, track_orientation: bool
) -> tuple[np.ndarray, np.ndarray | None]:
    """The position and rotation of the controller's ee_goal ``msg``.

    Parameters
    ----------
    msg : PoseStamped
    world : str
        The frame expected (``world_frame``).
    track_orientation : bool
        Whether the orientation is tracked.

    Returns
    -------
    position : (3,) ndarray
        [m]
    rotation : (3, 3) ndarray or None
        None: orientation not tracked, or a zero quaternion (the position only).

    Raises
    ------
    ValueError
        A frame other than ``world``, non-finite coordinates or orientation (naming what was
        expected and what came).
    """
    frame = msg.header.frame_id
    if frame != world:
        shown = frame if len(frame) <= 200 else f'{frame[:200]}...'
        raise ValueError(f'expected frame_id {world!r}, got {shown!r}')
    p = msg.pose.position
    position = np.array([p.x, p.y, p.z])
    if not np.all(np.isfinite(position)):
        raise ValueError(f'goal: expected 3 finite coordinates, got {position.tolist()}')
    o = msg.pose.orientation
    quat = np.array([o.x, o.y, o.z, o.w])
    if not np.all(np.isfinite(quat)):
        raise ValueError(f'orientation: expected finite values, got {quat.tolist()}')
    rotation = None
    if track_orientation and math.hypot(*quat) > 1e-9:
        rotation = quat_to_matrix(quat_normalize(quat))
    return position, rotation


def goal_accepted_text(
    position: np.ndarray, rotation: np.ndarray | None, world: str, track_orientation: bool
) -> str:
    """The log line of an accepted ee_goal (:func:`goal_pose`'s ``position``, ``rotation``):
    with ``track_orientation``, a zero quaternion (taken as the position only) is said.

    Parameters
    ----------
    position : (3,) ndarray
        [m]
    rotation : (3, 3) ndarray or None
    world : str
        ``world_frame``.
    track_orientation : bool

    Returns
    -------
    str
    """
    where = f'{np.round(position, 4).tolist()} in {world}'
    if track_orientation and rotation is None:
        return (
            'ee_goal accepted, position only: its orientation quaternion is zero '
            f'(track_orientation true): {where}'
        )
    return f'ee_goal accepted: {where}'


class StateMessages:
    """The message objects of the simulator's state topics, filled in place.

    Parameters
    ----------
    joint_names : sequence of str
        ``joint_states.name``.
    world, base_frame : str
        Frame ids of the inertial frame and of the base link (with its prefix).
    clock : bool
        Whether to fill a ``/clock`` message.
    """

    def __init__(
        self, joint_names: Sequence[str], world: str, base_frame: str, clock: bool
    ) -> None:
        self.joint_names = tuple(joint_names)
        self.world, self.base_frame = world, base_frame
        self._messages = self._new_messages(clock)
        self._wire = self._new_templates(clock)

    def fill(self, snap: Snapshot, markers: bool = True) -> tuple:
        """The messages of one instant, all stamped with its simulated time.

        The same message objects are filled at every call: only the physics thread builds
        and publishes them, and a publish serializes its message before it returns (the
        thread that once also published from a service is gone), so no message is ever
        torn; allocating six messages per publish cost more than the physics step.

        Parameters
        ----------
        snap : Snapshot
        markers : bool
            Whether to fill the MarkerArray too.

        Returns
        -------
        tuple
            ``(Clock or None, JointState, TransformStamped, Odometry, Float64MultiArray,
            MarkerArray or None)``: ``/clock`` only with ``publish_clock``, markers only when
            asked.
        """
        clock, joints, _, odom, momentum = self._messages
        stamp = to_stamp(snap.time_ns)
        if clock is not None:
            clock.clock = stamp
        joints.header.stamp = stamp
        joints.position = snap.q[7:].tolist()
        joints.velocity = snap.v[6:].tolist()
        joints.effort = snap.effort.tolist()

        pose = (*snap.base_position.tolist(), *snap.base_orientation.tolist())
        transform = self._base_transform(stamp, pose)

        odom.header.stamp = stamp
        pos = odom.pose.pose.position
        pos.x, pos.y, pos.z = pose[:3]
        o = odom.pose.pose.orientation
        o.x, o.y, o.z, o.w = pose[3:]
        twist = _base_twist(snap)
        tw = odom.twist.twist
        tw.linear.x, tw.linear.y, tw.linear.z = twist[:3]
        tw.angular.x, tw.angular.y, tw.angular.z = twist[3:]

        momentum.data = np.r_[snap.momentum, snap.com].tolist()
        marker_array = self._markers(stamp, snap.momentum, snap.com) if markers else None
        return clock, joints, transform, odom, momentum, marker_array

    def serialized(self, snap: Snapshot, markers: bool = True) -> tuple:
        """:meth:`fill`'s messages of one instant serialized
        (:class:`~ffsim_ros.node_support.wire.WireTemplate`: the same bytes rclpy would send
        for them, what ``Publisher.publish`` takes raw). The base's transform as a message
        (for TF with the targets' transforms, or tf2_ros's broadcaster) is
        :meth:`base_transform`, built only where it is needed.

        Parameters
        ----------
        snap : Snapshot
        markers : bool
            Whether to serialize the markers too.

        Returns
        -------
        tuple of bytes
            ``(/clock or None, joint_states, base_odom, momentum, markers or None, /tf)``:
            ``/clock`` only with ``publish_clock``, the markers only when asked, ``/tf`` a
            ``tf2_msgs/TFMessage`` of the base transform alone.
        """
        clock, joints, odom, momentum, tf, marks = self._wire
        sec, nsec = divmod(int(snap.time_ns), 1_000_000_000)
        clock_bytes = None
        if clock is not None:
            clock.pack('clock', sec, nsec)
            clock_bytes = clock.payload()
        joints.pack('stamp', sec, nsec)
        joints.pack_arrays('position', snap.q[7:])
        joints.pack_arrays('velocity', snap.v[6:])
        joints.pack_arrays('effort', snap.effort)
        pose = (*snap.base_position.tolist(), *snap.base_orientation.tolist())
        odom.pack('stamp', sec, nsec)
        odom.pack('pose', *pose)
        odom.pack('twist', *_base_twist(snap))
        momentum.pack_arrays('data', snap.momentum, snap.com)
        tf.pack('stamp', sec, nsec)
        tf.pack('transform', *pose)
        marker_bytes = None
        if markers:
            for k in range(3):
                marks.pack(f'stamp{k}', sec, nsec)
            com = snap.com.tolist()
            marks.pack('com', *com)
            h = snap.momentum.tolist()
            for k in (1, 2):
                vec = h[3 * k - 3 : 3 * k]
                marks.pack(
                    f'arrow{k}',
                    *com,
                    *(c + MOMENTUM_ARROW_SCALE * x for c, x in zip(com, vec, strict=True)),
                )
            marker_bytes = marks.payload()
        return (
            clock_bytes,
            joints.payload(),
            odom.payload(),
            momentum.payload(),
            marker_bytes,
            tf.payload(),
        )

    def last_serialized(self) -> tuple:
        """The bytes of the last :meth:`serialized` call, as :meth:`serialized` returned them
        (the markers' of the last call that asked for them): the templates keep them until
        the next call. Only meaningful once :meth:`serialized` has been called (with the
        markers).

        Returns
        -------
        tuple of bytes
            ``(/clock or None, joint_states, base_odom, momentum, markers, /tf)``.
        """
        clock, joints, odom, momentum, tf, marks = self._wire
        return (
            None if clock is None else clock.payload(),
            joints.payload(),
            odom.payload(),
            momentum.payload(),
            marks.payload(),
            tf.payload(),
        )

    def base_transform(self, snap: Snapshot) -> TransformStamped:
        """The base's transform message of ``snap`` (the same object at every call).

        Parameters
        ----------
        snap : Snapshot

        Returns
        -------
        TransformStamped
            World to base link, stamped with the snapshot's time.
        """
        pose = (*snap.base_position.tolist(), *snap.base_orientation.tolist())
        return self._base_transform(to_stamp(snap.time_ns), pose)

    def _base_transform(self, stamp: Time, pose: tuple) -> TransformStamped:
        """The base's transform message (the same object at every call) at ``stamp``,
        ``pose`` the base link's position (3) and orientation (x, y, z, w) in the world."""
        transform = self._messages[2]
        transform.header.stamp = stamp
        tr = transform.transform.translation
        tr.x, tr.y, tr.z = pose[:3]
        ro = transform.transform.rotation
        ro.x, ro.y, ro.z, ro.w = pose[3:]
        return transform

    def _new_templates(self, clock: bool) -> tuple:
        """The :class:`WireTemplate` of ``/clock`` (or None), ``joint_states``, ``base_odom``,
        ``momentum``, ``/tf`` (the base alone) and ``markers``, from messages built as
        :meth:`_new_messages` and :meth:`_markers` build them."""
        _, joints, transform, odom, momentum = self._new_messages(False)
        n = len(self.joint_names)
        xyz = ('x', 'y', 'z')
        pose = [f'pose.pose.position.{a}' for a in xyz]
        pose += [f'pose.pose.orientation.{a}' for a in (*xyz, 'w')]
        twist = [f'twist.twist.{part}.{a}' for part in ('linear', 'angular') for a in xyz]
        place = [f'translation.{a}' for a in xyz] + [f'rotation.{a}' for a in (*xyz, 'w')]
        return (
            WireTemplate(Clock(), {'clock': ('time', ('clock',))}) if clock else None,
            WireTemplate(
                joints,
                {
                    'stamp': ('time', ('header.stamp',)),
                    'position': ('f64[]', ('position', n)),
                    'velocity': ('f64[]', ('velocity', n)),
                    'effort': ('f64[]', ('effort', n)),
                },
            ),
            WireTemplate(
                odom,
                {
                    'stamp': ('time', ('header.stamp',)),
                    'pose': ('f64', pose),
                    'twist': ('f64', twist),
                },
            ),
            WireTemplate(momentum, {'data': ('f64[]', ('data', 9))}),
            WireTemplate(
                TFMessage(transforms=[transform]),
                {
                    'stamp': ('time', ('transforms.0.header.stamp',)),
                    'transform': ('f64', tuple(f'transforms.0.transform.{p}' for p in place)),
                },
            ),
            WireTemplate(
                self._markers(Time(), np.zeros(6), np.zeros(3)),
                {
                    **{f'stamp{k}': ('time', (f'markers.{k}.header.stamp',)) for k in range(3)},
                    'com': ('f64', tuple(f'markers.0.pose.position.{a}' for a in xyz)),
                    **{
                        f'arrow{k}': (
                            'f64',
                            tuple(f'markers.{k}.points.{i}.{a}' for i in range(2) for a in xyz),
                        )
                        for k in (1, 2)
                    },
                },
            ),
        )

    def _new_messages(self, clock: bool) -> tuple:
        """The message objects :meth:`fill` fills (their constant fields set once)."""
        joints = JointState(name=list(self.joint_names))
        transform = TransformStamped()
        transform.header.frame_id = self.world
        transform.child_frame_id = self.base_frame
        odom = Odometry()
        odom.header.frame_id = self.world
        odom.child_frame_id = self.base_frame
        momentum = Float64MultiArray()
        momentum.layout.dim = [
            MultiArrayDimension(label='P,L_g,com', size=3, stride=9),
            MultiArrayDimension(label='x,y,z', size=3, stride=3),
        ]
        return Clock() if clock else None, joints, transform, odom, momentum

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
            tip = com + MOMENTUM_ARROW_SCALE * vec
            arrow.points = [
                Point(x=float(com[0]), y=float(com[1]), z=float(com[2])),
                Point(x=float(tip[0]), y=float(tip[1]), z=float(tip[2])),
            ]
            out.markers.append(arrow)
        return out


def _base_twist(snap: Snapshot) -> tuple[float, ...]:
    """The base link's linear and angular velocity, in its own axes (6 floats) [m/s, rad/s]
    (``base_odom``'s twist, REP 105)."""
    quat = snap.base_orientation.tolist()
    return (
        *quat_rotate_inverse(quat, snap.base_linear_velocity.tolist()),
        *quat_rotate_inverse(quat, snap.base_angular_velocity.tolist()),
    )
