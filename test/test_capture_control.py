"""Capture control (issue 17): interception inside the reaction null space, post-capture
detumbling by momentum distribution vs plain generalized-Jacobian braking
(:mod:`ffsim_ros.control.capture`, :mod:`ffsim_ros.control.capture_loop`).

* The momentum-aware rate laws against the momentum itself: the state they give (joint rates,
  base twist by eq. 1 of the module) carries the momentum it started from (``D.momentum``)
  and turns the base as commanded.
* The grasp point from odometry against the scene's own handle state.
* The closed loop of the acceptance: a target tumbling at 5 deg/s, its CoM drifting at
  2 cm/s, captured and detumbled to under 0.1 deg/s relative rate; total momentum to 1e-10;
  the final base rate is the locked system's ``I^-1 L_g`` (closed form); the base attitude
  change after the capture smaller under momentum distribution than under ``gjm``.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import ffsim_ros.dynamics as D
from ffsim_ros.control.capture import (
    CaptureGains,
    GraspPoint,
    computed_torque,
    distribution_rates,
    grasp_point,
    intercept_rates,
    momentum_terms,
    point_generalized_jacobian,
)
from ffsim_ros.control.capture_loop import (
    CAPTURE_ARM,
    DETUMBLED_RATE,
    CaptureLoop,
    tumbling_target_scene,
)
from ffsim_ros.control.rns import rate_weights
from ffsim_ros.dynamics.lie import quat_to_matrix
from ffsim_ros.resources import sample_robot
from ffsim_ros.scene import locked_inertia, welded_model

#: Simulated time of each closed-loop run [s] (capture at 4.1 s, detumbled by 12.5 s).
RUN_TIME = 13.5


@pytest.fixture(scope='module')
def robot():
    return D.load_urdf(sample_robot('ffsim_servicer_7dof'), floating_base=True)


def _moving_state(robot, rng, scale=1.0):
    q = D.neutral(robot)
    q[3:7] = [0.2, -0.3, 0.1, 0.927]
    q[3:7] /= np.linalg.norm(q[3:7])
    q[7:] = np.array(CAPTURE_ARM) + rng.uniform(-0.2, 0.2, robot.n)
    v = np.r_[rng.normal(size=6) * 0.01, rng.normal(size=robot.n) * 0.05] * scale
    return q, v


def _locked_world(model, q):
    """The locked system's inertia about its CoM, world frame."""
    R0 = quat_to_matrix(q[3:7])
    return R0 @ locked_inertia(model, q) @ R0.T


def _state_with(terms, phidot):
    """``v`` with these joint rates and the base twist of eq. (1): momentum unchanged."""
    return np.r_[terms.drift - terms.ff.B @ phidot, phidot]


def test_distribution_rates_keep_momentum_and_give_the_base_rate(robot):
    rng = np.random.default_rng(3)
    q, v = _moving_state(robot, rng)
    h = D.momentum(robot, q, v)
    terms = momentum_terms(robot, q, v)
    # c: the rate of the system with its joints locked = the locked inertia's I^-1 L_g
    L_g = D.momentum(robot, q, v, about='com')[3:]
    np.testing.assert_allclose(
        terms.locked_rate, np.linalg.solve(_locked_world(robot, q), L_g), atol=1e-12
    )
    w0_d = np.array([0.002, -0.001, 0.003])
    phidot = distribution_rates(terms, w0_d, rate_weights(robot))
    v2 = _state_with(terms, phidot)
    np.testing.assert_allclose(D.momentum(robot, q, v2), h, atol=1e-12)
    np.testing.assert_allclose(v2[3:6], w0_d, atol=1e-13)


def test_intercept_rates_track_with_feed_forward_and_keep_the_base(robot):
    rng = np.random.default_rng(5)
    q, v = _moving_state(robot, rng, scale=0.1)  # some momentum (e.g. a contact before)
    h = D.momentum(robot, q, v)
    terms = momentum_terms(robot, q, v)
    p, Js, Jstar = point_generalized_jacobian(robot, q, 'ee_link', np.zeros(3), terms.ff.B)
    # a target 1 cm away moving at 2 cm/s: the commanded velocity is v_h + K_p e
    gains = CaptureGains(damping=1e-6)
    target = GraspPoint(p + np.array([0.0, 0.01, 0.0]), np.array([0.02, 0.0, -0.01]))
    phidot, dist = intercept_rates(
        robot, q, terms, ('ee_link', np.zeros(3)), target, gains, attitude_reference=q[3:7]
    )
    assert dist == pytest.approx(0.01, rel=1e-12)
    assert np.all(np.abs(phidot) < gains.max_joint_speed * robot.velocity_limit)
    v2 = _state_with(terms, phidot)
    np.testing.assert_allclose(D.momentum(robot, q, v2), h, atol=1e-12)
    # the base does not turn (attitude at its reference), the grasp point moves as commanded
    np.testing.assert_allclose(v2[3:6], 0.0, atol=1e-12)
    pdot = D.link_jacobian(robot, q, 'ee_link')[:3] @ v2
    np.testing.assert_allclose(pdot, target.velocity + [0.0, 0.01, 0.0], atol=1e-6)


