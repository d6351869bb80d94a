"""The headless demo (``ffsim demo --short``) end to end, and its recorder on its own."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
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
        stamps, status_times = [], []
        with open(out / f'{mode}.mcap', 'rb') as stream:
            reader = make_reader(stream, decoder_factories=[DecoderFactory()])
            for _, channel, message, msg in reader.iter_decoded_messages():
                counts[channel.topic] = counts.get(channel.topic, 0) + 1
                if channel.topic == '/joint_states':
                    stamps.append(msg.header.stamp.sec + msg.header.stamp.nanosec * 1e-9)
                elif channel.topic == '/status':  # logged at the simulated time of receipt
                    status_times.append(message.log_time * 1e-9)
                elif channel.topic == '/ee_goal':
                    goal_time = message.log_time * 1e-9
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
            '/ee_path',
            '/goal_status',
            '/diagnostics',
        }
        assert expected <= set(counts)
        assert not (out / f'{mode}.mcap.part').exists()
        # joint_states at 100 Hz of sim time: count within 10 % of the recorded sim span
        span = stamps[-1] - stamps[0]
        assert span >= 5.9  # at least the 6 s of sim time after the goal
        assert abs(counts['/joint_states'] - 100 * span) <= 0.1 * 100 * span
        assert np.all(np.diff(stamps) > 0)
        assert counts['/ee_goal'] == 1 and counts['/robot_description'] == 1
        # the controller ran all along from the goal on: its status covers the run without a
        # gap of 0.5 s of simulated time (a rate ratio would depend on the machine's load,
        # this does not unless the controller stalls)
        after = np.array([t for t in status_times if t >= goal_time])
        assert after[0] - goal_time < 0.5 and stamps[-1] - after[-1] < 0.5
        assert np.max(np.diff(after)) < 0.5


def test_domain_leases_are_private_and_never_follow_links(tmp_path: Path, monkeypatch) -> None:
    """The lock folder is the user's own (0700; refused when others can write to it or it is
    a symlink); a lock file planted as a symlink is not followed (O_NOFOLLOW), an existing
    one is not truncated; a held id is not handed out twice; the tests' fixture
    (conftest.reserve_domain_id) uses the same folder."""
    import errno
    import os
    import stat
    import tempfile

    import conftest

    from ffsim_ros import cli

    real = cli.lock_directory()
    assert real.name in ('ros_domain_id_locks', f'ros_domain_id_locks-{os.getuid()}')
    assert stat.S_IMODE(os.stat(real).st_mode) & 0o022 == 0  # nobody else can write in it
    lease = conftest.reserve_domain_id()  # the tests reserve through the same folder
    try:
        assert (real / f'{lease.domain_id}.lock').is_file()
    finally:
        lease.release()

    monkeypatch.setattr(tempfile, 'gettempdir', lambda: str(tmp_path))
    folder = cli.lock_directory()
    assert folder.parent == tmp_path and stat.S_IMODE(os.stat(folder).st_mode) == 0o700
    victim = tmp_path / 'victim'
    victim.write_text('precious')
    (folder / '200.lock').symlink_to(victim)
    with pytest.raises(OSError) as info:
        cli.DomainLease([200])
    assert info.value.errno == errno.ELOOP and victim.read_text() == 'precious'
    (folder / '201.lock').write_text('kept')
    first = cli.DomainLease([201])
    assert first.domain_id == 201 and (folder / '201.lock').read_text() == 'kept'
    with pytest.raises(RuntimeError, match='no free ROS_DOMAIN_ID'):
        cli.DomainLease([201])  # held
    first.close()
    second = cli.DomainLease([201])  # released: free again
    second.close()
    assert folder.name == 'ros_domain_id_locks'  # the shared folder, when it is safe
    os.chmod(folder, 0o777)  # writable by others: the private folder instead
    private = cli.lock_directory()
    assert private.name == f'ros_domain_id_locks-{os.getuid()}'
    assert stat.S_IMODE(os.stat(private).st_mode) == 0o700
    os.chmod(private, 0o777)
    with pytest.raises(RuntimeError, match='writable by it alone'):
        cli.lock_directory()
    os.chmod(private, 0o700)
    os.rename(private, tmp_path / 'elsewhere')
    private.symlink_to(tmp_path / 'elsewhere')
    with pytest.raises(RuntimeError, match='expected a directory owned by uid'):
        cli.lock_directory()


def test_demo_refuses_a_closed_chain_robot(tmp_path: Path, capsys) -> None:
    """The demo drives the reactionless controller, which takes trees: a robot with loop
    closures is refused at once (exit 2, saying why), before any process starts."""
    from ffsim_ros.cli import main

    assert main(['demo', '--robot', 'floating_platform', '--output', str(tmp_path)]) == 2
    assert 'expected a tree' in capsys.readouterr().err
    assert not any(tmp_path.iterdir())  # nothing started, nothing written


def _write_mcap(path: Path, text: str) -> None:
    """A small finished MCAP file with one ``/old`` message ``text``."""
    from std_msgs.msg import String

    from ffsim_ros.recording import McapFile

    with McapFile(path) as out:
        out.write_message(out.channel('/old', String), 1, String(data=text))


def _read_mcap(path: Path) -> tuple[list[str], list[int]]:
    """Topics and log times of the messages of ``path`` in file order, read with the summary
    and CRCs checked (the seeking reader reads the footer first)."""
    from mcap.reader import make_reader

    topics, times = [], []
    with open(path, 'rb') as stream:
        reader = make_reader(stream, validate_crcs=True)
        assert reader.get_summary() is not None
        for _, channel, message in reader.iter_messages(log_time_order=False):
            topics.append(channel.topic)
            times.append(message.log_time)
    return topics, times


def test_mcap_file_replaces_an_earlier_file_only_when_finished(tmp_path: Path) -> None:
    """McapFile writes <name>.part and renames it over <name> when closed: until then an
    earlier file is untouched (a process killed meanwhile leaves it), and no half file is ever
    under the name."""
    from std_msgs.msg import String

    from ffsim_ros.recording import McapFile, partial_path

    path = tmp_path / 'run.mcap'
    _write_mcap(path, 'earlier')
    earlier = path.read_bytes()
    assert not partial_path(path).exists()
    new = McapFile(path)
    channel = new.channel('/new', String)
    for k in range(3000):  # 3 MB that do not compress much: chunks written (1 MB each)
        new.write_message(channel, k, String(data=os.urandom(500).hex()))
    new._file.flush()
    assert partial_path(path).stat().st_size > 500_000  # written, not finished
    assert path.read_bytes() == earlier  # (what a SIGKILL now would leave)
    new.close()
    new.close()  # idempotent
    assert not partial_path(path).exists()
    topics, times = _read_mcap(path)
    assert topics == ['/new'] * 3000 and times == list(range(3000))


def _session(sid: int) -> list[int]:
    """Live (not zombie) processes of the session ``sid``."""
    pids = []
    for entry in Path('/proc').iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / 'stat').read_text().rsplit(')', 1)[1].split()
        except OSError:
            continue  # gone meanwhile
        if int(fields[3]) == sid and fields[0] != 'Z':
            pids.append(int(entry.name))
    return pids


def test_a_killed_demo_leaves_no_node_and_no_file_under_its_name(
    tmp_path: Path, ros_env: dict[str, str]
) -> None:
    """SIGKILL to the demo alone (no clean-up runs): its nodes get SIGTERM from the kernel
    (PR_SET_PDEATHSIG) and end -- they kept running on the domain id the demo released --, and
    the earlier recording stays under the mode's name (the new one only as .part)."""
    out = tmp_path / 'demo'
    out.mkdir()
    _write_mcap(out / 'reactionless.mcap', 'earlier')
    earlier = (out / 'reactionless.mcap').read_bytes()
    argv = ['demo', '--short', '--seconds-per-goal', '60', '--output', str(out)]
    stdout = tmp_path / 'stdout'
    with open(stdout, 'w') as o:
        proc = subprocess.Popen(
            [sys.executable, '-m', 'ffsim_ros.cli', *argv],
            env=ros_env,
            stdout=o,
            stderr=subprocess.STDOUT,
            cwd=ROOT,
            start_new_session=True,
        )
    try:
        deadline = time.monotonic() + 180
        while not (out / 'reactionless.mcap.part').exists() or len(_session(proc.pid)) < 3:
            assert proc.poll() is None, stdout.read_text()[-3000:]
            assert time.monotonic() < deadline, 'the demo did not start its nodes in 180 s'
            time.sleep(0.1)
        proc.kill()
        proc.wait(timeout=10)
        deadline = time.monotonic() + 60
        while _session(proc.pid):  # the nodes end on their own (clean shutdown on SIGTERM)
            assert time.monotonic() < deadline, f'nodes left running: {_session(proc.pid)}'
            time.sleep(0.1)
    finally:
        if _session(proc.pid):
            os.killpg(proc.pid, signal.SIGKILL)
    assert (out / 'reactionless.mcap').read_bytes() == earlier


