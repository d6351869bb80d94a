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
Pinocchio's ``constraintDynamics`` solves the same system), the ``m`` tests side by side
(:func:`.loop_responses.unit_responses`). The ``m x m`` Delassus matrix ``C M^-1 C^T`` is
read off the test accelerations at the loop bodies.

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

from ..jit import borrow, carve, keep_alive, njit
from .aba import (
    aba_views,
    aba_ws_size,
    acceleration_pass,
    articulated_inertia_pass,
    velocity_pass,
)
from .cut_hinges import (
    hinge_rank,
    hinge_scale,
    hinge_velocity_rows,
    loop_row_count,
    loop_rows,
)
from .delassus import solve_firm
from .friction import add_friction
from .kinematics import kinematics_into, kinematics_views, kinematics_ws_size
from .layout import ModelArrays, plain_vector, unpack
from .loop_responses import responses_ws_size, unit_responses


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
    iw: np.ndarray,
    fw: np.ndarray,
) -> tuple:
    """The independent row combinations of every cut hinge and their test responses, on the
    scratch ``iw`` (:func:`evaluation_int_size`,) int64 and ``fw``
    (:func:`reduced_ws_size`,), which the caller borrows (:func:`~ffsim_ros.dynamics.jit.borrow`)
    and holds while it uses the views returned.

    Per hinge ``k``: ``U_k`` (its independent combinations, :func:`jacobi_svd` of ``C_k^T``,
    singular values above ``rtol`` times the largest and ``rtol`` times :func:`hinge_scale`;
    identity when all rows are independent) into ``basis`` (nrows, 6) and their count into
    ``keep = iw[:nl]``; into ``firm = iw[nl : 2 nl]`` the count of those also above the
    closure floor of :func:`.cut_hinges.rank_floor` for loop errors of norm ``closure`` (the
    leading columns of ``U_k``: the rows that count for the motion,
    :func:`.delassus.solve_firm`). Then, for
    each of the ``K`` combined rows ``U_k^T W_k``, the accelerations of its unit wrench
    (:func:`.loop_responses.unit_responses`).

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
    keep = iw[:nl]
    firm = iw[nl : 2 * nl]
    rows_a = iw[2 * nl : 2 * nl + nrows]
    rows_b = iw[2 * nl + nrows : 2 * nl + 2 * nrows]
    flag = iw[2 * nl + 2 * nrows : 2 * nl + 2 * nrows + nb]
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
    # holds S, U, Dinv, W, basis, iw and fw
    Sb, Ub, Db, Wb, bb = borrow(S), borrow(U), borrow(Dinv), borrow(W), borrow(basis)
    flag, cbuf, Vk, svk = borrow(flag), borrow(cbuf), borrow(Vk), borrow(svk)
    K = 0
    r0 = np.int64(0)  # (a literal 0 handed to a callee in a loop compiles the callee twice)
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
    A = carve(fw, o, (K, K))
    o += K * K
    scratch = borrow(fw[o : o + responses_ws_size(nb, nv)])
    Wrb, Mqb, Mab = borrow(Wr[:K]), borrow(Mq), borrow(Ma)
    unit_responses(m, Sb, Ub, Db, Wrb, rows_a[:K], rows_b[:K], Mqb, Mab, scratch)
    for j in range(K):
        for k in range(j + 1):
            s = 0.0
            for c in range(6):
                s += Wr[j, c] * (Ma[k, rows_a[j], c] - Ma[k, rows_b[j], c])
            A[j, k] = s
            A[k, j] = s
    return Wr[:K], br[:K], rows_a[:K], rows_b[:K], Mq, Ma, A, floor_max


@njit
def reduced_ws_size(nb: int, nv: int, nrows: int) -> int:
    """Length of the float scratch of :func:`reduced_responses` for ``nrows`` loop rows."""
    return (
        7 * nrows + 42 + 6 * nv + nrows * nv + 6 * nrows * nb + nrows * nrows
        + responses_ws_size(nb, nv)
    )  # fmt: skip


@njit
def evaluation_int_size(nb: int, nl: int, nrows: int) -> int:
    """Length of the int64 scratch of one closed-chain evaluation: ``keep``, ``firm`` (nl,)
    each, then the rest of :func:`reduced_responses`'."""
    return 2 * nl + 2 * nrows + nb


@njit
def row_ws_size(nrows: int, nl: int) -> int:
    """Length of the head of a scratch that :func:`row_arrays` carves."""
    return 15 * nrows + 3 * nl


@njit
def evaluation_ws_size(nb: int, nv: int, nl: int, nrows: int) -> int:
    """Length of the float scratch of one closed-chain evaluation
    (:func:`closed_chain_dynamics`, :func:`.closed_step.loop_projection`): the loop rows'
    (:func:`row_ws_size`), :func:`reduced_responses`' and a (nb, 6)."""
    return row_ws_size(nrows, nl) + reduced_ws_size(nb, nv, nrows) + 6 * nb


@njit
def sweep_ws_size(nb: int, nv: int) -> int:
    """Length of the scratch of :func:`tree_sweep` (ABA's workspace and one (nv,) force);
    its leading part is :func:`.kinematics.kinematics_views`'."""
    return aba_ws_size(nb, nv) + nv


