"""The hosted payment page, its static files and the dashboard route (in-process)."""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Any

import pytest
from starlette.testclient import TestClient

from emulator.domain.model import PaymentRequest
from emulator.tenants.tenants import Tenant
from emulator.ui.routes import safe_return_url
from tests.conftest import EWALLET_CARD as CARD
from tests.conftest import setup_ewallet_tenant

HTML = {"Accept": "text/html"}
NEW_CARD = {
    "cardHolderName": "Jane Doe",
    "cardNumber": "4000056655665556",
    "expirationMonth": 7,
    "expirationYear": 2031,
    "cvv": "321",
}


def _session(client: TestClient, tenant: Tenant, **changes: Any) -> str:
    stored = setup_ewallet_tenant(tenant)
    body: dict[str, Any] = {
        "operation": "CHARGE",
        "mode": "TEST",
        "currencyCode": "EUR",
        "amount": 1234.5,
        "paymentGatewayAccountId": "primary",
        "fallbackUpgs": [{"paymentGatewayAccountId": "backup"}],
        "allowedBrands": ["Visa", "MasterCard"],
        "customerName": "Jane <Doe>",
        "paymentNote": "Order <b>7</b>",
        "storedCards": [
            {
                "token": stored,
                "lastDigits": "1111",
                "expirationMonth": 3,
                "expirationYear": 2030,
                "brand": "Visa",
                "nameOnCard": "Jane Doe",
            }
        ],
    }
    body.update(changes)
    response = client.post("/EWalletOperations", json=body)
    assert response.status_code == 200, response.text
    return str(response.json()["token"])


def test_page_shows_the_session(client: TestClient, tenant: Tenant) -> None:
    token = _session(client, tenant)
    page = client.get(f"/_emulator/pay/{token}", headers=HTML)
    assert page.status_code == 200
    assert page.headers["content-type"].startswith("text/html")
    assert page.headers["cache-control"] == "no-store"
    text = page.text
    assert "1,234.50 EUR" in text
    assert "Visa, MasterCard" in text
    assert "•••• 1111" in text
    assert "03/2030" in text
    assert 'data-testid="stored-card-0"' in text
    assert 'data-testid="new-card"' in text
    assert "Jane &lt;Doe&gt;" in text
    assert "Order &lt;b&gt;7&lt;/b&gt;" in text
    assert 'data-state="open"' in text
    assert CARD not in text
    assert tenant.sessions[token].stored_cards[0]["token"] not in text
    assert "/_emulator/static/pay.js" in text


def test_tokenize_page_has_no_amount(client: TestClient, tenant: Tenant) -> None:
    token = _session(client, tenant, operation="TOKENIZE", amount=0, storedCards=None)
    text = client.get(f"/_emulator/pay/{token}").text
    assert "Save a card" in text
    assert "Save card" in text
    assert "EUR" not in text


def test_pay_through_the_page(client: TestClient, tenant: Tenant, engine_calls: list[PaymentRequest]) -> None:
    token = _session(client, tenant)
    response = client.post(f"/_emulator/pay/{token}", json={"storedCard": 0, "cvv": "123"})
    assert response.status_code == 200, response.text
    answer = response.json()
    assert answer["success"] is True
    assert answer["providerAccountId"] == "backup"
    assert answer["attempts"] == 2
    assert set(answer) >= {"resultToken", "gatewayReference", "amount", "currency", "maskedCard"}
    validated = client.post("/EWalletOperations/validateResults", json=answer["resultToken"]).json()
    assert validated["providerTransactionId"] == answer["gatewayReference"]
    # the page now says it is paid
    paid = client.get(f"/_emulator/pay/{token}", headers=HTML).text
    assert 'data-testid="paid"' in paid
    assert answer["gatewayReference"] in paid
    again = client.post(f"/_emulator/pay/{token}", json={"storedCard": 0, "cvv": "123"})
    assert again.status_code == 409
    assert again.json()[0]["fieldName"] == "sessionToken"


