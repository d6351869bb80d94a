"""What the reactionless controller node watches besides its state: late control updates, a
node clock that jumped or stopped (and why), and the collision geometry ee_goals must stay out
of.

Kept out of :mod:`ffsim_ros.reactionless_controller` (the node keeps the policy: what to warn,
which goals to drop); ROS-free apart from the log calls the node makes with the results.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Sequence

import ffsim_ros.dynamics as D
from ffsim_ros.scene.geometry import CollisionShape, goal_keepout_shapes

from .common import ParameterValueError, shared_clock_warning

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
        ``LATE_COUNT`` of the last ``LATE_WINDOW`` updates were (worth a warning; else None).

        Parameters
        ----------
        now_ns : int
            Time of the update [ns].

        Returns
        -------
        late : bool
        gap : float or None
            Seconds since the previous update [s] when warning-worthy.
        """
        last, self._last_ns = self._last_ns, now_ns
        gap = 0.0 if last is None else (now_ns - last) * 1e-9
        late = gap > LATE_PERIODS * self.period
        self._late.append(late)
        return late, gap if late and sum(self._late) >= LATE_COUNT else None

    def clear(self) -> None:
        """Forget the updates (the clock jumped)."""
        self._last_ns = None
        self._late.clear()


def late_update_warning(gap: float, period: float, sim_time: bool) -> str:
    """The warning for control updates that keep coming late (:class:`LateUpdates`): on
    simulated time the simulation ran faster than the controller keeps up; on wall time the
    process was not scheduled (machine load), the simulation's pace is not the cause.

    Parameters
    ----------
    gap : float
        Seconds [s] since the previous update.
    period : float
        The control period [s].
    sim_time : bool
        Whether the node's clock is on simulated time (``ros_time_is_active``).

    Returns
    -------
    str
    """
    head = (
        f'control update {gap * 1e3:.1f} ms after the previous one on the node clock '
        f'(period {period * 1e3:g} ms)'
    )
    if not sim_time:
        return (
            f'{head}: this process was not scheduled for {gap * 1e3:.1f} ms (machine load: '
            'more busy processes than free cores?); the law, tuned for its period, degrades'
        )
    return (
        f'{head}: the simulation ran faster than this controller keeps up (a '
        'real_time_factor too high for this machine, or steps taken unpaced by '
        'StepSimulation / SimulateSteps)'
    )


class ClockStall:
    """How long (wall seconds) the node's clock has not advanced, from looks at both clocks."""

    def __init__(self) -> None:
        self._seen: tuple[int, float] | None = None  # (node-clock ns, wall s) of its last change

    def observe(self, now_ns: int, wall: float) -> float:
        """The wall seconds [s] the node's clock has stood at ``now_ns`` [ns] (0 when it moved
        since the last look), ``wall`` [s] a steady clock's time.

        Parameters
        ----------
        now_ns : int
            The node clock's time [ns].
        wall : float
            A steady clock's time [s].

        Returns
        -------
        float
            Stall duration [s] (0.0 when the clock moved).
        """
        seen = self._seen
        if seen is None or seen[0] != now_ns:
            self._seen = (now_ns, wall)
            return 0.0
        return wall - seen[1]


