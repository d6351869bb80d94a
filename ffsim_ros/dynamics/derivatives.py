"""Analytical derivatives of the equations of motion and the linearization of one simulation step
(the linearized equations of motion seed 000 points to; for LQR, MPC, estimation and
sensitivity studies).

Tangent convention (the same for every function here, inputs and outputs)
--------------------------------------------------------------------------
A configuration ``q`` is perturbed by a tangent vector ``dq`` (nv,) through
:func:`~.integration.integrate`: ``q (+) dq = integrate(model, q, dq)``, i.e.

* ``dq[0:3]`` moves the base CoM ``r0`` (inertial frame) [m];
* ``dq[3:6]`` turns the base about its CoM by the *inertial-frame* rotation vector
  ``dq[3:6]``: ``Q0 <- exp(dq[3:6]) * Q0`` (left multiplication) [rad];
* a ball joint turns by the *child-frame* rotation vector of its three entries:
  ``Q <- Q * exp(dq)`` (right multiplication) [rad];
* every other joint coordinate is additive (``phi + dq``) [rad | m].

Column ``k`` of ``d f / dq`` is ``d/dh f(integrate(q, h e_k))`` at ``h = 0``, so that
``f(q (+) dq, v + dv) = f + F_q dq + F_v dv + O(|dq|^2 + |dv|^2)``. The tangent is the one of
the velocity ``v = [V0, w0, phidot]`` (``integrate(q, v dt)`` is the flow of ``v``), and
:func:`~.integration.difference` is the inverse of ``(+)``: ``difference(q, q (+) dq) = dq``.
Velocities and accelerations are plain vectors; the generalized force is ``[F_b; tau]``, ``F_b``
the base wrench at the base CoM in the inertial frame [S0 eq. 39].

They are Pinocchio's derivatives (``computeABADerivatives``, Carpentier & Mansard 2018) in this
package's coordinates: ``test/test_derivatives.py`` derives the conversion from Pinocchio's
root-origin, body-frame free flyer and its local SE(3) tangent, and checks them against it to
1e-8 and against central differences on the manifold.

No output depends on where the base is (``d qdd / d r0 = 0``, ``A[:, 0:3] = [E; 0]``, zero
base-translation columns of the ``J* phidot`` derivative; the base wrench acts at the base CoM,
gravity is uniform), so every function evaluates the kernels with the base CoM moved to the
origin (:func:`~.inputs.about_the_base`, as :func:`~.integration.step` does): as precise far
from the world origin as at it, where the kernels' quantities about O lose ``m |r|^2`` to
cancellation (docs/dynamics.md).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .inputs import (
    ArrayLike,
    about_the_base,
    as_q,
    as_v,
    as_vector,
    generalized_force,
    generalized_force_parts,
    is_ready,
    positive_step,
    require_floating,
)
from .integration import step_error
from .kernels.aba_derivatives import e_dynamics_derivatives
from .kernels.entry import e_mass_matrix, e_rk4_steps, taken
from .kernels.implicit_friction import implicit_friction_rates
from .kernels.layout import ROOT_FREE, SPHERICAL
from .kernels.rnea_derivatives import COULOMB_EPS
from .kernels.step_derivatives import e_step_derivatives, so3_coefficients
from .kernels.velocity_derivatives import e_generalized_velocity_derivatives
from .lie import skew
from .model import Model, with_gravity, with_joint_dynamics
from .state_errors import require_finite_result, state_error
from .stiff_friction import (
    DISPLACEMENT_SHARE,
    explicit_part,
    friction_displacement,
    friction_slopes,
    implicit_dofs,
)

_NO_FORCE = np.empty(0)  # an empty generalized force: the inverse dynamics at a given a
_NO_FEXT = np.empty((0, 6))
_NO_DOFS = np.empty(0, dtype=np.int64)


class ForwardDynamicsDerivatives(NamedTuple):
    """Derivatives of the accelerations ``qdd = FD(q, v, tau, F_b)`` [S0 eqs. 39, 41]."""

    dq: np.ndarray  #: (nv, nv) ``d qdd / dq`` (tangent ``dq``, module docstring) [1/s^2]
    dv: np.ndarray  #: (nv, nv) ``d qdd / dv`` [1/s]
    dtau: np.ndarray  #: (nv, n) ``d qdd / d tau`` (the last n columns of ``H^-1``)
    dbase_wrench: np.ndarray | None  #: (nv, 6) ``d qdd / d F_b``; None for a fixed base


class InverseDynamicsDerivatives(NamedTuple):
    """Derivatives of the generalized force ``ID(q, v, a) = H a + c - F_f`` [S0 eqs. 39, 41]."""

    dq: np.ndarray  #: (nv, nv) ``d ID / dq`` (tangent ``dq``)
    dv: np.ndarray  #: (nv, nv) ``d ID / dv`` (joint friction included when enabled)
    da: np.ndarray  #: (nv, nv) ``d ID / da = H``, the inertia matrix


def forward_dynamics_derivatives(
    model: Model,
    q: ArrayLike,
    v: ArrayLike,
    tau: ArrayLike,
    *,
    base_wrench: ArrayLike | None = None,
) -> ForwardDynamicsDerivatives:
    """Analytical derivatives of the forward dynamics (:func:`~.algorithms.aba`).

    ``qdd = H^-1 (Q + F_f(v) - c(q, v))`` with ``Q = [F_b; tau]``; its derivatives are
    ``-H^-1`` times those of the inverse dynamics (recursive, O(n d) for a tree of depth d)
    and ``H^-1`` for the forces. Gravity and the joint friction ``F_f`` (when
    ``model.joint_dynamics``) are included; every joint type (revolute, prismatic, ball,
    universal; free or fixed base) is supported.

    Parameters
    ----------
    model : Model
    q : (nq,) ndarray
        Configuration [m, -, rad | m].
    v : (nv,) ndarray
        Velocity ``[V0, w0, phidot]``, base parts in the inertial frame [m/s, rad/s, rad/s | m/s]
        (module :mod:`..model` glossary).
    tau : (n,) joint efforts [N m | N].
    base_wrench : (6,) optional
        ``[F; T]`` at the base CoM, inertial frame [N, N m] (floating base only).

    Returns
    -------
    ForwardDynamicsDerivatives
        ``dq`` (nv, nv) with respect to the tangent ``dq`` of the module docstring (base
        CoM, inertial-frame base rotation vector, child-frame ball-joint rotation vectors,
        joint coordinates); ``dv`` (nv, nv); ``dtau`` (nv, n); ``dbase_wrench`` (nv, 6)
        (None for a fixed base). Rows: ``[dV0, dw0, phiddot]`` (floating) or ``phiddot``.

    Raises
    ------
    ValueError
        Wrong sizes, a non-finite input, a base wrench on a fixed base; an overflow from
        finite inputs (velocities or efforts too large), said so.
    """
    q = as_q(model, q)
    v = as_v(model, v)
    nv = model.nv
    if base_wrench is None and is_ready(tau, model.shapes[2]):  # the common case, quicker
        gen = np.zeros(nv)
        gen[nv - model.n :] = tau
    else:
        gen = generalized_force(model, tau, base_wrench)
    qdd = np.empty(nv)
    dq = np.empty((nv, nv))
    dv = np.empty((nv, nv))
    minv = np.empty((nv, nv))
    local, _ = about_the_base(model, q)  # (origin-independent outputs, module docstring)
    try:
        e_dynamics_derivatives(
            *model.packed, local, v, qdd, gen, model.joint_dynamics, qdd, minv, dq, dv
        )
    except (ValueError, ZeroDivisionError) as e:  # named: a NaN, a zero quaternion
        raise state_error(model, e, q=q, v=v, **generalized_force_parts(model, gen)) from e
    off = nv - model.n
    return ForwardDynamicsDerivatives(
        dq, dv, minv[:, off:], minv[:, :6] if model.floating_base else None
    )


def inverse_dynamics_derivatives(
    model: Model, q: ArrayLike, v: ArrayLike, a: ArrayLike
) -> InverseDynamicsDerivatives:
    """Analytical derivatives of the inverse dynamics (:func:`~.algorithms.inverse_dynamics`,
    gravity and joint friction included as there).

    Parameters
    ----------
    model : Model
    q : (nq,) ndarray
        Configuration [m, -, rad | m].
    v : (nv,) ndarray
        Velocity ``[V0, w0, phidot]``, base parts in the inertial frame [m/s, rad/s, rad/s | m/s].
    a : (nv,) acceleration ``[dV0, dw0, phiddot]``, base parts in the inertial frame
        [m/s^2, rad/s^2, rad/s^2 | m/s^2].

    Returns
    -------
    InverseDynamicsDerivatives
        ``dq``, ``dv``, ``da`` (nv, nv) [N, N m per unit of the tangent / velocity /
        acceleration]; ``dq`` in the tangent convention of the module docstring.
    """
    q = as_q(model, q)
    v = as_v(model, v)
    a = as_v(model, a, 'a')
    nv = model.nv
    tau = np.empty(nv)
    H = np.empty((nv, nv))
    dq = np.empty((nv, nv))
    dv = np.empty((nv, nv))
    local, _ = about_the_base(model, q)
    try:
        e_dynamics_derivatives(
            *model.packed, local, v, a, _NO_FORCE, model.joint_dynamics, tau, H, dq, dv
        )
    except (ValueError, ZeroDivisionError) as e:  # named: a NaN, a zero quaternion
        raise state_error(model, e, q=q, v=v, a=a) from e
    return InverseDynamicsDerivatives(dq, dv, H)


def step_derivatives(
    model: Model,
    q: ArrayLike,
    v: ArrayLike,
    tau: ArrayLike,
    dt: float,
    *,
    base_wrench: ArrayLike | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Discrete-time linearization of one step of :func:`~.integration.step` with its default
    method (``'rk4'``, without ``conserve_momentum``, body-frame or link wrenches).

    With ``(q', v') = step(model, q, v, tau, dt, base_wrench=base_wrench)`` (inputs held over
    the step), a perturbed step satisfies, to second order::

        [dq'; dv'] = A [dq; dv] + B dtau

    where ``dq`` is the tangent at ``q`` (``q (+) dq = integrate(q, dq)``, module docstring) and
    ``dq'`` the tangent at ``q'`` (``integrate(q', dq')``). Computed by chaining the analytical
    derivatives of the four stages through the scheme's Lie-group maps (exact for the
    discrete map: no finite differences), gravity and joint friction included; where the
    step takes the joint friction implicitly (some joint too stiff for ``dt``: every joint's
    friction in one impulse, :mod:`.stiff_friction`), through that impulse, its displacement
    of the positions and, on a floating base, the momentum and CoM it restores too.

    Parameters
    ----------
    model : Model
    q : (nq,) ndarray
        Configuration [m, -, rad | m].
    v : (nv,) ndarray
        Velocity ``[V0, w0, phidot]``, base parts in the inertial frame [m/s, rad/s, rad/s | m/s].
    tau : (n,) ndarray
        Joint efforts [N m | N].
    dt : float
        Step [s].
    base_wrench : (6,) optional, ``[F; T]`` at the base CoM, inertial frame [N, N m],
        constant.

    Returns
    -------
    A : (2 nv, 2 nv) ndarray, ``d(q', v') / d(q, v)``.
    B : (2 nv, n) ndarray, ``d(q', v') / d tau``.

    Raises
    ------
    ValueError
        As :func:`~.integration.step`: wrong sizes, a non-finite input or a zero quaternion
        named, a model whose dynamics are not defined at the state; the step failing from a
        finite state is a :class:`~.integration.StepFailure` (too large a step or too fast a
        motion), as the step's own failure.
    """
    q = as_q(model, q)
    v = as_v(model, v)
    gen = generalized_force(model, tau, base_wrench)
    dt = positive_step(dt)
    nv = model.nv
    A = np.empty((2 * nv, 2 * nv))
    B = np.empty((2 * nv, model.n))
    local, _ = about_the_base(model, q)
    fric = model.joint_dynamics
    try:
        slopes = friction_slopes(model)
        dofs = _NO_DOFS
        if slopes.any():  # the friction D.step takes implicitly (.stiff_friction)
            H = np.empty((nv, nv))
            taken(e_mass_matrix(*model.packed, local, H))
            dofs = implicit_dofs(H, slopes, dt)
        packed = model.packed if dofs.size == 0 else explicit_part(model, dofs)
        e_step_derivatives(*packed, local, v, gen, fric, dt, A, B)
        if dofs.size:
            q1, v1 = e_rk4_steps(*packed, local, v, gen, _NO_FEXT, fric, dt, _NO_FORCE, 1)
            A, B = _through_the_impulse(model, q1, v1, dofs, dt, A, B)
    except (ValueError, ZeroDivisionError) as e:  # as D.step: a NaN, a zero quaternion named,
        raise step_error(model, e, q, v, gen, dt) from e  # the model or the step blamed
    if not (np.isfinite(A).all() and np.isfinite(B).all()):
        raise step_error(model, None, q, v, gen, dt)
    return A, B


