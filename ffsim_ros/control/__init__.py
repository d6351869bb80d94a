"""Control laws for free-floating robots (no ROS imports).

``reactionless`` (the law), ``rns`` (reaction-null-space rate laws and measures), ``planner``
(re-planning through the reaction null space), ``goals`` (goal outcome model and settings),
``supervisor`` (stall detection, recovery, outcome: what a node drives), ``trajectory`` (joint
trajectories: JTC interpolation, computed-torque tracking, tolerances, reactionless correction).
"""

from ffsim_ros.dynamics import generalized_inertia

from .goals import (
    GOAL_OUTCOMES,
    GOAL_PHASES,
    REACH_BOUNDS,
    REJECTED,
    GoalOutcome,
    GoalPhase,
    GoalStatus,
    ReachSettings,
)
from .modes import CONTROL_MODES, ControlMode
from .planner import Plan, RnsPlanner, Segment
from .reactionless import (
    ControlOutput,
    Gains,
    ReactionlessController,
    base_rate_map,
    reactionless_basis,
)
from .rns import (
    TaskTerms,
    attitude_error,
    budget_rates,
    dls_pinv,
    rate_weights,
    reactionless_rates,
    rns_manipulability,
    self_motion,
)
from .supervisor import ReachSupervisor
from .trajectory import JointTrajectory, TrajectoryError, TrajectoryFollower

__all__ = [
    'CONTROL_MODES',
    'GOAL_OUTCOMES',
    'GOAL_PHASES',
    'ControlMode',
    'ControlOutput',
    'Gains',
    'GoalOutcome',
    'GoalPhase',
    'GoalStatus',
    'JointTrajectory',
    'Plan',
    'REACH_BOUNDS',
    'REJECTED',
    'ReachSettings',
    'ReachSupervisor',
    'ReactionlessController',
    'RnsPlanner',
    'Segment',
    'TaskTerms',
    'TrajectoryError',
    'TrajectoryFollower',
    'attitude_error',
    'base_rate_map',
    'budget_rates',
    'dls_pinv',
    'generalized_inertia',
    'rate_weights',
    'reactionless_basis',
    'reactionless_rates',
    'rns_manipulability',
    'self_motion',
]
