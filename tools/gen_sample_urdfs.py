#!/usr/bin/env python3
"""Generate the sample free-floating robots in ``urdf/`` and check them with ffsim_ros.

Usage (any Python where ``ffsim_ros`` is importable, e.g. ``.venv/bin/python``)::

    python tools/gen_sample_urdfs.py              # (re)write urdf/*.urdf, then check them
    python tools/gen_sample_urdfs.py --out DIR    # write into DIR instead, then check them
    python tools/gen_sample_urdfs.py --check      # exit 1 unless urdf/*.urdf are what this
                                                  # script writes, pass the checks and the
                                                  # tables of urdf/README.md are current
    python tools/gen_sample_urdfs.py --tables     # print the tables of urdf/README.md

Every link is described as a set of solid primitives (box, solid cylinder, thin/thick
walled tube).  Mass properties are computed from the shapes: each primitive's inertia
about its own centroid, rotated into the link frame and shifted to the composite CoM with
the parallel-axis theorem.  The generated numbers are what the URDFs contain -- nothing is
hand-typed except the geometry and masses below.

Checks: each written file is loaded with ``ffsim_ros.dynamics.load_urdf`` and measured with
the package's dynamics and control law only (no second model of the robot here):

* the loader (``strict_inertia=True``) accepts it: one root, a tree, every link's mass and
  inertia consistent (positive semi-definite, triangle inequality);
* every merged rigid body has a positive mass and a positive-definite inertia satisfying the
  triangle inequality; every moving joint has finite limits (lower < upper, effort > 0,
  velocity > 0); the mass matrix is positive definite at random configurations;
* per end effector: arm mass and arm/rest mass ratio (body masses of the joint-1 subtree),
  reach (the controller's bound: joint-to-joint distances from joint 1 to the tip), the
  fixed-base Jacobian at the home pose (``link_jacobian``), and two closed-loop moves of the
  tip by 0.3 m simulated with ``D.step`` under the control law of ``ffsim_ros.control``: the
  ``joint_pd`` baseline (fixed-base inverse kinematics, blind to the base reaction), which
  must turn the default servicer's base by at least 1 deg, and, where the arm has
  redundancy left, ``reactionless``, which must reach the goal with the base attitude held;
* if ``pinocchio`` is importable, the total mass, momentum and kinetic energy at random
  states agree with Pinocchio's (free-flyer root);
* the link/joint and figures tables in ``urdf/README.md`` are the ones ``--tables`` prints.
"""

from __future__ import annotations

import argparse
import math
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

import ffsim_ros.dynamics as D
from ffsim_ros.control import ControlMode, ReactionlessController, reactionless_basis
from ffsim_ros.dynamics.lie import quat_angle, quat_to_matrix, rpy_to_matrix
from ffsim_ros.dynamics.mufti import samples

REPO = Path(__file__).resolve().parent.parent
URDF_DIR = REPO / 'urdf'
README = URDF_DIR / 'README.md'
PI = math.pi


# --------------------------------------------------------------------------------------
# Rigid-body helpers
# --------------------------------------------------------------------------------------
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
        r = rpy_to_matrix(p.rpy())
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
        'Deployed solar wing (yoke + panel), fixed to the bus: '
        'exercises fixed-child merging into the base.',
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
        'High-gain antenna (mast + 0.9 m dish, 12 kg) on the top deck, fixed: '
        'second fixed child of the base.',
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
            comment='Shoulder pitch; origin pitched -45 deg so the upper arm points up-forward '
            'at q=0.',
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
            comment='At the centre of the base +x face; damping/friction 0 so the analytic '
            'model is exact.',
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
#: Closed-chain samples (URDF+ ``<loop>`` elements): file name -> URDF text.
CLOSED_ROBOTS = {'floating_platform.urdf': samples.platform_urdf_plus}


def generate() -> dict[str, str]:
    """File name -> URDF text of every sample robot (the closed-chain samples of
    :mod:`ffsim_ros.dynamics.mufti.samples` as they write themselves: URDF+ ``<loop>``
    elements, no arm, so none of this script's arm checks)."""
    out = {fname: urdf_xml(*build()) for fname, build in ROBOTS.items()}
    return out | {fname: build() for fname, build in CLOSED_ROBOTS.items()}


