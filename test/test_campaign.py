"""Monte Carlo campaigns (issue 20): the batched closed loop against the single-run loop, run
independence inside a batch, seeded dispersions, failures, bad scenario files."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import ffsim_ros.dynamics as D
from ffsim_ros.campaign.batch import BatchRunner, Campaign, Faults
from ffsim_ros.campaign.dispersions import GOALS, run_rng, sample_inputs
from ffsim_ros.campaign.scenario import Scenario, ScenarioError, load_scenario
from ffsim_ros.control import Gains, ReachSupervisor, ReactionlessController
from ffsim_ros.control.batched import BatchedLaw
from ffsim_ros.control.closed_loop import ClosedLoop, chained_goals
from ffsim_ros.resources import sample_robot

ROBOT = 'ffsim_servicer_7dof'


@pytest.fixture(scope='module')
def model():
    return D.load_urdf(str(sample_robot(ROBOT)))


def scenario(**changes) -> Scenario:
    data = {
        'robot': ROBOT,
        'runs': 3,
        'seed': 11,
        'batch_size': 3,
        'timing': {'settle': 0.2, 'run_goal_timeout': 1.5},
        'goals': {'kind': 'offsets', 'offsets': [[0.08, 0.04, -0.05], [-0.04, 0.03, 0.03]]},
        'dispersions': {
            'joint_positions': {'dist': 'uniform', 'low': -0.05, 'high': 0.05},
            'angular_momentum': {'dist': 'normal', 'std': 0.02},
            'goal_offset': {'dist': 'normal', 'std': 0.01},
        },
    }
    data.update(changes)
    return Scenario.from_dict(data)


# ------------------------------------------------------------------------------ the law
@pytest.mark.parametrize('feedforward', [0.0, 1.0])
@pytest.mark.parametrize('mode', ['reactionless', 'gjm_tracking'])
def test_batched_law_equals_single_law(model, mode, feedforward):
    gains = Gains(rate_feedforward=feedforward)
    law = ReactionlessController(model, 'ee_link', mode=mode, gains=gains)
    batched = BatchedLaw(law)
    rng = np.random.default_rng(4)
    B = 6
    Q = np.stack([D.neutral(model) for _ in range(B)])
    Q[:, 7:] = rng.uniform(-0.6, 0.6, (B, model.n))
    Q[:, 3:7] = rng.normal(size=(B, 4))
    Q[:, 3:7] /= np.linalg.norm(Q[:, 3:7], axis=1, keepdims=True)
    V = rng.normal(scale=0.1, size=(B, model.nv))
    refs = Q[:, 3:7] + rng.normal(scale=0.02, size=(B, 4))
    refs /= np.linalg.norm(refs, axis=1, keepdims=True)
    terms = batched.terms(Q, V)
    targets = terms.position + rng.normal(scale=0.1, size=(B, 3))
    targets[2] = np.nan  # a braking row
    tau = batched.efforts(Q, V, terms, targets, refs if mode == 'reactionless' else None)
    for k in range(B):
        goal = None if k == 2 else targets[k]
        ref = refs[k] if mode == 'reactionless' else None
        out = law.compute(Q[k], V[k], goal, attitude_reference=ref)
        np.testing.assert_allclose(terms.position[k], out.ee_position, rtol=0, atol=1e-14)
        scale = max(1.0, np.abs(out.tau).max())
        np.testing.assert_allclose(tau[k], out.tau, rtol=0, atol=1e-12 * scale)
    if feedforward:  # the feedforward acts (the rows above would agree without it too)
        plain = BatchedLaw(
            ReactionlessController(model, 'ee_link', mode=mode, gains=Gains(rate_feedforward=0))
        )
        held = refs if mode == 'reactionless' else None
        base = plain.efforts(Q, V, terms, targets, held)
        assert np.abs(base - tau).max() > 1e-3 * np.abs(tau).max()
        np.testing.assert_array_equal(base[2], tau[2])  # none on a braking row
    # a row alone gives the same bits as inside the batch
    one = batched.efforts(
        Q[4:5],
        V[4:5],
        batched.terms(Q[4:5], V[4:5]),
        targets[4:5],
        refs[4:5] if mode == 'reactionless' else None,
    )
    np.testing.assert_array_equal(one[0], tau[4])


def test_link_pose_and_jacobian_equals_single_functions(model):
    rng = np.random.default_rng(1)
    Q = np.stack([D.neutral(model)] * 5)
    Q[:, 7:] = rng.uniform(-1, 1, (5, model.n))
    Q[:, :3] = rng.normal(size=(5, 3))
    Q[:, 3:7] = rng.normal(size=(5, 4))
    Q[:, 3:7] /= np.linalg.norm(Q[:, 3:7], axis=1, keepdims=True)
    for link in ('ee_link', model.link_names[3]):
        P, R, J = D.link_pose_and_jacobian(model, Q.reshape(5, 1, -1), link)
        assert P.shape == (5, 1, 3) and R.shape == (5, 1, 3, 3) and J.shape == (5, 1, 6, model.nv)
        for k in range(5):
            p, r = D.link_pose(model, Q[k], link)
            np.testing.assert_allclose(P[k, 0], p, atol=1e-14)
            np.testing.assert_allclose(R[k, 0], r, atol=1e-14)
            np.testing.assert_allclose(J[k, 0], D.link_jacobian(model, Q[k], link), atol=1e-13)
    p1, r1, j1 = D.link_pose_and_jacobian(model, Q[0], 'ee_link')
    assert p1.shape == (3,) and j1.shape == (6, model.nv)


# ------------------------------------------------------------------------ closed loops
def test_batch_equals_single_closed_loops(model):
    s = scenario()
    c = Campaign(s)
    results = {r.index: r for r in BatchRunner(c, range(s.runs))}
    assert sorted(results) == [0, 1, 2]
    t = s.timing
    for index, r in results.items():
        inputs = sample_inputs(s, model, index)
        law = ReactionlessController(model, s.ee_link, mode=s.mode, gains=s.gains)
        settings = dataclasses.replace(s.reach, plan_seed=inputs.plan_seed)
        loop = ClosedLoop(
            ReachSupervisor(law, settings),
            inputs.q0,
            inputs.v0,
            control_dt=t.control_dt,
            physics_dt=t.physics_dt,
        )
        start = loop.ee_position()
        records = [
            loop.run_goal(
                start + o,
                timeout=t.run_goal_timeout,
                settle=t.settle,
                timeout_name='timing.run_goal_timeout',
            )
            for o in inputs.goal_offsets
        ]
        assert not r.failure
        assert len(r.goals) == len(records)
        for g, rec in zip(r.goals, records, strict=True):
            assert g['outcome'] == rec.outcome.value
            assert g['reason'] == rec.reason
            np.testing.assert_allclose(g['goal'], rec.goal, rtol=0, atol=1e-15)
            assert g['time'] == pytest.approx(rec.time, abs=1e-9)
            assert g['error'] == pytest.approx(rec.error, abs=1e-12)
            assert g['max_offset'] == pytest.approx(rec.max_offset, abs=1e-12)
            assert g['final_offset'] == pytest.approx(rec.final_offset, abs=1e-12)
        assert r.t == pytest.approx(loop.t, abs=1e-9)
        np.testing.assert_allclose(r.q, loop.q, rtol=0, atol=1e-12)
        np.testing.assert_allclose(r.v, loop.v, rtol=0, atol=1e-12)
    # the runs differ (the dispersions reach the loop)
    assert np.abs(results[0].q - results[1].q).max() > 1e-3


@pytest.mark.parametrize('paths', [0, 2])
def test_batch_with_planner_and_chained_goals_equals_single_closed_loops(model, paths):
    """Stalls where the supervisor plans (runs handed to their own ReachSupervisor, then back
    to the batch for the next goal) and chained goals: the same as chained_goals on a
    ClosedLoop, to the bit -- with detours only (no loop search, no joint-path search), and
    with the joint-path search first (its worker thread runs only within the supervisor's
    update: deterministic)."""
    s = scenario(
        runs=2,
        seed=4,
        timing={'settle': 0.1, 'run_goal_timeout': 1.2},
        reach={
            'stall_time': 0.15,
            'stall_progress': 0.03,
            'max_plans': 1,
            'max_loop_plans': 0,
            'max_path_plans': paths,
        },
        goals={'kind': 'chained', 'count': 2, 'near': 0.1, 'far': 0.2},
        dispersions={'joint_positions': {'dist': 'uniform', 'low': -0.05, 'high': 0.05}},
    )
    c = Campaign(s)
    results = {r.index: r for r in BatchRunner(c, range(2), batch_size=2)}
    for index, r in results.items():
        inputs = sample_inputs(s, model, index)
        law = ReactionlessController(model, s.ee_link, mode=s.mode, gains=s.gains)
        settings = dataclasses.replace(s.reach, plan_seed=inputs.plan_seed)
        loop = ClosedLoop(ReachSupervisor(law, settings), inputs.q0, inputs.v0)
        records = chained_goals(
            loop, run_rng(s.seed, index, GOALS), 2, near=0.1, far=0.2, timeout=1.2, settle=0.1
        )
        assert [g['plans'] for g in r.goals] == [x.plans for x in records]
        searched = [g['planner_steps'] > 0 for g in r.goals]  # (a path search may be cut)
        assert all(searched) if not paths else any(searched)
        assert all(g['plans'] == 1 for g in r.goals) or paths
        assert [g['planner_steps'] for g in r.goals] == [x.planner_steps for x in records]
        assert [g['outcome'] for g in r.goals] == [x.outcome.value for x in records]
        for g, x in zip(r.goals, records, strict=True):
            np.testing.assert_array_equal(g['goal'], x.goal)
        np.testing.assert_array_equal(r.q, loop.q)
        np.testing.assert_array_equal(r.v, loop.v)


def test_run_alone_equals_run_in_batch():
    s = scenario(
        dispersions={
            'joint_positions': {'dist': 'uniform', 'low': -0.05, 'high': 0.05},
            'mass_scale': {'dist': 'normal', 'mean': 1.0, 'std': 0.05},
            'inertia_scale': {'dist': 'uniform', 'low': 0.9, 'high': 1.1},
            'noise_joint_position': 1e-4,
            'noise_base_rate': 1e-4,
        },
        goals={'kind': 'offsets', 'offsets': [[0.08, 0.04, -0.05]]},
        timing={'settle': 0.1, 'run_goal_timeout': 0.8},
    )
    c = Campaign(s)
    batch = {r.index: r for r in BatchRunner(c, range(4), batch_size=3)}
    alone = next(iter(BatchRunner(c, [2], batch_size=1)))
    r = batch[2]
    np.testing.assert_array_equal(alone.q, r.q)
    np.testing.assert_array_equal(alone.v, r.v)
    assert alone.goals == r.goals
    assert alone.metrics == r.metrics
    assert r.inputs.noisy and r.inputs.model_error
    assert np.abs(batch[1].q - batch[2].q).max() > 1e-4


def test_failed_runs_are_reported_and_the_rest_completes():
    s = scenario(
        goals={'kind': 'offsets', 'offsets': [[0.08, 0.04, -0.05]]},
        timing={'settle': 0.1, 'run_goal_timeout': 0.8},
    )
    c = Campaign(s)
    clean = {r.index: r for r in BatchRunner(c, range(4), batch_size=4)}
    faults = Faults(nan_state={1: 0.3}, law_error={2: 0.5})
    hit = {r.index: r for r in BatchRunner(c, range(4), batch_size=4, faults=faults)}
    assert sorted(hit) == [0, 1, 2, 3]
    assert hit[1].failure.startswith('non-finite state in the control period from t = 0.3')
    assert 'controller error at t = 0.500 s' in hit[2].failure
    assert 'injected law error in run 2' in hit[2].failure
    for k in (1, 2):
        assert hit[k].goals[-1]['outcome'] == 'failed' and not hit[k].reached
        assert np.isfinite(hit[k].q).all() and np.isfinite(hit[k].v).all()
    for k in (0, 3):
        assert not hit[k].failure
        np.testing.assert_array_equal(hit[k].q, clean[k].q)
        assert hit[k].goals == clean[k].goals


def test_an_exception_of_the_batched_efforts_fails_only_its_run():
    """The batched law raising in the efforts (a singular matrix) ended the whole campaign;
    now the run at fault fails with the reason and the others give the same bits."""
    s = scenario(
        goals={'kind': 'offsets', 'offsets': [[0.08, 0.04, -0.05]]},
        timing={'settle': 0.1, 'run_goal_timeout': 0.8},
    )
    c = Campaign(s)
    clean = {r.index: r for r in BatchRunner(c, range(4), batch_size=4)}
    runner = BatchRunner(c, range(4), batch_size=4)
    efforts = c.batched.efforts

    def faulty(Qm, *args):
        for k, slot in enumerate(runner.slots):
            hit = slot is not None and slot.inputs.index == 2 and runner.T[k] >= 0.5
            if hit and np.any(np.all(Qm == runner.Q[k], axis=1)):
                raise np.linalg.LinAlgError('Singular matrix')
        return efforts(Qm, *args)

    c.batched.efforts = faulty
    try:
        hit = {r.index: r for r in runner}
    finally:
        del c.batched.efforts
    assert sorted(hit) == [0, 1, 2, 3]
    assert "controller error at t = 0.500 s: LinAlgError('Singular matrix')" in hit[2].failure
    assert hit[2].goals[-1]['outcome'] == 'failed'
    for k in (0, 1, 3):
        assert not hit[k].failure
        np.testing.assert_array_equal(hit[k].q, clean[k].q)
        np.testing.assert_array_equal(hit[k].v, clean[k].v)
        assert hit[k].goals == clean[k].goals
        assert hit[k].metrics == clean[k].metrics


@pytest.mark.filterwarnings('ignore:overflow:RuntimeWarning')  # (1e300 overflows, as expected)
def test_a_huge_momentum_fails_the_runs_instead_of_the_campaign():
    """An angular momentum of 1e50 made the law's solve singular (and a std of 1e300 a NaN
    attitude): the campaign crashed. Each run now ends with the controller's error."""
    for value in (
        {'dist': 'fixed', 'value': [0.0, 0.0, 1e50]},
        {'dist': 'normal', 'std': 1e300},
    ):
        s = scenario(
            dispersions={'angular_momentum': value},
            goals={'kind': 'offsets', 'offsets': [[0.08, 0.04, -0.05]]},
            timing={'settle': 0.1, 'run_goal_timeout': 0.3},
        )
        results = list(BatchRunner(Campaign(s), range(3), batch_size=3))
        assert len(results) == 3
        for r in results:
            assert r.failure.startswith(('controller error at t = ', 'non-finite state'))


