"""Rigid-body algorithms as free functions on an immutable :class:`Model`.

Names follow Pinocchio (``crba`` -> :func:`mass_matrix`, ``nle`` -> :func:`bias_forces`,
``rnea`` -> :func:`inverse_dynamics`, ``aba`` -> :func:`forward_dynamics`); the
free-floating blocks follow SPART/SpaceDyn and seed 000 (:func:`inertia_blocks`,
:func:`generalized_jacobian`). All inputs and outputs are in SI units and in the inertial
frame; ``q``/``v`` follow the conventions of :mod:`ffsim_ros.dynamics.model`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import NamedTuple

import numpy as np

from .direct import DirectEntry
from .inputs import (
    ArrayLike,
    about_the_base,
    any_link_wrench,
    as_q,
    as_q_rows,
    as_rows,
    as_v,
    as_vector,
    batch_shape,
    check_model,
    check_point,
    generalized_force,
    generalized_force_parts,
    generalized_forces,
    input_error,
    is_batch,
    link_wrench_items,
    no_batched_wrenches,
    plain_vector,
    plain_vectors,
    require_floating,
)
from .kernels.batched import b_forward_dynamics, b_inverse_dynamics, b_mass_matrix, b_momentum
from .kernels.entry import (
    ABOUT_BASE,
    ABOUT_COM,
    ABOUT_ORIGIN,
    e_aba,
    e_center_of_mass,
    e_forward_dynamics,
    e_inverse_dynamics,
    e_kinematics,
    e_mass_matrix,
    e_momentum,
    e_momentum_about,
    e_nle,
    e_poses,
    e_rnea,
    e_state_summary,
    taken,
)
from .lie import cross, quat_normalize, quat_to_matrix, quat_unit
from .model import Model
from .state_errors import (
    is_finite,
    overflow_error,
    require_finite_inputs,
    require_finite_result,
    state_error,
)

_ABA = DirectEntry(e_aba)
_CRBA = DirectEntry(e_mass_matrix)
_NLE = DirectEntry(e_nle)
_RNEA = DirectEntry(e_rnea)
_MOMENTUM = DirectEntry(e_momentum_about)
_ABOUT = {'origin': ABOUT_ORIGIN, 'com': ABOUT_COM, 'base': ABOUT_BASE}
_NO_COM = np.empty(0)  # (read-only: never written, having no entries)
_NO_COM.setflags(write=False)
_COM = DirectEntry(e_center_of_mass)


def body_wrenches(
    model: Model,
    q: np.ndarray,
    link_wrenches: Mapping[str, ArrayLike] | None,
    R: np.ndarray | None = None,
    p: np.ndarray | None = None,
) -> np.ndarray:
    """Body wrenches about O from wrenches acting at link frame origins.

    Parameters
    ----------
    model : Model
    q : (nq,) ndarray
        Configuration ``[r0, Q0, phi]`` [m, -, rad | m], base parts in the inertial frame.
    link_wrenches : Mapping or None
        ``{link: [f; n]}``, inertial frame [N, N m], each acting at its link frame's origin.
    R, p : (nb, 3, 3), (nb, 3), optional
        The body poses at ``q`` when the caller has them.

    Returns
    -------
    (nb, 6) ndarray ``[f; n_O]`` per body, inertial frame; or an empty (0, 6) array when
    there are none (the kernels then skip them).

    Raises
    ------
    TypeError
        ``link_wrenches`` not a mapping (:func:`~.inputs.link_wrench_items`).
    ValueError
        A wrench of the wrong size or not finite; :class:`~.model.UnknownNameError` for an
        unknown link.
    """
    items = link_wrench_items(link_wrenches)
    if not items:
        return np.empty((0, 6))
    nb = model.arrays.parent.shape[0]
    fext = np.zeros((nb, 6))
    if R is None or p is None:
        R, p = body_poses(model, q)
    for link, w in items:
        frame = model.frame(link)
        b = frame.body
        point = p[b] + R[b] @ frame.translation
        fext[b, :3] += w[:3]
        fext[b, 3:] += w[3:] + cross(point, w[:3])
    return fext


# ----------------------------------------------------------------------------------------------
# kinematics
# ----------------------------------------------------------------------------------------------


def body_poses(model: Model, q: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    """Poses of all bodies.

    Parameters
    ----------
    model : Model
    q : (nq,) ndarray
        Configuration ``[r0, Q0, phi]`` [m, -, rad | m], base parts in the inertial frame.

    Returns
    -------
    R : (nb, 3, 3) body orientations in the inertial frame.
    p : (nb, 3) body frame origins in the inertial frame [m].

    Raises
    ------
    ValueError
        ``q`` of the wrong size, not finite or with a zero quaternion, named.
    """
    q = as_q(model, q)
    try:
        return e_poses(*model.packed, q)
    except (ValueError, ZeroDivisionError) as e:  # a NaN, a zero quaternion (the kernel
        raise state_error(model, e, q=q) from e  # checks its result finite)


def center_of_mass(model: Model, q: ArrayLike) -> np.ndarray:
    """System CoM ``r_g`` (defined after [S0 eq. 10]), (3,) inertial frame [m].

    Parameters
    ----------
    model : Model
    q : (nq,) or (..., nq) ndarray
        Configuration [m, -, rad | m], base parts in the inertial frame.

    Returns
    -------
    (3,) or (..., 3) ndarray
        ``r_g``, inertial frame [m].
    """
    if is_batch(q):
        lead = batch_shape(q)
        Q = as_q_rows(model, q, lead)
        _, com = b_momentum(*model.packed, Q, np.zeros((Q.shape[0], model.nv)))
        return com.reshape(lead + (3,))
    out = np.empty(3)  # (one compiled pass: the batched call's arithmetic on one state)
    _COM.on_configuration(model, q, out)
    return out


def body_kinematics(model: Model, q: ArrayLike) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Body poses and the joint motion subspaces, inertial frame (the kinematics pass).

    Parameters
    ----------
    model : Model
    q : (nq,) ndarray
        Configuration [m, -, rad | m], base parts in the inertial frame.

    Returns
    -------
    R : (nb, 3, 3) body orientations;  p : (nb, 3) body frame origins [m].
    S : (6, nv) motion subspace columns ``[v_O; w]`` at the inertial origin O: joint ``k``'s
        columns map its velocity coordinates to its spatial velocity [S0 eqs. 3-5]
        [M secs. 3.1-3.2].
    """
    q = as_q(model, q)
    try:
        R, p, S, _, _, _ = e_kinematics(*model.packed, q)
    except (ValueError, ZeroDivisionError) as e:  # a NaN (the result checked), a zero quaternion
        raise state_error(model, e, q=q) from e
    return R, p, S