def test_page_payment_is_journaled_masked(
    client: TestClient, tenant: Tenant, engine_calls: list[PaymentRequest]
) -> None:
    token = _session(client, tenant)
    client.post(f"/_emulator/pay/{token}", json={"card": NEW_CARD})
    entry = list(tenant.journal)[-1]
    assert entry["operationId"] == "HostedPagePay"
    assert entry["path"] == f"/_emulator/pay/{token}"
    assert entry["status"] == 200
    assert entry["request"]["card"]["cardNumber"] == "400005******5556"
    assert "cvv" not in entry["request"]["card"]
    assert len(entry["attempts"]) == 2
    text = repr(list(tenant.journal))
    assert NEW_CARD["cardNumber"] not in text
    assert "'321'" not in text
    listed = client.get("/_emulator/requests", params={"path": "/_emulator/pay/"})
    assert listed.status_code == 200, listed.text  # the control API's schema accepts the entry
    assert [e["operationId"] for e in listed.json()["requests"]] == ["HostedPagePay"]


@pytest.mark.parametrize(
    ("kwargs", "status", "field"),
    [
        ({"content": b"{", "headers": {"Content-Type": "application/json"}}, 400, "body"),
        ({"content": b"cvv=1", "headers": {"Content-Type": "application/x-www-form-urlencoded"}}, 415, "Content-Type"),
    ],
)
def test_pay_errors_are_json(
    client: TestClient,
    tenant: Tenant,
    engine_calls: list[PaymentRequest],
    kwargs: dict[str, Any],
    status: int,
    field: str,
) -> None:
    token = _session(client, tenant)
    response = client.post(f"/_emulator/pay/{token}", **kwargs)
    assert response.status_code == status
    assert response.headers["content-type"].startswith("application/json")
    assert response.json()[0]["fieldName"] == field
    assert list(tenant.journal)[-1]["status"] == status


def test_unknown_session(client: TestClient) -> None:
    api = client.get("/_emulator/pay/nosuchtoken")
    assert api.status_code == 404
    assert api.json() == [{"fieldName": "sessionToken", "errors": ["No payment session has this token."]}]
    page = client.get("/_emulator/pay/nosuchtoken", headers=HTML)
    assert page.status_code == 404
    assert "Unknown session" in page.text
    assert client.post("/_emulator/pay/nosuchtoken", json={}).json()[0]["fieldName"] == "sessionToken"


def test_expired_session_page(client: TestClient, tenant: Tenant, engine_calls: list[PaymentRequest]) -> None:
    token = _session(client, tenant)
    tenant.clock.advance(timedelta(minutes=30))
    page = client.get(f"/_emulator/pay/{token}", headers=HTML)
    assert 'data-testid="expired"' in page.text
    assert "new-card" not in page.text
    response = client.post(f"/_emulator/pay/{token}", json={"card": NEW_CARD})
    assert response.status_code == 410
    assert engine_calls == []


def test_return_url(client: TestClient, tenant: Tenant) -> None:
    token = _session(client, tenant)
    good = client.get(f"/_emulator/pay/{token}", params={"returnUrl": "http://localhost:3000/done?o=1"}).text
    assert 'data-return-url="http://localhost:3000/done?o=1"' in good
    assert 'data-target-origin="http://localhost:3000"' in good
    bad = client.get(f"/_emulator/pay/{token}", params={"returnUrl": "javascript:alert(1)"}).text
    assert 'data-return-url=""' in bad
    assert "not an http(s) URL of an allowed origin" in bad
    foreign = client.get(f"/_emulator/pay/{token}", params={"returnUrl": "https://evil.example/steal"}).text
    assert 'data-return-url=""' in foreign
    assert safe_return_url("//evil.example") == ("", safe_return_url("ftp://x")[1])
    assert safe_return_url("https://shop.example/done", ("https://shop.example",))[0] == "https://shop.example/done"


