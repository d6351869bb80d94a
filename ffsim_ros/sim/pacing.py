"""Wall-clock pacing of a simulation and the rates it achieves (no ROS).

:class:`Pacer` holds a simulation to at most ``real_time_factor`` times the wall clock;
:class:`RateMeter` measures the physics steps and the simulated time per wall second (what the
simulator node reports on ``/diagnostics``).
"""

from __future__ import annotations

import time

#: Range of a non-zero real-time factor (0: as fast as possible): the pacing divides by it
#: (the simulator's ``real_time_factor`` parameter, ``ffsim reach --rtf``).
MIN_REAL_TIME_FACTOR, MAX_REAL_TIME_FACTOR = 1e-3, 1e3


class Pacer:
    """Paces steps of ``dt`` seconds against the wall clock at ``rtf`` (simulated seconds per
    wall second, an upper bound; 0: as fast as possible).

    When the machine cannot keep up, the simulation runs slower rather than catching up in
    bursts: a lag over two publish periods (``2 decimation dt / rtf`` wall seconds) is
    dropped, so controllers closing the loop over DDS always get their share of simulated
    time.

    Parameters
    ----------
    rtf : float
        Real-time factor [-] (0, or > 0).
    dt : float
        Physics step [s].
    decimation : int
        Physics steps per publish period.
    """

    def __init__(self, rtf: float, dt: float, decimation: int) -> None:
        self._dt, self._decimation = dt, decimation
        self.wall0, self.step0 = time.monotonic(), 0
        self.set_rtf(rtf)

    def set_rtf(self, rtf: float) -> None:
        """Change the real-time factor (0, or > 0).

        Parameters
        ----------
        rtf : float
            Simulated seconds per wall second [-]; 0: as fast as possible.
        """
        self.rtf = rtf
        # wall-clock lag [s] tolerated before the pacing stops catching up (two publish periods)
        self.max_lag = 2.0 * self._decimation * self._dt / max(rtf, 1e-9)

    def restart(self, step: int) -> None:
        """Start pacing again from ``step`` now (after a pause or a change of factor).

        Parameters
        ----------
        step : int
            The physics step count now.
        """
        self.wall0, self.step0 = time.monotonic(), step

    def delay(self, step: int) -> float:
        """Wall seconds to wait before the batch ending at ``step`` (<= 0: go).

        Parameters
        ----------
        step : int
            The physics step count at the batch's end.

        Returns
        -------
        float
            [s], wall clock.
        """
        if self.rtf == 0.0:
            return 0.0
        now = time.monotonic()
        delay = self.wall0 + (step - self.step0) * self._dt / self.rtf - now
        if -delay > self.max_lag:
            # Behind schedule (a loaded machine): slow down instead of bursting ahead to catch
            # up, which would starve the controllers of simulated time to react in.
            self.wall0, self.step0 = now, step
            return 0.0
        return delay


class RateMeter:
    """Physics steps and simulated time per wall second since the last :meth:`read`, read
    every ``period`` wall seconds.

    Parameters
    ----------
    step : int
        The physics step count now.
    period : float
        Wall seconds between readings [s].
    """

    def __init__(self, step: int, period: float) -> None:
        self.period = float(period)
        self.wall, self.step, self.next = time.monotonic(), step, 0.0

    def due(self) -> bool:
        """Whether a reading is due (the first one at once).

        Returns
        -------
        bool
        """
        return time.monotonic() >= self.next

    def read(self, step: int, dt: float) -> tuple[float, float]:
        """``(steps per wall second, simulated seconds per wall second)`` since the last
        read (the clock at ``step``, steps of ``dt`` seconds); restarts the measurement.

        Parameters
        ----------
        step : int
            The physics step count now.
        dt : float
            Physics step [s].

        Returns
        -------
        tuple of float
            [1/s] and [-].
        """
        now = time.monotonic()
        elapsed = max(now - self.wall, 1e-9)
        rate = (step - self.step) / elapsed
        self.wall, self.step, self.next = now, step, now + self.period
        return rate, rate * dt
