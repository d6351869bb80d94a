"""``ffsim demo --scenario capture``: the capture of a tumbling target, headless (issue 17).

The in-process closed loop of :mod:`ffsim_ros.control.capture_loop` (no DDS: the scene and the
capture law in one process, deterministic) runs the case of
:func:`~ffsim_ros.control.capture_loop.tumbling_target_scene` twice -- detumbling by momentum
distribution and by plain generalized-Jacobian braking -- from the same start: approach,
interception, grasp, detumbling. Each run is recorded to ``capture_<mode>.mcap`` with the
simulator's own message builders (:class:`~ffsim_ros.node_support.state_messages.
StateMessages`, :class:`~ffsim_ros.node_support.scene_support.TargetMessages`,
:func:`~ffsim_ros.node_support.scene_support.event_message`) at every control update:

========================  ==============================  ====================================
topic                     type                            content
========================  ==============================  ====================================
``/joint_states``         sensor_msgs/JointState          arm joints, efforts held
``/tf``                   tf2_msgs/TFMessage              world -> base_link, -> target/sat
``/base_odom``            nav_msgs/Odometry               base link (twist in its axes)
``/targets/sat/odom``     nav_msgs/Odometry               target root (twist in its axes)
``/momentum``             std_msgs/Float64MultiArray      ``[P, L_g, com]`` of robot + target
``/scene_events``         diagnostic_msgs/DiagnosticArray contacts and the capture
``/capture/state``        std_msgs/Float64MultiArray      :data:`STATE_FIELDS`
========================  ==============================  ====================================

Then ``summary.md`` / ``summary.csv`` (one row per mode, :func:`summarize`) and the plots:
``capture_relative.png`` (gripper-handle distance and speed, target-base relative rate),
``capture_impulses.png``, ``capture_base.png`` (base attitude change and rate),
``capture_momentum.png`` (angular momentum of target, arm and base about the system CoM).
"""

from __future__ import annotations

import csv
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
from diagnostic_msgs.msg import DiagnosticArray
from nav_msgs.msg import Odometry
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray, MultiArrayDimension
from tf2_msgs.msg import TFMessage

import ffsim_ros.dynamics as D
from ffsim_ros.control.capture import DETUMBLE_MODES
from ffsim_ros.control.capture_loop import (
    CaptureLoop,
    CaptureResult,
    CaptureSample,
    tumbling_target_scene,
)
from ffsim_ros.node_support.common import to_stamp
from ffsim_ros.node_support.scene_support import TargetMessages, event_message
from ffsim_ros.node_support.state_messages import StateMessages
from ffsim_ros.recording import McapFile
from ffsim_ros.scene import SceneSnapshot
from ffsim_ros.sim import Snapshot

if TYPE_CHECKING:
    from matplotlib.figure import Figure

#: Fields of ``/capture/state`` (SI units, world frame; ``L`` about the system CoM).
STATE_FIELDS = (
    'distance',
    'speed',
    'relative_rate',
    'attitude_change',
    'contact_impulse',
    'capture_impulse',
    *(f'L_target_{a}' for a in 'xyz'),
    *(f'L_arm_{a}' for a in 'xyz'),
    *(f'L_base_{a}' for a in 'xyz'),
)
#: Simulated time of each run [s] (full; ``--short``: the capture at 4.1 s and 0.9 s of
#: detumbling, a quick check).
DURATION, SHORT_DURATION = 14.0, 5.0
COLORS = {'momentum_distribution': 'tab:green', 'gjm': 'tab:red'}


@dataclass
class CaptureRun:
    """One mode's run: its result and MCAP file (with the message counts per topic)."""

    mode: str
    result: CaptureResult
    mcap: Path
    counts: dict[str, int]


