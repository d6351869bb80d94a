"""Node parameters as data: one :class:`ParameterTable` per node.

A table lists every parameter once -- name, default (which fixes the ROS type), description,
the check of its value and whether it can change at run time -- and everything else is
generated from it (the idea of ``generate_parameter_library``):

* the declarations and their ``ParameterDescriptor`` (type, description,
  ``additional_constraints`` = the text of the check, ``floating_point_range`` /
  ``integer_range`` = the closed range of an :func:`interval` or :func:`count` check,
  ``read_only`` unless the parameter is dynamic): :meth:`ParameterTable.declare`, which also
  checks the start-up values (a bad one raises
  :class:`~ffsim_ros.node_support.common.ParameterValueError` naming it: exit code 2);
* types: each parameter is declared statically typed (its default's type, what ``ros2 param
  describe`` shows), and an integer is taken where a double is meant (``-p
  physics_rate_hz:=500``, ``ros2 param set ... real_time_factor 2``: what users type). rclpy
  refuses such a value at the declaration, so :meth:`ParameterTable.declare` reads it through a
  dynamically typed probe, converts it (:meth:`ParameterSpec.coerce`) and declares the double;
  at run time a pre-set callback converts it before rclpy's type check. Any other type is an
  error naming the parameter, the type expected and the value given;
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
import difflib
import json
import math
import re
import textwrap
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rcl_interfaces.msg import (
    FloatingPointRange,
    IntegerRange,
    ParameterDescriptor,
    ParameterType,
    SetParametersResult,
)
from rclpy.exceptions import ParameterNotDeclaredException
from rclpy.node import Node
from rclpy.parameter import Parameter

from ffsim_ros.dynamics.lie import quat_unit

from .common import SHOWN_CHARS, ParameterValueError, shown
from .parameter_services import guard_parameter_services

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
    bounds : (low, high), optional
        A closed range of a number that passes (the descriptor's ``floating_point_range`` or
        ``integer_range``; None: none to give, e.g. an open bound or a composite rule).
    """

    text: str
    test: Callable[[Any], Any]
    bounds: tuple[float, float] | None = None


def _bound_text(low: float | None, high: float | None, low_open: bool, high_open: bool) -> str:
    if low is not None and high is not None:
        return f'in {"(" if low_open else "["}{low:g}, {high:g}{")" if high_open else "]"}'
    if low is not None:
        return f'{">" if low_open else ">="} {low:g}'
    if high is not None:
        return f'{"<" if high_open else "<="} {high:g}'
    return ''


def _within(
    x: float, low: float | None, high: float | None, low_open: bool, high_open: bool
) -> bool:
    ok = math.isfinite(x)
    if ok and low is not None:
        ok = x > low if low_open else x >= low
    if ok and high is not None:
        ok = x < high if high_open else x <= high
    return ok


def interval(
    low: float | None = None,
    high: float | None = None,
    *,
    low_open: bool = False,
    high_open: bool = False,
) -> Check:
    """A finite number in ``[low, high]`` (``low_open``/``high_open``: bound excluded)."""
    text = _bound_text(low, high, low_open, high_open)
    expected = 'a finite value' + (f' {text}' if text else '')

    def test(value: Any) -> float:
        x = float(value)
        if not _within(x, low, high, low_open, high_open):
            raise ValueError(f'expected {expected}, got {shown(value)}')
        return x

    closed = low is not None and high is not None and not (low_open or high_open)
    return Check(f'finite, {text}' if text else 'finite', test, (low, high) if closed else None)


def count(low: int, high: int) -> Check:
    """An integer in ``[low, high]`` (an integer parameter: the type is checked before)."""
    text = f'integer in [{low}, {high}]'

    def test(value: Any) -> int:
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            raise ValueError(f'expected an {text}, got {shown(value)}')
        return int(value)

    return Check(text, test, (low, high))


def zero_or_interval(low: float, high: float) -> Check:
    """0, or a finite number in ``[low, high]`` (``low`` > 0): a switch-off value next to a
    range that keeps the arithmetic sane (``real_time_factor``: 0 = as fast as possible)."""
    text = f'0 or in [{low:g}, {high:g}]'

    def test(value: Any) -> float:
        x = float(value)
        if x != 0.0 and not _within(x, low, high, False, False):
            raise ValueError(f'expected {text}, got {shown(value)}')
        return x

    return Check(text, test)


