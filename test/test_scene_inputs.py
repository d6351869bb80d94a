"""Scene inputs refused at construction, and the compliant law's friction limited to the
sticking impulse (:mod:`ffsim_ros.scene`).

* :meth:`CompliantLaw.impulse` with the contact's inverse inertia ``W``: the friction impulse
  never reverses the slip along its direction and never does positive work (random ``W`` with
  normal-tangential coupling); without ``W`` it is ``force * h``.
* The glancing contact of two 1 kg spheres of radius 0.1 m (``W = diag(2, 7, 7)`` in the
  contact frame: ``1/m1 + 1/m2`` along the normal, ``+ r^2 / I1 + r^2 / I2`` across), stepped
  as the scene steps it (half-step kicks around a drift) at 2e4 N/m, 1 ms, ``v_s`` = 1 mm/s:
  the tangential kinetic energy ``u_t^2 / (2 W_tt)`` never grows; with ``force * h`` it grew
  hundreds of times (the probe's x632 at ``mu`` = 0.4).
* Finite inputs that used to be accepted and then failed at the first step (a degenerate
  mass matrix) or gave NaN: shapes under 0.1 mm, positions beyond 1e6 m, velocities beyond
  1e3 m/s or rad/s, stiffness or damping beyond 1e9, friction beyond 1e6, a tolerance beyond
  1 cm, an infinite capture radius. Each message names the field.
"""

from __future__ import annotations

import copy
import re
from pathlib import Path

import numpy as np
import pytest
import yaml

import ffsim_ros.dynamics as D
from ffsim_ros.scene import (
    Box,
    Capsule,
    CompliantLaw,
    Cylinder,
    Gripper,
    Handle,
    ImpactLaw,
    ScenarioError,
    Scene,
    Sphere,
    rigid_target,
    scene_from_dict,
    shapes_from_urdf,
    solve_impact,
    urdf_target,
)
from ffsim_ros.scene.geometry import MIN_SHAPE_SIZE

ROOT = Path(__file__).resolve().parents[1]
ROBOT_URDF = ROOT / 'urdf' / 'ffsim_servicer_7dof.urdf'
SCENARIO = ROOT / 'config' / 'scenarios' / 'capture.yaml'

# ----------------------------------------------------------------------------------------------
# the compliant law's friction
# ----------------------------------------------------------------------------------------------

#: The probe's two spheres: 1 kg, radius 0.1 m (I = 0.4 m r^2), in the contact frame (n, t1, t2).
W_SPHERES = np.diag([2.0, 7.0, 7.0])
N = np.array([1.0, 0.0, 0.0])


def _refused_naming(call, words) -> None:
    """``call()`` raises a ValueError whose message holds every one of ``words``."""
    with pytest.raises(ValueError) as info:
        call()
    for w in words:
        assert w in str(info.value), str(info.value)


def _random_spd(rng: np.random.Generator) -> np.ndarray:
    A = rng.normal(size=(3, 3))
    return A @ A.T * 10.0 ** rng.uniform(-2, 2) + 1e-3 * np.eye(3)


@pytest.mark.parametrize('damping', [0.0, 50.0])
def test_impulse_without_W_is_the_force_over_h(damping):
    law = CompliantLaw(stiffness=2e4, damping=damping, friction=0.4)
    rng = np.random.default_rng(7)
    for _ in range(50):
        u, n = rng.normal(size=3), rng.normal(size=3)
        n /= np.linalg.norm(n)
        depth, h = rng.uniform(0.0, 1e-2), rng.uniform(1e-4, 1e-2)
        np.testing.assert_array_equal(law.impulse(depth, u, n, h), law.force(depth, u, n) * h)


