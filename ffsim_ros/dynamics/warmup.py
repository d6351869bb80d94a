"""Compile and cache every numba kernel of the core: ``python -m ffsim_ros.dynamics.warmup``.

numba compiles a kernel on its first call and caches the machine code next to the source;
``make setup`` runs this once so that nodes, tests and the demo start without paying the
compile time (about two minutes on a 2-core machine when nothing is cached, under a
second when everything is).
"""

from __future__ import annotations

import time
import warnings

import numpy as np

from . import (
    ClosedChain,
    LoopClosure,
    aba,
    base_link_state,
    base_velocity_from_momentum,
    bias_forces,
    body_poses,
    center_of_mass,
    forward_dynamics,
    forward_dynamics_derivatives,
    generalized_velocity_derivatives,
    integrate,
    inverse_dynamics,
    inverse_dynamics_derivatives,
    link_jacobian,
    link_pose_and_jacobian,
    load_urdf,
    mass_matrix,
    momentum,
    neutral,
    rk4_step,
    state_summary,
    step,
    step_derivatives,
    with_joint_dynamics,
)
from .lie import matrix_exp, matrix_to_quat, quat_exp, quat_log, quat_multiply, quat_to_matrix
from .random_urdf import random_urdf


def warm_up() -> float:
    """Call every kernel once, single-state and batched; returns the seconds it took."""
    t0 = time.perf_counter()
    for floating in (True, False):
        model = with_joint_dynamics(load_urdf(random_urdf(0, 3), floating_base=floating))
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
        center_of_mass(model, q)
        link_jacobian(model, q, model.link_names[-1])
        integrate(model, q, v, 0.1)
        for method in ('rk4', 'euler', 'RK45'):
            step(model, q, v, tau, 1e-3, method=method)
        step(model, q, v, tau, 1e-3, steps=2)
        rk4_step(model, q, v, 1e-3, lambda t, qq, vv, m=model, u=tau: aba(m, qq, vv, u))
        forward_dynamics_derivatives(model, q, v, tau)
        inverse_dynamics_derivatives(model, q, v, v)
        step_derivatives(model, q, v, tau, 1e-3)
        Q, V, T = np.stack([q, q]), np.stack([v, v]), np.stack([tau, tau])
        forward_dynamics(model, Q, V, T)
        mass_matrix(model, Q)
        bias_forces(model, Q, V)
        link_pose_and_jacobian(model, Q, model.link_names[-1])
        momentum(model, Q, V)
        integrate(model, Q, V, 0.1)
        step(model, Q, V, T, 1e-3)
        if floating:
            base_velocity_from_momentum(model, q, tau)
            base_link_state(model, q, v)
            state_summary(model, q, v)
            step(model, q, v, tau, 1e-3, steps=2, conserve_momentum=True)
            step(model, q, v, tau, 1e-3, method='euler', conserve_momentum=True)
            generalized_velocity_derivatives(model, q, tau, model.link_names[-1])
            step(model, q, v, tau, 1e-3, base_wrench_body=np.ones(6))
    warm_up_closed_chains()
    quat = quat_exp([0.1, 0.2, 0.3])
    quat_log(quat_multiply(quat, quat))
    matrix_to_quat(quat_to_matrix(quat))
    matrix_exp([0.1, 0.2, 0.3])
    return time.perf_counter() - t0


def warm_up_closed_chains() -> None:
    """The compiled closed-chain solver (``ClosedChain(method='aba')``): accelerations,
    multipliers and body accelerations, link wrenches, the projection after a step, and the
    hinge forces (``kernels/constrained.py``; about 60 s to compile on 2 cores)."""
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


if __name__ == '__main__':
    print(f'ffsim_ros.dynamics kernels ready ({warm_up():.1f} s)')