# --------------------------------------------------------------------------- dispersions
def test_dispersions_reproducible_from_the_seed(model):
    s = scenario(
        dispersions={
            'joint_positions': {'dist': 'uniform', 'low': -0.1, 'high': 0.2},
            'base_attitude': {'dist': 'normal', 'std': [0.01, 0.02, 0.03]},
            'linear_momentum': {'dist': 'normal', 'mean': 0.5, 'std': 0.1},
            'angular_momentum': {'dist': 'normal', 'std': 0.05},
            'mass_scale': {'dist': 'normal', 'mean': 1.0, 'std': 0.05},
        }
    )
    a, b = sample_inputs(s, model, 7), sample_inputs(s, model, 7)
    np.testing.assert_array_equal(a.q0, b.q0)
    np.testing.assert_array_equal(a.v0, b.v0)
    assert a.columns == b.columns and a.plan_seed == b.plan_seed
    other = sample_inputs(s, model, 8)
    assert not np.array_equal(a.q0, other.q0)
    assert a.plan_seed != other.plan_seed
    assert not np.array_equal(a.q0, sample_inputs(s.with_changes(seed=12), model, 7).q0)
    # the batch size and run count do not enter a run's inputs
    np.testing.assert_array_equal(
        a.v0, sample_inputs(s.with_changes(runs=50, batch_size=9), model, 7).v0
    )
    # the drawn momentum is the initial state's momentum about the CoM
    h = D.momentum(model, a.q0, a.v0, about='com')
    cols = a.columns
    drawn = [cols[f'in.{p}.{x}'] for p in ('linear_momentum', 'angular_momentum') for x in 'xyz']
    np.testing.assert_allclose(h, drawn, atol=1e-12)
    # the drawn attitude is the initial base attitude (nominal: identity)
    r = [cols[f'in.base_attitude.{x}'] for x in 'xyz']
    np.testing.assert_allclose(D.lie.quat_log(a.q0[3:7]), r, atol=1e-14)


