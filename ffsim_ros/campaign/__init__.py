"""Monte Carlo campaigns of closed-loop runs (no ROS): scenarios, batched runs, results.

See :mod:`.scenario` (what a campaign is), :mod:`.dispersions` (seeds and inputs of a run),
:mod:`.goals` (where a run's goals come from), :mod:`.supervision` (the reach supervisor's
bookkeeping over a batch), :mod:`.batch` (runs advanced in lockstep as one batch),
:mod:`.executors` (where the batches run: in this process, or on Ray), :mod:`.results` (the
table, CSV or Parquet, written as runs end, resumable; the summary and plots), :mod:`.replay`
(a run replayed into the simulator's ROS 2 messages, to MCAP; the only module here that needs
ROS) and :mod:`.cli` (``ffsim campaign SCENARIO.yaml``).
"""
