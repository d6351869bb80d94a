"""Grasp: a weld between the gripper and a target's handle (it closes no loop, unlike the cut
hinges of [M sec. 4]; its wrench read off the robot's base rows of [S0 eq. 41]).

Robot and target are two trees, each with its free root. A weld cut hinge between the gripper
link ``g`` (robot) and the handle's link ``h`` (target) makes them one tree, not a closed chain:
so the welded system is represented exactly by one compiled model,
:func:`~ffsim_ros.dynamics.weld_models` (the target's root body merged into the gripper's
body, the target's joints after the robot's), and the weld needs no multipliers to hold.

Capture impulse. The weld's six rows, taken at one point ``o`` (the handle origin) as in
:class:`~ffsim_ros.dynamics.LoopClosure` ('weld': body-fixed rows acting at one point), are
``G_r v_r - G_t v_t = 0`` with ``G`` the ``[v_o; w]`` rows of each side
(:func:`~.impact.contact_jacobian`). Closing the gripper applies the impulse ``L = [f; m]``
(force at ``o`` and couple; ``+`` on the robot, ``-`` on the target) that makes the relative
twist zero with the least kinetic energy -- the kinetic-energy-metric projection of the
velocities onto the weld [S0 eq. 41] (``J^T F_c`` integrated over the capture):

    K L = -(G_r v_r - G_t v_t),   K = G_r H_r^-1 G_r^T + G_t H_t^-1 G_t^T,
    v_r+ = v_r + H_r^-1 G_r^T L,  v_t+ = v_t - H_t^-1 G_t^T L,

``K`` the sum of Yoshida's 6x6 extended inversed inertia tensors at ``o``. The impulse is
internal (one point, equal and opposite): the total momentum is unchanged; the energy lost is
``1/2 d^T K^-1 d`` with ``d`` the relative twist before.

Constraint force. With the welded model's accelerations, the robot's own equation of motion
[S0 eq. 41] gives the wrench the target exerts on it: ``H_r a_r + c_r - [0; tau] = G_r^T F``,
read off the base rows (the base of a free-floating robot is a free body, so its six rows
determine ``F`` at ``o``); the target feels ``-F``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

import ffsim_ros.dynamics as D
from ffsim_ros.dynamics.lie import cross, is_rotation, matrix_log, matrix_to_quat

from .impact import contact_jacobian
from .targets import Handle


@dataclass(frozen=True)
class Gripper:
    """The robot's grasp frame: ``rotation`` (3, 3) and ``translation`` (3,) [m] in the frame
    of ``link`` (the end effector); it must be on a moving body of the robot."""

    link: str
    rotation: np.ndarray = field(default_factory=lambda: np.eye(3))
    translation: np.ndarray = field(default_factory=lambda: np.zeros(3))

    def __post_init__(self) -> None:
        R = np.array(self.rotation, dtype=float)
        t = np.array(self.translation, dtype=float).reshape(-1)
        if not is_rotation(R):
            raise ValueError(
                f'gripper {self.link!r}: rotation expected a rotation matrix (det +1), got '
                f'{R.tolist()}'
            )
        if t.shape != (3,) or not np.all(np.isfinite(t)):
            raise ValueError(f'gripper {self.link!r}: translation expected 3 finite values')
        object.__setattr__(self, 'rotation', R)
        object.__setattr__(self, 'translation', t)


def frame_state(
    model: D.Model,
    q: np.ndarray,
    v: np.ndarray,
    link: str,
    rotation: np.ndarray,
    translation: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """World pose and twist of a frame fixed in ``link``'s frame.

    Parameters
    ----------
    model : Model
    q : (nq,) ndarray
        Configuration ``[r0, Q0, phi]``: base CoM, quaternion (x, y, z, w), joints
        [m, -, rad | m].
    v : (nv,) ndarray
        Velocity ``[V0, w0, phidot]``, base parts in the world frame [m/s, rad/s, rad/s | m/s].
    link : str
        Link of ``model`` the frame is fixed in.
    rotation : (3, 3) orientation of the frame in the link frame (frame -> link) [-].
    translation : (3,) origin of the frame in the link frame [m].

    Returns
    -------
    p : (3,) ndarray
        Origin, world [m].
    R : (3, 3) ndarray
        Orientation (frame -> world).
    v : (3,) ndarray
        Velocity of the origin, world [m/s].
    w : (3,) ndarray
        Angular velocity of ``link``'s body, world [rad/s].
    """
    o, Rl = D.link_pose(model, q, link)
    p = o + Rl @ translation
    tw = contact_jacobian(model, q, link, p) @ v
    return p, Rl @ rotation, tw[:3], tw[3:]


@dataclass(frozen=True)
class EnvelopeCheck:
    """The gripper against one handle's capture envelope (world frame).

    Attributes
    ----------
    target, handle : str
    distance : float  between the grasp point and the handle origin [m].
    angle : float  between the two frames [rad].
    speed : float  relative speed of the two origins [m/s].
    rate : float  relative angular rate [rad/s].
    inside : bool
    reason : str  why not inside ('' when inside).
    """

    target: str
    handle: str
    distance: float
    angle: float
    speed: float
    rate: float
    inside: bool
    reason: str


def envelope_check(
    target: str,
    handle: Handle,
    gripper_state: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray],
    handle_state: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray],
) -> EnvelopeCheck:
    """Compare the gripper's and the handle's frames (:func:`frame_state`) with the envelope.

    Parameters
    ----------
    target : str
        The target's name (copied into the result).
    handle : Handle
        Its envelope: ``radius`` [m], ``max_angle`` [rad], ``max_speed`` [m/s],
        ``max_rate`` [rad/s].
    gripper_state, handle_state : tuple ``(p, R, v, w)``
        Each frame's :func:`frame_state`, world frame: origin ``p`` (3,) [m], orientation
        ``R`` (3, 3) (frame -> world), velocity of the origin ``v`` (3,) [m/s], angular
        velocity ``w`` (3,) [rad/s].

    Returns
    -------
    EnvelopeCheck
        ``distance = |p_h - p_g|``, ``angle = |log(R_g^T R_h)|`` (in [0, pi]),
        ``speed = |v_h - v_g|`` (the two origins' velocities), ``rate = |w_h - w_g|``;
        inside when none exceeds its limit.
    """
    pg, Rg, vg, wg = gripper_state
    ph, Rh, vh, wh = handle_state
    values = {
        'distance': float(np.linalg.norm(ph - pg)),
        'angle': float(np.linalg.norm(matrix_log(Rg.T @ Rh))),
        'speed': float(np.linalg.norm(vh - vg)),
        'rate': float(np.linalg.norm(wh - wg)),
    }
    limits = {
        'distance': handle.radius,
        'angle': handle.max_angle,
        'speed': handle.max_speed,
        'rate': handle.max_rate,
    }
    reasons = [f'{k} {values[k]:.6g} > {limits[k]:.6g}' for k in values if values[k] > limits[k]]
    return EnvelopeCheck(
        target, handle.name, **values, inside=not reasons, reason='; '.join(reasons)
    )


@dataclass(frozen=True)
class CaptureImpulse:
    """The capture impulse (module docstring), world frame.

    Attributes
    ----------
    v_robot, v_target : (nv_r,), (nv_t,) velocities after the capture.
    impulse : (6,) ``[f; m]`` the robot exerts on the target at ``point`` [N s, N m s].
    point : (3,) the weld point [m].
    energy_loss : float [J] (>= 0).
    relative_twist : (6,) ``[v; w]`` of the handle relative to the gripper before [m/s, rad/s].
    """

    v_robot: np.ndarray
    v_target: np.ndarray
    impulse: np.ndarray
    point: np.ndarray
    energy_loss: float
    relative_twist: np.ndarray


def capture_impulse(
    robot: D.Model,
    q_r: np.ndarray,
    v_r: np.ndarray,
    gripper_link: str,
    target: D.Model,
    q_t: np.ndarray,
    v_t: np.ndarray,
    handle_link: str,
    point: np.ndarray,
) -> CaptureImpulse:
    """The least-energy impulse welding the two bodies at ``point`` (module docstring).

    Parameters
    ----------
    robot : Model
        The robot (floating base, as in the scene).
    q_r, v_r : (robot.nq,), (robot.nv,) ndarray
        The robot's state before the capture (the dynamics' conventions: ``q = [r0, Q0, phi]``
        with the base CoM ``r0`` and quaternion ``Q0`` (x, y, z, w), ``v = [V0, w0, phidot]``
        in the world frame) [m, -, rad | m; m/s, rad/s, rad/s | m/s].
    gripper_link : str
        Link of ``robot`` holding the gripper (on a moving body).
    target : Model
        The target (floating base).
    q_t, v_t : (target.nq,), (target.nv,) ndarray
        The target's state before the capture, same conventions.
    handle_link : str
        Link of ``target`` carrying the handle.
    point : (3,)
        The weld point ``o``, world frame [m] (the handle origin in
        :meth:`~.scene.Scene.grasp`), taken as a point of both bodies.

    Returns
    -------
    CaptureImpulse
        Velocities after (same layout as ``v_r``, ``v_t``), the impulse ``[f; m]`` the robot
        exerts on the target at ``point`` [N s, N m s], the energy lost [J] and the relative
        twist before, all world frame.
    """
    G_r = contact_jacobian(robot, q_r, gripper_link, point)
    G_t = contact_jacobian(target, q_t, handle_link, point)
    A_r = np.linalg.solve(D.mass_matrix(robot, q_r), G_r.T)
    A_t = np.linalg.solve(D.mass_matrix(target, q_t), G_t.T)
    K = G_r @ A_r + G_t @ A_t
    d = G_r @ v_r - G_t @ v_t
    L = -np.linalg.solve(K, d)
    return CaptureImpulse(
        v_robot=v_r + A_r @ L,
        v_target=v_t - A_t @ L,
        impulse=-L,
        point=np.array(point, dtype=float),
        energy_loss=0.5 * float(d @ np.linalg.solve(K, d)),
        relative_twist=-d,
    )


def welded_model(
    robot: D.Model,
    q_r: np.ndarray,
    gripper_link: str,
    target: D.Model,
    q_t: np.ndarray,
    prefix: str,
) -> D.Model:
    """The robot and the target welded where they are (:func:`~ffsim_ros.dynamics.weld_models`,
    the target's root link at its present pose relative to ``gripper_link``).

    Parameters
    ----------
    robot : Model
        Floating or fixed base.
    q_r : (robot.nq,)
        The robot's configuration (base CoM [m], quaternion (x, y, z, w), joints [rad | m]).
    gripper_link : str
        Link of ``robot`` that carries the target.
    target : Model
        Floating base.
    q_t : (target.nq,)
        The target's configuration, same conventions: the pose of its root link frame
        relative to ``gripper_link``'s frame at ``q_r`` is the weld's fixed transform.
    prefix : str
        Prepended to the target's link and joint names (``'<target>/'`` in the scene).

    Returns
    -------
    Model
        ``q = [q_r, phi_t]`` (``robot.nq + target.nq - 7``), ``v = [v_r, phidot_t]``
        (``robot.nv + target.nv - 6``): :func:`merge_state`.
    """
    og, Rg = D.link_pose(robot, q_r, gripper_link)
    ot, Rt = D.link_pose(target, q_t, target.base_link)
    return D.weld_models(
        robot,
        gripper_link,
        target,
        rotation=Rg.T @ Rt,
        translation=Rg.T @ (ot - og),
        prefix=prefix,
    )


def merge_state(
    robot: D.Model,
    q_r: np.ndarray,
    v_r: np.ndarray,
    q_t: np.ndarray,
    v_t: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """The welded model's ``(q, v)``: the robot's coordinates, then the target's joints (the
    target's base is carried by the gripper; its velocity must already satisfy the weld).

    Parameters
    ----------
    robot : Model
        The robot (not used: the layout is that of ``q_r``, ``v_r``).
    q_r, v_r : (robot.nq,), (robot.nv,) ndarray
        The robot's state (base CoM, quaternion (x, y, z, w), joints; world-frame velocities).
    q_t, v_t : (target.nq,), (target.nv,) ndarray
        The target's state (floating base): its base parts ``q_t[:7]`` (root-body CoM [m],
        quaternion (x, y, z, w)) and ``v_t[:6]`` ([m/s, rad/s], world) are dropped.

    Returns
    -------
    q, v : (robot.nq + target.nq - 7,), (robot.nv + target.nv - 6,) ndarray
        ``[q_r, q_t[7:]]`` and ``[v_r, v_t[6:]]``, the layout of :func:`welded_model`.
    """
    return np.r_[q_r, q_t[7:]], np.r_[v_r, v_t[6:]]


def split_state(
    welded: D.Model,
    robot: D.Model,
    target: D.Model,
    prefix: str,
    q: np.ndarray,
    v: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Inverse of :func:`merge_state`: ``(q_r, v_r, q_t, v_t)``, the target's base from the
    pose and twist of its root link in the welded model.

    Parameters
    ----------
    welded : Model
        :func:`welded_model` of ``robot`` and ``target`` with ``prefix``.
    robot, target : Model
        The two models welded (floating-base target).
    prefix : str
        The prefix of the target's names in ``welded``.
    q, v : (welded.nq,), (welded.nv,) ndarray
        The welded state (:func:`merge_state`'s layout: the robot's ``[r0, Q0, phi]`` [m, -,
        rad | m] and ``[V0, w0, phidot]`` in the world frame [m/s, rad/s, rad/s | m/s], then
        the target's joints).

    Returns
    -------
    q_r, v_r, q_t, v_t : (robot.nq,), (robot.nv,), (target.nq,), (target.nv,) ndarray
        The target's base part rebuilt: root-body CoM [m] and quaternion (x, y, z, w), CoM
        velocity [m/s] and angular velocity [rad/s], world frame.
    """
    root = prefix + target.base_link
    p, R = D.link_pose(welded, q, root)
    tw = D.link_jacobian(welded, q, root) @ v
    q_b, v_b = D.base_state_from_link(target, p, matrix_to_quat(R), tw[:3], tw[3:])
    return (
        q[: robot.nq].copy(),
        v[: robot.nv].copy(),
        np.r_[q_b, q[robot.nq :]],
        np.r_[v_b, v[robot.nv :]],
    )


