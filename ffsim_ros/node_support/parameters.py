"""Node parameters as data: one :class:`ParameterTable` per node.

A table lists every parameter once -- name, default (which fixes the ROS type), description,
the check of its value and whether it can change at run time -- and everything else is
generated from it (the idea of ``generate_parameter_library``):

* the declarations and their ``ParameterDescriptor`` (description, ``additional_constraints``
  = the text of the check, ``read_only`` unless the parameter is dynamic):
  :meth:`ParameterTable.declare`, which also checks the start-up values (a bad one raises
  :class:`~ffsim_ros.node_support.common.ParameterValueError` naming it: exit code 2);
* the run-time protocol (:meth:`ParameterTable.watch`): values are checked in an on-set
  callback -- the whole set at once, merged with the current values, so a rejected atomic set
  changes nothing -- and handed to the node in a post-set callback, i.e. only once rclpy has
  stored them (rclpy < Iron has no post-set callback: there the on-set callback applies them
  after checking the whole set, as the only registered callback its success is the set's);
* the reference: :meth:`ParameterTable.markdown` (the README tables) and
  :meth:`ParameterTable.config_yaml` (``config/<node>.yaml``), checked against the files by
  ``test/test_parameter_docs.py``, so each description is written once, here.

A :class:`Check` turns a value into the one the node uses or raises a ``ValueError`` saying
what it expected and what came; its ``text`` is the constraint shown in the descriptor, the
README and the YAML. Checks that need several parameters (``publish_rate_hz`` at most
``physics_rate_hz``) are the table's ``cross_check``; checks that need the robot model (sizes of
joint vectors, link names) are the node's, after loading it.
"""

from __future__ import annotations

import array
import json
import math
import re
import textwrap
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rcl_interfaces.msg import ParameterDescriptor, ParameterType, SetParametersResult
from rclpy.node import Node

from .common import ParameterValueError

Value = bool | int | float | str | list


@dataclass(frozen=True)
class Check:
    """A check of one parameter value.

    Attributes
    ----------
    text : str
        What it accepts, in words (``'finite, > 0'``); shown in the descriptor's
        ``additional_constraints``, the README and the YAML comments.
    test : callable
        ``test(value) -> value to use``; raises ``ValueError('expected ..., got ...')``.
    """

    text: str
    test: Callable[[Any], Any]


def interval(
    low: float | None = None,
    high: float | None = None,
    *,
    low_open: bool = False,
    high_open: bool = False,
) -> Check:
    """A finite number in ``[low, high]`` (``low_open``/``high_open``: bound excluded)."""
    if low is not None and high is not None:
        text = f'in {"(" if low_open else "["}{low:g}, {high:g}{")" if high_open else "]"}'
    elif low is not None:
        text = f'{">" if low_open else ">="} {low:g}'
    elif high is not None:
        text = f'{"<" if high_open else "<="} {high:g}'
    else:
        text = 'finite'
    expected = 'a finite value' + ('' if text == 'finite' else f' {text}')

    def test(value: Any) -> float:
        x = float(value)
        ok = math.isfinite(x)
        if ok and low is not None:
            ok = x > low if low_open else x >= low
        if ok and high is not None:
            ok = x < high if high_open else x <= high
        if not ok:
            raise ValueError(f'expected {expected}, got {value}')
        return x

    return Check(f'finite, {text}' if text != 'finite' else text, test)


def one_of(choices: Sequence[str]) -> Check:
    """One of ``choices`` (strings)."""
    options = tuple(choices)

    def test(value: Any) -> str:
        if value not in options:
            raise ValueError(f'expected one of {options}, got {value!r}')
        return str(value)

    return Check(f'one of {", ".join(options)}', test)


def vector(size: int) -> Check:
    """Exactly ``size`` finite numbers (returned as a list of floats)."""

    def test(value: Any) -> list[float]:
        values = [float(x) for x in value]
        if len(values) != size or not all(math.isfinite(x) for x in values):
            raise ValueError(f'expected {size} finite values, got {values}')
        return values

    return Check(f'{size} finite values', test)


def finite_values() -> Check:
    """Any number of finite numbers (the node checks the size against its robot)."""

    def test(value: Any) -> list[float]:
        values = [float(x) for x in value]
        if not all(math.isfinite(x) for x in values):
            raise ValueError(f'expected finite values, got {values}')
        return values

    return Check('finite values', test)


# ------------------------------------------------------------------------------- the spec
_TYPES = {
    bool: (ParameterType.PARAMETER_BOOL, 'bool'),
    int: (ParameterType.PARAMETER_INTEGER, 'int'),
    float: (ParameterType.PARAMETER_DOUBLE, 'double'),
    str: (ParameterType.PARAMETER_STRING, 'string'),
}
_ARRAY_TYPES = {
    bool: (ParameterType.PARAMETER_BOOL_ARRAY, 'bool[]'),
    int: (ParameterType.PARAMETER_INTEGER_ARRAY, 'int[]'),
    float: (ParameterType.PARAMETER_DOUBLE_ARRAY, 'double[]'),
    str: (ParameterType.PARAMETER_STRING_ARRAY, 'string[]'),
}


