"""Pose and Jacobian of a link frame [S0 eqs. 1, 5], for one state or a batch.

One state: the compiled entry point :func:`~.kernels.frames.e_link_frame`, called without
numba's dispatcher (:class:`~.direct.DirectEntry`); a batch: :func:`~.kernels.frames.b_link_frame`,
rows over all cores. Both run the same kinematics pass on each state, so a batch's rows are
the single calls' results to the bit.
"""

from __future__ import annotations

import numpy as np

from .direct import DirectEntry
from .inputs import ArrayLike, as_q_rows, batch_shape, check_model, is_batch
from .kernels.frames import b_link_frame, e_link_frame
from .model import Frame, Model

_FRAME = DirectEntry(e_link_frame)


#: The outputs :func:`~.kernels.frames.e_link_frame` is not asked for (read-only: never
#: written, having no entries).
_NO_POSE = np.empty(0)
_NO_POSE.setflags(write=False)
_NO_JACOBIAN = np.empty((0, 0))
_NO_JACOBIAN.setflags(write=False)


def _frame(model: Model, link: str) -> Frame:
    """``model.frame(link)``; a ``model`` that is not a :class:`Model` named."""
    try:
        return model.frame(link)
    except AttributeError:
        check_model(model)
        raise


def _one_state(model: Model, q: ArrayLike, frame: Frame, pose: np.ndarray, J: np.ndarray) -> None:
    """The pose ``[p; R row by row]`` into ``pose`` (12,) and the Jacobian into ``J`` (6, nv)
    of ``frame`` at one configuration ``q`` (either one empty: not asked for); a ``q`` of
    another size, layout or type converted (or refused, named) first."""
    _FRAME.on_configuration(model, q, frame.body, frame.rotation, frame.translation, pose, J)


def link_pose(model: Model, q: ArrayLike, link: str) -> tuple[np.ndarray, np.ndarray]:
    """Pose of a link frame in the inertial frame ([S0 eq. 1] for the end effector).

    Parameters
    ----------
    model : Model
    q : (nq,) ndarray
        Configuration [m, -, rad | m], base parts in the inertial frame.
    link : str

    Returns
    -------
    p : (3,) position of the link frame origin [m].
    R : (3, 3) orientation (link frame -> inertial frame).
    """
    pose = np.empty(12)
    _one_state(model, q, _frame(model, link), pose, _NO_JACOBIAN)
    return pose[:3], pose[3:].reshape(3, 3)


def link_jacobian(model: Model, q: ArrayLike, link: str) -> np.ndarray:
    """Jacobian ``[Js | Jm]`` of a link frame [S0 eq. 5].

    Parameters
    ----------
    model : Model
    q : (nq,) ndarray
        Configuration [m, -, rad | m], base parts in the inertial frame.
    link : str

    Returns
    -------
    (6, nv) ndarray
        Maps ``v`` to ``[linear velocity of the link frame origin; angular velocity]``,
        both in the inertial frame. Columns 0:6 (floating base) are ``Js`` (with the base
        velocity taken at the base CoM), the rest ``Jm``.
    """
    frame = _frame(model, link)
    J = np.empty((6, model.nv))
    _one_state(model, q, frame, _NO_POSE, J)
    return J


def link_pose_and_jacobian(
    model: Model, q: ArrayLike, link: str
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Pose and Jacobian of a link frame in one kinematics pass, for one state or a batch.

    What :func:`link_pose` and :func:`link_jacobian` give, for ``q`` (nq,) or (..., nq) with
    leading batch dimensions (the rows spread over all cores): what a task-space controller
    needs at each state of a batch.

    Parameters
    ----------
    model : Model
    q : (nq,) or (..., nq) ndarray
        Configuration [m, -, rad | m], base parts in the inertial frame.
    link : str

    Returns
    -------
    p : (..., 3) position of the link frame origin, inertial frame [m].
    R : (..., 3, 3) orientation (link frame -> inertial frame).
    J : (..., 6, nv) Jacobian ``[Js | Jm]`` [S0 eq. 5], rows ``[linear velocity of the link
        frame origin; angular velocity]``, inertial frame (as :func:`link_jacobian`).
    """
    frame = _frame(model, link)
    if not is_batch(q):  # (the compiled single-state pass: the same arithmetic as a row)
        pose, J = np.empty(12), np.empty((6, model.nv))
        _one_state(model, q, frame, pose, J)
        return pose[:3], pose[3:].reshape(3, 3), J
    lead = batch_shape(q)
    Q = as_q_rows(model, q, lead)
    p, R, J = b_link_frame(
        *model.packed,
        np.ascontiguousarray(Q),
        frame.body,
        np.array(frame.rotation),  # (writeable copies: the single-state pass's types, whose
        np.array(frame.translation),  # compiled frame placement then serves both)
    )
    return p.reshape(lead + (3,)), R.reshape(lead + (3, 3)), J.reshape(lead + (6, model.nv))
