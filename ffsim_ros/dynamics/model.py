"""Immutable kinematic-tree model of a robot on a floating (or fixed) base.

Glossary (SPART / SpaceDyn names, seed 000):

=============  ================================================================================
``n``          number of joint DoFs (size of ``phidot`` and of the joint efforts ``tau``)
``q``          configuration ``[r0 (3), Q0 (4), phi]`` (floating) or ``phi`` (fixed base);
               ``phi`` has ``n`` entries unless a spherical joint (4 coordinates, 3 DoFs)
               is present: ``nq = 7 + n + (number of spherical joints)``
``v``          velocity ``[V0 (3), w0 (3), phidot (n)]`` (floating) or ``phidot``
``r0, V0``     base-body CoM position / velocity, inertial frame [S0 eqs. 17, 22]
``Q0, w0``     base orientation quaternion (x, y, z, w) / angular velocity, inertial frame
``H0``         base inertia matrix, 6x6 [S0 eq. 20]
``H0m``        base-manipulator coupling inertia, 6xn [S0 eq. 23]
``Hm``         manipulator inertia, nxn (``H_phi``) [S0 eq. 24]
``Js, Jm``     base and manipulator Jacobians of a point [S0 eq. 5]
``J*``         generalized Jacobian ``Jm - Js H0^-1 H0m`` (Yoshida & Umetani 1993)
=============  ================================================================================

``q`` is the whole configuration; seed 000's ``q`` in [S0 eqs. 21, 26-39] is the joint angles,
``phi`` here (its [S0 eqs. 40-41] use ``q`` for all generalized coordinates, as the code does).
The names the code uses otherwise than the seeds: docs/equations.md, "Code names that differ
from the seeds'".

A *body* is a set of links welded together by fixed joints; its frame is the frame of its
first link (the child link of the moving joint, or the root link for the base). Every link
stays addressable by name as a :class:`Frame` of its body.
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import NamedTuple

import numpy as np
from scipy.linalg import lapack

from .kernels.entry import e_mass_matrix, taken
from .kernels.layout import (
    PRISMATIC,
    REVOLUTE,
    ROOT_FIXED,
    ROOT_FREE,
    SPHERICAL,
    UNIVERSAL,
    ModelArrays,
    pack,
)

#: Moving joint types: name -> (kernel code, configuration size nq_j, velocity size nv_j).
#: 'spherical' (ball-and-socket, [M sec. 3.1]): unit quaternion (x, y, z, w) of the child
#: frame in the joint frame, velocity = relative angular velocity in the child frame.
#: 'universal' ([M sec. 3.2], n_j = 2 axes, n'_j = 1 constraint): angles about ``axis`` then
#: ``axis2``.
JOINT_KINDS = {
    'revolute': (REVOLUTE, 1, 1),
    'continuous': (REVOLUTE, 1, 1),
    'prismatic': (PRISMATIC, 1, 1),
    'spherical': (SPHERICAL, 4, 3),
    'universal': (UNIVERSAL, 2, 2),
}
JOINT_TYPES = tuple(JOINT_KINDS)


class UnknownNameError(KeyError, ValueError):
    """A link or joint name the model does not have (both a KeyError and a ValueError)."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ''


@dataclass(frozen=True)
class Frame:
    """A named frame rigidly attached to a body.

    Attributes
    ----------
    body : int
        Index of the body carrying the frame.
    rotation : (3, 3) ndarray
        Orientation of the frame in the body frame.
    translation : (3,) ndarray
        Origin of the frame in the body frame [m].
    """

    body: int
    rotation: np.ndarray
    translation: np.ndarray


@dataclass(frozen=True)
class BodySpec:
    """Input description of one body for :func:`build_model` (inertial data in body frame).

    ``joint_rotation``/``joint_translation`` place the joint frame (= this body's frame at
    zero joint position) in the parent body frame; ``axis`` is expressed in that frame.
    The base body has ``parent = -1`` and ``joint_type = 'root'``. ``axis2`` is the second
    axis of a universal joint (in the joint frame at zero angles); limits, damping and
    friction are per joint DoF (a scalar applies to every DoF of the joint).
    """

    name: str
    parent: int
    joint_name: str
    joint_type: str
    joint_rotation: np.ndarray
    joint_translation: np.ndarray
    axis: np.ndarray
    mass: float
    com: np.ndarray
    inertia: np.ndarray
    lower: float = -np.inf
    upper: float = np.inf
    effort: float = np.inf
    velocity: float = np.inf
    damping: float = 0.0
    friction: float = 0.0
    axis2: np.ndarray | None = None


