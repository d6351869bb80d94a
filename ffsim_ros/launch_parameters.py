"""The ``params_file`` of the launch files: the package's parameter files and the user's merged
into one file per node, the user's values winning whatever their type
(:func:`merged_parameter_file`), and the rules by which rcl picks a file's sections for a node
(:func:`key_matches_node`). Re-exported by :mod:`ffsim_ros.launch_support`, which the launch
files use.
"""

from __future__ import annotations

import re
import tempfile
from collections.abc import Sequence
from pathlib import Path

import yaml

#: Key of a node's parameters in a ROS parameter YAML file.
PARAMS_KEY = 'ros__parameters'
_MAP = 'tag:yaml.org,2002:map'
_STR = 'tag:yaml.org,2002:str'


def full_namespace(namespace: str | None = None, base_namespace: str | None = None) -> str:
    """The namespace a launched node runs in, as launch_ros makes it (``Node``'s
    ``prefix_namespace`` of the launch's ``ros_namespace``): ``namespace`` if it is absolute,
    else ``base_namespace`` (a ``PushRosNamespace``) joined with it; without leading or
    trailing ``/`` ('' for the root).

    Parameters
    ----------
    namespace, base_namespace : str, optional

    Returns
    -------
    str
    """
    ns = str(namespace or '').strip()
    if not ns.startswith('/'):
        ns = '/'.join(p for p in (str(base_namespace or '').strip('/'), ns.strip('/')) if p)
    return ns.strip('/')


def node_fqn(name: str, namespace: str | None = None, base_namespace: str | None = None) -> str:
    """Fully qualified name of a launched node, as launch_ros makes it:
    ``/<full namespace>/<name>`` (:func:`full_namespace`), ``/<name>`` without any.

    Parameters
    ----------
    name : str
    namespace, base_namespace : str, optional
        As for :func:`full_namespace`.

    Returns
    -------
    str
    """
    ns = full_namespace(namespace, base_namespace)
    return f'/{ns}/{name}' if ns else f'/{name}'


def key_matches_node(key: str, fqn: str) -> bool:
    """Whether the node key ``key`` of a parameter file applies to the node ``fqn``, as rclpy
    decides it: a key gets a leading ``/`` if it has none, then ``/*`` stands for one token of
    the name and ``/**`` for any number (``/**``: every node; ``/**/ffsim_simulator``: the
    simulator in any namespace; ``robot1/ffsim_simulator``: the one in ``/robot1`` only).

    Parameters
    ----------
    key : str
        A top-level key of a parameter file, e.g. ``'/**/ffsim_simulator'``.
    fqn : str

    Returns
    -------
    bool
    """
    name = key if key.startswith('/') else f'/{key}'
    pattern = ''.join(
        r'(/\w+)' if part == '/*' else re.escape(part).replace(r'\*', '*')
        for part in re.split(r'(/\*)', name)
    )
    return re.fullmatch(pattern, fqn, re.ASCII) is not None


def read_parameter_file(path: str | Path, what: str) -> list[tuple[str, dict[str, yaml.Node]]]:
    """The node sections of a ROS parameter YAML file, in file order: ``(node key, {parameter
    name: YAML node})``, nested node keys joined with ``/`` and nested parameters with ``.``
    as rcl does. The values stay YAML nodes (their text and quoting), so that a file written
    from them is read by rcl as the original would be (``1e3`` a double, ``"5"`` a string).

    Parameters
    ----------
    path : str or Path
    what : str
        What names the file in messages.

    Returns
    -------
    list of (str, dict)

    Raises
    ------
    ValueError
        ``'<what>: ...'``: not readable, not YAML, or not a mapping of node names to
        ``ros__parameters`` mappings.
    """
    try:
        root = yaml.compose(Path(path).read_text(encoding='utf-8'), Loader=yaml.SafeLoader)
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise ValueError(
            f'{what}: expected a YAML parameter file, got {str(path)!r}: {exc}'
        ) from None
    sections: list[tuple[str, dict[str, yaml.Node]]] = []

    def problem(text: str, node: yaml.Node) -> ValueError:
        return ValueError(
            f'{what}: expected {text}, got {node.id} at line {node.start_mark.line + 1} '
            f'of {str(path)!r}'
        )

    def flatten(node: yaml.Node, prefix: str, out: dict[str, yaml.Node]) -> None:
        if isinstance(node, yaml.ScalarNode) and node.tag == 'tag:yaml.org,2002:null':
            return  # `ros__parameters:` with nothing under it
        if not isinstance(node, yaml.MappingNode):
            raise problem(f'parameter names under {PARAMS_KEY}', node)
        for key, value in node.value:
            if not isinstance(key, yaml.ScalarNode):
                raise problem('a parameter name', key)
            if isinstance(value, yaml.MappingNode):
                flatten(value, f'{prefix}{key.value}.', out)
            else:
                out[f'{prefix}{key.value}'] = value

    def walk(node: yaml.Node, levels: list[str]) -> None:
        if not isinstance(node, yaml.MappingNode):
            raise problem(f'a mapping of node names to {PARAMS_KEY}', node)
        for key, value in node.value:
            if not isinstance(key, yaml.ScalarNode):
                raise problem('a node name', key)
            if not key.value.startswith(PARAMS_KEY):
                walk(value, [*levels, key.value])
            elif not levels:
                raise problem(f'a node name before {PARAMS_KEY}', key)
            else:
                params: dict[str, yaml.Node] = {}
                flatten(value, '', params)
                sections.append(('/'.join(levels), params))

    if root is not None:
        walk(root, [])
    return sections


