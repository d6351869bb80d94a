"""``simulation_interfaces`` against the standard's own words (1.6.1, its definitions'
comments), where a probe found the simulator differing: full resets while a wrench is held or
with a closed chain, ``STATE_STOPPED`` as a reset of everything, renaming under concurrent
spawns, the spawned scope told by the target added (not its name), ``uri`` over
``resource_string``, the reserved name, POSIX classes in the name filter and sphere bounds.

First the parts without DDS (the target world, the bounds and name filters), then the
simulator node in a separate process probed over real DDS by real clients, as in
``test_sim_interfaces.py``: every check waits for discovery or for an answer.
"""

from __future__ import annotations

import numpy as np
import pytest
from test_sim_interfaces import ENTITY, Probe, ok, stamp, start_sim

from ffsim_ros.resources import sample_robot, share_path

SPHERE = '{shape: {type: sphere, radius: 0.1}, mass: 2.0}'


# --------------------------------------------------------------------- without DDS
def _world(targets=()):
    """A target world around the 7-DoF servicer at rest at the origin, with its URDF's
    collision shapes."""
    import ffsim_ros.dynamics as D
    from ffsim_ros.node_support.scene_support import world_setup

    urdf = sample_robot('ffsim_servicer_7dof')
    model = D.load_urdf(urdf)
    setup = world_setup('', model, urdf, 1_000_000)
    setup.targets = tuple(targets)
    q0 = np.r_[D.base_state_from_link(model, np.zeros(3), [0, 0, 0, 1])[0], np.zeros(model.n)]
    return setup.world(model, q0, np.zeros(model.nv), 1_000_000), q0


def _ball(name: str, y: float, radius: float = 0.1):
    from ffsim_ros.scene import target_from_dict

    desc = {'name': name, 'shape': {'type': 'sphere', 'radius': radius}, 'mass': 2.0}
    return target_from_dict({**desc, 'position': [0.0, y, 0.0]}, 'test')  # (+y: no robot)


def test_spawned_is_the_target_added_not_its_name() -> None:
    """A target spawned under the name of a removed initial one is spawned (the spawned
    scope removed it not); a reset of the state keeps it and leaves the initial one out."""
    world, q0 = _world([_ball('client', 5.0)])
    assert world.spawned == ()
    world.remove('client')
    world.add(_ball('client', 8.0))
    world.add(_ball('extra', 11.0))
    assert world.spawned == ('client', 'extra')
    world.reset(q0, np.zeros_like(q0[:-1]))
    assert world.shadowed == ['client'] and world.spawned == ('client', 'extra')
    assert world.scene.target_state('client')[0][1] == 8.0  # (the spawned one, reset)
    for name in world.spawned:
        world.remove(name)
    world.reset(q0, np.zeros_like(q0[:-1]))
    assert world.shadowed == [] and world.spawned == () and list(world.targets) == ['client']
    assert world.scene.target_state('client')[0][1] == 5.0


def test_sphere_bounds_select_the_entities_overlapping_it() -> None:
    """An entity overlaps the sphere by one of its shapes (touching counts) or by its root
    link origin; the robot by its URDF's collision shapes."""
    world, q0 = _world([_ball('near', 3.0), _ball('far', 20.0, radius=0.5)])
    cases = (
        ((0.0, 3.0, 0.15), 0.1, False, ['near']),  # the ball's shape (its centre outside)
        ((0.0, 3.0, 0.25), 0.1, False, []),  # 5 cm away from it
        ((0.0, 3.0, 0.2), 0.1, False, ['near']),  # touching
        ((0.0, 20.0, 0.0), 1e-3, False, ['far']),  # its origin
        ((0.0, 0.0, 0.0), 1e-3, True, []),  # the robot's origin
        ((0.0, 11.0, 0.0), 17.0, True, ['near', 'far']),
        ((0.0, 100.0, 0.0), 1.0, False, []),
        ((3.0, 0.0, 0.25), 0.1, True, []),  # the arm's last link (x up to 3.17 m)
    )
    for center, radius, robot, targets in cases:
        assert world.near_sphere(center, radius, q0) == (robot, targets), (center, radius)


