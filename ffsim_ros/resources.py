"""Locate the package's shared files (sample robots, configs) in every installation layout.

Order: the ament index (a colcon/ROS install); the data folder of the installation scheme the
package was installed with (its ``share/ffsim_ros``, where ``pip install`` puts the wheel's
data_files: ``<prefix>`` for a venv or ``--prefix``, the user base for ``--user``, the target
for ``--target``); ``<sys.prefix>/share/ffsim_ros``; the user scheme's; then the source tree
(an editable install or a checkout).
"""

from __future__ import annotations

import os
import site
import sys
import sysconfig
from pathlib import Path

PACKAGE = 'ffsim_ros'
#: Scenarios shipped in ``config/scenarios`` (``scenario:=<name>``).
SHIPPED_SCENARIOS = ('capture',)
#: The folder holding the package: the checkout, or the site-packages it was installed into.
_SOURCE_ROOT = Path(__file__).resolve().parent.parent
#: Stands for the base folders in a scheme's paths (:func:`_scheme_shares`).
_BASE = Path(os.sep, '@ffsim_ros_base@')
_BASE_VARIABLES = ('base', 'platbase', 'installed_base', 'installed_platbase', 'userbase')


def _scheme_shares(site_dir: Path) -> list[Path]:
    """``<data>/share/ffsim_ros`` of every installation scheme that puts packages into
    ``site_dir`` (``<base>/lib/python3.X/site-packages`` gives ``<base>``, its data folder)."""
    found = []
    for scheme in sysconfig.get_scheme_names():
        try:
            paths = sysconfig.get_paths(
                scheme, vars=dict.fromkeys(_BASE_VARIABLES, str(_BASE)), expand=True
            )
            data = Path(paths['data']).relative_to(_BASE)
        except (KeyError, ValueError):  # a scheme without a base (a framework's fixed paths)
            continue
        for key in ('purelib', 'platlib'):
            try:
                lib = Path(paths[key]).relative_to(_BASE).parts
            except (KeyError, ValueError):
                continue
            if lib and len(lib) < len(site_dir.parts) and site_dir.parts[-len(lib) :] == lib:
                found.append(Path(*site_dir.parts[: -len(lib)]) / data / 'share' / PACKAGE)
    return found


def share_candidates() -> list[Path]:
    """The folders :func:`share_dir` looks in after the ament index, in order (each without
    repeats; not checked to exist).

    Returns
    -------
    list of Path
        ``share/ffsim_ros`` under the data folder of the schemes the package's folder belongs
        to, under the ``--target`` folder it was installed into, under ``sys.prefix`` and under
        the user scheme's data folder (``site.USER_BASE``, ``pip install --user``).
    """
    user_data = sysconfig.get_path(
        'data', f'{os.name}_user', vars={'userbase': site.getuserbase()}
    )
    places = [
        *_scheme_shares(_SOURCE_ROOT),
        _SOURCE_ROOT / 'share' / PACKAGE,  # pip install --target: data files in the target
        Path(sys.prefix) / 'share' / PACKAGE,
        Path(user_data) / 'share' / PACKAGE,
    ]
    return list(dict.fromkeys(places))


def _ament_share() -> Path | None:
    """The package's share directory in the ament index, or None."""
    try:
        from ament_index_python.packages import (
            PackageNotFoundError,
            get_package_share_directory,
        )
    except ImportError:
        return None
    try:
        return Path(get_package_share_directory(PACKAGE))
    except (PackageNotFoundError, ValueError, LookupError, OSError):
        return None


def share_dir() -> Path:
    """The directory holding ``urdf/``, ``config/`` and ``launch/`` of this package.

    Returns
    -------
    Path
        The share directory: the ament index's, else the first of :func:`share_candidates`
        holding ``urdf/``, else the source tree (which may not hold it either:
        :func:`sample_robot` then names where it looked).
    """
    ament = _ament_share()
    if ament is not None:
        return ament
    for place in share_candidates():
        if (place / 'urdf').is_dir():
            return place
    return _SOURCE_ROOT


def _not_found(kind: str, name: str, folder: str, suffix: str) -> FileNotFoundError:
    """The error of :func:`sample_robot` / :func:`sample_model` for an unknown ``name``."""
    known = sorted(p.stem for p in share_path(folder).glob(f'*{suffix}'))
    if known:
        return FileNotFoundError(f'unknown sample {kind} {name!r}; expected one of {known}')
    places = [str(p) for p in share_candidates()]
    return FileNotFoundError(
        f'unknown sample {kind} {name!r}: no sample {kind}s found, {PACKAGE} has no share '
        f'directory with {folder}/ (looked in the ament index, {", ".join(places)} and the '
        f'source tree {_SOURCE_ROOT}); give a file path, or reinstall the package'
    )


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
        Naming the robots that exist when ``name`` is not one of them (where the share
        directory was looked for when none is found).
    """
    path = share_path('urdf', f'{name}.urdf')
    if not path.is_file():
        raise _not_found('robot', name, 'urdf', '.urdf')
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
        Naming the models that exist when ``name`` is not one of them (where the share
        directory was looked for when none is found).
    """
    path = share_path('models', f'{name}.yaml')
    if not path.is_file():
        raise _not_found('model', name, 'models', '.yaml')
    return path
