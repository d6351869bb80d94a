"""Cut-hinge rows of a closed chain for the compiled solver (:mod:`.constrained`): their
spatial-wrench form at O, right-hand sides and errors (:func:`loop_rows`), their restriction
to the velocities of the loop's path (:func:`hinge_velocity_rows`), and the small one-sided
Jacobi SVD that decides their rank (:func:`jacobi_svd`, against the largest singular value
and the bound :func:`hinge_scale`). The rows are those of
:class:`ffsim_ros.dynamics.mufti.ClosedChain` ([M eqs. 6-9, 48, 63-66], seed 001); see
:mod:`.constrained` for their form.
"""

from __future__ import annotations

import numpy as np

from ..jit import borrow, carve, keep_alive, njit
from ..lie import qfrom_matrix, qlog
from .cholesky import cholesky_factor_inplace
from .layout import ModelArrays

#: Cut-hinge kind codes (``loop_i[:, 2]``) and their row counts.
LOOP_BALL = 0
LOOP_REVOLUTE = 1
LOOP_WELD = 2


@njit
def loop_row_count(kind: int) -> int:
    """Rows of a cut hinge of kind ``kind`` (ball 3, revolute 5, weld 6)."""
    if kind == LOOP_BALL:
        return 3
    if kind == LOOP_REVOLUTE:
        return 5
    return 6


#: Smallest ratio ``sigma_min / sigma_max`` that :func:`clearly_independent` certifies: far
#: above the rank threshold and above the ~1e-8 below which the Gram matrix loses it.
CERTIFIED_RATIO = 1e-4

#: ``kappa`` of the closure floor ``sqrt(kappa beta_k |xi|)`` on the singular values of the
#: loop rows that count for the motion (:func:`rank_floor`).
CLOSURE_FLOOR_GAIN = 4.0
#: The closure floor's largest value, relative to ``beta_k`` (:func:`rank_floor`).
CLOSURE_FLOOR_CAP = 1e-4


@njit
def rank_floor(beta: float, rtol: float, closure: float) -> float:
    """The singular value of a cut hinge's rows ``C_k`` at or below which a row is taken as
    redundant: ``rtol beta`` (round-off, against the bound ``beta`` = :func:`hinge_scale`)
    and, at a configuration whose loop errors have the norm ``closure`` [m, rad], the closure
    floor ``min(sqrt(kappa beta closure), cap beta)`` (``kappa`` =
    :data:`CLOSURE_FLOOR_GAIN`, ``cap`` = :data:`CLOSURE_FLOOR_CAP`).

    Where the rows lose rank (a loop singularity: a planar parallelogram stretched flat), a
    configuration ``d`` off the constraint manifold has loop errors ``xi ~ 1/2 d^T H d``
    only, ``H`` the rows' curvature (lever arms, bounded by ``beta``), yet rows of singular
    value ``|H d| ~ sqrt(2 |H| |xi|)``: spurious, they would lock the mechanism (every
    configuration within the projection's tolerance of the singular one has such rows, and
    so has an RK4 stage of a step from it). Below the closure floor a singular value cannot
    be told from them. The cap keeps the floor to that neighbourhood (``d`` up to ~1e-4 rad):
    far off the manifold (a loop closed by Baumgarte's terms alone) the rows are the rows.
    ``closure`` zero: the round-off floor alone (the position projection, which needs those
    rows to close the loops)."""
    floor = min(np.sqrt(CLOSURE_FLOOR_GAIN * beta * closure), CLOSURE_FLOOR_CAP * beta)
    return max(rtol * beta, floor)


