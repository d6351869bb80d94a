"""The sample robots in ``urdf/`` are what ``tools/gen_sample_urdfs.py`` writes, and pass its
checks (which load them with ``ffsim_ros.dynamics.load_urdf`` and measure them with the
package's dynamics and control law)."""

from __future__ import annotations

import importlib.util
import math
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parent.parent
TOOL = ROOT / 'tools' / 'gen_sample_urdfs.py'
URDF_DIR = ROOT / 'urdf'
COMMITTED = sorted(URDF_DIR.glob('*.urdf'))


@pytest.fixture(scope='module')
def gen():
    """The generator, loaded from its file (a developer tool, not part of the package)."""
    spec = importlib.util.spec_from_file_location('gen_sample_urdfs', TOOL)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    try:
        spec.loader.exec_module(module)
        yield module
    finally:
        sys.modules.pop(spec.name, None)


@pytest.fixture(scope='module')
def figures(gen):
    """Every check of the committed files (raises if one fails); the measured figures."""
    return {(f.robot, f.tip): f for f in gen.check_all(URDF_DIR, verbose=False)}


# ------------------------------------------------------------------------- the files themselves


def test_generator_writes_the_committed_urdfs_byte_for_byte(gen, tmp_path: Path) -> None:
    written = gen.write(tmp_path)
    assert sorted(p.name for p in written) == [p.name for p in COMMITTED]
    for path in COMMITTED:
        assert (tmp_path / path.name).read_bytes() == path.read_bytes(), path.name
    assert gen.stale_files(URDF_DIR) == []


def test_an_edited_or_foreign_urdf_is_reported(gen, tmp_path: Path) -> None:
    for path in COMMITTED:
        shutil.copy(path, tmp_path)
    assert gen.stale_files(tmp_path) == []
    target = tmp_path / 'ffsim_servicer_7dof.urdf'
    lines = target.read_text().split('\n')
    k = lines.index('      <mass value="600"/>')
    lines[k] = '      <mass value="601"/>'
    target.write_text('\n'.join(lines))
    (tmp_path / 'extra.urdf').write_text('<robot name="extra"><link name="a"/></robot>\n')
    problems = gen.stale_files(tmp_path)
    assert len(problems) == 2, problems
    assert problems[0].endswith(
        f'ffsim_servicer_7dof.urdf: differs from the generator output from line {k + 1}'
    )
    assert problems[1].endswith('extra.urdf: not written by this generator')
    (tmp_path / 'planar_2link.urdf').unlink()
    assert any(p.endswith('planar_2link.urdf: missing') for p in gen.stale_files(tmp_path))


def test_check_mode_passes_on_the_committed_files(gen, capsys) -> None:
    assert gen.main(['--check']) == 0, capsys.readouterr().err
    out = capsys.readouterr().out
    for path in COMMITTED:
        assert f'{path.name}: robot' in out


# ----------------------------------------------------------------- the figures, derived by hand


def test_planar_figures_match_the_hand_derivation(figures) -> None:
    fig = figures[('planar_2link', 'ee_link')]
    # base 10 kg, link_1 2 kg (1.0 m), link_2 1 kg (0.8 m), joint_1 at (0.5, 0, 0)
    assert fig.total_mass == pytest.approx(13.0, abs=1e-12)
    assert fig.arm_mass == pytest.approx(3.0, abs=1e-12)
    assert fig.reach == pytest.approx(1.8, abs=1e-12)
    # home q = (0, pi/2): tip = (0.5 + 1.0, 0.8, 0); d tip / d q = [[-0.8, -0.8], [1.0, 0]]
    np.testing.assert_allclose(fig.tip_home, [1.5, 0.8, 0.0], atol=1e-12)
    sv = np.linalg.svd(np.array([[-0.8, -0.8], [1.0, 0.0]]), compute_uv=False)
    np.testing.assert_allclose(fig.singular_values, sv, rtol=1e-12)
    assert fig.reactionless is None  # 2 joints, one reactionless direction: no redundancy


