"""Simulator node and controller speed: real-time factor, memory, control update time, and
the cost of the momentum-preserving step.

Run with ``make bench`` (after ``benchmarks/run.py``). The simulator runs as its own ROS 2
process (localhost-only DDS, a domain id of its own) at ``real_time_factor:=0`` (as fast as
possible) with 1 kHz RK4 physics and 100 Hz publishing; this process counts simulated seconds
on ``/clock`` per wall second and samples the simulator's resident memory. The reference is
the same RK4 loop driven by Pinocchio's ``aba`` from Python, without any ROS publishing: the
ratio says how much of the pure-dynamics speed the node keeps.

The momentum-preserving step (the simulator's default where no base wrench acts) is timed
against the plain RK4 step on the servicer at 1 kHz, the two in alternation (the minimum over
repeats of each: on a shared machine a disturbance only adds time): the bare dynamics step
(``D.step``, 10 steps a call) and the simulator's step (``Engine.advance(10)``, as the node's
physics thread calls it: the step, the drives' check, the snapshot and the watchdog).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

import ffsim_ros.dynamics as D
from ffsim_ros.cli import DomainLease, ros_environment, stop_processes
from ffsim_ros.control import CONTROL_MODES, ReactionlessController
from ffsim_ros.resources import sample_robot
from ffsim_ros.sim import Engine

ROOT = Path(__file__).resolve().parent.parent


def _rss_mib(pid: int) -> float:
    """Resident set size of a process [MiB] (Linux /proc)."""
    for line in Path(f'/proc/{pid}/status').read_text().splitlines():
        if line.startswith('VmRSS:'):
            return int(line.split()[1]) / 1024.0
    return float('nan')


def simulator_rate(
    seconds: float, params: tuple[str, ...] = ()
) -> tuple[float, list[tuple[float, float]]]:
    """Sim seconds per wall second of the node at ``real_time_factor:=0`` (and ``params``,
    ``name:=value``), and RSS samples."""
    import rclpy
    from rosgraph_msgs.msg import Clock

    lease = DomainLease()
    log_dir = Path(tempfile.mkdtemp(prefix='ffsim_bench_'))
    env = ros_environment(lease.domain_id, log_dir)
    os.environ.update(
        ROS_AUTOMATIC_DISCOVERY_RANGE='LOCALHOST',
        ROS_DOMAIN_ID=str(lease.domain_id),
        ROS_LOG_DIR=str(log_dir),
    )
    extra = [a for p in params for a in ('-p', p)]
    proc = subprocess.Popen(
        [
            sys.executable,
            '-m',
            'ffsim_ros.simulator',
            '--ros-args',
            '-p',
            'real_time_factor:=0.0',
            *extra,
        ],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    context = rclpy.Context()
    rclpy.init(args=[], context=context, domain_id=lease.domain_id)
    node = rclpy.create_node('ffsim_bench_probe', context=context)
    executor = rclpy.executors.SingleThreadedExecutor(context=context)
    executor.add_node(node)
    latest = [None]

    def on_clock(msg: Clock) -> None:
        latest[0] = msg.clock.sec + msg.clock.nanosec * 1e-9

    node.create_subscription(Clock, '/clock', on_clock, 100)
    samples: list[tuple[float, float]] = []
    try:
        deadline = time.monotonic() + 60
        while latest[0] is None:
            executor.spin_once(timeout_sec=0.05)
            if time.monotonic() > deadline or proc.poll() is not None:
                raise RuntimeError('simulator did not start publishing /clock')
        warm = time.monotonic() + 2.0
        while time.monotonic() < warm:
            executor.spin_once(timeout_sec=0.01)
        wall0, sim0 = time.monotonic(), latest[0]
        next_sample = wall0
        while time.monotonic() - wall0 < seconds:
            executor.spin_once(timeout_sec=0.01)
            if time.monotonic() >= next_sample:
                samples.append((time.monotonic() - wall0, _rss_mib(proc.pid)))
                next_sample += max(1.0, seconds / 20)
        rate = (latest[0] - sim0) / (time.monotonic() - wall0)
    finally:
        stop_processes([proc])
        node.destroy_node()
        executor.shutdown()
        context.try_shutdown()
        lease.close()
    return rate, samples


def pinocchio_rk4_rate(urdf: str, steps: int) -> float:
    """Sim seconds per wall second of an RK4 loop (1 ms) on Pinocchio's aba from Python."""
    import pinocchio as pin

    pm = pin.buildModelFromXML(urdf, pin.JointModelFreeFlyer())
    pm.gravity.linear[:] = 0.0
    pd = pm.createData()
    q, v, tau = pin.neutral(pm), np.zeros(pm.nv), np.zeros(pm.nv)
    return _pinocchio_rk4(pm, q, v, lambda q, v: pin.aba(pm, pd, q, v, tau), steps)


