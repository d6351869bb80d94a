#!/usr/bin/env python3
"""Generate and check the sample free-floating robots in ``urdf/``.

Usage::

    python3 tools/gen_sample_urdfs.py            # (re)write urdf/*.urdf and run all checks
    python3 tools/gen_sample_urdfs.py --check    # only check the committed files

Every link is described as a set of solid primitives (box, solid cylinder, thin/thick
walled tube).  Mass properties are computed from the shapes: each primitive's inertia
about its own centroid, rotated into the link frame and shifted to the composite CoM with
the parallel-axis theorem.  The generated numbers are what the URDFs contain -- nothing is
hand-typed except the geometry and masses below.

Checks (run after generation, or alone with ``--check``):
  * every file parses with ``xml.etree.ElementTree`` and its kinematic tree has one root;
  * every inertia tensor is symmetric positive definite and satisfies the triangle
    inequality (I_a + I_b >= I_c on its principal moments);
  * for the serial arms: reach, total mass, base/arm mass ratio, Jacobian conditioning at
    the home pose, and the base attitude change caused by a 0.3 m end-effector move with a
    plain (fixed-base Jacobian, non-reactionless) controller under zero total momentum;
  * if ``pinocchio`` is importable, each URDF is loaded with a free-flyer root joint and
    the joint-space mass matrix at a random q is checked to be positive definite, and the
    total mass / base-rotation numbers are cross-checked against the numpy ones.

Only numpy is required.
"""

from __future__ import annotations

import argparse
import math
import sys
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

URDF_DIR = Path(__file__).resolve().parent.parent / 'urdf'
PI = math.pi


# --------------------------------------------------------------------------------------
# Rigid-body helpers
# --------------------------------------------------------------------------------------
def rot_rpy(rpy) -> np.ndarray:
    """URDF fixed-axis roll-pitch-yaw: R = Rz(yaw) @ Ry(pitch) @ Rx(roll)."""
    r, p, y = rpy
    cr, sr, cp, sp, cy, sy = (
        math.cos(r),
        math.sin(r),
        math.cos(p),
        math.sin(p),
        math.cos(y),
        math.sin(y),
    )
    rx = np.array([[1, 0, 0], [0, cr, -sr], [0, sr, cr]])
    ry = np.array([[cp, 0, sp], [0, 1, 0], [-sp, 0, cp]])
    rz = np.array([[cy, -sy, 0], [sy, cy, 0], [0, 0, 1]])
    return rz @ ry @ rx


def rot_axis(axis, angle) -> np.ndarray:
    a = np.asarray(axis, float)
    a = a / np.linalg.norm(a)
    k = np.array([[0, -a[2], a[1]], [a[2], 0, -a[0]], [-a[1], a[0], 0]])
    return np.eye(3) + math.sin(angle) * k + (1 - math.cos(angle)) * (k @ k)


# URDF cylinders are along their local z axis; rpy that puts that axis along x / y / z.
AXIS_RPY = {'x': (0.0, PI / 2, 0.0), 'y': (PI / 2, 0.0, 0.0), 'z': (0.0, 0.0, 0.0)}


@dataclass
class Prim:
    """A solid primitive of a link, posed in the link frame.

    kind: 'box' (size = (sx, sy, sz)), 'cyl' (size = (radius, length)),
          'tube' (size = (outer radius, inner radius, length)).
    axis: for cyl/tube, the link-frame axis the cylinder runs along ('x', 'y' or 'z').
    """

    kind: str
    size: tuple
    mass: float
    xyz: tuple = (0.0, 0.0, 0.0)
    axis: str = 'z'
    material: str = 'grey'

    def inertia_local(self) -> np.ndarray:
        """Inertia about the primitive centroid in the primitive's shape frame."""
        m = self.mass
        if self.kind == 'box':
            a, b, c = self.size
            return np.diag(
                [m * (b * b + c * c) / 12, m * (a * a + c * c) / 12, m * (a * a + b * b) / 12]
            )
        if self.kind == 'cyl':
            r, h = self.size
            ir = m * (3 * r * r + h * h) / 12
            return np.diag([ir, ir, m * r * r / 2])
        if self.kind == 'tube':
            ro, ri, h = self.size
            ir = m * (3 * (ro * ro + ri * ri) + h * h) / 12
            return np.diag([ir, ir, m * (ro * ro + ri * ri) / 2])
        raise ValueError(self.kind)

    def rpy(self):
        return (0.0, 0.0, 0.0) if self.kind == 'box' else AXIS_RPY[self.axis]


def composite(prims: list[Prim]):
    """Mass, CoM and inertia about the CoM (link-frame axes) of a set of primitives."""
    m = sum(p.mass for p in prims)
    com = sum(p.mass * np.asarray(p.xyz, float) for p in prims) / m
    inertia = np.zeros((3, 3))
    for p in prims:
        r = rot_rpy(p.rpy())
        d = np.asarray(p.xyz, float) - com
        # rotate to link axes, then parallel-axis shift to the composite CoM
        inertia += r @ p.inertia_local() @ r.T + p.mass * (d @ d * np.eye(3) - np.outer(d, d))
    return m, com, inertia


