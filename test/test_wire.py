"""The simulator's fixed-layout state messages sent as patched bytes (node_support/wire.py):
field for field, and length for length, what rclpy serializes for the messages
:meth:`StateMessages.fill` builds, for every sample robot, random states and stamps, one
template reused call after call."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip('rclpy')

from geometry_msgs.msg import Pose, TransformStamped  # noqa: E402
from nav_msgs.msg import Odometry  # noqa: E402
from rclpy.serialization import deserialize_message, serialize_message  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402
from std_msgs.msg import Float64MultiArray  # noqa: E402
from tf2_msgs.msg import TFMessage  # noqa: E402

import ffsim_ros.dynamics as D  # noqa: E402
from ffsim_ros.dynamics.lie import quat_normalize, quat_to_matrix  # noqa: E402
from ffsim_ros.node_support.state_messages import StateMessages  # noqa: E402
from ffsim_ros.node_support.wire import WireTemplate  # noqa: E402
from ffsim_ros.resources import sample_robot  # noqa: E402
from ffsim_ros.sim import Engine  # noqa: E402


@pytest.mark.parametrize('robot', ['ffsim_servicer_7dof', 'dual_arm_servicer', 'planar_2link'])
def test_serialized_state_equals_rclpy_serialization(robot: str) -> None:
    model = D.load_urdf(sample_robot(robot))
    rng = np.random.default_rng(3)
    messages = StateMessages(model.joint_names, 'world', 'robot/base_link', clock=True)
    for k in range(12):
        q = D.neutral(model)
        q[:3] = rng.normal(size=3)
        q[3:7] = quat_normalize(rng.normal(size=4))
        q[7:] = rng.uniform(-1.0, 1.0, model.n)
        v = rng.normal(size=model.nv) * 10.0 ** rng.uniform(-6, 2)
        engine = Engine(model, q, v, dt_ns=1_000_000)
        engine.command_efforts(rng.normal(size=model.n))
        snap = engine.advance(int(rng.integers(1, 5)))
        snap = type(snap)(**{**vars(snap), 'time_ns': int(rng.integers(0, 2**31 - 1)) * 10**9 + k})
        markers = k % 2 == 0
        wire = list(messages.serialized(snap, markers=markers))
        objects = messages.fill(snap, markers=markers)
        clock, joints, transform, odom, momentum, marker_array = objects
        base_tf = deserialize_message(wire.pop(), TFMessage)  # the base's /tf message
        assert base_tf == TFMessage(transforms=[transform])
        copy = deserialize_message(serialize_message(transform), TransformStamped)
        assert messages.base_transform(snap) == copy  # the message, where TF needs one
        tr = copy.transform
        assert [
            tr.translation.x,
            tr.translation.y,
            tr.translation.z,
        ] == snap.base_position.tolist()
        assert [tr.rotation.x, tr.rotation.y, tr.rotation.z, tr.rotation.w] == (
            snap.base_orientation.tolist()
        )
        assert copy.header.stamp.sec * 10**9 + copy.header.stamp.nanosec == snap.time_ns
        assert (wire[4] is None) == (marker_array is None) == (not markers)
        for got, msg in zip(wire, (clock, joints, odom, momentum, marker_array), strict=True):
            # the same fields, the same length (CDR's padding bytes are left as they come:
            # rclpy's own differ from one call to the next)
            # (float32 fields -- the markers' colours -- compared as they travel)
            if got is not None:
                sent = serialize_message(msg)
                expected = deserialize_message(sent, type(msg))
                assert deserialize_message(got, type(msg)) == expected, (k, type(msg).__name__)
                assert len(got) == len(sent)
        joints = deserialize_message(wire[1], JointState)
        assert list(joints.name) == list(model.joint_names)
        assert np.array_equal(joints.position, snap.q[7:])
        assert np.array_equal(joints.effort, snap.effort)
        assert joints.header.stamp.sec * 10**9 + joints.header.stamp.nanosec == snap.time_ns
        odom = deserialize_message(wire[2], Odometry)
        assert odom.child_frame_id == 'robot/base_link'
        assert odom.pose.pose.orientation.w == snap.base_orientation[3]
        # the twist in the base link's axes (REP 105), against the rotation matrix
        Rt = quat_to_matrix(snap.base_orientation).T
        tw = odom.twist.twist
        for got, world in (
            (tw.linear, snap.base_linear_velocity),
            (tw.angular, snap.base_angular_velocity),
        ):
            expected = Rt @ world
            scale = max(1.0, float(np.abs(world).max()))
            assert np.allclose([got.x, got.y, got.z], expected, rtol=0, atol=1e-14 * scale)
        data = deserialize_message(wire[3], Float64MultiArray).data
        assert np.array_equal(data, np.r_[snap.momentum, snap.com])


def test_template_refuses_what_it_cannot_patch() -> None:
    """A block whose fields are not back to back, a wrong length: errors naming them."""
    with pytest.raises(ValueError, match='Pose.split: fields not back to back'):
        WireTemplate(Pose(), {'split': ('f64', ('position.x', 'orientation.w'))})
    template = WireTemplate(JointState(name=['a', 'b']), {'position': ('f64[]', ('position', 2))})
    with pytest.raises(ValueError, match=r'JointState.position: expected 2 values, got 3'):
        template.pack_arrays('position', np.zeros(3))
    template.pack_arrays('position', np.array([1.5, -2.0]))
    assert list(deserialize_message(template.payload(), JointState).position) == [1.5, -2.0]
    empty = WireTemplate(JointState(), {'position': ('f64[]', ('position', 0))})
    empty.pack_arrays('position', np.zeros(0))
    assert deserialize_message(empty.payload(), JointState) == JointState()
