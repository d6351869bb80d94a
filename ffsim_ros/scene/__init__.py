"""A free-floating robot with free-floating targets: contact, impact and grasp (no ROS).

Issue 17's core: targets (rigid bodies or URDF multibodies, with a tumble helper), collision
geometry from URDF ``<collision>`` primitives checked with ``coal``, impact and compliant
contact laws at a point with the full free-floating generalized inertia of both systems (the
``J^T F_c`` term of [S0 eq. 41], normal and Coulomb tangential; ``F_f`` is the joint friction),
and the grasp as a weld joining robot and target into one tree (it closes no loop, unlike the
cut hinges of [M sec. 4]; its wrench from the robot's base rows of [S0 eq. 41]).
:class:`Scene` steps it all (``advance(n)`` -> snapshot with events); :mod:`.scenario` builds
one from YAML. Imports only the public API of :mod:`ffsim_ros.dynamics`. See
``docs/capture.md``.
"""

from .events import (
    BodyState,
    CaptureEvent,
    ContactEvent,
    ReleaseEvent,
    SceneSnapshot,
    TargetSnapshot,
)
from .geometry import (
    MESH_POLICIES,
    Box,
    Capsule,
    CollisionShape,
    Cylinder,
    Sphere,
    shapes_from_urdf,
)
from .grasp import (
    CaptureImpulse,
    EnvelopeCheck,
    Gripper,
    capture_impulse,
    merge_state,
    split_state,
    weld_wrench,
    welded_model,
)
from .impact import (
    CompliantLaw,
    ImpactLaw,
    ImpactSolution,
    contact_jacobian,
    inverse_inertia,
    point_jacobian,
    solve_impact,
)
from .scenario import (
    ScenarioError,
    gripper_from_dict,
    load_scenario,
    scene_from_dict,
    target_from_dict,
)
from .scene import Scene
from .targets import (
    Handle,
    Target,
    Tumble,
    locked_inertia,
    rigid_target,
    target_state,
    tumble,
    urdf_target,
)

__all__ = [
    'BodyState',
    'Box',
    'Capsule',
    'CaptureEvent',
    'CaptureImpulse',
    'CollisionShape',
    'CompliantLaw',
    'ContactEvent',
    'Cylinder',
    'EnvelopeCheck',
    'Gripper',
    'Handle',
    'ImpactLaw',
    'ImpactSolution',
    'MESH_POLICIES',
    'ReleaseEvent',
    'ScenarioError',
    'Scene',
    'SceneSnapshot',
    'Sphere',
    'Target',
    'TargetSnapshot',
    'Tumble',
    'capture_impulse',
    'contact_jacobian',
    'gripper_from_dict',
    'inverse_inertia',
    'load_scenario',
    'locked_inertia',
    'merge_state',
    'point_jacobian',
    'rigid_target',
    'scene_from_dict',
    'shapes_from_urdf',
    'solve_impact',
    'split_state',
    'target_from_dict',
    'target_state',
    'tumble',
    'urdf_target',
    'weld_wrench',
    'welded_model',
]
