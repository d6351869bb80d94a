"""``ffsim`` command line: ``ffsim demo`` runs the headless demo (what ``make demo`` runs).

The demo starts the simulator and the reactionless controller as separate ROS 2 processes
(real DDS, confined to localhost on a domain id of its own), drives the end effector through
a scripted sequence of goals once in ``reactionless`` and once in ``gjm_tracking`` mode,
records the nodes' topics to MCAP (one file per mode, :data:`RECORDED_TOPICS`), and writes PNG
plots and a summary table comparing the two modes. ``ffsim demo --scenario capture`` runs the
capture of a tumbling target instead (:mod:`ffsim_ros.capture_demo`).

Ctrl-C (SIGINT) or SIGTERM stops the reach demo at its next check (within about 50 ms while a
mode runs): the recording of the mode under way is finished (a readable MCAP of what was
recorded), the nodes are stopped, one line says so on stderr, and the exit status is 130
(SIGINT) or 143 (SIGTERM); no summary or plots are written then.
"""

from __future__ import annotations

import argparse
import csv
import fcntl
import importlib
import os
import random
import signal
import stat
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING

import numpy as np

from ffsim_ros.dependencies import require

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from ffsim_ros.node_support.common import ShutdownSignals
    from ffsim_ros.recording import McapRecorder

GOAL_OFFSETS = (  # end-effector goals relative to the start position, world frame [m]
    (0.10, 0.20, -0.20),
    (-0.05, -0.15, 0.10),
    (0.0, 0.0, 0.0),
)
MODES = ('reactionless', 'gjm_tracking')
REACHED = 5e-3  # m
#: ``--robot`` of the reach demo when not given.
DEFAULT_ROBOT = 'ffsim_servicer_7dof'
#: Topics the reach demo records (name -> ``pkg/msg/Type``): all the simulator and the
#: controller publish, and ``/rosout`` (their log). Latched ones are subscribed transient-local.
RECORDED_TOPICS = {
    '/joint_states': 'sensor_msgs/msg/JointState',
    '/base_odom': 'nav_msgs/msg/Odometry',
    '/tf': 'tf2_msgs/msg/TFMessage',
    '/momentum': 'std_msgs/msg/Float64MultiArray',
    '/markers': 'visualization_msgs/msg/MarkerArray',
    '/clock': 'rosgraph_msgs/msg/Clock',
    '/robot_description': 'std_msgs/msg/String',
    '/diagnostics': 'diagnostic_msgs/msg/DiagnosticArray',
    '/ee_goal': 'geometry_msgs/msg/PoseStamped',
    '/ee_pose': 'geometry_msgs/msg/PoseStamped',
    '/ee_path': 'nav_msgs/msg/Path',
    '/goal_status': 'diagnostic_msgs/msg/DiagnosticStatus',
    '/status': 'std_msgs/msg/Float64MultiArray',
    '/joint_effort_commands': 'std_msgs/msg/Float64MultiArray',
    '/rosout': 'rcl_interfaces/msg/Log',
}
#: Of :data:`RECORDED_TOPICS`, those subscribed transient-local (their last messages kept).
LATCHED_TOPICS = frozenset({'/robot_description', '/goal_status'})


class Interrupted(Exception):
    """The demo was asked to stop by a signal (SIGINT or SIGTERM), found at a check.

    Parameters
    ----------
    signum : int
        The signal's number.
    """

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum
        #: The MCAP files finished before the demo stopped (comma-separated), if known.
        self.recorded = ''


def check_signals(signals: ShutdownSignals | None) -> None:
    """Raise :class:`Interrupted` if ``signals`` (a handler that only records, see
    :func:`demo`) received a shutdown signal.

    Raises
    ------
    Interrupted
        A signal came.
    """
    if signals is not None and signals.received is not None:
        raise Interrupted(signals.received)


def _message_class(type_name: str) -> type:
    pkg, _, name = type_name.split('/')
    return getattr(importlib.import_module(f'{pkg}.msg'), name)