# --------------------------------------------------------------------------------------
# Robot description model -> URDF
# --------------------------------------------------------------------------------------
@dataclass
class Link:
    name: str
    prims: list[Prim] = field(default_factory=list)  # empty -> massless frame, no <inertial>
    comment: str = ''


@dataclass
class Joint:
    name: str
    jtype: str  # 'revolute' or 'fixed'
    parent: str
    child: str
    xyz: tuple = (0.0, 0.0, 0.0)
    rpy: tuple = (0.0, 0.0, 0.0)
    axis: tuple = (0.0, 0.0, 1.0)
    lower: float = 0.0
    upper: float = 0.0
    effort: float = 0.0
    velocity: float = 0.0
    damping: float = 0.0
    friction: float = 0.0
    comment: str = ''


MATERIALS = {
    'bus_gold': (0.85, 0.65, 0.13, 1.0),  # MLI blanket
    'white': (0.92, 0.92, 0.92, 1.0),
    'grey': (0.55, 0.57, 0.60, 1.0),
    'dark': (0.20, 0.20, 0.22, 1.0),
    'solar_blue': (0.10, 0.18, 0.45, 1.0),
    'orange': (0.95, 0.45, 0.10, 1.0),
    'red': (0.80, 0.10, 0.10, 1.0),
    'green': (0.10, 0.70, 0.20, 1.0),
}


def fmt(x: float) -> str:
    if abs(x) < 1e-12:  # round-off from rotated primitives -> exact zero
        return '0'
    s = f'{x:.12g}'
    return '0' if s in ('-0', '0') else s


def fvec(v) -> str:
    return ' '.join(fmt(float(x)) for x in v)


def urdf_xml(robot: str, header: str, links: list[Link], joints: list[Joint]) -> str:
    used = sorted({p.material for lk in links for p in lk.prims})
    out = [
        '<?xml version="1.0"?>',
        '<!--',
        header.strip('\n'),
        '  Generated by tools/gen_sample_urdfs.py - edit the script, not this file.',
        '-->',
        f'<robot name="{robot}">',
    ]
    for mname in used:
        out.append(
            f'  <material name="{mname}"><color rgba="{fvec(MATERIALS[mname])}"/></material>'
        )
    for lk in links:
        out.append('')
        if lk.comment:
            out.append(f'  <!-- {lk.comment} -->')
        if not lk.prims:
            out.append(f'  <link name="{lk.name}"/>')
            continue
        out.append(f'  <link name="{lk.name}">')
        m, com, inertia = composite(lk.prims)
        out += [
            '    <inertial>',
            f'      <origin xyz="{fvec(com)}" rpy="0 0 0"/>',
            f'      <mass value="{fmt(m)}"/>',
            '      <inertia ixx="{}" ixy="{}" ixz="{}" iyy="{}" iyz="{}" izz="{}"/>'.format(
                *(fmt(inertia[i, j]) for i, j in ((0, 0), (0, 1), (0, 2), (1, 1), (1, 2), (2, 2)))
            ),
            '    </inertial>',
        ]
        for p in lk.prims:
            if p.kind == 'box':
                geom = f'<box size="{fvec(p.size)}"/>'
            else:
                geom = f'<cylinder radius="{fmt(p.size[0])}" length="{fmt(p.size[-1])}"/>'
            block = [
                f'      <origin xyz="{fvec(p.xyz)}" rpy="{fvec(p.rpy())}"/>',
                f'      <geometry>{geom}</geometry>',
            ]
            out += [
                '    <visual>',
                *block,
                f'      <material name="{p.material}"/>',
                '    </visual>',
            ]
            out += ['    <collision>', *block, '    </collision>']
        out.append('  </link>')
    for j in joints:
        out.append('')
        if j.comment:
            out.append(f'  <!-- {j.comment} -->')
        out.append(f'  <joint name="{j.name}" type="{j.jtype}">')
        out.append(f'    <parent link="{j.parent}"/>')
        out.append(f'    <child link="{j.child}"/>')
        out.append(f'    <origin xyz="{fvec(j.xyz)}" rpy="{fvec(j.rpy)}"/>')
        if j.jtype != 'fixed':
            out.append(f'    <axis xyz="{fvec(j.axis)}"/>')
            out.append(
                f'    <limit lower="{fmt(j.lower)}" upper="{fmt(j.upper)}" '
                f'effort="{fmt(j.effort)}" velocity="{fmt(j.velocity)}"/>'
            )
            out.append(f'    <dynamics damping="{fmt(j.damping)}" friction="{fmt(j.friction)}"/>')
        out.append('  </joint>')
    out += ['', '</robot>', '']
    return '\n'.join(out)


# --------------------------------------------------------------------------------------
# Robot definitions
# --------------------------------------------------------------------------------------
def bus_link(size, mass, name='base_link') -> Link:
    return Link(
        name,
        [Prim('box', size, mass, material='bus_gold')],
        f'Spacecraft bus: uniform box {fvec(size)} m, {fmt(mass)} kg (REP 103: x forward, z up).',
    )


