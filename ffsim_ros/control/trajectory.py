"""Joint trajectories followed by computed torque on the free-floating dynamics (no ROS).

What ``ffsim_reactionless_controller`` runs for ``control_msgs/FollowJointTrajectory`` goals
and ``trajectory_msgs/JointTrajectory`` messages, with the semantics of ros2_controllers'
``joint_trajectory_controller`` (JTC) wherever it has them:

* **Checks** (:func:`check_waypoints`): no more names than the robot has joints (checked
  before any name is looked at), known joints, each once (any subset of the arm: the
  others hold their position); at least one point and at most :data:`MAX_POINTS` (10 000,
  also counted before any per-point work; the per-point checks are vectorized, milliseconds
  for the most); ``time_from_start`` strictly increasing and not negative; per point, one
  position per joint, velocities and accelerations empty or one per joint, no effort (the
  law computes the torques), every value finite, positions within the joints' limits, the
  last velocities zero (up to JTC's ``float`` epsilon). A refusal names the culprit (point,
  field, joint, value) and its kind: ``'joints'`` (INVALID_JOINTS) or ``'goal'``
  (INVALID_GOAL).
* **Interpolation** (:class:`JointTrajectory`), JTC's ``spline`` method: between two points
  a quintic polynomial where both give positions, velocities and accelerations, a cubic where
  both give positions and velocities, else linear (positions only); from the state measured
  when the trajectory starts (positions, velocities, zero accelerations) to the first point;
  after the last point, its position held. A trajectory whose first point is at the start
  time begins there (no segment from the measured state), as in JTC.
* **Control law** (:func:`computed_torque`): ``phiddot_c = a_d + K_p (p_d - p) + K_v (v_d -
  v)`` turned into torques on the unactuated-base dynamics, ``tau = H* phiddot_c + c*`` with
  ``H*`` and ``c*`` of :func:`ffsim_ros.dynamics.free_floating_terms` ([S0 eq. 39] with no
  base wrench, the base acceleration eliminated), clipped to the effort limits. With exact
  dynamics the error obeys ``e'' + K_v e' + K_p e = 0`` between two control updates.
* **Tolerances and outcome** (:class:`TrajectoryFollower`, JTC's rules): before the last
  point's time (and at the first sample, as JTC: a single point at the start time), a joint
  beyond its path tolerance (position or velocity) aborts the
  trajectory (PATH_TOLERANCE_VIOLATED) and holds the position reached; from that time on,
  every joint within its goal tolerance (position, and velocity: the stopped-velocity
  tolerance) succeeds and holds the last point; still outside ``goal_time`` after it aborts
  (GOAL_TOLERANCE_VIOLATED), ``goal_time`` 0 waits without limit. A tolerance of 0 is not
  checked; acceleration tolerances are never violated (no acceleration is measured, as in JTC
  without an acceleration state interface).
* **Reactionless correction** (:func:`reactionless_correction`): the joint rates that leave
  the base attitude alone under zero momentum are the null space of ``A``, ``w0 = -A
  phidot`` [S0 eq. 21] (:func:`~ffsim_ros.control.reactionless.reactionless_basis`). The
  corrected trajectory integrates the projection of the trajectory's velocities onto that
  null space, ``phi_c' = N N^T phidot_d(t)`` (Heun's method on a grid), from the start
  state: it moves the joints through reactionless motions only, as close to the original as
  the projection allows; it no longer passes the original waypoints exactly (the reaction
  null space is not integrable), and :class:`Correction` says by how much it differs and how
  much the original would have turned the base.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import chain
from typing import NamedTuple

import numpy as np

import ffsim_ros.dynamics as D
from ffsim_ros.dynamics.lie import quat_angle, quat_exp, quat_multiply

from .reactionless import base_rate_map, reactionless_basis

#: Error kinds of :class:`TrajectoryError` (FollowJointTrajectory's INVALID_JOINTS,
#: INVALID_GOAL and OLD_HEADER_TIMESTAMP).
ERROR_KINDS = ('joints', 'goal', 'old')
#: Outcomes of :class:`TrajectoryFollower` (SUCCESSFUL, PATH_ and GOAL_TOLERANCE_VIOLATED).
OUTCOMES = ('succeeded', 'path_tolerance_violated', 'goal_tolerance_violated')
#: Most grid steps of :func:`reactionless_correction` (a longer trajectory gets longer steps).
MAX_CORRECTION_STEPS = 2000
#: Most points of a trajectory (:func:`check_waypoints`; more are refused before any per-point
#: work). 100 s at 100 Hz: more than any planner sends (MoveIt: tens to hundreds), few enough
#: that the checks and the conversion take milliseconds, not the control loop's time.
MAX_POINTS = 10_000
#: The last point's velocities count as zero up to this [rad/s | m/s]: JTC's threshold
#: (``std::numeric_limits<float>::epsilon()``; a planner's round-off, 1e-17, is no motion).
LAST_VELOCITY_ZERO = float(np.finfo(np.float32).eps)


class TrajectoryError(ValueError):
    """A trajectory refused.

    Parameters
    ----------
    kind : str, one of :data:`ERROR_KINDS`.
    message : str.
    """

    def __init__(self, kind: str, message: str) -> None:
        if kind not in ERROR_KINDS:
            raise ValueError(f'kind: expected one of {ERROR_KINDS}, got {kind!r}')
        super().__init__(message)
        self.kind = kind


@dataclass(frozen=True)
class Waypoints:
    """A checked trajectory (:func:`check_waypoints`).

    Attributes
    ----------
    joints : (m,) indices of its joints in the model's joint order (the message's order).
    times : (k,) ``time_from_start`` of the points [s], strictly increasing, >= 0.
    positions : (k, m) [rad | m].
    velocities, accelerations : k entries, each (m,) or None (not given at that point).
    """

    joints: tuple[int, ...]
    times: np.ndarray
    positions: np.ndarray
    velocities: tuple[np.ndarray | None, ...]
    accelerations: tuple[np.ndarray | None, ...]


def _finite_or_raise(point: int, field: str, names: Sequence[str], values: np.ndarray) -> None:
    bad = {n: float(x) for n, x in zip(names, values, strict=True) if not math.isfinite(x)}
    if bad:
        raise TrajectoryError(
            'goal', f'points[{point}].{field}: expected finite values, got {bad}'
        )


def _first(mask: np.ndarray) -> int | None:
    """The index of the first true entry of ``mask`` (1-D), None without one."""
    hits = np.flatnonzero(mask)
    return int(hits[0]) if hits.size else None


def _lengths(rows: Sequence[Sequence[float]], k: int) -> np.ndarray:
    """(k,) the length of each of the first ``k`` entries of ``rows`` (0 past its end)."""
    out = np.zeros(k, dtype=np.int64)
    given = min(k, len(rows))
    out[:given] = np.fromiter(map(len, rows[:given]), dtype=np.int64, count=given)
    return out


def _stack(rows: Sequence[Sequence[float]], which: np.ndarray, m: int) -> np.ndarray:
    """(len(which), m) the entries ``which`` of ``rows`` (each of ``m`` values) as floats."""
    values = chain.from_iterable(rows[i] for i in which.tolist())
    return np.fromiter(values, dtype=float, count=which.size * m).reshape(which.size, m)


def check_waypoints(
    model: D.Model,
    joint_names: Sequence[str],
    times: Sequence[float],
    positions: Sequence[Sequence[float]],
    velocities: Sequence[Sequence[float]],
    accelerations: Sequence[Sequence[float]],
    efforts: Sequence[Sequence[float]] = (),
) -> Waypoints:
    """Check a trajectory (module docstring) and return it as :class:`Waypoints`.

    The counts are checked first (names, then points: at most :data:`MAX_POINTS`), so a huge
    message costs no more than a short one; the per-point checks are vectorized (a few
    milliseconds for :data:`MAX_POINTS` points). Each kind of check runs over all the points
    before the next kind: the refusal names the first point failing the first check failed.

    Parameters
    ----------
    model : Model, floating base and one-DoF joints (their limits are checked).
    joint_names : (m,) the joints, in the order of the point fields.
    times : (k,) ``time_from_start`` of each point [s].
    positions, velocities, accelerations, efforts : (k, m) sequences
        The point fields, joint order of ``joint_names``: [rad | m], [rad/s | m/s],
        [rad/s^2 | m/s^2], [N m | N] (an empty entry: the field is not given at that point;
        ``velocities``, ``accelerations`` and ``efforts`` may be shorter: not given at the
        points past their end).

    Raises
    ------
    TrajectoryError
        ``'joints'``: no joint, an unknown, repeated or multi-DoF joint; ``'goal'``: anything
        else (also more than :data:`MAX_POINTS` points), naming the point, the field and the
        joint.
    """
    known = list(model.joint_names)
    if len(joint_names) > len(known):
        # before any per-name work: a huge message costs no more than a short one
        raise TrajectoryError(
            'joints',
            f'joint_names: expected at most {len(known)} names (each joint once), '
            f'got {len(joint_names)}',
        )
    k = len(times)
    if k > MAX_POINTS:  # before any per-point work, likewise
        raise TrajectoryError('goal', f'points: expected at most {MAX_POINTS} points, got {k}')
    if len(positions) != k:
        raise TrajectoryError(
            'goal',
            f'points: expected {k} entries of positions (one per time), got {len(positions)}',
        )
    names = list(joint_names)
    if not names:
        raise TrajectoryError('joints', 'joint_names: expected at least one joint, got none')
    known_set = set(known)
    unknown = [n for n in names if n not in known_set]
    if unknown:
        raise TrajectoryError(
            'joints', f'joint_names: unknown joints {unknown}; expected names among {known}'
        )
    repeated = sorted(n for n, count in Counter(names).items() if count > 1)
    if repeated:
        raise TrajectoryError('joints', f'joint_names: joints named more than once: {repeated}')
    multi = [n for n in names if model.nvs[model.joint_index(n)] != 1]
    if multi:
        raise TrajectoryError('joints', f'joint_names: joints with several DoFs: {multi}')
    if k == 0:
        raise TrajectoryError('goal', 'points: expected at least one point, got none')
    t = np.fromiter(times, dtype=float, count=k)
    invalid = ~np.isfinite(t) | (t < 0.0)
    not_increasing = np.zeros(k, dtype=bool)
    not_increasing[1:] = t[1:] <= t[:-1]
    i = _first(invalid | not_increasing)
    if i is not None and invalid[i]:
        raise TrajectoryError(
            'goal', f'points[{i}].time_from_start: expected a time >= 0, got {t[i]} s'
        )
    if i is not None:
        raise TrajectoryError(
            'goal',
            f'points[{i}].time_from_start: expected times strictly increasing, got '
            f'{t[i - 1]:g} s at point {i - 1} then {t[i]:g} s at point {i}',
        )
    m = len(names)
    index = tuple(model.joint_index(n) for n in names)
    lower, upper = model.lower[list(index)], model.upper[list(index)]
    sizes = {
        'positions': _lengths(positions, k),
        'velocities': _lengths(velocities, k),
        'accelerations': _lengths(accelerations, k),
    }
    wrong = np.c_[
        sizes['positions'] != m,
        (sizes['velocities'] != m) & (sizes['velocities'] != 0),
        (sizes['accelerations'] != m) & (sizes['accelerations'] != 0),
    ]
    i = _first(np.any(wrong, axis=1))
    if i is not None:
        field = tuple(sizes)[_first(wrong[i])]
        required = 'required' if field == 'positions' else 'or none'
        raise TrajectoryError(
            'goal',
            f'points[{i}].{field}: expected {m} values (one per joint, {required}), '
            f'got {sizes[field][i]}',
        )
    effort = _lengths(efforts, k)
    i = _first(effort)
    if i is not None:
        raise TrajectoryError(
            'goal',
            f'points[{i}].effort: expected none (the controller computes the torques), '
            f'got {effort[i]} values',
        )
    pos = _stack(positions, np.arange(k), m)
    i = _first(~np.all(np.isfinite(pos), axis=1))
    if i is not None:
        _finite_or_raise(i, 'positions', names, pos[i])
    outside = (pos < lower) | (pos > upper)
    i = _first(np.any(outside, axis=1))
    if i is not None:
        beyond = [
            f'{names[j]} at {pos[i, j]:g} (limits [{lower[j]:g}, {upper[j]:g}])'
            for j in np.flatnonzero(outside[i])
        ]
        raise TrajectoryError(
            'goal', f'points[{i}].positions: beyond the joint limits: {", ".join(beyond)}'
        )
    optional: dict[str, list[np.ndarray | None]] = {}
    for field, rows in (('velocities', velocities), ('accelerations', accelerations)):
        given = np.flatnonzero(sizes[field])
        values = _stack(rows, given, m)
        r = _first(~np.all(np.isfinite(values), axis=1))
        if r is not None:
            _finite_or_raise(int(given[r]), field, names, values[r])
        out: list[np.ndarray | None] = [None] * k
        for i, row in zip(given.tolist(), values, strict=True):
            out[i] = row
        optional[field] = out
    vel = optional['velocities']
    if vel[-1] is not None and np.any(np.abs(vel[-1]) > LAST_VELOCITY_ZERO):
        moving = {
            n: float(x) for n, x in zip(names, vel[-1], strict=True) if abs(x) > LAST_VELOCITY_ZERO
        }
        raise TrajectoryError(
            'goal', f'points[{k - 1}].velocities: expected zero at the last point, got {moving}'
        )
    return Waypoints(index, t, pos, tuple(vel), tuple(optional['accelerations']))


# ------------------------------------------------------------------------ interpolation
class _Point(NamedTuple):
    time: float  # absolute [s]
    p: np.ndarray  # (n,)
    v: np.ndarray | None
    a: np.ndarray | None


def _segment(a: _Point, b: _Point, t: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Position, velocity and acceleration at ``t`` between ``a`` and ``b`` (JTC's spline:
    quintic, cubic or linear after the fields both points give)."""
    T = b.time - a.time
    s = min(max(t - a.time, 0.0), T)
    p0, p1 = a.p, b.p
    if a.v is None or b.v is None:
        slope = (p1 - p0) / T if T > 0.0 else np.zeros_like(p0)
        return p0 + s * slope, slope, np.zeros_like(p0)
    v0, v1 = a.v, b.v
    if a.a is None or b.a is None:
        c2 = (-3.0 * p0 + 3.0 * p1 - 2.0 * v0 * T - v1 * T) / T**2
        c3 = (2.0 * p0 - 2.0 * p1 + v0 * T + v1 * T) / T**3
        return (
            p0 + v0 * s + c2 * s**2 + c3 * s**3,
            v0 + 2.0 * c2 * s + 3.0 * c3 * s**2,
            2.0 * c2 + 6.0 * c3 * s,
        )
    a0, a1 = a.a, b.a
    c2 = 0.5 * a0
    c3 = (-20.0 * p0 + 20.0 * p1 - 3.0 * a0 * T**2 + a1 * T**2 - 12.0 * v0 * T - 8.0 * v1 * T) / (
        2.0 * T**3
    )
    c4 = (
        30.0 * p0 - 30.0 * p1 + 3.0 * a0 * T**2 - 2.0 * a1 * T**2 + 16.0 * v0 * T + 14.0 * v1 * T
    ) / (2.0 * T**4)
    c5 = (-12.0 * p0 + 12.0 * p1 - a0 * T**2 + a1 * T**2 - 6.0 * v0 * T - 6.0 * v1 * T) / (
        2.0 * T**5
    )
    return (
        p0 + v0 * s + c2 * s**2 + c3 * s**3 + c4 * s**4 + c5 * s**5,
        v0 + 2.0 * c2 * s + 3.0 * c3 * s**2 + 4.0 * c4 * s**3 + 5.0 * c5 * s**4,
        2.0 * c2 + 6.0 * c3 * s + 12.0 * c4 * s**2 + 20.0 * c5 * s**3,
    )


