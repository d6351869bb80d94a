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
    """An engine on the servicer; speed limits off unless asked (the tumbling states below
    turn the joints faster than the servicer's drives allow: the comparisons with D.step are
    about the stepping, the limits have their own tests)."""
    q0 = kwargs.pop('q0', D.neutral(MODEL))
    v0 = kwargs.pop('v0', np.zeros(MODEL.nv))
    kwargs.setdefault('dt_ns', MS)
    kwargs.setdefault('velocity_limits', False)
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
    # no external wrench: the momentum-preserving step (the engine's default)
    q, v = D.step(MODEL, q0, v0, tau, 1e-3, method=method, steps=steps, conserve_momentum=True)
    assert np.array_equal(snap.q, q) and np.array_equal(snap.v, v)
    assert snap.step == steps and snap.time_ns == steps * MS and snap.time == steps * 1e-3
    assert np.array_equal(snap.effort, tau)
    assert not snap.faulted and snap.fault == ''


def test_advance_in_pieces_equals_one_call() -> None:
    q0, v0 = tumbling_state(np.random.default_rng(2))
    tau = np.full(N, 5.0)
    # the plain step: pieces and one call run the same arithmetic but for the origin, moved to
    # the base CoM at the start of each call (D.step: the same to round-off; the preserving
    # step's correction is fused with the next call's first stage, see
    # test_momentum_preserving_steps_keep_the_momentum)
    one = engine(q0=q0, v0=v0, conserve_momentum=False)
    pieces = engine(q0=q0, v0=v0, conserve_momentum=False)
    one.command_efforts(tau)
    pieces.command_efforts(tau)
    a = one.advance(100)
    for _ in range(10):
        b = pieces.advance(10)
    assert b.step == a.step == 100
    scale = max(1.0, np.abs(a.v).max())
    assert np.abs(b.q - a.q).max() <= 1e-13 and np.abs(b.v - a.v).max() <= 1e-13 * scale


def test_snapshot_is_the_dynamics_api_and_immutable() -> None:
    q0, v0 = tumbling_state(np.random.default_rng(3))
    snap = engine(q0=q0, v0=v0).advance(7)
    p, quat, lin, ang = D.base_link_state(MODEL, snap.q, snap.v)
    h, com = D.momentum_and_com(MODEL, snap.q, snap.v)
    summary = D.state_summary(MODEL, snap.q, snap.v)  # what the engine calls: the same bits
    for field in ('base_position', 'base_orientation', 'base_linear_velocity', 'momentum'):
        assert np.array_equal(getattr(snap, field), getattr(summary, field)), field
    # and the separate functions, to round-off (one fused kernel against several)
    for got, ref in ((snap.base_position, p), (snap.base_orientation, quat)):
        np.testing.assert_allclose(got, ref, rtol=0, atol=1e-15)
    np.testing.assert_allclose(snap.base_linear_velocity, lin, rtol=0, atol=1e-15)
    np.testing.assert_allclose(snap.base_angular_velocity, ang, rtol=0, atol=1e-15)
    np.testing.assert_allclose(snap.momentum, h, rtol=0, atol=1e-13 * np.abs(h).max())
    np.testing.assert_allclose(snap.com, com, rtol=0, atol=1e-15)
    # [P; L_g] conserved without inputs (RK4 truncation only)
    h0, _ = D.momentum_and_com(MODEL, q0, v0)
    assert np.abs(h - h0).max() < 1e-9
    for field in (
        'q',
        'v',
        'effort',
        'base_position',
        'base_orientation',
        'base_linear_velocity',
        'base_angular_velocity',
        'momentum',
        'com',
    ):
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
    q, v = D.step(MODEL, sim.initial_state[0], v0, tau, 1e-3, steps=26, conserve_momentum=True)
    q, v = D.step(MODEL, q, v, np.zeros(N), 1e-3, steps=74, conserve_momentum=True)
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


def test_refused_commands_name_the_argument() -> None:
    """WrongSizeError and NonFiniteError said 'expected ...' naming no argument."""
    sim = engine()
    for call, error, text in (
        (lambda: sim.command_efforts(np.ones(N - 1)), WrongSizeError, f'^tau: expected {N} '),
        (lambda: sim.command_efforts(np.r_[np.nan, np.ones(N - 1)]), NonFiniteError, '^tau: '),
        (lambda: sim.command_joint_efforts([0, 1], [1.0]), WrongSizeError, '^efforts: expected'),
        (lambda: sim.command_joint_efforts([2], [np.inf]), NonFiniteError, '^efforts: expected'),
    ):
        with pytest.raises(error, match=text):
            call()


