"""Total spatial momentum about O [S0 eqs. 6-7] and kinetic energy [S0 eqs. 24-25]."""

from __future__ import annotations

import numpy as np

from ..jit import njit, njit_leaf
from .kinematics import joint_velocity
from .layout import ModelArrays
from .spatial import inertia_times, row6


@njit
def spatial_momentum(
    m: ModelArrays, v: np.ndarray, S: np.ndarray, mw: np.ndarray, hw: np.ndarray, Iw: np.ndarray
) -> np.ndarray:
    """``[P; L_O]`` = sum of body momenta about O [S0 eqs. 6-7].

    Parameters
    ----------
    m : ModelArrays
    v : (nv,) generalized velocity ``[V0, w0, phidot]`` (base CoM velocity and angular
        velocity, inertial frame) [m/s, rad/s, rad/s | m/s].
    S : (6, nv) joint motion subspaces at O, inertial frame (:func:`.kinematics.motion_subspace`).
    mw : (nb,) [kg];  hw : (nb, 3) first moments ``m_i c_i`` about O [kg m];  Iw : (nb, 3, 3)
        rotational inertias about O [kg m^2]: the bodies' spatial inertias, inertial frame
        (:func:`.kinematics.world_inertias`).

    Returns
    -------
    (6,) ndarray
        ``[P; L_O]``: linear momentum [kg m/s] and angular momentum about the inertial origin O
        [kg m^2/s], inertial frame.
    """
    nb = m.parent.shape[0]
    vel = np.zeros((nb, 6))
    out = np.zeros(6)
    for i in range(nb):
        k = m.parent[i]
        sv = joint_velocity(S, m.iv[i], m.nvj[i], v)
        for r in range(6):
            vel[i, r] = (vel[k, r] if k >= 0 else 0.0) + sv[r]
        h = inertia_times(mw[i], hw, Iw, i, row6(vel, i))
        for r in range(6):
            out[r] += h[r]
    return out


@njit
def momentum_and_energy(
    m: ModelArrays, v: np.ndarray, S: np.ndarray, mw: np.ndarray, hw: np.ndarray, Iw: np.ndarray
) -> tuple[np.ndarray, float]:
    """``[P; L_O]`` (6,) and the kinetic energy ``T = 1/2 sum V_i . (I_i V_i)`` [J] in one pass
    over the bodies (the same body velocities ``V_i`` as :func:`spatial_momentum`; arguments and
    units as there)."""
    nb = m.parent.shape[0]
    vel = np.zeros((nb, 6))
    out = np.zeros(6)
    energy = 0.0
    for i in range(nb):
        k = m.parent[i]
        sv = joint_velocity(S, m.iv[i], m.nvj[i], v)
        for r in range(6):
            vel[i, r] = (vel[k, r] if k >= 0 else 0.0) + sv[r]
        h = inertia_times(mw[i], hw, Iw, i, row6(vel, i))
        for r in range(6):
            out[r] += h[r]
            energy += vel[i, r] * h[r]
    return out, 0.5 * energy


@njit_leaf
def mass_center(mw: np.ndarray, hw: np.ndarray, com: np.ndarray) -> float:
    """The system CoM ``r_g = sum h_i / sum m_i`` (3,) [m] into ``com`` from the bodies'
    masses ``mw`` (nb,) [kg] and first moments about O ``hw`` (nb, 3) [kg m]
    (:func:`.kinematics.world_inertias`); returns the total mass [kg]."""
    mt = 0.0
    for r in range(3):
        com[r] = 0.0
    for i in range(mw.shape[0]):
        mt += mw[i]
        for r in range(3):
            com[r] += hw[i, r]
    for r in range(3):
        com[r] /= mt
    return mt
