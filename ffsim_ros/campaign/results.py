"""The results of a campaign: one row per run, written as runs end, resumable; the summary.

A campaign folder holds ``scenario.json`` (the scenario, with its fingerprint), ``runs.csv``
(one row per run, appended and flushed as each run ends, so memory stays flat whatever the
number of runs, and an interrupted campaign keeps what it finished), ``summary.md`` and PNG
plots. Opening a folder that already has rows of the same scenario (same fingerprint: the
number of runs and the batch size may differ) resumes it: :attr:`ResultsWriter.done` lists
the runs not to redo. A folder of another scenario is refused.

Columns: ``run``, ``reached`` (every goal reached, no failure), ``failure`` (the reason, or
empty), ``goals``, ``goals_reached``, ``time_to_reach`` [s] (sum of the goals' times to their
outcome; NaN unless reached), ``final_error`` [m] (the last goal's), the metrics of
:class:`~.batch.RunResult` (``max_attitude_change_deg``, ``max_base_rate_deg_s``,
``momentum_error_linear`` [kg m/s], ``momentum_error_angular`` [N m s], ``peak_effort_ratio``
and ``peak_effort.<joint>`` [N m | N]), ``plans``, ``reasons`` (the goals' reasons joined by
`` | ``), then the drawn inputs ``in.<parameter>.<component>``.
"""

from __future__ import annotations

import csv
import json
import math
from collections.abc import Iterable
from pathlib import Path

import numpy as np

from .batch import Campaign, RunResult
from .scenario import Scenario, ScenarioError

RUNS = 'runs.csv'
SCENARIO = 'scenario.json'
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
    """The columns of the table of ``campaign`` (module docstring)."""
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
    """The row of one run (module docstring)."""
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


class ResultsWriter:
    """Rows appended to ``folder/runs.csv`` as runs end (module docstring).

    Raises
    ------
    ScenarioError
        ``folder`` holds the results of another scenario.
    """

    def __init__(self, folder: str | Path, campaign: Campaign) -> None:
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        self.columns = columns(campaign)
        scenario = campaign.scenario
        meta = self.folder / SCENARIO
        path = self.folder / RUNS
        self.done: set[int] = set()
        if meta.is_file():
            old = json.loads(meta.read_text())
            if old.get('fingerprint') != scenario.fingerprint():
                raise ScenarioError(
                    f'{self.folder}: holds the results of another scenario '
                    f'({old.get("scenario", {}).get("name")!r}); choose another output folder'
                )
        if path.is_file():
            with open(path, newline='') as handle:
                reader = csv.DictReader(handle)
                if reader.fieldnames != self.columns:
                    raise ScenarioError(f"{path}: columns differ from this scenario's")
                self.done = {int(r['run']) for r in reader}
        meta.write_text(
            json.dumps(
                {'fingerprint': scenario.fingerprint(), 'scenario': scenario.as_dict()}, indent=1
            )
        )
        new = not path.is_file()
        self.handle = open(path, 'a', newline='')  # noqa: SIM115 - closed by close()
        self.writer = csv.DictWriter(self.handle, fieldnames=self.columns)
        if new:
            self.writer.writeheader()
            self.handle.flush()

    def write(self, result: RunResult) -> dict:
        """Append the row of ``result`` (flushed); returns it."""
        row = run_row(result)
        self.writer.writerow(row)
        self.handle.flush()
        self.done.add(result.index)
        return row

    def close(self) -> None:
        """Close the file."""
        self.handle.close()

    def __enter__(self) -> ResultsWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def read_rows(folder: str | Path) -> list[dict]:
    """The rows of ``folder/runs.csv`` (numbers as floats, ``failure`` and ``reasons`` as
    text), sorted by run."""
    rows = []
    with open(Path(folder) / RUNS, newline='') as handle:
        for r in csv.DictReader(handle):
            rows.append(
                {k: (v if k in ('failure', 'reasons') else float(v)) for k, v in r.items()}
            )
    return sorted(rows, key=lambda r: r['run'])


def wilson_interval(successes: int, n: int, z: float = 1.959963984540054) -> tuple[float, float]:
    """Wilson score interval of a success rate (95 % by default): ``(low, high)``."""
    if n == 0:
        return (0.0, 1.0)
    p = successes / n
    den = 1.0 + z * z / n
    mid = (p + z * z / (2 * n)) / den
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / den
    return (max(0.0, mid - half), min(1.0, mid + half))


def summarize(rows: Iterable[dict]) -> dict:
    """Success rate with its 95 % Wilson interval, failures, and the percentiles
    (:data:`PERCENTILES`) of each metric of :data:`METRICS` over the runs where it is finite."""
    rows = list(rows)
    n = len(rows)
    ok = sum(int(r['reached']) for r in rows)
    out = {
        'runs': n,
        'reached': ok,
        'success_rate': ok / n if n else math.nan,
        'success_interval': wilson_interval(ok, n),
        'failed': sum(bool(r['failure']) for r in rows),
        'percentiles': {},
    }
    for key, _ in METRICS:
        x = np.array([float(r[key]) for r in rows], dtype=float)
        x = x[np.isfinite(x)]
        out['percentiles'][key] = (
            {p: float(np.percentile(x, p)) for p in PERCENTILES} if x.size else {}
        )
    return out


def summary_markdown(scenario: Scenario, summary: dict) -> str:
    """``summary.md``: the success rate and a percentile table."""
    lo, hi = summary['success_interval']
    lines = [
        f'# Campaign {scenario.name}',
        '',
        f'{summary["runs"]} runs ({scenario.robot}, {scenario.mode}, seed {scenario.seed}): '
        f'{summary["reached"]} reached every goal, success rate '
        f'{100 * summary["success_rate"]:.1f} % (95 % CI {100 * lo:.1f}-{100 * hi:.1f} %, '
        f'Wilson); {summary["failed"]} failed (non-finite state or controller error).',
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
    ``max_inputs`` input columns): ``histograms.png`` and ``inputs.png``; returns the paths."""
    import matplotlib

    matplotlib.use('Agg')
    import matplotlib.pyplot as plt

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
