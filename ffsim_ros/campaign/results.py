"""The results of a campaign: one row per run, written as runs end, resumable; the summary.

A campaign folder holds ``scenario.json`` (the scenario, with its fingerprint), the table in
one or both formats, ``summary.md`` and PNG plots:

* ``runs.csv``: one row per run, appended and flushed as each run ends;
* ``runs.parquet/``: a Parquet dataset (pyarrow, optional: ``pip install pyarrow``), one
  ``part-NNNNN.parquet`` file (one row group) per :data:`PART_ROWS` rows or
  :data:`PART_SECONDS` of wall time, whichever comes first, written to a hidden temporary
  file and renamed when complete, so a part is either whole or absent.

Memory stays flat whatever the number of runs, and an interrupted campaign keeps what it
finished (all its CSV rows; its Parquet rows but those of the part not yet written). Opening
a folder that already has rows of the same scenario (same fingerprint: the number of runs and
the batch size may differ) resumes it: a format present in the folder is kept up to date even
when not asked for, :attr:`ResultsWriter.done` lists the runs every format has (not to redo),
and a redone run is written only to the formats that lack it (runs are deterministic, so the
rows are the same). A folder of another scenario is refused, naming the settings that differ
(``scenario.json`` also holds the version of the package that wrote it). A campaign holds an
exclusive lock on the folder (:class:`.folder.FolderLock`, ``.lock``) while it writes: a
second one on the folder is refused. A row whose values are not numbers of their column, or
a run on two rows with different values, is refused naming its line (or part); the same row
twice (left by two campaigns on the folder at once before the lock) counts once.

Columns: ``run``, ``reached`` (every goal reached, no failure), ``failure`` (the reason, or
empty), ``goals``, ``goals_reached``, ``time_to_reach`` [s] (sum of the goals' times to their
outcome; NaN unless reached), ``final_error`` [m] (the last goal's), the metrics of
:class:`~.batch.RunResult` (``max_attitude_change_deg``, ``max_base_rate_deg_s``,
``momentum_error_linear`` [kg m/s], ``momentum_error_angular`` [N m s], ``peak_effort_ratio``
and ``peak_effort.<joint>`` [N m | N]), ``plans``, ``reasons`` (the goals' reasons joined by
`` | ``), then the drawn inputs ``in.<parameter>.<component>``. In Parquet, ``run``,
``reached``, ``goals``, ``goals_reached`` and ``plans`` are int64, ``failure`` and ``reasons``
strings, the rest float64 (the values of :func:`run_row`, bit for bit).
"""

from __future__ import annotations

import array
import csv
import importlib
import math
import os
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

from .batch import Campaign, RunResult
from .folder import PARQUET, RUNS, FolderLock, check_folder, write_scenario
from .scenario import Scenario, ScenarioError

#: The plots (written again when the runs end; removed at the start, as ``summary.md``).
PLOTS = ('histograms.png', 'inputs.png')
#: Table formats (``--format``).
FORMATS = ('csv', 'parquet')
#: A Parquet part is written every PART_ROWS rows or PART_SECONDS of wall time.
PART_ROWS = 1024
PART_SECONDS = 30.0
#: Integer and text columns (the others are float64).
INTEGER_COLUMNS = ('run', 'reached', 'goals', 'goals_reached', 'plans')
TEXT_COLUMNS = ('failure', 'reasons')
#: The outcome metrics summarized by percentiles (column, label).
METRICS = (
    ('time_to_reach', 'time to reach [s]'),
    ('final_error', 'final error [m]'),
    ('max_attitude_change_deg', 'max base attitude change [deg]'),
    ('max_base_rate_deg_s', 'max base rate [deg/s]'),
    ('momentum_error_angular', 'angular momentum error [N m s]'),
    ('peak_effort_ratio', 'peak effort / limit'),
)
PERCENTILES = (5, 50, 95, 100)
#: Input columns plotted against the metrics (``inputs.png``): the first so many.
PLOT_INPUTS = 8


