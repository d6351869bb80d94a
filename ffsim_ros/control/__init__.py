"""Control laws for free-floating robots (no ROS imports)."""

from .reactionless import (
    ControlMode,
    ControlOutput,
    Gains,
    ReactionlessController,
    base_rate_map,
    dls_pinv,
    generalized_inertia,
    reactionless_basis,
)

__all__ = [
    'ControlMode',
    'ControlOutput',
    'Gains',
    'ReactionlessController',
    'base_rate_map',
    'dls_pinv',
    'generalized_inertia',
    'reactionless_basis',
]