def test_servicer_figures_match_the_hand_derivation(gen, figures) -> None:
    fig = figures[('ffsim_servicer_7dof', 'ee_link')]
    _, _, links, _ = gen.servicer_7dof()
    mass = {lk.name: sum(p.mass for p in lk.prims) for lk in links}
    assert fig.total_mass == pytest.approx(sum(mass.values()), abs=1e-9)
    assert fig.total_mass == pytest.approx(752.0, abs=1e-9)
    assert fig.arm_mass == pytest.approx(sum(mass[f'arm_link_{i}'] for i in range(1, 8)))
    assert fig.arm_mass == pytest.approx(99.0, abs=1e-9)
    # joint-to-joint lengths 0.25 0.2 0.9 0.2 0.9 0.15, then the TCP at (0.3, 0, 0.2)
    assert fig.reach == pytest.approx(2.6 + math.hypot(0.3, 0.2), abs=1e-12)
    # q = 0: mount + joint_1 + joint_2 offsets (1.25 m) along x, 2.2 m pitched up 45 deg then
    # down 45 deg (elbow bent 90 deg), 0.15 + 0.3 m along x again; the TCP 0.2 m above
    tip = [0.9 + 0.1 + 0.25 + 2.2 / math.sqrt(2) + 0.15 + 0.3, 0.0, 0.35 + 0.2]
    np.testing.assert_allclose(fig.tip_home, tip, atol=1e-12)
    assert fig.plain.rotation >= 1.0  # the requirement the sample is designed for
    assert fig.reactionless is not None
    assert fig.reactionless.miss < gen.REACTIONLESS_MISS
    assert fig.reactionless.max_rotation < gen.REACTIONLESS_ROTATION
    assert fig.reactionless.max_rotation < 1e-2 * fig.plain.rotation


def test_dual_arm_tips_mirror_each_other(figures) -> None:
    left = figures[('dual_arm_servicer', 'left_ee_link')]
    right = figures[('dual_arm_servicer', 'right_ee_link')]
    assert left.arm_mass == pytest.approx(94.0, abs=1e-9)
    assert left.total_mass == pytest.approx(1020.0, abs=1e-9)
    np.testing.assert_allclose(right.tip_home, left.tip_home * [1, -1, 1], atol=1e-12)
    np.testing.assert_allclose(right.singular_values, left.singular_values, rtol=1e-10)
    assert right.plain.rotation == pytest.approx(left.plain.rotation, rel=1e-6)


def test_readme_tables_are_current_and_a_stale_one_is_reported(gen, figures, tmp_path) -> None:
    fig_list = list(figures.values())
    assert gen.readme_problems(fig_list) == []
    stale = tmp_path / 'README.md'
    stale.write_text(
        gen.README.read_text().replace(
            '`arm_link_7` -> `ee_link` | (0.3 0 0.2)', '`arm_link_7` -> `ee_link` | (0.3 0 0)'
        )
    )
    problems = gen.readme_problems(fig_list, stale)
    assert len(problems) == 1 and 'ffsim_servicer_7dof.urdf table' in problems[0]


# ------------------------------------------------------------------- the checks can fail


def test_an_inconsistent_inertia_is_rejected(gen, tmp_path: Path) -> None:
    text = (URDF_DIR / 'ffsim_servicer_7dof.urdf').read_text()
    bus = '<inertia ixx="256" ixy="0" ixz="0" iyy="290" iyz="0" izz="290"/>'
    assert bus in text
    path = tmp_path / 'bad.urdf'
    path.write_text(text.replace(bus, bus.replace('ixx="256"', 'ixx="700"')))  # 700 > 290 + 290
    with pytest.raises(ValueError, match='link base_link: inertia violates the triangle'):
        gen.check_robot(path, verbose=False)


def test_a_servicer_whose_base_barely_turns_fails(gen, tmp_path: Path) -> None:
    robot, header, links, joints = gen.servicer_7dof()
    links[0].prims[0].mass *= 100.0  # a 60 t bus: the arm no longer turns it visibly
    path = tmp_path / 'heavy.urdf'
    path.write_text(gen.urdf_xml(robot, header, links, joints))
    with pytest.raises(gen.CheckError, match='base rotation .* < 1 deg'):
        gen.check_robot(path, verbose=False)
