"""The last published state for subscribers that join while the physics is idle.

The simulator's state topics are volatile and published only as the simulation advances:
while it is paused, stopped or faulted nothing is published, and a node that subscribes then
(a controller started with the launch, robot_state_publisher, RViz) would get no state until
the next step. So, while the physics is idle, its thread polls the state publishers'
subscription counts a few times a second (:class:`LateJoiners`: ``get_subscription_count``,
no message built), and a publisher whose count has grown gets its last published message
again: the same stamp and content (the serialized bytes kept by
:class:`~.state_messages.StateMessages`, the scene's messages kept by
:class:`~.scene_services.SceneInterfaces`), ``/clock`` first. Only on a gain: the subscribers
already there see one repeat per newcomer (robot_state_publisher skips a stamp it has
published; a tf2 listener may log one ``TF_REPEATED_DATA``), and none while the physics runs.

The topics: ``/clock``, ``joint_states``, ``base_odom``, ``momentum``, ``markers``, ``/tf``
(the robot's and the targets' transforms), and the scene's: ``targets/<name>/odom``,
``scene_markers`` (the last target shapes and capture envelopes published) and
``grasp_wrench`` (while a target is held at the last published instant). Not
``scene_events``: an event log, one message per contact, capture or release, not a state;
sent again, each subscriber there would receive an event that happened once as a second one
(a second capture, an impact counted twice), and a newcomer an event of the past as news.
Nor the contact markers of ``scene_markers`` (drawn for 2 s at an impact: sent again they
would show an impact long over). ``robot_description`` is transient local and
``/diagnostics`` goes on once a wall second while idle.

What is sent is built once per idle period: when the physics turns idle, or at the first
poll after a publish made while idle (a reset, a spawn, a grasp while paused), never at
every poll (:meth:`LateJoiners.held`).

A publisher that has matched a new subscription does not mean the subscription has matched
the publisher yet (each side discovers the other on its own, and a volatile reader drops what
was sent before it matched): a gain is served at the first poll at which the counts have not
changed since the previous one, one to two poll periods after the match; the topics of one
joining node, which match within milliseconds of one another, are served together. A
subscriber that replaces another between two polls (an RViz display re-subscribing with new
QoS) leaves the count as it was: with ``readers`` given (the node's graph: the subscriptions'
endpoint ids on a topic) a new id is a newcomer too, served once the ids have settled as well.

What is republished is what was published last, so never a non-finite state: a fault keeps
the last finite state, which is what was published (``Engine``).
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from typing import Any

from tf2_msgs.msg import TFMessage

from ffsim_ros.sim import Snapshot

from .state_messages import StateMessages

#: Wall seconds between two looks at the subscription counts while the physics is idle.
POLL_PERIOD = 0.2

#: The endpoint ids of the subscriptions on a topic (by its resolved name), from the graph.
Readers = Callable[[str], frozenset]

#: The scene's part of the last published instant: ``({publisher: message}, transforms)``,
#: the messages of the targets' odometry, ``scene_markers`` and ``grasp_wrench`` by their
#: publishers and the targets' transforms (sent on /tf with the robot's).
SceneState = Callable[[], tuple[dict[Any, Any], list[Any]]]


class LateJoiners:
    """Republishes the last published state on the publishers that gained subscribers while
    the physics is idle (module docstring). Physics thread only.

    Parameters
    ----------
    messages : StateMessages
        The simulator's messages: :meth:`~.state_messages.StateMessages.last_serialized`
        gives the bytes last published.
    publishers : sequence of Publisher or None
        ``(/clock or None, joint_states, base_odom, momentum, markers)``, the order of
        :meth:`~.state_messages.StateMessages.serialized`.
    tf : Publisher or tf2_ros.TransformBroadcaster
        The node's ``/tf`` publisher, or the broadcaster whose publisher (``pub_tf``) is
        polled (left out when it has none).
    scene : callable
        ``scene()``: what the scene published at the last published instant
        (:data:`SceneState`; :meth:`~.scene_services.SceneInterfaces.last_state`).
    period : float
        :data:`POLL_PERIOD`.
    readers : callable, optional
        ``readers(topic)``: the endpoint ids of the subscriptions on ``topic``
        (:data:`Readers`); None: counts alone (a replaced subscriber is not seen).
    """

    def __init__(
        self,
        messages: StateMessages,
        publishers: Sequence[Any],
        tf: Any,
        scene: SceneState,
        period: float = POLL_PERIOD,
        readers: Readers | None = None,
    ) -> None:
        self._messages = messages
        self._publishers = tuple(publishers)
        self._tf_bytes = hasattr(tf, 'get_subscription_count')  # our own publisher
        self._tf = tf if self._tf_bytes else getattr(tf, 'pub_tf', None)
        self._scene = scene
        self.period = float(period)
        self._next = float('-inf')
        self._counts: dict[Any, int] = {}  # publisher -> subscriptions at the last poll
        self._served: dict[Any, int] = {}  # publisher -> subscriptions that had the state
        self._readers = readers
        self._ids: dict[Any, frozenset] = {}  # publisher -> reader ids at the last poll
        self._served_ids: dict[Any, frozenset] = {}  # publisher -> reader ids served
        self._held: tuple[Snapshot, dict[Any, Any]] | None = None  # (instant, its messages)

    def held(self, snap: Snapshot) -> dict[Any, Any]:
        """The messages of ``snap`` (the instant last published) by publisher, in the order
        they are republished (``/clock`` first): built at the first call for ``snap``, the
        same dict after (module docstring).

        Parameters
        ----------
        snap : Snapshot
            The instant last published.

        Returns
        -------
        dict
            ``{publisher: message or serialized bytes}``.
        """
        if self._held is not None and self._held[0] is snap:
            return self._held[1]
        wire = self._messages.last_serialized()
        scene, transforms = self._scene()
        out = {p: b for p, b in zip(self._publishers, wire[:-1], strict=True) if p is not None}
        if self._tf is not None:
            if self._tf_bytes and not transforms:  # (the bytes sent: the base alone)
                out[self._tf] = wire[-1]
            else:  # (a copy: the base's transform message is refilled at every publish)
                base = copy.deepcopy(self._messages.base_transform(snap))
                out[self._tf] = TFMessage(transforms=[base, *transforms])
        out.update(scene)
        self._held = (snap, out)
        return out

    def rebase(self, snap: Snapshot | None) -> None:
        """Take the subscriptions there now as served: call it when the physics turns idle
        after running (it published to them).

        Parameters
        ----------
        snap : Snapshot or None
            The instant last published (None: nothing published, nothing to do).
        """
        if snap is None:
            return
        held = self.held(snap)
        self._counts = {p: p.get_subscription_count() for p in held}
        self._served = dict(self._counts)
        self._ids = self._reader_ids(held)
        self._served_ids = dict(self._ids)

    def poll(self, now: float, snap: Snapshot | None) -> list[str]:
        """At most once per :attr:`period`: republish ``snap``'s messages (the last published
        instant; None: nothing published yet) on each publisher with more subscriptions than
        were served, once the counts have settled (module docstring).

        Parameters
        ----------
        now : float
            A steady clock's time [s].
        snap : Snapshot or None
            The instant last published.

        Returns
        -------
        list of str
            The topics republished, in the order sent.
        """
        if now < self._next or snap is None:
            return []
        self._next = now + self.period
        held = self.held(snap)
        counts = {p: p.get_subscription_count() for p in held}
        ids = self._reader_ids(held)
        settled = counts == self._counts and ids == self._ids
        self._counts, self._ids = counts, ids
        if not settled:
            return []
        joined = [
            p
            for p in held
            if counts[p] > self._served.get(p, 0)
            or (counts[p] and ids.get(p, frozenset()) - self._served_ids.get(p, frozenset()))
        ]
        self._served, self._served_ids = counts, ids
        for publisher in joined:
            publisher.publish(held[publisher])
        return [p.topic_name for p in joined]

    def _reader_ids(self, publishers: Any) -> dict[Any, frozenset]:
        """The reader ids on each publisher's topic ({} without ``readers``)."""
        if self._readers is None:
            return {}
        return {p: self._readers(p.topic_name) for p in publishers}
