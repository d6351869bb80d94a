"""Equation references name their seed, and docs/equations.md maps each one to the code.

The two seed documents number their equations independently: seed 000 ("Equations of Motion
for Free-Floating Robots", eqs. 1-41) and seed 001 (I.H. Mufti, NRC DM-3, 1983: eqs. 1-73 with
eq. 40 as 40-a to 40-d, Remarks 1-5, sections 1-6, figures, and the Appendix with eqs. A-1 to
A-12). "eq. 38" is the nonlinear effects ``c`` in one and a barycentric form in the other, so a
reference is written as a tag: ``[S0 eq. 38]``, ``[M eqs. 12-14]``, ``[M Remark 4]``,
``[M Appendix case 2]``, ``[M sec. 3.1]``.

Checked here, over the package's Python files, README.md and docs/dynamics.md, docs/mufti.md,
docs/capture.md (the tags of docs/equations.md's own prose too, which names equations bare by
design: its table is the map):

* every tag is well formed (one seed, known kinds of items, ``eq.``/``eqs.`` agreeing with the
  count) and no bare reference is left outside a tag: "eq. N"/"eqs. N" nowhere in the source,
  and "Remark N", "Appendix", "sec. N", "section N", "Fig. N" nowhere in docstrings and
  comments (run-time messages name "seed 001" in words and are code, not checked);
* every equation, remark, section or figure a tag names has a row of docs/equations.md under
  the same seed, and every function a row names exists (imported and looked up, or, for
  ``kernels/<file>.py: name``, a ``def name(`` in that file);
* every number is within its seed, and the table has a row for every equation of both seeds.
"""

from __future__ import annotations

import ast
import importlib
import io
import re
import tokenize
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / 'ffsim_ros'
KERNELS = PACKAGE / 'dynamics' / 'kernels'
TABLE = ROOT / 'docs' / 'equations.md'
#: Prose checked for bare references too (an untagged "seed 000 eqs. 9" in any of them fails).
DOCS = (
    ROOT / 'README.md',
    ROOT / 'docs' / 'dynamics.md',
    ROOT / 'docs' / 'mufti.md',
    ROOT / 'docs' / 'capture.md',
)
#: Files whose tags are checked (well formed, within their seed, in the table).
TAGGED_DOCS = (*DOCS, TABLE)

#: Files skipped by the bare-reference check (none: every module is tagged).
PENDING: tuple[str, ...] = ()

# ---------------------------------------------------------------------------------------------
# what each seed has (checked against the seed texts in ../shared/seeds/)
# ---------------------------------------------------------------------------------------------

#: Seed 000: eqs. 1-41 ("[23]" is printed twice; both are eq. 23).
S0_REFS = frozenset(f'eq. {k}' for k in range(1, 42))
#: Seed 001: the last numbered equation is (73) in section 4; (40) only exists as 40-a to 40-d;
#: (50) lost its number in the OCR but is there; the Appendix numbers (A-1) to (A-12).
M_EQUATIONS = frozenset(
    [f'eq. {k}' for k in range(1, 74) if k != 40]
    + [f'eq. 40-{c}' for c in 'abcd']
    + [f'eq. A-{k}' for k in range(1, 13)]
)
M_REFS = M_EQUATIONS | frozenset(
    [f'Remark {k}' for k in range(1, 6)]
    + [f'sec. {s}' for s in ('1', '2', '3', '3.1', '3.2', '4', '5', '6')]
    + [f'Fig. {f}' for f in ('1a', '1b', '2', '3a', '3b', '4', '5', '6')]
    + ['Appendix', 'Appendix case 1', 'Appendix case 2']
)
SEED_REFS = {'S0': S0_REFS, 'M': M_REFS}

# ---------------------------------------------------------------------------------------------
# the tag grammar
# ---------------------------------------------------------------------------------------------

_KEYWORD = r'(?:[Ee]qs?\.|[Ee]quations?|Remarks?|Appendix|[Ss]ecs?\.|[Ss]ections?|Figs?\.)'
#: Anything that looks like a tag: ``[<label> <reference keyword> ...]``.
CANDIDATE = re.compile(rf'\[(?P<seed>[A-Za-z0-9]+)\s+(?P<body>{_KEYWORD}[^\[\]]*)\]')

