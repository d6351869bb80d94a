"""Rigid-body algorithms as free functions on an immutable :class:`Model`.

Names follow Pinocchio (``crba`` -> :func:`mass_matrix`, ``nle`` -> :func:`bias_forces`,
``rnea`` -> :func:`inverse_dynamics`, ``aba`` -> :func:`forward_dynamics`); the
free-floating blocks follow SPART/SpaceDyn and seed 000 (:func:`inertia_blocks`,
:func:`generalized_jacobian`). All inputs and outputs are in SI units and in the inertial
frame; ``q``/``v`` follow the conventions of :mod:`ffsim_ros.dynamics.model`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from . import kernels as K
from .model import Model

ArrayLike = Sequence[float] | np.ndarray
_ABOUT = ('origin', 'com', 'base')


# ----------------------------------------------------------------------------------------------
# argument checking
# ----------------------------------------------------------------------------------------------


_F8 = np.dtype(np.float64)
_UNIT_STRIDE = (8,)


def _ready(x: object, shape: tuple[int]) -> bool:
    """Whether ``x`` can go to a compiled kernel as is: a float64 (size,) ndarray with unit
    stride (C-contiguous), what the compiled signature of :class:`_Direct` reads.

    The fast path of the per-call wrappers, four attribute checks (numpy's ``flags`` object
    alone would cost as much). Anything else goes through :func:`_vec` (or the batched
    path), which converts it to such an array or raises the usual ``ValueError``. A
    read-only or unaligned array passes too: the kernels never write their inputs, and
    the entry point reads any 8-byte-strided float64 buffer the same way.
    """
    return (
        x.__class__ is np.ndarray
        and x.dtype is _F8  # type: ignore[attr-defined]
        and x.shape == shape  # type: ignore[attr-defined]
        and x.strides == _UNIT_STRIDE  # type: ignore[attr-defined]
    )


class _Direct:
    """One compiled signature of a numba entry point, called without the dispatcher.

    numba's dispatcher works out the type of every argument on every call, about 0.3-0.5 us
    for the 6-7 arrays of an entry point: a tenth of a 7-DoF call. The per-call fast paths
    only pass arrays that share one layout (:func:`_ready` vectors, the model's read-only
    ``packed`` arrays, a bool), so ``entry`` is, after the first call, the native entry point
    of that one signature: the packed arrays read-only, every other array C-contiguous,
    aligned and writeable. The first call compiles that signature (or loads it from the
    cache) through the dispatcher, with copies of any input that is not of that kind, so a
    read-only first input cannot select another signature. Without numba ``entry`` is the
    Python kernel.
    """

    __slots__ = ('kernel', 'entry')

    def __init__(self, kernel: object) -> None:
        self.kernel = kernel
        self.entry = self._first

    def _first(self, *args: object) -> object:
        args = args[:2] + tuple(
            np.require(a, requirements='CAW') if isinstance(a, np.ndarray) else a for a in args[2:]
        )
        out = self.kernel(*args)  # type: ignore[operator]
        try:
            sig = tuple(self.kernel.typeof_pyval(a) for a in args)  # type: ignore[attr-defined]
            self.entry = self.kernel.overloads[sig].entry_point  # type: ignore[attr-defined]
        except (AttributeError, KeyError):  # a plain Python kernel (numba absent)
            self.entry = self.kernel
        return out


_ABA = _Direct(K.e_aba)
_CRBA = _Direct(K.e_mass_matrix)
_NLE = _Direct(K.e_nle)
_RNEA = _Direct(K.e_rnea)


def _vec(x: ArrayLike, size: int, what: str) -> np.ndarray:
    arr = np.ascontiguousarray(x, dtype=float)
    flags = arr.flags
    if not (flags.writeable and flags.aligned):  # another numba type (a compile; see _Direct)
        arr = arr.copy()
    if arr.shape != (size,):
        got = arr.shape[0] if arr.ndim == 1 else f'shape {arr.shape}'
        raise ValueError(f'{what}: expected {size} values, got {got}')
    return arr


def _rows(x: ArrayLike, size: int, what: str, lead: tuple[int, ...]) -> np.ndarray:
    """``x`` (..., size) broadcast to ``lead + (size,)`` and flattened to (B, size)."""
    arr = np.asarray(x, dtype=float)
    if arr.ndim == 0 or arr.shape[-1] != size:
        got = arr.shape[-1] if arr.ndim else 'a scalar'
        raise ValueError(f'{what}: expected {size} values in the last axis, got {got}')
    try:
        arr = np.broadcast_to(arr, lead + (size,))
    except ValueError:
        raise ValueError(
            f'{what}: expected batch shape {lead} (or broadcastable), got {arr.shape[:-1]}'
        ) from None
    return np.ascontiguousarray(arr.reshape(-1, size))


def _is_batch(q: ArrayLike) -> bool:
    return np.ndim(q) > 1


def _batch_gen(
    model: Model, tau: ArrayLike, base_wrench: ArrayLike | None, lead: tuple[int, ...]
) -> np.ndarray:
    gen = np.zeros((int(np.prod(lead)), model.nv))
    gen[:, model.nv - model.n :] = _rows(tau, model.n, 'tau', lead)
    if base_wrench is not None:
        _require_floating(model, 'base_wrench')
        gen[:, :6] = _rows(base_wrench, 6, 'base_wrench', lead)
    return gen


def _no_batched_wrenches(link_wrenches: Mapping[str, ArrayLike] | None) -> None:
    if link_wrenches:
        raise ValueError('link_wrenches: expected None with batched states (single state only)')


def _q(model: Model, q: ArrayLike) -> np.ndarray:
    return _vec(q, model.nq, 'q')


def _v(model: Model, v: ArrayLike, what: str = 'v') -> np.ndarray:
    return _vec(v, model.nv, what)


def _require_floating(model: Model, what: str) -> None:
    if not model.floating_base:
        raise ValueError(f'{what}: expected a floating-base model, got a fixed-base one')


def _external_wrenches(
    model: Model,
    q: np.ndarray,
    link_wrenches: Mapping[str, ArrayLike] | None,
    R: np.ndarray | None = None,
    p: np.ndarray | None = None,
) -> np.ndarray:
    """Body wrenches about O, (nb, 6), from ``{link: [f; n] at the link origin}``."""
    nb = model.arrays.parent.shape[0]
    if not link_wrenches:
        return np.empty((0, 6))  # no body wrenches (the kernels skip them)
    fext = np.zeros((nb, 6))
    if R is None or p is None:
        R, p = K.e_poses(*model.packed, q)
    for link, wrench in link_wrenches.items():
        frame = model.frame(link)
        w = _vec(wrench, 6, f'link_wrenches[{link!r}]')
        b = frame.body
        point = p[b] + R[b] @ frame.translation
        fext[b, :3] += w[:3]
        fext[b, 3:] += w[3:] + np.cross(point, w[:3])
    return fext


def _generalized_force(model: Model, tau: ArrayLike, base_wrench: ArrayLike | None) -> np.ndarray:
    gen = np.zeros(model.nv)
    gen[model.nv - model.n :] = _vec(tau, model.n, 'tau')
    if base_wrench is not None:
        _require_floating(model, 'base_wrench')
        gen[:6] = _vec(base_wrench, 6, 'base_wrench')
    return gen


# ----------------------------------------------------------------------------------------------
# kinematics
# ----------------------------------------------------------------------------------------------


def body_poses(model: Model, q: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    """Poses of all bodies.

    Returns
    -------
    R : (nb, 3, 3) body orientations in the inertial frame.
    p : (nb, 3) body frame origins in the inertial frame [m].
    """
    return K.e_poses(*model.packed, _q(model, q))


def link_pose(model: Model, q: ArrayLike, link: str) -> tuple[np.ndarray, np.ndarray]:
    """Pose of a link frame in the inertial frame (seed 000, eq. 1 for the end effector).

    Returns
    -------
    p : (3,) position of the link frame origin [m].
    R : (3, 3) orientation (link frame -> inertial frame).
    """
    frame = model.frame(link)
    R, p = body_poses(model, q)
    b = frame.body
    return p[b] + R[b] @ frame.translation, R[b] @ frame.rotation


def center_of_mass(model: Model, q: ArrayLike) -> np.ndarray:
    """System CoM ``r_g`` (seed 000, after eq. 10), (3,) inertial frame [m]."""
    if _is_batch(q):
        lead = np.shape(q)[:-1]
        Q = _rows(q, model.nq, 'q', lead)
        _, com = K.b_momentum(*model.packed, Q, np.zeros((Q.shape[0], model.nv)))
        return com.reshape(lead + (3,))
    R, p = body_poses(model, q)
    a = model.arrays
    c = p + np.einsum('bij,bj->bi', R, a.com)
    return (a.mass @ c) / a.mass.sum()


def _support_mask(model: Model, body: int) -> np.ndarray:
    mask = np.zeros(model.nv, dtype=bool)
    a = model.arrays
    j = body
    while j >= 0:
        mask[a.iv[j] : a.iv[j] + a.nvj[j]] = True
        j = a.parent[j]
    return mask


def link_jacobian(model: Model, q: ArrayLike, link: str) -> np.ndarray:
    """Jacobian ``[Js | Jm]`` of a link frame (seed 000, eq. 5).

    Returns
    -------
    (6, nv) ndarray
        Maps ``v`` to ``[linear velocity of the link frame origin; angular velocity]``,
        both in the inertial frame. Columns 0:6 (floating base) are ``Js`` (with the base
        velocity taken at the base CoM), the rest ``Jm``.
    """
    q = _q(model, q)
    frame = model.frame(link)
    R, p, S, _, _, _ = K.e_kinematics(*model.packed, q)
    b = frame.body
    point = p[b] + R[b] @ frame.translation
    J = np.where(_support_mask(model, b)[None, :], S, 0.0)
    # velocity of the point = v_O + w x point = v_O - point x w
    px, py, pz = point
    J[0] -= py * J[5] - pz * J[4]
    J[1] -= pz * J[3] - px * J[5]
    J[2] -= px * J[4] - py * J[3]
    return J


# ----------------------------------------------------------------------------------------------
# dynamics
# ----------------------------------------------------------------------------------------------


def mass_matrix(model: Model, q: ArrayLike) -> np.ndarray:
    """Generalized inertia matrix ``[[H0, H0m], [H0m^T, Hm]]`` (seed 000, eqs. 24-27).

    Returns
    -------
    (nv, nv) ndarray, symmetric positive definite [kg, kg m, kg m^2].

    ``q`` may carry leading batch dimensions (..., nq); the result is then (..., nv, nv).
    """
    if not _ready(q, model.shapes[0]):
        if _is_batch(q):
            lead = np.shape(q)[:-1]
            H = K.b_mass_matrix(*model.packed, _rows(q, model.nq, 'q', lead))
            return H.reshape(lead + (model.nv, model.nv))
        q = _q(model, q)
    H = np.empty((model.nv, model.nv))
    _CRBA.entry(*model.packed, q, H)
    return H


def inertia_blocks(model: Model, q: ArrayLike) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The free-floating blocks of the inertia matrix (seed 000, eqs. 20, 23, 24).

    Returns
    -------
    H0 : (6, 6) base inertia matrix (eq. 20).
    H0m : (6, n) base-manipulator coupling inertia (eq. 23): ``[P; L0] = H0 x0dot + H0m
        phidot`` with ``L0`` the angular momentum about the base CoM (eq. 21).
    Hm : (n, n) manipulator inertia (``H_phi``, eq. 24).
    """
    _require_floating(model, 'inertia_blocks')
    H = mass_matrix(model, q)
    return H[:6, :6], H[:6, 6:], H[6:, 6:]


