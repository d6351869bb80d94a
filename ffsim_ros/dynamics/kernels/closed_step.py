"""One step of a closed chain: RK4 on :func:`.constrained.closed_chain_dynamics`, then the
projection onto the loop-closure manifold and onto the momentum the step must end with.

The projection is Gauss-Newton on the positions in the kinetic-energy metric, then the
velocities onto the loop rows ([M eqs. 62-66] closed again after the step, seed 001); the
momentum correction is the base's rigid motion of :mod:`.conservation` ([S0 eqs. 6-7, 11]).
The compiled step spares the projection (an evaluation of the dynamics) where the loop errors,
read from the kinematics alone, are already within its tolerance, and corrects the momentum
on the same kinematics pass.
"""

from __future__ import annotations

import numpy as np

from ..jit import borrow, carve, keep_alive, njit
from .conservation import (
    base_corrected,
    composite_inertia,
    correct_momentum,
    momentum_after,
    system_momentum,
)
from .constrained import (
    closed_chain_dynamics,
    evaluation_int_size,
    evaluation_ws_size,
    reduced_responses,
    reduced_ws_size,
    row_arrays,
    row_ws_size,
    sweep_ws_size,
    tree_sweep,
)
from .cut_hinges import loop_row_count, loop_rows
from .delassus import solve_delassus, solve_firm
from .kinematics import joint_velocity, kinematics_into, kinematics_views, kinematics_ws_size
from .layout import ModelArrays, unpack
from .lie_group import (
    RK4_NODES,
    RK4_WEIGHTS,
    add_body_wrench,
    chart_rate_into,
    integrate,
    integrate_into,
)
from .momentum import momentum_and_energy, spatial_momentum

#: A position projection after a step that takes the configuration back by more than this
#: fraction of the step (kinetic-energy metric) converged onto a loop singularity instead of
#: closing the loops next to the step's end (:mod:`ffsim_ros.dynamics.mufti.closing`).
COLLAPSE_RATIO = 0.25


@njit
def loop_projection(
    m: ModelArrays,
    q: np.ndarray,
    v: np.ndarray,
    loop_i: np.ndarray,
    loop_f: np.ndarray,
    nrows: int,
    rtol: float,
    dq: np.ndarray,
    dv: np.ndarray,
    ws: np.ndarray,
    known: bool,
) -> float:
    """The kinetic-energy-metric corrections of a state near the constraint manifold:
    ``dq = -M^-1 C^T (C M^-1 C^T)^+ xi`` and ``dv = -M^-1 C^T (C M^-1 C^T)^+ C v`` on the
    independent loop rows (the displacement and velocity change internal loop impulses
    produce; :meth:`ffsim_ros.dynamics.mufti.ClosedChain.project`). ``dq`` on every row
    above the round-off floor (those that close the loops, singular ones included: a
    Gauss-Newton step along a row of singular value ``s`` and error ``~s^2 / |H|`` is
    ``~s / |H|``); ``dv`` on the rows that count for the motion at the loop errors of ``q``
    (:func:`.cut_hinges.rank_floor`), as the dynamics there. ``ws``, ``known``: the
    sweep's scratch and whether it holds the kinematics of ``q``
    (:func:`.constrained.tree_sweep`).

    Returns
    -------
    float
        ``max |xi|`` [m, rad] at ``q``.
    """
    nb = m.parent.shape[0]
    nv = v.shape[0]
    nl = loop_i.shape[0]
    # one allocation of each kind, borrowed (as in closed_chain_dynamics), held to the end
    own = np.empty(evaluation_ws_size(nb, nv, nl, nrows) + 2 * nv)
    iown = np.empty(evaluation_int_size(nb, nl, nrows), dtype=np.int64)
    fw = borrow(own)
    iw = borrow(iown)
    o = row_ws_size(nrows, nl)
    n_red = reduced_ws_size(nb, nv, nrows)
    acc = carve(fw, o + n_red, (nb, 6))
    qdd = fw[o + n_red + 6 * nb : o + n_red + 6 * nb + nv]
    zero = fw[o + n_red + 6 * nb + nv : o + n_red + 6 * nb + 2 * nv]
    for c in range(nv):  # (the efforts: none)
        zero[c] = 0.0
    frictionless = nv < 0  # (False as a run-time bool: a literal compiles the sweep again)
    R, p, S, vel, U, Dinv = tree_sweep(
        m, q, v, zero, carve(fw, 0, (0, 6)), frictionless, qdd, acc, ws, known
    )
    W, rhs, xi, verr, ob, basis = row_arrays(fw, nrows, nl)
    loop_rows(m, R, p, vel, loop_i, loop_f, W, rhs, xi, verr, ob)
    err = 0.0
    closure = 0.0
    for r in range(nrows):
        err = max(err, abs(xi[r]))
        closure += xi[r] * xi[r]
    keep = iw[:nl]
    firm = iw[nl : 2 * nl]
    Wr, xr, ra, rb, Mq, Ma, A, floor = reduced_responses(
        m, S, U, Dinv, W, xi, loop_i, rtol, np.sqrt(closure), basis, iw, fw[o:]
    )
    K = xr.shape[0]
    vr = np.empty(K)
    r0 = 0
    k0 = 0
    for lp in range(nl):  # U_k^T (C v)_k
        nr = loop_row_count(loop_i[lp, 2])
        for j in range(keep[lp]):
            s = 0.0
            for r in range(nr):
                s += basis[r0 + r, j] * verr[r0 + r]
            vr[k0 + j] = s
        r0 += nr
        k0 += keep[lp]
    yq, _ = solve_delassus(m, S, A, xr, Wr, ra, rb, Mq, rtol, 0.0)
    yv, _ = solve_firm(m, S, A, vr, Wr, ra, rb, Mq, rtol, floor, keep, firm)
    for c in range(nv):
        sq = 0.0
        sv = 0.0
        for j in range(K):
            sq += Mq[j, c] * yq[j]
            sv += Mq[j, c] * yv[j]
        dq[c] = -sq
        dv[c] = -sv
    keep_alive(own)
    keep_alive(iown)
    return err


