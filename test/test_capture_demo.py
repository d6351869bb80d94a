"""``ffsim demo --scenario capture`` (short): its outputs against each other.

The summary's figures are recomputed from what the MCAP files hold (the simulator's own
messages: base and target odometry, the momentum, the scene events), so a summary that did not
come from the recorded run, or a recording that lost or reordered messages, fails.
"""

from __future__ import annotations

import csv

import numpy as np
import pytest

from ffsim_ros.capture_demo import SHORT_DURATION, STATE_FIELDS
from ffsim_ros.cli import main
from ffsim_ros.dynamics.lie import quat_to_matrix

mcap_reader = pytest.importorskip('mcap_ros2.reader')


def _quat(o):
    return np.array([o.x, o.y, o.z, o.w])


def _vec(v):
    return np.array([v.x, v.y, v.z])


def _angle(q0, q1):
    """Rotation angle between two unit quaternions (x, y, z, w) [rad]: of ``q0^-1 q1``,
    ``2 atan2(|r_xyz|, |r_w|)`` (accurate at small angles)."""
    v0, w0, v1, w1 = -q0[:3], q0[3], q1[:3], q1[3]
    r_v = w0 * v1 + w1 * v0 + np.cross(v0, v1)
    r_w = w0 * w1 - v0 @ v1
    return 2.0 * np.arctan2(np.linalg.norm(r_v), abs(r_w))


def _read(path):
    out = {}
    for m in mcap_reader.read_ros2_messages(str(path)):
        out.setdefault(m.channel.topic, []).append((m.log_time_ns, m.ros_msg))
    return out


@pytest.fixture(scope='module')
def demo_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp('capture_demo')
    assert main(['demo', '--scenario', 'capture', '--short', '--output', str(out)]) == 0
    return out


def test_outputs_exist(demo_dir):
    names = {p.name for p in demo_dir.iterdir()}
    for name in (
        'capture_momentum_distribution.mcap',
        'capture_gjm.mcap',
        'summary.md',
        'summary.csv',
        'capture_relative.png',
        'capture_impulses.png',
        'capture_base.png',
        'capture_momentum.png',
    ):
        assert name in names
    for png in demo_dir.glob('*.png'):
        assert png.read_bytes()[:8] == b'\x89PNG\r\n\x1a\n' and png.stat().st_size > 10_000


@pytest.mark.parametrize('mode', ['momentum_distribution', 'gjm'])
def test_summary_agrees_with_the_recording(demo_dir, mode):
    rows = {r['mode']: r for r in csv.DictReader(open(demo_dir / 'summary.csv'))}
    row = {k: (v if k == 'mode' else float(v)) for k, v in rows[mode].items()}
    rec = _read(demo_dir / f'capture_{mode}.mcap')
    n = len(rec['/base_odom'])
    # one message per control update (10 ms) on every state topic
    assert n == pytest.approx(SHORT_DURATION / 0.01, abs=1)
    for topic in ('/joint_states', '/tf', '/targets/sat/odom', '/momentum', '/capture/state'):
        assert len(rec[topic]) == n, topic
    times = [t for t, _ in rec['/base_odom']]
    assert times == sorted(times) and times == [t for t, _ in rec['/targets/sat/odom']]
    # the capture: one event, at the summary's time, with the summary's impulse
    events = [m.status[0] for _, m in rec['/scene_events']]
    captures = [s for s in events if s.name == 'capture']
    assert len(captures) == 1
    values = {kv.key: kv.value for kv in captures[0].values}
    assert values['captured'] == 'true' and values['target'] == 'sat'
    impulse = np.array([float(x) for x in values['impulse'].split()])
    assert np.linalg.norm(impulse[:3]) == pytest.approx(row['capture_impulse_Ns'], rel=1e-12)
    t_cap = [t for t, m in rec['/scene_events'] if m.status[0].name == 'capture'][0] * 1e-9
    assert t_cap == pytest.approx(row['capture_time_s'], abs=1e-9)
    # base attitude change at the end, from the first and last base odometry
    q = [_quat(m.pose.pose.orientation) for _, m in rec['/base_odom']]
    assert np.degrees(_angle(q[0], q[-1])) == pytest.approx(
        row['base_attitude_change_deg'], rel=1e-9, abs=1e-12
    )
    # the largest base rate (odometry twist in the base axes: its norm is the rate)
    rates = [np.linalg.norm(_vec(m.twist.twist.angular)) for _, m in rec['/base_odom']]
    assert np.degrees(max(rates)) == pytest.approx(row['max_base_rate_deg_s'], rel=1e-9)
    # final relative rate: target and base angular velocities, both rotated to world
    _, b = rec['/base_odom'][-1]
    _, tg = rec['/targets/sat/odom'][-1]
    w_b = quat_to_matrix(_quat(b.pose.pose.orientation)) @ _vec(b.twist.twist.angular)
    w_t = quat_to_matrix(_quat(tg.pose.pose.orientation)) @ _vec(tg.twist.twist.angular)
    assert np.degrees(np.linalg.norm(w_t - w_b)) == pytest.approx(
        row['final_relative_rate_deg_s'], rel=1e-9
    )
    # momentum on /momentum constant (no external force), and the parts on /capture/state sum
    # to its angular momentum about the common CoM
    h = np.array([m.data[:6] for _, m in rec['/momentum']])
    assert np.abs(h - h[0]).max() < 1e-10
    assert row['momentum_drift'] < 1e-10
    k = {f: i for i, f in enumerate(STATE_FIELDS)}
    for (_, s), (_, mom) in zip(rec['/capture/state'], rec['/momentum'], strict=True):
        L = sum(
            np.array(s.data[k[f'L_{p}_x'] : k[f'L_{p}_x'] + 3]) for p in ('target', 'arm', 'base')
        )
        np.testing.assert_allclose(L, mom.data[3:6], atol=1e-9)
    # the robot (at rest, zero momentum) holds none of it before the capture, some after
    robot = [
        np.linalg.norm(
            np.array(m.data[k['L_arm_x'] : k['L_arm_x'] + 3])
            + np.array(m.data[k['L_base_x'] : k['L_base_x'] + 3])
        )
        for _, m in rec['/capture/state']
    ]
    t_state = np.array([t for t, _ in rec['/capture/state']]) * 1e-9
    assert max(r for r, t in zip(robot, t_state, strict=True) if t < t_cap - 1e-9) < 1e-9
    assert robot[-1] > 1e-2


def test_summary_table_matches_the_csv(demo_dir):
    rows = list(csv.DictReader(open(demo_dir / 'summary.csv')))
    md = (demo_dir / 'summary.md').read_text()
    assert [r['mode'] for r in rows] == ['momentum_distribution', 'gjm']
    for r in rows:
        line = next(x for x in md.splitlines() if x.startswith(f'| {r["mode"]} |'))
        cells = [c.strip() for c in line.strip('|').split('|')]
        assert float(cells[1]) == pytest.approx(float(r['capture_time_s']), abs=0.005)
        assert float(cells[5]) == pytest.approx(
            float(r['attitude_change_after_capture_deg']), abs=5e-5
        )
    by = {r['mode']: r for r in rows}
    ratio = float(by['gjm']['attitude_change_after_capture_deg']) / float(
        by['momentum_distribution']['attitude_change_after_capture_deg']
    )
    assert f'gjm / momentum distribution: {ratio:.2f}' in md
