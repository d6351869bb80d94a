"""The standard interface packages of issue 18: simulation_interfaces and control_msgs.

With the PyPI wheels, ``tools/setup_venv.sh`` builds them from ``interfaces/<pkg>`` (like
tf2_msgs); on a ROS install they are the distro's. Either way they must be the released
definitions, which these tests pin down independently of ``interfaces/``:

- the RIHS01 type hash of every type, as compiled into the C type support that rmw announces
  in discovery (read through ``_TYPE_SUPPORT``) and as installed in ``share/<pkg>/*.json``,
  equals the hash of the upstream definition;
- the constants and default values (not covered by the hash) equal the upstream ones;
- messages survive serialization, and small ones are laid out as hand-derived CDR;
- an action and a service work over DDS, announcing the expected type hash.

The expected hashes were computed from the upstream files themselves (comments and all:
simulation_interfaces tag 1.6.1, the Kilted release, whose definitions Jazzy's 1.5.1 shares;
control_msgs 6.10.0 as released for Kilted and Rolling), converted with rosidl_adapter and
hashed with rosidl_generator_type_description (Kilted) against the dependency descriptions of
the Kilted wheels. The same procedure reproduces the official hashes the wheels ship for
trajectory_msgs, and tf2_msgs' (``test_ros_environment.py``).
"""

from __future__ import annotations

import ctypes
import json
import math
import os
import re
import struct
import xml.etree.ElementTree as ET
from importlib import import_module
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.ros

#: The releases the definitions (and the hashes below) follow.
RELEASES = {'simulation_interfaces': '1.6.1', 'control_msgs': '6.10.0'}


def _table(text: str) -> dict[str, str]:
    """``'<kind>/<Type> <hash>'`` lines -> {kind/Type: hash}."""
    return dict(line.split() for line in text.strip().splitlines())


def _constants(text: str) -> dict[str, int]:
    """``'NAME=value NAME=value'`` -> {NAME: value}."""
    return {k: int(v) for k, v in (item.split('=') for item in text.split())}