@njit
def _loop_errors(
    m: ModelArrays,
    q: np.ndarray,
    v: np.ndarray,
    loop_i: np.ndarray,
    loop_f: np.ndarray,
    nrows: int,
    target: np.ndarray,
    carry: np.ndarray,
    ws: np.ndarray,
    known: bool,
) -> tuple[float, np.ndarray]:
    """The loop rows' errors at ``(q, v)`` and, on the same kinematics, ``v`` corrected to
    the momentum ``target``; the kinematics of ``q`` are computed into the kinematics views
    of the sweep's scratch ``ws`` (:func:`.constrained.sweep_ws_size`), unless ``known`` (they
    are there already), where the next step's first stage finds them
    (:func:`closed_chain_step`).

    Parameters
    ----------
    target : (6,) ``[P; L_O]`` [kg m/s, kg m^2/s] the momentum about O ``v`` is corrected to
        (:func:`.conservation.correct_momentum` without the CoM's translation), or (0,).
    carry : (12,) output with a target: ``[1.0, P, L_O, mass, M r_g]`` of ``q`` and the
        corrected velocity in its first 11 entries (:func:`closed_chain_step`).

    Returns
    -------
    err : float
        ``max(max |xi|, max |C v|)`` [m, rad, m/s, rad/s], from the kinematics and the body
        velocities alone (no dynamics); ``inf`` for a non-finite state.
    v : (nv,)
        The corrected velocity, or ``v`` itself without a target (or with ``inf``).
    """
    nb = m.parent.shape[0]
    nv = v.shape[0]
    R, p, S, mw, hw, Iw, T = kinematics_views(ws, nb, nv)
    nl = loop_i.shape[0]
    own = np.empty(row_ws_size(nrows, nl) + 6 * nb)  # (borrowed, held up to keep_alive)
    fw = borrow(own)
    vel = carve(fw, row_ws_size(nrows, nl), (nb, 6))
    if not known:
        kinematics_into(m, q, R, p, S, mw, hw, Iw, T)
    for i in range(nb):
        k = m.parent[i]
        sv = joint_velocity(S, m.iv[i], m.nvj[i], v)
        for r in range(6):
            vel[i, r] = (vel[k, r] if k >= 0 else 0.0) + sv[r]
    W, rhs, xi, verr, ob, _ = row_arrays(fw, nrows, nl)
    loop_rows(m, R, p, vel, loop_i, loop_f, W, rhs, xi, verr, ob)
    err = 0.0
    finite = True
    for r in range(nrows):
        a = abs(xi[r])
        b = abs(verr[r])
        if not (np.isfinite(a) and np.isfinite(b)):
            finite = False
            break
        err = max(err, a, b)
    keep_alive(own)
    if not finite:
        return np.inf, v  # the projection that follows reports it
    if target.shape[0] == 0:
        return err, v
    # correct_momentum's arithmetic on these kinematics (its own pass would redo them)
    h = spatial_momentum(m, v, S, mw, hw, Iw)
    mass, first, inertia = composite_inertia(mw, hw, Iw)
    out = base_corrected(q, v, target - h, mass, first, inertia)
    h = spatial_momentum(m, out, S, mw, hw, Iw)  # (the next step's, from these kinematics)
    carry[0] = 1.0
    for r in range(6):
        carry[1 + r] = h[r]
    carry[7] = mass
    for r in range(3):
        carry[8 + r] = first[r]
    return err, out


