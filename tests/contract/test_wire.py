"""emulator.contract.wire: every JSON answer carries ``X-Content-Type-Options: nosniff``,
whichever way it leaves (the fast whole-answer path, Starlette's, a refusal the protocol
writes itself, the library's mount), on a real server."""

from __future__ import annotations

import contextlib
import socket
from collections.abc import Iterator
from urllib.parse import urlsplit

import httpx
import pytest

from emulator.contract.wire import JsonResponse, json_response
from emulator.domain.config import Settings
from emulator.edge.protocol import refusal
from tests.support.servers import ThreadServer, in_thread


@pytest.fixture(scope="module")
def server() -> Iterator[ThreadServer]:
    with in_thread(Settings()) as running:
        yield running


@pytest.mark.parametrize(
    ("method", "path", "body", "status"),
    [
        ("POST", "/StringTokens", {"payload": "4111111111111111"}, 201),  # fast path, a header of its own
        ("POST", "/StringTokens", {"payload": 7}, 400),  # fast path, an error
        ("GET", "/PaymentGatewayAccounts", None, 200),  # fast path
        ("GET", "/StringTokens/AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", None, 404),  # routed (a path parameter)
        ("GET", "/no/such/path", None, 404),  # Starlette's 404, rendered by payemu
        ("DELETE", "/PaymentGatewayAccounts", None, 405),
        ("GET", "/_emulator/health", None, 200),  # the control API
        ("GET", "/swagger/1.0/swagger.json", None, 200),
        ("POST", "/_emulator/ewallet/v1/coveredCountries", None, None),  # the library's mount
    ],
)
def test_json_answers_say_nosniff(
    server: ThreadServer, method: str, path: str, body: object, status: int | None
) -> None:
    tenant = server.tenant()
    answer = tenant.client.request(method, path, json=body)
    tenant.close()
    if status is not None:
        assert answer.status_code == status, answer.text
    assert answer.headers["content-type"] == "application/json"
    assert answer.headers.get_list("x-content-type-options") == ["nosniff"]
    answer.json()


def test_an_answer_without_a_body_has_no_content_type_to_guard(server: ThreadServer) -> None:
    tenant = server.tenant()
    created = tenant.client.put(
        "/PaymentGatewayAccounts/acct", json={"paymentGatewayName": "Stripe", "credentials": []}
    )
    assert created.status_code == 200, created.text
    gone = tenant.client.delete("/PaymentGatewayAccounts/acct")
    tenant.close()
    assert (gone.status_code, gone.content) == (200, b"")
    assert "content-type" not in gone.headers
    assert "x-content-type-options" not in gone.headers


def test_a_refusal_written_by_the_protocol_says_nosniff(server: ThreadServer) -> None:
    assert b"\r\nx-content-type-options: nosniff\r\n" in refusal(408, "body", "Too slow.")
    address = urlsplit(server.base_url)
    with socket.create_connection((address.hostname, address.port), timeout=10) as sock:
        sock.sendall(b"GET / HTTP/1.1\r\nHost: x\r\nX-Big: ")
        with contextlib.suppress(OSError):  # refused (and closed) part way through
            for _ in range(40):
                sock.sendall(b"a" * 8192)
        data = b""
        while b"\r\n\r\n" not in data:
            data += sock.recv(65536)
    assert data.startswith(b"HTTP/1.1 431 ")
    assert b"\r\nx-content-type-options: nosniff\r\n" in data.partition(b"\r\n\r\n")[0]


def test_json_response_adds_nosniff_once() -> None:
    plain = json_response(200, {"a": 1})
    assert isinstance(plain, JsonResponse)
    assert plain.headers.getlist("x-content-type-options") == ["nosniff"]
    given = json_response(200, {"a": 1}, {"X-Content-Type-Options": "nosniff", "Cache-Control": "no-store"})
    assert given.headers.getlist("x-content-type-options") == ["nosniff"]
    assert json_response(204, None).headers.get("x-content-type-options") is None
    assert httpx.Headers(plain.raw_headers)["content-type"] == "application/json"
