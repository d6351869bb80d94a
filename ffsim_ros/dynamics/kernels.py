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

from ._jit import njit, njit_leaf, njit_parallel, prange

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
# small 3-vector / 3x3 helpers
# ----------------------------------------------------------------------------------------------


@njit_leaf
def _cross(a: np.ndarray, b: np.ndarray, out: np.ndarray) -> None:
    x = a[1] * b[2] - a[2] * b[1]
    y = a[2] * b[0] - a[0] * b[2]
    z = a[0] * b[1] - a[1] * b[0]
    out[0] = x
    out[1] = y
    out[2] = z


@njit_leaf
def _matmul3(a: np.ndarray, b: np.ndarray, out: np.ndarray) -> None:
    for r in range(3):
        for c in range(3):
            out[r, c] = a[r, 0] * b[0, c] + a[r, 1] * b[1, c] + a[r, 2] * b[2, c]


@njit_leaf
def _matvec3(a: np.ndarray, x: np.ndarray, out: np.ndarray) -> None:
    x0 = x[0]
    x1 = x[1]
    x2 = x[2]
    for r in range(3):
        out[r] = a[r, 0] * x0 + a[r, 1] * x1 + a[r, 2] * x2


@njit_leaf
def quat_to_rot(q: np.ndarray, out: np.ndarray) -> None:
    """Rotation matrix of the quaternion ``q = (x, y, z, w)`` (normalized here)."""
    n = np.sqrt(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3])
    x = q[0] / n
    y = q[1] / n
    z = q[2] / n
    w = q[3] / n
    out[0, 0] = 1.0 - 2.0 * (y * y + z * z)
    out[0, 1] = 2.0 * (x * y - z * w)
    out[0, 2] = 2.0 * (x * z + y * w)
    out[1, 0] = 2.0 * (x * y + z * w)
    out[1, 1] = 1.0 - 2.0 * (x * x + z * z)
    out[1, 2] = 2.0 * (y * z - x * w)
    out[2, 0] = 2.0 * (x * z - y * w)
    out[2, 1] = 2.0 * (y * z + x * w)
    out[2, 2] = 1.0 - 2.0 * (x * x + y * y)


@njit_leaf
def axis_angle_to_rot(k: np.ndarray, angle: float, out: np.ndarray) -> None:
    """Rodrigues' formula for a unit axis ``k`` and an angle [rad]."""
    c = np.cos(angle)
    s = np.sin(angle)
    t = 1.0 - c
    x = k[0]
    y = k[1]
    z = k[2]
    out[0, 0] = c + t * x * x
    out[0, 1] = t * x * y - s * z
    out[0, 2] = t * x * z + s * y
    out[1, 0] = t * x * y + s * z
    out[1, 1] = c + t * y * y
    out[1, 2] = t * y * z - s * x
    out[2, 0] = t * x * z - s * y
    out[2, 1] = t * y * z + s * x
    out[2, 2] = c + t * z * z


# ----------------------------------------------------------------------------------------------
# kinematics
# ----------------------------------------------------------------------------------------------


