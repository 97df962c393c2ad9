"""The hosted payment page, the JS library and the dashboard in a real browser.

Playwright drives Debian's Chromium (``apt-get install chromium``; ``.ci/run`` installs it)
against payemu served by uvicorn on a free port. Marked ``chromium``: without it they skip
with a summary line (``PAYEMU_REQUIRE_TOOLS=1``, set by ``.ci/run``, makes that a failure).
On failure a screenshot goes to ``test-artifacts/``.
"""

from __future__ import annotations

import shutil
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx
import pytest
from playwright.sync_api import Browser, Page, expect, sync_playwright

from emulator.domain.config import Settings
from tests.support.paths import REPO_ROOT
from tests.support.servers import ThreadServer, in_thread

pytestmark = pytest.mark.chromium  # without Chromium: skipped with a summary line (tests/support/tools.py)

ARTIFACTS = REPO_ROOT / "test-artifacts"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
CARD = "4111111111111111"
TIMEOUT_MS = 15_000


def chromium_path() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        pytest.fail("Chromium is not installed: run `apt-get install -y chromium` (Debian) — .ci/run does it.")
    return found


@pytest.fixture(scope="module")
def server() -> Iterator[ThreadServer]:
    with in_thread(Settings(any_key=True)) as running:
        yield running


class MerchantSite:
    """A merchant front end on its own origin (localhost, another port) serving one page."""

    def __init__(self) -> None:
        self.html = b""
        site = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.end_headers()
                self.wfile.write(site.html)

            def log_message(self, *args: Any) -> None:
                return None

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://localhost:{self.httpd.server_address[1]}/checkout"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()


@pytest.fixture(scope="module")
def merchant() -> Iterator[MerchantSite]:
    site = MerchantSite()
    yield site
    site.httpd.shutdown()
    site.httpd.server_close()


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    executable = chromium_path()
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=executable, headless=True, args=CHROMIUM_ARGS)
        yield launched
        launched.close()


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    context = browser.new_context()
    context.set_default_timeout(TIMEOUT_MS)
    opened = context.new_page()
    yield opened
    context.close()


@contextmanager
def screenshot_on_failure(page: Page, name: str) -> Iterator[None]:
    try:
        yield
    except BaseException:
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)
        raise


def api(server: ThreadServer, key: str) -> httpx.Client:
    return httpx.Client(base_url=server.url, headers={"X-Api-Key": key}, timeout=10)


def failover_session(client: httpx.Client, **changes: Any) -> dict[str, str]:
    """Accounts `failing` (NULLFailure) and `backup` (NULLSuccess), a stored card in the
    vault, and a CHARGE session: primary `failing`, fallback `backup`."""
    for name, gateway in (("failing", "NULLFailure"), ("backup", "NULLSuccess")):
        stored = client.put(f"/PaymentGatewayAccounts/{name}", json={"paymentGatewayName": gateway, "credentials": []})
        assert stored.status_code == 200, stored.text
    card = client.post("/StringTokens", json={"payload": CARD})
    assert card.status_code == 201, card.text
    body = {
        "operation": "CHARGE",
        "mode": "TEST",
        "currencyCode": "EUR",
        "amount": 42.5,
        "paymentGatewayAccountId": "failing",
        "fallbackUpgs": [{"paymentGatewayAccountId": "backup"}],
        "allowedBrands": ["Visa", "MasterCard"],
        "customerName": "Jane Doe",
        "storedCards": [
            {
                "token": card.json()["token"],
                "lastDigits": "1111",
                "expirationMonth": 12,
                "expirationYear": 2031,
                "brand": "Visa",
                "nameOnCard": "Jane Doe",
            }
        ],
    }
    body.update(changes)
    session = client.post("/EWalletOperations", json=body)
    assert session.status_code == 200, session.text
    return {"token": session.json()["token"], "page": session.headers["x-payemu-payment-page"]}


