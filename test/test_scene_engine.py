"""The engine stepping targets (:mod:`ffsim_ros.sim.world`): the robot alone is unchanged, robot
and targets conserve the total momentum through steps, a capture and a release, and a change of
targets is a jump of the state."""

from __future__ import annotations

import numpy as np
import pytest

import ffsim_ros.dynamics as D
from ffsim_ros.resources import share_path
from ffsim_ros.scene import Gripper, Scene, Sphere, rigid_target, shapes_from_urdf
from ffsim_ros.sim import Engine, EngineFault, TargetWorld

URDF = str(share_path('urdf', 'ffsim_servicer_7dof.urdf'))
DT_NS = 1_000_000


@pytest.fixture(scope='module')
def robot():
    return D.load_urdf(URDF, floating_base=True)


def _state(robot):
    q, v = D.neutral(robot), np.zeros(robot.nv)
    v[6:] = np.linspace(-0.05, 0.05, robot.n)
    return q, v


def _world(robot, q, v, targets=()):
    shapes = shapes_from_urdf(URDF, model=robot, exclude=['arm_link_7', 'ee_link'])
    scene = Scene(robot, gripper=Gripper('ee_link'), shapes=shapes, dt=DT_NS * 1e-9, q=q, v=v)
    return TargetWorld(scene, targets)


def _target(robot, q, offset=0.16, name='sat'):
    from ffsim_ros.scene import Handle

    o, R = D.link_pose(robot, q, 'ee_link')
    return rigid_target(
        name,
        mass=25.0,
        shape=Sphere(0.12),
        inertia=np.diag([0.3, 0.4, 0.5]),
        handles=[Handle('grip', 'body', translation=(-0.15, 0.0, 0.0), radius=0.03)],
        position=o + R @ np.array([offset, 0.0, 0.0]),
        linear_velocity=(0.01, -0.02, 0.005),
        angular_velocity=np.radians([2.0, -3.0, 5.0]),
    )


def _about_origin(snap):
    return snap.momentum[3:] + np.cross(snap.com, snap.momentum[:3])


def test_robot_alone_unchanged_by_an_empty_world(robot):
    """A world without targets: the same states, bit for bit, as an engine without one."""
    q, v = _state(robot)
    plain = Engine(robot, q, v, dt_ns=DT_NS)
    with_world = Engine(robot, q, v, dt_ns=DT_NS, world=_world(robot, q, v))
    tau = np.linspace(1.0, -1.0, robot.n)
    for engine in (plain, with_world):
        engine.command_efforts(tau)
    for _ in range(5):
        a, b = plain.advance(40), with_world.advance(40)
        assert np.array_equal(a.q, b.q) and np.array_equal(a.v, b.v)
        assert np.array_equal(a.momentum, b.momentum) and b.world is None


def test_targets_stepped_momentum_through_capture_and_release(robot):
    q, v = _state(robot)
    engine = Engine(robot, q, v, dt_ns=DT_NS, world=_world(robot, q, v))
    robot_only = engine.snapshot().momentum
    _, snap = engine.change_world(lambda w: w.add(_target(robot, q, offset=0.3)))
    assert snap.step == 1 and snap.world is not None and set(snap.world.targets) == {'sat'}
    m_sat = 25.0
    # the totals include the target: P = P_robot + m v_sat
    np.testing.assert_allclose(
        snap.momentum[:3], robot_only[:3] + m_sat * np.array([0.01, -0.02, 0.005]), atol=1e-12
    )
    h0, sat0 = snap.momentum, snap.world.targets['sat'].com
    engine.command_efforts(np.zeros(robot.n))
    snap = engine.advance(50)
    assert engine.health.checked and not engine.health.warnings
    # no contact yet: the target's CoM drifted at its velocity for 50 steps
    np.testing.assert_allclose(
        snap.world.targets['sat'].com, sat0 + 0.05 * np.array([0.01, -0.02, 0.005]), atol=1e-12
    )
    np.testing.assert_allclose(snap.momentum[:3], h0[:3], atol=1e-10)
    np.testing.assert_allclose(_about_origin(snap), _about_origin(engine.snapshot()), atol=0)
    # bring the handle onto the gripper, then grasp: momentum kept through the capture impulse
    q1, _ = snap.q, snap.v
    o, R = D.link_pose(robot, q1, 'ee_link')
    _, snap = engine.change_world(lambda w: w.move('sat', position=o + R @ np.array([0.15, 0, 0])))
    before = snap
    event, snap = engine.change_world(lambda w: w.grasp())
    assert event.captured, event.reason
    assert snap.world.holding == 'sat'
    np.testing.assert_allclose(snap.momentum[:3], before.momentum[:3], atol=1e-10)
    np.testing.assert_allclose(_about_origin(snap), _about_origin(before), atol=1e-10)
    with pytest.raises(ValueError, match='release it first'):
        engine.set_state(snap.q, snap.v)
    held = engine.advance(100)
    np.testing.assert_allclose(held.momentum[:3], before.momentum[:3], atol=1e-10)
    np.testing.assert_allclose(_about_origin(held), _about_origin(before), atol=1e-10)
    _, snap = engine.change_world(lambda w: w.release())
    np.testing.assert_allclose(_about_origin(snap), _about_origin(before), atol=1e-10)
    events = engine.world.take_events()
    kinds = [type(e).__name__ for _, e in events]
    assert 'CaptureEvent' in kinds and 'ReleaseEvent' in kinds
    # reset: the robot's initial state, each target back to the state it was added with
    snap = engine.reset()
    np.testing.assert_array_equal(snap.q, engine.initial_state[0])
    assert snap.world.holding == '' and engine.world.spawned == ('sat',)
    np.testing.assert_allclose(snap.world.targets['sat'].com, sat0, atol=1e-15)
    # the spawned ones removed (ResetSimulation's spawned scope): the robot alone again
    _, snap = engine.change_world(lambda w: [w.remove(n) for n in w.spawned])
    assert snap.world is None and not engine.world.active
    np.testing.assert_array_equal(snap.momentum, robot_only)


