"""Targets: free-floating rigid bodies or multibodies, their handles and their tumble.

A :class:`Target` is a floating-base :class:`~ffsim_ros.dynamics.Model` (one body for a
primitive, a tree from a URDF), its collision shapes, its grasp :class:`Handle` s and its
initial state: the pose of its root link frame, the velocity of its centre of mass, the angular
velocity of its root body and its joint coordinates and rates. :func:`rigid_target` and
:func:`urdf_target` build and validate one; :func:`tumble` gives the attitude and angular
velocity of a torque-free rigid body spinning at a given rate with a given nutation angle.

Torque-free motion (Euler's equations with no moment): the angular momentum ``h`` about the
CoM is fixed in space and the kinetic energy is constant. For a body spinning at ``s`` about a
principal axis ``k`` (moment ``I_k``) with ``h`` at the nutation angle ``theta`` from ``k``:
``h_body = |h| (cos theta k + sin theta (cos phase e_1 + sin phase e_2))``, and ``w . k = s``
fixes ``|h| = s I_k / cos theta`` (``w = I^-1 h``). For an axisymmetric body (``I_1 = I_2 =
I_t``) ``k`` cones about ``h`` at the nutation angle, at the precession rate ``|h| / I_t``,
while the body turns about ``k`` relative to that cone at ``s (I_t - I_k) / I_t``; otherwise
the nutation angle oscillates (Poinsot's construction).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

import numpy as np

import ffsim_ros.dynamics as D
from ffsim_ros.dynamics.builder import ModelBuilder
from ffsim_ros.dynamics.integration import MAX_STEP_ROTATION, check_step_rotation
from ffsim_ros.dynamics.lie import (
    is_rotation,
    matrix_to_quat,
    perpendicular_basis,
    quat_normalize,
    quat_to_matrix,
    rotation_between,
)

from .geometry import (
    MAX_SHAPE_SIZE,
    MIN_SHAPE_SIZE,
    Box,
    Capsule,
    CollisionShape,
    Cylinder,
    Shape,
    Sphere,
    check_links,
    shapes_from_urdf,
)

#: The name reserved for the robot.
ROBOT = 'robot'
#: Largest coordinate of a target's position [m] (the simulator's bound on spawned and set
#: entities, ``node_support.scene_services.MAX_POSITION``): beyond it the pose is outside the
#: simulated world (the dynamics lose their precision, then fail).
MAX_POSITION = 1e6
#: Largest component of a target's CoM velocity [m/s] and of its angular velocity [rad/s]
#: (the simulator's bound on set twists, ``node_support.scene_services.MAX_TWIST``).
MAX_SPEED = MAX_RATE = 1e3
#: Largest joint rate of a target [rad/s | m/s] (the bound of the simulator's
#: ``initial_joint_velocities``).
MAX_JOINT_RATE = 1e3
#: Largest initial joint coordinate of a scenario's URDF target [rad | m] (the bound of the
#: simulator's ``initial_joint_positions``; :func:`target_state` itself only requires them
#: finite: a continuous joint's angle grows without bound as the target moves).
MAX_JOINT_POSITION = 1e3
#: Range of a target's mass [kg] (a rigid target's, a URDF target's total): from 1 mg to
#: 1e12 kg, a rocky asteroid 1 km across. A value outside is a typo or a unit slip (1e-300
#: was taken: nothing in it is physical, the contact impulses and energies of such a body
#: underflow against the robot's).
MIN_TARGET_MASS, MAX_TARGET_MASS = 1e-6, 1e12
#: Range of a rigid target's principal moments of inertia about its CoM per kg of its mass
#: [m^2], i.e. of its squared radius of gyration: at least (0.1 mm)^2 / 12, the moment of a
#: rod of the smallest shape size about its middle (half the smallest moment of the smallest
#: box; a smaller moment vanishes against the mass: at 1e-16 m^2 the mass matrix is not
#: positive definite at the first step), at most (1e6 m)^2, a radius of gyration the size of
#: the simulated world. Every shape's own uniform-solid inertia lies within, whatever its
#: dimensions in [MIN_SHAPE_SIZE, MAX_SHAPE_SIZE].
MIN_GYRATION_SQUARED = MIN_SHAPE_SIZE**2 / 12.0
MAX_GYRATION_SQUARED = MAX_SHAPE_SIZE**2


def check_mass(mass: float, what: str) -> float:
    """A target's mass [kg]: finite, in [:data:`MIN_TARGET_MASS`, :data:`MAX_TARGET_MASS`].

    Parameters
    ----------
    mass : float
        [kg].
    what : str
        Names the value in the message.

    Returns
    -------
    float
        ``mass`` [kg].

    Raises
    ------
    ValueError
        ``'<what>: expected a finite value in [1e-06, 1e+12] kg (...), got 1e-300'``.
    """
    m = float(mass)
    if not (np.isfinite(m) and MIN_TARGET_MASS <= m <= MAX_TARGET_MASS):
        raise ValueError(
            f'{what}: expected a finite value in [{MIN_TARGET_MASS:g}, {MAX_TARGET_MASS:g}] kg '
            f'(1 mg to an asteroid 1 km across), got {mass!r}'
        )
    return m


def check_rigid_inertia(mass: float, inertia: Sequence[Sequence[float]], what: str) -> np.ndarray:
    """A rigid target's inertia about its CoM [kg m^2] for its checked ``mass`` [kg]: a
    finite symmetric (3, 3) matrix whose principal moments lie in ``mass`` times
    [:data:`MIN_GYRATION_SQUARED`, :data:`MAX_GYRATION_SQUARED`] (the triangle inequality is
    the model builder's check).

    Parameters
    ----------
    mass : float
        The checked mass [kg].
    inertia : (3, 3) array_like
        About the CoM, in the target's body (root link) frame [kg m^2].
    what : str
        Names the value in the messages.

    Returns
    -------
    (3, 3) ndarray
        The inertia as given (a float copy) [kg m^2].

    Raises
    ------
    ValueError
        Naming ``what``, the range for this mass and the principal moments given.
    """
    J = np.asarray(inertia, dtype=float)
    if J.shape != (3, 3) or not np.all(np.isfinite(J)):
        raise ValueError(f'{what}: expected a finite (3, 3) matrix [kg m^2], got {J.tolist()}')
    scale = max(float(np.abs(J).max()), 1e-300)
    if not np.allclose(J, J.T, rtol=0.0, atol=1e-12 * scale):
        raise ValueError(f'{what}: expected a symmetric matrix [kg m^2], got {J.tolist()}')
    low, high = mass * MIN_GYRATION_SQUARED, mass * MAX_GYRATION_SQUARED
    moments = np.linalg.eigvalsh(0.5 * (J + J.T))
    if not (moments[0] >= low and moments[-1] <= high):
        got = ', '.join(f'{x:.6g}' for x in moments)
        raise ValueError(
            f'{what}: expected principal moments in [{low:.6g}, {high:.6g}] kg m^2 for a mass '
            f'of {mass:g} kg (mass times [(0.1 mm)^2 / 12, (1e6 m)^2]: no smaller than a '
            f'0.1 mm rod, no larger than the world), got [{got}]'
        )
    return J


def _finite(value: Sequence[float], size: int, what: str) -> np.ndarray:
    arr = np.array(value, dtype=float).reshape(-1)  # a copy: never the caller's array
    if arr.shape != (size,):
        raise ValueError(f'{what}: expected {size} values, got {arr.size}')
    if not np.all(np.isfinite(arr)):
        raise ValueError(f'{what}: expected finite values, got {arr.tolist()}')
    return arr


def _bounded(
    value: Sequence[float], size: int, what: str, bound: float, unit: str, why: str
) -> np.ndarray:
    """:func:`_finite` values of magnitude at most ``bound`` [``unit``] (``why``: the reason,
    said in the error)."""
    arr = _finite(value, size, what)
    if np.any(np.abs(arr) > bound):
        raise ValueError(
            f'{what}: expected values of magnitude <= {bound:g} {unit} ({why}), got {arr.tolist()}'
        )
    return arr


_WORLD = 'the simulated world, as the simulator bounds spawned entities'
_TWIST = 'as the simulator bounds set twists'


@dataclass(frozen=True)
class Handle:
    """A grasp frame on a target and its capture envelope.

    Attributes
    ----------
    name : str
    link : str
        Link of the target carrying the handle; it must be on the target's root body (the
        root link or a link welded to it by fixed joints): :mod:`.grasp`.
    rotation : (3, 3), translation : (3,)
        Handle frame in the link frame [m].
    radius : float
        Capture envelope: largest distance between the gripper's grasp point and the handle
        origin [m] (finite: a grasp welds the target where it is).
    max_angle : float
        Largest angle between the gripper's and the handle's frames [rad] (inf: any).
    max_speed : float
        Largest relative speed of the two frame origins [m/s] (inf: any).
    max_rate : float
        Largest relative angular rate [rad/s] (inf: any).
    """

    name: str
    link: str
    rotation: np.ndarray = field(default_factory=lambda: np.eye(3))
    translation: np.ndarray = field(default_factory=lambda: np.zeros(3))
    radius: float = 0.05
    max_angle: float = np.inf
    max_speed: float = np.inf
    max_rate: float = np.inf

    def __post_init__(self) -> None:
        where = f'handle {self.name!r}'
        R = np.array(self.rotation, dtype=float)
        if not is_rotation(R):
            raise ValueError(
                f'{where}: rotation expected a rotation matrix (det +1), got {R.tolist()}'
            )
        translation = _finite(self.translation, 3, f'{where} translation')
        for arr in (R, translation):  # a frozen handle: its own arrays, read-only (a caller's
            arr.setflags(write=False)  # array changed later moved the grasp envelope)
        object.__setattr__(self, 'rotation', R)
        object.__setattr__(self, 'translation', translation)
        for key in ('radius', 'max_angle', 'max_speed', 'max_rate'):
            x = float(getattr(self, key))
            if np.isnan(x) or x <= 0.0:
                raise ValueError(
                    f'{where}: {key} expected a value > 0, got {getattr(self, key)!r}'
                )
            object.__setattr__(self, key, x)
        if not np.isfinite(self.radius):
            raise ValueError(
                f'{where}: radius expected a finite value > 0 [m] (a grasp welds the target '
                f'where it is, at up to radius from the gripper), got {self.radius!r}'
            )


@dataclass(frozen=True)
class Target:
    """A target ready to be added to a :class:`~.scene.Scene` (validated by the builders).

    Attributes
    ----------
    name : str
    model : Model (floating base)
    shapes : tuple of CollisionShape (links of ``model``)
    handles : tuple of Handle
    q : (nq,) initial configuration;  v : (nv,) initial velocity (``model``'s conventions).
    """

    name: str
    model: D.Model
    shapes: tuple[CollisionShape, ...]
    handles: tuple[Handle, ...]
    q: np.ndarray
    v: np.ndarray

    def in_gravity(self, gravity: np.ndarray) -> Target:
        """This target in the scene's uniform ``gravity`` (3,) [m/s^2], the robot's: a target
        built without gravity (the builders' default) gets it, to fall with the robot; one
        given a non-zero gravity must have that one.

        Parameters
        ----------
        gravity : (3,) ndarray
            The robot's gravity, world frame [m/s^2].

        Returns
        -------
        Target
            This target, or a copy whose model has ``gravity``.

        Raises
        ------
        ValueError
            A non-zero gravity of the target's other than ``gravity`` (both shown).
        """
        own = self.model.gravity
        if not np.any(own) and np.any(gravity):
            return replace(self, model=D.with_gravity(self.model, gravity))
        if not np.array_equal(own, gravity):
            raise ValueError(
                f"target {self.name!r}: gravity {own.tolist()} differs from the robot's "
                f"{np.asarray(gravity).tolist()} (one built without gravity takes the robot's)"
            )
        return self


def check_name(name: str) -> str:
    """A target name: non-empty, no ``/``, not :data:`ROBOT`.

    Parameters
    ----------
    name : str

    Returns
    -------
    str
        ``name`` (``ValueError`` for a bad one).
    """
    if not isinstance(name, str) or not name or '/' in name or name == ROBOT:
        raise ValueError(
            f"target name: expected a non-empty string without '/' other than {ROBOT!r}, "
            f'got {name!r}'
        )
    return name


def checked_state(
    model: D.Model,
    q: Sequence[float],
    v: Sequence[float],
    what: str,
    *,
    bounded: bool = False,
    dt: float = 0.0,
) -> tuple[np.ndarray, np.ndarray]:
    """``(q, v)`` of a scene's system (robot or target) checked: sizes, finite values, the
    base quaternion normalized (copies: never the caller's arrays).

    Parameters
    ----------
    model : Model
    q, v : (nq,), (nv,) state [m, -, rad | m], [m/s, rad/s, rad/s | m/s], world frame.
    what : str
        Names the state in the errors.
    bounded : bool
        A scene's initial state: within the bounds of the targets' states
        (:data:`MAX_POSITION`, :data:`MAX_RATE`), beyond which the first step failed as "a
        degenerate model"; a running robot's state (each batch of the engine) is not bounded:
        a fast run is the dynamics' to judge.
    dt : float
        A target's state: the physics step [s], the root body (and any ball joint) turning by
        less than pi rad in it. A target spawned or set spinning faster was taken and faulted
        the whole simulation at its first step, the message naming "the base" (the robot's,
        it read). 0: not checked.

    Returns
    -------
    q, v : ndarray

    Raises
    ------
    ValueError
        Naming ``what`` and the value refused.
    """
    q = np.array(q, dtype=float).reshape(-1)
    v = np.array(v, dtype=float).reshape(-1)
    if q.shape != (model.nq,) or v.shape != (model.nv,):
        raise ValueError(
            f'{what}: expected q ({model.nq},) and v ({model.nv},), got {q.shape}, {v.shape}'
        )
    if not (np.all(np.isfinite(q)) and np.all(np.isfinite(v))):
        raise ValueError(f'{what}: expected a finite state, got NaN/inf')
    if bounded and np.abs(q[:3]).max() > MAX_POSITION:
        raise ValueError(
            f'{what}: expected a base position of magnitude <= {MAX_POSITION:g} m per axis, '
            f'got {q[:3].tolist()}'
        )
    if bounded and v.size and np.abs(v).max() > MAX_RATE:
        raise ValueError(
            f'{what}: expected velocities of magnitude <= {MAX_RATE:g} (m/s, rad/s) per '
            f'component, got {float(np.abs(v).max()):g} at index {int(np.argmax(np.abs(v)))}'
        )
    spin = float(np.linalg.norm(v[3:6]))
    if dt and spin * dt >= MAX_STEP_ROTATION:
        raise ValueError(
            f'{what}: expected the target to turn by less than pi rad per physics step (the '
            f'step refuses more), |w| below {MAX_STEP_ROTATION / dt:.4g} rad/s at '
            f'physics_rate_hz {1.0 / dt:g}, got |w| = {spin:.4g} rad/s ({spin * dt:.3g} rad '
            'per step)'
        )
    if dt:
        check_step_rotation(model, v, dt, what)  # (a ball joint: the dynamics' words)
    q[3:7] = quat_normalize(q[3:7], f'{what} base quaternion')
    return q, v


def target_state(
    model: D.Model,
    name: str,
    *,
    position: Sequence[float],
    orientation: Sequence[float],
    linear_velocity: Sequence[float],
    angular_velocity: Sequence[float],
    joint_positions: Sequence[float] | None = None,
    joint_velocities: Sequence[float] | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """``(q, v)`` of a target from its root link pose, the velocity of its CoM and the angular
    velocity of its root body (world frame), and its joint coordinates and rates.

    Parameters
    ----------
    model : Model
        The target's model (floating base).
    name : str
        The target's name (for the error messages).
    position : (3,) origin of the root *link frame* (not the CoM), world [m].
    orientation : (4,) quaternion (x, y, z, w) of the root link frame in the world frame
        [-]; normalized here.
    linear_velocity : (3,) velocity of the target's (whole system's) CoM, world [m/s].
    angular_velocity : (3,) angular velocity of the root body, world [rad/s].
    joint_positions : (nq - 7,) joint coordinates [rad | m] (default: the neutral ones).
    joint_velocities : (n,) joint rates [rad/s | m/s] (default: zeros).

    Returns
    -------
    q : (nq,) ``[r0, Q0, phi]``, ``r0`` the root-body CoM [m], ``Q0`` (x, y, z, w);
    v : (nv,) ``[V0, w0, phidot]``, world frame [m/s, rad/s], ``V0`` the root-body CoM velocity
        chosen so that the system CoM moves at ``linear_velocity``.

    Raises
    ------
    ValueError
        A non-finite or wrongly sized value, a zero quaternion, a coordinate of the position
        beyond :data:`MAX_POSITION`, of a velocity beyond :data:`MAX_SPEED` /
        :data:`MAX_RATE`, of the joint rates beyond :data:`MAX_JOINT_RATE`; the message names
        the target and the argument.
    """
    where = f'target {name!r}'
    p = _bounded(position, 3, f'{where} position', MAX_POSITION, 'm', _WORLD)
    quat = _finite(orientation, 4, f'{where} orientation')
    try:
        quat = quat_normalize(quat, f'{where} orientation')
    except ValueError as exc:
        raise ValueError(str(exc)) from None
    vc = _bounded(linear_velocity, 3, f'{where} linear_velocity', MAX_SPEED, 'm/s', _TWIST)
    w = _bounded(angular_velocity, 3, f'{where} angular_velocity', MAX_RATE, 'rad/s', _TWIST)
    nq_j, n = model.nq - 7, model.n
    phi = (
        D.neutral(model)[7:]
        if joint_positions is None
        else _finite(joint_positions, nq_j, f'{where} joint_positions')
    )
    phidot = (
        np.zeros(n)
        if joint_velocities is None
        else _bounded(
            joint_velocities,
            n,
            f'{where} joint_velocities',
            MAX_JOINT_RATE,
            'rad/s | m/s',
            'as the simulator bounds initial_joint_velocities',
        )
    )
    q_base, _ = D.base_state_from_link(model, p, quat)
    q = np.r_[q_base, phi]
    v = np.r_[np.zeros(3), w, phidot]
    # the CoM velocity is linear in V0 with coefficient M: P = M V0 + P(V0 = 0)
    P0 = D.momentum(model, q, v)[:3]
    v[:3] = (model.total_mass * vc - P0) / model.total_mass
    return q, v


def rigid_target(
    name: str,
    *,
    mass: float,
    shape: Shape,
    inertia: Sequence[Sequence[float]] | None = None,
    com: Sequence[float] = (0.0, 0.0, 0.0),
    handles: Sequence[Handle] = (),
    position: Sequence[float] = (0.0, 0.0, 0.0),
    orientation: Sequence[float] = (0.0, 0.0, 0.0, 1.0),
    linear_velocity: Sequence[float] = (0.0, 0.0, 0.0),
    angular_velocity: Sequence[float] = (0.0, 0.0, 0.0),
    link: str = 'body',
) -> Target:
    """A free rigid body with one collision shape centred on its frame (the frame of link
    ``link``); its state as :func:`target_state` takes it.

    Parameters
    ----------
    name : str
        The target's name (:func:`check_name`).
    mass : float
        [kg].
    shape : Sphere, Box, Cylinder or Capsule
        The collision shape, centred on the body frame.
    inertia : (3, 3) array_like, optional
        About the CoM, body frame [kg m^2] (default: the uniform solid ``shape``).
    com : (3,) CoM in the body frame [m].
    handles : sequence of Handle
        On link ``link``.
    position : (3,) origin of the body frame, world [m].
    orientation : (4,) quaternion (x, y, z, w) of the body frame in the world frame [-].
    linear_velocity : (3,) velocity of the CoM, world [m/s].
    angular_velocity : (3,) angular velocity, world [rad/s].
    link : str
        Name of the body's link.

    Returns
    -------
    Target

    Raises
    ------
    ValueError
        A bad name, a mass outside [:data:`MIN_TARGET_MASS`, :data:`MAX_TARGET_MASS`], a
        non-physical inertia or one outside :func:`check_rigid_inertia`'s bounds, a non-finite
        pose or velocity (each message names the target).
    UnknownNameError
        A handle on a link other than ``link``.
    """
    check_name(name)
    m = check_mass(mass, f'target {name!r} mass')
    if not isinstance(shape, Sphere | Box | Cylinder | Capsule):
        raise ValueError(
            f'target {name!r}: shape expected a Sphere, Box, Cylinder or Capsule, got {shape!r}'
        )
    I_c = shape.inertia(m) if inertia is None else inertia
    I_c = check_rigid_inertia(m, I_c, f'target {name!r} inertia')
    try:
        builder = ModelBuilder(name)
        builder.add_base(link, mass=m, com=_finite(com, 3, f'target {name!r} com'), inertia=I_c)
        model = builder.build()
    except ValueError as exc:
        raise ValueError(f'target {name!r}: {exc}') from None
    shapes = (CollisionShape(link, shape, np.eye(3), np.zeros(3)),)
    return _target(
        name, model, shapes, handles, position, orientation, linear_velocity, angular_velocity
    )


def urdf_target(
    name: str,
    urdf: str | os.PathLike[str],
    *,
    handles: Sequence[Handle] = (),
    position: Sequence[float] = (0.0, 0.0, 0.0),
    orientation: Sequence[float] = (0.0, 0.0, 0.0, 1.0),
    linear_velocity: Sequence[float] = (0.0, 0.0, 0.0),
    angular_velocity: Sequence[float] = (0.0, 0.0, 0.0),
    joint_positions: Sequence[float] | None = None,
    joint_velocities: Sequence[float] | None = None,
    meshes: str = 'error',
    package_dirs: Mapping[str, str] | None = None,
) -> Target:
    """A free-floating multibody from a URDF (its root link free), with the URDF's
    ``<collision>`` primitives (:func:`~.geometry.shapes_from_urdf`, ``meshes`` policy).

    Parameters
    ----------
    name : str
        The target's name (:func:`check_name`).
    urdf : str or path-like
        URDF XML or a path to it.
    handles : sequence of Handle
        On links of the root body (the root link or links fixed to it).
    position : (3,) origin of the root *link frame* (not the CoM), world [m].
    orientation : (4,) quaternion (x, y, z, w) of the root link frame in the world frame
        [-] (normalized; default identity).
    linear_velocity : (3,) velocity of the whole target's CoM, world [m/s].
    angular_velocity : (3,) angular velocity of the root body, world [rad/s].
    joint_positions : (n,) joint coordinates in the model's joint order [rad | m] (default:
        zeros).
    joint_velocities : (n,) joint rates, joint order [rad/s | m/s] (default: zeros).
    meshes : {'error', 'ignore', 'bounding_box'}
        What a ``<mesh>`` collision becomes.
    package_dirs : mapping, optional
        ``{package: directory}`` resolving ``package://`` mesh names.

    Returns
    -------
    Target
        Its ``q``, ``v`` from :func:`target_state`.

    Raises
    ------
    ValueError
        What :func:`~ffsim_ros.dynamics.load_urdf` rejects (no mass, negative mass, ...),
        URDF+ ``<loop>`` closures (a target is a tree: its loops would be dropped, the
        mechanism coming apart as it moves), bad collisions, a non-finite state; the message
        names the target.
    UnknownNameError
        A handle on an unknown link.
    """
    check_name(name)
    try:
        model = D.load_urdf(urdf, floating_base=True)
        loops = D.loop_closures_from_urdf(urdf)
        shapes = shapes_from_urdf(urdf, model=model, meshes=meshes, package_dirs=package_dirs)
    except D.UnknownNameError:
        raise
    except ValueError as exc:
        raise ValueError(f'target {name!r}: {exc}') from None
    if loops:
        raise ValueError(
            f'target {name!r}: expected a tree (a target is simulated without loop closures), '
            f'got a URDF with loop closures (URDF+ <loop> {[lp.name for lp in loops]})'
        )
    return _target(
        name,
        model,
        shapes,
        handles,
        position,
        orientation,
        linear_velocity,
        angular_velocity,
        joint_positions,
        joint_velocities,
    )


def _target(
    name: str,
    model: D.Model,
    shapes: tuple[CollisionShape, ...],
    handles: Sequence[Handle],
    position: Sequence[float],
    orientation: Sequence[float],
    linear_velocity: Sequence[float],
    angular_velocity: Sequence[float],
    joint_positions: Sequence[float] | None = None,
    joint_velocities: Sequence[float] | None = None,
) -> Target:
    handles = tuple(handles)
    for h in handles:
        if not isinstance(h, Handle):
            raise ValueError(f'target {name!r}: handles expected Handle items, got {h!r}')
    names = [h.name for h in handles]
    if len(set(names)) != len(names):
        raise ValueError(f'target {name!r}: handle names expected unique, got {names}')
    for h in handles:
        frame = model.frames.get(h.link)
        if frame is None:
            raise D.UnknownNameError(
                f'target {name!r} handle {h.name!r}: unknown link {h.link!r}; the target has '
                f'{list(model.link_names)}'
            )
        if frame.body != 0:
            raise ValueError(
                f'target {name!r} handle {h.name!r}: link {h.link!r} is on a moving body; a '
                'handle must be on the root body (the root link or a link fixed to it)'
            )
    check_mass(model.total_mass, f'target {name!r} total mass')
    check_links(model, shapes, f'target {name!r} collision shape')
    q, v = target_state(
        model,
        name,
        position=position,
        orientation=orientation,
        linear_velocity=linear_velocity,
        angular_velocity=angular_velocity,
        joint_positions=joint_positions,
        joint_velocities=joint_velocities,
    )
    return Target(name, model, shapes, handles, q, v)


@dataclass(frozen=True)
class Tumble:
    """A torque-free rigid body's initial attitude and rate (:func:`tumble`), world frame.

    Attributes
    ----------
    orientation : (4,) quaternion (x, y, z, w) of the body frame.
    angular_velocity : (3,) [rad/s].
    angular_momentum : (3,) about the CoM [kg m^2/s] (fixed in space while torque-free).
    precession_rate : float
        ``|h| / I_t`` [rad/s]: the rate at which the spin axis cones about ``h`` (exact for an
        axisymmetric body; for another body the average rate is different).
    """

    orientation: np.ndarray
    angular_velocity: np.ndarray
    angular_momentum: np.ndarray
    precession_rate: float


def tumble(
    inertia: Sequence[Sequence[float]],
    spin_rate: float,
    nutation: float,
    *,
    spin_axis: Sequence[float] = (0.0, 0.0, 1.0),
    phase: float = 0.0,
    momentum_direction: Sequence[float] = (0.0, 0.0, 1.0),
) -> Tumble:
    """Attitude and angular velocity of a body spinning at ``spin_rate`` [rad/s] about
    ``spin_axis`` (a principal axis, body frame) with its angular momentum at ``nutation``
    [rad] from that axis and along ``momentum_direction`` (world) -- module docstring.

    Parameters
    ----------
    inertia : (3, 3) about the CoM, body frame [kg m^2] (symmetric positive definite).
    spin_rate : float
        ``w . k`` [rad/s] (any sign).
    nutation : float
        Angle in [0, pi/2) between the angular momentum and the spin axis [rad].
    spin_axis : (3,) direction in the body frame [-] (normalized here); must be a principal
        axis of ``inertia``.
    phase : float
        Angle of the momentum's transverse part about the spin axis, from the first of
        :func:`~ffsim_ros.dynamics.lie.perpendicular_basis` (``k``) [rad].
    momentum_direction : (3,) direction in the world frame [-] (normalized here).

    Returns
    -------
    Tumble
        World frame.

    Raises
    ------
    ValueError
        A non-principal spin axis, a nutation outside [0, pi/2), a non-positive-definite
        inertia, non-finite values.
    """
    J = np.asarray(inertia, dtype=float)
    if J.shape != (3, 3) or not np.all(np.isfinite(J)) or not np.allclose(J, J.T):
        raise ValueError(f'inertia: expected a finite symmetric (3, 3) matrix, got {J.tolist()}')
    if np.linalg.eigvalsh(J)[0] <= 0.0:
        raise ValueError(f'inertia: expected positive definite, got {J.tolist()}')
    k = _finite(spin_axis, 3, 'spin_axis')
    if not np.linalg.norm(k) > 0.0:
        raise ValueError(f'spin_axis: expected a non-zero vector, got {k.tolist()}')
    k = k / np.linalg.norm(k)
    Ik = float(k @ J @ k)
    if np.linalg.norm(J @ k - Ik * k) > 1e-9 * np.abs(J).max():
        raise ValueError(f'spin_axis: {k.tolist()} is not a principal axis of the inertia')
    theta, s, ph = float(nutation), float(spin_rate), float(phase)
    if not (np.isfinite(theta) and 0.0 <= theta < 0.5 * np.pi):
        raise ValueError(f'nutation: expected an angle in [0, pi/2) rad, got {nutation!r}')
    if not (np.isfinite(s) and np.isfinite(ph)):
        raise ValueError(f'spin_rate, phase: expected finite values, got {spin_rate}, {phase}')
    d = _finite(momentum_direction, 3, 'momentum_direction')
    if not np.linalg.norm(d) > 0.0:
        raise ValueError(f'momentum_direction: expected a non-zero vector, got {d.tolist()}')
    d = d / np.linalg.norm(d)
    e1, e2 = (x[0] for x in perpendicular_basis(k))
    h_dir = np.cos(theta) * k + np.sin(theta) * (np.cos(ph) * e1 + np.sin(ph) * e2)
    h_mag = s * Ik / np.cos(theta)
    w_body = np.linalg.solve(J, h_mag * h_dir)
    R = rotation_between(h_dir, d)
    It = float(e1 @ J @ e1) if theta > 0.0 else Ik
    return Tumble(matrix_to_quat(R), R @ w_body, h_mag * d, abs(h_mag) / It if It > 0 else 0.0)


def locked_inertia(model: D.Model, q: np.ndarray) -> np.ndarray:
    """(3, 3) inertia of a multibody about its CoM with its joints locked, in its root body
    frame [kg m^2] (what :func:`tumble` needs for a multibody target). It is ``H_w`` of
    [S0 eqs. 15-16] as re-derived in docs/equations.md, ``sum (I_i - m_i r~_gi r~_0i)`` (the
    printed ``+`` is a seed defect), turned into the root body frame.

    Parameters
    ----------
    model : Model
        A floating-base model.
    q : (nq,) configuration: root-body CoM in the world frame [m], root quaternion
        (x, y, z, w) [-], joint coordinates [rad | m].

    Returns
    -------
    (3, 3) ndarray
        [kg m^2], root body frame.
    """
    com = D.center_of_mass(model, q)
    R0 = quat_to_matrix(q[3:7])
    I_world = np.empty((3, 3))
    for j in range(3):
        v = np.zeros(model.nv)
        v[3 + j] = 1.0
        v[:3] = np.cross(v[3:6], q[:3] - com)
        I_world[:, j] = D.momentum(model, q, v, about='com')[3:]
    return R0.T @ (0.5 * (I_world + I_world.T)) @ R0


__all__ = [
    'MAX_GYRATION_SQUARED',
    'MAX_JOINT_POSITION',
    'MAX_JOINT_RATE',
    'MAX_POSITION',
    'MAX_RATE',
    'MAX_SPEED',
    'MAX_TARGET_MASS',
    'MIN_GYRATION_SQUARED',
    'MIN_TARGET_MASS',
    'ROBOT',
    'Handle',
    'Target',
    'Tumble',
    'check_mass',
    'check_name',
    'check_rigid_inertia',
    'checked_state',
    'locked_inertia',
    'rigid_target',
    'target_state',
    'tumble',
    'urdf_target',
]