def _readonly(a: np.ndarray) -> np.ndarray:
    a = np.ascontiguousarray(a)
    a.setflags(write=False)
    return a


class Mimic(NamedTuple):
    """A URDF ``<mimic>`` coupling, ``joint = multiplier * mimicked + offset``, recorded on the
    :class:`Model` (``Model.mimics``) but not modelled: both joints move independently."""

    joint: str
    mimicked: str
    multiplier: float = 1.0
    offset: float = 0.0


@dataclass(frozen=True, eq=False)
class Model:
    """Immutable robot model (see the module glossary). Build with :func:`load_urdf`.

    Attributes
    ----------
    name : str
    floating_base : bool
        True for a free-floating base (6-DoF root), False for a base fixed at the origin.
    nq, nv, n : int
        Configuration, velocity and joint dimensions.
    joint_names : tuple of str
        Moving joints in velocity order.
    joint_types : tuple of str
        One of :data:`JOINT_TYPES` per moving joint.
    idx_q, idx_v : tuple of int
        Per moving joint, the index of its first coordinate in ``q`` and in ``v``.
    nqs, nvs : tuple of int
        Per moving joint, its number of coordinates (4 for a spherical joint) and of DoFs.
    link_names : tuple of str
        Every link of the description (merged and massless links included).
    body_names : tuple of str
        Name of each body's first link; body 0 is the base.
    frames : Mapping[str, Frame]
        Link name -> frame on its body.
    lower, upper : (n,) ndarray
        Joint position limits per joint DoF [rad | m] (-inf/inf when unlimited; always
        unlimited for a spherical joint).
    effort_limit, velocity_limit : (n,) ndarray
        Joint effort [N m | N] and speed [rad/s | m/s] limits per DoF, >= 0 (inf when unset).
        An effort limit of 0 is a passive joint; a speed limit of 0, what published URDFs
        carry where the value is unknown, means no speed limit.
    mimics : tuple of Mimic
        The URDF's ``<mimic>`` couplings between joints of the model (recorded, not modelled:
        the joints move independently; the reactionless controller holds them).
    joint_dynamics : bool
        Whether joint damping/friction (``arrays.damping``/``arrays.friction``) are applied.
    arrays : ModelArrays
        Flat arrays of the model (read-only).
    packed : tuple of ndarray
        ``arrays`` packed into one int64 and one float64 array for the compiled kernels.
    shapes : tuple of tuple
        ``((nq,), (nv,), (n,))``, the shapes of one state's ``q``, ``v`` and ``tau`` (built
        once: the per-call fast paths compare against them).
    """

    name: str
    floating_base: bool
    nq: int
    nv: int
    n: int
    joint_names: tuple[str, ...]
    joint_types: tuple[str, ...]
    link_names: tuple[str, ...]
    body_names: tuple[str, ...]
    frames: Mapping[str, Frame]
    lower: np.ndarray
    upper: np.ndarray
    effort_limit: np.ndarray
    velocity_limit: np.ndarray
    arrays: ModelArrays
    joint_dynamics: bool = False
    mimics: tuple[Mimic, ...] = ()
    idx_q: tuple[int, ...] = ()
    idx_v: tuple[int, ...] = ()
    nqs: tuple[int, ...] = ()
    nvs: tuple[int, ...] = ()
    _joint_index: Mapping[str, int] = field(default_factory=dict, repr=False)
    packed: tuple[np.ndarray, np.ndarray] = field(init=False, repr=False)
    shapes: tuple[tuple[int], tuple[int], tuple[int]] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        # (idata, fdata): the arrays handed to the compiled entry points (kernels.pack)
        object.__setattr__(self, 'packed', pack(self.arrays))
        object.__setattr__(self, 'shapes', ((self.nq,), (self.nv,), (self.n,)))

    def __reduce__(self) -> tuple[object, tuple[dict[str, object]]]:
        """Pickling (a multiprocessing worker, ``copy.deepcopy``): the constructor's fields,
        the read-only mappings as plain dicts; :func:`_unpickled_model` makes them read-only
        again, and every array, and rebuilds ``packed`` and ``shapes``."""
        fields = {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.init}
        fields['frames'] = dict(self.frames)
        fields['_joint_index'] = dict(self._joint_index)
        return _unpickled_model, (fields,)

    @property
    def gravity(self) -> np.ndarray:
        """(3,) gravitational acceleration in the inertial frame [m/s^2]."""
        return self.arrays.gravity

    @property
    def base_link(self) -> str:
        """Name of the root link."""
        return self.body_names[0]

    @property
    def total_mass(self) -> float:
        """Total mass M of the system [kg] [S0 eqs. 9-10]."""
        return float(self.arrays.mass.sum())

    @property
    def joint_damping(self) -> np.ndarray:
        """(n,) viscous damping of each joint from the description."""
        return self.arrays.damping[self.nv - self.n :]

    @property
    def joint_friction(self) -> np.ndarray:
        """(n,) Coulomb friction of each joint from the description."""
        return self.arrays.friction[self.nv - self.n :]

    @property
    def single_dof_joints(self) -> bool:
        """Whether every moving joint has one coordinate and one DoF (what URDF describes)."""
        return all(k == 1 for k in self.nqs)

    def joint_q_slice(self, joint: str) -> slice:
        """The coordinates of ``joint`` in ``q`` (4 for a spherical joint, (x, y, z, w)).

        Parameters
        ----------
        joint : str
            Name of a moving joint (:class:`UnknownNameError` otherwise).

        Returns
        -------
        slice
        """
        k = self.joint_index(joint)
        return slice(self.idx_q[k], self.idx_q[k] + self.nqs[k])

    def joint_v_slice(self, joint: str) -> slice:
        """The DoFs of ``joint`` in ``v`` (and, offset by ``nv - n``, in ``tau``).

        Parameters
        ----------
        joint : str
            Name of a moving joint (:class:`UnknownNameError` otherwise).

        Returns
        -------
        slice
        """
        k = self.joint_index(joint)
        return slice(self.idx_v[k], self.idx_v[k] + self.nvs[k])

    def joint_index(self, joint: str) -> int:
        """Index of ``joint`` in ``joint_names`` (its position in ``phi`` when every joint has
        one DoF; see :meth:`joint_q_slice` / :meth:`joint_v_slice` otherwise).

        Parameters
        ----------
        joint : str
            Name of a moving joint.

        Returns
        -------
        int

        Raises
        ------
        UnknownNameError
            If the model has no moving joint of that name.
        """
        try:
            return self._joint_index[joint]
        except KeyError:
            raise UnknownNameError(
                f'unknown joint {joint!r}; the model has {list(self.joint_names)}'
            ) from None

    def frame(self, link: str) -> Frame:
        """The :class:`Frame` of ``link``.

        Parameters
        ----------
        link : str
            Name of a link of the model.

        Returns
        -------
        Frame
            The link frame's body and its pose in that body's frame.

        Raises
        ------
        UnknownNameError
            If the model has no link of that name.
        TypeError
            ``link`` not a string (a list would be "unhashable").
        """
        try:
            return self.frames[link]
        except TypeError:
            raise TypeError(
                f'link: expected a link name (str), got {type(link).__name__} {link!r:.60}'
            ) from None
        except KeyError:
            raise UnknownNameError(
                f'unknown link {link!r}; the model has {list(self.link_names)}'
            ) from None


