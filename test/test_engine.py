"""The ROS-free simulation engine (ffsim_ros.sim): no DDS, the dynamics API as the reference."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import ffsim_ros.dynamics as D
from ffsim_ros.dynamics.lie import quat_multiply, quat_to_matrix
from ffsim_ros.resources import sample_robot
from ffsim_ros.sim import Engine, EngineFault, NonFiniteError, Snapshot, WrongSizeError

MODEL = D.load_urdf(sample_robot('ffsim_servicer_7dof'))
N = MODEL.n
MS = 1_000_000

#: A single rigid body, principal axes along its frame axes, CoM off the link origin.
RIGID_URDF = """<robot name="block">
  <link name="base_link">
    <inertial>
      <origin xyz="0.1 -0.05 0.2"/>
      <mass value="50.0"/>
      <inertia ixx="4.0" iyy="6.0" izz="9.0" ixy="0" ixz="0" iyz="0"/>
    </inertial>
  </link>
</robot>"""


def engine(**kwargs) -> Engine:
    q0 = kwargs.pop('q0', D.neutral(MODEL))
    v0 = kwargs.pop('v0', np.zeros(MODEL.nv))
    kwargs.setdefault('dt_ns', MS)
    return Engine(MODEL, q0, v0, **kwargs)


def tumbling_state(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    q = D.neutral(MODEL)
    quat = rng.normal(size=4)
    q[:3], q[3:7] = rng.normal(size=3), quat / np.linalg.norm(quat)
    q[7:] = rng.uniform(-0.8, 0.8, size=N)
    v = np.r_[0.1 * rng.normal(size=3), 0.3 * rng.normal(size=3), 0.2 * rng.normal(size=N)]
    return q, v


# ------------------------------------------------------------------------- stepping
@pytest.mark.parametrize('method', D.STEP_METHODS)
def test_advance_is_the_dynamics_step(method: str) -> None:
    """advance(n) under a held command gives D.step's state, for every integrator."""
    q0, v0 = tumbling_state(np.random.default_rng(1))
    sim = engine(q0=q0, v0=v0, integrator=method, command_timeout_ns=10_000 * MS)
    tau = np.linspace(-20.0, 20.0, N)
    sim.command_efforts(tau)
    steps = 40 if method in D.FIXED_STEP_METHODS else 3
    q0 = sim.initial_state[0]  # normalized: equal to q0 to rounding
    snap = sim.advance(steps)
    q, v = D.step(MODEL, q0, v0, tau, 1e-3, method=method, steps=steps)
    assert np.array_equal(snap.q, q) and np.array_equal(snap.v, v)
    assert snap.step == steps and snap.time_ns == steps * MS and snap.time == steps * 1e-3
    assert np.array_equal(snap.effort, tau)
    assert not snap.faulted and snap.fault == ''


def test_advance_in_pieces_equals_one_call() -> None:
    q0, v0 = tumbling_state(np.random.default_rng(2))
    tau = np.full(N, 5.0)
    one, pieces = engine(q0=q0, v0=v0), engine(q0=q0, v0=v0)
    one.command_efforts(tau)
    pieces.command_efforts(tau)
    a = one.advance(100)
    for _ in range(10):
        b = pieces.advance(10)
    assert b.step == a.step == 100
    assert np.abs(b.q - a.q).max() <= 1e-13 and np.abs(b.v - a.v).max() <= 1e-13


def test_snapshot_is_the_dynamics_api_and_immutable() -> None:
    q0, v0 = tumbling_state(np.random.default_rng(3))
    snap = engine(q0=q0, v0=v0).advance(7)
    p, quat, lin, ang = D.base_link_state(MODEL, snap.q, snap.v)
    h, com = D.momentum_and_com(MODEL, snap.q, snap.v)
    assert np.array_equal(snap.base_position, p) and np.array_equal(snap.base_orientation, quat)
    assert np.array_equal(snap.base_linear_velocity, lin)
    assert np.array_equal(snap.base_angular_velocity, ang)
    assert np.array_equal(snap.momentum, h) and np.array_equal(snap.com, com)
    # [P; L_g] conserved without inputs (RK4 truncation only)
    h0, _ = D.momentum_and_com(MODEL, q0, v0)
    assert np.abs(h - h0).max() < 1e-9
    for field in ('q', 'v', 'effort', 'base_position', 'momentum', 'com'):
        with pytest.raises(ValueError, match='read-only'):
            getattr(snap, field)[0] = 1.0
    with pytest.raises(dataclasses.FrozenInstanceError):
        snap.step = 3  # type: ignore[misc]