def bias_forces(
    model: Model,
    q: ArrayLike,
    v: ArrayLike,
    *,
    link_wrenches: Mapping[str, ArrayLike] | None = None,
) -> np.ndarray:
    """Nonlinear effects ``c = [c_b; c_m]`` of seed 000, eq. 38 (gravity included when set).

    With ``link_wrenches``, returns ``c - J^T F_c`` (eq. 41 contact term moved left).

    Returns
    -------
    (nv,) ndarray [N, N m].
    """
    shape_q, shape_v, _ = model.shapes
    if link_wrenches is None and _ready(q, shape_q) and _ready(v, shape_v):
        out = np.empty(shape_v)  # the common case, without any conversion
        _NLE.entry(*model.packed, q, v, model.joint_dynamics, out)
        return out
    return _rnea(model, q, v, None, link_wrenches)


def inverse_dynamics(
    model: Model,
    q: ArrayLike,
    v: ArrayLike,
    a: ArrayLike,
    *,
    link_wrenches: Mapping[str, ArrayLike] | None = None,
) -> np.ndarray:
    """Generalized force producing ``a`` (seed 000, eq. 39/41, solved for the right side).

    Parameters
    ----------
    q : (nq,) configuration;  v : (nv,) velocity;  a : (nv,) ``[dV0, dw0, phiddot]``.
    link_wrenches : dict, optional
        ``{link: [f; n]}``, inertial frame [N, N m], acting at the link frame's origin.

    Returns
    -------
    (nv,) ndarray
        ``[F; T; tau]``: base force and torque at the base CoM (inertial frame), then the
        joint efforts. With joint dynamics enabled the efforts include what overcomes the
        joint friction (eq. 41, ``F_f``).
    """
    shape_q, shape_v, _ = model.shapes
    if link_wrenches is None and _ready(q, shape_q) and _ready(v, shape_v) and _ready(a, shape_v):
        out = np.empty(shape_v)  # the common case, without any conversion
        _RNEA.entry(*model.packed, q, v, a, model.joint_dynamics, out)
        return out
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
    if _is_batch(q):
        _no_batched_wrenches(link_wrenches)
        lead = np.shape(q)[:-1]
        Q = _rows(q, model.nq, 'q', lead)
        out = K.b_inverse_dynamics(
            *model.packed,
            Q,
            _rows(v, nv, 'v', lead),
            np.empty((Q.shape[0], 0)) if a is None else _rows(a, nv, 'a', lead),
            model.joint_dynamics,
        )
        return out.reshape(lead + (nv,))
    q = _q(model, q)
    v = _v(model, v)
    if a is not None:
        a = _v(model, a, 'a')
    if not link_wrenches:  # converted: now the public functions' fast paths take them
        return bias_forces(model, q, v) if a is None else inverse_dynamics(model, q, v, a)
    fext = _external_wrenches(model, q, link_wrenches)
    acc = v[:0] if a is None else a  # an empty a: a = 0
    return K.e_inverse_dynamics(*model.packed, q, v, acc, fext, model.joint_dynamics)


