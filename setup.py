"""ament_python build script for ffsim_ros (works with colcon and with plain pip)."""

import importlib.util
import os
import shutil
import subprocess
import sys
import time
from glob import glob
from pathlib import Path

from setuptools import find_packages, setup
from setuptools.command.build_py import build_py
from setuptools.command.develop import develop

package_name = 'ffsim_ros'
HERE = Path(__file__).resolve().parent


def _compile_kernels(root: Path) -> None:
    """Compile the numba kernels of the ``ffsim_ros`` package found under ``root`` into its
    ``__pycache__`` folders, so that an installed package starts without compiling.

    The caches the source tree already holds (``make setup`` compiled them) are copied first:
    numba keys them on each module's source (its content since numba 0.6x, its modification
    time and size before: the build keeps both) and on the CPU, so only what they lack is
    compiled (about a second when nothing is; a few minutes on 2 cores
    when everything is). ``FFSIM_BUILD_KERNELS=0`` skips this; without numba there is nothing
    to compile.
    """
    if os.environ.get('FFSIM_BUILD_KERNELS', '1') == '0':
        print('ffsim_ros: FFSIM_BUILD_KERNELS=0, the kernels compile on first use')
        return
    if importlib.util.find_spec('numba') is None:
        print('ffsim_ros: numba not installed, no kernels to compile')
        return
    root = root.resolve()
    if root != HERE:
        # the caches, and the digest of the sources they were built from (warmup.STAMP:
        # without it the warm-up takes them for stale and deletes them)
        stamp = HERE / package_name / '__pycache__' / 'numba-kernel-sources.sha256'
        caches = [*HERE.glob(f'{package_name}/**/__pycache__/*.nb[ic]')]
        for cached in caches + ([stamp] if stamp.is_file() else []):
            target = root / cached.relative_to(HERE)
            if target.parent.parent.is_dir():
                target.parent.mkdir(exist_ok=True)
                shutil.copy2(cached, target)
    env = {k: v for k, v in os.environ.items() if k != 'NUMBA_CACHE_DIR'}
    env['PYTHONPATH'] = os.pathsep.join(filter(None, (str(root), env.get('PYTHONPATH'))))
    print(f'ffsim_ros: compiling the numba kernels into {root} (FFSIM_BUILD_KERNELS=0 skips)')
    t0 = time.monotonic()
    done = subprocess.run(
        [sys.executable, '-m', f'{package_name}.dynamics.warmup'], cwd=root, env=env
    )
    if done.returncode:
        print(
            f'ffsim_ros: WARNING: the kernel warm-up failed (exit {done.returncode}); the '
            'kernels compile on first use'
        )
    else:
        print(f'ffsim_ros: kernels compiled and cached in {time.monotonic() - t0:.0f} s')


class BuildPyWithKernels(build_py):
    """``build_py``, then the kernels compiled into the build tree (installed with it)."""

    def run(self) -> None:
        super().run()
        if getattr(self, 'editable_mode', False):  # pip install -e: nothing copied
            return
        if 'bdist_wheel' in self.distribution.commands:
            # a wheel is installed elsewhere (the caches are per CPU) and keeps no modification
            # times (older numba keys the caches on them)
            print('ffsim_ros: building a wheel, the kernels compile on first use')
            return
        _compile_kernels(Path(self.build_lib))


class DevelopWithKernels(develop):
    """``develop`` (colcon's ``--symlink-install``), then the kernels compiled in place."""

    def run(self) -> None:
        super().run()
        if not self.uninstall:
            _compile_kernels(HERE)


#: Optional dependencies for a plain pip install (``pip install 'ffsim_ros[engine]'``). The
#: runtime dependencies are package.xml's exec_depends (rosdep installs them for a ROS build):
#: install_requires stays empty of them, so that colcon never pulls packages from pip. The
#: bounds are requirements/dev.txt's (test/test_package.py checks both).
EXTRAS = {
    # the ROS-free engine: dynamics, sim, scene (collision distances), control, campaigns
    'engine': ['numpy>=1.26,<3', 'scipy>=1.11', 'numba>=0.60', 'coal>=3.0', 'pyyaml>=6'],
    # the PNG plots of `ffsim campaign` (without them: --no-plots) and of `ffsim demo`
    'plots': ['matplotlib>=3.7'],
    # `ffsim campaign --executor ray` (the local executor needs nothing extra)
    'ray': ['ray>=2.9'],
    # `ffsim campaign --format parquet` (CSV needs nothing extra)
    'parquet': ['pyarrow>=14'],
}


def _share(folder: str, pattern: str = '*') -> tuple[str, list[str]]:
    return (f'share/{package_name}/{folder}', sorted(glob(f'{folder}/{pattern}')))


setup(
    name=package_name,
    version='0.1.0',
    packages=find_packages(exclude=['test', 'test.*', 'benchmarks']),
    data_files=[
        ('share/ament_index/resource_index/packages', [f'resource/{package_name}']),
        (f'share/{package_name}', ['package.xml']),
        _share('launch', '*.py'),
        _share('config', '*.yaml'),
        _share('config/rviz', '*.rviz'),
        _share('config/scenarios', '*.yaml'),
        _share('urdf', '*.urdf'),
        _share('models', '*.yaml'),
    ],
    install_requires=['setuptools'],
    zip_safe=False,  # the kernels' caches live next to the modules
    cmdclass={'build_py': BuildPyWithKernels, 'develop': DevelopWithKernels},
    maintainer='ffsim_ros developers',
    maintainer_email='ffsim-ros@example.org',
    description='Free-floating space robot simulator and reactionless controller for ROS 2.',
    license='Apache-2.0',
    tests_require=['pytest'],
    extras_require=EXTRAS,
    # the nodes' executables: plain scripts holding SIGINT/SIGTERM from their first statement
    # (ffsim_ros.console), installed into lib/ffsim_ros by setup.cfg like the console scripts
    scripts=['scripts/simulator', 'scripts/reactionless_controller'],
    entry_points={
        'console_scripts': [
            'ffsim = ffsim_ros.cli:main',
            'ffsim_campaign = ffsim_ros.campaign.cli:main',
        ],
    },
)
