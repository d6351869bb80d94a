"""Articulated-body algorithm (Featherstone 2008, ch. 7) in the inertial frame: O(n) forward
dynamics, the same accelerations as ``H^-1 (Q - c)`` [S0 eq. 39].

Three named passes over the tree, after the kinematics:

1. :func:`velocity_pass` (root to leaves): body velocities, velocity-product accelerations,
   isolated inertias and bias forces;
2. :func:`articulated_inertia_pass` (leaves to root): articulated inertias and bias forces;
3. :func:`acceleration_pass` (root to leaves): joint and body accelerations.
"""

from __future__ import annotations

import numpy as np

from ..jit import carve, njit, njit_leaf
from .cholesky import cholesky_solve_inplace, spd_inverse_into
from .friction import joint_friction
from .kinematics import (
    joint_velocity,
    kinematics_into,
    kinematics_on_views,
    kinematics_views,
    kinematics_ws_size,
    velocity_product,
)
from .layout import ModelArrays
from .spatial import force_cross, inertia_times, row6, spatial_inertia_matrix


@njit
def aba_ws_size(nb: int, nv: int) -> int:
    """Length of the workspace of :func:`aba_into` (``163 nb + 6 nv + 147``)."""
    return kinematics_ws_size(nb, nv) + 138 * nb + 120


@njit
def fd_ws_size(nb: int, nv: int) -> int:
    """Workspace of :func:`forward_dynamics_into`: :func:`aba_into` plus one (nv,) force."""
    return aba_ws_size(nb, nv) + nv


@njit_leaf
def velocity_pass(
    m: ModelArrays,
    v: np.ndarray,
    S: np.ndarray,
    mw: np.ndarray,
    hw: np.ndarray,
    Iw: np.ndarray,
    fext: np.ndarray,
    vel: np.ndarray,
    cb: np.ndarray,
    pA: np.ndarray,
    IA: np.ndarray,
) -> None:
    """Pass 1, root to leaves: body velocities, velocity products, isolated inertias and
    bias forces.

    Parameters
    ----------
    v : (nv,) generalized velocity;  S : (6, nv) motion subspaces.
    mw, hw, Iw : (nb,), (nb, 3), (nb, 3, 3) body inertias about O
        (:func:`.kinematics.world_inertias`).
    fext : (nb, 6) body wrenches about O, or an empty (0, 6) array for none.
    vel : (nb, 6) output, body spatial velocities at O.
    cb : (nb, 6) output, velocity-product accelerations ``Sdot qdot`` of each joint.
    pA : (nb, 6) output, bias forces ``v x* I v - f_ext``.
    IA : (nb, 6, 6) output, the dense body inertias (articulated ones after pass 2).
    """
    with_fext = fext.shape[0] > 0
    for i in range(m.parent.shape[0]):
        k = m.parent[i]
        iv = m.iv[i]
        sv = joint_velocity(S, iv, m.nvj[i], v)
        for r in range(6):
            vel[i, r] = (vel[k, r] if k >= 0 else 0.0) + sv[r]
        vi = row6(vel, i)
        c6 = velocity_product(m.jtype[i], iv, vi, sv, S, v)
        pv = force_cross(vi, inertia_times(mw[i], hw, Iw, i, vi))
        for r in range(6):
            cb[i, r] = c6[r]
            pA[i, r] = pv[r]
        spatial_inertia_matrix(mw[i], hw, Iw, i, IA)
        if with_fext:
            for r in range(6):
                pA[i, r] -= fext[i, r]