def write(out_dir: Path) -> list[Path]:
    """Write every sample robot into ``out_dir`` (created if needed); return the paths."""
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = []
    for fname, text in generate().items():
        path = out_dir / fname
        path.write_bytes(text.encode())
        paths.append(path)
    return paths


def stale_files(urdf_dir: Path) -> list[str]:
    """One message per URDF of ``urdf_dir`` that is not byte-identical to the output of this
    script (missing, different, or not written by it); empty when they all match."""
    expected = generate()
    problems = []
    for fname, text in expected.items():
        path = urdf_dir / fname
        if not path.is_file():
            problems.append(f'{path}: missing')
            continue
        have = path.read_bytes().decode(errors='replace').split('\n')
        want = text.split('\n')
        if have != want:
            line = next(
                (i for i, (a, b) in enumerate(zip(have, want, strict=False)) if a != b),
                min(len(have), len(want)),
            )
            problems.append(f'{path}: differs from the generator output from line {line + 1}')
    for path in sorted(urdf_dir.glob('*.urdf')):
        if path.name not in expected:
            problems.append(f'{path}: not written by this generator')
    return problems


# --------------------------------------------------------------------------------------
# Checks: the written file, loaded and measured with ffsim_ros.dynamics / ffsim_ros.control
# --------------------------------------------------------------------------------------
class CheckError(Exception):
    """A sample robot fails one of the checks."""


def require(ok: bool, message: str) -> None:
    if not ok:
        raise CheckError(message)


#: Recommended home configurations (joint name -> angle, others 0), the test move of the
#: tip (inertial frame, from its home position) per robot, and the planar robots, whose task
#: space is (x, y): the Jacobian rows for conditioning and the position task rows.
HOME = {'planar_2link': {'joint_1': 0.0, 'joint_2': PI / 2}}
TEST_MOVE = {'planar_2link': (0.0, -0.3, 0.0)}
DEFAULT_MOVE = (0.0, 0.0, -0.3)
PLANAR = {'planar_2link'}

#: Closed-loop moves: RK4 step [s], steps per control update (100 Hz), duration [s].
SIM_DT = 1e-3
CONTROL_STEPS = 10
MOVE_TIME = 6.0
#: A reactionless move must end this close to its goal [m], the base turning at most [deg].
REACTIONLESS_MISS = 5e-3
REACTIONLESS_ROTATION = 0.01


@dataclass
class Move:
    """Outcome of a closed-loop move of the tip."""

    rotation: float  #: base attitude change at the end [deg]
    max_rotation: float  #: largest base attitude change during the move [deg]
    translation: float  #: displacement of the base_link origin [m]
    miss: float  #: distance of the tip from the goal at the end [m]
    momentum: float  #: largest component of the total momentum at the end [SI]


@dataclass
class ArmFigures:
    """What the checks measure for one end effector."""

    robot: str
    tip: str
    n: int  #: joints of the model
    dof: int  #: joints from the root to the tip
    reach: float  #: joint 1 -> tip along the chain [m]
    arm_mass: float  #: bodies moved by joint 1 [kg]
    total_mass: float  #: [kg]
    tip_home: np.ndarray  #: tip position in base_link at home [m]
    singular_values: np.ndarray  #: fixed-base Jacobian of the chain at home
    move: tuple  #: tip displacement of the test moves [m]
    plain: Move  #: the joint_pd baseline
    reactionless_dim: int  #: dimension of the reactionless joint-rate subspace at home
    reactionless: Move | None  #: None where the reactionless subspace cannot move the tip

    @property
    def ratio(self) -> float:
        return self.arm_mass / (self.total_mass - self.arm_mass)

    @property
    def cond(self) -> float:
        return float(self.singular_values[0] / self.singular_values[-1])


def load(path: Path) -> D.Model:
    """The robot as the package loads it, rejecting any physically inconsistent link."""
    return D.load_urdf(path, strict_inertia=True)