#: RIHS01 hashes (without the ``RIHS01_`` prefix) of the upstream definitions. A service's or
#: action's hash covers its request/response/event (goal/result/feedback/...) types and every
#: type they use, so one wrong field anywhere below changes the hash of the top-level type.
UPSTREAM_HASHES = {
    'simulation_interfaces': _table(
        """
    action/SimulateSteps         f0837c898e1219cd73bf4c041feab41e8c533e8e1057e982744dba7b093467eb
    msg/Bounds                   e8624fe51f0f5548197542697d924c5699ac7198f1e4c68e50c3ca2af73f5b3f
    msg/EntityCategory           43bdf7933fddf75f6970f7a8fe7078524355d821d390b3954bb46ac36c03dfe1
    msg/EntityFilters            8e7b12e8ea062f14c55de4877221fe1b7cd9749665a7ad8a4ab855fc4b148303
    msg/EntityInfo               3b9a2e7fa00f9a59d325b6e47904044c421561a385682027c7fc06c359806319
    msg/EntityState              2e0464a85eb80a939025075d6c20761eca6a4cb9d6baf2c0ba373467c8b598d0
    msg/NamedPose                b32da2a039b1840f605ec025b7991a18efacac662fac272818d1ae6e2b12bc27
    msg/Resource                 2bb1939cf80f8d2f284afba53cbec60b5ff33759bd39b714128ea8867a34c51a
    msg/Result                   cf43a306adff3337a0a47143d8f5689933bc70a30478f13b077dc1fe3bc5ad17
    msg/SimulationState          bb9f87ccdd98fba113052a512d9801e84ce732d0a2b3c2b0cb281828de36e415
    msg/SimulatorFeatures        8b101c8529bc0ea3dcf056078254768f39832b9ef0adaf93bd5cea96c0de3305
    msg/SpawnEntity              94a349a865ccf673c18c080520299c88c3d8d5f4842ecf1482d6c997ac4b69f9
    msg/SpawnResult              dbc277304b6c24bfb2a631cea8f52e2b005d583ec0a6c86b11613f5ce6486da1
    msg/Spawnable                8c22025d840e7a05ab31ba56f998b06458b549a9744b4695be25b778829fc176
    msg/TagsFilter               5c3efc51e8ed04c266c09cb4691ec95b964cd410558e01d8c83646b038826b45
    msg/WorldResource            e3b65ecf904b9b115673e4a343c6aa3d28c19e185a71228faa64b783afcf2403
    srv/DeleteEntity             ff7e96a5b83dc8e2bb34b8b034480028b3a24d9f8376b2c0590bac3704be3e28
    srv/GetAvailableWorlds       ce5589b5523f2732d1969a3c5a7e6b17a387091df8190c62f78d7fdd1109e3e3
    srv/GetCurrentWorld          79ed4e910e1b7a1c9f7950ff758bfba3535bf0dec669054e8af115a099724ddd
    srv/GetEntities              cb90004c48cd50f37732fb008e22c34c261dd680a723bf0f85d8437ea4498bf7
    srv/GetEntitiesStates        0a76170d0c1c90e1eaf805cfab78ea801d1f82df309a28c1f0fae4b570f19754
    srv/GetEntityBounds          17be8d36231178a5eed0de0344b55c19975581627a9aec30a4fee9926a35deed
    srv/GetEntityInfo            953b7ab6bfc35063f5c9a72463c6ce489baa10249a7fa510926d342a34b0d29e
    srv/GetEntityState           749c91f2a2353d98367b64f2995a0f5842ce92a08ec1ffb3e185540a91557fb5
    srv/GetNamedPoseBounds       59fa8dd2c68ba6771160cc66a628ac99fa95e2748fa0a43c2cc62a2e5f3f6fdc
    srv/GetNamedPoses            c3d12ab920115bfd4733f6d20516adc3968fb438538540997c37e200e02b04e3
    srv/GetSimulationState       3362dcebee4b1afebbf9c4beee5c79c1455385aded62092a892d61fde8644f30
    srv/GetSimulatorFeatures     abb9439c8cf196722a469fb6c68b44b484f198c2a1356ac38849a29c2a20a794
    srv/GetSpawnables            3bc0266bf8236058ff589c44512e013afe4f295427c39d44cff363d1c956bf36
    srv/LoadWorld                f210682338f195f6f06191b46b20ec4992bddf485d33e2cffab2dd15341b4e3e
    srv/ResetSimulation          4ce285d7ff9b8ac70dcc95161f32bf54c05a6f4b13427990e41ab40c36c39646
    srv/SetEntityInfo            867fe2b6812f3e021859171f9b788560d66bb7079d640030baf6c0bb2dd2631e
    srv/SetEntityState           ca210e7d2b66629ae133c8e1edf5246e618106d75c78ed0556c0e7a33c59ee5e
    srv/SetSimulationState       a868b916dce49974f637ba252141258c4b07b0c06858b88af560e3eb6bfbcb30
    srv/SpawnEntities            41703a359ee032bf4fc230f144f531705ba039a2e97edeae1f7997dd83b04857
    srv/SpawnEntity              d4c086345d4194a5fc4c9ae45095736ca4062b5cdac4d06a42dec93d683e03cf
    srv/StepSimulation           913fe0653690ce6bf8f09f316e6a626747012e9fca31e26719910d417aa8565c
    srv/UnloadWorld              ac7f9a73df1b5b15015d854c5ac552b7726506e22f886c6792804f0b7f88b30b
        """
    ),
    'control_msgs': _table(
        """
    action/FollowJointTrajectory ff29901b2693f5deb847e96084a1c2cdb26e70b7c847be21859b70a55fb29cf0
    msg/JointComponentTolerance  739ea7566931944d33830fa10f1bf5e7a7fbdc3172bce7a7eaac642bd6e3ffa4
    msg/JointTolerance           c254f9cece0f3b733017b6990fd46d1326e25242d6b8844398c97d9a88e7d648
        """
    ),
}

#: The feedback message of FollowJointTrajectory (the type of its ``_action/feedback`` topic).
FJT_FEEDBACK_MESSAGE_HASH = (
    'RIHS01_95618cc73912d99b9acaa17d2da5e832cb0bfdeede7534fa8ec600feca2a6c4b'
)

