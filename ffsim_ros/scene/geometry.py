"""Collision geometry: primitives attached to links, read from URDF ``<collision>`` elements.

Shapes are the URDF primitives -- :class:`Sphere`, :class:`Box`, :class:`Cylinder` (axis
along the shape's z) -- and :class:`Capsule` (a cylinder with hemispherical caps, axis z,
``length`` between the cap centres; written ``<capsule radius=".." length=".."/>``, the
extension Gazebo and ``urdfdom`` read), every dimension (radius, length, edge) in
[:data:`MIN_SHAPE_SIZE`, :data:`MAX_SHAPE_SIZE`] = [0.1 mm, 1000 km]. Each
:class:`CollisionShape` sits at a fixed pose in a link frame. Meshes are not collision
primitives: by default a ``<mesh>`` is an error naming the link and the file;
``meshes='ignore'`` skips it (with a warning) and ``meshes='bounding_box'`` loads the file
(STL, OBJ, DAE, ... through coal's assimp loader, with the element's ``scale``) and uses the
box bounding its vertices, axis-aligned in the mesh frame (at least :data:`MIN_SHAPE_SIZE`
thick: a flat mesh gives a 0.1 mm plate).

Distances and contact points come from ``coal`` (hpp-fcl's successor, :mod:`.contact`):
closed-form algorithms for the sphere and capsule pairs, GJK/EPA for the others, signed
distances (negative when the shapes overlap) with witness points and the normal.
"""

from __future__ import annotations

import math
import os
import warnings
import xml.etree.ElementTree as ET
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import coal
import numpy as np

import ffsim_ros.dynamics as D
from ffsim_ros.dynamics.lie import is_rotation, rpy_to_matrix
from ffsim_ros.dynamics.urdf import read_urdf_xml

#: What :func:`shapes_from_urdf` does with a ``<mesh>``.
MESH_POLICIES = ('error', 'ignore', 'bounding_box')


#: Largest dimension of a shape [m] (the size of the simulated world; beyond it the inertia
#: of the shape overflows).
MAX_SHAPE_SIZE = 1e6
#: Smallest dimension of a shape [m] (0.1 mm): the inertia of a smaller body vanishes against
#: its mass in the mass matrix, whose factorization then fails at the first step.
MIN_SHAPE_SIZE = 1e-4


def _positive(value: float, what: str) -> float:
    x = float(value)
    if not np.isfinite(x) or x <= 0.0:
        raise ValueError(f'{what}: expected a finite value > 0, got {value!r}')
    if x > MAX_SHAPE_SIZE:
        raise ValueError(f'{what}: expected at most {MAX_SHAPE_SIZE:g} m, got {value!r}')
    if x < MIN_SHAPE_SIZE:
        raise ValueError(
            f'{what}: expected at least {MIN_SHAPE_SIZE:g} m (0.1 mm: the inertia of a smaller '
            f'body vanishes against its mass), got {value!r}'
        )
    return x


@dataclass(frozen=True)
class Sphere:
    """Sphere of ``radius`` [m] centred on its frame."""

    radius: float

    def __post_init__(self) -> None:
        object.__setattr__(self, 'radius', _positive(self.radius, 'sphere radius'))

    @property
    def bounding_radius(self) -> float:
        """Radius of the smallest sphere about the frame origin enclosing the shape [m]."""
        return self.radius

    def inertia(self, mass: float) -> np.ndarray:
        """(3, 3) inertia of a uniform solid of ``mass`` [kg] about its centre [kg m^2].

        Parameters
        ----------
        mass : float
            [kg].

        Returns
        -------
        (3, 3) ndarray
            [kg m^2]
        """
        return 0.4 * mass * self.radius**2 * np.eye(3)

    def coal(self) -> coal.CollisionGeometry:
        """The coal geometry.

        Returns
        -------
        coal.Sphere
        """
        return coal.Sphere(self.radius)


