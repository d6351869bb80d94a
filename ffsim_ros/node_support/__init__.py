"""Helpers shared by the nodes (``simulator``, ``reactionless_controller``); no node here.

:mod:`.common`: errors, the robot loader, stamps, ``main``; :mod:`.parameters`: parameter
tables (declarations, descriptors, checks, run-time changes, the README/YAML reference).
"""

from .common import (
    DEFAULT_ROBOT,
    EXIT_FATAL,
    EXIT_INVALID_PARAMETER,
    FatalNodeError,
    ParameterValueError,
    load_robot,
    run_node,
    stamp_ns,
    to_stamp,
)
from .parameters import (
    Check,
    ParameterSpec,
    ParameterTable,
    finite_values,
    interval,
    one_of,
    vector,
)

__all__ = [
    'Check',
    'DEFAULT_ROBOT',
    'EXIT_FATAL',
    'EXIT_INVALID_PARAMETER',
    'FatalNodeError',
    'ParameterSpec',
    'ParameterTable',
    'ParameterValueError',
    'finite_values',
    'interval',
    'load_robot',
    'one_of',
    'run_node',
    'stamp_ns',
    'to_stamp',
    'vector',
]