#: Upstream constants, per type (``<pkg>.<kind>.<Type>[.Request|.Response|.Goal|...]``).
UPSTREAM_CONSTANTS = {
    'simulation_interfaces.msg.Bounds': _constants(
        'TYPE_EMPTY=0 TYPE_BOX=1 TYPE_CONVEX_HULL=2 TYPE_SPHERE=3'
    ),
    'simulation_interfaces.msg.EntityCategory': _constants(
        'CATEGORY_OBJECT=0 CATEGORY_ROBOT=1 CATEGORY_HUMAN=2 CATEGORY_DYNAMIC_OBJECT=4 '
        'CATEGORY_STATIC_OBJECT=5'
    ),
    'simulation_interfaces.msg.Result': _constants(
        'RESULT_FEATURE_UNSUPPORTED=0 RESULT_OK=1 RESULT_NOT_FOUND=2 RESULT_INCORRECT_STATE=3 '
        'RESULT_OPERATION_FAILED=4'
    ),
    'simulation_interfaces.msg.SimulationState': _constants(
        'STATE_STOPPED=0 STATE_PLAYING=1 STATE_PAUSED=2 STATE_QUITTING=3 STATE_NO_WORLD=4 '
        'STATE_LOADING_WORLD=5'
    ),
    'simulation_interfaces.msg.SimulatorFeatures': _constants(
        'SPAWNING=0 DELETING=1 NAMED_POSES=2 POSE_BOUNDS=3 ENTITY_TAGS=4 ENTITY_BOUNDS=5 '
        'ENTITY_BOUNDS_BOX=6 ENTITY_BOUNDS_CONVEX=7 ENTITY_CATEGORIES=8 '
        'SPAWNING_RESOURCE_STRING=9 ENTITY_STATE_GETTING=10 ENTITY_STATE_SETTING=11 '
        'ENTITY_INFO_GETTING=12 ENTITY_INFO_SETTING=13 SPAWNABLES=14 SIMULATION_RESET=20 '
        'SIMULATION_RESET_TIME=21 SIMULATION_RESET_STATE=22 SIMULATION_RESET_SPAWNED=23 '
        'SIMULATION_STATE_GETTING=24 SIMULATION_STATE_SETTING=25 SIMULATION_STATE_PAUSE=26 '
        'STEP_SIMULATION_SINGLE=31 STEP_SIMULATION_MULTIPLE=32 STEP_SIMULATION_ACTION=33 '
        'WORLD_LOADING=40 WORLD_RESOURCE_STRING=41 WORLD_TAGS=42 WORLD_UNLOADING=43 '
        'WORLD_INFO_GETTING=44 AVAILABLE_WORLDS=45 SPAWNING_ENTITIES=50'
    ),
    'simulation_interfaces.msg.SpawnResult': _constants(
        'NAME_NOT_UNIQUE=101 NAME_INVALID=102 UNSUPPORTED_FORMAT=103 NO_RESOURCE=104 '
        'NAMESPACE_INVALID=105 RESOURCE_PARSE_ERROR=106 MISSING_ASSETS=107 '
        'UNSUPPORTED_ASSETS=108 INVALID_POSE=109'
    ),
    'simulation_interfaces.msg.TagsFilter': _constants('FILTER_MODE_ANY=0 FILTER_MODE_ALL=1'),
    'simulation_interfaces.srv.GetAvailableWorlds.Response': _constants(
        'DEFAULT_SOURCES_FAILED=101'
    ),
    'simulation_interfaces.srv.GetCurrentWorld.Response': _constants('NO_WORLD_LOADED=101'),
    'simulation_interfaces.srv.LoadWorld.Response': _constants(
        'UNSUPPORTED_FORMAT=101 NO_RESOURCE=102 RESOURCE_PARSE_ERROR=103 MISSING_ASSETS=104 '
        'UNSUPPORTED_ASSETS=105 UNSUPPORTED_ELEMENTS=106'
    ),
    'simulation_interfaces.srv.ResetSimulation.Request': _constants(
        'SCOPE_DEFAULT=0 SCOPE_TIME=1 SCOPE_STATE=2 SCOPE_SPAWNED=4 SCOPE_ALL=255'
    ),
    'simulation_interfaces.srv.SetEntityState.Response': _constants('INVALID_POSE=101'),
    'simulation_interfaces.srv.SetSimulationState.Response': _constants(
        'ALREADY_IN_TARGET_STATE=101 STATE_TRANSITION_ERROR=102 INCORRECT_TRANSITION=103'
    ),
    'simulation_interfaces.srv.SpawnEntities.Response': _constants('ENTITIES_SPAWN_FAILED=150'),
    'simulation_interfaces.srv.SpawnEntity.Response': _constants(
        'NAME_NOT_UNIQUE=101 NAME_INVALID=102 UNSUPPORTED_FORMAT=103 NO_RESOURCE=104 '
        'NAMESPACE_INVALID=105 RESOURCE_PARSE_ERROR=106 MISSING_ASSETS=107 '
        'UNSUPPORTED_ASSETS=108 INVALID_POSE=109'
    ),
    'simulation_interfaces.srv.UnloadWorld.Response': _constants('NO_WORLD_LOADED=101'),
    'control_msgs.action.FollowJointTrajectory.Result': _constants(
        'SUCCESSFUL=0 INVALID_GOAL=-1 INVALID_JOINTS=-2 OLD_HEADER_TIMESTAMP=-3 '
        'PATH_TOLERANCE_VIOLATED=-4 GOAL_TOLERANCE_VIOLATED=-5'
    ),
    'control_msgs.msg.JointComponentTolerance': _constants(
        'X_AXIS=1 Y_AXIS=2 Z_AXIS=3 TRANSLATION=4 ROTATION=5'
    ),
}

