"""URDF reader producing a :class:`~ffsim_ros.dynamics.model.Model`.

Reads links' ``<inertial>`` (origin xyz/rpy, mass, full inertia tensor) and joints' origin,
axis, ``<limit>`` and ``<dynamics>``. Visuals, collisions, meshes, transmissions and gazebo
tags are ignored. Links attached by fixed joints are merged into their parent body (mass, CoM
and inertia by the parallel-axis theorem) and stay addressable as frames.
"""

from __future__ import annotations

import dataclasses
import os
import warnings
import xml.etree.ElementTree as ET
import xml.parsers.expat as expat
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .inputs import as_bool, describe
from .lie import rpy_to_matrix
from .model import (
    BodySpec,
    Frame,
    LimitWarning,
    Mimic,
    MimicWarning,
    Model,
    build_model,
    check_inertia,
)

_SUPPORTED = ('revolute', 'continuous', 'prismatic', 'fixed')
_UNSUPPORTED = ('planar', 'floating')


def parse_floats(text: str | None, count: int, default: Sequence[float], where: str) -> np.ndarray:
    """``count`` finite numbers (``count``,) from an attribute's text (``default`` when it is
    absent); a ValueError naming ``where`` otherwise.

    Parameters
    ----------
    text : str or None
        The attribute's value.
    count : int
    default : sequence of float
    where : str
        Names the attribute in messages.

    Returns
    -------
    (count,) ndarray
    """
    if text is None:
        return np.array(default, dtype=float)
    try:
        vals = [float(t) for t in text.split()]
    except ValueError:
        raise ValueError(f'{where}: expected {count} numbers, got {text!r}') from None
    if len(vals) != count:
        raise ValueError(f'{where}: expected {count} numbers, got {len(vals)} ({text!r})')
    arr = np.array(vals)
    if not np.all(np.isfinite(arr)):
        raise ValueError(f'{where}: expected finite numbers, got {text!r}')
    return arr


def _attr_float(elem: ET.Element, key: str, default: float, where: str) -> float:
    text = elem.get(key)
    if text is None:
        return default
    try:
        return float(text)
    except ValueError:
        raise ValueError(f'{where}: {key} must be a number, got {text!r}') from None


def _limit_value(
    limit: ET.Element, key: str, default: float, where: str, *, nonnegative: bool = False
) -> float:
    """A ``<limit>`` attribute: a finite number (>= 0 for effort and velocity) when given.

    ``effort="0"`` reads as a passive joint (no effort can be applied) and ``velocity="0"``,
    which published URDFs carry where the value is unknown, as no speed limit (see
    :attr:`~.model.Model.velocity_limit`); a negative or non-finite value is an error naming
    the joint, not a limit turned into a spinning joint or a misleading failure later.
    """
    value = _attr_float(limit, key, default, where + ' limit')
    if limit.get(key) is None:
        return value
    if not np.isfinite(value) or (nonnegative and value < 0.0):
        bound = 'a finite value >= 0' if nonnegative else 'a finite value'
        raise ValueError(f'{where}: limit {key} expected {bound}, got {limit.get(key)!r}')
    return value


def parse_origin(elem: ET.Element | None, where: str) -> tuple[np.ndarray, np.ndarray]:
    """Rotation (3, 3) and translation (3,) [m] of an ``<origin xyz rpy>`` element (identity
    and zero when absent); a ValueError naming ``where`` for malformed values.

    Parameters
    ----------
    elem : Element or None
        The ``<origin>`` element.
    where : str
        Names the element in messages.

    Returns
    -------
    R : (3, 3) ndarray
        Child frame to parent frame (from ``rpy`` [rad]).
    xyz : (3,) ndarray
        Origin in the parent frame [m].
    """
    if elem is None:
        return np.eye(3), np.zeros(3)
    xyz = parse_floats(elem.get('xyz'), 3, (0, 0, 0), f'{where} origin xyz')
    rpy = parse_floats(elem.get('rpy'), 3, (0, 0, 0), f'{where} origin rpy')
    return rpy_to_matrix(rpy), xyz


#: The attributes of ``<inertia>``, all required (as urdfdom requires them).
_INERTIA_KEYS = ('ixx', 'ixy', 'ixz', 'iyy', 'iyz', 'izz')


