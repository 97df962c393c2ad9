"""The README's commands are the ones CI and newcomers actually run."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()


def _commands() -> list[str]:
    return re.findall(r"```sh\n(python3 -m venv[^\n]*)\n```", README)


def test_readme_opens_with_two_commands() -> None:
    start, test = _commands()[:2]
    assert start.endswith("pip install -e . && payemu serve")
    assert test.endswith("pip install -e '.[test]' && pytest")


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