def _unpickled_model(fields: dict[str, object]) -> Model:
    """The :class:`Model` of :meth:`Model.__reduce__`'s fields, as immutable as the one
    pickled: read-only mappings and arrays (unpickled arrays come back writeable)."""
    fields = dict(fields)
    frames: Mapping[str, Frame] = fields['frames']  # type: ignore[assignment]
    fields['frames'] = MappingProxyType(
        {
            name: Frame(f.body, _readonly(f.rotation), _readonly(f.translation))
            for name, f in frames.items()
        }
    )
    index: Mapping[str, int] = fields['_joint_index']  # type: ignore[assignment]
    fields['_joint_index'] = MappingProxyType(dict(index))
    for key in ('lower', 'upper', 'effort_limit', 'velocity_limit'):
        fields[key] = _readonly(fields[key])  # type: ignore[arg-type]
    arrays: ModelArrays = fields['arrays']  # type: ignore[assignment]
    fields['arrays'] = ModelArrays(*(_readonly(a) for a in arrays))
    return Model(**fields)  # type: ignore[arg-type]


def with_gravity(model: Model, gravity: Sequence[float]) -> Model:
    """A copy of ``model`` with gravitational acceleration ``gravity`` (3,) [m/s^2].

    Parameters
    ----------
    model : Model
    gravity : (3,) sequence of float
        Gravitational acceleration in the inertial frame [m/s^2], finite.

    Returns
    -------
    Model
    """
    g = _vector(gravity, 3, 'gravity')
    return dataclasses.replace(model, arrays=model.arrays._replace(gravity=_readonly(g)))