_NUM = r'(?:A-\d+|\d+(?:-[a-d])?)'
_RANGE = rf'{_NUM}(?:(?:-| to ){_NUM})?'
_ITEMS = {
    'eq': rf'(?P<eq>eqs?)\. (?P<eqs>{_RANGE}(?:(?:, | and ){_RANGE})*)',
    'remark': r'(?P<rem>Remarks?) (?P<rems>\d+(?:(?:, | and )\d+)*)',
    'appendix': r'Appendix(?: case (?P<case>\d+))?',
    'sec': r'(?P<sec>secs?)\. (?P<secs>\d+(?:\.\d+)?(?:-\d+(?:\.\d+)?)?)',
    'fig': r'(?P<fig>Figs?)\. (?P<figs>\d+[a-z]?)',
}
ITEM = re.compile('|'.join(f'(?:{p})' for p in _ITEMS.values()))
_ANY = re.sub(r'\?P<\w+>', '', ITEM.pattern)  # the same items without group names
BODY = re.compile(rf'(?:{_ANY})(?:(?:, |; )(?:{_ANY}))*')

#: A bare equation number, anywhere in the source ("eq 5", "eqs. 6-7", "Eq. (38)",
#: "equation [39]"); ``'eq38'`` (a method name) is not one.
BARE_EQ = re.compile(r'\b(?:[Ee]qs?(?:\.\s*|\s+)|[Ee]quations?\s+)[(\[]?(?:\d|A-\d)')
#: Other bare references, in docstrings and comments. A section right after a year is another
#: book's ("Featherstone 2008, sec. 5.3").
BARE_OTHER = re.compile(
    r'\bRemarks?\s+\d|\bAppendix\b|(?<!\d\d\d\d, )\bsecs?\.\s*\d|\b[Ss]ections?\s+\d'
    r'|\bFigs?\.\s*\d'
)


def _expand(a: str, b: str) -> list[str]:
    """The equation numbers from ``a`` to ``b`` (``12-14``, ``A-7 to A-10``, ``40-a to 40-c``)."""
    if a.isdigit() and b.isdigit() and int(a) < int(b):
        return [str(k) for k in range(int(a), int(b) + 1)]
    if a.startswith('A-') and b.startswith('A-') and int(a[2:]) < int(b[2:]):
        return [f'A-{k}' for k in range(int(a[2:]), int(b[2:]) + 1)]
    ma, mb = re.fullmatch(r'(\d+)-([a-d])', a), re.fullmatch(r'(\d+)-([a-d])', b)
    if ma and mb and ma[1] == mb[1] and ma[2] < mb[2]:
        return [f'{ma[1]}-{chr(c)}' for c in range(ord(ma[2]), ord(mb[2]) + 1)]
    raise ValueError(f'bad range {a} .. {b}')


def _numbers(text: str) -> list[str]:
    out: list[str] = []
    for part in re.split(r', | and ', text):
        m = re.fullmatch(rf'({_NUM})(?:-| to )({_NUM})', part)
        out += _expand(m[1], m[2]) if m else [part]
    return out


def parse_tag(body: str) -> list[str]:
    """The references of a tag body (``'eqs. 20-22, 24'`` -> eq. 20, 21, 22, 24).

    Raises
    ------
    ValueError
        A body outside the grammar, or ``eq.``/``eqs.`` (``Remark``/``sec.``/``Fig.``)
        disagreeing with the number of items.
    """
    body = ' '.join(body.split())
    if not BODY.fullmatch(body):
        raise ValueError(f'not a tag body: {body!r}')
    refs: list[str] = []
    for m in ITEM.finditer(body):
        if m['eq']:
            nums = _numbers(m['eqs'])
            word, many = m['eq'], len(nums) > 1
            refs += [f'eq. {k}' for k in nums]
        elif m['rem']:
            nums = _numbers(m['rems'])
            word, many = m['rem'], len(nums) > 1
            refs += [f'Remark {k}' for k in nums]
        elif m['sec']:
            ends = m['secs'].split('-')
            word, many = m['sec'], len(ends) > 1
            refs += [f'sec. {s}' for s in ends]
        elif m['fig']:
            word, many = m['fig'], False
            refs.append(f'Fig. {m["figs"]}')
        else:
            word, many = 'Appendix', False
            refs.append('Appendix' if m['case'] is None else f'Appendix case {m["case"]}')
        if word.endswith('s') != many and word != 'Appendix':
            raise ValueError(f'{word!r} with {"several" if many else "one"} in {body!r}')
    return refs


# ---------------------------------------------------------------------------------------------
# the sources
# ---------------------------------------------------------------------------------------------


def _python_files() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob('*.py') if '__pycache__' not in p.parts)


def _pending(path: Path) -> bool:
    rel = path.relative_to(PACKAGE).as_posix()
    return any(rel == p or (p.endswith('/') and rel.startswith(p)) for p in PENDING)


def _where(path: Path, text: str, pos: int, line0: int = 1) -> str:
    return f'{path.relative_to(ROOT)}:{line0 + text.count(chr(10), 0, pos)}'


