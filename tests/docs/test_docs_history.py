"""Docs, code and tests speak to users and maintainers: no words from how the project was
built (development rounds, numbered sessions or sittings, issue numbers, commit hashes).
docs/state.md is left to its own rewrite."""

from __future__ import annotations

import ast
import io
import re
import tokenize
from collections.abc import Iterable, Iterator
from pathlib import Path

from tests.support.paths import REPO_ROOT

ROOT = REPO_ROOT
PLACES = ["docs", "emulator", "tests", "README.md", "CONTRIBUTING.md", "CHANGELOG.md"]
SKIPPED = {"docs/state.md", "tests/docs/test_docs_history.py"}
TEXT = {".md", ".py", ".yaml", ".yml", ".html", ".js", ".css", ".txt", ".lua", ".cfg"}

ORDINALS = (
    "first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth|eleventh|twelfth|"
    "thirteenth|fourteenth|fifteenth|sixteenth|seventeenth|eighteenth|nineteenth|twentieth"
)
WORDS = re.compile(
    r"\bround (?:\d+|one|two|three|four|five)\b"
    r"|\bsittings?\b"
    rf"|\b(?:{ORDINALS}|\d+(?:st|nd|rd|th)) (?:session|sitting)s?\b"
    r"|\bsessions? \d+\b"
    r"|\bissues? #?\d+",
    re.IGNORECASE,
)
# A commit hash in prose: 7 to 40 hex digits with a letter and a digit, standing alone.
HASH = re.compile(r"(?<![\w/#.:-])(?=[0-9a-f]*[a-f])(?=[0-9a-f]*\d)[0-9a-f]{7,40}(?![\w/:-])")


def files() -> Iterator[Path]:
    for place in PLACES:
        path = ROOT / place
        found = [path] if path.is_file() else sorted(path.rglob("*"))
        for file in found:
            rel = file.relative_to(ROOT).as_posix()
            if file.is_file() and file.suffix in TEXT and rel not in SKIPPED:
                yield file


def prose_of_python(source: str) -> Iterator[tuple[int, str]]:
    """Comments and docstrings of a module, with their first line numbers."""
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT:
            yield token.start[0], token.string
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                value = body[0].value.value
                if isinstance(value, str):
                    for offset, line in enumerate(value.splitlines()):
                        yield body[0].lineno + offset, line


def offences() -> list[str]:
    found = []
    for file in files():
        rel = file.relative_to(ROOT).as_posix()
        text = file.read_text(encoding="utf-8")
        lines = list(enumerate(text.splitlines(), 1))
        for number, line in lines:
            match = WORDS.search(line)
            if match:
                found.append(f"{rel}:{number}: {match.group(0)!r}")
        prose: Iterable[tuple[int, str]] = []
        if file.suffix == ".py" and HASH.search(text):  # a hash in its prose is in its text (tokenizing costs)
            prose = prose_of_python(text)
        elif file.suffix == ".md":
            prose = lines
        for number, line in prose:
            match = HASH.search(line)
            if match:
                found.append(f"{rel}:{number}: commit hash {match.group(0)!r}?")
    return found


def test_no_development_history_words() -> None:
    found = offences()
    assert not found, "history words (say what is, not how it came to be):\n" + "\n".join(found)


def test_the_patterns_catch_what_they_are_for() -> None:
    # each phrase is put together here, so this file does not itself read as history
    caught = [
        "as round" + " 2 had tried",
        "round" + " three's last figures",
        "the twelfth " + "session found",
        "in a numbered " + "sitting",
        "issue" + " 30's marks",
        "see " + "issue #12",
        "session" + " 3: orjson",
    ]
    assert [line for line in caught if not WORDS.search(line)] == []
    passed = ["around 3 ms", "a session's token", "rounds of 10 s"]
    assert [line for line in passed if WORDS.search(line)] == []
    assert HASH.search("the tree of d466e47 gave")
    assert not HASH.search("card 4242424242424242, page /pay/ab12cd34ef, id ab12cd34ef-1")
