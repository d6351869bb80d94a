"""Campaign scenarios: what a YAML file (or a dict) says, checked field by field (no ROS).

A scenario names the robot, the controller (mode, gains, reach settings), the goals, the
dispersions (one distribution per parameter), the number of runs and the campaign seed::

    name: servicer_reach
    robot: ffsim_servicer_7dof          # a sample robot name, or a URDF path (relative to file)
    ee_link: ee_link
    mode: reactionless                  # reactionless | gjm_tracking | joint_pd
    gains: {kp_task: 1.5}               # fields of ffsim_ros.control.Gains
    reach: {goal_timeout: 60.0}         # fields of ffsim_ros.control.ReachSettings
    timing: {physics_dt: 0.001, control_dt: 0.01, settle: 1.0, run_goal_timeout: 400.0}
    initial: {joint_positions: [0, 0.5, 0, -1.0, 0, 0.5, 0]}   # nominal start (default: 0)
    goals: {kind: offsets, offsets: [[0.1, 0.2, -0.2], [-0.05, -0.15, 0.1]]}
    # or: goals: {kind: chained, count: 3, near: 0.1, far: 0.45}
    dispersions:
      goal_offset: {dist: normal, std: 0.02}       # [m], per goal and axis
      joint_positions: {dist: uniform, low: -0.1, high: 0.1}   # [rad], per joint
      mass_scale: {dist: normal, mean: 1.0, std: 0.05}          # controller's model, per body
      noise_joint_position: 1.0e-4                 # a number: the same value for every run
    runs: 1000
    seed: 20
    batch_size: 256                     # runs advanced together (at most runs: cut to it)

Every field is checked when the scenario is built; a bad one is a :class:`ScenarioError`
naming it, what was expected and what came. The file is read strictly
(:func:`ffsim_ros.dynamics.yaml_input.load_yaml`: a duplicated key, an alias bomb or nesting
deeper than 100 levels is refused); a number field takes an int or a float (not a boolean
such as ``yes``), an integer field also an integral float (``plan_max_steps: 1e3``). A
section (``gains``, ``reach``, ``timing``, ``initial``, ``dispersions``) is a mapping, absent
or null for its defaults (``gains: []`` or ``reach: false`` is refused); ``reach`` takes the
controller node's ranges (:data:`ffsim_ros.control.REACH_BOUNDS`: ``max_plans`` at most 100,
``attitude_budget_deg`` at most 180, ...).
:data:`DISPERSIONS` lists the parameters, their components and units; :data:`GOAL_KINDS`
the goal schemes (``capture``, the scenario of issue 17, is reserved: see
:mod:`ffsim_ros.campaign.goals`).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ffsim_ros.control import CONTROL_MODES, Gains, ReachSettings
from ffsim_ros.dynamics.yaml_input import YamlInputError, load_yaml
from ffsim_ros.files import FileKindError, read_regular_file

#: Largest scenario file read [bytes] (:func:`read_scenario_file`).
MAX_SCENARIO_BYTES = 16 * 1024 * 1024

#: Distributions of a dispersion and their parameters (each a number or one per component).
DISTRIBUTIONS = {
    'fixed': ('value',),
    'uniform': ('low', 'high'),
    'normal': ('mean', 'std'),
}


@dataclass(frozen=True)
class Dispersion:
    """What one dispersed parameter is: its components, unit and meaning (:data:`DISPERSIONS`).

    ``per``: ``'axis'`` (x, y, z), ``'joint'`` (the joints), ``'body'`` (the bodies),
    ``'goal_axis'`` (each goal of a list, x, y, z) or ``'scalar'``; ``nominal``: the value
    without dispersion (a ``fixed`` distribution's default).
    """

    per: str
    unit: str
    nominal: float
    doc: str


#: The dispersed parameters of a run (what a scenario's ``dispersions`` may name).
DISPERSIONS: dict[str, Dispersion] = {
    'goal_offset': Dispersion(
        'goal_axis', 'm', 0.0, 'added to each goal of an offsets list, inertial frame'
    ),
    'joint_positions': Dispersion(
        'joint', 'rad', 0.0, 'added to the nominal initial joint positions (kept in the limits)'
    ),
    'joint_rates': Dispersion('joint', 'rad/s', 0.0, 'initial joint rates'),
    'base_attitude': Dispersion(
        'axis', 'rad', 0.0, 'initial base attitude, rotation vector from the nominal one'
    ),
    'linear_momentum': Dispersion('axis', 'kg m/s', 0.0, 'initial linear momentum, inertial'),
    'angular_momentum': Dispersion(
        'axis', 'N m s', 0.0, 'initial angular momentum about the system CoM, inertial'
    ),
    'mass_scale': Dispersion(
        'body', '1', 1.0, "factor on each body's mass in the controller's model"
    ),
    'inertia_scale': Dispersion(
        'body', '1', 1.0, "factor on each body's inertia about its CoM in the controller's model"
    ),
    'noise_joint_position': Dispersion('scalar', 'rad', 0.0, 'std of the measured joint angles'),
    'noise_joint_rate': Dispersion('scalar', 'rad/s', 0.0, 'std of the measured joint rates'),
    'noise_base_position': Dispersion('scalar', 'm', 0.0, 'std of the measured base position'),
    'noise_base_attitude': Dispersion(
        'scalar', 'rad', 0.0, 'std of the measured base attitude (rotation vector per axis)'
    ),
    'noise_base_velocity': Dispersion(
        'scalar', 'm/s', 0.0, 'std of the measured base linear velocity'
    ),
    'noise_base_rate': Dispersion(
        'scalar', 'rad/s', 0.0, 'std of the measured base angular velocity'
    ),
}

#: Goal schemes: ``offsets`` (a list relative to the end effector's start), ``chained`` (the
#: issue-15 scheme), ``capture`` (reserved for issue 17; not implemented).
GOAL_KINDS = ('offsets', 'chained', 'capture')

_TOP_KEYS = (
    'name',
    'robot',
    'ee_link',
    'mode',
    'gains',
    'reach',
    'timing',
    'initial',
    'goals',
    'dispersions',
    'runs',
    'seed',
    'batch_size',
)


class ScenarioError(ValueError):
    """A scenario field that is missing or wrong (the message names it)."""


@dataclass(frozen=True)
class Distribution:
    """A distribution of one parameter: ``kind`` in :data:`DISTRIBUTIONS` and its parameters
    (each a float, or a tuple with one value per component)."""

    kind: str
    params: tuple[tuple[str, float | tuple[float, ...]], ...]

    def param(self, name: str) -> float | tuple[float, ...]:
        """The parameter ``name``.

        Parameters
        ----------
        name : str
            E.g. ``'low'``, ``'high'``, ``'mean'``, ``'std'``, ``'value'``.

        Returns
        -------
        float or tuple of float
            In the dispersed parameter's units.
        """
        return dict(self.params)[name]

    @property
    def varies(self) -> bool:
        """Whether runs can draw different values."""
        if self.kind == 'fixed':
            return False
        if self.kind == 'uniform':
            return self.param('low') != self.param('high')
        std = self.param('std')
        return any(s > 0 for s in (std if isinstance(std, tuple) else (std,)))


#: Largest number of runs of a campaign (the runs' list is built up front).
MAX_RUNS = 10**7
#: Smallest physics step [s] (the simulator node's bound too).
MIN_PHYSICS_DT = 1e-6
#: Longest physics and control periods [s] (the law's gains assume periods of milliseconds).
MAX_DT = 1.0
#: Longest per-goal bounds and settling time [s] (``timing.run_goal_timeout``, ``timing.settle``,
#: ``reach.goal_timeout``): 11.6 days of simulated time per goal.
MAX_TIMEOUT = 1e6
#: Most goals a run of kind chained is given.
MAX_CHAINED_GOALS = 10_000


@dataclass(frozen=True)
class Timing:
    """Time steps and per-goal bounds [s] (the loop of :class:`ffsim_ros.control.closed_loop.
    ClosedLoop`: RK4 at ``physics_dt``, the controller at ``control_dt``, ``settle`` after each
    goal's outcome, ``run_goal_timeout`` the bound of one goal: a goal it ends, still active,
    is recorded ``aborted`` with a ``timeout:`` reason naming it)."""

    physics_dt: float = 0.001
    control_dt: float = 0.01
    settle: float = 1.0
    run_goal_timeout: float = 400.0


@dataclass(frozen=True)
class Goals:
    """The goal scheme: ``offsets`` (G, 3) [m] from the end effector's start position (kind
    ``offsets``), or ``count`` goals each ``near``-``far`` m from where the end effector stands
    (kind ``chained``)."""

    kind: str
    offsets: tuple[tuple[float, float, float], ...] = ()
    count: int = 0
    near: float = 0.1
    far: float = 0.45


@dataclass(frozen=True)
class Scenario:
    """A checked campaign scenario (build with :func:`load_scenario` or
    :meth:`Scenario.from_dict`)."""

    name: str
    robot: str
    ee_link: str
    mode: str
    gains: Gains
    reach: ReachSettings
    timing: Timing
    goals: Goals
    runs: int
    seed: int
    batch_size: int = 256
    initial_joint_positions: tuple[float, ...] | None = None
    dispersions: tuple[tuple[str, Distribution], ...] = ()
    source: dict = field(default_factory=dict, compare=False, repr=False)

    # ------------------------------------------------------------------------------ build
    @classmethod
    def from_dict(cls, data: Mapping[str, Any], base: Path | None = None) -> Scenario:
        """Check ``data`` (a parsed YAML mapping); ``base``: the folder relative robot paths
        are taken from.

        Parameters
        ----------
        data : Mapping
            The scenario document.
        base : Path, optional
            Folder of relative robot paths (None: they are kept as given).

        Returns
        -------
        Scenario

        Raises
        ------
        ScenarioError
            Naming the first bad field.
        """
        if not isinstance(data, Mapping):
            raise ScenarioError(f'scenario: expected a mapping, got {type(data).__name__}')
        unknown = sorted(set(data) - set(_TOP_KEYS), key=str)
        if unknown:
            raise ScenarioError(f'scenario: unknown keys {unknown}; expected some of {_TOP_KEYS}')
        for key in ('robot', 'goals', 'runs'):
            if key not in data:
                raise ScenarioError(f'scenario: missing key {key!r}')
        robot = _string(data['robot'], 'robot')
        if robot.endswith('.urdf') and base is not None and not Path(robot).is_absolute():
            robot = str((base / robot).resolve())
        mode = data.get('mode', 'reactionless')
        if mode not in CONTROL_MODES:
            raise ScenarioError(f'mode: expected one of {CONTROL_MODES}, got {mode!r}')
        initial = _section(data, 'initial')
        bad = sorted(set(initial) - {'joint_positions'}, key=str)
        if bad:
            raise ScenarioError(f'initial: unknown keys {bad}; expected joint_positions')
        q0 = initial.get('joint_positions')
        if q0 is not None and not isinstance(q0, list | tuple):
            raise ScenarioError(
                f'initial.joint_positions: expected a list of joint positions, got {q0!r}'
            )
        if q0 is not None:
            q0 = tuple(_number(x, f'initial.joint_positions[{k}]') for k, x in enumerate(q0))
        dispersions = _section(data, 'dispersions')
        return cls(
            name=_name(data.get('name', 'campaign')),
            robot=robot,
            ee_link=_string(data.get('ee_link', 'ee_link'), 'ee_link'),
            mode=mode,
            gains=_dataclass(Gains, _section(data, 'gains'), 'gains'),
            reach=_reach(_section(data, 'reach')),
            timing=_timing(_section(data, 'timing')),
            goals=_goals(data['goals']),
            runs=_integer(data['runs'], 'runs', 1, MAX_RUNS),
            seed=_integer(data.get('seed', 0), 'seed', 0),
            batch_size=_integer(data.get('batch_size', 256), 'batch_size', 1, MAX_RUNS),
            initial_joint_positions=q0,
            dispersions=tuple(
                (name, _distribution(name, spec))
                for name, spec in sorted(dispersions.items(), key=lambda item: str(item[0]))
            ),
            source=json.loads(json.dumps(dict(data), default=str)),
        )

    def with_changes(self, **changes: Any) -> Scenario:
        """A copy with fields replaced (e.g. ``runs``), checked again.

        Parameters
        ----------
        **changes
            Fields of :class:`Scenario` and their new values.

        Returns
        -------
        Scenario
        """
        data = dict(self.as_dict())
        data.update(changes)
        return Scenario.from_dict(data)

    # ------------------------------------------------------------------------------ views
    def dispersion(self, name: str) -> Distribution | None:
        """The distribution of ``name`` (None when not dispersed).

        Parameters
        ----------
        name : str
            A key of :data:`DISPERSIONS`.

        Returns
        -------
        Distribution or None
        """
        return dict(self.dispersions).get(name)

    def as_dict(self) -> dict:
        """The scenario as plain data (what :meth:`from_dict` takes back): the identity of a
        campaign, written next to its results.

        Returns
        -------
        dict
        """
        out = {
            'name': self.name,
            'robot': self.robot,
            'ee_link': self.ee_link,
            'mode': self.mode,
            'gains': dataclasses.asdict(self.gains),
            'reach': dataclasses.asdict(self.reach),
            'timing': dataclasses.asdict(self.timing),
            'goals': _goals_dict(self.goals),
            'runs': self.runs,
            'seed': self.seed,
            'batch_size': self.batch_size,
            'dispersions': {
                name: {'dist': d.kind, **{k: _plain(v) for k, v in d.params}}
                for name, d in self.dispersions
            },
        }
        if self.initial_joint_positions is not None:
            out['initial'] = {'joint_positions': list(self.initial_joint_positions)}
        return out

    def fingerprint(self) -> str:
        """SHA-256 of what decides the runs' results (everything but ``runs`` and
        ``batch_size``: more runs extend a campaign, the batch size changes no result).

        Returns
        -------
        str
            Hex digest.
        """
        data = self.as_dict()
        data.pop('runs')
        data.pop('batch_size')
        return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()


def load_scenario(path: str | Path) -> Scenario:
    """Read and check a scenario YAML file (:class:`Scenario`).

    Parameters
    ----------
    path : str or Path
        The file (relative robot paths are taken from its folder).

    Returns
    -------
    Scenario

    Raises
    ------
    ScenarioError
        A bad field (named), or a file that is not a YAML mapping (malformed, a duplicated
        key, too large or too deep: :func:`ffsim_ros.dynamics.yaml_input.load_yaml`).
    FileNotFoundError
        No such file.
    """
    path = Path(path)
    try:
        data = load_yaml(read_scenario_file(path).decode('utf-8'), str(path))
    except UnicodeDecodeError as exc:
        raise ScenarioError(f'{path}: expected a YAML text file (UTF-8), got {exc}') from None
    except YamlInputError as exc:
        raise ScenarioError(str(exc)) from None
    if data is None:
        data = {}
    if isinstance(data, Mapping) and 'name' not in data:
        data = {**data, 'name': path.stem}
    return Scenario.from_dict(data, base=path.parent)


def read_scenario_file(path: str | Path, max_bytes: int = MAX_SCENARIO_BYTES) -> bytes:
    """The bytes of the scenario file ``path``, read safely
    (:func:`ffsim_ros.files.read_regular_file`, as the nodes read theirs): opened without
    blocking, a regular file only (not a FIFO, ``/dev/zero``, a folder), at most ``max_bytes``.

    Parameters
    ----------
    path : str or Path
    max_bytes : int
        Largest size read [bytes].

    Returns
    -------
    bytes

    Raises
    ------
    ScenarioError
        Not a regular file, or too large.
    FileNotFoundError, OSError
        It cannot be opened (missing, no permission).
    """
    try:
        return read_regular_file(path, max_bytes, str(path))
    except FileKindError as exc:
        raise ScenarioError(str(exc)) from None


# -------------------------------------------------------------------------------- checks
def _mapping(x: Any, what: str) -> Mapping:
    if not isinstance(x, Mapping):
        raise ScenarioError(f'{what}: expected a mapping, got {x!r}')
    return x


def _section(data: Mapping[str, Any], key: str) -> Mapping:
    """The optional mapping ``data[key]``: absent or null (``gains:`` with nothing after it)
    is the defaults, ``{}``; anything else that is not a mapping is refused by name
    (``gains: []``, ``gains: 0``, ``reach: false`` were taken as the defaults)."""
    value = data.get(key)
    return {} if value is None else _mapping(value, key)


def _string(x: Any, what: str) -> str:
    if not isinstance(x, str) or not x:
        raise ScenarioError(f'{what}: expected a non-empty string, got {x!r}')
    return x


def _name(x: Any) -> str:
    """The scenario's name: one path component (the default output folder is
    ``campaign_<name>``: a name with a separator wrote outside the working directory)."""
    name = _string(x, 'name')
    if any(c in name for c in '/\\\0') or name in ('.', '..'):
        raise ScenarioError(
            f'name: expected a name without path separators (it names the output folder), '
            f'got {name!r}'
        )
    return name


def _number(x: Any, what: str) -> float:
    value = _yaml_number(x)
    try:
        number = float(value) if _is_number(value) else math.nan  # (an int beyond a float too)
    except OverflowError:
        number = math.nan
    if not math.isfinite(number):
        raise ScenarioError(f'{what}: expected a finite number, got {x!r}{_note(value)}')
    return number


def _integer(x: Any, what: str, low: int | None, high: int | None = 10**9) -> int:
    """``x`` as an integer in ``[low, high]`` (None: no bound); an integral float (``2.0``,
    ``1e3``) is that integer."""
    value = _yaml_number(x)
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or low is not None and value < low:
        bound = '' if low is None else f' >= {low}'
        raise ScenarioError(f'{what}: expected an integer{bound}, got {x!r}{_note(value)}')
    if high is not None and value > high:
        raise ScenarioError(f'{what}: expected an integer <= {high}, got {x!r}')
    return value


def _is_number(x: Any) -> bool:
    """Whether ``x`` is an int or a float (a bool is not)."""
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def _note(value: Any) -> str:
    """What a refused number field got, when its repr does not say it."""
    if isinstance(value, bool):
        return ' (a boolean: YAML reads yes/no/on/off/true/false as one)'
    if isinstance(value, float) and math.isfinite(value):
        return ' (not a whole number)'
    return ''


def _dataclass(cls: type, x: Any, what: str) -> Any:
    x = _mapping(x, what)
    types = {f.name: f.type for f in dataclasses.fields(cls)}
    unknown = sorted(set(x) - set(types), key=str)
    if unknown:
        raise ScenarioError(f'{what}: unknown fields {unknown}; expected some of {sorted(types)}')
    values = {}
    for key, value in x.items():
        if types[key] in ('int', int):  # (the class checks the range)
            values[key] = _integer(value, f'{what}.{key}', None, None)
        elif types[key] in ('float', float):  # (an int stays one, as before: same fingerprint)
            number = _number(value, f'{what}.{key}')
            values[key] = value if isinstance(value, int) else number
        else:
            values[key] = value
    try:
        return cls(**values)
    except (TypeError, ValueError) as exc:
        field_name = str(exc).split(':', 1)[0]  # (the classes' messages begin with the field)
        sep = '.' if field_name in types else ': '
        raise ScenarioError(f'{what}{sep}{exc}') from None


def _yaml_number(x: Any) -> Any:
    """``x``, or the number of a string YAML 1.1 left unparsed (``1e-3``, ``1e2``: no dot)."""
    if isinstance(x, str):
        try:
            return float(x)
        except ValueError:
            return x
    return x


def _timing(x: Any) -> Timing:
    raw = _dataclass(Timing, x, 'timing')
    values = {}
    for f in dataclasses.fields(Timing):
        value = _number(getattr(raw, f.name), f'timing.{f.name}')
        if value <= 0.0 and f.name != 'settle' or value < 0.0:
            raise ScenarioError(f'timing.{f.name}: expected a value > 0, got {value}')
        if f.name == 'physics_dt' and value < MIN_PHYSICS_DT:
            raise ScenarioError(
                f'timing.physics_dt: expected at least {MIN_PHYSICS_DT:g} s (as the simulator '
                f'node), got {value}'
            )
        if f.name in ('physics_dt', 'control_dt') and value > MAX_DT:
            raise ScenarioError(f'timing.{f.name}: expected at most {MAX_DT:g} s, got {value}')
        if f.name in ('settle', 'run_goal_timeout') and value > MAX_TIMEOUT:
            raise ScenarioError(
                f'timing.{f.name}: expected at most {MAX_TIMEOUT:g} s, got {value:g}'
            )
        values[f.name] = value
    t = Timing(**values)
    ratio = t.control_dt / t.physics_dt
    if abs(ratio - round(ratio)) > 1e-9 or round(ratio) < 1:
        raise ScenarioError(
            f'timing: control_dt ({t.control_dt}) must be a whole multiple of physics_dt '
            f'({t.physics_dt})'
        )
    return t


def _reach(x: Any) -> ReachSettings:
    """The reach settings, in the controller's ranges (:data:`ffsim_ros.control.REACH_BOUNDS`,
    checked by :class:`ReachSettings`: ``reach.goal_timeout`` at most :data:`MAX_TIMEOUT`)."""
    return _dataclass(ReachSettings, x, 'reach')


def _goals(x: Any) -> Goals:
    x = _mapping(x, 'goals')
    kind = x.get('kind')
    if kind not in GOAL_KINDS:
        raise ScenarioError(f'goals.kind: expected one of {GOAL_KINDS}, got {kind!r}')
    if kind == 'capture':
        raise ScenarioError(
            'goals.kind: capture (a tumbling target, issue 17) is not implemented yet; the '
            'extension point is ffsim_ros.campaign.goals.GOAL_SOURCES'
        )
    if kind == 'offsets':
        bad = sorted(set(x) - {'kind', 'offsets'}, key=str)
        if bad:
            raise ScenarioError(f'goals: unknown keys {bad} for kind offsets')
        offsets = x.get('offsets')
        if not isinstance(offsets, list) or not offsets:
            raise ScenarioError(
                f'goals.offsets: expected a non-empty list of [x, y, z], got {offsets!r}'
            )
        rows = []
        for k, row in enumerate(offsets):
            if not isinstance(row, (list, tuple)) or len(row) != 3:
                raise ScenarioError(f'goals.offsets[{k}]: expected [x, y, z] in m, got {row!r}')
            rows.append(tuple(_number(v, f'goals.offsets[{k}]') for v in row))
        return Goals('offsets', offsets=tuple(rows))
    bad = sorted(set(x) - {'kind', 'count', 'near', 'far'}, key=str)
    if bad:
        raise ScenarioError(f'goals: unknown keys {bad} for kind chained')
    near = _number(x.get('near', 0.1), 'goals.near')
    far = _number(x.get('far', 0.45), 'goals.far')
    if not 0.0 < near <= far:
        raise ScenarioError(f'goals: expected 0 < near <= far [m], got near {near}, far {far}')
    return Goals(
        'chained',
        count=_integer(x.get('count', 3), 'goals.count', 1, MAX_CHAINED_GOALS),
        near=near,
        far=far,
    )


def _goals_dict(g: Goals) -> dict:
    if g.kind == 'offsets':
        return {'kind': 'offsets', 'offsets': [list(r) for r in g.offsets]}
    return {'kind': g.kind, 'count': g.count, 'near': g.near, 'far': g.far}


def _distribution(name: str, spec: Any) -> Distribution:
    if name not in DISPERSIONS:
        raise ScenarioError(
            f'dispersions: unknown parameter {name!r}; expected some of {sorted(DISPERSIONS)}'
        )
    what = f'dispersions.{name}'
    if not isinstance(spec, Mapping):
        return Distribution('fixed', (('value', _number(spec, what)),))
    kind = spec.get('dist')
    if not isinstance(kind, str) or kind not in DISTRIBUTIONS:
        raise ScenarioError(f'{what}.dist: expected one of {sorted(DISTRIBUTIONS)}, got {kind!r}')
    allowed = DISTRIBUTIONS[kind]
    bad = sorted(set(spec) - {'dist', *allowed}, key=str)
    if bad:
        raise ScenarioError(f'{what}: unknown keys {bad} for a {kind} distribution')
    defaults = {'value': DISPERSIONS[name].nominal, 'mean': DISPERSIONS[name].nominal}
    params = []
    for key in allowed:
        if key not in spec and key not in defaults:
            raise ScenarioError(f'{what}: a {kind} distribution needs {key!r}')
        value = spec.get(key, defaults.get(key))
        if isinstance(value, (list, tuple)):
            value = tuple(_number(v, f'{what}.{key}') for v in value)
            if not value:
                raise ScenarioError(f'{what}.{key}: expected a number or a non-empty list')
        else:
            value = _number(value, f'{what}.{key}')
        params.append((key, value))
    d = Distribution(kind, tuple(params))
    if kind == 'normal' and any(s < 0 for s in _as_tuple(d.param('std'))):
        raise ScenarioError(f'{what}.std: expected values >= 0, got {d.param("std")}')
    if kind == 'uniform':
        lo, hi = _as_tuple(d.param('low')), _as_tuple(d.param('high'))
        n = max(len(lo), len(hi))  # (a single number applies to every component)
        if len(lo) in (1, n) and len(hi) in (1, n):
            pairs = zip(lo * (n // len(lo)), hi * (n // len(hi)), strict=True)
            for a, b in pairs:
                if a > b:
                    raise ScenarioError(f'{what}: expected low <= high, got {lo} and {hi}')
                if not math.isfinite(b - a):
                    raise ScenarioError(
                        f'{what}: expected a finite width high - low, got low {a:g} and '
                        f'high {b:g} (width {b - a:g})'
                    )
    return d


def _as_tuple(x: float | tuple[float, ...]) -> tuple[float, ...]:
    return x if isinstance(x, tuple) else (x,)


def _plain(x: float | tuple[float, ...]) -> float | list[float]:
    return list(x) if isinstance(x, tuple) else x