# ------------------------------------------------------------------------- commands
def test_command_timeout_splits_the_steps_exactly() -> None:
    """A command held 25 ms: steps starting at 0..25 ms use it, the later ones zero."""
    q0, v0 = tumbling_state(np.random.default_rng(4))
    sim = engine(q0=q0, v0=v0, command_timeout_ns=25 * MS)
    tau = np.linspace(10.0, -10.0, N)
    sim.command_efforts(tau)
    assert sim.last_command[1] == 0 and np.array_equal(sim.last_command[0], tau)
    snap = sim.advance(100)
    q, v = D.step(MODEL, sim.initial_state[0], v0, tau, 1e-3, steps=26)
    q, v = D.step(MODEL, q, v, np.zeros(N), 1e-3, steps=74)
    assert np.array_equal(snap.q, q) and np.array_equal(snap.v, v)
    assert not np.any(snap.effort)
    # a command given later is timed from when it is given
    sim.command_efforts(tau)
    assert sim.last_command[1] == 100 * MS
    assert np.array_equal(sim.advance(26).effort, tau)  # steps from 100..125 ms
    assert not np.any(sim.advance(1).effort)  # the step from 126 ms


def test_efforts_are_clipped_and_bad_commands_refused() -> None:
    sim = engine()
    tau = np.zeros(N)
    tau[0], tau[1], tau[2] = 50.0, 1e6, -1e6
    sim.command_efforts(tau)
    applied = sim.advance(1).effort
    limit = MODEL.effort_limit
    assert applied[0] == 50.0 and applied[1] == limit[1] and applied[2] == -limit[2]
    for bad, error, text in (
        (np.ones(N - 1), WrongSizeError, f'expected {N} values in joint order'),
        (np.r_[np.nan, np.ones(N - 1)], NonFiniteError, 'expected finite values'),
        (np.r_[np.inf, np.ones(N - 1)], NonFiniteError, 'expected finite values'),
    ):
        with pytest.raises(error, match=text):
            sim.command_efforts(bad)
    assert np.array_equal(sim.last_command[0], tau)  # the good command stays
    assert np.array_equal(sim.advance(1).effort, applied)
    sim.clear_efforts()
    assert not np.any(sim.advance(1).effort)


def test_link_wrenches_and_bad_wrenches() -> None:
    q0, v0 = tumbling_state(np.random.default_rng(5))
    sim = engine(q0=q0, v0=v0)
    w = np.array([1.0, -2.0, 3.0, 0.1, 0.2, -0.3])
    sim.set_link_wrenches({'ee_link': w})
    snap = sim.advance(20)
    q, v = D.step(
        MODEL, sim.initial_state[0], v0, np.zeros(N), 1e-3, link_wrenches={'ee_link': w}, steps=20
    )
    assert np.array_equal(snap.q, q) and np.array_equal(snap.v, v)
    with pytest.raises(ValueError, match="got 'no_such_link'"):
        sim.set_link_wrenches({'no_such_link': w})
    with pytest.raises(ValueError, match='expected 6 finite values'):
        sim.set_base_wrench([1.0, np.nan, 0, 0, 0, 0])
    with pytest.raises(ValueError, match='frame'):
        sim.set_base_wrench(w, 'ee_link')
    assert sim.wrenches.base is None and set(sim.wrenches.links) == {'ee_link'}
    sim.set_link_wrenches({})
    assert sim.wrenches.links is None


