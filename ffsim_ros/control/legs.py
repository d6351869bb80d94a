"""Detour legs followed in the closed loop: self-motion and Lie-bracket loop legs through the
law's inner loop, and the watch on them (no ROS).

:class:`~ffsim_ros.control.supervisor.ReachSupervisor` follows a plan's legs with these
commands. A leg is a prediction (zero-momentum kinematics); the closed loop may not follow it:
on a 7-joint arm with a prismatic joint a loop leg's joint stopped where its component of
``X_k`` (:mod:`~ffsim_ros.control.loops`) went to 0, the wrist joints chattered, the base
turned 0.29 deg against a 0.2 deg budget on a leg meant to leave it untouched, and the goal
stayed active until its timeout, the end effector 0.8-0.9 m from the goal. :class:`LegWatch`
notices such a leg: its joint has not turned by ``LEG_PROGRESS`` of what the leg's predicted
course gains over ``stall_time`` (from the turn the joint has reached); the supervisor then
stops the leg and plans again (or aborts, saying why).
"""

from __future__ import annotations

import math

import numpy as np

import ffsim_ros.dynamics as D
from ffsim_ros.dynamics.lie import quat_exp, quat_multiply

from .loops import loop_rates
from .paths import path_reference
from .planner import Segment, self_motion_rates
from .reactionless import ControlOutput, ReactionlessController
from .rns import attitude_error, capped_to_limits, dls_pinv, limit_zones, near_limits

#: A loop leg has stalled when its joint has not turned by this share of what its predicted
#: course gains over ``stall_time`` (without a course: of the mean pace ``|sweep| /
#: duration``, the predicted duration).
LEG_PROGRESS = 0.25
#: A leg meant to leave the base untouched is stopped when the base attitude offset, plus the
#: base's angular rate times this [s] (a control period and the braking, about ``1 /
#: kv_joint``), is beyond the spend budget: a stalling leg's chatter turned the base by
#: 0.26 deg in 0.3 s on a 7-joint arm.
LEG_HORIZON = 0.1
#: Gain on a path leg's joint position error [1/s] (inside the reaction null space).
PATH_GAIN = 2.0


def inner_loop(
    law: ReactionlessController,
    q: np.ndarray,
    v: np.ndarray,
    out: ControlOutput,
    rates: np.ndarray,
    phiddot: np.ndarray | None = None,
) -> ControlOutput:
    """``out`` with the efforts of the law's inner loop ``tau = H* phiddot + c*`` toward the
    joint rates ``rates`` (clipped to the effort limits), ``phiddot = kv_joint (rates -
    phidot)`` unless given.

    Parameters
    ----------
    law : ReactionlessController
        Supplies the model, the end-effector link and the gains.
    q : (nq,) configuration, base inertial [m, -, rad | m].
    v : (nv,) velocity ``[V0, w0, phidot]``, base parts inertial [m/s, rad/s, rad/s | m/s].
    out : ControlOutput
        Updated in place: ``tau``, ``saturated``, ``phidot_desired``.
    rates : (n,) commanded joint rates [rad/s | m/s].
    phiddot : (n,) joint acceleration to command [rad/s^2 | m/s^2], optional.

    Returns
    -------
    ControlOutput
        ``out``.
    """
    ff = D.free_floating_terms(law.model, q, v, law.ee_link)
    if phiddot is None:
        phiddot = law.gains.kv_joint * (rates - v[6:])
    tau = ff.H_star @ phiddot + ff.c_star
    limit = law.model.effort_limit
    out.tau = np.clip(tau, -limit, limit)
    out.saturated = bool(np.any(out.tau != tau))
    out.phidot_desired = rates
    return out


