"""What the real service's JSON binder refuses that a JSON Schema accepts.

System.Text.Json does not read ``12.0`` into an ``int`` and answers 400, strict mode or
not. The integer fields of a body schema are found once, as a tree of paths, so a request
costs one lookup per integer field present."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from emulator.domain.errors import FieldErrors, field_path

Path = tuple[str | None, ...]
MAX_DEPTH = 12  # schemas nest models a few levels deep; a model that contains itself stops here


def integer_paths(schema: Any, definitions: dict[str, Any]) -> tuple[Path, ...]:
    found: list[Path] = []
    _walk(schema, definitions, (), found, 0)
    return tuple(dict.fromkeys(found))


def _walk(schema: Any, definitions: dict[str, Any], at: Path, found: list[Path], depth: int) -> None:
    if not isinstance(schema, dict) or depth > MAX_DEPTH:
        return
    ref = schema.get("$ref")
    if isinstance(ref, str):
        _walk(definitions.get(ref.rsplit("/", 1)[-1]), definitions, at, found, depth + 1)
        return
    kind = schema.get("type")
    kinds = set(kind) if isinstance(kind, list) else {kind}
    if "integer" in kinds and "number" not in kinds:
        found.append(at)
    for key in ("allOf", "anyOf", "oneOf"):
        for branch in schema.get(key) or ():
            _walk(branch, definitions, at, found, depth + 1)
    properties = schema.get("properties")
    if isinstance(properties, dict):
        for name, sub in properties.items():
            _walk(sub, definitions, (*at, name), found, depth + 1)
    items = schema.get("items")
    if isinstance(items, dict):
        _walk(items, definitions, (*at, None), found, depth + 1)


_LEAF: dict[str | None, Any] = {}  # a path's end in a Tree


Tree = dict[str | None, Any]  # the paths by their first name: each name's subtree, or _LEAF at a path's end


def tree(paths: tuple[Path, ...]) -> Tree:
    """``paths`` as a tree, so a check walks each object once."""
    root: Tree = {}
    for path in paths:
        node = root
        for index, head in enumerate(path):
            if index == len(path) - 1:
                node[head] = _LEAF
            else:
                node = node.setdefault(head, {})
                if node is _LEAF:
                    break
    return root


Check = Callable[[Any], bool]  # whether an integer field of a value holds a float


def checker(paths: tuple[Path, ...]) -> Check | None:
    """The check of :func:`has_fraction` for ``paths``, made once (None: no integer fields)."""
    if not paths:
        return None
    inner = _compiled(tree(paths))
    if () in paths:  # the body itself an integer
        return lambda value: type(value) is float or inner(value)
    return inner


def has_fraction(value: Any, paths: Tree) -> bool:
    """Whether an integer field of ``value`` holds a float."""
    return _compiled(paths)(value)


def _is_float(value: Any) -> bool:
    return type(value) is float


def _compiled(paths: Tree) -> Check:
    """A check of the objects the tree ``paths`` describes: its leaves by name, its
    subtrees for the objects (or arrays of them) below."""
    leaves = tuple(head for head, below in paths.items() if head is not None and below is _LEAF)
    nested = tuple(
        (head, _compiled(below), _items(below))
        for head, below in paths.items()
        if head is not None and below is not _LEAF
    )

    def check(value: Any) -> bool:
        if type(value) is not dict:
            return False
        for head in leaves:
            if type(value.get(head)) is float:
                return True
        for head, inner, items in nested:
            node = value.get(head)
            if type(node) is dict:
                if inner(node):
                    return True
            elif type(node) is list and items is not None and any(items(item) for item in node):
                return True
        return False

    return check


def _items(below: Tree) -> Check | None:
    """The check of each item, where ``below`` describes an array's items (None: it does not)."""
    items = below.get(None)
    if items is None:
        return None
    return _is_float if items is _LEAF else _compiled(items)


def fractions(value: Any, paths: tuple[Path, ...], found: Tree | None = None) -> list[FieldErrors]:
    """A 400 entry for each integer field of ``value`` sent with a fraction."""
    whole = () in paths and type(value) is float  # the body itself an integer
    if not whole and not has_fraction(value, found if found is not None else tree(paths)):
        return []
    problems: list[FieldErrors] = []
    for path in paths:
        _check(value, path, [], problems)
    return problems


def _check(value: Any, path: Path, where: list[Any], problems: list[FieldErrors]) -> None:
    if not path:
        if type(value) is float:
            name = field_path(where) or "body"
            problems.append((name, [f"The JSON value {value!r} could not be converted to an integer ({name})."]))
        return
    head, rest = path[0], path[1:]
    if head is None:
        if isinstance(value, list):
            for index, item in enumerate(value):
                _check(item, rest, [*where, index], problems)
    elif isinstance(value, dict) and head in value:
        _check(value[head], rest, [*where, head], problems)
