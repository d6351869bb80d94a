"""One free-floating robot: simulator, reactionless controller, robot_state_publisher, RViz.

    ros2 launch ffsim_ros ffsim.launch.py
    ros2 launch ffsim_ros ffsim.launch.py robot:=planar_2link controller_mode:=gjm_tracking
    ros2 launch ffsim_ros ffsim.launch.py robot:=/path/to/robot.urdf.xacro rviz:=false
    ros2 launch ffsim_ros ffsim.launch.py namespace:=robot1 initial_base_position:='[0, 5, 0]'
    ros2 launch ffsim_ros ffsim.launch.py record:=true bag_path:=/tmp/ffsim_run

``ros2 launch ffsim_ros ffsim.launch.py --show-args`` lists the arguments. Send a goal with
``ros2 topic pub --once [<namespace>/]ee_goal geometry_msgs/msg/PoseStamped
"{header: {frame_id: world}, pose: {position: {x: 3.25, y: -0.15, z: 0.6}}}"``.

Node parameters come from ``config/simulator.yaml`` and ``config/reactionless_controller.yaml``
(then ``config/<sample>.yaml`` for a sample robot that has one -- ``planar_2link`` starts with
its elbow bent, away from its singular stretched pose --, then ``params_file``, then the launch
arguments, later ones winning). With a ``params_file``, the package files and it are merged here
into one temporary file per node (``ls.merged_parameter_file``: the sections whose node key
applies to the node, as rcl picks them -- ``/**``, ``/**/<node>``, ``<namespace>/<node>`` --,
the user's values winning whatever their type), removed when the launch shuts down: rcl's own
merge of several files kept the earlier value where a later one had another type, so a
``control_rate_hz: "fast"`` was ignored; now the node gets it and refuses it (exit 2, named).

``localhost_only:=true`` confines the DDS discovery of every process started here to this
host (default: the environment's own ``ROS_AUTOMATIC_DISCOVERY_RANGE``/``ROS_LOCALHOST_ONLY``,
as every ROS tool does). Use it on a shared network: anyone who can reach the DDS traffic can
otherwise command efforts, reset, pause or change the controller's mode.

A ``.xacro`` robot is expanded once, here, by ``xacro``: the nodes get the URDF and the
controller's default end effector is chosen from its links as for a URDF file. The RViz config
written for a namespace is a temporary file, removed when the launch shuts down.

Namespaces: every node of the robot runs in ``namespace`` (relative: included under a
``PushRosNamespace``, in ``<pushed>/<namespace>``, the whole of which is meant by
``<namespace>`` below); its TF frames get the prefix
``<namespace>/`` (robot_state_publisher ``frame_prefix`` for the links, the simulator's
``frame_prefix`` for ``world -> <namespace>/base_link``), so robots launched side by side share
``/tf`` and the ``world`` frame without clashing. Each robot is its own simulation with its own
simulated time: ``/clock`` is remapped to ``clock`` for all its nodes, i.e. ``/clock`` without a
namespace and ``/<namespace>/clock`` with one.
"""

from __future__ import annotations

from pathlib import Path

from launch import LaunchContext, LaunchDescription
from launch.actions import (
    DeclareLaunchArgument,
    ExecuteProcess,
    LogInfo,
    OpaqueFunction,
    RegisterEventHandler,
    SetEnvironmentVariable,
    Shutdown,
    UnsetEnvironmentVariable,
)
from launch.event_handlers import OnShutdown
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node
from launch_ros.parameter_descriptions import ParameterValue

from ffsim_ros import launch_support as ls
from ffsim_ros.control import CONTROL_MODES
from ffsim_ros.launch_support import LOCALHOST_ONLY_CHOICES
from ffsim_ros.node_support.simulator_parameters import MAX_BASE_POSITION
from ffsim_ros.resources import share_path

PACKAGE = 'ffsim_ros'
SIMULATOR_CONFIG = share_path('config', 'simulator.yaml')
CONTROLLER_CONFIG = share_path('config', 'reactionless_controller.yaml')
RVIZ_CONFIG = share_path('config', 'rviz', 'ffsim.rviz')


