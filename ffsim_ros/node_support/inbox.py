"""The simulator's inbox: work handed from the executor thread to the physics thread, bounded,
with streamed commands kept as held values (no ROS).

Effort commands, joint commands by name and base wrenches *replace* what they command: of
several of one kind (one key: the efforts, one set of joints, the base wrench) queued since
the last other request (a service's work, a step job: a *barrier*), only the last matters,
and applying the last of each kind in the order they came leaves the engine as applying all
of them would. So :meth:`Inbox.put` with a key drops the pending entry of that key queued
after the last barrier: a client streaming commands faster than the physics thread drains
them (a 10 kHz stream while the thread waits on a compile, a long request, the GIL) leaves
one entry per kind, not a backlog that grows the memory and is replayed late (found by a
probe: a 10 s stall under a 10 kHz base-wrench stream grew the simulator by 68 MiB).
Anything beyond :data:`MAX_PENDING` entries is refused (:class:`InboxFull`).
"""

from __future__ import annotations

import queue
import threading
from collections import deque
from collections.abc import Hashable
from typing import Generic, TypeVar

#: Most entries waiting for the physics thread (barriers and distinct command kinds).
MAX_PENDING = 10_000

T = TypeVar('T')


class InboxFull(RuntimeError):
    """:meth:`Inbox.put` with :data:`MAX_PENDING` entries already waiting."""


class Inbox(Generic[T]):
    """A thread-safe FIFO of work items (module docstring); ``get_nowait`` as
    :class:`queue.SimpleQueue`'s.

    Parameters
    ----------
    limit : int
        Most entries waiting (:data:`MAX_PENDING` by default).
    """

    def __init__(self, limit: int = MAX_PENDING) -> None:
        self._limit = int(limit)
        self._lock = threading.Lock()
        self._items: deque[tuple[Hashable | None, T]] = deque()
        #: keys of the entries queued after the last barrier (each there once)
        self._keys: set[Hashable] = set()
        self._barriers = 0  # barriers waiting

    def put(self, item: T, key: Hashable | None = None) -> None:
        """Queue ``item``; with a ``key`` (a held command), the entry of that key queued since
        the last barrier is dropped (this one replaces it, at the end); without, a barrier.

        Parameters
        ----------
        item : T
        key : hashable, optional
            The held command's key; None queues a barrier.

        Raises
        ------
        InboxFull
            With :data:`MAX_PENDING` entries waiting (nothing queued).
        """
        with self._lock:
            if key is not None and key in self._keys:
                for i in range(len(self._items) - 1, -1, -1):  # (after the last barrier)
                    if self._items[i][0] == key:
                        del self._items[i]
                        break
            elif len(self._items) >= self._limit:
                raise InboxFull(
                    f'the physics thread has {len(self._items)} requests waiting '
                    f'(at most {self._limit}): refused'
                )
            if key is None:
                self._keys.clear()
                self._barriers += 1
            else:
                self._keys.add(key)
            self._items.append((key, item))

    def get_nowait(self) -> T:
        """The oldest entry.

        Returns
        -------
        T

        Raises
        ------
        queue.Empty
            When none is waiting.
        """
        with self._lock:
            if not self._items:
                raise queue.Empty
            key, item = self._items.popleft()
            if key is None:
                self._barriers -= 1
            elif not self._barriers:  # (one after the last barrier)
                self._keys.discard(key)
            return item

    def __len__(self) -> int:
        """Entries waiting."""
        with self._lock:
            return len(self._items)
