"""A capture against MuJoCo, an independent engine (test-only oracle, ``mujoco`` on PyPI).

The scene's post-capture state (robot and a tumbling target welded at the gripper) is given to
two MuJoCo models of the same system, built from the robot's URDF by MuJoCo's own URDF parser
(its masses, inertias, joint frames and axes) with a free joint on the root, gravity off,
contacts, joint damping and friction off (the scene models none of them), the RK4 integrator:

* the combined body: the target a child body of the end effector at the grasped relative pose
  (what the scene's weld merge is): poses after 2 s within 1e-6;
* the weld equality: the target its own free body, held to the end effector by an active
  ``weld`` equality with the grasped relative pose (MuJoCo's soft constraint, made as stiff as
  its solver allows: impedance 0.9999, time constant two steps): poses after 2 s within 1e-6
  (measured 1.1e-10 m at MuJoCo's 2 ms step, 1.1e-12 m at 0.2 ms: the soft constraint's
  residual shrinks with the step; ``WELD_TOLERANCE``).
"""

from __future__ import annotations

import re

import numpy as np
import pytest

import ffsim_ros.dynamics as D
from ffsim_ros.control.capture_loop import CAPTURE_ARM
from ffsim_ros.dynamics.lie import matrix_to_quat, quat_to_matrix
from ffsim_ros.resources import sample_robot
from ffsim_ros.scene import Gripper, Handle, ImpactLaw, Scene, Sphere, rigid_target

mujoco = pytest.importorskip('mujoco')

EE = 'ee_link'
DT = 2e-3
STEPS = 1000  # 2 s
MASS, INERTIA = 25.0, np.array([0.3, 0.4, 0.5])
#: The target's frame in the end effector's at the grasp (a quaternion, x, y, z, w).
TILT = np.array([0.3, 0.1, -0.2, 0.93])
#: MuJoCo's weld equality against the scene [m | entries of R] (measured 2026-11-25: 1.1e-10
#: m / 8.1e-10 at MuJoCo's step 2 ms, 1.1e-12 / 8.1e-12 at 0.2 ms).
WELD_TOLERANCE = 1e-6


def _wxyz(quat_xyzw):
    x, y, z, w = quat_xyzw
    return np.array([w, x, y, z])


def _xyzw(quat_wxyz):
    w, x, y, z = quat_wxyz
    return np.array([x, y, z, w])


@pytest.fixture
def captured():
    """A scene right after the gripper closed on a tumbling, drifting 25 kg target, and the
    relative pose of the target's frame in the end effector's."""
    urdf = sample_robot('ffsim_servicer_7dof')
    robot = D.load_urdf(urdf, floating_base=True)
    rng = np.random.default_rng(17)
    q = D.neutral(robot)
    q[3:7] = [0.1, -0.05, 0.2, 0.97]
    q[3:7] /= np.linalg.norm(q[3:7])
    q[7:] = np.array(CAPTURE_ARM) + rng.uniform(-0.2, 0.2, robot.n)
    v = np.r_[rng.normal(size=6) * 0.01, rng.normal(size=robot.n) * 0.05]
    scene = Scene.from_urdf(
        urdf,
        gripper=Gripper(EE),
        exclude_links=['arm_link_7', EE],
        dt=DT,
        contact=ImpactLaw(0.5, 0.3),
        q=q,
        v=v,
    )
    o, R = D.link_pose(robot, q, EE)
    target = rigid_target(
        'sat',
        mass=MASS,
        shape=Sphere(0.12),
        inertia=np.diag(INERTIA),
        handles=[Handle('grip', 'body', translation=(0.0, 0.0, -0.15), radius=0.3)],
        position=o + R @ np.array([0.16, 0.0, 0.0]),
        orientation=matrix_to_quat(R @ quat_to_matrix(TILT / np.linalg.norm(TILT))),
        linear_velocity=(0.01, -0.02, 0.005),
        angular_velocity=np.radians([2.0, -3.0, 5.0]),
    )
    scene.add_target(target)
    event = scene.grasp()
    assert event.captured, event.reason
    q, v = scene.robot_state
    root = scene.snapshot().targets['sat'].root
    og, Rg = D.link_pose(robot, q, EE)
    Rt = quat_to_matrix(root.orientation)
    return scene, robot, Rg.T @ Rt, Rg.T @ (root.position - og)


