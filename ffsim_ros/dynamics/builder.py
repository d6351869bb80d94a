"""Models beyond URDF: a Python builder and a YAML format with spherical and universal joints.

URDF has no ball-and-socket (spherical) or universal joint; seed 001 [M secs. 3.1-3.2] is
written for them. :class:`ModelBuilder` assembles a :class:`~ffsim_ros.dynamics.model.Model`
body by body, and :func:`load_model` reads the same description from YAML (or a dict):

.. code-block:: yaml

    name: ball_chain            # optional
    floating_base: true         # optional, default true
    gravity: [0.0, 0.0, 0.0]    # optional [m/s^2], inertial frame
    base:
      link: base
      mass: 100.0               # [kg]
      com: [0.0, 0.0, 0.0]      # CoM in the link frame [m]
      inertia: [ixx, ixy, ixz, iyy, iyz, izz]   # about the CoM, link frame [kg m^2]
    bodies:                     # parents before children
      - link: upper_arm
        parent: base
        joint:
          name: shoulder
          type: spherical       # revolute | continuous | prismatic | spherical | universal
          xyz: [0.5, 0.0, 0.0]  # joint frame origin in the parent link frame [m]
          rpy: [0.0, 0.0, 0.0]  # joint frame orientation (URDF roll-pitch-yaw) [rad]
          axis: [0, 0, 1]       # revolute / prismatic / universal (first axis)
          axis2: [0, 1, 0]      # universal: second axis (in the child frame)
          lower: -1.0           # optional limits, a scalar or one value per DoF
          upper: 1.0
          effort: 10.0
          velocity: 2.0
          damping: 0.0
          friction: 0.0
        mass: 2.0
        com: [0.2, 0.0, 0.0]
        inertia: [0.01, 0, 0, 0.05, 0, 0.05]
    frames:                     # optional extra frames (end effectors, sensors)
      - {name: tool, parent: upper_arm, xyz: [0.4, 0, 0], rpy: [0, 0, 0]}

Joint conventions (:data:`~ffsim_ros.dynamics.model.JOINT_KINDS`): a spherical joint's
coordinates are the unit quaternion (x, y, z, w) of the child frame in the joint frame and
its velocity the child's angular velocity relative to the parent, in the child frame (as
Pinocchio's ``JointModelSpherical``); its effort is the torque on the child in the child
frame. A universal joint turns by ``q_1`` about ``axis`` and then by ``q_2`` about ``axis2``:
``R = R_joint Rot(axis, q_1) Rot(axis2, q_2)``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .lie import quat_to_matrix, rpy_to_matrix
from .model import JOINT_TYPES, BodySpec, Frame, Model, build_model

_JOINT_KEYS = {
    'name',
    'type',
    'xyz',
    'rpy',
    'axis',
    'axis2',
    'lower',
    'upper',
    'effort',
    'velocity',
    'damping',
    'friction',
}
_BODY_KEYS = {'link', 'parent', 'joint', 'mass', 'com', 'inertia'}
_BASE_KEYS = {'link', 'mass', 'com', 'inertia'}
_FRAME_KEYS = {'name', 'parent', 'xyz', 'rpy'}
_TOP_KEYS = {'name', 'floating_base', 'gravity', 'base', 'bodies', 'frames'}


def _floats(value: Any, what: str, expected: str) -> np.ndarray:
    """``value`` as a float array; a ValueError naming ``what`` for anything that is not
    numbers (strings, None, booleans -- YAML's ``yes``/``on`` -- or ragged lists)."""

    def numbers(x: Any) -> bool:
        if isinstance(x, list | tuple):
            return all(numbers(y) for y in x)
        return isinstance(x, int | float | np.floating | np.integer) and not isinstance(
            x, bool | np.bool_
        )

    if not (numbers(value) or isinstance(value, np.ndarray) and value.dtype.kind in 'iuf'):
        raise ValueError(f'{what}: expected {expected}, got {value!r}')
    try:
        return np.asarray(value, dtype=float)
    except ValueError:  # ragged
        raise ValueError(f'{what}: expected {expected}, got {value!r}') from None


def _vec3(value: Any, what: str) -> np.ndarray:
    arr = _floats(value, what, '3 finite values')
    if arr.shape != (3,) or not np.all(np.isfinite(arr)):
        raise ValueError(f'{what}: expected 3 finite values, got {value!r}')
    return arr


def _number(value: Any, what: str) -> float:
    """A finite real number (not a bool); a ValueError naming ``what`` otherwise."""
    arr = _floats(value, what, 'a finite number')
    if arr.shape != () or not np.isfinite(arr):
        raise ValueError(f'{what}: expected a finite number, got {value!r}')
    return float(arr)


def _name(value: Any, what: str) -> str:
    """A non-empty string; a ValueError naming ``what`` otherwise (no ``str()`` of a list)."""
    if not isinstance(value, str) or not value:
        shown = f'a {type(value).__name__}' if not isinstance(value, str) else "''"
        raise ValueError(f'{what}: expected a non-empty string, got {shown}')
    return value


def inertia_matrix(value: Any, what: str) -> np.ndarray:
    """A (3, 3) inertia tensor from 6 values ``[ixx, ixy, ixz, iyy, iyz, izz]`` or a 3x3.

    Parameters
    ----------
    value : (6,) or (3, 3) array_like
        The tensor's entries [kg m^2] (about the CoM, in the link frame for the builder; the
        frame is the caller's: it is copied, not rotated).
    what : str
        Names the argument in the messages.

    Returns
    -------
    (3, 3) ndarray
        The symmetric tensor [kg m^2] (a 3x3 input is copied as given, not symmetrized).

    Raises
    ------
    ValueError
        Any other shape (the message names ``what``).
    """
    arr = _floats(value, what, '[ixx, ixy, ixz, iyy, iyz, izz] or a 3x3 matrix of numbers')
    if arr.shape == (6,):
        ixx, ixy, ixz, iyy, iyz, izz = arr
        return np.array([[ixx, ixy, ixz], [ixy, iyy, iyz], [ixz, iyz, izz]])
    if arr.shape == (3, 3):
        return arr.copy()
    raise ValueError(
        f'{what}: expected [ixx, ixy, ixz, iyy, iyz, izz] or a 3x3 matrix, got shape {arr.shape}'
    )


class ModelBuilder:
    """Assemble a :class:`~ffsim_ros.dynamics.model.Model` body by body.

    Parameters
    ----------
    name : str
    floating_base : bool
        Free-floating 6-DoF base (default) or a base fixed at the inertial origin.
    gravity : (3,) array_like
        Inertial-frame gravitational acceleration [m/s^2].

    Examples
    --------
    >>> b = ModelBuilder('pendulum', floating_base=False, gravity=(0, 0, -9.81))
    >>> _ = b.add_base('ground', mass=1.0, inertia=[1, 0, 0, 1, 0, 1])
    >>> _ = b.add_body('bob', parent='ground', joint='ball', joint_type='spherical',
    ...                mass=1.0, com=(0, 0, -1), inertia=[0.01, 0, 0, 0.01, 0, 0.01])
    >>> model = b.build()
    >>> model.nq, model.nv
    (4, 3)
    """

    def __init__(
        self,
        name: str = 'robot',
        *,
        floating_base: bool = True,
        gravity: Sequence[float] = (0.0, 0.0, 0.0),
    ) -> None:
        self.name = _name(name, 'name')
        if not isinstance(floating_base, bool | np.bool_):
            raise ValueError(f'floating_base: expected true or false, got {floating_base!r}')
        self.floating_base = bool(floating_base)
        self.gravity = _vec3(gravity, 'gravity')
        self._bodies: list[BodySpec] = []
        self._body_of: dict[str, int] = {}
        self._frames: dict[str, Frame] = {}

    def add_base(
        self,
        link: str,
        *,
        mass: float,
        com: Sequence[float] = (0.0, 0.0, 0.0),
        inertia: Any,
    ) -> ModelBuilder:
        """Add the root body (``mass`` [kg], ``com`` in the link frame [m], ``inertia`` about
        the CoM in the link frame [kg m^2], 6 values or 3x3).

        Parameters
        ----------
        link : str
            Name of the base link (its frame is the base body frame).
        mass : float
            [kg].
        com : (3,) sequence of float
            CoM position in the link frame [m].
        inertia : (6,) or (3, 3) array_like
            ``[ixx, ixy, ixz, iyy, iyz, izz]`` or the tensor, about the CoM in the link frame's
            axes [kg m^2].

        Returns
        -------
        ModelBuilder
            ``self`` (calls chain).

        Raises
        ------
        ValueError
            A second base, an empty name, or malformed values (the message names the base).
        """
        if self._bodies:
            raise ValueError(
                f'base {link!r}: the model already has a base ({self._bodies[0].name})'
            )
        link = _name(link, 'base: link')
        self._add(
            BodySpec(
                name=link,
                parent=-1,
                joint_name='',
                joint_type='root',
                joint_rotation=np.eye(3),
                joint_translation=np.zeros(3),
                axis=np.array([1.0, 0.0, 0.0]),
                mass=_number(mass, f'base {link}: mass'),
                com=_vec3(com, f'base {link}: com'),
                inertia=inertia_matrix(inertia, f'base {link}: inertia'),
            )
        )
        return self

    def add_body(
        self,
        link: str,
        *,
        parent: str,
        joint: str,
        joint_type: str,
        xyz: Sequence[float] = (0.0, 0.0, 0.0),
        rpy: Sequence[float] = (0.0, 0.0, 0.0),
        axis: Sequence[float] = (0.0, 0.0, 1.0),
        axis2: Sequence[float] | None = None,
        mass: float,
        com: Sequence[float] = (0.0, 0.0, 0.0),
        inertia: Any,
        lower: float | Sequence[float] = -np.inf,
        upper: float | Sequence[float] = np.inf,
        effort: float | Sequence[float] = np.inf,
        velocity: float | Sequence[float] = np.inf,
        damping: float | Sequence[float] = 0.0,
        friction: float | Sequence[float] = 0.0,
    ) -> ModelBuilder:
        """Add a body moved by ``joint`` relative to the body of link ``parent``.

        Parameters
        ----------
        link : str
            Name of the new body's link (its frame is the joint frame at zero coordinates).
        parent : str
            A link already added (a body or a frame).
        joint, joint_type : str
            Joint name and one of :data:`~ffsim_ros.dynamics.model.JOINT_TYPES`.
        xyz, rpy : (3,) array_like
            Joint frame in the ``parent`` frame (the parent link's, or an added frame's)
            [m], [rad] (URDF roll-pitch-yaw).
        axis, axis2 : (3,) array_like
            Joint axis (first axis of a universal joint) and a universal joint's second axis,
            in the joint frame (at zero angles) [-], normalized by the model; ignored for a
            spherical joint.
        mass : float
            [kg].
        com : (3,) sequence of float
            CoM in the new link's frame [m].
        inertia : (6,) or (3, 3) array_like
            About the CoM in the new link frame's axes [kg m^2] (as :meth:`add_base`).
        lower, upper, effort, velocity, damping, friction : float or sequence
            Per joint DoF (a scalar applies to every DoF; joint coordinates, not a spatial
            frame): position limits [rad | m], effort limit [N m | N], speed limit
            [rad/s | m/s], viscous damping [N m s/rad | N s/m], Coulomb friction [N m | N].

        Returns
        -------
        ModelBuilder
            ``self`` (calls chain).
        """
        if not self._bodies:
            raise ValueError(f'body {link!r}: add the base first')
        link = _name(link, 'body: link')
        joint = _name(joint, f'body {link}: joint name')
        parent = _name(parent, f'body {link}: parent')
        if not isinstance(joint_type, str) or joint_type not in JOINT_TYPES:
            raise ValueError(f'joint {joint}: expected one of {JOINT_TYPES}, got {joint_type!r}')
        host = self._frame_of(parent, f'body {link}')
        rot = host.rotation @ rpy_to_matrix(_vec3(rpy, f'joint {joint}: rpy'))
        trans = host.rotation @ _vec3(xyz, f'joint {joint}: xyz') + host.translation
        self._add(
            BodySpec(
                name=link,
                parent=host.body,
                joint_name=joint,
                joint_type=joint_type,
                joint_rotation=rot,
                joint_translation=trans,
                axis=_vec3(axis, f'joint {joint}: axis'),
                axis2=None if axis2 is None else _vec3(axis2, f'joint {joint}: axis2'),
                mass=_number(mass, f'body {link}: mass'),
                com=_vec3(com, f'body {link}: com'),
                inertia=inertia_matrix(inertia, f'body {link}: inertia'),
                lower=lower,
                upper=upper,
                effort=effort,
                velocity=velocity,
                damping=damping,
                friction=friction,
            )
        )
        return self

    def add_frame(
        self,
        name: str,
        *,
        parent: str,
        xyz: Sequence[float] = (0.0, 0.0, 0.0),
        rpy: Sequence[float] = (0.0, 0.0, 0.0),
    ) -> ModelBuilder:
        """Add a massless frame rigidly attached to link ``parent`` (like a URDF fixed joint).

        Parameters
        ----------
        name : str
            Name of the new frame (not the name of a link or frame already added).
        parent : str
            A link or frame already added; the new frame is carried by its body.
        xyz : (3,) array_like
            Origin of the new frame in the ``parent`` frame [m] (the parent link's frame: its
            joint frame at zero joint coordinates; or the parent frame's own axes and origin).
        rpy : (3,) array_like
            Orientation of the new frame in the ``parent`` frame [rad]: URDF roll-pitch-yaw,
            fixed axes X, then Y, then Z (``R = Rz(yaw) Ry(pitch) Rx(roll)``, which maps the
            new frame's coordinates to the parent's).

        Returns
        -------
        ModelBuilder
            ``self`` (calls chain).

        Raises
        ------
        ValueError
            An empty name, one already used, an unknown parent, or ``xyz`` / ``rpy`` not 3
            finite values (the message names the frame).
        """
        name = _name(name, 'frame: name')
        parent = _name(parent, f'frame {name}: parent')
        if name in self._frames:
            raise ValueError(f'frame {name!r}: a link or frame of that name exists')
        host = self._frame_of(parent, f'frame {name}')
        self._frames[name] = Frame(
            host.body,
            host.rotation @ rpy_to_matrix(_vec3(rpy, f'frame {name}: rpy')),
            host.rotation @ _vec3(xyz, f'frame {name}: xyz') + host.translation,
        )
        return self

    def build(self) -> Model:
        """The validated model (see :func:`~ffsim_ros.dynamics.model.build_model`).

        Returns
        -------
        Model
        """
        if not self._bodies:
            raise ValueError('a model needs a base: call add_base first')
        return build_model(
            self._bodies,
            self._frames,
            list(self._frames),
            floating_base=self.floating_base,
            gravity=self.gravity,
            name=self.name,
        )

    def _add(self, spec: BodySpec) -> None:
        if spec.name in self._frames:
            raise ValueError(f'body {spec.name!r}: a link or frame of that name exists')
        self._body_of[spec.name] = len(self._bodies)
        self._bodies.append(spec)
        self._frames[spec.name] = Frame(len(self._bodies) - 1, np.eye(3), np.zeros(3))

    def _frame_of(self, link: str, where: str) -> Frame:
        try:
            return self._frames[link]
        except KeyError:
            raise ValueError(
                f'{where}: unknown parent link {link!r}; known: {list(self._frames)}'
            ) from None


def _check_keys(data: Mapping[str, Any], allowed: set[str], where: str) -> None:
    if not isinstance(data, Mapping):
        raise ValueError(f'{where}: expected a mapping, got {type(data).__name__}')
    unknown = sorted(set(data) - allowed)
    if unknown:
        raise ValueError(f'{where}: unknown keys {unknown}; expected some of {sorted(allowed)}')


def _required(data: Mapping[str, Any], key: str, where: str) -> Any:
    if key not in data:
        raise ValueError(f'{where}: missing key {key!r}')
    return data[key]


def _list(data: Mapping[str, Any], key: str) -> list:
    """The list under ``key`` (empty when absent or null); a ValueError naming it otherwise."""
    value = data.get(key)
    if value is None:
        return []
    if not isinstance(value, list | tuple):
        raise ValueError(f'{key}: expected a list, got {type(value).__name__}')
    return list(value)


def model_from_dict(data: Mapping[str, Any]) -> Model:
    """Build a model from the mapping described in this module's docstring.

    Parameters
    ----------
    data : Mapping
        The parsed YAML document (keys, frames and units as in the module docstring).

    Returns
    -------
    Model

    Raises
    ------
    ValueError
        Unknown or missing keys, wrong sizes, unknown parents or joint types, or anything
        :func:`~ffsim_ros.dynamics.model.build_model` rejects; the message names the body,
        joint or frame.
    """
    _check_keys(data, _TOP_KEYS, 'model')
    builder = ModelBuilder(
        data.get('name', 'robot'),
        floating_base=data.get('floating_base', True),
        gravity=data.get('gravity', (0.0, 0.0, 0.0)),
    )
    base = _required(data, 'base', 'model')
    _check_keys(base, _BASE_KEYS, 'base')
    builder.add_base(
        _name(_required(base, 'link', 'base'), 'base: link'),
        mass=_required(base, 'mass', 'base'),
        com=base.get('com', (0.0, 0.0, 0.0)),
        inertia=_required(base, 'inertia', 'base'),
    )
    pending_frames = _list(data, 'frames')
    for k, body in enumerate(_list(data, 'bodies')):
        where = f'bodies[{k}]'
        _check_keys(body, _BODY_KEYS, where)
        link = _name(_required(body, 'link', where), f'{where}.link')
        joint = _required(body, 'joint', f'body {link}')
        _check_keys(joint, _JOINT_KEYS, f'body {link}: joint')
        options = {key: joint[key] for key in joint if key not in ('name', 'type')}
        builder.add_body(
            link,
            parent=_required(body, 'parent', f'body {link}'),
            joint=_required(joint, 'name', f'body {link}: joint'),
            joint_type=_required(joint, 'type', f'body {link}: joint'),
            mass=_required(body, 'mass', f'body {link}'),
            com=body.get('com', (0.0, 0.0, 0.0)),
            inertia=_required(body, 'inertia', f'body {link}'),
            **options,
        )
    for k, frame in enumerate(pending_frames):
        where = f'frames[{k}]'
        _check_keys(frame, _FRAME_KEYS, where)
        builder.add_frame(
            _required(frame, 'name', where),
            parent=_required(frame, 'parent', where),
            xyz=frame.get('xyz', (0.0, 0.0, 0.0)),
            rpy=frame.get('rpy', (0.0, 0.0, 0.0)),
        )
    return builder.build()


def load_model(source: str | os.PathLike[str] | Mapping[str, Any]) -> Model:
    """Load a model from a YAML file or string (this module's format), a mapping, or a URDF.

    Parameters
    ----------
    source : str, path-like or mapping
        A ``.yaml``/``.yml`` path or YAML text, a ``.urdf`` path or URDF XML (delegated to
        :func:`~ffsim_ros.dynamics.urdf.load_urdf` with a floating base), or the parsed mapping.

    Returns
    -------
    Model
    """
    if isinstance(source, Mapping):
        return model_from_dict(source)
    text = str(source)
    path = Path(text) if len(text) < 4096 and '\n' not in text else None
    if (path is not None and path.suffix == '.urdf') or text.lstrip().startswith('<'):
        from .urdf import load_urdf

        return load_urdf(source)
    where = 'model YAML'
    if path is not None and (path.exists() or path.suffix in ('.yaml', '.yml')):
        where = f'model file {text!r}'
        if not path.exists():
            raise FileNotFoundError(f'{where}: no such file')
        if not path.is_file():
            raise ValueError(f'{where}: expected a file, got a directory or special file')
        try:
            text = path.read_bytes().decode('utf-8')
        except UnicodeDecodeError as exc:
            raise ValueError(f'{where}: expected UTF-8 YAML text, got {exc}') from None
    from .yaml_input import load_yaml

    data = load_yaml(text, where)
    if not isinstance(data, Mapping):
        raise ValueError(
            f'model YAML: expected a mapping at the top level, got {type(data).__name__} '
            f'(a missing file? {text[:80]!r})'
        )
    return model_from_dict(data)


def random_model(
    seed: int,
    n: int,
    *,
    joint_types: Sequence[str] = JOINT_TYPES,
    floating_base: bool = True,
    gravity: Sequence[float] = (0.0, 0.0, 0.0),
    branching: float = 0.3,
) -> Model:
    """A random tree of ``n`` moving bodies (for tests and benchmarks), reproducible by seed.

    Parameters
    ----------
    seed : int
        Seed of ``numpy.random.default_rng``.
    n : int
        Number of moving joints (>= 0).
    joint_types : sequence of str
        Joint types, each used ``n / len(joint_types)`` times (rounded) in a random order.
    floating_base : bool
    gravity : (3,) array_like
        Gravitational acceleration, inertial frame [m/s^2].
    branching : float
        Probability that a body hangs from a random ancestor of the last body instead of the
        last body itself (bodies are numbered depth-first, as Pinocchio requires).

    Returns
    -------
    Model
        Masses 0.5-3 kg (base 20 kg), random principal inertias satisfying the triangle
        inequality in random orientations, random joint placements and unit axes; every body
        has a frame ``tip_<k>`` 0.3 m along its x axis.
    """
    rng = np.random.default_rng(seed)
    for kind in joint_types:
        if kind not in JOINT_TYPES:
            raise ValueError(f'joint_types: expected some of {JOINT_TYPES}, got {kind!r}')

    def inertia(scale: float) -> np.ndarray:
        a, b = rng.uniform(0.5, 1.5, size=2) * scale
        c = rng.uniform(abs(a - b) + 0.05 * scale, a + b)  # triangle inequality holds
        R = quat_to_matrix(rng.normal(size=4))  # a uniformly random rotation
        return R @ np.diag([a, b, c]) @ R.T

    def unit() -> np.ndarray:
        u = rng.normal(size=3)
        return u / np.linalg.norm(u)

    b = ModelBuilder(f'random_{seed}', floating_base=floating_base, gravity=gravity)
    b.add_base('body_0', mass=20.0, com=rng.uniform(-0.1, 0.1, 3), inertia=inertia(2.0))
    names = ['body_0']
    kinds = [str(joint_types[k % len(joint_types)]) for k in range(n)]
    rng.shuffle(kinds)
    path = [0]  # the last body and its ancestors: drawing parents on it numbers depth-first
    for k in range(1, n + 1):
        at = len(path) - 1 if rng.uniform() > branching else int(rng.integers(len(path)))
        parent = names[path[at]]
        path = path[: at + 1] + [k]
        kind = kinds[k - 1]
        first = unit()
        second = np.cross(first, unit())
        b.add_body(
            f'body_{k}',
            parent=parent,
            joint=f'joint_{k}',
            joint_type=kind,
            xyz=rng.uniform(-0.4, 0.4, 3),
            rpy=rng.uniform(-np.pi, np.pi, 3),
            axis=first,
            axis2=second / np.linalg.norm(second) if kind == 'universal' else None,
            mass=rng.uniform(0.5, 3.0),
            com=rng.uniform(-0.2, 0.2, 3),
            inertia=inertia(0.05),
        )
        names.append(f'body_{k}')
    for k, name in enumerate(names):
        b.add_frame(f'tip_{k}', parent=name, xyz=(0.3, 0.0, 0.0))
    return b.build()


def random_configuration(model: Model, rng: np.random.Generator) -> np.ndarray:
    """A random ``q`` (nq,): base anywhere within 1 m, random attitudes, angles in [-1, 1].

    Spherical joints get uniformly random unit quaternions; other joints uniform values in
    ``[-1, 1]`` clipped to their limits.

    Parameters
    ----------
    model : Model
    rng : numpy.random.Generator
        Source of the draws (advanced).

    Returns
    -------
    (nq,) ndarray
        ``[r0, Q0, phi]``: base CoM in ``[-1, 1]^3`` [m] and a uniformly random attitude
        (x, y, z, w) (floating base), then the joint coordinates [rad | m].
    """
    q = np.zeros(model.nq)
    if model.floating_base:
        quat = rng.normal(size=4)
        q[:3] = rng.uniform(-1.0, 1.0, 3)
        q[3:7] = quat / np.linalg.norm(quat)
    off = model.nv - model.n
    for k, kind in enumerate(model.joint_types):
        iq = model.idx_q[k]
        if kind == 'spherical':
            quat = rng.normal(size=4)
            q[iq : iq + 4] = quat / np.linalg.norm(quat)
        else:
            nj = model.nvs[k]
            dof = slice(model.idx_v[k] - off, model.idx_v[k] - off + nj)
            q[iq : iq + nj] = np.clip(
                rng.uniform(-1.0, 1.0, nj), model.lower[dof], model.upper[dof]
            )
    return q