def with_joint_dynamics(model: Model, enabled: bool = True) -> Model:
    """A copy of ``model`` that applies (or not) the joint damping and friction it carries.

    Parameters
    ----------
    model : Model
    enabled : bool
        Apply them (True) or not (False).

    Returns
    -------
    Model

    Raises
    ------
    TypeError
        ``enabled`` not a bool (a string such as ``'no'`` would otherwise switch them on).
    """
    if not isinstance(enabled, bool | np.bool_):
        raise TypeError(f'enabled: expected a bool, got {type(enabled).__name__} {enabled!r}')
    return dataclasses.replace(model, joint_dynamics=bool(enabled))


def _unit_axis(value: Sequence[float], what: str) -> np.ndarray:
    ax = np.asarray(value, dtype=float).reshape(-1)
    # scaled by its largest component first: a huge axis (1e200) neither overflows nor fails
    scale = float(np.max(np.abs(ax))) if ax.shape == (3,) else float('nan')
    if not (np.isfinite(scale) and scale > 0.0):
        raise ValueError(f'{what}: expected a non-zero finite 3-vector, got {ax.tolist()}')
    ax = ax / scale
    return ax / float(np.linalg.norm(ax))


def _per_dof(value: float | Sequence[float], size: int, joint: str, what: str) -> list[float]:
    """``value`` for each of the joint's ``size`` DoFs (a scalar applies to all)."""
    expected = f'joint {joint}: {what} expected a number or {size} numbers (one per DoF)'
    items = value if isinstance(value, list | tuple | np.ndarray) else [value]
    if any(isinstance(x, bool | np.bool_ | str | bytes) or x is None for x in items):
        raise ValueError(f'{expected}, got {value!r}')
    try:
        if np.ndim(value) == 0:
            return [float(value)] * size  # type: ignore[arg-type]
        arr = np.asarray(value, dtype=float).reshape(-1)
    except (TypeError, ValueError):
        raise ValueError(f'{expected}, got {value!r}') from None
    if arr.shape != (size,):
        raise ValueError(
            f'joint {joint}: {what} expected a scalar or {size} values (one per DoF), '
            f'got {arr.tolist()}'
        )
    return arr.tolist()


def _vector(value: Sequence[float], size: int, what: str) -> np.ndarray:
    kind = np.asarray(value).dtype.kind if value is not None else 'None'
    if kind not in 'fiu':  # complex numbers, strings, None: a ValueError, as build_model's
        raise ValueError(f'{what}: expected real numbers, got {value!r}')
    arr = np.asarray(value, dtype=float)
    if arr.shape != (size,):
        raise ValueError(f'{what}: expected {size} values, got shape {arr.shape}')
    if not np.all(np.isfinite(arr)):
        raise ValueError(f'{what}: expected finite values, got {arr.tolist()}')
    return arr.copy()


class InertiaWarning(UserWarning):
    """A link's inertia is physically inconsistent but was loaded as given (non-strict mode)."""


class MimicWarning(UserWarning):
    """A URDF ``<mimic>`` joint was loaded as an independent joint (the coupling is not
    modelled), as Pinocchio's and MuJoCo's URDF parsers do by default."""


class LimitWarning(UserWarning):
    """A URDF joint limit was loaded as read but leaves the joint unable to move (a revolute
    or prismatic ``<limit>`` without ``lower``/``upper``: 0 and 0, as urdfdom reads it)."""