def columns(campaign: Campaign) -> list[str]:
    """The columns of the table of ``campaign`` (module docstring).

    Parameters
    ----------
    campaign : Campaign

    Returns
    -------
    list of str
    """
    joints = [f'peak_effort.{j}' for j in campaign.model.joint_names]
    return [
        'run',
        'reached',
        'failure',
        'goals',
        'goals_reached',
        'time_to_reach',
        'final_error',
        'max_attitude_change_deg',
        'max_base_rate_deg_s',
        'momentum_error_linear',
        'momentum_error_angular',
        'peak_effort_ratio',
        *joints,
        'plans',
        'reasons',
        *campaign.inputs,
    ]


def run_row(result: RunResult) -> dict:
    """The row of one run (module docstring).

    Parameters
    ----------
    result : RunResult

    Returns
    -------
    dict
        Column name -> value (units of the module docstring).
    """
    goals = result.goals
    reached = result.reached
    m = result.metrics
    row = {
        'run': result.index,
        'reached': int(reached),
        'failure': result.failure,
        'goals': len(goals),
        'goals_reached': sum(g['outcome'] == 'reached' for g in goals),
        'time_to_reach': sum(g['time'] for g in goals) if reached else math.nan,
        'final_error': goals[-1]['error'] if goals else math.nan,
    }
    for key in (
        'max_attitude_change_deg',
        'max_base_rate_deg_s',
        'momentum_error_linear',
        'momentum_error_angular',
        'peak_effort_ratio',
    ):
        row[key] = m[key]
    row.update({f'peak_effort.{j}': x for j, x in m['peak_effort'].items()})
    row['plans'] = sum(g['plans'] for g in goals)
    row['reasons'] = ' | '.join(g['reason'] for g in goals)
    row.update(result.inputs.columns)
    return row


def pyarrow_modules() -> tuple[ModuleType, ModuleType]:
    """``(pyarrow, pyarrow.parquet)``.

    Returns
    -------
    pyarrow, pyarrow.parquet : module

    Raises
    ------
    ScenarioError
        pyarrow is not installed (naming the install).
    """
    try:
        # optional, as Ray (setup.py extras 'parquet', requirements/ray.txt): not an exec_depend
        return importlib.import_module('pyarrow'), importlib.import_module('pyarrow.parquet')
    except ImportError:
        raise ScenarioError(
            "the Parquet format needs pyarrow: pip install 'ffsim_ros[parquet]' "
            '(or pip install pyarrow), or use --format csv'
        ) from None


def pyplot() -> ModuleType:
    """``matplotlib.pyplot`` on the Agg backend (files only, no display).

    Returns
    -------
    module

    Raises
    ------
    ScenarioError
        matplotlib is not installed (naming the install, and ``--no-plots``).
    """
    try:
        # optional for a pip install (setup.py extras 'plots'); package.xml's exec_depend
        matplotlib = importlib.import_module('matplotlib')
        matplotlib.use('Agg')
        return importlib.import_module('matplotlib.pyplot')
    except ImportError:
        raise ScenarioError(
            "the plots need matplotlib: pip install 'ffsim_ros[plots]' (or pip install "
            'matplotlib), or use --no-plots'
        ) from None


def parquet_schema(names: Sequence[str]) -> Any:  # a pyarrow.Schema (pyarrow is optional)
    """The Parquet schema of a table with the columns ``names`` (module docstring).

    Parameters
    ----------
    names : sequence of str
        The columns, in order.

    Returns
    -------
    pyarrow.Schema
    """
    pa, _ = pyarrow_modules()
    kinds = {
        **dict.fromkeys(INTEGER_COLUMNS, pa.int64()),
        **dict.fromkeys(TEXT_COLUMNS, pa.string()),
    }
    return pa.schema([(name, kinds.get(name, pa.float64())) for name in names])


class WriteError(Exception):
    """A file of the campaign could not be written (disk full, file too large, no permission):
    ``cannot write <path>: <reason>; the rows written so far are kept (run again to resume)``.

    Parameters
    ----------
    path : Path, the file (or folder) being written.
    error : OSError, the failure.
    """

    def __init__(self, path: Path, error: OSError) -> None:
        self.path, self.error = Path(path), error
        reason = error.strerror or str(error) or type(error).__name__
        super().__init__(
            f'cannot write {self.path}: {reason}; the rows written so far are kept '
            '(run again to resume)'
        )


