"""The collision primitives goals are kept out of (:func:`goal_keepout_shapes`), shared by the
controller node and the campaigns: meshes on the base named, other links' meshes not, bad
geometry refused naming where it came from."""

from __future__ import annotations

import numpy as np
import pytest

import ffsim_ros.dynamics as D
from ffsim_ros.campaign.batch import Campaign
from ffsim_ros.campaign.scenario import Scenario, ScenarioError
from ffsim_ros.node_support.common import ParameterValueError
from ffsim_ros.node_support.controller_watch import base_collision_shapes
from ffsim_ros.scene.geometry import Box, Sphere, goal_keepout_shapes

INERTIAL = (
    '<inertial><mass value="{m}"/>'
    '<inertia ixx="{i}" iyy="{i}" izz="{i}" ixy="0" ixz="0" iyz="0"/></inertial>'
)


def urdf(base_collision: str) -> str:
    """A floating base with a fixed-on panel and a two-joint arm; ``base_collision`` is the
    base link's collision XML."""
    mesh = '<collision><geometry><mesh filename="package://x/m.stl"/></geometry></collision>'
    sphere = '<collision><geometry><sphere radius="0.05"/></geometry></collision>'
    return f"""<robot name="keepout">
  <link name="base_link">{INERTIAL.format(m=100, i=10)}{base_collision}</link>
  <link name="panel">{mesh}</link>
  <joint name="panel_fix" type="fixed"><parent link="base_link"/><child link="panel"/>
    <origin xyz="0 0.8 0"/></joint>
  <link name="l1">{INERTIAL.format(m=2, i=0.1)}{mesh}</link>
  <joint name="j1" type="revolute"><parent link="base_link"/><child link="l1"/>
    <origin xyz="0.6 0 0"/><axis xyz="0 0 1"/>
    <limit lower="-3" upper="3" effort="50" velocity="1"/></joint>
  <link name="l2">{INERTIAL.format(m=2, i=0.1)}{sphere}</link>
  <joint name="j2" type="revolute"><parent link="l1"/><child link="l2"/>
    <origin xyz="0.5 0 0"/><axis xyz="0 0 1"/>
    <limit lower="-3" upper="3" effort="50" velocity="1"/></joint>
  <link name="ee"/>
  <joint name="ee_fix" type="fixed"><parent link="l2"/><child link="ee"/>
    <origin xyz="0.4 0 0"/></joint>
</robot>"""


GOOD = urdf('<collision><geometry><box size="1 1 1"/></geometry></collision>')
BAD = urdf('<collision><geometry><box size="1 1"/></geometry></collision>')


def test_primitives_kept_and_only_the_base_bodys_meshes_named():
    model = D.load_urdf(GOOD)
    shapes, meshes = goal_keepout_shapes(GOOD, model)
    assert [(s.link, s.shape) for s in shapes] == [
        ('base_link', Box((1.0, 1.0, 1.0))),
        ('l2', Sphere(0.05)),
    ]
    # the panel is welded to the base (body 0): its mesh is a hole in the goal check;
    # l1's mesh moves with the arm and is not a goal check's matter
    assert meshes == ['panel']
    node_shapes, node_meshes = base_collision_shapes(GOOD, model, 'robot_file')
    assert [(s.link, s.shape) for s in node_shapes] == [(s.link, s.shape) for s in shapes]
    assert node_meshes == meshes


def test_bad_geometry_named_by_its_source():
    model = D.load_urdf(BAD)
    with pytest.raises(ValueError, match='link base_link <collision> #0'):
        goal_keepout_shapes(BAD, model)
    with pytest.raises(ParameterValueError) as err:
        base_collision_shapes(BAD, model, 'robot_description')
    assert str(err.value).startswith('robot_description: invalid collision geometry: ')
    assert 'base_link' in str(err.value)


def test_campaign_refuses_bad_geometry_and_keeps_goals_out_of_the_base(tmp_path):
    bad = tmp_path / 'bad.urdf'
    bad.write_text(BAD)
    data = {
        'robot': str(bad),
        'ee_link': 'ee',
        'runs': 1,
        'seed': 1,
        'batch_size': 1,
        'goals': {'kind': 'offsets', 'offsets': [[0.0, 0.0, 0.0]]},
    }
    with pytest.raises(ScenarioError, match='^robot: invalid collision geometry: .*base_link'):
        Campaign(Scenario.from_dict(data))
    good = tmp_path / 'good.urdf'
    good.write_text(GOOD)
    c = Campaign(Scenario.from_dict({**data, 'robot': str(good)}))
    q0 = c.run_inputs(0).q0
    with pytest.raises(ValueError, match="goal inside the robot's base"):
        c.law.check_goal(q0, np.asarray(q0[:3]))
    c.law.check_goal(q0, D.link_pose(c.model, q0, 'ee')[0] - [0.2, 0.0, 0.0])
