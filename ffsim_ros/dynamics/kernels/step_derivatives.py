"""Discrete-time linearization of one step of the package's RK4 scheme
(:func:`.lie_group.rk4_step`), by forward-mode chaining of the stage derivatives.

State perturbations are tangent vectors on both sides: ``(dq, dv)`` at ``(q, v)`` with the
perturbed configuration ``integrate(q, dq)`` (the convention of :mod:`.rnea_derivatives`),
and ``(dq', dv')`` at the step's result ``(q', v')``, ``q' + dq' = integrate(q', dq')``.

The step (:mod:`.lie_group`): for ``s = 0..3``, ``theta_s = c_s dt d_{s-1}``,
``q_s = integrate(q, theta_s)``, ``v_s = v + c_s dt a_{s-1}``, ``a_s = FD(q_s, v_s, Q)``,
``d_s = chart_rate(theta_s, v_s)``; then ``q' = integrate(q, sum b_s dt d_s)``,
``v' = v + sum b_s dt a_s``. Each map is differentiated exactly:

* ``integrate(q, theta)`` on an attitude, as a function of the tangent ``dq`` at ``q`` and of
  ``theta``: for the base (``exp(theta) Q``, inertial frame) ``d = exp(theta) dq +
  J_l(theta) dtheta``; for a ball joint (``Q exp(theta)``, child frame)
  ``d = exp(theta)^T dq + J_r(theta) dtheta``; identity elsewhere (``J_l``, ``J_r`` the left and
  right Jacobians of SO(3));
* ``chart_rate``: ``y = J^-1(theta) w = w + h theta x w + k(t) theta x (theta x w)``
  (``h = -1/2`` base, ``+1/2`` ball, ``t = |theta|``): ``dy/dw = J^-1(theta)`` and
  ``dy/dtheta = -h [w]x + k ((theta . w) E + theta w^T - 2 w theta^T)
  + (k'(t)/t) (theta x (theta x w)) theta^T``;
* ``FD``: :func:`.aba_derivatives.forward_dynamics_derivatives_into`.

The perturbations are carried as (nv, 2 nv + n) matrices (columns: ``dq``, ``dv``, the joint
efforts), four forward-dynamics derivative evaluations and six (nv, nv) x (nv, 2 nv + n)
products per step.
"""

from __future__ import annotations

import numpy as np

from ..jit import njit, njit_leaf
from .aba_derivatives import fd_derivatives_ws_size, forward_dynamics_derivatives_into
from .layout import ROOT_FREE, SPHERICAL, ModelArrays, unpack
from .lie_group import RK4_NODES, RK4_WEIGHTS, chart_rate, rk4_stage

#: Below this angle [rad] the SO(3) coefficients are taken from their series (6 terms).
SERIES_ANGLE = 0.2


@njit_leaf
def so3_coefficients(t: float) -> tuple:
    """``(sin t / t, (1 - cos t) / t^2, (t - sin t) / t^3, k(t), k'(t) / t)`` with
    ``k(t) = 1/t^2 - (1 + cos t) / (2 t sin t)`` (:func:`ffsim_ros.dynamics.lie.so3_chart_rate`),
    accurate at every angle below pi."""
    if t < SERIES_ANGLE:
        t2 = t * t
        return (
            1.0 - t2 / 6.0 * (1.0 - t2 / 20.0 * (1.0 - t2 / 42.0)),
            0.5 - t2 / 24.0 * (1.0 - t2 / 30.0 * (1.0 - t2 / 56.0)),
            1.0 / 6.0 - t2 / 120.0 * (1.0 - t2 / 42.0 * (1.0 - t2 / 72.0)),
            1.0 / 12.0 + t2 * (1.0 / 720.0 + t2 * (1.0 / 30240.0 + t2 / 1209600.0)),
            1.0 / 360.0 + t2 * (1.0 / 7560.0 + t2 * (1.0 / 201600.0 + t2 / 5987520.0)),
        )
    s = np.sin(t)
    c = np.cos(t)
    t2 = t * t
    sh = np.sin(0.5 * t)
    k = 1.0 / t2 - (1.0 + c) / (2.0 * t * s)
    dk = -2.0 / (t2 * t) + (2.0 * t * s * s + (1.0 + c) * (2.0 * s + 2.0 * t * c)) / (
        4.0 * t2 * s * s
    )
    return (s / t, 2.0 * sh * sh / t2, (t - s) / (t2 * t), k, dk / t)


