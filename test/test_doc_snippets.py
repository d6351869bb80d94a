"""The Python blocks of ``docs/*.md`` run as written (from the repository's root): the
capture example used an undefined ``inertia`` and placeholders (``position=...``), the mufti
ones undefined ``parent``, ``model``, ``q``."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BLOCKS = [
    pytest.param(code, id=f'{path.name}:{k}')
    for path in sorted((ROOT / 'docs').glob('*.md'))
    for k, code in enumerate(re.findall(r'```python\n(.*?)```', path.read_text(), flags=re.S))
]


def test_the_docs_have_python_blocks() -> None:
    names = {p.id.split(':')[0] for p in BLOCKS}
    assert {'capture.md', 'mufti.md'} <= names


@pytest.mark.parametrize('code', BLOCKS)
def test_a_python_block_runs_as_written(code: str, monkeypatch) -> None:
    assert '=...' not in code  # no placeholder argument
    monkeypatch.chdir(ROOT)
    exec(compile(code, '<docs>', 'exec'), {'__name__': '__docs__'})
