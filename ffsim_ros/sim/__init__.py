"""ROS-free simulation engine: state, inputs and the simulated clock around the dynamics core.

:class:`Engine` steps a free-floating robot under held inputs and returns immutable
:class:`Snapshot` records; the simulator node (:mod:`ffsim_ros.simulator`) wraps it in ROS I/O,
tests and batch runs drive it directly.
"""

from .commands import (
    WRENCH_FRAMES,
    EffortCommands,
    ExternalWrenches,
    NonFiniteError,
    WrongSizeError,
    check_efforts,
    check_wrench,
)
from .engine import DYNAMICS_ERRORS, Engine, EngineFault, Snapshot
from .limits import JointLimits
from .pacing import Pacer, RateMeter
from .watchdog import Health, Watchdog
from .world import TargetWorld, WorldStepError, WorldTotals

__all__ = [
    'DYNAMICS_ERRORS',
    'EffortCommands',
    'Engine',
    'EngineFault',
    'ExternalWrenches',
    'Health',
    'JointLimits',
    'NonFiniteError',
    'Pacer',
    'RateMeter',
    'Snapshot',
    'TargetWorld',
    'WRENCH_FRAMES',
    'check_efforts',
    'check_wrench',
    'Watchdog',
    'WorldStepError',
    'WorldTotals',
    'WrongSizeError',
]