@pytest.mark.parametrize(
    'flag', ['paused', 'conserve_momentum', 'velocity_limits', 'position_limits']
)
def test_engine_flags_are_bools(flag: str) -> None:
    """conserve_momentum='false' and paused='no' were taken as True (truthy strings)."""
    for bad in ('false', 'no', 0, None):
        with pytest.raises(TypeError, match=f'^{flag}: expected a bool, got '):
            engine(**{flag: bad})
    sim = engine(**{flag: np.bool_(False)})
    assert sim.paused is False and (flag != 'conserve_momentum' or not sim.conserve_momentum)


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
    # finite but absurd: refused as the NaN is (a 1e300 N base wrench stopped the simulation
    # for good -- its velocity products overflow); the bound itself is taken
    from ffsim_ros.sim.commands import MAX_WRENCH, NonFiniteError

    for wrench in ([1e300, 0, 0, 0, 0, 0], [0, 0, 0, 0, 0, -2.0 * MAX_WRENCH]):
        with pytest.raises(
            NonFiniteError, match=r'base wrench: expected values of magnitude <= 1e\+07'
        ):
            sim.set_base_wrench(wrench)
    with pytest.raises(NonFiniteError, match='wrench on ee_link: expected values of magnitude'):
        sim.set_link_wrenches({'ee_link': [0, 0, 1e9, 0, 0, 0]})
    at_bound = engine(q0=q0, v0=v0)
    at_bound.set_base_wrench([MAX_WRENCH, 0, 0, 0, 0, 0])
    assert np.array_equal(at_bound.wrenches.base, [MAX_WRENCH, 0, 0, 0, 0, 0])
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
    q, v = D.step(
        MODEL, sim.initial_state[0], v0, np.zeros(N), 1e-3, steps=30, conserve_momentum=True
    )
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


def test_a_step_too_long_for_the_motion_is_named_so() -> None:
    """Joints at 900 rad/s under a 0.1 s step. RK4: the dynamics fail in an intermediate stage
    of the step; the fault gives D.step's own words once (from a finite state, the rates, the
    step). Euler returned a finite state with the wrist at 1.15e6 rad/s, which the engine kept
    (the next step failed): a runaway now, the fault on that first step, the state given
    kept."""
    v0 = np.zeros(MODEL.nv)
    v0[6:] = 900.0
    sim = engine(v0=v0, dt_ns=100_000_000)
    snap = sim.advance(50)
    assert snap.faulted and snap.step == 0 and np.array_equal(snap.v, v0)
    assert snap.fault.count('too fast a motion') == 1, snap.fault
    assert snap.fault.startswith('the step from t = 0.000000 s failed (step: the dynamics failed')
    assert 'dynamics failed within the step from a finite state' in snap.fault, snap.fault
    assert snap.fault.endswith('(dt = 0.1 s) or too fast a motion for it?)'), snap.fault
    assert 'joint rates up to 900 rad/s' in snap.fault
    sim = engine(v0=v0, dt_ns=100_000_000, integrator='euler')
    snap = sim.advance(50)
    assert snap.faulted and snap.step == 0 and np.array_equal(snap.v, v0)
    assert snap.fault.startswith('runaway step from t = 0.000000 s: the energy grew by '), snap
    assert "joint 'arm_joint_6' at 1.15e+06 rad/s" in snap.fault
    assert snap.fault.endswith(
        'the physics step (0.1 s) is too long for the motion (a higher physics_rate_hz); the '
        'state before it is kept'
    )


def test_fault_keeps_the_last_finite_state() -> None:
    """A huge base torque spins the robot up until a step runs away, mid-batch: its kinetic
    energy grows by orders of magnitude beyond what the wrench can give (that state was kept
    and published, no runaway check ran under a wrench, until a later step spun the base up
    to 1e17 rad/s and was refused as turning it by more than pi rad). That step is the fault:
    the engine keeps the state of the last good step, never a NaN, and refuses to go on until
    reset."""
    q0 = D.neutral(MODEL)
    v0 = np.zeros(MODEL.nv)
    sim = engine(q0=q0, v0=v0)
    wrench = [0.0, 0.0, 0.0, 1e6, 2e6, 0.5e6]
    sim.set_base_wrench(wrench)
    snap = sim.advance(1000)
    assert 0 < snap.step < 1000, 'the failure should come within the batch'
    assert snap.faulted and snap.fault.startswith(
        f'runaway step from t = {snap.step * 1e-3:.6f} s: the energy grew by '
    ), snap.fault
    assert ' J of it by the external wrenches (kinetic energy ' in snap.fault
    # the wrench the state diverged under is named
    assert snap.fault.endswith(
        '; under a base wrench of |f| = 0 N, |n| = 2.29e+06 N m (world frame): too large for '
        'the physics step?'
    ), snap.fault
    for field in dataclasses.fields(Snapshot):
        value = getattr(snap, field.name)
        if isinstance(value, np.ndarray):
            assert np.all(np.isfinite(value)), field.name
    # the kept state is exactly the dynamics' state after the good steps ...
    q, v = q0, v0  # (one step a time, as the engine went once the batch failed)
    for _ in range(snap.step):
        q, v = D.step(MODEL, q, v, np.zeros(N), 1e-3, base_wrench=wrench)
    assert np.array_equal(snap.q, q) and np.array_equal(snap.v, v)
    # ... and the next step is the one that ran away: finite, its energy a thousand times over
    q1, v1 = D.step(MODEL, q, v, np.zeros(N), 1e-3, base_wrench=wrench)
    assert np.all(np.isfinite(q1)) and np.all(np.isfinite(v1))
    energy = [D.state_summary(MODEL, *state).kinetic_energy for state in ((q, v), (q1, v1))]
    assert energy[1] > 1000.0 * energy[0]
    # stopped: no step, no resume; reset clears the fault and integration goes on
    assert sim.advance(10).step == snap.step
    with pytest.raises(EngineFault, match='runaway step'):
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
    sim = Engine(MODEL, q0, v0, dt_ns=h_ns, velocity_limits=False)  # tumbling: over them
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