@njit
def clearly_independent(X: np.ndarray, floor: float = 0.0) -> bool:
    """Whether the columns of ``X`` (L, n), n <= 6, are certainly independent with
    ``sigma_min / sigma_max >= CERTIFIED_RATIO`` and ``sigma_min > floor`` -- the common
    case, decided without the SVD.

    With the Gram matrix ``G = X^T X = L L^T`` (Cholesky), ``sigma_min^2 = 1 / |G^-1|_2 >=
    1 / |L^-1|_F^2`` and ``sigma_max^2 <= trace G``. False (the caller then takes
    :func:`jacobi_svd`) when the bound is not met, without saying the columns are dependent.
    (The floor: columns of round-off alone are as well conditioned, relatively, as any.)
    """
    L, n = X.shape
    if n == 0 or L < n:
        return False
    own = np.empty(42)  # G and inv, borrowed (no reference counting), held to the end
    G = carve(borrow(own), 0, (6, 6))
    inv = borrow(own)[36:]  # a column of L^-1 by forward substitution, its squares summed
    trace = 0.0
    for i in range(n):
        for j in range(i + 1):
            s = 0.0
            for r in range(L):
                s += X[r, i] * X[r, j]
            G[i, j] = s
        trace += G[i, i]
    if not (trace > 0.0 and cholesky_factor_inplace(G, n)):
        keep_alive(own)
        return False
    frob = 0.0
    for c in range(n):
        for i in range(c, n):
            t = 1.0 if i == c else 0.0
            for k in range(c, i):
                t -= G[i, k] * inv[k]
            inv[i] = t / G[i, i]
            frob += inv[i] * inv[i]
    keep_alive(own)
    return frob * trace * CERTIFIED_RATIO * CERTIFIED_RATIO <= 1.0 and frob * floor * floor < 1.0


@njit
def jacobi_svd(X: np.ndarray, V: np.ndarray, sv: np.ndarray) -> None:
    """One-sided Jacobi SVD (Hestenes) of the small ``X`` (L, n), in place: on return
    ``X = U diag(sv)`` (columns orthogonal), ``V`` (n, n) the right singular vectors, so that
    ``X_in = U diag(sv) V^T``; ``sv`` (n,) in descending order (columns of ``X`` and ``V``
    sorted alike). Singular values come out with high relative accuracy: exactly dependent
    columns give round-off-sized values, as LAPACK's SVD does."""
    L, n = X.shape
    for i in range(n):
        for j in range(n):
            V[i, j] = 1.0 if i == j else 0.0
    for _sweep in range(60):
        rotated = False
        for i in range(n - 1):
            for j in range(i + 1, n):
                a = 0.0
                b = 0.0
                g = 0.0
                for r in range(L):
                    a += X[r, i] * X[r, i]
                    b += X[r, j] * X[r, j]
                    g += X[r, i] * X[r, j]
                if g == 0.0 or abs(g) <= 1e-15 * np.sqrt(a * b):
                    continue
                rotated = True
                zeta = (b - a) / (2.0 * g)
                t = (1.0 if zeta >= 0.0 else -1.0) / (abs(zeta) + np.sqrt(1.0 + zeta * zeta))
                c = 1.0 / np.sqrt(1.0 + t * t)
                sn = c * t
                for r in range(L):
                    xi = X[r, i]
                    xj = X[r, j]
                    X[r, i] = c * xi - sn * xj
                    X[r, j] = sn * xi + c * xj
                for r in range(n):
                    vi = V[r, i]
                    vj = V[r, j]
                    V[r, i] = c * vi - sn * vj
                    V[r, j] = sn * vi + c * vj
        if not rotated:
            break
    for j in range(n):
        s = 0.0
        for r in range(L):
            s += X[r, j] * X[r, j]
        sv[j] = np.sqrt(s)
    for i in range(n):  # selection sort, descending (n <= 6 here)
        k = i
        for j in range(i + 1, n):
            if sv[j] > sv[k]:
                k = j
        if k != i:
            sv[i], sv[k] = sv[k], sv[i]
            for r in range(L):
                X[r, i], X[r, k] = X[r, k], X[r, i]
            for r in range(n):
                V[r, i], V[r, k] = V[r, k], V[r, i]


@njit
def _rotation_vector(E: np.ndarray) -> tuple:
    """Rotation vector of the rotation matrix ``E`` (3, 3): the compiled form of
    :func:`ffsim_ros.dynamics.lie.matrix_log`."""
    x, y, z, w = qfrom_matrix(E)
    return qlog(x, y, z, w)


