"""The simulator's inbox (``ffsim_ros.node_support.inbox``): held commands replace their
pending predecessor of the same kind since the last barrier, the engine ends as if every
request had been applied in order, and the inbox is bounded.

The equivalence is checked against the plain FIFO: random streams of full effort commands,
commands of joint subsets, base wrenches and barriers (requests that read and change the state:
a reset, a scaling), applied one by one to a reference state and through the inbox; every
barrier sees the same state and the final state is the same. Then in the node: a stream of
commands queued while the physics thread is not running leaves one request per kind, and the
engine, once started, holds the last of each.
"""

from __future__ import annotations

import queue
import threading

import numpy as np
import pytest

from ffsim_ros.node_support.inbox import MAX_PENDING, Inbox, InboxFull

N = 5  # joints of the state the random streams command


class State:
    """Efforts (N,), a wrench (6,) and what the barriers saw."""

    def __init__(self) -> None:
        self.tau = np.zeros(N)
        self.wrench = np.zeros(6)
        self.seen: list[tuple[int, tuple, tuple]] = []


def random_stream(rng: np.random.Generator, length: int) -> list[tuple[object, object]]:
    """``(key, action)`` pairs: ``key`` None for a barrier."""
    stream: list[tuple[object, object]] = []
    for k in range(length):
        kind = rng.choice(['efforts', 'joints', 'wrench', 'barrier'], p=[0.3, 0.35, 0.25, 0.1])
        if kind == 'efforts':
            tau = rng.normal(size=N)

            def action(s: State, tau: np.ndarray = tau) -> None:
                s.tau = tau.copy()

            stream.append(('efforts', action))
        elif kind == 'joints':
            idx = tuple(sorted(rng.choice(N, size=int(rng.integers(1, N + 1)), replace=False)))
            val = rng.normal(size=len(idx))

            def action(s: State, idx: tuple = idx, val: np.ndarray = val) -> None:
                s.tau[list(idx)] = val

            stream.append((('joints', *idx), action))
        elif kind == 'wrench':
            w = rng.normal(size=6)

            def action(s: State, w: np.ndarray = w) -> None:
                s.wrench = w.copy()

            stream.append(('wrench', action))
        else:
            scale = float(rng.choice([0.0, 0.5, -2.0]))

            def action(s: State, k: int = k, scale: float = scale) -> None:
                s.seen.append((k, tuple(s.tau), tuple(s.wrench)))
                s.tau = scale * s.tau

            stream.append((None, action))
    return stream


@pytest.mark.parametrize('seed', range(40))
def test_applying_the_inbox_equals_applying_every_request_in_order(seed: int) -> None:
    rng = np.random.default_rng(seed)
    stream = random_stream(rng, int(rng.integers(1, 300)))
    reference = State()
    for _, action in stream:  # the plain FIFO: every request, in order
        action(reference)
    inbox: Inbox = Inbox()
    through = State()
    drained = 0
    for key, action in stream:
        inbox.put(action, key)
        if rng.random() < 0.05:  # the physics thread drains now and then
            while True:
                try:
                    inbox.get_nowait()(through)
                    drained += 1
                except queue.Empty:
                    break
    while len(inbox):
        inbox.get_nowait()(through)
        drained += 1
    with pytest.raises(queue.Empty):
        inbox.get_nowait()
    np.testing.assert_array_equal(through.tau, reference.tau)
    np.testing.assert_array_equal(through.wrench, reference.wrench)
    assert through.seen == reference.seen  # every barrier, in order, saw the same state
    assert drained <= len(stream)


def test_a_stream_of_one_kind_leaves_one_entry_the_last() -> None:
    inbox: Inbox = Inbox()
    for k in range(100_000):
        inbox.put(k, 'wrench')
    assert len(inbox) == 1
    assert inbox.get_nowait() == 99_999
    assert len(inbox) == 0


def test_barriers_keep_their_place_and_commands_do_not_cross_them() -> None:
    inbox: Inbox = Inbox()
    for item, key in (
        ('e1', 'efforts'),
        ('w1', 'wrench'),
        ('e2', 'efforts'),  # replaces e1, after w1
        ('reset', None),
        ('e3', 'efforts'),  # after the reset: e2 stays before it
        ('w2', 'wrench'),
        ('w3', 'wrench'),
    ):
        inbox.put(item, key)
    out = [inbox.get_nowait() for _ in range(len(inbox))]
    assert out == ['w1', 'e2', 'reset', 'e3', 'w3']
    # drained past the barrier: a key pending before it is not one after it
    inbox.put('b', None)
    inbox.put('e4', 'efforts')
    inbox.get_nowait()
    inbox.put('e5', 'efforts')
    assert [inbox.get_nowait() for _ in range(len(inbox))] == ['e5']


