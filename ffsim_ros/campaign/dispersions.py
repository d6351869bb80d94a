"""Seeds and dispersed inputs of each run of a campaign (no ROS).

Seeding: run ``i`` of a campaign with seed ``s`` owns the NumPy seed sequence
``SeedSequence(s, spawn_key=(i,))`` -- the ``i``-th child of ``SeedSequence(s).spawn(...)``,
reached directly -- and draws everything random from four streams spawned from it: its inputs
(:data:`INPUTS`), its goals (``chained`` goals), its sensor noise and its planner's seed. A run
therefore depends on the campaign seed, its index and the scenario only: not on the batch it
ran in, its slot, the executor or the other runs, and replaying run ``i`` alone gives the same
bits.

Inputs are drawn parameter by parameter in the order of :data:`~.scenario.DISPERSIONS` (a
parameter the scenario does not disperse draws nothing), component by component.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

import ffsim_ros.dynamics as D
from ffsim_ros.control.batched import turn_quaternions

from .scenario import DISPERSIONS, Distribution, Scenario, ScenarioError

#: Child streams of a run's seed sequence.
INPUTS, GOALS, NOISE, PLANNER = range(4)
_AXES = ('x', 'y', 'z')
#: Sensor-noise parameters, in the order of the measured state's parts.
NOISE_PARAMS = (
    'noise_base_position',
    'noise_base_attitude',
    'noise_joint_position',
    'noise_base_velocity',
    'noise_base_rate',
    'noise_joint_rate',
)


def run_seed(seed: int, index: int, stream: int) -> np.random.SeedSequence:
    """The seed sequence of stream ``stream`` of run ``index`` (module docstring).

    Parameters
    ----------
    seed : int
        The campaign's seed.
    index : int
        The run's index.
    stream : int
        The stream: :data:`INPUTS`, :data:`GOALS`, :data:`NOISE` or :data:`PLANNER`.

    Returns
    -------
    numpy.random.SeedSequence
    """
    return np.random.SeedSequence(int(seed), spawn_key=(int(index), int(stream)))


def run_rng(seed: int, index: int, stream: int) -> np.random.Generator:
    """A generator on :func:`run_seed`.

    Parameters
    ----------
    seed : int
        The campaign's seed.
    index : int
        The run's index.
    stream : int
        The stream: :data:`INPUTS`, :data:`GOALS`, :data:`NOISE` or :data:`PLANNER`.

    Returns
    -------
    numpy.random.Generator
    """
    return np.random.default_rng(run_seed(seed, index, stream))


@dataclass(frozen=True)
class RunInputs:
    """What a run starts from (SI units, inertial frame).

    Attributes
    ----------
    index : int
    q0 : (nq,) initial configuration;  v0 : (nv,) initial velocity.
    goal_offsets : (G, 3) goal offsets from the end effector's start [m] (``offsets`` goals),
        or None (``chained``).
    mass_scale, inertia_scale : (nb,) factors of the controller's model, per body.
    noise : (6,) standard deviations of :data:`NOISE_PARAMS`.
    plan_seed : int, the planner's seed of the run.
    columns : dict, the drawn values by column name (``in.<parameter>.<component>``).
    """

    index: int
    q0: np.ndarray
    v0: np.ndarray
    goal_offsets: np.ndarray | None
    mass_scale: np.ndarray
    inertia_scale: np.ndarray
    noise: np.ndarray
    plan_seed: int
    columns: dict

    @property
    def model_error(self) -> bool:
        """Whether the controller's model differs from the simulated one."""
        return bool(np.any(self.mass_scale != 1.0) or np.any(self.inertia_scale != 1.0))

    @property
    def noisy(self) -> bool:
        """Whether the controller measures the state with noise."""
        return bool(np.any(self.noise > 0.0))


def components(name: str, scenario: Scenario, model: D.Model) -> list[str]:
    """Component names of the parameter ``name`` for this scenario and robot.

    Parameters
    ----------
    name : str
        A key of :data:`~.scenario.DISPERSIONS`.
    scenario : Scenario
    model : Model
        The simulated robot.

    Returns
    -------
    list of str
        ``['x', 'y', 'z']``, the joint or body names, ``'<goal>.<axis>'``, or ``['']``.
    """
    per = DISPERSIONS[name].per
    if per == 'axis':
        return list(_AXES)
    if per == 'joint':
        return list(model.joint_names)
    if per == 'body':
        return list(model.body_names)
    if per == 'goal_axis':
        return [f'{k}.{a}' for k in range(len(scenario.goals.offsets)) for a in _AXES]
    return ['']


def input_columns(scenario: Scenario, model: D.Model) -> list[str]:
    """The input columns of the results table (one per dispersed component).

    Parameters
    ----------
    scenario : Scenario
    model : Model
        The simulated robot.

    Returns
    -------
    list of str
        ``in.<parameter>.<component>`` names.
    """
    out = []
    for name in DISPERSIONS:
        if scenario.dispersion(name) is not None:
            out += [_column(name, c) for c in components(name, scenario, model)]
    return out


def _column(name: str, component: str) -> str:
    return f'in.{name}' + (f'.{component}' if component else '')