@pytest.mark.parametrize(
    "given",
    [
        "http://evil.example\\@127.0.0.1/x",
        "http://evil.example\\127.0.0.1/x",
        "http://127.0.0.1@evil.example/x",
        "http://localhost:3000@evil.example/x",
        "http://evil.example@127.0.0.1/x",
        "HTTP://EVIL.EXAMPLE\\@LOCALHOST/x",
    ],
)
def test_no_redirect_nor_message_to_a_disguised_host(client: TestClient, tenant: Tenant, given: str) -> None:
    """A browser reads these as evil.example (or as URLs with credentials): the page
    neither redirects there nor posts its result there (returnUrl and ?origin= alike)."""
    token = _session(client, tenant)
    page = client.get(f"/_emulator/pay/{token}", params={"returnUrl": given, "origin": given}, headers=HTML)
    assert page.status_code == 200
    assert 'data-return-url=""' in page.text
    assert 'data-target-origin=""' in page.text  # pay.js then posts to the page's own origin
    assert "not an http(s) URL of an allowed origin" in page.text
    assert "evil.example" not in page.text.lower()


def test_the_page_redirects_to_the_url_the_browser_would_follow(client: TestClient, tenant: Tenant) -> None:
    token = _session(client, tenant)
    page = client.get(f"/_emulator/pay/{token}", params={"returnUrl": "HTTP://LocalHost:80/Done?x=1"}).text
    assert 'data-return-url="http://localhost/Done?x=1"' in page
    assert 'data-target-origin="http://localhost"' in page
    embedded = client.get(
        f"/_emulator/pay/{token}", params={"returnUrl": "http://127.0.0.1:9/x", "origin": "http://LOCALHOST:5173"}
    ).text
    assert 'data-target-origin="http://localhost:5173"' in embedded


@pytest.mark.parametrize(
    ("name", "marker"),
    [
        ("payments-library.js", "eWallet"),
        ("pay.js", "payemu:result"),
        ("dashboard.js", "partial"),
        ("payemu.css", "--accent"),
    ],
)
def test_static_files(anon: TestClient, name: str, marker: str) -> None:
    response = anon.get(f"/_emulator/static/{name}")
    assert response.status_code == 200
    assert marker in response.text


def test_missing_static_file_is_json(anon: TestClient) -> None:
    response = anon.get("/_emulator/static/nothing.js")
    assert response.status_code == 404
    assert response.json()[0]["fieldName"] == "path"


def test_dashboard_route(client: TestClient, tenant: Tenant, engine_calls: list[PaymentRequest]) -> None:
    token = _session(client, tenant)
    client.post(f"/_emulator/pay/{token}", json={"storedCard": 0, "cvv": "123"})
    page = client.get("/_emulator/", headers=HTML)
    assert page.status_code == 200
    assert page.headers["content-type"].startswith("text/html")
    assert "sandbox-merchant" in page.text
    assert token in page.text
    assert 'data-partial="/_emulator/?key=sandbox-api-key&amp;partial=1"' in page.text
    partial = client.get("/_emulator/", params={"key": "sandbox-api-key", "partial": "1"})
    assert partial.status_code == 200
    assert "<html" not in partial.text
    assert 'data-testid="payments"' in partial.text
    assert client.get("/_emulator", follow_redirects=True).status_code == 200


def test_dashboard_picks_the_tenant(client: TestClient, tenant: Tenant) -> None:
    token = _session(client, tenant)
    live = client.get("/_emulator/", params={"key": "live-api-key"}, headers=HTML)
    assert live.status_code == 200
    assert "live-merchant" in live.text
    assert token not in live.text
    unknown = client.get("/_emulator/", params={"key": "nope"}, headers=HTML)
    assert unknown.status_code == 401
    assert "Unknown API key" in unknown.text
    assert 'name="key"' in unknown.text
    as_json = client.get("/_emulator/", params={"key": "nope"})
    assert as_json.status_code == 401
    assert as_json.json()[0]["fieldName"] == "X-Api-Key"


def test_dashboard_with_any_key(make_app: Any) -> None:
    with TestClient(make_app(any_key=True)) as client:
        page = client.get("/_emulator/", params={"key": "ci-job-9"}, headers=HTML)
    assert page.status_code == 200
    assert re.search(r"sandbox-merchant-\d+", page.text)
