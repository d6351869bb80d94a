"""Time integration on the configuration manifold (Lie group R^3 x SO(3) x R^n).

``q`` is never advanced by ``q += v dt``: :func:`integrate` applies the exact flow of a
constant velocity (unit quaternion kept) and :func:`step` runs Runge-Kutta methods in the
local chart ``theta -> integrate(q, theta)`` (Munthe-Kaas), so the 4th-order accuracy of RK4
holds for the attitude too.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
from scipy.integrate import solve_ivp

from . import kernels as K
from .algorithms import (
    ArrayLike,
    _batch_gen,
    _external_wrenches,
    _generalized_force,
    _is_batch,
    _no_batched_wrenches,
    _q,
    _rows,
    _v,
)
from .model import Model

#: Fixed-step methods of :func:`step`.
FIXED_STEP_METHODS = ('rk4', 'euler')
#: Variable-step methods of :func:`step` (``scipy.integrate.solve_ivp``).
SCIPY_METHODS = ('RK45', 'DOP853', 'Radau', 'BDF', 'LSODA')


def integrate(model: Model, q: ArrayLike, v: ArrayLike, dt: float = 1.0) -> np.ndarray:
    """Configuration reached from ``q`` after moving with constant ``v`` for ``dt`` seconds.

    Parameters
    ----------
    q : (nq,) configuration;  v : (nv,) velocity;  dt : float [s].

    Returns
    -------
    (nq,) ndarray with a unit base quaternion.
    """
    if _is_batch(q):
        lead = np.shape(q)[:-1]
        out = K.b_integrate(
            *model.packed,
            _rows(q, model.nq, 'q', lead),
            _rows(v, model.nv, 'v', lead),
            float(dt),
        )
        return out.reshape(lead + (model.nq,))
    return K.e_integrate(*model.packed, _q(model, q), _v(model, v), float(dt))


def difference(model: Model, q0: ArrayLike, q1: ArrayLike) -> np.ndarray:
    """Velocity ``v`` with ``integrate(model, q0, v, 1) == q1`` (the inverse of integrate).

    Returns
    -------
    (nv,) ndarray: ``[r0_1 - r0_0, rotation vector of Q1 Q0^-1 (inertial frame), phi1 - phi0]``
    where a spherical joint's entry is the rotation vector of ``Q0^-1 Q1`` (child frame).
    """
    q0 = _q(model, q0)
    q1 = _q(model, q1)
    out = np.empty(model.nv)
    if model.floating_base:
        out[:3] = q1[:3] - q0[:3]
        # inertial-frame rotation vector of Q1 Q0^-1 (the base turns by left multiplication)
        out[3:6] = _quat_log(_quat_mul(_unit(q1[3:7]), _conj(_unit(q0[3:7]))))
    for k, kind in enumerate(model.joint_types):
        iq, iv = model.idx_q[k], model.idx_v[k]
        if kind == 'spherical':
            # child-frame rotation vector of Q0^-1 Q1 (a ball joint turns by right multiplication)
            a, b = _unit(q0[iq : iq + 4]), _unit(q1[iq : iq + 4])
            out[iv : iv + 3] = _quat_log(_quat_mul(_conj(a), b))
        else:
            nj = model.nvs[k]
            out[iv : iv + nj] = q1[iq : iq + nj] - q0[iq : iq + nj]
    return out


def _unit(quat: np.ndarray) -> np.ndarray:
    return quat / np.linalg.norm(quat)


def _conj(quat: np.ndarray) -> np.ndarray:
    return np.array([-quat[0], -quat[1], -quat[2], quat[3]])


def _quat_mul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Hamilton product ``a * b`` of quaternions (x, y, z, w)."""
    ax, ay, az, aw = a
    bx, by, bz, bw = b
    return np.array(
        [
            aw * bx + ax * bw + ay * bz - az * by,
            aw * by - ax * bz + ay * bw + az * bx,
            aw * bz + ax * by - ay * bx + az * bw,
            aw * bw - ax * bx - ay * by - az * bz,
        ]
    )


