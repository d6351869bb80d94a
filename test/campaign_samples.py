"""Sample campaign inputs and a campaign interrupted mid-run, shared by the campaign tests."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

#: Two runs of the planar 2-link arm, one goal each, short timeouts.
TINY = """\
robot: planar_2link
timing: {physics_dt: 0.001, control_dt: 0.01, settle: 0.05, run_goal_timeout: 0.2}
reach: {goal_timeout: 0.2}
initial: {joint_positions: [0.3, 1.2]}
goals: {kind: offsets, offsets: [[0.01, 0.01, 0.0]]}
runs: 2
batch_size: 2
"""


def interrupted_campaign(scenario: Path, out: Path, signum: int, *options: str) -> tuple[int, str]:
    """Run ``ffsim_ros.campaign.cli`` on ``scenario`` into ``out`` in a subprocess (SIGINT
    at its default disposition, as from a terminal), send it ``signum`` once ``runs.csv`` holds
    4 rows, and return its exit code and stderr."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    cmd = [sys.executable, '-m', 'ffsim_ros.campaign.cli', str(scenario), '--output', str(out)]
    proc = subprocess.Popen(
        [*cmd, *options],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),  # noqa: PLW1509
    )
    try:
        deadline = time.monotonic() + 300
        table = out / 'runs.csv'
        while not (table.is_file() and len(table.read_text().splitlines()) >= 5):  # header + 4
            assert proc.poll() is None and time.monotonic() < deadline, proc.poll()
            time.sleep(0.05)
        proc.send_signal(signum)
        _, stderr = proc.communicate(timeout=300)
    finally:
        proc.kill()
    return proc.returncode, stderr
