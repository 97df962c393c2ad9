"""The structural check of scenario rules: jsonschema-rs judges first, jsonschema words
the problems; a rule jsonschema-rs takes is one jsonschema takes, and a start-up with
valid files never imports jsonschema."""

from __future__ import annotations

import copy
import subprocess
import sys
from typing import Any

import pytest

from emulator.scenarios import BUILTIN
from emulator.scenarios.schema import _fast, _fast_form, _rule_validator, rule_errors
from tests.support.paths import REPO_ROOT
from tests.support.yamldata import load_yaml

ROOT = REPO_ROOT


def _shipped_rules() -> list[dict[str, Any]]:
    document = load_yaml(BUILTIN.read_text(encoding="utf-8"))
    rules: list[dict[str, Any]] = document["scenarios"]
    return rules


# values put in place of a rule's operation, result code, fault and currency: canonical,
# other cases, near misses, a Kelvin sign (lower-cases to an ASCII "k"), wrong types
_OPERATIONS = ["Charge", "charge", "CHARGE", "pReAuTh", "Tokenize", "To\u212aenize", "Charg", "Charge ", "", 5, None]
_CODES = ["Success", "success", "REJECTED", "Rejected\n", "Sucess", 0, ["Success"]]
_FAULTS = ["reset", "RESET", "lostResponse", "lost", "", True]
_CURRENCIES = ["USD", "usd", "US", "US\n", "USDX", "U$D", 840]


def _variants() -> list[Any]:
    base = {"name": "variant", "when": {"operation": "Charge"}, "then": {"operationResultCode": "Success"}}
    found: list[Any] = [*_shipped_rules(), base, {}, [], "text", {"name": "x"}, {**base, "unknown": 1}]
    for operation in _OPERATIONS:
        found.append({**base, "when": {"operation": operation}})
        found.append({**base, "when": {"operation": [operation, "Refund"]}})
    for code in _CODES:
        found.append({**base, "then": {"operationResultCode": code}})
        found.append({**base, "sequence": [{"operationResultCode": code}]})
    for fault in _FAULTS:
        found.append({**base, "then": {"operationResultCode": "Success", "fault": fault}})
    for currency in _CURRENCIES:
        found.append({**base, "when": {"currency": currency}})
    for name in ["ok", " padded", "tab\t", "x" * 101, ""]:
        found.append({**base, "name": name})
    return found


@pytest.mark.parametrize("rule", _variants())
def test_a_rule_jsonschema_rs_takes_is_one_jsonschema_takes(rule: Any) -> None:
    strict = list(_rule_validator().iter_errors(rule))
    if _fast().is_valid(rule):
        assert strict == []
    # and what rule_errors answers is jsonschema's verdict in every case
    assert (list(rule_errors(rule)) == []) == (strict == [])


def test_the_shipped_rules_pass_the_fast_check() -> None:
    assert all(_fast().is_valid(rule) for rule in _shipped_rules())


def test_ienum_becomes_a_pattern_of_both_cases() -> None:
    schema = {"type": "string", "ienum": ["Charge", "Void"], "allOf": [{"minLength": 1}]}
    original = copy.deepcopy(schema)
    fast = _fast_form(schema)
    assert fast == {
        "type": "string",
        "allOf": [{"minLength": 1}, {"pattern": "^(?:[cC][hH][aA][rR][gG][eE]|[vV][oO][iI][dD])$"}],
    }
    assert schema == original
    with pytest.raises(ValueError, match="letters and digits"):
        _fast_form({"ienum": ["a.b"]})


def test_a_start_up_with_valid_files_does_not_import_jsonschema() -> None:
    code = (
        "import sys\n"
        "from starlette.testclient import TestClient\n"
        "from emulator.domain.config import Settings\n"
        "from emulator.app.build import create_app\n"
        "with TestClient(create_app(Settings()), headers={'X-Api-Key': 'sandbox-api-key'}) as client:\n"
        "    assert client.get('/Utils/apiKey').status_code == 200\n"
        "print('jsonschema' in sys.modules)\n"
    )
    ran = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.strip() == "False"
