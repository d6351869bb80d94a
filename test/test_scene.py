"""The scene (:class:`ffsim_ros.scene.Scene`): robot and targets stepped side by side, impacts
located in time and resolved with the full free-floating inertia of both systems.

* Total linear and angular momentum of robot + targets through impacts (rigid law with
  friction, compliant law) and a capture: unchanged to 1e-10 (no external forces).
* Two free spheres, central impact: the impulse is ``(1 + e) m* |u_n|``; the kinetic energy
  is conserved for ``e = 1`` and loses exactly ``m* u_n^2 / 2`` for ``e = 0``.
* A tumbling sphere hitting the bus off-centre with friction: the impulse lies in the friction
  cone, the bodies separate, no energy is created.
* Bad input: a target spawned intersecting the robot, unknown link names, zero or negative
  mass, NaN pose -- a clear error naming it, nothing applied, the scene keeps stepping.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from scene_samples import TARGET_URDF, tumbling_box

import ffsim_ros.dynamics as D
from ffsim_ros.dynamics.lie import matrix_exp, matrix_to_quat, quat_to_matrix
from ffsim_ros.scene import (
    Capsule,
    CompliantLaw,
    ContactEvent,
    Cylinder,
    Gripper,
    Handle,
    ImpactLaw,
    Scene,
    Sphere,
    locked_inertia,
    rigid_target,
    shapes_from_urdf,
    tumble,
    urdf_target,
)

ROBOT_URDF = Path(__file__).resolve().parents[1] / 'urdf' / 'ffsim_servicer_7dof.urdf'
TOL = 1e-10


@pytest.fixture(scope='module')
def robot():
    return D.load_urdf(str(ROBOT_URDF), floating_base=True)


@pytest.fixture(scope='module')
def shapes(robot):
    return shapes_from_urdf(str(ROBOT_URDF), model=robot)


def _scene(robot, shapes, law, dt=5e-3):
    return Scene(robot, gripper=Gripper('ee_link'), shapes=shapes, dt=dt, contact=law)


def _impacts(events):
    return [e for e in events if isinstance(e, ContactEvent)]


@pytest.mark.parametrize('e', [0.0, 1.0])
def test_two_spheres_central_impact(robot, shapes, e):
    m1, m2, r1, r2, u = 3.0, 5.0, 0.2, 0.3, 0.4
    scene = _scene(robot, shapes, ImpactLaw(restitution=e), dt=1e-2)
    scene.add_target(
        rigid_target(
            'a', mass=m1, shape=Sphere(r1), position=(0, 6, 0), linear_velocity=(0.0, 0.0, u)
        )
    )
    scene.add_target(rigid_target('b', mass=m2, shape=Sphere(r2), position=(0, 6, 0.7)))
    m0, k0 = scene.momentum(), scene.kinetic_energy()
    events = []
    for _ in range(60):
        events += _impacts(scene.advance(1).events)
        np.testing.assert_allclose(scene.momentum(), m0, atol=TOL)
    assert len(events) == 1
    ev = events[0]
    assert {ev.body_a, ev.body_b} == {'a/body', 'b/body'}
    mstar = m1 * m2 / (m1 + m2)
    assert np.linalg.norm(ev.impulse) == pytest.approx((1 + e) * mstar * u, rel=1e-9)
    np.testing.assert_allclose(np.abs(ev.normal), [0, 0, 1], atol=1e-9)
    assert ev.time == pytest.approx((0.7 - r1 - r2) / u, abs=1e-6)
    k1 = scene.kinetic_energy()
    assert k0 - k1 == pytest.approx(0.5 * (1 - e * e) * mstar * u * u, abs=1e-9)
    assert ev.energy_loss == pytest.approx(k0 - k1, abs=1e-9)
    # after: velocities from the closed form (the spheres do not spin)
    va = scene.target_state('a')[1][:3]
    vb = scene.target_state('b')[1][:3]
    np.testing.assert_allclose(va, [0, 0, u - (1 + e) * mstar * u / m1], atol=1e-9)
    np.testing.assert_allclose(vb, [0, 0, (1 + e) * mstar * u / m2], atol=1e-9)


def test_tumbling_target_hits_the_bus_with_friction(robot, shapes):
    """Off-centre oblique impact on the bus from below: the robot (base and arm) takes
    momentum through its full free-floating inertia; total momentum to 1e-10."""
    law = ImpactLaw(restitution=0.5, friction=0.3)
    scene = _scene(robot, shapes, law)
    scene.add_target(tumbling_box())
    m0, k0 = scene.momentum(), scene.kinetic_energy()
    # joint efforts are internal: they change no total momentum (the energy check below is
    # made without them)
    events = _impacts(scene.advance(10, effort=np.linspace(-2.0, 2.0, robot.n)).events)
    np.testing.assert_allclose(scene.momentum(), m0, atol=TOL)
    scene.set_effort(np.zeros(robot.n))
    k0 = scene.kinetic_energy()
    for _ in range(19):
        events += _impacts(scene.advance(10).events)
        np.testing.assert_allclose(scene.momentum(), m0, atol=TOL)
    assert events, 'no impact'
    for ev in events:
        n = ev.normal
        Pn = float(n @ ev.impulse)
        assert Pn > 0
        assert np.linalg.norm(ev.impulse - Pn * n) <= 0.3 * Pn * (1 + 1e-9)
        assert ev.energy_loss >= 0.0
    assert scene.kinetic_energy() < k0
    # the robot got moving, and the base rotates (off-centre impulse)
    q, v = scene.robot_state
    assert np.linalg.norm(v[3:6]) > 1e-4
    # separated: the target moves away from the bus (downwards)
    assert scene.snapshot().targets['tgt'].momentum[2] < 0.0


def test_compliant_contact_conserves_momentum(robot, shapes):
    law = CompliantLaw(stiffness=2e4, damping=50.0, friction=0.4)
    scene = _scene(robot, shapes, law, dt=2e-3)
    scene.add_target(
        rigid_target(
            's',
            mass=10.0,
            shape=Sphere(0.2),
            position=(0.3, 0.0, -1.05),
            linear_velocity=(0.02, 0.01, 0.3),
            angular_velocity=(0.0, 0.5, 0.0),
        )
    )
    m0, k0 = scene.momentum(), scene.kinetic_energy()
    seen = []
    for _ in range(40):
        seen += _impacts(scene.advance(10).events)
        np.testing.assert_allclose(scene.momentum(), m0, atol=TOL)
    assert seen and all(e.kind == 'contact' for e in seen)
    assert scene.kinetic_energy() < k0  # the damper dissipates
    assert scene.snapshot().targets['s'].momentum[2] < 0.0  # bounced


def test_capture_envelope_and_momentum(robot, shapes):
    rng = np.random.default_rng(3)
    q = D.neutral(robot)
    q[7:] = rng.uniform(-0.5, 0.5, robot.n)
    v = np.r_[np.zeros(6), rng.normal(size=robot.n) * 0.05]
    kept = [s for s in shapes if s.link not in ('arm_link_7', 'ee_link')]
    scene = Scene(robot, gripper=Gripper('ee_link'), shapes=kept, dt=5e-3, q=q, v=v)
    o, R = D.link_pose(robot, q, 'ee_link')
    handle = Handle('h', 'body', translation=(0.0, 0.0, -0.12), radius=0.02, max_speed=0.5)
    scene.add_target(
        rigid_target(
            't',
            mass=30.0,
            shape=Sphere(0.1),
            handles=[handle],
            position=o + R @ np.array([0.0, 0.0, 0.25]),
            orientation=matrix_to_quat(R),
            linear_velocity=(0.0, 0.0, 0.02),
            angular_velocity=(0.0, 0.0, 0.09),
        )
    )
    m0 = scene.momentum()
    miss = scene.grasp()
    assert not miss.captured and 'distance' in miss.reason and scene.holding == ''
    np.testing.assert_array_equal(scene.momentum(), m0)
    scene.set_target_state('t', position=o + R @ np.array([0.0, 0.0, 0.13]))
    m0 = scene.momentum()
    snap0 = scene.snapshot()
    h0, g0 = snap0.targets['t'].handles['h'], snap0.gripper
    Rg0 = quat_to_matrix(g0.orientation)
    offset, at_capture = Rg0.T @ (h0.position - g0.position), h0.position
    rel_R = Rg0.T @ quat_to_matrix(h0.orientation)
    ev = scene.grasp('t', 'h')
    assert ev.captured and scene.holding == 't'
    np.testing.assert_allclose(scene.momentum(), m0, atol=TOL)
    assert ev.energy_loss > 0.0
    snap = scene.advance(100)
    np.testing.assert_allclose(snap.momentum, m0, atol=TOL)
    assert snap.targets['t'].held
    # the weld holds the relative pose it was closed at (rigid: same offset in the gripper
    # frame, velocities of a rigid body)
    h, g = snap.targets['t'].handles['h'], snap.gripper
    Rg = quat_to_matrix(g.orientation)
    np.testing.assert_allclose(Rg.T @ (h.position - g.position), offset, atol=1e-9)
    np.testing.assert_allclose(Rg.T @ quat_to_matrix(h.orientation), rel_R, atol=1e-9)
    np.testing.assert_allclose(h.angular_velocity, g.angular_velocity, atol=1e-12)
    np.testing.assert_allclose(
        h.linear_velocity,
        g.linear_velocity + np.cross(g.angular_velocity, h.position - g.position),
        atol=1e-12,
    )
    assert np.linalg.norm(h.position - at_capture) > 1e-3  # it moved
    assert scene.grasp().reason.startswith('already holding')
    assert scene.release().released and scene.holding == ''
    snap = scene.advance(20)
    np.testing.assert_allclose(snap.momentum, m0, atol=TOL)


def test_tumble_closed_form():
    """Angular momentum along the requested direction, at the nutation angle from the spin
    axis, with the requested spin rate (``w . k``)."""
    inertia = np.diag([2.0, 3.0, 5.0])
    tb = tumble(inertia, spin_rate=0.1, nutation=0.3, momentum_direction=(1.0, 1.0, 0.0))
    R = quat_to_matrix(tb.orientation)
    h = R @ inertia @ R.T @ tb.angular_velocity
    np.testing.assert_allclose(h, tb.angular_momentum, atol=1e-14)
    np.testing.assert_allclose(h / np.linalg.norm(h), np.array([1, 1, 0]) / np.sqrt(2), atol=1e-14)
    k = R[:, 2]
    assert np.arccos(k @ h / np.linalg.norm(h)) == pytest.approx(0.3, abs=1e-12)
    assert tb.angular_velocity @ k == pytest.approx(0.1, abs=1e-14)


@pytest.mark.parametrize(
    'kwargs, words',
    [
        ({'mass': 0.0}, ['mass', '0.0']),
        ({'mass': -2.0}, ['mass', '-2.0']),
        ({'mass': float('nan')}, ['mass']),
        # bounded: 1 mg to 1e12 kg; principal moments within the mass times [(0.1 mm)^2 / 12,
        # (1e6 m)^2] (1e-300 kg and a zero inertia were taken)
        ({'mass': 1e-300}, ["target 'bad' mass: expected a finite value in [1e-06, 1e+12] kg"]),
        ({'mass': 1e13}, ['[1e-06, 1e+12] kg', 'got 10000000000000.0']),
        ({'inertia': np.zeros((3, 3))}, ["target 'bad' inertia: expected principal moments"]),
        (
            {'inertia': np.diag([1e-9, 1.0, 1.0])},
            ['[4.16667e-09, 5e+12] kg m^2', 'got [1e-09, 1, 1]'],
        ),
        ({'inertia': np.eye(3) * 1e13}, ['for a mass of 5 kg', 'got [1e+13, 1e+13, 1e+13]']),
        ({'position': (np.nan, 5.0, 0.0)}, ['position', 'nan']),
        ({'orientation': (0.0, 0.0, 0.0, 0.0)}, ['orientation']),
        ({'handles': [Handle('h', 'nowhere')]}, ['nowhere', 'unknown link']),
        ({'position': (0.0, 0.0, 0.0)}, ['overlaps', 'robot/base_link']),
        ({'handles': ['x']}, ['handles expected Handle items', "'x'"]),
    ],
)
def test_bad_targets_are_refused_and_the_scene_keeps_running(robot, shapes, kwargs, words):
    scene = _scene(robot, shapes, ImpactLaw())
    scene.add_target(
        rigid_target(
            'ok', mass=1.0, shape=Sphere(0.1), position=(0, 5, 0), linear_velocity=(0.1, 0, 0)
        )
    )
    args = {'mass': 5.0, 'shape': Sphere(0.2), 'position': (0.0, 4.0, 0.0), **kwargs}
    with pytest.raises((ValueError, D.UnknownNameError)) as info:
        scene.add_target(rigid_target('bad', **args))
    for w in words:
        assert w in str(info.value)
    assert scene.target_names == ('ok',)
    before = scene.target_state('ok')[0][:3].copy()
    scene.advance(10)
    np.testing.assert_allclose(scene.target_state('ok')[0][:3] - before, [0.005, 0, 0], atol=1e-12)


def test_bad_scene_calls(robot, shapes):
    scene = _scene(robot, shapes, ImpactLaw())
    with pytest.raises(D.UnknownNameError, match='ghost'):
        scene.grasp('ghost')
    with pytest.raises(D.UnknownNameError, match='ghost'):
        scene.remove_target('ghost')
    with pytest.raises(D.UnknownNameError, match='nolink'):
        Scene(robot, gripper=Gripper('nolink'))
    with pytest.raises(ValueError, match='base body'):
        Scene(robot, gripper=Gripper('base_link'))
    with pytest.raises(ValueError, match='dt'):
        Scene(robot, gripper=Gripper('ee_link'), dt=float('nan'))
    scene.add_target(rigid_target('t', mass=1.0, shape=Sphere(0.1), position=(0, 5, 0)))
    with pytest.raises(ValueError, match='position'):
        scene.set_target_state('t', position=(np.nan, 0, 0))
    with pytest.raises(ValueError, match='overlaps'):
        scene.set_target_state('t', position=(0.0, 0.0, 0.0))
    np.testing.assert_allclose(scene.target_state('t')[0][:3], [0, 5, 0], atol=1e-15)
    with pytest.raises(ValueError, match='effort'):
        scene.set_effort([np.nan] * robot.n)
    mirror = np.diag([1.0, 1.0, -1.0])  # orthogonal, but a reflection
    with pytest.raises(ValueError, match=r'rotation expected a rotation matrix \(det \+1\)'):
        Handle('h', 'body', rotation=mirror)
    with pytest.raises(ValueError, match=r'rotation expected a rotation matrix \(det \+1\)'):
        Gripper('ee_link', rotation=mirror)
    given, turn = np.array([0.0, 0.0, -0.12]), np.eye(3)
    handle = Handle('h', 'body', translation=given, rotation=turn)
    given[2], turn[0, 0] = 5.0, -1.0  # the caller's arrays changed afterwards: not the handle's
    assert handle.translation.tolist() == [0.0, 0.0, -0.12] and handle.rotation[0, 0] == 1.0
    with pytest.raises(ValueError, match='read-only'):
        handle.translation[2] = 5.0
    for n in (1.7, 0, True):  # 1.7 steps was run as 1
        with pytest.raises(ValueError, match=r'n: expected an integer >= 1 \(steps\)'):
            scene.advance(n)
    inertia = np.diag([2.0, 3.0, 5.0])
    for kwargs in ({'spin_axis': (0, 0, 0)}, {'momentum_direction': (0, 0, 0)}):
        with pytest.raises(ValueError, match=f'{next(iter(kwargs))}: expected a non-zero'):
            tumble(inertia, spin_rate=0.1, nutation=0.2, **kwargs)  # (a NaN tumble before)


def test_a_reflection_is_refused_wherever_a_rotation_is_taken(robot):
    """A mirror (orthogonal, det -1) is not a rotation: a collision shape, a grasp frame, a
    handle and a weld refuse it, naming the argument (a collision shape took it, checked for
    orthonormality only)."""
    from ffsim_ros.scene import CollisionShape

    turn = matrix_exp([0.3, -0.2, 0.5])
    mirror = turn @ np.diag([1.0, 1.0, -1.0])
    rot = r'rotation expected a rotation matrix \(det \+1\), got \[\['
    with pytest.raises(ValueError, match=rf"^collision shape of link 'body': {rot}"):
        CollisionShape('body', Sphere(0.1), mirror)
    with pytest.raises(ValueError, match=rf"^collision shape of link 'body': {rot}"):
        CollisionShape('body', Sphere(0.1), 1.01 * turn)
    assert CollisionShape('body', Sphere(0.1), turn).rotation.tolist() == turn.tolist()
    with pytest.raises(ValueError, match=rf"^handle 'h': {rot}"):
        Handle('h', 'body', rotation=mirror)
    with pytest.raises(ValueError, match=rf"^gripper 'ee_link': {rot}"):
        Gripper('ee_link', rotation=mirror)
    target = D.load_urdf(TARGET_URDF, floating_base=True)
    with pytest.raises(
        ValueError, match=r'^weld_models: rotation: expected a rotation matrix \(det'
    ):
        D.weld_models(robot, 'ee_link', target, rotation=mirror, prefix='t/')
    assert (
        D.weld_models(robot, 'ee_link', target, rotation=turn, prefix='t/').n == robot.n + target.n
    )


def test_shapes_from_urdf_primitives_and_mesh_policy():
    shapes = shapes_from_urdf(TARGET_URDF)
    kinds = [(s.link, type(s.shape).__name__) for s in shapes]
    assert kinds == [
        ('hub', 'Box'),
        ('hub', 'Capsule'),
        ('panel', 'Cylinder'),
        ('panel', 'Sphere'),
    ]
    np.testing.assert_allclose(shapes[0].translation, [0, 0, 0.1])
    np.testing.assert_allclose(shapes[0].rotation, [[0, -1, 0], [1, 0, 0], [0, 0, 1]], atol=1e-15)
    assert shapes[1].shape.radius == 0.05 and shapes[1].shape.length == 0.3
    mesh = TARGET_URDF.replace('<sphere radius="0.04"/>', '<mesh filename="x.stl"/>')
    with pytest.raises(ValueError, match=r"link panel .*mesh 'x.stl'"):
        shapes_from_urdf(mesh)
    with pytest.warns(UserWarning, match='ignored'):
        assert len(shapes_from_urdf(mesh, meshes='ignore')) == 3
    with pytest.raises(D.UnknownNameError, match='nolink'):
        shapes_from_urdf(TARGET_URDF, exclude=['nolink'])


def test_capsule_inertia_from_a_cylinder_and_two_hemispheres():
    """A hemisphere of mass m_h about its CoM (3r/8 from the flat face): 83/320 m_h r^2
    across, 2/5 m_h r^2 along; shifted by h/2 + 3r/8 (parallel axes)."""
    r, h, m = 0.1, 0.5, 7.0
    vc, vh = np.pi * r * r * h, 2.0 / 3.0 * np.pi * r**3
    mc, mh = m * vc / (vc + 2 * vh), m * vh / (vc + 2 * vh)
    across = mc * (3 * r * r + h * h) / 12 + 2 * mh * (83 / 320 * r * r + (h / 2 + 3 * r / 8) ** 2)
    along = 0.5 * mc * r * r + 2 * 0.4 * mh * r * r
    np.testing.assert_allclose(
        Capsule(r, h).inertia(m), np.diag([across, across, along]), rtol=1e-14
    )


def test_urdf_target_tumbles_freely_with_its_joint(robot, shapes):
    t = urdf_target(
        'sat',
        TARGET_URDF,
        position=(0, 6, 0),
        linear_velocity=(0.01, 0, 0),
        angular_velocity=(0.05, 0.02, 0.1),
        joint_velocities=[0.3],
    )
    com_v = D.momentum(t.model, t.q, t.v)[:3] / t.model.total_mass
    np.testing.assert_allclose(com_v, [0.01, 0, 0], atol=1e-15)
    I_locked = locked_inertia(t.model, t.q)
    assert np.all(np.linalg.eigvalsh(I_locked) > 0)
    scene = _scene(robot, shapes, ImpactLaw())
    scene.add_target(t)
    m0, k0 = scene.momentum(), scene.kinetic_energy()
    snap = scene.advance(200)
    np.testing.assert_allclose(snap.momentum, m0, atol=TOL)
    assert snap.kinetic_energy == pytest.approx(k0, rel=1e-9)
    np.testing.assert_allclose(
        snap.targets['sat'].com, D.center_of_mass(t.model, t.q) + [0.01, 0, 0], atol=1e-12
    )
    with pytest.raises(D.UnknownNameError, match='nolink'):
        urdf_target('x', TARGET_URDF, handles=[Handle('h', 'nolink')])
    with pytest.raises(ValueError, match='moving body'):
        urdf_target('x', TARGET_URDF, handles=[Handle('h', 'panel')])


@pytest.mark.parametrize(
    ('first', 'second'),
    [(Sphere(0.2), Cylinder(0.1, 0.3)), (Capsule(0.05, 0.3), Capsule(0.05, 0.3))],
)
def test_concentric_shapes_give_a_unit_normal_and_a_clear_refusal(robot, shapes, first, second):
    """A target dropped with its centre on another's, for the pairs where coal returns a zero
    normal (sphere-cylinder, capsule-capsule), is refused as an overlap with a unit normal
    (no division by zero on the way)."""
    import warnings

    scene = _scene(robot, shapes, ImpactLaw())
    scene.add_target(rigid_target('a', mass=1.0, shape=first, position=(0, 5, 0)))
    with warnings.catch_warnings():
        warnings.simplefilter('error')
        with pytest.raises(ValueError, match='overlaps'):
            scene.add_target(rigid_target('b', mass=1.0, shape=second, position=(0, 5, 0)))
    assert scene.target_names == ('a',)
