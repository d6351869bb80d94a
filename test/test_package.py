"""Package checks: package.xml parses and declares every import; the code is lint-clean."""

from __future__ import annotations

import ast
import importlib.metadata
import os
import re
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / 'ffsim_ros'

#: Python module -> the key it is declared under in package.xml (rosdep keys for pip/system
#: packages, package names for ROS packages).
MODULE_KEYS = {
    'numpy': 'python3-numpy',
    'scipy': 'python3-scipy',
    'numba': 'python3-numba',
    'coal': 'coal',
    'rclpy': 'rclpy',
    'std_msgs': 'std_msgs',
    'geometry_msgs': 'geometry_msgs',
    'sensor_msgs': 'sensor_msgs',
    'nav_msgs': 'nav_msgs',
    'visualization_msgs': 'visualization_msgs',
    'rosgraph_msgs': 'rosgraph_msgs',
    'std_srvs': 'std_srvs',
    'rcl_interfaces': 'rcl_interfaces',
    'builtin_interfaces': 'builtin_interfaces',
    'diagnostic_msgs': 'diagnostic_msgs',
    'tf2_msgs': 'tf2_msgs',
    'simulation_interfaces': 'simulation_interfaces',
    'control_msgs': 'control_msgs',
    'trajectory_msgs': 'trajectory_msgs',
    'tf2_ros': 'tf2_ros',
    'ament_index_python': 'ament_index_python',
    'launch': 'launch',
    'launch_ros': 'launch_ros',
    'matplotlib': 'python3-matplotlib',
    'mcap': 'mcap-ros2-support',  # rosdep's key (pip); it requires mcap
    'mcap_ros2': 'mcap-ros2-support',
    'yaml': 'python3-yaml',
}


def _declared() -> set[str]:
    catkin_pkg = pytest.importorskip('catkin_pkg.package')
    pkg = catkin_pkg.parse_package(str(ROOT / 'package.xml'))
    pkg.validate()
    assert pkg.name == 'ffsim_ros' and pkg.package_format == 3
    assert pkg.get_build_type() == 'ament_python'
    return {d.name for d in pkg.exec_depends + pkg.build_depends + pkg.build_export_depends}


def _top_level_imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name.split('.')[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split('.')[0])
    return names


def test_package_xml_parses_and_declares_every_import() -> None:
    declared = _declared()
    stdlib = set(sys.stdlib_module_names)
    missing = {}
    for path in sorted(PACKAGE.rglob('*.py')):
        for module in _top_level_imports(path) - stdlib - {'ffsim_ros'}:
            key = MODULE_KEYS.get(module)
            if key is None or key not in declared:
                missing.setdefault(module, []).append(str(path.relative_to(ROOT)))
    assert not missing, f'imports without an exec_depend in package.xml: {missing}'


def test_setup_py_installs_the_ament_marker_and_package_xml() -> None:
    text = (ROOT / 'setup.py').read_text()
    assert 'resource/{package_name}' in text or 'resource/ffsim_ros' in text
    assert (ROOT / 'resource' / 'ffsim_ros').is_file()
    assert 'package.xml' in text


#: Python module -> the PyPI distribution a plain ``pip install`` takes it from.
DISTRIBUTIONS = {
    'numpy': 'numpy',
    'scipy': 'scipy',
    'numba': 'numba',
    'coal': 'coal',
    'yaml': 'pyyaml',
    'matplotlib': 'matplotlib',
}
#: The ROS-free layers (README, Layout), which a pip install without ROS runs; of the
#: campaigns, the replay into ROS 2 messages needs ROS.
ROS_FREE = ('dynamics', 'sim', 'scene', 'control', 'campaign')
ROS_SIDE = {PACKAGE / 'campaign' / 'replay.py'}


def _requirements(lines: list[str]) -> dict[str | None, dict[str, set[str]]]:
    """``extra (None: install_requires) -> {distribution: {specifiers}}`` of metadata lines
    (``numpy<3,>=1.26; extra == "engine"``) or requirements-file lines."""
    out: dict[str | None, dict[str, set[str]]] = {}
    for line in lines:
        text, _, marker = line.split('#', 1)[0].partition(';')
        text = text.strip()
        if not text or text.startswith('-'):
            continue
        extra = re.search(r'extra\s*==\s*[\'"]([\w.-]+)[\'"]', marker)
        name = re.match(r'[A-Za-z0-9_.-]+', text).group(0)
        specs = {s.strip() for s in text[len(name) :].split(',') if s.strip()}
        out.setdefault(extra.group(1) if extra else None, {})[name.lower()] = specs
    return out


@pytest.fixture(scope='module')
def metadata(tmp_path_factory: pytest.TempPathFactory) -> importlib.metadata.Distribution:
    """The package's metadata as ``pip install .`` builds it (setup.py egg_info, offline, into
    a temporary folder)."""
    egg_base = tmp_path_factory.mktemp('egg_info')
    subprocess.run(
        [sys.executable, 'setup.py', '-q', 'egg_info', '--egg-base', str(egg_base)],
        cwd=ROOT,
        env=dict(os.environ, FFSIM_BUILD_KERNELS='0'),
        check=True,
        capture_output=True,
        timeout=120,
    )
    (info,) = egg_base.glob('*.egg-info')
    return importlib.metadata.PathDistribution(info)


def test_pip_metadata_declares_the_engine_as_an_extra(metadata) -> None:
    """A plain ``pip install .`` pulled in setuptools alone, so ``import ffsim_ros.dynamics``
    failed (no NumPy): the engine's dependencies are the ``engine`` extra (``pip install
    'ffsim_ros[engine]'``), matplotlib the ``plots`` one, every third-party import of the
    ROS-free layers covered, with requirements/dev.txt's bounds; install_requires keeps
    none of them (colcon builds take their dependencies from package.xml, never from pip)."""
    declared = _requirements(metadata.requires or [])
    assert {'engine', 'plots'} <= set(metadata.metadata.get_all('Provides-Extra'))
    assert set(declared.get(None, {})) <= {'setuptools'}, declared.get(None)
    stdlib = set(sys.stdlib_module_names)
    needed = {}
    for layer in ROS_FREE:
        for path in sorted((PACKAGE / layer).rglob('*.py')):
            if path in ROS_SIDE:
                continue
            for module in _top_level_imports(path) - stdlib - {'ffsim_ros'}:
                needed.setdefault(DISTRIBUTIONS.get(module, module), []).append(path.name)
    provided = set(declared['engine']) | set(declared['plots'])
    assert set(needed) <= provided, {d: f for d, f in needed.items() if d not in provided}
    assert set(declared['plots']) == {'matplotlib'}
    assert {'numpy', 'scipy', 'numba', 'coal', 'pyyaml'} <= set(declared['engine'])
    dev = _requirements((ROOT / 'requirements' / 'dev.txt').read_text().splitlines())[None]
    for extra in ('engine', 'plots'):
        for name, specs in declared[extra].items():
            assert specs == dev[name], (extra, name, specs, dev[name])


def test_ruff_lint_clean() -> None:
    ruff = Path(sysconfig.get_path('scripts')) / 'ruff'
    cmd = [str(ruff)] if ruff.exists() else [sys.executable, '-m', 'ruff']
    result = subprocess.run([*cmd, 'check', str(ROOT)], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
