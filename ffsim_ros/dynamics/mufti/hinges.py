"""Cut hinges of closed chains: :class:`LoopClosure`, the joint a loop is cut at (seed 001's
loop-closing arcs: the columns ``C*`` of ``C_c = (C, C*)``, constrained by
``C*^T r + L*^T 1_n = 0``, [M sec. 4, eqs. 62, 65-66]), checked when made. Its rows are built by
:meth:`~.closed.ClosedChain.loop_rows` and, compiled, by
:func:`ffsim_ros.dynamics.kernels.cut_hinges.loop_rows`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..inputs import ArrayLike, as_vector, real_array
from ..lie import is_rotation

#: Kinds of cut hinge: ball (3 rows), revolute (5), weld (6).
LOOP_KINDS = ('ball', 'revolute', 'weld')
_ROWS = {'ball': 3, 'revolute': 5, 'weld': 6}


def _matrix(x: ArrayLike, what: str) -> np.ndarray:
    arr = np.asarray(real_array(x, what), dtype=float)
    if arr.shape != (3, 3):
        raise ValueError(f'{what}: expected a (3, 3) rotation matrix, got shape {arr.shape}')
    if not is_rotation(arr):
        raise ValueError(f'{what}: expected a rotation matrix, got {arr.tolist()}')
    return arr


@dataclass(frozen=True)
class LoopClosure:
    """A cut hinge between a frame on link ``link_a`` and a frame on link ``link_b``.

    Parameters
    ----------
    name : str
    link_a, link_b : str
        Links (any link of the model, merged ones included) carrying the two hinge frames;
        ``a`` is the initial vertex of the cut arc (the multipliers act + on a, - on b).
    kind : {'ball', 'revolute', 'weld'}
        Ball (origins coincide), revolute (origins coincide and the z axes are aligned), weld
        (frames coincide).
    rotation_a, translation_a : (3, 3), (3,) array_like
        Hinge frame in the link-a frame (default: the link frame itself) [m].
    rotation_b, translation_b : (3, 3), (3,) array_like
        Hinge frame in the link-b frame.
    """

    name: str
    link_a: str
    link_b: str
    kind: str = 'ball'
    rotation_a: np.ndarray = field(default_factory=lambda: np.eye(3))
    translation_a: np.ndarray = field(default_factory=lambda: np.zeros(3))
    rotation_b: np.ndarray = field(default_factory=lambda: np.eye(3))
    translation_b: np.ndarray = field(default_factory=lambda: np.zeros(3))

    def __post_init__(self) -> None:
        if self.kind not in LOOP_KINDS:
            raise ValueError(
                f'loop {self.name!r}: kind expected one of {LOOP_KINDS}, got {self.kind!r}'
            )
        for side in 'ab':
            rot = _matrix(getattr(self, f'rotation_{side}'), f'loop {self.name!r} rotation_{side}')
            what = f'loop {self.name!r} translation_{side}'
            tr = as_vector(getattr(self, f'translation_{side}'), 3, what)
            if not np.all(np.isfinite(tr)):
                raise ValueError(f'{what}: expected 3 finite values [m], got {tr.tolist()}')
            object.__setattr__(self, f'rotation_{side}', rot)
            object.__setattr__(self, f'translation_{side}', tr)

    @property
    def rows(self) -> int:
        """Number of constraint rows (3, 5 or 6)."""
        return _ROWS[self.kind]
