"""Steps ``D.step`` refuses, and what a failing step says.

A step turning the base or a ball joint by pi rad or more is refused (RK4 runs the attitudes
in the exponential chart about the step's start, whose rate is singular at a full turn): the
reference is the exact motion of a torque-free body about a principal axis. A run failing
from a finite state names the step that failed (the reference: the fewest steps from the
start that fail), the rates at its start and at the first, and a matrix that is not finite
as such, not as indefinite.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

import ffsim_ros.dynamics as D
from ffsim_ros.dynamics import mufti as M
from ffsim_ros.dynamics.builder import ModelBuilder, random_configuration, random_model
from ffsim_ros.dynamics.lie import matrix_exp, quat_to_matrix
from ffsim_ros.dynamics.mufti import samples as S

INERTIA = np.diag([1.0, 2.0, 3.0])


def block() -> D.Model:
    """A rigid body, principal axes along its frame axes, CoM off the link origin."""
    b = ModelBuilder('block')
    b.add_base('body', mass=4.0, com=(0.1, -0.2, 0.3), inertia=INERTIA)
    return b.build()


def attitude(seed: int = 3) -> np.ndarray:
    quat = np.random.default_rng(seed).normal(size=4)
    return quat / np.linalg.norm(quat)


def test_a_step_turning_the_base_by_pi_or_more_is_refused() -> None:
    """A block spinning at 50 rad/s about its principal axis z, one step of ``angle / 50`` s:
    exact below pi rad; at a full turn the step came back 0.6-2.6 rad off in attitude,
    silently (the chart's ``k = 1/t^2 - (1 + cos t) / (2 t sin t)`` is singular at 2 pi; about
    a generic axis the step is 0.57 rad off at 3 rad already). Refused from pi rad, whatever
    the method, with momentum conservation, several steps, a batch, or D.rk4_step."""
    model = block()
    q = np.r_[0.5, -1.0, 2.0, attitude()]
    R = quat_to_matrix(q[3:7])
    axis = R[:, 2]  # the principal axis z, world frame
    v = np.r_[0.3, -0.2, 0.1, 50.0 * axis]
    none = np.zeros(0)
    for angle in (1.0, 3.0, 3.1):
        q1, v1 = D.step(model, q, v, none, angle / 50.0)
        exact = matrix_exp(angle * axis) @ R
        assert np.abs(quat_to_matrix(q1[3:7]) - exact).max() < 1e-13, angle
        assert np.abs(v1 - v).max() < 1e-12
    for angle in (np.pi, 2.0 * np.pi, 3.0 * np.pi):
        dt = angle / 50.0
        message = (
            f'the base would turn by {angle:.3g} rad in one step (|w| = 50 rad/s at its start, '
            f'dt = {dt:g} s): expected less than pi rad per step (the step runs the attitude in '
            'a chart about its start, inaccurate from there and singular at a full turn): a '
            'smaller dt, below 0.0628 s'
        )
        for options in (
            {},
            {'conserve_momentum': True},
            {'steps': 3},
            {'method': 'euler'},
            {'method': 'RK45'},
        ):
            with pytest.raises(D.StepFailure, match=f'^{re.escape("step: " + message)}$'):
                D.step(model, q, v, none, dt, **options)
        # a batch names the row (the fastest), which it did not
        batch = 'step: ' + message.replace('(|w|', '(row 1: |w|')
        with pytest.raises(D.StepFailure, match=f'^{re.escape(batch)}$'):
            D.step(model, np.stack([q, q]), np.stack([0.0 * v, v]), np.zeros((2, 0)), dt)
        with pytest.raises(D.StepFailure, match=re.escape('(row 2: |w| = 100 rad/s')):
            rows = np.stack([v, 0.0 * v, 2.0 * v, v]).reshape(2, 2, -1)  # (rows counted flat)
            D.step(model, np.stack([q] * 4).reshape(2, 2, -1), rows, np.zeros((2, 2, 0)), dt)
        with pytest.raises(D.StepFailure, match=f'^{re.escape("rk4_step: " + message)}$'):
            D.rk4_step(model, q, v, dt, lambda _t, qq, vv: D.aba(model, qq, vv, none))


@pytest.mark.parametrize('floating_base', [True, False])
def test_a_ball_joint_turning_by_pi_or_more_in_a_step_is_refused(floating_base: bool) -> None:
    """A ball joint at 5 rad/s (its child's rate relative to its parent): a step of 0.6 s
    (3 rad) goes, one of 0.7 s (3.5 rad) is refused, naming the joint."""
    model = random_model(12, 3, joint_types=('spherical', 'revolute'), floating_base=floating_base)
    rng = np.random.default_rng(4)
    q = random_configuration(model, rng)
    k = model.joint_types.index('spherical')
    name = model.joint_names[k]
    v = np.zeros(model.nv)
    v[model.joint_v_slice(name)] = [0.0, 4.0, 3.0]
    tau = np.zeros(model.n)
    q1, _ = D.step(model, q, v, tau, 0.6)
    assert np.all(np.isfinite(q1))
    with pytest.raises(
        D.StepFailure,
        match=rf"^step: ball joint '{name}' would turn by 3\.5 rad in one step \(\|w\| = 5 rad/s",
    ):
        D.step(model, q, v, tau, 0.7)
    with pytest.raises(  # a batch: the row named
        D.StepFailure,
        match=rf"^step: ball joint '{name}' would turn by 3\.5 rad in one step "
        r'\(row 2: \|w\| = 5 rad/s',
    ):
        D.step(
            model, np.stack([q] * 3), np.stack([0.5 * v, 0.0 * v, v]), np.zeros((3, tau.size)), 0.7
        )


def test_a_closed_chain_step_turning_the_base_by_pi_or_more_is_refused() -> None:
    """The spatial loop on a floating base, tumbling: its step and its runs are refused from
    pi rad of the base per step, as D.step."""
    model = D.load_urdf(S.spatial_loop_urdf(), floating_base=True, gravity=(0.0, 0.0, 0.0))
    chain = M.ClosedChain(model, [S.spatial_loop_cut('ball')])
    v0 = np.zeros(model.nv)
    v0[3:6] = [0.4, -0.3, 2.0]
    q, v = chain.assemble(D.neutral(model), v0)
    rate = float(np.linalg.norm(v[3:6]))
    tau = np.zeros(model.n)
    q1, _ = chain.step(q, v, tau, 3.0 / rate)
    assert np.all(np.isfinite(q1))
    with pytest.raises(D.StepFailure, match=r'^ClosedChain\.step: the base would turn by 4 rad'):
        chain.step(q, v, tau, 4.0 / rate)
    with pytest.raises(D.StepFailure, match=r'^ClosedChain\.simulate: the base would turn by 4'):
        chain.simulate(q, v, tau, 8.0 / rate, 4.0 / rate)


def test_a_run_failing_within_names_its_step_and_the_rates() -> None:
    """A block tumbling at 50 rad/s about a generic axis, 200 steps of 0.05 s (2.5 rad each:
    RK4's error feeds the rate, to 1e21 rad/s within 11 steps): the failure read 'mass matrix
    is not positive definite; joint rates up to 0 rad/s or m/s at the start' -- a rigid
    body's mass matrix is not indefinite: it overflowed; the block has no joint, and the run
    did not say which step failed. Now it does, with the base's rates at that step's start and
    at the first, and the matrix named not finite."""
    model = block()
    axis = np.array([0.3, -0.5, 0.8]) / np.linalg.norm([0.3, -0.5, 0.8])
    q = np.r_[0.0, 0.0, 0.0, attitude()]
    v = np.r_[0.0, 0.0, 0.0, 50.0 * axis]
    none = np.zeros(0)

    def fails(steps: int) -> bool:
        try:
            D.step(model, q, v, none, 0.05, steps=steps)
        except D.StepFailure:
            return True
        return False

    with pytest.raises(D.StepFailure) as info:
        D.step(model, q, v, none, 0.05, steps=200)
    first = next(k for k in range(1, 201) if fails(k))  # the step that fails
    _, v_at = D.step(model, q, v, none, 0.05, steps=first - 1)
    text = str(info.value)
    assert text.startswith(
        f'step: the dynamics failed within the 200 steps from a finite state (in step {first}: '
        'mass matrix is not finite: a NaN or an overflow at a stage of the step '
    ), text
    assert 'positive definite' not in text and 'joint' not in text
    turning = f'{np.linalg.norm(v_at[3:6]):.3g}'
    assert f'; the base turning at {turning} rad/s and moving at 0 m/s at its start' in text
    assert text.endswith(
        '(the base turning at 50 rad/s and moving at 0 m/s at the first)): too large a step '
        '(dt = 0.05 s) or too fast a motion for it?'
    ), text
