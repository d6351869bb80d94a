"""Targets around the engine's robot: a :class:`~ffsim_ros.scene.Scene` stepped by the engine.

How :class:`~ffsim_ros.sim.Engine` and :class:`~ffsim_ros.scene.Scene` relate: the engine keeps
the clock, the inputs (effort commands, timeouts, drive limits), pause, faults and the
watchdog; a :class:`TargetWorld` attached to it holds a scene with the same robot model and
step. While the scene has no target the world is *inactive*: the engine integrates the robot
alone exactly as without a world (same calls, same numbers, same cost), and the scene's copy
of the robot state is refreshed only when a target operation needs it (:meth:`sync`). Once a
target is added the engine hands each batch of steps, with the efforts it computed, to
:meth:`advance`: the scene steps robot and targets with their contacts (and the weld of a held
target) and the engine takes back the robot's state. Every change of targets (spawn, move,
remove, grasp, release, reset) goes through :meth:`Engine.change_world
<ffsim_ros.sim.Engine.change_world>`, which makes it a jump of the state (one step of
simulated time, the watchdog anchored again: the totals changed).

A step that leaves a non-finite state, that the dynamics refuse or, checked, that runs away
(:func:`.runaway.energy_fault`) is rolled back (:meth:`~ffsim_ros.scene.Scene.rollback`) and
raised: the engine keeps the last finite state of everything and reports the fault.

Not with targets: drive *braking* at the speed limit (the torque-speed characteristic and the
hard stops apply, as efforts) and base or link wrenches (refused while the world is active).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import coal
import numpy as np

import ffsim_ros.dynamics as D
from ffsim_ros.scene import (
    CaptureEvent,
    CollisionShape,
    CompliantLaw,
    ContactEvent,
    ReleaseEvent,
    Scene,
    SceneSnapshot,
    Target,
)
from ffsim_ros.scene.geometry import PlacedShapes

from .runaway import energy_fault
from .watchdog import Watchdog

#: What :meth:`TargetWorld.take_events` returns: ``(time_ns, event)``.
Event = ContactEvent | CaptureEvent | ReleaseEvent


class WorldStepError(ArithmeticError):
    """A step of the scene left a non-finite state or the dynamics failed (rolled back)."""


class WorldRunaway(WorldStepError):
    """A step of the scene ran away (rolled back): its message is the engine's fault."""


@dataclass(frozen=True)
class WorldTotals:
    """Totals of robot and targets (world frame): ``momentum`` (6,) ``[P; L_g]`` about the
    common CoM ``com`` (3,) [kg m/s, kg m^2/s, m], ``kinetic_energy`` [J], ``mass`` [kg]."""

    momentum: np.ndarray
    com: np.ndarray
    kinetic_energy: float
    mass: float


