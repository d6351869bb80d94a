"""A base wrench given in the base frame on a closed chain (``ClosedChain.step``'s
``base_wrench_body``, ``Engine.set_base_wrench(..., frame='base')``): it turns with the base
within each step, re-expressed at every RK4 stage as ``D.step``'s ``base_wrench_body`` is.

Reference: RK4 on the Lie group (``D.rk4_step``) driven by the chain's accelerations with the
wrench turned into the inertial frame at each stage's attitude, then the chain's projection.
Before, the engine turned it once per step (at the step's start): a first-order error, 4.5e-4
in the velocities after 0.5 s at 1 ms on the tumbling spatial loop (1.8e-3 at 4 ms).
"""

from __future__ import annotations

import numpy as np
import pytest

import ffsim_ros.dynamics as D
from ffsim_ros.dynamics.lie import quat_to_matrix
from ffsim_ros.dynamics.mufti import samples as S
from ffsim_ros.sim import Engine

WRENCH = np.array([3.0, -2.0, 1.0, 0.5, 1.5, -1.0])  # [f; n] in the base frame [N, N m]


def _reference(chain: D.ClosedChain, q, v, dt: float, steps: int, links=None):
    """``steps`` RK4 steps of ``dt``, :data:`WRENCH` turned at each stage, then projected."""
    model = chain.model
    tau = np.zeros(model.n)

    def acceleration(_t, qs, vs):
        R = quat_to_matrix(qs[3:7])
        world = np.r_[R @ WRENCH[:3], R @ WRENCH[3:]]
        kw = {'base_wrench': world, 'link_wrenches': links, 'stabilize': False}
        return chain.acceleration(qs, vs, tau, **kw)

    for _ in range(steps):
        q1, v1 = D.rk4_step(model, q, v, dt, acceleration)
        q, v = chain.project(q1, v1, start=q)
    return q, v


@pytest.mark.parametrize(
    ('method', 'links'), [('aba', None), ('kkt', None), ('aba', {'la4': [0.5, 0, -1, 0, 0.2, 0]})]
)
def test_chain_step_turns_a_base_frame_wrench_at_each_stage(method: str, links) -> None:
    """The chain's step with ``base_wrench_body`` is the reference's step: the compiled step
    (``'aba'``; its projection is not the Python one's, 2e-11 apart after 20 steps) and the
    Python stages of a maximal-coordinate solver (``'kkt'``) or under a link wrench (equal)."""
    chain, q0, v0 = S.tumbling_spatial_loop('revolute')
    chain = D.ClosedChain(chain.model, chain.loops, method=method)
    tau = np.zeros(chain.model.n)
    q, v = q0, v0
    for _ in range(20):
        q, v = chain.step(q, v, tau, 4e-3, base_wrench_body=WRENCH, link_wrenches=links)
    qr, vr = _reference(chain, q0, v0, 4e-3, 20, links)
    assert np.abs(q - qr).max() < 1e-10 and np.abs(v - vr).max() < 1e-10
    # held at the step's start instead (the engine's former step): a first-order error
    qh, vh = q0, v0
    for _ in range(20):
        R = quat_to_matrix(qh[3:7])
        w = np.r_[R @ WRENCH[:3], R @ WRENCH[3:]]
        qh, vh = chain.step(qh, vh, tau, 4e-3, base_wrench=w, link_wrenches=links)
    assert np.abs(vh - vr).max() > 1e-5


def test_engine_with_a_base_frame_wrench_converges_to_the_turning_wrench() -> None:
    """0.5 s of the engine at 1 ms against the reference at 0.1 ms: RK4's order (2.2e-11;
    4.5e-4 when the wrench was held over each step)."""
    chain, q0, v0 = S.tumbling_spatial_loop('revolute')
    model = chain.model
    engine = Engine(
        model, q0, v0, dt_ns=1_000_000, chain=chain, velocity_limits=False,
        conserve_momentum=False,
    )  # fmt: skip
    engine.set_base_wrench(WRENCH, frame='base')
    snap = engine.advance(500)
    q, v = _reference(chain, q0, v0, 1e-4, 5000)
    assert np.abs(np.asarray(snap.v) - v).max() < 1e-9
    assert np.abs(D.difference(model, q, np.asarray(snap.q))).max() < 1e-9


def test_chain_step_checks_the_base_frame_wrench() -> None:
    chain, q, v = S.tumbling_spatial_loop('revolute')
    tau = np.zeros(chain.model.n)
    bad = WRENCH.copy()
    bad[4] = np.nan
    with pytest.raises(ValueError, match=r': base_wrench_body: expected finite values, got nan'):
        chain.step(q, v, tau, 1e-3, base_wrench_body=bad)
    with pytest.raises(ValueError, match=r'base_wrench_body'):
        chain.step(q, v, tau, 1e-3, base_wrench_body=np.ones(5))
    fixed = D.load_urdf(S.fourbar_urdf(), floating_base=False)
    fixed_chain = D.ClosedChain(fixed, [S.fourbar_cut('revolute')])
    with pytest.raises(ValueError, match='base_wrench_body: expected a floating-base model'):
        fixed_chain.step(
            D.neutral(fixed), np.zeros(fixed.nv), np.zeros(fixed.n), 1e-3, base_wrench_body=WRENCH
        )
