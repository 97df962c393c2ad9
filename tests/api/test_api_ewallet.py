"""POST /EWalletOperations and POST /EWalletOperations/validateResults."""

from __future__ import annotations

import copy
import json
from datetime import timedelta
from typing import Any

import pytest
import yaml
from starlette.applications import Starlette
from starlette.testclient import TestClient

from emulator.stores import ewallet_sessions as sessions
from emulator.stores import ewallet_tokens as tokens
from tests.conftest import LIVE, SANDBOX, tenant_of
from tests.conftest import setup_ewallet_tenant as setup_tenant
from tests.support.paths import TESTS_DIR
from tests.support.yamldata import load_yaml

CASES = load_yaml((TESTS_DIR / "cases" / "ewallet_sessions.yaml").read_text())


@pytest.fixture
def stored(app: Starlette) -> str:
    tenant = tenant_of(app)
    tenant.certificates.register("myCert")
    return setup_tenant(tenant)


def _patched(changes: dict[str, Any], stored: str) -> dict[str, Any]:
    body = copy.deepcopy(CASES["base"])
    for dotted, value in changes.items():
        if value == "~":
            body.pop(dotted, None)
        else:
            body[dotted] = value
    text = yaml.safe_dump(body).replace("STORED", stored)
    return yaml.safe_load(text)


def _full_request(stored: str) -> dict[str, Any]:
    return {
        "operation": "charge_and_tokenize",
        "paymentGatewayAccountId": "primary",
        "paymentGatewayCertName": "myCert",
        "allowedeWalletAccountIds": ["cardpay1"],
        "customerName": "Jane Doe",
        "customerPhone": "+1 555 0100",
        "customerEmail": "jane@example.com",
        "storedCards": [
            {
                "token": stored,
                "expirationYear": 2031,
                "expirationMonth": 4,
                "nameOnCard": "Jane Doe",
                "lastDigits": "1111",
                "brand": "VISA",
                "ownerId": "cust-1",
            },
        ],
        "mode": "test",
        "currencyCode": "eur",
        "countryCode": "de",
        "amount": 12.3,
        "paymentNote": "Order 77",
        "allowedBrands": ["VISA", "MASTERCARD", "amex"],
        "threeDsBrands": ["Visa"],
        "fallbackUpgs": [
            {"paymentGatewayAccountId": "backup", "paymentGatewayCertName": "myCert", "pass3DSData": True}
        ],
        "publicKey": "pk-test",
    }


def test_session_with_every_field(app: Starlette, client: TestClient, stored: str) -> None:
    response = client.post("/EWalletOperations", json=_full_request(stored))
    assert response.status_code == 200, response.text
    token = response.json()["token"]
    assert list(response.json()) == ["token"]
    header, body = (json.loads(tokens.b64decode(part)) for part in token.split(".")[:2])
    assert header["kid"] == tenant_of(app).shard
    assert body["pld"]["op"] == "CHARGE_AND_TOKENIZE"
    assert body["pld"]["wlt"] == [{"name": "CardPay"}]
    assert response.headers["x-payemu-payment-page"] == f"http://testserver/_emulator/pay/{token}"
    tenant = tenant_of(app)
    session = tenant.sessions[token]
    assert session.operation == "CHARGE_AND_TOKENIZE"
    assert session.request["mode"] == "TEST"
    assert session.currency == "EUR"
    assert session.request["countryCode"] == "DE"
    assert session.allowed_brands == ["Visa", "MasterCard", "AMEX"]
    assert session.stored_cards[0]["brand"] == "Visa"
    assert session.expires_at - session.created_at == timedelta(minutes=30)
    assert session.state(tenant.now()) == "open"


def test_the_vendor_example_session_is_accepted(client: TestClient, app: Starlette) -> None:
    """The body of the vendor's public example (upper-case brands), with our account."""
    setup_tenant(tenant_of(app))
    body = {
        "operation": "CHARGE",
        "paymentGatewayAccountId": "backup",
        "allowedeWalletAccountIds": ["cardpay1"],
        "allowedBrands": ["VISA", "MASTERCARD", "AMEX"],
        "currencyCode": "USD",
        "countryCode": "US",
        "amount": 49.99,
        "mode": "TEST",
    }
    response = client.post("/EWalletOperations", json=body)
    assert response.status_code == 200, response.text


def test_tokenize_session_may_have_no_amount(client: TestClient, stored: str) -> None:
    body = _patched({"operation": "TOKENIZE", "amount": 0}, stored)
    assert client.post("/EWalletOperations", json=body).status_code == 200


def test_tokens_differ_and_sessions_stay_pertenant_of(app: Starlette, client: TestClient, stored: str) -> None:
    first = client.post("/EWalletOperations", json=CASES["base"]).json()["token"]
    second = client.post("/EWalletOperations", json=CASES["base"]).json()["token"]
    assert first != second
    assert set(tenant_of(app).sessions) == {first, second}
    assert tenant_of(app, "live-api-key").sessions == {}