#: Upstream default values (the only one in both packages).
UPSTREAM_DEFAULTS = {'simulation_interfaces.srv.StepSimulation.Request.steps': 1}

_SUBTYPES = {'srv': ('Request', 'Response', 'Event'), 'action': ('Goal', 'Result', 'Feedback')}


# ------------------------------------------------------------------------------- helpers
def _share(pkg: str) -> Path:
    from ament_index_python.packages import get_package_share_directory

    return Path(get_package_share_directory(pkg))


def _built_here(pkg: str) -> bool:
    """Whether ``pkg`` is the one tools/setup_venv.sh built from interfaces/ (wheels venv)."""
    return (_share(pkg) / '.ffsim-source.sha256').is_file()


def _require_pinned_release(pkg: str) -> None:
    """Skip where the package is a distro's other than the release the hashes pin."""
    if _built_here(pkg) or os.environ.get('ROS_DISTRO') == 'kilted':
        return
    pytest.skip(
        f"{pkg} is ROS_DISTRO={os.environ.get('ROS_DISTRO')}'s; the hashes pinned here are "
        f'those of {pkg} {RELEASES[pkg]} (Kilted)'
    )


def _interface(pkg: str, name: str) -> Any:
    kind, type_name = name.split('/')
    return getattr(import_module(f'{pkg}.{kind}'), type_name)


class _TypeHash(ctypes.Structure):
    # rosidl_runtime_c/type_hash.h: rosidl_type_hash_t
    _fields_ = [('version', ctypes.c_uint8), ('value', ctypes.c_uint8 * 32)]


_GetTypeHash = ctypes.CFUNCTYPE(ctypes.POINTER(_TypeHash), ctypes.c_void_p)


class _MessageTypeSupport(ctypes.Structure):
    # rosidl_runtime_c/message_type_support_struct.h (leading members)
    _fields_ = [
        ('typesupport_identifier', ctypes.c_char_p),
        ('data', ctypes.c_void_p),
        ('func', ctypes.c_void_p),
        ('get_type_hash_func', _GetTypeHash),
    ]


class _ServiceTypeSupport(ctypes.Structure):
    # rosidl_runtime_c/service_type_support_struct.h (leading members)
    _fields_ = [
        ('typesupport_identifier', ctypes.c_char_p),
        ('data', ctypes.c_void_p),
        ('func', ctypes.c_void_p),
        ('request_typesupport', ctypes.POINTER(_MessageTypeSupport)),
        ('response_typesupport', ctypes.POINTER(_MessageTypeSupport)),
        ('event_typesupport', ctypes.POINTER(_MessageTypeSupport)),
        ('event_message_create_handle_function', ctypes.c_void_p),
        ('event_message_destroy_handle_function', ctypes.c_void_p),
        ('get_type_hash_func', _GetTypeHash),
    ]