def home_state(model: D.Model) -> np.ndarray:
    """Home configuration with the base_link frame at the inertial origin, unrotated."""
    q = D.neutral(model)
    q[:7] = D.base_state_from_link(model, np.zeros(3), (0.0, 0.0, 0.0, 1.0))[0]
    for joint, angle in HOME.get(model.name, {}).items():
        q[model.joint_q_slice(joint)] = angle
    return q


def chain_bodies(model: D.Model, tip: str) -> list[int]:
    """Bodies from the first moving one to the one carrying ``tip``, root excluded."""
    parent = model.arrays.parent
    out, b = [], model.frame(tip).body
    while b > 0:
        out.append(b)
        b = int(parent[b])
    return out[::-1]


def subtree_mass(model: D.Model, body: int) -> float:
    """Mass of ``body`` and of every body it carries [kg] (parents precede children)."""
    a = model.arrays
    total = 0.0
    for b in range(len(a.parent)):
        c = b
        while c > body:
            c = int(a.parent[c])
        if c == body:
            total += float(a.mass[b])
    return total


def check_bodies(model: D.Model) -> None:
    """Every merged rigid body: mass > 0, inertia about its CoM positive definite and
    satisfying the triangle inequality; every moving joint: finite, ordered limits."""
    a = model.arrays
    for b, name in enumerate(model.body_names):
        require(a.mass[b] > 0.0, f'body {name}: mass {a.mass[b]} must be > 0')
        ev = np.linalg.eigvalsh(a.inertia[b])
        require(ev[0] > 0.0, f'body {name}: inertia not positive definite {ev}')
        require(ev[0] + ev[1] >= ev[2] * (1 - 1e-9), f'body {name}: triangle inequality {ev}')
    for k, joint in enumerate(model.joint_names):
        lims = (model.lower[k], model.upper[k], model.effort_limit[k], model.velocity_limit[k])
        require(
            all(np.isfinite(lims)) and lims[0] < lims[1] and lims[2] > 0 and lims[3] > 0,
            f'joint {joint}: limits (lower, upper, effort, velocity) = {lims}',
        )


def check_mass_matrix(model: D.Model, rng: np.random.Generator, samples: int = 5) -> float:
    """The mass matrix is positive definite at home and at random states; its smallest
    eigenvalue over them."""
    lowest = np.inf
    for k in range(samples + 1):
        q = home_state(model)
        if k:
            quat = rng.normal(size=4)
            q[:3], q[3:7] = rng.normal(size=3), quat / np.linalg.norm(quat)
            q[7:] = rng.uniform(model.lower, model.upper)
        lowest = min(lowest, float(np.linalg.eigvalsh(D.mass_matrix(model, q))[0]))
    require(lowest > 0.0, f'{model.name}: mass matrix not positive definite ({lowest})')
    return lowest


def simulate_move(model: D.Model, tip: str, q0: np.ndarray, dx, mode: ControlMode) -> Move:
    """Move ``tip`` by ``dx`` (inertial frame) from rest at ``q0``, zero momentum, with the
    control law of :mod:`ffsim_ros.control` in ``mode``, simulated with ``D.step``."""
    law = ReactionlessController(model, tip, mode=mode)
    goal = D.link_pose(model, q0, tip)[0] + np.asarray(dx, float)
    law.check_goal(q0, goal)
    q, v = q0.copy(), np.zeros(model.nv)
    worst = 0.0
    for _ in range(round(MOVE_TIME / (SIM_DT * CONTROL_STEPS))):
        out = law.compute(q, v, goal, attitude_reference=q0[3:7])
        q, v = D.step(model, q, v, out.tau, SIM_DT, steps=CONTROL_STEPS)
        worst = max(worst, quat_angle(q0[3:7], q[3:7]))
    shift = D.base_link_state(model, q)[0] - D.base_link_state(model, q0)[0]
    return Move(
        rotation=math.degrees(quat_angle(q0[3:7], q[3:7])),
        max_rotation=math.degrees(worst),
        translation=float(np.linalg.norm(shift)),
        miss=float(np.linalg.norm(D.link_pose(model, q, tip)[0] - goal)),
        momentum=float(np.abs(D.momentum(model, q, v)).max()),
    )