# ---------------------------------------------------------------------------------- domain id
def lock_directory() -> Path:
    """The folder of the domain-id lock files.

    ``<tmp>/ros_domain_id_locks``, the folder ROS test suites on this machine reserve their
    ids through, when it is safe: a real directory (not a symlink) owned by this user and
    writable by it alone (created so, mode 0700, when missing). Otherwise a private one,
    ``<tmp>/ros_domain_id_locks-<uid>``, with the same checks. No other user can then plant or
    replace a lock file. The demo, the benchmarks and the tests (``test/conftest.py``) reserve
    their ids through it, so they never share a domain.

    Raises
    ------
    RuntimeError
        Neither folder is a private directory of this user.
    """
    base = Path(tempfile.gettempdir())
    problems = []
    for path in (base / 'ros_domain_id_locks', base / f'ros_domain_id_locks-{os.getuid()}'):
        try:
            os.mkdir(path, 0o700)
        except FileExistsError:
            pass
        info = os.lstat(path)
        if (
            stat.S_ISDIR(info.st_mode)
            and info.st_uid == os.getuid()
            and not info.st_mode & (stat.S_IWGRP | stat.S_IWOTH)
        ):
            return path
        problems.append(f'{path}: mode {stat.filemode(info.st_mode)} owned by uid {info.st_uid}')
    raise RuntimeError(
        f'no lock folder: expected a directory owned by uid {os.getuid()} and writable by it '
        f'alone, got {"; ".join(problems)}'
    )


def open_lock(path: Path) -> int:
    """File descriptor of the lock file ``path``: created if missing (mode 0600), never
    truncated, never opened through a symlink (``O_NOFOLLOW``), not inherited by children."""
    flags = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC
    return os.open(path, flags, 0o600)


class DomainLease:
    """An exclusive ROS_DOMAIN_ID held by an ``flock`` on its file in :func:`lock_directory`
    (released on :meth:`close`, or when the process ends).

    Parameters
    ----------
    ids : sequence of int
        Ids to try, in a random order (default 60-101; the tests use 1-101 through the same
        folder).
    """

    def __init__(self, ids: range | list[int] = range(60, 102)) -> None:
        folder = lock_directory()
        order = list(ids)
        random.shuffle(order)
        for domain in order:
            fd = open_lock(folder / f'{domain}.lock')
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                os.close(fd)
                continue
            self.domain_id, self._fd = domain, fd
            return
        raise RuntimeError(f'no free ROS_DOMAIN_ID among {sorted(order)}')

    def close(self) -> None:
        """Release the id (idempotent)."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def ros_environment(domain_id: int, log_dir: Path) -> dict[str, str]:
    """Environment for child ROS processes: localhost only, own domain, logs in ``log_dir``.

    Parameters
    ----------
    domain_id : int
    log_dir : Path

    Returns
    -------
    dict
        A copy of ``os.environ`` with the ROS variables set.
    """
    env = dict(os.environ)
    env.pop('_ROS_WHEELS_BOOTSTRAP_COMPLETE', None)
    env.update(
        ROS_AUTOMATIC_DISCOVERY_RANGE='LOCALHOST',
        ROS_DOMAIN_ID=str(domain_id),
        ROS_LOG_DIR=str(log_dir),
    )
    return env


def terminate_with_parent() -> None:
    """In a child process before it runs (``preexec_fn``): ask Linux to send it SIGTERM when
    the process that started it dies, so a demo killed outright (SIGKILL, no clean-up) leaves
    no node running on the domain id it released. Elsewhere: nothing."""
    if not sys.platform.startswith('linux'):
        return
    import ctypes

    pr_set_pdeathsig = 1
    ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, signal.SIGTERM)


def stop_processes(procs: list[subprocess.Popen], timeout: float = 10.0) -> None:
    """SIGINT every running process (ROS nodes shut down cleanly), then SIGKILL stragglers.

    Parameters
    ----------
    procs : list of Popen
    timeout : float
        Wait for each process after SIGINT, before SIGKILL [s].
    """
    for p in procs:
        if p.poll() is None:
            p.send_signal(signal.SIGINT)
    for p in procs:
        try:
            p.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


# ------------------------------------------------------------------------------------- run
@dataclass
class ModeRun:
    """What one mode's run produced (in-memory copies of the recorded topics)."""

    mode: str
    mcap: Path
    counts: dict[str, int]
    t: np.ndarray  # (k,) sim time of base_odom samples [s]
    attitude_deg: np.ndarray  # (k,) base rotation from the start [deg]
    base_rate: np.ndarray  # (k,) |w0| [rad/s]
    t_mom: np.ndarray
    momentum: np.ndarray  # (m, 9) [P, L_g, r_g]
    t_ee: np.ndarray
    ee: np.ndarray  # (j, 3) end-effector position
    goal_of_t: np.ndarray  # (j, 3) active goal at each ee sample
    t_js: np.ndarray
    effort: np.ndarray  # (i, n) applied joint efforts
    goal_times: list[float]


