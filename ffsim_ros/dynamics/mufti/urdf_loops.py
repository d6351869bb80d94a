"""Loop closures read from a URDF: the ``<loop>`` elements of URDF+ (no ROS).

URDF describes a tree. URDF+ (Chignoli, Adrian, Kim, Wensing, "URDF+: An Enhanced URDF for
Robots with Kinematic Loops", 2024, arXiv:2411.19753) keeps the tree as it is and adds, at
the top level of ``<robot>``, one ``<loop>`` element per joint that closes a loop: the loop
joint's frame given once in each of the two links it joins. Parsers that do not know the
element ignore it (urdfdom, so robot_state_publisher and RViz show the tree; Pinocchio's
URDF reader), so one file serves both.

.. code-block:: xml

    <loop name="b_tip" type="spherical">
      <predecessor link="b3"><origin xyz="0 0 0.2" rpy="0 0 0"/></predecessor>
      <successor link="platform"><origin xyz="-0.3 0.1 0" rpy="0 0 0"/></successor>
    </loop>

``predecessor`` / ``successor`` name their link with ``link`` (as URDF's ``<parent>``) or
``name`` (as URDF+ exporters write it); ``origin`` is the loop joint frame in that link's
frame (default: the link frame). Types, as cut hinges of seed 001 (:class:`~.closed.
LoopClosure`): ``spherical`` (or ``ball``): the two frame origins coincide; ``revolute`` (or
``continuous``): they coincide and the frames turn about the ``<axis xyz>`` of the loop joint
frame only (default ``1 0 0`` as URDF's joints); ``fixed``: the frames coincide (a weld).
Prismatic, planar and floating loop joints are refused by name.
"""

from __future__ import annotations

import os
import xml.etree.ElementTree as ET

import numpy as np

from ..lie import perpendicular_basis
from ..urdf import parse_floats, parse_origin, read_urdf_xml
from .closed import LoopClosure

#: URDF+ loop joint types and the cut hinge each becomes.
LOOP_TYPES = {
    'spherical': 'ball',
    'ball': 'ball',
    'revolute': 'revolute',
    'continuous': 'revolute',
    'fixed': 'weld',
}


def _side(loop: ET.Element, tag: str, where: str) -> tuple[str, np.ndarray, np.ndarray]:
    """(link, rotation (3, 3), translation (3,)) of the ``predecessor`` or ``successor``."""
    found = loop.findall(tag)
    if len(found) != 1:
        raise ValueError(f'{where}: expected one <{tag}>, got {len(found)}')
    elem = found[0]
    link = elem.get('link') or elem.get('name')
    if not link:
        raise ValueError(f'{where}: <{tag}> expected a link="..." attribute, got none')
    rotation, translation = parse_origin(elem.find('origin'), f'{where} {tag}')
    return link, rotation, translation


def loop_closures_from_urdf(source: str | os.PathLike[str]) -> tuple[LoopClosure, ...]:
    """The cut hinges of the URDF+ ``<loop>`` elements of a URDF (module docstring).

    Parameters
    ----------
    source : str or path-like
        The URDF XML or a path to it.

    Returns
    -------
    tuple of LoopClosure
        In document order; empty for a plain URDF (a tree). A revolute loop's hinge frames
        are the loop joint frame turned so that their z axis is the joint axis (the cut
        hinge's convention).

    Raises
    ------
    ValueError
        Malformed XML, a loop without a name or with a name used twice, an unknown or
        unsupported type, a missing or repeated predecessor/successor, a malformed origin,
        or a zero axis; the message names the loop. (Whether the links exist is checked by
        :class:`~.closed.ClosedChain` against the model.)
    """
    root = read_urdf_xml(source)
    loops: list[LoopClosure] = []
    for k, elem in enumerate(root.findall('loop')):
        name = elem.get('name')
        if not name:
            raise ValueError(f'<loop> number {k + 1}: expected a name="..." attribute, got none')
        where = f'loop {name!r}'
        if any(lp.name == name for lp in loops):
            raise ValueError(f'{where}: defined twice')
        kind = elem.get('type')
        if kind not in LOOP_TYPES:
            raise ValueError(f'{where}: type expected one of {sorted(LOOP_TYPES)}, got {kind!r}')
        link_a, rot_a, tr_a = _side(elem, 'predecessor', where)
        link_b, rot_b, tr_b = _side(elem, 'successor', where)
        hinge = LOOP_TYPES[kind]
        if hinge == 'revolute':
            axis_elem = elem.find('axis')
            text = None if axis_elem is None else axis_elem.get('xyz')
            axis = parse_floats(text, 3, (1.0, 0.0, 0.0), where + ' axis')
            if np.linalg.norm(axis) < 1e-12:
                raise ValueError(f'{where}: axis expected a non-zero vector, got {axis.tolist()}')
            z = axis / np.linalg.norm(axis)
            x, y = perpendicular_basis(z)
            align = np.column_stack((x[0], y[0], z))  # z onto the joint axis
            rot_a, rot_b = rot_a @ align, rot_b @ align
        loops.append(
            LoopClosure(
                name,
                link_a,
                link_b,
                hinge,
                rotation_a=rot_a,
                translation_a=tr_a,
                rotation_b=rot_b,
                translation_b=tr_b,
            )
        )
    return tuple(loops)


__all__ = ['LOOP_TYPES', 'loop_closures_from_urdf']
