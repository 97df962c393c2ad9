"""Control: the tenant's ledger, masked, with states read on the tenant's clock."""

from __future__ import annotations

import json

from starlette.testclient import TestClient

from tests.conftest import LIVE
from tests.support.bodies import STRIPE, card

CARD = card(cardHolderName="Ada", cardNumber="4242424242424242", cvv="123")


def test_the_ledger_with_states_on_the_tenants_clock(client: TestClient) -> None:
    assert client.get("/_emulator/transactions").json() == {"transactions": [], "next": None}
    body = {"amount": 20.0, "currency": "USD", "card": CARD, "paymentGatewayAccount": STRIPE}
    charge = client.post("/PaymentGateway/charge", json=body).json()
    auth = client.post("/PaymentGateway/authorize", json={**body, "amount": 30.0}).json()
    listed = client.get("/_emulator/transactions").json()["transactions"]
    assert [(t["reference"], t["operation"], t["state"], t["amount"]) for t in listed] == [
        (charge["gatewayReference"], "Charge", "Charged", 20.0),
        (auth["gatewayReference"], "PreAuth", "Authorized", 30.0),
    ]
    assert listed[0]["cardMasked"] == "424242******4242"
    text = json.dumps(listed)
    assert "4242424242424242" not in text
    assert "cvv" not in text.lower()
    client.post("/_emulator/clock", json={"advance": "8d"})
    states = [t["state"] for t in client.get("/_emulator/transactions").json()["transactions"]]
    assert states == ["Charged", "Expired"]
    assert client.get("/_emulator/transactions", headers=LIVE).json() == {"transactions": [], "next": None}


def test_the_ledger_is_paged_with_a_cursor(client: TestClient) -> None:
    body = {"amount": 5.0, "currency": "USD", "card": CARD, "paymentGatewayAccount": STRIPE}
    made = [client.post("/PaymentGateway/charge", json=body).json()["gatewayReference"] for _ in range(5)]
    seen: list[str] = []
    after: str | None = None
    pages = 0
    while True:
        params = {"pageSize": 2, **({"after": after} if after else {})}
        page = client.get("/_emulator/transactions", params=params).json()
        seen += [t["reference"] for t in page["transactions"]]
        pages += 1
        after = page["next"]
        if after is None:
            break
    assert seen == made
    assert pages == 3


def test_an_unknown_cursor_is_a_400(client: TestClient) -> None:
    answer = client.get("/_emulator/transactions", params={"after": "nope"})
    assert answer.status_code == 400
    assert answer.json()[0]["fieldName"] == "after"


def test_a_page_of_big_transactions_is_bounded_in_bytes(client: TestClient) -> None:
    from emulator.control.transactions import PAGE_BYTES

    body = {"amount": 20.0, "currency": "USD", "card": CARD, "paymentGatewayAccount": STRIPE}
    made = [
        client.post("/PaymentGateway/charge", json={**body, "myRef": f"{n}" + "m" * 512 * 1024}).json()
        for n in range(12)
    ]
    seen: list[str] = []
    cursor = None
    while True:
        page = client.get("/_emulator/transactions", params={"after": cursor} if cursor else {})
        assert page.status_code == 200
        assert len(page.content) <= PAGE_BYTES
        seen += [t["reference"] for t in page.json()["transactions"]]
        cursor = page.json()["next"]
        if cursor is None:
            break
    assert seen == [answer["gatewayReference"] for answer in made]
