"""Data files are read and checked in one place, with file and field in every problem."""

from __future__ import annotations

import datetime
import json
import os
import re
from pathlib import Path

import pytest

from emulator.domain import datafiles
from emulator.domain.datafiles import ParseCache, load_checked, parse_yaml

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


def test_a_cached_parse_is_used_while_the_file_is_unchanged(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "data.yaml"
    path.write_text("items: [1, 2, 3]\n")
    first = ParseCache("test", tmp_path / "cache")
    assert load_checked(path, SCHEMA, "test table", "data", DataError, cache=first) == {"items": [1, 2, 3]}
    first.save()
    assert (tmp_path / "cache" / "test.json").is_file()

    def no_parse(text: str) -> None:
        raise AssertionError("parsed again")

    monkeypatch.setattr(datafiles, "parse_yaml", no_parse)
    again = ParseCache("test", tmp_path / "cache")  # as in the next run
    assert load_checked(path, SCHEMA, "test table", "data", DataError, cache=again) == {"items": [1, 2, 3]}
    path.write_text("items: [4, 5]\n")  # changed: read afresh
    os.utime(path, ns=(1, 1))
    monkeypatch.undo()
    assert load_checked(path, SCHEMA, "test table", "data", DataError, cache=again) == {"items": [4, 5]}


def test_a_cached_value_is_checked_again_and_a_foreign_cache_is_ignored(tmp_path: Path) -> None:
    path = tmp_path / "data.yaml"
    path.write_text("items: [1]\n")
    status = path.stat()
    cache = tmp_path / "cache"
    cache.mkdir()
    entry = {str(path): [status.st_mtime_ns, status.st_size, {"items": ["not a number"]}]}
    (cache / "test.json").write_text(json.dumps(entry))
    assert load_checked(path, SCHEMA, "test table", "data", DataError, cache=ParseCache("test", cache)) == {
        "items": [1]
    }
    (cache / "test.json").write_text("not json {")
    assert load_checked(path, SCHEMA, "test table", "data", DataError, cache=ParseCache("test", cache)) == {
        "items": [1]
    }
    big = cache / "big.json"
    big.write_text(" " * (datafiles.CACHE_MAX_BYTES + 1))
    assert ParseCache("big", cache).get(path, (status.st_mtime_ns, status.st_size)) is None


def test_only_plain_json_values_are_kept(tmp_path: Path) -> None:
    cache = ParseCache("test", tmp_path)
    cache.put(tmp_path / "a.yaml", (1, 1), {1: "an integer key"})
    cache.put(tmp_path / "b.yaml", (1, 1), {"when": datetime.date(2030, 1, 1)})
    cache.put(tmp_path / "c.yaml", (1, 1), {"ok": [1, 2.5, None, True, "x"]})
    assert cache.get(tmp_path / "a.yaml", (1, 1)) is None
    assert cache.get(tmp_path / "b.yaml", (1, 1)) is None
    assert cache.get(tmp_path / "c.yaml", (1, 1)) == {"ok": [1, 2.5, None, True, "x"]}


def test_the_cache_forgets_files_that_are_gone(tmp_path: Path) -> None:
    kept, gone = tmp_path / "kept.yaml", tmp_path / "gone.yaml"
    kept.write_text("items: [1]\n")
    cache = ParseCache("test", tmp_path / "cache")
    cache.put(kept, (1, 1), {"items": [1]})
    cache.put(gone, (1, 1), {"items": [2]})
    cache.save()
    again = ParseCache("test", tmp_path / "cache")
    assert again.get(kept, (1, 1)) == {"items": [1]}
    assert again.get(gone, (1, 1)) is None