def self_motion_command(
    law: ReactionlessController,
    q: np.ndarray,
    v: np.ndarray,
    segment: Segment,
    reference: np.ndarray | None,
    direction: np.ndarray | None,
) -> tuple[ControlOutput, np.ndarray | None]:
    """A self-motion leg of a detour: the rates of
    :func:`~ffsim_ros.control.planner.self_motion_rates` (as the planner predicted them)
    through the law's inner loop; the other figures from the law holding the end effector.

    Parameters
    ----------
    law : ReactionlessController
    q : (nq,) configuration, base inertial [m, -, rad | m].
    v : (nv,) velocity, base parts inertial [m/s, rad/s, rad/s | m/s].
    segment : Segment
        The leg (``self_motion`` +1 or -1, the end effector held at ``target``).
    reference : (4,) base quaternion held (x, y, z, w), inertial [-]; None: none.
    direction : (n,) the self-motion direction of the update before [-]; None on the first.

    Returns
    -------
    ControlOutput
    (n,) ndarray or None
        The direction to pass at the next update.
    """
    out = law.compute(q, v, segment.target, None, reference, self_motion=False)
    rates, direction = self_motion_rates(
        law, law.task_terms(q), segment.target, direction, segment.self_motion
    )
    return inner_loop(law, q, v, out, rates), direction


def loop_leg_command(
    law: ReactionlessController,
    q: np.ndarray,
    v: np.ndarray,
    segment: Segment,
    reference: np.ndarray | None,
) -> ControlOutput:
    """A leg of a Lie-bracket loop: the rates of :func:`~ffsim_ros.control.loops.loop_rates`
    through the law's inner loop (with the law's rate feedforward); the other figures from the
    law holding the arm.

    Parameters
    ----------
    law : ReactionlessController
    q : (nq,) configuration, base inertial [m, -, rad | m].
    v : (nv,) velocity, base parts inertial [m/s, rad/s, rad/s | m/s].
    segment : Segment
        The leg (``joint`` >= 0, ``sweep``, ``frozen``).
    reference : (4,) base quaternion held (x, y, z, w), inertial [-]; None: no attitude hold.

    Returns
    -------
    ControlOutput
    """
    joint, frozen = segment.joint, segment.frozen
    sign = 1.0 if segment.sweep > 0 else -1.0
    out = law.compute(q, v, None)
    rates = loop_rates(law, q, law.task_terms(q), joint, sign, reference, frozen)
    phiddot = law.gains.kv_joint * (rates - v[6:])
    if law.gains.rate_feedforward > 0.0:
        phiddot += law.rate_feedforward(
            q,
            v,
            rates,
            lambda qq: loop_rates(law, qq, law.task_terms(qq), joint, sign, reference, frozen),
        )
    return inner_loop(law, q, v, out, rates, phiddot)


def path_leg_command(
    law: ReactionlessController,
    q: np.ndarray,
    v: np.ndarray,
    segment: Segment,
    elapsed: float,
    reference: np.ndarray | None,
) -> ControlOutput:
    """A planned joint path (:class:`~.paths.PathPlanner`) followed in time through the law's
    inner loop: the path's rates, its position error corrected inside the reaction null space
    (``PATH_GAIN``), the base turned toward the attitude planned at that time (``-A^+
    kp_attitude e``, as the reactionless law's first task), capped to the speed limits.

    Parameters
    ----------
    law : ReactionlessController
    q : (nq,) configuration, base inertial [m, -, rad | m].
    v : (nv,) velocity, base parts inertial [m/s, rad/s, rad/s | m/s].
    segment : Segment
        The path (``path``, ``times``, ``attitudes``).
    elapsed : float
        Time since the leg started [s].
    reference : (4,) base quaternion held (x, y, z, w), inertial [-]; None: no attitude hold.

    Returns
    -------
    ControlOutput
    """
    out = law.compute(q, v, None)
    q_ref, rates, phi = path_reference(segment, elapsed)
    active = np.asarray(law.active) > 0
    A = law.task_terms(q).B[3:6] * active
    Ap = dls_pinv(A, 1e-3)
    e = np.where(active, q_ref - q[7:], 0.0)
    rates = rates + PATH_GAIN * (e - Ap @ (A @ e))
    if reference is not None:
        planned = quat_multiply(reference, quat_exp(phi))
        rates = rates - Ap @ (law.gains.kp_attitude * attitude_error(q[3:7], planned))
    rates = capped_to_limits(np.where(active, rates, 0.0), law.model.velocity_limit)
    return inner_loop(law, q, v, out, rates)


