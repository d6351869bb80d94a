"""Closed-chain forward dynamics at ABA cost: the tree's articulated inertias reused for the
loop-closure rows.

The Lagrangian system of a tree closed by cut hinges ([M eqs. 10, 49, 63], seed 001) is solved
in the tree's own coordinates: with ``M`` the tree's mass matrix and ``C`` the cut-hinge rows
on the generalized velocities (not Mufti's ``M = diag(m_i E_3)`` [M eq. 4] and incidence
matrix ``C`` [M eq. 1]; docs/equations.md, code names),

    qdd = qdd_free + M^-1 C^T lambda,    (C M^-1 C^T) lambda = gamma - C qdd_free,

``qdd_free`` by one ABA sweep, and each column of ``M^-1 C^T`` by one more backward and
forward pass *with the articulated inertias of that sweep* and a zero bias (the row's unit
wrench, ``+`` on body ``a`` and ``-`` on body ``b``, as the only load): O(n) per row, O(m n)
in all for ``m`` rows (Featherstone 2008, sec. 8.3, the loop-closure "test force" method;
Pinocchio's ``constraintDynamics`` solves the same system). The ``m x m`` Delassus matrix
``C M^-1 C^T`` is read off the test accelerations at the loop bodies.

Rows are those of :class:`ffsim_ros.dynamics.mufti.ClosedChain` (module
:mod:`ffsim_ros.dynamics.mufti.closed`), written as spatial wrenches at O: a translational
row along ``d`` is the force ``d`` at the midpoint ``o_m`` of the two hinge points,
``W = [d; o_m x d]``; a rotational row along ``d`` is the couple ``W = [0; d]``. With spatial
accelerations ``A = [a_O; w']`` the row reads ``W . (A_a - A_b) = gamma``, the
velocity-product terms of [M eqs. 6-9, 48] becoming ``-d . (w_a x v_{o_a} - w_b x v_{o_b})``
(``v_o`` the velocity of the hinge point) and ``-d . (w_a x w_b)``; Baumgarte's
``- alpha W . (V_a - V_b) - beta xi`` [M Remark 4] is added when ``alpha``, ``beta`` are.

Redundant rows are reduced per cut hinge as the NumPy reference does: the SVD of the hinge's
rows on the tree's velocities ``C_k`` (its path columns only), rows kept along the left
singular vectors above ``rtol`` times the largest and above ``rtol beta_k``
(:func:`.cut_hinges.hinge_scale`: the bound on them from the unit rows and the path's motion
subspaces, so that a hinge whose rows are all round-off -- a closure on an existing joint --
keeps none), minimum-norm multipliers ``U_k lambda_k`` ([M Appendix case 2], decided per
hinge). The Delassus system is solved by Cholesky; where it is singular or nearly so after
that (rows dependent across hinges, a loop singularity) by the rank-revealing solve of
:mod:`.delassus`: rank decided on the rows' singular values at ``rtol``, not on the Delassus
matrix's (their squares), minimum-norm loop multipliers. For the motion (the accelerations,
the velocity projection) rows are also dropped below the closure floor of
:func:`.cut_hinges.rank_floor`, ``sqrt(4 beta_k |xi|)`` at loop errors ``xi``: near a loop
singularity a configuration within the projection's tolerance of the manifold has rows that
are not there on it, and they would lock the mechanism.
"""

from __future__ import annotations

import numpy as np

from ..jit import borrow, carve, njit
from .aba import (
    aba_views,
    aba_ws_size,
    acceleration_pass,
    articulated_inertia_pass,
    velocity_pass,
)
from .conservation import correct_momentum, momentum_after, system_momentum
from .cut_hinges import (
    hinge_rank,
    hinge_scale,
    hinge_velocity_rows,
    loop_row_count,
    loop_rows,
)
from .delassus import solve_delassus, solve_firm
from .friction import joint_friction
from .kinematics import joint_velocity, kinematics_into, kinematics_views, kinematics_ws_size
from .layout import ModelArrays, plain_vector, unpack
from .lie_group import RK4_NODES, RK4_WEIGHTS, add_body_wrench, chart_rate, integrate, rk4_stage
from .momentum import momentum_and_energy

#: A position projection after a step that takes the configuration back by more than this
#: fraction of the step (kinetic-energy metric) converged onto a loop singularity instead of
#: closing the loops next to the step's end (:mod:`ffsim_ros.dynamics.mufti.closing`).
COLLAPSE_RATIO = 0.25


