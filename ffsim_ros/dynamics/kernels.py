"""Array kernels of the recursive rigid-body algorithms (numba-compiled when available).

Every quantity here is expressed in the inertial frame Sigma_I, and spatial vectors are taken
at the inertial origin O ("spatial vectors in the ground frame", Featherstone 2008, sec. 5.3)
with the ordering used throughout the package:

* motion vectors ``[v_O; w]`` (3 + 3): ``v_O`` the velocity of the body point that coincides
  with O, ``w`` the angular velocity;
* force vectors ``[f; n_O]``: force and moment about O.

Because every body shares the same frame, composite inertias are plain sums and no spatial
transforms are needed in the recursions. A body's spatial inertia about O is kept in the
compact form ``(m, h, Ib)`` with ``h = m c`` (first moment, kg m) and
``Ib = I_c + m (|c|^2 E - c c^T)`` (kg m^2), i.e. the 6x6 matrix
``[[m E, -h~], [h~, Ib]]`` -- the same blocks as seed 000, eq. 11 (``M E``, ``M r~_g``, ``I_w``).

The kernels take the model's arrays as a :class:`ModelArrays` named tuple; they assume bodies
are numbered so that ``parent[i] < i`` (regular labeling, seed 001 sec. 2).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ._jit import carve, njit, njit_leaf, njit_parallel, prange

# Joint type codes (ModelArrays.jtype).
ROOT_FIXED = 0
ROOT_FREE = 1
REVOLUTE = 2
PRISMATIC = 3
SPHERICAL = 4  # ball joint: unit quaternion (x, y, z, w) in q, child-frame angular velocity in v
UNIVERSAL = 5  # two revolutes, about ``axis`` (fixed in the parent) then ``axis2`` (in the child)


class ModelArrays(NamedTuple):
    """Flat arrays of a :class:`~ffsim_ros.dynamics.model.Model` consumed by the kernels.

    ``nb`` is the number of bodies (base included), ``nv`` the velocity dimension.
    """

    jtype: np.ndarray  #: (nb,) int64 joint type code of the joint into each body
    parent: np.ndarray  #: (nb,) int64 parent body index, -1 for the base
    iq: np.ndarray  #: (nb,) int64 first configuration index of the joint
    iv: np.ndarray  #: (nb,) int64 first velocity index of the joint
    nvj: np.ndarray  #: (nb,) int64 joint velocity dimension
    rot: np.ndarray  #: (nb, 3, 3) joint frame orientation in the parent body frame
    trans: np.ndarray  #: (nb, 3) joint frame origin in the parent body frame [m]
    axis: np.ndarray  #: (nb, 3) unit joint axis in the joint (= child body) frame
    mass: np.ndarray  #: (nb,) body mass [kg]
    com: np.ndarray  #: (nb, 3) body CoM in the body frame [m]
    inertia: np.ndarray  #: (nb, 3, 3) inertia about the CoM, body frame [kg m^2]
    gravity: np.ndarray  #: (3,) gravitational acceleration, inertial frame [m/s^2]
    damping: np.ndarray  #: (nv,) viscous joint damping (0 for base DoFs) [N m s/rad | N s/m]
    friction: np.ndarray  #: (nv,) Coulomb joint friction (0 for base DoFs) [N m | N]
    axis2: np.ndarray  #: (nb, 3) second unit axis of a universal joint, joint frame at q = 0


# ----------------------------------------------------------------------------------------------
# small 3-vector / 3x3 / spatial helpers
# ----------------------------------------------------------------------------------------------
# Inlined into the recursions. They take an array and a row index rather than a view such as
# ``R[i]``: every view made inside a per-body loop costs two atomic reference-count updates
# in the compiled code, which for a 7-DoF robot added up to more than the arithmetic.
# Spatial 6-vectors are passed and returned as tuples of floats (values, no arrays).


@njit_leaf
def _mul33(A: np.ndarray, ia: int, B: np.ndarray, ib: int, out: np.ndarray, io: int) -> None:
    """``out[io] = A[ia] @ B[ib]`` on stacks of 3x3 matrices (``out[io]`` neither input)."""
    for r in range(3):
        a0 = A[ia, r, 0]
        a1 = A[ia, r, 1]
        a2 = A[ia, r, 2]
        for c in range(3):
            out[io, r, c] = a0 * B[ib, 0, c] + a1 * B[ib, 1, c] + a2 * B[ib, 2, c]


@njit_leaf
def _rowdot(A: np.ndarray, ia: int, r: int, X: np.ndarray, ix: int) -> float:
    """``A[ia, r, :] . X[ix, :]``: row ``r`` of the 3x3 ``A[ia]`` times the 3-vector ``X[ix]``."""
    return A[ia, r, 0] * X[ix, 0] + A[ia, r, 1] * X[ix, 1] + A[ia, r, 2] * X[ix, 2]


@njit_leaf
def _quat_rot(q: np.ndarray, iq: int, out: np.ndarray, io: int) -> None:
    """``out[io]``: rotation matrix of the quaternion ``q[iq:iq+4] = (x, y, z, w)``
    (normalized here)."""
    n = np.sqrt(q[iq] * q[iq] + q[iq + 1] * q[iq + 1] + q[iq + 2] * q[iq + 2] + q[iq + 3] ** 2)
    x = q[iq] / n
    y = q[iq + 1] / n
    z = q[iq + 2] / n
    w = q[iq + 3] / n
    out[io, 0, 0] = 1.0 - 2.0 * (y * y + z * z)
    out[io, 0, 1] = 2.0 * (x * y - z * w)
    out[io, 0, 2] = 2.0 * (x * z + y * w)
    out[io, 1, 0] = 2.0 * (x * y + z * w)
    out[io, 1, 1] = 1.0 - 2.0 * (x * x + z * z)
    out[io, 1, 2] = 2.0 * (y * z - x * w)
    out[io, 2, 0] = 2.0 * (x * z - y * w)
    out[io, 2, 1] = 2.0 * (y * z + x * w)
    out[io, 2, 2] = 1.0 - 2.0 * (x * x + y * y)


@njit_leaf
def quat_to_rot(q: np.ndarray, out: np.ndarray) -> None:
    """Rotation matrix (3, 3) into ``out`` of the quaternion ``q = (x, y, z, w)``
    (normalized here)."""
    _quat_rot(q, 0, out.reshape((1, 3, 3)), 0)


@njit_leaf
def _axis_angle(K: np.ndarray, ik: int, angle: float, out: np.ndarray, io: int) -> None:
    """``out[io]``: Rodrigues' formula for the unit axis ``K[ik]`` and an angle [rad]."""
    c = np.cos(angle)
    s = np.sin(angle)
    t = 1.0 - c
    x = K[ik, 0]
    y = K[ik, 1]
    z = K[ik, 2]
    out[io, 0, 0] = c + t * x * x
    out[io, 0, 1] = t * x * y - s * z
    out[io, 0, 2] = t * x * z + s * y
    out[io, 1, 0] = t * x * y + s * z
    out[io, 1, 1] = c + t * y * y
    out[io, 1, 2] = t * y * z - s * x
    out[io, 2, 0] = t * x * z - s * y
    out[io, 2, 1] = t * y * z + s * x
    out[io, 2, 2] = c + t * z * z


@njit_leaf
def _row6(X: np.ndarray, i: int) -> tuple:
    """Row ``X[i]`` of an (n, 6) array as a tuple."""
    return (X[i, 0], X[i, 1], X[i, 2], X[i, 3], X[i, 4], X[i, 5])


@njit_leaf
def _col6(S: np.ndarray, c: int) -> tuple:
    """Column ``S[:, c]`` of a (6, n) array as a tuple."""
    return (S[0, c], S[1, c], S[2, c], S[3, c], S[4, c], S[5, c])


@njit_leaf
def _force_cross(x: tuple, h: tuple) -> tuple:
    """``x x* h``: spatial cross product of the motion ``x = [v; w]`` with the force
    ``h = [f; n]`` (``[w x f; w x n + v x f]``)."""
    return (
        x[4] * h[2] - x[5] * h[1],
        x[5] * h[0] - x[3] * h[2],
        x[3] * h[1] - x[4] * h[0],
        x[4] * h[5] - x[5] * h[4] + x[1] * h[2] - x[2] * h[1],
        x[5] * h[3] - x[3] * h[5] + x[2] * h[0] - x[0] * h[2],
        x[3] * h[4] - x[4] * h[3] + x[0] * h[1] - x[1] * h[0],
    )


