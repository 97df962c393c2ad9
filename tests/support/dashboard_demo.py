"""A tenant's worth of payments for the dashboard's tests and screenshots: :func:`populate`
makes ten payments as a demo would (a decline, a failover, an eWallet session with its
long token URLs, every result code the gateways give), :func:`many` adds plain charges.
Works with any httpx client: TestClient in-process, or a running payemu."""

from __future__ import annotations

from typing import Any

import httpx

from tests.support.bodies import card

CARD = card(cardHolderName="Jane Doe", expirationYear=2031, cvv="123")
DECLINED_CARD = {**CARD, "cardNumber": "4000000000000002"}
ADYEN = {
    "paymentGatewayName": "Adyen",
    "credentials": [
        {"key": "ApiKey", "value": "AQE1hmfxL0-demo-secret"},
        {"key": "MerchantAccount", "value": "ShopEU"},
    ],
}
# test amounts of the built-in scenarios (emulator/data/default-scenarios.yaml) → outcome
AMOUNTS = {
    "Accepted": 9041.00,  # the demo's own rule (PENDING): stays Accepted, the built-in 9001.00 settles after 5 s
    "TemporaryFailure": 9005.00,
    "FatalFailure": 9006.00,
    "NotImplemented": 9007.00,
}


def accounts(client: httpx.Client) -> None:
    """``failing`` (NULLFailure: declines), ``backup`` (NULLSuccess), ``adyen`` (Adyen:
    follows the built-in test cards and amounts)."""
    for name, body in (
        ("failing", {"paymentGatewayName": "NULLFailure", "credentials": []}),
        ("backup", {"paymentGatewayName": "NULLSuccess", "credentials": []}),
        ("adyen", ADYEN),
    ):
        stored = client.put(f"/PaymentGatewayAccounts/{name}", json=body)
        assert stored.status_code == 200, stored.text


def _charge(client: httpx.Client, path: str = "/PaymentGateway/charge", **body: Any) -> dict[str, Any]:
    answer = client.post(path, json={"currency": "USD", "card": CARD, "paymentGatewayAccountName": "adyen", **body})
    assert answer.status_code < 500 or answer.json()["operationResultCode"] in ("FatalFailure", "TemporaryFailure")
    data: dict[str, Any] = answer.json()
    assert data["gatewayReference"], answer.text
    return data


PENDING = {
    "name": "demo-pending",
    "description": "the gateway takes its time: Accepted, never settled",
    "when": {"amount": 9041.00, "operation": ["Charge", "PreAuth"]},
    "then": {"operationResultCode": "Accepted"},
}


def populate(client: httpx.Client) -> dict[str, Any]:
    """Ten payments (and a capture, a refund, a status check and a void on two of them).
    Returns the references that matter: ``failover`` (the reference the merchant got:
    its second attempt's), ``declined``, ``captured`` (an authorization captured,
    refunded in part and looked up), ``voided``, ``session`` (the paid eWallet token),
    ``paid`` (its reference) and the ``page`` URL of a second, still open session."""
    accounts(client)
    added = client.post("/_emulator/scenarios", json=PENDING)
    assert added.status_code == 201, added.text
    made: dict[str, Any] = {}
    made["success"] = _charge(client, amount=25.0, myRef="order-1001")["gatewayReference"]
    made["declined"] = _charge(client, amount=40.0, card=DECLINED_CARD, myRef="order-1002")["gatewayReference"]
    failover = _charge(
        client,
        amount=120.0,
        myRef="order-1003",
        paymentGatewayAccountName="failing",
        fallbackUpgs=[{"paymentGatewayAccountName": "backup"}],
    )
    assert failover["operationResultCode"] == "Success"
    made["failover"] = failover["gatewayReference"]
    for code, amount in AMOUNTS.items():
        answer = _charge(client, amount=amount, myRef=f"order-{code}")
        assert answer["operationResultCode"] == code, answer
        made[code] = answer["gatewayReference"]
    auth = _charge(client, "/PaymentGateway/authorize", amount=80.0, myRef="order-1008")["gatewayReference"]
    captured = client.put(
        "/PaymentGateway/capture",
        json={"refTransId": auth, "amount": 80, "currency": "USD", "paymentGatewayAccountName": "adyen", "card": CARD},
    )
    assert captured.status_code == 200, captured.text
    refunded = client.put(
        "/PaymentGateway/refund",
        json={
            "refTransId": captured.json()["gatewayReference"],
            "amount": 15,
            "currency": "USD",
            "paymentGatewayAccountName": "adyen",
            "card": CARD,
        },
    )
    assert refunded.status_code == 200, refunded.text
    status = client.post("/PaymentGateway/status", json={"refTransId": auth, "paymentGatewayAccountName": "adyen"})
    assert status.status_code == 200, status.text
    made["captured"] = auth
    held = _charge(client, "/PaymentGateway/authorize", amount=60.0, myRef="order-1009")["gatewayReference"]
    voided = client.request(
        "DELETE",
        "/PaymentGateway/void",
        json={"refTransId": held, "amount": 60, "currency": "USD", "paymentGatewayAccountName": "adyen", "card": CARD},
    )
    assert voided.status_code == 200, voided.text
    made["voided"] = held
    made["session"], made["paid"] = _ewallet(client, pay=True)
    made["page"] = _ewallet(client, pay=False)[1]
    return made


def _ewallet(client: httpx.Client, pay: bool) -> tuple[str, str]:
    """An eWallet CHARGE session (primary ``failing``, fallback ``backup``): paid on its
    hosted page (→ the token and the reference) or left open (→ the token and the page)."""
    card = client.post("/StringTokens", json={"payload": CARD["cardNumber"]})
    assert card.status_code == 201, card.text
    body = {
        "operation": "CHARGE",
        "mode": "TEST",
        "currencyCode": "EUR",
        "amount": 42.5,
        "paymentGatewayAccountId": "failing",
        "fallbackUpgs": [{"paymentGatewayAccountId": "backup"}],
        "customerName": "Jane Doe",
        "storedCards": [
            {"token": card.json()["token"], "lastDigits": "1111", "expirationMonth": 12, "expirationYear": 2031}
        ],
    }
    session = client.post("/EWalletOperations", json=body)
    assert session.status_code == 200, session.text
    token = session.json()["token"]
    if not pay:
        return token, session.headers["x-payemu-payment-page"]
    paid = client.post(f"/_emulator/pay/{token}", json={"storedCard": 0, "cvv": "123"})
    assert paid.status_code == 200, paid.text
    return token, paid.json()["gatewayReference"]


def many(client: httpx.Client, count: int) -> None:
    """``count`` charges of 1.00, 2.00 … on ``backup``."""
    for index in range(count):
        answer = client.post(
            "/PaymentGateway/charge",
            json={"amount": index + 1, "currency": "USD", "card": CARD, "paymentGatewayAccountName": "backup"},
        )
        assert answer.status_code == 200, answer.text
