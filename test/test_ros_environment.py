"""Smoke tests of the ROS 2 environment set up by ``make setup`` (tools/setup_venv.sh).

They run over real DDS (Fast DDS through rmw_fastrtps_cpp), confined to localhost and to a
per-test domain id by the fixtures of ``conftest.py``.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.ros

TOPIC = '/ffsim_env_test/tf'

#: RIHS01 type hash of the official tf2_msgs/msg/TFMessage (ROS 2 Jazzy/Kilted). The hash
#: covers the whole type description, i.e. also geometry_msgs/TransformStamped and everything
#: below it, so a match means our tf2_msgs is wire- and discovery-compatible with real tf2.
OFFICIAL_TFMESSAGE_HASH = 'RIHS01_e369d0f05a23ae52508854b66f6aa0437f3449d652e8cbf22d5abe85d020f087'

# Publisher peer, run as a subprocess. It publishes on the relative topic 'tf', remapped to
# TOPIC with --ros-args, which also checks that ROS arguments reach the child.
PUBLISHER = """
import sys
import rclpy
from rclpy.executors import ExternalShutdownException
from geometry_msgs.msg import TransformStamped
from tf2_msgs.msg import TFMessage

rclpy.init(args=sys.argv)
node = rclpy.create_node('tf_publisher')
pub = node.create_publisher(TFMessage, 'tf', 10)
t = TransformStamped()
t.header.stamp.sec = 123
t.header.stamp.nanosec = 456789
t.header.frame_id = 'world'
t.child_frame_id = 'base_link'
t.transform.translation.x = 1.5
t.transform.translation.y = -2.25
t.transform.translation.z = 3.0
t.transform.rotation.x = 0.0
t.transform.rotation.y = 0.0
t.transform.rotation.z = 0.6
t.transform.rotation.w = 0.8
msg = TFMessage(transforms=[t])
node.create_timer(0.1, lambda: pub.publish(msg))
try:
    rclpy.spin(node)
except (KeyboardInterrupt, ExternalShutdownException):
    pass
finally:
    node.destroy_node()
    rclpy.try_shutdown()
"""


def _tfmessage_description_json() -> Path:
    """Locate share/tf2_msgs/msg/TFMessage.json through the ament index (as ROS tools do)."""
    from ament_index_python.packages import get_package_share_directory

    return Path(get_package_share_directory('tf2_msgs')) / 'msg' / 'TFMessage.json'


def test_isolation_environment(ros_env, rclpy_context, ros_domain_id):
    assert os.environ['ROS_AUTOMATIC_DISCOVERY_RANGE'] == 'LOCALHOST'
    assert 0 <= int(os.environ['ROS_DOMAIN_ID']) <= 101
    assert Path(os.environ['ROS_LOG_DIR']).is_dir()
    assert ros_env['ROS_AUTOMATIC_DISCOVERY_RANGE'] == 'LOCALHOST'
    assert ros_env['ROS_DOMAIN_ID'] == str(ros_domain_id)
    assert '_ROS_WHEELS_BOOTSTRAP_COMPLETE' not in ros_env
    assert rclpy_context.ok()
    assert rclpy_context.get_domain_id() == ros_domain_id


def test_rmw_is_fastrtps():
    from rclpy.utilities import get_rmw_implementation_identifier

    assert get_rmw_implementation_identifier() == 'rmw_fastrtps_cpp'


def test_tfmessage_definition_matches_official():
    from geometry_msgs.msg import TransformStamped
    from rosidl_parser.definition import NamespacedType, UnboundedSequence
    from tf2_msgs.msg import TFMessage

    # Field names and types, as the generated Python class sees them.
    assert TFMessage.get_fields_and_field_types() == {
        'transforms': 'sequence<geometry_msgs/TransformStamped>'
    }
    (slot,) = TFMessage.SLOT_TYPES
    assert isinstance(slot, UnboundedSequence)
    assert isinstance(slot.value_type, NamespacedType)
    assert slot.value_type.namespaced_name() == ('geometry_msgs', 'msg', 'TransformStamped')
    assert isinstance(TFMessage().transforms, list)
    assert TransformStamped.get_fields_and_field_types() == {
        'header': 'std_msgs/Header',
        'child_frame_id': 'string',
        'transform': 'geometry_msgs/Transform',
    }

    # The type description generated with the package (the same hash rmw announces).
    description = json.loads(_tfmessage_description_json().read_text())
    hashes = {h['type_name']: h['hash_string'] for h in description['type_hashes']}
    assert hashes['tf2_msgs/msg/TFMessage'] == OFFICIAL_TFMESSAGE_HASH
    fields = description['type_description_msg']['type_description']['fields']
    assert [(f['name'], f['type']['nested_type_name']) for f in fields] == [
        ('transforms', 'geometry_msgs/msg/TransformStamped')
    ]


def test_tfmessage_roundtrip_over_dds(ros_process, ros_node, ros_executor, wait_until):
    from tf2_msgs.msg import TFMessage

    publisher = ros_process.code(PUBLISHER, ros_args=['-r', f'tf:={TOPIC}'], name='tf_pub')

    node = ros_node('tf_listener')
    received: list[TFMessage] = []
    sub = node.create_subscription(TFMessage, TOPIC, received.append, 10)
    ros_executor.add_node(node)

    # Discovery first (no blind sleep), then data.
    matched = wait_until(
        lambda: sub.get_publisher_count() > 0 or not publisher.is_running(), 30.0, ros_executor
    )
    assert matched and publisher.is_running(), f'publisher never matched:\n{publisher.describe()}'
    assert wait_until(lambda: received, 10.0, ros_executor), (
        f'matched but no message received:\n{publisher.describe()}'
    )

    (t,) = received[0].transforms
    assert (t.header.stamp.sec, t.header.stamp.nanosec) == (123, 456789)
    assert (t.header.frame_id, t.child_frame_id) == ('world', 'base_link')
    tr, rot = t.transform.translation, t.transform.rotation
    assert (tr.x, tr.y, tr.z) == (1.5, -2.25, 3.0)
    assert (rot.x, rot.y, rot.z, rot.w) == (0.0, 0.0, 0.6, 0.8)

    # What the peer announced in discovery: node name, type name and type hash. The node name
    # travels separately (ros_discovery_info) and can lag the endpoint match: wait for it.
    def infos():
        return node.get_publishers_info_by_topic(TOPIC)

    assert wait_until(
        lambda: [i.node_name for i in infos()] == ['tf_publisher'], 10.0, ros_executor
    ), f'{[str(i) for i in infos()]}\n{publisher.describe()}'
    (info,) = infos()
    assert info.topic_type == 'tf2_msgs/msg/TFMessage'
    assert str(info.topic_type_hash) == OFFICIAL_TFMESSAGE_HASH

    assert publisher.stop() in (0, -2), publisher.describe()  # clean exit on SIGINT


def test_console_scripts_installed():
    if sys.prefix == sys.base_prefix:
        pytest.skip('not running from a virtualenv made by make setup')
    bindir = Path(sys.executable).parent
    for script in ('ffsim', 'simulator', 'reactionless_controller'):
        assert shutil.which(script, path=str(bindir)), f'{script} not in {bindir}'
