"""emulator.http.pages.home: GET / is a start page for a browser, a JSON 404 for a program."""

from __future__ import annotations

import re

from starlette.testclient import TestClient

from emulator.http.pages.security import headers

HTML = {"Accept": "text/html,application/xhtml+xml"}


def test_a_browser_gets_the_start_page_with_its_links(anon: TestClient) -> None:
    answer = anon.get("/", headers=HTML)
    assert answer.status_code == 200
    assert answer.headers["content-type"].startswith("text/html")
    links = re.findall(r'href="([^"]+)"', answer.text)
    assert {"/_emulator/", "/docs", "/swagger/1.0/swagger.json", "/_emulator/openapi.json"} <= set(links)
    assert "mkdocs serve" in answer.text
    assert "X-Api-Key: sandbox-api-key" in answer.text
    # no external asset: every stylesheet and script is payemu's own
    assert not re.search(r'(src|href)="https?://(?!127\.0\.0\.1:8000/)', answer.text)


def test_the_page_sends_the_pages_security_headers(anon: TestClient) -> None:
    answer = anon.get("/", headers=HTML)
    for name, value in headers(embeddable=False).items():
        assert answer.headers[name] == value


def test_a_program_still_gets_the_json_404(anon: TestClient) -> None:
    answer = anon.get("/")
    assert answer.status_code == 404
    assert answer.json() == [{"fieldName": "path", "errors": ["No resource at GET /."]}]


def test_with_an_admin_key_no_api_key_is_shown(make_app) -> None:  # type: ignore[no-untyped-def]
    with TestClient(make_app(admin_key="s3cret-admin")) as anon:
        answer = anon.get("/", headers=HTML)
    assert answer.status_code == 200
    assert "sandbox-api-key" not in answer.text
    assert "needs the admin key" in answer.text
