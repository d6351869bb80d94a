"""Control laws for free-floating robots (no ROS imports)."""

from ffsim_ros.dynamics import generalized_inertia

from .modes import CONTROL_MODES, ControlMode
from .reactionless import (
    ControlOutput,
    Gains,
    ReactionlessController,
    base_rate_map,
    dls_pinv,
    reactionless_basis,
)

__all__ = [
    'CONTROL_MODES',
    'ControlMode',
    'ControlOutput',
    'Gains',
    'ReactionlessController',
    'base_rate_map',
    'dls_pinv',
    'generalized_inertia',
    'reactionless_basis',
]