@pytest.mark.parametrize('mu', [0.4, 1.0, 1e6])
@pytest.mark.parametrize('damping', [0.0, 50.0])
def test_impulse_friction_never_reverses_the_slip_nor_adds_energy(mu, damping):
    """Random ``W`` (coupled normal and tangential rows), velocities and depths: the normal
    part is the force's, the friction part lies along ``-s`` within Coulomb's impulse, leaves
    ``s . u_after >= 0`` and does no positive work, ``(u + W P_n) . P_f + P_f W P_f / 2 <= 0``;
    where Coulomb's impulse is below the sticking one, the impulse is ``force * h``."""
    law = CompliantLaw(stiffness=2e4, damping=damping, friction=mu, stiction_speed=1e-3)
    rng = np.random.default_rng(11)
    limited = free = 0
    for _ in range(2000):
        W = _random_spd(rng)
        n = rng.normal(size=3)
        n /= np.linalg.norm(n)
        u = rng.normal(size=3) * 10.0 ** rng.uniform(-5, 0)
        depth, h = rng.uniform(0.0, 5e-3), 10.0 ** rng.uniform(-4, -2)
        P = law.impulse(depth, u, n, h, W)
        F = law.force(depth, u, n)
        assert np.all(np.isfinite(P))
        p_n = max(0.0, law.stiffness * depth - law.damping * float(n @ u)) * h
        assert abs(float(n @ P) - p_n) <= 1e-14 * float(np.linalg.norm(P))
        ut = u - (n @ u) * n
        if p_n == 0.0 or np.linalg.norm(ut) == 0.0:
            np.testing.assert_array_equal(P - p_n * n, 0.0)
            continue
        s = ut / np.linalg.norm(ut)
        Pf = P - p_n * n
        lam = -float(s @ Pf)
        tiny = 1e-14 * float(np.linalg.norm(P))  # round-off of the split P = p_n n + P_f
        np.testing.assert_allclose(Pf, -lam * s, rtol=0, atol=tiny)
        coulomb = float(np.linalg.norm(F - (n @ F) * n)) * h
        assert -tiny <= lam <= coulomb * (1 + 1e-12) + tiny
        scale = float(np.linalg.norm(u) + np.linalg.norm(W @ P))
        u1 = u + p_n * (W @ n)  # after the normal impulse: friction may stop its slip only
        assert float(s @ (u + W @ P)) >= min(float(s @ u1), 0.0) - 1e-12 * scale
        work = -lam * float(s @ u1) + 0.5 * lam * lam * float(s @ W @ s)  # of P_f = -lam s
        assert work <= scale * (tiny + 1e-12 * abs(lam))
        if lam < coulomb * (1 - 1e-9) - tiny:
            limited += 1
        else:
            free += 1
            np.testing.assert_allclose(P, F * h, rtol=1e-12, atol=1e-15 * np.linalg.norm(F * h))
    assert limited > 100 and (free > 100 or mu == 1e6)


def _glancing(law: CompliantLaw, u_t: float, *, limited: bool, dt: float = 1e-3) -> np.ndarray:
    """The tangential kinetic energy ``|u_t|^2 / (2 W_tt)`` [J] after each kick of the two
    spheres meeting at 0.5 m/s with a slip ``u_t`` [m/s], stepped as the scene steps a
    compliant contact (kick ``h = dt / 2``, drift ``dt``, kick), ``W`` frozen; ``limited``:
    the scene passes ``W`` (else ``force * h``)."""
    W = W_SPHERES
    u = np.array([-0.5, u_t, 0.3 * u_t])
    depth, out = 0.0, [0.5 * float(u[1:] @ u[1:]) / W[1, 1]]

    def kick() -> None:
        nonlocal u
        if depth > 0.0:
            P = law.impulse(depth, u, N, 0.5 * dt, W if limited else None)
            u = u + W @ P
        out.append(0.5 * float(u[1:] @ u[1:]) / W[1, 1])

    for _ in range(1000):
        kick()
        depth -= float(N @ u) * dt  # the depth grows while approaching (n . u < 0)
        kick()
        if depth < 0.0 and N @ u > 0.0:
            break
    else:  # pragma: no cover
        raise AssertionError('the spheres did not separate')
    return np.array(out)