def solar_wing(prefix: str, side: float) -> tuple[Link, Joint]:
    """One deployed solar wing on the +/-y face: yoke boom + 1.2 x 3.0 m panel, 36 kg."""
    s = side
    link = Link(
        f'{prefix}solar_array',
        [
            Prim('tube', (0.03, 0.026, 0.6), 4.0, (0.0, s * 0.30, 0.0), 'y', 'grey'),  # yoke
            Prim(
                'box', (1.2, 3.0, 0.03), 32.0, (0.0, s * (0.6 + 1.5), 0.0), material='solar_blue'
            ),
        ],
        'Deployed solar wing (yoke + panel), fixed to the bus: exercises fixed-child merging into the base.',
    )
    joint = Joint(
        f'{prefix}solar_array_joint', 'fixed', 'base_link', link.name, xyz=(0.0, s * 0.8, 0.0)
    )
    return link, joint


def antenna(xyz) -> tuple[Link, Joint]:
    link = Link(
        'hga_antenna',
        [
            Prim('cyl', (0.04, 0.4), 3.0, (0.0, 0.0, 0.2), 'z', 'grey'),  # mast
            Prim('cyl', (0.45, 0.05), 9.0, (0.0, 0.0, 0.425), 'z', 'white'),  # dish (as a disc)
        ],
        'High-gain antenna (mast + 0.9 m dish, 12 kg) on the top deck, fixed: second fixed child of the base.',
    )
    return link, Joint('hga_antenna_joint', 'fixed', 'base_link', link.name, xyz=xyz)


# Geometry / mass budget of the 7-DoF S-R-S arm (iiwa-like axis pattern R-P-R-P-R-P-R),
# scaled to an ETS-VII / ERA class manipulator.  Link frames sit on the joint axis; every
# link extends along its local +x.  The built-in joint-origin pitches (shoulder -45 deg,
# elbow +90 deg, wrist -45 deg) make q = 0 a bent, well-conditioned pose in front of the bus.
def arm_7dof(prefix: str, parent: str, mount_xyz, boom: float = 0.9, boom_mass=(19.0, 14.0)):
    """Return (links, joints, tip) for one 7-DoF arm.  `prefix` e.g. 'arm_' or 'left_arm_'."""
    p = prefix
    L1, L2, L4, L6, L7 = 0.25, 0.20, 0.20, 0.15, 0.30
    links = [
        Link(
            f'{p}mount',
            [Prim('cyl', (0.16, 0.10), 5.0, (0.05, 0.0, 0.0), 'x', 'dark')],
            'Arm base adapter / mounting ring (light, 5 kg) on the bus face, fixed joint.',
        ),
        Link(
            f'{p}link_1',
            [Prim('cyl', (0.10, L1), 15.0, (L1 / 2, 0, 0), 'x', 'white')],
            'Shoulder roll housing.',
        ),
        Link(
            f'{p}link_2',
            [
                Prim('cyl', (0.10, 0.22), 8.0, (0, 0, 0), 'y', 'orange'),  # pitch drive
                Prim('cyl', (0.08, L2), 4.0, (L2 / 2, 0, 0), 'x', 'white'),
            ],
            'Shoulder pitch drive + offset.',
        ),
        Link(
            f'{p}link_3',
            [
                Prim('cyl', (0.09, 0.16), 6.0, (0.08, 0, 0), 'x', 'white'),  # roll drive
                Prim(
                    'tube',
                    (0.07, 0.06, boom - 0.16),
                    boom_mass[0],
                    (0.16 + (boom - 0.16) / 2, 0, 0),
                    'x',
                    'grey',
                ),
            ],
            'Upper-arm boom (CFRP tube) with shoulder roll drive.',
        ),
        Link(
            f'{p}link_4',
            [
                Prim('cyl', (0.09, 0.20), 8.0, (0, 0, 0), 'y', 'orange'),
                Prim('cyl', (0.07, L4), 4.0, (L4 / 2, 0, 0), 'x', 'white'),
            ],
            'Elbow pitch drive + offset.',
        ),
        Link(
            f'{p}link_5',
            [
                Prim('cyl', (0.08, 0.14), 5.0, (0.07, 0, 0), 'x', 'white'),
                Prim(
                    'tube',
                    (0.06, 0.052, boom - 0.14),
                    boom_mass[1],
                    (0.14 + (boom - 0.14) / 2, 0, 0),
                    'x',
                    'grey',
                ),
            ],
            'Forearm boom with elbow roll drive.',
        ),
        Link(
            f'{p}link_6',
            [
                Prim('cyl', (0.07, 0.16), 6.0, (0, 0, 0), 'y', 'orange'),
                Prim('cyl', (0.06, L6), 2.0, (L6 / 2, 0, 0), 'x', 'white'),
            ],
            'Wrist pitch drive.',
        ),
        Link(
            f'{p}link_7',
            [
                Prim('cyl', (0.07, 0.12), 4.0, (0.06, 0, 0), 'x', 'white'),
                Prim(
                    'box',
                    (L7 - 0.12, 0.14, 0.14),
                    4.0,
                    (0.12 + (L7 - 0.12) / 2, 0, 0),
                    material='dark',
                ),
            ],
            'Wrist roll drive + tool / end effector (grapple fixture interface).',
        ),
        Link(
            f'{p.removesuffix("arm_")}ee_link',
            [],
            'Massless tool-centre-point frame (x = approach direction).',
        ),
    ]
    tip = links[-1].name
    shoulder = {'effort': 300.0, 'velocity': 0.2, 'damping': 2.0, 'friction': 1.0}
    elbow = {'effort': 200.0, 'velocity': 0.3, 'damping': 1.0, 'friction': 0.5}
    wrist = {'effort': 80.0, 'velocity': 0.5, 'damping': 0.5, 'friction': 0.2}
    roll = {'lower': -3.05, 'upper': 3.05}  # +-175 deg
    pitch = {'lower': -2.0, 'upper': 2.0}  # +-115 deg about the (bent) zero
    j = p + 'joint_'
    joints = [
        Joint(
            f'{p}mount_joint',
            'fixed',
            parent,
            f'{p}mount',
            xyz=mount_xyz,
            comment='Arm mounting interface on the bus face (fixed).',
        ),
        Joint(
            f'{j}1',
            'revolute',
            f'{p}mount',
            f'{p}link_1',
            xyz=(0.10, 0, 0),
            axis=(1, 0, 0),
            **roll,
            **shoulder,
            comment='Shoulder roll, axis = outward face normal (+x).',
        ),
        Joint(
            f'{j}2',
            'revolute',
            f'{p}link_1',
            f'{p}link_2',
            xyz=(L1, 0, 0),
            rpy=(0, -PI / 4, 0),
            axis=(0, 1, 0),
            **pitch,
            **shoulder,
            comment='Shoulder pitch; origin pitched -45 deg so the upper arm points up-forward at q=0.',
        ),
        Joint(
            f'{j}3',
            'revolute',
            f'{p}link_2',
            f'{p}link_3',
            xyz=(L2, 0, 0),
            axis=(1, 0, 0),
            **roll,
            **shoulder,
            comment='Upper-arm roll (shoulder is spherical: axes 1-2-3 intersect).',
        ),
        Joint(
            f'{j}4',
            'revolute',
            f'{p}link_3',
            f'{p}link_4',
            xyz=(boom, 0, 0),
            rpy=(0, PI / 2, 0),
            axis=(0, 1, 0),
            **pitch,
            **elbow,
            comment='Elbow pitch; origin pitched +90 deg so the elbow is bent 90 deg at q=0 '
            '(q4 = -pi/2 straightens the arm).',
        ),
        Joint(
            f'{j}5',
            'revolute',
            f'{p}link_4',
            f'{p}link_5',
            xyz=(L4, 0, 0),
            axis=(1, 0, 0),
            **roll,
            **elbow,
            comment='Forearm roll.',
        ),
        Joint(
            f'{j}6',
            'revolute',
            f'{p}link_5',
            f'{p}link_6',
            xyz=(boom, 0, 0),
            rpy=(0, -PI / 4, 0),
            axis=(0, 1, 0),
            **pitch,
            **wrist,
            comment='Wrist pitch; origin pitched -45 deg so the tool points along bus +x at q=0.',
        ),
        Joint(
            f'{j}7',
            'revolute',
            f'{p}link_6',
            f'{p}link_7',
            xyz=(L6, 0, 0),
            axis=(1, 0, 0),
            **roll,
            **wrist,
            comment='Wrist roll (wrist is spherical: axes 5-6-7 intersect).',
        ),
        # The TCP sits TCP_OFFSET off the wrist-roll axis. On the axis, joint 7 would only
        # spin an axisymmetric tool: 7 - 1 joints - 3 reactionless constraints = 3 = the
        # position task, so reactionless position control would have no redundancy left and
        # stalls at reactionless singularities (5 of 10 0.3 m goals did). Off the axis the
        # wrist roll moves the TCP and the reactionless subspace keeps one spare DoF.
        Joint(
            f'{p.removesuffix("arm_")}ee_joint',
            'fixed',
            f'{p}link_7',
            tip,
            xyz=(L7, 0, TCP_OFFSET),
            comment=f'Tool-centre-point frame, {TCP_OFFSET} m off the wrist-roll axis '
            '(see urdf/README.md: reactionless redundancy).',
        ),
    ]
    return links, joints, tip