# ------------------------------------------------------------------- run control
def test_pause_reset_and_set_state() -> None:
    q0, v0 = tumbling_state(np.random.default_rng(6))
    sim = engine(q0=q0, v0=v0, command_timeout_ns=10_000 * MS)
    sim.command_efforts(np.full(N, 30.0))
    sim.set_base_wrench([1.0, 0, 0, 0, 0, 0.5], 'base')
    moved = sim.advance(50)
    sim.pause()
    paused = sim.advance(50)
    assert paused.paused and paused.step == 50 and np.array_equal(paused.q, moved.q)
    # reset: initial state, inputs cleared, one step later, still paused
    reset = sim.reset()
    assert reset.step == 51 and reset.paused
    assert np.array_equal(reset.q, sim.initial_state[0]) and np.array_equal(reset.v, v0)
    assert not np.any(reset.effort) and sim.last_command is None and sim.wrenches.base is None
    sim.resume()
    free = sim.advance(30)
    q, v = D.step(MODEL, sim.initial_state[0], v0, np.zeros(N), 1e-3, steps=30)
    assert free.step == 81 and np.array_equal(free.q, q) and np.array_equal(free.v, v)
    # set_state: a jump of one step, the quaternion normalized, inputs kept
    sim.command_efforts(np.full(N, -3.0))
    target_q, target_v = tumbling_state(np.random.default_rng(7))
    scaled = target_q.copy()
    scaled[3:7] *= 3.0
    jumped = sim.set_state(scaled, target_v)
    assert jumped.step == 82
    assert np.abs(jumped.q - target_q).max() <= 1e-15 and np.array_equal(jumped.v, target_v)
    assert np.array_equal(sim.advance(1).effort, np.full(N, -3.0))
    for bad_q, bad_v, text in (
        (np.r_[target_q, 0.0], target_v, 'q: expected'),
        (target_q, np.r_[target_v[:-1], np.nan], 'v: expected'),
        (np.r_[target_q[:3], 0, 0, 0, 0, target_q[7:]], target_v, 'base quaternion'),
    ):
        with pytest.raises(ValueError, match=text):
            sim.set_state(bad_q, bad_v)
    assert sim.step == 83  # refused jumps change nothing


def test_fault_keeps_the_last_finite_state() -> None:
    """A huge base torque spins the base up until the dynamics fail, mid-batch: the engine
    keeps the state of the last good step, never a NaN, and refuses to go on until reset."""
    q0 = D.neutral(MODEL)
    v0 = np.zeros(MODEL.nv)
    sim = engine(q0=q0, v0=v0)
    wrench = [0.0, 0.0, 0.0, 1e6, 2e6, 0.5e6]
    sim.set_base_wrench(wrench)
    snap = sim.advance(1000)
    assert snap.faulted and 'non-finite state' in snap.fault
    assert 0 < snap.step < 1000, 'the failure should come within the batch'
    assert f't = {snap.step * 1e-3:.6f} s' in snap.fault
    for field in dataclasses.fields(Snapshot):
        value = getattr(snap, field.name)
        if isinstance(value, np.ndarray):
            assert np.all(np.isfinite(value)), field.name
    # the kept state is exactly the dynamics' state after the good steps ...
    q, v = D.step(MODEL, q0, v0, np.zeros(N), 1e-3, base_wrench=wrench, steps=snap.step)
    assert np.array_equal(snap.q, q) and np.array_equal(snap.v, v)
    # ... and the next step is the one that fails
    try:
        q1, v1 = D.step(MODEL, q, v, np.zeros(N), 1e-3, base_wrench=wrench)
        assert not (np.all(np.isfinite(q1)) and np.all(np.isfinite(v1)))
    except ValueError:
        pass
    # stopped: no step, no resume; reset clears the fault and integration goes on
    assert sim.advance(10).step == snap.step
    with pytest.raises(EngineFault, match='non-finite state'):
        sim.resume()
    after = sim.reset()
    assert not after.faulted and after.step == snap.step + 1
    assert sim.advance(10).step == snap.step + 11


def test_bad_configuration_is_refused() -> None:
    q0, v0 = D.neutral(MODEL), np.zeros(MODEL.nv)
    with pytest.raises(ValueError, match='integrator'):
        Engine(MODEL, q0, v0, dt_ns=MS, integrator='leapfrog')
    with pytest.raises(ValueError, match='dt_ns'):
        Engine(MODEL, q0, v0, dt_ns=0)
    with pytest.raises(ValueError, match='command timeout'):
        Engine(MODEL, q0, v0, dt_ns=MS, command_timeout_ns=0)
    fixed = D.load_urdf(sample_robot('planar_2link'), floating_base=False)
    with pytest.raises(ValueError, match='floating-base'):
        Engine(fixed, np.zeros(fixed.nq), np.zeros(fixed.nv), dt_ns=MS)
    with pytest.raises(ValueError, match='n: expected'):
        engine().advance(0)