@pytest.mark.parametrize(('signum', 'code'), [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_sigterm_finishes_the_recording_and_stops_the_nodes(
    tmp_path: Path, ros_env: dict[str, str], signum: signal.Signals, code: int
) -> None:
    """SIGTERM during the first mode (what `timeout` sends): exit 143 with one line (Ctrl-C,
    SIGINT to the demo alone: the same, exit 130), the mode's
    MCAP finished under its name (readable, log times monotonic in file order), no .part left,
    no node left running, and the earlier recording of the mode not reached kept as it was."""
    out = tmp_path / 'demo'
    out.mkdir()
    _write_mcap(out / 'reactionless.mcap', 'earlier')
    _write_mcap(out / 'gjm_tracking.mcap', 'earlier')
    earlier = (out / 'gjm_tracking.mcap').read_bytes()
    argv = ['demo', '--short', '--seconds-per-goal', '60', '--output', str(out)]
    stdout, stderr = tmp_path / 'stdout', tmp_path / 'stderr'
    with open(stdout, 'w') as o, open(stderr, 'w') as e:
        proc = subprocess.Popen(
            [sys.executable, '-m', 'ffsim_ros.cli', *argv],
            env=ros_env,
            stdout=o,
            stderr=e,
            cwd=ROOT,
            start_new_session=True,  # its session: the demo and the nodes it starts
        )
    try:
        deadline = time.monotonic() + 180
        while not (
            stdout.read_text().count('goal 1/1') >= 2  # (a progress line a second)
            and (out / 'reactionless.mcap.part').exists()
        ):  # the first mode runs, its goal sent, recording
            assert proc.poll() is None, stderr.read_text()[-3000:]
            assert time.monotonic() < deadline, 'the demo did not reach its goal in 180 s'
            time.sleep(0.1)
        assert len(_session(proc.pid)) >= 3  # the demo, the simulator, the controller
        proc.send_signal(signum)
        assert proc.wait(timeout=60) == code
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    err = stderr.read_text()
    assert 'Traceback' not in err
    assert f'ffsim demo: stopped by {signum.name}' in err and 'reactionless.mcap' in err
    assert _session(proc.pid) == []  # no orphaned node
    assert not list(out.glob('*.part'))
    topics, times = _read_mcap(out / 'reactionless.mcap')
    assert '/old' not in topics and topics.count('/ee_goal') == 1
    assert '/joint_states' in topics and '/goal_status' in topics
    assert all(b >= a for a, b in zip(times, times[1:], strict=False)) and times[-1] > 0
    assert (out / 'gjm_tracking.mcap').read_bytes() == earlier  # never started: kept
    assert not (out / 'summary.csv').exists()
