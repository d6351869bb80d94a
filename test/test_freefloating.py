"""The free-floating terms (``D.free_floating_terms``, what the controller evaluates each cycle)
against independent derivations, and its single-purpose views against it.

Each field has its own reference, none of which goes through ``free_floating_terms``' own
formulas:

* ``H``, ``c``: the recursive Newton-Euler algorithm (``H e_k = ID(q, 0, e_k) - ID(q, 0, 0)``,
  ``c = ID(q, v, 0)``), not the composite-rigid-body one;
* ``B``: the base velocity ``-B phidot`` leaves the total momentum (momentum kernel) at zero,
  and equals ``base_velocity_from_momentum``;
* ``J``: central finite differences of the link pose along any motion;
* ``J*``: central finite differences of the link pose along zero-momentum motion;
* ``H*, c*``: the reduced dynamics of the unactuated base, i.e. ABA with no base wrench:
  ``tau = H* phiddot + c*`` reproduces ABA's joint accelerations and vice versa.

Tolerances are norm-relative: ``||ours - ref|| <= tol * max(1, ||ref||)``.
"""

from __future__ import annotations

import functools

import numpy as np
import pytest

import ffsim_ros.dynamics as D
from ffsim_ros.dynamics.builder import random_configuration, random_model
from ffsim_ros.dynamics.random_urdf import random_urdf
from ffsim_ros.resources import sample_robot

MIXED = ('revolute', 'prismatic', 'spherical', 'universal')


@functools.cache
def case_model(name: str) -> tuple[D.Model, str]:
    """A floating-base model and the link whose Jacobians are taken."""
    if name == 'servicer':
        return D.load_urdf(sample_robot('ffsim_servicer_7dof')), 'ee_link'
    if name == 'ball_mixed_g':
        model = random_model(14, 6, joint_types=MIXED, gravity=(0.3, -0.2, -9.81))
        return model, 'tip_6'
    model = D.load_urdf(random_urdf(5, 7, branching=0.5, prismatic=0.3), gravity=(0, 0, -9.81))
    return model, model.body_names[-1]


CASES = ['servicer', 'ball_mixed_g', 'random_tree_g']


def rel_err(a, b) -> float:
    a, b = np.asarray(a, float), np.asarray(b, float)
    return float(np.linalg.norm(a - b) / max(1.0, np.linalg.norm(b)))


def state(model: D.Model, seed: int) -> tuple[np.ndarray, np.ndarray, np.random.Generator]:
    rng = np.random.default_rng(seed)
    return random_configuration(model, rng), 0.5 * rng.normal(size=model.nv), rng


def rotation_vector(R: np.ndarray) -> np.ndarray:
    """``w`` with ``R = exp([w]x)`` for a small rotation (the skew part, to O(|w|^3))."""
    return 0.5 * np.array([R[2, 1] - R[1, 2], R[0, 2] - R[2, 0], R[1, 0] - R[0, 1]])


def link_velocity_fd(model: D.Model, q, v, link: str, h: float = 1e-6) -> np.ndarray:
    """``[velocity of the link origin; angular velocity]`` by central differences of
    ``link_pose`` along ``integrate(q, v, +-h)``."""
    pp, Rp = D.link_pose(model, D.integrate(model, q, v, h), link)
    pm, Rm = D.link_pose(model, D.integrate(model, q, v, -h), link)
    return np.r_[(pp - pm) / (2 * h), rotation_vector(Rp @ Rm.T) / (2 * h)]


@pytest.mark.parametrize('name', CASES)
def test_inertia_and_bias_are_the_newton_euler_ones(name: str) -> None:
    model, link = case_model(name)
    q, v, _ = state(model, 1)
    terms = D.free_floating_terms(model, q, v, link)
    zero = np.zeros(model.nv)
    gravity_only = D.inverse_dynamics(model, q, zero, zero)
    H = np.column_stack(
        [D.inverse_dynamics(model, q, zero, e) - gravity_only for e in np.eye(model.nv)]
    )
    assert rel_err(terms.H, H) < 1e-10
    assert rel_err(terms.c, D.inverse_dynamics(model, q, v, zero)) < 1e-10


@pytest.mark.parametrize('name', CASES)
def test_B_gives_the_zero_momentum_base_velocity(name: str) -> None:
    model, link = case_model(name)
    q, v, rng = state(model, 2)
    terms = D.free_floating_terms(model, q, v, link)
    assert terms.B.shape == (6, model.n)
    for _ in range(3):
        phidot = rng.normal(size=model.n)
        x0 = -terms.B @ phidot
        scale = np.linalg.norm(terms.H) * np.linalg.norm(phidot)
        for about in ('origin', 'com', 'base'):
            h = D.momentum(model, q, np.r_[x0, phidot], about=about)
            assert np.abs(h).max() <= 1e-13 * scale, (about, h)
        assert rel_err(x0, D.base_velocity_from_momentum(model, q, phidot)) < 1e-12