# ----------------------------------------------------------------------------------------------
# kinematics
# ----------------------------------------------------------------------------------------------


@njit_leaf
def forward_kinematics(
    m: ModelArrays, q: np.ndarray, R: np.ndarray, p: np.ndarray, T: np.ndarray
) -> None:
    """Body frame poses in the inertial frame (seed 000, eqs. 1-2 down the tree).

    Parameters
    ----------
    m : ModelArrays
    q : (nq,) configuration.
    R : (nb, 3, 3) output, body orientations (body frame -> inertial frame).
    p : (nb, 3) output, body frame origins in the inertial frame [m].
    T : (3, 3, 3) scratch.
    """
    nb = m.parent.shape[0]
    for i in range(nb):
        jt = m.jtype[i]
        if jt == ROOT_FIXED:
            for r in range(3):
                p[i, r] = 0.0
                for c in range(3):
                    R[i, r, c] = 1.0 if r == c else 0.0
        elif jt == ROOT_FREE:
            _quat_rot(q, 3, R, i)
            # q[0:3] is the base CoM r0 (seed 000, eq. 22): the frame origin is r0 - R c0.
            for r in range(3):
                p[i, r] = q[r] - _rowdot(R, i, r, m.com, i)
        else:
            k = m.parent[i]
            _mul33(R, k, m.rot, i, T, 0)  # joint frame orientation
            for r in range(3):
                p[i, r] = p[k, r] + _rowdot(R, k, r, m.trans, i)
            iq = m.iq[i]
            if jt == REVOLUTE:
                _axis_angle(m.axis, i, q[iq], T, 1)
                _mul33(T, 0, T, 1, R, i)
            elif jt == SPHERICAL:
                _quat_rot(q, iq, T, 1)
                _mul33(T, 0, T, 1, R, i)
            elif jt == UNIVERSAL:
                _axis_angle(m.axis, i, q[iq], T, 1)
                _mul33(T, 0, T, 1, T, 2)
                _axis_angle(m.axis2, i, q[iq + 1], T, 1)
                _mul33(T, 2, T, 1, R, i)
            else:  # PRISMATIC
                qi = q[iq]
                for r in range(3):
                    p[i, r] += _rowdot(T, 0, r, m.axis, i) * qi
                    for c in range(3):
                        R[i, r, c] = T[0, r, c]


@njit_leaf
def _rotation_column(
    P: np.ndarray, i: int, kx: float, ky: float, kz: float, S: np.ndarray, c: int
) -> None:
    """``S[:, c] = [o x k; k]``: rotation about the world axis ``k`` through ``o = P[i]``."""
    S[0, c] = P[i, 1] * kz - P[i, 2] * ky
    S[1, c] = P[i, 2] * kx - P[i, 0] * kz
    S[2, c] = P[i, 0] * ky - P[i, 1] * kx
    S[3, c] = kx
    S[4, c] = ky
    S[5, c] = kz


@njit_leaf
def motion_subspace(
    m: ModelArrays, q: np.ndarray, R: np.ndarray, p: np.ndarray, S: np.ndarray
) -> None:
    """Columns of the joint motion subspaces in the inertial frame at O.

    For the free base, ``S[:, 0:6]`` maps ``[V0; w0]`` (base CoM velocity, inertial angular
    velocity; seed 000, eq. 22) to the base's spatial velocity at O:
    ``v_O = V0 + r0 x w0``. A revolute joint with world axis ``k`` through ``p_i`` gives
    ``[p_i x k; k]`` (seed 000, eqs. 3-4: ``k x (r - p_i)`` at a point r); a prismatic one
    ``[k; 0]``. A spherical joint has three such rotation columns about the child frame's
    axes through the joint centre (seed 001, sec. 3.1, ball-and-socket: the relative angular
    velocity in the child frame); a universal joint two, about the first axis (fixed in the
    parent) and the second (fixed in the child; seed 001, sec. 3.2).

    Parameters
    ----------
    S : (6, nv) output; every column belongs to one joint and is written in full.
    """
    nb = m.parent.shape[0]
    for i in range(nb):
        jt = m.jtype[i]
        c0 = m.iv[i]
        if jt == ROOT_FIXED:
            continue
        if jt == ROOT_FREE:
            for c in range(6):
                for r in range(6):
                    S[r, c0 + c] = 0.0
            for r in range(3):
                S[r, c0 + r] = 1.0
                S[3 + r, c0 + 3 + r] = 1.0
            # skew(r0) block: v_O = V0 + r0 x w0
            S[0, c0 + 4] = -q[2]
            S[0, c0 + 5] = q[1]
            S[1, c0 + 3] = q[2]
            S[1, c0 + 5] = -q[0]
            S[2, c0 + 3] = -q[1]
            S[2, c0 + 4] = q[0]
        elif jt == SPHERICAL:
            # child-frame axes through the joint centre (v holds the child-frame rate)
            for c in range(3):
                _rotation_column(p, i, R[i, 0, c], R[i, 1, c], R[i, 2, c], S, c0 + c)
        elif jt == UNIVERSAL:
            # first axis fixed in the parent (R_parent rot_i axis_i), second in the child
            k = m.parent[i]
            a0 = _rowdot(m.rot, i, 0, m.axis, i)
            a1 = _rowdot(m.rot, i, 1, m.axis, i)
            a2 = _rowdot(m.rot, i, 2, m.axis, i)
            kx = R[k, 0, 0] * a0 + R[k, 0, 1] * a1 + R[k, 0, 2] * a2
            ky = R[k, 1, 0] * a0 + R[k, 1, 1] * a1 + R[k, 1, 2] * a2
            kz = R[k, 2, 0] * a0 + R[k, 2, 1] * a1 + R[k, 2, 2] * a2
            _rotation_column(p, i, kx, ky, kz, S, c0)
            kx = _rowdot(R, i, 0, m.axis2, i)
            ky = _rowdot(R, i, 1, m.axis2, i)
            kz = _rowdot(R, i, 2, m.axis2, i)
            _rotation_column(p, i, kx, ky, kz, S, c0 + 1)
        else:
            kx = _rowdot(R, i, 0, m.axis, i)
            ky = _rowdot(R, i, 1, m.axis, i)
            kz = _rowdot(R, i, 2, m.axis, i)
            if jt == REVOLUTE:
                _rotation_column(p, i, kx, ky, kz, S, c0)
            else:
                S[0, c0] = kx
                S[1, c0] = ky
                S[2, c0] = kz
                S[3, c0] = 0.0
                S[4, c0] = 0.0
                S[5, c0] = 0.0


@njit_leaf
def world_inertias(
    m: ModelArrays,
    R: np.ndarray,
    p: np.ndarray,
    mw: np.ndarray,
    hw: np.ndarray,
    Iw: np.ndarray,
    T: np.ndarray,
) -> None:
    """Spatial inertias about O in compact form ``(m, h, Ib)`` (see the module docstring).

    Parameters
    ----------
    mw : (nb,) output [kg];  hw : (nb, 3) output [kg m];  Iw : (nb, 3, 3) output [kg m^2].
    T : (1+, 3, 3) scratch.
    """
    nb = m.parent.shape[0]
    for i in range(nb):
        mi = m.mass[i]
        cw = (
            p[i, 0] + _rowdot(R, i, 0, m.com, i),
            p[i, 1] + _rowdot(R, i, 1, m.com, i),
            p[i, 2] + _rowdot(R, i, 2, m.com, i),
        )
        # R Ic R^T
        for r in range(3):
            for c in range(3):
                T[0, r, c] = (
                    m.inertia[i, r, 0] * R[i, c, 0]
                    + m.inertia[i, r, 1] * R[i, c, 1]
                    + m.inertia[i, r, 2] * R[i, c, 2]
                )
        _mul33(R, i, T, 0, Iw, i)
        c2 = cw[0] * cw[0] + cw[1] * cw[1] + cw[2] * cw[2]
        for r in range(3):
            hw[i, r] = mi * cw[r]
            for c in range(3):
                Iw[i, r, c] += mi * ((c2 if r == c else 0.0) - cw[r] * cw[c])
        mw[i] = mi


