"""Failover through fallbackUpgs: order, first success or last failure, every attempt
recorded, the processing gateway kept for later operations, recoverable-only mode."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from starlette.applications import Starlette
from starlette.testclient import TestClient

from emulator.domain.config import DEFAULT_KEYS, KeySpec
from emulator.scenarios import parse_rules
from emulator.tenants.tenants import Tenant
from tests.conftest import SANDBOX
from tests.support.bodies import CARD

KEYS = (KeySpec("sandbox-api-key", "sandbox-merchant", 10001, True, ("ipgCert",)), DEFAULT_KEYS[1])
ACCOUNTS = {
    "stripeMain": {"paymentGatewayName": "Stripe", "credentials": [{"key": "SecretKey", "value": "sk_test_sk"}]},
    "adyenMain": {
        "paymentGatewayName": "Adyen",
        "credentials": [{"key": "ApiKey", "value": "a"}, {"key": "MerchantAccount", "value": "m"}],
    },
    "elavonMain": {
        "paymentGatewayName": "Elavon",
        "credentials": [
            {"key": "MerchantId", "value": "m"},
            {"key": "Password", "value": "p"},
            {"key": "RebatePWD", "value": "r"},
        ],
    },
    "worldpayMain": {
        "paymentGatewayName": "Worldpay",
        "credentials": [{"key": "SecurenetId", "value": "i"}, {"key": "SecureNetKey", "value": "k"}],
    },
    "ipgMain": {
        "paymentGatewayName": "FirstDataIPG",
        "credentials": [
            {"key": "StoreId", "value": "s"},
            {"key": "UserId", "value": "u"},
            {"key": "Password", "value": "p"},
        ],
    },
    "nullFail": {"paymentGatewayName": "NULLFailure", "credentials": []},
}


class Shop:
    def __init__(self, client: TestClient, tenant: Tenant) -> None:
        self.client = client
        self.tenant = tenant

    def rules(self, text: str) -> None:
        self.tenant.rules.add(parse_rules(text, "test"))

    def pay(
        self, primary: str, *fallbacks: str | dict[str, Any], operation: str = "charge", **changes: Any
    ) -> tuple[int, dict[str, Any]]:
        upgs = [f if isinstance(f, dict) else {"paymentGatewayAccountName": f} for f in fallbacks]
        body = {
            "amount": 30.0,
            "currency": "USD",
            "card": dict(CARD),
            "paymentGatewayAccountName": primary,
            "fallbackUpgs": upgs,
            "myRef": "order-1",
            **changes,
        }
        response = self.client.post(f"/PaymentGateway/{operation}", json=body)
        return response.status_code, response.json()

    def last_attempts(self) -> list[dict[str, Any]]:
        return list(self.tenant.journal)[-1]["attempts"]


@pytest.fixture
def shop_factory(make_app: Callable[..., Starlette]) -> Iterator[Callable[..., Shop]]:
    clients: list[TestClient] = []

    def make(**settings: Any) -> Shop:
        app = make_app(keys=KEYS, **settings)
        client = TestClient(app, headers=SANDBOX)
        client.__enter__()
        clients.append(client)
        for name, account in ACCOUNTS.items():
            assert client.put(f"/PaymentGatewayAccounts/{name}", json=account).status_code == 200
        return Shop(client, app.state.runtime.tenants.get("sandbox-api-key"))

    yield make
    for client in clients:
        client.__exit__(None, None, None)


@pytest.fixture
def shop(shop_factory: Callable[..., Shop]) -> Shop:
    return shop_factory()


def test_chain_of_one_fallback(shop: Shop) -> None:
    status, body = shop.pay("nullFail", "stripeMain")
    assert status == 200
    assert body["gatewayName"] == "Stripe"
    assert body["operationResultCode"] == "Success"
    attempts = shop.last_attempts()
    assert [(a["attemptNumber"], a["gatewayName"], a["isFallback"]) for a in attempts] == [
        (1, "NULLFailure", False),
        (2, "Stripe", True),
    ]
    assert attempts[0]["result"]["rejectReasonCode"] == "CardDeclined"
    assert attempts[1]["result"]["gatewayReference"] == body["gatewayReference"]
    assert len(shop.tenant.ledger) == 2, "the declined attempt is a transaction too"


def test_chain_of_two_fallbacks_each_failure_kind(shop: Shop) -> None:
    shop.rules("""