# ----------------------------------------------------------------------------------------------
# dynamics
# ----------------------------------------------------------------------------------------------


def mass_matrix(model: Model, q: ArrayLike) -> np.ndarray:
    """Generalized inertia matrix ``[[H0, H0m], [H0m^T, Hm]]`` [S0 eqs. 24-27] (CRBA).

    Parameters
    ----------
    model : Model
    q : (nq,) or (..., nq) ndarray
        Configuration [m, -, rad | m], base parts in the inertial frame.

    Returns
    -------
    (nv, nv) ndarray, symmetric positive definite [kg, kg m, kg m^2].

    ``q`` may carry leading batch dimensions (..., nq); the result is then (..., nv, nv).

    Raises
    ------
    ValueError
        ``q`` of the wrong size, not finite or with a zero quaternion, named.
    """
    try:
        nv = model.nv
    except AttributeError:
        check_model(model)
        raise
    if plain_vector(q):  # the common case, without any conversion
        H = np.empty((nv, nv))
        try:
            if _CRBA.entry(*model.packed, q, H):
                return H
        except (ValueError, ZeroDivisionError) as e:
            raise state_error(model, e, q=q) from e
    if is_batch(q):
        lead = batch_shape(q)
        H = b_mass_matrix(*model.packed, as_q_rows(model, q, lead))
        return H.reshape(lead + (nv, nv))
    q = as_q(model, q)
    H = np.empty((nv, nv))
    try:
        taken(_CRBA.entry(*model.packed, q, H))
    except (ValueError, ZeroDivisionError) as e:
        raise state_error(model, e, q=q) from e
    return H


