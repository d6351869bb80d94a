"""A ``/clock`` publisher for the tests of nodes with ``use_sim_time``."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


@contextmanager
def clock_source(context: Any, executor: Any, node: Any) -> Iterator[tuple[Any, float]]:
    """Add ``node`` and a ``clock_source`` node to ``executor``, wait until ``node``'s time
    source subscribes to the source's ``/clock`` publisher, and yield ``(publisher,
    deadline)`` (30 s of ``time.monotonic()`` from the start); then shut the executor down and
    destroy both nodes."""
    import rclpy
    from rosgraph_msgs.msg import Clock

    source = rclpy.create_node('clock_source', context=context)
    executor.add_node(node)
    executor.add_node(source)
    try:
        pub = source.create_publisher(Clock, '/clock', 10)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not pub.get_subscription_count():
            executor.spin_once(timeout_sec=0.05)
        assert pub.get_subscription_count(), 'the time source never subscribed to /clock'
        yield pub, deadline
    finally:
        executor.shutdown()
        node.destroy_node()
        source.destroy_node()
