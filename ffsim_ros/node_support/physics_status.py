"""The simulator's physics status on ``/diagnostics``: level, message and the figures (no
publishing here; :class:`ffsim_ros.simulator.Simulator` wraps them in a ``DiagnosticArray``);
and, checked at the same pace, the warning for a clock topic it shares (:class:`ClockWatch`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from diagnostic_msgs.msg import DiagnosticStatus

from ffsim_ros.sim import Engine

from .common import LogThrottle, publisher_names, shared_clock_warning

if TYPE_CHECKING:
    from rclpy.node import Node
    from rclpy.publisher import Publisher

#: Shortest time between two warnings about a shared clock topic [s].
CLOCK_WARNING_PERIOD = 10.0


class ClockWatch:
    """Warns (at most once per ``period``) while several nodes publish on the simulator's
    clock topic.

    Parameters
    ----------
    node : Node
        The simulator node (its graph is read).
    publisher : Publisher or None
        Its clock publisher (None without ``publish_clock``: nothing to check).
    period : float
        Shortest time between two warnings [s].
    """

    def __init__(
        self, node: Node, publisher: Publisher | None, period: float = CLOCK_WARNING_PERIOD
    ) -> None:
        self._node = node
        self._topic = None if publisher is None else publisher.topic_name  # (resolved)
        self._throttle = LogThrottle(period)

    def check(self) -> str:
        """Count the publishers on the clock topic (a graph query, cheap: call it every
        second or so) and log the warning when there are several.

        Returns
        -------
        str
            The warning ('' when the clock topic has one publisher, or none is published);
            logged unless one was within ``period``.
        """
        if self._topic is None or self._node.count_publishers(self._topic) <= 1:
            return ''
        text = shared_clock_warning(self._topic, publisher_names(self._node, self._topic))
        if text and (line := self._throttle.admit(text)):
            self._node.get_logger().warning(line)
        return text


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
