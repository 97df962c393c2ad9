"""tests/support/tools.py: a test needing a missing tool skips with one summary line, or fails
under PAYEMU_REQUIRE_TOOLS=1."""

from __future__ import annotations

import tomllib

import pytest

from tests.support import tools
from tests.support.paths import REPO_ROOT
from tests.support.plugins_off import BLOCKED

ROOT = REPO_ROOT
pytest_plugins = ["pytester"]

TEST = """
import pytest

@pytest.mark.chromium
def test_browser():
    pass

@pytest.mark.haproxy
@pytest.mark.chromium
def test_both():
    pass

def test_plain():
    pass
"""
CONFTEST = """
import shutil
from tests.support import tools
from tests.support.tools import pytest_runtest_setup, pytest_terminal_summary

tools.available.cache_clear()
real = shutil.which
gone = ("chromium", "chromium-browser", "haproxy")
shutil.which = lambda name, *a, **k: None if name in gone else real(name, *a, **k)
"""


def test_every_marker_is_registered() -> None:
    registered = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]["markers"]
    assert sorted(line.split(":")[0] for line in registered) == sorted(tools.TOOLS)


def _run(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, require: bool) -> pytest.RunResult:
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    if require:
        monkeypatch.setenv(tools.REQUIRE_ENV, "1")
    else:
        monkeypatch.delenv(tools.REQUIRE_ENV, raising=False)
    pytester.makeconftest(CONFTEST)
    pytester.makeini("[pytest]\nmarkers =\n    chromium: x\n    haproxy: x\n")
    pytester.makepyfile(test_x=TEST)
    return pytester.runpytest_subprocess("-q", "-p", "no:cacheprovider", *BLOCKED)


def test_missing_tools_skip_with_one_summary_line(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    result = _run(pytester, monkeypatch, require=False)
    result.assert_outcomes(passed=1, skipped=2)
    lines = [line for line in result.outlines if line.startswith("payemu: ")]
    assert lines == [
        "payemu: 2 tests skipped, tools not on PATH — chromium (apt-get install chromium): 2 tests; "
        "haproxy (apt-get install haproxy): 1 test. .ci/run installs them; "
        "PAYEMU_REQUIRE_TOOLS=1 makes these skips fail"
    ]


def test_require_switch_turns_the_skips_into_failures(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    result = _run(pytester, monkeypatch, require=True)
    result.assert_outcomes(passed=1, errors=2)
    assert "PAYEMU_REQUIRE_TOOLS=1 and this test needs what is not on PATH: chromium" in result.stdout.str()


def test_no_line_when_nothing_was_skipped_for_a_tool() -> None:
    assert tools.summary_line(["some other reason"]) is None
