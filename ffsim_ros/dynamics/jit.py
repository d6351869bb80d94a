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
    """Like :func:`njit`, inlined into every compiled caller (``inline='always'``, at numba-IR
    level), so that the call, and the reference counting of the arrays it is handed, go away.

    For the small per-body helpers, for the three passes of ABA into ``aba_passes``
    (which the RK4 steps' ABA callers then call, so they are compiled once) and into
    ``aba_on_views`` with the kinematics (the batched rows: 40 % off a row; with the mass
    matrix's and inverse dynamics' rows, the whole cold warm-up took 134 s before, 185 s
    after), where it pays
    (forward dynamics 15 % faster per call), and for thin wrappers that would otherwise add
    one more library -- and one more optimization of everything they link -- to the first
    compile. Each inlined copy is compiled again:
    inlining the kinematics into its five callers doubled the first compile (114 s to 228 s),
    inlining every recursion into every entry point took it to 11 minutes; the kinematics
    passes, ``rnea`` and the ABA derivatives are plain :func:`njit` calls (measured: inlining
    them added 14 % to the first compile and gained under 3 % per call).

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
    return _numba.njit(cache=True, nogil=True, inline='always')(func)


def inlined_copy(kernel: Callable[..., Any]) -> Callable[..., Any]:
    """A :func:`njit_leaf` copy of the :func:`njit` kernel ``kernel``: the same source,
    inlined where a caller is measured faster with it in its body, called elsewhere.

    Parameters
    ----------
    kernel : callable
        A dispatcher made by :func:`njit` (or, without numba, the plain function).

    Returns
    -------
    callable
        The inlined dispatcher, or the plain function when numba is not installed.
    """
    return njit_leaf(getattr(kernel, 'py_func', kernel))


def njit_parallel(func: Callable[..., Any]) -> Callable[..., Any]:
    """Like :func:`njit`, with ``parallel=True`` so ``prange`` loops use all cores.

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
    return _numba.njit(cache=True, nogil=True, parallel=True)(func)


if _numba is not None:
    prange = _numba.prange
else:  # pragma: no cover
    prange = range


def carve(ws: Any, offset: int, shape: tuple[int, ...]) -> Any:
    """``ws[offset : offset + prod(shape)].reshape(shape)``: a C-ordered view on a flat
    workspace (or on the model's packed float array).

    Compiled, it is built directly (shape, strides, a data pointer into ``ws``), without
    numba's general ``reshape``, which costs about 14 ns through a C helper: a 7-DoF call
    carves some 25 views, a tenth of its time. Out-of-range offsets raise ``ValueError``.

    Parameters
    ----------
    ws : (N,) C-contiguous ndarray.
    offset : int, first element of the view.
    shape : tuple of int, shape of the view.

    Returns
    -------
    ndarray of ``shape``, sharing memory with ``ws``.
    """
    size = 1
    for d in shape:
        size *= d
    if offset < 0 or offset + size > ws.shape[0]:
        raise ValueError('carve: the view does not fit in the workspace')
    return ws[offset : offset + size].reshape(shape)


def borrow(a: Any) -> Any:
    """``a`` itself, seen by compiled code as a view that owns nothing: no reference counting.

    Every array numba hands to a compiled callee, or keeps in a variable, has its owner's
    reference count raised and lowered (an atomic operation each). A model unpacked into 15
    views and passed down four levels of calls costs that some 100 times a call: 35 % of a
    UR5 ``nle`` call (1.83 to 1.20 us of compiled time, measured 2026-11-28); in the
    closed-chain step, whose views were carved from owned scratch, 821 such operations a
    step (the step 9 % faster without them). A borrowed view has no owner (a null meminfo,
    which numba's reference counting skips): it is valid only while its source is kept alive
    by someone else -- for the packed model, the :class:`~ffsim_ros.dynamics.model.Model` of
    the Python caller, for the whole call; for an array the compiled function allocates, that
    function, up to a :func:`keep_alive` of it on every path to its return -- and it must
    never be returned to Python or outlive the call.

    Parameters
    ----------
    a : ndarray

    Returns
    -------
    ndarray, the same data, shape and strides.
    """
    return a


