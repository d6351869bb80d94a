"""Reactionless end-effector control of a free-floating robot (no ROS imports).

The law has three layers, each with its source:

1. **Task-space motion through the generalized Jacobian** (Yoshida & Umetani 1993). Under
   zero total momentum, [S0 eq. 21] gives the base velocity ``x0dot = -H0^-1 H0m phidot``
   and [S0 eq. 5] the end-effector velocity ``xdot = J* phidot`` with
   ``J* = Jm - Js H0^-1 H0m``.
   The commanded end-effector velocity is a saturated proportional law
   ``xdot_d = sat(K_p (x_goal - x))``; joint rates come from damped least squares
   ``J^+ = J^T (J J^T + lambda^2 E)^-1`` so dynamic singularities of J* stay bounded.

2. **Reactionless null space** (Nguyen-Huynh 2013; Dimitrov & Yoshida 2004). With zero
   momentum the base angular velocity is ``w0 = -A phidot`` where ``A`` is the angular (lower
   three) rows of ``H0^-1 H0m``. The same null space is that of ``H_wphi`` of [S0 eq. 16]: setting
   ``w0 = 0`` in ``L_g = H_w w0 + H_wphi phidot = 0`` leaves ``H_wphi phidot = 0``. Note that
   the angular rows of ``H0m`` itself (``H_Omega_phi``, momentum about the *base* CoM, [S0 eq. 19])
   give the same null space only when the system CoM coincides with the base CoM; the base
   also translates (``M V0 = -J_Tw phidot``), which couples into ``L_0``. We therefore use
   ``A``, which is exact. With ``N`` an orthonormal basis of ``null(A)`` (SVD), joint rates
   ``phidot = N zeta`` leave the attitude untouched; the task is solved in that subspace:
   ``zeta = (J* N)^+ xdot_d``. A small attitude-hold term ``A phidot = K_att e_att`` (task
   priority, above the end-effector task) removes drift from tracking errors.

3. **Computed-torque inner loop** on the free-floating dynamics with no base actuation
   ([S0 eq. 39] with ``F_b = 0``): eliminating ``x0ddot = -H0^-1 (H0m phiddot + c_b)`` gives
   ``tau = H* phiddot + c*`` with the generalized inertia ``H* = Hm - H0m^T H0^-1 H0m`` and
   ``c* = c_m - H0m^T H0^-1 c_b``. The desired acceleration is
   ``phiddot_d = K_v (phidot_d - phidot)``. Efforts are clipped to the joint limits.

Joint position limits (the URDF's ``lower``/``upper``) are kept by **joint clamping**
(Baerlocher & Boulic 2004) in layers 1-2: a joint closer than ``LIMIT_ZONE`` to the limit its
rate heads to has its rate weight scaled down, to zero at ``LIMIT_STOP`` from the limit
(:func:`~.rns.limit_scales`), and the law is solved again by the other joints -- in
``reactionless`` mode the clamped joint leaves the reaction null space too, so the base
attitude stays held. Away from the limits the rates are unchanged.

**Joints the law moves** (``active_joints``); the others get rate weight 0 and are held (zero
commanded rate, braked by the inner loop). By default, in ``gjm_tracking`` and ``joint_pd``
those on the path from the base to ``ee_link`` (:func:`~.rns.chain_joints`): on a two-arm robot
``gjm_tracking`` swung the other arm to move this tip through the base reaction (its columns of
``J*`` are not zero). In ``reactionless`` mode every joint: the other arm is a momentum
compensator there (on the dual-arm servicer 90 % of a sample of goals were reached with one
arm, 100 % with both); naming the chain's joints keeps it still. By default the joints of URDF
``<mimic>`` couplings (:func:`~.rns.mimic_joints`; not modelled) are held in every mode: moving
one alone would break the coupling. Names given are moved as given.

**Momentum.** The terms above hold for zero momentum. With a momentum ``h0 = H[:6] v`` (a
released target, a base wrench) the base moves with ``w0 = c - A phidot`` and the end effector
with ``J* phidot + J_s H0^-1 h0`` (:mod:`.capture`, relation (1); ``c``: the base rate with the
joints locked, :attr:`ControlOutput.locked_rate`), so the law asks ``A phidot = c - w0_d`` and
``J* phidot = xdot_d - J_s H0^-1 h0`` (:func:`~.rns.momentum_drift`, from the measured state).
The base is then held only while the arm keeps moving to absorb ``c`` (until its joint limits;
with no goal the arm is braked and the base turns at ``c``): :func:`~.rns.momentum_notice`.

Modes: ``reactionless`` (1+2+3), ``gjm_tracking`` (1+3, no reactionless constraint: the base
rotates) and ``joint_pd`` (baseline: the goal is turned into joint angles by fixed-base
inverse kinematics that ignores the base reaction, tracked by a computed-torque PD).

In ``reactionless`` mode two options serve :mod:`ffsim_ros.control.supervisor` (which detects
stalls and recovers from them):

* the **self-motion** (gain ``k_null``): the joint-rate direction that moves neither the end
  effector nor the base (null space of ``[J* W; A W]``, :func:`~.rns.self_motion`) climbs the
  logarithm of the reaction-null-space manipulability ``sqrt(det(J_N J_N^T))``
  (Nenchev & Yoshida; :func:`~.rns.rns_manipulability`), a secondary task that keeps the arm
  away from configurations where reactionless motions lose rank;
* an **attitude budget** (``compute(..., attitude_budget=...)``): the end-effector task first
  and the attitude kept within the budget by a barrier (:func:`~.rns.budget_rates`), which
  crosses a fold of the reaction null space at the price of the least base rotation.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

import ffsim_ros.dynamics as D
from ffsim_ros.dynamics.inputs import is_real_scalar, real_array
from ffsim_ros.dynamics.lie import is_rotation, matrix_log, matrix_to_quat
from ffsim_ros.scene.geometry import CollisionShape, PlacedShapes, describe_shape, point_distance

from .modes import ControlMode
from .rns import (
    RANK_TOL,
    TaskTerms,
    active_joint_mask,
    attitude_error,
    budget_rates,
    capped_to_limits,
    chain_joints,
    default_joint_masks,
    dls_pinv,
    limit_scales,
    momentum_drift,
    near_limits,
    rate_weights,
    reactionless_rates,
    restore_rates,
    rns_manipulability,
    saturate,
    self_motion,
    speed_limits,
    task_terms,
)

#: Step along the self-motion for the one-sided difference of the RNS manipulability [rad].
SELF_MOTION_STEP = 1e-4
#: Largest number of re-solves of the joint clamping (:func:`~.rns.limit_scales`) per update.
LIMIT_ITERATIONS = 4
#: Marker of the restoring law in place of an attitude budget (internal to :meth:`_rates`).
RESTORE = -1.0
#: Time step [s] of the one-sided difference of the rate feedforward
#: (:meth:`ReactionlessController.rate_feedforward`).
FEEDFORWARD_STEP = 1e-3


@dataclass(frozen=True)
class Gains:
    """Gains of the law (SI units; rates in 1/s).

    Attributes
    ----------
    kp_task : float
        End-effector position gain [1/s].
    kp_orientation : float
        End-effector orientation gain [1/s] (only with orientation tracking).
    max_ee_speed : float
        Saturation of the commanded end-effector speed [m/s].
    max_ee_angular_speed : float
        Saturation of the commanded end-effector angular speed [rad/s].
    kv_joint : float
        Joint-rate tracking gain of the inner loop [1/s].
    kp_attitude : float
        Base attitude hold gain [1/s] (reactionless mode).
    damping : float
        Damped-least-squares factor lambda [m/s per rad/s].
    k_null : float
        Gain of the self-motion that climbs the logarithm of the reaction-null-space
        manipulability [rad^2/s] (reactionless mode, position task, arms with a spare joint;
        0: off). The self-motion moves neither the end effector nor the base; it costs one
        extra evaluation of the kinematics and inertia per update (~0.25 ms on the servicer).
        Off by default: on 120 chained goals of the servicer it did not raise the share of
        goals reached (see :mod:`~ffsim_ros.control.supervisor`).
    kp_joint, kd_joint : float
        Joint PD gains of the ``joint_pd`` baseline [1/s^2, 1/s].
    max_joint_speed : float
        Fraction of each joint's velocity limit the law may command (0, 1].
    rate_feedforward : float
        Share [0, 1] of the commanded rates' time derivative fed forward in the inner loop
        (:meth:`ReactionlessController.rate_feedforward`; 0: off). Without it the joints lag
        the commanded rates by about ``1 / kv_joint`` (50 ms), and in ``reactionless`` mode
        the lag turns the base; this matters where the base is light against the arm.
    """

    kp_task: float = 1.5
    kp_orientation: float = 1.0
    max_ee_speed: float = 0.08
    max_ee_angular_speed: float = 0.2
    kv_joint: float = 20.0
    kp_attitude: float = 2.0
    damping: float = 0.02
    k_null: float = 0.0
    kp_joint: float = 16.0
    kd_joint: float = 8.0
    max_joint_speed: float = 0.9
    rate_feedforward: float = 1.0

    def __post_init__(self) -> None:
        """Each gain a real finite number >= 0, kept as a float.

        Raises
        ------
        TypeError
            A gain that is not a real number (a string, None, a bool, a complex number, an
            array), naming it.
        ValueError
            A gain out of its range, naming it.
        """
        for name, value in list(self.__dict__.items()):
            if not is_real_scalar(value):
                raise TypeError(
                    f'gain {name}: expected a real number (int or float), got {value!r} '
                    f'({type(value).__name__})'
                )
            if not math.isfinite(value) or value < 0.0:
                raise ValueError(f'gain {name}: expected a finite value >= 0, got {value}')
            object.__setattr__(self, name, float(value))  # (frozen: set once, here)
        if not 0.0 < self.max_joint_speed <= 1.0:
            raise ValueError(f'max_joint_speed: expected (0, 1], got {self.max_joint_speed}')
        if self.rate_feedforward > 1.0:
            raise ValueError(f'rate_feedforward: expected [0, 1], got {self.rate_feedforward}')


@dataclass
class ControlOutput:
    """Result of one control update.

    Attributes
    ----------
    tau : (n,) joint efforts [N m | N], clipped to the effort limits.
    phidot_desired : (n,) commanded joint rates [rad/s | m/s] (``joint_pd``: the rate the PD
        law tends to, ``kp_joint / kd_joint`` times the joint-angle error; 0 if ``kd_joint`` is).
    ee_position : (3,) end-effector position, inertial frame [m].
    ee_quaternion : (4,) end-effector orientation (x, y, z, w).
    position_error : float, distance to the goal [m].
    base_angular_rate : float, ``|w0|`` [rad/s].
    momentum : (6,) ``[P; L]`` about the system CoM, inertial frame.
    manipulability : float, ``sqrt(det(J* J*^T))`` of the task rows.
    condition : float, condition number of the task rows of J*.
    mode : ControlMode
    saturated : bool, an effort was clipped to its limit.
    rns_manipulability : float, :func:`~.rns.rns_manipulability` of the task rows (0 where
        the reaction null space cannot move the end effector in some task direction).
    locked_rate : (3,) base angular velocity with the joints locked, ``[H0^-1 h0]_w``, inertial
        frame [rad/s]: the rate the base turns at once the arm stops, zero without angular
        momentum (:func:`~.rns.momentum_notice`).
    """

    tau: np.ndarray
    phidot_desired: np.ndarray
    ee_position: np.ndarray
    ee_quaternion: np.ndarray
    position_error: float
    base_angular_rate: float
    momentum: np.ndarray
    manipulability: float
    condition: float
    mode: ControlMode
    saturated: bool = False
    rns_manipulability: float = float('nan')
    locked_rate: np.ndarray = field(default_factory=lambda: np.zeros(3))


def checked_array(value: object, what: str, shape: tuple[int, ...], expected: str) -> np.ndarray:
    """``value`` as a float array of ``shape`` with finite values (a cheap check for every
    control update: the law never runs on a goal or state nobody gave).

    Parameters
    ----------
    value : object
    what : str
        Names the argument in messages.
    shape : tuple of int
    expected : str
        What was expected, in messages (e.g. ``'3 finite values'``).

    Returns
    -------
    ndarray
        Of ``shape``.

    Raises
    ------
    TypeError
        Not real numbers (:func:`~ffsim_ros.dynamics.inputs.real_array`), naming ``what``.
    ValueError
        Another shape (no broadcasting: one coordinate is not three) or a NaN or an infinity,
        naming ``what``.
    """
    arr = np.asarray(real_array(value, what), dtype=float)
    if arr.shape != shape or not np.isfinite(arr).all():
        raise ValueError(f'{what}: expected {expected}, got {arr}')
    return arr


def base_rate_map(model: D.Model, q: np.ndarray) -> np.ndarray:
    """``A`` (3, n) with ``w0 = -A phidot`` under zero momentum [S0 eq. 21]: the angular rows
    of ``H0^-1 H0m`` at ``q`` (nq,), inertial frame [rad/s per rad/s | per m/s].

    Parameters
    ----------
    model : Model
        A floating-base model.
    q : (nq,) ndarray
        Configuration [m, -, rad | m], base parts in the inertial frame.

    Returns
    -------
    (3, n) ndarray
    """
    H0, H0m, _ = D.inertia_blocks(model, q)
    return np.linalg.solve(H0, H0m)[3:6]


def reactionless_basis(model: D.Model, q: np.ndarray, tol: float = 1e-10) -> np.ndarray:
    """Orthonormal basis ``N`` (n, n - rank A) of the reactionless joint rates ``A phidot = 0``.

    Any ``phidot = N zeta`` under zero momentum leaves the base angular velocity zero.

    Parameters
    ----------
    model : Model
        A floating-base model.
    q : (nq,) ndarray
        Configuration [m, -, rad | m], base parts in the inertial frame.
    tol : float
        Rank threshold on the singular values of ``A``, relative to ``max(1, s_max)``.

    Returns
    -------
    (n, n - rank A) ndarray
    """
    A = base_rate_map(model, q)
    _, s, vt = np.linalg.svd(A)
    rank = int(np.sum(s > tol * max(1.0, s[0])))
    return vt[rank:].T


class ReactionlessController:
    """End-effector controller of a free-floating robot (see the module docstring).

    Parameters
    ----------
    model : Model
        Floating-base model of the robot.
    ee_link : str
        Controlled link frame.
    mode : ControlMode or str
    gains : Gains
    track_orientation : bool
        Track the goal orientation too (6 task rows) instead of the position only.
    collision_shapes : sequence of CollisionShape
        The robot's collision shapes (:func:`~ffsim_ros.scene.geometry.shapes_from_urdf`);
        those on the base body (the base link and the links fixed to it) are the volume
        :meth:`check_goal` keeps goals out of; the others are ignored. Empty (default): no
        such check.
    collision_margin : float
        A goal closer than this to the base's shapes [m] (or inside them) is refused.
    active_joints : sequence of str, optional
        The joints the law may move (:func:`~.rns.active_joint_mask`); the others are held
        (zero commanded rate). None (default): per mode -- every joint in ``reactionless``
        mode (another arm is a momentum compensator there: its motion cancels part of the
        reaction), the joints on the path to ``ee_link`` (:func:`~.rns.chain_joints`) in the
        other modes (a goal for one arm leaves the other arms still), in both less the joints
        of ``<mimic>`` couplings (:func:`~.rns.default_joint_masks`). Give the chain's names
        to keep the other arms still in ``reactionless`` mode too.

    Raises
    ------
    ValueError
        A fixed-base model or one with spherical joints, an unknown link or mode, a shape
        on a link the model does not have, a negative or non-finite margin, unknown or
        repeated ``active_joints`` or none on the path to ``ee_link`` (by default: none
        that is not a mimic joint).
    """

    def __init__(
        self,
        model: D.Model,
        ee_link: str,
        *,
        mode: ControlMode | str = ControlMode.REACTIONLESS,
        gains: Gains | None = None,
        track_orientation: bool = False,
        collision_shapes: Sequence[CollisionShape] = (),
        collision_margin: float = 0.0,
        active_joints: Sequence[str] | None = None,
    ) -> None:
        if not model.floating_base or model.nq != 7 + model.n:  # (phi = q[7:], one per joint)
            raise ValueError(
                'ReactionlessController: expected a floating-base model with joints of one '
                f'coordinate each (nq = 7 + n, no spherical joint), got nq = {model.nq}, '
                f'n = {model.n}, floating base {model.floating_base}'
            )
        if model.frame(ee_link).body == 0:  # (frame() raises naming the known links)
            moving = [n for n in model.link_names if model.frame(n).body != 0]
            raise ValueError(
                f'ee_link: expected a link the joints move (one of {moving}), got {ee_link!r} '
                'on the base body'
            )
        self.model = model
        self.ee_link = ee_link
        self.mode = ControlMode(mode)
        self.gains = gains or Gains()
        self.track_orientation = bool(track_orientation)
        # the joints moved, as masks (1.0 moved, 0.0 held) and rate weights: (mask, weights)
        # for every joint, those of the chain to ee_link, or those given
        rw, masks = rate_weights(model), default_joint_masks(model, ee_link)
        if active_joints is not None:
            masks = (active_joint_mask(model, ee_link, active_joints),) * 2
        self._joint_sets = tuple((m, rw * m) for m in masks)
        self._joint_goal: np.ndarray | None = None
        self._joint_goal_key: tuple | None = None
        self.reach = self._estimate_reach()
        margin = float(collision_margin)
        if not math.isfinite(margin) or margin < 0.0:
            raise ValueError(f'collision_margin: expected a finite value >= 0, got {margin!r}')
        self.collision_margin = margin
        on_base = [s for s in collision_shapes if model.frame(s.link).body == 0]
        #: the base body's collision shapes, placed (None: no collision geometry on the base)
        self.base_shapes = PlacedShapes(model, on_base) if on_base else None

    @property
    def mode(self) -> ControlMode:
        """The control mode; set it to a :class:`ControlMode` or its name."""
        return self._mode

    @mode.setter
    def mode(self, mode: ControlMode | str) -> None:
        self._mode = ControlMode(mode)

    @property
    def active(self) -> np.ndarray:
        """(n,) 1.0 for the joints the law moves in the current mode, 0.0 for those it holds
        (``active_joints``)."""
        return self._joint_sets[self._mode is not ControlMode.REACTIONLESS][0]

    @property
    def active_joints(self) -> tuple[str, ...]:
        """Names of the joints the law moves in the current mode, in the model's order."""
        return tuple(np.asarray(self.model.joint_names)[self.active > 0].tolist())

    @property
    def weights(self) -> np.ndarray:
        """(n,) rate weights ``W`` (:func:`~.rns.rate_weights`), 0 for the held joints."""
        return self._joint_sets[self._mode is not ControlMode.REACTIONLESS][1]

    @property
    def _rows(self) -> slice:
        """The task rows of J*: position, or position and orientation."""
        return slice(0, 6) if self.track_orientation else slice(0, 3)

    # ------------------------------------------------------------------------------------------
    def _estimate_reach(self) -> float:
        """Upper bound of the distance from the first joint to the end effector [m]: the
        links' lengths at the neutral pose plus each prismatic joint's farthest travel from 0
        on the path (a 0.3 m slide standing at its limit was refused as out of reach)."""
        m = self.model
        slides = [k for k in chain_joints(m, self.ee_link) if m.joint_types[k] == 'prismatic']
        travel = float(sum(max(abs(m.lower[k]), abs(m.upper[k])) for k in slides))
        R, p = D.body_poses(m, D.neutral(m))
        frame = m.frame(self.ee_link)
        chain = []
        b = frame.body
        while b > 0:
            chain.append(p[b])
            b = int(m.arrays.parent[b])
        if not chain:
            return 0.0
        chain.reverse()
        tip = p[frame.body] + R[frame.body] @ frame.translation
        pts = np.vstack(chain + [tip])
        return travel + float(np.linalg.norm(np.diff(pts, axis=0), axis=1).sum())

    def shoulder_position(self, q: np.ndarray) -> np.ndarray:
        """(3,) inertial position [m] of the first joint on the path to the end effector (its
        child body's frame origin) at ``q`` (nq,).

        Parameters
        ----------
        q : (nq,) ndarray
            Configuration [m, -, rad | m].

        Returns
        -------
        (3,) ndarray
            Inertial frame [m].
        """
        R, p = D.body_poses(self.model, q)
        b = self.model.frame(self.ee_link).body
        first = b
        while b > 0:
            first = b
            b = int(self.model.arrays.parent[b])
        return p[first]

    def check_goal(self, q: np.ndarray, goal_position: np.ndarray) -> None:
        """Reject a goal that cannot be reached.

        Parameters
        ----------
        q : (nq,) configuration ``[r0, Q0 (x, y, z, w), phi]`` (base CoM [m], joints [rad | m]),
            at which the shoulder (:meth:`shoulder_position`) and the reaction null space are
            evaluated.
        goal_position : (3,) goal of the ``ee_link`` frame's origin, inertial (world) frame [m]
            (as :meth:`compute`'s); reachable within 98 % of ``reach`` [m] from the
            shoulder, and farther than ``collision_margin`` outside every collision shape of
            the base body (``collision_shapes``) at ``q``.

        Raises
        ------
        TypeError
            Coordinates that are not real numbers (complex numbers, strings, ...).
        ValueError
            Not 3 coordinates, non-finite values, a goal farther from the shoulder than the
            arm's reach, inside the base's collision geometry (or within the margin of it:
            the message names the link and the shape), or (in ``reactionless`` mode) no joint
            motion that leaves the base still moves the end effector (e.g. an arm of three
            joints or fewer: the reaction null space is empty).
        """
        goal_position = checked_array(goal_position, 'goal', (3,), '3 finite coordinates')
        # (math.dist scales: 1e308 m away is 1e308, not an overflow to inf with a warning)
        dist = math.dist(goal_position.tolist(), self.shoulder_position(q).tolist())
        if dist > 0.98 * self.reach:  # (the arm fully stretched is a singular pose)
            raise ValueError(
                f'goal unreachable: {goal_position.tolist()} is {dist:.4g} m from the '
                f'shoulder, expected at most '
                f'{0.98 * self.reach:.3f} m (98 % of the reach, {self.reach:.3f} m)'
            )
        self._check_base_collision(q, goal_position)
        if self.mode is ControlMode.REACTIONLESS:
            terms = self.task_terms(q)
            J = terms.J_star[self._rows]
            zero = np.zeros(J.shape[0])  # (only the reactionless Jacobian J W N is used)
            _, JN = reactionless_rates(
                J, terms.B[3:6], zero, np.zeros(3), self.weights, self.gains.damping
            )
            if not np.any(np.abs(JN) > RANK_TOL * np.abs(J).max()):
                raise ValueError(
                    f'goal unreachable in reactionless mode: no motion of the '
                    f'{len(self.active_joints)} joints the law moves leaves the base still and '
                    f'moves the end effector (reaction null space of dimension {JN.shape[1]}); '
                    'use gjm_tracking'
                )

    def _check_base_collision(self, q: np.ndarray, goal: np.ndarray) -> None:
        """Raise ValueError if ``goal`` (3,) lies inside (or within ``collision_margin`` of)
        a collision shape of the base body placed at ``q`` (the base moves: the measured
        configuration), naming the link and the shape."""
        placed = self.base_shapes
        if placed is None:
            return
        Rb, p = placed.world(np.asarray(q, dtype=float))
        for i, shape in enumerate(placed.shapes):
            local = placed.rotation(Rb, i).T @ (goal - p[i])
            d = point_distance(shape.shape, local)
            if d < self.collision_margin:
                what, where = (
                    ("goal inside the robot's base", f'{-d:.4g} m inside')
                    if d < 0.0
                    else ("goal too close to the robot's base", f'only {d:.4g} m outside')
                )
                raise ValueError(
                    f'{what}: {goal.tolist()} is {where} the collision '
                    f'{describe_shape(shape.shape)} of link {shape.link!r} (on the base), '
                    f'expected at least {self.collision_margin:.4g} m outside it'
                )

    # ------------------------------------------------------------------------------------------
    def compute(
        self,
        q: np.ndarray,
        v: np.ndarray,
        goal_position: np.ndarray | None,
        goal_rotation: np.ndarray | None = None,
        attitude_reference: np.ndarray | None = None,
        *,
        attitude_budget: float | None = None,
        self_motion: bool = True,
        restore: bool = False,
    ) -> ControlOutput:
        """One control update.

        Parameters
        ----------
        q : (nq,) measured configuration ``[r0, Q0 (x, y, z, w), phi]`` (base CoM [m]).
        v : (nv,) measured velocity ``[V0, w0, phidot]``, inertial frame [m/s, rad/s].
        goal_position : (3,) goal of the ``ee_link`` frame origin, inertial frame [m]; None
            holds the arm still (zero joint rates, computed-torque brake).
        goal_rotation : (3, 3) goal orientation of the ``ee_link`` frame (ee frame -> inertial
            frame; used with ``track_orientation``).
        attitude_reference : (4,) base quaternion (x, y, z, w) (base frame -> inertial frame)
            to hold in reactionless mode (default: the current attitude, i.e. rate damping
            only).
        attitude_budget : float, optional
            Reactionless mode only: the end-effector task first and the base attitude kept
            within this offset from ``attitude_reference`` [rad] (:func:`~.rns.budget_rates`)
            instead of the attitude first. Needs ``attitude_reference``.
        self_motion : bool
            Reactionless mode: add the RNS-manipulability self-motion (gain ``k_null``).
        restore : bool
            Reactionless mode: the end effector first and the base turned back toward
            ``attitude_reference`` inside the end-effector null space
            (:func:`~.rns.restore_rates`; overrides ``attitude_budget``).

        Returns
        -------
        ControlOutput

        Raises
        ------
        TypeError
            ``q``, ``v``, ``goal_position``, ``goal_rotation`` or ``attitude_reference`` not
            real numbers.
        ValueError
            ``q``, ``v``, ``goal_position`` (3 coordinates: one is not broadcast),
            ``goal_rotation`` or ``attitude_reference`` of the wrong shape or not finite (a
            zero quaternion), a ``goal_rotation`` that is no rotation (a mirror);
            ``attitude_budget`` without ``attitude_reference`` or not > 0.
        """
        model, g = self.model, self.gains
        n = model.n
        # cheap checks (arrays of 3 to nq values) that keep a goal or a state nobody gave from
        # being broadcast or turned into NaN efforts, or failing deep in an SVD
        q = checked_array(q, 'q', (model.nq,), f'{model.nq} finite values')
        v = checked_array(v, 'v', (model.nv,), f'{model.nv} finite values')
        if goal_position is not None:
            goal_position = checked_array(
                goal_position, 'goal_position', (3,), '3 finite coordinates [m]'
            )
        if goal_rotation is not None:
            goal_rotation = checked_array(
                goal_rotation, 'goal_rotation', (3, 3), 'a (3, 3) rotation matrix of finite values'
            )
            if not is_rotation(goal_rotation):  # (a mirror or a skewed matrix: no attitude)
                raise ValueError(
                    f'goal_rotation: expected a rotation matrix (orthonormal, det +1), got '
                    f'{goal_rotation.tolist()} (det {np.linalg.det(goal_rotation):.6g})'
                )
        if attitude_reference is not None:
            attitude_reference = checked_array(
                attitude_reference, 'attitude_reference', (4,), 'a finite quaternion (x, y, z, w)'
            )
            if not attitude_reference.any():
                raise ValueError('attitude_reference: expected a non-zero quaternion, got zeros')
        p_ee, R_ee = D.link_pose(model, q, self.ee_link)
        # one evaluation of H, c and the end-effector Jacobian serves every term below
        ff = D.free_floating_terms(model, q, v, self.ee_link)
        # the momentum's part of the motion (zero without momentum): relation (1) of
        # :mod:`.capture`, the base and the end effector drifting with the joints locked
        ee_drift, locked = momentum_drift(ff.H, ff.J, v)
        terms = TaskTerms(p_ee, R_ee, ff.J_star, ff.B, ee_drift, locked)
        Jt = ff.J_star[self._rows]
        sv = np.linalg.svd(Jt, compute_uv=False)
        manip = float(np.prod(sv))
        cond = float(sv[0] / sv[-1]) if sv[-1] > 0 else float('inf')
        phidot = v[6:]
        err = 0.0
        if goal_position is not None:
            err = float(np.linalg.norm(np.asarray(goal_position, float) - p_ee))
        if goal_position is not None and self.mode is ControlMode.JOINT_PD:
            phi_goal = self._joint_goal_for(q, np.asarray(goal_position, float))
            phiddot = g.kp_joint * (phi_goal - q[7:]) - g.kd_joint * phidot
            rate_gain = g.kp_joint / g.kd_joint if g.kd_joint > 0.0 else 0.0
            phidot_d = rate_gain * (phi_goal - q[7:])  # the rate the PD law tends to
        else:
            options = dict(attitude_budget=attitude_budget, self_motion=self_motion)
            args = (goal_position, goal_rotation, attitude_reference)
            if goal_position is None:
                phidot_d = np.zeros(n)
            else:
                phidot_d = self.desired_rates(q, terms, *args, **options, restore=restore)
            phiddot = g.kv_joint * (phidot_d - phidot)
            if goal_position is not None and g.rate_feedforward > 0.0:
                phiddot += self.rate_feedforward(  # (the momentum terms held over the step)
                    q,
                    v,
                    phidot_d,
                    lambda qq: self.desired_rates(
                        qq,
                        self.task_terms(qq)._replace(ee_drift=ee_drift, locked_rate=locked),
                        *args,
                        **options,
                        restore=restore,
                    ),
                )
        tau = ff.H_star @ phiddot + ff.c_star
        limit = model.effort_limit
        clipped = np.clip(tau, -limit, limit)
        w0 = v[3:6]
        return ControlOutput(
            tau=clipped,
            phidot_desired=phidot_d,
            ee_position=p_ee,
            ee_quaternion=matrix_to_quat(R_ee),
            position_error=err,
            base_angular_rate=float(np.linalg.norm(w0)),
            momentum=self._momentum_about_com(q, v, ff.H),
            manipulability=manip,
            condition=cond,
            mode=self.mode,
            saturated=bool(np.any(clipped != tau)),
            rns_manipulability=rns_manipulability(Jt, ff.B[3:6], self.weights),
            locked_rate=locked,
        )

    def rate_feedforward(
        self,
        q: np.ndarray,
        v: np.ndarray,
        rates: np.ndarray,
        field: Callable[[np.ndarray], np.ndarray],
    ) -> np.ndarray:
        """The inner loop's feedforward joint acceleration (n,) [rad/s^2 | m/s^2]: the time
        derivative of the commanded rates along the measured motion,
        ``d phidot_d / dt = (d phidot_d / dq) qdot``, by a one-sided difference over
        ``FEEDFORWARD_STEP`` along ``v`` on the Lie group, times ``Gains.rate_feedforward``.
        It is capped per joint at ``kv_joint`` times the joint's commanded speed limit (what
        the feedback asks for a full-speed error): where the field jumps (joint clamping
        switching in) the jump is not differentiated into a kick.

        Parameters
        ----------
        q : (nq,) ndarray
            Measured configuration [m, -, rad | m], base parts in the inertial frame.
        v : (nv,) ndarray
            Measured velocity [m/s, rad/s, rad/s | m/s], base parts in the inertial frame.
        rates : (n,) ndarray
            ``field(q)``, the commanded rates [rad/s | m/s].
        field : callable
            ``q -> (n,)`` the commanded rates at a configuration (the goal, reference and
            options held).

        Returns
        -------
        (n,) ndarray
            [rad/s^2 | m/s^2]
        """
        g = self.gains
        ahead = field(D.integrate(self.model, q, v, FEEDFORWARD_STEP))
        cap = speed_limits(self.model.velocity_limit, g.kv_joint * g.max_joint_speed)
        acc = np.clip((ahead - rates) / FEEDFORWARD_STEP, -cap, cap)
        return g.rate_feedforward * acc

    def task_terms(self, q: np.ndarray) -> TaskTerms:
        """:class:`~.rns.TaskTerms` of the end effector at ``q`` (kinematics and inertia only,
        no bias forces): what :meth:`desired_rates` needs, e.g. in a planner's rollout.

        Parameters
        ----------
        q : (nq,) ndarray
            Configuration [m, -, rad | m].

        Returns
        -------
        TaskTerms
        """
        return task_terms(self.model, np.asarray(q, dtype=float), self.ee_link)

    def desired_rates(
        self,
        q: np.ndarray,
        terms: TaskTerms,
        goal_position: np.ndarray,
        goal_rotation: np.ndarray | None = None,
        attitude_reference: np.ndarray | None = None,
        *,
        attitude_budget: float | None = None,
        self_motion: bool = True,
        restore: bool = False,
    ) -> np.ndarray:
        """The commanded joint rates (n,) [rad/s | m/s] of the ``reactionless`` and
        ``gjm_tracking`` modes at ``q`` (``terms`` evaluated there), scaled to the joint
        velocity limits: the outer loop of :meth:`compute`, without the torques.

        Joint position limits: a joint closer than ``LIMIT_ZONE`` to a limit has its rate
        toward it weighted down to zero at ``LIMIT_STOP`` (:func:`~.rns.limit_scales`) and the
        law solved again by the other joints (at most ``LIMIT_ITERATIONS`` times); away from
        the limits the rates are the law's unchanged.

        Raises ValueError in ``joint_pd`` mode (its rates come from a joint goal, see
        :meth:`compute`).

        Parameters
        ----------
        q, goal_position, goal_rotation, attitude_reference, attitude_budget, self_motion, restore
            As :meth:`compute`: ``q`` (nq,) [m, -, rad | m], ``goal_position`` (3,) inertial
            frame [m], ``goal_rotation`` (3, 3), ``attitude_reference`` (4,) (x, y, z, w).
        terms : TaskTerms
            At ``q`` (:meth:`task_terms`).

        Returns
        -------
        (n,) ndarray
            [rad/s | m/s]
        """
        if self.mode is ControlMode.JOINT_PD:
            raise ValueError('desired_rates: expected reactionless or gjm_tracking mode')
        model = self.model
        if restore:
            attitude_budget = RESTORE
        args = (q, terms, goal_position, goal_rotation, attitude_reference, attitude_budget)
        base = self.active if self.mode is ControlMode.GJM_TRACKING else self.weights
        rates = self._rates(*args, None, self_motion)
        phi = q[7:]
        if not np.any(near_limits(phi, model.lower, model.upper)):
            return self._limit_rates(rates)
        # joint clamping: the joints heading into a position limit are weighted down (to
        # zero at LIMIT_STOP from it) and the task solved again by the others
        weights = base
        for _ in range(LIMIT_ITERATIONS):
            scales = limit_scales(phi, model.lower, model.upper, rates)
            clamped = np.minimum(weights, base * scales)
            if np.array_equal(clamped, weights):
                break
            weights = clamped
            rates = self._rates(*args, weights, False)
        return self._limit_rates(rates)

    def _rates(
        self,
        q: np.ndarray,
        terms: TaskTerms,
        goal_position: np.ndarray,
        goal_rotation: np.ndarray | None,
        attitude_reference: np.ndarray | None,
        attitude_budget: float | None,
        weights: np.ndarray | None,
        self_motion: bool,
    ) -> np.ndarray:
        """The rates of :meth:`desired_rates` before scaling, with the rate weights ``weights``
        (None: the law's own, and the ``gjm_tracking`` mode unweighted but for the held
        joints); ``attitude_budget`` ``RESTORE``: :func:`~.rns.restore_rates`.

        With momentum (``terms.ee_drift``, ``terms.locked_rate``) the end effector moves with
        ``J* phidot + J_s H0^-1 h0`` and the base with ``w0 = c - A phidot``: the task asks
        ``J* phidot = xdot_d - J_s H0^-1 h0`` and the attitude ``A phidot = c - w0_d``."""
        g = self.gains
        Jt = terms.J_star[self._rows]
        e_p = np.asarray(goal_position, float) - terms.position
        xdot = saturate(g.kp_task * e_p, g.max_ee_speed)
        if self.track_orientation:
            R_ee = terms.rotation
            R_goal = R_ee if goal_rotation is None else np.asarray(goal_rotation, float)
            e_o = matrix_log(R_goal @ R_ee.T)
            xdot = np.r_[xdot, saturate(g.kp_orientation * e_o, g.max_ee_angular_speed)]
        if terms.ee_drift is not None:
            xdot = xdot - terms.ee_drift[self._rows]
        if self.mode is ControlMode.GJM_TRACKING:
            M = self.active if weights is None else weights
            return M * (dls_pinv(Jt * M, g.damping) @ xdot)
        W = self.weights if weights is None else weights
        A = terms.B[3:6]
        e_att = np.zeros(3)
        if attitude_reference is not None:
            e_att = attitude_error(q[3:7], np.asarray(attitude_reference, float))
        w0_d = g.kp_attitude * e_att
        if terms.locked_rate is not None:
            w0_d = w0_d - terms.locked_rate  # (the laws solve A phidot = -w0_d)
        if attitude_budget is RESTORE:
            return restore_rates(Jt, A, xdot, w0_d, W, g.damping)
        if attitude_budget is not None:
            if attitude_reference is None:
                raise ValueError('attitude_budget: expected an attitude_reference')
            offset = float(np.linalg.norm(e_att))
            return budget_rates(Jt, A, xdot, w0_d, W, g.damping, offset, float(attitude_budget))
        rates, JN = reactionless_rates(Jt, A, xdot, w0_d, W, g.damping)
        if self_motion and g.k_null > 0.0 and not self.track_orientation:
            rates = rates + self._self_motion_rates(q, Jt, A, JN, rates)
        return rates

    def _self_motion_rates(
        self, q: np.ndarray, Jt: np.ndarray, A: np.ndarray, JN: np.ndarray, task: np.ndarray
    ) -> np.ndarray:
        """Self-motion climbing ``log`` of the RNS manipulability: ``k_null d(log w)/ds d``
        along the unit self-motion ``d`` (one-sided difference, one kinematics evaluation),
        shrunk to the rate room the task rates ``task`` leave (the task has priority)."""
        zero = np.zeros_like(task)
        d = self_motion(Jt, A, self.weights)
        if d is None or JN.shape[1] < JN.shape[0]:
            return zero
        w0 = float(np.prod(np.linalg.svd(JN, compute_uv=False)))
        qp = q.copy()
        qp[7:] += SELF_MOTION_STEP * d
        tp = self.task_terms(qp)
        w1 = rns_manipulability(tp.J_star[self._rows], tp.B[3:6], self.weights)
        if not (w0 > 0.0 and w1 > 0.0):
            return zero
        slope = (np.log(w1) - np.log(w0)) / SELF_MOTION_STEP
        null = self.gains.k_null * slope * d
        vmax = speed_limits(self.model.velocity_limit, self.gains.max_joint_speed)
        room = np.max(np.abs(null) / np.maximum(vmax - np.abs(task), 1e-9))
        return null / room if room > 1.0 else null

    def _momentum_about_com(self, q: np.ndarray, v: np.ndarray, H: np.ndarray) -> np.ndarray:
        """``[P; L_g]`` from ``[P; L_0] = H[:6] v`` [S0 eqs. 12, 17]: no extra recursion."""
        h = H[:6] @ v
        rg = D.center_of_mass(self.model, q)
        h[3:] += np.cross(q[:3] - rg, h[:3])
        return h

    def _limit_rates(self, phidot_d: np.ndarray) -> np.ndarray:
        """Scale the whole rate vector (direction kept) to the joint velocity limits."""
        return capped_to_limits(phidot_d, self.gains.max_joint_speed * self.model.velocity_limit)

    def _joint_goal_for(self, q: np.ndarray, goal: np.ndarray) -> np.ndarray:
        """Fixed-base inverse kinematics (base frozen at its current pose), cached per goal."""
        key = tuple(np.round(goal, 9))
        if self._joint_goal is not None and self._joint_goal_key == key:
            return self._joint_goal
        model = self.model
        qi = q.copy()
        for _ in range(200):
            p, _ = D.link_pose(model, qi, self.ee_link)
            e = goal - p
            if np.linalg.norm(e) < 1e-6:
                break
            Jm = D.link_jacobian(model, qi, self.ee_link)[:3, 6:]
            step = self.active * (dls_pinv(Jm * self.active, 0.05) @ saturate(e, 0.1))
            qi[7:] = np.clip(qi[7:] + step, model.lower, model.upper)
        self._joint_goal, self._joint_goal_key = qi[7:].copy(), key
        return self._joint_goal