@dataclass
class _Link:
    name: str
    mass: float
    com: np.ndarray
    inertia: np.ndarray  # about the CoM, link frame


@dataclass
class _Joint:
    name: str
    type: str
    parent: str
    child: str
    rot: np.ndarray
    trans: np.ndarray
    axis: np.ndarray
    lower: float
    upper: float
    effort: float
    velocity: float
    damping: float
    friction: float


def _parse_link(elem: ET.Element, strict_inertia: bool) -> _Link:
    name = elem.get('name')
    if not name:
        raise ValueError('a <link> has no name attribute')
    where = f'link {name}'
    inertial = elem.find('inertial')
    if inertial is None:
        return _Link(name, 0.0, np.zeros(3), np.zeros((3, 3)))
    rot, xyz = parse_origin(inertial.find('origin'), where)
    # the URDF spec (and urdfdom) require both: a missing one is a typo, not a zero
    mass_el = inertial.find('mass')
    if mass_el is None or mass_el.get('value') is None:
        raise ValueError(f'{where}: <inertial> needs <mass value=...> (URDF spec), got none')
    mass = _attr_float(mass_el, 'value', 0.0, f'{where} mass')
    ie = inertial.find('inertia')
    if ie is None:
        raise ValueError(f'{where}: <inertial> needs an <inertia> element (URDF spec), got none')
    missing = [key for key in _INERTIA_KEYS if ie.get(key) is None]
    if missing:  # urdfdom refuses it too: a misspelled izz is a typo, not a zero
        unknown = sorted(set(ie.attrib) - set(_INERTIA_KEYS))
        raise ValueError(
            f'{where}: <inertia> needs the attributes {", ".join(_INERTIA_KEYS)} (URDF spec), '
            f'missing {", ".join(missing)}'
            + (f' (unknown attributes: {", ".join(unknown)})' if unknown else '')
        )
    vals = {key: _attr_float(ie, key, 0.0, f'{where} inertia') for key in _INERTIA_KEYS}
    local = np.array(
        [
            [vals['ixx'], vals['ixy'], vals['ixz']],
            [vals['ixy'], vals['iyy'], vals['iyz']],
            [vals['ixz'], vals['iyz'], vals['izz']],
        ]
    )
    check_inertia(mass, local, where, strict=strict_inertia)
    return _Link(name, mass, xyz, rot @ local @ rot.T)


def _parse_joint(elem: ET.Element) -> _Joint:
    name = elem.get('name')
    if not name:
        raise ValueError('a <joint> has no name attribute')
    jtype = elem.get('type')
    where = f'joint {name}'
    if jtype in _UNSUPPORTED:
        hint = (
            ': the root link is already free-floating (remove this joint and its parent link, '
            'e.g. a world link)'
            if jtype == 'floating'
            else ''
        )
        raise NotImplementedError(
            f'{where}: joint type {jtype!r} is not supported (supported: {_SUPPORTED}){hint}'
        )
    if jtype not in _SUPPORTED:
        raise ValueError(f'{where}: expected type in {_SUPPORTED}, got {jtype!r}')
    parent_el = elem.find('parent')
    child_el = elem.find('child')
    parent = None if parent_el is None else parent_el.get('link')
    child = None if child_el is None else child_el.get('link')
    if not parent or not child:
        raise ValueError(f'{where}: needs <parent link=...> and <child link=...>')
    rot, trans = parse_origin(elem.find('origin'), where)
    axis_el = elem.find('axis')
    axis = parse_floats(
        None if axis_el is None else axis_el.get('xyz'), 3, (1, 0, 0), where + ' axis'
    )
    if jtype != 'fixed' and not np.max(np.abs(axis)) > 0.0:
        raise ValueError(f'{where}: axis must be non-zero, got {axis.tolist()}')
    lower, upper, effort, velocity = -np.inf, np.inf, np.inf, np.inf
    limit = elem.find('limit')
    if limit is not None:
        missing = [key for key in ('effort', 'velocity') if limit.get(key) is None]
        if missing:  # (urdfdom -- robot_state_publisher, Pinocchio -- refuses the file)
            raise ValueError(
                f'{where}: <limit> expected the attributes effort and velocity (required by the '
                f'URDF spec), got none for {" and ".join(missing)}'
            )
        effort = _limit_value(limit, 'effort', np.inf, where, nonnegative=True)
        velocity = _limit_value(limit, 'velocity', np.inf, where, nonnegative=True)
        if jtype != 'continuous':
            lower = _limit_value(limit, 'lower', 0.0, where)
            upper = _limit_value(limit, 'upper', 0.0, where)
    elif jtype in ('revolute', 'prismatic'):
        raise ValueError(f'{where}: a {jtype} joint needs a <limit> element (URDF spec)')
    if lower > upper:
        raise ValueError(f'{where}: limit lower {lower} > upper {upper}')
    damping = friction = 0.0
    dyn = elem.find('dynamics')
    if dyn is not None:
        damping = _attr_float(dyn, 'damping', 0.0, where + ' dynamics')
        friction = _attr_float(dyn, 'friction', 0.0, where + ' dynamics')
        if not (0 <= damping < np.inf and 0 <= friction < np.inf):
            raise ValueError(
                f'{where}: damping and friction must be finite and >= 0, got damping '
                f'{damping}, friction {friction}'
            )
    return _Joint(
        name,
        jtype,
        parent,
        child,
        rot,
        trans,
        axis,
        lower,
        upper,
        effort,
        velocity,
        damping,
        friction,
    )


