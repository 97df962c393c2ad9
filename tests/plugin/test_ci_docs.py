"""docs/ci.md tells the fixture's API as the code has it: every public member of
``Payemu``, every filter of ``requests()``/``count()`` and every ``--payemu-*`` option."""

from __future__ import annotations

import inspect
import re

from emulator import testing
from emulator.testing import JOURNAL_FILTERS, Payemu
from tests.support.paths import REPO_ROOT

CI = (REPO_ROOT / "docs" / "ci.md").read_text()


def _section(heading: str) -> str:
    start = CI.index(heading)
    end = CI.find("\n## ", start + len(heading))
    return CI[start : end if end != -1 else None]


def _first_column(table_text: str, header: str) -> list[str]:
    """The names in backticks of a Markdown table's first column, below ``header``."""
    names = []
    for line in table_text[table_text.index(header) :].splitlines()[2:]:
        if not line.startswith("|"):
            break
        names += [re.sub(r"\(.*", "", name) for name in re.findall(r"`([^`]+)`", line.split("|")[1])]
    return names


def _public_members(payemu: Payemu) -> set[str]:
    attributes = {name for name in vars(payemu) if not name.startswith("_")}
    members = {name for name, _ in inspect.getmembers(type(payemu)) if not name.startswith("_")}
    return attributes | members


def test_every_member_of_the_fixture_is_documented(payemu: Payemu) -> None:
    documented = _first_column(_section("## The pytest plugin"), "| member | what it is |")
    assert sorted(documented) == sorted(_public_members(payemu))


def test_the_documented_filters_are_the_helpers() -> None:
    plugin = _section("## The pytest plugin")
    sentence = plugin[plugin.index("The filters of `requests()` and `count()`") :].split("Any other keyword")[0]
    assert tuple(re.findall(r"`(\w+)`", sentence.split(":", 1)[1])) == JOURNAL_FILTERS
    journal = _first_column(_section("## The journal"), "| filter | keeps the requests |")
    assert tuple(journal) == JOURNAL_FILTERS


def test_every_option_is_documented() -> None:
    documented = set(re.findall(r"^\| `(--payemu-[a-z-]+)", _section("## The pytest plugin"), re.M))
    source = inspect.getsource(testing.pytest_addoption)
    assert documented == set(re.findall(r'"(--payemu-[a-z-]+)"', source))