@pytest.mark.parametrize('u_t', [1e-4, 1e-3, 1e-2])
@pytest.mark.parametrize('mu', [0.4, 1.0])
@pytest.mark.parametrize('damping', [0.0, 50.0])
def test_glancing_contact_friction_creates_no_energy(damping, mu, u_t):
    law = CompliantLaw(stiffness=2e4, damping=damping, friction=mu, stiction_speed=1e-3)
    k = _glancing(law, u_t, limited=True)
    assert np.all(np.diff(k) <= 1e-13 * k[0]), np.diff(k).max() / k[0]
    assert k[-1] < 0.5 * k[0]  # friction did act: the slip stopped (sticking)
    # the same contact stepped with force * h (the law before): energy out of nothing
    if damping == 0.0 and u_t == 1e-4:
        assert _glancing(law, u_t, limited=False)[-1] > 100.0 * k[0]


def test_impulse_refuses_bad_W_and_h():
    law = CompliantLaw(stiffness=2e4, friction=0.4)
    u = np.array([-0.1, 0.01, 0.0])
    for W, word in ((np.eye(2), 'shape (2, 2)'), (np.full((3, 3), np.nan), 'finite')):
        with pytest.raises(ValueError, match=r'impulse: W: .*' + re.escape(word)):
            law.impulse(1e-3, u, N, 1e-3, W)
    for h in (-1e-3, np.inf, np.nan):
        with pytest.raises(ValueError, match='impulse: h: expected a finite duration >= 0 s'):
            law.impulse(1e-3, u, N, h, W_SPHERES)


# the scene after Scene._kick passes W (``law.impulse(-c.distance, u, c.normal, h, W)``)


def _tangential_energy_after(robot, shapes, mu: float, damping: float, u_t: float) -> float:
    m, r = 1.0, 0.1
    law = CompliantLaw(stiffness=2e4, damping=damping, friction=mu, stiction_speed=1e-3)
    scene = Scene(robot, gripper=Gripper('ee_link'), shapes=shapes, dt=1e-3, contact=law)
    ball = dict(mass=m, shape=Sphere(r))
    scene.add_target(rigid_target('a', **ball, position=(0, 6, 0), linear_velocity=(u_t, 0, 0.5)))
    scene.add_target(rigid_target('b', **ball, position=(0, 6, 0.25)))
    scene.advance(300)
    inertia = 0.4 * m * r * r
    return sum(
        0.5 * m * float(v[:2] @ v[:2]) + 0.5 * inertia * float(v[3:6] @ v[3:6])
        for v in (scene.target_state(name)[1] for name in 'ab')
    )


def test_scene_glancing_contact_friction_creates_no_energy():
    """The probe's scene: the in-plane and spin kinetic energy of the two spheres after the
    contact, with friction, is no more than without (the tilt of the normal over the contact
    moves some normal energy into it: x1.7 frictionless). Before: x632 at mu 0.4."""
    robot = D.load_urdf(str(ROBOT_URDF), floating_base=True)
    shapes = shapes_from_urdf(str(ROBOT_URDF), model=robot)
    for damping in (0.0, 50.0):
        for u_t in (1e-4, 1e-2):
            free = _tangential_energy_after(robot, shapes, 0.0, damping, u_t)
            for mu in (0.4, 1.0):
                assert _tangential_energy_after(robot, shapes, mu, damping, u_t) <= free


# ----------------------------------------------------------------------------------------------
# bounds of the laws
# ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    'kwargs, words',
    [
        ({'friction': 1e308}, ['friction', '[0, 1e+06]', '1e+308']),
        ({'friction': 1.000001e6}, ['friction', '1000001']),
        ({'tolerance': 0.5}, ['tolerance', '(0, 0.01] m', '0.5']),
        ({'tolerance': np.inf}, ['tolerance', 'inf']),
    ],
)
def test_impact_law_bounds(kwargs, words):
    _refused_naming(lambda: ImpactLaw(**kwargs), words)


