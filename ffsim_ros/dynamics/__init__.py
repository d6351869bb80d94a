"""Free-floating multibody dynamics core of ffsim_ros (no ROS imports).

Conventions [S0 eqs. 5, 17, 22]: ``q = [r0, Q0 (x, y, z, w), phi]`` with ``r0`` the
base-body CoM; ``v = [V0, w0, phidot]`` with ``V0`` the base CoM velocity and ``w0`` the base
angular velocity, all in the inertial frame. A fixed-base model has ``q = phi``,
``v = phidot``. See :mod:`ffsim_ros.dynamics.model` for the glossary, and
:mod:`ffsim_ros.dynamics.mufti` for Mufti's maximal-coordinate formulation (seed 001: KKT and
null-space forward dynamics, joint reactions, prescribed base motion, closed chains).
Equation references name their seed (``[S0 eq. 38]``, ``[M eq. 63]``); ``docs/equations.md``
maps each equation to the functions that implement it.
"""

from .algorithms import (
    StateSummary,
    aba,
    base_link_state,
    base_state_from_link,
    bias_forces,
    body_kinematics,
    body_poses,
    body_wrenches,
    center_of_mass,
    forward_dynamics_crba,
    inverse_dynamics,
    kinetic_energy,
    mass_matrix,
    momentum,
    momentum_and_com,
    potential_energy,
    state_summary,
)
from .compose import weld_models
from .derivatives import (
    ForwardDynamicsDerivatives,
    InverseDynamicsDerivatives,
    forward_dynamics_derivatives,
    generalized_velocity_derivatives,
    inverse_dynamics_derivatives,
    step_derivatives,
)
from .dispatch import FORWARD_DYNAMICS_METHODS, forward_dynamics
from .freefloating import (
    FreeFloatingTerms,
    base_velocity_from_momentum,
    free_floating_terms,
    generalized_inertia,
    generalized_jacobian,
    inertia_blocks,
)
from .integration import (
    FIXED_STEP_METHODS,
    SCIPY_METHODS,
    STEP_METHODS,
    StepFailure,
    difference,
    integrate,
    momentum_after,
    rk4_step,
    step,
)
from .link_frames import link_jacobian, link_pose, link_pose_and_jacobian
from .model import (
    Frame,
    InertiaWarning,
    LimitWarning,
    Mimic,
    MimicWarning,
    Model,
    UnknownNameError,
    neutral,
    with_gravity,
    with_joint_dynamics,
)
from .mufti import (
    ClosedChain,
    LoopClosure,
    joint_reactions,
    loop_closures_from_urdf,
    maximal_dynamics,
)
from .urdf import UrdfFileNotFoundError, load_urdf

__all__ = [
    'aba',
    'base_link_state',
    'base_state_from_link',
    'base_velocity_from_momentum',
    'bias_forces',
    'body_kinematics',
    'body_poses',
    'body_wrenches',
    'center_of_mass',
    'ClosedChain',
    'difference',
    'FIXED_STEP_METHODS',
    'forward_dynamics',
    'forward_dynamics_crba',
    'forward_dynamics_derivatives',
    'ForwardDynamicsDerivatives',
    'FORWARD_DYNAMICS_METHODS',
    'Frame',
    'free_floating_terms',
    'FreeFloatingTerms',
    'generalized_inertia',
    'generalized_jacobian',
    'generalized_velocity_derivatives',
    'inertia_blocks',
    'InertiaWarning',
    'LimitWarning',
    'Mimic',
    'MimicWarning',
    'integrate',
    'inverse_dynamics',
    'inverse_dynamics_derivatives',
    'InverseDynamicsDerivatives',
    'joint_reactions',
    'kinetic_energy',
    'link_jacobian',
    'link_pose',
    'link_pose_and_jacobian',
    'load_urdf',
    'loop_closures_from_urdf',
    'LoopClosure',
    'mass_matrix',
    'maximal_dynamics',
    'Model',
    'momentum',
    'momentum_after',
    'momentum_and_com',
    'neutral',
    'potential_energy',
    'rk4_step',
    'SCIPY_METHODS',
    'state_summary',
    'StateSummary',
    'step',
    'step_derivatives',
    'STEP_METHODS',
    'StepFailure',
    'UnknownNameError',
    'UrdfFileNotFoundError',
    'with_gravity',
    'weld_models',
    'with_joint_dynamics',
]
