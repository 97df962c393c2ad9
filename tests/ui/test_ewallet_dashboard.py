"""The dashboard's view of a tenant: everything there, nothing secret."""

from __future__ import annotations

import json
from typing import Any

from starlette.applications import Starlette
from starlette.testclient import TestClient

from emulator.stores import vault
from emulator.stores.accounts import StoredAccount
from emulator.tenants.tenants import Tenant
from emulator.ui import dashboard
from tests.conftest import SANDBOX
from tests.conftest import setup_ewallet_tenant as setup_tenant

HTML = {"Accept": "text/html"}
SECRET = "sk_test_very_secret_value"


def _busy_tenant(app: Starlette, client: TestClient) -> tuple[Tenant, dict[str, Any]]:
    tenant = app.state.runtime.tenants.get("sandbox-api-key")
    assert tenant is not None
    stored = setup_tenant(tenant)
    tenant.accounts.put(StoredAccount("stripeMain", "Stripe", [("SecretKey", SECRET)], tenant.now()))
    tenant.certificates.register("myClientCert")
    vault.store(tenant, json.dumps({"cardNumber": "5555555555554444", "cvv": "999"}))
    charge = client.post(
        "/PaymentGateway/charge",
        json={
            "amount": 31.25,
            "currency": "GBP",
            "paymentGatewayAccountName": "backup",
            "card": {
                "cardHolderName": "Jane",
                "cardNumber": "4000056655665556",
                "expirationMonth": 1,
                "expirationYear": 2031,
                "cvv": "737",
            },
        },
    )
    assert charge.status_code == 200, charge.text
    session = client.post(
        "/EWalletOperations",
        json={
            "operation": "CHARGE",
            "mode": "TEST",
            "currencyCode": "USD",
            "amount": 9.99,
            "paymentGatewayAccountId": "primary",
            "fallbackUpgs": [{"paymentGatewayAccountId": "backup"}],
            "storedCards": [{"token": stored, "lastDigits": "1111", "expirationMonth": 1, "expirationYear": 2031}],
        },
    )
    paid = client.post(f"/_emulator/pay/{session.json()['token']}", json={"storedCard": 0, "cvv": "123"})
    assert paid.status_code == 200, paid.text
    return tenant, {"charge": charge.json(), "session": session.json()["token"], "paid": paid.json()}


def test_view_has_every_part(app: Starlette, client: TestClient) -> None:
    tenant, made = _busy_tenant(app, client)
    view = dashboard.view(app.state.runtime, tenant, "http://testserver")
    rows = view["payments"].items
    references = [row["p"].reference for row in rows]
    assert references == [made["paid"]["gatewayReference"], made["charge"]["gatewayReference"]]
    assert [len(row["p"].attempts) for row in rows] == [2, 1]  # the page's payment failed over
    assert [row["state"] for row in rows] == ["Charged", "Charged"]
    [session] = view["sessions"].items
    assert session["state"] == "paid"
    assert session["account"] == "backup"
    assert session["pageUrl"] == f"http://testserver/_emulator/pay/{made['session']}"
    assert {a["name"]: a["credentialKeys"] for a in view["accounts"]}["stripeMain"] == ["SecretKey"]
    assert view["certificates"] == ["myClientCert"]
    assert view["tokens"].total == 2
    assert set(view["tokens"].items[0]) == {"token", "createTime", "createdText"}
    assert view["journal"].items[0]["operationId"] == "HostedPagePay"
    assert view["journal_total"] == len(tenant.journal)
    groups = view["rule_groups"]  # payemu's conventions, then each gateway's own triggers
    assert all(group["builtin"] for group in groups)
    assert sum(len(group["rules"]) for group in groups) > 40, "the built-in scenario rules are listed"
    assert "Stripe's own test inputs" in [group["file"] for group in groups]
    assert view["clock"]["now"].endswith("Z")


def test_page_shows_no_secrets(app: Starlette, client: TestClient) -> None:
    _busy_tenant(app, client)
    text = client.get("/_emulator/", headers=HTML).text
    for secret in (SECRET, "4000056655665556", "5555555555554444", "4111111111111111", '"737"', '"999"'):
        assert secret not in text, secret
    assert "400005******5556" in text  # masked card of the charge
    assert "31.25" in text
    assert "GBP" in text


def test_scenario_card_numbers_are_masked(app: Starlette, client: TestClient) -> None:
    tenant = app.state.runtime.tenants.get("sandbox-api-key")
    for row in dashboard.scenario_rows(app.state.runtime, tenant):
        assert not any(len(run) >= 12 for run in "".join(c if c.isdigit() else " " for c in row["when"]).split())


def test_default_key(make_app: Any) -> None:
    app = make_app()
    assert dashboard.default_key(app.state.runtime) == "sandbox-api-key"
    with TestClient(app) as anon:
        assert "sandbox-merchant" in anon.get("/_emulator/", headers=HTML).text


def test_tenants_do_not_mix(app: Starlette, client: TestClient) -> None:
    _, made = _busy_tenant(app, client)
    live = client.get("/_emulator/", params={"key": "live-api-key"}, headers=HTML).text
    assert made["paid"]["gatewayReference"] not in live
    assert made["session"] not in live
    assert (
        client.get("/_emulator/", params={"key": SANDBOX["X-Api-Key"]}, headers=HTML).text.count(
            made["paid"]["gatewayReference"]
        )
        >= 1
    )


def test_dashboard_shows_leniency_warnings_and_keeps_references(client: TestClient) -> None:
    adyen = {
        "paymentGatewayName": "Adyen",
        "credentials": [{"key": "ApiKey", "value": "k"}, {"key": "MerchantAccount", "value": "m"}],
    }
    answer = client.post(
        "/PaymentGateway/charge",
        json={
            "amount": "10.00",
            "currency": "USD",
            "tip": 1,
            "paymentGatewayAccount": adyen,
            "card": {
                "cardHolderName": "Jane",
                "cardNumber": "4242424242424242",
                "expirationMonth": 12,
                "expirationYear": 2030,
                "cvv": "123",
            },
        },
    ).json()
    text = client.get("/_emulator/", headers=HTML).text
    assert "number-as-string=amount; unknown-property=tip" in text
    assert answer["gatewayReference"] in text
    assert "4242424242424242" not in text
