"""The gateways' own card and amount checks (tests/cases/card_checks.yaml), through the
API for each gateway and through the hosted payment page."""

from __future__ import annotations

import copy
from collections.abc import Callable
from datetime import datetime
from typing import Any

import pytest
from starlette.applications import Starlette
from starlette.testclient import TestClient

from emulator.catalog.loader import load_catalog
from emulator.contract.openapi import OpenApi
from emulator.domain.cards import luhn_valid
from tests.conftest import SANDBOX
from tests.support.paths import TESTS_DIR
from tests.support.yamldata import load_yaml

CASES = load_yaml((TESTS_DIR / "cases" / "card_checks.yaml").read_text(encoding="utf-8"))["cases"]
CATALOG = load_catalog()
CREDENTIALS = {
    "Stripe": [{"key": "SecretKey", "value": "sk_test_1"}],
    "Adyen": [{"key": "ApiKey", "value": "k"}, {"key": "MerchantAccount", "value": "shop"}],
    "AuthorizeNet": [{"key": "ApiLoginId", "value": "id"}, {"key": "TransactionKey", "value": "tk"}],
    "NULLSuccess": [],
}
PATHS = {
    "charge": "/PaymentGateway/charge",
    "authorize": "/PaymentGateway/authorize",
    "tokenize": "/PaymentGateway/tokenize",
}
BASE_CARD = {
    "cardHolderName": "Jane Doe",
    "cardNumber": "4242424242424242",
    "expirationMonth": 12,
    "expirationYear": 2030,
    "cvv": "123",
}


def _month(now: datetime, back: int) -> tuple[int, int]:
    month, year = now.month - back, now.year
    if month < 1:
        month, year = month + 12, year - 1
    return month, year


def _card(case: dict[str, Any], now: datetime) -> dict[str, Any]:
    card = copy.deepcopy(BASE_CARD)
    for key, value in case.get("card", {}).items():
        if key == "expiry":
            card["expirationMonth"], card["expirationYear"] = _month(now, 1 if value == "last-month" else 0)
        elif value == "~":
            card.pop(key, None)
        else:
            card[key] = value
    return card


def _now(client: TestClient) -> datetime:
    return datetime.fromisoformat(client.get("/_emulator/clock").json()["now"].replace("Z", "+00:00"))


API_ROWS = [(case, gateway) for case in CASES for gateway in case["expect"] if gateway != "page"]
PAGE_ROWS = [case for case in CASES if "page" in case["expect"]]


@pytest.mark.parametrize(("case", "gateway"), API_ROWS, ids=[f"{c['name']} @ {g}" for c, g in API_ROWS])
def test_gateway_checks(client: TestClient, case: dict[str, Any], gateway: str) -> None:
    operation = case.get("operation", "charge")
    body: dict[str, Any] = {
        "card": _card(case, _now(client)),
        "paymentGatewayAccount": {"paymentGatewayName": gateway, "credentials": CREDENTIALS[gateway]},
    }
    if operation != "tokenize":
        body.update(amount=case.get("amount", 10), currency="USD")
    response = client.post(PATHS[operation], json=body)
    expected = case["expect"][gateway]
    result = response.json()
    if expected == "Success":
        assert (response.status_code, result["operationResultCode"]) == (200, "Success"), response.text
        return
    assert response.status_code == 409, response.text
    assert result["operationResultCode"] == "Rejected"
    assert result["rejectReasonCode"] == expected
    assert result["gatewayName"] == gateway
    assert result["gatewayResultCode"] == CATALOG.get(gateway).code_for(expected).code  # type: ignore[union-attr]


@pytest.mark.parametrize("case", PAGE_ROWS, ids=[c["name"] for c in PAGE_ROWS])
def test_hosted_page_checks(client: TestClient, case: dict[str, Any]) -> None:
    stored = client.put(
        "/PaymentGatewayAccounts/stripeMain",
        json={"paymentGatewayName": "Stripe", "credentials": CREDENTIALS["Stripe"]},
    )
    assert stored.status_code == 200, stored.text
    session = client.post(
        "/EWalletOperations",
        json={
            "operation": "CHARGE",
            "mode": "TEST",
            "currencyCode": "USD",
            "amount": 10,
            "paymentGatewayAccountId": "stripeMain",
        },
    )
    assert session.status_code == 200, session.text
    token = session.json()["token"]
    paid = client.post(f"/_emulator/pay/{token}", json={"card": _card(case, _now(client))})
    expected = case["expect"]["page"]
    if expected == 400:
        assert paid.status_code == 400, paid.text
        return
    attempts = [e for e in client.get("/_emulator/requests").json()["requests"] if e["attempts"]]
    last = attempts[-1]["attempts"][-1]["result"]
    if expected == "Success":
        assert last["operationResultCode"] == "Success", paid.text
        return
    assert last["rejectReasonCode"] == expected, paid.text


def test_a_matching_rule_still_wins(client: TestClient) -> None:
    added = client.post(
        "/_emulator/scenarios",
        json={
            "name": "typo-approves",
            "when": {"cardNumber": "4242424242424241"},
            "then": {"operationResultCode": "Success"},
        },
    )
    assert added.status_code in (200, 201), added.text
    body = {
        "amount": 10,
        "currency": "USD",
        "card": {**BASE_CARD, "cardNumber": "4242424242424241"},
        "paymentGatewayAccount": {"paymentGatewayName": "Stripe", "credentials": CREDENTIALS["Stripe"]},
    }
    assert client.post("/PaymentGateway/charge", json=body).json()["operationResultCode"] == "Success"