def test_grasp_point_from_odometry_matches_the_scene():
    scene, target = tumbling_target_scene()
    snap = scene.snapshot()
    root = snap.targets['sat'].root
    h = snap.targets['sat'].handles['bar']
    gp = grasp_point(
        root.position,
        root.orientation,
        root.linear_velocity,
        root.angular_velocity,
        target.handles[0].translation,
    )
    np.testing.assert_allclose(gp.position, h.position, atol=1e-13)
    np.testing.assert_allclose(gp.velocity, h.linear_velocity, atol=1e-13)
    with pytest.raises(ValueError, match='orientation'):
        grasp_point(root.position, [0, 0, np.nan, 1], root.linear_velocity, [0, 0, 0], [0] * 3)


@pytest.fixture(scope='module')
def runs():
    out = {}
    for mode in ('momentum_distribution', 'gjm'):
        scene, target = tumbling_target_scene()
        loop = CaptureLoop(scene, target, mode=mode)
        out[mode] = (loop, loop.run(RUN_TIME))
    return out


def test_tumbling_target_case(runs):
    scene, target = tumbling_target_scene()
    sat = scene.snapshot().targets['sat']
    v_com = D.momentum(target.model, *scene.target_state('sat'))[:3] / target.model.total_mass
    # 5 deg/s spin about the body z axis; the momentum about the CoM along (1, 0.2, 0.3),
    # 0.15 rad (the nutation) from that axis
    k = quat_to_matrix(sat.root.orientation)[:, 2]
    assert sat.root.angular_velocity @ k == pytest.approx(np.radians(5.0), abs=1e-12)
    h = sat.momentum[3:] - np.cross(sat.com, sat.momentum[:3])
    along = np.array([1.0, 0.2, 0.3])
    np.testing.assert_allclose(h / np.linalg.norm(h), along / np.linalg.norm(along), atol=1e-12)
    assert np.arccos(k @ h / np.linalg.norm(h)) == pytest.approx(0.15, abs=1e-12)
    assert np.linalg.norm(v_com) == pytest.approx(0.02, rel=1e-12)


@pytest.mark.parametrize('mode', ['momentum_distribution', 'gjm'])
def test_capture_and_detumble(runs, mode):
    loop, res = runs[mode]
    assert res.capture is not None and res.capture.captured
    assert res.capture_time < 6.0
    # at the grasp the handle was inside its envelope (2 cm, 1 cm/s)
    at = next(s for s in res.samples if s.time >= res.capture_time)
    check = res.capture.check
    assert check.inside and check.distance < 0.02 and check.speed < 0.01
    assert np.linalg.norm(at.capture_impulse) > 0.0
    assert res.final_relative_rate < DETUMBLED_RATE
    assert res.detumble_time < RUN_TIME - res.capture_time
    # the servicer stores and releases the momentum within its joint limits: the gains' plan
    assert res.detumble_reason == '' and loop.detumbler.reason == ''
    assert loop.detumbler.store_time == loop.gains.store_time
    # no external force: total momentum through the capture and the detumbling
    assert res.momentum_drift < 1e-10
    # the three parts always sum to the total (about the system CoM)
    s = res.samples[-1]
    com_total = s.momentum_target + s.momentum_arm + s.momentum_base
    np.testing.assert_allclose(com_total[:3], s.momentum_total[:3], atol=1e-10)
    # the joints are at rest: the base turns at the rigid system's rate I^-1 L_g
    scene = loop.scene
    q, v = scene.robot_state
    model = loop.detumbler.model
    L_g = D.momentum(model, q, v, about='com')[3:]
    np.testing.assert_allclose(v[3:6], np.linalg.solve(_locked_world(model, q), L_g), atol=1e-9)
    assert np.abs(v[6:]).max() < 1e-6
    # the law's last phase: hold (momentum distribution: once the base reached the locked
    # rate, the momentum released; it stayed in 'release' for good before)
    assert res.samples[-1].phase == 'hold'
    if mode == 'momentum_distribution':
        phases = [sm.phase for sm in res.samples if sm.time > res.capture_time]
        first_hold = phases.index('hold')
        assert 'release' in phases[:first_hold] and 'store' in phases[:first_hold]