def weld_wrench(
    welded: D.Model,
    robot: D.Model,
    q: np.ndarray,
    v: np.ndarray,
    tau: np.ndarray,
    point: np.ndarray,
) -> np.ndarray:
    """(6,) ``[f; n]`` the robot exerts on the welded target at ``point`` (world) [N, N m]
    in the welded state ``(q, v)`` under the robot's joint efforts ``tau`` (module docstring).

    Parameters
    ----------
    welded, robot : Model
        :func:`welded_model` and the robot alone (floating base: the wrench is read off its
        base rows).
    q, v : (welded.nq,), (welded.nv,) ndarray
        The welded state (:func:`merge_state`'s layout, world-frame velocities).
    tau : (robot.n,) the robot's joint efforts [N m | N] (the target's joints unactuated).
    point : (3,) the weld point, world [m]; ``n`` is the moment about it.

    Returns
    -------
    (6,) ndarray
        ``[f; n]``, world frame [N, N m].
    """
    tau_w = np.zeros(welded.n)
    tau_w[: robot.n] = tau
    a = D.aba(welded, q, v, tau_w)
    q_r, v_r = q[: robot.nq], v[: robot.nv]
    res = D.inverse_dynamics(robot, q_r, v_r, a[: robot.nv])
    res[6:] -= tau
    f = res[:3]
    n = res[3:6] - cross(np.asarray(point, dtype=float) - q_r[:3], f)
    return -np.r_[f, n]


__all__ = [
    'CaptureImpulse',
    'EnvelopeCheck',
    'Gripper',
    'capture_impulse',
    'envelope_check',
    'frame_state',
    'merge_state',
    'split_state',
    'weld_wrench',
    'welded_model',
]
