"""Analytical derivatives of the dynamics (``ffsim_ros.dynamics.derivatives``) against
Pinocchio's ``computeABADerivatives`` / ``computeRNEADerivatives`` in converted conventions and
against central finite differences on the configuration manifold.

Tangent convention (ours)
-------------------------
``q (+) dq = D.integrate(model, q, dq)``: ``dq[0:3]`` moves the base CoM ``r0``, ``dq[3:6]`` turns
the base by the *inertial-frame* rotation vector (``R <- exp([dq]x) R``, about the base CoM), a
ball joint turns by its *child-frame* rotation vector (``Q <- Q exp(dq)``), the rest adds.
Finite differences below are central, ``h = 1e-5``, along exactly that map (and, for the step's
output, ``D.difference`` at the nominal next state); at ``h = 1e-6`` the round-off of the
servicer's inertia matrix (condition number 5e4) already reaches 1e-6 of the result.

Conversion to Pinocchio (derived here; notation of ``test_pinocchio_oracle.py``)
--------------------------------------------------------------------------------
Pinocchio's free flyer: ``q_p = [p, Q0, joints]`` with ``p = r0 - R c0`` the root *link origin*
(``c0`` the base CoM in the root frame), velocity ``v_p = T(q) v`` with
``T = [[R^T, [c0]x R^T, 0], [0, R^T, 0], [0, 0, P]]`` (body twist at the root origin; ``P`` the
joint permutation, joints matched by name), acceleration ``a_p = T a + d(q, v)`` with the drift
``d = [-R^T (w0 x V0); 0; 0]``, generalized force ``tau_p = T^-T Q``. Its tangent is local:
``q_p (+) e = q_p * exp(e)`` on SE(3) for the free flyer, ``Q exp(e)`` for a ball joint, the
angle increment for a (continuous) revolute joint.

*Tangent map.* To first order ``R' = (E + [dth]x) R`` and ``p' = r0 + dr - R' c0``, so
``p' - p = dr + [R c0]x dth``; in Pinocchio's local frame ``e_lin = R^T dr + [c0]x R^T dth``,
``e_ang = R^T dth``: the perturbation maps as ``e = T(q) dq`` (checked numerically with
``pin.difference`` in ``test_oracle_tangent_map``).

*Chain rule.* Our accelerations are ``a = T^-1 (ABA_p(q_p, T v, T^-T Q) - d)``. With
``dX[x] = d(T(q) x)/dq`` at fixed ``x`` (only ``dth`` enters, through ``R``, using
``d(R^T y)/dth = R^T [y]x``)::

    dX[x] = [[0, R^T [x_lin]x + [c0]x R^T [x_ang]x, 0], [0, R^T [x_ang]x, 0], [0, 0, 0]]

and likewise ``dF[Q] = d(T^-T Q)/dq`` with ``T^-T Q = [R^T F; R^T (N + (R c0) x F)]``::

    dF[Q] = [[0, R^T [F]x, 0], [0, R^T [N + (R c0) x F]x + R^T [F]x [R c0]x, 0], [0, 0, 0]]

and the drift's ``dd/dq = [[0, -R^T [w0 x V0]x, 0], ...]``, ``dd/dV0 = -R^T [w0]x``,
``dd/dw0 = R^T [V0]x``. Then, with Pinocchio's ``(Aq, Av, Minv)`` at ``(q_p, v_p, tau_p)``::

    da/dq = T^-1 (Aq T + Av dX[v] + Minv dF[Q] - dd/dq - dX[a])
    da/dv = T^-1 (Av T - dd/dv)
    da/dQ = T^-1 Minv T^-T

Joint friction ``F_f(v)`` (ours; not a Pinocchio feature) enters as a force: Pinocchio is
given ``Q + F_f(v)`` and ``da/dv`` gains ``da/dQ diag(F_f'(v))``. A fixed base has ``T = P``
and no drift. The chain is itself checked against central differences of Pinocchio's own
forward dynamics mapped to our coordinates (``test_oracle_chain_rule``), so that a mistake in
the conversion cannot hide a mistake in the library or the other way round.

Tolerances (norm-relative, ``||ours - ref|| <= tol max(1, ||ref||)``): 1e-8 against Pinocchio
(the acceptance line of issue 19), 1e-6 against finite differences (their truncation and
round-off, measured 1e-9..1e-8).
"""

from __future__ import annotations

import dataclasses
import functools
import warnings

import numpy as np
import pytest
from pinocchio_twin import pinocchio_twin

import ffsim_ros.dynamics as D
from ffsim_ros.dynamics import lie
from ffsim_ros.dynamics.builder import ModelBuilder, random_configuration, random_model
from ffsim_ros.dynamics.random_urdf import random_urdf
from ffsim_ros.resources import sample_robot

try:  # Pinocchio is a test-only oracle: only the tests comparing with it need it
    import pinocchio as pin
except ImportError:  # pragma: no cover - exercised where pinocchio is not installed
    pin = None

