"""The API page /docs on a phone (390 px): no sideways scroll of the page, and no word of a
tag's description broken in the middle. A screenshot of each is kept in test-artifacts/."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page

from tests.support.servers import ThreadServer
from tests.ui.test_ewallet_browser import ARTIFACTS, browser, page, screenshot_on_failure, server

pytestmark = pytest.mark.chromium  # without Chromium: skipped with a summary line (tests/support/tools.py)
__all__ = ["browser", "page", "server"]
WIDTH = 390

# Each rendered line of every tag description, from the text's own line boxes: a word cut
# in two would end one line and begin the next without a space between.
LINES = """() => Array.from(document.querySelectorAll(".opblock-tag small p")).map((p) => {
  const text = p.firstChild;
  const range = document.createRange();
  const lines = [];
  let top = null;
  for (let i = 0; i < text.length; i++) {
    range.setStart(text, i);
    range.setEnd(text, i + 1);
    const box = range.getClientRects()[0];
    if (!box) continue;
    if (top === null || box.top > top + 2) {
      lines.push("");
      top = box.top;
    }
    lines[lines.length - 1] += text.data[i];
  }
  return lines;
})"""


def _open(page: Page, server: ThreadServer, name: str) -> None:
    page.set_viewport_size({"width": WIDTH, "height": 900})
    page.goto(server.url + "/docs")
    page.locator(".opblock-tag small p").first.wait_for()
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)


def _scroll(page: Page) -> list[int]:
    return list(page.evaluate("[document.scrollingElement.scrollWidth, window.innerWidth]"))


def test_the_api_page_fits_a_phone_and_breaks_no_word(server: ThreadServer, page: Page) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    with screenshot_on_failure(page, "apidocs-390-failed"):
        _open(page, server, "apidocs-390")
        described = page.evaluate(LINES)
        assert described, "the tags have descriptions"
        first = page.locator(".opblock-tag small p").first
        assert first.text_content() == "Gateway-independent payment operations and the gateway catalog."
        style = first.evaluate("(p) => [getComputedStyle(p).wordBreak, getComputedStyle(p).overflowWrap]")
        assert style[0] not in ("break-all", "break-word"), style
        for lines in described:
            whole = "".join(lines)
            for line in lines[:-1]:
                # a line ends at a space (kept with it) or after a hyphen, never inside a word
                assert line.endswith((" ", "-")), f"a word broken after {line!r} in {whole!r}"
        assert max(len(lines) for lines in described) <= 3, described

        width, inner = _scroll(page)
        assert inner == WIDTH
        assert width <= inner, f"the page scrolls sideways: {width} px wide at {inner}"

        # an operation opened: its examples and tables scroll inside their boxes, not the page
        operation = page.locator(".opblock", has=page.locator("[data-path='/PaymentGateway/charge']")).first
        operation.locator(".opblock-summary-control").click()
        operation.locator(".responses-wrapper").wait_for()
        page.screenshot(path=str(ARTIFACTS / "apidocs-390-charge.png"), full_page=False)
        width, inner = _scroll(page)
        assert width <= inner, f"the page scrolls sideways with an operation open: {width} px wide"
        path = operation.locator(".opblock-summary-path")
        assert path.evaluate("(e) => e.getClientRects().length") >= 1
        box = path.bounding_box()
        assert box is not None and box["height"] < 30, f"the path /PaymentGateway/charge stays on one line: {box}"