class _Recorder:
    """Writes each control update of a :class:`CaptureLoop` to an MCAP file."""

    def __init__(self, path: Path, loop: CaptureLoop) -> None:
        self.file = McapFile(path)
        robot = loop.robot
        self.state = StateMessages(robot.joint_names, 'world', robot.base_link, clock=False)
        self.targets = TargetMessages('world', '')
        self.specs = {loop.target.name: loop.target}
        self.odom_topic = f'/targets/{loop.target.name}/odom'
        topics = {
            '/joint_states': JointState,
            '/tf': TFMessage,
            '/base_odom': Odometry,
            self.odom_topic: Odometry,
            '/momentum': Float64MultiArray,
            '/scene_events': DiagnosticArray,
            '/capture/state': Float64MultiArray,
        }
        self.channels = {t: self.file.channel(t, c) for t, c in topics.items()}
        self.counts = dict.fromkeys(topics, 0)
        self.layout = [MultiArrayDimension(label=','.join(STATE_FIELDS), size=len(STATE_FIELDS))]

    def _write(self, topic: str, ns: int, msg: object) -> None:
        self.file.write_message(self.channels[topic], ns, msg)
        self.counts[topic] += 1

    def __call__(self, loop: CaptureLoop, sample: CaptureSample) -> None:
        snap = loop.last_snapshot
        ns = int(round(snap.time * 1e9))
        stamp = to_stamp(ns)
        q, v = np.asarray(snap.robot_q), np.asarray(snap.robot_v)
        p, quat, lin, ang = D.base_link_state(loop.robot, q, v)
        h = np.asarray(snap.momentum, float).copy()
        com = _common_com(loop, snap)
        h[3:] -= np.cross(com, h[:3])
        sim = Snapshot(
            step=snap.step,
            time_ns=ns,
            q=q,
            v=v,
            effort=sample.effort,
            base_position=p,
            base_orientation=quat,
            base_linear_velocity=lin,
            base_angular_velocity=ang,
            momentum=h,
            com=com,
            kinetic_energy=snap.kinetic_energy,
            paused=False,
            fault='',
            world=snap,
        )
        _, joints, transform, odom, momentum, _ = self.state.fill(sim, markers=False)
        tfs = [transform, *self.targets.transforms(snap, self.specs, stamp)]
        self._write('/joint_states', ns, joints)
        self._write('/tf', ns, TFMessage(transforms=tfs))
        self._write('/base_odom', ns, odom)
        self._write(self.odom_topic, ns, self.targets.odometry(loop.target.name, snap, stamp))
        self._write('/momentum', ns, momentum)
        for event in loop.last_events:
            t_ns = int(round(event.time * 1e9))
            self._write('/scene_events', t_ns, event_message(t_ns, event))
        state = Float64MultiArray()
        state.layout.dim = self.layout
        state.data = [
            sample.distance,
            sample.speed,
            sample.relative_rate,
            sample.attitude_change,
            sample.contact_impulse,
            float(np.linalg.norm(sample.capture_impulse)),
            *sample.momentum_target[3:].tolist(),
            *sample.momentum_arm[3:].tolist(),
            *sample.momentum_base[3:].tolist(),
        ]
        self._write('/capture/state', ns, state)

    def close(self) -> None:
        self.file.close()


def _common_com(loop: CaptureLoop, snap: SceneSnapshot) -> np.ndarray:
    m_r, m_t = loop.robot.total_mass, loop.target.model.total_mass
    c_r = D.center_of_mass(loop.robot, np.asarray(snap.robot_q))
    c_t = np.asarray(snap.targets[loop.target.name].com)
    return (m_r * c_r + m_t * c_t) / (m_r + m_t)


def run_capture(mode: str, out: Path, duration: float) -> CaptureRun:
    """One mode's closed loop recorded to ``out/capture_<mode>.mcap``.

    Parameters
    ----------
    mode : str
        A detumble mode (:data:`~.control.capture.DETUMBLE_MODES`).
    out : Path
        Output directory.
    duration : float
        Simulated time [s].

    Returns
    -------
    CaptureRun
    """
    scene, target = tumbling_target_scene()
    loop = CaptureLoop(scene, target, mode=mode)
    path = out / f'capture_{mode}.mcap'
    rec = _Recorder(path, loop)
    try:
        result = loop.run(duration, observer=rec)
    finally:
        rec.close()
    return CaptureRun(mode, result, path, rec.counts)


