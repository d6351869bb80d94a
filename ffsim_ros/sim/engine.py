"""The simulation engine: a free-floating robot stepped under held inputs (no ROS).

:class:`Engine` owns the model, the state ``(q, v)``, the simulated clock (an integer count of
physics steps of ``dt_ns`` nanoseconds), the inputs (joint effort commands with a timeout
and clipping, base and link wrenches), pause and fault handling. :meth:`Engine.advance`
integrates ``n`` steps with :func:`ffsim_ros.dynamics.step` -- one call for all the steps
over which the inputs are constant -- and returns a :class:`Snapshot`, an immutable record of
the instant reached. The simulator node wraps an engine in ROS I/O; tests and batch runs
drive one directly.

Time: a step advances the clock by ``dt_ns``; a jump of the state (:meth:`Engine.reset`,
:meth:`Engine.set_state`) also takes one step of simulated time without integrating, so each
instant names exactly one state (a stamp is never reused for a different state) and pausing
stops the clock. The clock goes back only when asked to, by :meth:`Engine.reset_time` (to
0: the simulation's time restarts, as for a new run; ``simulation_interfaces``' reset of the
time scope). :meth:`Engine.advance` with ``stepping=True`` integrates while paused (stepping
a paused simulation).

Faults: a step that yields a non-finite state, that the dynamics refuse (e.g. a base turning
by pi rad or more in one step), or that runs away (:mod:`.runaway`: a finite state that is no
solution, joint rates or kinetic energy orders of magnitude beyond what the step could give,
from a physics step too long for the motion; under a wrench, the energy beyond what the
wrench can give) stops integration: the engine keeps the state before the failing step (the
steps before it are kept) and reports the reason in every snapshot until :meth:`Engine.reset`
or :meth:`Engine.set_state`, the only ways out (a change of the targets is refused while
faulted). A snapshot never holds a NaN.

Momentum: wherever nothing external but gravity acts (no base or link wrench), the steps are
momentum-preserving (``D.step(..., conserve_momentum=True)``, the default
``conserve_momentum=True``): after each step the base velocity is corrected, in the
kinetic-energy metric, to the momentum the step must end with, so the total momentum holds to
round-off at any step size while the trajectory keeps RK4's order (it costs 5-10 % of a
bare step, about 5 % of the simulator's step; ``make bench``). Under a wrench the plain step
runs.

Joint limits (:mod:`.limits`): speed limits as a drive enforces them (a torque-speed
characteristic and braking at the limit, on by default), position limits as hard stops (an
option). Steps under one command are integrated in one call while no limit can act within
them (checked from the state, the accelerations and the command, before and after; a closed
chain's run is checked state by state and kept up to the first state a limit acts on); near
a limit they are integrated one at a time, the drives and stops evaluated at each step.

Watchdog (:mod:`.watchdog`): after each :meth:`Engine.advance` the momentum and energy are
checked against what the inputs allow (:attr:`Engine.health`).

Targets (:mod:`.world`): with a :class:`~ffsim_ros.sim.world.TargetWorld` given, targets can
be added; while there are any, each batch of steps is integrated by its scene (robot, targets,
contacts, a held target's weld), and a snapshot's momentum, CoM and kinetic energy are those
of robot and targets together (the watchdog checks the total). Without targets the robot is
integrated alone, exactly as without a world.

Closed chains: with a :class:`~ffsim_ros.dynamics.ClosedChain` given (loop closures on the
model, seed 001), every step is the chain's (:meth:`~ffsim_ros.dynamics.ClosedChain.step`:
RK4, then the projection onto the manifold and, with ``conserve_momentum``, onto the
momentum ``[P; L_O]``), every state given (initial, :meth:`Engine.set_state`) is first
assembled onto the manifold (:meth:`~ffsim_ros.dynamics.ClosedChain.assemble`: the joints
move, the base pose is kept, the velocity is projected in the kinetic-energy metric), and a
drive's braking is followed by the projection. Targets are not supported with one (a world
may be given, without targets; adding one is refused).

Single-threaded by design: the caller serializes access (the simulator node's physics
thread).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import TypeVar

import numpy as np

import ffsim_ros.dynamics as D
from ffsim_ros.dynamics.inputs import as_bool, as_count
from ffsim_ros.dynamics.lie import quat_normalize

from .commands import (
    WRENCH_FRAMES,
    EffortCommands,
    ExternalWrenches,
    check_wrench,
    real_values,
)
from .limits import JointLimits
from .runaway import runaway_fault, too_fast, wrench_power
from .snapshot import Snapshot
from .watchdog import Health, Watchdog
from .world import TargetWorld, WorldRunaway, WorldStepError

T = TypeVar('T')

#: Errors of the dynamics on a state they cannot handle (they become a fault, not a crash).
DYNAMICS_ERRORS = (ValueError, ArithmeticError, RuntimeError, np.linalg.LinAlgError)


class EngineFault(RuntimeError):
    """An operation refused because the engine is faulted (reset or set a state first)."""


def _frozen(x: np.ndarray) -> np.ndarray:
    out = np.array(x, dtype=float)
    out.setflags(write=False)
    return out


def _finite(q: np.ndarray, v: np.ndarray) -> bool:
    """Whether every value of ``q`` and ``v`` is finite (a finite sum says so at once: a NaN
    or an infinity makes it non-finite; only an overflowing sum of finite values needs the
    element-wise check)."""
    if math.isfinite(q.sum() + v.sum()):
        return True
    return bool(np.isfinite(q).all() and np.isfinite(v).all())


def _sealed(x: np.ndarray) -> np.ndarray:
    """``x`` made read-only in place: for the views of an array made for the caller alone
    (the state summary's), where :func:`_frozen`'s copy would buy nothing."""
    x.setflags(write=False)
    return x


class Engine:
    """A free-floating robot simulation (see the module docstring).

    Parameters
    ----------
    model : Model
        A floating-base model (gravity, joint dynamics: as configured in the model).
    q0 : (nq,) initial configuration [m, -, rad | m], world frame (base quaternion normalized).
    v0 : (nv,) initial velocity [m/s, rad/s, rad/s | m/s], world frame (state of :meth:`reset`).
    dt_ns : int
        Physics step [ns] (> 0).
    integrator : str
        A method of :func:`ffsim_ros.dynamics.step` (:data:`ffsim_ros.dynamics.STEP_METHODS`).
    command_timeout_ns : int
        Simulated nanoseconds a joint effort command holds (> 0).
    paused : bool
        Start paused.
    conserve_momentum : bool
        Momentum-preserving steps wherever no base or link wrench acts (module docstring).
    velocity_limits, position_limits : bool
        Enforce the speed limits (drives) and the position limits (hard stops) of the model
        (:class:`~ffsim_ros.sim.limits.JointLimits`).
    world : TargetWorld, optional
        Targets around the robot (:mod:`.world`; its scene on ``model`` with the step
        ``dt_ns``, its robot at ``(q0, v0)``).
    chain : ClosedChain, optional
        Loop closures on ``model`` (module docstring); its RK4 step replaces ``integrator``.

    Raises
    ------
    ValueError
        A fixed-base model, a bad state (or one the loops cannot be closed at), step,
        integrator or timeout; a chain on another model, or with a world holding targets.
    TypeError
        A state of values that are not real numbers; a step or timeout that is not an
        integer (Python or NumPy int; a float, even a whole one, or a bool is refused); a
        flag (``paused``, ``conserve_momentum``, ``velocity_limits``, ``position_limits``)
        that is not a bool (a string such as ``'false'`` would be taken as true).
    """

    def __init__(
        self,
        model: D.Model,
        q0: np.ndarray,
        v0: np.ndarray,
        *,
        dt_ns: int,
        integrator: str = 'rk4',
        command_timeout_ns: int = 500_000_000,
        paused: bool = False,
        conserve_momentum: bool = True,
        velocity_limits: bool = True,
        position_limits: bool = False,
        world: TargetWorld | None = None,
        chain: D.ClosedChain | None = None,
    ) -> None:
        if not model.floating_base:
            raise ValueError('model: expected a floating-base model, got a fixed-base one')
        if integrator not in D.STEP_METHODS:
            raise ValueError(f'integrator: expected one of {D.STEP_METHODS}, got {integrator!r}')
        dt_ns = as_count(dt_ns, 'dt_ns', unit='ns, the physics step')
        flags = {
            'paused': paused,
            'conserve_momentum': conserve_momentum,
            'velocity_limits': velocity_limits,
            'position_limits': position_limits,
        }
        paused, conserve_momentum, velocity_limits, position_limits = (
            as_bool(value, name) for name, value in flags.items()
        )
        if chain is not None and chain.model is not model:
            raise ValueError("chain: expected loop closures on the engine's model")
        if chain is not None and integrator != 'rk4':
            raise ValueError(f"integrator: expected 'rk4' with a closed chain, got {integrator!r}")
        if chain is not None and world is not None and world.active:
            raise ValueError('world: targets are not supported with a closed chain (loops)')
        self._model = model
        self._chain = chain
        self._dt_ns = dt_ns
        self._integrator = integrator
        self._q0, self._v0 = self._checked_state(q0, v0)
        # state
        self._q, self._v = self._q0, self._v0
        self._step = 0
        self._effort = np.zeros(model.n)
        self._paused = paused
        self._fault = ''
        # inputs
        self._commands = EffortCommands(model, command_timeout_ns)
        self._wrenches = ExternalWrenches()
        self._power = (self._wrenches, 0.0)  # (wrench_power of the wrenches held)
        # physics options
        self._conserve = conserve_momentum
        self._limits = JointLimits(model, velocity=velocity_limits, position=position_limits)
        self._simple_joints = model.nq == model.nv + 1  # joint coordinates = joint DoFs
        # the state summary of the last state committed (the snapshot's and the runaway
        # check's: computed once per state), as (q, v, summary)
        self._summarized: tuple[np.ndarray, np.ndarray, D.StateSummary] | None = None
        self._watchdog = Watchdog(model)
        if world is not None and (
            world.scene.robot_model is not model or abs(world.scene.dt - self.dt) > 1e-15
        ):
            raise ValueError("world: expected a scene on the engine's model and step")
        self._world = world
        snap = self.snapshot()
        self._anchor(snap)

    # ---------------------------------------------------------------------------- config
    @property
    def model(self) -> D.Model:
        """The simulated model."""
        return self._model

    @property
    def dt_ns(self) -> int:
        """Physics step [ns]."""
        return self._dt_ns

    @property
    def dt(self) -> float:
        """Physics step [s]."""
        return self._dt_ns * 1e-9

    @property
    def chain(self) -> D.ClosedChain | None:
        """The loop closures the steps keep (None: a tree)."""
        return self._chain

    @property
    def integrator(self) -> str:
        """Integration method."""
        return self._integrator

    @property
    def conserve_momentum(self) -> bool:
        """Whether steps without external wrench are momentum-preserving."""
        return self._conserve

    @property
    def limits(self) -> JointLimits:
        """The joint limits enforced."""
        return self._limits

    @property
    def health(self) -> Health:
        """The watchdog's findings after the last :meth:`advance` (see :mod:`.watchdog`)."""
        return self._watchdog.health

    @property
    def command_timeout_ns(self) -> int:
        """Simulated nanoseconds a joint effort command holds (settable: an integer > 0, else
        a TypeError or ValueError and the timeout stays)."""
        return self._commands.timeout_ns

    @command_timeout_ns.setter
    def command_timeout_ns(self, value: int) -> None:
        self._commands.timeout_ns = value

    @property
    def initial_state(self) -> tuple[np.ndarray, np.ndarray]:
        """``(q0, v0)``, the state :meth:`reset` returns to (read-only arrays)."""
        return self._q0, self._v0

    # ----------------------------------------------------------------------------- state
    @property
    def step(self) -> int:
        """Simulated clock in physics steps."""
        return self._step

    @property
    def time_ns(self) -> int:
        """Simulated time [ns]."""
        return self._step * self._dt_ns

    @property
    def time(self) -> float:
        """Simulated time [s]."""
        return self.time_ns * 1e-9

    @property
    def paused(self) -> bool:
        """Whether :meth:`advance` is suspended by :meth:`pause`."""
        return self._paused

    @property
    def fault(self) -> str:
        """Why integration stopped ('' when it did not)."""
        return self._fault

    @property
    def faulted(self) -> bool:
        """Whether integration is stopped by a fault."""
        return bool(self._fault)

    @property
    def world(self) -> TargetWorld | None:
        """The targets' world (None without one)."""
        return self._world

    def snapshot(self) -> Snapshot:
        """The current instant."""
        q, v = self._q, self._v
        summary = self._summary(q, v)
        momentum, com, kinetic, scene = summary.momentum, summary.com, summary.kinetic_energy, None
        if self._world is not None and self._world.active:
            scene = self._world.snapshot()
            totals = self._world.totals(scene)
            momentum, com = _frozen(totals.momentum), _frozen(totals.com)
            kinetic = totals.kinetic_energy
        return Snapshot(
            step=self._step,
            time_ns=self.time_ns,
            q=q,
            v=v,
            effort=_frozen(self._effort),
            base_position=_sealed(summary.base_position),
            base_orientation=_sealed(summary.base_orientation),
            base_linear_velocity=_sealed(summary.base_linear_velocity),
            base_angular_velocity=_sealed(summary.base_angular_velocity),
            momentum=_sealed(momentum),
            com=_sealed(com),
            kinetic_energy=kinetic,
            paused=self._paused,
            fault=self._fault,
            world=scene,
        )

    def _summary(self, q: np.ndarray, v: np.ndarray) -> D.StateSummary:
        """:func:`~ffsim_ros.dynamics.state_summary` of ``(q, v)``, kept for the last state
        asked (the engine's states are read-only: the same arrays, the same state)."""
        kept = self._summarized
        if kept is not None and kept[0] is q and kept[1] is v:
            return kept[2]
        summary = D.state_summary(self._model, q, v)
        self._summarized = q, v, summary
        return summary

    def reset(self) -> Snapshot:
        """Back to the initial state, inputs cleared, fault cleared; the clock moves one step.

        The pause state is kept.
        """
        self._commands.clear()
        self._wrenches = ExternalWrenches()
        if self._world is not None:
            self._world.reset(self._q0, self._v0)
        return self._jump(self._q0, self._v0)

    def reset_time(self) -> Snapshot:
        """The simulated clock back to 0, the state kept (a new run starting from it).

        The effort command is dropped (it was timed on the old clock) and the watchdog takes
        the state as its new reference; wrenches, pause and fault are kept. The instant
        reached is step 0, whatever was published at it before: the one way the clock goes
        back, and only on request.
        """
        self._commands.clear()
        self._effort = np.zeros(self._model.n)
        self._step = 0
        if self._world is not None:
            self._world.sync(self._q, self._v, 0)
        snap = self.snapshot()
        self._anchor(snap)
        return snap

    def set_state(self, q: np.ndarray, v: np.ndarray) -> Snapshot:
        """Jump to ``(q, v)`` (inputs kept, fault cleared); the clock moves one step.

        Parameters
        ----------
        q : (nq,) ``[r0, Q0, phi]``, ``nq = 7 + n`` plus one per spherical joint
            (:mod:`ffsim_ros.dynamics`): ``r0`` the base *body's CoM* (not the base link
            origin, which is :attr:`Snapshot.base_position`), world [m]; ``Q0`` the base
            attitude quaternion (x, y, z, w), base frame -> world, normalized here; ``phi`` the
            joint coordinates [rad | m] (a spherical joint's unit quaternion (x, y, z, w)).
        v : (nv,) ``[V0, w0, phidot]``, ``nv = 6 + n``: the base CoM velocity [m/s] and the base
            angular velocity [rad/s], world frame; the joint rates [rad/s | m/s] (a spherical
            joint's: the child's angular velocity relative to its parent, child frame).

        With a closed chain, the state is assembled onto the loops first (module docstring).

        Raises
        ------
        ValueError
            Wrong sizes, non-finite values, a zero base quaternion, a target held, the
            robot's shapes overlapping a target's, or a state the loops of the chain cannot
            be closed from (nothing changes).
        TypeError
            Values that are not real numbers (complex, strings, ...; nothing changes).
        """
        q, v = self._checked_state(q, v)
        if self._world is not None and self._world.holding:
            raise ValueError(
                f'set_state: the robot holds target {self._world.holding!r}: release it first'
            )
        if self._world is not None and self._world.active:
            self._world.check_robot(q, v)
        return self._jump(q, v)

    def change_world(
        self, change: Callable[[TargetWorld], T], *, resetting: bool = False
    ) -> tuple[T, Snapshot]:
        """Apply ``change(world)`` (add, move or remove a target, grasp, release) as a jump of
        the state: the clock moves one step, the watchdog is anchored again (the totals
        changed). Returns ``(what change returned, the snapshot reached)``.

        Refused while faulted: the fault stays until :meth:`reset` or :meth:`set_state` (a
        change cleared it and the state that faulted was stepped again, to fault again under
        a new stamp). ``resetting``: the change is part of a reset that follows (the spawned
        targets removed before the state's reset): applied, the fault kept until that reset.

        Raises
        ------
        EngineFault
            While faulted (not ``resetting``; nothing changes).
        ValueError
            No world; or what ``change`` raises (the world's operations change nothing when
            they refuse; the engine's state does not change then).
        """
        world = self._world
        if world is None:
            raise ValueError('change_world: the engine has no target world')
        if self._fault and not resetting:
            raise EngineFault(
                f"integration stopped: {self._fault} (reset, or set the robot's state, "
                'first); the targets were not changed'
            )
        if self._chain is not None:
            raise ValueError('targets: not supported with a closed chain (loops)')
        if self._wrenches.acting:  # (the scene steps robot and targets without them)
            raise ValueError(
                f'targets: expected no external wrench held (not applied while there are '
                f'targets), got {self._wrenches.describe()}: set a zero wrench (or reset the '
                'state) first; nothing changed'
            )
        world.sync(self._q, self._v, self.time_ns)
        result = change(world)
        q, v = world.robot_state()
        return result, self._jump(_frozen(q), _frozen(v), clear=False)

    def _jump(self, q: np.ndarray, v: np.ndarray, clear: bool = True) -> Snapshot:
        """Jump to ``(q, v)``, one step on (``clear``: the fault cleared)."""
        if self._world is not None:
            self._world.sync(q, v, self.time_ns + self._dt_ns)
        self._q, self._v = q, v
        self._effort = np.zeros(self._model.n)
        self._fault = '' if clear else self._fault
        self._step += 1
        snap = self.snapshot()
        self._anchor(snap)
        return snap

    def _anchor(self, snap: Snapshot) -> None:
        """The watchdog's new reference: ``snap`` (with targets, its momentum and CoM are
        those of robot and targets: their total mass, which gravity pulls on)."""
        mass = None if snap.world is None else self._world.totals(snap.world).mass
        w = self._watchdog
        w.anchor(snap.q, snap.v, snap.momentum, snap.com, snap.kinetic_energy, mass=mass)

    def _checked_state(self, q: object, v: object) -> tuple[np.ndarray, np.ndarray]:
        model = self._model
        q = real_values(q, 'q')
        v = real_values(v, 'v')
        if q.shape != (model.nq,) or not np.all(np.isfinite(q)):
            raise ValueError(f'q: expected {model.nq} finite values, got {q.tolist()}')
        if v.shape != (model.nv,) or not np.all(np.isfinite(v)):
            raise ValueError(f'v: expected {model.nv} finite values, got {v.tolist()}')
        q[3:7] = quat_normalize(q[3:7], 'q[3:7] (base quaternion)')
        if self._chain is not None:
            try:
                q, v = self._chain.assemble(q, v)
            except RuntimeError as exc:
                raise ValueError(f'q: the loops cannot be closed from it ({exc})') from None
        return _frozen(q), _frozen(v)

    # ---------------------------------------------------------------------------- inputs
    def command_efforts(self, tau: object) -> None:
        """Joint efforts (n,) [N m | N], joint order, from now; they hold for
        :attr:`command_timeout_ns`, clipped to the effort limits.

        Raises
        ------
        ValueError
            Wrong size or a non-finite value (the previous command stays).
        TypeError
            Values that are not real numbers (the previous command stays).
        """
        self._commands.command(tau, self.time_ns)

    def command_joint_efforts(self, indices: object, efforts: object) -> None:
        """Efforts (k,) [N m | N] of the joints ``indices`` (k,) (positions in joint order,
        each at most once) from now; the other joints keep theirs. Each joint's effort holds
        for :attr:`command_timeout_ns` after it was given, clipped to its effort limit.

        Raises
        ------
        ValueError
            Sizes that differ, a non-finite effort, an index out of range or repeated
            (nothing changes).
        TypeError
            Indices that are not integers (a float, a boolean mask, a string) or efforts that
            are not real numbers (nothing changes).
        """
        self._commands.command_joints(indices, efforts, self.time_ns)

    def clear_efforts(self) -> None:
        """Drop the effort command (zero efforts from now)."""
        self._commands.clear()

    @property
    def last_command(self) -> tuple[np.ndarray, int] | None:
        """The last good effort command and the simulated time it was given at [ns]."""
        return self._commands.last

    def set_base_wrench(self, wrench: object, frame: str = 'world') -> None:
        """Hold the wrench ``[f; n]`` (6,) [N, N m] at the base CoM (replaces the previous).

        ``frame='world'``: constant in the inertial frame. ``frame='base'``: constant in the
        base frame, re-expressed at every evaluation of the dynamics (it turns with the base).

        Raises
        ------
        ValueError
            A bad wrench or frame (nothing changes).
        TypeError
            A wrench of values that are not real numbers (nothing changes).
        """
        if frame not in WRENCH_FRAMES:
            raise ValueError(f'frame: expected one of {WRENCH_FRAMES}, got {frame!r}')
        self._no_targets('a base wrench')
        w = _frozen(check_wrench(wrench, 'base wrench'))
        self._wrenches = ExternalWrenches(w, frame, self._wrenches.links)

    def clear_base_wrench(self) -> None:
        """Remove the base wrench."""
        self._wrenches = ExternalWrenches(None, 'world', self._wrenches.links)

    def set_link_wrenches(self, wrenches: Mapping[str, object]) -> None:
        """Hold ``{link: [f; n]}`` (6,) at link origins, inertial frame [N, N m] (replaces
        the previous link wrenches; an empty mapping removes them).

        Raises
        ------
        TypeError
            Not a mapping, or a wrench of values that are not real numbers (nothing changes).
        ValueError
            An unknown link or a bad wrench (nothing changes).
        """
        if not isinstance(wrenches, Mapping):
            raise TypeError(
                'wrenches: expected a mapping {link name: wrench [f; n] (6,)} (an empty one '
                f'removes the link wrenches), got {type(wrenches).__name__}'
            )
        if wrenches:
            self._no_targets('link wrenches')
        links = {}
        for link, wrench in wrenches.items():
            if link not in self._model.link_names:
                raise ValueError(
                    f'link: expected one of {list(self._model.link_names)}, got {link!r}'
                )
            links[link] = _frozen(check_wrench(wrench, f'wrench on {link}'))
        w = self._wrenches
        self._wrenches = ExternalWrenches(w.base, w.base_frame, links or None)

    def _no_targets(self, what: str) -> None:
        if self._world is not None and self._world.active:
            raise ValueError(f'{what}: not supported while there are targets')

    @property
    def wrenches(self) -> ExternalWrenches:
        """The external wrenches held now."""
        return self._wrenches

    # --------------------------------------------------------------------- run control
    def pause(self) -> None:
        """Suspend :meth:`advance` (the clock stops)."""
        self._paused = True

    def resume(self) -> None:
        """Let :meth:`advance` integrate again.

        Raises
        ------
        EngineFault
            While faulted: reset or set a state first.
        """
        if self._fault:
            raise EngineFault(f'{self._fault}: reset or set a state first')
        self._paused = False

    def advance(self, n: int = 1, *, stepping: bool = False) -> Snapshot:
        """Integrate ``n`` physics steps under the current inputs; the instant reached.

        Faulted, or paused unless ``stepping`` (stepping a paused simulation; it stays
        paused): nothing happens. The steps are integrated in as few calls of
        :func:`ffsim_ros.dynamics.step` as the inputs and the limits allow (two when the
        effort command times out within them, else one; one per step near a joint limit). A
        fault stops within the ``n`` steps. The watchdog then checks the state reached.

        Raises
        ------
        TypeError
            ``n`` not an integer (Python or NumPy int; a float, even a whole one, a string or
            a bool is refused: a count is never rounded).
        ValueError
            ``n`` < 1.
        """
        n = as_count(n, 'n', unit='steps')
        start = self._step
        checked = not self._wrenches.acting
        work = 0.0
        remaining = n
        while remaining > 0 and not ((self._paused and not stepping) or self._fault):
            now = self.time_ns
            tau, held = self._commands.held(now, self._dt_ns, remaining)
            count = held if held > 0 else remaining
            work += self._integrate(tau, count)
            remaining -= count
        snap = self.snapshot()
        if self._step > start:
            self._watchdog.observe(
                snap.q,
                snap.v,
                snap.momentum,
                snap.com,
                span_ns=(self._step - start) * self._dt_ns,
                work=work,
                checked=checked,
                kinetic=snap.kinetic_energy,
            )
        return snap

    def _integrate(self, tau: np.ndarray, count: int) -> float:
        """``count`` steps under the command ``tau``; the work of the efforts [J].

        In one call when no limit can act within them (else, and when that call fails, one
        step at a time: the drives and stops evaluated at each step, and on failure the steps
        up to the last finite state kept and the fault set)."""
        q, v, limits = self._q, self._v, self._limits
        if self._world is not None and self._world.active:
            return self._integrate_world(tau, count)
        if limits.active and self._chain is not None and not self._wrenches.acting:
            return self._integrate_watched(tau, count)
        if limits.active and (count == 1 or not self._quiet_ahead(tau, count)):
            return self._step_each(tau, count)
        try:
            q1, v1 = self._step_from(q, v, tau, count)
        except DYNAMICS_ERRORS:
            return self._step_each(tau, count)
        if not _finite(q1, v1):
            return self._step_each(tau, count)
        if limits.active and not limits.quiet(tau, q1, v1):
            return self._step_each(tau, count)  # a limit was reached within: again, per step
        work = float(tau @ self._joint_motion(q, q1))
        q1, v1 = _frozen(q1), _frozen(v1)
        if self._runaway(None, q1, v1, work, count=count):
            return self._step_each(tau, count)  # (one at a time: the step that ran away)
        self._commit(q1, v1, tau, count, frozen=True)
        return work

    def _integrate_watched(self, tau: np.ndarray, count: int) -> float:
        """``count`` steps of the closed chain under the limits, no wrench acting; the work
        [J]. One compiled run whose steps up to the first state a limit acts on are kept
        (:meth:`.JointLimits.quiet_prefix`: each the step one at a time would take), the rest
        (all of them from a start a limit acts on) taken one at a time."""
        q, v, limits, dt, keep = self._q, self._v, self._limits, self.dt, self._conserve
        if count == 1 or not limits.quiet(tau, q, v):
            return self._step_each(tau, count)
        try:
            _, Q, V = self._chain.simulate(q, v, tau, count * dt, dt, conserve_momentum=keep)
        except DYNAMICS_ERRORS:
            return self._step_each(tau, count)
        done = limits.quiet_prefix(tau, Q, V)
        work = 0.0
        if done > 0:
            q1, v1 = _frozen(Q[done]), _frozen(V[done])
            work = float(tau @ self._joint_motion(q, q1))
            if self._runaway(None, q1, v1, work, count=done):
                return self._step_each(tau, count)  # (one at a time: the step that ran away)
            self._commit(q1, v1, tau, done, frozen=True)
        return work + self._step_each(tau, count - done)

    def _integrate_world(self, command: np.ndarray, count: int) -> float:
        """``count`` steps of robot and targets (:mod:`.world`) under ``command``; the work
        [J]. In one call when no limit can act within them, else one step at a time with the
        drives and hard stops as efforts (no braking impulse); a failed step faults the
        engine, the world rolled back to the last finite state."""
        world, limits, dt = self._world, self._limits, self.dt
        if not limits.active or (count > 1 and self._quiet_ahead(command, count)):
            q = self._q
            try:  # (a runaway: again one step at a time, the step that ran away)
                q1, v1, undo = world.advance(command, count, runaway=self._watchdog)
            except WorldStepError:
                q1 = None
            if q1 is not None and (not limits.active or limits.quiet(command, q1, v1)):
                self._commit(q1, v1, command, count)
                return float(command @ self._joint_motion(q, q1))
            if q1 is not None:
                undo()
        work = 0.0
        for _ in range(count):
            q, v, at = self._q, self._v, self.time
            tau = limits.drive_efforts(command, v[6:])
            stops = limits.stop_efforts(q, v, dt)
            applied = tau if stops is None else tau + stops
            try:
                q1, v1, _ = world.advance(applied, 1, runaway=self._watchdog, at=at)
            except WorldStepError as exc:
                why = f'non-finite state in the step from t = {at:.6f} s: {exc}{self._under()}'
                self._fault = str(exc) if isinstance(exc, WorldRunaway) else why
                return work
            work += float(applied @ self._joint_motion(q, q1))
            self._commit(q1, v1, applied, 1)
        return work

    def _under(self) -> str:
        """For a fault message: the external wrenches acting, which a state diverging under
        them most likely comes from ('' when none acts)."""
        acting = self._wrenches.describe()
        return f'; under {acting}: too large for the physics step?' if acting else ''

    def _runaway(
        self,
        v: np.ndarray | None,
        q1: np.ndarray,
        v1: np.ndarray,
        work: float,
        applied: np.ndarray | None = None,
        count: int = 1,
    ) -> str:
        """The fault of the ``count`` step(s) from the current state to ``(q1, v1)``
        (read-only) when they ran away, else '' (:mod:`.runaway`). ``v``: the velocity at the
        step's start, a step of the drives under ``applied`` (their speeds checked, a trip
        confirmed by the step taken as two halves; the energy where some joint has no drive to
        check or a wrench acts: 5.5 us a step); None: a batch (the energy checked). Under a
        base or link wrench, which can drive any motion, the energy may also grow by the most
        the wrench can give (:func:`.runaway.wrench_power`)."""
        w = self._wrenches
        if self._power[0] is not w:  # (the wrenches changed: their bound, once)
            self._power = (w, wrench_power(self._model, w))
        rise = self._power[1] * count * self.dt / 2.0
        each = v is not None
        energy = rise > 0.0 or not (each and self._limits.driven.all())

        def summaries() -> tuple[D.StateSummary, D.StateSummary]:
            return self._summary(self._q, self._v), self._summary(q1, v1)

        def halves() -> np.ndarray | str:  # (the same step as two halves, braked as it is)
            try:
                q2, v2 = self._step_from(self._q, v, applied, 2, self.dt / 2)
                return self._brake(q2, v2)[1][6:] if _finite(q2, v2) else 'not finite'
            except DYNAMICS_ERRORS as exc:
                return str(exc)

        fault = runaway_fault(
            self._limits if each else None,
            self._watchdog,
            v if each else self._v,
            v1,
            summaries if energy and math.isfinite(rise) else None,
            work,
            self.dt,
            self.time,
            halves if each else None,
            rise,
        )
        return fault + self._under() if fault else ''

    def _quiet_ahead(self, tau: np.ndarray, count: int) -> bool:
        """Whether no limit can act over ``count`` steps from now (with a margin)."""
        q, v, limits = self._q, self._v, self._limits
        w = self._wrenches
        base = w.base_in_world(q)
        try:
            if self._chain is not None:
                a = self._chain.acceleration(q, v, tau, base_wrench=base, link_wrenches=w.links)
            else:
                a = D.aba(self._model, q, v, tau, base_wrench=base, link_wrenches=w.links)
        except DYNAMICS_ERRORS:
            return False
        return limits.quiet(tau, q, v, a, count * self.dt)

    def _step_each(self, command: np.ndarray, count: int) -> float:
        """``count`` steps one at a time, the limits applied at each; the work [J]."""
        limits, dt = self._limits, self.dt
        work = 0.0
        for _ in range(count):
            q, v = self._q, self._v
            at = self.time
            tau = limits.drive_efforts(command, v[6:])
            try:
                stops = limits.stop_efforts(q, v, dt)
                applied = tau if stops is None else tau + stops
                q1, v1 = self._step_from(q, v, applied, 1)
                if not _finite(q1, v1):
                    self._fault = (
                        f'non-finite state in the step from t = {at:.6f} s{self._under()}'
                    )
                    return work
                q1, v1, impulse = self._brake(q1, v1)
            except DYNAMICS_ERRORS as exc:
                # (D.step's StepFailure already says too large a step or too fast a motion, or
                # refuses a step turning the base by pi or more: no non-finite state then)
                if isinstance(exc, D.StepFailure):
                    self._fault = f'the step from t = {at:.6f} s failed ({exc}){self._under()}'
                    return work
                self._fault = (
                    f'non-finite state: the dynamics failed within the step from t = {at:.6f} s '
                    f'({exc}){self._under() or too_fast(v, dt, self._chain is not None)}'
                )
                return work
            step_work = float(applied @ self._joint_motion(q, q1))
            q1, v1 = _frozen(q1), _frozen(v1)
            runaway = self._runaway(v, q1, v1, step_work, applied)
            if runaway:
                self._fault = runaway
                return work
            work += step_work
            self._commit(q1, v1, tau + impulse / dt, 1, frozen=True)
        return work

    def _brake(self, q1: np.ndarray, v1: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(q1, v1, impulse)`` after the drives' braking at the end of a step (then the
        loops' projection)."""
        v1, impulse = self._limits.brake(q1, v1, self.dt)
        if self._chain is not None and np.any(impulse):
            q1, v1 = self._chain.project(q1, v1)
        return q1, v1, impulse

    def _joint_motion(self, q0: np.ndarray, q1: np.ndarray) -> np.ndarray:
        """Joint displacement (n,) from ``q0`` to ``q1`` (the work of held efforts)."""
        if self._simple_joints:
            return q1[7:] - q0[7:]
        return D.difference(self._model, q0, q1)[6:]

    def _step_from(
        self, q: np.ndarray, v: np.ndarray, tau: np.ndarray, count: int, dt: float = 0.0
    ) -> tuple[np.ndarray, np.ndarray]:
        """``count`` steps of ``dt`` (the physics step when 0) from ``(q, v)`` under ``tau``."""
        wrenches, dt = self._wrenches.step_arguments(), dt or self.dt
        if self._chain is not None:
            return self._chain_steps(q, v, tau, count, wrenches, dt)
        return D.step(
            self._model,
            q,
            v,
            tau,
            dt,
            method=self._integrator,
            steps=count,
            conserve_momentum=self._conserve and not wrenches,
            **wrenches,
        )

    def _chain_steps(
        self, q: np.ndarray, v: np.ndarray, tau: np.ndarray, count: int, wrenches: dict, dt: float
    ) -> tuple[np.ndarray, np.ndarray]:
        """``count`` steps of ``dt`` of the closed chain: one compiled run without wrenches,
        else step by step (a base wrench in the base frame turns with the base: re-expressed
        at each RK4 stage). The projection onto the momentum follows ``conserve_momentum``
        (not under a wrench)."""
        chain = self._chain
        if not wrenches:
            _, Q, V = chain.simulate(q, v, tau, count * dt, dt, conserve_momentum=self._conserve)
            return Q[-1], V[-1]
        for _ in range(count):
            q, v = chain.step(q, v, tau, dt, **wrenches)
        return q, v

    def _commit(
        self, q: np.ndarray, v: np.ndarray, tau: np.ndarray, count: int, frozen: bool = False
    ) -> None:
        """The state ``(q, v)`` (``frozen``: read-only arrays of the engine's own, kept as
        they are) reached after ``count`` steps under ``tau``."""
        self._q, self._v = (q, v) if frozen else (_frozen(q), _frozen(v))
        self._effort = tau
        self._step += count
