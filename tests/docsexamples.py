"""The shell examples of README.md and docs/: found, and their shown output matched.

A ```sh block runs as one bash script; a line ``# ...`` after a command is output the
commands must print, in order (``...`` stands for anything). A block preceded by
``<!-- not-run: reason -->`` is listed but not run.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BLOCK = re.compile(r"^```sh\n(.*?)^```$", re.S | re.M)
NOT_RUN = re.compile(r"<!-- not-run: (.+?) -->\s*$")
ADDRESSES = ("127.0.0.1:8080", "localhost:8080")


@dataclass(frozen=True)
class Example:
    path: str  # relative to the repository
    line: int
    script: str
    not_run: str | None  # the reason, for a block marked not-run

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


def examples() -> list[Example]:
    found = []
    for page in pages():
        text = page.read_text(encoding="utf-8")
        for match in BLOCK.finditer(text):
            before = text[: match.start()].rstrip("\n").rsplit("\n", 1)[-1]
            reason = NOT_RUN.search(before)
            line = text.count("\n", 0, match.start()) + 1
            found.append(
                Example(str(page.relative_to(ROOT)), line, match.group(1), reason.group(1) if reason else None)
            )
    return found


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
