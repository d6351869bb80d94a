"""Name-keyed joint effort commands (``sensor_msgs/JointState``), checked whole.

What ros2_control's topic-based hardware interfaces (``joint_state_topic_hardware_interface``,
``topic_based_ros2_control``) and Isaac Sim's articulation bridge send: joint names with
their efforts in the ``effort`` field, for any subset of the joints. A command is refused
whole -- nothing applied, the previous efforts kept -- when it names no joint, more names
than the robot has joints (refused before looking at any name: a huge message costs no
more than a short one), an unknown or repeated joint, a joint with several DoFs, has a
number of efforts other than of names, or a NaN/inf among them; the error names the
culprits. ``position`` and ``velocity`` are not commands here (the simulated joints are
effort-driven): they are ignored, and a message that carries only them is refused.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence

import numpy as np

import ffsim_ros.dynamics as D


class JointCommandError(ValueError):
    """A JointState command refused (the message says why, naming the joints)."""


class JointCommands:
    """Turns name-keyed efforts into the engine's ``(indices, efforts)`` (joint order).

    Parameters
    ----------
    model : Model
        The simulated robot: its joint names and DoFs.
    """

    def __init__(self, model: D.Model) -> None:
        self.joint_names = tuple(model.joint_names)
        base = model.nv - model.n  # joint DoFs start after the base's in v
        self._index = {}
        self._multi = set()
        for name in self.joint_names:
            dofs = model.joint_v_slice(name)
            if dofs.stop - dofs.start == 1:
                self._index[name] = dofs.start - base
            else:
                self._multi.add(name)

    def decode(
        self, names: Sequence[str], efforts: Sequence[float], others: Sequence[Sequence[float]]
    ) -> tuple[np.ndarray, np.ndarray]:
        """``(indices (k,), efforts (k,))`` of a command.

        Parameters
        ----------
        names : sequence of str
            The ``name`` field.
        efforts : sequence of float
            The ``effort`` field [N m | N].
        others : sequence of sequence of float
            The ``position`` and ``velocity`` fields (only to say why a message with them
            and no efforts is refused).

        Returns
        -------
        indices : (k,) int ndarray
            Joint indices (into ``tau``).
        efforts : (k,) ndarray
            [N m | N]

        Raises
        ------
        JointCommandError
            See the module docstring.
        """
        if len(names) > len(self.joint_names):
            # before any per-name work: a huge message costs no more than a short one
            raise JointCommandError(
                f'expected at most {len(self.joint_names)} joint names (each joint once), '
                f'got {len(names)}'
            )
        names = list(names)
        if not names:
            raise JointCommandError('expected joint names with their efforts, got no name')
        unknown = [n for n in names if n not in self._index and n not in self._multi]
        if unknown:
            raise JointCommandError(
                f'unknown joints {unknown}: expected names among {list(self.joint_names)}'
            )
        repeated = sorted(n for n, times in Counter(names).items() if times > 1)
        if repeated:
            raise JointCommandError(f'joints named more than once: {repeated}')
        multi = [n for n in names if n in self._multi]
        if multi:
            raise JointCommandError(
                f'joints {multi} have several DoFs: command them on joint_effort_commands'
            )
        if len(efforts) != len(names):
            why = ''
            if not efforts and any(len(field) for field in others):
                why = (
                    ' (position and velocity are not commands here: the joints are effort-driven)'
                )
            raise JointCommandError(
                f'expected one effort per name ({len(names)}), got {len(efforts)}{why}'
            )
        bad = {n: e for n, e in zip(names, efforts, strict=True) if not math.isfinite(e)}
        if bad:
            raise JointCommandError(f'expected finite efforts, got {bad}')
        return (
            np.array([self._index[n] for n in names], dtype=np.int64),
            np.array(efforts, dtype=float),
        )
