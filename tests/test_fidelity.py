"""The Fidelity list: README section and schema extensions generated from the data file,
and generated clients that ignore the extensions."""

from __future__ import annotations

import copy
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

from emulator import fidelity

ROOT = Path(__file__).resolve().parents[1]


def test_readme_section_is_current() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = fidelity.markdown(fidelity.choices())
    assert readme == fidelity.readme_with_section(readme, section), (
        "README's Fidelity section is stale: python -m emulator.fidelity --write-readme"
    )


def test_schema_extensions_are_current() -> None:
    items = fidelity.choices()
    for path in fidelity.SCHEMAS:
        document = json.loads(path.read_text(encoding="utf-8"))
        expected = fidelity.annotated(copy.deepcopy(document), items)
        assert document == expected, f"{path}: python -m emulator.fidelity --write-schema"


def test_every_open_point_of_the_issue_is_listed() -> None:
    ids = {item["id"] for item in fidelity.choices()}
    assert ids >= {"success-status", "failover-mode", "reject-reason-codes", "error-bodies", "tokenize-path",
                   "validate-results-path", "tools-parameters", "capture-ceiling", "currency-400", "leniency"}


def test_currency_reasoning_is_given() -> None:
    [item] = [i for i in fidelity.choices() if i["id"] == "currency-400"]
    assert "Currency enum" in item["why"]


def test_every_settable_choice_names_its_setting() -> None:
    settable = {i["id"]: i.get("setting", "") for i in fidelity.choices()}
    assert "successStatus" in settable["success-status"]
    assert "failover" in settable["failover-mode"]
    assert "strict" in settable["leniency"]


def test_every_emitted_reject_reason_is_documented() -> None:
    from emulator import ledger
    from emulator.gateways.catalog import load_catalog

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    code = (ROOT / "emulator" / "ledger.py").read_text(encoding="utf-8")
    emitted = set(re.findall(r'Refusal\(\s*"([A-Za-z]+)"', code))
    emitted |= {g.card_checks.get("nonPositiveAmountReason", "InvalidAmount") for g in load_catalog()}
    assert ledger is not None and "OperationInProgress" in emitted
    for reason in emitted:
        assert f"`{reason}`" in readme or f"{reason}," in readme or f"{reason})" in readme, reason


def _generate(document: Any, tmp: Path, name: str) -> str:
    """Every module datamodel-code-generator writes for ``document`` (the schema names
    hold dots, so it writes a package), concatenated in name order."""
    source = tmp / f"{name}.json"
    source.write_text(json.dumps(document), encoding="utf-8")
    target = tmp / name
    subprocess.run(
        [sys.executable, "-m", "datamodel_code_generator", "--input", str(source), "--input-file-type", "openapi",
         "--output", str(target), "--disable-timestamp", "--formatters", "isort"],
        check=True, capture_output=True, timeout=300,
    )
    files = sorted(target.rglob("*.py"))
    assert files
    return "\n".join(f"# {f.relative_to(target)}\n" + f.read_text(encoding="utf-8").replace(f"{name}.json", "SOURCE")
                     for f in files)


def test_generated_client_ignores_the_extensions(tmp_path: Path) -> None:
    document = json.loads(fidelity.SCHEMAS[0].read_text(encoding="utf-8"))
    plain = copy.deepcopy(document)
    fidelity._strip(plain)
    assert plain != document
    assert _generate(document, tmp_path, "annotated") == _generate(plain, tmp_path, "plain")
