"""Integration on the configuration manifold R^3 x SO(3) x R^n (ball joints: more SO(3)
factors): the exact flow of a constant velocity, the rate of the local chart, and the one
Runge-Kutta-Munthe-Kaas RK4 scheme of the package.

The scheme is classical RK4 in the local chart ``theta -> integrate(q, theta)`` at the step's
start (Munthe-Kaas), so its 4th order holds for the attitudes too: its tableau is
:data:`RK4_NODES` / :data:`RK4_WEIGHTS` and a stage's state is :func:`rk4_stage`. The compiled
:func:`rk4_step` (ABA accelerations) and the Python driver
:func:`ffsim_ros.dynamics.integration.rk4_step` (any acceleration function: closed chains,
prescribed base motion) are two loops over these same pieces.
"""

from __future__ import annotations

import numpy as np

from ..jit import borrow, keep_alive, njit, njit_leaf
from ..lie import qexp, qmul, qnormalize, quat_to_matrix_into, so3_chart_rate
from .aba import fd_ws_size, forward_dynamics_into
from .layout import ROOT_FIXED, ROOT_FREE, SPHERICAL, ModelArrays

#: Stage nodes ``c_s`` of the classical RK4 tableau (fractions of the step).
RK4_NODES = (0.0, 0.5, 0.5, 1.0)
#: Weights ``b_s`` of the classical RK4 tableau.
RK4_WEIGHTS = (1.0 / 6.0, 1.0 / 3.0, 1.0 / 3.0, 1.0 / 6.0)


@njit
def integrate(m: ModelArrays, q: np.ndarray, v: np.ndarray, dt: float) -> np.ndarray:
    """``q (+) v dt``: exact flow of a constant ``v`` on the configuration manifold.

    The base CoM moves along ``V0 dt``; the attitude turns by the inertial-frame rotation
    vector ``w0 dt`` (left multiplication, ``Q <- exp(w0 dt) * Q0``), normalized; a spherical
    joint turns by its child-frame ``w dt`` (right multiplication, ``Q <- Q * exp(w dt)``);
    the other joint coordinates add ``phidot dt``.
    """
    out = np.empty_like(q)
    integrate_into(m, q, v, dt, out)
    return out


@njit
def integrate_into(
    m: ModelArrays, q: np.ndarray, v: np.ndarray, dt: float, out: np.ndarray
) -> None:
    """:func:`integrate` into ``out`` (nq,), which must not be ``q``."""
    for r in range(q.shape[0]):
        out[r] = q[r]
    nb = m.parent.shape[0]
    for i in range(nb):
        jt = m.jtype[i]
        if jt == ROOT_FREE:
            c = m.iv[i]
            for r in range(3):
                out[r] = q[r] + v[c + r] * dt
            d = qexp(v[c + 3] * dt, v[c + 4] * dt, v[c + 5] * dt)
            x, y, z, w = qnormalize(qmul(d, (q[3], q[4], q[5], q[6])))
            out[3] = x
            out[4] = y
            out[5] = z
            out[6] = w
        elif jt == SPHERICAL:
            iq = m.iq[i]
            iv = m.iv[i]
            d = qexp(v[iv] * dt, v[iv + 1] * dt, v[iv + 2] * dt)
            x, y, z, w = qnormalize(qmul((q[iq], q[iq + 1], q[iq + 2], q[iq + 3]), d))
            out[iq] = x
            out[iq + 1] = y
            out[iq + 2] = z
            out[iq + 3] = w
        elif jt != ROOT_FIXED:
            for a in range(m.nvj[i]):
                out[m.iq[i] + a] = q[m.iq[i] + a] + v[m.iv[i] + a] * dt


@njit
def chart_rate(m: ModelArrays, theta: np.ndarray, v: np.ndarray) -> np.ndarray:
    """``dtheta/dt`` of the local coordinates ``q = integrate(q_ref, theta, 1)``.

    Only the attitudes differ from ``v``: ``J_l(theta)^-1 w0`` for the base (its quaternion
    is multiplied on the left) and ``J_r(theta)^-1 w`` for a spherical joint (on the right);
    see :func:`ffsim_ros.dynamics.lie.so3_chart_rate`. This is what makes :func:`rk4_step` a
    4th-order Runge-Kutta-Munthe-Kaas method.
    """
    out = np.empty_like(v)
    chart_rate_into(m, theta, v, out)
    return out


@njit
def chart_rate_into(m: ModelArrays, theta: np.ndarray, v: np.ndarray, out: np.ndarray) -> None:
    """:func:`chart_rate` into ``out`` (nv,), which must not be ``theta``."""
    for c in range(v.shape[0]):
        out[c] = v[c]
    nb = m.parent.shape[0]
    for i in range(nb):
        jt = m.jtype[i]
        if jt == ROOT_FREE or jt == SPHERICAL:
            half = -0.5 if jt == ROOT_FREE else 0.5
            c = m.iv[i] + 3 if jt == ROOT_FREE else m.iv[i]
            rx, ry, rz = so3_chart_rate(
                theta[c], theta[c + 1], theta[c + 2], v[c], v[c + 1], v[c + 2], half
            )
            out[c] = rx
            out[c + 1] = ry
            out[c + 2] = rz


