"""The controller node's ee_goal outcome (issue 15, node side): ``goal_status`` over DDS.

A goal reached, a goal aborted with its reason, a goal rejected at acceptance and a chain of
goals from non-home poses, read by a real subscriber from the node's
``goal_status`` (diagnostic_msgs/DiagnosticStatus), and the message built from a
:class:`~ffsim_ros.control.GoalStatus` field by field.
"""

from __future__ import annotations

import numpy as np
import pytest

from ffsim_ros.control import GoalOutcome, GoalPhase, GoalStatus


@pytest.mark.ros
def test_goal_status_message_fields() -> None:
    from diagnostic_msgs.msg import DiagnosticStatus

    from ffsim_ros.node_support.goal_status import goal_status_message

    status = GoalStatus(
        goal_id=3,
        outcome=GoalOutcome.ABORTED,
        phase=GoalPhase.STOPPED,
        reason='timeout: not reached after 2 s',
        mode='reactionless',
        position_error=0.125,
    )
    msg = goal_status_message(status, 'ctl: ee_goal', 'robot')
    assert msg.level == DiagnosticStatus.WARN
    assert msg.message == 'aborted (stopped): timeout: not reached after 2 s'
    values = {kv.key: kv.value for kv in msg.values}
    assert values['goal_id'] == '3' and values['outcome'] == 'aborted'
    assert float(values['position_error']) == 0.125 and values['mode'] == 'reactionless'
    assert set(values) == set(status.as_dict())
    reached = GoalStatus(goal_id=1, outcome=GoalOutcome.REACHED, phase=GoalPhase.HOLDING)
    msg = goal_status_message(reached, 'ctl: ee_goal', 'robot')
    assert msg.level == DiagnosticStatus.OK and msg.message == 'reached (holding)'


def _goal_probe(node, depth: int) -> tuple[list, list, list, object]:
    """``goal_status`` (transient local, ``depth`` kept) and ``ee_pose`` received into lists,
    and an ``ee_goal`` publisher: ``(statuses, poses, subscriptions, publisher)``."""
    from diagnostic_msgs.msg import DiagnosticStatus
    from geometry_msgs.msg import PoseStamped
    from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy

    statuses: list = []
    poses: list = []
    latched = QoSProfile(
        depth=depth,
        reliability=ReliabilityPolicy.RELIABLE,
        durability=DurabilityPolicy.TRANSIENT_LOCAL,
    )
    subs = [
        node.create_subscription(DiagnosticStatus, 'goal_status', statuses.append, latched),
        node.create_subscription(PoseStamped, 'ee_pose', poses.append, 100),
    ]
    return statuses, poses, subs, node.create_publisher(PoseStamped, 'ee_goal', 10)