def inertia_problem(
    mass: float, inertia: np.ndarray, where: str, *, atol: float = 0.0
) -> tuple[str, str] | None:
    """The physical inconsistency of a rigid body's mass and inertia about its CoM, if any.

    Parameters
    ----------
    mass : float
        [kg].
    inertia : (3, 3) array_like
        Inertia tensor about the CoM [kg m^2], in any frame.
    where : str
        Names the link or body in messages.
    atol : float
        Round-off allowed on top of the relative 1e-12 [kg m^2]: a body merged from links
        carries that of the parallel-axis terms (``1e-12 m |c|^2``).

    Returns
    -------
    None, or ``(kind, message)`` with ``kind`` ``'indefinite'`` (a negative principal moment)
    or ``'triangle'`` (principal moments violating ``I_a + I_b >= I_c``, checked to a
    relative 1e-6, the precision URDF files are printed with). A point mass or a thin rod
    (positive semi-definite, singular) is consistent.

    Raises
    ------
    ValueError
        Malformed input, whatever the mode: negative or non-finite mass, non-finite or
        non-symmetric inertia.
    """
    if not np.isfinite(mass) or mass < 0.0:
        raise ValueError(f'{where}: mass must be finite and >= 0, got {mass}')
    inertia = np.asarray(inertia, dtype=float)
    if not np.all(np.isfinite(inertia)):
        raise ValueError(f'{where}: inertia has non-finite entries')
    scale = max(float(np.abs(inertia).max()), 1e-300)
    if not np.allclose(inertia, inertia.T, rtol=0.0, atol=1e-12 * scale):
        raise ValueError(f'{where}: inertia tensor is not symmetric: {inertia.tolist()}')
    if not np.any(inertia):
        return None
    eig = np.linalg.eigvalsh(inertia)
    tol = 1e-12 * scale + atol
    if eig[0] < -tol:
        return 'indefinite', (
            f'{where}: inertia tensor is not positive semi-definite (principal moments '
            f'{eig.tolist()})'
        )
    # URDF files print inertias rounded (CAD exports often to 6 significant digits): the
    # triangle inequality is checked to that precision, so rounding alone never rejects a model
    if eig[0] + eig[1] < eig[2] * (1.0 - 1e-6) - tol:
        return 'triangle', (
            f'{where}: inertia violates the triangle inequality (principal moments '
            f'{eig.tolist()}: {eig[0]:.6g} + {eig[1]:.6g} < {eig[2]:.6g})'
        )
    return None


def check_inertia(mass: float, inertia: np.ndarray, where: str, *, strict: bool = True) -> None:
    """Validate a link's mass and inertia tensor about its CoM.

    A physical inconsistency (:func:`inertia_problem`) raises in strict mode; otherwise it is
    reported as an :class:`InertiaWarning` and the values are kept as given, as Pinocchio
    does: CAD exports of real robots (TIAGo, PR2, iCub, ...) carry such inertias.

    Parameters
    ----------
    mass : float
        Link mass [kg].
    inertia : (3, 3) ndarray
        Inertia tensor about the link CoM [kg m^2], in any axes (the checks do not depend on
        them; the URDF loader passes the ``<inertial>`` frame's).
    where : str
        Names the link in the messages.
    strict : bool
        Raise for a physically inconsistent inertia (True) or warn (False).

    Raises
    ------
    ValueError
        Malformed input (always), or a physically inconsistent inertia (strict mode); the
        message names ``where``.
    """
    problem = inertia_problem(mass, inertia, where)
    if problem is None:
        return
    if strict:
        raise ValueError(problem[1])
    kept = (
        'kept only if fixed joints merge it into a body whose inertia is positive '
        'semi-definite (the body is checked next)'
        if problem[0] == 'indefinite'
        else 'kept as given'
    )
    warnings.warn(
        f'{problem[1]}: physically inconsistent, {kept} (strict_inertia=True rejects it)',
        InertiaWarning,
        stacklevel=3,
    )


