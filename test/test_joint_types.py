"""Spherical (ball) and universal joints in the core, against Pinocchio, and the model format.

The Pinocchio model is built joint by joint from the same body data (not through our code):
``JointModelSpherical`` (quaternion (x, y, z, w), child-frame angular velocity: our
convention), ``JointModelUniversal(axis1, axis2)`` (``R = Rot(axis1, q1) Rot(axis2, q2)``),
``JointModelRevoluteUnaligned`` / ``JointModelPrismaticUnaligned`` and a free-flyer root. Our
joint coordinates then equal Pinocchio's one to one; only the base differs (base CoM and
inertial-frame twist vs root origin and body twist), converted with the map ``v_p = T v``,
``a_p = T a + Tdot v``, ``tau = T^T tau_p`` derived in ``test_pinocchio_oracle.py``.
"""

from __future__ import annotations

import math
import textwrap

import numpy as np
import pytest
from pinocchio_twin import pinocchio_twin

from ffsim_ros import dynamics as D
from ffsim_ros.dynamics.builder import (
    ModelBuilder,
    load_model,
    model_from_dict,
    random_configuration,
    random_model,
)

try:  # Pinocchio is a test-only oracle: only the tests comparing with it need it
    import pinocchio as pin
except ImportError:  # pragma: no cover - exercised where pinocchio is not installed
    pin = None

needs_pinocchio = pytest.mark.skipif(pin is None, reason='pinocchio (test-only oracle) missing')

RTOL = 1e-10
MIXED = ('revolute', 'prismatic', 'spherical', 'universal')


def skew(a: np.ndarray) -> np.ndarray:
    return np.array([[0.0, -a[2], a[1]], [a[2], 0.0, -a[0]], [-a[1], a[0], 0.0]])