class _ActionTypeSupport(ctypes.Structure):
    # rosidl_runtime_c/action_type_support_struct.h (leading members)
    _fields_ = [
        ('goal_service_type_support', ctypes.POINTER(_ServiceTypeSupport)),
        ('result_service_type_support', ctypes.POINTER(_ServiceTypeSupport)),
        ('cancel_service_type_support', ctypes.POINTER(_ServiceTypeSupport)),
        ('feedback_message_type_support', ctypes.POINTER(_MessageTypeSupport)),
        ('status_message_type_support', ctypes.POINTER(_MessageTypeSupport)),
        ('get_type_hash_func', _GetTypeHash),
    ]


_capsule_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_capsule_pointer.restype = ctypes.c_void_p
_capsule_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]


def _hash_string(support: Any) -> str:
    """RIHS string of a type support struct (pointer), through its get_type_hash_func."""
    if not isinstance(support.contents, _ActionTypeSupport):  # checks the struct mapping
        assert support.contents.typesupport_identifier == b'rosidl_typesupport_c'
    result = support.contents.get_type_hash_func(ctypes.cast(support, ctypes.c_void_p)).contents
    return f'RIHS{result.version:02d}_{bytes(result.value).hex()}'


def _compiled_hashes(pkg: str, name: str) -> dict[str, str]:
    """Hashes compiled into the C type support that rclpy hands to rmw.

    Returns the hash of ``<pkg>/<name>`` and of the types it is made of (request, response
    and event of a service; goal, result, feedback, the SendGoal/GetResult services and the
    feedback message of an action), keyed by full type name.
    """
    from rclpy.type_support import check_for_type_support

    kind = name.split('/')[0]
    cls = _interface(pkg, name)
    check_for_type_support(cls)
    address = _capsule_pointer(cls._TYPE_SUPPORT, None)
    full = f'{pkg}/{name}'
    if kind == 'msg':
        return {full: _hash_string(ctypes.cast(address, ctypes.POINTER(_MessageTypeSupport)))}

    def service(prefix: str, srv: Any) -> dict[str, str]:
        out = {prefix: _hash_string(srv)}
        for part in ('request', 'response', 'event'):
            out[f'{prefix}_{part.title()}'] = _hash_string(
                getattr(srv.contents, part + '_typesupport')
            )
        return out

    if kind == 'srv':
        return service(full, ctypes.cast(address, ctypes.POINTER(_ServiceTypeSupport)))
    action = ctypes.cast(address, ctypes.POINTER(_ActionTypeSupport))
    out = {full: _hash_string(action)}
    out.update(service(f'{full}_SendGoal', action.contents.goal_service_type_support))
    out.update(service(f'{full}_GetResult', action.contents.result_service_type_support))
    out[f'{full}_FeedbackMessage'] = _hash_string(action.contents.feedback_message_type_support)
    for part in _SUBTYPES['action']:
        sub = getattr(cls, part)
        check_for_type_support(sub)
        pointer = ctypes.cast(
            _capsule_pointer(sub._TYPE_SUPPORT, None), ctypes.POINTER(_MessageTypeSupport)
        )
        out[f'{full}_{part}'] = _hash_string(pointer)
    return out


def _installed_hashes(pkg: str, name: str) -> dict[str, str]:
    """Hashes listed in ``share/<pkg>/<name>.json`` for the types of this package."""
    description = json.loads((_share(pkg) / f'{name}.json').read_text())
    return {
        h['type_name']: h['hash_string']
        for h in description['type_hashes']
        if h['type_name'].startswith(f'{pkg}/')
    }