@njit
def _undone(m: ModelArrays, q: np.ndarray, d: np.ndarray, p: np.ndarray) -> bool:
    """Whether the displacement ``p`` (nv,) exceeds :data:`COLLAPSE_RATIO` of ``d`` (nv,) in
    the kinetic-energy metric at ``q``; not looked at in that metric when it is below 1e-4 of
    ``d`` in the plain norm (a projection after a regular step moves by ~1e-9 of it)."""
    nb = m.parent.shape[0]
    nv = d.shape[0]
    pp = 0.0
    dd = 0.0
    for c in range(nv):
        pp += p[c] * p[c]
        dd += d[c] * d[c]
    if not pp > 1e-8 * dd:
        return False
    ws = np.empty(kinematics_ws_size(nb, nv))
    R, p0, S, mw, hw, Iw, T = kinematics_views(ws, nb, nv)
    kinematics_into(m, q, R, p0, S, mw, hw, Iw, T)
    step = momentum_and_energy(m, d, S, mw, hw, Iw)[1]
    back = momentum_and_energy(m, p, S, mw, hw, Iw)[1]
    return step > 0.0 and back > COLLAPSE_RATIO * COLLAPSE_RATIO * step


@njit
def step_ws_size(nb: int, nq: int, nv: int, nrows: int) -> int:
    """Length of the scratch of :func:`closed_chain_step`: the sweep's
    (:func:`.constrained.sweep_ws_size`), then ``nrows + 10 nv + nq`` for the step's own
    vectors."""
    return sweep_ws_size(nb, nv) + nrows + 10 * nv + nq


