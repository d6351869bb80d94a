"""colcon really builds and installs this package in a temporary workspace, as a ROS 2 user's
``colcon build`` does (colcon-core and colcon-ros from PyPI, the ``ament_python`` build type of
package.xml): the install tree a workspace gets, and the ahead-of-time compiled kernels.

Both layouts are built: a plain install (``setup.py build`` + ``install``: the modules and the
kernels' numba caches copied into ``install/``) and ``--symlink-install`` (``setup.py develop``:
the modules and shared files linked to the source). The installed console scripts, the shared
files (found through the ament index the install registers) and the package itself are then
used from the install, not from this checkout; the caches of a plain install are checked to
be complete: a process that runs the simulator's engine and the reactionless controller from
it writes no cache file (compiles nothing).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip('colcon_core', reason='colcon (requirements/dev.txt) not installed')

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = 'ffsim_ros'
#: What a source checkout holds that setup.py builds from (tests, benchmarks, docs left out).
SOURCES = (
    'setup.py',
    'setup.cfg',
    'package.xml',
    'resource',
    'scripts',
    PACKAGE,
    'launch',
    'config',
)
SHARED = ('launch', 'config', 'urdf', 'models')
#: Kinds of shared files installed (a folder's README stays in the source).
INSTALLED = ('.py', '.yaml', '.rviz', '.urdf')
SCRIPTS = ('simulator', 'reactionless_controller', 'ffsim', 'ffsim_campaign')

WORKLOAD = """
import numpy as np
import ffsim_ros
import ffsim_ros.dynamics as D
from ffsim_ros.control import ReactionlessController
from ffsim_ros.resources import sample_robot, share_dir
from ffsim_ros.sim import Engine
model = D.load_urdf(sample_robot('ffsim_servicer_7dof'))
engine = Engine(model, D.neutral(model), np.zeros(model.nv), dt_ns=1_000_000)
engine.command_efforts(np.full(model.n, 0.1))
snap = engine.advance(10)
assert snap.step == 10 and not snap.faulted
goal = D.link_pose(model, snap.q, 'ee_link')[0] + np.array([0.1, 0.2, -0.2])
law = ReactionlessController(model, 'ee_link', mode='reactionless')
assert np.all(np.isfinite(law.compute(snap.q, snap.v, goal, attitude_reference=snap.q[3:7]).tau))
print(ffsim_ros.__file__)
print(share_dir())
"""


def _checkout(dest: Path) -> None:
    """The package's sources as a checkout after ``make setup`` has them: modification times
    kept, the kernels' numba caches included, Python byte code left out."""
    dest.mkdir(parents=True)
    for name in SOURCES + ('urdf', 'models'):
        src = ROOT / name
        if src.is_dir():
            shutil.copytree(
                src, dest / name, ignore=shutil.ignore_patterns('*.pyc', 'build', 'log')
            )
        else:
            shutil.copy2(src, dest / name)


