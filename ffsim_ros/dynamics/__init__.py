"""Free-floating multibody dynamics core of ffsim_ros (no ROS imports).

Conventions (seed 000, eqs. 5 and 22): ``q = [r0, Q0 (x, y, z, w), phi]`` with ``r0`` the
base-body CoM; ``v = [V0, w0, phidot]`` with ``V0`` the base CoM velocity and ``w0`` the base
angular velocity, all in the inertial frame. A fixed-base model has ``q = phi``,
``v = phidot``. See :mod:`ffsim_ros.dynamics.model` for the glossary, and
:mod:`ffsim_ros.dynamics.mufti` for Mufti's maximal-coordinate formulation (seed 001: KKT and
null-space forward dynamics, joint reactions, prescribed base motion, closed chains).
"""

from .algorithms import (
    base_link_state,
    base_state_from_link,
    base_velocity_from_momentum,
    bias_forces,
    body_poses,
    center_of_mass,
    forward_dynamics,
    generalized_jacobian,
    inertia_blocks,
    inverse_dynamics,
    kinetic_energy,
    link_jacobian,
    link_pose,
    mass_matrix,
    momentum,
    potential_energy,
)
from .integration import FIXED_STEP_METHODS, SCIPY_METHODS, difference, integrate, step
from .model import (
    Frame,
    InertiaWarning,
    Model,
    UnknownNameError,
    neutral,
    with_gravity,
    with_joint_dynamics,
)
from .mufti import ClosedChain, LoopClosure, joint_reactions, maximal_dynamics
from .urdf import load_urdf

__all__ = [
    'ClosedChain',
    'LoopClosure',
    'base_link_state',
    'base_state_from_link',
    'FIXED_STEP_METHODS',
    'SCIPY_METHODS',
    'Frame',
    'InertiaWarning',
    'Model',
    'UnknownNameError',
    'base_velocity_from_momentum',
    'bias_forces',
    'body_poses',
    'center_of_mass',
    'difference',
    'forward_dynamics',
    'generalized_jacobian',
    'inertia_blocks',
    'integrate',
    'inverse_dynamics',
    'joint_reactions',
    'kinetic_energy',
    'link_jacobian',
    'link_pose',
    'load_urdf',
    'mass_matrix',
    'maximal_dynamics',
    'momentum',
    'neutral',
    'potential_energy',
    'step',
    'with_gravity',
    'with_joint_dynamics',
]