# ------------------------------------------------------------------------- joint limits
def _chain_urdf(limits: list[str]) -> str:
    """A base and a chain of revolute joints about z, one per ``<limit .../>`` attribute text."""
    inertial = (
        '<inertial><mass value="2"/><origin xyz="0.2 0 0"/>'
        '<inertia ixx="0.1" iyy="0.1" izz="0.1" ixy="0" ixz="0" iyz="0"/></inertial>'
    )
    links = [f'<link name="base_link">{inertial.replace("2", "20", 1)}</link>']
    joints = []
    parent = 'base_link'
    for k, limit in enumerate(limits):
        links.append(f'<link name="l{k}">{inertial}</link>')
        joints.append(
            f'<joint name="j{k}" type="revolute"><parent link="{parent}"/><child link="l{k}"/>'
            f'<origin xyz="0.4 0 0"/><axis xyz="0 0 1"/><limit lower="-2" upper="2" {limit}/>'
            '</joint>'
        )
        parent = f'l{k}'
    return f'<robot name="chain">{"".join(links + joints)}</robot>'


def test_torque_speed_characteristic_by_hand() -> None:
    """Motoring effort capped by T_max (1 - |w|/w_max), braking up to T_max, nothing driven
    without a drive (effort 0) or a known speed limit (velocity 0)."""
    from ffsim_ros.sim import JointLimits

    model = D.load_urdf(
        _chain_urdf(
            [
                'effort="100" velocity="2"',
                'effort="0" velocity="2"',  # passive
                'effort="100" velocity="0"',  # speed limit unknown
                'effort="1e12" velocity="2"',  # an effort limit far away (URDF needs one)
            ]
        )
    )
    limits = JointLimits(model)
    assert limits.driven.tolist() == [True, False, False, True]
    tau = np.full(4, 80.0)
    assert limits.drive_efforts(tau, np.full(4, 1.0)).tolist() == [50.0, 80.0, 80.0, 80.0]
    assert limits.drive_efforts(-tau, np.full(4, -1.0)).tolist() == [-50.0, -80.0, -80.0, -80.0]
    assert limits.drive_efforts(-tau, np.full(4, 1.0)).tolist() == [-80.0] * 4  # braking
    assert limits.drive_efforts(tau, np.full(4, 2.0)).tolist() == [0.0, 80.0, 80.0, 0.0]
    assert limits.drive_efforts(tau, np.full(4, 3.0)).tolist() == [0.0, 80.0, 80.0, 0.0]
    assert limits.drive_efforts(tau, np.full(4, 0.5)).tolist() == [75.0, 80.0, 80.0, 80.0]
    threshold = limits.threshold(np.array([50.0, 50.0, 50.0, 50.0]))
    assert threshold.tolist()[:3] == [1.0, np.inf, np.inf]
    assert threshold[3] == pytest.approx(2.0, rel=1e-10)
    off = JointLimits(model, velocity=False)
    assert not off.active and off.drive_efforts(tau, np.full(4, 3.0)) is tau


def test_quiet_prefix_is_quiet_state_by_state() -> None:
    """``quiet_prefix`` of a trajectory is the count of leading states after the start that
    ``quiet`` (no margin) accepts one by one: speeds at a drive's threshold, positions at a
    stop and non-finite states end it; checked on random trajectories against the scalar
    test and on hand-made ones."""
    from ffsim_ros.sim import JointLimits

    model = D.load_urdf(_chain_urdf(['effort="100" velocity="2"', 'effort="0" velocity="2"'] * 2))
    rng = np.random.default_rng(11)
    for position in (False, True):
        limits = JointLimits(model, position=position)
        for _ in range(200):
            k = int(rng.integers(1, 12))
            Q = np.tile(D.neutral(model), (k + 1, 1))
            Q[:, 7:] = rng.uniform(-2.2, 2.2, size=(k + 1, model.n))  # stops at +-2
            V = rng.normal(scale=0.3, size=(k + 1, model.nv))
            V[:, 6:] = rng.uniform(-2.1, 2.1, size=(k + 1, model.n))
            if rng.random() < 0.2:
                (V if rng.random() < 0.5 else Q)[rng.integers(1, k + 1), 0] = np.nan
            tau = rng.uniform(-100.0, 100.0, size=model.n)
            expected = next(
                (j - 1 for j in range(1, k + 1) if not _finite_quiet(limits, tau, Q[j], V[j])),
                k,
            )
            assert limits.quiet_prefix(tau, Q, V) == expected
    limits = JointLimits(model, position=True)
    Q = np.tile(D.neutral(model), (5, 1))
    V = np.zeros((5, model.nv))
    tau = np.array([50.0, 0.0, 0.0, 0.0])  # joint 0's threshold 1 rad/s
    assert limits.quiet_prefix(tau, Q, V) == 4
    V[3, 6] = 1.0  # at the threshold: the drive caps the effort there
    assert limits.quiet_prefix(tau, Q, V) == 2
    V[3, 6] = 0.999
    V[2, 7] = 50.0  # a passive joint: no drive, no speed limit
    Q[4, 9] = 2.0  # at joint 2's stop
    assert limits.quiet_prefix(tau, Q, V) == 3
    assert JointLimits(model).quiet_prefix(tau, Q, V) == 4  # without position limits


def _finite_quiet(limits, tau: np.ndarray, q: np.ndarray, v: np.ndarray) -> bool:
    return bool(np.isfinite(q).all() and np.isfinite(v).all() and limits.quiet(tau, q, v))