def bias_forces(
    model: Model,
    q: ArrayLike,
    v: ArrayLike,
    *,
    link_wrenches: Mapping[str, ArrayLike] | None = None,
) -> np.ndarray:
    """Nonlinear effects ``c = [c_b; c_m]`` [S0 eq. 38] (gravity included when set).

    With ``link_wrenches``, returns ``c - J^T F_c`` (the contact term of [S0 eq. 41] moved
    left).

    Parameters
    ----------
    model : Model
    q : (nq,) or (..., nq) ndarray
        Configuration [m, -, rad | m], base parts in the inertial frame.
    v : (nv,) or (..., nv) ndarray
        Velocity ``[V0, w0, phidot]`` [m/s, rad/s, rad/s | m/s], base parts inertial frame.
    link_wrenches : dict, optional
        ``{link: (6,) [f; n]}`` at each link frame's origin, inertial frame [N, N m]; single
        state only.

    Returns
    -------
    (nv,) ndarray [N, N m].
    """
    try:
        packed = model.packed
    except AttributeError:
        check_model(model)
        raise
    if link_wrenches is None and plain_vectors(q, v, v):  # the common case, as they are
        out = np.empty(model.nv)
        try:
            if _NLE.entry(*packed, q, v, model.joint_dynamics, out):
                return out
        except (ValueError, ZeroDivisionError) as e:
            raise state_error(model, e, q=q, v=v) from e
    return _rnea(model, q, v, None, link_wrenches)


def inverse_dynamics(
    model: Model,
    q: ArrayLike,
    v: ArrayLike,
    a: ArrayLike,
    *,
    link_wrenches: Mapping[str, ArrayLike] | None = None,
) -> np.ndarray:
    """Generalized force producing ``a`` ([S0 eqs. 39, 41] solved for the right side; RNEA).

    Parameters
    ----------
    model : Model
    q : (nq,) or (..., nq) ndarray
        Configuration [m, -, rad | m], base parts in the inertial frame.
    v, a : (nv,) or (..., nv) ndarray
        Velocity ``[V0, w0, phidot]`` [m/s, rad/s, rad/s | m/s] and acceleration
        ``[dV0, dw0, phiddot]`` [m/s^2, rad/s^2, rad/s^2 | m/s^2], inertial frame.
    link_wrenches : dict, optional
        ``{link: [f; n]}``, inertial frame [N, N m], acting at the link frame's origin.

    Returns
    -------
    (nv,) ndarray
        ``[F; T; tau]``: base force and torque at the base CoM (inertial frame), then the
        joint efforts. With joint dynamics enabled the efforts include what overcomes the
        joint friction (``F_f`` of [S0 eq. 41]).

    Raises
    ------
    TypeError
        ``a`` None (:func:`bias_forces` gives the forces at zero acceleration), values that
        are not real numbers.
    ValueError
        Wrong sizes, a non-finite input or a zero quaternion, named; an overflow.
    """
    try:
        packed = model.packed
    except AttributeError:
        check_model(model)
        raise
    if a is None:  # (None is the bias forces' a = 0 inside; not taken silently here)
        raise TypeError(
            'a: expected (nv,) accelerations [dV0, dw0, phiddot], got None (bias_forces '
            'gives the generalized force at zero acceleration)'
        )
    if link_wrenches is None and plain_vectors(q, v, a):  # the common case, as they are
        out = np.empty(model.nv)
        try:
            if _RNEA.entry(*packed, q, v, a, model.joint_dynamics, out):
                return out
        except (ValueError, ZeroDivisionError) as e:
            raise state_error(model, e, q=q, v=v, a=a) from e
    return _rnea(model, q, v, a, link_wrenches)


