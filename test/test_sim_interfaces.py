"""The simulator's standard interfaces: ``simulation_interfaces`` and name-keyed commands.

First the engine's additions without DDS (the time reset, stepping while paused, per-joint
commands), then the simulator node in a separate process probed over real DDS by real
clients (service clients, rclpy's ``ActionClient``): every service and the ``SimulateSteps``
action, their result codes and messages, exact simulated time, a state set and read back,
bad input refused naming the culprit while the simulation runs on, and ``joint_commands``.
Every check waits for discovery or for an answer; nothing sleeps blindly.
"""

from __future__ import annotations

import math
import re
import time

import numpy as np
import pytest
from sequences import Untouchable

import ffsim_ros.dynamics as D
from ffsim_ros.dynamics.lie import quat_normalize
from ffsim_ros.resources import sample_robot
from ffsim_ros.sim import Engine

MODEL = D.load_urdf(sample_robot('ffsim_servicer_7dof'))
N = MODEL.n
ENTITY = 'ffsim_servicer_7dof'
MS = 1_000_000


def engine(**kwargs) -> Engine:
    q0 = np.r_[D.base_state_from_link(MODEL, np.zeros(3), [0, 0, 0, 1])[0], np.zeros(N)]
    options = dict(dt_ns=MS, command_timeout_ns=500 * MS, velocity_limits=False)
    options.update(kwargs)
    return Engine(MODEL, q0, np.zeros(MODEL.nv), **options)


# -------------------------------------------------------------------- engine (no DDS)
def test_time_reset_keeps_the_state_and_drops_the_command() -> None:
    sim = engine()
    sim.command_efforts(np.full(N, 10.0))
    moved = sim.advance(250)
    again = sim.reset_time()
    assert (again.step, again.time_ns) == (0, 0)
    assert np.array_equal(again.q, moved.q) and np.array_equal(again.v, moved.v)
    assert sim.last_command is None and not np.any(again.effort)
    # the clock runs on from 0, under no effort (the old command was timed on the old clock)
    later = sim.advance(7)
    assert later.time_ns == 7 * MS
    q, v = D.step(MODEL, moved.q, moved.v, np.zeros(N), 1e-3, steps=7, conserve_momentum=True)
    assert np.array_equal(later.q, q) and np.array_equal(later.v, v)


def test_stepping_while_paused_is_exact() -> None:
    sim = engine(paused=True)
    assert sim.advance(100).step == 0  # paused: nothing
    snap = sim.advance(1000, stepping=True)
    assert snap.step == 1000 and snap.time_ns == 1_000_000_000 and snap.paused


def test_joint_commands_hold_per_joint() -> None:
    """Two joints commanded, then a third alone: each joint's effort times out on its own."""
    sim = engine(command_timeout_ns=30 * MS)
    sim.command_joint_efforts([1, 4], [20.0, -10.0])
    assert np.array_equal(sim.advance(1).effort, [0, 20.0, 0, 0, -10.0, 0, 0])
    sim.advance(9)  # t = 10 ms
    sim.command_joint_efforts([0], [5.0])
    assert np.array_equal(sim.advance(1).effort, [5.0, 20.0, 0, 0, -10.0, 0, 0])
    # the first two hold from 0 to 30 ms (steps starting at 0..30), the third to 40 ms
    efforts = [sim.advance(1).effort for _ in range(40)]  # steps from 11 .. 50 ms
    assert np.array_equal(efforts[19], [5.0, 20.0, 0, 0, -10.0, 0, 0])  # step from 30 ms
    assert np.array_equal(efforts[20], [5.0, 0, 0, 0, 0, 0, 0])  # from 31 ms
    assert np.array_equal(efforts[29], [5.0, 0, 0, 0, 0, 0, 0])  # from 40 ms
    assert not np.any(efforts[30])  # from 41 ms
    for indices, values, text in (
        ([0, 0], [1.0, 2.0], 'distinct'),
        ([7], [1.0], 'distinct values in'),
        ([0, 1], [1.0], 'one effort per joint'),
        ([2], [math.inf], 'expected finite'),
    ):
        with pytest.raises(ValueError, match=text):
            sim.command_joint_efforts(indices, values)


def test_name_keyed_commands_are_checked_whole() -> None:
    from ffsim_ros.node_support.joint_commands import JointCommandError, JointCommands

    decoder = JointCommands(MODEL)
    index, tau = decoder.decode(['arm_joint_5', 'arm_joint_2'], [1.5, -2.0], ((), ()))
    assert index.tolist() == [4, 1] and tau.tolist() == [1.5, -2.0]
    for names, efforts, others, text in (
        ([], [], ((), ()), 'got no name'),
        (
            ['arm_joint_1', 'gripper', 'wrist'],
            [0, 0, 0],
            ((), ()),
            "unknown joints ['gripper', 'wrist']",
        ),
        (['arm_joint_1', 'arm_joint_1'], [0, 0], ((), ()), "more than once: ['arm_joint_1']"),
        (['arm_joint_1', 'arm_joint_2'], [1.0], ((), ()), 'one effort per name (2), got 1'),
        (['arm_joint_1'], [], ([0.3], ()), 'the joints are effort-driven'),
        (['arm_joint_1', 'arm_joint_3'], [1.0, math.nan], ((), ()), "{'arm_joint_3': nan}"),
    ):
        with pytest.raises(JointCommandError) as info:
            decoder.decode(names, efforts, others)
        assert text in str(info.value)


def test_name_keyed_commands_refuse_huge_messages_up_front() -> None:
    """More names than joints is refused before any per-name work (100000 copies of one name
    used to freeze the simulator's callbacks: a quadratic duplicate check); repeated names in
    a message of a plausible size are still named."""
    from ffsim_ros.node_support.joint_commands import JointCommandError, JointCommands

    decoder = JointCommands(MODEL)
    for count in (N + 1, 100_000):
        # names and efforts that fail when any entry is read: refused by the counts alone
        with pytest.raises(JointCommandError) as info:
            decoder.decode(Untouchable(count), Untouchable(count), ((), ()))
        assert str(info.value) == (
            f'expected at most {N} joint names (each joint once), got {count}'
        )
    names = ['arm_joint_3', 'arm_joint_1', 'arm_joint_3', 'arm_joint_1', 'arm_joint_2']
    with pytest.raises(JointCommandError, match=re.escape("['arm_joint_1', 'arm_joint_3']")):
        decoder.decode(names, [0.0] * 5, ((), ()))
    assert decoder.decode(list(MODEL.joint_names), [1.0] * N, ((), ()))[0].tolist() == list(
        range(N)
    )


# ------------------------------------------------- requests without a node (fakes, no DDS)
def _interfaces(targets=(), namespace: str = '/'):
    """A ``SimulationInterfaces`` on a fake simulator: its physics actions recorded and run on
    a fake engine whose world has ``targets`` (and ``added``, the targets spawned)."""
    from types import SimpleNamespace

    from ffsim_ros.node_support.sim_interfaces import SimulationInterfaces

    actions: list = []
    world = SimpleNamespace(targets=dict.fromkeys(targets), added=[])
    world.add = world.added.append
    engine = SimpleNamespace(
        world=world,
        change_world=lambda change, resetting=False: (change(world), SimpleNamespace(time=0.5)),
        dt=0.001,
        chain=None,
        wrenches=SimpleNamespace(describe=str),  # (no wrench held: '')
    )
    odometry: list[str] = []
    resets: list[str] = []  # (the state resets the simulator announces on 'resets')
    interfaces = SimulationInterfaces.__new__(SimulationInterfaces)  # (no services made)
    interfaces.entity = ENTITY
    interfaces.node = SimpleNamespace(
        world='world',
        engine=engine,
        stopped=False,
        resets=resets,
        announce_reset=resets.append,
        get_namespace=lambda: namespace,
        scene_interfaces=SimpleNamespace(add_odometry=odometry.append),
    )

    def physics(action, publish: bool = False):
        actions.append(action)
        return action(engine)

    interfaces._physics = physics
    return interfaces, actions, odometry, world.added