@dataclass(frozen=True)
class Box:
    """Box of edge lengths ``size`` (3,) [m] centred on its frame, edges along its axes."""

    size: tuple[float, float, float]

    def __post_init__(self) -> None:
        s = np.asarray(self.size, dtype=float).reshape(-1)
        if s.shape != (3,):
            raise ValueError(f'box size: expected 3 values, got {list(np.ravel(self.size))}')
        object.__setattr__(self, 'size', tuple(_positive(float(x), 'box size') for x in s))

    @property
    def bounding_radius(self) -> float:
        """Radius of the smallest sphere about the frame origin enclosing the shape [m]: half
        the box's diagonal."""
        return 0.5 * float(np.linalg.norm(self.size))

    def inertia(self, mass: float) -> np.ndarray:
        """(3, 3) inertia of a uniform solid of ``mass`` [kg] about its centre, in its frame's
        axes (diagonal) [kg m^2].

        Parameters
        ----------
        mass : float
            [kg].

        Returns
        -------
        (3, 3) ndarray
            [kg m^2]
        """
        a, b, c = self.size
        return mass / 12.0 * np.diag([b * b + c * c, a * a + c * c, a * a + b * b])

    def coal(self) -> coal.CollisionGeometry:
        """The coal geometry (``coal.Box`` of the edge lengths [m]).

        Returns
        -------
        coal.Box
        """
        return coal.Box(*self.size)


@dataclass(frozen=True)
class Cylinder:
    """Solid cylinder of ``radius`` and ``length`` [m] along its frame's z, centred."""

    radius: float
    length: float

    def __post_init__(self) -> None:
        object.__setattr__(self, 'radius', _positive(self.radius, 'cylinder radius'))
        object.__setattr__(self, 'length', _positive(self.length, 'cylinder length'))

    @property
    def bounding_radius(self) -> float:
        """Radius of the smallest sphere about the frame origin enclosing the shape [m]:
        ``hypot(radius, length / 2)``, to a rim of an end face."""
        return float(np.hypot(self.radius, 0.5 * self.length))

    def inertia(self, mass: float) -> np.ndarray:
        """(3, 3) inertia of a uniform solid of ``mass`` [kg] about its centre, in its frame's
        axes (diagonal, the axis of symmetry z) [kg m^2].

        Parameters
        ----------
        mass : float
            [kg].

        Returns
        -------
        (3, 3) ndarray
            [kg m^2]
        """
        r, h = self.radius, self.length
        t = mass * (3 * r * r + h * h) / 12.0
        return np.diag([t, t, 0.5 * mass * r * r])

    def coal(self) -> coal.CollisionGeometry:
        """The coal geometry (``coal.Cylinder`` of the radius and length [m], along z).

        Returns
        -------
        coal.Cylinder
        """
        return coal.Cylinder(self.radius, self.length)


@dataclass(frozen=True)
class Capsule:
    """Capsule: the points within ``radius`` of the segment of ``length`` [m] along z."""

    radius: float
    length: float

    def __post_init__(self) -> None:
        object.__setattr__(self, 'radius', _positive(self.radius, 'capsule radius'))
        object.__setattr__(self, 'length', _positive(self.length, 'capsule length'))

    @property
    def bounding_radius(self) -> float:
        """Radius of the smallest sphere about the frame origin enclosing the shape [m]:
        ``radius + length / 2``, to a pole of an end cap."""
        return self.radius + 0.5 * self.length

    def inertia(self, mass: float) -> np.ndarray:
        """(3, 3) inertia of a uniform solid capsule (cylinder plus two hemispheres of one
        density) of ``mass`` [kg] about its centre, in its frame's axes (diagonal, the axis of
        symmetry z) [kg m^2].

        Parameters
        ----------
        mass : float
            [kg].

        Returns
        -------
        (3, 3) ndarray
            [kg m^2]
        """
        r, h = self.radius, self.length
        vc, vs = np.pi * r * r * h, 4.0 / 3.0 * np.pi * r**3
        mc, ms = mass * vc / (vc + vs), mass * vs / (vc + vs)
        axial = 0.5 * mc * r * r + 0.4 * ms * r * r
        # hemispheres: 2/5 m r^2 about their centre plane's diameter for the pair, shifted to
        # the capsule centre (each hemisphere's CoM 3r/8 beyond the cylinder's end)
        trans = mc * (3 * r * r + h * h) / 12.0 + ms * (0.4 * r * r + h * h / 4 + 3 * h * r / 8)
        return np.diag([trans, trans, axial])

    def coal(self) -> coal.CollisionGeometry:
        """The coal geometry (``coal.Capsule`` of the radius and segment length [m], along
        z).

        Returns
        -------
        coal.Capsule
        """
        return coal.Capsule(self.radius, self.length)


