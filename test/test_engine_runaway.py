"""Runaway steps (ffsim_ros.sim.runaway) and steps turning the base by pi or more: a physics
step too long for the motion is a fault on *that* step, the state before it kept.

References: the dynamics API stepped by hand (D.step, JointLimits.brake) for the state a step
reaches, and the exact motion of a torque-free body about a principal axis.
"""

from __future__ import annotations

import numpy as np
import pytest
from solver_guard import bound_solvers

import ffsim_ros.dynamics as D
from ffsim_ros.resources import sample_robot
from ffsim_ros.scene import Scene, Sphere, rigid_target
from ffsim_ros.sim import Engine, EngineFault, JointLimits, TargetWorld

MODEL = D.load_urdf(sample_robot('ffsim_servicer_7dof'))
RATED = np.asarray(MODEL.effort_limit, dtype=float)
W_MAX = np.asarray(MODEL.velocity_limit, dtype=float)

#: A single rigid body, principal axes along its frame axes.
RIGID_URDF = """<robot name="block">
  <link name="base_link">
    <inertial>
      <origin xyz="0.1 -0.05 0.2"/>
      <mass value="50.0"/>
      <inertia ixx="4.0" iyy="6.0" izz="9.0" ixy="0" ixz="0" iyz="0"/>
    </inertial>
  </link>
</robot>"""


#: A heavy base, a strong drive j1 (2000 N m, 2 rad/s) carrying a weak one j2 (0.5 N m,
#: 0.001 rad/s) with a 20 kg disc at its end (the regression probe's).
CARRIER_URDF = """<robot name="carrier">
  <link name="base_link"><inertial><mass value="500"/>
    <inertia ixx="50" iyy="50" izz="50" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <joint name="j1" type="revolute"><parent link="base_link"/><child link="l1"/>
    <origin xyz="0 0 0.5"/><axis xyz="0 0 1"/>
    <limit lower="-10" upper="10" effort="2000" velocity="2"/></joint>
  <link name="l1"><inertial><origin xyz="0.5 0 0"/><mass value="5"/>
    <inertia ixx="0.01" iyy="0.4" izz="0.4" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <joint name="j2" type="revolute"><parent link="l1"/><child link="l2"/>
    <origin xyz="1 0 0"/><axis xyz="0 0 1"/>
    <limit lower="-10" upper="10" effort="0.5" velocity="0.001"/></joint>
  <link name="l2"><inertial><mass value="20"/>
    <inertia ixx="1" iyy="1" izz="2" ixy="0" ixz="0" iyz="0"/></inertial></link>
</robot>"""


def by_hand(
    model: D.Model, q: np.ndarray, v: np.ndarray, tau: np.ndarray, dt: float, halves: int = 1
) -> tuple[np.ndarray, np.ndarray]:
    """The engine's step of the drives by hand: the characteristic held, the momentum-
    preserving step (as ``halves`` steps of ``dt / halves``), the braking over ``dt``."""
    limits = JointLimits(model)
    applied = limits.drive_efforts(tau, v[6:])
    q1, v1 = D.step(model, q, v, applied, dt / halves, steps=halves, conserve_momentum=True)
    return q1, limits.brake(q1, v1, dt)[0]


def start() -> tuple[np.ndarray, np.ndarray]:
    """The servicer at rest in a bent pose (the probe's)."""
    q = D.neutral(MODEL)
    q[7:] = [0.1, 0.8, -0.3, -1.2, 0.2, 0.9, 0.0]
    return q, np.zeros(MODEL.nv)


def held(dt_ns: int, tau: np.ndarray, **options: object) -> Engine:
    """An engine from :func:`start` with ``tau`` commanded and held for ever."""
    q, v = start()
    sim = Engine(MODEL, q, v, dt_ns=dt_ns, command_timeout_ns=10**15, **options)
    sim.command_efforts(tau)
    return sim