@njit
def unit_response(
    m: ModelArrays,
    S: np.ndarray,
    U: np.ndarray,
    Dinv: np.ndarray,
    w: np.ndarray,
    ia: int,
    ib: int,
    pz: np.ndarray,
    uz: np.ndarray,
    qdd: np.ndarray,
    acc: np.ndarray,
) -> None:
    """``M^-1 C^T e`` for one row: the accelerations of the unit wrench ``w`` (6,) on body
    ``ia`` and ``-w`` on ``ib``, no velocity, no gravity, no efforts, by the backward and
    forward passes of ABA with its articulated inertias ``U``, ``Dinv`` (the root's ``Dinv``
    holding its Cholesky factor, as :func:`.aba.acceleration_pass` leaves it).

    Parameters
    ----------
    pz, uz : (nb, 6) scratch;  qdd : (nv,) output;  acc : (nb, 6) output spatial
    accelerations at O.
    """
    nb = m.parent.shape[0]
    for i in range(nb):
        for r in range(6):
            pz[i, r] = 0.0
            uz[i, r] = 0.0
    for r in range(6):  # the bias is -f_ext
        pz[ia, r] -= w[r]
        pz[ib, r] += w[r]
    # the backward pass visits only the bodies on the paths from ia and ib to the root (the
    # others carry no load: their u and their share to the parent are zero; 11 % off the six
    # responses of the floating platform). A parent's index is below its child's, so the two
    # cursors walk both paths in decreasing index order, each body once (a common ancestor
    # too).
    ca = ia
    cb = ib
    while ca >= 0 or cb >= 0:
        i = max(ca, cb)
        if ca == i:
            ca = m.parent[ca]
        if cb == i:
            cb = m.parent[cb]
        nj = m.nvj[i]
        c0 = m.iv[i]
        for a in range(nj):
            s = 0.0
            for r in range(6):
                s -= S[r, c0 + a] * pz[i, r]
            uz[i, a] = s
        k = m.parent[i]
        if k < 0:
            continue
        # p_parent += p + U Dinv u
        for b in range(nj):
            t = 0.0
            for a in range(nj):
                t += Dinv[i, b, a] * uz[i, a]
            for r in range(6):
                pz[i, r] += U[i, r, b] * t
        for r in range(6):
            pz[k, r] += pz[i, r]
    for i in range(nb):
        k = m.parent[i]
        nj = m.nvj[i]
        c0 = m.iv[i]
        if k < 0:
            for r in range(6):
                acc[i, r] = 0.0
            if nj > 0:  # root: D y = u by the Cholesky factor (lower triangle of Dinv)
                for a in range(nj):
                    s = uz[i, a]
                    for b in range(a):
                        s -= Dinv[i, a, b] * qdd[c0 + b]
                    qdd[c0 + a] = s / Dinv[i, a, a]
                for a in range(nj - 1, -1, -1):
                    s = qdd[c0 + a]
                    for b in range(a + 1, nj):
                        s -= Dinv[i, b, a] * qdd[c0 + b]
                    qdd[c0 + a] = s / Dinv[i, a, a]
        else:
            for a in range(nj):
                s = uz[i, a]
                for r in range(6):
                    s -= U[i, r, a] * acc[k, r]
                pz[i, a] = s  # pz row reused as scratch: the backward pass is done
            for a in range(nj):
                s = 0.0
                for b in range(nj):
                    s += Dinv[i, a, b] * pz[i, b]
                qdd[c0 + a] = s
            for r in range(6):
                acc[i, r] = acc[k, r]
        for r in range(6):
            s = acc[i, r]
            for a in range(nj):
                s += S[r, c0 + a] * qdd[c0 + a]
            acc[i, r] = s


