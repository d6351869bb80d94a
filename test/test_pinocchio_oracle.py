"""Independent oracle tests of ``ffsim_ros.dynamics`` against Pinocchio.

Every quantity of the core is compared, through its public API only, with the same quantity
computed by Pinocchio (``pin`` from PyPI, test-only) and converted to our conventions. The
relative tolerance is ``||ours - ref|| <= 1e-10 * max(1, ||ref||)``.

Conventions and the conversion
------------------------------
Ours (floating base): ``q = [r0, Q0 (x, y, z, w), phi]`` with ``r0`` the inertial-frame position
of the CoM of the *base body* (root link with all links attached to it by fixed joints merged
in) and ``v = [V0, w0, phidot]`` with ``V0 = dr0/dt`` and ``w0`` the angular velocity, both in
the inertial frame. Continuous joints are plain angles.

Pinocchio (``JointModelFreeFlyer`` root): ``q_p = [p, Q0 (x, y, z, w), ...]`` with ``p`` the
root *link frame origin*, ``v_p = [R^T dp/dt, R^T w0, ...]`` (body-frame twist at the root
origin), continuous joints stored as ``(cos, sin)``, joints in depth-first order (we match
joints by name, never by index). Fixed-joint links are kept as frames and their inertia is
merged into the parent joint's body, so the base body CoM in the root frame is
``c0 = model.inertias[1].lever`` and ``r0 = p + R c0``.

Velocity map. With ``[c]x`` the cross-product matrix and ``R = R(Q0)``::

    dp/dt = V0 - w0 x (R c0)  =>  v_lin = R^T V0 + R^T [R c0]x w0 = R^T V0 + [c0]x R^T w0
    w_loc = R^T w0

so ``v_p = T(q) v`` with ``T = [[R^T, [c0]x R^T, 0], [0, R^T, 0], [0, 0, P]]`` where ``P`` is
the joint permutation (ours -> Pinocchio's velocity index).

Acceleration map. Pinocchio's ``a_p = d(v_p)/dt`` (derivative of the body-frame twist
components, not the classical acceleration), hence ``a_p = T a + Tdot v``. Using
``d(R^T)/dt = -R^T [w0]x``::

    d/dt (R^T)         = -R^T [w0]x              applied to V0: -R^T (w0 x V0)
    d/dt ([c0]x R^T)   = -[c0]x R^T [w0]x        applied to w0: -[c0]x R^T (w0 x w0) = 0
    d/dt (R^T)         (angular row)             applied to w0: -R^T (w0 x w0) = 0

so the drift is ``Tdot v = [-R^T (w0 x V0); 0; 0]``.

Force map. Generalized forces are dual to velocities (equal power ``tau . v = tau_p . v_p``),
so ``tau = T^T tau_p``. Our base generalized force is ``[F; T]`` (force at the base CoM and
torque, inertial frame) because its power is ``F.V0 + T.w0``; Pinocchio's is the body-frame
wrench at the root origin ``[R^T F; R^T (T + (R c0) x F)]``, which is ``T^{-T} [F; T]``.
Therefore, from ``M a_p + c_p = tau_p``::

    H = T^T M T,    c = T^T (c_p + M Tdot v) = T^T rnea(q_p, v_p, Tdot v)

and forward dynamics is ``a = T^{-1} (aba(q_p, v_p, T^{-T} tau) - Tdot v)``. External link
wrenches ``[f; n]`` (inertial frame, at the link frame origin ``o``) are passed to Pinocchio as
``fext`` of the link's parent joint: the spatial force ``(f, n + o x f)`` about the inertial
origin, expressed in the joint frame with ``oMi.actInv``.

Fixed base: ``q = phi``, ``v = phidot``, ``T = P`` and no drift. Pinocchio attaches the root body
to ``universe`` (``model.inertias[0]``) and excludes it from ``centerOfMass``; the robot's CoM
here includes it (all links of the URDF).

Integration. ``integrate(q, v, dt)`` is checked as the exact flow of a *constant* ``v`` in our
coordinates: ``r0 + V0 dt``, ``R <- exp([w0]x dt) R`` and ``phi + phidot dt``, i.e. Pinocchio's
``R^3 x SO(3)`` Lie group integrate with tangent ``[V0 dt, R^T w0 dt]`` (its SO(3) increment is
body-frame) and ``pin.integrate`` of the fixed-base model for the joints (which handles the
``(cos, sin)`` continuous joints). Note that ``pin.integrate`` of the free-flyer model itself
(constant body twist, an SE(3) exponential) differs from this at O(dt^2) when ``w0 x V0 != 0``.

Independent checks of the conversion (``test_oracle_*``, not using our library): converted
``H v`` against ``pin.computeCentroidalMomentum`` (the first six rows of ``H v`` are the
linear momentum and the angular momentum about the base CoM), link-origin velocities from
finite differences of Pinocchio's forward kinematics along a path that is linear in *our*
coordinates, the converted accelerations against central finite differences of a Pinocchio
simulation mapped back to our coordinates, and ``fext`` against ``J^T w``.
"""

from __future__ import annotations

import functools
import importlib.metadata
import warnings
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest

pin = pytest.importorskip('pinocchio')

from ffsim_ros import dynamics as dyn  # noqa: E402
from ffsim_ros.dynamics.mufti.linalg import singular_bodies  # noqa: E402
from ffsim_ros.dynamics.random_urdf import chain_urdf, random_urdf  # noqa: E402

RTOL = 1e-10
G = (0.0, 0.0, -9.81)
ZERO_G = (0.0, 0.0, 0.0)


# --------------------------------------------------------------------------------------------
# Small math helpers (independent of both libraries)
# --------------------------------------------------------------------------------------------


def skew(a: np.ndarray) -> np.ndarray:
    """Cross-product matrix ``[a]x``."""
    return np.array([[0.0, -a[2], a[1]], [a[2], 0.0, -a[0]], [-a[1], a[0], 0.0]])


