"""Grasp: a weld between the gripper and a target's handle [M eqs. 62-66].

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

    Returns
    -------
    p : (3,) origin [m];  R : (3, 3);  v : (3,) velocity of the origin [m/s];  w : (3,) [rad/s].
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
    """Compare the gripper's and the handle's frames (:func:`frame_state`) with the envelope."""
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
    """The least-energy impulse welding the two bodies at ``point`` (module docstring)."""
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
    the target's root link at its present pose relative to ``gripper_link``)."""
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
    target's base is carried by the gripper; its velocity must already satisfy the weld)."""
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
    pose and twist of its root link in the welded model."""
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