@njit
def reduced_responses(
    m: ModelArrays,
    S: np.ndarray,
    U: np.ndarray,
    Dinv: np.ndarray,
    W: np.ndarray,
    rhs: np.ndarray,
    loop_i: np.ndarray,
    rtol: float,
    closure: float,
    basis: np.ndarray,
    keep: np.ndarray,
    firm: np.ndarray,
) -> tuple:
    """The independent row combinations of every cut hinge and their test responses.

    Per hinge ``k``: ``U_k`` (its independent combinations, :func:`jacobi_svd` of ``C_k^T``,
    singular values above ``rtol`` times the largest and ``rtol`` times :func:`hinge_scale`;
    identity when all rows are independent) into ``basis`` (nrows, 6) and their count into
    ``keep`` (nl,); into ``firm`` (nl,) the count of those also above the closure floor of
    :func:`.cut_hinges.rank_floor` for loop errors of norm ``closure`` (the leading columns
    of ``U_k``: the rows that count for the motion, :func:`.delassus.solve_firm`). Then, for
    each of the ``K`` combined rows ``U_k^T W_k``, the accelerations of its unit wrench
    (:func:`unit_response`).

    Returns
    -------
    Wr : (K, 6) combined rows;  br : (K,) their right-hand sides ``U_k^T rhs_k``;
    rows_a, rows_b : (K,) bodies;  Mq : (K, nv) ``(M^-1 C^T)^T``;  Ma : (K, nb, 6) the body
    accelerations of each;  A : (K, K) Delassus matrix ``C M^-1 C^T``;  floor : float, the
    largest closure floor of the hinges (the singular values of the rows across hinges are
    judged against it, :func:`.delassus.solve_delassus`).
    """
    nb = m.parent.shape[0]
    nv = S.shape[1]
    nl = loop_i.shape[0]
    nrows = W.shape[0]
    # two allocations for all the scratch (each costs about as much as a short pass)
    iw = np.empty(2 * nrows + nb, dtype=np.int64)
    rows_a = iw[:nrows]
    rows_b = iw[nrows : 2 * nrows]
    flag = iw[2 * nrows :]
    fw = np.empty(7 * nrows + 42 + 6 * nv + nrows * nv + 6 * nrows * nb + 12 * nb + nrows * nrows)
    Wr = carve(fw, 0, (nrows, 6))
    o = 6 * nrows
    br = fw[o : o + nrows]
    o += nrows
    Vk = carve(fw, o, (6, 6))
    o += 36
    svk = fw[o : o + 6]
    o += 6
    cbuf = fw[o : o + 6 * nv]
    o += 6 * nv
    # the callees get borrowed views (no reference counting: 5-12 % of a call): the caller
    # holds S, U, Dinv, W and basis, and the views this function returns hold fw and iw
    Sb, Ub, Db, Wb, bb = borrow(S), borrow(U), borrow(Dinv), borrow(W), borrow(basis)
    flag, cbuf, Vk, svk = borrow(flag), borrow(cbuf), borrow(Vk), borrow(svk)
    K = 0
    r0 = 0
    floor_max = 0.0
    for lp in range(nl):
        nr = loop_row_count(loop_i[lp, 2])
        ia = loop_i[lp, 0]
        ib = loop_i[lp, 1]
        Ct = hinge_velocity_rows(m, Sb, Wb, r0, nr, ia, ib, flag, cbuf)
        beta = hinge_scale(m, Sb, Wb, r0, nr, flag)
        kk, kf, tight = hinge_rank(Ct, Vk, svk, beta, rtol, closure, bb, r0, nr)
        floor_max = max(floor_max, tight)
        keep[lp] = kk
        firm[lp] = kf
        for j in range(kk):
            for c in range(6):
                s = 0.0
                for r in range(nr):
                    s += basis[r0 + r, j] * W[r0 + r, c]
                Wr[K + j, c] = s
            s = 0.0
            for r in range(nr):
                s += basis[r0 + r, j] * rhs[r0 + r]
            br[K + j] = s
            rows_a[K + j] = ia
            rows_b[K + j] = ib
        K += kk
        r0 += nr
    Mq = carve(fw, o, (K, nv))
    o += K * nv
    Ma = carve(fw, o, (K, nb, 6))
    o += 6 * K * nb
    pz = carve(fw, o, (nb, 6))
    o += 6 * nb
    uz = carve(fw, o, (nb, 6))
    o += 6 * nb
    Wrb, Mqb, Mab, pz, uz = borrow(Wr), borrow(Mq), borrow(Ma), borrow(pz), borrow(uz)
    for j in range(K):
        unit_response(m, Sb, Ub, Db, Wrb[j], rows_a[j], rows_b[j], pz, uz, Mqb[j], Mab[j])
    A = carve(fw, o, (K, K))
    for j in range(K):
        for k in range(j + 1):
            s = 0.0
            for c in range(6):
                s += Wr[j, c] * (Ma[k, rows_a[j], c] - Ma[k, rows_b[j], c])
            A[j, k] = s
            A[k, j] = s
    return Wr[:K], br[:K], rows_a[:K], rows_b[:K], Mq, Ma, A, floor_max


@njit
def _tree_sweep(
    m: ModelArrays,
    q: np.ndarray,
    v: np.ndarray,
    gen: np.ndarray,
    fext: np.ndarray,
    with_friction: bool,
    qdd: np.ndarray,
    acc: np.ndarray,
) -> tuple[np.ndarray, ...]:
    """Kinematics and one ABA sweep; returns ``(R, p, S, vel, U, Dinv)`` (the root's ``Dinv``
    holding its Cholesky factor)."""
    nb = m.parent.shape[0]
    nv = v.shape[0]
    o = aba_ws_size(nb, nv)
    ws = np.empty(o + nv)
    R, p, S, mw, hw, Iw, T = kinematics_views(ws, nb, nv)
    kinematics_into(m, q, R, p, S, mw, hw, Iw, T)
    # the passes inlined here, on the views of aba_passes (through aba_passes, a closed-chain
    # step measured about 5 % slower); its own ``acc`` view is left unused (``acc`` is given)
    IA, pA, cb, vel, U, Dinv, u, _, scratch, tail = aba_views(ws, nb, nv)
    g = ws[o : o + nv]
    off = nv - gen.shape[0]  # joint efforts alone: the base's part zero
    for c in range(off):
        g[c] = 0.0
    for c in range(off, nv):
        g[c] = gen[c - off]
    if with_friction:
        f = np.empty(nv)
        joint_friction(m, v, f)
        for c in range(nv):
            g[c] += f[c]
    velocity_pass(m, v, S, mw, hw, Iw, fext, vel, cb, pA, IA)
    articulated_inertia_pass(m, g, S, cb, IA, pA, U, Dinv, u, scratch)
    acceleration_pass(m, S, cb, U, Dinv, u, acc, qdd, tail)
    return R, p, S, vel, U, Dinv