def test_a_token_minted_from_the_decline_card_declines(client: TestClient) -> None:
    account = {"paymentGatewayName": "Stripe", "credentials": CREDENTIALS["Stripe"]}
    minted = client.post(
        "/PaymentGateway/tokenize",
        json={"card": {**BASE_CARD, "cardNumber": "4000000000000002"}, "paymentGatewayAccount": account},
    )
    # the decline card is declined at tokenize too; mint from a good card with a rule-free gateway path
    assert minted.json()["rejectReasonCode"] == "CardDeclined"
    good = client.post(
        "/PaymentGateway/charge",
        json={
            "amount": 10,
            "currency": "USD",
            "card": BASE_CARD,
            "generateToken": True,
            "paymentGatewayAccount": account,
        },
    )
    token = good.json()["gatewayToken"]
    charged = client.post(
        "/PaymentGateway/charge",
        json={"amount": 10, "currency": "USD", "userToken": token, "paymentGatewayAccount": account},
    )
    assert charged.status_code == 200, charged.text
    assert charged.json()["operationResultCode"] == "Success"


def test_user_token_only_charge_follows_the_tokenized_card(client: TestClient) -> None:
    added = client.post(
        "/_emulator/scenarios",
        json={
            "name": "second-card-declines",
            "when": {"cardNumber": "5555555555554444", "operation": "Charge"},
            "then": {"operationResultCode": "Rejected", "rejectReasonCode": "DoNotHonor"},
        },
    )
    assert added.status_code in (200, 201), added.text
    account = {"paymentGatewayName": "Stripe", "credentials": CREDENTIALS["Stripe"]}
    minted = client.post(
        "/PaymentGateway/tokenize",
        json={"card": {**BASE_CARD, "cardNumber": "5555555555554444"}, "paymentGatewayAccount": account},
    )
    token = minted.json()["gatewayToken"]
    charged = client.post(
        "/PaymentGateway/charge",
        json={"amount": 10, "currency": "USD", "userToken": token, "paymentGatewayAccount": account},
    )
    assert charged.json()["rejectReasonCode"] == "DoNotHonor", charged.text


def test_card_number_without_number_but_with_token(client: TestClient) -> None:
    account = {"paymentGatewayName": "Stripe", "credentials": CREDENTIALS["Stripe"]}
    token = client.post("/PaymentGateway/tokenize", json={"card": BASE_CARD, "paymentGatewayAccount": account}).json()
    card = {k: v for k, v in BASE_CARD.items() if k != "cardNumber"}
    charged = client.post(
        "/PaymentGateway/charge",
        json={
            "amount": 10,
            "currency": "USD",
            "userToken": token["gatewayToken"],
            "card": card,
            "paymentGatewayAccount": account,
        },
    )
    assert charged.status_code == 200, charged.text


def test_without_token_the_card_number_is_required(client: TestClient) -> None:
    card = {k: v for k, v in BASE_CARD.items() if k != "cardNumber"}
    response = client.post(
        "/PaymentGateway/charge", json={"amount": 10, "currency": "USD", "card": card, "paymentGatewayAccountName": "x"}
    )
    assert [e["fieldName"] for e in response.json()] == ["card.cardNumber"]


def test_luhn() -> None:
    assert [luhn_valid(n) for n in ("4242424242424242", "4242424242424241", "378282246310005")] == [True, False, True]


OLDER = TESTS_DIR / "data" / "openapi-1.0.9.36.json"


@pytest.mark.parametrize(
    ("card", "amount", "native"),
    [
        ({"cardNumber": "4242424242424241"}, 10, "incorrect_number"),
        ({"expirationYear": 2020}, 10, "expired_card"),
        ({}, 0, "amount_too_small"),
    ],
    ids=["Luhn-invalid", "expired", "zero amount"],
)
def test_an_older_document_gets_the_same_checks(
    make_app: Callable[..., Starlette], card: dict[str, Any], amount: int, native: str
) -> None:
    """A server serving the 1.0.9.36 export: the gateway declines the same (that export
    declares the 409 without a body; payemu sends its OperationResult)."""
    with TestClient(make_app(openapi=OpenApi.load(OLDER)), headers=SANDBOX) as client:
        response = client.post(
            "/PaymentGateway/charge",
            json={
                "amount": amount,
                "currency": "USD",
                "card": {**BASE_CARD, **card},
                "paymentGatewayAccount": {"paymentGatewayName": "Stripe", "credentials": CREDENTIALS["Stripe"]},
            },
        )
    assert response.status_code == 409, response.text
    assert response.json()["operationResultCode"] == "Rejected"
    assert response.json()["gatewayResultCode"] == native


def test_an_older_document_reads_leniently(make_app: Callable[..., Starlette]) -> None:
    with TestClient(make_app(openapi=OpenApi.load(OLDER)), headers=SANDBOX) as client:
        response = client.post(
            "/PaymentGateway/charge",
            json={
                "amount": "10.00",
                "currency": "USD",
                "card": BASE_CARD,
                "tip": 1,
                "paymentGatewayAccount": {"paymentGatewayName": "Stripe", "credentials": CREDENTIALS["Stripe"]},
            },
        )
    assert response.status_code == 200, response.text
    assert response.json()["amount"] == 10.0
    assert response.headers["X-Payemu-Warnings"] == "number-as-string=amount; unknown-property=tip"
