"""Contact detection between the free systems of a scene (robot, targets), with ``coal``.

Which pairs are checked: every pair of shapes of two *different* systems -- the robot (with
the target it holds, welded into it) and each free target. Never checked (no self-collision):
two shapes of one system, i.e. the robot's links among themselves, the robot and the target it
holds, the links of one target.

Two phases:

* broad phase (:func:`near_system_pairs`): the bounding spheres of every shape of every system
  at once (world centre of the shape frame, :attr:`~.geometry.PlacedShapes.radius`), sorted
  and swept along the axis of their largest spread, then the sphere test on the pairs whose
  intervals overlap; the system pairs having a pair of shapes within the margin go on. Cost
  ``O(k log k)`` for ``k`` shapes plus the pairs that overlap along the sweep axis, in chunks
  of bounded memory, instead of a Python loop over every pair of systems;
* narrow phase (:meth:`Detector.pairs`): per such system pair, the sphere test per pair of
  shapes, then ``coal``'s signed distance (GJK/EPA) of the pairs left.

The broad phase is conservative (a slack of round-off size on the sphere test): the contacts
found, and their order (system pairs in the order of the systems, then shape pairs row by row),
are those of the narrow phase over every pair of systems.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import coal
import numpy as np

import ffsim_ros.dynamics as D

from .geometry import PlacedShapes

#: Shape pairs tested at once by the broad phase (bounds its memory: ~100 bytes a pair).
BROAD_PHASE_CHUNK = 1 << 18
#: Relative slack of the broad phase's sphere test (a superset of the narrow phase's pairs).
_BROAD_SLACK = 1e-9

Poses = dict[str, tuple[np.ndarray, np.ndarray]]


@dataclass(eq=False)
class System:
    """One free system of a scene: its model, state and shapes.

    Attributes
    ----------
    name : str
        ``'robot'`` or the target's name.
    model : Model
        Its compiled model (the robot welded with a held target while one is held).
    q, v : ndarray, (nq,), (nv,)
        Its state; replaced, never modified in place (:meth:`world` caches on it).
    placed : PlacedShapes
        Its collision shapes.
    owners : list of str
        Per shape, ``'system/link'`` as reported in events.
    tau : ndarray, (n,)
        Joint efforts held [N m | N].
    """

    name: str
    model: D.Model
    q: np.ndarray
    v: np.ndarray
    placed: PlacedShapes
    owners: list[str]
    tau: np.ndarray = field(default_factory=lambda: np.zeros(0))
    _at: np.ndarray | None = field(default=None, init=False, repr=False)
    _world: tuple[np.ndarray, np.ndarray] | None = field(default=None, init=False, repr=False)

    def world(self) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`~.geometry.PlacedShapes.world` at the present ``q``: ``Rb`` (k, 3, 3) body
        orientations and ``p`` (k, 3) shape frame origins [m], world frame (computed once per
        ``q`` array).

        Returns
        -------
        Rb : (k, 3, 3) ndarray
        p : (k, 3) ndarray
        """
        if self._at is not self.q:
            self._world = self.placed.world(self.q)
            self._at = self.q
        return self._world  # type: ignore[return-value]


@dataclass
class Contact:
    """A pair of shapes, ``ka`` of system ``a`` and ``kb`` of ``b``, closer than the detection
    margin: signed ``distance`` [m], ``point`` (3,) midway between the nearest points and unit
    ``normal`` (3,) from ``b`` into ``a``, world frame [m]."""

    a: System
    ka: int
    b: System
    kb: int
    distance: float
    point: np.ndarray
    normal: np.ndarray  # from b into a

    @property
    def key(self) -> tuple[str, int, str, int]:
        """``(system a, shape ka, system b, shape kb)``: the pair, the same from step to step."""
        return (self.a.name, self.ka, self.b.name, self.kb)


