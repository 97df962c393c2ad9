"""The dashboard's detail view, filters and layout in Chromium (fixtures of test_ewallet_browser)."""

from __future__ import annotations

from playwright.sync_api import Page, expect

from tests.test_dashboard_views import CARD, failover_story
from tests.test_ewallet_browser import Server, api, browser, failover_session, page, screenshot_on_failure, server

__all__ = ["browser", "page", "server"]


def test_detail_view_timeline_of_a_failover_charge(server: Server, page: Page) -> None:
    key = "browser-story"
    with api(server, key) as client, screenshot_on_failure(page, "story"):
        story = failover_story(client)
        auth, refund = story["auth"], story["refund"]
        page.goto(f"{server.base}/_emulator/?key={key}")
        page.get_by_test_id("payments").get_by_role("link", name=auth).click()
        events = page.get_by_test_id("event")
        expect(events).to_have_count(4)
        expect(events.nth(0)).to_contain_text("Rejected")
        expect(events.nth(0)).to_contain_text("failing")
        expect(events.nth(1)).to_contain_text("attempt 2 (fallback)")
        expect(events.nth(2)).to_contain_text("Capture")
        expect(events.nth(2)).to_contain_text("120.00 USD")
        expect(events.nth(3)).to_contain_text("Refund")
        expect(events.nth(3)).to_contain_text("20.00 USD")
        expect(events.nth(3)).to_contain_text(refund)


def test_filter_by_result_and_no_horizontal_scroll(server: Server, page: Page) -> None:
    key = "browser-many"
    with api(server, key) as client, screenshot_on_failure(page, "many"):
        for name, gateway in (("failing", "NULLFailure"), ("backup", "NULLSuccess")):
            client.put(f"/PaymentGatewayAccounts/{name}", json={"paymentGatewayName": gateway, "credentials": []})
        for index in range(40):
            client.post(
                "/PaymentGateway/charge",
                json={
                    "amount": 10 + index,
                    "currency": "USD",
                    "card": CARD,
                    "paymentGatewayAccountName": "failing" if index % 4 == 0 else "backup",
                },
            )
        page.set_viewport_size({"width": 1280, "height": 900})
        page.goto(f"{server.base}/_emulator/?key={key}")
        assert page.evaluate("document.documentElement.scrollWidth") <= 1280
        page.get_by_test_id("filters").locator("select[name=result]").select_option("Rejected")
        page.get_by_test_id("filters").get_by_role("button", name="Filter").click()
        rows = page.get_by_test_id("payments").get_by_test_id("payment")
        expect(rows).to_have_count(10)
        for index in range(10):
            expect(rows.nth(index).locator("td.result")).to_contain_text("Rejected")
        rows.first.locator("a").first.click()
        expect(page.get_by_test_id("timeline")).to_be_visible()
        assert page.evaluate("document.documentElement.scrollWidth") <= 1280


def test_payment_page_has_no_horizontal_scroll_at_1280(server: Server, page: Page) -> None:
    with api(server, "browser-page-width") as client, screenshot_on_failure(page, "page-width"):
        session = failover_session(client)
        page.set_viewport_size({"width": 1280, "height": 900})
        page.goto(session["page"])
        expect(page.get_by_test_id("amount")).to_have_text("42.50 EUR")
        assert page.evaluate("document.documentElement.scrollWidth") <= 1280
        assert page.locator("input[autocomplete=cc-number]").count() == 1