TCP_OFFSET = 0.2  # m, tool-centre point off the wrist-roll axis


def servicer_7dof():
    bus = bus_link((1.8, 1.6, 1.6), 600.0)
    wing, wing_j = solar_wing('', -1.0)
    hga, hga_j = antenna((-0.4, 0.3, 0.8))
    arm_links, arm_joints, _ = arm_7dof('arm_', 'base_link', (0.9, 0.0, 0.35))
    # arm_mount / arm_mount_joint naming
    header = """
  ffsim_servicer_7dof: default ffsim robot.  Free-floating servicing spacecraft
  (600 kg, 1.8 x 1.6 x 1.6 m bus + 36 kg solar wing on -y + 12 kg antenna on +z)
  with a 7-DoF S-R-S (iiwa-like R-P-R-P-R-P-R) arm, 99 kg, 2.9 m reach from
  arm_joint_1 to ee_link, mounted on the +x face through the fixed arm_mount link.
  Home configuration: q = 0 (all seven zero) - elbow bent 90 deg, tool along +x,
  well conditioned.  q4 = -pi/2 gives the fully stretched (singular) arm.
  End-effector frame: ee_link.  See urdf/README.md."""
    return (
        'ffsim_servicer_7dof',
        header,
        [bus, wing, hga, *arm_links],
        [wing_j, hga_j, *arm_joints],
    )