def _drop_cut_row(path: Path) -> None:
    """Cut ``path`` after its last line end: a run interrupted while writing its row leaves
    the row without one, and the next row would be appended onto it (that run is then run
    again). A file left without a complete line (not even the header) is removed."""
    data = path.read_bytes()
    if not data or data.endswith(b'\n'):
        return
    end = data.rfind(b'\n')
    if end < 0:
        path.unlink()
        return
    with open(path, 'r+b') as handle:
        handle.truncate(end + 1)


def _csv_number(key: str, text: str, path: Path, line: int) -> float:
    """The value ``text`` of the number column ``key`` (an integer >= 0 for
    :data:`INTEGER_COLUMNS`) at ``line`` of ``path``."""
    try:
        x = float(text)
    except ValueError:
        x = None
    if key in INTEGER_COLUMNS:
        if x is None or not (x.is_integer() and x >= 0):
            raise ScenarioError(
                f'{path}: line {line}: {key}: expected an integer >= 0, got {text!r} '
                '(a damaged table: remove that line)'
            )
    elif x is None:
        raise ScenarioError(
            f'{path}: line {line}: {key}: expected a number, got {text!r} '
            '(a damaged table: remove that line)'
        )
    return x


def _csv_rows(reader: csv.DictReader, path: Path) -> Iterator[dict]:
    """The rows of ``reader`` (on ``path``), numbers as floats, ``failure`` and ``reasons`` as
    text; a row repeating an earlier one (the same run, the same values) is dropped.

    Raises
    ------
    ScenarioError
        A row with another number of fields, a value that is not a number of its column, a run
        appearing twice with different values (naming the line).
    """
    if 'run' not in (reader.fieldnames or ()):
        raise ScenarioError(f'{path}: expected a header line with a "run" column')
    seen: dict[int, int] = {}  # run -> hash of its row's text
    for r in reader:
        line = reader.line_num
        if None in r or None in r.values():
            raise ScenarioError(
                f'{path}: line {line}: expected {len(reader.fieldnames)} fields, '
                'got another number (a damaged table: remove that line)'
            )
        row = {
            k: (v if k in TEXT_COLUMNS else _csv_number(k, v, path, line)) for k, v in r.items()
        }
        run = int(row['run'])
        digest = hash(tuple(r.values()))
        if run in seen:
            if seen[run] != digest:
                raise ScenarioError(
                    f'{path}: line {line}: run {run} is on an earlier line too, with other '
                    'values (a damaged table: remove one of its lines)'
                )
            continue  # the same row twice (two campaigns on the folder at once): counted once
        seen[run] = digest
        yield row


class CsvTable:
    """``runs.csv``: rows appended and flushed one by one.

    Parameters
    ----------
    folder : Path
        The campaign's output folder.
    names : list of str
        The columns (:func:`columns`).

    Raises
    ------
    ScenarioError
        The table in ``folder`` has other columns, or a damaged row (:func:`_csv_rows`).
    """

    def __init__(self, folder: Path, names: list[str]) -> None:
        path = self.path = folder / RUNS
        self.done: set[int] = set()
        if path.is_file():
            _drop_cut_row(path)
        if path.is_file():
            with open(path, newline='') as handle:
                reader = csv.DictReader(handle)
                if reader.fieldnames != names:
                    raise ScenarioError(f"{path}: columns differ from this scenario's")
                self.done.update(int(r['run']) for r in _csv_rows(reader, path))
        new = not path.is_file()
        self.handle = open(path, 'a', newline='')  # noqa: SIM115 - closed by close()
        self.writer = csv.DictWriter(self.handle, fieldnames=names)
        if new:
            self.writer.writeheader()
            self.handle.flush()

    def write(self, row: dict) -> None:
        """Append ``row`` (a :func:`run_row`, keyed by the table's columns) and flush it to
        disk; its ``run`` counts as done.

        Parameters
        ----------
        row : dict
        """
        self.writer.writerow(row)
        self.handle.flush()
        self.done.add(int(row['run']))

    def close(self) -> None:
        """Close the file (every row was flushed when written)."""
        self.handle.close()