def _quat_log(d: np.ndarray) -> np.ndarray:
    """Rotation vector (3,) [rad] of the unit quaternion ``d`` (x, y, z, w), angle <= pi."""
    if d[3] < 0.0:
        d = -d
    s = float(np.sqrt(d[0] ** 2 + d[1] ** 2 + d[2] ** 2))
    angle = 2.0 * np.arctan2(s, d[3])
    scale = 2.0 if s < 1e-12 else angle / s
    return scale * d[:3]


def step(
    model: Model,
    q: ArrayLike,
    v: ArrayLike,
    tau: ArrayLike,
    dt: float,
    *,
    method: str = 'rk4',
    base_wrench: ArrayLike | None = None,
    link_wrenches: Mapping[str, ArrayLike] | None = None,
    rtol: float = 1e-10,
    atol: float = 1e-12,
) -> tuple[np.ndarray, np.ndarray]:
    """Advance the state by ``dt`` under constant efforts and wrenches (seed 000, eq. 39).

    Parameters
    ----------
    q : (nq,) ;  v : (nv,) ;  tau : (n,) joint efforts [N m | N];  dt : float [s].
    method : str
        ``'rk4'`` (classical RK4 in the local chart, 4 dynamics calls), ``'euler'``
        (semi-implicit Euler, 1 call), or a ``scipy.integrate.solve_ivp`` method
        (``'RK45'``, ``'DOP853'``, ``'Radau'``, ``'BDF'``, ``'LSODA'``; variable step inside
        ``[0, dt]`` with tolerances ``rtol``/``atol``).
    base_wrench : (6,) optional ``[F; T]`` at the base CoM, inertial frame.
    link_wrenches : dict, optional ``{link: [f; n]}`` at link origins, inertial frame, taken
        at the configuration ``q`` and held constant in the inertial frame over the step.

    Returns
    -------
    q_next : (nq,) ndarray;  v_next : (nv,) ndarray

    Notes
    -----
    Batched use (``'rk4'`` only): ``q`` (..., nq), ``v`` (..., nv), ``tau`` (..., n),
    ``base_wrench`` (..., 6) give (..., nq), (..., nv), computed on all cores.
    """
    dt = float(dt)
    if not np.isfinite(dt) or dt <= 0.0:
        raise ValueError(f'dt: expected a finite positive step, got {dt}')
    if _is_batch(q):
        _no_batched_wrenches(link_wrenches)
        if method != 'rk4':
            raise ValueError(f"method: expected 'rk4' with batched states, got {method!r}")
        lead = np.shape(q)[:-1]
        qn, vn = K.b_rk4_step(
            *model.packed,
            _rows(q, model.nq, 'q', lead),
            _rows(v, model.nv, 'v', lead),
            _batch_gen(model, tau, base_wrench, lead),
            model.joint_dynamics,
            dt,
        )
        return qn.reshape(lead + (model.nq,)), vn.reshape(lead + (model.nv,))
    q = _q(model, q)
    v = _v(model, v)
    gen = _generalized_force(model, tau, base_wrench)
    fext = _external_wrenches(model, q, link_wrenches)
    packed, fric = model.packed, model.joint_dynamics
    if method == 'rk4':
        return K.e_rk4_step(*packed, q, v, gen, fext, fric, dt)
    if method == 'euler':
        a = K.e_forward_dynamics(*packed, q, v, gen, fext, fric, True)
        v_next = v + dt * a
        return K.e_integrate(*packed, q, v_next, dt), v_next
    if method in SCIPY_METHODS:
        nv = model.nv

        def rhs(_t: float, y: np.ndarray) -> np.ndarray:
            theta, vel = y[:nv], y[nv:]
            qt = K.e_integrate(*packed, q, theta, 1.0)
            acc = K.e_forward_dynamics(*packed, qt, vel, gen, fext, fric, True)
            return np.concatenate((K.e_chart_rate(*packed, theta, vel), acc))

        sol = solve_ivp(
            rhs,
            (0.0, dt),
            np.concatenate((np.zeros(nv), v)),
            method=method,
            rtol=rtol,
            atol=atol,
        )
        if not sol.success:
            raise RuntimeError(f'step: solve_ivp({method}) failed: {sol.message}')
        y = sol.y[:, -1]
        return K.e_integrate(*packed, q, y[:nv], 1.0), y[nv:].copy()
    raise ValueError(
        f'method: expected one of {FIXED_STEP_METHODS + SCIPY_METHODS}, got {method!r}'
    )