def arm_figures(model: D.Model, tip: str) -> ArmFigures:
    """Masses, reach, conditioning and the two closed-loop moves of one end effector."""
    q = home_state(model)
    bodies = chain_bodies(model, tip)
    require(bool(bodies), f'{tip}: not carried by a moving joint')
    cols = [int(model.arrays.iv[b]) for b in bodies]  # the chain's joints in v
    planar = model.name in PLANAR
    jac = D.link_jacobian(model, q, tip)[: 2 if planar else 6, cols]  # [v; w] rows
    rows = 2 if planar else 3  # position task
    move = TEST_MOVE.get(model.name, DEFAULT_MOVE)
    plain = simulate_move(model, tip, q, move, ControlMode.JOINT_PD)
    require(plain.momentum < 1e-8, f'{tip}: momentum {plain.momentum} not conserved')
    # reactionless position control needs the reactionless rates to move the tip in every
    # task direction: rank(J* N) = task rows
    basis = reactionless_basis(model, q)
    jstar = D.generalized_jacobian(model, q, tip)[:rows]
    reactionless = None
    if basis.shape[1] and np.linalg.matrix_rank(jstar @ basis, tol=1e-9) == rows:
        reactionless = simulate_move(model, tip, q, move, ControlMode.REACTIONLESS)
        require(
            reactionless.miss < REACTIONLESS_MISS
            and reactionless.max_rotation < REACTIONLESS_ROTATION,
            f'{tip}: reactionless move ends {reactionless.miss * 1e3:.1f} mm from its goal, '
            f'base turned up to {reactionless.max_rotation:.4f} deg',
        )
    return ArmFigures(
        robot=model.name,
        tip=tip,
        n=model.n,
        dof=len(cols),
        reach=ReactionlessController(model, tip).reach,
        arm_mass=subtree_mass(model, bodies[0]),
        total_mass=model.total_mass,
        tip_home=D.link_pose(model, q, tip)[0],
        singular_values=np.linalg.svd(jac, compute_uv=False),
        move=move,
        plain=plain,
        reactionless_dim=basis.shape[1],
        reactionless=reactionless,
    )


def pinocchio_check(path: Path, model: D.Model, samples: int = 5) -> str:
    """Total mass, momentum about the origin and kinetic energy at random states against
    Pinocchio's (free-flyer root at the base_link frame, velocities in that frame)."""
    try:
        import pinocchio as pin
    except ImportError:
        return 'pinocchio not importable - skipped'
    pm = pin.buildModelFromUrdf(str(path), pin.JointModelFreeFlyer())
    data = pm.createData()
    require(pm.nv == model.nv, f'{path.name}: pinocchio nv {pm.nv} != {model.nv}')
    mass = sum(inertia.mass for inertia in pm.inertias)
    require(abs(mass - model.total_mass) <= 1e-12 * mass, f'mass {mass} != {model.total_mass}')
    rng = np.random.default_rng(0)
    worst = 0.0
    for _ in range(samples):
        qp = pin.neutral(pm)
        quat = rng.normal(size=4)
        qp[:3], qp[3:7] = rng.normal(size=3), quat / np.linalg.norm(quat)
        qp[7:] = rng.uniform(-1.0, 1.0, pm.nq - 7)
        vp = rng.normal(size=pm.nv)
        rot = quat_to_matrix(qp[3:7])
        q, v = np.empty(model.nq), np.empty(model.nv)
        q[:7], v[:6] = D.base_state_from_link(model, qp[:3], qp[3:7], rot @ vp[:3], rot @ vp[3:6])
        for k, name in enumerate(model.joint_names):
            require(pm.existJointName(name), f'{path.name}: pinocchio has no joint {name}')
            joint = pm.joints[pm.getJointId(name)]
            q[model.idx_q[k]], v[model.idx_v[k]] = qp[joint.idx_q], vp[joint.idx_v]
        pin.forwardKinematics(pm, data, qp, vp)
        h_pin = np.zeros(6)
        for i in range(1, pm.njoints):
            hi = data.oMi[i].act(pm.inertias[i] * data.v[i])  # spatial momentum, world frame
            h_pin += np.r_[hi.linear, hi.angular]
        m_pin = pin.crba(pm, data, qp)
        m_pin = np.triu(m_pin) + np.triu(m_pin, 1).T
        h = D.momentum(model, q, v)
        energy = D.kinetic_energy(model, q, v)
        worst = max(
            worst,
            float(np.abs(h - h_pin).max() / np.abs(h_pin).max()),
            abs(energy - 0.5 * vp @ m_pin @ vp) / energy,
        )
    require(worst < 1e-10, f'{path.name}: momentum/energy differ from pinocchio by {worst:.2g}')
    return (
        f'pinocchio: nq={pm.nq} nv={pm.nv} mass={mass:.3f} kg; momentum and kinetic energy '
        f'at {samples} random states agree to {worst:.1e} (relative)'
    )


