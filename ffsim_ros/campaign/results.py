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
rows are the same). A folder of another scenario is refused.

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

import csv
import importlib
import json
import math
import os
import tempfile
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

from .batch import Campaign, RunResult
from .scenario import Scenario, ScenarioError

RUNS = 'runs.csv'
PARQUET = 'runs.parquet'
SCENARIO = 'scenario.json'
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


class CsvTable:
    """``runs.csv``: rows appended and flushed one by one.

    Parameters
    ----------
    folder : Path
        The campaign's output folder.
    names : list of str
        The columns (:func:`columns`).
    """

    def __init__(self, folder: Path, names: list[str]) -> None:
        path = self.path = folder / RUNS
        self.done: set[int] = set()
        if path.is_file():
            _drop_cut_row(path)
            with open(path, newline='') as handle:
                reader = csv.DictReader(handle)
                if reader.fieldnames != names:
                    raise ScenarioError(f"{path}: columns differ from this scenario's")
                for r in reader:
                    if None in r or None in r.values():
                        raise ScenarioError(
                            f'{path}: line {reader.line_num}: expected {len(names)} fields, '
                            'got another number (a damaged table: remove that line)'
                        )
                    self.done.add(int(r['run']))
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
        for part in parts:
            schema = self.pq.read_schema(part)
            if not schema.equals(self.schema):
                raise ScenarioError(f"{part}: columns differ from this scenario's")
            self.done.update(self.pq.read_table(part, columns=['run']).column(0).to_pylist())
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


def check_folder(folder: Path, scenario: Scenario) -> None:
    """Refuse an output ``folder`` that holds the results of another scenario, a damaged
    ``scenario.json``, or result tables without a ``scenario.json`` (whose scenario cannot be
    told: a resume would adopt another seed's rows).

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
        raise ScenarioError(
            f'{folder}: holds the results of another scenario '
            f'({old["scenario"].get("name")!r}); choose another output folder'
        )


def write_scenario(folder: Path, scenario: Scenario) -> None:
    """Write ``folder/scenario.json`` atomically (a temporary file in ``folder`` replacing it:
    an interruption leaves the old file or the new one, never a cut one).

    Parameters
    ----------
    folder : Path
    scenario : Scenario
    """
    text = json.dumps(
        {'fingerprint': scenario.fingerprint(), 'scenario': scenario.as_dict()}, indent=1
    )
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=f'.{SCENARIO}.', suffix='.tmp')
    try:
        with os.fdopen(fd, 'w') as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, folder / SCENARIO)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


class ResultsWriter:
    """Rows written to the folder's table(s) as runs end (module docstring).

    Parameters
    ----------
    folder : str or Path
    campaign : Campaign
    formats : sequence of ``'csv'``, ``'parquet'`` (:data:`FORMATS`); the formats already in
        ``folder`` are added.
    part_rows, part_seconds : int, float; a Parquet part every so many rows or seconds.

    Raises
    ------
    ScenarioError
        ``folder`` holds the results of another scenario; an unknown format; Parquet without
        pyarrow.
    """

    def __init__(
        self,
        folder: str | Path,
        campaign: Campaign,
        formats: Sequence[str] = ('csv',),
        *,
        part_rows: int = PART_ROWS,
        part_seconds: float = PART_SECONDS,
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
        scenario = campaign.scenario
        check_folder(self.folder, scenario)
        self.folder.mkdir(parents=True, exist_ok=True)
        write_scenario(self.folder, scenario)
        self.tables: list[CsvTable | ParquetTable] = []
        try:
            for f in self.formats:
                if f == 'csv':
                    self.tables.append(CsvTable(self.folder, self.columns))
                else:
                    self.tables.append(
                        ParquetTable(self.folder, self.columns, part_rows, part_seconds)
                    )
        except ScenarioError:
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
        """Write what is buffered, close the files: every table, even when one fails.

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


def read_parquet(folder: str | Path) -> Any:  # a pyarrow.Table (pyarrow is optional)
    """The Parquet table of ``folder`` (a ``pyarrow.Table``, sorted by run).

    Parameters
    ----------
    folder : str or Path

    Returns
    -------
    pyarrow.Table
    """
    pa, pq = pyarrow_modules()
    path = Path(folder) / PARQUET
    parts = sorted(path.glob('part-*.parquet'))
    if not parts:
        raise FileNotFoundError(f'{path}: no Parquet part')
    table = pa.concat_tables([pq.read_table(p) for p in parts])
    return table.sort_by('run')