def run_mode(
    mode: str,
    out: Path,
    env: dict[str, str],
    robot: str,
    seconds_per_goal: float,
    goals: tuple,
    rtf: float,
    progress: bool = True,
    signals: ShutdownSignals | None = None,
    finished: list[Path] | None = None,
) -> ModeRun:
    """Run simulator + controller in ``mode`` and record; returns the in-memory series.

    Whatever ends the run, its nodes are stopped (SIGINT, SIGKILL after 10 s) before this
    returns or raises.

    Parameters
    ----------
    mode : str, one of :data:`MODES`.
    out : Path, output folder.
    env : dict, environment of the nodes (:func:`ros_environment`).
    robot : str, a sample robot name or a ``.urdf`` path.
    seconds_per_goal : float, simulated time per goal [s].
    goals : tuple of (3,) end-effector goals from the start position, world frame [m].
    rtf : float, the simulator's ``real_time_factor``.
    progress : bool, print progress lines.
    signals : ShutdownSignals, optional, checked between steps (:func:`check_signals`): a
        signal received ends the run with :class:`Interrupted` (recording finished).
    finished : list of Path, optional, the MCAP file is appended once finished.
    """
    import rclpy
    from geometry_msgs.msg import PoseStamped

    from ffsim_ros.launch_support import sample_config
    from ffsim_ros.recording import McapRecorder
    from ffsim_ros.resources import sample_robot

    robot_path = robot if robot.endswith('.urdf') else str(sample_robot(robot))
    sample = sample_config(robot)  # e.g. planar_2link's non-singular initial pose
    log = out / 'logs'
    log.mkdir(parents=True, exist_ok=True)
    procs: list[tuple[subprocess.Popen, IO[str]]] = []
    context = rclpy.Context()
    node = executor = rec = None
    mcap_path = out / f'{mode}.mcap'
    goal_times: list[float] = []
    active: list[tuple[float, np.ndarray]] = []
    try:
        _start_nodes(procs, mode, log, env, robot_path, sample, rtf, signals)
        rclpy.init(args=[], context=context, domain_id=int(env['ROS_DOMAIN_ID']))
        # (no parameters to serve: no parameter services another process could feed a
        # malformed request that rclpy's own callback raises on)
        node = rclpy.create_node(
            'ffsim_demo_recorder', context=context, start_parameter_services=False
        )
        executor = rclpy.executors.SingleThreadedExecutor(context=context)
        executor.add_node(node)
        topics = {name: _message_class(kind) for name, kind in RECORDED_TOPICS.items()}
        rec = McapRecorder(
            node,
            mcap_path,
            topics,
            keep={'/base_odom', '/momentum', '/ee_pose', '/joint_states'},
            latched=set(LATCHED_TOPICS),
        )
        goal_pub = node.create_publisher(PoseStamped, '/ee_goal', 10)
        _drive(
            mode,
            rec,
            executor,
            goal_pub,
            procs,
            log,
            seconds_per_goal,
            goals,
            progress,
            signals,
            goal_times,
            active,
        )
    finally:
        try:
            if rec is not None:
                rec.close()  # first: the recording is finished whatever comes next
                if finished is not None:
                    finished.append(mcap_path)
        finally:
            stop_processes([p for p, _ in procs])
            for _, stream in procs:
                stream.close()
            if node is not None:
                node.destroy_node()
            if executor is not None:
                executor.shutdown()
            context.try_shutdown()
    return _series(mode, mcap_path, rec, goal_times, active)


