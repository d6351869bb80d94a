"""Closed chains from a URDF: URDF+ ``<loop>`` elements read into cut hinges, the engine
stepping a closed chain, and the simulator node publishing one over DDS.

References: the sample cut hinges built in Python (:mod:`ffsim_ros.dynamics.mufti.samples`),
:meth:`ClosedChain.simulate` / :meth:`ClosedChain.step`, the loop constraints and the momentum.
"""

from __future__ import annotations

import math
import time

import numpy as np
import pytest

import ffsim_ros.dynamics as D
from ffsim_ros.dynamics.mufti import samples as S
from ffsim_ros.resources import sample_robot
from ffsim_ros.sim import Engine

PLATFORM = sample_robot('floating_platform')


def _fourbar_plus(loop: str) -> str:
    """The floating four-bar's URDF with ``loop`` (a ``<loop>`` element) added."""
    return S.fourbar_urdf(floating_ground=True).replace('</robot>', loop + '</robot>')


def _fourbar_loop(kind: str, extra: str = '', rpy: str = '0 0 0') -> str:
    c, d = S.FOURBAR['c'], S.FOURBAR['d']
    return (
        f'<loop name="cut" type="{kind}">'
        f'<predecessor link="rocker"><origin xyz="{c} 0 0" rpy="{rpy}"/></predecessor>'
        f'<successor link="ground"><origin xyz="{d} 0 0" rpy="{rpy}"/></successor>{extra}</loop>'
    )


def _accelerations(chain: D.ClosedChain, q, v, seed: int = 3) -> np.ndarray:
    tau = np.random.default_rng(seed).normal(size=chain.model.n)
    return chain.acceleration(q, v, tau)


# ------------------------------------------------------------------------------ the parser
def test_platform_loops_read_back_as_the_sample_cut_hinges() -> None:
    loops = D.loop_closures_from_urdf(PLATFORM)
    reference, _ = S.platform_chain()
    assert [(lp.name, lp.link_a, lp.link_b, lp.kind) for lp in loops] == [
        (lp.name, lp.link_a, lp.link_b, lp.kind) for lp in reference.loops
    ]
    for mine, ref in zip(loops, reference.loops, strict=True):
        for side in ('rotation_a', 'translation_a', 'rotation_b', 'translation_b'):
            assert np.array_equal(getattr(mine, side), getattr(ref, side)), side
    chain = D.ClosedChain(D.load_urdf(PLATFORM), loops)
    _, q, v = S.tumbling_platform()
    assert np.abs(_accelerations(chain, q, v) - _accelerations(reference, q, v)).max() < 1e-12
    # a URDF-only reader sees the tree: the loops are extra elements, the model is the same
    assert D.load_urdf(PLATFORM).nv == reference.model.nv


@pytest.mark.parametrize(
    'loop, kind',
    [
        (_fourbar_loop('revolute', '<axis xyz="0 0 1"/>'), 'revolute'),
        (_fourbar_loop('continuous', '<axis xyz="0 0 2"/>'), 'revolute'),
        # the loop joint frame turned by 90 deg about x: its y axis is the links' z axis
        (_fourbar_loop('revolute', '<axis xyz="0 1 0"/>', rpy=f'{math.pi / 2} 0 0'), 'revolute'),
        (_fourbar_loop('spherical'), 'ball'),
        (_fourbar_loop('ball'), 'ball'),
    ],
)
def test_fourbar_loop_types_match_the_python_cut_hinges(loop: str, kind: str) -> None:
    """Each type gives the same constraint as the sample's cut hinge of that kind: the
    accelerations of a tumbling state agree to 1e-12 (a wrong axis would change them)."""
    reference, q, v = S.tumbling_fourbar(kind)
    loops = D.loop_closures_from_urdf(_fourbar_plus(loop))
    assert len(loops) == 1 and loops[0].kind == kind
    chain = D.ClosedChain(reference.model, loops)
    assert np.abs(_accelerations(chain, q, v) - _accelerations(reference, q, v)).max() < 1e-12
    xi, dxi = chain.constraint_error(q, v)
    assert np.abs(xi).max() < 1e-12 and np.abs(dxi).max() < 1e-12