@pytest.mark.ros
def test_goal_outcomes_over_dds(ros_process, ros_node, ros_executor, wait_until) -> None:
    from diagnostic_msgs.msg import DiagnosticStatus
    from geometry_msgs.msg import PoseStamped

    timeout = 1.5  # [s] of simulated time: a 0.3 m goal takes about 5 s at 0.08 m/s
    sim = ros_process('ffsim_ros.simulator', ros_args=['-p', 'real_time_factor:=1.0'], name='sim')
    ctl = ros_process(
        'ffsim_ros.reactionless_controller',
        ros_args=['-p', 'use_sim_time:=true', '-p', f'reach.goal_timeout:={timeout}'],
        name='controller',
    )
    node = ros_node('probe')
    ros_executor.add_node(node)
    statuses, poses, subs, goals = _goal_probe(node, depth=10)
    assert wait_until(
        lambda: (
            all(s.get_publisher_count() for s in subs) and goals.get_subscription_count() and poses
        ),
        60,
        ros_executor,
    ), ctl.describe()

    def send(offset) -> np.ndarray:
        p = poses[-1].pose.position
        goal = np.array([p.x, p.y, p.z]) + offset
        msg = PoseStamped()
        msg.header.frame_id = 'world'
        msg.pose.position.x, msg.pose.position.y, msg.pose.position.z = goal.tolist()
        msg.pose.orientation.w = 1.0
        goals.publish(msg)
        return goal

    def outcome(goal_id: int, which: str):
        def done() -> bool:
            return any(
                {kv.key: kv.value for kv in s.values}.get('goal_id') == str(goal_id)
                and s.message.startswith(which)
                for s in statuses
            )

        assert wait_until(done, 60, ros_executor), ([s.message for s in statuses], ctl.describe())
        return next(
            s
            for s in statuses
            if {kv.key: kv.value for kv in s.values}.get('goal_id') == str(goal_id)
            and s.message.startswith(which)
        )

    # a goal 2 cm away: active, then reached within the 5 mm tolerance
    goal = send(np.array([0.0, 0.02, 0.0]))
    outcome(1, 'active')
    reached = outcome(1, 'reached')
    assert reached.level == DiagnosticStatus.OK
    error = float({kv.key: kv.value for kv in reached.values}['position_error'])
    assert error <= 0.005

    def distance() -> float:
        p = poses[-1].pose.position
        return float(np.linalg.norm(np.array([p.x, p.y, p.z]) - goal))

    assert wait_until(lambda: distance() <= 0.005, 10, ros_executor), distance()  # and held

    # a goal 0.3 m away cannot be reached within the timeout: aborted, the reason given
    send(np.array([0.1, 0.2, -0.2]))
    outcome(2, 'active')
    aborted = outcome(2, 'aborted')
    assert aborted.level == DiagnosticStatus.WARN
    assert f'timeout: not reached after {timeout:g} s' in aborted.message, aborted.message
    values = {kv.key: kv.value for kv in aborted.values}
    assert values['outcome'] == 'aborted' and float(values['position_error']) > 0.05
    logged = f'ee_goal aborted: timeout: not reached after {timeout:g} s'
    assert wait_until(lambda: logged in ctl.stderr(), 10, ros_executor), ctl.describe()

    # a goal out of reach is rejected at acceptance: a goal of its own, aborted with the reason
    send(np.array([10.0, 0.0, 0.0]))
    rejected = outcome(3, 'aborted')
    assert rejected.level == DiagnosticStatus.WARN
    assert 'rejected: ' in rejected.message and 'unreachable' in rejected.message, rejected.message
    assert not any(
        {kv.key: kv.value for kv in s.values}.get('goal_id') == '3' and 'active' in s.message
        for s in statuses
    )
    assert sim.is_running() and ctl.is_running()


@pytest.mark.ros
def test_chained_goals_from_non_home_poses_over_dds(
    ros_process, ros_node, ros_executor, wait_until
) -> None:
    """Issue 15 over DDS, reactionless mode (the default): four goals 0.27-0.3 m each, each
    sent from wherever the previous one was reached (the arm away from home after the first),
    each reached within 5 mm as ``goal_status`` says, the base never beyond the 0.2 deg budget
    by the statuses' own figure, and back under 0.1 deg from where it started by the
    simulator's ``base_odom`` 1 s after the last goal."""
    from geometry_msgs.msg import PoseStamped
    from nav_msgs.msg import Odometry

    from ffsim_ros.control import attitude_error

    sim = ros_process('ffsim_ros.simulator', ros_args=['-p', 'real_time_factor:=1.0'], name='sim')
    ctl = ros_process('ffsim_ros.reactionless_controller', ros_args=['-p', 'use_sim_time:=true'])
    node = ros_node('probe')
    ros_executor.add_node(node)
    statuses, poses, subs, goals = _goal_probe(node, depth=50)
    odom: list = []
    subs.append(node.create_subscription(Odometry, 'base_odom', odom.append, 100))
    assert wait_until(
        lambda: (
            all(s.get_publisher_count() for s in subs)
            and goals.get_subscription_count()
            and poses
            and odom
        ),
        60,
        ros_executor,
    ), ctl.describe()

    def quaternion(o) -> np.ndarray:
        q = o.pose.pose.orientation
        return np.array([q.x, q.y, q.z, q.w])

    def stamp(msg) -> float:
        return msg.header.stamp.sec + 1e-9 * msg.header.stamp.nanosec

    start = quaternion(odom[-1])
    home = poses[-1].pose.position
    home = np.array([home.x, home.y, home.z])
    for goal_id, offset in enumerate(
        ([0.1, 0.2, -0.2], [-0.15, -0.1, 0.2], [0.0, -0.25, 0.05], [0.2, 0.1, 0.1]), start=1
    ):
        p = poses[-1].pose.position
        here = np.array([p.x, p.y, p.z])
        assert goal_id == 1 or np.linalg.norm(here - home) > 0.1  # (not from home)
        msg = PoseStamped()
        msg.header.frame_id = 'world'
        goal = here + offset
        msg.pose.position.x, msg.pose.position.y, msg.pose.position.z = goal.tolist()
        msg.pose.orientation.w = 1.0
        goals.publish(msg)

        def ended(goal_id=goal_id) -> dict | None:
            for st in statuses:
                values = {kv.key: kv.value for kv in st.values}
                if values.get('goal_id') == str(goal_id) and values['outcome'] != 'active':
                    return values
            return None

        assert wait_until(lambda: ended() is not None, 60, ros_executor), ctl.describe()
        values = ended()
        assert values['outcome'] == 'reached', values['reason']
        assert float(values['position_error']) <= 0.005
        assert float(values['max_attitude_offset']) <= np.radians(0.2)
    t_end = stamp(odom[-1])
    assert wait_until(lambda: stamp(odom[-1]) >= t_end + 1.0, 30, ros_executor)
    p = poses[-1].pose.position
    assert np.linalg.norm(np.array([p.x, p.y, p.z]) - goal) <= 0.005  # (held)
    final = np.degrees(np.linalg.norm(attitude_error(quaternion(odom[-1]), start)))
    assert final < 0.1, final
    assert sim.is_running() and ctl.is_running()


