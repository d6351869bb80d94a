"""Plain-Python helpers of the launch files in ``launch/`` (no ``launch`` import at module
level: :class:`LaunchWarning` imports it when the launch runs it).

Kept in the package so that ``launch/ffsim.launch.py`` and ``launch/multi_robot.launch.py``
share them and so that they are unit-tested without a ROS launch installation:

* :func:`resolve_robot` turns the ``robot`` launch argument (sample name or path) into a file,
  :func:`resolve_scenario_argument` the ``scenario`` argument into what the nodes get;
* :func:`frame_prefix` gives the TF frame prefix of a namespaced robot (``robot1`` ->
  ``robot1/``, as ``robot_state_publisher``'s ``frame_prefix`` and the simulator's
  ``frame_prefix`` expect it, and as RViz's RobotModel ``TF Prefix`` + ``/`` produces it);
* :func:`write_rviz_config` derives an RViz config showing one or several namespaced robots
  from ``config/rviz/ffsim.rviz`` (a temporary file: :func:`file_remover` removes it when the
  launch shuts down);
* :func:`expand_xacro` runs ``xacro`` once at launch time, so that the URDF of a ``.xacro``
  robot is known to the launch file (the default end effector, :func:`default_ee_link`);
* :func:`sample_config` finds the per-sample parameter file (``config/<sample>.yaml``: the
  initial pose of ``planar_2link``, away from its singular stretched pose);
* :func:`discovery_environment` turns the ``localhost_only`` argument into the DDS discovery
  variables of the launched processes;
* :func:`merged_parameter_file` merges the package's parameter files and the user's
  ``params_file`` for one node into one file, the user's values winning whatever their type
  (with the other helpers of :mod:`ffsim_ros.launch_parameters`, re-exported here);
* :class:`LaunchWarning` logs a warning at warning level (``LogInfo`` logs at info level).
"""

from __future__ import annotations

import copy
import math
import os
import re
import subprocess
import tempfile
import xml.etree.ElementTree as ET
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

import yaml

# re-exported: the launch files and tests use ls.<name>
from ffsim_ros.launch_parameters import (
    PARAMS_KEY,  # noqa: F401
    full_namespace,  # noqa: F401
    key_matches_node,  # noqa: F401
    merged_parameter_file,  # noqa: F401
    node_fqn,  # noqa: F401
    node_parameters,  # noqa: F401
    read_parameter_file,  # noqa: F401
)
from ffsim_ros.resources import SHIPPED_SCENARIOS, sample_robot, share_path

#: Suffixes of robot description files run through ``xacro`` before use.
XACRO_SUFFIXES = ('.xacro',)

#: RViz display classes that show one robot's topics (duplicated per robot namespace).
PER_ROBOT_DISPLAYS = (
    'rviz_default_plugins/RobotModel',
    'rviz_default_plugins/MarkerArray',
    'rviz_default_plugins/Pose',
    'rviz_default_plugins/Path',
)

_NAME_TOKEN = re.compile(r'^[A-Za-z_][A-Za-z0-9_]*$')
_TRUE = ('true', '1', 'yes', 'on')
_FALSE = ('false', '0', 'no', 'off')


def as_bool(text: str, name: str) -> bool:
    """Value of a boolean launch argument (``true``/``false``, case-insensitive, or 1/0).

    Parameters
    ----------
    text : str
    name : str
        The argument's name, for the message.

    Returns
    -------
    bool

    Raises
    ------
    ValueError
        Naming the argument, for any other text.
    """
    value = str(text).strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ValueError(f'{name}: expected true or false, got {text!r}')


def clean_namespace(namespace: str) -> str:
    """Namespace without leading/trailing ``/`` ('' for none), validated token by token.

    Parameters
    ----------
    namespace : str

    Returns
    -------
    str

    Raises
    ------
    ValueError
        If a token is not a valid ROS name token (letters, digits, ``_``; no leading digit).
    """
    ns = str(namespace).strip().strip('/')
    if not ns:
        return ''
    for token in ns.split('/'):
        if not _NAME_TOKEN.match(token):
            raise ValueError(f'namespace: invalid token {token!r} in {namespace!r}')
    return ns