def test_a_fixed_loop_is_a_weld() -> None:
    reference, q, v = S.tumbling_fourbar('weld')
    from scipy.spatial.transform import Rotation

    # URDF rpy: R = Rz(yaw) Ry(pitch) Rx(roll), scipy's extrinsic 'xyz' angles
    rpy_b = Rotation.from_matrix(reference.loops[0].rotation_b).as_euler('xyz')
    c, d = S.FOURBAR['c'], S.FOURBAR['d']
    rpy = ' '.join(repr(float(x)) for x in rpy_b)
    loop = (
        '<loop name="cut" type="fixed">'
        f'<predecessor link="rocker"><origin xyz="{c} 0 0"/></predecessor>'
        f'<successor link="ground"><origin xyz="{d} 0 0" rpy="{rpy}"/></successor></loop>'
    )
    (lp,) = D.loop_closures_from_urdf(_fourbar_plus(loop))
    assert lp.kind == 'weld'
    chain = D.ClosedChain(reference.model, [lp])
    assert np.abs(_accelerations(chain, q, v) - _accelerations(reference, q, v)).max() < 1e-10


@pytest.mark.parametrize(
    'loop, expected',
    [
        ('<loop type="spherical"/>', 'expected a name'),
        (_fourbar_loop('prismatic'), "loop 'cut': type expected one of"),
        (_fourbar_loop('spherical') * 2, "loop 'cut': defined twice"),
        (
            '<loop name="cut" type="ball"><predecessor link="rocker"/></loop>',
            "loop 'cut': expected one <successor>, got 0",
        ),
        (
            '<loop name="cut" type="ball"><predecessor/><successor link="ground"/></loop>',
            "loop 'cut': <predecessor> expected a link=",
        ),
        (
            '<loop name="cut" type="ball"><predecessor link="rocker"><origin xyz="1 x 0"/>'
            '</predecessor><successor link="ground"/></loop>',
            "loop 'cut' predecessor origin xyz: expected 3 numbers",
        ),
        (
            '<loop name="cut" type="ball"><predecessor link="rocker"><origin xyz="1 nan 0"/>'
            '</predecessor><successor link="ground"/></loop>',
            "loop 'cut' predecessor origin xyz: expected finite numbers",
        ),
        (_fourbar_loop('revolute', '<axis xyz="0 0 0"/>'), "loop 'cut': axis expected a non-zero"),
        (
            '<loop name="cut"><predecessor link="rocker"/><successor link="ground"/></loop>',
            "loop 'cut': type expected one of",
        ),
        (
            '<loop name="cut" type="ball"><predecessor link="rocker"/><predecessor link="crank"/>'
            '<successor link="ground"/></loop>',
            "loop 'cut': expected one <predecessor>, got 2",
        ),
    ],
)
def test_malformed_loops_are_refused_by_name(loop: str, expected: str) -> None:
    with pytest.raises(ValueError) as info:
        D.loop_closures_from_urdf(_fourbar_plus(loop))
    assert expected in str(info.value)


def test_a_loop_on_a_missing_link_or_within_one_body_is_refused_by_the_chain() -> None:
    text = _fourbar_plus(_fourbar_loop('ball').replace('link="ground"', 'link="moon"'))
    with pytest.raises(ValueError, match='moon'):
        D.ClosedChain(D.load_urdf(text), D.loop_closures_from_urdf(text))
    text = _fourbar_plus(_fourbar_loop('ball').replace('link="ground"', 'link="rocker"'))
    with pytest.raises(ValueError, match='same body'):
        D.ClosedChain(D.load_urdf(text), D.loop_closures_from_urdf(text))


def test_a_tree_has_no_loops() -> None:
    assert D.loop_closures_from_urdf(sample_robot('ffsim_servicer_7dof')) == ()


# ------------------------------------------------------------------------------ the engine
def _platform() -> tuple[D.Model, D.ClosedChain, np.ndarray, np.ndarray]:
    model = D.load_urdf(PLATFORM)
    chain = D.ClosedChain(model, D.loop_closures_from_urdf(PLATFORM))
    _, q, v = S.tumbling_platform()
    return model, chain, q, 0.3 * v


def _closure(chain: D.ClosedChain, q, v) -> float:
    xi, dxi = chain.constraint_error(q, v)
    return float(max(np.abs(xi).max(), np.abs(dxi).max()))