def forward_dynamics(
    model: Model,
    q: ArrayLike,
    v: ArrayLike,
    tau: ArrayLike,
    *,
    base_wrench: ArrayLike | None = None,
    link_wrenches: Mapping[str, ArrayLike] | None = None,
    method: str = 'aba',
) -> np.ndarray:
    """Accelerations of seed 000, eq. 39 (eq. 41 with contact wrenches and friction).

    Parameters
    ----------
    q : (nq,) configuration;  v : (nv,) velocity.
    tau : (n,) joint efforts [N m | N].
    base_wrench : (6,) array_like, optional
        ``[F; T]`` acting at the base CoM, inertial frame [N, N m] (``F_b`` of eq. 39).
    link_wrenches : dict, optional
        ``{link: [f; n]}`` acting at each link frame's origin, inertial frame.
    method : {'aba', 'crba', 'kkt', 'nullspace', 'multipliers', 'barycentric'}
        ``'aba'``: the O(n) articulated-body algorithm (default); ``'crba'``: assemble
        ``H`` and ``c`` and solve ``H a = Q - c`` by Cholesky, O(n^3). ``'kkt'``,
        ``'nullspace'`` and ``'multipliers'``: Mufti's maximal-coordinate formulation (seed
        001, eqs. 10/49 solved sparse, its null-space form eq. 40-c with ``Z`` from a QR, or
        the multiplier system of eqs. 14/50 with the accelerations eliminated); pure NumPy/SciPy,
        single state only (see :func:`ffsim_ros.dynamics.mufti.maximal_dynamics`).
        ``'barycentric'``: the reduced form of eqs. 30-38/51 (augmented bodies, barycentric
        vectors) for floating-base models of spherical and revolute joints
        (:func:`ffsim_ros.dynamics.mufti.barycentric.barycentric_dynamics`).

    Returns
    -------
    (nv,) ndarray
        ``[dV0, dw0, phiddot]`` (floating base) or ``phiddot``.

    Notes
    -----
    Batched use: ``q`` (..., nq), ``v`` (..., nv), ``tau`` (..., n) and ``base_wrench``
    (..., 6), broadcast against each other, give (..., nv); the states are spread over all
    cores. ``link_wrenches`` is single-state only.
    """
    if (
        method == 'aba'
        and base_wrench is None
        and not link_wrenches
        and _ready(q, model.shapes[0])
        and _ready(v, model.shapes[1])
        and _ready(tau, model.shapes[2])
    ):  # the common case, without any conversion
        out = np.empty(model.nv)
        _ABA.entry(*model.packed, q, v, tau, model.joint_dynamics, out)
        return out
    if _is_batch(q):
        _no_batched_wrenches(link_wrenches)
        if method != 'aba':
            raise ValueError(f"method: expected 'aba' with batched states, got {method!r}")
        lead = np.shape(q)[:-1]
        out = K.b_forward_dynamics(
            *model.packed,
            _rows(q, model.nq, 'q', lead),
            _rows(v, model.nv, 'v', lead),
            _batch_gen(model, tau, base_wrench, lead),
            model.joint_dynamics,
        )
        return out.reshape(lead + (model.nv,))
    if method == 'barycentric':
        from .mufti.barycentric import barycentric_dynamics  # seed 001, eqs. 30-38, 51

        return barycentric_dynamics(
            model, q, v, tau, base_wrench=base_wrench, link_wrenches=link_wrenches
        )
    if method in ('kkt', 'nullspace', 'multipliers'):
        from .mufti import maximal_dynamics  # maximal coordinates (seed 001)

        return maximal_dynamics(
            model,
            q,
            v,
            tau,
            base_wrench=base_wrench,
            link_wrenches=link_wrenches,
            method=method,
        ).a
    q = _q(model, q)
    v = _v(model, v)
    gen = _generalized_force(model, tau, base_wrench)
    fext = _external_wrenches(model, q, link_wrenches)
    if method not in ('aba', 'crba'):
        raise ValueError(
            "method: expected one of ('aba', 'crba', 'kkt', 'nullspace', 'multipliers', "
            f"'barycentric'), got {method!r}"
        )
    return K.e_forward_dynamics(
        *model.packed, q, v, gen, fext, model.joint_dynamics, method == 'aba'
    )


