"""Capture control of a free-floating robot: interception and post-capture detumbling (no ROS).

Momentum. Seed 000 writes the momentum about the base CoM as ``[P; L0] = H0 x0dot + H0m
phidot`` [S0 eqs. 19, 21]; the zero-momentum laws of :mod:`.reactionless` drop its left side.
Here it is kept: with ``h0 = H[:6] v`` the present momentum (conserved in the absence of
external forces, but a target grasped brings its own), the base moves with

    x0dot = H0^-1 h0 - B phidot,   B = H0^-1 H0m                       [S0 eq. 21]
    w0 = c - A phidot,             c = [H0^-1 h0]_w,  A = [B]_w           (1)

(``[.]_w``: the angular rows). ``c`` is the base angular velocity the system would have with
its joints locked now -- the rigid-body rate ``I_sys^-1 L_g`` of the whole system
(:attr:`MomentumTerms.locked_rate`); it is zero for a robot that never touched anything. These
``B``, ``A`` and ``c`` are the code's names, not the control map ``B(q)`` of [S0 eq. 41] nor
the nonlinear effects ``c`` of [S0 eq. 38] (``ff.c``; the ``c*`` below is made from it): see
"Code names that differ from the seeds'" in docs/equations.md. A point ``p`` of the gripper
moves with

    pdot = J_s x0dot + J_m phidot = J_s H0^-1 h0 + J* phidot,  J* = J_m - J_s B    [S0 eq. 5]

(Yoshida & Umetani's generalized Jacobian ``J*`` plus the drift of the momentum).

(a) Interception (:func:`intercept_rates`). The grasp point ``p_h`` of a handle moves with
``v_h`` (the target's odometry: root-link pose and twist, the handle fixed in that link).
The commanded gripper velocity is the feed-forward plus a saturated proportional term,
``pdot_d = v_h + sat(K_p (p_h - p))``, and the task is solved inside the reaction null space
of Nenchev & Yoshida with the base angular velocity as the first task
(:func:`~.rns.reactionless_rates`): ``A phidot = c - w0_d`` with ``w0_d = K_att e_att`` the
attitude hold, and ``J* phidot = pdot_d - J_s H0^-1 h0`` in what remains. With zero momentum
this is the reactionless law of :mod:`.reactionless` with a moving goal. The grasp also needs
the handle's rate matched (its envelope's ``max_rate``): the gripper's angular velocity,
``w_g = J_ws H0^-1 h0 + J_w* phidot`` (the angular rows of [S0 eq. 5]), is asked to be the
target's ``w`` as a third task, in the null space of the first two
(:func:`~.rns.prioritized_rates`), and only as far as the joint speed limits leave room once
the first two are served (:func:`secondary_scale`): the base attitude and the position keep
priority. On the 7-joint servicer that leaves one degree of freedom, so the match is partial:
it cancels the spin-up of the wrist where that one direction can, not a target's own rate.
The joints nearing a position limit are clamped (:func:`~.rns.limit_scales`, as in (b)):
the limits win over the tasks, the rate match first (:func:`intercept`).

(b) Detumbling after the grasp, on the welded model (robot and target one tree,
:func:`ffsim_ros.scene.welded_model`). The target's motion relative to the base is the arm's
joint rates: the detumbling brings ``phidot`` to zero. The total angular momentum ``L_g`` is
conserved, so once ``phidot = 0`` the base turns at ``c`` (1) whatever the law: without a base
actuator the final rate is not a choice; *when and how fast* the base takes the momentum is.

* ``momentum_distribution`` (Dimitrov & Yoshida 2004, cited by seed 000 after [S0 eq. 16];
  the bias-momentum idea: the arm stores the target's momentum, then releases it as the base
  can take it). The base angular velocity is commanded, ``w0_d(t)``, and the joint rates are
  the least (rate-weighted) ones that give it by (1):

      phidot_d = W (A W)^+ (c - w0_d)                                       (2)

  (``W``: :func:`~.rns.rate_weights`). ``w0_d`` starts at the base rate measured right after
  the capture, goes to zero and stays there for ``store_time`` (the arm holds the momentum:
  the target keeps turning, the base does not), then goes to ``c`` (the joints stop as it
  arrives) -- always at an angular acceleration of at most ``base_acceleration``: the rate at
  which "the base can take it" (what its attitude control could absorb).
  Storing is joint motion (``A phidot = c - w0_d``): the arm can hold a momentum only as long
  as its joint range lasts, and ``c`` itself changes as the arm moves (the locked inertia
  does). At the capture :meth:`Detumbler.plan` predicts the plan (:func:`storage_rollout`:
  the kinematics with the momentum conserved); where a joint would enter the zone of a
  position limit or exceed its speed limit, the storage is dropped and the acceleration
  doubled until the prediction holds, or, where that release would be as fast as braking,
  the law brakes as ``gjm`` does (:attr:`Detumbler.reason` says which and why). While it
  runs, the joints in a limit zone are clamped (:func:`~.rns.limit_scales`, the others take
  over) and where they cannot give the base rate any more the law brakes from there.
* ``gjm`` (plain generalized-Jacobian control): the target commanded to stop relative to the
  base, ``phidot_d -> 0`` over ``brake_time`` (a linear ramp from the rates at the capture);
  the base takes the momentum as fast as the arm brakes. A joint heading into a position
  limit is clamped in its zone.

Both share the computed-torque inner loop of :mod:`.reactionless` on the free-floating
dynamics [S0 eq. 39] (``F_b = 0``): ``tau = H* K_v (phidot_d - phidot) + c*`` (the welded
model's ``H*``, ``c*``), efforts clipped to the robot's limits; the target adds no joint.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import NamedTuple

import numpy as np

import ffsim_ros.dynamics as D
from ffsim_ros.dynamics.lie import quat_to_matrix, skew

from .rns import (
    attitude_error,
    capped_to_limits,
    limit_scales,
    limit_zones,
    near_limits,
    prioritized_rates,
    reactionless_rates,
    saturate,
    speed_limits,
    unmimicked_rate_weights,
)


class DetumbleMode(str, Enum):
    """Post-capture law (module docstring)."""

    MOMENTUM_DISTRIBUTION = 'momentum_distribution'
    GJM = 'gjm'


#: Names accepted for :class:`DetumbleMode`.
DETUMBLE_MODES = tuple(m.value for m in DetumbleMode)
#: Largest joint motion [rad | m] and time [s] of a step of :func:`storage_rollout`, and its
#: most steps.
ROLLOUT_ANGLE = 0.02
ROLLOUT_DT = 0.25
ROLLOUT_STEPS = 20000
#: Joint clamping re-solves of the distribution rates near the position limits per update.
CLAMP_ITERATIONS = 4
#: A clamped joint is at its stop, for :attr:`Intercept.blocked_by_rate`, where its clamping
#: factor (:func:`~.rns.limit_scales`) is at most this: still inside the zone it is only slowed.
AT_STOP = 0.1
#: Share of the commanded base rate change ``|c - w0_d|`` the clamped distribution rates may
#: miss before the law gives up storing and brakes (:class:`Detumbler`).
CLAMP_RESIDUAL = 0.05


@dataclass(frozen=True)
class CaptureGains:
    """Gains of the capture laws (SI units; rates in 1/s).

    Attributes
    ----------
    kp_intercept : float
        Gripper position gain of the interception [1/s].
    max_intercept_speed : float
        Saturation of the proportional term of the interception [m/s] (the feed-forward is
        added on top).
    kp_attitude : float
        Base attitude hold gain during the interception [1/s].
    kv_joint : float
        Joint-rate gain of the computed-torque inner loop [1/s].
    damping : float
        Damped-least-squares factor of the interception task [m/s per rad/s].
    rate_damping : float
        Damped-least-squares factor of the interception's rate-matching task (the gripper's
        angular velocity to the target's) [rad/s per rad/s].
    max_joint_speed : float
        Fraction (0, 1] of each joint's velocity limit the laws may command.
    store_time : float
        Momentum distribution: time the base rate is held at zero while the arm stores the
        momentum [s].
    base_acceleration : float
        Momentum distribution: largest commanded base angular acceleration [rad/s^2].
    brake_time : float
        ``gjm``: duration of the linear ramp of the joint rates to zero [s].
    """

    kp_intercept: float = 1.0
    max_intercept_speed: float = 0.08
    kp_attitude: float = 2.0
    kv_joint: float = 20.0
    damping: float = 0.02
    rate_damping: float = 0.02
    max_joint_speed: float = 0.9
    store_time: float = 3.0
    base_acceleration: float = float(np.radians(0.05))
    brake_time: float = 2.0

    def __post_init__(self) -> None:
        for name, value in self.__dict__.items():
            if not np.isfinite(value) or value < 0.0:
                raise ValueError(f'gain {name}: expected a finite value >= 0, got {value}')
        if not 0.0 < self.max_joint_speed <= 1.0:
            raise ValueError(f'max_joint_speed: expected (0, 1], got {self.max_joint_speed}')
        for name in ('base_acceleration', 'brake_time'):
            if getattr(self, name) <= 0.0:
                raise ValueError(f'gain {name}: expected a value > 0, got {getattr(self, name)}')


@dataclass(frozen=True)
class GraspPoint:
    """A handle's grasp point and its motion, inertial frame.

    Attributes
    ----------
    position : (3,) [m];  velocity : (3,) [m/s];
    angular_velocity : (3,) of the handle (its link's) [rad/s], or None (unknown: the
        interception then leaves the gripper's rate free).
    """

    position: np.ndarray
    velocity: np.ndarray
    angular_velocity: np.ndarray | None = None


def grasp_point(
    position: np.ndarray,
    orientation: np.ndarray,
    linear_velocity: np.ndarray,
    angular_velocity: np.ndarray,
    offset: np.ndarray,
) -> GraspPoint:
    """The grasp point of a handle fixed in a target's root link, from the link's odometry.

    Parameters
    ----------
    position : (3,) link origin, inertial frame [m].
    orientation : (4,) the link's quaternion (x, y, z, w) in the inertial frame [-].
    linear_velocity : (3,) of the link origin, inertial frame [m/s].
    angular_velocity : (3,) of the link, inertial frame [rad/s] (rotate a REP-105 child-frame
        twist to the inertial frame first).
    offset : (3,) handle origin in the link frame [m].

    Returns
    -------
    GraspPoint
        Inertial frame.

    Raises
    ------
    ValueError
        Wrong sizes or non-finite values (named).
    """
    vals = {
        'position': position,
        'orientation': orientation,
        'linear_velocity': linear_velocity,
        'angular_velocity': angular_velocity,
        'offset': offset,
    }
    arr = {}
    for key, x in vals.items():
        a = np.asarray(x, dtype=float).reshape(-1)
        size = 4 if key == 'orientation' else 3
        if a.shape != (size,) or not np.all(np.isfinite(a)):
            raise ValueError(f'grasp_point {key}: expected {size} finite values, got {x!r}')
        arr[key] = a
    R = quat_to_matrix(arr['orientation'] / np.linalg.norm(arr['orientation']))
    r = R @ arr['offset']
    return GraspPoint(
        arr['position'] + r,
        arr['linear_velocity'] + np.cross(arr['angular_velocity'], r),
        arr['angular_velocity'],
    )


@dataclass(frozen=True)
class MomentumTerms:
    """The momentum-aware free-floating terms at one state (module docstring, relation (1)).

    Attributes
    ----------
    ff : FreeFloatingTerms of the model (``H``, ``c``, ``B``, ``H*``, ``c*``; no Jacobian).
    drift : (6,) ``H0^-1 h0``: the base twist ``[V0; w0]`` with the joints locked.
    A : (3, n) angular rows of ``B``.
    """

    ff: D.FreeFloatingTerms
    drift: np.ndarray
    A: np.ndarray

    @property
    def locked_rate(self) -> np.ndarray:
        """``c`` (3,) of relation (1), not the nonlinear effects ``c`` of [S0 eq. 38]: the base
        angular velocity with the joints locked [rad/s]."""
        return self.drift[3:]


def momentum_terms(model: D.Model, q: np.ndarray, v: np.ndarray) -> MomentumTerms:
    """:class:`MomentumTerms` at ``(q, v)`` (one mass matrix and bias evaluation).

    Parameters
    ----------
    model : Model
        A floating-base model.
    q : (nq,) configuration ``[r0, Q0, phi]``, base in the inertial frame [m, -, rad | m].
    v : (nv,) velocity ``[V0, w0, phidot]``, base parts in the inertial frame
        [m/s, rad/s, rad/s | m/s].

    Returns
    -------
    MomentumTerms
    """
    ff = D.free_floating_terms(model, q, v)
    h0 = ff.H[:6] @ v
    drift = np.linalg.solve(ff.H[:6, :6], h0)
    return MomentumTerms(ff, drift, ff.B[3:6])


def point_generalized_jacobian(
    model: D.Model, q: np.ndarray, link: str, offset: np.ndarray, B: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Position ``p`` (3,), ``J_s`` (3, 6) and ``J*`` (3, n) of a point fixed in ``link``
    (``offset`` (3,) in the link frame) [S0 eq. 5], ``B`` = ``H0^-1 H0m``.

    Parameters
    ----------
    model : Model
        A floating-base model.
    q : (nq,) configuration ``[r0, Q0, phi]``, base in the inertial frame [m, -, rad | m].
    link : str
        The link carrying the point.
    offset : (3,) ndarray
        The point in the link frame [m].
    B : (6, n) ndarray
        ``H0^-1 H0m`` at ``q`` (:attr:`~ffsim_ros.dynamics.FreeFloatingTerms.B`), inertial
        frame [m/s, rad/s per rad/s | m/s].

    Returns
    -------
    p : (3,) ndarray
        The point, inertial frame [m].
    J_s : (3, 6) ndarray
        Its velocity per base twist ``[V0; w0]`` (base CoM velocity, angular velocity),
        inertial frame [m/s per m/s, rad/s].
    J_star : (3, n) ndarray
        Its velocity per joint rate under zero momentum, inertial frame [m/s per rad/s | m/s].
    """
    o, R = D.link_pose(model, q, link)
    p = o + R @ np.asarray(offset, dtype=float)
    J = D.link_jacobian(model, q, link)
    Jp = J[:3] - skew(p - o) @ J[3:]
    Js = Jp[:, :6]
    return p, Js, Jp[:, 6:] - Js @ B


def secondary_scale(phidot: np.ndarray, phidot2: np.ndarray, vmax: np.ndarray) -> float:
    """The largest ``s`` in [0, 1] with ``|phidot + s phidot2| <= vmax`` (n,) joint by joint
    (0 where ``phidot`` alone is beyond a limit: :func:`~.rns.capped_to_limits` then scales it).

    Parameters
    ----------
    phidot, phidot2 : (n,) joint rates and the secondary correction [rad/s | m/s].
    vmax : (n,) joint speed limits [rad/s | m/s] (0 or inf: none, :func:`~.rns.speed_limits`).

    Returns
    -------
    float
        ``s`` [-].
    """
    s = 1.0
    for p, d, m in zip(phidot, phidot2, speed_limits(vmax), strict=True):
        if d != 0.0:
            room = (np.copysign(m, d) - p) / d
            s = min(s, max(0.0, float(room)))
    return s


class Intercept(NamedTuple):
    """The interception's rates at one state (:func:`intercept`)."""

    phidot: np.ndarray  #: (n,) joint rates [rad/s | m/s]
    distance: float  #: to the grasp point [m]
    #: names of the joints the unclamped law drives toward a position limit inside its zone
    #: (:func:`~.rns.limit_scales` < 1): slowed to a stop short of it, the tasks served by the
    #: others as far as they can (the rate match, the last task, is the first to go)
    blocked: tuple[str, ...] = ()
    #: those of ``blocked`` at their stop (``AT_STOP``) that the rate match's part of the
    #: rates drives toward the limit
    blocked_by_rate: tuple[str, ...] = ()


def intercept_rates(
    model: D.Model,
    q: np.ndarray,
    terms: MomentumTerms,
    gripper: tuple[str, np.ndarray],
    target: GraspPoint,
    gains: CaptureGains,
    attitude_reference: np.ndarray | None = None,
) -> tuple[np.ndarray, float]:
    """``(phidot, distance)`` of :func:`intercept` (its parameters)."""
    out = intercept(model, q, terms, gripper, target, gains, attitude_reference)
    return out.phidot, out.distance


def intercept(
    model: D.Model,
    q: np.ndarray,
    terms: MomentumTerms,
    gripper: tuple[str, np.ndarray],
    target: GraspPoint,
    gains: CaptureGains,
    attitude_reference: np.ndarray | None = None,
) -> Intercept:
    """Joint rates (n,) tracking a moving grasp point inside the reaction null space (module
    docstring, (a)), the distance to it [m] and the joints held at a position limit.

    Three tasks in priority order: the base angular velocity (attitude hold), the grasp point's
    velocity, and -- when ``target.angular_velocity`` is known -- the gripper's angular velocity
    matched to it, in the null space of the first two and scaled down to what the joint speed
    limits leave (:func:`secondary_scale`). The joints in the zone of a position limit are
    clamped as the detumbling's are (:func:`~.rns.limit_scales` in the rate weights, the others
    take over, up to ``CLAMP_ITERATIONS`` re-solves), and no rate is left heading into a limit
    closer than its stop: matching a spin takes the wrist round without end, and the limits
    win over the rate match (then over the position task).

    Parameters
    ----------
    model : Model
        A floating-base model.
    q : (nq,) configuration ``[r0, Q0, phi]``, base in the inertial frame [m, -, rad | m].
    terms : MomentumTerms
        At the present state (:func:`momentum_terms`).
    gripper : ``(link, offset)``: the grasp point fixed in the gripper link (offset (3,) in
        the link frame [m]).
    target : GraspPoint
        The handle's grasp point and motion, inertial frame.
    gains : CaptureGains
    attitude_reference : (4,) base quaternion (x, y, z, w) to hold, inertial frame [-] (None:
        rate damping only).

    Returns
    -------
    Intercept
    """
    link, offset = gripper
    p, Js, Jstar = point_generalized_jacobian(model, q, link, offset, terms.ff.B)
    e = target.position - p
    xdot = target.velocity + saturate(gains.kp_intercept * e, gains.max_intercept_speed)
    w0_d = np.zeros(3)
    if attitude_reference is not None:
        w0_d = gains.kp_attitude * attitude_error(q[3:7], np.asarray(attitude_reference, float))
    vmax = speed_limits(model.velocity_limit, gains.max_joint_speed)
    task = (Jstar, terms.A, xdot - Js @ terms.drift)
    if target.angular_velocity is not None:
        # the gripper's angular velocity: w_g = J_ws H0^-1 h0 + J_w* phidot (angular rows of
        # [S0 eq. 5], the generalized Jacobian J_w* = J_wm - J_ws B)
        Jw = D.link_jacobian(model, q, link)[3:]
        Jws = Jw[:, :6]
        w_h = np.asarray(target.angular_velocity, float)
        rate = (Jw[:, 6:] - Jws @ terms.ff.B, w_h - Jws @ terms.drift)

    def solve(weights: np.ndarray) -> np.ndarray:
        if target.angular_velocity is None:
            rates, _ = reactionless_rates(*task, w0_d - terms.locked_rate, weights, gains.damping)
            return capped_to_limits(rates, vmax)
        rates, rates2 = prioritized_rates(
            *task, *rate, w0_d - terms.locked_rate, weights, gains.damping, gains.rate_damping
        )
        rates = capped_to_limits(rates, vmax)
        return rates + secondary_scale(rates, rates2, vmax) * rates2

    full = unmimicked_rate_weights(model)
    phidot = solve(full)
    phi, lower, upper = q[7:], model.lower, model.upper
    if not np.any(near_limits(phi, lower, upper)):
        return Intercept(phidot, float(np.linalg.norm(e)))
    free = phidot  # (unclamped)
    blocked = limit_scales(phi, lower, upper, free) < 1.0
    weights = full
    for _ in range(CLAMP_ITERATIONS):
        clamped = np.minimum(weights, full * limit_scales(phi, lower, upper, phidot))
        if np.array_equal(clamped, weights):
            break
        weights = clamped
        phidot = solve(weights)
    phidot = phidot * limit_scales(phi, lower, upper, phidot)  # (none left heading in)
    names = tuple(model.joint_names[k] for k in np.flatnonzero(blocked))
    by_rate = ()
    if names and target.angular_velocity is not None:
        plain, _ = reactionless_rates(*task, w0_d - terms.locked_rate, full, gains.damping)
        plain = capped_to_limits(plain, vmax)
        # (the rate match's own part of the unclamped rates heads into the limit)
        by_rate = blocked & (limit_scales(phi, lower, upper, free - plain) <= AT_STOP)
        by_rate = tuple(model.joint_names[k] for k in np.flatnonzero(by_rate))
    return Intercept(phidot, float(np.linalg.norm(e)), names, by_rate)


def distribution_rates(terms: MomentumTerms, w0_d: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Least rate-weighted joint rates (n,) giving the base angular velocity ``w0_d`` (3,)
    [rad/s] under the present momentum: law (2) of the module docstring.

    Parameters
    ----------
    terms : MomentumTerms
        At the present state.
    w0_d : (3,) desired base angular velocity, inertial frame [rad/s].
    weights : (n,) rate weights ``W`` (:func:`~.rns.rate_weights`), per joint [-].

    Returns
    -------
    (n,) ndarray
        Joint rates [rad/s | m/s].
    """
    AW = terms.A * weights
    return weights * (np.linalg.pinv(AW, rcond=1e-10) @ (terms.locked_rate - w0_d))


def storage_rollout(
    model: D.Model,
    q: np.ndarray,
    v: np.ndarray,
    store_time: float,
    acceleration: float,
    vmax: np.ndarray,
) -> str:
    """Predict a momentum distribution (law (2), :class:`Detumbler`) from ``(q, v)`` with
    the kinematics alone: ``w0_d`` from the base rate now to zero, held ``store_time``, then
    to the locked rate ``c`` at ``acceleration``, the joints at the rates (2), the base at
    ``x0dot = H0^-1 h0 - B phidot`` with the momentum conserved (``c`` changes as the arm
    moves: the locked inertia does). Steps move no joint by more than ``ROLLOUT_ANGLE``.

    Parameters
    ----------
    model : Model
        The welded model.
    q : (nq,) configuration ``[r0, Q0, phi]``, base in the inertial frame [m, -, rad | m].
    v : (nv,) velocity ``[V0, w0, phidot]``, base parts in the inertial frame
        [m/s, rad/s, rad/s | m/s].
    store_time : float
        [s]
    acceleration : float
        Of ``w0_d`` [rad/s^2], > 0.
    vmax : (n,) joint speed limits the law may command [rad/s | m/s] (0 or inf: none,
        :func:`~.rns.speed_limits`).

    Returns
    -------
    str
        ``''`` if the arm stores and releases the momentum with every joint out of the zones
        of its position limits (:func:`~.rns.limit_zones`) and within ``vmax``; else what
        stops it and when (``'arm_joint_2 in its limit zone after 12.3 s'``).
    """
    q = np.asarray(q, float).copy()
    v = np.asarray(v, float)
    weights = unmimicked_rate_weights(model)
    zone, _ = limit_zones(model.lower, model.upper)
    H = D.mass_matrix(model, q)
    # [P; L0] with L0 about the base CoM r0: P and the L about a fixed point are conserved,
    # so L0 = L0(0) - (r0 - r0(0)) x P as the base moves
    h = H[:6] @ v
    r0 = q[:3].copy()
    w0_d = v[3:6].copy()
    t = 0.0
    for _ in range(ROLLOUT_STEPS):
        h0 = np.concatenate((h[:3], h[3:] - np.cross(q[:3] - r0, h[:3])))
        X = np.linalg.solve(H[:6, :6], np.column_stack((h0, H[:6, 6:])))
        drift, B = X[:, 0], X[:, 1:]
        c = drift[3:]
        if t >= store_time and np.linalg.norm(c - w0_d) <= acceleration * ROLLOUT_DT:
            return ''  # (released but for the last step's)
        goal = np.zeros(3) if t < store_time else c
        AW = B[3:] * weights
        rates = weights * (np.linalg.pinv(AW, rcond=1e-10) @ (c - w0_d))
        fast = np.flatnonzero(np.abs(rates) > speed_limits(vmax))
        phi = q[7:]
        room = np.where(rates > 0.0, model.upper - zone - phi, phi - model.lower - zone)
        inside = np.flatnonzero((rates != 0.0) & (room < 0.0))
        for bad, why in ((inside, 'in its limit zone'), (fast, 'beyond its speed limit')):
            if bad.size:
                return f'{model.joint_names[int(bad[0])]} {why} after {t:.3g} s'
        top = float(np.max(np.abs(rates)))
        dt = min(ROLLOUT_ANGLE / top, ROLLOUT_DT) if top > 0.0 else ROLLOUT_DT
        if t < store_time:
            dt = min(dt, store_time - t)
        step = acceleration * dt
        w0_d = goal if np.linalg.norm(goal - w0_d) <= step else _towards(w0_d, goal, step)
        q = D.integrate(model, q, np.concatenate((drift - B @ rates, rates)), dt)
        H = D.mass_matrix(model, q)
        t += dt
    return f'not released after {t:.3g} s'


def computed_torque(
    model: D.Model, terms: MomentumTerms, v: np.ndarray, phidot_d: np.ndarray, kv: float
) -> tuple[np.ndarray, bool]:
    """``tau = H* K_v (phidot_d - phidot) + c*`` [S0 eq. 39] with ``F_b = 0``, clipped to the
    effort limits of the first ``len(phidot_d)`` joints; and whether a value was clipped.

    Parameters
    ----------
    model : Model
    terms : MomentumTerms
        At the present state.
    v : (nv,) velocity ``[V0, w0, phidot]``, base parts in the inertial frame
        [m/s, rad/s, rad/s | m/s].
    phidot_d : (k,) desired rates of the first ``k`` joints [rad/s | m/s].
    kv : float
        Rate gain [1/s].

    Returns
    -------
    tau : (k,) ndarray
        Joint efforts [N m | N].
    clipped : bool
    """
    n = phidot_d.size
    ff = terms.ff
    phiddot = kv * (phidot_d - v[6 : 6 + n])
    tau = ff.H_star[:n, :n] @ phiddot + ff.c_star[:n]
    limit = model.effort_limit[:n]
    clipped = np.clip(tau, -limit, limit)
    return clipped, bool(np.any(clipped != tau))


def _towards(x: np.ndarray, goal: np.ndarray, step: float) -> np.ndarray:
    """``x`` moved toward ``goal`` by at most ``step`` (Euclidean)."""
    return x + saturate(goal - x, step)


class Detumbler:
    """Post-capture detumbling law (module docstring, (b)) on the welded model.

    A momentum distribution the arm cannot store within its joint limits is re-planned at the
    capture (:meth:`plan`, reported in :attr:`reason`): the storage shortened, the release
    made faster, or plain braking; while it runs, the joints nearing a position limit are
    clamped (:func:`~.rns.limit_scales`) and the others take over, and where they cannot
    give the base rate any more the law brakes (``gjm``) from there. The braking clamps the
    joints heading into a limit too.

    Parameters
    ----------
    model : Model
        The welded model (robot and target one tree).
    n_arm : int
        The robot's joints (the first ``n_arm`` of ``model``; the efforts go to them).
    mode : DetumbleMode or str
    gains : CaptureGains
    t0 : float
        Time of the capture [s].
    q : (nq,) the welded configuration right after the capture ``[r0, Q0, phi]``, base in
        the inertial frame [m, -, rad | m].
    v : (nv,) the welded velocity then, ``[V0, w0, phidot]``, base parts in the inertial
        frame [m/s, rad/s, rad/s | m/s].

    Attributes
    ----------
    phase : str
        ``store``, ``release``, ``brake`` or ``hold`` (the momentum released or braked: the
        base at the locked rate, the joints still).
    store_time, base_acceleration : float
        The momentum distribution's plan [s], [rad/s^2]: the gains' unless :attr:`reason`.
    reason : str
        Why the law departs from its gains (``''`` when it does not): what :meth:`plan` or
        the joint limits changed.

    Raises
    ------
    ValueError
        An unknown mode (naming the known ones), a fixed-base model, a welded model with
        joints beyond the robot's (an articulated target: not supported by this law).
    """

    def __init__(
        self,
        model: D.Model,
        n_arm: int,
        mode: DetumbleMode | str,
        gains: CaptureGains,
        t0: float,
        q: np.ndarray,
        v: np.ndarray,
    ) -> None:
        try:
            self.mode = DetumbleMode(mode)
        except ValueError:
            raise ValueError(
                f'detumble mode: expected one of {list(DETUMBLE_MODES)}, got {mode!r}'
            ) from None
        if not model.floating_base:
            raise ValueError('Detumbler: expected a floating-base model')
        if model.n != n_arm:
            raise ValueError(
                f"Detumbler: expected a rigid target (welded model with the robot's {n_arm} "
                f'joints), got {model.n} joints'
            )
        self.model = model
        self.gains = gains
        self.t0 = float(t0)
        self.t_last = float(t0)
        self.weights = unmimicked_rate_weights(model)
        self.vmax = speed_limits(model.velocity_limit, gains.max_joint_speed)
        self.phidot0 = np.asarray(v, float)[6:].copy()
        self.w0_d = np.asarray(v, float)[3:6].copy()
        self.store_time = gains.store_time
        self.base_acceleration = gains.base_acceleration
        self.reason = ''
        self._brake_from = self.t0  # (the start of the braking ramp)
        self._braking = self.mode is DetumbleMode.GJM
        self.phase = 'brake' if self._braking else 'store'
        if not self._braking:
            self.plan(np.asarray(q, float), np.asarray(v, float))

    def plan(self, q: np.ndarray, v: np.ndarray) -> None:
        """Fit the momentum distribution to the joint limits (called at the capture).

        The gains' plan is predicted (:func:`storage_rollout`); where a joint would enter
        the zone of a position limit (or exceed its speed limit), the storage is dropped,
        then the release acceleration doubled until the prediction holds; where that release
        would be as fast as braking (``|c| / base_acceleration <= brake_time``) the law
        brakes (``gjm``). The change and its cause are in :attr:`reason`.

        Parameters
        ----------
        q : (nq,) ndarray
            Welded configuration [m, -, rad | m], base in the inertial frame.
        v : (nv,) ndarray
            Welded velocity [m/s, rad/s, rad/s | m/s], base parts in the inertial frame.
        """
        g = self.gains
        c = float(np.linalg.norm(momentum_terms(self.model, q, v).locked_rate))
        fail = storage_rollout(self.model, q, v, g.store_time, g.base_acceleration, self.vmax)
        if not fail:
            return
        what = (
            f'momentum distribution: the arm cannot store the momentum (base rate '
            f'{np.degrees(c):.3g} deg/s with the joints locked) for {g.store_time:.3g} s and '
            f'release it at {np.degrees(g.base_acceleration):.3g} deg/s^2 ({fail})'
        )
        acc, store = g.base_acceleration, 0.0
        while c / acc > g.brake_time:
            if not storage_rollout(self.model, q, v, store, acc, self.vmax):
                self.store_time, self.base_acceleration = store, acc
                self.reason = f'{what}: released at {np.degrees(acc):.3g} deg/s^2, no storage'
                return
            acc *= 2.0
        self._brake(self.t0, v[6:], f'{what}: braking (gjm) instead')

    def _brake(self, t: float, rates: np.ndarray, reason: str) -> None:
        """Brake from ``rates`` (n,) at ``t`` over ``brake_time`` (the ``gjm`` law)."""
        self._braking, self._brake_from = True, float(t)
        self.phidot0 = np.asarray(rates, float).copy()
        self.phase, self.reason = 'brake', reason

    def _distribution(self, q: np.ndarray, terms: MomentumTerms) -> tuple[np.ndarray, list]:
        """The rates (2) toward :attr:`w0_d`, clamped near the joint limits (the others take
        over); and the clamped joints' names where the rates miss the base rate by more than
        ``CLAMP_RESIDUAL`` (else an empty list)."""
        m = self.model
        rates = distribution_rates(terms, self.w0_d, self.weights)
        phi = q[7:]
        if not np.any(near_limits(phi, m.lower, m.upper)):
            return rates, []
        weights = self.weights
        for _ in range(CLAMP_ITERATIONS):
            scales = limit_scales(phi, m.lower, m.upper, rates)
            clamped = np.minimum(weights, self.weights * scales)
            if np.array_equal(clamped, weights):
                break
            weights = clamped
            rates = distribution_rates(terms, self.w0_d, weights)
        want = terms.locked_rate - self.w0_d
        miss = float(np.linalg.norm(terms.A @ rates - want))
        if miss <= CLAMP_RESIDUAL * float(np.linalg.norm(want)):
            return rates, []
        return rates, [m.joint_names[k] for k in np.flatnonzero(weights < self.weights)]

    def update(
        self, t: float, q: np.ndarray, v: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, MomentumTerms]:
        """One update at time ``t``: ``(tau (n,), phidot_d (n,), terms)``.

        Parameters
        ----------
        t : float
            Time [s] (the clock of ``t0``).
        q : (nq,) welded configuration, base in the inertial frame [m, -, rad | m].
        v : (nv,) welded velocity ``[V0, w0, phidot]``, base parts in the inertial frame
            [m/s, rad/s, rad/s | m/s].

        Returns
        -------
        tau : (n,) ndarray
            Joint efforts [N m | N].
        phidot_d : (n,) ndarray
            Desired joint rates [rad/s | m/s].
        terms : MomentumTerms
            At ``(q, v)``.
        """
        q = np.asarray(q, float)
        v = np.asarray(v, float)
        terms = momentum_terms(self.model, q, v)
        g = self.gains
        dt = max(0.0, float(t) - self.t_last)
        self.t_last = float(t)
        if not self._braking:
            step = self.base_acceleration * dt
            if float(t) - self.t0 < self.store_time:
                self.phase = 'store'
                goal = np.zeros(3)
            else:
                self.phase = 'release'
                goal = terms.locked_rate
            self.w0_d = _towards(self.w0_d, goal, step)
            if self.phase == 'release' and float(np.linalg.norm(self.w0_d - goal)) <= 1e-12 * max(
                1.0, float(np.linalg.norm(goal))
            ):
                self.phase = 'hold'  # the momentum released: the base at the locked rate
            rates, stuck = self._distribution(q, terms)
            if stuck:
                self._brake(
                    t,
                    v[6:],
                    f'momentum distribution: {stuck} at their position limits cannot store '
                    f'the momentum any longer: braking (gjm) from t = {float(t):.3f} s',
                )
            else:
                phidot_d = capped_to_limits(rates, self.vmax)
        if self._braking:
            s = max(0.0, 1.0 - (float(t) - self._brake_from) / g.brake_time)
            phidot_d = s * self.phidot0
            self.phase = 'brake' if s > 0.0 else 'hold'
            m = self.model
            if np.any(near_limits(q[7:], m.lower, m.upper)):  # (none heads into a limit)
                phidot_d = phidot_d * limit_scales(q[7:], m.lower, m.upper, phidot_d)
        tau, _ = computed_torque(self.model, terms, v, phidot_d, g.kv_joint)
        return tau, phidot_d, terms


__all__ = [
    'DETUMBLE_MODES',
    'CaptureGains',
    'DetumbleMode',
    'Detumbler',
    'GraspPoint',
    'Intercept',
    'MomentumTerms',
    'computed_torque',
    'distribution_rates',
    'grasp_point',
    'intercept',
    'intercept_rates',
    'momentum_terms',
    'point_generalized_jacobian',
    'secondary_scale',
    'storage_rollout',
]
