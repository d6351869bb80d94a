"""The robot-source parameters both nodes declare (``robot_description``, ``robot_file``)."""

from __future__ import annotations

from .common import DEFAULT_ROBOT, MAX_ROBOT_BYTES
from .parameters import ParameterSpec, string


def robot_source_specs() -> list[ParameterSpec]:
    """The ``robot_description`` and ``robot_file`` parameters, the same for every node that
    loads the robot (the simulator and the controller)."""
    return [
        ParameterSpec(
            'robot_description',
            '',
            'URDF XML of the robot (wins over robot_file)',
            string(MAX_ROBOT_BYTES),
            in_config=False,
        ),
        ParameterSpec(
            'robot_file',
            '',
            f'path of a URDF file (a regular XML text file, UTF-8 or the encoding it '
            f'declares, of at most {MAX_ROBOT_BYTES} bytes); empty: the sample robot '
            f'{DEFAULT_ROBOT}',
            string(4096),
            in_config=False,
        ),
    ]