def frame_prefix(namespace: str) -> str:
    """TF frame prefix of the robot in ``namespace``: ``'robot1/'``, or '' without one.

    Parameters
    ----------
    namespace : str

    Returns
    -------
    str
    """
    ns = clean_namespace(namespace)
    return f'{ns}/' if ns else ''


def resolve_robot(robot: str) -> Path:
    """File of the ``robot`` launch argument: a sample name (``urdf/<name>.urdf``) or a path.

    A value without ``/`` and without a ``.urdf``/``.xacro`` suffix is a sample name.

    Parameters
    ----------
    robot : str
        A sample robot name or a ``.urdf``/``.xacro`` path.

    Returns
    -------
    Path

    Raises
    ------
    FileNotFoundError
        Unknown sample (the message lists the samples) or missing file.
    """
    value = str(robot).strip()
    if not value:
        raise FileNotFoundError('robot: expected a sample robot name or a URDF path, got ""')
    if '/' not in value and not value.endswith(('.urdf', *XACRO_SUFFIXES)):
        try:
            return sample_robot(value)
        except FileNotFoundError as exc:
            raise FileNotFoundError(
                f'robot: {exc} (or a path to a .urdf or .xacro file)'
            ) from None
    path = Path(value).expanduser()
    if path.is_dir():
        raise FileNotFoundError(
            f'robot: expected a sample robot name or a .urdf or .xacro file, got {value!r} '
            '(a directory)'
        )
    if not path.is_file():
        raise FileNotFoundError(f'robot: no such file {value!r}')
    return path.resolve()


def resolve_scenario_argument(scenario: str) -> str:
    """The ``scenario`` value the nodes get: '' (none) or a shipped name as is (the nodes
    find it in their share folder), else the absolute path of an existing file.

    Parameters
    ----------
    scenario : str
        The ``scenario`` launch argument.

    Returns
    -------
    str

    Raises
    ------
    ValueError
        ``'scenario: ...'``, listing the shipped names, when the value is neither one of them
        nor a file (the nodes started and each exited 2 on "cannot read").
    """
    value = str(scenario).strip()
    if not value or value in SHIPPED_SCENARIOS:
        return value
    path = Path(value).expanduser()
    if path.is_file():
        return str(path.resolve())
    kind = 'a directory' if path.is_dir() else 'not a file' if path.exists() else 'no such file'
    raise ValueError(
        f'scenario: expected a shipped scenario name {list(SHIPPED_SCENARIOS)} or a scenario '
        f'YAML file, got {value!r}: neither a shipped name nor a file ({kind})'
    )


def is_xacro(path: str | Path) -> bool:
    """True when the description file must be expanded with ``xacro``.

    Parameters
    ----------
    path : str or Path
    """
    return str(path).endswith(XACRO_SUFFIXES)


def expand_xacro(
    path: str | Path, command: Sequence[str] = ('xacro',), timeout: float = 60.0
) -> str:
    """The URDF of a ``.xacro`` file: ``xacro <path>`` run once, at launch time.

    The launch file then knows the robot's links (the default end effector) and hands the
    same text to every node (before, each node ran ``xacro`` through a ``Command``
    substitution, and the launch file never saw the URDF).

    Parameters
    ----------
    path : str or Path
    command : sequence of str
        The xacro command line before the path.
    timeout : float
        Longest run of xacro [s].

    Returns
    -------
    str

    Raises
    ------
    ValueError
        ``'robot: ...'``: xacro is not installed, fails, or prints no robot.
    """
    argv = [*command, str(path)]
    try:
        result = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False)
    except FileNotFoundError:
        raise ValueError(
            f'robot: {path} is a xacro file, but xacro is not installed (apt install '
            f'ros-{os.environ.get("ROS_DISTRO", "<distro>")}-xacro)'
        ) from None
    except subprocess.TimeoutExpired:
        raise ValueError(f'robot: xacro did not finish within {timeout:g} s on {path}') from None
    if result.returncode != 0:
        raise ValueError(f'robot: xacro failed on {path}: {result.stderr.strip()[-2000:]}')
    if '<robot' not in result.stdout:
        raise ValueError(f'robot: xacro printed no <robot> for {path}')
    return result.stdout


