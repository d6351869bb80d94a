"""The layering of the ``ffsim_ros`` package, read from its import graph (``ast``, nothing is
imported): data flows downward, so that the layers stay visible from the tree.

* no import cycle among the package's modules (imports inside functions count: a lazy import
  is a dependency too);
* no underscore (private) name imported from another module;
* no node (``simulator``, ``reactionless_controller``) importing another node or the compiled
  kernels (``ffsim_ros.dynamics.kernels``): nodes use the public API;
* the dynamics core (``ffsim_ros.dynamics``) importing nothing from ROS (``rclpy``,
  ``*_msgs``, ``tf2_ros``, ...) nor from the rest of the package;
* the recursive algorithms (``dynamics/algorithms.py``, ``dynamics/kernels/*``) depending,
  directly or not, on nothing of Mufti's forms (``dynamics/mufti``) or the dispatcher
  (``dynamics/dispatch.py``);
* no module over 900 lines.

Each rule is a function returning its findings; the last test runs them on a small package
that breaks every rule, so that none of them passes vacuously.
"""

from __future__ import annotations

import ast
import re
import textwrap
from dataclasses import dataclass, field
from pathlib import Path

import pytest

PACKAGE_DIR = Path(__file__).resolve().parents[1] / 'ffsim_ros'
MAX_LINES = 900
NODES = ('simulator', 'reactionless_controller')
ROS_MODULE = re.compile(
    r'^(rclpy|rcl_interfaces|builtin_interfaces|tf2_ros|tf2_py|message_filters|launch|'
    r'launch_ros|ament_index_python|rosidl_\w+|rosbag2_py|\w+_msgs|\w+_srvs|\w+_interfaces)$'
)


@dataclass
class Graph:
    """The import graph of one package.

    Attributes
    ----------
    package : str  the package name;  files : {module: path}.
    edges : {module: {imported module of the package}} (``from .x import name`` depends on
        ``x``; ``from . import x`` on ``x`` when ``x`` is a module, else on the package).
    external : {module: {top-level name of an imported module outside the package}}.
    private : list of findings ``'<module>:<line> imports <name> from <module>'``.
    """

    package: str
    files: dict[str, Path]
    edges: dict[str, set[str]] = field(default_factory=dict)
    external: dict[str, set[str]] = field(default_factory=dict)
    private: list[str] = field(default_factory=list)

    def under(self, prefix: str) -> list[str]:
        """The modules ``prefix`` and ``prefix.*``."""
        return [m for m in self.files if m == prefix or m.startswith(prefix + '.')]

    def reachable(self, start: str) -> set[str]:
        """Every module ``start`` depends on, directly or not."""
        seen, todo = set(), [start]
        while todo:
            for dep in self.edges[todo.pop()]:
                if dep not in seen:
                    seen.add(dep)
                    todo.append(dep)
        return seen


def module_files(root: Path) -> dict[str, Path]:
    files = {}
    for path in sorted(root.rglob('*.py')):
        parts = list(path.relative_to(root.parent).with_suffix('').parts)
        if parts[-1] == '__init__':
            parts.pop()
        files['.'.join(parts)] = path
    return files


def resolve(graph: Graph, module: str, node: ast.ImportFrom) -> str:
    """The absolute name of the module a ``from ... import`` statement reads from."""
    if not node.level:
        return node.module or ''
    parts = module.split('.')
    if graph.files[module].name != '__init__.py':
        parts.pop()  # a module's relative imports start from its package
    parts = parts[: len(parts) - node.level + 1]
    return '.'.join(parts + ([node.module] if node.module else []))


def is_private(name: str) -> bool:
    return name.startswith('_') and not name.startswith('__')


