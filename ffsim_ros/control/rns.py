"""Reaction null space (RNS) of a free-floating arm: the rate laws and measures (no ROS).

Under zero momentum the base angular velocity is ``w0 = -A phidot`` with ``A`` the angular rows
of ``B = H0^-1 H0m`` ([S0 eq. 21]; ``B`` is not the control map ``B(q)`` of [S0 eq. 41]: see
docs/equations.md, "Code names that differ from the seeds'"); the joint rates with
``A phidot = 0`` are the reaction null space of Nenchev & Yoshida: moving in it leaves the base
attitude untouched. Everything here works on the *rate-weighted* joint coordinates
``phidot = W xi`` (``W``: the joint velocity limits normalized to a maximum of 1), so that each
joint moves in proportion to what it can do.

=========================  ===================================================================
:func:`reactionless_rates`  attitude task first (``A phidot = -w0_d``), the end-effector task
                            in its null space by damped least squares (task priority)
:func:`prioritized_rates`   the same, and a secondary task (e.g. the gripper's angular
                            velocity) in the null space of both
:func:`budget_rates`        end-effector task first, the attitude task weighted by a barrier
                            that grows without bound as the attitude offset nears a budget
:func:`restore_rates`       end-effector task first, the attitude task inside its null space
                            (the spent attitude given back with the end effector held)
:func:`limit_scales`        joint clamping factors near the position limits
:func:`rns_manipulability`  ``sqrt(det(J_N J_N^T))`` of the reactionless Jacobian
                            ``J_N = J* W N`` (``N``: orthonormal basis of ``null(A W)``)
:func:`self_motion`         the joint-rate direction that moves neither the end effector nor
                            the base attitude (null space of ``[J* W; A W]``)
=========================  ===================================================================

Why a budget law at all: the reaction null space is a distribution of ``n - 3`` dimensions
in the joint space that is not integrable (the system is non-holonomic) but nearly so on the
sample servicer: loops of joint motion *inside* it hardly move the arm across it, so the
configurations reachable with the base attitude held lie close to one leaf of ``n - 3``
dimensions. Where the image of that leaf in task space folds, ``J_N`` loses rank and greedy
descent stops with the remaining error along the lost direction (a local minimum of the
reactionless task). Crossing a fold needs a small base rotation; :func:`budget_rates` spends
at most the budget for it, and the attitude is then restored where the reaction null space
allows it (spending at one place and restoring at another moves the arm to another leaf).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

import ffsim_ros.dynamics as D
from ffsim_ros.dynamics.lie import quat_conjugate, quat_log, quat_multiply

from .modes import ControlMode

#: Weight of the attitude task against the end-effector task in :func:`budget_rates` far from
#: the budget [m^2/rad^2]: 1 mrad/s of base rate costs as much as 1 mm/s of end-effector error.
BUDGET_WEIGHT = 1.0
#: Floor of ``1 - offset / budget`` in the barrier of :func:`budget_rates` (caps the weight).
BUDGET_BARRIER_FLOOR = 1e-3
#: Damping of the attitude task inside the end-effector null space in :func:`restore_rates`
#: [rad/s per rad/s] (the singular values of ``A W N_J`` are ~1e-2 on the servicer).
RESTORE_DAMPING = 1e-3
#: Relative threshold of the singular values counted in a rank.
RANK_TOL = 1e-10
#: Joint-limit zone [rad | m]: closer than this to a position limit, a joint's rate toward that
#: limit is scaled down (:func:`limit_scales`), linearly to zero at ``LIMIT_STOP``.
LIMIT_ZONE = 0.25
#: Distance from a position limit [rad | m] where a joint's rate toward it is zero.
LIMIT_STOP = 0.03
#: Largest share of a joint's range its zone takes (:func:`limit_zones`): a short joint (a
#: gripper finger's 0.04 m) gets ``LIMIT_ZONE`` and ``LIMIT_STOP`` scaled down to its range.
LIMIT_ZONE_SHARE = 0.25
#: Locked base rate [rad/s] above which :func:`momentum_notice` reports that the base cannot
#: be held in ``reactionless`` mode (0.01 deg/s: 0.1 deg, the attitude tolerance, in 10 s).
LOCKED_RATE_NOTICE = math.radians(0.01)


def momentum_notice(locked_rate: np.ndarray, mode: ControlMode | str) -> str:
    """Why the base cannot be held, or ``''``: in ``reactionless`` mode with a locked base rate
    (:attr:`~.reactionless.ControlOutput.locked_rate`) above ``LOCKED_RATE_NOTICE``, the
    system has angular momentum that the joint motions cannot remove (it is conserved): the
    law holds the attitude only by keeping the arm moving (``A phidot = c``), for as long as
    the joint range lasts, and the base turns at the locked rate once the arm stops (and
    while the arm is held: no goal, a supervisor's planning). The other modes: ``''``.

    Parameters
    ----------
    locked_rate : (3,) ndarray
        The base angular velocity with the joints locked, inertial frame [rad/s].
    mode : ControlMode or str

    Returns
    -------
    str
    """
    rate = float(np.linalg.norm(locked_rate))
    if ControlMode(mode) is not ControlMode.REACTIONLESS or not rate > LOCKED_RATE_NOTICE:
        return ''
    return (
        f'the system has angular momentum (base rate with the joints locked '
        f'{math.degrees(rate):.3g} deg/s): the reactionless mode holds the base only while the '
        'arm keeps moving to absorb it, and the base turns at that rate once the arm stops '
        '(reactionless motions need zero angular momentum)'
    )


class MomentumWatch:
    """:func:`momentum_notice` once per onset, for a node's log: :meth:`update` returns the
    notice when it appears (empty before), ``''`` while it lasts or when there is none;
    :attr:`notice` is the current one (e.g. for a status)."""

    def __init__(self) -> None:
        self.notice = ''

    def update(self, locked_rate: np.ndarray, mode: ControlMode | str) -> str:
        """The notice to log now, or ``''``.

        Parameters
        ----------
        locked_rate : (3,) ndarray
            :attr:`~.reactionless.ControlOutput.locked_rate`, inertial frame [rad/s].
        mode : ControlMode or str

        Returns
        -------
        str
        """
        was, self.notice = self.notice, momentum_notice(locked_rate, mode)
        return self.notice if self.notice and not was else ''


def limit_zones(lower: np.ndarray, upper: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The joint-limit zone and stop (n,), (n,) [rad | m] of each joint: ``LIMIT_ZONE`` and
    ``LIMIT_STOP``, both scaled down by the same factor where the zone would take more than
    ``LIMIT_ZONE_SHARE`` of the joint's range ``upper - lower`` (so a 0.04 m finger keeps
    0.01 m zones and can still move; joints of 1 rad or more are unaffected).

    Parameters
    ----------
    lower, upper : (n,) joint position limits [rad | m] (``-inf``/``inf`` for none).

    Returns
    -------
    zone, stop : (n,) ndarray
        Per joint [rad | m].
    """
    span = np.asarray(upper, dtype=float) - np.asarray(lower, dtype=float)
    zone = np.minimum(LIMIT_ZONE, LIMIT_ZONE_SHARE * span)
    return zone, zone * (LIMIT_STOP / LIMIT_ZONE)


class TaskTerms(NamedTuple):
    """What the rate laws need at one configuration (inertial frame, SI units).

    ``ee_drift`` and ``locked_rate`` carry the system's momentum (:func:`momentum_drift`;
    None: zero momentum, what a configuration alone gives).
    """

    position: np.ndarray  #: (3,) end-effector position [m]
    rotation: np.ndarray  #: (3, 3) end-effector orientation (link -> inertial)
    J_star: np.ndarray  #: (6, n) generalized Jacobian ``[v; w]`` of the end effector
    B: np.ndarray  #: (6, n) ``H0^-1 H0m``: ``x0dot = -B phidot`` under zero momentum
    #: (6,) end-effector twist ``[v; w]`` with the joints locked, ``J_s H0^-1 h0`` [m/s, rad/s]
    ee_drift: np.ndarray | None = None
    #: (3,) base angular velocity with the joints locked, ``[H0^-1 h0]_w`` [rad/s]
    locked_rate: np.ndarray | None = None


def momentum_drift(H: np.ndarray, J: np.ndarray, v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The momentum terms of the rate laws at one state: the end-effector twist (6,) and the
    base angular velocity (3,) the system would have with its joints locked now.

    With ``h0 = H[:6] v`` the momentum about the base CoM ([S0 eqs. 19, 21]), the base moves
    with ``x0dot = H0^-1 h0 - B phidot`` and the end effector with
    ``xdot = J_s H0^-1 h0 + J* phidot`` [S0 eq. 5]: the first terms are returned (zero for a
    system without momentum).

    Parameters
    ----------
    H : (nv, nv) ndarray
        Generalized inertia at the state.
    J : (6, nv) ndarray
        End-effector link Jacobian ``[J_s | J_m]`` (rows ``[v; w]``), inertial frame.
    v : (nv,) ndarray
        Velocity ``[V0, w0, phidot]``, base parts in the inertial frame
        [m/s, rad/s, rad/s | m/s].

    Returns
    -------
    ee_drift : (6,) ndarray
        ``J_s H0^-1 h0`` [m/s, rad/s], inertial frame.
    locked_rate : (3,) ndarray
        ``[H0^-1 h0]_w`` [rad/s], inertial frame.
    """
    drift = np.linalg.solve(H[:6, :6], H[:6] @ v)
    return J[:, :6] @ drift, drift[3:]


def task_terms(model: D.Model, q: np.ndarray, link: str) -> TaskTerms:
    """:class:`TaskTerms` at ``q`` from one mass matrix and one link Jacobian (no bias forces).

    Parameters
    ----------
    model : Model
        Floating-base model.
    q : (nq,) ndarray
        Configuration [m, -, rad | m], base parts in the inertial frame.
    link : str
        End-effector link frame (its origin is the point of ``J_star``).

    Returns
    -------
    TaskTerms
    """
    H = D.mass_matrix(model, q)
    B = np.linalg.solve(H[:6, :6], H[:6, 6:])
    J = D.link_jacobian(model, q, link)
    p, R = D.link_pose(model, q, link)
    return TaskTerms(p, R, J[:, 6:] - J[:, :6] @ B, B)


def chain_joints(model: D.Model, link: str) -> tuple[int, ...]:
    """Indices (ascending) of the joints on the path from the base to ``link``: the joints
    that move it relative to the base (one coordinate each, as the rate laws need).

    Parameters
    ----------
    model : Model
        A floating-base model of joints with one coordinate each.
    link : str
        A link of the model.

    Returns
    -------
    tuple of int
        Indices into ``phi`` (``q[7:]``).
    """
    a = model.arrays
    base = model.nv - model.n  # (the base's DoFs come first in v)
    out = []
    b = model.frame(link).body
    while b > 0:
        out.extend(range(int(a.iv[b]) - base, int(a.iv[b]) - base + int(a.nvj[b])))
        b = int(a.parent[b])
    return tuple(sorted(out))


def active_joint_mask(
    model: D.Model, link: str, joints: Sequence[str] | None = None
) -> np.ndarray:
    """``(n,)`` 1.0 for the joints the rate laws may move, 0.0 for those they hold.

    Parameters
    ----------
    model : Model
        A floating-base model of joints with one coordinate each.
    link : str
        The end-effector link.
    joints : sequence of str, optional
        Names of the joints that may move; None: the joints on the path to ``link``
        (:func:`chain_joints`), so a goal for one arm of a multi-arm robot leaves the others
        still.

    Returns
    -------
    (n,) ndarray

    Raises
    ------
    TypeError
        ``joints`` not a sequence of strings.
    ValueError
        An unknown or repeated joint name (the known ones named), or no joint on the path to
        ``link`` among them (the end effector could not move relative to the base).
    """
    chain = chain_joints(model, link)
    if joints is None:
        chosen = list(chain)
    else:
        if not isinstance(joints, Sequence) or isinstance(joints, str | bytes):
            raise TypeError(f'active_joints: expected a sequence of joint names, got {joints!r}')
        if not all(isinstance(j, str) for j in joints):
            raise TypeError(f'active_joints: expected a sequence of joint names, got {joints!r}')
        names = list(joints)
        bad = [j for j in names if j not in model.joint_names]
        if bad:
            raise ValueError(
                f'active_joints: unknown joints {bad}; the model has {list(model.joint_names)}'
            )
        if len(set(names)) != len(names):
            raise ValueError(f'active_joints: expected each joint once, got {names}')
        chosen = [model.joint_names.index(j) for j in names]
    if not set(chosen) & set(chain):
        raise ValueError(
            f'active_joints: expected at least one joint on the path to {link!r} '
            f'({[model.joint_names[k] for k in chain]}), got '
            f'{[model.joint_names[k] for k in chosen]}'
        )
    mask = np.zeros(model.n)
    mask[chosen] = 1.0
    return mask


def mimic_joints(model: D.Model) -> tuple[str, ...]:
    """The joints of the model's URDF ``<mimic>`` couplings (``Model.mimics``), both the
    joint that mimics and the one it mimics, in the model's order. The coupling is not
    modelled, so the rate laws hold them by default (``active_joints`` None): moving either
    alone breaks it.

    Parameters
    ----------
    model : Model

    Returns
    -------
    tuple of str
    """
    coupled = {name for m in model.mimics for name in (m.joint, m.mimicked)}
    return tuple(name for name in model.joint_names if name in coupled)


def default_joint_masks(model: D.Model, link: str) -> tuple[np.ndarray, np.ndarray]:
    """The :func:`active_joint_mask` of every joint (``reactionless`` mode) and of the joints
    on the path to ``link`` (the other modes), less the :func:`mimic_joints`.

    Parameters
    ----------
    model : Model
        A floating-base model of joints with one coordinate each.
    link : str
        The end-effector link.

    Returns
    -------
    (n,) ndarray, (n,) ndarray

    Raises
    ------
    ValueError
        Every joint on the path to ``link`` a mimic joint.
    """
    held = set(mimic_joints(model))
    chain = [model.joint_names[k] for k in chain_joints(model, link)]
    every, path = (
        active_joint_mask(model, link, [j for j in names if j not in held])
        for names in (model.joint_names, chain)
    )
    return every, path


def speed_limits(vmax: np.ndarray, scale: float = 1.0) -> np.ndarray:
    """``scale * vmax`` (n,) [rad/s | m/s], inf for the joints without a speed limit: ``vmax``
    0 (URDF ``velocity="0"``, the value unknown: :attr:`~ffsim_ros.dynamics.Model.velocity_limit`),
    inf or NaN. The laws' rate caps all read the limits through it.

    Parameters
    ----------
    vmax : (n,) ndarray
        Joint speed limits [rad/s | m/s].
    scale : float
        Factor on the finite ones [-] (>= 0).

    Returns
    -------
    (n,) ndarray
    """
    vmax = np.asarray(vmax, dtype=float)
    return np.where(np.isfinite(vmax) & (vmax > 0.0), scale * vmax, np.inf)


def capped_to_limits(rates: np.ndarray, vmax: np.ndarray) -> np.ndarray:
    """``rates`` (n,), or each row of (B, n), scaled down (direction kept) so that no joint
    exceeds its speed limit; a joint without one (:func:`speed_limits`) does not count.
    Rates within the limits are returned as they are.

    Parameters
    ----------
    rates : (n,) or (B, n) ndarray
        Joint rates [rad/s | m/s].
    vmax : (n,) ndarray
        Their joint speed limits [rad/s | m/s].

    Returns
    -------
    ndarray
        ``rates``' shape [rad/s | m/s].
    """
    rates = np.asarray(rates, dtype=float)
    if rates.size == 0:
        return rates
    ratio = np.max(np.abs(rates) / speed_limits(vmax), axis=-1, keepdims=True)
    return np.where(ratio > 1.0, rates / np.where(ratio > 1.0, ratio, 1.0), rates)


def scaled_to_limits(rates: np.ndarray, vmax: np.ndarray, fraction: float) -> np.ndarray:
    """``rates`` (n,) scaled (direction kept) so that the joint nearest its speed limit runs
    at ``fraction`` of it; a joint without a speed limit (:func:`speed_limits`) counts with
    the largest finite limit, 1 rad/s or m/s where none is. Zero rates stay zero.

    Parameters
    ----------
    rates : (n,) ndarray
        Joint rates [rad/s | m/s].
    vmax : (n,) ndarray
        Their joint speed limits [rad/s | m/s].
    fraction : float
        Of the limit [-].

    Returns
    -------
    (n,) ndarray
        The scaled joint rates [rad/s | m/s].
    """
    limits = speed_limits(vmax)
    finite = np.isfinite(limits)
    limits = np.where(finite, limits, np.max(limits[finite]) if np.any(finite) else 1.0)
    ratio = float(np.max(np.abs(rates) / limits)) if rates.size else 0.0
    return rates * (fraction / ratio) if ratio > 0.0 else rates


def rate_weights(model: D.Model) -> np.ndarray:
    """``W`` (n,): the joint velocity limits normalized to a maximum of 1 (1 where unlimited).

    Parameters
    ----------
    model : Model

    Returns
    -------
    (n,) ndarray
        Per joint [-] (a joint without a speed limit, :func:`speed_limits`, counts with the
        largest finite limit).
    """
    vmax = speed_limits(model.velocity_limit)
    finite = np.isfinite(vmax)
    if not np.any(finite):
        return np.ones(model.n)
    w = np.where(finite, vmax, np.max(vmax[finite]))
    return w / np.max(w)


def unmimicked_rate_weights(model: D.Model) -> np.ndarray:
    """:func:`rate_weights` with 0 for the :func:`mimic_joints` (held: the capture's laws,
    which move every other joint, must not break a coupling they do not model).

    Parameters
    ----------
    model : Model

    Returns
    -------
    (n,) ndarray
        Per joint [-].
    """
    held = set(mimic_joints(model))
    return rate_weights(model) * [name not in held for name in model.joint_names]


def attitude_error(quaternion: np.ndarray, reference: np.ndarray) -> np.ndarray:
    """Rotation vector (3,) [rad], inertial frame, that turns ``quaternion`` into ``reference``.

    Both (4,) unit quaternions (x, y, z, w) of the base; its norm is the attitude offset.

    Parameters
    ----------
    quaternion : (4,) ndarray
        Base attitude (x, y, z, w) in the inertial frame [-].
    reference : (4,) ndarray
        Reference attitude (x, y, z, w) in the inertial frame [-].

    Returns
    -------
    (3,) ndarray
        ``log(reference quaternion^-1)`` [rad], inertial frame.
    """
    return quat_log(quat_multiply(reference, quat_conjugate(quaternion)))


def dls_pinv(J: np.ndarray, damping: float) -> np.ndarray:
    """Damped least-squares inverse ``J^T (J J^T + lambda^2 E)^-1``, (n, m) for J (m, n).

    Parameters
    ----------
    J : (m, n) ndarray
        Any matrix (a Jacobian here: frame and units are the caller's; the inverse maps back
        in the reciprocal units).
    damping : float
        ``lambda``, in the units of ``J``.

    Returns
    -------
    (n, m) ndarray

    Raises
    ------
    ValueError
        ``J J^T + lambda^2 E`` singular: ``J`` of lower row rank than its m rows with
        ``damping`` 0 (a damping > 0 makes it regular).
    """
    m = J.shape[0]
    try:
        return J.T @ np.linalg.solve(J @ J.T + damping**2 * np.eye(m), np.eye(m))
    except np.linalg.LinAlgError:
        raise ValueError(
            f'damping: J J^T + damping^2 E is singular with damping = {damping!r} (J of shape '
            f'{J.shape} has a row rank below {m}): expected a damping > 0 or J of full row rank'
        ) from None


def _null_basis(AW: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(pinv(AW), N)``: pseudo-inverse and orthonormal null-space basis of ``AW`` (3, n)."""
    u, s, vt = np.linalg.svd(AW)
    rank = int(np.sum(s > RANK_TOL * max(1.0, s[0])))
    pinv = vt[:rank].T @ (u[:, :rank].T / s[:rank, None])
    return pinv, vt[rank:].T


def reactionless_rates(
    J: np.ndarray,
    A: np.ndarray,
    xdot: np.ndarray,
    w0_d: np.ndarray,
    weights: np.ndarray,
    damping: float,
) -> tuple[np.ndarray, np.ndarray]:
    """Task-priority rates: base angular velocity ``w0 = -A phidot = w0_d`` first, the task
    ``J phidot = xdot`` inside the remaining reaction null space (damped least squares).

    Parameters
    ----------
    J : (m, n) ndarray
        Task rows of the generalized Jacobian ``J*`` (:attr:`TaskTerms.J_star`): end-effector
        ``[v; w]`` rows per joint rate, inertial frame [m/s, rad/s per rad/s | m/s].
    A : (3, n) ndarray
        Angular rows of ``B = H0^-1 H0m``: ``w0 = -A phidot`` under zero momentum, inertial
        frame [rad/s per rad/s | m/s].
    xdot : (m,) ndarray
        Task rate (the rows of ``J``), inertial frame [m/s, rad/s].
    w0_d : (3,) ndarray
        Desired base angular velocity (the attitude correction), inertial frame [rad/s].
    weights : (n,) ndarray
        ``W`` (:func:`rate_weights`, possibly times :func:`limit_scales`), per joint [-].
    damping : float
        ``lambda`` of the damped least squares, in the units of ``J W``.

    Returns
    -------
    phidot : (n,) ndarray
        Joint rates [rad/s | m/s].
    JN : (m, k) ndarray
        The reactionless Jacobian ``J W N`` (units of ``J``).
    """
    AW = A * weights
    pinv, N = _null_basis(AW)
    xi_att = pinv @ (-w0_d)
    JW = J * weights
    JN = JW @ N
    zeta = dls_pinv(JN, damping) @ (xdot - JW @ xi_att)
    return weights * (xi_att + N @ zeta), JN


def prioritized_rates(
    J: np.ndarray,
    A: np.ndarray,
    xdot: np.ndarray,
    J2: np.ndarray,
    xdot2: np.ndarray,
    w0_d: np.ndarray,
    weights: np.ndarray,
    damping: float,
    damping2: float,
) -> tuple[np.ndarray, np.ndarray]:
    """Three-level task priority: :func:`reactionless_rates` (base angular velocity first, the
    task ``J phidot = xdot`` in the reaction null space), then a secondary task
    ``J2 phidot = xdot2`` inside the null space of both.

    With ``N`` an orthonormal basis of ``null(A W)`` and ``zeta`` the damped least-squares
    solution of the first task, ``N2`` an orthonormal basis of ``null(J W N)``, the secondary
    correction is ``eta = (J2 W N N2)^#_d (xdot2 - J2 W (xi_att + N zeta))`` (damped inverse,
    factor ``damping2``): it moves neither the base attitude nor the first task at first order.
    On the 7-joint servicer with a position task ``N2`` has one dimension (none at a fold of
    the reaction null space, where the correction is zero).

    Parameters
    ----------
    J : (m, n) ndarray
        Task rows of the generalized Jacobian ``J*`` (:attr:`TaskTerms.J_star`): end-effector
        ``[v; w]`` rows per joint rate, inertial frame [m/s, rad/s per rad/s | m/s].
    A : (3, n) ndarray
        Angular rows of ``B = H0^-1 H0m``: ``w0 = -A phidot`` under zero momentum, inertial
        frame [rad/s per rad/s | m/s].
    xdot : (m,) ndarray
        Task rate (the rows of ``J``), inertial frame [m/s, rad/s].
    w0_d : (3,) ndarray
        Desired base angular velocity (the attitude correction), inertial frame [rad/s].
    weights : (n,) ndarray
        ``W`` (:func:`rate_weights`, possibly times :func:`limit_scales`), per joint [-].
    damping : float
        ``lambda`` of the damped least squares, in the units of ``J W``.
    J2 : (m2, n) ndarray
        Secondary task rows per joint rate (e.g. the gripper's angular rows of ``J*``),
        inertial frame [m/s, rad/s per rad/s | m/s].
    xdot2 : (m2,) ndarray
        Secondary task rate, inertial frame [m/s, rad/s].
    damping2 : float
        Damping factor of the secondary task.

    Returns
    -------
    phidot : (n,) joint rates [rad/s | m/s] of the attitude and first tasks (those of
        :func:`reactionless_rates`);  phidot2 : (n,) the secondary correction (to add, or to
        scale down where the joint speed limits leave no room: the first tasks keep priority).
    """
    AW = A * weights
    pinv, N = _null_basis(AW)
    xi_att = pinv @ (-w0_d)
    JN = (J * weights) @ N
    zeta = dls_pinv(JN, damping) @ (xdot - (J * weights) @ xi_att)
    _, N2 = _null_basis(JN)
    if N2.shape[1] == 0:
        return weights * (xi_att + N @ zeta), np.zeros(weights.size)
    J2N = (J2 * weights) @ N
    eta = dls_pinv(J2N @ N2, damping2) @ (xdot2 - (J2 * weights) @ xi_att - J2N @ zeta)
    return weights * (xi_att + N @ zeta), weights * (N @ (N2 @ eta))


def budget_rates(
    J: np.ndarray,
    A: np.ndarray,
    xdot: np.ndarray,
    w0_d: np.ndarray,
    weights: np.ndarray,
    damping: float,
    offset: float,
    budget: float,
) -> np.ndarray:
    """End-effector-first rates that turn the base only where the reaction null space cannot
    move the end effector, and never by more than ``budget``.

    ``xi = argmin |J W xi - xdot|^2 + mu |A W xi + w0_d|^2 + lambda^2 |xi|^2``, ``phidot = W xi``
    with ``mu = BUDGET_WEIGHT / (1 - offset / budget)^2``: where ``[J; A]`` has full rank both
    tasks are met (no attitude is spent); at a fold of the reaction null space the end
    effector goes on at the price of the least base rotation, and the weight grows without
    bound as the offset nears the budget, so the attitude rate in the lost direction goes to
    zero there. ``w0_d`` (the attitude correction toward the reference) also pulls the spent
    attitude back wherever the self-motion allows.

    Parameters
    ----------
    J : (m, n) ndarray
        Task rows of the generalized Jacobian ``J*`` (:attr:`TaskTerms.J_star`): end-effector
        ``[v; w]`` rows per joint rate, inertial frame [m/s, rad/s per rad/s | m/s].
    A : (3, n) ndarray
        Angular rows of ``B = H0^-1 H0m``: ``w0 = -A phidot`` under zero momentum, inertial
        frame [rad/s per rad/s | m/s].
    xdot : (m,) ndarray
        Task rate (the rows of ``J``), inertial frame [m/s, rad/s].
    w0_d : (3,) ndarray
        Desired base angular velocity (the attitude correction), inertial frame [rad/s].
    weights : (n,) ndarray
        ``W`` (:func:`rate_weights`, possibly times :func:`limit_scales`), per joint [-].
    damping : float
        ``lambda`` of the damped least squares, in the units of ``J W``.
    offset : float
        Current attitude offset from the reference [rad].
    budget : float
        The attitude budget [rad] (> 0).

    Returns
    -------
    (n,) joint rates [rad/s | m/s].
    """
    if not budget > 0.0:
        raise ValueError(f'budget_rates: expected a budget > 0 rad, got {budget}')
    JW = J * weights
    AW = A * weights
    mu = BUDGET_WEIGHT / max(1.0 - offset / budget, BUDGET_BARRIER_FLOOR) ** 2
    n = weights.size
    lhs = JW.T @ JW + mu * (AW.T @ AW) + damping**2 * np.eye(n)
    xi = np.linalg.solve(lhs, JW.T @ xdot - mu * (AW.T @ w0_d))
    return weights * xi


def restore_rates(
    J: np.ndarray,
    A: np.ndarray,
    xdot: np.ndarray,
    w0_d: np.ndarray,
    weights: np.ndarray,
    damping: float,
) -> np.ndarray:
    """End-effector-first rates that turn the base back: the task ``J phidot = xdot`` first
    (damped least squares), the base angular velocity ``w0 = -A phidot = w0_d`` inside the
    null space of the task: ``xi = J_W^+ xdot + N_J (A W N_J)^+ (-w0_d - A W J_W^+ xdot)``,
    ``phidot = W xi`` (``N_J``: orthonormal basis of ``null(J W)``).

    The converse priority of :func:`reactionless_rates`: with ``xdot`` holding the end effector
    the arm moves in its self-motion manifold (4 dimensions for a 7-joint arm and a position
    task) and the base is turned by the reaction of that motion: where ``A W N_J`` has full
    rank (3), any attitude error is corrected at first order with the end effector held -- the
    attitude spent by :func:`budget_rates` to cross a fold of the reaction null space is given
    back without undoing the crossing. ``(A W N_J)^+`` is the damped inverse with
    ``RESTORE_DAMPING``.

    Parameters
    ----------
    J : (m, n) ndarray
        Task rows of the generalized Jacobian ``J*`` (:attr:`TaskTerms.J_star`): end-effector
        ``[v; w]`` rows per joint rate, inertial frame [m/s, rad/s per rad/s | m/s].
    A : (3, n) ndarray
        Angular rows of ``B = H0^-1 H0m``: ``w0 = -A phidot`` under zero momentum, inertial
        frame [rad/s per rad/s | m/s].
    xdot : (m,) ndarray
        Task rate (the rows of ``J``), inertial frame [m/s, rad/s].
    w0_d : (3,) ndarray
        Desired base angular velocity (the attitude correction), inertial frame [rad/s].
    weights : (n,) ndarray
        ``W`` (:func:`rate_weights`, possibly times :func:`limit_scales`), per joint [-].
    damping : float
        ``lambda`` of the end-effector task, in the units of ``J W``.

    Returns
    -------
    (n,) ndarray
        Joint rates [rad/s | m/s].
    """
    JW = J * weights
    AW = A * weights
    xi_task = dls_pinv(JW, damping) @ xdot
    _, NJ = _null_basis(JW)
    if NJ.shape[1] == 0:
        return weights * xi_task
    M = AW @ NJ
    xi_att = NJ @ (dls_pinv(M, RESTORE_DAMPING) @ (-w0_d - AW @ xi_task))
    return weights * (xi_task + xi_att)


def rns_manipulability(J: np.ndarray, A: np.ndarray, weights: np.ndarray) -> float:
    """``sqrt(det(J_N J_N^T))`` of the reactionless Jacobian ``J_N = J W N`` (m <= k).

    The product of the singular values of ``J_N`` (independent of the choice of the basis
    ``N`` of ``null(A W)``): zero where reactionless motions cannot move the end effector in
    some task direction. Units of ``J`` to the power ``m`` (m^3 for the position rows).

    Parameters
    ----------
    J : (m, n) ndarray
        Task rows of ``J*``, inertial frame [m/s, rad/s per rad/s | m/s].
    A : (3, n) ndarray
        Angular rows of ``B = H0^-1 H0m``, inertial frame [rad/s per rad/s | m/s].
    weights : (n,) ndarray
        ``W``, per joint [-].

    Returns
    -------
    float
    """
    _, N = _null_basis(A * weights)
    JN = (J * weights) @ N
    if JN.shape[1] < JN.shape[0]:
        return 0.0
    return float(np.prod(np.linalg.svd(JN, compute_uv=False)))


def self_motion(J: np.ndarray, A: np.ndarray, weights: np.ndarray) -> np.ndarray | None:
    """Unit joint-rate direction (n,) in the null space of ``[J W; A W]`` mapped by ``W``.

    Moves neither the end effector (first order) nor the base attitude; None when the arm has
    no such redundancy (``n <= m + 3``, counting the joints of weight > 0: a joint of weight 0
    is held and does not move). At a fold the null space has a second dimension; the
    direction of the smallest singular value is returned.

    Parameters
    ----------
    J : (m, n) ndarray
        Task rows of ``J*``, inertial frame [m/s, rad/s per rad/s | m/s].
    A : (3, n) ndarray
        Angular rows of ``B = H0^-1 H0m``, inertial frame [rad/s per rad/s | m/s].
    weights : (n,) ndarray
        ``W``, per joint [-].

    Returns
    -------
    (n,) ndarray or None
        Joint-rate direction [-], unit norm (either sign).
    """
    moving = weights > 0.0  # (a joint of weight 0 is held: it takes no part)
    if np.count_nonzero(moving) <= J.shape[0] + 3:
        return None
    w = weights[moving]
    _, _, vt = np.linalg.svd(np.vstack((J[:, moving] * w, A[:, moving] * w)))
    d = np.zeros(weights.size)
    d[moving] = w * vt[-1]
    return d / np.linalg.norm(d)


def near_limits(phi: np.ndarray, lower: np.ndarray, upper: np.ndarray) -> np.ndarray:
    """(n,) bool: the joints inside the zone of a position limit (``LIMIT_ZONE``, or less on a
    short joint: :func:`limit_zones`), or beyond it.

    Parameters
    ----------
    phi : (n,) ndarray
        Joint positions [rad | m].
    lower, upper : (n,) ndarray
        Joint position limits [rad | m].

    Returns
    -------
    (n,) ndarray of bool
    """
    zone, _ = limit_zones(lower, upper)
    return (phi >= upper - zone) | (phi <= lower + zone)  # (>=: a locked joint is in)


def limit_scales(
    phi: np.ndarray, lower: np.ndarray, upper: np.ndarray, rates: np.ndarray
) -> np.ndarray:
    """Joint clamping factors (n,) in [0, 1] for the rates ``rates`` (n,) at ``phi`` (n,).

    1 for a joint at rest or farther than ``LIMIT_ZONE`` from the limit its rate heads to,
    falling linearly to 0 at ``LIMIT_STOP`` from it (and beyond; both scaled down on a short
    joint, :func:`limit_zones`): multiplied into the rate weights ``W`` of the laws
    (:func:`reactionless_rates`, :func:`budget_rates`), a clamped joint stops while the others
    take over its share of the task (joint clamping, Baerlocher & Boulic 2004). Moving away
    from a limit is never restricted.

    Parameters
    ----------
    phi : (n,) joint positions [rad | m].
    lower, upper : (n,) joint position limits [rad | m].
    rates : (n,) joint rates [rad/s | m/s] (only their signs matter).

    Returns
    -------
    (n,) ndarray
        Per joint [-], in [0, 1].
    """
    zone, stop = limit_zones(lower, upper)
    room = np.where(rates > 0.0, upper - phi, np.where(rates < 0.0, phi - lower, np.inf))
    width = np.maximum(zone - stop, np.finfo(float).tiny)  # (a locked joint: no range)
    return np.clip((room - stop) / width, 0.0, 1.0)


def saturate(x: np.ndarray, limit: float) -> np.ndarray:
    """``x`` scaled down to norm ``limit`` if longer (direction kept).

    Parameters
    ----------
    x : (k,) ndarray
        A vector (any frame and units: kept).
    limit : float
        Largest norm, in the units of ``x``.

    Returns
    -------
    (k,) ndarray
    """
    norm = float(np.linalg.norm(x))
    return x if norm <= limit or norm == 0.0 else x * (limit / norm)


def zero_momentum_step(
    model: D.Model, q: np.ndarray, phidot: np.ndarray, B: np.ndarray, dt: float
) -> np.ndarray:
    """Configuration after ``dt`` of joint rates ``phidot`` with zero momentum (kinematics only).

    The base moves with ``x0dot = -B phidot`` [S0 eq. 21] (``B`` evaluated at ``q``): one
    explicit step on the Lie group, what a planner needs to predict the closed loop.

    Parameters
    ----------
    model : Model
        A floating-base model.
    q : (nq,) ndarray
        Configuration ``[r0, Q0, phi]``, base in the inertial frame [m, -, rad | m].
    phidot : (n,) ndarray
        Joint rates [rad/s | m/s].
    B : (6, n) ndarray
        ``H0^-1 H0m`` at ``q`` (:attr:`TaskTerms.B`), inertial frame
        [m/s, rad/s per rad/s | m/s].
    dt : float
        Step [s].

    Returns
    -------
    (nq,) ndarray
        The configuration after ``dt`` (same conventions).
    """
    return D.integrate(model, q, np.concatenate((-B @ phidot, phidot)), dt)
