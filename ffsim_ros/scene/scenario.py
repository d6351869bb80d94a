"""Capture scenarios from a mapping or a YAML file: the robot, the contact law, the targets.

A scenario (every key optional unless marked)::

    dt: 0.001                      # physics step [s], in [1e-6, 1] (the simulator's range)
    robot:
      urdf: urdf/ffsim_servicer_7dof.urdf     # required; relative to the file's folder
      gripper: {link: ee_link, translation: [0, 0, 0], rpy: [0, 0, 0]}   # link required
      exclude_links: [arm_link_7, ee_link]    # links without collision shapes
      joint_positions: [...]                  # (n,) [rad | m]
      joint_velocities: [...]
      base_position: [0, 0, 0]                # base link frame origin in world [m]
      base_orientation: [0, 0, 0, 1]          # base link frame attitude (x, y, z, w)
    contact: {law: impact, restitution: 0.5, friction: 0.3}
             # or {law: compliant, stiffness: 2.0e4, damping: 50, friction: 0.4,
             #     stiction_speed: 0.001}
    targets:
      - name: sat                             # required
        shape: {type: sphere, radius: 0.5}    # or box (size), cylinder / capsule (radius,
        mass: 200.0                           #   length); with mass: a rigid target
        inertia: [[..], [..], [..]]           # optional (default: the uniform solid)
        # or urdf: target.urdf (a free-floating multibody with its <collision> primitives)
        position: [3, 0, 0]
        orientation: [0, 0, 0, 1]             # (x, y, z, w); or tumble: below
        tumble: {spin_rate: 0.09, nutation: 0.2, spin_axis: [0, 0, 1],
                 momentum_direction: [0, 0, 1], phase: 0.0}
        linear_velocity: [0, 0, 0]            # of the target's CoM [m/s]
        angular_velocity: [0, 0, 0]           # [rad/s] (not with tumble)
        handles:
          - {name: bar, link: body, translation: [0, 0, -0.55], rpy: [0, 0, 0],
             radius: 0.05, max_angle: 0.3, max_speed: 0.05, max_rate: 0.05}

Names (``name``, ``link``, ``exclude_links``) are non-empty strings; numbers are not YAML
booleans; quaternions (x, y, z, w) have norm 1 within :data:`QUAT_TOLERANCE` (normalized on
read, as the simulator's parameters); ``dt`` lies in [:data:`MIN_DT`, :data:`MAX_DT`] (the
simulator's ``physics_rate_hz`` from 1 Hz to 1 MHz). As the simulator bounds its parameters
and its entity services, every coordinate of a position is at most 1e6 m in magnitude (of a
handle's or the gripper's ``translation`` too: :data:`MAX_OFFSET`), of a linear or angular
velocity 1e3 m/s or rad/s, of the robot's and a URDF target's joint positions and rates 1e3
(:data:`MAX_ROBOT_JOINT`, :data:`~.targets.MAX_JOINT_POSITION`); an integer too large for a
float (``1e400`` written out) is refused as any other number out of range; shape dimensions
lie in [1e-4, 1e6] m, a target's mass in [1e-6, 1e12] kg
(a URDF target's total mass too), a rigid target's principal moments of inertia in its mass
times [(1e-4 m)^2 / 12, (1e6 m)^2] (:func:`~.targets.check_rigid_inertia`), a handle's
``radius`` is finite, and the contact law's bounds are :class:`~.impact.ImpactLaw`'s and
:class:`~.impact.CompliantLaw`'s (``stiffness`` is required with ``law: compliant``). A URDF
target is a tree: one with URDF+ ``<loop>`` closures is refused, naming them (its loops would
be dropped). :func:`load_scenario` reads the file as the nodes do
(:func:`ffsim_ros.files.read_regular_file`: a regular file of at most
:data:`MAX_SCENARIO_BYTES`, opened without blocking).

Every error is a :class:`ScenarioError` (a ``ValueError``) naming the field, e.g.
``targets[1].mass: expected a finite value in [1e-06, 1e+12] kg (...), got -2.0``; unknown keys
are refused by name.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

import ffsim_ros.dynamics as D
from ffsim_ros.dynamics.lie import quat_unit, rpy_to_matrix

from ..dynamics.yaml_input import YamlInputError, load_yaml
from ..files import FileKindError, read_regular_file
from .geometry import (
    Box,
    Capsule,
    Cylinder,
    Sphere,
    describe_shape,
    point_distance,
    shapes_from_urdf,
)
from .grasp import Gripper
from .impact import CompliantLaw, ImpactLaw
from .scene import Scene
from .targets import (
    MAX_JOINT_POSITION,
    MAX_JOINT_RATE,
    MAX_POSITION,
    MAX_RATE,
    MAX_SPEED,
    Handle,
    Target,
    check_mass,
    check_rigid_inertia,
    locked_inertia,
    rigid_target,
    tumble,
    urdf_target,
)

T = TypeVar('T')

#: Range of ``dt`` [s]: the simulator's physics step (``physics_rate_hz`` in [1 Hz, 1 MHz]).
MIN_DT, MAX_DT = 1e-6, 1.0
#: Largest departure of a quaternion's norm from 1 (as the simulator's parameters allow).
QUAT_TOLERANCE = 1e-3
#: Largest robot joint coordinate [rad | m] and rate [rad/s | m/s] (the bound of the
#: simulator's ``initial_joint_positions`` / ``initial_joint_velocities``).
MAX_ROBOT_JOINT = 1e3
#: Largest coordinate of a handle's or the gripper's ``translation`` in its link frame [m]
#: (the largest target position and shape dimension: the size of the simulated world).
MAX_OFFSET = MAX_POSITION
#: Largest scenario file read by :func:`load_scenario` [bytes] (the nodes' bound on their
#: ``scenario`` / ``capture.scenario`` files, ``node_support.common.MAX_ROBOT_BYTES``).
MAX_SCENARIO_BYTES = 16 * 1024 * 1024
#: Depth [m] below a target's surface from which a handle origin is refused, or the handle's
#: radius if larger (on the surface is normal, and within the radius: fingers closing round a
#: bar).
HANDLE_DEPTH = 1e-6


class ScenarioError(ValueError):
    """A scenario field is missing, unknown or invalid (the message names it)."""


def _keys(
    d: Any, where: str, allowed: set[str], required: frozenset[str] | set[str] = frozenset()
) -> dict:
    if not isinstance(d, Mapping):
        raise ScenarioError(f'{where}: expected a mapping, got {type(d).__name__}')
    unknown = sorted(set(d) - allowed, key=str)
    if unknown:
        raise ScenarioError(f'{where}: unknown keys {unknown}; expected some of {sorted(allowed)}')
    missing = sorted(required - set(d))
    if missing:
        raise ScenarioError(f'{where}: missing keys {missing}')
    return dict(d)


def _brief(value: Any) -> str:
    """``repr`` of a scalar; only the type and length of a container (an aliased YAML
    structure may expand to gigabytes)."""
    if isinstance(value, list | tuple | Mapping):
        return f'a {type(value).__name__} of length {len(value)}'
    return repr(value)


def _shown(value: Any) -> str:
    """``repr`` of a value, cut to 200 characters."""
    text = repr(value)
    return text if len(text) <= 200 else f'{text[:200]}... ({len(text)} characters)'


def _name(value: Any, where: str) -> str:
    """A name field: a non-empty string (``null`` or a list is not a name)."""
    if not isinstance(value, str) or not value:
        raise ScenarioError(f'{where}: expected a non-empty string, got {_brief(value)}')
    return value


def _has_bool(value: Any) -> bool:
    """Whether ``value`` (a number or a nested list of them) holds a boolean."""
    if isinstance(value, bool | np.bool_):
        return True
    if isinstance(value, np.ndarray):
        return value.dtype == bool
    return isinstance(value, list | tuple) and any(_has_bool(x) for x in value)


def _vec(
    value: Any, size: int | None, where: str, bound: float | None = None, unit: str = ''
) -> np.ndarray:
    """``size`` finite numbers (any count when None: a list of them), no booleans, each of
    magnitude at most ``bound`` [``unit``] when given."""
    what = 'a list of' if size is None else str(size)
    if size is None and not isinstance(value, list | tuple):
        raise ScenarioError(f'{where}: expected {what} numbers, got {_brief(value)}')
    try:
        arr = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        raise ScenarioError(f'{where}: expected {what} numbers, got {value!r}') from None
    except OverflowError:  # an integer beyond a float (401 digits)
        raise ScenarioError(
            f'{where}: expected {what} finite numbers, got an integer too large for a float'
        ) from None
    if arr.shape != (len(value) if size is None else size,) or not np.all(np.isfinite(arr)):
        raise ScenarioError(f'{where}: expected {what} finite numbers, got {value!r}')
    if _has_bool(value):
        raise ScenarioError(f'{where}: expected {what} numbers, got booleans in {value!r}')
    if bound is not None and np.any(np.abs(arr) > bound):
        raise ScenarioError(
            f'{where}: expected {what} finite numbers of magnitude <= {bound:g} {unit}, got '
            f'{value!r}'
        )
    return arr


def _quat(value: Any, where: str) -> np.ndarray:
    """A quaternion (x, y, z, w) of norm 1 within :data:`QUAT_TOLERANCE`, normalized."""
    q = _vec(value, 4, where)
    try:
        return quat_unit(q, where, QUAT_TOLERANCE)
    except ValueError as exc:
        raise ScenarioError(str(exc)) from None


def _num(value: Any, where: str) -> float:
    if isinstance(value, str):  # YAML 1.1 reads 1e300 or 1e-3 (no dot) as a string
        try:
            return float(value)
        except ValueError:
            raise ScenarioError(
                f'{where}: expected a number, got the string {value!r} (not a number)'
            ) from None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ScenarioError(f'{where}: expected a number, got {value!r}')
    try:
        return float(value)
    except OverflowError:  # an integer beyond a float (401 digits)
        raise ScenarioError(
            f'{where}: expected a finite number, got an integer of about '
            f'{int(value.bit_length() * 0.30103) + 1} digits (too large for a float)'
        ) from None


def _path(value: Any, base: Path, where: str) -> str:
    if not isinstance(value, str) or not value:
        raise ScenarioError(f'{where}: expected a file path, got {value!r}')
    p = Path(value)
    p = p if p.is_absolute() else base / p
    if not p.is_file():
        raise ScenarioError(f'{where}: no such file {str(p)!r}')
    return str(p)


def _checked(fn: Callable[..., T], *args: Any) -> T:
    """``fn(*args)`` with its ValueError (which names the field) as a ScenarioError."""
    try:
        return fn(*args)
    except ValueError as exc:
        raise ScenarioError(str(exc)) from None


def _wrap(where: str, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """``fn(*args, **kwargs)`` with its ValueError / UnknownNameError prefixed by ``where``."""
    try:
        return fn(*args, **kwargs)
    except D.UnknownNameError as exc:
        raise ScenarioError(f'{where}: {exc}') from None
    except ValueError as exc:
        if isinstance(exc, ScenarioError):
            raise
        raise ScenarioError(f'{where}: {exc}') from None


def _shape(d: Any, where: str) -> Sphere | Box | Cylinder | Capsule:
    d = _keys(d, where, {'type', 'radius', 'length', 'size'}, {'type'})
    kind = d.pop('type')
    fields = {'sphere': {'radius'}, 'box': {'size'}, 'cylinder': {'radius', 'length'}}
    fields['capsule'] = fields['cylinder']
    if not isinstance(kind, str) or kind not in fields:
        raise ScenarioError(f'{where}.type: expected one of {sorted(fields)}, got {_brief(kind)}')
    _keys(d, where, fields[kind], fields[kind])
    if kind == 'box':
        return _wrap(where, Box, tuple(_vec(d['size'], 3, f'{where}.size')))
    args = [_num(d[k], f'{where}.{k}') for k in ('radius', 'length') if k in fields[kind]]
    return _wrap(where, {'sphere': Sphere, 'cylinder': Cylinder, 'capsule': Capsule}[kind], *args)


def _handle(d: Any, where: str) -> Handle:
    keys = {'name', 'link', 'translation', 'rpy', 'radius', 'max_angle', 'max_speed', 'max_rate'}
    d = _keys(d, where, keys, {'name', 'link'})
    kwargs: dict[str, Any] = {
        'name': _name(d['name'], f'{where}.name'),
        'link': _name(d['link'], f'{where}.link'),
    }
    if 'translation' in d:
        kwargs['translation'] = _vec(d['translation'], 3, f'{where}.translation', MAX_OFFSET, 'm')
    if 'rpy' in d:
        kwargs['rotation'] = rpy_to_matrix(_vec(d['rpy'], 3, f'{where}.rpy'))
    for k in ('radius', 'max_angle', 'max_speed', 'max_rate'):
        if k in d:
            kwargs[k] = _num(d[k], f'{where}.{k}')
    return _wrap(where, Handle, **kwargs)


TARGET_KEYS = {
    'name',
    'shape',
    'mass',
    'inertia',
    'urdf',
    'position',
    'orientation',
    'tumble',
    'linear_velocity',
    'angular_velocity',
    'joint_positions',
    'joint_velocities',
    'handles',
}


def target_from_dict(d: Any, where: str = 'target', base: Path | None = None) -> Target:
    """One target from its mapping (module docstring); ``base``: folder of relative paths.

    Parameters
    ----------
    d : mapping
        The target's entry (keys, frames and units of the module docstring).
    where : str
        Prefix of the messages (the entry's place in the document).
    base : Path, optional
        Folder the relative paths (URDF) are taken from (default: the working directory).

    Returns
    -------
    Target

    Raises
    ------
    ScenarioError
        Naming the field (``where`` prefixes it).
    """
    base = Path.cwd() if base is None else Path(base)
    d = _keys(d, where, TARGET_KEYS, {'name'})
    name = _name(d['name'], f'{where}.name')
    handles = d.get('handles', [])
    if not isinstance(handles, list):
        raise ScenarioError(f'{where}.handles: expected a list, got {type(handles).__name__}')
    hs = [_handle(h, f'{where}.handles[{k}]') for k, h in enumerate(handles)]
    state: dict[str, Any] = {}
    for k, bound, unit in (
        ('position', MAX_POSITION, 'm'),
        ('linear_velocity', MAX_SPEED, 'm/s'),
        ('angular_velocity', MAX_RATE, 'rad/s'),
    ):
        if k in d:
            state[k] = _vec(d[k], 3, f'{where}.{k}', bound, unit)
    if 'orientation' in d:
        state['orientation'] = _quat(d['orientation'], f'{where}.orientation')
    if 'tumble' in d and ('orientation' in d or 'angular_velocity' in d):
        raise ScenarioError(
            f'{where}.tumble: sets orientation and angular_velocity; give one or the other'
        )
    if ('urdf' in d) == ('shape' in d):
        raise ScenarioError(f'{where}: expected either urdf or shape (with mass), got both/none')
    if 'shape' in d:
        for k in ('joint_positions', 'joint_velocities'):
            if k in d:
                raise ScenarioError(f'{where}.{k}: a rigid target has no joints')
        if 'mass' not in d:
            raise ScenarioError(f'{where}: missing key mass (a rigid target needs one)')
        shape = _shape(d['shape'], f'{where}.shape')
        mass = _checked(check_mass, _num(d['mass'], f'{where}.mass'), f'{where}.mass')
        inertia = None
        if 'inertia' in d:
            try:
                inertia = np.asarray(d['inertia'], dtype=float)
            except (TypeError, ValueError, OverflowError):  # (an integer beyond a float)
                inertia = np.full(1, np.nan)
            if (
                inertia.shape != (3, 3)
                or not np.all(np.isfinite(inertia))
                or _has_bool(d['inertia'])
            ):
                raise ScenarioError(
                    f'{where}.inertia: expected a finite 3x3 matrix [kg m^2], got '
                    f'{_shown(d["inertia"])}'
                )
            inertia = _checked(check_rigid_inertia, mass, inertia, f'{where}.inertia')
        if 'tumble' in d:
            I_t = shape.inertia(mass) if inertia is None else inertia
            state.update(_tumble(d['tumble'], I_t, f'{where}.tumble'))
        target = _wrap(
            where,
            rigid_target,
            name,
            mass=mass,
            shape=shape,
            inertia=inertia,
            handles=hs,
            **state,
        )
        return _handles_outside(target, where)
    if 'mass' in d or 'inertia' in d:
        raise ScenarioError(f'{where}: mass and inertia come from the URDF of a urdf target')
    if 'joint_positions' in d:
        state['joint_positions'] = _vec(
            d['joint_positions'], None, f'{where}.joint_positions', MAX_JOINT_POSITION, 'rad | m'
        )
    if 'joint_velocities' in d:
        state['joint_velocities'] = _vec(
            d['joint_velocities'], None, f'{where}.joint_velocities', MAX_JOINT_RATE, 'rad/s | m/s'
        )
    urdf = _path(d['urdf'], base, f'{where}.urdf')
    target = _wrap(where, urdf_target, name, urdf, handles=hs, **state)
    if 'tumble' in d:
        tb_state = _tumble(d['tumble'], locked_inertia(target.model, target.q), f'{where}.tumble')
        target = _wrap(where, urdf_target, name, urdf, handles=hs, **{**state, **tb_state})
    return _handles_outside(target, where)


def _handles_outside(target: Target, where: str) -> Target:
    """``target``, once no handle origin lies deeper inside one of its own collision shapes
    than its capture radius (and :data:`HANDLE_DEPTH`; at its initial configuration): a grasp
    point on the axis of a bar the fingers close around is normal, one 0.2 m inside a ball
    was captured with the gripper passing through the body; else a ScenarioError naming the
    handle, the shape and the depth."""
    model, q = target.model, target.q
    for k, h in enumerate(target.handles):
        o, R = D.link_pose(model, q, h.link)
        point = o + R @ h.translation
        for shape in target.shapes:
            so, sR = D.link_pose(model, q, shape.link)
            local = shape.rotation.T @ (sR.T @ (point - so) - shape.translation)
            depth = -point_distance(shape.shape, local)
            if depth > max(HANDLE_DEPTH, h.radius):
                raise ScenarioError(
                    f'{where}.handles[{k}] {h.name!r}: expected a handle origin outside the '
                    f'target {target.name!r} or within its radius {h.radius:g} m of the '
                    f'surface, got one {depth:.4g} m inside its collision '
                    f'shape ({describe_shape(shape.shape)} on link {shape.link!r}): the grasp '
                    'point would be inside the solid'
                )
    return target


def _tumble(d: Any, inertia: np.ndarray, where: str) -> dict[str, np.ndarray]:
    keys = {'spin_rate', 'nutation', 'spin_axis', 'momentum_direction', 'phase'}
    d = _keys(d, where, keys, {'spin_rate', 'nutation'})
    kwargs: dict[str, Any] = {
        'spin_rate': _num(d['spin_rate'], f'{where}.spin_rate'),
        'nutation': _num(d['nutation'], f'{where}.nutation'),
    }
    if 'phase' in d:
        kwargs['phase'] = _num(d['phase'], f'{where}.phase')
    for k in ('spin_axis', 'momentum_direction'):
        if k in d:
            kwargs[k] = _vec(d[k], 3, f'{where}.{k}')
    tb = _wrap(where, tumble, inertia, **kwargs)
    if np.any(np.abs(tb.angular_velocity) > MAX_RATE):
        raise ScenarioError(
            f'{where}: expected an angular velocity of magnitude <= {MAX_RATE:g} rad/s per '
            f'coordinate, got {tb.angular_velocity.tolist()} (spin_rate {kwargs["spin_rate"]!r}, '
            f'nutation {kwargs["nutation"]!r})'
        )
    return {'orientation': tb.orientation, 'angular_velocity': tb.angular_velocity}


def scene_from_dict(d: Any, base: str | os.PathLike[str] | None = None) -> Scene:
    """A :class:`~.scene.Scene` with its targets from a scenario mapping (module docstring).

    Parameters
    ----------
    d : mapping
        The scenario document (keys, frames and units of the module docstring).
    base : str or path-like, optional
        Folder the relative paths are taken from (default: the working directory).

    Returns
    -------
    Scene

    Raises
    ------
    ScenarioError
        Naming the field; nothing is built then.
    """
    base_dir = Path.cwd() if base is None else Path(base)
    d = _keys(d, 'scenario', {'dt', 'robot', 'contact', 'targets'}, {'robot'})
    r = _keys(
        d['robot'],
        'robot',
        {
            'urdf',
            'gripper',
            'exclude_links',
            'joint_positions',
            'joint_velocities',
            'base_position',
            'base_orientation',
        },
        {'urdf', 'gripper'},
    )
    gripper = gripper_from_dict(r['gripper'])
    urdf = _path(r['urdf'], base_dir, 'robot.urdf')
    robot = _wrap('robot.urdf', D.load_urdf, urdf, floating_base=True)
    _wrap('robot.gripper.link', robot.frame, gripper.link)
    exclude = r.get('exclude_links', [])
    if not isinstance(exclude, list):
        raise ScenarioError('robot.exclude_links: expected a list of link names')
    shapes = _wrap(
        'robot.exclude_links',
        shapes_from_urdf,
        urdf,
        model=robot,
        exclude=[_name(x, f'robot.exclude_links[{k}]') for k, x in enumerate(exclude)],
    )
    q = D.neutral(robot)
    v = np.zeros(robot.nv)
    # the base placed by its link frame, as the simulator's initial_base_position places it
    q[:7] = _wrap(
        'robot.base_orientation',
        D.base_state_from_link,
        robot,
        _vec(r.get('base_position', (0, 0, 0)), 3, 'robot.base_position', MAX_POSITION, 'm'),
        _quat(r.get('base_orientation', (0, 0, 0, 1)), 'robot.base_orientation'),
    )[0]
    if 'joint_positions' in r:
        q[7:] = _vec(
            r['joint_positions'], robot.nq - 7, 'robot.joint_positions', MAX_ROBOT_JOINT, 'rad | m'
        )
    if 'joint_velocities' in r:
        v[6:] = _vec(
            r['joint_velocities'],
            robot.n,
            'robot.joint_velocities',
            MAX_ROBOT_JOINT,
            'rad/s | m/s',
        )
    dt = _num(d.get('dt', 1e-3), 'dt')
    if not MIN_DT <= dt <= MAX_DT:
        raise ScenarioError(
            f"dt: expected a step in [{MIN_DT:g}, {MAX_DT:g}] s (the simulator's "
            f'physics_rate_hz range), got {dt!r}'
        )
    law = _contact(d.get('contact', {'law': 'impact'}))
    scene = _wrap(
        'scenario', Scene, robot, gripper=gripper, shapes=shapes, dt=dt, contact=law, q=q, v=v
    )
    targets = d.get('targets', [])
    if not isinstance(targets, list):
        raise ScenarioError(f'targets: expected a list, got {type(targets).__name__}')
    for k, t in enumerate(targets):
        where = f'targets[{k}]'
        _wrap(where, scene.add_target, target_from_dict(t, where, base_dir))
    return scene


def gripper_from_dict(d: Any, where: str = 'robot.gripper') -> Gripper:
    """The gripper of a scenario's ``robot.gripper`` mapping (``link``, ``translation``,
    ``rpy``: module docstring); its link is not checked against a robot here.

    Parameters
    ----------
    d : mapping
        The ``robot.gripper`` entry.
    where : str
        Prefix of the messages.

    Returns
    -------
    Gripper

    Raises
    ------
    ScenarioError
        Naming the field.
    """
    g = _keys(d, where, {'link', 'translation', 'rpy'}, {'link'})
    return _wrap(
        where,
        Gripper,
        _name(g['link'], f'{where}.link'),
        rpy_to_matrix(_vec(g.get('rpy', (0, 0, 0)), 3, f'{where}.rpy')),
        _vec(g.get('translation', (0, 0, 0)), 3, f'{where}.translation', MAX_OFFSET, 'm'),
    )


def _contact(d: Any) -> ImpactLaw | CompliantLaw:
    laws = {
        'impact': (ImpactLaw, {'restitution', 'friction', 'tolerance'}),
        'compliant': (CompliantLaw, {'stiffness', 'damping', 'friction', 'stiction_speed'}),
    }
    d = _keys(d, 'contact', {'law'} | set().union(*(v[1] for v in laws.values())), {'law'})
    kind = d.pop('law')
    if not isinstance(kind, str) or kind not in laws:
        raise ScenarioError(f'contact.law: expected one of {sorted(laws)}, got {_brief(kind)}')
    cls, keys = laws[kind]
    _keys(d, f'contact ({kind})', keys)
    for f in dataclasses.fields(cls):  # the law's fields without a default (stiffness)
        no_default = f.default is dataclasses.MISSING
        if no_default and f.default_factory is dataclasses.MISSING and f.name not in d:
            raise ScenarioError(
                f'contact.{f.name}: required with law {kind} (no default), got none'
            )
    kwargs = {k: _num(v, f'contact.{k}') for k, v in d.items()}
    return _wrap('contact', cls, **kwargs)


def load_scenario(path: str | os.PathLike[str]) -> Scene:
    """:func:`scene_from_dict` of a YAML file (relative paths from its folder).

    Parameters
    ----------
    path : str or path-like
        The scenario file (UTF-8 YAML).

    Returns
    -------
    Scene

    Raises
    ------
    ScenarioError
        An unreadable file (missing, not a regular file, larger than
        :data:`MAX_SCENARIO_BYTES`), malformed YAML, a duplicated key, a document too large
        (aliases expanded) or too deep (:func:`~ffsim_ros.dynamics.yaml_input.load_yaml`), or a
        bad field (named).
    """
    p = Path(path)
    where = f'scenario file {str(p)!r}'
    try:
        # bounded and without blocking, as the nodes read theirs (a FIFO hung, /dev/zero was
        # read until the memory ran out)
        text = read_regular_file(p, MAX_SCENARIO_BYTES, 'scenario file').decode('utf-8')
        data = load_yaml(text, where)
    except FileKindError as exc:
        raise ScenarioError(str(exc)) from None
    except OSError as exc:
        raise ScenarioError(f'{where}: {exc.strerror}') from None
    except UnicodeDecodeError as exc:
        raise ScenarioError(f'{where}: expected UTF-8 text, got {exc}') from None
    except YamlInputError as exc:
        raise ScenarioError(str(exc)) from None
    return scene_from_dict(data, p.parent)


__all__ = [
    'MAX_OFFSET',
    'MAX_SCENARIO_BYTES',
    'ScenarioError',
    'gripper_from_dict',
    'load_scenario',
    'scene_from_dict',
    'target_from_dict',
]