@njit_leaf
def _inertia_times(mi: float, h: np.ndarray, Ib: np.ndarray, i: int, x: tuple) -> tuple:
    """``I x`` for the spatial inertia ``(mi, h[i], Ib[i])`` and the motion vector ``x``
    (6-tuple ``[v; w]``): the force ``[m v + w x h; h x v + Ib w]``, a 6-tuple."""
    h0 = h[i, 0]
    h1 = h[i, 1]
    h2 = h[i, 2]
    return (
        mi * x[0] + (x[4] * h2 - x[5] * h1),
        mi * x[1] + (x[5] * h0 - x[3] * h2),
        mi * x[2] + (x[3] * h1 - x[4] * h0),
        (h1 * x[2] - h2 * x[1]) + Ib[i, 0, 0] * x[3] + Ib[i, 0, 1] * x[4] + Ib[i, 0, 2] * x[5],
        (h2 * x[0] - h0 * x[2]) + Ib[i, 1, 0] * x[3] + Ib[i, 1, 1] * x[4] + Ib[i, 1, 2] * x[5],
        (h0 * x[1] - h1 * x[0]) + Ib[i, 2, 0] * x[3] + Ib[i, 2, 1] * x[4] + Ib[i, 2, 2] * x[5],
    )


@njit
def kinematics(m: ModelArrays, q: np.ndarray, nv: int):
    """Poses, motion subspaces and world inertias in one pass.

    Returns
    -------
    R : (nb, 3, 3); p : (nb, 3); S : (6, nv); mw : (nb,); hw : (nb, 3); Iw : (nb, 3, 3)
    """
    nb = m.parent.shape[0]
    R, p, S, mw, hw, Iw, T = kinematics_views(np.empty(kinematics_ws_size(nb, nv)), nb, nv)
    kinematics_into(m, q, R, p, S, mw, hw, Iw, T)
    return R, p, S, mw, hw, Iw


# ----------------------------------------------------------------------------------------------
# workspaces
# ----------------------------------------------------------------------------------------------
# The entry points allocate one flat float64 workspace per call (per chunk of rows in the
# batched ones) and carve every temporary out of it: a dozen small allocations cost more than
# the arithmetic of a 7-DoF robot. Nothing in a workspace is assumed zero on entry.


@njit
def kinematics_ws_size(nb: int, nv: int) -> int:
    """Length of the workspace of :func:`kinematics_views` (``25 nb + 6 nv + 27``)."""
    return 25 * nb + 6 * nv + 27


@njit
def kinematics_views(ws: np.ndarray, nb: int, nv: int):
    """The arrays of :func:`kinematics` as views on ``ws[:kinematics_ws_size(nb, nv)]``.

    Returns
    -------
    R : (nb, 3, 3); p : (nb, 3); S : (6, nv); mw : (nb,); hw : (nb, 3); Iw : (nb, 3, 3);
    T : (3, 3, 3) scratch of :func:`kinematics_into`.
    """
    R = carve(ws, 0, (nb, 3, 3))
    o = 9 * nb
    p = carve(ws, o, (nb, 3))
    o += 3 * nb
    S = carve(ws, o, (6, nv))
    o += 6 * nv
    mw = ws[o : o + nb]
    o += nb
    hw = carve(ws, o, (nb, 3))
    o += 3 * nb
    Iw = carve(ws, o, (nb, 3, 3))
    o += 9 * nb
    T = carve(ws, o, (3, 3, 3))
    return R, p, S, mw, hw, Iw, T


@njit
def kinematics_into(
    m: ModelArrays,
    q: np.ndarray,
    R: np.ndarray,
    p: np.ndarray,
    S: np.ndarray,
    mw: np.ndarray,
    hw: np.ndarray,
    Iw: np.ndarray,
    T: np.ndarray,
) -> None:
    """:func:`kinematics` into caller-provided arrays (same shapes; ``T`` (3, 3, 3) scratch)."""
    forward_kinematics(m, q, R, p, T)
    motion_subspace(m, q, R, p, S)
    world_inertias(m, R, p, mw, hw, Iw, T)


@njit
def rnea_ws_size(nb: int) -> int:
    """Length of the scratch of :func:`rnea` (``18 nb``)."""
    return 18 * nb


@njit
def id_ws_size(nb: int, nv: int) -> int:
    """Workspace of :func:`inverse_dynamics_into`: kinematics, :func:`rnea`, friction."""
    return kinematics_ws_size(nb, nv) + rnea_ws_size(nb) + nv


@njit
def aba_ws_size(nb: int, nv: int) -> int:
    """Length of the workspace of :func:`aba_into` (``163 nb + 6 nv + 153``)."""
    return kinematics_ws_size(nb, nv) + 138 * nb + 126


@njit
def fd_ws_size(nb: int, nv: int) -> int:
    """Workspace of :func:`forward_dynamics_into`: :func:`aba_into` plus one (nv,) force."""
    return aba_ws_size(nb, nv) + nv


# ----------------------------------------------------------------------------------------------
# dynamics
# ----------------------------------------------------------------------------------------------


@njit
def crba(
    m: ModelArrays, S: np.ndarray, mw: np.ndarray, hw: np.ndarray, Iw: np.ndarray, H: np.ndarray
) -> None:
    """Composite-rigid-body algorithm: the generalized inertia matrix (seed 000, eqs. 24-27).

    ``H[a, b] = S_a^T Ic_i S_b`` for DoF ``a`` of body ``i`` and DoF ``b`` of ``i`` or one of
    its ancestors, with ``Ic_i`` the composite inertia of the subtree rooted at ``i`` (a plain
    sum, all inertias being about O).

    Parameters
    ----------
    S : (6, nv) motion subspaces (:func:`motion_subspace`).
    mw, hw, Iw : (nb,), (nb, 3), (nb, 3, 3)
        Body inertias about O (:func:`world_inertias`); overwritten in place by the composite
        inertias ``(mc, hc, Ic)`` of the subtrees [kg, kg m, kg m^2].
    H : (nv, nv) output, zero on entry; entries of DoFs on different branches stay zero.
    """
    nb = m.parent.shape[0]
    for i in range(nb - 1, -1, -1):
        for a in range(m.iv[i], m.iv[i] + m.nvj[i]):
            F = _inertia_times(mw[i], hw, Iw, i, _col6(S, a))
            j = i
            while j >= 0:
                for b in range(m.iv[j], m.iv[j] + m.nvj[j]):
                    val = 0.0
                    for r in range(6):
                        val += S[r, b] * F[r]
                    H[a, b] = val
                    H[b, a] = val
                j = m.parent[j]
        k = m.parent[i]
        if k >= 0:
            mw[k] += mw[i]
            for r in range(3):
                hw[k, r] += hw[i, r]
                for c in range(3):
                    Iw[k, r, c] += Iw[i, r, c]


@njit_leaf
def _joint_velocity(S: np.ndarray, iv: int, nvj: int, v: np.ndarray) -> tuple:
    """``S_i qdot_i``: the spatial velocity (6-tuple, at O) of the joint whose velocity
    coordinates are ``v[iv : iv + nvj]``."""
    s0 = 0.0
    s1 = 0.0
    s2 = 0.0
    s3 = 0.0
    s4 = 0.0
    s5 = 0.0
    for c in range(iv, iv + nvj):
        vc = v[c]
        s0 += S[0, c] * vc
        s1 += S[1, c] * vc
        s2 += S[2, c] * vc
        s3 += S[3, c] * vc
        s4 += S[4, c] * vc
        s5 += S[5, c] * vc
    return (s0, s1, s2, s3, s4, s5)