@njit_leaf
def so3_matrix(th: tuple, alpha: float, beta: float, out: np.ndarray, io: int) -> None:
    """``out[io] = E + alpha [th]x + beta [th]x^2`` (3, 3); ``[th]x^2 = th th^T - |th|^2 E``."""
    t2 = th[0] * th[0] + th[1] * th[1] + th[2] * th[2]
    for r in range(3):
        for c in range(3):
            out[io, r, c] = beta * th[r] * th[c] + ((1.0 - beta * t2) if r == c else 0.0)
    out[io, 0, 1] -= alpha * th[2]
    out[io, 0, 2] += alpha * th[1]
    out[io, 1, 0] += alpha * th[2]
    out[io, 1, 2] -= alpha * th[0]
    out[io, 2, 0] -= alpha * th[1]
    out[io, 2, 1] += alpha * th[0]


@njit_leaf
def attitude_blocks(m: ModelArrays, i: int) -> tuple:
    """``(first velocity index, sign)`` of the attitude of body ``i``'s joint: ``sign`` +1 for
    a free base (left multiplication, inertial frame), -1 for a ball joint (right, child
    frame), 0 when the joint has none."""
    jt = m.jtype[i]
    if jt == ROOT_FREE:
        return m.iv[i] + 3, 1.0
    if jt == SPHERICAL:
        return m.iv[i], -1.0
    return 0, 0.0


@njit
def integrate_tangent(
    m: ModelArrays, th: np.ndarray, Dth: np.ndarray, Dq: np.ndarray, J: np.ndarray
) -> None:
    """``Dq = J_q(th) [E 0 0] + J_th(th) Dth``: the tangent at ``integrate(q, th)`` of a
    perturbation ``dq`` of ``q`` (the first nv columns) and ``Dth`` of ``th`` (nv, k).

    ``J`` (2, 3, 3) scratch."""
    nv = Dth.shape[0]
    k = Dth.shape[1]
    for r in range(nv):
        for c in range(k):
            Dq[r, c] = Dth[r, c]
        Dq[r, r] += 1.0
    for i in range(m.parent.shape[0]):
        c0, sg = attitude_blocks(m, i)
        if sg == 0.0:
            continue
        t3 = (th[c0], th[c0 + 1], th[c0 + 2])
        sc, cc, tc, _, _ = so3_coefficients(np.sqrt(t3[0] ** 2 + t3[1] ** 2 + t3[2] ** 2))
        so3_matrix(t3, sg * sc, cc, J, 0)  # exp(th) (base) or exp(th)^T (ball)
        so3_matrix(t3, sg * cc, tc, J, 1)  # J_l(th) (base) or J_r(th) (ball)
        for r in range(3):
            for c in range(k):
                Dq[c0 + r, c] = (
                    J[1, r, 0] * Dth[c0, c]
                    + J[1, r, 1] * Dth[c0 + 1, c]
                    + J[1, r, 2] * Dth[c0 + 2, c]
                )
            for c in range(3):
                Dq[c0 + r, c0 + c] += J[0, r, c]


@njit
def chart_rate_tangent(
    m: ModelArrays,
    th: np.ndarray,
    v: np.ndarray,
    Dth: np.ndarray,
    Dv: np.ndarray,
    Dd: np.ndarray,
    J: np.ndarray,
) -> None:
    """``Dd = d chart_rate(th, v)`` for the perturbations ``Dth``, ``Dv`` (nv, k) (the module
    docstring); ``J`` (2, 3, 3) scratch."""
    nv = Dv.shape[0]
    k = Dv.shape[1]
    for r in range(nv):
        for c in range(k):
            Dd[r, c] = Dv[r, c]
    for i in range(m.parent.shape[0]):
        c0, sg = attitude_blocks(m, i)
        if sg == 0.0:
            continue
        half = -0.5 * sg
        t3 = (th[c0], th[c0 + 1], th[c0 + 2])
        w = (v[c0], v[c0 + 1], v[c0 + 2])
        _, _, _, kk, kt = so3_coefficients(np.sqrt(t3[0] ** 2 + t3[1] ** 2 + t3[2] ** 2))
        so3_matrix(t3, half, kk, J, 0)  # J^-1(th): d y / d w
        tw = t3[0] * w[0] + t3[1] * w[1] + t3[2] * w[2]
        tt = t3[0] * t3[0] + t3[1] * t3[1] + t3[2] * t3[2]
        ttw = (t3[0] * tw - w[0] * tt, t3[1] * tw - w[1] * tt, t3[2] * tw - w[2] * tt)
        for r in range(3):  # d y / d th
            for c in range(3):
                val = kk * (t3[r] * w[c] - 2.0 * w[r] * t3[c]) + kt * ttw[r] * t3[c]
                if r == c:
                    val += kk * tw
                J[1, r, c] = val
        J[1, 0, 1] += half * w[2]
        J[1, 0, 2] -= half * w[1]
        J[1, 1, 0] -= half * w[2]
        J[1, 1, 2] += half * w[0]
        J[1, 2, 0] += half * w[1]
        J[1, 2, 1] -= half * w[0]
        for r in range(3):
            for c in range(k):
                s = 0.0
                for j in range(3):
                    s += J[0, r, j] * Dv[c0 + j, c] + J[1, r, j] * Dth[c0 + j, c]
                Dd[c0 + r, c] = s