@njit_leaf
def _fold_single(
    i: int,
    k: int,
    D: float,
    cb: np.ndarray,
    IA: np.ndarray,
    pA: np.ndarray,
    U: np.ndarray,
    Dinv: np.ndarray,
    u: np.ndarray,
) -> None:
    """Pass 2's fold of a one-DoF body ``i`` into its parent ``k``: ``IA[k] += IA - U U^T / D``
    and ``pA[k] += pA + Ia c + U u / D``. ``U[i]``'s column and ``cb[i]`` are read into
    locals first (``IA[k]`` shares the workspace: stored through, every store made LLVM read
    them again), the operations and their order those of the general case."""
    d = 1.0 / D
    Dinv[i, 0, 0] = d
    ud = u[i, 0] * d
    Uc = (U[i, 0, 0], U[i, 1, 0], U[i, 2, 0], U[i, 3, 0], U[i, 4, 0], U[i, 5, 0])
    cc = (cb[i, 0], cb[i, 1], cb[i, 2], cb[i, 3], cb[i, 4], cb[i, 5])
    for r in range(6):
        Ur = Uc[r] * d
        s = pA[i, r] + Uc[r] * ud
        for c in range(6):
            t = IA[i, r, c] - Ur * Uc[c]
            IA[k, r, c] += t
            s += t * cc[c]
        pA[k, r] += s


@njit_leaf
def articulated_inertia_pass(
    m: ModelArrays,
    tau: np.ndarray,
    S: np.ndarray,
    cb: np.ndarray,
    IA: np.ndarray,
    pA: np.ndarray,
    U: np.ndarray,
    Dinv: np.ndarray,
    u: np.ndarray,
    scratch: np.ndarray,
) -> None:
    """Pass 2, leaves to root: articulated inertias and bias forces, folded into the parents.

    Parameters
    ----------
    tau : (nv,) generalized force;  S, cb : as in :func:`velocity_pass`.
    IA, pA : (nb, 6, 6), (nb, 6) in: isolated body terms; out: articulated ones.
    U : (nb, 6, 6) output, ``I^A S`` (first ``nvj`` columns used).
    Dinv : (nb, 6, 6) output, ``(S^T I^A S)^-1`` (``D`` itself at the root: pass 3 solves it
        by Cholesky).
    u : (nb, 6) output, ``tau - S^T p^A``.
    scratch : (3, 6, 6) scratch (``D``, ``U Dinv`` and the articulated inertia passed on).
    """
    for i in range(m.parent.shape[0] - 1, -1, -1):
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
                scratch[0, a, b] = s
        if k < 0:
            for a in range(nj):  # the root needs D itself (solved in pass 3), not its inverse
                for b in range(nj):
                    Dinv[i, a, b] = scratch[0, a, b]
            continue
        if nj == 1:  # the common case, written out: Ia = IA - U U^T / D
            _fold_single(i, k, scratch[0, 0, 0], cb, IA, pA, U, Dinv, u)
            continue
        if nj > 1:
            spd_inverse_into(scratch[0], nj, Dinv[i])
        # Ia = IA - U Dinv U^T ;  pa = pA + Ia c + U Dinv u  (UD in scratch[1], Ia in [2])
        for r in range(6):
            for b in range(nj):
                s = 0.0
                for a in range(nj):
                    s += U[i, r, a] * Dinv[i, a, b]
                scratch[1, r, b] = s
        for r in range(6):
            for c in range(6):
                t = IA[i, r, c]
                for a in range(nj):
                    t -= scratch[1, r, a] * U[i, c, a]
                scratch[2, r, c] = t
                IA[k, r, c] += t
        for r in range(6):
            s = pA[i, r]
            for c in range(6):
                s += scratch[2, r, c] * cb[i, c]
            for a in range(nj):
                s += scratch[1, r, a] * u[i, a]
            pA[k, r] += s


@njit_leaf
def _accelerate_single(
    i: int,
    k: int,
    c0: int,
    S: np.ndarray,
    cb: np.ndarray,
    U: np.ndarray,
    Dinv: np.ndarray,
    u: np.ndarray,
    acc: np.ndarray,
    qdd: np.ndarray,
) -> None:
    """Pass 3 for a one-DoF body ``i`` under the parent ``k``: ``qdd[c0]`` and ``acc[i]``,
    the parent's acceleration held in locals (no scratch stored through and read back)."""
    a = (
        acc[k, 0] + cb[i, 0],
        acc[k, 1] + cb[i, 1],
        acc[k, 2] + cb[i, 2],
        acc[k, 3] + cb[i, 3],
        acc[k, 4] + cb[i, 4],
        acc[k, 5] + cb[i, 5],
    )
    s = u[i, 0]
    for r in range(6):
        s -= U[i, r, 0] * a[r]
    x = 0.0 + Dinv[i, 0, 0] * s  # (the general case's sum from 0.0: -0.0 comes out +0.0)
    qdd[c0] = x
    for r in range(6):
        acc[i, r] = a[r] + S[r, c0] * x


