"""The outcome of the controller's ``ee_goal`` as ``diagnostic_msgs/DiagnosticStatus``.

``ffsim_reactionless_controller`` publishes it on ``goal_status`` (transient local, depth 1: a
client that connects late gets the current one) whenever the goal, its outcome or its phase
changes (:class:`GoalStatusPublisher`): ``level`` OK while the goal is active or once it is
reached, WARN when it is aborted (the node works; the goal did not); ``message`` the outcome,
phase and reason (``'aborted (stopped): no plan ...'``); ``values`` every field of
:class:`ffsim_ros.control.GoalStatus` (SI units, angles in rad), as ``ros2 topic echo`` shows
them.

Also the ``status`` topic's message (:func:`control_status_message`), and the ``reach.*``
parameters of the controller (:func:`reach_specs`) and the
:class:`ffsim_ros.control.ReachSettings` they give (:func:`reach_settings_from`).
"""

from __future__ import annotations

import numpy as np
from diagnostic_msgs.msg import DiagnosticStatus, KeyValue
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from std_msgs.msg import Float64MultiArray, MultiArrayDimension

from ffsim_ros.control import (
    CONTROL_MODES,
    REACH_BOUNDS,
    ControlOutput,
    GoalOutcome,
    GoalStatus,
    ReachSettings,
)

from .common import ParameterValueError
from .parameters import ParameterSpec, count, interval

#: Mode names, in the order of the ``mode`` field of ``status`` (the package's one list).
MODES = CONTROL_MODES
#: The fields of the controller's ``status`` topic, in order (SI units).
STATUS_FIELDS = (
    'tracking_error',
    'base_angular_rate',
    'linear_momentum',
    'angular_momentum',
    'manipulability',
    'condition',
    'mode',
    'goal_active',
)


def control_status_message(out: ControlOutput, active: bool) -> Float64MultiArray:
    """The ``status`` message of one control update: :data:`STATUS_FIELDS` of ``out``
    (tracking error [m], base angular rate [rad/s], ``|P|`` [kg m/s], ``|L|`` [kg m^2/s],
    manipulability, condition number, the mode's index in :data:`MODES`) and ``active``
    (1.0 while an ``ee_goal`` is active), the field names as the layout's label.

    Parameters
    ----------
    out : ControlOutput
        The update's result.
    active : bool
        Whether an ``ee_goal`` is active.

    Returns
    -------
    Float64MultiArray
    """
    status = Float64MultiArray()
    status.layout.dim = [
        MultiArrayDimension(label=','.join(STATUS_FIELDS), size=len(STATUS_FIELDS), stride=1)
    ]
    status.data = [
        out.position_error,
        out.base_angular_rate,
        float(np.linalg.norm(out.momentum[:3])),
        float(np.linalg.norm(out.momentum[3:])),
        out.manipulability,
        out.condition,
        float(MODES.index(out.mode.value)),
        1.0 if active else 0.0,
    ]
    return status


def goal_status_message(status: GoalStatus, name: str, hardware_id: str) -> DiagnosticStatus:
    """The DiagnosticStatus of ``status`` (module docstring).

    Parameters
    ----------
    status : GoalStatus
    name : str
        ``DiagnosticStatus.name``.
    hardware_id : str

    Returns
    -------
    DiagnosticStatus
        WARN for an aborted goal, else OK; ``status.as_dict()`` as its values.
    """
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
        """Publish ``status`` if its goal, outcome, phase or reason changed; whether it did.

        Parameters
        ----------
        status : GoalStatus

        Returns
        -------
        bool
            Whether it was published.
        """
        key = (status.goal_id, status.outcome, status.phase, status.reason, status.mode)
        if key == self._last:
            return False
        self._last = key
        self.publisher.publish(goal_status_message(status, self.name, self.hardware_id))
        return True


#: ``reach.*`` parameters: the :class:`ReachSettings` fields a user sets.
REACH_FIELDS = (
    'position_tolerance',
    'attitude_budget_deg',
    'stall_time',
    'goal_timeout',
    'max_plans',
    'max_loop_plans',
    'max_path_plans',
)


def reach_settings_from(values: dict) -> ReachSettings:
    """The :class:`ReachSettings` of the checked parameter values ``reach.*``.

    Parameters
    ----------
    values : dict
        Checked parameter values by name (``'reach.position_tolerance'``, ...).

    Returns
    -------
    ReachSettings

    Raises
    ------
    ------
    ParameterValueError
        Settings that do not fit together, the message prefixed with ``reach.``.
    """
    try:
        return ReachSettings(**{name: values[f'reach.{name}'] for name in REACH_FIELDS})
    except ValueError as exc:  # e.g. a budget not above the attitude tolerance
        raise ParameterValueError(f'reach.{exc}') from None


def reach_specs() -> list[ParameterSpec]:
    """The controller's ``reach.*`` parameters (the :class:`ReachSettings` a user sets), in the
    ranges of :data:`ffsim_ros.control.REACH_BOUNDS` (a campaign's ``reach`` takes the same).

    Returns
    -------
    list of ParameterSpec
    """
    return [
        ParameterSpec(
            'reach.position_tolerance',
            0.005,
            'an ee_goal is reached when the end effector is this close [m]',
            interval(*REACH_BOUNDS['position_tolerance']),
        ),
        ParameterSpec(
            'reach.attitude_budget_deg',
            0.2,
            'base attitude offset [deg] reactionless mode may spend to leave a stall, then '
            'restore; 0: none (more than the 0.1 deg attitude tolerance otherwise)',
            interval(*REACH_BOUNDS['attitude_budget_deg']),
        ),
        ParameterSpec(
            'reach.stall_time',
            2.0,
            'an ee_goal that has not progressed by 1 mm for this long has stalled: recovery '
            '(reactionless mode) or abort [s]',
            interval(*REACH_BOUNDS['stall_time']),
        ),
        ParameterSpec(
            'reach.goal_timeout',
            300.0,
            'an ee_goal still not reached after this long is aborted [s]',
            interval(*REACH_BOUNDS['goal_timeout']),
        ),
        ParameterSpec(
            'reach.max_plans',
            ReachSettings().max_plans,
            'reactionless mode: searches for a detour through the reaction null space after a '
            'stall, for one ee_goal (0: none)',
            count(*REACH_BOUNDS['max_plans']),
        ),
        ParameterSpec(
            'reach.max_loop_plans',
            ReachSettings().max_loop_plans,
            'reactionless mode: searches for Lie-bracket loops (cyclic joint motions that '
            'leave the base still) once the detour searches found no path (0: none)',
            count(*REACH_BOUNDS['max_loop_plans']),
        ),
        ParameterSpec(
            'reach.max_path_plans',
            ReachSettings().max_path_plans,
            'reactionless mode: searches for a joint path that spends the attitude budget and '
            'gives it back (direct collocation), from the first stall of an ee_goal, before '
            'the other searches (0: none)',
            count(*REACH_BOUNDS['max_path_plans']),
        ),
    ]
