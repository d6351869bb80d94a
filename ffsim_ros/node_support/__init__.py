"""Helpers shared by the nodes (``simulator``, ``reactionless_controller``); no node here.

:mod:`.common`: errors, the robot loader, stamps, ``main``; :mod:`.parameters`: parameter
tables (declarations, descriptors, checks, run-time changes, the README/YAML reference).
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
    TopicsInlineExecutor,
    destroy_on_failure,
    load_robot,
    read_robot_file,
    run_node,
    stamp_ns,
    to_stamp,
)
from .parameters import (
    Check,
    ParameterSpec,
    ParameterTable,
    count,
    finite_values,
    frame_id,
    interval,
    one_of,
    robot_source_specs,
    string,
    unit_quaternion,
    vector,
    zero_or_interval,
)

__all__ = [
    'Check',
    'DEFAULT_ROBOT',
    'EXIT_FATAL',
    'EXIT_INVALID_PARAMETER',
    'FatalNodeError',
    'LogThrottle',
    'MAX_ROBOT_BYTES',
    'ParameterSpec',
    'ParameterTable',
    'ParameterValueError',
    'GuardedSingleThreadedExecutor',
    'TopicsInlineExecutor',
    'count',
    'destroy_on_failure',
    'finite_values',
    'frame_id',
    'interval',
    'load_robot',
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