def test_momentum_distribution_disturbs_the_base_less(runs):
    md, gjm = runs['momentum_distribution'][1], runs['gjm'][1]
    # same interception in both runs (same law until the grasp)
    assert md.capture_time == gjm.capture_time
    ratio = gjm.attitude_change_after_capture / md.attitude_change_after_capture
    acc_ratio = gjm.peak_base_acceleration / md.peak_base_acceleration
    print(
        f'base attitude after capture: gjm {np.degrees(gjm.attitude_change_after_capture):.4f}'
        f' deg, momentum distribution {np.degrees(md.attitude_change_after_capture):.4f} deg,'
        f' ratio {ratio:.2f}; peak base acceleration ratio {acc_ratio:.2f}'
    )
    assert ratio > 1.0
    assert acc_ratio > 1.0
    # while storing, the base rate stays near zero; gjm's base takes the rate at once
    store = [s for s in md.samples if s.phase == 'store']
    brake = [s for s in gjm.samples if s.phase == 'brake']
    assert store and brake
    assert max(np.linalg.norm(s.base_rate) for s in store) < 0.1 * max(
        np.linalg.norm(s.base_rate) for s in brake
    )


def test_welded_model_of_the_loop_matches_the_scene(runs):
    """The detumbler's welded model (built from the pre-grasp poses) is the scene's: same
    momentum for the same state."""
    loop, _ = runs['gjm']
    q, v = loop.scene.robot_state
    np.testing.assert_allclose(
        D.momentum(loop.detumbler.model, q, v), loop.scene.momentum(), atol=1e-10
    )
    assert welded_model is not None


def test_bad_capture_loop_input_is_refused_naming_it():
    scene, target = tumbling_target_scene()
    with pytest.raises(ValueError, match="unknown handle 'knob'"):
        CaptureLoop(scene, target, handle='knob')
    with pytest.raises(ValueError, match="detumble mode: expected one of .*got 'spin'"):
        CaptureLoop(scene, target, mode='spin')
    with pytest.raises(ValueError, match='gain store_time: expected a finite value >= 0'):
        CaptureGains(store_time=-1.0)
    other, _ = tumbling_target_scene()
    with pytest.raises(ValueError, match="expected free target 'moon'"):
        CaptureLoop(other, dataclasses.replace(target, name='moon'))


@pytest.mark.ros  # (the controller's capture module: rclpy messages)
def test_a_malformed_capture_scenario_is_refused_naming_the_field(tmp_path):
    """``capture.scenario`` files whose ``targets`` is not a list of named mappings are
    refused with a ValueError naming the field (``targets: 5`` used to raise a TypeError:
    exit code 1 instead of 2); a target name that makes no valid odometry topic is refused
    before rclpy sees it."""
    import yaml

    from ffsim_ros.node_support.capture_control import scenario_target
    from ffsim_ros.node_support.scene_support import resolve_scenario

    shipped = resolve_scenario('capture')
    cases = {
        'targets: 5': 'targets: expected a list of targets, got 5',
        'targets: {name: a}': 'targets: expected a list of targets, got a dict',
        'targets: [5]': 'targets[0]: expected a mapping, got 5',
        'targets: [[1, 2]]': 'targets[0]: expected a mapping, got a list',
        'targets: [{name: 3}]': 'targets[0].name: expected a non-empty string, got 3',
        'targets: [{mass: 3.0}]': 'targets[0].name: expected a non-empty string, got None',
        '[1, 2]': 'expected a mapping of scenario keys, got a list',
        'targets: []': 'expected targets, got none',
    }
    for k, (text, expected) in enumerate(cases.items()):
        path = tmp_path / f'case{k}.yaml'
        path.write_text(text + '\n')
        with pytest.raises(ValueError) as info:
            scenario_target(str(path))
        assert str(info.value) == f'capture.scenario {str(path)!r}: {expected}', text
    data = yaml.safe_load(shipped.read_text())
    data['robot']['urdf'] = str((shipped.parent / data['robot']['urdf']).resolve())
    data['targets'][0]['name'] = 'client 1'
    path = tmp_path / 'spaced.yaml'
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(ValueError) as info:
        scenario_target(str(path))
    assert str(info.value) == (
        f"capture.scenario {str(path)!r}: targets[0].name 'client 1': expected a name that "
        "makes a valid odometry topic, got 'targets/client 1/odom' (topic name must not "
        "contain characters other than alphanumerics, '_', '~', '{', or '}')"
    )
    data['targets'][0]['name'] = 'client_1'
    path.write_text(yaml.safe_dump(data))
    target, read = scenario_target(str(path))
    assert target.name == 'client_1' and read == path


