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
``name`` (as URDF+ exporters write it), one of the two; ``origin`` is the loop joint frame in
that link's frame (default: the link frame). Types, as cut hinges of seed 001
(:class:`~.closed.LoopClosure`): ``spherical`` (or ``ball``): the two frame origins coincide;
``revolute`` (or ``continuous``): they coincide and the frames turn about the ``<axis xyz>``
of the loop joint frame only (default ``1 0 0`` as URDF's joints); ``fixed``: the frames
coincide (a weld). Prismatic, planar and floating loop joints are refused by name.

A typo must not close a different loop: any other attribute or child element (``<orgin>``,
``xzy=``, an ``<axis>`` on a loop that is not revolute), an element given twice and a link
the URDF does not have are refused, naming the loop, the element and what was expected.
"""

from __future__ import annotations

import os
import xml.etree.ElementTree as ET

import numpy as np

from ..lie import perpendicular_basis
from ..model import UnknownNameError
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


#: Per element of a loop: its attributes and child elements (an ``<axis>`` only on a
#: revolute loop, checked apart).
_SCHEMA: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    'loop': (('name', 'type'), ('predecessor', 'successor', 'axis')),
    'predecessor': (('link', 'name'), ('origin',)),
    'successor': (('link', 'name'), ('origin',)),
    'origin': (('xyz', 'rpy'), ()),
    'axis': (('xyz',), ()),
}


def _check_attributes(elem: ET.Element, where: str, path: str) -> None:
    """Refuse an attribute of ``elem`` (``path`` in messages) that :data:`_SCHEMA` does not
    list."""
    attributes = _SCHEMA[elem.tag][0]
    unknown = sorted(set(elem.attrib) - set(attributes))
    if unknown:
        raise ValueError(
            f'{where}: {path} unknown attributes {unknown}; expected some of {sorted(attributes)}'
        )


def _check_element(elem: ET.Element, where: str, path: str) -> None:
    """Refuse an attribute or a child element of ``elem`` (``path`` in messages) that
    :data:`_SCHEMA` does not list, and a child element given twice; recursively."""
    _check_attributes(elem, where, path)
    allowed = _SCHEMA[elem.tag][1]
    tags = [child.tag for child in elem]
    for tag in tags:
        if tag not in allowed:
            expected = ', '.join(f'<{t}>' for t in allowed) or 'none'
            raise ValueError(f'{where}: {path} unknown child element <{tag}>; expected {expected}')
        if tags.count(tag) > 1:
            raise ValueError(f'{where}: expected one <{tag}>, got {tags.count(tag)} (in {path})')
    for child in elem:
        _check_element(child, where, f'{path}<{child.tag}>')


def _side(
    loop: ET.Element, tag: str, where: str, links: list[str]
) -> tuple[str, np.ndarray, np.ndarray]:
    """(link, rotation (3, 3), translation (3,)) of the ``predecessor`` or ``successor``;
    ``links``: the URDF's link names."""
    elem = loop.find(tag)
    if elem is None:
        raise ValueError(f'{where}: expected one <{tag}>, got 0')
    if 'link' in elem.attrib and 'name' in elem.attrib:
        raise ValueError(
            f'{where}: <{tag}> expected one of link="..." or name="...", got both '
            f'({elem.get("link")!r}, {elem.get("name")!r})'
        )
    link = elem.get('link') or elem.get('name')
    if not link:
        raise ValueError(f'{where}: <{tag}> expected a link="..." attribute, got none')
    if link not in links:
        raise UnknownNameError(f'{where}: <{tag}> unknown link {link!r}; the URDF has {links}')
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
        unsupported type, a missing or repeated predecessor/successor, an unknown attribute
        or child element (an ``<axis>`` on a loop that is not revolute), a link given both
        as ``link`` and ``name``, a link the URDF does not have (an
        :class:`~ffsim_ros.dynamics.model.UnknownNameError`), a malformed origin, or a zero
        axis; the message names the loop.
    """
    root = read_urdf_xml(source)
    links = [link.get('name', '') for link in root.findall('link')]
    loops: list[LoopClosure] = []
    for k, elem in enumerate(root.findall('loop')):
        name = elem.get('name')
        where = f'loop {name!r}' if name else f'<loop> number {k + 1}'
        _check_attributes(elem, where, '<loop>')
        if not name:
            raise ValueError(f'{where}: expected a name="..." attribute, got none')
        if any(lp.name == name for lp in loops):
            raise ValueError(f'{where}: defined twice')
        kind = elem.get('type')
        if kind not in LOOP_TYPES:
            raise ValueError(f'{where}: type expected one of {sorted(LOOP_TYPES)}, got {kind!r}')
        _check_element(elem, where, '<loop>')
        hinge = LOOP_TYPES[kind]
        if hinge != 'revolute' and elem.find('axis') is not None:
            raise ValueError(
                f'{where}: <axis> expected only on a revolute or continuous loop, got type '
                f'{kind!r}'
            )
        link_a, rot_a, tr_a = _side(elem, 'predecessor', where, links)
        link_b, rot_b, tr_b = _side(elem, 'successor', where, links)
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
