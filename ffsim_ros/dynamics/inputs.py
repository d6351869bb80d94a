"""Checking and converting the arguments of the dynamics API (the layer below the algorithms).

Every public function of :mod:`ffsim_ros.dynamics` takes array-likes and turns them into
float64 arrays of the model's sizes here, raising a ``ValueError`` that names the argument,
what was expected and what came. The per-call fast paths skip the conversion when
:func:`is_ready` says an argument can go to a compiled kernel as it is.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from .model import Model

ArrayLike = Sequence[float] | np.ndarray

#: Reference points of an angular momentum: the inertial origin, the system CoM, the base CoM.
MOMENTUM_POINTS = ('origin', 'com', 'base')

_F8 = np.dtype(np.float64)
_UNIT_STRIDE = (8,)


def is_ready(x: object, shape: tuple[int]) -> bool:
    """Whether ``x`` can go to a compiled kernel as it is: a float64 ``shape`` ndarray with
    unit stride (C-contiguous).

    Four attribute checks (numpy's ``flags`` object alone would cost as much): the test of
    every per-call fast path. A read-only or unaligned array passes too: the kernels never
    write their inputs, and the entry points read any 8-byte-strided float64 buffer the same
    way. The arrays the compiled kernels return carry a float64 dtype equal to numpy's but
    not the same object: compared by value after the identity test misses.
    """
    return (
        x.__class__ is np.ndarray
        and (x.dtype is _F8 or x.dtype == _F8)  # type: ignore[attr-defined]
        and x.shape == shape  # type: ignore[attr-defined]
        and x.strides == _UNIT_STRIDE  # type: ignore[attr-defined]
    )


def as_vector(x: ArrayLike, size: int, what: str) -> np.ndarray:
    """``x`` as a C-contiguous, aligned, writeable float64 array of shape ``(size,)``.

    Raises
    ------
    ValueError
        ``'<what>: expected <size> values, got ...'``.
    """
    arr = np.ascontiguousarray(x, dtype=float)
    flags = arr.flags
    if not (flags.writeable and flags.aligned):  # another numba type: would compile again
        arr = arr.copy()
    if arr.shape != (size,):
        got = arr.shape[0] if arr.ndim == 1 else f'shape {arr.shape}'
        raise ValueError(f'{what}: expected {size} values, got {got}')
    return arr


def as_rows(x: ArrayLike, size: int, what: str, lead: tuple[int, ...]) -> np.ndarray:
    """``x`` (..., size) broadcast to ``lead + (size,)`` and flattened to a C-contiguous,
    writeable (B, size) array (the layout of the single-state vectors: one numba type).

    Raises
    ------
    ValueError
        A wrong last axis, or batch dimensions that do not broadcast to ``lead``.
    """
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
    rows = np.ascontiguousarray(arr.reshape(-1, size))
    if not (rows.flags.writeable and rows.flags.aligned):
        # a broadcast view is read-only: another numba type, so every kernel below the batched
        # entry point would be compiled a second time (minutes at first start)
        rows = rows.copy()
    return rows


def is_batch(q: ArrayLike) -> bool:
    """Whether ``q`` carries leading batch dimensions (..., nq)."""
    return np.ndim(q) > 1


def batch_shape(q: ArrayLike) -> tuple[int, ...]:
    """The leading batch dimensions of ``q`` (..., nq)."""
    return tuple(np.shape(q)[:-1])


def as_q(model: Model, q: ArrayLike) -> np.ndarray:
    """A configuration (nq,) of ``model``."""
    return as_vector(q, model.nq, 'q')


def as_v(model: Model, v: ArrayLike, what: str = 'v') -> np.ndarray:
    """A velocity-sized vector (nv,) of ``model`` (``what`` names it in errors)."""
    return as_vector(v, model.nv, what)


def require_floating(model: Model, what: str) -> None:
    """Raise a ``ValueError`` naming ``what`` unless ``model`` has a floating base."""
    if not model.floating_base:
        raise ValueError(f'{what}: expected a floating-base model, got a fixed-base one')


def check_point(about: str) -> None:
    """Raise a ``ValueError`` unless ``about`` is one of :data:`MOMENTUM_POINTS`."""
    if about not in MOMENTUM_POINTS:
        raise ValueError(f'about: expected one of {MOMENTUM_POINTS}, got {about!r}')


def no_batched_wrenches(link_wrenches: Mapping[str, ArrayLike] | None) -> None:
    """Raise unless ``link_wrenches`` is empty: they are single-state only."""
    if link_wrenches:
        raise ValueError('link_wrenches: expected None with batched states (single state only)')


def generalized_force(model: Model, tau: ArrayLike, base_wrench: ArrayLike | None) -> np.ndarray:
    """``[F_b; tau]`` (nv,) [S0 eq. 39] from the joint efforts (n,) and an optional base
    wrench (6,) at the base CoM, inertial frame."""
    gen = np.zeros(model.nv)
    gen[model.nv - model.n :] = as_vector(tau, model.n, 'tau')
    if base_wrench is not None:
        require_floating(model, 'base_wrench')
        gen[:6] = as_vector(base_wrench, 6, 'base_wrench')
    return gen


def generalized_forces(
    model: Model, tau: ArrayLike, base_wrench: ArrayLike | None, lead: tuple[int, ...]
) -> np.ndarray:
    """:func:`generalized_force` of a batch: (B, nv) from ``tau`` (..., n) and ``base_wrench``
    (..., 6), broadcast to the batch shape ``lead``."""
    gen = np.zeros((int(np.prod(lead)), model.nv))
    gen[:, model.nv - model.n :] = as_rows(tau, model.n, 'tau', lead)
    if base_wrench is not None:
        require_floating(model, 'base_wrench')
        gen[:, :6] = as_rows(base_wrench, 6, 'base_wrench', lead)
    return gen