Shape = Sphere | Box | Cylinder | Capsule


@dataclass(frozen=True)
class CollisionShape:
    """A primitive at a fixed pose in a link frame.

    Attributes
    ----------
    link : str
        Link carrying the shape (any link of the model, merged ones included).
    shape : Sphere | Box | Cylinder | Capsule
    rotation : (3, 3) ndarray
        Shape frame orientation in the link frame.
    translation : (3,) ndarray
        Shape frame origin in the link frame [m].
    """

    link: str
    shape: Shape
    rotation: np.ndarray = field(default_factory=lambda: np.eye(3))
    translation: np.ndarray = field(default_factory=lambda: np.zeros(3))

    def __post_init__(self) -> None:
        if not isinstance(self.shape, Sphere | Box | Cylinder | Capsule):
            raise ValueError(
                f'collision shape of link {self.link!r}: expected a Sphere, Box, Cylinder or '
                f'Capsule, got {type(self.shape).__name__}'
            )
        R = np.array(self.rotation, dtype=float)
        t = np.array(self.translation, dtype=float).reshape(-1)
        if not is_rotation(R):  # (orthonormal and proper: a reflection is refused)
            raise ValueError(
                f'collision shape of link {self.link!r}: rotation expected a rotation matrix '
                f'(det +1), got {R.tolist()}'
            )
        if t.shape != (3,) or not np.all(np.isfinite(t)):
            raise ValueError(
                f'collision shape of link {self.link!r}: translation expected 3 finite values, '
                f'got {t.tolist()}'
            )
        R.setflags(write=False)
        t.setflags(write=False)
        object.__setattr__(self, 'rotation', R)
        object.__setattr__(self, 'translation', t)

    def renamed(self, link: str) -> CollisionShape:
        """The same shape on link ``link`` (e.g. a prefixed name in a welded model).

        Parameters
        ----------
        link : str
            The new link name (same pose in that link's frame).

        Returns
        -------
        CollisionShape
        """
        return CollisionShape(link, self.shape, self.rotation, self.translation)


def point_distance(shape: Shape, point: np.ndarray) -> float:
    """Signed distance [m] from ``point`` (3,), in the shape's frame, to the surface of
    ``shape``: positive outside, negative inside (minus the depth below the surface).

    Closed forms: the sphere and the capsule (distance to the centre, or to the segment between
    the cap centres, less the radius); the box and the cylinder (the exact signed distance of
    the excess over the half extents: axes x, y, z, or the radial distance and z).

    Parameters
    ----------
    shape : Sphere, Box, Cylinder or Capsule
    point : (3,) ndarray
        The point in the shape's frame [m].

    Returns
    -------
    float
        [m].
    """
    p = np.asarray(point, dtype=float).reshape(3)
    if isinstance(shape, Sphere):
        return float(np.linalg.norm(p)) - shape.radius
    if isinstance(shape, Capsule):
        z = min(max(p[2], -0.5 * shape.length), 0.5 * shape.length)
        return float(math.dist(p.tolist(), [0.0, 0.0, z])) - shape.radius
    if isinstance(shape, Box):
        excess = np.abs(p) - 0.5 * np.array(shape.size)
    else:  # Cylinder
        excess = np.array([math.hypot(p[0], p[1]) - shape.radius, abs(p[2]) - 0.5 * shape.length])
    return float(np.linalg.norm(np.maximum(excess, 0.0)) + min(excess.max(), 0.0))


