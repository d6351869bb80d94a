"""All rotation and Lie-group math of ffsim_ros, in one module.

Conventions used everywhere in the package:

* quaternions are ``(x, y, z, w)`` (ROS order), Hamilton product, ``R(q) p`` rotates a vector
  of the rotated frame into the reference frame;
* a rotation vector ``r = angle * axis`` [rad]; ``exp``/``log`` map between rotation vectors
  and unit quaternions or matrices, with the angle of ``log`` in ``[0, pi]``;
* the base attitude of a floating base turns by *left* multiplication with its inertial-frame
  angular velocity (``Q <- exp(w0 dt) Q``), a ball joint by *right* multiplication with its
  child-frame angular velocity (``Q <- Q exp(w dt)``) [S0 eq. 22] [M sec. 3.1].

Two layers share the formulas:

* scalar kernels on tuples of floats (``qmul``, ``qconj``, ``qexp``, ``qlog``,
  ``qfrom_matrix``, ``so3_chart_rate``) and
  in-place writers on stacks of matrices (``quat_to_matrix_into``, ``axis_angle_into``),
  compiled with numba and inlined into the recursive algorithms of :mod:`.kernels`;
* array functions for the rest of the package (``quat_to_matrix``, ``matrix_to_quat``,
  ``quat_multiply``, ``quat_log``, ``matrix_log``, ``skew``, ``rpy_to_matrix``, ...), which call
  the scalar kernels where one exists; every check that a quaternion is one (``quat_unit``) or
  a matrix a rotation (``is_rotation``, ``are_rotations``) is here too.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .jit import njit_leaf

ArrayLike = Sequence[float] | np.ndarray

#: Below this angle [rad] the series expansions of sin(t)/t and friends are used.
SMALL_ANGLE = 1e-8


# ----------------------------------------------------------------------------------------------
# scalar kernels (numba-compatible; tuples in, tuples out)
# ----------------------------------------------------------------------------------------------


@njit_leaf
def qmul(a: tuple, b: tuple) -> tuple:
    """Hamilton product ``a * b`` of two quaternions ``(x, y, z, w)`` (4-tuples).

    Parameters
    ----------
    a, b : (4,) tuple of float
        Quaternions ``(x, y, z, w)`` [-]; for unit ones, ``R(a * b) = R(a) R(b)`` (``b`` the
        orientation of a frame in the frame whose orientation is ``a``).

    Returns
    -------
    (4,) tuple of float
        ``a * b`` [-], not normalized.
    """
    ax, ay, az, aw = a
    bx, by, bz, bw = b
    return (
        aw * bx + ax * bw + ay * bz - az * by,
        aw * by - ax * bz + ay * bw + az * bx,
        aw * bz + ax * by - ay * bx + az * bw,
        aw * bw - ax * bx - ay * by - az * bz,
    )


@njit_leaf
def qconj(a: tuple) -> tuple:
    """Conjugate ``(-x, -y, -z, w)`` of a quaternion 4-tuple ``(x, y, z, w)``: the inverse of a
    unit quaternion (exact: only signs change).

    Parameters
    ----------
    a : (4,) tuple of float
        Quaternion ``(x, y, z, w)`` [-].

    Returns
    -------
    (4,) tuple of float
        ``(-x, -y, -z, w)`` [-].
    """
    return (-a[0], -a[1], -a[2], a[3])


@njit_leaf
def qnormalize(a: tuple) -> tuple:
    """``a / |a|`` for a quaternion 4-tuple (no check of a zero norm: callers guarantee it).

    Where the squared norm would overflow or fall among the subnormal numbers (components
    beyond about 1e150 or under 1e-150), ``a`` is first divided by its largest component:
    the result is then as exact as for a quaternion of norm near 1 (a 1e-160 quaternion came
    out of a step with a norm of 1.0000056, a 1e160 one failed as a division by zero).

    Parameters
    ----------
    a : (4,) tuple of float
        Quaternion ``(x, y, z, w)`` [-], finite and non-zero.

    Returns
    -------
    (4,) tuple of float
        The unit quaternion ``a / |a|`` [-].
    """
    n2 = a[0] * a[0] + a[1] * a[1] + a[2] * a[2] + a[3] * a[3]
    if not (1e-300 <= n2 <= 1e300):
        s = max(max(abs(a[0]), abs(a[1])), max(abs(a[2]), abs(a[3])))
        if s > 0.0 and s < np.inf:
            a = (a[0] / s, a[1] / s, a[2] / s, a[3] / s)
            n2 = a[0] * a[0] + a[1] * a[1] + a[2] * a[2] + a[3] * a[3]
    n = np.sqrt(n2)
    return (a[0] / n, a[1] / n, a[2] / n, a[3] / n)


@njit_leaf
def qexp(rx: float, ry: float, rz: float) -> tuple:
    """Unit quaternion ``exp(r)`` of the rotation vector ``r = (rx, ry, rz)`` [rad].

    Parameters
    ----------
    rx, ry, rz : float
        Components of the rotation vector ``r = angle * axis`` [rad]; the quaternion is
        expressed in the frame ``r`` is given in.

    Returns
    -------
    (4,) tuple of float
        ``(x, y, z, w)`` [-], ``w = cos(|r|/2) >= 0`` for ``|r| <= pi``.
    """
    th = np.sqrt(rx * rx + ry * ry + rz * rz)
    if th < SMALL_ANGLE:
        sc = 0.5 - th * th / 48.0  # sin(th/2)/th
    else:
        sc = np.sin(0.5 * th) / th
    return (rx * sc, ry * sc, rz * sc, np.cos(0.5 * th))


@njit_leaf
def qlog(x: float, y: float, z: float, w: float) -> tuple:
    """Rotation vector (3-tuple, angle in ``[0, pi]``) of the quaternion ``(x, y, z, w)``,
    normalized here (the sign of ``w`` is chosen so that the angle is the shorter one).

    Parameters
    ----------
    x, y, z, w : float
        Components of a non-zero quaternion [-] (any norm).

    Returns
    -------
    (3,) tuple of float
        ``angle * axis`` [rad], in the frame of the quaternion's vector part.
    """
    if w < 0.0:
        x, y, z, w = -x, -y, -z, -w
    s = np.sqrt(x * x + y * y + z * z)
    if s < 1e-12:
        n = np.sqrt(s * s + w * w)
        scale = 2.0 / n  # angle / sin(angle/2) -> 2 as the angle -> 0
    else:
        scale = 2.0 * np.arctan2(s, w) / s
    return (scale * x, scale * y, scale * z)


@njit_leaf
def qfrom_matrix(E: np.ndarray) -> tuple:
    """Quaternion ``(x, y, z, w)`` (4-tuple, not normalized, either sign) of the rotation
    matrix ``E`` (3, 3), by Shepperd's method (the largest of trace and diagonal first).

    Parameters
    ----------
    E : (3, 3) ndarray
        Rotation matrix [-] (a frame's axes in its reference frame, as columns).

    Returns
    -------
    (4,) tuple of float
        ``(x, y, z, w)`` [-] with ``R(q) = E``, of norm 1 up to rounding, either sign.
    """
    tr = E[0, 0] + E[1, 1] + E[2, 2]
    if tr > 0.0:
        s = 2.0 * np.sqrt(1.0 + tr)
        return ((E[2, 1] - E[1, 2]) / s, (E[0, 2] - E[2, 0]) / s, (E[1, 0] - E[0, 1]) / s, s / 4)
    i = 0
    if E[1, 1] > E[i, i]:
        i = 1
    if E[2, 2] > E[i, i]:
        i = 2
    j = (i + 1) % 3
    k = (i + 2) % 3
    s = 2.0 * np.sqrt(1.0 + E[i, i] - E[j, j] - E[k, k])
    q = [0.0, 0.0, 0.0, (E[k, j] - E[j, k]) / s]
    q[i] = s / 4
    q[j] = (E[j, i] + E[i, j]) / s
    q[k] = (E[k, i] + E[i, k]) / s
    return (q[0], q[1], q[2], q[3])


@njit_leaf
def so3_chart_rate(
    tx: float, ty: float, tz: float, wx: float, wy: float, wz: float, half: float
) -> tuple:
    """Rate of the exponential coordinates ``theta`` of SO(3) under the angular velocity ``w``.

    ``half = -0.5``: ``J_l(theta)^-1 w`` for ``R = exp(theta) R_ref`` (``w`` in the reference
    frame: a floating base); ``half = +0.5``: ``J_r(theta)^-1 w`` for ``R = R_ref exp(theta)``
    (``w`` in the moving frame: a ball joint). ``J^-1 = E +- theta~/2 + k theta~^2`` with
    ``k = 1/t^2 - (1 + cos t) / (2 t sin t)``, ``t = |theta|`` (series below 1e-4 rad).

    Parameters
    ----------
    tx, ty, tz : float
        Exponential coordinates ``theta`` [rad], in the reference frame (``half = -0.5``) or
        the moving frame (``half = +0.5``).
    wx, wy, wz : float
        Angular velocity ``w`` [rad/s], in the same frame as ``theta``.
    half : float
        ``-0.5`` or ``+0.5``: the sign of the ``theta~/2`` term (see above).

    Returns
    -------
    (3,) tuple of float
        ``d theta / dt`` [rad/s].
    """
    t2 = tx * tx + ty * ty + tz * tz
    t = np.sqrt(t2)
    if t < 1e-4:
        k = 1.0 / 12.0 + t2 / 720.0
    else:
        k = 1.0 / t2 - (1.0 + np.cos(t)) / (2.0 * t * np.sin(t))
    # theta x w and theta x (theta x w)
    cx = ty * wz - tz * wy
    cy = tz * wx - tx * wz
    cz = tx * wy - ty * wx
    ccx = ty * cz - tz * cy
    ccy = tz * cx - tx * cz
    ccz = tx * cy - ty * cx
    return (wx + half * cx + k * ccx, wy + half * cy + k * ccy, wz + half * cz + k * ccz)


@njit_leaf
def quat_to_matrix_into(q: np.ndarray, iq: int, out: np.ndarray, io: int) -> None:
    """``out[io]`` (3, 3): rotation matrix of the quaternion ``q[iq:iq+4] = (x, y, z, w)``,
    normalized here.

    Parameters
    ----------
    q : (m,) ndarray
        Holds the quaternion ``(x, y, z, w)`` [-] at ``q[iq:iq+4]`` (e.g. a configuration).
    iq : int
        Index of its ``x``.
    out : (k, 3, 3) ndarray
        Stack of matrices; ``out[io]`` is overwritten with ``R(q)`` [-], the rotated frame's
        axes in the reference frame as columns.
    io : int
        Index of the matrix written.
    """
    x, y, z, w = qnormalize((q[iq], q[iq + 1], q[iq + 2], q[iq + 3]))
    out[io, 0, 0] = 1.0 - 2.0 * (y * y + z * z)
    out[io, 0, 1] = 2.0 * (x * y - z * w)
    out[io, 0, 2] = 2.0 * (x * z + y * w)
    out[io, 1, 0] = 2.0 * (x * y + z * w)
    out[io, 1, 1] = 1.0 - 2.0 * (x * x + z * z)
    out[io, 1, 2] = 2.0 * (y * z - x * w)
    out[io, 2, 0] = 2.0 * (x * z - y * w)
    out[io, 2, 1] = 2.0 * (y * z + x * w)
    out[io, 2, 2] = 1.0 - 2.0 * (x * x + y * y)


@njit_leaf
def axis_angle_into(axes: np.ndarray, ia: int, angle: float, out: np.ndarray, io: int) -> None:
    """``out[io]`` (3, 3): Rodrigues' formula for the unit axis ``axes[ia]`` and ``angle``
    [rad].

    Parameters
    ----------
    axes : (m, 3) ndarray
        Unit rotation axes [-]; ``axes[ia]`` is used (not normalized here), in the frame the
        rotation is expressed in (a joint frame for the kernels).
    ia : int
        Row of ``axes``.
    angle : float
        Rotation angle about the axis [rad], right-handed.
    out : (k, 3, 3) ndarray
        Stack of matrices; ``out[io]`` is overwritten with the rotation matrix [-], in the
        frame of ``axes``.
    io : int
        Index of the matrix written.
    """
    e = axis_angle_entries(axes[ia, 0], axes[ia, 1], axes[ia, 2], angle)
    for r in range(3):
        for c in range(3):
            out[io, r, c] = e[3 * r + c]


@njit_leaf
def axis_angle_entries(x: float, y: float, z: float, angle: float) -> tuple:
    """Rodrigues' formula for the unit axis ``(x, y, z)`` and ``angle`` [rad], as the 9-tuple
    of the matrix's entries row by row (for kernels that keep the matrix in registers).

    Parameters
    ----------
    x, y, z : float
        Unit rotation axis [-] (not normalized here).
    angle : float
        Rotation angle about the axis [rad], right-handed.

    Returns
    -------
    tuple of 9 floats
        ``(R00, R01, R02, R10, ..., R22)`` [-].
    """
    c = np.cos(angle)
    s = np.sin(angle)
    t = 1.0 - c
    return (
        c + t * x * x,
        t * x * y - s * z,
        t * x * z + s * y,
        t * x * y + s * z,
        c + t * y * y,
        t * y * z - s * x,
        t * x * z - s * y,
        t * y * z + s * x,
        c + t * z * z,
    )


# ----------------------------------------------------------------------------------------------
# array functions
# ----------------------------------------------------------------------------------------------


def _array(x: ArrayLike, size: int, what: str) -> np.ndarray:
    arr = np.asarray(x, dtype=float)
    if arr.shape != (size,):
        raise ValueError(f'{what}: expected {size} values, got shape {arr.shape}')
    return arr


def quat_unit(
    quat: ArrayLike,
    what: str = 'quaternion',
    tolerance: float | None = None,
    *,
    min_norm: float = 0.0,
) -> np.ndarray:
    """The unit quaternion ``quat / |quat|`` (4,): the one check and normalization of a
    quaternion ``(x, y, z, w)`` given to the package.

    The norm is taken after dividing by the largest component (as :func:`qnormalize` does):
    the squares of a 1e160 quaternion would overflow, those of a 1e-160 one be subnormal; both
    normalize as exactly as a unit one.

    Parameters
    ----------
    quat : (4,) array_like
        The quaternion ``(x, y, z, w)`` [-] (orientation of a frame in its reference frame).
    what : str
        Names the argument in the messages (``''``: a message without the name, for a caller
        that adds it).
    tolerance : float, optional
        None: any finite quaternion of non-zero norm is normalized. A number: the norm must be
        1 within it (``|norm - 1| <= tolerance``): a value clearly off (a typo, another
        convention) is refused rather than silently rescaled.
    min_norm : float
        With ``tolerance`` None, a norm below it counts as zero (refused).

    Raises
    ------
    ValueError
        Naming ``what``: not 4 values; a component not finite; a zero norm (below
        ``min_norm``); a norm off 1 by more than ``tolerance`` (the norm expected and the norm
        got).

    Returns
    -------
    (4,) ndarray
        The unit quaternion [-], same sign as ``quat``.
    """
    prefix = f'{what}: ' if what else ''
    q = np.asarray(quat, dtype=float)
    if q.shape != (4,):
        raise ValueError(f'{prefix}expected 4 values, got shape {q.shape}')
    scale = float(np.max(np.abs(q)))
    usable = bool(0.0 < scale < np.inf)  # (False for nan)
    u = q / scale if usable else q  # no overflow nor subnormal squares
    unorm = float(np.linalg.norm(u))
    norm = unorm * scale if usable else unorm
    if tolerance is not None:
        if not (usable and abs(norm - 1.0) <= tolerance):
            raise ValueError(
                f'{prefix}expected a unit quaternion (x, y, z, w) of norm 1 within '
                f'{tolerance:g}, got {q.tolist()} (norm {norm:.6g})'
            )
    elif not (usable and norm >= min_norm):
        raise ValueError(
            f'{prefix}expected a non-zero finite quaternion (x, y, z, w), got {q.tolist()}'
        )
    return u / unorm


def quat_normalize(quat: ArrayLike, what: str = 'quaternion') -> np.ndarray:
    """The unit quaternion ``quat / |quat|`` (4,) of a quaternion of norm at least 1e-9
    (:func:`quat_unit` with ``min_norm=1e-9``: a smaller one, e.g. an unset message field,
    counts as zero).

    Parameters
    ----------
    quat : (4,) array_like
        The quaternion ``(x, y, z, w)`` [-] (orientation of a frame in its reference frame).
    what : str
        Names the argument in the messages.

    Returns
    -------
    (4,) ndarray
        The unit quaternion [-], same sign as ``quat``.

    Raises
    ------
    ValueError
        Naming ``what``, for a quaternion that is not 4 finite values of norm >= 1e-9.
    """
    return quat_unit(quat, what, min_norm=1e-9)


def quat_conjugate(quat: ArrayLike) -> np.ndarray:
    """``(-x, -y, -z, w)``: the inverse of a unit quaternion (4,).

    Parameters
    ----------
    quat : (4,) array_like
        Quaternion ``(x, y, z, w)`` [-]; for the orientation of frame B in frame A, the
        conjugate is that of A in B.

    Returns
    -------
    (4,) ndarray
        ``(-x, -y, -z, w)`` [-].
    """
    q = _array(quat, 4, 'quaternion')
    return np.array([-q[0], -q[1], -q[2], q[3]])


def quat_rotate_inverse(quat: Sequence[float], vec: Sequence[float]) -> tuple:
    """``R(quat)^T vec``: a vector (3,) of the world given in the axes of the frame whose
    orientation is the *unit* quaternion ``quat = (x, y, z, w)`` (not normalized nor checked
    here: for the simulator's own states, published at every step). Plain floats in and out
    (``t = 2 u x vec``, ``vec + w t + u x t`` with ``u = -(x, y, z)``): a tenth of the cost
    of building the matrix with NumPy.

    Parameters
    ----------
    quat : (4,) sequence of float
        Unit quaternion ``(x, y, z, w)`` [-] of a frame's orientation in the world frame.
    vec : (3,) sequence of float
        Vector in world-frame axes (any units: returned in the same units).

    Returns
    -------
    (3,) tuple of float
        ``R(quat)^T vec``: the same vector in the frame's axes.
    """
    x, y, z, w = quat
    a, b, c = vec
    tx = 2.0 * (z * b - y * c)  # 2 (-u_vec) x vec, written out
    ty = 2.0 * (x * c - z * a)
    tz = 2.0 * (y * a - x * b)
    return (
        a + w * tx + z * ty - y * tz,
        b + w * ty + x * tz - z * tx,
        c + w * tz + y * tx - x * ty,
    )


def quat_multiply(a: ArrayLike, b: ArrayLike) -> np.ndarray:
    """Hamilton product ``a * b`` (4,) of two quaternions ``(x, y, z, w)``.

    Parameters
    ----------
    a, b : (4,) array_like
        Quaternions ``(x, y, z, w)`` [-]; for unit ones ``R(a * b) = R(a) R(b)``: with ``b``
        the orientation of frame C in frame B and ``a`` that of B in A, ``a * b`` is C in A.

    Returns
    -------
    (4,) ndarray
        ``a * b`` [-], not normalized.
    """
    qa = _array(a, 4, 'a')
    qb = _array(b, 4, 'b')
    return np.array(qmul((qa[0], qa[1], qa[2], qa[3]), (qb[0], qb[1], qb[2], qb[3])))


def quat_exp(rotvec: ArrayLike) -> np.ndarray:
    """Unit quaternion (4,) ``(x, y, z, w)`` of a rotation vector (3,) [rad].

    Parameters
    ----------
    rotvec : (3,) array_like
        Rotation vector ``angle * axis`` [rad], the axis in the reference frame.

    Returns
    -------
    (4,) ndarray
        ``exp(rotvec)`` as ``(x, y, z, w)`` [-].
    """
    r = _array(rotvec, 3, 'rotation vector')
    return np.array(qexp(r[0], r[1], r[2]))


def quat_log(quat: ArrayLike) -> np.ndarray:
    """Rotation vector (3,) [rad], angle in ``[0, pi]``, of a quaternion ``(x, y, z, w)``
    (normalized here).

    Parameters
    ----------
    quat : (4,) array_like
        Quaternion ``(x, y, z, w)`` [-] of norm >= 1e-9 (a frame's orientation in its
        reference frame).

    Returns
    -------
    (3,) ndarray
        ``angle * axis`` [rad], the axis in the reference frame (equally in the rotated one:
        the axis is fixed by the rotation).
    """
    q = quat_normalize(quat)
    return np.array(qlog(q[0], q[1], q[2], q[3]))


def quat_angle(a: ArrayLike, b: ArrayLike) -> float:
    """Angle [rad] of the rotation between two attitudes, ``|log(b a^-1)|`` in ``[0, pi]``.

    Parameters
    ----------
    a, b : (4,) array_like
        Quaternions ``(x, y, z, w)`` [-] of two orientations in the same reference frame
        (normalized here).

    Returns
    -------
    float
        The angle [rad], in ``[0, pi]``.

    Raises
    ------
    ValueError
        Naming ``a`` or ``b``, for a zero or non-finite quaternion.
    """
    qa, qb = quat_normalize(a, 'a'), quat_normalize(b, 'b')
    return float(np.linalg.norm(quat_log(quat_multiply(qb, quat_conjugate(qa)))))


def quat_to_matrix(quat: ArrayLike) -> np.ndarray:
    """Rotation matrix (3, 3) of a quaternion ``(x, y, z, w)`` (normalized here; a zero or
    non-finite quaternion is a ``ValueError``).

    Parameters
    ----------
    quat : (4,) array_like
        Quaternion ``(x, y, z, w)`` [-] of a frame's orientation in its reference frame.

    Returns
    -------
    (3, 3) ndarray
        ``R`` [-]: the frame's axes in the reference frame as columns (``p_ref = R p``).
    """
    q = quat_normalize(quat)
    out = np.empty((1, 3, 3))
    quat_to_matrix_into(q, 0, out, 0)
    return out[0]


def matrix_to_quat(R: np.ndarray) -> np.ndarray:
    """Unit quaternion (4,) ``(x, y, z, w)`` of a rotation matrix (Shepperd's method,
    :func:`qfrom_matrix`), with ``w >= 0``.

    Parameters
    ----------
    R : (3, 3) ndarray
        Rotation matrix [-] (not checked): a frame's axes in its reference frame as columns.

    Returns
    -------
    (4,) ndarray
        ``(x, y, z, w)`` [-] with ``w >= 0``.
    """
    quat = np.array(qfrom_matrix(np.ascontiguousarray(R, dtype=float)))
    quat /= np.linalg.norm(quat)
    return -quat if quat[3] < 0 else quat


def skew(x: ArrayLike) -> np.ndarray:
    """Cross-product matrices ``x~`` with ``x~ y = x x y`` [M eq. 11]: (..., 3) -> (..., 3, 3).

    Parameters
    ----------
    x : (..., 3) array_like
        Vectors (any frame and units: ``x~`` is in the same frame and units).

    Returns
    -------
    (..., 3, 3) ndarray
        The skew-symmetric matrices ``x~``.
    """
    x = np.asarray(x, dtype=float)
    if x.ndim == 0 or x.shape[-1] != 3:
        raise ValueError(f'vector: expected 3 values in the last axis, got shape {x.shape}')
    z = np.zeros(x.shape[:-1])
    return np.stack(
        (
            np.stack((z, -x[..., 2], x[..., 1]), axis=-1),
            np.stack((x[..., 2], z, -x[..., 0]), axis=-1),
            np.stack((-x[..., 1], x[..., 0], z), axis=-1),
        ),
        axis=-2,
    )


def cross(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a x b`` over the last axis (broadcast); cheaper than ``np.cross`` for small arrays.

    Parameters
    ----------
    a, b : (..., 3) ndarray
        Vectors in the same frame (any units), broadcast against each other.

    Returns
    -------
    (..., 3) ndarray
        ``a x b`` in that frame, in the product of the units.
    """
    a = np.asarray(a, dtype=float)
    b = np.asarray(b, dtype=float)
    if a.shape == (3,) and b.shape == (3,):
        a0, a1, a2 = a.tolist()
        b0, b1, b2 = b.tolist()
        return np.array((a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0))
    a0, a1, a2 = a[..., 0], a[..., 1], a[..., 2]
    b0, b1, b2 = b[..., 0], b[..., 1], b[..., 2]
    out = np.empty(np.broadcast_shapes(a.shape, b.shape))
    out[..., 0] = a1 * b2 - a2 * b1
    out[..., 1] = a2 * b0 - a0 * b2
    out[..., 2] = a0 * b1 - a1 * b0
    return out


def bch2(phi: np.ndarray, delta: np.ndarray) -> np.ndarray:
    """``log(exp(phi) exp(delta))`` to second order in the rotation vectors (Baker-Campbell-
    Hausdorff): ``phi + delta + (phi x delta) / 2``.

    Parameters
    ----------
    phi, delta : (3,) ndarray
        Rotation vectors [rad], ``delta`` in the frame ``exp(phi)`` rotates to (a body-frame
        increment).

    Returns
    -------
    (3,) ndarray
        [rad], in the frame of ``phi``.
    """
    return phi + delta + 0.5 * cross(phi, delta)


def perpendicular_basis(k: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Two unit vectors ``q1, q2`` with ``(q1, q2, k)`` orthonormal and right-handed, for
    unit axes ``k`` (n, 3) (or (3,)): returns two (n, 3) arrays.

    Parameters
    ----------
    k : (n, 3) or (3,) ndarray
        Unit axes [-] (not normalized here), in any frame.

    Returns
    -------
    q1, q2 : (n, 3) ndarray
        Unit vectors [-] in the frame of ``k`` (a (3,) ``k`` gives (1, 3) arrays).
    """
    k = np.atleast_2d(k)
    e = np.zeros_like(k)
    e[np.arange(k.shape[0]), np.argmin(np.abs(k), axis=1)] = 1.0
    q1 = cross(k, e)
    q1 /= np.linalg.norm(q1, axis=1, keepdims=True)
    return q1, cross(k, q1)


def matrix_exp(rotvec: ArrayLike) -> np.ndarray:
    """Rotation matrix (3, 3) of a rotation vector (3,) [rad] (Rodrigues).

    Parameters
    ----------
    rotvec : (3,) array_like
        Rotation vector ``angle * axis`` [rad], the axis in the reference frame.

    Returns
    -------
    (3, 3) ndarray
        ``exp(rotvec~)`` [-]: the rotated frame's axes in the reference frame as columns.
    """
    r = _array(rotvec, 3, 'rotation vector')
    angle = float(np.linalg.norm(r))
    out = np.empty((1, 3, 3))
    axis = (r / angle if angle > 0.0 else np.array([1.0, 0.0, 0.0])).reshape(1, 3)
    axis_angle_into(axis, 0, angle, out, 0)
    return out[0]


def rotation_between(a: ArrayLike, b: ArrayLike) -> np.ndarray:
    """The smallest rotation matrix (3, 3) taking the unit vector ``a`` (3,) to the unit vector
    ``b`` (3,) (same frame; ``R a = b``): the angle ``atan2(|a x b|, a . b)`` about ``a x b``
    (accurate up to opposite vectors, where it is the half turn about an axis perpendicular
    to ``a``).

    Parameters
    ----------
    a, b : (3,) array_like
        Unit vectors [-] (not normalized here) in the same frame.

    Returns
    -------
    (3, 3) ndarray
        ``R`` [-] with ``R a = b``, in that frame.
    """
    a, b = _array(a, 3, 'a'), _array(b, 3, 'b')
    v = cross(a, b)
    s = float(np.linalg.norm(v))
    angle = float(np.arctan2(s, float(a @ b)))
    if s > 0.0:
        axis = v / s
    elif angle > 0.0:  # opposite
        axis = perpendicular_basis(a)[0][0]
    else:
        return np.eye(3)
    return matrix_exp(angle * axis)


def are_rotations(R: np.ndarray, atol: float = 1e-9) -> np.ndarray:
    """Which of the stacked matrices ``R`` (..., 3, 3) are rotation matrices: bool (...).

    A rotation matrix is finite, orthonormal to ``atol`` (every entry of ``R R^T - E`` within
    ``atol``) and proper (determinant +1: a reflection, orthogonal with determinant -1, is
    not a rotation).

    Parameters
    ----------
    R : (..., 3, 3) ndarray
        Stacked matrices [-] (any frames).
    atol : float
        Tolerance on the entries of ``R R^T - E`` [-].

    Returns
    -------
    (...) ndarray of bool
        True where ``R`` is a rotation matrix.

    Raises
    ------
    ValueError
        ``R`` is not of shape (..., 3, 3).
    """
    R = np.asarray(R, dtype=float)
    if R.ndim < 2 or R.shape[-2:] != (3, 3):
        raise ValueError(f'R: expected (..., 3, 3) matrices, got shape {R.shape}')
    with np.errstate(invalid='ignore', over='ignore'):  # (inf, nan: refused below)
        err = np.abs(R @ np.swapaxes(R, -1, -2) - np.eye(3)).max(axis=(-2, -1))
        proper = np.linalg.det(R) > 0.0
    return (err <= atol) & proper


def is_rotation(R: np.ndarray, atol: float = 1e-9) -> bool:
    """Whether ``R`` is one (3, 3) rotation matrix (:func:`are_rotations`: finite, orthonormal
    to ``atol`` and proper); any other shape is not one.

    Parameters
    ----------
    R : (3, 3) ndarray
        The matrix [-] (any frames); another shape gives False.
    atol : float
        Tolerance on the entries of ``R R^T - E`` [-].

    Returns
    -------
    bool
    """
    R = np.asarray(R, dtype=float)
    return R.shape == (3, 3) and bool(are_rotations(R, atol))


def matrix_log(R: np.ndarray) -> np.ndarray:
    """Rotation vector (3,) [rad], angle in ``[0, pi]``, of a rotation matrix (through its
    quaternion, accurate at every angle, ``pi`` included).

    Parameters
    ----------
    R : (3, 3) ndarray
        Rotation matrix [-]: a frame's axes in its reference frame as columns.

    Returns
    -------
    (3,) ndarray
        ``log(R)`` as ``angle * axis`` [rad], the axis in the reference frame.
    """
    return quat_log(matrix_to_quat(R))


def rpy_to_matrix(rpy: ArrayLike) -> np.ndarray:
    """URDF roll-pitch-yaw (fixed axes X, then Y, then Z) [rad] -> rotation matrix (3, 3):
    ``R = Rz(yaw) Ry(pitch) Rx(roll)``.

    Parameters
    ----------
    rpy : (3,) array_like
        ``(roll, pitch, yaw)`` [rad] of a URDF ``origin``: the child frame's orientation about
        the parent frame's fixed axes.

    Returns
    -------
    (3, 3) ndarray
        ``R`` [-]: the child frame's axes in the parent frame as columns.
    """
    r, p, y = _array(rpy, 3, 'rpy')
    cr, sr = np.cos(r), np.sin(r)
    cp, sp = np.cos(p), np.sin(p)
    cy, sy = np.cos(y), np.sin(y)
    return np.array(
        [
            [cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr],
            [sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr],
            [-sp, cp * sr, cp * cr],
        ]
    )