def test_target_refused_changes_nothing(robot):
    q, v = _state(robot)
    engine = Engine(robot, q, v, dt_ns=DT_NS, world=_world(robot, q, v))
    step = engine.step
    inside = rigid_target(
        'sat', mass=5.0, shape=Sphere(0.1), position=D.link_pose(robot, q, 'arm_link_4')[0]
    )
    with pytest.raises(
        ValueError, match="target 'sat': shape on 'sat/body' overlaps 'robot/arm_link"
    ):
        engine.change_world(lambda w: w.add(inside))
    assert engine.step == step and not engine.world.active


def test_non_finite_step_with_targets_faults_and_keeps_the_last_state(robot, monkeypatch):
    """A step of the scene that goes non-finite: the engine faults with the last finite state
    of robot and targets kept (the scene rolled back), refuses to resume, and a reset goes on."""
    q, v = _state(robot)
    engine = Engine(robot, q, v, dt_ns=DT_NS, world=_world(robot, q, v))
    engine.change_world(lambda w: w.add(_target(robot, q, offset=0.6)))
    good = engine.advance(20)
    real_step = D.step

    def poisoned(model, q, v, *args, **kwargs):
        q1, v1 = real_step(model, q, v, *args, **kwargs)
        return q1, np.full_like(v1, np.nan)

    monkeypatch.setattr(D, 'step', poisoned)
    snap = engine.advance(10)
    assert snap.faulted and 'non-finite state in the step from t = 0.021000 s' in snap.fault
    assert snap.step == good.step and np.array_equal(snap.q, good.q)
    np.testing.assert_array_equal(snap.world.targets['sat'].q, good.world.targets['sat'].q)
    assert np.all(np.isfinite(snap.momentum))
    with pytest.raises(EngineFault):
        engine.resume()
    monkeypatch.setattr(D, 'step', real_step)
    after = engine.reset()
    assert not after.faulted and engine.advance(5).step == after.step + 5


def test_reset_leaves_out_a_target_where_the_robot_returns(robot):
    q, v = _state(robot)
    engine = Engine(robot, q, v, dt_ns=DT_NS, world=_world(robot, q, v))
    moved = np.array(q)
    moved[0] += 5.0  # the base 5 m away: its initial place is free
    engine.set_state(moved, v)
    at_start = rigid_target('ball', mass=5.0, shape=Sphere(0.1), position=q[:3])
    engine.change_world(lambda w: w.add(at_start))
    snap = engine.reset()
    assert engine.world.left_out == ['ball'] and snap.world is None
    np.testing.assert_array_equal(snap.q, engine.initial_state[0])


def test_robot_state_overlapping_a_target_refused(robot):
    q, v = _state(robot)
    engine = Engine(robot, q, v, dt_ns=DT_NS, world=_world(robot, q, v))
    moved = np.array(q)
    moved[0] += 5.0
    ball = rigid_target('ball', mass=5.0, shape=Sphere(0.1), position=moved[:3])
    engine.change_world(lambda w: w.add(ball))
    before = engine.snapshot()
    with pytest.raises(ValueError, match="robot state: shape on 'robot/.*' would overlap 'ball/"):
        engine.set_state(moved, v)
    after = engine.snapshot()
    assert after.step == before.step and np.array_equal(after.q, before.q)
    assert engine.advance(3).step == before.step + 3  # runs on from where it was


def _tumbler(dt: float, name: str = 'tumbler'):
    """A block 20 m from the robot spinning at 0.9 pi rad per physics step of ``dt`` [s] about
    its intermediate axis (inertia 1, 2, 2.9 kg m^2): accepted; the coarse steps speed it up
    until one would turn it by more than pi rad, which the step refuses (a fault)."""
    w = 0.9 * np.pi / dt * np.array([0.02, 0.9998, 0.0]) / np.hypot(0.02, 0.9998)
    return rigid_target(
        name,
        mass=10.0,
        shape=Sphere(0.2),
        inertia=np.diag([1.0, 2.0, 2.9]),
        position=(20.0, 0.0, 0.0),
        angular_velocity=w,
    )