- {name: s, when: {gateway: Stripe}, then: {operationResultCode: TemporaryFailure}}
- {name: a, when: {gateway: Adyen}, then: {operationResultCode: FatalFailure}}
""")
    status, body = shop.pay("stripeMain", "adyenMain", "elavonMain")
    assert status == 200
    assert body["gatewayName"] == "Elavon"
    codes = [a["result"]["operationResultCode"] for a in shop.last_attempts()]
    assert codes == ["TemporaryFailure", "FatalFailure", "Success"]


def test_chain_of_three_fallbacks_answers_the_last_failure(shop: Shop) -> None:
    shop.rules("""
- {name: s, when: {gateway: Stripe}, then: {operationResultCode: NotImplemented}}
- {name: a, when: {gateway: Adyen}, then: {operationResultCode: Rejected, rejectReasonCode: LimitExceeded}}
- {name: e, when: {gateway: Elavon}, then: {operationResultCode: FatalFailure}}
- {name: w, when: {gateway: Worldpay}, then: {operationResultCode: TemporaryFailure}}
""")
    status, body = shop.pay("stripeMain", "adyenMain", "elavonMain", "worldpayMain", operation="authorize")
    assert status == 503
    assert body["gatewayName"] == "Worldpay"
    assert body["operationResultCode"] == "TemporaryFailure"
    attempts = shop.last_attempts()
    assert [a["gatewayName"] for a in attempts] == ["Stripe", "Adyen", "Elavon", "Worldpay"]
    assert [a["attemptNumber"] for a in attempts] == [1, 2, 3, 4]
    assert len({a["result"]["gatewayReference"] for a in attempts}) == 4


def test_first_success_stops_the_chain(shop: Shop) -> None:
    status, body = shop.pay("stripeMain", "adyenMain", "elavonMain")
    assert status == 200
    assert body["gatewayName"] == "Stripe"
    assert len(shop.last_attempts()) == 1


def test_accepted_stops_the_chain(shop: Shop) -> None:
    status, body = shop.pay("stripeMain", "adyenMain", amount=9001.0)
    assert status == 202
    assert body["gatewayName"] == "Stripe"
    assert len(shop.last_attempts()) == 1


def test_attempt_numbers_drive_scenarios(shop: Shop) -> None:
    shop.rules("{name: two, when: {attempt: 2}, then: {operationResultCode: Rejected, rejectReasonCode: DoNotHonor}}")
    status, body = shop.pay("stripeMain", "adyenMain", "elavonMain", amount=9020.0)
    assert status == 200
    assert body["gatewayName"] == "Elavon"
    reasons = [a["result"]["rejectReasonCode"] for a in shop.last_attempts()]
    assert reasons == [None, "DoNotHonor", None]


def test_capture_after_a_failover_authorize_must_use_the_fallbacks_gateway(shop: Shop) -> None:
    status, body = shop.pay("stripeMain", "adyenMain", operation="authorize", amount=9020.0)
    assert status == 200
    assert body["gatewayName"] == "Adyen"
    capture = {"refTransId": body["gatewayReference"], "amount": 30.0, "currency": "USD", "card": dict(CARD)}
    wrong = shop.client.put("/PaymentGateway/capture", json={**capture, "paymentGatewayAccountName": "stripeMain"})
    assert wrong.status_code == 409
    assert wrong.json()["rejectReasonCode"] == "GatewayMismatch"
    assert "Adyen" in wrong.json()["operationResultDescription"]
    right = shop.client.put("/PaymentGateway/capture", json={**capture, "paymentGatewayAccountName": "adyenMain"})
    assert right.status_code == 200
    assert right.json()["gatewayName"] == "Adyen"
    tx = shop.tenant.ledger[body["gatewayReference"]]
    assert (tx.gateway, tx.account, tx.attempt_number) == ("Adyen", "adyenMain", 2)


def test_hard_declines_fall_over_by_default(shop: Shop) -> None:
    status, body = shop.pay(
        "stripeMain", "adyenMain", card=dict(CARD, cardNumber="4000009011000000")
    )  # payemu's card: declines on every gateway
    assert status == 409
    assert body["gatewayName"] == "Adyen"
    assert len(shop.last_attempts()) == 2


def test_recoverable_only_keeps_hard_declines(shop_factory: Callable[..., Shop]) -> None:
    shop = shop_factory(failover="recoverable-only")
    status, body = shop.pay(
        "stripeMain", "adyenMain", card=dict(CARD, cardNumber="4000009011000000")
    )  # payemu's card: declines on every gateway
    assert status == 409
    assert body["rejectReasonCode"] == "InsufficientFunds"
    assert body["gatewayName"] == "Stripe"
    assert len(shop.last_attempts()) == 1
    status, body = shop.pay("stripeMain", "adyenMain", amount=9013.0)  # InvalidCardNumber: ends the chain
    assert len(shop.last_attempts()) == 1
    status, body = shop.pay("stripeMain", "adyenMain", amount=9020.0)  # TemporaryFailure on the primary
    assert status == 200
    assert body["gatewayName"] == "Adyen"


def test_fallback_certificates(shop: Shop) -> None:
    payer = {"clientIPAddress": "203.0.113.7", "countryCode": "US"}
    status, body = shop.pay(
        "nullFail", {"paymentGatewayAccountName": "ipgMain", "paymentGatewayCertName": "ipgCert"}, payerDetails=payer
    )
    assert status == 200
    assert body["gatewayName"] == "FirstDataIPG"
    status, body = shop.pay("nullFail", "ipgMain", payerDetails=payer)
    assert status == 409
    assert "paymentGatewayCertName" in body["operationResultDescription"]
    status, body = shop.pay("nullFail", {"paymentGatewayAccountName": "ipgMain", "paymentGatewayCertName": "other"})
    assert status == 400
    assert body[0]["fieldName"] == "fallbackUpgs[0].paymentGatewayCertName"


def test_unknown_fallback_is_refused_before_any_attempt(shop: Shop) -> None:
    status, body = shop.pay("stripeMain", "adyenMain", "ghost")
    assert status == 400
    assert body == [
        {
            "fieldName": "fallbackUpgs[1].paymentGatewayAccountName",
            "errors": ["No stored payment gateway account named 'ghost'."],
        }
    ]
    assert shop.tenant.ledger == {}


def test_inline_primary_with_stored_fallbacks(shop: Shop) -> None:
    status, body = shop.pay("ignored", "stripeMain", paymentGatewayAccount={"paymentGatewayName": "NULLFailure"})
    assert status == 200
    assert body["gatewayName"] == "Stripe"
    assert [a["paymentGatewayAccountName"] for a in shop.last_attempts()] == [None, "stripeMain"]


def test_every_attempt_is_a_transaction_status_can_find(shop: Shop) -> None:
    shop.pay("nullFail", "stripeMain")
    first, second = (a["result"]["gatewayReference"] for a in shop.last_attempts())
    inline = {"paymentGatewayName": "NULLFailure"}
    declined = shop.client.post("/PaymentGateway/status", json={"refTransId": first, "paymentGatewayAccount": inline})
    assert declined.status_code == 409
    assert declined.json()["rejectReasonCode"] == "CardDeclined"
    lookup = {"myRef": "order-1", "paymentGatewayAccountName": "stripeMain"}
    found = shop.client.post("/PaymentGateway/status", json=lookup)
    assert found.status_code == 200
    assert found.json()["gatewayReference"] == second


VELOCITY = "4000000000006975"  # Stripe's card_velocity_exceeded test card (docs.stripe.com/testing)


def test_a_gateway_native_decline_falls_over_by_default(shop: Shop) -> None:
    """The interface document's reading (`failover: all`): Stripe's velocity decline goes on to Adyen."""
    status, body = shop.pay("stripeMain", "adyenMain", card=dict(CARD, cardNumber=VELOCITY))
    attempts = shop.last_attempts()
    assert status == 200
    assert len(attempts) == 2
    assert attempts[0]["result"]["gatewayResultCode"] == "card_velocity_exceeded"
    assert body["gatewayName"] == "Adyen"


def test_a_gateway_native_decline_ends_the_chain_when_its_class_says_so(shop_factory: Callable[..., Shop]) -> None:
    """`failover: recoverable-only`: LimitExceeded is an issuer's decline in the one table."""
    from emulator.engine.failover import non_recoverable

    assert "LimitExceeded" in non_recoverable()
    shop = shop_factory(failover="recoverable-only")
    status, body = shop.pay("stripeMain", "adyenMain", card=dict(CARD, cardNumber=VELOCITY))
    assert status == 409
    assert body["gatewayResultCode"] == "card_velocity_exceeded"
    assert body["gatewayName"] == "Stripe"
    assert len(shop.last_attempts()) == 1
    status, body = shop.pay("stripeMain", "adyenMain", amount=0.49)  # InvalidAmount: Stripe's own minimum
    assert body["gatewayName"] == "Adyen"
    assert len(shop.last_attempts()) == 2


def test_every_failure_payemu_answers_has_one_class() -> None:
    from emulator.domain.vocabulary import SUCCESSFUL, RejectReason, ResultCode
    from emulator.engine.failover import classes

    codes = [c.code for c in classes()]
    assert len(codes) == len(set(codes))
    failed = {r.value for r in RejectReason} | {c.value for c in ResultCode if c not in SUCCESSFUL and c != "Rejected"}
    assert set(codes) == failed
    assert all(c.source.startswith("https://") or not c.source for c in classes())
