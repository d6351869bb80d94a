"""What both nodes share besides their parameters: errors, the robot loader, stamps, ``main``.

Nothing here imports a node; the nodes import this module (and
:mod:`ffsim_ros.node_support.parameters`).
"""

from __future__ import annotations

import array
import codecs
import math
import re
import signal
import sys
import threading
import time
import traceback
from collections import OrderedDict, deque
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import rclpy
from builtin_interfaces.msg import Time
from rclpy.exceptions import ParameterException
from rclpy.executors import (
    ConditionReachedException,
    Executor,
    ExternalShutdownException,
    MultiThreadedExecutor,
    ShutdownException,
    SingleThreadedExecutor,
    TimeoutException,
)
from rclpy.node import Node
from rclpy.subscription import Subscription
from rclpy.time_source import TimeSource

import ffsim_ros.dynamics as D
from ffsim_ros.files import FileKindError, read_regular_file
from ffsim_ros.resources import sample_robot

if TYPE_CHECKING:
    from rosgraph_msgs.msg import Clock

#: Sample robot loaded when neither ``robot_description`` nor ``robot_file`` is set.
DEFAULT_ROBOT = 'ffsim_servicer_7dof'

#: Exit status of a node that cannot start with its parameters (the message names the one).
EXIT_INVALID_PARAMETER = 2
#: Exit status of a node whose worker thread failed (the message says how).
EXIT_FATAL = 1

#: Largest robot description a node reads or accepts [bytes] (the URDFs of real robots are
#: well under 2 MB; a larger value is a mistake, e.g. a mesh or a device file).
MAX_ROBOT_BYTES = 16 * 1024 * 1024

NS_PER_S = 1_000_000_000


class ParameterValueError(ValueError):
    """A parameter value the node cannot run with; the message starts with the parameter name."""


class FatalNodeError(RuntimeError):
    """A node cannot go on (e.g. its physics thread failed): ``main`` exits with a message."""


class QuitRequested(Exception):  # noqa: N818 - a request, not an error
    """Raised in the executor by a node asked to end through one of its interfaces (the
    simulator's ``set_simulation_state`` quitting): ``main`` exits with status 0."""


#: Longest text a message gives of a value that came [characters] (a 2 000 000-element array
#: made a 10 MB reason of a refused parameter set).
SHOWN_CHARS = 200

_PLURALS = {bool: 'bools', int: 'integers', float: 'doubles', str: 'strings', bytes: 'bytes'}


