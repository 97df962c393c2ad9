"""The Fidelity list: README section and schema extensions generated from the data file,
and generated clients (openapi-python-client) that ignore the extensions."""

from __future__ import annotations

import copy
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

from emulator.catalog.loader import load_catalog
from emulator.contract import fidelity
from emulator.domain.vocabulary import RejectReason
from tests.support.paths import REPO_ROOT

ROOT = REPO_ROOT


def test_docs_page_is_current() -> None:
    readme = fidelity.PAGE.read_text(encoding="utf-8")
    section = fidelity.markdown(fidelity.choices())
    assert readme == fidelity.readme_with_section(readme, section), (
        "docs/reference/fidelity.md is stale: python -m emulator.contract.fidelity --write-docs"
    )


def test_schema_extensions_are_current() -> None:
    items = fidelity.choices()
    for path in fidelity.SCHEMAS:
        document = json.loads(path.read_text(encoding="utf-8"))
        expected = fidelity.annotated(copy.deepcopy(document), items)
        assert document == expected, f"{path}: python -m emulator.contract.fidelity --write-schema"


def test_every_open_point_of_the_issue_is_listed() -> None:
    ids = {item["id"] for item in fidelity.choices()}
    assert ids >= {
        "success-status",
        "failover-mode",
        "reject-reason-codes",
        "error-bodies",
        "tokenize-path",
        "validate-results-path",
        "tools-parameters",
        "capture-ceiling",
        "currency-400",
        "leniency",
    }


def test_currency_reasoning_is_given() -> None:
    [item] = [i for i in fidelity.choices() if i["id"] == "currency-400"]
    assert "Currency enum" in item["why"]


def test_every_settable_choice_names_its_setting() -> None:
    settable = {i["id"]: i.get("setting", "") for i in fidelity.choices()}
    assert "successStatus" in settable["success-status"]
    assert "failover" in settable["failover-mode"]
    assert "strict" in settable["leniency"]


def test_every_emitted_reject_reason_is_documented() -> None:
    readme = "\n".join(p.read_text(encoding="utf-8") for p in sorted((ROOT / "docs").rglob("*.md")))
    emitted = {reason.value for reason in RejectReason}
    emitted |= {g.card_checks.get("nonPositiveAmountReason", "InvalidAmount") for g in load_catalog()}
    assert {"OperationInProgress", "InvalidAmount"} <= emitted
    for reason in emitted:
        assert f"`{reason}`" in readme or f"{reason}," in readme or f"{reason})" in readme, reason


def _generate(document: Any, tmp: Path, name: str) -> dict[str, str]:
    """Every module openapi-python-client writes for ``document``, by relative path."""
    source = tmp / f"{name}.json"
    source.write_text(json.dumps(document), encoding="utf-8")
    config = tmp / "client-config.yaml"
    config.write_text("post_hooks: []\n")  # no formatter run: nothing to fetch, quicker
    target = tmp / name
    script = Path(sys.executable).parent / "openapi-python-client"
    subprocess.run(
        [
            str(script),
            "generate",
            "--path",
            str(source),
            "--output-path",
            str(target),
            "--meta",
            "none",
            "--config",
            str(config),
        ],
        check=True,
        capture_output=True,
        text=True,
        timeout=300,
    )
    files = {str(f.relative_to(target)): f.read_text(encoding="utf-8") for f in sorted(target.rglob("*.py"))}
    assert files
    return files


def test_generated_client_ignores_the_extensions(tmp_path: Path) -> None:
    document = json.loads(fidelity.SCHEMAS[0].read_text(encoding="utf-8"))
    plain = copy.deepcopy(document)
    fidelity._strip(plain)
    assert plain != document
    assert _generate(document, tmp_path, "annotated") == _generate(plain, tmp_path, "plain")


# -- the ledger against the interface document ---------------------------------------------
DOCUMENT = ROOT / "tests" / "data" / "interface-1.0.11.6.md"
_SENTENCE_END = re.compile(r"(?<=[.:])\s+(?=[A-Z`])")


def _squeezed(text: str) -> str:
    return " ".join(text.split())


def _not_shown_points(text: str) -> list[str]:
    """What the document says is not shown: in a table, the row's cells up to the one
    that says so (joined by ` | `); in prose, the sentence that says so."""
    points = []
    for line in text.splitlines():
        if "not shown" not in line:
            continue
        if line.startswith("|"):
            cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
            last = next(i for i, cell in enumerate(cells) if "not shown" in cell)
            points.append(_squeezed(" | ".join(cells[: last + 1])))
            continue
        body = re.sub(r"^\d+\.\s+", "", line.strip())
        points += [_squeezed(s) for s in _SENTENCE_END.split(body) if "not shown" in s]
    return points


def test_the_document_copy_has_the_points_the_ledger_is_checked_against() -> None:
    points = _not_shown_points(DOCUMENT.read_text(encoding="utf-8"))
    assert len(points) == 22
    assert "Webhooks or other outbound events: not shown." in points
    assert any(p.startswith("DELETE `/StringTokens/{token}`") for p in points)


def test_every_spec_quotes_the_document_exactly() -> None:
    document = _squeezed(DOCUMENT.read_text(encoding="utf-8"))
    misquoted = [i["id"] for i in fidelity.choices() if _squeezed(i["spec"]) not in document]
    assert misquoted == []


def test_every_not_shown_point_has_a_ledger_entry() -> None:
    quoted = [_squeezed(i["spec"]) for i in fidelity.choices()]
    points = _not_shown_points(DOCUMENT.read_text(encoding="utf-8"))
    missing = [point for point in points if not any(point in spec for spec in quoted)]
    assert missing == []


def test_the_ledger_check_catches_an_uncovered_point() -> None:
    """The completeness check fails for a document with a point no entry quotes."""
    text = DOCUMENT.read_text(encoding="utf-8") + "\nRefund reasons: not shown.\n"
    quoted = [_squeezed(i["spec"]) for i in fidelity.choices()]
    missing = [p for p in _not_shown_points(text) if not any(p in spec for spec in quoted)]
    assert missing == ["Refund reasons: not shown."]