def test_no_transition_once_quitting() -> None:
    """Once quitting (the node ends 0.5 s later), playing or pausing is refused: it answered
    'quitting -> playing' and the engine ran until the exit."""
    from simulation_interfaces.msg import SimulationState
    from simulation_interfaces.srv import SetSimulationState

    from ffsim_ros.node_support.sim_interfaces import RequestError

    interfaces, actions, _, _ = _interfaces()
    interfaces.quitting = True
    for target in (SimulationState.STATE_PLAYING, SimulationState.STATE_PAUSED):
        request = SetSimulationState.Request(state=SimulationState(state=target))
        with pytest.raises(RequestError) as info:
            interfaces._set_state(request, SetSimulationState.Response())
        assert info.value.code == SetSimulationState.Response.STATE_TRANSITION_ERROR
        assert 'the simulator is quitting' in str(info.value)
    request = SetSimulationState.Request(state=SimulationState(state=3))
    with pytest.raises(RequestError) as info:
        interfaces._set_state(request, SetSimulationState.Response())
    assert info.value.code == SetSimulationState.Response.ALREADY_IN_TARGET_STATE


def test_spawn_names_refused_before_anything_changes() -> None:
    """A name that cannot make the target's topics (``ball-1``, ``my ball``, 240 characters)
    used to be spawned, then ``targets/<name>/odom`` raised in the executor (no answer, the
    simulator ended with exit code 1): NAME_INVALID, nothing added, no topic made."""
    from simulation_interfaces.msg import Result
    from simulation_interfaces.srv import SpawnEntity

    from ffsim_ros.node_support.sim_interfaces import RequestError

    ball = '{shape: {type: sphere, radius: 0.2}, mass: 40}'

    def request(name: str, rename: bool = False):
        r = SpawnEntity.Request(name=name, resource_string=ball, allow_renaming=rename)
        r.initial_pose.pose.position.x = 5.0
        r.initial_pose.pose.orientation.w = 1.0
        return r

    for name, namespace, most in (
        ('ball-1', '/', 233),
        ('my ball', '/', 233),
        ('b' * 240, '/', 233),
        ('b' * 231, '/sim', 229),
        ('1ball', '/', 233),
    ):
        interfaces, actions, odometry, added = _interfaces(['sat'], namespace)
        for rename in (False, True):
            with pytest.raises(RequestError) as info:
                interfaces._spawn(request(name, rename), SpawnEntity.Response())
            assert info.value.code == SpawnEntity.Response.NAME_INVALID
            assert str(info.value).startswith(
                'name: expected ASCII letters, digits and underscores, not starting with a '
                f'digit, at most {most} characters (a token of the topic targets/<name>/odom in '
                f'namespace {namespace!r}'
            ), str(info.value)
        assert len(actions) == 2 and added == [] and odometry == []  # (the names read: all)
    interfaces, actions, odometry, added = _interfaces(['sat'])
    for name, rename, spawned in (('ball_1', False, 'ball_1'), ('sat', True, 'sat_1')):
        response = interfaces._spawn(request(name, rename), SpawnEntity.Response())
        assert response.entity_name == spawned and response.result.result == Result.RESULT_OK
    assert [t.name for t in added] == ['ball_1', 'sat_1']
    assert odometry == []  # (the topics: made in the physics thread, SceneInterfaces.publish)


def test_requests_racing_a_removal_answer_not_found() -> None:
    """A target checked in the executor thread but deleted (or reset) before the request's
    turn in the physics thread: SetEntityState raised a plain KeyError there, which ended the
    physics thread and the node (exit 1). Set and delete answer RESULT_NOT_FOUND, a
    spawn whose name was taken meanwhile NAME_NOT_UNIQUE, and nothing changes."""
    from simulation_interfaces.msg import Result
    from simulation_interfaces.srv import (
        DeleteEntity,
        SetEntityState,
        SpawnEntity,
    )

    from ffsim_ros.node_support.scene_services import EntityError
    from ffsim_ros.node_support.sim_interfaces import RequestError

    def racing(change):
        """Interfaces whose world changes (``change(targets)``) after the first physics
        call (the executor thread's check), before the request's action runs."""
        interfaces, actions, _, added = _interfaces(['ball'])
        interfaces.node.model = None
        physics = interfaces._physics
        world = physics(lambda engine: engine.world)
        actions.clear()

        def late(action, publish: bool = False):
            if len(actions) == 1:  # checked: the world changes before the action runs
                change(world.targets)
            return physics(action, publish)

        interfaces._physics = late
        return interfaces, added

    def drop(targets):
        targets.pop('ball', None)

    state = SetEntityState.Request(entity='ball')
    state.state.pose.orientation.w = 1.0
    for call, request, response in (
        ('_set_entity', state, SetEntityState.Response()),
        ('_delete', DeleteEntity.Request(entity='ball'), DeleteEntity.Response()),
    ):
        interfaces, _ = racing(drop)
        with pytest.raises((RequestError, EntityError)) as info:
            getattr(interfaces, call)(request, response)
        assert info.value.code == Result.RESULT_NOT_FOUND, str(info.value)
        assert "'ball'" in str(info.value) and 'went' in str(info.value)
    spawn = SpawnEntity.Request(
        name='ball_2', resource_string='{shape: {type: sphere, radius: 0.2}, mass: 40}'
    )
    spawn.initial_pose.pose.orientation.w = 1.0
    interfaces, added = racing(lambda targets: targets.setdefault('ball_2'))
    with pytest.raises(RequestError) as info:
        interfaces._spawn(spawn, SpawnEntity.Response())
    assert info.value.code == SpawnEntity.Response.NAME_NOT_UNIQUE
    assert "'ball_2' was taken" in str(info.value) and added == []


def test_physics_loop_answers_a_lookup_error_and_goes_on() -> None:
    """A KeyError of a request's action (a name gone meanwhile) is the request's answer
    (RESULT_NOT_FOUND), not the end of the physics thread; the next request runs."""
    import queue
    from concurrent.futures import Future

    from simulation_interfaces.msg import Result

    from ffsim_ros.node_support.scene_services import EntityError
    from ffsim_ros.simulator import Simulator, _Request

    sim = Simulator.__new__(Simulator)  # (no node: the loop's request handling alone)
    sim._inbox, sim.engine = queue.SimpleQueue(), object()
    world: dict = {}
    failing, next_one = Future(), Future()
    sim._inbox.put(_Request(lambda engine: world['ball'], reply=failing))
    sim._inbox.put(_Request(lambda engine: 'done', reply=next_one))
    sim._apply_requests()
    with pytest.raises(EntityError) as info:
        failing.result(0)
    assert info.value.code == Result.RESULT_NOT_FOUND and "KeyError('ball')" in str(info.value)
    assert next_one.result(0) == 'done'


def test_target_publishers_follow_the_targets() -> None:
    """``targets/<name>/odom`` is made for a target that comes and destroyed when it goes
    (deleted, reset): 500 spawn/delete cycles of new names kept 500 publishers alive."""
    from types import SimpleNamespace

    from ffsim_ros.node_support.scene_services import SceneInterfaces

    made: dict[str, object] = {}
    destroyed: list[str] = []

    def create_publisher(kind, topic, qos):
        made[topic] = object()
        return made[topic]

    def destroy_publisher(pub):
        destroyed.append(next(t for t, p in made.items() if p is pub))

    world = SimpleNamespace(targets={}, take_events=list)
    node = SimpleNamespace(
        create_publisher=create_publisher,
        destroy_publisher=destroy_publisher,
        engine=SimpleNamespace(world=world),
        default_callback_group=SimpleNamespace(entities=set()),
    )
    scene = SceneInterfaces.__new__(SceneInterfaces)  # (no services made)
    scene.node, scene._odom, scene._shown = node, {}, False
    snap = SimpleNamespace(time_ns=0, world=None)  # (nothing to publish: the topics alone)
    for names, alive in (
        (['sat', 'ball'], {'sat', 'ball'}),
        (['sat'], {'sat'}),
        (['sat', 'ball'], {'sat', 'ball'}),
        ([], set()),
    ):
        world.targets = dict.fromkeys(names)
        scene.publish(snap, False)
        assert set(scene._odom) == alive
    assert sorted(destroyed) == ['targets/ball/odom', 'targets/ball/odom', 'targets/sat/odom']


