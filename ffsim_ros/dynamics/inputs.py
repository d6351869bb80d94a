"""Checking and converting the arguments of the dynamics API (the layer below the algorithms).

Every public function of :mod:`ffsim_ros.dynamics` takes array-likes and turns them into
float64 arrays of the model's sizes here, raising an error that names the argument, what was
expected and what came: a ``TypeError`` for values that are not real numbers (complex
numbers, strings, booleans, None, objects), a ``ValueError`` for real values of the wrong
size or range. The engine (:mod:`ffsim_ros.sim`) and the control laws check their arguments
with the same functions. The per-call fast paths skip the conversion when
:func:`plain_vectors` (and the compiled entry point's own size and stride check) or
:func:`is_ready` says an argument can go to a compiled kernel as it is.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping, Sequence

import numpy as np

from .model import Model

ArrayLike = Sequence[float] | np.ndarray

#: Reference points of an angular momentum: the inertial origin, the system CoM, the base CoM.
MOMENTUM_POINTS = ('origin', 'com', 'base')

_F8 = np.dtype(np.float64)
_UNIT_STRIDE = (8,)
_REAL_KINDS = 'fiu'  # the dtype kinds taken as real numbers: float, int, unsigned


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


def plain_vector(x: object) -> bool:
    """:func:`plain_vectors` of one vector (the mass matrix's ``q``)."""
    return (
        x.__class__ is np.ndarray
        and (x.dtype is _F8 or x.dtype == _F8)  # type: ignore[attr-defined]
        and x.ndim == 1  # type: ignore[attr-defined]
    )


def plain_vectors(a: object, b: object, c: object) -> bool:
    """Whether ``a``, ``b`` and ``c`` are one-dimensional float64 ndarrays (one object may be
    given for two or three of them): the Python half of the per-call fast paths' test.

    The entry points check the other half, each vector's size and unit stride, in compiled
    code (:func:`~ffsim_ros.dynamics.kernels.layout.plain_vector`), and return False where it
    fails; :func:`is_ready` checks all of it in Python (shape and strides are tuples built
    on each access): one call here for three vectors costs about what :func:`is_ready`
    costs for one (0.12 against 0.43 us for three, measured 2026-11-28). The class, dtype
    and dimension must be checked before the native entry point is called: it reads any
    ndarray's buffer as the type it was compiled for.
    """
    return (
        a.__class__ is np.ndarray
        and b.__class__ is np.ndarray
        and c.__class__ is np.ndarray
        and (a.dtype is _F8 or a.dtype == _F8)  # type: ignore[attr-defined]
        and (b.dtype is _F8 or b.dtype == _F8)  # type: ignore[attr-defined]
        and (c.dtype is _F8 or c.dtype == _F8)  # type: ignore[attr-defined]
        and a.ndim == 1  # type: ignore[attr-defined]
        and b.ndim == 1  # type: ignore[attr-defined]
        and c.ndim == 1  # type: ignore[attr-defined]
    )


def describe(x: object) -> str:
    """``x`` for an error message: its type and (short) value."""
    if x is None:
        return 'None'
    if isinstance(x, np.ndarray):
        return f'an array of {x.dtype} of shape {x.shape}'
    text = repr(x)
    return f'{type(x).__name__} {text if len(text) <= 60 else text[:57] + "..."}'


def is_real_scalar(x: object) -> bool:
    """Whether ``x`` is one real number (Python or NumPy int or float, a fraction, a decimal;
    not a bool, a complex number, a string nor an array)."""
    if isinstance(x, bool | np.bool_):
        return False
    return isinstance(x, numbers.Real) or (
        isinstance(x, numbers.Number) and not isinstance(x, numbers.Complex)
    )


def real_array(x: object, what: str) -> np.ndarray:
    """``x`` as an ndarray of real numbers, not yet converted to float64 (any int, unsigned,
    bool or float dtype; an object array whose entries are all real numbers as float64).

    Parameters
    ----------
    x : object
    what : str
        Names the argument.

    Returns
    -------
    ndarray
        Of ``x``'s shape.

    Raises
    ------
    TypeError
        ``'<what>: expected real numbers, got ...'`` for None, strings, complex numbers and
        objects that are not numbers.
    ValueError
        A ragged sequence (rows of different lengths).
    """
    if isinstance(x, np.ndarray):
        arr = x
    else:
        if x is None or isinstance(x, str | bytes):
            raise TypeError(f'{what}: expected real numbers, got {describe(x)}')
        try:
            arr = np.asarray(x)
        except (TypeError, ValueError) as e:
            raise ValueError(
                f'{what}: expected an array of real numbers, got {type(x).__name__} numpy '
                f'cannot make one of ({e})'
            ) from None
    kind = arr.dtype.kind
    if kind in _REAL_KINDS:
        return arr
    if kind == 'O':
        flat = arr.ravel()
        for i, item in enumerate(flat):
            if not is_real_scalar(item):
                at = f' at index {i}' if arr.ndim else ''
                raise TypeError(f'{what}: expected real numbers, got {describe(item)}{at}')
        return arr.astype(float)
    got = {'b': 'booleans', 'c': 'complex numbers', 'U': 'strings', 'S': 'bytes'}.get(
        kind, 'values'
    )
    raise TypeError(f'{what}: expected real numbers, got {got} ({arr.dtype})')


def real_number(x: object, what: str) -> float:
    """``x`` as a float: one real number (see :func:`is_real_scalar`; a 0-d real array too).

    Parameters
    ----------
    x : object
    what : str
        Names the argument.

    Raises
    ------
    TypeError
        ``'<what>: expected a real number, got ...'``.
    """
    if x.__class__ is float:
        return x  # type: ignore[return-value]
    if is_real_scalar(x):
        return float(x)  # type: ignore[arg-type]
    if isinstance(x, np.ndarray) and x.ndim == 0 and x.dtype.kind in 'fiu':
        return float(x)
    raise TypeError(f'{what}: expected a real number, got {describe(x)}')


def positive_step(dt: object, what: str = 'dt') -> float:
    """``dt`` as a float, finite and > 0 (a time step or a tolerance).

    Parameters
    ----------
    dt : object
        The step, in its caller's unit (e.g. [s]).
    what : str
        Names the argument.

    Raises
    ------
    TypeError
        Not a real number.
    ValueError
        ``'<what>: expected a finite positive step, got ...'``.
    """
    value = dt if dt.__class__ is float else real_number(dt, what)
    if not (0.0 < value < math.inf):  # type: ignore[operator]
        kind = 'step' if what == 'dt' else 'value'
        raise ValueError(f'{what}: expected a finite positive {kind}, got {value}')
    return value  # type: ignore[return-value]


def as_bool(x: object, what: str) -> bool:
    """``x`` as a bool: a Python or NumPy bool only (a string such as ``'false'`` or ``'no'``,
    truthy, would otherwise switch a flag on; an int is not taken for one either).

    Parameters
    ----------
    x : object
    what : str
        Names the argument.

    Raises
    ------
    TypeError
        ``'<what>: expected a bool, got ...'``.
    """
    if x is True or x is False:
        return x  # type: ignore[return-value]
    if isinstance(x, np.bool_):
        return bool(x)
    raise TypeError(f'{what}: expected a bool, got {describe(x)}')


def check_model(model: object) -> None:
    """Raise a ``TypeError`` naming ``model`` unless it is a :class:`~.model.Model` (None or
    a URDF string would fail later with an ``AttributeError`` naming no argument)."""
    if not isinstance(model, Model):
        raise TypeError(f'model: expected a Model (load_urdf), got {describe(model)}')


def is_integer(x: object) -> bool:
    """Whether ``x`` is a Python or NumPy integer (not a bool)."""
    return isinstance(x, int | np.integer) and not isinstance(x, bool | np.bool_)


def as_count(
    x: object, what: str, minimum: int = 1, unit: str = '', maximum: int | None = None
) -> int:
    """``x`` as an int ``>= minimum`` (and ``<= maximum`` when given): a Python or NumPy
    integer (not a bool, not a float, even an integral one: a count is never rounded);
    ``unit`` (e.g. ``'steps'``) is named in the message.

    Parameters
    ----------
    x : object
    what : str
        Names the argument.
    minimum : int
    maximum : int, optional
    unit : str
        Named in messages.

    Raises
    ------
    TypeError
        Not an integer; ``ValueError``: below ``minimum`` or above ``maximum``.
    """
    if is_integer(x) and x >= minimum:  # type: ignore[operator]
        if maximum is None or x <= maximum:  # type: ignore[operator]
            return int(x)  # type: ignore[arg-type]
        raise ValueError(f'{what}: expected an integer <= {maximum}, got {x}')
    expected = f'an integer >= {minimum}' + (f' ({unit})' if unit else '')
    if not is_integer(x):
        raise TypeError(f'{what}: expected {expected}, got {describe(x)}')
    raise ValueError(f'{what}: expected {expected}, got {x}')


def step_count(t_final: object, dt: float) -> int:
    """The number of whole steps of ``dt`` nearest the duration ``t_final`` (finite, >= 0).

    Parameters
    ----------
    t_final : object
        Duration [s].
    dt : float
        Step [s], > 0.

    Raises
    ------
    TypeError
        ``t_final`` not a real number; ``ValueError``: negative, not finite, or so long a
        duration that the steps cannot be counted.
    """
    t = real_number(t_final, 't_final')
    if not 0.0 <= t < math.inf:
        raise ValueError(f't_final: expected a finite duration >= 0, got {t}')
    ratio = t / dt
    if not ratio < 2.0**53:
        raise ValueError(
            f't_final, dt: expected a duration of fewer than 2**53 steps, got {t} s / {dt} s'
        )
    return int(round(ratio))


def as_vector(x: ArrayLike, size: int, what: str) -> np.ndarray:
    """``x`` as a C-contiguous, aligned, writeable float64 array of shape ``(size,)``.

    Parameters
    ----------
    x : (size,) array_like
    size : int
    what : str
        Names the argument.

    Returns
    -------
    (size,) ndarray

    Raises
    ------
    TypeError
        Values that are not real numbers (:func:`real_array`).
    ValueError
        ``'<what>: expected <size> values, got ...'``.
    """
    if x.__class__ is not np.ndarray or x.dtype is not _F8:  # type: ignore[attr-defined]
        x = real_array(x, what)
    arr = np.ascontiguousarray(x, dtype=float)
    flags = arr.flags
    if not (flags.writeable and flags.aligned):  # another numba type: would compile again
        arr = arr.copy()
    if arr.shape != (size,):
        shape = x.shape  # type: ignore[attr-defined]
        got = shape[0] if len(shape) == 1 else f'shape {shape}' if shape else 'a scalar'
        raise ValueError(f'{what}: expected {size} values, got {got}')
    return arr


def as_rows(x: ArrayLike, size: int, what: str, lead: tuple[int, ...]) -> np.ndarray:
    """``x`` (..., size) broadcast to ``lead + (size,)`` and flattened to a C-contiguous,
    writeable (B, size) array (the layout of the single-state vectors: one numba type).

    Parameters
    ----------
    x : (..., size) array_like
    size : int
    what : str
        Names the argument.
    lead : tuple of int
        The batch shape.

    Returns
    -------
    (B, size) ndarray
        ``B = prod(lead)``.

    Raises
    ------
    TypeError
        Values that are not real numbers (:func:`real_array`).
    ValueError
        A wrong last axis, or batch dimensions that do not broadcast to ``lead``.
    """
    if x.__class__ is not np.ndarray or x.dtype is not _F8:  # type: ignore[attr-defined]
        x = real_array(x, what)
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
    (B, nq) (the kernels normalize each: a zero one divides by zero), or None.

    A quaternion is zero when its four components are: tested on the components, not on the
    sum of their squares, which underflows to 0 for a 1e-200 quaternion the kernels normalize
    exactly (they scale it first).

    Parameters
    ----------
    model : Model
    Q : (B, nq) ndarray
        Configurations.
    """
    for i in quaternion_starts(model):
        # column by column (4x faster than a reduction over the strided (B, 4) view; NaN is
        # not zero either way)
        zero = Q[:, i] == 0.0
        for c in range(i + 1, i + 4):
            zero &= Q[:, c] == 0.0
        if zero.any():
            return int(np.flatnonzero(zero)[0]), i
    return None


def zero_quaternion_error(
    model: Model, Q: np.ndarray, rows: bool = True, what: str = 'q'
) -> ValueError | None:
    """The error naming the first zero quaternion of the configurations ``Q`` (B, nq) (its
    row when ``rows``; a single state's is just at its index), or None when there is none;
    ``what`` names the argument.

    Parameters
    ----------
    model : Model
    Q : (B, nq) ndarray
        Configurations.
    rows : bool
    what : str
    """
    zero = zero_quaternion(model, Q)
    if zero is None:
        return None
    r, i = zero
    return ValueError(
        f'{what}: expected a non-zero quaternion (x, y, z, w) at index {i}, got '
        f'{Q[r, i : i + 4].tolist()}' + (f' in row {r}' if rows else '')
    )


def about_the_base(model: Model, q: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
    """``(q with the base CoM at the origin, the base CoM q[..., 0:3])`` for a floating base
    away from the world origin, else ``(q, None)``: the free-floating dynamics do not depend
    on where the origin is (uniform gravity included), but the kernels take spatial
    quantities about it, where terms of ``m |r|^2`` cancel (forward dynamics 4e-8 relative at
    1 km from the origin, 6e-6 at 10 km). ``q`` (..., nq) is not modified.

    Parameters
    ----------
    model : Model
    q : (nq,) or (..., nq) ndarray
        Configuration [m, -, rad | m], base parts in the inertial frame.

    Returns
    -------
    q_local : (nq,) or (..., nq) ndarray
        ``q`` with its base CoM at the origin (a copy), or ``q``.
    origin : (3,) or (..., 3) ndarray or None
        The base CoM [m], inertial frame.

    Raises
    ------
    ValueError
        A single state's base CoM ``q[0:3]`` not finite, named (the kernels would not see
        it: the steps and derivatives taken about the base would be finite).
    """
    if not model.floating_base:
        return q, None
    if q.ndim == 1:  # (scalars: a single state's per-call path, checked in the same pass)
        x, y, z = q[:3].tolist()
        if x == 0.0 and y == 0.0 and z == 0.0:
            return q, None
        if not math.isfinite(x + y + z) and not (
            math.isfinite(x) and math.isfinite(y) and math.isfinite(z)
        ):  # (a NaN there would only be added back to the finite result)
            raise input_error(model, q=q)  # type: ignore[misc]
        local = q.copy()
        local[0] = local[1] = local[2] = 0.0
        return local, q[:3].copy()
    if not q[..., :3].any():  # (a batch: its rows are checked finite already)
        return q, None
    origin = q[..., :3].copy()
    q = q.copy()
    q[..., :3] = 0.0
    return q, origin


def back_from_the_base(q: np.ndarray, origin: np.ndarray | None) -> np.ndarray:
    """``q`` (..., nq) integrated :func:`about_the_base`, its base CoM moved back by
    ``origin`` (..., 3) (None: unchanged).

    Parameters
    ----------
    q : (nq,) or (..., nq) ndarray
        Configuration about the base [m, -, rad | m].
    origin : (3,) or (..., 3) ndarray or None
        From :func:`about_the_base` [m].

    Returns
    -------
    (nq,) or (..., nq) ndarray
    """
    if origin is None:
        return q
    q = q.copy()
    q[..., :3] += origin
    return q


def as_q_rows(model: Model, q: ArrayLike, lead: tuple[int, ...]) -> np.ndarray:
    """:func:`as_rows` of configurations, each quaternion checked non-zero.

    Parameters
    ----------
    model : Model
    q : (..., nq) array_like
        Configurations [m, -, rad | m].
    lead : tuple of int
        The batch shape.

    Returns
    -------
    (B, nq) ndarray

    Raises
    ------
    ValueError
        As :func:`as_rows`, or ``'q: expected a non-zero quaternion at index <i>, got ...'``.
    """
    check_model(model)
    Q = as_rows(q, model.nq, 'q', lead)
    error = zero_quaternion_error(model, Q)
    if error is not None:
        raise error
    return Q


def input_error(model: Model, **arrays: np.ndarray | None) -> ValueError | None:
    """The ``ValueError`` naming the first of ``arrays`` (by argument name, None skipped) with
    a non-finite entry, or the zero quaternion of the configuration ``q`` (nq,); None when
    the inputs are fine.

    Parameters
    ----------
    model : Model
    **arrays : ndarray or None
        Arguments by name (``q`` (nq,), ``v`` (nv,), ...).
    """
    for name, x in arrays.items():
        if x is None:
            continue
        x = np.asarray(x, dtype=float).ravel()
        if not np.isfinite(x).all():
            i = int(np.flatnonzero(~np.isfinite(x))[0])
            return ValueError(f'{name}: expected finite values, got {x[i]} at index {i}')
    q = np.asarray(arrays.get('q', ()), dtype=float)
    if q.shape == (model.nq,):
        return zero_quaternion_error(model, q[None, :], rows=False)
    return None


def any_link_wrench(link_wrenches: Mapping[str, ArrayLike] | None) -> bool:
    """Whether ``link_wrenches`` holds a wrench (None or an empty mapping: no).

    Parameters
    ----------
    link_wrenches : mapping or None

    Raises
    ------
    TypeError
        Not None nor a mapping (an array's truth value would be ambiguous).
    """
    if link_wrenches is None:
        return False
    if not isinstance(link_wrenches, Mapping):
        raise TypeError(
            'link_wrenches: expected a mapping {link name: [f; n] (6,)}, got '
            f'{describe(link_wrenches)}'
        )
    return len(link_wrenches) > 0


def link_wrench_items(
    link_wrenches: Mapping[str, ArrayLike] | None,
) -> list[tuple[str, np.ndarray]]:
    """The ``(link, [f; n] (6,))`` pairs of ``link_wrenches`` (None: none), each wrench
    converted and checked finite.

    Parameters
    ----------
    link_wrenches : mapping or None
        ``{link: (6,) [f; n]}`` [N, N m].

    Returns
    -------
    list of (str, (6,) ndarray)

    Raises
    ------
    TypeError
        ``link_wrenches`` not a mapping ``{link name: (6,) wrench}``, or a wrench that is not
        real numbers; ``ValueError``: a wrench of the wrong size or not finite.
    """
    if not any_link_wrench(link_wrenches):
        return []
    out = []
    for link, wrench in link_wrenches.items():
        what = f'link_wrenches[{link!r}]'
        w = as_vector(wrench, 6, what)
        if not np.isfinite(w).all():
            i = int(np.flatnonzero(~np.isfinite(w))[0])
            raise ValueError(f'{what}: expected finite values, got {w[i]} at index {i}')
        out.append((link, w))
    return out


def is_batch(q: ArrayLike) -> bool:
    """Whether ``q`` carries leading batch dimensions (..., nq).

    Parameters
    ----------
    q : (nq,) or (..., nq) array_like
    """
    return np.ndim(q) > 1


def batch_shape(q: ArrayLike) -> tuple[int, ...]:
    """The leading batch dimensions of ``q`` (..., nq).

    Parameters
    ----------
    q : (..., nq) array_like
    """
    return tuple(np.shape(q)[:-1])


def as_q(model: Model, q: ArrayLike) -> np.ndarray:
    """A configuration (nq,) of ``model`` (a ``TypeError`` naming ``model`` when it is not a
    :class:`~.model.Model`).

    Parameters
    ----------
    model : Model
    q : (nq,) array_like
        Configuration [m, -, rad | m].

    Returns
    -------
    (nq,) ndarray
    """
    check_model(model)
    return as_vector(q, model.nq, 'q')


def as_v(model: Model, v: ArrayLike, what: str = 'v') -> np.ndarray:
    """A velocity-sized vector (nv,) of ``model`` (``what`` names it in errors).

    Parameters
    ----------
    model : Model
    v : (nv,) array_like
    what : str

    Returns
    -------
    (nv,) ndarray
    """
    check_model(model)
    return as_vector(v, model.nv, what)


def require_floating(model: Model, what: str) -> None:
    """Raise a ``ValueError`` naming ``what`` unless ``model`` has a floating base (a
    ``TypeError`` naming ``model`` when it is not a :class:`~.model.Model`).

    Parameters
    ----------
    model : Model
    what : str
        Names the caller in the message.
    """
    check_model(model)
    if not model.floating_base:
        raise ValueError(f'{what}: expected a floating-base model, got a fixed-base one')


def check_point(about: str) -> None:
    """Raise a ``ValueError`` unless ``about`` is one of :data:`MOMENTUM_POINTS`."""
    if about not in MOMENTUM_POINTS:
        raise ValueError(f'about: expected one of {MOMENTUM_POINTS}, got {about!r}')


def no_batched_wrenches(link_wrenches: Mapping[str, ArrayLike] | None) -> None:
    """Raise unless ``link_wrenches`` is empty: they are single-state only."""
    if any_link_wrench(link_wrenches):
        raise ValueError('link_wrenches: expected None with batched states (single state only)')


def generalized_force(model: Model, tau: ArrayLike, base_wrench: ArrayLike | None) -> np.ndarray:
    """``[F_b; tau]`` (nv,) [S0 eq. 39] from the joint efforts (n,) and an optional base
    wrench (6,) at the base CoM, inertial frame.

    Parameters
    ----------
    model : Model
    tau : (n,) array_like
        Joint efforts [N m | N].
    base_wrench : (6,) array_like or None
        ``[F; T]`` at the base CoM, inertial frame [N, N m].

    Returns
    -------
    (nv,) ndarray
    """
    gen = np.zeros(model.nv)
    gen[model.nv - model.n :] = as_vector(tau, model.n, 'tau')
    if base_wrench is not None:
        require_floating(model, 'base_wrench')
        gen[:6] = as_vector(base_wrench, 6, 'base_wrench')
    return gen


def generalized_force_parts(model: Model, gen: np.ndarray) -> dict[str, np.ndarray]:
    """``[F_b; tau]`` (nv,) of :func:`generalized_force` split back into the arguments it
    was made of, by name (``base_wrench`` (6,) for a floating base, ``tau`` (n,)), for
    :func:`.state_errors.state_error`: a NaN in the base wrench is named as such, at its own
    index. A batch ``gen`` (B, nv) gives (B, 6) and (B, n) rows.

    Parameters
    ----------
    model : Model
    gen : (nv,) or (B, nv) ndarray
    """
    off = model.nv - model.n
    parts = {'base_wrench': gen[..., :off]} if off else {}
    return {**parts, 'tau': gen[..., off:]}


def generalized_forces(
    model: Model, tau: ArrayLike, base_wrench: ArrayLike | None, lead: tuple[int, ...]
) -> np.ndarray:
    """:func:`generalized_force` of a batch: (B, nv) from ``tau`` (..., n) and ``base_wrench``
    (..., 6), broadcast to the batch shape ``lead``.

    Parameters
    ----------
    model : Model
    tau : (..., n) array_like
        Joint efforts [N m | N].
    base_wrench : (..., 6) array_like or None
        ``[F; T]`` at the base CoM, inertial frame [N, N m].
    lead : tuple of int
        The batch shape.

    Returns
    -------
    (B, nv) ndarray
    """
    gen = np.zeros((int(np.prod(lead)), model.nv))
    gen[:, model.nv - model.n :] = as_rows(tau, model.n, 'tau', lead)
    if base_wrench is not None:
        require_floating(model, 'base_wrench')
        gen[:, :6] = as_rows(base_wrench, 6, 'base_wrench', lead)
    return gen
