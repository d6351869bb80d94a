"""Momentum-preserving stepping of a free-floating system.

The total momentum ``h = [P; L_O]`` about the inertial origin is linear in the velocities
[S0 eqs. 6-7, 11]. Without external forces it is constant, under uniform gravity it changes
by the exactly known impulse of the weight; an integration step (RK4) keeps it only to its
truncation error. After a step, :func:`correct_momentum` restores the known momentum by the
smallest velocity change in the kinetic-energy metric: with ``A v = h`` the momentum map,
``dv = -H^-1 A^T (A H^-1 A^T)^-1 (A v - h)``, and because ``A`` is ``H``'s first six rows taken
about the base CoM, ``H^-1 A^T`` selects the base columns: only the base velocity changes, by
the rigid-body motion of the whole system that carries the missing momentum. That costs one
kinematics pass and a 6x6 solve.

The system CoM is known exactly too: it moves on the ballistic line (straight without
gravity) that the exact momentum dictates. Before the velocity correction the base is shifted
by the step's CoM error (:func:`recentered`, the whole system translated: loop closures and
the joint coordinates unchanged, the accelerations translation invariant), so that the
angular momentum about the CoM, ``L_g = L_O - r_g x P``, holds exactly as well when ``P`` is
not zero (before: to RK4's position error times ``P``).
"""

from __future__ import annotations

import numpy as np

from ..jit import borrow, keep_alive, njit, njit_leaf
from .aba import aba_passes, aba_ws_size
from .cholesky import cholesky_solve_inplace
from .friction import add_friction
from .kinematics import kinematics, kinematics_into, kinematics_views
from .layout import ModelArrays
from .lie_group import rk4_step
from .momentum import spatial_momentum


@njit
def system_momentum(
    m: ModelArrays, q: np.ndarray, v: np.ndarray
) -> tuple[np.ndarray, float, np.ndarray, np.ndarray]:
    """Momentum about O and the composite inertia of the whole system about O.

    Returns
    -------
    h : (6,) ``[P; L_O]`` [kg m/s, kg m^2/s];  mass : float [kg];
    first_moment : (3,) ``M r_g`` [kg m];  inertia : (3, 3) about O [kg m^2].
    """
    R, p, S, mw, hw, Iw = kinematics(m, q, v.shape[0])
    h = spatial_momentum(m, v, S, mw, hw, Iw)
    mass, first, inertia = composite_inertia(mw, hw, Iw)
    return h, mass, first, inertia


@njit_leaf
def composite_inertia(
    mw: np.ndarray, hw: np.ndarray, Iw: np.ndarray
) -> tuple[float, np.ndarray, np.ndarray]:
    """The whole system's inertia about O from the body inertias ``(mw, hw, Iw)``.

    Returns
    -------
    mass : float [kg];  first_moment : (3,) ``M r_g`` [kg m];  inertia : (3, 3) [kg m^2].
    """
    mass = 0.0
    first = np.zeros(3)
    inertia = np.zeros((3, 3))
    for i in range(mw.shape[0]):
        mass += mw[i]
        for r in range(3):
            first[r] += hw[i, r]
            for c in range(3):
                inertia[r, c] += Iw[i, r, c]
    return mass, first, inertia


@njit_leaf
def base_correction(
    q: np.ndarray, dh: np.ndarray, mass: float, first: np.ndarray, inertia: np.ndarray
) -> np.ndarray:
    """The base velocity change ``[dV0; dw0]`` (6,) that adds ``dh = [dP; dL_O]`` (6,) to the
    momentum: the rigid motion ``[v_O; w]`` of the whole system with ``I_sys [v_O; w] = dh``,
    ``I_sys = [[M E, -c~], [c~, I_O]]`` (``c = M r_g``)."""
    A = np.zeros((6, 6))
    x = dh.copy()
    for r in range(3):
        A[r, r] = mass
        for c in range(3):
            A[3 + r, 3 + c] = inertia[r, c]
    A[4, 0] = first[2]
    A[5, 0] = -first[1]
    A[3, 1] = -first[2]
    A[5, 1] = first[0]
    A[3, 2] = first[1]
    A[4, 2] = -first[0]
    for r in range(3):
        for c in range(3):
            A[c, 3 + r] = A[3 + r, c]
    cholesky_solve_inplace(A, x)
    out = np.empty(6)
    # the base CoM velocity of the rigid motion: v_O + w x r0
    out[0] = x[0] + x[4] * q[2] - x[5] * q[1]
    out[1] = x[1] + x[5] * q[0] - x[3] * q[2]
    out[2] = x[2] + x[3] * q[1] - x[4] * q[0]
    out[3] = x[3]
    out[4] = x[4]
    out[5] = x[5]
    return out


