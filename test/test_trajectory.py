"""The joint-trajectory law of ``ffsim_ros.control.trajectory``, without DDS.

References: the spline formulas of ros2_controllers' joint_trajectory_controller (boundary
conditions, and the closed forms of rest-to-rest segments: peak speed 15/8 and 3/2 of the
mean for the quintic and the cubic), finite differences, the free-floating forward dynamics
(the computed torque gives the commanded joint accelerations), the simulation engine (closed
loop at 1 kHz with a 100 Hz controller) and the zero-momentum base rate ``w0 = -A phidot``.
"""

from __future__ import annotations

import array
import math
import re

import numpy as np
import pytest
from sequences import Untouchable

import ffsim_ros.dynamics as D
from ffsim_ros.control.reactionless import base_rate_map
from ffsim_ros.control.trajectory import (
    MAX_POINTS,
    JointTrajectory,
    Tolerances,
    TrackingGains,
    TrajectoryError,
    TrajectoryFollower,
    check_waypoints,
    computed_torque,
    reactionless_correction,
)
from ffsim_ros.dynamics.lie import quat_angle
from ffsim_ros.node_support.resets import continuity_gap
from ffsim_ros.resources import sample_robot
from ffsim_ros.sim import Engine

MODEL = D.load_urdf(sample_robot('ffsim_servicer_7dof'))
N = MODEL.n
NAMES = list(MODEL.joint_names)


def rest_state() -> tuple[np.ndarray, np.ndarray]:
    q_base, v_base = D.base_state_from_link(MODEL, np.zeros(3), [0.0, 0.0, 0.0, 1.0])
    q = np.r_[q_base, 0.1, 0.3, -0.2, 0.8, 0.1, -0.4, 0.2]
    return q, np.zeros(MODEL.nv)


def waypoints(times, positions, velocities=None, accelerations=None, names=NAMES):
    k = len(times)
    return check_waypoints(
        MODEL,
        names,
        times,
        positions,
        velocities if velocities is not None else [[]] * k,
        accelerations if accelerations is not None else [[]] * k,
    )


# ------------------------------------------------------------------------------ checks
@pytest.mark.parametrize(
    ('kwargs', 'kind', 'text'),
    [
        (dict(names=[]), 'joints', 'expected at least one joint'),
        (dict(names=NAMES[:6] + ['wrist']), 'joints', "unknown joints ['wrist']"),
        (dict(names=NAMES[:6] + [NAMES[0]]), 'joints', "more than once: ['arm_joint_1']"),
        (dict(times=[]), 'goal', 'expected at least one point'),
        (dict(times=[1.0, 0.5]), 'goal', 'strictly increasing, got 1 s at point 0 then 0.5 s'),
        (dict(times=[1.0, 1.0]), 'goal', 'strictly increasing'),
        (dict(times=[-0.5, 1.0]), 'goal', 'points[0].time_from_start: expected a time >= 0'),
        (
            dict(nan=(1, 'positions', 3)),
            'goal',
            "points[1].positions: expected finite values, got {'arm_joint_4': nan}",
        ),
        (
            dict(nan=(0, 'velocities', 6)),
            'goal',
            "points[0].velocities: expected finite values, got {'arm_joint_7': nan}",
        ),
        (dict(nan=(0, 'accelerations', 0)), 'goal', 'points[0].accelerations: expected finite'),
        (
            dict(short='positions'),
            'goal',
            'points[0].positions: expected 7 values (one per joint, required), got 6',
        ),
        (dict(short='velocities'), 'goal', 'points[0].velocities: expected 7 values'),
        (
            dict(moving_end=True),
            'goal',
            "points[1].velocities: expected zero at the last point, got {'arm_joint_2': 0.1}",
        ),
        (dict(beyond=True), 'goal', 'arm_joint_2 at 2.5 (limits [-2, 2])'),
        (dict(effort=True), 'goal', 'points[1].effort: expected none'),
    ],
)
def test_bad_trajectories_are_refused_naming_the_culprit(kwargs, kind, text) -> None:
    names = kwargs.get('names', NAMES)
    times = kwargs.get('times', [1.0, 2.0])
    k = len(times)
    positions = [[0.1] * len(names) for _ in range(k)]
    velocities = [[0.0] * len(names) for _ in range(k)]
    accelerations = [[0.0] * len(names) for _ in range(k)]
    efforts = [[] for _ in range(k)]
    if 'nan' in kwargs:
        point, field, joint = kwargs['nan']
        {'positions': positions, 'velocities': velocities, 'accelerations': accelerations}[field][
            point
        ][joint] = math.nan
    if 'short' in kwargs:
        {'positions': positions, 'velocities': velocities}[kwargs['short']][0].pop()
    if kwargs.get('moving_end'):
        velocities[-1][1] = 0.1
    if kwargs.get('beyond'):
        positions[0][1] = 2.5
    if kwargs.get('effort'):
        efforts[1] = [1.0] * len(names)
    with pytest.raises(TrajectoryError) as info:
        check_waypoints(MODEL, names, times, positions, velocities, accelerations, efforts)
    assert info.value.kind == kind
    assert text in str(info.value)


def test_a_last_velocity_of_round_off_counts_as_zero_as_in_jtc() -> None:
    """JTC refuses a last point moving faster than ``float`` epsilon (1.2e-7), no slower: a
    parameterizer's 1e-17 at the end ran there and was refused here."""
    target = [[0.1] * N, [0.2] * N]
    ends = {1e-17: True, -1e-8: True, 2e-7: False, -1e-3: False}
    for end, accepted in ends.items():
        velocities = [[0.0] * N, [0.0] * N]
        velocities[1][4] = end
        try:
            waypoints([1.0, 2.0], target, velocities)
        except TrajectoryError as exc:
            assert not accepted and "got {'arm_joint_5': " in str(exc)
        else:
            assert accepted, end


def test_a_single_point_at_the_start_is_checked_against_the_path_tolerance() -> None:
    """JTC checks the path tolerance at the first sample, also when it is past the last point
    (one point at ``time_from_start`` 0): 0.1 rad off with a 0.01 rad path tolerance aborts
    (it succeeded at once, the goal tolerance 0 not checked); within it, the goal rules."""
    q, v = rest_state()
    for offset, outcome in ((0.1, 'path_tolerance_violated'), (0.005, 'succeeded')):
        wp = waypoints([0.0], [(q[7:] + offset).tolist()])
        trajectory = JointTrajectory.start(wp, 2.0, q[7:], np.zeros(N))
        follower = TrajectoryFollower(
            MODEL, trajectory, Tolerances.uniform(N, 0.01, 0.0, 0.0, 0.0), TrackingGains()
        )
        update = follower.update(2.0, q, v)
        assert update.outcome == outcome, update.message
        assert follower.update(2.01, q, v).outcome is None  # (ended: it holds)