def test_bounds_filter_takes_the_sphere_and_refuses_the_rest() -> None:
    from geometry_msgs.msg import Vector3
    from simulation_interfaces.msg import Bounds, Result

    from ffsim_ros.node_support.bounds_filter import sphere_bounds
    from ffsim_ros.node_support.scene_services import EntityError

    assert sphere_bounds(Bounds()) is None
    center, radius = sphere_bounds(
        Bounds(type=Bounds.TYPE_SPHERE, points=[Vector3(x=1.0, y=2.0, z=3.0), Vector3(x=0.5)])
    )
    assert center.tolist() == [1.0, 2.0, 3.0] and radius == 0.5
    for bounds, code, text in (
        (
            Bounds(type=Bounds.TYPE_BOX, points=[Vector3(), Vector3(x=1.0)]),
            Result.RESULT_FEATURE_UNSUPPORTED,
            'got 1 (TYPE_BOX: not supported)',
        ),
        (Bounds(type=2), Result.RESULT_FEATURE_UNSUPPORTED, 'TYPE_CONVEX_HULL'),
        (Bounds(type=9), Result.RESULT_FEATURE_UNSUPPORTED, 'got 9 (unknown'),
        (Bounds(points=[Vector3()]), Result.RESULT_OPERATION_FAILED, 'none with TYPE_EMPTY'),
        (Bounds(type=3, points=[Vector3()]), Result.RESULT_OPERATION_FAILED, 'got 1'),
        (
            Bounds(type=3, points=[Vector3(), Vector3(x=0.0)]),
            Result.RESULT_OPERATION_FAILED,
            'expected a radius > 0',
        ),
        (
            Bounds(type=3, points=[Vector3(x=float('nan')), Vector3(x=1.0)]),
            Result.RESULT_OPERATION_FAILED,
            'points[0]: expected a centre of finite',
        ),
    ):
        with pytest.raises(EntityError) as info:
            sphere_bounds(bounds)
        assert info.value.code == code and text in str(info.value), str(info.value)


def test_posix_classes_are_translated_for_re() -> None:
    """The standard's syntax is POSIX Extended: its classes in bracket expressions match as
    in the POSIX locale (each against the 128 ASCII characters)."""
    import re

    from ffsim_ros.node_support.name_filter import (
        POSIX_CLASSES,
        compile_name_filter,
        name_filter_problem,
        posix_to_python,
    )

    ascii_chars = [chr(k) for k in range(128)]
    predicates = {
        'alnum': str.isalnum,
        'alpha': str.isalpha,
        'blank': lambda c: c in ' \t',
        'cntrl': lambda c: ord(c) < 32 or ord(c) == 127,
        'digit': str.isdigit,
        'graph': lambda c: 33 <= ord(c) <= 126,
        'lower': str.islower,
        'print': lambda c: 32 <= ord(c) <= 126,
        'punct': lambda c: 33 <= ord(c) <= 126 and not c.isalnum(),
        'space': lambda c: c in ' \t\n\r\f\v',
        'upper': str.isupper,
        'xdigit': lambda c: c in '0123456789abcdefABCDEF',
    }
    assert set(predicates) == set(POSIX_CLASSES)
    for name, predicate in predicates.items():
        pattern = compile_name_filter(f'^[[:{name}:]]$')
        assert [c for c in ascii_chars if pattern.search(c)] == [
            c for c in ascii_chars if predicate(c)
        ], name
        negated = compile_name_filter(f'^[^[:{name}:]]$')
        assert [c for c in ascii_chars if negated.search(c)] == [
            c for c in ascii_chars if not predicate(c)
        ], name
    assert posix_to_python(r'[]a[:digit:]\]]x[:digit:]') == r'[]a0-9\]]x[:digit:]'
    assert name_filter_problem('^ffsim_servicer_[[:digit:]]dof$') is None
    assert compile_name_filter('^ffsim_servicer_[[:digit:]]dof$').search(ENTITY)
    assert compile_name_filter('(ffsim|x)+').search(ENTITY)
    assert re.search(posix_to_python('[[:alpha:]_]+[[:digit:]]'), ENTITY)


