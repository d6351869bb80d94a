"""Single-state entry points: the packed model (:func:`~.layout.pack`) in, results out.

``e_aba``, ``e_mass_matrix``, ``e_nle`` and ``e_rnea`` write into a caller-provided output
and return whether their vectors had the sizes and the layout they are compiled for
(:func:`.layout.plain_vector`): they are the per-call fast paths of
:mod:`ffsim_ros.dynamics.algorithms`, which take another path where they did not. They, the
kinematics (``e_poses``, ``e_kinematics``), ``e_momentum``, ``e_state_summary``,
``e_integrate`` and the compiled steps (``e_rk4_steps``, ``e_conserving_rk4_steps``) check
their result finite (:func:`.spatial.require_finite`, a few ns where a check in Python costs
about a microsecond): a NaN input that would only propagate, or an overflow from finite
inputs (velocities or efforts too large), is raised, not returned.
"""

from __future__ import annotations

import numpy as np

from ..jit import borrow, carve, keep_alive, njit
from ..lie import qnormalize
from .aba import aba_into, aba_ws_size, forward_dynamics
from .conservation import conserving_rk4_steps, correct_momentum, momentum_after, system_momentum
from .crba import crba, forward_dynamics_crba
from .friction import add_friction
from .kinematics import (
    forward_kinematics,
    kinematics,
    kinematics_into,
    kinematics_views,
    kinematics_ws_size,
)
from .layout import ROOT_FREE, plain_vector, unpack
from .lie_group import chart_rate, integrate, rk4_stage, rk4_step
from .momentum import mass_center, momentum_and_energy, spatial_momentum
from .rnea import id_ws_size, inverse_dynamics_into
from .spatial import require_finite


def taken(done: bool) -> None:
    """Raise ``RuntimeError`` unless a per-call entry point (``e_aba``, ``e_mass_matrix``,
    ``e_nle``, ``e_rnea``) took its vectors. For callers whose vectors were converted to the
    model's sizes and layout (so it always does): never an output left unwritten.

    Parameters
    ----------
    done : bool
        What the entry point returned.
    """
    if not done:
        raise RuntimeError('internal error: an entry point refused converted vectors')


