"""Helpers shared by the nodes (``simulator``, ``reactionless_controller``); no node here.

:mod:`.common`: errors, the robot loader, stamps, ``main``; :mod:`.parameters`: parameter
tables (declarations, descriptors, checks, run-time changes, the README/YAML reference);
:mod:`.robot_parameters`: the robot-source parameters of both tables;
:mod:`.parameter_services`: rclpy's parameter services guarded against malformed requests.
"""

from .common import (
    DEFAULT_ROBOT,
    EXIT_FATAL,
    EXIT_INVALID_PARAMETER,
    MAX_ROBOT_BYTES,
    FatalNodeError,
    GuardedSingleThreadedExecutor,
    LogThrottle,
    ParameterValueError,
    QuitRequested,
    TopicsInlineExecutor,
    clock_publishers,
    clock_topic,
    destroy_on_failure,
    load_robot,
    read_robot_file,
    run_node,
    stamp_ns,
    to_stamp,
)
from .parameters import (
    Check,
    OutOfRangeError,
    ParameterSpec,
    ParameterTable,
    UndeclaredParameterError,
    count,
    finite_values,
    frame_id,
    interval,
    name_problem,
    one_of,
    string,
    unit_quaternion,
    vector,
    zero_or_interval,
)
from .robot_parameters import robot_source_specs

__all__ = [
    'Check',
    'DEFAULT_ROBOT',
    'EXIT_FATAL',
    'EXIT_INVALID_PARAMETER',
    'FatalNodeError',
    'QuitRequested',
    'LogThrottle',
    'MAX_ROBOT_BYTES',
    'OutOfRangeError',
    'ParameterSpec',
    'ParameterTable',
    'ParameterValueError',
    'UndeclaredParameterError',
    'GuardedSingleThreadedExecutor',
    'TopicsInlineExecutor',
    'clock_publishers',
    'clock_topic',
    'count',
    'destroy_on_failure',
    'finite_values',
    'frame_id',
    'interval',
    'load_robot',
    'name_problem',
    'one_of',
    'robot_source_specs',
    'read_robot_file',
    'run_node',
    'stamp_ns',
    'to_stamp',
    'string',
    'unit_quaternion',
    'vector',
    'zero_or_interval',
]