def test_pay_stored_card_with_cvv_through_fallback(server: ThreadServer, page: Page) -> None:
    with api(server, "browser-pay") as client, screenshot_on_failure(page, "pay-stored-card"):
        session = failover_session(client)
        page.goto(session["page"])
        expect(page.get_by_test_id("amount")).to_have_text("42.50 EUR")
        expect(page.get_by_test_id("brands")).to_contain_text("Visa, MasterCard")
        stored = page.get_by_test_id("stored-card-0")
        expect(stored).to_contain_text("•••• 1111")
        stored.locator("input[name=cvv]").fill("123")
        stored.get_by_role("button").click()
        status = page.get_by_test_id("status")
        expect(status).to_contain_text("Payment approved", timeout=TIMEOUT_MS)
        expect(status).to_contain_text("via backup (2 attempts)")
        result_token = page.get_by_test_id("result-token").input_value()
        assert result_token.count(".") == 2
        assert CARD not in page.content()

        validated = client.post("/EWalletOperations/validateResults", json=result_token)
        assert validated.status_code == 200, validated.text
        data = validated.json()
        assert [
            (a["attemptNumber"], a["paymentGatewayAccountId"], a["isFallback"], a["operationResultCode"])
            for a in data["attempts"]
        ] == [(1, "failing", False, "Rejected"), (2, "backup", True, "Success")]
        assert data["providerAccountId"] == "backup"
        assert data["upgChargeResults"]["gatewayName"] == "NULLSuccess"
        assert data["transactionAmount"] == 42.5
        assert data["transactionCurrency"] == "EUR"
        assert data["tokenAndMaskedCardModel"]["bankCard"]["number"] == "411111******1111"
        assert data["providerTransactionId"] in status.inner_text()

        page.reload()
        expect(page.get_by_test_id("paid")).to_contain_text(data["providerTransactionId"])
        foreign = httpx.post(
            f"{server.url}/EWalletOperations/validateResults",
            json=result_token,
            headers={"X-Api-Key": "browser-someone-else"},
        )
        assert foreign.status_code == 400


def test_dashboard_shows_the_payment(server: ThreadServer, page: Page) -> None:
    key = "browser-dashboard"
    with api(server, key) as client, screenshot_on_failure(page, "dashboard"):
        session = failover_session(client, amount=17.25, currencyCode="USD")
        dashboard = f"{server.url}/_emulator/?key={key}"
        page.goto(f"{session['page']}?returnUrl={httpx.URL(dashboard)}")
        stored = page.get_by_test_id("stored-card-0")
        stored.locator("input[name=cvv]").fill("456")
        stored.get_by_role("button").click()
        page.wait_for_url(lambda url: url.startswith(dashboard) and "resultToken=" in url)  # token handed on
        result_token = httpx.URL(page.url).params["resultToken"]
        data = client.post("/EWalletOperations/validateResults", json=result_token).json()
        reference = data["providerTransactionId"]

        payments = page.get_by_test_id("payments")
        row = payments.get_by_test_id("payment").filter(has_text=reference)
        expect(row).to_contain_text("17.25")
        expect(row).to_contain_text("backup")
        expect(row.get_by_test_id("attempt").first).to_contain_text("failing")
        expect(row.get_by_test_id("attempt").first).to_contain_text("Rejected")
        expect(page.get_by_test_id("sessions").locator("tr", has_text=reference)).to_contain_text("paid")
        expect(page.get_by_test_id("journal")).to_contain_text("HostedPagePay")
        assert "4111111111111111" not in page.content()

        # it refreshes on its own: a charge made now appears without reloading
        charge = client.post(
            "/PaymentGateway/charge",
            json={
                "amount": 3.5,
                "currency": "USD",
                "paymentGatewayAccountName": "backup",
                "card": {
                    "cardHolderName": "Jo",
                    "cardNumber": "5555555555554444",
                    "expirationMonth": 2,
                    "expirationYear": 2032,
                    "cvv": "111",
                },
            },
        )
        assert charge.status_code == 200, charge.text
        expect(payments.get_by_test_id("payment").filter(has_text=charge.json()["gatewayReference"])).to_contain_text(
            "555555******4444", timeout=TIMEOUT_MS
        )