def test_huge_joint_name_lists_are_refused_up_front() -> None:
    """More names than joints is refused before any per-name work (40000 copies of one name
    used to stop the controller: a quadratic duplicate check); repeats of a plausible list
    are still named."""
    for names in ([NAMES[0]] * 100_000, [f'j{k}' for k in range(100_000)]):
        with pytest.raises(TrajectoryError) as info:
            check_waypoints(MODEL, names, [1.0], [[0.0] * len(names)], [[]], [[]])
        assert info.value.kind == 'joints'
        assert str(info.value) == (
            f'joint_names: expected at most {N} names (each joint once), got 100000'
        )
    names = [NAMES[2], NAMES[0], NAMES[2], NAMES[0], NAMES[1]]
    with pytest.raises(TrajectoryError) as info:
        check_waypoints(MODEL, names, [1.0], [[0.1] * 5], [[]], [[]])
    assert "more than once: ['arm_joint_1', 'arm_joint_3']" in str(info.value)


def test_too_many_points_are_refused_before_any_per_point_work() -> None:
    """More than MAX_POINTS points is refused by its count alone (20 000 points used to hold
    the controller's loop for 0.5 s, 100 000 for 2.25 s: longer than the simulator's command
    timeout)."""
    for k in (MAX_POINTS + 1, 1_000_000):
        with pytest.raises(TrajectoryError) as info:
            check_waypoints(MODEL, NAMES, *(Untouchable(k) for _ in range(4)))
        assert info.value.kind == 'goal'
        assert str(info.value) == f'points: expected at most {MAX_POINTS} points, got {k}'


def test_the_most_points_are_checked_whole_and_the_first_culprit_named() -> None:
    """MAX_POINTS points as rclpy gives them (array.array fields, velocities at some points
    only) pass the vectorized checks into the same waypoints as point-by-point reading; a
    bad value far down the list is named by its point."""
    k = MAX_POINTS
    rng = np.random.default_rng(3)
    times = (1.0 + 0.01 * np.arange(k)).tolist()
    pos = rng.uniform(-1.0, 1.0, (k, N))
    positions = [array.array('d', row) for row in pos]
    velocities = [array.array('d', [0.0] * N if i % 3 == 0 else []) for i in range(k)]
    accelerations = [array.array('d') for _ in range(k)]
    w = check_waypoints(MODEL, NAMES, times, positions, velocities, accelerations)
    np.testing.assert_array_equal(w.positions, pos)
    np.testing.assert_array_equal(w.times, times)
    assert [v is not None for v in w.velocities] == [i % 3 == 0 for i in range(k)]
    assert all(a is None for a in w.accelerations)
    trajectory = JointTrajectory.start(w, 0.0, np.zeros(N), np.zeros(N))
    assert trajectory.start_time == 0.0 and trajectory.end_time == times[-1]
    p, _, _, index = trajectory.sample(times[5000])
    np.testing.assert_allclose(p, pos[5000], atol=1e-12)
    assert index == 5001
    positions[7777][4] = math.nan
    velocities[9000][2] = math.inf
    with pytest.raises(TrajectoryError, match=re.escape('points[7777].positions: expected fin')):
        check_waypoints(MODEL, NAMES, times, positions, velocities, accelerations)
    positions[7777][4] = 0.0
    with pytest.raises(TrajectoryError, match=re.escape('points[9000].velocities: expected fin')):
        check_waypoints(MODEL, NAMES, times, positions, velocities, accelerations)
    velocities[9000][2] = 0.0
    times[6000] = times[5999]
    with pytest.raises(
        TrajectoryError, match=re.escape('60.99 s at point 5999 then 60.99 s at point 6000')
    ):
        check_waypoints(MODEL, NAMES, times, positions, velocities, accelerations)


def test_tolerances_read_as_jtc_does() -> None:
    base = Tolerances.uniform(N, 0.05, 0.01, 0.02, 1.0)
    assert base.path[:, 0].tolist() == [0.05] * N and base.goal[:, 1].tolist() == [0.02] * N
    out = base.overridden(
        MODEL,
        path=[('arm_joint_2', 0.2, 0.0, 0.0), ('arm_joint_3', -1.0, 0.3, 0.0)],
        goal=[('arm_joint_7', 0.0, -1.0, 0.5)],
        goal_time=-1.0,
    )
    assert out.path[1].tolist() == [0.2, 0.0, 0.0]  # > 0 replaces
    assert out.path[2].tolist() == [0.0, 0.3, 0.0]  # -1 erases
    assert out.path[0].tolist() == [0.05, 0.0, 0.0]  # others keep the defaults
    assert out.goal[6].tolist() == [0.01, 0.0, 0.5]  # 0 keeps the default
    assert out.goal_time == 0.0
    assert base.overridden(MODEL, goal_time=2.5).goal_time == 2.5
    with pytest.raises(TrajectoryError, match="path_tolerance: unknown joint 'elbow'"):
        base.overridden(MODEL, path=[('elbow', 0.1, 0.0, 0.0)])
    with pytest.raises(TrajectoryError, match='goal_tolerance arm_joint_1 velocity: expected'):
        base.overridden(MODEL, goal=[('arm_joint_1', 0.1, -2.0, 0.0)])


# ----------------------------------------------------------------------- interpolation
def _check_derivatives(trajectory: JointTrajectory, t0: float, t1: float) -> None:
    """Sampled velocity and acceleration are the derivatives of the sampled position."""
    h = 1e-6
    for t in np.linspace(t0 + 1e-3, t1 - 1e-3, 23):
        p0, v0, _, _ = trajectory.sample(t - h)
        p1, v1, _, _ = trajectory.sample(t + h)
        _, v, a, _ = trajectory.sample(t)
        assert np.abs((p1 - p0) / (2 * h) - v).max() < 1e-6
        assert np.abs((v1 - v0) / (2 * h) - a).max() < 1e-5


