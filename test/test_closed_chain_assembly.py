"""Assembly of closed chains near the joint values asked, the simulator's start checked against
the position limits after it, and the momentum projection following ``conserve_momentum``.

References: the loop constraints (``ClosedChain.constraint_error``), the joint values asked
and the URDF limits; the momentum ``[P; L_O]`` of ``D.momentum``.
"""

from __future__ import annotations

import numpy as np
import pytest

import ffsim_ros.dynamics as D
from ffsim_ros.dynamics.mufti import samples as S
from ffsim_ros.node_support.common import ParameterValueError
from ffsim_ros.node_support.initial_state import initial_state
from ffsim_ros.resources import sample_robot
from ffsim_ros.sim import Engine

TURN = 2.0 * np.pi


def _crank(k: int, limits: str) -> str:
    return (
        f'<link name="c{k}"><inertial><origin xyz="0.25 0 0"/><mass value="1"/>'
        '<inertia ixx="0.001" iyy="0.02" izz="0.02" ixy="0" ixz="0" iyz="0"/></inertial></link>'
        f'<joint name="crank{k}" type="revolute"><parent link="base"/><child link="c{k}"/>'
        f'<origin xyz="{0.6 * (k - 1)} 0 0"/><axis xyz="0 0 1"/>'
        f'<limit {limits} effort="1000" velocity="1000"/></joint>'
    )


def parallelogram3(crank3_limits: str = 'lower="-100" upper="100"') -> str:
    """A floating 3-crank parallelogram (cranks 0.5 m, 0.6 m apart; the coupler hangs on
    crank 1, cranks 2 and 3 close onto it by revolute loops): planar, overconstrained."""
    loops = ''.join(
        f'<loop name="loop{k}" type="revolute"><predecessor link="c{k}"><origin xyz="0.5 0 0"/>'
        f'</predecessor><successor link="cp"><origin xyz="{0.6 * (k - 1)} 0 0"/></successor>'
        '<axis xyz="0 0 1"/></loop>'
        for k in (2, 3)
    )
    return (
        '<robot name="parallelogram"><link name="base"><inertial><mass value="10"/>'
        '<inertia ixx="0.5" iyy="0.6" izz="0.7" ixy="0" ixz="0" iyz="0"/></inertial></link>'
        + _crank(1, 'lower="-100" upper="100"')
        + _crank(2, 'lower="-100" upper="100"')
        + _crank(3, crank3_limits)
        + '<link name="cp"><inertial><origin xyz="0.6 0 0"/><mass value="2"/>'
        '<inertia ixx="0.002" iyy="0.1" izz="0.1" ixy="0" ixz="0" iyz="0"/></inertial></link>'
        '<joint name="coupler" type="revolute"><parent link="c1"/><child link="cp"/>'
        '<origin xyz="0.5 0 0"/><axis xyz="0 0 1"/>'
        '<limit lower="-100" upper="100" effort="1000" velocity="1000"/></joint>'
        + loops
        + '</robot>'
    )


def _chain(urdf: str) -> D.ClosedChain:
    return D.ClosedChain(D.load_urdf(urdf), D.loop_closures_from_urdf(urdf))


def _closed(chain: D.ClosedChain, q: np.ndarray) -> float:
    return float(np.abs(chain.constraint_error(q, np.zeros(chain.model.nv))[0]).max())