def build_graph(root: Path) -> Graph:
    graph = Graph(root.name, module_files(root))
    inside = graph.package
    for module, path in graph.files.items():
        deps, ext = set(), set()
        for node in ast.walk(ast.parse(path.read_text(encoding='utf-8'), str(path))):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    top = alias.name.split('.')[0]
                    if top == inside:
                        deps.add(alias.name)
                    else:
                        ext.add(top)
            elif isinstance(node, ast.ImportFrom):
                target = resolve(graph, module, node)
                if target.split('.')[0] != inside:
                    ext.add(target.split('.')[0])
                    continue
                for alias in node.names:
                    full = f'{target}.{alias.name}'
                    deps.add(full if full in graph.files else target)
                    if is_private(alias.name):
                        graph.private.append(
                            f'{module}:{node.lineno} imports {alias.name} from {target}'
                        )
        unknown = {d for d in deps if d not in graph.files}
        assert not unknown, f'{module} imports {sorted(unknown)}: not modules of {inside}'
        graph.edges[module] = deps - {module}
        graph.external[module] = ext
    return graph


# ----------------------------------------------------------------------------------------------
# the rules (each returns its findings)
# ----------------------------------------------------------------------------------------------


def import_cycles(graph: Graph) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.edges[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph.edges):
        if v not in index:
            visit(v)
    return found


def node_modules(graph: Graph) -> list[str]:
    return [f'{graph.package}.{n}' for n in NODES if f'{graph.package}.{n}' in graph.files]


def nodes_importing_nodes(graph: Graph) -> list[str]:
    nodes = node_modules(graph)
    return [f'{n} imports {d}' for n in nodes for d in sorted(graph.edges[n]) if d in nodes]


def nodes_importing_kernels(graph: Graph) -> list[str]:
    kernels = set(graph.under(f'{graph.package}.dynamics.kernels'))
    return [
        f'{n} imports {d}'
        for n in node_modules(graph)
        for d in sorted(graph.edges[n])
        if d in kernels
    ]


def ros_in_the_core(graph: Graph) -> list[str]:
    return [
        f'{m} imports {name}'
        for m in graph.under(f'{graph.package}.dynamics')
        for name in sorted(graph.external[m])
        if ROS_MODULE.match(name)
    ]


def core_importing_upward(graph: Graph) -> list[str]:
    core = set(graph.under(f'{graph.package}.dynamics'))
    return [f'{m} imports {d}' for m in sorted(core) for d in sorted(graph.edges[m] - core)]


def algorithms_depending_on_formulations(graph: Graph) -> list[str]:
    dyn = f'{graph.package}.dynamics'
    algorithms = [f'{dyn}.algorithms', *graph.under(f'{dyn}.kernels')]
    banned = set(graph.under(f'{dyn}.mufti')) | {f'{dyn}.dispatch'}
    return [
        f'{m} depends on {d}'
        for m in algorithms
        if m in graph.files
        for d in sorted(graph.reachable(m) & banned)
    ]


def long_modules(graph: Graph) -> list[str]:
    out = []
    for module, path in graph.files.items():
        count = len(path.read_text(encoding='utf-8').splitlines())
        if count > MAX_LINES:
            out.append(f'{module}: {count} lines (> {MAX_LINES})')
    return out


# ----------------------------------------------------------------------------------------------
# the package
# ----------------------------------------------------------------------------------------------


@pytest.fixture(scope='module')
def graph() -> Graph:
    return build_graph(PACKAGE_DIR)


def test_the_graph_is_read(graph: Graph) -> None:
    """Not vacuous: the modules and some known dependencies are there."""
    dyn = 'ffsim_ros.dynamics'
    for module in (
        dyn,
        f'{dyn}.lie',
        f'{dyn}.kernels.aba',
        f'{dyn}.mufti.tree',
        'ffsim_ros.simulator',
    ):
        assert module in graph.files, module
    assert f'{dyn}.lie' in graph.edges[f'{dyn}.algorithms']
    assert f'{dyn}.mufti.tree' in graph.edges[f'{dyn}.dispatch']
    assert f'{dyn}.algorithms' in graph.reachable(f'{dyn}.mufti.tree')
    assert 'rclpy' in graph.external['ffsim_ros.simulator']
    assert 'numpy' in graph.external[f'{dyn}.lie']


def test_no_import_cycle(graph: Graph) -> None:
    cycles = import_cycles(graph)
    assert not cycles, 'import cycles:\n' + '\n'.join(' <-> '.join(c) for c in cycles)


