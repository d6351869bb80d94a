"""rclpy's parameter services of a node behind a check of the requests they convert unguarded.

rclpy's ``set_parameters`` and ``set_parameters_atomically`` services convert each
``rcl_interfaces/Parameter`` of a request (``Parameter.from_parameter_msg``) outside the
``try`` that turns a refusal into ``successful=False``: a ``ParameterValue`` whose ``type`` is no
``ParameterType`` constant (``type=99``) raised ``ValueError`` in the service callback, which
the nodes' executors re-raise (as rclpy's do): one malformed request ended the simulator or the
controller with exit code 1. :func:`guard_parameter_services` puts those two callbacks behind
:func:`malformed_parameter`, which refuses such a parameter naming it and its type code, and
passes every other parameter on to rclpy's own callback unchanged. The type code is the only
part of a message rclpy cannot convert: every other field has the Python type the conversion
expects. The other parameter services (``get_parameters``, ``get_parameter_types``,
``describe_parameters``, ``list_parameters``) catch what a request of undeclared names or bad
prefixes raises and answer an empty response: they are left as they are.
"""

from __future__ import annotations

from collections.abc import Callable

from rcl_interfaces.msg import Parameter as ParameterMsg
from rcl_interfaces.msg import SetParametersResult
from rcl_interfaces.srv import SetParameters, SetParametersAtomically
from rclpy.node import Node
from rclpy.parameter import Parameter
from rclpy.parameter_service import ParameterService

from .common import SHOWN_CHARS, shown

#: The type codes a ``ParameterValue`` can carry (``rcl_interfaces/ParameterType``).
TYPE_CODES = frozenset(int(t) for t in Parameter.Type)

#: Wall seconds between two log lines of refused malformed requests.
LOG_PERIOD = 1.0


def malformed_parameter(msg: ParameterMsg) -> str | None:
    """Why rclpy cannot convert the parameter message ``msg``, or None.

    Parameters
    ----------
    msg : rcl_interfaces.msg.Parameter

    Returns
    -------
    str or None
        ``"use_sim_time: expected a value of a ParameterType (type 0 to 9), got type 99"``
        for a type code that is none of :data:`TYPE_CODES`.
    """
    code = msg.value.type
    if code in TYPE_CODES:
        return None
    name = msg.name if len(msg.name) <= SHOWN_CHARS else shown(msg.name)
    return (
        f'{name}: expected a value of a ParameterType (type {min(TYPE_CODES)} to '
        f'{max(TYPE_CODES)}), got type {code}'
    )


class _GuardedSet:
    """rclpy's ``set_parameters`` callback (``callback``) behind :func:`malformed_parameter`:
    a malformed parameter gets its own refusal, the others rclpy's answer, in order."""

    def __init__(self, node: Node, callback: Callable) -> None:
        self.node, self.callback = node, callback

    def __call__(
        self, request: SetParameters.Request, response: SetParameters.Response
    ) -> SetParameters.Response:
        problems = [malformed_parameter(p) for p in request.parameters]
        if not any(problems):
            return self.callback(request, response)
        for param, problem in zip(request.parameters, problems, strict=True):
            if problem is None:  # (rclpy sets them one at a time too)
                one = self.callback(
                    SetParameters.Request(parameters=[param]), SetParameters.Response()
                )
                response.results.extend(one.results)
            else:
                response.results.append(SetParametersResult(successful=False, reason=problem))
        _log_refusal(self.node, next(p for p in problems if p))
        return response


class _GuardedSetAtomically:
    """rclpy's ``set_parameters_atomically`` callback (``callback``) behind
    :func:`malformed_parameter`: a malformed parameter refuses the whole set."""

    def __init__(self, node: Node, callback: Callable) -> None:
        self.node, self.callback = node, callback

    def __call__(
        self,
        request: SetParametersAtomically.Request,
        response: SetParametersAtomically.Response,
    ) -> SetParametersAtomically.Response:
        for param in request.parameters:
            problem = malformed_parameter(param)
            if problem is not None:
                _log_refusal(self.node, problem)
                response.result = SetParametersResult(successful=False, reason=problem)
                return response
        return self.callback(request, response)


def _log_refusal(node: Node, problem: str) -> None:
    node.get_logger().warning(
        f'parameter set refused ({problem}); the parameters keep their values',
        throttle_duration_sec=LOG_PERIOD,
    )


def guard_parameter_services(node: Node) -> int:
    """Put ``node``'s rclpy ``set_parameters`` and ``set_parameters_atomically`` service
    callbacks behind :func:`malformed_parameter` (once; the executor reads a service's callback
    when it runs it). A node without parameter services (``start_parameter_services=False``)
    is left alone.

    Parameters
    ----------
    node : Node

    Returns
    -------
    int
        The number of callbacks guarded now (0 when done before).
    """
    guards = {SetParameters: _GuardedSet, SetParametersAtomically: _GuardedSetAtomically}
    done = 0
    for service in getattr(node, 'services', ()):
        guard = guards.get(service.srv_type)
        owner = getattr(service.callback, '__self__', None)
        if guard is not None and isinstance(owner, ParameterService):
            service.callback = guard(node, service.callback)
            done += 1
    return done
