"""Data files are read and checked in one place, with file and field in every problem."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from emulator.domain.datafiles import load_checked, parse_yaml

SCHEMA = {
    "type": "object",
    "additionalProperties": False,
    "properties": {"items": {"type": "array", "items": {"type": "integer"}}},
}


class DataError(ValueError):
    pass


def test_parse_yaml() -> None:
    assert parse_yaml("a: [1, 2]\nb: {c: x}\n") == {"a": [1, 2], "b": {"c": "x"}}


def test_good_file(tmp_path: Path) -> None:
    path = tmp_path / "data.yaml"
    path.write_text("items: [1, 2, 3]\n")
    assert load_checked(path, SCHEMA, "test table", "data", DataError) == {"items": [1, 2, 3]}


def test_every_problem_names_file_and_field(tmp_path: Path) -> None:
    path = tmp_path / "data.yaml"
    path.write_text("items: [1, two]\ncolour: red\n")
    with pytest.raises(DataError) as caught:
        load_checked(path, SCHEMA, "test table", "data", DataError, label=lambda data, parts: "here")
    lines = str(caught.value).splitlines()
    assert f"{path}:1: here: items[1]: 'two' is not of type 'integer'" in lines  # file:line, as scenario files
    assert any(line.startswith(f"{path}:2: here: data: unknown key 'colour' (allowed: ") for line in lines)


@pytest.mark.parametrize("text", ["items: [1,\n", "\tbad: tab\n"])
def test_unreadable_file(tmp_path: Path, text: str) -> None:
    path = tmp_path / "data.yaml"
    path.write_text(text)
    expected = rf"^{re.escape(str(path))}:\d+: cannot read the test table: not valid YAML: "
    with pytest.raises(DataError, match=expected) as caught:
        load_checked(path, SCHEMA, "test table", "data", DataError)
    assert len(str(caught.value).splitlines()) == 1


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="cannot read the test table"):
        load_checked(tmp_path / "absent.yaml", SCHEMA, "test table", "data", DataError)
