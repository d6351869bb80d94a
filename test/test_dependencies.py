"""Commands that need more than the ROS-free engine (ROS 2, the MCAP writer, matplotlib) say
what is missing in one line and exit 2 before writing anything: without rclpy ``ffsim demo``,
``ffsim demo --scenario capture`` and ``ffsim campaign --replay RUN --mcap PATH`` ended with a
``ModuleNotFoundError`` traceback (the replay after writing ``run_<RUN>.npz``); without
matplotlib the reach demo after all its runs."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest
from campaign_samples import TINY

from ffsim_ros import cli
from ffsim_ros.campaign.cli import main as campaign_main
from ffsim_ros.dependencies import NEEDS, PIP_HINTS

ROOT = Path(__file__).resolve().parent.parent
#: What a pip install without ROS lacks (the ROS 2 Python packages, the MCAP writer, plots).
NO_ROS = sorted(
    {m for _, modules in NEEDS.values() for m in modules if not m.startswith('ffsim_ros')}
    | {'tf2_ros', 'launch', 'launch_ros'}
)
ENGINE = {'numpy', 'scipy', 'numba', 'coal', 'yaml'}
#: Imported where present, not needed (the simulator publishes /tf itself without tf2_ros).
OPTIONAL = {'tf2_ros'}


@pytest.fixture
def nothing_starts(monkeypatch):
    """Fail the test if a demo gets as far as leasing a domain or running a scenario."""

    def started(*args, **kwargs):
        raise AssertionError('the demo started without what it needs')

    monkeypatch.setattr(cli, 'DomainLease', started)
    monkeypatch.setattr(cli, 'run_mode', started)
    try:
        import ffsim_ros.capture_demo
    except ImportError:
        return
    monkeypatch.setattr(ffsim_ros.capture_demo, 'run_demo', started)


def block(monkeypatch, names) -> None:
    """Make ``import <name>`` fail as for a module not installed."""
    for name in names:
        monkeypatch.setitem(sys.modules, name, None)


@pytest.mark.parametrize('scenario', ['reach', 'capture'])
def test_demo_without_ros_exits_2_naming_what_is_missing(
    tmp_path, capsys, monkeypatch, nothing_starts, scenario
):
    block(monkeypatch, NO_ROS)
    out = tmp_path / 'out'
    with pytest.raises(SystemExit) as exc:
        cli.main(['demo', '--scenario', scenario, '--output', str(out)])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert err.count('\n') == 1 and 'Traceback' not in err
    assert err.startswith(f'ffsim demo: error: the {scenario} demo (')
    assert 'needs what is not installed here: ROS 2 packages rclpy, ament_index_python, ' in err
    for name in ('std_msgs', 'nav_msgs', 'tf2_msgs'):
        assert f' {name},' in err or f' {name} (' in err
    assert "; mcap (pip install mcap); matplotlib (pip install 'ffsim_ros[plots]')\n" in err
    assert not out.exists()


def test_demo_without_matplotlib_names_it_alone_before_running(
    tmp_path, capsys, monkeypatch, nothing_starts
):
    """With ROS 2 but no matplotlib the reach demo ran both modes, then failed on its plots."""
    block(monkeypatch, ['matplotlib', 'matplotlib.pyplot'])
    with pytest.raises(SystemExit) as exc:
        cli.main(['demo', '--output', str(tmp_path / 'out')])
    assert exc.value.code == 2
    assert capsys.readouterr().err == (
        'ffsim demo: error: the reach demo (simulator and controller nodes over DDS, MCAP, '
        "plots) needs what is not installed here: matplotlib (pip install 'ffsim_ros[plots]')\n"
    )
    assert not (tmp_path / 'out').exists()


def test_campaign_replay_mcap_without_ros_exits_2_before_writing(tmp_path, capsys, monkeypatch):
    file = tmp_path / 'tiny.yaml'
    file.write_text(TINY)
    out, mcap = tmp_path / 'out', tmp_path / 'r.mcap'
    block(monkeypatch, NO_ROS)
    argv = [str(file), '--output', str(out), '--replay', '0', '--mcap', str(mcap)]
    assert campaign_main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith(
        "ffsim campaign: error: --mcap: writing the replay's ROS 2 messages needs what is not "
        'installed here: ROS 2 packages rclpy, ament_index_python, '
    )
    assert err.endswith('; mcap (pip install mcap)\n') and err.count('\n') == 1
    assert not out.exists() and not mcap.exists()


# --------------------------------------------------------------------------- the lists kept whole
def _module_file(module: str) -> Path | None:
    path = ROOT.joinpath(*module.split('.'))
    for candidate in (path.with_suffix('.py'), path / '__init__.py'):
        if candidate.is_file():
            return candidate
    return None


def _third_party_imports(start: str) -> set[str]:
    """Top-level names of the modules outside this package that ``start`` imports, directly or
    through the package's modules it imports (module level and inside functions)."""
    seen, found, todo = set(), set(), [start]
    while todo:
        module = todo.pop()
        path = _module_file(module)
        if module in seen or path is None:
            continue
        seen.add(module)
        parts = module.split('.')
        todo += ['.'.join(parts[:i]) for i in range(1, len(parts))]  # (its packages)
        package = module if path.name == '__init__.py' else module.rpartition('.')[0]
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split('.')[: len(package.split('.')) - node.level + 1]
                    target = '.'.join(base + ([node.module] if node.module else []))
                else:
                    target = node.module
                names = [target, *(f'{target}.{a.name}' for a in node.names)]
            else:
                continue
            for name in names:
                if name.split('.')[0] == 'ffsim_ros':
                    todo.append(name)
                else:
                    found.add(name.split('.')[0])
    return found - set(sys.stdlib_module_names)


@pytest.mark.parametrize('need', sorted(NEEDS))
def test_needs_list_every_import_of_the_command(need):
    """Each command's list names every module its code imports beyond the engine, so that all
    of them are named at once."""
    _, modules = NEEDS[need]
    listed = {m for m in modules if not m.startswith('ffsim_ros')}
    imported = set()
    for module in modules:
        if module.startswith('ffsim_ros'):
            assert _module_file(module) is not None, module
            imported |= _third_party_imports(module)
    if need == 'reach demo':  # the demo process itself (cli.run_mode, the plots), its nodes
        imported |= _third_party_imports('ffsim_ros.cli') - {'launch', 'ament_index_python'}
        imported |= _third_party_imports('ffsim_ros.simulator')
        imported |= _third_party_imports('ffsim_ros.reactionless_controller')
        imported |= {t.split('/')[0] for t in cli.RECORDED_TOPICS.values()}
    assert imported - ENGINE - OPTIONAL <= listed, sorted(imported - ENGINE - OPTIONAL - listed)
    assert set(PIP_HINTS) >= ENGINE | {'matplotlib', 'mcap'}
