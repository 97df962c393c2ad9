"""A module docstring says what the module is for in at most ten lines; detail belongs next
to the code it explains or in the docs."""

from __future__ import annotations

import ast

from tests.support.paths import REPO_ROOT

ROOT = REPO_ROOT
MOST_LINES = 10


def module_docstring_lines() -> dict[str, int]:
    lines = {}
    for path in sorted((ROOT / "emulator").rglob("*.py")):
        doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8")), clean=False)
        if doc is not None:
            lines[path.relative_to(ROOT).as_posix()] = len(doc.strip("\n").splitlines())
    return lines


def test_no_module_docstring_passes_ten_lines() -> None:
    long = {name: n for name, n in module_docstring_lines().items() if n > MOST_LINES}
    assert long == {}
