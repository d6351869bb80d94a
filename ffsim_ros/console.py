"""The nodes' console scripts: each imports its node's module with shutdown signals held.

A node's module imports rclpy, NumPy, SciPy and the compiled kernels: 1-3 s before its
``main`` can install :class:`~ffsim_ros.node_support.common.ShutdownSignals`. A Ctrl-C (or a
SIGTERM) in that time used to end the process with a ``KeyboardInterrupt`` traceback and exit
status -2 -- under ``ros2 launch`` a terminal Ctrl-C reaches a node twice, so any launch
stopped while its nodes start. Here the signals that arrive during the import are recorded
instead of interrupting it (a half-done import can leave a module cache behind), and the
process then ends quietly with status 0, as one stopped while spinning does, without starting
the node. Only the standard library is imported here.
"""

from __future__ import annotations

import importlib
import signal
from collections.abc import Callable
from types import ModuleType

#: The signals held during a node module's import.
HELD_SIGNALS = (signal.SIGINT, signal.SIGTERM)


def import_holding_signals(module: str) -> ModuleType | None:
    """Import ``module`` with SIGINT and SIGTERM recorded instead of acted on.

    Parameters
    ----------
    module : str
        Dotted name of the module to import.

    Returns
    -------
    module or None
        The module; None when one of :data:`HELD_SIGNALS` arrived during the import (the
        caller should exit without starting anything). The previous handlers are put back
        either way.
    """
    received: list[int] = []

    def record(signum: int, _frame: object) -> None:
        received.append(signum)

    previous = {signum: signal.signal(signum, record) for signum in HELD_SIGNALS}
    try:
        loaded = importlib.import_module(module)
    finally:
        if received:  # stopping: later signals (a launch forwards the terminal's) are ignored
            for signum in HELD_SIGNALS:
                signal.signal(signum, signal.SIG_IGN)
        else:
            for signum, handler in previous.items():
                signal.signal(signum, handler)
    return None if received else loaded


def _console_main(module: str) -> Callable[[list[str] | None], int]:
    def main(args: list[str] | None = None) -> int:
        loaded = import_holding_signals(module)
        if loaded is None:
            return 0
        return loaded.main(args)

    main.__doc__ = f'Console script: ``{module}.main`` once its module is imported.'
    return main


simulator = _console_main('ffsim_ros.simulator')
reactionless_controller = _console_main('ffsim_ros.reactionless_controller')