@pytest.mark.parametrize(('fields', 'peak'), [('pva', 15 / 8), ('pv', 3 / 2), ('p', 1.0)])
def test_spline_segments_match_jtc(fields: str, peak: float) -> None:
    """Rest to rest over T: the quintic, cubic and linear segments of JTC, from the measured
    state (at rest) to the one point; peak speed 15/8, 3/2 and 1 times the mean speed."""
    q, _ = rest_state()
    start = q[7:]
    goal = start + np.linspace(-0.2, 0.3, N)
    T = 2.0
    wp = waypoints(
        [T],
        [goal.tolist()],
        [[0.0] * N] if 'v' in fields else None,
        [[0.0] * N] if 'a' in fields else None,
    )
    trajectory = JointTrajectory.start(wp, 10.0, start, np.zeros(N))
    assert (trajectory.start_time, trajectory.end_time) == (10.0, 12.0)
    p, v, a, index = trajectory.sample(10.0)
    assert np.array_equal(p, start) and index == 0
    p, v, a, _ = trajectory.sample(11.0)
    assert np.abs(p - 0.5 * (start + goal)).max() < 1e-12  # symmetric profiles
    assert np.abs(v - peak * (goal - start) / T).max() < 1e-12
    p, v, a, index = trajectory.sample(12.0)
    assert np.abs(p - goal).max() < 1e-12 and not np.any(v) and not np.any(a) and index == 1
    assert np.array_equal(trajectory.sample(30.0)[0], goal)  # held after the end
    if fields != 'p':
        _check_derivatives(trajectory, 10.0, 12.0)


def test_waypoints_are_met_with_their_velocities_and_accelerations() -> None:
    """Quintic segments through three points (JTC's boundary conditions at each), the first
    from a moving measured state; joints not in the goal hold their position."""
    q, _ = rest_state()
    v_now = np.linspace(0.05, -0.05, N)
    names = NAMES[1:5]
    times = [0.5, 1.3, 2.0]
    pos = [[0.4, -0.1, 0.9, 0.2], [0.5, -0.2, 1.0, 0.3], [0.55, -0.25, 1.0, 0.35]]
    vel = [[0.1, -0.1, 0.05, 0.1], [0.05, -0.05, 0.0, 0.05], [0.0] * 4]
    acc = [[0.0, 0.1, -0.1, 0.0], [-0.05, 0.0, 0.0, 0.1], [0.0] * 4]
    wp = waypoints(times, pos, vel, acc, names=names)
    trajectory = JointTrajectory.start(wp, 3.0, q[7:], v_now, origin=3.0)
    p, v, a, _ = trajectory.sample(3.0)
    assert np.abs(p - q[7:]).max() < 1e-12 and np.abs(v - v_now).max() < 1e-12
    assert np.abs(a).max() < 1e-12  # the measured state's acceleration is taken as zero
    columns = [NAMES.index(n) for n in names]
    others = [j for j in range(N) if j not in columns]
    for i, t in enumerate(times):
        p, v, a, index = trajectory.sample(3.0 + t)
        assert np.abs(p[columns] - pos[i]).max() < 1e-12
        assert np.abs(v[columns] - vel[i]).max() < 1e-12
        if i < len(times) - 1:
            assert np.abs(a[columns] - acc[i]).max() < 1e-9 and index == i + 1
        assert np.abs(p[others] - q[7:][others]).max() < 1e-12  # held
    _check_derivatives(trajectory, 3.0, 5.0)


def test_a_first_point_at_the_start_has_no_segment_from_the_measured_state() -> None:
    q, _ = rest_state()
    target = (q[7:] + 0.05).tolist()
    wp = waypoints([0.0, 1.0], [target, target], [[0.0] * N] * 2)
    trajectory = JointTrajectory.start(wp, 5.0, q[7:], np.zeros(N))
    assert trajectory.start_time == 5.0
    assert np.abs(trajectory.sample(5.0)[0] - target).max() < 1e-12  # JTC: no interpolation


# ------------------------------------------------------------------------------ the law
def test_computed_torque_gives_the_commanded_joint_accelerations() -> None:
    """Forward dynamics (ABA, base free) under tau = H* phiddot_c + c*: phiddot = phiddot_c."""
    rng = np.random.default_rng(3)
    q, _ = rest_state()
    v = np.r_[rng.normal(0, 0.05, 6), rng.normal(0, 0.1, N)]
    desired = (q[7:] + rng.normal(0, 0.01, N), rng.normal(0, 0.05, N), rng.normal(0, 0.1, N))
    gains = TrackingGains(100.0, 20.0)
    tau = computed_torque(MODEL, q, v, desired, gains)
    assert np.all(np.abs(tau) < MODEL.effort_limit)  # not clipped: the identity is exact
    commanded = desired[2] + 100.0 * (desired[0] - q[7:]) + 20.0 * (desired[1] - v[6:])
    a = D.aba(MODEL, q, v, tau)
    assert np.abs(a[6:] - commanded).max() < 1e-9 * max(1.0, np.abs(commanded).max())


def run_closed_loop(follower: TrajectoryFollower, q, v, seconds: float, velocity_limits=True):
    """The follower at 100 Hz on the simulation engine at 1 kHz (efforts held between)."""
    sim = Engine(MODEL, q, v, dt_ns=1_000_000, velocity_limits=velocity_limits)
    updates, attitudes = [], []
    t = follower.trajectory.start_time
    for _ in range(int(round(seconds * 100))):
        snap = sim.snapshot()
        update = follower.update(t, snap.q, snap.v)
        updates.append((t, update))
        attitudes.append(snap.q[3:7].copy())
        sim.command_efforts(update.tau)
        sim.advance(10)
        t += 0.01
        if update.outcome is not None and len(updates) > 1 and updates[-2][1].outcome:
            break
    return updates, sim.snapshot(), attitudes


def slow_goal(q: np.ndarray) -> JointTrajectory:
    """Within the servicer's joint speed limits (0.2 rad/s): 0.25 rad at most over 3 s."""
    delta = np.array([0.25, -0.2, 0.15, 0.2, -0.1, 0.2, 0.1])
    wp = waypoints(
        [1.5, 3.0],
        [(q[7:] + 0.5 * delta).tolist(), (q[7:] + delta).tolist()],
        [(0.6 * delta / 3.0).tolist(), [0.0] * N],
    )
    return JointTrajectory.start(wp, 0.0, q[7:], np.zeros(N))