def _rnea(
    model: Model,
    q: ArrayLike,
    v: ArrayLike,
    a: ArrayLike | None,
    link_wrenches: Mapping[str, ArrayLike] | None,
) -> np.ndarray:
    """:func:`inverse_dynamics`, or :func:`bias_forces` for ``a=None`` (its ``S a`` terms
    skipped in the kernels), for inputs off their fast paths: batched, to be converted, or
    with link wrenches."""
    nv = model.nv
    if is_batch(q):
        no_batched_wrenches(link_wrenches)
        lead = batch_shape(q)
        Q = as_q_rows(model, q, lead)
        V = as_rows(v, nv, 'v', lead)
        A = None if a is None else as_rows(a, nv, 'a', lead)
        out = b_inverse_dynamics(
            *model.packed,
            Q,
            V,
            np.empty((Q.shape[0], 0)) if A is None else A,
            model.joint_dynamics,
        )
        require_finite_result(model, out, v=V, a=A)
        return out.reshape(lead + (nv,))
    q = as_q(model, q)
    v = as_v(model, v)
    if a is not None:
        a = as_v(model, a, 'a')
    if not any_link_wrench(link_wrenches):  # converted: the fast paths' entry points
        out = np.empty(nv)
        try:
            if a is None:
                taken(_NLE.entry(*model.packed, q, v, model.joint_dynamics, out))
            else:
                taken(_RNEA.entry(*model.packed, q, v, a, model.joint_dynamics, out))
        except (ValueError, ZeroDivisionError) as e:
            given = {'q': q, 'v': v} if a is None else {'q': q, 'v': v, 'a': a}
            raise state_error(model, e, **given) from e
        return out
    fext = body_wrenches(model, q, link_wrenches)
    acc = v[:0] if a is None else a  # an empty a: a = 0
    out = e_inverse_dynamics(*model.packed, q, v, acc, fext, model.joint_dynamics)
    if not is_finite(out):
        require_finite_result(model, out, q=q, v=v, a=a, link_wrenches=fext)
    return out


def aba(
    model: Model,
    q: ArrayLike,
    v: ArrayLike,
    tau: ArrayLike,
    base_wrench: ArrayLike | None = None,
    link_wrenches: Mapping[str, ArrayLike] | None = None,
) -> np.ndarray:
    """Accelerations of [S0 eq. 39] ([S0 eq. 41] with contact wrenches and friction) by the
    O(n) articulated-body algorithm.

    Parameters
    ----------
    model : Model
    q : (nq,) ndarray
        Configuration ``[r0, Q0, phi]`` [m, -, rad | m], base parts in the inertial frame.
    v : (nv,) ndarray
        Velocity ``[V0, w0, phidot]`` [m/s, rad/s, rad/s | m/s], base parts inertial frame.
    tau : (n,) ndarray
        Joint efforts [N m | N].
    base_wrench : (6,) array_like, optional
        ``[F; T]`` acting at the base CoM, inertial frame [N, N m] (``F_b`` of [S0 eq. 39]).
    link_wrenches : dict, optional
        ``{link: [f; n]}`` acting at each link frame's origin, inertial frame.

    Returns
    -------
    (nv,) ndarray
        ``[dV0, dw0, phiddot]`` (floating base) or ``phiddot``.

    Notes
    -----
    Batched use: ``q`` (..., nq) with leading batch dimensions sets the batch shape; ``v``
    (..., nv), ``tau`` (..., n) and ``base_wrench`` (..., 6) broadcast to it (a single
    ``tau`` (n,) applies to every state; a batched ``v`` needs a batched ``q``), and the
    result is (..., nv); the states are spread over all cores. ``link_wrenches`` is
    single-state only.
    """
    try:
        packed = model.packed
    except AttributeError:
        check_model(model)
        raise
    if (
        base_wrench is None
        and (link_wrenches is None or not any_link_wrench(link_wrenches))
        and plain_vectors(q, v, tau)
    ):  # the common case, as they are
        out = np.empty(model.nv)
        try:
            if _ABA.entry(*packed, q, v, tau, model.joint_dynamics, out):
                return out
        except (ValueError, ZeroDivisionError) as e:
            raise state_error(model, e, q=q, v=v, tau=tau) from e
    if is_batch(q):
        no_batched_wrenches(link_wrenches)
        lead = batch_shape(q)
        Q = as_q_rows(model, q, lead)
        V = as_rows(v, model.nv, 'v', lead)
        gen = generalized_forces(model, tau, base_wrench, lead)
        out = b_forward_dynamics(*model.packed, Q, V, gen, model.joint_dynamics)
        require_finite_result(model, out, v=V, **generalized_force_parts(model, gen))
        return out.reshape(lead + (model.nv,))
    return _forward(model, q, v, tau, base_wrench, link_wrenches, True)