def plain(value: Any) -> Value:
    """A parameter value as plain Python (rclpy gives ``array.array`` for numeric arrays)."""
    if isinstance(value, array.array | tuple):
        return list(value)
    return value


@dataclass(frozen=True)
class ParameterSpec:
    """One parameter of a node.

    Attributes
    ----------
    name : str
        Parameter name (``gains.kp_task``: a group ``gains`` in YAML).
    default : bool, int, float, str or list
        Default value; its Python type is the ROS type (a list: an array of its first
        element's type, so list defaults must not be empty).
    description : str
        One line, with units; the descriptor, README and YAML all show it.
    check : Check, optional
        Check of the value (none: any value of the type).
    dynamic : bool
        Settable at run time (else ``read_only`` in the descriptor).
    in_config : bool
        Listed in ``config/<node>.yaml`` (False: set by the launch files, e.g. the URDF).
    """

    name: str
    default: Value
    description: str
    check: Check | None = None
    dynamic: bool = False
    in_config: bool = True

    def __post_init__(self) -> None:
        if isinstance(self.default, list) and not self.default:
            raise ValueError(f'{self.name}: a list default must not be empty (it sets the type)')
        self._type_entry()  # raises for an unsupported type

    def _type_entry(self) -> tuple[int, str]:
        if isinstance(self.default, list):
            entry = _ARRAY_TYPES.get(type(self.default[0]))
        else:
            entry = _TYPES.get(type(self.default))
        if entry is None:
            raise ValueError(f'{self.name}: unsupported default {self.default!r}')
        return entry

    @property
    def ros_type(self) -> int:
        """``rcl_interfaces/ParameterType`` constant of the parameter."""
        return self._type_entry()[0]

    @property
    def type_name(self) -> str:
        """``'double'``, ``'double[]'``, ``'string'``, ... (README, YAML)."""
        return self._type_entry()[1]

    @property
    def constraint(self) -> str:
        """The text of the check ('' without one)."""
        return self.check.text if self.check is not None else ''

    def descriptor(self) -> ParameterDescriptor:
        """The ``ParameterDescriptor`` the parameter is declared with."""
        return ParameterDescriptor(
            name=self.name,
            type=self.ros_type,
            description=self.description,
            additional_constraints=self.constraint,
            read_only=not self.dynamic,
        )

    def validate(self, value: Any) -> Value:
        """The value the node uses.

        Raises
        ------
        ParameterValueError
            ``'<name>: expected ..., got ...'``.
        """
        value = plain(value)
        if self.check is None:
            return value
        try:
            return self.check.test(value)
        except (ValueError, TypeError) as exc:
            raise ParameterValueError(f'{self.name}: {exc}') from None


