"""Record ROS 2 topics to MCAP (the rosbag2 storage format), with no launch system.

:class:`McapFile` writes serialized (CDR) messages to an MCAP file with the ``ros2`` profile,
``ros2msg`` schemas (the full message definition with its dependencies, as rosbag2 writes it)
and ``cdr`` encoding, so ``ros2 bag info/play`` and Foxglove read the file. It is written as
``<name>.part`` in the same folder and renamed to its name when finished (:meth:`McapFile.close`):
a process killed before that leaves no half file under the name, and an earlier file of that
name is kept until then.
:class:`McapRecorder` subscribes to topics in raw form and writes them with it; log times are
the simulated time of the last ``/clock`` message (monotonic; messages before the first one
are logged at time 0). A campaign's replay (:mod:`ffsim_ros.campaign.replay`) writes its
messages with :class:`McapFile` directly.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO

from mcap.writer import Writer
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from rclpy.serialization import deserialize_message, serialize_message

_PRIMITIVES = {
    'bool',
    'byte',
    'char',
    'float32',
    'float64',
    'int8',
    'uint8',
    'int16',
    'uint16',
    'int32',
    'uint32',
    'int64',
    'uint64',
    'string',
    'wstring',
}
_SEPARATOR = '=' * 80


def _msg_file(pkg: str, name: str) -> Path:
    from ament_index_python.packages import get_package_share_directory

    return Path(get_package_share_directory(pkg)) / 'msg' / f'{name}.msg'


def _dependencies(pkg: str, text: str) -> list[tuple[str, str]]:
    deps = []
    for raw in text.splitlines():
        line = raw.split('#', 1)[0].strip()
        if not line:
            continue
        words = line.split()
        ftype = words[0]
        if len(words) > 1 and '=' in words[1]:
            continue  # a constant
        base = re.sub(r'\[.*\]$', '', ftype)
        base = re.sub(r'<=\d+$', '', base)
        if base in _PRIMITIVES:
            continue
        if '/' in base:
            dep_pkg, dep_name = base.split('/')[0], base.split('/')[-1]
        else:
            dep_pkg, dep_name = pkg, base
        deps.append((dep_pkg, dep_name))
    return deps


def message_definition(type_name: str) -> str:
    """Full ``ros2msg`` definition of ``pkg/msg/Name`` with its nested types appended.

    Parameters
    ----------
    type_name : str
        ``'pkg/msg/Name'``.

    Returns
    -------
    str
        The ``.msg`` text, each dependency after a separator line and ``MSG: pkg/Name``.

    Raises
    ------
    FileNotFoundError
        If a ``.msg`` file of the type or of a dependency is not installed.
    """
    pkg, _, name = type_name.split('/')
    main = _msg_file(pkg, name).read_text()
    seen = {(pkg, name)}
    parts = [main.rstrip('\n')]
    queue = _dependencies(pkg, main)
    while queue:
        dep = queue.pop(0)
        if dep in seen:
            continue
        seen.add(dep)
        text = _msg_file(*dep).read_text()
        parts.append(f'{_SEPARATOR}\nMSG: {dep[0]}/{dep[1]}\n{text.rstrip(chr(10))}')
        queue.extend(_dependencies(dep[0], text))
    return '\n'.join(parts) + '\n'


def partial_path(path: Path) -> Path:
    """Where :class:`McapFile` writes ``path`` until it is finished: ``<name>.part`` beside it.

    Parameters
    ----------
    path : Path
        The final file.

    Returns
    -------
    Path
    """
    path = Path(path)
    return path.with_name(path.name + '.part')


def _type_name(msg_class: type) -> str:
    module = msg_class.__module__.split('.')
    return f'{module[0]}/msg/{msg_class.__name__}'


class McapFile:
    """An MCAP file of ROS 2 messages (``ros2`` profile, ``ros2msg`` schemas, ``cdr``).

    Parameters
    ----------
    path : Path
        Output file. Written as :func:`partial_path` (``<name>.part``, overwritten) and renamed
        over ``path`` by :meth:`close`: until then an earlier file ``path`` is untouched.
    """

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.part = partial_path(self.path)
        self._file: BinaryIO = open(self.part, 'wb')  # noqa: SIM115 - closed in close()
        self._writer = Writer(self._file)
        self._writer.start(profile='ros2', library='ffsim_ros')
        self._schemas: dict[str, int] = {}

    def channel(self, topic: str, msg_class: type) -> int:
        """Register ``topic`` of type ``msg_class`` (its schema once); returns the channel id.

        Parameters
        ----------
        topic : str
        msg_class : type
            A ROS message class.

        Returns
        -------
        int
            The channel id.
        """
        type_name = _type_name(msg_class)
        if type_name not in self._schemas:
            self._schemas[type_name] = self._writer.register_schema(
                name=type_name, encoding='ros2msg', data=message_definition(type_name).encode()
            )
        return self._writer.register_channel(
            topic=topic, message_encoding='cdr', schema_id=self._schemas[type_name]
        )

    def write(self, channel: int, time_ns: int, data: bytes) -> None:
        """Write a serialized message, logged and published at ``time_ns`` [ns].

        Parameters
        ----------
        channel : int
            From :meth:`channel`.
        time_ns : int
            [ns]
        data : bytes
            CDR-serialized message.
        """
        self._writer.add_message(
            channel_id=channel, log_time=time_ns, publish_time=time_ns, data=data
        )

    def write_message(self, channel: int, time_ns: int, msg: object) -> None:
        """Serialize ``msg`` (CDR) and write it at ``time_ns`` [ns].

        Parameters
        ----------
        channel : int
            From :meth:`channel`.
        time_ns : int
            [ns]
        msg : object
            A ROS message of the channel's type.
        """
        self.write(channel, time_ns, serialize_message(msg))

    def close(self) -> None:
        """Finish the file (summary and index), close it and rename it to :attr:`path`
        (replacing an earlier file). Idempotent. If finishing fails, the ``.part`` file stays
        and the error is raised."""
        if not self._file.closed:
            try:
                self._writer.finish()
            finally:
                self._file.close()
            os.replace(self.part, self.path)

    def __enter__(self) -> McapFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class McapRecorder:
    """Record topics of ``node`` into an MCAP file.

    Parameters
    ----------
    node : rclpy.node.Node
        Node that owns the subscriptions (spin it to record).
    path : Path
        Output file.
    topics : dict of str to message class
        Topic name -> message type.
    keep : set of str, optional
        Topics whose deserialized messages are also kept in memory (``self.messages``).
    latched : set of str, optional
        Topics subscribed with transient-local durability (e.g. ``robot_description``,
        ``goal_status``), reliable, the last 100 messages kept.
    """

    def __init__(
        self,
        node: Node,
        path: Path,
        topics: dict[str, type],
        keep: set[str] | None = None,
        latched: set[str] | None = None,
    ) -> None:
        self.path = Path(path)
        self._mcap = McapFile(self.path)
        self.counts: dict[str, int] = {}
        self.messages: dict[str, list[tuple[int, object]]] = {t: [] for t in keep or ()}
        self.sim_time_ns: int | None = None
        self._t0 = 0  # log time of messages before the first /clock
        self.subscriptions = []
        for topic, msg_class in topics.items():
            channel = self._mcap.channel(topic, msg_class)
            self.counts[topic] = 0
            qos = QoSProfile(depth=1000)
            if latched and topic in latched:
                qos = QoSProfile(
                    depth=100,
                    reliability=ReliabilityPolicy.RELIABLE,
                    durability=DurabilityPolicy.TRANSIENT_LOCAL,
                )
            self.subscriptions.append(
                node.create_subscription(
                    msg_class, topic, self._callback(topic, channel, msg_class), qos, raw=True
                )
            )

    def _callback(self, topic: str, channel: int, msg_class: type) -> Callable[[bytes], None]:
        def on_message(data: bytes) -> None:
            if topic == '/clock':
                clock = deserialize_message(data, msg_class).clock
                self.sim_time_ns = clock.sec * 1_000_000_000 + clock.nanosec
            t = self.sim_time_ns if self.sim_time_ns is not None else self._t0
            self._mcap.write(channel, t, data)
            self.counts[topic] += 1
            if topic in self.messages:
                self.messages[topic].append((t, deserialize_message(data, msg_class)))

        return on_message

    def close(self) -> None:
        """Finish the MCAP file (summary and index), close it and rename it to :attr:`path`
        (:meth:`McapFile.close`)."""
        self._mcap.close()
