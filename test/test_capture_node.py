"""Capture over DDS (issue 17): the controller node intercepts the target from its odometry,
asks the simulator's ``~/grasp`` and detumbles the welded system.

The simulator runs a scenario written here with the case of
:func:`~ffsim_ros.control.capture_loop.tumbling_target_scene` (a 120 kg target tumbling at
5 deg/s, CoM drifting 2 cm/s, the handle 0.24 m from the gripper of the arm in
``CAPTURE_ARM``) placed as the simulator places the robot (base link frame at the origin);
the controller gets the same file as ``capture.scenario``. Two processes over real DDS at
real time; the simulator steps the URDF's joint damping and friction, which the law does not
model. Checked: the capture event, the target's rate relative to the base under 0.1 deg/s at
the end (from ``targets/sat/odom`` and ``base_odom``), the total momentum on ``momentum``
constant through the capture.
"""

from __future__ import annotations

import time

import numpy as np
import pytest
import yaml

import ffsim_ros.dynamics as D
from ffsim_ros.control.capture_loop import CAPTURE_ARM, tumbling_target_scene
from ffsim_ros.dynamics.lie import quat_to_matrix
from ffsim_ros.resources import sample_robot

pytestmark = pytest.mark.ros


def _scenario(path):
    """The tumbling-target case as a scenario YAML, in the simulator's placement."""
    scene, target = tumbling_target_scene()
    robot = scene.robot_model
    q_scene, _ = scene.robot_state
    q_sim, _ = D.base_state_from_link(robot, np.zeros(3), [0.0, 0.0, 0.0, 1.0])
    shift = q_sim[:3] - q_scene[:3]
    snap = scene.snapshot().targets['sat']
    root = snap.root
    _, v_t = scene.target_state('sat')
    h = target.handles[0]
    data = {
        'robot': {
            'urdf': str(sample_robot('ffsim_servicer_7dof')),
            'gripper': {'link': 'ee_link'},
            'exclude_links': ['arm_link_7', 'ee_link'],
            'joint_positions': list(CAPTURE_ARM),
        },
        'contact': {'law': 'impact', 'restitution': 0.5, 'friction': 0.3},
        'targets': [
            {
                'name': 'sat',
                'shape': {'type': 'sphere', 'radius': 0.35},
                'mass': 120.0,
                'inertia': np.diag([8.0, 9.0, 10.0]).tolist(),
                'position': (np.asarray(root.position) + shift).tolist(),
                'orientation': np.asarray(root.orientation).tolist(),
                'linear_velocity': (v_t[:3]).tolist(),
                'angular_velocity': np.asarray(root.angular_velocity).tolist(),
                'handles': [
                    {
                        'name': h.name,
                        'link': h.link,
                        'translation': h.translation.tolist(),
                        'radius': h.radius,
                        'max_speed': h.max_speed,
                    }
                ],
            }
        ],
    }
    path.write_text(yaml.safe_dump(data))
    return path


#: Window after the capture over which the two modes' base attitude changes are compared [s]
#: (momentum distribution: 3 s of storage, then the release, over by about 8 s).
WINDOW = 9.0


def _stamp(msg) -> float:
    return msg.header.stamp.sec + msg.header.stamp.nanosec * 1e-9


