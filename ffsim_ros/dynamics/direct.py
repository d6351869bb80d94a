"""One compiled signature of a numba entry point, called without numba's dispatcher: the
per-call fast paths of :mod:`.algorithms`, :mod:`.link_frames` and :mod:`.freefloating`."""

from __future__ import annotations

import numpy as np


class DirectEntry:
    """One compiled signature of a numba entry point, called without the dispatcher.

    numba's dispatcher works out the type of every argument on every call, about 0.3-0.5 us
    for the 6-7 arrays of an entry point: a tenth of a 7-DoF call. The fast paths only pass
    one type of array (float64 vectors, :func:`~.inputs.plain_vectors`; the model's
    read-only ``packed`` and frames; ints and bools), so ``entry`` is, after the first call,
    the native entry point of that one signature (the vectors C-contiguous, aligned and
    writeable; one of another size or stride is refused: False, nothing read). The first
    call compiles that signature (or loads it from the cache) through the dispatcher, with
    copies of any input not of that kind (a read-only input cannot select another
    signature).

    Parameters
    ----------
    kernel : numba dispatcher (or a plain function without numba)
        Its first two arguments are the packed model.
    """

    __slots__ = ('kernel', 'entry')

    def __init__(self, kernel: object) -> None:
        self.kernel = kernel
        self.entry = self._first

    def _first(self, *args: object) -> object:
        args = args[:2] + tuple(
            np.require(a, requirements='CAW') if isinstance(a, np.ndarray) else a for a in args[2:]
        )
        out = self.kernel(*args)  # type: ignore[operator]
        try:
            sig = tuple(self.kernel.typeof_pyval(a) for a in args)  # type: ignore[attr-defined]
            self.entry = self.kernel.overloads[sig].entry_point  # type: ignore[attr-defined]
        except (AttributeError, KeyError):  # a plain Python kernel (numba absent)
            self.entry = self.kernel
        return out