@njit
def loop_rows(
    m: ModelArrays,
    R: np.ndarray,
    p: np.ndarray,
    vel: np.ndarray,
    loop_i: np.ndarray,
    loop_f: np.ndarray,
    W: np.ndarray,
    rhs: np.ndarray,
    xi: np.ndarray,
    verr: np.ndarray,
    ob: np.ndarray,
) -> None:
    """Cut-hinge rows as spatial wrenches at O (module docstring), their right-hand sides
    (no Baumgarte terms), position errors and velocity errors.

    Parameters
    ----------
    R, p : (nb, 3, 3), (nb, 3) body poses;  vel : (nb, 6) body velocities ``[v_O; w]``.
    loop_i : (nl, 3) int64 ``[body_a, body_b, kind]``.
    loop_f : (nl, 24) hinge frames in the body frames: ``rot_a`` (9, row-major), ``trans_a``
        (3), ``rot_b`` (9), ``trans_b`` (3) [m].
    W : (nrows, 6) output rows;  rhs, xi, verr : (nrows,) outputs ``gamma`` [m/s^2, rad/s^2],
    ``xi`` [m, rad] and ``xi'`` [m/s, rad/s] (as ``ClosedChain.loop_rows``: the translational
    rows' right-hand sides and rates carry the turning of the axes ``d_k`` with body a, exact
    off the manifold; the angular rates ``d_k . (w_a - w_b)``);  ob : (nl, 3) output hinge
    points on body b [m].
    """
    r0 = 0
    # one allocation, borrowed (no reference counting), held to the end: R_a, R_b, the two
    # hinge points and E
    own = np.empty(36)
    scratch = carve(borrow(own), 0, (3, 3, 3))
    E = carve(borrow(own), 27, (3, 3))
    Ra = scratch[0]
    Rb = scratch[1]
    oa = scratch[2, 0]
    obb = scratch[2, 1]
    for lp in range(loop_i.shape[0]):
        ia = loop_i[lp, 0]
        ib = loop_i[lp, 1]
        kind = loop_i[lp, 2]
        for side in range(2):
            i = ia if side == 0 else ib
            Rs = Ra if side == 0 else Rb
            os = oa if side == 0 else obb
            f0 = 12 * side
            for r in range(3):
                s = p[i, r]
                for c in range(3):
                    s += R[i, r, c] * loop_f[lp, f0 + 9 + c]
                    t = 0.0
                    for k in range(3):
                        t += R[i, r, k] * loop_f[lp, f0 + 3 * k + c]
                    Rs[r, c] = t
                os[r] = s
        for r in range(3):
            ob[lp, r] = obb[r]
        # hinge point velocities v_o = v_O + w x o, and the midpoint
        wa0, wa1, wa2 = vel[ia, 3], vel[ia, 4], vel[ia, 5]
        wb0, wb1, wb2 = vel[ib, 3], vel[ib, 4], vel[ib, 5]
        va0 = vel[ia, 0] + wa1 * oa[2] - wa2 * oa[1]
        va1 = vel[ia, 1] + wa2 * oa[0] - wa0 * oa[2]
        va2 = vel[ia, 2] + wa0 * oa[1] - wa1 * oa[0]
        vb0 = vel[ib, 0] + wb1 * obb[2] - wb2 * obb[1]
        vb1 = vel[ib, 1] + wb2 * obb[0] - wb0 * obb[2]
        vb2 = vel[ib, 2] + wb0 * obb[1] - wb1 * obb[0]
        # w_a x v_oa - w_b x v_ob
        c0 = (wa1 * va2 - wa2 * va1) - (wb1 * vb2 - wb2 * vb1)
        c1 = (wa2 * va0 - wa0 * va2) - (wb2 * vb0 - wb0 * vb2)
        c2 = (wa0 * va1 - wa1 * va0) - (wb0 * vb1 - wb1 * vb0)
        m0 = 0.5 * (oa[0] + obb[0])
        m1 = 0.5 * (oa[1] + obb[1])
        m2 = 0.5 * (oa[2] + obb[2])
        dw0, dw1, dw2 = wa0 - wb0, wa1 - wb1, wa2 - wb2
        g0, g1, g2 = oa[0] - obb[0], oa[1] - obb[1], oa[2] - obb[2]  # o_a - o_b
        u0, u1, u2 = va0 - vb0, va1 - vb1, va2 - vb2  # o_a' - o_b'
        for k in range(3):  # d_k: axis k of hinge frame a
            d0, d1, d2 = Ra[0, k], Ra[1, k], Ra[2, k]
            r = r0 + k
            W[r, 0] = d0
            W[r, 1] = d1
            W[r, 2] = d2
            W[r, 3] = m1 * d2 - m2 * d1
            W[r, 4] = m2 * d0 - m0 * d2
            W[r, 5] = m0 * d1 - m1 * d0
            # d_k turns with body a: d_k' = w_a x d_k, d_k'' = w_a x (w_a x d_k) + w'_a x d_k
            t0 = wa1 * d2 - wa2 * d1
            t1 = wa2 * d0 - wa0 * d2
            t2 = wa0 * d1 - wa1 * d0
            s0 = wa1 * t2 - wa2 * t1
            s1 = wa2 * t0 - wa0 * t2
            s2 = wa0 * t1 - wa1 * t0
            rhs[r] = -(d0 * c0 + d1 * c1 + d2 * c2) - (
                2.0 * (t0 * u0 + t1 * u1 + t2 * u2) + (s0 * g0 + s1 * g1 + s2 * g2)
            )
            xi[r] = d0 * g0 + d1 * g1 + d2 * g2
            verr[r] = (d0 * u0 + d1 * u1 + d2 * u2) + (t0 * g0 + t1 * g1 + t2 * g2)
        if kind != LOOP_BALL:
            nrot = 2 if kind == LOOP_REVOLUTE else 3
            x0 = wa1 * wb2 - wa2 * wb1
            x1 = wa2 * wb0 - wa0 * wb2
            x2 = wa0 * wb1 - wa1 * wb0
            if kind == LOOP_REVOLUTE:  # k_b x k_a (z axes)
                e0 = Rb[1, 2] * Ra[2, 2] - Rb[2, 2] * Ra[1, 2]
                e1 = Rb[2, 2] * Ra[0, 2] - Rb[0, 2] * Ra[2, 2]
                e2 = Rb[0, 2] * Ra[1, 2] - Rb[1, 2] * Ra[0, 2]
            else:  # rotation vector of R_a R_b^T
                for r in range(3):
                    for c in range(3):
                        E[r, c] = Ra[r, 0] * Rb[c, 0] + Ra[r, 1] * Rb[c, 1] + Ra[r, 2] * Rb[c, 2]
                e0, e1, e2 = _rotation_vector(E)
            for k in range(nrot):
                d0, d1, d2 = Ra[0, k], Ra[1, k], Ra[2, k]
                r = r0 + 3 + k
                W[r, 0] = 0.0
                W[r, 1] = 0.0
                W[r, 2] = 0.0
                W[r, 3] = d0
                W[r, 4] = d1
                W[r, 5] = d2
                rhs[r] = -(d0 * x0 + d1 * x1 + d2 * x2)
                xi[r] = d0 * e0 + d1 * e1 + d2 * e2
                verr[r] = d0 * dw0 + d1 * dw1 + d2 * dw2
        r0 += loop_row_count(kind)
    keep_alive(own)