def test_dispersion_statistics(model):
    s = scenario(
        dispersions={
            'joint_positions': {'dist': 'uniform', 'low': -0.1, 'high': 0.2},
            'linear_momentum': {'dist': 'normal', 'mean': [0.5, 0.0, -1.0], 'std': 0.1},
            'mass_scale': 1.02,
        }
    )
    N = 1500
    runs = [sample_inputs(s, model, i) for i in range(N)]
    joint = model.joint_names[0]
    u = np.array([r.columns[f'in.joint_positions.{joint}'] for r in runs])
    assert u.min() >= -0.1 and u.max() <= 0.2
    # uniform: mean 0.05, std 0.3 / sqrt(12); 5-sigma bounds on the sample mean
    assert abs(u.mean() - 0.05) < 5 * 0.3 / np.sqrt(12 * N)
    assert abs(u.std() - 0.3 / np.sqrt(12)) < 0.1 * 0.3 / np.sqrt(12)
    px = np.array([r.columns['in.linear_momentum.x'] for r in runs])
    pz = np.array([r.columns['in.linear_momentum.z'] for r in runs])
    assert abs(px.mean() - 0.5) < 5 * 0.1 / np.sqrt(N)
    assert abs(pz.mean() + 1.0) < 5 * 0.1 / np.sqrt(N)
    assert abs(px.std() - 0.1) < 0.01
    assert abs(np.corrcoef(px, u)[0, 1]) < 5 / np.sqrt(N)
    assert all(r.columns['in.mass_scale.' + model.body_names[0]] == 1.02 for r in runs[:5])
    np.testing.assert_array_equal(runs[0].mass_scale, np.full(len(model.body_names), 1.02))


