"""The dashboard's detail view, filters and layout in Chromium (fixtures of test_ewallet_browser).

On failure a full-page screenshot of the view goes to ``test-artifacts/<view>-<width>.png``."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from emulator.domain.vocabulary import RESULT_CODES
from emulator.ui import dashboard
from tests.support import dashboard_demo
from tests.support.servers import ThreadServer
from tests.ui.test_dashboard_views import CARD, failover_story
from tests.ui.test_ewallet_browser import api, browser, failover_session, page, screenshot_on_failure, server

pytestmark = pytest.mark.chromium  # without Chromium: skipped with a summary line (tests/support/tools.py)

__all__ = ["browser", "page", "server"]


def test_detail_view_timeline_of_a_failover_charge(server: ThreadServer, page: Page) -> None:
    key = "browser-story"
    with api(server, key) as client, screenshot_on_failure(page, "story"):
        story = failover_story(client)
        auth, refund = story["auth"], story["refund"]
        page.goto(f"{server.url}/_emulator/?key={key}")
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


def test_filter_by_result_and_no_horizontal_scroll(server: ThreadServer, page: Page) -> None:
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
        page.goto(f"{server.url}/_emulator/?key={key}")
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


def test_payment_page_has_no_horizontal_scroll_at_1280(server: ThreadServer, page: Page) -> None:
    with api(server, "browser-page-width") as client, screenshot_on_failure(page, "page-width"):
        session = failover_session(client)
        page.set_viewport_size({"width": 1280, "height": 900})
        page.goto(session["page"])
        expect(page.get_by_test_id("amount")).to_have_text("42.50 EUR")
        assert page.evaluate("document.documentElement.scrollWidth") <= 1280
        assert page.locator("input[autocomplete=cc-number]").count() == 1


# -- layout at a phone's, a laptop's and a projector's width (the demo set of dashboard_demo) --
WIDTHS = (390, 1280, 1920)
# every table cell at least as wide as its column header's text (canvas-measured in the
# header's own font); rows spanning the table (the folded attempts) are left out
NARROW_CELLS = """() => {
  const ctx = document.createElement("canvas").getContext("2d");
  const found = [];
  const inner = (el) => {
    const style = getComputedStyle(el);
    return el.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight);
  };
  for (const table of document.querySelectorAll("table")) {
    const heads = Array.from(table.querySelectorAll("thead th"));
    const widths = heads.map((th) => {
      const style = getComputedStyle(th);
      ctx.font = `${style.fontWeight} ${style.fontSize} ${style.fontFamily}`;
      return ctx.measureText(th.textContent.trim()).width;
    });
    heads.forEach((th, i) => {
      if (th.offsetWidth > 1 && inner(th) + 0.5 < widths[i]) {
        found.push(`th ${th.textContent.trim()}: ${inner(th)} < ${widths[i]}`);
      }
    });
    for (const row of table.querySelectorAll("tbody tr")) {
      if (row.children.length !== heads.length) continue;
      Array.from(row.children).forEach((cell, i) => {
        if (inner(cell) + 0.5 < widths[i]) found.push(`${heads[i].textContent.trim()}: ${inner(cell)} < ${widths[i]}`);
      });
    }
  }
  return found;
}"""
LEGEND = """() => Array.from(document.querySelectorAll("[data-testid=legend] li")).map((li) => ({
  code: li.dataset.code,
  text: li.textContent,
  fill: getComputedStyle(document.querySelector(`#fill-${li.dataset.code} rect.base`)).fill,
}))"""
CHIPS = """() => Array.from(document.querySelectorAll("[data-testid=payments] .code")).map((badge) => [
  badge.dataset.code, getComputedStyle(badge.querySelector(".chip")).backgroundColor,
])"""


@pytest.fixture(scope="module")
def demo(server: ThreadServer) -> dict[str, Any]:
    """The demo tenant: ten payments (dashboard_demo.populate)."""
    with api(server, "browser-demo") as client:
        return dashboard_demo.populate(client)


def _open(page: Page, url: str, width: int) -> None:
    page.set_viewport_size({"width": width, "height": 900})
    page.goto(url)
    box = page.locator("#auto-refresh")
    if box.count():
        box.uncheck()  # no live reload in the middle of a measurement


def _no_horizontal_scroll(page: Page, width: int) -> None:
    scroll = page.evaluate("[document.scrollingElement.scrollWidth, window.innerWidth]")
    assert scroll[0] <= scroll[1] == width, f"horizontal scroll: {scroll}"


@pytest.mark.parametrize("width", WIDTHS)
def test_demo_dashboard_reads_at_every_width(
    server: ThreadServer, page: Page, demo: dict[str, Any], width: int
) -> None:
    refused: list[str] = []
    page.on(
        "console", lambda message: refused.append(message.text) if "Content Security Policy" in message.text else None
    )
    with screenshot_on_failure(page, f"dashboard-{width}"):
        _open(page, f"{server.url}/_emulator/?key=browser-demo", width)
        _no_horizontal_scroll(page, width)
        assert page.evaluate(NARROW_CELLS) == []

        legend = page.evaluate(LEGEND)
        assert [item["code"] for item in legend] == list(RESULT_CODES)
        assert all(item["code"] in item["text"] for item in legend), "a text label, not colour alone"
        fills = [item["fill"] for item in legend]
        assert len(set(fills)) == len(RESULT_CODES), fills
        assert not {"none", "rgb(0, 0, 0)"} & set(fills)
        chips: dict[str, set[str]] = {}
        for code, colour in page.evaluate(CHIPS):
            chips.setdefault(code, set()).add(colour)
        assert set(chips) == set(RESULT_CODES), "the demo shows every result code"
        assert all(len(colours) == 1 for colours in chips.values())
        assert len({colour for colours in chips.values() for colour in colours}) == len(RESULT_CODES)

        payments = page.get_by_test_id("payment")
        expect(payments).to_have_count(10)
        expect(page.locator(f'[data-testid=payment][data-reference="{demo["failover"]}"]')).to_have_count(1)
        attempts = page.locator(f'[data-testid=payment][data-reference="{demo["failover"]}"] [data-testid=attempt]')
        expect(attempts).to_have_count(2)
        expect(attempts.nth(0)).to_contain_text("failing")
        expect(attempts.nth(0)).to_contain_text("Rejected")
        expect(attempts.nth(1)).to_contain_text("backup")
        expect(attempts.nth(1)).to_contain_text("Success")
        page.locator(f'[data-testid=payment][data-reference="{demo["failover"]}"] summary').click()
        expect(attempts.nth(1)).to_be_visible()
        _no_horizontal_scroll(page, width)

        session_page = page.get_by_test_id("sessions").locator(".long", has_text="/_emulator/pay/").first
        link = session_page.locator(".ellipsis")
        assert link.get_attribute("title") == demo["page"]
        assert page.evaluate("(el) => el.scrollWidth > el.clientWidth", link.element_handle()), "cut with an ellipsis"
        page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=server.url)
        copy = session_page.locator("button.copy")
        copy.click()
        expect(copy).to_have_class(re.compile(r"\bcopied\b"))
        assert page.evaluate("navigator.clipboard.readText()") == demo["page"]

        rules = page.get_by_test_id("rule-file")
        # the demo's rule added at run time, then the built-in ones: each gateway's file of
        # sandbox triggers, and payemu's own test cards and amounts
        expect(rules.nth(1)).to_be_attached()
        assert rules.nth(0).get_attribute("open") is not None
        built_in = [rules.nth(index) for index in range(1, rules.count())]
        assert [rule.get_attribute("open") for rule in built_in] == [None] * len(built_in), (
            "built-in rules start folded"
        )
        expect(rules.nth(0).get_by_test_id("rule")).to_contain_text(
            "amount 9041.00, operation Charge or PreAuth → Accepted"
        )
        # after the run-time rule, each gateway's documented triggers come before payemu's
        # generic test cards and amounts (the precedence of docs/scenarios.md)
        expect(rules.last).to_contain_text("built-in test cards and amounts")
        expect(page.get_by_test_id("scenarios")).not_to_contain_text(str(Path.cwd()))
        assert refused == [], "the page keeps to its Content-Security-Policy"
        assert "4111111111111111" not in page.content()


@pytest.mark.parametrize("width", WIDTHS)
def test_payment_detail_reads_at_every_width(
    server: ThreadServer, page: Page, demo: dict[str, Any], width: int
) -> None:
    with screenshot_on_failure(page, f"detail-{width}"):
        _open(page, f"{server.url}/_emulator/?key=browser-demo&tx={demo['captured']}", width)
        _no_horizontal_scroll(page, width)
        events = page.get_by_test_id("event")
        expect(events).to_have_count(4)  # authorization, capture, refund, status check
        expect(events.nth(3)).to_contain_text("Status check")
        expect(events.nth(3).get_by_test_id("native")).not_to_have_text("native —")
        expect(page.get_by_test_id("my-ref")).to_have_text("order-1008")
        expect(events.first.get_by_test_id("native")).to_contain_text("native Authorised")
        events.first.get_by_test_id("bodies").locator("summary").click()
        expect(events.first.get_by_test_id("bodies")).to_contain_text("411111******1111")
        _no_horizontal_scroll(page, width)
        assert "4111111111111111" not in page.content()
        assert '"cvv"' not in page.content()


def test_page_height_stays_bounded_after_200_payments(server: ThreadServer, page: Page) -> None:
    key = "browser-200"
    url = f"{server.url}/_emulator/?key={key}"
    with api(server, key) as client, screenshot_on_failure(page, "paged-1280"):
        dashboard_demo.populate(client)
        dashboard_demo.many(client, 30)  # every list's first page is full
        heights = {}
        for width in WIDTHS:
            _open(page, url, width)
            heights[width] = page.evaluate("document.scrollingElement.scrollHeight")
        dashboard_demo.many(client, 170)
        for width in WIDTHS:
            _open(page, url, width)
            height = page.evaluate("document.scrollingElement.scrollHeight")
            assert height <= heights[width] + 60, f"{width} px: {heights[width]} → {height}"
            _no_horizontal_scroll(page, width)
        assert heights[1280] < 6000  # the payments' pages, and one folded line per gateway with triggers

        _open(page, url, 1280)
        rows = page.get_by_test_id("payment")
        expect(rows).to_have_count(dashboard.PAGE_SIZES["payments"])
        pager = page.get_by_test_id("payments-pager")
        expect(pager).to_contain_text("1–20 of 210 payments · page 1 of 11")
        newest = rows.first.get_attribute("data-reference")
        pager.get_by_role("link", name="older →").click()
        expect(page.get_by_test_id("payments-pager")).to_contain_text("21–40 of 210 payments · page 2 of 11")
        expect(rows).to_have_count(20)
        assert newest not in [rows.nth(i).get_attribute("data-reference") for i in range(20)]
        expect(page.get_by_test_id("journal-pager")).to_contain_text("page 1 of")