def build_model(
    bodies: Sequence[BodySpec],
    frames: Mapping[str, Frame],
    link_names: Sequence[str],
    *,
    floating_base: bool,
    gravity: Sequence[float] = (0.0, 0.0, 0.0),
    name: str = 'robot',
    strict_inertia: bool = True,
) -> Model:
    """Assemble and validate a :class:`Model` from body specifications.

    Parameters
    ----------
    bodies : sequence of BodySpec
        Body 0 is the base; every other body's parent index must be smaller than its own.
    frames : Mapping[str, Frame]
        Named frames (every link) on the bodies.
    link_names : sequence of str
    floating_base : bool
    gravity : (3,) array_like
        Inertial-frame gravitational acceleration [m/s^2].
    name : str
    strict_inertia : bool
        Reject a body whose inertia violates the triangle inequality (default); otherwise
        only an indefinite body inertia is rejected (:func:`inertia_problem`).

    Returns
    -------
    Model

    Raises
    ------
    ValueError
        Bad ordering, an unknown joint type, a zero axis, a body inertia that is not physical
        (see ``strict_inertia``), a moving body whose subtree has no mass (its joint could
        not be accelerated by a finite effort), more than :data:`MAX_NV` velocity
        coordinates.
    """
    nb = len(bodies)
    if nb == 0:
        raise ValueError('a model needs at least one body')
    g = _vector(gravity, 3, 'gravity')
    parent = np.array([b.parent for b in bodies], dtype=np.int64)
    if parent[0] != -1:
        raise ValueError(f'body 0 ({bodies[0].name}) must be the root, got parent {parent[0]}')
    for i in range(1, nb):
        if not 0 <= parent[i] < i:
            raise ValueError(
                f'body {bodies[i].name}: parent index must be in [0, {i}), got {parent[i]}'
            )
    jtype = np.empty(nb, dtype=np.int64)
    iq = np.zeros(nb, dtype=np.int64)
    iv = np.zeros(nb, dtype=np.int64)
    nvj = np.zeros(nb, dtype=np.int64)
    axis = np.zeros((nb, 3))
    axis2 = np.zeros((nb, 3))
    jtype[0] = ROOT_FREE if floating_base else ROOT_FIXED
    nq = nv = 0
    if floating_base:
        nq, nv, nvj[0] = 7, 6, 6
    nqs: list[int] = []
    per_dof: dict[str, list[float]] = {
        k: [] for k in ('lower', 'upper', 'effort', 'velocity', 'damping', 'friction')
    }
    for i in range(1, nb):
        b = bodies[i]
        if b.joint_type not in JOINT_KINDS:
            raise ValueError(
                f'joint {b.joint_name}: expected one of {JOINT_TYPES}, got {b.joint_type!r}'
            )
        code, nqj, nvj_i = JOINT_KINDS[b.joint_type]
        jtype[i] = code
        if code != SPHERICAL:
            axis[i] = _unit_axis(b.axis, f'joint {b.joint_name}: axis')
        if code == UNIVERSAL:
            if b.axis2 is None:
                raise ValueError(f'joint {b.joint_name}: a universal joint needs axis2, got None')
            axis2[i] = _unit_axis(b.axis2, f'joint {b.joint_name}: axis2')
            if np.linalg.norm(np.cross(axis[i], axis2[i])) < 1e-6:
                raise ValueError(
                    f'joint {b.joint_name}: universal axes must not be parallel, got '
                    f'{axis[i].tolist()} and {axis2[i].tolist()}'
                )
        for key, values in per_dof.items():
            values.extend(_per_dof(getattr(b, key), nvj_i, b.joint_name, key))
            expected = {
                'lower': 'numbers below +inf (-inf: no limit)',
                'upper': 'numbers above -inf (+inf: no limit)',
                'effort': 'values >= 0 (inf: no limit)',
                'velocity': 'values >= 0 (inf: no limit)',
            }.get(key, 'finite values >= 0')
            bad = [
                x
                for x in values[-nvj_i:]
                if np.isnan(x)
                or (key == 'lower' and x == np.inf)
                or (key == 'upper' and x == -np.inf)
                or (key not in ('lower', 'upper') and x < 0.0)
                or (key in ('damping', 'friction') and not np.isfinite(x))
            ]
            if bad:
                raise ValueError(f'joint {b.joint_name}: {key} expected {expected}, got {bad}')
        lows, highs = per_dof['lower'][-nvj_i:], per_dof['upper'][-nvj_i:]
        if any(lo > hi for lo, hi in zip(lows, highs, strict=True)):
            raise ValueError(f'joint {b.joint_name}: limit lower {b.lower} > upper {b.upper}')
        if code == SPHERICAL and (
            np.isfinite(per_dof['lower'][-3:]).any() or np.isfinite(per_dof['upper'][-3:]).any()
        ):
            raise ValueError(
                f'joint {b.joint_name}: a spherical joint has no position limits, got lower '
                f'{b.lower} and upper {b.upper}'
            )
        iq[i], iv[i], nvj[i] = nq, nv, nvj_i
        nqs.append(nqj)
        nq += nqj
        nv += nvj_i
    for index, b in enumerate(bodies):
        # the composite inertia of a body (its links merged) must be physical; in non-strict
        # mode a triangle-inequality violation passes (each link was warned about already)
        atol = 1e-12 * b.mass * float(np.dot(b.com, b.com))
        problem = inertia_problem(b.mass, b.inertia, f'body {b.name}', atol=atol)
        if problem is not None and (strict_inertia or problem[0] == 'indefinite'):
            merged = [name for name, frame in frames.items() if frame.body == index]
            links = f' (the links and frames on it: {merged})' if len(merged) > 1 else ''
            raise ValueError(problem[1] + links)
    mass = np.array([b.mass for b in bodies], dtype=float)
    subtree = mass.copy()
    for i in range(nb - 1, 0, -1):
        subtree[parent[i]] += subtree[i]
    for i in range(1, nb):
        if subtree[i] <= 0.0:
            raise ValueError(
                f'joint {bodies[i].joint_name}: the subtree it moves (from link '
                f'{bodies[i].name}) has no mass'
            )
    if floating_base and subtree[0] <= 0.0:
        raise ValueError(f'floating base {bodies[0].name}: the robot has no mass')
    n = nv - (6 if floating_base else 0)
    damping = np.zeros(nv)
    friction = np.zeros(nv)
    damping[nv - n :] = per_dof['damping']
    friction[nv - n :] = per_dof['friction']
    arrays = ModelArrays(
        jtype=_readonly(jtype),
        parent=_readonly(parent),
        iq=_readonly(iq),
        iv=_readonly(iv),
        nvj=_readonly(nvj),
        rot=_readonly(np.array([b.joint_rotation for b in bodies], dtype=float)),
        trans=_readonly(np.array([b.joint_translation for b in bodies], dtype=float)),
        axis=_readonly(axis),
        mass=_readonly(mass),
        com=_readonly(np.array([b.com for b in bodies], dtype=float).reshape(nb, 3)),
        inertia=_readonly(np.array([b.inertia for b in bodies], dtype=float).reshape(nb, 3, 3)),
        gravity=_readonly(g),
        damping=_readonly(damping),
        friction=_readonly(friction),
        axis2=_readonly(axis2),
    )
    moving = bodies[1:]
    joint_names = tuple(b.joint_name for b in moving)
    if len(set(joint_names)) != len(joint_names):
        raise ValueError(f'joint names must be unique, got {list(joint_names)}')
    ro_frames = {
        k: Frame(
            f.body,
            _readonly(np.array(f.rotation, float)),
            _readonly(np.array(f.translation, float)),
        )
        for k, f in frames.items()
    }
    model = Model(
        name=name,
        floating_base=bool(floating_base),
        nq=nq,
        nv=nv,
        n=n,
        joint_names=joint_names,
        joint_types=tuple(b.joint_type for b in moving),
        link_names=tuple(link_names),
        body_names=tuple(b.name for b in bodies),
        frames=MappingProxyType(ro_frames),
        lower=_readonly(np.array(per_dof['lower'], dtype=float)),
        upper=_readonly(np.array(per_dof['upper'], dtype=float)),
        effort_limit=_readonly(np.array(per_dof['effort'], dtype=float)),
        velocity_limit=_readonly(np.array(per_dof['velocity'], dtype=float)),
        arrays=arrays,
        idx_q=tuple(int(x) for x in iq[1:]),
        idx_v=tuple(int(x) for x in iv[1:]),
        nqs=tuple(nqs),
        nvs=tuple(int(x) for x in nvj[1:]),
        _joint_index=MappingProxyType({nm: k for k, nm in enumerate(joint_names)}),
    )
    if model.nv > MAX_NV:
        raise ValueError(
            f'robot {model.name}: expected at most {MAX_NV} velocity coordinates (the mass '
            f'matrix and its checks take nv^2 memory: {MAX_NV} is 128 MiB a matrix), got '
            f'{model.nv} ({nb} bodies)'
        )
    _check_inertia_rank(model, bodies)
    return model


