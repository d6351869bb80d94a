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
    An empty array (a robot without joints) has stride 0 and passes too.
    """
    return (
        x.__class__ is np.ndarray
        and (x.dtype is _F8 or x.dtype == _F8)  # type: ignore[attr-defined]
        and x.shape == shape  # type: ignore[attr-defined]
        and (x.strides == _UNIT_STRIDE or x.size == 0)  # type: ignore[attr-defined]
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
    rows = np.ascontiguousarray(arr.reshape(int(np.prod(lead, dtype=np.int64)), size))
    if not (rows.flags.writeable and rows.flags.aligned):
        # a broadcast view is read-only: another numba type, so every kernel below the batched
        # entry point would be compiled a second time (minutes at first start)
        rows = rows.copy()
    if not np.isfinite(rows.sum()) and not np.isfinite(rows).all():
        # checked here because a kernel raising inside the parallel loop of a batched entry
        # point cannot report it (numba returns garbage or a SystemError)
        r, c = np.argwhere(~np.isfinite(rows))[0]
        raise ValueError(
            f'{what}: expected finite values, got {rows[r, c]} in row {r} (index {c})'
        )
    return rows


def quaternion_starts(model: Model) -> tuple[int, ...]:
    """The configuration indices where the unit quaternions (x, y, z, w) of ``model`` start:
    the floating base's attitude, then every spherical joint's."""
    base = (3,) if model.floating_base else ()
    return base + tuple(
        model.idx_q[k] for k, kind in enumerate(model.joint_types) if kind == 'spherical'
    )


def zero_quaternion(model: Model, Q: np.ndarray) -> tuple[int, int] | None:
    """``(row, index)`` of the first zero quaternion (x, y, z, w) in the configurations ``Q``
    (B, nq) (the kernels normalize each: a zero one divides by zero), or None."""
    for i in quaternion_starts(model):
        norms = np.einsum('bi,bi->b', Q[:, i : i + 4], Q[:, i : i + 4])
        if not (norms > 0.0).all():
            return int(np.flatnonzero(~(norms > 0.0))[0]), i
    return None


def zero_quaternion_error(model: Model, Q: np.ndarray, rows: bool = True) -> ValueError | None:
    """The error naming the first zero quaternion of the configurations ``Q`` (B, nq) (its
    row when ``rows``; a single state's is just at its index), or None when there is none."""
    zero = zero_quaternion(model, Q)
    if zero is None:
        return None
    r, i = zero
    return ValueError(
        f'q: expected a non-zero quaternion (x, y, z, w) at index {i}, got '
        f'{Q[r, i : i + 4].tolist()}' + (f' in row {r}' if rows else '')
    )


def as_q_rows(model: Model, q: ArrayLike, lead: tuple[int, ...]) -> np.ndarray:
    """:func:`as_rows` of configurations, each quaternion checked non-zero.

    Raises
    ------
    ValueError
        As :func:`as_rows`, or ``'q: expected a non-zero quaternion at index <i>, got ...'``.
    """
    Q = as_rows(q, model.nq, 'q', lead)
    error = zero_quaternion_error(model, Q)
    if error is not None:
        raise error
    return Q


def state_error(model: Model, error: Exception, **arrays: np.ndarray) -> Exception:
    """The exception to raise when a kernel failed on one state: a ``ValueError`` naming the
    argument that is not finite, or the zero quaternion of ``q``, when there is one; else a
    ``ValueError`` saying the model is degenerate there, for the kernels' own failures (a
    division by zero, a matrix not positive definite); else ``error`` itself.

    Parameters
    ----------
    error : the kernel's exception.
    **arrays : the state's arguments by name, as passed to the kernel.
    """
    for name, x in arrays.items():
        x = np.asarray(x, dtype=float).ravel()
        if not np.isfinite(x).all():
            i = int(np.flatnonzero(~np.isfinite(x))[0])
            return ValueError(f'{name}: expected finite values, got {x[i]} at index {i}')
    q = np.asarray(arrays.get('q', ()), dtype=float)
    zero = zero_quaternion_error(model, q[None, :], rows=False) if q.shape == (model.nq,) else None
    if zero is not None:
        return zero
    if isinstance(error, ZeroDivisionError) or 'positive definite' in str(error):
        why = str(error) or 'division by zero'
        return ValueError(
            f'the dynamics of {model.name!r} are not defined at this state ({why}): a '
            'degenerate model, e.g. a joint whose motion moves no inertia'
        )
    return error


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


def generalized_force_parts(model: Model, gen: np.ndarray) -> dict[str, np.ndarray]:
    """``[F_b; tau]`` (nv,) of :func:`generalized_force` split back into the arguments it
    was made of, by name (``base_wrench`` (6,) for a floating base, ``tau`` (n,)), for
    :func:`state_error`: a NaN in the base wrench is named as such, at its own index."""
    off = model.nv - model.n
    parts = {'base_wrench': gen[:off]} if off else {}
    return {**parts, 'tau': gen[off:]}


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
