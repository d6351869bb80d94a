"""The compiled single-state task-space calls: a link frame's pose and Jacobian, the
generalized Jacobian and the momentum, each one compiled pass (``kernels/frames.py``,
``kernels/generalized_jacobian.py``, ``entry.e_momentum_about``).

Checked against the arithmetic they replace (the NumPy compositions of the kinematics, the
mass matrix and a dense solve), against the batched calls (the same kernels on each row: the
same bits), against their defining properties (the zero-momentum base velocity, the momentum
as ``H v``), and on the inputs they must refuse or convert.
"""

from __future__ import annotations

import numpy as np
import pytest

from ffsim_ros import dynamics as D
from ffsim_ros.dynamics.builder import random_configuration, random_model
from ffsim_ros.resources import sample_robot

MIXED = ('revolute', 'prismatic', 'spherical', 'universal')
EPS = np.finfo(float).eps
CASES = [
    (seed, n, floating) for seed, n in ((1, 4), (2, 9), (3, 14)) for floating in (True, False)
]


def _model(case) -> tuple[D.Model, np.random.Generator]:
    seed, n, floating = case
    return random_model(seed, n, joint_types=MIXED, floating_base=floating), np.random.default_rng(
        seed
    )


def _numpy_frame(model: D.Model, q: np.ndarray, link: str):
    """The link frame's pose and Jacobian composed in NumPy from the kinematics pass."""
    frame = model.frame(link)
    R, p, S = D.body_kinematics(model, q)
    b = frame.body
    point = p[b] + R[b] @ frame.translation
    mask = np.zeros(model.nv, dtype=bool)
    a = model.arrays
    j = b
    while j >= 0:
        mask[a.iv[j] : a.iv[j] + a.nvj[j]] = True
        j = a.parent[j]
    J = np.where(mask[None, :], S, 0.0)
    J[:3] -= np.cross(point, J[3:].T).T  # v of the point = v_O - point x w
    return point, R[b] @ frame.rotation, J


@pytest.mark.parametrize('case', CASES)
def test_frame_pose_and_jacobian_are_the_kinematics_composed_and_the_batch_rows(case) -> None:
    model, rng = _model(case)
    Q = np.array([random_configuration(model, rng) for _ in range(4)])
    if model.floating_base:
        Q[1, :3] += 1e3  # a kilometre from the origin
    for link in model.link_names:
        P, R, J = D.link_pose_and_jacobian(model, Q, link)
        for k, q in enumerate(Q):
            p1, R1 = D.link_pose(model, q, link)
            J1 = D.link_jacobian(model, q, link)
            p2, R2, J2 = D.link_pose_and_jacobian(model, q, link)
            # the same kernel on one state and on each row of a batch: the same bits
            for single, row in ((p1, P[k]), (R1, R[k]), (J1, J[k]), (p2, p1), (R2, R1), (J2, J1)):
                np.testing.assert_array_equal(single, row)
            p_ref, R_ref, J_ref = _numpy_frame(model, q, link)
            scale = 1.0 + np.abs(p_ref).max()
            assert np.abs(p1 - p_ref).max() <= 8 * EPS * scale
            assert np.abs(R1 - R_ref).max() <= 8 * EPS
            assert np.abs(J1 - J_ref).max() <= 16 * EPS * scale * (1.0 + np.abs(J_ref).max())
            assert J1.shape == (6, model.nv) and p1.shape == (3,) and R1.shape == (3, 3)


@pytest.mark.parametrize('case', [c for c in CASES if c[2]])
def test_generalized_jacobian_is_the_zero_momentum_map(case) -> None:
    """``J* = Jm - Js H0^-1 H0m`` (a dense solve of the mass matrix's base rows), and the
    link velocity ``J v`` with the base velocity that keeps the momentum zero is ``J* phidot``."""
    model, rng = _model(case)
    for _ in range(3):
        q = random_configuration(model, rng)
        phidot = rng.normal(size=model.n)
        H = D.mass_matrix(model, q)
        v = np.r_[-np.linalg.solve(H[:6, :6], H[:6, 6:] @ phidot), phidot]
        assert np.abs(H[:6] @ v).max() < 1e-12 * (1.0 + np.abs(H).max())  # zero momentum
        for link in model.link_names:
            G = D.generalized_jacobian(model, q, link)
            J = D.link_jacobian(model, q, link)
            ref = J[:, 6:] - J[:, :6] @ np.linalg.solve(H[:6, :6], H[:6, 6:])
            assert G.shape == (6, model.n)
            assert np.abs(G - ref).max() <= 1e-13 * (1.0 + np.abs(ref).max())
            assert np.abs(G @ phidot - J @ v).max() <= 1e-12 * (1.0 + np.abs(J @ v).max())


