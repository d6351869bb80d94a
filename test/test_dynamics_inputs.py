"""Arguments of the dynamics API: what is refused (and how it is named), what is accepted.

Each test pins a defect found by probing the public functions: a batched step that ignored
``conserve_momentum``, step counts and numbers taken from floats, strings and complex values,
failures within a step blamed on the model (by the step's linearization too), solvers failing
on NaN without naming it, tiny quaternions refused by some functions and normalized by others, a
model that could not be pickled, smaller argument checks, an overflow from finite inputs
returned as NaN or blamed on a non-finite input, single-state calls returning NaN for a NaN
input (a fixed base's compiled step, a NaN base position under every method), flags taken by
their truth value, and arguments of the wrong kind failing with errors naming something else.
"""

from __future__ import annotations

import copy
import functools
import pickle
import re
import warnings
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from vector_layouts import LAYOUTS, laid_out

import ffsim_ros.dynamics as D
from ffsim_ros.dynamics.mufti import simulate_prescribed_base
from ffsim_ros.dynamics.mufti.samples import platform_chain
from ffsim_ros.resources import sample_robot


@pytest.fixture(scope='module')
def servicer() -> D.Model:
    return D.load_urdf(sample_robot('ffsim_servicer_7dof'))


def state(model: D.Model, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    q = D.neutral(model)
    q[3:7] = rng.normal(size=4)
    q[3:7] /= np.linalg.norm(q[3:7])
    q[7:] = rng.uniform(-1.0, 1.0, model.n)
    return q, rng.normal(scale=0.3, size=model.nv), rng.normal(size=model.n)


# ----------------------------------------------------------------------------------------------
# 1. batched step with conserve_momentum
# ----------------------------------------------------------------------------------------------


def test_batched_step_conserves_momentum_row_by_row(servicer: D.Model) -> None:
    """The rows of a batched conserving step are the single-state conserving steps, bit for
    bit (they were the plain steps: the flag was ignored, momentum drift 260 over 20 steps
    of 0.05 s, against round-off for the single-state call)."""
    states = [state(servicer, seed) for seed in range(3)]
    Q = np.array([s[0] for s in states])
    V = np.array([s[1] for s in states])
    T = np.array([s[2] for s in states])
    Qn, Vn = D.step(servicer, Q, V, T, 0.05, conserve_momentum=True, steps=20)
    plain = D.step(servicer, Q, V, T, 0.05, steps=20)[1]
    for r, (q, v, tau) in enumerate(states):
        q1, v1 = D.step(servicer, q, v, tau, 0.05, conserve_momentum=True, steps=20)
        assert np.array_equal(Qn[r], q1) and np.array_equal(Vn[r], v1), r
        target = D.momentum(servicer, q, v)
        assert np.abs(D.momentum(servicer, Qn[r], Vn[r]) - target).max() < 1e-9
        assert not np.array_equal(Vn[r], plain[r])
    # batch shapes are kept, a single tau broadcasts
    Qb, Vb = D.step(servicer, Q[None], V[None], T[0], 0.05, conserve_momentum=True)
    assert Qb.shape == (1, 3, servicer.nq) and Vb.shape == (1, 3, servicer.nv)
    q1, v1 = D.step(servicer, Q[1], V[1], T[0], 0.05, conserve_momentum=True)
    assert np.array_equal(Qb[0, 1], q1) and np.array_equal(Vb[0, 1], v1)


def test_batched_step_refuses_conservation_with_wrenches(servicer: D.Model) -> None:
    """A base wrench with conserve_momentum is refused for a batch as for one state."""
    q, v, tau = state(servicer)
    for Q, V in ((q, v), (q[None], v[None])):
        with pytest.raises(ValueError, match='conserve_momentum: expected no base or link'):
            D.step(servicer, Q, V, tau, 0.05, conserve_momentum=True, base_wrench=np.zeros(6))
    with pytest.raises(TypeError, match="conserve_momentum: expected a bool, got str 'no'"):
        D.step(servicer, q, v, tau, 0.05, conserve_momentum='no')
    a = D.step(servicer, q, v, tau, 0.05, conserve_momentum=np.bool_(True))
    b = D.step(servicer, q, v, tau, 0.05, conserve_momentum=True)
    assert np.array_equal(a[1], b[1])


# ----------------------------------------------------------------------------------------------
# 2. step counts
# ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize('steps', [2.9, 3.0, '3', True, float('nan'), None, np.float64(2.0)])
def test_step_count_must_be_an_integer(servicer: D.Model, steps: object) -> None:
    """2.9 took 2 steps, '3' and True were taken; NaN failed without naming ``steps``.
    Python and NumPy integers >= 1 are the counts taken."""
    q, v, tau = state(servicer)
    with pytest.raises(TypeError, match=r'steps: expected an integer >= 1, got '):
        D.step(servicer, q, v, tau, 0.01, steps=steps)
    with pytest.raises(TypeError, match=r'steps: expected an integer >= 1, got '):
        D.step(servicer, q[None], v[None], tau, 0.01, steps=steps)
    two = D.step(servicer, q, v, tau, 0.01, steps=2)
    assert np.array_equal(D.step(servicer, q, v, tau, 0.01, steps=np.int64(2))[1], two[1])
    for bad in (0, -1, np.int32(0)):
        with pytest.raises(ValueError, match=f'steps: expected an integer >= 1, got {bad}'):
            D.step(servicer, q, v, tau, 0.01, steps=bad)


def test_durations_of_the_simulate_functions_are_checked() -> None:
    """``t_final`` of the simulate functions: NaN failed as 'cannot convert float NaN to
    integer' (prescribed base), a numeric string was taken."""
    chain, q0 = platform_chain()
    model = chain.model
    v0, tau = np.zeros(model.nv), np.zeros(model.n)
    for t_final, error, text in (
        (float('nan'), ValueError, 't_final: expected a finite duration >= 0, got nan'),
        ('0.01', TypeError, "t_final: expected a real number, got str '0.01'"),
        (1e300, ValueError, 't_final, dt: expected a duration of fewer than 2\\*\\*53 steps'),
    ):
        with pytest.raises(error, match=text):
            chain.simulate(q0, v0, tau, t_final, 1e-3)

    def motion(_t: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        return D.neutral(model)[:7], np.zeros(6), np.zeros(6)

    for t_final, error, text in (
        (float('nan'), ValueError, 't_final: expected a finite duration >= 0, got nan'),
        ('0.01', TypeError, "t_final: expected a real number, got str '0.01'"),
    ):
        with pytest.raises(error, match=text):
            simulate_prescribed_base(model, motion, q0[7:], np.zeros(model.n), tau, t_final, 1e-3)
    with pytest.raises(TypeError, match="dt: expected a real number, got str '0.001'"):
        chain.step(q0, v0, tau, '0.001')


# ----------------------------------------------------------------------------------------------
# 3. values that are not real numbers
# ----------------------------------------------------------------------------------------------


def test_complex_values_and_strings_are_refused(servicer: D.Model) -> None:
    """They were taken as numbers (numeric strings converted, the imaginary part dropped
    with only numpy's ComplexWarning). Real values of any kind (ints, float32, lists,
    tuples, Python number objects) are still converted, to the same results."""
    q, v, tau = state(servicer)
    cases = (
        (lambda: D.aba(servicer, q + 1j, v, tau), 'q: expected real numbers, got complex'),
        (lambda: D.aba(servicer, q, v, ['1'] * 7), 'tau: expected real numbers, got strings'),
        (lambda: D.aba(servicer, q.astype(str), v, tau), 'q: expected real numbers, got str'),
        (lambda: D.aba(servicer, q[None] + 1j, v, tau), 'q: expected real numbers, got complex'),
        (lambda: D.aba(servicer, q, v.astype(complex), tau), 'v: expected real numbers'),
        (lambda: D.mass_matrix(servicer, q + 0j), 'q: expected real numbers, got complex'),
        (lambda: D.inverse_dynamics(servicer, q, v, 'abc'), 'a: expected real numbers, got str'),
        (lambda: D.step(servicer, q, v, tau, '0.01'), 'dt: expected a real number, got str'),
        (lambda: D.step(servicer, q, v, tau, 0.01 + 0j), 'dt: expected a real number'),
        (lambda: D.integrate(servicer, q, v, '0.01'), 'dt: expected a real number'),
        (lambda: D.aba(servicer, None, v, tau), 'q: expected real numbers, got None'),
        # booleans are no numbers, here as in the engine and the law (one rule for all)
        (lambda: D.aba(servicer, q, v, tau > 0), 'tau: expected real numbers, got booleans'),
        (lambda: D.aba(servicer, q, v, [True] * 7), 'tau: expected real numbers, got booleans'),
        (
            lambda: D.aba(servicer, q, [*v[:-1], None], tau),
            'v: expected real numbers, got None at index 12',
        ),
        (
            lambda: D.aba(servicer, q, v, tau, base_wrench=[1, 2, 3, 4, 5, 1j]),
            'base_wrench: expected real numbers',
        ),
        (
            lambda: D.step(servicer, q, v, tau, 0.01, base_wrench_body=np.zeros(6, complex)),
            'base_wrench_body: expected real numbers',
        ),
    )
    for call, text in cases:
        with pytest.raises(TypeError, match=text):
            call()
    tau = np.arange(servicer.n) - 3
    ref = D.aba(servicer, q, v, tau.astype(float))
    assert np.array_equal(D.aba(servicer, list(q), tuple(v), tau), ref)
    assert np.array_equal(D.aba(servicer, q, v, tau.astype(np.int32)), ref)
    assert np.array_equal(D.aba(servicer, q, v, [Fraction(int(t)) for t in tau]), ref)
    assert np.array_equal(D.aba(servicer, q, v, tau.astype(np.float32)), ref)
    assert np.array_equal(D.aba(servicer, q[None], v, tau.astype(np.int64))[0], ref)
    q1 = D.step(servicer, q, v, tau, np.float32(0.5))[0]
    assert np.array_equal(q1, D.step(servicer, q, v, tau, float(np.float32(0.5)))[0])
    assert np.array_equal(D.integrate(servicer, q, v, 1), D.integrate(servicer, q, v, 1.0))


# ----------------------------------------------------------------------------------------------
# 4. failures within a step, tolerances
# ----------------------------------------------------------------------------------------------


def test_a_step_failing_from_a_finite_state_says_so(servicer: D.Model) -> None:
    """A huge dt failed as 'the dynamics ... are not defined at this state ... a degenerate
    model': the model is fine at the state given; the step failed within. (The base does not
    turn: a step turning it by pi rad or more is refused before, test_step_failures.py.)"""
    q, v, tau = state(servicer)
    v[3:6] = 0.0
    for kwargs, within in (
        ({}, 'the step'),
        ({'steps': 3}, 'the 3 steps'),
        ({'link_wrenches': {'base_link': [0] * 6}}, 'the step'),
        ({'method': 'euler', 'steps': 3}, 'the 3 steps'),  # at a later step, not the first
    ):
        with pytest.raises(ValueError) as info:
            D.step(servicer, q, v, tau, 1e6, **kwargs)
        text = str(info.value)
        assert text.startswith(f'step: the dynamics failed within {within} from'), text
        assert 'from a finite state' in text and 'dt = 1e+06 s' in text, text
        assert 'degenerate' not in text, text
        assert 'too large a step' in text and 'too fast a motion' in text


def test_the_step_linearization_failing_from_a_finite_state_says_so(servicer: D.Model) -> None:
    """``step_derivatives`` blamed the model ("the dynamics ... are not defined at this state
    ... a degenerate model") where ``D.step`` raises ``StepFailure``: too fast a motion, too
    large a step, efforts too large for it. It fails as the step does, with its words: the
    same rates at the start, the same hint (D.step says besides at which stage it failed, and
    its kernels' own words may differ: the linearization factors the mass matrix its way).
    (The base does not turn: D.step refuses a step turning it by pi rad or more first.)"""
    q, v, tau = state(servicer)
    v[3:6] = 0.0
    for args in ((q, v * 1e150, tau, 1e-3), (q, v, tau, 1000.0), (q, v, tau * 1e300, 1e-3)):
        with pytest.raises(D.StepFailure) as step:
            D.step(servicer, *args)
        with pytest.raises(D.StepFailure) as linearization:
            D.step_derivatives(servicer, *args)
        text = str(linearization.value)
        assert str(step.value).endswith(text[text.index('; the base turning at ') :])
        assert text.startswith('step: the dynamics failed within the step from a finite state')
        assert f'dt = {args[3]:g} s' in text and 'degenerate' not in text, text


@pytest.mark.parametrize('name', ['rtol', 'atol'])
def test_solver_tolerances_are_checked(servicer: D.Model, name: str) -> None:
    """rtol=nan failed as a degenerate model, rtol=-1 was only a scipy warning."""
    q, v, tau = state(servicer)
    for bad, error in ((float('nan'), ValueError), (-1.0, ValueError), (0.0, ValueError)):
        with pytest.raises(error, match=f'{name}: expected a finite positive value, got'):
            D.step(servicer, q, v, tau, 0.01, method='RK45', **{name: bad})
    with pytest.raises(TypeError, match=f'{name}: expected a real number, got str'):
        D.step(servicer, q, v, tau, 0.01, method='RK45', **{name: '1e-6'})
    q1, _ = D.step(servicer, q, v, tau, 0.01, method='RK45', **{name: 1e-8})
    assert np.all(np.isfinite(q1))


# ----------------------------------------------------------------------------------------------
# 5. non-finite inputs of the NumPy/SciPy formulations
# ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize('method', ['kkt', 'multipliers', 'nullspace', 'barycentric'])
def test_maximal_formulations_name_a_non_finite_input(servicer: D.Model, method: str) -> None:
    """They failed with LinAlgError 'singular Lagrangian matrix', 'Eigenvalues did not
    converge' or scipy's 'array must not contain infs or NaNs'."""
    q, v, tau = state(servicer)
    for arg, index in (('q', 8), ('v', 2), ('tau', 4)):
        given = {'q': q.copy(), 'v': v.copy(), 'tau': tau.copy()}
        given[arg][index] = np.nan
        with pytest.raises(ValueError, match=f'{arg}: expected finite values, got nan at index'):
            D.forward_dynamics(servicer, **given, method=method)
    qz = q.copy()
    qz[3:7] = 0.0
    with pytest.raises(ValueError, match=r'q: expected a non-zero quaternion .* at index 3'):
        D.forward_dynamics(servicer, qz, v, tau, method=method)
    with pytest.raises(ValueError, match='base_wrench: expected finite values, got inf'):
        D.forward_dynamics(servicer, q, v, tau, base_wrench=[0, 0, np.inf, 0, 0, 0], method=method)


def test_joint_reactions_name_a_non_finite_input(servicer: D.Model) -> None:
    q, v, tau = state(servicer)
    qn, vn = q.copy(), v.copy()
    qn[8], vn[2] = np.nan, np.inf
    with pytest.raises(ValueError, match='q: expected finite values, got nan at index 8'):
        D.joint_reactions(servicer, qn, v, tau)
    with pytest.raises(ValueError, match='v: expected finite values, got inf at index 2'):
        D.joint_reactions(servicer, q, vn, tau)
    link = servicer.link_names[-1]
    with pytest.raises(ValueError, match=rf"link_wrenches\['{link}'\]: expected finite values"):
        D.joint_reactions(servicer, q, v, tau, link_wrenches={link: [np.nan, 0, 0, 0, 0, 0]})
    with pytest.raises(ValueError, match='base_acceleration: expected finite values'):
        D.maximal_dynamics(servicer, q, v, tau, base_acceleration=[np.nan, 0, 0, 0, 0, 0])


def test_a_non_finite_link_wrench_is_named(servicer: D.Model) -> None:
    q, v, tau = state(servicer)
    link = servicer.link_names[-1]
    bad = {link: [0.0, 0.0, 0.0, np.nan, 0.0, 0.0]}
    for call in (
        lambda: D.aba(servicer, q, v, tau, link_wrenches=bad),
        lambda: D.forward_dynamics_crba(servicer, q, v, tau, link_wrenches=bad),
        lambda: D.inverse_dynamics(servicer, q, v, np.zeros(servicer.nv), link_wrenches=bad),
        lambda: D.step(servicer, q, v, tau, 0.01, link_wrenches=bad),
    ):
        with pytest.raises(ValueError, match=rf"link_wrenches\['{link}'\]: expected finite"):
            call()


# ----------------------------------------------------------------------------------------------
# 6. tiny quaternions
# ----------------------------------------------------------------------------------------------


def test_a_tiny_quaternion_is_normalized_everywhere(servicer: D.Model) -> None:
    """A quaternion of norm 1e-200 is a quaternion: the single-state kernels normalized it,
    while batched aba / integrate and link_pose_and_jacobian refused it (the sum of squares
    underflowed to 0) and base_link_state / difference refused anything under 1e-9."""
    q, v, tau = state(servicer)
    tiny = q.copy()
    tiny[3:7] *= 1e-200
    link = servicer.link_names[-1]
    assert np.allclose(D.aba(servicer, tiny[None], v, tau)[0], D.aba(servicer, q, v, tau))
    assert np.allclose(D.integrate(servicer, tiny[None], v[None], 0.1)[0],
                       D.integrate(servicer, q, v, 0.1), rtol=0, atol=1e-14)  # fmt: skip
    for got, ref in zip(
        D.link_pose_and_jacobian(servicer, tiny, link),
        D.link_pose_and_jacobian(servicer, q, link),
        strict=True,
    ):
        assert np.allclose(got, ref, rtol=0, atol=1e-12)
    for got, ref in zip(
        D.base_link_state(servicer, tiny, v), D.base_link_state(servicer, q, v), strict=True
    ):
        assert np.allclose(got, ref, rtol=0, atol=1e-14)
    q1 = D.integrate(servicer, q, v, 0.3)
    tiny1 = q1.copy()
    tiny1[3:7] *= 1e-200
    ref = D.difference(servicer, q, q1)
    assert np.allclose(D.difference(servicer, tiny, q1), ref, rtol=0, atol=1e-12)
    assert np.allclose(D.difference(servicer, q, tiny1), ref, rtol=0, atol=1e-12)
    huge, huge1 = q.copy(), q1.copy()  # squares beyond the largest float: scaled first too
    huge[3:7] *= 1e160
    huge1[3:7] *= 1e160
    assert np.allclose(D.difference(servicer, huge, huge1), ref, rtol=0, atol=1e-12)
    for got, ref in zip(
        D.base_link_state(servicer, huge, v), D.base_link_state(servicer, q, v), strict=True
    ):
        assert np.allclose(got, ref, rtol=0, atol=1e-14)


def test_a_zero_quaternion_is_refused_with_the_value_given(servicer: D.Model) -> None:
    q, v, tau = state(servicer)
    zero = q.copy()
    zero[3:7] = 0.0
    link = servicer.link_names[-1]
    for call, text in (
        (lambda: D.aba(servicer, zero[None], v, tau), 'q: expected a non-zero quaternion'),
        (lambda: D.link_pose_and_jacobian(servicer, zero, link), 'q: expected a non-zero'),
        (lambda: D.base_link_state(servicer, zero), r'q\[3:7\]: expected a non-zero finite'),
        (lambda: D.difference(servicer, zero, q), r'q0\[3:7\]: expected a non-zero finite'),
        (lambda: D.difference(servicer, q, zero), r'q1\[3:7\]: expected a non-zero finite'),
    ):
        with pytest.raises(ValueError, match=text) as info:
            call()
        assert '[0.0, 0.0, 0.0, 0.0]' in str(info.value), str(info.value)
    # difference named the product Q1 * conj(Q0), not what was passed; NaN went through
    nan = q.copy()
    nan[9] = np.nan
    with pytest.raises(ValueError, match='q1: expected finite values, got nan at index 9'):
        D.difference(servicer, q, nan)
    with pytest.raises(ValueError, match='q: expected finite values, got nan at index 9'):
        D.link_pose_and_jacobian(servicer, nan, link)


# ----------------------------------------------------------------------------------------------
# 7. pickling a model
# ----------------------------------------------------------------------------------------------


def test_a_model_pickles_and_stays_immutable(servicer: D.Model) -> None:
    """``pickle.dumps(model)`` failed: cannot pickle 'mappingproxy' object (a model could
    not go to a multiprocessing worker)."""
    q, v, tau = state(servicer)
    for copied in (pickle.loads(pickle.dumps(servicer)), copy.deepcopy(servicer)):
        assert copied is not servicer and copied.name == servicer.name
        assert np.array_equal(D.aba(copied, q, v, tau), D.aba(servicer, q, v, tau))
        assert np.array_equal(D.mass_matrix(copied, q), D.mass_matrix(servicer, q))
        for a, b in zip(
            D.step(copied, q, v, tau, 0.01, steps=3),
            D.step(servicer, q, v, tau, 0.01, steps=3),
            strict=True,
        ):
            assert np.array_equal(a, b)
        link = servicer.link_names[-1]
        assert np.array_equal(D.link_jacobian(copied, q, link), D.link_jacobian(servicer, q, link))
        assert copied.joint_index(servicer.joint_names[2]) == 2
        # immutable as the original: read-only arrays and mappings, frozen attributes
        arrays = [copied.lower, copied.upper, copied.effort_limit, copied.velocity_limit]
        arrays += list(copied.arrays) + list(copied.packed)
        arrays += [a for f in copied.frames.values() for a in (f.rotation, f.translation)]
        assert all(not a.flags.writeable for a in arrays)
        with pytest.raises(ValueError, match='read-only'):
            copied.arrays.mass[0] = 1.0
        with pytest.raises(TypeError):
            copied.frames[link] = None  # type: ignore[index]
        with pytest.raises(TypeError):
            copied._joint_index['x'] = 0  # type: ignore[index]
        with pytest.raises(AttributeError):
            copied.name = 'other'  # type: ignore[misc]
    damped = pickle.loads(pickle.dumps(D.with_joint_dynamics(servicer)))
    assert damped.joint_dynamics


# ----------------------------------------------------------------------------------------------
# 8. smaller argument checks
# ----------------------------------------------------------------------------------------------


def test_link_wrenches_must_be_a_mapping(servicer: D.Model) -> None:
    """A list raised AttributeError "'list' object has no attribute 'items'"."""
    q, v, tau = state(servicer)
    for call in (
        lambda: D.aba(servicer, q, v, tau, link_wrenches=[1, 2]),
        lambda: D.bias_forces(servicer, q, v, link_wrenches=[('base_link', [0] * 6)]),
        lambda: D.step(servicer, q, v, tau, 0.01, link_wrenches=[1]),
        lambda: D.joint_reactions(servicer, q, v, tau, link_wrenches=[1]),
    ):
        with pytest.raises(TypeError, match=r'link_wrenches: expected a mapping \{link name'):
            call()
    with pytest.raises(TypeError, match=r"link_wrenches\['base_link'\]: expected real numbers"):
        D.aba(servicer, q, v, tau, link_wrenches={'base_link': None})


def test_with_joint_dynamics_takes_a_bool(servicer: D.Model) -> None:
    """'no' switched the joint dynamics on."""
    with pytest.raises(TypeError, match="enabled: expected a bool, got str 'no'"):
        D.with_joint_dynamics(servicer, 'no')  # type: ignore[arg-type]
    with pytest.raises(TypeError, match='enabled: expected a bool, got int 1'):
        D.with_joint_dynamics(servicer, 1)  # type: ignore[arg-type]
    assert D.with_joint_dynamics(servicer, np.bool_(True)).joint_dynamics is True
    assert D.with_joint_dynamics(servicer, False).joint_dynamics is False


def test_batched_aba_broadcasts_against_q(servicer: D.Model) -> None:
    """The batch shape is q's: v, tau broadcast to it (the docstrings said the arguments
    broadcast against each other, but a batched v with a single q is refused, clearly)."""
    for doc in (D.aba.__doc__, D.forward_dynamics.__doc__):
        assert 'a batched ``v`` needs a batched ``q``' in ' '.join(str(doc).split())
    q, v, tau = state(servicer)
    V = np.stack([v, 2 * v])
    out = D.aba(servicer, np.stack([q, q]), V, tau)
    assert np.array_equal(out[1], D.aba(servicer, q, 2 * v, tau))
    assert np.array_equal(D.aba(servicer, q[None], v, tau)[0], D.aba(servicer, q, v, tau))
    with pytest.raises(ValueError, match=r'v: expected 13 values, got shape \(2, 13\)'):
        D.aba(servicer, q, V, tau)


# ----------------------------------------------------------------------------------------------
# 9. an overflow from finite inputs
# ----------------------------------------------------------------------------------------------


def test_an_overflow_from_finite_inputs_says_so(servicer: D.Model) -> None:
    """Finite velocities of 1e200 (their products overflow): aba, every forward-dynamics method,
    batched aba, bias_forces and inverse_dynamics returned NaN silently, kinetic_energy inf,
    'nullspace' raised SciPy's "array must not contain infs or NaNs", 'barycentric' named a
    ``torques`` never passed, the derivatives said "non-finite input". Each says overflow."""
    q, v, tau = state(servicer)
    fast = v * 1e200
    top = f'{np.abs(fast).max():.3g}'.replace('+', r'\+')
    link = {servicer.link_names[-1]: np.ones(6)}
    calls = {
        'aba': lambda: D.aba(servicer, q, fast, tau),
        'aba, wrenches': lambda: D.aba(servicer, q, fast, tau, np.ones(6), link),
        'aba, batched': lambda: D.aba(servicer, np.stack([q, q]), np.stack([v, fast]), tau),
        **{
            f'forward_dynamics {m}': functools.partial(
                D.forward_dynamics, servicer, q, fast, tau, method=m
            )
            for m in D.FORWARD_DYNAMICS_METHODS
        },
        'bias_forces': lambda: D.bias_forces(servicer, q, fast),
        'bias_forces, batched': lambda: D.bias_forces(
            servicer, np.stack([q, q]), np.stack([v, fast])
        ),
        'inverse_dynamics': lambda: D.inverse_dynamics(servicer, q, fast, v),
        'inverse_dynamics, wrenches': lambda: D.inverse_dynamics(
            servicer, q, fast, v, link_wrenches=link
        ),
        'kinetic_energy': lambda: D.kinetic_energy(servicer, q, fast),
        'forward_dynamics_derivatives': lambda: D.forward_dynamics_derivatives(
            servicer, q, fast, tau
        ),
        'inverse_dynamics_derivatives': lambda: D.inverse_dynamics_derivatives(
            servicer, q, fast, v
        ),
    }
    expected = (
        r"^overflow: the dynamics of 'ffsim_servicer_7dof' are not finite at this finite state: "
        rf'velocities/efforts too large \(max \|v\| = {top}[,)]'
    )
    for what, call in calls.items():
        with warnings.catch_warnings():
            warnings.simplefilter('ignore', RuntimeWarning)  # NumPy's overflow warnings
            with pytest.raises(ValueError, match=expected) as info:
                call()
        assert type(info.value) is ValueError, what
        assert what.endswith('batched') == str(info.value).endswith(' in row 1'), what
    # a NaN that propagated through the fast paths as NaN is named now
    nan = v.copy()
    nan[4] = np.nan
    for call in (
        lambda: D.aba(servicer, q, nan, tau),
        lambda: D.bias_forces(servicer, q, nan),
        lambda: D.inverse_dynamics(servicer, q, v, nan),
    ):
        with pytest.raises(ValueError, match='^[va]: expected finite values, got nan at index 4'):
            call()


def test_aba_and_the_bias_forces_are_unchanged_on_ordinary_states(servicer: D.Model) -> None:
    """The check of the fast paths' results changes no value: they equal the unchecked
    entry points (the path with wrenches, the CRBA) and are finite."""
    q, v, tau = state(servicer)
    a = D.aba(servicer, q, v, tau)
    assert np.array_equal(a, D.aba(servicer, q, v, tau, np.zeros(6), {'base_link': np.zeros(6)}))
    crba = D.forward_dynamics_crba(servicer, q, v, tau)
    assert np.abs(a - crba).max() <= 1e-12 * np.abs(crba).max()
    c = D.bias_forces(servicer, q, v)
    assert np.array_equal(c, D.bias_forces(servicer, q, v, link_wrenches={}))
    H = D.mass_matrix(servicer, q)
    np.testing.assert_allclose(
        D.inverse_dynamics(servicer, q, v, a), np.r_[np.zeros(6), tau], rtol=0, atol=1e-11
    )
    np.testing.assert_allclose(H @ a + c, np.r_[np.zeros(6), tau], rtol=0, atol=1e-11)
    assert D.kinetic_energy(servicer, q, v) == 0.5 * float(v @ H @ v)


# ----------------------------------------------------------------------------------------------
# 10. single-state calls that returned NaN silently
# ----------------------------------------------------------------------------------------------


def _single_state_calls(model: D.Model, q: np.ndarray, v: np.ndarray) -> dict:
    """Every single-state function of (q, v) whose kernel returned NaN for a NaN input."""
    phidot = v[6:]
    return {
        'mass_matrix': lambda: D.mass_matrix(model, q),
        'body_poses': lambda: D.body_poses(model, q),
        'body_kinematics': lambda: D.body_kinematics(model, q),
        'link_pose': lambda: D.link_pose(model, q, 'ee_link'),
        'link_jacobian': lambda: D.link_jacobian(model, q, 'ee_link'),
        'generalized_jacobian': lambda: D.generalized_jacobian(model, q, 'ee_link'),
        'inertia_blocks': lambda: D.inertia_blocks(model, q),
        'center_of_mass': lambda: D.center_of_mass(model, q),
        'potential_energy': lambda: D.potential_energy(D.with_gravity(model, G), q),
        'momentum': lambda: D.momentum(model, q, v),
        'momentum about com': lambda: D.momentum(model, q, v, about='com'),
        'momentum_and_com': lambda: D.momentum_and_com(model, q, v),
        'momentum_after': lambda: D.momentum_after(model, q, v, 0.1),
        'base_velocity_from_momentum': lambda: D.base_velocity_from_momentum(model, q, phidot),
        'integrate': lambda: D.integrate(model, q, v, 0.01),
        'state_summary': lambda: D.state_summary(model, q, v),
        'base_link_state': lambda: D.base_link_state(model, q, v),
        'kinetic_energy': lambda: D.kinetic_energy(model, q, v),
    }


G = (0.0, 0.0, -9.81)


def _not_raising(calls: dict, pattern: str) -> list[tuple[str, str]]:
    """``(name, what happened)`` of the ``calls`` that did not raise a ``ValueError`` whose
    message matches ``pattern`` (all of them listed, not only the first)."""
    wrong = []
    for what, call in calls.items():
        try:
            call()
        except ValueError as e:
            if not re.match(pattern, str(e)):
                wrong.append((what, f'{type(e).__name__}: {e}'))
        else:
            wrong.append((what, 'returned'))
    return wrong


@pytest.mark.parametrize('bad', [np.nan, np.inf])
def test_single_state_calls_name_a_non_finite_configuration(servicer: D.Model, bad: float) -> None:
    """A NaN or an infinity in a joint angle or the base position: each of these returned
    NaN (the batched forms raised), kinetic_energy said "overflow ... velocities too large".
    The README promises the argument named."""
    q, v, _ = state(servicer)
    for index in (13, 0):  # the last joint, the base CoM
        qb = q.copy()
        qb[index] = bad
        calls = _single_state_calls(servicer, qb, v)
        assert _not_raising(calls, f'q: expected finite values, got {bad} at index {index}$') == []


def test_single_state_calls_name_a_non_finite_velocity(servicer: D.Model) -> None:
    q, v, _ = state(servicer)
    for index, bad in ((12, np.nan), (2, np.inf)):
        vb = v.copy()
        vb[index] = bad
        calls = _single_state_calls(servicer, q, vb)
        of_v = ('momentum', 'momentum_and_com', 'momentum_after', 'integrate', 'state_summary')
        calls = {what: calls[what] for what in of_v + ('base_link_state', 'kinetic_energy')}
        with warnings.catch_warnings():
            warnings.simplefilter('error')  # (named before NumPy warns of inf * 0)
            wrong = _not_raising(calls, f'v: expected finite values, got {bad} at index {index}$')
        assert wrong == []
        phidot = v[6:].copy()
        phidot[3] = bad
        with pytest.raises(
            ValueError, match=f'^phidot: expected finite values, got {bad} at index 3'
        ):
            D.base_velocity_from_momentum(servicer, q, phidot)
    momentum = np.array([0.0, 0.0, 0.0, 0.0, np.nan, 0.0])
    with pytest.raises(ValueError, match='^momentum: expected finite values, got nan at index 4'):
        D.base_velocity_from_momentum(servicer, q, v[6:], momentum, about='com')


def test_base_state_from_link_names_a_non_finite_argument(servicer: D.Model) -> None:
    """It returned NaN for each."""
    given = {
        'position': [0.0, 1.0, 2.0],
        'quaternion': [0.0, 0.0, 0.0, 1.0],
        'linear_velocity': [0.1, 0.0, 0.0],
        'angular_velocity': [0.0, 0.2, 0.0],
    }
    for name in given:
        for bad in (np.nan, np.inf):
            args = {k: list(x) for k, x in given.items()}
            args[name][1] = bad
            with pytest.raises(ValueError, match=f'^{name}: expected finite values, got {bad} '):
                D.base_state_from_link(servicer, **args)


@pytest.mark.parametrize('bad', [np.nan, np.inf])
def test_a_non_finite_base_position_is_named(servicer: D.Model, bad: float) -> None:
    """The steps and derivatives are taken with the base CoM moved to the origin: a NaN there
    was added back to a finite step (NaN position returned, whatever the method) or dropped
    (the derivatives returned finite values for it)."""
    q, v, tau = state(servicer)
    q[0] = bad
    for call in (
        lambda: D.step(servicer, q, v, tau, 1e-3),
        lambda: D.step(servicer, q, v, tau, 1e-3, steps=3),
        lambda: D.step(servicer, q, v, tau, 1e-3, method='euler'),
        lambda: D.step(servicer, q, v, tau, 1e-3, conserve_momentum=True),
        lambda: D.step(servicer, q, v, tau, 1e-3, method='RK45'),
        lambda: D.step_derivatives(servicer, q, v, tau, 1e-3),
        lambda: D.forward_dynamics_derivatives(servicer, q, v, tau),
        lambda: D.inverse_dynamics_derivatives(servicer, q, v, v),
        lambda: D.generalized_velocity_derivatives(servicer, q, v[6:], 'ee_link'),
        lambda: D.state_summary(servicer, q, v),
    ):
        with pytest.raises(ValueError, match=f'^q: expected finite values, got {bad} at index 0'):
            call()


def test_a_fixed_base_step_names_a_non_finite_input(servicer: D.Model) -> None:
    """The compiled RK4 step of a fixed base (no Cholesky to fail on NaN) returned NaN for a
    NaN joint angle, rate or effort; its result is checked in the kernel now."""
    fixed = D.load_urdf(sample_robot('ffsim_servicer_7dof'), floating_base=False)
    q, v, tau = np.full(7, 0.3), np.full(7, 0.1), np.ones(7)
    for name, index, bad in (('q', 2, np.nan), ('v', 6, np.inf), ('tau', 0, np.nan)):
        given = {'q': q.copy(), 'v': v.copy(), 'tau': tau.copy()}
        given[name][index] = bad
        for steps in (1, 4):
            with pytest.raises(ValueError, match=f'^{name}: expected finite values, got {bad} '):
                D.step(fixed, **given, dt=1e-3, steps=steps)


def test_a_compiled_step_overflowing_from_a_finite_state_says_so() -> None:
    """Finite joint rates of 1e200 on a fixed base: the compiled step returned NaN; it is the
    step's failure from a finite state (an overflow), as the Python-driven methods say."""
    fixed = D.load_urdf(sample_robot('ffsim_servicer_7dof'), floating_base=False)
    q, v, tau = np.full(7, 0.3), np.full(7, 1e200), np.ones(7)
    with warnings.catch_warnings():
        warnings.simplefilter('ignore', RuntimeWarning)  # (NumPy's, in the failure's analysis)
        with pytest.raises(D.StepFailure, match='^step: the dynamics failed within the step'):
            D.step(fixed, q, v, tau, 1e-3)
        with pytest.raises(D.StepFailure, match='Overflow: the inputs drive rates up to'):
            D.step(fixed, q, v, tau, 1e-3, method='euler')


def test_the_momentum_and_the_flow_over_a_huge_time_name_dt(servicer: D.Model) -> None:
    """integrate(dt=1e300) returned NaN (batched too); momentum_after(dt=1e300) NaN."""
    q, v, _ = state(servicer)
    expected = r'^dt: the motion v dt overflows float64 \(dt = 1e\+300 s'
    with pytest.raises(ValueError, match=expected):
        D.integrate(servicer, q, v, 1e300)
    with pytest.raises(ValueError, match=expected + r'.* in row 1$'):
        D.integrate(servicer, np.stack([q, q]), np.stack([v * 0, v]), 1e300)
    with pytest.raises(ValueError, match=r'^dt: the momentum after dt = 1e\+300 s overflows'):
        D.momentum_after(servicer, q, v, 1e300)
    assert np.isfinite(D.integrate(servicer, q, v, 1e3)).all()  # (a long finite flow is fine)


# ----------------------------------------------------------------------------------------------
# 11. flags and arguments named
# ----------------------------------------------------------------------------------------------


def test_load_urdf_flags_are_bools() -> None:
    """floating_base='false' gave a floating base, strict_inertia='false' a strict load."""
    source = sample_robot('ffsim_servicer_7dof')
    for flag in ('floating_base', 'strict_inertia'):
        for bad in ('false', 'no', 0, 1, None):
            with pytest.raises(TypeError, match=f'^{flag}: expected a bool, got '):
                D.load_urdf(source, **{flag: bad})
    assert D.load_urdf(source, floating_base=np.bool_(False)).floating_base is False
    assert D.load_urdf(source, strict_inertia=np.bool_(True)).nq == 14


def test_load_urdf_of_a_missing_file_names_it_and_the_working_directory(
    tmp_path, monkeypatch
) -> None:
    """load_urdf('no/such.urdf') said "expected an XML string or a file path, got
    'no/such.urdf'" -- as if the path were no path: a FileNotFoundError naming the path and
    the working directory a relative one was resolved against, still a ValueError for the
    callers that take a bad source as one (the campaign's robot, a scene's)."""
    monkeypatch.chdir(tmp_path)
    for source in ('no/such.urdf', 'such.urdf', 'robot.XML', 'urdf/servicer', Path('nowhere')):
        with pytest.raises(FileNotFoundError) as info:
            D.load_urdf(source)
        assert isinstance(info.value, ValueError) and isinstance(
            info.value, D.UrdfFileNotFoundError
        )
        assert str(info.value) == (
            f'URDF file {str(source)!r}: no such file (relative to the working directory '
            f'{str(tmp_path)!r})'
        )
    absolute = str(tmp_path / 'gone.urdf')
    with pytest.raises(
        FileNotFoundError, match=f'^URDF file {re.escape(repr(absolute))}: no such file$'
    ):
        D.load_urdf(absolute)
    # neither XML nor a path: as before; a folder: not a regular file
    with pytest.raises(
        ValueError, match="^URDF source: expected an XML string or a file path, got 'robot'$"
    ) as info:
        D.load_urdf('robot')
    assert not isinstance(info.value, OSError)
    with pytest.raises(ValueError, match='which is not a regular file$') as info:
        D.load_urdf(str(tmp_path))
    assert not isinstance(info.value, OSError)
    # the campaign's robot: one line naming the field and the file
    from ffsim_ros.campaign.batch import Campaign
    from ffsim_ros.campaign.scenario import Scenario, ScenarioError

    data = {'robot': 'no/such.urdf', 'goals': {'kind': 'chained'}, 'runs': 1}
    with pytest.raises(ScenarioError, match=r"^robot: URDF file 'no/such\.urdf': no such file"):
        Campaign(Scenario.from_dict(data))


def test_arguments_of_the_wrong_kind_are_named(servicer: D.Model) -> None:
    """Each raised an error naming something else or nothing: a 'method' parameter
    forward_dynamics_crba does not have, numpy's ambiguous truth value, "unhashable type:
    'list'", a bare OverflowError, AttributeError of None, os.fspath's TypeError; None as
    the acceleration of inverse_dynamics was taken for zero."""
    q, v, tau = state(servicer)
    cases = [
        (
            lambda: D.forward_dynamics_crba(servicer, np.stack([q, q]), v, tau),
            ValueError,
            r'^q: expected a single state \(14,\) .*got shape \(2, 14\)',
        ),
        (
            lambda: D.aba(servicer, q, v, tau, link_wrenches=np.ones(6)),
            TypeError,
            r'^link_wrenches: expected a mapping',
        ),
        (
            lambda: D.step(servicer, q, v, tau, 1e-3, link_wrenches=np.ones(6)),
            TypeError,
            r'^link_wrenches: expected a mapping',
        ),
        (
            lambda: D.link_jacobian(servicer, q, ['ee_link']),
            TypeError,
            r"^link: expected a link name \(str\), got list \['ee_link'\]",
        ),
        (
            lambda: D.link_pose(servicer, q, ['ee_link']),
            TypeError,
            r'^link: expected a link name \(str\)',
        ),
        (
            lambda: D.step(servicer, q, v, tau, 1e-3, steps=2**63),
            ValueError,
            rf'^steps: expected an integer <= {2**63 - 1}, got {2**63}',
        ),
        (lambda: D.aba(None, q, v, tau), TypeError, r'^model: expected a Model .*got None'),
        (lambda: D.aba('x', q, v, tau), TypeError, r"^model: expected a Model .*got str 'x'"),
        (lambda: D.mass_matrix(None, q), TypeError, r'^model: expected a Model'),
        (lambda: D.step(None, q, v, tau, 1e-3), TypeError, r'^model: expected a Model'),
        (lambda: D.momentum(None, q, v), TypeError, r'^model: expected a Model'),
        (lambda: D.load_urdf(None), TypeError, r'^source: expected a URDF XML string, bytes or'),
        (lambda: D.load_urdf(5), TypeError, r'^source: expected .*, got int 5'),
        (lambda: D.inverse_dynamics(servicer, q, v, None), TypeError, r'^a: expected \(nv,\)'),
    ]
    wrong = []
    for k, (call, error, match) in enumerate(cases):
        try:
            call()
        except Exception as e:  # noqa: BLE001 (each case's error, whatever it is, listed)
            if not (isinstance(e, error) and re.match(match, str(e))):
                wrong.append((k, f'{type(e).__name__}: {e}'))
        else:
            wrong.append((k, 'returned'))
    assert wrong == []


def test_kinetic_energy_names_a_non_finite_configuration(servicer: D.Model) -> None:
    """A NaN joint angle was reported as an overflow of the velocities."""
    q, v, _ = state(servicer)
    q[13] = np.nan
    with pytest.raises(ValueError, match='^q: expected finite values, got nan at index 13$'):
        D.kinetic_energy(servicer, q, v)


@pytest.mark.parametrize('how', LAYOUTS)
def test_fast_paths_take_any_layout_of_a_float64_vector(servicer: D.Model, how: str) -> None:
    """The fast paths check a vector's class, dtype and dimension in Python, its size and
    stride in the compiled entry point (which refuses, reading nothing, and the converting
    path takes over): a strided or reversed view, NaN between or around its values, gives
    the results of a plain copy, bit for bit."""
    q, v, tau = state(servicer, 3)
    a = np.random.default_rng(3).normal(size=servicer.nv)
    lay = functools.partial(laid_out, how=how)
    np.testing.assert_array_equal(
        D.forward_dynamics(servicer, lay(q), lay(v), lay(tau)),
        D.forward_dynamics(servicer, q, v, tau),
    )
    np.testing.assert_array_equal(D.mass_matrix(servicer, lay(q)), D.mass_matrix(servicer, q))
    np.testing.assert_array_equal(
        D.bias_forces(servicer, lay(q), lay(v)), D.bias_forces(servicer, q, v)
    )
    np.testing.assert_array_equal(
        D.inverse_dynamics(servicer, lay(q), lay(v), lay(a)),
        D.inverse_dynamics(servicer, q, v, a),
    )


def test_fast_paths_refuse_a_vector_of_another_size_with_its_name(servicer: D.Model) -> None:
    """A float64 vector one entry short or long passes the Python half of the fast path's
    check; the entry point refuses it by size and the converting path names it."""
    q, v, tau = state(servicer, 4)
    cases = [
        (lambda: D.forward_dynamics(servicer, q[:-1], v, tau), r'q: expected 14 values'),
        (lambda: D.forward_dynamics(servicer, q, np.append(v, 0.0), tau), r'v: expected 13'),
        (lambda: D.forward_dynamics(servicer, q, v, tau[:-1]), r'tau: expected 7 values'),
        (lambda: D.mass_matrix(servicer, np.append(q, 1.0)), r'q: expected 14 values'),
        (lambda: D.bias_forces(servicer, q, v[:-1]), r'v: expected 13 values'),
        (lambda: D.inverse_dynamics(servicer, q, v, v[:-2]), r'a: expected 13 values'),
    ]
    for call, message in cases:
        with pytest.raises(ValueError, match=message):
            call()


def test_packed_header_carries_the_sizes_the_entry_points_check() -> None:
    """``idata[12:14]`` = ``(nq, n)``: a free root and ball joints (a quaternion each, one
    coordinate more than their DoFs), a fixed base, a robot without joints."""
    from ffsim_ros.dynamics.builder import random_model

    models = [
        random_model(3, 6, joint_types=('revolute', 'prismatic', 'spherical', 'universal')),
        random_model(4, 5, joint_types=('spherical',), floating_base=False),
        D.load_urdf(sample_robot('ffsim_servicer_7dof')),
        random_model(5, 0),
    ]
    for model in models:
        idata = model.packed[0]
        assert (idata[12], idata[13]) == (model.nq, model.n), model.name
