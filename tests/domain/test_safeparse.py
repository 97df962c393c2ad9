"""emulator.domain.safeparse: YAML too deep is refused with payemu's own message, whichever
libyaml reads it (0.2.6, in PyYAML 6.0.4, stops a run of brackets at 1,000 levels itself)."""

from __future__ import annotations

import tracemalloc

import pytest
import yaml

from emulator.domain.safeparse import MAX_DEPTH, TooComplex, check_json_depth, check_yaml


@pytest.mark.parametrize("levels", [MAX_DEPTH + 1, 999, 1_001, 30_000])
def test_a_run_of_brackets_past_the_limit_is_refused_as_too_deep(levels: int) -> None:
    with pytest.raises(TooComplex) as refused:
        check_yaml("[" * levels + "]" * levels)
    assert str(refused.value) == f"line 1: the YAML is nested more than {MAX_DEPTH} levels deep"


def test_the_limit_itself_is_allowed() -> None:
    check_yaml("[" * MAX_DEPTH + "]" * MAX_DEPTH)


def test_block_nesting_is_refused_at_the_line_that_passes_the_limit() -> None:
    text = "a:\n" + "".join("  " * level + "b:\n" for level in range(1, MAX_DEPTH + 5))
    with pytest.raises(TooComplex) as refused:
        check_yaml(text)
    assert refused.value.line == MAX_DEPTH + 1
    assert refused.value.reason == f"the YAML is nested more than {MAX_DEPTH} levels deep"


def test_other_syntax_errors_stay_yaml_errors() -> None:
    with pytest.raises(yaml.YAMLError) as failed:
        check_yaml("a: [1, 2\nb: }")
    assert not isinstance(failed.value, TooComplex)


@pytest.mark.parametrize("string", [b"d" * 950_000, b"\\n" * 475_000, b"a\\n" * 316_000])
def test_checking_json_depth_holds_no_memory_per_character_of_a_string(string: bytes) -> None:
    # a body of more than 64 brackets is scanned token by token; a string is one token. The
    # scan once kept about 120 bytes per character of a string (115 MiB for 0.95 MB)
    raw = b'{"s": "' + string + b'", "a": ' + b"[" * 40 + b"]" * 40 + b', "b": ' + b"[{}]" * 40 + b"}"
    tracemalloc.start()
    try:
        check_json_depth(raw)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < len(raw) + 64 * 1024  # the string's one copy (the match's group) at most


def test_a_deep_body_behind_a_long_string_is_still_refused() -> None:
    raw = b'{"s": "' + b'x\\"' * 1000 + b'", "a": ' + b"[" * (MAX_DEPTH + 1) + b"]" * (MAX_DEPTH + 1) + b"}"
    with pytest.raises(TooComplex, match="nested more than"):
        check_json_depth(raw)
