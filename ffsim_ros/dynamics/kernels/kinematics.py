"""Kinematics of the tree in the inertial frame: body poses ([S0 eq. 1] link by link), joint
motion subspaces [S0 eqs. 3-5] [M secs. 3.1-3.2], world inertias about O, and the per-joint
velocity terms shared by RNEA and ABA.

The workspace of one call is a flat float64 array; every temporary is carved out of it
(a dozen small allocations cost more than the arithmetic of a 7-DoF robot). Nothing in a
workspace is assumed zero on entry.
"""

from __future__ import annotations

import numpy as np

from ..jit import carve, inlined_copy, njit, njit_leaf
from ..lie import axis_angle_entries, axis_angle_into, quat_to_matrix_into
from .layout import REVOLUTE, ROOT_FIXED, ROOT_FREE, SPHERICAL, UNIVERSAL, ModelArrays
from .spatial import col6, entries33, motion_cross, mul33, rowdot, scaled


@njit
def forward_kinematics(
    m: ModelArrays, q: np.ndarray, R: np.ndarray, p: np.ndarray, T: np.ndarray
) -> None:
    """Body frame poses in the inertial frame ([S0 eq. 1] link by link down the tree).

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
            quat_to_matrix_into(q, 3, R, i)
            # q[0:3] is the base CoM r0 [S0 eq. 17]: the frame origin is r0 - R c0.
            for r in range(3):
                p[i, r] = q[r] - rowdot(R, i, r, m.com, i)
        else:
            k = m.parent[i]
            for r in range(3):
                p[i, r] = p[k, r] + rowdot(R, k, r, m.trans, i)
            iq = m.iq[i]
            if jt == REVOLUTE:
                # the common joint in registers (R shares the workspace: a product stored
                # through it would be read back), the same operations as the branches below
                _revolute_pose(R, k, m.rot, i, m.axis, q[iq])
                continue
            mul33(R, k, m.rot, i, T, 0)  # joint frame orientation
            if jt == SPHERICAL:
                quat_to_matrix_into(q, iq, T, 1)
                mul33(T, 0, T, 1, R, i)
            elif jt == UNIVERSAL:
                axis_angle_into(m.axis, i, q[iq], T, 1)
                mul33(T, 0, T, 1, T, 2)
                axis_angle_into(m.axis2, i, q[iq + 1], T, 1)
                mul33(T, 2, T, 1, R, i)
            else:  # PRISMATIC
                qi = q[iq]
                for r in range(3):
                    p[i, r] += rowdot(T, 0, r, m.axis, i) * qi
                    for c in range(3):
                        R[i, r, c] = T[0, r, c]


@njit_leaf
def _revolute_pose(
    R: np.ndarray, k: int, rot: np.ndarray, i: int, axis: np.ndarray, angle: float
) -> None:
    """``R[i] = (R[k] rot[i]) E(axis[i], angle)``, the orientation of a revolute joint's
    child: its parent's, the joint frame's, then Rodrigues' rotation."""
    a00, a01, a02, a10, a11, a12, a20, a21, a22 = entries33(R, k)
    b00, b01, b02, b10, b11, b12, b20, b21, b22 = entries33(rot, i)
    f00 = a00 * b00 + a01 * b10 + a02 * b20
    f01 = a00 * b01 + a01 * b11 + a02 * b21
    f02 = a00 * b02 + a01 * b12 + a02 * b22
    f10 = a10 * b00 + a11 * b10 + a12 * b20
    f11 = a10 * b01 + a11 * b11 + a12 * b21
    f12 = a10 * b02 + a11 * b12 + a12 * b22
    f20 = a20 * b00 + a21 * b10 + a22 * b20
    f21 = a20 * b01 + a21 * b11 + a22 * b21
    f22 = a20 * b02 + a21 * b12 + a22 * b22
    e = axis_angle_entries(axis[i, 0], axis[i, 1], axis[i, 2], angle)
    R[i, 0, 0] = f00 * e[0] + f01 * e[3] + f02 * e[6]
    R[i, 0, 1] = f00 * e[1] + f01 * e[4] + f02 * e[7]
    R[i, 0, 2] = f00 * e[2] + f01 * e[5] + f02 * e[8]
    R[i, 1, 0] = f10 * e[0] + f11 * e[3] + f12 * e[6]
    R[i, 1, 1] = f10 * e[1] + f11 * e[4] + f12 * e[7]
    R[i, 1, 2] = f10 * e[2] + f11 * e[5] + f12 * e[8]
    R[i, 2, 0] = f20 * e[0] + f21 * e[3] + f22 * e[6]
    R[i, 2, 1] = f20 * e[1] + f21 * e[4] + f22 * e[7]
    R[i, 2, 2] = f20 * e[2] + f21 * e[5] + f22 * e[8]