@njit
def closed_chain_step(
    m: ModelArrays,
    q: np.ndarray,
    v: np.ndarray,
    gen: np.ndarray,
    with_friction: bool,
    loop_i: np.ndarray,
    loop_f: np.ndarray,
    gains: np.ndarray,
    nrows: int,
    dt: float,
    settings: np.ndarray,
    wrench_body: np.ndarray,
    carry: np.ndarray,
    ws: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, int]:
    """One RK4 step of the closed chain in the local chart at ``q`` (the scheme of
    :func:`.lie_group.rk4_step`, :func:`closed_chain_dynamics` at each stage), then the
    projection onto the manifold (:func:`loop_projection`: Gauss-Newton on the positions,
    the velocity correction) where the loop rows' position or velocity errors exceed ``tol``
    (:func:`_loop_errors`, from the kinematics alone: at 1 kHz the RK4 drift of most steps is
    ~1e-15 and the projection, an evaluation of the dynamics, is spared) and, when asked,
    the momentum correction to the momentum the step must end with under gravity alone
    (:func:`.conservation.momentum_after`, :func:`.conservation.correct_momentum`; the
    momentum about O only: the CoM is not moved onto its ballistic line, as the Python
    projection of the other methods does not).

    Parameters
    ----------
    q : (nq,) ;  v : (nv,) the tree state;  dt : step [s].
    gen : (nv,) generalized force ``[F_b; tau]`` [N, N m, N m | N], held over the step.
    gains : (3,) ``[alpha, beta, rtol]``: Baumgarte gains in the stages and the rank
        threshold.
    settings : (4,) ``[project, conserve, tol, max_iter]`` (flags as 0/1; ``tol`` on the loop
        errors [m, rad, m/s, rad/s]).
    wrench_body : (6,) ``[f; n]`` at the base CoM in the base frame [N, N m], added to ``gen``
        turned by each stage's base attitude (:func:`.lie_group.add_body_wrench`), or (0,).
    carry : (12,) in and out, ``[known, P, L_O, mass, M r_g, kinematics]``: with ``known``
        (1.0) the momentum about O [kg m/s, kg m^2/s], mass [kg] and first moment [kg m] of
        ``(q, v)`` as :func:`.conservation.system_momentum` gives them (then not computed
        again); on return those of ``(q_next, v_next)`` where the step corrected the
        momentum (on the kinematics of ``q_next``, those of the loop-error check), else
        ``known`` 0.0. ``kinematics`` (1.0): ``ws`` holds the kinematics of ``q``, which the
        first stage then reads instead of computing them; on return 1.0 where it holds those
        of ``q_next`` (the last loop-error check's). A run of steps hands each step's to the
        next: the same arithmetic on the same kinematics, two passes fewer a step.
    ws : (:func:`step_ws_size`,) the sweep's scratch (:func:`.constrained.sweep_ws_size`),
        in and out as ``carry`` says, then the step's own vectors; borrowed
        (:func:`~ffsim_ros.dynamics.jit.borrow`) by the caller, so that no view the step
        carves from it is reference counted.

    Returns
    -------
    q_next : (nq,) ;  v_next : (nv,) ;  status : int
        0, or 1 for non-finite accelerations, 2 for a projection that did not converge, 3 for
        a projection that took back more than :data:`COLLAPSE_RATIO` of the step (converging
        onto a loop singularity); with 2 and 3 the step's end before the projection, for the
        caller's nearest closed configuration (:mod:`ffsim_ros.dynamics.mufti.closing`).
    """
    nv = v.shape[0]
    nq = q.shape[0]
    project = settings[0] != 0.0
    conserve = settings[1] != 0.0
    tol = settings[2]
    max_iter = int(settings[3])
    # the step's vectors, views on the caller's borrowed scratch (no allocation, no counting)
    o = sweep_ws_size(m.parent.shape[0], nv)
    lam = ws[o : o + nrows]
    o += nrows
    rows = carve(ws, o, (10, nv))
    d, a, theta, v_sum, force = rows[0], rows[1], rows[2], rows[3], rows[4]
    ths, vs, dq, dv, back = rows[5], rows[6], rows[7], rows[8], rows[9]
    qs = ws[o + 10 * nv : o + 10 * nv + nq]
    empty = carve(ws, 0, (0, 6))
    target = ws[0:0]
    if conserve:
        if carry[0] == 1.0:
            h = carry[1:7]
            mass = carry[7]
            first = carry[8:11]
        else:
            h, mass, first, _ = system_momentum(m, q, v)
        target = momentum_after(m, h, mass, first, dt)[:6]
    carry[0] = 0.0
    known = carry[11] == 1.0  # (the first stage's kinematics, from the step before)
    carry[11] = 0.0
    for c in range(nv):
        d[c] = 0.0
        a[c] = 0.0
        theta[c] = 0.0
        v_sum[c] = 0.0
        ths[c] = 0.0
        force[c] = gen[c]
    for c in range(nq):
        qs[c] = q[c]
    for s in range(4):
        if s == 0:
            for c in range(nv):
                vs[c] = v[c]
        else:  # (rk4_stage's arithmetic)
            h = RK4_NODES[s] * dt
            for c in range(nv):
                ths[c] = h * d[c]
                vs[c] = v[c] + h * a[c]
            integrate_into(m, q, ths, 1.0, qs)
        if wrench_body.shape[0] > 0:
            add_body_wrench(qs, gen, wrench_body, force)
        rank = closed_chain_dynamics(
            m, qs, vs, force, empty, with_friction, loop_i, loop_f, gains, a, lam, empty, ws,
            known and s == 0,
        )  # fmt: skip
        if rank < 0:
            return q.copy(), v.copy(), 1
        chart_rate_into(m, ths, vs, d)
        b = RK4_WEIGHTS[s] * dt
        for c in range(nv):
            theta[c] += b * d[c]
            v_sum[c] += b * a[c]
    qn = integrate(m, q, theta, 1.0)
    vn = v + v_sum
    if not project:
        return qn, vn, 0
    # a step that ends with the loops closed to tol, positions and velocities (at 1 kHz most
    # do: the RK4 drift is ~1e-15), needs no projection; the check costs the kinematics alone
    fresh = nv < 0  # (False as a run-time bool: a literal compiles the check once more)
    err, corrected = _loop_errors(m, qn, vn, loop_i, loop_f, nrows, target, carry, ws, fresh)
    if err <= tol:
        carry[11] = 1.0
        return qn, corrected, 0
    carry[0] = 0.0
    q_end = qn
    for c in range(nv):
        back[c] = 0.0
    for it in range(max_iter + 1):  # (the first at qn, whose kinematics ws holds)
        err = loop_projection(m, qn, vn, loop_i, loop_f, nrows, gains[2], dq, dv, ws, it == 0)
        if not np.isfinite(err):
            return qn, vn, 1
        if err <= tol:
            break
        if it == max_iter:
            return q_end, vn, 2
        qn = integrate(m, qn, dq, 1.0)
        for c in range(nv):
            back[c] += dq[c]
    if it > 0 and _undone(m, q_end, theta, back):  # (after a cheap look: usually ~1e-9 of it)
        return q_end, vn, 3
    for c in range(nv):
        vn[c] += dv[c]
    if conserve:  # (on the kinematics that give the next step its momentum: the carry)
        # (ws holds the kinematics of qn: the last projection iterate's, err <= tol there)
        err, corrected = _loop_errors(
            m, qn, vn, loop_i, loop_f, nrows, target, carry, ws, err <= tol
        )
        vn = corrected if np.isfinite(err) else correct_momentum(m, qn, vn, target)[1]
        carry[11] = 1.0
    return qn, vn, 0