def _start_nodes(
    procs: list[tuple[subprocess.Popen, IO[str]]],
    mode: str,
    log: Path,
    env: dict[str, str],
    robot_path: str,
    sample: Path | None,
    rtf: float,
    signals: ShutdownSignals | None,
) -> None:
    """Start the simulator and the controller, appending each (process, log stream) to
    ``procs`` as soon as it runs (the caller stops them)."""
    for module, args in (
        (
            'ffsim_ros.simulator',
            [
                *(['--params-file', str(sample)] if sample else []),
                '-p',
                f'robot_file:={robot_path}',
                '-p',
                f'real_time_factor:={rtf}',
            ],
        ),
        (
            'ffsim_ros.reactionless_controller',
            ['-p', f'robot_file:={robot_path}', '-p', f'mode:={mode}', '-p', 'use_sim_time:=true'],
        ),
    ):
        check_signals(signals)
        stream = open(log / f'{mode}_{module.split(".")[-1]}.log', 'w')  # noqa: SIM115
        try:
            proc = subprocess.Popen(
                [sys.executable, '-m', module, '--ros-args', *args],
                env=env,
                stdout=stream,
                stderr=subprocess.STDOUT,
                preexec_fn=terminate_with_parent,  # noqa: PLW1509 - before rclpy's threads
            )
        except BaseException:
            stream.close()
            raise
        procs.append((proc, stream))


def _drive(
    mode: str,
    rec: McapRecorder,
    executor: object,
    goal_pub: object,
    procs: list[tuple[subprocess.Popen, IO[str]]],
    log: Path,
    seconds_per_goal: float,
    goals: tuple,
    progress: bool,
    signals: ShutdownSignals | None,
    goal_times: list[float],
    active: list[tuple[float, np.ndarray]],
) -> None:
    """Wait for the nodes, then publish each goal and spin for ``seconds_per_goal`` of sim
    time; ``goal_times`` and ``active`` are filled in as the goals go out. A signal is checked
    for before a node's exit (a terminal Ctrl-C stops the nodes too)."""
    from geometry_msgs.msg import PoseStamped

    deadline = time.monotonic() + 120
    while not (
        rec.messages['/ee_pose']
        and rec.messages['/base_odom']
        and rec.sim_time_ns is not None  # goal times are read from /clock
        and goal_pub.get_subscription_count() > 0
        and rec.subscriptions[0].get_publisher_count() > 0
    ):
        executor.spin_once(timeout_sec=0.05)
        check_signals(signals)
        for p, _ in procs:
            if p.poll() is not None:
                raise RuntimeError(f'{mode}: a node exited early (see {log})')
        if time.monotonic() > deadline:
            raise RuntimeError(f'{mode}: nodes not discovered within 120 s (see {log})')
    pose = rec.messages['/ee_pose'][-1][1].pose.position
    start = np.array([pose.x, pose.y, pose.z])

    def sim_now() -> float:
        return (rec.sim_time_ns or 0) * 1e-9

    for k, offset in enumerate(goals):
        goal = start + np.asarray(offset)
        msg = PoseStamped()
        msg.header.frame_id = 'world'
        msg.header.stamp.sec, msg.header.stamp.nanosec = divmod(rec.sim_time_ns or 0, 10**9)
        msg.pose.position.x, msg.pose.position.y, msg.pose.position.z = goal.tolist()
        msg.pose.orientation.w = 1.0
        goal_pub.publish(msg)
        t_goal = sim_now()
        goal_times.append(t_goal)
        active.append((t_goal, goal))
        last_print = 0.0
        while sim_now() < t_goal + seconds_per_goal:
            executor.spin_once(timeout_sec=0.05)
            check_signals(signals)
            if progress and time.monotonic() - last_print > 1.0:
                last_print = time.monotonic()
                err = np.nan
                if rec.messages['/ee_pose']:
                    p = rec.messages['/ee_pose'][-1][1].pose.position
                    err = np.linalg.norm(np.array([p.x, p.y, p.z]) - goal)
                print(
                    f'  [{mode:>12}] goal {k + 1}/{len(goals)}  sim t = {sim_now():6.2f} s'
                    f'  ee error = {err * 1e3:7.2f} mm',
                    flush=True,
                )
            if any(p.poll() is not None for p, _ in procs):
                raise RuntimeError(f'{mode}: a node exited during the run (see {log})')