# --------------------------------------------------------------------------- over DDS
@pytest.fixture
def probe(ros_node, ros_executor, wait_until):
    return Probe(ros_node('probe'), ros_executor, wait_until)


def _spawn_request(name: str, position, text: str = SPHERE, uri: str = '', rename=False):
    from simulation_interfaces.srv import SpawnEntity

    request = SpawnEntity.Request(name=name, resource_string=text, uri=uri, allow_renaming=rename)
    p = request.initial_pose.pose.position
    p.x, p.y, p.z = (float(x) for x in position)
    request.initial_pose.pose.orientation.w = 1.0
    return request


def _sphere_filter(center, radius: float):
    from geometry_msgs.msg import Vector3
    from simulation_interfaces.msg import Bounds, EntityFilters

    x, y, z = (float(c) for c in center)
    points = [Vector3(x=x, y=y, z=z), Vector3(x=float(radius))]
    return EntityFilters(bounds=Bounds(type=Bounds.TYPE_SPHERE, points=points))


class Sim:
    """The calls of these tests on a probe."""

    def __init__(self, probe: Probe) -> None:
        self.probe = probe

    def reset(self, scope: int):
        from simulation_interfaces.srv import ResetSimulation

        request = ResetSimulation.Request(scope=scope)
        return self.probe.call(ResetSimulation, 'reset_simulation', request).result

    def set_state(self, state: int):
        from simulation_interfaces.msg import SimulationState
        from simulation_interfaces.srv import SetSimulationState

        request = SetSimulationState.Request(state=SimulationState(state=state))
        return self.probe.call(SetSimulationState, 'set_simulation_state', request).result

    def state(self) -> int:
        from simulation_interfaces.srv import GetSimulationState

        return self.probe.call(GetSimulationState, 'get_simulation_state').state.state

    def spawn(self, request):
        from simulation_interfaces.srv import SpawnEntity

        return self.probe.call(SpawnEntity, 'spawn_entity', request)

    def entities(self, filters=None) -> list[str]:
        from simulation_interfaces.srv import GetEntities

        request = (
            GetEntities.Request() if filters is None else GetEntities.Request(filters=filters)
        )
        reply = self.probe.call(GetEntities, 'get_entities', request)
        assert ok(reply.result), reply.result.error_message
        return list(reply.entities)

    def entity(self, name: str = ENTITY):
        from simulation_interfaces.srv import GetEntityState

        request = GetEntityState.Request(entity=name)
        reply = self.probe.call(GetEntityState, 'get_entity_state', request)
        assert ok(reply.result), reply.result.error_message
        return reply.state

    def step(self, steps: int) -> None:
        from simulation_interfaces.srv import StepSimulation

        request = StepSimulation.Request(steps=steps)
        reply = self.probe.call(StepSimulation, 'step_simulation', request)
        assert ok(reply.result), reply.result.error_message