@njit
def add_product(F: np.ndarray, X: np.ndarray, Y: np.ndarray) -> None:
    """``Y += F X`` for ``F`` (n, n), ``X``, ``Y`` (n, k) (rows of ``X`` streamed: the inner
    loop is contiguous)."""
    n = F.shape[0]
    k = X.shape[1]
    for r in range(n):
        for j in range(n):
            f = F[r, j]
            if f != 0.0:
                for c in range(k):
                    Y[r, c] += f * X[j, c]


@njit
def e_step_derivatives(
    idata: np.ndarray,
    fdata: np.ndarray,
    q: np.ndarray,
    v: np.ndarray,
    gen: np.ndarray,
    with_friction: bool,
    dt: float,
    A: np.ndarray,
    B: np.ndarray,
) -> None:
    """Entry point: the linearization of :func:`.lie_group.rk4_step` (no body wrenches) at
    ``(q, v)``.

    Parameters
    ----------
    gen : (nv,) generalized force ``[F_b; tau]`` held over the step.
    A : (2 nv, 2 nv) output ``d(q', v') / d(q, v)`` (tangent perturbations).
    B : (2 nv, n) output ``d(q', v') / d tau`` for the last ``n`` generalized forces.
    """
    m = unpack(idata, fdata)
    nb = m.parent.shape[0]
    nv = v.shape[0]
    n = B.shape[1]
    k = 2 * nv + n
    ws = np.empty(fd_derivatives_ws_size(nb, nv))
    lam = np.empty(nv, dtype=np.int64)
    mats = np.zeros((7, nv, k))
    Dth, Dq, Dv, Da, Dd, Dsum_th, Dsum_v = (
        mats[0],
        mats[1],
        mats[2],
        mats[3],
        mats[4],
        mats[5],
        mats[6],
    )
    Fq = np.empty((nv, nv))
    Fv = np.empty((nv, nv))
    Minv = np.empty((nv, nv))
    J = np.empty((2, 3, 3))
    qdd = np.empty(nv)
    a = np.zeros(nv)
    d = np.zeros(nv)
    theta = np.zeros(nv)
    qs, vs, ths = q, v, theta.copy()
    for s in range(4):
        h = RK4_NODES[s] * dt
        if s > 0:
            qs, vs, ths = rk4_stage(m, q, v, d, a, h)
        forward_dynamics_derivatives_into(
            m, qs, vs, gen, with_friction, qdd, Fq, Fv, Minv, lam, ws
        )
        if s == 0:  # Dq = [E 0 0], Dv = [0 E 0], Dth = 0
            for r in range(nv):
                for c in range(nv):
                    Da[r, c] = Fq[r, c]
                    Da[r, nv + c] = Fv[r, c]
                    Dv[r, c] = 0.0
                    Dv[r, nv + c] = 1.0 if r == c else 0.0
        else:
            for r in range(nv):
                for c in range(k):
                    Dth[r, c] = h * Dd[r, c]
                    Dv[r, c] = h * Da[r, c]
                Dv[r, nv + r] += 1.0
            integrate_tangent(m, ths, Dth, Dq, J)
            for r in range(nv):
                for c in range(k):
                    Da[r, c] = 0.0
            add_product(Fq, Dq, Da)
            add_product(Fv, Dv, Da)
        for r in range(nv):
            for c in range(n):
                Da[r, 2 * nv + c] += Minv[r, nv - n + c]
        d = chart_rate(m, ths, vs)
        a = qdd.copy()
        chart_rate_tangent(m, ths, vs, Dth, Dv, Dd, J)
        b = RK4_WEIGHTS[s] * dt
        for r in range(nv):
            theta[r] += b * d[r]
            for c in range(k):
                Dsum_th[r, c] += b * Dd[r, c]
                Dsum_v[r, c] += b * Da[r, c]
    integrate_tangent(m, theta, Dsum_th, Dq, J)
    for r in range(nv):
        for c in range(2 * nv):
            A[r, c] = Dq[r, c]
            A[nv + r, c] = Dsum_v[r, c] + (1.0 if c == nv + r else 0.0)
        for c in range(n):
            B[r, c] = Dq[r, 2 * nv + c]
            B[nv + r, c] = Dsum_v[r, 2 * nv + c]
