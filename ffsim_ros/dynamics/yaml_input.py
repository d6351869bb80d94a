"""Reading the package's YAML inputs (model, capture scenario, campaign, capture files) strictly:
``yaml.safe_load`` with the few things a hostile or careless file can do to it turned into
clear errors (no ROS, no other package module imported).

- **duplicated keys** (``runs: 2`` then ``runs: 5000000``): PyYAML keeps the last one
  silently; here they are an error naming the key and its line;
- **alias bombs**: a few hundred bytes of nested aliases (``&a [*b, *b, ...]``) load into a
  small shared structure, but any code that walks it (``str()``, ``np.asarray``, a deep copy)
  expands it to billions of values; the loaded document is walked once, counting every value
  with its multiplicity, and refused beyond :data:`MAX_VALUES`;
- **deep nesting** (a ``RecursionError`` inside the parser or the walk): refused beyond
  :data:`MAX_DEPTH` levels.
"""

from __future__ import annotations

from typing import Any

import yaml

#: Most values (scalars, sequences and mappings, aliases counted each time they are used) a
#: document may hold.
MAX_VALUES = 1_000_000
#: Most nesting levels of sequences and mappings.
MAX_DEPTH = 100


class YamlInputError(ValueError):
    """A YAML input that cannot be used: malformed, a duplicated key, too large or too deep."""


class _StrictLoader(yaml.SafeLoader):
    """``SafeLoader`` that refuses a mapping key given twice."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict:
        seen: dict[object, int] = {}
        for key_node, _ in node.value:
            if key_node.tag == 'tag:yaml.org,2002:merge':  # '<<': merged keys may be overridden
                continue
            key = self.construct_object(key_node, deep=True)
            try:
                line = seen.get(key)
            except TypeError:  # an unhashable key: refused by PyYAML itself below
                continue
            if line is not None:
                raise yaml.constructor.ConstructorError(
                    None,
                    None,
                    f'duplicated key {key!r} (first on line {line + 1})',
                    key_node.start_mark,
                )
            seen[key] = key_node.start_mark.line
        return super().construct_mapping(node, deep=deep)


def _check_size(data: Any, where: str) -> None:
    """Refuse ``data`` with more than :data:`MAX_VALUES` values (with multiplicity) or more
    than :data:`MAX_DEPTH` levels; iterative, stops as soon as a limit is passed."""
    count = 0
    stack: list[tuple[Any, int]] = [(data, 0)]
    while stack:
        item, depth = stack.pop()
        count += 1
        if count > MAX_VALUES:
            raise YamlInputError(
                f'{where}: expected at most {MAX_VALUES} values, got more (aliases expand to '
                'that many)'
            )
        if isinstance(item, dict):
            children = [v for kv in item.items() for v in kv]
        elif isinstance(item, list):
            children = item
        else:
            continue
        if depth >= MAX_DEPTH:
            raise YamlInputError(f'{where}: expected at most {MAX_DEPTH} nesting levels, got more')
        stack.extend((child, depth + 1) for child in children)


def load_yaml(text: str, where: str) -> Any:
    """The document in ``text`` (``yaml.safe_load`` semantics: None for an empty one).

    Parameters
    ----------
    text : str
        The YAML text.
    where : str
        Names the input in messages (e.g. ``'scenario file /x/y.yaml'``).

    Returns
    -------
    object
        The document (None for an empty one).

    Raises
    ------
    YamlInputError
        Malformed YAML, a duplicated key (named, with its line), more than
        :data:`MAX_VALUES` values or :data:`MAX_DEPTH` levels.
    """
    try:
        data = yaml.load(text, Loader=_StrictLoader)  # noqa: S506 (a SafeLoader subclass)
    except yaml.YAMLError as exc:
        raise YamlInputError(f'{where}: malformed YAML: {exc}') from None
    except RecursionError:
        raise YamlInputError(
            f'{where}: expected at most {MAX_DEPTH} nesting levels, got more'
        ) from None
    _check_size(data, where)
    return data
