"""A free-floating robot and free-floating targets in one simulation (no ROS).

Representation. Each free system -- the robot, each target not held -- is its own compiled
:class:`~ffsim_ros.dynamics.Model` stepped side by side with the momentum-preserving RK4 step
(:func:`ffsim_ros.dynamics.step`, ``conserve_momentum=True``): between contacts they do not
interact, so nothing couples them and each keeps its momentum to round-off. Contacts couple them by
equal and opposite impulses at one point (:mod:`.impact`, the ``J^T F_c`` term of [S0 eq. 41],
normal and Coulomb tangential), which exchange momentum exactly. A grasp welds the held target to
the gripper: the two trees become one (:mod:`.grasp`, :func:`~ffsim_ros.dynamics.weld_models`),
stepped as one compiled model until the release splits it again.

A step of ``dt``:

* rigid law (:class:`~.impact.ImpactLaw`): every system is advanced by ``dt``; if a pair of
  shapes that was apart now overlaps by more than the law's tolerance, the time of impact is
  found by bisection (the systems re-advanced from the step's start), the contacts touching
  then and approaching get their impulses (Stronge/Routh, sequential over simultaneous
  contacts), and the rest of the step follows; at the end of the step, touching contacts that
  still approach get theirs (resting contact, at most one overlap of ``|u_n| dt`` deep);
* compliant law (:class:`~.impact.CompliantLaw`): half the contact impulses ``F dt / 2`` at the
  step's start, the systems advanced by ``dt``, half the impulses at the end (Strang
  splitting; the contact forces at the state they act in).

A step is atomic: one that raises leaves the scene as at its start.

Contacts (:mod:`.detection`): only between shapes of two *different* systems -- the robot
(with the target it holds) against each free target, and free targets against each other.
No self-collision is detected: not between links of the robot, not between the robot and the
target it holds (welded into its system), not between links of one target. Placements
(:meth:`Scene.add_target`, :meth:`Scene.set_target_state`) are refused if they overlap
another system deeper than :attr:`Scene.placement_slack` (touching is fine).

Deterministic: the same calls give the same states (no clock, no randomness, pairs visited in a
fixed order).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

import ffsim_ros.dynamics as D
from ffsim_ros.dynamics.lie import matrix_to_quat

from .detection import Contact, Detector, System
from .events import (
    BodyState,
    CaptureEvent,
    ContactEvent,
    ReleaseEvent,
    SceneSnapshot,
    TargetSnapshot,
    frozen,
)
from .geometry import CollisionShape, PlacedShapes, shapes_from_urdf
from .grasp import (
    EnvelopeCheck,
    Gripper,
    capture_impulse,
    envelope_check,
    frame_state,
    merge_state,
    split_state,
    weld_wrench,
    welded_model,
)
from .impact import CompliantLaw, ImpactLaw, point_jacobian, solve_impact
from .targets import ROBOT, Handle, Target, check_name, checked_state, target_state

#: Time-of-impact events located within one step before the rest are resolved at its end.
MAX_EVENTS_PER_STEP = 16
#: Sweeps of sequential impulses over simultaneous contacts.
MAX_SWEEPS = 50
#: Range of the physics step ``dt`` [s] (the simulator's ``physics_rate_hz``, 1 Hz to 1 MHz).
MIN_DT, MAX_DT = 1e-6, 1.0
#: Compliant law: deepest overlap [m] of a placement still taken as touching (round-off).
PLACEMENT_SLACK = 1e-9


@dataclass
class _Held:
    target: Target
    handle: Handle
    welded: D.Model
    robot_placed: PlacedShapes
    robot_owners: list[str]


class Scene:
    """A free-floating robot and free-floating targets (module docstring).

    Parameters
    ----------
    robot : Model
        Floating-base robot model.
    gripper : Gripper or None
        The robot's grasp frame (its link must be on a moving body); None: the robot has
        none (no link on a moving body): no envelope check, :meth:`grasp` refused.
    shapes : sequence of CollisionShape
        The robot's collision shapes (:func:`~.geometry.shapes_from_urdf`).
    dt : float
        Physics step [s], in [:data:`MIN_DT`, :data:`MAX_DT`].
    contact : ImpactLaw or CompliantLaw, optional
        The contact law of every pair (default ``ImpactLaw()``).
    conserve_momentum : bool
        The momentum-preserving step (:func:`ffsim_ros.dynamics.step`); without gravity the
        total momentum then holds to round-off through contacts and grasps.
    q, v : (nq,), (nv,) optional initial robot state (default: neutral, at rest): base CoM,
        attitude, ``[V0, w0]`` inertial; units [m, -, rad | m] and [m/s, rad/s, rad/s | m/s].

    Raises
    ------
    ValueError
        A fixed-base robot, a gripper on the base body, a bad step or law, a non-finite state.
    UnknownNameError
        A gripper or shape on a link the robot does not have.
    """

    def __init__(
        self,
        robot: D.Model,
        *,
        gripper: Gripper | None,
        shapes: Sequence[CollisionShape] = (),
        dt: float = 1e-3,
        contact: ImpactLaw | CompliantLaw | None = None,
        conserve_momentum: bool = True,
        q: Sequence[float] | None = None,
        v: Sequence[float] | None = None,
    ) -> None:
        if not robot.floating_base:
            raise ValueError(f'robot {robot.name!r}: expected a floating base, got a fixed one')
        if gripper is not None and not isinstance(gripper, Gripper):
            raise ValueError(f'gripper: expected a Gripper or None, got {type(gripper).__name__}')
        if gripper is not None and robot.frame(gripper.link).body == 0:
            raise ValueError(
                f'gripper link {gripper.link!r} is on the base body of {robot.name!r}; expected '
                'a link moved by the arm'
            )
        dt = float(dt)
        if not MIN_DT <= dt <= MAX_DT:
            raise ValueError(
                f'dt: expected a physics step in [{MIN_DT:g}, {MAX_DT:g}] s, got {dt!r} s'
            )
        contact = ImpactLaw() if contact is None else contact
        if not isinstance(contact, ImpactLaw | CompliantLaw):
            raise ValueError(
                f'contact: expected an ImpactLaw or a CompliantLaw, got {type(contact).__name__}'
            )
        q0 = D.neutral(robot) if q is None else q
        v0 = np.zeros(robot.nv) if v is None else v
        q0, v0 = checked_state(robot, q0, v0, 'robot state', bounded=True)
        placed = PlacedShapes(robot, shapes)
        self.robot_model = robot
        self.gripper = gripper
        self.dt = dt
        self.contact = contact
        self.conserve_momentum = bool(conserve_momentum)
        self._robot = System(
            ROBOT, robot, q0, v0, placed, [f'{ROBOT}/{s.link}' for s in placed.shapes]
        )
        self._robot.tau = np.zeros(robot.n)
        self._robot_placed = placed
        self._targets: dict[str, System] = {}
        self._specs: dict[str, Target] = {}
        self._held: _Held | None = None
        self._step = 0
        self._events: list[ContactEvent | CaptureEvent | ReleaseEvent] = []
        self._ignored: set[tuple[str, int, str, int]] = set()
        self._contacts: list[Contact] | None = None
        self._detector = Detector()

    @classmethod
    def from_urdf(
        cls,
        urdf: str | os.PathLike[str],
        *,
        gripper: Gripper,
        meshes: str = 'error',
        package_dirs: Mapping[str, str] | None = None,
        exclude_links: Sequence[str] = (),
        **kwargs: object,
    ) -> Scene:
        """A scene whose robot and collision shapes come from one URDF (``exclude_links``:
        links without collision shapes, e.g. the fingers that close on a handle)."""
        robot = D.load_urdf(urdf, floating_base=True)
        shapes = shapes_from_urdf(
            urdf, model=robot, meshes=meshes, package_dirs=package_dirs, exclude=exclude_links
        )
        return cls(robot, gripper=gripper, shapes=shapes, **kwargs)  # type: ignore[arg-type]

    # ------------------------------------------------------------------------------------------
    # state
    # ------------------------------------------------------------------------------------------

    @property
    def step_count(self) -> int:
        """Physics steps taken."""
        return self._step

    @property
    def time(self) -> float:
        """Simulated time [s]."""
        return self._step * self.dt

    @property
    def holding(self) -> str:
        """The held target ('' when none)."""
        return '' if self._held is None else self._held.target.name

    @property
    def target_names(self) -> tuple[str, ...]:
        """Every target, held or free, in the order added."""
        return tuple(self._specs)

    @property
    def robot_state(self) -> tuple[np.ndarray, np.ndarray]:
        """Copies of the robot's ``(q, v)`` (its own model's conventions)."""
        n = self.robot_model
        return self._robot.q[: n.nq].copy(), self._robot.v[: n.nv].copy()

    def set_robot_state(self, q: Sequence[float], v: Sequence[float]) -> None:
        """Set the robot's state (not while holding a target).

        Parameters
        ----------
        q : (nq,) configuration [m, -, rad | m].
        v : (nv,) velocity ``[V0, w0, phidot]``, base parts inertial [m/s, rad/s, rad/s | m/s].

        Raises
        ------
        ValueError
            A wrong size, a non-finite value, or a held target.
        """
        if self._held is not None:
            raise ValueError(f'set_robot_state: release target {self.holding!r} first')
        self._robot.q, self._robot.v = checked_state(self.robot_model, q, v, 'robot state')
        self._contacts = None

    def overlaps(self) -> list[tuple[str, str, float]]:
        """Pairs of shapes of two different systems overlapping now (signed distance < 0):
        ``(owner a, owner b, signed distance [m])``, owners as ``'system/link'``.

        Checked: the robot (with the target it holds) against each free target, and the free
        targets against each other; pairs ignored since a release are left out. Not checked (no
        self-collision in the engine): the robot's links among themselves, the robot and the target
        it holds, the links of one target.
        """
        return [
            (c.a.owners[c.ka], c.b.owners[c.kb], c.distance)
            for c in self._detect(0.0)
            if c.distance < 0.0
        ]

    def set_effort(self, effort: Sequence[float]) -> None:
        """Hold the robot's joint efforts ``(n,)`` [N m | N] from now on."""
        tau = np.array(effort, dtype=float).reshape(-1)
        n = self.robot_model.n
        if tau.shape != (n,) or not np.isfinite(tau).all():
            raise ValueError(f'effort: expected {n} finite values, got {tau.tolist()}')
        extra = self._robot.model.n - n  # a held target's joints
        self._robot.tau = np.concatenate((tau, np.zeros(extra))) if extra else tau

    def target_state(self, name: str) -> tuple[np.ndarray, np.ndarray]:
        """``(q, v)`` of target ``name`` in its own model's conventions (held or free)."""
        spec = self._spec(name)
        if self._held is not None and self._held.target.name == name:
            r = self._robot
            return split_state(
                self._held.welded, self.robot_model, spec.model, f'{name}/', r.q, r.v
            )[2:]
        s = self._targets[name]
        return s.q.copy(), s.v.copy()

    def checkpoint(self) -> tuple:
        """The stepping state (the states of the systems, the clock, the cached contacts, the
        pending events and the pairs ignored since a release: all a step changes), for
        :meth:`rollback` before the next grasp, release or change of targets (an opaque value;
        states are never mutated in place, so this is cheap)."""
        cache = None if self._contacts is None else list(self._contacts)
        systems = tuple(self._systems())
        return systems, self._save(), self._step, cache, list(self._events), set(self._ignored)

    def rollback(self, checkpoint: tuple) -> None:
        """Back to a :meth:`checkpoint` taken since the last grasp, release or change of
        targets (e.g. after a step that left a non-finite state).

        Raises
        ------
        ValueError
            The systems changed since the checkpoint (nothing changes then).
        """
        systems, saved, step, cache, events, ignored = checkpoint
        now = self._systems()
        if len(systems) != len(now) or any(a is not b for a, b in zip(systems, now, strict=True)):
            raise ValueError('rollback: the systems changed since the checkpoint')
        self._restore(saved)
        self._step, self._contacts = step, cache
        self._events, self._ignored = list(events), set(ignored)

    def momentum(self) -> np.ndarray:
        """(6,) total ``[P; L]`` about the world origin [kg m/s, kg m^2/s]."""
        return sum(D.momentum(s.model, s.q, s.v) for s in self._systems())

    def kinetic_energy(self) -> float:
        """Total kinetic energy [J]."""
        return float(sum(D.kinetic_energy(s.model, s.q, s.v) for s in self._systems()))

    def _systems(self) -> list[System]:
        return [self._robot] + [self._targets[k] for k in sorted(self._targets)]

    def _spec(self, name: str) -> Target:
        try:
            return self._specs[name]
        except KeyError:
            raise D.UnknownNameError(
                f'unknown target {name!r}; the scene has {list(self._specs)}'
            ) from None

    # ------------------------------------------------------------------------------------------
    # targets
    # ------------------------------------------------------------------------------------------

    def add_target(self, target: Target) -> None:
        """Add a target (:func:`~.targets.rigid_target`, :func:`~.targets.urdf_target`).

        Raises
        ------
        ValueError
            A name in use, a non-finite state, a root body (or ball joint) turning by pi rad
            or more in a step, a non-zero gravity other than the robot's (one built without
            gravity falls with the robot's: :meth:`.Target.in_gravity`), or shapes overlapping
            the robot or another target (named) deeper than :attr:`placement_slack` (touching
            is fine); nothing is added then.
        """
        if not isinstance(target, Target):
            raise ValueError(f'add_target: expected a Target, got {type(target).__name__}')
        name = check_name(target.name)
        if name in self._specs:
            raise ValueError(f'target {name!r}: a target of that name exists')
        target = target.in_gravity(self.robot_model.gravity)
        where = f'target {name!r} state'
        q, v = checked_state(target.model, target.q, target.v, where, dt=self.dt)
        placed = PlacedShapes(target.model, target.shapes)
        system = System(
            name, target.model, q, v, placed, [f'{name}/{s.link}' for s in placed.shapes]
        )
        system.tau = np.zeros(target.model.n)
        self._check_clear(system)
        self._targets[name] = system
        self._specs[name] = target
        self._contacts = None

    def set_target_state(self, name: str, **state: Sequence[float]) -> None:
        """Move a free target: keywords of :func:`~.targets.target_state` (``position``,
        ``orientation``, ``linear_velocity`` of its CoM, ``angular_velocity``,
        ``joint_positions``, ``joint_velocities``); omitted ones keep their present values.

        Raises
        ------
        ValueError
            A held target, bad values (a root body turning by pi rad or more in a step
            included), or an overlap deeper than :attr:`placement_slack` (nothing changes
            then).
        UnknownNameError
            An unknown target.
        """
        spec = self._spec(name)
        if self._held is not None and self._held.target.name == name:
            raise ValueError(f'target {name!r} is held: release it first')
        s = self._targets[name]
        now = self._target_snapshot(name, s.model, s.q, s.v, held=False)
        current = {
            'position': now.root.position,
            'orientation': now.root.orientation,
            'linear_velocity': D.momentum(s.model, s.q, s.v)[:3] / s.model.total_mass,
            'angular_velocity': s.v[3:6],
            'joint_positions': s.q[7:],
            'joint_velocities': s.v[6:],
        }
        unknown = sorted(set(state) - set(current))
        if unknown:
            raise ValueError(f'set_target_state: unknown keywords {unknown}')
        q, v = target_state(spec.model, name, **{**current, **state})
        q, v = checked_state(spec.model, q, v, f'target {name!r} state', dt=self.dt)
        moved = System(name, s.model, q, v, s.placed, s.owners, s.tau)
        self._check_clear(moved, skip=name)
        self._targets[name] = moved
        self._contacts = None

    def remove_target(self, name: str) -> None:
        """Remove a free target.

        Raises
        ------
        ValueError
            A held target (release it first).
        UnknownNameError
            An unknown target.
        """
        self._spec(name)
        if self._held is not None and self._held.target.name == name:
            raise ValueError(f'target {name!r} is held: release it first')
        del self._targets[name]
        del self._specs[name]
        self._ignored = {k for k in self._ignored if name not in (k[0], k[2])}
        self._contacts = None

    @property
    def placement_slack(self) -> float:
        """Deepest overlap [m] of a placement (:meth:`add_target`, :meth:`set_target_state`)
        still taken as touching: the rigid law's ``tolerance`` (within it, a contact touches),
        :data:`PLACEMENT_SLACK` for the compliant law."""
        if isinstance(self.contact, ImpactLaw):
            return float(self.contact.tolerance)
        return PLACEMENT_SLACK

    def _check_clear(self, system: System, skip: str = '') -> None:
        """Raise if ``system``'s shapes overlap those of another system by more than
        :attr:`placement_slack` (the first such pair in the order of the systems)."""
        slack = self.placement_slack
        others = [s for s in self._systems() if s.name not in (skip, system.name)]
        for i, j in self._detector.near_pairs([system, *others], 0.0):
            if i:
                break  # pairs come sorted: those of `system` (index 0) first
            other = others[j - 1]
            for c in self._detector.pairs(system, other, margin=0.0):
                if c.distance < -slack:
                    raise ValueError(
                        f'target {system.name!r}: shape on {system.owners[c.ka]!r} overlaps '
                        f'{other.owners[c.kb]!r} (signed distance {c.distance:.6g} m, deeper '
                        f'than the {slack:g} m taken as touching); nothing applied'
                    )

    # ------------------------------------------------------------------------------------------
    # contact detection
    # ------------------------------------------------------------------------------------------

    def _detect(self, margin: float) -> list[Contact]:
        """The pairs of shapes of different systems closer than ``margin`` [m]
        (:meth:`~.detection.Detector.detect`), less the pairs ignored since a release."""
        out = self._detector.detect(self._systems(), margin)
        if self._ignored:
            # pairs overlapping at a release stay ignored until they have separated
            apart = {c.key for c in out if c.distance > 0.0}
            present = {c.key for c in out}
            self._ignored = {k for k in self._ignored if k in present and k not in apart}
            out = [c for c in out if c.key not in self._ignored]
        return out

    # ------------------------------------------------------------------------------------------
    # contact impulses
    # ------------------------------------------------------------------------------------------

    def _point_map(self, s: System, k: int, point: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(J, H^-1 J^T)`` of the material point at ``point`` on shape ``k``'s link."""
        J = point_jacobian(s.model, s.q, s.placed.shapes[k].link, point)
        return J, np.linalg.solve(D.mass_matrix(s.model, s.q), J.T)

    def _relative_velocity(self, c: Contact, maps: tuple) -> np.ndarray:
        (Ja, _), (Jb, _) = maps
        return Ja @ c.a.v - Jb @ c.b.v

    def _apply(self, c: Contact, maps: tuple, P: np.ndarray) -> None:
        (_, Aa), (_, Ab) = maps
        c.a.v = c.a.v + Aa @ P
        c.b.v = c.b.v - Ab @ P

    def _resolve(self, contacts: list[Contact], time: float) -> None:
        """Impulses of the rigid law on the touching, approaching contacts (sequential
        sweeps over simultaneous ones)."""
        law = self.contact
        touching = [c for c in contacts if c.distance <= law.tolerance]
        if not touching:
            return
        maps = {
            c.key: (self._point_map(c.a, c.ka, c.point), self._point_map(c.b, c.kb, c.point))
            for c in touching
        }
        records: dict[tuple, list] = {}
        for _ in range(MAX_SWEEPS):
            applied = False
            for c in touching:
                m = maps[c.key]
                u = self._relative_velocity(c, m)
                scale = 1e-12 * max(1.0, float(np.linalg.norm(u)))
                if float(c.normal @ u) >= -scale:
                    continue
                (Ja, Aa), (Jb, Ab) = m
                W = Ja @ Aa + Jb @ Ab
                sol = solve_impact(W, u, c.normal, law.restitution, law.friction)
                self._apply(c, m, sol.impulse)
                applied = True
                rec = records.get(c.key)
                if rec is None:
                    records[c.key] = [c, u, sol.impulse, sol.energy_loss, sol.sticking]
                else:
                    rec[2] = rec[2] + sol.impulse
                    rec[3] += sol.energy_loss
                    rec[4] = sol.sticking
            if not applied:
                break
        for c, u, P, loss, stick in records.values():
            self._events.append(
                ContactEvent(
                    time,
                    'impact',
                    c.a.owners[c.ka],
                    c.b.owners[c.kb],
                    frozen(c.point),
                    frozen(c.normal),
                    frozen(P),
                    frozen(u),
                    float(loss),
                    bool(stick),
                )
            )

    def _kick(self, h: float, accumulate: dict) -> None:
        """Compliant law: impulses over ``h`` at the cached contacts, friction limited to
        the sticking impulse by the contact's inverse inertia (:meth:`CompliantLaw.impulse`)."""
        law = self.contact
        for c in self._contacts or ():
            if c.distance >= 0.0:
                continue
            m = (self._point_map(c.a, c.ka, c.point), self._point_map(c.b, c.kb, c.point))
            u = self._relative_velocity(c, m)
            (Ja, Aa), (Jb, Ab) = m
            P = law.impulse(-c.distance, u, c.normal, h, Ja @ Aa + Jb @ Ab)
            self._apply(c, m, P)
            rec = accumulate.get(c.key)
            if rec is None:
                accumulate[c.key] = [c, u, P]
            else:
                rec[0], rec[2] = c, rec[2] + P

    # ------------------------------------------------------------------------------------------
    # stepping
    # ------------------------------------------------------------------------------------------

    def _drift(self, h: float) -> None:
        for s in self._systems():
            try:
                s.q, s.v = D.step(
                    s.model, s.q, s.v, s.tau, h, conserve_momentum=self.conserve_momentum
                )
            except D.StepFailure as exc:  # (whose step: "the base" is the robot's or a target's)
                who = 'the robot' if s.name == ROBOT else f'target {s.name!r}'
                raise type(exc)(f'{who}: {exc}') from None

    def _save(self) -> list[tuple[np.ndarray, np.ndarray]]:
        return [(s.q, s.v) for s in self._systems()]

    def _restore(self, saved: list[tuple[np.ndarray, np.ndarray]]) -> None:
        for s, (q, v) in zip(self._systems(), saved, strict=True):
            s.q, s.v = q, v

    def _rigid_step(self) -> None:
        tol = self.contact.tolerance
        t, events = 0.0, 0
        before = self._contacts if self._contacts is not None else self._detect(tol)
        persistent = {c.key for c in before if c.distance < -tol}
        while True:
            left = self.dt - t
            start = self._save()
            self._drift(left)
            contacts = self._detect(tol)
            new = {c.key for c in contacts if c.distance < -tol and c.key not in persistent}
            if not new or events >= MAX_EVENTS_PER_STEP:
                self._resolve(contacts, self.time + self.dt)
                self._contacts = contacts
                return
            lo, hi = 0.0, left
            for _ in range(80):
                mid = 0.5 * (lo + hi)
                self._restore(start)
                self._drift(mid)
                contacts = self._detect(tol)
                d = min((c.distance for c in contacts if c.key in new), default=np.inf)
                if d < -tol:
                    hi = mid
                elif d > 0.0 and hi - lo > 1e-12 * self.dt:
                    lo = mid
                else:
                    break
            t += mid
            events += 1
            approaching = set()
            for c in contacts:
                if c.key in new:
                    m = (self._point_map(c.a, c.ka, c.point), self._point_map(c.b, c.kb, c.point))
                    if float(c.normal @ self._relative_velocity(c, m)) < 0.0:
                        approaching.add(c.key)
            persistent |= new - approaching
            self._resolve(contacts, self.time + t)

    def advance(
        self, n: int = 1, effort: Sequence[float] | None = None, *, snapshot: bool = True
    ) -> SceneSnapshot | None:
        """Take ``n`` physics steps (``effort``: hold these robot joint efforts from now on,
        :meth:`set_effort`) and return the snapshot reached (``snapshot=False``: None, the
        events kept for the next snapshot; a snapshot costs more than a step).

        Each step is atomic: a step that raises (e.g. the dynamics refuse a state) leaves the scene
        as at its start (states, clock, cached contacts, events, ignored pairs) and the exception
        goes on; the steps before it stay done, with their events.
        """
        if isinstance(n, bool) or int(n) != n or n < 1:
            raise ValueError(f'n: expected an integer >= 1 (steps), got {n!r}')
        n = int(n)
        if effort is not None:
            self.set_effort(effort)
        compliant = isinstance(self.contact, CompliantLaw)
        accumulate: dict = {}
        for _ in range(n):
            # what a step changes: states and contacts are replaced (never modified in place),
            # events only appended, the ignored pairs replaced
            start = (self._save(), self._contacts, len(self._events), self._ignored)
            before = {k: list(rec) for k, rec in accumulate.items()} if accumulate else {}
            try:
                if compliant:
                    if self._contacts is None:
                        self._contacts = self._detect(0.0)
                    self._kick(0.5 * self.dt, accumulate)
                    self._drift(self.dt)
                    self._contacts = self._detect(0.0)
                    self._kick(0.5 * self.dt, accumulate)
                else:
                    self._rigid_step()
            except BaseException:
                saved, self._contacts, count, self._ignored = start
                self._restore(saved)
                del self._events[count:]
                self._contact_events(before)
                raise
            self._step += 1
        self._contact_events(accumulate)
        return self.snapshot() if snapshot else None

    def _contact_events(self, accumulate: dict) -> None:
        """Compliant law: one event per pair in contact over the steps (the impulse summed)."""
        for c, u, P in accumulate.values():
            self._events.append(
                ContactEvent(
                    self.time,
                    'contact',
                    c.a.owners[c.ka],
                    c.b.owners[c.kb],
                    frozen(c.point),
                    frozen(c.normal),
                    frozen(P),
                    frozen(u),
                    0.0,
                    False,
                )
            )

    # ------------------------------------------------------------------------------------------
    # grasp
    # ------------------------------------------------------------------------------------------

    def _gripper_state(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        g, r = self.gripper, self._robot
        return frame_state(r.model, r.q, r.v, g.link, g.rotation, g.translation)

    def envelope_checks(self) -> list:
        """:class:`~.grasp.EnvelopeCheck` of every handle of every free target."""
        if self.gripper is None:
            return []
        grip = self._gripper_state()
        out = []
        for name in sorted(self._targets):
            s, spec = self._targets[name], self._specs[name]
            for h in spec.handles:
                hs = frame_state(s.model, s.q, s.v, h.link, h.rotation, h.translation)
                out.append(envelope_check(name, h, grip, hs))
        return out

    def grasp(self, target: str | None = None, handle: str | None = None) -> CaptureEvent:
        """Close the gripper: weld the nearest handle within its capture envelope (of
        ``target`` / ``handle`` if named) to the gripper, with the capture impulse
        (:mod:`.grasp`). Returns the event (``captured`` False with the reason when nothing is
        in reach or a target is already held; nothing changes then).

        Raises
        ------
        UnknownNameError
            An unknown target or handle name.
        """
        if target is not None:
            spec = self._spec(target)
            if handle is not None and handle not in [h.name for h in spec.handles]:
                raise D.UnknownNameError(
                    f'target {target!r}: unknown handle {handle!r}; it has '
                    f'{[h.name for h in spec.handles]}'
                )
        if self.gripper is None:
            why = f'robot {self.robot_model.name!r} has no gripper: no link on a moving body'
            return self._capture_failed(why, None)
        if self._held is not None:
            return self._capture_failed(f'already holding {self.holding!r}', None)
        checks = [
            c
            for c in self.envelope_checks()
            if (target is None or c.target == target) and (handle is None or c.handle == handle)
        ]
        if not checks:
            return self._capture_failed('no handle to grasp', None)
        inside = [c for c in checks if c.inside]
        if not inside:
            near = min(checks, key=lambda c: c.distance)
            return self._capture_failed(
                f'{near.target}/{near.handle} outside its capture envelope: {near.reason}', near
            )
        chosen = min(inside, key=lambda c: c.distance)
        spec = self._specs[chosen.target]
        h = next(x for x in spec.handles if x.name == chosen.handle)
        s, r = self._targets[chosen.target], self._robot
        point = frame_state(s.model, s.q, s.v, h.link, h.rotation, h.translation)[0]
        cap = capture_impulse(
            r.model, r.q, r.v, self.gripper.link, s.model, s.q, s.v, h.link, point
        )
        prefix = f'{chosen.target}/'
        welded = welded_model(r.model, r.q, self.gripper.link, s.model, s.q, prefix)
        q, v = merge_state(r.model, r.q, cap.v_robot, s.q, cap.v_target)
        shapes = list(r.placed.shapes) + [sh.renamed(prefix + sh.link) for sh in s.placed.shapes]
        self._held = _Held(spec, h, welded, r.placed, r.owners)
        tau = np.r_[r.tau, np.zeros(s.model.n)]
        self._robot = System(
            ROBOT, welded, q, v, PlacedShapes(welded, shapes), r.owners + s.owners, tau
        )
        del self._targets[chosen.target]
        self._ignored = {k for k in self._ignored if chosen.target not in (k[0], k[2])}
        self._contacts = None
        event = CaptureEvent(
            self.time,
            chosen.target,
            chosen.handle,
            True,
            '',
            chosen,
            frozen(cap.impulse),
            frozen(point),
            cap.energy_loss,
        )
        self._events.append(event)
        return event

    def _capture_failed(self, reason: str, check: EnvelopeCheck | None) -> CaptureEvent:
        event = CaptureEvent(
            self.time,
            '' if check is None else check.target,
            '' if check is None else check.handle,
            False,
            reason,
            check,
            frozen(np.zeros(6)),
            frozen(np.zeros(3)),
            0.0,
        )
        self._events.append(event)
        return event

    def release(self) -> ReleaseEvent:
        """Open the gripper: the held target flies free with the state it has (no impulse).
        Its shapes that touch the robot's then are ignored until they have separated."""
        if self._held is None:
            event = ReleaseEvent(self.time, '', False, 'not holding a target')
            self._events.append(event)
            return event
        held, r = self._held, self._robot
        name = held.target.name
        q_r, v_r, q_t, v_t = split_state(
            held.welded, self.robot_model, held.target.model, f'{name}/', r.q, r.v
        )
        robot = System(
            ROBOT,
            self.robot_model,
            q_r,
            v_r,
            held.robot_placed,
            held.robot_owners,
            r.tau[: self.robot_model.n].copy(),
        )
        placed = PlacedShapes(held.target.model, held.target.shapes)
        free = System(
            name,
            held.target.model,
            q_t,
            v_t,
            placed,
            [f'{name}/{s.link}' for s in placed.shapes],
            np.zeros(held.target.model.n),
        )
        self._robot = robot
        self._targets[name] = free
        self._held = None
        tol = self.contact.tolerance if isinstance(self.contact, ImpactLaw) else 0.0
        for c in self._detector.pairs(robot, free, margin=tol):
            self._ignored.add(c.key)
        self._contacts = None
        event = ReleaseEvent(self.time, name, True, '')
        self._events.append(event)
        return event

    # ------------------------------------------------------------------------------------------
    # snapshots
    # ------------------------------------------------------------------------------------------

    def _target_snapshot(
        self, name: str, model: D.Model, q: np.ndarray, v: np.ndarray, held: bool
    ) -> TargetSnapshot:
        spec = self._specs[name]
        p, quat, lin, ang = D.base_link_state(model, q, v)
        handles = {}
        for h in spec.handles:
            hp, hR, hv, hw = frame_state(model, q, v, h.link, h.rotation, h.translation)
            handles[h.name] = _body(hp, hR, hv, hw)
        return TargetSnapshot(
            BodyState(frozen(p), frozen(quat), frozen(lin), frozen(ang)),
            frozen(D.center_of_mass(model, q)),
            frozen(q),
            frozen(v),
            handles,
            held,
            frozen(D.momentum(model, q, v)),
        )

    def snapshot(self) -> SceneSnapshot:
        """The present instant (events since the last snapshot)."""
        r = self._robot
        robot = self.robot_model
        targets = {}
        wrench, point = np.zeros(6), np.zeros(3)
        if self._held is not None:
            held = self._held
            name = held.target.name
            _, _, q_t, v_t = split_state(
                held.welded, robot, held.target.model, f'{name}/', r.q, r.v
            )
            targets[name] = self._target_snapshot(name, held.target.model, q_t, v_t, True)
            h = held.handle
            point = frame_state(r.model, r.q, r.v, f'{name}/{h.link}', h.rotation, h.translation)[
                0
            ]
            wrench = weld_wrench(held.welded, robot, r.q, r.v, r.tau[: robot.n], point)
        for name in sorted(self._targets):
            s = self._targets[name]
            targets[name] = self._target_snapshot(name, s.model, s.q, s.v, False)
        p, quat, lin, ang = D.base_link_state(r.model, r.q, r.v)
        events, self._events = tuple(self._events), []
        return SceneSnapshot(
            step=self._step,
            time=self.time,
            robot_q=frozen(r.q[: robot.nq]),
            robot_v=frozen(r.v[: robot.nv]),
            robot_base=BodyState(frozen(p), frozen(quat), frozen(lin), frozen(ang)),
            gripper=None if self.gripper is None else _body(*self._gripper_state()),
            targets={k: targets[k] for k in self._specs if k in targets},
            momentum=frozen(self.momentum()),
            kinetic_energy=self.kinetic_energy(),
            holding=self.holding,
            grasp_wrench=frozen(wrench),
            grasp_point=frozen(point),
            events=events,
        )


def _body(p: np.ndarray, R: np.ndarray, v: np.ndarray, w: np.ndarray) -> BodyState:
    return BodyState(frozen(p), frozen(matrix_to_quat(R)), frozen(v), frozen(w))


__all__ = ['MAX_DT', 'MAX_EVENTS_PER_STEP', 'MAX_SWEEPS', 'MIN_DT', 'PLACEMENT_SLACK', 'Scene']