def unit_normal(normal: np.ndarray, centers: np.ndarray) -> np.ndarray:
    """Unit contact normal (3,) from ``b`` into ``a``: ``normal`` (coal's), else (shapes
    overlapping so deeply that coal gives none) ``centers``, the direction between the shapes'
    centres, else +z.

    Parameters
    ----------
    normal : (3,) ndarray
        coal's normal from ``b`` into ``a``, world frame [-] (any length; zero or non-finite:
        none).
    centers : (3,) ndarray
        Shape centre of ``a`` minus that of ``b``, world frame [m].

    Returns
    -------
    (3,) ndarray
        Unit vector, world frame [-].
    """
    for v in (normal, centers):
        n = float(np.linalg.norm(v))
        if n > 1e-12 and np.isfinite(n):
            return v / n
    return np.array([0.0, 0.0, 1.0])


def near_system_pairs(
    centres: np.ndarray,
    radii: np.ndarray,
    owner: np.ndarray,
    margin: float,
    *,
    chunk: int = BROAD_PHASE_CHUNK,
) -> list[tuple[int, int]]:
    """Broad phase: the pairs of owners (systems) having a pair of shapes whose bounding spheres
    are closer than ``margin``.

    Parameters
    ----------
    centres : (k, 3) ndarray
        Bounding sphere centres [m], one frame for all.
    radii : (k,) ndarray
        Bounding sphere radii [m], >= 0 (scalars: no frame).
    owner : (k,) int ndarray
        The system of each shape, an index (unitless; shapes of one owner are never paired).
    margin : float
        Detection margin [m].
    chunk : int
        Shape pairs tested at once (memory bound).

    Returns
    -------
    list of (i, j)
        ``i < j``, sorted: every owner pair with shapes ``a``, ``b`` such that
        ``|c_a - c_b| < r_a + r_b + margin``, and possibly a few more at round-off distance of
        it (a superset of the narrow phase's sphere test).
    """
    centres = np.asarray(centres, dtype=float).reshape(-1, 3)
    radii = np.asarray(radii, dtype=float).reshape(-1)
    owner = np.asarray(owner, dtype=np.int64).reshape(-1)
    finite = np.isfinite(centres).all(axis=1)
    if not finite.all():  # never near: the sphere test is False for them
        centres, radii, owner = centres[finite], radii[finite], owner[finite]
    k = len(radii)
    if k < 2 or margin + 2.0 * float(radii.max()) <= 0.0:
        return []
    m = max(float(margin), 0.0)
    axis = int(np.argmax(np.ptp(centres, axis=0)))
    x = centres[:, axis]
    # interval half-widths, widened by round-off of the coordinates and the radii
    scale = float(np.abs(centres).max()) + float(radii.max()) + m
    half = (radii + 0.5 * m) * (1.0 + _BROAD_SLACK) + 8.0 * np.finfo(float).eps * scale
    order = np.argsort(x - half, kind='stable')
    lo, hi = (x - half)[order], (x + half)[order]
    # sorted i pairs with every j > i whose interval starts before i's ends
    count = np.searchsorted(lo, hi, side='right') - np.arange(1, k + 1)
    ends = np.concatenate(([0], np.cumsum(count)))
    n_owner = int(owner.max()) + 1
    found = []
    start = 0
    while start < k:
        stop = int(np.searchsorted(ends, ends[start] + chunk, side='right')) - 1
        stop = min(max(stop, start + 1), k)
        total = int(ends[stop] - ends[start])
        if total:
            rows = np.arange(start, stop)
            i = np.repeat(rows, count[start:stop])
            j = (
                i
                + 1
                + np.arange(total)
                - np.repeat(ends[start:stop] - ends[start], count[start:stop])
            )
            a, b = order[i], order[j]
            keep = owner[a] != owner[b]
            a, b = a[keep], b[keep]
            d = centres[a] - centres[b]
            reach = (radii[a] + radii[b] + margin) * (1.0 + 2.0 * _BROAD_SLACK) + 16.0 * (
                np.finfo(float).eps * scale
            )
            near = np.einsum('ij,ij->i', d, d) < reach * np.abs(reach)
            oa, ob = owner[a[near]], owner[b[near]]
            found.append(np.unique(np.minimum(oa, ob) * n_owner + np.maximum(oa, ob)))
        start = stop
    if not found:
        return []
    codes = np.unique(np.concatenate(found))
    return [(int(c // n_owner), int(c % n_owner)) for c in codes]


class Detector:
    """Signed distances between the shapes of systems (``coal``, the module's two phases).

    Parameters
    ----------
    tolerance : float
        ``coal``'s GJK and EPA tolerance [m].
    """

    def __init__(self, tolerance: float = 1e-10) -> None:
        self._request = coal.DistanceRequest()
        self._request.gjk_tolerance = tolerance
        self._request.epa_tolerance = tolerance
        self._result = coal.DistanceResult()

    def pairs(
        self, a: System, b: System, margin: float, poses: Poses | None = None
    ) -> list[Contact]:
        """Narrow phase: the pairs of shapes of ``a`` and ``b`` closer than ``margin`` [m]
        (coal's signed distance; bounding spheres first), shape pairs row by row.

        Parameters
        ----------
        a, b : System
        margin : float
            Detection margin [m].
        poses : dict, optional
            ``{system name: (Rb, p)}``, the shapes' world poses as :meth:`System.world` gives
            them (default: computed).

        Returns
        -------
        list of Contact
            Points and normals in the world frame.
        """
        if not len(a.placed) or not len(b.placed):
            return []
        Ra, pa = a.world() if poses is None else poses[a.name]
        Rb, pb = b.world() if poses is None else poses[b.name]
        diff = pa[:, None, :] - pb[None, :, :]
        reach = a.placed.radius[:, None] + b.placed.radius[None, :] + margin
        near = np.einsum('ijk,ijk->ij', diff, diff) < reach * np.abs(reach)
        if not near.any():
            return []
        out = []
        req, res = self._request, self._result
        for i, j in zip(*np.nonzero(near), strict=True):
            res.clear()
            d = coal.distance(
                a.placed.geometry[i],
                coal.Transform3s(a.placed.rotation(Ra, i), pa[i]),
                b.placed.geometry[j],
                coal.Transform3s(b.placed.rotation(Rb, j), pb[j]),
                req,
                res,
            )
            if d < margin:
                point = 0.5 * (np.array(res.getNearestPoint1()) + np.array(res.getNearestPoint2()))
                normal = unit_normal(-np.array(res.normal, dtype=float), pa[i] - pb[j])
                out.append(Contact(a, int(i), b, int(j), float(d), point, normal))
        return out

    def near_pairs(self, systems: Sequence[System], margin: float) -> list[tuple[int, int]]:
        """Indices ``(i, j)``, ``i < j`` sorted, of the pairs of ``systems`` that may have a
        pair of shapes closer than ``margin`` [m] (:func:`near_system_pairs`).

        Parameters
        ----------
        systems : sequence of System
        margin : float
            Detection margin [m].

        Returns
        -------
        list of (int, int)
        """
        placed = [(n, s) for n, s in enumerate(systems) if len(s.placed)]
        if len(placed) < 2:
            return []
        centres = np.concatenate([s.world()[1] for _, s in placed])
        radii = np.concatenate([s.placed.radius for _, s in placed])
        owner = np.concatenate([np.full(len(s.placed), n) for n, s in placed])
        return near_system_pairs(centres, radii, owner, margin)

    def detect(self, systems: Sequence[System], margin: float) -> list[Contact]:
        """The pairs of shapes of different ``systems`` closer than ``margin`` [m]: system pairs
        in the order of ``systems``, then shape pairs row by row (the same as :meth:`pairs`
        over every pair of systems).

        Parameters
        ----------
        systems : sequence of System
        margin : float
            Detection margin [m].

        Returns
        -------
        list of Contact
            Points and normals in the world frame.
        """
        out = []
        for i, j in self.near_pairs(systems, margin):
            out.extend(self.pairs(systems[i], systems[j], margin))
        return out


__all__ = [
    'BROAD_PHASE_CHUNK',
    'Contact',
    'Detector',
    'System',
    'near_system_pairs',
    'unit_normal',
]
