"""emulator.ui.home: GET / is a start page for a browser, a JSON 404 for a program."""

from __future__ import annotations

import re

from starlette.testclient import TestClient

from emulator.ui.security import headers

HTML = {"Accept": "text/html,application/xhtml+xml"}


def test_a_browser_gets_the_start_page_with_its_links(anon: TestClient) -> None:
    answer = anon.get("/", headers=HTML)
    assert answer.status_code == 200
    assert answer.headers["content-type"].startswith("text/html")
    links = re.findall(r'href="([^"]+)"', answer.text)
    assert {"/_emulator/", "/docs", "/swagger/1.0/swagger.json", "/_emulator/openapi.json"} <= set(links)
    assert "X-Api-Key: sandbox-api-key" in answer.text
    # no external asset or link: every stylesheet and script is payemu's own
    assert not re.search(r'(src|href)="https?://', answer.text)


def test_the_start_page_says_which_page_is_served_here_and_where_the_docs_are(anon: TestClient) -> None:
    text = anon.get("/", headers=HTML).text
    served = text[text.index("<h2>Served by this payemu</h2>") : text.index("<h2>Full documentation</h2>")]
    assert '<a href="/docs">API page</a>' in served
    docs = re.sub(r"\s+", " ", text[text.index("<h2>Full documentation</h2>") :])
    assert "not served by payemu and have no public site" in docs
    assert "In a checkout of payemu's source, run <code>mkdocs serve</code>" in docs
    links = re.findall(r'href="([^"]+)"', text)
    assert not [link for link in links if ":8000" in link], "no link to a server that may not be running"


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


def test_the_start_page_shows_every_gateway_by_level(anon: TestClient) -> None:
    text = anon.get("/", headers=HTML).text
    table = text[text.index("<h2>Gateways by level</h2>") : text.index("<h2>Full documentation</h2>")]
    rows = re.findall(r"<tr><td>(\w+) \((\d+)\)</td>", table)
    assert [level for level, _ in rows] == ["sandbox", "credentials", "listed"]
    named = re.findall(r"<code>(\w+)</code>", table)
    assert sum(int(count) for _, count in rows) == len(named) == len(set(named))
    sandbox = table[: table.index("<tr><td>credentials")]
    assert "<code>Stripe</code>" in sandbox
    assert "<code>Tyro</code>" in table[table.index("<tr><td>listed") :]
