"""A checkout service's CI tests, paying through payemu.

The ``payemu`` fixture (payemu's pytest plugin, found through its entry point) gives every
test a fresh isolated tenant of one payemu server: its own stored accounts, scenarios,
journal and clock. So the tests run in any order, and in parallel.
"""

CARD = {
    "cardHolderName": "Ada Lovelace",
    "cardNumber": "4242424242424242",
    "expirationMonth": 12,
    "expirationYear": 2030,
    "cvv": "123",
}


def add_account(payemu, name, gateway, **credentials):
    body = {"paymentGatewayName": gateway, "credentials": [{"key": k, "value": v} for k, v in credentials.items()]}
    assert payemu.client.put(f"/PaymentGatewayAccounts/{name}", json=body).status_code == 200


def pay(payemu, operation, amount, account, **extra):
    body = {"amount": amount, "currency": "USD", "card": CARD, "paymentGatewayAccountName": account, **extra}
    return payemu.client.post(f"/PaymentGateway/{operation}", json=body)


def test_a_scenario_declines_the_charge(payemu):
    add_account(payemu, "shop", "Stripe", SecretKey="sk_test_shop")
    payemu.add_scenario(
        {
            "name": "no-funds",
            "when": {"cardNumber": CARD["cardNumber"], "amount": 42.0},
            "then": {"operationResultCode": "Rejected", "rejectReasonCode": "InsufficientFunds"},
        }
    )

    declined = pay(payemu, "charge", 42.0, "shop")
    assert declined.status_code == 409
    assert declined.json()["rejectReasonCode"] == "InsufficientFunds"
    assert pay(payemu, "charge", 41.0, "shop").status_code == 200


def test_failover_is_visible_in_the_journal(payemu):
    add_account(payemu, "primary", "Stripe", SecretKey="sk_test_primary")
    add_account(payemu, "backup", "Adyen", ApiKey="adyen_test", MerchantAccount="ShopECOM")
    payemu.add_scenario(
        "- name: primary-down\n  when: {account: primary}\n  then: {operationResultCode: TemporaryFailure}\n"
    )

    paid = pay(payemu, "charge", 25.0, "primary", fallbackUpgs=[{"paymentGatewayAccountName": "backup"}])
    assert paid.status_code == 200
    assert paid.json()["gatewayName"] == "Adyen"

    [entry] = payemu.requests(path="/PaymentGateway/charge")
    attempts = [(a["paymentGatewayAccountName"], a["result"]["operationResultCode"]) for a in entry["attempts"]]
    assert attempts == [("primary", "TemporaryFailure"), ("backup", "Success")]
    assert entry["request"]["card"]["cardNumber"] == "424242******4242"
    assert "cvv" not in entry["request"]["card"]


def test_an_authorization_expires_on_the_virtual_clock(payemu):
    add_account(payemu, "shop", "Stripe", SecretKey="sk_test_shop")
    authorized = pay(payemu, "authorize", 30.0, "shop")
    assert authorized.status_code == 200
    reference = authorized.json()["gatewayReference"]

    payemu.advance_clock("8d")  # Stripe keeps an authorization for 7 days

    capture = {
        "refTransId": reference,
        "amount": 30.0,
        "currency": "USD",
        "paymentGatewayAccountName": "shop",
        "card": CARD,
    }
    refused = payemu.client.put("/PaymentGateway/capture", json=capture)
    assert refused.status_code == 409
    assert refused.json()["rejectReasonCode"] == "AuthorizationExpired"
    assert [t["state"] for t in payemu.transactions() if t["reference"] == reference] == ["Expired"]
