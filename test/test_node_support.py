"""Helpers shared by the nodes (ffsim_ros.node_support) and the controller's parameters."""

from __future__ import annotations

from pathlib import Path

import pytest

import ffsim_ros.dynamics as D
from ffsim_ros.resources import sample_robot

pytestmark = pytest.mark.ros


def test_load_robot_sources_and_errors(tmp_path: Path) -> None:
    from ffsim_ros.node_support import DEFAULT_ROBOT, ParameterValueError, load_robot

    planar = sample_robot('planar_2link').read_text()
    model, text = load_robot(planar, '/no/such/file.urdf')  # the description wins
    assert text == planar and model.n == 2
    path = tmp_path / 'robot.urdf'
    path.write_text(planar)
    model, text = load_robot('', str(path))
    assert text == planar and model.n == 2
    model, text = load_robot('', '')
    assert model.joint_names == D.load_urdf(sample_robot(DEFAULT_ROBOT)).joint_names
    with pytest.raises(ParameterValueError, match=r"^robot_file: cannot read '/no/such'"):
        load_robot('', '/no/such')
    with pytest.raises(ParameterValueError, match='^robot_description: invalid robot'):
        load_robot('<robot name="r"></robot>', '')
    bad = tmp_path / 'bad.urdf'
    bad.write_text('<robot name="r"></robot>')
    with pytest.raises(ParameterValueError, match=r'^robot_file \(.*bad.urdf\): invalid robot'):
        load_robot('', str(bad))


def test_stamps_round_trip() -> None:
    from ffsim_ros.node_support import stamp_ns, to_stamp

    for ns in (0, 1, 999_999_999, 1_000_000_000, 12_345_678_901_234):
        stamp = to_stamp(ns)
        assert 0 <= stamp.nanosec < 1_000_000_000 and stamp_ns(stamp) == ns


def test_controller_mode_is_applied_after_the_set_only(rclpy_context) -> None:
    """The mode is checked in the on-set callback and applied in the post-set callback: a
    refused set (alone or atomic with a good value) changes neither the parameter nor the law."""
    from rclpy.parameter import Parameter

    from ffsim_ros.control import CONTROL_MODES, ControlMode
    from ffsim_ros.reactionless_controller import PARAMETERS, ReactionlessControllerNode

    node = ReactionlessControllerNode(context=rclpy_context)
    try:
        assert node.law.mode is ControlMode.REACTIONLESS
        result = node.set_parameters_atomically(
            [Parameter('mode', value='gjm_tracking'), Parameter('mode', value='foo')]
        )
        assert not result.successful and "got 'foo'" in result.reason
        assert node.law.mode is ControlMode.REACTIONLESS
        assert node.get_parameter('mode').value == 'reactionless'
        for mode in reversed(CONTROL_MODES):
            assert node.set_parameters([Parameter('mode', value=mode)])[0].successful
            assert node.law.mode.value == mode == node.get_parameter('mode').value
        result = node.set_parameters([Parameter('gains.kp_task', value=3.0)])
        assert not result[0].successful and 'read-only' in result[0].reason
        assert node.law.gains.kp_task == PARAMETERS['gains.kp_task'].default
        described = node.describe_parameters(list(PARAMETERS.names))
        for spec, d in zip(PARAMETERS, described, strict=True):
            assert d.description == spec.description and d.read_only is not spec.dynamic
            assert d.additional_constraints == spec.constraint
    finally:
        node.destroy_node()


def test_controller_rejects_an_unknown_ee_link(rclpy_context) -> None:
    from rclpy.parameter import Parameter

    from ffsim_ros.node_support import ParameterValueError
    from ffsim_ros.reactionless_controller import ReactionlessControllerNode

    with pytest.raises(ParameterValueError, match="^ee_link: expected one of .*got 'tool0'"):
        ReactionlessControllerNode(
            context=rclpy_context, parameter_overrides=[Parameter('ee_link', value='tool0')]
        )