# ------------------------------------------------------------------------ bad scenarios
BAD = [
    ({'runs': 0}, 'runs: expected an integer >= 1, got 0'),
    ({'runs': 2.5}, 'runs: expected an integer >= 1'),
    ({'mode': 'fast'}, 'mode: expected one of'),
    ({'colour': 'red'}, "unknown keys ['colour']"),
    ({'goals': {'kind': 'spiral'}}, 'goals.kind: expected one of'),
    ({'goals': {'kind': 'capture'}}, 'capture (a tumbling target, issue 17) is not implemented'),
    (
        {'goals': {'kind': 'offsets', 'offsets': [[0.1, 0.2]]}},
        'goals.offsets[0]: expected [x, y, z]',
    ),
    ({'goals': {'kind': 'chained', 'near': 0.5, 'far': 0.1}}, 'expected 0 < near <= far'),
    ({'timing': {'control_dt': 0.0105}}, 'control_dt (0.0105) must be a whole multiple'),
    ({'timing': {'physics_dt': -1.0}}, 'timing.physics_dt: expected a value > 0'),
    # the default output folder is campaign_<name>: this one was outside the working directory
    ({'name': '../../escaped'}, 'name: expected a name without path separators'),
    # bounds: a control period of 1e300 s looped 1e303 times; 1e9 chained goals
    ({'timing': {'control_dt': 1e300}}, 'timing.control_dt: expected at most 1 s, got 1e+300'),
    ({'timing': {'physics_dt': 2.0}}, 'timing.physics_dt: expected at most 1 s, got 2.0'),
    ({'goals': {'kind': 'chained', 'count': 1e9}}, 'goals.count: expected an integer <= 10000'),
    # a width high - low beyond a float: an OverflowError of numpy's draw (a traceback)
    (
        {'dispersions': {'angular_momentum': {'dist': 'uniform', 'low': -1e308, 'high': 1e308}}},
        'dispersions.angular_momentum: expected a finite width high - low, got low -1e+308',
    ),
    ({'gains': {'kp_tsk': 1.0}}, "gains: unknown fields ['kp_tsk']"),
    # mixed key types (YAML {1: x, foo: y}): named, not a TypeError from sorting them
    ({'gains': {1: 1.0, 'kp_tsk': 1.0}}, "gains: unknown fields [1, 'kp_tsk']"),
    ({'dispersions': {1: 1.0, 'mass': 1.0}}, 'dispersions: unknown parameter 1'),
    ({'dispersions': {'mass': 1.0}}, "dispersions: unknown parameter 'mass'"),
    ({'dispersions': {'mass_scale': {'dist': 'cauchy'}}}, 'dispersions.mass_scale.dist'),
    ({'dispersions': {'joint_rates': {'dist': 'normal'}}}, "a normal distribution needs 'std'"),
    ({'dispersions': {'joint_rates': {'dist': 'normal', 'std': -1}}}, 'std: expected values >= 0'),
    ({'dispersions': {'joint_rates': {'dist': 'uniform', 'low': 1, 'high': 0}}}, 'low <= high'),
    ({'dispersions': {'joint_rates': float('nan')}}, 'expected a finite number, got nan'),
    ({'dispersions': {'joint_rates': 'nan'}}, "expected a finite number, got 'nan'"),
    ({'dispersions': {'joint_rates': 'fast'}}, "expected a finite number, got 'fast'"),
    # every number field is checked as one, named by its key path (numpy errors, a boolean
    # taken as 1, a list unhashable before)
    ({'gains': {'kp_task': 'abc'}}, "gains.kp_task: expected a finite number, got 'abc'"),
    ({'gains': {'kp_task': None}}, 'gains.kp_task: expected a finite number, got None'),
    ({'gains': {'kp_task': [1, 2]}}, 'gains.kp_task: expected a finite number, got [1, 2]'),
    ({'gains': {'kp_task': True}}, 'gains.kp_task: expected a finite number, got True (a boolean'),
    ({'reach': {'goal_timeout': True}}, 'reach.goal_timeout: expected a finite number, got True'),
    ({'reach': {'max_plans': True}}, 'reach.max_plans: expected an integer, got True (a boolean'),
    (
        {'reach': {'plan_max_steps': 2.5}},
        'plan_max_steps: expected an integer, got 2.5 (not a whole',
    ),
    ({'reach': {'plan_max_steps': '1.5e0'}}, "expected an integer, got '1.5e0' (not a whole"),
    ({'timing': {'settle': 'yes'}}, "timing.settle: expected a finite number, got 'yes'"),
    ({'runs': True}, 'runs: expected an integer >= 1, got True (a boolean'),
    ({'seed': 1.5}, 'seed: expected an integer >= 0, got 1.5 (not a whole number)'),
    ({'batch_size': 10**9}, 'batch_size: expected an integer <= 10000000, got 1000000000'),
    (
        {'dispersions': {'mass_scale': {'dist': ['normal']}}},
        "dispersions.mass_scale.dist: expected one of ['fixed', 'normal', 'uniform'], got ['norm",
    ),
]