#: A normal distribution is checked over mean +- SUPPORT_STDS std (its draws beyond: < 1e-15).
SUPPORT_STDS = 8.0
#: Parameters whose values must be > 0 (scale factors) or >= 0 (sensor noise std).
POSITIVE = ('mass_scale', 'inertia_scale')


class DrawError(ScenarioError):
    """One run's draw is not a valid input (a scale factor <= 0, a noise std < 0, a
    non-finite start): that run fails with the reason, the campaign goes on."""


def _params(d: Distribution, size: int, what: str) -> dict[str, np.ndarray]:
    """The parameters of ``d`` as one value per component (``size``).

    Raises
    ------
    ScenarioError
        A parameter with neither one value nor ``size``.
    """
    out = {}
    for key, _ in d.params:
        x = np.asarray(d.param(key), dtype=float).reshape(-1)
        if x.size == 1:
            x = np.full(size, float(x[0]))
        elif x.size != size:
            raise ScenarioError(
                f'dispersions.{what}.{key}: expected one value or {size} (one per component), '
                f'got {x.size}'
            )
        out[key] = x
    return out


def _draw(d: Distribution, rng: np.random.Generator, size: int, what: str) -> np.ndarray:
    p = _params(d, size, what)
    if d.kind == 'fixed':
        return p['value']
    if d.kind == 'uniform':
        return rng.uniform(p['low'], p['high'])
    return rng.normal(p['mean'], p['std'])


def support(d: Distribution, size: int, what: str) -> tuple[np.ndarray, np.ndarray]:
    """``(low, high)`` per component of the values ``d`` draws: the value, the bounds, or
    mean -+ :data:`SUPPORT_STDS` std (a normal distribution).

    Parameters
    ----------
    d : Distribution
    size : int
        Number of components.
    what : str
        The parameter's name, for the messages.

    Returns
    -------
    low, high : (size,) ndarray
        In the parameter's units (:data:`~.scenario.DISPERSIONS`).

    Raises
    ------
    ScenarioError
        A parameter with the wrong number of components; bounds that are not finite.
    """
    p = _params(d, size, what)
    if d.kind == 'fixed':
        lo = hi = p['value']
    elif d.kind == 'uniform':
        lo, hi = p['low'], p['high']
    else:
        with np.errstate(over='ignore', invalid='ignore'):
            lo = p['mean'] - SUPPORT_STDS * p['std']
            hi = p['mean'] + SUPPORT_STDS * p['std']
        if not (np.isfinite(lo).all() and np.isfinite(hi).all()):
            raise ScenarioError(
                f'dispersions.{what}: expected mean +- {SUPPORT_STDS:g} std finite, got mean '
                f'{_plain(p["mean"])} and std {_plain(p["std"])}'
            )
    return lo, hi


def _plain(x: np.ndarray) -> float | list[float]:
    return float(x[0]) if np.all(x == x[0]) else x.tolist()


def check_dispersions(scenario: Scenario, model: D.Model) -> None:
    """Check the dispersions up front, whatever a run draws: the number of components of each
    parameter, finite bounds (a normal distribution's mean -+ :data:`SUPPORT_STDS` std), scale
    factors that can be > 0 and noise levels that can be >= 0 (a distribution that never
    draws one is refused; one that sometimes does not fails those runs alone, with the reason:
    :class:`DrawError`); then run 0's inputs are drawn once, for the errors of the rest of the
    scenario (e.g. ``initial.joint_positions`` of the wrong size).

    Parameters
    ----------
    scenario : Scenario
    model : Model
        The simulated robot.

    Raises
    ------
    ScenarioError
        Naming the parameter, what was expected and what it got.
    """
    if scenario.goals.kind != 'offsets' and scenario.dispersion('goal_offset') is not None:
        raise ScenarioError('dispersions.goal_offset: expected goals.kind offsets')
    for name in DISPERSIONS:
        d = scenario.dispersion(name)
        if d is None:
            continue
        lo, hi = support(d, len(components(name, scenario, model)), name)
        if name in POSITIVE and not np.all(hi > 0.0):
            raise ScenarioError(
                f'dispersions.{name}: expected factors that can be > 0, got a distribution '
                f'drawing at most {_plain(hi)}'
            )
        if name in NOISE_PARAMS and not np.all(hi >= 0.0):
            raise ScenarioError(
                f'dispersions.{name}: expected a std that can be >= 0, got a distribution '
                f'drawing at most {_plain(hi)}'
            )
    try:
        sample_inputs(scenario, model, 0)
    except DrawError:  # (run 0's luck: that run fails alone)
        pass
    except ScenarioError:
        raise
    except (TypeError, ValueError, OverflowError) as exc:  # numpy's own (e.g. a wrong shape)
        raise ScenarioError(f'the inputs of run 0 cannot be drawn: {exc}') from None