def planar_2link():
    links = [
        Link(
            'base_link',
            [Prim('box', (1.0, 1.0, 0.2), 10.0, material='bus_gold')],
            'Base: uniform box 1 x 1 x 0.2 m, 10 kg, CoM at the origin.',
        ),
        Link(
            'link_1',
            [Prim('box', (1.0, 0.05, 0.05), 2.0, (0.5, 0, 0), material='white')],
            'Link 1: uniform bar 1.0 x 0.05 x 0.05 m, 2 kg, CoM at its midpoint.',
        ),
        Link(
            'link_2',
            [Prim('box', (0.8, 0.05, 0.05), 1.0, (0.4, 0, 0), material='grey')],
            'Link 2: uniform bar 0.8 x 0.05 x 0.05 m, 1 kg, CoM at its midpoint.',
        ),
        Link('ee_link', [], 'Massless tip frame at the end of link 2.'),
    ]
    lim = {
        'lower': -PI,
        'upper': PI,
        'effort': 50.0,
        'velocity': 1.0,
        'damping': 0.0,
        'friction': 0.0,
    }
    joints = [
        Joint(
            'joint_1',
            'revolute',
            'base_link',
            'link_1',
            xyz=(0.5, 0, 0),
            axis=(0, 0, 1),
            **lim,
            comment='At the centre of the base +x face; damping/friction 0 so the analytic model is exact.',
        ),
        Joint('joint_2', 'revolute', 'link_1', 'link_2', xyz=(1.0, 0, 0), axis=(0, 0, 1), **lim),
        Joint('ee_joint', 'fixed', 'link_2', 'ee_link', xyz=(0.8, 0, 0)),
    ]
    header = """
  planar_2link: hand-derivable planar 2-link arm on a free-floating base.
  Base 10 kg box 1 x 1 x 0.2 m; link_1 2 kg, 1.0 m; link_2 1 kg, 0.8 m (uniform bars,
  CoM at midpoints); both joints revolute about z, arm in the x-y plane.
  joint_1 at (0.5, 0, 0) in base_link.  Home configuration q = (0, pi/2)
  (q = 0 is the stretched, singular arm).  End-effector frame: ee_link."""
    return 'planar_2link', header, links, joints


def dual_arm_servicer():
    bus = bus_link((1.8, 1.8, 1.6), 750.0)
    wl, wlj = solar_wing('left_', 1.0)
    wr, wrj = solar_wing('right_', -1.0)
    la, laj, _ = arm_7dof(
        'left_arm_', 'base_link', (0.9, 0.5, 0.3), boom=0.75, boom_mass=(16.0, 12.0)
    )
    ra, raj, _ = arm_7dof(
        'right_arm_', 'base_link', (0.9, -0.5, 0.3), boom=0.75, boom_mass=(16.0, 12.0)
    )
    header = """
  dual_arm_servicer: free-floating servicer with two 7-DoF S-R-S arms.
  Bus 750 kg, 1.8 x 1.8 x 1.6 m, two 36 kg solar wings (+y / -y); arms (94 kg,
  2.6 m reach each) on the +x face at y = +0.5 m (left) and y = -0.5 m (right).
  Home configuration: all joints 0 (elbows bent 90 deg, tools along +x).
  End-effector frames: left_ee_link, right_ee_link."""
    return ('dual_arm_servicer', header, [bus, wl, wr, *la, *ra], [wlj, wrj, *laj, *raj])


ROBOTS = {
    'ffsim_servicer_7dof.urdf': servicer_7dof,
    'planar_2link.urdf': planar_2link,
    'dual_arm_servicer.urdf': dual_arm_servicer,
}


# --------------------------------------------------------------------------------------
# Checks (operate on the written URDF text, independent of the generator data)
# --------------------------------------------------------------------------------------
def _vec(s, default):
    return np.array([float(x) for x in s.split()]) if s else np.array(default, float)


