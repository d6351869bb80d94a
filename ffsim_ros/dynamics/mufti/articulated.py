"""The closed-chain system [M eq. 63] solved in the tree's coordinates at ABA cost (compiled).

``ClosedChain(..., method='aba')`` (the default) goes through :class:`LoopKernel`: one
articulated-body sweep for the tree's own accelerations, one more O(n) backward/forward pass
per independent cut-hinge row with the sweep's articulated inertias for ``M^-1 C^T``, and the
small Delassus system ``(C M^-1 C^T) lambda = gamma - C qdd_free``
(:mod:`ffsim_ros.dynamics.kernels.constrained`; ``M`` the tree's mass matrix and ``C`` the
cut-hinge rows on its velocities, not Mufti's ``M = diag(m_i E_3)`` [M eq. 4] and incidence
matrix ``C`` [M eq. 1]: docs/equations.md, "Code names that differ from the seeds'"). The
rows, their Baumgarte terms [M Remark 4] and the per-hinge reduction of redundant rows
[M Appendix case 2] are those of :mod:`.closed`; the maximal-coordinate solvers (``'kkt'``,
``'nullspace'``, ``'multipliers'``) stay as the references it is checked against.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from ..algorithms import body_wrenches, mass_matrix, momentum
from ..inputs import ArrayLike, generalized_force, is_ready, plain_vectors
from ..integration import integrate, momentum_after
from ..kernels.closed_step import e_closed_chain_steps, e_loop_projection
from ..kernels.constrained import REFUSED, e_closed_chain, e_transmitted_wrenches
from ..kernels.cut_hinges import LOOP_BALL, LOOP_REVOLUTE, LOOP_WELD
from ..lie import cross
from ..model import Model
from .closing import ClosingRows, close_after_step
from .tree import Bodies, Rows, actuation, effective_efforts, joint_frames

KIND_CODES = {'ball': LOOP_BALL, 'revolute': LOOP_REVOLUTE, 'weld': LOOP_WELD}


def _refused() -> RuntimeError:
    """The error of the closed-chain kernel refusing vectors converted for it (they have the
    model's sizes and layout, so it never does)."""
    return RuntimeError('internal error: the closed-chain kernel refused converted vectors')


class LoopKernel:
    """The cut hinges of a :class:`~.closed.ClosedChain` packed for the compiled solver.

    Parameters
    ----------
    model : Model
    loops : sequence of :class:`~.closed.LoopClosure`
    rtol : float
        Rank threshold of a hinge's singular values (relative to its largest and to the
        bound from its rows and path, :mod:`.loop_rank`).
    closing_rows : callable
        The chain's loop rows for the nearest closed configuration near a loop singularity
        (:data:`.closing.ClosingRows`).
    """

    def __init__(
        self, model: Model, loops: Sequence, rtol: float, closing_rows: ClosingRows
    ) -> None:
        nl = len(loops)
        self.model = model
        self.loops = tuple(loops)
        self.rtol = float(rtol)
        self.closing_rows = closing_rows
        self.loop_i = np.zeros((nl, 3), dtype=np.int64)
        self.loop_f = np.zeros((nl, 24))
        for k, lp in enumerate(loops):
            fa, fb = model.frame(lp.link_a), model.frame(lp.link_b)
            self.loop_i[k] = (fa.body, fb.body, KIND_CODES[lp.kind])
            for side, (fr, rot, tr) in enumerate(
                ((fa, lp.rotation_a, lp.translation_a), (fb, lp.rotation_b, lp.translation_b))
            ):
                o = 12 * side
                self.loop_f[k, o : o + 9] = (fr.rotation @ rot).ravel()
                self.loop_f[k, o + 9 : o + 12] = fr.translation + fr.rotation @ tr
        self.n_rows = sum(lp.rows for lp in loops)
        self.empty_fext = np.empty((0, 6))
        self._lam = np.empty(self.n_rows)  # multipliers of the fast paths: written, never read
        #: The cut hinges, for error messages.
        self.names = 'loop closure ' + ', '.join(repr(lp.name) for lp in loops)
        self._entries: dict[object, object] = {}

    def _failure(self, cause: Exception | None = None) -> np.linalg.LinAlgError:
        """The error of a failed solve: the kernel's own exception ``cause``, or (None)
        non-finite accelerations."""
        what = 'gave non-finite accelerations' if cause is None else f'failed ({cause})'
        return np.linalg.LinAlgError(
            f'{self.names}: the closed-chain system {what}: a singular configuration or a '
            'non-finite state'
        )

    def _call(self, kernel: object, *args: object) -> object:
        """``kernel(*args)``, ``args`` the packed model then the kernel's own; after the
        first call through the compiled entry point itself (numba's argument typing skipped:
        the arguments keep their types call after call). The first call types the kernel's
        own read-only arrays (an engine's frozen state) as writeable copies, so that one
        specialization serves every caller, the warm-up's included, whatever the flags of its
        inputs (the kernels write only into their output arrays, which are writeable); the
        packed model, read-only always, is typed as it is, as the per-call entry points
        (:class:`~ffsim_ros.dynamics.direct.DirectEntry`) type it: the model's passes are
        then compiled once for both (as writeable copies they were compiled a second time,
        the kinematics, the integration and the momentum correction among them)."""
        entry = self._entries.get(kernel)
        try:
            if entry is not None:
                return entry(*args)  # type: ignore[operator]
            args = args[:2] + tuple(
                np.array(a) if isinstance(a, np.ndarray) and not a.flags.writeable else a
                for a in args[2:]
            )
            out = kernel(*args)  # type: ignore[operator]
        except (ValueError, ZeroDivisionError) as exc:  # the kernels' own failures
            raise self._failure(exc) from exc
        try:
            sig = tuple(kernel.typeof_pyval(a) for a in args)  # type: ignore[attr-defined]
            self._entries[kernel] = kernel.overloads[sig].entry_point  # type: ignore[attr-defined]
        except (AttributeError, KeyError):  # numba absent: the Python kernel
            self._entries[kernel] = kernel
        return out

    def accelerations(
        self,
        q: np.ndarray,
        v: np.ndarray,
        gen: np.ndarray,
        fext: np.ndarray,
        alpha: float,
        beta: float,
    ) -> np.ndarray:
        """The accelerations alone (the integrator's fast path): ``gen`` (nv,) the generalized
        force, ``fext`` (nb, 6) or (0, 6) body wrenches at O, as :meth:`solve` makes them.

        Parameters
        ----------
        q : (nq,) ndarray
            Configuration [m, -, rad | m].
        v : (nv,) ndarray
            Velocity ``[V0, w0, phidot]``, base parts in the inertial frame
            [m/s, rad/s, rad/s | m/s].
        gen : (nv,) ndarray
            Generalized force ``[F_b; tau]``, ``F_b`` at the base CoM, inertial frame
            [N, N m | N m | N].
        fext : (nb, 6) or (0, 6) ndarray
            Body wrenches ``[f; n_O]``, moment about the inertial origin O, inertial frame
            [N, N m] (:func:`~..algorithms.body_wrenches`); (0, 6): none.
        alpha, beta : float
            Baumgarte gains [1/s, 1/s^2] (zero: the plain ``xi'' = 0``).

        Returns
        -------
        (nv,) ndarray
            Accelerations [m/s^2, rad/s^2, rad/s^2 | m/s^2].
        """
        a = np.empty(self.model.nv)
        rank = self._call(
            e_closed_chain,
            *self.model.packed,
            q,
            v,
            gen,
            fext,
            self.model.joint_dynamics,
            self.loop_i,
            self.loop_f,
            alpha,
            beta,
            self.rtol,
            a,
            self._lam,
            self.empty_fext,
        )
        if rank < 0:
            raise self._failure() if rank != REFUSED else _refused()
        return a

    def fast_accelerations(
        self, q: object, v: object, tau: object, alpha: float, beta: float
    ) -> np.ndarray | None:
        """:meth:`accelerations` of joint efforts alone when ``q``, ``v``, ``tau`` can go to
        the kernel as they are (float64, contiguous, the model's sizes); None otherwise.

        Parameters
        ----------
        q, v : ndarray
            As :meth:`accelerations`, (nq,) and (nv,), unchecked.
        tau : ndarray
            (n,) joint efforts [N m | N], unchecked.
        alpha, beta : float
            Baumgarte gains [1/s, 1/s^2].

        Returns
        -------
        (nv,) ndarray or None
            As :meth:`accelerations`.
        """
        if not plain_vectors(q, v, tau):  # (sizes and strides: checked by the kernel)
            return None
        entry = self._entries.get(e_closed_chain)
        nv = self.model.nv
        if entry is None:  # first call: typed and compiled by accelerations
            shape_q, shape_v, shape_tau = self.model.shapes
            if not (is_ready(q, shape_q) and is_ready(v, shape_v) and is_ready(tau, shape_tau)):
                return None  # (a first call of another layout would compile another type)
            gen = np.zeros(nv)
            gen[nv - tau.size :] = tau  # type: ignore[attr-defined]
            return self.accelerations(q, v, gen, self.empty_fext, alpha, beta)  # type: ignore[arg-type]
        a = np.empty(nv)
        idata, fdata = self.model.packed
        empty = self.empty_fext
        try:
            rank = entry(  # type: ignore[operator]
                idata,
                fdata,
                q,
                v,
                tau,  # the joint efforts alone: the kernel takes F_b zero
                empty,
                self.model.joint_dynamics,
                self.loop_i,
                self.loop_f,
                alpha,
                beta,
                self.rtol,
                a,
                self._lam,
                empty,
            )
        except (ValueError, ZeroDivisionError) as exc:  # the kernel's own failures
            raise self._failure(exc) from exc
        if rank == REFUSED:  # a size or a stride not its own: the converting path
            return None
        if rank < 0:
            raise self._failure()
        return a

    def steps(
        self,
        q: np.ndarray,
        v: np.ndarray,
        gen: np.ndarray,
        dt: float,
        k: int,
        gains: tuple[float, float],
        settings: tuple[bool, bool, float, int],
        wrench_body: np.ndarray | None = None,
    ) -> tuple[np.ndarray, np.ndarray]:
        """``k`` compiled RK4 steps with the projection, the efforts held
        (:func:`~ffsim_ros.dynamics.kernels.closed_step.e_closed_chain_steps`).

        Parameters
        ----------
        q : (nq,) ndarray
            Checked initial configuration [m, -, rad | m].
        v : (nv,) ndarray
            Velocity ``[V0, w0, phidot]``, base parts in the inertial frame
            [m/s, rad/s, rad/s | m/s].
        gen : (nv,) ndarray
            Generalized force ``[F_b; tau]``, held, ``F_b`` at the base CoM, inertial frame
            [N, N m | N m | N].
        dt : float
            Step [s].
        k : int
            Number of steps.
        gains : (float, float)
            ``(alpha, beta)`` Baumgarte gains in the stages [1/s, 1/s^2].
        settings : (bool, bool, float, int)
            ``(project, conserve, tol, max_iter)``: project onto the manifold after each
            step, correct the momentum to its gravity-only value, the projection's tolerance
            [m, rad] and iteration limit.
        wrench_body : (6,) ndarray, optional
            ``[f; n]`` at the base CoM in the base frame [N, N m], held in that frame: added
            to ``gen`` turned by the base attitude of each RK4 stage (a thruster's wrench).

        Returns
        -------
        Q : (k + 1, nq) ndarray
        V : (k + 1, nv) ndarray
            The trajectory, row 0 the initial state.

        Raises
        ------
        numpy.linalg.LinAlgError
            Non-finite accelerations; RuntimeError: a projection without convergence (both
            naming the step when ``k > 1``).
        """
        Q = np.full((k + 1, q.size), np.nan)  # (rows not reached stay NaN: see below)
        V = np.empty((k + 1, v.size))
        Q[0], V[0] = q, v
        first = 0
        body = np.empty(0) if wrench_body is None else np.array(wrench_body, dtype=float)
        while True:  # compiled runs, a step closed onto a loop singularity redone between
            status, done = self._compiled_run(
                Q[first:], V[first:], gen, dt, k, gains, settings, body
            )
            done += first
            at = f' (step {done + 1} of {k}, t = {done * dt:.6g} s)' if k > 1 else ''
            if status == 1:
                raise np.linalg.LinAlgError(
                    f'{self.names}: the closed-chain system gave non-finite accelerations (a '
                    f'singular configuration or a non-finite state){at}'
                )
            if status == 0:
                return Q, V
            # 2, 3: the step's end before its projection in row done + 1
            s = done
            target = momentum_after(self.model, Q[s], V[s], dt) if settings[1] else None
            try:
                Q[s + 1], V[s + 1] = self.project(
                    Q[s + 1], V[s + 1], target, settings[2], int(settings[3]), start=Q[s]
                )
            except RuntimeError as exc:
                raise RuntimeError(f'{exc} after the step{at}') from None
            first = s + 1
            if first == k:
                return Q, V

    def _compiled_run(
        self,
        Q: np.ndarray,
        V: np.ndarray,
        gen: np.ndarray,
        dt: float,
        k: int,
        gains: tuple[float, float],
        settings: tuple[bool, bool, float, int],
        wrench_body: np.ndarray,
    ) -> tuple[int, int]:
        """:func:`~ffsim_ros.dynamics.kernels.closed_step.e_closed_chain_steps` from ``Q[0]``,
        ``V[0]`` over the rows of ``Q``, ``V`` (views of :meth:`steps`' arrays, ``k`` the
        run's step count for messages; ``wrench_body`` (6,) or (0,)). Returns its
        ``(status, done)``."""
        try:
            return self._call(
                e_closed_chain_steps,
                *self.model.packed,
                gen,
                self.model.joint_dynamics,
                self.loop_i,
                self.loop_f,
                np.array((gains[0], gains[1], self.rtol)),
                self.n_rows,
                float(dt),
                np.array(settings, dtype=float),
                Q,
                V,
                wrench_body,
            )  # type: ignore[return-value]
        except np.linalg.LinAlgError as exc:  # a kernel's own failure in a step
            done = int(np.argmax(~np.isfinite(Q).all(axis=1))) - 1  # the last finite row
            done += k + 1 - Q.shape[0]
            at = f' (step {done + 1} of {k}, t = {done * dt:.6g} s)' if k > 1 else ''
            raise np.linalg.LinAlgError(
                f'{exc.__cause__ or exc} in {self.names}: a singular configuration, or a '
                f'state that diverged{at}'
            ) from exc

    def projection(self, q: np.ndarray, v: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
        """Kinetic-energy-metric corrections toward the manifold at ``(q, v)``.

        Parameters
        ----------
        q : (nq,) ndarray
            Configuration [m, -, rad | m].
        v : (nv,) ndarray
            Velocity ``[V0, w0, phidot]``, base parts in the inertial frame
            [m/s, rad/s, rad/s | m/s].

        Returns
        -------
        err : float
            ``max |xi|`` at ``q`` [m, rad].
        dq : (nv,) ndarray
            The position step ``-M^-1 C^T (C M^-1 C^T)^+ xi`` [m, rad, rad | m].
        dv : (nv,) ndarray
            The velocity change ``-M^-1 C^T (C M^-1 C^T)^+ C v`` (independent loop rows)
            [m/s, rad/s, rad/s | m/s].
        """
        nv = self.model.nv
        dq, dv = np.empty(nv), np.empty(nv)
        err = self._call(
            e_loop_projection,
            *self.model.packed,
            q,
            v,
            self.loop_i,
            self.loop_f,
            self.n_rows,
            self.rtol,
            dq,
            dv,
        )
        return float(err), dq, dv  # type: ignore[arg-type]

    def solve(
        self,
        q: np.ndarray,
        v: np.ndarray,
        tau: np.ndarray,
        alpha: float,
        beta: float,
        base_wrench: np.ndarray | None = None,
        link_wrenches: Mapping[str, ArrayLike] | None = None,
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, int, np.ndarray]:
        """Accelerations and loop multipliers of the closed chain.

        Parameters
        ----------
        q : (nq,) ndarray
            Checked configuration [m, -, rad | m].
        v : (nv,) ndarray
            Velocity ``[V0, w0, phidot]``, base parts in the inertial frame
            [m/s, rad/s, rad/s | m/s].
        tau : (n,) ndarray
            Joint efforts [N m | N].
        alpha, beta : float
            Baumgarte gains [1/s, 1/s^2] (zero: the plain ``xi'' = 0``).
        base_wrench : (6,) ndarray, optional
            ``[F; T]`` at the base CoM, inertial frame [N, N m].
        link_wrenches : dict, optional
            ``{link: (6,) [f; n]}`` at the link frames' origins, inertial frame [N, N m].

        Returns
        -------
        a : (nv,) ndarray
            Accelerations [m/s^2, rad/s^2, rad/s^2 | m/s^2].
        lam : (n_rows,) ndarray
            Multipliers per cut-hinge row [N | N m].
        acc : (nb, 6) ndarray
            Body spatial accelerations at O minus ``[g; 0]``, inertial frame [m/s^2, rad/s^2].
        rank : int
            The number of independent loop rows.
        fext : (nb, 6) or (0, 6) ndarray
            The link wrenches ``[f; n_O]`` at O, inertial frame [N, N m].
        """
        model = self.model
        gen = generalized_force(model, tau, base_wrench)
        fext = body_wrenches(model, q, link_wrenches) if link_wrenches else self.empty_fext
        a = np.empty(model.nv)
        lam = np.empty(self.n_rows)
        acc = np.empty((model.arrays.parent.shape[0], 6))
        rank = self._call(
            e_closed_chain,
            *model.packed,
            q,
            v,
            gen,
            fext,
            model.joint_dynamics,
            self.loop_i,
            self.loop_f,
            float(alpha),
            float(beta),
            self.rtol,
            a,
            lam,
            acc,
        )
        if rank == REFUSED:
            raise _refused()
        return a, lam, acc, int(rank), fext

    def project(
        self,
        q: np.ndarray,
        v: np.ndarray,
        h_target: np.ndarray | None,
        tol: float,
        max_iter: int,
        start: np.ndarray | None = None,
    ) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`~.closed.ClosedChain.project` through the compiled solver: the same
        Gauss-Newton steps and velocity projection, ``M^-1 C^T`` and ``C M^-1 C^T`` from the
        articulated-body passes; with ``start`` (the configuration of the step's start) the
        nearest closed configuration where Gauss-Newton took most of the step back or did not
        converge (:mod:`.closing`). The loop rows have no base columns (the base is an
        ancestor of both sides), so the momentum rows decouple in the kinetic-energy metric:
        the loop correction leaves the momentum, and the momentum correction
        (``-H0^-1 (H[:6] v - X^-1 h)`` with ``H[:6]`` the base rows ``[H0, H0m]`` of the mass
        matrix, not the ``H_b`` of [S0 eq. 27]; the base velocity only) leaves the loop rows.

        Parameters
        ----------
        q : (nq,) ndarray
            Configuration [m, -, rad | m].
        v : (nv,) ndarray
            Velocity ``[V0, w0, phidot]``, base parts in the inertial frame
            [m/s, rad/s, rad/s | m/s].
        h_target : (6,) ndarray or None
            Momentum ``[P; L]`` to restore, ``L`` about the inertial origin, inertial frame
            [kg m/s, kg m^2/s] (:func:`~..algorithms.momentum`); None: the momentum is left.
        tol : float
            Largest loop error ``max |xi|`` accepted [m, rad].
        max_iter : int
            Gauss-Newton iteration limit (RuntimeError beyond it).
        start : (nq,) ndarray, optional
            The configuration the step started from.

        Returns
        -------
        q : (nq,) ndarray
        v : (nv,) ndarray
            The projected state (same conventions).
        """
        model = self.model
        last: list = []  # the closed iterate and its velocity correction

        def gauss_newton(q: np.ndarray) -> tuple[np.ndarray, float, bool]:
            err = np.inf
            for _ in range(max_iter + 1):
                err, dq, dv = self.projection(q, v)
                if not np.isfinite(err):
                    raise ValueError(f'project: {self.names}: non-finite state')
                if err <= tol:
                    last.extend((q, dv))
                    return q, err, True
                q = integrate(model, q, dq)
            return q, err, False

        settings = (tol, max_iter, self.rtol)
        q = close_after_step(
            model, gauss_newton, self.closing_rows, q, start, settings, self.names
        )
        v = v + (last[1] if last and last[0] is q else self.projection(q, v)[2])
        if h_target is not None:
            dh = momentum(model, q, v) - h_target  # X H[:6] v - h, X = [[E, 0], [r0~, E]]
            dh[3:] -= cross(q[:3], dh[:3])  # X^-1
            v[:6] -= np.linalg.solve(mass_matrix(model, q)[:6, :6], dh)
        return q, v

    def recover(
        self,
        q: np.ndarray,
        bd: Bodies,
        rows: Rows,
        ob: np.ndarray,
        tau: np.ndarray,
        lam: np.ndarray,
        acc: np.ndarray,
        fext: np.ndarray,
    ) -> tuple[np.ndarray, dict, dict, np.ndarray, np.ndarray]:
        """The other fields of a :class:`~.closed.ClosedChainSolution` from :meth:`solve`.

        Parameters
        ----------
        q : (nq,) ndarray
            Configuration [m, -, rad | m].
        bd : Bodies
            At the state.
        rows : Rows
            The maximal cut-hinge rows (:meth:`~.closed.ClosedChain.loop_rows`).
        ob : (n_loops, 3) ndarray
            Hinge points ``o_b`` on body b, inertial frame [m] (same method).
        tau : (n,) ndarray
            Joint efforts [N m | N].
        lam : (n_rows,) ndarray
            Multipliers per cut-hinge row from :meth:`solve`, rows along the axes of hinge
            frame a [N for translational rows, N m for rotational ones].
        acc : (nb, 6) ndarray
            Body spatial accelerations at O minus ``[g; 0]`` from :meth:`solve`, inertial
            frame [m/s^2, rad/s^2].
        fext : (nb, 6) or (0, 6) ndarray
            Link wrenches ``[f; n_O]`` about the inertial origin O from :meth:`solve`, inertial
            frame [N, N m].

        Returns
        -------
        X : (nb, 6) ndarray
            ``[r''_i; w'_i]`` body CoM and angular accelerations, inertial frame
            [m/s^2, rad/s^2].
        multipliers, loop_wrenches : dict
            By cut hinge.
        hinge_forces, constraint_torques : (n, 3) ndarray
            A backward sum of each subtree's Newton-Euler residual, minus the actuation
            [N, N m].
        """
        model = self.model
        nb = model.arrays.parent.shape[0]
        A = acc.copy()
        A[:, :3] += model.gravity  # spatial accelerations at O
        X = np.concatenate(
            (A[:, :3] + cross(A[:, 3:], bd.c) + cross(bd.w, bd.rdot), A[:, 3:]), axis=1
        )
        loads = np.zeros((nb, 6))
        if fext.shape[0]:
            loads += fext
        mult, wrenches = {}, {}
        r0 = 0
        for i, lp in enumerate(self.loops):
            sl = slice(r0, r0 + lp.rows)
            lk = lam[sl].copy()
            for G, body in ((rows.Ga[sl], rows.a[r0]), (rows.Gb[sl], rows.b[r0])):
                about_c = G.T @ lk  # on the body, moment about its CoM
                loads[body, :3] += about_c[:3]
                loads[body, 3:] += about_c[3:] + cross(bd.c[body], about_c[:3])
                if body == rows.b[r0]:
                    F = about_c[:3]
                    wrenches[lp.name] = np.r_[F, about_c[3:] - cross(ob[i] - bd.c[body], F)]
            mult[lp.name] = lk
            r0 += lp.rows
        n = nb - 1
        f = np.zeros((n, 3))
        g = np.zeros((n, 3))
        if n:
            F = self.transmitted_wrenches(q, bd.v, acc, loads)[1:]
            force, torque = actuation(model, bd, effective_efforts(model, bd.v, tau))
            o, _ = joint_frames(model, bd)
            f = force - F[:, :3]
            g = torque - (F[:, 3:] - cross(o, F[:, :3]))
        return X, mult, wrenches, f, g

    def transmitted_wrenches(
        self, q: np.ndarray, v: np.ndarray, acc: np.ndarray, loads: np.ndarray
    ) -> np.ndarray:
        """(nb, 6) ``[f; n_O]``: the wrench each body's parent exerts on it through its joint
        (constraint and actuation), given the accelerations ``acc`` of :meth:`solve` and the
        other loads ``loads`` (nb, 6) at O (link and loop wrenches).

        Parameters
        ----------
        q : (nq,) ndarray
            Configuration [m, -, rad | m].
        v : (nv,) ndarray
            Velocity ``[V0, w0, phidot]``, base parts in the inertial frame
            [m/s, rad/s, rad/s | m/s].
        acc : (nb, 6) ndarray
            Body spatial accelerations at O minus ``[g; 0]`` (as :meth:`solve` returns them),
            inertial frame [m/s^2, rad/s^2].
        loads : (nb, 6) ndarray
            Other wrenches ``[f; n_O]`` on each body, moment about the inertial origin O,
            inertial frame [N, N m].

        Returns
        -------
        (nb, 6) ndarray
            ``[f; n_O]`` exerted on each body through its joint (row 0: the root joint),
            moment about O, inertial frame [N, N m].
        """
        return e_transmitted_wrenches(*self.model.packed, q, v, acc, loads)


__all__ = ['KIND_CODES', 'LoopKernel']