@njit
def rk4_stage(
    m: ModelArrays,
    q: np.ndarray,
    v: np.ndarray,
    theta_rate: np.ndarray,
    acc: np.ndarray,
    h: float,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The state at an RK4 stage: ``theta = h theta_rate``, ``v_s = v + h acc``,
    ``q_s = integrate(q, theta)``, from the previous stage's chart rate and acceleration and
    ``h = c_s dt``.

    Returns
    -------
    q_s : (nq,);  v_s : (nv,);  theta : (nv,) the stage's chart coordinates.
    """
    theta = h * theta_rate
    return integrate(m, q, theta, 1.0), v + h * acc, theta


@njit
def add_body_wrench(
    q: np.ndarray, gen: np.ndarray, wrench_body: np.ndarray, out: np.ndarray
) -> None:
    """``out = gen`` with the base-frame wrench ``wrench_body = [f; n]`` (6,) turned into the
    inertial frame by the base attitude ``q[3:7]`` and added to ``out[:6]`` (a thruster: the
    wrench turns with the base)."""
    R = np.empty((1, 3, 3))
    quat_to_matrix_into(q, 3, R, 0)
    for c in range(gen.shape[0]):
        out[c] = gen[c]
    for r in range(3):
        for k in range(3):
            out[r] += R[0, r, k] * wrench_body[k]
            out[3 + r] += R[0, r, k] * wrench_body[3 + k]


@njit
def rk4_ws_size(nb: int, nq: int, nv: int) -> int:
    """Workspace of :func:`rk4_step_into`: ABA's, seven (nv,) and one (nq,) vectors."""
    return fd_ws_size(nb, nv) + 7 * nv + nq


@njit_leaf
def rk4_step(
    m: ModelArrays,
    q: np.ndarray,
    v: np.ndarray,
    gen: np.ndarray,
    fext: np.ndarray,
    with_friction: bool,
    dt: float,
    wrench_body: np.ndarray,
    first_acceleration: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """One RK4 step in the local chart at ``q`` (Runge-Kutta-Munthe-Kaas) with ABA.

    Parameters
    ----------
    gen : (nv,) generalized force ``[F_b; tau]``, held constant over the step.
    fext : (nb, 6) body wrenches about O, inertial frame, held constant; or (0, 6) for none.
    wrench_body : (6,) ``[f; n]`` at the base CoM in the *base* frame, re-expressed at every
        stage (it turns with the base); or an empty (0,) array for none.
    first_acceleration : (nv,) the accelerations at ``(q, v)`` when the caller has them
        (the first stage is then not evaluated again), or an empty (0,) array.

    Returns
    -------
    q_next : (nq,) ;  v_next : (nv,)
    """
    nq, nv = q.shape[0], v.shape[0]
    owner = np.empty(rk4_ws_size(m.parent.shape[0], nq, nv))
    q_next = np.empty(nq)
    v_next = np.empty(nv)
    # every array borrowed for the call (no reference counting down the stages' calls): the
    # caller holds the inputs, this function the workspace and the results
    rk4_step_into(
        m,
        borrow(q),
        borrow(v),
        borrow(gen),
        borrow(fext),
        with_friction,
        dt,
        borrow(wrench_body),
        borrow(first_acceleration),
        borrow(owner),
        borrow(q_next),
        borrow(v_next),
    )
    keep_alive(owner)
    return q_next, v_next


@njit
def rk4_step_into(
    m: ModelArrays,
    q: np.ndarray,
    v: np.ndarray,
    gen: np.ndarray,
    fext: np.ndarray,
    with_friction: bool,
    dt: float,
    wrench_body: np.ndarray,
    first_acceleration: np.ndarray,
    ws: np.ndarray,
    q_next: np.ndarray,
    v_next: np.ndarray,
) -> None:
    """:func:`rk4_step` into ``q_next`` (nq,) and ``v_next`` (nv,), with the scratch ``ws``
    (:func:`rk4_ws_size`): no allocation, so that a batch of rows shares one workspace.

    Each stage: ``theta_s = c_s dt d``, ``q_s = integrate(q, theta_s)``, ``v_s = v + c_s dt a``
    (:func:`rk4_stage`), then ``a`` (ABA) and ``d`` (:func:`chart_rate`) at the stage.
    """
    nq, nv = q.shape[0], v.shape[0]
    o = fd_ws_size(m.parent.shape[0], nv)
    fd_ws = ws[:o]
    d = ws[o : o + nv]
    a = ws[o + nv : o + 2 * nv]
    theta = ws[o + 2 * nv : o + 3 * nv]
    v_sum = ws[o + 3 * nv : o + 4 * nv]
    force = ws[o + 4 * nv : o + 5 * nv]
    ths = ws[o + 5 * nv : o + 6 * nv]
    vs = ws[o + 6 * nv : o + 7 * nv]
    qs = ws[o + 7 * nv : o + 7 * nv + nq]
    for c in range(nv):
        d[c] = 0.0
        a[c] = 0.0
        theta[c] = 0.0
        v_sum[c] = 0.0
        force[c] = gen[c]
    for s in range(4):
        if s == 0:
            for c in range(nv):
                ths[c] = 0.0
                vs[c] = v[c]
            for c in range(nq):
                qs[c] = q[c]
        else:
            h = RK4_NODES[s] * dt
            for c in range(nv):
                ths[c] = h * d[c]
                vs[c] = v[c] + h * a[c]
            integrate_into(m, q, ths, 1.0, qs)
        if s == 0 and first_acceleration.shape[0] > 0:
            for c in range(nv):
                a[c] = first_acceleration[c]
        else:
            if wrench_body.shape[0] > 0:
                add_body_wrench(qs, gen, wrench_body, force)
            forward_dynamics_into(m, qs, vs, force, fext, with_friction, a, fd_ws)
        chart_rate_into(m, ths, vs, d)
        b = RK4_WEIGHTS[s] * dt
        for c in range(nv):
            theta[c] += b * d[c]
            v_sum[c] += b * a[c]
    integrate_into(m, q, theta, 1.0, q_next)
    for c in range(nv):
        v_next[c] = v[c] + v_sum[c]
