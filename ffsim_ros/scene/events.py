"""What a :class:`~.scene.Scene` reports: snapshots of its bodies and the events of a step.

Every array is read-only and in the world (inertial) frame, SI units, quaternions
(x, y, z, w). Bodies are named ``'<system>/<link>'`` with ``<system>`` ``'robot'`` or a
target's name (a held target's links keep their target's name).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from .grasp import EnvelopeCheck


def frozen(x: np.ndarray | list[float] | tuple[float, ...]) -> np.ndarray:
    """A read-only float copy of ``x``.

    Parameters
    ----------
    x : array_like
        Any shape, frame and units (kept: a copy).

    Returns
    -------
    ndarray
        Same shape, read-only.
    """
    out = np.array(x, dtype=float)
    out.setflags(write=False)
    return out


@dataclass(frozen=True)
class BodyState:
    """Pose and twist of a frame.

    Attributes
    ----------
    position : (3,) frame origin [m].
    orientation : (4,) quaternion (x, y, z, w).
    linear_velocity : (3,) velocity of the origin [m/s].
    angular_velocity : (3,) [rad/s].
    """

    position: np.ndarray
    orientation: np.ndarray
    linear_velocity: np.ndarray
    angular_velocity: np.ndarray


@dataclass(frozen=True)
class TargetSnapshot:
    """One target at a snapshot.

    Attributes
    ----------
    root : BodyState
        Its root link frame (what TF and ``nav_msgs/Odometry`` show).
    com : (3,) its centre of mass [m].
    q, v : its configuration and velocity in its own model's conventions.
    handles : mapping handle name -> BodyState of the handle frame.
    held : bool
        Whether the gripper holds it.
    momentum : (6,) ``[P; L]`` about the world origin [kg m/s, kg m^2/s].
    """

    root: BodyState
    com: np.ndarray
    q: np.ndarray
    v: np.ndarray
    handles: Mapping[str, BodyState]
    held: bool
    momentum: np.ndarray


@dataclass(frozen=True)
class ContactEvent:
    """A contact impulse between two bodies.

    Attributes
    ----------
    time : float [s].
    kind : str
        ``'impact'`` (rigid impact law) or ``'contact'`` (compliant law: the impulse summed
        over the steps of one :meth:`~.scene.Scene.advance`, at the last contact point).
    body_a, body_b : str  ``'<system>/<link>'``.
    point : (3,) contact point [m].
    normal : (3,) unit normal from ``b`` into ``a``.
    impulse : (3,) impulse on ``a`` [N s] (``-impulse`` on ``b``).
    relative_velocity : (3,) velocity of ``a`` relative to ``b`` at the point before [m/s].
    energy_loss : float  kinetic energy dissipated [J] (impacts; 0 for compliant contacts).
    sticking : bool  the impact ended with the contact stuck.
    """

    time: float
    kind: str
    body_a: str
    body_b: str
    point: np.ndarray
    normal: np.ndarray
    impulse: np.ndarray
    relative_velocity: np.ndarray
    energy_loss: float
    sticking: bool


@dataclass(frozen=True)
class CaptureEvent:
    """The result of closing the gripper.

    Attributes
    ----------
    time : float [s].
    target, handle : str  ('' when nothing was in reach).
    captured : bool
    reason : str  why not captured ('' when captured).
    check : EnvelopeCheck or None  the envelope check of the chosen (or nearest) handle.
    impulse : (6,) ``[f; m]`` the robot exerted on the target at ``point`` [N s, N m s].
    point : (3,) the weld point (the handle origin) [m].
    energy_loss : float [J].
    """

    time: float
    target: str
    handle: str
    captured: bool
    reason: str
    check: EnvelopeCheck | None
    impulse: np.ndarray
    point: np.ndarray
    energy_loss: float


@dataclass(frozen=True)
class ReleaseEvent:
    """The gripper opened: ``target`` ('' if it held none) flies free again."""

    time: float
    target: str
    released: bool
    reason: str


@dataclass(frozen=True)
class SceneSnapshot:
    """One instant of a scene.

    Attributes
    ----------
    step : int  physics steps since the start;  time : float [s].
    robot_q, robot_v : the robot's state (its own model's conventions).
    robot_base : BodyState of the robot's root link frame.
    gripper : BodyState of the grasp frame (None: the robot has no gripper).
    targets : mapping name -> TargetSnapshot (held targets included).
    momentum : (6,) total ``[P; L]`` about the world origin [kg m/s, kg m^2/s].
    kinetic_energy : float [J].
    holding : str  the held target ('' when none).
    grasp_wrench : (6,) ``[f; n]`` the robot exerts on the held target at the weld point
        [N, N m] (zeros when none), under the efforts of the last step.
    grasp_point : (3,) the weld point [m] (zeros when none).
    events : tuple of ContactEvent / CaptureEvent / ReleaseEvent since the last snapshot.
    """

    step: int
    time: float
    robot_q: np.ndarray
    robot_v: np.ndarray
    robot_base: BodyState
    gripper: BodyState | None
    targets: Mapping[str, TargetSnapshot]
    momentum: np.ndarray
    kinetic_energy: float
    holding: str
    grasp_wrench: np.ndarray
    grasp_point: np.ndarray
    events: tuple[ContactEvent | CaptureEvent | ReleaseEvent, ...]


__all__ = [
    'BodyState',
    'CaptureEvent',
    'ContactEvent',
    'ReleaseEvent',
    'SceneSnapshot',
    'TargetSnapshot',
    'frozen',
]