def test_numbers_yaml_reads_as_strings_are_numbers():
    """YAML 1.1 reads ``1e-3`` or ``1e308`` (no dot) as strings: they are the numbers."""
    s = scenario(
        timing={'physics_dt': '1e-3', 'control_dt': '1e-2'},
        reach={'goal_timeout': '1e2'},
        gains={'kp_task': '1e1'},
    )
    assert (s.timing.physics_dt, s.timing.control_dt) == (1e-3, 1e-2)
    assert (s.reach.goal_timeout, s.gains.kp_task) == (100.0, 10.0)


def test_integral_floats_are_the_integers():
    """An integer field takes a float that is exactly an integer (``1e3``, a string to YAML
    1.1, or ``2.0``): refused before as "expected an integer, got 1000.0"."""
    s = scenario(reach={'plan_max_steps': '1e3', 'max_plans': 2.0}, runs=4.0, seed='1e1')
    assert (s.reach.plan_max_steps, s.reach.max_plans, s.runs, s.seed) == (1000, 2, 4, 10)
    assert all(type(v) is int for v in (s.reach.plan_max_steps, s.reach.max_plans, s.runs))


def test_batch_is_at_most_the_runs():
    """A batch larger than the runs is cut to them (a batch of 10**9 slots for 2 runs tried to
    allocate 67 GiB); the results are those of any batch."""
    s = scenario(
        runs=2,
        batch_size=1000,
        goals={'kind': 'offsets', 'offsets': [[0.08, 0.04, -0.05]]},
        timing={'settle': 0.1, 'run_goal_timeout': 0.3},
    )
    c = Campaign(s)
    assert BatchRunner(c, range(2)).B == 2
    assert BatchRunner(c, range(2), batch_size=500).B == 2
    wide = {r.index: r for r in BatchRunner(c, range(2))}
    alone = next(iter(BatchRunner(c, [1], batch_size=1)))
    np.testing.assert_array_equal(wide[1].q, alone.q)