def keep_alive(a: Any) -> None:
    """Mark the end of the views :func:`borrow` took from ``a``: compiled, ``a`` (the owner of
    a workspace) is held up to this call, where numba would release it after its last use.
    Nothing is done at run time.

    Parameters
    ----------
    a : ndarray
    """


try:  # numba's extension API and array internals, stable since numba 0.49
    from numba.core import cgutils, types
    from numba.core.imputils import impl_ret_borrowed
    from numba.extending import intrinsic, overload
    from numba.np.arrayobj import make_array, populate_array
except ImportError:  # pragma: no cover - no numba, or its internals moved
    if _numba is not None:  # then the plain reshape, compiled: same views, ~14 ns slower each
        carve = njit_leaf(carve)
        # and plain views, counted as any (the kernels call them: they must compile)
        borrow = njit_leaf(borrow)
        keep_alive = njit_leaf(keep_alive)
else:

    @intrinsic
    def _carve_view(typingctx: Any, ws: Any, offset: Any, shape: Any) -> Any:
        """The view of :func:`carve`, range already checked: same meminfo as ``ws``."""
        if not (
            isinstance(ws, types.Array)
            and ws.ndim == 1
            and ws.layout == 'C'
            and isinstance(offset, types.Integer)
            and isinstance(shape, types.UniTuple)
            and isinstance(shape.dtype, types.Integer)
        ):
            return None
        view = types.Array(ws.dtype, len(shape), 'C', readonly=not ws.mutable, aligned=ws.aligned)

        def codegen(context: Any, builder: Any, sig: Any, args: Any) -> Any:
            src = make_array(sig.args[0])(context, builder, args[0])
            dims = [
                context.cast(builder, d, sig.args[2].dtype, types.intp)
                for d in cgutils.unpack_tuple(builder, args[2])
            ]
            start = context.cast(builder, args[1], sig.args[1], types.intp)
            strides = []
            stride = src.itemsize
            for d in reversed(dims):
                strides.insert(0, stride)
                stride = builder.mul(stride, d)
            out = make_array(view)(context, builder)
            populate_array(
                out,
                data=builder.gep(src.data, [start]),
                shape=dims,
                strides=strides,
                itemsize=src.itemsize,
                meminfo=src.meminfo,
                parent=src.parent,
            )
            return impl_ret_borrowed(context, builder, view, out._getvalue())

        return view(ws, offset, shape), codegen

    @intrinsic
    def _borrowed(typingctx: Any, a: Any) -> Any:
        """The view of :func:`borrow`: ``a`` with a null meminfo and no parent object."""
        if not isinstance(a, types.Array):
            return None

        def codegen(context: Any, builder: Any, sig: Any, args: Any) -> Any:
            src = make_array(sig.args[0])(context, builder, args[0])
            out = make_array(sig.return_type)(context, builder, value=src._getvalue())
            out.meminfo = cgutils.get_null_value(out.meminfo.type)
            out.parent = cgutils.get_null_value(out.parent.type)
            return out._getvalue()

        return a(a), codegen

    @intrinsic
    def _kept(typingctx: Any, a: Any) -> Any:
        """A use of ``a`` that generates no code (a call, so numba keeps it, and ``a``)."""
        if not isinstance(a, types.Array):
            return None

        def codegen(context: Any, builder: Any, sig: Any, args: Any) -> Any:
            return context.get_dummy_value()

        return types.none(a), codegen

    @overload(keep_alive, jit_options={'cache': True}, inline='always')
    def _keep_alive_overload(a: Any) -> Any:
        def impl(a: Any) -> None:  # pragma: no cover - compiled
            _kept(a)

        return impl

    @overload(borrow, jit_options={'cache': True}, inline='always')
    def _borrow_overload(a: Any) -> Any:
        def impl(a: Any) -> Any:  # pragma: no cover - compiled
            return _borrowed(a)

        return impl

    @overload(carve, jit_options={'cache': True})
    def _carve_overload(ws: Any, offset: Any, shape: Any) -> Any:
        def impl(ws: Any, offset: Any, shape: Any) -> Any:  # pragma: no cover - compiled
            size = 1
            for d in shape:
                size *= d
            if offset < 0 or offset + size > ws.shape[0]:
                raise ValueError('carve: the view does not fit in the workspace')
            return _carve_view(ws, offset, shape)

        return impl
