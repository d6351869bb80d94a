"""A campaign's output folder: its ``scenario.json`` (the scenario it holds, checked before a
resume) and its lock (one campaign at a time). The tables are :mod:`.results`'.
"""

from __future__ import annotations

import fcntl
import json
import os
import secrets
from pathlib import Path

from ffsim_ros import __version__

from .scenario import Scenario, ScenarioError

RUNS = 'runs.csv'
PARQUET = 'runs.parquet'
SCENARIO = 'scenario.json'
#: The lock file of a folder a campaign writes (:class:`FolderLock`).
LOCK = '.lock'


def check_folder(folder: Path, scenario: Scenario) -> None:
    """Refuse an output ``folder`` that holds the results of another scenario (naming the
    settings that differ, :func:`scenario_differences`, and the version that wrote it if
    another), a damaged ``scenario.json``, or result tables without a ``scenario.json`` (whose
    scenario cannot be told: a resume would adopt another seed's rows).

    Parameters
    ----------
    folder : Path
    scenario : Scenario

    Raises
    ------
    ScenarioError
    """
    meta = folder / SCENARIO
    if not meta.exists() and not meta.is_symlink():
        tables = [name for name in (RUNS, PARQUET) if (folder / name).exists()]
        if tables:
            raise ScenarioError(
                f'{folder}: holds result tables ({", ".join(tables)}) but no {SCENARIO}: their '
                'scenario cannot be told, so they are not resumed; choose another output folder'
            )
        return
    damaged = f'{meta}: damaged'
    advice = 'restore it or choose another output folder'
    try:
        old = json.loads(meta.read_text())
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise ScenarioError(
            f'{damaged}, expected the JSON of a scenario: {exc} ({advice})'
        ) from None
    if not (
        isinstance(old, dict)
        and isinstance(old.get('fingerprint'), str)
        and isinstance(old.get('scenario'), dict)
    ):
        got = type(old).__name__ if not isinstance(old, dict) else f'keys {sorted(old, key=str)}'
        raise ScenarioError(
            f'{damaged}, expected an object with a "fingerprint" text and a "scenario" object, '
            f'got {got} ({advice})'
        )
    if old['fingerprint'] != scenario.fingerprint():
        written = old.get('version')
        differ = scenario_differences(old['scenario'], scenario.as_dict())
        if written != __version__:
            by = f'ffsim_ros {written}' if isinstance(written, str) else 'a version not recorded'
            differ.append(f'written by {by}, this is ffsim_ros {__version__}')
        raise ScenarioError(
            f'{folder}: holds the results of another scenario '
            f'({old["scenario"].get("name")!r}): {"; ".join(differ) or "another fingerprint"}; '
            'choose another output folder'
        )


def _flat(data: dict, prefix: str = '') -> dict:
    out = {}
    for key, value in data.items():
        if isinstance(value, dict):
            out.update(_flat(value, f'{prefix}{key}.'))
        else:
            out[f'{prefix}{key}'] = value
    return out


def scenario_differences(old: dict, new: dict, limit: int = 6) -> list[str]:
    """The settings that differ between two scenarios (:meth:`Scenario.as_dict`; ``runs``
    and ``batch_size`` left out), one text each: ``reach.max_path_plans: absent in the folder,
    2 now``; at most ``limit`` of them, then how many more.

    Parameters
    ----------
    old : dict
        The folder's (``scenario.json``).
    new : dict
        This one's.
    limit : int

    Returns
    -------
    list of str
    """
    a, b = _flat(old), _flat(new)
    out = []
    for key in sorted(a.keys() | b.keys()):
        if key in ('runs', 'batch_size'):
            continue
        was, now = (json.dumps(x[key]) if key in x else None for x in (a, b))
        if was != now:
            out.append(f'{key}: {was or "absent"} in the folder, {now or "absent"} now')
    if len(out) > limit:
        out[limit:] = [f'{len(out) - limit} more']
    return out


def write_scenario(folder: Path, scenario: Scenario) -> None:
    """Write ``folder/scenario.json`` (the scenario, its fingerprint and the package's version)
    atomically: a temporary file in ``folder`` (the mode the umask gives) replacing it, so
    that an interruption leaves the old file or the new one, never a cut one.

    Parameters
    ----------
    folder : Path
    scenario : Scenario
    """
    text = json.dumps(
        {
            'fingerprint': scenario.fingerprint(),
            'version': __version__,
            'scenario': scenario.as_dict(),
        },
        indent=1,
    )
    tmp = folder / f'.{SCENARIO}.{os.getpid()}.{secrets.token_hex(4)}.tmp'
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        with os.fdopen(fd, 'w') as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, folder / SCENARIO)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


class FolderLock:
    """An exclusive lock on a campaign's output folder (``fcntl.flock`` of ``folder/.lock``,
    holding the holder's pid), so that two campaigns never write it at once (their rows
    would be written twice). The lock goes with the process: a campaign killed leaves none.

    Parameters
    ----------
    folder : Path
        An existing folder.

    Raises
    ------
    ScenarioError
        Another process holds it: ``<folder> is in use by another campaign (pid N)``.
    """

    def __init__(self, folder: Path) -> None:
        self.path = Path(folder) / LOCK
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o666)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.read(fd, 32).decode(errors='replace').strip() or '?'
            os.close(fd)
            raise ScenarioError(
                f'{folder} is in use by another campaign (pid {holder}); wait for it to end or '
                'choose another output folder'
            ) from None
        except BaseException:
            os.close(fd)
            raise
        os.ftruncate(fd, 0)
        os.pwrite(fd, f'{os.getpid()}\n'.encode(), 0)
        self.fd: int | None = fd

    def release(self) -> None:
        """Unlock (closing the file; the file stays). Again: nothing."""
        if self.fd is not None:
            fd, self.fd = self.fd, None
            os.close(fd)  # (releases the flock)