@njit
def forward_kinematics(m: ModelArrays, q: np.ndarray, R: np.ndarray, p: np.ndarray) -> None:
    """Body frame poses in the inertial frame.

    Parameters
    ----------
    m : ModelArrays
    q : (nq,) configuration.
    R : (nb, 3, 3) output, body orientations (body frame -> inertial frame).
    p : (nb, 3) output, body frame origins in the inertial frame [m].
    """
    nb = m.parent.shape[0]
    ws = np.empty(30)  # one allocation for the temporaries
    tmp = ws[0:9].reshape((3, 3))
    rj = ws[9:18].reshape((3, 3))
    v3 = ws[18:21]
    t2 = ws[21:30].reshape((3, 3))
    for i in range(nb):
        jt = m.jtype[i]
        if jt == ROOT_FIXED:
            for r in range(3):
                p[i, r] = 0.0
                for c in range(3):
                    R[i, r, c] = 1.0 if r == c else 0.0
        elif jt == ROOT_FREE:
            quat_to_rot(q[3:7], R[i])
            # q[0:3] is the base CoM r0 (seed 000, eq. 22): the frame origin is r0 - R c0.
            _matvec3(R[i], m.com[i], v3)
            for r in range(3):
                p[i, r] = q[r] - v3[r]
        else:
            k = m.parent[i]
            _matmul3(R[k], m.rot[i], tmp)  # joint frame orientation
            _matvec3(R[k], m.trans[i], v3)
            for r in range(3):
                p[i, r] = p[k, r] + v3[r]
            qi = q[m.iq[i]]
            if jt == REVOLUTE:
                axis_angle_to_rot(m.axis[i], qi, rj)
                _matmul3(tmp, rj, R[i])
            elif jt == SPHERICAL:
                quat_to_rot(q[m.iq[i] : m.iq[i] + 4], rj)
                _matmul3(tmp, rj, R[i])
            elif jt == UNIVERSAL:
                axis_angle_to_rot(m.axis[i], qi, rj)
                _matmul3(tmp, rj, t2)
                axis_angle_to_rot(m.axis2[i], q[m.iq[i] + 1], rj)
                _matmul3(t2, rj, R[i])
            else:  # PRISMATIC
                _matvec3(tmp, m.axis[i], v3)
                for r in range(3):
                    p[i, r] += v3[r] * qi
                    for c in range(3):
                        R[i, r, c] = tmp[r, c]


@njit_leaf
def _rotation_column(
    o: np.ndarray, kx: float, ky: float, kz: float, S: np.ndarray, c: int
) -> None:
    """``S[:, c] = [o x k; k]``: rotation about the world axis ``k`` through the point ``o``."""
    S[0, c] = o[1] * kz - o[2] * ky
    S[1, c] = o[2] * kx - o[0] * kz
    S[2, c] = o[0] * ky - o[1] * kx
    S[3, c] = kx
    S[4, c] = ky
    S[5, c] = kz


