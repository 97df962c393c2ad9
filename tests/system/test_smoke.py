"""A smoke test of a real ``payemu serve`` over its socket: every page, every control call
and every payment operation answers as it should. CI runs it on the lowest and on the
newest uvicorn and Starlette the pins allow (``.ci/run``)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.support.bodies import CARD
from tests.support.servers import HEALTH, PayemuProcess

KEY = {"X-Api-Key": "sandbox-api-key"}
ACCOUNT = {"paymentGatewayName": "Stripe", "credentials": [{"key": "SecretKey", "value": "sk_test_main"}]}
PAY = {"amount": 25.0, "currency": "USD", "paymentGatewayAccountName": "main", "card": {**CARD, "cvv": "123"}}


@pytest.fixture(scope="module")
def client() -> Iterator[httpx.Client]:
    with PayemuProcess("serve", "--log-level", "warning", "--card-form-port", "0") as process:
        with httpx.Client(base_url=process.url, headers=KEY, timeout=30) as made:
            yield made
        status, output = process.stop()
        assert status == 0, output


def ok(answer: httpx.Response, status: int = 200) -> Any:
    assert answer.status_code == status, f"{answer.request.method} {answer.request.url}: {answer.text[:300]}"
    return answer.json() if answer.headers.get("content-type", "").startswith("application/json") else answer.text


PAGES = ["/", "/docs", "/_emulator/", "/favicon.ico"]


@pytest.mark.parametrize("path", PAGES)
def test_every_page_answers(client: httpx.Client, path: str) -> None:
    answer = client.get(path, headers={"Accept": "text/html"})
    assert answer.status_code == 200, answer.text[:300]
    assert answer.headers["content-type"].startswith(("text/html", "image/svg+xml"))
    assert answer.text.lstrip().startswith(("<!doctype html>", "<svg"))


def test_every_control_call_answers(client: httpx.Client) -> None:
    assert ok(client.get(HEALTH))["status"] == "ok"
    assert ok(client.get("/_emulator/openapi.json"))["openapi"].startswith("3.")
    assert ok(client.get("/swagger/1.0/swagger.json"))["paths"]
    made = ok(client.post("/_emulator/tenants", json={"sandbox": True}), 201)
    other = {"X-Api-Key": made["apiKey"]}
    assert any(t["accountId"] == made["accountId"] for t in ok(client.get("/_emulator/tenants"))["tenants"])
    rule = {"name": "smoke", "when": {"amount": 1.23}, "then": {"operationResultCode": "Rejected"}}
    assert ok(client.post("/_emulator/scenarios", json=rule), 201)["rules"][0]["name"] == "smoke"
    assert "smoke" in [r["name"] for r in ok(client.get("/_emulator/scenarios"))["rules"]]
    assert ok(client.delete("/_emulator/scenarios/smoke"))["removed"] == ["smoke"]
    assert "rules" in ok(client.post("/_emulator/scenarios/reload"))
    ok(client.delete("/_emulator/scenarios"))
    assert "requests" in ok(client.get("/_emulator/requests"))
    assert "transactions" in ok(client.get("/_emulator/transactions"))
    assert ok(client.get("/_emulator/clock"))["frozen"] is False
    assert "now" in ok(client.post("/_emulator/clock", json={"advance": "1d"}))
    assert ok(client.get("/_emulator/certificates"))["certificates"] == []
    assert ok(client.get("/_emulator/interface"))["interfaceVersion"]
    assert ok(client.get("/_emulator/settings"))["strict"] is False
    assert "strict" in ok(client.post("/_emulator/settings", json={"strict": False}))
    ok(client.post("/_emulator/reset", headers=other))
    ok(client.delete("/_emulator/tenants/current", headers=other), 204)
    assert client.get("/Utils/apiKey", headers=other).status_code == 401


def test_every_payment_operation_answers(client: httpx.Client) -> None:
    assert ok(client.get("/Utils/apiKey"))["status"] == "OK"
    assert any(g["name"] == "Stripe" for g in ok(client.get("/PaymentGateway")))
    ok(client.put("/PaymentGatewayAccounts/main", json=ACCOUNT))
    assert ok(client.get("/PaymentGatewayAccounts/main"))["paymentGatewayName"] == "Stripe"
    assert any(a["name"] == "main" for a in ok(client.get("/PaymentGatewayAccounts")))
    charge = ok(client.post("/PaymentGateway/charge", json=PAY))
    assert charge["operationResultCode"] == "Success"
    auth = ok(client.post("/PaymentGateway/authorize", json=PAY))
    assert auth["operationType"] == "PreAuth"
    refer = {**PAY, "refTransId": auth["gatewayReference"]}
    assert ok(client.put("/PaymentGateway/capture", json=refer))["operationType"] == "Capture"
    second = ok(client.post("/PaymentGateway/authorize", json=PAY))
    voided = ok(
        client.request("DELETE", "/PaymentGateway/void", json={**PAY, "refTransId": second["gatewayReference"]})
    )
    assert voided["operationType"] == "Void"
    refund = ok(client.put("/PaymentGateway/refund", json={**PAY, "refTransId": charge["gatewayReference"]}))
    assert refund["operationType"] == "Refund"
    status = {"paymentGatewayAccountName": "main", "refTransId": charge["gatewayReference"]}
    assert ok(client.post("/PaymentGateway/status", json=status))["operationResultCode"] == "Success"
    token = ok(client.post("/PaymentGateway/tokenize", json={"paymentGatewayAccountName": "main", "card": CARD}))
    assert token["gatewayToken"]
    stored = ok(client.post("/StringTokens", json={"payload": "smoke"}), 201)["token"]
    assert ok(client.get(f"/StringTokens/{stored}"))["clearPayload"] == "smoke"
    assert ok(client.get(f"/StringTokens/{stored}/meta"))["token"] == stored
    assert client.delete(f"/StringTokens/{stored}").status_code == 200
    assert ok(client.get("/Tools/iin", params={"iin": "411111"}))["cardBrand"] == "VISA"
    for path, name, value in (
        ("/Tools/country", "iin", "411111"),
        ("/Tools/brand", "iin", "411111"),
        ("/Tools/luhn", "number", "4111111111111111"),
    ):
        ok(client.get(path, params={name: value}))
    ok(
        client.post(
            "/Tools/validate", params={"iin": "411111"}, json={"clientIPAddress": "203.0.113.7", "countryCode": "US"}
        )
    )
    assert client.delete("/PaymentGatewayAccounts/main").status_code == 200


def test_the_ewallet_session_its_payment_page_and_its_result(client: httpx.Client) -> None:
    ok(client.put("/PaymentGatewayAccounts/wallet", json=ACCOUNT))
    body = {
        "operation": "CHARGE",
        "mode": "TEST",
        "currencyCode": "EUR",
        "amount": 42.5,
        "paymentGatewayAccountId": "wallet",
        "customerName": "Jane Doe",
    }
    session = client.post("/EWalletOperations", json=body)
    token = ok(session)["token"]
    page = client.get(f"/_emulator/pay/{token}", headers={"Accept": "text/html"})
    assert page.status_code == 200
    assert page.headers["content-type"].startswith("text/html")
    paid = ok(client.post(f"/_emulator/pay/{token}", json={"card": {**CARD, "cvv": "123"}}))
    results = ok(client.post("/EWalletOperations/validateResults", json=paid["resultToken"]))
    assert results["upgChargeResults"]["operationResultCode"] == "Success"