class JointTrajectory:
    """A trajectory of every joint of a model, sampled in absolute time (module docstring).

    Build one with :meth:`start` (from :class:`Waypoints` and the measured state) or
    :meth:`through` (from absolute points, e.g. a corrected trajectory).

    Attributes
    ----------
    start_time, end_time : float
        When it starts (the measured state) and when it reaches its last point [s].
    """

    def __init__(
        self,
        times: np.ndarray,
        positions: np.ndarray,
        velocities: np.ndarray | None = None,
        accelerations: np.ndarray | None = None,
        waypoint_of: np.ndarray | None = None,
        given: tuple[np.ndarray, np.ndarray] | None = None,
    ) -> None:
        """The points as arrays (no object per point: 10 000 points build in milliseconds).

        Parameters
        ----------
        times : (K,) absolute times of the points [s], increasing.
        positions : (K, n) joint positions, joint order [rad | m].
        velocities, accelerations : (K, n) or None (given at no point), joint order
            [rad/s | m/s], [rad/s^2 | m/s^2].
        waypoint_of : (K,) index of each point among the waypoints (feedback); None: its own.
        given : ((K,), (K,)) bool, the points where the velocities and the accelerations are
            given; None: wherever their array is.
        """
        self._times = np.asarray(times, dtype=float)
        self._p = np.asarray(positions, dtype=float)
        k = self._times.size
        if given is None:
            given = (
                np.full(k, velocities is not None),
                np.full(k, accelerations is not None),
            )
        zeros = np.zeros_like(self._p)
        self._v = zeros if velocities is None else np.asarray(velocities, dtype=float)
        self._a = zeros if accelerations is None else np.asarray(accelerations, dtype=float)
        self._has_v, self._has_a = (np.asarray(g, dtype=bool) for g in given)
        self._waypoint_of = np.arange(k) if waypoint_of is None else np.asarray(waypoint_of)
        self.start_time = float(self._times[0])
        self.end_time = float(self._times[-1])

    def _point(self, i: int) -> _Point:
        return _Point(
            float(self._times[i]),
            self._p[i],
            self._v[i] if self._has_v[i] else None,
            self._a[i] if self._has_a[i] else None,
        )

    @classmethod
    def start(
        cls,
        waypoints: Waypoints,
        now: float,
        positions: np.ndarray,
        velocities: np.ndarray,
        origin: float | None = None,
    ) -> JointTrajectory:
        """The trajectory of ``waypoints`` from the measured state at ``now`` [s].

        Parameters
        ----------
        waypoints : Waypoints, checked (:func:`check_waypoints`).
        now : float, start time [s].
        positions, velocities : (n,) measured joint positions and velocities, joint order
            [rad | m], [rad/s | m/s].
        origin : absolute time the points' ``time_from_start`` count from (the message's
            ``header.stamp``) [s]; None: ``now``.
        """
        positions = np.asarray(positions, dtype=float)
        velocities = np.asarray(velocities, dtype=float)
        origin = now if origin is None else float(origin)
        joints = list(waypoints.joints)
        k = len(waypoints.times)
        # every point's full vectors at once (the joints not named: position held, rates 0)
        p = np.tile(positions, (k, 1))
        p[:, joints] = waypoints.positions

        def full(rows: tuple[np.ndarray | None, ...]) -> tuple[np.ndarray, np.ndarray]:
            out = np.zeros((k, positions.size))
            given = np.array([row is not None for row in rows])
            if given.any():
                out[np.ix_(given, joints)] = np.array([row for row in rows if row is not None])
            return out, given

        (v, has_v), (a, has_a) = full(waypoints.velocities), full(waypoints.accelerations)
        times = origin + waypoints.times
        waypoint_of = np.arange(k)
        if times[0] > now:  # else the first point is at (or before) the start: no segment to it
            times = np.r_[now, times]
            p = np.vstack([positions, p])
            v = np.vstack([velocities, v])
            a = np.vstack([np.zeros_like(positions), a])
            waypoint_of = np.r_[0, waypoint_of]
            has_v, has_a = np.r_[True, has_v], np.r_[True, has_a]
        return cls(times, p, v, a, waypoint_of, (has_v, has_a))

    @classmethod
    def through(
        cls, times: np.ndarray, positions: np.ndarray, velocities: np.ndarray
    ) -> JointTrajectory:
        """Cubic segments through absolute ``times`` (k,) with ``positions`` and
        ``velocities`` (k, n) (the first point is the start).

        Parameters
        ----------
        times : (k,) [s], increasing.
        positions : (k, n) joint positions [rad | m].
        velocities : (k, n) joint velocities [rad/s | m/s].
        """
        return cls(times, positions, velocities)

    def sample(self, t: float) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
        """``(position, velocity, acceleration, index)`` at time ``t`` [s]: each (n,), and the
        index (FollowJointTrajectory feedback) of the waypoint being approached (the count of
        waypoints once past the last one). Before the start: the start state.

        Parameters
        ----------
        t : float, absolute time [s].
        """
        t = max(t, self.start_time)
        if t >= self.end_time:
            last = self._p[-1]
            zero = np.zeros_like(last)
            return last.copy(), zero, zero.copy(), int(self._waypoint_of[-1]) + 1
        i = int(np.searchsorted(self._times, t, side='right'))  # between points i - 1 and i
        p, v, a = _segment(self._point(i - 1), self._point(i), t)
        return p, v, a, int(self._waypoint_of[i])

    @property
    def final_positions(self) -> np.ndarray:
        """(n,) the position of the last point."""
        return self._p[-1].copy()


