"""The nodes' executables hold SIGINT/SIGTERM while their module imports (ffsim_ros.console).

Found with the real ``ros2 launch`` (2026-11-27): a Ctrl-C during a node's first 1-3 s (the
imports of rclpy, NumPy and the kernels, before ``main`` installs its handlers) ended it with
a ``KeyboardInterrupt`` traceback and exit -2. The signals are raised here from inside the
imported module itself, so they land during the import without timing luck.
"""

from __future__ import annotations

import ast
import os
import signal
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from ffsim_ros.console import DEFAULT_HANDLERS, HELD_SIGNALS, run_held

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def handlers_restored() -> Iterator[None]:
    saved = {signum: signal.getsignal(signum) for signum in HELD_SIGNALS}
    try:
        yield
    finally:
        for signum, handler in saved.items():
            signal.signal(signum, handler)


def _module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str, body: str) -> str:
    (tmp_path / f'{name}.py').write_text(textwrap.dedent(body))
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, name, raising=False)
    return name


def _held() -> list[int]:
    """What a node script does first: SIGINT and SIGTERM appended to a list."""
    received: list[int] = []
    for signum in HELD_SIGNALS:
        signal.signal(signum, lambda s, frame: received.append(s))
    return received


@pytest.mark.parametrize('signum', HELD_SIGNALS, ids=lambda s: signal.Signals(s).name)
def test_a_signal_during_the_import_lets_it_finish_then_stops(
    signum: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, handlers_restored: None
) -> None:
    name = _module(
        tmp_path,
        monkeypatch,
        f'fake_node_{signum}',
        f"""
        import os
        os.kill(os.getpid(), {signum})
        os.kill(os.getpid(), {signum})  # the launch forwards the terminal's Ctrl-C
        finished = True
        def main(args):
            raise AssertionError('not started')
        """,
    )
    received = _held()
    assert run_held(name, received) == 0 and received == [signum, signum]
    assert sys.modules[name].finished  # not interrupted half-way
    for held in HELD_SIGNALS:  # stopping: a later signal must not raise in the clean-up
        assert signal.getsignal(held) is signal.SIG_IGN
    os.kill(os.getpid(), signal.SIGINT)  # ignored: no KeyboardInterrupt


def test_without_a_signal_main_runs_with_pythons_handlers_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, handlers_restored: None
) -> None:
    name = _module(
        tmp_path, monkeypatch, 'fake_quiet_node', 'def main(args):\n    return ("ran", args)\n'
    )
    assert run_held(name, _held(), ['--ros-args']) == ('ran', ['--ros-args'])
    assert tuple(signal.getsignal(h) for h in HELD_SIGNALS) == DEFAULT_HANDLERS


def test_an_import_error_propagates_with_pythons_handlers_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, handlers_restored: None
) -> None:
    name = _module(tmp_path, monkeypatch, 'fake_broken_node', "raise ImportError('no rclpy')\n")
    with pytest.raises(ImportError, match='no rclpy'):
        run_held(name, _held())
    assert tuple(signal.getsignal(h) for h in HELD_SIGNALS) == DEFAULT_HANDLERS


def test_the_node_scripts_hold_the_signals_first_and_run_their_node() -> None:
    """setup.py installs the nodes as plain scripts whose first statements hold the signals
    (a setuptools entry point's generated wrapper scans the installed distributions before
    any code of ours: a Ctrl-C there, ~1.5 s under a loaded launch, still gave a traceback),
    then hand their module to run_held."""
    tree = ast.parse((ROOT / 'setup.py').read_text())
    (scripts,) = [
        kw.value for node in ast.walk(tree) if isinstance(node, ast.Call)
        for kw in node.keywords if kw.arg == 'scripts'
    ]  # fmt: skip
    assert ast.literal_eval(scripts) == ['scripts/simulator', 'scripts/reactionless_controller']
    for name in ('simulator', 'reactionless_controller'):
        body = ast.parse((ROOT / 'scripts' / name).read_text()).body
        statements = [n for n in body if not isinstance(n, ast.Expr | ast.Import)]
        first = statements[0]  # after the docstring and `import signal, sys`: the handlers
        assert isinstance(first, ast.Assign) and isinstance(statements[1], ast.For)
        call = body[-1].value.args[0]  # sys.exit(run_held('ffsim_ros.<name>', received))
        assert ast.literal_eval(call.args[0]) == f'ffsim_ros.{name}'


@pytest.mark.ros
def test_the_installed_script_runs_the_node(ros_env: dict[str, str]) -> None:
    """The venv's installed ``simulator`` (make setup's editable install of the scripts) is
    the node: a bad parameter exits 2 naming it."""
    import shutil
    import subprocess

    script = shutil.which('simulator', path=str(Path(sys.executable).parent))
    assert script is not None
    assert 'run_held' in Path(script).read_text()
    done = subprocess.run(
        [script, '--ros-args', '-p', 'physics_rate_hz:=-5.0'],
        env=ros_env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 2 and 'physics_rate_hz' in done.stderr, done.stderr[-2000:]
