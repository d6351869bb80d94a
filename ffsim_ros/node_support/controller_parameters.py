"""The parameters of ``ffsim_reactionless_controller``: one table (declarations, descriptors,
the README's reference and the YAML config are all made from it), the gains they give, and
their cross check (no node is built here)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ffsim_ros.control import (
    CONTROL_MODES,
    ControlMode,
    Gains,
)
from ffsim_ros.control.capture import DETUMBLE_MODES, CaptureGains
from ffsim_ros.control.rns import (
    active_joint_mask,
    chain_joints,
    default_joint_masks,
    mimic_joints,
)
from ffsim_ros.dynamics import Model
from ffsim_ros.node_support import (
    Check,
    ParameterSpec,
    ParameterTable,
    ParameterValueError,
    frame_id,
    interval,
    one_of,
    robot_source_specs,
    string,
)
from ffsim_ros.node_support.capture_control import (
    service_name,
)
from ffsim_ros.node_support.goal_status import (
    reach_settings_from,
    reach_specs,
)

#: Largest value of a gain parameter (a sane range: beyond it the torques overflow).
MAX_GAIN = 1e6

#: One line per field of :class:`ffsim_ros.control.Gains` (the ``gains.*`` parameters).
GAIN_DESCRIPTIONS = {
    'kp_task': 'end-effector position gain [1/s]',
    'kp_orientation': 'end-effector orientation gain [1/s] (with track_orientation)',
    'max_ee_speed': 'saturation of the commanded end-effector speed [m/s]',
    'max_ee_angular_speed': 'saturation of the commanded end-effector angular speed [rad/s]',
    'kv_joint': 'joint-rate tracking gain of the computed-torque inner loop [1/s]',
    'kp_attitude': 'base attitude hold gain [1/s] (reactionless mode)',
    'damping': 'damped-least-squares factor lambda',
    'k_null': 'manipulability self-motion gain (reactionless mode; 0: off)',
    'kp_joint': 'joint PD gain of the joint_pd baseline [1/s^2]',
    'kd_joint': 'joint PD gain of the joint_pd baseline [1/s]',
    'max_joint_speed': "fraction of each joint's velocity limit the law may command",
    'rate_feedforward': "share of the commanded rates' time derivative fed forward in the "
    'inner loop (0: off; 1 for a base light against the arm)',
}


def _gain_specs() -> list[ParameterSpec]:
    defaults = Gains()
    if set(GAIN_DESCRIPTIONS) != set(defaults.__dict__):  # pragma: no cover - caught by tests
        raise RuntimeError('GAIN_DESCRIPTIONS does not match the fields of Gains')
    return [
        ParameterSpec(
            f'gains.{name}',
            float(value),
            GAIN_DESCRIPTIONS[name],
            interval(0.0, 1.0, low_open=True)
            if name == 'max_joint_speed'
            else interval(0.0, 1.0)
            if name == 'rate_feedforward'
            else interval(0.0, MAX_GAIN),
        )
        for name, value in defaults.__dict__.items()
    ]


def gains_from(values: dict) -> Gains:
    """The :class:`Gains` of the checked parameter values ``gains.*``.

    Parameters
    ----------
    values : dict
        Checked parameter values by name (``'gains.kp'``, ...).

    Returns
    -------
    Gains
    """
    try:
        return Gains(**{name: values[f'gains.{name}'] for name in GAIN_DESCRIPTIONS})
    except ValueError as exc:  # pragma: no cover - the table's checks are Gains' own
        raise ParameterValueError(f'gains: {exc}') from None


#: Parameters that do nothing while ``capture.scenario`` is set (the capture law drives the
#: arm; ee_goal and trajectories are not taken): refused at run time then.
CAPTURE_UNUSED = ('mode', 'trajectory.reactionless')


def refuse_in_capture(changed: Sequence[str], values: Mapping[str, Any]) -> str | None:
    """The reason to refuse a run-time set of a parameter of :data:`CAPTURE_UNUSED` while
    ``capture.scenario`` is set (it was taken and did nothing), else None
    (:meth:`~ffsim_ros.node_support.ParameterTable.watch`'s ``refuse``).

    Parameters
    ----------
    changed : sequence of str
        The names the set changes.
    values : mapping
        The checked values of all the parameters, the set's included.

    Returns
    -------
    str or None
    """
    unused = [name for name in changed if name in CAPTURE_UNUSED]
    if not values['capture.scenario'] or not unused:
        return None
    return (
        f'{unused[0]}: not used while capture.scenario is set (the capture law drives the arm; '
        'ee_goal and trajectories are not taken)'
    )


def check_robot(model: Any, values: Mapping[str, Any]) -> None:
    """Check the parameters against the robot's ``model`` (a ``dynamics.Model``): ``ee_link``
    a link the joints move, every joint drivable (effort limit > 0: the laws drive every
    joint, a torque clipped to 0 leaves a joint free), ``world_frame`` not a link.

    Parameters
    ----------
    model : Model
    values : mapping
        The parameter values.

    Raises
    ------
    ParameterValueError
        Naming the parameter, what was expected and what came.
    """
    ee_link = values['ee_link']
    if ee_link not in model.link_names:
        raise ParameterValueError(
            f'ee_link: expected one of {list(model.link_names)}, got {ee_link!r}'
        )
    if model.frame(ee_link).body == 0:
        moving = [n for n in model.link_names if model.frame(n).body != 0]
        raise ParameterValueError(
            f'ee_link: expected a link the joints move (one of {moving}), got {ee_link!r} '
            'on the base body'
        )
    base_dofs = 6 if model.floating_base else 0  # (idx_v counts the base's 6 first)
    passive = [
        name
        for name, first, count in zip(model.joint_names, model.idx_v, model.nvs, strict=True)
        if np.any(model.effort_limit[first - base_dofs : first - base_dofs + count] <= 0.0)
    ]
    if passive:
        source = 'robot_description' if values['robot_description'] else 'robot_file'
        raise ParameterValueError(
            f'{source}: expected joints the controller can drive (effort limit > 0), got '
            f'passive joints {passive} (effort limit 0): the reactionless laws drive every '
            'joint; give them an effort limit or make them fixed joints'
        )
    if values['world_frame'] in model.link_names:
        raise ParameterValueError(
            f'world_frame: expected the inertial frame of ee_goal and ee_pose, not a link of '
            f'the robot, got {values["world_frame"]!r}'
        )


def activity(values: Mapping[str, Any], gripper: Any = None) -> str:
    """What the controller does with its start-up ``values``, for its start-up line:
    ``controlling ee_link in reactionless mode``, or ``capturing with ee_link (capture.scenario
    ...)`` (the mode is not used then): the scenario's ``gripper`` (a
    :class:`~ffsim_ros.scene.Gripper`: its link and, when not zero, the grasp point in it),
    ``ee_link`` when None.

    Parameters
    ----------
    values : mapping
        Checked start-up parameter values by name.
    gripper : Gripper, optional
        The capture scenario's gripper.

    Returns
    -------
    str
    """
    if values['capture.scenario']:
        point = values['ee_link'] if gripper is None else gripper.link
        if gripper is not None and np.any(gripper.translation):
            point += f' + {np.asarray(gripper.translation).tolist()} m'
        return (
            f'capturing with {point} (capture.scenario '
            f'{values["capture.scenario"]!r}; mode and trajectory.reactionless not used)'
        )
    return f'controlling {values["ee_link"]} in {values["mode"]} mode'


#: ``active_joints`` values that are not joint lists.
JOINT_SETS = ('auto', 'chain', 'all')


def _joint_set(value: object) -> str:
    text = str(value).strip()
    if not text:
        raise ValueError(
            "expected 'auto', 'chain', 'all' or joint names separated by commas, got ''"
        )
    if len(text.encode('utf-8', 'surrogatepass')) > 4096:
        raise ValueError('expected at most 4096 bytes')
    names = [n.strip() for n in text.split(',')]
    if text not in JOINT_SETS and not all(names):
        raise ValueError(f'expected joint names separated by commas, got {text!r}')
    return text


def active_joints_from(values: Mapping[str, Any], model: Model) -> tuple[str, ...] | None:
    """The ``active_joints`` of :class:`~ffsim_ros.control.ReactionlessController` from the
    checked parameter ``active_joints``: None for ``auto`` (the law's default: every joint in
    reactionless mode, the path to ``ee_link`` in the others), the joints on that path for
    ``chain``, every joint for ``all``, else the names given. ``auto``, ``all`` and ``chain``
    leave out the joints of URDF ``<mimic>`` couplings
    (:func:`~ffsim_ros.control.rns.mimic_joints`: the coupling is not modelled, so moving one
    alone breaks it); names given may not include one.

    Parameters
    ----------
    values : mapping
        Checked parameter values by name (``active_joints``, ``ee_link``).
    model : Model
        The robot.

    Returns
    -------
    tuple of str or None

    Raises
    ------
    ParameterValueError
        Unknown or repeated joints, a joint of a ``<mimic>`` coupling, or none on the path to
        ``ee_link``, naming the parameter and the joints the robot has.
    """
    text = values['active_joints']
    if text == 'auto':
        try:  # (every joint on the path to ee_link a mimic joint)
            default_joint_masks(model, values['ee_link'])
        except ValueError as exc:
            raise ParameterValueError(str(exc)) from None
        return None
    if text == 'all':
        held = mimic_joints(model)
        names = tuple(n for n in model.joint_names if n not in held)
    elif text == 'chain':
        held = mimic_joints(model)
        chain = (model.joint_names[k] for k in chain_joints(model, values['ee_link']))
        names = tuple(n for n in chain if n not in held)
    else:
        names = tuple(n.strip() for n in text.split(','))
        coupled = [
            f'{m.joint} (mimics {m.mimicked})'
            for m in model.mimics
            if m.joint in names or m.mimicked in names
        ]
        if coupled:
            raise ParameterValueError(
                f'active_joints: expected no joint of a URDF <mimic> coupling (not modelled: '
                f'moving either joint alone breaks it), got {", ".join(coupled)}'
            )
    try:
        active_joint_mask(model, values['ee_link'], names)
    except ValueError as exc:
        raise ParameterValueError(str(exc)) from None
    return tuple(names)


def held_mimics_note(values: Mapping[str, Any], model: Model) -> str:
    """The start-up note on the joints of URDF ``<mimic>`` couplings that ``active_joints``
    ``auto``, ``all`` or ``chain`` hold (:func:`active_joints_from`); '' when none are held.

    Parameters
    ----------
    values : mapping
        Checked parameter values by name (``active_joints``).
    model : Model

    Returns
    -------
    str
    """
    held = mimic_joints(model) if values['active_joints'] in ('auto', 'all', 'chain') else ()
    if not held:
        return ''
    pairs = ', '.join(f'{m.joint} mimics {m.mimicked}' for m in model.mimics)
    return (
        f'joints {", ".join(held)} held (active_joints {values["active_joints"]}): URDF '
        f'<mimic> couplings ({pairs}) are not modelled, and moving one joint alone breaks them'
    )


def _cross_check(values: dict) -> None:
    gains_from(values)
    reach_settings_from(values)


#: The parameters of ``ffsim_reactionless_controller`` (declarations, descriptors, README, YAML).
PARAMETERS = ParameterTable(
    'ffsim_reactionless_controller',
    [
        *robot_source_specs(),
        ParameterSpec(
            'ee_link',
            'ee_link',
            'controlled link (a link of the robot; the launch files pick the first link named '
            '*ee_link when none is given)',
            string(255),
        ),
        ParameterSpec(
            'world_frame',
            'world',
            "frame of ee_goal, ee_pose and ee_path (the simulator's world_frame); empty: world",
            frame_id(),
        ),
        ParameterSpec(
            'control_rate_hz',
            100.0,
            'control rate on the node clock (simulated time with use_sim_time) [Hz]',
            interval(0.1, 1e4),
        ),
        ParameterSpec(
            'mode',
            ControlMode.REACTIONLESS.value,
            'control law (the launch argument controller_mode)',
            one_of(CONTROL_MODES),
            dynamic=True,
            in_config=False,
        ),
        ParameterSpec('track_orientation', False, 'track the goal orientation too'),
        ParameterSpec(
            'active_joints',
            'auto',
            'joints the ee_goal laws may move, the others held still: auto = all in '
            'reactionless mode (other arms recruited as momentum compensators), those on the '
            'path to ee_link in the other modes; chain = those on the path in every mode (a '
            'goal for one arm leaves the other arms still); all = every joint. auto, all and '
            'chain hold the joints of URDF <mimic> couplings (not modelled), which cannot be '
            'named',
            Check("'auto', 'chain', 'all' or joint names separated by commas", _joint_set),
        ),
        ParameterSpec(
            'state_timeout',
            0.2,
            'maximum age of joint_states and base_odom on the node clock before commanding '
            'stops [s]',
            interval(1e-3, 3600.0),
        ),
        ParameterSpec(
            'jump_threshold',
            0.1,
            'a measured joint or base position this far [rad | m] from where the previous '
            'message (at most 0.1 s earlier) and the velocities lead is a jump (a reset not '
            'announced on resets, a teleport): goals and trajectory dropped',
            interval(1e-6, 1e3),
        ),
        *_gain_specs(),
        *reach_specs(),
        ParameterSpec(
            'trajectory.kp',
            100.0,
            'position gain of the computed-torque trajectory tracking [1/s^2]',
            interval(0.0, MAX_GAIN),
        ),
        ParameterSpec(
            'trajectory.kv',
            20.0,
            'velocity gain of the computed-torque trajectory tracking [1/s]',
            interval(0.0, MAX_GAIN),
        ),
        ParameterSpec(
            'trajectory.path_tolerance',
            0.0,
            'default position tolerance of every joint while moving [rad | m]; 0: not checked',
            interval(0.0, 1e3),
        ),
        ParameterSpec(
            'trajectory.goal_tolerance',
            0.01,
            'default position tolerance of every joint at the end [rad | m]; 0: not checked',
            interval(0.0, 1e3),
        ),
        ParameterSpec(
            'trajectory.stopped_velocity_tolerance',
            0.01,
            'default velocity tolerance of every joint at the end [rad/s | m/s]; 0: not checked',
            interval(0.0, 1e3),
        ),
        ParameterSpec(
            'trajectory.goal_time',
            1.0,
            'default time after the last point to get within the goal tolerances [s]; 0: no limit',
            interval(0.0, 3600.0),
        ),
        ParameterSpec(
            'trajectory.reactionless',
            False,
            'correct each trajectory into the reaction null space (joint motions that leave '
            'the base attitude alone) and report how much it changed; a correction ending a '
            'joint beyond its goal position tolerance of the last point sent is refused '
            '(INVALID_GOAL)',
            dynamic=True,
        ),
        ParameterSpec(
            'capture.scenario',
            '',
            "capture scenario (the simulator's scenario: a shipped name or a YAML path, a "
            "relative one from the node's working directory); non-empty: intercept its target "
            "with the scenario's robot.gripper point, grasp and detumble it instead of ee_goal",
            string(4096),
        ),
        ParameterSpec(
            'capture.target',
            '',
            "the scenario's target to capture (its first handle); empty: the first target",
            string(255),
        ),
        ParameterSpec(
            'capture.detumble_mode',
            DETUMBLE_MODES[0],
            'post-capture law: momentum_distribution (the arm stores the momentum, then '
            'releases it at a bounded base acceleration) or gjm (plain braking)',
            one_of(DETUMBLE_MODES),
        ),
        ParameterSpec(
            'capture.timeout',
            120.0,
            'longest time from the target seen (or lost) to the grasp before the capture is '
            'aborted and the arm held still, reported on goal_status [s]; 0: no limit',
            interval(0.0, 86400.0),
        ),
        ParameterSpec(
            'capture.store_time',
            CaptureGains().store_time,
            'momentum distribution: time the base rate is held at zero after the grasp while '
            'the arm stores the momentum [s]',
            interval(0.0, 3600.0),
        ),
        ParameterSpec(
            'capture.base_acceleration_deg',
            float(np.degrees(CaptureGains().base_acceleration)),
            'momentum distribution: largest commanded base angular acceleration [deg/s^2]',
            interval(1e-6, 1e3),
        ),
        ParameterSpec(
            'capture.grasp_service',
            'ffsim_simulator/grasp',
            "the simulator's grasp service (std_srvs/Trigger); relative: resolved in the node's "
            'namespace, as the simulator of the same robot serves it (its release service is '
            'the sibling release)',
            service_name(255),
        ),
    ],
    cross_check=_cross_check,
    groups={
        'gains': 'ffsim_ros.control.Gains, SI units',
        'reach': 'ee_goal outcome and recovery (ffsim_ros.control.ReachSettings)',
        'trajectory': 'FollowJointTrajectory and joint_trajectory (ffsim_ros.control.trajectory)',
        'capture': 'capture of a free target (ffsim_ros.node_support.capture_control)',
    },
    config_notes=(
        'Loaded by launch/ffsim.launch.py. Set by the launch file, not here: '
        'robot_description,\nuse_sim_time, mode (the `controller_mode` argument) and ee_link '
        'when the `ee_link` argument\nis given (or, unless a params_file sets it, the '
        "robot's default: ee_link, or for a robot\nwithout that link its first *ee_link, e.g. "
        'dual_arm_servicer -> left_ee_link).'
    ),
)