def declare_arguments() -> list[DeclareLaunchArgument]:
    """The launch arguments (``multi_robot.launch.py`` passes them through)."""
    return [
        DeclareLaunchArgument(
            'robot',
            default_value='ffsim_servicer_7dof',
            description='Sample robot name (ffsim_servicer_7dof, planar_2link, '
            'dual_arm_servicer, floating_platform) or a path to a .urdf or .xacro file. A robot '
            'with loop closures (URDF+ <loop>, e.g. floating_platform) runs without the '
            'controller.',
        ),
        DeclareLaunchArgument(
            'controller_mode',
            default_value='reactionless',
            choices=list(CONTROL_MODES),
            description='Control law of the controller (its `mode` parameter; can be changed at '
            'run time with ros2 param set).',
        ),
        DeclareLaunchArgument(
            'ee_link',
            default_value='',
            description="End-effector link the controller moves. Empty: the params_file's "
            'ee_link if it sets one for the controller, else ee_link, or for a robot without '
            'that link its first *ee_link link (dual_arm_servicer: left_ee_link).',
        ),
        DeclareLaunchArgument(
            'rviz',
            default_value='true',
            choices=['true', 'false'],
            description='Start RViz with config/rviz/ffsim.rviz.',
        ),
        DeclareLaunchArgument(
            'use_sim_time',
            default_value='true',
            choices=['true', 'false'],
            description='Run the nodes on the simulated time the simulator publishes on clock.',
        ),
        DeclareLaunchArgument(
            'namespace',
            default_value='',
            description="Namespace of the robot's nodes and topics (e.g. robot1; under a "
            'PushRosNamespace, within it, unless absolute: /robot1); also the prefix '
            '"<namespace>/" of its TF frames (the pushed namespace included). Empty: no '
            'namespace, no prefix.',
        ),
        DeclareLaunchArgument(
            'initial_base_position',
            default_value='',
            description='Initial base link position in the world frame, "[x, y, z]" in m. '
            'Empty: the value of config/simulator.yaml.',
        ),
        DeclareLaunchArgument(
            'scenario',
            default_value='',
            description='Capture scenario of the simulator (targets): a shipped name '
            '(capture: config/scenarios/capture.yaml) or a path to a scenario YAML. Empty: no '
            'target at start.',
        ),
        DeclareLaunchArgument(
            'capture',
            default_value='true',
            choices=['true', 'false'],
            description='With a scenario: the controller intercepts, grasps and detumbles its '
            'first target (its capture.scenario parameter set to the same scenario); false: '
            'the controller follows ee_goal as without targets.',
        ),
        DeclareLaunchArgument(
            'params_file',
            default_value='',
            description='Extra parameter YAML applied to both nodes after the package configs '
            '(keys /**/ffsim_simulator and /**/ffsim_reactionless_controller), merged with them '
            'into one file per node: its values win whatever their type.',
        ),
        DeclareLaunchArgument(
            'localhost_only',
            default_value='',
            choices=list(LOCALHOST_ONLY_CHOICES),
            description='true: DDS discovery of the started processes confined to this host '
            '(use it on a shared network: whoever reaches the DDS traffic can command the '
            "robot); false: the subnet; empty: the environment's own setting "
            '(ROS_AUTOMATIC_DISCOVERY_RANGE / ROS_LOCALHOST_ONLY).',
        ),
        DeclareLaunchArgument(
            'record',
            default_value='false',
            choices=['true', 'false'],
            description='Record all topics with `ros2 bag record -a -s mcap`.',
        ),
        DeclareLaunchArgument(
            'bag_path',
            default_value='',
            description='Output folder of record:=true (must not exist). Empty: '
            'ffsim_<date>_<time> in the current directory.',
        ),
    ]


def _arg(context: LaunchContext, name: str) -> str:
    return LaunchConfiguration(name).perform(context)


