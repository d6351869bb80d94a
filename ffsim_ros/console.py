"""The nodes' executables: each imports its node's module with shutdown signals held.

A node's module imports rclpy, NumPy, SciPy and the compiled kernels: 1-3 s before its
``main`` can install :class:`~ffsim_ros.node_support.common.ShutdownSignals`. A Ctrl-C (or a
SIGTERM) in that time used to end the process with a ``KeyboardInterrupt`` traceback and exit
status -2 -- under ``ros2 launch`` a terminal Ctrl-C reaches a node twice, so any launch
stopped while its nodes start. The installed executables ``simulator`` and
``reactionless_controller`` are plain scripts (``scripts/``) whose first statements install
handlers that record the signals, then call :func:`run_held`: the import is not interrupted
(a half-done import can leave a module cache behind), and the process then ends quietly with
status 0, as one stopped while spinning does, without starting the node. They are not
setuptools entry points: the wrapper generated for those (``ros2 run``'s executables under
colcon) imports ``importlib.metadata`` and scans every installed distribution first, about
1.5 s under a loaded launch, in which a Ctrl-C still gave the traceback. Only the standard
library is imported here.
"""

from __future__ import annotations

import importlib
import signal

#: The signals held during a node module's import.
HELD_SIGNALS = (signal.SIGINT, signal.SIGTERM)


def run_held(module: str, received: list[int], args: list[str] | None = None) -> int:
    """The node scripts' body (``scripts/<node>``): import ``module`` while the handlers the
    script installed first append SIGINT and SIGTERM to ``received``, then run its ``main``.

    Parameters
    ----------
    module : str
        Dotted name of the node's module (it has ``main(args) -> int``).
    received : list of int
        The signals received so far; the script's handlers append to it.
    args : list of str, optional
        Given to ``main`` (None: rclpy reads ``sys.argv``).

    Returns
    -------
    int
        The exit status: 0 without starting the node when a signal came before its ``main``
        (both signals then ignored: a launch forwards the terminal's Ctrl-C), else ``main``'s
        (run with Python's default handlers back, which ``main`` replaces with its own).
    """
    try:
        loaded = importlib.import_module(module)
    finally:
        stopping = bool(received)
        for signum, default in zip(HELD_SIGNALS, DEFAULT_HANDLERS, strict=True):
            signal.signal(signum, signal.SIG_IGN if stopping else default)
    if stopping:
        return 0
    return loaded.main(args)


#: Python's own handlers of :data:`HELD_SIGNALS`, put back before a node's ``main``.
DEFAULT_HANDLERS = (signal.default_int_handler, signal.SIG_DFL)