def summarize(run: CaptureRun) -> dict[str, float | str]:
    """One row of the summary (degrees, seconds, N s; ``nan`` where it does not apply).

    Parameters
    ----------
    run : CaptureRun

    Returns
    -------
    dict
        Column name (unit in its suffix) -> value.
    """
    r = run.result
    s = r.samples
    after = [x for x in s if x.time >= r.capture_time] if r.capture else []
    return {
        'mode': run.mode,
        'capture_time_s': r.capture_time,
        'capture_impulse_Ns': float(np.linalg.norm(r.capture.impulse[:3]))
        if r.capture
        else float('nan'),
        'detumble_time_s': r.detumble_time,
        'final_relative_rate_deg_s': float(np.degrees(r.final_relative_rate)),
        'base_attitude_change_deg': float(np.degrees(r.attitude_change)),
        'attitude_change_after_capture_deg': float(np.degrees(r.attitude_change_after_capture)),
        'max_base_rate_deg_s': float(
            np.degrees(max((np.linalg.norm(x.base_rate) for x in s), default=np.nan))
        ),
        'peak_base_acceleration_deg_s2': float(np.degrees(r.peak_base_acceleration)),
        'max_arm_momentum_Nms': float(
            max((np.linalg.norm(x.momentum_arm[3:]) for x in after), default=np.nan)
        ),
        'momentum_drift': r.momentum_drift,
    }


def write_summary(rows: list[dict], out: Path) -> str:
    """``summary.csv`` and ``summary.md`` (with the gjm / momentum-distribution ratios).

    Parameters
    ----------
    rows : list of dict
        :func:`summarize` rows.
    out : Path
        Output directory.

    Returns
    -------
    str
        The markdown table (as written to ``summary.md``).
    """
    keys = list(rows[0])
    with open(out / 'summary.csv', 'w', newline='') as handle:
        writer = csv.DictWriter(handle, fieldnames=keys)
        writer.writeheader()
        writer.writerows(rows)
    lines = [
        '| mode | capture [s] | capture impulse [N s] | detumbled after [s] | final relative '
        'rate [deg/s] | base attitude change after capture [deg] | max base rate [deg/s] | '
        'peak base accel. [deg/s^2] | max arm momentum [N m s] | momentum drift |',
        '|---|---|---|---|---|---|---|---|---|---|',
    ]
    for r in rows:
        lines.append(
            f'| {r["mode"]} | {r["capture_time_s"]:.2f} | {r["capture_impulse_Ns"]:.4f} | '
            f'{r["detumble_time_s"]:.2f} | {r["final_relative_rate_deg_s"]:.2e} | '
            f'{r["attitude_change_after_capture_deg"]:.4f} | {r["max_base_rate_deg_s"]:.4f} | '
            f'{r["peak_base_acceleration_deg_s2"]:.4f} | {r["max_arm_momentum_Nms"]:.4f} | '
            f'{r["momentum_drift"]:.1e} |'
        )
    by = {r['mode']: r for r in rows}
    if set(by) == set(DETUMBLE_MODES):
        md, gjm = by['momentum_distribution'], by['gjm']
        key_a, key_b = 'attitude_change_after_capture_deg', 'peak_base_acceleration_deg_s2'
        lines.append(
            '\nBase attitude change after the capture, gjm / momentum distribution: '
            f'{gjm[key_a] / md[key_a]:.2f}; peak base angular acceleration: '
            f'{gjm[key_b] / md[key_b]:.2f}.'
        )
    table = '\n'.join(lines) + '\n'
    (out / 'summary.md').write_text(table)
    return table