def momentum(model: Model, q: ArrayLike, v: ArrayLike, *, about: str = 'origin') -> np.ndarray:
    """Linear and angular momentum ``[P; L]`` of the system (seed 000, eqs. 6-7, 12, 17).

    Parameters
    ----------
    about : {'origin', 'com', 'base'}
        Reference point of ``L``: the inertial origin (eq. 7), the system CoM (``L_g``,
        eqs. 12-16) or the base CoM (``L_0``, eqs. 17-19).

    Returns
    -------
    (6,) ndarray [kg m/s, kg m^2/s], inertial frame.
    """
    if about not in _ABOUT:
        raise ValueError(f'about: expected one of {_ABOUT}, got {about!r}')
    if _is_batch(q):
        lead = np.shape(q)[:-1]
        Q = _rows(q, model.nq, 'q', lead)
        h, com = K.b_momentum(*model.packed, Q, _rows(v, model.nv, 'v', lead))
        if about != 'origin':
            point = com if about == 'com' else _base_com(model, Q)
            h[:, 3:] -= np.cross(point, h[:, :3])
        return h.reshape(lead + (6,))
    q = _q(model, q)
    v = _v(model, v)
    h, com = K.e_momentum(*model.packed, q, v)
    if about == 'com':
        point = com
    elif about == 'base':
        point = _base_com(model, q)
    else:
        return h
    h[3:] -= np.cross(point, h[:3])
    return h


