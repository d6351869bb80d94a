"""The bounds filter of ``GetEntities`` / ``GetEntitiesStates`` (simulation_interfaces), checked
(no ROS beyond the message types).

``EntityFilters.bounds``: "if bounds are not empty, the overlap filter is applied and entities
overlapping with bounds will be returned ... at least TYPE_SPHERE needs to be supported"
(simulation_interfaces 1.6.1). Supported: ``TYPE_EMPTY`` (no filter) and ``TYPE_SPHERE``
(``points[0]`` the centre, ``points[1].x`` the radius, in the world frame); an entity overlaps
the sphere when one of its collision shapes does (touching counts) or the origin of its root
link frame (the pose its state gives) is inside it
(:meth:`ffsim_ros.sim.TargetWorld.near_sphere`). ``TYPE_BOX`` and ``TYPE_CONVEX_HULL`` are
refused as unsupported (the features ``ENTITY_BOUNDS_BOX`` / ``ENTITY_BOUNDS_CONVEX`` are not
listed).
"""

from __future__ import annotations

import math

import numpy as np
from simulation_interfaces.msg import Bounds, Result

from .scene_services import MAX_POSITION, EntityError

#: The bound types, by value (for the refusals).
BOUND_TYPES = {
    Bounds.TYPE_EMPTY: 'TYPE_EMPTY',
    Bounds.TYPE_BOX: 'TYPE_BOX',
    Bounds.TYPE_CONVEX_HULL: 'TYPE_CONVEX_HULL',
    Bounds.TYPE_SPHERE: 'TYPE_SPHERE',
}


def sphere_bounds(bounds: Bounds) -> tuple[np.ndarray, float] | None:
    """The sphere of a request's ``filters.bounds``, or None for empty bounds (no filter).

    Parameters
    ----------
    bounds : simulation_interfaces/Bounds
        ``TYPE_EMPTY`` without points, or ``TYPE_SPHERE`` with two points (the centre, then
        the radius as ``x``; ``y`` and ``z`` ignored).

    Returns
    -------
    (center (3,), radius) or None

    Raises
    ------
    EntityError
        RESULT_FEATURE_UNSUPPORTED for another type (``TYPE_BOX``, ``TYPE_CONVEX_HULL``,
        unknown); RESULT_OPERATION_FAILED for points that do not make the volume (their
        number, a non-finite value, a radius <= 0 or beyond the world's bounds), named.
    """
    kind, points = int(bounds.type), list(bounds.points)
    if kind == Bounds.TYPE_EMPTY:
        if points:
            raise EntityError(
                Result.RESULT_OPERATION_FAILED,
                f'filters.bounds.points: expected none with TYPE_EMPTY (0), got {len(points)}',
            )
        return None
    if kind != Bounds.TYPE_SPHERE:
        raise EntityError(
            Result.RESULT_FEATURE_UNSUPPORTED,
            f'filters.bounds.type: expected TYPE_EMPTY (0) or TYPE_SPHERE (3), got {kind} '
            f'({BOUND_TYPES.get(kind, "unknown")}: not supported)',
        )
    if len(points) != 2:
        raise EntityError(
            Result.RESULT_OPERATION_FAILED,
            'filters.bounds.points: expected 2 with TYPE_SPHERE (the centre, then the radius '
            f'as x), got {len(points)}',
        )
    center = np.array([points[0].x, points[0].y, points[0].z], dtype=float)
    radius = float(points[1].x)
    if not (np.isfinite(center).all() and np.abs(center).max() <= MAX_POSITION):
        raise EntityError(
            Result.RESULT_OPERATION_FAILED,
            f'filters.bounds.points[0]: expected a centre of finite coordinates of magnitude '
            f'<= {MAX_POSITION:g} m, got {center.tolist()}',
        )
    if not (math.isfinite(radius) and 0.0 < radius <= 2 * MAX_POSITION):
        raise EntityError(
            Result.RESULT_OPERATION_FAILED,
            f'filters.bounds.points[1].x: expected a radius > 0 and <= {2 * MAX_POSITION:g} m, '
            f'got {radius!r}',
        )
    return center, radius


__all__ = ['BOUND_TYPES', 'sphere_bounds']
