"""Ctrl-C and SIGTERM during a campaign: taken at safe points, not inside a compiled kernel
(no ROS).

A SIGINT landing inside a numba kernel surfaces as a ``SystemError`` that the handlers
isolating a failing run would take for the run's failure; :func:`deferred_interrupts` notes it
and :func:`check_interrupt` raises it where the batch can stop cleanly. A SIGTERM (how batch
schedulers and ``kill`` stop a job) is taken the same way, raised as :class:`Terminated` (a
:class:`KeyboardInterrupt`), so that the tables are closed and the buffered rows written.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator

#: The signals :func:`deferred_interrupts` takes at safe points.
SIGNALS = (signal.SIGINT, signal.SIGTERM)


class Terminated(KeyboardInterrupt):
    """A SIGTERM taken as a Ctrl-C (:func:`deferred_interrupts`)."""


class _Interrupt:
    """A signal received under :func:`deferred_interrupts`, not yet raised (0: none), and the
    handlers to restore (None: not deferring)."""

    signum = 0
    previous: dict | None = None


def _exception(signum: int) -> KeyboardInterrupt:
    return Terminated() if signum == signal.SIGTERM else KeyboardInterrupt()


def _note(signum: int, frame: object) -> None:
    if _Interrupt.signum:  # a second signal: at once
        _Interrupt.signum = 0
        raise _exception(signum)
    _Interrupt.signum = signum


def deferred_interrupts() -> contextlib.AbstractContextManager[None]:
    """Within: a SIGINT (Ctrl-C) or SIGTERM is noted and raised (as :class:`KeyboardInterrupt`,
    or :class:`Terminated` for SIGTERM) at the next safe point (:func:`check_interrupt`: once
    per control period of a :class:`BatchRunner`, once per wait of the Ray executor), or when
    leaving, instead of wherever the main thread is. Raised inside a numba kernel, it surfaces
    as a ``SystemError`` that the handlers isolating a failing run would take for the run's
    failure. A second signal before the first is raised is raised at once. A no-op outside the
    main thread; a signal whose handler is not Python's default (SIGINT) or the system's
    (SIGTERM) when entering is left to that handler. Code that replaces the handlers within
    (``ray.init`` installs its own SIGTERM handler) calls :func:`take_signals_again` after.

    Returns
    -------
    context manager
    """
    return _deferred_interrupts()


def _defaults() -> dict:
    return {signal.SIGINT: signal.default_int_handler, signal.SIGTERM: signal.SIG_DFL}


@contextlib.contextmanager
def _deferred_interrupts() -> Iterator[None]:
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    defaults = _defaults()
    previous = {s: defaults[s] for s in SIGNALS if signal.getsignal(s) is defaults[s]}
    _Interrupt.signum = 0
    _Interrupt.previous = previous
    for s in previous:
        signal.signal(s, _note)
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
        _Interrupt.previous = None
        check_interrupt()


def take_signals_again() -> None:
    """Within :func:`deferred_interrupts` (main thread): install its handlers again over those
    set since (``ray.init`` sets a SIGTERM handler that exits at once, losing the buffered
    rows); elsewhere a no-op."""
    if _Interrupt.previous is None or threading.current_thread() is not threading.main_thread():
        return
    for s in _Interrupt.previous:
        signal.signal(s, _note)


def check_interrupt() -> None:
    """Raise the Ctrl-C or SIGTERM noted (:func:`deferred_interrupts`), if any.

    Raises
    ------
    KeyboardInterrupt
        A Ctrl-C was noted since the last check; :class:`Terminated` for a SIGTERM.
    """
    if _Interrupt.signum:
        signum, _Interrupt.signum = _Interrupt.signum, 0
        raise _exception(signum)


def find_interrupt(exc: BaseException) -> KeyboardInterrupt | None:
    """The :class:`KeyboardInterrupt` that ``exc`` is, or was caused by or raised while
    handling (e.g. numba's ``SystemError`` of a kernel the interrupt landed in); None if none.

    Parameters
    ----------
    exc : BaseException

    Returns
    -------
    KeyboardInterrupt or None
    """
    todo, seen = [exc], set()
    while todo:
        e = todo.pop()
        if e is None or id(e) in seen:
            continue
        if isinstance(e, KeyboardInterrupt):
            return e
        seen.add(id(e))
        todo += [e.__cause__, e.__context__]
    return None


def interrupted(exc: BaseException) -> bool:
    """Whether ``exc`` is, or was caused by or raised while handling, a
    :class:`KeyboardInterrupt` (:func:`find_interrupt`).

    Parameters
    ----------
    exc : BaseException
    """
    return find_interrupt(exc) is not None


def reraise_interrupt(exc: BaseException) -> None:
    """Re-raise a Ctrl-C (or SIGTERM) hidden in ``exc`` (:func:`find_interrupt`) as its own
    kind (:class:`KeyboardInterrupt`, :class:`Terminated`): a handler that isolates a failing
    run must not take it for the run's failure."""
    found = find_interrupt(exc)
    if found is not None:
        raise type(found)() from exc