def quat_to_rot(qxyzw: np.ndarray) -> np.ndarray:
    """Rotation matrix of a unit quaternion ``(x, y, z, w)``."""
    x, y, z, w = qxyzw / np.linalg.norm(qxyzw)
    return np.array(
        [
            [1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
            [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
            [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)],
        ]
    )


def rot_to_quat(R: np.ndarray) -> np.ndarray:
    """Unit quaternion ``(x, y, z, w)`` of a rotation matrix (w >= 0)."""
    q = pin.Quaternion(R)
    out = np.array([q.x, q.y, q.z, q.w])
    return out if out[3] >= 0 else -out


def close(a, b, rtol: float = RTOL) -> tuple[bool, float]:
    """Norm-relative comparison; returns (ok, relative error)."""
    a = np.asarray(a, dtype=float)
    b = np.asarray(b, dtype=float)
    assert a.shape == b.shape, f'shape {a.shape} != {b.shape}'
    scale = max(1.0, float(np.linalg.norm(b)))
    err = float(np.linalg.norm(a - b)) / scale
    return err <= rtol, err


def assert_close(a, b, what: str, rtol: float = RTOL) -> None:
    """Assert the norm-relative error is within ``rtol``."""
    ok, err = close(a, b, rtol)
    assert ok, f'{what}: relative error {err:.3e} > {rtol:.0e}'


def urdf_link_names(xml: str) -> list[str]:
    """All link names of a URDF document."""
    return [e.get('name') for e in ET.fromstring(xml).findall('link')]


# --------------------------------------------------------------------------------------------
# Pinocchio oracle in our conventions
# --------------------------------------------------------------------------------------------


class PinOracle:
    """Pinocchio model wrapped in our conventions (see the module docstring)."""

    def __init__(self, xml: str, floating: bool, gravity) -> None:
        if floating:
            self.model = pin.buildModelFromXML(xml, pin.JointModelFreeFlyer())
        else:
            self.model = pin.buildModelFromXML(xml)
        self.model.gravity = pin.Motion(np.asarray(gravity, float), np.zeros(3))
        self.data = self.model.createData()
        self.floating = floating
        self.gravity = np.asarray(gravity, float)
        first = 2 if floating else 1
        self.joint_ids = list(range(first, self.model.njoints))
        self.joint_names = [self.model.names[j] for j in self.joint_ids]
        self.n = len(self.joint_ids)
        self.nq = 7 + self.n if floating else self.n
        self.nv = 6 + self.n if floating else self.n
        assert self.model.nv == self.nv
        # Base body (merged) inertia: on the free-flyer body, or on `universe` if fixed.
        base_inertia = self.model.inertias[1] if floating else self.model.inertias[0]
        self.c0 = np.array(base_inertia.lever)
        self.m0 = float(base_inertia.mass)
        self.set_order(self.joint_names)

    def set_order(self, names: list[str]) -> None:
        """Use ``names`` (our velocity order of the moving joints)."""
        assert sorted(names) == sorted(self.joint_names), (names, self.joint_names)
        self.order = [self.joint_ids[self.joint_names.index(nm)] for nm in names]
        self.P = np.zeros((self.nv, self.nv))
        off = 6 if self.floating else 0
        if self.floating:
            self.P[:6, :6] = np.eye(6)
        for k, j in enumerate(self.order):
            self.P[self.model.joints[j].idx_v, off + k] = 1.0

    # ---- configuration and velocity maps -------------------------------------------------

    def q_pin(self, q: np.ndarray) -> np.ndarray:
        """Our q -> Pinocchio's q."""
        q = np.asarray(q, float)
        qp = np.zeros(self.model.nq)
        off = 0
        if self.floating:
            R = quat_to_rot(q[3:7])
            qp[:3] = q[:3] - R @ self.c0
            qp[3:7] = q[3:7] / np.linalg.norm(q[3:7])
            off = 7
        for k, j in enumerate(self.order):
            jm = self.model.joints[j]
            phi = q[off + k]
            if jm.nq == 2:
                qp[jm.idx_q : jm.idx_q + 2] = (np.cos(phi), np.sin(phi))
            else:
                assert jm.nq == 1
                qp[jm.idx_q] = phi
        return qp

    def q_ours(self, qp: np.ndarray, phi_ref: np.ndarray | None = None) -> np.ndarray:
        """Pinocchio's q -> our q (continuous angles unwrapped towards ``phi_ref``)."""
        off = 7 if self.floating else 0
        q = np.zeros(self.nq)
        if self.floating:
            R = quat_to_rot(qp[3:7])
            q[:3] = qp[:3] + R @ self.c0
            q[3:7] = qp[3:7] / np.linalg.norm(qp[3:7])
        for k, j in enumerate(self.order):
            jm = self.model.joints[j]
            if jm.nq == 2:
                phi = np.arctan2(qp[jm.idx_q + 1], qp[jm.idx_q])
                if phi_ref is not None:
                    phi += 2 * np.pi * np.round((phi_ref[k] - phi) / (2 * np.pi))
            else:
                phi = qp[jm.idx_q]
            q[off + k] = phi
        return q

    def T(self, q: np.ndarray) -> np.ndarray:
        """Velocity map ``v_p = T(q) v``."""
        T = self.P.copy()
        if self.floating:
            Rt = quat_to_rot(q[3:7]).T
            T[:3, :3] = Rt
            T[:3, 3:6] = skew(self.c0) @ Rt
            T[3:6, 3:6] = Rt
        return T

    def drift(self, q: np.ndarray, v: np.ndarray) -> np.ndarray:
        """``Tdot v`` (see the module docstring)."""
        d = np.zeros(self.nv)
        if self.floating:
            Rt = quat_to_rot(q[3:7]).T
            d[:3] = -Rt @ np.cross(v[3:6], v[:3])
        return d

    def v_pin(self, q, v):
        """Our v -> Pinocchio's v."""
        return self.T(q) @ v

    # ---- kinematics ----------------------------------------------------------------------

    def fk(self, q: np.ndarray) -> np.ndarray:
        """Run forward kinematics and frame placements; returns q_p."""
        qp = self.q_pin(q)
        pin.forwardKinematics(self.model, self.data, qp)
        pin.updateFramePlacements(self.model, self.data)
        return qp

    def frame_id(self, link: str) -> int:
        """Pinocchio frame id of a URDF link."""
        fid = self.model.getFrameId(link, pin.BODY)
        assert fid < self.model.nframes, link
        return fid

    def link_pose(self, q, link):
        """Link frame placement ``(p, R)`` in the inertial frame."""
        self.fk(q)
        M = self.data.oMf[self.frame_id(link)]
        return np.array(M.translation), np.array(M.rotation)

    def link_jacobian(self, q, link):
        """``[linear velocity of the link origin; angular velocity] = J v``, inertial frame."""
        qp = self.q_pin(q)
        J = pin.computeFrameJacobian(
            self.model, self.data, qp, self.frame_id(link), pin.LOCAL_WORLD_ALIGNED
        )
        return np.reshape(J, (6, self.nv)) @ self.T(q)  # eigenpy squeezes 6x1 to (6,)

    def center_of_mass(self, q):
        """CoM of the whole robot (including a fixed base body)."""
        qp = self.q_pin(q)
        c = np.array(pin.centerOfMass(self.model, self.data, qp))
        if self.floating:
            return c
        m = self.data.mass[0]
        return (m * c + self.m0 * self.c0) / (m + self.m0)

    def base_com(self, q):
        """Inertial-frame position of the base body CoM."""
        return np.asarray(q[:3], float) if self.floating else self.c0.copy()

    # ---- dynamics ------------------------------------------------------------------------

    def mass_matrix(self, q):
        """``H = T^T M T``."""
        qp = self.q_pin(q)
        M = pin.crba(self.model, self.data, qp)
        M = np.triu(M) + np.triu(M, 1).T
        T = self.T(q)
        return T.T @ M @ T

    def fext(self, q, link_wrenches):
        """Pinocchio ``fext`` (joint-local spatial forces) of our link wrenches."""
        self.fk(q)
        fext = [pin.Force.Zero() for _ in range(self.model.njoints)]
        for link, w in (link_wrenches or {}).items():
            w = np.asarray(w, float)
            fid = self.frame_id(link)
            o = np.array(self.data.oMf[fid].translation)
            jid = self.model.frames[fid].parentJoint
            f_world = pin.Force(w[:3], w[3:] + np.cross(o, w[:3]))
            fext[jid] = fext[jid] + self.data.oMi[jid].actInv(f_world)
        return fext

    def bias_forces(self, q, v):
        """``c = T^T rnea(q_p, v_p, Tdot v)``."""
        qp = self.q_pin(q)
        T = self.T(q)
        tp = pin.rnea(self.model, self.data, qp, T @ v, self.drift(q, v))
        return T.T @ tp

    def inverse_dynamics(self, q, v, a, link_wrenches=None):
        """Generalized force ``[F; T; tau]`` (ours) producing ``a``."""
        qp = self.q_pin(q)
        T = self.T(q)
        ap = T @ a + self.drift(q, v)
        if link_wrenches:
            fext = self.fext(q, link_wrenches)
            tp = pin.rnea(self.model, self.data, qp, T @ v, ap, fext)
        else:
            tp = pin.rnea(self.model, self.data, qp, T @ v, ap)
        return T.T @ tp

    def forward_dynamics(self, q, v, tau, base_wrench=None, link_wrenches=None):
        """Our acceleration ``[dV0, dw0, phiddot]``."""
        qp = self.q_pin(q)
        T = self.T(q)
        gen = np.zeros(self.nv)
        off = 6 if self.floating else 0
        gen[off:] = tau
        if base_wrench is not None:
            gen[:6] += base_wrench
        tp = np.linalg.solve(T.T, gen)
        if link_wrenches:
            fext = self.fext(q, link_wrenches)
            ap = pin.aba(self.model, self.data, qp, T @ v, tp, fext)
        else:
            ap = pin.aba(self.model, self.data, qp, T @ v, tp)
        return np.linalg.solve(T, ap - self.drift(q, v))

    def momentum(self, q, v, about):
        """``[P; L]`` in the inertial frame, ``L`` about origin / system CoM / base CoM."""
        qp = self.q_pin(q)
        hg = pin.computeCentroidalMomentum(self.model, self.data, qp, self.T(q) @ v)
        P = np.array(hg.linear)
        L_com = np.array(hg.angular)
        c_moving = np.array(self.data.com[0])  # CoM of the moving bodies (the base if floating)
        if about == 'com':
            point = self.center_of_mass(q)
        elif about == 'origin':
            point = np.zeros(3)
        elif about == 'base':
            point = self.base_com(q)
        else:
            raise ValueError(about)
        return np.concatenate([P, L_com + np.cross(c_moving - point, P)])

    def generalized_jacobian(self, q, link):
        """``J* = Jm - Js H0^-1 H0m`` from Pinocchio's quantities (floating base only)."""
        H = self.mass_matrix(q)
        J = self.link_jacobian(q, link)
        return J[:, 6:] - J[:, :6] @ np.linalg.solve(H[:6, :6], H[:6, 6:])

    def generalized_jacobian_pin_coords(self, q, link):
        """Same as :meth:`generalized_jacobian`, computed entirely in Pinocchio coordinates."""
        qp = self.q_pin(q)
        M = pin.crba(self.model, self.data, qp)
        M = np.triu(M) + np.triu(M, 1).T
        J = pin.computeFrameJacobian(
            self.model, self.data, qp, self.frame_id(link), pin.LOCAL_WORLD_ALIGNED
        )
        # joint columns in our order; base columns unchanged (Pinocchio's base twist)
        Jp = np.reshape(J, (6, self.nv)) @ self.P
        Mp = self.P.T @ M @ self.P
        return Jp[:, 6:] - Jp[:, :6] @ np.linalg.solve(Mp[:6, :6], Mp[:6, 6:])

    def integrate(self, q, v, dt):
        """Exact flow of constant ``v`` in our coordinates (see the module docstring)."""
        q = np.asarray(q, float)
        v = np.asarray(v, float)
        out = np.zeros(self.nq)
        off = 0
        if self.floating:
            lg = pin.liegroups.R3() * pin.liegroups.SO3()
            R = quat_to_rot(q[3:7])
            base = lg.integrate(
                np.concatenate([q[:3], q[3:7] / np.linalg.norm(q[3:7])]),
                np.concatenate([v[:3] * dt, R.T @ v[3:6] * dt]),
            )
            out[:7] = base
            off = 7
        # Joints: pin.integrate on the joint part of q_p with the joint part of v_p.
        voff = 6 if self.floating else 0
        dq = np.zeros(self.nv)
        dq[voff:] = (self.P @ v)[voff:]
        qp_new = pin.integrate(self.model, self.q_pin(q), dq * dt)
        joints = self.q_ours(qp_new, phi_ref=q[off:] + v[voff:] * dt)
        out[off:] = joints[off:]
        return out

    def integrate_se3(self, q, v, dt):
        """``pin.integrate`` of the free-flyer model (constant body twist), for diagnostics."""
        qp_new = pin.integrate(self.model, self.q_pin(q), self.T(q) @ v * dt)
        off, voff = (7, 6) if self.floating else (0, 0)
        return self.q_ours(qp_new, phi_ref=q[off:] + v[voff:] * dt)


# --------------------------------------------------------------------------------------------
# Real-style robots
# --------------------------------------------------------------------------------------------


def _inertial(m, xyz, ixx, iyy, izz, ixy=0.0, ixz=0.0, iyz=0.0, rpy='0 0 0'):
    return (
        f'<inertial><origin xyz="{xyz}" rpy="{rpy}"/><mass value="{m}"/>'
        f'<inertia ixx="{ixx}" ixy="{ixy}" ixz="{ixz}" iyy="{iyy}" iyz="{iyz}" izz="{izz}"/>'
        '</inertial>'
    )


def arm7_urdf() -> str:
    """A KUKA-iiwa-like 7-DoF arm with a flange (fixed, massive) and a massless tool frame."""
    links = [
        ('iiwa_link_0', _inertial(5.0, '-0.1 0 0.07', 0.05, 0.06, 0.03)),
        ('iiwa_link_1', _inertial(4.0, '0 -0.03 0.12', 0.1, 0.09, 0.02)),
        ('iiwa_link_2', _inertial(4.0, '0.0003 0.059 0.042', 0.05, 0.018, 0.044)),
        ('iiwa_link_3', _inertial(3.0, '0 0.03 0.13', 0.08, 0.075, 0.01)),
        ('iiwa_link_4', _inertial(2.7, '0 0.067 0.034', 0.03, 0.01, 0.029)),
        ('iiwa_link_5', _inertial(1.7, '0.0001 0.021 0.076', 0.02, 0.018, 0.005)),
        ('iiwa_link_6', _inertial(1.8, '0 0.0006 0.0004', 0.005, 0.0036, 0.0047)),
        ('iiwa_link_7', _inertial(0.3, '0 0 0.02', 0.001, 0.001, 0.001, 1e-5, 2e-5, -3e-5)),
        ('iiwa_flange', _inertial(0.5, '0.01 0 0.03', 0.002, 0.0021, 0.0012, rpy='0.1 0.2 0.3')),
        ('tool0', None),
    ]
    joints = [
        ('iiwa_joint_1', 'revolute', 'iiwa_link_0', 'iiwa_link_1', '0 0 0.1575', '0 0 0'),
        (
            'iiwa_joint_2',
            'revolute',
            'iiwa_link_1',
            'iiwa_link_2',
            '0 0 0.2025',
            '1.5707963267948966 0 3.141592653589793',
        ),
        (
            'iiwa_joint_3',
            'revolute',
            'iiwa_link_2',
            'iiwa_link_3',
            '0 0.2045 0',
            '1.5707963267948966 0 3.141592653589793',
        ),
        (
            'iiwa_joint_4',
            'revolute',
            'iiwa_link_3',
            'iiwa_link_4',
            '0 0 0.2155',
            '1.5707963267948966 0 0',
        ),
        (
            'iiwa_joint_5',
            'revolute',
            'iiwa_link_4',
            'iiwa_link_5',
            '0 0.1845 0',
            '-1.5707963267948966 3.141592653589793 0',
        ),
        (
            'iiwa_joint_6',
            'revolute',
            'iiwa_link_5',
            'iiwa_link_6',
            '0 0 0.2155',
            '1.5707963267948966 0 0',
        ),
        (
            'iiwa_joint_7',
            'revolute',
            'iiwa_link_6',
            'iiwa_link_7',
            '0 0.081 0',
            '-1.5707963267948966 3.141592653589793 0',
        ),
        ('iiwa_flange_joint', 'fixed', 'iiwa_link_7', 'iiwa_flange', '0 0 0.045', '0 0 0'),
        ('tool0_joint', 'fixed', 'iiwa_flange', 'tool0', '0 0 0.1', '0 0 0.7853981633974483'),
    ]
    return _robot('arm7', links, joints)


def panda9_urdf() -> str:
    """A Franka-Panda-like arm: 7 revolute joints, a hand and two prismatic fingers."""
    h = '1.5707963267948966'
    links = [
        ('panda_link0', _inertial(2.9, '-0.025 0 0.06', 0.0126, 0.0283, 0.0287, ixz=0.002)),
        ('panda_link1', _inertial(2.74, '0 -0.0324 -0.0675', 0.018, 0.018, 0.0044, iyz=0.003)),
        ('panda_link2', _inertial(2.74, '0 -0.0696 0.0315', 0.018, 0.0044, 0.018, iyz=-0.003)),
        (
            'panda_link3',
            _inertial(
                2.38,
                '0.0444 0.0287 -0.0282',
                0.008,
                0.0073,
                0.0062,
                ixy=-0.0013,
                ixz=-0.002,
                iyz=0.0011,
            ),
        ),
        (
            'panda_link4',
            _inertial(
                2.38,
                '-0.0385 0.0391 0.0276',
                0.008,
                0.0074,
                0.0063,
                ixy=0.0025,
                ixz=0.0021,
                iyz=-0.0013,
            ),
        ),
        (
            'panda_link5',
            _inertial(2.74, '-0.0002 0.0418 -0.1098', 0.0303, 0.0282, 0.0048, iyz=0.0042),
        ),
        (
            'panda_link6',
            _inertial(
                1.55, '0.0545 0.0082 0.0095', 0.0027, 0.0042, 0.0048, ixy=-0.0003, ixz=-0.0008
            ),
        ),
        (
            'panda_link7',
            _inertial(0.54, '0.0025 0.0035 0.0745', 0.0009, 0.0009, 0.0005, ixy=-0.0001),
        ),
        ('panda_link8', None),
        ('panda_hand', _inertial(0.73, '-0.01 0 0.03', 0.001, 0.0025, 0.0017)),
        ('panda_leftfinger', _inertial(0.015, '0 0.0145 0.0235', 2.4e-6, 2.7e-6, 1.2e-6)),
        (
            'panda_rightfinger',
            _inertial(
                0.015, '0 -0.0145 0.0235', 2.4e-6, 2.7e-6, 1.2e-6, rpy='0 0 3.141592653589793'
            ),
        ),
        ('panda_hand_tcp', None),
    ]
    joints = [
        ('panda_joint1', 'revolute', 'panda_link0', 'panda_link1', '0 0 0.333', '0 0 0'),
        ('panda_joint2', 'revolute', 'panda_link1', 'panda_link2', '0 0 0', f'-{h} 0 0'),
        ('panda_joint3', 'revolute', 'panda_link2', 'panda_link3', '0 -0.316 0', f'{h} 0 0'),
        ('panda_joint4', 'revolute', 'panda_link3', 'panda_link4', '0.0825 0 0', f'{h} 0 0'),
        ('panda_joint5', 'revolute', 'panda_link4', 'panda_link5', '-0.0825 0.384 0', f'-{h} 0 0'),
        ('panda_joint6', 'revolute', 'panda_link5', 'panda_link6', '0 0 0', f'{h} 0 0'),
        ('panda_joint7', 'revolute', 'panda_link6', 'panda_link7', '0.088 0 0', f'{h} 0 0'),
        ('panda_joint8', 'fixed', 'panda_link7', 'panda_link8', '0 0 0.107', '0 0 0'),
        (
            'panda_hand_joint',
            'fixed',
            'panda_link8',
            'panda_hand',
            '0 0 0',
            '0 0 -0.7853981633974483',
        ),
        (
            'panda_finger_joint1',
            'prismatic',
            'panda_hand',
            'panda_leftfinger',
            '0 0 0.0584',
            '0 0 0',
            '0 1 0',
            (0.0, 0.04),
        ),
        (
            'panda_finger_joint2',
            'prismatic',
            'panda_hand',
            'panda_rightfinger',
            '0 0 0.0584',
            '0 0 0',
            '0 -1 0',
            (0.0, 0.04),
        ),
        ('panda_hand_tcp_joint', 'fixed', 'panda_hand', 'panda_hand_tcp', '0 0 0.1034', '0 0 0'),
    ]
    return _robot('panda9', links, joints)


def _robot(name, links, joints) -> str:
    out = [f'<?xml version="1.0"?>\n<robot name="{name}">']
    for ln, inertial in links:
        out.append(f'<link name="{ln}">{inertial or ""}</link>')
    for j in joints:
        jn, kind, parent, child, xyz, rpy = j[:6]
        axis = j[6] if len(j) > 6 else '0 0 1'
        lim = j[7] if len(j) > 7 else (-2.9, 2.9)
        s = (
            f'<joint name="{jn}" type="{kind}"><parent link="{parent}"/>'
            f'<child link="{child}"/><origin xyz="{xyz}" rpy="{rpy}"/>'
        )
        if kind != 'fixed':
            s += f'<axis xyz="{axis}"/>'
            s += f'<limit lower="{lim[0]}" upper="{lim[1]}" effort="50" velocity="2"/>'
        out.append(s + '</joint>')
    out.append('</robot>')
    return '\n'.join(out)


# --------------------------------------------------------------------------------------------
# Cases
# --------------------------------------------------------------------------------------------


def _random_tree(n: int, k: int) -> str:
    if k == 0:
        return random_urdf(k, n)
    return random_urdf(k, n, branching=0.6, prismatic=0.3, continuous=0.3)


SOURCES = {}
for _n in range(0, 13):
    for _k in (0, 1):
        if _n == 0 and _k == 1:
            continue
        SOURCES[f'rand{_k}_n{_n}'] = functools.partial(_random_tree, _n, _k)
SOURCES['chain6'] = functools.partial(chain_urdf, 6)
SOURCES['arm7'] = arm7_urdf
SOURCES['panda9'] = panda9_urdf


# Real robots as their makers describe them (example-robot-data, test-only): CAD inertias
# with triangle-inequality violations and point masses, fixed sensor frames, continuous joints
# stored as (cos, sin) by Pinocchio, prismatic fingers, branched trees.
ERD_ROBOTS = {
    'panda': 'panda_description/urdf/panda.urdf',
    'ur5': 'ur_description/urdf/ur5_robot.urdf',
    'kinova': 'kinova_description/robots/kinova.urdf',
    'xarm7': 'xarm_description/urdf/xarm7.urdf',
    'z1': 'z1_description/urdf/z1.urdf',
    'talos_left_arm': 'talos_data/robots/talos_left_arm.urdf',
    'baxter': 'baxter_description/urdf/baxter.urdf',
    'tiago': 'tiago_description/robots/tiago.urdf',
    'solo12': 'solo_description/robots/solo12.urdf',
    'double_pendulum': 'double_pendulum_description/urdf/double_pendulum_continuous.urdf',
    'icub_reduced': 'icub_description/robots/icub_reduced.urdf',
}


def erd_robots_dir() -> Path:
    """The ``robots`` folder of the installed example-robot-data (requirements/dev.txt)."""
    try:
        dist = importlib.metadata.distribution('example-robot-data')
    except importlib.metadata.PackageNotFoundError:
        return Path('example-robot-data is not installed')
    return Path(str(dist.locate_file('cmeel.prefix/share/example-robot-data/robots')))


@functools.cache
def erd_urdf(rel: str) -> str:
    """A real robot's URDF text."""
    return (erd_robots_dir() / rel).read_text()


for _name, _rel in ERD_ROBOTS.items():
    SOURCES[f'erd_{_name}'] = functools.partial(erd_urdf, _rel)

CASES = []
for _src in SOURCES:
    for _floating in (True, False):
        if _src == 'rand0_n0' and not _floating:
            continue  # no degree of freedom at all
        for _g in ('g0', 'g'):
            CASES.append((_src, _floating, _g))
CASE_IDS = [f'{s}-{"float" if f else "fixed"}-{g}' for s, f, g in CASES]
FLOAT_CASES = [c for c in CASES if c[1]]
FLOAT_IDS = [i for i, c in zip(CASE_IDS, CASES, strict=True) if c[1]]


@functools.cache
def oracle(src: str, floating: bool, g: str) -> PinOracle:
    """Pinocchio oracle of a case (cached)."""
    return PinOracle(SOURCES[src](), floating, G if g == 'g' else ZERO_G)


@functools.cache
def ours(src: str, floating: bool, g: str):
    """Our model of a case (cached); the oracle is re-ordered to our joint order."""
    with warnings.catch_warnings():  # real robots' inconsistent CAD inertias: tested below
        warnings.simplefilter('ignore', dyn.InertiaWarning)
        model = dyn.load_urdf(
            SOURCES[src](), floating_base=floating, gravity=G if g == 'g' else ZERO_G
        )
    oracle(src, floating, g).set_order(list(model.joint_names))
    return model


def states(case, count: int = 2):
    """Deterministic random states ``(q, v)`` of a case in our coordinates."""
    orc = oracle(*case)
    rng = np.random.default_rng([CASES.index(case), 12345])
    out = []
    for _ in range(count):
        q = np.zeros(orc.nq)
        v = rng.normal(size=orc.nv)
        off = 0
        if orc.floating:
            q[:3] = rng.uniform(-2, 2, 3)
            quat = rng.normal(size=4)
            q[3:7] = quat / np.linalg.norm(quat)
            off = 7
        q[off:] = rng.uniform(-2.5, 2.5, orc.n)
        # continuous joints beyond +-pi too (plain angles)
        for k, j in enumerate(orc.order):
            if orc.model.joints[j].nq == 2:
                q[off + k] = rng.uniform(-7.0, 7.0)
        out.append((q, v))
    return out


def links_of(case) -> list[str]:
    """All URDF links of a case."""
    return urdf_link_names(SOURCES[case[0]]())


# --------------------------------------------------------------------------------------------
# Oracle self-checks (do not use our library)
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize('case', CASES, ids=CASE_IDS)
def test_oracle_momentum_matches_converted_mass_matrix(case):
    """Rows 0..5 of ``T^T M T v`` = [P; L about base CoM] from Pinocchio's centroidal momentum."""
    orc = oracle(*case)
    for q, v in states(case):
        h = orc.mass_matrix(q) @ v
        ref = orc.momentum(q, v, 'base')
        if orc.floating:
            assert_close(h[:6], ref, 'H v vs centroidal momentum')
        # Kinetic energy is conserved by the map as well (and is positive).
        qp = orc.q_pin(q)
        ke = pin.computeKineticEnergy(orc.model, orc.data, qp, orc.T(q) @ v)
        assert_close(0.5 * v @ h, ke, 'kinetic energy')


@pytest.mark.parametrize('case', CASES, ids=CASE_IDS)
def test_oracle_velocity_map_finite_difference(case):
    """Link-origin velocities along a path linear in our coordinates match ``J T v``."""
    orc = oracle(*case)
    links = links_of(case)
    eps = 1e-6
    for q, v in states(case, 1):
        for link in links:
            p_plus, R_plus = orc.link_pose(orc.integrate(q, v, eps), link)
            p_minus, R_minus = orc.link_pose(orc.integrate(q, v, -eps), link)
            fd_lin = (p_plus - p_minus) / (2 * eps)
            dR = (R_plus - R_minus) / (2 * eps)
            _, R = orc.link_pose(q, link)
            W = dR @ R.T
            fd_ang = np.array([W[2, 1], W[0, 2], W[1, 0]])
            J = orc.link_jacobian(q, link)
            assert_close(np.concatenate([fd_lin, fd_ang]), J @ v, f'fd velocity {link}', 1e-7)


def _pin_deriv(orc: PinOracle, q_ref, tau, qp, vp):
    """Pinocchio acceleration under our constant generalized force ``[0; tau]``."""
    qo = orc.q_ours(qp, q_ref[7 if orc.floating else 0 :])
    gen = np.zeros(orc.nv)
    gen[6 if orc.floating else 0 :] = tau
    return pin.aba(orc.model, orc.data, qp, vp, np.linalg.solve(orc.T(qo).T, gen))


def _pin_rk4(orc: PinOracle, deriv, qp, vp, dt):
    """One RK4 step of Pinocchio's dynamics (state: tangent displacement from qp, v_p)."""

    def f(x):
        qx = pin.integrate(orc.model, qp, x[: orc.nv])
        return np.concatenate([x[orc.nv :], deriv(qx, x[orc.nv :])])

    x0 = np.concatenate([np.zeros(orc.nv), vp])
    k1 = f(x0)
    k2 = f(x0 + dt / 2 * k1)
    k3 = f(x0 + dt / 2 * k2)
    k4 = f(x0 + dt * k3)
    x1 = x0 + dt / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
    return pin.integrate(orc.model, qp, x1[: orc.nv]), x1[orc.nv :]


@pytest.mark.parametrize('case', CASES, ids=CASE_IDS)
def test_oracle_acceleration_map_finite_difference(case):
    """Converted forward dynamics = central difference of a Pinocchio simulation."""
    orc = oracle(*case)
    rng = np.random.default_rng(7)
    h = 1e-5
    for q, v in states(case, 1):
        tau = rng.normal(size=orc.n)
        a = orc.forward_dynamics(q, v, tau)
        # Simulate in Pinocchio coordinates, holding *our* generalized force constant.
        deriv = functools.partial(_pin_deriv, orc, q, tau)
        qp0 = orc.q_pin(q)
        vp0 = orc.T(q) @ v
        vs = []
        for dt in (h, -h):
            qp1, vp1 = _pin_rk4(orc, deriv, qp0, vp0, dt)
            q1 = orc.q_ours(qp1, q[7 if orc.floating else 0 :])
            vs.append(np.linalg.solve(orc.T(q1), vp1))
        fd = (vs[0] - vs[1]) / (2 * h)
        assert_close(fd, a, 'fd acceleration', 1e-6)


@pytest.mark.parametrize('case', CASES, ids=CASE_IDS)
def test_oracle_fext_matches_jacobian_transpose(case):
    """Pinocchio ``fext`` of our link wrenches = ``J^T w`` added to the generalized force."""
    orc = oracle(*case)
    rng = np.random.default_rng(3)
    links = links_of(case)
    for q, v in states(case, 1):
        wrenches = {ln: rng.normal(size=6) for ln in rng.choice(links, 3, replace=False)}
        tau = rng.normal(size=orc.n)
        a1 = orc.forward_dynamics(q, v, tau, link_wrenches=wrenches)
        gen = sum(orc.link_jacobian(q, ln).T @ w for ln, w in wrenches.items())
        off = 6 if orc.floating else 0
        a2 = orc.forward_dynamics(
            q, v, tau + gen[off:], base_wrench=gen[:6] if orc.floating else None
        )
        assert_close(a1, a2, 'fext vs J^T w')
        # and the equation of motion H a + c = tau + J^T w in our coordinates
        H = orc.mass_matrix(q)
        c = orc.bias_forces(q, v)
        rhs = gen.copy()
        rhs[off:] += tau
        assert_close(H @ a1 + c, rhs, 'H a + c = Q')


# --------------------------------------------------------------------------------------------
# Our library against the oracle
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize('case', CASES, ids=CASE_IDS)
def test_structure(case):
    """Sizes, joint names and link names."""
    model = ours(*case)
    orc = oracle(*case)
    assert model.nq == orc.nq
    assert model.nv == orc.nv
    assert sorted(model.joint_names) == sorted(orc.joint_names)
    missing = set(links_of(case)) - set(model.link_names)
    assert not missing, f'links missing from Model.link_names: {sorted(missing)}'
    q0 = np.asarray(dyn.neutral(model))
    assert q0.shape == (orc.nq,)
    if orc.floating:
        assert abs(np.linalg.norm(q0[3:7]) - 1.0) < 1e-14


@pytest.mark.parametrize('case', CASES, ids=CASE_IDS)
def test_mass_matrix(case):
    """``mass_matrix`` and ``inertia_blocks``."""
    model = ours(*case)
    orc = oracle(*case)
    for q, _ in states(case):
        H_ref = orc.mass_matrix(q)
        H = np.asarray(dyn.mass_matrix(model, q))
        assert_close(H, H_ref, 'mass_matrix')
        if orc.floating:
            H0, H0m, Hm = (np.asarray(x) for x in dyn.inertia_blocks(model, q))
            assert_close(H0, H_ref[:6, :6], 'inertia_blocks H0')
            assert_close(H0m, H_ref[:6, 6:], 'inertia_blocks H0m')
            assert_close(Hm, H_ref[6:, 6:], 'inertia_blocks Hm')


@pytest.mark.parametrize('case', CASES, ids=CASE_IDS)
def test_bias_forces(case):
    """``bias_forces`` (Coriolis/centrifugal + gravity)."""
    model = ours(*case)
    orc = oracle(*case)
    for q, v in states(case):
        assert_close(dyn.bias_forces(model, q, v), orc.bias_forces(q, v), 'bias_forces')
        assert_close(
            dyn.bias_forces(model, q, np.zeros(orc.nv)),
            orc.bias_forces(q, np.zeros(orc.nv)),
            'bias_forces(v=0)',
        )


@pytest.mark.parametrize('case', CASES, ids=CASE_IDS)
def test_forward_dynamics(case):
    """``forward_dynamics`` with joint efforts, a base wrench and link wrenches."""
    model = ours(*case)
    orc = oracle(*case)
    rng = np.random.default_rng(11)
    links = links_of(case)
    for q, v in states(case):
        tau = rng.normal(size=orc.n)
        a = dyn.forward_dynamics(model, q, v, tau)
        assert_close(a, orc.forward_dynamics(q, v, tau), 'forward_dynamics')
        wrenches = {str(ln): rng.normal(size=6) for ln in rng.choice(links, 3, replace=False)}
        base_wrench = rng.normal(size=6) if orc.floating else None
        kw = {'link_wrenches': wrenches}
        if base_wrench is not None:
            kw['base_wrench'] = base_wrench
        a = dyn.forward_dynamics(model, q, v, tau, **kw)
        ref = orc.forward_dynamics(q, v, tau, base_wrench=base_wrench, link_wrenches=wrenches)
        assert_close(a, ref, 'forward_dynamics with wrenches')


@pytest.mark.parametrize('case', CASES, ids=CASE_IDS)
def test_inverse_dynamics(case):
    """``inverse_dynamics`` with and without link wrenches."""
    model = ours(*case)
    orc = oracle(*case)
    rng = np.random.default_rng(13)
    links = links_of(case)
    for q, v in states(case):
        a = rng.normal(size=orc.nv)
        assert_close(
            dyn.inverse_dynamics(model, q, v, a), orc.inverse_dynamics(q, v, a), 'inverse_dynamics'
        )
        wrenches = {str(ln): rng.normal(size=6) for ln in rng.choice(links, 2, replace=False)}
        assert_close(
            dyn.inverse_dynamics(model, q, v, a, link_wrenches=wrenches),
            orc.inverse_dynamics(q, v, a, link_wrenches=wrenches),
            'inverse_dynamics with link wrenches',
        )


@pytest.mark.parametrize('case', CASES, ids=CASE_IDS)
@pytest.mark.parametrize('about', ['origin', 'com', 'base'])
def test_momentum(case, about):
    """``momentum`` about the inertial origin, the system CoM and the base CoM."""
    model = ours(*case)
    orc = oracle(*case)
    for q, v in states(case):
        assert_close(
            dyn.momentum(model, q, v, about=about), orc.momentum(q, v, about), f'momentum {about}'
        )


@pytest.mark.parametrize('case', CASES, ids=CASE_IDS)
def test_center_of_mass(case):
    """``center_of_mass`` of the whole robot."""
    model = ours(*case)
    orc = oracle(*case)
    for q, _ in states(case):
        assert_close(dyn.center_of_mass(model, q), orc.center_of_mass(q), 'center_of_mass')


@pytest.mark.parametrize('case', CASES, ids=CASE_IDS)
def test_link_poses(case):
    """``link_pose`` of every URDF link (moving, merged fixed children, massless frames)."""
    model = ours(*case)
    orc = oracle(*case)
    for q, _ in states(case):
        for link in links_of(case):
            p, R = dyn.link_pose(model, q, link)
            p_ref, R_ref = orc.link_pose(q, link)
            assert_close(p, p_ref, f'link_pose position {link}')
            assert_close(R, R_ref, f'link_pose rotation {link}')


@pytest.mark.parametrize('case', CASES, ids=CASE_IDS)
def test_link_jacobians(case):
    """``link_jacobian`` of every URDF link."""
    model = ours(*case)
    orc = oracle(*case)
    for q, _ in states(case):
        for link in links_of(case):
            assert_close(
                dyn.link_jacobian(model, q, link), orc.link_jacobian(q, link), f'jacobian {link}'
            )


@pytest.mark.parametrize('case', FLOAT_CASES, ids=FLOAT_IDS)
def test_generalized_jacobian(case):
    """``generalized_jacobian`` (J*) of every URDF link."""
    model = ours(*case)
    orc = oracle(*case)
    for q, _ in states(case):
        for link in links_of(case):
            ref = orc.generalized_jacobian(q, link)
            # self-check: J* does not depend on the base parameterization
            assert_close(orc.generalized_jacobian_pin_coords(q, link), ref, 'J* self-check', 1e-9)
            assert_close(dyn.generalized_jacobian(model, q, link), ref, f'J* {link}')


@pytest.mark.parametrize('case', FLOAT_CASES, ids=FLOAT_IDS)
def test_free_floating_terms(case):
    """Every field of ``free_floating_terms`` (what the controller evaluates) from Pinocchio's
    inertia matrix, nonlinear effects and frame Jacobian."""
    model = ours(*case)
    orc = oracle(*case)
    link = links_of(case)[-1]
    for q, v in states(case):
        H, c, J = orc.mass_matrix(q), orc.bias_forces(q, v), orc.link_jacobian(q, link)
        B = np.linalg.solve(H[:6, :6], H[:6, 6:])
        terms = dyn.free_floating_terms(model, q, v, link)
        assert_close(terms.H, H, 'H')
        assert_close(terms.c, c, 'c')
        assert_close(terms.B, B, 'B')
        assert_close(terms.J, J, f'J {link}')
        assert_close(terms.J_star, orc.generalized_jacobian(q, link), f'J* {link}')
        assert_close(terms.H_star, H[6:, 6:] - H[:6, 6:].T @ B, 'H*')
        c_star = c[6:] - H[:6, 6:].T @ np.linalg.solve(H[:6, :6], c[:6])
        assert_close(terms.c_star, c_star, 'c*')


@pytest.mark.parametrize('case', CASES, ids=CASE_IDS)
def test_integrate(case):
    """``integrate`` = exact flow of constant ``v`` in our coordinates."""
    model = ours(*case)
    orc = oracle(*case)
    for q, v in states(case):
        for dt in (1e-3, 0.1, 0.7):
            got = np.asarray(dyn.integrate(model, q, v, dt))
            ref = orc.integrate(q, v, dt)
            if orc.floating:
                # the quaternion sign is not unique
                if np.dot(got[3:7], ref[3:7]) < 0:
                    ref[3:7] *= -1
            ok, err = close(got, ref)
            if not ok and orc.floating:
                se3 = orc.integrate_se3(q, v, dt)
                if np.dot(got[3:7], se3[3:7]) < 0:
                    se3[3:7] *= -1
                _, err_se3 = close(got, se3)
                pytest.fail(
                    f'integrate dt={dt}: relative error {err:.3e} vs R3xSO3 flow, '
                    f'{err_se3:.3e} vs pin.integrate of the free-flyer (SE3)'
                )
            assert ok, f'integrate dt={dt}: relative error {err:.3e}'


@pytest.mark.parametrize('case', CASES, ids=CASE_IDS)
def test_energy(case):
    """``kinetic_energy`` and ``potential_energy``."""
    model = ours(*case)
    orc = oracle(*case)
    for q, v in states(case):
        qp = orc.q_pin(q)
        ke = pin.computeKineticEnergy(orc.model, orc.data, qp, orc.T(q) @ v)
        assert_close(dyn.kinetic_energy(model, q, v), ke, 'kinetic_energy')
        # -sum m g.c over all bodies (Pinocchio's zero level is the inertial origin); a fixed
        # base body is Pinocchio's `universe`, which computePotentialEnergy leaves out
        pe = pin.computePotentialEnergy(orc.model, orc.data, qp)
        if not orc.floating:
            pe -= orc.m0 * float(orc.gravity @ orc.c0)
        assert_close(dyn.potential_energy(model, q), pe, 'potential_energy')


# --------------------------------------------------------------------------------------------
# Real robots: what is special about them, and Mufti's methods on them
# --------------------------------------------------------------------------------------------

ERD_FLOAT_CASES = [c for c in FLOAT_CASES if c[0].startswith('erd_')]
ERD_FLOAT_IDS = [i for i, c in zip(FLOAT_IDS, FLOAT_CASES, strict=True) if c[0].startswith('erd_')]


def test_real_robot_urdfs_are_installed():
    """The real-robot cases run (example-robot-data comes with ``make setup``)."""
    robots = erd_robots_dir()
    assert robots.is_dir(), f'example-robot-data robots folder not found: {robots}'
    for rel in ERD_ROBOTS.values():
        assert (robots / rel).is_file(), rel


def test_real_robot_inertias_load_as_given_with_warnings():
    """TIAGo's and TALOS's CAD inertias violate the triangle inequality or are point masses:
    they load as Pinocchio loads them, each inconsistent link named in a warning, and
    ``strict_inertia=True`` rejects them naming the link."""
    tiago = erd_urdf(ERD_ROBOTS['tiago'])
    with pytest.warns(dyn.InertiaWarning) as record:
        model = dyn.load_urdf(tiago)
    named = {str(w.message).split(':')[0] for w in record}
    assert named and all(n.startswith('link ') for n in named), named
    pm = pin.buildModelFromXML(tiago, pin.JointModelFreeFlyer())
    assert model.total_mass == pytest.approx(sum(i.mass for i in pm.inertias), rel=1e-12)
    with pytest.raises(ValueError, match='link .*(triangle|semi-definite)'):
        dyn.load_urdf(tiago, strict_inertia=True)


@pytest.mark.parametrize('method', ['crba', 'kkt', 'nullspace', 'multipliers', 'barycentric'])
@pytest.mark.parametrize('case', ERD_FLOAT_CASES, ids=ERD_FLOAT_IDS)
def test_forward_dynamics_methods_on_real_robots(case, method):
    """Every forward-dynamics method on real robots with a floating base equals Pinocchio's
    ABA to 1e-8 (relative): CRBA + Cholesky, and Mufti's KKT (seed 001 eqs. 10/49), null-space
    (eq. 40) and multiplier (eqs. 14/50) forms; the barycentric forms (eqs. 16-38, 51) where
    the seed defines them (ball and pin joints) and a clear error where it does not."""
    model = ours(*case)
    orc = oracle(*case)
    rng = np.random.default_rng(21)
    if method == 'barycentric':
        kinds = set(model.joint_types)
        point_masses = singular_bodies(model.arrays.mass, model.arrays.inertia)
        if not kinds <= {'revolute', 'continuous', 'spherical'} or point_masses.size:
            q, v = states(case)[0]
            why = 'expected spherical or revolute joints|singular ones .point masses or rods'
            with pytest.raises(ValueError, match=why):
                dyn.forward_dynamics(model, q, v, np.zeros(orc.n), method=method)
            return
    for q, v in states(case):
        tau = rng.normal(size=orc.n)
        ref = orc.forward_dynamics(q, v, tau)
        assert_close(dyn.forward_dynamics(model, q, v, tau, method=method), ref, method, 1e-8)