def test_the_inbox_is_bounded_and_a_replacement_never_refused() -> None:
    inbox: Inbox = Inbox(limit=4)
    for k in range(3):
        inbox.put(k)
    inbox.put('e1', 'efforts')
    with pytest.raises(InboxFull, match=r'4 requests waiting \(at most 4\)'):
        inbox.put('late')
    with pytest.raises(InboxFull):
        inbox.put('w', 'wrench')  # a new kind is a new entry
    inbox.put('e2', 'efforts')  # replaces e1: no growth
    assert len(inbox) == 4
    assert [inbox.get_nowait() for _ in range(4)] == [0, 1, 2, 'e2']
    assert MAX_PENDING >= 1000


def test_producers_and_a_consumer_in_threads_lose_no_barrier() -> None:
    inbox: Inbox = Inbox()
    got: list[object] = []
    done = threading.Event()

    def consume() -> None:
        while not (done.is_set() and not len(inbox)):
            try:
                got.append(inbox.get_nowait())
            except queue.Empty:
                pass

    def produce(name: str) -> None:
        for k in range(2000):
            inbox.put((name, 'cmd', k), (name, 'cmd'))
            if k % 10 == 0:
                inbox.put((name, 'barrier', k))

    consumer = threading.Thread(target=consume)
    consumer.start()
    producers = [threading.Thread(target=produce, args=(n,)) for n in 'ab']
    for t in producers:
        t.start()
    for t in producers:
        t.join()
    done.set()
    consumer.join()
    for name in 'ab':
        barriers = [k for n, kind, k in got if n == name and kind == 'barrier']
        assert barriers == list(range(0, 2000, 10))  # all of them, in order
        commands = [k for n, kind, k in got if n == name and kind == 'cmd']
        assert commands == sorted(commands) and commands[-1] == 1999  # in order, the last kept


@pytest.mark.ros
def test_the_simulator_holds_the_last_command_of_a_stream_queued_while_it_waits(
    rclpy_context, ros_executor, wait_until
) -> None:
    """Commands delivered while the physics thread is not running (as during a stall) queue
    one request per kind; started, the engine holds the last efforts, per-joint efforts on top
    of them and the last wrench."""
    from geometry_msgs.msg import WrenchStamped
    from rclpy.parameter import Parameter
    from sensor_msgs.msg import JointState
    from std_msgs.msg import Float64MultiArray

    from ffsim_ros.simulator import Simulator

    sim = Simulator(
        context=rclpy_context,
        parameter_overrides=[Parameter('real_time_factor', value=0.0)],
    )
    try:
        callbacks = {s.topic_name.rsplit('/', 1)[-1]: s.callback for s in sim.subscriptions}
        n = sim.model.n
        names = list(sim.model.joint_names)
        rng = np.random.default_rng(1)
        for _ in range(3000):
            tau = rng.uniform(-1, 1, n)
            callbacks['joint_effort_commands'](Float64MultiArray(data=tau.tolist()))
            w = WrenchStamped()
            w.header.frame_id = 'world'
            w.wrench.force.x, w.wrench.torque.z = rng.uniform(-1, 1, 2)
            callbacks['base_wrench'](w)
        joint = JointState(name=[names[1]], effort=[0.25])
        callbacks['joint_commands'](joint)
        assert sim.pending_requests == 3  # efforts, wrench, joint 1 (not 6001 requests)
        sim.start()
        assert wait_until(lambda: sim.pending_requests == 0, 30, ros_executor)
        expected = tau.copy()
        expected[1] = 0.25
        np.testing.assert_array_equal(sim.engine.last_command[0], expected)
        held = sim.engine.wrenches
        assert held.base_frame == 'world'
        np.testing.assert_array_equal(held.base, [w.wrench.force.x, 0, 0, 0, 0, w.wrench.torque.z])
    finally:
        sim.stop()
        sim.destroy_node()