def forward_dynamics_crba(
    model: Model,
    q: ArrayLike,
    v: ArrayLike,
    tau: ArrayLike,
    base_wrench: ArrayLike | None = None,
    link_wrenches: Mapping[str, ArrayLike] | None = None,
) -> np.ndarray:
    """The accelerations of :func:`aba` as ``H^-1 (Q - c)`` [S0 eq. 39]: ``H`` by the CRBA,
    ``c`` by the RNEA, solved by Cholesky; O(n^3), the reference ABA is checked against.

    Parameters
    ----------
    model, q, v, tau, base_wrench, link_wrenches
        As :func:`aba`, single state only: ``q`` (nq,), ``v`` (nv,), ``tau`` (n,).

    Returns
    -------
    (nv,) ndarray
        ``[dV0, dw0, phiddot]`` (floating base) or ``phiddot``.
    """
    if is_batch(q):
        raise ValueError(
            f'q: expected a single state ({model.nq},) (forward_dynamics_crba has no batched '
            f'form: aba has), got shape {np.shape(q)}'
        )
    return _forward(model, q, v, tau, base_wrench, link_wrenches, False)


def _forward(
    model: Model,
    q: ArrayLike,
    v: ArrayLike,
    tau: ArrayLike,
    base_wrench: ArrayLike | None,
    link_wrenches: Mapping[str, ArrayLike] | None,
    use_aba: bool,
) -> np.ndarray:
    q = as_q(model, q)
    v = as_v(model, v)
    gen = generalized_force(model, tau, base_wrench)
    fext = body_wrenches(model, q, link_wrenches)
    try:
        out = e_forward_dynamics(*model.packed, q, v, gen, fext, model.joint_dynamics, use_aba)
    except (ValueError, ZeroDivisionError) as e:
        raise state_error(model, e, q=q, v=v, **generalized_force_parts(model, gen)) from e
    if not is_finite(out):
        parts = generalized_force_parts(model, gen)
        require_finite_result(model, out, q=q, v=v, **parts, link_wrenches=fext)
    return out


def momentum(model: Model, q: ArrayLike, v: ArrayLike, *, about: str = 'origin') -> np.ndarray:
    """Linear and angular momentum ``[P; L]`` of the system [S0 eqs. 6-7, 12, 17].

    Parameters
    ----------
    model : Model
    q : (nq,) or (..., nq) ndarray
        Configuration [m, -, rad | m], base parts in the inertial frame.
    v : (nv,) or (..., nv) ndarray
        Velocity [m/s, rad/s, rad/s | m/s], base parts in the inertial frame.
    about : {'origin', 'com', 'base'}
        Reference point of ``L``: the inertial origin [S0 eq. 7], the system CoM (``L_g``,
        [S0 eqs. 12-16]) or the base CoM (``L_0``, [S0 eqs. 17-19]).

    Returns
    -------
    (6,) ndarray [kg m/s, kg m^2/s], inertial frame; (..., 6) for batched states.

    Notes
    -----
    Computed about the base CoM (:func:`about_the_base`: as precise far from the origin as at
    it); ``about='origin'`` then adds ``r_0 x P``, the one part that depends on the origin.
    """
    check_point(about)
    try:
        packed = model.packed
    except AttributeError:
        check_model(model)
        raise
    if plain_vectors(q, v, v):  # the common case, as they are: one compiled pass
        h = np.empty(6)
        try:
            if _MOMENTUM.entry(*packed, q, v, _ABOUT[about], h, _NO_COM):
                return h
        except (ValueError, ZeroDivisionError) as e:
            raise state_error(model, e, q=q, v=v) from e
    if is_batch(q):
        lead = batch_shape(q)
        Q = as_q_rows(model, q, lead)
        local, origin = about_the_base(model, Q)
        h, com = b_momentum(*model.packed, local, as_rows(v, model.nv, 'v', lead))
    else:
        Q = as_q(model, q)
        local, origin = about_the_base(model, Q)
        h, com = _momentum_kernel(model, local, as_v(model, v))
    # h: [P; L] about the origin of ``local``, the base CoM when it was moved there
    if about == 'com':
        h[..., 3:] -= cross(com, h[..., :3])
    elif about == 'base' and origin is None:  # (a fixed base, or a base CoM at the origin)
        h[..., 3:] -= cross(_base_com(model, Q), h[..., :3])
    elif about == 'origin' and origin is not None:
        h[..., 3:] += cross(origin, h[..., :3])
    return h.reshape(lead + (6,)) if is_batch(q) else h