def _rest_state(model: D.Model, joint_rates: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    q = D.neutral(model)
    q[7:] = np.linspace(-0.6, 0.6, model.n)
    v = np.r_[D.base_velocity_from_momentum(model, q, joint_rates), joint_rates]
    return q, v


def test_drives_saturate_at_the_speed_limit() -> None:
    """Every joint of the servicer at its maximum effort for 2 s: without speed limits the
    wrist reaches thousands of rad/s (issue 14: 6 700); with them every joint ends at its
    limit (within 1 %: the characteristic leaves the joint where its last bit of torque
    balances the arm's coupling), never above it, with zero momentum kept to round-off (braking is
    internal) and a healthy watchdog."""
    q0, v0 = D.neutral(MODEL), np.zeros(MODEL.nv)
    free = engine(q0=q0, v0=v0, command_timeout_ns=10**10)
    free.command_efforts(MODEL.effort_limit)
    assert abs(free.advance(2000).v[-1]) > 1000.0  # the premise
    sim = Engine(MODEL, q0, v0, dt_ns=MS, command_timeout_ns=10**10)
    assert sim.limits.driven.all()
    sim.command_efforts(MODEL.effort_limit)
    worst = 0.0
    for _ in range(200):
        snap = sim.advance(10)
        worst = max(worst, float(np.max(np.abs(snap.v[6:]) / MODEL.velocity_limit)))
    ratio = np.abs(snap.v[6:]) / MODEL.velocity_limit
    assert worst <= 1.0 + 1e-9 and ratio.min() >= 0.99, ratio
    assert np.abs(snap.momentum).max() <= 1e-11
    # at the limit the drive has no torque left in the direction of motion: what it applies
    # (braking included) is a small fraction of its maximum
    assert np.all(np.abs(snap.effort) <= 0.02 * MODEL.effort_limit), snap.effort
    assert sim.health.checked and sim.health.ok, sim.health


def test_braking_impulse_is_internal_and_bounded() -> None:
    """Joints turning at twice their limit: given time enough (a 0.5 s step), the braking
    impulses bring every joint back within its limit (those braked at it exactly; the
    coupling slows the others further), within T_max dt each, without changing the momentum
    and taking kinetic energy away; in 1 ms five of the drives cannot stop the arm's inertia:
    they brake as hard as they can and their joints stay over their limit (in 1 us, all
    seven)."""
    from ffsim_ros.sim import JointLimits

    limits = JointLimits(MODEL)
    rates = 2.0 * MODEL.velocity_limit * np.array([1, -1, 1, -1, 1, -1, 1])
    q, v = _rest_state(MODEL, rates)
    v[:6] += [0.1, -0.2, 0.05, 0.02, -0.01, 0.03]  # some momentum to keep
    h0, e0 = D.momentum(MODEL, q, v), D.kinetic_energy(MODEL, q, v)
    braked, impulse = limits.brake(q, v, 0.5)
    assert np.all(np.abs(braked[6:]) <= MODEL.velocity_limit * (1 + 1e-9)), braked[6:]
    at_limit = np.abs(np.abs(braked[6:]) - MODEL.velocity_limit) <= 1e-12
    assert at_limit.sum() >= 3 and np.all(impulse[~at_limit] == 0.0), (braked[6:], impulse)
    assert np.abs(D.momentum(MODEL, q, braked) - h0).max() <= 1e-12 * np.abs(h0).max()
    assert D.kinetic_energy(MODEL, q, braked) < e0
    assert np.all(np.abs(impulse) <= MODEL.effort_limit * 0.5)
    for dt, spent in ((1e-3, 5), (1e-6, 7)):
        slower, impulse = limits.brake(q, v, dt)
        at_bound = np.isclose(np.abs(impulse), MODEL.effort_limit * dt, rtol=1e-12, atol=0)
        over = np.abs(slower[6:]) > MODEL.velocity_limit * (1 + 1e-9)
        assert at_bound.sum() == spent and np.array_equal(over, at_bound), (impulse, slower)
        assert np.abs(D.momentum(MODEL, q, slower) - h0).max() <= 1e-12 * np.abs(h0).max()
        assert D.kinetic_energy(MODEL, q, slower) < e0
    # nothing over: nothing happens
    same, none = limits.brake(q, braked, 1e-3)
    assert same is braked and not none.any()


def test_braking_active_set_settles_on_its_optimality_conditions() -> None:
    """The braking impulses' active set on random coupled drives (k = 2..60 joints, W = the
    joint block of H^-1 of random chains' mass matrices or random SPD matrices, small bounds
    so that many drives saturate): it settles -- no coordinate-descent fallback -- and the
    result meets the optimality conditions of ``min 1/2 l W l + l w + sum w_max |l|``, ``|l|
    <= cap`` (a convex problem: they are sufficient). A probe's 120-joint chain cycled: a
    held joint needing the wrong sign and more than its bound was sent to its bound."""
    from ffsim_ros.sim.limits import braking_active_set

    rng = np.random.default_rng(11)
    for trial in range(400):
        k = int(rng.integers(2, 61))
        B = rng.normal(size=(k, k)) * np.exp(rng.normal(size=k))
        W = B @ B.T + 1e-3 * np.eye(k)
        w_max = rng.uniform(0.5, 3.0, k)
        w = rng.choice([-1.0, 1.0], k) * w_max * rng.uniform(0.2, 1.5, k)
        cap = rng.uniform(0.01, 1.0, k) * np.abs(w).max() / np.abs(W).max()
        lam, settled = braking_active_set(W, w, w_max, cap)
        assert settled, (trial, k)
        after = w + W @ lam
        tol = 1e-9 * (1.0 + np.abs(after).max())
        assert np.all(np.abs(lam) <= cap * (1 + 1e-12)), trial
        free = lam == 0.0
        at_bound = np.abs(np.abs(lam) - cap) <= 1e-12 * cap
        inner = ~free & ~at_bound
        assert np.all(np.abs(after[free]) <= w_max[free] + tol), trial
        # braked inside its bound: ends at its limit, the impulse opposing the motion
        assert np.allclose(after[inner], -np.sign(lam[inner]) * w_max[inner], atol=tol), trial
        # braked as hard as the drive can: still at or over its limit, slower
        assert np.all(-np.sign(lam[at_bound]) * after[at_bound] >= w_max[at_bound] - tol)


def test_steps_are_batched_only_away_from_the_limits() -> None:
    """Far from every limit the engine integrates a batch in one call (exactly D.step's
    state); a command that would carry a joint over its limit within the batch is stepped
    one step at a time and the limit holds."""
    q0, v0 = _rest_state(MODEL, np.zeros(N))
    sim = Engine(MODEL, q0, v0, dt_ns=MS)
    tau = np.full(N, 0.01)
    sim.command_efforts(tau)
    snap = sim.advance(10)
    q, v = D.step(MODEL, sim.initial_state[0], v0, tau, 1e-3, steps=10, conserve_momentum=True)
    assert np.array_equal(snap.q, q) and np.array_equal(snap.v, v)
    # near the limit: joint 7 at 99 % of its limit, pushed on at full effort
    rates = np.zeros(N)
    rates[-1] = 0.99 * MODEL.velocity_limit[-1]
    q0, v0 = _rest_state(MODEL, rates)
    sim = Engine(MODEL, q0, v0, dt_ns=MS)
    sim.command_efforts(MODEL.effort_limit * np.r_[np.zeros(N - 1), 1.0])
    snap = sim.advance(10)
    plain = D.step(MODEL, q0, v0, sim.last_command[0], 1e-3, steps=10, conserve_momentum=True)
    assert abs(plain[1][-1]) > 10 * MODEL.velocity_limit[-1]  # what the batch would give
    assert abs(snap.v[-1]) <= MODEL.velocity_limit[-1] * (1 + 1e-9)


def test_position_limits_are_hard_stops() -> None:
    """A joint driven into its upper limit (2 rad) at its speed limit and pushed on at 50 N m:
    with position limits it stops within 1 mrad of the limit and stays there, the momentum
    kept (the stop is a joint torque); without them it passes the limit."""
    rates = np.zeros(N)
    rates[1] = MODEL.velocity_limit[1]
    q0, v0 = _rest_state(MODEL, rates)
    q0[8] = 1.95  # arm_joint_2, limits [-2, 2]
    v0[:6] = D.base_velocity_from_momentum(MODEL, q0, rates)
    tau = np.zeros(N)
    tau[1] = 50.0
    passing = Engine(MODEL, q0, v0, dt_ns=MS, command_timeout_ns=10**10)
    passing.command_efforts(tau)
    assert passing.advance(1000).q[8] > 2.1
    sim = Engine(MODEL, q0, v0, dt_ns=MS, command_timeout_ns=10**10, position_limits=True)
    sim.command_efforts(tau)
    deepest = 0.0
    for _ in range(100):
        snap = sim.advance(10)
        deepest = max(deepest, snap.q[8] - 2.0)
    assert 0.0 < deepest <= 1e-3, deepest
    assert abs(snap.q[8] - 2.0) <= 1e-3 and abs(snap.v[7]) <= 1e-3
    assert np.abs(snap.momentum).max() <= 1e-11
    assert sim.health.ok, sim.health


# ----------------------------------------------------------------------------- watchdog
def test_momentum_preserving_steps_keep_the_momentum() -> None:
    """The tumbling servicer under efforts, 2 s at 1 ms: the preserving step (the default)
    keeps the momentum to round-off; the plain RK4 step drifts by its truncation error."""
    q0, v0 = tumbling_state(np.random.default_rng(4))
    drift = {}
    for conserve in (True, False):
        sim = engine(q0=q0, v0=v0, conserve_momentum=conserve, command_timeout_ns=10**10)
        h0 = D.momentum(MODEL, *sim.initial_state)
        sim.command_efforts(np.linspace(-20.0, 20.0, N))
        snap = sim.advance(2000)
        drift[conserve] = np.abs(D.momentum(MODEL, snap.q, snap.v) - h0).max() / np.abs(h0).max()
    assert drift[True] <= 1e-12 and drift[False] > 100 * drift[True], drift


def test_watchdog_sees_integration_error() -> None:
    """Issue 14's silent failure: every joint of the servicer at its maximum effort without
    speed limits (the wrist reaches thousands of rad/s; RK4 at 1 ms cannot follow). The plain
    step loses momentum -- the watchdog says so with the figures; the momentum-preserving
    step keeps it, and the energy check sees the error instead; the drives (the default) keep
    the motion where the step follows it: no warning."""
    found = {}
    for name, options in (
        ('plain', {'conserve_momentum': False, 'velocity_limits': False}),
        ('preserving', {'velocity_limits': False}),
        ('drives', {}),
    ):
        sim = Engine(MODEL, D.neutral(MODEL), np.zeros(MODEL.nv), dt_ns=MS, **options)
        sim.command_efforts(MODEL.effort_limit)
        warnings = set()
        # 1.5 s: the wrist at 4000 rad/s; later the run diverges outright (energy 1e10-1e86 J
        # at 2 s, which round-off decides), where no step keeps anything
        for _ in range(150):
            sim.command_efforts(MODEL.effort_limit)
            sim.advance(10)
            warnings |= {w.split()[0] for w in sim.health.warnings}
        found[name] = (warnings, sim.health)
    assert found['plain'][0] >= {'momentum'}, found['plain']
    assert 'kg m/s' in found['plain'][1].warnings[0] or found['plain'][1].momentum_drift > 1e-9
    assert found['preserving'][0] == {'energy'}, found['preserving']
    assert found['preserving'][1].momentum_drift <= 1e-12
    assert found['drives'][0] == set() and found['drives'][1].checked


def test_watchdog_catches_a_force_that_is_not_internal(monkeypatch) -> None:
    """With the momentum-preserving step the momentum check watches the model and inputs: a
    limit model that pushed the base (a bug: an external force) is reported with its figures;
    one that pushed a joint forward (internal, but a source of energy) is reported by the
    energy check."""
    rates = np.zeros(N)
    rates[-1] = MODEL.velocity_limit[-1]  # at its limit: stepped one at a time, brake called
    q0, v0 = _rest_state(MODEL, rates)
    for bug, expected in (('push the base', 'momentum'), ('push the joint', 'energy')):
        sim = Engine(MODEL, q0, v0, dt_ns=MS)
        sim.advance(10)
        assert sim.health.ok and sim.health.checked
        brake = sim.limits.brake
        kicks = []  # the linear momentum each buggy call added (world frame)

        def buggy(q, v, dt, brake=brake, bug=bug, kicks=kicks):
            braked, impulse = brake(q, v, dt)
            v = braked.copy()
            if bug == 'push the base':
                v[0] += 1e-6  # a base velocity change: not a joint torque
            else:  # a joint impulse in the direction of motion: internal, energy from nowhere
                e = np.zeros(MODEL.nv)
                e[-1] = 1e-3
                v += np.linalg.solve(D.mass_matrix(MODEL, q), e)
            kicks.append(D.momentum(MODEL, q, v)[:3] - D.momentum(MODEL, q, braked)[:3])
            return v, impulse

        monkeypatch.setattr(sim.limits, 'brake', buggy)
        sim.advance(10)
        kinds = {w.split()[0]: w for w in sim.health.warnings}
        if expected == 'momentum':  # (the push adds a little energy too)
            assert 'kg m/s' in kinds['momentum']
            # one push a step, each m * 1e-6 along the base's x axis; nothing else moves P
            assert len(kicks) == 10
            assert [np.linalg.norm(k) for k in kicks] == pytest.approx(
                [1e-6 * MODEL.total_mass] * 10, rel=1e-9
            )
            drift = np.linalg.norm(np.sum(kicks, axis=0))
            assert sim.health.linear_drift == pytest.approx(drift, rel=1e-9)
        else:
            assert set(kinds) == {'energy'} and ' J ' in kinds['energy']
            assert sim.health.momentum_drift <= 1e-12


def test_watchdog_follows_gravity_and_pauses_under_a_wrench() -> None:
    """Under gravity the momentum changes by the weight's impulse, which the references
    follow (no warning over 1 s of efforts); under a base wrench the checks do not run, and
    they resume from the state reached once it is removed."""
    heavy = D.with_gravity(MODEL, [0.0, 0.0, -9.81])
    q0, v0 = tumbling_state(np.random.default_rng(9))
    sim = Engine(heavy, q0, v0, dt_ns=MS, velocity_limits=False, command_timeout_ns=10**10)
    h0 = D.momentum(heavy, *sim.initial_state)
    sim.command_efforts(np.linspace(-10.0, 10.0, N))
    for _ in range(100):
        snap = sim.advance(10)
        assert sim.health.ok, sim.health.warnings
    P = D.momentum(heavy, snap.q, snap.v)[:3]
    assert np.abs(P - h0[:3] - heavy.total_mass * np.array([0, 0, -9.81])).max() <= 1e-9
    assert sim.health.momentum_drift <= 1e-12
    sim.set_base_wrench([100.0, 0.0, 0.0, 0.0, 5.0, 0.0])
    sim.advance(10)
    assert not sim.health.checked
    sim.set_base_wrench([0.0] * 6)  # an all-zero wrench is no wrench
    sim.advance(10)
    assert sim.health.checked and sim.health.ok
    sim.advance(10)
    assert sim.health.checked and sim.health.ok and sim.health.momentum_drift <= 1e-12


def test_watchdog_ignores_round_off_of_a_heavy_robot_at_rest() -> None:
    """The 752 kg servicer at rest: a momentum change of 5e-11 kg m/s (its round-off; the
    relative drift against a near-zero scale is large) is not a warning; 1e-6 is."""
    from ffsim_ros.sim.watchdog import Watchdog

    q, v = D.neutral(MODEL), np.zeros(MODEL.nv)
    h, com = D.momentum_and_com(MODEL, q, v)
    for change, warns in ((5e-11, False), (1e-6, True)):
        dog = Watchdog(MODEL)
        dog.anchor(q, v, h, com, 0.0)
        moved = h.copy()
        moved[0] += change
        health = dog.observe(
            q, v, moved, com, span_ns=10_000_000, work=0.0, checked=True, kinetic=0.0
        )
        assert health.checked and health.momentum_drift > 1e-9  # relative: large either way
        assert bool(health.warnings) is warns, health.warnings


def state_at_the_origin() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A moving state of the servicer with its base CoM at the world origin, and efforts."""
    rng = np.random.default_rng(0)
    q = D.neutral(MODEL)
    q[3:7] = rng.normal(size=4)
    q[3:7] /= np.linalg.norm(q[3:7])
    q[7:] = rng.uniform(-1.0, 1.0, MODEL.n)
    return q, rng.normal(size=MODEL.nv) * 0.2, rng.normal(size=MODEL.n) * 5.0


def test_watchdog_warns_when_the_robot_is_far_from_the_world_origin() -> None:
    """The dynamics are taken about the world origin and lose precision with the square of
    the distance (the figures of docs/dynamics.md measured again here): beyond 1 km the
    watchdog says so, at 900 m not."""
    from ffsim_ros.sim.watchdog import FAR_FROM_ORIGIN, Watchdog

    q, v, tau = state_at_the_origin()
    a0 = D.aba(MODEL, q, v, tau)
    errors = {}
    for distance in (10.0, 1e3, 1e4):
        far = q.copy()
        far[:3] += distance * np.array([0.6, 0.8, 0.0])
        errors[distance] = np.linalg.norm(D.aba(MODEL, far, v, tau) - a0) / np.linalg.norm(a0)
    assert errors[10.0] < 1e-11 and 1e-9 < errors[1e3] < 1e-6 and errors[1e4] > 1e-7, errors
    for distance, warns in ((0.9 * FAR_FROM_ORIGIN, False), (1.2 * FAR_FROM_ORIGIN, True)):
        far = q.copy()
        far[:3] += distance * np.array([0.6, 0.8, 0.0])
        h, com = D.momentum_and_com(MODEL, far, np.zeros(MODEL.nv))
        dog = Watchdog(MODEL)
        dog.anchor(far, np.zeros(MODEL.nv), h, com, 0.0)
        health = dog.observe(
            far, np.zeros(MODEL.nv), h, com, span_ns=10_000_000, work=0.0, checked=True
        )
        far_warnings = [w for w in health.warnings if 'from the world origin' in w]
        assert bool(far_warnings) is warns, health.warnings


@pytest.mark.parametrize('conserve', [False, True])
def test_a_step_far_from_the_world_origin_is_the_step_at_it(conserve: bool) -> None:
    """``D.step`` integrates about the base CoM: 1000 steps at 1 km, 100 km and 7000 km from
    the origin give the joints, attitude and velocities of the run at the origin to the bit
    and the positions to the spacing of doubles there (the kernels about O were 4e-8 / 2.5e-4
    / order-1 off in the accelerations); batched rows too; the engine's published state
    (``state_summary``) as well."""
    q, v, tau = state_at_the_origin()
    q0, v0 = D.step(MODEL, q, v, tau, 1e-3, steps=1000, conserve_momentum=conserve)
    s0 = D.state_summary(MODEL, q0, v0)
    for distance in (1e3, 1e5, 7e6):
        shift = distance * np.array([0.6, 0.8, 0.0])
        far = q.copy()
        far[:3] += shift
        q1, v1 = D.step(MODEL, far, v, tau, 1e-3, steps=1000, conserve_momentum=conserve)
        np.testing.assert_array_equal(q1[3:], q0[3:])
        np.testing.assert_array_equal(v1, v0)
        spacing = np.spacing(distance)
        np.testing.assert_allclose(q1[:3] - shift, q0[:3], rtol=0, atol=2 * spacing)
        s1 = D.state_summary(MODEL, q1, v1)
        np.testing.assert_allclose(s1.com - shift, s0.com, rtol=0, atol=4 * spacing)
        np.testing.assert_allclose(s1.momentum, s0.momentum, rtol=0, atol=1e-12)
        assert abs(s1.kinetic_energy - s0.kinetic_energy) <= 1e-12 * s0.kinetic_energy
    rows = np.stack([q, far])
    Q, V = D.step(MODEL, rows, np.stack([v, v]), np.stack([tau, tau]), 1e-3, steps=10)
    qa, va = D.step(MODEL, q, v, tau, 1e-3, steps=10)
    np.testing.assert_array_equal(V[1], va)
    np.testing.assert_array_equal(Q[1, 3:], qa[3:])


# ------------------------------------------------------------- argument types (refused whole)
def test_counts_and_durations_must_be_integers() -> None:
    """A step count or a duration in ns is never rounded: a float (even a whole one), a
    numeric string, a bool, an infinity or a NaN is refused naming the argument, and nothing
    changes; Python and NumPy ints are taken."""
    sim = engine(command_timeout_ns=25 * MS)
    for bad in (2.7, 2.0, '3', True, float('inf'), float('nan'), None):
        with pytest.raises(TypeError, match=r'^n: expected an integer >= 1 \(steps\), got'):
            sim.advance(bad)
        with pytest.raises(TypeError, match='^command_timeout_ns: expected an integer >= 1'):
            sim.command_timeout_ns = bad
    assert sim.step == 0 and sim.command_timeout_ns == 25 * MS  # nothing changed
    with pytest.raises(ValueError, match='^n: expected an integer >= 1'):
        sim.advance(np.int64(0))
    with pytest.raises(ValueError, match='^command_timeout_ns: expected an integer >= 1'):
        sim.command_timeout_ns = -5
    assert sim.advance(np.int64(3)).step == 3
    sim.command_timeout_ns = np.int32(7 * MS)
    assert sim.command_timeout_ns == 7 * MS and type(sim.command_timeout_ns) is int
    q0, v0 = D.neutral(MODEL), np.zeros(MODEL.nv)
    for bad in (1.5, float(MS), True, float('inf')):
        with pytest.raises(TypeError, match='^dt_ns: expected an integer >= 1'):
            Engine(MODEL, q0, v0, dt_ns=bad)
        with pytest.raises(TypeError, match='^command_timeout_ns: expected an integer'):
            Engine(MODEL, q0, v0, dt_ns=MS, command_timeout_ns=bad)
    assert Engine(MODEL, q0, v0, dt_ns=np.int64(MS)).dt_ns == MS


def test_joint_indices_must_be_integer_positions() -> None:
    """Indices are positions in joint order: a float is not truncated, a boolean mask not read
    as positions 1 and 0, a numeric string not parsed; out of range (however large) or
    repeated is a ValueError; all name ``indices`` and change nothing."""
    sim = engine()
    sim.command_joint_efforts([1], [5.0])
    before = sim.last_command
    for bad in ([1.7], [True, False], ['2'], np.array([1.0]), np.array([True, False]), '2'):
        with pytest.raises(TypeError, match='^indices: expected integer joint positions'):
            sim.command_joint_efforts(bad, np.full(len(bad), 9.0))
    for bad in (None, 1.0, True):
        with pytest.raises(TypeError, match='^indices: expected integer joint positions'):
            sim.command_joint_efforts(bad, [9.0])
    for bad in ([2**70], [-1], [N], [3, 3], np.array([2**63 + 1], dtype=np.uint64)):
        with pytest.raises(ValueError, match=rf'^indices: expected distinct values in \[0, {N}\)'):
            sim.command_joint_efforts(bad, np.full(len(bad), 9.0))
    tau, at = sim.last_command
    assert np.array_equal(tau, before[0]) and at == before[1]  # nothing changed
    assert np.flatnonzero(tau).tolist() == [1]
    # integer arrays of any width, NumPy ints, a tuple, a single int: taken
    sim.command_joint_efforts(np.array([2, 3], dtype=np.uint8), [1.0, 2.0])
    sim.command_joint_efforts((np.int64(4),), [3.0])
    sim.command_joint_efforts(5, 4.0)
    assert sim.last_command[0][1:6].tolist() == [5.0, 1.0, 2.0, 3.0, 4.0]


def test_values_that_are_not_real_numbers_are_refused() -> None:
    """Complex numbers (their imaginary part silently dropped before), numeric strings,
    booleans and other objects are not numbers: a TypeError names the argument and nothing
    changes; ints, float32 and lists still work."""
    q0, v0 = tumbling_state(np.random.default_rng(30))
    sim = engine(q0=q0, v0=v0)
    sim.command_efforts(np.full(N, 2.0))
    sim.set_base_wrench([1.0, 0, 0, 0, 0, 0])
    sim.set_link_wrenches({'ee_link': np.ones(6)})
    q, v = sim.initial_state
    strings = [str(x) for x in v]
    calls = (
        (lambda: sim.set_state(q + 0j, v), '^q: expected real numbers'),
        (lambda: sim.set_state(q, strings), '^v: expected real numbers'),
        (lambda: sim.set_state(q, np.array([None] * v.size)), '^v: expected real numbers'),
        (lambda: sim.command_efforts(np.full(N, 1.0 + 1e-3j)), '^tau: expected real numbers'),
        (lambda: sim.command_efforts(['1'] * N), '^tau: expected real numbers'),
        (lambda: sim.command_efforts([True] * N), '^tau: expected real numbers'),
        (lambda: sim.command_joint_efforts([0], [1 + 1j]), '^efforts: expected real numbers'),
        (lambda: sim.command_joint_efforts([0], ['1']), '^efforts: expected real numbers'),
        (lambda: sim.set_base_wrench(np.ones(6) * 1j), '^base wrench: expected real numbers'),
        (lambda: sim.set_base_wrench(['1'] * 6), '^base wrench: expected real numbers'),
        (
            lambda: sim.set_link_wrenches({'ee_link': [b'1'] * 6}),
            '^wrench on ee_link: expected real numbers',
        ),
    )
    for call, text in calls:
        with pytest.raises(TypeError, match=text):
            call()
    assert sim.step == 0 and np.array_equal(sim.snapshot().q, q)  # nothing changed
    assert np.array_equal(sim.last_command[0], np.full(N, 2.0))
    assert sim.wrenches.base.tolist() == [1.0, 0, 0, 0, 0, 0]
    assert sim.wrenches.links['ee_link'].tolist() == [1.0] * 6
    # ints, float32, lists: still numbers
    sim.command_efforts(np.full(N, 3, dtype=np.float32))
    assert np.array_equal(sim.last_command[0], np.full(N, 3.0))
    sim.command_joint_efforts([0], [4])
    sim.set_base_wrench([0, 1, 0, 0, 0, 0])
    assert sim.last_command[0][0] == 4.0 and sim.wrenches.base.tolist() == [0, 1, 0, 0, 0, 0]
    jumped = sim.set_state(q.tolist(), np.zeros(MODEL.nv, dtype=int))
    assert jumped.step == 1 and not np.any(jumped.v)


def test_link_wrenches_need_a_mapping() -> None:
    sim = engine()
    sim.set_link_wrenches({'ee_link': np.ones(6)})
    for bad in (None, [np.ones(6)], np.ones(6)):
        with pytest.raises(TypeError, match=r'^wrenches: expected a mapping \{link name'):
            sim.set_link_wrenches(bad)
    assert set(sim.wrenches.links) == {'ee_link'}  # nothing changed