# ---------------------------------------------------------------------------------- law
@dataclass(frozen=True)
class TrackingGains:
    """Gains of :func:`computed_torque`: ``kp`` [1/s^2] and ``kv`` [1/s] (critically damped
    for ``kv = 2 sqrt(kp)``)."""

    kp: float = 100.0
    kv: float = 20.0

    def __post_init__(self) -> None:
        for name in ('kp', 'kv'):
            value = getattr(self, name)
            if not math.isfinite(value) or value < 0.0:
                raise ValueError(f'{name}: expected a finite value >= 0, got {value}')


def computed_torque(
    model: D.Model,
    q: np.ndarray,
    v: np.ndarray,
    desired: tuple[np.ndarray, np.ndarray, np.ndarray],
    gains: TrackingGains,
) -> np.ndarray:
    """Joint efforts (n,) [N m | N] tracking ``desired = (p_d, v_d, a_d)`` (each (n,)) from
    the measured ``q`` (nq,), ``v`` (nv,): ``tau = H* (a_d + kp (p_d - p) + kv (v_d - v)) +
    c*`` (module docstring), clipped to the effort limits.

    Parameters
    ----------
    model : Model, floating base and one-DoF joints.
    q : (nq,) configuration [m, -, rad | m].
    v : (nv,) velocity ``[V0, w0, phidot]``, base parts inertial frame [m/s, rad/s, rad/s | m/s].
    desired : ``(p_d, v_d, a_d)``, (n,) each, joint order [rad | m, rad/s | m/s, rad/s^2 | m/s^2].
    gains : TrackingGains.

    Returns
    -------
    (n,) ndarray
    """
    p_d, v_d, a_d = desired
    ff = D.free_floating_terms(model, q, v)
    phiddot = a_d + gains.kp * (p_d - q[7:]) + gains.kv * (v_d - v[6:])
    tau = ff.H_star @ phiddot + ff.c_star
    limit = model.effort_limit
    return np.clip(tau, -limit, limit)