def test_a_trajectory_is_followed_within_its_tolerances() -> None:
    q, v = rest_state()
    trajectory = slow_goal(q)
    tolerances = Tolerances.uniform(N, 0.01, 0.002, 0.01, 1.0)
    follower = TrajectoryFollower(MODEL, trajectory, tolerances, TrackingGains())
    updates, final, _ = run_closed_loop(follower, q, v, 5.0)
    outcomes = [(t, u.outcome, u.message) for t, u in updates if u.outcome]
    assert outcomes and outcomes[0][1] == 'succeeded', outcomes
    t_done = outcomes[0][0]
    assert 3.0 <= t_done <= 3.0 + 0.2  # on time (JTC: from the last point's time on)
    worst = max(np.abs(u.error[0]).max() for t, u in updates if t < 3.0)
    assert worst < 0.01  # the path tolerance, with margin figures in the test report
    assert np.abs(final.q[7:] - trajectory.final_positions).max() < 0.002
    assert follower.outcome == 'succeeded' and not follower.active


def test_path_and_goal_violations_abort_and_hold() -> None:
    q, v = rest_state()
    # path: a tolerance no tracking can keep at the start of a move
    tight = Tolerances.uniform(N, 1e-6, 0.0, 0.0, 0.0)
    follower = TrajectoryFollower(MODEL, slow_goal(q), tight, TrackingGains())
    updates, _, _ = run_closed_loop(follower, q, v, 1.0)
    ended = [u for _, u in updates if u.outcome]
    assert ended[0].outcome == 'path_tolerance_violated'
    assert (
        'path tolerance violated at' in ended[0].message and 'position error' in ended[0].message
    )
    held = ended[0].actual[0]
    later = updates[-1][1]
    assert np.array_equal(later.desired[0], held) and not np.any(later.desired[1])
    # goal: no gain and linear segments (no feed-forward acceleration): the arm never moves;
    # aborted goal_time after the last point
    loose = Tolerances.uniform(N, 0.0, 0.01, 0.0, 0.5)
    target = q[7:] + [0.25, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]
    linear = JointTrajectory.start(waypoints([3.0], [target.tolist()]), 0.0, q[7:], np.zeros(N))
    follower = TrajectoryFollower(MODEL, linear, loose, TrackingGains(0.0, 0.0))
    updates, _, _ = run_closed_loop(follower, q, v, 5.0)
    t_end, ended = next((t, u) for t, u in updates if u.outcome)
    assert ended.outcome == 'goal_tolerance_violated'
    assert 3.5 < t_end <= 3.52 and 'goal_time 0.5 s' in ended.message
    assert 'arm_joint_1 position error 0.25' in ended.message


# ------------------------------------------------------------- reactionless correction
def test_reactionless_correction_keeps_the_base_attitude() -> None:
    """The correction moves only through the reaction null space: A v = 0 along it; followed
    on the simulation, it turns the base by a fraction of what the trajectory as sent does,
    and that one turns it by what the correction predicted (zero momentum, w0 = -A phidot)."""
    q, v = rest_state()
    trajectory = slow_goal(q)
    corrected, report = reactionless_correction(MODEL, q, trajectory, 0.01)
    assert report.steps == 300
    for t in np.linspace(0.0, 3.0, 13):
        p, rate, _, _ = corrected.sample(t)
        x = q.copy()
        x[7:] = p
        A = base_rate_map(MODEL, x)
        assert np.linalg.norm(A @ rate) < 1e-3 * max(np.linalg.norm(rate), 1e-9) + 1e-12
    # the report: the largest change, independently
    grid = np.linspace(0.0, 3.0, 301)
    change = np.array([np.abs(corrected.sample(t)[0] - trajectory.sample(t)[0]) for t in grid])
    assert report.max_change == pytest.approx(change.max(), rel=1e-9)
    assert report.joint == NAMES[int(np.argmax(change.max(axis=0)))]
    assert report.final_change == pytest.approx(change[-1].max(), rel=1e-9)
    assert 'would turn the base by' in report.summary()
    tolerances = Tolerances.uniform(N, 0.0, 0.002, 0.01, 1.0)

    def turned(trj: JointTrajectory) -> float:
        follower = TrajectoryFollower(MODEL, trj, tolerances, TrackingGains())
        updates, _, attitudes = run_closed_loop(follower, q, v, 4.5)
        assert follower.outcome == 'succeeded', [u.message for _, u in updates if u.outcome]
        return max(quat_angle(attitudes[0], a) for a in attitudes)

    sent, kept = turned(trajectory), turned(corrected)
    assert report.base_rotation == pytest.approx(sent, rel=0.05)
    assert sent > math.radians(0.5)
    assert kept < 0.05 * sent


def test_continuity_gap_sees_jumps_not_motion() -> None:
    t = np.linspace(0.0, 1.0, 101)
    a, v0 = np.array([2.0, -3.0]), np.array([0.5, 0.1])
    p = v0 * t[:, None] + 0.5 * a * t[:, None] ** 2
    v = v0 + a * t[:, None]
    gaps = [continuity_gap((t[i], p[i], v[i]), (t[i + 1], p[i + 1], v[i + 1])) for i in range(100)]
    assert max(gaps) < 1e-12  # the trapezoid is exact under a constant acceleration
    assert continuity_gap((0.0, p[0], v[0]), (0.01, p[0] + 0.3, v[0])) == pytest.approx(
        0.3 - 0.0, abs=0.01
    )


# ------------------------------------------------------------ the action's checks, no DDS
def _interfaces(measured, now, model=MODEL):
    """A TrajectoryInterfaces without node or threads: what ``request`` uses."""
    from ffsim_ros.node_support.trajectory_action import TrajectoryInterfaces

    out = object.__new__(TrajectoryInterfaces)
    out.model, out._measured, out._now = model, measured, now
    out._settings = lambda: (Tolerances.uniform(model.n, 0.0, 0.01, 0.01, 1.0), False, 0.01)
    return out


def _message(times, positions):
    from trajectory_msgs.msg import JointTrajectory as JointTrajectoryMsg
    from trajectory_msgs.msg import JointTrajectoryPoint

    msg = JointTrajectoryMsg(joint_names=NAMES)
    for t, p in zip(times, positions, strict=True):
        point = JointTrajectoryPoint(positions=[float(x) for x in p])
        point.time_from_start.sec = int(t)
        point.time_from_start.nanosec = int(round((t - int(t)) * 1e9))
        msg.points.append(point)
    return msg