@pytest.mark.ros
def test_full_resets_and_stopping_with_a_wrench_held(ros_process, probe, publish_until) -> None:
    """Scopes 0, 255 and 4 were refused while a base wrench was held ('remove the base and
    link wrenches first'), nothing reset; STATE_STOPPED kept the spawned targets. Now: the
    full resets clear the wrench and reset; SpawnEntity under a wrench is refused saying what
    to do; STATE_STOPPED removes the spawned targets, and again while stopped answers
    ALREADY_IN_TARGET_STATE (the standard's example) unless a spawn changed the state."""
    from geometry_msgs.msg import WrenchStamped
    from simulation_interfaces.msg import Result, SimulationState
    from simulation_interfaces.srv import SetSimulationState

    proc = start_sim(ros_process, 'start_paused:=true')
    probe.connect()
    sim = Sim(probe)
    pub = probe.node.create_publisher(WrenchStamped, '/base_wrench', 10)
    assert probe.spin_until(lambda: pub.get_subscription_count() > 0)
    wrench = WrenchStamped()
    wrench.header.frame_id = 'world'
    wrench.wrench.force.x = 100.0

    def vx() -> float:
        return sim.entity().twist.linear.x

    def hold_the_wrench() -> None:
        def moving() -> bool:
            sim.step(10)
            return vx() > 0.0

        assert publish_until(lambda: pub.publish(wrench), moving)

    hold_the_wrench()
    reply = sim.spawn(_spawn_request('ball', (5.0, 0.0, 0.0)))
    assert reply.result.result == Result.RESULT_OPERATION_FAILED
    assert 'expected no external wrench held (not applied while there are targets), got a ' in (
        reply.result.error_message
    )
    assert 'set a zero wrench (or reset the state) first' in reply.result.error_message
    assert sim.entities() == [ENTITY]  # nothing spawned
    # the spawned scope alone: nothing spawned, nothing changed (the wrench still held)
    before = stamp(sim.entity())
    result = sim.reset(4)
    assert ok(result) and result.error_message.startswith('reset spawned (0 targets removed)')
    assert stamp(sim.entity()) == before and vx() > 0.0
    for scope in (0, 255):
        result = sim.reset(scope)
        assert ok(result), result.error_message
        assert result.error_message == (
            'reset spawned (0 targets removed) and state (inputs cleared) and time: '
            'sim time 0.000000000 s'
        )
        state = sim.entity()
        assert stamp(state) == 0 and state.twist.linear.x == 0.0
        if scope == 0:
            hold_the_wrench()

    # (a zero wrench after the last one sent, in order: none held from here on)
    def still() -> bool:
        before = vx()
        sim.step(10)
        return vx() == before

    assert publish_until(lambda: pub.publish(WrenchStamped()), still)

    # STATE_STOPPED: a pause and a reset of every scope
    assert ok(sim.set_state(SimulationState.STATE_PLAYING))
    reply = sim.spawn(_spawn_request('ball', (5.0, 0.0, 0.0)))
    assert ok(reply.result), reply.result.error_message
    assert sim.entities() == [ENTITY, 'ball']
    result = sim.set_state(SimulationState.STATE_STOPPED)
    assert ok(result), result.error_message
    assert result.error_message.startswith('stopped: reset spawned (1 targets removed) and state')
    assert sim.entities() == [ENTITY] and sim.state() == SimulationState.STATE_STOPPED
    assert stamp(sim.entity()) == 0
    already = SetSimulationState.Response.ALREADY_IN_TARGET_STATE
    assert sim.set_state(SimulationState.STATE_STOPPED).result == already
    assert ok(sim.spawn(_spawn_request('ball_2', (5.0, 0.0, 0.0))).result)
    assert sim.state() == SimulationState.STATE_PAUSED  # (no longer the reset state)
    assert ok(sim.set_state(SimulationState.STATE_STOPPED))
    assert sim.entities() == [ENTITY] and sim.state() == SimulationState.STATE_STOPPED
    assert proc.is_running()