def sample_config(robot: str) -> Path | None:
    """``config/<robot>.yaml`` when ``robot`` (the launch argument) names a sample that has
    one (its own parameters, e.g. a non-singular initial pose), else None.

    Parameters
    ----------
    robot : str

    Returns
    -------
    Path or None
    """
    name = str(robot).strip()
    if not _NAME_TOKEN.match(name) or not share_path('urdf', f'{name}.urdf').is_file():
        return None  # a path, or not a sample
    path = share_path('config', f'{name}.yaml')
    return path if path.is_file() else None


#: Values of the ``localhost_only`` launch argument ('': the environment's own setting).
LOCALHOST_ONLY_CHOICES = ('', 'true', 'false')
#: Distros that read ``ROS_LOCALHOST_ONLY`` (Iron and later read
#: ``ROS_AUTOMATIC_DISCOVERY_RANGE`` and deprecate the former).
LOCALHOST_ONLY_DISTROS = ('foxy', 'galactic', 'humble')


def discovery_environment(
    localhost_only: str, environ: Mapping[str, str] | None = None
) -> tuple[dict[str, str], list[str]]:
    """Environment variables to set and to unset for the launched processes.

    Parameters
    ----------
    localhost_only : str
        ``''`` keeps the environment's own setting, as every ROS tool does; ``'true'``
        confines DDS discovery to this host (``ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST``, or
        ``ROS_LOCALHOST_ONLY=1`` on Humble and older); ``'false'`` opens it to the subnet (the
        distros' default).
    environ : mapping, optional
        Gives ``ROS_DISTRO`` (default ``os.environ``).

    Returns
    -------
    set : dict
        Variables to set, name -> value.
    unset : list of str
        Variables to remove.

    Raises
    ------
    ValueError
        Naming the argument, for another value.
    """
    value = str(localhost_only).strip().lower()
    if value not in LOCALHOST_ONLY_CHOICES:
        raise ValueError(
            f'localhost_only: expected one of {LOCALHOST_ONLY_CHOICES}, got {localhost_only!r}'
        )
    if not value:
        return {}, []
    local = value == 'true'
    distro = (os.environ if environ is None else environ).get('ROS_DISTRO', '').lower()
    if distro in LOCALHOST_ONLY_DISTROS:
        return {'ROS_LOCALHOST_ONLY': '1' if local else '0'}, []
    # ROS_LOCALHOST_ONLY=1 would still win (with a deprecation warning): remove it
    return {'ROS_AUTOMATIC_DISCOVERY_RANGE': 'LOCALHOST' if local else 'SUBNET'}, [
        'ROS_LOCALHOST_ONLY'
    ]


def check_robot_xml(urdf_text: str, path: str | Path) -> None:
    """Raise a ``ValueError`` naming the ``robot`` argument when its file is not XML with a
    ``<robot>`` root (the launch would otherwise fail on a bare parser message), or declares
    a DTD (XML entities), which the nodes refuse: the nodes' own check,
    :func:`ffsim_ros.dynamics.urdf.parse_urdf_xml`.

    Parameters
    ----------
    urdf_text : str
        The robot file's text (xacro already expanded).
    path : str or Path
        The file, for the message.
    """
    from ffsim_ros.dynamics.urdf import UrdfXmlError, parse_urdf_xml  # (loaded by the launch)

    try:
        parse_urdf_xml(urdf_text)
    except UrdfXmlError as exc:
        raise ValueError(exc.about('robot', path)) from None