needs_pinocchio = pytest.mark.skipif(pin is None, reason='pinocchio (test-only oracle) missing')

PIN_RTOL = 1e-8
FD_RTOL = 1e-6
H = 1e-5
G = (0.3, -0.2, -9.81)
MIXED = ('revolute', 'prismatic', 'spherical', 'universal')


def rel_err(a, b) -> float:
    a, b = np.asarray(a, float), np.asarray(b, float)
    assert a.shape == b.shape, f'shape {a.shape} != {b.shape}'
    return float(np.linalg.norm(a - b) / max(1.0, np.linalg.norm(b)))


def assert_close(a, b, what: str, rtol: float) -> None:
    err = rel_err(a, b)
    assert err <= rtol, f'{what}: relative error {err:.3e} > {rtol:.0e}'


def skew(a) -> np.ndarray:
    return np.array([[0.0, -a[2], a[1]], [a[2], 0.0, -a[0]], [-a[1], a[0], 0.0]])


def quat_to_rot(qxyzw) -> np.ndarray:
    x, y, z, w = np.asarray(qxyzw, float) / np.linalg.norm(qxyzw)
    return np.array(
        [
            [1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
            [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
            [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)],
        ]
    )


def with_friction(model: D.Model, seed: int) -> D.Model:
    """``model`` with random viscous and Coulomb friction on every joint DoF, enabled."""
    rng = np.random.default_rng(seed)
    nb = model.nv - model.n
    damping = np.zeros(model.nv)
    coulomb = np.zeros(model.nv)
    damping[nb:] = rng.uniform(0.2, 2.0, model.n)
    coulomb[nb:] = rng.uniform(0.05, 0.5, model.n)
    arrays = model.arrays._replace(damping=damping, friction=coulomb)
    return D.with_joint_dynamics(dataclasses.replace(model, arrays=arrays))


def friction_slope(model: D.Model, v: np.ndarray) -> np.ndarray:
    """``dF_f/dv`` (diagonal) of ``F_f = -d v - f_c tanh(v / 1e-3)`` (0 when disabled)."""
    if not model.joint_dynamics:
        return np.zeros(model.nv)
    a = model.arrays
    return -a.damping - a.friction / 1e-3 * (1.0 - np.tanh(v / 1e-3) ** 2)


def friction_force(model: D.Model, v: np.ndarray) -> np.ndarray:
    if not model.joint_dynamics:
        return np.zeros(model.nv)
    a = model.arrays
    return -a.damping * v - a.friction * np.tanh(v / 1e-3)


# --------------------------------------------------------------------------------------------
# cases
# --------------------------------------------------------------------------------------------


@functools.cache
def case_model(name: str) -> D.Model:
    """The models of the tests: URDF (servicer, random tree with prismatic and continuous
    joints) and builder trees with ball and universal joints; floating and fixed; gravity;
    joint friction."""
    servicer = sample_robot('ffsim_servicer_7dof')
    tree = random_urdf(5, 8, branching=0.5, prismatic=0.3, continuous=0.3)
    with warnings.catch_warnings():
        warnings.simplefilter('ignore', D.InertiaWarning)
        if name == 'servicer':
            return D.load_urdf(servicer)
        if name == 'servicer_g_friction':
            return D.with_joint_dynamics(D.load_urdf(servicer, gravity=G))
        if name == 'servicer_fixed_g_friction':
            return D.with_joint_dynamics(D.load_urdf(servicer, floating_base=False, gravity=G))
        if name == 'tree_g':
            return D.load_urdf(tree, gravity=G)
        if name == 'tree_fixed_g':
            return D.load_urdf(tree, floating_base=False, gravity=G)
    if name == 'ball_g':
        return random_model(21, 6, joint_types=('spherical', 'revolute'), gravity=G)
    if name == 'ball_g_friction':
        return with_friction(
            random_model(21, 6, joint_types=('spherical', 'revolute'), gravity=G), 1
        )
    if name == 'ball_fixed_g':
        return random_model(
            22, 5, joint_types=('spherical', 'prismatic'), floating_base=False, gravity=G
        )
    if name == 'mixed_g_friction':
        return with_friction(random_model(23, 8, joint_types=MIXED, gravity=G), 2)
    if name == 'mixed_fixed':
        return random_model(24, 6, joint_types=MIXED, floating_base=False)
    raise KeyError(name)


URDF_CASES = [
    'servicer',
    'servicer_g_friction',
    'servicer_fixed_g_friction',
    'tree_g',
    'tree_fixed_g',
]
BALL_CASES = ['ball_g_friction', 'ball_fixed_g']
ALL_CASES = URDF_CASES + BALL_CASES + ['mixed_g_friction', 'mixed_fixed']
FLOAT_CASES = ['servicer', 'servicer_g_friction', 'tree_g', 'ball_g_friction', 'mixed_g_friction']


def state(model: D.Model, seed: int):
    """A random state away from zero joint rates (the Coulomb term is steep at 0)."""
    rng = np.random.default_rng(seed)
    q = random_configuration(model, rng)
    v = rng.normal(size=model.nv)
    v += np.sign(v) * 0.05
    return q, v, rng.normal(size=model.n), rng


# --------------------------------------------------------------------------------------------
# finite differences on the manifold
# --------------------------------------------------------------------------------------------


def fd_q(f, model: D.Model, q: np.ndarray, h: float = H) -> np.ndarray:
    """``d f(q (+) dq) / d dq`` by central differences along ``D.integrate``."""
    cols = []
    for e in np.eye(model.nv):
        cols.append((f(D.integrate(model, q, h * e)) - f(D.integrate(model, q, -h * e))) / (2 * h))
    return np.array(cols).T


def fd_x(f, x: np.ndarray, h: float = H) -> np.ndarray:
    """``d f(x) / dx`` by central differences (a vector space)."""
    return np.array([(f(x + h * e) - f(x - h * e)) / (2 * h) for e in np.eye(x.size)]).T


# --------------------------------------------------------------------------------------------
# Pinocchio in our conventions (module docstring)
# --------------------------------------------------------------------------------------------


class PinDerivatives:
    """Pinocchio's dynamics and their derivatives converted to our coordinates."""

    def __init__(self, model: D.Model, urdf: str | None) -> None:
        self.model = model
        self.floating = model.floating_base
        if urdf is not None:
            root = [pin.JointModelFreeFlyer()] if self.floating else []
            pm = pin.buildModelFromXML(urdf, *root)
        else:
            pm = pinocchio_twin(model, pin)[0]
        pm.gravity = pin.Motion(np.asarray(model.gravity, float), np.zeros(3))
        self.pm, self.pd = pm, pm.createData()
        nv = model.nv
        assert pm.nv == nv
        self.c0 = np.array(pm.inertias[1].lever) if self.floating else None
        # joints matched by name: ours (index k) -> Pinocchio joint
        self.joints = []
        self.P = np.zeros((nv, nv))
        if self.floating:
            self.P[:6, :6] = np.eye(6)
        for name in model.joint_names:
            jm = pm.joints[pm.getJointId(name)]
            qs, vs = model.joint_q_slice(name), model.joint_v_slice(name)
            self.joints.append((jm, qs, vs))
            for t in range(vs.stop - vs.start):
                self.P[jm.idx_v + t, vs.start + t] = 1.0

    # ---- maps --------------------------------------------------------------------------

    def q_pin(self, q: np.ndarray) -> np.ndarray:
        qp = np.zeros(self.pm.nq)
        if self.floating:
            R = quat_to_rot(q[3:7])
            qp[:3] = q[:3] - R @ self.c0
            qp[3:7] = q[3:7] / np.linalg.norm(q[3:7])
        for jm, qs, _ in self.joints:
            x = q[qs]
            if jm.nq == 2 and jm.nv == 1:  # continuous: (cos, sin)
                qp[jm.idx_q : jm.idx_q + 2] = (np.cos(x[0]), np.sin(x[0]))
            else:
                qp[jm.idx_q : jm.idx_q + jm.nq] = x
        return qp

    def R(self, q) -> np.ndarray:
        return quat_to_rot(q[3:7])

    def T(self, q: np.ndarray) -> np.ndarray:
        T = self.P.copy()
        if self.floating:
            Rt = self.R(q).T
            T[:3, :3] = Rt
            T[:3, 3:6] = skew(self.c0) @ Rt
            T[3:6, 3:6] = Rt
        return T

    def drift(self, q, v) -> np.ndarray:
        d = np.zeros(self.model.nv)
        if self.floating:
            d[:3] = -self.R(q).T @ np.cross(v[3:6], v[:3])
        return d

    def dX(self, q, x) -> np.ndarray:
        """``d(T(q) x)/dq`` at fixed ``x``."""
        out = np.zeros((self.model.nv, self.model.nv))
        if self.floating:
            Rt = self.R(q).T
            out[:3, 3:6] = Rt @ skew(x[:3]) + skew(self.c0) @ Rt @ skew(x[3:6])
            out[3:6, 3:6] = Rt @ skew(x[3:6])
        return out

    def dF(self, q, Q) -> np.ndarray:
        """``d(T(q)^-T Q)/dq`` at fixed ``Q``."""
        out = np.zeros((self.model.nv, self.model.nv))
        if self.floating:
            R = self.R(q)
            F, N = Q[:3], Q[3:6]
            Rc = R @ self.c0
            out[:3, 3:6] = R.T @ skew(F)
            out[3:6, 3:6] = R.T @ skew(N + np.cross(Rc, F)) + R.T @ skew(F) @ skew(Rc)
        return out

    def ddrift(self, q, v) -> tuple[np.ndarray, np.ndarray]:
        """``(dd/dq, dd/dv)``."""
        nv = self.model.nv
        dq, dv = np.zeros((nv, nv)), np.zeros((nv, nv))
        if self.floating:
            Rt = self.R(q).T
            V0, w0 = v[:3], v[3:6]
            dq[:3, 3:6] = -Rt @ skew(np.cross(w0, V0))
            dv[:3, :3] = -Rt @ skew(w0)
            dv[:3, 3:6] = Rt @ skew(V0)
        return dq, dv

    # ---- dynamics ----------------------------------------------------------------------

    def forward(self, q, v, Q) -> np.ndarray:
        """Our accelerations from ``pin.aba`` (``Q`` the generalized force, friction added)."""
        T = self.T(q)
        Qt = Q + friction_force(self.model, v)
        ap = pin.aba(self.pm, self.pd, self.q_pin(q), T @ v, np.linalg.solve(T.T, Qt))
        return np.linalg.solve(T, ap - self.drift(q, v))

    def forward_derivatives(self, q, v, Q):
        """``(a, da/dq, da/dv, da/dQ)`` from ``pin.computeABADerivatives`` (module docstring)."""
        T = self.T(q)
        Qt = Q + friction_force(self.model, v)
        vp, taup = T @ v, np.linalg.solve(T.T, Qt)
        Aq, Av, Minv = pin.computeABADerivatives(self.pm, self.pd, self.q_pin(q), vp, taup)
        Minv = np.triu(Minv) + np.triu(Minv, 1).T  # (Pinocchio fills the upper triangle)
        ap = np.array(self.pd.ddq)
        a = np.linalg.solve(T, ap - self.drift(q, v))
        dd_q, dd_v = self.ddrift(q, v)
        Ti = np.linalg.inv(T)
        da_dQ = Ti @ Minv @ Ti.T
        da_dq = Ti @ (Aq @ T + Av @ self.dX(q, v) + Minv @ self.dF(q, Qt) - dd_q - self.dX(q, a))
        da_dv = Ti @ (Av @ T - dd_v) + da_dQ * friction_slope(self.model, v)[None, :]
        return a, da_dq, da_dv, da_dQ

    def inverse_derivatives(self, q, v, a):
        """``(ID, dID/dq, dID/dv, dID/da)`` from ``pin.computeRNEADerivatives``: with
        ``ID = T^T RNEA_p(q_p, T v, T a + d) - F_f``, ``dID/dq = dT^T[tau_p] + T^T (Rq T +
        Rv dX[v] + Ra (dX[a] + dd/dq))`` where ``dT^T[t] = d(T^T t)/dq = -T^T dF[T^T t]``
        (from ``T^-T T^T = E``)."""
        T = self.T(q)
        ap = T @ a + self.drift(q, v)
        Rq, Rv, Ra = pin.computeRNEADerivatives(self.pm, self.pd, self.q_pin(q), T @ v, ap)
        Ra = np.triu(Ra) + np.triu(Ra, 1).T
        taup = np.array(self.pd.tau)
        tau = T.T @ taup - friction_force(self.model, v)
        dd_q, dd_v = self.ddrift(q, v)
        dTt = -T.T @ self.dF(q, tau + friction_force(self.model, v))
        dq = dTt + T.T @ (Rq @ T + Rv @ self.dX(q, v) + Ra @ (self.dX(q, a) + dd_q))
        dv = T.T @ (Rv @ T + Ra @ dd_v) - np.diag(friction_slope(self.model, v))
        return tau, dq, dv, T.T @ Ra @ T


@functools.cache
def oracle(name: str) -> PinDerivatives:
    model = case_model(name)
    urdf = None
    if name.startswith('servicer'):
        urdf = sample_robot('ffsim_servicer_7dof').read_text()
    elif name.startswith('tree'):
        urdf = random_urdf(5, 8, branching=0.5, prismatic=0.3, continuous=0.3)
    return PinDerivatives(model, urdf)


def generalized_force(model: D.Model, tau, base_wrench) -> np.ndarray:
    Q = np.zeros(model.nv)
    Q[model.nv - model.n :] = tau
    if base_wrench is not None:
        Q[:6] = base_wrench
    return Q


# --------------------------------------------------------------------------------------------
# the oracle's own checks (no derivative of ours involved)
# --------------------------------------------------------------------------------------------


@needs_pinocchio
@pytest.mark.parametrize('name', ['servicer_g_friction', 'tree_g', 'ball_g_friction'])
def test_oracle_tangent_map(name):
    """Pinocchio's tangent of ``q (+) dq`` is ``T(q) dq`` (``pin.difference``)."""
    model, orc = case_model(name), oracle(name)
    q, _, _, _ = state(model, 1)
    for k, e in enumerate(np.eye(model.nv)):
        qp = [orc.q_pin(D.integrate(model, q, s * H * e)) for s in (1, -1)]
        got = pin.difference(orc.pm, qp[1], qp[0]) / (2 * H)
        assert_close(got, orc.T(q)[:, k], f'tangent map column {k}', 1e-7)


@needs_pinocchio
@pytest.mark.parametrize('name', ['servicer_g_friction', 'tree_fixed_g', 'ball_g_friction'])
def test_oracle_chain_rule(name):
    """The converted Pinocchio derivatives equal central differences of Pinocchio's forward
    dynamics mapped to our coordinates (the conversion itself, nothing of ours but
    ``integrate``), and the converted accelerations equal ours."""
    model, orc = case_model(name), oracle(name)
    q, v, tau, rng = state(model, 2)
    Q = generalized_force(model, tau, rng.normal(size=6) if model.floating_base else None)
    a, da_dq, da_dv, da_dQ = orc.forward_derivatives(q, v, Q)
    bw = Q[:6] if model.floating_base else None
    assert_close(a, D.forward_dynamics(model, q, v, tau, base_wrench=bw), 'accelerations', 1e-10)
    assert_close(da_dq, fd_q(lambda x: orc.forward(x, v, Q), model, q), 'oracle dq', FD_RTOL)
    assert_close(da_dv, fd_x(lambda x: orc.forward(q, x, Q), v), 'oracle dv', FD_RTOL)
    assert_close(da_dQ, fd_x(lambda x: orc.forward(q, v, x), Q), 'oracle dQ', FD_RTOL)


# --------------------------------------------------------------------------------------------
# against Pinocchio
# --------------------------------------------------------------------------------------------


@needs_pinocchio
@pytest.mark.parametrize('name', URDF_CASES + BALL_CASES)
def test_forward_dynamics_derivatives_against_pinocchio(name):
    """``computeABADerivatives`` converted: every output to 1e-8 (relative)."""
    model, orc = case_model(name), oracle(name)
    for seed in (3, 4):
        q, v, tau, rng = state(model, seed)
        bw = rng.normal(size=6) if model.floating_base else None
        Q = generalized_force(model, tau, bw)
        _, da_dq, da_dv, da_dQ = orc.forward_derivatives(q, v, Q)
        got = D.forward_dynamics_derivatives(model, q, v, tau, base_wrench=bw)
        assert_close(got.dq, da_dq, 'd qdd / dq', PIN_RTOL)
        assert_close(got.dv, da_dv, 'd qdd / dv', PIN_RTOL)
        assert_close(got.dtau, da_dQ[:, model.nv - model.n :], 'd qdd / d tau', PIN_RTOL)
        if model.floating_base:
            assert_close(got.dbase_wrench, da_dQ[:, :6], 'd qdd / d base wrench', PIN_RTOL)
        else:
            assert got.dbase_wrench is None


@needs_pinocchio
@pytest.mark.parametrize('name', URDF_CASES + BALL_CASES)
def test_inverse_dynamics_derivatives_against_pinocchio(name):
    """``computeRNEADerivatives`` converted: every output to 1e-8 (relative)."""
    model, orc = case_model(name), oracle(name)
    q, v, _, rng = state(model, 5)
    a = rng.normal(size=model.nv)
    tau, dq, dv, da = orc.inverse_derivatives(q, v, a)
    assert_close(D.inverse_dynamics(model, q, v, a), tau, 'oracle ID', 1e-10)
    got = D.inverse_dynamics_derivatives(model, q, v, a)
    assert_close(got.dq, dq, 'd ID / dq', PIN_RTOL)
    assert_close(got.dv, dv, 'd ID / dv', PIN_RTOL)
    assert_close(got.da, da, 'd ID / da', PIN_RTOL)


@needs_pinocchio
@pytest.mark.parametrize('name', ['mixed_g_friction', 'mixed_fixed'])
def test_universal_joints_against_pinocchio_forward_dynamics(name):
    """Trees with universal joints: against central differences of Pinocchio's forward
    dynamics (``JointModelUniversal``) in our coordinates. (Pinocchio 4.1's analytical
    ``computeABADerivatives`` disagrees with those same differences by ~0.2 here: its
    recursions take every joint's motion subspace as fixed in the child body, while a
    universal joint's first axis is fixed in the parent.)"""
    model, orc = case_model(name), oracle(name)
    assert 'universal' in model.joint_types
    q, v, tau, _ = state(model, 14)
    Q = generalized_force(model, tau, None)
    got = D.forward_dynamics_derivatives(model, q, v, tau)
    assert_close(got.dq, fd_q(lambda x: orc.forward(x, v, Q), model, q), 'dq', FD_RTOL)
    assert_close(got.dv, fd_x(lambda x: orc.forward(q, x, Q), v), 'dv', FD_RTOL)


# --------------------------------------------------------------------------------------------
# against finite differences on the manifold (every joint type, every output)
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize('name', ALL_CASES)
def test_forward_dynamics_derivatives_against_finite_differences(name):
    model = case_model(name)
    q, v, tau, rng = state(model, 6)
    bw = rng.normal(size=6) if model.floating_base else None
    got = D.forward_dynamics_derivatives(model, q, v, tau, base_wrench=bw)

    def fd(qq=q, vv=v, tt=tau, ww=bw):
        return D.forward_dynamics(model, qq, vv, tt, base_wrench=ww)

    assert_close(got.dq, fd_q(lambda x: fd(qq=x), model, q), 'dq', FD_RTOL)
    assert_close(got.dv, fd_x(lambda x: fd(vv=x), v), 'dv', FD_RTOL)
    assert_close(got.dtau, fd_x(lambda x: fd(tt=x), tau), 'dtau', FD_RTOL)
    if model.floating_base:
        assert_close(got.dbase_wrench, fd_x(lambda x: fd(ww=x), bw), 'dbase_wrench', FD_RTOL)


@pytest.mark.parametrize('name', ALL_CASES)
def test_inverse_dynamics_derivatives_against_finite_differences(name):
    model = case_model(name)
    q, v, _, rng = state(model, 7)
    a = rng.normal(size=model.nv)
    got = D.inverse_dynamics_derivatives(model, q, v, a)
    assert_close(
        got.dq, fd_q(lambda x: D.inverse_dynamics(model, x, v, a), model, q), 'dq', FD_RTOL
    )
    assert_close(got.dv, fd_x(lambda x: D.inverse_dynamics(model, q, x, a), v), 'dv', FD_RTOL)
    assert_close(got.da, D.mass_matrix(model, q), 'da = H', 1e-12)


def step_fd(model: D.Model, q, v, tau, dt, bw=None) -> tuple[np.ndarray, np.ndarray]:
    """``(A, B)`` by central differences of ``D.step`` (tangents at ``q`` and at the
    nominal next configuration)."""
    q1, _ = D.step(model, q, v, tau, dt, base_wrench=bw)
    nv = model.nv

    def out(qq, vv, tt):
        qn, vn = D.step(model, qq, vv, tt, dt, base_wrench=bw)
        return np.concatenate([D.difference(model, q1, qn), vn])

    A = fd_x(lambda x: out(D.integrate(model, q, x[:nv]), v + x[nv:], tau), np.zeros(2 * nv))
    B = fd_x(lambda x: out(q, v, x), tau)
    return A, B


@pytest.mark.parametrize('dt', [1e-3, 0.02])
@pytest.mark.parametrize('name', ALL_CASES)
def test_step_derivatives_against_finite_differences(name, dt):
    """``A``, ``B`` of one RK4 step, tangent in and tangent out."""
    model = case_model(name)
    q, v, tau, rng = state(model, 8)
    bw = rng.normal(size=6) if model.floating_base else None
    A, B = D.step_derivatives(model, q, v, tau, dt, base_wrench=bw)
    assert A.shape == (2 * model.nv, 2 * model.nv) and B.shape == (2 * model.nv, model.n)
    A_fd, B_fd = step_fd(model, q, v, tau, dt, bw)
    assert_close(A, A_fd, f'A (dt={dt})', FD_RTOL)
    assert_close(B, B_fd, f'B (dt={dt})', FD_RTOL)


def test_step_derivatives_large_rotations():
    """A fast tumbling base and ball joints over a long step (stage rotations of ~1 rad: the
    SO(3) Jacobians away from their series, every term of the chart rate's derivative
    significant)."""
    model = case_model('ball_g')
    q, v, tau, _ = state(model, 9)
    v *= 8.0
    A, B = D.step_derivatives(model, q, v, tau, 0.1)
    A_fd, B_fd = step_fd(model, q, v, tau, 0.1)
    assert_close(A, A_fd, 'A', FD_RTOL)
    assert_close(B, B_fd, 'B', FD_RTOL)


@pytest.mark.parametrize('name', FLOAT_CASES)
def test_generalized_velocity_derivatives_against_finite_differences(name):
    model = case_model(name)
    assert model.floating_base
    q, _, phidot, _ = state(model, 10)
    for link in (model.link_names[-1], model.body_names[len(model.body_names) // 2]):
        dq, dphi = D.generalized_velocity_derivatives(model, q, phidot, link)
        Jg = D.generalized_jacobian(model, q, link)
        assert_close(dphi, Jg, f'd/dphidot = J* ({link})', 1e-12)
        ref = fd_q(lambda x, ln=link: D.generalized_jacobian(model, x, ln) @ phidot, model, q)
        assert_close(dq, ref, f'd(J* phidot)/dq ({link})', FD_RTOL)
        # the zero-momentum motion does not depend on where the system is
        assert np.abs(dq[:, :3]).max() <= 1e-12 * max(1.0, np.abs(dq).max())


# --------------------------------------------------------------------------------------------
# the tests can fail: the convention is discriminated, the hand-derived structure holds
# --------------------------------------------------------------------------------------------


def _turn(model: D.Model, q: np.ndarray, c0: int, rot: np.ndarray, left: bool) -> np.ndarray:
    """``q`` with the quaternion at ``q[c0:c0+4]`` turned by ``rot`` on the left or right."""
    out = q.copy()
    d = lie.quat_exp(rot)
    Q = q[c0 : c0 + 4]
    out[c0 : c0 + 4] = D.lie.quat_multiply(d, Q) if left else lie.quat_multiply(Q, d)
    return out


@pytest.mark.parametrize('joint', ['base', 'ball'])
def test_the_tangent_convention_is_discriminated(joint):
    """Finite differences with the *other* side of multiplication (a body-frame base rotation
    vector, a parent-frame ball-joint rotation vector) disagree with ``dq`` by far more
    than the tolerance, and the documented side agrees: a sign or side flip in the convention
    breaks the tests above."""
    model = case_model('ball_g_friction')
    q, v, tau, _ = state(model, 11)
    got = D.forward_dynamics_derivatives(model, q, v, tau).dq
    if joint == 'base':
        c0, iv, left = 3, 3, True
    else:
        k = model.joint_types.index('spherical')
        c0, iv, left = model.idx_q[k], model.idx_v[k], False
    for side, expect_match in ((left, True), (not left, False)):
        ref = np.array(
            [
                (
                    D.forward_dynamics(model, _turn(model, q, c0, H * e, side), v, tau)
                    - D.forward_dynamics(model, _turn(model, q, c0, -H * e, side), v, tau)
                )
                / (2 * H)
                for e in np.eye(3)
            ]
        ).T
        err = rel_err(got[:, iv : iv + 3], ref)
        if expect_match:
            assert err <= FD_RTOL, err
        else:
            assert err > 1e-3, err
    # the block is far from zero, so a sign flip of the rotation vector would fail as well
    assert np.linalg.norm(got[:, iv : iv + 3]) > 0.1


def test_translation_invariance_and_force_derivatives():
    """Hand-derived structure: the accelerations do not depend on where the base is (uniform
    gravity, inertial-frame base wrench), ``d qdd / dQ = H^-1``, and ``d ID / dv`` at ``v = 0``
    is the friction slope alone (the Coriolis terms are quadratic in ``v``)."""
    model = case_model('mixed_g_friction')
    q, v, tau, rng = state(model, 12)
    bw = rng.normal(size=6)
    got = D.forward_dynamics_derivatives(model, q, v, tau, base_wrench=bw)
    assert np.abs(got.dq[:, :3]).max() <= 1e-12 * np.abs(got.dq).max()
    Hinv = np.linalg.inv(D.mass_matrix(model, q))
    assert_close(np.column_stack([got.dbase_wrench, got.dtau]), Hinv, 'H^-1', 1e-12)
    dv0 = D.inverse_dynamics_derivatives(
        model, q, np.zeros(model.nv), rng.normal(size=model.nv)
    ).dv
    slope = np.diag(model.arrays.damping + model.arrays.friction / 1e-3)
    assert_close(dv0, slope, 'd ID / dv at v = 0', 1e-12)


def test_step_derivatives_of_a_free_fall_are_exact():
    """Hand derivation: a single free body under gravity (no joints) moves as
    ``r' = r + V dt``, ``V' = V + g dt`` and turns at constant ``w`` (torque free only for
    spherical inertia: a uniform sphere), so ``A`` is ``[[E, dt E], [0, E]]`` on the
    translation and ``B`` is empty."""
    b = ModelBuilder('sphere')
    b.add_base('ball', mass=2.0, inertia=[0.4, 0, 0, 0.4, 0, 0.4])
    model = D.with_gravity(b.build(), (0, 0, -9.81))
    q = D.neutral(model)
    v = np.array([0.1, -0.2, 0.3, 0.0, 0.0, 0.0])
    dt = 0.05
    A, B = D.step_derivatives(model, q, v, np.zeros(0), dt)
    expect = np.eye(12)
    expect[0:3, 6:9] = dt * np.eye(3)
    expect[3:6, 9:12] = dt * np.eye(3)  # rotation vector grows by w dt (w = 0: exact)
    assert B.shape == (12, 0)
    assert_close(A, expect, 'A of a free fall', 1e-12)


def test_so3_coefficients_series_and_closed_forms():
    """The SO(3) coefficients of the step linearization: the series (below 0.2 rad) and the
    closed forms agree where they meet, and ``k'(t)/t`` is the derivative of ``k``, the chart
    rate's coefficient (``k(t) = 1/t^2 - (1 + cos t) / (2 t sin t)``)."""
    from ffsim_ros.dynamics.kernels.step_derivatives import SERIES_ANGLE, so3_coefficients

    def closed(t):
        s, c = np.sin(t), np.cos(t)
        return (s / t, (1 - c) / t**2, (t - s) / t**3, 1 / t**2 - (1 + c) / (2 * t * s))

    below = np.array(so3_coefficients(SERIES_ANGLE * (1 - 1e-9)))
    above = np.array(so3_coefficients(SERIES_ANGLE * (1 + 1e-9)))
    # (the closed form of k' loses ~1e-11 to cancellation at 0.2 rad: why the series below)
    assert_close(below, above, 'series vs closed forms at the threshold', 1e-10)
    for t in (0.05, 0.15, 0.5, 1.5, 3.0):
        got = np.array(so3_coefficients(t))
        assert_close(got[:4], closed(t), f'coefficients at {t}', 1e-12)
        if t < 0.5:  # k's closed form cancels too much below for differences (the series
            continue  # there is checked by the agreement at the threshold above: 1e-10 > t^6)
        h = 1e-4 * t
        dk = (closed(t + h)[3] - closed(t - h)[3]) / (2 * h)
        assert abs(got[4] - dk / t) <= 1e-7 * abs(dk / t), (t, got[4], dk / t)


# --------------------------------------------------------------------------------------------
# far from the world origin
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize('name', ['servicer', 'servicer_g_friction'])
def test_the_derivatives_far_from_the_world_origin_are_those_at_it(name):
    """No output depends on where the base is (``d qdd / d r0 = 0``, ``A[:, 0:3] = [E; 0]``,
    ``J*``'s translation columns 0; the base wrench acts at the base CoM; uniform gravity), so
    they are evaluated about the base, as ``D.step`` is: at 1 km, 100 km and 7000 km from the
    origin they are the values at it (they were 5e-8 / 2e-3 off, and raised "a degenerate
    model" at 7000 km: the kernels' spatial quantities about O cancel terms of ``m |r|^2``)."""
    model = case_model(name)
    q, v, tau, rng = state(model, 31)
    q[:3] = 0.0
    a, wrench = rng.normal(size=model.nv), rng.normal(size=6) * 20.0

    def outputs(at: np.ndarray) -> list[np.ndarray]:
        return [
            *D.forward_dynamics_derivatives(model, at, v, tau, base_wrench=wrench),
            *D.inverse_dynamics_derivatives(model, at, v, a),
            *D.step_derivatives(model, at, v, tau, 1e-3, base_wrench=wrench),
            *D.generalized_velocity_derivatives(model, at, v[6:], 'ee_link'),
        ]

    at_origin = outputs(q)
    for distance in (1e3, 1e5, 7e6):
        far = q.copy()
        far[:3] = distance * np.array([0.6, 0.8, 0.0])
        for k, (got, ref) in enumerate(zip(outputs(far), at_origin, strict=True)):
            assert_close(got, ref, f'output {k} at {distance:g} m', 1e-12)


# --------------------------------------------------------------------------------------------
# bad input
# --------------------------------------------------------------------------------------------


def test_bad_input_is_named():
    model = case_model('servicer')
    fixed = case_model('servicer_fixed_g_friction')
    q, v, tau, _ = state(model, 13)
    with pytest.raises(ValueError, match='q: expected 14 values'):
        D.forward_dynamics_derivatives(model, q[:-1], v, tau)
    with pytest.raises(ValueError, match='tau: expected 7 values'):
        D.step_derivatives(model, q, v, tau[:-1], 1e-3)
    with pytest.raises(ValueError, match='dt: expected a finite positive step'):
        D.step_derivatives(model, q, v, tau, 0.0)
    with pytest.raises(ValueError, match='base_wrench: expected a floating-base model'):
        D.forward_dynamics_derivatives(fixed, q[7:], v[6:], tau, base_wrench=np.zeros(6))
    with pytest.raises(ValueError, match='generalized_velocity_derivatives: expected a floating'):
        D.generalized_velocity_derivatives(fixed, q[7:], tau, 'ee_link')
    with pytest.raises(D.UnknownNameError):
        D.generalized_velocity_derivatives(model, q, tau, 'no_such_link')
    bad = v.copy()
    bad[4] = np.nan
    with pytest.raises(ValueError, match='v: expected finite values, got nan at index 4'):
        D.forward_dynamics_derivatives(model, q, bad, tau)
    badq = q.copy()
    badq[8] = np.inf
    with pytest.raises(ValueError, match='q: expected finite values, got inf at index 8'):
        D.step_derivatives(model, badq, v, tau, 1e-3)
    # a NaN in the base wrench is named as such, at its own index (it was "tau ... index 2",
    # the index in [F_b; tau]); a NaN joint coordinate under the generalized velocity's
    # derivatives is named (it was "mass matrix is not positive definite")
    wrench = np.array([0.0, 0.0, np.nan, 0.0, 0.0, 0.0])
    for call in (
        lambda: D.forward_dynamics_derivatives(model, q, v, tau, base_wrench=wrench),
        lambda: D.step_derivatives(model, q, v, tau, 1e-3, base_wrench=wrench),
        lambda: D.step(model, q, v, tau, 1e-3, base_wrench=wrench),
    ):
        with pytest.raises(ValueError, match='^base_wrench: expected finite values, got nan at '):
            call()
    tau_bad = np.array(tau, dtype=float)
    tau_bad[1] = np.nan
    with pytest.raises(ValueError, match='^tau: expected finite values, got nan at index 1$'):
        D.step_derivatives(model, q, v, tau_bad, 1e-3, base_wrench=np.ones(6))
    badq = q.copy()
    badq[9] = np.nan
    with pytest.raises(ValueError, match='^q: expected finite values, got nan at index 9$'):
        D.generalized_velocity_derivatives(model, badq, tau, 'ee_link')
