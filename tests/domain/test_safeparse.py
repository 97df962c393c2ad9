"""emulator.domain.safeparse: YAML too deep is refused with payemu's own message, whichever
libyaml reads it (0.2.6, in PyYAML 6.0.4, stops a run of brackets at 1,000 levels itself)."""

from __future__ import annotations

import pytest
import yaml

from emulator.domain.safeparse import MAX_DEPTH, TooComplex, check_yaml


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