@njit_leaf
def acceleration_pass(
    m: ModelArrays,
    S: np.ndarray,
    cb: np.ndarray,
    U: np.ndarray,
    Dinv: np.ndarray,
    u: np.ndarray,
    acc: np.ndarray,
    qdd: np.ndarray,
    scratch: np.ndarray,
) -> None:
    """Pass 3, root to leaves: joint accelerations and body accelerations.

    Gravity enters as the fictitious root acceleration ``[-g; 0]``.

    Parameters
    ----------
    S, cb, U, Dinv, u : from passes 1 and 2 (``Dinv`` of the root overwritten by its
        Cholesky factor).
    acc : (nb, 6) output, body spatial accelerations at O (gravity offset included).
    qdd : (nv,) output, generalized accelerations.
    scratch : (2, 6) scratch.
    """
    g = m.gravity
    for i in range(m.parent.shape[0]):
        k = m.parent[i]
        nj = m.nvj[i]
        c0 = m.iv[i]
        if k >= 0 and nj == 1:  # the common case in locals (the general one's operations)
            _accelerate_single(i, k, c0, S, cb, U, Dinv, u, acc, qdd)
            continue
        if k >= 0:
            for r in range(6):
                scratch[1, r] = acc[k, r] + cb[i, r]
        else:
            for r in range(3):
                scratch[1, r] = -g[r] + cb[i, r]
                scratch[1, 3 + r] = cb[i, 3 + r]
        for a in range(nj):
            s = u[i, a]
            for r in range(6):
                s -= U[i, r, a] * scratch[1, r]
            scratch[0, a] = s
        if k < 0 and nj > 0:
            cholesky_solve_inplace(Dinv[i, :nj, :nj], scratch[0, :nj])
            for a in range(nj):
                qdd[c0 + a] = scratch[0, a]
        else:
            for a in range(nj):
                s = 0.0
                for b in range(nj):
                    s += Dinv[i, a, b] * scratch[0, b]
                qdd[c0 + a] = s
        for r in range(6):
            s = scratch[1, r]
            for a in range(nj):
                s += S[r, c0 + a] * qdd[c0 + a]
            acc[i, r] = s


@njit_leaf
def aba_views(ws: np.ndarray, nb: int, nv: int) -> tuple[np.ndarray, ...]:
    """The arrays of the three passes, views on ``ws`` after its kinematics: every array of
    the passes lives in the one workspace (allocation dominates the cost of this kernel for
    small trees otherwise). For :func:`aba_passes` and the closed-chain sweep.

    Returns
    -------
    IA : (nb, 6, 6);  pA, cb, vel : (nb, 6);  U, Dinv : (nb, 6, 6);  u, acc : (nb, 6);
    scratch : (3, 6, 6);  tail : (2, 6) -- as in the three passes.
    """
    o = kinematics_ws_size(nb, nv)
    IA = carve(ws, o, (nb, 6, 6))
    o += 36 * nb
    pA = carve(ws, o, (nb, 6))
    o += 6 * nb
    cb = carve(ws, o, (nb, 6))
    o += 6 * nb
    vel = carve(ws, o, (nb, 6))
    o += 6 * nb
    U = carve(ws, o, (nb, 6, 6))
    o += 36 * nb
    Dinv = carve(ws, o, (nb, 6, 6))
    o += 36 * nb
    u = carve(ws, o, (nb, 6))
    o += 6 * nb
    acc = carve(ws, o, (nb, 6))
    o += 6 * nb
    scratch = carve(ws, o, (3, 6, 6))
    o += 108
    return IA, pA, cb, vel, U, Dinv, u, acc, scratch, carve(ws, o, (2, 6))