class ParquetTable:
    """``runs.parquet/``: rows buffered, written as whole part files (module docstring).

    Parameters
    ----------
    folder : Path
        The campaign's output folder.
    names : list of str
        The columns (:func:`columns`).
    part_rows : int
        Rows per part file.
    part_seconds : float
        Wall time after which the buffer is written [s].
    """

    def __init__(
        self,
        folder: Path,
        names: list[str],
        part_rows: int = PART_ROWS,
        part_seconds: float = PART_SECONDS,
    ) -> None:
        self.pa, self.pq = pyarrow_modules()
        self.dir = self.path = folder / PARQUET
        self.dir.mkdir(exist_ok=True)
        self.schema = parquet_schema(names)
        self.part_rows, self.part_seconds = int(part_rows), float(part_seconds)
        for stale in self.dir.glob('.part-*.tmp'):  # a part being written when interrupted
            stale.unlink()
        parts = sorted(self.dir.glob('part-*.parquet'))
        self.done: set[int] = set()
        count = 0
        for part in parts:
            schema = self.pq.read_schema(part)
            if not schema.equals(self.schema):
                raise ScenarioError(f"{part}: columns differ from this scenario's")
            runs = self.pq.read_table(part, columns=['run']).column(0).to_pylist()
            self.done.update(runs)
            count += len(runs)
        if count != len(self.done):  # a run twice: refused unless the same row (read_parquet)
            read_parquet(folder)
        self.next_part = 1 + max((int(p.stem.split('-')[1]) for p in parts), default=-1)
        self.rows: list[dict] = []
        self.t_flushed = time.monotonic()

    def write(self, row: dict) -> None:
        """Buffer ``row`` (a :func:`run_row`); its ``run`` counts as done. The buffer is
        written as one part once it holds ``part_rows`` rows or ``part_seconds`` [s] of wall
        time went since the last part (:meth:`flush`).

        Parameters
        ----------
        row : dict
        """
        self.rows.append(row)
        self.done.add(int(row['run']))
        if (
            len(self.rows) >= self.part_rows
            or time.monotonic() - self.t_flushed >= self.part_seconds
        ):
            self.flush()

    def flush(self) -> None:
        """Write the buffered rows as one part (one row group)."""
        self.t_flushed = time.monotonic()
        if not self.rows:
            return
        table = self.pa.Table.from_pylist(self.rows, schema=self.schema)
        name = f'part-{self.next_part:05d}.parquet'
        tmp = self.dir / f'.{name}.tmp'
        try:
            self.pq.write_table(table, tmp, row_group_size=len(self.rows))
            os.replace(tmp, self.dir / name)
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise
        self.next_part += 1
        self.rows = []

    def close(self) -> None:
        """Write the rows still buffered as a last part (:meth:`flush`)."""
        self.flush()


class ResultsWriter:
    """Rows written to the folder's table(s) as runs end (module docstring), the folder locked
    (:class:`FolderLock`) while open.

    Parameters
    ----------
    folder : str or Path
    campaign : Campaign
    formats : sequence of ``'csv'``, ``'parquet'`` (:data:`FORMATS`); the formats already in
        ``folder`` are added.
    part_rows, part_seconds : int, float; a Parquet part every so many rows or seconds.
    lock : FolderLock, optional
        The folder's lock, held by the caller (kept when closing); None: taken here, released
        by :meth:`close`.

    Raises
    ------
    ScenarioError
        ``folder`` holds the results of another scenario or damaged rows; another campaign
        writes it; an unknown format; Parquet without pyarrow.
    """

    def __init__(
        self,
        folder: str | Path,
        campaign: Campaign,
        formats: Sequence[str] = ('csv',),
        *,
        part_rows: int = PART_ROWS,
        part_seconds: float = PART_SECONDS,
        lock: FolderLock | None = None,
    ) -> None:
        self.folder = Path(folder)
        self.columns = columns(campaign)
        bad = [f for f in formats if f not in FORMATS]
        if bad or not formats:
            raise ScenarioError(f'format: expected one or more of {FORMATS}, got {list(formats)}')
        files = {'csv': RUNS, 'parquet': PARQUET}
        self.formats = [f for f in FORMATS if f in formats or (self.folder / files[f]).exists()]
        if 'parquet' in self.formats:
            pyarrow_modules()  # (refused before anything is written)
        self.folder.mkdir(parents=True, exist_ok=True)
        self.lock = FolderLock(self.folder) if lock is None else None
        self.tables: list[CsvTable | ParquetTable] = []
        try:
            scenario = campaign.scenario
            check_folder(self.folder, scenario)
            write_scenario(self.folder, scenario)
            for f in self.formats:
                if f == 'csv':
                    self.tables.append(CsvTable(self.folder, self.columns))
                else:
                    self.tables.append(
                        ParquetTable(self.folder, self.columns, part_rows, part_seconds)
                    )
        except BaseException:
            self.close()
            raise
        self.done: set[int] = set.intersection(*(t.done for t in self.tables))

    def write(self, result: RunResult) -> dict:
        """Write the row of ``result`` to every table that lacks it; returns the row.

        Parameters
        ----------
        result : RunResult

        Returns
        -------
        dict

        Raises
        ------
        WriteError
            A table cannot be written (naming it and why).
        """
        row = run_row(result)
        for table in self.tables:
            if result.index not in table.done:
                try:
                    table.write(row)
                except OSError as exc:
                    raise WriteError(table.path, exc) from None
        self.done.add(result.index)
        return row

    def close(self) -> None:
        """Write what is buffered, close the files: every table, even when one fails; release
        the folder's lock if taken by this writer.

        Raises
        ------
        WriteError
            A table cannot be written (the first that failed).
        """
        errors = []
        for table in self.tables:
            try:
                table.close()
            except OSError as exc:
                errors.append(WriteError(table.path, exc))
        if self.lock is not None:
            self.lock.release()
        if errors:
            raise errors[0]

    def __enter__(self) -> ResultsWriter:
        return self

    def __exit__(self, kind: type[BaseException] | None, *exc: object) -> None:
        try:
            self.close()
        except WriteError:
            if kind is None:
                raise  # (else the error in flight is the one reported)