@njit
def _row_arrays(nrows: int, nl: int) -> tuple[np.ndarray, ...]:
    """``W`` (nrows, 6), ``rhs``, ``xi``, ``verr`` (nrows,), ``ob`` (nl, 3) and a zeroed
    ``basis`` (nrows, 6), carved from one allocation."""
    fw = np.empty(15 * nrows + 3 * nl)
    W = carve(fw, 0, (nrows, 6))
    rhs = fw[6 * nrows : 7 * nrows]
    xi = fw[7 * nrows : 8 * nrows]
    verr = fw[8 * nrows : 9 * nrows]
    basis = carve(fw, 9 * nrows, (nrows, 6))
    for r in range(6 * nrows):
        fw[9 * nrows + r] = 0.0
    ob = carve(fw, 15 * nrows, (nl, 3))
    return W, rhs, xi, verr, ob, basis


@njit
def closed_chain_dynamics(
    m: ModelArrays,
    q: np.ndarray,
    v: np.ndarray,
    gen: np.ndarray,
    fext: np.ndarray,
    with_friction: bool,
    loop_i: np.ndarray,
    loop_f: np.ndarray,
    alpha: float,
    beta: float,
    rtol: float,
    qdd: np.ndarray,
    lam: np.ndarray,
    acc: np.ndarray,
) -> int:
    """Closed-chain accelerations and loop multipliers (module docstring).

    Parameters
    ----------
    q : (nq,) ;  v : (nv,) tree state.
    gen : (nv,) generalized force ``[F_b; tau]``, or (n,) joint efforts alone (``F_b``
        zero); joint friction added when ``with_friction``.
    fext : (nb, 6) body wrenches about O, or an empty (0, 6) array.
    loop_i, loop_f : cut hinges (:func:`loop_rows`).
    alpha, beta : Baumgarte gains [1/s, 1/s^2] (zero for the plain ``xi'' = 0``).
    rtol : rank threshold of a hinge's singular values, relative to its largest and to
        :func:`.cut_hinges.hinge_scale` (and of the reduced rows' across hinges).
    qdd : (nv,) output accelerations;  lam : (nrows,) output multipliers per cut-hinge row
    (``+ W lam`` on body a, ``- W lam`` on body b);  acc : (nb, 6) output body spatial
    accelerations at O, gravity offset included (``A - [g; 0]``); an empty (0, 6) array
    skips them.

    Returns
    -------
    int
        Rank of the (per-hinge reduced) loop rows on the tree: the number of independent
        loop rows; -1 when the accelerations are not finite (a singular configuration or a
        non-finite input).
    """
    nb = m.parent.shape[0]
    nv = v.shape[0]
    nl = loop_i.shape[0]
    nrows = lam.shape[0]
    with_acc = acc.shape[0] > 0
    acc_free = acc if with_acc else np.empty((nb, 6))
    R, p, S, vel, U, Dinv = _tree_sweep(m, q, v, gen, fext, with_friction, qdd, acc_free)
    W, rhs, xi, verr, ob, basis = _row_arrays(nrows, nl)
    loop_rows(m, R, p, vel, loop_i, loop_f, W, rhs, xi, verr, ob)
    closure = 0.0
    for r in range(nrows):
        rhs[r] -= alpha * verr[r] + beta * xi[r]
        closure += xi[r] * xi[r]
    keep = np.empty(nl, dtype=np.int64)
    firm = np.empty(nl, dtype=np.int64)
    Wr, br, ra, rb, Mq, Ma, A, floor = reduced_responses(
        m, S, U, Dinv, W, rhs, loop_i, rtol, np.sqrt(closure), basis, keep, firm
    )
    K = br.shape[0]
    for j in range(K):
        s = br[j]
        for c in range(6):
            s -= Wr[j, c] * (acc_free[ra[j], c] - acc_free[rb[j], c])
        br[j] = s
    lam_r, rank = solve_firm(m, S, A, br, Wr, ra, rb, Mq, rtol, floor, keep, firm)
    for j in range(K):
        lj = lam_r[j]
        for c in range(nv):
            qdd[c] += lj * Mq[j, c]
        if with_acc:
            for i in range(nb):
                for c in range(6):
                    acc[i, c] += lj * Ma[j, i, c]
    # multipliers of every row: U_k lambda_k
    r0 = 0
    k0 = 0
    for lp in range(nl):
        nr = loop_row_count(loop_i[lp, 2])
        for r in range(nr):
            s = 0.0
            for j in range(keep[lp]):
                s += basis[r0 + r, j] * lam_r[k0 + j]
            lam[r0 + r] = s
        r0 += nr
        k0 += keep[lp]
    for c in range(nv):
        if not np.isfinite(qdd[c]):
            return -1
    return rank


