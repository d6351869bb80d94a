"""Two free-floating robots side by side: ``ffsim.launch.py`` twice, under ``robot1``/``robot2``.

    ros2 launch ffsim_ros multi_robot.launch.py
    ros2 launch ffsim_ros multi_robot.launch.py robot:=planar_2link rviz:=false

Each robot is a separate simulation (its own simulator, controller and robot_state_publisher)
in its namespace, with TF frames ``robot1/...`` and ``robot2/...`` under the shared ``world``
frame and its own simulated time on ``/robot1/clock`` and ``/robot2/clock`` (the two simulators
are not synchronised with each other). One RViz shows both robots; it runs on robot1's clock.
Goals go to ``/robot1/ee_goal`` and ``/robot2/ee_goal``. ``localhost_only`` is passed to both
robots and applies to the shared RViz and recorder too (see ``ffsim.launch.py``).
``robot1_position``/``robot2_position`` are checked here, so an error names the argument typed.
"""

from __future__ import annotations

from pathlib import Path

from launch import LaunchContext, LaunchDescription
from launch.actions import (
    DeclareLaunchArgument,
    ExecuteProcess,
    GroupAction,
    IncludeLaunchDescription,
    OpaqueFunction,
    RegisterEventHandler,
    SetEnvironmentVariable,
    UnsetEnvironmentVariable,
)
from launch.event_handlers import OnShutdown
from launch.launch_description_sources import PythonLaunchDescriptionSource
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node

from ffsim_ros import launch_support as ls
from ffsim_ros.control import CONTROL_MODES
from ffsim_ros.launch_support import LOCALHOST_ONLY_CHOICES
from ffsim_ros.node_support.simulator_parameters import MAX_BASE_POSITION
from ffsim_ros.resources import share_path

#: The single-robot launch file, next to this one (source tree and install share alike).
FFSIM_LAUNCH = Path(__file__).resolve().parent / 'ffsim.launch.py'
RVIZ_CONFIG = share_path('config', 'rviz', 'ffsim.rviz')
#: Namespaces of the two robots (also their TF frame prefixes).
ROBOTS = ('robot1', 'robot2')
#: Launch arguments passed unchanged to both includes of ffsim.launch.py.
FORWARDED = (
    'robot',
    'controller_mode',
    'ee_link',
    'use_sim_time',
    'params_file',
    'localhost_only',
)


def declare_arguments() -> list[DeclareLaunchArgument]:
    """The launch arguments."""
    return [
        DeclareLaunchArgument(
            'robot',
            default_value='ffsim_servicer_7dof',
            description='Sample robot name or URDF/xacro path, used for both robots.',
        ),
        DeclareLaunchArgument(
            'controller_mode',
            default_value='reactionless',
            choices=list(CONTROL_MODES),
            description='Control law of both controllers.',
        ),
        DeclareLaunchArgument(
            'ee_link',
            default_value='',
            description='End-effector link of both controllers (empty: see ffsim.launch.py).',
        ),
        DeclareLaunchArgument(
            'robot1_position',
            default_value='[0.0, -5.0, 0.0]',
            description='Initial base position of robot1 in the world frame, "[x, y, z]" in m.',
        ),
        DeclareLaunchArgument(
            'robot2_position',
            default_value='[0.0, 5.0, 0.0]',
            description='Initial base position of robot2 in the world frame, "[x, y, z]" in m.',
        ),
        DeclareLaunchArgument(
            'rviz',
            default_value='true',
            choices=['true', 'false'],
            description='Start one RViz showing both robots.',
        ),
        DeclareLaunchArgument(
            'use_sim_time',
            default_value='true',
            choices=['true', 'false'],
            description="Run each robot's nodes on its simulated time (<namespace>/clock).",
        ),
        DeclareLaunchArgument(
            'params_file',
            default_value='',
            description='Extra parameter YAML for the nodes of both robots (see ffsim.launch.py).',
        ),
        DeclareLaunchArgument(
            'localhost_only',
            default_value='',
            choices=list(LOCALHOST_ONLY_CHOICES),
            description='true: DDS discovery confined to this host (on a shared network); '
            "false: the subnet; empty: the environment's own setting (see ffsim.launch.py).",
        ),
        DeclareLaunchArgument(
            'record',
            default_value='false',
            choices=['true', 'false'],
            description='Record all topics of both robots with `ros2 bag record -a -s mcap`.',
        ),
        DeclareLaunchArgument(
            'bag_path',
            default_value='',
            description='Output folder of record:=true (empty: ffsim_<date>_<time>).',
        ),
    ]