def _same_value(x: object, y: object) -> bool:
    return x == y or (isinstance(x, float) and isinstance(y, float) and x != x and y != y)


def read_parquet(
    folder: str | Path, columns: Sequence[str] | None = None
) -> Any:  # a pyarrow.Table (pyarrow is optional)
    """The Parquet table of ``folder`` (a ``pyarrow.Table``, sorted by run); a row repeating
    an earlier one (the same run, the same values) is dropped.

    Parameters
    ----------
    folder : str or Path
    columns : sequence of str, optional
        Only these columns (with ``run``); None: all.

    Returns
    -------
    pyarrow.Table

    Raises
    ------
    FileNotFoundError
        No part.
    ScenarioError
        A run appearing twice with different values (naming the parts).
    """
    pa, pq = pyarrow_modules()
    path = Path(folder) / PARQUET
    parts = sorted(path.glob('part-*.parquet'))
    if not parts:
        raise FileNotFoundError(f'{path}: no Parquet part')
    if columns is not None:
        columns = list(dict.fromkeys(['run', *columns]))
    tables = [pq.read_table(p, columns=columns) for p in parts]
    table = pa.concat_tables(tables)
    runs = np.asarray(table.column('run').to_numpy())
    unique, first, counts = np.unique(runs, return_index=True, return_counts=True)
    if np.any(counts > 1) and columns is not None:  # (told apart by every column)
        return read_parquet(folder).select(columns)
    if np.any(counts > 1):
        part_of = np.repeat(np.arange(len(parts)), [t.num_rows for t in tables])
        for run in unique[counts > 1]:
            at = np.flatnonzero(runs == run)
            rows = table.take(at).to_pylist()
            for j, row in enumerate(rows[1:], 1):
                if not all(_same_value(row[k], rows[0][k]) for k in row):
                    raise ScenarioError(
                        f'{path}: run {run} is in {parts[part_of[at[0]]].name} and '
                        f'{parts[part_of[at[j]]].name} with other values (a damaged table: '
                        'remove one of the parts; its runs are done again)'
                    )
    return table.take(first)  # (np.unique's order: by run)


def read_rows(folder: str | Path) -> list[dict]:
    """The rows of ``folder/runs.csv``, or of ``folder/runs.parquet`` when there is no CSV
    (numbers as floats, ``failure`` and ``reasons`` as text), sorted by run; a row repeating
    an earlier one (the same run, the same values) is dropped.

    Parameters
    ----------
    folder : str or Path

    Returns
    -------
    list of dict

    Raises
    ------
    ScenarioError
        A damaged row (naming its line), a run twice with different values.
    """
    path = Path(folder) / RUNS
    if not path.is_file() and (Path(folder) / PARQUET).is_dir():
        rows = read_parquet(folder).to_pylist()
        return [{k: (v if k in TEXT_COLUMNS else float(v)) for k, v in r.items()} for r in rows]
    with open(path, newline='') as handle:
        rows = list(_csv_rows(csv.DictReader(handle), path))
    return sorted(rows, key=lambda r: r['run'])


