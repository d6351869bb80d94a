"""The simulator's physics status on ``/diagnostics``: level, message and the figures (no
publishing here; :class:`ffsim_ros.simulator.Simulator` wraps them in a ``DiagnosticArray``)."""

from __future__ import annotations

from diagnostic_msgs.msg import DiagnosticStatus

from ffsim_ros.sim import Engine


def physics_status(
    engine: Engine, steps_per_s: float, rtf: float, rtf_target: float
) -> tuple[bytes, str, dict[str, str]]:
    """``(level, message, values)`` of the physics now.

    Parameters
    ----------
    engine : the simulation engine (read in the physics thread).
    steps_per_s : physics steps per wall second since the last report [1/s].
    rtf : real-time factor achieved over that time (simulated / wall seconds).
    rtf_target : the ``real_time_factor`` parameter (0: as fast as possible).

    Returns
    -------
    tuple
        ``DiagnosticStatus`` level (ERROR once the integration stopped, WARN with the
        watchdog's warnings, else OK), its message, and the figures as strings: simulated
        time [s], step rate [Hz], real-time factors, the effort command's age and timeout
        [s], paused, momentum-preserving, the watchdog's drifts, energy figures [J] and
        window [s].
    """
    health = engine.health
    command = engine.last_command
    age = 'none' if command is None else f'{(engine.time_ns - command[1]) * 1e-9:.6f}'
    if engine.faulted:
        level, message = DiagnosticStatus.ERROR, f'integration stopped: {engine.fault}'
    elif health.warnings:
        level, message = DiagnosticStatus.WARN, '; '.join(health.warnings)
    else:
        level = DiagnosticStatus.OK
        message = 'paused' if engine.paused else 'running'
    values = {
        'sim_time': f'{engine.time:.6f}',
        'step_rate_hz': f'{steps_per_s:.1f}',
        'real_time_factor': f'{rtf:.4f}',
        'real_time_factor_target': f'{rtf_target:g}',
        'command_age': age,
        'command_timeout': f'{engine.command_timeout_ns * 1e-9:g}',
        'paused': str(engine.paused).lower(),
        'momentum_preserving': str(engine.conserve_momentum).lower(),
        'watchdog_checked': str(health.checked).lower(),
        'momentum_drift': f'{health.momentum_drift:.3g}',
        'linear_momentum_drift': f'{health.linear_drift:.3g}',
        'angular_momentum_drift': f'{health.angular_drift:.3g}',
        'energy_excess': f'{health.energy_excess:.3g}',
        'energy_scale': f'{health.energy_scale:.3g}',
        'effort_work': f'{health.work:.6g}',
        'watchdog_window': f'{health.window:.3f}',
    }
    return level, message, values