def _as_rcl_reads(node: yaml.Node) -> yaml.Node:
    """``node`` to write again: rcl ignores a tag other than ``!!str`` on a plain scalar (it
    types the text), so such a tag is dropped rather than written (it would quote it)."""
    if isinstance(node, yaml.SequenceNode):
        items = [_as_rcl_reads(item) for item in node.value]
        return yaml.SequenceNode(node.tag, items, flow_style=node.flow_style)
    if isinstance(node, yaml.ScalarNode) and node.style is None and node.tag != _STR:
        tag = yaml.resolver.Resolver().resolve(yaml.ScalarNode, node.value, (True, False))
        return yaml.ScalarNode(tag, node.value)
    return node


def node_parameters(fqn: str, files: Sequence[tuple[str | Path, str]]) -> dict[str, yaml.Node]:
    """The parameters the node ``fqn`` gets from the parameter ``files`` (``(path, what)``
    pairs, ``what`` naming the file in errors), merged as rcl and rclpy merge them with one
    difference: a later value replaces an earlier one whatever their types. rcl keeps the
    earlier value when the types differ and the earlier type comes first in its order (bool,
    integer, double, string, arrays): ``control_rate_hz: "fast"`` in a later file was ignored,
    the node running at the package's 100 Hz.

    The merge, as rcl's: the sections of one node key across the files are one entry (later
    files win within it), ordered by the first appearance of their key; the entries whose key
    matches ``fqn`` (:func:`key_matches_node`) are applied in that order, later ones winning.

    Parameters
    ----------
    fqn : str
    files : sequence of (str or Path, str)
        ``(path, what)``, in order of precedence (later wins).

    Returns
    -------
    dict
        Parameter name -> ``yaml.Node``.
    """
    entries: dict[str, dict[str, yaml.Node]] = {}
    for path, what in files:
        for key, params in read_parameter_file(path, what):
            entries.setdefault(key, {}).update(params)
    merged: dict[str, yaml.Node] = {}
    for key, params in entries.items():
        if key_matches_node(key, fqn):
            merged.update(params)
    return merged


def merged_parameter_file(
    node_name: str,
    fqn: str,
    defaults: Sequence[str | Path],
    params_file: str | Path,
    directory: str | Path | None = None,
) -> Path:
    """Write the parameters of the node ``fqn`` from the package's ``defaults`` files and then
    the user's ``params_file`` (:func:`node_parameters`) to one new file, under the key
    ``/**/<node_name>``, and return its path (the launch files remove it when they shut
    down: :func:`file_remover`).

    Given this one file the node sees the user's values whatever their type, and rejects one
    of a wrong type itself (exit 2, naming it), as it does when run alone with the user's
    file. The parameters the launch file sets from its arguments come after it, under the
    node's full name (launch_ros): a key of their own, so they win whatever the type.

    Parameters
    ----------
    node_name : str
        The node's name (the key ``/**/<node_name>``).
    fqn : str
    defaults : sequence of str or Path
        The package's parameter files, in order.
    params_file : str or Path
    directory : str or Path, optional
        Where to write (default: the temporary directory).

    Returns
    -------
    Path

    Raises
    ------
    ValueError
        ``'params_file: ...'`` (or the default file's path): see :func:`read_parameter_file`.
    """
    files = [*((path, str(path)) for path in defaults), (params_file, 'params_file')]
    params = node_parameters(fqn, files)

    def text(value: str) -> yaml.ScalarNode:
        return yaml.ScalarNode(_STR, value)

    section = yaml.MappingNode(
        _MAP, [(text(name), _as_rcl_reads(value)) for name, value in params.items()]
    )
    document = yaml.MappingNode(
        _MAP,
        [(text(f'/**/{node_name}'), yaml.MappingNode(_MAP, [(text(PARAMS_KEY), section)]))],
    )
    sources = ', '.join(repr(str(path)) for path, _ in files)
    header = f'# ffsim launch: parameters of {fqn} from {sources} (later ones winning)\n'
    with tempfile.NamedTemporaryFile(
        'w', prefix=f'{node_name}_params_', suffix='.yaml', dir=directory, delete=False
    ) as handle:
        handle.write(header + yaml.serialize(document, Dumper=yaml.SafeDumper))
    return Path(handle.name)