def _check_mimics(root: ET.Element, types: dict[str, str]) -> tuple[Mimic, ...]:
    """Refuse a ``<mimic>`` of itself or of a fixed joint; warn (:class:`MimicWarning`) that
    the mimic joints are loaded as independent joints (the coupling is not modelled), naming
    those that mimic a joint the robot does not have (example-robot-data's Alex hands mimic
    ``index_q1`` where the joint is ``Left_index_q1``: loaded, as Pinocchio loads them).
    Returns the couplings between moving joints of the robot (``Model.mimics``)."""
    mimics, couplings = [], []
    for el in root.findall('joint'):
        mimic = el.find('mimic')
        if mimic is None:
            continue
        name, target = el.get('name'), mimic.get('joint')
        if types.get(name) == 'fixed':
            continue
        if target not in types:
            mimics.append(f'{name} (mimics {target!r}, a joint the robot does not have)')
            continue
        if types[target] == 'fixed' or target == name:
            raise ValueError(
                f'joint {name}: <mimic joint=...> expected another moving joint of the robot, '
                f'got {target!r}'
            )
        where = f'joint {name} <mimic>'
        factors = [
            _attr_float(mimic, key, d, where) for key, d in (('multiplier', 1), ('offset', 0))
        ]
        if not np.all(np.isfinite(factors)):
            raise ValueError(f'{where}: expected a finite multiplier and offset, got {factors}')
        couplings.append(Mimic(name, target, *factors))
        mimics.append(f'{name} (mimics {target})')
    if mimics:
        warnings.warn(
            'URDF mimic joints loaded as independent joints, the coupling not modelled (as '
            "Pinocchio's parser does by default; MuJoCo's adds an equality constraint): "
            f'{", ".join(mimics)}; command each joint yourself (the reactionless controller '
            'holds them unless active_joints names them)',
            MimicWarning,
            stacklevel=3,
        )
    return tuple(couplings)


def _warn_stuck(joints: Sequence[_Joint], root: ET.Element) -> None:
    """Warn (:class:`LimitWarning`) once for the revolute and prismatic joints whose limits
    leave no range (``lower == upper``; urdfdom reads a missing ``lower``/``upper`` as 0)."""
    stuck, limits = [], {el.get('name'): el.find('limit') for el in root.findall('joint')}
    for joint in joints:
        if joint.type in ('revolute', 'prismatic') and joint.lower == joint.upper:
            limit = limits[joint.name]
            unset = limit is not None and limit.get('lower') is None and limit.get('upper') is None
            read = ' (no lower/upper in its <limit>: 0, as urdfdom reads it)' if unset else ''
            stuck.append(f'joint {joint.name}: limit lower = upper = {joint.lower:g}{read}')
    if stuck:
        warnings.warn(
            f"{'; '.join(stuck)}: the joint cannot move under the controller's clamping to "
            'its limits; give lower < upper, or make a revolute joint continuous',
            LimitWarning,
            stacklevel=3,
        )