@njit_leaf
def rotation_column(
    P: np.ndarray, i: int, kx: float, ky: float, kz: float, S: np.ndarray, c: int
) -> None:
    """``S[:, c] = [o x k; k]``: rotation about the world axis ``k`` through ``o = P[i]``."""
    S[0, c] = P[i, 1] * kz - P[i, 2] * ky
    S[1, c] = P[i, 2] * kx - P[i, 0] * kz
    S[2, c] = P[i, 0] * ky - P[i, 1] * kx
    S[3, c] = kx
    S[4, c] = ky
    S[5, c] = kz


@njit
def motion_subspace(
    m: ModelArrays, q: np.ndarray, R: np.ndarray, p: np.ndarray, S: np.ndarray
) -> None:
    """Columns of the joint motion subspaces in the inertial frame at O.

    For the free base, ``S[:, 0:6]`` maps ``[V0; w0]`` (base CoM velocity, inertial angular
    velocity; [S0 eq. 22]) to the base's spatial velocity at O:
    ``v_O = V0 + r0 x w0``. A revolute joint with world axis ``k`` through ``p_i`` gives
    ``[p_i x k; k]`` ([S0 eqs. 3-4]: ``k x (r - p_i)`` at a point r); a prismatic one
    ``[k; 0]``. A spherical joint has three such rotation columns about the child frame's
    axes through the joint centre ([M sec. 3.1], ball-and-socket: the relative angular
    velocity in the child frame); a universal joint two, about the first axis (fixed in the
    parent) and the second (fixed in the child; [M sec. 3.2]).

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
                rotation_column(p, i, R[i, 0, c], R[i, 1, c], R[i, 2, c], S, c0 + c)
        elif jt == UNIVERSAL:
            # first axis fixed in the parent (R_parent rot_i axis_i), second in the child
            k = m.parent[i]
            a0 = rowdot(m.rot, i, 0, m.axis, i)
            a1 = rowdot(m.rot, i, 1, m.axis, i)
            a2 = rowdot(m.rot, i, 2, m.axis, i)
            kx = R[k, 0, 0] * a0 + R[k, 0, 1] * a1 + R[k, 0, 2] * a2
            ky = R[k, 1, 0] * a0 + R[k, 1, 1] * a1 + R[k, 1, 2] * a2
            kz = R[k, 2, 0] * a0 + R[k, 2, 1] * a1 + R[k, 2, 2] * a2
            rotation_column(p, i, kx, ky, kz, S, c0)
            kx = rowdot(R, i, 0, m.axis2, i)
            ky = rowdot(R, i, 1, m.axis2, i)
            kz = rowdot(R, i, 2, m.axis2, i)
            rotation_column(p, i, kx, ky, kz, S, c0 + 1)
        else:
            kx = rowdot(R, i, 0, m.axis, i)
            ky = rowdot(R, i, 1, m.axis, i)
            kz = rowdot(R, i, 2, m.axis, i)
            if jt == REVOLUTE:
                rotation_column(p, i, kx, ky, kz, S, c0)
            else:
                S[0, c0] = kx
                S[1, c0] = ky
                S[2, c0] = kz
                S[3, c0] = 0.0
                S[4, c0] = 0.0
                S[5, c0] = 0.0


@njit
def world_inertias(
    m: ModelArrays,
    R: np.ndarray,
    p: np.ndarray,
    mw: np.ndarray,
    hw: np.ndarray,
    Iw: np.ndarray,
) -> None:
    """Spatial inertias about O in compact form ``(m, h, Ib)`` (see the module docstring).

    Parameters
    ----------
    mw : (nb,) output [kg];  hw : (nb, 3) output [kg m];  Iw : (nb, 3, 3) output [kg m^2].
    """
    nb = m.parent.shape[0]
    for i in range(nb):
        # every entry read into a local first and written once (the outputs share the
        # workspace with R: stored through, each store would make LLVM read R again): the
        # operations of R (Ic R^T) in the order the array version had, bit for bit, 2.5x
        # faster
        mi = m.mass[i]
        r00, r01, r02, r10, r11, r12, r20, r21, r22 = entries33(R, i)
        c0, c1, c2 = m.com[i, 0], m.com[i, 1], m.com[i, 2]
        cx = p[i, 0] + (r00 * c0 + r01 * c1 + r02 * c2)
        cy = p[i, 1] + (r10 * c0 + r11 * c1 + r12 * c2)
        cz = p[i, 2] + (r20 * c0 + r21 * c1 + r22 * c2)
        j00, j01, j02, j10, j11, j12, j20, j21, j22 = entries33(m.inertia, i)
        # T = Ic R^T: T[r, c] = Ic[r, :] . R[c, :]
        t00 = j00 * r00 + j01 * r01 + j02 * r02
        t01 = j00 * r10 + j01 * r11 + j02 * r12
        t02 = j00 * r20 + j01 * r21 + j02 * r22
        t10 = j10 * r00 + j11 * r01 + j12 * r02
        t11 = j10 * r10 + j11 * r11 + j12 * r12
        t12 = j10 * r20 + j11 * r21 + j12 * r22
        t20 = j20 * r00 + j21 * r01 + j22 * r02
        t21 = j20 * r10 + j21 * r11 + j22 * r12
        t22 = j20 * r20 + j21 * r21 + j22 * r22
        # R T, plus the parallel-axis term m (|c|^2 E - c c^T) about O
        sq = cx * cx + cy * cy + cz * cz
        Iw[i, 0, 0] = (r00 * t00 + r01 * t10 + r02 * t20) + mi * (sq - cx * cx)
        Iw[i, 0, 1] = (r00 * t01 + r01 * t11 + r02 * t21) + mi * (0.0 - cx * cy)
        Iw[i, 0, 2] = (r00 * t02 + r01 * t12 + r02 * t22) + mi * (0.0 - cx * cz)
        Iw[i, 1, 0] = (r10 * t00 + r11 * t10 + r12 * t20) + mi * (0.0 - cy * cx)
        Iw[i, 1, 1] = (r10 * t01 + r11 * t11 + r12 * t21) + mi * (sq - cy * cy)
        Iw[i, 1, 2] = (r10 * t02 + r11 * t12 + r12 * t22) + mi * (0.0 - cy * cz)
        Iw[i, 2, 0] = (r20 * t00 + r21 * t10 + r22 * t20) + mi * (0.0 - cz * cx)
        Iw[i, 2, 1] = (r20 * t01 + r21 * t11 + r22 * t21) + mi * (0.0 - cz * cy)
        Iw[i, 2, 2] = (r20 * t02 + r21 * t12 + r22 * t22) + mi * (sq - cz * cz)
        hw[i, 0] = mi * cx
        hw[i, 1] = mi * cy
        hw[i, 2] = mi * cz
        mw[i] = mi


#: The three kinematics passes inlined (:func:`~ffsim_ros.dynamics.jit.inlined_copy`) into
#: the one compiled body of the batched rows (:func:`kinematics_on_views`: 7-9 % off an ABA
#: row, measured 2026-11-28); every other caller calls them.
forward_kinematics_inlined = inlined_copy(forward_kinematics)
motion_subspace_inlined = inlined_copy(motion_subspace)
world_inertias_inlined = inlined_copy(world_inertias)


@njit_leaf
def kinematics_on_views(m: ModelArrays, q: np.ndarray, kin: tuple) -> None:
    """:func:`kinematics_into` inlined, on the views ``kin`` (the 7 arrays of
    :func:`kinematics_views`) carved by the caller: for the batched rows, which carve them
    once per chunk and run a row's kinematics and algorithm in one compiled body (20-25 % off
    a row of the mass matrix and of the bias forces, 40 % off one of ABA with its passes,
    measured 2026-11-28).

    Parameters
    ----------
    q : (nq,) configuration.
    kin : tuple of the views R, p, S, mw, hw, Iw, T, written.
    """
    R, p, S, mw, hw, Iw, T = kin
    forward_kinematics_inlined(m, q, R, p, T)
    motion_subspace_inlined(m, q, R, p, S)
    world_inertias_inlined(m, R, p, mw, hw, Iw)


@njit_leaf
def joint_velocity(S: np.ndarray, iv: int, nvj: int, v: np.ndarray) -> tuple:
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


@njit
def velocity_product(
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
    c = motion_cross(vi, sv)
    if jt == UNIVERSAL:
        d = motion_cross(scaled(col6(S, iv), v[iv]), scaled(col6(S, iv + 1), v[iv + 1]))
        return (c[0] + d[0], c[1] + d[1], c[2] + d[2], c[3] + d[3], c[4] + d[4], c[5] + d[5])
    return c


@njit
def kinematics_ws_size(nb: int, nv: int) -> int:
    """Length of the workspace of :func:`kinematics_views` (``25 nb + 6 nv + 27``)."""
    return 25 * nb + 6 * nv + 27


@njit
def kinematics_views(ws: np.ndarray, nb: int, nv: int) -> tuple[np.ndarray, ...]:
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
    world_inertias(m, R, p, mw, hw, Iw)


@njit
def kinematics(m: ModelArrays, q: np.ndarray, nv: int) -> tuple[np.ndarray, ...]:
    """Poses, motion subspaces and world inertias in one pass.

    Returns
    -------
    R : (nb, 3, 3); p : (nb, 3); S : (6, nv); mw : (nb,); hw : (nb, 3); Iw : (nb, 3, 3)
    """
    nb = m.parent.shape[0]
    R, p, S, mw, hw, Iw, T = kinematics_views(np.empty(kinematics_ws_size(nb, nv)), nb, nv)
    kinematics_into(m, q, R, p, S, mw, hw, Iw, T)
    return R, p, S, mw, hw, Iw