#: Filters refused, with a part of their message: the probe's (8 s and ~70 s of frozen
#: physics), nested or alternated repetitions, backreferences, too many choices in sequence.
COSTLY_FILTERS = (
    (r'^\w{2}(\w|\w|\w)*!', r'repeated group holding a quantifier or an alternation (it '),
    (r'^(\w|\w|\w)*!', r"got '(\\w|\\w|\\w)*' at 1 in"),
    ('(a+)+', "got '(a+)+' at 0"),
    ('(a|ab)*', 'use a character class, e.g. \\w* for (\\w+)* or (a|\\w)*, or literal'),
    ('(a|A)+', "got '(a|A)+' at 0"),  # (prefixes of one another, the case ignored)
    ('(?=a|b)+', "got '(?=a|b)+'"),  # (literal alternatives, but not in a plain group)
    ('[[:word:]]', 'expected a POSIX class ([:alnum/alpha/blank/'),
    ('[[.a.]]', 'expected no collating element or equivalence class (not supported), got'),
    (r'(?:\w|\w)*', r"got '(?:\\w|\\w)*'"),
    ('x((a|b))+?', "got '((a|b))+?' at 1"),
    ('(a?){2,}', "got '(a?){2,}'"),
    ('(?:a{1,3}){5}', "got '(?:a{1,3}){5}'"),
    ('(?=a*)+', "got '(?=a*)+'"),
    ('(a)(?#c)*b', None),  # (fine: the group holds no choice)
    (r'(a)\1', r"expected no backreference, got '\\1' at 3"),
    ('(?P<n>a)(?P=n)', "expected no backreference, got '(?P='"),
    ('(a)?(?(1)b|c)', "expected no backreference, got '(?(1'"),
    ('(?x)a b', "expected no verbose flag (x), got '(?x)'"),
    ('a(?ix: b)', "expected no verbose flag (x), got '(?ix:'"),
    ('x' * 257, 'expected at most 256 characters, got 257'),
    ('x' * 1_000_000, 'expected at most 256 characters, got 1000000'),
    (r'.*.*.*\d', 'expected at most 2 unbounded quantifiers (*, +, {m,}: they backtrack'),
    (r'a+b{3,}c*', 'got 3 in'),
    ('b?' * 20 + 'b{20}!', 'expected a backtracking estimate of at most 16384'),
    ('(b|b)' * 16 + '!', 'got 65536 for'),
    (r'.*b{0,64}b{0,64}\d', 'got 262144 for'),  # (64 a quantifier at most)
    ('(unclosed', "expected a regular expression, got '(unclosed' (missing ), unterminated"),
)
#: Filters taken (names matched as by ``re.search``), metacharacters in classes, escaped or
#: in comments not read as such.
EVERYDAY_FILTERS = (
    '',
    '^ball',
    r'target_\d+',
    '.*arm.*',
    'servicer_[0-9]dof$',
    r'^(ball|sat)_\d{1,3}$',
    '(?i)^BALL',
    '[(|*+?{]+',
    r'[]|*]',
    r'\(a\|b\)*x',
    '(?#(a+|*)ball',
    'a{}',
    'x{,}',
    r'\101+',
    '(ab)+',
    '(?:a{2})+',
    r'(?P<side>left|right)_arm',
    '^(?!robot).*',
    '(?<=_)arm',
    '(ffsim|x)+',
    '(a|b)*',
    '^(?:ball_|sat_)+[0-9]',
)


def test_name_filters_of_costly_backtracking_are_refused() -> None:
    """GetEntities' filter ran as given in Python's ``re``, holding the GIL:
    ``^\\w{2}(\\w|\\w|\\w)*!`` froze the physics for 8 s. Filters that backtrack
    exponentially or polynomially are refused by a scanner of their text, with the reason;
    every-day filters match as before."""
    from ffsim_ros.node_support.name_filter import name_filter_problem

    for pattern, text in COSTLY_FILTERS:
        problem = name_filter_problem(pattern)
        if text is None:
            assert problem is None, (pattern, problem)
        else:
            assert problem is not None and text in problem, (pattern, problem)
            assert len(problem) < 800  # (the pattern quoted only when short)
    for pattern in EVERYDAY_FILTERS:
        assert name_filter_problem(pattern) is None, (pattern, name_filter_problem(pattern))


def test_get_entities_filters_refused_or_matching_as_before() -> None:
    """Through GetEntities' request path: a costly filter answers OPERATION_FAILED naming
    ``filters.filter`` (the names not even asked for); the every-day ones list the names
    ``re.search`` finds."""
    from simulation_interfaces.msg import EntityFilters, Result

    from ffsim_ros.node_support.sim_interfaces import RequestError

    names = ['ball', 'ball_2', 'target_12', 'target_x', 'left_arm', 'sat', 'BALL_big']
    interfaces, actions, _, _ = _interfaces(names)
    with pytest.raises(RequestError) as info:
        interfaces._matching(EntityFilters(filter=r'^\w{2}(\w|\w|\w)*!'))
    assert info.value.code == Result.RESULT_OPERATION_FAILED
    assert str(info.value).startswith(
        'filters.filter: expected no repeated group holding a quantifier or an alternation'
    )
    assert actions == []
    for pattern in EVERYDAY_FILTERS:
        expected = [n for n in (ENTITY, *names) if re.search(pattern, n)]
        assert interfaces._matching(EntityFilters(filter=pattern)) == expected, pattern
    assert interfaces._matching(EntityFilters(filter=r'target_\d+')) == ['target_12']
    assert interfaces._matching(EntityFilters(filter='.*arm.*')) == ['left_arm']


def test_name_filter_scanner_reads_patterns_as_re_does() -> None:
    """The scanner (not ``re``'s private parser) against that parser on random valid patterns
    with the tricky parts (classes with ``]`` and quantifier characters, escapes, comments,
    ``{}``, lookarounds, named groups, inline flags): the same quantifiers (bounds), and no
    repeated subpattern holding a choice left unrefused."""
    import random
    import warnings

    from ffsim_ros.node_support.name_filter import _scan_filter

    try:  # Python >= 3.11
        from re import _constants as constants
        from re import _parser as parser
    except ImportError:  # Python 3.10 (ROS Humble): the same modules under their old names
        import sre_constants as constants  # type: ignore[no-redef]
        import sre_parse as parser  # type: ignore[no-redef]
    repeats = {constants.MAX_REPEAT, constants.MIN_REPEAT}
    repeats.add(getattr(constants, 'POSSESSIVE_REPEAT', constants.MAX_REPEAT))

    def subpatterns(op, av) -> list:
        if op in repeats:
            return [av[2]]
        if op == constants.SUBPATTERN:
            return [av[-1]]
        if op == constants.BRANCH:
            return list(av[1])
        if op in (constants.ASSERT, constants.ASSERT_NOT):
            return [av[1]]
        return [av] if op == getattr(constants, 'ATOMIC_GROUP', None) else []

    def quantifiers(items) -> list:
        out = []
        for op, av in items:
            if op in repeats:
                out.append((av[0], None if av[1] == constants.MAXREPEAT else av[1]))
            for sub in subpatterns(op, av):
                out += quantifiers(sub)
        return out

    def has_choice(items) -> bool:
        return any(
            op == constants.BRANCH
            or (op in repeats and av[0] != av[1])
            or any(has_choice(sub) for sub in subpatterns(op, av))
            for op, av in items
        )

    def repeated_choice(items) -> bool:
        return any(
            (op in repeats and av[1] > 1 and has_choice(av[2]))
            or any(repeated_choice(sub) for sub in subpatterns(op, av))
            for op, av in items
        )

    atoms = ['a', '.', r'\w', '[a-c]', '[]*]', r'[^]+?]', r'[\]{2}]', r'\*', r'\?', '{', '}']
    atoms += ['{}', 'x{', '{,}', r'\N{DIGIT ONE}', r'\x41', r'\0', r'\101', '(?#a*+{3})', '^']
    quants = ['', '', '*', '+', '?', '*?', '??', '*+', '?+', '{2}', '{2,}', '{,3}', '{1,3}']
    quants += ['{,}', '{0}', '{2}?', '{1,2}+']
    opens = ['(', '(?:', '(?P<n>', '(?=', '(?!', '(?<=', '(?<!', '(?>', '(?i:', '(?s-i:']
    rng = random.Random(7)

    def pattern(depth: int = 0) -> str:
        out = []
        for _ in range(rng.randint(1, 4)):
            r = rng.random()
            if r < 0.25 and depth < 3:
                opening = rng.choice(opens).replace('<n>', f'<n{rng.randrange(10**9)}>')
                out.append(opening + pattern(depth + 1) + ')' + rng.choice(quants))
            elif r < 0.32:
                out.append('|')
            else:
                out.append(rng.choice(atoms) + rng.choice(quants))
        return ''.join(out)

    read = refused = 0
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')  # (FutureWarning of possible set operations)
        while read < 4000:
            text = pattern()
            try:
                parsed = parser.parse(text)
            except (re.error, OverflowError, RecursionError):
                continue
            read += 1
            scan = _scan_filter(text)
            if scan.problem is not None:
                refused += 1
                continue
            assert sorted(scan.quantifiers, key=str) == sorted(quantifiers(parsed), key=str), text
            assert not repeated_choice(parsed), text
    assert 0 < refused < read