#: The most velocity coordinates a model may have (a 20000-joint chain, 7.5 MB of URDF, ran
#: out of memory allocating its 3 GiB inertia matrix).
MAX_NV = 4096

#: A pivot of the inertia matrix below this fraction of its diagonal entry: a degenerate DoF.
DEGENERATE_PIVOT = 1e-12


def _check_inertia_rank(model: Model, bodies: Sequence[BodySpec]) -> None:
    """Raise a ``ValueError`` naming the joint (or the floating base) whose motion moves no
    inertia that the joints before it do not already move: a point mass on its own axis, two
    collinear joints with nothing between them, a massless base under one joint (named as
    such). The inertia
    matrix ``H`` would be singular (the accelerations undefined) wherever the dynamics are
    evaluated, so it is checked here by the pivots of its ``L D L^T`` factorization (each
    against its diagonal entry) at two configurations: a posture can be singular alone (iCub's
    neck at zero, two axes aligned through a massless link), a structure is at both."""
    q = neutral(model)
    dof = None
    for config in (q, _turned(model, q)):  # degenerate at both: structural, not a posture's
        H = np.empty((model.nv, model.nv))
        try:
            taken(e_mass_matrix(*model.packed, config, H))  # (raises when H is not finite)
        except ValueError:
            raise ValueError(
                f'robot {model.name}: its inertia matrix overflows (largest body mass '
                f'{max(b.mass for b in bodies):.6g} kg): expected masses, inertias and '
                'distances whose products stay within double range'
            ) from None
        dof = _degenerate_dof(H)
        if dof is None:
            return
    a = model.arrays
    on_base = np.flatnonzero(a.parent == 0)
    if model.floating_base and on_base.size == 1 and not np.any(bodies[0].inertia):
        if bodies[0].mass <= 0.0:  # (the base's motion and its one joint's are one motion)
            child = bodies[int(on_base[0])]
            raise ValueError(
                f'base body {bodies[0].name!r} has no mass: the floating base and its one '
                f'joint {child.joint_name} are then the same motion (a singular inertia '
                f'matrix); give link {bodies[0].name} an <inertial>, or join it to '
                f'{child.name} by a fixed joint'
            )
    body = int(np.flatnonzero((a.iv <= dof) & (dof < a.iv + a.nvj))[-1])
    what = f'floating base {bodies[0].name}' if body == 0 else f'joint {bodies[body].joint_name}'
    raise ValueError(
        f'{what}: its motion (velocity coordinate {dof}) moves no inertia that the others do '
        'not: the inertia matrix is singular (a point mass on its axis, collinear joints with '
        'no inertia between them, a massless link it turns?)'
    )