def check_params_file(path: str) -> None:
    """Raise a ``ValueError`` naming ``params_file`` unless ``path`` is empty (none) or an
    existing file (launch_ros would only warn and start the nodes without it).

    Parameters
    ----------
    path : str
        The ``params_file`` launch argument ('' for none).
    """
    if path and not Path(path).is_file():
        raise ValueError(f'params_file: expected a YAML parameter file, got {path!r} (not a file)')


def missing_packages(packages: Sequence[str]) -> list[str]:
    """The ROS packages among ``packages`` that the ament index does not know (none when the
    index cannot be read: launch_ros then resolves them itself).

    Parameters
    ----------
    packages : sequence of str
        Package names (e.g. ``robot_state_publisher``, ``rviz2``).

    Returns
    -------
    list of str
    """
    try:
        from ament_index_python.packages import PackageNotFoundError, get_package_prefix
    except ImportError:  # no ament index: nothing to check against
        return []
    missing = []
    for package in packages:
        try:
            get_package_prefix(package)
        except (PackageNotFoundError, KeyError, ValueError):
            missing.append(package)
    return missing


def link_names(urdf_text: str) -> list[str]:
    """Names of the ``<link>`` elements of a URDF document (document order).

    Parameters
    ----------
    urdf_text : str
    """
    root = ET.fromstring(urdf_text)
    return [link.get('name', '') for link in root.findall('link')]


def has_loops(urdf_text: str) -> bool:
    """Whether a URDF closes kinematic loops (URDF+ ``<loop>`` elements, read by the simulator
    with :func:`ffsim_ros.dynamics.loop_closures_from_urdf`; the controller takes trees only).

    Parameters
    ----------
    urdf_text : str
    """
    return ET.fromstring(urdf_text).find('loop') is not None


def default_ee_link(urdf_text: str, preferred: str = 'ee_link') -> str:
    """End-effector link for the controller when the launch does not name one.

    ``preferred`` if the URDF has it, else the first link whose name ends in ``ee_link``
    (``left_ee_link`` for ``dual_arm_servicer``).

    Parameters
    ----------
    urdf_text : str
    preferred : str

    Returns
    -------
    str

    Raises
    ------
    ValueError
        If there is no such link.
    """
    names = link_names(urdf_text)
    if preferred in names:
        return preferred
    for name in names:
        if name.endswith('ee_link'):
            return name
    raise ValueError(f'ee_link: the robot has no link named *ee_link; links: {names}')


def parse_vector(text: str, size: int, name: str, bound: float | None = None) -> list[float]:
    """Floats of a vector launch argument: ``'[0, -5, 0]'``, ``'0,-5,0'`` or ``'0 -5 0'``.

    Parameters
    ----------
    text : str
    size : int
        Expected count.
    name : str
        The argument's name, for the message.
    bound : float, optional
        Largest magnitude of an entry (the node's own bound: an error here names the argument
        typed before any process starts).

    Returns
    -------
    list of float

    Raises
    ------
    ValueError
        Naming the argument, for a wrong count, a non-numeric or non-finite entry (``nan``,
        ``inf``, ``1e400``) or one beyond ``bound``.
    """
    what = f'{size} finite numbers' + (f' of magnitude <= {bound:g}' if bound is not None else '')
    parts = [p for p in re.split(r'[\s,]+', str(text).strip().strip('[]()')) if p]
    try:
        values = [float(p) for p in parts]
    except ValueError:
        raise ValueError(f'{name}: expected {what}, got {text!r}') from None
    if len(values) != size or not all(math.isfinite(v) for v in values):
        raise ValueError(f'{name}: expected {what}, got {text!r}')
    if bound is not None and max(abs(v) for v in values) > bound:
        raise ValueError(f'{name}: expected {what}, got {text!r}')
    return values