def test_a_target_no_longer_held_is_captured_again(robot):
    """After the grasp, the detumbling law assumes the target welded: when its odometry puts
    the handle away from the gripper (``~/release``, a reset of the simulation), the capture
    goes back to intercepting instead of driving the arm with 100+ N m for as long as it ran;
    while the handle stays at the gripper, it detumbles."""
    from nav_msgs.msg import Odometry

    from ffsim_ros.node_support.capture_control import LOST_MARGIN, CaptureControl

    _, target = tumbling_target_scene()
    control = CaptureControl(robot, 'ee_link', target, 'gjm')
    q, v = _moving_state(robot, np.random.default_rng(3), scale=0.0)
    gripper = D.link_pose(robot, q, 'ee_link')[0]

    def odometry(handle_at) -> Odometry:  # the target unturned, its handle at ``handle_at``
        msg = Odometry()
        p = np.asarray(handle_at) - target.handles[0].translation
        msg.pose.pose.position.x, msg.pose.pose.position.y, msg.pose.pose.position.z = p
        msg.pose.pose.orientation.w = 1.0
        return msg

    control.on_odometry(odometry(gripper))
    control.on_grasp_reply(True, 0.0, q, v)
    assert control.detumbler is not None and control.phase == 'brake'
    control.update(0.01, q, v)
    assert control.phase in ('brake', 'hold') and control.detumbler is not None
    # still held just inside the margin; lost beyond it
    radius = target.handles[0].radius
    control.on_odometry(odometry(gripper + [0.0, 0.0, radius + 0.9 * LOST_MARGIN]))
    control.update(0.02, q, v)
    assert control.detumbler is not None
    control.on_odometry(odometry(gripper + [0.0, 0.0, 1.0]))
    tau, ask = control.update(0.03, q, v)
    assert control.phase == 'intercept' and control.detumbler is None and not ask
    assert control.distance == pytest.approx(1.0, abs=1e-9) and np.all(np.isfinite(tau))


@pytest.mark.ros  # (the controller's capture module: rclpy messages)
def test_an_articulated_capture_target_is_refused_at_start(tmp_path):
    """The detumbling law welds one rigid body to the gripper: a URDF target with joints is
    refused naming it when the scenario is read (exit 2 in the node); it ended the controller
    at the grasp (its welded model built without joint positions: exit 1)."""
    import yaml

    from ffsim_ros.node_support.capture_control import scenario_target
    from ffsim_ros.node_support.scene_support import resolve_scenario

    urdf = tmp_path / 'hinged.urdf'
    urdf.write_text(
        '<robot name="hinged"><link name="hub"><inertial><mass value="40"/><inertia ixx="0.5" '
        'iyy="0.7" izz="0.8" ixy="0" ixz="0" iyz="0"/></inertial></link><link name="panel">'
        '<inertial><origin xyz="0 0.4 0"/><mass value="5"/><inertia ixx="0.1" iyy="0.02" '
        'izz="0.1" ixy="0" ixz="0" iyz="0"/></inertial></link><joint name="hinge" '
        'type="revolute"><parent link="hub"/><child link="panel"/><axis xyz="1 0 0"/><limit '
        'lower="-1" upper="1" effort="1" velocity="1"/></joint></robot>'
    )
    shipped = resolve_scenario('capture')
    data = yaml.safe_load(shipped.read_text())
    data['robot']['urdf'] = str((shipped.parent / data['robot']['urdf']).resolve())
    target = data['targets'][0]
    for key in ('shape', 'mass', 'inertia'):
        target.pop(key, None)
    target['urdf'] = str(urdf)
    target['handles'][0]['link'] = 'hub'
    path = tmp_path / 'hinged.yaml'
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(ValueError) as info:
        scenario_target(str(path))
    assert str(info.value) == (
        f'capture.target {target["name"]!r}: expected a rigid target (the detumbling law welds '
        "one rigid body to the gripper), got one with 1 joint(s) ['hinge']"
    )


@pytest.mark.ros  # (the controller's capture module: rclpy messages)
def test_the_grasp_is_asked_within_the_rate_limit_and_not_again_at_once(robot):
    """The handle's relative rate is checked with its distance and speed before the grasp is
    asked (a target spinning beyond its max_rate drew a refused request every update, 88 a
    second over DDS); after a refusal the next request waits GRASP_RETRY."""
    from nav_msgs.msg import Odometry

    from ffsim_ros.node_support.capture_control import GRASP_MARGIN, GRASP_RETRY, CaptureControl

    _, target = tumbling_target_scene()
    handle = dataclasses.replace(target.handles[0], max_rate=0.2)
    target = dataclasses.replace(target, handles=(handle,))
    control = CaptureControl(robot, 'ee_link', target, 'gjm')
    q, v = _moving_state(robot, np.random.default_rng(3), scale=0.0)
    gripper = D.link_pose(robot, q, 'ee_link')[0]

    def odometry(rate: float) -> Odometry:  # the handle at the gripper, spinning about z
        msg = Odometry()
        p = gripper - handle.translation
        msg.pose.pose.position.x, msg.pose.pose.position.y, msg.pose.pose.position.z = p
        msg.pose.pose.orientation.w = 1.0
        msg.twist.twist.angular.z = rate
        return msg

    control.on_odometry(odometry(1.5 * GRASP_MARGIN * 0.2))  # beyond the margin of max_rate
    _, ask = control.update(1.0, q, v)
    assert not ask and control.rate == pytest.approx(0.15) and control.phase == 'intercept'
    assert 'turns at 0.1500 rad/s' in control.waiting and 'max_rate 0.2 rad/s' in control.waiting
    control.on_odometry(odometry(0.05))
    _, ask = control.update(1.01, q, v)
    assert ask and control.phase == 'grasping' and not control.waiting
    control.on_grasp_reply(False, 1.02, np.zeros(0), np.zeros(0))  # refused
    _, ask = control.update(1.03, q, v)
    assert not ask and control.phase == 'intercept'
    _, ask = control.update(1.02 + GRASP_RETRY + 1e-6, q, v)
    assert ask