#: What every URDF reader of the package expects of the XML's prolog (the message's middle).
NO_DTD = (
    'expected XML without a DTD (entity declarations and external DTDs are refused: URDF '
    'uses none)'
)


class _Prolog(Exception):
    """Stops the scan of :func:`dtd_problem`: the prolog is read (or a DTD found)."""


def dtd_problem(text: str | bytes) -> str | None:
    """The document type declaration of XML ``text`` that carries declarations or an external
    DTD, as ``'<!DOCTYPE robot [...]> (declarations)'``, or None (none, or a bare
    ``<!DOCTYPE robot>``).

    A DTD is where XML entities are declared: Python's parser expands them (urdfdom's
    tinyxml2 reads no DTD), so a URDF could say ``ixx="&a;"``, and a few hundred bytes of
    nested entities expand to gigabytes ("billion laughs"); an external DTD names a file or a
    URL. Only the prolog is scanned (expat stops at the ``<!DOCTYPE`` or at the root element's
    start tag): nothing of a DTD is read or expanded, whatever its size. Malformed XML gives
    None (the parse proper names the error); the five predefined entities (``&amp;`` ...) and
    character references (``&#65;``) are plain XML, no DTD.

    Parameters
    ----------
    text : str or bytes

    Returns
    -------
    str or None
    """
    found: list[str] = []

    def doctype(name: str, system_id: str | None, public_id: str | None, subset: int) -> None:
        if subset or system_id or public_id:
            ids = f' PUBLIC "{_cut(public_id)}"' if public_id else ' SYSTEM' if system_id else ''
            ids += f' "{_cut(system_id)}"' if system_id else ''
            what = ['declarations'] if subset else []
            what += ['an external DTD'] if system_id or public_id else []
            decl = f'<!DOCTYPE {_cut(name)}{ids}{" [...]" if subset else ""}>'
            found.append(f'{decl} ({" and ".join(what)})')
        raise _Prolog

    def root(name: str, attributes: dict) -> None:
        raise _Prolog

    parser = expat.ParserCreate()
    parser.StartDoctypeDeclHandler = doctype
    parser.StartElementHandler = root
    try:
        parser.Parse(text, True)
    except (_Prolog, expat.ExpatError):
        pass
    return found[0] if found else None


def _cut(text: str | None, keep: int = 60) -> str:
    """``text`` cut to ``keep`` characters for a message."""
    text = text or ''
    return text if len(text) <= keep else f'{text[:keep]}...'


#: Endings that make a string that is not XML a file path (:func:`read_urdf_xml`).
_PATH_SUFFIXES = ('.urdf', '.xml', '.xacro')


def _looks_like_path(text: str) -> bool:
    """``text`` (not XML) names a file: one line ending with a URDF suffix or holding a path
    separator."""
    if '\n' in text or len(text) > 4096:
        return False
    separators = [sep for sep in (os.sep, os.altsep) if sep]
    return text.lower().endswith(_PATH_SUFFIXES) or any(sep in text for sep in separators)


class UrdfFileNotFoundError(FileNotFoundError, ValueError):
    """A URDF file that does not exist (:func:`read_urdf_xml`): a ``FileNotFoundError`` and,
    for the callers that take any bad URDF source as one, a ``ValueError``.

    Parameters
    ----------
    path : str
        The path as given.

    Attributes
    ----------
    path : str
        The path as given.
    cwd : str
        The working directory a relative ``path`` was resolved against.
    """

    def __init__(self, path: str) -> None:
        self.path = path
        self.cwd = os.getcwd()
        where = '' if os.path.isabs(path) else f' (relative to the working directory {self.cwd!r})'
        super().__init__(f'URDF file {path!r}: no such file{where}')