# ----------------------------------------------------------------------------- outcome
@dataclass(frozen=True)
class Tolerances:
    """Tolerances of a trajectory, per joint in joint order (0: not checked).

    Attributes
    ----------
    path : (n, 3) position [rad | m], velocity, acceleration while moving.
    goal : (n, 3) the same from the last point's time on (velocity: stopped velocity).
    goal_time : float
        Seconds after the last point's time to get within the goal tolerances (0: no limit).
    """

    path: np.ndarray
    goal: np.ndarray
    goal_time: float

    @classmethod
    def uniform(
        cls, n: int, path: float, goal: float, stopped_velocity: float, goal_time: float
    ) -> Tolerances:
        """The same position tolerances for every joint (a controller's defaults).

        Parameters
        ----------
        n : int, the joint count.
        path, goal : float, position tolerances [rad | m].
        stopped_velocity : float [rad/s | m/s].
        goal_time : float [s] (0: no limit).
        """
        return cls(
            np.tile([path, 0.0, 0.0], (n, 1)),
            np.tile([goal, stopped_velocity, 0.0], (n, 1)),
            float(goal_time),
        )

    def overridden(
        self,
        model: D.Model,
        path: Sequence[tuple[str, float, float, float]] = (),
        goal: Sequence[tuple[str, float, float, float]] = (),
        goal_time: float = 0.0,
    ) -> Tolerances:
        """These tolerances with a goal's (``JointTolerance`` entries ``(name, position,
        velocity, acceleration)`` and ``goal_time_tolerance`` [s]), as JTC reads them: a value
        > 0 replaces the default, 0 keeps it, -1 erases it (not checked).

        Parameters
        ----------
        model : Model (the joint names).
        path, goal : ``(name, position, velocity, acceleration)`` entries (see above).
        goal_time : float, ``goal_time_tolerance`` [s].

        Raises
        ------
        TrajectoryError
            ``'goal'``: an unknown joint or a negative value other than -1, named.
        """

        def resolve(default: float, value: float, what: str) -> float:
            if not math.isfinite(value) or (value < 0.0 and abs(value + 1.0) > 1e-6):
                raise TrajectoryError('goal', f'{what}: expected > 0, 0 or -1, got {value}')
            return value if value > 0.0 else (0.0 if value < 0.0 else default)

        tables = {'path_tolerance': self.path.copy(), 'goal_tolerance': self.goal.copy()}
        for label, entries in (('path_tolerance', path), ('goal_tolerance', goal)):
            for name, *values in entries:
                if name not in model.joint_names:
                    raise TrajectoryError(
                        'goal',
                        f'{label}: unknown joint {name!r}; expected one of '
                        f'{list(model.joint_names)}',
                    )
                j = model.joint_index(name)
                for c, (field, value) in enumerate(
                    zip(('position', 'velocity', 'acceleration'), values, strict=True)
                ):
                    tables[label][j, c] = resolve(
                        tables[label][j, c], value, f'{label} {name} {field}'
                    )
        return Tolerances(
            tables['path_tolerance'],
            tables['goal_tolerance'],
            resolve(self.goal_time, goal_time, 'goal_time_tolerance'),
        )