# --------------------------------------------------------------------------------- tests
@pytest.mark.parametrize('pkg', sorted(UPSTREAM_HASHES))
def test_every_upstream_interface_imports(pkg):
    """Each interface of the pinned release is importable, with the parts its kind implies."""
    for name in UPSTREAM_HASHES[pkg]:
        kind = name.split('/')[0]
        cls = _interface(pkg, name)
        for part in _SUBTYPES.get(kind, ()):
            assert hasattr(cls, part), f'{pkg}/{name} has no {part}'
    if _built_here(pkg):
        version = ET.parse(_share(pkg) / 'package.xml').getroot().findtext('version')
        assert version == RELEASES[pkg]


@pytest.mark.parametrize('pkg', sorted(UPSTREAM_HASHES))
def test_type_hashes_equal_upstream(pkg):
    """RIHS01 hashes of the compiled type support and of share/*.json equal upstream's."""
    _require_pinned_release(pkg)
    expected = {f'{pkg}/{name}': f'RIHS01_{h}' for name, h in UPSTREAM_HASHES[pkg].items()}
    compiled: dict[str, str] = {}
    installed: dict[str, str] = {}
    for name in UPSTREAM_HASHES[pkg]:
        compiled.update(_compiled_hashes(pkg, name))
        installed.update(_installed_hashes(pkg, name))
    assert {k: compiled[k] for k in expected} == expected
    # The nested types too (request/response/event, goal/result/feedback, ...): what the
    # installed descriptions list is what was compiled, for every type they name.
    assert set(installed) <= set(compiled)
    assert {k: compiled[k] for k in installed} == installed
    assert {k: installed[k] for k in expected} == expected
    if pkg == 'control_msgs':
        fb = 'control_msgs/action/FollowJointTrajectory_FeedbackMessage'
        assert compiled[fb] == FJT_FEEDBACK_MESSAGE_HASH


def test_constants_and_defaults_equal_upstream():
    """What the type hash does not cover: constants (result codes, features) and defaults."""
    for pkg in UPSTREAM_HASHES:
        _require_pinned_release(pkg)
    constants, defaults = {}, {}
    for pkg, names in UPSTREAM_HASHES.items():
        for name in names:
            kind, type_name = name.split('/')
            cls = _interface(pkg, name)
            parts = [(f'{pkg}.{kind}.{type_name}', cls)]
            if kind != 'msg':
                parts = [
                    (f'{pkg}.{kind}.{type_name}.{part}', getattr(cls, part))
                    for part in _SUBTYPES[kind]
                    if part != 'Event'
                ]
            for path, message in parts:
                # The generated classes expose constants as NAME and defaults as FIELD__DEFAULT.
                found = {
                    k: getattr(message, k)
                    for k in dir(message)
                    if re.fullmatch(r'[A-Z][A-Z0-9_]*', k) and isinstance(getattr(message, k), int)
                }
                for key in [k for k in found if k.endswith('__DEFAULT')]:
                    defaults[f'{path}.{key[: -len("__DEFAULT")].lower()}'] = found.pop(key)
                if found:
                    constants[path] = found
    assert constants == UPSTREAM_CONSTANTS
    assert defaults == UPSTREAM_DEFAULTS
    from simulation_interfaces.srv import StepSimulation

    assert StepSimulation.Request().steps == 1


def test_serialized_layout_is_cdr():
    """Small messages serialize to the CDR bytes derived by hand (padding bytes skipped)."""
    from control_msgs.msg import JointTolerance
    from rclpy.serialization import serialize_message
    from simulation_interfaces.msg import Result
    from simulation_interfaces.srv import StepSimulation

    header = b'\x00\x01\x00\x00'  # CDR, little endian
    data = serialize_message(StepSimulation.Request(steps=1000))
    assert data == header + struct.pack('<Q', 1000)

    # uint8 result; (3 padding bytes) uint32 length incl. NUL; 'no\0'
    data = serialize_message(Result(result=Result.RESULT_OPERATION_FAILED, error_message='no'))
    assert len(data) == 4 + 1 + 3 + 4 + 3
    assert data[:4] == header
    assert struct.unpack_from('<B3xI3s', data, 4) == (4, 3, b'no\x00')

    # string name 'j1'; (1 padding byte to the 8-byte boundary) 3 x float64
    data = serialize_message(
        JointTolerance(name='j1', position=0.5, velocity=-1.0, acceleration=2.0)
    )
    assert len(data) == 4 + 4 + 3 + 1 + 24
    assert struct.unpack_from('<I3sx3d', data, 4) == (3, b'j1\x00', 0.5, -1.0, 2.0)