@pytest.mark.ros  # (the controller's capture module: rclpy messages)
def test_grasp_replies_are_read_for_the_target_held():
    """A successful grasp reply names the target the simulator welded: the controller tells
    whether it is its own (the simulator welds any handle inside its envelope); the release
    service sits next to the grasp service."""
    from ffsim_ros.node_support.capture_control import release_service
    from ffsim_ros.node_support.scene_services import grasped_target

    assert grasped_target('captured client/bar at sim time 2.990000 s: impulse [0] N s') == (
        'client'
    )
    assert grasped_target('captured a b/h at sim time 1.0 s: x') == 'a b'
    assert grasped_target('grasp refused: rate 0.5 > 0.2') is None
    assert release_service('/ffsim_simulator/grasp') == '/ffsim_simulator/release'
    assert release_service('/robot1/ffsim_simulator/grasp') == '/robot1/ffsim_simulator/release'
    assert release_service('grasp') == 'release'


@pytest.mark.ros  # (the controller's capture module: rclpy messages)
def test_a_capture_not_made_in_time_is_aborted_and_the_arm_held(robot):
    """capture.timeout: a target not grasped within it (out of reach, too fast) ends the
    capture as aborted with the reason, the arm held still (it was pursued for as long as the
    node ran, with no outcome); a late refusal does not undo it; the clock going back (a reset
    of the simulation) starts the capture again."""
    from nav_msgs.msg import Odometry

    from ffsim_ros.node_support.capture_control import CaptureControl

    _, target = tumbling_target_scene()
    control = CaptureControl(robot, 'ee_link', target, 'gjm', timeout=2.0)
    q, v = _moving_state(robot, np.random.default_rng(4), scale=0.0)
    msg = Odometry()  # the target 3 m beyond the gripper: out of reach
    p = D.link_pose(robot, q, 'ee_link')[0] + [3.0, 0.0, 0.0]
    msg.pose.pose.position.x, msg.pose.pose.position.y, msg.pose.pose.position.z = p
    msg.pose.pose.orientation.w = 1.0
    control.on_odometry(msg)
    for t in np.arange(10.0, 12.0, 0.1):
        control.update(float(t), q, v)
        assert control.phase == 'intercept' and control.outcome == 'active'
    tau, ask = control.update(12.05, q, v)
    assert control.phase == 'aborted' and control.outcome == 'aborted' and not ask
    assert control.reason.startswith('not captured within capture.timeout 2 s: the handle ')
    assert control.reason.endswith('holding the arm still')
    # holding: the efforts of zero joint rates (computed torque, the arm at rest here)
    terms = momentum_terms(robot, q, v)
    held, _ = computed_torque(robot, terms, v, np.zeros(robot.n), 20.0)
    np.testing.assert_allclose(tau, held)
    control.on_grasp_reply(False, 12.1, np.zeros(0), np.zeros(0))
    control.update(12.2, q, v)
    assert control.phase == 'aborted'
    control.update(1.0, q, v)  # the clock went back: a new simulation
    assert control.phase == 'intercept' and control.outcome == 'active' and not control.reason
    control.update(2.5, q, v)
    assert control.phase == 'intercept'
    control.update(3.01, q, v)
    assert control.phase == 'aborted'
    # a reset announced (the clock does not go back: ~/reset, ResetSimulation's state scope):
    # the capture starts again, its timeout counted anew and the history of before forgotten
    control.update(5.0, q, v)
    assert control.phase == 'aborted' and 'closest approach' in control.reason
    control.restart()
    assert control.phase == 'intercept' and control.outcome == 'active' and not control.reason
    assert control.closest is None and control.attitude is None
    control.update(5.1, q, v)
    control.update(7.05, q, v)
    assert control.phase == 'intercept'  # (2 s counted from 5.1, not from before the reset)
    control.update(7.2, q, v)
    assert control.phase == 'aborted' and 'at t = 5.10 s' in control.reason, control.reason
    # without a limit it never aborts
    endless = CaptureControl(robot, 'ee_link', target, 'gjm')
    endless.on_odometry(msg)
    endless.update(0.0, q, v)
    endless.update(1e5, q, v)
    assert endless.phase == 'intercept'