def describe_shape(shape: Shape) -> str:
    """``'box 1.8 x 1.6 x 1.6 m'``, ``'sphere of radius 0.1 m'``, ... (for messages).

    Parameters
    ----------
    shape : Sphere, Box, Cylinder or Capsule

    Returns
    -------
    str
    """
    if isinstance(shape, Box):
        return 'box ' + ' x '.join(f'{x:.4g}' for x in shape.size) + ' m'
    if isinstance(shape, Sphere):
        return f'sphere of radius {shape.radius:.4g} m'
    kind = 'capsule' if isinstance(shape, Capsule) else 'cylinder'
    return f'{kind} of radius {shape.radius:.4g} m, length {shape.length:.4g} m'


def _floats(text: str | None, count: int, default: Sequence[float], where: str) -> np.ndarray:
    if text is None:
        return np.array(default, dtype=float)
    try:
        vals = np.array([float(t) for t in text.split()])
    except ValueError:
        raise ValueError(f'{where}: expected {count} numbers, got {text!r}') from None
    if vals.shape != (count,) or not np.all(np.isfinite(vals)):
        raise ValueError(f'{where}: expected {count} finite numbers, got {text!r}')
    return vals


def _attr(elem: ET.Element, key: str, where: str) -> float:
    text = elem.get(key)
    if text is None:
        raise ValueError(f'{where}: missing attribute {key!r}')
    try:
        return float(text)
    except ValueError:
        raise ValueError(f'{where}: {key} must be a number, got {text!r}') from None


def _mesh_path(filename: str, package_dirs: Mapping[str, str], where: str) -> Path:
    if filename.startswith('package://'):
        package, _, rest = filename[len('package://') :].partition('/')
        if package not in package_dirs:
            raise ValueError(
                f'{where}: mesh {filename!r}: package {package!r} unknown; pass '
                f'package_dirs={{{package!r}: <its share directory>}}'
            )
        return Path(package_dirs[package]) / rest
    if filename.startswith('file://'):
        return Path(filename[len('file://') :])
    return Path(filename)


def _mesh_box(
    geom: ET.Element, package_dirs: Mapping[str, str], where: str
) -> tuple[Box, np.ndarray]:
    """The box bounding a mesh's vertices (scaled) and its centre in the mesh frame."""
    filename = geom.get('filename') or ''
    scale = _floats(geom.get('scale'), 3, (1.0, 1.0, 1.0), f'{where} mesh scale')
    path = _mesh_path(filename, package_dirs, where)
    try:
        mesh = coal.MeshLoader().load(os.fspath(path), scale)
    except ValueError as exc:
        raise ValueError(f'{where}: cannot load mesh {filename!r} ({path}): {exc}') from None
    mesh.computeLocalAABB()
    lo = np.array(mesh.aabb_local.min_, dtype=float)
    hi = np.array(mesh.aabb_local.max_, dtype=float)
    size = np.maximum(hi - lo, MIN_SHAPE_SIZE)  # a flat mesh: a box of the smallest thickness
    return Box(tuple(size)), 0.5 * (lo + hi)