def _violations(
    names: Sequence[str], error: tuple[np.ndarray, np.ndarray], tolerance: np.ndarray
) -> list[str]:
    """The joints whose position or velocity error exceeds a (non-zero) tolerance."""
    out = []
    for c, (field, e) in enumerate(zip(('position', 'velocity'), error, strict=True)):
        tol = tolerance[:, c]
        for j in np.flatnonzero((tol > 0.0) & (np.abs(e) > tol)):
            out.append(f'{names[j]} {field} error {e[j]:.4g} (tolerance {tol[j]:g})')
    return out


@dataclass(frozen=True)
class Update:
    """One control update of a :class:`TrajectoryFollower`.

    Attributes
    ----------
    tau : (n,) joint efforts [N m | N].
    desired : ``(p, v, a)`` each (n,).
    actual : ``(p, v)`` each (n,).
    error : ``(p, v)`` each (n,), desired - actual.
    index : int, feedback index (see :meth:`JointTrajectory.sample`).
    outcome : str or None, one of :data:`OUTCOMES` when the trajectory ended at this update.
    message : str, why (what succeeded or which joint violated which tolerance).
    """

    tau: np.ndarray
    desired: tuple[np.ndarray, np.ndarray, np.ndarray]
    actual: tuple[np.ndarray, np.ndarray]
    error: tuple[np.ndarray, np.ndarray]
    index: int
    outcome: str | None = None
    message: str = ''


