"""Joint friction ``F_f`` [S0 eq. 41]: viscous damping plus regularized Coulomb friction."""

from __future__ import annotations

import numpy as np

from ..jit import njit_leaf
from .layout import ModelArrays


@njit_leaf
def joint_friction(m: ModelArrays, v: np.ndarray, out: np.ndarray) -> None:
    """Generalized friction forces F_f [S0 eq. 41]: viscous plus regularized Coulomb.

    ``F_f = -d qdot - f_c tanh(qdot / eps)`` with ``eps = 1e-3`` (rad/s or m/s), so the
    Coulomb term is smooth and the equations stay integrable by explicit methods.
    """
    for i in range(v.shape[0]):
        out[i] = -m.damping[i] * v[i] - m.friction[i] * np.tanh(v[i] / 1e-3)


@njit_leaf
def add_friction(m: ModelArrays, v: np.ndarray, out: np.ndarray, sign: float) -> None:
    """``out += sign F_f`` (:func:`joint_friction`; ``sign`` +1.0 or -1.0: the same bits as
    adding or subtracting the friction vector)."""
    for i in range(v.shape[0]):
        out[i] += sign * (-m.damping[i] * v[i] - m.friction[i] * np.tanh(v[i] / 1e-3))
