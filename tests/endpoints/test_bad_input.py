"""Table-driven bad input (tests/cases/bad_input.yaml): exact status and field names."""

from __future__ import annotations

import json
from typing import Any

import pytest
from starlette.testclient import TestClient

from tests.conftest import SANDBOX
from tests.support.casedata import patched
from tests.support.paths import TESTS_DIR
from tests.support.yamldata import load_yaml

CASES_FILE = TESTS_DIR / "cases" / "bad_input.yaml"
DATA = load_yaml(CASES_FILE.read_text())
ONE_MIB = 1024 * 1024


def _raw(value: Any) -> bytes:
    if value == "deep":
        return b'{"amount":' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    if value == "huge":
        return b'{"payload":"' + b"x" * (ONE_MIB + 10) + b'"}'
    return value if isinstance(value, bytes) else str(value).encode()


def _body(case: dict[str, Any]) -> Any:
    body = case.get("body")
    if "base" in case:
        body = patched(DATA["bases"][case["base"]], case.get("set", {}))
    if isinstance(body, dict) and body.get("payload") == "LONG16385":
        body["payload"] = "x" * 16385
    return body


@pytest.mark.parametrize("case", DATA["cases"], ids=[c["name"] for c in DATA["cases"]])
def test_bad_input(client: TestClient, case: dict[str, Any]) -> None:
    headers = {**SANDBOX, **{k: v for k, v in case.get("headers", {}).items() if v is not None}}
    if case.get("headers", {}).get("X-Api-Key", "") is None:
        headers.pop("X-Api-Key")
    client.headers.pop("X-Api-Key", None)
    if case.get("strict"):
        assert client.post("/_emulator/settings", json={"strict": True}, headers=SANDBOX).status_code == 200
    method = case.get("method", "POST")
    if "raw" in case:
        headers["Content-Type"] = case.get("contentType", "application/json")
        response = client.request(method, case["path"], content=_raw(case["raw"]), headers=headers)
    elif "body" in case or "base" in case:
        response = client.request(method, case["path"], json=_body(case), headers=headers)
    else:
        response = client.request(method, case["path"], headers=headers)
    assert response.status_code == case["status"], response.text
    assert response.headers["content-type"].startswith("application/json")
    errors = response.json()
    assert isinstance(errors, list), errors
    assert errors, errors
    assert sorted(e["fieldName"] for e in errors) == sorted(case["fields"]), errors
    for entry in errors:
        assert entry["errors"], entry
        assert all(isinstance(m, str) and m for m in entry["errors"]), entry


def test_case_table_is_large_enough() -> None:
    assert len(DATA["cases"]) >= 40


def test_messages_speak_plainly(client: TestClient) -> None:
    client.post("/_emulator/settings", json={"strict": True})
    body = patched(DATA["bases"]["charge"], {"currency": "~", "card.expirationMonth": 13, "tip": 1})
    errors = {e["fieldName"]: e["errors"] for e in client.post("/PaymentGateway/charge", json=body).json()}
    assert errors["currency"] == ["The Currency field is required."]
    assert errors["card.expirationMonth"] == ["The field ExpirationMonth must be at most 12."]
    assert errors["tip"][0].startswith("Unknown property 'tip'.")


def test_server_keeps_serving_after_bad_input(client: TestClient) -> None:
    for raw in (b"{", b"\xff\xfe", b"[" * 50_000, b"null"):
        client.post("/PaymentGateway/charge", content=raw, headers={"Content-Type": "application/json"})
    response = client.get("/Utils/apiKey")
    assert response.status_code == 200
    assert response.json()["userName"] == "sandbox-merchant"


def test_enums_and_property_names_read_case_insensitively(client: TestClient) -> None:
    """`VISA`, `CardNumber` are accepted and validated in canonical form."""
    body = patched(DATA["bases"]["charge"], {"networkTokenBrand": "VISA", "card.cardType": "visa"})
    body["card"]["CardNumber"] = body["card"].pop("cardNumber")
    body["Currency"] = body.pop("currency")
    del body["paymentGatewayAccountName"]  # no stored account: inline credentials instead
    body["PaymentGatewayAccount"] = {"PaymentGatewayName": "nullsuccess"}
    response = client.post("/PaymentGateway/charge", json=body)
    assert response.status_code != 400, response.text
    assert json.dumps(response.json())