def test_intercept_matches_the_rate_of_a_far_handle_without_losing_the_position(robot):
    """A flat box (1.2 x 1.2 x 0.06 m, 30 kg) spinning at 5 deg/s, its handle 0.65 m from the
    CoM: the handle moves with ``v + w x r`` and turns with ``w``. The rate-matching task (third
    priority) leaves the base rate and the grasp point's velocity as they were without it, and
    brings the gripper's rate closer to the handle's; without the target's rate the law is the
    former one."""
    from ffsim_ros.control.capture import secondary_scale

    q = D.neutral(robot)
    q[7:] = [0.0, 0.05, 0.03, -0.2, 0.4, 0.3, 0.0]  # the arm of the flat-box probe at t = 2 s
    v = np.zeros(robot.nv)
    terms = momentum_terms(robot, q, v)
    gains = CaptureGains(damping=1e-6)
    p, _, _ = point_generalized_jacobian(robot, q, 'ee_link', np.zeros(3), terms.ff.B)
    w = np.array([np.radians(5.0), 0.0, 0.0])  # spin about the line from the gripper
    offset = np.array([-0.65, 0.0, 0.0])  # handle in the box frame, 0.65 m from the CoM
    R = quat_to_matrix([0.0, 0.0, np.sin(np.pi / 4), np.cos(np.pi / 4)])  # box turned 90 deg
    handle = p + np.array([0.01, 0.02, 0.0])
    gp = grasp_point(
        handle - R @ offset,
        [0.0, 0.0, np.sin(np.pi / 4), np.cos(np.pi / 4)],
        [0.0, -0.02, 0.0],
        w,
        offset,
    )
    assert np.linalg.norm(gp.position - handle) < 1e-12
    np.testing.assert_allclose(gp.angular_velocity, w)
    assert np.linalg.norm(gp.velocity - [0.0, -0.02, 0.0]) == pytest.approx(0.65 * w[0])
    args = (robot, q, terms, ('ee_link', np.zeros(3)), gp, gains)
    matched, dist = intercept_rates(*args, attitude_reference=q[3:7])
    plain, _ = intercept_rates(
        robot,
        q,
        terms,
        ('ee_link', np.zeros(3)),
        GraspPoint(gp.position, gp.velocity),
        gains,
        attitude_reference=q[3:7],
    )
    assert dist == pytest.approx(np.linalg.norm([0.01, 0.02]), rel=1e-12)
    vmax = gains.max_joint_speed * robot.velocity_limit
    assert np.all(np.abs(matched) <= vmax * (1 + 1e-12))
    J = D.link_jacobian(robot, q, 'ee_link')
    v_m, v_p = _state_with(terms, matched), _state_with(terms, plain)
    # priority kept: base rate (attitude held) and grasp point velocity unchanged
    np.testing.assert_allclose(v_m[3:6], 0.0, atol=1e-12)
    np.testing.assert_allclose(J[:3] @ v_m, J[:3] @ v_p, atol=1e-6)
    # the rate task changed the joint rates and brought the gripper's rate nearer the handle's
    assert np.linalg.norm(matched - plain) > 1e-3
    rel_m, rel_p = np.linalg.norm(w - J[3:] @ v_m), np.linalg.norm(w - J[3:] @ v_p)
    assert rel_m < 0.9 * rel_p
    # the third task only takes what the joint speed limits leave
    assert secondary_scale(np.zeros(2), np.array([2.0, -1.0]), np.array([1.0, 1.0])) == 0.5
    assert secondary_scale(np.array([1.0, 0.0]), np.array([1.0, 0.0]), np.ones(2)) == 0.0
    assert secondary_scale(np.zeros(2), np.array([0.1, 0.0]), np.ones(2)) == 1.0


def _odometry_at(target, handle_at, rate=0.0, velocity=(0.0, 0.0, 0.0)):
    """The target unturned, its handle at ``handle_at``, spinning about z at ``rate``."""
    from nav_msgs.msg import Odometry

    msg = Odometry()
    p = np.asarray(handle_at) - target.handles[0].translation
    msg.pose.pose.position.x, msg.pose.pose.position.y, msg.pose.pose.position.z = p
    msg.pose.pose.orientation.w = 1.0
    msg.twist.twist.angular.z = float(rate)
    msg.twist.twist.linear.x, msg.twist.twist.linear.y, msg.twist.twist.linear.z = velocity
    return msg