def _dds_run(ros_process, node, executor, wait_until, path, mode) -> dict:
    """One capture over DDS in ``mode``; both processes stopped at the end."""
    from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus
    from geometry_msgs.msg import PoseStamped
    from nav_msgs.msg import Odometry
    from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
    from sensor_msgs.msg import JointState
    from std_msgs.msg import Float64MultiArray

    events, target, base, momentum, statuses = [], [], [], [], []
    poses, joints = [], []
    latched = QoSProfile(
        depth=10,
        reliability=ReliabilityPolicy.RELIABLE,
        durability=DurabilityPolicy.TRANSIENT_LOCAL,
    )
    subs = [
        node.create_subscription(DiagnosticArray, 'scene_events', events.append, 100),
        node.create_subscription(Odometry, 'targets/sat/odom', target.append, 100),
        node.create_subscription(Odometry, 'base_odom', base.append, 100),
        node.create_subscription(Float64MultiArray, 'momentum', momentum.append, 100),
        node.create_subscription(DiagnosticStatus, 'goal_status', statuses.append, latched),
        node.create_subscription(PoseStamped, 'ee_pose', poses.append, 100),
        node.create_subscription(JointState, 'joint_states', joints.append, 100),
    ]
    from std_srvs.srv import SetBool

    sim = ros_process(
        'ffsim_ros.simulator',
        ros_args=['-p', f'scenario:={path}', '-p', 'start_paused:=true'],
        name='sim',
    )
    ctrl = ros_process(
        'ffsim_ros.reactionless_controller',
        ros_args=[
            '-p',
            f'capture.scenario:={path}',
            '-p',
            f'capture.detumble_mode:={mode}',
            '-p',
            'use_sim_time:=true',
        ],
        name='ctrl',
    )
    # both up (the controller subscribed to the target's odometry, the probe too): resume
    assert wait_until(
        lambda: (
            all(s.get_publisher_count() for s in subs[1:])
            and node.count_subscribers('targets/sat/odom') >= 2
        ),
        60,
        executor,
    ), sim.describe() + ctrl.describe()
    pause = node.create_client(SetBool, '/ffsim_simulator/pause')
    assert wait_until(pause.service_is_ready, 60, executor)
    future = pause.call_async(SetBool.Request(data=False))
    assert wait_until(future.done, 30, executor) and future.result().success
    node.destroy_client(pause)

    def capture_time():
        for e in events:
            s = e.status[0]
            if s.name == 'capture' and {kv.key: kv.value for kv in s.values}['captured'] == 'true':
                return _stamp(e)
        return None

    assert wait_until(lambda: capture_time() is not None, 60, executor), (
        sim.describe() + ctrl.describe()
    )
    t_cap = capture_time()
    # the capture's outcome on goal_status: active, then captured
    assert wait_until(
        lambda: any(m.name.endswith(': capture') and m.message == 'captured' for m in statuses),
        30,
        executor,
    ), [(m.name, m.message) for m in statuses]
    capture = [m for m in statuses if m.name.endswith(': capture')]
    assert capture[0].message == 'active' and capture[0].hardware_id == 'sat'
    assert all(m.level == m.OK for m in capture)
    assert wait_until(lambda: base and _stamp(base[-1]) >= t_cap + WINDOW, 60, executor), (
        sim.describe() + ctrl.describe()
    )
    ctrl.stop()
    sim.stop()
    for sub in subs:
        node.destroy_subscription(sub)
    end = t_cap + WINDOW
    by_stamp = {_stamp(m): m for m in target}
    pairs = [(b, by_stamp.get(_stamp(b))) for b in base if _stamp(b) <= end]
    pairs = [(b, t) for b, t in pairs if t is not None]
    assert pairs and _stamp(pairs[-1][0]) > end - 0.1
    q_cap = next(_quat(b) for b in base if _stamp(b) >= t_cap)
    q_end = next(_quat(b) for b in base if _stamp(b) >= end)
    h = np.array([m.data[:6] for m in momentum])
    _check_poses(poses, base, joints, t_cap)
    return {
        't_cap': t_cap,
        'final_rate': _relative_rate(*pairs[-1][::-1]),
        'attitude': _angle(q_cap, q_end),
        'drift': float(np.abs(h - h[0]).max()),
        'messages': len(h),
    }