class Tree:
    """Minimal URDF kinematics / mass model built from the XML (numpy only)."""

    def __init__(self, path: Path):
        root = ET.parse(path).getroot()
        assert root.tag == 'robot', path
        self.name = root.get('name')
        self.inertial = {}
        self.links = []
        for lk in root.findall('link'):
            self.links.append(lk.get('name'))
            ine = lk.find('inertial')
            if ine is None:
                continue
            o = ine.find('origin')
            com = _vec(o.get('xyz') if o is not None else None, (0, 0, 0))
            rpy = _vec(o.get('rpy') if o is not None else None, (0, 0, 0))
            m = float(ine.find('mass').get('value'))
            a = {k: float(v) for k, v in ine.find('inertia').attrib.items()}
            i_loc = np.array(
                [
                    [a['ixx'], a['ixy'], a['ixz']],
                    [a['ixy'], a['iyy'], a['iyz']],
                    [a['ixz'], a['iyz'], a['izz']],
                ]
            )
            r = rot_rpy(rpy)
            self.inertial[lk.get('name')] = (m, com, r @ i_loc @ r.T)
        assert len(set(self.links)) == len(self.links), 'duplicate link names'
        self.joints = {}
        for j in root.findall('joint'):
            o = j.find('origin')
            ax = j.find('axis')
            lim = j.find('limit')
            self.joints[j.get('name')] = {
                'type': j.get('type'),
                'parent': j.find('parent').get('link'),
                'child': j.find('child').get('link'),
                'xyz': _vec(o.get('xyz') if o is not None else None, (0, 0, 0)),
                'rpy': _vec(o.get('rpy') if o is not None else None, (0, 0, 0)),
                'axis': _vec(ax.get('xyz') if ax is not None else None, (1, 0, 0)),
                'limit': None if lim is None else {k: float(v) for k, v in lim.attrib.items()},
            }
        children = [j['child'] for j in self.joints.values()]
        assert len(set(children)) == len(children), 'a link has two parents'
        roots = [lk for lk in self.links if lk not in children]
        assert len(roots) == 1, f'expected one root link, got {roots}'
        self.root = roots[0]
        for j in self.joints.values():
            assert j['parent'] in self.links and j['child'] in self.links
        self.parent_joint = {j['child']: n for n, j in self.joints.items()}
        self.dof = [n for n, j in self.joints.items() if j['type'] != 'fixed']
        # topological order of links
        order, frontier = [], [self.root]
        while frontier:
            lk = frontier.pop(0)
            order.append(lk)
            frontier += [j['child'] for j in self.joints.values() if j['parent'] == lk]
        assert len(order) == len(self.links), 'kinematic graph is not a connected tree'
        self.order = order

    def fk(self, q: dict, base=None):
        """World pose of each link and world axis / origin of each moving joint."""
        pose = {self.root: np.eye(4) if base is None else base}
        jax = {}
        for lk in self.order[1:]:
            j = self.joints[self.parent_joint[lk]]
            t = np.eye(4)
            t[:3, :3] = rot_rpy(j['rpy'])
            t[:3, 3] = j['xyz']
            t = pose[j['parent']] @ t
            if j['type'] != 'fixed':
                name = self.parent_joint[lk]
                jax[name] = (t[:3, :3] @ j['axis'], t[:3, 3].copy())
                m = np.eye(4)
                m[:3, :3] = rot_axis(j['axis'], q.get(name, 0.0))
                t = t @ m
            pose[lk] = t
        return pose, jax

    def chain_joints(self, tip):
        out, lk = [], tip
        while lk != self.root:
            n = self.parent_joint[lk]
            if self.joints[n]['type'] != 'fixed':
                out.append(n)
            lk = self.joints[n]['parent']
        return out[::-1]

    def subtree_links(self, joint):
        out, stack = [], [self.joints[joint]['child']]
        while stack:
            lk = stack.pop()
            out.append(lk)
            stack += [j['child'] for j in self.joints.values() if j['parent'] == lk]
        return set(out)

    def total_mass(self, links=None):
        return sum(m for lk, (m, _, _) in self.inertial.items() if links is None or lk in links)

    def momentum_matrices(self, q, base):
        """Spatial momentum about the world origin, h = Hb @ [v0; w0] + Hq @ qdot."""
        pose, jax = self.fk(q, base)
        p0 = base[:3, 3]
        hb = np.zeros((6, 6))
        hq = np.zeros((6, len(self.dof)))
        for lk, (m, com, i_loc) in self.inertial.items():
            r = pose[lk][:3, :3]
            c = pose[lk][:3, :3] @ com + pose[lk][:3, 3]
            iw = r @ i_loc @ r.T
            # body velocity map: v_c = v0 + w0 x (c - p0) + sum_j a_j x (c - o_j) qd_j, w = w0 + sum a_j qd_j
            jv = np.zeros((3, 6 + len(self.dof)))
            jw = np.zeros((3, 6 + len(self.dof)))
            jv[:, :3] = np.eye(3)
            jv[:, 3:6] = -skew(c - p0)
            jw[:, 3:6] = np.eye(3)
            for k, n in enumerate(self.dof):
                if n in jax and lk in self.subtree_links(n):
                    a, o = jax[n]
                    jv[:, 6 + k] = np.cross(a, c - o)
                    jw[:, 6 + k] = a
            lin = m * jv
            ang = iw @ jw + m * skew(c) @ jv
            h = np.vstack([lin, ang])
            hb += h[:, :6]
            hq += h[:, 6:]
        return hb, hq

    def tip_jacobian(self, q, tip, base=None):
        """Fixed-base geometric Jacobian [v; w] of `tip` w.r.t. its chain joints."""
        pose, jax = self.fk(q, base)
        p = pose[tip][:3, 3]
        cols = []
        for n in self.chain_joints(tip):
            a, o = jax[n]
            cols.append(np.concatenate([np.cross(a, p - o), a]))
        return np.array(cols).T, pose


def skew(v):
    return np.array([[0, -v[2], v[1]], [v[2], 0, -v[0]], [-v[1], v[0], 0]])


def check_inertias(tree: Tree):
    for lk, (m, _, inertia) in tree.inertial.items():
        assert m > 0, f'{lk}: mass must be > 0'
        assert np.allclose(inertia, inertia.T), lk
        ev = np.linalg.eigvalsh(inertia)
        assert ev.min() > 0, f'{lk}: inertia not positive definite {ev}'
        a, b, c = ev
        assert a + b >= c * (1 - 1e-9), f'{lk}: triangle inequality violated {ev}'
    for n, j in tree.joints.items():
        if j['type'] == 'fixed':
            continue
        lim = j['limit']
        assert lim and lim['lower'] < lim['upper'] and lim['effort'] > 0 and lim['velocity'] > 0, n