@njit
def loop_projection(
    m: ModelArrays,
    q: np.ndarray,
    v: np.ndarray,
    loop_i: np.ndarray,
    loop_f: np.ndarray,
    nrows: int,
    rtol: float,
    dq: np.ndarray,
    dv: np.ndarray,
) -> float:
    """The kinetic-energy-metric corrections of a state near the constraint manifold:
    ``dq = -M^-1 C^T (C M^-1 C^T)^+ xi`` and ``dv = -M^-1 C^T (C M^-1 C^T)^+ C v`` on the
    independent loop rows (the displacement and velocity change internal loop impulses
    produce; :meth:`ffsim_ros.dynamics.mufti.ClosedChain.project`). ``dq`` on every row
    above the round-off floor (those that close the loops, singular ones included: a
    Gauss-Newton step along a row of singular value ``s`` and error ``~s^2 / |H|`` is
    ``~s / |H|``); ``dv`` on the rows that count for the motion at the loop errors of ``q``
    (:func:`.cut_hinges.rank_floor`), as the dynamics there.

    Returns
    -------
    float
        ``max |xi|`` [m, rad] at ``q``.
    """
    nb = m.parent.shape[0]
    nv = v.shape[0]
    nl = loop_i.shape[0]
    qdd = np.empty(nv)
    acc = np.empty((nb, 6))
    R, p, S, vel, U, Dinv = _tree_sweep(m, q, v, np.zeros(nv), np.empty((0, 6)), False, qdd, acc)
    W, rhs, xi, verr, ob, basis = _row_arrays(nrows, nl)
    loop_rows(m, R, p, vel, loop_i, loop_f, W, rhs, xi, verr, ob)
    err = 0.0
    closure = 0.0
    for r in range(nrows):
        err = max(err, abs(xi[r]))
        closure += xi[r] * xi[r]
    keep = np.empty(nl, dtype=np.int64)
    firm = np.empty(nl, dtype=np.int64)
    Wr, xr, ra, rb, Mq, Ma, A, floor = reduced_responses(
        m, S, U, Dinv, W, xi, loop_i, rtol, np.sqrt(closure), basis, keep, firm
    )
    K = xr.shape[0]
    vr = np.empty(K)
    r0 = 0
    k0 = 0
    for lp in range(nl):  # U_k^T (C v)_k
        nr = loop_row_count(loop_i[lp, 2])
        for j in range(keep[lp]):
            s = 0.0
            for r in range(nr):
                s += basis[r0 + r, j] * verr[r0 + r]
            vr[k0 + j] = s
        r0 += nr
        k0 += keep[lp]
    yq, _ = solve_delassus(m, S, A, xr, Wr, ra, rb, Mq, rtol, 0.0)
    yv, _ = solve_firm(m, S, A, vr, Wr, ra, rb, Mq, rtol, floor, keep, firm)
    for c in range(nv):
        sq = 0.0
        sv = 0.0
        for j in range(K):
            sq += Mq[j, c] * yq[j]
            sv += Mq[j, c] * yv[j]
        dq[c] = -sq
        dv[c] = -sv
    return err


@njit
def _loop_errors(
    m: ModelArrays,
    q: np.ndarray,
    v: np.ndarray,
    loop_i: np.ndarray,
    loop_f: np.ndarray,
    nrows: int,
) -> float:
    """``max(max |xi|, max |C v|)`` [m, rad, m/s, rad/s]: the loop rows' position and velocity
    errors at ``(q, v)`` from the kinematics and the body velocities alone (no dynamics);
    ``inf`` for a non-finite state."""
    nb = m.parent.shape[0]
    nv = v.shape[0]
    ws = np.empty(kinematics_ws_size(nb, nv) + 6 * nb)
    R, p, S, mw, hw, Iw, T = kinematics_views(ws, nb, nv)
    vel = carve(ws, kinematics_ws_size(nb, nv), (nb, 6))
    kinematics_into(m, q, R, p, S, mw, hw, Iw, T)
    for i in range(nb):
        k = m.parent[i]
        sv = joint_velocity(S, m.iv[i], m.nvj[i], v)
        for r in range(6):
            vel[i, r] = (vel[k, r] if k >= 0 else 0.0) + sv[r]
    W, rhs, xi, verr, ob, _ = _row_arrays(nrows, loop_i.shape[0])
    loop_rows(m, R, p, vel, loop_i, loop_f, W, rhs, xi, verr, ob)
    err = 0.0
    for r in range(nrows):
        a = abs(xi[r])
        b = abs(verr[r])
        if not (np.isfinite(a) and np.isfinite(b)):
            return np.inf  # the projection that follows reports it
        err = max(err, a, b)
    return err


