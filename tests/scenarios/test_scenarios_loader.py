"""Reading scenario files: accepted forms, canonical spelling, and every refusal with
``file:line: reason`` (refusals as data in tests/cases/scenario_files.yaml)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from emulator.scenarios import BUILTIN, RuleOutcome, ScenarioError, check_files, parse_rules
from emulator.scenarios.loader import expand_paths, load_files
from tests.support.paths import REPO_ROOT, TESTS_DIR
from tests.support.yamldata import load_yaml

CASES = load_yaml((TESTS_DIR / "cases" / "scenario_files.yaml").read_text())["cases"]
HUGE_INT = "9" * 5000  # `{huge_int}` in a case's text: past the 4,300 digits Python converts


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_bad_file_is_refused_with_every_problem(tmp_path: Path, case: dict[str, Any]) -> None:
    path = tmp_path / "rules.yaml"
    text = case["text"].replace("{huge_int}", HUGE_INT)
    path.write_text(text)
    expected = [p.replace("{file}", str(path)) for p in case["problems"]]
    assert check_files([path]) == expected
    with pytest.raises(ScenarioError) as caught:
        parse_rules(text, str(path))
    assert caught.value.problems == expected
    assert [str(d) for d in caught.value.details] == expected


def test_three_file_forms_and_json() -> None:
    rule = {"name": "r", "when": {"amount": 5}, "then": {"operationResultCode": "Success"}}
    forms = [
        yaml.safe_dump({"scenarios": [rule]}),
        yaml.safe_dump([rule]),
        yaml.safe_dump(rule),
        json.dumps({"scenarios": [rule]}),
    ]
    for text in forms:
        (parsed,) = parse_rules(text, "x.yaml")
        assert parsed.name == "r"
        assert parsed.match.amount == 5.0
    assert parse_rules("", "empty.yaml") == []
    assert parse_rules("scenarios:\n", "empty.yaml") == []


def test_values_are_read_case_insensitively_and_written_canonically() -> None:
    text = """
scenarios:
  - name: loose
    when:
      cardNumber: 4000000000000002
      currency: eur
      operation: [charge, PREAUTH]
      amount: 12
    then:
      operationResultCode: rejected
      rejectReasonCode: insufficientfunds
      gatewayResultCode: 51
      fault: LOSTRESPONSE
"""
    (rule,) = parse_rules(text, "loose.yaml")
    assert rule.to_json() == {
        "name": "loose",
        "when": {
            "cardNumber": "4000000000000002",
            "currency": "EUR",
            "operation": ["Charge", "PreAuth"],
            "amount": 12.0,
        },
        "then": {
            "operationResultCode": "Rejected",
            "rejectReasonCode": "InsufficientFunds",
            "gatewayResultCode": "51",
            "fault": "lostResponse",
        },
        "source": "loose.yaml:3",
    }
    assert rule.outcomes == (
        RuleOutcome("Rejected", "InsufficientFunds", "51", None, 0, "lostResponse", None, None, "loose"),
    )


def test_own_reject_codes_are_kept_as_written() -> None:
    (rule,) = parse_rules("- {name: own, then: {operationResultCode: Rejected, rejectReasonCode: VelocityHold}}", "o")
    assert rule.outcomes[0].reject_reason_code == "VelocityHold"


def test_outcome_defaults() -> None:
    text = """
- name: plain-decline
  then: {operationResultCode: Rejected}
- name: settles-now
  then: {operationResultCode: Accepted, settlesTo: success}
- name: settles-later
  description: for the table
  then: {operationResultCode: Accepted, settlesTo: Rejected, settleAfterSeconds: 2.5}
"""
    decline, now, later = parse_rules(text, "d.yaml")
    assert decline.outcomes[0] == RuleOutcome("Rejected", "CardDeclined", rule="plain-decline")
    assert decline.outcomes[0].delay_ms == 0
    assert decline.outcomes[0].fault == "none"
    assert (now.outcomes[0].settles_to, now.outcomes[0].settle_after_seconds) == ("Success", 0.0)
    assert (later.outcomes[0].settles_to, later.outcomes[0].settle_after_seconds) == ("Rejected", 2.5)
    assert later.description == "for the table"
    assert later.to_json()["description"] == "for the table"
    assert [r.line for r in (decline, now, later)] == [2, 4, 6]


def test_runtime_rules_say_runtime_as_their_source() -> None:
    (rule,) = parse_rules('{"name": "rt", "then": {"operationResultCode": "Success"}}', "runtime")
    assert rule.location == "runtime"
    assert rule.to_json()["source"] == "runtime"


def test_a_name_may_not_be_reused_in_a_later_file(tmp_path: Path) -> None:
    first, second = tmp_path / "a.yaml", tmp_path / "b.yaml"
    first.write_text("- {name: shared, then: {operationResultCode: Success}}\n")
    second.write_text(
        "- {name: other, then: {operationResultCode: Success}}\n"
        "- {name: shared, then: {operationResultCode: Rejected}}\n"
    )
    assert check_files([first, second]) == [f"{second}:2: duplicate rule name 'shared' (first at {first}:1)"]


def test_a_user_rule_named_as_a_built_in_one_takes_its_place(tmp_path: Path) -> None:
    mine = tmp_path / "mine.yaml"
    mine.write_text("\n- {name: slow-card, then: {operationResultCode: Success}}\n")
    assert check_files([mine]) == []
    rules = load_files([mine], BUILTIN)
    [slow] = [rule for rule in rules if rule.name == "slow-card"]
    assert slow.source == str(mine)
    assert rules[0] is slow  # in the user's position, before every built-in rule
    assert len(rules) == len(load_files([], BUILTIN))


def test_a_copy_of_the_shipped_defaults_checks_clean(tmp_path: Path) -> None:
    """A project starts from a copy of scenarios/default.yaml: each of its rules replaces the
    built-in one of the same name, none is a duplicate."""
    copy = tmp_path / "default.yaml"
    copy.write_text(BUILTIN.read_text())
    assert check_files([copy]) == []
    assert check_files([REPO_ROOT / "scenarios" / "default.yaml"]) == []
    assert [rule.name for rule in load_files([copy], BUILTIN)] == [rule.name for rule in load_files([], BUILTIN)]
    assert {rule.source for rule in load_files([copy], BUILTIN, [])} == {str(copy)}


def test_directories_load_yaml_files_in_name_order(tmp_path: Path) -> None:
    folder = tmp_path / "rules"
    folder.mkdir()
    (folder / "b.yml").write_text("- {name: from-b, then: {operationResultCode: Success}}\n")
    (folder / "a.yaml").write_text("- {name: from-a, then: {operationResultCode: Success}}\n")
    (folder / "notes.txt").write_text("not a scenario file: [")
    extra = tmp_path / "extra.yaml"
    extra.write_text("- {name: from-extra, then: {operationResultCode: Success}}\n")
    assert check_files([extra, folder]) == []
    files = expand_paths([extra, folder], [])
    names = [r.name for r in load_files(files, None)]
    assert names == ["from-extra", "from-a", "from-b"]


def test_missing_and_unreadable_files(tmp_path: Path) -> None:
    binary = tmp_path / "binary.yaml"
    binary.write_bytes(b"\xff\xfe\x00bad")
    problems = check_files([tmp_path / "nope.yaml", binary])
    assert problems[0] == f"{tmp_path / 'nope.yaml'}: no such file or directory"
    assert problems[1].startswith(f"{binary}: cannot read: ")
    assert len(problems) == 2


def test_the_built_in_file_checks_clean() -> None:
    assert check_files([]) == []
    assert check_files([BUILTIN]) == []
