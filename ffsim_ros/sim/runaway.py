"""Runaway steps: a finite state that is no solution, from a physics step too long for the
motion (no ROS).

RK4 on a step much longer than the motion's time scales does not fail: it returns a finite
state, joint rates 337 to 4e15 times the speed limits on the servicer from rest at 1-10 Hz,
which the next step turns into a NaN. :func:`runaway_fault` tells such a step from a sound one
by two figures, so the :class:`~ffsim_ros.sim.Engine` faults on *that* step and keeps the
state before it:

* a driven joint left after its drive braked at more than :data:`.limits.RUNAWAY_FACTOR` (100)
  times both its speed limit and its speed at the step's start
  (:meth:`.limits.JointLimits.runaway`), confirmed by the same step taken as two half steps
  (the held efforts, the braking over the whole step): a runaway's result is nothing like its
  halves' (or they fail), a sound step's agrees with them (step doubling, the estimate of
  RK4's error) -- a weak drive back-driven from rest by a strong one (a 20 kg disc on a
  0.5 N m, 0.001 rad/s drive, its carrier turned at rated effort) is left 107 times over
  its limit after a sound 1 ms step (its halves agree to 1e-15, 100 steps of 10 us to 4 %),
  which was faulted (:data:`HALVES_AGREEMENT`);
* kinetic energy gained beyond the work done on the robot by more than
  :data:`.watchdog.ENERGY_RUNAWAY` (100) times the kinetic energy at the step's start plus that
  work (:meth:`.watchdog.Watchdog.runaway`): checked on every batch of steps, and on the steps
  taken one at a time near the limits where some joint has no drive whose speed is checked (a
  state summary, 5.5 us a step on the servicer; where every joint has one, a runaway shows in
  their speeds: every one of the probe's did).

Under a base or link wrench, which can drive any motion (1e7 N on the servicer flings a joint to
322 times its limit within 1 ms, accurately) and whose work is not tracked, the speeds are
checked as above (the halves confirm a trip) and the energy on every step and batch, against the
most the wrenches can give (:func:`wrench_power`: a wrench's power is bounded by the square root
of the kinetic energy, so over a span ``s`` the root of the energy rises by at most
``a s / 2``): a runaway under 3e5 N m on the servicer's base (joint rates of 7e28 rad/s after
20 ms) was published and kept, as no check ran under a wrench.

With targets (:mod:`.world`) the scene's steps are checked by the energy of robot and targets
together (:func:`energy_fault`: the work of the robot's efforts and of gravity on the total
mass; the rigid contact law's impulses only take energy away), on every batch and on the steps
taken one at a time: a finite runaway state (the servicer's wrist at 5.6e10 rad/s after the
second step at 10 Hz) was kept and published there. Not the speeds (no drive brakes there),
nor under the compliant contact law (its springs' energy is not tracked).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

import ffsim_ros.dynamics as D

from .commands import ExternalWrenches
from .limits import JointLimits
from .watchdog import Watchdog

#: Errors of the state summary on a state whose energy overflows float64.
_SUMMARY_ERRORS = (ValueError, ArithmeticError)

#: A step whose speed test tripped is sound when each joint it flagged ends within this
#: fraction of the larger of the two speeds of the step taken whole and as two half steps
#: (:func:`runaway_fault`). Measured (servicer at 1-20 Hz, rated efforts and fractions of
#: them, 20 random poses; a weak drive back-driven at 1 Hz-1 kHz): every runaway differed by
#: 0.99 to 1.4 of it (orders of magnitude, or the opposite sign) or its halves failed; the
#: sound steps agreed within 2e-5, and a coarse one (a 0.0001 rad/s drive back-driven at
#: 10 Hz) within 0.47, its halves' and 100 fine steps' speeds 2 % apart (an inaccurate step,
#: not one that is no solution).
HALVES_AGREEMENT = 0.5


def runaway_fault(
    limits: JointLimits | None,
    watchdog: Watchdog,
    v: np.ndarray,
    v1: np.ndarray,
    summaries: Callable[[], tuple[D.StateSummary, D.StateSummary]] | None,
    work: float,
    dt: float,
    at: float,
    halves: Callable[[], np.ndarray | str] | None = None,
    rise: float = 0.0,
) -> str:
    """The fault of a step (or batch of steps) that ran away ('' when it did not).

    Parameters
    ----------
    limits : JointLimits or None
        The drives whose joints are checked (None: the speeds are not, e.g. a batch checked
        by :meth:`.limits.JointLimits.quiet` already).
    watchdog : Watchdog
        Its :meth:`~.watchdog.Watchdog.runaway` checks the energy.
    v, v1 : (nv,) ndarray
        Velocity at the step's start and after it (braking included), ``[V0, w0, phidot]``
        [m/s, rad/s, rad/s | m/s].
    summaries : callable or None
        Returns the state summaries at the step's start and after it (called only when the
        speeds are fine); None: the energy is not checked (a wrench acting, whose work is not
        known).
    work : float
        Work of the joint efforts over the step [J].
    dt, at : float
        The physics step and the time the step started at [s].
    halves : callable, optional
        Returns the joint speeds (n,) after the same step taken as two half steps, braking
        included, or why that failed (a str); called only when the speeds' test trips, whose
        finding it confirms (:data:`HALVES_AGREEMENT`). None: not confirmed.
    rise : float
        Under external wrenches, the most the square root of the kinetic energy can rise over
        the step(s) by their power [J^0.5] (:func:`wrench_power` times half the span); the
        energy check allows their work, ``rise (2 sqrt(T0 + |work|) + rise)``. 0: none acts.

    Returns
    -------
    str
    """
    model = watchdog.model
    j, half = limits.runaway(v[6:], v1[6:]) if limits is not None else -1, None
    if j >= 0 and halves is not None:
        half = halves()
        if not isinstance(half, str) and _agree(limits, v[6:], v1[6:], half):
            j = -1  # (a sound step: the energy is checked as for any step)
    if j >= 0:
        limit = limits.speed_limit[j]
        name, unit = _dof(model, j)
        if half is None:
            halved = ''
        elif isinstance(half, str):
            halved = f'; taken as two half steps it failed ({half})'
        else:
            halved = f'; {half[j]:.3g} {unit} when taken as two half steps'
        why = (
            f'{name} at {v1[6 + j]:.3g} {unit} after its drive braked, '
            f'{abs(v1[6 + j]) / limit:.3g} times its speed limit {limit:g} {unit} (from '
            f"{v[6 + j]:.3g} {unit} at the step's start){halved}"
        )
    elif summaries is None:
        return ''
    else:
        try:
            start, end = summaries()
        except _SUMMARY_ERRORS as exc:  # (a kinetic energy overflowing float64)
            why = f'a state whose kinetic energy is not finite ({exc})'
        else:
            pair = (start.kinetic_energy, end.kinetic_energy)
            wrench = rise * (2.0 * math.sqrt(pair[0] + abs(work)) + rise) if rise else 0.0
            com = (start.com, end.com)
            return energy_fault(watchdog, pair, com, work + wrench, v1, dt, at, wrench=wrench)
    return _fault(why, dt, at)


def _agree(limits: JointLimits, before: np.ndarray, after: np.ndarray, half: np.ndarray) -> bool:
    """Whether every joint whose speed ``after`` (n,) the step whole tripped the runaway test
    on ends within :data:`HALVES_AGREEMENT` of it when taken as two halves (``half`` (n,))."""
    fast = limits.runaway_joints(before, after)
    a, h = after[fast], half[fast]
    return bool(np.all(np.abs(a - h) <= HALVES_AGREEMENT * np.maximum(np.abs(a), np.abs(h))))


def too_fast(v: np.ndarray, dt: float, chain: bool) -> str:
    """For the fault of a step without external wrenches failing in the dynamics: the state
    at the step's start was finite, so the failure came from an intermediate stage of the
    step -- the motion too fast for the step, most likely (the error named, e.g. a mass matrix
    'not positive definite', is that stage's, not the published state's); at rest (the joint
    rates and the base's angular rate times ``dt`` at most 1e-9), a closed chain's loops could
    not be closed: a singular or locked configuration.

    Parameters
    ----------
    v : (nv,) velocity at the step's start ``[V0, w0, phidot]`` [m/s, rad/s, rad/s | m/s].
    dt : float
        The physics step [s].
    chain : bool
        Whether the robot is a closed chain.

    Returns
    -------
    str
        To append to the fault's message.
    """
    rate = float(np.max(np.abs(v[6:]))) if v.size > 6 else 0.0
    spin = float(np.linalg.norm(v[3:6]))
    rates = f'joint rates up to {rate:.3g} rad/s or m/s, the base turning at {spin:.3g} rad/s'
    if max(rate, spin) * dt > 1e-9:
        return (
            f'; in an intermediate stage of the step (the state at its start is finite, '
            f'{rates}): too fast a motion for the {dt:g} s step?'
        )
    why = ': the loops could not be closed here, a singular or locked configuration'
    return f'; at rest ({rates}){why if chain else ""}'


def energy_fault(
    watchdog: Watchdog,
    kinetic: tuple[float, float],
    com: tuple[np.ndarray, np.ndarray],
    work: float,
    v1: np.ndarray,
    dt: float,
    at: float,
    *,
    mass: float | None = None,
    whose: str = 'the energy',
    wrench: float = 0.0,
) -> str:
    """The fault of a step (or batch of steps) whose energy ran away
    (:meth:`.watchdog.Watchdog.runaway`), '' when it did not.

    Parameters
    ----------
    watchdog : Watchdog
        The robot's.
    kinetic : (float, float)
        Kinetic energy at the step's start and after it [J].
    com : ((3,) ndarray, (3,) ndarray)
        CoM at the step's start and after it, world [m].
    work : float
        Work of the joint efforts over the step [J], and ``wrench``.
    v1 : (nv,) ndarray
        The robot's velocity after the step (its fastest joint named).
    dt, at : float
        The physics step and the time the step started at [s].
    mass : float, optional
        The mass whose CoM ``com`` is (robot and targets), the robot's when None [kg].
    whose : str
        Whose energy, for the message.
    wrench : float
        The most work the external wrenches can have done, included in ``work`` [J].

    Returns
    -------
    str
    """
    gain = watchdog.runaway(kinetic, com, work, mass)
    if not gain:
        return ''
    fastest = ''
    if v1.size > 6:
        j = int(np.argmax(np.abs(v1[6:])))
        name, unit = _dof(watchdog.model, j)
        fastest = f'; {name} at {v1[6 + j]:.3g} {unit}'
    most = f', at most {wrench:.3g} J of it by the external wrenches' if wrench else ''
    why = (
        f'{whose} grew by {gain:.3g} J beyond the {work:.3g} J of work done{most} '
        f'(kinetic energy {kinetic[0]:.3g} J at the start{fastest})'
    )
    return _fault(why, dt, at)


def wrench_power(model: D.Model, wrenches: ExternalWrenches) -> float:
    """The most power the external wrenches can give per square root of the kinetic energy,
    ``a`` in ``dT/dt <= a sqrt(T)`` [W / J^0.5] (0 when none acts; inf when one acts on a body
    without mass or rotational inertia, which bounds nothing).

    Each body ``b`` carries the force ``F_b`` and the moment ``N_b`` about its CoM of the
    wrenches on it (the base wrench at the base CoM, a link wrench at its link's origin,
    ``d`` from the CoM: ``|N_b| <= sum |n| + |d| |f|``), whose power ``F_b . v_b + N_b . w_b``
    is at most ``sqrt(2 T_b) sqrt(|F_b|^2 / m_b + |N_b|^2 / l_b)`` (``T_b >= m_b |v_b|^2 / 2
    + l_b |w_b|^2 / 2``, ``l_b`` its smallest principal moment); summed over the bodies
    (Cauchy-Schwarz) ``a = sqrt(2 sum |F_b|^2 / m_b + |N_b|^2 / l_b)``. Exact dynamics then
    keep ``sqrt(T)`` within ``sqrt(T0) + a t / 2``, whatever the frame the wrenches are held in.

    Parameters
    ----------
    model : Model
    wrenches : ExternalWrenches

    Returns
    -------
    float
    """
    arrays, loads = model.arrays, {}
    acting = wrenches.step_arguments()
    base = acting.get('base_wrench', acting.get('base_wrench_body'))
    if base is not None:
        loads[0] = [float(np.linalg.norm(base[:3])), float(np.linalg.norm(base[3:]))]
    for link, w in acting.get('link_wrenches', {}).items():
        frame = model.frame(link)
        arm = float(np.linalg.norm(frame.translation - arrays.com[frame.body]))
        f, n = float(np.linalg.norm(w[:3])), float(np.linalg.norm(w[3:]))
        load = loads.setdefault(frame.body, [0.0, 0.0])
        load[0] += f
        load[1] += n + arm * f
    total = 0.0
    for b, (f, n) in loads.items():
        mass, least = float(arrays.mass[b]), float(np.linalg.eigvalsh(arrays.inertia[b])[0])
        if (f and mass <= 0.0) or (n and least <= 0.0):
            return math.inf
        total += (f * f / mass if f else 0.0) + (n * n / least if n else 0.0)
    return math.sqrt(2.0 * total)


def _fault(why: str, dt: float, at: float) -> str:
    """A runaway fault saying ``why``."""
    return (
        f'runaway step from t = {at:.6f} s: {why}: the physics step ({dt:g} s) is too long for '
        'the motion (a higher physics_rate_hz); the state before it is kept'
    )


def _dof(model: D.Model, j: int) -> tuple[str, str]:
    """Joint DoF ``j`` (index in ``phi``'s rates) named for a message, and its speed unit."""
    k = max(i for i, first in enumerate(model.idx_v) if first <= 6 + j)
    axis = f' (axis {6 + j - model.idx_v[k]})' if model.nvs[k] > 1 else ''
    unit = 'm/s' if model.joint_types[k] == 'prismatic' else 'rad/s'
    return f'joint {model.joint_names[k]!r}{axis}', unit
