"""What the reactionless controller node watches besides its state: late control updates, a
node clock that stopped, and the collision geometry ee_goals must stay out of.

Kept out of :mod:`ffsim_ros.reactionless_controller` (the node keeps the policy: what to warn,
which goals to drop); ROS-free apart from the log calls the node makes with the results.
"""

from __future__ import annotations

import warnings
from collections import deque

import ffsim_ros.dynamics as D
from ffsim_ros.scene.geometry import CollisionShape, shapes_from_urdf

from .common import ParameterValueError

#: An update later than this many control periods after the previous one is late.
LATE_PERIODS = 2.5
#: Late updates are warned about when at least ``LATE_COUNT`` of the last ``LATE_WINDOW``
#: were: a persistent overload, not one hiccup (the processes of a launch compete for the
#: cores while they load, which used to give one or two warnings at every start).
LATE_WINDOW = 20
LATE_COUNT = 3


class LateUpdates:
    """The control updates' lateness on the node's clock.

    Parameters
    ----------
    period : float
        The control period [s].
    """

    def __init__(self, period: float) -> None:
        self.period = float(period)
        self._last_ns: int | None = None  # the node-clock time of the last update
        self._late: deque[bool] = deque(maxlen=LATE_WINDOW)  # the last updates: late or not

    def observe(self, now_ns: int) -> tuple[bool, float | None]:
        """Record an update at ``now_ns`` [ns]: whether it is late (more than
        ``LATE_PERIODS`` periods after the previous one), and the gap [s] when, besides,
        ``LATE_COUNT`` of the last ``LATE_WINDOW`` updates were (worth a warning; else None)."""
        last, self._last_ns = self._last_ns, now_ns
        gap = 0.0 if last is None else (now_ns - last) * 1e-9
        late = gap > LATE_PERIODS * self.period
        self._late.append(late)
        return late, gap if late and sum(self._late) >= LATE_COUNT else None

    def clear(self) -> None:
        """Forget the updates (the clock jumped)."""
        self._last_ns = None
        self._late.clear()


class ClockStall:
    """How long (wall seconds) the node's clock has not advanced, from looks at both clocks."""

    def __init__(self) -> None:
        self._seen: tuple[int, float] | None = None  # (node-clock ns, wall s) of its last change

    def observe(self, now_ns: int, wall: float) -> float:
        """The wall seconds [s] the node's clock has stood at ``now_ns`` [ns] (0 when it moved
        since the last look), ``wall`` [s] a steady clock's time."""
        seen = self._seen
        if seen is None or seen[0] != now_ns:
            self._seen = (now_ns, wall)
            return 0.0
        return wall - seen[1]


def base_collision_shapes(
    urdf: str, model: D.Model, source: str
) -> tuple[list[CollisionShape], list[str]]:
    """The robot's ``<collision>`` primitives (goals inside those of the base body are refused,
    :meth:`~ffsim_ros.control.ReactionlessController.check_goal`), and the links on the base
    whose mesh shapes are left out (for a warning).

    Raises
    ------
    ParameterValueError
        Collision geometry that cannot be read, naming ``source`` (the parameter it came from).
    """
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter('always')
        try:
            shapes = list(shapes_from_urdf(urdf, model=model, meshes='ignore'))
        except ValueError as exc:  # (UnknownNameError is one)
            raise ParameterValueError(f'{source}: invalid collision geometry: {exc}') from None
    on_base = {n for n in model.link_names if model.frame(n).body == 0}
    meshes = {str(w.message).removeprefix('link ').split(' <collision>')[0] for w in caught}
    return shapes, sorted(meshes & on_base)
