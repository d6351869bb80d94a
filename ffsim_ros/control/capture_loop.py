"""In-process closed loop of the capture of a free target (no ROS, no DDS).

What the simulator node and the controller node do over DDS for issue 17, in one process: a
:class:`~ffsim_ros.scene.Scene` steps the physics (the efforts held over each control period),
and every ``control_dt`` the loop reads the target's odometry (its root link's pose and twist)
and the robot's state and updates the law of :mod:`.capture`:

1. ``approach`` / ``intercept`` (the gripper farther / nearer than ``intercept_radius``):
   :func:`~.capture.intercept_rates`, the grasp point tracked with its velocity fed forward
   inside the reaction null space, the base attitude held where it was at the start;
2. the gripper closes (:meth:`~ffsim_ros.scene.Scene.grasp`) as soon as the handle is inside
   its capture envelope (:meth:`~ffsim_ros.scene.Scene.envelope_checks`);
3. ``store`` / ``release`` (momentum distribution) or ``brake`` / ``hold`` (``gjm``):
   :class:`~.capture.Detumbler` on the welded model.

Each period gives a :class:`CaptureSample` (relative motion, base attitude and rate, momentum
of target, arm and base, impulses); :meth:`CaptureLoop.run` returns them with a
:class:`CaptureResult`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

import ffsim_ros.dynamics as D
from ffsim_ros.dynamics.lie import quat_to_matrix
from ffsim_ros.resources import sample_robot
from ffsim_ros.scene import (
    CaptureEvent,
    ContactEvent,
    Gripper,
    Handle,
    Scene,
    SceneSnapshot,
    Sphere,
    Target,
    rigid_target,
    tumble,
    welded_model,
)

from .capture import (
    CaptureGains,
    DetumbleMode,
    Detumbler,
    computed_torque,
    grasp_point,
    intercept_rates,
    momentum_terms,
)
from .rns import attitude_error

#: Relative angular rate of the target to the base under which it counts as detumbled [rad/s].
DETUMBLED_RATE = float(np.radians(0.1))


@dataclass(frozen=True)
class CaptureSample:
    """One control period of a capture run (SI units, inertial frame).

    Attributes
    ----------
    time : float [s];  phase : str (module docstring).
    distance : float, gripper grasp point to the handle [m].
    speed : float, relative speed of the handle to the gripper [m/s].
    relative_rate : float, ``|w_target - w_base|`` [rad/s].
    base_quaternion : (4,) (x, y, z, w);  base_rate : (3,) [rad/s].
    attitude_change : float, base attitude angle from the start [rad].
    momentum_target, momentum_arm, momentum_base : (6,) ``[P; L]`` of each part, ``L`` about
        the system's CoM [kg m/s, kg m^2/s]; their sum is the total.
    momentum_total : (6,) about the world origin (the conserved one).
    contact_impulse : float, sum of the impulse norms of the contacts in the period [N s].
    capture_impulse : (6,) ``[f; m]`` of the capture in this period, else zeros.
    effort : (n,) the robot's joint efforts held over the period [N m | N].
    saturated : bool, an effort was clipped.
    """

    time: float
    phase: str
    distance: float
    speed: float
    relative_rate: float
    base_quaternion: np.ndarray
    base_rate: np.ndarray
    attitude_change: float
    momentum_target: np.ndarray
    momentum_arm: np.ndarray
    momentum_base: np.ndarray
    momentum_total: np.ndarray
    contact_impulse: float
    capture_impulse: np.ndarray
    effort: np.ndarray
    saturated: bool


@dataclass
class CaptureResult:
    """A capture run's figures (SI units).

    Attributes
    ----------
    mode : DetumbleMode;  samples : list of CaptureSample.
    capture : CaptureEvent or None (never closed).
    capture_time : float [s] (nan: no capture).
    detumble_time : float, from the capture until the relative rate stayed below
        :data:`DETUMBLED_RATE` to the end [s] (nan: never).
    final_relative_rate : float [rad/s].
    attitude_change : float, base attitude angle from the start at the end [rad].
    attitude_change_after_capture : float, from the capture to the end [rad].
    peak_base_acceleration : float, largest base angular acceleration after the capture
        (differences of the sampled rates) [rad/s^2].
    momentum_drift : float, largest ``|h(t) - h(0)|`` of the total momentum.
    detumble_reason : str, why the detumbling departed from its gains (the
        :attr:`~.capture.Detumbler.reason`: a momentum distribution the arm could not store
        within its joint limits), ``''`` where it did not.
    """

    mode: DetumbleMode
    samples: list[CaptureSample] = field(default_factory=list)
    capture: CaptureEvent | None = None
    capture_time: float = float('nan')
    detumble_time: float = float('nan')
    final_relative_rate: float = float('nan')
    attitude_change: float = float('nan')
    attitude_change_after_capture: float = float('nan')
    peak_base_acceleration: float = float('nan')
    momentum_drift: float = float('nan')
    detumble_reason: str = ''


class CaptureLoop:
    """The capture law closing the loop on a :class:`~ffsim_ros.scene.Scene`.

    Parameters
    ----------
    scene : Scene (the target added, free; the robot's momentum zero or not).
    target : Target, the one added to the scene to capture (its model and handles).
    handle : str, the handle to grasp (default: the target's first).
    mode : DetumbleMode or str, the post-capture law.
    gains : CaptureGains
    control_dt : float, control period [s] (a multiple of the scene's ``dt``).
    intercept_radius : float, distance under which the phase is called ``intercept`` [m].

    Raises
    ------
    ValueError
        A target not in the scene or held, a target without handles, an unknown handle or
        mode, a handle on a link other than the target's root link (named).
    """

    def __init__(
        self,
        scene: Scene,
        target: Target,
        *,
        handle: str | None = None,
        mode: DetumbleMode | str = DetumbleMode.MOMENTUM_DISTRIBUTION,
        gains: CaptureGains | None = None,
        control_dt: float = 0.01,
        intercept_radius: float = 0.1,
    ) -> None:
        if target.name not in scene.target_names or scene.holding:
            raise ValueError(
                f'CaptureLoop: expected free target {target.name!r} in the scene, it has '
                f'{list(scene.target_names)} (holding {scene.holding!r})'
            )
        if not target.handles:
            raise ValueError(f'CaptureLoop: target {target.name!r} has no handle')
        names = [h.name for h in target.handles]
        name = names[0] if handle is None else handle
        if name not in names:
            raise ValueError(f'CaptureLoop: unknown handle {name!r}; {target.name!r} has {names}')
        try:
            self.mode = DetumbleMode(mode)
        except ValueError:
            raise ValueError(
                f'detumble mode: expected one of {[m.value for m in DetumbleMode]}, got {mode!r}'
            ) from None
        self.scene = scene
        self.target = target
        self.handle = next(h for h in target.handles if h.name == name)
        if self.handle.link != target.model.base_link:
            raise ValueError(
                f'handle {name!r} on link {self.handle.link!r}: the interception reads the '
                f'odometry of the root link {target.model.base_link!r} only'
            )
        self.gains = gains or CaptureGains()
        self.steps = max(1, int(round(control_dt / scene.dt)))
        self.control_dt = self.steps * scene.dt
        self.intercept_radius = float(intercept_radius)
        self.robot = scene.robot_model
        q, _ = scene.robot_state
        self.attitude0 = q[3:7].copy()
        self.h0 = scene.momentum()
        self.detumbler: Detumbler | None = None
        self.phase = 'approach'
        self.result = CaptureResult(self.mode)
        #: The scene's snapshot read by the last :meth:`update` (after the grasp, if any) and
        #: every event since the update before (what a recorder needs).
        self.last_snapshot: SceneSnapshot | None = None
        self.last_events: tuple = ()
        self._next: SceneSnapshot | None = None

    # ------------------------------------------------------------------------------------------
    def _handle_point(self, snap: SceneSnapshot) -> tuple[np.ndarray, np.ndarray]:
        """The handle's grasp point and velocity from the target's odometry (root link)."""
        root = snap.targets[self.target.name].root
        gp = grasp_point(
            root.position,
            root.orientation,
            root.linear_velocity,
            root.angular_velocity,
            self.handle.translation,
        )
        return gp

    def _in_envelope(self) -> bool:
        return any(
            c.inside
            for c in self.scene.envelope_checks()
            if c.target == self.target.name and c.handle == self.handle.name
        )

    def _grasp(self, t: float) -> CaptureEvent:
        scene = self.scene
        q_r, _ = scene.robot_state
        q_t, _ = scene.target_state(self.target.name)
        event = scene.grasp(self.target.name, self.handle.name)
        if event.captured:
            model = welded_model(
                self.robot,
                q_r,
                scene.gripper.link,
                self.target.model,
                q_t,
                f'{self.target.name}/',
            )
            q, v = scene.robot_state
            self.detumbler = Detumbler(model, self.robot.n, self.mode, self.gains, t, q, v)
            self.result.capture = event
            self.result.capture_time = t
        return event

    def update(self) -> CaptureSample:
        """One control period: read, (grasp,) control, step the physics.

        Returns
        -------
        CaptureSample
            The sample of this period (:meth:`run` appends it to :attr:`result`).
        """
        scene, g = self.scene, self.gains
        t = scene.time
        snap = self._next if self._next is not None else scene.snapshot()
        self._next = None
        events = snap.events
        capture = np.zeros(6)
        if self.detumbler is None and self._in_envelope():
            event = self._grasp(t)
            if event.captured:
                capture = np.asarray(event.impulse)
                snap = scene.snapshot()
                events = events + snap.events
        self.last_snapshot, self.last_events = snap, events
        q, v = scene.robot_state
        if self.detumbler is None:
            terms = momentum_terms(self.robot, q, v)
            gp = self._handle_point(snap)
            gripper = (scene.gripper.link, _gripper_offset(scene))
            phidot_d, dist = intercept_rates(
                self.robot, q, terms, gripper, gp, g, attitude_reference=self.attitude0
            )
            self.phase = 'approach' if dist > self.intercept_radius else 'intercept'
            tau, saturated = computed_torque(self.robot, terms, v, phidot_d, g.kv_joint)
        else:
            tau, _, terms = self.detumbler.update(t, q, v)
            self.phase = self.detumbler.phase
            limit = self.robot.effort_limit
            saturated = bool(np.any(np.abs(tau) >= limit))
        sample = self._sample(t, snap, q, v, capture, tau, saturated)
        # the snapshot at the end of the period (with its events) is the next update's
        self._next = scene.advance(self.steps, effort=tau)
        return sample

    def _sample(
        self,
        t: float,
        snap: SceneSnapshot,
        q: np.ndarray,
        v: np.ndarray,
        capture: np.ndarray,
        tau: np.ndarray,
        saturated: bool,
    ) -> CaptureSample:
        tgt = snap.targets[self.target.name]
        h = tgt.handles[self.handle.name]
        grip = snap.gripper
        total_mass = self.robot.total_mass + self.target.model.total_mass
        com = (
            self.robot.total_mass * D.center_of_mass(self.robot, q)
            + self.target.model.total_mass * np.asarray(tgt.com)
        ) / total_mass
        h_robot = _about(D.momentum(self.robot, q, v), com)
        h_base = _about(_base_momentum(self.robot, q, v), com)
        h_target = _about(np.asarray(tgt.momentum), com)
        impulses = sum(
            float(np.linalg.norm(e.impulse))
            for e in self.last_events
            if isinstance(e, ContactEvent)
        )
        return CaptureSample(
            time=t,
            phase=self.phase,
            distance=float(np.linalg.norm(np.asarray(h.position) - grip.position)),
            speed=float(np.linalg.norm(np.asarray(h.linear_velocity) - grip.linear_velocity)),
            relative_rate=float(np.linalg.norm(np.asarray(tgt.root.angular_velocity) - v[3:6])),
            base_quaternion=q[3:7].copy(),
            base_rate=v[3:6].copy(),
            attitude_change=float(np.linalg.norm(attitude_error(q[3:7], self.attitude0))),
            momentum_target=h_target,
            momentum_arm=h_robot - h_base,
            momentum_base=h_base,
            momentum_total=np.asarray(snap.momentum).copy(),
            contact_impulse=impulses,
            capture_impulse=capture,
            effort=np.asarray(tau, float).copy(),
            saturated=saturated,
        )

    def run(
        self,
        duration: float,
        observer: Callable[[CaptureLoop, CaptureSample], None] | None = None,
    ) -> CaptureResult:
        """Run ``duration`` seconds [s] from now and return the :class:`CaptureResult`
        (``observer(loop, sample)`` called after each update, e.g. a recorder reading
        :attr:`last_snapshot`).

        Parameters
        ----------
        duration : float
            Simulated time to run [s].
        observer : callable, optional
            ``observer(loop, sample) -> None``.

        Returns
        -------
        CaptureResult
        """
        t_end = self.scene.time + float(duration)
        res = self.result
        while self.scene.time < t_end - 0.5 * self.control_dt:
            sample = self.update()
            res.samples.append(sample)
            if observer is not None:
                observer(self, sample)
        return self.summarize()

    def summarize(self) -> CaptureResult:
        """Fill the figures of :attr:`result` from its samples.

        Returns
        -------
        CaptureResult
            :attr:`result`.
        """
        res, s = self.result, self.result.samples
        if not s:
            return res
        res.final_relative_rate = s[-1].relative_rate
        res.attitude_change = s[-1].attitude_change
        res.momentum_drift = max(float(np.linalg.norm(x.momentum_total - self.h0)) for x in s)
        if res.capture is None:
            return res
        if self.detumbler is not None:
            res.detumble_reason = self.detumbler.reason
        after = [x for x in s if x.time >= res.capture_time]
        if len(after) > 1:
            rates = np.array([x.base_rate for x in after[1:]])
            times = np.array([x.time for x in after[1:]])
            acc = np.linalg.norm(np.diff(rates, axis=0), axis=1) / np.diff(times)
            res.peak_base_acceleration = float(acc.max()) if acc.size else 0.0
            q_c = after[1].base_quaternion
            res.attitude_change_after_capture = float(
                np.linalg.norm(attitude_error(s[-1].base_quaternion, q_c))
            )
        k = len(s)
        while (
            k > 0
            and s[k - 1].time > res.capture_time
            and s[k - 1].relative_rate < (DETUMBLED_RATE)
        ):
            k -= 1
        if k < len(s) and s[k].time > res.capture_time:
            res.detumble_time = s[k].time - res.capture_time
        return res


def _gripper_offset(scene: Scene) -> np.ndarray:
    return np.asarray(scene.gripper.translation, float)


def _about(h: np.ndarray, point: np.ndarray) -> np.ndarray:
    """``[P; L]`` about the origin moved to ``L`` about ``point``."""
    h = np.array(h, dtype=float)
    h[3:] -= np.cross(point, h[:3])
    return h


def _base_momentum(model: D.Model, q: np.ndarray, v: np.ndarray) -> np.ndarray:
    """``[P; L]`` of the base body alone about the origin (``q[:3]`` its CoM, ``v[:3]`` the
    CoM velocity, ``inertia[0]`` about the CoM in the body frame)."""
    m0 = float(model.arrays.mass[0])
    R = quat_to_matrix(q[3:7])
    I0 = R @ model.arrays.inertia[0] @ R.T
    P = m0 * v[:3]
    return np.r_[P, I0 @ v[3:6] + np.cross(q[:3], P)]


#: Arm configuration of :func:`tumbling_target_scene` [rad] (bent, well away from the folds of
#: the reaction null space: its reactionless Jacobian's singular values 0.51, 0.44, 0.20).
CAPTURE_ARM = (0.0, -0.5, 0.0, 1.5, 0.0, -0.9, 0.0)


def tumbling_target_scene(
    *,
    spin_rate: float = float(np.radians(5.0)),
    drift_speed: float = 0.02,
    mass: float = 120.0,
    dt: float = 5e-3,
) -> tuple[Scene, Target]:
    """The issue-17 capture case on the sample servicer (``ffsim_servicer_7dof``).

    A 120 kg sphere (radius 0.35 m, principal inertia 8, 9, 10 kg m^2) tumbling at
    ``spin_rate`` [rad/s] about its body z axis with 0.15 rad of nutation, its angular
    momentum along (1, 0.2, 0.3) (away from the servicer), its CoM drifting at ``drift_speed``
    [m/s]; a handle on the spin axis 0.45 m from the CoM (capture envelope: 2 cm, 1 cm/s)
    starts 0.24 m from the gripper of the robot at rest in :data:`CAPTURE_ARM`.

    Parameters
    ----------
    spin_rate : float
        Target spin rate [rad/s].
    drift_speed : float
        Speed of the target's CoM [m/s].
    mass : float
        Target mass [kg].
    dt : float
        The scene's step [s].

    Returns
    -------
    scene : Scene (rigid impacts, restitution 0.5, friction 0.3);  target : Target ('sat').
    """
    urdf = sample_robot('ffsim_servicer_7dof')
    scene = Scene.from_urdf(
        urdf, gripper=Gripper('ee_link'), exclude_links=['arm_link_7', 'ee_link'], dt=dt
    )
    robot_q, robot_v = scene.robot_state
    robot_q[7:] = CAPTURE_ARM
    scene.set_robot_state(robot_q, robot_v)
    p_ee, _ = D.link_pose(scene.robot_model, robot_q, 'ee_link')
    inertia = np.diag([8.0, 9.0, 10.0])
    tb = tumble(inertia, spin_rate, 0.15, momentum_direction=(1.0, 0.2, 0.3))
    offset = np.array([0.0, 0.0, -0.45])
    handle_at = p_ee + np.array([0.2, 0.1, -0.1])
    drift = np.array([-0.01, 0.015, 0.008])
    target = rigid_target(
        'sat',
        mass=mass,
        shape=Sphere(0.35),
        inertia=inertia,
        handles=[Handle('bar', 'body', translation=offset, radius=0.02, max_speed=0.01)],
        position=handle_at - quat_to_matrix(tb.orientation) @ offset,
        orientation=tb.orientation,
        linear_velocity=drift * (drift_speed / np.linalg.norm(drift)),
        angular_velocity=tb.angular_velocity,
    )
    scene.add_target(target)
    return scene, target


__all__ = [
    'CAPTURE_ARM',
    'DETUMBLED_RATE',
    'CaptureLoop',
    'CaptureResult',
    'CaptureSample',
    'tumbling_target_scene',
]
