"""YAML with line numbers for scenario files, and a document's size once aliases expand."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from functools import cache
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import yaml

# -- YAML with line numbers -------------------------------------------------------------


class LineMap(dict[Any, Any]):
    """A mapping that remembers the line of itself and of each key (1-based)."""

    line: int = 0
    lines: dict[Any, int]


class LineSeq(list[Any]):
    """A sequence that remembers the line of itself and of each item (1-based)."""

    line: int = 0
    lines: list[int]


@cache
def line_loader() -> Any:
    """The loader building :class:`LineMap` and :class:`LineSeq` (libyaml's safe loader), made
    when a file is first read: PyYAML is imported then (a start that reads no YAML skips it)."""
    import yaml

    from emulator.domain.safeparse import bound_ints

    class LineLoader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # type: ignore[misc]
        def __init__(self, stream: str) -> None:
            super().__init__(stream)
            self.duplicates: list[tuple[Any, int]] = []

    LineLoader.add_constructor("tag:yaml.org,2002:map", _construct_map)
    LineLoader.add_constructor("tag:yaml.org,2002:seq", _construct_seq)
    bound_ints(LineLoader)
    return LineLoader


def __getattr__(name: str) -> Any:
    if name == "LineLoader":  # the class itself, as ``from emulator.domain.yamllines import LineLoader``
        return line_loader()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _construct_map(loader: Any, node: yaml.MappingNode) -> Iterator[LineMap]:
    data = LineMap()
    data.line = node.start_mark.line + 1
    data.lines = {}
    yield data
    loader.flatten_mapping(node)
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=True)
        try:
            hash(key)
        except TypeError:
            key = str(key)
        if key in data:
            loader.duplicates.append((key, key_node.start_mark.line + 1))
        data[key] = loader.construct_object(value_node, deep=True)
        data.lines[key] = key_node.start_mark.line + 1


def _construct_seq(loader: Any, node: yaml.SequenceNode) -> Iterator[LineSeq]:
    data = LineSeq()
    data.line = node.start_mark.line + 1
    data.lines = [item.start_mark.line + 1 for item in node.value]
    yield data
    data.extend(loader.construct_object(item, deep=True) for item in node.value)


def expanded_size(node: yaml.Node, sizes: dict[int, int]) -> int:
    """How many values ``node`` holds once every alias is expanded, each node counted once."""
    import yaml

    known = sizes.get(id(node))
    if known is not None:
        return known
    sizes[id(node)] = 1
    size = 1
    if isinstance(node, yaml.SequenceNode):
        size += sum(expanded_size(item, sizes) for item in node.value)
    elif isinstance(node, yaml.MappingNode):
        size += sum(expanded_size(key, sizes) + expanded_size(value, sizes) for key, value in node.value)
    sizes[id(node)] = size
    return size


def expanded_chars(node: yaml.Node, sizes: dict[int, int]) -> int:
    """How many characters ``node``'s scalars hold once aliases expand, each node weighed once."""
    import yaml

    known = sizes.get(id(node))
    if known is not None:
        return known
    sizes[id(node)] = 0
    if isinstance(node, yaml.ScalarNode):
        size = len(node.value)
    elif isinstance(node, yaml.SequenceNode):
        size = sum(expanded_chars(item, sizes) for item in node.value)
    elif isinstance(node, yaml.MappingNode):
        size = sum(expanded_chars(key, sizes) + expanded_chars(value, sizes) for key, value in node.value)
    else:
        size = 0
    sizes[id(node)] = size
    return size


def line_of(root: Any, path: Iterable[Any], fallback: int) -> int:
    line, node = fallback, root
    for part in path:
        lines = getattr(node, "lines", None)
        if isinstance(node, LineMap) and part in node:
            line = node.lines.get(part, line)
            node = node[part]
        elif isinstance(node, LineSeq) and isinstance(part, int) and 0 <= part < len(node):
            line = lines[part] if lines else line
            node = node[part]
        else:
            break
    return line
