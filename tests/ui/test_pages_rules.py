"""Scenario rules per file, as when → then text (emulator/ui/rules.py)."""

from __future__ import annotations

from pathlib import Path

from emulator.domain.datafiles import data_path
from emulator.scenarios.loader import parse_rules
from emulator.ui import rules

USER_RULES = """
scenarios:
  - name: decline-big
    when: {amount: {min: 500}, operation: [Charge, PreAuth], cardNumber: "4000000000000002"}
    then: {operationResultCode: Rejected, rejectReasonCode: InsufficientFunds}
  - name: flaky
    sequence:
      - {operationResultCode: TemporaryFailure}
      - {operationResultCode: Success}
"""


def test_paths_are_shown_relative_never_absolute(tmp_path: Path) -> None:
    inside = tmp_path / "scenarios" / "shop.yaml"
    assert rules.shown_path(str(inside), cwd=tmp_path) == "scenarios/shop.yaml"
    assert rules.shown_path("/elsewhere/ci/shop.yaml", cwd=tmp_path) == "…/ci/shop.yaml"
    assert rules.shown_path("runtime") == "added at run time (control API)"
    assert rules.shown_path("shop.yaml") == "shop.yaml"


def test_rules_grouped_by_file_built_ins_last(tmp_path: Path) -> None:
    user = tmp_path / "shop.yaml"
    builtin = data_path("default-scenarios.yaml")
    loaded = parse_rules(USER_RULES, str(user)) + parse_rules(builtin.read_text(), str(builtin))
    grouped = rules.groups(loaded, cwd=tmp_path)
    assert [(g["file"], g["builtin"]) for g in grouped] == [("shop.yaml", False), (rules.BUILTIN_NAME, True)]
    decline, flaky = grouped[0]["rules"]
    assert decline["when"] == "amount 500.00 to …, operation Charge or PreAuth, cardNumber 400000******0002"
    assert decline["then"] == "Rejected (InsufficientFunds)"
    assert decline["line"] == 3
    assert flaky["when"] == "any operation"
    assert "TemporaryFailure → Success" in flaky["then"]
    text = str(grouped)
    assert str(tmp_path) not in text
    assert "4000000000000002" not in text
    assert len(grouped[1]["rules"]) > 40