@njit
def e_poses(idata: np.ndarray, fdata: np.ndarray, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Entry point: body poses ``(R (nb,3,3), p (nb,3))``, checked finite."""
    m = unpack(idata, fdata)
    nb = m.parent.shape[0]
    R = np.empty((nb, 3, 3))
    p = np.empty((nb, 3))
    forward_kinematics(m, q, R, p, np.empty((3, 3, 3)))
    _require_finite_poses(R, p)
    return R, p


@njit
def _require_finite_poses(R: np.ndarray, p: np.ndarray) -> None:
    """:func:`.spatial.require_finite` of every body's pose ``R`` (nb, 3, 3), ``p`` (nb, 3)."""
    for b in range(p.shape[0]):
        require_finite(p[b])
        for r in range(3):
            require_finite(R[b, r])


@njit
def e_kinematics(idata: np.ndarray, fdata: np.ndarray, q: np.ndarray) -> tuple[np.ndarray, ...]:
    """Entry point of :func:`kinematics`, its poses and motion subspaces checked finite."""
    out = kinematics(unpack(idata, fdata), q, idata[1])
    _require_finite_poses(out[0], out[1])
    S = out[2]
    for r in range(S.shape[0]):
        require_finite(S[r])
    return out


@njit
def e_mass_matrix(idata: np.ndarray, fdata: np.ndarray, q: np.ndarray, H: np.ndarray) -> bool:
    """Entry point: the inertia matrix by :func:`crba` into ``H`` (nv, nv), checked finite
    (a NaN or an infinity in ``q`` raised, not returned). False, and nothing done, when
    ``q`` is not a :func:`.layout.plain_vector` of ``nq`` entries."""
    if not plain_vector(q, idata[12]):
        return False
    m = unpack(idata, fdata)
    nb = m.parent.shape[0]
    nv = idata[1]
    owner = np.empty(kinematics_ws_size(nb, nv))
    R, p, S, mw, hw, Iw, T = kinematics_views(borrow(owner), nb, nv)
    q = borrow(q)
    H = borrow(H)
    kinematics_into(m, q, R, p, S, mw, hw, Iw, T)
    for r in range(nv):
        for c in range(nv):
            H[r, c] = 0.0
    crba(m, S, mw, hw, Iw, H)
    for r in range(nv):
        require_finite(H[r])
    keep_alive(owner)
    return True


@njit
def e_rnea(
    idata: np.ndarray,
    fdata: np.ndarray,
    q: np.ndarray,
    v: np.ndarray,
    a: np.ndarray,
    with_friction: bool,
    out: np.ndarray,
) -> bool:
    """Entry point without external wrenches: :func:`inverse_dynamics_into` into ``out``
    (nv,) ``[F; T; tau]`` [N, N m, N m | N] (base wrench at the base CoM, inertial frame) from
    ``q`` (nq,), ``v`` (nv,) and ``a`` (nv,) ``[dV0, dw0, phiddot]`` [m/s^2, rad/s^2, ...].
    False, and nothing done, unless the three are :func:`.layout.plain_vector` of those sizes."""
    nv = idata[1]
    if not (plain_vector(q, idata[12]) and plain_vector(v, nv) and plain_vector(a, nv)):
        return False
    m = unpack(idata, fdata)
    owner = np.empty(id_ws_size(m.parent.shape[0], nv))
    ws = borrow(owner)
    out = borrow(out)
    fext = carve(ws, 0, (0, 6))
    inverse_dynamics_into(m, borrow(q), borrow(v), borrow(a), fext, with_friction, out, ws)
    require_finite(out)
    keep_alive(owner)
    return True


@njit
def e_nle(
    idata: np.ndarray,
    fdata: np.ndarray,
    q: np.ndarray,
    v: np.ndarray,
    with_friction: bool,
    out: np.ndarray,
) -> bool:
    """Entry point of the bias forces ``nle`` (no external wrenches) into ``out`` (nv,).

    :func:`rnea` with ``a = 0``, its acceleration terms skipped. False, and nothing done,
    unless ``q`` (nq,) and ``v`` (nv,) are :func:`.layout.plain_vector`.
    """
    if not (plain_vector(q, idata[12]) and plain_vector(v, idata[1])):
        return False
    m = unpack(idata, fdata)
    owner = np.empty(id_ws_size(m.parent.shape[0], idata[1]))
    ws = borrow(owner)
    out = borrow(out)
    v = borrow(v)
    fext = carve(ws, 0, (0, 6))
    inverse_dynamics_into(m, borrow(q), v, v[0:0], fext, with_friction, out, ws)
    require_finite(out)
    keep_alive(owner)
    return True


@njit
def e_inverse_dynamics(
    idata: np.ndarray,
    fdata: np.ndarray,
    q: np.ndarray,
    v: np.ndarray,
    a: np.ndarray,
    fext: np.ndarray,
    with_friction: bool,
) -> np.ndarray:
    """Entry point: :func:`rnea` minus the joint friction when enabled.

    ``a`` (nv,) or empty for ``a = 0``; ``fext`` (nb, 6) body wrenches about O.
    """
    m = unpack(idata, fdata)
    nv = idata[1]
    out = np.empty(nv)
    ws = np.empty(id_ws_size(m.parent.shape[0], nv))
    inverse_dynamics_into(m, q, v, a, fext, with_friction, out, ws)
    return out


@njit
def e_aba(
    idata: np.ndarray,
    fdata: np.ndarray,
    q: np.ndarray,
    v: np.ndarray,
    tau: np.ndarray,
    with_friction: bool,
    out: np.ndarray,
) -> bool:
    """Entry point: ABA forward dynamics under joint efforts only, into ``out`` (nv,).

    ``tau`` (n,) are the joint efforts (the last ``n`` generalized forces); no base wrench and
    no body wrenches (see :func:`e_forward_dynamics` for those). False, and nothing done,
    unless ``q`` (nq,), ``v`` (nv,) and ``tau`` (n,) are :func:`.layout.plain_vector`.
    """
    nv = idata[1]
    if not (plain_vector(q, idata[12]) and plain_vector(v, nv) and plain_vector(tau, idata[13])):
        return False
    m = unpack(idata, fdata)
    nb = m.parent.shape[0]
    o = aba_ws_size(nb, nv)
    owner = np.empty(o + nv)
    ws = borrow(owner)
    v = borrow(v)
    out = borrow(out)
    gen = ws[o : o + nv]
    nb0 = nv - tau.shape[0]
    for c in range(nb0):
        gen[c] = 0.0
    for c in range(tau.shape[0]):
        gen[nb0 + c] = tau[c]
    if with_friction:
        add_friction(m, v, gen, 1.0)
    aba_into(m, borrow(q), v, gen, carve(ws, 0, (0, 6)), out, ws)
    require_finite(out)
    keep_alive(owner)
    return True


@njit
def e_forward_dynamics(
    idata: np.ndarray,
    fdata: np.ndarray,
    q: np.ndarray,
    v: np.ndarray,
    tau: np.ndarray,
    fext: np.ndarray,
    with_friction: bool,
    use_aba: bool,
) -> np.ndarray:
    """Entry point: :func:`forward_dynamics` (ABA) or :func:`forward_dynamics_crba`: the
    accelerations (nv,) ``[dV0, dw0, phiddot]`` under ``tau`` (nv,) ``[F_b; tau]`` (base wrench
    at the base CoM, inertial frame) [N, N m, N m | N] and ``fext`` (nb, 6) body wrenches about
    O, inertial frame, or an empty (0, 6) array."""
    m = unpack(idata, fdata)
    if use_aba:
        return forward_dynamics(m, q, v, tau, fext, with_friction)
    return forward_dynamics_crba(m, q, v, tau, fext, with_friction)


@njit
def e_momentum(
    idata: np.ndarray, fdata: np.ndarray, q: np.ndarray, v: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Entry point: ``([P; L_O] (6,), system CoM (3,))``."""
    m = unpack(idata, fdata)
    R, p, S, mw, hw, Iw = kinematics(m, q, idata[1])
    h = spatial_momentum(m, v, S, mw, hw, Iw)
    com = np.empty(3)
    mass_center(mw, hw, com)
    require_finite(h)
    require_finite(com)
    return h, com


#: The reference points of :func:`e_momentum_about`'s angular momentum: the inertial origin,
#: the system CoM, the base CoM (``about`` of :func:`ffsim_ros.dynamics.momentum`).
ABOUT_ORIGIN = 0
ABOUT_COM = 1
ABOUT_BASE = 2


@njit
def e_momentum_about(
    idata: np.ndarray,
    fdata: np.ndarray,
    q: np.ndarray,
    v: np.ndarray,
    about: int,
    out: np.ndarray,
    com: np.ndarray,
) -> bool:
    """Entry point: ``[P; L]`` (6,) [kg m/s, kg m^2/s] into ``out``, ``L`` about the point
    ``about`` (:data:`ABOUT_ORIGIN`, :data:`ABOUT_COM`, :data:`ABOUT_BASE`), and, unless
    ``com`` is empty (0,), the system CoM (3,) [m] into ``com``; checked finite. A floating
    base's momentum is computed about its CoM (the base CoM moved to the origin, then
    ``r_0 x P`` added back where asked: as precise far from the origin as at it,
    :func:`ffsim_ros.dynamics.inputs.about_the_base`). False, and nothing done, unless ``q``
    and ``v`` are :func:`.layout.plain_vector` of ``nq`` and ``nv`` entries."""
    nv = idata[1]
    if not (plain_vector(q, idata[12]) and plain_vector(v, nv)):
        return False
    m = unpack(idata, fdata)
    ox = oy = oz = 0.0
    if m.jtype[0] == ROOT_FREE:
        ox, oy, oz = q[0], q[1], q[2]
        if not (np.isfinite(ox) and np.isfinite(oy) and np.isfinite(oz)):
            raise ValueError('the base CoM is not finite')  # (L about the CoM would not see it)
    shifted = not (ox == 0.0 and oy == 0.0 and oz == 0.0)
    local = q
    if shifted:
        local = q.copy()
        local[0] = local[1] = local[2] = 0.0
    nb = m.parent.shape[0]
    owner = np.empty(kinematics_ws_size(nb, nv))
    R, p, S, mw, hw, Iw, T = kinematics_views(borrow(owner), nb, nv)
    kinematics_into(m, local, R, p, S, mw, hw, Iw, T)
    h = spatial_momentum(m, borrow(v), S, mw, hw, Iw)
    px, py, pz = h[0], h[1], h[2]
    g = np.empty(3)
    mass_center(mw, hw, g)
    cx, cy, cz = g[0], g[1], g[2]  # (the CoM relative to the origin of the pass)
    x, y, z = ox, oy, oz
    if about == ABOUT_COM:
        x, y, z = -cx, -cy, -cz
    elif about == ABOUT_BASE:
        if m.jtype[0] != ROOT_FREE:
            x, y, z = -m.com[0, 0], -m.com[0, 1], -m.com[0, 2]
        else:
            x = y = z = 0.0  # (about the base CoM already)
    # L about the point: L + a x P, a the origin of the computation relative to the point
    out[0] = px
    out[1] = py
    out[2] = pz
    out[3] = h[3] + (y * pz - z * py)
    out[4] = h[4] + (z * px - x * pz)
    out[5] = h[5] + (x * py - y * px)
    require_finite(out)
    if com.shape[0] > 0:
        com[0], com[1], com[2] = cx, cy, cz
        if shifted:
            com[0] += ox
            com[1] += oy
            com[2] += oz
        require_finite(com)
    keep_alive(owner)
    return True


@njit
def e_center_of_mass(idata: np.ndarray, fdata: np.ndarray, q: np.ndarray, out: np.ndarray) -> bool:
    """Entry point: the system CoM (3,) [m] into ``out`` (the world first moments of
    :func:`.kinematics.kinematics_into` over the mass: the batched call's arithmetic),
    checked finite. False, and nothing done, unless ``q`` is a :func:`.layout.plain_vector`
    of ``nq`` entries."""
    if not plain_vector(q, idata[12]):
        return False
    m = unpack(idata, fdata)
    nb = m.parent.shape[0]
    nv = idata[1]
    owner = np.empty(kinematics_ws_size(nb, nv))
    R, p, S, mw, hw, Iw, T = kinematics_views(borrow(owner), nb, nv)
    kinematics_into(m, borrow(q), R, p, S, mw, hw, Iw, T)
    mass_center(mw, hw, out)
    require_finite(out)
    keep_alive(owner)
    return True


@njit
def e_state_summary(
    idata: np.ndarray, fdata: np.ndarray, q: np.ndarray, v: np.ndarray
) -> np.ndarray:
    """Entry point: what a simulator publishes of a floating-base state, in one pass.

    Returns
    -------
    (23,) ndarray ``[p (3), quat (4), p_dot (3), w0 (3), P (3), L_g (3), r_g (3), T (1)]``:
    the base link frame's origin, unit orientation (x, y, z, w), origin velocity and angular
    velocity, the momentum about the system CoM, the CoM, and the kinetic energy.
    """
    m = unpack(idata, fdata)
    R, p, S, mw, hw, Iw = kinematics(m, q, idata[1])
    h, energy = momentum_and_energy(m, v, S, mw, hw, Iw)
    mt = 0.0
    gx = gy = gz = 0.0
    for i in range(mw.shape[0]):
        mt += mw[i]
        gx += hw[i, 0]
        gy += hw[i, 1]
        gz += hw[i, 2]
    gx /= mt
    gy /= mt
    gz /= mt
    # the base link frame: origin r0 - R c0 (R of body 0), velocity V0 + w0 x (origin - r0)
    c0 = m.com[0]
    lx = R[0, 0, 0] * c0[0] + R[0, 0, 1] * c0[1] + R[0, 0, 2] * c0[2]
    ly = R[0, 1, 0] * c0[0] + R[0, 1, 1] * c0[1] + R[0, 1, 2] * c0[2]
    lz = R[0, 2, 0] * c0[0] + R[0, 2, 1] * c0[1] + R[0, 2, 2] * c0[2]
    x, y, z, w = qnormalize((q[3], q[4], q[5], q[6]))
    wx = v[3]
    wy = v[4]
    wz = v[5]
    out = np.array(
        [
            q[0] - lx,
            q[1] - ly,
            q[2] - lz,
            x,
            y,
            z,
            w,
            v[0] - (wy * lz - wz * ly),
            v[1] - (wz * lx - wx * lz),
            v[2] - (wx * ly - wy * lx),
            wx,
            wy,
            wz,
            h[0],
            h[1],
            h[2],
            # L_g = L_O - r_g x P [S0 eq. 12]
            h[3] - (gy * h[2] - gz * h[1]),
            h[4] - (gz * h[0] - gx * h[2]),
            h[5] - (gx * h[1] - gy * h[0]),
            gx,
            gy,
            gz,
            energy,
        ]
    )
    require_finite(out)
    return out


@njit
def e_integrate(
    idata: np.ndarray, fdata: np.ndarray, q: np.ndarray, v: np.ndarray, dt: float
) -> np.ndarray:
    """Entry point of :func:`integrate`: ``q (+) v dt`` (nq,) for the packed model
    (``idata``, ``fdata``: ``Model.packed``), ``q`` (nq,) ``[r0, Q0 (x, y, z, w), phi]``, ``v``
    (nv,) ``[V0, w0, phidot]`` (inertial; a spherical joint's rate in its child frame) [m/s,
    rad/s, rad/s | m/s] and ``dt`` [s]; checked finite."""
    out = integrate(unpack(idata, fdata), q, v, dt)
    require_finite(out)
    return out


@njit
def e_chart_rate(
    idata: np.ndarray, fdata: np.ndarray, theta: np.ndarray, v: np.ndarray
) -> np.ndarray:
    """Entry point of :func:`chart_rate`: ``dtheta/dt`` (nv,) at the chart coordinates
    ``theta`` (nv,) (the tangent vector of ``q = integrate(q_ref, theta, 1)``) for the
    velocity ``v`` (nv,), both in ``v``'s layout and units; ``idata``, ``fdata``: the packed
    model."""
    return chart_rate(unpack(idata, fdata), theta, v)


@njit
def e_rk4_stage(
    idata: np.ndarray,
    fdata: np.ndarray,
    q: np.ndarray,
    v: np.ndarray,
    theta_rate: np.ndarray,
    acc: np.ndarray,
    h: float,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Entry point of :func:`.lie_group.rk4_stage`: ``(q_s (nq,), v_s (nv,), theta (nv,))``
    from ``q`` (nq,), ``v`` (nv,), the previous stage's chart rate ``theta_rate`` (nv,) and
    acceleration ``acc`` (nv,) [m/s^2, rad/s^2, ...] and ``h = c_s dt`` [s]; ``idata``,
    ``fdata``: the packed model."""
    return rk4_stage(unpack(idata, fdata), q, v, theta_rate, acc, h)


@njit
def e_rk4_steps(
    idata: np.ndarray,
    fdata: np.ndarray,
    q: np.ndarray,
    v: np.ndarray,
    gen: np.ndarray,
    fext: np.ndarray,
    with_friction: bool,
    dt: float,
    wrench_body: np.ndarray,
    count: int,
) -> tuple[np.ndarray, np.ndarray]:
    """``count`` steps of :func:`.lie_group.rk4_step` under constant inputs (one call for a
    batch of physics steps); ``wrench_body`` (6,) in the base frame, or empty. The state
    reached is checked finite (a NaN input, or a step failing, raised, not returned)."""
    m = unpack(idata, fdata)
    for _ in range(count):
        q, v = rk4_step(m, q, v, gen, fext, with_friction, dt, wrench_body, wrench_body[:0])
    require_finite(q)
    require_finite(v)
    return q, v


@njit
def e_conserving_rk4_steps(
    idata: np.ndarray,
    fdata: np.ndarray,
    q: np.ndarray,
    v: np.ndarray,
    gen: np.ndarray,
    with_friction: bool,
    dt: float,
    count: int,
) -> tuple[np.ndarray, np.ndarray]:
    """Entry point of :func:`.conservation.conserving_rk4_steps` (``gen`` (nv,) with a zero
    base part); the state reached checked finite, as :func:`e_rk4_steps`'s."""
    q, v = conserving_rk4_steps(unpack(idata, fdata), q, v, gen, with_friction, dt, count)
    require_finite(q)
    require_finite(v)
    return q, v


@njit
def e_momentum_target(
    idata: np.ndarray, fdata: np.ndarray, q: np.ndarray, v: np.ndarray, dt: float
) -> np.ndarray:
    """``[P; L_O; M r_g]`` (9,): the momentum about O and the first moment the state
    ``(q, v)`` has after ``dt`` under gravity alone (:func:`.conservation.momentum_after`)."""
    m = unpack(idata, fdata)
    h, mass, first, _ = system_momentum(m, q, v)
    return momentum_after(m, h, mass, first, dt)


@njit
def e_correct_momentum(
    idata: np.ndarray, fdata: np.ndarray, q: np.ndarray, v: np.ndarray, target: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Entry point of :func:`.conservation.correct_momentum`: the translated configuration and
    the corrected velocity."""
    q, v, _, _, _ = correct_momentum(unpack(idata, fdata), q, v, target)
    return q, v