@pytest.mark.ros
def test_a_trajectory_starts_from_the_state_measured_when_it_arrived(monkeypatch) -> None:
    """The time and the state are taken before the checks: checks that outlast
    ``state_timeout`` no longer leave the trajectory without a state to start from (a long
    trajectory used to be refused so, "no fresh joint_states ...")."""
    from ffsim_ros.node_support import trajectory_action

    q, v = rest_state()
    clock = {'now': 100.0}

    def measured():  # fresh for 0.2 s after 100 s
        return (q, v) if clock['now'] <= 100.2 else 'no fresh joint_states (stale)'

    def slow_check(*args, **kwargs):
        clock['now'] += 0.5  # the checks take longer than state_timeout
        return check_waypoints(*args, **kwargs)

    monkeypatch.setattr(trajectory_action, 'check_waypoints', slow_check)
    interfaces = _interfaces(measured, lambda: clock['now'])
    request = interfaces.request(_message([1.0, 2.0], [q[7:] + 0.1, q[7:] + 0.2]))
    assert request.trajectory.start_time == 100.0
    assert request.trajectory.end_time == 102.0
    np.testing.assert_allclose(request.trajectory.sample(100.0)[0], q[7:])
    # without a state at arrival: refused, naming why
    with pytest.raises(TrajectoryError, match='stale.*no state to start the trajectory from'):
        interfaces.request(_message([1.0], [q[7:]]))


@pytest.mark.ros
def test_a_message_with_too_many_points_is_refused_before_it_is_read(monkeypatch) -> None:
    """The count is checked before any point is converted (the conversion of 20 000 points
    took longer than the checks)."""
    from trajectory_msgs.msg import JointTrajectoryPoint

    from ffsim_ros.node_support import trajectory_action

    q, v = rest_state()

    def untouched(*_):
        raise AssertionError('a point was read')

    monkeypatch.setattr(trajectory_action, '_seconds', untouched)
    monkeypatch.setattr(trajectory_action, 'check_waypoints', untouched)
    msg = _message([], [])
    msg.points = [JointTrajectoryPoint()] * (MAX_POINTS + 1)
    with pytest.raises(TrajectoryError) as info:
        _interfaces(lambda: (q, v), lambda: 0.0).request(msg)
    assert info.value.kind == 'goal'
    assert str(info.value) == f'points: expected at most {MAX_POINTS} points, got {MAX_POINTS + 1}'


@pytest.mark.ros
def test_a_reactionless_correction_beyond_the_goal_tolerance_is_refused() -> None:
    """With trajectory.reactionless, a correction that ends a joint farther from the last
    point sent than its goal position tolerance is refused (INVALID_GOAL, the joint named):
    it could only end violated as JTC judges a goal (it was reported SUCCESSFUL 0.1 rad from
    the point sent); tolerances erased (-1) accept the corrected end."""
    from control_msgs.action import FollowJointTrajectory
    from control_msgs.msg import JointTolerance

    q, v = rest_state()
    interfaces = _interfaces(lambda: (q, v), lambda: 10.0)
    interfaces._settings = lambda: (Tolerances.uniform(N, 0.0, 0.01, 0.01, 1.0), True, 0.01)
    interfaces._log = lambda *args, **kwargs: None
    end = q[7:].copy()
    end[:2] += [0.1, -0.1]
    goal = FollowJointTrajectory.Goal(trajectory=_message([3.0], [end]))
    with pytest.raises(TrajectoryError) as info:
        interfaces.request(goal.trajectory, goal)
    assert info.value.kind == 'goal'
    assert 'beyond its goal tolerance 0.01' in str(info.value), str(info.value)
    # the figures, independently: the corrected end against the point sent
    sent = JointTrajectory.start(
        check_waypoints(MODEL, NAMES, [3.0], [end], [[]], [[]], [[]]), 10.0, q[7:], v[6:]
    )
    corrected, report = reactionless_correction(MODEL, q, sent, 0.01)
    miss = np.abs(corrected.final_positions - end)
    assert miss.max() > 0.01 and report.final_change == pytest.approx(miss.max(), rel=1e-9)
    worst = NAMES[int(np.argmax(miss))]
    assert f'ends {worst} {miss.max():.4g} rad from the last point sent' in str(info.value)
    goal.goal_tolerance = [JointTolerance(name=n, position=-1.0) for n in NAMES]
    request = interfaces.request(goal.trajectory, goal)
    np.testing.assert_allclose(request.trajectory.final_positions, corrected.final_positions)
    # a tolerance wider than every miss accepts it too
    goal.goal_tolerance = [
        JointTolerance(name=n, position=float(m) + 1e-6) for n, m in zip(NAMES, miss, strict=True)
    ]
    interfaces.request(goal.trajectory, goal)


@pytest.mark.ros
def test_trajectories_are_handed_over_in_the_order_received() -> None:
    """A trajectory whose checks end after those of one received later is aborted as
    preempted, never run after it (a 10 000-point goal's checks outlasted a 1-point goal sent
    30 ms later: the older ran, the newer was aborted -- or ran first, then the stale older
    one); in order, each is handed over."""
    import threading

    from ffsim_ros.node_support.trajectory_action import TrajectoryInterfaces, TrajectoryRequest

    handed: list = []
    out = object.__new__(TrajectoryInterfaces)
    out._order_lock, out._received, out._handed = threading.Lock(), 0, 0
    out._submit = handed.append
    q, _ = rest_state()
    trajectory = JointTrajectory.start(
        check_waypoints(MODEL, NAMES, [1.0], [q[7:]], [[]], [[]], [[]]), 0.0, q[7:], q[7:] * 0
    )

    def request() -> TrajectoryRequest:
        return TrajectoryRequest(trajectory, Tolerances.uniform(N, 0.0, 0.01, 0.01, 1.0))

    older, newer = out._number(), out._number()
    first, late = request(), request()
    assert out._hand_over(first, newer)
    assert not out._hand_over(late, older)
    assert handed == [first] and first.outcome is None
    assert late.done.is_set() and late.outcome[0] == 'aborted'
    assert 'preempted by a newer trajectory' in late.outcome[2]
    later = request()
    assert out._hand_over(later, out._number()) and handed == [first, later]