# ------------------------------------------------------ the node in-process (no discovery)
def _service(node, name: str):
    """The callback of the node's service ``~/<name>`` (what the executor calls)."""
    return next(s.callback for s in node.services if s.srv_name.endswith(f'/{name}'))


@pytest.mark.ros
def test_one_step_job_at_a_time_and_the_node_stays_commandable(rclpy_context) -> None:
    """A huge StepSimulation (2**62 steps: 146 million years) is refused at once; one of the
    largest allowed runs while a second request is refused at once (one executor thread
    waits at most, the node serves the rest), and set_simulation_state
    answers and ends the running job, which says how far it got; a reset ends one too."""
    import threading

    from rclpy.parameter import Parameter
    from simulation_interfaces.msg import Result, SimulationState
    from simulation_interfaces.srv import (
        GetSimulationState,
        ResetSimulation,
        SetSimulationState,
        StepSimulation,
    )

    from ffsim_ros.node_support.sim_interfaces import MAX_STEPS
    from ffsim_ros.simulator import Simulator

    sim = Simulator(
        context=rclpy_context, parameter_overrides=[Parameter('start_paused', value=True)]
    )
    try:
        sim.start()
        step = _service(sim, 'step_simulation')
        set_state = _service(sim, 'set_simulation_state')

        def stepping(steps: int):
            return step(StepSimulation.Request(steps=steps), StepSimulation.Response())

        reply = stepping(2**62)
        assert reply.result.result == Result.RESULT_OPERATION_FAILED
        assert reply.result.error_message == (
            f'steps: expected 1 to {MAX_STEPS} (more: in several requests), got {2**62}'
        )
        assert sim.engine.step == 0  # no step made

        def run_in_thread(steps: int) -> tuple[threading.Thread, list]:
            out: list = []
            thread = threading.Thread(target=lambda: out.append(stepping(steps)), daemon=True)
            thread.start()
            deadline = time.monotonic() + 30
            while sim.engine.step < 50:  # the job runs
                assert thread.is_alive() and time.monotonic() < deadline, out
                time.sleep(0.01)
            return thread, out

        thread, first = run_in_thread(MAX_STEPS)
        second = stepping(5)
        assert second.result.result == Result.RESULT_OPERATION_FAILED
        text = second.result.error_message
        assert text.startswith('expected no step job running, got one (')
        assert 'of 1000000000 steps done)' in text
        assert 'end it with set_simulation_state or reset_simulation; no step made' in text
        state = _service(sim, 'get_simulation_state')(
            GetSimulationState.Request(), GetSimulationState.Response()
        )
        assert state.result.result == Result.RESULT_OK
        assert state.state.state == SimulationState.STATE_PAUSED
        playing = SetSimulationState.Request(state=SimulationState(state=1))
        reply = set_state(playing, SetSimulationState.Response())
        assert reply.result.result == Result.RESULT_OK, reply.result.error_message
        thread.join(30)
        assert not thread.is_alive()
        ended = first[0].result
        assert ended.result == Result.RESULT_OPERATION_FAILED
        assert re.search(
            r'the simulation is playing: stepping needs it paused .*; after \d+ of 1000000000 '
            r'steps',
            ended.error_message,
        ), ended.error_message
        # the slot is free again; a reset ends a job too
        paused = SetSimulationState.Request(state=SimulationState(state=2))
        assert set_state(paused, SetSimulationState.Response()).result.result == Result.RESULT_OK
        thread, first = run_in_thread(MAX_STEPS)
        reset = _service(sim, 'reset_simulation')(
            ResetSimulation.Request(scope=ResetSimulation.Request.SCOPE_STATE),
            ResetSimulation.Response(),
        )
        assert reset.result.result == Result.RESULT_OK, reset.result.error_message
        thread.join(30)
        assert not thread.is_alive()
        assert re.match(
            r'ended by reset_simulation after \d+ of 1000000000 steps$',
            first[0].result.error_message,
        ), first[0].result.error_message
        assert stepping(3).result.result == Result.RESULT_OK
    finally:
        sim.destroy_node()


# --------------------------------------------------------------------------- over DDS
class Probe:
    """Test-side node: service and action clients, subscriptions keeping every message."""

    def __init__(self, node, executor, wait_until, prefix: str = '/ffsim_simulator') -> None:
        from rosgraph_msgs.msg import Clock
        from sensor_msgs.msg import JointState
        from std_msgs.msg import Float64MultiArray

        self.node, self.executor, self.wait_until, self.prefix = node, executor, wait_until, prefix
        executor.add_node(node)
        self.clock: list[int] = []
        self.joints: list = []
        self.momentum: list = []
        self.subs = [
            node.create_subscription(
                Clock,
                '/clock',
                lambda m: self.clock.append(m.clock.sec * 10**9 + m.clock.nanosec),
                1000,
            ),
            node.create_subscription(JointState, 'joint_states', self.joints.append, 1000),
            node.create_subscription(Float64MultiArray, 'momentum', self.momentum.append, 1000),
        ]
        self.clients: dict[str, object] = {}

    def spin_until(self, predicate, timeout: float = 30.0) -> bool:
        return self.wait_until(predicate, timeout, self.executor)

    def call(self, srv_type, name: str, request=None, timeout: float = 30.0):
        client = self.clients.get(name)
        if client is None:
            client = self.clients[name] = self.node.create_client(
                srv_type, f'{self.prefix}/{name}'
            )
            assert self.spin_until(client.service_is_ready, 60), f'{name} not available'
        future = client.call_async(request if request is not None else srv_type.Request())
        assert self.spin_until(future.done, timeout), f'{name} did not answer'
        return future.result()

    def connect(self) -> None:
        assert self.spin_until(lambda: all(s.get_publisher_count() > 0 for s in self.subs), 60), (
            'simulator not discovered'
        )


def stamp(msg) -> int:
    return msg.header.stamp.sec * 10**9 + msg.header.stamp.nanosec


def ok(result) -> bool:
    from simulation_interfaces.msg import Result

    return result.result == Result.RESULT_OK


def start_sim(ros_process, *params: str):
    args = []
    for p in params:
        args += ['-p', p]
    return ros_process('ffsim_ros.simulator', ros_args=args, name='sim')


@pytest.fixture
def probe(ros_node, ros_executor, wait_until):
    return Probe(ros_node('probe'), ros_executor, wait_until)