def limits_note(model: D.Model, q: np.ndarray) -> str:
    """For a reason: which joints the law clamps at ``q`` (within the zone of a position limit,
    :func:`~.rns.limit_zones`), '' if none ('; joints clamped at their position limits: ...').

    Parameters
    ----------
    model : D.Model
    q : (nq,) configuration [m, -, rad | m].

    Returns
    -------
    str
    """
    phi = q[7:]
    near = np.flatnonzero(near_limits(phi, model.lower, model.upper))
    if near.size == 0:
        return ''
    names = model.joint_names if len(model.joint_names) == phi.size else None
    joints = ', '.join(
        f'{names[i] if names else f"coordinate {i}"} at {phi[i]:.2f} '
        f'({model.lower[i]:g}..{model.upper[i]:g})'
        for i in near
    )
    return f'; joints clamped at their position limits: {joints}'


def hold_point(
    model: D.Model, q: np.ndarray, position: np.ndarray, goal: np.ndarray, inset: float
) -> np.ndarray:
    """Where a goal reached with spent attitude is held: the end effector's ``position`` moved
    ``inset`` [m] toward ``goal`` (at most onto it), or ``position`` itself when a joint is
    within the zone of a position limit: the clamped joints narrow the self-motion that turns
    the base back, and pulling the end effector inward spent attitude it could not give back
    (0.097 to 0.111 deg, the tolerance 0.1, with two of seven joints clamped).

    Parameters
    ----------
    model : D.Model
    q : (nq,) configuration [m, -, rad | m].
    position, goal : (3,) the end effector where the goal was reached and the goal [m].
    inset : float, [m].

    Returns
    -------
    (3,) ndarray
    """
    p = np.asarray(position, float)
    step = np.asarray(goal, float) - p
    gap = float(np.linalg.norm(step))
    if gap == 0.0 or np.any(near_limits(q[7:], model.lower, model.upper)):
        return p.copy()
    return p + step * min(1.0, inset / gap)


def leaving_limits(
    model: D.Model, phi: np.ndarray, rates: np.ndarray, frozen: tuple[int, ...]
) -> bool:
    """Whether a joint a loop leg moves (not ``frozen``) is over half-way into the zone of a
    position limit (:func:`~.rns.limit_zones`) and heads on to it. The loop search keeps those
    joints out of the zone, but on the servicer a leg followed in the closed loop once carried
    ``arm_joint_4`` 1.26 rad beyond its limit (seed 5, goal 12 of ``benchmarks/reach.py``),
    the leg's field ill-conditioned where the search had not gone.

    Parameters
    ----------
    model : D.Model
    phi : (n,) joint positions [rad | m].
    rates : (n,) commanded joint rates [rad/s | m/s].
    frozen : tuple of int
        Joints the leg does not move.

    Returns
    -------
    bool
    """
    margin = 0.5 * limit_zones(model.lower, model.upper)[0]
    heading = ((phi < model.lower + margin) & (rates < 0.0)) | (
        (phi > model.upper - margin) & (rates > 0.0)
    )
    heading[list(frozen)] = False
    return bool(np.any(heading))


