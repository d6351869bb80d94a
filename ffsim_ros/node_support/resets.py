"""Resets of the simulated state: announced by the simulator, seen by the controller.

A reset of the robot's state (``~/reset``, ``reset_simulation`` or ``set_simulation_state``
stopped with the state scope, ``set_entity_state`` of the robot) moves the robot at once; a
controller must drop what it pursued from the old state. The controller inferred resets from
jumps of the measured positions only (:class:`StateJumps`), so one that moved the arm by less
than ``jump_threshold`` went unseen: a trajectory pulled the arm back onto its time-indexed
path (190 N m one sample after the reset) and ended SUCCEEDED, an ee_goal stayed active.

The simulator now says so on ``resets`` (:data:`RESETS_TOPIC`, relative: it follows the
simulator's namespace and remaps as ``joint_states`` does; :data:`RESETS_QOS`, transient
local: a node that joins later gets the last one), one
``diagnostic_msgs/DiagnosticArray`` per reset (:func:`reset_message`): ``header.stamp`` the
stamp of the first state after it, one status whose ``values`` hold the reset's ``count``
(1 for the first of the simulator's run) and whose ``message`` says which reset it was. It is
published before that state, and the simulator waits (at most :data:`ACK_TIMEOUT` wall
seconds, :func:`wait_acked`) until every reliable subscriber has acknowledged it: DDS orders
the samples of one topic, not those of two, and a controller that took the new state first
would command from it with the old goal. The controller's single-threaded executor takes the
ready subscriptions in the order they were created (``resets`` before the state), so a state
published after the acknowledgement is never taken before the announcement.

On the controller's side :class:`ResetWatch` says which announcements are news and which
state messages are older than the last reset (in flight when it was announced: skipped), and
its :class:`StampGate` drops a state message stamped far from the node's simulated clock (a
bag replay, a ``joint_state_publisher`` with wall-clock stamps beside the simulator): one
forged stamp became the reference of :class:`StateJumps`, and the genuine next message read as
the stamps going back (a reset), aborting the goal.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from rclpy.duration import Duration
from rclpy.node import Node
from rclpy.publisher import Publisher
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy

from ffsim_ros.dynamics.lie import quat_angle

from .common import stamp_ns, to_stamp

#: The topic of the announcements (relative to the simulator's namespace).
RESETS_TOPIC = 'resets'
#: Its QoS: reliable (acknowledged), transient local, the last reset kept.
RESETS_QOS = QoSProfile(
    depth=1,
    reliability=ReliabilityPolicy.RELIABLE,
    durability=DurabilityPolicy.TRANSIENT_LOCAL,
)
#: Wall seconds the simulator's physics thread waits for the subscribers' acknowledgements of
#: an announcement (a subscriber that died without a goodbye never acknowledges).
ACK_TIMEOUT = 0.5
#: Wall seconds between two looks at the acknowledgements (rclpy's own wait holds the GIL:
#: the whole simulator process stood still while it waited).
ACK_POLL = 0.0005
#: The state streams a controller takes (:meth:`ResetWatch.admit`).
STREAMS = ('joint_states', 'base_odom')


@dataclass(frozen=True)
class Reset:
    """One announced reset.

    Attributes
    ----------
    count : int
        Resets of the simulator's run so far, this one included (>= 1).
    stamp_ns : int
        Stamp of the first state after it [ns].
    what : str
        Which reset (the service and what it reset).
    """

    count: int
    stamp_ns: int
    what: str


def reset_message(reset: Reset, name: str, hardware_id: str) -> DiagnosticArray:
    """The announcement of ``reset`` on :data:`RESETS_TOPIC`.

    Parameters
    ----------
    reset : Reset
    name : str
        The status's ``name`` (the simulator node's).
    hardware_id : str
        The robot's name.

    Returns
    -------
    DiagnosticArray
        ``header.stamp``: the first state after the reset; one status, level OK, ``message``
        ``reset.what``, ``values`` ``count`` and ``stamp`` (seconds, 9 decimals).
    """
    status = DiagnosticStatus(
        level=DiagnosticStatus.OK,
        name=name,
        message=reset.what,
        hardware_id=hardware_id,
        values=[
            KeyValue(key='count', value=str(reset.count)),
            KeyValue(key='stamp', value=f'{reset.stamp_ns * 1e-9:.9f}'),
        ],
    )
    out = DiagnosticArray(status=[status])
    out.header.stamp = to_stamp(reset.stamp_ns)
    return out


def read_reset(msg: DiagnosticArray) -> Reset:
    """The :class:`Reset` of an announcement (:func:`reset_message`).

    Parameters
    ----------
    msg : DiagnosticArray

    Returns
    -------
    Reset

    Raises
    ------
    ValueError
        Naming what was expected and what came (no status, no integer ``count`` >= 1, a
        negative stamp).
    """
    if len(msg.status) != 1:
        raise ValueError(f'expected one status, got {len(msg.status)}')
    values = {kv.key: kv.value for kv in msg.status[0].values}
    text = values.get('count', '')
    if not (text.isascii() and text.isdigit() and 0 < int(text) < 2**63):
        raise ValueError(f"expected a value 'count' (an integer >= 1), got {text[:40]!r}")
    stamp = stamp_ns(msg.header.stamp)
    if stamp < 0:
        raise ValueError(f'expected a header.stamp >= 0, got {stamp * 1e-9:.9f} s')
    return Reset(int(text), stamp, msg.status[0].message[:200])


def wait_acked(publisher: Publisher, timeout: float = ACK_TIMEOUT) -> bool:
    """Wait until every reliable subscriber of ``publisher`` acknowledged what it published
    (polled: rclpy's blocking wait holds the GIL), at most ``timeout`` wall seconds.

    Parameters
    ----------
    publisher : Publisher
    timeout : float
        [s].

    Returns
    -------
    bool
        Whether all acknowledged in time.
    """
    deadline = time.monotonic() + timeout
    now = Duration(nanoseconds=0)
    while not publisher.wait_for_all_acked(now):
        if time.monotonic() >= deadline:
            return False
        time.sleep(ACK_POLL)
    return True


def stamp_off_clock(stamp: int, now_ns: int, bound_ns: int, sim_time: bool) -> str | None:
    """How a state message stamped ``stamp`` [ns] is off the node clock's ``now_ns`` [ns] by
    more than ``bound_ns`` [ns] either way, or None (it is not, or it cannot be judged).

    Only simulated time is judged (``sim_time``: the node's ``use_sim_time``), and only once a
    ``/clock`` came (``now_ns`` > 0): on wall time the simulator's stamps are its simulated
    time, in no relation to the node's clock.

    Parameters
    ----------
    stamp, now_ns, bound_ns : int
        [ns]
    sim_time : bool

    Returns
    -------
    str or None
    """
    if not sim_time or now_ns <= 0 or abs(stamp - now_ns) <= bound_ns:
        return None
    way = 'ahead of' if stamp > now_ns else 'behind'
    return (
        f'stamped {stamp * 1e-9:.3f} s, {abs(stamp - now_ns) * 1e-9:.3f} s {way} the node clock '
        f'({now_ns * 1e-9:.3f} s, simulated; more than {bound_ns * 1e-9:g} s)'
    )


class StampGate:
    """Drops a state message stamped more than ``bound_ns`` from the node's simulated clock
    (:func:`stamp_off_clock`), logging it (``log``, throttled by the node) with the stamp, the
    clock and the publisher count on its topic. Such a message never becomes the reference of
    the jumps or of :class:`ResetWatch`. A reset of the simulated time is still seen: its
    ``/clock`` goes back with the stamps (the node's clock jump), and a state taken before
    that ``/clock`` is dropped here until it comes.

    Parameters
    ----------
    node : Node
        Its clock and its publisher counts.
    bound_ns : int
        [ns] (the controller's clock-jump bound).
    log : callable
        ``log(text)``.
    """

    def __init__(self, node: Node, bound_ns: int, log: Callable[[str], None]) -> None:
        self.node, self.bound_ns, self.log = node, int(bound_ns), log

    def near(self, stream: str, stamp: int) -> bool:
        """Whether a message of ``stream`` stamped ``stamp`` [ns] is near enough the node's
        clock to be taken (else it is logged).

        Parameters
        ----------
        stream : str
        stamp : int
            [ns]

        Returns
        -------
        bool
        """
        clock = self.node.get_clock()
        why = stamp_off_clock(
            stamp, clock.now().nanoseconds, self.bound_ns, clock.ros_time_is_active
        )
        if why is None:
            return True
        topic = self.node.resolve_topic_name(stream)
        count = self.node.count_publishers(topic)
        self.log(
            f'{topic}: a message {why}: dropped, the last good state kept ({count} '
            f'publisher(s) on {topic}: another with other stamps, a bag replay?)'
        )
        return False


class ResetWatch:
    """The controller's view of the announced resets (module docstring).

    A reset is news when it is another than the last one seen and later than the first state
    message taken since the start (or :meth:`clear`): the announcement a node gets on joining
    (transient local) is of a reset before anything it took. After news, the state messages
    of each stream stamped before the reset are skipped (in flight when it was announced),
    until the stream's first message of after it: one topic's messages come in order, so no
    older one follows that (a message stamped before the previous one of its stream is no
    message in flight but the stamps going back -- a new simulator -- and is taken). With a
    ``gate`` (:class:`StampGate`), a message stamped far from the node's clock is not taken.

    Parameters
    ----------
    gate : StampGate, optional
    """

    def __init__(self, gate: StampGate | None = None) -> None:
        self.gate = gate
        self._last: Reset | None = None
        self._first_ns: int | None = None  # the first state message taken since the clear
        self._reset_ns = 0  # the stamp of the last reset that was news
        self._waiting: set[str] = set()  # streams without a message of after it yet
        self._previous: dict[str, int] = {}  # each stream's last stamp [ns]

    def announced(self, reset: Reset) -> bool:
        """Record ``reset``; whether it is news (class docstring).

        Parameters
        ----------
        reset : Reset

        Returns
        -------
        bool
        """
        last, self._last = self._last, reset
        if last is not None and (last.count, last.stamp_ns) == (reset.count, reset.stamp_ns):
            return False
        if self._first_ns is None or reset.stamp_ns <= self._first_ns:
            return False
        self._reset_ns = reset.stamp_ns
        self._waiting = set(STREAMS)
        return True

    def admit(self, stream: str, stamp: int) -> bool:
        """Whether to take a message of ``stream`` (one of :data:`STREAMS`) stamped ``stamp``
        [ns]: False for one of before the last reset, or off the node's clock (class
        docstring).

        Parameters
        ----------
        stream : str
        stamp : int
            [ns]

        Returns
        -------
        bool
        """
        if self.gate is not None and not self.gate.near(stream, stamp):
            return False
        previous, self._previous[stream] = self._previous.get(stream), stamp
        if stream in self._waiting:
            if stamp < self._reset_ns and (previous is None or stamp >= previous):
                return False
            self._waiting.discard(stream)
        if self._first_ns is None:
            self._first_ns = stamp
        return True

    def restart(self, stamp: int | None = None) -> None:
        """The state was dropped (a clock jump, a jump of the state): resets later than
        ``stamp`` [ns] (the message taken now; None: the next one) are news.

        Parameters
        ----------
        stamp : int or None
            [ns]
        """
        self._first_ns = stamp
        self._waiting.clear()
        if stamp is None:  # (a new simulator: its resets count from 1 again, stamps repeat)
            self._previous.clear()
            self._last = None


class StateJumps:
    """Jumps of the measured state between two messages of a stream (the reset detection of
    a simulator that does not announce them, and of teleports): stamps going back, or a
    position farther than ``threshold`` from where the previous message and the velocities
    lead (:func:`~ffsim_ros.control.trajectory.continuity_gap`) for messages at most
    ``window`` apart (the prediction's error grows with the square of the interval: a
    stalled executor, dropped messages would read as jumps).

    Parameters
    ----------
    threshold : float
        [rad | m] (``jump_threshold``).
    window : float
        [s]
    """

    def __init__(self, threshold: float, window: float) -> None:
        self.threshold, self.window = float(threshold), float(window)
        self._joints: tuple[float, np.ndarray, np.ndarray] | None = None
        self._base: tuple[float, np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None = None

    def clear(self) -> None:
        """Forget the previous messages (nothing to compare the next ones with)."""
        self._joints = self._base = None

    def joints(self, stamp: float, position: np.ndarray, velocity: np.ndarray) -> str | None:
        """A ``joint_states`` message at ``stamp`` [s]: how the state jumped, or None.

        Parameters
        ----------
        stamp : float
            [s]
        position, velocity : (n,) ndarray
            [rad | m], [rad/s | m/s]

        Returns
        -------
        str or None
        """
        previous, self._joints = self._joints, (stamp, position, velocity)
        if previous is None:
            return None
        gap = continuity_gap(previous, self._joints)
        return self._judge('joint_states', previous[0], stamp, gap)

    def base(self, stamp: float, q_base: np.ndarray, v_base: np.ndarray) -> str | None:
        """A ``base_odom`` message at ``stamp`` [s]: how the state jumped, or None.

        Parameters
        ----------
        stamp : float
            [s]
        q_base : (7,) ndarray
            Base CoM position [m] and attitude quaternion (x, y, z, w).
        v_base : (6,) ndarray
            Base CoM velocity [m/s] and angular velocity [rad/s].

        Returns
        -------
        str or None
        """
        quat = q_base[3:7]
        previous = self._base
        self._base = (stamp, q_base[:3], v_base[:3], quat, v_base[3:])
        if previous is None:
            return None
        t0, r0, v0, quat0, w0 = previous
        moved = continuity_gap((t0, r0, v0), (stamp, q_base[:3], v_base[:3]))
        rate = 0.5 * (np.linalg.norm(w0) + np.linalg.norm(v_base[3:]))
        turned = quat_angle(quat0, quat) - rate * abs(stamp - t0)
        return self._judge('base_odom', t0, stamp, max(moved, turned))

    def _judge(self, topic: str, before: float, now: float, gap: float) -> str | None:
        if now < before:
            return f'{topic} stamps went back from {before:.3f} s to {now:.3f} s'
        if gap > self.threshold and now - before <= self.window:
            return f'{topic} jumped by {gap:.4g} (jump_threshold {self.threshold:g})'
        return None


def continuity_gap(
    previous: tuple[float, np.ndarray, np.ndarray], current: tuple[float, np.ndarray, np.ndarray]
) -> float:
    """How far a measured state ``current = (t, p, v)`` is from where the ``previous`` one
    leads: ``max |p - p_prev - (v_prev + v) (t - t_prev) / 2|`` (the trapezoid: exact for a
    constant acceleration, so a continuous motion sampled at ``dt`` stays within about
    ``|delta a| dt^2 / 8``; a reset or a teleport shows as the jump itself).

    Parameters
    ----------
    previous, current : ``(t, p, v)``: time [s], joint positions (n,) [rad | m] and
        velocities (n,) [rad/s | m/s] (the gap returned is in [rad | m]).
    """
    t0, p0, v0 = previous
    t1, p1, v1 = current
    predicted = np.asarray(p0) + 0.5 * (np.asarray(v0) + np.asarray(v1)) * (t1 - t0)
    return float(np.max(np.abs(np.asarray(p1) - predicted))) if np.size(p1) else 0.0