@pytest.mark.ros
def test_spawn_names_fields_and_entity_filters(ros_process, probe, tmp_path) -> None:
    """allow_renaming under 40 concurrent spawns of one name: each spawned under its own
    name (31 of 50 were NAME_NOT_UNIQUE); a burst of 1000 requests answered whole; uri over
    resource_string; 'robot' NAME_INVALID; the name filter's POSIX classes and literal
    alternations; sphere bounds."""
    from simulation_interfaces.msg import EntityFilters, Result, SimulationState
    from simulation_interfaces.srv import GetEntities, GetEntitiesStates, SpawnEntity

    proc = start_sim(ros_process, 'start_paused:=true')
    probe.connect()
    sim = Sim(probe)
    R = SpawnEntity.Response
    sim.spawn(_spawn_request('warm_up', (50.0, 0.0, 0.0)))  # (the client discovered)
    assert ok(sim.reset(255))
    client = probe.clients['spawn_entity']
    futures = [
        client.call_async(_spawn_request('f', (10.0 + k, 0.0, 0.0), rename=True))
        for k in range(40)
    ]
    assert probe.spin_until(lambda: all(f.done() for f in futures), 60)
    replies = [f.result() for f in futures]
    assert [r.result.result for r in replies] == [Result.RESULT_OK] * 40, [
        r.result.error_message for r in replies if not ok(r.result)
    ]
    assert sorted(r.entity_name for r in replies) == sorted(
        ['f', *(f'f_{k}' for k in range(1, 40))]
    )
    result = sim.reset(255)
    assert ok(result) and 'spawned (40 targets removed)' in result.error_message
    # a burst of SERVICE_QUEUE_DEPTH requests sent at once: each answered (a queue of 100
    # answered 107 of 300 spawns, the rest lost silently, their callers waiting forever)
    from rclpy.qos import QoSProfile
    from simulation_interfaces.srv import GetEntityState

    from ffsim_ros.node_support.scene_services import SERVICE_QUEUE_DEPTH

    burst = probe.node.create_client(
        GetEntityState,
        '/ffsim_simulator/get_entity_state',
        qos_profile=QoSProfile(depth=2 * SERVICE_QUEUE_DEPTH),
    )
    assert probe.spin_until(burst.service_is_ready, 60)
    request = GetEntityState.Request(entity=ENTITY)
    futures = [burst.call_async(request) for _ in range(SERVICE_QUEUE_DEPTH)]
    assert probe.spin_until(lambda: all(f.done() for f in futures), 60), sum(
        f.done() for f in futures
    )
    assert all(ok(f.result().result) for f in futures)

    # uri given: resource_string ignored (here not even YAML); neither: NO_RESOURCE
    path = tmp_path / 'ball.yaml'
    path.write_text('{shape: {type: sphere, radius: 0.1}, mass: 2.0}\n')
    reply = sim.spawn(_spawn_request('both', (5.0, 0.0, 0.0), text='{not yaml: [', uri=str(path)))
    assert ok(reply.result) and reply.entity_name == 'both', reply.result.error_message
    reply = sim.spawn(_spawn_request('none', (7.0, 0.0, 0.0), text=''))
    assert reply.result.result == R.NO_RESOURCE
    assert 'got neither' in reply.result.error_message
    for rename in (False, True):
        reply = sim.spawn(_spawn_request('robot', (7.0, 0.0, 0.0), rename=rename))
        assert reply.result.result == R.NAME_INVALID
        assert "expected another name than 'robot' (reserved" in reply.result.error_message

    # name filters: POSIX classes, a literal alternation repeated
    for pattern, names in (
        ('_[[:digit:]]dof$', [ENTITY]),
        ('^[[:lower:]]+$', ['both']),
        ('[[:upper:]]', []),
        ('^(ffsim|x)+_', [ENTITY]),
        ('(bo|th)+$', ['both']),
    ):
        assert sim.entities(EntityFilters(filter=pattern)) == names, pattern
    reply = probe.call(
        GetEntities, 'get_entities', GetEntities.Request(filters=EntityFilters(filter='[[:x:]]'))
    )
    assert reply.result.result == Result.RESULT_OPERATION_FAILED
    assert 'expected a POSIX class' in reply.result.error_message

    # sphere bounds: the ball (radius 0.1 at x = 5) by its shape, the robot by its origin
    assert sim.entities(_sphere_filter((5.0, 0.0, 0.15), 0.1)) == ['both']
    assert sim.entities(_sphere_filter((5.0, 0.0, 0.25), 0.1)) == []
    assert sim.entities(_sphere_filter((0.0, 0.0, 0.0), 0.01)) == [ENTITY]
    assert sim.entities(_sphere_filter((2.5, 0.0, 0.0), 3.0)) == [ENTITY, 'both']
    filters = _sphere_filter((2.5, 0.0, 0.0), 3.0)
    filters.filter = '^b'
    reply = probe.call(
        GetEntitiesStates, 'get_entities_states', GetEntitiesStates.Request(filters=filters)
    )
    assert ok(reply.result) and list(reply.entities) == ['both']
    assert reply.states[0].pose.position.x == 5.0
    filters = _sphere_filter((0.0, 0.0, 0.0), 1.0)
    filters.bounds.type = filters.bounds.TYPE_BOX
    reply = probe.call(GetEntities, 'get_entities', GetEntities.Request(filters=filters))
    assert reply.result.result == Result.RESULT_FEATURE_UNSUPPORTED
    assert 'TYPE_BOX: not supported' in reply.result.error_message
    assert sim.state() == SimulationState.STATE_PAUSED and proc.is_running()