def _series(
    mode: str,
    mcap_path: Path,
    rec: McapRecorder,
    goal_times: list[float],
    active: list[tuple[float, np.ndarray]],
) -> ModeRun:
    from ffsim_ros.dynamics.lie import quat_angle  # the rotation math, loaded with the results

    odom = rec.messages['/base_odom']
    q0 = None
    t, att, rate = [], [], []
    for _, m in odom:
        o = m.pose.pose.orientation
        quat = np.array([o.x, o.y, o.z, o.w])
        q0 = quat if q0 is None else q0
        t.append(m.header.stamp.sec + m.header.stamp.nanosec * 1e-9)
        att.append(float(np.degrees(quat_angle(q0, quat))))
        a = m.twist.twist.angular
        rate.append(float(np.linalg.norm([a.x, a.y, a.z])))
    mom = rec.messages['/momentum']
    ee = rec.messages['/ee_pose']
    t_ee = np.array([m.header.stamp.sec + m.header.stamp.nanosec * 1e-9 for _, m in ee])
    pos = np.array([[m.pose.position.x, m.pose.position.y, m.pose.position.z] for _, m in ee])
    goal_of_t = np.full_like(pos, np.nan)
    for t_goal, goal in active:
        goal_of_t[t_ee >= t_goal] = goal
    js = rec.messages['/joint_states']
    return ModeRun(
        mode=mode,
        mcap=mcap_path,
        counts=dict(rec.counts),
        t=np.array(t),
        attitude_deg=np.array(att),
        base_rate=np.array(rate),
        t_mom=np.array([ts * 1e-9 for ts, _ in mom]),
        momentum=np.array([m.data for _, m in mom]),
        t_ee=t_ee,
        ee=pos,
        goal_of_t=goal_of_t,
        t_js=np.array([m.header.stamp.sec + m.header.stamp.nanosec * 1e-9 for _, m in js]),
        effort=np.array([m.effort for _, m in js]),
        goal_times=goal_times,
    )


# --------------------------------------------------------------------------------- summary
def summarize(run: ModeRun) -> dict[str, float]:
    """Per-mode figures: reach times, final error, max attitude change, max |momentum|."""
    err = np.linalg.norm(run.ee - run.goal_of_t, axis=1)
    reach = []
    bounds = [*run.goal_times[1:], np.inf]
    for t_goal, t_next in zip(run.goal_times, bounds, strict=True):
        sel = (run.t_ee >= t_goal) & (run.t_ee < t_next) & (err < REACHED)
        reach.append(float(run.t_ee[sel][0] - t_goal) if np.any(sel) else float('nan'))
    final = float(err[np.isfinite(err)][-1]) if np.any(np.isfinite(err)) else float('nan')
    return {
        'mode': run.mode,
        'max_reach_time_s': float(np.nanmax(reach))
        if np.any(np.isfinite(reach))
        else float('nan'),
        'goals_reached': int(np.sum(np.isfinite(reach))),
        'goals': len(run.goal_times),
        'final_error_mm': final * 1e3,
        'max_base_attitude_deg': float(run.attitude_deg.max()),
        'max_base_rate_deg_s': float(np.degrees(run.base_rate.max())),
        'max_abs_momentum': float(np.abs(run.momentum[:, :6]).max()),
    }


def write_summary(rows: list[dict], out: Path) -> str:
    """Write the per-mode figures as ``out/summary.csv`` and ``out/summary.md``.

    Parameters
    ----------
    rows : list of dict
        One :func:`summarize` dict per mode (the CSV columns: the keys of the first):
        ``mode``, ``max_reach_time_s`` [s], ``goals_reached``, ``goals``, ``final_error_mm``
        [mm], ``max_base_attitude_deg`` [deg], ``max_base_rate_deg_s`` [deg/s] and
        ``max_abs_momentum`` (largest component of ``[P; L_g]``, [kg m/s] and [N m s]).
    out : Path
        Existing output folder.

    Returns
    -------
    str
        The Markdown table written to ``summary.md``.
    """
    keys = list(rows[0])
    with open(out / 'summary.csv', 'w', newline='') as handle:
        writer = csv.DictWriter(handle, fieldnames=keys)
        writer.writeheader()
        writer.writerows(rows)
    header = (
        '| mode | goals reached | slowest reach [s] | final error [mm] | max base attitude '
        'change [deg] | max base rate [deg/s] | max abs momentum |'
    )
    lines = [header, '|---|---|---|---|---|---|---|']
    for r in rows:
        lines.append(
            f'| {r["mode"]} | {r["goals_reached"]}/{r["goals"]} | {r["max_reach_time_s"]:.2f} | '
            f'{r["final_error_mm"]:.3f} | {r["max_base_attitude_deg"]:.4f} | '
            f'{r["max_base_rate_deg_s"]:.4f} | {r["max_abs_momentum"]:.1e} |'
        )
    table = '\n'.join(lines) + '\n'
    (out / 'summary.md').write_text(table)
    return table


