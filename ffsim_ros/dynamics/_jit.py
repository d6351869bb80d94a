"""Optional JIT compilation of the dynamics kernels.

numba (a well-kept LLVM JIT, ``python3-numba`` on ROS distros) compiles the recursive
algorithms of :mod:`ffsim_ros.dynamics.kernels` to machine code and caches the result on disk,
so a ROS node pays the compile cost once per installation, not once per start. Without numba
(or with ``NUMBA_DISABLE_JIT=1``) the very same kernels run as plain Python: slower, identical
results.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

try:  # pragma: no cover - exercised implicitly by every test
    import numba as _numba

    HAVE_NUMBA = True
except ImportError:  # pragma: no cover
    _numba = None
    HAVE_NUMBA = False


def njit(func: Callable[..., Any]) -> Callable[..., Any]:
    """Compile ``func`` in nopython mode with an on-disk cache when numba is available.

    Parameters
    ----------
    func : callable
        A kernel written in the numba-compatible subset of Python/NumPy.

    Returns
    -------
    callable
        The compiled dispatcher, or ``func`` itself when numba is not installed.
    """
    if _numba is None:
        return func
    return _numba.njit(cache=True, nogil=True)(func)


def njit_leaf(func: Callable[..., Any]) -> Callable[..., Any]:
    """Like :func:`njit`, for a small leaf helper called per body inside the recursions:
    inlined into every compiled caller (``inline='always'``, at numba-IR level), so that the
    array views it is handed need no reference counting and no call. Only for leaves of a few
    lines: inlining the large passes into every entry point multiplies the compile time.
    """
    if _numba is None:
        return func
    return _numba.njit(cache=True, nogil=True, inline='always')(func)


def njit_parallel(func: Callable[..., Any]) -> Callable[..., Any]:
    """Like :func:`njit`, with ``parallel=True`` so ``prange`` loops use all cores."""
    if _numba is None:
        return func
    return _numba.njit(cache=True, nogil=True, parallel=True)(func)


if _numba is not None:
    prange = _numba.prange
else:  # pragma: no cover
    prange = range