@pytest.mark.ros
def test_goals_answered_when_the_simulator_pauses_or_dies(
    ros_process, ros_node, ros_executor, wait_until
) -> None:
    """On simulated time the node's clock stops with the simulator. Paused (its publishers
    still there): the active goal stays active and a goal sent meanwhile is answered (taken,
    active). Killed (SIGKILL: no goodbye on DDS): the active goal ends as aborted and a goal
    sent then is rejected, each saying that the clock stopped and no simulator publishes
    joint_states -- never left without an answer (the goal was kept for a control update
    that never came)."""
    import os
    import signal

    from geometry_msgs.msg import PoseStamped
    from simulation_interfaces.msg import SimulationState
    from simulation_interfaces.srv import SetSimulationState

    # the simulator in a namespace, the controller's topics remapped to it: the watchdog must
    # count publishers on the remapped names (count_publishers does not remap: the paused
    # simulator was taken for a dead one)
    sim = ros_process(
        'ffsim_ros.simulator', ros_args=['-p', 'real_time_factor:=1.0', '-r', '__ns:=/sim'],
        name='sim',
    )  # fmt: skip
    remaps = [
        arg
        for topic in ('joint_states', 'base_odom', 'joint_effort_commands')
        for arg in ('-r', f'{topic}:=/sim/{topic}')
    ]
    ctl = ros_process(
        'ffsim_ros.reactionless_controller',
        ros_args=['-p', 'use_sim_time:=true', *remaps],
        name='controller',
    )
    node = ros_node('probe')
    ros_executor.add_node(node)
    statuses, poses, subs, goals = _goal_probe(node, depth=50)
    set_state = node.create_client(SetSimulationState, '/sim/ffsim_simulator/set_simulation_state')
    assert wait_until(
        lambda: (
            all(s.get_publisher_count() for s in subs)
            and goals.get_subscription_count()
            and poses
            and set_state.service_is_ready()
        ),
        60,
        ros_executor,
    ), ctl.describe()

    def send(offset) -> None:
        p = poses[-1].pose.position
        msg = PoseStamped()
        msg.header.frame_id = 'world'
        msg.pose.position.x, msg.pose.position.y, msg.pose.position.z = (
            np.array([p.x, p.y, p.z]) + offset
        ).tolist()
        msg.pose.orientation.w = 1.0
        goals.publish(msg)

    def of(goal_id: int, which: str) -> list:
        return [
            s
            for s in statuses
            if {kv.key: kv.value for kv in s.values}.get('goal_id') == str(goal_id)
            and s.message.startswith(which)
        ]

    def outcome(goal_id: int, which: str, timeout: float = 60.0):
        assert wait_until(lambda: of(goal_id, which), timeout, ros_executor), (
            [s.message for s in statuses],
            ctl.describe(),
        )
        return of(goal_id, which)[0]

    # a goal 0.3 m away (about 5 s of motion), then the simulation paused
    send(np.array([0.1, 0.2, -0.2]))
    outcome(1, 'active')
    future = set_state.call_async(
        SetSimulationState.Request(state=SimulationState(state=SimulationState.STATE_PAUSED))
    )
    assert wait_until(future.done, 20, ros_executor)
    assert future.result().result.result == 1, future.result().result  # RESULT_OK
    # paused: well beyond the stall the node notices (2 s of wall time), the goal goes on
    assert not wait_until(lambda: of(1, 'aborted'), 6.0, ros_executor), ctl.describe()
    assert 'active' in statuses[-1].message, [s.message for s in statuses]
    # a goal sent while paused is answered (taken on the paused state), not kept unannounced
    send(np.array([0.1, 0.2, -0.2]))
    outcome(2, 'active', 20.0)
    assert not of(1, 'reached') and not of(1, 'aborted')  # (replaced by goal 2)
    # killed: no goodbye on DDS, its publishers vanish once their lease expires
    os.killpg(sim.pid, signal.SIGKILL)
    sim.popen.wait(timeout=10)
    why = 'the simulation clock has not advanced for '
    aborted = outcome(2, 'aborted', 90.0)
    assert why in aborted.message and 'no simulator publishes' in aborted.message, aborted.message
    # a goal sent now is rejected at once, saying why
    send(np.array([0.0, 0.02, 0.0]))
    rejected = outcome(3, 'aborted', 20.0)
    assert 'rejected: ' + why in rejected.message, rejected.message
    assert '/sim/joint_states' in rejected.message, rejected.message
    assert not of(3, 'active')
    assert ctl.is_running()