def test_impact_law_at_the_bounds_works():
    law = ImpactLaw(restitution=0.5, friction=1e6, tolerance=1e-2)
    sol = solve_impact(np.diag([0.53, 1.87, 1.87]), [-0.3, 0.5, 0.2], N, 0.5, law.friction)
    assert np.all(np.isfinite(sol.impulse)) and sol.energy_loss >= 0.0
    with pytest.raises(ValueError, match=r'solve_impact: friction: .*1e\+308'):
        solve_impact(np.eye(3), [-0.3, 0.5, 0.2], N, 0.5, 1e308)


@pytest.mark.parametrize(
    'kwargs, words',
    [
        ({'stiffness': 1e15}, ['stiffness', '(0, 1e+09] N/m', 'ImpactLaw', '1000000000000000.0']),
        ({'stiffness': np.inf}, ['stiffness', 'inf']),
        (
            {'stiffness': 1e4, 'damping': 1e15},
            ['damping', '[0, 1e+09] N s/m', '1000000000000000.0'],
        ),
        ({'stiffness': 1e4, 'friction': 1e308}, ['friction', '[0, 1e+06]', '1e+308']),
        ({'stiffness': 1e4, 'stiction_speed': 0.0}, ['stiction_speed', '> 0']),
    ],
)
def test_compliant_law_bounds(kwargs, words):
    _refused_naming(lambda: CompliantLaw(**kwargs), words)
    CompliantLaw(stiffness=1e9, damping=1e9, friction=1e6)  # at the bounds: taken


# ----------------------------------------------------------------------------------------------
# shapes, states and handles
# ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    'make, word',
    [
        (lambda: Sphere(1e-7), 'sphere radius'),
        (lambda: Box((1.0, 1.0, 5e-5)), 'box size'),
        (lambda: Cylinder(0.1, 1e-5), 'cylinder length'),
        (lambda: Capsule(1e-5, 0.1), 'capsule radius'),
    ],
)
def test_shapes_under_a_tenth_of_a_millimetre_are_refused(make, word):
    with pytest.raises(ValueError) as info:
        make()
    assert str(info.value).startswith(f'{word}: expected at least 0.0001 m'), str(info.value)
    assert Sphere(MIN_SHAPE_SIZE).radius == MIN_SHAPE_SIZE


def test_flat_mesh_bounding_box_is_a_thin_plate(tmp_path):
    stl = tmp_path / 'tri.stl'
    stl.write_text(
        'solid t\nfacet normal 0 0 1\nouter loop\nvertex 0 0 0\nvertex 1 0 0\nvertex 0 1 0\n'
        'endloop\nendfacet\nendsolid t\n'
    )
    urdf = (
        '<robot name="r"><link name="a"><inertial><mass value="1"/><inertia ixx="1" ixy="0" '
        'ixz="0" iyy="1" iyz="0" izz="1"/></inertial><collision><geometry><mesh filename="'
        f'{stl}"/></geometry></collision></link></robot>'
    )
    (shape,) = shapes_from_urdf(urdf, meshes='bounding_box')
    np.testing.assert_allclose(shape.shape.size, [1.0, 1.0, MIN_SHAPE_SIZE])


def _ball(**kwargs):
    return rigid_target('t', mass=5.0, shape=Sphere(0.2), **kwargs)


@pytest.mark.parametrize(
    'kwargs, words',
    [
        ({'position': (1e300, 6, 0)}, ["target 't' position", '<= 1e+06 m', '1e+300']),
        ({'position': (0, -1e6 - 1, 0)}, ["target 't' position", '-1000001']),
        ({'linear_velocity': (1e200, 0, 0)}, ['linear_velocity', '<= 1000 m/s', '1e+200']),
        ({'angular_velocity': (0, 0, 1001)}, ['angular_velocity', '<= 1000 rad/s', '1001']),
    ],
)
def test_target_state_beyond_the_world_is_refused(kwargs, words):
    _refused_naming(lambda: _ball(**kwargs), words)