def include_robot(namespace: str, position: str) -> GroupAction:
    """``ffsim.launch.py`` for one robot at ``position`` (checked), in a scope so its
    arguments stay its own."""
    arguments = {name: LaunchConfiguration(name) for name in FORWARDED}
    arguments.update(
        namespace=namespace,
        initial_base_position=position,
        rviz='false',  # one RViz for both, below
        record='false',  # one recorder for both, below
    )
    return GroupAction(
        [
            IncludeLaunchDescription(
                PythonLaunchDescriptionSource(str(FFSIM_LAUNCH)),
                launch_arguments=arguments.items(),
            )
        ],
        scoped=True,
    )


def robot_groups(context: LaunchContext) -> list:
    """One :func:`include_robot` per robot, after checking ``<robot>_position`` here: an error
    names the argument the user typed (ffsim.launch.py would name its own argument)."""
    groups = []
    for ns in ROBOTS:
        name = f'{ns}_position'
        text = LaunchConfiguration(name).perform(context)
        position = ls.parse_vector(text, 3, name, bound=MAX_BASE_POSITION)
        groups.append(include_robot(ns, str(position)))
    return groups


def shared_actions(context: LaunchContext) -> list:
    """The RViz showing both robots and the recorder, from the evaluated arguments."""
    set_env, unset_env = ls.discovery_environment(
        LaunchConfiguration('localhost_only').perform(context)
    )
    # the robots' groups are scoped: their environment does not reach RViz and the recorder
    actions = [
        *(SetEnvironmentVariable(name, value) for name, value in set_env.items()),
        *(UnsetEnvironmentVariable(name) for name in unset_env),
    ]
    rviz = ls.as_bool(LaunchConfiguration('rviz').perform(context), 'rviz')
    if rviz and ls.missing_packages(['rviz2']):
        actions.append(
            OpaqueFunction(function=ls.LaunchWarning('ffsim: rviz2 not installed: not started'))
        )
    elif rviz:
        use_sim_time = ls.as_bool(
            LaunchConfiguration('use_sim_time').perform(context), 'use_sim_time'
        )
        # a temporary copy of ffsim.rviz with the robot displays once per namespace (the
        # robots' whole namespaces: under a parent's PushRosNamespace, within it)
        base = context.launch_configurations.get('ros_namespace')
        robots = [ls.full_namespace(ns, base) for ns in ROBOTS]
        rviz_config = ls.write_rviz_config(robots, RVIZ_CONFIG)
        actions += [
            Node(
                package='rviz2',
                executable='rviz2',
                name='rviz2',
                arguments=['-d', str(rviz_config)],
                parameters=[{'use_sim_time': use_sim_time}],
                remappings=[('/clock', f'/{robots[0]}/clock')],
                output='screen',
            ),
            RegisterEventHandler(OnShutdown(on_shutdown=ls.file_remover(rviz_config))),
        ]
    if ls.as_bool(LaunchConfiguration('record').perform(context), 'record'):
        bag_path = LaunchConfiguration('bag_path').perform(context)
        warning = ls.recorder_warning()
        recorder = ExecuteProcess(
            cmd=ls.bag_command(bag_path), name='ros2_bag_record', output='screen'
        )
        actions.append(OpaqueFunction(function=ls.LaunchWarning(warning)) if warning else recorder)
    return actions


def generate_launch_description() -> LaunchDescription:
    """Entry point of ``ros2 launch ffsim_ros multi_robot.launch.py``."""
    return LaunchDescription(
        [
            *declare_arguments(),
            OpaqueFunction(function=robot_groups),
            OpaqueFunction(function=shared_actions),
        ]
    )