def default_rviz_config() -> Path:
    """The installed ``config/rviz/ffsim.rviz``.

    Returns
    -------
    Path
    """
    return share_path('config', 'rviz', 'ffsim.rviz')


def _namespaced_topic(topic: str, namespace: str) -> str:
    if not namespace or topic.startswith('/'):
        return topic
    return f'/{namespace}/{topic}'


def _retarget(display: dict, namespace: str) -> dict:
    out = copy.deepcopy(display)
    for key in ('Topic', 'Description Topic'):
        entry = out.get(key)
        if isinstance(entry, dict) and isinstance(entry.get('Value'), str):
            entry['Value'] = _namespaced_topic(entry['Value'], namespace)
    if out.get('Class') == 'rviz_default_plugins/RobotModel':
        out['TF Prefix'] = namespace  # RViz joins it with '/': '<ns>/<link>'
    if namespace:
        out['Name'] = f'{out.get("Name", out.get("Class", "display"))} ({namespace})'
    return out


def rviz_config_for(template: dict, namespaces: Sequence[str]) -> dict:
    """RViz config (parsed YAML) with the per-robot displays repeated for each namespace.

    Relative topics of the per-robot displays (:data:`PER_ROBOT_DISPLAYS`) become
    ``/<ns>/<topic>`` and the RobotModel gets ``TF Prefix: <ns>``, so one RViz shows robots
    that ``robot_state_publisher`` publishes with ``frame_prefix: <ns>/``.

    Parameters
    ----------
    template : dict
        Parsed RViz config.
    namespaces : sequence of str
        One per robot.

    Returns
    -------
    dict
    """
    config = copy.deepcopy(template)
    manager = config['Visualization Manager']
    displays = []
    for display in manager['Displays']:
        if display.get('Class') in PER_ROBOT_DISPLAYS:
            displays.extend(_retarget(display, clean_namespace(ns)) for ns in namespaces)
        else:
            displays.append(display)
    manager['Displays'] = displays
    return config


def write_rviz_config(
    namespaces: Sequence[str],
    template: str | Path | None = None,
    directory: str | Path | None = None,
) -> Path:
    """Write :func:`rviz_config_for` of ``template`` to a new file and return its path.

    The file is created exclusively, readable by its owner only (``tempfile``); the launch
    files remove it when they shut down (:func:`file_remover`). With a single empty namespace
    the template is returned unchanged (no file written).

    Parameters
    ----------
    namespaces : sequence of str
        One per robot.
    template : str or Path, optional
        RViz config (default :func:`default_rviz_config`).
    directory : str or Path, optional
        Where to write (default: the temporary directory).

    Returns
    -------
    Path
        The new file, or ``template``.
    """
    template = Path(template) if template else default_rviz_config()
    if [clean_namespace(ns) for ns in namespaces] == ['']:
        return template
    config = rviz_config_for(yaml.safe_load(template.read_text()), namespaces)
    label = '_'.join(clean_namespace(ns).replace('/', '_') or 'root' for ns in namespaces)
    with tempfile.NamedTemporaryFile(
        'w', prefix=f'ffsim_{label}_', suffix='.rviz', dir=directory, delete=False
    ) as handle:
        yaml.safe_dump(config, handle, sort_keys=False)
    return Path(handle.name)


def is_temporary(path: str | Path, template: str | Path | None = None) -> bool:
    """Whether ``path`` is a file :func:`write_rviz_config` wrote (not the template).

    Parameters
    ----------
    path : str or Path
    template : str or Path, optional
        As given to :func:`write_rviz_config`.

    Returns
    -------
    bool
    """
    template = Path(template) if template else default_rviz_config()
    return Path(path) != template


def file_remover(path: str | Path) -> Callable[..., None]:
    """A callback removing ``path`` (if it still exists) for ``launch``'s ``OnShutdown``:
    the temporary RViz configs do not pile up in ``/tmp``.

    Parameters
    ----------
    path : str or Path

    Returns
    -------
    callable
        Taking and ignoring any positional arguments (the event and the context).
    """
    target = Path(path)

    def remove(*_event_and_context: object) -> None:
        target.unlink(missing_ok=True)

    return remove


