"""Joint type codes, the model's flat arrays, and their packing for the entry points.

Calling a compiled function with a named tuple of 15 arrays costs ~2.5 us of argument
unboxing; two flat arrays cost ~0.3 us. Entry points therefore take the model packed into
``idata`` (int64) and ``fdata`` (float64) and rebuild the :class:`ModelArrays` views inside
(:func:`unpack`).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..jit import borrow, carve, njit_leaf

# Joint type codes (ModelArrays.jtype).
ROOT_FIXED = 0
ROOT_FREE = 1
REVOLUTE = 2
PRISMATIC = 3
SPHERICAL = 4  # ball joint: unit quaternion (x, y, z, w) in q, child-frame angular velocity in v
UNIVERSAL = 5  # two revolutes, about ``axis`` (fixed in the parent) then ``axis2`` (in the child)

#: Length of the header of ``idata``: ``[nb, nv, 10 float offsets, nq, n, unused...]``.
IHEAD = 16


class ModelArrays(NamedTuple):
    """Flat arrays of a :class:`~ffsim_ros.dynamics.model.Model` consumed by the kernels.

    ``nb`` is the number of bodies (base included), ``nv`` the velocity dimension.
    """

    jtype: np.ndarray  #: (nb,) int64 joint type code of the joint into each body
    parent: np.ndarray  #: (nb,) int64 parent body index, -1 for the base
    iq: np.ndarray  #: (nb,) int64 first configuration index of the joint
    iv: np.ndarray  #: (nb,) int64 first velocity index of the joint
    nvj: np.ndarray  #: (nb,) int64 joint velocity dimension
    rot: np.ndarray  #: (nb, 3, 3) joint frame orientation in the parent body frame
    trans: np.ndarray  #: (nb, 3) joint frame origin in the parent body frame [m]
    axis: np.ndarray  #: (nb, 3) unit joint axis in the joint (= child body) frame
    mass: np.ndarray  #: (nb,) body mass [kg]
    com: np.ndarray  #: (nb, 3) body CoM in the body frame [m]
    inertia: np.ndarray  #: (nb, 3, 3) inertia about the CoM, body frame [kg m^2]
    gravity: np.ndarray  #: (3,) gravitational acceleration, inertial frame [m/s^2]
    damping: np.ndarray  #: (nv,) viscous joint damping (0 for base DoFs) [N m s/rad | N s/m]
    friction: np.ndarray  #: (nv,) Coulomb joint friction (0 for base DoFs) [N m | N]
    axis2: np.ndarray  #: (nb, 3) second unit axis of a universal joint, joint frame at q = 0


def pack(a: ModelArrays) -> tuple[np.ndarray, np.ndarray]:
    """Pack ``a`` into ``(idata, fdata)`` for the ``e_*`` entry points.

    Layout: ``idata = [nb, nv, <float offsets x 10>, nq, n, 0, 0, jtype, parent, iq, iv,
    nvj]`` (``n`` the joint DoFs, ``nv`` less the root's; the entry points check their
    vectors' sizes against ``nq``, ``nv`` and ``n``) and
    ``fdata = [rot, trans, axis, mass, com, inertia, gravity, damping, friction, axis2]``.
    """
    nb = a.parent.shape[0]
    nv = a.damping.shape[0]
    floats = [
        a.rot,
        a.trans,
        a.axis,
        a.mass,
        a.com,
        a.inertia,
        a.gravity,
        a.damping,
        a.friction,
        a.axis2,
    ]
    offsets = np.cumsum([0] + [f.size for f in floats])
    idata = np.zeros(IHEAD + 5 * nb, dtype=np.int64)
    idata[0] = nb
    idata[1] = nv
    idata[2:12] = offsets[:10]
    # a free root and a ball joint carry a quaternion: one coordinate more than their DoFs
    idata[12] = nv + int(np.count_nonzero((a.jtype == ROOT_FREE) | (a.jtype == SPHERICAL)))
    idata[13] = nv - int(a.nvj[a.parent < 0].sum())
    ints = np.concatenate([a.jtype, a.parent, a.iq, a.iv, a.nvj]).astype(np.int64)
    idata[IHEAD:] = ints
    fdata = np.concatenate([np.ravel(f) for f in floats]).astype(np.float64)
    idata.setflags(write=False)
    fdata.setflags(write=False)
    return idata, fdata


@njit_leaf
def unpack(idata: np.ndarray, fdata: np.ndarray) -> ModelArrays:
    """Views of a packed model as :class:`ModelArrays` (no copies), borrowed
    (:func:`~ffsim_ros.dynamics.jit.borrow`: the caller's model keeps the packed arrays alive
    for the call, and no kernel returns a model array): passing them down the calls costs no
    reference counting."""
    idata = borrow(idata)
    fdata = borrow(fdata)
    nb = idata[0]
    nv = idata[1]
    o = idata[2:12]
    h = IHEAD
    return ModelArrays(
        idata[h : h + nb],
        idata[h + nb : h + 2 * nb],
        idata[h + 2 * nb : h + 3 * nb],
        idata[h + 3 * nb : h + 4 * nb],
        idata[h + 4 * nb : h + 5 * nb],
        carve(fdata, o[0], (nb, 3, 3)),
        carve(fdata, o[1], (nb, 3)),
        carve(fdata, o[2], (nb, 3)),
        fdata[o[3] : o[3] + nb],
        carve(fdata, o[4], (nb, 3)),
        carve(fdata, o[5], (nb, 3, 3)),
        fdata[o[6] : o[6] + 3],
        fdata[o[7] : o[7] + nv],
        fdata[o[8] : o[8] + nv],
        carve(fdata, o[9], (nb, 3)),
    )


@njit_leaf
def plain_vector(x: np.ndarray, n: int) -> bool:
    """Whether the vector ``x`` has ``n`` entries one item apart: the layout the per-call entry
    points are compiled for (C-contiguous), which their native entry point, called without
    numba's dispatcher, does not check. The Python fast paths check each vector's class,
    dtype and dimension (:func:`~ffsim_ros.dynamics.inputs.plain_vectors`); the size and
    the stride are checked here, in compiled code, for free. A strided or reversed view has
    the same compiled type: it is refused before any entry is read."""
    return x.shape[0] == n and (n == 0 or x.strides[0] == x.itemsize)