def plain_move_base_rotation(tree: Tree, tip: str, q0: dict, dx=(0.0, 0.0, -0.3), steps=300):
    """Move `tip` by dx (world frame) with a plain fixed-base Jacobian controller (the base
    motion is ignored by the controller) while the system floats with zero momentum.
    Returns (base rotation angle [deg], base CoM-frame translation [m], tip error [m])."""
    q = dict(q0)
    chain = tree.chain_joints(tip)
    base = np.eye(4)
    dx = np.asarray(dx, float)
    for _ in range(steps):
        jac, _ = tree.tip_jacobian(q, tip, np.eye(4))  # controller believes the base is fixed
        dq_chain = np.linalg.pinv(jac[:3]) @ (dx / steps)
        qd = np.array([dq_chain[chain.index(n)] if n in chain else 0.0 for n in tree.dof])
        hb, hq = tree.momentum_matrices(q, base)
        vb = -np.linalg.solve(hb, hq @ qd)  # zero total momentum
        base[:3, 3] += vb[:3]
        base[:3, :3] = (
            rot_axis(vb[3:], np.linalg.norm(vb[3:])) @ base[:3, :3]
            if np.linalg.norm(vb[3:]) > 0
            else base[:3, :3]
        )
        for k, n in enumerate(tree.dof):
            q[n] = q.get(n, 0.0) + qd[k]
    ang = math.degrees(math.acos(max(-1.0, min(1.0, (np.trace(base[:3, :3]) - 1) / 2))))
    return ang, np.linalg.norm(base[:3, 3])


# Recommended home configurations (joint name -> angle) and the test move of the tip.
HOME = {'planar_2link': {'joint_1': 0.0, 'joint_2': PI / 2}}
TEST_MOVE = {'planar_2link': (0.0, -0.3, 0.0)}


def report_arm(tree: Tree, tip: str, label: str):
    chain = tree.chain_joints(tip)
    q0 = {n: 0.0 for n in tree.dof}
    q0.update(HOME.get(tree.name, {}))
    dx = TEST_MOVE.get(tree.name, (0.0, 0.0, -0.3))
    jac, pose = tree.tip_jacobian(q0, tip)
    if tree.name == 'planar_2link':
        jac = jac[:2]  # planar task space (x, y)
    sv = np.linalg.svd(jac, compute_uv=False)
    # reach: distance from the first chain joint to the tip with the arm straightened
    straight = sum(
        np.linalg.norm(tree.joints[tree.parent_joint[lk]]['xyz'])
        for lk in tree.order
        if tree.parent_joint.get(lk)
        and tree.joints[tree.parent_joint[lk]]['child'] in _chain_links_after(tree, chain[0], tip)
    )
    arm_links = tree.subtree_links(chain[0])
    m_arm = tree.total_mass(arm_links)
    m_tot = tree.total_mass()
    ang, trans = plain_move_base_rotation(tree, tip, q0, dx)
    print(
        f'  [{label}] dof={len(chain)} reach(joint_1->tip, straightened)={straight:.3f} m  '
        f'arm mass={m_arm:.2f} kg  total mass={m_tot:.2f} kg  rest (base + fixed children + other arms)='
        f'{m_tot - m_arm:.2f} kg  arm/rest mass ratio={m_arm / (m_tot - m_arm):.3f}'
    )
    print(
        f'  [{label}] home q={[round(q0[n], 4) for n in chain]}: tip at {np.round(pose[tip][:3, 3], 3)} in base_link; Jacobian singular values '
        f'{np.round(sv, 3)} (cond {sv[0] / sv[-1]:.1f})'
    )
    print(
        f'  [{label}] plain controller, tip moved {fvec(dx)} m: base rotates {ang:.2f} deg, '
        f'base origin translates {trans:.3f} m'
    )
    return {'reach': straight, 'm_arm': m_arm, 'm_tot': m_tot, 'rot': ang, 'cond': sv[0] / sv[-1]}


def _chain_links_after(tree, first_joint, tip):
    """Links strictly after the child of `first_joint` on the path to `tip`."""
    out, lk = set(), tip
    while True:
        n = tree.parent_joint[lk]
        if n == first_joint:
            return out
        out.add(lk)
        lk = tree.joints[n]['parent']