def wilson_interval(successes: int, n: int, z: float = 1.959963984540054) -> tuple[float, float]:
    """Wilson score interval of a success rate (95 % by default): ``(low, high)``.

    Parameters
    ----------
    successes, n : int
        Successes among ``n`` trials.
    z : float
        Standard normal quantile of the confidence level.

    Returns
    -------
    tuple of float
        In [0, 1].
    """
    if n == 0:
        return (0.0, 1.0)
    p = successes / n
    den = 1.0 + z * z / n
    mid = (p + z * z / (2 * n)) / den
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / den
    return (max(0.0, mid - half), min(1.0, mid + half))


def as_columns(
    rows: Iterable[dict] | Mapping[str, Sequence], names: Sequence[str]
) -> dict[str, np.ndarray]:
    """The columns ``names`` of a table given by rows (dicts, :func:`read_rows`) or by columns
    (:func:`read_columns`): float64 arrays, ``failure`` and ``reasons`` object arrays of text.

    Parameters
    ----------
    rows : iterable of dict, or mapping of column name to sequence
    names : sequence of str

    Returns
    -------
    dict of str to ndarray
    """
    if not isinstance(rows, Mapping):
        rows = list(rows)
        rows = {k: [r[k] for r in rows] for k in names}
    return {k: np.asarray(rows[k], dtype=object if k in TEXT_COLUMNS else float) for k in names}


def read_columns(
    folder: str | Path, names: Sequence[str], below: int | None = None
) -> dict[str, np.ndarray]:
    """The columns ``names`` of the table :func:`read_rows` reads (the same checks, a row
    repeated dropped), sorted by run, the runs ``>= below`` left out: held as arrays, not as a
    dict per row (some 3 KB a row).

    Parameters
    ----------
    folder : str or Path
    names : sequence of str
        Columns of the table.
    below : int, optional
        Only the runs with a smaller index.

    Returns
    -------
    dict of str to ndarray
        As :func:`as_columns`.

    Raises
    ------
    ScenarioError
        A damaged row (naming its line), a run twice with different values, a column missing.
    """
    folder = Path(folder)
    wanted = list(dict.fromkeys(['run', *names]))
    path = folder / RUNS
    if not path.is_file() and (folder / PARQUET).is_dir():
        table = read_parquet(folder, wanted)
        cols = {k: table.column(k).to_numpy(zero_copy_only=False) for k in wanted}
    else:
        values = {k: [] if k in TEXT_COLUMNS else array.array('d') for k in wanted}
        with open(path, newline='') as handle:
            reader = csv.DictReader(handle)
            missing = [k for k in wanted if k not in (reader.fieldnames or ())]
            if missing:
                raise ScenarioError(f'{path}: expected the columns {missing}')
            for row in _csv_rows(reader, path):
                for k in wanted:
                    values[k].append(row[k])
        cols = values
    cols = as_columns(cols, wanted)
    keep = np.argsort(cols['run'], kind='stable')
    if below is not None:
        keep = keep[cols['run'][keep] < below]
    return {k: cols[k][keep] for k in names}


def summarize(rows: Iterable[dict] | Mapping[str, Sequence]) -> dict:
    """Success rate with its 95 % Wilson interval, failures, and the percentiles
    (:data:`PERCENTILES`) of each metric of :data:`METRICS` over the runs without a failure
    (``ran``: a failed run's metrics stop where it failed, or were never measured) where the
    metric is finite (``covered``: how many runs that is, per metric; ``time_to_reach`` is
    finite only in the runs that reached every goal).

    Parameters
    ----------
    rows : iterable of dict, or mapping of column name to sequence
        The table by rows (:func:`run_row`, :func:`read_rows`) or by columns
        (:func:`read_columns`).

    Returns
    -------
    dict
    """
    cols = as_columns(rows, ['reached', 'failure', *(key for key, _ in METRICS)])
    n = cols['reached'].size
    ok = int(np.sum(cols['reached']))
    ran = np.array([not f for f in cols['failure']], dtype=bool)
    out = {
        'runs': n,
        'reached': ok,
        'success_rate': ok / n if n else math.nan,
        'success_interval': wilson_interval(ok, n),
        'failed': n - int(ran.sum()),
        'ran': int(ran.sum()),
        'percentiles': {},
        'covered': {},
    }
    for key, _ in METRICS:
        x = cols[key][ran]
        x = x[np.isfinite(x)]
        out['percentiles'][key] = (
            {p: float(np.percentile(x, p)) for p in PERCENTILES} if x.size else {}
        )
        out['covered'][key] = int(x.size)
    return out


