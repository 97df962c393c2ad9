"""The dashboard's filters, detail view (timeline) and outcome chart, through TestClient."""

from __future__ import annotations

import gc
import re
import tracemalloc
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import httpx
from starlette.applications import Starlette
from starlette.testclient import TestClient

from emulator.tenants.tenants import Tenant
from emulator.ui import chart
from tests.support import dashboard_demo
from tests.support.bodies import card

HTML = {"Accept": "text/html"}
CARD = card(cardHolderName="Jane", expirationYear=2031, cvv="123")


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
    """The reference of each payment row (its last attempt's)."""
    return re.findall(r'<tbody class="payment (?:ok|failed)" data-testid="payment" data-reference="([^"]+)"', html)


def _attempts(html: str) -> list[tuple[str, str]]:
    """(result code, reference) of each attempt folded under the payment rows."""
    return re.findall(r'<li data-testid="attempt" data-code="([^"]+)" data-reference="([^"]+)"', html)


def test_a_failover_with_its_follow_ups_is_one_payment_row(client: TestClient) -> None:
    story = failover_story(client)
    page = client.get("/_emulator/", headers=HTML).text
    assert _rows(page) == [story["auth"]]
    assert [code for code, _ in _attempts(page)] == ["Rejected", "Success"]
    assert _attempts(page)[1][1] == story["auth"]
    assert 'data-attempts="2"' in page
    assert page.count('data-testid="follow-up"') == 2  # the capture and the refund


def test_filter_by_result_shows_payments_with_a_matching_operation(client: TestClient) -> None:
    story = failover_story(client)
    plain = client.post(
        "/PaymentGateway/charge",
        json={"amount": 5, "currency": "USD", "card": CARD, "paymentGatewayAccountName": "backup"},
    ).json()["gatewayReference"]
    assert _rows(client.get("/_emulator/", headers=HTML).text) == [plain, story["auth"]]
    declined = client.get("/_emulator/", params={"result": "Rejected"}, headers=HTML).text
    assert _rows(declined) == [story["auth"]]  # its first attempt was declined
    assert "with an operation matching result = Rejected" in declined


def test_filters_by_state_and_gateway(client: TestClient) -> None:
    story = failover_story(client)
    assert _rows(client.get("/_emulator/", params={"state": "Captured"}, headers=HTML).text) == [story["auth"]]
    on_failing = _rows(client.get("/_emulator/", params={"gateway": "NULLFailure"}, headers=HTML).text)
    assert on_failing == [story["auth"]]
    none = client.get("/_emulator/", params={"gateway": "NULLSuccess", "result": "Rejected"}, headers=HTML).text
    assert "No payment matches these filters." in none


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
    assert "Rejected</span> (CardDeclined)" in page.text
    assert "4111111111111111" not in page.text


def test_detail_view_shows_my_ref_native_codes_and_masked_bodies(client: TestClient) -> None:
    _accounts(client)
    charged = client.post(
        "/PaymentGateway/charge",
        json={
            "amount": 33,
            "currency": "USD",
            "card": CARD,
            "myRef": "order-77",
            "paymentGatewayAccountName": "failing",
            "fallbackUpgs": [{"paymentGatewayAccountName": "backup"}],
        },
    ).json()
    page = client.get("/_emulator/", params={"tx": charged["gatewayReference"]}, headers=HTML).text
    assert 'data-testid="my-ref">order-77<' in page
    natives = re.findall(r'data-testid="native"[^>]*>native ([^<]+)<', page)
    assert len(natives) == 2
    assert natives[1].startswith(f"{charged['gatewayResultCode']} · ")
    bodies = page[page.index('data-testid="bodies"') :]
    assert "&#34;myRef&#34;: &#34;order-77&#34;" in bodies  # the request, as JSON
    assert "411111******1111" in bodies
    assert "4111111111111111" not in page
    assert "&#34;cvv&#34;" not in page


