"""The dashboard's filters, detail view (timeline) and outcome chart, through TestClient."""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Any

import httpx
from starlette.applications import Starlette
from starlette.testclient import TestClient

from emulator.http.pages import chart
from emulator.payments.tenants import Tenant

HTML = {"Accept": "text/html"}
CARD = {
    "cardHolderName": "Jane",
    "cardNumber": "4111111111111111",
    "expirationMonth": 12,
    "expirationYear": 2031,
    "cvv": "123",
}


def _accounts(client: httpx.Client) -> None:
    for name, gateway in (("failing", "NULLFailure"), ("backup", "NULLSuccess")):
        stored = client.put(f"/PaymentGatewayAccounts/{name}", json={"paymentGatewayName": gateway, "credentials": []})
        assert stored.status_code == 200, stored.text


def failover_story(client: httpx.Client) -> dict[str, str]:
    """Authorize 120 USD on `failing` with fallback `backup`, capture it, refund 20."""
    _accounts(client)
    authorized = client.post(
        "/PaymentGateway/authorize",
        json={
            "amount": 120,
            "currency": "USD",
            "card": CARD,
            "paymentGatewayAccountName": "failing",
            "fallbackUpgs": [{"paymentGatewayAccountName": "backup"}],
        },
    )
    assert authorized.status_code == 200, authorized.text
    auth = authorized.json()["gatewayReference"]
    captured = client.put(
        "/PaymentGateway/capture",
        json={
            "refTransId": auth,
            "amount": 120,
            "currency": "USD",
            "paymentGatewayAccountName": "backup",
            "card": CARD,
        },
    )
    assert captured.status_code == 200, captured.text
    refunded = client.put(
        "/PaymentGateway/refund",
        json={
            "refTransId": captured.json()["gatewayReference"],
            "amount": 20,
            "currency": "USD",
            "paymentGatewayAccountName": "backup",
            "card": CARD,
        },
    )
    assert refunded.status_code == 200, refunded.text
    return {"auth": auth, "capture": captured.json()["gatewayReference"], "refund": refunded.json()["gatewayReference"]}


def _rows(html: str) -> list[str]:
    return re.findall(r'<tr class="(?:ok|failed)" data-reference="([^"]+)"', html)


def test_filter_by_result_shows_only_matching_rows(client: TestClient) -> None:
    failover_story(client)
    everything = _rows(client.get("/_emulator/", headers=HTML).text)
    declined = _rows(client.get("/_emulator/", params={"result": "Rejected"}, headers=HTML).text)
    assert len(everything) == 4
    assert len(declined) == 1
    assert declined[0] in everything


def test_filters_by_state_and_gateway(client: TestClient) -> None:
    story = failover_story(client)
    assert _rows(client.get("/_emulator/", params={"state": "Captured"}, headers=HTML).text) == [story["auth"]]
    on_backup = _rows(client.get("/_emulator/", params={"gateway": "NULLSuccess"}, headers=HTML).text)
    assert on_backup == [story["refund"], story["capture"], story["auth"]]
    none = client.get("/_emulator/", params={"gateway": "NULLSuccess", "result": "Rejected"}, headers=HTML).text
    assert "No transaction matches these filters." in none


def test_filters_survive_the_live_reload(client: TestClient) -> None:
    failover_story(client)
    page = client.get("/_emulator/", params={"result": "Rejected"}, headers=HTML).text
    assert "result=Rejected&amp;partial=1" in page
    assert '<option value="Rejected" selected>' in page


def test_list_formats_amounts_and_keeps_references(client: TestClient) -> None:
    story = failover_story(client)
    page = client.get("/_emulator/", headers=HTML).text
    assert "120.00 USD" in page
    assert "20.00 USD" in page
    assert f"tx={story['refund']}" in page
    assert "4111111111111111" not in page


def test_detail_view_tells_the_whole_story_in_time_order(client: TestClient) -> None:
    story = failover_story(client)
    page = client.get("/_emulator/", params={"tx": story["capture"]}, headers=HTML)
    assert page.status_code == 200
    events = re.findall(r'<li class="(ok|failed)[^"]*" data-testid="event" data-reference="([^"]+)"', page.text)
    assert [ref for _, ref in events][1:] == [story["auth"], story["capture"], story["refund"]]
    assert [kind for kind, _ in events] == ["failed", "ok", "ok", "ok"]
    assert "Authorization · attempt 2 (fallback)" in page.text
    assert "Rejected (CardDeclined)" in page.text
    assert "4111111111111111" not in page.text


def test_the_declined_attempt_leads_to_the_same_story(client: TestClient) -> None:
    story = failover_story(client)
    declined = _rows(client.get("/_emulator/", params={"result": "Rejected"}, headers=HTML).text)[0]
    page = client.get("/_emulator/", params={"tx": declined}, headers=HTML).text
    assert story["refund"] in page


def test_unknown_reference_is_a_clear_404(client: TestClient) -> None:
    page = client.get("/_emulator/", params={"tx": "NULL-NOPE"}, headers=HTML)
    assert page.status_code == 404
    assert "Unknown transaction" in page.text
    answer = client.get("/_emulator/", params={"tx": "NULL-NOPE"})
    assert answer.json()[0]["fieldName"] == "tx"


def test_journal_shows_result_codes_and_highlights_errors(client: TestClient) -> None:
    failover_story(client)
    bad = client.post("/PaymentGateway/charge", json={"amount": 1})
    assert bad.status_code == 400
    page = client.get("/_emulator/", headers=HTML).text
    journal = page[page.index('data-testid="journal"') :]
    assert '<td class="status">400</td>' in journal
    assert journal.count('<tr class="error">') == 1
    assert '<td class="result">Success</td>' in journal


def test_chart_has_one_bar_per_bucket(app: Starlette, client: TestClient) -> None:
    tenant: Tenant = app.state.runtime.tenants.get("sandbox-api-key")
    _accounts(client)
    for step in range(3):
        tenant.clock.advance(timedelta(minutes=5))
        for offset, account in enumerate(("failing", "backup")):
            body = {
                "amount": 5 + step * 2 + offset,
                "currency": "USD",
                "card": CARD,
                "paymentGatewayAccountName": account,
            }
            answer = client.post("/PaymentGateway/charge", json=body)  # a decline may be a 409 here
            assert answer.json()["gatewayName"] in ("NULLFailure", "NULLSuccess"), answer.text
    drawn: dict[str, Any] = chart.outcomes(tenant.ledger.transactions())
    assert len(drawn["bars"]) == chart.BUCKETS
    assert {item["code"]: item["count"] for item in drawn["legend"]} == {"Success": 3, "Rejected": 3}
    assert sum(bar["total"] for bar in drawn["bars"]) == 6
    page = client.get("/_emulator/", headers=HTML).text
    svg = page[page.index("<svg") : page.index("</svg>")]
    assert svg.count('<g class="bucket"') == chart.BUCKETS
    assert svg.count('<rect class="slot"') == chart.BUCKETS
    assert svg.count('data-code="Rejected"') == 3
    assert "<script" not in svg


def test_chart_without_transactions() -> None:
    assert chart.outcomes([])["bars"] == []