@njit
def hinge_velocity_rows(
    m: ModelArrays,
    S: np.ndarray,
    W: np.ndarray,
    r0: int,
    nr: int,
    ia: int,
    ib: int,
    flag: np.ndarray,
    buf: np.ndarray,
) -> np.ndarray:
    """``C_k^T`` (L, nr): rows ``r0 : r0 + nr`` of ``W`` on the velocities of the joints
    between bodies ``ia`` and ``ib`` (the tree path of the loop; the common ancestors cancel),
    ``L`` their velocity count; a view on ``buf`` (>= 6 nv,); ``flag`` (nb,) int64 scratch."""
    for i in range(flag.shape[0]):
        flag[i] = 0
    i = ia
    while i >= 0:
        flag[i] = 1
        i = m.parent[i]
    i = ib
    while i >= 0:
        flag[i] = 2 if flag[i] == 1 else 3
        i = m.parent[i]
    L = 0
    for i in range(flag.shape[0]):
        if flag[i] == 1 or flag[i] == 3:
            L += m.nvj[i]
    C = carve(buf, 0, (L, nr))
    col = 0
    for i in range(flag.shape[0]):
        if flag[i] != 1 and flag[i] != 3:
            continue
        sgn = 1.0 if flag[i] == 1 else -1.0
        for a in range(m.nvj[i]):
            c = m.iv[i] + a
            for r in range(nr):
                s = 0.0
                for k in range(6):
                    s += W[r0 + r, k] * S[k, c]
                C[col, r] = sgn * s
            col += 1
    return C


