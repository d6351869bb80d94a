"""The loop rows' test responses of the closed-chain solver: ``M^-1 C^T`` by the articulated
inertias of one ABA sweep (Featherstone 2008, sec. 8.3, the loop-closure "test force" method),
for :func:`.constrained.reduced_responses`.

Each row's response is the accelerations of its unit wrench (``+`` on body ``a``, ``-`` on body
``b``) as the only load, by one backward and one forward pass of ABA with the sweep's
articulated inertias. The rows run side by side in blocks of a width fixed at compile time
(:data:`WIDTHS`): each body's arithmetic once for the block's rows, in loops over the rows that
the compiler unrolls and vectorizes (a block of the rows' own count, known only at run time,
was a third slower: measured on the floating platform's six rows and a weld's six; six rows
in a block of 6 take 0.95 us where a block of 8, two columns of padding, took 1.11). Each row's
operations are those of a pass of its own, in the same order: the result is the same to the
bit (a body off a row's paths to the root, or a padding column, carries a zero load).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..jit import borrow, carve, njit
from .layout import ModelArrays

#: The block widths: a block of 4 rows for up to 4 (a ball hinge's 3), of 6 for 5 or 6 (a
#: weld's 6, two ball hinges' 6), else blocks of 8, the last rows in a block of 4 or 6 (padded).
WIDTHS = (4, 6, 8)


@njit
def responses_ws_size(nb: int, nv: int) -> int:
    """Length of the scratch of :func:`unit_responses` (``8 (18 nb + nv + 1)``: one block of
    the widest of :data:`WIDTHS`, reused block after block)."""
    return (18 * nb + nv + 1) * WIDTHS[2]


def _response_block(width: int) -> Callable[..., None]:
    """The compiled responses of one block of ``width`` rows (a closure: ``width`` is a
    compile-time constant of each of the two kernels)."""

    @njit
    def block(
        m: ModelArrays,
        S: np.ndarray,
        U: np.ndarray,
        Dinv: np.ndarray,
        Wr: np.ndarray,
        rows_a: np.ndarray,
        rows_b: np.ndarray,
        j0: int,
        Mq: np.ndarray,
        Ma: np.ndarray,
        ws: np.ndarray,
    ) -> None:
        """Rows ``j0`` to ``j0 + width`` (at most the last) of :func:`unit_responses`."""
        nb = m.parent.shape[0]
        nv = S.shape[1]
        K = width  # (a constant: the loops over the rows unrolled and vectorized)
        rows = min(width, Wr.shape[0] - j0)  # the block's rows; the others padding
        pz = borrow(carve(ws, 0, (nb, 6, K)))  # loads, then (forward) scratch
        uz = borrow(carve(ws, 6 * nb * K, (nb, 6, K)))  # joint-space loads u
        ab = borrow(carve(ws, 12 * nb * K, (nb, 6, K)))  # body accelerations
        qb = borrow(carve(ws, 18 * nb * K, (nv, K)))  # joint accelerations
        tb = borrow(ws[(18 * nb + nv) * K : (18 * nb + nv + 1) * K])
        for i in range(nb):
            for r in range(6):
                for j in range(K):
                    pz[i, r, j] = 0.0
        for j in range(rows):  # the bias is -f_ext (none on the padding)
            for r in range(6):
                pz[rows_a[j0 + j], r, j] -= Wr[j0 + j, r]
                pz[rows_b[j0 + j], r, j] += Wr[j0 + j, r]
        # backward: u = -S^T p; the parent's load += p + U Dinv u (a parent's index is below its
        # child's)
        for i in range(nb - 1, -1, -1):
            nj = m.nvj[i]
            c0 = m.iv[i]
            k = m.parent[i]
            if nj == 1 and k >= 0:
                for j in range(K):
                    tb[j] = 0.0
                for r in range(6):
                    s = S[r, c0]
                    for j in range(K):
                        tb[j] -= s * pz[i, r, j]
                d = Dinv[i, 0, 0]
                for j in range(K):
                    uz[i, 0, j] = tb[j]
                    tb[j] = 0.0 + d * tb[j]
                for r in range(6):
                    u = U[i, r, 0]
                    for j in range(K):
                        pz[i, r, j] += u * tb[j]
                        pz[k, r, j] += pz[i, r, j]
                continue
            for a in range(nj):
                for j in range(K):
                    uz[i, a, j] = 0.0
                for r in range(6):
                    s = S[r, c0 + a]
                    for j in range(K):
                        uz[i, a, j] -= s * pz[i, r, j]
            if k < 0:
                continue
            for b in range(nj):
                for j in range(K):
                    tb[j] = 0.0
                for a in range(nj):
                    d = Dinv[i, b, a]
                    for j in range(K):
                        tb[j] += d * uz[i, a, j]
                for r in range(6):
                    u = U[i, r, b]
                    for j in range(K):
                        pz[i, r, j] += u * tb[j]
            for r in range(6):
                for j in range(K):
                    pz[k, r, j] += pz[i, r, j]
        # forward: qdd = Dinv (u - U^T a_parent); a = a_parent + S qdd
        for i in range(nb):
            k = m.parent[i]
            nj = m.nvj[i]
            c0 = m.iv[i]
            if k < 0:
                for r in range(6):
                    for j in range(K):
                        ab[i, r, j] = 0.0
                # root: D y = u by the Cholesky factor (lower triangle of Dinv)
                for a in range(nj):
                    for j in range(K):
                        qb[c0 + a, j] = uz[i, a, j]
                    for b in range(a):
                        d = Dinv[i, a, b]
                        for j in range(K):
                            qb[c0 + a, j] -= d * qb[c0 + b, j]
                    d = Dinv[i, a, a]
                    for j in range(K):
                        qb[c0 + a, j] /= d
                for a in range(nj - 1, -1, -1):
                    for b in range(a + 1, nj):
                        d = Dinv[i, b, a]
                        for j in range(K):
                            qb[c0 + a, j] -= d * qb[c0 + b, j]
                    d = Dinv[i, a, a]
                    for j in range(K):
                        qb[c0 + a, j] /= d
            elif nj == 1:
                for j in range(K):
                    tb[j] = uz[i, 0, j]
                for r in range(6):
                    u = U[i, r, 0]
                    for j in range(K):
                        tb[j] -= u * ab[k, r, j]
                d = Dinv[i, 0, 0]
                for j in range(K):
                    qb[c0, j] = 0.0 + d * tb[j]
                for r in range(6):
                    s = S[r, c0]
                    for j in range(K):
                        ab[i, r, j] = ab[k, r, j] + s * qb[c0, j]
                continue
            else:
                for a in range(nj):
                    for j in range(K):
                        pz[i, a, j] = uz[i, a, j]  # pz reused: the backward pass is done
                    for r in range(6):
                        u = U[i, r, a]
                        for j in range(K):
                            pz[i, a, j] -= u * ab[k, r, j]
                for a in range(nj):
                    for j in range(K):
                        qb[c0 + a, j] = 0.0
                    for b in range(nj):
                        d = Dinv[i, a, b]
                        for j in range(K):
                            qb[c0 + a, j] += d * pz[i, b, j]
                for r in range(6):
                    for j in range(K):
                        ab[i, r, j] = ab[k, r, j]
            for r in range(6):
                for a in range(nj):
                    s = S[r, c0 + a]
                    for j in range(K):
                        ab[i, r, j] += s * qb[c0 + a, j]
        for j in range(rows):
            for c in range(nv):
                Mq[j0 + j, c] = qb[c, j]
            for i in range(nb):
                for r in range(6):
                    Ma[j0 + j, i, r] = ab[i, r, j]

    return block


_block4 = _response_block(WIDTHS[0])
_block6 = _response_block(WIDTHS[1])
_block8 = _response_block(WIDTHS[2])


@njit
def unit_responses(
    m: ModelArrays,
    S: np.ndarray,
    U: np.ndarray,
    Dinv: np.ndarray,
    Wr: np.ndarray,
    rows_a: np.ndarray,
    rows_b: np.ndarray,
    Mq: np.ndarray,
    Ma: np.ndarray,
    ws: np.ndarray,
) -> None:
    """``M^-1 C^T`` for ``K`` rows: for each row ``j`` the accelerations of the unit wrench
    ``Wr[j]`` (6,) on body ``rows_a[j]`` and ``-Wr[j]`` on ``rows_b[j]``, no velocity, no
    gravity, no efforts, by the backward and forward passes of ABA with its articulated
    inertias ``U``, ``Dinv`` (the root's ``Dinv`` holding its Cholesky factor, as
    :func:`.aba.acceleration_pass` leaves it), the rows side by side in blocks (module
    docstring). One-DoF joints take a branch of their own (no loops over the joint's DoFs).

    Parameters
    ----------
    S : (6, nv) motion subspaces at O;  U, Dinv : (nb, 6, 6) of the sweep.
    Wr : (K, 6) unit wrenches ``[f; n_O]``;  rows_a, rows_b : (K,) bodies.
    Mq : (K, nv) output, row ``j`` the accelerations ``M^-1 C_j^T``;  Ma : (K, nb, 6) output
    spatial accelerations at O of the bodies.
    ws : (responses_ws_size(nb, nv),) scratch.
    """
    K = Wr.shape[0]
    j0 = np.int64(0)  # (a literal 0 handed to a callee in a loop compiles the callee twice)
    while K - j0 > WIDTHS[1]:
        _block8(m, S, U, Dinv, Wr, rows_a, rows_b, j0, Mq, Ma, ws)
        j0 += WIDTHS[2]
    if K - j0 > WIDTHS[0]:
        _block6(m, S, U, Dinv, Wr, rows_a, rows_b, j0, Mq, Ma, ws)
    elif j0 < K:
        _block4(m, S, U, Dinv, Wr, rows_a, rows_b, j0, Mq, Ma, ws)