def read_urdf_xml(source: str | bytes | os.PathLike[str]) -> ET.Element:
    """The ``<robot>`` element of a URDF given as XML (a string starting with ``<``, or
    bytes) or a file path (read as bytes: the parser honours the encoding the XML declares).

    Parameters
    ----------
    source : str, bytes or PathLike

    Returns
    -------
    Element

    Raises
    ------
    TypeError
        ``source`` neither a string, bytes nor a path (None, a number), naming it.
    UrdfFileNotFoundError
        A file path (a PathLike, or a string ending with ``.urdf``/``.xml``/``.xacro`` or
        holding a path separator) that does not exist, naming it and the working directory (a
        ``FileNotFoundError`` and a ``ValueError``).
    ValueError
        A path that is not a regular file, a string neither XML nor a path, malformed XML, a
        DTD (:func:`dtd_problem`: XML entities, refused before anything of it is read) or
        another root element, naming what came.
    """
    where = ''
    if not isinstance(source, str | bytes | bytearray | os.PathLike):
        raise TypeError(
            f'source: expected a URDF XML string, bytes or a file path, got {describe(source)}'
        )
    if isinstance(source, bytes | bytearray):
        text: str | bytes = bytes(source)  # the XML itself, its encoding declared inside
    else:
        name = os.fspath(source)
        xml = name.lstrip().lstrip('\ufeff') if isinstance(source, str) else ''
        if xml.startswith('<'):
            text = xml
        else:
            path = Path(name)
            if not path.is_file():
                if not path.exists() and (
                    isinstance(source, os.PathLike) or _looks_like_path(name)
                ):
                    raise UrdfFileNotFoundError(name)
                if path.exists():
                    raise ValueError(
                        f'URDF source: expected a URDF file, got {name!r}, which is not a '
                        'regular file'
                    )
                raise ValueError(
                    f'URDF source: expected an XML string or a file path, got {name!r}'
                )
            text = path.read_bytes()  # the parser reads the encoding the XML declares
            where = f' in {path}'
    return parse_urdf_xml(text, where)


class UrdfXmlError(ValueError):
    """URDF text refused by :func:`parse_urdf_xml` (a ``ValueError``).

    Parameters
    ----------
    message : str
    kind : {'dtd', 'malformed', 'root'}
    detail : str

    Attributes
    ----------
    kind : {'dtd', 'malformed', 'root'}
        A DTD (:func:`dtd_problem`), XML the parser refuses, or another root than ``<robot>``.
    detail : str
        The declaration found, the parser's message, or the root element's tag.
    """

    def __init__(self, message: str, kind: str, detail: str) -> None:
        super().__init__(message)
        self.kind = kind
        self.detail = detail

    def about(self, argument: str, path: str | os.PathLike[str]) -> str:
        """The message naming ``argument``, a file argument (``robot`` of the launch file,
        ``--robot`` of ``ffsim``), whose file ``path`` held the text refused.

        Parameters
        ----------
        argument : str
        path : str or PathLike

        Returns
        -------
        str
        """
        file = repr(os.fspath(path))
        if self.kind == 'dtd':
            return f'{argument}: {NO_DTD}, got {self.detail} in {file}'
        if self.kind == 'malformed':
            return f'{argument}: expected a URDF (XML), got malformed XML in {file}: {self.detail}'
        return f'{argument}: expected a URDF with a <robot> root, got <{self.detail}> in {file}'


def parse_urdf_xml(text: str | bytes, where: str = '') -> ET.Element:
    """The ``<robot>`` element of the URDF XML ``text``: the one check of a URDF's XML in the
    package (the nodes, the launch file and ``ffsim`` use it, through :func:`read_urdf_xml`
    or directly). A DTD is refused before anything of the text is parsed
    (:func:`dtd_problem`).

    Parameters
    ----------
    text : str or bytes
        The XML itself (bytes: the parser honours the encoding the XML declares).
    where : str
        Appended to ``'URDF'`` in the messages (``' in <file>'``).

    Returns
    -------
    Element

    Raises
    ------
    UrdfXmlError
        A DTD, malformed XML or another root element (``kind`` says which;
        :meth:`UrdfXmlError.about` words it for a file argument).
    """
    problem = dtd_problem(text)
    if problem is not None:
        raise UrdfXmlError(f'URDF{where}: {NO_DTD}, got {problem}', 'dtd', problem)
    try:
        root = ET.fromstring(text)
    except ET.ParseError as exc:
        raise UrdfXmlError(f'malformed URDF XML{where}: {exc}', 'malformed', str(exc)) from None
    if root.tag != 'robot':
        raise UrdfXmlError(
            f'URDF{where}: expected a <robot> root element, got <{root.tag}>', 'root', root.tag
        )
    return root


