"""Time per forward-dynamics call of each method against the number of joints n.

Methods: ``aba`` (articulated-body algorithm, numba), ``crba`` (mass matrix + Cholesky,
numba), ``kkt`` (Mufti's sparse Lagrangian system, seed 001 eqs. 10/49, NumPy/SciPy),
``nullspace`` (its null-space form, eq. 40-c with ``Z`` from a dense QR) and ``multipliers``
(eqs. 14/50: accelerations eliminated, the sparse multiplier system). Robots: serial chains
(:func:`chain_urdf`) and branched random trees (:func:`random_urdf`, branching 0.5), floating
base, n = 2..100. The growth exponent is the least-squares slope of log(time) against log(n)
over n >= 16 (below that, per-call overheads dominate).

A second, smaller table times the forms of seed 001 section 3.1 on trees of ball-and-socket
joints (:mod:`ffsim_ros.dynamics.mufti.barycentric`: ``kkt``, ``eq14``, ``eq16``, ``eq28``,
``eq38``; dense NumPy except the sparse ``kkt`` / ``eq14``), random branched trees of n bodies.

A third part times closed chains (:class:`ffsim_ros.dynamics.mufti.ClosedChain`, seed 001
eq. 63): the compiled ``aba`` solver against the NumPy ``kkt`` reference and against
Pinocchio's ``constraintDynamics`` (same URDF, the cut hinge as a ``RigidConstraintModel``,
timed in alternation; the accelerations are compared too) on the planar four-bar, the spatial
loop and the floating platform with two ball loops; the growth exponent over n = 10..200 on
serial chains of n joints on a floating base closed tip-to-base by a ball cut; and a 1 kHz RK4
simulation of the floating platform (real-time factor).

Run: ``.venv/bin/python benchmarks/methods.py`` (a few minutes on 2 cores; ``--closed-only``
for the closed-chain part alone, about a minute). Prints the tables and writes
``docs/methods_scaling.png``.
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

# single-threaded BLAS: per-call timings of small dense factorizations are otherwise dominated
# by thread start-up and contention on a 2-core machine (measured 2x slower at n = 64)
for _var in ('OPENBLAS_NUM_THREADS', 'OMP_NUM_THREADS', 'MKL_NUM_THREADS'):
    os.environ.setdefault(_var, '1')

import numpy as np  # noqa: E402

import ffsim_ros.dynamics as D  # noqa: E402
from ffsim_ros.dynamics.random_urdf import chain_urdf, random_urdf  # noqa: E402

METHODS = ('aba', 'crba', 'kkt', 'nullspace', 'multipliers')
BALL_SIZES = (2, 4, 8, 16, 32)
SIZES = (2, 4, 8, 16, 32, 64, 100)
FIT_FROM = 16


def time_call(model: D.Model, method: str, budget: float) -> float:
    """Median seconds per ``forward_dynamics`` call over a few batches within ``budget`` s."""
    rng = np.random.default_rng(0)
    q = D.neutral(model)
    quat = rng.normal(size=4)
    q[:3], q[3:7] = rng.normal(size=3), quat / np.linalg.norm(quat)
    q[7:] = rng.uniform(-1, 1, model.n)
    v, tau = rng.normal(size=model.nv), rng.normal(size=model.n)
    D.forward_dynamics(model, q, v, tau, method=method)  # warm-up (JIT cache, imports)
    t0 = time.perf_counter()
    D.forward_dynamics(model, q, v, tau, method=method)
    once = max(time.perf_counter() - t0, 1e-7)
    per_batch = max(1, int(budget / 5 / once))
    samples = []
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(per_batch):
            D.forward_dynamics(model, q, v, tau, method=method)
        samples.append((time.perf_counter() - t0) / per_batch)
    return float(np.median(samples))


def ball_tree(n: int, seed: int = 0):
    """A random branched tree of n bodies on ball joints, a random state and random loads."""
    from scipy.spatial.transform import Rotation

    from ffsim_ros.dynamics.mufti import barycentric as BC

    rng = np.random.default_rng(seed)
    parent = np.array([-1] + [int(rng.integers(max(0, i - 3), i)) for i in range(1, n)])
    A = rng.normal(size=(n, 3, 3))
    tree = BC.BallTree(
        parent,
        rng.uniform(0.5, 3.0, n),
        0.3 * A @ np.swapaxes(A, 1, 2) + 0.05 * np.eye(3),
        rng.normal(scale=0.5, size=(n - 1, 3)),
        rng.normal(scale=0.5, size=(n - 1, 3)),
    )
    R = Rotation.random(n, random_state=rng).as_matrix()
    loads = dict(
        forces=rng.normal(size=(n, 3)),
        torques=rng.normal(size=(n, 3)),
        hinge_torques=rng.normal(size=(n - 1, 3)),
    )
    return tree, R, rng.normal(size=(n, 3)), loads


def time_ball(n: int, method: str, budget: float) -> float:
    """Median seconds per ``ball_tree_dynamics`` call (as :func:`time_call`)."""
    from ffsim_ros.dynamics.mufti.barycentric import ball_tree_dynamics

    tree, R, w, loads = ball_tree(n)

    def call() -> None:
        ball_tree_dynamics(tree, R, w, method=method, **loads)

    call()
    t0 = time.perf_counter()
    call()
    once = max(time.perf_counter() - t0, 1e-7)
    per_batch = max(1, int(budget / 5 / once))
    samples = []
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(per_batch):
            call()
        samples.append((time.perf_counter() - t0) / per_batch)
    return float(np.median(samples))


def exponent(ns: np.ndarray, ts: np.ndarray) -> float:
    """Least-squares slope of log t against log n for n >= FIT_FROM."""
    sel = ns >= FIT_FROM
    return float(np.polyfit(np.log(ns[sel]), np.log(ts[sel]), 1)[0])


# ----------------------------------------------------------------------------------------------
# closed chains: the compiled solver, Pinocchio's constraintDynamics, and a simulation
# ----------------------------------------------------------------------------------------------

CLOSED_SIZES = (10, 20, 50, 100, 200)


def pinocchio_loop(urdf: str, chain, q: np.ndarray, v: np.ndarray, tau: np.ndarray):
    """Pinocchio's ``constraintDynamics`` on the same URDF and the same state, every cut hinge
    of ``chain`` a ``RigidConstraintModel`` (ball: CONTACT_3D, weld: CONTACT_6D).

    Returns
    -------
    call : () -> accelerations (Pinocchio's coordinates);  ours_a : (accelerations ->
    ours) the conversion of its result to our coordinates (floating base: CoM velocity,
    inertial angular velocity).
    """
    import pinocchio as pin

    model = chain.model
    floating = model.floating_base
    pm, pd, cms, cds, prox = pinocchio_constraints(urdf, chain)
    offv = 6 if floating else 0
    qp, vp, tp, perm = pinocchio_state(pm, model, q, v, tau)
    R = np.eye(3)
    c0 = np.zeros(3)
    if floating:
        c0 = pm.inertias[1].lever.copy()
        R = pin.Quaternion(q[6], q[3], q[4], q[5]).toRotationMatrix()

    def call() -> np.ndarray:
        return pin.constraintDynamics(pm, pd, qp, vp, tp, cms, cds, prox)

    def ours_a(ap: np.ndarray) -> np.ndarray:
        a = np.zeros(model.nv)
        if floating:
            wp = ap[3:6]
            a[3:6] = R @ wp
            a[:3] = R @ (ap[:3] - np.cross(c0, wp)) + np.cross(v[3:6], v[:3])
        for k, pk in enumerate(perm):
            a[offv + k] = ap[offv + pk]
        return a

    return call, ours_a


def pinocchio_state(pm, model, q: np.ndarray, v: np.ndarray, tau: np.ndarray):
    """Our state and efforts in Pinocchio's coordinates (its joint order; a floating base at
    its root joint, twist in the base frame about the joint origin).

    Returns
    -------
    qp : (pm.nq,);  vp, tp : (pm.nv,);  perm : our joint k -> Pinocchio's velocity index.
    """
    import pinocchio as pin

    floating = model.floating_base
    offv = 6 if floating else 0
    off = 7 if floating else 0
    perm = [pm.joints[pm.getJointId(nm)].idx_v - offv for nm in model.joint_names]
    qp, vp, tp = np.zeros(pm.nq), np.zeros(pm.nv), np.zeros(pm.nv)
    if floating:
        c0 = pm.inertias[1].lever.copy()
        R = pin.Quaternion(q[6], q[3], q[4], q[5]).toRotationMatrix()
        qp[:3], qp[3:7] = q[:3] - R @ c0, q[3:7]
        vp[3:6] = R.T @ v[3:6]
        vp[:3] = R.T @ v[:3] + np.cross(c0, R.T @ v[3:6])
    for k, pk in enumerate(perm):
        qp[off + pk], vp[offv + pk], tp[offv + pk] = q[off + k], v[offv + k], tau[k]
    return qp, vp, tp, perm


def pinocchio_constraints(urdf: str, chain):
    """Pinocchio's model and data of ``urdf`` (free flyer when ``chain``'s model floats, its
    gravity) and every cut hinge of ``chain`` as a ``RigidConstraintModel`` (ball:
    CONTACT_3D, weld: CONTACT_6D), initialized for ``constraintDynamics``.

    Returns
    -------
    (model, data, constraint models, constraint datas, proximal settings)
    """
    import pinocchio as pin

    floating = chain.model.floating_base
    pm = (
        pin.buildModelFromXML(urdf, pin.JointModelFreeFlyer())
        if floating
        else pin.buildModelFromXML(urdf)
    )
    pm.gravity.linear[:] = chain.model.gravity
    pd = pm.createData()
    cms = pin.StdVec_RigidConstraintModel()
    cds = pin.StdVec_RigidConstraintData()
    for lp in chain.loops:
        ids = []
        for link in (lp.link_a, lp.link_b):
            fid = pm.getFrameId(link)
            ids.append((pm.frames[fid].parentJoint, pm.frames[fid].placement))
        kind = pin.ContactType.CONTACT_3D if lp.kind == 'ball' else pin.ContactType.CONTACT_6D
        (ja, Pa), (jb, Pb) = ids
        cms.append(
            pin.RigidConstraintModel(
                kind,
                pm,
                ja,
                Pa * pin.SE3(lp.rotation_a, lp.translation_a),
                jb,
                Pb * pin.SE3(lp.rotation_b, lp.translation_b),
                pin.ReferenceFrame.LOCAL,
            )
        )
        cds.append(cms[len(cms) - 1].createData())
    pin.initConstraintDynamics(pm, pd, cms, cds)
    return pm, pd, cms, cds, pin.ProximalSettings(1e-12, 1e-10, 100)


def time_alternating(calls: dict, budget: float, rounds: int = 15) -> dict[str, float]:
    """Minimum seconds per call of each of ``calls`` (name -> ()), timed in alternation."""
    per = {}
    for name, fn in calls.items():
        fn()
        t0 = time.perf_counter()
        fn()
        per[name] = max(1, int(budget / rounds / max(time.perf_counter() - t0, 1e-7)))
    best = dict.fromkeys(calls, np.inf)
    for _ in range(rounds):
        for name, fn in calls.items():
            t0 = time.perf_counter()
            for _ in range(per[name]):
                fn()
            best[name] = min(best[name], (time.perf_counter() - t0) / per[name])
    return best


def closed_cases():
    """``name -> (urdf, chain, q, v)``: the sample loops, assembled and moving."""
    import warnings

    from ffsim_ros.dynamics import mufti as M
    from ffsim_ros.dynamics.mufti import samples as S

    cases = {}
    with warnings.catch_warnings():
        warnings.simplefilter('ignore', M.RedundantConstraintWarning)
        model = D.load_urdf(S.fourbar_urdf(), floating_base=False, gravity=(0, -9.81, 0))
        chain = M.ClosedChain(model, [S.fourbar_cut('ball')])
        q, v = chain.assemble([1.2, -0.9, -1.5], [0.8, 0, 0], locked=['j1'])
        cases['planar four-bar (fixed, ball)'] = (S.fourbar_urdf(), chain, q, v)
        chain, q, v = S.tumbling_fourbar('ball')
        cases['planar four-bar (floating, ball)'] = (S.fourbar_urdf(True), chain, q, v)
        for kind in ('ball', 'weld'):
            chain, q, v = S.tumbling_spatial_loop(kind)
            cases[f'spatial loop (floating, {kind})'] = (S.spatial_loop_urdf(), chain, q, v)
        chain, q, v = S.tumbling_platform()
        cases['floating platform (2 balls)'] = (S.platform_urdf(), chain, q, v)
    return cases


def looped_chain(n: int):
    """A floating serial chain of ``n`` joints (:func:`chain_urdf`) closed by a ball cut
    between its last link's tip and the base link, placed where a random configuration has
    it closed. Returns ``(urdf, chain, q, v)``."""
    from ffsim_ros.dynamics import mufti as M

    urdf = chain_urdf(n, seed=1)
    model = D.load_urdf(urdf)
    rng = np.random.default_rng(n)
    q = D.neutral(model)
    q[7:] = rng.uniform(-0.5, 0.5, model.n)
    tip = np.array([0.1, 0.0, 0.0])
    pt, Rt = D.link_pose(model, q, f'link_{n}')
    pb, Rb = D.link_pose(model, q, 'base_link')
    loop = M.LoopClosure(
        'tip',
        f'link_{n}',
        'base_link',
        'ball',
        translation_a=tip,
        translation_b=Rb.T @ (pt + Rt @ tip - pb),
    )
    chain = M.ClosedChain(model, [loop])
    q, v = chain.assemble(q, rng.normal(size=model.nv))
    return urdf, chain, q, v


def bench_closed(budget: float, seconds: float) -> None:
    """Print the closed-chain tables (module docstring)."""
    import warnings

    from ffsim_ros.dynamics.mufti import samples as S

    warnings.simplefilter('ignore')  # the redundant-row warning of the planar loops
    print('\nclosed chains: time per forward-dynamics call [us] (accelerations and loop forces)')
    print(
        f'{"case":34} {"aba":>8} {"kkt":>8} {"Pinocchio":>10} {"aba/Pin":>8} {"kkt/Pin":>8}'
        f' {"rel. diff":>12}'
    )
    for name, (urdf, chain, q, v) in closed_cases().items():
        tau = np.linspace(-1.0, 1.0, chain.model.n)
        pin_call, convert = pinocchio_loop(urdf, chain, q, v, tau)
        ref_a = convert(pin_call())
        diff = np.abs(chain.acceleration(q, v, tau, stabilize=False) - ref_a).max() / max(
            1.0, np.abs(ref_a).max()
        )
        t = time_alternating(
            {
                'aba': lambda c=chain, q=q, v=v, u=tau: c.acceleration(q, v, u, stabilize=False),
                'kkt': lambda c=chain, q=q, v=v, u=tau: c.acceleration(
                    q, v, u, stabilize=False, method='kkt'
                ),
                'pin': pin_call,
            },
            budget,
        )
        print(
            f'{name:34} {t["aba"] * 1e6:8.2f} {t["kkt"] * 1e6:8.1f} {t["pin"] * 1e6:10.2f}'
            f' {t["aba"] / t["pin"]:8.2f} {t["kkt"] / t["pin"]:8.1f} {diff:12.1e}'
        )
    print('\nclosed serial chains (floating base, tip-to-base ball cut): time per call [us]')
    print(f'{"n":>5} {"aba":>9} {"Pinocchio":>10} {"ratio":>7} {"rel. diff":>12}')
    ns, ours, ref = [], [], []
    for n in CLOSED_SIZES:
        urdf, chain, q, v = looped_chain(n)
        tau = np.zeros(chain.model.n)
        pin_call, convert = pinocchio_loop(urdf, chain, q, v, tau)
        ref_a = convert(pin_call())
        diff = np.abs(chain.acceleration(q, v, tau, stabilize=False) - ref_a).max() / max(
            1.0, np.abs(ref_a).max()
        )
        t = time_alternating(
            {
                'aba': lambda c=chain, q=q, v=v, u=tau: c.acceleration(q, v, u, stabilize=False),
                'pin': pin_call,
            },
            budget,
        )
        ns.append(n)
        ours.append(t['aba'])
        ref.append(t['pin'])
        print(
            f'{n:5d} {t["aba"] * 1e6:9.2f} {t["pin"] * 1e6:10.2f} {t["aba"] / t["pin"]:7.2f}'
            f' {diff:12.1e}'
        )
    lns = np.log(np.array(ns, float))
    e_ours = float(np.polyfit(lns, np.log(ours), 1)[0])
    e_ref = float(np.polyfit(lns, np.log(ref), 1)[0])
    print(f'growth exponent over n = {ns[0]}..{ns[-1]}: aba {e_ours:.2f}, Pinocchio {e_ref:.2f}')

    chain, q, v = S.tumbling_platform()
    tau = np.linspace(-1.0, 1.0, chain.model.n)
    print(f'\nfloating platform (2 ball loops, nv = {chain.model.nv}), RK4 at 1 kHz, {seconds} s:')
    for label, kw in (
        ('projection after each step (default)', {}),
        ('Baumgarte only, no projection', {'project': False, 'stabilize': True}),
    ):
        chain.simulate(q, v, tau, 0.01, 1e-3, **kw)
        t0 = time.perf_counter()
        _, Q, V = chain.simulate(q, v, tau, seconds, 1e-3, **kw)
        wall = time.perf_counter() - t0
        err = np.abs(chain.constraint_error(Q[-1], V[-1])[0]).max()
        print(
            f'  {label:38} {seconds / wall:6.1f}x real time ({wall / seconds * 1e3:.0f} us a'
            f' step), final |xi| {err:.1e}'
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--budget', type=float, default=0.25, help='seconds per measurement')
    parser.add_argument(
        '--closed-only', action='store_true', help='only the closed-chain part (about a minute)'
    )
    parser.add_argument(
        '--sim-seconds', type=float, default=3.0, help='simulated seconds of the platform run'
    )
    parser.add_argument(
        '--plot',
        type=Path,
        default=Path(__file__).resolve().parent.parent / 'docs' / 'methods_scaling.png',
    )
    args = parser.parse_args()
    if args.closed_only:
        bench_closed(args.budget, args.sim_seconds)
        return
    shapes = {
        'chain': lambda n: chain_urdf(n, seed=1),
        'tree': lambda n: random_urdf(n, n, branching=0.5, fixed_children=False),
    }
    results: dict[tuple[str, str], np.ndarray] = {}
    ns = np.array(SIZES, dtype=float)
    t_start = time.perf_counter()
    for shape, make in shapes.items():
        models = [D.load_urdf(make(n)) for n in SIZES]
        for method in METHODS:
            results[shape, method] = np.array([time_call(m, method, args.budget) for m in models])
    elapsed = time.perf_counter() - t_start

    head = f'{"shape":6} {"method":10} ' + ' '.join(f'{f"n={n}":>9}' for n in SIZES)
    print('time per forward-dynamics call [us] (floating base)')
    print(head + f' {"exponent":>9}')
    for (shape, method), ts in results.items():
        cells = ' '.join(f'{t * 1e6:9.1f}' for t in ts)
        print(f'{shape:6} {method:10} {cells} {exponent(ns, ts):9.2f}')
    print(
        f'(exponent: log-log least-squares slope over n >= {FIT_FROM}; run took {elapsed:.0f} s)'
    )

    from ffsim_ros.dynamics.mufti.barycentric import METHODS as BALL_METHODS

    print('\ntime per call on trees of ball joints [us] (mufti.barycentric, n bodies)')
    print(f'{"method":10} ' + ' '.join(f'{f"n={n}":>9}' for n in BALL_SIZES))
    for method in BALL_METHODS:
        ts = [time_ball(n, method, args.budget / 2) for n in BALL_SIZES]
        print(f'{method:10} ' + ' '.join(f'{t * 1e6:9.1f}' for t in ts))

    import matplotlib

    matplotlib.use('Agg')
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(10, 4), sharey=True)
    for ax, shape in zip(axes, shapes, strict=True):
        for method in METHODS:
            ts = results[shape, method]
            ax.loglog(ns, ts * 1e6, 'o-', label=f'{method} (n^{exponent(ns, ts):.2f})')
        ax.set_title(f'{shape}s, floating base')
        ax.set_xlabel('joints n')
        ax.grid(True, which='both', alpha=0.3)
        ax.legend()
    axes[0].set_ylabel('time per forward_dynamics call [us]')
    fig.tight_layout()
    args.plot.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(args.plot, dpi=110)
    print(f'plot: {args.plot}')
    bench_closed(args.budget, args.sim_seconds)


if __name__ == '__main__':
    main()