@pytest.mark.ros
def test_features_run_states_stepping_and_resets(ros_process, probe) -> None:
    from rclpy.action import ActionClient
    from simulation_interfaces.action import SimulateSteps
    from simulation_interfaces.msg import Result, SimulationState, SimulatorFeatures
    from simulation_interfaces.srv import (
        GetEntityState,
        GetSimulationState,
        GetSimulatorFeatures,
        ResetSimulation,
        SetSimulationState,
        StepSimulation,
    )

    sim = start_sim(ros_process, 'start_paused:=true', 'real_time_factor:=2.0')
    probe.connect()
    F = SimulatorFeatures
    features = probe.call(GetSimulatorFeatures, 'get_simulator_features').features
    assert sorted(features.features) == sorted(
        [
            F.ENTITY_STATE_GETTING,
            F.ENTITY_STATE_SETTING,
            F.SIMULATION_RESET,
            F.SIMULATION_RESET_TIME,
            F.SIMULATION_RESET_STATE,
            F.SIMULATION_STATE_GETTING,
            F.SIMULATION_STATE_SETTING,
            F.SIMULATION_STATE_PAUSE,
            F.STEP_SIMULATION_SINGLE,
            F.STEP_SIMULATION_MULTIPLE,
            F.STEP_SIMULATION_ACTION,
            F.SPAWNING,
            F.DELETING,
            F.SPAWNING_RESOURCE_STRING,
            F.SIMULATION_RESET_SPAWNED,
        ]
    )
    assert features.spawn_formats == ['urdf', 'yaml'] and ENTITY in features.custom_info

    def state() -> int:
        reply = probe.call(GetSimulationState, 'get_simulation_state')
        assert ok(reply.result)
        return reply.state.state

    def set_state(target: int):
        request = SetSimulationState.Request(state=SimulationState(state=target))
        return probe.call(SetSimulationState, 'set_simulation_state', request).result

    def now() -> int:  # simulated time of the entity's state [ns]
        reply = probe.call(
            GetEntityState, 'get_entity_state', GetEntityState.Request(entity=ENTITY)
        )
        assert ok(reply.result)
        return stamp(reply.state)

    def step(steps: int):
        return probe.call(StepSimulation, 'step_simulation', StepSimulation.Request(steps=steps))

    # paused at start: 1000 steps land exactly on t = 1000 dt, published at that instant
    assert state() == SimulationState.STATE_PAUSED and now() == 0
    reply = step(1000)
    assert ok(reply.result), reply.result.error_message
    assert reply.result.error_message == '1000 steps: sim time 1.000000000 s'
    assert now() == 1_000_000_000
    assert probe.spin_until(lambda: probe.clock and probe.clock[-1] == 1_000_000_000)
    assert probe.spin_until(lambda: probe.joints and stamp(probe.joints[-1]) == 1_000_000_000)
    assert step(1).result.error_message.endswith('1.001000000 s') and now() == 1_001_000_000
    reply = step(0)
    assert reply.result.result == Result.RESULT_OPERATION_FAILED
    assert 'steps: expected 1 to 1000000000 (more: in several requests), got 0' in (
        reply.result.error_message
    )

    # the action: feedback, result, cancel
    from rclpy.qos import QoSProfile

    client = ActionClient(
        probe.node,
        SimulateSteps,
        '/ffsim_simulator/simulate_steps',
        feedback_sub_qos_profile=QoSProfile(depth=1000),  # keep every feedback
    )
    feedback_topic = '/ffsim_simulator/simulate_steps/_action/feedback'
    # every feedback message of the server, whatever the client does with it: rclpy's
    # ActionClient drops the feedback that arrives after the result (topic and service are
    # not ordered), so the last one reaches a feedback_callback only most of the time
    published: list = []
    probe.subs.append(
        probe.node.create_subscription(
            SimulateSteps.Impl.FeedbackMessage,
            feedback_topic,
            lambda m: published.append(m.feedback),
            QoSProfile(depth=1000),
        )
    )
    assert probe.spin_until(
        lambda: (
            client.server_is_ready()
            and probe.node.count_publishers(feedback_topic) > 0
            and probe.subs[-1].get_publisher_count() > 0
        ),
        30,
    )

    def run(steps: int, cancel_after: int | None = None):
        feedback = []
        sent = client.send_goal_async(
            SimulateSteps.Goal(steps=steps),
            feedback_callback=lambda m: feedback.append(m.feedback),
        )
        assert probe.spin_until(sent.done)
        handle = sent.result()
        assert handle.accepted
        if cancel_after is not None:
            assert probe.spin_until(lambda: len(feedback) >= cancel_after)
            cancelling = handle.cancel_goal_async()
            assert probe.spin_until(cancelling.done)
        result = handle.get_result_async()
        assert probe.spin_until(result.done, 60)
        return result.result(), feedback

    from action_msgs.msg import GoalStatus

    result, feedback = run(500)
    assert result.status == GoalStatus.STATUS_SUCCEEDED and ok(result.result.result)
    assert result.result.result.error_message == '500 of 500 steps: sim time 1.501000000 s'
    assert now() == 1_501_000_000
    # one feedback per batch: up to each publish instant (every 10 ms), then the last step;
    # a burst of them (the steps take ~0.1 s), of which DDS may drop some (a keep-last
    # history), but in order and the last one always
    instants = [t - 1001 for t in [*range(1010, 1501, 10), 1501]]  # [ms], from 1001 ms
    assert probe.spin_until(lambda: published and published[-1].completed_steps == 500)
    done = [f.completed_steps for f in published]
    assert len(done) >= 10 and done == [t for t in instants if t in done]
    assert all(f.completed_steps + f.remaining_steps == 500 for f in published)
    seen = [f.completed_steps for f in feedback]  # the client's: some, in order
    assert seen and seen == [t for t in done if t in seen]
    before = now()
    result, feedback = run(10**9, cancel_after=3)
    assert result.status == GoalStatus.STATUS_CANCELED
    text = result.result.result.error_message
    made = int(re.match(r'canceled after (\d+) of 1000000000 steps', text).group(1))
    assert 30 <= made < 10**9 and now() == before + made * 1_000_000  # exact: k steps of 1 ms

    # playing: stepping refused, the states and their transitions
    assert ok(set_state(SimulationState.STATE_PLAYING))
    assert state() == SimulationState.STATE_PLAYING
    reply = step(5)
    assert reply.result.result == Result.RESULT_OPERATION_FAILED
    assert 'the simulation is playing: stepping needs it paused' in reply.result.error_message
    result, _ = run(5)
    assert result.status == GoalStatus.STATUS_ABORTED
    assert result.result.result.result == Result.RESULT_OPERATION_FAILED
    assert set_state(SimulationState.STATE_PLAYING).result == (
        SetSimulationState.Response.ALREADY_IN_TARGET_STATE
    )
    for target, text in ((4, 'got 4 (no world)'), (5, 'got 5 (loading world)'), (17, 'got 17')):
        reply = set_state(target)
        assert reply.result == Result.RESULT_FEATURE_UNSUPPORTED and text in reply.error_message
    assert probe.spin_until(lambda: probe.clock[-1] > before + made * 1_000_000 + 100_000_000)

    # resets: the state scope (time goes on), the time scope (the clock back to 0)
    clock_resets = 0
    assert ok(set_state(SimulationState.STATE_PAUSED))
    t_paused = now()
    reply = probe.call(ResetSimulation, 'reset_simulation', ResetSimulation.Request(scope=2))
    assert ok(reply.result) and reply.result.error_message.startswith('reset state')
    assert now() == t_paused + 1_000_000  # a jump of the state takes one step
    reply = probe.call(ResetSimulation, 'reset_simulation', ResetSimulation.Request(scope=1))
    assert ok(reply.result) and 'sim time 0.000000000 s' in reply.result.error_message
    clock_resets += 1
    assert now() == 0
    assert probe.spin_until(lambda: probe.clock[-1] == 0)
    reply = probe.call(ResetSimulation, 'reset_simulation', ResetSimulation.Request(scope=4))
    assert ok(reply.result) and '0 targets removed' in reply.result.error_message
    reply = probe.call(ResetSimulation, 'reset_simulation', ResetSimulation.Request(scope=8))
    assert reply.result.result == Result.RESULT_FEATURE_UNSUPPORTED
    assert 'got 8' in reply.result.error_message
    assert now() == 0  # the spawned scope with nothing spawned changes nothing
    assert ok(step(250).result) and now() == 250_000_000

    # stopped: everything reset (time 0), paused; stepping refused until paused or played
    assert ok(set_state(SimulationState.STATE_STOPPED))
    clock_resets += 1
    assert state() == SimulationState.STATE_STOPPED and now() == 0
    assert 'the simulation is stopped' in step(1).result.error_message
    assert set_state(SimulationState.STATE_STOPPED).result == (
        SetSimulationState.Response.ALREADY_IN_TARGET_STATE
    )
    assert ok(set_state(SimulationState.STATE_PAUSED))
    assert state() == SimulationState.STATE_PAUSED and now() == 0
    assert ok(step(3).result) and now() == 3_000_000
    # the default scope: time and state
    assert ok(set_state(SimulationState.STATE_PLAYING))
    assert probe.spin_until(lambda: probe.clock[-1] > 200_000_000)
    reply = probe.call(ResetSimulation, 'reset_simulation', ResetSimulation.Request(scope=0))
    assert ok(reply.result) and 'state (inputs cleared) and time' in reply.result.error_message
    clock_resets += 1
    assert probe.spin_until(lambda: probe.clock[-1] > 100_000_000)
    # /clock went back exactly at the time resets, and only there
    back = np.flatnonzero(np.diff(probe.clock) < 0)
    assert back.size == clock_resets, [probe.clock[max(0, i - 3) : i + 3] for i in back]
    assert 0 in probe.clock
    assert sim.is_running()

    # quitting (SimulationState.msg: "stop the simulation first, and then exit"): answered,
    # then the process ends by itself with status 0 (it was refused as unsupported)
    reply = set_state(SimulationState.STATE_QUITTING)
    assert ok(reply), reply.error_message
    assert reply.error_message.startswith('quitting: stopped: reset'), reply.error_message
    assert probe.spin_until(lambda: not sim.is_running(), 30), sim.describe()
    assert sim.returncode == 0, sim.describe()
    assert 'never retrieved' not in sim.stderr(), sim.describe()  # (raised once, collected)