@njit
def hinge_scale(
    m: ModelArrays, S: np.ndarray, W: np.ndarray, r0: int, nr: int, flag: np.ndarray
) -> float:
    """``beta_k``: the bound ``sqrt(nr) |S_k|_F`` on the singular values of a cut hinge's
    ``C_k`` (:func:`hinge_velocity_rows`, whose ``flag`` marks the path), ``S_k`` the motion
    subspaces of its path's joints taken at the hinge's point of application ``o_m`` (velocity
    of the point there and angular velocity per unit rate, [m/s, rad/s]): a row is a unit
    force or couple at ``o_m``, so each entry of ``C_k`` is at most its column's norm there.
    Independent of the origin, it sizes what a genuine row can be against round-off; ``o_m =
    1/2 sum_d d x (o_m x d)`` from the three translational rows ``W = [d; o_m x d]``."""
    o0 = 0.0
    o1 = 0.0
    o2 = 0.0
    for r in range(r0, r0 + 3):
        o0 += 0.5 * (W[r, 1] * W[r, 5] - W[r, 2] * W[r, 4])
        o1 += 0.5 * (W[r, 2] * W[r, 3] - W[r, 0] * W[r, 5])
        o2 += 0.5 * (W[r, 0] * W[r, 4] - W[r, 1] * W[r, 3])
    total = 0.0
    for i in range(flag.shape[0]):
        if flag[i] != 1 and flag[i] != 3:
            continue
        for c in range(m.iv[i], m.iv[i] + m.nvj[i]):
            w0, w1, w2 = S[3, c], S[4, c], S[5, c]
            v0 = S[0, c] + w1 * o2 - w2 * o1
            v1 = S[1, c] + w2 * o0 - w0 * o2
            v2 = S[2, c] + w0 * o1 - w1 * o0
            total += v0 * v0 + v1 * v1 + v2 * v2 + w0 * w0 + w1 * w1 + w2 * w2
    return np.sqrt(nr * total)


@njit
def hinge_rank(
    Ct: np.ndarray,
    Vk: np.ndarray,
    svk: np.ndarray,
    beta: float,
    rtol: float,
    closure: float,
    basis: np.ndarray,
    r0: int,
    nr: int,
) -> tuple:
    """The rank of one cut hinge's rows ``C_k`` (``Ct`` = ``C_k^T`` (L, nr), overwritten;
    ``Vk`` (6, 6), ``svk`` (6,) scratch), ``beta`` = :func:`hinge_scale`: singular values
    kept above ``rtol`` times the largest and ``rtol beta`` (:func:`clearly_independent`,
    else :func:`jacobi_svd`); their left singular vectors into ``basis[r0 : r0 + nr]``, the
    identity when all are kept and above the closure floor. Returns ``(kk, kf, floor)``: the
    rows kept, how many of them are above the closure floor for loop errors of norm
    ``closure`` (the leading ones), and that floor (:func:`rank_floor`)."""
    floor = rtol * beta
    tight = rank_floor(beta, rtol, closure)
    kk = 0
    kf = 0
    if clearly_independent(Ct, tight):
        kk = nr  # the SVD would keep every row (its decision, without it)
        kf = nr
        for j in range(nr):
            for r in range(nr):
                basis[r0 + r, j] = 1.0 if r == j else 0.0
    elif Ct.shape[0] > 0:
        # C_k = V diag(sv) U^T: its left singular vectors are the V of C_k^T
        jacobi_svd(Ct, Vk, svk)
        for j in range(min(nr, Ct.shape[0])):
            if svk[j] > rtol * svk[0] and svk[j] > floor:
                kk += 1
                if svk[j] > tight:
                    kf += 1
        for j in range(kk):
            for r in range(nr):
                if kf == nr:  # all independent: the rows themselves, as the reference
                    basis[r0 + r, j] = 1.0 if r == j else 0.0
                else:
                    basis[r0 + r, j] = Vk[r, j]
    return kk, kf, tight