# Robot-specific requirements on the figures (what the samples are designed to show).
def _servicer_requirements(fig: ArmFigures) -> None:
    require(
        fig.plain.rotation >= 1.0,
        f'7-DoF servicer: base rotation {fig.plain.rotation:.2f} deg < 1 deg with the plain '
        'controller (the sample must show a clear base reaction)',
    )
    require(2.0 <= fig.reach <= 3.0 + 1e-9, f'7-DoF servicer: reach {fig.reach:.3f} m')


REQUIREMENTS = {('ffsim_servicer_7dof', 'ee_link'): _servicer_requirements}


def check_robot(path: Path, verbose: bool = True) -> list[ArmFigures]:
    """Every check of one URDF; the figures of each end effector (``*ee_link``).

    Raises
    ------
    ValueError
        The loader rejects the file (it names the link or joint).
    CheckError
        A check fails.
    """
    say = print if verbose else (lambda *_: None)
    model = load(path)
    check_bodies(model)
    lowest = check_mass_matrix(model, np.random.default_rng(0))
    say(
        f'{path.name}: robot "{model.name}", root "{model.base_link}", '
        f'{len(model.link_names)} links in {len(model.body_names)} bodies, {model.n} dof, '
        f'mass {model.total_mass:.3f} kg - loads strictly; bodies SPD + triangle; limits; '
        f'mass matrix PD (smallest eigenvalue {lowest:.4g})'
    )
    tips = [link for link in model.link_names if link.endswith('ee_link')]
    require(bool(tips), f'{path.name}: no end-effector frame (*ee_link)')
    figures = []
    for tip in tips:
        fig = arm_figures(model, tip)
        REQUIREMENTS.get((model.name, tip), lambda _: None)(fig)
        figures.append(fig)
        say(
            f'  [{tip}] dof={fig.dof} reach(joint 1 -> tip, along the chain)={fig.reach:.3f} m  '
            f'arm mass={fig.arm_mass:.2f} kg  total mass={fig.total_mass:.2f} kg  '
            f'arm/rest mass ratio={fig.ratio:.3f}'
        )
        say(
            f'  [{tip}] home: tip at {np.round(fig.tip_home, 3)} in base_link; fixed-base '
            f'Jacobian singular values {np.round(fig.singular_values, 3)} (cond {fig.cond:.1f})'
        )
        say(
            f'  [{tip}] joint_pd move {fvec(fig.move)} m: base turns {fig.plain.rotation:.2f} '
            f'deg, base_link origin moves {fig.plain.translation:.3f} m, tip misses the goal '
            f'by {fig.plain.miss:.3f} m; momentum stays {fig.plain.momentum:.1e}'
        )
        if fig.reactionless is None:
            say(
                f'  [{tip}] reactionless: subspace of {fig.reactionless_dim} joint rates cannot '
                'move the tip in every task direction - not run'
            )
        else:
            r = fig.reactionless
            say(
                f'  [{tip}] reactionless move (subspace of {fig.reactionless_dim} rates): tip '
                f'{r.miss * 1e3:.2f} mm from the goal, base turned at most '
                f'{r.max_rotation:.2e} deg'
            )
    say(f'  {pinocchio_check(path, model)}')
    return figures