@pytest.mark.ros
@pytest.mark.parametrize('case', ['fresh', 'stale', 'clock standing'])
def test_a_cancel_is_left_to_the_control_loop_while_it_runs(monkeypatch, case: str) -> None:
    """The action completes a cancel itself only when the control loop cannot: the state
    stale for ``CANCEL_GRACE``, or the node's clock standing for ``CLOCK_STOOD`` (a paused
    simulation). With fresh state on an advancing clock the loop takes it at its next update,
    however long a control period lasts in wall time: at a real-time factor of 0.01 a period
    is 1 s, and a 0.5 s grace reported 'canceled while the controller had no fresh state'
    though the state was fresh. Wall time is a fake (0.25 s a look), the node clock too."""
    import threading
    import types
    import uuid

    from control_msgs.action import FollowJointTrajectory
    from unique_identifier_msgs.msg import UUID

    from ffsim_ros.node_support import trajectory_action
    from ffsim_ros.node_support.trajectory_action import (
        CANCEL_GRACE,
        CLOCK_STOOD,
        TrajectoryInterfaces,
        TrajectoryRequest,
    )

    q, v = rest_state()
    looks = {'wall': 0}
    seen_enough = threading.Event()
    limit = 4 * int(4 * max(CANCEL_GRACE, CLOCK_STOOD))  # (4 x the longest wait, in looks)

    def monotonic() -> float:  # 0.25 s of wall time per look of the waiting callback
        looks['wall'] += 1
        if looks['wall'] >= limit:
            seen_enough.set()
        return 0.25 * looks['wall']

    monkeypatch.setattr(trajectory_action, 'time', types.SimpleNamespace(monotonic=monotonic))
    monkeypatch.setattr(trajectory_action, 'WAIT_PERIOD', 0.001)
    monkeypatch.setattr(trajectory_action.rclpy, 'ok', lambda context=None: True)
    stale = 'no fresh joint_states (received at 1.000 s) at 2.000 s (state_timeout 0.5 s)'
    # the node clock: 10 ms of simulated time per wall second (real-time factor 0.01)
    clock = (lambda: 0.0) if case == 'clock standing' else (lambda: 0.01 * looks['wall'] / 4)
    interfaces = object.__new__(TrajectoryInterfaces)
    interfaces.node = types.SimpleNamespace(context=None)
    interfaces._measured = (lambda: stale) if case == 'stale' else (lambda: (q, v))
    interfaces._now = clock
    interfaces._order_lock, interfaces._numbers, interfaces._received = threading.Lock(), {}, 0
    trajectory = JointTrajectory.start(
        check_waypoints(MODEL, NAMES, [1.0], [q[7:]], [[]], [[]], [[]]), 0.0, q[7:], v[6:]
    )

    class Handle:  # the goal handle's surface the execute callback uses
        request = FollowJointTrajectory.Goal()
        goal_id = UUID(uuid=list(uuid.uuid4().bytes))
        is_cancel_requested = True
        ended = None

        def canceled(self) -> None:
            self.ended = 'canceled'

        def abort(self) -> None:
            self.ended = 'aborted'

        def succeed(self) -> None:
            self.ended = 'succeeded'

    handle = Handle()
    request = TrajectoryRequest(trajectory, Tolerances.uniform(N, 0.0, 0.01, 0.01, 1.0), handle)
    interfaces.request = lambda *args: request
    interfaces._hand_over = lambda request, number: True
    results: list = []
    worker = threading.Thread(target=lambda: results.append(interfaces._execute(handle)))
    worker.start()
    for _ in range(3000):  # until the fake wall time reached 4 x the longest wait, or the end
        if seen_enough.is_set() or not worker.is_alive():
            break
        worker.join(0.01)
    if case == 'fresh':  # left to the control loop, which takes it at its next update
        assert request.outcome is None, request.outcome
        request.finish('canceled', 0, 'canceled 0.020 s into the trajectory: holding')
    worker.join(30)
    assert not worker.is_alive() and handle.ended == 'canceled'
    text = results[0].error_string
    if case == 'fresh':
        assert text == 'canceled 0.020 s into the trajectory: holding', text
    elif case == 'stale':
        assert text.startswith(
            f'canceled while the controller had no fresh state to follow it with ({stale})'
        ), text
    else:
        assert text.startswith('canceled while the controller clock stood still for 2.0 s'), text


# ------------------------------------------------------------------------------ over DDS
class Arm:
    """Test-side node: FollowJointTrajectory client, simulator reset client, recordings."""

    def __init__(self, node, executor, wait_until) -> None:
        from control_msgs.action import FollowJointTrajectory
        from rclpy.action import ActionClient
        from sensor_msgs.msg import JointState
        from simulation_interfaces.srv import ResetSimulation
        from std_msgs.msg import Float64MultiArray
        from trajectory_msgs.msg import JointTrajectory

        self.node, self.executor, self.wait_until = node, executor, wait_until
        executor.add_node(node)
        self.joints: list = []
        self.cmd: list[tuple[int, np.ndarray]] = []  # (joint_states seen so far, efforts)
        self.subs = [
            node.create_subscription(JointState, 'joint_states', self.joints.append, 1000),
            node.create_subscription(
                Float64MultiArray,
                'joint_effort_commands',
                lambda m: self.cmd.append((len(self.joints), np.array(m.data))),
                1000,
            ),
        ]
        self.action = ActionClient(
            node, FollowJointTrajectory, '/ffsim_reactionless_controller/follow_joint_trajectory'
        )
        self.reset = node.create_client(ResetSimulation, '/ffsim_simulator/reset_simulation')
        self.topic = node.create_publisher(
            JointTrajectory, '/ffsim_reactionless_controller/joint_trajectory', 10
        )

    def spin_until(self, predicate, timeout: float = 30.0) -> bool:
        return self.wait_until(predicate, timeout, self.executor)

    def connect(self) -> None:
        assert self.spin_until(
            lambda: (
                all(s.get_publisher_count() > 0 for s in self.subs)
                and self.action.server_is_ready()
                and self.reset.service_is_ready()
                and self.topic.get_subscription_count() > 0
                and len(self.cmd) > 5
                and len(self.joints) > 5
            ),
            60,
        ), 'simulator/controller not discovered'

    @property
    def position(self) -> np.ndarray:
        return np.array(self.joints[-1].position)

    @property
    def time(self) -> float:
        s = self.joints[-1].header.stamp
        return s.sec + s.nanosec * 1e-9

    def goal(self, names, times, positions, velocities=None, path=0.0, goal=0.0):
        from control_msgs.action import FollowJointTrajectory
        from control_msgs.msg import JointTolerance
        from trajectory_msgs.msg import JointTrajectoryPoint

        out = FollowJointTrajectory.Goal()
        out.trajectory.joint_names = list(names)
        for k, (t, p) in enumerate(zip(times, positions, strict=True)):
            point = JointTrajectoryPoint(positions=[float(x) for x in p])
            if velocities is not None:
                point.velocities = [float(x) for x in velocities[k]]
            point.time_from_start.sec = int(t)
            point.time_from_start.nanosec = int(round((t - int(t)) * 1e9))
            out.trajectory.points.append(point)
        out.path_tolerance = [JointTolerance(name=n, position=path) for n in names if path]
        out.goal_tolerance = [JointTolerance(name=n, position=goal) for n in names if goal]
        return out

    def send(self, goal, feedback: list | None = None):
        sent = self.action.send_goal_async(
            goal, feedback_callback=None if feedback is None else feedback.append
        )
        assert self.spin_until(sent.done)
        handle = sent.result()
        assert handle.accepted
        return handle

    def result(self, handle, timeout: float = 60.0):
        future = handle.get_result_async()
        assert self.spin_until(future.done, timeout)
        return future.result()