@pytest.mark.parametrize('name', CASES)
def test_link_jacobian_term_moves_the_link(name: str) -> None:
    model, link = case_model(name)
    q, v, _ = state(model, 3)
    J = D.free_floating_terms(model, q, v, link).J
    assert J.shape == (6, model.nv)
    fd = link_velocity_fd(model, q, v, link)
    assert np.abs(J @ v - fd).max() < 1e-7 * max(1.0, np.linalg.norm(fd))


@pytest.mark.parametrize('name', CASES)
def test_generalized_jacobian_term_moves_the_link_under_zero_momentum(name: str) -> None:
    """``[v; w] = J* phidot`` (linear and angular rows) along motion with ``P = L = 0``."""
    model, link = case_model(name)
    q, v, rng = state(model, 4)
    terms = D.free_floating_terms(model, q, v, link)
    assert terms.J_star.shape == (6, model.n)
    phidot = rng.normal(size=model.n)
    vz = np.r_[D.base_velocity_from_momentum(model, q, phidot), phidot]
    assert np.abs(D.momentum(model, q, vz)).max() < 1e-12 * max(1.0, np.linalg.norm(vz))
    fd = link_velocity_fd(model, q, vz, link)
    assert np.abs(terms.J_star @ phidot - fd).max() < 1e-7 * max(1.0, np.linalg.norm(fd))
    # ... and not along the same joint rates with the base held still (the coupling is real)
    fd_still = link_velocity_fd(model, q, np.r_[np.zeros(6), phidot], link)
    assert np.abs(terms.J_star @ phidot - fd_still).max() > 1e-3 * max(1.0, np.linalg.norm(fd))


@pytest.mark.parametrize('name', CASES)
def test_reduced_dynamics_reproduce_aba_with_an_unactuated_base(name: str) -> None:
    """``tau = H* phiddot + c*`` is the free-floating dynamics with zero base wrench [S0 eq.
    39]: ABA turns ``tau`` into ``phiddot`` and ``H*, c*`` turn ABA's ``phiddot`` into
    ``tau``."""
    model, link = case_model(name)
    q, v, rng = state(model, 5)
    terms = D.free_floating_terms(model, q, v, link)
    Hs, cs = terms.H_star, terms.c_star
    np.testing.assert_allclose(Hs, Hs.T, rtol=0, atol=1e-12 * np.abs(Hs).max())
    assert np.linalg.eigvalsh(Hs).min() > 0.0
    for _ in range(3):
        tau = rng.normal(size=model.n)
        a = D.forward_dynamics(model, q, v, tau)
        assert rel_err(Hs @ a[6:] + cs, tau) < 1e-10
        phiddot = rng.normal(size=model.n)
        a = D.forward_dynamics(model, q, v, Hs @ phiddot + cs)
        assert rel_err(a[6:], phiddot) < 1e-10
    # c* alone holds the joints unaccelerated
    assert np.abs(D.forward_dynamics(model, q, v, cs)[6:]).max() < 1e-10 * max(
        1.0, np.linalg.norm(cs)
    )


@pytest.mark.parametrize('name', CASES)
def test_single_purpose_views_equal_the_terms(name: str) -> None:
    """``generalized_inertia``, ``generalized_jacobian`` and ``inertia_blocks`` are views of
    ``free_floating_terms``; without a link there are no Jacobians."""
    model, link = case_model(name)
    q, v, _ = state(model, 6)
    terms = D.free_floating_terms(model, q, v, link)
    Hs, cs = D.generalized_inertia(model, q, v)
    np.testing.assert_array_equal(Hs, terms.H_star)
    np.testing.assert_array_equal(cs, terms.c_star)
    np.testing.assert_allclose(
        D.generalized_jacobian(model, q, link), terms.J_star, rtol=0, atol=1e-13
    )
    np.testing.assert_array_equal(terms.J, D.link_jacobian(model, q, link))
    H0, H0m, Hm = D.inertia_blocks(model, q)
    np.testing.assert_array_equal(H0, terms.H[:6, :6])
    np.testing.assert_array_equal(H0m, terms.H[:6, 6:])
    np.testing.assert_array_equal(Hm, terms.H[6:, 6:])
    bare = D.free_floating_terms(model, q, v)
    assert bare.J is None and bare.J_star is None
    for field in ('H', 'c', 'B', 'H_star', 'c_star'):
        np.testing.assert_array_equal(getattr(bare, field), getattr(terms, field))


def test_free_floating_terms_reject_a_fixed_base_and_unknown_links() -> None:
    fixed = D.load_urdf(sample_robot('ffsim_servicer_7dof'), floating_base=False)
    with pytest.raises(ValueError, match='free_floating_terms'):
        D.free_floating_terms(fixed, D.neutral(fixed), np.zeros(fixed.nv))
    model, _ = case_model('servicer')
    with pytest.raises(D.UnknownNameError, match='no_such_link'):
        D.free_floating_terms(model, D.neutral(model), np.zeros(model.nv), 'no_such_link')
    with pytest.raises(ValueError, match='q: expected'):
        D.free_floating_terms(model, np.zeros(3), np.zeros(model.nv))