def _pinocchio_rk4(pm, q: np.ndarray, v: np.ndarray, f, steps: int, dt: float = 1e-3) -> float:
    """Sim seconds per wall second of ``steps`` RK4 steps of ``dt`` on Pinocchio's model
    ``pm`` (its ``integrate`` on the Lie group), the accelerations ``f(q, v)``."""
    import pinocchio as pin

    t0 = time.perf_counter()
    for _ in range(steps):
        k1v, k1a = v, f(q, v)
        q2, v2 = pin.integrate(pm, q, k1v * dt / 2), v + k1a * dt / 2
        k2a = f(q2, v2)
        q3, v3 = pin.integrate(pm, q, v2 * dt / 2), v + k2a * dt / 2
        k3a = f(q3, v3)
        q4, v4 = pin.integrate(pm, q, v3 * dt), v + k3a * dt
        k4a = f(q4, v4)
        q = pin.integrate(pm, q, (k1v + 2 * v2 + 2 * v3 + v4) * dt / 6)
        v = v + (k1a + 2 * k2a + 2 * k3a + k4a) * dt / 6
    return steps * dt / (time.perf_counter() - t0)


def pinocchio_closed_rk4_rate(steps: int) -> float:
    """Sim seconds per wall second of the same RK4 loop on Pinocchio's ``constraintDynamics``
    (the floating platform's two ball loops as ``RigidConstraintModel``s, no projection: a
    bare loop) from Python."""
    import pinocchio as pin
    from methods import pinocchio_constraints, pinocchio_state

    from ffsim_ros.dynamics.mufti.samples import platform_urdf_plus, tumbling_platform

    chain, q0, v0 = tumbling_platform()  # assembled: the loops closed, as the node starts
    pm, pd, cms, cds, prox = pinocchio_constraints(platform_urdf_plus(), chain)
    q, v, tau, _ = pinocchio_state(pm, chain.model, q0, v0, np.zeros(chain.model.n))

    def f(q, v):
        return pin.constraintDynamics(pm, pd, q, v, tau, cms, cds, prox).copy()

    return _pinocchio_rk4(pm, q, v, f, steps)


def platform_parameters() -> tuple[str, ...]:
    """The simulator's parameters for the floating platform as ``ffsim.launch.py`` starts it
    (its sample config: the joints where the loops close, the base tumbling)."""
    import yaml

    config = yaml.safe_load((ROOT / 'config' / 'floating_platform.yaml').read_text())
    values = config['/**/ffsim_simulator']['ros__parameters']
    return (
        f'robot_file:={sample_robot("floating_platform")}',
        *(f'{k}:={list(v)}' for k, v in values.items()),
    )


def controller_update_time(updates: int) -> dict[str, float]:
    """Median seconds of one control-law update per mode on the sample servicer."""
    model = D.load_urdf(sample_robot('ffsim_servicer_7dof'))
    q, v = D.neutral(model), np.zeros(model.nv)
    goal = D.link_pose(model, q, 'ee_link')[0] + np.array([0.1, 0.2, -0.2])
    out = {}
    for mode in CONTROL_MODES:
        law = ReactionlessController(model, 'ee_link', mode=mode)
        law.compute(q, v, goal, attitude_reference=q[3:7])
        times = []
        for _ in range(updates):
            t0 = time.perf_counter()
            law.compute(q, v, goal, attitude_reference=q[3:7])
            times.append(time.perf_counter() - t0)
        out[mode] = float(np.median(times))
    return out


def _moving_servicer() -> tuple[D.Model, np.ndarray, np.ndarray, np.ndarray]:
    """The servicer with its arm coasting from a fifth of its speed limits, zero momentum, no
    effort: over the 1 s of a timing no joint exceeds a quarter of its limit, so the steps are
    batched as in normal operation (near a limit they run one at a time, see sim.limits)."""
    model = D.load_urdf(sample_robot('ffsim_servicer_7dof'))
    q = D.neutral(model)
    q[7:] = np.linspace(-0.5, 0.5, model.n)
    rates = model.velocity_limit / 5.0 * np.where(np.arange(model.n) % 2, -1.0, 1.0)
    v = np.r_[D.base_velocity_from_momentum(model, q, rates), rates]
    return model, q, v, np.zeros(model.n)