def _base_com(model: Model, q: np.ndarray) -> np.ndarray:
    """Base CoM(s): ``q[..., :3]`` for a floating base, else the fixed base's CoM."""
    if model.floating_base:
        return q[..., :3].copy()
    return np.broadcast_to(model.arrays.com[0], q.shape[:-1] + (3,)).copy()


def kinetic_energy(model: Model, q: ArrayLike, v: ArrayLike) -> float:
    """``T = 1/2 v^T H v`` (seed 000, eqs. 23-25) [J]."""
    v = _v(model, v)
    return 0.5 * float(v @ mass_matrix(model, q) @ v)


def potential_energy(model: Model, q: ArrayLike) -> float:
    """Gravitational potential ``-M g . r_g`` [J] (zero in orbit)."""
    return -model.total_mass * float(model.gravity @ center_of_mass(model, q))


# ----------------------------------------------------------------------------------------------
# free-floating quantities
# ----------------------------------------------------------------------------------------------


def generalized_jacobian(model: Model, q: ArrayLike, link: str) -> np.ndarray:
    """Generalized Jacobian ``J* = Jm - Js H0^-1 H0m`` (Yoshida & Umetani 1993).

    Under zero total momentum (seed 000, eq. 21 with ``[P; L] = 0``) the base velocity is
    ``x0dot = -H0^-1 H0m phidot``; substituting into eq. 5 gives ``[v; w] = J* phidot``.

    Returns
    -------
    (6, n) ndarray, inertial frame, rows ``[linear velocity of the link origin; angular]``.
    """
    _require_floating(model, 'generalized_jacobian')
    J = link_jacobian(model, q, link)
    H = mass_matrix(model, q)
    return J[:, 6:] - J[:, :6] @ np.linalg.solve(H[:6, :6], H[:6, 6:])