# ------------------------------------------------------------------------------ the table
class ParameterTable:
    """The parameters of one node.

    Parameters
    ----------
    node_name : str
        Default name of the node (the YAML key ``/**/<node_name>``).
    specs : sequence of ParameterSpec
        In the order of the README and the YAML.
    cross_check : callable, optional
        ``cross_check(values)`` on the checked values of all parameters; raises
        :class:`ParameterValueError` naming the parameter at fault.
    groups : mapping, optional
        Description of each name prefix (``{'gains': '...'}``) for the YAML group line.
    config_notes : str, optional
        Lines for the head comment of the YAML file (what the launch files set instead).
    """

    def __init__(
        self,
        node_name: str,
        specs: Sequence[ParameterSpec],
        *,
        cross_check: Callable[[Mapping[str, Value]], None] | None = None,
        groups: Mapping[str, str] | None = None,
        config_notes: str = '',
    ) -> None:
        self.node_name = node_name
        self.specs = tuple(specs)
        self._by_name = {s.name: s for s in self.specs}
        if len(self._by_name) != len(self.specs):
            raise ValueError(f'{node_name}: a parameter is listed twice')
        self.cross_check = cross_check
        self.groups = dict(groups or {})
        self.config_notes = config_notes

    def __iter__(self) -> Iterator[ParameterSpec]:
        return iter(self.specs)

    def __contains__(self, name: object) -> bool:
        return name in self._by_name

    def __getitem__(self, name: str) -> ParameterSpec:
        return self._by_name[name]

    @property
    def names(self) -> tuple[str, ...]:
        """Parameter names, in table order."""
        return tuple(s.name for s in self.specs)

    @property
    def dynamic_names(self) -> tuple[str, ...]:
        """Names of the parameters settable at run time."""
        return tuple(s.name for s in self.specs if s.dynamic)

    # ------------------------------------------------------------------ checks and ROS
    def validate(self, values: Mapping[str, Any]) -> dict[str, Value]:
        """Checked values of every parameter of ``values`` (all of them: with the cross check).

        Raises
        ------
        ParameterValueError
            Naming the first parameter at fault.
        """
        out = {name: self._by_name[name].validate(value) for name, value in values.items()}
        if self.cross_check is not None and set(out) >= set(self._by_name):
            self.cross_check(out)
        return out

    def declare(self, node: Node) -> dict[str, Value]:
        """Declare every parameter on ``node`` and return the checked start-up values.

        Raises
        ------
        ParameterValueError
            A start-up value (default, YAML or override) the table rejects.
        """
        node.declare_parameters('', [(s.name, s.default, s.descriptor()) for s in self.specs])
        return self.validate(self.current(node))

    def current(self, node: Node) -> dict[str, Value]:
        """The node's current values of the table's parameters (unchecked)."""
        return {name: plain(node.get_parameter(name).value) for name in self.names}

    def watch(self, node: Node, apply: Callable[[dict[str, Value]], None]) -> None:
        """Check run-time changes in an on-set callback; ``apply(changed)`` after they are set.

        ``apply`` gets the checked new values of the table's parameters in one set
        (parameters of other origin, e.g. ``use_sim_time``, are left to rclpy). Call after
        :meth:`declare` (the callbacks would otherwise run for the declarations).
        """
        post_set = getattr(node, 'add_post_set_parameters_callback', None)  # rclpy >= Iron

        def on_set(params: list) -> SetParametersResult:
            changed = {p.name: p.value for p in params if p.name in self}
            if not changed:
                return SetParametersResult(successful=True)
            merged = self.current(node)
            merged.update(changed)
            try:
                checked = self.validate(merged)
            except ParameterValueError as exc:
                return SetParametersResult(successful=False, reason=str(exc))
            if post_set is None:
                apply({name: checked[name] for name in changed})
            return SetParametersResult(successful=True)

        def after_set(params: list) -> None:
            changed = [p.name for p in params if p.name in self]
            if changed:
                checked = self.validate(self.current(node))
                apply({name: checked[name] for name in changed})

        node.add_on_set_parameters_callback(on_set)
        if post_set is not None:
            post_set(after_set)

    # ------------------------------------------------------------------ the reference
    def markdown(self) -> str:
        """The README table of the parameters (one row each, table order)."""
        rows = [
            '| parameter | type | default | accepts | description |',
            '|---|---|---|---|---|',
        ]
        for s in self.specs:
            name = f'`{s.name}`' + (' (dynamic)' if s.dynamic else '')
            accepts = s.constraint or 'any'
            rows.append(
                f'| {name} | {s.type_name} | `{_yaml_value(s.default)}` | {accepts} '
                f'| {_md(s.description)} |'
            )
        return '\n'.join(rows) + '\n'

    def config_yaml(self) -> str:
        """``config/<node>.yaml``: the defaults of the ``in_config`` parameters, each under a
        comment with its description and check."""
        lines = [
            f'# Parameters of the {self.node_name} node, generated from its parameter table',
            '# (ffsim_ros.node_support.parameters; test/test_parameter_docs.py checks this file).',
            f'# `/**/{self.node_name}` matches the node in any namespace.',
        ]
        lines += [f'# {line}'.rstrip() for line in self.config_notes.splitlines()]
        lines += [f'/**/{self.node_name}:', '  ros__parameters:']
        group = ''
        for s in self.specs:
            if not s.in_config:
                continue
            prefix, _, key = s.name.rpartition('.')
            indent = '      ' if prefix else '    '
            if prefix and prefix != group:
                if prefix in self.groups:
                    lines.append(f'    # {self.groups[prefix]}')
                lines.append(f'    {prefix}:')
            group = prefix
            comment = s.description + (f'; {s.constraint}' if s.constraint else '')
            if s.dynamic:
                comment += '; settable at run time'
            width = 99 - len(indent) - 2
            lines += [
                f'{indent}# {part}'
                for part in textwrap.wrap(comment, width, break_on_hyphens=False)
            ]
            lines.append(f'{indent}{key}: {_yaml_value(s.default)}')
        return '\n'.join(lines) + '\n'


_PLAIN_STRING = re.compile(r'^[A-Za-z_][A-Za-z0-9_./-]*$')
_YAML_WORDS = {'true', 'false', 'yes', 'no', 'on', 'off', 'null', 'y', 'n', '~'}


def _yaml_value(value: Value) -> str:
    """A value in YAML flow style (also how the README shows defaults)."""
    if isinstance(value, bool):
        return 'true' if value else 'false'
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        if _PLAIN_STRING.match(value) and value.lower() not in _YAML_WORDS:
            return value
        return json.dumps(value)
    return '[' + ', '.join(_yaml_value(x) for x in value) + ']'


def _md(text: str) -> str:
    return text.replace('|', '\\|').replace('<', '&lt;')