def tags_in(path: Path) -> list[tuple[str, str, str]]:
    """``(where, seed, body)`` of every tag candidate in a file."""
    text = path.read_text(encoding='utf-8')
    return [
        (_where(path, text, m.start()), m['seed'], m['body']) for m in CANDIDATE.finditer(text)
    ]


def _without_tags(text: str) -> str:
    """``text`` with the valid tags blanked out (lines kept)."""

    def blank(m: re.Match[str]) -> str:
        try:
            if m['seed'] in SEED_REFS:
                parse_tag(m['body'])
                return re.sub(r'[^\n]', ' ', m[0])
        except ValueError:
            pass
        return m[0]

    return CANDIDATE.sub(blank, text)


def prose(path: Path) -> list[tuple[int, str]]:
    """``(first line, text)`` of the docstrings (every string statement) and comments."""
    src = path.read_text(encoding='utf-8')
    out = [
        (node.lineno, node.value.value)
        for node in ast.walk(ast.parse(src))
        if isinstance(node, ast.Expr)
        and isinstance(node.value, ast.Constant)
        and isinstance(node.value.value, str)
    ]
    for tok in tokenize.generate_tokens(io.StringIO(src).readline):
        if tok.type == tokenize.COMMENT:
            out.append((tok.start[0], tok.string))
    return out


def bare_references(path: Path) -> list[str]:
    found = []
    text = path.read_text(encoding='utf-8')
    clean = _without_tags(text)
    for m in BARE_EQ.finditer(clean):
        found.append(f'{_where(path, clean, m.start())}: {clean[m.start() : m.end() + 12]!r}')
    pieces = prose(path) if path.suffix == '.py' else [(1, text)]
    for line0, piece in pieces:
        clean = _without_tags(piece)
        for m in BARE_OTHER.finditer(clean):
            where = _where(path, clean, m.start(), line0)
            found.append(f'{where}: {clean[m.start() : m.end() + 12]!r}')
    return found


# ---------------------------------------------------------------------------------------------
# the table
# ---------------------------------------------------------------------------------------------

ROW = re.compile(r'^\| (?P<seed>S0|M) \| (?P<ref>[^|]+?) \| (?P<rest>.*) \|$')
DOTTED = re.compile(r'ffsim_ros(?:\.\w+)+')
KERNEL = re.compile(r'kernels/(?P<file>\w+\.py): (?P<name>\w+)')


def table_rows() -> list[tuple[int, str, str, str]]:
    """``(line, seed, ref, functions cell)`` of every row of docs/equations.md."""
    rows = []
    for k, line in enumerate(TABLE.read_text(encoding='utf-8').splitlines(), start=1):
        m = ROW.match(line)
        if m:
            cells = m['rest'].split(' | ')
            assert len(cells) == 2, f'equations.md:{k}: expected 4 cells, got {line!r}'
            rows.append((k, m['seed'], m['ref'], cells[1]))
    return rows


def resolve(name: str) -> object:
    """The object a dotted name denotes: the longest importable module, then attributes."""
    parts = name.split('.')
    for i in range(len(parts), 0, -1):
        module = '.'.join(parts[:i])
        try:
            obj = importlib.import_module(module)
        except ModuleNotFoundError as exc:
            if exc.name is None or not module.startswith(exc.name):
                raise
            continue
        for attr in parts[i:]:
            obj = getattr(obj, attr)
        return obj
    raise ModuleNotFoundError(name)


# ---------------------------------------------------------------------------------------------
# tests
# ---------------------------------------------------------------------------------------------


def test_tag_grammar():
    """The parser itself: ranges expand, malformed or mislabelled bodies are refused."""
    assert parse_tag('eqs. 20-22, 24') == ['eq. 20', 'eq. 21', 'eq. 22', 'eq. 24']
    assert parse_tag('eq. 40-c, Appendix case 1') == ['eq. 40-c', 'Appendix case 1']
    assert parse_tag('eqs. A-7 to A-9') == ['eq. A-7', 'eq. A-8', 'eq. A-9']
    assert parse_tag('Remarks 3, 5') == ['Remark 3', 'Remark 5']
    assert parse_tag('secs. 3.1-3.2') == ['sec. 3.1', 'sec. 3.2']
    assert parse_tag('sec. 4, eqs. 62-63') == ['sec. 4', 'eq. 62', 'eq. 63']
    for bad in ('eq 38', 'eqs. 38', 'eq. 12-14', 'eqs. 14-12', 'eq. 39, ``F_b = 0``', 'Eq. 5'):
        with pytest.raises(ValueError):
            parse_tag(bad)
    assert not BARE_EQ.search("method ``'eq38'``")
    assert BARE_EQ.search('the CoM (seed 000 eqs. 9, 12-16)')
    for bare in ('(eq. 5)', 'eqs. 6-7', 'Eq. (38)', 'equation [39]', 'eq 21', 'eq. A-6'):
        assert BARE_EQ.search(bare), bare
    for bare in ('Remark 4', 'the Appendix', 'sec. 3.1', 'section 4', 'Fig. 3a'):
        assert BARE_OTHER.search(bare), bare
    assert not BARE_OTHER.search('Featherstone 2008, sec. 5.3')
    assert _without_tags('[M eq. 5] and [S0 eq. 5]').strip() == 'and'
    assert _without_tags('[S1 eq. 5]') == '[S1 eq. 5]'