@njit
def _undone(m: ModelArrays, q: np.ndarray, d: np.ndarray, p: np.ndarray) -> bool:
    """Whether the displacement ``p`` (nv,) exceeds :data:`COLLAPSE_RATIO` of ``d`` (nv,) in
    the kinetic-energy metric at ``q``; not looked at in that metric when it is below 1e-4 of
    ``d`` in the plain norm (a projection after a regular step moves by ~1e-9 of it)."""
    nb = m.parent.shape[0]
    nv = d.shape[0]
    pp = 0.0
    dd = 0.0
    for c in range(nv):
        pp += p[c] * p[c]
        dd += d[c] * d[c]
    if not pp > 1e-8 * dd:
        return False
    ws = np.empty(kinematics_ws_size(nb, nv))
    R, p0, S, mw, hw, Iw, T = kinematics_views(ws, nb, nv)
    kinematics_into(m, q, R, p0, S, mw, hw, Iw, T)
    step = momentum_and_energy(m, d, S, mw, hw, Iw)[1]
    back = momentum_and_energy(m, p, S, mw, hw, Iw)[1]
    return step > 0.0 and back > COLLAPSE_RATIO * COLLAPSE_RATIO * step


@njit
def closed_chain_step(
    m: ModelArrays,
    q: np.ndarray,
    v: np.ndarray,
    gen: np.ndarray,
    with_friction: bool,
    loop_i: np.ndarray,
    loop_f: np.ndarray,
    gains: np.ndarray,
    nrows: int,
    dt: float,
    settings: np.ndarray,
    wrench_body: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, int]:
    """One RK4 step of the closed chain in the local chart at ``q`` (the scheme of
    :func:`.lie_group.rk4_step`, :func:`closed_chain_dynamics` at each stage), then the
    projection onto the manifold (:func:`loop_projection`: Gauss-Newton on the positions,
    the velocity correction) where the loop rows' position or velocity errors exceed ``tol``
    (:func:`_loop_errors`, from the kinematics alone: at 1 kHz the RK4 drift of most steps is
    ~1e-15 and the projection, an evaluation of the dynamics, is spared) and, when asked,
    the momentum correction to the momentum the step must end with under gravity alone
    (:func:`.conservation.momentum_after`, :func:`.conservation.correct_momentum`; the
    momentum about O only: the CoM is not moved onto its ballistic line, as the Python
    projection of the other methods does not).

    Parameters
    ----------
    q : (nq,) ;  v : (nv,) the tree state;  dt : step [s].
    gen : (nv,) generalized force ``[F_b; tau]`` [N, N m, N m | N], held over the step.
    gains : (3,) ``[alpha, beta, rtol]``: Baumgarte gains in the stages and the rank
        threshold.
    settings : (4,) ``[project, conserve, tol, max_iter]`` (flags as 0/1; ``tol`` on the loop
        errors [m, rad, m/s, rad/s]).
    wrench_body : (6,) ``[f; n]`` at the base CoM in the base frame [N, N m], added to ``gen``
        turned by each stage's base attitude (:func:`.lie_group.add_body_wrench`), or (0,).

    Returns
    -------
    q_next : (nq,) ;  v_next : (nv,) ;  status : int
        0, or 1 for non-finite accelerations, 2 for a projection that did not converge, 3 for
        a projection that took back more than :data:`COLLAPSE_RATIO` of the step (converging
        onto a loop singularity); with 2 and 3 the step's end before the projection, for the
        caller's nearest closed configuration (:mod:`ffsim_ros.dynamics.mufti.closing`).
    """
    nv = v.shape[0]
    project = settings[0] != 0.0
    conserve = settings[1] != 0.0
    tol = settings[2]
    max_iter = int(settings[3])
    empty = np.empty((0, 6))
    target = np.empty(0)
    if conserve:
        h, mass, first, _ = system_momentum(m, q, v)
        target = momentum_after(m, h, mass, first, dt)
    lam = np.empty(nrows)
    d = np.zeros(nv)
    a = np.zeros(nv)
    theta = np.zeros(nv)
    v_sum = np.zeros(nv)
    qs, vs, ths = q, v, d
    force = gen.copy()
    for s in range(4):
        if s > 0:
            qs, vs, ths = rk4_stage(m, q, v, d, a, RK4_NODES[s] * dt)
        if wrench_body.shape[0] > 0:
            add_body_wrench(qs, gen, wrench_body, force)
        a = np.empty(nv)
        rank = closed_chain_dynamics(
            m,
            qs,
            vs,
            force,
            empty,
            with_friction,
            loop_i,
            loop_f,
            gains[0],
            gains[1],
            gains[2],
            a,
            lam,
            empty,
        )
        if rank < 0:
            return q.copy(), v.copy(), 1
        d = chart_rate(m, ths, vs)
        b = RK4_WEIGHTS[s] * dt
        theta += b * d
        v_sum += b * a
    qn = integrate(m, q, theta, 1.0)
    vn = v + v_sum
    if not project:
        return qn, vn, 0
    # a step that ends with the loops closed to tol, positions and velocities (at 1 kHz most
    # do: the RK4 drift is ~1e-15), needs no projection; the check costs the kinematics alone
    if _loop_errors(m, qn, vn, loop_i, loop_f, nrows) <= tol:
        if conserve:
            vn = correct_momentum(m, qn, vn, target[:6])[1]
        return qn, vn, 0
    dq = np.empty(nv)
    dv = np.empty(nv)
    q_end = qn
    back = np.zeros(nv)
    for it in range(max_iter + 1):
        err = loop_projection(m, qn, vn, loop_i, loop_f, nrows, gains[2], dq, dv)
        if not np.isfinite(err):
            return qn, vn, 1
        if err <= tol:
            break
        if it == max_iter:
            return q_end, vn, 2
        qn = integrate(m, qn, dq, 1.0)
        back += dq
    if it > 0 and _undone(m, q_end, theta, back):  # (after a cheap look: usually ~1e-9 of it)
        return q_end, vn, 3
    vn += dv
    if conserve:
        vn = correct_momentum(m, qn, vn, target[:6])[1]
    return qn, vn, 0


