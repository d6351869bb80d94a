"""``urdf/README.md`` says what the URDF files hold: every joint of its joint tables (type,
parent, child, origin, axis, limits) and the end-effector offsets quoted in its prose, parsed
from the README and compared with the ``<joint>`` elements of the files themselves (issue 15:
the README once listed ``ee_joint`` at (0.3 0 0) while the URDF had (0.3 0 0.2))."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest

URDF_DIR = Path(__file__).resolve().parent.parent / 'urdf'
README = (URDF_DIR / 'README.md').read_text(encoding='utf-8')
#: The README rounds to 4-5 significant digits (e.g. -0.7854 for -pi/4).
TOL = 1e-4

ROW = re.compile(
    r'^\| `(?P<name>[\w]+)` \| (?P<type>\w+) \| `(?P<parent>\w+)` -> `(?P<child>\w+)` \| '
    r'\((?P<xyz>[^)]*)\) / \((?P<rpy>[^)]*)\) \| (?P<axis>[^|]*)\| (?P<limits>[^|]*)\|',
    re.MULTILINE,
)


def readme_joints(urdf_name: str) -> dict[str, dict]:
    """The joint table rows of the README section about ``urdf_name``."""
    start = README.index(f'`{urdf_name}`', README.index('\n## 1.'))
    end = README.find('\n## ', start)
    section = README[start : end if end > 0 else None]
    return {m['name']: m.groupdict() for m in ROW.finditer(section)}


def vector(text: str) -> np.ndarray:
    return np.array([float(x) for x in text.split()])


def urdf_joints(urdf_name: str) -> dict[str, ET.Element]:
    root = ET.parse(URDF_DIR / urdf_name).getroot()
    return {j.get('name'): j for j in root.findall('joint')}


@pytest.mark.parametrize(
    'urdf_name', ['ffsim_servicer_7dof.urdf', 'planar_2link.urdf', 'dual_arm_servicer.urdf']
)
def test_joint_tables_are_the_urdf_joints(urdf_name: str) -> None:
    listed = readme_joints(urdf_name)
    joints = urdf_joints(urdf_name)
    assert sorted(listed) == sorted(joints)
    for name, row in listed.items():
        joint = joints[name]
        assert row['type'] == joint.get('type'), name
        assert row['parent'] == joint.find('parent').get('link'), name
        assert row['child'] == joint.find('child').get('link'), name
        origin = joint.find('origin')
        np.testing.assert_allclose(vector(row['xyz']), vector(origin.get('xyz')), atol=TOL)
        np.testing.assert_allclose(vector(row['rpy']), vector(origin.get('rpy')), atol=TOL)
        axis = joint.find('axis')
        if axis is None:
            assert row['axis'].strip() == '', name
        else:
            np.testing.assert_allclose(vector(row['axis'].strip()[1:-1]), vector(axis.get('xyz')))
        limit = joint.find('limit')
        if limit is not None:
            lower, upper = (float(x) for x in row['limits'].split('..'))
            assert lower == pytest.approx(float(limit.get('lower')), abs=TOL), name
            assert upper == pytest.approx(float(limit.get('upper')), abs=TOL), name


def test_end_effector_offsets_quoted_in_the_prose() -> None:
    """Both sentences that quote where ``ee_link`` sits on ``arm_link_7`` give the URDF's
    ``ee_joint`` origin."""
    origin = vector(urdf_joints('ffsim_servicer_7dof.urdf')['ee_joint'].find('origin').get('xyz'))
    number = r'\(([-\d.]+), ([-\d.]+), ([-\d.]+)\) m'
    quotes = re.findall(r'fixed to `arm_link_7` at ' + number, README)
    quotes += re.findall(r'places `ee_link` at ' + number + ' in `arm_link_7`', README)
    assert len(quotes) == 2
    for quote in quotes:
        np.testing.assert_allclose([float(x) for x in quote], origin, atol=TOL)