def test_a_target_turning_by_pi_per_step_is_refused_and_a_fault_names_it(robot):
    """Targets spinning by pi rad or more per physics step (1732 rad/s at 500 Hz: 3.46 rad)
    were taken -- spawned, moved, a scenario's -- and the whole simulation faulted at the next
    step with the message of the robot's: 'the base would turn by 3.46 rad'. Refused now
    (nothing changes, the bound and the physics rate named), as a robot state is; a target
    that gets there by its own motion faults naming it."""
    q, v = D.neutral(robot), np.zeros(robot.nv)
    dt_ns = 2_000_000
    scene = Scene(robot, gripper=None, dt=dt_ns * 1e-9, q=q, v=v)
    engine = Engine(robot, q, v, dt_ns=dt_ns, world=TargetWorld(scene))
    fast = (1000.0, 1000.0, 1000.0)
    spinning = rigid_target(
        'spin1', mass=4.0, shape=Sphere(0.2), position=(20.0, 0.0, 0.0), angular_velocity=fast
    )
    refusal = (
        "target '{}' state: expected the target to turn by less than pi rad per physics step "
        '(the step refuses more), |w| below 1571 rad/s at physics_rate_hz 500, got |w| = 1732 '
        'rad/s (3.46 rad per step)'
    )
    with pytest.raises(ValueError) as info:
        engine.change_world(lambda w: w.add(spinning))
    assert str(info.value) == refusal.format('spin1')
    assert engine.step == 0 and not engine.world.active
    still = rigid_target('spin2', mass=4.0, shape=Sphere(0.2), position=(20.0, 0.0, 0.0))
    engine.change_world(lambda w: w.add(still))
    with pytest.raises(ValueError) as info:
        engine.change_world(lambda w: w.move('spin2', angular_velocity=fast))
    assert str(info.value) == refusal.format('spin2')
    snap = engine.advance(5)
    assert not snap.faulted and snap.step == 6
    assert np.array_equal(snap.world.targets['spin2'].root.angular_velocity, np.zeros(3))
    # a scenario's target: refused when the world is made (the simulator exits 2 naming it)
    scene = Scene(robot, gripper=None, dt=dt_ns * 1e-9, q=q, v=v)
    with pytest.raises(ValueError, match=r"^target 'spin1' state: expected the target to turn"):
        TargetWorld(scene, [spinning])
    # one that gets there in flight: the fault names it, not the robot's base
    dt_ns = 10_000_000
    scene = Scene(robot, gripper=None, dt=dt_ns * 1e-9, q=q, v=v)
    engine = Engine(robot, q, v, dt_ns=dt_ns, world=TargetWorld(scene, [_tumbler(0.01)]))
    snap = engine.advance(100)
    assert snap.faulted and 0 < snap.step < 100
    assert "the dynamics failed (target 'tumbler': step: the base would turn by " in snap.fault


def test_a_faulted_engine_refuses_changes_of_its_targets(robot):
    """A change of the targets (spawn, move, remove, grasp, release) on a faulted engine
    cleared the fault and answered success: the state that faulted was stepped again, to fault
    again under a new stamp. Refused now, naming the fault, nothing changed (the clock
    included); a reset or a robot state set are the ways out, and a change that a reset
    follows (the spawned targets removed first) is applied, the fault kept until the reset."""
    q, v = D.neutral(robot), np.zeros(robot.nv)
    dt_ns = 10_000_000
    scene = Scene(robot, gripper=None, dt=dt_ns * 1e-9, q=q, v=v)
    engine = Engine(robot, q, v, dt_ns=dt_ns, world=TargetWorld(scene, [_tumbler(0.01)]))
    faulted = engine.advance(100)
    assert faulted.faulted
    ball = rigid_target('ball', mass=5.0, shape=Sphere(0.1), position=(0.0, 30.0, 0.0))
    for change in (
        lambda w: w.add(ball),
        lambda w: w.move('tumbler', angular_velocity=(0.0, 0.0, 0.0)),
        lambda w: w.remove('tumbler'),
        lambda w: w.grasp(),
        lambda w: w.release(),
    ):
        with pytest.raises(EngineFault) as info:
            engine.change_world(change)
        assert str(info.value) == (
            f"integration stopped: {faulted.fault} (reset, or set the robot's state, first); "
            'the targets were not changed'
        )
        snap = engine.snapshot()
        assert snap.fault == faulted.fault and snap.step == faulted.step
        assert set(snap.world.targets) == {'tumbler'}
        assert np.array_equal(snap.world.targets['tumbler'].q, faulted.world.targets['tumbler'].q)
    # a change before a reset: applied, still faulted until the reset
    _, snap = engine.change_world(lambda w: w.add(ball), resetting=True)
    assert (
        snap.faulted
        and snap.fault == faulted.fault
        and set(snap.world.targets)
        == {
            'tumbler',
            'ball',
        }
    )
    assert engine.advance(5).step == snap.step  # (no step while faulted)
    assert not engine.reset().faulted
    # setting the robot's state clears it too
    faulted = engine.advance(100)
    assert faulted.faulted
    assert not engine.set_state(q, v).faulted
    _, snap = engine.change_world(lambda w: w.remove('ball'))
    assert not snap.faulted and 'ball' not in snap.world.targets
