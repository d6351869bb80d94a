"""What the commands need beyond the ROS-free engine, checked before they write anything.

A pip install without ROS runs the engine and ``ffsim campaign``; the demos and a campaign
run's replay into ROS 2 messages (``--replay RUN --mcap PATH``) need rclpy and the message
packages (a sourced ROS 2 install, or the venv ``make setup`` builds), the MCAP writer and,
for their plots, matplotlib. :func:`check` imports what a command needs (:data:`NEEDS`) and
names everything missing in one line, with where to get it: without it they stopped with a
``ModuleNotFoundError`` traceback, the replay after writing its ``run_<RUN>.npz``.
Only the standard library is imported here.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterable

#: The modules the MCAP writer (:mod:`ffsim_ros.recording`) imports: the message definitions
#: come from the ament index.
_RECORDING = ('rclpy', 'ament_index_python', 'mcap')
#: The message packages the simulator's state builders import (``StateMessages``).
_STATE_MESSAGES = (
    'builtin_interfaces',
    'geometry_msgs',
    'nav_msgs',
    'rcl_interfaces',
    'rosgraph_msgs',
    'sensor_msgs',
    'std_msgs',
    'tf2_msgs',
    'visualization_msgs',
)
#: What each command needs: ``name -> (description, modules)``; the modules are imported in
#: order (top-level names first, so that all of them are named; then the package's modules
#: that import them, which name anything the list lacks). test/test_dependencies.py checks
#: that the lists hold every third-party import of those modules (and, for the reach demo,
#: of the two nodes it starts).
NEEDS: dict[str, tuple[str, tuple[str, ...]]] = {
    'reach demo': (
        'the reach demo (simulator and controller nodes over DDS, MCAP, plots)',
        (
            *_RECORDING,
            *_STATE_MESSAGES,
            'control_msgs',
            'diagnostic_msgs',
            'simulation_interfaces',
            'std_srvs',
            'trajectory_msgs',
            'matplotlib',
            'ffsim_ros.recording',  # (the nodes' modules not imported: 4 s; the test covers them)
        ),
    ),
    'capture demo': (
        'the capture demo (MCAP of ROS 2 messages, plots)',
        (*_RECORDING, *_STATE_MESSAGES, 'diagnostic_msgs', 'matplotlib', 'ffsim_ros.capture_demo'),
    ),
    'replay': (
        "writing the replay's ROS 2 messages",
        (*_RECORDING, *_STATE_MESSAGES, 'ffsim_ros.campaign.replay'),
    ),
}
#: Missing modules a pip install provides: top-level name -> what to install.
PIP_HINTS = {
    'matplotlib': "pip install 'ffsim_ros[plots]'",
    'mcap': 'pip install mcap',
    'numpy': "pip install 'ffsim_ros[engine]'",
    'scipy': "pip install 'ffsim_ros[engine]'",
    'numba': "pip install 'ffsim_ros[engine]'",
    'coal': "pip install 'ffsim_ros[engine]'",
    'yaml': "pip install 'ffsim_ros[engine]'",
}
#: Where the others (rclpy, the message packages, the ament index) come from.
ROS_HINT = 'source a ROS 2 install, e.g. /opt/ros/<distro>/setup.bash, or use `make setup`'


class MissingModules(ImportError):
    """Modules a command needs that cannot be imported (:func:`check`).

    Parameters
    ----------
    what : str
        The command's description.
    names : list of str
        The top-level names of the missing modules.
    """

    def __init__(self, what: str, names: list[str]) -> None:
        self.names = list(names)
        ros = [n for n in names if n not in PIP_HINTS]
        parts = [f'ROS 2 packages {", ".join(ros)} ({ROS_HINT})'] if ros else []
        hints: dict[str, list[str]] = {}
        for name in names:
            if name in PIP_HINTS:
                hints.setdefault(PIP_HINTS[name], []).append(name)
        parts += [f'{", ".join(found)} ({hint})' for hint, found in hints.items()]
        super().__init__(f'{what} needs what is not installed here: {"; ".join(parts)}')


def missing(modules: Iterable[str]) -> list[str]:
    """The top-level names of ``modules`` (or of what they import) that cannot be imported,
    in order, each once.

    Parameters
    ----------
    modules : iterable of str
        Dotted module names.

    Returns
    -------
    list of str

    Raises
    ------
    ImportError
        A module of this package fails to import with nothing else missing (a broken
        install: its traceback).
    """
    names: list[str] = []
    for module in modules:
        top = module.split('.')[0]
        if top in names:
            continue
        try:
            importlib.import_module(module)
        except ImportError as exc:  # missing, or found but not loadable (a library missing)
            gone = (exc.name or '').split('.')[0]
            if gone in ('', 'ffsim_ros'):
                if top != 'ffsim_ros':
                    gone = top
                elif names:  # (what is named already stopped it)
                    continue
                else:
                    raise
            if gone not in names:
                names.append(gone)
    return names


def check(need: str) -> None:
    """Import what the command ``need`` (a key of :data:`NEEDS`) needs.

    Parameters
    ----------
    need : str

    Raises
    ------
    MissingModules
        Naming every module missing and where to get it, in one line.
    """
    what, modules = NEEDS[need]
    names = missing(modules)
    if names:
        raise MissingModules(what, names)


def require(prog: str, need: str) -> None:
    """:func:`check`, or one line ``<prog>: error: ...`` on stderr and exit status 2.

    Parameters
    ----------
    prog : str
        The command (``ffsim demo``).
    need : str
        A key of :data:`NEEDS`.
    """
    try:
        check(need)
    except MissingModules as exc:
        print(f'{prog}: error: {exc}', file=sys.stderr)
        raise SystemExit(2) from None
