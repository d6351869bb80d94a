"""Package checks: package.xml parses and declares every import; the code is lint-clean."""

from __future__ import annotations

import ast
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


def test_ruff_lint_clean() -> None:
    ruff = Path(sysconfig.get_path('scripts')) / 'ruff'
    cmd = [str(ruff)] if ruff.exists() else [sys.executable, '-m', 'ruff']
    result = subprocess.run([*cmd, 'check', str(ROOT)], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
