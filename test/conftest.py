"""Shared pytest fixtures for ffsim_ros tests that talk ROS 2 over real DDS.

Isolation rules enforced here, before any test module can import rclpy:

* ``ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST``: no DDS traffic leaves this host.
* ``ROS_DOMAIN_ID``: one id for this pytest process, and a fresh id per test for the
  ``ros_env`` / ``rclpy_context`` fixtures. Ids are reserved with ``flock`` on files in the
  lock directory of ``ffsim_ros.cli.lock_directory`` (the shared folder when it is private to
  this user, else a per-user one; files opened without following
  symlinks), the one the demo and the benchmarks use, so concurrent pytest runs (or xdist
  workers) and demos never share a domain.
* ``ROS_LOG_DIR=<repo>/build/test_ros_logs``.

Fixtures
--------
ros_domain_id
    Per-test reserved domain id (int, 1..101).
ros_env
    Environment dict for ``subprocess`` (``env=ros_env``) on that domain.
rclpy_context
    Initialised ``rclpy.context.Context`` on the same domain; shut down afterwards.
ros_node
    Factory ``ros_node(name, **kwargs)`` creating nodes in ``rclpy_context``.
ros_executor
    ``SingleThreadedExecutor`` bound to ``rclpy_context``.
wait_until
    The :func:`wait_until` helper (spin an executor until a predicate holds).
ros_process
    Launcher for ``python -m <module> ... --ros-args ...`` subprocesses, stopped at teardown
    (SIGINT, then SIGKILL) with their stderr attached to failure reports.

Tests that need ROS mark themselves with ``pytest.mark.ros`` (``pytestmark = pytest.mark.ros``);
they are skipped only when rclpy is genuinely not installed. The rclpy-based fixtures skip
likewise.

With ``FFSIM_REQUIRE_ORACLES=1`` (``make test``) the session refuses to start when a module
that ``make setup`` installs for the tests cannot be imported (:data:`REQUIRED_FOR_TESTS`:
the oracles and rclpy), instead of letting the tests that need it skip: a broken venv must
not pass.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import importlib
import importlib.util
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from rclpy.context import Context
    from rclpy.executors import Executor
    from rclpy.node import Node

REPO_ROOT = Path(__file__).resolve().parent.parent
ROS_LOG_DIR = REPO_ROOT / 'build' / 'test_ros_logs'

#: Domain ids handed out. 0 (the default domain) is never used; 101 is the largest id whose
#: RTPS ports are valid with the default port mapping on Linux.
DOMAIN_ID_MIN, DOMAIN_ID_MAX = 1, 101

#: Guard variable of ros-wheels-bootstrapper: a child must not inherit it, or it would skip
#: setting up the library path of its own interpreter.
BOOTSTRAP_GUARD = '_ROS_WHEELS_BOOTSTRAP_COMPLETE'

#: Modules the tests skip without, all installed by ``make setup`` (requirements/dev.txt and the
#: ROS 2 set-up): required when ``FFSIM_REQUIRE_ORACLES=1``.
REQUIRED_FOR_TESTS = (
    'pinocchio',
    'mujoco',
    'mcap_ros2.reader',
    'pyarrow.parquet',
    'ray',
    'colcon_core',
    'catkin_pkg.package',
    'ament_index_python',
    'rclpy',
)

RCLPY_AVAILABLE = importlib.util.find_spec('rclpy') is not None
RCLPY_MISSING_REASON = (
    'rclpy is not installed in this interpreter (run `make setup`, or source a ROS 2 distro '
    'before creating the venv)'
)


# ----------------------------------------------------------------------------- domain ids
class DomainIdLease:
    """An exclusive reservation of a ROS domain id, held until :meth:`release`.

    Parameters
    ----------
    domain_id : int
        The reserved id.
    handle : int or None
        Descriptor of the lock file holding the ``flock`` (None when locking is unavailable).
    """

    def __init__(self, domain_id: int, handle: int | None) -> None:
        self.domain_id = domain_id
        self._handle = handle

    def release(self) -> None:
        """Give the id back (idempotent)."""
        if self._handle is not None:
            with contextlib.suppress(OSError):
                fcntl.flock(self._handle, fcntl.LOCK_UN)
            os.close(self._handle)
            self._handle = None


_next_domain_offset = os.getpid()


def reserve_domain_id() -> DomainIdLease:
    """Reserve a ROS domain id not used by any other test (of this or a concurrent run).

    Ids are tried round-robin starting from a pid-derived offset, so consecutive tests of one
    run get different ids (no stale discovery data from the previous test's processes).

    Returns
    -------
    DomainIdLease
        The reservation; call :meth:`DomainIdLease.release` when done.
    """
    global _next_domain_offset
    # the folder and the safe opening of the demo's leases (ffsim_ros.cli): one set of ids
    from ffsim_ros.cli import lock_directory, open_lock

    span = DOMAIN_ID_MAX - DOMAIN_ID_MIN + 1
    try:
        lock_dir = lock_directory()
    except (OSError, RuntimeError):
        lock_dir = None
    for _ in range(span):
        domain_id = DOMAIN_ID_MIN + _next_domain_offset % span
        _next_domain_offset += 1
        try:
            if lock_dir is None:
                raise OSError('no private lock directory')
            handle = open_lock(lock_dir / f'{domain_id}.lock')
        except OSError:
            # No lock directory usable: fall back to the pid-derived id, unlocked.
            return DomainIdLease(domain_id, None)
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            os.close(handle)
            if exc.errno in (errno.EAGAIN, errno.EACCES, errno.EWOULDBLOCK):
                continue
            raise
        return DomainIdLease(domain_id, handle)
    raise RuntimeError(f'all ROS domain ids {DOMAIN_ID_MIN}..{DOMAIN_ID_MAX} are in use')


def _isolated_env(base: dict[str, str], domain_id: int) -> dict[str, str]:
    env = dict(base)
    env['ROS_DOMAIN_ID'] = str(domain_id)
    env['ROS_AUTOMATIC_DISCOVERY_RANGE'] = 'LOCALHOST'
    env.pop('ROS_STATIC_PEERS', None)
    env['ROS_LOG_DIR'] = str(ROS_LOG_DIR)
    env.pop(BOOTSTRAP_GUARD, None)
    env.setdefault('PYTHONUNBUFFERED', '1')
    return env


# Applied at import time: conftest.py is imported before any test module (and so before any
# test can create an rclpy context). The lease is held for the whole pytest process.
ROS_LOG_DIR.mkdir(parents=True, exist_ok=True)
_SESSION_DOMAIN = reserve_domain_id()
os.environ['ROS_DOMAIN_ID'] = str(_SESSION_DOMAIN.domain_id)
os.environ['ROS_AUTOMATIC_DISCOVERY_RANGE'] = 'LOCALHOST'
os.environ.pop('ROS_STATIC_PEERS', None)
os.environ['ROS_LOG_DIR'] = str(ROS_LOG_DIR)


# ----------------------------------------------------------------------------- pytest hooks
def _require_test_modules() -> None:
    """Import each of :data:`REQUIRED_FOR_TESTS`; a UsageError naming those that fail."""
    missing = []
    for name in REQUIRED_FOR_TESTS:
        try:
            importlib.import_module(name)
        except Exception as exc:  # noqa: BLE001 - a broken binary module raises anything
            missing.append(f'{name} ({type(exc).__name__}: {exc})')
    if missing:
        raise pytest.UsageError(
            'FFSIM_REQUIRE_ORACLES=1: the tests would skip without '
            + '; '.join(missing)
            + ' (run `make setup`, or unset FFSIM_REQUIRE_ORACLES to let them skip)'
        )


def pytest_configure(config: pytest.Config) -> None:
    # A background job of a non-interactive shell (``make test &`` in a CI script, ``nohup
    # ... &``) starts with SIGINT ignored, and every process it starts inherits that: a node
    # keeps an ignored SIGINT ignored (``ShutdownSignals.install``, as POSIX asks), so the
    # tests that deliver SIGINT as a terminal does would find it without effect. The suite
    # runs as from a terminal: Python's own handler here, the default action in each child.
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    # (in the main process only: xdist's workers need not import them all again)
    if os.environ.get('FFSIM_REQUIRE_ORACLES') == '1' and not hasattr(config, 'workerinput'):
        _require_test_modules()
    config.addinivalue_line(
        'markers', 'ros: needs rclpy and talks over DDS (skipped only if rclpy is not installed)'
    )
    # lark (imported by rosidl's Python runtime) still imports these deprecated modules.
    for module in ('sre_parse', 'sre_constants'):
        config.addinivalue_line(
            'filterwarnings', f"ignore:module '{module}' is deprecated:DeprecationWarning"
        )


def pytest_unconfigure(config: pytest.Config) -> None:
    _SESSION_DOMAIN.release()  # the session's domain id (reserved at import, below)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if RCLPY_AVAILABLE:
        return
    skip = pytest.mark.skip(reason=RCLPY_MISSING_REASON)
    for item in items:
        if 'ros' in item.keywords:
            item.add_marker(skip)


_PROCESSES_KEY = pytest.StashKey[list['RosProcess']]()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    outcome = yield
    report = outcome.get_result()
    if report.when in ('setup', 'call') and report.failed:
        for proc in item.stash.get(_PROCESSES_KEY, []):
            report.sections.append((f'ROS process {proc.name}', proc.describe()))


def _require_rclpy() -> None:
    if not RCLPY_AVAILABLE:
        pytest.skip(RCLPY_MISSING_REASON)


# ------------------------------------------------------------------------------- fixtures
@pytest.fixture
def ros_domain_id() -> Iterator[int]:
    """Reserve a ROS domain id for this test only.

    Yields
    ------
    int
        Domain id shared by :func:`ros_env` and :func:`rclpy_context`.
    """
    lease = reserve_domain_id()
    try:
        yield lease.domain_id
    finally:
        lease.release()


@pytest.fixture
def ros_env(ros_domain_id: int) -> dict[str, str]:
    """Environment for ROS subprocesses of this test (``subprocess.Popen(..., env=ros_env)``).

    Returns
    -------
    dict of str to str
        Copy of ``os.environ`` with this test's ``ROS_DOMAIN_ID``,
        ``ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST``, ``ROS_LOG_DIR`` and without the
        ros-wheels-bootstrapper guard variable.
    """
    return _isolated_env(dict(os.environ), ros_domain_id)


@pytest.fixture
def rclpy_context(ros_domain_id: int) -> Iterator[Context]:
    """Initialised rclpy context on this test's domain (the one of ``ros_env``).

    Yields
    ------
    rclpy.context.Context
        Shut down at teardown.
    """
    _require_rclpy()
    import rclpy
    from rclpy.context import Context

    context = Context()
    rclpy.init(args=[], context=context, domain_id=ros_domain_id)
    try:
        yield context
    finally:
        context.try_shutdown()


@pytest.fixture
def ros_executor(rclpy_context: Context) -> Iterator[Executor]:
    """Single-threaded executor bound to ``rclpy_context``.

    Yields
    ------
    rclpy.executors.SingleThreadedExecutor
        Shut down at teardown (before the context).
    """
    from rclpy.executors import SingleThreadedExecutor

    executor = SingleThreadedExecutor(context=rclpy_context)
    try:
        yield executor
    finally:
        executor.shutdown(timeout_sec=1.0)


@pytest.fixture
def ros_node(rclpy_context: Context) -> Iterator[Callable[..., Node]]:
    """Factory creating nodes in ``rclpy_context``; they are destroyed at teardown.

    Yields
    ------
    callable
        ``ros_node(name, **kwargs) -> rclpy.node.Node``; kwargs go to ``rclpy.node.Node``.
    """
    from rclpy.node import Node

    nodes: list[Node] = []

    def make(name: str, **kwargs: Any) -> Node:
        node = Node(name, context=rclpy_context, **kwargs)
        nodes.append(node)
        return node

    try:
        yield make
    finally:
        for node in reversed(nodes):
            node.destroy_node()


def wait_until(
    predicate: Callable[[], object],
    timeout: float,
    executor: Executor | None = None,
    poll: float = 0.05,
) -> bool:
    """Wait until ``predicate()`` is truthy, spinning ``executor`` meanwhile.

    Use this instead of sleeping for DDS discovery, e.g.
    ``assert wait_until(lambda: sub.get_publisher_count() > 0, 20.0, executor)``.

    Parameters
    ----------
    predicate : callable
        Checked before each spin; its truthiness is what counts.
    timeout : float
        Seconds to wait at most.
    executor : rclpy.executors.Executor, optional
        Spun with ``spin_once(timeout_sec=poll)`` between checks, so callbacks (subscriptions,
        timers) run. Without one, the helper sleeps ``poll`` between checks.
    poll : float
        Seconds per spin/sleep step.

    Returns
    -------
    bool
        True if the predicate held within ``timeout``, else the predicate's final value as
        bool (checked once more after the deadline).
    """
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        if executor is not None:
            executor.spin_once(timeout_sec=poll)
        else:
            time.sleep(poll)
    return bool(predicate())


@pytest.fixture(name='wait_until')
def wait_until_fixture() -> Callable[..., bool]:
    """The :func:`wait_until` helper, as a fixture (tests need no import from conftest).

    Returns
    -------
    callable
        ``wait_until(predicate, timeout, executor=None, poll=0.05) -> bool``.
    """
    return wait_until


def publish_until(
    publish: Callable[[], object],
    predicate: Callable[[], object],
    timeout: float,
    executor: Executor,
    every: float = 0.2,
) -> bool:
    """Call ``publish()`` every ``every`` seconds until ``predicate()`` holds.

    A publisher that sees a subscription (``get_subscription_count() > 0``) does not mean
    the subscriber has matched that publisher yet: each side discovers the other on its own,
    and a volatile reader drops what a writer sent before the reader matched it. A test that
    publishes one message right after discovery can therefore lose it; a command stream
    (what these topics carry) repeats anyway, so the test repeats too. Use it only for
    messages whose repetition changes nothing (the same command again).

    Returns
    -------
    bool
        True if the predicate held within ``timeout``.
    """
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        publish()
        if wait_until(predicate, min(every, max(0.0, deadline - time.monotonic())), executor):
            return True
    return bool(predicate())


@pytest.fixture(name='publish_until')
def publish_until_fixture(ros_executor) -> Callable[..., bool]:
    """:func:`publish_until` on the test's executor: ``publish_until(publish, predicate,
    timeout=20.0)``.

    Returns
    -------
    callable
        ``publish_until(publish, predicate, timeout=20.0) -> bool``.
    """

    def bound(publish, predicate, timeout: float = 20.0) -> bool:
        return publish_until(publish, predicate, timeout, ros_executor)

    return bound


class RosProcess:
    """A ROS subprocess started by the ``ros_process`` fixture.

    Parameters
    ----------
    name : str
        Label used in failure reports.
    argv : sequence of str
        Command line.
    env : dict of str to str
        Environment (normally ``ros_env``).
    log_dir : Path
        Directory receiving ``<name>.stdout`` / ``<name>.stderr``.
    cwd : Path, optional
        Working directory (default: the repository root).
    """

    def __init__(
        self,
        name: str,
        argv: Sequence[str],
        env: dict[str, str],
        log_dir: Path,
        cwd: Path | None = None,
    ) -> None:
        self.name = name
        self.argv = list(argv)
        self.stdout_path = log_dir / f'{name}.stdout'
        self.stderr_path = log_dir / f'{name}.stderr'
        with open(self.stdout_path, 'wb') as out, open(self.stderr_path, 'wb') as err:
            self.popen = subprocess.Popen(
                self.argv,
                env=env,
                cwd=str(cwd or REPO_ROOT),
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=err,
                start_new_session=True,
            )

    @property
    def pid(self) -> int:
        """Process id."""
        return self.popen.pid

    @property
    def returncode(self) -> int | None:
        """Exit status, or None while running."""
        return self.popen.poll()

    def is_running(self) -> bool:
        """Return True while the process has not exited."""
        return self.popen.poll() is None

    def stdout(self) -> str:
        """Everything the process wrote to stdout so far."""
        return self.stdout_path.read_text(errors='replace')

    def stderr(self) -> str:
        """Everything the process wrote to stderr so far."""
        return self.stderr_path.read_text(errors='replace')

    def describe(self, tail: int = 8000) -> str:
        """Command, status and the tail of stderr/stdout, for assertion messages.

        Parameters
        ----------
        tail : int
            Characters kept from the end of each stream.

        Returns
        -------
        str
            Human-readable summary.
        """
        status = 'running' if self.is_running() else f'exited with {self.returncode}'
        return (
            f'$ {" ".join(self.argv)}\n[{status}]\n'
            f'--- stderr ---\n{self.stderr()[-tail:]}\n--- stdout ---\n{self.stdout()[-tail:]}'
        )

    def stop(self, timeout: float = 5.0) -> int:
        """Stop the process: SIGINT, then SIGKILL after ``timeout`` seconds.

        The signal goes to the whole process group, so children it spawned stop too.

        Parameters
        ----------
        timeout : float
            Seconds to wait after SIGINT.

        Returns
        -------
        int
            The exit status.
        """
        if self.popen.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.popen.pid, signal.SIGINT)
            try:
                self.popen.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.popen.pid, signal.SIGKILL)
                self.popen.wait(timeout=timeout)
        return self.popen.returncode


class RosProcessLauncher:
    """Starts ROS Python subprocesses on the test's domain; see the ``ros_process`` fixture.

    Parameters
    ----------
    env : dict of str to str
        Base environment (the test's ``ros_env``).
    log_dir : Path
        Where process output files go.
    registry : list of RosProcess
        Processes started so far (stopped at teardown, reported on failure).
    """

    def __init__(self, env: dict[str, str], log_dir: Path, registry: list[RosProcess]) -> None:
        self.env = env
        self.log_dir = log_dir
        self.processes = registry

    def __call__(
        self,
        module: str,
        *args: str,
        ros_args: Sequence[str] = (),
        name: str | None = None,
        env: dict[str, str] | None = None,
        cwd: Path | None = None,
    ) -> RosProcess:
        """Start ``python -m module *args --ros-args *ros_args``.

        Parameters
        ----------
        module : str
            Module to run, e.g. ``'ffsim_ros.simulator'``.
        *args : str
            Arguments before ``--ros-args``.
        ros_args : sequence of str
            ROS arguments, e.g. ``['-r', '__node:=sim', '-p', 'rate:=50.0']``.
        name : str, optional
            Label for reports and output file names (default: the module name).
        env : dict of str to str, optional
            Extra variables on top of ``ros_env``.
        cwd : Path, optional
            Working directory (default: the repository root).

        Returns
        -------
        RosProcess
            The running process.
        """
        return self._start(['-m', module, *args], ros_args, name or module, env, cwd)

    def code(
        self,
        source: str,
        *args: str,
        ros_args: Sequence[str] = (),
        name: str = 'code',
        env: dict[str, str] | None = None,
        cwd: Path | None = None,
    ) -> RosProcess:
        """Start ``python -c source *args --ros-args *ros_args`` (for ad-hoc test peers).

        Parameters
        ----------
        source : str
            Python source; ``sys.argv[1:]`` holds ``args`` and the ROS arguments.
        *args, ros_args, name, env, cwd
            As for :meth:`__call__`.

        Returns
        -------
        RosProcess
            The running process.
        """
        return self._start(['-c', source, *args], ros_args, name, env, cwd)

    def _start(
        self,
        python_args: list[str],
        ros_args: Sequence[str],
        name: str,
        env: dict[str, str] | None,
        cwd: Path | None,
    ) -> RosProcess:
        argv = [sys.executable, *python_args]
        if ros_args:
            argv += ['--ros-args', *ros_args]
        full_env = dict(self.env)
        if env:
            full_env.update(env)
        full_env.pop(BOOTSTRAP_GUARD, None)
        label = f'{len(self.processes)}-{name}'.replace('/', '_')
        proc = RosProcess(label, argv, full_env, self.log_dir, cwd)
        self.processes.append(proc)
        return proc


@pytest.fixture
def ros_process(
    request: pytest.FixtureRequest, ros_env: dict[str, str], tmp_path: Path
) -> Iterator[RosProcessLauncher]:
    """Launcher for ROS Python subprocesses on this test's domain.

    ``ros_process('ffsim_ros.simulator', ros_args=['-p', 'rate:=50.0'])`` runs
    ``[sys.executable, '-m', 'ffsim_ros.simulator', '--ros-args', '-p', 'rate:=50.0']`` with
    ``env=ros_env``; ``ros_process.code(src, ...)`` runs ``python -c src``. Every process is
    stopped at teardown (SIGINT, then SIGKILL), and the stderr of all of them is attached to
    the report of a failing test (``proc.describe()`` gives it for assertion messages).

    Yields
    ------
    RosProcessLauncher
        Callable starting processes.
    """
    _require_rclpy()
    registry: list[RosProcess] = []
    request.node.stash[_PROCESSES_KEY] = registry
    log_dir = tmp_path / 'ros_processes'
    log_dir.mkdir()
    try:
        yield RosProcessLauncher(ros_env, log_dir, registry)
    finally:
        for proc in reversed(registry):
            proc.stop()