def test_no_redirect_to_a_host_hidden_behind_a_backslash(server: ThreadServer, page: Page) -> None:
    """``http://evil.example\\@127.0.0.1/x`` is evil.example to Chromium: after paying, the
    page stays where it is and no request (with the result token or otherwise) goes there."""
    seen: list[str] = []
    page.route("**/*", lambda route: (seen.append(route.request.url), route.continue_()))
    with api(server, "browser-disguised") as client, screenshot_on_failure(page, "disguised-return-url"):
        session = failover_session(client)
        disguised = f"http://evil.example\\@127.0.0.1:{server.port}/x"
        page.goto(f"{session['page']}?returnUrl={httpx.URL(disguised)}&origin={httpx.URL(disguised)}")
        stored = page.get_by_test_id("stored-card-0")
        stored.locator("input[name=cvv]").fill("123")
        stored.get_by_role("button").click()
        expect(page.get_by_test_id("status")).to_contain_text("Payment approved", timeout=TIMEOUT_MS)
        page.wait_for_timeout(300)  # a redirect, were there one, starts at once
        assert page.url.startswith(session["page"])
        assert not [url for url in seen if "evil.example" in httpx.URL(url).host]


def test_merchant_page_with_the_js_library(server: ThreadServer, merchant: MerchantSite, page: Page) -> None:
    """A merchant front end on another origin uses payments-library.js as it would the
    real library: checkAvailability → payBy → callback with the result token (the hosted
    page in an iframe posts it to the merchant's window)."""
    with api(server, "browser-library") as client, screenshot_on_failure(page, "library"):
        session = failover_session(client, storedCards=None)
        merchant.html = f"""<!doctype html><html><body>
          <div id="card-button"></div><pre id="out"></pre>
          <script src="{server.url}/_emulator/static/payments-library.js"></script>
          <script>
            var engine = new eWallet.Engine("{session["token"]}");
            var out = document.getElementById("out");
            engine.checkAvailability().then(function (methods) {{
              out.dataset.methods = methods.join(",");
              engine.payBy([{{name: "CardPay", domEntitySelector: "#card-button"}},
                            {{name: "PayPal", domEntitySelector: "#nothing"}}], function (result) {{
                var parsed = engine.parseResultToken(result.token);
                out.dataset.token = result.token;
                out.textContent = parsed[1] + " " + parsed[0].upgChargeResults.operationResultCode;
              }});
            }});
          </script></body></html>""".encode()
        page.goto(merchant.url)
        expect(page.locator("#out")).to_have_attribute("data-methods", "CardPay")
        page.get_by_role("button", name="Pay by card").click()
        frame = page.frame_locator("iframe[title=Payment]")
        form = frame.get_by_test_id("new-card")
        form.locator("input[name=cardHolderName]").fill("Jane Doe")
        form.locator("input[name=cardNumber]").fill("4111 1111 1111 1111")
        form.locator("input[name=expirationMonth]").fill("12")
        form.locator("input[name=expirationYear]").fill("2031")
        form.locator("input[name=cvv]").fill("123")
        form.get_by_role("button").click()
        expect(page.locator("#out")).to_have_text("true Success", timeout=TIMEOUT_MS)
        expect(page.locator("iframe[title=Payment]")).to_have_count(0)
        token = page.locator("#out").get_attribute("data-token")
        data = client.post("/EWalletOperations/validateResults", json=token).json()
        assert [a["isFallback"] for a in data["attempts"]] == [False, True]
        assert data["tokenAndMaskedCardModel"]["bankCard"]["nameOnCard"] == "Jane Doe"