@njit
def tree_sweep(
    m: ModelArrays,
    q: np.ndarray,
    v: np.ndarray,
    gen: np.ndarray,
    fext: np.ndarray,
    with_friction: bool,
    qdd: np.ndarray,
    acc: np.ndarray,
    ws: np.ndarray,
    known: bool,
) -> tuple[np.ndarray, ...]:
    """Kinematics and one ABA sweep on the scratch ``ws`` (:func:`sweep_ws_size`); returns
    ``(R, p, S, vel, U, Dinv)``, views on it (the root's ``Dinv`` holding its Cholesky
    factor). ``known``: the kinematics views of ``ws`` already hold those of ``q`` (the
    passes only read them), which are then not computed again."""
    nb = m.parent.shape[0]
    nv = v.shape[0]
    o = aba_ws_size(nb, nv)
    R, p, S, mw, hw, Iw, T = kinematics_views(ws, nb, nv)
    if not known:
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
        add_friction(m, v, g, 1.0)
    velocity_pass(m, v, S, mw, hw, Iw, fext, vel, cb, pA, IA)
    articulated_inertia_pass(m, g, S, cb, IA, pA, U, Dinv, u, scratch)
    acceleration_pass(m, S, cb, U, Dinv, u, acc, qdd, tail)
    return R, p, S, vel, U, Dinv


@njit
def row_arrays(fw: np.ndarray, nrows: int, nl: int) -> tuple[np.ndarray, ...]:
    """``W`` (nrows, 6), ``rhs``, ``xi``, ``verr`` (nrows,), ``ob`` (nl, 3) and a zeroed
    ``basis`` (nrows, 6), carved from the head of ``fw`` (:func:`row_ws_size`)."""
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
    gains: np.ndarray,
    qdd: np.ndarray,
    lam: np.ndarray,
    acc: np.ndarray,
    ws: np.ndarray,
    known: bool,
) -> int:
    """Closed-chain accelerations and loop multipliers (module docstring).

    Parameters
    ----------
    q : (nq,) ;  v : (nv,) tree state.
    gen : (nv,) generalized force ``[F_b; tau]``, or (n,) joint efforts alone (``F_b``
        zero); joint friction added when ``with_friction``.
    fext : (nb, 6) body wrenches about O, or an empty (0, 6) array.
    loop_i, loop_f : cut hinges (:func:`loop_rows`).
    gains : (3,) ``[alpha, beta, rtol]``: Baumgarte gains [1/s, 1/s^2] (zero for the plain
        ``xi'' = 0``) and the rank threshold of a hinge's singular values, relative to its
        largest and to :func:`.cut_hinges.hinge_scale` (and of the reduced rows' across
        hinges).
    qdd : (nv,) output accelerations;  lam : (nrows,) output multipliers per cut-hinge row
    (``+ W lam`` on body a, ``- W lam`` on body b);  acc : (nb, 6) output body spatial
    accelerations at O, gravity offset included (``A - [g; 0]``); an empty (0, 6) array
    skips them.
    ws, known : the sweep's scratch and whether it holds the kinematics of ``q``
        (:func:`tree_sweep`).

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
    # one allocation of each kind for this evaluation, borrowed (jit.borrow): the views carved
    # from them and handed down are not reference counted; the owners are held to the end
    own = np.empty(evaluation_ws_size(nb, nv, nl, nrows))
    iown = np.empty(evaluation_int_size(nb, nl, nrows), dtype=np.int64)
    fw = borrow(own)
    iw = borrow(iown)
    o = row_ws_size(nrows, nl)
    acc_free = acc if with_acc else carve(fw, o + reduced_ws_size(nb, nv, nrows), (nb, 6))
    R, p, S, vel, U, Dinv = tree_sweep(m, q, v, gen, fext, with_friction, qdd, acc_free, ws, known)
    W, rhs, xi, verr, ob, basis = row_arrays(fw, nrows, nl)
    loop_rows(m, R, p, vel, loop_i, loop_f, W, rhs, xi, verr, ob)
    alpha = gains[0]
    beta = gains[1]
    rtol = gains[2]
    closure = 0.0
    for r in range(nrows):
        rhs[r] -= alpha * verr[r] + beta * xi[r]
        closure += xi[r] * xi[r]
    keep = iw[:nl]
    firm = iw[nl : 2 * nl]
    Wr, br, ra, rb, Mq, Ma, A, floor = reduced_responses(
        m, S, U, Dinv, W, rhs, loop_i, rtol, np.sqrt(closure), basis, iw, fw[o:]
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
            rank = -1
            break
    keep_alive(own)
    keep_alive(iown)
    return rank


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
    gains = np.empty(3)
    gains[0] = alpha
    gains[1] = beta
    gains[2] = rtol
    own = np.empty(sweep_ws_size(idata[0], nv))
    known = nv < 0  # (False as a run-time bool: a literal compiles the passes once more)
    # every array borrowed (jit.borrow: no reference counting down the passes): the caller
    # holds its arguments, this function the scratch
    rank = closed_chain_dynamics(
        m, borrow(q), borrow(v), borrow(gen), borrow(fext), with_friction, borrow(loop_i),
        borrow(loop_f), borrow(gains), borrow(qdd), borrow(lam), borrow(acc), borrow(own),
        known,
    )  # fmt: skip
    keep_alive(own)
    keep_alive(gains)
    return rank


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
