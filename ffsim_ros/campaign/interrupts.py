"""Ctrl-C during a campaign: taken at safe points, not inside a compiled kernel (no ROS).

A SIGINT landing inside a numba kernel surfaces as a ``SystemError`` that the handlers
isolating a failing run would take for the run's failure; :func:`deferred_interrupts` notes it
and :func:`check_interrupt` raises it where the batch can stop cleanly.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator


class _Interrupt:
    """A Ctrl-C received under :func:`deferred_interrupts`, not yet raised."""

    requested = False


def deferred_interrupts() -> contextlib.AbstractContextManager[None]:
    """Within: a SIGINT (Ctrl-C) is noted and raised as :class:`KeyboardInterrupt` at the next
    safe point (:func:`check_interrupt`: once per control period of a :class:`BatchRunner`,
    once per wait of the Ray executor), or when leaving, instead of wherever the main thread
    is. Raised inside a numba kernel, it surfaces as a ``SystemError`` that the handlers
    isolating a failing run would take for the run's failure. A second Ctrl-C before the
    first is raised is raised at once. A no-op outside the main thread, or when SIGINT does
    not have Python's default handler (ignored, or handled by the caller).

    Returns
    -------
    context manager
    """
    return _deferred_interrupts()


@contextlib.contextmanager
def _deferred_interrupts() -> Iterator[None]:
    if (
        threading.current_thread() is not threading.main_thread()
        or signal.getsignal(signal.SIGINT) is not signal.default_int_handler
    ):
        yield
        return

    def note(signum: int, frame: object) -> None:
        if _Interrupt.requested:  # a second Ctrl-C: at once
            _Interrupt.requested = False
            raise KeyboardInterrupt
        _Interrupt.requested = True

    _Interrupt.requested = False
    signal.signal(signal.SIGINT, note)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, signal.default_int_handler)
        check_interrupt()


def check_interrupt() -> None:
    """Raise :class:`KeyboardInterrupt` if a Ctrl-C was noted (:func:`deferred_interrupts`).

    Raises
    ------
    KeyboardInterrupt
        A Ctrl-C was noted since the last check.
    """
    if _Interrupt.requested:
        _Interrupt.requested = False
        raise KeyboardInterrupt


def interrupted(exc: BaseException) -> bool:
    """Whether ``exc`` is, or was caused by or raised while handling, a
    :class:`KeyboardInterrupt` (e.g. numba's ``SystemError`` of a kernel the interrupt landed
    in).

    Parameters
    ----------
    exc : BaseException
    """
    todo, seen = [exc], set()
    while todo:
        e = todo.pop()
        if e is None or id(e) in seen:
            continue
        if isinstance(e, KeyboardInterrupt):
            return True
        seen.add(id(e))
        todo += [e.__cause__, e.__context__]
    return False


def reraise_interrupt(exc: BaseException) -> None:
    """Re-raise a Ctrl-C hidden in ``exc`` (:func:`interrupted`) as :class:`KeyboardInterrupt`
    (a handler that isolates a failing run must not take it for the run's failure)."""
    if interrupted(exc):
        raise KeyboardInterrupt from exc