def test_target_state_at_the_bounds_is_taken_and_set_state_is_bounded():
    t = _ball(position=(1e6, -1e6, 0), linear_velocity=(1e3, 0, 0), angular_velocity=(0, 0, 1e3))
    np.testing.assert_allclose(t.q[:3], [1e6, -1e6, 0.0])
    robot = D.load_urdf(str(ROBOT_URDF), floating_base=True)
    scene = Scene(robot, gripper=None, shapes=shapes_from_urdf(str(ROBOT_URDF), model=robot))
    scene.add_target(_ball(position=(0, 6, 0)))
    with pytest.raises(ValueError, match=r"target 't' linear_velocity: .*<= 1000 m/s"):
        scene.set_target_state('t', linear_velocity=(2e3, 0, 0))
    with pytest.raises(ValueError, match=r"target 'u' joint_velocities: .*<= 1000 rad/s"):
        urdf_target('u', ROBOT_URDF, position=(0, 9, 0), joint_velocities=[2e3] * 7)


def test_handle_capture_radius_must_be_finite():
    with pytest.raises(ValueError) as info:
        Handle('h', 'body', radius=np.inf)
    assert str(info.value).startswith("handle 'h': radius expected a finite value > 0 [m]")
    h = Handle('h', 'body', max_angle=np.inf, max_speed=np.inf, max_rate=np.inf)
    assert h.max_speed == np.inf  # inf: any, for these


# ----------------------------------------------------------------------------------------------
# scenarios
# ----------------------------------------------------------------------------------------------


def _scenario() -> dict:
    data = yaml.safe_load(SCENARIO.read_text())
    data['robot']['urdf'] = str(ROBOT_URDF)
    return data


def _set(data: dict, path: tuple, value) -> dict:
    data = copy.deepcopy(data)
    d = data
    for k in path[:-1]:
        d = d[k]
    d[path[-1]] = value
    return data


@pytest.mark.parametrize(
    'path, value, words',
    [
        (('targets', 0, 'position'), [1e300, 6, 0], ['targets[0].position', '<= 1e+06 m']),
        (('robot', 'base_position'), [1e300, 0, 0], ['robot.base_position', '<= 1e+06 m']),
        (('targets', 0, 'linear_velocity'), [0, 1e200, 0], ['targets[0].linear_velocity']),
        (('robot', 'joint_velocities'), [2e3] * 7, ['robot.joint_velocities', '<= 1000']),
        (('robot', 'joint_positions'), [1e300] * 7, ['robot.joint_positions', '<= 1000']),
        (
            ('targets', 0, 'tumble'),
            {'spin_rate': 1e6, 'nutation': 0.1},
            ['targets[0].tumble', '<= 1000 rad/s', '1000000.0'],
        ),
        (('targets', 0, 'shape'), {'type': 'sphere', 'radius': 1e-7}, ['targets[0].shape']),
        (('targets', 0, 'handles', 0, 'radius'), float('inf'), ['handles[0]', 'radius', 'inf']),
        (
            ('contact',),
            {'law': 'compliant', 'stiffness': 1e15},
            ['contact: stiffness', '1000000000000000.0'],
        ),
        (('contact',), {'law': 'impact', 'friction': 1e308}, ['contact: friction', '1e+308']),
        (('contact',), {'law': 'impact', 'tolerance': 0.5}, ['contact: tolerance', '0.5']),
    ],
)
def test_scenario_bounds_are_named(path, value, words):
    with pytest.raises(ScenarioError) as info:
        scene_from_dict(_set(_scenario(), path, value))
    for w in words:
        assert w in str(info.value), str(info.value)
