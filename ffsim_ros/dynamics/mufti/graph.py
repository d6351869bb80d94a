"""Directed-tree description of the interconnections [M sec. 2].

The bodies are the vertices, the hinges the arcs. Seed 001 numbers bodies from 1; here they
are numbered from 0 like :class:`~ffsim_ros.dynamics.model.Model` (body 0 = base = root), and
arc ``j`` (``j = 0 .. nb-2``) is the moving joint into body ``j + 1``: its initial vertex
``j+`` is ``parent[j + 1]``, its final vertex ``j-`` is ``j + 1``.

A :class:`~ffsim_ros.dynamics.model.Model` always has ``parent[i] < i``; that is a *regular
labeling* in the sense of the seed [M Fig. 3a]: with its first row removed the incidence
matrix is upper triangular with ``-1`` on the diagonal. :func:`regular_labeling` produces
such a numbering from an arbitrary one by the seed's peeling procedure.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def _parents(parent: Sequence[int] | np.ndarray) -> np.ndarray:
    par = np.asarray(parent, dtype=np.int64)
    if par.ndim != 1 or par.size == 0:
        raise ValueError(f'parent: expected a non-empty 1-D array, got shape {par.shape}')
    roots = np.flatnonzero(par < 0)
    if roots.size != 1:
        raise ValueError(f'parent: expected exactly one root (-1), got {roots.size}')
    nb = par.size
    if np.any(par >= nb):
        raise ValueError(f'parent: expected indices < {nb}, got {par.tolist()}')
    # every vertex must reach the root without a circuit (a directed tree)
    for i in range(nb):
        k, steps = i, 0
        while par[k] >= 0:
            k = int(par[k])
            steps += 1
            if steps > nb:
                raise ValueError(f'parent: circuit through body {i}, not a directed tree')
    return par


def incidence_matrix(parent: Sequence[int] | np.ndarray) -> np.ndarray:
    """Incidence matrix ``C`` of a directed tree [M sec. 2, eq. 1].

    Parameters
    ----------
    parent : (nb,) array_like of int
        Parent body of each body (body indices, unitless), ``-1`` for the root. Arc ``j`` is
        the arc whose final vertex is body ``j + 1`` when the labeling is regular
        (``parent[i] < i``); for an arbitrary labeling the arcs are numbered by increasing
        final vertex, skipping the root.

    Returns
    -------
    (nb, nb - 1) ndarray of int
        ``c_ij = 1`` if body ``i`` is the initial vertex of arc ``j``, ``-1`` if it is the
        final vertex, 0 otherwise (each column holds one 1 and one -1; rank ``nb - 1``).
    """
    par = _parents(parent)
    children = [i for i in range(par.size) if par[i] >= 0]
    C = np.zeros((par.size, par.size - 1), dtype=np.int64)
    for j, i in enumerate(children):
        C[par[i], j] = 1
        C[i, j] = -1
    return C


def path_matrix(parent: Sequence[int] | np.ndarray) -> np.ndarray:
    """``T = S^-1`` with ``S = (-e_1, C)`` [M eqs. 22-25], for a regular labeling.

    ``T_1`` (first row) is ``-1_n^T``; ``T_2`` (the other rows) satisfies ``T_2 C = E``
    and ``t_kl = -1`` iff arc ``k`` lies on the path from the root to body ``l`` (the path rule
    printed after [M eq. 24], equivalent to its recursion).

    Parameters
    ----------
    parent : (nb,) array_like of int
        Parent of each body (body indices, unitless), ``-1`` for the root; regular labeling.

    Returns
    -------
    (nb, nb) ndarray of int

    Raises
    ------
    ValueError
        If the labeling is not regular (``parent[i] < i`` for every non-root body).
    """
    par = _parents(parent)
    if par[0] != -1 or np.any(par[1:] >= np.arange(1, par.size)):
        raise ValueError(f'parent: expected a regular labeling (parent[i] < i), got {par}')
    nb = par.size
    T = np.zeros((nb, nb), dtype=np.int64)
    T[0, :] = -1
    for ell in range(1, nb):
        k = ell
        while k > 0:  # arc k - 1 (final vertex k) is on the path to body ell
            T[k, ell] = -1
            k = int(par[k])
    return T


def regular_labeling(parent: Sequence[int] | np.ndarray) -> np.ndarray:
    """A regular labeling of a directed tree by the peeling procedure of [M sec. 2].

    The peripheral vertices (no outgoing arc) get the highest numbers, are removed, and the
    procedure is repeated on the remaining tree; the root ends as body 0.

    Parameters
    ----------
    parent : (nb,) array_like of int
        Parent of each body in an arbitrary labeling (body indices, unitless), ``-1`` for
        the root.

    Returns
    -------
    (nb,) ndarray of int
        ``new[i]`` = regular label of body ``i``. With ``new_parent[new[i]] = new[parent[i]]``
        the relabeled tree has ``new_parent[k] < k``.
    """
    par = _parents(parent)
    nb = par.size
    outdeg = np.zeros(nb, dtype=np.int64)
    for i in range(nb):
        if par[i] >= 0:
            outdeg[par[i]] += 1
    alive = np.ones(nb, dtype=bool)
    new = np.full(nb, -1, dtype=np.int64)
    label = nb - 1
    while label >= 0:
        leaves = [i for i in range(nb) if alive[i] and outdeg[i] == 0]
        for i in sorted(leaves, reverse=True):
            new[i] = label
            label -= 1
            alive[i] = False
            if par[i] >= 0:
                outdeg[par[i]] -= 1
    return new
