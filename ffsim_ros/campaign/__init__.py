"""Monte Carlo campaigns of closed-loop runs (no ROS): scenarios, batched runs, results.

See :mod:`.scenario` (what a campaign is), :mod:`.dispersions` (seeds and inputs of a run),
:mod:`.goals` (where a run's goals come from), :mod:`.supervision` (the reach supervisor's
bookkeeping over a batch) and :mod:`.batch` (runs advanced in lockstep as one batch).
"""