@pytest.mark.filterwarnings('ignore::ffsim_ros.dynamics.mufti.RedundantConstraintWarning')
def test_assembly_keeps_each_angle_within_half_a_turn_of_the_value_asked() -> None:
    """A crank pointing backwards (crank3 = pi, the others at 0.7) was closed five turns
    away: crank3 = 32.1159 rad, an undamped minimum-norm step near the rank-deficient
    Jacobian. The damped steps and the whole turns give back a configuration whose every
    angle is the equivalent nearest the value asked."""
    chain = _chain(parallelogram3())
    model = chain.model
    assert model.joint_names == ('crank1', 'coupler', 'crank2', 'crank3')
    for asked in ([0.7, -0.7, 0.7, 3.14159], [0.7, -0.7, 0.7, -2.0], [0.3, -0.5, 1.0, 0.1]):
        q = D.neutral(model)
        q[7:] = asked
        qa, _ = chain.assemble(q)
        assert _closed(chain, qa) < 1e-13
        assert np.all(np.abs(qa[7:] - asked) <= np.pi), (asked, qa[7:])
        assert np.array_equal(qa[:7], q[:7])  # the base kept


@pytest.mark.filterwarnings('ignore::ffsim_ros.dynamics.mufti.RedundantConstraintWarning')
def test_assembly_keeps_a_start_within_the_limits_there() -> None:
    """crank3 limited to [-3.2, 3.2] and asked 3.14159: assembled within the limits (the
    simulator then wound the mechanism from crank3 = 32.1 at its hard stop)."""
    chain = _chain(parallelogram3('lower="-3.2" upper="3.2"'))
    q = D.neutral(chain.model)
    q[7:] = [0.7, -0.7, 0.7, 3.14159]
    qa, _ = chain.assemble(q)
    assert _closed(chain, qa) < 1e-13
    assert np.all((qa[7:] >= chain.model.lower) & (qa[7:] <= chain.model.upper)), qa[7:]


def test_whole_turns_bring_the_joints_within_their_limits() -> None:
    """The platform's legs asked at 40 rad (limits [-10, 10]): each joint assembled at the
    equivalent within its limits nearest 40 rad (one more turn would pass the upper limit);
    before, the assembly left them at 31-46 rad."""
    urdf = sample_robot('floating_platform').read_text()
    chain = _chain(urdf)
    model = chain.model
    _, q, v = S.tumbling_platform()
    far = q.copy()
    far[7:] = 40.0
    qa, va = chain.assemble(far, v)
    assert _closed(chain, qa) < 1e-13
    assert np.all(model.upper == 10.0) and np.all(model.lower == -10.0)
    assert np.all((qa[7:] >= -10.0) & (qa[7:] <= 10.0)), qa[7:]
    assert np.all(qa[7:] + TURN > 10.0), qa[7:]
    assert np.array_equal(qa[:7], far[:7])  # the base kept
    assert np.abs(chain.constraint_error(qa, va)[1]).max() < 1e-12


def _fourbar_values(positions: list[float], position_limits: bool) -> dict:
    return {
        'physics_rate_hz': 1000.0,
        'integrator': 'rk4',
        'initial_joint_positions': positions,
        'initial_joint_velocities': [],
        'position_limits': position_limits,
        'velocity_limits': False,
        'initial_base_position': [0.0, 0.0, 0.0],
        'initial_base_orientation': [0.0, 0.0, 0.0, 1.0],
        'initial_base_twist': [0.0] * 6,
    }