def pinocchio_check(path: Path, tree: Tree, tips):
    try:
        import pinocchio as pin
    except ImportError:
        print('  pinocchio not importable - skipped independent check')
        return
    model = pin.buildModelFromUrdf(str(path), pin.JointModelFreeFlyer())
    data = model.createData()
    rng = np.random.default_rng(0)
    q = pin.neutral(model)
    q[7:] = rng.uniform(-1.0, 1.0, model.nq - 7)  # random joint angles, base at identity
    m = pin.crba(model, data, q)
    m = np.triu(m) + np.triu(m, 1).T
    ev = np.linalg.eigvalsh(m)
    mass = sum(inertia.mass for inertia in model.inertias)
    assert ev.min() > 0, f'{path.name}: mass matrix not PD'
    assert abs(mass - tree.total_mass()) < 1e-6, (mass, tree.total_mass())
    assert model.nv == 6 + len(tree.dof)
    # cross-check the numpy momentum model: centroidal-momentum (about world origin) columns
    qd = rng.normal(size=model.nv - 6)
    vbase = rng.normal(size=6)  # base twist; base at identity so local == world axes
    qmap = {n: q[model.joints[model.getJointId(n)].idx_q] for n in tree.dof}
    hb, hq = tree.momentum_matrices(qmap, np.eye(4))
    v = np.concatenate([vbase, qd])
    pin.forwardKinematics(model, data, q, v)
    h_pin = np.zeros(6)
    for i in range(1, model.njoints):
        hi = data.oMi[i].act(model.inertias[i] * data.v[i])  # spatial momentum in world frame
        h_pin += np.concatenate([hi.linear, hi.angular])
    qd_ordered = np.array([qd[model.joints[model.getJointId(n)].idx_v - 6] for n in tree.dof])
    h_np = hb @ vbase + hq @ qd_ordered
    assert np.allclose(h_pin, h_np, atol=1e-8), (h_pin, h_np)
    print(
        f'  pinocchio: nq={model.nq} nv={model.nv} total mass={mass:.3f} kg, M(q_rand) PD '
        f'(eig min {ev.min():.4g}, max {ev.max():.4g}); momentum model matches numpy'
    )


def markdown_tables(tree: Tree) -> str:
    """Mass-property and joint tables (as in urdf/README.md) read back from a URDF."""
    out = [
        '| link | mass [kg] | CoM in link frame [m] | Ixx | Iyy | Izz | Ixy | Ixz | Iyz |',
        '|---|---|---|---|---|---|---|---|---|',
    ]
    for lk in tree.links:
        if lk not in tree.inertial:
            out.append(f'| `{lk}` | 0 (frame only) | - | | | | | | |')
            continue
        m, com, i = tree.inertial[lk]
        vals = [i[0, 0], i[1, 1], i[2, 2], i[0, 1], i[0, 2], i[1, 2]]
        out.append(
            f'| `{lk}` | {m:g} | ({", ".join(f"{c:.4g}" for c in com)}) | '
            + ' | '.join('0' if abs(v) < 1e-12 else f'{v:.4g}' for v in vals)
            + ' |'
        )
    out += [
        '',
        (
            '| joint | type | parent -> child | origin xyz [m] / rpy [rad] | axis | lower..upper [rad] '
            '| effort [N m] | velocity [rad/s] | damping / friction |'
        ),
        '|---|---|---|---|---|---|---|---|---|',
    ]
    root = (
        ET.parse(URDF_DIR / f'{tree.name}.urdf').getroot()
        if (URDF_DIR / f'{tree.name}.urdf').exists()
        else None
    )
    dyn = {}
    if root is not None:
        for j in root.findall('joint'):
            d = j.find('dynamics')
            if d is not None:
                dyn[j.get('name')] = f'{d.get("damping")} / {d.get("friction")}'
    for n, j in tree.joints.items():
        org = f'({fvec(np.round(j["xyz"], 4))}) / ({fvec(np.round(j["rpy"], 4))})'
        if j['type'] == 'fixed':
            out.append(f'| `{n}` | fixed | `{j["parent"]}` -> `{j["child"]}` | {org} | | | | | |')
        else:
            lim = j['limit']
            out.append(
                f'| `{n}` | {j["type"]} | `{j["parent"]}` -> `{j["child"]}` | {org} | ({fvec(j["axis"])}) '
                f'| {lim["lower"]:g}..{lim["upper"]:g} | {lim["effort"]:g} | {lim["velocity"]:g} '
                f'| {dyn.get(n, "-")} |'
            )
    return '\n'.join(out)


def check_all():
    results = {}
    for fname in ROBOTS:
        path = URDF_DIR / fname
        tree = Tree(path)
        check_inertias(tree)
        print(
            f'{fname}: robot "{tree.name}", root "{tree.root}", {len(tree.links)} links, '
            f'{len(tree.dof)} dof, mass {tree.total_mass():.3f} kg - parse/tree/SPD/triangle OK'
        )
        tips = [lk for lk in tree.links if lk.endswith('ee_link')]
        for tip in tips:
            results[(fname, tip)] = report_arm(tree, tip, tip)
        pinocchio_check(path, tree, tips)
    r = results[('ffsim_servicer_7dof.urdf', 'ee_link')]
    assert r['rot'] >= 1.0, f'7-DoF servicer: base rotation {r["rot"]:.2f} deg < 1 deg'
    assert 2.0 <= r['reach'] <= 3.0 + 1e-9, r['reach']
    return results


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--check', action='store_true', help='only check the existing files')
    ap.add_argument(
        '--tables', action='store_true', help='print the README markdown tables and exit'
    )
    args = ap.parse_args(argv)
    if args.tables:
        for fname in ROBOTS:
            print(f'### {fname}\n')
            print(markdown_tables(Tree(URDF_DIR / fname)))
            print()
        return 0
    if not args.check:
        URDF_DIR.mkdir(exist_ok=True)
        for fname, fn in ROBOTS.items():
            robot, header, links, joints = fn()
            (URDF_DIR / fname).write_text(urdf_xml(robot, header, links, joints))
            print(f'wrote {URDF_DIR / fname}')
    check_all()
    return 0


if __name__ == '__main__':
    sys.exit(main())