def _trajectory_goal() -> Any:
    from builtin_interfaces.msg import Duration
    from control_msgs.action import FollowJointTrajectory
    from control_msgs.msg import JointComponentTolerance, JointTolerance
    from geometry_msgs.msg import Transform, Twist
    from trajectory_msgs.msg import JointTrajectoryPoint, MultiDOFJointTrajectoryPoint

    goal = FollowJointTrajectory.Goal()
    goal.trajectory.header.frame_id = 'base_link'
    goal.trajectory.joint_names = ['shoulder', 'elbow']
    goal.trajectory.points = [
        JointTrajectoryPoint(
            positions=[0.0, 0.1], velocities=[0.0, 0.0], time_from_start=Duration(sec=0)
        ),
        JointTrajectoryPoint(
            positions=[0.5, -0.25],
            velocities=[0.1, -0.05],
            accelerations=[0.0, 0.0],
            effort=[1.5, -2.5],
            time_from_start=Duration(sec=2, nanosec=500_000_000),
        ),
    ]
    goal.multi_dof_trajectory.joint_names = ['floating']
    point = MultiDOFJointTrajectoryPoint(transforms=[Transform()], velocities=[Twist()])
    point.transforms[0].translation.x = 1.25
    point.transforms[0].rotation.z = math.sqrt(0.5)
    point.transforms[0].rotation.w = math.sqrt(0.5)
    point.velocities[0].angular.z = -0.75
    point.time_from_start.sec = 3
    goal.multi_dof_trajectory.points = [point]
    goal.path_tolerance = [JointTolerance(name='elbow', position=0.05, velocity=-1.0)]
    goal.goal_tolerance = [JointTolerance(name='shoulder', position=0.01)]
    goal.component_path_tolerance = [
        JointComponentTolerance(
            joint_name='floating', component=JointComponentTolerance.ROTATION, position=0.1
        )
    ]
    goal.component_goal_tolerance = [
        JointComponentTolerance(
            joint_name='floating', component=JointComponentTolerance.TRANSLATION, position=0.02
        )
    ]
    goal.goal_time_tolerance = Duration(sec=1, nanosec=250)
    return goal


def test_serialization_round_trip():
    """Every field survives serialize -> deserialize (nested, sequences, 64-bit, negative)."""
    from control_msgs.action import FollowJointTrajectory
    from rclpy.serialization import deserialize_message, serialize_message
    from simulation_interfaces.action import SimulateSteps
    from simulation_interfaces.msg import (
        EntityCategory,
        Resource,
        SimulationState,
        SimulatorFeatures,
        SpawnEntity,
    )
    from simulation_interfaces.srv import (
        GetEntitiesStates,
        GetSimulatorFeatures,
        SetEntityState,
        SetSimulationState,
        SpawnEntities,
    )

    request = SetEntityState.Request(entity='robot/base_link')
    request.state.header.frame_id = 'world'
    request.state.pose.position.x = -3.5
    request.state.pose.orientation.w = 1.0
    request.state.twist.angular.y = 0.125
    request.state.acceleration.linear.z = -9.81

    entities = GetEntitiesStates.Request()
    entities.filters.filter = '^robot.*'
    entities.filters.categories = [EntityCategory(category=EntityCategory.CATEGORY_ROBOT)]
    entities.filters.tags.tags = ['arm', 'free-floating']
    entities.filters.bounds.type = entities.filters.bounds.TYPE_SPHERE

    features = GetSimulatorFeatures.Response()
    features.features.features = [SimulatorFeatures.STEP_SIMULATION_ACTION, 25, 1000]
    features.features.spawn_formats = ['urdf']
    features.features.custom_info = 'ffsim'

    spawn = SpawnEntities.Request(
        spawn_requests=[
            SpawnEntity(
                name='target',
                allow_renaming=True,
                entity_resource=Resource(resource_string='<robot name="t"/>'),
            )
        ]
    )
    state = SetSimulationState.Request(state=SimulationState(state=SimulationState.STATE_PAUSED))
    feedback = SimulateSteps.Feedback(completed_steps=2**40 + 3, remaining_steps=2**63 - 1)
    result = FollowJointTrajectory.Result(
        error_code=FollowJointTrajectory.Result.GOAL_TOLERANCE_VIOLATED,
        error_string='elbow: 0.2 rad beyond the goal tolerance',
    )
    for message in (
        request,
        entities,
        features,
        spawn,
        state,
        feedback,
        result,
        _trajectory_goal(),
    ):
        data = serialize_message(message)
        copy = deserialize_message(data, type(message))
        # (Not the bytes of a second serialization: CDR padding bytes are left uninitialised.)
        assert copy == message, type(message).__name__