def test_seeded_tokens_repeat(make_app: Any) -> None:
    tokens = []
    for _ in range(2):
        app = make_app(seed=7)
        setup_tenant(tenant_of(app))
        with TestClient(app, headers=SANDBOX) as client:
            tokens.append(client.post("/EWalletOperations", json=CASES["base"]).json()["token"])
    assert tokens[0] == tokens[1]


@pytest.mark.parametrize("case", CASES["rejected"] + CASES["invalid"], ids=lambda c: c["name"])
def test_refused_sessions(app: Starlette, client: TestClient, stored: str, case: dict[str, Any]) -> None:
    response = client.post("/EWalletOperations", json=_patched(case["set"], stored))
    assert response.status_code == 400, response.text
    body = response.json()
    assert sorted(e["fieldName"] for e in body) == sorted(case["fields"])
    assert all(e["errors"] and all(m for m in e["errors"]) for e in body)
    assert tenant_of(app).sessions == {}


def test_session_needs_a_key(anon: TestClient) -> None:
    response = anon.post("/EWalletOperations", json=CASES["base"])
    assert response.status_code == 401
    assert response.json()[0]["fieldName"] == "X-Api-Key"


# -- validateResults --------------------------------------------------------------------
def _paid_token(app: Starlette, client: TestClient, monkeypatch: pytest.MonkeyPatch, stored: str) -> str:
    body = _patched({"fallbackUpgs": [{"paymentGatewayAccountId": "backup"}]}, stored)
    token = client.post("/EWalletOperations", json=body).json()["token"]
    answer = client.post(
        f"/_emulator/pay/{token}",
        json={
            "card": {
                "cardHolderName": "Jane Doe",
                "cardNumber": "4111111111111111",
                "expirationMonth": 12,
                "expirationYear": 2030,
                "cvv": "123",
            }
        },
    )
    assert answer.status_code == 200, answer.text
    return str(answer.json()["resultToken"])


def test_validate_results_answers_the_payment(
    app: Starlette, client: TestClient, stored: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    result_token = _paid_token(app, client, monkeypatch, stored)
    response = client.post("/EWalletOperations/validateResults", json=result_token)
    assert response.status_code == 200, response.text
    data = response.json()
    assert data["selectedPaymentMethod"] == "CardPay"
    assert data["upgChargeResults"]["operationResultCode"] == "Success"
    assert data["providerAccountId"] == "backup"
    assert data["providerTransactionId"] == data["upgChargeResults"]["gatewayReference"]
    assert [(a["attemptNumber"], a["paymentGatewayAccountId"], a["isFallback"]) for a in data["attempts"]] == [
        (1, "primary", False),
        (2, "backup", True),
    ]
    assert [r["operationResultCode"] for r in data["failedUpgChargeResults"]] == ["Rejected"]
    assert data["tokenAndMaskedCardModel"]["bankCard"]["number"] == "411111******1111"
    assert "4111111111111111" not in response.text
    # idempotent
    assert client.post("/EWalletOperations/validateResults", json=result_token).json() == data


def test_validate_results_refuses_other_tenants_and_tampering(
    app: Starlette, client: TestClient, stored: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    result_token = _paid_token(app, client, monkeypatch, stored)
    foreign = client.post("/EWalletOperations/validateResults", json=result_token, headers=LIVE)
    assert foreign.status_code == 400
    assert foreign.json()[0]["fieldName"] == "resultToken"
    head, payload, signature = result_token.split(".")
    flipped = signature[:-2] + ("AA" if signature[-2:] != "AA" else "BB")
    for bad in (
        f"{head}.{payload}.{flipped}",
        f"{payload}.{signature}",
        "x" + result_token,
        "not-a-token",
        f"{head}.{payload[:-4]}.{signature}",
    ):
        response = client.post("/EWalletOperations/validateResults", json=bad)
        assert response.status_code == 400, bad
        assert response.json() == [
            {"fieldName": "resultToken", "errors": ["The result token is not one payemu issued, or it was altered."]}
        ]


@pytest.mark.parametrize("body", [{"token": 5}, {"token": "x", "more": 1}, 12, None, ["a"], ""])
def test_validate_results_body_must_be_a_string(client: TestClient, body: Any) -> None:
    response = client.post("/EWalletOperations/validateResults", json=body)
    assert response.status_code == 400
    assert response.json()[0]["fieldName"] == "body"


def test_token_of_a_reset_tenant_is_refused(
    app: Starlette, client: TestClient, stored: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    result_token = _paid_token(app, client, monkeypatch, stored)
    tenant_of(app).reset()
    response = client.post("/EWalletOperations/validateResults", json=result_token)
    assert response.status_code == 400
    assert "does not belong" in response.json()[0]["errors"][0]


def test_sessions_expire_on_the_tenant_clock(app: Starlette, client: TestClient, stored: str) -> None:
    token = client.post("/EWalletOperations", json=CASES["base"]).json()["token"]
    tenant = tenant_of(app)
    tenant.clock.advance(sessions.SESSION_LIFETIME - timedelta(seconds=1))
    assert tenant.sessions[token].state(tenant.now()) == "open"
    tenant.clock.advance(timedelta(seconds=1))
    assert tenant.sessions[token].state(tenant.now()) == "expired"