class TrajectoryFollower:
    """Follows a :class:`JointTrajectory` within :class:`Tolerances` (module docstring).

    Once it has an outcome it holds: the last point after success, the position reached
    after a violation or :meth:`hold`.

    Parameters
    ----------
    model : Model, floating base and one-DoF joints.
    trajectory : JointTrajectory.
    tolerances : Tolerances.
    gains : TrackingGains.
    """

    def __init__(
        self,
        model: D.Model,
        trajectory: JointTrajectory,
        tolerances: Tolerances,
        gains: TrackingGains,
    ) -> None:
        if not model.single_dof_joints:
            raise ValueError('TrajectoryFollower: expected a model whose joints have one DoF')
        self.model = model
        self.trajectory = trajectory
        self.tolerances = tolerances
        self.gains = gains
        self.outcome: str | None = None
        self._hold: np.ndarray | None = None
        self._sampled = False  # (JTC checks the path tolerance on the first sample, always)

    @property
    def active(self) -> bool:
        """Whether the trajectory runs (no outcome yet)."""
        return self.outcome is None and self._hold is None

    def hold(self, positions: np.ndarray) -> None:
        """Stop following: hold ``positions`` (n,) from now (e.g. after a cancel).

        Parameters
        ----------
        positions : (n,) joint positions, joint order [rad | m].
        """
        self._hold = np.array(positions, dtype=float)

    def update(self, t: float, q: np.ndarray, v: np.ndarray) -> Update:
        """The efforts at time ``t`` [s] for the measured ``q`` (nq,), ``v`` (nv,), and the
        outcome if the trajectory ends now.

        Parameters
        ----------
        t : float, absolute time [s].
        q : (nq,) configuration [m, -, rad | m].
        v : (nv,) velocity ``[V0, w0, phidot]``, base parts inertial [m/s, rad/s, rad/s | m/s].

        Returns
        -------
        Update
        """
        q = np.asarray(q, dtype=float)
        v = np.asarray(v, dtype=float)
        actual = (q[7:].copy(), v[6:].copy())
        p_d, v_d, a_d, index = self.trajectory.sample(t)
        outcome, message = None, ''
        if self.active:
            error = (p_d - actual[0], v_d - actual[1])
            names = self.model.joint_names
            first = not self._sampled and t >= self.trajectory.start_time
            self._sampled = self._sampled or first
            if t < self.trajectory.end_time or first:  # (first: a single point at its start)
                bad = _violations(names, error, self.tolerances.path)
                if bad:
                    outcome = 'path_tolerance_violated'
                    message = (
                        f'path tolerance violated at {t - self.trajectory.start_time:.3f} s: '
                        + '; '.join(bad)
                    )
                    self._hold = actual[0]
            if outcome is None and t >= self.trajectory.end_time:
                late = t - self.trajectory.end_time
                bad = _violations(names, error, self.tolerances.goal)
                if not bad:
                    outcome, message = 'succeeded', f'goal reached {late:.3f} s after its time'
                elif self.tolerances.goal_time > 0.0 and late > self.tolerances.goal_time:
                    outcome = 'goal_tolerance_violated'
                    message = (
                        f'goal tolerance not met {late:.3f} s after the last point (goal_time '
                        f'{self.tolerances.goal_time:g} s): ' + '; '.join(bad)
                    )
                    self._hold = actual[0]
            self.outcome = outcome or self.outcome
        if self._hold is not None:
            zero = np.zeros_like(self._hold)
            p_d, v_d, a_d = self._hold.copy(), zero, zero.copy()
        desired = (p_d, v_d, a_d)
        tau = computed_torque(self.model, q, v, desired, self.gains)
        error = (p_d - actual[0], v_d - actual[1])
        return Update(tau, desired, actual, error, index, outcome, message)