def test_goals_inside_the_base_are_rejected_as_by_the_node():
    """The campaign's controller is built as the node builds it: a goal at the base's centre is
    rejected naming the base's collision shape (it was accepted and pursued), a goal farther
    than the reach's position tolerance outside it is given; the law's shapes are those of the
    node's ``base_collision_shapes``."""
    from ffsim_ros.node_support.controller_watch import base_collision_shapes

    probe = Campaign(scenario(dispersions={}, runs=1, batch_size=1))
    q0 = probe.run_inputs(0).q0
    ee = D.link_pose(probe.model, q0, 'ee_link')[0]
    inside = q0[:3] - ee  # the base's CoM: inside its box
    near = [0.08, 0.04, -0.05]
    s = scenario(
        runs=1,
        batch_size=1,
        dispersions={},
        goals={'kind': 'offsets', 'offsets': [inside.tolist(), near]},
        timing={'settle': 0.1, 'run_goal_timeout': 0.3},
    )
    c = Campaign(s)
    node_shapes, _ = base_collision_shapes(sample_robot(ROBOT).read_text(), c.model, 'robot_file')
    assert [(a.link, a.shape) for a in c.shapes] == [(b.link, b.shape) for b in node_shapes]
    assert c.law.base_shapes is not None
    assert c.law.collision_margin == s.reach.position_tolerance
    (r,) = BatchRunner(c, [0], batch_size=1)
    first, second = r.goals
    assert first['outcome'] == 'rejected'
    assert "goal inside the robot's base" in first['reason'] and 'base_link' in first['reason']
    assert second['outcome'] != 'rejected'


@pytest.mark.parametrize(('change', 'message'), BAD)
def test_bad_scenario_is_rejected_naming_the_field(change, message):
    with pytest.raises(ScenarioError) as err:
        scenario(**change)
    assert message in str(err.value)


@pytest.mark.parametrize(
    ('change', 'message'),
    [
        ({'robot': 'no_such_robot'}, "robot: unknown sample robot 'no_such_robot'"),
        ({'ee_link': 'nose'}, 'ee_link:'),
        ({'ee_link': 'base_link'}, "ee_link: expected a link the joints move (one of ['"),
        (
            {'dispersions': {'joint_positions': {'dist': 'normal', 'std': [0.1, 0.2]}}},
            'dispersions.joint_positions.std: expected one value or 7 (one per component), got 2',
        ),
        ({'initial': {'joint_positions': [0.0, 0.1]}}, 'initial.joint_positions: expected 7'),
        (
            {'dispersions': {'mass_scale': {'dist': 'uniform', 'low': -1.0, 'high': 0.0}}},
            'dispersions.mass_scale: expected factors that can be > 0, got a distribution '
            'drawing at most 0.0',
        ),
    ],
)
def test_bad_scenario_is_rejected_when_the_campaign_is_built(change, message):
    with pytest.raises(ScenarioError) as err:
        Campaign(scenario(**change))
    assert message in str(err.value)