def momentum_and_com(model: Model, q: ArrayLike, v: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    """``[P; L_g]`` (6,) about the system CoM and the CoM ``r_g`` (3,) in one pass
    [S0 eqs. 9, 12-16], inertial frame [kg m/s, kg m^2/s, m] (computed about the base CoM,
    :func:`about_the_base`: as precise far from the origin as at it).

    Parameters
    ----------
    model : Model
    q : (nq,) ndarray
        Configuration [m, -, rad | m], base parts in the inertial frame.
    v : (nv,) ndarray
        Velocity [m/s, rad/s, rad/s | m/s], base parts in the inertial frame.

    Returns
    -------
    h : (6,) ndarray
        ``[P; L_g]`` [kg m/s, kg m^2/s].
    com : (3,) ndarray
        ``r_g`` [m].
    """
    h, com = np.empty(6), np.empty(3)
    try:  # (one compiled pass; the momentum about the base CoM, as below)
        if plain_vectors(q, v, v) and _MOMENTUM.entry(*model.packed, q, v, ABOUT_COM, h, com):
            return h, com
    except (ValueError, ZeroDivisionError) as e:
        raise state_error(model, e, q=q, v=v) from e
    local, origin = about_the_base(model, as_q(model, q))
    h, com = _momentum_kernel(model, local, as_v(model, v))
    h[3:] -= cross(com, h[:3])
    if origin is not None:
        com += origin
    return h, com


def _momentum_kernel(model: Model, q: np.ndarray, v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``([P; L_O], r_g)`` of one state, checked finite by the kernel (a NaN input or an
    overflow named)."""
    try:
        return e_momentum(*model.packed, q, v)
    except (ValueError, ZeroDivisionError) as e:  # a NaN, an overflow, a zero quaternion
        raise state_error(model, e, q=q, v=v) from e


class StateSummary(NamedTuple):
    """What a simulator shows of a floating-base state (inertial frame, SI units)."""

    base_position: np.ndarray  #: (3,) base link frame origin [m]
    base_orientation: np.ndarray  #: (4,) base link orientation (x, y, z, w), unit
    base_linear_velocity: np.ndarray  #: (3,) velocity of the base link origin [m/s]
    base_angular_velocity: np.ndarray  #: (3,) base angular velocity [rad/s]
    momentum: np.ndarray  #: (6,) ``[P; L_g]`` about the system CoM [kg m/s, kg m^2/s]
    com: np.ndarray  #: (3,) system CoM [m]
    kinetic_energy: float  #: ``1/2 v^T H v`` [J]


def state_summary(model: Model, q: ArrayLike, v: ArrayLike) -> StateSummary:
    """:func:`base_link_state`, :func:`momentum_and_com` and :func:`kinetic_energy` of a
    floating-base state in one compiled pass (what a simulator publishes every period).

    Parameters
    ----------
    model : Model
        A floating-base model.
    q : (nq,) ndarray
        Configuration [m, -, rad | m], base parts in the inertial frame.
    v : (nv,) ndarray
        Velocity [m/s, rad/s, rad/s | m/s], base parts in the inertial frame.

    Returns
    -------
    StateSummary
    """
    require_floating(model, 'state_summary')
    q, v = as_q(model, q), as_v(model, v)
    local, origin = about_the_base(model, q)  # (precise far from the origin)
    try:  # (the kernel checks its result finite; about_the_base the base CoM)
        out = e_state_summary(*model.packed, local, v)
    except (ValueError, ZeroDivisionError) as e:  # a NaN, an overflow, a zero quaternion
        raise state_error(model, e, q=q, v=v) from e
    if origin is not None:  # the base link frame's origin and the CoM are points (the rest:
        out[0:3] += origin  # free vectors, the momentum about the CoM, the energy)
        out[19:22] += origin
    return StateSummary(
        out[0:3], out[3:7], out[7:10], out[10:13], out[13:19], out[19:22], float(out[22])
    )


def _base_com(model: Model, q: np.ndarray) -> np.ndarray:
    """Base CoM(s): ``q[..., :3]`` for a floating base, else the fixed base's CoM."""
    if model.floating_base:
        return q[..., :3].copy()
    return np.broadcast_to(model.arrays.com[0], q.shape[:-1] + (3,)).copy()


def kinetic_energy(model: Model, q: ArrayLike, v: ArrayLike) -> float:
    """``T = 1/2 v^T H v`` [S0 eqs. 23-25] [J] (``H`` taken about the base CoM,
    :func:`about_the_base`: as precise far from the origin as at it).

    Parameters
    ----------
    model : Model
    q : (nq,) ndarray
        Configuration [m, -, rad | m], base parts in the inertial frame.
    v : (nv,) ndarray
        Velocity [m/s, rad/s, rad/s | m/s], base parts in the inertial frame.

    Returns
    -------
    float
        [J]
    """
    q = as_q(model, q)
    v = as_v(model, v)
    local, _ = about_the_base(model, q)  # (the energy does not depend on the origin)
    H = mass_matrix(model, local)  # (q named when it is not finite)
    require_finite_inputs(model, v=v)  # (named before NumPy warns of inf * 0)
    energy = 0.5 * float(v @ H @ v)
    if not math.isfinite(energy):
        raise input_error(model, q=q, v=v) or overflow_error(model, v=v)
    return energy


def potential_energy(model: Model, q: ArrayLike) -> float:
    """Gravitational potential ``-M g . r_g`` [J] (zero in orbit).

    Parameters
    ----------
    model : Model
    q : (nq,) ndarray
        Configuration [m, -, rad | m], base parts in the inertial frame.

    Returns
    -------
    float
        [J]
    """
    return -model.total_mass * float(model.gravity @ center_of_mass(model, as_q(model, q)))


# ----------------------------------------------------------------------------------------------
# the base link frame (what TF and odometry show)
# ----------------------------------------------------------------------------------------------


def base_link_state(
    model: Model, q: ArrayLike, v: ArrayLike | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Pose and velocity of the base *link frame* (what TF and odometry show).

    ``q`` holds the base-body CoM ``r0``; the link frame origin is ``r0 - R c0`` with ``c0``
    the base CoM in the link frame.

    Parameters
    ----------
    model : Model
        A floating-base model.
    q : (nq,) ndarray
        Configuration [m, -, rad | m], base parts in the inertial frame.
    v : (nv,) ndarray, optional
        Velocity [m/s, rad/s, rad/s | m/s], base parts inertial frame (default zero).

    Returns
    -------
    position : (3,) link frame origin, inertial frame [m].
    quaternion : (4,) orientation (x, y, z, w), unit.
    linear_velocity : (3,) velocity of the link frame origin, inertial frame [m/s].
    angular_velocity : (3,) inertial frame [rad/s].
    """
    require_floating(model, 'base_link_state')
    q = as_q(model, q)
    v = np.zeros(model.nv) if v is None else as_v(model, v)
    require_finite_inputs(model, q=q, v=v)
    quat = quat_unit(q[3:7], 'q[3:7]')
    lever = quat_to_matrix(quat) @ model.arrays.com[0]
    return q[:3] - lever, quat, v[:3] - cross(v[3:6], lever), v[3:6].copy()


def base_state_from_link(
    model: Model,
    position: ArrayLike,
    quaternion: ArrayLike,
    linear_velocity: ArrayLike = (0.0, 0.0, 0.0),
    angular_velocity: ArrayLike = (0.0, 0.0, 0.0),
) -> tuple[np.ndarray, np.ndarray]:
    """Inverse of :func:`base_link_state`: the base parts of ``q`` and ``v``.

    Parameters
    ----------
    model : Model
        A floating-base model.
    position : (3,) base link frame origin, inertial frame [m].
    quaternion : (4,) orientation (x, y, z, w); normalized here (a norm below 1e-9, an unset
        message field, is an error: :func:`~.lie.quat_normalize`).
    linear_velocity : (3,) velocity of the link frame origin, inertial frame [m/s].
    angular_velocity : (3,) inertial frame [rad/s].

    Returns
    -------
    q_base : (7,) ``[r0, Q0]``;  v_base : (6,) ``[V0, w0]``.
    """
    require_floating(model, 'base_state_from_link')
    p = as_vector(position, 3, 'position')
    quat = as_vector(quaternion, 4, 'quaternion')
    lin = as_vector(linear_velocity, 3, 'linear_velocity')
    w = as_vector(angular_velocity, 3, 'angular_velocity')
    given = {'position': p, 'quaternion': quat, 'linear_velocity': lin, 'angular_velocity': w}
    require_finite_inputs(model, **given)
    quat = quat_normalize(quat)
    lever = quat_to_matrix(quat) @ model.arrays.com[0]
    return np.r_[p + lever, quat], np.r_[lin + cross(w, lever), w]