def _through_the_impulse(
    model: Model,
    q1: np.ndarray,
    v1: np.ndarray,
    dofs: np.ndarray,
    dt: float,
    A: np.ndarray,
    B: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """``(A, B)`` of the explicit part of a split step (:mod:`.stiff_friction`), ending at
    ``(q1, v1)``, chained through the implicit friction impulse of ``dofs`` over ``dt`` and
    its displacement.

    The impulse ``v+ = v1 + H^-1 S p``, ``w = S^T v1 + A_s p``, ``p = -dt phi(w)``
    (``A_s = S^T H^-1 S``) at ``q1`` gives, with ``X = d(H^-1 S p)/dq`` at fixed ``p`` (the
    forward dynamics' ``dq`` at rest, without gravity or friction, under ``S p``) and
    ``K = -dt Phi' (I + dt A_s Phi')^-1``: ``dv+ = (X + H^-1 S K X_S) dq1 + (I + H^-1 S K
    S^T) dv1`` (``X_S`` the rows ``dofs`` of ``X``). The displacement
    (:func:`.stiff_friction.friction_displacement`, ``q2 = integrate(q1, dt/2 (v+ - v1))``):
    :func:`_integrate_tangent`; on a floating base, the restored momentum and first moment:
    :func:`_restored`.
    """
    nv, k = model.nv, dofs.size
    H = np.empty((nv, nv))
    taken(e_mass_matrix(*model.packed, q1, H))
    E = np.zeros((nv, k))
    E[dofs, np.arange(k)] = 1.0
    HinvS = np.linalg.solve(H, E)
    As = HinvS[dofs]
    As = 0.5 * (As + As.T)
    d, f = model.arrays.damping[dofs], model.arrays.friction[dofs]
    w = implicit_friction_rates(np.linalg.inv(As), v1[dofs], d, f, COULOMB_EPS, dt)
    th = np.tanh(w / COULOMB_EPS)
    slope = d + f / COULOMB_EPS * (1.0 - th * th)  # phi'(w)
    p = -dt * (d * w + f * th)
    v_plus = v1 + HinvS @ p  # (as friction_impulse)
    rest = _at_rest(model)
    Sp = E @ p
    X = forward_dynamics_derivatives(
        rest,
        q1,
        np.zeros(nv),
        Sp[nv - model.n :],
        base_wrench=Sp[:6] if model.floating_base else None,
    ).dq
    K = -dt * slope[:, None] * np.linalg.inv(np.eye(k) + dt * As * slope[None, :])
    eye = np.eye(nv)
    Dv = np.hstack((X + HinvS @ (K @ X[dofs]), eye + HinvS @ K @ E.T))  # d v+ / d(q1, v1)
    # the displacement q2 = integrate(q1, h (v+ - v1))
    h = DISPLACEMENT_SHARE['rk4'] * dt
    delta = h * (v_plus - v1)
    Dq = _integrate_tangent(model, delta, h * (Dv - np.hstack((np.zeros((nv, nv)), eye))))
    if model.floating_base:  # the momentum and first moment restored
        after = friction_displacement(model, q1, v1, v_plus, h)
        Dq, Dv = _restored(rest, (q1, v_plus, H), after, Dq, Dv)
    J = np.vstack((Dq, Dv))  # d(q+, v+) / d(q1, v1)
    return J @ A, J @ B


def _at_rest(model: Model) -> Model:
    """``model`` without gravity and joint friction: its inverse dynamics at rest are ``H a``
    and its forward dynamics ``H^-1 Q``."""
    return with_gravity(with_joint_dynamics(model, False), (0.0, 0.0, 0.0))


def _integrate_tangent(model: Model, theta: np.ndarray, Dtheta: np.ndarray) -> np.ndarray:
    """``d integrate(q, theta)`` (nv, nv + c): the tangent at the result of a perturbation
    ``dq`` of ``q`` (the first nv columns, identity in ``Dtheta``'s place) plus ``Dtheta``
    (nv, nv + c) of ``theta`` (nv,): identity on every coordinate but the attitudes, where
    the base (``exp(theta) Q``, inertial frame) gives ``exp(theta) dq + J_l(theta) dtheta``
    and a ball joint (``Q exp(theta)``, child frame) ``exp(theta)^T dq + J_r(theta) dtheta``
    (as :func:`.kernels.step_derivatives.integrate_tangent`)."""
    nv = model.nv
    out = Dtheta.copy()
    out[:, :nv] += np.eye(nv)
    a = model.arrays
    coefficients = getattr(so3_coefficients, 'py_func', so3_coefficients)  # (plain Python)
    for jt, iv in zip(a.jtype, a.iv, strict=True):
        if jt not in (ROOT_FREE, SPHERICAL):
            continue
        c0, sign = (int(iv) + 3, 1.0) if jt == ROOT_FREE else (int(iv), -1.0)
        rows = slice(c0, c0 + 3)
        t = theta[rows]
        sinc, cosc, sinc3, _, _ = coefficients(float(np.sqrt(t @ t)))
        T = skew(t)
        R = np.eye(3) + sign * sinc * T + cosc * T @ T  # exp(theta) or its transpose
        Jt = np.eye(3) + sign * cosc * T + sinc3 * T @ T  # J_l(theta) or J_r(theta)
        block = Jt @ Dtheta[rows]
        block[:, rows] += R
        out[rows] = block
    return out


def _restored(
    rest: Model,
    before: tuple[np.ndarray, np.ndarray, np.ndarray],
    after: tuple[np.ndarray, np.ndarray],
    Dq: np.ndarray,
    Dv: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """The perturbations ``(Dq, Dv)`` (nv, c) of the displaced state ``(q2, v+)`` carried
    through the momentum restoration of :func:`.stiff_friction.friction_displacement` (the
    whole system translated by ``d``, the base velocity changed by ``b``) to the state
    ``after = (q3, v3)``.

    The restored ``m(q, v) = [P; L_O; M r_g]`` (9,) of ``after`` equals that of ``before =
    (q1, v+, H(q1))``. With ``[P; L_r0] = H[:6] v`` (``L`` about the base CoM ``r0``), ``L_O =
    L_r0 + r0 x P`` and ``d(M r_g) = P(dq) = H[:3] dq``: ``dm = M_q dq + M_v dv``, ``M_v =
    [X H[:6]; 0]``, ``M_q = [X G + (0; -[P]x on the r0 columns); H[:3]]``, ``X = [[E, 0],
    [[r0]x, E]]``, ``G = d(H[:6] v)/dq`` (the inverse dynamics' ``dq`` at rest under ``a =
    v``). Then ``[M_q E_r, M_v E_b] [dd; db] = dm(before) - M_q Dq - M_v Dv`` at ``after``.
    The column ``0`` of the perturbations is ``d(q1, v1)``: ``dq1`` is ``Dq``'s first block.
    """
    q1, v_plus, H1 = before
    q3, v3 = after
    nv = v3.size
    H3 = np.empty((nv, nv))
    taken(e_mass_matrix(*rest.packed, q3, H3))

    def jacobians(q: np.ndarray, v: np.ndarray, H: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        X = np.eye(6)
        X[3:, :3] = skew(q[:3])
        G = inverse_dynamics_derivatives(rest, q, np.zeros(nv), v).dq[:6]
        Mq = np.vstack((X @ G, H[:3]))
        Mq[3:6, :3] -= skew(H[:3] @ v)
        Mv = np.vstack((X @ H[:6], np.zeros((3, nv))))
        return Mq, Mv

    Mq1, Mv1 = jacobians(q1, v_plus, H1)
    Mq3, Mv3 = jacobians(q3, v3, H3)
    c = Dq.shape[1]
    D1 = np.zeros((nv, c))  # d q1: the first nv columns
    D1[:, :nv] = np.eye(nv)
    rhs = Mq1 @ D1 + Mv1 @ Dv - Mq3 @ Dq - Mv3 @ Dv
    step = np.linalg.solve(np.hstack((Mq3[:, :3], Mv3[:, :6])), rhs)
    Dq, Dv = Dq.copy(), Dv.copy()
    Dq[:3] += step[:3]
    Dv[:6] += step[3:]
    return Dq, Dv


def generalized_velocity_derivatives(
    model: Model, q: ArrayLike, phidot: ArrayLike, link: str
) -> tuple[np.ndarray, np.ndarray]:
    """Derivatives of a link's velocity under zero momentum, ``J*(q) phidot``
    (``J* = generalized_jacobian(model, q, link)``, Yoshida & Umetani 1993): the quantity a
    free-floating controller linearizes.

    Parameters
    ----------
    model : Model
        A floating-base model.
    q : (nq,) ndarray
        Configuration [m, -, rad | m].
    phidot : (n,) ndarray
        Joint rates [rad/s | m/s].
    link : str, a link of the model (its frame origin is the point of ``J*``).

    Returns
    -------
    dq : (6, nv) ndarray
        ``d(J* phidot) / dq`` in the tangent convention of the module docstring (the base
        translation columns are zero: the zero-momentum motion does not depend on where the
        system is).
    dphidot : (6, n) ndarray
        ``d(J* phidot) / d phidot = J*``.

    Rows are ``[linear velocity of the link frame origin; angular velocity]``, inertial frame.

    Raises
    ------
    ValueError
        A fixed-base model, wrong sizes; :class:`~.model.UnknownNameError` for an unknown
        link.
    """
    require_floating(model, 'generalized_velocity_derivatives')
    frame = model.frame(link)
    q = as_q(model, q)
    phidot = as_vector(phidot, model.n, 'phidot')
    dq = np.empty((6, model.nv))
    dphi = np.empty((6, model.n))
    point = np.array(frame.translation, dtype=float)
    local, _ = about_the_base(model, q)
    try:
        e_generalized_velocity_derivatives(
            *model.packed, local, phidot, frame.body, point, dq, dphi
        )
    except (ValueError, ZeroDivisionError) as e:  # a zero quaternion, a NaN
        raise state_error(model, e, q=q, phidot=phidot) from e
    require_finite_result(model, dq.ravel(), q=q, phidot=phidot)
    return dq, dphi