@njit_leaf
def _velocity_product(
    jt: int, iv: int, vi: tuple, sv: tuple, S: np.ndarray, v: np.ndarray
) -> tuple:
    """Velocity-product acceleration ``c_i = Sdot_i qdot_i`` of the joint into body ``i``.

    Parameters
    ----------
    jt : joint type code;  iv : first velocity index of the joint.
    vi : 6-tuple, body ``i``'s spatial velocity at O (joint ``i`` included).
    sv : 6-tuple, joint ``i``'s spatial velocity ``S_i qdot_i`` at O.
    S : (6, nv) motion subspaces (:func:`motion_subspace`).
    v : (nv,) generalized velocity.

    Returns
    -------
    6-tuple ``[lin; ang]`` at O, inertial frame [m/s^2, rad/s^2].

    Columns fixed in the child body move with it: ``Sdot qdot = v_i x (S qdot)`` (revolute,
    prismatic, spherical; equal to ``v_parent x (S qdot)``). A universal joint's first column
    is fixed in the parent and its second in the child, which adds
    ``(S_1 qdot_1) x (S_2 qdot_2)``.
    """
    if jt == ROOT_FREE:
        # d/dt (V0 + r0 x w0) = dV0 + r0 x dw0 + V0 x w0  (S a gives the first two terms)
        return (
            v[iv + 1] * v[iv + 5] - v[iv + 2] * v[iv + 4],
            v[iv + 2] * v[iv + 3] - v[iv] * v[iv + 5],
            v[iv] * v[iv + 4] - v[iv + 1] * v[iv + 3],
            0.0,
            0.0,
            0.0,
        )
    if jt == ROOT_FIXED:
        return (0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
    # Sdot qdot = v_i x (S qdot)  (motion cross product, [lin; ang] ordering)
    c = _motion_cross(vi, sv)
    if jt == UNIVERSAL:
        d = _motion_cross(_scaled(_col6(S, iv), v[iv]), _scaled(_col6(S, iv + 1), v[iv + 1]))
        return (c[0] + d[0], c[1] + d[1], c[2] + d[2], c[3] + d[3], c[4] + d[4], c[5] + d[5])
    return c


@njit_leaf
def _motion_cross(x: tuple, y: tuple) -> tuple:
    """``x x y``: spatial cross product of two motion vectors ``[v; w]`` (6-tuples):
    ``[w_x x v_y + v_x x w_y; w_x x w_y]``."""
    return (
        x[4] * y[2] - x[5] * y[1] + x[1] * y[5] - x[2] * y[4],
        x[5] * y[0] - x[3] * y[2] + x[2] * y[3] - x[0] * y[5],
        x[3] * y[1] - x[4] * y[0] + x[0] * y[4] - x[1] * y[3],
        x[4] * y[5] - x[5] * y[4],
        x[5] * y[3] - x[3] * y[5],
        x[3] * y[4] - x[4] * y[3],
    )


@njit_leaf
def _scaled(x: tuple, a: float) -> tuple:
    """The 6-tuple ``a x``."""
    return (a * x[0], a * x[1], a * x[2], a * x[3], a * x[4], a * x[5])


@njit_leaf
def rnea(
    m: ModelArrays,
    q: np.ndarray,
    v: np.ndarray,
    a: np.ndarray,
    S: np.ndarray,
    mw: np.ndarray,
    hw: np.ndarray,
    Iw: np.ndarray,
    fext: np.ndarray,
    gravity_scale: float,
    tau: np.ndarray,
    ws: np.ndarray,
) -> None:
    """Recursive Newton-Euler inverse dynamics in the inertial frame.

    Solves ``H a + c = Q + J^T f_ext`` for ``Q`` (seed 000, eqs. 39/41 with ``F_c = f_ext``).
    With ``a = 0`` the result is ``c - J^T f_ext`` (bias forces, eq. 38). Gravity enters as
    a fictitious base acceleration ``-g`` (scaled by ``gravity_scale``, 0 or 1).

    Parameters
    ----------
    a : (nv,) generalized acceleration, or an empty array for ``a = 0`` (the bias forces
        ``nle``: the ``S a`` terms are skipped).
    fext : (nb, 6) external wrenches on each body, ``[f; n_O]`` about O, inertial frame; or an
        empty (0, 6) array when there are none.
    tau : (nv,) output generalized force: ``[F; T]`` at the base CoM then joint efforts.
    ws : (rnea_ws_size(nb),) scratch.
    """
    nb = m.parent.shape[0]
    vel = carve(ws, 0, (nb, 6))
    acc = carve(ws, 6 * nb, (nb, 6))
    f = carve(ws, 12 * nb, (nb, 6))
    with_a = a.shape[0] > 0
    with_fext = fext.shape[0] > 0
    g = m.gravity
    for i in range(nb):
        k = m.parent[i]
        if k >= 0:
            for r in range(6):
                vel[i, r] = vel[k, r]
                acc[i, r] = acc[k, r]
        else:
            for r in range(3):
                vel[i, r] = 0.0
                vel[i, 3 + r] = 0.0
                acc[i, r] = -gravity_scale * g[r]
                acc[i, 3 + r] = 0.0
        iv = m.iv[i]
        sv = _joint_velocity(S, iv, m.nvj[i], v)
        if with_a:
            for c in range(iv, iv + m.nvj[i]):
                ac = a[c]
                for r in range(6):
                    acc[i, r] += S[r, c] * ac
        for r in range(6):
            vel[i, r] += sv[r]
        vi = _row6(vel, i)
        cb = _velocity_product(m.jtype[i], iv, vi, sv, S, v)
        for r in range(6):
            acc[i, r] += cb[r]
        # f = I a + v x* (I v) - f_ext
        fa = _inertia_times(mw[i], hw, Iw, i, _row6(acc, i))
        fv = _force_cross(vi, _inertia_times(mw[i], hw, Iw, i, vi))
        for r in range(6):
            f[i, r] = fa[r] + fv[r]
        if with_fext:
            for r in range(6):
                f[i, r] -= fext[i, r]
    for i in range(nb - 1, -1, -1):
        for c in range(m.iv[i], m.iv[i] + m.nvj[i]):
            val = 0.0
            for r in range(6):
                val += S[r, c] * f[i, r]
            tau[c] = val
        k = m.parent[i]
        if k >= 0:
            for r in range(6):
                f[k, r] += f[i, r]


@njit
def inverse_dynamics_into(
    m: ModelArrays,
    q: np.ndarray,
    v: np.ndarray,
    a: np.ndarray,
    fext: np.ndarray,
    with_friction: bool,
    out: np.ndarray,
    ws: np.ndarray,
) -> None:
    """Kinematics, :func:`rnea` (gravity included) and, when enabled, minus the friction.

    Parameters
    ----------
    a : (nv,) or empty for ``a = 0``;  fext : (nb, 6) or empty (0, 6), as in :func:`rnea`.
    out : (nv,) output generalized force [N, N m].
    ws : (id_ws_size(nb, nv),) scratch.
    """
    nb = m.parent.shape[0]
    nv = v.shape[0]
    R, p, S, mw, hw, Iw, T = kinematics_views(ws, nb, nv)
    o = kinematics_ws_size(nb, nv)
    kinematics_into(m, q, R, p, S, mw, hw, Iw, T)
    rnea(m, q, v, a, S, mw, hw, Iw, fext, 1.0, out, ws[o : o + rnea_ws_size(nb)])
    if with_friction:
        o += rnea_ws_size(nb)
        ff = ws[o : o + nv]
        joint_friction(m, v, ff)
        for c in range(nv):
            out[c] -= ff[c]


@njit
def cholesky_solve(H: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Solve ``H x = b`` for symmetric positive definite ``H`` (n, n) by Cholesky.

    Raises ``ValueError`` (in nopython mode: a generic error) if ``H`` is not positive
    definite, which only happens for a degenerate model or a non-finite state. ``H`` and
    ``b`` are left as they are (:func:`_cholesky_solve_inplace` on copies).
    """
    A = H.copy()
    x = b.copy()
    _cholesky_solve_inplace(A, x)
    return x


@njit
def _cholesky_solve_inplace(A: np.ndarray, x: np.ndarray) -> None:
    """Solve ``A y = x`` in place for symmetric positive definite ``A`` (n, n).

    ``A``'s lower triangle is overwritten by its Cholesky factor and ``x`` (n,) by ``y``;
    raises ``ValueError`` like :func:`cholesky_solve`.
    """
    n = A.shape[0]
    for j in range(n):
        s = A[j, j]
        for k in range(j):
            s -= A[j, k] * A[j, k]
        if not s > 0.0:
            raise ValueError('mass matrix is not positive definite')
        d = np.sqrt(s)
        A[j, j] = d
        for i in range(j + 1, n):
            s = A[i, j]
            for k in range(j):
                s -= A[i, k] * A[j, k]
            A[i, j] = s / d
    for i in range(n):
        s = x[i]
        for k in range(i):
            s -= A[i, k] * x[k]
        x[i] = s / A[i, i]
    for i in range(n - 1, -1, -1):
        s = x[i]
        for k in range(i + 1, n):
            s -= A[k, i] * x[k]
        x[i] = s / A[i, i]


@njit_leaf
def joint_friction(m: ModelArrays, v: np.ndarray, out: np.ndarray) -> None:
    """Generalized friction forces F_f (seed 000, eq. 41): viscous plus regularized Coulomb.

    ``F_f = -d qdot - f_c tanh(qdot / eps)`` with ``eps = 1e-3`` (rad/s or m/s), so the
    Coulomb term is smooth and the equations stay integrable by explicit methods.
    """
    for i in range(v.shape[0]):
        out[i] = -m.damping[i] * v[i] - m.friction[i] * np.tanh(v[i] / 1e-3)


@njit
def forward_dynamics(
    m: ModelArrays,
    q: np.ndarray,
    v: np.ndarray,
    tau: np.ndarray,
    fext: np.ndarray,
    with_friction: bool,
) -> np.ndarray:
    """Accelerations by :func:`aba`, with the joint friction of eq. 41 when enabled.

    Parameters
    ----------
    tau : (nv,) generalized force ``[F_b; tau]``.
    fext : (nb, 6) body wrenches about O, or an empty (0, 6) array for none.

    Returns
    -------
    (nv,) accelerations.
    """
    nv = v.shape[0]
    out = np.empty(nv)
    ws = np.empty(fd_ws_size(m.parent.shape[0], nv))
    forward_dynamics_into(m, q, v, tau, fext, with_friction, out, ws)
    return out


@njit
def forward_dynamics_into(
    m: ModelArrays,
    q: np.ndarray,
    v: np.ndarray,
    tau: np.ndarray,
    fext: np.ndarray,
    with_friction: bool,
    out: np.ndarray,
    ws: np.ndarray,
) -> None:
    """:func:`forward_dynamics` into ``out`` (nv,), with the scratch ``ws`` (fd_ws_size,)."""
    nv = v.shape[0]
    if with_friction:
        o = aba_ws_size(m.parent.shape[0], nv)
        gen = ws[o : o + nv]
        joint_friction(m, v, gen)
        for c in range(nv):
            gen[c] += tau[c]
        aba_into(m, q, v, gen, fext, out, ws)
    else:
        aba_into(m, q, v, tau, fext, out, ws)


@njit
def forward_dynamics_crba(
    m: ModelArrays,
    q: np.ndarray,
    v: np.ndarray,
    tau: np.ndarray,
    fext: np.ndarray,
    with_friction: bool,
) -> np.ndarray:
    """``a = H^-1 (Q - c)`` with H from :func:`crba`, c from :func:`rnea` (seed 000, eq. 39).

    O(n^3); the reference the O(n) :func:`aba` is checked against.

    Parameters
    ----------
    tau : (nv,) generalized force ``[F_b; tau]``.
    fext : (nb, 6) body wrenches about O, or an empty (0, 6) array for none.
    """
    nb = m.parent.shape[0]
    nv = v.shape[0]
    ws = np.empty(id_ws_size(nb, nv))
    c = np.empty(nv)
    # c - J^T f_ext + F_f (friction included by inverse_dynamics_into as -F_f)
    inverse_dynamics_into(m, q, v, v[0:0], fext, with_friction, c, ws)
    R, p, S, mw, hw, Iw, T = kinematics_views(ws, nb, nv)
    H = np.zeros((nv, nv))
    crba(m, S, mw, hw, Iw, H)  # (after rnea: crba turns the body inertias into composites)
    return cholesky_solve(H, tau - c)


@njit
def spatial_momentum(
    m: ModelArrays, v: np.ndarray, S: np.ndarray, mw: np.ndarray, hw: np.ndarray, Iw: np.ndarray
) -> np.ndarray:
    """``[P; L_O]`` = sum of body momenta about O (seed 000, eqs. 6-7)."""
    nb = m.parent.shape[0]
    vel = np.zeros((nb, 6))
    out = np.zeros(6)
    for i in range(nb):
        k = m.parent[i]
        sv = _joint_velocity(S, m.iv[i], m.nvj[i], v)
        for r in range(6):
            vel[i, r] = (vel[k, r] if k >= 0 else 0.0) + sv[r]
        h = _inertia_times(mw[i], hw, Iw, i, _row6(vel, i))
        for r in range(6):
            out[r] += h[r]
    return out


# ----------------------------------------------------------------------------------------------
# integration on the configuration manifold R^3 x S^3 x R^n
# ----------------------------------------------------------------------------------------------


@njit
def integrate(m: ModelArrays, q: np.ndarray, v: np.ndarray, dt: float) -> np.ndarray:
    """``q (+) v dt``: exact flow of a constant ``v`` on the configuration manifold.

    The base CoM moves along ``V0 dt``; the attitude turns by the inertial-frame rotation
    vector ``w0 dt`` (left multiplication, ``Q <- exp(w0 dt) * Q0``), normalized; a spherical
    joint turns by its child-frame ``w dt`` (right multiplication, ``Q <- Q * exp(w dt)``);
    the other joint coordinates add ``phidot dt``.
    """
    out = q.copy()
    nb = m.parent.shape[0]
    for i in range(nb):
        jt = m.jtype[i]
        if jt == ROOT_FREE:
            c = m.iv[i]
            for r in range(3):
                out[r] = q[r] + v[c + r] * dt
            wx = v[c + 3] * dt
            wy = v[c + 4] * dt
            wz = v[c + 5] * dt
            th = np.sqrt(wx * wx + wy * wy + wz * wz)
            if th < 1e-8:
                sc = 0.5 - th * th / 48.0  # sin(th/2)/th
            else:
                sc = np.sin(0.5 * th) / th
            dx = wx * sc
            dy = wy * sc
            dz = wz * sc
            dw = np.cos(0.5 * th)
            x = q[3]
            y = q[4]
            z = q[5]
            w = q[6]
            # Hamilton product d * q, quaternions (x, y, z, w)
            nx = dw * x + dx * w + dy * z - dz * y
            ny = dw * y - dx * z + dy * w + dz * x
            nz = dw * z + dx * y - dy * x + dz * w
            nw = dw * w - dx * x - dy * y - dz * z
            n = np.sqrt(nx * nx + ny * ny + nz * nz + nw * nw)
            out[3] = nx / n
            out[4] = ny / n
            out[5] = nz / n
            out[6] = nw / n
        elif jt == SPHERICAL:
            _quat_right_exp(q, m.iq[i], v, m.iv[i], dt, out)
        elif jt != ROOT_FIXED:
            for a in range(m.nvj[i]):
                out[m.iq[i] + a] = q[m.iq[i] + a] + v[m.iv[i] + a] * dt
    return out


@njit
def _quat_right_exp(
    q: np.ndarray, iq: int, v: np.ndarray, iv: int, dt: float, out: np.ndarray
) -> None:
    """``out[iq:iq+4] = Q * exp(w dt)``, normalized: the child-frame rate ``w = v[iv:iv+3]``."""
    wx = v[iv] * dt
    wy = v[iv + 1] * dt
    wz = v[iv + 2] * dt
    th = np.sqrt(wx * wx + wy * wy + wz * wz)
    if th < 1e-8:
        sc = 0.5 - th * th / 48.0
    else:
        sc = np.sin(0.5 * th) / th
    dx = wx * sc
    dy = wy * sc
    dz = wz * sc
    dw = np.cos(0.5 * th)
    x = q[iq]
    y = q[iq + 1]
    z = q[iq + 2]
    w = q[iq + 3]
    # Hamilton product q * d, quaternions (x, y, z, w)
    nx = w * dx + x * dw + y * dz - z * dy
    ny = w * dy - x * dz + y * dw + z * dx
    nz = w * dz + x * dy - y * dx + z * dw
    nw = w * dw - x * dx - y * dy - z * dz
    n = np.sqrt(nx * nx + ny * ny + nz * nz + nw * nw)
    out[iq] = nx / n
    out[iq + 1] = ny / n
    out[iq + 2] = nz / n
    out[iq + 3] = nw / n


@njit
def chart_rate(m: ModelArrays, theta: np.ndarray, v: np.ndarray) -> np.ndarray:
    """``dtheta/dt`` of the local coordinates ``q = integrate(q_ref, theta, 1)``.

    Only the attitudes differ from ``v``: ``dtheta = J_l(theta)^-1 w0`` for the base, with
    ``J_l`` the left Jacobian of SO(3) (``J_l^-1 = E - th~/2 + (1/|th|^2 -
    (1+cos|th|)/(2|th| sin|th|)) th~^2``), and ``J_r(theta)^-1 w`` (``+th~/2``) for a spherical
    joint, whose quaternion is multiplied on the right (``Q exp(theta)``).
    This is what makes :func:`rk4_step` a 4th-order Runge-Kutta-Munthe-Kaas method.
    """
    out = v.copy()
    nb = m.parent.shape[0]
    for i in range(nb):
        jt = m.jtype[i]
        if jt == ROOT_FREE or jt == SPHERICAL:
            # the base turns by left multiplication (inertial-frame w0): J_l^-1 has -th~/2;
            # a ball joint by right multiplication (child-frame w): J_r^-1 has +th~/2
            half = -0.5 if jt == ROOT_FREE else 0.5
            c = m.iv[i] + 3 if jt == ROOT_FREE else m.iv[i]
            tx = theta[c]
            ty = theta[c + 1]
            tz = theta[c + 2]
            wx = v[c]
            wy = v[c + 1]
            wz = v[c + 2]
            t2 = tx * tx + ty * ty + tz * tz
            t = np.sqrt(t2)
            if t < 1e-4:
                k = 1.0 / 12.0 + t2 / 720.0
            else:
                k = 1.0 / t2 - (1.0 + np.cos(t)) / (2.0 * t * np.sin(t))
            # th x w and th x (th x w)
            cx = ty * wz - tz * wy
            cy = tz * wx - tx * wz
            cz = tx * wy - ty * wx
            ccx = ty * cz - tz * cy
            ccy = tz * cx - tx * cz
            ccz = tx * cy - ty * cx
            out[c] = wx + half * cx + k * ccx
            out[c + 1] = wy + half * cy + k * ccy
            out[c + 2] = wz + half * cz + k * ccz
    return out


@njit
def rk4_step(
    m: ModelArrays,
    q: np.ndarray,
    v: np.ndarray,
    tau: np.ndarray,
    fext: np.ndarray,
    with_friction: bool,
    dt: float,
):
    """One classical RK4 step in the local chart at ``q`` (Runge-Kutta-Munthe-Kaas).

    ``tau`` (generalized force) and ``fext`` (body wrenches about O) are held constant.

    Returns
    -------
    q_next : (nq,) ;  v_next : (nv,)
    """
    nv = v.shape[0]
    th = np.zeros(nv)
    a1 = forward_dynamics(m, q, v, tau, fext, with_friction)
    d1 = chart_rate(m, th, v)
    th2 = 0.5 * dt * d1
    v2 = v + 0.5 * dt * a1
    a2 = forward_dynamics(m, integrate(m, q, th2, 1.0), v2, tau, fext, with_friction)
    d2 = chart_rate(m, th2, v2)
    th3 = 0.5 * dt * d2
    v3 = v + 0.5 * dt * a2
    a3 = forward_dynamics(m, integrate(m, q, th3, 1.0), v3, tau, fext, with_friction)
    d3 = chart_rate(m, th3, v3)
    th4 = dt * d3
    v4 = v + dt * a3
    a4 = forward_dynamics(m, integrate(m, q, th4, 1.0), v4, tau, fext, with_friction)
    d4 = chart_rate(m, th4, v4)
    theta = (dt / 6.0) * (d1 + 2.0 * d2 + 2.0 * d3 + d4)
    v_next = v + (dt / 6.0) * (a1 + 2.0 * a2 + 2.0 * a3 + a4)
    return integrate(m, q, theta, 1.0), v_next


# ----------------------------------------------------------------------------------------------
# articulated-body algorithm (O(n) forward dynamics)
# ----------------------------------------------------------------------------------------------


@njit_leaf
def _spatial_inertia_matrix(
    mi: float, h: np.ndarray, Ib: np.ndarray, i: int, out: np.ndarray
) -> None:
    """``out[i]``: the dense 6x6 ``[[m E, -h~], [h~, Ib]]`` of the compact inertia
    ``(mi, h[i], Ib[i])``."""
    for r in range(6):
        for c in range(6):
            out[i, r, c] = 0.0
    for r in range(3):
        out[i, r, r] = mi
        for c in range(3):
            out[i, 3 + r, 3 + c] = Ib[i, r, c]
    # h~ in the lower left block; the upper right one is its transpose, -h~
    out[i, 4, 0] = h[i, 2]
    out[i, 5, 0] = -h[i, 1]
    out[i, 3, 1] = -h[i, 2]
    out[i, 5, 1] = h[i, 0]
    out[i, 3, 2] = h[i, 1]
    out[i, 4, 2] = -h[i, 0]
    for r in range(3):
        for c in range(3):
            out[i, c, 3 + r] = out[i, 3 + r, c]


@njit
def aba(
    m: ModelArrays,
    q: np.ndarray,
    v: np.ndarray,
    tau: np.ndarray,
    fext: np.ndarray,
) -> np.ndarray:
    """Articulated-body algorithm (Featherstone 2008, ch. 7); see :func:`aba_into`.

    Returns
    -------
    (nv,) accelerations.
    """
    nv = v.shape[0]
    qdd = np.empty(nv)
    aba_into(m, q, v, tau, fext, qdd, np.empty(aba_ws_size(m.parent.shape[0], nv)))
    return qdd


@njit
def aba_into(
    m: ModelArrays,
    q: np.ndarray,
    v: np.ndarray,
    tau: np.ndarray,
    fext: np.ndarray,
    qdd: np.ndarray,
    ws: np.ndarray,
) -> None:
    """Articulated-body algorithm (Featherstone 2008, ch. 7) in the inertial frame.

    Same result as ``H^-1 (tau - c)`` (seed 000, eq. 39) in O(n) operations. All articulated
    inertias and bias forces are expressed about O in the inertial frame, so no spatial
    transforms appear. The free base is a 6-DoF joint with motion subspace ``S_0`` (see
    :func:`motion_subspace`) and velocity-product term ``[V0 x w0; 0]``; gravity is the
    fictitious root acceleration ``[-g; 0]``.

    Parameters
    ----------
    tau : (nv,) generalized force ``[F_b; tau]``.
    fext : (nb, 6) body wrenches about O, or an empty (0, 6) array for none.
    qdd : (nv,) output accelerations.
    ws : (aba_ws_size(nb, nv),) scratch (nothing assumed on entry).
    """
    nb = m.parent.shape[0]
    nv = v.shape[0]
    # every array of the three passes is a view on the one workspace (allocation dominates
    # the cost of this kernel for small trees otherwise)
    R, p, S, mw, hw, Iw, T = kinematics_views(ws, nb, nv)
    o = kinematics_ws_size(nb, nv)
    IA = carve(ws, o, (nb, 6, 6))
    o += 36 * nb
    pA = carve(ws, o, (nb, 6))
    o += 6 * nb
    cb = carve(ws, o, (nb, 6))
    o += 6 * nb
    vel = carve(ws, o, (nb, 6))
    o += 6 * nb
    U = carve(ws, o, (nb, 6, 6))  # I^A S (first nvj columns used)
    o += 36 * nb
    Dinv = carve(ws, o, (nb, 6, 6))  # (S^T I^A S)^-1 (D itself at the root)
    o += 36 * nb
    u = carve(ws, o, (nb, 6))  # tau - S^T p^A
    o += 6 * nb
    acc = carve(ws, o, (nb, 6))
    o += 6 * nb
    Dm = carve(ws, o, (6, 6))
    o += 36
    UD = carve(ws, o, (6, 6))
    o += 36
    Ia = carve(ws, o, (6, 6))
    o += 36
    tmp = ws[o : o + 6]
    o += 6
    ap = ws[o : o + 6]
    with_fext = fext.shape[0] > 0
    kinematics_into(m, q, R, p, S, mw, hw, Iw, T)
    # pass 1: velocities, velocity-product accelerations, isolated inertias and bias forces
    for i in range(nb):
        k = m.parent[i]
        iv = m.iv[i]
        sv = _joint_velocity(S, iv, m.nvj[i], v)
        for r in range(6):
            vel[i, r] = (vel[k, r] if k >= 0 else 0.0) + sv[r]
        vi = _row6(vel, i)
        c6 = _velocity_product(m.jtype[i], iv, vi, sv, S, v)
        pv = _force_cross(vi, _inertia_times(mw[i], hw, Iw, i, vi))
        for r in range(6):
            cb[i, r] = c6[r]
            pA[i, r] = pv[r]
        _spatial_inertia_matrix(mw[i], hw, Iw, i, IA)
        if with_fext:
            for r in range(6):
                pA[i, r] -= fext[i, r]
    # pass 2: articulated inertias, leaves to root
    for i in range(nb - 1, -1, -1):
        nj = m.nvj[i]
        c0 = m.iv[i]
        k = m.parent[i]
        for a in range(nj):
            for r in range(6):
                s = 0.0
                for c in range(6):
                    s += IA[i, r, c] * S[c, c0 + a]
                U[i, r, a] = s
        for a in range(nj):
            s = tau[c0 + a]
            for r in range(6):
                s -= S[r, c0 + a] * pA[i, r]
            u[i, a] = s
            for b in range(nj):
                s = 0.0
                for r in range(6):
                    s += S[r, c0 + a] * U[i, r, b]
                Dm[a, b] = s
        if k < 0:
            for a in range(nj):  # the root needs D itself (solved in pass 3), not its inverse
                for b in range(nj):
                    Dinv[i, a, b] = Dm[a, b]
            continue
        if nj == 1:  # the common case, written out: Ia = IA - U U^T / D
            d = 1.0 / Dm[0, 0]
            Dinv[i, 0, 0] = d
            ud = u[i, 0] * d
            for r in range(6):
                Ur = U[i, r, 0] * d
                s = pA[i, r] + U[i, r, 0] * ud
                for c in range(6):
                    t = IA[i, r, c] - Ur * U[i, c, 0]
                    IA[k, r, c] += t
                    s += t * cb[i, c]
                pA[k, r] += s
            continue
        if nj == 1:
            Dinv[i, 0, 0] = 1.0 / Dm[0, 0]
        elif nj > 1:
            Dinv[i, :nj, :nj] = np.linalg.inv(Dm[:nj, :nj])
        # Ia = IA - U Dinv U^T ;  pa = pA + Ia c + U Dinv u
        for r in range(6):
            for b in range(nj):
                s = 0.0
                for a in range(nj):
                    s += U[i, r, a] * Dinv[i, a, b]
                UD[r, b] = s
        for r in range(6):
            for c in range(6):
                t = IA[i, r, c]
                for a in range(nj):
                    t -= UD[r, a] * U[i, c, a]
                Ia[r, c] = t
                IA[k, r, c] += t
        for r in range(6):
            s = pA[i, r]
            for c in range(6):
                s += Ia[r, c] * cb[i, c]
            for a in range(nj):
                s += UD[r, a] * u[i, a]
            pA[k, r] += s
    # pass 3: accelerations, root to leaves
    g = m.gravity
    for i in range(nb):
        k = m.parent[i]
        if k >= 0:
            for r in range(6):
                ap[r] = acc[k, r] + cb[i, r]
        else:
            for r in range(3):
                ap[r] = -g[r] + cb[i, r]
                ap[3 + r] = cb[i, 3 + r]
        nj = m.nvj[i]
        c0 = m.iv[i]
        for a in range(nj):
            s = u[i, a]
            for r in range(6):
                s -= U[i, r, a] * ap[r]
            tmp[a] = s
        if k < 0 and nj > 0:
            _cholesky_solve_inplace(Dinv[i, :nj, :nj], tmp[:nj])
            for a in range(nj):
                qdd[c0 + a] = tmp[a]
        else:
            for a in range(nj):
                s = 0.0
                for b in range(nj):
                    s += Dinv[i, a, b] * tmp[b]
                qdd[c0 + a] = s
        for r in range(6):
            s = ap[r]
            for a in range(nj):
                s += S[r, c0 + a] * qdd[c0 + a]
            acc[i, r] = s


# ----------------------------------------------------------------------------------------------
# packed model and entry points
# ----------------------------------------------------------------------------------------------
# Calling a compiled function with a named tuple of 14 arrays costs ~2.5 us of argument
# unboxing; two flat arrays cost ~0.3 us. Entry points therefore take the model packed into
# ``idata`` (int64) and ``fdata`` (float64) and rebuild the ModelArrays views inside.

_IHEAD = 16


def pack(a: ModelArrays) -> tuple[np.ndarray, np.ndarray]:
    """Pack ``a`` into ``(idata, fdata)`` for the ``e_*`` entry points.

    Layout: ``idata = [nb, nv, <float offsets x 10>, 0..., jtype, parent, iq, iv, nvj]`` and
    ``fdata = [rot, trans, axis, mass, com, inertia, gravity, damping, friction, axis2]``.
    """
    nb = a.parent.shape[0]
    nv = a.damping.shape[0]
    floats = [
        a.rot,
        a.trans,
        a.axis,
        a.mass,
        a.com,
        a.inertia,
        a.gravity,
        a.damping,
        a.friction,
        a.axis2,
    ]
    offsets = np.cumsum([0] + [f.size for f in floats])
    idata = np.zeros(_IHEAD + 5 * nb, dtype=np.int64)
    idata[0] = nb
    idata[1] = nv
    idata[2:12] = offsets[:10]
    ints = np.concatenate([a.jtype, a.parent, a.iq, a.iv, a.nvj]).astype(np.int64)
    idata[_IHEAD:] = ints
    fdata = np.concatenate([np.ravel(f) for f in floats]).astype(np.float64)
    idata.setflags(write=False)
    fdata.setflags(write=False)
    return idata, fdata


@njit_leaf
def unpack(idata: np.ndarray, fdata: np.ndarray) -> ModelArrays:
    """Views of a packed model as :class:`ModelArrays` (no copies)."""
    nb = idata[0]
    nv = idata[1]
    o = idata[2:12]
    h = _IHEAD
    return ModelArrays(
        idata[h : h + nb],
        idata[h + nb : h + 2 * nb],
        idata[h + 2 * nb : h + 3 * nb],
        idata[h + 3 * nb : h + 4 * nb],
        idata[h + 4 * nb : h + 5 * nb],
        carve(fdata, o[0], (nb, 3, 3)),
        carve(fdata, o[1], (nb, 3)),
        carve(fdata, o[2], (nb, 3)),
        fdata[o[3] : o[3] + nb],
        carve(fdata, o[4], (nb, 3)),
        carve(fdata, o[5], (nb, 3, 3)),
        fdata[o[6] : o[6] + 3],
        fdata[o[7] : o[7] + nv],
        fdata[o[8] : o[8] + nv],
        carve(fdata, o[9], (nb, 3)),
    )


@njit
def e_poses(idata: np.ndarray, fdata: np.ndarray, q: np.ndarray):
    """Entry point: body poses ``(R (nb,3,3), p (nb,3))``."""
    m = unpack(idata, fdata)
    nb = m.parent.shape[0]
    R = np.empty((nb, 3, 3))
    p = np.empty((nb, 3))
    forward_kinematics(m, q, R, p, np.empty((3, 3, 3)))
    return R, p


@njit
def e_kinematics(idata: np.ndarray, fdata: np.ndarray, q: np.ndarray):
    """Entry point of :func:`kinematics`."""
    return kinematics(unpack(idata, fdata), q, idata[1])


@njit
def e_mass_matrix(idata: np.ndarray, fdata: np.ndarray, q: np.ndarray, H: np.ndarray) -> None:
    """Entry point: the inertia matrix by :func:`crba` into ``H`` (nv, nv)."""
    m = unpack(idata, fdata)
    nb = m.parent.shape[0]
    nv = idata[1]
    ws = np.empty(kinematics_ws_size(nb, nv))
    R, p, S, mw, hw, Iw, T = kinematics_views(ws, nb, nv)
    kinematics_into(m, q, R, p, S, mw, hw, Iw, T)
    for r in range(nv):
        for c in range(nv):
            H[r, c] = 0.0
    crba(m, S, mw, hw, Iw, H)


@njit
def e_rnea(
    idata: np.ndarray,
    fdata: np.ndarray,
    q: np.ndarray,
    v: np.ndarray,
    a: np.ndarray,
    with_friction: bool,
    out: np.ndarray,
) -> None:
    """Entry point without external wrenches: :func:`inverse_dynamics_into` into ``out``."""
    m = unpack(idata, fdata)
    ws = np.empty(id_ws_size(m.parent.shape[0], idata[1]))
    inverse_dynamics_into(m, q, v, a, carve(ws, 0, (0, 6)), with_friction, out, ws)


@njit
def e_nle(
    idata: np.ndarray,
    fdata: np.ndarray,
    q: np.ndarray,
    v: np.ndarray,
    with_friction: bool,
    out: np.ndarray,
) -> None:
    """Entry point of the bias forces ``nle`` (no external wrenches) into ``out`` (nv,).

    :func:`rnea` with ``a = 0``, its acceleration terms skipped.
    """
    m = unpack(idata, fdata)
    ws = np.empty(id_ws_size(m.parent.shape[0], idata[1]))
    inverse_dynamics_into(m, q, v, v[0:0], carve(ws, 0, (0, 6)), with_friction, out, ws)


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
) -> None:
    """Entry point: ABA forward dynamics under joint efforts only, into ``out`` (nv,).

    ``tau`` (n,) are the joint efforts (the last ``n`` generalized forces); no base wrench and
    no body wrenches (see :func:`e_forward_dynamics` for those).
    """
    m = unpack(idata, fdata)
    nb = m.parent.shape[0]
    nv = idata[1]
    o = aba_ws_size(nb, nv)
    ws = np.empty(o + nv)
    gen = ws[o : o + nv]
    nb0 = nv - tau.shape[0]
    for c in range(nb0):
        gen[c] = 0.0
    for c in range(tau.shape[0]):
        gen[nb0 + c] = tau[c]
    if with_friction:
        ff = np.empty(nv)
        joint_friction(m, v, ff)
        for c in range(nv):
            gen[c] += ff[c]
    aba_into(m, q, v, gen, carve(ws, 0, (0, 6)), out, ws)


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
    """Entry point: :func:`forward_dynamics` (ABA) or :func:`forward_dynamics_crba`."""
    m = unpack(idata, fdata)
    if use_aba:
        return forward_dynamics(m, q, v, tau, fext, with_friction)
    return forward_dynamics_crba(m, q, v, tau, fext, with_friction)


@njit
def e_momentum(idata: np.ndarray, fdata: np.ndarray, q: np.ndarray, v: np.ndarray):
    """Entry point: ``([P; L_O] (6,), system CoM (3,))``."""
    m = unpack(idata, fdata)
    R, p, S, mw, hw, Iw = kinematics(m, q, idata[1])
    h = spatial_momentum(m, v, S, mw, hw, Iw)
    com = np.zeros(3)
    mt = 0.0
    for i in range(mw.shape[0]):
        mt += mw[i]
        for r in range(3):
            com[r] += hw[i, r]
    return h, com / mt


@njit
def e_integrate(
    idata: np.ndarray, fdata: np.ndarray, q: np.ndarray, v: np.ndarray, dt: float
) -> np.ndarray:
    """Entry point of :func:`integrate`."""
    return integrate(unpack(idata, fdata), q, v, dt)


@njit
def e_chart_rate(
    idata: np.ndarray, fdata: np.ndarray, theta: np.ndarray, v: np.ndarray
) -> np.ndarray:
    """Entry point of :func:`chart_rate`."""
    return chart_rate(unpack(idata, fdata), theta, v)


@njit
def e_rk4_step(
    idata: np.ndarray,
    fdata: np.ndarray,
    q: np.ndarray,
    v: np.ndarray,
    tau: np.ndarray,
    fext: np.ndarray,
    with_friction: bool,
    dt: float,
):
    """Entry point of :func:`rk4_step`."""
    return rk4_step(unpack(idata, fdata), q, v, tau, fext, with_friction, dt)


@njit
def e_rk4_steps(
    idata: np.ndarray,
    fdata: np.ndarray,
    q: np.ndarray,
    v: np.ndarray,
    tau: np.ndarray,
    fext: np.ndarray,
    with_friction: bool,
    dt: float,
    count: int,
):
    """``count`` RK4 steps under constant inputs (one call for a batch of physics steps)."""
    m = unpack(idata, fdata)
    for _ in range(count):
        q, v = rk4_step(m, q, v, tau, fext, with_friction, dt)
    return q, v


# ----------------------------------------------------------------------------------------------
# batched entry points: one state per row, rows spread over all cores
# ----------------------------------------------------------------------------------------------
# (The parallel loops call row kernels that unpack the model themselves: numba's parfor
# lowering cannot carry the ModelArrays named tuple into its generated loop body.)


# Rows are processed in chunks of _CHUNK: each chunk unpacks the model and allocates its
# workspace once, then writes every row's result straight into the output.
_CHUNK = 32


@njit
def _fd_rows(idata, fdata, Q, V, T, with_friction, out, lo, hi):
    m = unpack(idata, fdata)
    ws = np.empty(fd_ws_size(m.parent.shape[0], idata[1]))
    fext = carve(ws, 0, (0, 6))
    for k in range(lo, hi):
        forward_dynamics_into(m, Q[k], V[k], T[k], fext, with_friction, out[k], ws)


@njit
def _crba_rows(idata, fdata, Q, out, lo, hi):
    m = unpack(idata, fdata)
    nb = m.parent.shape[0]
    nv = idata[1]
    ws = np.empty(kinematics_ws_size(nb, nv))
    R, p, S, mw, hw, Iw, T = kinematics_views(ws, nb, nv)
    for k in range(lo, hi):
        kinematics_into(m, Q[k], R, p, S, mw, hw, Iw, T)
        crba(m, S, mw, hw, Iw, out[k])


@njit
def _id_rows(idata, fdata, Q, V, A, with_friction, out, lo, hi):
    m = unpack(idata, fdata)
    ws = np.empty(id_ws_size(m.parent.shape[0], idata[1]))
    fext = carve(ws, 0, (0, 6))
    for k in range(lo, hi):
        inverse_dynamics_into(m, Q[k], V[k], A[k], fext, with_friction, out[k], ws)


@njit
def _momentum_row(idata, fdata, q, v, h, com):
    m = unpack(idata, fdata)
    R, p, S, mw, hw, Iw = kinematics(m, q, idata[1])
    h[:] = spatial_momentum(m, v, S, mw, hw, Iw)
    mt = 0.0
    for r in range(3):
        com[r] = 0.0
    for i in range(mw.shape[0]):
        mt += mw[i]
        for r in range(3):
            com[r] += hw[i, r]
    for r in range(3):
        com[r] /= mt


@njit
def _integrate_row(idata, fdata, q, v, dt):
    return integrate(unpack(idata, fdata), q, v, dt)


@njit
def _rk4_row(idata, fdata, q, v, tau, with_friction, dt):
    m = unpack(idata, fdata)
    return rk4_step(m, q, v, tau, np.empty((0, 6)), with_friction, dt)


@njit_parallel
def b_forward_dynamics(idata, fdata, Q, V, T, with_friction):
    """Forward dynamics of ``B`` states: Q (B, nq), V (B, nv), T (B, nv) -> (B, nv)."""
    B = Q.shape[0]
    out = np.empty((B, V.shape[1]))
    for c in prange((B + _CHUNK - 1) // _CHUNK):
        lo = c * _CHUNK
        _fd_rows(idata, fdata, Q, V, T, with_friction, out, lo, min(lo + _CHUNK, B))
    return out


@njit_parallel
def b_mass_matrix(idata, fdata, Q):
    """Inertia matrices of ``B`` configurations: (B, nq) -> (B, nv, nv)."""
    B = Q.shape[0]
    nv = idata[1]
    out = np.zeros((B, nv, nv))
    for c in prange((B + _CHUNK - 1) // _CHUNK):
        lo = c * _CHUNK
        _crba_rows(idata, fdata, Q, out, lo, min(lo + _CHUNK, B))
    return out


@njit_parallel
def b_inverse_dynamics(idata, fdata, Q, V, A, with_friction):
    """Inverse dynamics of ``B`` states: (B, nq), (B, nv), (B, nv) -> (B, nv).

    ``A`` (B, 0) stands for zero accelerations (the bias forces).
    """
    B = Q.shape[0]
    out = np.empty((B, idata[1]))
    for c in prange((B + _CHUNK - 1) // _CHUNK):
        lo = c * _CHUNK
        _id_rows(idata, fdata, Q, V, A, with_friction, out, lo, min(lo + _CHUNK, B))
    return out


@njit_parallel
def b_momentum(idata, fdata, Q, V):
    """``[P; L_O]`` (B, 6) and system CoM (B, 3) of ``B`` states."""
    h = np.empty((Q.shape[0], 6))
    com = np.empty((Q.shape[0], 3))
    for k in prange(Q.shape[0]):
        _momentum_row(idata, fdata, Q[k], V[k], h[k], com[k])
    return h, com


@njit_parallel
def b_integrate(idata, fdata, Q, V, dt):
    """:func:`integrate` of ``B`` states."""
    out = np.empty_like(Q)
    for k in prange(Q.shape[0]):
        out[k] = _integrate_row(idata, fdata, Q[k], V[k], dt)
    return out


@njit_parallel
def b_rk4_step(idata, fdata, Q, V, T, with_friction, dt):
    """One RK4 step of ``B`` states under constant generalized forces T (B, nv)."""
    Qn = np.empty_like(Q)
    Vn = np.empty_like(V)
    for k in prange(Q.shape[0]):
        qn, vn = _rk4_row(idata, fdata, Q[k], V[k], T[k], with_friction, dt)
        Qn[k] = qn
        Vn[k] = vn
    return Qn, Vn