# ------------------------------------------------------------------ reactionless correction
@dataclass(frozen=True)
class Correction:
    """How :func:`reactionless_correction` changed a trajectory.

    Attributes
    ----------
    max_change : float
        Largest joint deviation of the corrected trajectory from the original [rad | m].
    joint : str
        The joint where it occurs;  ``at`` : float, seconds after the start.
    final_change : float
        Largest joint deviation at the last point [rad | m].
    base_rotation : float
        Base rotation the original trajectory would cause under zero momentum [rad]
        (the corrected one causes none, to the grid's accuracy).
    steps : int
        Grid steps of the integration.
    """

    max_change: float
    joint: str
    at: float
    final_change: float
    base_rotation: float
    steps: int

    def summary(self) -> str:
        """One line for a log or a result message."""
        return (
            f'reactionless correction: the trajectory as sent would turn the base by '
            f'{math.degrees(self.base_rotation):.3f} deg; corrected, the joints differ from it '
            f'by up to {self.max_change:.4g} rad ({self.joint} at {self.at:.2f} s), '
            f'{self.final_change:.4g} rad at the end'
        )


def reactionless_correction(
    model: D.Model, q: np.ndarray, trajectory: JointTrajectory, step: float
) -> tuple[JointTrajectory, Correction]:
    """The trajectory corrected into the reaction null space (module docstring).

    Parameters
    ----------
    model : Model, floating base and one-DoF joints.
    q : (nq,) configuration at the start (base pose and joints; the joints as the
        trajectory's start) [m, -, rad | m].
    trajectory : the trajectory from that state.
    step : grid step [s] (longer when the trajectory needs more than
        :data:`MAX_CORRECTION_STEPS`).

    Returns
    -------
    (JointTrajectory, Correction)
        Cubic segments through the corrected grid points, and the report.
    """
    q = np.array(q, dtype=float)
    t0, t1 = trajectory.start_time, trajectory.end_time
    count = max(1, min(MAX_CORRECTION_STEPS, math.ceil((t1 - t0) / step)))
    times = np.linspace(t0, t1, count + 1)
    h = (t1 - t0) / count

    def at(phi: np.ndarray) -> np.ndarray:
        x = q.copy()
        x[7:] = phi
        return x

    def rate(t: float, phi: np.ndarray) -> np.ndarray:
        N = reactionless_basis(model, at(phi))
        return N @ (N.T @ trajectory.sample(t)[1])

    n = model.n
    phi = np.empty((count + 1, n))
    rates = np.empty((count + 1, n))
    phi[0] = trajectory.sample(t0)[0]
    rates[0] = rate(t0, phi[0])
    for k in range(count):
        guess = phi[k] + h * rates[k]
        rates[k + 1] = rate(times[k + 1], guess)
        phi[k + 1] = phi[k] + 0.5 * h * (rates[k] + rates[k + 1])
        rates[k + 1] = rate(times[k + 1], phi[k + 1])
    rates[-1] = 0.0  # the last point is at rest (its velocities are zero)
    original = np.array([trajectory.sample(t)[0] for t in times])
    change = np.abs(phi - original)
    k, j = np.unravel_index(int(np.argmax(change)), change.shape)
    # the base rotation of the original under zero momentum: w0 = -A phidot [S0 eq. 21]
    quat = np.array([0.0, 0.0, 0.0, 1.0])
    turned = 0.0
    w_prev = -base_rate_map(model, at(original[0])) @ trajectory.sample(t0)[1]
    for i in range(1, count + 1):
        w = -base_rate_map(model, at(original[i])) @ trajectory.sample(times[i])[1]
        quat = quat_multiply(quat_exp(0.5 * h * (w + w_prev)), quat)
        turned = max(turned, quat_angle(quat, [0.0, 0.0, 0.0, 1.0]))
        w_prev = w
    report = Correction(
        max_change=float(change[k, j]),
        joint=model.joint_names[j],
        at=float(times[k] - t0),
        final_change=float(change[-1].max()),
        base_rotation=float(turned),
        steps=count,
    )
    return JointTrajectory.through(times, phi, rates), report