@pytest.mark.ros  # (the controller's capture module: rclpy messages)
def test_the_timeout_reason_names_the_closest_approach_and_the_last_violation(robot):
    """The abort's reason says how close the handle came (and when) and the last time it was
    within reach but outside half its speed / rate envelope, with the limits; it only named
    the last distance before."""
    from ffsim_ros.node_support.capture_control import CaptureControl

    _, target = tumbling_target_scene()
    handle = dataclasses.replace(target.handles[0], max_rate=0.2, radius=0.02)
    target = dataclasses.replace(target, handles=(handle,))
    control = CaptureControl(robot, 'ee_link', target, 'gjm', timeout=5.0)
    q, v = _moving_state(robot, np.random.default_rng(3), scale=0.0)
    gripper = D.link_pose(robot, q, 'ee_link')[0]
    control.on_odometry(_odometry_at(target, gripper + [0.0, 0.0, 0.05]))
    control.update(10.0, q, v)
    control.on_odometry(_odometry_at(target, gripper + [0.0, 0.004, 0.0], rate=0.15))
    _, ask = control.update(11.0, q, v)  # 0.4 cm away, turning beyond 0.1 rad/s: waited for
    assert not ask and control.violation == pytest.approx((11.0, 0.0, 0.15))
    control.on_odometry(_odometry_at(target, gripper + [0.003, 0.0, 0.0], rate=0.12))
    control.update(12.0, q, v)  # closer (0.3 cm), still turning too fast
    control.on_odometry(_odometry_at(target, gripper + [0.0, 0.3, 0.0]))
    control.update(13.0, q, v)  # then away
    assert not control.waiting
    control.update(15.5, q, v)
    assert control.outcome == 'aborted'
    assert control.reason == (
        'not captured within capture.timeout 5 s: the handle 30.0 cm from the gripper; '
        'closest approach 0.30 cm at t = 12.00 s (grasp asked within 1.00 cm); last within '
        'reach at t = 12.00 s but moving at 0.00 cm/s (limit 0.50) and turning at 0.1200 '
        'rad/s (limit 0.1000) against the gripper; holding the arm still'
    )
    # a reset (the clock back) starts a new record
    control.update(1.0, q, v)
    assert control.outcome == 'active' and control.violation is None
    assert control.closest == pytest.approx((0.3, 1.0), rel=1e-9)


@pytest.mark.ros  # (the controller's capture module: rclpy messages)
def test_speed_and_rate_are_refreshed_after_the_capture(robot):
    """goal_status's speed and rate after the grasp are those of the held handle, updated
    every step, not frozen at the grasp request (only the distance was refreshed)."""
    from ffsim_ros.node_support.capture_control import CaptureControl

    _, target = tumbling_target_scene()
    control = CaptureControl(robot, 'ee_link', target, 'gjm')
    q, v = _moving_state(robot, np.random.default_rng(3), scale=0.0)
    gripper = D.link_pose(robot, q, 'ee_link')[0]
    control.on_odometry(_odometry_at(target, gripper, rate=0.004, velocity=(0.003, 0.0, 0.0)))
    control.update(0.0, q, v)
    assert control.rate == pytest.approx(0.004) and control.speed == pytest.approx(0.003)
    control.on_grasp_reply(True, 0.0, q, v)
    control.on_odometry(_odometry_at(target, gripper, rate=0.0))  # held: at rest like the arm
    control.update(0.01, q, v)
    assert control.outcome in ('captured', 'detumbled')
    assert control.rate == pytest.approx(0.0, abs=1e-12)
    assert control.speed == pytest.approx(0.0, abs=1e-12)
    control.on_odometry(_odometry_at(target, gripper, rate=0.002))
    control.update(0.02, q, v)
    assert control.rate == pytest.approx(0.002)


def _offset_gripper_scenario(tmp_path, gripper: dict, change=None):
    """The shipped capture scenario with ``robot.gripper`` set to ``gripper``, written to
    ``tmp_path``: ``(path, data)``."""
    import yaml

    from ffsim_ros.node_support.scene_support import resolve_scenario

    shipped = resolve_scenario('capture')
    data = yaml.safe_load(shipped.read_text())
    data['robot']['urdf'] = str((shipped.parent / data['robot']['urdf']).resolve())
    data['robot']['gripper'] = gripper
    if change is not None:
        change(data)
    path = tmp_path / 'offset.yaml'
    path.write_text(yaml.safe_dump(data))
    return path, data