def test_no_private_name_imported_across_modules(graph: Graph) -> None:
    found = list(graph.private)
    assert not found, '\n'.join(found)


def test_no_node_imports_another_node(graph: Graph) -> None:
    found = nodes_importing_nodes(graph)
    assert not found, '\n'.join(found)


def test_no_node_imports_the_kernels(graph: Graph) -> None:
    assert len(node_modules(graph)) == len(NODES)
    found = nodes_importing_kernels(graph)
    assert not found, '\n'.join(found)


def test_the_dynamics_core_imports_nothing_from_ros(graph: Graph) -> None:
    found = ros_in_the_core(graph) + core_importing_upward(graph)
    assert not found, '\n'.join(found)


def test_the_recursive_algorithms_do_not_depend_on_mufti_or_the_dispatcher(graph) -> None:
    found = algorithms_depending_on_formulations(graph)
    assert not found, '\n'.join(found)


def test_no_module_over_the_line_limit(graph: Graph) -> None:
    found = long_modules(graph)
    assert not found, '\n'.join(found)


# ----------------------------------------------------------------------------------------------
# the rules on a package that breaks each of them
# ----------------------------------------------------------------------------------------------

BROKEN = {
    '__init__.py': '',
    'simulator.py': 'import rclpy\nfrom .dynamics.kernels import aba\n',
    'reactionless_controller.py': 'from ffsim_ros.simulator import load_robot\n',
    'control.py': 'from .dynamics import _hidden\n',
    'dynamics/__init__.py': 'from .algorithms import mass_matrix\nfrom .dispatch import fd\n',
    'dynamics/algorithms.py': 'import numpy as np\n\n\ndef mass_matrix():\n'
    '    from . import helpers  # lazy, still a dependency\n',
    'dynamics/helpers.py': 'from geometry_msgs.msg import Pose\nfrom ffsim_ros import control\n',
    'dynamics/dispatch.py': 'from .mufti.tree import solve\n',
    'dynamics/kernels/__init__.py': '',
    'dynamics/kernels/aba.py': 'from .. import mufti\n',
    'dynamics/mufti/__init__.py': '',
    'dynamics/mufti/tree.py': 'from ...dynamics import algorithms\nfrom ..algorithms import _q\n'
    + '\n' * MAX_LINES,
}


def test_each_rule_finds_what_breaks_it(tmp_path: Path) -> None:
    root = tmp_path / 'ffsim_ros'
    for rel, text in BROKEN.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(textwrap.dedent(text))
    g = build_graph(root)
    dyn = 'ffsim_ros.dynamics'
    cycles = import_cycles(g)
    # algorithms -> helpers -> control -> dynamics (__init__) -> algorithms, and
    # tree -> algorithms -> ... -> dynamics -> dispatch -> tree
    assert len(cycles) == 1 and {f'{dyn}.algorithms', f'{dyn}.helpers'} <= set(cycles[0])
    assert {'ffsim_ros.control', f'{dyn}.mufti.tree', f'{dyn}.dispatch'} <= set(cycles[0])
    assert sorted(g.private) == [
        f'ffsim_ros.control:1 imports _hidden from {dyn}',
        f'{dyn}.mufti.tree:2 imports _q from {dyn}.algorithms',
    ]
    assert nodes_importing_nodes(g) == [
        'ffsim_ros.reactionless_controller imports ffsim_ros.simulator'
    ]
    assert nodes_importing_kernels(g) == [f'ffsim_ros.simulator imports {dyn}.kernels.aba']
    assert ros_in_the_core(g) == [f'{dyn}.helpers imports geometry_msgs']
    assert core_importing_upward(g) == [f'{dyn}.helpers imports ffsim_ros.control']
    found = algorithms_depending_on_formulations(g)
    assert f'{dyn}.algorithms depends on {dyn}.dispatch' in found  # through helpers, control
    assert f'{dyn}.kernels.aba depends on {dyn}.mufti' in found
    assert long_modules(g) == [f'{dyn}.mufti.tree: {MAX_LINES + 2} lines (> {MAX_LINES})']
    assert ros_in_the_core(build_graph(PACKAGE_DIR)) == []  # rclpy is fine in a node