def summary_markdown(scenario: Scenario, summary: dict) -> str:
    """``summary.md``: the success rate and a percentile table.

    Parameters
    ----------
    scenario : Scenario
    summary : dict
        :func:`summarize`'s.

    Returns
    -------
    str
        Markdown text.
    """
    lo, hi = summary['success_interval']
    lines = [
        f'# Campaign {scenario.name}',
        '',
        f'{summary["runs"]} runs ({scenario.robot}, {scenario.mode}, seed {scenario.seed}): '
        f'{summary["reached"]} reached every goal, success rate '
        f'{100 * summary["success_rate"]:.1f} % (95 % CI {100 * lo:.1f}-{100 * hi:.1f} %, '
        f'Wilson); {summary["failed"]} failed (non-finite state, controller error or inputs '
        'that cannot be drawn).',
        '',
        f'Percentiles over the {summary["ran"]} runs without a failure (the failed runs are '
        'not in them), those where the metric is finite (`runs`: how many; the time to reach '
        'only in the runs that reached every goal).',
        '',
        '| metric | runs | ' + ' | '.join(f'p{p}' for p in PERCENTILES) + ' |',
        '|---|---|' + '---|' * len(PERCENTILES),
    ]
    for key, label in METRICS:
        pct = summary['percentiles'][key]
        cells = [f'{pct[p]:.4g}' if pct else '-' for p in PERCENTILES]
        lines.append(f'| {label} | {summary["covered"][key]} | ' + ' | '.join(cells) + ' |')
    return '\n'.join(lines) + '\n'


def plot(
    rows: Iterable[dict] | Mapping[str, Sequence],
    folder: str | Path,
    inputs: list[str],
    max_inputs: int = PLOT_INPUTS,
) -> list:
    """Histograms of the metrics and each metric against the dispersed inputs (the first
    ``max_inputs`` input columns): ``histograms.png`` and ``inputs.png``; returns the paths.

    Parameters
    ----------
    rows : iterable of dict, or mapping of column name to sequence
        The table by rows or by columns (:func:`summarize`).
    folder : str or Path
        Where the images are written.
    inputs : list of str
        Input column names.
    max_inputs : int

    Returns
    -------
    list of Path
    """
    plt = pyplot()
    folder = Path(folder)
    paths = []
    shown = inputs[:max_inputs]
    cols = as_columns(rows, ['reached', *(key for key, _ in METRICS), *shown])
    reached = cols['reached'].astype(bool)
    fig, axes = plt.subplots(2, 3, figsize=(12, 6))
    for ax, (key, label) in zip(axes.ravel(), METRICS, strict=True):
        x = cols[key]
        x = x[np.isfinite(x)]
        if x.size:
            ax.hist(x, bins=min(40, max(5, x.size // 5)))
        ax.set(xlabel=label, ylabel='runs')
    fig.tight_layout()
    paths.append(folder / 'histograms.png')
    fig.savefig(paths[-1], dpi=80)
    plt.close(fig)
    if shown:
        fig, axes = plt.subplots(len(shown), 2, figsize=(10, 2.2 * len(shown)), squeeze=False)
        for (a1, a2), name in zip(axes, shown, strict=True):
            u = cols[name]
            for ax, key in ((a1, 'max_attitude_change_deg'), (a2, 'final_error')):
                y = cols[key]
                ax.plot(u[reached], y[reached], '.', color='tab:green', ms=3, label='reached')
                ax.plot(u[~reached], y[~reached], 'x', color='tab:red', ms=4, label='not')
                ax.set(xlabel=name, ylabel=key)
        axes[0, 0].legend(fontsize=7)
        fig.tight_layout()
        paths.append(folder / 'inputs.png')
        fig.savefig(paths[-1], dpi=80)
        plt.close(fig)
    return paths
