"""ROS names checked before rclpy sees them: target names of the simulator (a token of the
target's topics: the spawn service and the ``scenario`` parameter refuse a bad one by name),
topic and service names of the controller's capture (:func:`ros_name_problem`,
:func:`service_name`)."""

from __future__ import annotations

import re
from typing import Any

from rclpy.exceptions import NameValidationException
from rclpy.expand_topic_name import expand_topic_name
from rclpy.validate_full_topic_name import validate_full_topic_name
from rclpy.validate_topic_name import validate_topic_name

from .parameters import Check, string

#: Longest fully qualified ROS topic name (rmw's ``RMW_TOPIC_MAX_NAME_LENGTH``, 255 - 8); the
#: decision is rclpy's validator, this bound only words its refusal.
MAX_TOPIC_LENGTH = 247
#: The topics of a target, relative to the simulator's namespace (``{name}``: its name).
TARGET_TOPICS = ('targets/{name}/odom',)
#: A target name: a token of a ROS topic name (ASCII letters, digits, underscores; no digit
#: first).
_TARGET_NAME = re.compile(r'[A-Za-z_][A-Za-z0-9_]*')


def _brief(text: str, keep: int = 60) -> str:
    """``repr(text)``, cut to ``keep`` characters (its length said) when longer."""
    if len(text) <= keep:
        return repr(text)
    return f'{text[:keep]!r}... ({len(text)} characters)'


def target_topics(name: str) -> tuple[str, ...]:
    """The topics the simulator creates for target ``name``, relative to its namespace.

    Parameters
    ----------
    name : str
        The target's name.

    Returns
    -------
    tuple of str
        :data:`TARGET_TOPICS` for ``name``: ``('targets/<name>/odom',)``.
    """
    return tuple(template.format(name=name) for template in TARGET_TOPICS)


def target_name_problem(name: str, namespace: str = '/') -> str | None:
    """Why ``name`` cannot name a target of a simulator in ``namespace``, or None if it can.

    A target's name is a token of its topics (:data:`TARGET_TOPICS`), so it must be one: ASCII
    letters, digits and underscores, not starting with a digit (no ``-``, space, ``/``, ``~``
    or ``{}`` substitution), and the topics, expanded in ``namespace``, must be valid ROS topic
    names. rclpy's own validator (``validate_full_topic_name``) decides the latter, which
    bounds their length to :data:`MAX_TOPIC_LENGTH` characters: at most 233 characters of
    name in the root namespace (``/targets/<name>/odom``), fewer in a longer one.

    Parameters
    ----------
    name : str
        The name asked for (a ``SpawnEntity`` request's, or a scenario target's).
    namespace : str
        The simulator node's namespace (``node.get_namespace()``): a valid ROS namespace.

    Returns
    -------
    str or None
        The problem, ``name: expected ..., got <the name>`` (the name cut beyond 60
        characters, its length said), or None.

    Examples
    --------
    >>> target_name_problem('ball_1') is None
    True
    >>> print(target_name_problem('ball-1'))
    name: expected ASCII letters, digits and underscores, not starting with a digit, at most \
233 characters (a token of the topic targets/<name>/odom in namespace '/', at most 247 \
characters in all), got 'ball-1'
    """
    base = len(namespace.rstrip('/')) + 1  # the namespace and the slash after it
    shown = TARGET_TOPICS[0].format(name='<name>')
    most = MAX_TOPIC_LENGTH - base - max(len(t.format(name='')) for t in TARGET_TOPICS)
    allowed = (
        f'ASCII letters, digits and underscores, not starting with a digit, at most {most} '
        f'characters (a token of the topic {shown} in namespace {namespace!r}, at most '
        f'{MAX_TOPIC_LENGTH} characters in all)'
    )
    if not isinstance(name, str) or not name:
        return f'name: expected {allowed}, got {name!r}'
    if _TARGET_NAME.fullmatch(name) is None or len(name) > most:
        return f'name: expected {allowed}, got {_brief(name)}'
    for topic in target_topics(name):  # rclpy's word on the topics made
        try:
            validate_full_topic_name(expand_topic_name(topic, 'ffsim_simulator', namespace))
        except (NameValidationException, ValueError) as exc:
            reason = str(exc).splitlines()[0]
            return f'name: expected {allowed}, got {_brief(name)} ({reason})'
    return None


__all__ = ['MAX_TOPIC_LENGTH', 'TARGET_TOPICS', 'target_name_problem', 'target_topics']


#: The node name ``~`` and ``{node}`` expand to when a name is checked (any valid node name
#: gives the same verdict; the namespace is the root).
CHECK_NODE_NAME = 'ffsim_reactionless_controller'


def ros_name_problem(name: str, *, service: bool = False) -> str | None:
    """Why ``name`` is not a valid ROS topic (``service``: service) name, relative or
    absolute, as rclpy validates it when an entity is made; None when it is valid.

    Checked as given (rclpy's ``validate_topic_name``: characters, empty tokens, a token
    starting with a digit, ...) and once expanded for a node in the root namespace
    (``validate_full_topic_name``: ``~``, ``{node}``, unknown substitutions).

    Parameters
    ----------
    name : str
    service : bool
        Validate as a service name.

    Returns
    -------
    str or None
    """
    try:
        validate_topic_name(name, is_service=service)
        expanded = expand_topic_name(name, CHECK_NODE_NAME, '/')
        validate_full_topic_name(expanded, is_service=service)
    except (NameValidationException, ValueError) as exc:
        # the first line, without the kind (said by the caller) nor rcl's source location
        # (rclpy adds a caret line below)
        text = str(exc).splitlines()[0].rstrip(':')
        return re.sub(r'^Invalid (topic|service) name: |, at \S+:\d+$', '', text)
    return None


def service_name(max_bytes: int = 255) -> Check:
    """A parameter check: a ROS service name of at most ``max_bytes`` bytes, relative or
    absolute (:func:`ros_name_problem`).

    Parameters
    ----------
    max_bytes : int

    Returns
    -------
    Check
    """
    size = string(max_bytes)
    what = 'a ROS service name (letters, digits, _ / ~ {}; tokens not starting with a digit)'

    def test(value: Any) -> str:
        value = size.test(value)
        problem = ros_name_problem(value, service=True)
        if problem is not None:
            raise ValueError(f'expected {what}, got {value!r} ({problem})')
        return value

    return Check(f'{what}, {size.text}', test)
