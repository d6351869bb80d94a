"""Momentum, CoM and kinetic energy far from the world origin (a geocentric frame).

The kernels take spatial quantities about the origin, where terms of ``m |r|^2`` cancel; the
functions take them about the base CoM (``inputs.about_the_base``) and add back what depends on
the origin. Reference: the same robot with its base CoM at the origin, where nothing is moved.
"""

from __future__ import annotations

import numpy as np

import ffsim_ros.dynamics as D
from ffsim_ros.dynamics.lie import cross
from ffsim_ros.resources import sample_robot

MODEL = D.load_urdf(sample_robot('ffsim_servicer_7dof'))


def tumbling() -> tuple[np.ndarray, np.ndarray]:
    """The servicer tumbling, its base CoM at the origin."""
    rng = np.random.default_rng(2)
    q = D.neutral(MODEL)
    quat = rng.normal(size=4)
    q[3:7] = quat / np.linalg.norm(quat)
    q[7:] = [0.1, 0.8, -0.3, -1.2, 0.2, 0.9, 0.0]
    v = np.r_[0.5, -0.2, 0.3, 0.05, -0.1, 0.08, rng.uniform(-0.2, 0.2, MODEL.n)]
    return q, v


def test_momentum_and_energy_far_from_the_origin_are_those_at_it() -> None:
    """momentum(about='com' | 'base'), momentum_and_com and kinetic_energy at 1 km to
    42 000 km were those about the origin: L_g 5e-7 off at 1 km, 7.3 kg m^2/s (6 %) at
    7 000 km, the energy 1.5e-6 relative. Now what they are at the origin, bit for bit (the
    CoM moved by the offset, to its spacing); about='origin' adds r_0 x P; batched too."""
    q, v = tumbling()
    at = {about: D.momentum(MODEL, q, v, about=about) for about in ('com', 'base', 'origin')}
    h_at, com_at = D.momentum_and_com(MODEL, q, v)
    energy_at = D.kinetic_energy(MODEL, q, v)
    assert np.linalg.norm(at['com'][3:]) > 100.0  # the premise: a motion with momentum
    for distance in (1e3, 7e6, 4.2e7):
        offset = distance * np.array([0.6, 0.8, 0.0])
        far = q.copy()
        far[:3] += offset
        for about in ('com', 'base'):
            assert np.array_equal(D.momentum(MODEL, far, v, about=about), at[about]), about
        h, com = D.momentum_and_com(MODEL, far, v)
        assert np.array_equal(h, at['com']) and np.array_equal(h, h_at)
        assert np.abs(com - offset - com_at).max() <= 2 * np.spacing(distance)
        assert D.kinetic_energy(MODEL, far, v) == energy_at
        origin = D.momentum(MODEL, far, v, about='origin')
        expected = np.r_[at['origin'][:3], at['origin'][3:] + cross(offset, at['origin'][:3])]
        scale = np.linalg.norm(expected[3:])
        assert np.abs(origin - expected).max() <= 1e-15 * scale, distance
        rows = D.momentum(MODEL, np.stack([q, far]), np.stack([v, v]), about='com')
        assert np.array_equal(rows[0], at['com']) and np.array_equal(rows[1], at['com'])
