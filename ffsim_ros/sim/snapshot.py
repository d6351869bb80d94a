"""The record of one instant of a simulation, :class:`Snapshot` (no ROS): what
:meth:`~ffsim_ros.sim.Engine.advance` and the engine's other operations return.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ffsim_ros.scene import SceneSnapshot


@dataclass(frozen=True)
class Snapshot:
    """One instant of a simulation (read-only arrays; world = the inertial frame).

    Attributes
    ----------
    step : int
        Simulated clock in physics steps; ``time_ns = step * dt_ns``.
    time_ns : int
        Simulated time [ns].
    q : (nq,) configuration ``[r0, Q0 (x, y, z, w), phi]`` (``r0``: the base CoM), as in
        :mod:`ffsim_ros.dynamics`.
    v : (nv,) velocity ``[V0, w0, phidot]``, world.
    effort : (n,) joint efforts applied over the last step [N m | N] (zeros after a jump).
    base_position : (3,) base *link frame* origin, world [m].
    base_orientation : (4,) base link orientation (x, y, z, w).
    base_linear_velocity : (3,) velocity of the base link origin, world [m/s].
    base_angular_velocity : (3,) base angular velocity, world [rad/s].
    momentum : (6,) ``[P; L_g]``: linear momentum and angular momentum about the system CoM,
        world [kg m/s, kg m^2/s] [S0 eqs. 9, 12-16] (with targets: of robot and targets
        together, about their common CoM).
    com : (3,) system CoM, world [m] (with targets: the common CoM).
    kinetic_energy : float
        ``1/2 v^T H v`` [J] (with targets: the total).
    paused : bool
    fault : str
        Why integration stopped ('' when it did not).
    world : SceneSnapshot or None
        Robot and targets (:mod:`ffsim_ros.scene`) when there are targets, else None.
    """

    step: int
    time_ns: int
    q: np.ndarray
    v: np.ndarray
    effort: np.ndarray
    base_position: np.ndarray
    base_orientation: np.ndarray
    base_linear_velocity: np.ndarray
    base_angular_velocity: np.ndarray
    momentum: np.ndarray
    com: np.ndarray
    kinetic_energy: float
    paused: bool
    fault: str
    world: SceneSnapshot | None = None

    @property
    def faulted(self) -> bool:
        """Whether integration is stopped by a fault."""
        return bool(self.fault)

    @property
    def time(self) -> float:
        """Simulated time [s]."""
        return self.time_ns * 1e-9
