"""Sample closed-chain mechanisms (URDF text and their cut hinges) for tests, benchmarks and
examples.

* The planar four-bar: crank ``a``, coupler ``b``, rocker ``c``, ground pivots ``d`` apart
  (:data:`FOURBAR`), on a fixed ground or with the ground a free-floating 5 kg plate; cut
  between the rocker's tip and the ground's second pivot.
* The spatial loop: a 20 kg floating base with two arms (4 + 3 revolute joints about mixed
  axes) whose tips meet at ``q = 0``; cut between the tips.
* The floating platform: a 20 kg floating base with three legs (3 revolute joints each, axes
  x, y, x); a 5 kg platform on a revolute joint at the tip of leg ``a``, the tips of legs
  ``b`` and ``c`` held to it by two ball cut hinges (a 4-DoF mechanism on a free base).
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence

import numpy as np

from ..link_frames import link_pose
from ..model import neutral
from ..urdf import load_urdf
from .closed import ClosedChain, LoopClosure
from .linalg import RedundantConstraintWarning

#: Four-bar lengths [m]: crank, coupler, rocker, distance of the ground pivots.
FOURBAR = {'a': 0.4, 'b': 1.0, 'c': 0.7, 'd': 0.9}
#: Hinge points of the spatial loop's cut on ``la4`` and ``lb3`` (link frames) [m].
TIP_A = np.array([0.1, -0.2, 0.0])
TIP_B = np.array([0.2, 0.2, 0.0])


def _bar(name: str, m: float, length: float, w: float = 0.04) -> str:
    """A slender bar along +x from the link origin (mass ``m`` [kg], square section ``w``)."""
    ixx, iyy = m * w * w / 6, m * (length**2 + w * w) / 12
    return (
        f'<link name="{name}"><inertial><origin xyz="{length / 2} 0 0"/><mass value="{m}"/>'
        f'<inertia ixx="{ixx!r}" iyy="{iyy!r}" izz="{iyy!r}" ixy="0" ixz="0" iyz="0"/>'
        '</inertial></link>'
    )


def _rev(name: str, parent: str, child: str, xyz: Sequence[float], axis: str = '0 0 1') -> str:
    return (
        f'<joint name="{name}" type="revolute"><parent link="{parent}"/><child link="{child}"/>'
        f'<origin xyz="{xyz[0]} {xyz[1]} {xyz[2]}"/><axis xyz="{axis}"/>'
        '<limit lower="-10" upper="10" effort="1" velocity="1"/></joint>'
    )


def fourbar_urdf(floating_ground: bool = False) -> str:
    """The four-bar (joints ``j1``-``j3`` about z); ``floating_ground`` makes the ground link a
    5 kg plate (load it with ``floating_base=True``), else it is massless (a fixed base).

    Parameters
    ----------
    floating_ground : bool
        Give the ground link mass and inertia (a floating base).

    Returns
    -------
    str
        The URDF text.
    """
    ground = (
        '<link name="ground"><inertial><origin xyz="0.45 0 0"/><mass value="5"/>'
        '<inertia ixx="0.1" iyy="0.4" izz="0.45" ixy="0" ixz="0" iyz="0"/></inertial></link>'
        if floating_ground
        else '<link name="ground"/>'
    )
    a, b, c = FOURBAR['a'], FOURBAR['b'], FOURBAR['c']
    return (
        f'<robot name="{"floating_" if floating_ground else ""}fourbar">'
        + ground
        + _rev('j1', 'ground', 'crank', (0, 0, 0))
        + _bar('crank', 1.0, a)
        + _rev('j2', 'crank', 'coupler', (a, 0, 0))
        + _bar('coupler', 2.0, b)
        + _rev('j3', 'coupler', 'rocker', (b, 0, 0))
        + _bar('rocker', 1.5, c)
        + '</robot>'
    )


def fourbar_cut(kind: str, rotation_b: np.ndarray | None = None) -> LoopClosure:
    """The four-bar's cut hinge ``'cut'`` between the rocker's tip and the ground pivot.

    Parameters
    ----------
    kind : str
        Hinge kind: ``'ball'``, ``'revolute'`` or ``'weld'``.
    rotation_b : (3, 3) ndarray, optional
        Orientation of the hinge frame on the ground in the ground link frame [-] (default
        the identity, the hinge frame on the rocker being the rocker's axes).

    Returns
    -------
    LoopClosure
    """
    return LoopClosure(
        'cut',
        'rocker',
        'ground',
        kind,
        translation_a=[FOURBAR['c'], 0, 0],
        translation_b=[FOURBAR['d'], 0, 0],
        rotation_b=np.eye(3) if rotation_b is None else rotation_b,
    )


def _inertial(rng: np.random.Generator, m: float, com: Sequence[float]) -> str:
    Qr, _ = np.linalg.qr(rng.normal(size=(3, 3)))
    inertia = Qr @ np.diag(rng.uniform(0.02, 0.05, 3)) @ Qr.T
    # 12 significant digits: LAPACK's QR and BLAS's products round differently on different
    # CPUs (last bits), and the sample files must be the same text everywhere
    f = [_digits(x) for x in (inertia[0, 0], inertia[1, 1], inertia[2, 2])]
    o = [_digits(x) for x in (inertia[0, 1], inertia[0, 2], inertia[1, 2])]
    return (
        f'<inertial><origin xyz="{com[0]} {com[1]} {com[2]}"/><mass value="{m}"/>'
        f'<inertia ixx="{f[0]}" iyy="{f[1]}" izz="{f[2]}" ixy="{o[0]}" ixz="{o[1]}"'
        f' iyz="{o[2]}"/></inertial>'
    )


def _digits(x: float, digits: int = 12) -> str:
    """``x`` to ``digits`` significant digits, as the shortest text of that float."""
    return repr(float(f'{float(x):.{digits}g}'))


def spatial_loop_urdf(seed: int = 5) -> str:
    """A floating base with two arms (4 + 3 revolute joints) whose tips meet at ``q = 0``;
    ``seed`` draws the links' inertia tensors.

    Parameters
    ----------
    seed : int
        Seed of ``numpy.random.default_rng``.

    Returns
    -------
    str
        The URDF text.
    """
    rng = np.random.default_rng(seed)

    def link(name: str, m: float, com: Sequence[float]) -> str:
        return f'<link name="{name}">{_inertial(rng, m, com)}</link>'

    return (
        '<robot name="spatial_loop">'
        + link('base', 20.0, (0.05, -0.02, 0.1))
        + _rev('a1', 'base', 'la1', (0.3, 0.2, 0), '1 0 0')
        + link('la1', 1.0, (0, 0, 0.2))
        + _rev('a2', 'la1', 'la2', (0, 0, 0.4), '0 1 0')
        + link('la2', 1.2, (0.15, 0, 0))
        + _rev('a3', 'la2', 'la3', (0.3, 0, 0), '0 0 1')
        + link('la3', 0.8, (0.05, 0, 0))
        + _rev('a4', 'la3', 'la4', (0.1, 0, 0), '1 0 0')
        + link('la4', 0.5, (0.05, -0.1, 0))
        + _rev('b1', 'base', 'lb1', (0.3, -0.2, 0), '0 0 1')
        + link('lb1', 1.0, (0, 0, 0.2))
        + _rev('b2', 'lb1', 'lb2', (0, 0, 0.4), '1 0 0')
        + link('lb2', 1.1, (0.15, 0, 0))
        + _rev('b3', 'lb2', 'lb3', (0.3, 0, 0), '0 1 0')
        + link('lb3', 0.7, (0.1, 0.1, 0))
        + '</robot>'
    )


def spatial_loop_cut(kind: str) -> LoopClosure:
    """The spatial loop's cut hinge ``'tips'`` between ``la4`` and ``lb3``.

    Parameters
    ----------
    kind : str
        Hinge kind: ``'ball'``, ``'revolute'`` or ``'weld'``.

    Returns
    -------
    LoopClosure
        At :data:`TIP_A` on ``la4`` and :data:`TIP_B` on ``lb3`` (link frames).
    """
    return LoopClosure('tips', 'la4', 'lb3', kind, translation_a=TIP_A, translation_b=TIP_B)


def tumbling_fourbar(kind: str) -> tuple[ClosedChain, np.ndarray, np.ndarray]:
    """The floating four-bar closed by ``kind``, assembled and tumbling (base and joints at
    about 1 rad/s): a one-DoF mechanism (revolute and ball cuts; a ball cut leaves the
    out-of-plane row redundant) or a rigid body (weld, welded where the revolute-closed
    four-bar has the rocker).

    Parameters
    ----------
    kind : str
        Hinge kind: ``'ball'``, ``'revolute'`` or ``'weld'``.

    Returns
    -------
    chain : ClosedChain;  q : (10,);  v : (9,) on the constraint manifold.
    """
    model = load_urdf(fourbar_urdf(floating_ground=True), floating_base=True)
    q0 = neutral(model)
    q0[3:7] = np.array([0.1, -0.2, 0.3, 0.9]) / np.linalg.norm([0.1, -0.2, 0.3, 0.9])
    q0[7:] = [1.2, -0.9, -1.5]
    rotation_b = np.eye(3)
    if kind == 'weld':
        _, q0, _ = tumbling_fourbar('revolute')
        rotation_b = link_pose(model, q0, 'ground')[1].T @ link_pose(model, q0, 'rocker')[1]
    chain = ClosedChain(model, [fourbar_cut(kind, rotation_b)])
    v0 = np.random.default_rng(1).normal(size=model.nv)
    with warnings.catch_warnings():
        warnings.simplefilter('ignore', RedundantConstraintWarning)
        q, v = chain.assemble(q0, v0, locked=['j1'])
    return chain, q, v


def tumbling_spatial_loop(kind: str) -> tuple[ClosedChain, np.ndarray, np.ndarray]:
    """The spatial loop closed by ``kind`` (no gravity), assembled and tumbling.

    Parameters
    ----------
    kind : str
        Hinge kind: ``'ball'`` or ``'weld'`` (those of :data:`TUMBLING_LOOPS`).

    Returns
    -------
    chain : ClosedChain;  q : (14,);  v : (13,) on the constraint manifold.
    """
    model = load_urdf(spatial_loop_urdf(), floating_base=True)
    chain = ClosedChain(model, [spatial_loop_cut(kind)])
    q0 = neutral(model)
    q0[7:] = 0.1 * np.random.default_rng(2).normal(size=model.n)
    q, v = chain.assemble(q0, np.random.default_rng(3).normal(size=model.nv), move_base=True)
    return chain, q, v


#: Bent leg angles of the floating platform where the cut hinges are placed (assembled there).
PLATFORM_LEGS = {'a': (0.3, 0.4, -0.8), 'b': (-0.2, 0.5, -0.9), 'c': (0.25, -0.45, 0.7)}
#: Leg roots on the platform base (base frame) [m].
PLATFORM_ROOTS = {'a': (0.3, 0.3, 0.1), 'b': (0.3, -0.3, 0.1), 'c': (-0.35, 0.0, 0.1)}


def platform_urdf(seed: int = 7) -> str:
    """The floating platform (see the module docstring); ``seed`` draws the inertia tensors.
    Links: ``base``, ``{leg}1..3`` for legs a, b, c, ``platform``; joints ``{leg}j1..3``,
    ``pj``.

    Parameters
    ----------
    seed : int
        Seed of ``numpy.random.default_rng``.

    Returns
    -------
    str
        The URDF text.
    """
    rng = np.random.default_rng(seed)

    def link(name: str, m: float, com: Sequence[float]) -> str:
        return f'<link name="{name}">{_inertial(rng, m, com)}</link>'

    out = ['<robot name="floating_platform">', link('base', 20.0, (0.0, 0.02, 0.05))]
    for leg, root in PLATFORM_ROOTS.items():
        out += [
            _rev(f'{leg}j1', 'base', f'{leg}1', root, '1 0 0'),
            link(f'{leg}1', 1.0, (0, 0, 0.2)),
            _rev(f'{leg}j2', f'{leg}1', f'{leg}2', (0, 0, 0.4), '0 1 0'),
            link(f'{leg}2', 0.9, (0, 0, 0.2)),
            _rev(f'{leg}j3', f'{leg}2', f'{leg}3', (0, 0, 0.4), '1 0 0'),
            link(f'{leg}3', 0.5, (0, 0, 0.1)),
        ]
    out += [
        _rev('pj', 'a3', 'platform', (0, 0, 0.2), '0 0 1'),
        link('platform', 5.0, (-0.3, -0.1, 0.05)),
    ]
    return ''.join(out) + '</robot>'


def platform_chain(
    gravity: Sequence[float] = (0.0, 0.0, 0.0), **kwargs: object
) -> tuple[ClosedChain, np.ndarray]:
    """The floating platform closed by its two ball cut hinges (``'b_tip'``, ``'c_tip'``:
    leg tip ``(0, 0, 0.2)`` in ``b3`` / ``c3`` to the platform), and the configuration
    (base at the origin, legs at :data:`PLATFORM_LEGS`, platform joint 0) where they are
    closed. ``kwargs`` go to :class:`ClosedChain`.

    Parameters
    ----------
    gravity : (3,) sequence of float
        Gravitational acceleration, inertial frame [m/s^2].
    **kwargs
        Options of :class:`ClosedChain` (``alpha``, ``beta``, ``method``, ...).

    Returns
    -------
    chain : ClosedChain;  q0 : (nq,) assembled configuration.
    """
    model = load_urdf(platform_urdf(), floating_base=True, gravity=gravity)
    q0 = neutral(model)
    for leg, angles in PLATFORM_LEGS.items():
        for k, ang in enumerate(angles):
            q0[model.joint_q_slice(f'{leg}j{k + 1}')] = ang
    p_pl, R_pl = link_pose(model, q0, 'platform')
    tip = np.array([0.0, 0.0, 0.2])
    loops = []
    for leg in 'bc':
        p_t, R_t = link_pose(model, q0, f'{leg}3')
        loops.append(
            LoopClosure(
                f'{leg}_tip',
                f'{leg}3',
                'platform',
                'ball',
                translation_a=tip,
                # to 1e-12 m (closed to that at q0): the kinematics' last bits depend on
                # the CPU, and the sample file must be the same text everywhere
                translation_b=np.round(R_pl.T @ (p_t + R_t @ tip - p_pl), 12),
            )
        )
    return ClosedChain(model, loops, **kwargs), q0


def tumbling_platform(**kwargs: object) -> tuple[ClosedChain, np.ndarray, np.ndarray]:
    """The floating platform (:func:`platform_chain`, no gravity), moved off its placement
    configuration, assembled and tumbling (base and joints at about 1 rad/s).

    Parameters
    ----------
    **kwargs
        Options of :func:`platform_chain` (and so of :class:`ClosedChain`).

    Returns
    -------
    chain : ClosedChain;  q : (nq,);  v : (nv,) on the constraint manifold.
    """
    chain, q0 = platform_chain(**kwargs)
    model = chain.model
    rng = np.random.default_rng(4)
    quat = rng.normal(size=4)
    q0[3:7] = quat / np.linalg.norm(quat)
    q0[7:] += 0.05 * rng.normal(size=model.n)
    q, v = chain.assemble(q0, rng.normal(size=model.nv), move_base=True)
    return chain, q, v


#: Link shapes of :func:`platform_urdf_plus` (visuals only): name -> (URDF geometry, origin).
_PLATFORM_VISUALS = {
    'base': ('<box size="0.9 0.8 0.2"/>', '0 0 0'),
    'platform': ('<box size="0.8 0.5 0.05"/>', '-0.3 -0.1 0.05'),
    **{
        f'{leg}{k}': ('<cylinder radius="0.025" length="0.4"/>', '0 0 0.2')
        for leg in 'abc'
        for k in (1, 2)
    },
    **{f'{leg}3': ('<cylinder radius="0.02" length="0.2"/>', '0 0 0.1') for leg in 'abc'},
}


def platform_urdf_plus() -> str:
    """The floating platform (:func:`platform_urdf`, with visuals) as a URDF+ file: its two
    ball cut hinges as ``<loop type="spherical">`` elements (``b_tip``, ``c_tip``: the frames
    of :func:`platform_chain`), read back by
    :func:`~.urdf_loops.loop_closures_from_urdf`. The sample robot ``floating_platform``
    (``urdf/floating_platform.urdf``) is this text.

    Returns
    -------
    str
    """
    import xml.etree.ElementTree as ET

    root = ET.fromstring(platform_urdf())
    for link in root.findall('link'):
        shape, xyz = _PLATFORM_VISUALS[link.get('name')]
        visual = ET.SubElement(link, 'visual')
        ET.SubElement(visual, 'origin', xyz=xyz, rpy='0 0 0')
        ET.SubElement(visual, 'geometry').append(ET.fromstring(shape))
    chain, _ = platform_chain()
    for lp in chain.loops:
        loop = ET.SubElement(root, 'loop', name=lp.name, type='spherical')
        for tag, link, xyz in (
            ('predecessor', lp.link_a, lp.translation_a),
            ('successor', lp.link_b, lp.translation_b),
        ):
            side = ET.SubElement(loop, tag, link=link)
            ET.SubElement(side, 'origin', xyz=' '.join(repr(float(x)) for x in xyz), rpy='0 0 0')
    ET.indent(root, space='  ')
    header = (
        '<?xml version="1.0"?>\n<!--\n  floating_platform: a 20 kg floating base with three '
        'legs (3 revolute joints each)\n  and a 5 kg platform on the tip of leg a, held by the '
        'tips of legs b and c through\n  two ball joints that close two loops: URDF+ <loop> '
        'elements (arXiv:2411.19753),\n  ignored by URDF-only tools. Generated by\n  '
        'ffsim_ros.dynamics.mufti.samples.platform_urdf_plus() - edit that, not this file.\n'
        '  Assembled at the joint positions of PLATFORM_LEGS, platform joint pj = 0.\n-->\n'
    )
    return header + ET.tostring(root, encoding='unicode') + '\n'


#: The tumbling loops by name: ``TUMBLING_LOOPS[name]() -> (chain, q, v)``.
TUMBLING_LOOPS = {
    'planar-revolute': lambda: tumbling_fourbar('revolute'),
    'planar-ball': lambda: tumbling_fourbar('ball'),
    'planar-weld': lambda: tumbling_fourbar('weld'),
    'spatial-ball': lambda: tumbling_spatial_loop('ball'),
    'spatial-weld': lambda: tumbling_spatial_loop('weld'),
}
