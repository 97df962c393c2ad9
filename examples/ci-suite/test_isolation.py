"""Many tests fighting over one card: each adds its own rule for it, with a delay so that
parallel workers' requests overlap, and must see only its own outcome and requests."""

import pytest

CARD = {
    "cardHolderName": "Grace Hopper",
    "cardNumber": "5555555555554444",
    "expirationMonth": 1,
    "expirationYear": 2031,
    "cvv": "4321",
}
REASONS = ["CardDeclined", "InsufficientFunds", "ExpiredCard", "DoNotHonor", "LimitExceeded", "SuspectedFraud"]


@pytest.mark.parametrize("case", range(16))
def test_only_my_rule_and_my_requests(payemu, case):
    reason = REASONS[case % len(REASONS)]
    payemu.add_scenario(
        {
            "name": "the-card",
            "when": {"cardNumber": CARD["cardNumber"]},
            "then": {"operationResultCode": "Rejected", "rejectReasonCode": reason, "delayMs": 25},
        }
    )
    body = {
        "amount": 10.0 + case,
        "currency": "USD",
        "card": CARD,
        "paymentGatewayAccount": {
            "paymentGatewayName": "Stripe",
            "credentials": [{"key": "SecretKey", "value": "sk_test_case"}],
        },
        "myRef": f"case-{case}",
    }
    for _ in range(2):
        response = payemu.client.post("/PaymentGateway/charge", json=body)
        assert response.status_code == 409
        assert response.json()["rejectReasonCode"] == reason

    journal = payemu.requests()
    assert [(e["path"], e["request"]["myRef"]) for e in journal] == [("/PaymentGateway/charge", f"case-{case}")] * 2
    assert [r["name"] for r in payemu.scenarios() if r["source"] == "runtime"] == ["the-card"]
    assert [t["amount"] for t in payemu.transactions()] == [10.0 + case] * 2
