"""Grasp as a weld [M eqs. 62-66] and the capture of a free target (:mod:`ffsim_ros.scene`).

* :func:`~ffsim_ros.dynamics.weld_models` against the one-tree model a URDF with a fixed joint
  between the end effector and the target gives (the loader's own link merge), and against
  Pinocchio on that URDF (centre of mass, link placements, kinetic energy).
* The capture impulse: total momentum unchanged to 1e-10, relative twist zero after, energy
  lost equal to the closed form ``d^T K^-1 d / 2`` and to the kinetic energies.
* The weld wrench: read off the robot's base rows, it also satisfies the robot's joint rows
  (the robot's own forward dynamics under that wrench gives the welded accelerations).
* A capture in a :class:`~ffsim_ros.scene.Scene`, then 2 s of the welded system, against
  Pinocchio's ABA on the combined URDF integrated independently (RK4 on its Lie group), and
  against Pinocchio's constraint dynamics (two free-flyer trees held by a 6D constraint).
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

import ffsim_ros.dynamics as D
from ffsim_ros.dynamics.lie import matrix_to_quat, quat_to_matrix, rpy_to_matrix
from ffsim_ros.scene import (
    ContactEvent,
    Gripper,
    Handle,
    ImpactLaw,
    Scene,
    Sphere,
    capture_impulse,
    rigid_target,
    shapes_from_urdf,
    weld_wrench,
    welded_model,
)

try:  # Pinocchio is a test-only oracle: only the tests comparing with it need it
    import pinocchio as pin
except ImportError:  # pragma: no cover - exercised where pinocchio is not installed
    pin = None

needs_pinocchio = pytest.mark.skipif(pin is None, reason='pinocchio (test-only oracle) missing')

ROBOT_URDF = Path(__file__).resolve().parents[1] / 'urdf' / 'ffsim_servicer_7dof.urdf'
EE = 'ee_link'

TARGET_URDF = """<robot name="tgt">
  <link name="{p}hub"><inertial><origin xyz="0.02 -0.01 0.03"/><mass value="12"/>
    <inertia ixx="0.5" ixy="0.02" ixz="0" iyy="0.6" iyz="0.01" izz="0.7"/></inertial></link>
  <link name="{p}panel"><inertial><origin xyz="0.3 0 0"/><mass value="2"/>
    <inertia ixx="0.02" ixy="0" ixz="0" iyy="0.05" iyz="0" izz="0.06"/></inertial></link>
  <joint name="{p}hinge" type="revolute"><parent link="{p}hub"/><child link="{p}panel"/>
    <origin xyz="0.25 0.05 0" rpy="0.1 0 0.3"/><axis xyz="0 0 1"/>
    <limit lower="-3" upper="3" effort="10" velocity="2"/></joint>