def sample_inputs(scenario: Scenario, model: D.Model, index: int) -> RunInputs:
    """The inputs of run ``index`` (module docstring): a pure function of the scenario, the
    model and ``index``.

    Parameters
    ----------
    scenario : Scenario
    model : Model
        The simulated robot.
    index : int
        The run's index.

    Returns
    -------
    RunInputs

    Raises
    ------
    ScenarioError
        A parameter with the wrong number of components.
    DrawError
        This run drew a scale factor that is not > 0, a noise level < 0, or a start state
        that is not finite.
    """
    rng = run_rng(scenario.seed, index, INPUTS)
    drawn: dict[str, np.ndarray] = {}
    columns: dict[str, float] = {}
    for name, spec in DISPERSIONS.items():
        d = scenario.dispersion(name)
        comps = components(name, scenario, model)
        if d is None:
            drawn[name] = np.full(len(comps), spec.nominal)
            continue
        drawn[name] = _draw(d, rng, len(comps), name)
        for c, value in zip(comps, drawn[name], strict=True):
            columns[_column(name, c)] = float(value)
    for name in ('mass_scale', 'inertia_scale'):
        if np.any(drawn[name] <= 0.0):
            raise DrawError(
                f'dispersions.{name}: run {index} drew {drawn[name].tolist()}; factors must be > 0'
                ' (narrow the distribution)'
            )
    noise = np.array([drawn[p][0] for p in NOISE_PARAMS])
    if np.any(noise < 0.0):
        raise DrawError(f'sensor noise of run {index}: expected std >= 0, got {noise.tolist()}')
    q0, v0, applied = _initial_state(scenario, model, drawn)
    if scenario.dispersion('joint_positions') is not None:  # the offsets within the limits
        for c, value in zip(components('joint_positions', scenario, model), applied, strict=True):
            columns[_column('joint_positions', c)] = float(value)
    if not (np.isfinite(q0).all() and np.isfinite(v0).all()):
        raise DrawError(
            f'run {index}: the drawn start state is not finite (narrow the dispersions)'
        )
    offsets = None
    if scenario.goals.kind == 'offsets':
        offsets = np.asarray(scenario.goals.offsets, float) + drawn['goal_offset'].reshape(-1, 3)
    plan_seed = int(run_seed(scenario.seed, index, PLANNER).generate_state(1)[0])
    return RunInputs(
        index=int(index),
        q0=q0,
        v0=v0,
        goal_offsets=offsets,
        mass_scale=drawn['mass_scale'],
        inertia_scale=drawn['inertia_scale'],
        noise=noise,
        plan_seed=plan_seed,
        columns=columns,
    )


def _initial_state(
    scenario: Scenario, model: D.Model, drawn: dict[str, np.ndarray]
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(q0, v0, offsets)``: the nominal start plus the drawn joint offsets (kept within the
    limits: ``offsets`` are the ones applied), the drawn attitude, joint rates and momentum
    (the base velocity that carries it).

    Raises
    ------
    ScenarioError
        ``initial.joint_positions`` of the wrong size, or outside the joint limits.
    """
    q = D.neutral(model)
    if scenario.initial_joint_positions is not None:
        phi = np.asarray(scenario.initial_joint_positions, float)
        if phi.shape != (model.nq - 7,):
            raise ScenarioError(
                f'initial.joint_positions: expected {model.nq - 7} values, got {phi.size}'
            )
        out = np.flatnonzero((phi < model.lower) | (phi > model.upper))
        if out.size:
            j = int(out[0])
            raise ScenarioError(
                f'initial.joint_positions: expected {model.joint_names[j]} within its limits '
                f'[{model.lower[j]:g}, {model.upper[j]:g}], got {phi[j]:g}'
            )
        q[7:] = phi
    nominal, offsets = q[7:].copy(), drawn['joint_positions']
    q[7:] = np.clip(nominal + offsets, model.lower, model.upper)
    clipped = q[7:] != nominal + offsets
    applied = np.where(clipped, q[7:] - nominal, offsets)  # (the drawn bits when not clipped)
    q[3:7] = turn_quaternions(q[None, 3:7], drawn['base_attitude'][None, :])[0]
    phidot = drawn['joint_rates'].copy()
    momentum = np.concatenate((drawn['linear_momentum'], drawn['angular_momentum']))
    base = D.base_velocity_from_momentum(model, q, phidot, momentum, about='com')
    return q, np.concatenate((base, phidot)), applied


def controller_model(model: D.Model, inputs: RunInputs) -> D.Model:
    """The model the run's controller uses: ``model`` with each body's mass and inertia about
    its CoM scaled by the run's factors (the CoM positions and the geometry unchanged, so the
    configuration means the same to both).

    Parameters
    ----------
    model : Model
        The simulated robot.
    inputs : RunInputs
        The run's inputs (its ``mass_scale``, ``inertia_scale`` per body).

    Returns
    -------
    Model
        ``model`` itself when no factor differs from 1.
    """
    if not inputs.model_error:
        return model
    import dataclasses

    a = model.arrays
    mass = np.array(a.mass) * inputs.mass_scale
    inertia = np.array(a.inertia) * inputs.inertia_scale[:, None, None]
    mass.setflags(write=False)
    inertia.setflags(write=False)
    return dataclasses.replace(model, arrays=a._replace(mass=mass, inertia=inertia))
