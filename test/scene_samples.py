"""Sample scene inputs shared by the scene tests."""

import numpy as np

from ffsim_ros.scene import Box, Target, rigid_target, tumble

TARGET_URDF = """<robot name="sat">
  <link name="hub"><inertial><mass value="20"/>
      <inertia ixx="1" ixy="0" ixz="0" iyy="1.2" iyz="0" izz="1.4"/></inertial>
    <collision><origin xyz="0 0 0.1" rpy="0 0 1.5707963267948966"/>
      <geometry><box size="0.4 0.3 0.2"/></geometry></collision>
    <collision><geometry><capsule radius="0.05" length="0.3"/></geometry></collision></link>
  <link name="panel"><inertial><origin xyz="0.3 0 0"/><mass value="2"/>
      <inertia ixx="0.02" ixy="0" ixz="0" iyy="0.05" iyz="0" izz="0.06"/></inertial>
    <collision><geometry><cylinder radius="0.1" length="0.02"/></geometry></collision>
    <collision><geometry><sphere radius="0.04"/></geometry></collision></link>
  <joint name="hinge" type="revolute"><parent link="hub"/><child link="panel"/>
    <origin xyz="0.3 0 0"/><axis xyz="0 0 1"/>
    <limit lower="-3" upper="3" effort="1" velocity="1"/></joint>
</robot>"""


def tumbling_box() -> Target:
    """A 40 kg, 0.3 m box tumbling at 30 deg/s (nutation 10 deg), 1.2 m below the servicer's
    bus and heading up into it at 0.4 m/s."""
    inertia = np.diag([0.8, 0.8, 1.2])
    tb = tumble(inertia, spin_rate=np.radians(30.0), nutation=np.radians(10.0))
    return rigid_target(
        'tgt',
        mass=40.0,
        shape=Box((0.3, 0.3, 0.3)),
        inertia=inertia,
        position=(0.4, 0.3, -1.2),
        orientation=tb.orientation,
        linear_velocity=(0.05, 0.0, 0.4),
        angular_velocity=tb.angular_velocity,
    )
