"""The nodes' console scripts hold SIGINT/SIGTERM while their module imports (ffsim_ros.console).

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
import types
from collections.abc import Iterator
from pathlib import Path

import pytest

from ffsim_ros.console import HELD_SIGNALS, import_holding_signals

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
        """,
    )
    assert import_holding_signals(name) is None
    assert sys.modules[name].finished  # not interrupted half-way
    for held in HELD_SIGNALS:  # stopping: a later signal must not raise in the clean-up
        assert signal.getsignal(held) is signal.SIG_IGN
    os.kill(os.getpid(), signal.SIGINT)  # ignored: no KeyboardInterrupt


def test_without_a_signal_the_module_comes_back_and_the_handlers_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, handlers_restored: None
) -> None:
    def mine(signum: int, frame: object) -> None:
        raise AssertionError('not expected')

    before = {signum: signal.signal(signum, mine) for signum in HELD_SIGNALS}
    assert before[signal.SIGINT] is signal.default_int_handler
    name = _module(tmp_path, monkeypatch, 'fake_quiet_node', 'value = 42\n')
    loaded = import_holding_signals(name)
    assert loaded is not None and loaded.value == 42
    for signum in HELD_SIGNALS:
        assert signal.getsignal(signum) is mine


def test_an_import_error_propagates_with_the_handlers_restored(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, handlers_restored: None
) -> None:
    name = _module(tmp_path, monkeypatch, 'fake_broken_node', "raise ImportError('no rclpy')\n")
    before = {signum: signal.getsignal(signum) for signum in HELD_SIGNALS}
    with pytest.raises(ImportError, match='no rclpy'):
        import_holding_signals(name)
    assert {signum: signal.getsignal(signum) for signum in HELD_SIGNALS} == before


def test_the_node_console_scripts_go_through_the_guard(
    monkeypatch: pytest.MonkeyPatch, handlers_restored: None
) -> None:
    """setup.py's node scripts are the guarded ones, and each runs its node module's ``main``
    with the arguments given (the module replaced here by a stand-in recording them)."""
    tree = ast.parse((ROOT / 'setup.py').read_text())
    entries = [
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and ' = ' in node.value
    ]
    scripts = dict(entry.split(' = ') for entry in entries if ':' in entry)
    assert scripts['simulator'] == 'ffsim_ros.console:simulator'
    assert scripts['reactionless_controller'] == 'ffsim_ros.console:reactionless_controller'
    import ffsim_ros.console as console

    for script, module in (
        ('simulator', 'ffsim_ros.simulator'),
        ('reactionless_controller', 'ffsim_ros.reactionless_controller'),
    ):
        stand_in = types.ModuleType(module)
        stand_in.main = lambda args, module=module: (module, args)
        monkeypatch.setitem(sys.modules, module, stand_in)
        assert getattr(console, script)(['--ros-args']) == (module, ['--ros-args'])
