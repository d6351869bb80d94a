"""The simulator's initial state from its parameters, and the robot's loop closures (no node).

:func:`initial_state` reads the ``initial_*`` parameters (checked against the robot's limits
where they are enforced); with the robot's loop closures (URDF+ ``<loop>`` elements, read by
:func:`~.common.load_robot`), the state is assembled on them (the joints moved onto the
loops' manifold, the base kept, the velocity projected) and, with ``position_limits``, the
assembled joints are checked against the limits again. A start the physics step must refuse
-- the base or a ball joint turning by pi rad or more in one step of ``physics_rate_hz``
(:func:`~ffsim_ros.dynamics.integration.check_step_rotation`) -- is refused (it started, then
faulted at the first step, and ``~/reset`` came back to it).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

import ffsim_ros.dynamics as D
from ffsim_ros.dynamics.integration import MAX_STEP_ROTATION

from .common import ParameterValueError, shown


def initial_state(
    model: D.Model,
    loops: Sequence[D.LoopClosure],
    values: dict,
    names: Mapping[str, str] | None = None,
) -> tuple[D.ClosedChain | None, np.ndarray, np.ndarray]:
    """``(chain, q0, v0)``: the closed chain of ``loops`` (checked by
    :func:`~.common.load_robot`) on ``model`` (None for a tree) and the initial configuration
    (nq,) and velocity (nv,) from the parameter ``values``, assembled on the loops.

    Parameters
    ----------
    model : Model
    loops : sequence of LoopClosure
        Loop closures on ``model`` (empty for a tree).
    values : dict
        Checked simulator parameter values by name.
    names : mapping, optional
        How to name a value in the errors when it is not the parameter's own (a scenario's
        ``robot.joint_positions``: :meth:`.scene_support.WorldSetup.value_names`); default,
        the parameter.

    Returns
    -------
    chain : ClosedChain or None
    q0 : (nq,) ndarray
        Configuration [m, -, rad | m], base parts in the world frame.
    v0 : (nv,) ndarray
        Velocity [m/s, rad/s, rad/s | m/s], base parts in the world frame.

    Raises
    ------
    ParameterValueError
        Naming the parameter: a joint vector of the wrong size, a joint beyond its position
        limits with ``position_limits`` or faster than its speed limit with
        ``velocity_limits`` (``initial_joint_*``); the base or a ball joint turning by pi rad
        or more in a physics step (``initial_base_twist`` or ``initial_joint_velocities``,
        and ``physics_rate_hz``); with loops, an integrator other than ``rk4``, joint
        positions the loops cannot be closed from, or (with ``position_limits``) whose
        assembly moves a joint beyond its limits.
    """
    names = dict(names or {})
    positions = names.get('initial_joint_positions', 'initial_joint_positions')
    q0, v0 = _tree_state(model, values, names)
    if not loops:
        _check_rotation(model, v0, values['physics_rate_hz'])
        return None, q0, v0
    if values['integrator'] != 'rk4':
        raise ParameterValueError(
            f"integrator: expected 'rk4' with loop closures (the closed chain's projected RK4 "
            f'step), got {values["integrator"]!r}'
        )
    chain = D.ClosedChain(model, loops)
    loop_names = [lp.name for lp in loops]
    try:
        q, v = chain.assemble(q0, v0)
    except RuntimeError as exc:
        raise ParameterValueError(
            f'{positions}: the loops {loop_names} cannot be closed from them ({exc})'
        ) from None
    if values['position_limits'] and model.single_dof_joints:
        offset = model.nq - model.n
        asked, assembled = q0[offset:], q[offset:]
        beyond = np.flatnonzero((assembled < model.lower) | (assembled > model.upper))
        if beyond.size:
            items = '; '.join(
                f'{model.joint_names[j]}: asked {asked[j]:g}, assembled {assembled[j]:g}, '
                f'limits [{model.lower[j]:g}, {model.upper[j]:g}]'
                for j in beyond
            )
            raise ParameterValueError(
                f'{positions}: expected a start whose assembly onto the loops '
                f'{loop_names} keeps every joint within its position limits (position_limits '
                f'is on), got joints moved beyond them -- {items}; set initial_joint_positions '
                'nearer a configuration where the loops close within the limits'
            )
    _check_rotation(model, v, values['physics_rate_hz'])
    return chain, q, v


def step_rotations(model: D.Model, v: np.ndarray) -> list[tuple[str, float]]:
    """The angular rates of the base (a floating one) and of the ball joints at ``v`` (nv,)
    [rad/s], named (``'the base'``, ``"ball joint 'name'"``): a step of ``dt`` turning one by
    :data:`~ffsim_ros.dynamics.integration.MAX_STEP_ROTATION` (pi rad) or more is refused.

    Parameters
    ----------
    model : Model
    v : (nv,) ndarray
        Velocity [m/s, rad/s, rad/s | m/s].

    Returns
    -------
    list of (str, float)
        Name and rate [rad/s] of each.
    """
    out = [('the base', float(np.linalg.norm(v[3:6])))] if model.floating_base else []
    for k, kind in enumerate(model.joint_types):
        if kind == 'spherical':
            first = model.idx_v[k]
            joint = f'ball joint {model.joint_names[k]!r}'
            out.append((joint, float(np.linalg.norm(v[first : first + 3]))))
    return out


def _check_rotation(model: D.Model, v: np.ndarray, physics_rate_hz: float) -> None:
    """Refuse a start turning the base or a ball joint by pi rad or more in a physics step
    (the step refuses it: :func:`~ffsim_ros.dynamics.integration.check_step_rotation`)."""
    dt = int(round(1e9 / physics_rate_hz)) * 1e-9  # (the simulator's step, whole ns)
    for who, rate in step_rotations(model, v):
        if rate * dt >= MAX_STEP_ROTATION:
            name = 'initial_base_twist' if who == 'the base' else 'initial_joint_velocities'
            raise ParameterValueError(
                f'{name}: expected {who} to turn by less than pi rad per physics step (the '
                f'step refuses more), |w| below {MAX_STEP_ROTATION / dt:.4g} rad/s at '
                f'physics_rate_hz {physics_rate_hz:g}, got |w| = {rate:.4g} rad/s '
                f'({rate * dt:.3g} rad per step); lower it, or raise physics_rate_hz above '
                f'{rate / MAX_STEP_ROTATION:.4g}'
            )


def outside_limits(model: D.Model, q: np.ndarray) -> str:
    """The joints of the configuration ``q`` (nq,) beyond their URDF position limits, as
    ``'name = value (lower..upper)'`` items ('' when none; one-DoF joints only: a ball
    joint has no position limits). Some URDFs' zero lies outside the range (Kinova's
    ``j2s6s200_joint_2``: 0.82..5.46 rad).

    Parameters
    ----------
    model : Model
    q : (nq,) ndarray
        Configuration [m, -, rad | m].

    Returns
    -------
    str
    """
    if model.nq != model.nv + (1 if model.floating_base else 0):
        return ''
    phi = q[model.nq - model.n :]
    out = np.flatnonzero((phi < model.lower) | (phi > model.upper))
    return ', '.join(
        f'{model.joint_names[j]} = {phi[j]:g} ({model.lower[j]:g}..{model.upper[j]:g})'
        for j in out
    )


def _joint_vector(name: str, values: list[float], size: int) -> np.ndarray:
    """A joint-sized vector parameter: ``[]`` or ``[0.0]`` mean zeros."""
    if len(values) == 0 or values == [0.0]:
        return np.zeros(size)
    if len(values) != size:
        raise ParameterValueError(f'{name}: expected {size} finite values, got {shown(values)}')
    return np.asarray(values, dtype=float)


def _tree_state(
    model: D.Model, values: dict, names: Mapping[str, str]
) -> tuple[np.ndarray, np.ndarray]:
    """``(q0, v0)`` from the ``initial_*`` parameters, checked against the robot's limits
    where they are enforced (each value named by ``names``, default its parameter).

    Raises
    ------
    ParameterValueError
        A joint vector of the wrong size, a joint beyond its position limits with
        ``position_limits``, or faster than its speed limit with ``velocity_limits``.
    """
    n = model.n
    p_name = names.get('initial_joint_positions', 'initial_joint_positions')
    v_name = names.get('initial_joint_velocities', 'initial_joint_velocities')
    positions = _joint_vector(p_name, values['initial_joint_positions'], n)
    rates = _joint_vector(v_name, values['initial_joint_velocities'], n)
    dof_names = [
        name for name, dofs in zip(model.joint_names, model.nvs, strict=True) for _ in range(dofs)
    ]
    if values['position_limits']:
        for j in np.flatnonzero((positions < model.lower) | (positions > model.upper)):
            raise ParameterValueError(
                f'{p_name}: expected joint {dof_names[j]} within its position '
                f'limits [{model.lower[j]:g}, {model.upper[j]:g}] (position_limits is on), '
                f'got {positions[j]:g}'
            )
    if values['velocity_limits']:
        limit = model.velocity_limit
        driven = np.isfinite(limit) & (limit > 0.0) & (model.effort_limit > 0.0)
        for j in np.flatnonzero(driven & (np.abs(rates) > limit)):
            raise ParameterValueError(
                f'{v_name}: expected joint {dof_names[j]} within its speed '
                f'limit {limit[j]:g} (velocity_limits is on), got {rates[j]:g}'
            )
    q_base, v_base = D.base_state_from_link(
        model,
        values['initial_base_position'],
        values['initial_base_orientation'],
        *np.split(np.asarray(values['initial_base_twist']), 2),
    )
    return np.r_[q_base, positions], np.r_[v_base, rates]
