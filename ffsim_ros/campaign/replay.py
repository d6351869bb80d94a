"""A campaign run replayed into ROS 2 messages, written to an MCAP file (RViz, Foxglove,
``ros2 bag play``).

The run is replayed alone (:class:`~.batch.BatchRunner` of one slot, recording its trajectory
at the control rate: the same bits as in its batch) and each control instant is turned into
the messages the simulator node publishes, built by the node's own builder
(:class:`~ffsim_ros.node_support.state_messages.StateMessages`), and the controller's effort
command, written with the recorder's MCAP writer (:class:`~ffsim_ros.recording.McapFile`):

==========================  ===================================  ==================================
topic                       type                                 at each control instant ``t_i``
==========================  ===================================  ==================================
``/clock``                  rosgraph_msgs/Clock                  ``t_i``
``/joint_states``           sensor_msgs/JointState               positions, rates; effort applied
                                                                 over the last period (0 at start)
``/tf``                     tf2_msgs/TFMessage                   world -> base link
``/base_odom``              nav_msgs/Odometry                    base link pose (world), twist
                                                                 (base link axes)
``/momentum``               std_msgs/Float64MultiArray           ``[P, L_g, r_g]`` (world)
``/joint_effort_commands``  std_msgs/Float64MultiArray           efforts applied over
                                                                 ``[t_i, t_i + control_dt)``
``/robot_description``      std_msgs/String                      the URDF, once at ``t = 0``
==========================  ===================================  ==================================

Every message's stamp and log time is the simulated time in integer nanoseconds. The states are
the control instants (the physics runs at ``physics_dt`` in between) and, unless the run
failed, its end state; there is one effort command per control instant.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from nav_msgs.msg import Odometry
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray, String
from tf2_msgs.msg import TFMessage

import ffsim_ros.dynamics as D
from ffsim_ros.node_support.state_messages import StateMessages
from ffsim_ros.recording import McapFile
from ffsim_ros.sim import Snapshot

from .batch import Campaign, RunResult

TOPICS = {
    'clock': ('/clock', Clock),
    'joints': ('/joint_states', JointState),
    'tf': ('/tf', TFMessage),
    'odom': ('/base_odom', Odometry),
    'momentum': ('/momentum', Float64MultiArray),
    'command': ('/joint_effort_commands', Float64MultiArray),
    'description': ('/robot_description', String),
}


def time_ns(t: float) -> int:
    """Simulated time ``t`` [s] as integer nanoseconds (rounded).

    Parameters
    ----------
    t : float
        [s].

    Returns
    -------
    int
        [ns].
    """
    return int(round(float(t) * 1e9))


def snapshot(
    model: D.Model, t: float, q: np.ndarray, v: np.ndarray, effort: np.ndarray
) -> Snapshot:
    """The :class:`~ffsim_ros.sim.Snapshot` of one replayed instant (what the simulator's
    engine reports for that state).

    Parameters
    ----------
    model : Model
        The simulated robot.
    t : float
        Simulated time [s].
    q : (nq,) ndarray
        Configuration ``[r0, Q0 (x, y, z, w), phi]``, base in the inertial frame
        [m, -, rad | m].
    v : (nv,) ndarray
        Velocity ``[V0, w0, phidot]``, base parts in the inertial frame
        [m/s, rad/s, rad/s | m/s].
    effort : (n,) ndarray
        Joint efforts applied, joint order [N m | N].

    Returns
    -------
    Snapshot
    """
    s = D.state_summary(model, q, v)
    return Snapshot(
        step=0,
        time_ns=time_ns(t),
        q=q,
        v=v,
        effort=effort,
        base_position=s.base_position,
        base_orientation=s.base_orientation,
        base_linear_velocity=s.base_linear_velocity,
        base_angular_velocity=s.base_angular_velocity,
        momentum=s.momentum,
        com=s.com,
        kinetic_energy=s.kinetic_energy,
        paused=False,
        fault='',
    )


def replay_states(result: RunResult) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The replayed instants of a recorded run: ``(t (N,), q (N, nq), v (N, nv), effort (N, n))``
    with the effort applied over the period before each instant (zeros at the first); the
    control instants, then the end state unless the run failed.

    Parameters
    ----------
    result : RunResult
        Recorded with ``record=True`` (``ValueError`` otherwise).

    Returns
    -------
    t, q, v, effort : ndarray
        [s]; configurations [m, -, rad | m] and velocities [m/s, rad/s, rad/s | m/s] (base
        parts in the inertial frame); joint efforts [N m | N].
    """
    tr = result.trajectory
    if tr is None:
        raise ValueError('replay_states: expected a result recorded with record=True')
    t, q, v, tau = tr['time'], tr['q'], tr['v'], tr['effort']
    before = np.vstack((np.zeros((1, tau.shape[1])), tau))
    if not result.failure and (t.size == 0 or result.t > t[-1]):
        return np.r_[t, result.t], np.vstack((q, result.q)), np.vstack((v, result.v)), before
    return t, q, v, before[: t.size]


def write_mcap(
    campaign: Campaign,
    result: RunResult,
    path: str | Path,
    *,
    world: str = 'world',
    frame_prefix: str = '',
) -> dict[str, int]:
    """Write the recorded run ``result`` of ``campaign`` to the MCAP file ``path`` (module
    docstring); ``world`` and ``frame_prefix`` as the simulator's parameters. Returns the
    number of messages per topic.

    Parameters
    ----------
    campaign : Campaign
    result : RunResult
        Recorded with ``record=True``.
    path : str or Path
        The MCAP file written.
    world : str
        The world frame id.
    frame_prefix : str
        Prefix of the robot's frame ids.

    Returns
    -------
    dict of str to int
    """
    model = campaign.model
    topics = TOPICS
    builder = StateMessages(model.joint_names, world, frame_prefix + model.base_link, clock=True)
    t, q, v, effort = replay_states(result)
    tau = result.trajectory['effort']
    counts = dict.fromkeys((name for name, _ in topics.values()), 0)
    with McapFile(Path(path)) as out:
        ch = {key: out.channel(name, cls) for key, (name, cls) in topics.items()}

        def put(key: str, stamp: int, msg: object) -> None:
            out.write_message(ch[key], stamp, msg)
            counts[topics[key][0]] += 1

        robot = campaign.robot_path
        put('description', 0, String(data=Path(robot).read_text()))
        for i in range(t.size):
            snap = snapshot(model, t[i], q[i], v[i], effort[i])
            clock, joints, transform, odom, momentum, _ = builder.fill(snap, markers=False)
            stamp = snap.time_ns
            put('clock', stamp, clock)
            put('joints', stamp, joints)
            put('tf', stamp, TFMessage(transforms=[transform]))
            put('odom', stamp, odom)
            put('momentum', stamp, momentum)
            if i < tau.shape[0]:
                put('command', stamp, Float64MultiArray(data=tau[i].tolist()))
    return counts
