"""Leniency and strict mode, per-tenant settings (success status, failover), and a
journal that masks cards but not references."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from emulator.domain.cards import luhn_valid
from tests.support.bodies import account, card
from tests.support.casedata import patched
from tests.support.paths import TESTS_DIR
from tests.support.yamldata import load_yaml

DATA = load_yaml((TESTS_DIR / "cases" / "leniency.yaml").read_text(encoding="utf-8"))
CARD = card(cardHolderName="Jane Doe", cardNumber="4111111111111111", cvv="123")
STRIPE = account("Stripe", SecretKey="sk_test_1")


def _request(case: dict[str, Any]) -> tuple[str, Any]:
    base = DATA["bases"][case["base"]]
    return base["path"], patched(copy.deepcopy(base["body"]), case.get("set", {}))


def _store_certificate_and_account(client: TestClient) -> None:
    client.put("/PaymentGatewayAccounts/nullsuccess", json={"paymentGatewayName": "NULLSuccess", "credentials": []})
    client.post("/_emulator/certificates", json={"name": "myCert"})


@pytest.mark.parametrize("case", DATA["cases"], ids=[c["name"] for c in DATA["cases"]])
def test_lenient_by_default_with_warnings(client: TestClient, case: dict[str, Any]) -> None:
    _store_certificate_and_account(client)
    path, body = _request(case)
    response = client.post(path, json=body)
    assert response.status_code == 200, response.text
    assert response.headers["X-Payemu-Warnings"] == "; ".join(case["warnings"])
    for key, value in case.get("echo", {}).items():
        assert response.json()[key] == value
    [entry] = [e for e in client.get("/_emulator/requests", params={"path": path}).json()["requests"]]
    assert entry["warnings"] == case["warnings"]


@pytest.mark.parametrize("case", DATA["cases"], ids=[c["name"] for c in DATA["cases"]])
def test_strict_mode_answers_400_naming_the_property(client: TestClient, case: dict[str, Any]) -> None:
    _store_certificate_and_account(client)
    assert client.post("/_emulator/settings", json={"strict": True}).json()["strict"] is True
    path, body = _request(case)
    response = client.post(path, json=body)
    assert response.status_code == 400, response.text
    assert case["strictField"] in [e["fieldName"] for e in response.json()]
    assert "X-Payemu-Warnings" not in response.headers


def test_strict_from_the_config(make_app: Any) -> None:
    with TestClient(make_app(strict=True), headers={"X-Api-Key": "sandbox-api-key"}) as client:
        path, body = _request(DATA["cases"][0])
        assert client.post(path, json=body).status_code == 400
        assert client.get("/_emulator/settings").json()["strict"] is True


def test_clean_requests_carry_no_warning(client: TestClient) -> None:
    path, body = _request({"base": "charge"})
    response = client.post(path, json=body)
    assert response.status_code == 200
    assert "X-Payemu-Warnings" not in response.headers
    assert "warnings" not in client.get("/_emulator/requests").json()["requests"][0]


def test_control_api_stays_strict(client: TestClient) -> None:
    response = client.post("/_emulator/settings", json={"strict": True, "colour": "red"})
    assert [e["fieldName"] for e in response.json()] == ["colour"]


def test_settings_are_per_tenant_and_reset(client: TestClient) -> None:
    client.post("/_emulator/settings", json={"successStatus": "always-202", "failover": "recoverable-only"})
    assert client.get("/_emulator/settings").json() == {
        "strict": False,
        "successStatus": "always-202",
        "failover": "recoverable-only",
        "mockTokenization": "unsupported",
        "overridden": ["failover", "successStatus"],
    }
    live = client.get("/_emulator/settings", headers={"X-Api-Key": "live-api-key"}).json()
    assert live["successStatus"] == "by-result"
    client.post("/_emulator/settings", json={"failover": None})
    assert client.get("/_emulator/settings").json()["failover"] == "all"
    client.post("/_emulator/reset")
    assert client.get("/_emulator/settings").json()["overridden"] == []


SUCCESS_STATUS = [
    ("by-result", {"success": 200, "accepted": 202, "capture": 200, "tokenize": 200, "status": 200}),
    ("always-200", {"success": 200, "accepted": 200, "capture": 200, "tokenize": 200, "status": 200}),
    ("always-202", {"success": 202, "accepted": 202, "capture": 202, "tokenize": 200, "status": 200}),
]


@pytest.mark.parametrize(("mode", "expected"), SUCCESS_STATUS, ids=[m for m, _ in SUCCESS_STATUS])
def test_success_status_switch(client: TestClient, mode: str, expected: dict[str, int]) -> None:
    client.post("/_emulator/settings", json={"successStatus": mode})
    pay = {"currency": "USD", "card": CARD, "paymentGatewayAccount": STRIPE}
    seen = {}
    authorized = client.post("/PaymentGateway/authorize", json={**pay, "amount": 10})
    seen["success"] = authorized.status_code
    seen["accepted"] = client.post("/PaymentGateway/charge", json={**pay, "amount": 9001}).status_code
    reference = authorized.json()["gatewayReference"]
    seen["capture"] = client.put(
        "/PaymentGateway/capture", json={"refTransId": reference, "amount": 10, **pay}
    ).status_code
    tokenized = client.post("/PaymentGateway/tokenize", json={"card": CARD, "paymentGatewayAccount": STRIPE})
    seen["tokenize"] = tokenized.status_code
    seen["status"] = client.post(
        "/PaymentGateway/status", json={"refTransId": reference, "paymentGatewayAccount": STRIPE}
    ).status_code
    assert seen == expected
    assert authorized.json()["operationResultCode"] == "Success"


def test_success_status_from_the_config(make_app: Any) -> None:
    with TestClient(make_app(success_status="always-202"), headers={"X-Api-Key": "sandbox-api-key"}) as client:
        response = client.post(
            "/PaymentGateway/charge",
            json={"amount": 10, "currency": "USD", "card": CARD, "paymentGatewayAccount": STRIPE},
        )
        assert response.status_code == 202


def test_failover_mode_per_tenant(client: TestClient) -> None:
    client.put("/PaymentGatewayAccounts/backup", json=STRIPE)
    body = {
        "amount": 10,
        "currency": "USD",
        "card": {**CARD, "cardNumber": "4000000000009995"},
        "paymentGatewayAccount": STRIPE,
        "fallbackUpgs": [{"paymentGatewayAccountName": "backup"}],
    }
    client.post("/_emulator/settings", json={"failover": "recoverable-only"})
    client.post("/PaymentGateway/charge", json=body)
    client.post("/_emulator/settings", json={"failover": "all"})
    client.post("/PaymentGateway/charge", json=body)
    attempts = [
        len(e["attempts"])
        for e in client.get("/_emulator/requests").json()["requests"]
        if e["path"] == "/PaymentGateway/charge"
    ]
    assert attempts == [1, 2]


# -- masking ----------------------------------------------------------------------------
_DIGIT_RUN = re.compile(r"(?<!\d)\d(?:[ -]?\d){12,18}(?!\d)")


def test_journal_of_a_full_run_masks_cards_and_keeps_references(client: TestClient) -> None:
    adyen = {
        "paymentGatewayName": "Adyen",
        "credentials": [{"key": "ApiKey", "value": "k"}, {"key": "MerchantAccount", "value": "m"}],
    }
    references: list[str] = []
    cards = ["4242424242424242", "4000000000000002", "4242424242424241", "378282246310005", "5555555555554444"]
    for index in range(40):
        card = {**CARD, "cardNumber": cards[index % len(cards)]}
        if card["cardNumber"].startswith("37"):
            card["cvv"] = "1234"
        answer = client.post(
            "/PaymentGateway/authorize",
            json={
                "amount": 10 + index,
                "currency": "USD",
                "card": card,
                "paymentGatewayAccount": adyen,
                "generateToken": True,
                "myRef": f"order {card['cardNumber']}",
            },
        ).json()
        references.append(answer["gatewayReference"])
        if answer["operationResultCode"] == "Success":
            captured = client.put(
                "/PaymentGateway/capture",
                json={
                    "refTransId": answer["gatewayReference"],
                    "amount": 10 + index,
                    "currency": "USD",
                    "card": card,
                    "paymentGatewayAccount": adyen,
                },
            ).json()
            references.append(captured["gatewayReference"])
            if answer["gatewayToken"]:
                references.append(answer["gatewayToken"])
    client.get("/Tools/luhn", params={"number": "4111111111111111"})
    client.get("/Tools/luhn", params={"number": "4111111111111112"})
    client.get("/StringTokens/4111111111111111")
    journal = client.get("/_emulator/requests").json()["requests"]
    text = json.dumps(journal)
    assert any(luhn_valid(r) for r in references if r.isdigit()), "the run must include Luhn-valid references"
    for reference in references:
        assert reference in text
    pans = [run for run in _DIGIT_RUN.findall(text) if luhn_valid(re.sub(r"\D", "", run))]
    assert sorted(set(pans) - set(references)) == []
    queries = [e["query"] for e in journal if e["path"] == "/Tools/luhn"]
    assert queries == ["number=411111%2A%2A%2A%2A%2A%2A1111", "number=411111%2A%2A%2A%2A%2A%2A1112"] or queries == [
        "number=411111******1111",
        "number=411111******1112",
    ]
    assert "/StringTokens/411111******1111" in [e["path"] for e in journal]


def test_card_fields_are_masked_whatever_they_hold(client: TestClient) -> None:
    wide = "４０００００００００００００２"  # the decline card in full-width digits
    client.post(
        "/PaymentGateway/charge",
        json={"amount": 10, "currency": "USD", "paymentGatewayAccount": STRIPE, "card": {**CARD, "cardNumber": wide}},
    )
    [entry] = client.get("/_emulator/requests").json()["requests"]
    assert entry["request"]["card"]["cardNumber"] == wide[:6] + "*" * (len(wide) - 10) + wide[-4:]
    assert "cvv" not in entry["request"]["card"]


def test_strict_flag_and_config_keys(tmp_path: Path) -> None:
    from emulator.cli.main import build_parser, settings_from

    config = tmp_path / "payemu.yaml"
    config.write_text("successStatus: always-200\nfailover: recoverable-only\n", encoding="utf-8")
    settings = settings_from(build_parser().parse_args(["serve", "--strict", "--config", str(config)]))
    assert (settings.strict, settings.success_status, settings.failover) == (True, "always-200", "recoverable-only")
    assert settings_from(build_parser().parse_args(["serve"])).strict is False
