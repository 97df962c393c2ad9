"""payemu's card form as the REAL eWallet library shows it, in Chromium: the code box
hidden until a challenge, the library's strings found beside the form (no console error
on load), a wrong code ending in a message the shop can show.

The library opens the form at ``http://localhost:4200//pay/``; here payemu serves it on a
free port, and Chromium's resolver maps ``localhost:4200`` there, so these tests never
need port 4200 (a user's own ``payemu serve`` may hold it). Marked ``chromium`` and
``npm`` (tests/support/tools.py): without them they skip with a summary line.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import cast

import pytest
from playwright.sync_api import Browser, ConsoleMessage, FrameLocator, Page, Response, expect, sync_playwright

from emulator.domain.config import Settings
from emulator.ewallet.cardform import WRONG_CODE
from emulator.ui import cardform
from tests.support.servers import in_thread
from tests.ui.test_ewallet_browser import CHROMIUM_ARGS, chromium_path, screenshot_on_failure
from tests.ui.test_ewallet_library import (
    CARD,
    OTP_TIMEOUT_MS,
    TIMEOUT_MS,
    Payemu,
    node_modules,  # noqa: F401  (the example's packages)
    pay_with_card,
    shop,
)

pytestmark = [pytest.mark.chromium, pytest.mark.npm]

LIBRARY_FORM = f"http://localhost:{cardform.DEFAULT_PORT}"  # where the library looks for the form


@pytest.fixture(scope="module")
def payemu() -> Iterator[Payemu]:
    """payemu and its card form, each on a free loopback port."""
    with in_thread(Settings(any_key=True), card_form=True) as running:
        assert running.form_port is not None
        yield Payemu(running.url, running.app, running.form_port)


class Watched:
    """A page whose requests to the library's form address go to payemu's form port, with
    what the browser logged as errors and the status of each strings file it fetched."""

    def __init__(self, page: Page) -> None:
        self.page = page
        self.errors: list[str] = []
        self.strings: list[int] = []


@pytest.fixture(scope="module")
def form_browser(payemu: Payemu) -> Iterator[Browser]:
    """Chromium resolving the library's form address, ``localhost:4200``, to payemu's
    free form port (a rule of its resolver: the page keeps its origin and its address)."""
    rule = f"MAP localhost:{cardform.DEFAULT_PORT} 127.0.0.1:{payemu.form_port}"
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(
            executable_path=chromium_path(), headless=True, args=[*CHROMIUM_ARGS, f"--host-resolver-rules={rule}"]
        )
        yield launched
        launched.close()


@pytest.fixture
def watched(form_browser: Browser) -> Iterator[Watched]:
    context = form_browser.new_context()
    context.set_default_timeout(TIMEOUT_MS)
    page = context.new_page()
    seen = Watched(page)

    def strings(response: Response) -> None:
        if "/assets/i18n/" in response.url:
            seen.strings.append(response.status)

    def note(message: ConsoleMessage) -> None:
        if message.type == "error":
            seen.errors.append(message.text)

    context.on("response", strings)
    context.on("console", note)
    page.on("pageerror", lambda error: seen.errors.append(str(error)))
    yield seen
    context.close()


def test_the_code_box_waits_for_the_challenge_and_a_wrong_code_says_why(
    payemu: Payemu,
    node_modules: Path,  # noqa: F811
    watched: Watched,
) -> None:
    page = watched.page
    with shop(payemu, node_modules, "form-otp-wrong") as site, screenshot_on_failure(page, "form-otp-wrong"):
        page.goto(f"{site.url}/?kind=otp")
        expect(page.get_by_test_id("methods")).to_have_text("CardPay")
        page.locator("#pay-by-card button").click()
        frame = page.frame_locator(f'iframe[src^="{LIBRARY_FORM}//pay/"]')
        expect(frame.get_by_test_id("new-card")).to_be_visible()
        otp = frame.get_by_test_id("otp")
        assert otp.evaluate("box => getComputedStyle(box).display") == "none"
        expect(otp).to_be_hidden()
        pay_with_card(frame, CARD)
        expect(otp).to_be_visible()  # the challenge came
        assert otp.evaluate("box => getComputedStyle(box).display") == "flex"
        otp.locator("input[name=otp]").fill("9999")
        otp.get_by_role("button").click()
        expect(page.get_by_test_id("result")).to_have_text(f"Payment failed: {WRONG_CODE}", timeout=OTP_TIMEOUT_MS)
    assert watched.strings == [200]  # the library asked for its strings once, and had them
    assert watched.errors == []


@pytest.mark.parametrize("display", ["iframe", "popup"])  # the library's default is a popup
def test_a_plain_payment_logs_no_error(
    payemu: Payemu,
    node_modules: Path,  # noqa: F811
    watched: Watched,
    display: str,
) -> None:
    page = watched.page
    with shop(payemu, node_modules, f"form-{display}") as site, screenshot_on_failure(page, f"form-{display}"):
        page.goto(f"{site.url}/?kind=card&display={display}")
        if display == "popup":
            with page.context.expect_page() as opened:
                page.locator("#pay-by-card button").click()
            form: FrameLocator = cast(FrameLocator, opened.value)  # a page finds the form as a frame does
            assert opened.value.url.startswith(f"{LIBRARY_FORM}//pay/")
        else:
            page.locator("#pay-by-card button").click()
            form = page.frame_locator(f'iframe[src^="{LIBRARY_FORM}//pay/"]')
        expect(form.get_by_test_id("otp")).to_be_hidden()
        pay_with_card(form, CARD)
        expect(page.get_by_test_id("result")).to_contain_text("Success: paid 12.50 EUR")
    assert watched.strings == [200]
    assert watched.errors == []
