"""Joint paths that spend the attitude budget on purpose: direct collocation (no ROS).

At a fold of the reaction null space (see :mod:`~ffsim_ros.control.rns`) the goal is often on
another leaf than the arm: no reactionless path reaches it, and greedy rollouts (the detours of
:class:`~.planner.RnsPlanner`, the Lie-bracket loops of :class:`~.loops.LoopPlanner`) find no
way across. :class:`PathPlanner` optimizes the whole joint path instead: waypoints
``q_1 .. q_N`` (``q_0`` the start) along which the base attitude, integrated with the
zero-momentum kinematics ``w0 = -A phidot`` (``A`` the angular rows of ``H0^-1 H0m``,
[S0 eq. 21]), stays within a share of the attitude budget at every waypoint, ends within a share
of the attitude tolerance, and the end effector ends on the goal -- the path spends attitude on
one stretch and gives it back on another, which moves the arm to the goal's leaf. Measured on
the 15 goals of the servicer that the tree and loop searches aborted (issue 15), such paths
exist for all of them, 4-24 s long at the speed limits, smooth arcs of 3-18 rad of joint travel
in all.

The problem (direct collocation, the attitude by shooting):

* variables: the waypoints of the joints the law moves (``law.active``), within their position
  limits less ``LIMIT_MARGIN`` (or where the arm stands, if it is closer);
* attitude: ``phi_0 = log(R_ref^T R_0)``; ``phi_{k+1} = phi_k (+) delta_k`` (BCH to second
  order), ``delta_k = -A(q_mid) (q_{k+1} - q_k)`` in the base frame, ``q_mid`` the segment's
  midpoint; gradients analytic, with ``dA/dq`` by finite differences in one batched
  mass-matrix call;
* constraints: ``|phi_k| <= b`` (k = 1..N), ``|phi_N| <= b_f``, the end effector at the goal
  (``c + R_ref exp(phi_N) p(q_N)``: the centre of mass ``c`` does not move under zero momentum,
  ``p`` the end effector from the centre of mass with the base at identity);
* objective: ``N sum |W (q_{k+1} - q_k)|^2``, ``W`` the inverse speed limits (an even pace and a
  short path).

SLSQP (scipy) solves it from a straight line to the nearest inverse-kinematics solution at the
start's attitude, 20 waypoints first, then 40 from that solution (``SCHEDULE``), from up to
``SEEDS`` inverse-kinematics seeds. A solution is accepted after a fine check of the attitude
(``CHECK_SUBSTEPS`` midpoint steps per segment, exact on SO(3)): at most ``CHECK_MAX`` of the
budget on the way, ``CHECK_FINAL`` of the tolerance at the end. Between the waypoints and
through the second-order composition the base turns up to half again what the waypoints say
(0.19-0.22 deg measured at 40 waypoints held at 0.144 deg); a solution the check refuses is
solved again (``CORRECTIONS``) with what the check found held as corrections
(:meth:`PathProblem.correct`).

The search is resumable as the other planners: SLSQP runs in a worker thread that is handed
a budget of problem evaluations at each :meth:`PathPlanner.advance` and waits for the next
one; the caller's thread waits while it runs, so a search is deterministic and its cost per
update bounded (an evaluation: ``(m + 1) N`` mass matrices, ``m`` moving joints; about 2 ms on
the servicer at ``N`` = 40), apart from the solver's own quadratic subproblem between
evaluations (a few ms at 280 variables).
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable

import numpy as np
from scipy.optimize import least_squares, minimize

import ffsim_ros.dynamics as D
from ffsim_ros.dynamics.lie import bch2, cross, matrix_exp, matrix_log, quat_to_matrix, skew

from .planner import Approach, Plan, Segment
from .reactionless import ReactionlessController
from .rns import speed_limits

#: Waypoints, then bound on the attitude on the way and at the end (shares of the attitude
#: budget and tolerance), of the successive solves from one seed (each from the last).
SCHEDULE = ((20, 0.80, 0.60), (40, 0.80, 0.60))
#: Then up to this many solves at the last size, each corrected by the fine check of the last
#: solution (:meth:`PathProblem.correct`).
CORRECTIONS = 3
#: Inverse-kinematics seeds tried (the first: the start itself; then random draws).
SEEDS = 3
#: Accepted when the fine check stays within these shares of the budget and the tolerance.
CHECK_MAX = 0.85
CHECK_FINAL = 0.75
CHECK_SUBSTEPS = 8
#: Waypoints kept this far inside the position limits [rad | m] (at most a tenth of a joint's
#: range).
LIMIT_MARGIN = 0.1
#: Pace of the path: this share of the joint speed limits; the shortest segment [s].
PATH_SPEED = 0.8
MIN_SEGMENT_TIME = 0.02
#: SLSQP iterations per solve; finite-difference step of ``dA/dq``.
MAX_ITERATIONS = 300
FD_STEP = 1e-6
#: One problem evaluation (or as much work: a stretch of the fine check) counts as this many
#: rollout steps of the step budgets.
EVALUATION_STEPS = 20
#: Residuals of the inverse kinematics (a forward kinematics each, ~40 us on the servicer)
#: counted as one evaluation (~1.6 ms at 20 waypoints).
IK_CALLS_PER_TICK = 16
#: Scale of the end-effector constraint (cm).
POSITION_SCALE = 100.0


class PathProblem:
    """The collocation problem of one (start, goal) pair (module docstring).

    Parameters
    ----------
    law : ReactionlessController
        Supplies the model, the end-effector link and the joints that move.
    q : (nq,) start configuration, base inertial [m, -, rad | m] (one-DoF joints).
    goal : (3,) end-effector goal, inertial [m].
    reference : (4,) attitude held, quaternion (x, y, z, w), inertial [-].
    """

    def __init__(
        self,
        law: ReactionlessController,
        q: np.ndarray,
        goal: np.ndarray,
        reference: np.ndarray,
    ) -> None:
        model = law.model
        self.model, self.link = model, law.ee_link
        self.q0 = np.asarray(q, dtype=float)[7:].copy()
        self.free = np.flatnonzero(np.asarray(law.active) > 0)
        self.m = len(self.free)
        self.R_ref = quat_to_matrix(reference)
        self.phi0 = matrix_log(self.R_ref.T @ quat_to_matrix(q[3:7]))
        self.R0 = self.R_ref @ matrix_exp(self.phi0)
        self.c0 = D.center_of_mass(model, q)
        self.goal = np.asarray(goal, dtype=float).copy()
        lo, hi = np.asarray(model.lower, float), np.asarray(model.upper, float)
        margin = np.minimum(LIMIT_MARGIN, 0.1 * np.where(np.isfinite(hi - lo), hi - lo, np.inf))
        f = self.free
        self.lo = np.minimum(lo[f] + margin[f], self.q0[f])
        self.hi = np.maximum(hi[f] - margin[f], self.q0[f])
        vmax = speed_limits(model.velocity_limit)[f]
        finite = vmax[np.isfinite(vmax)]  # a joint without a limit weighs as one of 1 rad/s,
        slow = max(1.0, float(finite.min())) if finite.size else 1.0  # or the slowest's
        self.W = 1.0 / np.where(np.isfinite(vmax), vmax, slow)
        self.base = np.zeros(7)
        self.base[6] = 1.0
        self.tick: Callable[[], None] = lambda: None
        self.set_size(20, 0.1, 0.1)

    def set_size(self, n: int, bound: float, final: float) -> None:
        """``n`` waypoints, the attitude within ``bound`` on the way and ``final`` at the end
        [rad]."""
        self.N, self.b, self.bf = int(n), float(bound), float(final)
        self._x: np.ndarray | None = None
        self.shift = np.zeros((self.N + 1, 3))  # added to the shooting's attitude [rad]
        self.bounds = np.full(self.N, self.b)  # on the waypoints' attitude [rad]
        self.fine = (np.zeros(0), np.zeros((0, 3)))  # the last check's angles and attitudes

    # -------------------------------------------------------------------------- kinematics
    def full(self, joints: np.ndarray) -> np.ndarray:
        """Configurations (k, nq) with the base at identity and ``joints`` (k, m) moved."""
        joints = np.atleast_2d(joints)
        Q = np.tile(np.concatenate((self.base, self.q0)), (len(joints), 1))
        Q[:, 7 + self.free] = joints
        return Q

    def A(self, joints: np.ndarray) -> np.ndarray:
        """``A`` (k, 3, m) of the moving joints, base frame [rad/s per rad/s | per m/s]."""
        # one configuration per call: the batched kernel's threads stall on a loaded machine
        # (320 configurations: 1.5 ms this way, 180 ms batched at a load of 14 on 2 cores)
        H = np.array([D.mass_matrix(self.model, q) for q in self.full(joints)])
        B = np.linalg.solve(H[:, :6, :6], H[:, :6, 6:])
        return B[:, 3:6, :][:, :, self.free]

    def ee_rel(self, joints: np.ndarray) -> np.ndarray:
        """End effector from the centre of mass, base at identity (3,) [m]."""
        q = self.full(joints)[0]
        return D.link_pose(self.model, q, self.link)[0] - D.center_of_mass(self.model, q)

    def path(self, x: np.ndarray) -> np.ndarray:
        """Waypoints (N + 1, m) from the variables (N m,)."""
        return np.vstack([self.q0[self.free], x.reshape(self.N, self.m)])

    # -------------------------------------------------------------------------- evaluation
    def _eval(self, x: np.ndarray) -> None:
        if self._x is not None and np.array_equal(x, self._x):
            return
        self.tick()
        P, N, m = self.path(x), self.N, self.m
        dq = np.diff(P, axis=0)
        pts = np.repeat((0.5 * (P[1:] + P[:-1]))[:, None, :], m + 1, axis=1)
        pts[:, 1:, :] += FD_STEP * np.eye(m)
        A = self.A(pts.reshape(-1, m)).reshape(N, m + 1, 3, m)
        A0 = A[:, 0]
        dA = (A[:, 1:] - A0[:, None]) / FD_STEP  # (N, m, 3, m): dA / d q_mid,i
        dAdq = np.swapaxes((dA @ dq[:, None, :, None])[..., 0], 1, 2)  # (N, 3, m)
        delta = -(A0 @ dq[:, :, None])[..., 0]
        J_next, J_prev = -A0 - 0.5 * dAdq, A0 - 0.5 * dAdq
        phi = np.zeros((N + 1, 3))
        phi[0] = self.phi0
        G = np.zeros((N + 1, 3, m * N))  # d phi_k / d x
        for k in range(N):  # (I + a~) J = J + a x J, column by column
            phi[k + 1] = bch2(phi[k], delta[k])
            G[k + 1] = G[k] - 0.5 * cross(delta[k], G[k].T).T
            for j, Jk in ((k - 1, J_prev[k]), (k, J_next[k])):
                if j >= 0:
                    G[k + 1][:, m * j : m * (j + 1)] += Jk + 0.5 * cross(phi[k], Jk.T).T
        self.phi, self.G, self._x = phi, G, x.copy()

    def objective(self, x: np.ndarray) -> float:
        """``N sum |W dq|^2`` of the variables ``x`` (N m,) [-]."""
        dq = np.diff(self.path(x), axis=0) * self.W
        return float(self.N * np.sum(dq**2))

    def objective_gradient(self, x: np.ndarray) -> np.ndarray:
        """Gradient (N m,) of :meth:`objective`."""
        dq = np.diff(self.path(x), axis=0) * self.W**2
        g = np.zeros((self.N + 1, self.m))
        g[1:] += dq
        g[:-1] -= dq
        return 2.0 * self.N * g[1:].ravel()

    def inequalities(self, x: np.ndarray) -> np.ndarray:
        """``1 - |psi_k|^2 / b_k^2`` (k = 1..N), then ``1 - |psi_N|^2 / b_f^2``: (N + 1,) >= 0,
        ``psi = phi + shift`` (:meth:`correct`; ``b_k = b`` before a correction)."""
        self._eval(x)
        psi = self.phi + self.shift
        c = 1.0 - np.sum(psi[1:] ** 2, axis=1) / self.bounds**2
        return np.append(c, 1.0 - np.sum(psi[-1] ** 2) / self.bf**2)

    def inequalities_jacobian(self, x: np.ndarray) -> np.ndarray:
        """Jacobian (N + 1, N m) of :meth:`inequalities`."""
        self._eval(x)
        psi = self.phi + self.shift
        J = -2.0 / self.bounds[:, None] ** 2 * (psi[1:, None, :] @ self.G[1:])[:, 0, :]
        return np.vstack([J, -2.0 / self.bf**2 * psi[-1] @ self.G[-1]])

    def end_effector(self, x: np.ndarray) -> np.ndarray:
        """End effector at the last waypoint, inertial (3,) [m]."""
        self._eval(x)
        R = self.R_ref @ matrix_exp(self.phi[-1] + self.shift[-1])
        return self.c0 + R @ self.ee_rel(x[-self.m :])

    def equalities(self, x: np.ndarray) -> np.ndarray:
        """End-effector error at the last waypoint (3,) [cm]: 0 at a solution."""
        return (self.end_effector(x) - self.goal) * POSITION_SCALE

    def equalities_jacobian(self, x: np.ndarray) -> np.ndarray:
        """Jacobian (3, N m) of :meth:`equalities` (the attitude's part to first order)."""
        self._eval(x)
        qN = x[-self.m :]
        R = self.R_ref @ matrix_exp(self.phi[-1] + self.shift[-1])
        r = self.ee_rel(qN)
        Jq = np.empty((3, self.m))
        for i in range(self.m):
            qq = qN.copy()
            qq[i] += FD_STEP
            Jq[:, i] = (self.ee_rel(qq) - r) / FD_STEP
        J = -skew(R @ r) @ self.R_ref @ self.G[-1]
        J[:, -self.m :] += R @ Jq
        return J * POSITION_SCALE

    def solve(self, x0: np.ndarray) -> np.ndarray:
        """SLSQP from ``x0`` (N m,); the last iterate."""
        bounds = [(self.lo[i % self.m], self.hi[i % self.m]) for i in range(self.m * self.N)]
        constraints = [
            {'type': 'ineq', 'fun': self.inequalities, 'jac': self.inequalities_jacobian},
            {'type': 'eq', 'fun': self.equalities, 'jac': self.equalities_jacobian},
        ]
        result = minimize(
            self.objective,
            x0,
            jac=self.objective_gradient,
            bounds=bounds,
            constraints=constraints,
            method='SLSQP',
            options={'maxiter': MAX_ITERATIONS, 'ftol': 1e-9},
        )
        return np.asarray(result.x, dtype=float)

    def inverse_kinematics(self, seed: np.ndarray) -> np.ndarray:
        """Moving joints (m,) near ``seed`` putting the end effector on the goal at the start's
        attitude (least squares within the bounds)."""

        calls = 0

        def residual(j: np.ndarray) -> np.ndarray:
            nonlocal calls
            calls += 1
            if calls % IK_CALLS_PER_TICK == 0:
                self.tick()
            e = (self.c0 + self.R0 @ self.ee_rel(j) - self.goal) * POSITION_SCALE
            return np.concatenate([e, 1e-2 * (j - seed)])

        seed = np.clip(seed, self.lo, self.hi)
        return np.asarray(least_squares(residual, seed, bounds=(self.lo, self.hi)).x)

    # ---------------------------------------------------------------------------- checking
    def check(self, P: np.ndarray) -> tuple[float, float, float, np.ndarray]:
        """The path's attitude by ``CHECK_SUBSTEPS`` midpoint steps per segment (exact on
        SO(3)): largest and final offset [rad], the end effector's error [m], the attitude at
        each waypoint (N + 1, 3) [rad, reference frame]."""
        s = CHECK_SUBSTEPS
        u = np.arange(1, s + 1) / s
        legs = zip(P[:-1], P[1:], strict=True)
        pts = np.vstack([P[:1]] + [a + np.outer(u, b - a) for a, b in legs])
        mids = 0.5 * (pts[1:] + pts[:-1])
        A = np.empty((len(mids), 3, self.m))
        for k in range(0, len(mids), 4 * s):  # (as long as an evaluation each)
            self.tick()
            A[k : k + 4 * s] = self.A(mids[k : k + 4 * s])
        R = matrix_exp(self.phi0)
        angles, phis = [np.linalg.norm(self.phi0)], [self.phi0]
        for k in range(len(A)):
            R = R @ matrix_exp(-A[k] @ (pts[k + 1] - pts[k]))
            phi = matrix_log(R)
            angles.append(float(np.linalg.norm(phi)))
            if (k + 1) % s == 0:
                phis.append(phi)
        end = self.c0 + self.R_ref @ R @ self.ee_rel(P[-1])
        error = float(np.linalg.norm(end - self.goal))
        self.fine = (np.array(angles), np.array(phis))
        return max(angles), angles[-1], error, self.fine[1]

    def correct(self, P: np.ndarray) -> None:
        """Correct the problem by the last :meth:`check` (of the path ``P`` (N + 1, m)), for
        the next solve: the waypoints' attitude is shifted by what the check found there
        beyond the shooting (``shift``), and each waypoint's bound lowered by how far the
        base turns beyond both ends of a segment it bounds (``bounds``). The shift is
        recomputed from each solution (a fixed point: the shooting's second-order errors held
        as the last path had them); the bounds only go down until :meth:`set_size` (the
        lowest of the corrections so far: where successive solutions move their bulges
        around, the corrections alternate between them otherwise)."""
        angles, phis = self.fine
        self._eval(P[1:].ravel())
        ends = np.linalg.norm(phis, axis=1)
        segments = angles[1:].reshape(self.N, -1).max(axis=1)
        bulge = np.maximum(0.0, segments - np.maximum(ends[:-1], ends[1:]))
        self.shift = phis - self.phi
        lowered = self.b - np.maximum(bulge, np.append(bulge[1:], 0.0))
        self.bounds = np.minimum(self.bounds, np.maximum(lowered, 0.25 * self.b))

    def timing(self, P: np.ndarray) -> np.ndarray:
        """Times of the waypoints (N + 1,) [s] at ``PATH_SPEED`` of the speed limits."""
        vmax = speed_limits(self.model.velocity_limit, PATH_SPEED)[self.free]
        dt = (np.abs(np.diff(P, axis=0)) / vmax).max(axis=1)
        return np.concatenate([[0.0], np.cumsum(np.maximum(dt, MIN_SEGMENT_TIME))])


def resampled(P: np.ndarray, n: int) -> np.ndarray:
    """``P`` (k, m) resampled to ``n + 1`` points evenly spaced along its length."""
    s = np.concatenate([[0.0], np.cumsum(np.linalg.norm(np.diff(P, axis=0), axis=1))])
    if s[-1] <= 0.0:
        return np.repeat(P[:1], n + 1, axis=0)
    u = np.linspace(0.0, 1.0, n + 1)
    return np.column_stack([np.interp(u, s / s[-1], P[:, j]) for j in range(P.shape[1])])


class _Cancelled(Exception):
    """Raised in the worker when its planner is gone."""


class _Handoff:
    """Runs ``work`` in a worker thread, one budget of ticks at a time (see the module
    docstring); only one of the two threads runs at any moment."""

    def __init__(self) -> None:
        self.budget = 0
        self.ticks = 0  # (all of them: evaluations, inverse kinematics, checks)
        self.cancelled = False
        self.finished = False
        self.error: BaseException | None = None
        self.resume = threading.Semaphore(0)
        self.paused = threading.Semaphore(0)
        self.thread: threading.Thread | None = None

    def tick(self) -> None:
        if self.budget <= 0:
            self.paused.release()
            self.resume.acquire()
            if self.cancelled:
                raise _Cancelled
        self.budget -= 1
        self.ticks += 1

    def start(self, work: Callable[[], None]) -> None:
        def main() -> None:
            self.resume.acquire()
            try:
                if not self.cancelled:
                    work()
            except _Cancelled:
                pass
            except Exception as exc:  # (reported by the planner, not lost in the thread)
                self.error = exc
            finally:
                self.finished = True
                self.paused.release()

        self.thread = threading.Thread(target=main, name='ffsim-path-planner', daemon=True)
        self.thread.start()

    def run(self, ticks: int) -> bool:
        """Let the worker run ``ticks`` more ticks; True once it has finished."""
        if self.finished:
            return True
        self.budget = ticks
        self.resume.release()
        self.paused.acquire()
        return self.finished

    def cancel(self) -> None:
        if self.thread is not None and not self.finished:
            self.cancelled = True
            self.resume.release()


class PathSearch:
    """The worker thread's side of a :class:`PathPlanner` (it holds no reference to the
    planner, so that a planner dropped mid-search is collected and its worker cancelled).

    Parameters
    ----------
    problem : PathProblem
    budget, position_tolerance, attitude_tolerance : float
        [rad], [m], [rad] (see :class:`PathPlanner`).
    rng : numpy.random.Generator
        Draws the inverse-kinematics seeds after the first.
    """

    def __init__(
        self,
        problem: PathProblem,
        budget: float,
        position_tolerance: float,
        attitude_tolerance: float,
        rng: np.random.Generator,
    ) -> None:
        self.problem, self.rng = problem, rng
        self.budget, self.tol_p, self.tol_a = budget, position_tolerance, attitude_tolerance
        self.nodes = 0
        self.found: tuple[Segment, Approach] | None = None
        self.best: Approach | None = None
        self.last = np.zeros((0, problem.m))  # the last solution (its check: problem.fine)

    def run(self) -> None:
        """Seeds, then the refinements of ``SCHEDULE`` and the ``CORRECTIONS``, until a path is
        accepted."""
        p = self.problem
        for trial in range(SEEDS):
            seed = p.q0[p.free]
            if trial:
                seed = np.clip(seed + self.rng.normal(0.0, 0.8, p.m), p.lo, p.hi)
            P = np.linspace(p.q0[p.free], p.inverse_kinematics(seed), SCHEDULE[0][0] + 1)
            for n, share, final_share in SCHEDULE:
                p.set_size(n, share * self.budget, final_share * self.tol_a)
                if self.solve(P, n):
                    return
                P = self.last
            for _ in range(CORRECTIONS):
                p.correct(self.last)
                if self.solve(self.last, n):
                    return

    def solve(self, P: np.ndarray, n: int) -> bool:
        """One solve of ``n`` waypoints from the path ``P`` (k, m) at the problem's bounds;
        True when its solution is accepted."""
        p = self.problem
        self.nodes += 1
        self.last = p.path(p.solve(resampled(P, n)[1:].ravel()))
        return self.accept(self.last)

    def accept(self, P: np.ndarray) -> bool:
        """Check the path ``P`` (N + 1, m) finely; keep it if within the shares of the budget
        and the tolerance (:attr:`found`), and the best approach seen (:attr:`best`)."""
        p = self.problem
        top, final, error, phis = p.check(P)
        times = p.timing(P)
        approach = Approach(error, final, top, float(times[-1]))
        residual = approach.residual(self.tol_p, self.tol_a)
        if self.best is None or residual < self.best.residual(self.tol_p, self.tol_a):
            self.best = approach
        ok = (
            top <= CHECK_MAX * self.budget
            and final <= CHECK_FINAL * self.tol_a
            and error <= 0.5 * self.tol_p
        )
        if ok:
            full = np.tile(p.q0, (len(P), 1))
            full[:, p.free] = P
            segment = Segment(
                p.goal.copy(), float(times[-1]), path=full, times=times, attitudes=phis
            )
            self.found = (segment, approach)
        return ok


class PathPlanner:
    """Collocation search for a joint path to ``goal`` within the attitude budget (module
    docstring), with :class:`~.planner.RnsPlanner`'s interface: the plan is one segment, the
    path (``Segment.path``), then the approach.

    Parameters
    ----------
    law : ReactionlessController
        The controller (model, end-effector link, joints that move).
    q : (nq,) configuration to plan from (zero momentum assumed) [m, -, rad | m].
    goal : (3,) end-effector goal, inertial frame [m].
    attitude_reference : (4,) base attitude held, unit quaternion (x, y, z, w), inertial [-].
    budget : float
        Attitude budget the path may spend (its share ``SCHEDULE``) [rad]; 0: no plan.
    position_tolerance, attitude_tolerance : float
        What counts as reached [m], [rad].
    max_steps : int
        Step budget (an evaluation counts ``EVALUATION_STEPS``).
    seed : int
        Random stream of the inverse-kinematics seeds after the first.
    **_ : the other planners' options (not used).
    """

    def __init__(
        self,
        law: ReactionlessController,
        q: np.ndarray,
        goal: np.ndarray,
        attitude_reference: np.ndarray,
        *,
        budget: float,
        position_tolerance: float,
        attitude_tolerance: float,
        max_steps: int,
        seed: int,
        **_: object,
    ) -> None:
        self.steps = 0
        self.nodes = 0
        self.plan: Plan | None = None
        self.best: Approach | None = None
        self.done = False
        self.error: BaseException | None = None
        self.max_steps = int(max_steps)
        q = np.asarray(q, dtype=float)
        if budget <= 0.0 or law.model.nq != 7 + law.model.n or not np.any(law.active > 0):
            self.done = True
            return
        self.problem = PathProblem(law, q, goal, attitude_reference)
        rng = np.random.default_rng(seed)
        self._search = PathSearch(
            self.problem, budget, position_tolerance, attitude_tolerance, rng
        )
        self._handoff = _Handoff()
        self.problem.tick = self._handoff.tick
        self._handoff.start(self._search.run)
        weakref.finalize(self, self._handoff.cancel)

    def advance(self, steps: int) -> bool:
        """Run the search for about ``steps`` rollout steps' worth of evaluations; True once
        it is over (see :attr:`plan`).

        Parameters
        ----------
        steps : int

        Returns
        -------
        bool
        """
        if self.done:
            return True
        ticks = max(1, int(steps) // EVALUATION_STEPS)
        finished = self._handoff.run(ticks)
        self.steps = self._handoff.ticks * EVALUATION_STEPS
        if self.steps >= self.max_steps and not finished:
            self._handoff.cancel()
            finished = True
        search = self._search
        self.nodes, self.best = search.nodes, search.best
        if finished:
            self.done = True
            self.error = self._handoff.error
            if search.found is not None:
                self.plan = Plan((search.found[0],), search.found[1], self.steps, self.nodes)
        return self.done


def path_reference(segment: Segment, elapsed: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Where a path segment's joints should be ``elapsed`` [s] after its start, their rates and
    the planned attitude.

    Parameters
    ----------
    segment : Segment
        A path (``path`` (k, n) [rad | m], ``times`` (k,) [s], ``attitudes`` (k, 3) [rad]).
    elapsed : float
        [s] since the segment started.

    Returns
    -------
    q_ref : (n,) joint positions [rad | m]
    rates : (n,) joint rates of the segment of the path [rad/s | m/s] (0 after its end)
    phi : (3,) attitude planned, rotation vector from the reference, base frame [rad]
    """
    times, P, phis = segment.times, segment.path, segment.attitudes
    if elapsed >= times[-1]:
        return P[-1].copy(), np.zeros(P.shape[1]), phis[-1].copy()
    k = int(np.clip(np.searchsorted(times, elapsed, side='right') - 1, 0, len(times) - 2))
    h = times[k + 1] - times[k]
    u = (elapsed - times[k]) / h
    rates = (P[k + 1] - P[k]) / h
    return P[k] + u * (P[k + 1] - P[k]), rates, phis[k] + u * (phis[k + 1] - phis[k])
