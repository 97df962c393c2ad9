"""The code blocks of README.md and docs/: found, and how each runs.

A ```sh block runs as one bash script; a line ``# ...`` after a command is output the
commands must print, in order (``...`` stands for anything). A ```python block runs in a
temporary project (under pytest when it holds tests, else as a script whose ``main`` is
called); a ```yaml block is loaded as the config file or scenario file it shows. Any
other language must carry ``<!-- not-run: reason -->`` just before it; blocks without a
language, or ```text, show output and are not programs.
"""

from __future__ import annotations

import os
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

from tests.support.paths import REPO_ROOT
from tests.support.plugins_off import BLOCKED

ROOT = REPO_ROOT
ANY_BLOCK = re.compile(r"^```(\w+)\n(.*?)^```$", re.S | re.M)
RUNNABLE = ("sh", "python", "yaml")  # what the tests run; other languages need a not-run marker
OUTPUT = ("text",)  # shown output, not a program
NOT_RUN = re.compile(r"<!-- not-run: (.+?) -->\s*$")
ADDRESSES = ("127.0.0.1:8080", "localhost:8080")


@dataclass(frozen=True)
class Example:
    path: str  # relative to the repository
    line: int
    script: str
    not_run: str | None  # the reason, for a block marked not-run
    language: str = "sh"

    @property
    def id(self) -> str:
        return f"{self.path}:{self.line}"

    def expected(self) -> list[str]:
        """The output lines shown under commands (``# ...`` after the first command)."""
        shown, seen_command = [], False
        for line in self.script.splitlines():
            if line.startswith("# ") and seen_command:
                shown.append(line[2:])
            elif line.strip() and not line.startswith("#"):
                seen_command = True
        return shown


def pages() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def examples(language: str = "sh") -> list[Example]:
    """The blocks of ``language`` (``"*"``: every block with a language but ``text``)."""
    found = []
    for page in pages():
        text = page.read_text(encoding="utf-8")
        for match in ANY_BLOCK.finditer(text):
            kind = match.group(1)
            if kind in OUTPUT or (language != "*" and kind != language):
                continue
            before = text[: match.start()].rstrip("\n").rsplit("\n", 1)[-1]
            reason = NOT_RUN.search(before)
            line = text.count("\n", 0, match.start()) + 1
            path = str(page.relative_to(ROOT))
            found.append(Example(path, line, match.group(2), reason.group(1) if reason else None, kind))
    return found


def heading_of(example: Example) -> str:
    """The markdown heading the block stands under (``""`` before the first)."""
    heading, fenced = "", False
    for line in (ROOT / example.path).read_text(encoding="utf-8").splitlines()[: example.line - 1]:
        if line.startswith("```"):
            fenced = not fenced
        elif line.startswith("#") and not fenced:
            heading = line.lstrip("#").strip()
    return heading


def pattern(shown: str) -> re.Pattern[str]:
    return re.compile(".*".join(re.escape(part) for part in shown.split("...")))


def unmatched(shown: list[str], output: str) -> list[str]:
    """The shown lines the output lacks (each must match a later line than the previous)."""
    lines = output.replace("\r", "").splitlines()
    position, missing = 0, []
    for expected in shown:
        wanted = pattern(expected)
        for index in range(position, len(lines)):
            if wanted.fullmatch(lines[index]):
                position = index + 1
                break
        else:
            missing.append(expected)
    return missing


def localised(script: str, base: str) -> str:
    for address in ADDRESSES:
        script = script.replace(f"http://{address}", base)
    return script


def run_python(example: Example, directory: Path, python: str) -> subprocess.CompletedProcess[str]:
    """Run a Python block in ``directory`` (a fresh project) with the interpreter ``python``:
    under pytest when it holds a test, else as a script whose ``main()`` (if any) is called
    (and awaited when it is a coroutine function)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PAYEMU_", "PYTEST_")) and k != "PYTHONPATH"}
    if re.search(r"^def test_", example.script, re.M):
        (directory / "test_example.py").write_text(example.script)
        command = [python, "-m", "pytest", "-q", "-p", "no:cacheprovider", *BLOCKED, "test_example.py"]
    else:
        (directory / "example.py").write_text(example.script)
        command = [python, "-c", CALL_MAIN]
    return subprocess.run(command, cwd=directory, env=env, capture_output=True, text=True, timeout=120)


CALL_MAIN = """\
import asyncio, inspect, example
main = getattr(example, "main", None)
if main is not None:
    asyncio.run(main()) if inspect.iscoroutinefunction(main) else main()
"""