def plot(runs: list[ModeRun], out: Path) -> list[Path]:
    """Write the comparison plots; returns their paths."""
    import matplotlib

    matplotlib.use('Agg')
    import matplotlib.pyplot as plt

    colors = {'reactionless': 'tab:green', 'gjm_tracking': 'tab:red'}
    paths = []

    def save(fig: Figure, name: str) -> None:
        fig.tight_layout()
        path = out / name
        fig.savefig(path, dpi=90)
        plt.close(fig)
        paths.append(path)

    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 4))
    for r in runs:
        ax1.plot(r.ee[:, 1], r.ee[:, 2], color=colors[r.mode], label=r.mode)
        goals = np.unique(r.goal_of_t[np.isfinite(r.goal_of_t[:, 0])], axis=0)
        ax1.plot(goals[:, 1], goals[:, 2], 'kx', ms=9)
        err = np.linalg.norm(r.ee - r.goal_of_t, axis=1) * 1e3
        ax2.semilogy(r.t_ee - r.t_ee[0], np.maximum(err, 1e-4), color=colors[r.mode], label=r.mode)
    ax1.set(xlabel='y [m]', ylabel='z [m]', title='end-effector path (goals x)')
    ax1.axis('equal')
    ax1.legend()
    ax2.axhline(REACHED * 1e3, color='gray', ls='--', lw=0.8)
    ax2.set(xlabel='sim time [s]', ylabel='error [mm]', title='end-effector error')
    save(fig, 'ee_tracking.png')

    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 4))
    for r in runs:
        ax1.plot(r.t - r.t[0], r.attitude_deg, color=colors[r.mode], label=r.mode)
        ax2.plot(r.t - r.t[0], np.degrees(r.base_rate), color=colors[r.mode], label=r.mode)
    ax1.set(xlabel='sim time [s]', ylabel='[deg]', title='base attitude change')
    ax2.set(xlabel='sim time [s]', ylabel='[deg/s]', title='base angular rate')
    ax1.legend()
    save(fig, 'base_attitude.png')

    fig, ax = plt.subplots(figsize=(6, 4))
    for r in runs:
        mag = np.linalg.norm(r.momentum[:, :6], axis=1)
        ax.semilogy(
            r.t_mom - r.t_mom[0], np.maximum(mag, 1e-18), color=colors[r.mode], label=r.mode
        )
    ax.set(xlabel='sim time [s]', ylabel='|[P; L_g]|', title='total momentum (zero at start)')
    ax.legend()
    save(fig, 'momentum.png')

    fig, axes = plt.subplots(1, len(runs), figsize=(5 * len(runs), 4), sharey=True)
    for ax, r in zip(np.atleast_1d(axes), runs, strict=True):
        ax.plot(r.t_js - r.t_js[0], r.effort)
        ax.set(xlabel='sim time [s]', title=f'joint efforts ({r.mode})')
    np.atleast_1d(axes)[0].set_ylabel('[N m]')
    save(fig, 'joint_torques.png')
    return paths


# ------------------------------------------------------------------------------------ demo
def demo(args: argparse.Namespace) -> int:
    """Run the demo of ``args`` (checked by :func:`check_demo_arguments`); the exit status.

    Returns
    -------
    int
        0 when done; 2 for a robot with loop closures; 130 (SIGINT, Ctrl-C) or 143 (SIGTERM)
        when the reach demo was stopped by that signal (module docstring): SIGINT and SIGTERM
        are only recorded by the handler (:class:`~ffsim_ros.node_support.common.
        ShutdownSignals`, never raising) and taken at the next :func:`check_signals`, so the
        recording is finished and the nodes stopped; later ones are ignored.
    """
    if args.scenario == 'capture':  # in-process closed loop, no DDS (ffsim_ros.capture_demo)
        from ffsim_ros.capture_demo import run_demo

        return run_demo(Path(args.output), short=args.short)
    from ffsim_ros.launch_support import has_loops

    if has_loops(args.robot_text):
        print(
            f'ffsim demo: --robot expected a tree, got {args.robot!r} with loop closures (URDF+ '
            '<loop>): the demo drives the reactionless controller, which takes trees; simulate '
            'it with `ros2 launch ffsim_ros ffsim.launch.py robot:=...` or the simulator node',
            file=sys.stderr,
        )
        return 2
    from ffsim_ros.node_support.common import ShutdownSignals

    signals = ShutdownSignals()
    signals.raising = False  # recorded, taken at the next check
    signals.install()
    try:
        return _reach_demo(args, signals)
    except Interrupted as exc:
        print(
            f'ffsim demo: stopped by {signal.Signals(exc.signum).name}: the recordings so far '
            f'are finished ({exc.recorded or "none"}), the nodes stopped; no summary or plots',
            file=sys.stderr,
            flush=True,
        )
        return 128 + exc.signum
    finally:
        signals.release()


