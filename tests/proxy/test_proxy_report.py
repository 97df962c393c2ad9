"""The comparison of two answers and the drift table (emulator/proxy/report.py)."""

from __future__ import annotations

from typing import Any

from emulator.contract.openapi import OpenApi
from emulator.proxy.report import RecordedAnswer, compare, enum_fields, table


def _answer(status: int, body: Any, **headers: str) -> RecordedAnswer:
    return RecordedAnswer(status, headers, body)


RESULT = {"operationResultCode": "Success", "amount": 1.0, "gatewayToken": None, "customGatewayResponse": {"a": 1}}


def test_same_shapes_and_other_values_do_not_drift(openapi: OpenApi) -> None:
    other = {**RESULT, "amount": 2.5, "customGatewayResponse": {"a": 7}}
    assert compare("Op", "s", _answer(200, RESULT), _answer(200, other), enums=enum_fields(openapi)) == []


def test_each_aspect_is_named(openapi: OpenApi) -> None:
    enums = enum_fields(openapi)
    assert "Success" in enums["operationResultCode"]
    theirs = _answer(202, {**RESULT, "operationResultCode": "Accepted", "amount": "1.0", "extra": 1}, Location="/x")
    ours = _answer(200, {**RESULT, "gatewayToken": "tok"})
    rows = compare("GatewayCharge", "charge", theirs, ours, enums=enums, ledger=["success-status"])
    found = {(r.aspect, r.field, r.upstream, r.payemu) for r in rows}
    assert ("status", None, "202", "200") in found
    assert ("header", "Location", "present", "absent") in found
    assert ("type", "amount", "string", "number") in found
    assert ("field", "extra", "number", "absent") in found
    assert ("type", "gatewayToken", "null", "string") in found
    assert ("enum", "operationResultCode", "Accepted", "Success") in found
    assert all(r.operation == "GatewayCharge" and r.ledger == ["success-status"] for r in rows)


def test_error_bodies_are_compared_by_shape_and_fields_name_their_ledger_entry(openapi: OpenApi) -> None:
    array = [{"fieldName": "amount", "errors": ["x"]}]
    rows = compare(
        "GatewayCharge",
        "charge-400",
        _answer(400, {"errors": array}),
        _answer(400, array),
        enums=enum_fields(openapi),
        aspect_ledger={"error-body": "error-bodies"},
    )
    assert [(r.aspect, r.upstream, r.payemu, r.ledger) for r in rows] == [
        ("error-body", "object", "ValidationErrorMessage array", ["error-bodies"])
    ]
    rows = compare(
        "GatewayCharge",
        "charge",
        _answer(200, {**RESULT, "customGatewayResponse": {"b": "x"}}),
        _answer(200, RESULT),
        enums={},
        ledger=["success-status"],
        field_ledger={"customGatewayResponse": "gateway-payloads"},
        ignore=[],
    )
    assert {r.field for r in rows} == {"customGatewayResponse.a", "customGatewayResponse.b"}
    assert all(r.ledger == ["gateway-payloads"] for r in rows)


def test_ignored_paths_are_not_compared(openapi: OpenApi) -> None:
    theirs = _answer(200, {**RESULT, "customGatewayResponse": {"b": "x"}})
    assert compare("Op", "s", theirs, _answer(200, RESULT), enums={}, ignore=["customGatewayResponse"]) == []


def test_the_table_has_a_row_per_difference() -> None:
    rows = compare("Op", "step", _answer(202, None), _answer(200, None), enums={}, ledger=["success-status"])
    text = table(rows)
    assert text.splitlines()[0].split() == ["operation", "step", "aspect", "field", "upstream", "payemu", "ledger"]
    assert text.splitlines()[1].split() == ["Op", "step", "status", "-", "202", "200", "success-status"]
