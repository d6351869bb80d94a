"""The control modes of the reactionless controller: the one list of the package."""

from __future__ import annotations

from enum import Enum


class ControlMode(str, Enum):
    """Control modes of :class:`~ffsim_ros.control.reactionless.ReactionlessController`.

    ``reactionless``: end-effector motion in the reaction null space, base attitude held;
    ``gjm_tracking``: end-effector motion through the generalized Jacobian (the base turns);
    ``joint_pd``: baseline, fixed-base inverse kinematics tracked by a joint PD.
    """

    REACTIONLESS = 'reactionless'
    GJM_TRACKING = 'gjm_tracking'
    JOINT_PD = 'joint_pd'

    @classmethod
    def _missing_(cls, value: object) -> ControlMode:
        """Refuse an unknown mode naming ``mode`` and the modes there are (not Enum's
        "'x' is not a valid ControlMode")."""
        modes = tuple(mode.value for mode in cls)
        raise ValueError(f'mode: expected one of {modes}, got {value!r}')


#: The values of :class:`ControlMode`, in order (the ``mode`` index of the node's ``status``);
#: the node's parameter, the launch files' choices and the tools all use this tuple.
CONTROL_MODES = tuple(mode.value for mode in ControlMode)
