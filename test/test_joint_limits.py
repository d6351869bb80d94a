"""Joint limits are validated where a model is built (issue 14, item 2): URDF ``<limit>`` and
the builder's per-DoF limits. A negative or non-finite effort, speed or position limit is an
error naming the joint and the attribute; zero effort and speed limits (a passive joint, an
unknown speed limit, as published URDFs write them) load."""

from __future__ import annotations

import numpy as np
import pytest

import ffsim_ros.dynamics as D
from ffsim_ros.dynamics.builder import ModelBuilder

_INERTIAL = (
    '<inertial><mass value="1"/><inertia ixx="1" iyy="1" izz="1" ixy="0" ixz="0" iyz="0"/>'
    '</inertial>'
)


def _urdf(limit: str, jtype: str = 'revolute') -> str:
    return (
        f'<robot name="r"><link name="b">{_INERTIAL}</link><link name="c">{_INERTIAL}</link>'
        f'<joint name="elbow" type="{jtype}"><parent link="b"/><child link="c"/>'
        f'<axis xyz="0 0 1"/><limit {limit}/></joint></robot>'
    )


GOOD = {'lower': '-1', 'upper': '1', 'effort': '10', 'velocity': '2'}


def _limit(**change: str) -> str:
    return ' '.join(f'{k}="{v}"' for k, v in {**GOOD, **change}.items())


@pytest.mark.parametrize(
    ('attribute', 'value'),
    [
        ('effort', '-10'),
        ('effort', 'nan'),
        ('effort', 'inf'),
        ('velocity', '-1'),
        ('velocity', 'nan'),
        ('lower', 'nan'),
        ('upper', '-inf'),
        ('upper', 'inf'),
    ],
)
def test_bad_urdf_limit_names_joint_and_attribute(attribute: str, value: str) -> None:
    with pytest.raises(ValueError, match=rf"joint elbow: limit {attribute} expected .*'{value}'"):
        D.load_urdf(_urdf(_limit(**{attribute: value})))


def test_urdf_limits_loaded_as_given() -> None:
    model = D.load_urdf(_urdf(_limit()))
    assert model.lower.tolist() == [-1.0] and model.upper.tolist() == [1.0]
    assert model.effort_limit.tolist() == [10.0] and model.velocity_limit.tolist() == [2.0]
    with pytest.raises(ValueError, match='joint elbow: limit lower 2.0 > upper 1.0'):
        D.load_urdf(_urdf(_limit(lower='2')))
    passive = D.load_urdf(_urdf(_limit(effort='0', velocity='0')))
    assert passive.effort_limit.tolist() == [0.0] and passive.velocity_limit.tolist() == [0.0]
    # a continuous joint has no position limits
    free = D.load_urdf(_urdf('effort="3" velocity="0"', 'continuous'))
    assert np.isinf(free.lower).all() and np.isinf(free.upper).all()
    assert free.effort_limit.tolist() == [3.0] and free.velocity_limit.tolist() == [0.0]
    # a <limit> without effort or velocity: refused, as urdfdom (robot_state_publisher,
    # Pinocchio) refuses it -- it was read as unlimited, the simulator running a file the rest
    # of a launch could not load
    for attributes, missing in (('effort="3"', 'velocity'), ('velocity="1"', 'effort')):
        for kind in ('continuous', 'revolute'):
            with pytest.raises(
                ValueError, match=f'joint elbow: <limit> expected .* for {missing}$'
            ):
                D.load_urdf(_urdf(attributes + ' lower="-1" upper="1"', kind))


@pytest.mark.parametrize(
    ('key', 'value', 'message'),
    [
        ('effort', -1.0, r'joint elbow: effort expected values >= 0 \(inf: no .*got \[-1.0\]'),
        ('velocity', float('nan'), r'joint elbow: velocity expected values >= 0 .*got \[nan\]'),
        ('lower', float('nan'), r'joint elbow: lower expected numbers below \+inf .*got \[nan\]'),
        ('lower', float('inf'), r'joint elbow: lower expected numbers below \+inf .*got \[inf\]'),
        ('damping', float('inf'), r'joint elbow: damping expected finite values >= 0, got \[inf'),
        ('lower', 3.0, 'joint elbow: limit lower 3.0 > upper 2.0'),
    ],
)
def test_builder_limits_are_validated(key: str, value: float, message: str) -> None:
    limits = {'lower': -2.0, 'upper': 2.0, 'effort': 5.0, 'velocity': 1.0, key: value}
    builder = ModelBuilder('arm')
    builder.add_base('base_link', mass=10.0, inertia=[1, 0, 0, 1, 0, 1])
    builder.add_body(
        'forearm',
        parent='base_link',
        joint='elbow',
        joint_type='revolute',
        mass=1.0,
        inertia=[0.1, 0, 0, 0.1, 0, 0.1],
        **limits,
    )
    with pytest.raises(ValueError, match=message):
        builder.build()