def robot_actions(context: LaunchContext) -> list:
    """Nodes (and the recorder) of one robot, from the evaluated launch arguments."""
    given = _arg(context, 'namespace')
    ns = ls.clean_namespace(given)
    # as launch_ros takes it: relative, under a parent's PushRosNamespace (ros_namespace) the
    # nodes run in <pushed>/<ns>; absolute (a leading /), in /<ns> whatever was pushed. The
    # frame prefix is made of that whole namespace
    namespace = (f'/{ns}' if given.strip().startswith('/') else ns) if ns else None
    base = context.launch_configurations.get('ros_namespace')
    full = ls.full_namespace(namespace, base)
    prefix = ls.frame_prefix(full)
    use_sim_time = ls.as_bool(_arg(context, 'use_sim_time'), 'use_sim_time')
    robot = _arg(context, 'robot')
    path = ls.resolve_robot(robot)
    # a xacro robot is expanded once, here: its links are known (the default end effector)
    urdf_text = ls.expand_xacro(path) if ls.is_xacro(path) else path.read_text(encoding='utf-8')
    ls.check_robot_xml(urdf_text, path)  # (an error naming the argument, not the parser's)
    # value_type=str: keep the XML a string (launch_ros would otherwise parse it as YAML)
    description = ParameterValue(urdf_text, value_type=str)
    params_file = _arg(context, 'params_file')
    ls.check_params_file(params_file)
    sample = ls.sample_config(robot)  # e.g. planar_2link's non-singular initial pose
    set_env, unset_env = ls.discovery_environment(_arg(context, 'localhost_only'))

    merged = []  # temporary parameter files, removed at shutdown

    def parameter_files(name: str, defaults: list[Path]) -> list[str]:
        """The package's files, or with a params_file one file of both (see the docstring)."""
        if not params_file:
            return [str(path) for path in defaults]
        fqn = ls.node_fqn(name, namespace, base)
        merged.append(ls.merged_parameter_file(name, fqn, defaults, params_file))
        return [str(merged[-1])]

    def user_sets(name: str, parameter: str) -> bool:
        """Whether the params_file gives the node ``name`` a value of ``parameter``."""
        fqn = ls.node_fqn(name, namespace, base)
        return bool(params_file) and parameter in ls.node_parameters(
            fqn, [(params_file, 'params_file')]
        )

    # every node of this robot lives on the robot's own simulated time (see module docstring)
    clock = [('/clock', 'clock')]
    common = {'use_sim_time': use_sim_time}

    sim_params = {**common, 'robot_description': description, 'frame_prefix': prefix}
    # a shipped name as is (the simulator resolves it), a file made absolute, else an error
    scenario = ls.resolve_scenario_argument(_arg(context, 'scenario'))
    if scenario:
        sim_params['scenario'] = scenario
    position = _arg(context, 'initial_base_position')
    if position:
        sim_params['initial_base_position'] = ls.parse_vector(
            position, 3, 'initial_base_position', bound=MAX_BASE_POSITION
        )

    ctl_params = {
        **common,
        'robot_description': description,
        'mode': _arg(context, 'controller_mode'),
    }
    ee_link = _arg(context, 'ee_link')
    closed = ls.has_loops(urdf_text)  # a closed chain: simulated, no controller (trees only)
    # the default end effector unless the params_file sets ee_link for the controller (its
    # sections that apply to it, as rcl picks them)
    if not ee_link and not closed and not user_sets('ffsim_reactionless_controller', 'ee_link'):
        ee_link = ls.default_ee_link(urdf_text)  # 'ee_link' itself when the robot has one
    if ee_link:
        ctl_params['ee_link'] = ee_link
    if scenario and ls.as_bool(_arg(context, 'capture'), 'capture'):
        ctl_params['capture.scenario'] = sim_params['scenario']

    # (written last: an error above leaves no temporary file behind)
    sim_files = parameter_files(
        'ffsim_simulator', [SIMULATOR_CONFIG, *([sample] if sample else [])]
    )
    ctl_files = (
        [] if closed else parameter_files('ffsim_reactionless_controller', [CONTROLLER_CONFIG])
    )
    controller = (
        []
        if closed
        else [
            Node(
                package=PACKAGE,
                executable='reactionless_controller',
                name='ffsim_reactionless_controller',
                namespace=namespace,
                parameters=[*ctl_files, ctl_params],
                remappings=clock,
                output='screen',
                emulate_tty=True,
                # a bad parameter exits 2 naming it: the launch ends too, nothing left running,
                # and returns 1
                on_exit=ls.ending_on_exit('ffsim_reactionless_controller', Shutdown),
            )
        ]
    )
    actions = [
        # before the processes start: they inherit the environment
        *(SetEnvironmentVariable(name, value) for name, value in set_env.items()),
        *(UnsetEnvironmentVariable(name) for name in unset_env),
        LogInfo(
            msg=f'ffsim: robot {path} in namespace "/{full}", TF frames "{prefix}<link>", '
            f'use_sim_time={use_sim_time}'
            + (f', DDS discovery {set_env}' if set_env else '')
            + (', loop closures: no reactionless controller (trees only)' if closed else '')
        ),
        Node(
            package=PACKAGE,
            executable='simulator',
            name='ffsim_simulator',
            namespace=namespace,
            parameters=[*sim_files, sim_params],
            remappings=clock,
            output='screen',
            emulate_tty=True,
            on_exit=ls.ending_on_exit('ffsim_simulator', Shutdown),
        ),
        *controller,
    ]
    rviz = ls.as_bool(_arg(context, 'rviz'), 'rviz')
    # packages of other repositories (exec_depend): where one is not installed (a pip or wheel
    # environment) it is left out with a warning, not started after the simulator and failed
    missing = ls.missing_packages(['robot_state_publisher', *(['rviz2'] if rviz else [])])
    if missing:
        message = (
            f'ffsim: {missing} not installed: not started (without robot_state_publisher no TF '
            'of the links, only world -> base link; install '
            'ros-$ROS_DISTRO-robot-state-publisher / ros-$ROS_DISTRO-rviz2)'
        )
        actions.append(OpaqueFunction(function=ls.LaunchWarning(message)))
    if 'robot_state_publisher' not in missing:
        # TF of the links from joint_states (the simulator publishes world -> base link). It
        # republishes robot_description (transient local) with the same text as the simulator.
        actions.append(
            Node(
                package='robot_state_publisher',
                executable='robot_state_publisher',
                name='robot_state_publisher',
                namespace=namespace,
                parameters=[{**common, 'robot_description': description, 'frame_prefix': prefix}],
                remappings=clock,
                output='screen',
            )
        )
    if rviz and 'rviz2' not in missing:
        # with a namespace: a temporary copy of ffsim.rviz with its topics and prefix
        rviz_config = ls.write_rviz_config([full], RVIZ_CONFIG)
        actions.append(
            Node(
                package='rviz2',
                executable='rviz2',
                name='rviz2',
                namespace=namespace,
                arguments=['-d', str(rviz_config)],
                parameters=[common],
                remappings=clock,
                output='screen',
            )
        )
        if ls.is_temporary(rviz_config, RVIZ_CONFIG):
            actions.append(
                RegisterEventHandler(OnShutdown(on_shutdown=ls.file_remover(rviz_config)))
            )
    if ls.as_bool(_arg(context, 'record'), 'record'):
        warning = ls.recorder_warning()
        actions.append(
            OpaqueFunction(function=ls.LaunchWarning(warning))
            if warning
            else bag_recorder(_arg(context, 'bag_path'))
        )
    actions.extend(
        RegisterEventHandler(OnShutdown(on_shutdown=ls.file_remover(path))) for path in merged
    )
    return actions


def bag_recorder(bag_path: str) -> ExecuteProcess:
    """``ros2 bag record -a -s mcap -o <bag_path>``: all topics (of every robot)."""
    return ExecuteProcess(cmd=ls.bag_command(bag_path), name='ros2_bag_record', output='screen')


def generate_launch_description() -> LaunchDescription:
    """Entry point of ``ros2 launch ffsim_ros ffsim.launch.py``."""
    return LaunchDescription([*declare_arguments(), OpaqueFunction(function=robot_actions)])
