"""The suite's own scheduling: every module named to run first exists (a renamed module
would silently lose its place)."""

from __future__ import annotations

from tests.conftest import LONGEST_FIRST
from tests.support.paths import REPO_ROOT


def test_every_module_named_to_run_first_exists() -> None:
    missing = [name for name in LONGEST_FIRST if not (REPO_ROOT / name).is_file()]
    assert missing == []
    assert len(set(LONGEST_FIRST)) == len(LONGEST_FIRST)
