"""Locate the package's shared files (sample robots, configs) in every installation layout.

Order: the ament index (a colcon/ROS install), ``<sys.prefix>/share/ffsim_ros`` (a pip
install of the wheel, whose data_files land there), then the source tree (an editable
install or a checkout).
"""

from __future__ import annotations

import sys
from pathlib import Path

PACKAGE = 'ffsim_ros'
#: Scenarios shipped in ``config/scenarios`` (``scenario:=<name>``).
SHIPPED_SCENARIOS = ('capture',)
_SOURCE_ROOT = Path(__file__).resolve().parent.parent


def share_dir() -> Path:
    """The directory holding ``urdf/``, ``config/`` and ``launch/`` of this package.

    Returns
    -------
    Path
        The share directory (ament index, ``<sys.prefix>/share/ffsim_ros``, else the source tree).
    """
    try:
        from ament_index_python.packages import (
            PackageNotFoundError,
            get_package_share_directory,
        )

        try:
            return Path(get_package_share_directory(PACKAGE))
        except (PackageNotFoundError, ValueError, LookupError, OSError):
            pass
    except ImportError:
        pass
    prefix_share = Path(sys.prefix) / 'share' / PACKAGE
    if (prefix_share / 'urdf').is_dir():
        return prefix_share
    return _SOURCE_ROOT


def share_path(*parts: str) -> Path:
    """Path of a file under the package's share directory.

    Parameters
    ----------
    *parts : str
        Path components under the share directory.

    Returns
    -------
    Path
        Not checked to exist.
    """
    return share_dir().joinpath(*parts)


def sample_robot(name: str) -> Path:
    """Path of the sample robot ``urdf/<name>.urdf``.

    Parameters
    ----------
    name : str
        Robot name, the URDF's stem (e.g. ``'planar_2link'``).

    Returns
    -------
    Path
        The existing URDF file.

    Raises
    ------
    FileNotFoundError
        Naming the robots that exist when ``name`` is not one of them.
    """
    path = share_path('urdf', f'{name}.urdf')
    if not path.is_file():
        known = sorted(p.stem for p in share_path('urdf').glob('*.urdf'))
        raise FileNotFoundError(f'unknown sample robot {name!r}; expected one of {known}')
    return path


def sample_model(name: str) -> Path:
    """Path of the sample model ``models/<name>.yaml`` (the builder's YAML format).

    Parameters
    ----------
    name : str
        Model name, the YAML file's stem.

    Returns
    -------
    Path
        The existing YAML file.

    Raises
    ------
    FileNotFoundError
        Naming the models that exist when ``name`` is not one of them.
    """
    path = share_path('models', f'{name}.yaml')
    if not path.is_file():
        known = sorted(p.stem for p in share_path('models').glob('*.yaml'))
        raise FileNotFoundError(f'unknown sample model {name!r}; expected one of {known}')
    return path