def check_all(urdf_dir: Path, verbose: bool = True) -> list[ArmFigures]:
    """:func:`check_robot` for every arm sample in ``urdf_dir``, :func:`check_closed` for the
    closed-chain samples."""
    for fname in CLOSED_ROBOTS:
        check_closed(urdf_dir / fname, verbose)
    return [fig for fname in ROBOTS for fig in check_robot(urdf_dir / fname, verbose)]


def check_closed(path: Path, verbose: bool = True) -> None:
    """A closed-chain sample: loads strictly, bodies and mass matrix as an arm's, its loops
    read back and closed (to 1e-12) at the placement configuration of
    :func:`ffsim_ros.dynamics.mufti.samples.platform_chain`, with the same accelerations as
    that chain (1e-12)."""
    model = load(path)
    check_bodies(model)
    lowest = check_mass_matrix(model, np.random.default_rng(0))
    loops = D.loop_closures_from_urdf(path)
    chain = D.ClosedChain(model, loops)
    reference, q0 = samples.platform_chain()
    xi, _ = chain.constraint_error(q0, np.zeros(model.nv))
    require(float(np.abs(xi).max()) < 1e-12, f'{path.name}: loops open at the placement')
    v = np.random.default_rng(1).normal(size=model.nv)
    q, v = chain.assemble(q0, v)
    tau = np.random.default_rng(2).normal(size=model.n)
    gap = float(np.abs(chain.acceleration(q, v, tau) - reference.acceleration(q, v, tau)).max())
    require(gap < 1e-12, f'{path.name}: accelerations differ from the sample chain by {gap:.3g}')
    if verbose:
        print(
            f'{path.name}: robot "{model.name}", root "{model.base_link}", {model.n} dof, '
            f'mass {model.total_mass:.3f} kg - loads strictly; mass matrix PD (smallest '
            f'eigenvalue {lowest:.4g}); {len(loops)} loop closures '
            f'({", ".join(f"{lp.name} {lp.kind}" for lp in loops)}) closed at the placement, '
            f'accelerations as the sample chain (max difference {gap:.1e})'
        )


# --------------------------------------------------------------------------------------
# The tables of urdf/README.md
# --------------------------------------------------------------------------------------
def robot_tables(links: list[Link], joints: list[Joint]) -> str:
    """Mass-property and joint tables of one robot, from its definition, with the values as
    the URDF prints them (:func:`fmt`)."""
    out = [
        '| link | mass [kg] | CoM in link frame [m] | Ixx | Iyy | Izz | Ixy | Ixz | Iyz |',
        '|---|---|---|---|---|---|---|---|---|',
    ]
    for lk in links:
        if not lk.prims:
            out.append(f'| `{lk.name}` | 0 (frame only) | - | | | | | | |')
            continue
        m, com, i = composite(lk.prims)
        m, com = float(fmt(m)), [float(fmt(c)) for c in com]
        vals = [float(fmt(v)) for v in (i[0, 0], i[1, 1], i[2, 2], i[0, 1], i[0, 2], i[1, 2])]
        out.append(
            f'| `{lk.name}` | {m:g} | ({", ".join(f"{c:.4g}" for c in com)}) | '
            + ' | '.join('0' if v == 0 else f'{v:.4g}' for v in vals)
            + ' |'
        )
    out += [
        '',
        '| joint | type | parent -> child | origin xyz [m] / rpy [rad] | axis '
        '| lower..upper [rad] | effort [N m] | velocity [rad/s] | damping / friction |',
        '|---|---|---|---|---|---|---|---|---|',
    ]
    for j in joints:
        org = f'({fvec(np.round(j.xyz, 4))}) / ({fvec(np.round(j.rpy, 4))})'
        link = f'`{j.parent}` -> `{j.child}`'
        if j.jtype == 'fixed':
            out.append(f'| `{j.name}` | fixed | {link} | {org} | | | | | |')
        else:
            out.append(
                f'| `{j.name}` | {j.jtype} | {link} | {org} | ({fvec(j.axis)}) '
                f'| {j.lower:g}..{j.upper:g} | {j.effort:g} | {j.velocity:g} '
                f'| {fmt(j.damping)} / {fmt(j.friction)} |'
            )
    return '\n'.join(out)