@pytest.mark.ros
def test_on_wall_time_the_goal_of_a_vanished_simulator_is_dropped(
    ros_process, ros_node, ros_executor, wait_until
) -> None:
    """On wall time (``use_sim_time`` false) the node's clock never stops, so the watchdog
    takes no fresh state for 2 s as the stall: the simulator paused (its publishers there),
    the goal stays active; the simulator gone (SIGINT: its publishers leave at once), the
    active goal ends as aborted saying no fresh state came and no simulator publishes
    joint_states (it stayed active for ever)."""
    import signal

    from geometry_msgs.msg import PoseStamped
    from simulation_interfaces.msg import SimulationState
    from simulation_interfaces.srv import SetSimulationState

    sim = ros_process('ffsim_ros.simulator', ros_args=['-p', 'real_time_factor:=1.0'], name='sim')
    ctl = ros_process(
        'ffsim_ros.reactionless_controller',
        ros_args=['-p', 'use_sim_time:=false', '-p', 'mode:=gjm_tracking'],
        name='controller',
    )
    node = ros_node('probe')
    ros_executor.add_node(node)
    statuses, poses, subs, goals = _goal_probe(node, depth=50)
    set_state = node.create_client(SetSimulationState, '/ffsim_simulator/set_simulation_state')
    assert wait_until(
        lambda: (
            all(s.get_publisher_count() for s in subs)
            and goals.get_subscription_count()
            and poses
            and set_state.service_is_ready()
        ),
        60,
        ros_executor,
    ), ctl.describe()

    def of(which: str) -> list:
        return [s for s in statuses if s.message.startswith(which)]

    p = poses[-1].pose.position
    msg = PoseStamped()
    msg.header.frame_id = 'world'
    msg.pose.position.x, msg.pose.position.y, msg.pose.position.z = p.x + 0.1, p.y + 0.2, p.z
    msg.pose.orientation.w = 1.0
    goals.publish(msg)
    assert wait_until(lambda: of('active'), 20, ros_executor), ctl.describe()
    future = set_state.call_async(
        SetSimulationState.Request(state=SimulationState(state=SimulationState.STATE_PAUSED))
    )
    assert wait_until(future.done, 20, ros_executor)
    assert future.result().result.result == 1, future.result().result  # RESULT_OK
    # paused: beyond the 2 s the watchdog waits for, the goal goes on
    assert not wait_until(lambda: of('aborted'), 4.0, ros_executor), ctl.describe()
    assert statuses[-1].message.startswith('active'), [s.message for s in statuses]
    sim.popen.send_signal(signal.SIGINT)
    sim.popen.wait(timeout=10)
    assert wait_until(lambda: of('aborted'), 20, ros_executor), (
        [s.message for s in statuses],
        ctl.describe(),
    )
    aborted = of('aborted')[0].message
    assert 'dropped: no fresh state came for ' in aborted, aborted
    assert 'no simulator publishes /joint_states' in aborted, aborted
    assert ctl.is_running()