def _reach_demo(args: argparse.Namespace, signals: ShutdownSignals) -> int:
    """The reach scenario of :func:`demo`, checking ``signals`` between steps."""
    out = Path(args.output).resolve()
    out.mkdir(parents=True, exist_ok=True)
    lease = DomainLease()
    env = ros_environment(lease.domain_id, out / 'logs')
    # this process records too: the same isolation must hold before rclpy starts
    os.environ.update(
        ROS_AUTOMATIC_DISCOVERY_RANGE='LOCALHOST',
        ROS_DOMAIN_ID=str(lease.domain_id),
        ROS_LOG_DIR=str(out / 'logs'),
    )
    goals = GOAL_OFFSETS[:1] if args.short else GOAL_OFFSETS
    seconds = args.seconds_per_goal or (6.0 if args.short else 8.0)  # (None: the default)
    print(
        f'ffsim demo: {args.robot}, {len(goals)} goal(s) x {seconds:g} s of sim time per mode, '
        f'real-time factor {args.rtf:g}, ROS_DOMAIN_ID {lease.domain_id} (localhost only)',
        flush=True,
    )
    t0 = time.monotonic()
    finished: list[Path] = []  # MCAP files finished
    try:
        runs = []
        for mode in MODES:
            check_signals(signals)
            run = run_mode(
                mode, out, env, args.robot, seconds, goals, args.rtf, True, signals, finished
            )
            runs.append(run)
        check_signals(signals)
    except Interrupted as exc:
        exc.recorded = ', '.join(str(path) for path in finished)
        raise
    finally:
        lease.close()
    rows = [summarize(r) for r in runs]
    table = write_summary(rows, out)
    paths = plot(runs, out)
    print('\n' + table)
    for r in runs:
        print(f'recorded {r.mcap} ({sum(r.counts.values())} messages on {len(r.counts)} topics)')
    print('plots: ' + ', '.join(str(p) for p in paths))
    print(f'done in {time.monotonic() - t0:.1f} s')
    if signals.received is not None:  # came while the summary and plots were written
        name = signal.Signals(signals.received).name
        print(f'ffsim demo: {name} received at the end: every output is written', file=sys.stderr)
        return 128 + signals.received
    return 0


#: Most simulated seconds per goal ``--seconds-per-goal`` takes (an hour).
MAX_SECONDS_PER_GOAL = 3600.0


