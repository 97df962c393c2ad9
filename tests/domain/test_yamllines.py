"""YAML with line numbers, and the size of a document once its aliases are expanded."""

from __future__ import annotations

from emulator.domain.yamllines import LineLoader, expanded_chars, expanded_size


def _node(text: str):  # type: ignore[no-untyped-def]
    loader = LineLoader(text)
    try:
        return loader.get_single_node()
    finally:
        loader.dispose()


def test_expanded_chars_count_every_alias_of_a_long_string() -> None:
    aliases = ", ".join(["*s"] * 50)
    node = _node(f"long: &s '{'x' * 1000}'\nmany: [{aliases}]\n")
    assert expanded_chars(node, {}) == len("long") + len("many") + 1000 * 51


def test_expanded_chars_of_nested_aliases_multiply() -> None:
    node = _node("a: &a [xxxxxxxxxx, xxxxxxxxxx]\nb: &b [*a, *a, *a]\nc: [*b, *b, *b, *b]\n")
    assert expanded_chars(node, {}) == 3 + 20 * (1 + 3 + 12)
    assert expanded_size(node, {}) > expanded_chars(node, {}) // 10