def vector(size: int, bound: float | None = None) -> Check:
    """Exactly ``size`` finite numbers (returned as a list of floats), each of magnitude at
    most ``bound`` when given."""
    what = f'{size} finite values' + (f' of magnitude <= {bound:g}' if bound is not None else '')

    def test(value: Any) -> list[float]:
        values = [float(x) for x in value]
        if len(values) != size or not all(math.isfinite(x) for x in values):
            raise ValueError(f'expected {what}, got {shown(values)}')
        if bound is not None and max(abs(x) for x in values) > bound:
            raise ValueError(f'expected {what}, got {shown(values)}')
        return values

    return Check(what, test)


def unit_quaternion(tolerance: float = 1e-3) -> Check:
    """A quaternion ``(x, y, z, w)`` of norm 1 within ``tolerance`` (returned normalized): a
    zero, non-finite or clearly non-unit value (a typo, a wrong convention) is refused rather
    than silently rescaled."""
    what = f'a unit quaternion (x, y, z, w): 4 finite values of norm 1 (within {tolerance:g})'

    def test(value: Any) -> list[float]:
        values = [float(x) for x in value]
        if len(values) != 4 or not all(math.isfinite(x) for x in values):
            raise ValueError(f'expected {what}, got {shown(values)}')
        return quat_unit(values, '', tolerance).tolist()  # (the table names the parameter)

    return Check(what, test)


def finite_values(bound: float | None = None, max_size: int = 1024) -> Check:
    """At most ``max_size`` finite numbers, each of magnitude at most ``bound`` when given (the
    node checks the size against its robot)."""
    what = 'finite values' + (f' of magnitude <= {bound:g}' if bound is not None else '')

    def test(value: Any) -> list[float]:
        values = [float(x) for x in value]
        if len(values) > max_size:
            raise ValueError(f'expected at most {max_size} values, got {len(values)}')
        if not all(math.isfinite(x) and (bound is None or abs(x) <= bound) for x in values):
            raise ValueError(f'expected {what}, got {shown(values)}')
        return values

    return Check(what, test)


def one_of(choices: Sequence[str]) -> Check:
    """One of ``choices`` (strings)."""
    options = tuple(choices)

    def test(value: Any) -> str:
        if value not in options:
            raise ValueError(f'expected one of {options}, got {shown(value)}')
        return str(value)

    return Check(f'one of {", ".join(options)}', test)


def string(max_bytes: int) -> Check:
    """A string of at most ``max_bytes`` bytes (UTF-8)."""

    def test(value: Any) -> str:
        size = len(str(value).encode('utf-8', 'surrogatepass'))
        if size > max_bytes:
            raise ValueError(f'expected at most {max_bytes} bytes, got {size}')
        return str(value)

    return Check(f'at most {max_bytes} bytes', test)


_FRAME_ID = re.compile(r'^[A-Za-z0-9_][A-Za-z0-9_./-]{0,254}$')