@njit
def e_loop_projection(
    idata: np.ndarray,
    fdata: np.ndarray,
    q: np.ndarray,
    v: np.ndarray,
    loop_i: np.ndarray,
    loop_f: np.ndarray,
    nrows: int,
    rtol: float,
    dq: np.ndarray,
    dv: np.ndarray,
) -> float:
    """Entry point: :func:`loop_projection` on the packed model; returns ``max |xi|``
    [m, rad].

    Parameters
    ----------
    idata, fdata : the packed model.  q : (nq,) ;  v : (nv,) the tree state (as
    :func:`e_closed_chain`);  loop_i : (nl, 3), loop_f : (nl, 24) the cut hinges
    (:func:`.cut_hinges.loop_rows`);  nrows : their row count;  rtol : rank threshold;
    dq : (nv,) output tangent correction (``q <- integrate(q, dq, 1)``) [m, rad, rad | m];
    dv : (nv,) output velocity correction [m/s, rad/s, rad/s | m/s].
    """
    own = np.empty(sweep_ws_size(idata[0], idata[1]))
    m = unpack(idata, fdata)
    known = nrows < 0  # (False as a run-time bool: a literal compiles the passes once more)
    # (borrowed as in e_closed_chain_steps)
    err = loop_projection(
        m, borrow(q), borrow(v), borrow(loop_i), borrow(loop_f), nrows, rtol, borrow(dq),
        borrow(dv), borrow(own), known,
    )  # fmt: skip
    keep_alive(own)
    return err


@njit
def e_closed_chain_steps(
    idata: np.ndarray,
    fdata: np.ndarray,
    gen: np.ndarray,
    with_friction: bool,
    loop_i: np.ndarray,
    loop_f: np.ndarray,
    gains: np.ndarray,
    nrows: int,
    dt: float,
    settings: np.ndarray,
    Q: np.ndarray,
    V: np.ndarray,
    wrench_body: np.ndarray,
) -> tuple:
    """Entry point: ``k`` steps of :func:`closed_chain_step` on the packed model, the
    efforts held, from ``Q[0]``, ``V[0]``.

    Parameters
    ----------
    Q : (k + 1, nq) ;  V : (k + 1, nv) the trajectory, row 0 the initial state (read), rows
        1.. written step by step (other arguments as :func:`closed_chain_step`).

    Returns
    -------
    status : int
        0, or the status of the step that stopped the run (1 non-finite accelerations, 2
        projection without convergence, 3 projection onto a loop singularity: the row after
        the last good step then holds the step's end before the projection, for the caller to
        close; the rows after it are left unwritten).
    done : int
        Steps completed.
    """
    m = unpack(idata, fdata)
    # the scratch and the caller's arrays borrowed (jit.borrow): the views the steps carve
    # from them are then not reference counted (the counting was a quarter of a step)
    owner = np.zeros(12 + step_ws_size(idata[0], Q.shape[1], idata[1], nrows))
    carry = borrow(owner[:12])  # each step's end momentum and kinematics, for the next
    ws = borrow(owner[12:])
    Q, V, gen, gains = borrow(Q), borrow(V), borrow(gen), borrow(gains)
    loop_i, loop_f = borrow(loop_i), borrow(loop_f)
    settings, wrench_body = borrow(settings), borrow(wrench_body)
    status = 0
    done = Q.shape[0] - 1
    for s in range(Q.shape[0] - 1):
        qn, vn, status = closed_chain_step(
            m, Q[s], V[s], gen, with_friction, loop_i, loop_f, gains, nrows, dt, settings,
            wrench_body, carry, ws,
        )  # fmt: skip
        if status == 1:
            done = s
            break
        Q[s + 1] = qn
        V[s + 1] = vn
        if status != 0:
            done = s
            break
    keep_alive(owner)
    return status, done