def _spec(robot_urdf: str):
    text = re.sub(
        r'(<robot[^>]*>)',
        r'\1<mujoco><compiler discardvisual="true" fusestatic="false"/></mujoco>',
        robot_urdf,
        count=1,
    )
    spec = mujoco.MjSpec.from_string(text)
    spec.worldbody.first_body().add_freejoint()
    return spec


def _target_body(parent, pos, quat_wxyz):
    body = parent.add_body(name='sat', pos=pos, quat=quat_wxyz)
    body.mass = MASS
    body.inertia = INERTIA
    body.ipos = [0.0, 0.0, 0.0]
    body.iquat = [1.0, 0.0, 0.0, 0.0]
    body.explicitinertial = True
    return body


def _compile(spec):
    m = spec.compile()
    m.opt.gravity[:] = 0.0
    m.opt.integrator = mujoco.mjtIntegrator.mjINT_RK4
    m.opt.disableflags |= mujoco.mjtDisableBit.mjDSBL_CONTACT
    m.opt.enableflags |= mujoco.mjtEnableBit.mjENBL_ENERGY
    m.dof_damping[:] = 0.0
    m.dof_frictionloss[:] = 0.0
    m.opt.timestep = DT
    return m


def _set_robot(m, d, robot, q, v):
    """Our robot state as MuJoCo's: the root link frame's pose and the velocity of its origin
    (world), angular velocity in the body frame; joints by name."""
    p, quat, lin, ang = D.base_link_state(robot, q, v)
    j = m.joint(m.body('base_link').jntadr[0])
    a, b = j.qposadr[0], j.dofadr[0]
    d.qpos[a : a + 3], d.qpos[a + 3 : a + 7] = p, _wxyz(quat)
    d.qvel[b : b + 3], d.qvel[b + 3 : b + 6] = lin, quat_to_matrix(quat).T @ ang
    for k, name in enumerate(robot.joint_names):
        jj = m.joint(name)
        d.qpos[jj.qposadr[0]] = q[7 + k]
        d.qvel[jj.dofadr[0]] = v[6 + k]


def _pose(m, d, body):
    return d.xpos[m.body(body).id].copy(), d.xmat[m.body(body).id].reshape(3, 3).copy()


def _run(m, d, substeps):
    for _ in range(STEPS * substeps):
        mujoco.mj_step(m, d)
    mujoco.mj_forward(m, d)


def _errors(snap, m, d):
    """Largest position [m] and rotation-matrix entry differences of the target's and the
    base's frames between the scene's snapshot and MuJoCo's state."""
    root = snap.targets['sat'].root
    p_t, R_t = _pose(m, d, 'sat')
    p_b, R_b = _pose(m, d, 'base_link')
    err_p = max(
        float(np.abs(root.position - p_t).max()),
        float(np.abs(snap.robot_base.position - p_b).max()),
    )
    err_R = max(
        float(np.abs(quat_to_matrix(root.orientation) - R_t).max()),
        float(np.abs(quat_to_matrix(snap.robot_base.orientation) - R_b).max()),
    )
    return err_p, err_R


def test_capture_against_mujoco_combined_body(captured):
    scene, robot, rel_R, rel_t = captured
    spec = _spec(sample_robot('ffsim_servicer_7dof').read_text())
    _target_body(spec.body(EE), rel_t, _wxyz(matrix_to_quat(rel_R)))
    m = _compile(spec)
    d = mujoco.MjData(m)
    q, v = scene.robot_state
    _set_robot(m, d, robot, q, v)
    mujoco.mj_forward(m, d)
    # the same system: kinetic energy and the target's pose agree before stepping
    assert d.energy[1] == pytest.approx(scene.kinetic_energy(), rel=1e-12)
    p0, R0 = _pose(m, d, 'sat')
    root = scene.snapshot().targets['sat'].root
    np.testing.assert_allclose(p0, root.position, atol=1e-12)
    np.testing.assert_allclose(R0, quat_to_matrix(root.orientation), atol=1e-12)
    _run(m, d, 1)
    err_p, err_R = _errors(scene.advance(STEPS), m, d)
    print(f'MuJoCo combined body, 2 s: position {err_p:.2e} m, rotation {err_R:.2e}')
    # the comparison is not of two resting states
    assert np.linalg.norm(_pose(m, d, 'sat')[0] - p0) > 1e-3
    assert err_p < 1e-6 and err_R < 1e-6


