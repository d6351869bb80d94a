"""The errors of a state that will not compute (the layer below the algorithms, beside
:mod:`.inputs`): the input that is not finite, named by its argument and index; a kernel's
own failure told from an overflow of finite inputs; a non-finite result traced back to what
caused it.

The compiled kernels raise a bare ``ValueError`` (or ``ZeroDivisionError``) at the first
non-finite value they meet; :func:`state_error` turns it into the message a user can act on.
"""

from __future__ import annotations

import math

import numpy as np

from .inputs import input_error
from .model import Model


def require_state(model: Model, **arrays: np.ndarray | None) -> None:
    """Raise the error of :func:`input_error` when there is one (for the NumPy/SciPy
    formulations, which would fail on such a state with an error naming no argument).

    Parameters
    ----------
    model : Model
    **arrays : ndarray or None
        Arguments by name (``q`` (nq,), ``v`` (nv,), ...).
    """
    error = input_error(model, **arrays)
    if error is not None:
        raise error


#: The words of a compiled kernel's matrix that is not finite (:mod:`.kernels.cholesky`).
NOT_FINITE_MATRIX = 'is not finite: a NaN or an overflow'


def is_kernel_failure(error: Exception) -> bool:
    """Whether ``error`` is a compiled kernel's own failure on a state (a division by zero, a
    matrix not positive definite or not finite), rather than an argument error."""
    if isinstance(error, ZeroDivisionError):
        return True
    text = str(error)
    return 'positive definite' in text or NOT_FINITE_MATRIX in text


def state_error(model: Model, error: Exception, **arrays: np.ndarray) -> Exception:
    """The exception to raise when a kernel failed on one state: a ``ValueError`` naming the
    argument that is not finite, or the zero quaternion of ``q``, when there is one; else a
    ``ValueError`` saying the model is degenerate there, for the kernels' own failures (a
    division by zero, a matrix not positive definite); else the overflow
    (:func:`overflow_error`) when the kernel found its result, or a matrix within, not
    finite; else ``error`` itself.

    Parameters
    ----------
    model : Model
    error : Exception
        The kernel's exception.
    **arrays : ndarray
        The state's arguments by name (``q`` (nq,), ``v`` (nv,), ...), as passed to the
        kernel.

    Returns
    -------
    Exception
    """
    named = input_error(model, **arrays)
    if named is not None:
        return named
    if NOT_FINITE_MATRIX in str(error):  # (from finite inputs: an overflow within)
        return overflow_error(model, **arrays)
    if is_kernel_failure(error):
        why = str(error) or 'division by zero'
        return ValueError(
            f'the dynamics of {model.name!r} are not defined at this state ({why}): a '
            'degenerate model, e.g. a joint whose motion moves no inertia'
        )
    if 'non-finite result' in str(error):  # the entry points' check of their result
        return overflow_error(model, **arrays)
    return error


def overflow_error(model: Model, **arrays: np.ndarray | None) -> ValueError:
    """The ``ValueError`` of a result that is not finite although its inputs ``arrays`` (by
    argument name, None skipped) are: an overflow of float64, the velocity products of the
    dynamics going as ``|v|^2``; the largest magnitude of each argument but ``q`` is shown
    (of those that are not zero).

    Parameters
    ----------
    model : Model
    **arrays : ndarray or None
        Arguments by name (``q`` (nq,), ``v`` (nv,), ...).
    """
    largest = {
        name: float(np.max(np.abs(x), initial=0.0))
        for name, x in arrays.items()
        if x is not None and name != 'q'
    }
    sizes = ', '.join(f'max |{name}| = {x:.3g}' for name, x in largest.items() if x > 0.0)
    if not sizes and arrays.get('q') is not None:  # (the kinematics: a configuration alone)
        top = float(np.max(np.abs(arrays['q']), initial=0.0))
        return ValueError(
            f'overflow: the kinematics of {model.name!r} are not finite at this finite '
            f'configuration (max |q| = {top:.3g})'
        )
    return ValueError(
        f'overflow: the dynamics of {model.name!r} are not finite at this finite state: '
        f'velocities/efforts too large ({sizes})'
    )


def require_finite_inputs(model: Model, **arrays: np.ndarray | None) -> None:
    """Raise the error of :func:`input_error` naming the first of ``arrays`` (by argument
    name, None skipped) that is not finite: the check of a single call whose kernel would
    return NaN silently, one :func:`is_finite` per array (0.3 us for 13 values).

    Parameters
    ----------
    model : Model
    **arrays : ndarray or None
        Arguments by name (``q`` (nq,), ``v`` (nv,), ...).
    """
    for x in arrays.values():
        if x is not None and not is_finite(x):
            raise input_error(model, **arrays)  # type: ignore[misc]  # (never None here)


def require_finite_outputs(
    model: Model, outputs: tuple[np.ndarray, ...], **arrays: np.ndarray | None
) -> None:
    """Raise unless every array of ``outputs`` (a single state's results) is finite: the
    argument of ``arrays`` that is not finite or the zero quaternion (:func:`.inputs.input_error`),
    else the overflow (:func:`overflow_error`); one :func:`is_finite` per output when they
    are finite.

    Parameters
    ----------
    model : Model
    outputs : tuple of ndarray
    **arrays : ndarray or None
        Arguments by name (``q`` (nq,), ``v`` (nv,), ...).
    """
    for out in outputs:
        if not is_finite(out):
            raise input_error(model, **arrays) or overflow_error(model, **arrays)


def is_finite(x: np.ndarray) -> bool:
    """Whether every entry of the small array ``x`` is finite: the cheapest test of a
    single state's result in Python (0.3 us for 13 values, where ``x.sum()`` costs 1 us and
    ``np.isfinite(x).all()`` 1.3 us), a sum that may overflow alone confirmed entry by entry.

    Parameters
    ----------
    x : (k,) ndarray
    """
    return math.isfinite(sum(x.ravel().tolist())) or bool(np.isfinite(x).all())


def require_finite_result(model: Model, out: np.ndarray, **arrays: np.ndarray | None) -> None:
    """Raise unless ``out`` is finite: the argument of ``arrays`` that is not finite or the
    zero quaternion (:func:`.inputs.input_error`), else the overflow (:func:`overflow_error`). For
    the results the compiled entry points do not check themselves; ``out`` (B, k) with
    ``arrays`` (B, ...) is a batch (its rows are checked finite already): the first row
    whose result is not finite is named. One sum when ``out`` is finite.

    Parameters
    ----------
    model : Model
    out : (k,) or (B, k) ndarray
    **arrays : ndarray or None
        Arguments by name, (B, ...) for a batch.
    """
    if math.isfinite(out.sum()) or np.isfinite(out).all():  # (a sum may overflow alone)
        return
    if out.ndim == 1:
        raise input_error(model, **arrays) or overflow_error(model, **arrays)
    r = int(np.flatnonzero(~np.isfinite(out).all(axis=1))[0])
    row = {name: None if x is None else x[r] for name, x in arrays.items()}
    raise ValueError(f'{overflow_error(model, **row)} in row {r}')
