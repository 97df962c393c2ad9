"""--seed: the same requests in the same order give byte-identical responses per tenant,
whatever other tenants do in between; another seed gives other ids."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from starlette.applications import Starlette
from starlette.testclient import TestClient

from tests.conftest import LIVE, SANDBOX
from tests.support.bodies import card

CARD = card(cardHolderName="Ada Lovelace", cardNumber="4242424242424242", cvv="123")
DECLINED = "4000000000009995"  # a built-in test card: insufficient funds


def _steps() -> Iterator[tuple[str, str, Any]]:
    """The sequence under test: accounts, payments and the ledger, tokens, a runtime
    scenario, the clock. ``{ref}`` is filled with the previous payment's reference."""
    stripe = {"paymentGatewayName": "Stripe", "credentials": [{"key": "SecretKey", "value": "sk_test_1"}]}
    yield "PUT", "/PaymentGatewayAccounts/main", stripe
    yield "GET", "/PaymentGatewayAccounts/main", None
    charge = {"amount": 12.5, "currency": "USD", "card": CARD, "paymentGatewayAccountName": "main", "myRef": "order-1"}
    yield "POST", "/PaymentGateway/charge", charge
    yield (
        "PUT",
        "/PaymentGateway/refund",
        {"refTransId": "{ref}", "amount": 2.5, "currency": "USD", "paymentGatewayAccountName": "main", "card": CARD},
    )
    yield "POST", "/PaymentGateway/authorize", {**charge, "amount": 30.0, "generateToken": True}
    yield (
        "PUT",
        "/PaymentGateway/capture",
        {"refTransId": "{ref}", "amount": 30.0, "currency": "USD", "paymentGatewayAccountName": "main", "card": CARD},
    )
    yield "POST", "/PaymentGateway/charge", {**charge, "card": {**CARD, "cardNumber": DECLINED}}
    yield "POST", "/PaymentGateway/tokenize", {"card": CARD, "paymentGatewayAccountName": "main"}
    yield "POST", "/StringTokens", {"payload": "4111111111111111"}
    yield (
        "POST",
        "/_emulator/scenarios",
        {
            "name": "flaky",
            "when": {"amount": 7},
            "sequence": [{"operationResultCode": "TemporaryFailure"}, {"operationResultCode": "Success"}],
        },
    )
    yield "POST", "/PaymentGateway/charge", {**charge, "amount": 7.0}
    yield "POST", "/PaymentGateway/charge", {**charge, "amount": 7.0}
    yield "POST", "/_emulator/clock", {"advance": "8d"}
    yield "POST", "/PaymentGateway/authorize", {**charge, "amount": 8.0}
    yield "GET", "/_emulator/transactions", None
    yield "GET", "/Utils/apiKey", None


def _noise(client: TestClient, round_: int) -> None:
    """Another tenant's traffic, different every round."""
    card = {**CARD, "cardNumber": "5555555555554444"}
    client.post(
        "/PaymentGateway/charge",
        headers=LIVE,
        json={
            "amount": 1.0 + round_,
            "currency": "EUR",
            "card": card,
            "paymentGatewayAccount": {"paymentGatewayName": "NULLSuccess"},
        },
    )
    client.post("/StringTokens", headers=LIVE, json={"payload": f"noise {round_}"})
    client.post("/_emulator/tenants", json={})


def _run(make_app: Callable[..., Starlette], seed: int | None, noise: bool) -> list[bytes]:
    bodies: list[bytes] = []
    reference = ""
    with TestClient(make_app(seed=seed), headers=SANDBOX) as client:
        for round_, (method, path, body) in enumerate(_steps()):
            if noise:
                _noise(client, round_)
            if isinstance(body, dict) and body.get("refTransId") == "{ref}":
                body = {**body, "refTransId": reference}
            response = client.request(method, path, json=body)
            assert response.status_code < 500 or path.endswith("charge"), (path, response.text)
            bodies.append(f"{method} {path} {response.status_code} ".encode() + response.content)
            if path.startswith("/PaymentGateway/") and response.headers.get("content-type") == "application/json":
                reference = response.json().get("gatewayReference") or reference
    return bodies


def test_same_seed_same_bytes_whatever_other_tenants_do(make_app: Callable[..., Starlette]) -> None:
    quiet = _run(make_app, 42, noise=False)
    busy = _run(make_app, 42, noise=True)
    for a, b in zip(quiet, busy, strict=True):
        assert a == b
    statuses = [line.split(b" ")[2] for line in quiet]
    assert b"409" in statuses
    assert b"503" in statuses
    assert quiet[2].count(b'"gatewayReference":"ch_') == 1


def test_another_seed_other_ids(make_app: Callable[..., Starlette]) -> None:
    first, other = _run(make_app, 42, noise=False), _run(make_app, 43, noise=False)
    assert first[2] != other[2]  # the charge's reference and codes, the clock's start
    unseeded = [_run(make_app, None, noise=False)[2] for _ in range(2)]
    assert unseeded[0] != unseeded[1]