class NodeExitError(RuntimeError):
    """A node of the launch ended by itself with a failure code (raised by the handler of
    :func:`ending_on_exit`: ``launch`` logs it, shuts the rest down and returns 1)."""


def ending_on_exit(name: str, shutdown: Callable[..., Any]) -> Callable[..., list]:
    """``on_exit`` handler of a node that the launch cannot go on without.

    Parameters
    ----------
    name
        The node's name, for the messages.
    shutdown
        ``launch.actions.Shutdown`` (passed in: this module does not import ``launch``).

    Returns
    -------
    callable
        ``handler(event, context)`` for ``ExecuteProcess``/``Node`` ``on_exit``: the node ended
        with code 0, or while the launch was already shutting down (Ctrl-C, the other node's
        failure): a ``Shutdown`` of the rest. Any other code (2: a bad parameter, named in its
        log; negative: killed by a signal) raises :class:`NodeExitError`, which ``launch`` logs
        ("Caught exception in launch") before shutting the rest down and returning 1 -- with a
        plain ``Shutdown`` ``ros2 launch`` returned 0 whatever the node's code was, and scripts
        took a launch that never ran for a success.
    """

    def handler(event: Any, context: Any) -> list:
        code = int(event.returncode)
        if code != 0 and not context.is_shutdown:
            how = f'killed by signal {-code}' if code < 0 else f'exit code {code}'
            raise NodeExitError(
                f'{name} ended ({how}); see its log above (a bad parameter exits with code 2 '
                'naming it)'
            )
        return [shutdown(reason=f'{name} exited')]

    return handler


class LaunchWarning:
    """Function of an ``OpaqueFunction`` logging ``message`` at warning level on the
    ``launch.user`` logger, the one of ``LogInfo``, which logs at info level only (a missing
    package appeared as ``[INFO] [launch.user]: ffsim: WARNING: ...``).

    Parameters
    ----------
    message : str
        The warning.
    """

    def __init__(self, message: str) -> None:
        self.message = message

    def __call__(self, context: Any) -> list:
        """Log the warning (``OpaqueFunction`` calls it with the launch context)."""
        import launch.logging  # (only where the launch runs: this module imports no launch)

        launch.logging.get_logger('launch.user').warning(self.message)
        return []


#: What ``ros2 bag record -s mcap`` needs: the ``ros2`` command, its bag verb, the MCAP storage.
RECORDER_PACKAGES = ('ros2cli', 'ros2bag', 'rosbag2_storage_mcap')


def recorder_warning() -> str | None:
    """The warning (:class:`LaunchWarning`) logged instead of starting the bag recorder when a
    package of :data:`RECORDER_PACKAGES` is not installed (a pip or wheel environment has no
    ``ros2`` command: starting it failed with a traceback and recorded nothing); None when all
    are.

    Returns
    -------
    str or None
    """
    missing = missing_packages(RECORDER_PACKAGES)
    if not missing:
        return None
    return (
        f'ffsim: {missing} not installed: record:=true ignored, nothing is recorded '
        '(install ros-$ROS_DISTRO-rosbag2 and ros-$ROS_DISTRO-rosbag2-storage-mcap)'
    )


def bag_command(bag_path: str = '') -> list[str]:
    """``ros2 bag record`` of every topic into an MCAP bag folder.

    Parameters
    ----------
    bag_path : str
        The bag folder; '' for ``ffsim_<YYYYmmdd>_<HHMMSS>`` in the current directory
        (``ros2 bag`` refuses an existing folder).

    Returns
    -------
    list of str
        The command line.
    """
    out = str(bag_path).strip() or datetime.now().strftime('ffsim_%Y%m%d_%H%M%S')
    return ['ros2', 'bag', 'record', '-a', '-s', 'mcap', '-o', out]