@pytest.mark.ros
def test_spawned_scope_by_target_with_the_capture_scenario(ros_process, probe) -> None:
    """A target spawned under the name of a deleted scenario target was left by the spawned
    scope (told by name); now it goes, and the full reset brings the scenario's back."""
    sim_proc = start_sim(ros_process, 'start_paused:=true', 'scenario:=capture')
    probe.connect()
    sim = Sim(probe)
    assert sim.entities() == [ENTITY, 'client']
    initial = sim.entity('client').pose.position
    from simulation_interfaces.srv import DeleteEntity

    reply = probe.call(DeleteEntity, 'delete_entity', DeleteEntity.Request(entity='client'))
    assert ok(reply.result), reply.result.error_message
    assert ok(sim.spawn(_spawn_request('client', (0.0, -7.0, 0.0))).result)
    result = sim.reset(4)
    assert ok(result) and result.error_message.startswith('reset spawned (1 targets removed)')
    assert sim.entities() == [ENTITY]
    # again, then a reset of the state: the spawned one kept, the scenario's not restored
    assert ok(sim.spawn(_spawn_request('client', (0.0, -7.0, 0.0))).result)
    result = sim.reset(2)
    assert ok(result)
    assert "scenario targets not restored, their names used by spawned ones: ['client']" in (
        result.error_message
    )
    assert sim.entity('client').pose.position.y == -7.0
    assert sim.entities(_sphere_filter((0.0, -7.0, 0.0), 0.01)) == ['client']
    result = sim.reset(255)
    assert ok(result) and 'spawned (1 targets removed)' in result.error_message
    back = sim.entity('client').pose.position
    assert [back.x, back.y, back.z] == [initial.x, initial.y, initial.z]
    assert sim_proc.is_running()


@pytest.mark.ros
def test_closed_chain_features_and_full_resets(ros_process, probe) -> None:
    """With loop closures (no targets) the full resets always failed ('targets: not
    supported with a closed chain') and the features listed spawning: now they work, and the
    features are what works."""
    from simulation_interfaces.msg import Result, SimulatorFeatures
    from simulation_interfaces.srv import GetSimulatorFeatures

    F = SimulatorFeatures
    proc = ros_process(
        'ffsim_ros.simulator',
        ros_args=[
            '-p', f'robot_file:={sample_robot("floating_platform")}',
            '--params-file', str(share_path('config', 'floating_platform.yaml')),
            '-p', 'start_paused:=true',
        ],
        name='sim',
    )  # fmt: skip
    probe.connect()
    sim = Sim(probe)
    features = probe.call(GetSimulatorFeatures, 'get_simulator_features').features
    listed = set(features.features)
    assert not listed & {F.SPAWNING, F.DELETING, F.SPAWNING_RESOURCE_STRING}, listed
    assert {F.SIMULATION_RESET, F.SIMULATION_RESET_SPAWNED, F.STEP_SIMULATION_ACTION} <= listed
    assert features.spawn_formats == [] and 'no targets' in features.custom_info
    sim.step(20)
    for scope in (0, 255, 4, 7):
        result = sim.reset(scope)
        assert ok(result), (scope, result.error_message)
        assert result.error_message.startswith('reset spawned (0 targets removed)')
    assert stamp(sim.entity(sim.entities()[0])) == 0
    reply = sim.spawn(_spawn_request('ball', (5.0, 0.0, 0.0)))
    assert reply.result.result == Result.RESULT_FEATURE_UNSUPPORTED
    assert 'not supported with a closed chain' in reply.result.error_message
    assert proc.is_running()
