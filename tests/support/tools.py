"""Tests that drive an outside tool carry its marker (registered in pyproject.toml). Without
the tool they skip, and the run ends with ONE line naming what was skipped and how to get
it; with ``PAYEMU_REQUIRE_TOOLS=1`` (``.ci/run`` sets it) they fail instead, so CI runs
them all. ``tests/conftest.py`` imports the two hooks."""

from __future__ import annotations

import os
import shutil
from collections import Counter
from functools import cache
from typing import Any

import pytest

REQUIRE_ENV = "PAYEMU_REQUIRE_TOOLS"
PREFIX = "needs a tool:"
# marker: (executables, any one of which will do; how to get it)
TOOLS: dict[str, tuple[tuple[str, ...], str]] = {
    "chromium": (("chromium", "chromium-browser"), "apt-get install chromium"),
    "npm": (("npm",), "apt-get install npm; its tests also fetch from the npm registry"),
    "haproxy": (("haproxy",), "apt-get install haproxy"),
    "docker_compose": (("docker-compose",), "apt-get install docker-compose"),
    "curl": (("curl",), "apt-get install curl"),
    "node": (("node",), "apt-get install nodejs, 18 or later"),
}


@cache
def available(marker: str) -> bool:
    return any(shutil.which(name) for name in TOOLS[marker][0])


def missing_for(item: pytest.Item) -> list[str]:
    return [marker for marker in TOOLS if item.get_closest_marker(marker) and not available(marker)]


def setup(item: pytest.Item) -> None:
    missing = missing_for(item)
    if not missing:
        return
    names = ", ".join(f"{TOOLS[m][0][0]} ({TOOLS[m][1]})" for m in missing)
    if os.environ.get(REQUIRE_ENV) == "1":
        pytest.fail(f"{REQUIRE_ENV}=1 and this test needs what is not on PATH: {names}", pytrace=False)
    pytest.skip(f"{PREFIX} {' '.join(missing)} — {names}")


def summary_line(reasons: list[str]) -> str | None:
    """One line for the end of the run: how many tests skipped for which missing tools."""
    counted: Counter[str] = Counter()
    total = 0
    for reason in reasons:
        if PREFIX in reason:
            total += 1
            counted.update(reason.split(PREFIX, 1)[1].split(" — ", 1)[0].split())
    if not counted:
        return None
    tools = "; ".join(
        f"{TOOLS[m][0][0]} ({TOOLS[m][1]}): {n} test{'s' if n != 1 else ''}" for m, n in sorted(counted.items())
    )
    return (
        f"payemu: {total} test{'s' if total != 1 else ''} skipped, tools not on PATH — {tools}. "
        f".ci/run installs them; {REQUIRE_ENV}=1 makes these skips fail"
    )


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    setup(item)


def pytest_terminal_summary(terminalreporter: Any) -> None:
    reasons = []
    for report in terminalreporter.stats.get("skipped", []):
        longrepr = getattr(report, "longrepr", None)
        if isinstance(longrepr, tuple) and len(longrepr) == 3:
            reasons.append(str(longrepr[2]))
    line = summary_line(reasons)
    if line:
        terminalreporter.write_line(line, yellow=True)