@pytest.mark.parametrize('count', [1, 5])
def test_a_drive_left_far_over_its_limit_faults_that_step(count: int) -> None:
    """Rated effort on every joint from rest at 10 Hz: the first step returned a finite state
    with a joint hundreds of times over its speed limit after its drive braked; the engine
    kept and published it (the next step: 1e10 times, then the dynamics failed). That step
    is now the fault (one step a call, or a batch): nothing is committed, the fault names the
    joint, its rate and a higher physics_rate_hz. Coarse steps sound for the motion are no
    runaways."""
    dt = 0.1
    sim = held(100_000_000, RATED)
    q0, v0 = sim.initial_state
    # the step by hand: the drives' characteristic, the momentum-preserving step, the braking
    limits = JointLimits(MODEL)
    tau = limits.drive_efforts(RATED, v0[6:])
    q1, v1 = D.step(MODEL, q0, v0, tau, dt, conserve_momentum=True)
    v1, _ = limits.brake(q1, v1, dt)
    ratio = np.abs(v1[6:]) / W_MAX
    j = int(np.argmax(ratio))
    assert ratio[j] > 100.0  # the premise: far over the limit after braking, finite
    snap = sim.advance(count)
    assert snap.faulted and snap.step == 0
    assert np.array_equal(snap.q, q0) and np.array_equal(snap.v, v0)
    name = MODEL.joint_names[j]
    assert snap.fault.startswith(
        f"runaway step from t = 0.000000 s: joint '{name}' at {v1[6 + j]:.3g} rad/s after its "
        f'drive braked, {ratio[j]:.3g} times its speed limit {W_MAX[j]:g} rad/s (from 0 rad/s '
        "at the step's start)"
    ), snap.fault
    # confirmed by the step taken as two half steps, nothing like it (the joint's speed then)
    _, halved = by_hand(MODEL, q0, v0, RATED, dt, halves=2)
    assert abs(halved[6 + j]) < 0.5 * abs(v1[6 + j])  # the premise: grossly apart
    assert f"at the step's start); {halved[6 + j]:.3g} rad/s when taken as two half" in snap.fault
    assert snap.fault.endswith('(a higher physics_rate_hz); the state before it is kept')
    assert sim.advance(3).step == 0  # stopped until reset
    with pytest.raises(EngineFault, match='runaway step'):
        sim.resume()
    assert not sim.reset().faulted
    # steps coarse but sound for the motion (20 Hz at rated effort, 5 Hz at a tenth of it: a
    # joint is left up to 15 times its limit after a step, the next steps settle): no fault,
    # every joint at its limit after 4 s
    for dt_ns, scale in ((50_000_000, 1.0), (200_000_000, 0.1)):
        sim = held(dt_ns, scale * RATED)
        snap = sim.advance(4_000_000_000 // dt_ns)
        assert not snap.faulted, snap.fault
        assert np.max(np.abs(snap.v[6:]) / W_MAX) <= 1.0 + 1e-9


def test_a_weak_drive_back_driven_from_rest_is_no_runaway() -> None:
    """A strong drive turning at rated effort from rest carries a weak one (0.001 rad/s) with a
    disc that stays still inertially: the weak joint is back-driven at the strong one's rate,
    its braking capped at T_max dt, and is left after a sound 1 ms step 107 times over its
    limit from rest -- which was faulted as a runaway, at 1 kHz and 10 kHz alike. The step
    taken as two half steps agrees with it: no fault, the step committed is the step by hand,
    and the motion is the one finer steps give. At 1 Hz the step is a runaway (its halves are
    nothing like it) and still faults, the state before it kept."""
    model = D.load_urdf(CARRIER_URDF)
    q0, v0 = D.neutral(model), np.zeros(model.nv)
    tau = np.array([2000.0, 0.0])
    limits = JointLimits(model)
    q1, v1 = by_hand(model, q0, v0, tau, 1e-3)
    assert limits.runaway(v0[6:], v1[6:]) == 1  # the premise: the speed test trips on j2
    assert abs(v1[7]) > 100.0 * 1e-3
    _, halved = by_hand(model, q0, v0, tau, 1e-3, halves=2)
    assert abs(halved[7] - v1[7]) < 1e-3 * abs(v1[7])  # ... and the halves agree
    ends = []
    for dt_ns in (1_000_000, 100_000):
        sim = Engine(model, q0, v0, dt_ns=dt_ns, command_timeout_ns=10**15)
        sim.command_efforts(tau)
        first = sim.advance(1)
        assert not first.faulted, first.fault
        if dt_ns == 1_000_000:
            assert np.array_equal(first.q, q1) and np.array_equal(first.v, v1)
        snap = sim.advance(500_000_000 // dt_ns - 1)
        assert not snap.faulted, snap.fault
        ends.append(snap.v[6:])
    assert np.allclose(ends[0], ends[1], rtol=1e-3)  # (1.9996, -1.327 rad/s at 0.5 s)
    # 1 Hz: the first step is a runaway, grossly apart from its halves
    q1, v1 = by_hand(model, q0, v0, tau, 1.0)
    _, halved = by_hand(model, q0, v0, tau, 1.0, halves=2)
    assert limits.runaway(v0[6:], v1[6:]) == 1
    assert abs(halved[7] - v1[7]) > 0.5 * max(abs(halved[7]), abs(v1[7]))
    sim = Engine(model, q0, v0, dt_ns=1_000_000_000, command_timeout_ns=10**15)
    sim.command_efforts(tau)
    snap = sim.advance(3)
    assert snap.faulted and snap.step == 0 and np.array_equal(snap.v, v0)
    assert snap.fault.startswith(
        f"runaway step from t = 0.000000 s: joint 'j2' at {v1[7]:.3g} rad/s after its drive braked"
    ), snap.fault
    assert f'; {halved[7]:.3g} rad/s when taken as two half steps' in snap.fault


@pytest.mark.parametrize('count', [1, 5])
def test_energy_gained_by_orders_of_magnitude_faults_that_step(count: int) -> None:
    """No speed limits, rated effort, 10 Hz: the first step is sound; the second returned a
    finite state with the wrist at 5e10 rad/s, kept and published (the third failed). The
    energy it gained, 1e21 J beyond a few MJ of work, is the fault on that step: the state
    after the first step is kept, exactly the dynamics' step. Far from the origin under
    gravity, the round-off of the potential energy is no gain."""
    sim = held(100_000_000, RATED, velocity_limits=False)
    q0, v0 = sim.initial_state
    q1, v1 = D.step(MODEL, q0, v0, RATED, 0.1, conserve_momentum=True)
    snap = sim.advance(count)
    if count == 1:
        assert not snap.faulted
        snap = sim.advance(1)
    assert snap.faulted and snap.step == 1, snap.fault
    assert np.array_equal(snap.q, q1) and np.array_equal(snap.v, v1)
    assert snap.fault.startswith('runaway step from t = 0.100000 s: the energy grew by ')
    q2, v2 = D.step(MODEL, q1, v1, RATED, 0.1, conserve_momentum=True)
    assert np.all(np.isfinite(v2)) and np.abs(v2).max() > 1e9  # the premise: finite, wild
    assert snap.fault.endswith('(a higher physics_rate_hz); the state before it is kept')
    # at rest 7 000 km from the origin under gravity, falling: the potential energy about the
    # origin (1e10 J) changes by round-off far larger than the kinetic energy of the first
    # steps; the check takes gravity's work from the CoM's displacement: no fault
    model = D.load_urdf(sample_robot('ffsim_servicer_7dof'), gravity=(0.0, 0.0, -9.81))
    q = D.neutral(model)
    q[:3] = [7.0e6, 1.0e3, -2.0e3]
    sim = Engine(model, q, np.zeros(model.nv), dt_ns=1_000_000)
    for _ in range(20):
        assert not sim.advance(1).faulted
    snap = sim.advance(200)
    assert not snap.faulted, snap.fault
    assert snap.v[2] == pytest.approx(-9.81 * 0.22, rel=1e-9)


@pytest.mark.parametrize('dt_ns', [100_000_000, 10_000_000])
def test_a_step_turning_the_base_a_full_turn_faults(dt_ns: int) -> None:
    """A block spinning about a principal axis at one turn per physics step: the step came
    back 0.7 to 2.6 rad off in attitude and 9-20 % off in rate, silently (the chart of the
    step is singular at a full turn). Refused now, from pi rad per step: a fault on that
    step, the state kept, the rotation and a shorter step named."""
    model = D.load_urdf(RIGID_URDF)
    dt = dt_ns * 1e-9
    w = 2.0 * np.pi / dt
    v = np.array([0.0, 0.0, 0.0, 0.0, 0.0, w])
    sim = Engine(model, D.neutral(model), v, dt_ns=dt_ns)
    snap = sim.advance(1)
    assert snap.faulted and snap.step == 0 and np.array_equal(snap.v, v)
    assert snap.fault.startswith(
        f'the step from t = 0.000000 s failed (step: the base would turn by 6.28 rad in one '
        f'step (|w| = {w:.4g} rad/s at its start, dt = {dt:g} s)'
    ), snap.fault
    assert f'a smaller dt, below {dt / 2:.3g} s' in snap.fault
    # below pi rad per step: exact about the principal axis
    sim = Engine(model, D.neutral(model), 0.45 * v, dt_ns=dt_ns)
    snap = sim.advance(1)
    assert not snap.faulted
    half = 0.45 * np.pi  # half the angle turned, 0.9 pi
    assert np.allclose(snap.q[3:7], [0.0, 0.0, np.sin(half), np.cos(half)], atol=1e-14)


@pytest.mark.parametrize('method', D.SCIPY_METHODS)
@pytest.mark.parametrize('velocity_limits', [True, False])
def test_a_solver_giving_up_on_a_step_faults_it(
    method: str, velocity_limits: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The engine on a solve_ivp integrator, joints set at 1e12 rad/s: the physics thread
    never came back from the first step (the solver's steps of 1e-15 s). The solver's bounded
    failure is the fault of that step, the state before it kept."""
    bound_solvers(monkeypatch)
    q, v = start()
    v[6:] = 1e12
    sim = Engine(MODEL, q, v, dt_ns=1_000_000, integrator=method, velocity_limits=velocity_limits)
    snap = sim.advance(5)
    assert snap.faulted and snap.step == 0
    assert np.array_equal(snap.q, q) and np.array_equal(snap.v, v)
    assert snap.fault.startswith(
        f'the step from t = 0.000000 s failed (step: solve_ivp({method}) stopped after the 1010 '
        'steps it may take within a step of 0.001 s'
    ), snap.fault
    assert 'or too fast a motion for it, or, at modest rates, a stiff system' in snap.fault
    explicit = method in ('RK23', 'RK45', 'DOP853')
    assert snap.fault.endswith('(stiff friction split off))' if explicit else 'method)')


@pytest.mark.parametrize('count', [1, 5])
def test_a_runaway_step_with_targets_in_the_scene_faults_it(count: int) -> None:
    """With a target in the scene (100 m away: no contact) the scene steps the robot: rated
    effort, no speed limits, 10 Hz. The second step returned the wrist at 5.6e10 rad/s,
    finite, kept and published (the scene's steps were not checked for a runaway; the third
    failed). The energy of robot and target it gained is the fault on that step (a batch:
    again one step at a time), the state after the first step kept, the scene rolled back to
    it: exactly the dynamics' step, the target drifted one step."""
    q0, v0 = start()
    scene = Scene(MODEL, gripper=None, dt=0.1, q=q0, v=v0)
    far = rigid_target('far', mass=25.0, shape=Sphere(0.12), position=(100.0, 0.0, 0.0))
    sim = Engine(
        MODEL,
        q0,
        v0,
        dt_ns=100_000_000,
        command_timeout_ns=10**15,
        velocity_limits=False,
        world=TargetWorld(scene, [far]),
    )
    sim.command_efforts(RATED)
    q1, v1 = D.step(MODEL, q0, v0, RATED, 0.1, conserve_momentum=True)
    q2, v2 = D.step(MODEL, q1, v1, RATED, 0.1, conserve_momentum=True)
    assert np.all(np.isfinite(v2)) and np.abs(v2).max() > 1e9  # the premise: finite, wild
    snap = sim.advance(count)
    if count == 1:
        assert not snap.faulted
        snap = sim.advance(1)
    assert snap.faulted and snap.step == 1, snap.fault
    assert np.array_equal(snap.q, q1) and np.array_equal(snap.v, v1)
    assert np.array_equal(snap.world.targets['far'].com, [100.0, 0.0, 0.0])  # (at rest)
    assert scene.step_count == 1
    assert snap.fault.startswith(
        'runaway step from t = 0.100000 s: the energy of robot and targets grew by '
    ), snap.fault
    assert snap.fault.endswith('(a higher physics_rate_hz); the state before it is kept')
    assert sim.advance(3).step == 1  # stopped until reset


@pytest.mark.parametrize(('velocity_limits', 'count'), [(True, 10), (True, 1), (False, 10)])
def test_a_runaway_under_a_base_wrench_faults_that_step(velocity_limits: bool, count: int) -> None:
    """3e5 N and 3e5 N m held on the servicer's base at 1 kHz from rest (the probe's; the
    bound of a wrench is 1e7): after 0.3 s a step returned a finite state far beyond anything
    the wrench can give -- the base at 1e18 to 1e20 rad/s --, which was kept and published (no
    runaway check ran under a wrench) until the next step faulted. That step is now the fault,
    its energy checked against the most the wrench can give: the state before it kept, within
    what the wrench gives from rest, and the steps before it were sound (no fault)."""
    q0, v0 = D.neutral(MODEL), np.zeros(MODEL.nv)
    sim = Engine(MODEL, q0, v0, dt_ns=1_000_000, velocity_limits=velocity_limits)
    sim.set_base_wrench([3e5, 0.0, 0.0, 3e5, 0.0, 0.0])
    for _ in range(600 // count):
        snap = sim.advance(count)
        if snap.faulted:
            break
    assert snap.faulted and snap.step > 200, snap.fault
    assert snap.fault.startswith(f'runaway step from t = {snap.time:.6f} s: '), snap.fault
    assert snap.fault.endswith(
        '; the state before it is kept; under a base wrench of |f| = 3e+05 N, |n| = 3e+05 N m '
        '(world frame): too large for the physics step?'
    ), snap.fault
    # the state kept is one the wrench can give: its power on the base body is at most
    # sqrt(2 T) sqrt(|f|^2 / m0 + |n|^2 / I0) (T >= m0 |v0|^2 / 2 + I0 |w0|^2 / 2, I0 the
    # base's least principal moment), so sqrt(T) rises by at most a t / 2 from rest (no
    # effort, no gravity; the drives' braking only takes energy away)
    arrays = MODEL.arrays
    least = np.linalg.eigvalsh(arrays.inertia[0])[0]
    a = np.sqrt(2.0 * (3e5**2 / arrays.mass[0] + 3e5**2 / least))
    kept = D.state_summary(MODEL, snap.q, snap.v).kinetic_energy
    assert kept <= (a * snap.time / 2.0) ** 2
    assert np.linalg.norm(snap.v[3:6]) < 1e3 and np.abs(snap.v[6:]).max() < 1e4
    assert sim.advance(3).step == snap.step  # stopped until reset
    with pytest.raises(EngineFault, match='runaway step'):
        sim.resume()
