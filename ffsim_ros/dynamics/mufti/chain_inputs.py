"""Naming the bad input of a closed-chain call (:class:`~.closed.ClosedChain`): the solvers
fail with a ``LinAlgError`` on a non-finite state or a zero quaternion; these checks, run on
entry or only once a solver failed, turn that into a ``ValueError`` naming the argument."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import numpy as np

from ..inputs import (
    ArrayLike,
    as_vector,
    link_wrench_items,
    real_array,
    require_floating,
    zero_quaternion_error,
)
from ..lie import quat_to_matrix
from ..model import Model, UnknownNameError
from .hinges import LoopClosure


def check_finite(where: str, **arrays: object) -> None:
    """Raise a ValueError naming the first of ``arrays`` (by argument name) with a non-finite
    value, prefixed by ``where`` (the chain's loop closures); None entries and callables are
    skipped; a ``TypeError`` for values that are not real numbers.

    Parameters
    ----------
    where : str
        Prefix of the message.
    **arrays : array_like or None or callable
        The arguments to check, by name (any shape).
    """
    for name, x in arrays.items():
        if x is None or callable(x):
            continue
        x = np.asarray(real_array(x, f'{where}: {name}'), dtype=float).ravel()
        if not np.isfinite(x).all():
            i = int(np.flatnonzero(~np.isfinite(x))[0])
            raise ValueError(f'{where}: {name}: expected finite values, got {x[i]} at index {i}')


def check_gains(alpha: object, beta: object) -> tuple[float, float]:
    """Baumgarte's gains ``alpha`` [1/s], ``beta`` [1/s^2] of a :class:`~.closed.ClosedChain`
    as floats: finite real numbers >= 0.

    Raises
    ------
    ValueError
        Naming the gain and what was expected.
    """
    for key, gain in (('alpha', alpha), ('beta', beta)):
        real = isinstance(gain, int | float | np.integer | np.floating)
        if isinstance(gain, bool) or not real:
            raise ValueError(f'{key}: expected a number, got {gain!r}')
    alpha, beta = float(alpha), float(beta)  # type: ignore[arg-type]
    if not (np.isfinite(alpha) and np.isfinite(beta)) or alpha < 0 or beta < 0:
        raise ValueError(f'alpha, beta: expected finite values >= 0, got {alpha}, {beta}')
    return alpha, beta


class BodyWrench:
    """A base wrench held in the base frame (a thruster's): it turns with the base.

    Parameters
    ----------
    wrench : (6,) ndarray
        ``[f; n]`` at the base CoM in the base frame [N, N m], checked.
    """

    def __init__(self, wrench: np.ndarray) -> None:
        self.wrench = wrench

    @classmethod
    def of(cls, model: Model, wrench: ArrayLike | None, where: str) -> BodyWrench | None:
        """The ``base_wrench_body`` argument of a chain's step, checked (None: none acts).

        Parameters
        ----------
        model : Model
        wrench : (6,) array_like or None
            ``[f; n]`` at the base CoM in the base frame [N, N m].
        where : str
            Prefix of the messages (the chain's loop closures).

        Raises
        ------
        ValueError
            A fixed-base model, a shape other than (6,) or a value that is not finite, named.
        """
        if wrench is None:
            return None
        require_floating(model, 'base_wrench_body')
        check_finite(where, base_wrench_body=wrench)
        return cls(as_vector(wrench, 6, 'base_wrench_body'))

    def turn(self, force: np.ndarray | None, q: np.ndarray) -> np.ndarray:
        """``force``, a base wrench (6,) or a generalized force ``[F_b; tau]`` (nv,) (None: a
        zero base wrench), with the wrench added to its base part in the inertial frame at
        the base attitude of ``q`` (nq,) (``q[3:7]``, x, y, z, w) [N, N m].

        Returns
        -------
        (6,) or (nv,) ndarray
            A new array.
        """
        R = quat_to_matrix(q[3:7])
        out = np.zeros(6) if force is None else np.array(force, dtype=float)
        out[:3] += R @ self.wrench[:3]
        out[3:6] += R @ self.wrench[3:]
        return out


def name_bad_input(
    model: Model,
    where: str,
    q: object,
    v: object,
    tau: object,
    base_wrench: object = None,
    link_wrenches: Mapping[str, ArrayLike] | None = None,
) -> None:
    """After a solver failed: raise a ValueError naming the input that made it fail (a
    non-finite entry of any argument or link wrench, a zero quaternion in ``q`` (nq,)); return
    when there is none (a singular configuration: the caller re-raises its error).

    Parameters
    ----------
    model : Model
    where : str
        Prefix of the messages (the chain's loop closures).
    q, v, tau, base_wrench : array_like or None
        The call's arguments as given, (nq,), (nv,), (n,), (6,) (:class:`~.closed.ClosedChain`
        conventions); checked finite.
    link_wrenches : Mapping or None
        ``{link: (6,) [f; n]}`` as given, inertial frame [N, N m]; checked as
        :func:`~..inputs.link_wrench_items` does.
    """
    check_finite(where, q=q, v=v, tau=tau, base_wrench=base_wrench)
    try:
        link_wrench_items(link_wrenches)
    except (TypeError, ValueError) as exc:
        raise type(exc)(f'{where}: {exc}') from None
    Q = np.asarray(q, dtype=float)
    if Q.shape == (model.nq,):
        zero = zero_quaternion_error(model, Q[None, :], rows=False)
        if zero is not None:
            raise ValueError(f'{where}: {zero}')


def check_loops(model: Model, loops: object) -> tuple[LoopClosure, ...]:
    """The loop closures of a :class:`~.closed.ClosedChain` on ``model``, checked: a
    non-empty sequence of :class:`~.hinges.LoopClosure` with unique non-empty names, each
    joining links (names of ``model``) on two different bodies.

    Parameters
    ----------
    model : Model
        The tree the loops close.
    loops : sequence of LoopClosure
        The cut hinges.

    Returns
    -------
    tuple of LoopClosure
        ``loops`` as a tuple.

    Raises
    ------
    ValueError, UnknownNameError
        Naming the loop and what was expected.
    """
    if not isinstance(model, Model):
        raise ValueError(f'model: expected a Model, got {type(model).__name__}')
    if not isinstance(loops, Iterable) or isinstance(loops, str | bytes):
        raise ValueError(f'loops: expected a sequence of LoopClosure, got {type(loops).__name__}')
    loops = tuple(loops)
    if not loops:
        raise ValueError('loops: expected at least one LoopClosure, got none')
    for lp in loops:
        if not isinstance(lp, LoopClosure):
            raise ValueError(f'loops: expected LoopClosure items, got {type(lp).__name__}')
        if not isinstance(lp.name, str) or not lp.name:
            raise ValueError(f'loops: expected a non-empty string as loop name, got {lp.name!r}')
        for key in ('link_a', 'link_b'):
            link = getattr(lp, key)
            if not isinstance(link, str):
                raise ValueError(
                    f'loop {lp.name!r}: {key}: expected a link name (a string), got '
                    f'{type(link).__name__} {link!r}'
                )
    names = [lp.name for lp in loops]
    if len(set(names)) != len(names):
        raise ValueError(f'loops: expected unique names, got {names}')
    for lp in loops:
        try:
            body_a, body_b = model.frame(lp.link_a).body, model.frame(lp.link_b).body
        except UnknownNameError as exc:
            raise UnknownNameError(f'loop {lp.name!r}: {exc}') from None
        if body_a == body_b:
            raise ValueError(
                f'loop {lp.name!r}: links {lp.link_a!r} and {lp.link_b!r} are on the same '
                'body (a cut hinge must join two different bodies)'
            )
    return loops