def check_demo_arguments(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Check the arguments of ``ffsim demo`` before anything starts; fill in the defaults.

    A bad one ends the command through ``parser.error`` (exit 2, naming it): an unknown robot
    or a file that is not a readable URDF, a real-time factor the simulator refuses, a
    non-positive or non-finite ``--seconds-per-goal``, an output that is empty or not a folder
    that can be created or written, and (``--scenario capture``) an option that does not apply
    to it; missing modules (ROS 2, MCAP, matplotlib) exit 2 in one line. Sets ``robot_text``.
    """
    require('ffsim demo', f'{args.scenario} demo')  # ROS 2, MCAP, matplotlib: exit 2 if not
    if args.scenario == 'capture':
        given = [
            flag
            for flag, value in (
                ('--robot', args.robot),
                ('--rtf', args.rtf),
                ('--seconds-per-goal', args.seconds_per_goal),
            )
            if value is not None
        ]
        if given:
            parser.error(
                f'{", ".join(given)}: do not apply to --scenario capture (its target, robot and '
                'timing are fixed, and it runs in-process without the simulator node)'
            )
    else:
        _check_reach_arguments(parser, args)
    _check_output(parser, args.output)


def _check_reach_arguments(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    from ffsim_ros.launch_support import resolve_robot
    from ffsim_ros.node_support.common import ParameterValueError, read_robot_file

    args.robot = DEFAULT_ROBOT if args.robot is None else args.robot
    try:
        path = resolve_robot(args.robot)
    except FileNotFoundError as exc:
        if os.path.exists(os.path.expanduser(args.robot)):  # a folder, a FIFO, a device
            parser.error(f'--robot: expected a regular file, got {args.robot!r}')
        parser.error(f'--robot: {exc}'.replace('--robot: robot: ', '--robot: '))
    if not str(path).endswith('.urdf'):
        parser.error(f'--robot: expected a sample robot name or a .urdf file, got {args.robot!r}')
    try:
        args.robot_text = read_robot_file(str(path), what='--robot')
    except ParameterValueError as exc:
        parser.error(str(exc))
    from ffsim_ros.dynamics.urdf import UrdfXmlError, parse_urdf_xml

    try:
        parse_urdf_xml(args.robot_text)
    except UrdfXmlError as exc:
        parser.error(exc.about('--robot', path))
    if args.rtf is None:
        args.rtf = 1.0
    else:
        from ffsim_ros.sim.pacing import MAX_REAL_TIME_FACTOR as HIGH
        from ffsim_ros.sim.pacing import MIN_REAL_TIME_FACTOR as LOW

        if args.rtf != 0 and not LOW <= args.rtf <= HIGH:  # (False for nan)
            parser.error(
                f'--rtf: expected 0 (as fast as possible) or in [{LOW:g}, {HIGH:g}], '
                f'got {args.rtf:g}'
            )
    seconds = args.seconds_per_goal
    if seconds is not None and not 0 < seconds <= MAX_SECONDS_PER_GOAL:
        parser.error(
            f'--seconds-per-goal: expected a number of simulated seconds in '
            f'(0, {MAX_SECONDS_PER_GOAL:g}], got {seconds:g}'
        )


def _check_output(parser: argparse.ArgumentParser, output: str) -> None:
    """``--output``: a folder, created (with its parents) when missing, that this user can
    write into; not empty (``Path('')`` would be the current folder)."""
    if not output:
        parser.error("--output: expected a folder, got '' (use . for the current folder)")
    out = Path(output)
    if out.exists() and not out.is_dir():
        parser.error(f'--output: expected a folder, got {str(out)!r}, which is not one')
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        parser.error(f'--output: cannot create the folder {str(out)!r}: {exc.strerror}')
    if not os.access(out, os.W_OK | os.X_OK):
        parser.error(f'--output: cannot write into the folder {str(out)!r}')


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``ffsim`` console script.

    Parameters
    ----------
    argv : list of str, optional
        Arguments (default ``sys.argv[1:]``).

    Returns
    -------
    int
        Exit status.
    """
    parser = argparse.ArgumentParser(
        prog='ffsim', description='ffsim_ros: free-floating space robot simulation tools'
    )
    sub = parser.add_subparsers(dest='command', required=True)
    p = sub.add_parser(
        'demo',
        help='headless demo: simulator + reactionless controller, MCAP + plots',
        description=__doc__.split('\n\n')[1].replace('\n', ' '),
    )
    p.add_argument('--output', default='demo_output', help='output folder (default: %(default)s)')
    p.add_argument(
        '--robot',
        default=None,
        help=f'sample robot name or URDF path (default: {DEFAULT_ROBOT}; not with capture)',
    )
    p.add_argument('--short', action='store_true', help='one goal per mode (a quick check)')
    p.add_argument(
        '--rtf',
        type=float,
        default=None,
        help='simulator real-time factor, 0 or in [0.001, 1000] (default: 1.0; three processes '
        'share the cores; not with capture)',
    )
    p.add_argument(
        '--seconds-per-goal',
        type=float,
        default=None,
        help='sim seconds per goal, > 0 (default: 8, 6 with --short; not with capture)',
    )
    p.add_argument(
        '--scenario',
        choices=('reach', 'capture'),
        default='reach',
        help='reach: end-effector goals over DDS (default); capture: a tumbling target '
        'captured and detumbled, momentum distribution vs gjm (in-process, no DDS)',
    )
    sub.add_parser(
        'campaign',
        add_help=False,
        help='Monte Carlo campaign of closed-loop runs from a scenario YAML file '
        '(options: ffsim campaign --help)',
    )
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ['campaign']:
        from ffsim_ros.campaign.cli import main as campaign_main

        return campaign_main(argv[1:])
    args = parser.parse_args(argv)
    if args.command == 'demo':
        check_demo_arguments(p, args)
        return demo(args)
    return 2  # pragma: no cover - argparse enforces the sub-command


if __name__ == '__main__':
    sys.exit(main())
