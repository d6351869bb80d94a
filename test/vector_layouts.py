"""One vector in the layouts a float64 ndarray can have: for the tests of the per-call fast
paths, which must take every one (their compiled entry points are typed for contiguous
vectors and refuse the others, which the converting path then takes)."""

from __future__ import annotations

import numpy as np

LAYOUTS = ('strided', 'reversed', 'readonly', 'offset')


def laid_out(x: np.ndarray, how: str) -> np.ndarray:
    """``x`` (n,) with the same values as a strided view (NaN between its values), a reversed
    view, a read-only copy, or a contiguous slice of a longer buffer (NaN around it)."""
    if how == 'strided':
        buf = np.full(2 * x.size, np.nan)
        buf[::2] = x
        return buf[::2]
    if how == 'reversed':
        return x[::-1].copy()[::-1]
    if how == 'readonly':
        y = x.copy()
        y.setflags(write=False)
        return y
    if how == 'offset':
        buf = np.full(x.size + 3, np.nan)
        buf[1 : 1 + x.size] = x
        return buf[1 : 1 + x.size]
    raise ValueError(f'how: expected one of {LAYOUTS}, got {how!r}')