def test_load_scenario_file(tmp_path):
    path = tmp_path / 'reach.yaml'
    path.write_text(
        'robot: ffsim_servicer_7dof\nruns: 5\ngoals: {kind: chained, count: 2}\n'
        'dispersions: {joint_rates: {dist: normal, std: 0.01}}\n'
    )
    s = load_scenario(path)
    assert (s.name, s.runs, s.goals.count) == ('reach', 5, 2)
    assert s.dispersion('joint_rates').param('std') == 0.01
    assert Scenario.from_dict(s.as_dict()) == s
    assert s.fingerprint() == s.with_changes(runs=9, batch_size=2).fingerprint()
    assert s.fingerprint() != s.with_changes(seed=1).fingerprint()
    (tmp_path / 'bad.yaml').write_text('robot: [unclosed\n')
    with pytest.raises(ScenarioError, match='bad.yaml: malformed YAML'):
        load_scenario(tmp_path / 'bad.yaml')
    (tmp_path / 'list.yaml').write_text('- 1\n- 2\n')
    with pytest.raises(ScenarioError, match='scenario: expected a mapping'):
        load_scenario(tmp_path / 'list.yaml')


@pytest.mark.parametrize(
    ('text', 'message'),
    [
        (
            'robot: ffsim_servicer_7dof\nruns: 2\nruns: 5000000\ngoals: {kind: chained}\n',
            "malformed YAML: duplicated key 'runs' (first on line 2)",
        ),
        ('robot: ' + '[' * 5000 + ']' * 5000 + '\n', 'expected at most 100 nesting levels'),
        (
            'a: &a [1, 1, 1, 1, 1, 1, 1, 1, 1, 1]\n'
            + ''.join(
                f'{c}: &{c} [{", ".join([f"*{p}"] * 10)}]\n'
                for p, c in zip('abcde', 'bcdef', strict=True)
            ),
            'values, got more (aliases expand',
        ),
    ],
)
def test_scenario_file_is_read_strictly(tmp_path, text, message):
    """A duplicated key (PyYAML kept the last one silently), deep nesting (a RecursionError)
    or an alias bomb: refused naming the file (:func:`ffsim_ros.dynamics.yaml_input.load_yaml`)."""
    path = tmp_path / 'strict.yaml'
    path.write_text(text)
    with pytest.raises(ScenarioError) as err:
        load_scenario(path)
    assert str(err.value).startswith(f'{path}: ') and message in str(err.value)


def test_sample_campaign_file_is_valid():
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / 'config' / 'campaign_servicer.yaml'
    c = Campaign(load_scenario(path))
    assert (c.scenario.runs, c.scenario.mode, c.model.n) == (256, 'reactionless', 7)
    assert c.batched is not None  # the law is batched (no per-run fallback from the start)
    assert 'in.mass_scale.base_link' in c.inputs


@pytest.mark.parametrize('seed', [2, 5])
def test_acceptance_does_not_depend_on_run_0s_draw(seed):
    """mass_scale normal(1, 0.6) was refused with seed 2 (run 0 drew a factor <= 0) and
    accepted with seed 5: accepted with both, the runs that draw a factor <= 0 failing alone
    with the reason."""
    from ffsim_ros.campaign.dispersions import DrawError

    s = scenario(seed=seed, dispersions={'mass_scale': {'dist': 'normal', 'std': 0.6}})
    c = Campaign(s)
    failures = []
    for index in range(10):
        try:
            c.run_inputs(index)
        except DrawError as exc:
            failures.append(str(exc))
    assert failures and all('factors must be > 0' in f for f in failures)
    assert ('run 0 drew' in failures[0]) == (seed == 2)


@pytest.mark.parametrize(
    ('spec', 'message'),
    [
        (
            {'angular_momentum': {'dist': 'normal', 'mean': 1e308, 'std': 1e308}},
            'dispersions.angular_momentum: expected mean +- 8 std finite, got mean 1e+308',
        ),
        (
            {'mass_scale': {'dist': 'normal', 'mean': -1.0, 'std': 0.0}},
            'dispersions.mass_scale: expected factors that can be > 0, got a distribution '
            'drawing at most -1.0',
        ),
        ({'inertia_scale': 0.0}, 'dispersions.inertia_scale: expected factors that can be > 0'),
        (
            {'noise_base_rate': {'dist': 'uniform', 'low': -2.0, 'high': -1.0}},
            'dispersions.noise_base_rate: expected a std that can be >= 0',
        ),
    ],
)
def test_dispersions_that_cannot_give_a_valid_run_are_refused(spec, message):
    with pytest.raises(ScenarioError) as err:
        Campaign(scenario(dispersions=spec))
    assert message in str(err.value)