def _odometry(root):
    """The simulator's ``targets/<name>/odom`` of a target's root state (twist in its axes)."""
    from nav_msgs.msg import Odometry

    msg = Odometry()
    p, o = msg.pose.pose.position, msg.pose.pose.orientation
    p.x, p.y, p.z = root.position.tolist()
    o.x, o.y, o.z, o.w = root.orientation.tolist()
    R = quat_to_matrix(root.orientation)
    lin, ang = msg.twist.twist.linear, msg.twist.twist.angular
    lin.x, lin.y, lin.z = (R.T @ root.linear_velocity).tolist()
    ang.x, ang.y, ang.z = (R.T @ root.angular_velocity).tolist()
    return msg


@pytest.mark.ros  # (the controller's capture module: rclpy messages)
def test_the_capture_aims_the_scenario_gripper_point(tmp_path):
    """The simulator checks the grasp envelope at the scenario's ``robot.gripper`` frame (link
    and translation); the controller drove its ``ee_link`` origin, so with a gripper 10 cm
    off the link every grasp it asked was refused ('distance 0.1 > 0.05'). The capture takes
    the gripper of ``capture.scenario`` (:func:`scenario_gripper`) and aims that point: in
    process, against the scene the simulator steps, its distance, speed and rate equal the
    scene's envelope figures when it asks, and the grasp is made."""
    from ffsim_ros.node_support.capture_control import CaptureControl, scenario_gripper
    from ffsim_ros.scene import scene_from_dict, target_from_dict

    path, data = _offset_gripper_scenario(
        tmp_path, {'link': 'ee_link', 'translation': [0.1, 0.0, 0.0], 'rpy': [0.0, 0.0, 0.3]}
    )
    scene = scene_from_dict(data, path.parent)
    robot = scene.robot_model
    gripper = scenario_gripper(str(path), robot)
    assert gripper.link == 'ee_link'
    np.testing.assert_array_equal(gripper.translation, [0.1, 0.0, 0.0])
    target = target_from_dict(data['targets'][0], 'targets[0]', path.parent)
    control = CaptureControl(
        robot, gripper.link, target, 'gjm', gripper_offset=gripper.translation
    )
    steps = 10  # a control period of 10 physics steps
    captured = None
    for _ in range(1000):  # (10 s; captured after 2.1 s)
        control.on_odometry(_odometry(scene.snapshot().targets['client'].root))
        q, v = scene.robot_state
        tau, ask = control.update(scene.time, q, v)
        if ask:
            (check,) = scene.envelope_checks()
            assert control.distance == pytest.approx(check.distance, abs=1e-12)
            assert control.speed == pytest.approx(check.speed, abs=1e-12)
            assert control.rate == pytest.approx(check.rate, abs=1e-12)
            event = scene.grasp()
            control.on_grasp_reply(event.captured, scene.time, q, v)
            assert event.captured, event.reason
            captured = scene.time
            break
        scene.advance(steps, effort=tau)
    assert captured is not None, f'not captured: {control.distance:.3f} m, {control.phase}'
    assert control.phase == 'brake' and scene.holding == 'client'


@pytest.mark.ros  # (the controller's capture module: rclpy messages)
def test_a_bad_scenario_gripper_is_refused_naming_it(tmp_path):
    """The scenario's gripper must be a link of the controlled robot that its joints move;
    a scenario without one, or with a number too large for a float, is refused naming the
    field (a ValueError: exit 2 in the node; an OverflowError traceback before)."""
    from ffsim_ros.node_support.capture_control import scenario_gripper, scenario_target

    robot = D.load_urdf(sample_robot('ffsim_servicer_7dof'), floating_base=True)
    moving = [n for n in robot.link_names if robot.frame(n).body != 0]
    for gripper, text in (
        (
            {'link': 'nope'},
            f'robot.gripper.link: expected a link of the controlled robot the '
            f"joints move (one of {moving}), got 'nope'",
        ),
        ({'link': robot.link_names[0]}, f'got {robot.link_names[0]!r}'),
        ({'link': 'ee_link', 'translation': [1e9, 0, 0]}, 'robot.gripper.translation: expected'),
        ({'lnk': 'ee_link'}, "robot.gripper: unknown keys ['lnk']"),
    ):
        path, _ = _offset_gripper_scenario(tmp_path, gripper)
        with pytest.raises(ValueError) as info:
            scenario_gripper(str(path), robot)
        assert str(info.value).startswith(f'capture.scenario {str(path)!r}: '), str(info.value)
        assert text in str(info.value), str(info.value)
    path, _ = _offset_gripper_scenario(
        tmp_path, {'link': 'ee_link'}, lambda data: data['robot'].pop('gripper')
    )
    with pytest.raises(ValueError, match=r'robot\.gripper: expected the gripper'):
        scenario_gripper(str(path), robot)
    path, _ = _offset_gripper_scenario(
        tmp_path, {'link': 'ee_link'}, lambda data: data['targets'][0].update(mass=10**400)
    )
    with pytest.raises(ValueError, match=r'targets\[0\]\.mass: .*too large for a float'):
        scenario_target(str(path))
