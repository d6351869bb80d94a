"""The name filter of ``GetEntities`` / ``GetEntitiesStates`` (simulation_interfaces): a regular
expression whose matching cost is bounded (no ROS).

The standard's syntax is POSIX Extended; the filter is matched by Python's ``re``
(``re.search``) after :func:`posix_to_python` has translated the POSIX character classes of
bracket expressions (``[[:digit:]_]`` -> ``[0-9_]``; ASCII, as in the POSIX locale). Where the
two syntaxes differ otherwise, Python's is followed: a backslash escapes inside a bracket
expression too (``[\\]]``), ``\\d``, ``\\w``, lazy quantifiers and ``(?...)`` groups are
Python's, and the collating elements ``[.x.]`` and equivalence classes ``[=x=]`` are refused.

Python's ``re`` backtracks while holding the GIL, so a costly pattern stops the simulator's
physics thread with the service thread (``^\\w{2}(\\w|\\w|\\w)*!`` froze it for 8 s):
:func:`name_filter_problem` refuses, by a scan of the pattern's text, those that can backtrack
for long.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

#: Longest ``GetEntities`` name filter taken [characters].
MAX_FILTER_LENGTH = 256
#: Most unbounded quantifiers (``*``, ``+``, ``{m,}``) in a name filter: the matching of a
#: name of ``n`` characters can take ``n`` to their number (plus one) steps; with three,
#: ``.*.*.*\d`` took 1.7 s on a 233-character name, with two ``\w*\w*\d`` 0.03 s.
MAX_FILTER_UNBOUNDED = 2
#: The choices an unbounded quantifier counts in a filter's backtracking estimate (also a
#: ``{m,n}`` of more choices).
UNBOUNDED_CHOICES = 64
#: Largest backtracking estimate of a name filter taken (:func:`name_filter_problem`).
MAX_FILTER_CHOICES = 2**14
#: A ``{m,n}`` quantifier as Python's ``re`` reads one (``{m}``, ``{m,}``, ``{,n}``, ``{,}``;
#: ``{}`` is a literal).
_REPEAT = re.compile(r'\{(\d*)(,?)(\d*)\}')
#: The opening of a group: ``(``, ``(?P<name>``, a lookaround ``(?=``, ``(?!``, ``(?<=``,
#: ``(?<!``, atomic ``(?>``, or inline flags: of a group ``(?aiLmsux-imsx:`` or of the whole
#: pattern ``(?aiLmsux)`` (groups 1 and 2: the flags set and ``:`` or ``)``).
_GROUP_OPEN = re.compile(r'\((?:\?(?:P<[^>]*>|<[=!]|[=!>]|([aiLmsux]*)(?:-[imsx]*)?([:)])))?')


#: The POSIX character classes (bracket expressions, ``[:name:]``) as the members of a Python
#: character class (ASCII: the POSIX locale).
POSIX_CLASSES = {
    'alnum': '0-9A-Za-z',
    'alpha': 'A-Za-z',
    'blank': ' \\t',
    'cntrl': '\\x00-\\x1f\\x7f',
    'digit': '0-9',
    'graph': '!-~',
    'lower': 'a-z',
    'print': ' -~',
    'punct': '!-/:-@\\[-`{-~',
    'space': ' \\t\\n\\r\\f\\v',
    'upper': 'A-Z',
    'xdigit': '0-9A-Fa-f',
}
#: An alternative of a repeated group taken by :func:`name_filter_problem`: a literal name
#: fragment.
_LITERAL = re.compile(r'[A-Za-z0-9_-]+')


def posix_to_python(pattern: str) -> str:
    """``pattern`` (POSIX Extended, the standard's syntax) with the POSIX character classes
    of its bracket expressions written as Python's ``re`` reads them (module docstring).

    Parameters
    ----------
    pattern : str
        The filter.

    Returns
    -------
    str
        The pattern for ``re`` (unchanged when it has no ``[:name:]`` class).

    Raises
    ------
    ValueError
        An unknown class name, a collating element ``[.x.]`` or an equivalence class
        ``[=x=]`` (named with its position).

    Examples
    --------
    >>> posix_to_python('^ball_[[:digit:]]+$')
    '^ball_[0-9]+$'
    >>> posix_to_python('[^[:upper:][:digit:]_]')
    '[^A-Z0-9_]'
    """
    out, i, n = [], 0, len(pattern)
    while i < n:
        c = pattern[i]
        if c == '\\':
            out.append(pattern[i : i + 2])
            i += 2
            continue
        if c != '[':
            out.append(c)
            i += 1
            continue
        j = i + 1  # a bracket expression: '^' first negates, ']' first (after it) is a member
        if pattern[j : j + 1] == '^':
            j += 1
        if pattern[j : j + 1] == ']':
            j += 1
        out.append(pattern[i:j])
        while j < n and pattern[j] != ']':
            if pattern[j] == '\\':
                out.append(pattern[j : j + 2])
                j += 2
            elif pattern.startswith(('[:', '[.', '[='), j):
                kind = pattern[j + 1]
                end = pattern.find(kind + ']', j + 2)
                if end < 0:  # ('[' and the rest as members, as re reads them)
                    out.append(pattern[j])
                    j += 1
                    continue
                name = pattern[j + 2 : end]
                if kind != ':':
                    raise ValueError(
                        f'expected no collating element or equivalence class (not supported), '
                        f'got {pattern[j : end + 2]!r} at {j}'
                    )
                if name not in POSIX_CLASSES:
                    raise ValueError(
                        f'expected a POSIX class ([:{"/".join(POSIX_CLASSES)}:]), got '
                        f'{pattern[j : end + 2]!r} at {j}'
                    )
                out.append(POSIX_CLASSES[name])
                j = end + 2
            else:
                out.append(pattern[j])
                j += 1
        out.append(pattern[j : j + 1])
        i = j + 1
    return ''.join(out)


def compile_name_filter(pattern: str) -> re.Pattern:
    """The compiled filter (:func:`posix_to_python`), for a ``pattern`` that
    :func:`name_filter_problem` takes.

    Parameters
    ----------
    pattern : str
        A POSIX extended regular expression.

    Returns
    -------
    re.Pattern
    """
    return re.compile(posix_to_python(pattern))


@dataclass
class _Group:
    """A group (or the whole pattern) being scanned by :func:`name_filter_problem`."""

    start: int
    inner: int = 0  # where its content starts (after the opening)
    stop: int = 0  # its closing parenthesis (once closed)
    branches: int = 1
    choices: bool = False  # holds a quantifier of several counts or an alternation
    plain: bool = True  # a capturing, non-capturing or named group (no lookaround, no flags)


def _literal_alternation(pattern: str, group: _Group) -> bool:
    """Whether ``group`` is a plain group of literal alternatives (``(ffsim|sat)``, ASCII
    letters, digits, ``_``, ``-``) none of which starts another (letter case ignored): at
    each position at most one of them matches, so its repetition splits a name in one way
    only and backtracks as one quantifier (polynomially), not exponentially."""
    if not group.plain:
        return False
    alternatives = pattern[group.inner : group.stop].split('|')
    if not all(_LITERAL.fullmatch(a) for a in alternatives):
        return False
    folded = sorted(a.casefold() for a in alternatives)
    return all(not b.startswith(a) for a, b in zip(folded, folded[1:], strict=False))


def _escape_end(pattern: str, i: int) -> int:
    r"""End of the escape at ``pattern[i]`` (a backslash), outside a character class; -1 for
    a backreference (``\1`` to ``\99``; ``\0``, ``\0oo`` and ``\ooo`` are octal)."""
    c = pattern[i + 1 : i + 2]
    if c and c in '123456789':
        octal = pattern[i + 1 : i + 4]
        if len(octal) == 3 and all(d in '01234567' for d in octal):
            return i + 4
        return -1
    if c == 'N' and pattern[i + 2 : i + 3] == '{':  # \N{NAME}
        return pattern.index('}', i) + 1
    return i + 2


def _class_end(pattern: str, i: int) -> int:
    r"""End of the character class opening at ``pattern[i]`` (``[``): a ``]`` first (after
    ``^``) is a member, ``\]`` too."""
    j = i + 1
    if pattern[j : j + 1] == '^':
        j += 1
    if pattern[j : j + 1] == ']':
        j += 1
    while j < len(pattern) and pattern[j] != ']':
        j += 2 if pattern[j] == '\\' else 1
    return j + 1


def name_filter_problem(pattern: str) -> str | None:
    r"""Why the regular expression ``pattern`` (a ``GetEntities`` name filter) is refused, or
    None.

    Python's ``re`` backtracks while holding the GIL: a costly pattern stops the physics
    (``^\w{2}(\w|\w|\w)*!`` froze it for 8 s). A filter must be a valid pattern
    (``re.compile``) and, read by a scanner of its text (escapes, character classes with
    their escapes, groups, quantifiers ``* + ? {m,n}`` with their lazy ``?`` and possessive
    ``+`` suffixes):

    * at most :data:`MAX_FILTER_LENGTH` characters;
    * no backreference (``\1``, ``(?P=name)``, ``(?(1)...)``) and no verbose flag ``x``
      (whose whitespace and comments the scanner does not read);
    * no repeated group (``*``, ``+``, ``{m,n}`` with n > 1) holding a quantifier or an
      alternation, at any depth (``(a+)+``, ``(a|ab)*``, ``(?:\w|\w){9}``): it backtracks
      exponentially; a character class does the same at no cost (``[ab]*``). Taken: a plain
      group of literal alternatives none of which starts another (``(ffsim|sat)+``,
      ``(a|b)*``): a name splits into them in one way only, so its repetition backtracks as
      one unbounded quantifier, and is counted as one;
    * at most :data:`MAX_FILTER_UNBOUNDED` unbounded quantifiers (``*``, ``+``, ``{m,}``),
      which backtrack polynomially (three: ``n**4`` steps on ``n`` characters);
    * a backtracking estimate of at most :data:`MAX_FILTER_CHOICES`: the product of the
      choices of every quantifier (``?`` 2, ``{m,n}`` n - m + 1, unbounded ones and those of
      more than :data:`UNBOUNDED_CHOICES` counting that many) and of every alternation (its
      branches). Choices in sequence multiply: ``b?`` twenty times took 4 s on a
      233-character name, ``(b|b)`` sixteen times 0.5 s.

    The filters of every day pass and match as before (``^ball``, ``target_\d+``,
    ``.*arm.*``, ``^(ball|sat)_\d{1,3}$``, ``(ffsim|x)+``, ``^ball_[[:digit:]]+$``).

    Parameters
    ----------
    pattern : str
        The filter.

    Returns
    -------
    str or None
        The problem, ``expected ..., got ...`` naming the culprit and suggesting what to use
        instead, or None.
    """
    if len(pattern) > MAX_FILTER_LENGTH:
        return f'expected at most {MAX_FILTER_LENGTH} characters, got {len(pattern)}'
    try:
        pattern = posix_to_python(pattern)
    except ValueError as exc:
        return str(exc)
    try:
        re.compile(pattern)
    except (re.error, RecursionError, OverflowError) as exc:
        return f'expected a regular expression, got {pattern!r} ({exc})'
    scan = _scan_filter(pattern)
    if scan.problem is not None:
        return scan.problem
    unbounded = sum(high is None for _, high in scan.quantifiers)
    if unbounded > MAX_FILTER_UNBOUNDED:
        return (
            f'expected at most {MAX_FILTER_UNBOUNDED} unbounded quantifiers (*, +, {{m,}}: '
            f'they backtrack polynomially), got {unbounded} in {pattern!r}: use fewer (e.g. '
            '.*arm.* rather than .*a.*r.*m)'
        )
    if scan.product > MAX_FILTER_CHOICES:
        return (
            f'expected a backtracking estimate of at most {MAX_FILTER_CHOICES} (the product '
            'of the choices of the quantifiers and alternations in sequence), got '
            f'{scan.product} for {pattern!r}: use character classes (e.g. [ab] for (a|b)) and '
            'fewer quantifiers'
        )
    return None


@dataclass
class _FilterScan:
    """What :func:`_scan_filter` read of a pattern."""

    #: ``(low, high)`` of each quantifier in order (``high`` None: unbounded).
    quantifiers: list[tuple[int, int | None]] = field(default_factory=list)
    #: The backtracking estimate (:func:`name_filter_problem`).
    product: int = 1
    #: A backreference, the verbose flag, or a repeated group holding choices, worded.
    problem: str | None = None


def _scan_filter(pattern: str) -> _FilterScan:
    """Read the valid regular expression ``pattern`` (:func:`name_filter_problem`), stopping
    at the first structural problem."""
    scan = _FilterScan()
    groups = [_Group(0)]
    after_group: _Group | None = None  # the group just closed (what a quantifier repeats)
    i = 0
    while i < len(pattern):
        c = pattern[i]
        quantifier = _REPEAT.match(pattern, i) if c == '{' else None
        if quantifier is not None and quantifier.group() == '{}':
            quantifier = None
        if c in '*+?' or quantifier is not None:
            if quantifier is None:
                low, high, end = int(c == '+'), (1 if c == '?' else None), i + 1
            else:
                lo, comma, hi = quantifier.groups()
                low = int(lo or 0)
                high = int(hi) if hi else (None if comma else low)
                end = quantifier.end()
            if pattern[end : end + 1] in ('?', '+'):  # lazy or possessive
                end += 1
            scan.quantifiers.append((low, high))
            choices = UNBOUNDED_CHOICES if high is None else min(high - low + 1, UNBOUNDED_CHOICES)
            scan.product *= choices
            groups[-1].choices |= choices > 1
            if (
                after_group is not None
                and after_group.choices
                and (high is None or high > 1)
                and not _literal_alternation(pattern, after_group)
            ):
                repeated = pattern[after_group.start : end]
                scan.problem = (
                    f'expected no repeated group holding a quantifier or an alternation (it '
                    f'backtracks exponentially), got {repeated!r} at {after_group.start} in '
                    f'{pattern!r}: use a character class, e.g. \\w* for (\\w+)* or (a|\\w)*, or '
                    'literal alternatives none of which starts another, e.g. (ffsim|sat)+'
                )
                return scan
            after_group, i = None, end
            continue
        if pattern.startswith('(?#', i):  # a comment (a quantifier after it repeats the atom
            i = pattern.index(')', i) + 1  # before it)
            continue
        after_group = None
        if c == '\\':
            end = _escape_end(pattern, i)
            if end < 0:
                scan.problem = (
                    f'expected no backreference, got {pattern[i : i + 3]!r} at {i} in {pattern!r}'
                )
                return scan
            i = end
        elif c == '[':
            i = _class_end(pattern, i)
        elif c == '(':
            if pattern.startswith(('(?P=', '(?('), i):
                scan.problem = (
                    f'expected no backreference, got {pattern[i : i + 4]!r} at {i} in {pattern!r}'
                )
                return scan
            opening = _GROUP_OPEN.match(pattern, i)
            flags, end = opening.group(1), opening.end()
            if flags is not None and 'x' in flags:
                scan.problem = (
                    f'expected no verbose flag (x), got {pattern[i:end]!r} at {i} in {pattern!r}'
                )
                return scan
            if opening.group(2) != ')':  # (not the flags of the whole pattern)
                plain = pattern[i:end] in ('(', '(?:') or pattern.startswith('(?P<', i)
                groups.append(_Group(i, inner=end, plain=plain))
            i = end
        elif c == ')':
            group = groups.pop()
            group.stop = i
            scan.product *= group.branches
            group.choices |= group.branches > 1
            groups[-1].choices |= group.choices
            after_group, i = group, i + 1
        else:
            if c == '|':
                groups[-1].branches += 1
            i += 1
    scan.product *= groups[0].branches
    return scan