class LegWatch:
    """Progress of one loop leg followed in the closed loop from time ``t`` [s] at ``q``.

    The leg's joint must gain, in every ``stall_time``, ``LEG_PROGRESS`` of what the leg's
    predicted course (``segment.course``, the planner's rollout of the same field) gains over
    ``stall_time`` from the turn the joint has reached; without a course, of the leg's mean
    planned pace (``|sweep| / duration``). The field's own pace varies along a leg: on the
    servicer a 2 rad leg of ``arm_joint_4`` planned in 12.1 s turns its joint at 0.03 rad/s
    for its first 2 s (0.17 rad/s on average), as predicted, and ends on time; judged against
    the mean pace it was stopped as stalled (seed 2, goal 13 of ``benchmarks/reach.py``).
    Where the course itself stops, so may the joint: the leg still ends by :meth:`done`.

    Parameters
    ----------
    segment : Segment
        The leg (``joint`` >= 0, ``sweep``, the predicted ``duration`` and ``course``).
    t : float
        Its start [s].
    q : (nq,) configuration at its start [m, -, rad | m].
    stall_time : float
        The window of the progress watch [s].
    """

    def __init__(self, segment: Segment, t: float, q: np.ndarray, stall_time: float) -> None:
        self.segment = segment
        self.t0 = float(t)
        self.start = float(q[7 + segment.joint])
        self.stall_time = float(stall_time)
        size = abs(segment.sweep)
        pace = size / segment.duration if segment.duration > 0.0 else math.inf
        course = np.asarray(segment.course, dtype=float)
        #: The predicted course (its running maximum: the turn reached by each step) and the
        #: steps it takes per ``stall_time``; None without a course.
        self.course: np.ndarray | None = None
        self._window = 0
        if course.size > 1 and segment.duration > 0.0:
            self.course = np.maximum.accumulate(course)
            step = segment.duration / (course.size - 1)
            self._window = max(1, int(round(self.stall_time / step)))
        #: Turn the joint must gain in each ``stall_time`` without a course [rad | m].
        self.needed = LEG_PROGRESS * min(size, pace * stall_time)
        self._mark = 0.0  # turned at the last progress
        self._t_mark = self.t0

    def predicted_gain(self, turned: float) -> float:
        """The turn the predicted course gains over ``stall_time`` from where it has turned by
        ``turned`` (to the sweep, where the course ends within it) [rad | m]; without a course
        ``needed / LEG_PROGRESS``.

        Parameters
        ----------
        turned : float
            [rad | m], in the leg's sense.

        Returns
        -------
        float
        """
        if self.course is None:
            return self.needed / LEG_PROGRESS
        k = int(np.searchsorted(self.course, turned))
        if k + self._window < self.course.size:
            ahead = float(self.course[k + self._window])
        else:
            ahead = abs(self.segment.sweep)
        return max(0.0, ahead - max(0.0, turned))

    def turned(self, q: np.ndarray) -> float:
        """How far the leg's joint has turned in the leg's sense [rad | m].

        Parameters
        ----------
        q : (nq,) configuration [m, -, rad | m].

        Returns
        -------
        float
        """
        sign = 1.0 if self.segment.sweep > 0 else -1.0
        return sign * (float(q[7 + self.segment.joint]) - self.start)

    def done(self, t: float, q: np.ndarray) -> bool:
        """The joint turned by the sweep, or twice the predicted time passed.

        Parameters
        ----------
        t : float, time [s].
        q : (nq,) configuration [m, -, rad | m].

        Returns
        -------
        bool
        """
        seg = self.segment
        return self.turned(q) >= abs(seg.sweep) or t >= self.t0 + 2.0 * seg.duration

    def stalled(self, t: float, q: np.ndarray) -> bool:
        """The joint has not gained ``LEG_PROGRESS`` of :meth:`predicted_gain` (from the
        turn of its last progress) over the last ``stall_time``.

        Parameters
        ----------
        t : float, time [s].
        q : (nq,) configuration [m, -, rad | m].

        Returns
        -------
        bool
        """
        turned = self.turned(q)
        if turned >= self._mark + LEG_PROGRESS * self.predicted_gain(self._mark):
            self._mark, self._t_mark = turned, float(t)
            return False
        return t - self._t_mark >= self.stall_time

    def describe(self, t: float, q: np.ndarray, names: tuple[str, ...] | list[str]) -> str:
        """The leg and how far it got, for a reason ('joint_1 by -1: turned 0.53 in 4.8 s,
        planned 36.3 s, predicted 0.40 in 2 s from 0.50').

        Parameters
        ----------
        t : float, time [s].
        q : (nq,) configuration [m, -, rad | m].
        names : the joint names (indices used where they do not match).

        Returns
        -------
        str
        """
        seg = self.segment
        n = q.size - 7
        name = names[seg.joint] if len(names) == n else f'coordinate {seg.joint}'
        return (
            f'{name} by {seg.sweep:g}: turned {self.turned(q):.2f} in {t - self.t0:.1f} s, '
            f'planned {seg.duration:.1f} s, predicted {self.predicted_gain(self._mark):.2f} in '
            f'{self.stall_time:g} s from {self._mark:.2f}'
        )