def test_joint_offsets_recorded_as_applied_and_bounds():
    """A joint offset that the limits cut was recorded as drawn (the start it did not have);
    a nominal start outside the limits was clipped silently; timeouts of 1e300 s were taken."""
    model = Campaign(scenario()).model
    lower, upper = np.asarray(model.lower), np.asarray(model.upper)
    j = int(np.flatnonzero(np.isfinite(upper))[0])
    phi = np.where(np.isfinite(upper), upper - 0.01, 0.0)
    s = scenario(
        initial={'joint_positions': phi.tolist()},
        dispersions={'joint_positions': {'dist': 'uniform', 'low': -0.5, 'high': 0.5}},
    )
    c = Campaign(s)
    for index in range(4):
        inputs = c.run_inputs(index)
        recorded = np.array([inputs.columns[f'in.joint_positions.{n}'] for n in model.joint_names])
        np.testing.assert_allclose(phi + recorded, inputs.q0[7:], rtol=0, atol=1e-12)
        assert np.all(inputs.q0[7:] <= upper) and np.all(inputs.q0[7:] >= lower)
    bad = phi.copy()
    bad[j] = upper[j] + 5.0
    with pytest.raises(ScenarioError) as err:
        Campaign(scenario(initial={'joint_positions': bad.tolist()}))
    name = model.joint_names[j]
    assert f'initial.joint_positions: expected {name} within its limits' in str(err.value)
    for change, message in [
        ({'timing': {'run_goal_timeout': 1e300}}, 'timing.run_goal_timeout: expected at most'),
        ({'timing': {'settle': 2e6}}, 'timing.settle: expected at most 1e+06 s, got 2e+06'),
        (
            {'reach': {'goal_timeout': 1e300}},
            'reach.goal_timeout: expected a value in [0.01, 1e+06]',
        ),
    ]:
        with pytest.raises(ScenarioError) as err:
            scenario(**change)
        assert message in str(err.value)


@pytest.mark.parametrize(
    'key, value',
    [
        ('gains', []),
        ('gains', 0),
        ('gains', False),
        ('reach', False),
        ('timing', 0),
        ('dispersions', 0),
        ('dispersions', []),
        ('initial', []),
    ],
)
def test_a_section_that_is_no_mapping_is_refused(key, value):
    """``gains: []``, ``reach: false``, ``timing: 0``, ``dispersions: 0`` ... were taken as the
    defaults (``x or {}``): refused naming the section; absent or null is the defaults."""
    with pytest.raises(ScenarioError) as err:
        scenario(**{key: value})
    assert str(err.value) == f'{key}: expected a mapping, got {value!r}'
    defaults = scenario(**{key: {}})
    assert scenario(**{key: None}) == defaults


@pytest.mark.parametrize(
    'reach, message',
    [
        ({'max_plans': 10**9}, 'reach.max_plans: expected an integer in [0, 100], got 1000000000'),
        (
            {'max_loop_plans': 101},
            'reach.max_loop_plans: expected an integer in [0, 100], got 101',
        ),
        ({'max_cycles': 1e9}, 'reach.max_cycles: expected an integer in [0, 100]'),
        (
            {'attitude_budget_deg': 200.0},
            'reach.attitude_budget_deg: expected a value in [0, 180]',
        ),
        ({'stall_time': 1e5}, 'reach.stall_time: expected a value in [0.01, 3600], got 100000.0'),
        ({'position_tolerance': 2.0}, 'reach.position_tolerance: expected a value in [1e-06, 1]'),
    ],
)
def test_reach_takes_the_bounds_of_the_controller_node(reach, message):
    """A campaign's ``reach`` was unbounded (``max_plans: 1e9`` taken) where the controller's
    ``reach.*`` parameters are bounded: both take :data:`ffsim_ros.control.REACH_BOUNDS`, the
    node's parameter table built from it."""
    from ffsim_ros.control import REACH_BOUNDS
    from ffsim_ros.node_support.goal_status import reach_specs

    with pytest.raises(ScenarioError) as err:
        scenario(reach=reach)
    assert str(err.value).startswith(message), str(err.value)
    for spec in reach_specs():  # the node's table: the same ranges, ends included
        low, high = REACH_BOUNDS[spec.name.removeprefix('reach.')]
        step = 1 if isinstance(low, int) else 1e-6 * high
        assert spec.validate(low) == low and spec.validate(high) == high
        for outside in (low - step, high + step):
            with pytest.raises(ValueError):
                spec.validate(outside)
    s = scenario(reach={'max_plans': 100, 'max_loop_plans': 0, 'attitude_budget_deg': 180.0})
    assert (s.reach.max_plans, s.reach.attitude_budget_deg) == (100, 180.0)