class TargetWorld:
    """A scene of targets around the engine's robot (module docstring).

    Parameters
    ----------
    scene : Scene
        Its robot model must be the engine's (the same object), its step the engine's and
        its robot state the engine's initial one; it must have no target yet (targets go
        through :meth:`add`).
    targets : sequence of Target
        The initial targets: added now, restored by :meth:`reset`.
    robot_shapes : sequence of CollisionShape
        The robot's collision shapes, as given to ``scene`` (for :meth:`near_sphere`).

    Raises
    ------
    ValueError
        A scene with targets, or a target refused by the scene (named).
    """

    def __init__(
        self,
        scene: Scene,
        targets: Sequence[Target] = (),
        robot_shapes: Sequence[CollisionShape] = (),
    ) -> None:
        if scene.target_names:
            raise ValueError('TargetWorld: expected a scene without targets')
        self.scene = scene
        self._initial = tuple(targets)
        self._specs: dict[str, Target] = {}
        self._events: list[tuple[int, Event]] = []
        self._offset_ns = 0  # engine time - scene time [ns]
        self._robot_shapes = PlacedShapes(scene.robot_model, robot_shapes)
        self._placed: dict[str, tuple[Target, PlacedShapes]] = {}  # (by target, built once)
        #: Targets the last :meth:`reset` left out (they overlapped the robot).
        self.left_out: list[str] = []
        #: Initial targets the last :meth:`reset` did not restore: a spawned target has their
        #: name (they come back once it is removed, at the next reset).
        self.shadowed: list[str] = []
        for target in self._initial:
            self.add(target)

    # --------------------------------------------------------------------------- state
    @property
    def active(self) -> bool:
        """Whether there are targets (then the scene steps the robot)."""
        return bool(self.scene.target_names)

    @property
    def holding(self) -> str:
        """The held target ('' when none)."""
        return self.scene.holding

    @property
    def targets(self) -> dict[str, Target]:
        """The targets now, by name (their descriptions, as added)."""
        return dict(self._specs)

    def sync(self, q: np.ndarray, v: np.ndarray, time_ns: int) -> None:
        """Give the scene the robot state the engine has (not while holding: the scene's is
        then the reference).

        Parameters
        ----------
        q : (nq,) robot configuration ``[r0, Q0, phi]``, base in the world frame
            [m, -, rad | m].
        v : (nv,) robot velocity ``[V0, w0, phidot]``, base parts in the world frame
            [m/s, rad/s, rad/s | m/s].
        time_ns : int
            The engine's simulated time [ns].
        """
        if not self.holding:
            self.scene.set_robot_state(q, v)
        self._offset_ns = int(time_ns) - int(round(self.scene.time * 1e9))

    def check_robot(self, q: np.ndarray, v: np.ndarray) -> None:
        """Refuse a robot state whose shapes would overlap a target's where they do not now.

        Parameters
        ----------
        q : (nq,) robot configuration ``[r0, Q0, phi]``, base in the world frame
            [m, -, rad | m].
        v : (nv,) robot velocity ``[V0, w0, phidot]``, base parts in the world frame
            [m/s, rad/s, rad/s | m/s].

        Raises
        ------
        ValueError
            Naming the shapes (the scene unchanged).
        """
        scene = self.scene
        before = scene.robot_state
        now = {(a, b) for a, b, _ in scene.overlaps()}
        scene.set_robot_state(q, v)
        new = [(a, b, d) for a, b, d in scene.overlaps() if (a, b) not in now]
        if new:
            scene.set_robot_state(*before)
            a, b, d = new[0]
            raise ValueError(
                f'robot state: shape on {a!r} would overlap {b!r} (signed distance {d:.6g} m); '
                'nothing applied'
            )

    def robot_state(self) -> tuple[np.ndarray, np.ndarray]:
        """The robot's ``(q, v)`` in the scene.

        Returns
        -------
        q : (nq,) ndarray
            Configuration [m, -, rad | m], base parts in the world frame.
        v : (nv,) ndarray
            Velocity [m/s, rad/s, rad/s | m/s], base parts in the world frame.
        """
        return self.scene.robot_state

    def snapshot(self) -> SceneSnapshot:
        """The scene now (its events are kept for :meth:`take_events`).

        Returns
        -------
        SceneSnapshot
        """
        snap = self.scene.snapshot()
        for event in snap.events:
            self._events.append((int(round(event.time * 1e9)) + self._offset_ns, event))
        return snap

    def totals(self, snap: SceneSnapshot) -> WorldTotals:
        """:class:`WorldTotals` of ``snap``.

        Parameters
        ----------
        snap : SceneSnapshot
            A snapshot of this world's scene.

        Returns
        -------
        WorldTotals
        """
        robot = self.scene.robot_model
        m = robot.total_mass
        weighted = m * D.center_of_mass(robot, snap.robot_q)
        for name, t in snap.targets.items():
            mt = self._specs[name].model.total_mass
            weighted = weighted + mt * t.com
            m += mt
        com = weighted / m
        h = np.array(snap.momentum, dtype=float)  # about the origin
        h[3:] -= np.cross(com, h[:3])
        return WorldTotals(h, com, float(snap.kinetic_energy), float(m))

    def take_events(self) -> list[tuple[int, Event]]:
        """The events since the last call, each with its simulated time [ns].

        Returns
        -------
        list of (int, Event)
        """
        out, self._events = self._events, []
        return out

    def near_sphere(
        self, center: Sequence[float], radius: float, robot_q: np.ndarray
    ) -> tuple[bool, list[str]]:
        """Which of robot (at ``robot_q``) and targets overlap the sphere of ``center`` (3,)
        and ``radius`` [m] (world frame): one of their collision shapes within it (coal's
        signed distance <= 0: touching counts) or the origin of their root link frame inside
        it (an entity without shapes is that point).

        Parameters
        ----------
        center : (3,) sequence of float
            Sphere centre, world frame [m].
        radius : float
            [m].
        robot_q : (nq,) ndarray
            Robot configuration ``[r0, Q0, phi]``, base in the world frame [m, -, rad | m].

        Returns
        -------
        robot : bool
        targets : list of str
            In the order of :attr:`targets`.
        """
        center = np.asarray(center, dtype=float)
        probe = coal.Sphere(float(radius))
        at = coal.Transform3s(np.eye(3), center)
        request, result = coal.DistanceRequest(), coal.DistanceResult()

        def overlaps(placed: PlacedShapes, q: np.ndarray, origin: np.ndarray) -> bool:
            if np.linalg.norm(origin - center) <= radius:
                return True
            if not len(placed):
                return False
            Rb, p = placed.world(q)
            near = np.linalg.norm(p - center, axis=1) <= placed.radius + radius
            for i in np.flatnonzero(near):
                result.clear()
                shape = coal.Transform3s(placed.rotation(Rb, i), p[i])
                if coal.distance(placed.geometry[i], shape, probe, at, request, result) <= 0.0:
                    return True
            return False

        model = self.scene.robot_model
        robot = overlaps(
            self._robot_shapes, robot_q, D.link_pose(model, robot_q, model.base_link)[0]
        )
        inside = []
        if self._placed.keys() - self._specs.keys():  # (targets gone: their shapes dropped)
            self._placed = {k: v for k, v in self._placed.items() if k in self._specs}
        for name, spec in self._specs.items():
            built = self._placed.get(name)
            if built is None or built[0] is not spec:
                built = self._placed[name] = (spec, PlacedShapes(spec.model, spec.shapes))
            q, _ = self.scene.target_state(name)
            if overlaps(built[1], q, D.link_pose(spec.model, q, spec.model.base_link)[0]):
                inside.append(name)
        return robot, inside

    # ------------------------------------------------------------------------ stepping
    def advance(
        self,
        tau: np.ndarray,
        count: int,
        *,
        runaway: Watchdog | None = None,
        at: float = 0.0,
    ) -> tuple[np.ndarray, np.ndarray, Callable[[], None]]:
        """Step robot and targets ``count`` steps under the robot efforts ``tau`` (n,).

        Parameters
        ----------
        tau : (n,) robot joint efforts, joint order [N m | N].
        count : int
            Steps of the scene's ``dt``.
        runaway : Watchdog, optional
            The robot's: check the steps for a runaway of the energy of robot and targets
            (:func:`.runaway.energy_fault`; not under the compliant contact law, whose springs'
            energy is not tracked).
        at : float
            Time the steps start at [s] (for the runaway's message).

        Returns
        -------
        q, v : the robot state reached.
        undo : callable
            Puts the scene back to where it was before (the engine redoes steps near a joint
            limit one at a time).

        Raises
        ------
        WorldStepError
            A non-finite state or a failure of the dynamics (the scene rolled back);
            :class:`WorldRunaway`, the steps ran away (rolled back).
        """
        scene = self.scene
        checkpoint = scene.checkpoint()
        check = runaway is not None and not isinstance(scene.contact, CompliantLaw)
        start = (self._energy(), scene.robot_state[0]) if check else None
        try:
            scene.set_effort(tau)
            scene.advance(count, snapshot=False)  # the events wait for the next snapshot
        except (ValueError, ArithmeticError, RuntimeError, np.linalg.LinAlgError) as exc:
            scene.rollback(checkpoint)
            raise WorldStepError(f'the dynamics failed ({exc})') from None
        q, v = scene.robot_state
        state = [q, v, *(x for name in scene.target_names for x in scene.target_state(name))]
        if not np.isfinite(np.concatenate(state)).all():
            scene.rollback(checkpoint)
            raise WorldStepError('non-finite state of the robot or a target')
        if start is not None:
            (k0, com0, mass), q0 = start
            try:
                k1, com1, _ = self._energy()
            except (ValueError, ArithmeticError) as exc:  # (an energy overflowing float64)
                scene.rollback(checkpoint)
                raise WorldStepError(
                    f'a state whose kinetic energy is not finite ({exc})'
                ) from None
            work = float(tau @ D.difference(scene.robot_model, q0, q)[6:])
            fault = energy_fault(
                runaway,
                (k0, k1),
                (com0, com1),
                work,
                v,
                scene.dt,
                at,
                mass=mass,
                whose='the energy of robot and targets',
            )
            if fault:
                scene.rollback(checkpoint)
                raise WorldRunaway(fault)
        return q, v, lambda: scene.rollback(checkpoint)

    def _energy(self) -> tuple[float, np.ndarray, float]:
        """Kinetic energy [J], CoM (3,) [m] and mass [kg] of robot and targets."""
        scene = self.scene
        robot = scene.robot_model
        mass = robot.total_mass
        weighted = mass * D.center_of_mass(robot, scene.robot_state[0])
        for name in scene.target_names:
            model = self._specs[name].model
            weighted = weighted + model.total_mass * D.center_of_mass(
                model, scene.target_state(name)[0]
            )
            mass += model.total_mass
        return scene.kinetic_energy(), weighted / mass, float(mass)

    # ------------------------------------------------------------------------- targets
    def add(self, target: Target) -> None:
        """Add a target (the scene's checks: name in use, overlap, gravity; nothing added
        when refused).

        Parameters
        ----------
        target : Target
        """
        self.scene.add_target(target)
        self._specs[target.name] = target

    def remove(self, name: str) -> None:
        """Remove a free target (UnknownNameError, ValueError while held).

        Parameters
        ----------
        name : str
        """
        self.scene.remove_target(name)
        del self._specs[name]

    def move(self, name: str, **state: Sequence[float]) -> None:
        """:meth:`~ffsim_ros.scene.Scene.set_target_state` (world frame, the CoM velocity).

        Parameters
        ----------
        name : str
        **state : (3,) or (4,) sequences of float
            ``position`` of the root link frame [m], ``orientation`` (x, y, z, w) [-],
            ``linear_velocity`` of the CoM [m/s], ``angular_velocity`` of the root body
            [rad/s] (world frame), ``joint_positions`` [rad | m], ``joint_velocities``
            [rad/s | m/s] (:func:`~ffsim_ros.scene.target_state`).
        """
        self.scene.set_target_state(name, **state)

    def grasp(self) -> CaptureEvent:
        """:meth:`~ffsim_ros.scene.Scene.grasp` (the nearest handle in its envelope).

        Returns
        -------
        CaptureEvent
        """
        return self.scene.grasp()

    def release(self) -> ReleaseEvent:
        """:meth:`~ffsim_ros.scene.Scene.release`.

        Returns
        -------
        ReleaseEvent
        """
        return self.scene.release()

    @property
    def spawned(self) -> tuple[str, ...]:
        """Targets added since the start (not initial ones): told by the target added, not
        by its name (one spawned under the name of a removed initial target is spawned)."""
        initial = {t.name: t for t in self._initial}
        return tuple(name for name, t in self._specs.items() if initial.get(name) is not t)

    def reset(self, q: np.ndarray, v: np.ndarray) -> list[str]:
        """Every target back to the state it was added with (the initial ones, removed or
        not, and those spawned since), a held one released first, around the robot state
        ``(q, v)``. A spawned target keeps its name: an initial target of that name (removed
        before the spawn) is not restored (:attr:`shadowed`). Returns the names of targets
        that overlap the robot there and were left out.

        Parameters
        ----------
        q : (nq,) robot configuration ``[r0, Q0, phi]``, base in the world frame
            [m, -, rad | m].
        v : (nv,) robot velocity ``[V0, w0, phidot]``, base parts in the world frame
            [m/s, rad/s, rad/s | m/s].

        Returns
        -------
        list of str
        """
        if self.holding:
            self.scene.release()
        spawned = {name: self._specs[name] for name in self.spawned}
        self.shadowed = [t.name for t in self._initial if t.name in spawned]
        specs = {t.name: t for t in self._initial if t.name not in spawned} | spawned
        for name in list(self._specs):
            self.remove(name)
        self.scene.set_robot_state(q, v)
        self.scene.snapshot()  # drop the events of the reset itself
        dropped = []
        for target in specs.values():
            try:
                self.add(target)
            except ValueError:
                dropped.append(target.name)
        self.left_out = dropped
        return dropped


__all__ = ['Event', 'TargetWorld', 'WorldStepError', 'WorldTotals']