@njit_leaf
def base_corrected(
    q: np.ndarray,
    v: np.ndarray,
    dh: np.ndarray,
    mass: float,
    first: np.ndarray,
    inertia: np.ndarray,
) -> np.ndarray:
    """A copy of ``v`` (nv,) with :func:`base_correction` added to its base velocity
    ``[V0; w0]``: the velocity whose momentum is ``dh`` (6,) more."""
    out = v.copy()
    dv = base_correction(q, dh, mass, first, inertia)
    for c in range(6):
        out[c] += dv[c]
    return out


@njit
def momentum_after(
    m: ModelArrays, h: np.ndarray, mass: float, first: np.ndarray, dt: float
) -> np.ndarray:
    """The momentum ``[P; L_O]`` and first moment ``M r_g`` after ``dt`` seconds under gravity
    alone, from ``h`` (6,) and ``first`` (3,) now: a (9,) target ``[P; L_O; M r_g]``.

    ``P += M g dt``; the CoM follows the ballistic ``r_g + (P/M) t + g t^2/2``, so
    ``L_O += M dt r_g x g + dt^2/2 P x g`` (the ``g t^2/2`` term is parallel to ``g``).
    """
    g = m.gravity
    out = np.empty(9)
    for r in range(6):
        out[r] = h[r]
    for r in range(3):
        out[r] += mass * g[r] * dt
        out[6 + r] = first[r] + h[r] * dt + 0.5 * mass * g[r] * dt * dt
    P = h[:3]
    c = first  # M r_g
    out[3] += dt * (c[1] * g[2] - c[2] * g[1]) + 0.5 * dt * dt * (P[1] * g[2] - P[2] * g[1])
    out[4] += dt * (c[2] * g[0] - c[0] * g[2]) + 0.5 * dt * dt * (P[2] * g[0] - P[0] * g[2])
    out[5] += dt * (c[0] * g[1] - c[1] * g[0]) + 0.5 * dt * dt * (P[0] * g[1] - P[1] * g[0])
    return out


@njit_leaf
def recentered(
    q: np.ndarray,
    h: np.ndarray,
    mass: float,
    first: np.ndarray,
    inertia: np.ndarray,
    first_target: np.ndarray,
) -> tuple[np.ndarray, ...]:
    """The whole system translated so that its first moment is ``first_target`` (3,)
    ``M r_g`` [kg m]: the base position moved by ``d = (first_target - first) / M``, and the
    momentum about O and composite inertia about O of the translated state.

    Returns
    -------
    q : (nq,) ;  h : (6,) ``[P; L_O + d x P]`` ;  first : (3,) ``first_target`` ;
    inertia : (3, 3) about O.
    """
    q = q.copy()
    h = h.copy()
    d = np.empty(3)
    for r in range(3):
        d[r] = (first_target[r] - first[r]) / mass
        q[r] += d[r]
    P = h[:3]
    h[3] += d[1] * P[2] - d[2] * P[1]
    h[4] += d[2] * P[0] - d[0] * P[2]
    h[5] += d[0] * P[1] - d[1] * P[0]
    # I_O = I_g + M (|c|^2 E - c c^T) with c = r_g: the parallel-axis terms moved to c + d
    c0 = first / mass
    c1 = first_target / mass
    shifted = inertia.copy()
    sq = (c1[0] * c1[0] + c1[1] * c1[1] + c1[2] * c1[2]) - (
        c0[0] * c0[0] + c0[1] * c0[1] + c0[2] * c0[2]
    )
    for r in range(3):
        shifted[r, r] += mass * sq
        for c in range(3):
            shifted[r, c] -= mass * (c1[r] * c1[c] - c0[r] * c0[c])
    return q, h, first_target.copy(), shifted


