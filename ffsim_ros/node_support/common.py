"""What both nodes share besides their parameters: errors, the robot loader, stamps, ``main``.

Nothing here imports a node; the nodes import this module (and
:mod:`ffsim_ros.node_support.parameters`).
"""

from __future__ import annotations

import sys
from collections.abc import Callable

import rclpy
from builtin_interfaces.msg import Time
from rclpy.executors import ExternalShutdownException
from rclpy.node import Node

import ffsim_ros.dynamics as D
from ffsim_ros.resources import sample_robot

#: Sample robot loaded when neither ``robot_description`` nor ``robot_file`` is set.
DEFAULT_ROBOT = 'ffsim_servicer_7dof'

#: Exit status of a node that cannot start with its parameters (the message names the one).
EXIT_INVALID_PARAMETER = 2
#: Exit status of a node whose worker thread failed (the message says how).
EXIT_FATAL = 1

NS_PER_S = 1_000_000_000


class ParameterValueError(ValueError):
    """A parameter value the node cannot run with; the message starts with the parameter name."""


class FatalNodeError(RuntimeError):
    """A node cannot go on (e.g. its physics thread failed): ``main`` exits with a message."""


def load_robot(robot_description: str, robot_file: str) -> tuple[D.Model, str]:
    """Model and URDF text from the ``robot_description`` / ``robot_file`` parameters.

    ``robot_description`` (URDF XML) wins; else ``robot_file`` (a path); else the sample robot
    :data:`DEFAULT_ROBOT`.

    Raises
    ------
    ParameterValueError
        An unreadable file or an invalid URDF, naming the parameter it came from.
    """
    text = robot_description
    source = 'robot_description'
    if not text:
        path = robot_file or str(sample_robot(DEFAULT_ROBOT))
        source = f'robot_file ({path})'
        try:
            with open(path, encoding='utf-8') as handle:
                text = handle.read()
        except OSError as exc:
            raise ParameterValueError(f'robot_file: cannot read {path!r}: {exc}') from None
    try:
        return D.load_urdf(text), text
    except (ValueError, NotImplementedError) as exc:
        raise ParameterValueError(f'{source}: invalid robot: {exc}') from None


def to_stamp(ns: int) -> Time:
    """``builtin_interfaces/Time`` of a time in integer nanoseconds (>= 0)."""
    return Time(sec=ns // NS_PER_S, nanosec=ns % NS_PER_S)


def stamp_ns(stamp: Time) -> int:
    """Integer nanoseconds of a ``builtin_interfaces/Time``."""
    return stamp.sec * NS_PER_S + stamp.nanosec


def run_node(factory: Callable[[], Node], label: str, args: list[str] | None = None) -> int:
    """``main`` of a node: init, build with ``factory``, spin, clean up; the exit status.

    Returns
    -------
    int
        0 after Ctrl-C or an external shutdown; :data:`EXIT_INVALID_PARAMETER` (2) when the
        node rejects a parameter at start-up; :data:`EXIT_FATAL` (1) on a
        :class:`FatalNodeError` raised while spinning. The reason goes to stderr, prefixed
        with ``label``.
    """
    rclpy.init(args=args)
    node = None
    code = 0
    try:
        node = factory()
        rclpy.spin(node)
    except ParameterValueError as exc:
        print(f'{label}: invalid parameter: {exc}', file=sys.stderr)
        code = EXIT_INVALID_PARAMETER
    except FatalNodeError as exc:
        print(f'{label}: {exc}', file=sys.stderr)
        code = EXIT_FATAL
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    finally:
        if node is not None:
            node.destroy_node()
        rclpy.try_shutdown()
    return code