def test_action_and_service_over_dds(ros_node, ros_executor, wait_until):
    """A FollowJointTrajectory goal with feedback, and a StepSimulation call, over Fast DDS.

    The feedback topic announces the feedback message's upstream type hash in discovery.
    """
    from control_msgs.action import FollowJointTrajectory
    from rclpy.action import ActionClient, ActionServer
    from simulation_interfaces.msg import Result
    from simulation_interfaces.srv import StepSimulation

    _require_pinned_release('control_msgs')
    server_node = ros_node('fjt_server')
    client_node = ros_node('fjt_client')
    received_goals = []

    def execute(goal_handle):
        goal = goal_handle.request
        received_goals.append(goal)
        feedback = FollowJointTrajectory.Feedback(joint_names=goal.trajectory.joint_names)
        feedback.desired = goal.trajectory.points[-1]
        feedback.index = len(goal.trajectory.points) - 1
        goal_handle.publish_feedback(feedback)
        goal_handle.succeed()
        return FollowJointTrajectory.Result(
            error_code=FollowJointTrajectory.Result.SUCCESSFUL, error_string='done'
        )

    action_server = ActionServer(server_node, FollowJointTrajectory, 'follow', execute)
    steps_seen = []

    def step(request, response):
        steps_seen.append(request.steps)
        response.result.result = Result.RESULT_OK
        response.result.error_message = f'{request.steps} steps'
        return response

    server_node.create_service(StepSimulation, 'step_simulation', step)
    action_client = ActionClient(client_node, FollowJointTrajectory, 'follow')
    service_client = client_node.create_client(StepSimulation, 'step_simulation')
    for node in (server_node, client_node):
        ros_executor.add_node(node)

    # Discovery, both ways: the client sees the server, the server sees the feedback reader.
    assert wait_until(
        lambda: (
            action_client.server_is_ready()
            and service_client.service_is_ready()
            and server_node.count_subscribers('/follow/_action/feedback') > 0
        ),
        30.0,
        ros_executor,
    )
    feedback = []
    goal = _trajectory_goal()
    send = action_client.send_goal_async(goal, feedback_callback=feedback.append)
    assert wait_until(send.done, 10.0, ros_executor)
    handle = send.result()
    assert handle.accepted
    result = handle.get_result_async()
    assert wait_until(result.done, 10.0, ros_executor)
    assert result.result().result.error_string == 'done'
    assert received_goals == [goal]
    # Feedback is best-effort relative to the result: wait for it, it was published first.
    assert wait_until(lambda: feedback, 10.0, ros_executor)
    (message,) = feedback
    assert message.feedback.index == 1
    assert message.feedback.desired == goal.trajectory.points[1]
    assert message.feedback.joint_names == ['shoulder', 'elbow']

    infos = client_node.get_publishers_info_by_topic('/follow/_action/feedback')
    assert [str(i.topic_type_hash) for i in infos] == [FJT_FEEDBACK_MESSAGE_HASH]
    assert infos[0].topic_type == 'control_msgs/action/FollowJointTrajectory_FeedbackMessage'

    call = service_client.call_async(StepSimulation.Request(steps=2**40))
    assert wait_until(call.done, 10.0, ros_executor)
    assert call.result().result.result == Result.RESULT_OK
    assert call.result().result.error_message == f'{2**40} steps'
    assert steps_seen == [2**40]
    action_server.destroy()
    action_client.destroy()
