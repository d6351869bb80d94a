"""The shared files (sample robots, configs, models) found in every installation layout: a
``pip install --user``, ``--prefix`` or ``--target`` put them under its own scheme's data
folder, where only ``<sys.prefix>/share/ffsim_ros`` was looked at (no sample robot then, and
an error listing none: ``expected one of []``)."""

from __future__ import annotations

import os
import site
import sys
import sysconfig
from pathlib import Path

import pytest

import ffsim_ros.resources as R


def _layout(share: Path) -> Path:
    """A share directory holding one sample robot and one sample model at ``share``."""
    (share / 'urdf').mkdir(parents=True)
    (share / 'urdf' / 'probe_robot.urdf').write_text('<robot name="probe_robot"/>\n')
    (share / 'models').mkdir()
    (share / 'models' / 'probe_model.yaml').write_text('name: probe_model\n')
    return share


@pytest.fixture
def installed(tmp_path, monkeypatch):
    """No ament index, an empty ``sys.prefix`` and user base; the package's folder is set by
    the test (``R._SOURCE_ROOT``: the site-packages it was installed into)."""
    monkeypatch.setitem(sys.modules, 'ament_index_python', None)
    monkeypatch.setitem(sys.modules, 'ament_index_python.packages', None)
    monkeypatch.setattr(sys, 'prefix', str(tmp_path / 'venv'))
    monkeypatch.setattr(site, 'USER_BASE', str(tmp_path / 'userbase'))
    monkeypatch.setattr(R, '_SOURCE_ROOT', tmp_path / 'checkout')
    return tmp_path


def _site_packages(scheme: str, base: Path) -> Path:
    keys = ('base', 'platbase', 'userbase', 'installed_base', 'installed_platbase')
    return Path(sysconfig.get_path('purelib', scheme, vars=dict.fromkeys(keys, str(base))))


def test_user_install_finds_its_share_directory(installed, monkeypatch):
    """``pip install --user``: the package in the user site-packages, its data files under
    the user base."""
    userbase = installed / 'userbase'
    data = Path(sysconfig.get_path('data', f'{os.name}_user', vars={'userbase': str(userbase)}))
    share = _layout(data / 'share' / 'ffsim_ros')
    monkeypatch.setattr(R, '_SOURCE_ROOT', _site_packages(f'{os.name}_user', userbase))
    assert R.share_dir() == share
    assert R.sample_robot('probe_robot') == share / 'urdf' / 'probe_robot.urdf'
    assert R.sample_model('probe_model') == share / 'models' / 'probe_model.yaml'


def test_user_base_is_looked_in_wherever_the_package_is(installed):
    """The user scheme's data folder is a candidate even when the package's folder tells
    nothing (e.g. imported through PYTHONPATH)."""
    share = _layout(installed / 'userbase' / 'share' / 'ffsim_ros')
    assert R.share_dir() == share


@pytest.mark.parametrize('how', ['prefix', 'home', 'target'])
def test_prefix_home_and_target_installs_find_their_share_directory(installed, monkeypatch, how):
    """``pip install --prefix P`` (``P/lib/python3.X/site-packages``, data under ``P``),
    ``--home H`` (``H/lib/python``, data under ``H``), ``--target T`` (the data files moved
    into ``T`` with the package)."""
    base = installed / 'elsewhere'
    if how == 'target':
        site_dir, share = base, base / 'share' / 'ffsim_ros'
    else:
        scheme = {'prefix': f'{os.name}_prefix', 'home': f'{os.name}_home'}[how]
        site_dir, share = _site_packages(scheme, base), base / 'share' / 'ffsim_ros'
    _layout(share)
    monkeypatch.setattr(R, '_SOURCE_ROOT', site_dir)
    assert R.share_dir() == share
    assert R.sample_robot('probe_robot').is_file()


def test_no_share_directory_names_where_it_looked(installed):
    """Nothing installed anywhere: the error names every place looked in, not an empty list
    of robots."""
    for call, kind in ((R.sample_robot, 'robot'), (R.sample_model, 'model')):
        with pytest.raises(FileNotFoundError) as info:
            call('ffsim_servicer_7dof')
        message = str(info.value)
        assert 'expected one of []' not in message
        assert f"unknown sample {kind} 'ffsim_servicer_7dof': no sample {kind}s found" in message
        for place in [*R.share_candidates(), installed / 'checkout']:
            assert str(place) in message
        assert 'ament index' in message


def test_unknown_name_still_lists_the_known_ones(installed):
    _layout(installed / 'userbase' / 'share' / 'ffsim_ros')
    with pytest.raises(FileNotFoundError, match=r"^unknown sample robot 'x'; expected one of "):
        R.sample_robot('x')
    with pytest.raises(FileNotFoundError, match=r"expected one of \['probe_robot'\]$"):
        R.sample_robot('x')
