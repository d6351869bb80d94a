"""One compiled signature of a numba entry point, called without numba's dispatcher: the
per-call fast paths of :mod:`.algorithms`, :mod:`.link_frames` and :mod:`.freefloating`."""

from __future__ import annotations

import numpy as np

from .inputs import ArrayLike, as_q, plain_vector
from .kernels.entry import taken
from .model import Model
from .state_errors import state_error


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

    def on_configuration(self, model: Model, q: ArrayLike, *args: object) -> None:
        """Run the entry point on the packed ``model``, ``q`` and ``args`` (its outputs among
        them): on ``q`` as it is when it is a float64 vector of ``nq`` entries and unit
        stride, else on ``q`` converted by :func:`~.inputs.as_q` (which names a wrong size
        or type).

        Parameters
        ----------
        model : Model
        q : (nq,) array_like
            Configuration [m, -, rad | m], base parts in the inertial frame.
        *args
            The entry point's other arguments.

        Raises
        ------
        ValueError
            The kernel's failure or non-finite result as :func:`~.state_errors.state_error`
            names it (the input that is not finite, a zero quaternion, a degenerate model).
        """
        packed = model.packed
        try:
            if plain_vector(q) and self.entry(*packed, q, *args):
                return
        except (ValueError, ZeroDivisionError) as e:
            raise state_error(model, e, q=q) from e
        q = as_q(model, q)
        try:
            taken(self.entry(*packed, q, *args))
        except (ValueError, ZeroDivisionError) as e:
            raise state_error(model, e, q=q) from e