@njit
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
    S : (6, nv) output.
    """
    nb = m.parent.shape[0]
    kw = np.empty(3)
    for i in range(nb):
        jt = m.jtype[i]
        c0 = m.iv[i]
        if jt == ROOT_FIXED:
            continue
        if jt == ROOT_FREE:
            r0 = q[0:3]
            for c in range(6):
                for r in range(6):
                    S[r, c0 + c] = 0.0
            for r in range(3):
                S[r, c0 + r] = 1.0
                S[3 + r, c0 + 3 + r] = 1.0
            # skew(r0) block: v_O = V0 + r0 x w0
            S[0, c0 + 4] = -r0[2]
            S[0, c0 + 5] = r0[1]
            S[1, c0 + 3] = r0[2]
            S[1, c0 + 5] = -r0[0]
            S[2, c0 + 3] = -r0[1]
            S[2, c0 + 4] = r0[0]
        elif jt == SPHERICAL:
            # child-frame axes through the joint centre (v holds the child-frame rate)
            for c in range(3):
                _rotation_column(p[i], R[i, 0, c], R[i, 1, c], R[i, 2, c], S, c0 + c)
        elif jt == UNIVERSAL:
            # first axis fixed in the parent (joint frame), second fixed in the child
            _matvec3(m.rot[i], m.axis[i], kw)
            k = m.parent[i]
            kx = R[k, 0, 0] * kw[0] + R[k, 0, 1] * kw[1] + R[k, 0, 2] * kw[2]
            ky = R[k, 1, 0] * kw[0] + R[k, 1, 1] * kw[1] + R[k, 1, 2] * kw[2]
            kz = R[k, 2, 0] * kw[0] + R[k, 2, 1] * kw[1] + R[k, 2, 2] * kw[2]
            _rotation_column(p[i], kx, ky, kz, S, c0)
            _matvec3(R[i], m.axis2[i], kw)
            _rotation_column(p[i], kw[0], kw[1], kw[2], S, c0 + 1)
        else:
            _matvec3(R[i], m.axis[i], kw)
            if jt == REVOLUTE:
                _rotation_column(p[i], kw[0], kw[1], kw[2], S, c0)
            else:
                S[0, c0] = kw[0]
                S[1, c0] = kw[1]
                S[2, c0] = kw[2]
                S[3, c0] = 0.0
                S[4, c0] = 0.0
                S[5, c0] = 0.0


@njit
def world_inertias(
    m: ModelArrays, R: np.ndarray, p: np.ndarray, mw: np.ndarray, hw: np.ndarray, Iw: np.ndarray
) -> None:
    """Spatial inertias about O in compact form ``(m, h, Ib)`` (see the module docstring).

    Parameters
    ----------
    mw : (nb,) output [kg];  hw : (nb, 3) output [kg m];  Iw : (nb, 3, 3) output [kg m^2].
    """
    nb = m.parent.shape[0]
    ws = np.empty(12)
    cw = ws[0:3]
    tmp = ws[3:12].reshape((3, 3))
    for i in range(nb):
        mi = m.mass[i]
        _matvec3(R[i], m.com[i], cw)
        for r in range(3):
            cw[r] += p[i, r]
        # R Ic R^T
        for r in range(3):
            for c in range(3):
                tmp[r, c] = (
                    m.inertia[i, r, 0] * R[i, c, 0]
                    + m.inertia[i, r, 1] * R[i, c, 1]
                    + m.inertia[i, r, 2] * R[i, c, 2]
                )
        _matmul3(R[i], tmp, Iw[i])
        c2 = cw[0] * cw[0] + cw[1] * cw[1] + cw[2] * cw[2]
        for r in range(3):
            hw[i, r] = mi * cw[r]
            for c in range(3):
                Iw[i, r, c] += mi * ((c2 if r == c else 0.0) - cw[r] * cw[c])
        mw[i] = mi


@njit_leaf
def _inertia_times(
    mi: float, h: np.ndarray, Ib: np.ndarray, x: np.ndarray, out: np.ndarray
) -> None:
    """``out = I x`` for the spatial inertia ``(mi, h, Ib)`` and motion vector ``x``."""
    vl0 = x[0]
    vl1 = x[1]
    vl2 = x[2]
    w0 = x[3]
    w1 = x[4]
    w2 = x[5]
    # linear: m v + w x h ; angular: h x v + Ib w
    out[0] = mi * vl0 + (w1 * h[2] - w2 * h[1])
    out[1] = mi * vl1 + (w2 * h[0] - w0 * h[2])
    out[2] = mi * vl2 + (w0 * h[1] - w1 * h[0])
    out[3] = (h[1] * vl2 - h[2] * vl1) + Ib[0, 0] * w0 + Ib[0, 1] * w1 + Ib[0, 2] * w2
    out[4] = (h[2] * vl0 - h[0] * vl2) + Ib[1, 0] * w0 + Ib[1, 1] * w1 + Ib[1, 2] * w2
    out[5] = (h[0] * vl1 - h[1] * vl0) + Ib[2, 0] * w0 + Ib[2, 1] * w1 + Ib[2, 2] * w2


@njit
def kinematics(m: ModelArrays, q: np.ndarray, nv: int):
    """Poses, motion subspaces and world inertias in one pass.

    Returns
    -------
    R : (nb, 3, 3); p : (nb, 3); S : (6, nv); mw : (nb,); hw : (nb, 3); Iw : (nb, 3, 3)
    """
    nb = m.parent.shape[0]
    R, p, S, mw, hw, Iw = kinematics_views(np.empty(kinematics_ws_size(nb, nv)), nb, nv)
    kinematics_into(m, q, R, p, S, mw, hw, Iw)
    return R, p, S, mw, hw, Iw


# ----------------------------------------------------------------------------------------------
# workspaces
# ----------------------------------------------------------------------------------------------
# The entry points allocate one flat float64 workspace per call (per chunk of rows in the
# batched ones) and carve every temporary out of it: a dozen small allocations cost more than
# the arithmetic of a 7-DoF robot. Nothing in a workspace is assumed zero on entry.


@njit
def kinematics_ws_size(nb: int, nv: int) -> int:
    """Length of the workspace of :func:`kinematics_views` (``25 nb + 6 nv``)."""
    return 25 * nb + 6 * nv


@njit
def kinematics_views(ws: np.ndarray, nb: int, nv: int):
    """The arrays of :func:`kinematics` as views on ``ws[:kinematics_ws_size(nb, nv)]``.

    Returns
    -------
    R : (nb, 3, 3); p : (nb, 3); S : (6, nv); mw : (nb,); hw : (nb, 3); Iw : (nb, 3, 3)
    """
    R = ws[0 : 9 * nb].reshape((nb, 3, 3))
    o = 9 * nb
    p = ws[o : o + 3 * nb].reshape((nb, 3))
    o += 3 * nb
    S = ws[o : o + 6 * nv].reshape((6, nv))
    o += 6 * nv
    mw = ws[o : o + nb]
    o += nb
    hw = ws[o : o + 3 * nb].reshape((nb, 3))
    o += 3 * nb
    Iw = ws[o : o + 9 * nb].reshape((nb, 3, 3))
    return R, p, S, mw, hw, Iw


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
) -> None:
    """:func:`kinematics` into caller-provided arrays (same shapes; ``S`` is zeroed here)."""
    for r in range(S.shape[0]):
        for c in range(S.shape[1]):
            S[r, c] = 0.0
    forward_kinematics(m, q, R, p)
    motion_subspace(m, q, R, p, S)
    world_inertias(m, R, p, mw, hw, Iw)


@njit
def rnea_ws_size(nb: int) -> int:
    """Length of the scratch of :func:`rnea` (``18 nb + 18``)."""
    return 18 * nb + 18


@njit
def id_ws_size(nb: int, nv: int) -> int:
    """Workspace of :func:`inverse_dynamics_into`: kinematics, :func:`rnea`, friction."""
    return kinematics_ws_size(nb, nv) + rnea_ws_size(nb) + nv


@njit
def aba_ws_size(nb: int, nv: int) -> int:
    """Length of the workspace of :func:`aba_into` (``163 nb + 6 nv + 126``)."""
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
    F = np.empty(6)
    for i in range(nb - 1, -1, -1):
        for a in range(m.iv[i], m.iv[i] + m.nvj[i]):
            _inertia_times(mw[i], hw[i], Iw[i], S[:, a], F)
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


@njit
def _velocity_product(
    jt: int,
    iv: int,
    i: int,
    vel: np.ndarray,
    sv: np.ndarray,
    S: np.ndarray,
    v: np.ndarray,
    out: np.ndarray,
) -> None:
    """Velocity-product acceleration ``c_i = Sdot_i qdot_i`` of the joint into body ``i``.

    (Takes the joint's entries ``jt = m.jtype[i]``, ``iv = m.iv[i]`` rather than the model:
    handing the 14 arrays of a :class:`ModelArrays` to a helper costs as much as the helper.)

    Parameters
    ----------
    jt : joint type code;  iv : first velocity index of the joint.
    vel : (nb, 6) body spatial velocities at O (``vel[i]`` already includes joint ``i``).
    sv : (6,) joint ``i``'s spatial velocity ``S_i qdot_i`` at O.
    S : (6, nv) motion subspaces (:func:`motion_subspace`).
    v : (nv,) generalized velocity.

    Columns fixed in the child body move with it: ``Sdot qdot = v_i x (S qdot)`` (revolute,
    prismatic, spherical; equal to ``v_parent x (S qdot)``). A universal joint's first column
    is fixed in the parent and its second in the child, which adds
    ``(S_1 qdot_1) x (S_2 qdot_2)``.
    out : (6,) output ``[lin; ang]`` at O, inertial frame [m/s^2, rad/s^2].
    """
    if jt == ROOT_FREE:
        # d/dt (V0 + r0 x w0) = dV0 + r0 x dw0 + V0 x w0  (S a gives the first two terms)
        V0 = v[iv : iv + 3]
        w0 = v[iv + 3 : iv + 6]
        out[0] = V0[1] * w0[2] - V0[2] * w0[1]
        out[1] = V0[2] * w0[0] - V0[0] * w0[2]
        out[2] = V0[0] * w0[1] - V0[1] * w0[0]
        out[3] = 0.0
        out[4] = 0.0
        out[5] = 0.0
    elif jt != ROOT_FIXED:
        # Sdot qdot = v_i x (S qdot)  (motion cross product, [lin; ang] ordering)
        wl0 = vel[i, 3]
        wl1 = vel[i, 4]
        wl2 = vel[i, 5]
        vl0 = vel[i, 0]
        vl1 = vel[i, 1]
        vl2 = vel[i, 2]
        out[0] = wl1 * sv[2] - wl2 * sv[1] + vl1 * sv[5] - vl2 * sv[4]
        out[1] = wl2 * sv[0] - wl0 * sv[2] + vl2 * sv[3] - vl0 * sv[5]
        out[2] = wl0 * sv[1] - wl1 * sv[0] + vl0 * sv[4] - vl1 * sv[3]
        out[3] = wl1 * sv[5] - wl2 * sv[4]
        out[4] = wl2 * sv[3] - wl0 * sv[5]
        out[5] = wl0 * sv[4] - wl1 * sv[3]
        if jt == UNIVERSAL:
            d1 = v[iv]
            d2 = v[iv + 1]
            a0 = S[0, iv] * d1
            a1 = S[1, iv] * d1
            a2 = S[2, iv] * d1
            a3 = S[3, iv] * d1
            a4 = S[4, iv] * d1
            a5 = S[5, iv] * d1
            b0 = S[0, iv + 1] * d2
            b1 = S[1, iv + 1] * d2
            b2 = S[2, iv + 1] * d2
            b3 = S[3, iv + 1] * d2
            b4 = S[4, iv + 1] * d2
            b5 = S[5, iv + 1] * d2
            out[0] += a4 * b2 - a5 * b1 + a1 * b5 - a2 * b4
            out[1] += a5 * b0 - a3 * b2 + a2 * b3 - a0 * b5
            out[2] += a3 * b1 - a4 * b0 + a0 * b4 - a1 * b3
            out[3] += a4 * b5 - a5 * b4
            out[4] += a5 * b3 - a3 * b5
            out[5] += a3 * b4 - a4 * b3
    else:
        for r in range(6):
            out[r] = 0.0


@njit
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
    vel = ws[0 : 6 * nb].reshape((nb, 6))
    acc = ws[6 * nb : 12 * nb].reshape((nb, 6))
    f = ws[12 * nb : 18 * nb].reshape((nb, 6))
    sv = ws[18 * nb : 18 * nb + 6]
    tmp = ws[18 * nb + 6 : 18 * nb + 12]
    cb = ws[18 * nb + 12 : 18 * nb + 18]
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
        for r in range(6):
            sv[r] = 0.0
        for c in range(m.iv[i], m.iv[i] + m.nvj[i]):
            vc = v[c]
            for r in range(6):
                sv[r] += S[r, c] * vc
            if with_a:
                ac = a[c]
                for r in range(6):
                    acc[i, r] += S[r, c] * ac
        for r in range(6):
            vel[i, r] += sv[r]
        _velocity_product(m.jtype[i], m.iv[i], i, vel, sv, S, v, cb)
        for r in range(6):
            acc[i, r] += cb[r]
        # f = I a + v x* (I v) - f_ext
        _inertia_times(mw[i], hw[i], Iw[i], acc[i], f[i])
        _inertia_times(mw[i], hw[i], Iw[i], vel[i], tmp)
        wl0 = vel[i, 3]
        wl1 = vel[i, 4]
        wl2 = vel[i, 5]
        vl0 = vel[i, 0]
        vl1 = vel[i, 1]
        vl2 = vel[i, 2]
        f[i, 0] += wl1 * tmp[2] - wl2 * tmp[1]
        f[i, 1] += wl2 * tmp[0] - wl0 * tmp[2]
        f[i, 2] += wl0 * tmp[1] - wl1 * tmp[0]
        f[i, 3] += wl1 * tmp[5] - wl2 * tmp[4] + vl1 * tmp[2] - vl2 * tmp[1]
        f[i, 4] += wl2 * tmp[3] - wl0 * tmp[5] + vl2 * tmp[0] - vl0 * tmp[2]
        f[i, 5] += wl0 * tmp[4] - wl1 * tmp[3] + vl0 * tmp[1] - vl1 * tmp[0]
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
    R, p, S, mw, hw, Iw = kinematics_views(ws, nb, nv)
    o = kinematics_ws_size(nb, nv)
    kinematics_into(m, q, R, p, S, mw, hw, Iw)
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


@njit
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
    R, p, S, mw, hw, Iw = kinematics_views(ws, nb, nv)
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
    tmp = np.empty(6)
    for i in range(nb):
        k = m.parent[i]
        if k >= 0:
            for r in range(6):
                vel[i, r] = vel[k, r]
        for c in range(m.iv[i], m.iv[i] + m.nvj[i]):
            for r in range(6):
                vel[i, r] += S[r, c] * v[c]
        _inertia_times(mw[i], hw[i], Iw[i], vel[i], tmp)
        for r in range(6):
            out[r] += tmp[r]
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
def _spatial_inertia_matrix(mi: float, h: np.ndarray, Ib: np.ndarray, out: np.ndarray) -> None:
    """Dense 6x6 ``[[m E, -h~], [h~, Ib]]`` of the compact inertia ``(m, h, Ib)``."""
    for r in range(6):
        for c in range(6):
            out[r, c] = 0.0
    for r in range(3):
        out[r, r] = mi
        for c in range(3):
            out[3 + r, 3 + c] = Ib[r, c]
    # -h~ (upper right) and h~ (lower left)
    out[0, 4] = h[2]
    out[0, 5] = -h[1]
    out[1, 3] = -h[2]
    out[1, 5] = h[0]
    out[2, 3] = h[1]
    out[2, 4] = -h[0]
    out[4, 0] = h[2]
    out[5, 0] = -h[1]
    out[3, 1] = -h[2]
    out[5, 1] = h[0]
    out[3, 2] = h[1]
    out[4, 2] = -h[0]


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
    R, p, S, mw, hw, Iw = kinematics_views(ws, nb, nv)
    o = kinematics_ws_size(nb, nv)
    IA = ws[o : o + 36 * nb].reshape((nb, 6, 6))
    o += 36 * nb
    pA = ws[o : o + 6 * nb].reshape((nb, 6))
    o += 6 * nb
    cb = ws[o : o + 6 * nb].reshape((nb, 6))
    o += 6 * nb
    vel = ws[o : o + 6 * nb].reshape((nb, 6))
    o += 6 * nb
    U = ws[o : o + 36 * nb].reshape((nb, 6, 6))  # I^A S (first nvj columns used)
    o += 36 * nb
    Dinv = ws[o : o + 36 * nb].reshape((nb, 6, 6))  # (S^T I^A S)^-1 (D itself at the root)
    o += 36 * nb
    u = ws[o : o + 6 * nb].reshape((nb, 6))  # tau - S^T p^A
    o += 6 * nb
    acc = ws[o : o + 6 * nb].reshape((nb, 6))
    o += 6 * nb
    Dm = ws[o : o + 36].reshape((6, 6))
    o += 36
    UD = ws[o : o + 36].reshape((6, 6))
    o += 36
    Ia = ws[o : o + 36].reshape((6, 6))
    o += 36
    sv = ws[o : o + 6]
    o += 6
    tmp = ws[o : o + 6]
    o += 6
    ap = ws[o : o + 6]
    with_fext = fext.shape[0] > 0
    kinematics_into(m, q, R, p, S, mw, hw, Iw)
    # pass 1: velocities, velocity-product accelerations, isolated inertias and bias forces
    for i in range(nb):
        k = m.parent[i]
        if k >= 0:
            for r in range(6):
                vel[i, r] = vel[k, r]
        else:
            for r in range(6):
                vel[i, r] = 0.0
        for r in range(6):
            sv[r] = 0.0
        for c in range(m.iv[i], m.iv[i] + m.nvj[i]):
            vc = v[c]
            for r in range(6):
                sv[r] += S[r, c] * vc
        for r in range(6):
            vel[i, r] += sv[r]
        _velocity_product(m.jtype[i], m.iv[i], i, vel, sv, S, v, cb[i])
        _spatial_inertia_matrix(mw[i], hw[i], Iw[i], IA[i])
        _inertia_times(mw[i], hw[i], Iw[i], vel[i], tmp)
        wl0 = vel[i, 3]
        wl1 = vel[i, 4]
        wl2 = vel[i, 5]
        vl0 = vel[i, 0]
        vl1 = vel[i, 1]
        vl2 = vel[i, 2]
        pA[i, 0] = wl1 * tmp[2] - wl2 * tmp[1]
        pA[i, 1] = wl2 * tmp[0] - wl0 * tmp[2]
        pA[i, 2] = wl0 * tmp[1] - wl1 * tmp[0]
        pA[i, 3] = wl1 * tmp[5] - wl2 * tmp[4] + vl1 * tmp[2] - vl2 * tmp[1]
        pA[i, 4] = wl2 * tmp[3] - wl0 * tmp[5] + vl2 * tmp[0] - vl0 * tmp[2]
        pA[i, 5] = wl0 * tmp[4] - wl1 * tmp[3] + vl0 * tmp[1] - vl1 * tmp[0]
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


@njit
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
        fdata[o[0] : o[0] + 9 * nb].reshape((nb, 3, 3)),
        fdata[o[1] : o[1] + 3 * nb].reshape((nb, 3)),
        fdata[o[2] : o[2] + 3 * nb].reshape((nb, 3)),
        fdata[o[3] : o[3] + nb],
        fdata[o[4] : o[4] + 3 * nb].reshape((nb, 3)),
        fdata[o[5] : o[5] + 9 * nb].reshape((nb, 3, 3)),
        fdata[o[6] : o[6] + 3],
        fdata[o[7] : o[7] + nv],
        fdata[o[8] : o[8] + nv],
        fdata[o[9] : o[9] + 3 * nb].reshape((nb, 3)),
    )


@njit
def e_poses(idata: np.ndarray, fdata: np.ndarray, q: np.ndarray):
    """Entry point: body poses ``(R (nb,3,3), p (nb,3))``."""
    m = unpack(idata, fdata)
    nb = m.parent.shape[0]
    R = np.empty((nb, 3, 3))
    p = np.empty((nb, 3))
    forward_kinematics(m, q, R, p)
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
    R, p, S, mw, hw, Iw = kinematics_views(ws, nb, nv)
    kinematics_into(m, q, R, p, S, mw, hw, Iw)
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
    inverse_dynamics_into(m, q, v, a, ws[0:0].reshape((0, 6)), with_friction, out, ws)


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
    inverse_dynamics_into(m, q, v, v[0:0], ws[0:0].reshape((0, 6)), with_friction, out, ws)


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
    aba_into(m, q, v, gen, ws[0:0].reshape((0, 6)), out, ws)


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
    fext = ws[0:0].reshape((0, 6))
    for k in range(lo, hi):
        forward_dynamics_into(m, Q[k], V[k], T[k], fext, with_friction, out[k], ws)


@njit
def _crba_rows(idata, fdata, Q, out, lo, hi):
    m = unpack(idata, fdata)
    nb = m.parent.shape[0]
    nv = idata[1]
    ws = np.empty(kinematics_ws_size(nb, nv))
    R, p, S, mw, hw, Iw = kinematics_views(ws, nb, nv)
    for k in range(lo, hi):
        kinematics_into(m, Q[k], R, p, S, mw, hw, Iw)
        crba(m, S, mw, hw, Iw, out[k])


@njit
def _id_rows(idata, fdata, Q, V, A, with_friction, out, lo, hi):
    m = unpack(idata, fdata)
    ws = np.empty(id_ws_size(m.parent.shape[0], idata[1]))
    fext = ws[0:0].reshape((0, 6))
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