def _entity_request(position, quaternion, linear, angular, frame='world', entity=ENTITY):
    from simulation_interfaces.srv import SetEntityState

    request = SetEntityState.Request(entity=entity)
    request.state.header.frame_id = frame
    p, o = request.state.pose.position, request.state.pose.orientation
    p.x, p.y, p.z = (float(x) for x in position)
    o.x, o.y, o.z, o.w = (float(x) for x in quaternion)
    lin, ang = request.state.twist.linear, request.state.twist.angular
    lin.x, lin.y, lin.z = (float(x) for x in linear)
    ang.x, ang.y, ang.z = (float(x) for x in angular)
    return request


def _with_acceleration(request, value: float):
    request.state.acceleration.angular.z = value
    return request


def _state_vectors(state) -> tuple[np.ndarray, ...]:
    p, o = state.pose.position, state.pose.orientation
    lin, ang = state.twist.linear, state.twist.angular
    return (
        np.array([p.x, p.y, p.z]),
        np.array([o.x, o.y, o.z, o.w]),
        np.array([lin.x, lin.y, lin.z]),
        np.array([ang.x, ang.y, ang.z]),
    )


@pytest.mark.ros
def test_entities_state_round_trip_and_bad_input(ros_process, probe) -> None:
    """A base state set and read back to 1e-12; the model follows it (momentum, and 100
    steps equal to the core's); every bad request refused naming the culprit, the simulation
    running on."""
    from simulation_interfaces.msg import Result
    from simulation_interfaces.srv import (
        DeleteEntity,
        GetEntities,
        GetEntitiesStates,
        GetEntityState,
        SetEntityState,
        SpawnEntity,
        StepSimulation,
    )

    q_joints = [0.3, -0.4, 0.2, 0.9, -0.1, 0.5, 0.2]
    sim = start_sim(
        ros_process,
        'start_paused:=true',
        f'initial_joint_positions:={q_joints}',
        'initial_joint_velocities:=[0.01, 0.0, -0.02, 0.0, 0.0, 0.03, 0.0]',
    )
    probe.connect()
    entities = probe.call(GetEntities, 'get_entities')
    assert ok(entities.result) and entities.entities == [ENTITY]
    request = GetEntities.Request()
    request.filters.filter = 'servicer_[0-9]dof$'
    assert probe.call(GetEntities, 'get_entities', request).entities == [ENTITY]
    request.filters.filter = '^planar'
    assert probe.call(GetEntities, 'get_entities', request).entities == []
    request.filters.filter = '(unclosed'
    reply = probe.call(GetEntities, 'get_entities', request)
    assert reply.result.result == Result.RESULT_OPERATION_FAILED
    assert "expected a regular expression, got '(unclosed'" in reply.result.error_message
    request.filters.filter = ''
    request.filters.tags.tags = ['arm']
    reply = probe.call(GetEntities, 'get_entities', request)
    assert reply.result.result == Result.RESULT_FEATURE_UNSUPPORTED

    rng = np.random.default_rng(11)
    position = rng.normal(0.0, 2.0, 3)
    quaternion = quat_normalize(rng.normal(size=4))
    linear, angular = rng.normal(0.0, 0.2, 3), rng.normal(0.0, 0.05, 3)
    reply = probe.call(
        SetEntityState,
        'set_entity_state',
        _entity_request(position, quaternion, linear, angular),
    )
    assert ok(reply.result), reply.result.error_message
    got = probe.call(GetEntityState, 'get_entity_state', GetEntityState.Request(entity=ENTITY))
    assert ok(got.result) and got.state.header.frame_id == 'world'
    assert stamp(got.state) == 1_000_000  # set at t = 0: one step later
    for read, wrote in zip(
        _state_vectors(got.state), (position, quaternion, linear, angular), strict=True
    ):
        assert np.abs(read - wrote).max() <= 1e-12
    both = probe.call(GetEntitiesStates, 'get_entities_states')
    assert both.entities == [ENTITY] and both.states[0] == got.state
    # the model follows: the published momentum is that of the base state with the joints
    q_base, v_base = D.base_state_from_link(MODEL, position, quaternion, linear, angular)
    phidot = np.array([0.01, 0.0, -0.02, 0.0, 0.0, 0.03, 0.0])
    q, v = np.r_[q_base, q_joints], np.r_[v_base, phidot]
    h, com = D.momentum_and_com(MODEL, q, v)
    assert probe.spin_until(lambda: probe.momentum and probe.joints)
    assert probe.spin_until(lambda: stamp(probe.joints[-1]) == 1_000_000)
    assert np.abs(np.array(probe.momentum[-1].data) - np.r_[h, com]).max() < 1e-9
    assert np.abs(np.array(probe.joints[-1].position) - q_joints).max() == 0.0
    # ... and steps on from there as the core does
    reply = probe.call(StepSimulation, 'step_simulation', StepSimulation.Request(steps=100))
    assert ok(reply.result)
    got = probe.call(GetEntityState, 'get_entity_state', GetEntityState.Request(entity=ENTITY))
    q1, v1 = D.step(MODEL, q, v, np.zeros(N), 1e-3, steps=100, conserve_momentum=True)
    expected = D.base_link_state(MODEL, q1, v1)
    for read, want in zip(_state_vectors(got.state), expected, strict=True):
        assert np.abs(read - want).max() < 1e-12

    # bad input: the standard codes, the culprit named
    invalid = SetEntityState.Response.INVALID_POSE
    unit = [0.0, 0.0, 0.0, 1.0]
    for request, code, text in (
        (
            _entity_request(position, unit, linear, angular, entity='target_1'),
            Result.RESULT_NOT_FOUND,
            "unknown entity 'target_1': expected one of ['ffsim_servicer_7dof']",
        ),
        (
            _entity_request([0.0, math.nan, 0.0], unit, linear, angular),
            invalid,
            "{'state.pose.position.y': nan}",
        ),
        (
            _entity_request(position, unit, [math.inf, 0, 0], angular),
            invalid,
            "{'state.twist.linear.x': inf}",
        ),
        (  # the acceleration is ignored, but a NaN in it is not taken silently
            _with_acceleration(_entity_request(position, unit, linear, angular), math.nan),
            invalid,
            "{'state.acceleration.angular.z': nan}",
        ),
        (
            _entity_request([2e6, 0.0, 0.0], unit, linear, angular),
            invalid,
            "magnitude <= 1e+06, got {'state.pose.position.x': 2000000.0}",
        ),
        (
            _entity_request(position, [0.0, 0.0, 0.0, 0.0], linear, angular),
            invalid,
            'expected a unit quaternion',
        ),
        (
            _entity_request(position, [0.0, 0.0, 1.0, 1.0], linear, angular),
            invalid,
            'of norm 1.41421',
        ),
        (
            _entity_request(position, unit, linear, angular, frame='base_link'),
            Result.RESULT_NOT_FOUND,
            "frame_id: expected 'world' (or empty), got 'base_link'",
        ),
    ):
        reply = probe.call(SetEntityState, 'set_entity_state', request)
        assert reply.result.result == code and text in reply.result.error_message, reply
    reply = probe.call(GetEntityState, 'get_entity_state', GetEntityState.Request(entity='x'))
    assert reply.result.result == Result.RESULT_NOT_FOUND and "'x'" in reply.result.error_message
    spawn = SpawnEntity.Request(name='target_1', uri='file:///nonexistent/target.urdf')
    for srv, name, request, code, text in (
        (
            SpawnEntity,
            'spawn_entity',
            spawn,
            Result.RESULT_NOT_FOUND,
            "uri: cannot read '/nonexistent/target.urdf': No such file",
        ),
        (
            DeleteEntity,
            'delete_entity',
            DeleteEntity.Request(entity=ENTITY),
            Result.RESULT_OPERATION_FAILED,
            'is the robot, which cannot be deleted',
        ),
    ):
        reply = probe.call(srv, name, request)
        assert reply.result.result == code and text in reply.result.error_message
    # nothing changed, and the simulation runs on
    again = probe.call(GetEntityState, 'get_entity_state', GetEntityState.Request(entity=ENTITY))
    assert again.state == got.state
    assert ok(
        probe.call(StepSimulation, 'step_simulation', StepSimulation.Request(steps=10)).result
    )
    assert (
        stamp(
            probe.call(
                GetEntityState, 'get_entity_state', GetEntityState.Request(entity=ENTITY)
            ).state
        )
        == stamp(got.state) + 10_000_000
    )
    assert sim.is_running()