def _with_component_tolerance(goal: object) -> object:
    from control_msgs.msg import JointComponentTolerance

    goal.component_path_tolerance = [
        JointComponentTolerance(joint_name='bogus', component=99, position=math.nan)
    ]
    return goal


@pytest.mark.ros
def test_follow_joint_trajectory_over_dds(ros_process, ros_node, ros_executor, wait_until):
    from action_msgs.msg import GoalStatus
    from control_msgs.action import FollowJointTrajectory
    from control_msgs.msg import JointTolerance
    from rclpy.parameter import Parameter
    from rclpy.parameter_client import AsyncParameterClient
    from simulation_interfaces.msg import Result
    from simulation_interfaces.srv import ResetSimulation

    R = FollowJointTrajectory.Result
    sim = ros_process('ffsim_ros.simulator', ros_args=['-p', 'real_time_factor:=0.5'], name='sim')
    ctl = ros_process(
        'ffsim_ros.reactionless_controller',
        ros_args=['-p', 'use_sim_time:=true', '-p', 'mode:=joint_pd'],
        name='controller',
    )
    arm = Arm(ros_node('probe'), ros_executor, wait_until)
    arm.connect()
    names = NAMES[:3]
    start = arm.position

    # bad goals: the standard error codes, the culprit named, nothing moves
    for goal, code, text in (
        (
            arm.goal(['arm_joint_1', 'wrist'], [1.0], [[0.1, 0.1]]),
            R.INVALID_JOINTS,
            "unknown joints ['wrist']",
        ),
        (
            arm.goal(names, [1.0, 0.5], [[0.1] * 3, [0.2] * 3]),
            R.INVALID_GOAL,
            'strictly increasing, got 1 s at point 0 then 0.5 s',
        ),
        (
            arm.goal(names, [1.0], [[0.1, math.nan, 0.1]]),
            R.INVALID_GOAL,
            "points[0].positions: expected finite values, got {'arm_joint_2': nan}",
        ),
        (  # a multi-DOF joint's component tolerance could not be checked: refused, not ignored
            _with_component_tolerance(arm.goal(names, [1.0], [[0.1] * 3])),
            R.INVALID_JOINTS,
            'component_path_tolerance: expected none (no multi-DOF joints: their tolerances '
            "could not be checked), got 1 for ['bogus']",
        ),
    ):
        reply = arm.result(arm.send(goal))
        assert reply.status == GoalStatus.STATUS_ABORTED
        assert reply.result.error_code == code and text in reply.result.error_string, (
            reply.result.error_string
        )

    # followed within its tolerances: feedback at the control rate, success on time. The
    # simulator runs at half real time and the path tolerance allows for the loop's latency:
    # the simulator does not wait for the controller (another process, on a shared machine),
    # and a late command is a tracking error (1.6e-3 to 1.6e-2 rad measured in real time)
    target = start[:3] + [0.3, -0.25, 0.2]
    feedback: list = []
    t0 = arm.time
    handle = arm.send(
        arm.goal(
            names,
            [1.0, 2.0],
            [start[:3] + 0.5 * (target - start[:3]), target],
            [0.5 * (target - start[:3]) / 1.0 * 1.2, [0.0] * 3],
            path=0.05,
            goal=0.005,
        ),
        feedback,
    )
    reply = arm.result(handle)
    assert reply.status == GoalStatus.STATUS_SUCCEEDED, reply.result.error_string
    assert reply.result.error_code == R.SUCCESSFUL
    first = reply.result.error_string
    assert 'goal reached' in first
    assert len(feedback) >= 100  # 2 s at 100 Hz, a few may be dropped after the result
    errors = np.array([f.feedback.error.positions for f in feedback])
    worst_path = np.abs(errors[:, :3]).max()
    assert worst_path <= 0.05
    assert arm.spin_until(lambda: arm.time > t0 + 3.0)
    final = arm.position
    assert np.abs(final[:3] - target).max() <= 0.005, final[:3] - target
    assert np.abs(final[3:] - start[3:]).max() <= 0.005  # the other joints held
    print(
        f'trajectory: worst path error {worst_path:.2e} rad, final error '
        f'{np.abs(final[:3] - target).max():.2e} rad, {len(feedback)} feedbacks'
    )

    # a cancel mid-way: canceled, the position reached held
    back = start[:3]
    handle = arm.send(arm.goal(names, [4.0], [back]), feedback := [])
    assert arm.spin_until(lambda: len(feedback) >= 100)  # ~1 s in
    cancelling = handle.cancel_goal_async()
    assert arm.spin_until(cancelling.done)
    reply = arm.result(handle)
    assert reply.status == GoalStatus.STATUS_CANCELED
    assert 'canceled' in reply.result.error_string
    at_cancel, t_cancel = arm.position, arm.time
    assert np.abs(at_cancel[:3] - target).max() > 0.05  # it had moved
    assert np.abs(at_cancel[:3] - back).max() > 0.05  # and was not there yet
    assert arm.spin_until(lambda: arm.time > t_cancel + 1.0)
    drift = np.abs(arm.position - at_cancel).max()
    assert drift < 0.01, drift

    # preempted by a joint_trajectory message: the goal aborted saying so, the topic's
    # trajectory followed to its end
    handle = arm.send(arm.goal(names, [3.0], [target]), feedback := [])
    assert arm.spin_until(lambda: len(feedback) >= 30)
    mid = 0.5 * (start[:3] + target)
    message = arm.goal(names, [1.5], [mid]).trajectory
    arm.topic.publish(message)
    reply = arm.result(handle)
    assert reply.status == GoalStatus.STATUS_ABORTED
    assert reply.result.error_code == R.INVALID_GOAL
    assert 'preempted by a newer trajectory' in reply.result.error_string
    t_sent = arm.time
    assert arm.spin_until(lambda: arm.time > t_sent + 2.5)
    assert np.abs(arm.position[:3] - mid).max() < 0.01, arm.position[:3] - mid

    # a reset of the simulation mid-way: the goal aborted naming the reset (the simulator
    # announces it, whatever the arm moved: test_resets.py), no torque spike
    handle = arm.send(arm.goal(names, [3.0], [target]), feedback := [])
    assert arm.spin_until(lambda: len(feedback) >= 50)
    future = arm.reset.call_async(
        ResetSimulation.Request(scope=ResetSimulation.Request.SCOPE_STATE)
    )
    assert arm.spin_until(future.done) and future.result().result.result == Result.RESULT_OK
    reply = arm.result(handle)
    assert reply.status == GoalStatus.STATUS_ABORTED
    assert reply.result.error_code == R.INVALID_GOAL
    assert 'the simulation was reset (reset_simulation: state' in reply.result.error_string, (
        reply.result.error_string
    )
    after = len(arm.cmd)
    assert arm.spin_until(lambda: len(arm.cmd) > after + 50)
    peak = max(np.abs(tau).max() for _, tau in arm.cmd[after:])
    moving = max(np.abs(tau).max() for _, tau in arm.cmd[:after])
    print(f'reset: peak effort after it {peak:.3g} N m (while following: {moving:.3g} N m)')
    # kept, the trajectory would pull the arm from the reset pose at kp 100: efforts of the
    # order of those while following; dropped, the arm at rest is held with next to none
    assert peak < 1e-2 * moving, (peak, moving)

    # a reset of the time mid-way (the clock goes back): aborted too
    handle = arm.send(arm.goal(names, [3.0], [target]), feedback := [])
    assert arm.spin_until(lambda: len(feedback) >= 20)
    future = arm.reset.call_async(
        ResetSimulation.Request(scope=ResetSimulation.Request.SCOPE_TIME)
    )
    assert arm.spin_until(future.done) and future.result().result.result == Result.RESULT_OK
    reply = arm.result(handle)
    assert reply.status == GoalStatus.STATUS_ABORTED
    assert 'went back' in reply.result.error_string, reply.result.error_string

    # corrected into the reaction null space: the base turns far less than the first time
    turned = float(re.search(r'base turned by up to ([\d.]+) deg', first).group(1))
    params = ros_node('params')
    ros_executor.add_node(params)
    client = AsyncParameterClient(params, 'ffsim_reactionless_controller')
    assert arm.spin_until(lambda: client.services_are_ready(), 30)
    future = client.set_parameters([Parameter('trajectory.reactionless', value=True)])
    assert arm.spin_until(future.done) and future.result().results[0].successful
    reset = arm.reset.call_async(
        ResetSimulation.Request(scope=ResetSimulation.Request.SCOPE_STATE)
    )
    assert arm.spin_until(reset.done)
    t_reset = arm.time
    assert arm.spin_until(lambda: arm.time > t_reset + 0.5)  # after the jump
    # with the default goal tolerances the corrected end is beyond them: refused, unmoved
    count = len(arm.joints)
    reply = arm.result(arm.send(arm.goal(names, [2.0], [target])))
    assert reply.status == GoalStatus.STATUS_ABORTED
    assert reply.result.error_code == FollowJointTrajectory.Result.INVALID_GOAL
    assert 'beyond its goal tolerance' in reply.result.error_string, reply.result.error_string
    assert arm.spin_until(lambda: len(arm.joints) > count + 20)
    moved = np.ptp([m.position for m in arm.joints[count:]], axis=0)
    assert moved.max() < 1e-3, moved
    # the corrected end accepted (goal position tolerances not checked): succeeded
    accepting = arm.goal(names, [2.0], [target])
    accepting.goal_tolerance = [JointTolerance(name=n, position=-1.0) for n in NAMES]
    reply = arm.result(arm.send(accepting))
    assert reply.status == GoalStatus.STATUS_SUCCEEDED, reply.result.error_string
    text = reply.result.error_string
    assert 'reactionless correction' in text, text
    corrected = float(re.search(r'base turned by up to ([\d.]+) deg', text).group(1))
    print(f'reactionless correction: base turned {corrected:.4f} deg (uncorrected {turned:.3f})')
    assert corrected < 0.1 * turned, text
    assert sim.is_running() and ctl.is_running()