@pytest.mark.parametrize('case', CASES)
@pytest.mark.parametrize('about', ['origin', 'com', 'base'])
def test_momentum_is_the_batch_row_and_h_v(case, about: str) -> None:
    """The single-state momentum (computed about the base CoM, the point then changed in the
    same pass) equals the batched call's row to the bit, and ``[P; L_O]`` is the mass
    matrix's base rows times ``v`` moved to the point: ``H v`` is about the base CoM."""
    model, rng = _model(case)
    for far in (0.0, 1e3):
        q = random_configuration(model, rng)
        if model.floating_base:
            q[:3] += far
        v = rng.normal(size=model.nv)
        h = D.momentum(model, q, v, about=about)
        np.testing.assert_array_equal(h, D.momentum(model, q[None], v[None], about=about)[0])
        com = D.center_of_mass(model, q)
        P = h[:3]
        if model.floating_base and far == 0.0:  # H[:6] v: [P; L about the base CoM q[0:3]]
            # (not far out: H's base rows, taken about O, lose digits there, 6e-8 at 1 km)
            hv = D.mass_matrix(model, q)[:6] @ v
            point = {'origin': np.zeros(3), 'com': com, 'base': q[:3]}[about]
            ref = np.r_[hv[:3], hv[3:] + np.cross(q[:3] - point, hv[:3])]
            assert np.abs(h - ref).max() <= 1e-12 * (1.0 + far) * (1.0 + np.abs(ref).max())
        h_com = D.momentum(model, q, v, about='com')
        np.testing.assert_array_equal(h_com[:3], P)
        if about == 'origin':  # L_O = L_g + r_g x P, for either base
            ref = np.r_[P, h_com[3:] + np.cross(com, P)]
            assert np.abs(h - ref).max() <= 1e-12 * (1.0 + far) * (1.0 + np.abs(ref).max())


@pytest.mark.parametrize('case', CASES)
def test_center_of_mass_and_momentum_with_it(case) -> None:
    """The single-state CoM is the batched call's row to the bit and the bodies' CoMs
    weighted by their masses (NumPy, from the body poses); ``momentum_and_com`` is the
    momentum about the CoM and the CoM, in one pass, also to the bit of the NumPy path it
    takes for other inputs (a list)."""
    model, rng = _model(case)
    a = model.arrays
    for far in (0.0, 1e3):
        q = random_configuration(model, rng)
        if model.floating_base:
            q[:3] += far
        v = rng.normal(size=model.nv)
        com = D.center_of_mass(model, q)
        np.testing.assert_array_equal(com, D.center_of_mass(model, q[None])[0])
        R, p = D.body_poses(model, q)
        ref = (a.mass @ (p + np.einsum('bij,bj->bi', R, a.com))) / a.mass.sum()
        assert np.abs(com - ref).max() <= 8 * EPS * (1.0 + np.abs(ref).max())
        h, c = D.momentum_and_com(model, q, v)
        np.testing.assert_array_equal(h, D.momentum(model, q, v, about='com'))
        h_list, c_list = D.momentum_and_com(model, q.tolist(), v.tolist())
        np.testing.assert_array_equal(h, h_list)
        np.testing.assert_array_equal(c, c_list)
        assert np.abs(c - com).max() <= 8 * EPS * (1.0 + np.abs(com).max())


def test_inputs_are_converted_or_refused_by_name() -> None:
    model = D.load_urdf(sample_robot('ffsim_servicer_7dof'))
    rng = np.random.default_rng(2)
    q = random_configuration(model, rng)
    v = rng.normal(size=model.nv)
    strided = np.zeros(2 * model.nq)
    strided[::2] = q
    q32 = q.astype(np.float32)
    for other, same in ((q.tolist(), q), (strided[::2], q), (q32, q32.astype(float))):
        np.testing.assert_array_equal(
            D.link_jacobian(model, other, 'ee_link'), D.link_jacobian(model, same, 'ee_link')
        )
        np.testing.assert_array_equal(
            D.generalized_jacobian(model, other, 'ee_link'),
            D.generalized_jacobian(model, same, 'ee_link'),
        )
        np.testing.assert_array_equal(D.momentum(model, other, v), D.momentum(model, same, v))
        np.testing.assert_array_equal(
            D.link_pose(model, other, 'ee_link')[1], D.link_pose(model, same, 'ee_link')[1]
        )
    bad = q.copy()
    bad[8] = np.nan
    for call in (
        lambda x: D.center_of_mass(model, x),
        lambda x: D.momentum_and_com(model, x, v),
        lambda x: D.link_jacobian(model, x, 'ee_link'),
        lambda x: D.link_pose(model, x, 'ee_link'),
        lambda x: D.generalized_jacobian(model, x, 'ee_link'),
        lambda x: D.momentum(model, x, v),
    ):
        with pytest.raises(ValueError, match='q'):
            call(bad)
        with pytest.raises(ValueError, match=f'{model.nq}'):
            call(q[:-1])
        zero = q.copy()
        zero[3:7] = 0.0
        with pytest.raises(ValueError, match='quaternion'):
            call(zero)
    with pytest.raises(ValueError, match='v'):
        D.momentum(model, q, np.full(model.nv, np.inf))
    with pytest.raises(ValueError, match='about'):
        D.momentum(model, q, v, about='tip')
    with pytest.raises(D.UnknownNameError):
        D.generalized_jacobian(model, q, 'no_such_link')
    fixed = D.load_urdf(sample_robot('ffsim_servicer_7dof'), floating_base=False)
    with pytest.raises(ValueError, match='floating'):
        D.generalized_jacobian(fixed, D.neutral(fixed), 'ee_link')
