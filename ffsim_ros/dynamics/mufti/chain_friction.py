"""Joint friction too stiff for the step on a closed chain: the implicit impulse with the
loops [S0 eq. 41] (:mod:`ffsim_ros.dynamics.stiff_friction` for the tree).

A closed chain's RK4 step integrates the joint friction ``phi_j(w) = d_j w + f_c,j tanh(w /
eps)`` explicitly. Where ``rho_j = dt k_j W_jj`` exceeds :data:`.stiff_friction.STIFF_RATIO`
(``k_j = d_j + f_c,j / eps``; ``W`` the mobility on the loops' constraint manifold: the rate
change of each joint per unit impulse of its effort, with the loop impulses that keep the
loops closed), or several joints' coupled ratio exceeds :data:`.stiff_friction.COUPLED_RATIO`
(:func:`.stiff_friction.stiff_dofs`), RK4 turns the rest point into a cycle: a floating dual
arm closed by a revolute cut hinge, 0.5 N m on each of its 9 joints, released at 1 ms, crept
at up to 6.5e-3 rad/s for ever.

The step is then split: the chain's own step (RK4, the projection onto the manifold and the
momentum) without joint friction, then the friction of *every* joint that has some, as one
backward-Euler impulse at the step's end on the manifold
(:func:`.stiff_friction.constrained_friction_impulse`: ``v+ = v + W S p``, ``p = -dt
phi(S^T v+)``). Every joint, not only the stiff ones, as the tree's step does: the loops couple
the joints, and a joint left explicit meets the rates the explicit part reaches within the
step (a stiff joint's load moves it by ``dt W S tau`` there, far beyond ``eps`` before the
impulse holds it) -- with the dual arm's two non-stiff joints left explicit, a sub-breakaway
effort made its joints creep at 0.48 to 1.2 times the law's rates. With all of it implicit, a
rest point of the split step is one of the law (``N^T S (tau - phi(w)) = 0``, ``N`` spanning
the manifold). The positions then move by ``dt/2`` of the impulse's velocity change
(:func:`.stiff_friction.friction_displacement`: the chain's step moved them with rates the
friction did not oppose): without it the angles of the floating spatial loop under a
sub-breakaway effort crept at 3.4-3.6 times the law's rates at 1 ms (2.2-2.3 at 0.5 ms), the
rates being right; with it, at the law's rates (6.7e-6 of the largest apart). The chain's
projection closes the loops again after it (to its tolerance, 1e-13) and the momentum and the
CoM of the state before it are restored (:meth:`SplitFriction.run`).

``W S`` comes from the chain's own velocity projection: ``H^-1 S`` less ``M^-1 C^T (C M^-1
C^T)^+ C H^-1 S`` on the independent loop rows of the compiled solver (one call per joint
with friction). Its base rows carry no impulse (the loop rows have no base columns), so the
momentum and the loops' velocity errors are unchanged to round-off. Whether to split is
decided at the start of a call, then at each step's end while split; where no joint is stiff
the chain steps as before, bit for bit.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..algorithms import mass_matrix
from ..model import Model, with_joint_dynamics
from ..stiff_friction import (
    DISPLACEMENT_SHARE,
    constrained_friction_impulse,
    friction_displacement,
    friction_slopes,
    stiff_dofs,
)
from .articulated import LoopKernel

_NONE = np.empty(0, dtype=np.int64)
#: The loops' position tolerance [m, rad] and Gauss-Newton iteration limit of the projection
#: after the impulse's displacement (those of the chain's own step).
LOOP_TOL = 1e-13
LOOP_ITERATIONS = 10


class SplitFriction:
    """The split steps of a closed chain whose joint friction may be too stiff for ``dt``.

    Parameters
    ----------
    model : Model
    kernel : LoopKernel of the chain (its velocity projection).
    variant : ``variant(model) -> chain``, the chain on ``model`` (the same loops, gains and
        solver) stepping without a split of its own; None: this chain never splits (it is
        such a variant).
    """

    def __init__(
        self, model: Model, kernel: LoopKernel, variant: Callable[[Model], Any] | None
    ) -> None:
        self.model = model
        self.kernel = kernel
        self.slopes = friction_slopes(model)
        #: The DoFs with joint friction (none when the chain never splits).
        self.cols = np.flatnonzero(self.slopes) if variant is not None else _NONE
        self._variant = variant
        self._chains: dict[bool, Any] = {}
        self._at: tuple[bytes, np.ndarray] | None = None  # the last mobility, by its q

    def mobility(self, q: np.ndarray) -> np.ndarray:
        """``W S`` (nv, k) at ``q`` for the DoFs with friction (:attr:`cols`): ``H^-1 S``
        projected onto the loop rows in the kinetic-energy metric (module docstring).

        Parameters
        ----------
        q : (nq,) ndarray
            Configuration [m, -, rad | m].

        Returns
        -------
        (nv, k) ndarray
        """
        key = q.tobytes()
        if self._at is not None and self._at[0] == key:
            return self._at[1]
        E = np.zeros((self.model.nv, self.cols.size))
        E[self.cols, np.arange(self.cols.size)] = 1.0
        WS = np.linalg.solve(mass_matrix(self.model, q), E)
        for c in range(self.cols.size):
            WS[:, c] += self.kernel.projection(q, WS[:, c].copy())[2]
        self._at = (key, WS)
        return WS

    def stiff(self, q: np.ndarray, dt: float) -> bool:
        """Whether some joint's friction is too stiff for ``dt`` at ``q``
        (:func:`.stiff_friction.stiff_dofs` on the mobility with the loops; False at once
        without joint dynamics or friction).

        Parameters
        ----------
        q : (nq,) ndarray
            Configuration [m, -, rad | m].
        dt : float
            Step [s].

        Returns
        -------
        bool
        """
        if self.cols.size == 0:
            return False
        return bool(stiff_dofs(self.mobility(q)[self.cols], self.cols, self.slopes, dt).size)

    def _close(self, q: np.ndarray, v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The chain's own projection onto its loops (:meth:`.LoopKernel.project`, tolerance
        :data:`LOOP_TOL`): Gauss-Newton on the positions where they are open by more than it,
        then the velocity projection onto the loop rows (the momentum is restored after)."""
        return self.kernel.project(q, v, None, LOOP_TOL, LOOP_ITERATIONS)

    def _chain(self, split: bool) -> Any:
        """The chain that takes the explicit part of the step: without joint dynamics when
        ``split``, else with them (a non-splitting copy); made once."""
        chain = self._chains.get(split)
        if chain is None:
            model = with_joint_dynamics(self.model, False) if split else self.model
            chain = self._chains[split] = self._variant(model)  # type: ignore[misc]
        return chain

    def run(
        self,
        q: np.ndarray,
        v: np.ndarray,
        dt: float,
        k: int,
        tau: np.ndarray,
        stabilize: bool,
        project: bool,
        conserve_momentum: bool,
        **wrenches: object,
    ) -> tuple[np.ndarray, np.ndarray]:
        """``k`` steps from ``(q, v)``, where :meth:`stiff` was true, under ``tau`` (n,) and
        ``wrenches`` (``base_wrench``, ``link_wrenches``) held: each the chain's ``step``
        (``stabilize``, ``project``, ``conserve_momentum`` as there) without joint friction,
        the implicit friction impulse and its displacement where some joint is still stiff,
        else the chain's own step. Whether a joint is still stiff is decided at each step's
        end: after a split step, with the mobility where its impulse acted (at hand; the
        displacement moved the chain by ``dt/2`` of the impulse's velocity change).

        The displacement (:func:`.stiff_friction.friction_displacement`, ``dt/2`` of the
        impulse's velocity change, along the manifold ``G dv = 0``) leaves the loops open to
        second order and their velocity rows to first: with ``project``, the chain's own
        projection (:meth:`_close`) closes them again, then the momentum and the first moment
        the state had before the displacement are restored (a base velocity change and a
        translation: the loop rows have no base columns).

        Parameters
        ----------
        q : (nq,) ndarray
            Configuration [m, -, rad | m], base parts in the inertial frame.
        v : (nv,) ndarray
            Velocity [m/s, rad/s, rad/s | m/s], base parts in the inertial frame.
        dt : float
            Step [s].
        k : int
            Number of steps.
        tau : (n,) ndarray
            Joint efforts [N m | N].
        stabilize, project, conserve_momentum : bool
            As the chain's ``step``.
        **wrenches
            ``base_wrench`` (6,) / ``link_wrenches`` as the chain's ``step`` [N, N m].

        Returns
        -------
        Q : (k + 1, nq) ndarray
        V : (k + 1, nv) ndarray
            The trajectory, row 0 the initial state.
        """
        Q = np.empty((k + 1, q.size))
        V = np.empty((k + 1, v.size))
        Q[0], V[0] = q, v
        split, impulse_at = True, q
        for s in range(k):
            if s > 0:  # (after a split step: where its impulse acted, the mobility at hand)
                split = self.stiff(impulse_at if split else q, dt)
            q, v = self._chain(split).step(
                q, v, tau, dt, stabilize=stabilize, project=project,
                conserve_momentum=conserve_momentum, **wrenches,
            )  # fmt: skip
            if split:
                impulse_at, v_explicit = q, v
                v = constrained_friction_impulse(self.model, self.mobility(q), v, self.cols, dt)
                q, v = friction_displacement(
                    self.model, q, v_explicit, v, DISPLACEMENT_SHARE['rk4'] * dt,
                    self._close if project else None,
                )  # fmt: skip
            Q[s + 1], V[s + 1] = q, v
        return Q, V


__all__ = ['SplitFriction']
