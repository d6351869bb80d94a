"""ament_python build script for ffsim_ros (works with colcon and with plain pip)."""

from glob import glob

from setuptools import find_packages, setup

package_name = 'ffsim_ros'


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
    zip_safe=True,
    maintainer='ffsim_ros developers',
    maintainer_email='ffsim-ros@example.org',
    description='Free-floating space robot simulator and reactionless controller for ROS 2.',
    license='Apache-2.0',
    tests_require=['pytest'],
    # optional: `ffsim campaign --executor ray` (the local executor needs nothing extra) and
    # `--format parquet` (CSV needs nothing extra)
    extras_require={'ray': ['ray>=2.9'], 'parquet': ['pyarrow>=14']},
    entry_points={
        'console_scripts': [
            'simulator = ffsim_ros.simulator:main',
            'reactionless_controller = ffsim_ros.reactionless_controller:main',
            'ffsim = ffsim_ros.cli:main',
            'ffsim_campaign = ffsim_ros.campaign.cli:main',
        ],
    },
)
