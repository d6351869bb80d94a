"""Robustness of the scene engine (:class:`~ffsim_ros.scene.Scene`, :mod:`~.scene.detection`).

* Broad phase: the system pairs it keeps are those of the bounding-sphere test over every pair
  of shapes (random clouds, planes, clusters, non-finite centres, tiny chunks); the contacts
  found are those of the narrow phase over every pair of systems, in the same order, to the
  bit; whole runs with impacts (rigid and compliant laws) give the same states and events as
  with the all-pairs detection.
* Atomic steps: a step that raises -- the dynamics refusing a state, or a failure injected at
  every call of the step's dynamics and detection in turn -- leaves the scene as at the start
  of that step; the steps before it stay done (with their events) and later steps go on
  exactly as in a run that never failed.
* ``dt`` outside [1e-6, 1] s refused, naming it.
* Placements exactly touching (round-off overlaps) accepted, genuine overlaps refused, for
  both contact laws.
* :meth:`Scene.rollback` refuses a checkpoint taken before a change of targets and can be used
  twice.
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import numpy as np
import pytest
from scene_samples import TARGET_URDF

import ffsim_ros.dynamics as D
import ffsim_ros.scene.scene as scene_module
from ffsim_ros.dynamics.lie import quat_normalize
from ffsim_ros.scene import (
    Box,
    Capsule,
    CompliantLaw,
    ContactEvent,
    Cylinder,
    Gripper,
    ImpactLaw,
    Scene,
    Sphere,
    rigid_target,
    shapes_from_urdf,
    urdf_target,
)
from ffsim_ros.scene.detection import Detector, System, near_system_pairs
from ffsim_ros.scene.geometry import PlacedShapes

ROBOT_URDF = Path(__file__).resolve().parents[1] / 'urdf' / 'ffsim_servicer_7dof.urdf'


@pytest.fixture(scope='module')
def robot():
    return D.load_urdf(str(ROBOT_URDF), floating_base=True)


@pytest.fixture(scope='module')
def shapes(robot):
    return shapes_from_urdf(str(ROBOT_URDF), model=robot)


def _scene(robot, shapes, law, dt=1e-3, **kwargs):
    return Scene(robot, gripper=Gripper('ee_link'), shapes=shapes, dt=dt, contact=law, **kwargs)


def _same(a, b) -> bool:
    """Bit-equal values: dataclasses field by field, arrays element by element."""
    if dataclasses.is_dataclass(a) and not isinstance(a, type):
        return type(a) is type(b) and all(
            _same(getattr(a, f.name), getattr(b, f.name)) for f in dataclasses.fields(a)
        )
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        a, b = np.asarray(a), np.asarray(b)
        return a.shape == b.shape and np.array_equal(a, b, equal_nan=a.dtype.kind == 'f')
    if isinstance(a, dict):
        return isinstance(b, dict) and list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, tuple | list):
        return type(a) is type(b) and len(a) == len(b) and all(map(_same, a, b))
    return a == b


# ----------------------------------------------------------------------------------------------
# broad phase
# ----------------------------------------------------------------------------------------------


def _brute_pairs(centres, radii, owner, margin) -> set[tuple[int, int]]:
    """The sphere test over every pair of shapes (the narrow phase's first test)."""
    d = centres[:, None, :] - centres[None, :, :]
    reach = radii[:, None] + radii[None, :] + margin
    near = np.einsum('ijk,ijk->ij', d, d) < reach * np.abs(reach)
    out = set()
    for i, j in zip(*np.nonzero(near), strict=True):
        a, b = int(owner[i]), int(owner[j])
        if a != b:
            out.add((min(a, b), max(a, b)))
    return out


def _clouds(rng):
    """(centres, radii, owner) of random layouts: uniform, a plane, tight clusters, a line."""
    k = 300
    owner = rng.integers(0, 60, k)
    radii = rng.uniform(0.01, 0.2, k)
    uniform = rng.uniform(-3.0, 3.0, (k, 3))
    plane = uniform.copy()
    plane[:, 0] = 1.5  # every interval overlaps along x: the sweep must pick another axis
    clusters = rng.normal(0.0, 0.05, (k, 3)) + rng.integers(0, 4, (k, 1)) * 2.0
    line = np.outer(rng.uniform(-5.0, 5.0, k), [1.0, 1.0, 1.0]) + 1e3  # far from the origin
    return [(c, radii, owner) for c in (uniform, plane, clusters, line)]


@pytest.mark.parametrize('margin', [0.0, 1e-6, 0.05, 0.5, -0.05])
def test_broad_phase_keeps_the_system_pairs_of_the_sphere_test(margin):
    rng = np.random.default_rng(17)
    for centres, radii, owner in _clouds(rng):
        expected = _brute_pairs(centres, radii, owner, margin)
        for chunk in (7, 1000, 1 << 18):  # many chunks, a few, one
            got = near_system_pairs(centres, radii, owner, margin, chunk=chunk)
            assert got == sorted(got) and all(i < j for i, j in got)
            assert set(got) == expected, (chunk, set(got) ^ expected)


def test_broad_phase_edge_cases():
    # a superset at round-off: exactly touching spheres (the narrow phase decides)
    c = np.array([[0.0, 0.0, 0.0], [0.2, 0.0, 0.0]])
    assert near_system_pairs(c, [0.1, 0.1], [0, 1], 0.0) == [(0, 1)]
    assert near_system_pairs(c, [0.1, 0.1], [0, 1], 0.0 - 1e-3) == []
    assert near_system_pairs(c, [0.1, 0.1], [0, 0], 1.0) == []  # one system: never paired
    assert near_system_pairs(c[:1], [0.1], [0], 1.0) == []
    assert near_system_pairs(np.zeros((0, 3)), [], [], 1.0) == []
    # non-finite centres are never near (as in the sphere test), the others still are
    c = np.array([[0.0, 0.0, 0.0], [0.15, 0.0, 0.0], [np.nan, 0.0, 0.0], [np.inf, 0.0, 0.0]])
    assert near_system_pairs(c, [0.1] * 4, [0, 1, 2, 3], 0.0) == [(0, 1)]


def _systems(robot, shapes, rng, n):
    """The robot at a random posture and ``n`` random targets crowded around it (overlaps
    allowed: the detection is compared, not stepped)."""
    q = D.neutral(robot)
    q[7:] = rng.uniform(-1.5, 1.5, robot.nq - 7)
    out = [System('robot', robot, q, np.zeros(robot.nv), PlacedShapes(robot, shapes), [])]
    kinds = [
        lambda: Sphere(rng.uniform(0.03, 0.3)),
        lambda: Box(rng.uniform(0.05, 0.5, 3)),
        lambda: Cylinder(rng.uniform(0.03, 0.2), rng.uniform(0.05, 0.5)),
        lambda: Capsule(rng.uniform(0.03, 0.2), rng.uniform(0.05, 0.5)),
    ]
    for k in range(n):
        pose = {
            'position': rng.uniform(-1.5, 1.5, 3),
            'orientation': quat_normalize(rng.normal(size=4), 'q'),
        }
        if k % 5 == 4:
            t = urdf_target(f't{k:02d}', TARGET_URDF, joint_positions=[rng.uniform(-2, 2)], **pose)
        else:
            t = rigid_target(f't{k:02d}', mass=1.0, shape=kinds[k % 4](), **pose)
        placed = PlacedShapes(t.model, t.shapes)
        out.append(System(t.name, t.model, t.q, t.v, placed, [f'{t.name}/x'] * len(placed)))
    return out


def _all_pairs(detector, systems, margin):
    """The reference: the narrow phase over every pair of systems (the engine before its broad
    phase)."""
    out = []
    for i, a in enumerate(systems):
        for b in systems[i + 1 :]:
            out.extend(detector.pairs(a, b, margin))
    return out


@pytest.mark.parametrize('seed', [0, 1, 2])
def test_detection_equals_all_pairs(robot, shapes, seed):
    rng = np.random.default_rng(seed)
    systems = _systems(robot, shapes, rng, 40)
    detector = Detector()
    for margin in (0.0, 1e-6, 0.05):
        got = detector.detect(systems, margin)
        ref = _all_pairs(Detector(), systems, margin)
        assert len(ref) > 10  # crowded: many contacts, some with the robot
        assert any(c.a.name == 'robot' for c in ref)
        assert [c.key for c in got] == [c.key for c in ref]
        for c, r in zip(got, ref, strict=True):
            assert c.a is r.a and c.b is r.b
            assert c.distance == r.distance
            assert np.array_equal(c.point, r.point) and np.array_equal(c.normal, r.normal)


def _crowd(robot, shapes, law, rng, n=24, dt=5e-3):
    """A scene of ``n`` targets in a crowd next to the robot, moving at random (placements
    drawn until clear)."""
    scene = _scene(robot, shapes, law, dt=dt)
    k = 0
    while k < n:
        shape = [Sphere(0.08), Box((0.12, 0.1, 0.14)), Capsule(0.05, 0.1)][k % 3]
        try:
            scene.add_target(
                rigid_target(
                    f't{k:02d}',
                    mass=rng.uniform(0.5, 3.0),
                    shape=shape,
                    position=rng.uniform([-0.1, -0.5, -0.5], [0.9, 0.5, 0.5]) + [0.6, 0.0, 0.0],
                    linear_velocity=rng.normal(0.0, 0.6, 3),
                    angular_velocity=rng.normal(0.0, 1.0, 3),
                )
            )
            k += 1
        except ValueError:
            continue
    return scene


@pytest.mark.parametrize(
    'law',
    [ImpactLaw(restitution=0.5, friction=0.3), CompliantLaw(stiffness=2e4, damping=20.0)],
    ids=['rigid', 'compliant'],
)
def test_runs_with_impacts_equal_all_pairs_runs(robot, shapes, law, monkeypatch):
    runs = []
    for reference in (False, True):
        if reference:
            monkeypatch.setattr(
                Detector, 'detect', lambda self, systems, margin: _all_pairs(self, systems, margin)
            )
        scene = _crowd(robot, shapes, law, np.random.default_rng(5))
        runs.append([scene.advance(5) for _ in range(8)])
    fast, ref = runs
    contacts = [e for s in ref for e in s.events if isinstance(e, ContactEvent)]
    assert len(contacts) > 5
    assert {e.body_a.split('/')[0] for e in contacts} - {'robot'}  # target against target too
    for a, b in zip(fast, ref, strict=True):
        assert _same(a, b)


# ----------------------------------------------------------------------------------------------
# atomic steps
# ----------------------------------------------------------------------------------------------


def test_a_step_the_dynamics_refuse_changes_nothing(robot, shapes, monkeypatch):
    """The probe's case: the dynamics of the last system stepped ('tiny', after the robot and
    'ok' have moved) refuse its state."""
    v0 = np.r_[0.1, 0, 0, 0, 0, 0.01, np.zeros(7)]
    scenes = [_scene(robot, shapes, ImpactLaw(), v=v0) for _ in range(2)]
    for scene in scenes:
        scene.add_target(
            rigid_target(
                'ok', mass=1.0, shape=Sphere(0.1), position=(0, 5, 0), linear_velocity=(0.1, 0, 0)
            )  # fmt: skip
        )
    scene, reference = scenes
    scene.advance(2, snapshot=False)
    reference.advance(2, snapshot=False)
    tiny = rigid_target('tiny', mass=5.0, shape=Sphere(0.01), position=(0, 6, 0))
    scene.add_target(tiny)
    step = D.step

    def refusing(model, *args, **kwargs):
        if model is tiny.model and scene.step_count == 3:
            raise ValueError(f'the dynamics of {model.name!r} are not defined at this state')
        return step(model, *args, **kwargs)

    monkeypatch.setattr(D, 'step', refusing)
    start = scene.robot_state, scene.target_state('ok'), scene.target_state('tiny')
    with pytest.raises(ValueError, match='not defined at this state'):
        scene.advance(3, snapshot=False)
    assert scene.step_count == 3  # the step before the failing one stays done
    before = scene.robot_state, scene.target_state('ok'), scene.target_state('tiny')
    assert not _same(before, start)
    with pytest.raises(ValueError, match='not defined at this state'):
        scene.advance(1, snapshot=False)
    assert scene.step_count == 3
    assert _same((scene.robot_state, scene.target_state('ok'), scene.target_state('tiny')), before)
    scene.remove_target('tiny')
    reference.advance(1, snapshot=False)
    assert _same(scene.snapshot(), reference.snapshot())
    assert _same(scene.advance(4), reference.advance(4))


class _Fault:
    """Counts the calls of the dynamics' step, of the detection and of the contact laws
    (:func:`~ffsim_ros.scene.solve_impact`, :meth:`CompliantLaw.force`); raises at call
    ``at`` (0: never)."""

    def __init__(self, monkeypatch, at: int) -> None:
        self.calls, self.at = 0, at

        def counted(f):
            def wrapper(*args, **kwargs):
                self.calls += 1
                if self.calls == self.at:
                    raise ArithmeticError(f'injected at call {self.at}')
                return f(*args, **kwargs)

            return wrapper

        monkeypatch.setattr(D, 'step', counted(D.step))
        monkeypatch.setattr(Detector, 'detect', counted(Detector.detect))
        monkeypatch.setattr(CompliantLaw, 'force', counted(CompliantLaw.force))
        monkeypatch.setattr(scene_module, 'solve_impact', counted(scene_module.solve_impact))


def _pair(robot, shapes, law):
    """Two spheres under the robot's bus meeting in the first steps, one then hitting it."""
    scene = _scene(robot, shapes, law, dt=1e-3)
    z = -0.824 - 0.1 - 0.004  # 4 mm under the bus
    scene.add_target(
        rigid_target(
            'a',
            mass=2.0,
            shape=Sphere(0.1),
            position=(0.0, 0.0, z),
            linear_velocity=(0.0, 0.0, 1.0),
        )  # fmt: skip
    )
    scene.add_target(
        rigid_target(
            'b',
            mass=1.0,
            shape=Sphere(0.1),
            position=(0.2021, 0.0, z),
            linear_velocity=(-1.0, 0.0, 0.0),
        )  # fmt: skip
    )
    return scene


@pytest.mark.parametrize(
    'law',
    [ImpactLaw(restitution=0.5, friction=0.3), CompliantLaw(stiffness=1e5, damping=10.0)],
    ids=['rigid', 'compliant'],
)
def test_a_failing_step_is_undone_whole(robot, shapes, law, monkeypatch):
    steps = 12
    with monkeypatch.context() as m:
        count = _Fault(m, at=0)
        reference = _pair(robot, shapes, law)
        done = [reference.advance(1, snapshot=False) or reference.snapshot() for _ in range(steps)]
    calls = count.calls
    assert any(
        isinstance(e, ContactEvent) and e.body_a.startswith('robot')
        for s in done
        for e in s.events
    )
    assert any(
        isinstance(e, ContactEvent) and e.body_b == 'b/body' for s in done for e in s.events
    )
    for at in sorted({*range(1, calls + 1, max(1, calls // 40)), calls}):
        with monkeypatch.context() as m:
            scene = _pair(robot, shapes, law)
            fault = _Fault(m, at)
            with pytest.raises(ArithmeticError, match='injected'):
                scene.advance(steps, snapshot=False)
            assert fault.calls == at
        k = scene.step_count
        # as the run that never failed after k steps: states, events of the k steps, cache
        expected = _pair(robot, shapes, law)
        if k:
            expected.advance(k, snapshot=False)
        assert _same(scene.snapshot(), expected.snapshot()), at
        rest = scene.advance(steps - k) if k < steps else scene.snapshot()
        assert _same(rest, expected.advance(steps - k) if k < steps else expected.snapshot())
        assert _same(rest.robot_q, done[-1].robot_q) and rest.step == steps


# ----------------------------------------------------------------------------------------------
# dt, placements, rollback
# ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize('dt', [1e300, 1e-300, 0.0, -1e-3, 2.0, 9.9e-7, np.nan, np.inf])
def test_dt_outside_the_simulator_range_is_refused(robot, dt):
    with pytest.raises(ValueError, match=r'dt: expected a physics step in \[1e-06, 1\] s, got'):
        Scene(robot, gripper=Gripper('ee_link'), dt=dt)


@pytest.mark.parametrize('dt', [1e-6, 1000 * 1e-9, 1e-3, 1.0, 1_000_000_000 * 1e-9])
def test_dt_in_the_simulator_range_is_accepted(robot, dt):
    assert Scene(robot, gripper=Gripper('ee_link'), dt=dt).dt == dt


@pytest.mark.parametrize(
    'law', [ImpactLaw(), CompliantLaw(stiffness=1e4)], ids=['rigid', 'compliant']
)
def test_touching_placements_are_accepted_overlaps_refused(robot, shapes, law):
    scene = _scene(robot, shapes, law)
    assert scene.placement_slack == (1e-6 if isinstance(law, ImpactLaw) else 1e-9)
    for k in range(5):  # the probe's row: 0.2 * 4 - 0.2 * 3 - 0.2 = -5.6e-17 m
        scene.add_target(
            rigid_target(f's{k}', mass=1.0, shape=Sphere(0.1), position=(0.2 * k, 6, 0))
        )
    overlap = 0.5 * scene.placement_slack  # within the slack: touching
    scene.add_target(
        rigid_target('near', mass=1.0, shape=Sphere(0.1), position=(0.8, 6.2 - overlap, 0))
    )
    for deep in (2.0 * scene.placement_slack, 1e-3):
        with pytest.raises(ValueError, match=r"'new'.*overlaps 's4/body'.*deeper than"):
            scene.add_target(
                rigid_target('new', mass=1.0, shape=Sphere(0.1), position=(1.0 - deep, 6, 0))
            )
        with pytest.raises(ValueError, match=r"'s4'.*overlaps 's3/body'"):
            scene.set_target_state('s4', position=(0.8 - deep, 6, 0))
    assert scene.target_names == ('s0', 's1', 's2', 's3', 's4', 'near')
    scene.set_target_state('s4', position=(0.6 + 0.2 - 0.5 * scene.placement_slack, 6, 0))
    scene.advance(3)  # touching placements step on


def test_rollback_needs_the_same_systems_and_can_be_used_twice(robot, shapes):
    scene = _scene(robot, shapes, ImpactLaw())
    scene.add_target(rigid_target('a', mass=1.0, shape=Sphere(0.1), position=(2, 0, 0)))
    mark = scene.checkpoint()
    scene.set_target_state('a', position=(2.5, 0, 0))  # a change of targets
    with pytest.raises(ValueError, match='systems changed'):
        scene.rollback(mark)
    mark = scene.checkpoint()
    first = scene.advance(2)
    for _ in range(2):
        scene.rollback(mark)
        assert _same(scene.advance(2), first)


def test_robot_states_beyond_the_world_are_refused(robot, shapes):
    """A scene's initial robot state has the targets' bounds (1e6 m, 1e3 m/s or rad/s per
    component): a base at 1e300 m was accepted and the first step failed as "a degenerate
    model" (a running robot's state is not bounded: set_robot_state each engine batch)."""
    q, v = D.neutral(robot), np.zeros(robot.nv)
    far, fast = q.copy(), v.copy()
    far[0] = 1e300
    fast[8] = 1001.0
    for state, text in (((far, v), 'base position of magnitude <= 1e+06 m'),
                        ((q, fast), 'got 1001 at index 8')):  # fmt: skip
        with pytest.raises(ValueError, match=re.escape(text)):
            Scene(robot, gripper=None, shapes=shapes, q=state[0], v=state[1])
    edge = q.copy()
    edge[:3] = [1e6, -1e6, 0.0]
    Scene(robot, gripper=None, shapes=shapes, q=edge, v=np.full(robot.nv, 1e3))  # taken
