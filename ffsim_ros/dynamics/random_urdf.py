"""Random URDF generators for tests and benchmarks.

No ROS, no Pinocchio: the random draws come from ``random.Random`` (seeded explicitly), the
rotation of a link's inertia from :func:`.lie.rpy_to_matrix`, the products and sums in plain
Python. The output is fully determined by the arguments, and every number is written in its
shortest round-trip form so that any two parsers read bit-identical doubles.

Two generators are provided:

* :func:`random_urdf` -- a random kinematic *tree* exercising every feature the dynamics core
  must handle: rotated inertial frames with full (non-diagonal) inertia tensors, joint origins
  with arbitrary ``rpy``, non-axis-aligned and unnormalized joint axes, revolute, continuous and
  prismatic joints, branching, massive links attached by fixed joints (which must be merged into
  their parent body, including into the floating base) and massless frame links (tool frames).
* :func:`chain_urdf` -- a plain serial revolute chain, for scaling benchmarks.

Naming scheme of :func:`random_urdf`:

* ``base_link`` -- the root link;
* ``link_i`` / ``joint_i`` (``i = 1..n_joints``) -- moving bodies and their joints;
* ``fixed_i`` / ``fixed_joint_i`` -- massive links attached by fixed joints;
* ``frame_i`` / ``frame_joint_i`` -- massless links (no ``<inertial>``) attached by fixed joints.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence

from .lie import rpy_to_matrix

__all__ = ['chain_urdf', 'random_urdf']

Vec3 = tuple[float, float, float]
Mat3 = tuple[Vec3, Vec3, Vec3]


def _fmt(x: float) -> str:
    """Format a float exactly (shortest round-trip representation).

    Parameters
    ----------
    x : float
        Value to format.

    Returns
    -------
    str
        ``repr``-exact decimal string.
    """
    x = float(x)
    return '0' if x == 0.0 else repr(x)


def _vec(v: Vec3) -> str:
    """Format a 3-vector as a URDF attribute value.

    Parameters
    ----------
    v : tuple of float
        The vector.

    Returns
    -------
    str
        Space-separated components.
    """
    return ' '.join(_fmt(c) for c in v)


def _rotated_inertia(rot: Sequence[Sequence[float]], principal: Vec3) -> Mat3:
    """Return ``R diag(principal) R^T``, summed in plain Python (a fixed order of operations,
    so the printed digits do not depend on the BLAS).

    Parameters
    ----------
    rot : (3, 3) array_like
        Rotation matrix ``R``.
    principal : tuple of float
        Principal moments of inertia.

    Returns
    -------
    tuple of tuple of float
        Symmetric inertia tensor.
    """
    rot = [[float(x) for x in row] for row in rot]
    rows = []
    for i in range(3):
        rows.append(
            tuple(sum(rot[i][k] * principal[k] * rot[j][k] for k in range(3)) for j in range(3))
        )
    # Symmetrize exactly (the two triangles are computed in a different order).
    sym = [[0.0] * 3 for _ in range(3)]
    for i in range(3):
        for j in range(3):
            sym[i][j] = rows[min(i, j)][max(i, j)]
    return (tuple(sym[0]), tuple(sym[1]), tuple(sym[2]))  # type: ignore[return-value]


def _uniform3(rng: random.Random, lo: float, hi: float) -> Vec3:
    """Draw three independent uniform numbers.

    Parameters
    ----------
    rng : random.Random
        Random generator.
    lo, hi : float
        Bounds.

    Returns
    -------
    tuple of float
        The three numbers.
    """
    return (rng.uniform(lo, hi), rng.uniform(lo, hi), rng.uniform(lo, hi))


def _random_axis(rng: random.Random) -> Vec3:
    """Draw a random non-axis-aligned, unnormalized joint axis.

    Parameters
    ----------
    rng : random.Random
        Random generator.

    Returns
    -------
    tuple of float
        Axis with norm in ``[0.5, 2]`` and no near-zero component (so that no parser can
        classify it as a Cartesian axis).
    """
    while True:
        a = _uniform3(rng, -1.0, 1.0)
        if min(abs(c) for c in a) > 0.1:
            break
    norm = math.sqrt(sum(c * c for c in a))
    scale = rng.uniform(0.5, 2.0) / norm
    return (a[0] * scale, a[1] * scale, a[2] * scale)


def _inertial_xml(rng: random.Random, mass_range: tuple[float, float] = (0.3, 5.0)) -> str:
    """Random ``<inertial>`` element.

    The inertia is that of a solid box with random dimensions (so the principal moments satisfy
    the triangle inequality), rotated by a random rotation ``R`` (``R diag(I) R^T``) inside an
    inertial frame that is itself offset and rotated (random ``xyz`` and ``rpy``).

    Parameters
    ----------
    rng : random.Random
        Random generator.
    mass_range : tuple of float
        Bounds of the uniform mass distribution.

    Returns
    -------
    str
        The XML element (indented for a ``<link>``).
    """
    mass = rng.uniform(*mass_range)
    a, b, c = _uniform3(rng, 0.05, 0.6)
    principal = (
        mass * (b * b + c * c) / 12.0,
        mass * (a * a + c * c) / 12.0,
        mass * (a * a + b * b) / 12.0,
    )
    rot = rpy_to_matrix(_uniform3(rng, -math.pi, math.pi))
    inertia = _rotated_inertia(rot, principal)
    xyz = _uniform3(rng, -0.2, 0.2)
    rpy = _uniform3(rng, -math.pi, math.pi)
    return (
        '    <inertial>\n'
        f'      <origin xyz="{_vec(xyz)}" rpy="{_vec(rpy)}"/>\n'
        f'      <mass value="{_fmt(mass)}"/>\n'
        f'      <inertia ixx="{_fmt(inertia[0][0])}" ixy="{_fmt(inertia[0][1])}" '
        f'ixz="{_fmt(inertia[0][2])}" iyy="{_fmt(inertia[1][1])}" '
        f'iyz="{_fmt(inertia[1][2])}" izz="{_fmt(inertia[2][2])}"/>\n'
        '    </inertial>\n'
    )


def _link_xml(name: str, inertial: str | None) -> str:
    """Build a ``<link>`` element.

    Parameters
    ----------
    name : str
        Link name.
    inertial : str or None
        The ``<inertial>`` element, or None for a massless frame link.

    Returns
    -------
    str
        The XML element.
    """
    if inertial is None:
        return f'  <link name="{name}"/>\n'
    return f'  <link name="{name}">\n{inertial}  </link>\n'


def _joint_xml(
    name: str,
    kind: str,
    parent: str,
    child: str,
    xyz: Vec3,
    rpy: Vec3,
    axis: Vec3 | None = None,
    limit: tuple[float, float] | None = None,
) -> str:
    """Build a ``<joint>`` element.

    Parameters
    ----------
    name : str
        Joint name.
    kind : str
        URDF joint type.
    parent, child : str
        Link names.
    xyz, rpy : tuple of float
        Joint origin.
    axis : tuple of float or None
        Joint axis (omitted for fixed joints).
    limit : tuple of float or None
        ``(lower, upper)`` position limits, if any.

    Returns
    -------
    str
        The XML element.
    """
    s = (
        f'  <joint name="{name}" type="{kind}">\n'
        f'    <parent link="{parent}"/>\n'
        f'    <child link="{child}"/>\n'
        f'    <origin xyz="{_vec(xyz)}" rpy="{_vec(rpy)}"/>\n'
    )
    if axis is not None:
        s += f'    <axis xyz="{_vec(axis)}"/>\n'
    if limit is not None:
        s += (
            f'    <limit lower="{_fmt(limit[0])}" upper="{_fmt(limit[1])}" '
            'effort="100" velocity="10"/>\n'
        )
    return s + '  </joint>\n'


def random_urdf(
    seed: int,
    n_joints: int,
    *,
    branching: float = 0.3,
    prismatic: float = 0.2,
    continuous: float = 0.2,
    fixed_children: bool = True,
    massless_frames: bool = True,
) -> str:
    """Generate a random tree-structured URDF.

    Parameters
    ----------
    seed : int
        Seed of the generator; the output is a deterministic function of all arguments.
    n_joints : int
        Number of moving joints (>= 0). Link ``link_i`` is the child of ``joint_i``.
    branching : float, optional
        Probability that the parent of a new moving joint is drawn uniformly among all existing
        bodies (root, moving links and fixed massive children) instead of being the most
        recently added moving link (which gives a serial chain when 0).
    prismatic : float, optional
        Probability that a moving joint is prismatic.
    continuous : float, optional
        Probability that a moving joint is continuous (unbounded revolute); the remaining
        joints are bounded revolute joints.
    fixed_children : bool, optional
        Add massive links attached by fixed joints (``fixed_i``), including one on the root
        link, so that the consumer must merge them into their parent body (and into the
        floating base, which moves the base CoM).
    massless_frames : bool, optional
        Add massless links (no ``<inertial>``, ``frame_i``) attached by fixed joints, such as
        tool frames, some of them on other frames or on fixed children.

    Returns
    -------
    str
        The URDF document (robot name ``random_<seed>_<n_joints>``).

    Raises
    ------
    ValueError
        If ``n_joints`` is negative or a probability is outside ``[0, 1]``.
    """
    if n_joints < 0:
        raise ValueError('n_joints must be >= 0')
    for p in (branching, prismatic, continuous):
        if not 0.0 <= p <= 1.0:
            raise ValueError('probabilities must lie in [0, 1]')
    if prismatic + continuous > 1.0:
        raise ValueError('prismatic + continuous must not exceed 1')
    rng = random.Random(seed * 7919 + n_joints)

    links = [_link_xml('base_link', _inertial_xml(rng, (2.0, 20.0)))]
    joints: list[str] = []
    bodies = ['base_link']  # links a moving joint may attach to (all carry mass)
    frame_parents = ['base_link']  # links a massless frame may attach to
    last_moving = 'base_link'
    n_fixed = 0
    n_frames = 0

    def add_fixed_child(parent: str) -> None:
        nonlocal n_fixed
        n_fixed += 1
        name = f'fixed_{n_fixed}'
        links.append(_link_xml(name, _inertial_xml(rng)))
        joints.append(
            _joint_xml(
                f'fixed_joint_{n_fixed}',
                'fixed',
                parent,
                name,
                _uniform3(rng, -0.3, 0.3),
                _uniform3(rng, -math.pi, math.pi),
            )
        )
        bodies.append(name)
        frame_parents.append(name)

    def add_frame(parent: str) -> None:
        nonlocal n_frames
        n_frames += 1
        name = f'frame_{n_frames}'
        links.append(_link_xml(name, None))
        joints.append(
            _joint_xml(
                f'frame_joint_{n_frames}',
                'fixed',
                parent,
                name,
                _uniform3(rng, -0.3, 0.3),
                _uniform3(rng, -math.pi, math.pi),
            )
        )
        frame_parents.append(name)

    if fixed_children:
        add_fixed_child('base_link')
    for i in range(1, n_joints + 1):
        parent = rng.choice(bodies) if rng.random() < branching else last_moving
        u = rng.random()
        if u < prismatic:
            kind, limit = 'prismatic', (-0.5, 0.5)
        elif u < prismatic + continuous:
            kind, limit = 'continuous', None
        else:
            kind, limit = 'revolute', (-2.9, 2.9)
        name = f'link_{i}'
        links.append(_link_xml(name, _inertial_xml(rng)))
        joints.append(
            _joint_xml(
                f'joint_{i}',
                kind,
                parent,
                name,
                _uniform3(rng, -0.5, 0.5),
                _uniform3(rng, -math.pi, math.pi),
                axis=_random_axis(rng),
                limit=limit,
            )
        )
        bodies.append(name)
        frame_parents.append(name)
        last_moving = name
        if fixed_children and rng.random() < 0.25:
            add_fixed_child(name)
        if massless_frames and rng.random() < 0.25:
            add_frame(rng.choice(frame_parents))
    if massless_frames:
        # Always at least a tool frame on the last moving link and a frame on the base.
        add_frame(last_moving)
        add_frame('base_link')
        add_frame(frame_parents[-1])  # a frame on a frame

    return (
        '<?xml version="1.0"?>\n'
        f'<robot name="random_{seed}_{n_joints}">\n'
        + ''.join(links)
        + ''.join(joints)
        + '</robot>\n'
    )


def chain_urdf(n_joints: int, *, seed: int = 0) -> str:
    """Generate a serial chain of revolute joints (for scaling benchmarks).

    Each link is a slender rod-like body of random mass about 1 kg; the joint axes cycle through
    z, y, x of the parent link frame and consecutive joints are offset by about 0.3 m, with a
    small random tilt so that the chain is not planar.

    Parameters
    ----------
    n_joints : int
        Number of revolute joints (>= 0); the links are ``base_link``, ``link_1`` ...
    seed : int, optional
        Seed of the small random perturbations.

    Returns
    -------
    str
        The URDF document (robot name ``chain_<n_joints>``).

    Raises
    ------
    ValueError
        If ``n_joints`` is negative.
    """
    if n_joints < 0:
        raise ValueError('n_joints must be >= 0')
    rng = random.Random(seed)
    axes: list[Vec3] = [(0.0, 0.0, 1.0), (0.0, 1.0, 0.0), (1.0, 0.0, 0.0)]

    def rod(mass: float, length: float) -> str:
        r = 0.04
        ixx = mass * (3 * r * r + length * length) / 12.0
        izz = mass * r * r / 2.0
        return (
            '    <inertial>\n'
            f'      <origin xyz="0 0 {_fmt(length / 2)}" rpy="0 0 0"/>\n'
            f'      <mass value="{_fmt(mass)}"/>\n'
            f'      <inertia ixx="{_fmt(ixx)}" ixy="0" ixz="0" iyy="{_fmt(ixx)}" iyz="0" '
            f'izz="{_fmt(izz)}"/>\n'
            '    </inertial>\n'
        )

    links = [_link_xml('base_link', rod(50.0, 0.5))]
    joints = []
    parent = 'base_link'
    offset = 0.5  # length of the parent link: the joint sits at its far end
    for i in range(1, n_joints + 1):
        length = rng.uniform(0.25, 0.35)
        name = f'link_{i}'
        links.append(_link_xml(name, rod(rng.uniform(0.8, 1.2), length)))
        tilt = _uniform3(rng, -0.05, 0.05)
        joints.append(
            _joint_xml(
                f'joint_{i}',
                'revolute',
                parent,
                name,
                (0.0, 0.0, offset),
                tilt,
                axis=axes[(i - 1) % 3],
                limit=(-2.9, 2.9),
            )
        )
        parent = name
        offset = length
    return (
        '<?xml version="1.0"?>\n'
        f'<robot name="chain_{n_joints}">\n' + ''.join(links) + ''.join(joints) + '</robot>\n'
    )
