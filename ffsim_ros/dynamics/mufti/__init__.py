"""Mufti's maximal-coordinate formulation (seed 001, I.H. Mufti, NRC DM-3, 1983).

Every body is a free rigid body with its Newton-Euler equations; the joints are constraints
whose Lagrange multipliers are the hinge forces and constraint torques. The Lagrangian (KKT)
system of Gauss's principle of least constraint [M eqs. 10, 39, 49, 63] is solved sparse, or
in its null-space form [M eq. 40-c, Appendix], or with the accelerations eliminated
[M eqs. 12-14, 50]. Trees of ball-and-socket joints and the seed's reduced forms
[M eqs. 14, 16, 28, 38] (the barycentric vectors and augmented bodies) are in
:mod:`.barycentric`. See ``docs/mufti.md``, and ``docs/equations.md`` for every equation.
"""

from . import barycentric
from .closed import (
    BAUMGARTE_OMEGA,
    DEFAULT_ALPHA,
    DEFAULT_BETA,
    ClosedChain,
    ClosedChainSolution,
    LoopClosure,
)
from .graph import incidence_matrix, path_matrix, regular_labeling
from .linalg import RedundantConstraintWarning
from .tree import (
    BaseMotion,
    MaximalSolution,
    joint_reactions,
    maximal_dynamics,
    prescribed_base_dynamics,
    simulate_prescribed_base,
)
from .urdf_loops import loop_closures_from_urdf

__all__ = [
    'barycentric',
    'BAUMGARTE_OMEGA',
    'DEFAULT_ALPHA',
    'DEFAULT_BETA',
    'ClosedChain',
    'ClosedChainSolution',
    'LoopClosure',
    'BaseMotion',
    'MaximalSolution',
    'RedundantConstraintWarning',
    'incidence_matrix',
    'joint_reactions',
    'loop_closures_from_urdf',
    'maximal_dynamics',
    'path_matrix',
    'prescribed_base_dynamics',
    'regular_labeling',
    'simulate_prescribed_base',
]