@njit  # compiled once, called by every ABA caller (aba_into, conservation's fused first stage)
def aba_passes(
    m: ModelArrays,
    v: np.ndarray,
    tau: np.ndarray,
    fext: np.ndarray,
    qdd: np.ndarray,
    ws: np.ndarray,
) -> None:
    """The three passes of :func:`aba_into` on kinematics already in ``ws`` (its first
    ``kinematics_ws_size`` entries, from :func:`.kinematics.kinematics_into`); arguments as
    :func:`aba_into`."""
    nb = m.parent.shape[0]
    nv = v.shape[0]
    R, p, S, mw, hw, Iw, T = kinematics_views(ws, nb, nv)
    IA, pA, cb, vel, U, Dinv, u, acc, scratch, tail = aba_views(ws, nb, nv)
    velocity_pass(m, v, S, mw, hw, Iw, fext, vel, cb, pA, IA)
    articulated_inertia_pass(m, tau, S, cb, IA, pA, U, Dinv, u, scratch)
    acceleration_pass(m, S, cb, U, Dinv, u, acc, qdd, tail)


@njit_leaf
def aba_on_views(
    m: ModelArrays,
    q: np.ndarray,
    v: np.ndarray,
    tau: np.ndarray,
    fext: np.ndarray,
    qdd: np.ndarray,
    kin: tuple,
    arts: tuple,
) -> None:
    """:func:`aba_into` on the views of its workspace, carved by the caller: the kinematics
    and the three passes in one compiled body.

    A caller looping over states (the batched rows) carves the views once for all of them;
    in one body, with no call between the kinematics and the passes, a UR5 state takes 40 %
    less time than through :func:`.kinematics.kinematics_into` and :func:`aba_passes`
    (measured 2026-11-28: 1.65 to 1.0 us per row of the batched forward dynamics on one
    core). Not used by the single-call entry point: there it gained 7 % of a call (2.7 to
    2.5 us from Python) and took the first compile of the simulator's engine from 28 to
    43 s (numba's inlining of the whole sweep into one function compiles slowly).

    Parameters
    ----------
    q, v, tau, fext, qdd : as in :func:`aba_into`.
    kin : the 7 arrays of :func:`.kinematics.kinematics_views` on the workspace.
    arts : the 10 arrays of :func:`aba_views` on the same workspace.
    """
    R, p, S, mw, hw, Iw, T = kin
    IA, pA, cb, vel, U, Dinv, u, acc, scratch, tail = arts
    kinematics_on_views(m, q, kin)
    velocity_pass(m, v, S, mw, hw, Iw, fext, vel, cb, pA, IA)
    articulated_inertia_pass(m, tau, S, cb, IA, pA, U, Dinv, u, scratch)
    acceleration_pass(m, S, cb, U, Dinv, u, acc, qdd, tail)


@njit_leaf
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

    Same result as ``H^-1 (tau - c)`` [S0 eq. 39] in O(n) operations. All articulated
    inertias and bias forces are expressed about O in the inertial frame, so no spatial
    transforms appear. The free base is a 6-DoF joint with motion subspace ``S_0`` (see
    :func:`.kinematics.motion_subspace`) and velocity-product term ``[V0 x w0; 0]``.

    Parameters
    ----------
    tau : (nv,) generalized force ``[F_b; tau]``.
    fext : (nb, 6) body wrenches about O, or an empty (0, 6) array for none.
    qdd : (nv,) output accelerations.
    ws : (aba_ws_size(nb, nv),) scratch (nothing assumed on entry).
    """
    nb = m.parent.shape[0]
    R, p, S, mw, hw, Iw, T = kinematics_views(ws, nb, v.shape[0])
    kinematics_into(m, q, R, p, S, mw, hw, Iw, T)
    aba_passes(m, v, tau, fext, qdd, ws)


@njit  # not inlined: inlined into rk4_step_into, it made an RK4 step 20 % slower (measured)
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
def forward_dynamics(
    m: ModelArrays,
    q: np.ndarray,
    v: np.ndarray,
    tau: np.ndarray,
    fext: np.ndarray,
    with_friction: bool,
) -> np.ndarray:
    """Accelerations by :func:`aba_into`, with the joint friction [S0 eq. 41] when enabled.

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
