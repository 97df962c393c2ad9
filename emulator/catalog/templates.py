"""Gateway answer templates, compiled once.

A template is any JSON value whose strings may hold ``{placeholder}``s; :func:`compile_template`
turns it into a :class:`Template` (small functions and the placeholder names it reads), so an
attempt computes only the values its gateway uses. A string that is exactly one placeholder
takes the value with its type; inside text null is empty and a boolean ``true``/``false``; an
unknown placeholder stays as written. Values known when the template is compiled (its
``constants``) are put in then, so filling it reads only the rest.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from operator import itemgetter
from typing import Any

from emulator.catalog.identity_memo import IdentityMemo

PLACEHOLDER = re.compile(r"\{([A-Za-z][A-Za-z0-9]*)\}")
Values = Mapping[str, object]
Fill = Callable[[Values], Any]


class Template:
    """A compiled template: ``fill(values)`` builds the answer; ``names`` are the
    placeholders it reads (``values`` must hold each of them)."""

    __slots__ = ("fill", "names")

    def __init__(self, fill: Fill, names: frozenset[str]) -> None:
        self.fill = fill
        self.names = names


def compile_template(template: Any, known: Iterable[str], constants: Values | None = None) -> Template:
    """Compile ``template``; placeholders outside ``known`` stay as written, those in
    ``constants`` (a part of ``known``) take their value now and are not among its ``names``."""
    names: set[str] = set()
    fill = _compile(template, _Known(known, constants or {}), names)
    return Template(fill, frozenset(names))


class _Known:
    """The placeholders a template may name, and those of them whose value is already known."""

    __slots__ = ("constants", "names")

    def __init__(self, names: Iterable[str], constants: Values) -> None:
        self.names = frozenset(names)
        self.constants = constants


def _text(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _part(template: Any, known: _Known, names: set[str]) -> tuple[int, Any]:
    """How a value is filled: ``(0, constant)``, ``(1, name)`` (a string that is exactly
    one known placeholder) or ``(2, fill)`` (anything else, compiled)."""
    if isinstance(template, (dict, list)):
        return 2, _compile(template, known, names)
    if not isinstance(template, str) or "{" not in template:
        return 0, template
    whole = PLACEHOLDER.fullmatch(template)
    if whole and whole.group(1) in known.names:
        name = whole.group(1)
        if name in known.constants:
            return 0, known.constants[name]
        names.add(name)
        return 1, name
    text = _compile_text(template, known, names)
    return (0, text) if isinstance(text, str) else (2, text)


def _compile(template: Any, known: _Known, names: set[str]) -> Fill:
    if isinstance(template, dict):
        # each key's value: a constant (0), a whole placeholder (1) or a fill of its own (2):
        # a copy of the constants with every key in its place, the placeholders' values put
        # in at once (operator.itemgetter: no Python loop), then the rest
        items = [(key, *_part(item, known, names)) for key, item in template.items()]
        base = {key: part if kind == 0 else None for key, kind, part in items}
        named = [(key, part) for key, kind, part in items if kind == 1]
        filled = [(key, part) for key, kind, part in items if kind == 2]
        return _dict_fill(base, tuple(key for key, _ in named), tuple(name for _, name in named), filled)
    if isinstance(template, list):
        parts = [_compile(item, known, names) for item in template]
        return lambda values: [fill(values) for fill in parts]
    kind, part = _part(template, known, names)
    if kind == 0:
        return lambda values: part
    if kind == 1:
        return lambda values: values[part]
    fill: Fill = part
    return fill


def _dict_fill(
    base: dict[str, Any], keys: tuple[str, ...], names: tuple[str, ...], filled: list[tuple[str, Fill]]
) -> Fill:
    """The fill of a dict template (see :func:`_compile`)."""
    if len(names) > 1:
        get = itemgetter(*names)

        def fill(values: Values) -> dict[str, Any]:
            out = base.copy()
            out.update(zip(keys, get(values), strict=True))
            for key, part in filled:
                out[key] = part(values)
            return out

        return fill
    single = keys[0] if keys else None

    def fill_one(values: Values) -> dict[str, Any]:
        out = base.copy()
        if single is not None:
            out[single] = values[names[0]]
        for key, part in filled:
            out[key] = part(values)
        return out

    return fill_one


_COMPILED: IdentityMemo[Template] = IdentityMemo()


def compiled(template: Any, known: frozenset[str]) -> Template:
    """``compile_template`` remembered per template object (catalog templates live as long
    as their catalog)."""
    return _COMPILED.get((id(template), known), template, compile_template, template, known)


def render(template: Any, values: Values) -> Any:
    """Fill ``template`` with ``values`` at once (placeholders not in ``values`` stay)."""
    return compile_template(template, values.keys()).fill(values)


def _compile_text(template: str, known: _Known, names: set[str]) -> Fill | str:
    """A string with placeholders among its text: its fill, or the text itself when every
    placeholder in it is a constant (or none is known)."""
    pieces: list[tuple[bool, str]] = []  # (is a placeholder, text or name)
    position = 0
    constants = known.constants
    for match in PLACEHOLDER.finditer(template):
        name = match.group(1)
        if name not in known.names:
            continue
        pieces.append((False, template[position : match.start()]))
        if name in constants:
            pieces.append((False, _text(constants[name])))
        else:
            pieces.append((True, name))
            names.add(name)
        position = match.end()
    pieces.append((False, template[position:]))
    if not any(named for named, _ in pieces):
        return "".join(text for _, text in pieces)
    pieces = [(named, text) for named, text in pieces if named or text]

    def fill(values: Values) -> str:
        return "".join(_text(values[text]) if named else text for named, text in pieces)

    return fill