def shown(value: object, limit: int = SHOWN_CHARS) -> str:
    """``repr(value)`` for a message, of about ``limit`` characters at most.

    A longer string is cut, saying its length (``'xxx'... (100000 characters)``); a longer
    array (list, tuple, ``array.array``) is named with its size and its first elements
    (``an array of 2000000 doubles [1.0, 1.0, ...]``), without building the whole text.

    Parameters
    ----------
    value : object
        What came (a parameter value or name).
    limit : int
        Characters kept.

    Returns
    -------
    str
        The text.
    """
    if isinstance(value, str):
        if len(value) <= limit:
            return repr(value)
        return f'{value[:limit]!r}... ({len(value)} characters)'
    if not isinstance(value, list | tuple | array.array):
        text = repr(value)
        return text if len(text) <= limit else f'{text[:limit]}... ({len(text)} characters)'
    parts: list[str] = []
    size = 2
    for item in value:
        part = shown(item, limit // 4)
        size += len(part) + 2
        if size > limit:
            break
        parts.append(part)
    else:
        return f'[{", ".join(parts)}]'
    kinds = {type(x) for x in value}
    kind = _PLURALS.get(kinds.pop(), 'values') if len(kinds) == 1 else 'values'
    return f'an array of {len(value)} {kind} [{", ".join([*parts, "..."])}]'


def load_robot(
    robot_description: str, robot_file: str, *, tree_only: bool = False
) -> tuple[D.Model, str, tuple[D.LoopClosure, ...]]:
    """Model, URDF text and loop closures from the ``robot_description`` / ``robot_file``
    parameters.

    ``robot_description`` (URDF XML) wins; else ``robot_file`` (a path, read by
    :func:`read_robot_file`); else the sample robot :data:`DEFAULT_ROBOT`. The loop closures
    are the URDF+ ``<loop>`` elements (:func:`ffsim_ros.dynamics.loop_closures_from_urdf`),
    checked against the model (their links exist, on two different bodies); empty for a
    tree.

    Parameters
    ----------
    robot_description : str
        URDF XML, or ''.
    robot_file : str
        A URDF path, or ''.
    tree_only : bool
        Refuse loop closures.

    Returns
    -------
    model : Model
    urdf : str
        The URDF text.
    loops : tuple of LoopClosure

    Raises
    ------
    ParameterValueError
        An unreadable file, an invalid URDF or loop closure, or (``tree_only``) a robot with
        loop closures, naming the parameter it came from.
    """
    text = robot_description
    source = 'robot_description'
    if not text:
        path = robot_file or str(sample_robot(DEFAULT_ROBOT))
        source = f'robot_file ({path})'
        text = read_robot_file(path)
    try:
        model = D.load_urdf(text)
    except (ValueError, NotImplementedError) as exc:
        raise ParameterValueError(f'{source}: invalid robot: {exc}') from None
    try:
        loops = D.loop_closures_from_urdf(text)
        if loops:
            D.ClosedChain(model, loops)  # the links exist, each loop joins two bodies
    except ValueError as exc:  # UnknownNameError is one
        raise ParameterValueError(f'{source}: invalid loop closure: {exc}') from None
    if loops and tree_only:
        raise ParameterValueError(
            f'{source}: expected a tree, got a robot with loop closures (URDF+ <loop> '
            f'{[lp.name for lp in loops]})'
        )
    return model, text, loops


class CheckedClockCallback:
    """rclpy's ``/clock`` callback (``TimeSource.clock_callback``) behind the check rclpy does
    not make: a ``builtin_interfaces/Time`` whose ``nanosec`` is not below 1e9 is no valid time
    (rclpy read ``nanosec=4294967295`` as 4.295 s, where a negative ``sec`` raises); it raises
    ValueError naming what was expected and what came, so that the executor drops it as it
    drops a negative ``sec`` (:func:`dropped_clock_message`).

    Parameters
    ----------
    callback : the time source's bound ``clock_callback``.
    """

    def __init__(self, callback: Callable[[object], None]) -> None:
        self.callback = callback
        self.source = callback.__self__  # type: ignore[attr-defined]

    def __call__(self, msg: Clock) -> None:
        """Pass ``msg`` on to the time source's callback once its stamp is a valid time.

        Parameters
        ----------
        msg : rosgraph_msgs/Clock
            A ``/clock`` message; ``clock.nanosec`` must be in ``[0, 1e9)`` [ns].

        Raises
        ------
        ValueError
            ``clock.nanosec`` not in ``[0, 1e9)`` (nothing passed on).
        """
        nanosec = msg.clock.nanosec
        if not 0 <= nanosec < NS_PER_S:
            raise ValueError(f'clock.nanosec: expected less than {NS_PER_S}, got {nanosec}')
        self.callback(msg)


def _clock_source(entity: object) -> TimeSource | None:
    """The rclpy time source whose ``/clock`` subscription ``entity`` is, else None."""
    if not isinstance(entity, Subscription):
        return None
    callback = entity.callback
    if isinstance(callback, CheckedClockCallback):
        return callback.source
    source = getattr(callback, '__self__', None)
    return source if isinstance(source, TimeSource) else None


def clock_topic(node: Node) -> str | None:
    """The topic ``node``'s time source takes the simulated time from: the resolved name of
    its ``/clock`` subscription, remaps applied (``-r /clock:=/sim/clock`` gives
    ``/sim/clock``); None without one (``use_sim_time`` false: rclpy subscribes while it is
    true, also when it is set at run time).

    Parameters
    ----------
    node : Node

    Returns
    -------
    str or None
    """
    for subscription in node.subscriptions:
        if _clock_source(subscription) is not None:
            return subscription.topic_name
    return None


def publisher_names(node: Node, topic: str) -> list[str]:
    """Fully qualified names of the nodes publishing on ``topic`` (a resolved name: the
    graph does not remap it), one per publisher, as ``node`` sees the graph.

    Parameters
    ----------
    node : Node
    topic : str

    Returns
    -------
    list of str
    """
    return [
        f'{info.node_namespace.rstrip("/")}/{info.node_name}'
        for info in node.get_publishers_info_by_topic(topic)
    ]


def clock_publishers(node: Node) -> tuple[str | None, list[str]]:
    """The topic ``node``'s time source takes the simulated time from (:func:`clock_topic`;
    None on wall time) and the nodes publishing on it (:func:`publisher_names`; two graph
    queries: for a rare event, not every callback).

    Parameters
    ----------
    node : Node

    Returns
    -------
    topic : str or None
    publishers : list of str
    """
    topic = clock_topic(node)
    return topic, [] if topic is None else publisher_names(node, topic)


def shared_clock_warning(topic: str, publishers: Sequence[str]) -> str:
    """The warning for the clock ``topic`` published by the nodes ``publishers``: '' when
    there is one (or none).

    Two simulators on one ``/clock`` (both with ``publish_clock``, no remap) interleave their
    simulated times: the controllers see the time go back and stop. The simulators warn with
    it (:class:`~ffsim_ros.node_support.physics_status.ClockWatch`), the controller when its
    clock goes back (:func:`~ffsim_ros.node_support.controller_watch.clock_jump`).

    Parameters
    ----------
    topic : str
        Fully qualified clock topic.
    publishers : sequence of str
        Names of the nodes publishing on it.

    Returns
    -------
    str
    """
    if len(publishers) <= 1:
        return ''
    return (
        f'{len(publishers)} publishers on the clock topic {topic} '
        f'({", ".join(repr(name) for name in sorted(publishers))}): their simulated times '
        'interleave and the nodes using it see the time go back; give each simulator a clock '
        'of its own (-r /clock:=clock in each namespace, on the simulator and its controller, '
        'as the launch files do) or set publish_clock:=false'
    )


def check_clock_messages(entity: object) -> None:
    """Put rclpy's ``/clock`` subscription ``entity`` (any other entity: nothing done) behind
    :class:`CheckedClockCallback`, once; rclpy reads a subscription's callback when it runs
    it, so the message taken next is checked. The subscription is created by rclpy's time
    source when ``use_sim_time`` is set (at start or later), hence checked per execution.

    Parameters
    ----------
    entity : object
        An entity the executor is about to run.
    """
    if isinstance(entity, Subscription) and not isinstance(entity.callback, CheckedClockCallback):
        if _clock_source(entity) is not None:
            entity.callback = CheckedClockCallback(entity.callback)


def dropped_clock_message(entity: object, exception: BaseException | None, node: object) -> bool:
    """Whether ``exception`` came from rclpy's own ``/clock`` subscription refusing a message
    (``Time.from_msg`` raises ValueError on negative seconds, :class:`CheckedClockCallback`
    on ``nanosec`` >= 1e9; any node with ``use_sim_time`` ended with exit code 1 on a negative
    one): logged on ``node`` (throttled) and dropped.

    Parameters
    ----------
    entity : object
        The executed entity.
    exception : BaseException or None
        What its handler raised.
    node : object
        The node it belongs to (``wait_for_ready_callbacks``' third value).

    Returns
    -------
    bool
    """
    if not isinstance(exception, ValueError) or _clock_source(entity) is None:
        return False
    if isinstance(node, Node):
        node.get_logger().warning(
            f'/clock message dropped ({exception}); the clock keeps its last time',
            throttle_duration_sec=1.0,
        )
    return True


def _ready_callback(
    executor: Executor, timeout_sec: float | None, wait_condition: Callable[[], bool]
) -> tuple | None:
    """``(handler, entity, node)`` of the next ready callback, or None (a timeout, a shutdown,
    the wait condition reached), as rclpy's executors wait for it."""
    try:
        return executor.wait_for_ready_callbacks(timeout_sec, None, wait_condition)
    except (
        ConditionReachedException,
        ExternalShutdownException,
        ShutdownException,
        TimeoutException,
    ):
        return None


def _run_here(handler: object, entity: object, node: object) -> None:
    """Run ``handler`` in this thread and raise what it raised, except a ``/clock`` message
    rclpy's time source refused or that is no valid time (:func:`check_clock_messages`,
    :func:`dropped_clock_message`)."""
    check_clock_messages(entity)
    handler()  # type: ignore[operator]
    exception = handler.exception()  # type: ignore[attr-defined]
    if exception is not None and not dropped_clock_message(entity, exception, node):
        raise exception


class GuardedSingleThreadedExecutor(SingleThreadedExecutor):
    """rclpy's ``SingleThreadedExecutor`` that drops a ``/clock`` message rclpy's time source
    cannot take (a negative ``sec``) instead of ending the node, and one that is no valid time
    (``nanosec`` >= 1e9) instead of reading it (:func:`check_clock_messages`,
    :func:`dropped_clock_message`), with a warning; the default executor of
    :func:`run_node`."""

    def _spin_once_impl(
        self,
        timeout_sec: float | None = None,
        wait_condition: Callable[[], bool] = lambda: False,
    ) -> None:
        ready = _ready_callback(self, timeout_sec, wait_condition)
        if ready is not None:
            _run_here(*ready)


class TopicsInlineExecutor(MultiThreadedExecutor):
    """A multi-threaded executor that runs subscription callbacks in the spinning thread.

    Services, actions and other waitables go to the thread pool as in rclpy's
    ``MultiThreadedExecutor`` (the simulator's services wait for its physics thread); a
    subscription's message is taken and handled at once, before the next wait. With rclpy's
    executor a message waits for a worker thread, and meanwhile, with rmw_fastrtps, the
    subscription's QoS-event status condition (rclpy gives every subscription an
    incompatible-QoS and an incompatible-type handler) stays triggered: the main thread's
    wait returned at once with nothing to do until the worker got the GIL. Measured on the
    simulator (2026-11-26, 2-core AMD EPYC): 100 Hz of effort commands, 35 000 empty wake-ups
    in 12 s and a whole core spun, the physics at 0.40 of real time beside the controller;
    with ``use_sim_time`` (its own /clock subscription) 0.11-0.14.
    """

    def _spin_once_impl(
        self,
        timeout_sec: float | None = None,
        wait_condition: Callable[[], bool] = lambda: False,
    ) -> None:
        ready = _ready_callback(self, timeout_sec, wait_condition)
        if ready is None:
            return
        handler, entity, _ = ready
        if isinstance(entity, Subscription):
            _run_here(*ready)
            return
        # the rest is MultiThreadedExecutor._spin_once_impl's own pool path (its thread pool
        # and futures, the same attributes since Humble): only subscriptions are taken inline
        self._executor.submit(handler)
        self._futures.append(handler)
        for future in self._futures[:]:
            if future.done():
                self._futures.remove(future)
                future.result()  # raise any exceptions


def read_robot_file(
    path: str,
    max_bytes: int = MAX_ROBOT_BYTES,
    what: str = 'robot_file',
    content: str = 'a URDF',
    text: str = 'XML text',
) -> str:
    """The text of the URDF file ``path`` (the ``robot_file`` parameter), read safely.

    The file is opened without blocking (a FIFO would otherwise wait for a writer), must be a
    regular file (not ``/dev/zero``, a directory or a socket) of at most ``max_bytes`` bytes
    (at most ``max_bytes + 1`` are ever read, so a file growing meanwhile cannot exhaust the
    memory) and text without NUL characters (not a binary), decoded as an XML parser would
    (:func:`xml_encoding`: a byte-order mark, else the encoding the XML declaration names,
    else UTF-8) so that the text returned is what the parser of the bytes would have read.

    Parameters
    ----------
    path : str
        The file.
    max_bytes : int
        Largest size taken.
    what : str
        The field named in the errors (``uri`` for a spawned target's file).
    content, text : str
        What the file should hold, in the errors: ``expected {content} ({text}), got binary
        data``.

    Returns
    -------
    str

    Raises
    ------
    ParameterValueError
        ``'robot_file: ...'`` (``what``) saying which of these failed.
    """
    try:
        data = read_regular_file(path, max_bytes, what)
    except FileKindError as exc:
        raise ParameterValueError(str(exc)) from None
    except OSError as exc:
        raise ParameterValueError(f'{what}: cannot read {path!r}: {exc.strerror}') from None
    codec = xml_encoding(data)
    binary = ParameterValueError(
        f'{what}: expected {content} ({text}), got binary data in {path!r}'
    )
    wide = codec.replace('_', '-').lower().startswith(('utf-16', 'utf-32'))
    if b'\x00' in data and not wide:  # before decoding: a binary is named as one
        raise binary
    try:
        decoded = data.decode(codec)
    except LookupError:
        raise ParameterValueError(
            f'{what}: expected {content} ({text} in UTF-8 or an encoding Python knows), got '
            f'{path!r} declaring encoding {codec!r}'
        ) from None
    except UnicodeDecodeError as exc:
        name = 'UTF-8' if codec in ('utf-8', 'utf-8-sig') else codec
        raise ParameterValueError(
            f'{what}: expected {content} ({text} in UTF-8 or the encoding it declares), got '
            f'{path!r} with a non-{name} byte at offset {exc.start}'
        ) from None
    if '\x00' in decoded:
        raise binary
    return decoded


_BOMS = (  # UTF-32 first: its little-endian mark begins with UTF-16's
    (codecs.BOM_UTF32_LE, 'utf-32'),
    (codecs.BOM_UTF32_BE, 'utf-32'),
    (codecs.BOM_UTF8, 'utf-8-sig'),
    (codecs.BOM_UTF16_LE, 'utf-16'),
    (codecs.BOM_UTF16_BE, 'utf-16'),
)
_DECLARED = re.compile(rb'<\?xml[^>]*?\sencoding\s*=\s*["\']([A-Za-z][A-Za-z0-9._-]*)["\']')


def xml_encoding(data: bytes) -> str:
    """The codec of an XML document's bytes, as an XML parser finds it (XML 1.0, appendix F):
    a byte-order mark, else the ``encoding`` of the XML declaration, else UTF-8.

    Parameters
    ----------
    data : bytes
        The document.

    Returns
    -------
    str
        A Python codec name (``'utf-8'`` when nothing is declared).
    """
    for bom, codec in _BOMS:
        if data.startswith(bom):
            return codec
    declared = _DECLARED.match(data[:256])
    return declared.group(1).decode('ascii') if declared else 'utf-8'


class LogThrottle:
    """At most one log line per ``period`` wall seconds for each *kind* of message.

    rclpy's ``throttle_duration_sec`` throttles per call site, so a site that reports several
    kinds of bad input (a NaN goal, a goal in the wrong frame, an unreachable goal) would show
    only the first of a burst. Here the kind is the text with its numbers and quoted strings
    masked, so a flood of one kind (100 bad goals a second) gives one line a second, with the
    count of the lines held back since, while a different kind still gets its own line. At
    most ``max_kinds`` kinds are remembered (the oldest forgotten): the memory is bounded
    whatever the input. Input that defeats the masking (a name holding both quote characters,
    whose ``repr`` escapes one) cannot flood the log either: at most ``max_lines`` lines of all
    kinds are logged per ``period``; and a line is cut to ``max_chars`` characters (a 1 MB
    name in a message made a 1 MB log line).

    Parameters
    ----------
    period : float
        [s], wall time.
    max_kinds : int
    max_lines : int
        Lines of all kinds per ``period``.
    max_chars : int
        Longest line logged.
    """

    _VARIABLE = re.compile(
        r"'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"|[-+]?(?:\d[\d_.]*(?:e[-+]?\d+)?|nan|inf)",
        re.I,
    )

    def __init__(
        self, period: float = 1.0, max_kinds: int = 64, max_lines: int = 10, max_chars: int = 2000
    ) -> None:
        self.period = float(period)
        self.max_kinds = int(max_kinds)
        self.max_lines = int(max_lines)
        self.max_chars = int(max_chars)
        self._kinds: OrderedDict[str, list] = OrderedDict()  # kind -> [last wall time, held]
        self._recent: deque[float] = deque()  # wall times of the lines of the last period

    def admit(self, text: str) -> str | None:
        """``text`` to log now -- with the count of the lines of its kind held back since the
        last one -- or None when a line of its kind was logged less than ``period`` ago.

        The caller logs it (``if line := throttle.admit(text): logger.error(line)``), so each
        log call keeps one severity, as rclpy requires of a call site.

        Parameters
        ----------
        text : str

        Returns
        -------
        str or None
        """
        if len(text) > self.max_chars:
            text = f'{text[: self.max_chars]}... ({len(text) - self.max_chars} more characters)'
        kind = self._VARIABLE.sub('#', text)
        now = time.monotonic()
        while self._recent and now - self._recent[0] >= self.period:
            self._recent.popleft()
        entry = self._kinds.get(kind)
        if entry is not None and now - entry[0] < self.period:
            entry[1] += 1
            return None
        if len(self._recent) >= self.max_lines:  # many kinds at once: held, counted
            if entry is None:
                entry = self._kinds[kind] = [-math.inf, 0]
                self._trim()
            entry[1] += 1
            return None
        self._recent.append(now)
        held = entry[1] if entry is not None else 0
        self._kinds[kind] = [now, 0]
        self._kinds.move_to_end(kind)
        self._trim()
        return text + (f' ({held} more like it not shown)' if held else '')

    def _trim(self) -> None:
        """Forget the oldest kinds beyond ``max_kinds``."""
        while len(self._kinds) > self.max_kinds:
            self._kinds.popitem(last=False)


def to_stamp(ns: int) -> Time:
    """``builtin_interfaces/Time`` of a time in integer nanoseconds (>= 0).

    Parameters
    ----------
    ns : int
        [ns]

    Returns
    -------
    Time
    """
    return Time(sec=ns // NS_PER_S, nanosec=ns % NS_PER_S)


def stamp_ns(stamp: Time) -> int:
    """Integer nanoseconds of a ``builtin_interfaces/Time``.

    Parameters
    ----------
    stamp : Time

    Returns
    -------
    int
        [ns]
    """
    return stamp.sec * NS_PER_S + stamp.nanosec


#: Signals that ask a node to stop: Ctrl-C, and what ``ros2 launch`` sends (SIGINT, then
#: SIGTERM after its timeout).
SHUTDOWN_SIGNALS = (signal.SIGINT, signal.SIGTERM)


class ShutdownSignals:
    """The Python handler of SIGINT and SIGTERM while :func:`run_node` runs: it records the
    first signal (:attr:`received`); while the node starts (:attr:`raising`) it raises
    ``KeyboardInterrupt`` for it, as Python's own SIGINT handler does; any other signal is
    only recorded.

    Installed before ``rclpy.init`` (:meth:`install`): rclpy then installs its own C handlers
    on top, which chain to this one, so rclpy's handling stays what it is: its signal thread
    wakes the executors and shuts the context down, which ends ``rclpy.spin``. While the node
    spins, that is how a signal ends it, and nothing is raised at whatever line the main thread
    is on. What this fixes, found with the real ``ros2 launch`` (2026-11-27):

    * A terminal Ctrl-C reaches a node twice: from the terminal (the whole process group) and
      from ``ros2 launch``, which forwards one more SIGINT 50-200 ms later. The second landed
      in the clean-up (``destroy_node``: a ``KeyboardInterrupt`` traceback, exit -2) or in the
      interpreter's finalization, where Python resets its handlers to the default action
      (killed by SIGINT, exit -2, nothing printed). A later signal is ignored here, and
      :meth:`release` leaves both signals ignored (``SIG_IGN``, which the finalization keeps)
      once one came: the process is on its way out.
    * The ``KeyboardInterrupt`` of a SIGINT landed anywhere in the spinning main thread:
      inside a pybind11 call (``take_message`` of a subscription), which turned it into
      ``RuntimeError: Unable to convert call argument '0' to Python object`` while
      ``rclpy.ok()`` was still True (exit 1, "failed:" and a traceback), or inside the
      constructor of an executor's ``Task`` ("Exception ignored in: Future.__del__",
      ``AttributeError``). None is raised while spinning now, and an error raised once a
      signal came is taken for the shutdown asked for (exit 0) by :func:`run_node`: e.g. a
      callback failing on the context rclpy's signal thread shut down.
    """

    def __init__(self) -> None:
        #: The first shutdown signal received (its number), or None.
        self.received: int | None = None
        #: Whether the first signal raises ``KeyboardInterrupt`` (only while the node starts).
        self.raising = True
        self._previous: dict[int, object] = {}

    def __call__(self, signum: int, frame: object) -> None:
        """The handler (``signal.signal`` calls it in the main thread)."""
        first = self.received is None
        if first:
            self.received = signum
        if first and self.raising:
            raise KeyboardInterrupt

    def install(self) -> None:
        """Handle :data:`SHUTDOWN_SIGNALS` here, before ``rclpy.init``. Nothing is changed
        outside the main thread (Python handles signals there only), nor for a signal that is
        ignored (``nohup``, a background job) or has a handler Python did not install."""
        if threading.current_thread() is not threading.main_thread():
            return
        for signum in SHUTDOWN_SIGNALS:
            previous = signal.getsignal(signum)
            if previous is None or previous is signal.SIG_IGN:
                continue
            signal.signal(signum, self)
            self._previous[signum] = previous

    def release(self, failed: bool = False) -> None:
        """Put the previous handlers back; once a signal came, or when ``failed`` (the process
        exits with an error code), ignore the signals instead: ``ros2 launch`` sends SIGINT to
        the other nodes when one ends, and one reaching a node in its own failing exit (the
        interpreter's slow finalization) killed it: launch logged "exit code -2", not 2.

        Parameters
        ----------
        failed : bool
            Whether the process is exiting with an error code.
        """
        ignore = failed or self.received is not None
        for signum, previous in self._previous.items():
            signal.signal(signum, signal.SIG_IGN if ignore else previous)
        self._previous.clear()


def run_node(
    factory: Callable[[], Node],
    label: str,
    args: list[str] | None = None,
    executor: Callable[[], Executor] | None = None,
) -> int:
    """``main`` of a node: init, build with ``factory``, spin, clean up; the exit status.

    Parameters
    ----------
    factory : callable
        Builds the node (after ``rclpy.init``).
    label : str
        Prefix of the messages on stderr.
    args : list of str, optional
        Command-line arguments for ``rclpy.init`` (default ``sys.argv``).
    executor : callable, optional
        Makes the executor to spin (after ``rclpy.init``; e.g. a ``MultiThreadedExecutor``
        for a node whose services or actions wait); default:
        :class:`GuardedSingleThreadedExecutor` (rclpy's single-threaded one, ``/clock``
        guarded).

    Returns
    -------
    int
        0 after Ctrl-C, SIGTERM, an external shutdown or a :class:`QuitRequested` (also when the
        shutdown makes a running callback fail -- rcl errors on the invalid context --: any error
        raised once a signal came, see :class:`ShutdownSignals`); :data:`EXIT_INVALID_PARAMETER`
        (2) when the arguments cannot be parsed or the node rejects a parameter at start-up (its
        :class:`ParameterValueError`, or rclpy's own parameter errors); :data:`EXIT_FATAL` (1) on a
        :class:`FatalNodeError` raised while spinning (a worker thread failed) or any other error.
        The reason goes to stderr, prefixed with ``label``.

    Notes
    -----
    A node that fails in its constructor destroys itself before raising
    (:func:`destroy_on_failure`), and ``main`` destroys a built node before shutting the
    context down: no rcl handle outlives its context, which could crash the interpreter
    at exit (a segmentation fault instead of the error). SIGINT and SIGTERM go through
    :class:`ShutdownSignals`: the first ends the node (while spinning: through rclpy's
    shutdown of the context, nothing raised), later ones (a terminal Ctrl-C under ``ros2
    launch`` delivers two) do not interrupt the clean-up; after one, or with an exit status
    other than 0 (the process is on its way out: the SIGINT ``ros2 launch`` sends when another
    node ends must not turn the code into -2), both stay ignored when this returns.
    """
    signals = ShutdownSignals()
    signals.install()  # before rclpy.init: rclpy's handlers chain to it
    code = EXIT_FATAL  # (until _run_node returns one)
    try:
        code = _run_node(factory, label, args, executor, signals)
    except KeyboardInterrupt:  # the first signal, during rclpy.init
        signals.raising = False
        rclpy.try_shutdown()
        code = 0
    finally:
        signals.raising = False
        signals.release(failed=code != 0)
    return code


def _run_node(
    factory: Callable[[], Node],
    label: str,
    args: list[str] | None,
    executor: Callable[[], Executor] | None,
    signals: ShutdownSignals,
) -> int:
    """:func:`run_node` once its signal handlers are installed."""
    try:
        rclpy.init(args=args)
    except Exception as exc:  # noqa: BLE001 - rcl reports unparsable arguments this way
        signals.raising = False
        if signals.received is not None:  # (its KeyboardInterrupt, turned into another error)
            rclpy.try_shutdown()
            return 0
        print(f'{label}: invalid arguments: {exc}', file=sys.stderr)
        return EXIT_INVALID_PARAMETER
    node = None
    spinner = None
    code = 0
    try:
        spinner = executor() if executor is not None else GuardedSingleThreadedExecutor()
        node = factory()
        signals.raising = False  # from here on rclpy's signal thread ends the spinning
        rclpy.spin(node, spinner)
    except (ParameterValueError, ParameterException) as exc:
        signals.raising = False
        print(f'{label}: invalid parameter: {exc}', file=sys.stderr)
        code = EXIT_INVALID_PARAMETER
    except FatalNodeError as exc:
        signals.raising = False
        print(f'{label}: {exc}', file=sys.stderr)
        code = EXIT_FATAL
    except (KeyboardInterrupt, ExternalShutdownException, QuitRequested):
        pass
    except Exception:  # noqa: BLE001 - a bug: say so and exit, never hang half-alive
        signals.raising = False
        if rclpy.ok() and signals.received is None:
            print(f'{label}: failed:\n{traceback.format_exc()}', file=sys.stderr)
            code = EXIT_FATAL
        # else a shutdown asked for: Ctrl-C shut the context down under a running callback (a
        # publisher's "context is invalid", a wait set that cannot be made), or a signal came
        # while the node started and its KeyboardInterrupt came out as another error (a
        # pybind11 call turns it into "Unable to convert call argument")
    finally:
        signals.raising = False  # a signal (the second of a Ctrl-C) must not stop the clean-up
        if node is not None:
            node.destroy_node()  # (first: it releases the callbacks that wait on the node)
        if spinner is not None:
            spinner.shutdown(timeout_sec=1.0)
        rclpy.try_shutdown()
    return code


def destroy_on_failure(node: Node, setup: Callable[[], None]) -> None:
    """Run ``setup()`` (the rest of a node's constructor); if it raises, destroy ``node``
    (rclpy's :meth:`Node.destroy_node`, whatever the subclass adds) and re-raise.

    A constructor that raises leaves no reference to the node for ``main`` to destroy; its
    handles would live on, referenced by the exception's traceback, until the interpreter
    tears them down after the context -- the cause of an occasional segmentation fault on a
    bad-parameter exit.

    Parameters
    ----------
    node : Node
    setup : callable
        Takes no argument.
    """
    try:
        setup()
    except BaseException:
        Node.destroy_node(node)
        raise