@njit
def transmitted_wrenches(
    m: ModelArrays,
    q: np.ndarray,
    v: np.ndarray,
    acc: np.ndarray,
    fext: np.ndarray,
    out: np.ndarray,
) -> None:
    """``out[i]`` (nb, 6): the wrench ``[f; n_O]`` at O the parent exerts on body ``i``
    through joint ``i`` (constraint and actuation), from the body accelerations ``acc`` (gravity
    offset included) and the other loads ``fext`` (nb, 6) (external and loop wrenches)."""
    nb = m.parent.shape[0]
    nv = v.shape[0]
    ws = np.empty(kinematics_ws_size(nb, nv))
    R, p, S, mw, hw, Iw, T = kinematics_views(ws, nb, nv)
    kinematics_into(m, q, R, p, S, mw, hw, Iw, T)
    vel = np.zeros((nb, 6))
    for i in range(nb):
        k = m.parent[i]
        for r in range(6):
            s = vel[k, r] if k >= 0 else 0.0
            for a in range(m.nvj[i]):
                s += S[r, m.iv[i] + a] * v[m.iv[i] + a]
            vel[i, r] = s
    for i in range(nb):
        x = vel[i]
        # I x and I acc: [m x_v - h x x_w ; h x x_v + Ib x_w]
        for which in range(2):
            y = x if which == 0 else acc[i]
            h0, h1, h2 = hw[i, 0], hw[i, 1], hw[i, 2]
            f0 = mw[i] * y[0] - (h1 * y[5] - h2 * y[4])
            f1 = mw[i] * y[1] - (h2 * y[3] - h0 * y[5])
            f2 = mw[i] * y[2] - (h0 * y[4] - h1 * y[3])
            n0 = (
                h1 * y[2]
                - h2 * y[1]
                + Iw[i, 0, 0] * y[3]
                + Iw[i, 0, 1] * y[4]
                + Iw[i, 0, 2] * y[5]
            )
            n1 = (
                h2 * y[0]
                - h0 * y[2]
                + Iw[i, 1, 0] * y[3]
                + Iw[i, 1, 1] * y[4]
                + Iw[i, 1, 2] * y[5]
            )
            n2 = (
                h0 * y[1]
                - h1 * y[0]
                + Iw[i, 2, 0] * y[3]
                + Iw[i, 2, 1] * y[4]
                + Iw[i, 2, 2] * y[5]
            )
            if which == 0:  # x x* (I x) = [w x f; w x n + v x f]
                w0, w1, w2 = x[3], x[4], x[5]
                out[i, 0] = w1 * f2 - w2 * f1
                out[i, 1] = w2 * f0 - w0 * f2
                out[i, 2] = w0 * f1 - w1 * f0
                out[i, 3] = w1 * n2 - w2 * n1 + x[1] * f2 - x[2] * f1
                out[i, 4] = w2 * n0 - w0 * n2 + x[2] * f0 - x[0] * f2
                out[i, 5] = w0 * n1 - w1 * n0 + x[0] * f1 - x[1] * f0
            else:
                out[i, 0] += f0
                out[i, 1] += f1
                out[i, 2] += f2
                out[i, 3] += n0
                out[i, 4] += n1
                out[i, 5] += n2
        if fext.shape[0] > 0:
            for r in range(6):
                out[i, r] -= fext[i, r]
    for i in range(nb - 1, 0, -1):
        k = m.parent[i]
        for r in range(6):
            out[k, r] += out[i, r]


#: What :func:`e_closed_chain` returns for vectors not of its sizes or layout (a rank is
#: >= 0, a failure -1).
REFUSED = -2