def quat_to_rot(qxyzw: np.ndarray) -> np.ndarray:
    x, y, z, w = np.asarray(qxyzw, float) / np.linalg.norm(qxyzw)
    return np.array(
        [
            [1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
            [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
            [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)],
        ]
    )


def assert_close(ours, ref, what: str, rtol: float = RTOL) -> None:
    ours, ref = np.asarray(ours, float), np.asarray(ref, float)
    err = float(np.linalg.norm(ours - ref))
    assert err <= rtol * max(1.0, float(np.linalg.norm(ref))), f'{what}: error {err:.3e}'


class PinTree:
    """Pinocchio twin of a builder model (joint by joint), in our conventions."""

    def __init__(self, model: D.Model) -> None:
        a = model.arrays
        pm, jid = pinocchio_twin(model, pin)
        assert pm.nv == model.nv and pm.nq == model.nq
        self.pm, self.pd, self.jid = pm, pm.createData(), jid
        self.model = model
        self.c0 = np.array(a.com[0])

    def q_pin(self, q: np.ndarray) -> np.ndarray:
        qp = np.array(q, float)
        if self.model.floating_base:
            qp[:3] = q[:3] - quat_to_rot(q[3:7]) @ self.c0
        return qp

    def T(self, q: np.ndarray) -> np.ndarray:
        T = np.eye(self.model.nv)
        if self.model.floating_base:
            Rt = quat_to_rot(q[3:7]).T
            T[:3, :3] = Rt
            T[:3, 3:6] = skew(self.c0) @ Rt
            T[3:6, 3:6] = Rt
        return T

    def drift(self, q: np.ndarray, v: np.ndarray) -> np.ndarray:
        d = np.zeros(self.model.nv)
        if self.model.floating_base:
            d[:3] = -quat_to_rot(q[3:7]).T @ np.cross(v[3:6], v[:3])
        return d

    def mass_matrix(self, q):
        M = pin.crba(self.pm, self.pd, self.q_pin(q))
        M = np.triu(M) + np.triu(M, 1).T
        T = self.T(q)
        return T.T @ M @ T

    def inverse_dynamics(self, q, v, a):
        T = self.T(q)
        tp = pin.rnea(self.pm, self.pd, self.q_pin(q), T @ v, T @ a + self.drift(q, v))
        return T.T @ tp

    def forward_dynamics(self, q, v, gen):
        T = self.T(q)
        ap = pin.aba(self.pm, self.pd, self.q_pin(q), T @ v, np.linalg.solve(T.T, gen))
        return np.linalg.solve(T, ap - self.drift(q, v))

    def body_pose(self, q, i):
        pin.forwardKinematics(self.pm, self.pd, self.q_pin(q))
        M = self.pd.oMi[self.jid[i]] if i or self.model.floating_base else pin.SE3.Identity()
        return np.array(M.translation), np.array(M.rotation)

    def body_jacobian(self, q, i):
        """``[velocity of the body origin; angular velocity] = J v``, inertial frame."""
        J = pin.computeJointJacobian(self.pm, self.pd, self.q_pin(q), self.jid[i])
        pin.forwardKinematics(self.pm, self.pd, self.q_pin(q))
        X = self.pd.oMi[self.jid[i]]
        Jw = np.zeros((6, self.model.nv))
        Jw[:3] = X.rotation @ J[:3]
        Jw[3:] = X.rotation @ J[3:]
        return Jw @ self.T(q)

    def momentum_origin(self, q, v):
        hg = pin.computeCentroidalMomentum(self.pm, self.pd, self.q_pin(q), self.T(q) @ v)
        P = np.array(hg.linear)
        c = np.array(self.pd.com[0])
        return np.concatenate([P, np.array(hg.angular) + np.cross(c, P)])


CASES = [
    (seed, n, floating, g)
    for seed, n, floating, g in [
        (1, 1, True, (0, 0, 0)),
        (2, 4, True, (0, 0, -9.81)),
        (3, 7, True, (0, 0, 0)),
        (4, 9, True, (1.0, -2.0, -9.81)),
        (5, 3, False, (0, 0, -9.81)),
        (6, 8, False, (0, 0, -9.81)),
        (7, 12, True, (0, 0, 0)),
    ]
]
IDS = [f'seed{s}-n{n}-{"float" if f else "fixed"}' for s, n, f, _ in CASES]


def _case(case, types=MIXED):
    seed, n, floating, g = case
    model = random_model(seed, n, joint_types=types, floating_base=floating, gravity=g)
    return model, np.random.default_rng(seed)


def _state(model, rng):
    q = random_configuration(model, rng)
    return q, rng.normal(size=model.nv), rng.normal(size=model.nv)


@pytest.mark.parametrize('case', CASES, ids=IDS)
def test_every_joint_type_is_drawn(case):
    model, _ = _case(case)
    types = set(model.joint_types)
    if case[1] >= len(MIXED):
        assert {'spherical', 'universal'} <= types, types
    spherical = sum(t == 'spherical' for t in model.joint_types)
    assert model.nq == model.nv + spherical + (1 if model.floating_base else 0)


@needs_pinocchio
@pytest.mark.parametrize('case', CASES, ids=IDS)
def test_dynamics_against_pinocchio(case):
    model, rng = _case(case)
    ref = PinTree(model)
    for _ in range(3):
        q, v, a = _state(model, rng)
        gen = rng.normal(size=model.nv) if model.floating_base else a
        assert_close(D.mass_matrix(model, q), ref.mass_matrix(q), 'mass matrix')
        assert_close(D.inverse_dynamics(model, q, v, a), ref.inverse_dynamics(q, v, a), 'rnea')
        assert_close(
            D.bias_forces(model, q, v), ref.inverse_dynamics(q, v, np.zeros(model.nv)), 'nle'
        )
        tau = gen[model.nv - model.n :]
        bw = gen[:6] if model.floating_base else None
        expect = ref.forward_dynamics(q, v, gen)
        for method in ('aba', 'crba'):
            got = D.forward_dynamics(model, q, v, tau, base_wrench=bw, method=method)
            assert_close(got, expect, f'forward dynamics ({method})')


@needs_pinocchio
@pytest.mark.parametrize('case', CASES, ids=IDS)
def test_kinematics_and_momentum_against_pinocchio(case):
    model, rng = _case(case)
    ref = PinTree(model)
    q, v, _ = _state(model, rng)
    R, p = D.body_poses(model, q)
    for i in range(1, len(model.body_names)):
        pr, Rr = ref.body_pose(q, i)
        assert_close(p[i], pr, f'position of body {i}')
        assert_close(R[i], Rr, f'orientation of body {i}')
        link = model.body_names[i]
        J = D.link_jacobian(model, q, link)
        assert_close(J, ref.body_jacobian(q, i), f'Jacobian of {link}')
    assert_close(D.momentum(model, q, v), ref.momentum_origin(q, v), 'momentum')


def test_ball_joint_velocity_is_child_frame_angular_velocity():
    """Finite differences: the body's inertial angular velocity is ``R_child w_local``."""
    b = ModelBuilder('ball', floating_base=False)
    b.add_base('ground', mass=1.0, inertia=[1, 0, 0, 1, 0, 1])
    b.add_body(
        'bob',
        parent='ground',
        joint='ball',
        joint_type='spherical',
        xyz=(0.1, 0.2, 0.3),
        mass=2.0,
        com=(0, 0, -1),
        inertia=[0.1, 0, 0, 0.2, 0, 0.25],
    )
    model = b.build()
    rng = np.random.default_rng(3)
    q = random_configuration(model, rng)
    w_local = rng.normal(size=3)
    h = 1e-6
    Rp = D.body_poses(model, D.integrate(model, q, w_local, h))[0][1]
    Rm = D.body_poses(model, D.integrate(model, q, w_local, -h))[0][1]
    R = D.body_poses(model, q)[0][1]
    W = (Rp - Rm) / (2 * h) @ R.T
    w_world = np.array([W[2, 1], W[0, 2], W[1, 0]])
    np.testing.assert_allclose(w_world, R @ w_local, atol=1e-8)
    np.testing.assert_allclose(D.link_jacobian(model, q, 'bob')[3:], R, atol=1e-14)


@needs_pinocchio
@pytest.mark.parametrize('case', CASES[:4], ids=IDS[:4])
def test_integrate_and_difference_against_pinocchio(case):
    model, rng = _case(case)
    ref = PinTree(model)
    q, v, _ = _state(model, rng)
    dt = 0.3
    ours = D.integrate(model, q, v, dt)
    # joints: Pinocchio's Lie-group integrate (spherical: Q exp(w dt), the others additive)
    vp = v.copy()
    if model.floating_base:
        vp[:6] = 0.0
    joints = pin.integrate(ref.pm, ref.q_pin(q), vp * dt)
    off = 7 if model.floating_base else 0
    assert_close(ours[off:], joints[off:], 'joint part of integrate')
    assert_close(D.integrate(model, ours, D.difference(model, ours, q)), q, 'difference')
    assert_close(D.difference(model, q, ours), v * dt, 'difference of integrate')


def test_free_ball_chain_conserves_momentum_and_energy():
    model = random_model(11, 6, joint_types=('spherical', 'universal'))
    rng = np.random.default_rng(11)
    q, v, _ = _state(model, rng)
    h0 = D.momentum(model, q, v, about='com')
    e0 = D.kinetic_energy(model, q, v)
    tau = np.zeros(model.n)
    for _ in range(400):
        q, v = D.step(model, q, v, tau, 1e-3)
    h1 = D.momentum(model, q, v, about='com')
    assert np.linalg.norm(h1 - h0) <= 1e-10 * np.linalg.norm(h0)
    assert abs(D.kinetic_energy(model, q, v) - e0) <= 1e-7 * e0
    # every quaternion stays a unit quaternion
    for k, kind in enumerate(model.joint_types):
        if kind == 'spherical':
            iq = model.idx_q[k]
            assert abs(np.linalg.norm(q[iq : iq + 4]) - 1.0) < 1e-12


def test_rk4_is_fourth_order_with_ball_joints():
    model = random_model(12, 4, joint_types=('spherical',), gravity=(0, 0, -9.81))
    rng = np.random.default_rng(12)
    q0, v0, _ = _state(model, rng)
    tau = rng.normal(size=model.n)

    def run(dt):
        q, v = q0, v0
        for _ in range(int(round(0.2 / dt))):
            q, v = D.step(model, q, v, tau, dt)
        return q, v

    qr, vr = run(1.25e-4)
    errs = []
    for dt in (4e-3, 2e-3):
        q, v = run(dt)
        errs.append(np.linalg.norm(D.difference(model, qr, q)) + np.linalg.norm(v - vr))
    order = np.log2(errs[0] / errs[1])
    assert 3.6 < order < 4.4, errs


@pytest.mark.parametrize('joint_dynamics', [False, True])
def test_batched_calls_with_ball_joints_match_single_states(joint_dynamics):
    model = random_model(13, 5, joint_types=MIXED, gravity=(0, 0, -9.81))
    model = D.with_joint_dynamics(model, joint_dynamics)
    rng = np.random.default_rng(13)
    Q = np.array([random_configuration(model, rng) for _ in range(6)])
    V = rng.normal(size=(6, model.nv))
    T = rng.normal(size=(6, model.n))
    A = D.forward_dynamics(model, Q, V, T)
    # the batched rows run ABA in one compiled body (views carved once per chunk), the single
    # call through the entry point: the same operations in the same order, bit for bit
    np.testing.assert_array_equal(
        A, [D.forward_dynamics(model, Q[k], V[k], T[k]) for k in range(6)]
    )
    H = D.mass_matrix(model, Q)
    Qn, Vn = D.step(model, Q, V, T, 1e-3)
    for k in range(6):
        np.testing.assert_allclose(A[k], D.forward_dynamics(model, Q[k], V[k], T[k]), atol=1e-12)
        np.testing.assert_allclose(H[k], D.mass_matrix(model, Q[k]), atol=1e-12)
        qn, vn = D.step(model, Q[k], V[k], T[k], 1e-3)
        np.testing.assert_allclose(Qn[k], qn, atol=1e-13)
        np.testing.assert_allclose(Vn[k], vn, atol=1e-12)


def test_generalized_jacobian_with_ball_joints_moves_the_tip():
    """Under zero momentum the tip velocity is ``J* phidot`` (finite differences of FK)."""
    model = random_model(14, 5, joint_types=MIXED)
    rng = np.random.default_rng(14)
    q = random_configuration(model, rng)
    phidot = rng.normal(size=model.n)
    x0 = D.base_velocity_from_momentum(model, q, phidot)
    v = np.concatenate([x0, phidot])
    np.testing.assert_allclose(D.momentum(model, q, v), 0.0, atol=1e-12)
    link = 'tip_5'
    h = 1e-6
    pp = D.link_pose(model, D.integrate(model, q, v, h), link)[0]
    pm = D.link_pose(model, D.integrate(model, q, v, -h), link)[0]
    Jg = D.generalized_jacobian(model, q, link)
    np.testing.assert_allclose(Jg[:3] @ phidot, (pp - pm) / (2 * h), atol=1e-7)


# --------------------------------------------------------------------------------------------
# model format
# --------------------------------------------------------------------------------------------

YAML = textwrap.dedent(
    """
    name: ball_arm
    floating_base: true
    gravity: [0.0, 0.0, 0.0]
    base:
      link: base
      mass: 100.0
      com: [0.0, 0.0, 0.1]
      inertia: [10.0, 0.0, 0.0, 12.0, 0.0, 14.0]
    bodies:
      - link: upper
        parent: base
        joint: {name: shoulder, type: spherical, xyz: [0.5, 0.0, 0.0], rpy: [0.0, 0.0, 0.3]}
        mass: 3.0
        com: [0.3, 0.0, 0.0]
        inertia: [0.01, 0.0, 0.0, 0.1, 0.0, 0.1]
      - link: fore
        parent: upper
        joint:
          name: elbow
          type: universal
          xyz: [0.6, 0.0, 0.0]
          axis: [0, 0, 1]
          axis2: [0, 1, 0]
          lower: [-1.0, -2.0]
          upper: 1.0
          effort: 20.0
        mass: 2.0
        com: [0.25, 0.0, 0.0]
        inertia: [0.01, 0.0, 0.0, 0.05, 0.0, 0.05]
      - link: hand
        parent: fore
        joint: {name: wrist, type: revolute, xyz: [0.5, 0, 0], axis: [1, 0, 0]}
        mass: 0.5
        inertia: [0.001, 0, 0, 0.001, 0, 0.001]
    frames:
      - {name: tool, parent: hand, xyz: [0.1, 0.0, 0.0]}
    """
)


def _builder_twin() -> D.Model:
    b = ModelBuilder('ball_arm')
    b.add_base('base', mass=100.0, com=(0, 0, 0.1), inertia=np.diag([10.0, 12.0, 14.0]))
    b.add_body(
        'upper',
        parent='base',
        joint='shoulder',
        joint_type='spherical',
        xyz=(0.5, 0, 0),
        rpy=(0, 0, 0.3),
        mass=3.0,
        com=(0.3, 0, 0),
        inertia=[0.01, 0, 0, 0.1, 0, 0.1],
    )
    b.add_body(
        'fore',
        parent='upper',
        joint='elbow',
        joint_type='universal',
        xyz=(0.6, 0, 0),
        axis=(0, 0, 1),
        axis2=(0, 1, 0),
        lower=(-1.0, -2.0),
        upper=1.0,
        effort=20.0,
        mass=2.0,
        com=(0.25, 0, 0),
        inertia=[0.01, 0, 0, 0.05, 0, 0.05],
    )
    b.add_body(
        'hand',
        parent='fore',
        joint='wrist',
        joint_type='revolute',
        xyz=(0.5, 0, 0),
        axis=(1, 0, 0),
        mass=0.5,
        inertia=[0.001, 0, 0, 0.001, 0, 0.001],
    )
    b.add_frame('tool', parent='hand', xyz=(0.1, 0, 0))
    return b.build()


def test_yaml_and_builder_give_the_same_model(tmp_path):
    path = tmp_path / 'ball_arm.yaml'
    path.write_text(YAML)
    m1 = load_model(path)
    m2 = load_model(YAML)
    m3 = _builder_twin()
    for m in (m1, m2):
        assert m.joint_types == m3.joint_types == ('spherical', 'universal', 'revolute')
        assert (m.nq, m.nv, m.n) == (m3.nq, m3.nv, m3.n) == (7 + 4 + 2 + 1, 6 + 3 + 2 + 1, 6)
        for field in m3.arrays._fields:
            np.testing.assert_array_equal(getattr(m.arrays, field), getattr(m3.arrays, field))
    np.testing.assert_array_equal(m1.lower, [-np.inf] * 3 + [-1.0, -2.0, -np.inf])
    np.testing.assert_array_equal(m1.upper, [np.inf] * 3 + [1.0, 1.0, np.inf])
    np.testing.assert_array_equal(m1.effort_limit, [np.inf] * 3 + [20.0, 20.0, np.inf])
    assert m1.joint_q_slice('elbow') == slice(11, 13)
    assert m1.joint_v_slice('shoulder') == slice(6, 9)
    assert not m1.single_dof_joints
    # the tool frame at the neutral pose: the shoulder 0.5 m along the base x axis, then
    # 0.6 + 0.5 + 0.1 m along the x axis turned by the shoulder's yaw of 0.3 rad
    p, _ = D.link_pose(m1, D.neutral(m1), 'tool')
    expect = np.array([0.5, 0.0, 0.0]) + 1.2 * np.array([np.cos(0.3), np.sin(0.3), 0.0])
    base_link = D.base_link_state(m1, D.neutral(m1))[0]
    np.testing.assert_allclose(p - base_link, expect, atol=1e-14)


def test_load_model_delegates_urdf():
    from ffsim_ros.resources import sample_robot

    m = load_model(sample_robot('ffsim_servicer_7dof'))
    assert m.single_dof_joints and m.n == 7


@pytest.mark.parametrize(
    'mutate, message',
    [
        (lambda d: d['bodies'][1]['joint'].pop('axis2'), 'needs axis2'),
        (lambda d: d['bodies'][1]['joint'].update(axis2=[0, 0, 2]), 'must not be parallel'),
        (lambda d: d['bodies'][0]['joint'].update(lower=-1.0), 'no position limits'),
        (lambda d: d['bodies'][0].update(parent='nowhere'), "unknown parent link 'nowhere'"),
        (lambda d: d['bodies'][0]['joint'].update(type='ball'), "got 'ball'"),
        (lambda d: d['bodies'][0].update(inertia=[1, 2]), 'expected [ixx, ixy'),
        (lambda d: d['bodies'][0].update(colour='red'), "unknown keys ['colour']"),
        (lambda d: d['bodies'][1]['joint'].update(lower=[1, 2, 3]), 'expected a scalar or 2'),
        (lambda d: d.pop('base'), "missing key 'base'"),
        (lambda d: d['bodies'][2]['joint'].update(axis=[0, 0, 0]), 'non-zero finite 3-vector'),
        (lambda d: d['bodies'][0].update(inertia=[1, 0, 0, 1, 0, 3]), 'triangle inequality'),
        # wrong types: named, never str()/bool()/float() of whatever came (an adversarial probe)
        (lambda d: d.update(floating_base='false'), 'floating_base: expected true or false'),
        (lambda d: d.update(name=None), 'name: expected a non-empty string, got a NoneType'),
        (lambda d: d.update(bodies={'a': 1}), 'bodies: expected a list, got dict'),
        (lambda d: d['base'].update(mass=True), 'mass: expected a finite number, got True'),
        (lambda d: d['bodies'][0].update(mass=[1, 2]), 'mass: expected a finite number'),
        (lambda d: d['bodies'][0].update(link=[1, 2]), 'bodies[0].link: expected a non-empty'),
        (lambda d: d['bodies'][0].update(com='abc'), 'com: expected 3 finite values'),
        (lambda d: d['bodies'][0].update(com=[[1], [2, 3], 4]), 'com: expected 3 finite'),
        (lambda d: d['bodies'][0].update(inertia=None), 'inertia: expected [ixx'),
        (lambda d: d['bodies'][1]['joint'].update(lower=None), 'lower expected a number'),
        (lambda d: d['bodies'][1]['joint'].update(effort=True), 'effort expected a number'),
        (lambda d: d['bodies'][1]['joint'].update(damping=math.inf), 'damping expected finite'),
        (lambda d: d['bodies'][1]['joint'].update(upper=-math.inf), 'upper expected numbers'),
        (lambda d: d['bodies'][1]['joint'].update(name=None), 'joint name: expected a non-empty'),
    ],
)
def test_model_format_errors_name_what_is_wrong(mutate, message):
    import yaml

    data = yaml.safe_load(YAML)
    mutate(data)
    with pytest.raises(ValueError, match=None) as info:
        model_from_dict(data)
    assert message in str(info.value), str(info.value)


def test_bad_yaml_text_is_a_clear_error(tmp_path):
    with pytest.raises(ValueError, match='expected a mapping'):
        load_model('just a string')
    with pytest.raises(ValueError, match='malformed YAML'):
        load_model('base: [1, 2')
    with pytest.raises(ValueError, match=r"duplicated key 'mass' \(first on line 2\)"):
        load_model('base:\n  mass: 1.0\n  mass: 99.0\n')
    # files: missing, a directory, binary, each named
    with pytest.raises(FileNotFoundError, match='no_such.yaml.*no such file'):
        load_model(str(tmp_path / 'no_such.yaml'))
    with pytest.raises(ValueError, match='expected a file'):
        load_model(str(tmp_path))
    binary = tmp_path / 'model.yaml'
    binary.write_bytes(b'\xff\xfe\x00garbage')
    with pytest.raises(ValueError, match=r'model.yaml.*expected UTF-8'):
        load_model(str(binary))
    # a 600-byte alias bomb in a name: refused before anything walks it
    bomb = ['a: &a [x, x, x, x, x, x, x, x, x, x]']
    for k in range(1, 8):
        bomb.append(f'{chr(97 + k)}: &{chr(97 + k)} [' + ', '.join([f'*{chr(96 + k)}'] * 10) + ']')
    bomb.append('name: *h')
    with pytest.raises(ValueError, match='expected at most 1000000 values'):
        load_model('\n'.join(bomb))


# --------------------------------------------------------------------------------------------
# Mufti's maximal coordinates (seed 001) with ball and universal joints
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize('case', CASES, ids=IDS)
def test_maximal_coordinate_methods_match_aba(case):
    model, rng = _case(case)
    for _ in range(2):
        q, v, _ = _state(model, rng)
        tau = rng.normal(size=model.n)
        bw = rng.normal(size=6) if model.floating_base else None
        lw = {f'tip_{k}': rng.normal(size=6) for k in range(0, case[1] + 1, 2)}
        ref = D.forward_dynamics(model, q, v, tau, base_wrench=bw, link_wrenches=lw)
        for method in ('kkt', 'nullspace', 'multipliers'):
            got = D.forward_dynamics(
                model, q, v, tau, base_wrench=bw, link_wrenches=lw, method=method
            )
            assert_close(got, ref, method, rtol=1e-9)


def _spherical_pendulum(m, c, Ic, g):
    b = ModelBuilder('spherical_pendulum', floating_base=False, gravity=g)
    b.add_base('ground', mass=1.0, inertia=[1, 0, 0, 1, 0, 1])
    b.add_body(
        'bob',
        parent='ground',
        joint='ball',
        joint_type='spherical',
        xyz=(0, 0, 0),
        mass=m,
        com=c,
        inertia=Ic,
    )
    return b.build()


@pytest.mark.parametrize('seed', [0, 1, 2])
def test_spherical_pendulum_reaction_closed_form(seed):
    """Euler's equations about the pivot by hand; a ball joint transmits no constraint moment."""
    rng = np.random.default_rng(seed)
    m, c, g = 2.0, np.array([0.1, -0.05, -0.7]), np.array([0.0, 0.0, -9.81])
    Ic = np.array([[0.08, 0.01, -0.02], [0.01, 0.06, 0.005], [-0.02, 0.005, 0.05]])
    model = _spherical_pendulum(m, c, Ic, g)
    quat = rng.normal(size=4)
    q = quat / np.linalg.norm(quat)
    w_loc, tau = rng.normal(size=3), rng.normal(size=3)
    R = quat_to_rot(q)
    r = R @ c
    Io = R @ (Ic + m * (c @ c * np.eye(3) - np.outer(c, c))) @ R.T  # about the pivot
    w = R @ w_loc
    alpha = np.linalg.solve(Io, np.cross(r, m * g) + R @ tau - np.cross(w, Io @ w))
    a_c = np.cross(alpha, r) + np.cross(w, np.cross(w, r))
    expect_f = m * (a_c - g)
    for method in ('kkt', 'nullspace', 'multipliers'):
        acc = D.forward_dynamics(model, q, w_loc, tau, method=method)
        np.testing.assert_allclose(acc, R.T @ alpha, rtol=1e-12, atol=1e-12)
        reac = D.joint_reactions(model, q, w_loc, tau, method=method)['ball']
        np.testing.assert_allclose(reac[:3], expect_f, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(reac[3:], R @ tau, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(D.forward_dynamics(model, q, w_loc, tau), R.T @ alpha, atol=1e-12)


def test_universal_joint_constraint_torque_is_normal_to_both_axes():
    model = random_model(21, 4, joint_types=('universal',), gravity=(0, 0, -9.81))
    rng = np.random.default_rng(21)
    q, v, _ = _state(model, rng)
    tau = rng.normal(size=model.n)
    sol = D.maximal_dynamics(model, q, v, tau)
    reac = D.joint_reactions(model, q, v, tau)
    R, _ = D.body_poses(model, q)
    a = model.arrays
    for j, name in enumerate(model.joint_names):
        c = j + 1
        k1 = R[a.parent[c]] @ a.rot[c] @ a.axis[c]
        k2 = R[c] @ a.axis2[c]
        g = sol.constraint_torques[j]
        scale = max(1.0, np.linalg.norm(g))
        assert abs(g @ k1) < 1e-10 * scale and abs(g @ k2) < 1e-10 * scale
        # the moment the joint transmits about its axes is the actuation (tau . qdot power)
        np.testing.assert_allclose(
            [reac[name][3:] @ k1, reac[name][3:] @ k2], tau[2 * j : 2 * j + 2], atol=1e-10
        )


def _body_momenta(model, q, v):
    out = []
    for i, link in enumerate(model.body_names):
        _, R = D.link_pose(model, q, link)
        J = D.link_jacobian(model, q, link)
        w = J[3:] @ v
        lever = R @ model.arrays.com[i]
        rdot = J[:3] @ v + np.cross(w, lever)
        out.append(np.r_[model.arrays.mass[i] * rdot, R @ model.arrays.inertia[i] @ R.T @ w])
    return np.array(out)


@pytest.mark.parametrize('floating', [True, False])
def test_reactions_with_ball_joints_balance_each_body(floating):
    """Gravity + base wrench + reactions on each body = its momentum rate (central FD)."""
    g = np.array([0.0, 0.0, -9.81])
    model = random_model(31, 6, joint_types=MIXED, floating_base=floating, gravity=g)
    rng = np.random.default_rng(31)
    q, v, _ = _state(model, rng)
    tau = rng.normal(size=model.n)
    bw = rng.normal(size=6) if floating else None
    a = D.forward_dynamics(model, q, v, tau, base_wrench=bw)
    h = 1e-4
    qp = D.integrate(model, q, h * v + 0.5 * h * h * a)
    qm = D.integrate(model, q, -h * v + 0.5 * h * h * a)
    rate = (_body_momenta(model, qp, v + h * a) - _body_momenta(model, qm, v - h * a)) / (2 * h)
    sol = D.maximal_dynamics(model, q, v, tau, base_wrench=bw)
    reac = D.joint_reactions(model, q, v, tau, base_wrench=bw)
    R, p = D.body_poses(model, q)
    c = p + np.einsum('bij,bj->bi', R, model.arrays.com)
    total = np.zeros((len(model.body_names), 6))
    total[:, :3] = model.arrays.mass[:, None] * g
    total[0] += bw if floating else sol.root_wrench
    for j, name in enumerate(model.joint_names):
        child, parent = j + 1, model.arrays.parent[j + 1]
        wr = reac[name]
        total[child] += np.r_[wr[:3], wr[3:] + np.cross(p[child] - c[child], wr[:3])]
        total[parent] -= np.r_[wr[:3], wr[3:] + np.cross(p[child] - c[parent], wr[:3])]
    assert np.linalg.norm(total - rate) <= 1e-6 * np.linalg.norm(rate)


@needs_pinocchio
@pytest.mark.parametrize('seed', [41, 42])
def test_closed_chain_through_ball_and_universal_joints_matches_pinocchio(seed):
    """A ball cut hinge closing a floating tree of mixed joints, against constraintDynamics."""
    model = random_model(seed, 6, joint_types=MIXED, gravity=(0, 0, -9.81), branching=0.0)
    ref = PinTree(model)
    rng = np.random.default_rng(seed)
    q0, v0, _ = _state(model, rng)
    # cut hinge at the current position of body 6's tip, fixed in bodies 3 and 6
    a, b = 6, 3
    R, p = D.body_poses(model, q0)
    tip = p[a] + R[a] @ np.array([0.3, 0.0, 0.0])
    ta, tb = np.array([0.3, 0.0, 0.0]), R[b].T @ (tip - p[b])
    loop = D.LoopClosure(
        'cut', f'body_{a}', f'body_{b}', 'ball', translation_a=ta, translation_b=tb
    )
    chain = D.ClosedChain(model, [loop], alpha=0.0, beta=0.0)
    q, v = chain.assemble(q0, v0, move_base=True)
    xi, xid = chain.constraint_error(q, v)
    assert np.abs(xi).max() < 1e-12 and np.abs(xid).max() < 1e-12
    tau, bw = rng.normal(size=model.n), rng.normal(size=6)
    cm = pin.RigidConstraintModel(
        pin.ContactType.CONTACT_3D,
        ref.pm,
        ref.jid[a],
        pin.SE3(np.eye(3), ta),
        ref.jid[b],
        pin.SE3(np.eye(3), tb),
        pin.ReferenceFrame.LOCAL,
    )
    cms = pin.StdVec_RigidConstraintModel()
    cms.append(cm)
    cds = pin.StdVec_RigidConstraintData()
    cds.append(cm.createData())
    pin.initConstraintDynamics(ref.pm, ref.pd, cms, cds)
    T = ref.T(q)
    gen = np.r_[bw, tau]
    ap = pin.constraintDynamics(
        ref.pm,
        ref.pd,
        ref.q_pin(q),
        T @ v,
        np.linalg.solve(T.T, gen),
        cms,
        cds,
        pin.ProximalSettings(1e-14, 1e-10, 200),
    )
    expect = np.linalg.solve(T, ap - ref.drift(q, v))
    for method in ('aba', 'kkt', 'nullspace', 'multipliers'):
        sol = chain.dynamics(q, v, tau, base_wrench=bw, method=method)
        assert_close(sol.a, expect, f'closed chain ({method})', rtol=1e-8)
    # the loop force is internal: the linear momentum changes by the external forces alone
    acc = chain.acceleration(q, v, tau, base_wrench=bw)
    h = 1e-5
    mom = [
        D.momentum(model, D.integrate(model, q, s * h * v + 0.5 * h * h * acc), v + s * h * acc)
        for s in (1.0, -1.0)
    ]
    rate = (mom[0] - mom[1]) / (2 * h)
    P_rate = bw[:3] + model.total_mass * model.gravity
    np.testing.assert_allclose(rate[:3], P_rate, rtol=1e-6, atol=1e-6)


@needs_pinocchio
def test_sample_ball_joint_servicer_matches_pinocchio():
    """The shipped YAML model: Pinocchio agrees on its inertia matrix and inverse dynamics."""
    from ffsim_ros.resources import sample_model

    model = load_model(sample_model('ball_joint_servicer'))
    ref = PinTree(model)
    rng = np.random.default_rng(51)
    q, v, a = _state(model, rng)
    assert_close(D.mass_matrix(model, q), ref.mass_matrix(q), 'mass matrix')
    assert_close(D.inverse_dynamics(model, q, v, a), ref.inverse_dynamics(q, v, a), 'rnea')


def test_sample_ball_joint_servicer_zero_momentum_slew():
    """The shipped YAML model: its joints, and a zero-momentum slew keeps P = L = 0."""
    from ffsim_ros.resources import sample_model

    model = load_model(sample_model('ball_joint_servicer'))
    assert model.joint_types == ('spherical', 'revolute', 'universal', 'continuous')
    assert model.n == 7 and model.nq == 7 + 8
    rng = np.random.default_rng(51)
    q, _, _ = _state(model, rng)
    phidot = 0.2 * rng.normal(size=model.n)
    v = np.concatenate([D.base_velocity_from_momentum(model, q, phidot), phidot])
    tau = 0.05 * rng.normal(size=model.n)  # N m (about 10 rad/s^2 at the wrist)
    for _ in range(500):
        q, v = D.step(model, q, v, tau, 2e-3)
    assert np.abs(D.momentum(model, q, v)).max() < 1e-10
    assert np.linalg.norm(v[6:] - phidot) > 0.01  # the arm did accelerate
    with pytest.raises(FileNotFoundError, match='ball_joint_servicer'):
        sample_model('nope')


@pytest.mark.parametrize('seed', [61, 62, 63])
def test_barycentric_forms_on_ball_and_pin_models_match_aba(seed):
    """Seed 001's reduced forms through the Model (spherical + revolute, floating base)."""
    from ffsim_ros.dynamics.mufti.barycentric import barycentric_dynamics

    model = random_model(seed, 7, joint_types=('spherical', 'revolute'), gravity=(0.0, 0.0, -9.81))
    model = D.with_joint_dynamics(model) if seed == 63 else model
    rng = np.random.default_rng(seed)
    q, v, _ = _state(model, rng)
    tau, bw = rng.normal(size=model.n), rng.normal(size=6)
    lw = {'tip_3': rng.normal(size=6)}
    ref = D.forward_dynamics(model, q, v, tau, base_wrench=bw, link_wrenches=lw)
    got = D.forward_dynamics(
        model, q, v, tau, base_wrench=bw, link_wrenches=lw, method='barycentric'
    )
    assert_close(got, ref, 'barycentric (eq. 38)', rtol=1e-9)
    for method in ('kkt', 'eq14', 'eq16', 'eq28'):
        other = barycentric_dynamics(model, q, v, tau, base_wrench=bw, method=method)
        assert_close(other, D.forward_dynamics(model, q, v, tau, base_wrench=bw), method, 1e-9)


def test_barycentric_forms_reject_what_they_do_not_cover():
    with pytest.raises(ValueError, match='expected spherical or revolute joints, got joint_'):
        D.forward_dynamics(
            random_model(1, 4, joint_types=('universal',)),
            *[np.zeros(1)] * 3,
            method='barycentric',
        )
    fixed = random_model(2, 2, joint_types=('spherical',), floating_base=False)
    with pytest.raises(ValueError, match='floating-base model, got a fixed base'):
        D.forward_dynamics(fixed, D.neutral(fixed), np.zeros(6), np.zeros(6), method='barycentric')