def correction_beyond_goal(
    model: D.Model, sent: np.ndarray, corrected: np.ndarray, tolerances: Tolerances
) -> TrajectoryError | None:
    """Whether a reactionless correction moved the last point beyond the goal tolerances.

    A trajectory judged as JTC does succeeds within the goal tolerances of the last point
    *sent*; a correction that ends a joint farther from it than that joint's goal position
    tolerance (checked: > 0) could only end in GOAL_TOLERANCE_VIOLATED (or, judged against the
    corrected end, in a success the client never asked for).

    Parameters
    ----------
    model : Model (the joint names).
    sent, corrected : (n,) the last point's joint positions sent and corrected [rad | m].
    tolerances : the goal's tolerances (``goal[:, 0]``: position, 0 not checked).

    Returns
    -------
    TrajectoryError or None
        ``'goal'``, naming the joint farthest beyond its tolerance, the miss and the way out.
    """
    miss = np.abs(np.asarray(corrected, float) - np.asarray(sent, float))
    limit = tolerances.goal[:, 0]
    over = (limit > 0.0) & (miss > limit)
    if not over.any():
        return None
    j = int(np.argmax(np.where(over, miss - limit, -np.inf)))
    return TrajectoryError(
        'goal',
        f'trajectory.reactionless: the trajectory corrected into the reaction null space ends '
        f'{model.joint_names[j]} {miss[j]:.4g} rad from the last point sent, beyond its goal '
        f'tolerance {limit[j]:.4g} ({int(over.sum())} joint(s) beyond theirs): not executed; '
        'give those joints a wider goal_tolerance (-1: not checked) to accept the corrected '
        'end, or set trajectory.reactionless false',
    )