def _set_target(m, d, scene):
    q_t, v_t = scene.target_state('sat')
    model = rigid_target('sat', mass=MASS, shape=Sphere(0.12), inertia=np.diag(INERTIA)).model
    p, quat, lin, ang = D.base_link_state(model, q_t, v_t)
    j = m.joint(m.body('sat').jntadr[0])
    a, b = j.qposadr[0], j.dofadr[0]
    d.qpos[a : a + 3], d.qpos[a + 3 : a + 7] = p, _wxyz(quat)
    d.qvel[b : b + 3], d.qvel[b + 3 : b + 6] = lin, quat_to_matrix(quat).T @ ang


def _weld_model(rel_R, rel_t, solref, solimp):
    spec = _spec(sample_robot('ffsim_servicer_7dof').read_text())
    body = _target_body(spec.worldbody, [0.0, 0.0, 0.0], [1.0, 0.0, 0.0, 0.0])
    body.add_freejoint()
    eq = spec.add_equality()
    eq.type = mujoco.mjtEq.mjEQ_WELD
    eq.objtype = mujoco.mjtObj.mjOBJ_BODY
    eq.name1, eq.name2 = EE, 'sat'
    eq.active = True
    m = _compile(spec)
    # data: anchor (3), relative pose of body2 in body1 (position 3, quaternion w x y z 4),
    # torque scale
    m.eq_data[0, :3] = 0.0
    m.eq_data[0, 3:6] = rel_t
    m.eq_data[0, 6:10] = _wxyz(matrix_to_quat(rel_R))
    m.eq_data[0, 10] = 1.0
    m.eq_solref[0] = solref
    m.eq_solimp[0] = solimp
    return m


def test_capture_against_mujoco_weld_equality(captured):
    scene, robot, rel_R, rel_t = captured
    q, v = scene.robot_state
    errors = {}
    runs = []
    for substeps in (1, 10):
        dt = DT / substeps
        m = _weld_model(rel_R, rel_t, [2 * dt, 1.0], [0.9999, 0.9999, 0.001, 0.5, 2.0])
        m.opt.timestep = dt
        d = mujoco.MjData(m)
        _set_robot(m, d, robot, q, v)
        _set_target(m, d, scene)
        mujoco.mj_forward(m, d)
        eq_rows = d.efc_type == mujoco.mjtConstraint.mjCNSTR_EQUALITY
        assert eq_rows.sum() == 6
        # the relative pose given is the grasped one: the weld is satisfied at the start
        np.testing.assert_allclose(d.efc_pos[eq_rows], 0.0, atol=1e-12)
        assert d.energy[1] == pytest.approx(scene.kinetic_energy(), rel=1e-12)
        _run(m, d, substeps)
        runs.append((substeps, m, d))
    snap = scene.advance(STEPS)
    for substeps, m, d in runs:
        errors[substeps] = _errors(snap, m, d)
        err_p, err_R = errors[substeps]
        print(
            f'MuJoCo weld, dt {DT / substeps:.0e} s: position {err_p:.2e} m, rotation {err_R:.2e}'
        )
        assert err_p < WELD_TOLERANCE and err_R < WELD_TOLERANCE
        # the weld held: its six residuals stay at the solver's level
        eq_rows = d.efc_type == mujoco.mjtConstraint.mjCNSTR_EQUALITY
        assert np.abs(d.efc_pos[eq_rows]).max() < 1e-9
    # smaller MuJoCo steps bring it closer (the scene's step is not the limit)
    assert errors[10][0] < errors[1][0]