def test_tags_are_well_formed():
    """Every tag has one seed, ``S0`` or ``M``, and a body of known items."""
    bad = []
    for path in [*_python_files(), *TAGGED_DOCS]:
        for where, seed, body in tags_in(path):
            try:
                if seed not in SEED_REFS:
                    raise ValueError(f'seed {seed!r} (expected S0 or M)')
                parse_tag(body)
            except ValueError as exc:
                bad.append(f'{where}: [{seed} {" ".join(body.split())}]: {exc}')
    assert not bad, 'malformed tags:\n' + '\n'.join(bad)


def test_no_bare_references():
    """No untagged "eq. N", "Remark N", "Appendix", "sec. N" (see PENDING)."""
    files = [p for p in _python_files() if not _pending(p)]
    found = [hit for path in [*files, *DOCS] for hit in bare_references(path)]
    assert not found, 'untagged references (write [S0 ...] or [M ...]):\n' + '\n'.join(found)


def test_tagged_references_exist_in_their_seed():
    """Equation numbers within each seed (S0: 1-41; M: 1-73, 40-a..d, A-1..12, ...)."""
    bad = []
    for path in [*_python_files(), *TAGGED_DOCS]:
        for where, seed, body in tags_in(path):
            if seed not in SEED_REFS:
                continue  # reported by test_tags_are_well_formed
            try:
                refs = parse_tag(body)
            except ValueError:
                continue
            bad += [f'{where}: [{seed} {ref}]' for ref in refs if ref not in SEED_REFS[seed]]
    assert not bad, 'references outside their seed:\n' + '\n'.join(bad)


def test_table_covers_both_seeds():
    """One row per equation of each seed, and no row for an equation the seed lacks."""
    rows = table_rows()
    have = {(seed, ref) for _, seed, ref, _ in rows}
    missing = [f'{s} {r}' for s, refs in (('S0', S0_REFS), ('M', M_EQUATIONS)) for r in refs]
    missing = sorted(x for x in missing if tuple(x.split(' ', 1)) not in have)
    assert not missing, f'equations.md has no row for: {missing}'
    extra = [f'equations.md:{k}: {s} {r}' for k, s, r, _ in rows if r not in SEED_REFS[s]]
    assert not extra, 'rows for references the seed does not have:\n' + '\n'.join(extra)


def test_every_tag_has_a_row():
    """Each reference tagged in the package or the docs is in the table, under its seed."""
    have = {(seed, ref) for _, seed, ref, _ in table_rows()}
    missing = []
    for path in [*_python_files(), *TAGGED_DOCS]:
        for where, seed, body in tags_in(path):
            try:
                refs = parse_tag(body)
            except ValueError:
                continue
            missing += [f'{where}: [{seed} {r}]' for r in refs if (seed, r) not in have]
    assert not missing, 'tagged but not in docs/equations.md:\n' + '\n'.join(missing)


def test_table_functions_exist():
    """Every name in the table resolves; every implemented row names at least one."""
    bad = []
    for k, seed, ref, cell in table_rows():
        names = re.findall(r'`([^`]+)`', cell)
        dotted = [n for n in names if DOTTED.fullmatch(n)]
        kernel = [KERNEL.fullmatch(n) for n in names if KERNEL.fullmatch(n)]
        if not (dotted or kernel) and not cell.startswith('not implemented'):
            bad.append(f'equations.md:{k}: {seed} {ref} names no function')
        for name in dotted:
            try:
                resolve(name)
            except (ImportError, AttributeError) as exc:
                bad.append(f'equations.md:{k}: {name}: {exc!r}')
        for m in kernel:
            path = KERNELS / m['file']
            src = path.read_text(encoding='utf-8') if path.is_file() else ''
            if not re.search(rf'^def {m["name"]}\(', src, re.M):
                bad.append(f'equations.md:{k}: no "def {m["name"]}(" in {path.relative_to(ROOT)}')
    assert not bad, '\n'.join(bad)
