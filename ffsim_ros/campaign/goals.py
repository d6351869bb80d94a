"""Where a run's goals come from: one source per goal scheme (the extension point).

A source hands a run its goals one at a time, when the previous one has ended
(:meth:`GoalSource.next_goal`, with the run's true configuration then and the controller that
must accept the goal). :data:`GOAL_SOURCES` maps a scenario's ``goals.kind`` to the factory of
its source:

* ``offsets``: a fixed list, relative to the end effector's start position, plus the run's
  drawn ``goal_offset`` dispersion;
* ``chained``: the issue-15 scheme of :func:`ffsim_ros.control.closed_loop.chained_goals`, drawn
  from the run's goal stream (the same draws, in the same order, as that function makes).

Extension point for the capture scenario (issue 17, not implemented): register a factory under
``'capture'`` returning a source whose goals follow the target's grasp point. A tumbling target
also moves between goals, so such a scenario needs the target's state advanced with the
physics too (a second body in the batch's step), which this package does not have yet; the
scenario loader refuses ``capture`` until then.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

import numpy as np

import ffsim_ros.dynamics as D
from ffsim_ros.control import ReactionlessController

from .dispersions import GOALS, RunInputs, run_rng
from .scenario import Scenario

#: Draws of a chained goal before the run fails (goals out of the arm's reach).
MAX_DRAWS = 10000


class GoalSource(Protocol):
    """The goals of one run (see the module docstring)."""

    def next_goal(self, q: np.ndarray, law: ReactionlessController) -> np.ndarray | None:
        """The next goal (3,) [m], inertial frame, with the arm at ``q`` (true state); None
        when the run has no goal left.

        Parameters
        ----------
        q : (nq,) ndarray
            The run's true configuration ``[r0, Q0 (x, y, z, w), phi]``, base in the inertial
            frame [m, -, rad | m].
        law : ReactionlessController
            The run's controller.

        Returns
        -------
        (3,) ndarray or None
        """


class OffsetGoals:
    """The goals ``start + offsets[k]`` in order (``start``: the end effector at ``q0``).

    Parameters
    ----------
    start : (3,) ndarray
        End-effector position at the run's start, inertial frame [m].
    offsets : (k, 3) ndarray
        Goal offsets from ``start``, inertial frame [m].
    """

    def __init__(self, start: np.ndarray, offsets: np.ndarray) -> None:
        self.goals = [np.asarray(start, float) + np.asarray(o, float) for o in offsets]
        self.k = 0

    def next_goal(self, q: np.ndarray, law: ReactionlessController) -> np.ndarray | None:
        """The next goal of the list (:meth:`GoalSource.next_goal`).

        Parameters
        ----------
        q : (nq,) ndarray
            The run's true configuration [m, -, rad | m] (not used: the goals were fixed at
            construction).
        law : ReactionlessController
            The run's controller (not used).

        Returns
        -------
        (3,) ndarray or None
            ``start + offsets[k]`` [m], inertial frame, at the ``k``-th call (from 0); None
            once every goal was handed out.
        """
        if self.k >= len(self.goals):
            return None
        self.k += 1
        return self.goals[self.k - 1]


class ChainedGoals:
    """``count`` goals, each ``near``-``far`` m [m] in a uniformly random direction from where
    the end effector is when drawn, redrawn until the controller accepts it (the draws of
    :func:`ffsim_ros.control.closed_loop.chained_goals`).

    Parameters
    ----------
    rng : numpy.random.Generator
        The run's goal stream.
    count : int
        Number of goals.
    near, far : float
        Distance range from the end effector [m].
    """

    def __init__(self, rng: np.random.Generator, count: int, near: float, far: float) -> None:
        self.rng, self.count, self.near, self.far = rng, count, near, far
        self.k = 0

    def next_goal(self, q: np.ndarray, law: ReactionlessController) -> np.ndarray | None:
        """The next goal, drawn around the end effector at ``q`` (:meth:`GoalSource.next_goal`).

        A draw is the end effector's position plus a direction uniform on the sphere (a
        normalized standard normal 3-vector from ``rng``) times a distance uniform in
        ``[near, far]`` [m]; it is drawn again until ``law.check_goal(q, goal)`` accepts it.

        Parameters
        ----------
        q : (nq,) ndarray
            The run's true configuration ``[r0 (3), Q0 (4), phi]``: the base CoM position [m]
            and orientation quaternion (x, y, z, w), inertial frame, then the joint positions
            [rad | m].
        law : ReactionlessController
            The controller that must accept the goal (its ``model`` and ``ee_link`` give the
            end effector's position).

        Returns
        -------
        (3,) ndarray or None
            The goal [m], inertial frame; None after ``count`` goals.

        Raises
        ------
        ValueError
            No draw accepted in :data:`MAX_DRAWS` draws (naming the last refusal).
        """
        if self.k >= self.count:
            return None
        self.k += 1
        p = D.link_pose(law.model, q, law.ee_link)[0]
        rng = self.rng
        refusal = ''
        for _ in range(MAX_DRAWS):
            d = rng.normal(size=3)
            goal = p + rng.uniform(self.near, self.far) * d / np.linalg.norm(d)
            try:
                law.check_goal(q, goal)
            except ValueError as exc:
                refusal = str(exc)
                continue
            return goal
        raise ValueError(
            f'goals.near/far: no goal {self.near:g}-{self.far:g} m away accepted by the '
            f'controller in {MAX_DRAWS} draws (the last: {refusal})'
        )


def _offsets(scenario: Scenario, inputs: RunInputs, law: ReactionlessController) -> GoalSource:
    start = D.link_pose(law.model, inputs.q0, law.ee_link)[0]
    return OffsetGoals(start, inputs.goal_offsets)


def _chained(scenario: Scenario, inputs: RunInputs, law: ReactionlessController) -> GoalSource:
    g = scenario.goals
    return ChainedGoals(run_rng(scenario.seed, inputs.index, GOALS), g.count, g.near, g.far)


#: ``goals.kind`` -> factory ``(scenario, run inputs, controller) -> GoalSource``.
GOAL_SOURCES: dict[str, Callable[[Scenario, RunInputs, ReactionlessController], GoalSource]] = {
    'offsets': _offsets,
    'chained': _chained,
}


def goal_source(scenario: Scenario, inputs: RunInputs, law: ReactionlessController) -> GoalSource:
    """The goal source of a run (:data:`GOAL_SOURCES`).

    Parameters
    ----------
    scenario : Scenario
    inputs : RunInputs
        The run's sampled inputs (initial state, goal offsets).
    law : ReactionlessController
        The run's controller.

    Returns
    -------
    GoalSource

    Raises
    ------
    ValueError
        A kind without a registered source (``capture`` until issue 17).
    """
    try:
        factory = GOAL_SOURCES[scenario.goals.kind]
    except KeyError:
        raise ValueError(
            f'goals.kind: no goal source for {scenario.goals.kind!r}; expected one of '
            f'{sorted(GOAL_SOURCES)}'
        ) from None
    return factory(scenario, inputs, law)