def shapes_from_urdf(
    source: str | os.PathLike[str],
    *,
    model: D.Model | None = None,
    meshes: str = 'error',
    package_dirs: Mapping[str, str] | None = None,
    exclude: Sequence[str] = (),
) -> tuple[CollisionShape, ...]:
    """The ``<collision>`` primitives of a URDF, one :class:`CollisionShape` per element.

    Parameters
    ----------
    source : str or path-like
        URDF XML or a path to it.
    model : Model, optional
        When given, every link carrying a shape must be a link of it.
    meshes : {'error', 'ignore', 'bounding_box'}
        What a ``<mesh>`` becomes (module docstring).
    package_dirs : mapping, optional
        ``{package: directory}`` resolving ``package://`` mesh names (``bounding_box``).
    exclude : sequence of str
        Links whose shapes are skipped (e.g. gripper fingers that must reach into a handle).

    Returns
    -------
    tuple of CollisionShape, in document order.

    Raises
    ------
    ValueError
        Malformed elements (the message names the link), a mesh under ``meshes='error'``
        (names the link and file), an unknown mesh policy.
    UnknownNameError
        ``exclude`` or a shape's link is not a link of ``model``.
    """
    if meshes not in MESH_POLICIES:
        raise ValueError(f'meshes: expected one of {MESH_POLICIES}, got {meshes!r}')
    root = read_urdf_xml(source)
    dirs = dict(package_dirs or {})
    links = [el.get('name') or '' for el in root.findall('link')]
    for name in exclude:
        if name not in links:
            raise D.UnknownNameError(f'exclude: unknown link {name!r}; the URDF has {links}')
    out: list[CollisionShape] = []
    for link_el in root.findall('link'):
        link = link_el.get('name') or ''
        if link in exclude:
            continue
        for k, col in enumerate(link_el.findall('collision')):
            where = f'link {link} <collision> #{k}'
            origin = col.find('origin')
            R = rpy_to_matrix(
                _floats(None if origin is None else origin.get('rpy'), 3, (0, 0, 0), where)
            )
            t = _floats(None if origin is None else origin.get('xyz'), 3, (0, 0, 0), where)
            geom = col.find('geometry')
            child = None if geom is None else next(iter(geom), None)
            if child is None:
                raise ValueError(f'{where}: expected a <geometry> with one shape')
            tag = child.tag
            if tag == 'sphere':
                shape: Shape = Sphere(_attr(child, 'radius', where))
            elif tag == 'box':
                shape = Box(tuple(_floats(child.get('size'), 3, (), f'{where} box size')))
            elif tag == 'cylinder':
                shape = Cylinder(_attr(child, 'radius', where), _attr(child, 'length', where))
            elif tag == 'capsule':
                shape = Capsule(_attr(child, 'radius', where), _attr(child, 'length', where))
            elif tag == 'mesh':
                filename = child.get('filename')
                if meshes == 'error':
                    raise ValueError(
                        f'{where}: mesh {filename!r} is not a collision primitive (supported: '
                        "sphere, box, cylinder, capsule); pass meshes='bounding_box' to use the "
                        "box bounding it, or meshes='ignore' to skip it"
                    )
                if meshes == 'ignore':
                    warnings.warn(f'{where}: mesh {filename!r} ignored', stacklevel=2)
                    continue
                shape, centre = _mesh_box(child, dirs, where)
                t = t + R @ centre
            else:
                raise ValueError(
                    f'{where}: geometry <{tag}> unknown (expected sphere, box, cylinder, capsule '
                    'or mesh)'
                )
            out.append(CollisionShape(link, shape, R, t))
    if model is not None:
        check_links(model, out, 'collision shape')
    return tuple(out)


def goal_keepout_shapes(
    urdf: str | os.PathLike[str], model: D.Model
) -> tuple[list[CollisionShape], list[str]]:
    """The robot's ``<collision>`` primitives for the reactionless controller's goal check (goals
    inside those of the base body are refused,
    :meth:`~ffsim_ros.control.ReactionlessController.check_goal`), and the links on the base
    whose mesh shapes are left out (for a warning). The node and the campaigns build their law
    with them.

    Parameters
    ----------
    urdf : str or path-like
        URDF XML or a path to it.
    model : Model
        The model of ``urdf``.

    Returns
    -------
    shapes : list of CollisionShape
        Collision primitives of all links (meshes skipped).
    mesh_links : list of str
        Links on the base body whose meshes were left out, sorted.

    Raises
    ------
    ValueError
        Collision geometry that cannot be read (:func:`shapes_from_urdf`;
        :class:`~ffsim_ros.dynamics.UnknownNameError` is one).
    """
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter('always')
        shapes = list(shapes_from_urdf(urdf, model=model, meshes='ignore'))
    on_base = {n for n in model.link_names if model.frame(n).body == 0}
    meshes = {str(w.message).removeprefix('link ').split(' <collision>')[0] for w in caught}
    return shapes, sorted(meshes & on_base)


