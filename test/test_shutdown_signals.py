"""Ctrl-C and SIGTERM end a node with exit code 0 and nothing on stderr, however they land.

Found with the real ``ros2 launch`` (2026-11-27): a terminal Ctrl-C reaches each node twice
(from the terminal, then forwarded by launch 50-200 ms later); the second landed in the
clean-up or in the interpreter's finalization (exit -2, a ``KeyboardInterrupt`` traceback); and
a single SIGINT landing inside a pybind11 call came out as a ``RuntimeError`` while
``rclpy.ok()`` was still True (exit 1, "failed:" and a traceback). ``run_node``'s handling is
tested in-process with signals raised (or the installed handler called) at the point under
test, so no timing luck is involved, and end to end with real signals to the node processes.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable, Iterator

import pytest

pytestmark = pytest.mark.ros

#: What pybind11 raises when a KeyboardInterrupt interrupts the conversion of a call's result.
PYBIND_ERROR = "Unable to convert call argument '0' to Python object"


@pytest.fixture
def node_env(ros_domain_id: int, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """run_node in this process, on the test's domain; the signal handlers put back after."""
    monkeypatch.setenv('ROS_DOMAIN_ID', str(ros_domain_id))
    monkeypatch.setenv('ROS_AUTOMATIC_DISCOVERY_RANGE', 'LOCALHOST')
    saved = {signum: signal.getsignal(signum) for signum in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for signum, handler in saved.items():
            signal.signal(signum, handler)


def _deliver(signum: int) -> None:
    """What Python does when ``signum`` arrives: call the handler installed for it."""
    handler = signal.getsignal(signum)
    assert callable(handler), handler
    handler(signum, None)


def _probe(tick: Callable[[], None], on_destroy: Callable[[], None] = lambda: None):
    """A factory for run_node: a node calling ``tick`` from a timer, ``on_destroy`` when it is
    destroyed."""
    from rclpy.node import Node

    class Probe(Node):
        def destroy_node(self) -> None:
            on_destroy()
            super().destroy_node()

    def factory() -> Node:
        node = Probe('shutdown_signal_probe')
        node.create_timer(0.01, tick)
        return node

    return factory


def _run(factory: Callable) -> int:
    """``run_node(factory)``; a KeyboardInterrupt escaping it fails the test (pytest would take
    it for the user's Ctrl-C and stop the run)."""
    from ffsim_ros.node_support.common import run_node

    try:
        return run_node(factory, 'probe', args=[])
    except KeyboardInterrupt:
        pytest.fail('KeyboardInterrupt escaped run_node (a signal in its clean-up)')


@pytest.mark.parametrize('signalled', [True, False])
def test_an_error_after_a_shutdown_signal_is_the_shutdown_asked_for(
    signalled: bool, node_env: None, capsys: pytest.CaptureFixture[str]
) -> None:
    """An error raised once a signal came, the context still valid (what a pybind11 call made
    of a KeyboardInterrupt landing in it): the shutdown asked for, exit 0, nothing printed.
    The same error without a signal is a bug: exit 1 with the traceback."""
    from ffsim_ros.node_support.common import EXIT_FATAL

    def tick() -> None:
        try:
            if signalled:
                _deliver(signal.SIGINT)
            raise KeyboardInterrupt  # (without a signal: only the error below)
        except KeyboardInterrupt:
            raise RuntimeError(PYBIND_ERROR) from None

    code = _run(_probe(tick))
    err = capsys.readouterr().err
    if signalled:
        assert code == 0 and err == ''
    else:
        assert code == EXIT_FATAL and 'probe: failed:' in err and PYBIND_ERROR in err


@pytest.mark.parametrize('signum', [signal.SIGINT, signal.SIGTERM])
def test_a_second_signal_does_not_interrupt_the_clean_up(
    signum: int, node_env: None, capsys: pytest.CaptureFixture[str]
) -> None:
    """Ctrl-C under ros2 launch: the first signal ends the spinning, the second comes while
    the node is destroyed; both signals are ignored afterwards (Python's finalization would
    reset its handlers to the default action: killed by the signal, exit -2)."""
    signalled = []

    def first() -> None:
        if not signalled:  # (the timer may fire once more before the spinning ends)
            signalled.append(True)
            signal.raise_signal(signum)

    destroyed = []

    def second() -> None:
        signal.raise_signal(signal.SIGINT)
        destroyed.append(True)

    code = _run(_probe(first, second))
    assert code == 0 and destroyed == [True]
    assert capsys.readouterr().err == ''
    assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_IGN


def test_a_signal_ends_the_spinning_through_rclpy_raising_nothing(node_env: None) -> None:
    """rclpy's own handler (installed by rclpy.init on top of run_node's) is kept and chains
    to run_node's; a SIGINT while spinning ends the node through rclpy's shutdown of the
    context (exit 0), with no KeyboardInterrupt in the callback it lands in (one in a pybind11
    call or in a Task's constructor made other errors)."""
    import rclpy.signals

    from ffsim_ros.node_support.common import ShutdownSignals

    seen, interrupted = [], []

    def tick() -> None:
        options = rclpy.signals.get_current_signal_handlers_options()
        seen.append((options, type(signal.getsignal(signal.SIGINT))))
        try:
            signal.raise_signal(signal.SIGINT)
        except KeyboardInterrupt:
            interrupted.append(True)
            raise

    assert _run(_probe(tick)) == 0
    assert seen[0] == (rclpy.signals.SignalHandlerOptions.ALL, ShutdownSignals)
    assert interrupted == []


@pytest.mark.parametrize('signum', [signal.SIGINT, signal.SIGTERM])
def test_a_signal_while_the_node_starts_stops_it_there(
    signum: int, node_env: None, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before spinning (a node's constructor can take seconds) the first signal raises
    KeyboardInterrupt there, as Python's handler does: exit 0, the node never spins."""
    from rclpy.node import Node

    ticks = []

    def factory() -> Node:
        node = _probe(lambda: ticks.append(True))()
        try:
            signal.raise_signal(signum)
        except KeyboardInterrupt:
            node.destroy_node()  # (what destroy_on_failure does in the real nodes)
            raise
        return node

    assert _run(factory) == 0
    assert ticks == [] and capsys.readouterr().err == ''


def test_the_handlers_are_put_back_without_a_signal(node_env: None) -> None:
    """A node that ends without a signal (here: its context shut down) leaves the process's
    handlers as they were (several nodes are run in one process by the tests)."""
    import rclpy

    before = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)
    assert _run(_probe(rclpy.shutdown)) == 0
    assert (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)) == before


@pytest.mark.parametrize('failure', ['parameter', 'fatal'])
def test_a_failing_node_ignores_the_signals_of_its_exit(
    failure: str, node_env: None, capsys: pytest.CaptureFixture[str]
) -> None:
    """A node exiting with an error code (2: a bad parameter; 1: a failure) and no signal
    received leaves SIGINT and SIGTERM ignored: ``ros2 launch`` sends SIGINT to the other
    nodes when one ends, and one landing in this node's exit (the interpreter's finalization
    sets the default action back) killed it (launch: "exit code -2" instead of 2)."""
    from rclpy.node import Node

    from ffsim_ros.node_support.common import (
        EXIT_FATAL,
        EXIT_INVALID_PARAMETER,
        FatalNodeError,
        ParameterValueError,
    )

    def factory() -> Node:
        if failure == 'parameter':
            raise ParameterValueError('rate: expected a positive number, got -1')
        raise FatalNodeError('a worker failed')

    code = _run(factory)
    assert code == (EXIT_INVALID_PARAMETER if failure == 'parameter' else EXIT_FATAL)
    assert capsys.readouterr().err.startswith('probe: ')
    assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_IGN


def test_a_sigint_in_a_bad_parameter_exit_keeps_exit_code_2(ros_process) -> None:
    """End to end, made deterministic: the simulator exits 2 on a bad parameter, and the
    SIGINT that ros2 launch sends when the controller died of the same parameter arrives
    after ``main`` returned, while the process exits: the exit code stays 2 (it was -2, a
    KeyboardInterrupt at the default handler)."""
    source = (
        'import os, signal, sys\n'
        'from ffsim_ros.simulator import main\n'
        "code = main(['simulator', '--ros-args', '-p', 'scenario:=nosuch'])\n"
        'os.kill(os.getpid(), signal.SIGINT)\n'
        'os.kill(os.getpid(), signal.SIGTERM)\n'
        'sys.exit(code)\n'
    )
    proc = ros_process.code(source, name='bad_parameter')
    code = proc.popen.wait(timeout=120)
    assert code == 2, proc.describe()
    err = proc.stderr()
    assert 'invalid parameter: scenario: expected a shipped scenario name' in err, proc.describe()
    assert 'KeyboardInterrupt' not in err, proc.describe()


def _wait_until_spinning(fqn: str, ros_node, ros_executor, wait_until) -> None:
    """Wait until the node ``fqn`` answers a parameter service call: discovered, built and
    spinning."""
    from rcl_interfaces.srv import ListParameters

    node = ros_node('signal_test_client')
    ros_executor.add_node(node)
    client = node.create_client(ListParameters, f'{fqn}/list_parameters')
    assert wait_until(client.service_is_ready, 90.0, ros_executor), f'{fqn} not discovered'
    future = client.call_async(ListParameters.Request())
    assert wait_until(future.done, 30.0, ros_executor), f'{fqn} does not answer'


@pytest.mark.parametrize(
    ('module', 'gap'),
    [
        ('ffsim_ros.simulator', 0.05),
        ('ffsim_ros.reactionless_controller', 0.05),
        ('ffsim_ros.simulator', 0.3),
    ],
    ids=['simulator', 'controller', 'simulator-late'],
)
def test_two_sigints_end_a_node_cleanly(
    module: str, gap: float, ros_process, ros_node, ros_executor, wait_until
) -> None:
    """A terminal Ctrl-C under ros2 launch, to a running node: SIGINT, then one more ``gap``
    seconds later (in the clean-up at 50 ms, in the interpreter's finalization at 300 ms):
    exit code 0, no traceback."""
    proc = ros_process(module, name='node')
    name = module.rsplit('.', 1)[1]
    fqn = '/ffsim_simulator' if name == 'simulator' else '/ffsim_reactionless_controller'
    _wait_until_spinning(fqn, ros_node, ros_executor, wait_until)
    os.kill(proc.pid, signal.SIGINT)
    time.sleep(gap)  # the delay between the two signals under test, not a wait for anything
    if proc.is_running():
        os.kill(proc.pid, signal.SIGINT)
    code = proc.popen.wait(timeout=30)
    err = proc.stderr()
    assert code == 0, proc.describe()
    assert 'Traceback' not in err and 'KeyboardInterrupt' not in err, proc.describe()