def test_engine_steps_are_the_chain_steps_and_keep_loops_and_momentum() -> None:
    model, chain, q, v = _platform()
    engine = Engine(model, q, v, dt_ns=1_000_000, chain=chain, velocity_limits=False)
    start = engine.snapshot()
    for _ in range(50):
        snap = engine.advance(10)
    _, Q, V = chain.simulate(q, v, np.zeros(model.n), 0.5, 1e-3)
    assert np.abs(snap.q - Q[-1]).max() < 1e-12 and np.abs(snap.v - V[-1]).max() < 1e-12
    assert _closure(chain, snap.q, snap.v) < 1e-12
    assert np.abs(np.array(snap.momentum) - np.array(start.momentum)).max() < 1e-12
    assert engine.health.checked and not engine.health.warnings
    assert np.abs(snap.v[6:]).max() > 0.05  # it moved


def test_engine_assembles_the_states_it_is_given() -> None:
    model, chain, q, v = _platform()
    rng = np.random.default_rng(5)
    q_off = q.copy()
    q_off[7:] += 0.05 * rng.normal(size=model.n)
    v_off = v + 0.1 * rng.normal(size=model.nv)
    assert _closure(chain, q_off, v_off) > 1e-3
    engine = Engine(model, q_off, v_off, dt_ns=1_000_000, chain=chain)
    assert _closure(chain, engine.snapshot().q, engine.snapshot().v) < 1e-12
    # the base pose is kept (to the rounding of the quaternion's renormalization, whose last
    # bit depends on the CPU's summation order: 1.4e-17 on an AMD EPYC, 0 on a Xeon)
    assert np.abs(engine.snapshot().q[:7] - q_off[:7]).max() <= 4 * np.finfo(float).eps
    snap = engine.set_state(q_off, v_off)
    assert _closure(chain, snap.q, snap.v) < 1e-12
    far = q.copy()
    far[7:] = 40.0  # legs wound far off (many turns): still closable
    snap = engine.set_state(far, np.zeros(model.nv))
    assert _closure(chain, snap.q, snap.v) < 1e-12


def test_engine_with_a_body_frame_base_wrench_steps_like_the_chain() -> None:
    model, chain, q, v = _platform()
    engine = Engine(model, q, v, dt_ns=1_000_000, chain=chain, velocity_limits=False)
    w = np.array([1.0, -2.0, 0.5, 0.3, 0.2, -0.4])
    engine.set_base_wrench(w, frame='base')
    snap = engine.advance(20)
    qr, vr = q, v
    for _ in range(20):  # (turned at each RK4 stage: test_closed_chain_body_wrench.py)
        qr, vr = chain.step(qr, vr, np.zeros(model.n), 1e-3, base_wrench_body=w)
    assert np.abs(snap.q - qr).max() < 1e-12 and np.abs(snap.v - vr).max() < 1e-12
    assert _closure(chain, snap.q, snap.v) < 1e-12


def test_braking_drives_keep_the_loops_closed() -> None:
    """Efforts far above what the 1 rad/s drives allow: the joints reach their speed limit,
    the drives brake, and the state stays on the manifold."""
    model, chain, q, v = _platform()
    engine = Engine(model, q, 3.0 * v, dt_ns=1_000_000, chain=chain, velocity_limits=True)
    engine.command_efforts(np.full(model.n, 1.0))
    fastest = 0.0
    for k in range(100):
        snap = engine.advance(10)
        assert _closure(chain, snap.q, snap.v) < 1e-9  # 9e-3 without the projection
        if k >= 50:
            fastest = max(fastest, float(np.abs(snap.v[6:]).max()))
    assert not snap.fault
    assert np.abs(3.0 * v[6:]).max() > 1.2  # started beyond the 1 rad/s limits
    # braked to them; the projection after braking may push a coupled joint a little beyond
    # (measured: 1.08 rad/s at the 1 rad/s limit)
    assert fastest < 1.15