def clock_jump(
    last: tuple[int, bool] | None,
    now_ns: int,
    sim_time: bool,
    ahead_ns: int,
    clock: Callable[[], tuple[str | None, Sequence[str]]] | None = None,
) -> tuple[str, str, str] | None:
    """How the node's clock jumped since its last reading, or None (it did not).

    Parameters
    ----------
    last : (int, bool) or None
        The last reading [ns] and whether the clock was on simulated time then
        (``use_sim_time``); None: no reading yet.
    now_ns : int
        This reading [ns].
    sim_time : bool
        Whether the clock is on simulated time now.
    ahead_ns : int
        A clock advancing by more than this [ns] jumped ahead.
    clock : callable, optional
        ``clock() -> (topic, publishers)``: the resolved clock topic of the node's time source
        (None on wall time) and the nodes publishing on it
        (:func:`~ffsim_ros.node_support.common.clock_publishers`), asked only when the clock
        went back or use_sim_time changed; default: ``/clock``, publishers unknown.

    Returns
    -------
    (str, str, str) or None
        ``(what, cause, hint)``: how it jumped, the likely cause (a dropped goal's reason
        gives it), a hint for the log. A change of ``use_sim_time`` (set at run time) is
        named as such, whichever way the time went (it went back to 0, or to the simulation's
        time, on a switch to simulated time: "a new simulator?" misled), with the clock topic.
        A clock going back with several publishers on the clock topic is their interleaved
        times (two simulators on one ``/clock``), said with them and the remap that separates
        them (:func:`~ffsim_ros.node_support.common.shared_clock_warning`), not "a new
        simulator?".
    """
    if last is None:
        return None
    last_ns, last_sim = last
    if sim_time == last_sim and now_ns >= last_ns:
        if last_ns and now_ns - last_ns > ahead_ns:
            return (
                f'the clock jumped ahead by {(now_ns - last_ns) * 1e-9:.3f} s, from '
                f'{last_ns * 1e-9:.3f} s to {now_ns * 1e-9:.3f} s',
                'the clock set forward, or this node stalled?',
                f'more than {ahead_ns * 1e-9:g} s between two readings: the clock set forward, '
                'a simulator started at a later time, or this node stalled?',
            )
        return None
    topic, publishers = (None, ()) if clock is None else clock()
    topic = topic or '/clock'
    if sim_time != last_sim:
        source = f'the simulated time ({topic})' if sim_time else 'the wall clock'
        return (
            f"the node's use_sim_time changed to {str(sim_time).lower()}: the clock went from "
            f'{last_ns * 1e-9:.3f} s to {now_ns * 1e-9:.3f} s',
            'use_sim_time set at run time',
            f'the node clock is {source} now',
        )
    went_back = f'the clock went back from {last_ns * 1e-9:.3f} s to {now_ns * 1e-9:.3f} s'
    if len(publishers) > 1:
        return (
            went_back,
            f'{len(publishers)} publishers on {topic}',
            shared_clock_warning(topic, publishers),
        )
    return went_back, 'a reset of the simulation?', 'a new simulator?'


def stall_reason(
    stalled_for: float,
    state_topics: Sequence[str],
    clock_topic: str | None,
    publishers: Callable[[str], int],
    what: str = 'the simulation clock has not advanced',
) -> tuple[str, str] | None:
    """Why the node's clock stands (for ``stalled_for`` wall seconds; on wall time: why no
    fresh state came), or None: a paused simulation, whose publishers of the state and of the
    clock are all there.

    Parameters
    ----------
    stalled_for : float
        Wall seconds [s] the clock has not advanced.
    state_topics : sequence of str
        The resolved names of the state's subscriptions (``joint_states``, ``base_odom``).
    clock_topic : str or None
        The resolved name of the time source's clock subscription (``/clock``, remaps
        applied; :func:`~ffsim_ros.node_support.common.clock_topic`), None on wall time.
    publishers : callable
        ``publishers(topic) -> count`` (the node's ``count_publishers``).
    what : str
        What stood, for the reason (on wall time: ``'no fresh state came'``).

    Returns
    -------
    (str, str) or None
        ``(reason, likely cause)``: no simulator (a state topic without a publisher), or
        ``use_sim_time`` without a clock (the state published, nothing on the clock topic: a
        missing remap, a simulator with ``publish_clock`` false, ``use_sim_time`` set at run
        time by mistake).
    """
    missing = [topic for topic in state_topics if publishers(topic) == 0]
    if missing:
        return (
            f'{what} for {stalled_for:.1f} s and no simulator publishes {" or ".join(missing)}',
            'the simulator stopped?',
        )
    if clock_topic is not None and publishers(clock_topic) == 0:
        return (
            f'use_sim_time is true but no publisher on {clock_topic}: remap the clock topic or '
            'start the simulator with publish_clock',
            'no simulation clock',
        )
    return None