def check_links(model: D.Model, shapes: Sequence[CollisionShape], what: str) -> None:
    """Raise :class:`~ffsim_ros.dynamics.UnknownNameError` naming the first shape whose link
    ``model`` does not have.

    Parameters
    ----------
    model : Model
    shapes : sequence of CollisionShape
    what : str
        Prefix of the message.
    """
    for s in shapes:
        if s.link not in model.frames:
            raise D.UnknownNameError(
                f'{what}: unknown link {s.link!r}; the model {model.name!r} has '
                f'{list(model.link_names)}'
            )


class PlacedShapes:
    """The shapes of one model with what each query needs: body, pose on the body, coal
    geometry and bounding radius (built once per model).

    Parameters
    ----------
    model : Model
    shapes : sequence of CollisionShape
        On links of ``model`` (:class:`~ffsim_ros.dynamics.UnknownNameError` otherwise).
    """

    def __init__(self, model: D.Model, shapes: Sequence[CollisionShape]) -> None:
        check_links(model, shapes, 'collision shape')
        self.model = model
        self.shapes = tuple(shapes)
        k = len(self.shapes)
        self.body = np.empty(k, dtype=np.int64)
        self.rot = np.empty((k, 3, 3))
        self.trans = np.empty((k, 3))
        self.radius = np.empty(k)
        self.geometry = []
        for i, s in enumerate(self.shapes):
            f = model.frame(s.link)
            self.body[i] = f.body
            self.rot[i] = f.rotation @ s.rotation
            self.trans[i] = f.rotation @ s.translation + f.translation
            self.radius[i] = s.shape.bounding_radius
            self.geometry.append(s.shape.coal())

    def __len__(self) -> int:
        return len(self.shapes)

    def world(self, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """World placement of the shapes at ``q``.

        Parameters
        ----------
        q : (nq,) configuration of the model ``[r0, Q0, phi]``, base in the world frame
            [m, -, rad | m].

        Returns
        -------
        Rb : (k, 3, 3) orientation of each shape's *body* (the shape's own orientation is
            ``Rb[i] @ rot[i]``, :meth:`rotation`);  p : (k, 3) shape frame origins [m].
        """
        Rb, pb = D.body_poses(self.model, q)
        Rb = Rb[self.body]
        return Rb, pb[self.body] + np.einsum('kij,kj->ki', Rb, self.trans)

    def rotation(self, Rb: np.ndarray, i: int) -> np.ndarray:
        """(3, 3) world orientation of shape ``i`` from :meth:`world`'s ``Rb``.

        Parameters
        ----------
        Rb : (k, 3, 3) ndarray
            Orientations of the shapes' bodies (body frame -> world frame) [-], from
            :meth:`world`.
        i : int
            Index of the shape.

        Returns
        -------
        (3, 3) ndarray
            Shape frame -> world frame [-].
        """
        return Rb[i] @ self.rot[i]


__all__ = [
    'MESH_POLICIES',
    'MAX_SHAPE_SIZE',
    'MIN_SHAPE_SIZE',
    'Box',
    'Capsule',
    'CollisionShape',
    'Cylinder',
    'PlacedShapes',
    'Shape',
    'Sphere',
    'check_links',
    'describe_shape',
    'point_distance',
    'shapes_from_urdf',
]
