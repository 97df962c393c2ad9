"""First contact in Chromium: the start page, the /docs API page making a real call, and
every page of the built docs site with no broken internal link. Fixtures (Chromium,
payemu on a free port) are those of tests/ui/test_ewallet_browser.py."""

from __future__ import annotations

import functools
import re
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urldefrag, urlsplit

import httpx
import pytest
from playwright.sync_api import ConsoleMessage, Page, expect

from tests.support.paths import REPO_ROOT
from tests.support.servers import ThreadServer
from tests.ui.test_ewallet_browser import browser, page, screenshot_on_failure, server

pytestmark = pytest.mark.chromium  # without Chromium: skipped with a summary line (tests/support/tools.py)
__all__ = ["browser", "page", "server"]
ROOT = REPO_ROOT


def _errors(page: Page) -> list[str]:
    found: list[str] = []

    def note(message: ConsoleMessage) -> None:
        if message.type == "error":
            found.append(message.text)

    page.on("console", note)
    page.on("pageerror", lambda error: found.append(str(error)))
    return found


def test_the_start_page_links_what_payemu_serves(server: ThreadServer, page: Page) -> None:
    errors = _errors(page)
    with screenshot_on_failure(page, "home"):
        page.goto(server.url + "/")
        expect(page.get_by_role("heading", level=1)).to_contain_text("payemu")
        for name, target in (
            ("Dashboard", "/_emulator/"),
            ("API page", "/docs"),
            ("Served schema", "/swagger/1.0/swagger.json"),
            ("Control API schema", "/_emulator/openapi.json"),
        ):
            assert page.get_by_role("link", name=name).get_attribute("href") == target
        page.get_by_role("link", name="Dashboard").click()
        expect(page).to_have_url(server.url + "/_emulator/")
        expect(page.locator("body")).to_contain_text("payemu dashboard")  # the dashboard itself
    assert errors == []


def test_the_api_page_calls_payemu(server: ThreadServer, page: Page) -> None:
    errors = _errors(page)
    with screenshot_on_failure(page, "apidocs"):
        page.goto(server.url + "/docs")
        operation = page.locator(".opblock", has=page.locator("[data-path='/Utils/apiKey']")).first
        operation.locator(".opblock-summary").click()
        operation.get_by_role("button", name="Try it out").click()
        operation.get_by_role("button", name="Execute").click()
        answer = operation.locator(".live-responses-table .response")
        expect(answer.locator(".response-col_status")).to_contain_text("200")
        expect(answer).to_contain_text('"userName": "sandbox-merchant"')
        expect(answer).to_contain_text('"isSandbox": true')
    assert errors == []


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, *args: Any) -> None:
        return None


@pytest.fixture(scope="module")
def docs_site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The docs built by `mkdocs build --strict`, served by a static file server."""
    site = tmp_path_factory.mktemp("site")
    built = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert built.returncode == 0, built.stderr
    handler = functools.partial(_Quiet, directory=str(site))
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


def _pages() -> list[str]:
    names = sorted(p.relative_to(ROOT / "docs").with_suffix("") for p in (ROOT / "docs").rglob("*.md"))
    return ["" if str(n) == "index" else f"{n}/" for n in names]


def test_every_docs_page_opens_with_no_broken_internal_link(docs_site: str, page: Page) -> None:
    errors = _errors(page)
    checked: set[tuple[str, str]] = set()
    answers: dict[str, httpx.Response] = {}  # each page fetched once, however many anchors link into it
    ids: dict[str, set[str]] = {}
    with httpx.Client(timeout=10) as client:
        for path in _pages():
            with screenshot_on_failure(page, "docs-" + path.strip("/").replace("/", "-")):
                page.goto(f"{docs_site}/{path}")
                expect(page.locator("article h1").first).to_be_visible()
                links = page.eval_on_selector_all("a[href]", "links => links.map(a => a.href)")
            for link in links:
                url, fragment = urldefrag(link)
                if not url.startswith(docs_site) or (url, fragment) in checked:
                    continue
                checked.add((url, fragment))
                if url not in answers:
                    answers[url] = client.get(url)
                answer = answers[url]
                assert answer.status_code == 200, f"{path}: broken link {link}"
                if fragment and urlsplit(url).path.endswith("/"):
                    known = ids.setdefault(url, set(_ids(answer.text)))
                    assert fragment in known, f"{path}: no anchor #{fragment} on {url}"
    assert len(_pages()) >= 20
    assert len(checked) > 60  # the nav, the tables of contents, the links in the text
    assert errors == []


def _ids(html: str) -> list[str]:
    return re.findall(r'\sid="([^"]+)"', html)