@pytest.mark.ros
def test_joint_state_commands_by_name(ros_process, probe, publish_until) -> None:
    """Efforts by joint name, any subset, each joint timing out on its own; bad commands
    refused whole, with a throttled error naming the joints; the positional topic beside."""
    from sensor_msgs.msg import JointState
    from std_msgs.msg import Float64MultiArray

    sim = start_sim(ros_process, 'velocity_limits:=false', 'command_timeout:=0.3')
    probe.connect()
    pub = probe.node.create_publisher(JointState, 'joint_commands', 10)
    positional = probe.node.create_publisher(Float64MultiArray, 'joint_effort_commands', 10)
    assert probe.spin_until(
        lambda: pub.get_subscription_count() > 0 and positional.get_subscription_count() > 0
    )

    def send(names, efforts, positions=()):
        pub.publish(JointState(name=names, effort=[float(e) for e in efforts], position=positions))

    def effort_is(expected) -> bool:
        return bool(probe.joints) and list(probe.joints[-1].effort) == list(expected)

    assert publish_until(
        lambda: send(['arm_joint_5', 'arm_joint_2'], [-10.0, 20.0]),
        lambda: effort_is([0, 20, 0, 0, -10, 0, 0]),
    ), sim.describe()
    for names, efforts, positions, text in (
        (['arm_joint_1', 'gripper'], [1, 1], (), "unknown joints ['gripper']"),
        (['arm_joint_1', 'arm_joint_3'], [1, math.nan], (), "{'arm_joint_3': nan}"),
        (['arm_joint_1'], [1, 2], (), 'one effort per name (1), got 2'),
        (['arm_joint_1'], [], [0.5], 'the joints are effort-driven'),
    ):
        send(names, efforts, positions)
        assert probe.spin_until(lambda t=text: t in sim.stderr(), 20), sim.describe()
    send(['arm_joint_1'], [5.0])  # keeps 2 and 5
    assert probe.spin_until(lambda: effort_is([5, 20, 0, 0, -10, 0, 0]))
    assert not any(m.effort[0] == 1.0 for m in probe.joints)  # nothing of the bad ones
    # keep arm_joint_1 fresh only: the others drop 0.3 s (simulated) after their command
    start = stamp(probe.joints[-1])

    def refreshed_until_drop() -> bool:
        send(['arm_joint_1'], [5.0])
        return effort_is([5, 0, 0, 0, 0, 0, 0])

    assert probe.spin_until(refreshed_until_drop, 30)
    assert stamp(probe.joints[-1]) - start <= 400_000_000
    # the positional command sets every joint
    # (arm_joint_1: 1, or 5 from a name-keyed command of the loop above still in flight)
    mark = len(probe.joints)
    positional.publish(Float64MultiArray(data=[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0]))
    assert probe.spin_until(
        lambda: any(list(m.effort[1:]) == [2, 3, 4, 5, 6, 7] for m in probe.joints[mark:])
    )
    assert sim.is_running()


@pytest.mark.ros
def test_services_queue_a_burst_of_requests(rclpy_context) -> None:
    """Every service of the simulator queues SERVICE_QUEUE_DEPTH requests (rclpy's default of
    10 dropped two thirds of a burst of 30 silently, the callers waiting forever)."""
    from ffsim_ros.node_support.scene_services import SERVICE_QUEUE_DEPTH
    from ffsim_ros.simulator import Simulator

    sim = Simulator(context=rclpy_context)
    try:
        depths = {
            s.srv_name: s.qos_profile.depth for s in sim.services if s.srv_name.startswith('~/')
        }  # (not rclpy's own: parameters, type description)
        shallow = {k: v for k, v in depths.items() if v != SERVICE_QUEUE_DEPTH}
        assert len(depths) == 15 and not shallow, depths
    finally:
        sim.destroy_node()


def test_a_base_spin_the_physics_step_refuses_is_not_set() -> None:
    """SetEntityState on the robot at 40 rad/s with 10 Hz physics: the state was set, then the
    next step faulted (the base would turn by 4 rad in it, which the step refuses). Refused
    now (INVALID_POSE) naming the rate allowed and the physics rate, the state unchanged; 30
    rad/s (3 rad a step) is set, and the step takes it."""
    from simulation_interfaces.msg import Result
    from simulation_interfaces.srv import SetEntityState

    from ffsim_ros.node_support.sim_interfaces import RequestError
    from ffsim_ros.scene import Scene
    from ffsim_ros.sim import TargetWorld

    q0, v0 = D.neutral(MODEL), np.zeros(MODEL.nv)
    scene = Scene(MODEL, gripper=None, dt=0.1, q=q0, v=v0)
    engine = Engine(MODEL, q0, v0, dt_ns=100_000_000, paused=True, world=TargetWorld(scene))
    interfaces, _, _, _ = _interfaces()
    interfaces.node.engine, interfaces.node.model = engine, MODEL
    interfaces._physics = lambda action, publish=False: action(engine)
    unit = [0.0, 0.0, 0.0, 1.0]
    request = _entity_request([0.0] * 3, unit, [0.0] * 3, [0.0, 24.0, 32.0])  # 40 rad/s
    with pytest.raises(RequestError) as info:
        interfaces._set_entity(request, SetEntityState.Response())
    assert info.value.code == SetEntityState.Response.INVALID_POSE
    assert str(info.value).endswith(
        'state.twist.angular: expected the base to turn by less than pi rad per physics step '
        '(the step refuses more), |w| below 31.42 rad/s at physics_rate_hz 10, got |w| = 40 '
        'rad/s (4 rad per step)'
    ), str(info.value)
    assert engine.step == 0 and np.array_equal(engine.snapshot().v, v0)
    assert interfaces.node.resets == []  # (refused: no reset announced)
    request = _entity_request([0.0] * 3, unit, [0.0] * 3, [0.0, 18.0, 24.0])  # 30 rad/s
    reply = interfaces._set_entity(request, SetEntityState.Response())
    assert reply.result.result == Result.RESULT_OK, reply.result.error_message
    assert len(interfaces.node.resets) == 1  # (set: announced as a reset of the state)
    assert engine.step == 1 and np.allclose(engine.snapshot().v[3:6], [0.0, 18.0, 24.0])
    # (the step takes it: 3 rad; the arm whipped at 30 rad/s may run away at 10 Hz)
    assert 'would turn by' not in engine.advance(1, stepping=True).fault