def _colcon(ws: Path, *extra: str) -> str:
    """``colcon build`` in ``ws``; its output (asserted to succeed)."""
    env = {k: v for k, v in os.environ.items() if k != 'NUMBA_CACHE_DIR'}
    env['AMENT_PREFIX_PATH'] = ''  # no underlay: this workspace alone
    colcon = [
        sys.executable,
        '-c',
        'import sys; from colcon_core.command import main; sys.exit(main())',
    ]
    done = subprocess.run(
        [*colcon, '--log-base', str(ws / 'log'), 'build', '--event-handlers',
         'console_direct+', *extra],
        cwd=ws, env=env, capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    out = done.stdout + done.stderr
    assert done.returncode == 0, out[-4000:]
    assert 'Finished <<< ffsim_ros' in out, out[-4000:]
    return out


def _sourced_env(ws: Path, base: dict[str, str]) -> dict[str, str]:
    """``base`` after ``. install/setup.sh`` of ``ws`` (what a user's shell has after
    sourcing the workspace), without an underlay or a numba cache folder of its own."""
    clean = {
        k: v
        for k, v in base.items()
        if k not in ('NUMBA_CACHE_DIR', 'PYTHONPATH', 'AMENT_PREFIX_PATH')
    }
    done = subprocess.run(
        ['sh', '-c', '. ./install/setup.sh && env -0'], cwd=ws, env=clean, capture_output=True,
        timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    return dict(item.split('=', 1) for item in done.stdout.decode().split('\0') if '=' in item)


def _caches(folder: Path) -> dict[str, tuple[int, int]]:
    """numba cache files under ``folder``: relative path -> (mtime_ns, size)."""
    out = {}
    for path in folder.rglob('__pycache__/*.nb[ic]'):
        st = path.stat()
        out[str(path.relative_to(folder))] = (st.st_mtime_ns, st.st_size)
    return out


def test_colcon_install_runs_from_the_install_tree_and_compiles_nothing(
    tmp_path: Path, ros_env: dict[str, str]
) -> None:
    ws = tmp_path / 'ws'
    src = ws / 'src' / PACKAGE
    _checkout(src)
    out = _colcon(ws)
    assert 'kernels compiled and cached' in out, out[-4000:]
    # the checkout's caches reused, with the digest of their sources: not taken for stale
    # (deleted and compiled again, 150 s of a fresh clone's CI when the digest was not copied)
    assert 'stale cache files removed' not in out, out[-4000:]
    prefix = ws / 'install' / PACKAGE
    share = prefix / 'share' / PACKAGE

    # what setup.py's data_files promise, file for file
    assert (prefix / 'share/ament_index/resource_index/packages' / PACKAGE).is_file()
    assert (share / 'package.xml').read_bytes() == (src / 'package.xml').read_bytes()
    for folder in SHARED:
        wanted = {p.relative_to(src) for p in (src / folder).rglob('*') if p.suffix in INSTALLED}
        got = {p.relative_to(share) for p in (share / folder).rglob('*') if p.is_file()}
        assert wanted and got == wanted, (folder, sorted(map(str, wanted ^ got)))
    for script in SCRIPTS:  # where `ros2 run ffsim_ros <script>` looks
        assert os.access(prefix / 'lib' / PACKAGE / script, os.X_OK), script
    site = next((prefix / 'lib').glob('python3*/site-packages'))
    modules = {p.relative_to(src) for p in (src / PACKAGE).rglob('*.py')}
    assert {p.relative_to(site) for p in (site / PACKAGE).rglob('*.py')} == modules
    caches = _caches(site / PACKAGE)
    assert len(caches) >= 50, len(caches)  # the kernels of every module, not a stray one

    # the package, its shared files and its kernels used from the install, nothing compiled
    env = _sourced_env(ws, ros_env)
    run = subprocess.run(
        [sys.executable, '-c', WORKLOAD], cwd=tmp_path, env=env, capture_output=True,
        text=True, timeout=600,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr[-4000:]
    module_file, share_dir = run.stdout.split()[-2:]
    assert Path(module_file).resolve() == (site / PACKAGE / '__init__.py').resolve()
    assert Path(share_dir).resolve() == share.resolve()
    assert _caches(site / PACKAGE) == caches, 'the installed kernels were compiled again'

    # the console scripts run (the shebang and entry points colcon wrote)
    cli = subprocess.run(
        [str(prefix / 'lib' / PACKAGE / 'ffsim'), '--help'], env=env, capture_output=True,
        text=True, timeout=300,
    )  # fmt: skip
    assert cli.returncode == 0 and 'usage' in cli.stdout.lower(), cli.stderr[-2000:]
    node = subprocess.run(
        [str(prefix / 'lib' / PACKAGE / 'simulator'), '--ros-args', '-p',
         'physics_rate_hz:=-5.0'],
        env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert node.returncode == 2, (node.returncode, node.stderr[-2000:])
    assert 'physics_rate_hz' in node.stderr + node.stdout


def test_symlink_install_links_the_sources(tmp_path: Path) -> None:
    """``colcon build --symlink-install`` (the README's command): the package and its shared
    files are the source tree's, so an edit needs no rebuild; the kernels are compiled in
    place, where the linked modules keep their caches."""
    ws = tmp_path / 'ws'
    src = ws / 'src' / PACKAGE
    _checkout(src)
    out = _colcon(ws, '--symlink-install')
    assert 'kernels compiled and cached' in out, out[-4000:]
    prefix = ws / 'install' / PACKAGE
    launch = prefix / 'share' / PACKAGE / 'launch' / 'ffsim.launch.py'
    assert launch.is_symlink() and launch.resolve() == (src / 'launch/ffsim.launch.py').resolve()
    env = _sourced_env(ws, dict(os.environ))
    run = subprocess.run(
        [sys.executable, '-c', 'import ffsim_ros; print(ffsim_ros.__file__)'],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr[-4000:]
    assert Path(run.stdout.split()[-1]).resolve() == (src / PACKAGE / '__init__.py').resolve()
    for node, param in (  # the nodes' scripts run the nodes: a bad parameter exits 2
        ('simulator', 'physics_rate_hz'),
        ('reactionless_controller', 'state_timeout'),
    ):
        script = prefix / 'lib' / PACKAGE / node
        assert os.access(script, os.X_OK)
        bad = subprocess.run(
            [str(script), '--ros-args', '-p', f'{param}:=-1.0'],
            cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        assert bad.returncode == 2 and param in bad.stderr, bad.stderr[-2000:]