def plot(runs: list[CaptureRun], out: Path) -> list[Path]:
    """Write the four figures (module docstring); returns their paths.

    Parameters
    ----------
    runs : list of CaptureRun
    out : Path
        Output directory.

    Returns
    -------
    list of Path
        The PNG files.
    """
    import matplotlib

    matplotlib.use('Agg')
    import matplotlib.pyplot as plt

    paths = []

    def save(fig: Figure, name: str) -> None:
        fig.tight_layout()
        path = out / name
        fig.savefig(path, dpi=90)
        plt.close(fig)
        paths.append(path)

    def series(run: CaptureRun, attr: str) -> tuple[np.ndarray, np.ndarray]:
        s = run.result.samples
        return np.array([x.time for x in s]), np.array([getattr(x, attr) for x in s])

    fig, (ax1, ax2, ax3) = plt.subplots(1, 3, figsize=(14, 4))
    for r in runs:
        c = COLORS.get(r.mode)
        t, d = series(r, 'distance')
        ax1.plot(t, d * 100, color=c, label=r.mode)
        t, sp = series(r, 'speed')
        ax2.plot(t, sp * 100, color=c, label=r.mode)
        t, w = series(r, 'relative_rate')
        ax3.semilogy(t, np.maximum(np.degrees(w), 1e-12), color=c, label=r.mode)
    ax1.set(xlabel='sim time [s]', ylabel='[cm]', title='gripper to handle distance')
    ax2.set(xlabel='sim time [s]', ylabel='[cm/s]', title='handle speed relative to gripper')
    ax3.axhline(0.1, color='gray', ls='--', lw=0.8)
    ax3.set(xlabel='sim time [s]', ylabel='[deg/s]', title='target rate relative to the base')
    ax1.legend()
    save(fig, 'capture_relative.png')

    fig, ax = plt.subplots(figsize=(6, 4))
    for r in runs:
        t, P = series(r, 'contact_impulse')
        cap = np.array([np.linalg.norm(x.capture_impulse[:3]) for x in r.result.samples])
        ax.plot(t, P + cap, color=COLORS.get(r.mode), label=r.mode, drawstyle='steps-mid')
    ax.set(xlabel='sim time [s]', ylabel='[N s]', title='contact and capture impulses')
    ax.legend()
    save(fig, 'capture_impulses.png')

    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 4))
    for r in runs:
        t, a = series(r, 'attitude_change')
        ax1.plot(t, np.degrees(a), color=COLORS.get(r.mode), label=r.mode)
        t, w = series(r, 'base_rate')
        ax2.plot(t, np.degrees(np.linalg.norm(w, axis=1)), color=COLORS.get(r.mode))
        for ax in (ax1, ax2):
            ax.axvline(r.result.capture_time, color='gray', ls=':', lw=0.8)
    ax1.set(xlabel='sim time [s]', ylabel='[deg]', title='base attitude change')
    ax2.set(xlabel='sim time [s]', ylabel='[deg/s]', title='base angular rate')
    ax1.legend()
    save(fig, 'capture_base.png')

    fig, axes = plt.subplots(1, len(runs), figsize=(6 * len(runs), 4), sharey=True)
    for ax, r in zip(np.atleast_1d(axes), runs, strict=True):
        s = r.result.samples
        t = np.array([x.time for x in s])
        parts = {
            'target': np.array([x.momentum_target[3:] for x in s]),
            'arm': np.array([x.momentum_arm[3:] for x in s]),
            'base': np.array([x.momentum_base[3:] for x in s]),
        }
        total = sum(parts.values())
        axis = total[-1] / max(np.linalg.norm(total[-1]), 1e-300)
        for name, Lp in parts.items():
            ax.plot(t, Lp @ axis, label=name)
        ax.plot(t, total @ axis, 'k--', lw=0.8, label='total')
        ax.axvline(r.result.capture_time, color='gray', ls=':', lw=0.8)
        ax.set(xlabel='sim time [s]', title=f'angular momentum along L_g ({r.mode})')
    np.atleast_1d(axes)[0].set_ylabel('[N m s]')
    np.atleast_1d(axes)[0].legend()
    save(fig, 'capture_momentum.png')
    return paths


def run_demo(out: Path, short: bool = False, duration: float | None = None) -> int:
    """Both modes, MCAP files, summary and plots in ``out``; prints the table.

    Parameters
    ----------
    out : Path
        Output directory (created).
    short : bool
        Default ``duration`` :data:`SHORT_DURATION` instead of :data:`DURATION`.
    duration : float, optional
        Simulated time of each run [s].

    Returns
    -------
    int
        Exit status, 0.
    """
    out = Path(out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    if duration is None:
        duration = SHORT_DURATION if short else DURATION
    print(
        f'ffsim demo --scenario capture: a target tumbling at 5 deg/s, CoM drifting 2 cm/s; '
        f'{duration:g} s of sim time per mode ({", ".join(DETUMBLE_MODES)})',
        flush=True,
    )
    t0 = time.monotonic()
    runs = [run_capture(mode, out, duration) for mode in DETUMBLE_MODES]
    table = write_summary([summarize(r) for r in runs], out)
    paths = plot(runs, out)
    print('\n' + table)
    for r in runs:
        print(f'recorded {r.mcap} ({sum(r.counts.values())} messages on {len(r.counts)} topics)')
    print('plots: ' + ', '.join(str(p) for p in paths))
    print(f'done in {time.monotonic() - t0:.1f} s')
    return 0


__all__ = [
    'DURATION',
    'SHORT_DURATION',
    'STATE_FIELDS',
    'CaptureRun',
    'plot',
    'run_capture',
    'run_demo',
    'summarize',
    'write_summary',
]