def read_rows(folder: str | Path) -> list[dict]:
    """The rows of ``folder/runs.csv``, or of ``folder/runs.parquet`` when there is no CSV
    (numbers as floats, ``failure`` and ``reasons`` as text), sorted by run.

    Parameters
    ----------
    folder : str or Path

    Returns
    -------
    list of dict
    """
    path = Path(folder) / RUNS
    if not path.is_file() and (Path(folder) / PARQUET).is_dir():
        rows = read_parquet(folder).to_pylist()
        return [{k: (v if k in TEXT_COLUMNS else float(v)) for k, v in r.items()} for r in rows]
    rows = []
    with open(path, newline='') as handle:
        for r in csv.DictReader(handle):
            rows.append({k: (v if k in TEXT_COLUMNS else float(v)) for k, v in r.items()})
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


def summarize(rows: Iterable[dict]) -> dict:
    """Success rate with its 95 % Wilson interval, failures, and the percentiles
    (:data:`PERCENTILES`) of each metric of :data:`METRICS` over the runs without a failure
    (``ran``: a failed run's metrics stop where it failed, or were never measured) where the
    metric is finite.

    Parameters
    ----------
    rows : iterable of dict
        Rows of the table (:func:`run_row`, :func:`read_rows`).

    Returns
    -------
    dict
    """
    rows = list(rows)
    n = len(rows)
    ok = sum(int(r['reached']) for r in rows)
    ran = [r for r in rows if not r['failure']]
    out = {
        'runs': n,
        'reached': ok,
        'success_rate': ok / n if n else math.nan,
        'success_interval': wilson_interval(ok, n),
        'failed': n - len(ran),
        'ran': len(ran),
        'percentiles': {},
    }
    for key, _ in METRICS:
        x = np.array([float(r[key]) for r in ran], dtype=float)
        x = x[np.isfinite(x)]
        out['percentiles'][key] = (
            {p: float(np.percentile(x, p)) for p in PERCENTILES} if x.size else {}
        )
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
        'not in them).',
        '',
        '| metric | ' + ' | '.join(f'p{p}' for p in PERCENTILES) + ' |',
        '|---|' + '---|' * len(PERCENTILES),
    ]
    for key, label in METRICS:
        pct = summary['percentiles'][key]
        cells = [f'{pct[p]:.4g}' if pct else '-' for p in PERCENTILES]
        lines.append(f'| {label} | ' + ' | '.join(cells) + ' |')
    return '\n'.join(lines) + '\n'


def plot(rows: list[dict], folder: str | Path, inputs: list[str], max_inputs: int = 8) -> list:
    """Histograms of the metrics and each metric against the dispersed inputs (the first
    ``max_inputs`` input columns): ``histograms.png`` and ``inputs.png``; returns the paths.

    Parameters
    ----------
    rows : list of dict
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
    reached = np.array([bool(r['reached']) for r in rows])
    fig, axes = plt.subplots(2, 3, figsize=(12, 6))
    for ax, (key, label) in zip(axes.ravel(), METRICS, strict=True):
        x = np.array([float(r[key]) for r in rows])
        x = x[np.isfinite(x)]
        if x.size:
            ax.hist(x, bins=min(40, max(5, x.size // 5)))
        ax.set(xlabel=label, ylabel='runs')
    fig.tight_layout()
    paths.append(folder / 'histograms.png')
    fig.savefig(paths[-1], dpi=80)
    plt.close(fig)
    shown = inputs[:max_inputs]
    if shown:
        fig, axes = plt.subplots(len(shown), 2, figsize=(10, 2.2 * len(shown)), squeeze=False)
        for (a1, a2), name in zip(axes, shown, strict=True):
            u = np.array([float(r[name]) for r in rows])
            for ax, key in ((a1, 'max_attitude_change_deg'), (a2, 'final_error')):
                y = np.array([float(r[key]) for r in rows])
                ax.plot(u[reached], y[reached], '.', color='tab:green', ms=3, label='reached')
                ax.plot(u[~reached], y[~reached], 'x', color='tab:red', ms=4, label='not')
                ax.set(xlabel=name, ylabel=key)
        axes[0, 0].legend(fontsize=7)
        fig.tight_layout()
        paths.append(folder / 'inputs.png')
        fig.savefig(paths[-1], dpi=80)
        plt.close(fig)
    return paths