</robot>"""

WELD_RPY = (0.3, -0.2, 0.5)
WELD_XYZ = (0.05, 0.02, 0.15)


def _combined_xml(prefix: str) -> str:
    """The robot URDF with the target's links attached to the end effector by a fixed
    joint (the one tree the weld must equal)."""
    robot = ROBOT_URDF.read_text()
    inner = re.search(r'<robot[^>]*>(.*)</robot>', TARGET_URDF.format(p=prefix), re.S).group(1)
    weld = (
        f'<joint name="weld" type="fixed"><parent link="{EE}"/><child link="{prefix}hub"/>'
        f'<origin xyz="{" ".join(map(str, WELD_XYZ))}" rpy="{" ".join(map(str, WELD_RPY))}"/>'
        '</joint>'
    )
    return robot.replace('</robot>', inner + weld + '</robot>')


@pytest.fixture(scope='module')
def robot():
    return D.load_urdf(str(ROBOT_URDF), floating_base=True)


@pytest.fixture(scope='module')
def welded(robot):
    target = D.load_urdf(TARGET_URDF.format(p=''), floating_base=True)
    return D.weld_models(
        robot,
        EE,
        target,
        rotation=rpy_to_matrix(np.array(WELD_RPY)),
        translation=WELD_XYZ,
        prefix='t/',
    )


def _random_state(model, rng):
    q = D.neutral(model)
    q[:3] = rng.normal(size=3)
    quat = rng.normal(size=4)
    q[3:7] = quat / np.linalg.norm(quat)
    q[7:] = rng.uniform(-1.0, 1.0, model.n)
    return q, rng.normal(size=model.nv) * 0.3


def test_weld_equals_the_fixed_joint_tree(robot, welded):
    combined = D.load_urdf(_combined_xml('t/'), floating_base=True)
    assert welded.joint_names == combined.joint_names
    assert welded.total_mass == pytest.approx(combined.total_mass, rel=1e-15)
    rng = np.random.default_rng(1)
    for _ in range(3):
        q, v = _random_state(welded, rng)
        tau = rng.normal(size=welded.n)
        H = D.mass_matrix(welded, q)
        np.testing.assert_allclose(H, D.mass_matrix(combined, q), atol=1e-12 * np.abs(H).max())
        a = D.aba(welded, q, v, tau)
        np.testing.assert_allclose(a, D.aba(combined, q, v, tau), atol=1e-10 * np.abs(a).max())
        for link in ('t/hub', 't/panel', EE, 'base_link'):
            for x, y in zip(
                D.link_pose(welded, q, link), D.link_pose(combined, q, link), strict=True
            ):
                np.testing.assert_allclose(x, y, atol=1e-12)


@needs_pinocchio
def test_weld_against_pinocchio(welded):
    """Centre of mass, link placements and kinetic energy of the welded model against
    Pinocchio on the combined URDF (free-flyer root at the base link origin)."""
    pm = pin.buildModelFromXML(_combined_xml('t/'), pin.JointModelFreeFlyer())
    pd = pm.createData()
    rng = np.random.default_rng(2)
    q, v = _random_state(welded, rng)
    qp, vp = _to_pin(pm, welded, q, v)
    pin.forwardKinematics(pm, pd, qp, vp)
    pin.updateFramePlacements(pm, pd)
    np.testing.assert_allclose(
        pin.centerOfMass(pm, pd, qp), D.center_of_mass(welded, q), atol=1e-12
    )
    for link in ('t/hub', 't/panel', EE):
        M = pd.oMf[pm.getFrameId(link)]
        p, R = D.link_pose(welded, q, link)
        np.testing.assert_allclose(M.translation, p, atol=1e-12)
        np.testing.assert_allclose(M.rotation, R, atol=1e-12)
    ke = pin.computeKineticEnergy(pm, pd, qp, vp)
    assert D.kinetic_energy(welded, q, v) == pytest.approx(ke, rel=1e-12)


def _to_pin(pm, model, q, v):
    """Our ``(q, v)`` as Pinocchio's: root link pose and body-frame twist at its origin,
    joints by name."""
    p, quat, lin, ang = D.base_link_state(model, q, v)
    R = quat_to_matrix(quat)
    qp = pin.neutral(pm)
    vp = np.zeros(pm.nv)
    qp[:3], qp[3:7] = p, quat
    vp[:3], vp[3:6] = R.T @ lin, R.T @ ang
    for k, name in enumerate(model.joint_names):
        j = pm.getJointId(name)
        qp[pm.idx_qs[j]] = q[7 + k]
        vp[pm.idx_vs[j]] = v[6 + k]
    return qp, vp


def _pin_rk4(pm, pd, qp, vp, dt):
    def f(x):
        qx = pin.integrate(pm, qp, x[: pm.nv])
        return np.concatenate([x[pm.nv :], pin.aba(pm, pd, qx, x[pm.nv :], np.zeros(pm.nv))])

    x0 = np.concatenate([np.zeros(pm.nv), vp])
    k1 = f(x0)
    k2 = f(x0 + dt / 2 * k1)
    k3 = f(x0 + dt / 2 * k2)
    k4 = f(x0 + dt * k3)
    x1 = x0 + dt / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
    return pin.integrate(pm, qp, x1[: pm.nv]), x1[pm.nv :]


def _states(robot, rng):
    q_r = D.neutral(robot)
    q_r[7:] = rng.uniform(-0.7, 0.7, robot.n)
    v_r = np.r_[rng.normal(size=6) * 0.02, rng.normal(size=robot.n) * 0.1]
    return q_r, v_r


def test_capture_impulse_conserves_momentum_and_welds(robot):
    rng = np.random.default_rng(4)
    q_r, v_r = _states(robot, rng)
    target = D.load_urdf(TARGET_URDF.format(p=''), floating_base=True)
    o, R = D.link_pose(robot, q_r, EE)
    q_t, v_t = _random_state(target, rng)
    q_t[:3] = o + R @ np.array([0.0, 0.0, 0.3])
    point = o + R @ np.array([0.0, 0.0, 0.1])
    cap = capture_impulse(robot, q_r, v_r, EE, target, q_t, v_t, 'hub', point)
    before = D.momentum(robot, q_r, v_r) + D.momentum(target, q_t, v_t)
    after = D.momentum(robot, q_r, cap.v_robot) + D.momentum(target, q_t, cap.v_target)
    np.testing.assert_allclose(after, before, atol=1e-10)
    # the two frames move as one after (6-row relative twist zero at the point)
    from ffsim_ros.scene import contact_jacobian

    Gr = contact_jacobian(robot, q_r, EE, point)
    Gt = contact_jacobian(target, q_t, 'hub', point)
    np.testing.assert_allclose(Gr @ cap.v_robot - Gt @ cap.v_target, 0.0, atol=1e-12)
    np.testing.assert_allclose(cap.relative_twist, Gt @ v_t - Gr @ v_r, atol=1e-15)
    k0 = D.kinetic_energy(robot, q_r, v_r) + D.kinetic_energy(target, q_t, v_t)
    k1 = D.kinetic_energy(robot, q_r, cap.v_robot) + D.kinetic_energy(target, q_t, cap.v_target)
    assert cap.energy_loss == pytest.approx(k0 - k1, abs=1e-12 * k0)
    # the impulse on the target is -L: its momentum change is the impulse (force part) and
    # the angular impulse about the point
    dp = D.momentum(target, q_t, cap.v_target) - D.momentum(target, q_t, v_t)
    np.testing.assert_allclose(dp[:3], cap.impulse[:3], atol=1e-12)
    np.testing.assert_allclose(
        dp[3:], np.cross(point, cap.impulse[:3]) + cap.impulse[3:], atol=1e-12
    )


def test_weld_wrench_satisfies_the_robot_joint_rows(robot):
    """The wrench is read off the robot's six base rows; the robot's forward dynamics under
    it (and ``tau``) must reproduce the welded accelerations in every row."""
    rng = np.random.default_rng(6)
    target = D.load_urdf(TARGET_URDF.format(p=''), floating_base=True)
    q_r, v_r = _states(robot, rng)
    o, R = D.link_pose(robot, q_r, EE)
    q_t, _ = _random_state(target, rng)
    q_t[:3] = o + R @ np.array([0.0, 0.0, 0.3])
    model = welded_model(robot, q_r, EE, target, q_t, 't/')
    q = np.r_[q_r, q_t[7:]]
    v = np.r_[v_r, rng.normal(size=target.n)]
    tau = rng.normal(size=robot.n)
    point = o + R @ np.array([0.0, 0.0, 0.1])
    F = weld_wrench(model, robot, q, v, tau, point)
    tau_w = np.r_[tau, np.zeros(target.n)]
    a = D.aba(model, q, v, tau_w)
    # -F acts on the robot at the point: as a wrench at the link origin
    f, n = -F[:3], -F[3:]
    a_r = D.aba(robot, q_r, v_r, tau, link_wrenches={EE: np.r_[f, n + np.cross(point - o, f)]})
    np.testing.assert_allclose(a_r, a[: robot.nv], atol=1e-9 * max(1.0, np.abs(a).max()))


def _captured(robot):
    """A scene right after the gripper closed on a tumbling, drifting 25 kg target."""
    shapes = shapes_from_urdf(str(ROBOT_URDF), model=robot, exclude=['arm_link_7', EE])
    rng = np.random.default_rng(8)
    q_r, v_r = _states(robot, rng)
    scene = Scene(
        robot,
        gripper=Gripper(EE),
        shapes=shapes,
        dt=2e-3,
        contact=ImpactLaw(0.5, 0.3),
        q=q_r,
        v=v_r,
    )
    o, R = D.link_pose(robot, q_r, EE)
    quat = matrix_to_quat(R)
    target = rigid_target(
        'sat',
        mass=25.0,
        shape=Sphere(0.12),
        inertia=np.diag([0.3, 0.4, 0.5]),
        handles=[Handle('grip', 'body', translation=(0.0, 0.0, -0.15), radius=0.03)],
        position=o + R @ np.array([0.0, 0.0, 0.16]),
        orientation=quat,
        linear_velocity=(0.01, -0.02, 0.005),
        angular_velocity=np.radians([2.0, -3.0, 5.0]),
    )
    scene.add_target(target)
    m0 = scene.momentum()
    event = scene.grasp()
    assert event.captured, event.reason
    np.testing.assert_allclose(scene.momentum(), m0, atol=1e-10)
    assert scene.holding == 'sat'
    return scene, m0


@needs_pinocchio
def test_capture_in_scene_then_two_seconds_against_pinocchio(robot):
    """Momentum through the capture to 1e-10; poses after 2 s within 1e-6 of Pinocchio's
    dynamics of the combined tree (same post-capture state, independent integrator)."""
    scene, m0 = _captured(robot)
    # the post-capture state in Pinocchio's coordinates of the combined tree (a rigid target
    # adds no coordinates: the welded state is the robot's)
    q0, v0 = scene.robot_state
    prefix = 'sat/'
    og, Rg = D.link_pose(robot, q0, EE)
    root = scene.snapshot().targets['sat'].root
    ot, Rt = root.position, quat_to_matrix(root.orientation)
    rel_R, rel_t = Rg.T @ Rt, Rg.T @ (ot - og)
    rpy = _rpy(rel_R)
    body = (
        f'<link name="{prefix}body"><inertial><mass value="25"/>'
        '<inertia ixx="0.3" ixy="0" ixz="0" iyy="0.4" iyz="0" izz="0.5"/></inertial></link>'
        f'<joint name="weld" type="fixed"><parent link="{EE}"/><child link="{prefix}body"/>'
        f'<origin xyz="{_floats(rel_t)}" rpy="{_floats(rpy)}"/></joint>'
    )
    pm = pin.buildModelFromXML(
        ROBOT_URDF.read_text().replace('</robot>', body + '</robot>'), pin.JointModelFreeFlyer()
    )
    pm.gravity = pin.Motion.Zero()
    pd = pm.createData()
    qp, vp = _to_pin(pm, robot, q0, v0)
    for _ in range(1000):
        qp, vp = _pin_rk4(pm, pd, qp, vp, 2e-3)
    snap = scene.advance(1000)
    assert [e for e in snap.events if isinstance(e, ContactEvent)] == []  # (no impact)
    np.testing.assert_allclose(snap.momentum, m0, atol=1e-10)
    pin.forwardKinematics(pm, pd, qp)
    pin.updateFramePlacements(pm, pd)
    Mt = pd.oMf[pm.getFrameId(prefix + 'body')]
    np.testing.assert_allclose(snap.targets['sat'].root.position, Mt.translation, atol=1e-6)
    np.testing.assert_allclose(
        quat_to_matrix(snap.targets['sat'].root.orientation), Mt.rotation, atol=1e-6
    )
    np.testing.assert_allclose(snap.robot_base.position, qp[:3], atol=1e-6)
    np.testing.assert_allclose(
        quat_to_matrix(snap.robot_base.orientation), quat_to_matrix(qp[3:7]), atol=1e-6
    )
    # the target moved: the comparison is not of two resting states
    assert np.linalg.norm(snap.targets['sat'].root.position - ot) > 1e-3
    # release: the target flies free with the welded state, momentum unchanged
    v_t = scene.target_state('sat')[1]
    rel = scene.release()
    assert rel.released
    np.testing.assert_allclose(scene.momentum(), m0, atol=1e-10)
    np.testing.assert_allclose(scene.target_state('sat')[1], v_t, atol=1e-12)


def _rpy(R):
    """URDF roll-pitch-yaw of a rotation (R = Rz(y) Ry(p) Rx(r))."""
    p = np.arcsin(-R[2, 0])
    r = np.arctan2(R[2, 1], R[2, 2])
    y = np.arctan2(R[1, 0], R[0, 0])
    out = np.array([r, p, y])
    np.testing.assert_allclose(rpy_to_matrix(out), R, atol=1e-14)
    return out


def _floats(x):
    return ' '.join(f'{float(v):.17g}' for v in x)


@needs_pinocchio
def test_capture_against_pinocchio_constraint_dynamics(robot):
    """The weld as a constraint, not a merge: robot and target as two free-flyer trees in
    one Pinocchio model held by a 6D rigid constraint (``pin.constraintDynamics``), from the
    post-capture state the scene reports, 2 s (RK4 on Pinocchio's Lie group): poses within
    1e-6 of the scene's welded tree."""
    scene, m0 = _captured(robot)
    q_r, v_r = scene.robot_state
    q_t, v_t = scene.target_state('sat')
    pm = pin.buildModelFromXML(ROBOT_URDF.read_text(), pin.JointModelFreeFlyer())
    jt = pm.addJoint(0, pin.JointModelFreeFlyer(), pin.SE3.Identity(), 'sat_root')
    pm.appendBodyToJoint(
        jt, pin.Inertia(25.0, np.zeros(3), np.diag([0.3, 0.4, 0.5])), pin.SE3.Identity()
    )
    pm.gravity = pin.Motion.Zero()
    pd = pm.createData()
    # state: the robot as in _to_pin, the target's free flyer from its root link state
    qp, vp = _to_pin(pm, robot, q_r, v_r)
    p, quat, lin, ang = D.base_link_state(_target(), q_t, v_t)
    R = quat_to_matrix(quat)
    iq, iv = pm.idx_qs[jt], pm.idx_vs[jt]
    qp[iq : iq + 3], qp[iq + 3 : iq + 7] = p, quat
    vp[iv : iv + 3], vp[iv + 3 : iv + 6] = R.T @ lin, R.T @ ang
    # the weld: the target root frame, fixed in the end-effector frame where it was closed
    f = pm.frames[pm.getFrameId(EE)]
    pin.forwardKinematics(pm, pd, qp)
    pin.updateFramePlacements(pm, pd)
    rel = pd.oMf[pm.getFrameId(EE)].actInv(pd.oMi[jt])
    cm = pin.RigidConstraintModel(
        pin.ContactType.CONTACT_6D,
        pm,
        f.parentJoint,
        f.placement * rel,
        jt,
        pin.SE3.Identity(),
        pin.ReferenceFrame.LOCAL,
    )
    cms = pin.StdVec_RigidConstraintModel()
    cms.append(cm)
    cds = pin.StdVec_RigidConstraintData()
    cds.append(cm.createData())
    pin.initConstraintDynamics(pm, pd, cms, cds)
    settings = pin.ProximalSettings(1e-14, 0.0, 1)
    zero = np.zeros(pm.nv)

    def deriv(qx, vx):
        return pin.constraintDynamics(pm, pd, qx, vx, zero, cms, cds, settings)

    for _ in range(1000):
        qp, vp = _rk4(pm, deriv, qp, vp, 2e-3)
    snap = scene.advance(1000)
    np.testing.assert_allclose(snap.momentum, m0, atol=1e-10)
    pin.forwardKinematics(pm, pd, qp)
    root = snap.targets['sat'].root
    np.testing.assert_allclose(root.position, pd.oMi[jt].translation, atol=1e-6)
    np.testing.assert_allclose(quat_to_matrix(root.orientation), pd.oMi[jt].rotation, atol=1e-6)
    np.testing.assert_allclose(snap.robot_base.position, qp[:3], atol=1e-6)
    np.testing.assert_allclose(
        quat_to_matrix(snap.robot_base.orientation), quat_to_matrix(qp[3:7]), atol=1e-6
    )
    assert np.linalg.norm(root.position - p) > 1e-3


def _target():
    return rigid_target(
        'sat', mass=25.0, shape=Sphere(0.12), inertia=np.diag([0.3, 0.4, 0.5])
    ).model


def _rk4(pm, deriv, qp, vp, dt):
    def f(x):
        qx = pin.integrate(pm, qp, x[: pm.nv])
        return np.concatenate([x[pm.nv :], deriv(qx, x[pm.nv :])])

    x0 = np.concatenate([np.zeros(pm.nv), vp])
    k1 = f(x0)
    k2 = f(x0 + dt / 2 * k1)
    k3 = f(x0 + dt / 2 * k2)
    k4 = f(x0 + dt * k3)
    x1 = x0 + dt / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
    return pin.integrate(pm, qp, x1[: pm.nv]), x1[pm.nv :]