@pytest.mark.parametrize(('scale', 'conserve'), [(1.0, True), (7 / 6, True), (1.0, False)])
def test_a_batch_reaching_a_speed_limit_equals_single_steps(
    scale: float, conserve: bool, monkeypatch
) -> None:
    """Efforts carrying a joint to its drive's threshold within a batch: the engine keeps the
    batch's steps before it (``JointLimits.quiet_prefix``) and takes the rest one at a time,
    braking; the states and the efforts published equal those of single steps, bit for bit
    (with and without the momentum projection)."""
    from ffsim_ros.sim import JointLimits

    model, chain, q, v = _platform()
    prefixes = []
    quiet_prefix = JointLimits.quiet_prefix

    def spy(self, tau, Q, V):
        prefixes.append(quiet_prefix(self, tau, Q, V))
        return prefixes[-1]

    monkeypatch.setattr(JointLimits, 'quiet_prefix', spy)
    tau = 0.5 * np.sign(v[6:])  # the 1 N m drives' threshold: 0.5 rad/s
    batched, single = (
        Engine(model, q, scale * v, dt_ns=1_000_000, chain=chain, conserve_momentum=conserve)
        for _ in range(2)
    )
    batched.command_efforts(tau)
    single.command_efforts(tau)
    for _ in range(10):
        a = batched.advance(10)
        for _ in range(10):
            b = single.advance(1)
        assert np.array_equal(a.q, b.q) and np.array_equal(a.v, b.v)
        assert np.array_equal(a.effort, b.effort)
    assert any(0 < p < 10 for p in prefixes), prefixes  # a batch cut where a limit acts
    assert np.abs(a.v[6:]).max() > 0.99  # at the 1 rad/s limits, braked
    assert _closure(chain, a.q, a.v) < 1e-12


def test_what_a_closed_chain_engine_refuses() -> None:
    from ffsim_ros.scene import Gripper, Scene
    from ffsim_ros.sim import TargetWorld

    model, chain, q, v = _platform()
    world = TargetWorld(Scene(model, gripper=Gripper('platform'), dt=1e-3, q=q, v=v), ())
    engine = Engine(model, q, v, dt_ns=1_000_000, chain=chain, world=world)
    with pytest.raises(ValueError, match='not supported with a closed chain'):
        engine.change_world(lambda w: None)
    with pytest.raises(ValueError, match="integrator: expected 'rk4' with a closed chain"):
        Engine(model, q, v, dt_ns=1_000_000, chain=chain, integrator='euler')
    other = D.load_urdf(PLATFORM)
    with pytest.raises(ValueError, match="chain: expected loop closures on the engine's model"):
        Engine(other, q, v, dt_ns=1_000_000, chain=chain)


# ----------------------------------------------------------------------- the node over DDS
def _platform_joint_positions(model: D.Model) -> list[float]:
    q = D.neutral(model)
    for leg, angles in S.PLATFORM_LEGS.items():
        for k, angle in enumerate(angles):
            q[model.joint_q_slice(f'{leg}j{k + 1}')] = angle
    return [float(x) for x in q[7:]]


@pytest.mark.ros
def test_simulator_publishes_a_closed_chain_over_dds(
    ros_process, ros_node, ros_executor, wait_until
) -> None:
    """The sample floating platform tumbling in the node: every published state (joint_states
    with the base_odom of the same stamp) closes both loops to 1e-9, and the momentum
    holds to 1e-9."""
    from nav_msgs.msg import Odometry
    from sensor_msgs.msg import JointState
    from std_msgs.msg import Float64MultiArray

    model, chain, _, _ = _platform()
    msgs: dict[str, list] = {'js': [], 'odom': [], 'mom': []}
    node = ros_node('probe')
    ros_executor.add_node(node)
    subs = [
        node.create_subscription(JointState, 'joint_states', msgs['js'].append, 1000),
        node.create_subscription(Odometry, 'base_odom', msgs['odom'].append, 1000),
        node.create_subscription(Float64MultiArray, 'momentum', msgs['mom'].append, 1000),
    ]
    positions = _platform_joint_positions(model)
    sim = ros_process(
        'ffsim_ros.simulator',
        ros_args=[
            '-p', f'robot_file:={PLATFORM}',
            '-p', 'real_time_factor:=2.0',
            '-p', f'initial_joint_positions:={positions}',
            '-p', 'initial_base_twist:=[0.0, 0.0, 0.0, 0.4, -0.3, 0.5]',
        ],
        name='sim',
    )  # fmt: skip
    assert wait_until(lambda: all(s.get_publisher_count() for s in subs), 60, ros_executor), (
        sim.describe()
    )
    assert wait_until(lambda: len(msgs['js']) > 150 and len(msgs['mom']) > 150, 60, ros_executor)
    odom = {_stamp(m): m for m in msgs['odom']}
    pairs = [(js, odom[_stamp(js)]) for js in msgs['js'] if _stamp(js) in odom]
    assert len(pairs) > 100
    worst = max(_closure(chain, *_state(model, js, od)) for js, od in pairs)
    assert worst < 1e-9, worst
    h = np.array([m.data[:6] for m in msgs['mom']])
    assert np.abs(h - h[0]).max() < 1e-9
    first, last = _state(model, *pairs[0])[0], _state(model, *pairs[-1])[0]
    assert np.abs(first[7:] - last[7:]).max() > 1e-2  # the legs moved


