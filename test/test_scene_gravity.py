"""Targets in the robot's gravity (the simulator's ``gravity`` parameter): a target built without
gravity (every builder's default) falls with the robot's; one given another gravity is refused.

References: uniform gravity accelerates every body alike, so in a scene that falls the relative
motion -- contacts and impulses included -- is that of the same scene without gravity, and each
body's position is shifted by ``g t^2 / 2``, its velocity by ``g t`` (the equivalence
principle); the total momentum changes by ``M g t``, ``M`` robot and targets. Before, a non-zero
``gravity`` refused every target: the scene required the target's gravity to equal the robot's
while the targets were built with none.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from scene_samples import tumbling_box

import ffsim_ros.dynamics as D
from ffsim_ros.resources import share_path
from ffsim_ros.scene import (
    ContactEvent,
    Gripper,
    ImpactLaw,
    Scene,
    Sphere,
    rigid_target,
    shapes_from_urdf,
)
from ffsim_ros.sim import Engine, TargetWorld

URDF = str(share_path('urdf', 'ffsim_servicer_7dof.urdf'))
G = np.array([0.4, -0.3, -1.62])  # [m/s^2], not along an axis


@pytest.fixture(scope='module')
def robot():
    return D.load_urdf(URDF, floating_base=True)


def test_a_target_falls_with_the_robot_through_an_impact(robot):
    """A tumbling box hits the bus three times (friction 0.3, e = 0.5): in gravity every state
    is the zero-gravity one shifted by ``g t^2 / 2`` and ``g t``, the impulses are the same,
    and the total momentum grows by ``M g t``. Measured: 1e-15 before the first impact; after
    it, the impulses solved from states that differ by round-off leave positions 7e-11 m and
    rates 2e-9 apart; the momentum 4e-15 of ``M``."""
    shapes = shapes_from_urdf(URDF, model=robot)
    scenes = []
    for g in (np.zeros(3), G):
        model = D.with_gravity(robot, g)
        scene = Scene(
            model, gripper=Gripper('ee_link'), shapes=shapes, dt=5e-3,
            contact=ImpactLaw(restitution=0.5, friction=0.3),
        )  # fmt: skip
        scene.add_target(tumbling_box())  # built without gravity: it takes the robot's
        scenes.append(scene)
    free, falling = scenes
    M = robot.total_mass + 40.0
    h0 = falling.momentum()
    impacts = [[], []]
    for _ in range(20):
        for k, scene in enumerate(scenes):
            impacts[k] += [e for e in scene.advance(10).events if isinstance(e, ContactEvent)]
        t = falling.time
        shift, drift = 0.5 * G * t * t, G * t
        for state in ('robot_state', 'target_state'):
            (q0, v0), (q1, v1) = (
                getattr(s, state) if state == 'robot_state' else s.target_state('tgt')
                for s in scenes
            )
            np.testing.assert_allclose(q1[:3], q0[:3] + shift, rtol=0, atol=1e-9)
            np.testing.assert_allclose(q1[3:], q0[3:], rtol=0, atol=1e-9)
            np.testing.assert_allclose(v1[:3], v0[:3] + drift, rtol=0, atol=1e-8)
            np.testing.assert_allclose(v1[3:], v0[3:], rtol=0, atol=1e-8)
        h = falling.momentum()
        np.testing.assert_allclose(h[:3], h0[:3] + M * G * t, rtol=0, atol=1e-12 * M)
    assert impacts[1], 'no impact'
    assert len(impacts[0]) == len(impacts[1])
    for a, b in zip(*impacts, strict=True):
        np.testing.assert_allclose(b.impulse, a.impulse, rtol=0, atol=1e-8)
    assert falling.snapshot().targets['tgt'].momentum[2] < 0.0  # it bounced off (downwards)


def test_engine_with_a_target_in_gravity_warns_of_nothing(robot):
    """The watchdog takes the weight of robot and target (their total mass): 1 s of free
    flight, no warning; the target's CoM on ``c0 + v0 t + g t^2 / 2``."""
    model = D.with_gravity(robot, G)
    q, v = D.neutral(model), np.zeros(model.nv)
    shapes = shapes_from_urdf(URDF, model=model, exclude=['arm_link_7', 'ee_link'])
    scene = Scene(model, gripper=Gripper('ee_link'), shapes=shapes, dt=1e-3, q=q, v=v)
    engine = Engine(model, q, v, dt_ns=1_000_000, world=TargetWorld(scene))
    v_sat = np.array([0.01, -0.02, 0.005])
    sat = rigid_target('sat', mass=25.0, shape=Sphere(0.12), position=(0.0, 3.0, 0.0),
                       linear_velocity=v_sat)  # fmt: skip
    _, start = engine.change_world(lambda w: w.add(sat))
    c0 = start.world.targets['sat'].com
    snap = engine.advance(1000)
    assert engine.health.checked and not engine.health.warnings, engine.health.warnings
    np.testing.assert_allclose(
        snap.world.targets['sat'].com, c0 + v_sat + 0.5 * G, rtol=0, atol=1e-12
    )
    M = model.total_mass + 25.0
    np.testing.assert_allclose(snap.momentum[:3], start.momentum[:3] + M * G, atol=1e-9)


def test_a_target_with_another_gravity_is_refused(robot):
    lunar = D.with_gravity(robot, [0.0, 0.0, -1.62])
    sat = rigid_target('sat', mass=5.0, shape=Sphere(0.1), position=(0.0, 3.0, 0.0))
    earth = dataclasses.replace(sat, model=D.with_gravity(sat.model, [0.0, 0.0, -9.81]))
    for model, target in ((lunar, earth), (robot, earth)):
        scene = Scene(model, gripper=None, dt=1e-3)
        with pytest.raises(ValueError, match=r"target 'sat': gravity \[0.0, 0.0, -9.81\] diff"):
            scene.add_target(target)
        assert scene.target_names == ()
    # the robot's own gravity is accepted; a target without gravity falls with it
    scene = Scene(lunar, gripper=None, dt=1e-3)
    scene.add_target(dataclasses.replace(sat, model=D.with_gravity(sat.model, [0, 0, -1.62])))
    scene.add_target(rigid_target('free', mass=5.0, shape=Sphere(0.1), position=(0, -3.0, 0)))
    scene.advance(100)
    for name in ('sat', 'free'):
        np.testing.assert_allclose(scene.target_state(name)[1][:3], [0, 0, -0.162], atol=1e-14)
