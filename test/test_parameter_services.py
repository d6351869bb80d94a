"""Both nodes' parameter services over DDS against requests rclpy cannot convert, and the
ranges their descriptors carry.

Each node is spun by its own executor in a thread of its own, as in its process (the
simulator's ``TopicsInlineExecutor``, the controller's ``GuardedSingleThreadedExecutor``): both
re-raise what a callback raised, which ended the process (exit code 1) on one ``SetParameters``
whose ``ParameterValue.type`` was 99.
"""

from __future__ import annotations

import threading

import pytest

pytestmark = pytest.mark.ros


def test_a_bad_type_code_is_refused_and_the_nodes_go_on(
    rclpy_context, ros_node, ros_executor, wait_until
) -> None:
    """``Parameter(name='use_sim_time', value=ParameterValue(type=99))``, alone, next to a good
    parameter or in an atomic set, is refused naming the parameter and the type code; the good
    parameter of a non-atomic set is still set, the atomic set changes nothing, and each node
    answers the next request (``get_parameters``). The descriptors carry the closed ranges of
    the tables' checks, and a value outside one is refused with the table's message (rclpy's
    range check, which comes first, would say ``Parameter ... out of range``)."""
    from rcl_interfaces.msg import Parameter as ParameterMsg
    from rcl_interfaces.msg import ParameterType, ParameterValue
    from rcl_interfaces.srv import (
        DescribeParameters,
        GetParameters,
        SetParameters,
        SetParametersAtomically,
    )

    from ffsim_ros.node_support import GuardedSingleThreadedExecutor, TopicsInlineExecutor
    from ffsim_ros.reactionless_controller import ReactionlessControllerNode
    from ffsim_ros.simulator import Simulator

    bad = ParameterMsg(name='use_sim_time', value=ParameterValue(type=99))
    refusal = 'use_sim_time: expected a value of a ParameterType (type 0 to 9), got type 99'

    def value(name: str, **fields) -> ParameterMsg:
        return ParameterMsg(name=name, value=ParameterValue(**fields))

    sim = Simulator(context=rclpy_context)
    ctl = ReactionlessControllerNode(context=rclpy_context)
    spinners = [
        (sim, TopicsInlineExecutor(num_threads=2, context=rclpy_context)),
        (ctl, GuardedSingleThreadedExecutor(context=rclpy_context)),
    ]
    failures: list[BaseException] = []

    def spin(executor) -> None:
        try:
            executor.spin()
        except Exception as exc:  # noqa: BLE001 - what ended the node's process
            failures.append(exc)

    threads = []
    for node, executor in spinners:
        executor.add_node(node)
        threads.append(threading.Thread(target=spin, args=(executor,), daemon=True))
        threads[-1].start()
    probe = ros_node('parameter_probe')
    ros_executor.add_node(probe)

    def call(client, request):
        future = client.call_async(request)
        assert wait_until(lambda: future.done() or failures, 20, ros_executor)
        assert not failures, failures
        return future.result()

    try:
        for node, dynamic, new, old in [
            (sim, 'command_timeout', value('command_timeout', type=3, double_value=0.25), 0.5),
            (ctl, 'mode', value('mode', type=4, string_value='joint_pd'), 'reactionless'),
        ]:
            name = node.get_name()
            clients = {
                kind: probe.create_client(kind, f'{name}/{service}')
                for kind, service in [
                    (SetParameters, 'set_parameters'),
                    (SetParametersAtomically, 'set_parameters_atomically'),
                    (GetParameters, 'get_parameters'),
                    (DescribeParameters, 'describe_parameters'),
                ]
            }
            assert wait_until(
                lambda clients=clients: all(c.service_is_ready() for c in clients.values()),
                20,
                ros_executor,
            )
            good = value('use_sim_time', type=ParameterType.PARAMETER_BOOL, bool_value=False)
            results = call(
                clients[SetParameters], SetParameters.Request(parameters=[bad, good, bad])
            ).results
            assert [(r.successful, r.reason) for r in results] == [
                (False, refusal),
                (True, ''),
                (False, refusal),
            ], (name, results)
            result = call(
                clients[SetParametersAtomically],
                SetParametersAtomically.Request(parameters=[new, bad]),
            ).result
            assert (result.successful, result.reason) == (False, refusal), name
            assert node.get_parameter(dynamic).value == old
            values = call(
                clients[GetParameters], GetParameters.Request(names=['use_sim_time', dynamic])
            ).values
            assert values[0].type == ParameterType.PARAMETER_BOOL and not values[0].bool_value
            assert node is not sim or values[1].double_value == old
            assert node is not ctl or values[1].string_value == old
            # the ranges in the descriptors, and the table's message for a value outside
            ranged, low, high = (
                ('command_timeout', 1e-6, 3600.0) if node is sim else ('reach.max_plans', 0, 100)
            )
            (descriptor,) = call(
                clients[DescribeParameters], DescribeParameters.Request(names=[ranged])
            ).descriptors
            ranges = descriptor.floating_point_range or descriptor.integer_range
            assert [(r.from_value, r.to_value, r.step) for r in ranges] == [(low, high, 0)]
            if node is sim:  # (a dynamic parameter with a range)
                request = SetParameters.Request(
                    parameters=[value('command_timeout', type=3, double_value=1e9)]
                )
                results = call(clients[SetParameters], request).results
                assert [(r.successful, r.reason) for r in results] == [
                    (
                        False,
                        'command_timeout: expected a finite value in [1e-06, 3600], got '
                        '1000000000.0',
                    )
                ]
                assert sim.get_parameter('command_timeout').value == 0.5
        assert all(thread.is_alive() for thread in threads) and not failures
    finally:
        for _, executor in spinners:
            executor.shutdown(timeout_sec=5.0)
        for thread in threads:
            thread.join(timeout=10.0)
        sim.destroy_node()
        ctl.destroy_node()
