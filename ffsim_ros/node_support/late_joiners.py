"""The last published state for subscribers that join while the physics is idle.

The simulator's state topics are volatile and published only as the simulation advances:
while it is paused, stopped or faulted nothing is published, and a node that subscribes then
(a controller started with the launch, robot_state_publisher, RViz) would get no state until
the next step. So, while the physics is idle, its thread polls the state publishers'
subscription counts a few times a second (:class:`LateJoiners`: ``get_subscription_count``,
no message built), and a publisher whose count has grown gets its last published message
again: the same stamp and content (the serialized bytes kept by
:class:`~.state_messages.StateMessages`), ``/clock`` first. Only on a gain: the subscribers
already there see one repeat per newcomer (robot_state_publisher skips a stamp it has
published; a tf2 listener may log one ``TF_REPEATED_DATA``), and none while the physics runs.

A publisher that has matched a new subscription does not mean the subscription has matched
the publisher yet (each side discovers the other on its own, and a volatile reader drops what
was sent before it matched): a gain is served at the first poll at which the counts have not
changed since the previous one, one to two poll periods after the match; the topics of one
joining node, which match within milliseconds of one another, are served together.

What is republished is what was published last, so never a non-finite state: a fault keeps
the last finite state, which is what was published (``Engine``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from tf2_msgs.msg import TFMessage

from ffsim_ros.sim import Snapshot

from .state_messages import StateMessages

#: Wall seconds between two looks at the subscription counts while the physics is idle.
POLL_PERIOD = 0.2

#: The targets' part of a published instant: ``{odometry publisher: message}`` and their
#: transforms (sent on /tf with the robot's).
TargetState = Callable[[Snapshot], tuple[dict[Any, Any], list[Any]]]


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
    targets : callable
        ``targets(snap)``: the targets' odometry publishers with their messages, and their
        transforms, of the instant ``snap``.
    period : float
        :data:`POLL_PERIOD`.
    """

    def __init__(
        self,
        messages: StateMessages,
        publishers: Sequence[Any],
        tf: Any,
        targets: TargetState,
        period: float = POLL_PERIOD,
    ) -> None:
        self._messages = messages
        self._publishers = tuple(publishers)
        self._tf_bytes = hasattr(tf, 'get_subscription_count')  # our own publisher
        self._tf = tf if self._tf_bytes else getattr(tf, 'pub_tf', None)
        self._targets = targets
        self.period = float(period)
        self._next = float('-inf')
        self._counts: dict[Any, int] = {}  # publisher -> subscriptions at the last poll
        self._served: dict[Any, int] = {}  # publisher -> subscriptions that had the state

    def rebase(self, snap: Snapshot | None) -> None:
        """Take the subscriptions there now as served: call it when the physics turns idle
        after running (it published to them). ``snap``: the instant last published (None:
        nothing published, nothing to do)."""
        if snap is None:
            return
        odoms, _ = self._targets(snap)
        self._counts = {p: p.get_subscription_count() for p in self._polled(odoms)}
        self._served = dict(self._counts)

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
        odoms, transforms = self._targets(snap)
        polled = self._polled(odoms)
        counts = {p: p.get_subscription_count() for p in polled}
        settled, self._counts = counts == self._counts, counts
        if not settled:
            return []
        joined = [p for p in polled if counts[p] > self._served.get(p, 0)]
        self._served = counts
        if not joined:
            return []
        payloads: dict[Any, Any] = dict(odoms)
        wire = self._messages.last_serialized()
        payloads.update(zip(self._publishers, wire[:-1], strict=True))  # (None: no /clock)
        if self._tf in joined:
            if self._tf_bytes and not transforms:  # (the bytes sent: the base alone)
                payloads[self._tf] = wire[-1]
            else:
                base = self._messages.base_transform(snap)
                payloads[self._tf] = TFMessage(transforms=[base, *transforms])
        for publisher in joined:
            publisher.publish(payloads[publisher])
        return [p.topic_name for p in joined]

    def _polled(self, odoms: dict[Any, Any]) -> list[Any]:
        """The publishers polled, in the order they are republished (/clock first)."""
        fixed = [*self._publishers, self._tf]
        return [p for p in fixed if p is not None] + list(odoms)