def _check_poses(poses, base, joints, t_cap) -> None:
    """``ee_pose`` is published while capturing too (it was not: the capture's update returned
    before the publishing, found under the real launch system): before and after the grasp,
    each pose the end effector of the simulator's state of its stamp."""
    model = D.load_urdf(sample_robot('ffsim_servicer_7dof'))
    odom = {round(_stamp(o) * 1e9): o for o in base}
    states = {round(_stamp(j) * 1e9): j for j in joints}
    checked = []
    for pose in poses:
        k = round(_stamp(pose) * 1e9)
        if k not in odom or k not in states:
            continue
        o = odom[k].pose.pose
        qb, _ = D.base_state_from_link(
            model, _vec(o.position), _quat(odom[k]), np.zeros(3), np.zeros(3)
        )
        q = np.r_[qb, states[k].position]
        p = _vec(pose.pose.position)
        assert pose.header.frame_id == 'world'
        assert np.abs(D.link_pose(model, q, 'ee_link')[0] - p).max() <= 1e-9
        checked.append(k * 1e-9)
    assert len(checked) >= 100 and min(checked) < t_cap < max(checked), (len(checked), t_cap)


def _relative_rate(t_msg, b_msg) -> float:
    """Target rate relative to the base [deg/s], both odometry twists rotated to world."""
    wt = quat_to_matrix(_quat(t_msg)) @ _vec(t_msg.twist.twist.angular)
    wb = quat_to_matrix(_quat(b_msg)) @ _vec(b_msg.twist.twist.angular)
    return float(np.degrees(np.linalg.norm(wt - wb)))


def _angle(q0, q1) -> float:
    """Rotation angle between two unit quaternions (x, y, z, w) [deg]."""
    v0, w0, v1, w1 = -q0[:3], q0[3], q1[:3], q1[3]
    r_v = w0 * v1 + w1 * v0 + np.cross(v0, v1)
    return float(np.degrees(2.0 * np.arctan2(np.linalg.norm(r_v), abs(w0 * w1 - v0 @ v1))))


def test_capture_over_dds(ros_process, rclpy_context, wait_until, tmp_path) -> None:
    """Both detumbling modes over DDS from the same start: captured, detumbled under
    0.1 deg/s, momentum constant; the base attitude change over the same window after the
    capture smaller under momentum distribution (the factor is printed)."""
    import rclpy
    from rclpy.executors import SingleThreadedExecutor

    path = _scenario(tmp_path / 'tumbling.yaml')
    node = rclpy.create_node('capture_probe', context=rclpy_context)
    executor = SingleThreadedExecutor(context=rclpy_context)
    executor.add_node(node)
    runs = {
        mode: _dds_run(ros_process, node, executor, wait_until, path, mode)
        for mode in ('momentum_distribution', 'gjm')
    }
    for mode, r in runs.items():
        print(
            f'DDS {mode}: capture at {r["t_cap"]:.3f} s, relative rate at the end '
            f'{r["final_rate"]:.2e} deg/s, base attitude change over {WINDOW:g} s after the '
            f'capture {r["attitude"]:.4f} deg, momentum drift {r["drift"]:.1e}'
        )
        assert r['final_rate'] < 0.1
        assert r['messages'] > 100 and r['drift'] < 1e-9
        assert 3.0 < r['t_cap'] < 10.0
    ratio = runs['gjm']['attitude'] / runs['momentum_distribution']['attitude']
    print(f'DDS base attitude change, gjm / momentum distribution: {ratio:.2f}')
    assert ratio > 1.0
    executor.remove_node(node)
    node.destroy_node()


def _quat(msg):
    o = msg.pose.pose.orientation
    return np.array([o.x, o.y, o.z, o.w])


def _vec(v):
    return np.array([v.x, v.y, v.z])


@pytest.mark.parametrize(
    'args, expected',
    [
        (['capture.scenario:=/nonexistent/tumbling.yaml'], 'capture.scenario'),
        (
            ['capture.scenario:=capture', 'capture.target:=moon'],
            "capture.target: expected one of ['client']",
        ),
        (['capture.scenario:=capture', 'capture.detumble_mode:=spin'], 'capture.detumble_mode'),
    ],
)
def test_bad_capture_parameters_exit_2(ros_process, args, expected) -> None:
    ros_args = [x for a in args for x in ('-p', a)]
    ctrl = ros_process('ffsim_ros.reactionless_controller', ros_args=ros_args, name='ctrl')
    deadline = time.monotonic() + 60
    while ctrl.is_running() and time.monotonic() < deadline:
        time.sleep(0.1)  # waiting for the process to exit, not for DDS
    assert ctrl.returncode == 2, ctrl.describe()
    assert expected in ctrl.stderr(), ctrl.describe()