def frame_id(*, prefix: bool = False) -> Check:
    """'' or a TF frame id: letters, digits, ``_ . / -``, not starting with ``/`` (tf2 refuses
    a leading slash), at most 255 characters; ``prefix``: a frame id prefix, ending in ``/``."""
    what = (
        "'' or a frame id prefix ending in / (letters, digits, _ . / -; no leading /)"
        if prefix
        else "'' or a frame id (letters, digits, _ . / -; no leading /)"
    )

    def test(value: Any) -> str:
        value = str(value)
        ok = value == '' or (_FRAME_ID.match(value) and (not prefix or value.endswith('/')))
        if not ok:
            raise ValueError(f'expected {what}, got {shown(value)}')
        return value

    return Check(what, test)


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

    @property
    def bounds(self) -> tuple[float, float] | None:
        """The closed range of the check of a double or integer parameter (None: no range to
        give: an open bound, a composite rule, another type)."""
        bounds = self.check.bounds if self.check is not None else None
        if self.ros_type in (ParameterType.PARAMETER_DOUBLE, ParameterType.PARAMETER_INTEGER):
            return bounds
        return None

    def descriptor(self) -> ParameterDescriptor:
        """The ``ParameterDescriptor`` the parameter is declared with: the closed range of its
        check (:attr:`bounds`) as its ``floating_point_range`` or ``integer_range`` too (step
        0: any value in it), which rclpy then enforces as well."""
        descriptor = ParameterDescriptor(
            name=self.name,
            type=self.ros_type,
            description=self.description,
            additional_constraints=self.constraint,
            read_only=not self.dynamic,
        )
        bounds = self.bounds
        if bounds is not None and self.ros_type == ParameterType.PARAMETER_DOUBLE:
            low, high = (float(x) for x in bounds)
            descriptor.floating_point_range = [
                FloatingPointRange(from_value=low, to_value=high, step=0.0)
            ]
        elif bounds is not None:
            low, high = (int(x) for x in bounds)
            descriptor.integer_range = [IntegerRange(from_value=low, to_value=high, step=0)]
        return descriptor

    @property
    def element_type(self) -> type:
        """Python type of the value (of each element for an array)."""
        return type(self.default[0]) if isinstance(self.default, list) else type(self.default)

    def coerce(self, value: Any) -> Value:
        """``value`` as the parameter's type: the same type, or an integer (array) where a
        double (array) is meant; ``None`` (rclpy's NOT SET, what an empty list ``[]`` on the
        command line gives) is an empty array for an array parameter.

        Parameters
        ----------
        value : object

        Raises
        ------
        ParameterValueError
            ``'<name>: expected a double, got '1e400' (a string)'``: any other type.
        """
        value = plain(value)
        kind = self.element_type
        if isinstance(self.default, list):
            if value is None:
                return []
            if isinstance(value, list) and all(_is_a(kind, x) for x in value):
                return [kind(x) for x in value]
        elif _is_a(kind, value):
            return kind(value)
        raise ParameterValueError(
            f'{self.name}: expected {_article(self.type_name)}, got {shown(value)} '
            f'({_kind_of(value)})'
        )

    def validate(self, value: Any) -> Value:
        """The value the node uses.

        Parameters
        ----------
        value : object

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


def _is_a(kind: type, value: Any) -> bool:
    if kind is float:  # an integer is taken for a double; a bool is not a number here
        return isinstance(value, int | float) and not isinstance(value, bool)
    return type(value) is kind


def _article(type_name: str) -> str:
    if type_name.endswith('[]'):
        return f'an array of {type_name[:-2]}s'
    return f'an {type_name}' if type_name[0] in 'aeiou' else f'a {type_name}'


def _kind_of(value: Any) -> str:
    if value is None:
        return 'no value'
    if isinstance(value, list):  # (one element of each type: an array can be huge)
        kinds = sorted({_kind_of(x).split()[-1] for x in {type(x): x for x in value}.values()})
        return f'an array of {", ".join(kinds)}' if kinds else 'an empty array'
    names = {bool: 'bool', int: 'integer', float: 'double', str: 'string'}
    name = names.get(type(value), type(value).__name__)
    return _article(name)


#: Names a message lists at most (an atomic set of 2000 undeclared names named each).
NAMES_SHOWN = 5


def _listed(items: Sequence[str], total: int) -> str:
    """``items`` joined, with the count of those left out of ``total``."""
    more = f' and {total - len(items)} more' if total > len(items) else ''
    return ', '.join(items) + more


def name_problem(name: Any) -> str | None:
    """What is wrong with ``name`` as a parameter name, or None: a name is a non-empty string
    without whitespace or control characters and without an empty part between dots (rclcpp
    refuses an empty name, a YAML parameter file cannot give the others; rclpy takes them)."""
    if not isinstance(name, str):
        return f'a {type(name).__name__}, not a string'
    if not name:
        return 'an empty name'
    if any(c.isspace() or not c.isprintable() for c in name):
        return 'a name with whitespace or control characters'
    if '' in name.split('.'):
        return 'a name with an empty part between dots'
    return None


class RefusedSetError(ParameterNotDeclaredException):
    """A set refused by the pre-set callback, with a message naming the parameter. A
    :class:`~rclpy.exceptions.ParameterNotDeclaredException` (the only exception rclpy's
    parameter services catch), so they answer it as theirs: ``successful=False`` with this
    message as the reason; an in-process ``set_parameters`` raises it."""

    def __init__(self, names: Sequence[str], message: str) -> None:
        super().__init__(list(names))
        self.names = list(names)
        self.args = (message,)

    def __str__(self) -> str:
        return self.args[0]


class UndeclaredParameterError(RefusedSetError):
    """A set of a parameter the node has not declared, with a message naming it and what is
    expected (rclpy's own says ``Invalid access to undeclared parameter(s): []`` for an empty
    name)."""


class OutOfRangeError(RefusedSetError):
    """A set of a value outside the range of the parameter's descriptor, with the table's
    message (``command_timeout: expected a finite value in [1e-06, 3600], got 0.0``; rclpy's
    range check, which would refuse it first, says ``Parameter command_timeout out of range
    Min: ...``)."""


class WrongParameterTypeError(RefusedSetError):
    """A set of a value of the wrong type, ``'real_time_factor: expected a double, got 'fast'
    (a string)'`` as at start-up (rclpy's own says ``Wrong parameter type, expected '3' got
    '4'``: no name, no value, type codes)."""


#: Type names of the ``ParameterType`` constants (messages about parameters outside the table).
_TYPE_NAMES = {code: name for code, name in (*_TYPES.values(), *_ARRAY_TYPES.values())}


def wrong_type_message(name: str, descriptor: ParameterDescriptor, given: Parameter) -> str | None:
    """``'<name>: expected a bool, got 1.0 (a double)'`` when ``given`` is not of the static
    type of ``descriptor`` (for a parameter outside the table, e.g. rclpy's ``use_sim_time``),
    else None (dynamically typed, the right type, no value, or a type without a name here)."""
    expected = _TYPE_NAMES.get(descriptor.type)
    if (
        descriptor.dynamic_typing
        or expected is None
        or given.type_ in (Parameter.Type.NOT_SET, Parameter.Type(descriptor.type))
    ):
        return None
    value = plain(given.value)
    return f'{name}: expected {_article(expected)}, got {shown(value)} ({_kind_of(value)})'


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

        Parameters
        ----------
        values : mapping
            Parameter name -> value.

        Raises
        ------
        ParameterValueError
            Naming the first parameter at fault.
        """
        unknown = [name for name in values if name not in self._by_name]
        if unknown:
            raise ParameterValueError(self.unknown_message(unknown))
        out = {name: self._by_name[name].validate(value) for name, value in values.items()}
        if self.cross_check is not None and set(out) >= set(self._by_name):
            self.cross_check(out)
        return out

    def declare(self, node: Node, siblings: Sequence[ParameterTable] = ()) -> dict[str, Value]:
        """Declare every parameter on ``node`` and return the checked start-up values.

        A name given at start that the node does not declare (:meth:`unused_overrides`) is
        warned about with the closest real one (:meth:`unknown_message`), but for a parameter
        of a ``siblings`` table, said at info level: a parameter file shared by the nodes
        (``/**:``, also merged into each node's file by the launch files) gives each node the
        other's names, which the other applies.

        Parameters
        ----------
        node : Node
        siblings : sequence of ParameterTable
            The tables of the package's other nodes.

        Raises
        ------
        ParameterValueError
            A start-up value (default, YAML or override) the table rejects.
        """
        for spec in self.specs:
            _declare(node, spec)
        unused = self.unused_overrides(node)
        theirs = [name for name in unused if any(name in table for table in siblings)]
        if theirs:
            owners = ', '.join(t.node_name for t in siblings if any(n in t for n in theirs))
            node.get_logger().info(
                f'{self.node_name}: ignored {_listed(theirs[:NAMES_SHOWN], len(theirs))} '
                f'({"a parameter" if len(theirs) == 1 else "parameters"} of {owners})'
            )
        unknown = [name for name in unused if name not in theirs]
        if unknown:  # e.g. a misspelled key in a parameter file: rclpy ignores it silently
            node.get_logger().warning(self.unknown_message(unknown) + ': ignored')
        return self.validate(self.current(node))

    def unknown_message(self, names: Sequence[str]) -> str:
        """``'<node>: unknown parameters ... (did you mean ...?)'`` for ``names``."""
        hints = []
        for name in names[:NAMES_SHOWN]:
            close = difflib.get_close_matches(name, self.names, n=1, cutoff=0.75)
            shown_name = name if len(name) <= SHOWN_CHARS else shown(name)
            hints.append(f'{shown_name} (did you mean {close[0]}?)' if close else shown_name)
        return f'{self.node_name}: unknown parameters {_listed(hints, len(names))}'

    def undeclared_message(self, names: Sequence[str]) -> str:
        """``'<node>: expected a parameter the node declares (...), got 'x' (did you mean
        ...?)'`` for names a set request gave that the node has not declared."""
        got = []
        for name in names[:NAMES_SHOWN]:
            hint = name_problem(name)
            if hint is None:
                close = difflib.get_close_matches(name, self.names, n=1, cutoff=0.75)
                hint = f'did you mean {close[0]}?' if close else ''
            got.append(shown(name) + (f' ({hint})' if hint else ''))
        return (
            f'{self.node_name}: expected a parameter the node declares (ros2 param list shows '
            f'them), got {_listed(got, len(names))}'
        )

    def unused_overrides(self, node: Node) -> list[str]:
        """Names given to ``node`` at start (``--ros-args -p``, ``--params-file``, launch
        ``parameters``) that it has not declared, in order: rclpy keeps them without a word.
        ``qos_overrides.*`` (declared with their publishers) are not counted."""
        # rclpy keeps the overrides in Node._parameter_overrides (every distro since Dashing;
        # there is no public accessor)
        overrides = getattr(node, '_parameter_overrides', None) or {}
        return [
            name
            for name in overrides
            if not node.has_parameter(name) and not name.startswith('qos_overrides.')
        ]

    def current(self, node: Node) -> dict[str, Value]:
        """The node's current values of the table's parameters (unchecked)."""
        return {name: plain(node.get_parameter(name).value) for name in self.names}

    def watch(
        self,
        node: Node,
        apply: Callable[[dict[str, Value]], None],
        refuse: Callable[[Sequence[str], Mapping[str, Value]], str | None] | None = None,
    ) -> None:
        """Check run-time changes in an on-set callback; ``apply(changed)`` after they are set.

        Call after :meth:`declare` (the callbacks would otherwise run for the declarations).
        The node's ``set_parameters`` services are put behind
        :func:`~ffsim_ros.node_support.parameter_services.guard_parameter_services` (a
        malformed request is refused, not raised in the executor).

        A set of a name the node has not declared is refused naming it
        (:meth:`undeclared_message`): rclpy >= Iron runs the pre-set callback first, which
        raises :class:`UndeclaredParameterError` (rclpy's parameter services answer
        ``successful=False`` with its message; rclpy's own check named no name and let an
        empty name through, declaring it); the on-set callback also refuses a malformed name
        (:func:`name_problem`: an empty one) not declared, for rclpy < Iron. Names declared on
        the node but not in the table (``use_sim_time``, ``qos_overrides.*``, ...) are left
        to rclpy, but for the type of their value.

        A value of the wrong type (an integer for a double is converted) is refused by the
        pre-set callback (:meth:`_typed`: :class:`WrongParameterTypeError`, answered as
        above) with the message of a bad start-up value: ``real_time_factor: expected a
        double, got 'fast' (a string)``, ``use_sim_time: expected a bool, got 1.0 (a
        double)`` (rclpy < Iron: rclpy's ``Wrong parameter type, expected '3' got '4'``). A
        set naming a parameter twice (only an atomic one can: rclpy sets a non-atomic request
        one parameter at a time) is refused, ``<name>: given twice in one set`` (the check saw
        the last value only, ``/parameter_events`` announced each). A value outside the range
        of a descriptor (:meth:`ParameterSpec.descriptor`) is refused by the pre-set callback
        too (:class:`OutOfRangeError`), with the table's message, before rclpy's range check.

        Parameters
        ----------
        node : Node
        apply : callable
            Gets the checked new values of the table's parameters in one set (parameters of other
            origin, e.g. ``use_sim_time``, are left to rclpy).
        refuse : callable, optional
            ``refuse(changed names, checked values)``: the node's own run-time rule, the reason to
            refuse a set the checks passed (naming the parameter), or None.
        """
        post_set = getattr(node, 'add_post_set_parameters_callback', None)  # rclpy >= Iron
        pre_set = getattr(node, 'add_pre_set_parameters_callback', None)  # rclpy >= Iron

        def coerce(params: list) -> list:
            """Undeclared names are refused; integers given for doubles become doubles
            (before rclpy's type check); any other type is refused naming the parameter."""
            undeclared = [p.name for p in params if not node.has_parameter(p.name)]
            if undeclared:
                raise UndeclaredParameterError(undeclared, self.undeclared_message(undeclared))
            return [self._typed(node, p) for p in params]

        def on_set(params: list) -> SetParametersResult:
            malformed = [
                p.name
                for p in params
                if name_problem(p.name) is not None and not node.has_parameter(p.name)
            ]
            if malformed:
                return SetParametersResult(
                    successful=False, reason=self.undeclared_message(malformed)
                )
            seen: set[str] = set()
            for p in params:  # (an atomic set: the dict below would keep only the last)
                if p.name in seen:
                    return SetParametersResult(
                        successful=False, reason=f'{p.name}: given twice in one set'
                    )
                seen.add(p.name)
            changed = {p.name: p.value for p in params if p.name in self}
            if not changed:
                return SetParametersResult(successful=True)
            merged = self.current(node)
            merged.update(changed)
            try:
                checked = self.validate(merged)
            except ParameterValueError as exc:
                return SetParametersResult(successful=False, reason=str(exc))
            reason = refuse(list(changed), checked) if refuse is not None else None
            if reason is not None:
                return SetParametersResult(successful=False, reason=reason)
            if post_set is None:
                apply({name: checked[name] for name in changed})
            return SetParametersResult(successful=True)

        def after_set(params: list) -> None:
            changed = [p.name for p in params if p.name in self]
            if changed:
                checked = self.validate(self.current(node))
                apply({name: checked[name] for name in changed})

        if pre_set is not None:
            pre_set(coerce)
        node.add_on_set_parameters_callback(on_set)
        if post_set is not None:
            post_set(after_set)
        guard_parameter_services(node)

    def _typed(self, node: Node, given: Parameter) -> Parameter:
        """``given`` as the type of its parameter (pre-set): an integer for a double becomes
        the double; a value of another type raises :class:`WrongParameterTypeError` naming the
        parameter, the type and the value (for a parameter of the table the message of
        :meth:`ParameterSpec.coerce`, as at start-up; for another statically typed one,
        :func:`wrong_type_message`). A read-only parameter and a set without a value
        (``NOT_SET``: an undeclaration) are left to rclpy, which refuses them (read-only first,
        as rclpy and rclcpp check it before the type)."""
        descriptor = node.describe_parameter(given.name)
        if descriptor.read_only or given.type_ == Parameter.Type.NOT_SET:
            return given
        spec = self._by_name.get(given.name)
        if spec is None:
            message = wrong_type_message(given.name, descriptor, given)
            if message is not None:
                raise WrongParameterTypeError([given.name], message)
            return given
        try:
            value = spec.coerce(given.value)
        except ParameterValueError as exc:
            raise WrongParameterTypeError([given.name], str(exc)) from None
        if spec.bounds is not None:  # (before rclpy's range check, whose message is rclpy's)
            try:
                spec.validate(value)
            except ParameterValueError as exc:
                raise OutOfRangeError([given.name], str(exc)) from None
        return Parameter(given.name, Parameter.Type(spec.ros_type), value)

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


def _declare(node: Node, spec: ParameterSpec) -> None:
    """Declare ``spec`` on ``node`` with its static type, taking an integer for a double.

    The value given (override, YAML) is read first through a dynamically typed, writable
    probe declaration, which rclpy accepts whatever the type; the probe is undeclared and the
    parameter declared with the converted value and its real descriptor (``ignore_override``:
    the value is already the given one). rclpy stores an empty list (``[]``) as NOT SET, which
    a statically typed array cannot hold; the spec's check decides whether ``[]`` is accepted,
    and the stored value is then the default, which means the same (e.g. ``[0.0]`` for the
    joint vectors: all zero).

    Raises
    ------
    ParameterValueError
        A value of another type, or an empty list the check refuses, naming the parameter.
    """
    probe = ParameterDescriptor(name=spec.name, dynamic_typing=True)
    given = node.declare_parameter(spec.name, spec.default, probe).value
    node.undeclare_parameter(spec.name)
    value = spec.coerce(given)
    if isinstance(value, list) and not value:
        spec.validate(value)
        value = spec.default
    if spec.bounds is not None:  # (before rclpy's range check: the table's message)
        spec.validate(value)
    node.declare_parameter(spec.name, value, spec.descriptor(), ignore_override=True)


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