@pytest.mark.ros
@pytest.mark.parametrize(
    ('remaps', 'expected'),
    [
        # command-line remap of the action (as MoveIt's controller names ask)
        (
            ['-r', '~/follow_joint_trajectory:=/arm_controller/follow_joint_trajectory'],
            '/arm_controller/follow_joint_trajectory',
        ),
        # a relative target resolves in the controller's namespace
        (
            ['-r', '__ns:=/r1', '-r', '~/follow_joint_trajectory:=arm/follow_joint_trajectory'],
            '/r1/arm/follow_joint_trajectory',
        ),
        # no remap of the action: under the node's name, namespace and name remaps applied
        (['-r', '__ns:=/r1', '-r', '__node:=ctl'], '/r1/ctl/follow_joint_trajectory'),
    ],
)
def test_the_trajectory_action_follows_the_controller_nodes_remaps(
    ros_domain_id: int, wait_until, remaps: list[str], expected: str
) -> None:
    """The action server is where the controller node's remaps put ``~/follow_joint_trajectory``
    (it lives on a companion node without the command line's arguments: a remap of the action
    was ignored, the action staying at ``<node>/follow_joint_trajectory``). Read from the
    ROS graph of this process (its own endpoints; no other process)."""
    import rclpy
    from rclpy.action import get_action_server_names_and_types_by_node
    from rclpy.context import Context

    from ffsim_ros.reactionless_controller import ReactionlessControllerNode

    context = Context()
    rclpy.init(args=['--ros-args', *remaps], context=context, domain_id=ros_domain_id)
    try:
        node = ReactionlessControllerNode(context=context)
        try:
            action_node = node.trajectories.action_node

            def served() -> list[str]:
                return [
                    name
                    for name, _ in get_action_server_names_and_types_by_node(
                        action_node, action_node.get_name(), action_node.get_namespace()
                    )
                ]

            assert wait_until(lambda: served() == [expected], 10.0), served()
            assert node.trajectories.action_name == expected
        finally:
            node.destroy_node()
    finally:
        context.try_shutdown()
