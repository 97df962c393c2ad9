"""The REAL eWallet JS library (``@orchestrasolutions/ewallet`` 1.6.6 from the npm registry)
in a real browser, paying through payemu: the example of ``examples/ewallet-page/``.

``npm ci`` installs the example's locked packages once into a folder under the system's
temporary directory (kept between runs, keyed by the lock file); ``.ci/run`` installs
Debian's ``npm`` when it is missing. payemu runs in-process with its card form on a free
port; the library opens the form at ``localhost:4200`` only, so the browser's requests there
are answered from that port (Playwright's routing: the page still sees the form's origin as
``http://localhost:4200``, and nothing listens on 4200, which a payemu of the user's may
hold). The merchant's server is the example's own code on a free port of ``localhost`` (the
library opens that form only from a localhost page). Marked ``chromium`` and ``npm``:
without them they skip with a summary line (failing under ``PAYEMU_REQUIRE_TOOLS=1``, as in
``.ci/run``).
"""

from __future__ import annotations

import fcntl
import hashlib
import importlib.util
import json
import shutil
import subprocess
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import ThreadingHTTPServer
from pathlib import Path
from types import ModuleType
from typing import Any

import httpx
import pytest
from playwright.sync_api import Browser, FrameLocator, Page, Route, expect

from emulator.domain.config import Settings
from emulator.ewallet.cardform import OTP_CODE
from emulator.ui import cardform
from tests.support.paths import REPO_ROOT
from tests.support.servers import in_thread
from tests.ui.test_ewallet_browser import (
    browser,  # noqa: F401  (the same Chromium fixture)
    screenshot_on_failure,
)

pytestmark = [pytest.mark.chromium, pytest.mark.npm]  # skipped without them (tests/support/tools.py)

ROOT = REPO_ROOT
EXAMPLE = ROOT / "examples" / "ewallet-page"
FORM_PORT = cardform.DEFAULT_PORT
CARD = "4111111111111111"
DECLINED_CARD = "4000000000000002"
TIMEOUT_MS = 20_000
OTP_TIMEOUT_MS = 30_000  # the library polls the challenge's status every 2.5 s


def load_example() -> ModuleType:
    spec = importlib.util.spec_from_file_location("ewallet_example_server", EXAMPLE / "server.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


SHOP = load_example()


@contextmanager
def file_lock(path: Path) -> Iterator[None]:
    with path.open("w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


@pytest.fixture(scope="session")
def node_modules() -> Path:
    """The example's packages, installed by ``npm ci`` from its lock file (once per lock)."""
    npm = shutil.which("npm")
    if npm is None:
        pytest.fail("npm is not installed: run `apt-get install -y npm` (Debian) — .ci/run does it.")
    lock = (EXAMPLE / "package-lock.json").read_bytes()
    folder = Path(tempfile.gettempdir()) / f"payemu-ewallet-npm-{hashlib.sha256(lock).hexdigest()[:16]}"
    library = folder / "node_modules" / SHOP.LIBRARY
    with file_lock(Path(str(folder) + ".lock")):
        if not library.is_file():
            shutil.rmtree(folder, ignore_errors=True)
            folder.mkdir(parents=True)
            for name in ("package.json", "package-lock.json"):
                shutil.copy(EXAMPLE / name, folder / name)
            shutil.copytree(EXAMPLE / "stubs", folder / "stubs")
            done = subprocess.run(
                [npm, "ci", "--no-audit", "--no-fund", "--loglevel=error"],
                cwd=folder,
                capture_output=True,
                text=True,
                timeout=300,
                check=False,
            )
            if done.returncode != 0:
                pytest.fail(f"npm ci of examples/ewallet-page failed:\n{done.stdout}\n{done.stderr}")
    assert library.is_file()
    return folder / "node_modules"


@dataclass
class Payemu:
    base: str
    app: Any
    form_port: int  # where the card form the browser asks localhost:4200 for is served


@pytest.fixture(scope="module")
def payemu() -> Iterator[Payemu]:
    """payemu on a free port, its card form on another free port."""
    with in_thread(Settings(any_key=True), card_form=True) as running:
        assert running.form_port is not None
        yield Payemu(running.url, running.app, running.form_port)


@dataclass
class Shop:
    url: str
    key: str


@contextmanager
def shop(payemu: Payemu, node_modules: Path, key: str) -> Iterator[Shop]:
    """The example's merchant server, for the API key ``key``, on localhost."""
    merchant = SHOP.Payemu(payemu.base, key)
    merchant.prepare()
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), SHOP.handler_for(merchant, node_modules))
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        yield Shop(f"http://localhost:{httpd.server_address[1]}", key)
    finally:
        httpd.shutdown()
        httpd.server_close()


@pytest.fixture
def page(browser: Browser, payemu: Payemu) -> Iterator[Page]:  # noqa: F811  (the imported fixture)
    context = browser.new_context()
    context.set_default_timeout(TIMEOUT_MS)
    library_form = f"http://localhost:{FORM_PORT}"
    served_form = f"http://127.0.0.1:{payemu.form_port}"

    def from_free_port(route: Route) -> None:
        route.fulfill(response=route.fetch(url=served_form + route.request.url.removeprefix(library_form)))

    context.route(f"{library_form}/**", from_free_port)
    # a routed page has no address: Chromium's local-network checks would stop its calls to
    # payemu on 127.0.0.1, so they are passed through the same way
    context.route(f"{payemu.base}/**", lambda route: route.fulfill(response=route.fetch()))
    yield context.new_page()
    context.close()


