"""The parameters of ``ffsim_simulator``: one table (declarations, descriptors, the README's
reference and the YAML config are all made from it) and its cross check (no node is built
here)."""

from __future__ import annotations

from ffsim_ros.dynamics import STEP_METHODS
from ffsim_ros.node_support import (
    ParameterSpec,
    ParameterTable,
    ParameterValueError,
    finite_values,
    frame_id,
    interval,
    one_of,
    robot_source_specs,
    string,
    unit_quaternion,
    vector,
    zero_or_interval,
)
from ffsim_ros.node_support.scene_support import SHIPPED_SCENARIOS
from ffsim_ros.sim.pacing import MAX_REAL_TIME_FACTOR, MIN_REAL_TIME_FACTOR

#: Range of ``physics_rate_hz`` [Hz]: a step of at least 1 us (the clock counts whole
#: nanoseconds: a finer step would round badly, 1 GHz to 1 ns and beyond to 0, which froze the
#: clock) and at most 1 s.
MIN_PHYSICS_RATE, MAX_PHYSICS_RATE = 1.0, 1e6
#: Lowest ``publish_rate_hz`` [Hz] (one message every 100 s of simulated time).
MIN_PUBLISH_RATE = 0.01
#: Largest magnitude of an ``initial_base_position`` coordinate [m] (the launch files check
#: their position arguments against it too).
MAX_BASE_POSITION = 1e6


def publish_not_above_physics(values: dict) -> None:
    """``publish_rate_hz`` at most ``physics_rate_hz`` (the table's cross check).

    Parameters
    ----------
    values : dict
        Checked parameter values by name.

    Raises
    ------
    ------
    ParameterValueError
        Naming ``publish_rate_hz``.
    """
    if values['publish_rate_hz'] > values['physics_rate_hz']:
        raise ParameterValueError(
            f'publish_rate_hz: expected <= physics_rate_hz ({values["physics_rate_hz"]}), '
            f'got {values["publish_rate_hz"]}'
        )


#: The parameters of ``ffsim_simulator`` (declarations, descriptors, README, YAML).
PARAMETERS = ParameterTable(
    'ffsim_simulator',
    [
        *robot_source_specs(),
        ParameterSpec(
            'physics_rate_hz',
            1000.0,
            'integration rate [Hz] (the step is rounded to whole nanoseconds; at most 1 MHz: '
            'a step of at least 1 us)',
            interval(MIN_PHYSICS_RATE, MAX_PHYSICS_RATE),
        ),
        ParameterSpec(
            'publish_rate_hz',
            100.0,
            'publishing rate in simulated time [Hz], at most physics_rate_hz (rounded to a '
            'whole number of physics steps)',
            interval(MIN_PUBLISH_RATE, MAX_PHYSICS_RATE),
        ),
        ParameterSpec(
            'integrator',
            'rk4',
            'integration method: rk4 (Runge-Kutta-Munthe-Kaas on the Lie group, compiled), '
            'euler (semi-implicit) or a scipy solve_ivp method',
            one_of(STEP_METHODS),
        ),
        ParameterSpec(
            'conserve_momentum',
            True,
            'momentum-preserving steps wherever no base wrench acts: the momentum holds to '
            'round-off at any step size (with loop closures P and L_O, not L_g: README, '
            'Momentum; about 5 % of a simulator step, make bench)',
        ),
        ParameterSpec(
            'velocity_limits',
            True,
            'enforce the URDF speed limits as a drive does: a torque-speed characteristic and '
            'braking at the limit (README, Joint limits)',
        ),
        ParameterSpec(
            'position_limits',
            False,
            'enforce the URDF position limits as hard stops (a stiff, critically damped '
            'spring-damper beyond the limit)',
        ),
        ParameterSpec(
            'real_time_factor',
            1.0,
            'upper bound on simulated time / wall time; 0: as fast as possible',
            zero_or_interval(MIN_REAL_TIME_FACTOR, MAX_REAL_TIME_FACTOR),
            dynamic=True,
        ),
        ParameterSpec(
            'world_frame',
            'world',
            'inertial frame id: parent of the base link on /tf, frame of base_odom and '
            'momentum (RViz Fixed Frame); empty: world',
            frame_id(),
        ),
        ParameterSpec(
            'frame_prefix',
            '',
            'prefix of the robot link and target frame ids, e.g. robot1/ (not taken from the '
            'namespace: the launch files set <namespace>/)',
            frame_id(prefix=True),
            in_config=False,
        ),
        ParameterSpec(
            'command_timeout',
            0.5,
            'simulated seconds without joint_effort_commands before the efforts drop to zero',
            interval(1e-6, 3600.0),
            dynamic=True,
        ),
        ParameterSpec(
            'publish_clock',
            True,
            'publish the simulated time on /clock (the launch files remap it to '
            '<namespace>/clock)',
        ),
        ParameterSpec(
            'gravity',
            [0.0, 0.0, 0.0],
            'gravity in world_frame [m/s^2]; zero in orbit; the targets fall with it too',
            vector(3, bound=1e3),
        ),
        ParameterSpec(
            'joint_dynamics',
            False,
            'apply the URDF joint damping and Coulomb friction [S0 eq. 41]',
        ),
        ParameterSpec(
            'initial_base_position',
            [0.0, 0.0, 0.0],
            'initial base link frame origin in world_frame [m]',
            vector(3, bound=MAX_BASE_POSITION),
        ),
        ParameterSpec(
            'initial_base_orientation',
            [0.0, 0.0, 0.0, 1.0],
            'initial base link orientation, quaternion (x, y, z, w) in world_frame',
            unit_quaternion(),
        ),
        ParameterSpec(
            'initial_base_twist',
            [0.0] * 6,
            'initial velocity of the base link origin and base angular velocity, world_frame '
            '[m/s, rad/s] (the base turning by less than pi rad per physics step)',
            vector(6, bound=1e3),
        ),
        ParameterSpec(
            'initial_joint_positions',
            [0.0],
            'initial joint positions in joint_states order [rad | m] (within the position '
            'limits with position_limits); [] or [0.0]: all zero',
            finite_values(bound=1e3),
        ),
        ParameterSpec(
            'initial_joint_velocities',
            [0.0],
            'initial joint velocities in joint_states order [rad/s | m/s] (within the speed '
            'limits with velocity_limits; a ball joint turning by less than pi rad per physics '
            'step); [] or [0.0]: all zero',
            finite_values(bound=1e3),
        ),
        ParameterSpec(
            'start_paused', False, 'start with the physics paused (~/pause false resumes)'
        ),
        ParameterSpec(
            'scenario',
            '',
            f'capture scenario: a shipped name ({", ".join(SHIPPED_SCENARIOS)}) or a YAML file '
            "(a relative path from the node's working directory); its robot must be this one; "
            'empty: no target at start (targets can be spawned)',
            string(4096),
            in_config=False,
        ),
    ],
    cross_check=publish_not_above_physics,
    config_notes=(
        'Loaded by launch/ffsim.launch.py; the same file serves robots launched side by side '
        'under\nnamespaces (launch/multi_robot.launch.py). Set by the launch file, not here: '
        'robot_description\n(the `robot` argument), frame_prefix (`<namespace>/`), '
        'use_sim_time, and initial_base_position\nwhen the `initial_base_position` argument '
        'is given. Doubles are written with a decimal point\n(an integer is accepted too).'
    ),
)

__all__ = [
    'MAX_BASE_POSITION',
    'MAX_PHYSICS_RATE',
    'MIN_PHYSICS_RATE',
    'MIN_PUBLISH_RATE',
    'PARAMETERS',
    'publish_not_above_physics',
]
