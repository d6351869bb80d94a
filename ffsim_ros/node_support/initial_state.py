"""The simulator's initial state from its parameters, and the robot's loop closures (no node).

:func:`initial_state` reads the ``initial_*`` parameters (checked against the robot's limits
where they are enforced) and the URDF+ ``<loop>`` elements of the robot description
(:func:`ffsim_ros.dynamics.loop_closures_from_urdf`); with loops, the state is assembled on
them (the joints moved onto the loops' manifold, the base kept, the velocity projected).
"""

from __future__ import annotations

import numpy as np

import ffsim_ros.dynamics as D

from .common import ParameterValueError


def initial_state(
    model: D.Model, urdf: str, values: dict
) -> tuple[D.ClosedChain | None, np.ndarray, np.ndarray]:
    """``(chain, q0, v0)``: the loop closures of ``urdf`` on ``model`` (None for a tree) and
    the initial configuration (nq,) and velocity (nv,) from the parameter ``values``.

    Raises
    ------
    ParameterValueError
        Naming the parameter: a joint vector of the wrong size, a joint beyond its position
        limits with ``position_limits`` or faster than its speed limit with
        ``velocity_limits`` (``initial_joint_*``); a malformed loop or one naming a link the
        robot lacks (``robot_description``); joint positions the loops cannot be closed from.
    """
    q0, v0 = _tree_state(model, values)
    source = 'robot_description' if values.get('robot_description') else 'robot_file'
    return _closed(model, urdf, q0, v0, values, source)


def _joint_vector(name: str, values: list[float], size: int) -> np.ndarray:
    """A joint-sized vector parameter: ``[]`` or ``[0.0]`` mean zeros."""
    if len(values) == 0 or values == [0.0]:
        return np.zeros(size)
    if len(values) != size:
        raise ParameterValueError(f'{name}: expected {size} finite values, got {values}')
    return np.asarray(values, dtype=float)


def _tree_state(model: D.Model, values: dict) -> tuple[np.ndarray, np.ndarray]:
    """``(q0, v0)`` from the ``initial_*`` parameters, checked against the robot's limits
    where they are enforced.

    Raises
    ------
    ParameterValueError
        A joint vector of the wrong size, a joint beyond its position limits with
        ``position_limits``, or faster than its speed limit with ``velocity_limits``.
    """
    n = model.n
    positions = _joint_vector('initial_joint_positions', values['initial_joint_positions'], n)
    rates = _joint_vector('initial_joint_velocities', values['initial_joint_velocities'], n)
    dof_names = [
        name for name, dofs in zip(model.joint_names, model.nvs, strict=True) for _ in range(dofs)
    ]
    if values['position_limits']:
        for j in np.flatnonzero((positions < model.lower) | (positions > model.upper)):
            raise ParameterValueError(
                f'initial_joint_positions: expected joint {dof_names[j]} within its position '
                f'limits [{model.lower[j]:g}, {model.upper[j]:g}] (position_limits is on), '
                f'got {positions[j]:g}'
            )
    if values['velocity_limits']:
        limit = model.velocity_limit
        driven = np.isfinite(limit) & (limit > 0.0) & (model.effort_limit > 0.0)
        for j in np.flatnonzero(driven & (np.abs(rates) > limit)):
            raise ParameterValueError(
                f'initial_joint_velocities: expected joint {dof_names[j]} within its speed '
                f'limit {limit[j]:g} (velocity_limits is on), got {rates[j]:g}'
            )
    q_base, v_base = D.base_state_from_link(
        model,
        values['initial_base_position'],
        values['initial_base_orientation'],
        *np.split(np.asarray(values['initial_base_twist']), 2),
    )
    return np.r_[q_base, positions], np.r_[v_base, rates]


def _closed(
    model: D.Model, urdf: str, q0: np.ndarray, v0: np.ndarray, values: dict, source: str
) -> tuple[D.ClosedChain | None, np.ndarray, np.ndarray]:
    """The loop closures of the robot's URDF+ ``<loop>`` elements on ``model``
    (:func:`ffsim_ros.dynamics.loop_closures_from_urdf`; None for a tree), and the initial
    state ``(q0, v0)`` assembled on them (the joints moved onto the loops, the base kept).

    Raises
    ------
    ParameterValueError
        A malformed ``<loop>`` or one naming a link the robot lacks (``source``: the
        parameter the robot came from), an integrator other than ``rk4``, or initial joint
        positions the loops cannot be closed from (``initial_joint_positions``).
    """
    try:
        loops = D.loop_closures_from_urdf(urdf)
        chain = D.ClosedChain(model, loops) if loops else None
    except ValueError as exc:  # UnknownNameError is one
        raise ParameterValueError(f'{source}: invalid loop closure: {exc}') from None
    if chain is None:
        return None, q0, v0
    if values['integrator'] != 'rk4':
        raise ParameterValueError(
            f"integrator: expected 'rk4' with loop closures (the closed chain's projected RK4 "
            f'step), got {values["integrator"]!r}'
        )
    try:
        q, v = chain.assemble(q0, v0)
    except RuntimeError as exc:
        raise ParameterValueError(
            f'initial_joint_positions: the loops {[lp.name for lp in loops]} cannot be closed '
            f'from them ({exc})'
        ) from None
    return chain, q, v