def _stamp(msg) -> int:
    return msg.header.stamp.sec * 1_000_000_000 + msg.header.stamp.nanosec


def _state(model: D.Model, js, odom) -> tuple[np.ndarray, np.ndarray]:
    """(q, v) from joint_states and the base_odom of the same stamp (twist in the base link
    frame, REP 105)."""
    p, o = odom.pose.pose.position, odom.pose.pose.orientation
    quat = np.array([o.x, o.y, o.z, o.w])
    R = D.lie.quat_to_matrix(quat)
    tw = odom.twist.twist
    lin = R @ [tw.linear.x, tw.linear.y, tw.linear.z]
    ang = R @ [tw.angular.x, tw.angular.y, tw.angular.z]
    qb, vb = D.base_state_from_link(model, [p.x, p.y, p.z], quat, lin, ang)
    return np.r_[qb, js.position], np.r_[vb, js.velocity]


_SCENARIO = f"""dt: 0.001
robot:
  urdf: {PLATFORM}
  gripper: {{link: platform}}
targets:
  - name: client
    shape: {{type: sphere, radius: 0.2}}
    mass: 40.0
    inertia: [[0.5, 0.0, 0.0], [0.0, 0.7, 0.0], [0.0, 0.0, 0.8]]
    position: [4.0, 0.0, 0.0]
"""


@pytest.mark.ros
@pytest.mark.parametrize(
    'case, node, expected',
    [
        ('tree only', 'ffsim_ros.reactionless_controller', '): expected a tree, got a robot'),
        ('missing link', 'ffsim_ros.simulator', '): invalid loop closure'),
        ('integrator', 'ffsim_ros.simulator', "integrator: expected 'rk4' with loop closures"),
        ('targets', 'ffsim_ros.simulator', 'scenario: expected no targets with loop closures'),
        (  # every value within its limits, the assembly moves j3 from -1.5 to -2.07
            'assembled beyond a limit',
            'ffsim_ros.simulator',
            "initial_joint_positions: expected a start whose assembly onto the loops ['cut'] "
            'keeps every joint within its position limits (position_limits is on), got joints '
            'moved beyond them -- j3: asked -1.5, assembled -2.06',
        ),
    ],
)
def test_nodes_refuse_what_they_cannot_run_with_exit_2(
    ros_process, tmp_path, case: str, node: str, expected: str
) -> None:
    path, extra = PLATFORM, []
    if case == 'missing link':
        path = tmp_path / 'bad.urdf'
        text = PLATFORM.read_text()
        path.write_text(text.replace('<successor link="platform">', '<successor link="moon">', 1))
    elif case == 'integrator':
        extra = ['-p', 'integrator:=euler']
    elif case == 'targets':
        scenario = tmp_path / 'targets.yaml'
        scenario.write_text(_SCENARIO)
        extra = ['-p', f'scenario:={scenario}']
    elif case == 'assembled beyond a limit':
        path = tmp_path / 'fourbar.urdf'
        text = _fourbar_plus(_fourbar_loop('revolute', '<axis xyz="0 0 1"/>'))
        j3 = text.index('<joint name="j3"')
        path.write_text(
            text[:j3] + text[j3:].replace('lower="-10" upper="10"', 'lower="-1.6" upper="-1.4"', 1)
        )
        extra = ['-p', 'position_limits:=true', '-p', 'initial_joint_positions:=[1.2,-0.9,-1.5]']
    proc = ros_process(node, ros_args=['-p', f'robot_file:={path}', *extra], name='node')
    deadline = time.monotonic() + 60
    while proc.is_running() and time.monotonic() < deadline:
        time.sleep(0.1)  # waiting for the process to exit, not for DDS
    assert proc.returncode == 2, proc.describe()
    assert expected in proc.stderr(), proc.describe()
    if expected.startswith(')'):  # the parameter named, with the file
        assert f'robot_file ({path})' in proc.stderr(), proc.describe()
