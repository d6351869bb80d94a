"""A guard for the tests of the ``solve_ivp`` methods of ``D.step``: a solver that would never
return fails the test instead of hanging it."""

from __future__ import annotations

from typing import Any

import pytest

#: Evaluations of the right-hand side allowed within a test: a sound step takes tens to a few
#: thousand, a step the solver gives up on at most about 15 000 (DOP853's 1010 steps within
#: 1 ms); the solvers that never returned needed about 1e9.
EVALUATIONS = 100_000


class EndlessSolver(Exception):
    """A ``solve_ivp`` method still evaluating the dynamics after :data:`EVALUATIONS`."""


def bound_solvers(monkeypatch: pytest.MonkeyPatch, limit: int = EVALUATIONS) -> None:
    """Refuse the right-hand side of the ``solve_ivp`` methods of ``D.step`` after ``limit``
    evaluations within the test (:class:`EndlessSolver`, not a ``ValueError``: no caller takes
    it for a failed step). Counted where the right-hand side takes the chart's rate
    (``e_chart_rate``, once an evaluation, in the module that holds the right-hand side:
    ``solver_step``, ``integration`` before it), whatever loop drives the solver."""
    import importlib

    from ffsim_ros.dynamics import integration

    try:
        module = importlib.import_module('ffsim_ros.dynamics.solver_step')
    except ModuleNotFoundError:  # (the right-hand side in integration)
        module = integration
    real = module.e_chart_rate
    calls = 0

    def counted(*args: Any) -> Any:  # noqa: ANN401 (the compiled kernel's own arguments)
        nonlocal calls
        calls += 1
        if calls > limit:
            raise EndlessSolver(f'{calls} evaluations of the right-hand side')
        return real(*args)

    monkeypatch.setattr(module, 'e_chart_rate', counted)