@njit
def correct_momentum(
    m: ModelArrays, q: np.ndarray, v: np.ndarray, target: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, float, np.ndarray]:
    """``(q, v)`` with the base velocity changed so that the momentum about O is
    ``target[:6]`` and, when ``target`` (9,) carries the first moment ``M r_g``, the whole
    system first translated onto it (:func:`recentered`).

    The velocity change is the rigid motion of the whole system ``[v_O; w]`` at O with
    ``I_sys [v_O; w] = target - h`` (``I_sys`` the composite spatial inertia about O), i.e.
    the kinetic-energy-metric projection of the module docstring.

    Returns
    -------
    q : (nq,) ;  v : (nv,) corrected velocity;  h : (6,) its momentum (``target[:6]``);
    mass : float;  first_moment : (3,) ``M r_g`` at the returned ``q``.
    """
    h, mass, first, inertia = system_momentum(m, q, v)
    if target.shape[0] == 9:
        q, h, first, inertia = recentered(q, h, mass, first, inertia, target[6:])
    out = base_corrected(q, v, target[:6] - h, mass, first, inertia)
    return q, out, target[:6].copy(), mass, first


@njit
def corrected_first_stage(
    m: ModelArrays,
    q: np.ndarray,
    v: np.ndarray,
    gen: np.ndarray,
    with_friction: bool,
    target: np.ndarray,
    ws: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, float, np.ndarray]:
    """The first RK4 stage of a step fused with the momentum correction of its start state.

    One kinematics pass serves both: the momentum and composite inertia of ``(q, v)``, the
    correction of ``v`` to ``target`` (none when ``target`` is empty), then the ABA passes
    (joint friction included when enabled) at the corrected state.

    Returns
    -------
    q : (nq,) the configuration, translated onto the target's first moment;  v : (nv,)
    corrected velocity;  a : (nv,) its accelerations;  h : (6,) its momentum;  mass : float;
    first_moment : (3,)
    """
    nb = m.parent.shape[0]
    nv = v.shape[0]
    R, p, S, mw, hw, Iw, T = kinematics_views(ws, nb, nv)
    kinematics_into(m, q, R, p, S, mw, hw, Iw, T)
    h = spatial_momentum(m, v, S, mw, hw, Iw)
    mass, first, inertia = composite_inertia(mw, hw, Iw)
    if target.shape[0] > 0:
        # the ABA below keeps the kinematics of the untranslated q: the accelerations
        # ([dV0; dw0; phiddot]) of a translated system are the same
        q, h, first, inertia = recentered(q, h, mass, first, inertia, target[6:])
        v = base_corrected(q, v, target[:6] - h, mass, first, inertia)
        h = target[:6].copy()
    force = gen
    if with_friction:
        force = gen.copy()
        add_friction(m, v, force, 1.0)
    a = np.empty(nv)
    aba_passes(m, v, force, np.empty((0, 6)), a, ws)
    return q, v, a, h, mass, first


@njit_leaf
def conserving_rk4_steps(
    m: ModelArrays,
    q: np.ndarray,
    v: np.ndarray,
    gen: np.ndarray,
    with_friction: bool,
    dt: float,
    count: int,
) -> tuple[np.ndarray, np.ndarray]:
    """``count`` RK4 steps of a floating-base system without external wrenches (joint efforts
    and gravity only), the momentum of each step's end state corrected to the momentum the
    step must end with (:func:`momentum_after`, the CoM on its ballistic line too): fused
    with the next step's first stage
    (:func:`corrected_first_stage`), and once more after the last step.

    Returns
    -------
    q : (nq,) ;  v : (nv,)
    """
    owner = np.empty(aba_ws_size(m.parent.shape[0], v.shape[0]))
    ws = borrow(owner)
    fext = np.empty((0, 6))
    none = np.empty(0)
    target = none
    for _ in range(count):
        q, v, a, h, mass, first = corrected_first_stage(m, q, v, gen, with_friction, target, ws)
        target = momentum_after(m, h, mass, first, dt)
        q, v = rk4_step(m, q, v, gen, fext, with_friction, dt, none, a)
    q, v, _, _, _ = correct_momentum(m, q, v, target)
    keep_alive(owner)
    return q, v
