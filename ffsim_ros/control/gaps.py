"""A clock that leaves out the gaps between control updates (no ROS).

A controller skips its updates while it has no fresh state (a simulation paused on wall-clock
time, a simulator gone): its clock then jumps between two updates. Timers that judge a goal's
progress must not count that jump -- the arm could not move meanwhile (a 4 s pause aborted a
goal at the resume as "stalled ... no progress of 1 mm in 2 s"). :class:`GapClock` gives the
caller's time less the gaps so far.
"""

from __future__ import annotations

import math
from collections import deque

#: A step of the clock between two calls longer than this many update periods (the median of
#: the last ``PERIOD_WINDOW`` steps between updates, the upper one of an even count) is a gap:
#: only one period of it counts.
GAP_PERIODS = 5.0
PERIOD_WINDOW = 20


class GapClock:
    """The caller's clock [s] less the gaps between its updates (module docstring)."""

    def __init__(self) -> None:
        self.skipped = 0.0  # [s], left out so far
        self._last: float | None = None
        self._steps: deque[float] = deque(maxlen=PERIOD_WINDOW)

    def reset(self) -> None:
        """Forget the gaps and the period (e.g. after the clock went back)."""
        self.skipped, self._last = 0.0, None
        self._steps.clear()

    def __call__(self, t: float, update: bool = False) -> float:
        """``t`` less the gaps so far, a gap since the last call counted first.

        Parameters
        ----------
        t : float
            The caller's time [s] (not before the last call's, except after :meth:`reset`).
        update : bool
            A control update: its step since the last call measures the update period.

        Returns
        -------
        float
            [s]
        """
        t = float(t)
        if self._last is not None:
            step = t - self._last
            period = sorted(self._steps)[len(self._steps) // 2] if self._steps else math.inf
            if step > GAP_PERIODS * period:
                self.skipped += step - period
            elif update and step > 0.0:
                self._steps.append(step)
        self._last = t
        return t - self.skipped
