"""The outcome of the controller's ``ee_goal`` as ``diagnostic_msgs/DiagnosticStatus``.

``ffsim_reactionless_controller`` publishes it on ``goal_status`` (transient local, depth 1: a
client that connects late gets the current one) whenever the goal, its outcome or its phase
changes (:class:`GoalStatusPublisher`): ``level`` OK while the goal is active or once it is
reached, WARN when it is aborted (the node works; the goal did not); ``message`` the outcome,
phase and reason (``'aborted (stopped): no plan ...'``); ``values`` every field of
:class:`ffsim_ros.control.GoalStatus` (SI units, angles in rad), as ``ros2 topic echo`` shows
them.
"""

from __future__ import annotations

from diagnostic_msgs.msg import DiagnosticStatus, KeyValue
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy

from ffsim_ros.control import GoalOutcome, GoalStatus


def goal_status_message(status: GoalStatus, name: str, hardware_id: str) -> DiagnosticStatus:
    """The DiagnosticStatus of ``status`` (module docstring)."""
    level = DiagnosticStatus.WARN if status.outcome is GoalOutcome.ABORTED else DiagnosticStatus.OK
    text = f'{status.outcome.value} ({status.phase.value})'
    if status.reason:
        text += f': {status.reason}'
    values = [
        KeyValue(key=key, value=f'{value:.9g}' if isinstance(value, float) else str(value))
        for key, value in status.as_dict().items()
    ]
    return DiagnosticStatus(
        level=level, name=name, message=text, hardware_id=hardware_id, values=values
    )


class GoalStatusPublisher:
    """Publishes a :class:`GoalStatus` on ``goal_status`` when it changes.

    Parameters
    ----------
    node : Node
        The controller node.
    hardware_id : str
        The robot's name.
    """

    def __init__(self, node: Node, hardware_id: str) -> None:
        latched = QoSProfile(
            depth=1,
            reliability=ReliabilityPolicy.RELIABLE,
            durability=DurabilityPolicy.TRANSIENT_LOCAL,
        )
        self.publisher = node.create_publisher(DiagnosticStatus, 'goal_status', latched)
        self.name = f'{node.get_name()}: ee_goal'
        self.hardware_id = hardware_id
        self._last: tuple | None = None

    def update(self, status: GoalStatus) -> bool:
        """Publish ``status`` if its goal, outcome, phase or reason changed; whether it did."""
        key = (status.goal_id, status.outcome, status.phase, status.reason, status.mode)
        if key == self._last:
            return False
        self._last = key
        self.publisher.publish(goal_status_message(status, self.name, self.hardware_id))
        return True
