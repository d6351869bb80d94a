"""The headless demo (``ffsim demo --short``) end to end, and its recorder on its own."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytestmark = pytest.mark.ros

ROOT = Path(__file__).resolve().parent.parent


def test_message_definitions_are_complete() -> None:
    """Schemas carry every nested type, in the format mcap_ros2 parses (as rosbag2 writes)."""
    from mcap_ros2._dynamic import generate_dynamic

    from ffsim_ros.recording import message_definition

    text = message_definition('nav_msgs/msg/Odometry')
    for nested in (
        'MSG: std_msgs/Header',
        'MSG: geometry_msgs/PoseWithCovariance',
        'MSG: geometry_msgs/Quaternion',
        'MSG: builtin_interfaces/Time',
    ):
        assert nested in text
    decoders = generate_dynamic('nav_msgs/msg/Odometry', text)
    assert 'nav_msgs/msg/Odometry' in decoders or 'nav_msgs/Odometry' in decoders


def test_short_demo_records_plots_and_compares(tmp_path: Path, ros_env: dict[str, str]) -> None:
    from mcap.reader import make_reader
    from mcap_ros2.decoder import DecoderFactory

    out = tmp_path / 'demo'
    result = subprocess.run(
        [sys.executable, '-m', 'ffsim_ros.cli', 'demo', '--short', '--output', str(out)],
        env=ros_env,
        capture_output=True,
        text=True,
        timeout=240,
        cwd=ROOT,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert 'goal 1/1' in result.stdout  # progress shown
    rows = {}
    for line in (out / 'summary.csv').read_text().splitlines()[1:]:
        fields = line.split(',')
        rows[fields[0]] = fields
    header = (out / 'summary.csv').read_text().splitlines()[0].split(',')
    col = {name: k for k, name in enumerate(header)}
    att = {m: float(r[col['max_base_attitude_deg']]) for m, r in rows.items()}
    assert att['reactionless'] < 0.1 < 1.0 < att['gjm_tracking']
    for r in rows.values():
        assert r[col['goals_reached']] == '1'
        assert float(r[col['final_error_mm']]) < 5.0
        assert float(r[col['max_abs_momentum']]) < 1e-8
    for name in ('ee_tracking', 'base_attitude', 'momentum', 'joint_torques'):
        png = (out / f'{name}.png').read_bytes()
        assert png[:8] == b'\x89PNG\r\n\x1a\n' and len(png) > 5000
    for mode in ('reactionless', 'gjm_tracking'):
        counts: dict[str, int] = {}
        stamps = []
        with open(out / f'{mode}.mcap', 'rb') as stream:
            reader = make_reader(stream, decoder_factories=[DecoderFactory()])
            for _, channel, _, msg in reader.iter_decoded_messages():
                counts[channel.topic] = counts.get(channel.topic, 0) + 1
                if channel.topic == '/joint_states':
                    stamps.append(msg.header.stamp.sec + msg.header.stamp.nanosec * 1e-9)
        expected = {
            '/joint_states',
            '/base_odom',
            '/tf',
            '/momentum',
            '/markers',
            '/clock',
            '/robot_description',
            '/ee_goal',
            '/ee_pose',
            '/status',
            '/joint_effort_commands',
        }
        assert expected <= set(counts)
        # joint_states at 100 Hz of sim time: count within 10 % of the recorded sim span
        span = stamps[-1] - stamps[0]
        assert span >= 5.9  # at least the 6 s of sim time after the goal
        assert abs(counts['/joint_states'] - 100 * span) <= 0.1 * 100 * span
        assert np.all(np.diff(stamps) > 0)
        assert counts['/ee_goal'] == 1 and counts['/robot_description'] == 1
        assert counts['/status'] > 0.5 * counts['/joint_states']