def test_a_target_spin_the_physics_step_refuses_is_not_spawned_or_set() -> None:
    """A target spawned or set at 1732 rad/s with 500 Hz physics (3.46 rad a step) was taken,
    then the whole simulation faulted at the next step naming the robot's base. Refused now
    as the robot's twist is (INVALID_POSE, the same words, naming the target), nothing
    added or moved, the simulation running on."""
    from simulation_interfaces.srv import SetEntityState, SpawnEntity

    from ffsim_ros.node_support.scene_services import EntityError, parse_spawn
    from ffsim_ros.node_support.sim_interfaces import RequestError
    from ffsim_ros.scene import Scene
    from ffsim_ros.sim import TargetWorld

    q0, v0 = D.neutral(MODEL), np.zeros(MODEL.nv)
    scene = Scene(MODEL, gripper=None, dt=0.002, q=q0, v=v0)
    engine = Engine(MODEL, q0, v0, dt_ns=2 * MS, world=TargetWorld(scene))
    interfaces, _, _, _ = _interfaces()
    interfaces.node.engine, interfaces.node.model = engine, MODEL
    interfaces._physics = lambda action, publish=False: action(engine)
    words = (
        "expected target '{}' to turn by less than pi rad per physics step (the step refuses "
        'more), |w| below 1571 rad/s at physics_rate_hz 500, got |w| = 1732 rad/s (3.46 rad '
        'per step)'
    )

    def spawn(name: str, spin: str = ''):
        request = SpawnEntity.Request(
            name=name, resource_string=f'{{shape: {{type: sphere, radius: 0.2}}, mass: 4{spin}}}'
        )
        request.initial_pose.pose.position.x = 20.0
        request.initial_pose.pose.orientation.w = 1.0
        return interfaces._spawn(request, SpawnEntity.Response())

    with pytest.raises(RequestError) as info:
        spawn('spin1', ', angular_velocity: [1000, 1000, 1000]')
    assert info.value.code == SpawnEntity.Response.INVALID_POSE
    assert str(info.value) == f'resource.angular_velocity: {words.format("spin1")}'
    assert engine.step == 0 and not engine.world.active
    spawn('spin2')
    request = _entity_request([20.0, 0, 0], [0, 0, 0, 1], [0.0] * 3, [1000.0] * 3, entity='spin2')
    with pytest.raises(RequestError) as info:
        interfaces._set_entity(request, SetEntityState.Response())
    assert info.value.code == SetEntityState.Response.INVALID_POSE
    assert str(info.value) == f'state.twist.angular: {words.format("spin2")}'
    snap = engine.advance(5)
    assert not snap.faulted and snap.step == 6
    assert np.array_equal(snap.world.targets['spin2'].root.angular_velocity, np.zeros(3))
    # a tumble's spin (965 rad/s: 1.93 rad a step at 500 Hz, 3.86 at 250 Hz)
    request = SpawnEntity.Request(
        name='t',
        resource_string='{shape: {type: box, size: [0.4, 0.3, 0.2]}, mass: 4, tumble: '
        '{spin_rate: 900, nutation: 0.3}}',
    )
    request.initial_pose.pose.orientation.w = 1.0
    assert parse_spawn(request, 't', 'world', 0.002).name == 't'
    with pytest.raises(EntityError) as info:
        parse_spawn(request, 't', 'world', 0.004)
    assert info.value.code == SpawnEntity.Response.INVALID_POSE
    assert str(info.value).startswith(
        "resource.tumble: expected target 't' to turn by less than pi rad per physics step"
    ), str(info.value)


def test_a_faulted_simulation_refuses_changes_of_its_targets_but_resets() -> None:
    """Spawn, delete, set a target on a faulted simulation: answered success, the fault
    cleared, the state that faulted stepped and published again under a new stamp (it faulted
    again, saying less). Refused now (RESULT_OPERATION_FAILED, naming the fault), nothing
    changed; a reset of the state and the spawned targets (removed first) still clears it,
    a reset of the spawned targets alone is refused as the other changes."""
    from types import SimpleNamespace

    from simulation_interfaces.msg import Result
    from simulation_interfaces.srv import (
        DeleteEntity,
        ResetSimulation,
        SetEntityState,
        SpawnEntity,
    )

    from ffsim_ros.scene import Scene, Sphere, rigid_target
    from ffsim_ros.sim import TargetWorld

    # a scenario's block spinning at 0.9 pi rad per 10 ms step about its intermediate axis:
    # the coarse steps speed it up until one would turn it by more than pi rad (a fault)
    w = 0.9 * np.pi / 0.01 * np.array([0.02, 0.9998, 0.0]) / np.hypot(0.02, 0.9998)
    tumbler = rigid_target(
        'tumbler',
        mass=10.0,
        shape=Sphere(0.2),
        inertia=np.diag([1.0, 2.0, 2.9]),
        position=(20.0, 0.0, 0.0),
        angular_velocity=w,
    )
    q0, v0 = D.neutral(MODEL), np.zeros(MODEL.nv)
    scene = Scene(MODEL, gripper=None, dt=0.01, q=q0, v=v0)
    engine = Engine(MODEL, q0, v0, dt_ns=10 * MS, world=TargetWorld(scene, [tumbler]))
    interfaces, _, _, _ = _interfaces()
    interfaces.node.engine, interfaces.node.model = engine, MODEL
    interfaces.node.end_step_jobs = lambda why: None
    interfaces.node.get_logger = lambda: SimpleNamespace(warning=lambda *args, **kwargs: None)
    interfaces._physics = lambda action, publish=False: action(engine)
    guarded = {
        name: interfaces._guarded(getattr(interfaces, name))
        for name in ('_spawn', '_delete', '_set_entity', '_reset')
    }

    def spawn(name: str):
        request = SpawnEntity.Request(
            name=name, resource_string='{shape: {type: sphere, radius: 0.2}, mass: 4}'
        )
        request.initial_pose.pose.position.x = -20.0 - len(name)
        request.initial_pose.pose.orientation.w = 1.0
        return guarded['_spawn'](request, SpawnEntity.Response()).result

    assert spawn('ball').result == Result.RESULT_OK
    faulted = engine.advance(100)
    assert faulted.faulted
    step = engine.step
    moved = _entity_request([-30.0, 0, 0], [0, 0, 0, 1], [0.0] * 3, [0.0] * 3, entity='ball')
    for result in (
        spawn('other'),
        guarded['_delete'](DeleteEntity.Request(entity='ball'), DeleteEntity.Response()).result,
        guarded['_set_entity'](moved, SetEntityState.Response()).result,
        guarded['_reset'](ResetSimulation.Request(scope=4), ResetSimulation.Response()).result,
    ):
        assert result.result == Result.RESULT_OPERATION_FAILED
        assert result.error_message == (
            f"integration stopped: {faulted.fault} (reset, or set the robot's state, first); "
            'the targets were not changed'
        )
        assert engine.fault == faulted.fault and engine.step == step
        assert set(engine.world.targets) == {'tumbler', 'ball'}
        assert np.array_equal(engine.snapshot().world.targets['ball'].com, [-24.0, 0.0, 0.0])
    scope = ResetSimulation.Request.SCOPE_STATE | ResetSimulation.Request.SCOPE_SPAWNED
    result = guarded['_reset'](ResetSimulation.Request(scope=scope), ResetSimulation.Response())
    assert result.result.result == Result.RESULT_OK, result.result.error_message
    assert not engine.faulted and set(engine.world.targets) == {'tumbler'}  # (ball: spawned)


@pytest.mark.ros
def test_spawned_and_deleted_target_topics_leave_nothing_behind(rclpy_context) -> None:
    """Each target's odometry publisher, made at a spawn and destroyed at its delete, left the
    weak references of its QoS event handlers in the node's callback group (rclpy keeps them:
    ros2/rclpy#1356), ~110 B a spawn for good (soak probe: linear over 12 880 spawns)."""
    from rclpy.parameter import Parameter

    from ffsim_ros.simulator import Simulator

    sim = Simulator(
        context=rclpy_context, parameter_overrides=[Parameter('start_paused', value=True)]
    )
    try:
        entities = sim.default_callback_group.entities
        scene = sim.scene_interfaces
        scene.sync_topics(['t_0'])
        scene.sync_topics([])
        before = len(entities)
        for k in range(1, 200):
            scene.sync_topics([f't_{k}'])
            assert sim.count_publishers(f'targets/t_{k}/odom') == 1
            scene.sync_topics([])
        assert len(entities) == before  # (it grew by 2 per target)
        assert all(ref() is not None for ref in entities)
    finally:
        sim.destroy_node()