def base_velocity_from_momentum(
    model: Model,
    q: ArrayLike,
    phidot: ArrayLike,
    momentum: ArrayLike | None = None,
    *,
    about: str = 'origin',
) -> np.ndarray:
    """Base velocity ``x0dot = [V0; w0]`` implied by a total momentum (seed 000, eq. 21).

    ``x0dot = H0^-1 ([P; L0] - H0m phidot)`` with ``L0`` about the base CoM.

    Parameters
    ----------
    phidot : (n,) joint rates.
    momentum : (6,) array_like, optional
        ``[P; L]`` (inertial frame) with ``L`` about ``about``; default zero.
    about : {'origin', 'com', 'base'}

    Returns
    -------
    (6,) ndarray ``[V0; w0]``.
    """
    _require_floating(model, 'base_velocity_from_momentum')
    if about not in _ABOUT:
        raise ValueError(f'about: expected one of {_ABOUT}, got {about!r}')
    q = _q(model, q)
    phidot = _vec(phidot, model.n, 'phidot')
    h = np.zeros(6) if momentum is None else _vec(momentum, 6, 'momentum').copy()
    if about != 'base':
        point = np.zeros(3) if about == 'origin' else center_of_mass(model, q)
        # L_point -> L_O -> L_0 (eqs. 12, 17)
        h[3:] += np.cross(point - q[:3], h[:3])
    H = mass_matrix(model, q)
    return np.linalg.solve(H[:6, :6], h - H[:6, 6:] @ phidot)


def base_link_state(
    model: Model, q: ArrayLike, v: ArrayLike | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Pose and velocity of the base *link frame* (what TF and odometry show).

    ``q`` holds the base-body CoM ``r0``; the link frame origin is ``r0 - R c0`` with ``c0``
    the base CoM in the link frame.

    Returns
    -------
    position : (3,) link frame origin, inertial frame [m].
    quaternion : (4,) orientation (x, y, z, w).
    linear_velocity : (3,) velocity of the link frame origin, inertial frame [m/s].
    angular_velocity : (3,) inertial frame [rad/s].
    """
    _require_floating(model, 'base_link_state')
    q = _q(model, q)
    v = np.zeros(model.nv) if v is None else _v(model, v)
    quat = q[3:7] / np.linalg.norm(q[3:7])
    R = np.empty((3, 3))
    K.quat_to_rot(quat, R)
    lever = R @ model.arrays.com[0]
    return q[:3] - lever, quat, v[:3] - np.cross(v[3:6], lever), v[3:6].copy()


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
    position : (3,) base link frame origin, inertial frame [m].
    quaternion : (4,) orientation (x, y, z, w); normalized here (a zero norm is an error).
    linear_velocity : (3,) velocity of the link frame origin, inertial frame [m/s].
    angular_velocity : (3,) inertial frame [rad/s].

    Returns
    -------
    q_base : (7,) ``[r0, Q0]``;  v_base : (6,) ``[V0, w0]``.
    """
    _require_floating(model, 'base_state_from_link')
    p = _vec(position, 3, 'position')
    quat = _vec(quaternion, 4, 'quaternion')
    norm = float(np.linalg.norm(quat))
    if not np.isfinite(norm) or norm < 1e-9:
        raise ValueError(f'quaternion: expected a non-zero (x, y, z, w), got {quat.tolist()}')
    quat = quat / norm
    lin = _vec(linear_velocity, 3, 'linear_velocity')
    w = _vec(angular_velocity, 3, 'angular_velocity')
    R = np.empty((3, 3))
    K.quat_to_rot(quat, R)
    lever = R @ model.arrays.com[0]
    return np.r_[p + lever, quat], np.r_[lin + np.cross(w, lever), w]