def load_urdf(
    source: str | bytes | os.PathLike[str],
    *,
    floating_base: bool = True,
    gravity: Sequence[float] = (0.0, 0.0, 0.0),
    strict_inertia: bool = False,
) -> Model:
    """Build a model from a URDF file path or XML string.

    Parameters
    ----------
    source : str, bytes or path-like
        A path to a ``.urdf`` file (a string not starting with ``<``) or the URDF XML itself
        (a string starting with ``<``, or bytes).
    floating_base : bool
        Free-floating 6-DoF base (default) or a root link fixed at the inertial origin.
    gravity : (3,) array_like
        Inertial-frame gravitational acceleration [m/s^2]; zero in orbit.
    strict_inertia : bool
        Reject links whose inertia is physically inconsistent (a negative principal moment,
        or principal moments violating the triangle inequality). By default such a link is
        loaded as given with an :class:`~ffsim_ros.dynamics.model.InertiaWarning` naming it,
        as Pinocchio loads it: CAD exports of real robots carry such values. A point mass
        (zero inertia) is physical and always accepted. Whatever the mode, the merged inertia
        of each body must be positive semi-definite.

    Returns
    -------
    Model

    Raises
    ------
    UrdfFileNotFoundError
        ``source`` a path to no file, naming it and the working directory a relative one was
        resolved against (a ``FileNotFoundError``, also a ``ValueError``).
    ValueError
        Malformed XML, unknown parent/child link, several roots, cycles, a moving body
        without mass in its subtree, negative mass, a malformed inertia tensor (or, with
        ``strict_inertia``, a physically inconsistent one) or a zero axis; the message names
        the offending link or joint.
    NotImplementedError
        Planar and floating joints.
    TypeError
        ``source`` not a string, bytes nor a path; ``floating_base`` or ``strict_inertia``
        not a bool (a string such as ``'false'`` would be taken as true).
    """
    floating_base = as_bool(floating_base, 'floating_base')
    strict_inertia = as_bool(strict_inertia, 'strict_inertia')
    root = read_urdf_xml(source)
    links: dict[str, _Link] = {}
    for el in root.findall('link'):
        link = _parse_link(el, strict_inertia)
        if link.name in links:
            raise ValueError(f'link {link.name}: defined twice')
        links[link.name] = link
    if not links:
        raise ValueError('URDF: the robot has no <link>')
    joints: list[_Joint] = []
    child_of: dict[str, _Joint] = {}
    for el in root.findall('joint'):
        joint = _parse_joint(el)
        for role, link_name in (('parent', joint.parent), ('child', joint.child)):
            if link_name not in links:
                raise ValueError(f'joint {joint.name}: unknown {role} link {link_name!r}')
        if joint.child in child_of:
            raise ValueError(
                f'joint {joint.name}: link {joint.child} already has parent joint '
                f'{child_of[joint.child].name} (a link has one parent)'
            )
        if joint.parent == joint.child:
            raise ValueError(f'joint {joint.name}: parent and child are the same link')
        child_of[joint.child] = joint
        joints.append(joint)
    if len({j.name for j in joints}) != len(joints):
        raise ValueError('URDF: joint names must be unique')
    mimics = _check_mimics(root, {j.name: j.type for j in joints})
    _warn_stuck(joints, root)
    roots = [name for name in links if name not in child_of]
    if not roots:
        raise ValueError(
            f'URDF: the kinematic graph has a cycle (no root link among {list(links)})'
        )
    if len(roots) > 1:
        raise ValueError(f'URDF: expected one root link, got {len(roots)}: {roots}')
    children: dict[str, list[_Joint]] = {name: [] for name in links}
    for joint in joints:
        children[joint.parent].append(joint)

    bodies: list[BodySpec] = []
    frames: dict[str, Frame] = {}
    link_order: list[str] = []
    # per body: accumulated (mass, first moment, inertia about body origin) in body frame
    acc: list[list] = []

    def add_link(body: int, link: _Link, rot: np.ndarray, trans: np.ndarray) -> None:
        frames[link.name] = Frame(body, rot, trans)
        link_order.append(link.name)
        if link.mass > 0.0 or np.any(link.inertia):
            c = rot @ link.com + trans
            ic = rot @ link.inertia @ rot.T
            a = acc[body]
            with np.errstate(over='ignore', invalid='ignore'):  # checked once merged
                a[0] += link.mass
                a[1] = a[1] + link.mass * c
                a[2] = a[2] + ic + link.mass * (c @ c * np.eye(3) - np.outer(c, c))

    def new_body(name: str, parent: int, joint: _Joint | None) -> int:
        idx = len(acc)
        acc.append([0.0, np.zeros(3), np.zeros((3, 3))])
        bodies.append(
            BodySpec(
                name=name,
                parent=parent,
                joint_name='' if joint is None else joint.name,
                joint_type='root' if joint is None else joint.type,
                joint_rotation=np.eye(3) if joint is None else joint.rot,
                joint_translation=np.zeros(3) if joint is None else joint.trans,
                axis=np.array([1.0, 0.0, 0.0]) if joint is None else joint.axis,
                mass=0.0,
                com=np.zeros(3),
                inertia=np.zeros((3, 3)),
                lower=-np.inf if joint is None else joint.lower,
                upper=np.inf if joint is None else joint.upper,
                effort=np.inf if joint is None else joint.effort,
                velocity=np.inf if joint is None else joint.velocity,
                damping=0.0 if joint is None else joint.damping,
                friction=0.0 if joint is None else joint.friction,
            )
        )
        return idx

    # depth-first traversal: parents get smaller indices than children (regular labeling)
    new_body(roots[0], -1, None)
    # (link, body it belongs to or whose child it is, placement, moving joint into it or None)
    stack: list[tuple[str, int, np.ndarray, np.ndarray, _Joint | None]] = [
        (roots[0], 0, np.eye(3), np.zeros(3), None)
    ]
    visited: set[str] = set()
    while stack:
        link_name, body, rot, trans, joint = stack.pop()
        visited.add(link_name)
        if joint is not None:  # a moving joint starts a new body, placed in its parent's frame
            placed = dataclasses.replace(
                joint, rot=rot @ joint.rot, trans=rot @ joint.trans + trans
            )
            body = new_body(link_name, body, placed)
            rot, trans = np.eye(3), np.zeros(3)
        add_link(body, links[link_name], rot, trans)
        for child_joint in reversed(children[link_name]):
            if child_joint.type == 'fixed':
                stack.append(
                    (
                        child_joint.child,
                        body,
                        rot @ child_joint.rot,
                        rot @ child_joint.trans + trans,
                        None,
                    )
                )
            else:
                stack.append((child_joint.child, body, rot, trans, child_joint))
    unreached = [name for name in links if name not in visited]
    if unreached:
        raise ValueError(f'URDF: links {unreached} are not connected to root {roots[0]} (cycle)')

    specs: list[BodySpec] = []
    for index, (spec, (m, h, ib)) in enumerate(zip(bodies, acc, strict=True)):
        with np.errstate(over='ignore', invalid='ignore'):
            com = h / m if m > 0.0 else np.zeros(3)
            ic = ib - m * (com @ com * np.eye(3) - np.outer(com, com))
            ic = 0.5 * (ic + ic.T)
        if not (np.isfinite(m) and np.all(np.isfinite(com)) and np.all(np.isfinite(ic))):
            names = [name for name, frame in frames.items() if frame.body == index]
            raise ValueError(
                f'body {spec.name}: the mass properties of its links {names} overflow when '
                'combined (mass times squared CoM distance beyond 1.8e308): expected masses, '
                'CoM offsets and inertias whose products stay finite'
            )
        specs.append(_replace_inertial(spec, m, com, ic))
    model = build_model(
        specs,
        frames,
        link_order,
        floating_base=floating_base,
        gravity=gravity,
        name=root.get('name', 'robot'),
        strict_inertia=strict_inertia,
    )
    return dataclasses.replace(model, mimics=mimics) if mimics else model


def _replace_inertial(
    spec: BodySpec, mass: float, com: np.ndarray, inertia: np.ndarray
) -> BodySpec:
    return dataclasses.replace(spec, mass=float(mass), com=com, inertia=inertia)