# ----------------------------------------------------------------- thruster-like wrench
def _rz(angle: float) -> np.ndarray:
    c, s = np.cos(angle), np.sin(angle)
    return np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])


@pytest.mark.parametrize('frame', ['base', 'world'])
def test_thruster_on_a_spinning_body_closed_form(frame: str) -> None:
    """A rigid body spinning at w about its principal z axis, a force f along its own x axis
    at its CoM: no torque about the CoM, so the spin stays steady, R(t) = Rz(w t) R0, and
    P(T) = P0 + int_0^T R(t) f dt = P0 + (f/w) [sin wT, 1 - cos wT, 0] in the body-frame case;
    P0 + T f in the world-frame case. Half a turn: the two differ by the whole impulse."""
    model = D.load_urdf(RIGID_URDF)
    assert model.n == 0
    w, f = 0.5, 10.0
    q0 = D.neutral(model)
    v0 = np.r_[0.3, -0.2, 0.1, 0.0, 0.0, w]
    sim = Engine(model, q0, v0, dt_ns=MS)
    sim.set_base_wrench([f, 0.0, 0.0, 0.0, 0.0, 0.0], frame)
    T_steps = int(round(np.pi / w / 1e-3))  # half a turn (to the ms)
    T = T_steps * 1e-3
    snap = sim.advance(T_steps)
    P0 = model.total_mass * v0[:3]
    if frame == 'base':
        expected = P0 + f / w * np.array([np.sin(w * T), 1.0 - np.cos(w * T), 0.0])
    else:
        expected = P0 + T * np.array([f, 0.0, 0.0])
    assert np.abs(snap.momentum[:3] - expected).max() <= 1e-9 * f * T
    # the premise: a steady spin (attitude and rate as the closed form says)
    assert np.abs(quat_to_matrix(snap.base_orientation) - _rz(w * T)).max() <= 1e-12
    assert np.abs(snap.momentum[3:] - np.array([0.0, 0.0, 9.0 * w])).max() <= 1e-12
    # the two cases are far apart: a wrench held in the world is not a thruster
    if frame == 'world':
        other = P0 + f / w * np.array([np.sin(w * T), 1.0 - np.cos(w * T), 0.0])
    else:
        other = P0 + T * np.array([f, 0.0, 0.0])
    assert np.linalg.norm(snap.momentum[:3] - other) > 0.5 * f * T


def test_thruster_momentum_rate_is_the_rotated_wrench() -> None:
    """On the tumbling servicer (arm moving), the momentum rate from central differences of
    snapshots 0.1 ms apart equals the body-frame wrench turned by the base attitude:
    dP/dt = R f, dL_g/dt = R n + (r0 - r_g) x R f, to 1e-9 of |f|, |n| -- while the base
    turns by more than a radian, so a wrench held in the world would miss by O(|f|)."""
    q0, v0 = tumbling_state(np.random.default_rng(8))
    h_ns = 100_000  # 0.1 ms
    sim = Engine(MODEL, q0, v0, dt_ns=h_ns)
    f, n = np.array([40.0, -25.0, 10.0]), np.array([5.0, 8.0, -6.0])
    sim.set_base_wrench(np.r_[f, n], 'base')
    quat_start = sim.snapshot().base_orientation
    worst_P = worst_L = turned = 0.0
    for _ in range(8):
        sim.advance(2999)
        before, at, after = sim.advance(1), sim.advance(1), sim.advance(1)
        h = 2 * h_ns * 1e-9
        R = quat_to_matrix(at.base_orientation)
        force, torque = R @ f, R @ n
        dP = (after.momentum[:3] - before.momentum[:3]) / h
        dL = (after.momentum[3:] - before.momentum[3:]) / h
        expected_L = torque + np.cross(at.q[:3] - at.com, force)
        worst_P = max(worst_P, np.abs(dP - force).max() / np.linalg.norm(f))
        worst_L = max(worst_L, np.abs(dL - expected_L).max() / np.linalg.norm(n))
        relative = quat_multiply(at.base_orientation, quat_start * [-1, -1, -1, 1])
        turned = max(turned, 2 * np.arccos(min(1.0, abs(relative[3]))))
    assert worst_P <= 1e-9 and worst_L <= 1e-9, (worst_P, worst_L)
    assert turned > 1.0  # the base really turned: R f is far from f
