"""The measured state of a controller: joint and base messages paired by their stamps.

A simulator publishes ``joint_states`` and ``base_odom`` of one instant with the same stamp,
one after the other. A control update that falls between the two (a loaded machine, a fast
simulation) would pair the joints of one instant with the base of another: the state is then
not one the robot was in, and its momentum is not the robot's (a base 10 ms older than the
joints of an arm at speed). :class:`StatePairing` keeps the last few messages of each stream
and gives the newest pair with the same stamp; where the streams share no stamp (two
publishers at their own rates), the newest message of each, as before.
"""

from __future__ import annotations

from collections import deque
from typing import Generic, TypeVar

#: Messages of each stream kept to find a pair (at 100 Hz: 40 ms).
PAIRING_DEPTH = 4

Item = TypeVar('Item')


class StatePairing(Generic[Item]):
    """The latest joint and base measurements, paired by stamp (module docstring).

    Items are whatever the node keeps per message (e.g. ``(positions, velocities,
    received)``); each is added with its header stamp [ns].

    Parameters
    ----------
    depth : int
        Messages kept per stream (>= 1).
    """

    def __init__(self, depth: int = PAIRING_DEPTH) -> None:
        if depth < 1:
            raise ValueError(f'depth: expected an integer >= 1, got {depth}')
        self._joints: deque[tuple[int, Item]] = deque(maxlen=depth)
        self._base: deque[tuple[int, Item]] = deque(maxlen=depth)

    def add_joints(self, stamp_ns: int, item: Item) -> None:
        """A ``joint_states`` message stamped ``stamp_ns``.

        Parameters
        ----------
        stamp_ns : int
            Header stamp [ns].
        item : Item
        """
        self._joints.append((int(stamp_ns), item))

    def add_base(self, stamp_ns: int, item: Item) -> None:
        """A ``base_odom`` message stamped ``stamp_ns``.

        Parameters
        ----------
        stamp_ns : int
            Header stamp [ns].
        item : Item
        """
        self._base.append((int(stamp_ns), item))

    def clear_joints(self) -> None:
        """Forget the joint messages (until the next one)."""
        self._joints.clear()

    def clear_base(self) -> None:
        """Forget the base messages (until the next one)."""
        self._base.clear()

    def clear(self) -> None:
        """Forget both streams."""
        self.clear_joints()
        self.clear_base()

    def latest(self) -> tuple[Item | None, Item | None]:
        """``(joints, base)``: the newest pair with one stamp, else the newest of each (None
        for a stream with no message).

        Returns
        -------
        joints : Item or None
        base : Item or None
        """
        joints, base, _ = self.latest_stamped()
        return joints, base

    def latest_stamped(self) -> tuple[Item | None, Item | None, int | None]:
        """:meth:`latest` and the stamp [ns] of the state it gives: the pair's stamp, else
        the newest joint message's (the arm's motion dominates what is computed from it), None
        without joint messages.

        Returns
        -------
        joints : Item or None
        base : Item or None
        stamp : int or None
            [ns]
        """
        base = {stamp: item for stamp, item in self._base}
        for stamp, item in reversed(self._joints):
            if stamp in base:
                return item, base[stamp], stamp
        if not self._joints:
            return None, self._base[-1][1] if self._base else None, None
        stamp, item = self._joints[-1]
        return item, self._base[-1][1] if self._base else None, stamp