@njit
def e_closed_chain(
    idata: np.ndarray,
    fdata: np.ndarray,
    q: np.ndarray,
    v: np.ndarray,
    gen: np.ndarray,
    fext: np.ndarray,
    with_friction: bool,
    loop_i: np.ndarray,
    loop_f: np.ndarray,
    alpha: float,
    beta: float,
    rtol: float,
    qdd: np.ndarray,
    lam: np.ndarray,
    acc: np.ndarray,
) -> int:
    """Entry point: :func:`closed_chain_dynamics` on the packed model; returns its rank.

    Parameters
    ----------
    idata, fdata : the packed model (``Model.packed``).  q : (nq,) ``[r0, Q0 (x, y, z, w),
    phi]`` [m, -, rad | m];  v : (nv,) ``[V0, w0, phidot]``, inertial [m/s, rad/s, ...];
    gen : (nv,) ``[F_b; tau]`` or (n,) ``tau`` [N, N m, N m | N];  fext : (nb, 6) about O or
    (0, 6);  loop_i : (nl, 3) int64;  loop_f : (nl, 24) [m];  alpha [1/s], beta [1/s^2],
    rtol;  qdd : (nv,), lam : (nrows,), acc : (nb, 6) or (0, 6) outputs -- as there.

    :data:`REFUSED`, nothing done, unless ``q``, ``v`` and ``gen`` are
    :func:`.layout.plain_vector` of those sizes (the per-call fast path calls the native
    entry point with any one-dimensional float64 vectors).
    """
    nv = idata[1]
    if not (
        plain_vector(q, idata[12])
        and plain_vector(v, nv)
        and (plain_vector(gen, nv) or plain_vector(gen, idata[13]))
    ):
        return REFUSED
    m = unpack(idata, fdata)
    return closed_chain_dynamics(
        m, q, v, gen, fext, with_friction, loop_i, loop_f, alpha, beta, rtol, qdd, lam, acc
    )


@njit
def e_loop_projection(
    idata: np.ndarray,
    fdata: np.ndarray,
    q: np.ndarray,
    v: np.ndarray,
    loop_i: np.ndarray,
    loop_f: np.ndarray,
    nrows: int,
    rtol: float,
    dq: np.ndarray,
    dv: np.ndarray,
) -> float:
    """Entry point: :func:`loop_projection` on the packed model; returns ``max |xi|``
    [m, rad].

    Parameters
    ----------
    idata, fdata : the packed model.  q : (nq,) ;  v : (nv,) the tree state (as
    :func:`e_closed_chain`);  loop_i : (nl, 3), loop_f : (nl, 24) the cut hinges
    (:func:`.cut_hinges.loop_rows`);  nrows : their row count;  rtol : rank threshold;
    dq : (nv,) output tangent correction (``q <- integrate(q, dq, 1)``) [m, rad, rad | m];
    dv : (nv,) output velocity correction [m/s, rad/s, rad/s | m/s].
    """
    return loop_projection(unpack(idata, fdata), q, v, loop_i, loop_f, nrows, rtol, dq, dv)


@njit
def e_closed_chain_steps(
    idata: np.ndarray,
    fdata: np.ndarray,
    gen: np.ndarray,
    with_friction: bool,
    loop_i: np.ndarray,
    loop_f: np.ndarray,
    gains: np.ndarray,
    nrows: int,
    dt: float,
    settings: np.ndarray,
    Q: np.ndarray,
    V: np.ndarray,
    wrench_body: np.ndarray,
) -> tuple:
    """Entry point: ``k`` steps of :func:`closed_chain_step` on the packed model, the
    efforts held, from ``Q[0]``, ``V[0]``.

    Parameters
    ----------
    Q : (k + 1, nq) ;  V : (k + 1, nv) the trajectory, row 0 the initial state (read), rows
        1.. written step by step (other arguments as :func:`closed_chain_step`).

    Returns
    -------
    status : int
        0, or the status of the step that stopped the run (1 non-finite accelerations, 2
        projection without convergence, 3 projection onto a loop singularity: the row after
        the last good step then holds the step's end before the projection, for the caller to
        close; the rows after it are left unwritten).
    done : int
        Steps completed.
    """
    m = unpack(idata, fdata)
    for s in range(Q.shape[0] - 1):
        qn, vn, status = closed_chain_step(
            m, Q[s], V[s], gen, with_friction, loop_i, loop_f, gains, nrows, dt, settings,
            wrench_body,
        )  # fmt: skip
        if status != 0:
            if status != 1:
                Q[s + 1] = qn
                V[s + 1] = vn
            return status, s
        Q[s + 1] = qn
        V[s + 1] = vn
    return 0, Q.shape[0] - 1


@njit
def e_transmitted_wrenches(
    idata: np.ndarray,
    fdata: np.ndarray,
    q: np.ndarray,
    v: np.ndarray,
    acc: np.ndarray,
    fext: np.ndarray,
) -> np.ndarray:
    """Entry point: :func:`transmitted_wrenches` (nb, 6)."""
    m = unpack(idata, fdata)
    out = np.empty((idata[0], 6))
    transmitted_wrenches(m, q, v, acc, fext, out)
    return out
