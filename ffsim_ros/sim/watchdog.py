"""The physics watchdog: conservation laws checked on the running simulation (no ROS).

Where nothing external acts on the robot but gravity -- no base wrench, no link wrench -- the
laws of motion fix two things the integration must respect:

* the momentum: ``[P; L_O]`` about the inertial origin changes only by the weight's impulse,
  ``P += M g T``, ``L_O += T c x g + T^2/2 P x g`` (``c = M r_g``), whatever the joint
  efforts, joint friction, drive braking or hard stops do (all of them internal). The
  watchdog keeps that reference from the last instant it was anchored (start, reset, set
  state, the end of an interval under a wrench) and compares. With the momentum-preserving
  step (the engine's default) every step restores the momentum it must end with, so the drift
  left is round-off (1e-16 per step); the check then watches the *model and inputs*: a force
  that is not internal (a limit model, a new input that is not a joint torque), the
  projection failing on an ill-conditioned system (inertias 1e10 apart), a state set behind
  the engine's back. Without the preserving step it also catches plain integration error
  (1e-4 on a humanoid at 70 rad/s over a minute at 1 kHz; 4e3 kg m/s on the servicer's wrist
  spun up to 6 700 rad/s without speed limits).
* the energy: kinetic + potential energy can grow only by the work the joint efforts do
  (``tau . dphi``: exact for efforts held over a step; joint friction, braking and hard stops
  only take energy away or give back what they stored). Energy gained beyond that work over
  :attr:`Watchdog.window_ns` is integration error -- a step too long for the motion (the
  stiff spin-up above: the conserving step keeps the momentum exactly while the energy is
  wrong) -- or a model error. Energy *lost* is not flagged (friction, braking).

Both are compared with a tolerance relative to the scale of the motion (momentum: ``|h|``
plus what the kinetic energy can carry, ``sqrt(2 M T)`` and ``sqrt(2 M T) l`` with ``l`` the
system's radius of gyration; energy: the largest kinetic energy plus the work in the window).
Under a base or link wrench neither check runs (its work and impulse are not tracked); the
references are anchored again when it is removed.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass

import numpy as np

import ffsim_ros.dynamics as D

#: Relative momentum drift (of its scale) beyond which the watchdog warns.
MOMENTUM_TOLERANCE = 1e-9
#: Energy gained beyond the work of the efforts, relative to its scale, beyond which it warns.
ENERGY_TOLERANCE = 1e-6
#: Absolute floors [kg m/s | kg m^2/s] (per kg of the robot's mass above 1 kg for the
#: momentum warning), [J] (a robot at rest has no scale).
MOMENTUM_FLOOR = 1e-12
ENERGY_FLOOR = 1e-9
#: Energy one step (or one batch of steps) may gain beyond the work done on the robot -- by the
#: joint efforts and by gravity --, relative to the kinetic energy at its start plus that work,
#: beyond which the engine takes the step as a runaway, a fault (:meth:`Watchdog.runaway`): two
#: orders of magnitude. RK4's error is a fraction of the energy in motion where the step suits
#: the motion (the servicer from rest at rated effort, steps of 0.01 to 0.2 s: at most 5 times,
#: the next steps sound); the steps that diverged gained 1e5 to 1e16 times.
ENERGY_RUNAWAY = 100.0
#: Distance [m] of the centre of mass from the world origin beyond which it warns: the
#: dynamics functions take their quantities about the origin and lose precision with the
#: square of the distance (forward dynamics 4e-8 relative at 1 km, 6e-6 at 10 km;
#: docs/dynamics.md). A tree robot's steps and published state are taken about its base (as
#: precise anywhere); closed chains, targets and the controller's laws are not.
FAR_FROM_ORIGIN = 1e3


@dataclass(frozen=True)
class Health:
    """What the watchdog found at the last instant it observed.

    Attributes
    ----------
    checked : bool
        Whether the checks ran (False under a base or link wrench).
    momentum_drift : float
        ``max(|P - P_ref| / scale_P, |L_O - L_O,ref| / scale_L)``: relative drift of the
        momentum from what gravity alone allows since the last anchor.
    linear_drift, angular_drift : float
        ``|P - P_ref|`` [kg m/s] and ``|L_O - L_O,ref|`` [kg m^2/s].
    energy_excess : float
        Energy gained beyond the work of the efforts over the window [J] (<= 0: none).
    energy_scale : float
        Its scale: the largest kinetic energy plus the work done in the window [J].
    work : float
        Work of the efforts over the window [J].
    window : float
        Simulated seconds the energy figures cover.
    warnings : tuple of str
        One line per check that failed, with the figures (empty when all is well).
    """

    checked: bool = False
    momentum_drift: float = 0.0
    linear_drift: float = 0.0
    angular_drift: float = 0.0
    energy_excess: float = 0.0
    energy_scale: float = 0.0
    work: float = 0.0
    window: float = 0.0
    warnings: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        """No check failed."""
        return not self.warnings


class Watchdog:
    """Momentum and energy checks of a free-floating simulation (module docstring).

    Parameters
    ----------
    model : Model
        The simulated model (mass, gravity, the radius of gyration at its neutral pose).
    window_ns : int
        Simulated nanoseconds over which energy gained beyond the work is summed.
    momentum_tolerance, energy_tolerance : float
        Relative tolerances.
    """

    def __init__(
        self,
        model: D.Model,
        window_ns: int = 1_000_000_000,
        momentum_tolerance: float = MOMENTUM_TOLERANCE,
        energy_tolerance: float = ENERGY_TOLERANCE,
    ) -> None:
        self.model = model
        self.window_ns = int(window_ns)
        self.momentum_tolerance = float(momentum_tolerance)
        self.energy_tolerance = float(energy_tolerance)
        self._mass = float(model.total_mass)
        self._system_mass = self._mass  # (robot and targets with a world: :meth:`anchor`)
        H0 = D.inertia_blocks(model, D.neutral(model))[0]
        self._gyration = math.sqrt(max(float(np.trace(H0[3:, 3:])), 0.0) / self._mass)
        self._gravity = tuple(float(x) for x in model.gravity)
        # ((P, L_O), M r_g) of the reference, as tuples of floats
        self._ref: tuple[tuple[tuple, tuple], tuple] | None = None
        self._last_energy = 0.0
        self._intervals: deque[tuple[int, float, float, float]] = deque()
        self._sums = [0, 0.0, 0.0, 0.0]
        self._largest: deque[tuple[int, float]] = deque()
        self._count = self._removed = 0
        self.health = Health()

    def energy(
        self, q: np.ndarray, v: np.ndarray, com: np.ndarray, kinetic: float | None = None
    ) -> float:
        """Kinetic plus potential energy [J] (``com``: the system CoM at ``q``; ``kinetic``:
        the kinetic energy when the caller has it).

        Parameters
        ----------
        q : (nq,) ndarray
            Configuration ``[r0, Q0 (x, y, z, w), phi]`` (``r0``: the base CoM, world [m]);
            read only when ``kinetic`` is None.
        v : (nv,) ndarray
            Velocity ``[V0, w0, phidot]``, world [m/s, rad/s]; read only when ``kinetic`` is
            None.
        com : (3,) ndarray
            System CoM at ``q``, world [m].
        kinetic : float, optional
            Kinetic energy at the state [J].

        Returns
        -------
        float
            [J] (the potential energy of uniform gravity, zero at the world origin).
        """
        if kinetic is None:
            kinetic = D.kinetic_energy(self.model, q, v)
        g, r = self._gravity, com.tolist()
        return kinetic - self._system_mass * (g[0] * r[0] + g[1] * r[1] + g[2] * r[2])

    def runaway(
        self,
        kinetic: tuple[float, float],
        com: tuple[np.ndarray, np.ndarray],
        work: float,
        mass: float | None = None,
    ) -> float:
        """The energy [J] a step gained beyond the work done on the robot when that is a
        runaway (beyond :data:`ENERGY_RUNAWAY` times the kinetic energy at the step's start
        plus the work; module docstring), else 0.

        The work of gravity is ``M g . (r_g1 - r_g0)``: taken from the CoM's displacement, not
        from two potential energies about the origin (their round-off far from it would be
        taken for a gain at rest).

        Parameters
        ----------
        kinetic : (float, float)
            Kinetic energy at the step's start and after it [J].
        com : ((3,) ndarray, (3,) ndarray)
            System CoM at the step's start and after it, world [m].
        work : float
            Work of the joint efforts over the step [J].
        mass : float, optional
            Mass [kg] whose CoM ``com`` is, the robot's when None (robot and targets: the
            total).

        Returns
        -------
        float
            [J].
        """
        g = self._gravity
        weight = 0.0
        if any(g):
            shift = (com[1] - com[0]).tolist()
            m = self._mass if mass is None else mass
            weight = m * (g[0] * shift[0] + g[1] * shift[1] + g[2] * shift[2])
        excess = kinetic[1] - kinetic[0] - work - weight
        bound = ENERGY_RUNAWAY * (kinetic[0] + abs(work) + abs(weight)) + ENERGY_FLOOR
        return excess if excess > bound else 0.0

    def anchor(
        self,
        q: np.ndarray,
        v: np.ndarray,
        momentum: np.ndarray,
        com: np.ndarray,
        kinetic: float | None = None,
        mass: float | None = None,
    ) -> None:
        """Take the state as the new reference (after a jump, or under a wrench).

        ``momentum`` (6,) is ``[P; L_g]`` about the system CoM ``com`` (3,), as in a
        :class:`~ffsim_ros.sim.Snapshot`; ``mass`` is the system's until the next anchor.

        Parameters
        ----------
        q : (nq,) ndarray
            Configuration ``[r0, Q0 (x, y, z, w), phi]`` (``r0``: the base CoM, world [m]);
            read only when ``kinetic`` is None.
        v : (nv,) ndarray
            Velocity ``[V0, w0, phidot]``, world [m/s, rad/s]; read only when ``kinetic`` is
            None.
        momentum : (6,) ndarray
            ``[P; L_g]``: linear momentum [kg m/s] and angular momentum about the system CoM
            ``com`` [kg m^2/s], both in world axes.
        com : (3,) ndarray
            System CoM, world [m].
        kinetic : float, optional
            Kinetic energy at the state [J] (None: computed from ``q``, ``v``).
        mass : float, optional
            Mass [kg] of the system whose momentum and CoM these are, the robot's when None
            (robot and targets: the total, which the weight's impulse and the potential
            energy are taken with).
        """
        self._system_mass = self._mass if mass is None else float(mass)
        M = self._system_mass
        self._ref = _about_origin(momentum, com), tuple(M * float(x) for x in com)
        self._last_energy = self.energy(q, v, com, kinetic)
        self._intervals.clear()
        self._sums = [0, 0.0, 0.0, 0.0]  # span [ns], excess, work, |work| over the window
        self._largest: deque[tuple[int, float]] = deque()  # (interval number, kinetic)
        self._count = self._removed = 0  # intervals added and removed since the anchor
        self.health = Health()

    def observe(
        self,
        q: np.ndarray,
        v: np.ndarray,
        momentum: np.ndarray,
        com: np.ndarray,
        *,
        span_ns: int,
        work: float,
        checked: bool,
        kinetic: float | None = None,
    ) -> Health:
        """Check the state reached after ``span_ns`` simulated nanoseconds since the last
        observation (or anchor) against the momentum and energy the laws of motion allow.

        The momentum given about the CoM is moved to the inertial (world) origin,
        ``L_O = L_g + r_g x P``, and compared with the reference of the last anchor carried
        forward by the weight's impulse over ``span_ns`` (module docstring); the energy
        gained is compared with ``work``.

        Parameters
        ----------
        q : (nq,) ndarray
            Configuration reached ``[r0, Q0 (x, y, z, w), phi]`` (``r0``: the base CoM, world
            [m]); read only when ``kinetic`` is None.
        v : (nv,) ndarray
            Velocity reached ``[V0, w0, phidot]``, world [m/s, rad/s]; read only when
            ``kinetic`` is None.
        momentum : (6,) ndarray
            ``[P; L_g]``: linear momentum [kg m/s] and angular momentum about the system CoM
            ``com`` [kg m^2/s], both in world axes (a :class:`~ffsim_ros.sim.Snapshot`'s).
        com : (3,) ndarray
            System CoM, world [m].
        span_ns : int
            Simulated time since the last observation or anchor [ns].
        work : float
            Work the joint efforts did over ``span_ns`` [J].
        checked : bool
            Nothing but gravity acted from outside over ``span_ns`` (no base or link wrench);
            False: nothing is checked and the references are anchored at this state again.
        kinetic : float, optional
            Kinetic energy at the state [J] (None: computed from ``q``, ``v``).

        Returns
        -------
        Health
            The findings (also kept as :attr:`health`): drifts [kg m/s, kg m^2/s], energy
            excess [J], and a warning per check that failed.
        """
        if self._ref is None or not checked:
            self.anchor(q, v, momentum, com, kinetic, self._system_mass)
            return self.health
        span = span_ns * 1e-9
        M, g = self._system_mass, self._gravity
        (P, L), c = self._ref
        if any(g):  # the weight's impulse (plain floats: this runs after every batch)
            Lg = tuple(
                L[i] + span * cg + 0.5 * span * span * pg
                for i, (cg, pg) in enumerate(zip(_cross3(c, g), _cross3(P, g), strict=True))
            )
            c = tuple(c[i] + P[i] * span + 0.5 * M * g[i] * span * span for i in range(3))
            P = tuple(P[i] + M * g[i] * span for i in range(3))
            self._ref = (P, Lg), c
            L = Lg
        hP, hL = _about_origin(momentum, com)
        energy = self.energy(q, v, com, kinetic)
        r = com.tolist()
        kinetic = energy + M * (g[0] * r[0] + g[1] * r[1] + g[2] * r[2])
        carried = math.sqrt(2.0 * M * max(kinetic, 0.0))
        scale_P = math.hypot(*P) + carried
        scale_L = math.hypot(*L) + carried * (self._gyration + math.hypot(*c) / M)
        dP = math.hypot(*(a - b for a, b in zip(hP, P, strict=True)))
        dL = math.hypot(*(a - b for a, b in zip(hL, L, strict=True)))
        drift = max(dP / max(scale_P, MOMENTUM_FLOOR), dL / max(scale_L, MOMENTUM_FLOOR))

        self._add((int(span_ns), energy - self._last_energy - work, work, kinetic), 1)
        self._last_energy = energy
        while len(self._intervals) > 1 and self._sums[0] - self._intervals[0][0] >= self.window_ns:
            self._add(self._intervals.popleft(), -1)
        covered, excess, window_work, absolute_work = self._sums
        scale_E = self._largest[0][1] + absolute_work

        warnings = []
        # (round-off grows with the mass: 1e-12 kg m/s was below a 752 kg robot's, which
        # then warned at rest, |dP| 1e-12 against a near-zero scale)
        if drift > self.momentum_tolerance and max(dP, dL) > MOMENTUM_FLOOR * max(1.0, M):
            warnings.append(
                f'momentum drifted by {drift:.3g} of its scale (|dP| = {dP:.3g} kg m/s, '
                f'|dL_O| = {dL:.3g} kg m^2/s; tolerance {self.momentum_tolerance:g}) with no '
                'external wrench: something other than gravity changed it (integration error '
                'without the momentum-preserving step, else the model or an input)'
            )
        distance = math.hypot(*r)
        if distance > FAR_FROM_ORIGIN:
            warnings.append(
                f'the centre of mass is {distance:.4g} m from the world origin: closed '
                'chains, targets and the controller take their dynamics about the origin and '
                'lose precision with the square of the distance (4e-8 relative at 1 km, 6e-6 at '
                '10 km): put the world frame near the robot (a local orbital frame)'
            )
        if excess > self.energy_tolerance * scale_E + ENERGY_FLOOR:
            warnings.append(
                f'energy grew by {excess:.3g} J beyond the {window_work:.3g} J of work done by '
                f'the joint efforts over the last {covered * 1e-9:.3f} s (tolerance '
                f'{self.energy_tolerance:g} of {scale_E:.3g} J): integration error (a physics '
                'step too long for the motion?) or a model error'
            )
        self.health = Health(
            checked=True,
            momentum_drift=drift,
            linear_drift=dP,
            angular_drift=dL,
            energy_excess=excess,
            energy_scale=scale_E,
            work=window_work,
            window=covered * 1e-9,
            warnings=tuple(warnings),
        )
        return self.health

    def _add(self, entry: tuple[int, float, float, float], sign: int) -> None:
        """Add (``sign`` 1) or remove (-1) an interval ``(span_ns, excess, work, kinetic)``
        of the window's running sums (span, excess, work, |work|)."""
        span, excess, work, kinetic = entry
        if sign > 0:
            self._intervals.append(entry)
            self._count += 1
            # the window's largest kinetic energy: a queue of decreasing values (O(1) each)
            while self._largest and self._largest[-1][1] <= kinetic:
                self._largest.pop()
            self._largest.append((self._count, kinetic))
        else:
            self._removed += 1
            if self._largest and self._largest[0][0] <= self._removed:
                self._largest.popleft()
        total = self._sums
        self._sums = [
            total[0] + sign * span,
            total[1] + sign * excess,
            total[2] + sign * work,
            total[3] + sign * abs(work),
        ]


def _about_origin(momentum: np.ndarray, com: np.ndarray) -> tuple[tuple, tuple]:
    """``(P, L_O)`` (3-tuples) from ``[P; L_g]`` and the CoM: ``L_O = L_g + r_g x P``."""
    h = momentum.tolist()
    P = (h[0], h[1], h[2])
    rP = _cross3(com.tolist(), P)
    return P, (h[3] + rP[0], h[4] + rP[1], h[5] + rP[2])


def _cross3(a: tuple, b: tuple) -> tuple[float, float, float]:
    """``a x b`` of two 3-tuples of floats. Not :func:`ffsim_ros.dynamics.lie.cross`: this
    runs after every batch, and that function's arrays in and out (1.4 us a call against
    0.2 us) would add a third to :meth:`Watchdog.observe` (12 us)."""
    return (a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0])
