"""Closed chains by cut hinges [M sec. 4, eqs. 62-66, Remark 4, Appendix case 2].

A closed-chain system is the tree of a :class:`~ffsim_ros.dynamics.model.Model` plus ``n*``
*cut hinges* (:class:`LoopClosure`), each joining a frame on link ``a`` (the initial vertex of
the cut arc) to a frame on link ``b`` (its final vertex). The incidence matrix of the closed
system is ``C_c = (C, C*)`` [M eq. 62] and the Lagrangian system keeps the form of
[M eqs. 10, 49] with the cut-hinge rows appended ([M eq. 63], ``lambda_c`` the multipliers); it
is solved exactly like the tree (:mod:`.linalg`, methods ``'kkt'``, ``'nullspace'``,
``'multipliers'``). The seed's other route, the tree's own equations with the cut-hinge
constraints appended [M eqs. 72-73], is the default ``'aba'`` (:mod:`.articulated`), in the
tree's joint coordinates rather than the seed's ``(r''_1, w')`` [M eqs. 67-71].

Rows of a cut hinge ("a minus b", inertial frame; ``o_a``, ``o_b`` the hinge frame origins
on each body, ``l = o - r`` from the body's CoM):

* ``'ball'`` (3 rows): ``d . (r''_a + w'_a x m_a - r''_b - w'_b x m_b)
  = -d . (w_a x (w_a x l_a) - w_b x (w_b x l_b)) - 2 d' . (o_a' - o_b') - d'' . xi`` for the
  axes ``d`` of hinge frame a (``d' = w_a x d``, ``d''`` its part without ``w'_a``), ``m`` the
  lever arms to the midpoint of ``o_a`` and ``o_b`` -- [M eqs. 6-9] with the two hinge points
  kept distinct in the velocity products, so that the rows are the second derivative of the
  position error ``xi_d = d . (o_a - o_b)`` [M eq. 6, Remark 4] off the constraint manifold
  too, up to ``d . ((w'_b - w'_a) x xi / 2)`` (the common point of application's price,
  second order: it vanishes on the manifold and for a rigid spin), at any spin of the chain;
* ``'revolute'`` (5 rows): the ball rows and ``q_k . (w'_a - w'_b) = -q_k . (w_a x w_b)``
  for ``q_1, q_2 _|_ k_a`` ([M eq. 48] with ``q_k`` fixed in body a), ``k`` the z axis of the
  hinge frames; the angular error is ``q_k . (k_b x k_a)``;
* ``'weld'`` (6 rows): the ball rows and ``w'_a - w'_b = 0``; the angular error is the
  rotation vector of ``R_a R_b^T``.

Baumgarte stabilization [M Remark 4] replaces the loop rows ``xi'' = 0`` by
``xi'' + alpha xi' + beta xi = 0``. Defaults: ``alpha = 2 omega``, ``beta = omega^2`` with
``omega = 20 rad/s`` (critically damped error dynamics with a 50 ms time constant; at the
1-10 ms steps the RK4 integrator is used with, ``alpha dt <= 0.4`` stays far inside RK4's
stability region).

Redundant cut-hinge rows (a planar four-bar: the out-of-plane rows of the cut hinge are
implied by the tree's) make ``G`` rank deficient; it is then reduced by SVD [M Appendix case 2]
with a :class:`~.linalg.RedundantConstraintWarning` (per cut hinge, :meth:`independent_rows`),
and minimum-norm multipliers are returned (the redundant loop forces are statically
indeterminate): rows redundant within a hinge carry none, whatever the method; for rows
dependent *across* hinges ``'aba'`` minimizes the norm of the loop multipliers alone,
``'kkt'``, ``'nullspace'`` and ``'multipliers'`` that of all multipliers, tree hinges included
-- the accelerations agree, the loop wrenches need not.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from ..algorithms import body_wrenches, mass_matrix
from ..algorithms import momentum as momentum_of
from ..inputs import ArrayLike, as_q, as_v, as_vector, generalized_force, positive_step, step_count
from ..integration import check_step_rotation, momentum_after, rk4_step
from ..lie import cross, matrix_log, skew
from ..model import Model
from .articulated import LoopKernel
from .assembly import assemble_positions, assemble_velocities
from .chain_friction import SplitFriction
from .chain_inputs import BodyWrench, check_finite, check_gains, check_loops, name_bad_input
from .closing import close_after_step, close_loops
from .hinges import LOOP_KINDS, LoopClosure
from .linalg import RedundantConstraintWarning, block_mass_matrix, solve_lagrangian
from .loop_rank import hinge_basis, hinge_scale, metric_correction, reduced_rows
from .tree import (
    METHODS,
    Bodies,
    Rows,
    applied_forces,
    bodies,
    body_velocity_jacobian,
    checked_inputs,
    effective_efforts,
    hinge_wrenches,
    joint_accelerations,
    root_rows,
    tree_rows,
)

#: Solvers of the closed-chain system: the compiled tree-coordinate form (default) and the
#: maximal-coordinate references of :mod:`.linalg`.
CHAIN_METHODS = ('aba',) + METHODS
#: Singular values of a cut hinge's ``C_k`` below this fraction of its largest, or of the
#: bound on them from its rows and path (:mod:`.loop_rank`), are zero.
_RANK_RTOL = 1e-9

#: Default Baumgarte natural frequency [rad/s]: ``alpha = 2 omega``, ``beta = omega^2``.
BAUMGARTE_OMEGA = 20.0
DEFAULT_ALPHA = 2.0 * BAUMGARTE_OMEGA
DEFAULT_BETA = BAUMGARTE_OMEGA**2


@dataclass(frozen=True)
class ClosedChainSolution:
    """Solution of the closed-chain Lagrangian system [M eq. 63].

    Attributes
    ----------
    a : (nv,) generalized accelerations of the tree coordinates.
    body_accelerations : (nb, 6) ``[r''_i; w'_i]``, inertial frame.
    multipliers : dict[str, ndarray]
        ``lambda_c`` of each cut hinge (3, 5 or 6 values, rows as in the module docstring).
    loop_wrenches : dict[str, (6,) ndarray]
        ``[f; n]`` [N, N m]: the wrench body ``a`` exerts on body ``b`` through the cut hinge,
        at the hinge point ``o_b``, inertial frame (loop-closure force). Redundant rows: none
        from rows redundant within the hinge; for rows dependent across hinges the wrench of
        the minimum-norm *loop* multipliers with ``'aba'``, of the minimum norm over all
        multipliers (tree hinges included) with the other methods (module docstring).
    hinge_forces, constraint_torques : (n, 3) ndarray
        Tree hinges as in :class:`~.tree.MaximalSolution`.
    rank : int
        Rank of the constraint matrix; smaller than its row count when rows are redundant.
    n_rows : int
        Row count of the constraint matrix (tree, base hinge and cut hinges).
    """

    a: np.ndarray
    body_accelerations: np.ndarray
    multipliers: dict[str, np.ndarray]
    loop_wrenches: dict[str, np.ndarray]
    hinge_forces: np.ndarray
    constraint_torques: np.ndarray
    rank: int
    n_rows: int


class ClosedChain:
    """A tree :class:`Model` closed by cut hinges [M sec. 4].

    Parameters
    ----------
    model : Model
    loops : sequence of LoopClosure
    alpha, beta : float
        Baumgarte gains of [M Remark 4] [1/s, 1/s^2] (``xi'' + alpha xi' + beta xi = 0``);
        defaults :data:`DEFAULT_ALPHA`, :data:`DEFAULT_BETA`. ``0, 0`` disables it.
    method : {'aba', 'kkt', 'nullspace', 'multipliers'}
        Solver of the Lagrangian system: ``'aba'`` (default) the compiled O(n) form in the
        tree's coordinates (:mod:`.articulated`); the others the maximal-coordinate
        references (:mod:`.linalg`).
    """

    def __init__(
        self,
        model: Model,
        loops: Sequence[LoopClosure],
        *,
        alpha: float = DEFAULT_ALPHA,
        beta: float = DEFAULT_BETA,
        method: str = 'aba',
    ) -> None:
        _check_chain_method(method)
        loops = check_loops(model, loops)
        alpha, beta = check_gains(alpha, beta)
        self.model = model
        self.loops = loops
        self.alpha = alpha
        self.beta = beta
        self.method = method
        self._warned = False
        self._kernel = LoopKernel(model, loops, _RANK_RTOL, self._closing_rows)
        self._split = SplitFriction(model, self._kernel, self._explicit)

    def _explicit(self, model: Model) -> ClosedChain:
        """This chain on ``model`` (the explicit part of a split step), never split itself."""
        c = ClosedChain(model, self.loops, alpha=self.alpha, beta=self.beta, method=self.method)
        c._split = SplitFriction(model, c._kernel, None)
        return c

    def _names(self) -> str:
        """The cut hinges, for error messages."""
        return 'loop closure ' + ', '.join(repr(lp.name) for lp in self.loops)

    @property
    def _row_counts(self) -> list[int]:
        return [lp.rows for lp in self.loops]

    @property
    def n_loop_rows(self) -> int:
        """Total number of cut-hinge rows."""
        return sum(lp.rows for lp in self.loops)

    # ------------------------------------------------------------------------------------------
    # constraint rows
    # ------------------------------------------------------------------------------------------

    def _hinge_frames(
        self, bd: Bodies, lp: LoopClosure
    ) -> list[tuple[int, np.ndarray, np.ndarray]]:
        out = []
        for link, rot, tr in (
            (lp.link_a, lp.rotation_a, lp.translation_a),
            (lp.link_b, lp.rotation_b, lp.translation_b),
        ):
            fr = self.model.frame(link)
            i = fr.body
            Rw = bd.R[i] @ fr.rotation @ rot
            o = bd.p[i] + bd.R[i] @ (fr.translation + fr.rotation @ tr)
            out.append((i, Rw, o))
        return out

    def loop_rows(self, bd: Bodies) -> tuple[Rows, np.ndarray, np.ndarray, np.ndarray]:
        """Rows of the cut hinges [M eqs. 63-66], position errors ``xi``, their rates ``xi'``
        and hinge points ``o_b``.

        Rows are taken along the axes ``d_k`` of hinge frame ``a`` (fixed in body ``a``), and
        the translational rows of both sides act at one point, the midpoint of ``o_a`` and
        ``o_b``: a multiplier is then an equal and opposite wrench on ``a`` and ``b`` about
        one point, internal whatever its value (module docstring). The translational
        right-hand sides carry the turning of ``d_k`` with body ``a``: the rows are then
        ``xi_k'' `` of ``xi_k = d_k . (o_a - o_b)`` up to ``d_k . ((w'_b - w'_a) x xi / 2)``
        only (the midpoint's price, second order off the manifold), so Baumgarte's error
        dynamics hold at any spin of the chain.

        Parameters
        ----------
        bd : Bodies at the state.

        Returns
        -------
        rows : Rows (``n_loop_rows``);  xi : (n_loop_rows,) position/attitude errors along the
        rows (``d_k . (o_a - o_b)`` [m] and angles [rad]);  xi_dot : (n_loop_rows,) their
        rates [m/s, rad/s] (exact for the translational rows, ``d_k . (w_a - w_b)`` for the
        angular ones);  o_b : (n_loops, 3) hinge points on body b.
        """
        A, B, GA, GB, RHS, XI, XD, OB = [], [], [], [], [], [], [], []
        for lp in self.loops:
            (ia, Ra, oa), (ib, Rb, ob) = self._hinge_frames(bd, lp)
            wa, wb = bd.w[ia], bd.w[ib]
            # exact velocity-product terms of xi'' = (o_a - o_b)'' [M eqs. 6-9]
            la, lb = oa - bd.c[ia], ob - bd.c[ib]
            cent = cross(wa, cross(wa, la)) - cross(wb, cross(wb, lb))
            # lever arms to the common point of application
            mid = 0.5 * (oa + ob)
            ma, mb = mid - bd.c[ia], mid - bd.c[ib]
            Dk = Ra.T  # rows d_k: the axes of hinge frame a
            e = oa - ob
            dv = bd.rdot[ia] + cross(wa, la) - bd.rdot[ib] - cross(wb, lb)  # o_a' - o_b'
            turned = cross(wa[None, :], Dk)  # d_k' = w_a x d_k
            GA.append(np.hstack((Dk, cross(ma[None, :], Dk))))
            GB.append(-np.hstack((Dk, cross(mb[None, :], Dk))))
            RHS.append(-Dk @ cent - 2.0 * turned @ dv - cross(wa[None, :], turned) @ e)
            XI.append(Dk @ e)
            XD.append(Dk @ dv + turned @ e)
            if lp.kind != 'ball':
                # angular rows along d_k fixed in body a: d_k . (w'_a - w'_b) = -d_k . (w_a x w_b)
                Qk = Dk[:2] if lp.kind == 'revolute' else Dk
                Z = np.zeros_like(Qk)
                GA.append(np.hstack((Z, Qk)))
                GB.append(np.hstack((Z, -Qk)))
                RHS.append(-Qk @ cross(wa, wb))
                XD.append(Qk @ (wa - wb))
                if lp.kind == 'revolute':
                    XI.append(Qk @ cross(Rb[:, 2], Ra[:, 2]))
                else:
                    XI.append(Qk @ matrix_log(Ra @ Rb.T))
            A.extend([ia] * lp.rows)
            B.extend([ib] * lp.rows)
            OB.append(ob)
        rows = Rows(
            np.array(A, dtype=np.int64),
            np.array(B, dtype=np.int64),
            np.vstack(GA),
            np.vstack(GB),
            np.concatenate(RHS),
        )
        return rows, np.concatenate(XI), np.concatenate(XD), np.array(OB)

    def independent_rows(
        self, bd: Bodies, rows: Rows, closure: float = 0.0
    ) -> list[np.ndarray | None]:
        """Per cut hinge, an orthonormal basis ``U_k`` (rows_k, K_k) of its independent row
        combinations, or None when all its rows are independent; ``closure`` the norm of the
        loop errors at the configuration, for the rows that count for the motion (zero: the
        round-off floor alone, :mod:`.loop_rank`).

        The rank is decided on ``G_k Z``, the map from the tree's velocities to the hinge's
        relative velocity (``Z = d(r', w)/dq'`` the body-velocity Jacobian of [M Remark 2],
        ``Bv`` here, :func:`~.tree.body_velocity_jacobian`): the rows the tree's motion cannot
        violate (a planar loop's out-of-plane rows) are exactly zero there, on the constraint
        manifold and off it, because the rows are body-fixed and act at one point.
        [M Appendix case 2] decides the rank on the whole ``G`` instead, where such rows are
        only nearly redundant off the manifold (their dependence on the tree's rows holds
        through the closure of the loop): an RK4 stage ~1e-7 m off the manifold then passes a
        relative 1e-9 test as independent and the multipliers explode.
        (The rank threshold: :mod:`.loop_rank`.)

        Parameters
        ----------
        bd : Bodies at the state.
        rows : Rows, the cut-hinge rows (:meth:`loop_rows`).
        closure : float [m, rad].
        """
        nb = self.model.arrays.parent.shape[0]
        Bv = body_velocity_jacobian(self.model, bd)
        out: list[np.ndarray | None] = []
        r0 = 0
        for lp in self.loops:
            sl = slice(r0, r0 + lp.rows)
            part = Rows(rows.a[sl], rows.b[sl], rows.Ga[sl], rows.Gb[sl], rows.rhs[sl])
            (ia, _, oa), (ib, _, ob) = self._hinge_frames(bd, lp)
            scale = hinge_scale(self.model, bd, ia, ib, 0.5 * (oa + ob), lp.rows)
            out.append(hinge_basis(part.matrix(nb).dense() @ Bv, scale, _RANK_RTOL, closure))
            r0 += lp.rows
        return out

    def _reduced(
        self, rows: Rows, bases: list[np.ndarray | None]
    ) -> tuple[Rows, list[np.ndarray]]:
        """``rows`` with each hinge's rows replaced by their independent combinations
        (:meth:`independent_rows`), and the per-hinge maps back ``U_k``."""
        return reduced_rows(self._row_counts, rows, bases)

    def constraint_error(self, q: ArrayLike, v: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
        """Position and velocity errors of the cut hinges.

        Parameters
        ----------
        q, v : (nq,), (nv,) tree coordinates [m, -, rad | m], [m/s, rad/s, rad/s | m/s].

        Returns
        -------
        xi : (n_loop_rows,) ``o_a - o_b`` [m] and angular errors [rad] (module docstring).
        xi_dot : (n_loop_rows,) their rates [m/s, rad/s] (:meth:`loop_rows`).
        """
        q = as_q(self.model, q)
        v = as_v(self.model, v)
        bd = bodies(self.model, q, v)
        _, xi, xi_dot, _ = self.loop_rows(bd)
        return xi, xi_dot

    # ------------------------------------------------------------------------------------------
    # dynamics
    # ------------------------------------------------------------------------------------------

    def dynamics(
        self,
        q: ArrayLike,
        v: ArrayLike,
        tau: ArrayLike,
        *,
        base_wrench: ArrayLike | None = None,
        link_wrenches: Mapping[str, ArrayLike] | None = None,
        stabilize: bool = True,
        method: str | None = None,
    ) -> ClosedChainSolution:
        """Accelerations and loop-closure forces ([M eq. 63], stabilized as in [M Remark 4]).

        Parameters
        ----------
        q, v : (nq,), (nv,) tree coordinates [m, -, rad | m], [m/s, rad/s, rad/s | m/s].
        tau : (n,) joint efforts [N m | N].
        base_wrench : (6,) optional ``[F; T]`` at the base CoM (floating base), inertial [N, N m].
        link_wrenches : dict, optional ``{link: (6,) [f; n]}`` at link origins, inertial [N, N m].
        stabilize : bool
            Apply the Baumgarte terms (``alpha``, ``beta``); False gives the plain index-1
            system ``xi'' = 0``.
        method : {'aba', 'kkt', 'nullspace', 'multipliers'}, optional
            Overrides the chain's solver.

        Returns
        -------
        ClosedChainSolution
        """
        model = self.model
        method = self.method if method is None else method
        _check_chain_method(method)
        q, v, tau, bw = checked_inputs(model, q, v, tau, base_wrench)
        if not (np.all(np.isfinite(q)) and np.all(np.isfinite(v)) and np.all(np.isfinite(tau))):
            raise ValueError(f'{self._names()}: expected a finite state and efforts, got NaN/inf')
        if method == 'aba':
            try:
                return self._aba_dynamics(q, v, tau, bw, link_wrenches, stabilize)
            except (np.linalg.LinAlgError, ZeroDivisionError, ValueError):
                name_bad_input(self.model, self._names(), q, v, tau, bw, link_wrenches)
                raise
        bd = bodies(model, q, v)
        u = applied_forces(model, bd, effective_efforts(model, v, tau), bw, link_wrenches)
        tree = tree_rows(model, bd)
        parts = [tree]
        if not model.floating_base:
            parts.append(root_rows(np.zeros(6)))
        loops, xi, xi_dot, ob = self.loop_rows(bd)
        if stabilize and (self.alpha or self.beta):
            loops.rhs = loops.rhs - self.alpha * xi_dot - self.beta * xi
        bases = self.independent_rows(bd, loops, float(np.linalg.norm(xi)))
        reduced, maps = self._reduced(loops, bases)
        parts.append(reduced)
        rows = Rows.concat(parts)
        n_rows = rows.a.size + loops.a.size - reduced.a.size
        nb = model.arrays.parent.shape[0]
        J = block_mass_matrix(bd.mass, bd.inertia)
        try:
            x, lam, rank = solve_lagrangian(
                J, rows.matrix(nb), u.ravel(), rows.rhs, method, check_rank=True, warn=False
            )
        except np.linalg.LinAlgError as exc:
            raise np.linalg.LinAlgError(
                f'{self._names()}: singular closed-chain system ({exc})'
            ) from None
        if not (np.all(np.isfinite(x)) and np.all(np.isfinite(lam))):
            name_bad_input(self.model, self._names(), q, v, tau, bw, link_wrenches)
            raise np.linalg.LinAlgError(
                f'{self._names()}: the closed-chain system gave non-finite accelerations or '
                'loop forces (a singular configuration or a non-finite state)'
            )
        if any(U is not None for U in bases):
            self._warn_redundant(rank, n_rows)
        X = x.reshape(nb, 6)
        acc = joint_accelerations(model, q, bd, X)
        f, g, _ = hinge_wrenches(model, bd, tree, lam)
        lam_reduced = lam[lam.size - reduced.a.size :]
        mult, wrenches = {}, {}
        r0 = k0 = 0
        for k, lp in enumerate(self.loops):
            sl = slice(r0, r0 + lp.rows)
            U = maps[k]
            lk = U @ lam_reduced[k0 : k0 + U.shape[1]]
            ib = loops.b[r0]
            about_c = loops.Gb[sl].T @ lk  # on body b, moment about its CoM
            F = about_c[:3]
            n_o = about_c[3:] - cross(ob[k] - bd.c[ib], F)
            mult[lp.name] = lk
            wrenches[lp.name] = np.r_[F, n_o]
            r0 += lp.rows
            k0 += U.shape[1]
        return ClosedChainSolution(acc, X, mult, wrenches, f, g, rank, n_rows)

    def _warn_redundant(self, rank: int, n_rows: int) -> None:
        if self._warned:
            return
        self._warned = True  # once per chain: a simulation would repeat it every call
        warnings.warn(
            f'closed chain: constraint Jacobian has rank {rank} < {n_rows} rows '
            '(redundant cut-hinge rows, e.g. the out-of-plane rows of a planar loop): their '
            "independent combinations are kept (rank decided per cut hinge on the tree's "
            'relative velocities, a departure from seed 001 Appendix case 2)',
            RedundantConstraintWarning,
            stacklevel=3,
        )

    def _checked_solution(
        self, q: np.ndarray, v: np.ndarray, tau: np.ndarray, bw: np.ndarray | None,
        link_wrenches: Mapping[str, ArrayLike] | None, stabilize: bool,
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, int, np.ndarray]:  # fmt: skip
        """:meth:`LoopKernel.solve` with the chain's gains, non-finite results refused."""
        on = stabilize and bool(self.alpha or self.beta)
        a, lam, acc, k, fext = self._kernel.solve(
            q, v, tau, self.alpha if on else 0.0, self.beta if on else 0.0, bw, link_wrenches
        )
        if not (np.all(np.isfinite(a)) and np.all(np.isfinite(lam))):
            raise np.linalg.LinAlgError(
                f'{self._names()}: the closed-chain system gave non-finite accelerations or '
                'loop forces (a singular configuration or a non-finite state)'
            )
        return a, lam, acc, k, fext

    def _aba_dynamics(
        self, q: np.ndarray, v: np.ndarray, tau: np.ndarray, bw: np.ndarray | None,
        link_wrenches: Mapping[str, ArrayLike] | None, stabilize: bool,
    ) -> ClosedChainSolution:  # fmt: skip
        """:meth:`dynamics` by the compiled tree-coordinate solver (:mod:`.articulated`);
        body accelerations, loop wrenches and tree hinge forces recovered from its result."""
        model = self.model
        a, lam, acc, k, fext = self._checked_solution(q, v, tau, bw, link_wrenches, stabilize)
        n_tree = 6 * model.arrays.parent.shape[0] - model.nv  # 6 - nv_j a joint, 6 a fixed root
        n_rows = n_tree + self.n_loop_rows
        if k < self.n_loop_rows:
            self._warn_redundant(n_tree + k, n_rows)
        bd = bodies(model, q, v)
        rows, _, _, ob = self.loop_rows(bd)
        X, mult, wrenches, f, g = self._kernel.recover(q, bd, rows, ob, tau, lam, acc, fext)
        return ClosedChainSolution(a, X, mult, wrenches, f, g, n_tree + k, n_rows)

    def acceleration(
        self,
        q: ArrayLike,
        v: ArrayLike,
        tau: ArrayLike,
        *,
        base_wrench: ArrayLike | None = None,
        link_wrenches: Mapping[str, ArrayLike] | None = None,
        stabilize: bool = True,
        method: str | None = None,
    ) -> np.ndarray:
        """``dynamics(...).a`` (arguments as :meth:`dynamics`); with ``'aba'`` the compiled
        solver alone, without the other fields of the solution.

        Parameters
        ----------
        q, v, tau, base_wrench, link_wrenches, stabilize, method
            As :meth:`dynamics`.

        Returns
        -------
        (nv,) ndarray
        """
        method = self.method if method is None else method
        if method != 'aba':
            return self.dynamics(
                q,
                v,
                tau,
                base_wrench=base_wrench,
                link_wrenches=link_wrenches,
                stabilize=stabilize,
                method=method,
            ).a
        on = stabilize and bool(self.alpha or self.beta)
        alpha, beta = (self.alpha, self.beta) if on else (0.0, 0.0)
        kernel = self._kernel
        try:
            if base_wrench is None and not link_wrenches:  # the per-call fast path
                a = kernel.fast_accelerations(q, v, tau, alpha, beta)
                if a is not None:
                    return a
            model = self.model
            q, v, tau, bw = checked_inputs(model, q, v, tau, base_wrench)
            return kernel.accelerations(
                q,
                v,
                generalized_force(model, tau, bw),
                body_wrenches(model, q, link_wrenches) if link_wrenches else kernel.empty_fext,
                alpha,
                beta,
            )
        except (np.linalg.LinAlgError, ZeroDivisionError, ValueError):  # inputs scanned on failure
            name_bad_input(self.model, self._names(), q, v, tau, base_wrench, link_wrenches)
            raise

    # ------------------------------------------------------------------------------------------
    # assembly
    # ------------------------------------------------------------------------------------------

    def _free_mask(self, locked: Sequence[str], move_base: bool) -> np.ndarray:
        model = self.model
        free = np.ones(model.nv, dtype=bool)
        if model.floating_base and not move_base:
            free[:6] = False
        for name in locked:
            free[model.joint_v_slice(name)] = False
        return free

    def assemble(
        self,
        q: ArrayLike,
        v: ArrayLike | None = None,
        *,
        locked: Sequence[str] = (),
        move_base: bool = False,
        tol: float = 1e-13,
        max_iter: int = 50,
    ) -> tuple[np.ndarray, np.ndarray]:
        """Project ``(q, v)`` onto the constraint manifold (assembly of the closed chain).

        Positions: damped Gauss-Newton on ``xi(q) = 0`` in the free coordinates, on the Lie
        group, each free angle then moved by whole turns toward its value in ``q``
        (:func:`.assembly.assemble_positions`). Velocities: the kinetic-energy-metric
        projection (:func:`.assembly.assemble_velocities`).

        Parameters
        ----------
        q : (nq,) initial guess [m, -, rad | m].
        v : (nv,) optional velocity to project (default zero) [m/s, rad/s, rad/s | m/s].
        locked : joint names whose coordinates are kept (e.g. the driving crank).
        move_base : bool
            Allow the floating base pose to move (default: keep it).
        tol : float
            Convergence threshold on ``max |xi|`` [m, rad].
        max_iter : int, Gauss-Newton iteration limit.

        Returns
        -------
        q, v : (nq,), (nv,) ndarray, consistent with the cut hinges.

        Raises
        ------
        RuntimeError
            If Gauss-Newton does not reach ``tol`` in ``max_iter`` iterations.
        """
        model = self.model
        q = as_q(model, q).copy()
        v = np.zeros(model.nv) if v is None else as_v(model, v).copy()
        # (a NaN in a joint off the loops left xi finite and failed in LAPACK's SVD)
        name_bad_input(self.model, self._names(), q, v, np.zeros(0))
        free = self._free_mask(locked, move_base)
        q = assemble_positions(model, self._loop_errors, q, free, tol, max_iter, self._names())
        rows = self._velocity_rows(bodies(model, q, np.zeros(model.nv)))
        return q, assemble_velocities(mass_matrix(model, q), rows, free, v)

    def _loop_errors(self, q: np.ndarray) -> tuple[np.ndarray, Callable[[], np.ndarray]]:
        """The loop errors ``xi`` at ``q`` and a function returning their Jacobian on the
        tree's velocities there (:func:`.assembly.assemble_positions`)."""
        bd = bodies(self.model, q, np.zeros(self.model.nv))
        rows, xi, _, _ = self.loop_rows(bd)
        nb = self.model.arrays.parent.shape[0]
        return xi, lambda: rows.matrix(nb).dense() @ body_velocity_jacobian(self.model, bd)

    def _closing_rows(self, q: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
        """``max |xi|`` at ``q``, the errors along the independent loop rows (round-off floor)
        and those rows on the tree's velocities (:data:`.closing.ClosingRows`)."""
        bd = bodies(self.model, q, np.zeros(self.model.nv))
        rows, xi, _, _ = self.loop_rows(bd)
        if not np.all(np.isfinite(xi)):
            return np.inf, xi, xi
        reduced, maps = self._reduced(rows, self.independent_rows(bd, rows))
        parts = np.split(xi, np.cumsum(self._row_counts)[:-1])
        xi_r = np.concatenate([U.T @ x for U, x in zip(maps, parts, strict=True)])
        G = reduced.matrix(len(bd.mass)).dense() @ body_velocity_jacobian(self.model, bd)
        return float(np.max(np.abs(xi))), xi_r, G

    def _velocity_rows(self, bd: Bodies) -> np.ndarray:
        """The independent loop rows on the tree's velocities, ``U^T G B`` (K, nv): their
        velocity errors, and in the kinetic-energy metric the directions of loop impulses."""
        rows, xi, _, _ = self.loop_rows(bd)
        reduced, _ = self._reduced(rows, self.independent_rows(bd, rows, np.linalg.norm(xi)))
        nb = self.model.arrays.parent.shape[0]
        return reduced.matrix(nb).dense() @ body_velocity_jacobian(self.model, bd)

    def project(
        self,
        q: ArrayLike,
        v: ArrayLike,
        *,
        momentum: ArrayLike | None = None,
        tol: float = 1e-13,
        max_iter: int = 10,
        start: ArrayLike | None = None,
    ) -> tuple[np.ndarray, np.ndarray]:
        """Project a nearby state onto the constraint manifold without external impulses.

        Positions: Gauss-Newton steps ``dq = -H^-1 G^T (G H^-1 G^T)^-1 xi`` on the independent
        loop rows (minimum in the kinetic-energy metric: the displacement internal loop
        impulses would produce, so the system CoM does not move). Velocities: the
        kinetic-energy-metric projection onto ``G v = 0`` and, for a floating base, onto the
        momentum ``[P; L_O]`` (loop-closure forces are internal: [S0 eqs. 6-7, 11]).

        Parameters
        ----------
        q, v : (nq,), (nv,) a state near the manifold (e.g. after an integration step).
        momentum : (6,) optional
            Floating base: the momentum ``[P; L_O]`` about the inertial origin the state must
            have (what it had before the step plus the external impulses); default: the
            momentum of ``(q, v)`` itself.
        tol : float
            Convergence threshold on ``max |xi|`` [m, rad].
        max_iter : int, Gauss-Newton iteration limit.
        start : (nq,) optional
            The configuration of the step to ``q``'s start: where Gauss-Newton takes most of
            the step back or does not converge, the nearest closed one (:mod:`.closing`).

        Returns
        -------
        q, v : (nq,), (nv,) ndarray

        Raises
        ------
        RuntimeError
            If the positions do not converge in ``max_iter`` iterations (names the loops).
        """
        model = self.model
        q = as_q(model, q).copy()
        v = as_v(model, v).copy()
        check_finite(self._names(), q=q, v=v, momentum=momentum)
        h_target = None
        if model.floating_base:
            h_target = (
                as_vector(momentum, 6, 'momentum')
                if momentum is not None
                else momentum_of(model, q, v)
            )
        start = None if start is None else as_q(model, start)
        if self.method == 'aba':
            return self._kernel.project(q, v, h_target, tol, max_iter, start)
        rows, names = self._closing_rows, self._names()
        try:
            q = close_after_step(
                model,
                lambda x: close_loops(model, rows, x, tol, max_iter - 1, _RANK_RTOL),
                rows, q, start, (tol, max_iter, _RANK_RTOL), names,
            )  # fmt: skip
        except ValueError:
            raise ValueError(f'project: {names}: non-finite state') from None
        C = self._velocity_rows(bodies(model, q, np.zeros(model.nv)))
        rhs = np.zeros(C.shape[0])
        H = mass_matrix(model, q)
        if h_target is not None:
            # [P; L_O] = X H[:6] v with L_0 about the base CoM r0 = q[:3] [S0 eqs. 17, 21]
            X = np.eye(6)
            X[3:, :3] = skew(q[:3])
            C = np.vstack((C, X @ H[:6]))
            rhs = np.concatenate((rhs, h_target))
        v += metric_correction(H, C, C @ v - rhs, _RANK_RTOL)
        return q, v

    # ------------------------------------------------------------------------------------------
    # integration
    # ------------------------------------------------------------------------------------------

    def step(
        self,
        q: ArrayLike,
        v: ArrayLike,
        tau: ArrayLike,
        dt: float,
        *,
        base_wrench: ArrayLike | None = None,
        link_wrenches: Mapping[str, ArrayLike] | None = None,
        stabilize: bool = False,
        project: bool = True,
        conserve_momentum: bool = True,
        base_wrench_body: ArrayLike | None = None,
    ) -> tuple[np.ndarray, np.ndarray]:
        """One step of the package's RK4 scheme on the Lie group
        (:func:`ffsim_ros.dynamics.rk4_step`) with the closed-chain accelerations.

        Parameters
        ----------
        q, v : (nq,), (nv,) tree coordinates [m, -, rad | m], [m/s, rad/s, rad/s | m/s].
        tau : (n,) joint efforts [N m | N], held.
        dt : float, step [s].
        base_wrench, link_wrenches : as :meth:`dynamics`, held.
        base_wrench_body : (6,) optional, ``[f; n]`` at the base CoM in the base frame [N, N m]:
            it turns with the base (re-expressed at each RK4 stage, as ``D.step``'s).
        stabilize : bool
            Baumgarte's terms on the cut-hinge rows ([M Remark 4], gains ``alpha``, ``beta``)
            inside the step. Off by default: they act on RK4's stage states, which sit slightly
            off the manifold, and bend the trajectory (by 4e-9 in 1 s at 4 ms on the tumbling
            spatial loop of the tests, against 1e-11 for RK4 alone); the projection keeps the
            manifold instead. For runs without projection.
        project : bool
            After the step, project ``q`` and ``v`` back onto the constraint manifold
            (:meth:`project`: one or two Gauss-Newton iterations in the kinetic-energy metric,
            then the velocity projection onto the loop rows and the momentum the step must end
            with). Baumgarte alone leaves RK4's own error on the manifold (measured on the
            planar four-bar in gravity, 10 s at 4 ms: 8e-8; at 2 ms: 5e-9); with the
            projection it stays within its tolerance, 1e-13 (the compiled step, without link
            wrenches, spares the projection where the loops' position and velocity errors are
            already within it, and still corrects the momentum).
        conserve_momentum : bool
            With ``project``, a floating base and no external wrench: project onto the
            momentum ``[P; L_O]`` the step must end with (gravity's impulse added), as
            ``D.step(..., conserve_momentum=True)`` (default). False: the projection onto the
            loops alone (it leaves the momentum: loop impulses are internal), so the momentum
            keeps RK4's truncation error, as plain RK4 on a tree.

        Returns
        -------
        q_next, v_next : (nq,), (nv,) ndarray
        """
        model = self.model
        dt = positive_step(dt)
        q = as_q(model, q)
        v = as_v(model, v)
        check_finite(self._names(), q=q, v=v, tau=tau, base_wrench=base_wrench)
        check_step_rotation(model, v, dt, 'ClosedChain.step')
        body = BodyWrench.of(model, base_wrench_body, self._names())
        if self.method == 'aba' and not link_wrenches:  # the whole step compiled
            flags = (stabilize, project, conserve_momentum)
            Q, V = self._compiled_steps(q, v, tau, base_wrench, dt, 1, *flags, body)
            return Q[1], V[1]
        if self._split.stiff(q, dt):  # (as in _compiled_steps)
            kw = {'base_wrench': base_wrench, 'link_wrenches': link_wrenches}
            kw['base_wrench_body'] = base_wrench_body
            Q, V = self._split.run(q, v, dt, 1, tau, stabilize, project, conserve_momentum, **kw)
            return Q[1], V[1]
        if self.method == 'aba':  # the compiled solver, inputs converted once per step
            gen = generalized_force(
                model, checked_inputs(model, q, v, tau, base_wrench)[2], base_wrench
            )
            on = stabilize and bool(self.alpha or self.beta)
            gains = (self.alpha, self.beta) if on else (0.0, 0.0)
            kernel = self._kernel

            def acceleration(_t: float, qq: np.ndarray, vv: np.ndarray) -> np.ndarray:
                fext = (
                    body_wrenches(model, qq, link_wrenches) if link_wrenches else kernel.empty_fext
                )
                force = gen if body is None else body.turn(gen, qq)  # (at each stage)
                return kernel.accelerations(qq, vv, force, fext, *gains)

        else:

            def acceleration(_t: float, qq: np.ndarray, vv: np.ndarray) -> np.ndarray:
                return self.dynamics(
                    qq,
                    vv,
                    tau,
                    base_wrench=base_wrench if body is None else body.turn(base_wrench, qq),
                    link_wrenches=link_wrenches,
                    stabilize=stabilize,
                ).a

        q_next, v_next = rk4_step(model, q, v, dt, acceleration)
        if project:
            # the momentum the step must end with: internal loop forces and efforts leave it,
            # gravity adds its known impulse; other external wrenches: keep the step's own
            target = None
            if model.floating_base and base_wrench is None and not link_wrenches and body is None:
                target = momentum_after(model, q, v, dt)
            if conserve_momentum or target is None:
                q_next, v_next = self.project(q_next, v_next, momentum=target, start=q)
            else:  # the loops alone: the momentum the step reached is kept
                q_next, v_next = self.project(q_next, v_next, start=q)
        return q_next, v_next

    def _compiled_steps(
        self, q: np.ndarray, v: np.ndarray, tau: ArrayLike, base_wrench: ArrayLike | None,
        dt: float, k: int, stabilize: bool, project: bool, conserve: bool,
        body: BodyWrench | None = None,
    ) -> tuple[np.ndarray, np.ndarray]:  # fmt: skip
        """``k`` steps of :meth:`step` in one compiled call, ``tau``, ``base_wrench`` and
        ``body`` (turned at each stage) held; ``q``, ``v`` checked. Returns ``Q`` (k + 1, nq),
        ``V`` (k + 1, nv)."""
        model = self.model
        tau_c, bw = checked_inputs(model, q, v, tau, base_wrench)[2:]
        wb = None if body is None else body.wrench
        if self._split.stiff(q, dt):  # joint friction too stiff for dt: split (.chain_friction)
            kw = {'base_wrench': bw, 'base_wrench_body': wb}
            return self._split.run(q, v, dt, k, tau_c, stabilize, project, conserve, **kw)
        on = stabilize and bool(self.alpha or self.beta)
        gains = (self.alpha, self.beta) if on else (0.0, 0.0)
        conserve = project and conserve and model.floating_base and bw is None and wb is None
        gen = generalized_force(model, tau_c, bw)
        return self._kernel.steps(q, v, gen, dt, k, gains, (project, conserve, 1e-13, 10), wb)

    def simulate(
        self,
        q0: ArrayLike,
        v0: ArrayLike,
        tau: ArrayLike | Callable[[float, np.ndarray, np.ndarray], ArrayLike],
        t_final: float,
        dt: float,
        *,
        stabilize: bool = False,
        project: bool = True,
        conserve_momentum: bool = True,
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """RK4 trajectory of the closed chain (:meth:`step`).

        Parameters
        ----------
        q0, v0 : (nq,), (nv,) initial state on the manifold (units as :meth:`step`).
        tau : (n,) constant efforts or ``tau(t, q, v) -> (n,)``, held over each step.
        t_final, dt : float
            Duration and step [s]: ``k = round(t_final / dt)`` whole steps are taken (the run
            ends at ``k dt``, the multiple of ``dt`` nearest ``t_final``).
        stabilize, project, conserve_momentum : as :meth:`step` (Baumgarte; projection onto
            the manifold; and onto the momentum).

        Returns
        -------
        t : (k + 1,) [s];  q : (k + 1, nq);  v : (k + 1, nv)
        """
        dt = positive_step(dt)
        steps = step_count(t_final, dt)
        q, v = as_q(self.model, q0), as_v(self.model, v0)
        check_finite(self._names(), q0=q, v0=v, tau=tau)
        check_step_rotation(self.model, v, dt, 'ClosedChain.simulate')
        if self.method == 'aba' and not callable(tau):  # the whole run compiled
            flags = (stabilize, project, conserve_momentum)
            Q, V = self._compiled_steps(q, v, tau, None, dt, steps, *flags)
            return np.arange(steps + 1) * dt, Q, V
        Q = np.empty((steps + 1, q.size))
        V = np.empty((steps + 1, v.size))
        Q[0], V[0] = q, v
        for s in range(steps):
            t = s * dt
            eff = tau(t, q, v) if callable(tau) else tau
            q, v = self.step(
                q, v, eff, dt, stabilize=stabilize, project=project,
                conserve_momentum=conserve_momentum,
            )  # fmt: skip
            Q[s + 1], V[s + 1] = q, v
        return np.arange(steps + 1) * dt, Q, V


def _check_chain_method(method: str) -> None:
    if method not in CHAIN_METHODS:
        raise ValueError(f'method: expected one of {CHAIN_METHODS}, got {method!r}')


__all__ = [
    'BAUMGARTE_OMEGA',
    'CHAIN_METHODS',
    'DEFAULT_ALPHA',
    'DEFAULT_BETA',
    'LOOP_KINDS',
    'METHODS',
    'ClosedChain',
    'ClosedChainSolution',
    'LoopClosure',
]