def _row_name(fig: ArmFigures) -> str:
    return f'`{fig.robot}` `{fig.tip}`'


def figures_tables(figures: list[ArmFigures]) -> str:
    """The measured figures of every end effector (what :func:`check_robot` prints)."""
    out = [
        '| robot / tip | DoF | total mass [kg] | arm mass [kg] | arm / rest mass '
        '| reach, joint 1 -> tip along the chain [m] |',
        '|---|---|---|---|---|---|',
    ]
    for fig in figures:
        out.append(
            f'| {_row_name(fig)} | 6 + {fig.n} | {fig.total_mass:g} | {fig.arm_mass:g} '
            f'| {fig.ratio:.3f} | {fig.reach:.2f} |'
        )
    out += [
        '',
        '| robot / tip | tip at home in `base_link` [m] | fixed-base Jacobian singular values '
        'at home (cond) | tip move [m] | base rotation, `joint_pd` [deg] | `reactionless`, '
        'same goal |',
        '|---|---|---|---|---|---|',
    ]
    for fig in figures:
        sv = ' '.join(f'{s:.2f}' for s in fig.singular_values)
        if fig.reactionless is None:
            rl = f'not run: {fig.reactionless_dim}-dim. reactionless subspace'
        else:
            rl = (
                f'goal reached (< {REACTIONLESS_MISS * 1e3:g} mm), base < '
                f'{REACTIONLESS_ROTATION:g} deg'
            )
        out.append(
            f'| {_row_name(fig)} | ({fvec(np.round(fig.tip_home, 3))}) | {sv} '
            f'(cond {fig.cond:.1f}) | ({fvec(fig.move)}) | {fig.plain.rotation:.2f} | {rl} |'
        )
    return '\n'.join(out)


def readme_tables(figures: list[ArmFigures]) -> list[tuple[str, str]]:
    """(title, markdown) of every table of urdf/README.md this script produces."""
    out = [('figures (summary)', figures_tables(figures))]
    for fname, build in ROBOTS.items():
        _, _, links, joints = build()
        out.append((fname, robot_tables(links, joints)))
    return out


def readme_problems(figures: list[ArmFigures], readme: Path = README) -> list[str]:
    """One message per table of :func:`readme_tables` not found verbatim in ``readme``."""
    text = readme.read_text() if readme.is_file() else ''
    return [
        f'{readme}: the {title} table is not the current one (print it with --tables)'
        for title, table in readme_tables(figures)
        if table not in text
    ]


# --------------------------------------------------------------------------------------
def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument(
        '--check',
        action='store_true',
        help='write nothing; exit 1 unless the URDFs in DIR are byte-identical to what this '
        'script writes, pass the checks, and urdf/README.md has the current tables',
    )
    ap.add_argument(
        '--out',
        type=Path,
        default=URDF_DIR,
        metavar='DIR',
        help='directory the URDFs are written to (or compared in, with --check); default urdf/',
    )
    ap.add_argument(
        '--tables', action='store_true', help='print the tables of urdf/README.md and exit'
    )
    args = ap.parse_args(argv)
    problems = []
    try:
        if args.tables:
            with tempfile.TemporaryDirectory() as tmp:
                write(Path(tmp))
                figures = check_all(Path(tmp), verbose=False)
            for title, table in readme_tables(figures):
                print(f'<!-- {title} -->\n{table}\n')
            return 0
        if args.check:
            problems += stale_files(args.out)
        else:
            for path in write(args.out):
                print(f'wrote {path}')
        figures = check_all(args.out)
    except (CheckError, ValueError) as exc:  # ValueError: the loader rejects a file
        print(f'FAILED: {exc}', file=sys.stderr)
        return 1
    readme = readme_problems(figures)
    if args.check:
        problems += readme
    else:
        for message in readme:
            print(f'note: {message}')
    for message in problems:
        print(f'FAILED: {message}', file=sys.stderr)
    return 1 if problems else 0


if __name__ == '__main__':
    sys.exit(main())