def test_a_capture_on_sim_time_without_a_clock_says_why_it_cannot_proceed(
    ros_process, ros_node, ros_executor, wait_until
) -> None:
    """A controller in capture mode on ``use_sim_time`` with nothing on its clock topic sat
    silent: its clock stands at 0, its control timer never fires, and the watchdog that
    warns an ``ee_goal`` controller (no simulator; ``use_sim_time`` without a clock) skipped
    the capture -- no log line, nothing on ``goal_status``. Now the capture's status says why
    it cannot proceed (WARN) and the log warns: no simulator; then, the state's publishers
    there (a stand-in's), no publisher on /clock; then, with a /clock publisher, a paused
    simulation: the status is back to OK, waiting."""
    from diagnostic_msgs.msg import DiagnosticStatus
    from nav_msgs.msg import Odometry
    from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
    from rosgraph_msgs.msg import Clock
    from sensor_msgs.msg import JointState

    ctrl = ros_process(
        'ffsim_ros.reactionless_controller',
        ros_args=['-p', 'capture.scenario:=capture', '-p', 'use_sim_time:=true'],
        name='ctrl',
    )
    node = ros_node('probe')
    ros_executor.add_node(node)
    statuses: list = []
    latched = QoSProfile(
        depth=20,
        reliability=ReliabilityPolicy.RELIABLE,
        durability=DurabilityPolicy.TRANSIENT_LOCAL,
    )
    node.create_subscription(DiagnosticStatus, 'goal_status', statuses.append, latched)

    def said(text: str) -> DiagnosticStatus | None:
        return next((s for s in statuses if text in s.message), None)

    no_simulator = 'no simulator publishes /joint_states or /base_odom'
    assert wait_until(lambda: said(no_simulator), 60, ros_executor), (
        [s.message for s in statuses],
        ctrl.describe(),
    )
    status = said(no_simulator)
    assert status.name.endswith(': capture') and status.level == DiagnosticStatus.WARN
    assert status.message.startswith('active: cannot proceed: the simulation clock has not ')
    assert status.message.endswith('(the simulator stopped?)'), status.message
    assert wait_until(lambda: no_simulator in ctrl.stderr(), 20), ctrl.describe()
    assert "the capture of 'client' cannot proceed until the clock advances" in ctrl.stderr()

    # the state's publishers (no message needed: counted), nothing on /clock
    node.create_publisher(JointState, 'joint_states', 1)
    node.create_publisher(Odometry, 'base_odom', 1)
    no_clock = (
        'use_sim_time is true but no publisher on /clock: remap the clock topic or start the '
        'simulator with publish_clock'
    )
    assert wait_until(lambda: said(no_clock), 30, ros_executor), (
        [s.message for s in statuses],
        ctrl.describe(),
    )
    status = said(no_clock)
    assert status.level == DiagnosticStatus.WARN
    assert status.message == f'active: cannot proceed: {no_clock} (no simulation clock)'
    assert wait_until(lambda: no_clock in ctrl.stderr(), 20), ctrl.describe()

    # a clock's publisher too: a paused simulation, nothing to say but the capture's state
    node.create_publisher(Clock, '/clock', 1)
    assert wait_until(
        lambda: statuses[-1].message == 'active' and statuses[-1] is not status,
        30,
        ros_executor,
    ), ([s.message for s in statuses], ctrl.describe())
    last = statuses[-1]
    assert last.level == DiagnosticStatus.OK
    assert {kv.key: kv.value for kv in last.values}['phase'] == 'wait'
    assert ctrl.is_running()