def test_the_declined_attempt_leads_to_the_same_story(client: TestClient) -> None:
    story = failover_story(client)
    [(_, declined), _] = _attempts(client.get("/_emulator/", params={"result": "Rejected"}, headers=HTML).text)
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
    assert '<td data-label="status" class="third status">400</td>' in journal
    assert journal.count('<tr class="error">') == 1
    assert re.search(r'class="[^"]*\bresult"><span class="code" data-code="Success">', journal)


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
    points = [(tx.created_at, tx.result_code.value) for tx in tenant.ledger.transactions()]
    drawn: dict[str, Any] = chart.outcomes(points)
    assert drawn["stepText"] == "30 seconds"  # ten minutes in all: 21 bars of 30 s fit
    first, last = (int(moment.timestamp() // 30) for moment in (points[0][0], points[-1][0]))
    assert len(drawn["bars"]) == last - first + 1 == 21
    counts = {item["code"]: item["count"] for item in drawn["legend"]}
    assert counts == {
        "Success": 3,
        "Rejected": 3,
        "Accepted": 0,
        "TemporaryFailure": 0,
        "FatalFailure": 0,
        "NotImplemented": 0,
    }
    assert sum(bar["total"] for bar in drawn["bars"]) == 6
    page = client.get("/_emulator/", headers=HTML).text
    start = page.index('<svg xmlns="http://www.w3.org/2000/svg"')
    svg = page[start : page.index("</svg>", start)]
    assert svg.count('<g class="bucket"') == 21
    assert svg.count('<rect class="slot"') == 21
    assert svg.count('data-code="Rejected"') == 3
    assert "<script" not in svg
    legend = page[page.index('data-testid="legend"') :]
    assert all(f'<li data-code="{code}"' in legend for code in counts)


def test_chart_without_transactions() -> None:
    assert chart.outcomes([])["bars"] == []


def test_the_demo_set_shows_no_secret_anywhere(client: TestClient) -> None:
    made = dashboard_demo.populate(client)
    pages = [client.get("/_emulator/", headers=HTML).text]
    pages += [
        client.get("/_emulator/", params={"tx": made[name]}, headers=HTML).text for name in ("failover", "captured")
    ]
    pages.append(client.get("/_emulator/", params={"jpage": "2"}, headers=HTML).text)
    secret = dashboard_demo.ADYEN["credentials"][0]["value"]
    for text in pages:
        assert "bodies (masked)" in text or 'data-testid="bodies"' in text
        for forbidden in (secret, "4111111111111111", "4000000000000002", "&#34;cvv&#34;: &#34;123&#34;"):
            assert forbidden not in text
    assert "411111******1111" in pages[1]
    assert any("PUT /PaymentGatewayAccounts/adyen" in text for text in pages)  # its body is there, masked


def test_the_chart_counts_a_202_as_accepted_after_it_settled(app: Starlette, client: TestClient) -> None:
    tenant: Tenant = app.state.runtime.tenants.get("sandbox-api-key")
    dashboard_demo.accounts(client)
    body = {"amount": 9001.00, "currency": "USD", "card": CARD, "paymentGatewayAccountName": "adyen"}
    answer = client.post("/PaymentGateway/charge", json=body)  # the built-in pending amount: settles after 5 s
    assert answer.status_code == 202, answer.text
    assert answer.json()["operationResultCode"] == "Accepted"
    tenant.clock.advance(timedelta(seconds=10))
    reference = answer.json()["gatewayReference"]
    status = client.post("/PaymentGateway/status", json={"refTransId": reference, "paymentGatewayAccountName": "adyen"})
    assert status.json()["operationResultCode"] == "Success", status.text  # settled since
    page = client.get("/_emulator/", headers=HTML).text
    legend = page[page.index('data-testid="legend"') :]
    counts = dict(re.findall(r'<li data-code="(\w+)".*?<span class="count">(\d+)</span>', legend))
    assert counts["Accepted"] == "1", counts
    assert counts["Success"] == "0", counts


def test_the_rule_that_decided_each_attempt_is_shown(client: TestClient) -> None:
    _accounts(client)
    rule = {"name": "no-funds", "when": {"amount": 42}, "then": {"operationResultCode": "Rejected"}}
    assert client.post("/_emulator/scenarios", json=rule).status_code == 201
    charged = client.post(
        "/PaymentGateway/charge",
        json={
            "amount": 42,
            "currency": "USD",
            "card": CARD,
            "paymentGatewayAccountName": "backup",
            "fallbackUpgs": [{"paymentGatewayAccountName": "failing"}],
        },
    )
    assert charged.status_code == 409, charged.text
    listing = client.get("/_emulator/", headers=HTML).text
    assert re.findall(r'data-testid="rule" title="[^"]*\(runtime\)">rule ([^<]+)<', listing) == ["no-funds"]
    # both attempts (NULLSuccess, then the NULLFailure fallback) were decided by the rule
    assert re.findall(r'data-testid="attempt-rule"[^>]*>rule ([^<]+)<', listing) == ["no-funds", "no-funds"]
    detail = client.get("/_emulator/", params={"tx": charged.json()["gatewayReference"]}, headers=HTML).text
    assert re.findall(r'data-testid="rule"[^>]*>([^<]+)<', detail) == ["rule no-funds", "rule no-funds"]
    client.delete("/_emulator/scenarios")
    plain = client.post(
        "/PaymentGateway/charge",
        json={"amount": 10, "currency": "USD", "card": CARD, "paymentGatewayAccountName": "backup"},
    ).json()
    detail = client.get("/_emulator/", params={"tx": plain["gatewayReference"]}, headers=HTML).text
    assert re.findall(r'data-testid="rule"[^>]*>([^<]+)<', detail) == ["no rule: the gateway's default"]


def _peak_while(call: Callable[[], httpx.Response]) -> tuple[httpx.Response, int]:
    """``call``'s answer and the most Python memory it held at once (tracemalloc)."""
    gc.collect()
    tracemalloc.start()
    try:
        answer = call()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return answer, peak


def test_the_dashboard_reads_the_journal_one_entry_at_a_time(client: TestClient) -> None:
    """60 refused eWallet operations each journaled with 200 KB of short strings (parsed,
    an entry holds about ten times its text), then 25 small requests: the dashboard and a
    payment's story render the newest page, looking at every entry in turn and holding
    none of the others. Holding the whole journal parsed, they took over 100 MB."""
    ids = [f"w{n:05d}" for n in range(20_000)]
    body = {"operation": "CHARGE", "mode": "TEST", "currencyCode": "USD", "amount": 5, "allowedeWalletAccountIds": ids}
    for _ in range(60):
        assert client.post("/EWalletOperations", json=body).status_code == 400
    story = failover_story(client)
    for _ in range(22):
        assert client.get("/Utils/apiKey").status_code == 200
    # a first read masks each entry and keeps it as text (orjson's buffer for that text is
    # counted by tracemalloc at its capacity, not its length: read once before measuring)
    assert client.get("/_emulator/requests/count").json()["count"] > 60
    page, peak = _peak_while(lambda: client.get("/_emulator/", headers=HTML))
    assert page.status_code == 200
    assert _rows(page.text) == [story["auth"]]
    assert peak < 16 * 1024 * 1024, f"{peak / 2**20:.0f} MiB"
    detail, peak = _peak_while(lambda: client.get("/_emulator/", params={"tx": story["capture"]}, headers=HTML))
    assert detail.status_code == 200
    assert story["refund"] in detail.text
    assert peak < 16 * 1024 * 1024, f"{peak / 2**20:.0f} MiB"