def test_a_start_the_assembly_moves_beyond_a_limit_is_a_parameter_error() -> None:
    """The floating four-bar asked at j1, j2, j3 = 1.2, -0.9, -1.5 with j3 limited to
    [-1.6, -1.4]: every value asked is within its limits, the loop closes with j3 at -2.07.
    With position_limits that start is refused naming the joint, the value asked, the value
    assembled and the limits (it only logged a warning, then the hard stop acted)."""
    c, d = S.FOURBAR['c'], S.FOURBAR['d']
    urdf = S.fourbar_urdf(floating_ground=True)
    j3 = urdf.index('<joint name="j3"')
    end = urdf.index('</joint>', j3)
    narrow = urdf[j3:end].replace('lower="-10" upper="10"', 'lower="-1.6" upper="-1.4"')
    urdf = urdf[:j3] + narrow + urdf[end:]
    urdf = urdf[: urdf.index('</robot>')] + (
        f'<loop name="cut" type="revolute"><predecessor link="rocker"><origin xyz="{c} 0 0"/>'
        f'</predecessor><successor link="ground"><origin xyz="{d} 0 0"/></successor>'
        '<axis xyz="0 0 1"/></loop></robot>'
    )
    model = D.load_urdf(urdf)
    loops = D.loop_closures_from_urdf(urdf)
    assert model.lower[2] == -1.6 and model.upper[2] == -1.4
    with pytest.raises(ParameterValueError) as err:
        initial_state(model, loops, _fourbar_values([1.2, -0.9, -1.5], True))
    text = str(err.value)
    assert text.startswith('initial_joint_positions: expected a start whose assembly onto the')
    assert "['cut']" in text and '(position_limits is on)' in text
    assert 'j3: asked -1.5, assembled -2.06' in text and 'limits [-1.6, -1.4]' in text
    assert 'j1:' not in text and 'j2:' not in text  # within theirs
    # without position_limits the same start runs (the node warns about it)
    chain, q, _ = initial_state(model, loops, _fourbar_values([1.2, -0.9, -1.5], False))
    assert chain is not None and _closed(chain, q) < 1e-13 and q[9] < -1.6


def _about_origin(snapshot) -> np.ndarray:
    """``[P; L_O]`` from a snapshot's ``[P; L_g]`` and CoM."""
    h = np.array(snapshot.momentum, dtype=float)
    h[3:] += np.cross(np.asarray(snapshot.com, dtype=float), h[:3])
    return h


def test_conserve_momentum_switches_the_closed_chain_momentum_projection() -> None:
    """The tumbling platform (no gravity, |h| = 203), 0.5 s at 1 ms: with the momentum
    projection (the default) ``[P; L_O]`` holds to round-off; without it
    (``conserve_momentum=False``, the loops projected alone) it keeps RK4's truncation
    error, the loops still closed."""
    chain, q, v = S.tumbling_platform()
    model = chain.model
    drift = {}
    for conserve in (True, False):
        _, Q, V = chain.simulate(
            q, 3 * v, np.zeros(model.n), 0.5, 1e-3, conserve_momentum=conserve
        )
        h = np.array([D.momentum(model, a, b) for a, b in zip(Q, V, strict=True)])
        drift[conserve] = np.abs(h - h[0]).max()
        assert _closed(chain, Q[-1]) < 1e-13
        if not conserve:  # the Python step (a callable tau) likewise
            _, Qp, Vp = chain.simulate(
                q, 3 * v, lambda *_: np.zeros(model.n), 0.5, 1e-3, conserve_momentum=False
            )
            assert np.abs(Qp - Q).max() < 1e-10 and np.abs(Vp - V).max() < 1e-10
    scale = np.abs(D.momentum(model, q, 3 * v)).max()
    assert drift[True] < 1e-13 * scale  # round-off
    assert 1e-10 < drift[False] < 1e-9 * scale  # RK4's error, 100 times that at least
    assert drift[False] > 100 * drift[True]


def test_the_engine_passes_conserve_momentum_to_the_closed_chain() -> None:
    """The engine projected a closed chain onto the momentum whatever ``conserve_momentum``
    (its startup log said plain RK4): now false gives RK4's momentum drift, true round-off
    (the platform as above; ``[P; L_O]`` from the snapshots' ``[P; L_g]`` and CoM)."""
    chain, q, v = S.tumbling_platform()
    for conserve in (True, False):
        engine = Engine(
            chain.model, q, 3 * v, dt_ns=1_000_000, chain=chain, velocity_limits=False,
            conserve_momentum=conserve,
        )  # fmt: skip
        start = _about_origin(engine.snapshot())
        for _ in range(50):
            snap = engine.advance(10)
        drift = np.abs(_about_origin(snap) - start).max()
        assert drift < 1e-11 if conserve else drift > 1e-10, (conserve, drift)
        assert _closed(chain, snap.q) < 1e-13
