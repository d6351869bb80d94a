"""Compile and cache every numba kernel of the core: ``python -m ffsim_ros.dynamics.warmup``.

numba compiles a kernel on its first call and caches the machine code next to the source;
``make setup`` runs this once so that nodes, tests and the demo start without paying the
compile time (several minutes of one core when nothing is cached, a second when everything
is), in two processes (one per core: :data:`PARTS` split between them).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import sys
import time
import warnings
from pathlib import Path

try:  # POSIX; elsewhere the stale-cache check runs without its lock
    import fcntl
except ImportError:  # pragma: no cover
    fcntl = None  # type: ignore[assignment]

import numpy as np

from . import (
    ClosedChain,
    LoopClosure,
    Model,
    aba,
    base_link_state,
    base_velocity_from_momentum,
    bias_forces,
    body_poses,
    center_of_mass,
    forward_dynamics,
    forward_dynamics_derivatives,
    generalized_jacobian,
    generalized_velocity_derivatives,
    integrate,
    inverse_dynamics,
    inverse_dynamics_derivatives,
    link_jacobian,
    link_pose,
    link_pose_and_jacobian,
    load_urdf,
    mass_matrix,
    momentum,
    momentum_and_com,
    neutral,
    rk4_step,
    state_summary,
    step,
    step_derivatives,
    with_joint_dynamics,
)
from .lie import matrix_exp, matrix_to_quat, quat_exp, quat_log, quat_multiply, quat_to_matrix
from .random_urdf import random_urdf
from .stiff_friction import friction_impulse

#: The parts of :func:`warm_up`, each callable alone (``python -m ffsim_ros.dynamics.warmup
#: derivatives closed``): ``make setup`` compiles them in two processes, one per core.
PARTS = ('algorithms', 'derivatives', 'closed')


def warm_up(parts: tuple[str, ...] = PARTS) -> float:
    """Call every kernel of ``parts`` once, single-state and batched; returns the seconds it
    took.

    Parameters
    ----------
    parts : tuple of str
        Some of :data:`PARTS` (default all).

    Returns
    -------
    float
        Wall-clock time taken [s].

    Raises
    ------
    ValueError
        An unknown part.
    """
    unknown = sorted(set(parts) - set(PARTS))
    if unknown:
        raise ValueError(f'parts: expected some of {PARTS}, got {unknown}')
    t0 = time.perf_counter()
    for floating in (True, False):
        model = with_joint_dynamics(load_urdf(random_urdf(0, 3), floating_base=floating))
        if 'algorithms' in parts:
            warm_up_algorithms(model)
        if 'derivatives' in parts:
            warm_up_derivatives(model)
    if 'closed' in parts:
        warm_up_closed_chains()
    return time.perf_counter() - t0


def warm_up_algorithms(model: Model) -> None:
    """The algorithms, single-state and batched, the integrators and the rotation helpers.

    Parameters
    ----------
    model : Model
        A model with at least one moving joint (called at its neutral configuration).
    """
    q, v = neutral(model), np.zeros(model.nv)
    tau = np.zeros(model.n)
    wrench = {model.link_names[-1]: np.ones(6)}
    forward_dynamics(model, q, v, tau, link_wrenches=wrench)
    forward_dynamics(model, q, v, tau, method='crba')
    inverse_dynamics(model, q, v, v, link_wrenches=wrench)
    inverse_dynamics(model, q, v, v)
    bias_forces(model, q, v)
    mass_matrix(model, q)
    momentum(model, q, v, about='com')
    momentum_and_com(model, q, v)
    center_of_mass(model, q)
    link_jacobian(model, q, model.link_names[-1])
    link_pose(model, q, model.link_names[-1])
    integrate(model, q, v, 0.1)
    for method in ('rk4', 'euler', 'RK45'):
        step(model, q, v, tau, 1e-3, method=method)
    step(model, q, v, tau, 1e-3, steps=2)
    rk4_step(model, q, v, 1e-3, lambda t, qq, vv, m=model, u=tau: aba(m, qq, vv, u))
    # the implicit impulse of joint friction too stiff for the step (.stiff_friction)
    friction_impulse(model, mass_matrix(model, q), v, np.array([model.nv - 1]), 1e-3)
    Q, V, T = np.stack([q, q]), np.stack([v, v]), np.stack([tau, tau])
    forward_dynamics(model, Q, V, T)
    mass_matrix(model, Q)
    bias_forces(model, Q, V)
    link_pose_and_jacobian(model, Q, model.link_names[-1])
    momentum(model, Q, V)
    integrate(model, Q, V, 0.1)
    step(model, Q, V, T, 1e-3)
    if model.floating_base:
        base_velocity_from_momentum(model, q, tau)
        generalized_jacobian(model, q, model.link_names[-1])
        base_link_state(model, q, v)
        state_summary(model, q, v)
        step(model, q, v, tau, 1e-3, steps=2, conserve_momentum=True)
        step(model, q, v, tau, 1e-3, method='euler', conserve_momentum=True)
        step(model, q, v, tau, 1e-3, base_wrench_body=np.ones(6))
    quat = quat_exp([0.1, 0.2, 0.3])
    quat_log(quat_multiply(quat, quat))
    matrix_to_quat(quat_to_matrix(quat))
    matrix_exp([0.1, 0.2, 0.3])


def warm_up_derivatives(model: Model) -> None:
    """The derivatives: forward and inverse dynamics, the RK4 step's (A, B), and the
    generalized Jacobian's end-effector velocity.

    Parameters
    ----------
    model : Model
        As :func:`warm_up_algorithms`.
    """
    q, v = neutral(model), np.zeros(model.nv)
    tau = np.zeros(model.n)
    forward_dynamics_derivatives(model, q, v, tau)
    inverse_dynamics_derivatives(model, q, v, v)
    step_derivatives(model, q, v, tau, 1e-3)
    if model.floating_base:
        generalized_velocity_derivatives(model, q, tau, model.link_names[-1])


def warm_up_closed_chains() -> None:
    """The compiled closed-chain solver (``ClosedChain(method='aba')``): accelerations,
    multipliers and body accelerations, link wrenches, the projection after a step, and the
    hinge forces (``kernels/constrained.py``, ``loop_responses.py``, ``closed_step.py``; about
    60-80 s to compile on 2 cores)."""
    model = load_urdf(random_urdf(0, 3), floating_base=True)
    q, v = neutral(model), np.zeros(model.nv)
    R, p = body_poses(model, q)
    a = R.shape[0] - 1
    link_a = next(name for name in model.link_names if model.frame(name).body == a)
    link_b = next(name for name in model.link_names if model.frame(name).body == 0)
    loop = LoopClosure('cut', link_a, link_b, 'ball', translation_b=R[0].T @ (p[a] - p[0]))
    chain = ClosedChain(model, [loop])
    tau = np.zeros(model.n)
    with warnings.catch_warnings():  # a short chain may leave redundant rows
        warnings.simplefilter('ignore')
        chain.dynamics(q, v, tau, link_wrenches={link_a: np.ones(6)})
        chain.acceleration(q, v, tau)
        chain.step(q, v, tau, 1e-3)
        chain.project(q, v)


#: The digest of the kernels' sources the on-disk caches were built from, per package tree.
STAMP = Path('__pycache__') / 'numba-kernel-sources.sha256'


def kernel_sources_digest(root: Path) -> str:
    """SHA-256 of every module under ``root`` that numba compiles (its text names ``njit``),
    paths and contents.

    Parameters
    ----------
    root : Path
        A package directory (``ffsim_ros``).

    Returns
    -------
    str
        Hex digest.
    """
    digest = hashlib.sha256()
    for path in sorted(root.rglob('*.py')):
        text = path.read_bytes()
        if b'njit' in text:
            digest.update(path.relative_to(root).as_posix().encode() + b'\0' + text + b'\0')
    return digest.hexdigest()


def clear_stale_caches(root: Path) -> int:
    """Delete numba's cache files under ``root`` when the kernels' sources changed since they
    were built; returns how many were deleted.

    numba keys a cached function on its own file only: a kernel that inlines or links a
    callee from another file keeps the callee's old machine code after an edit of that file
    (numba's documented cache limitation), until its cache is deleted. The digest of the
    sources (:func:`kernel_sources_digest`) is kept in ``root / STAMP``; the check and the
    deletion hold a lock on it (``make setup`` warms up in two processes at once). A tree
    that cannot be written (a read-only install) is left as it is.

    Parameters
    ----------
    root : Path
        A package directory (``ffsim_ros``).

    Returns
    -------
    int
        The number of cache files deleted (0 when the sources are unchanged).
    """
    stamp = root / STAMP
    digest = kernel_sources_digest(root)
    try:
        stamp.parent.mkdir(exist_ok=True)
        with open(stamp, 'a+') as f:
            if fcntl is not None:
                fcntl.flock(f, fcntl.LOCK_EX)
            f.seek(0)
            if f.read().strip() == digest:
                return 0
            removed = 0
            for cache in (*root.rglob('*.nbi'), *root.rglob('*.nbc')):
                with contextlib.suppress(FileNotFoundError):
                    cache.unlink()
                    removed += 1
            f.seek(0)
            f.truncate()
            f.write(digest + '\n')
            return removed
    except OSError:
        return 0


def main(argv: list[str] | None = None) -> None:
    """``python -m ffsim_ros.dynamics.warmup [part ...]`` (default: every part).

    Parameters
    ----------
    argv : list of str, optional
        The parts (default ``sys.argv[1:]``); an unknown one exits with status 2.
    """
    parts = tuple(sys.argv[1:] if argv is None else argv) or PARTS
    if any(p in ('-h', '--help') for p in parts):
        print(
            'usage: python -m ffsim_ros.dynamics.warmup [part ...]\n'
            'Compile (or load from the cache) the numba kernels of the given parts, '
            f'default all: {" ".join(PARTS)}'
        )
        return
    unknown = sorted(set(parts) - set(PARTS))
    if unknown:
        print(
            f'ffsim_ros.dynamics.warmup: parts: expected some of {PARTS}, got {unknown}',
            file=sys.stderr,
        )
        sys.exit(2)
    if not os.environ.get('NUMBA_CACHE_DIR'):  # (a cache elsewhere is that directory's owner's)
        removed = clear_stale_caches(Path(__file__).resolve().parents[1])
        if removed:
            print(
                f'ffsim_ros.dynamics: kernel sources changed, {removed} stale cache files removed'
            )
    seconds = warm_up(parts)
    print(f'ffsim_ros.dynamics kernels ready ({seconds:.1f} s; {" ".join(parts)})')


if __name__ == '__main__':
    main()