def _turned(model: Model, q: np.ndarray) -> np.ndarray:
    """``q`` with every one-coordinate joint turned by a fixed, irregular angle."""
    q = q.copy()
    for k, (start, size) in enumerate(zip(model.idx_q, model.nqs, strict=True)):
        if size == 1:
            q[start] = 0.37 + 0.23 * k
    return q


def _degenerate_dof(H: np.ndarray) -> int | None:
    """The first index whose ``L D L^T`` pivot of the symmetric ``H`` (n, n) is not above
    :data:`DEGENERATE_PIVOT` times its diagonal entry, or None.

    The pivots are those of LAPACK's Cholesky factorization (``d_j = L_jj^2``; O(n^3) in
    compiled code -- a loop of rank-one updates in NumPy took 41-85 s at n = 3000): where it
    stops at a pivot that is not positive, the leading block before it is factored alone and
    checked against the threshold.
    """
    n = H.shape[0]
    factor, info = lapack.dpotrf(H, lower=1, clean=0)
    if info < 0:  # (an argument LAPACK refused: not expected from a square finite matrix)
        raise ValueError(f'inertia matrix: LAPACK dpotrf refused argument {-info}')
    good = n if info == 0 else info - 1  # leading pivots that are positive
    if info > 0 and good > 0:
        factor, info = lapack.dpotrf(H[:good, :good], lower=1, clean=0)
        if info != 0:  # (a positive definite leading minor, by the first factorization)
            good = info - 1
    pivots = np.diagonal(factor)[:good] ** 2
    bad = np.flatnonzero(~(pivots > DEGENERATE_PIVOT * np.diagonal(H)[:good]))
    if bad.size:
        return int(bad[0])
    return None if good == n else good


def neutral(model: Model) -> np.ndarray:
    """The neutral configuration: base CoM at the origin, identity attitudes, ``phi = 0``.

    Parameters
    ----------
    model : Model

    Returns
    -------
    (nq,) ndarray
    """
    q = np.zeros(model.nq)
    if model.floating_base:
        q[6] = 1.0
    for k, kind in enumerate(model.joint_types):
        if kind == 'spherical':
            q[model.idx_q[k] + 3] = 1.0  # identity quaternion (x, y, z, w)
    return q
