"""The README's commands are the ones CI and newcomers actually run."""

from __future__ import annotations

import re
import sys
from pathlib import Path

from tests.support.docsexamples import examples, heading_of, run_python
from tests.support.paths import REPO_ROOT

ROOT = REPO_ROOT
README = (ROOT / "README.md").read_text()


def _commands() -> list[str]:
    return re.findall(r"```sh\n(python3 -m venv[^\n]*)\n```", README)


def test_readme_opens_with_two_commands() -> None:
    start, test = _commands()[:2]
    assert start.endswith("pip install -e . && payemu serve")
    assert test.endswith("pip install -e '.[test]' && pytest -n auto")


def test_ci_runs_the_readme_test_command_exactly() -> None:
    ci = (ROOT / ".ci" / "run").read_text().strip().splitlines()
    assert ci[-1] == _commands()[1]


def test_readme_is_short_and_links_into_the_docs() -> None:
    assert len(README.splitlines()) <= 150
    links = re.findall(r"\]\((docs/[^)#]+)", README)
    assert len(links) >= 15
    for link in links:
        assert (ROOT / link).is_file(), link


def test_readme_states_the_optional_tools_and_the_card_form_port() -> None:
    assert "## Optional tools" in README
    for tool in ("Chromium", "npm", "HAProxy", "docker-compose"):
        assert tool in README
    assert "localhost:4200" in README


def test_the_in_ci_example_passes_verbatim_in_a_fresh_project(tmp_path: Path) -> None:
    """README's "In CI" block, copied as it stands into a project of its own and run with
    pytest: the plugin comes from the installed payemu, nothing from this checkout."""
    [example] = [e for e in examples("python") if e.path == "README.md" and heading_of(e) == "In CI"]
    done = run_python(example, tmp_path, sys.executable)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert re.search(r"\b1 passed\b", done.stdout), done.stdout