def stale_reason(
    joints: tuple | None,
    base: tuple | None,
    now_ns: int,
    timeout_ns: int,
    topics: Sequence[str] = ('joint_states', 'base_odom'),
    publishers: Callable[[str], int] | None = None,
) -> str | None:
    """Why the latest state is not fresh at ``now_ns`` [ns] (received more than ``timeout_ns``
    [ns] before, or after it, or never), None when it is; each stale message is named with
    the topic it is taken from and, when nothing publishes there, ``no publisher on <topic>``
    (a remap on one side only: the simulator's state went elsewhere).

    Parameters
    ----------
    joints, base : tuple or None
        The latest joint and base items, their last element the receipt time
        (``rclpy.time.Time``).
    now_ns : int
        The node clock's time [ns].
    timeout_ns : int
        ``state_timeout`` [ns].
    topics : sequence of str
        The resolved names of the ``joint_states`` and ``base_odom`` subscriptions.
    publishers : callable, optional
        ``publishers(topic) -> count`` (the node's ``count_publishers``), asked for the stale
        ones only; None: not counted.

    Returns
    -------
    str or None
    """
    stale = []
    for name, topic, item in zip(
        ('joint_states', 'base_odom'), topics, (joints, base), strict=True
    ):
        if item is not None and 0 <= now_ns - item[-1].nanoseconds <= timeout_ns:
            continue
        if item is None:
            detail = 'none since the start or the last jump'
        else:
            detail = f'received at {item[-1].nanoseconds * 1e-9:.3f} s'
        if publishers is not None and publishers(topic) == 0:
            stale.append(f'{name} ({detail}; no publisher on {topic})')
        else:
            stale.append(
                f'{name} ({detail})' if topic == name else f'{name} on {topic} ({detail})'
            )
    if not stale:
        return None
    return (
        f'no fresh {" and ".join(stale)} at {now_ns * 1e-9:.3f} s '
        f'(state_timeout {timeout_ns * 1e-9:g} s)'
    )


def state_age(items: Sequence[tuple | None], now_ns: int) -> float:
    """Seconds [s] since the older of the latest state messages ``items`` was received (each
    ``(..., received Time)``, the node's pairs), 0.0 when one is missing (no state: nothing
    can be pursued, nothing to stop).

    Parameters
    ----------
    items : sequence of tuple or None
        The latest joint and base items, their last element the receipt time
        (``rclpy.time.Time``).
    now_ns : int
        The node clock's time [ns].

    Returns
    -------
    float
    """
    if any(item is None for item in items):
        return 0.0
    return (now_ns - min(item[-1].nanoseconds for item in items)) * 1e-9


def base_collision_shapes(
    urdf: str, model: D.Model, source: str
) -> tuple[list[CollisionShape], list[str]]:
    """The robot's ``<collision>`` primitives (goals inside those of the base body are refused,
    :meth:`~ffsim_ros.control.ReactionlessController.check_goal`), and the links on the base
    whose mesh shapes are left out (for a warning).

    Parameters
    ----------
    urdf : str
        URDF text.
    model : Model
        The model of ``urdf``.
    source : str
        Parameter name used in messages.

    Returns
    -------
    shapes : list of CollisionShape
        Collision primitives of all links.
    mesh_links : list of str
        Links on the base body whose meshes were left out, sorted.

    Raises
    ------
    ParameterValueError
        Collision geometry that cannot be read, naming ``source`` (the parameter it came from).
    """
    try:
        return goal_keepout_shapes(urdf, model)
    except ValueError as exc:  # (UnknownNameError is one)
        raise ParameterValueError(f'{source}: invalid collision geometry: {exc}') from None