def open_form(page: Page, shop_url: str, kind: str) -> FrameLocator:
    """The shop's checkout of ``kind``: the library lists CardPay; its button opens
    payemu's card form (an iframe on localhost:4200)."""
    page.goto(f"{shop_url}/?kind={kind}")
    expect(page.get_by_test_id("methods")).to_have_text("CardPay")
    page.locator("#pay-by-card button").click()
    frame = page.frame_locator(f'iframe[src^="http://localhost:{FORM_PORT}//pay/"]')
    expect(frame.get_by_test_id("new-card")).to_be_visible()
    return frame


def pay_with_card(frame: FrameLocator, number: str) -> None:
    form = frame.get_by_test_id("new-card")
    form.locator("input[name=cardHolderName]").fill("Jane Doe")
    form.locator("input[name=cardNumber]").fill(number)
    form.locator("input[name=expirationMonth]").fill("12")
    form.locator("input[name=expirationYear]").fill("2031")
    form.locator("input[name=cvv]").fill("123")
    form.get_by_role("button").click()


def details(page: Page) -> dict[str, Any]:
    return json.loads(page.get_by_test_id("details").inner_text())


def journal_text(payemu: Payemu, key: str) -> str:
    answer = httpx.get(f"{payemu.base}/_emulator/requests", headers={"X-Api-Key": key}, timeout=10)
    assert answer.status_code == 200, answer.text
    return answer.text


def test_card_payment_succeeds(payemu: Payemu, node_modules: Path, page: Page) -> None:
    with shop(payemu, node_modules, "library-card") as site, screenshot_on_failure(page, "library-card"):
        frame = open_form(page, site.url, "card")
        expect(frame.get_by_test_id("amount")).to_have_text("12.50 EUR")
        pay_with_card(frame, CARD)
        expect(page.get_by_test_id("result")).to_contain_text("Success: paid 12.50 EUR through shopStripe")
        data = details(page)  # what the merchant's server got from validateResults
        assert data["upgChargeResults"]["operationResultCode"] == "Success"
        assert data["tokenAndMaskedCardModel"]["bankCard"]["number"] == "411111******1111"
        assert data["failedUpgChargeResults"] == []
        expect(page.locator("iframe")).to_have_count(0)  # the library closed its form
        assert CARD not in page.content()
        journal = journal_text(payemu, site.key)
        assert "LibraryCharge" in journal
        assert CARD not in journal


def test_decline_reaches_the_callback(payemu: Payemu, node_modules: Path, page: Page) -> None:
    with shop(payemu, node_modules, "library-decline") as site, screenshot_on_failure(page, "library-decline"):
        frame = open_form(page, site.url, "card")
        pay_with_card(frame, DECLINED_CARD)
        expect(page.get_by_test_id("result")).to_contain_text("Declined: Rejected (CardDeclined)")
        data = details(page)
        assert data["upgChargeResults"]["gatewayName"] == "Stripe"
        assert data["providerTransactionId"] is None


def test_failover_succeeds_on_the_fallback(payemu: Payemu, node_modules: Path, page: Page) -> None:
    with shop(payemu, node_modules, "library-failover") as site, screenshot_on_failure(page, "library-failover"):
        frame = open_form(page, site.url, "failover")
        pay_with_card(frame, CARD)
        expect(page.get_by_test_id("result")).to_contain_text("Success: paid 42.00 EUR through shopStripe")
        data = details(page)
        assert [failed["gatewayName"] for failed in data["failedUpgChargeResults"]] == ["NULLFailure"]
        assert [failed["operationResultCode"] for failed in data["failedUpgChargeResults"]] == ["Rejected"]
        assert [(a["paymentGatewayAccountId"], a["isFallback"]) for a in data["attempts"]] == [
            ("shopFailing", False),
            ("shopStripe", True),
        ]


def test_otp_challenge_then_success(payemu: Payemu, node_modules: Path, page: Page) -> None:
    with shop(payemu, node_modules, "library-otp") as site, screenshot_on_failure(page, "library-otp"):
        frame = open_form(page, site.url, "otp")
        pay_with_card(frame, CARD)
        otp = frame.get_by_test_id("otp")
        expect(otp).to_be_visible()
        otp.locator("input[name=otp]").fill(OTP_CODE)
        otp.get_by_role("button").click()
        result = page.get_by_test_id("result")
        expect(result).to_contain_text("Success: paid 30.00 EUR through shopStripe", timeout=OTP_TIMEOUT_MS)
        journal = journal_text(payemu, site.key)
        for operation in ("LibraryStartPayment", "LibrarySendOtp", "LibraryOtpStatus", "LibraryCharge"):
            assert operation in journal


def test_wrong_otp_fails_without_paying(payemu: Payemu, node_modules: Path, page: Page) -> None:
    with shop(payemu, node_modules, "library-otp-wrong") as site, screenshot_on_failure(page, "library-otp-wrong"):
        frame = open_form(page, site.url, "otp")
        pay_with_card(frame, CARD)
        otp = frame.get_by_test_id("otp")
        otp.locator("input[name=otp]").fill("9999")
        otp.get_by_role("button").click()
        expect(page.get_by_test_id("result")).to_contain_text("Payment failed", timeout=OTP_TIMEOUT_MS)
        assert "LibraryCharge" not in journal_text(payemu, site.key)
