"""Inputs of the simulation engine: guarded joint efforts and external wrenches (no ROS).

Joint efforts follow the ros2_controllers conventions: a command is checked whole (size,
finiteness) and a bad one is refused; the last good command holds for ``timeout_ns`` of
*simulated* time after it was given and then the efforts drop to zero; what is applied is
the command clipped to the URDF effort limits.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

import ffsim_ros.dynamics as D
from ffsim_ros.dynamics.inputs import as_count, describe, is_integer, real_array
from ffsim_ros.dynamics.lie import quat_to_matrix

#: Frames a base wrench can be given in: the inertial frame, or the base body's own frame
#: (then it turns with the base, as a thruster's force does).
WRENCH_FRAMES = ('world', 'base')


class WrongSizeError(ValueError):
    """An input with the wrong number of values."""


class NonFiniteError(ValueError):
    """An input with a NaN or an infinity."""


def real_values(value: object, what: str) -> np.ndarray:
    """``value`` (a number, a sequence or an array of real numbers) as a new flat float array,
    checked as the dynamics API checks its arguments (:func:`~ffsim_ros.dynamics.inputs.
    real_array`); the sizes and finiteness are the caller's to check.

    Parameters
    ----------
    value : object
        The input (any shape; frame and units the caller's).
    what : str
        Names the input in the messages.

    Returns
    -------
    (k,) ndarray

    Raises
    ------
    TypeError
        Complex numbers, strings, bytes, booleans, None or other objects, naming ``what``.
    ValueError
        A ragged nesting of sequences, naming ``what``.
    """
    return np.array(real_array(value, what), dtype=float).reshape(-1)


def check_indices(indices: object, n: int) -> np.ndarray:
    """Joint positions (k,) in joint order, each in ``[0, n)`` and at most once, as a new
    int64 array: an integer array, or a sequence of Python or NumPy ints (a boolean mask, a
    float, a string are not positions).

    Parameters
    ----------
    indices : object
        The joint positions given.
    n : int
        Joint count.

    Returns
    -------
    (k,) int64 ndarray

    Raises
    ------
    TypeError
        Anything but integers, naming ``indices``.
    ValueError
        A position out of range or repeated, naming ``indices``.
    """
    if isinstance(indices, np.ndarray):
        # integers, or an object array of them; an empty array of any kind holds no index
        whole = indices.dtype.kind in 'iuO' or indices.size == 0
        items = indices.reshape(-1).tolist() if whole else None
    elif isinstance(indices, Sequence) and not isinstance(indices, str | bytes):
        items = list(indices)
    else:
        items = [indices] if is_integer(indices) else None
    if items is None or not all(map(is_integer, items)):
        raise TypeError(
            'indices: expected integer joint positions (Python or NumPy ints, not booleans), '
            f'got {describe(indices)}'
        )
    if any(not 0 <= i < n for i in items) or len(set(items)) != len(items):
        got = [int(i) for i in items]
        raise ValueError(
            f'indices: expected distinct values in [0, {n}) (joint positions), got {got}'
        )
    return np.array(items, dtype=np.int64)


def check_efforts(model: D.Model, tau: object, what: str = 'tau') -> np.ndarray:
    """Joint efforts (n,) [N m | N] in joint order, as a new float array.

    Parameters
    ----------
    model : Model
        Gives ``n`` and the joint names.
    tau : object
        The efforts given: (n,) real numbers, joint order [N m | N].
    what : str
        Names the input in the messages.

    Returns
    -------
    (n,) ndarray

    Raises
    ------
    TypeError
        Not real numbers (:func:`real_values`), naming ``what``.
    WrongSizeError
        ``'<what>: expected <n> values in joint order [...], got <k>'``.
    NonFiniteError
        ``'<what>: expected finite values, got [...]'``.
    """
    values = real_values(tau, what)
    if values.shape != (model.n,):
        raise WrongSizeError(
            f'{what}: expected {model.n} values in joint order {list(model.joint_names)}, '
            f'got {values.size}'
        )
    if not np.all(np.isfinite(values)):
        raise NonFiniteError(f'{what}: expected finite values, got {values.tolist()}')
    return values


#: Largest magnitude of a wrench component taken [N, N m]: thrusters and contacts of space
#: robots are far below; a finite 1e300 N stopped the simulation for good (its velocity
#: products overflow) where it should have been refused like a NaN.
MAX_WRENCH = 1e7


def check_wrench(wrench: object, what: str = 'wrench') -> np.ndarray:
    """A wrench ``[f; n]`` (6,) of finite values [N, N m] of magnitude at most
    :data:`MAX_WRENCH`, as a new float array.

    Parameters
    ----------
    wrench : object
        The wrench given: 6 real numbers ``[f; n]`` [N, N m] (its frame and point of
        application are the caller's: unchanged here).
    what : str
        Names the input in the messages.

    Returns
    -------
    (6,) ndarray

    Raises
    ------
    TypeError
        Not real numbers (:func:`real_values`), naming ``what``.
    WrongSizeError, NonFiniteError
        Naming ``what``; a component beyond :data:`MAX_WRENCH` is a ``NonFiniteError`` too
        (out of the range taken).
    """
    values = real_values(wrench, what)
    if values.shape != (6,):
        raise WrongSizeError(f'{what}: expected 6 finite values [f; n], got {values.tolist()}')
    if not np.all(np.isfinite(values)):
        raise NonFiniteError(f'{what}: expected 6 finite values [f; n], got {values.tolist()}')
    if np.abs(values).max() > MAX_WRENCH:
        raise NonFiniteError(
            f'{what}: expected values of magnitude <= {MAX_WRENCH:g} [N, N m], got '
            f'{values.tolist()}'
        )
    return values


class EffortCommands:
    """The joint effort command buffer: timeout in simulated time and clipping.

    A command gives every joint an effort (:meth:`command`) or some joints theirs
    (:meth:`command_joints`, a name-keyed ``sensor_msgs/JointState`` command); each joint's
    effort holds for ``timeout_ns`` of simulated time after it was given, then drops to zero,
    so a joint that no one commands any more never keeps an old effort because others are
    still commanded.

    Parameters
    ----------
    model : Model
        Gives the size ``n`` and the effort limits (n,) [N m | N].
    timeout_ns : int
        Simulated nanoseconds a command holds (> 0; a Python or NumPy int).
    """

    def __init__(self, model: D.Model, timeout_ns: int) -> None:
        self._model = model
        self._limit = np.asarray(model.effort_limit, dtype=float)
        self._tau = np.zeros(model.n)
        self._received = np.zeros(model.n, dtype=np.int64)  # when each effort was given [ns]
        self._given = np.zeros(model.n, dtype=bool)  # efforts given since the last clear
        self._none = np.zeros(model.n)  # the efforts when none holds (shared: read-only)
        self._none.setflags(write=False)
        self.timeout_ns = timeout_ns

    @property
    def timeout_ns(self) -> int:
        """Simulated nanoseconds a command holds after it was given."""
        return self._timeout_ns

    @timeout_ns.setter
    def timeout_ns(self, value: int) -> None:
        # (the engine's setting is command_timeout_ns; a refused value changes nothing)
        self._timeout_ns = as_count(value, 'command_timeout_ns', unit='ns, the command timeout')

    @property
    def last(self) -> tuple[np.ndarray, int] | None:
        """The efforts commanded (a copy; zero for joints not commanded since the last clear)
        and the simulated time of the latest command [ns]; None without one."""
        if not self._given.any():
            return None
        return np.where(self._given, self._tau, 0.0), int(self._received[self._given].max())

    def command(self, tau: object, now_ns: int) -> None:
        """Take the efforts ``tau`` (n,) of every joint given at simulated time ``now_ns``.

        Parameters
        ----------
        tau : object
            (n,) joint efforts, joint order [N m | N].
        now_ns : int
            Simulated time [ns].

        Raises
        ------
        TypeError, ValueError
            A bad command (see :func:`check_efforts`); the previous command stays.
        """
        self._tau = check_efforts(self._model, tau)
        self._received[:] = int(now_ns)
        self._given[:] = True

    def command_joints(self, indices: Sequence[int], efforts: object, now_ns: int) -> None:
        """Take the efforts (k,) of the joints ``indices`` (k,) (positions in joint order,
        each at most once) given at ``now_ns``; the other joints keep theirs.

        Parameters
        ----------
        indices : sequence of int
            (k,) joint positions in joint order.
        efforts : object
            (k,) efforts of those joints [N m | N].
        now_ns : int
            Simulated time [ns].

        Raises
        ------
        TypeError
            Indices that are not integers (:func:`check_indices`: a float, a boolean mask, a
            string) or efforts that are not real numbers (nothing changes).
        WrongSizeError, NonFiniteError, ValueError
            Sizes that differ, a non-finite effort, an index out of range or repeated
            (nothing changes).
        """
        index = check_indices(indices, self._model.n)
        values = real_values(efforts, 'efforts')
        if values.shape != index.shape:
            raise WrongSizeError(
                f'efforts: expected one effort per joint of indices ({index.size}), got '
                f'{values.size}'
            )
        if not np.all(np.isfinite(values)):
            raise NonFiniteError(f'efforts: expected finite values, got {values.tolist()}')
        tau = self._tau.copy()
        tau[index] = values
        self._tau = tau
        self._received[index] = int(now_ns)
        self._given[index] = True

    def clear(self) -> None:
        """Drop the command (zero efforts)."""
        self._given[:] = False

    def _holding(self, now_ns: int) -> np.ndarray:
        """Which joints' efforts hold at ``now_ns`` (n,) bool."""
        return self._given & (now_ns - self._received <= self._timeout_ns)

    def held(self, now_ns: int, dt_ns: int, count: int) -> tuple[np.ndarray, int]:
        """The efforts applied at simulated time ``now_ns`` and how long they stay.

        Parameters
        ----------
        now_ns : int
            Simulated time [ns].
        dt_ns : int
            Step [ns], > 0.
        count : int
            Steps wanted.

        Returns
        -------
        tau : (n,) ndarray
            Each joint's command clipped to its limit while it is at most ``timeout_ns``
            old, else zero (a read-only array when no effort holds).
        steps : int
            How many of the ``count`` steps of ``dt_ns`` from ``now_ns`` start while
            ``tau`` stays the efforts applied (0 when no effort holds): the steps to
            integrate under them before the first of them times out.
        """
        holding = self._holding(now_ns)
        if not holding.any():
            return self._none, 0
        tau = np.where(holding, self._tau, 0.0)
        np.clip(tau, -self._limit, self._limit, out=tau)
        last_ns = int(self._received[holding].min()) + self._timeout_ns  # first to time out
        return tau, min(count, (last_ns - now_ns) // dt_ns + 1)


@dataclass(frozen=True)
class ExternalWrenches:
    """External wrenches held by the engine (immutable: the engine swaps the whole value).

    Attributes
    ----------
    base : (6,) ndarray or None
        ``[f; n]`` at the base CoM [N, N m].
    base_frame : str
        ``'world'``: ``base`` is constant in the inertial frame; ``'base'``: it is constant
        in the base frame and re-expressed at every evaluation of the dynamics (each RK4
        stage), i.e. it turns with the base.
    links : mapping
        ``{link: [f; n]}`` at link origins, inertial frame.
    """

    base: np.ndarray | None = None
    base_frame: str = 'world'
    links: Mapping[str, np.ndarray] | None = None

    @property
    def acting(self) -> bool:
        """Whether a non-zero wrench acts (an all-zero wrench is no wrench)."""
        return bool(self.step_arguments())

    def base_in_world(self, q: np.ndarray) -> np.ndarray | None:
        """The base wrench (6,) in the inertial frame at configuration ``q`` (nq,) (turned by
        the base attitude when given in the base frame); None when none acts.

        Parameters
        ----------
        q : (nq,) ndarray
            Configuration ``[r0, Q0, phi]``; its base quaternion ``q[3:7]`` (x, y, z, w,
            base frame in the inertial frame) [-] is used.

        Returns
        -------
        (6,) ndarray or None
            ``[f; n]`` at the base CoM, inertial frame [N, N m].
        """
        if self.base is None or not np.any(self.base):
            return None
        if self.base_frame != 'base':
            return self.base
        R = quat_to_matrix(q[3:7])
        return np.concatenate((R @ self.base[:3], R @ self.base[3:]))

    def describe(self) -> str:
        """The wrenches acting, for a fault message ('' when none acts).

        Returns
        -------
        str
        """
        parts = []
        if self.base is not None and np.any(self.base):
            force, torque = np.linalg.norm(self.base[:3]), np.linalg.norm(self.base[3:])
            parts.append(
                f'a base wrench of |f| = {force:.3g} N, |n| = {torque:.3g} N m '
                f'({self.base_frame} frame)'
            )
        links = sorted(k for k, w in (self.links or {}).items() if np.any(w))
        if links:
            parts.append(f'link wrenches on {links}')
        return ' and '.join(parts)

    def step_arguments(self) -> dict[str, object]:
        """Keyword arguments of :func:`ffsim_ros.dynamics.step` for these wrenches (none for
        an all-zero wrench, so that the momentum-preserving step still applies).

        Returns
        -------
        dict
            ``base_wrench`` (world frame) or ``base_wrench_body`` (base frame), (6,) ``[f; n]``
        [N, N m], and ``link_wrenches``, each only when non-zero.
        """
        out: dict[str, object] = {}
        if self.base is not None and np.any(self.base):
            key = 'base_wrench_body' if self.base_frame == 'base' else 'base_wrench'
            out[key] = self.base
        links = {k: w for k, w in (self.links or {}).items() if np.any(w)}
        if links:
            out['link_wrenches'] = links
        return out
