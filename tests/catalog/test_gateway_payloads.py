"""Gateway payloads that survive a close look (catalog responseByResult/Operation)."""

from __future__ import annotations

from typing import Any

from starlette.testclient import TestClient

from tests.support.bodies import account, card

CARD = card(cardHolderName="Jane Doe", cardNumber="4242424242424242", cvv="123")
STRIPE = account("Stripe", SecretKey="sk_test_1")
ADYEN = {
    "paymentGatewayName": "Adyen",
    "credentials": [{"key": "ApiKey", "value": "k"}, {"key": "MerchantAccount", "value": "m"}],
}


def _charge(
    client: TestClient,
    account: dict[str, Any],
    number: str = "4242424242424242",
    path: str = "/PaymentGateway/charge",
    amount: float = 10,
) -> dict[str, Any]:
    body = {
        "amount": amount,
        "currency": "USD",
        "card": {**CARD, "cardNumber": number},
        "paymentGatewayAccount": account,
    }
    answer: dict[str, Any] = client.post(path, json=body).json()
    return answer


def test_stripe_decline_is_not_approved_by_the_network(client: TestClient) -> None:
    declined = _charge(client, STRIPE, "4000000000000002")["customGatewayResponse"]
    approved = _charge(client, STRIPE)["customGatewayResponse"]
    assert declined["outcome"]["network_status"] == "declined_by_network"
    assert declined["failure_code"] == "card_declined"
    assert approved["outcome"]["network_status"] == "approved_by_network"
    assert approved["failure_code"] is None  # a charge object always carries it (null when it succeeded)


def test_adyen_success_has_no_refusal_reason(client: TestClient) -> None:
    approved = _charge(client, ADYEN)["customGatewayResponse"]
    declined = _charge(client, ADYEN, "4000009011000000")["customGatewayResponse"]  # payemu's insufficient funds
    assert "refusalReason" not in approved
    assert declined["refusalReason"] == "Not enough balance"
    assert declined["refusalReasonCode"] == "12"
    assert "authCode" not in declined


def test_authorization_code_only_on_an_approved_payment(client: TestClient) -> None:
    assert _charge(client, STRIPE)["authorizationCode"] is not None
    assert _charge(client, STRIPE, path="/PaymentGateway/authorize")["authorizationCode"] is not None
    assert _charge(client, STRIPE, "4000009001000002")["authorizationCode"] is None  # payemu's Accepted card
    assert _charge(client, STRIPE, "4000000000000002")["authorizationCode"] is None


def test_stripe_tokenize_answers_a_payment_method(client: TestClient) -> None:
    answer = client.post("/PaymentGateway/tokenize", json={"card": CARD, "paymentGatewayAccount": STRIPE}).json()
    payload = answer["customGatewayResponse"]
    assert payload["object"] == "payment_method"
    assert payload["id"] == answer["gatewayToken"]


def test_status_of_an_expired_authorization_says_expired(client: TestClient) -> None:
    authorized = _charge(client, STRIPE, path="/PaymentGateway/authorize")
    client.post("/_emulator/clock", json={"advance": "8d"})
    status = client.post(
        "/PaymentGateway/status", json={"refTransId": authorized["gatewayReference"], "paymentGatewayAccount": STRIPE}
    ).json()
    assert status["operationResultDescription"] == "Transaction found: Expired."
    assert status["gatewayResultCode"] == "canceled"
    assert status["customGatewayResponse"]["status"] == "succeeded"  # Stripe refunds an expired uncaptured charge
    assert status["customGatewayResponse"]["refunded"] is True