def conservation_cost(repeats: int, calls: int = 100) -> dict[str, tuple[float, float]]:
    """Seconds per physics step without and with the momentum-preserving step, measured in
    alternation (minimum over ``repeats``): ``'dynamics'`` (``D.step``, 10 steps a call) and
    ``'simulator'`` (``Engine.advance(10)`` from the same state each repeat)."""
    model, q, v, tau = _moving_servicer()
    out: dict[str, tuple[float, float]] = {}

    def dynamics(conserve: bool) -> float:
        t0 = time.perf_counter()
        for _ in range(calls):
            D.step(model, q, v, tau, 1e-3, steps=10, conserve_momentum=conserve)
        return (time.perf_counter() - t0) / (10 * calls)

    def simulator(conserve: bool) -> float:
        engine = Engine(model, q, v, dt_ns=1_000_000, conserve_momentum=conserve)
        engine.command_efforts(tau)
        engine.advance(10)  # warm-up
        t0 = time.perf_counter()
        for _ in range(calls):
            engine.advance(10)
        return (time.perf_counter() - t0) / (10 * calls)

    for name, run in (('dynamics', dynamics), ('simulator', simulator)):
        run(False), run(True)  # warm-up (compiled kernels, caches)
        times: dict[bool, list[float]] = {False: [], True: []}
        for _ in range(repeats):
            for conserve in (False, True):
                times[conserve].append(run(conserve))
        out[name] = (min(times[False]), min(times[True]))
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--seconds', type=float, default=20.0, help='wall seconds of the run')
    parser.add_argument(
        '--repeats', type=int, default=15, help='repeats of the conservation-cost timing'
    )
    parser.add_argument(
        '--conservation-only', action='store_true', help='only the conservation-cost rows'
    )
    parser.add_argument(
        '--node-conservation',
        action='store_true',
        help='only the node with and without the momentum-preserving step (--seconds each, '
        '--repeats times in alternation)',
    )
    args = parser.parse_args(argv)
    if args.node_conservation:  # the node itself, preserving and plain, in alternation
        rates: dict[str, list[float]] = {'true': [], 'false': []}
        for _ in range(args.repeats):
            for value in rates:
                rate, _ = simulator_rate(args.seconds, (f'conserve_momentum:={value}',))
                rates[value].append(rate)
        plain, kept = max(rates['false']), max(rates['true'])
        print('| node, 1 kHz, 100 Hz publishing | plain [sim s / wall s] | preserving | cost |')
        print(f'| servicer | {plain:.2f} | {kept:.2f} | {plain / kept - 1:+.1%} |')
        return
    if args.conservation_only:
        print('| step | plain [us/step] | momentum-preserving [us/step] | cost |')
        for name, (plain, kept) in conservation_cost(args.repeats).items():
            print(f'| {name} | {plain * 1e6:.2f} | {kept * 1e6:.2f} | {kept / plain - 1:+.1%} |')
        return
    urdf = sample_robot('ffsim_servicer_7dof').read_text()
    rate, samples = simulator_rate(args.seconds)
    ref = pinocchio_rk4_rate(urdf, 3000)
    closed, _ = simulator_rate(args.seconds, platform_parameters())
    closed_ref = pinocchio_closed_rk4_rate(1000)
    print(f'\n# simulator node, 1 kHz RK4, 100 Hz publishing, {args.seconds:g} s each')
    print(
        '| robot | ffsim node [sim s / wall s] | Pinocchio RK4 loop, no ROS [sim s / wall s] '
        '| ratio |'
    )
    print('|---|---|---|---|')
    print(f'| servicer (aba) | {rate:.1f} | {ref:.1f} | {rate / ref:.2f} |')
    print(
        f'| floating platform, 2 ball loops (projected steps; Pinocchio constraintDynamics) '
        f'| {closed:.1f} | {closed_ref:.1f} | {closed / closed_ref:.2f} |'
    )
    t = np.array([s[0] for s in samples])
    rss = np.array([s[1] for s in samples])
    half = t >= t[-1] / 2  # the second half: after start-up allocations have settled
    slope = np.polyfit(t[half] / 60.0, rss[half], 1)[0] if half.sum() >= 2 else float('nan')
    print(
        f'simulator RSS: {rss[0]:.1f} MiB at start of the window, {rss[-1]:.1f} MiB at the end,'
        f' max {rss.max():.1f} MiB ({len(rss)} samples); trend over the second half '
        f'{slope:+.3f} MiB/min'
    )
    print('\n# momentum-preserving step, servicer at 1 kHz, plain and preserving in alternation')
    print('| step | plain [us/step] | momentum-preserving [us/step] | cost |')
    print('|---|---|---|---|')
    labels = {
        'dynamics': 'D.step (RK4, 10 steps a call)',
        'simulator': 'Engine.advance(10) (step, drives, snapshot, watchdog)',
    }
    for name, (plain, kept) in conservation_cost(args.repeats).items():
        cost = kept / plain - 1.0
        print(f'| {labels[name]} | {plain * 1e6:.2f} | {kept * 1e6:.2f} | {cost:+.1%} |')
    print('\n# control-law update (servicer, one H/c/J evaluation), median')
    print('| mode | update [ms] |')
    print('|---|---|')
    for mode, t in controller_update_time(300).items():
        print(f'| {mode} | {t * 1e3:.3f} |')


if __name__ == '__main__':
    main()
