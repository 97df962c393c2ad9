"""The guarded HTTP protocol: its limits come from the settings, the head deadline never
cuts a request whose head has arrived (slow bodies, slow answers, keep-alive), and what
it refuses gets a JSON error. Floods and slowloris clients are in test_hostile.py,
pipelining in test_pipelining.py."""

from __future__ import annotations

import contextlib
import json
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from emulator.domain.config import Settings
from emulator.edge.guarded import GuardedProtocol
from emulator.edge.protocol import MissingParser, http_protocol
from emulator.edge.refusals import refusal
from emulator.testing import Payemu, PayemuServer
from tests.support.bodies import slow_charge
from tests.support.paths import TESTS_DIR
from tests.support.servers import in_thread, server_and_tenant
from tests.support.yamldata import load_yaml

HEAD_TIMEOUT = 0.5


server, tenant = server_and_tenant(head_timeout_seconds=HEAD_TIMEOUT)


def test_the_protocol_is_uvicorns_with_the_guards_added() -> None:
    protocol = http_protocol(Settings(max_head_bytes=1000, head_timeout_seconds=2.5))
    assert issubclass(protocol, HttpToolsProtocol)
    assert issubclass(protocol, GuardedProtocol)  # one subclass per server, holding its limits
    assert protocol is not http_protocol(Settings())
    assert protocol.limits["max_head"] == 1000  # type: ignore[attr-defined]
    assert protocol.limits["head_timeout"] == 2.5  # type: ignore[attr-defined]


def test_without_httptools_payemu_refuses_to_start_naming_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "httptools", None)  # as if not installed
    with pytest.raises(MissingParser, match=r"^the httptools package is missing \(pip install httptools\)"):
        http_protocol(Settings())
    code = "import sys; sys.modules['httptools'] = None; from emulator.cli.main import main; sys.exit(main(['serve']))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert done.stdout == ""  # no banner: nothing says it is listening
    assert done.stderr.strip().splitlines() == [
        "payemu: the httptools package is missing (pip install httptools): payemu's HTTP guards need it"
    ]


def test_a_refusal_is_a_whole_json_answer_that_closes() -> None:
    raw = refusal(431, "headers", "Too big.")
    head, _, body = raw.partition(b"\r\n\r\n")
    lines = head.decode().split("\r\n")
    assert lines[0] == "HTTP/1.1 431 Request Header Fields Too Large"
    assert "content-type: application/json" in lines
    assert "connection: close" in lines
    assert f"content-length: {len(body)}" in lines
    assert json.loads(body) == [{"fieldName": "headers", "errors": ["Too big."]}]


def _connect(server: PayemuServer) -> socket.socket:
    address = urlsplit(server.base_url)
    return socket.create_connection((address.hostname, address.port), timeout=10)


def _read_answer(sock: socket.socket) -> tuple[int, bytes]:
    data = b""
    while b"\r\n\r\n" not in data:
        data += sock.recv(65536)
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.lower().split(b"\r\n")
    length = next(int(line.split(b":")[1]) for line in lines if line.startswith(b"content-length:"))
    while len(body) < length:
        body += sock.recv(65536)
    return int(head.split()[1]), body


def _head(tenant: Payemu, method: str, path: str, length: int | None = None) -> bytes:
    extra = f"Content-Type: application/json\r\nContent-Length: {length}\r\n" if length is not None else ""
    return f"{method} {path} HTTP/1.1\r\nHost: payemu\r\nX-Api-Key: {tenant.api_key}\r\n{extra}\r\n".encode()


def test_a_slow_body_is_not_cut_by_the_head_deadline(server: PayemuServer, tenant: Payemu) -> None:
    body = b'{"payload": "slowly but surely"}'
    with _connect(server) as sock:
        sock.sendall(_head(tenant, "POST", "/StringTokens", len(body)))
        time.sleep(HEAD_TIMEOUT * 2)
        sock.sendall(body)
        status, answer = _read_answer(sock)
    assert status == 201
    assert len(json.loads(answer)["token"]) == 32


def test_a_slow_answer_and_kept_alive_requests_are_not_cut(server: PayemuServer, tenant: Payemu) -> None:
    body = slow_charge(tenant, int(HEAD_TIMEOUT * 2000)).decode()
    with _connect(server) as sock:
        began = time.monotonic()
        sock.sendall(_head(tenant, "POST", "/PaymentGateway/charge", len(body)) + body.encode())
        status, answer = _read_answer(sock)
        assert status == 200
        assert json.loads(answer)["operationResultCode"] == "Success"
        assert time.monotonic() - began >= HEAD_TIMEOUT * 2
        for _ in range(3):  # the same connection, each request well inside the deadline
            time.sleep(HEAD_TIMEOUT / 2)
            sock.sendall(_head(tenant, "GET", "/Utils/apiKey"))
            status, answer = _read_answer(sock)
            assert status == 200
            assert json.loads(answer)["status"] == "OK"


# -- keep-alive and 100-continue, uvicorn's own ---------------------------------------------
@contextlib.contextmanager
def _serving(keep_alive: float) -> Iterator[tuple[str, int]]:
    """A payemu app under the guarded protocol with a short keep-alive time."""
    with in_thread(Settings(head_timeout_seconds=HEAD_TIMEOUT), keep_alive=keep_alive) as running:
        yield "127.0.0.1", running.port


def _api_key_request() -> bytes:
    return b"GET /Utils/apiKey HTTP/1.1\r\nHost: payemu\r\nX-Api-Key: sandbox-api-key\r\n\r\n"


def test_a_kept_alive_connection_closes_after_the_keep_alive_time_and_not_before() -> None:
    with _serving(keep_alive=1.0) as address, socket.create_connection(address, timeout=10) as sock:
        for _ in range(4):  # each next request comes within the keep-alive time (a loaded machine's delays too)
            sock.sendall(_api_key_request())
            status, answer = _read_answer(sock)
            assert status == 200
            assert json.loads(answer)["status"] == "OK"
            time.sleep(0.3)
        began = time.monotonic()
        assert sock.recv(1024) == b""  # closed by the server, idle
        assert 0.3 <= time.monotonic() - began <= 3.0


def test_a_client_that_expects_100_continue_gets_it_then_its_answer(server: PayemuServer, tenant: Payemu) -> None:
    body = b'{"payload": "after the go-ahead"}'
    with _connect(server) as sock:
        head = _head(tenant, "POST", "/StringTokens", len(body)).replace(
            b"\r\n\r\n", b"\r\nExpect: 100-continue\r\n\r\n"
        )
        sock.sendall(head)
        interim = b""
        while b"\r\n\r\n" not in interim:
            interim += sock.recv(1)
        assert interim == b"HTTP/1.1 100 Continue\r\n\r\n"
        sock.sendall(body)
        status, answer = _read_answer(sock)
    assert status == 201
    assert len(json.loads(answer)["token"]) == 32


# -- malformed and over-long requests (tests/cases/malformed_http.yaml) -------------------
MALFORMED = load_yaml((TESTS_DIR / "cases" / "malformed_http.yaml").read_text())["cases"]


@pytest.mark.parametrize("case", MALFORMED, ids=[case["name"] for case in MALFORMED])
def test_a_malformed_or_over_long_request_gets_a_json_error(server: PayemuServer, case: dict[str, Any]) -> None:
    raw = case["raw"].replace("URL", "a" * 9000).replace("HEADERS", "a" * 70_000).encode("latin-1")
    with _connect(server) as sock:
        sock.sendall(raw)
        received = b""
        with contextlib.suppress(ConnectionResetError):
            while chunk := sock.recv(65536):  # the server closes after its answer
                received += chunk
    head, _, body = received.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    assert lines[0].startswith(f"HTTP/1.1 {case['status']} "), received[:300]
    assert "content-type: application/json" in lines
    assert "x-content-type-options: nosniff" in lines
    assert "connection: close" in lines
    entries = json.loads(body)
    assert [entry["fieldName"] for entry in entries] == [case["field"]]
    assert case["says"] in entries[0]["errors"][0]
    assert httpx.get(server.base_url + "/_emulator/health", timeout=10).status_code == 200  # still serving


def test_a_url_at_the_limit_is_served_and_one_byte_more_is_not(server: PayemuServer, tenant: Payemu) -> None:
    path = "/Utils/apiKey?q="
    at_limit = path + "a" * (8192 - len(path))
    with _connect(server) as sock:
        sock.sendall(f"GET {at_limit} HTTP/1.1\r\nHost: x\r\nX-Api-Key: {tenant.api_key}\r\n\r\n".encode())
        assert _read_answer(sock)[0] == 200
        sock.sendall(f"GET {at_limit}a HTTP/1.1\r\nHost: x\r\nX-Api-Key: {tenant.api_key}\r\n\r\n".encode())
        assert _read_answer(sock)[0] == 414


def test_a_head_within_the_limit_is_served_though_its_read_is_larger(server: PayemuServer, tenant: Payemu) -> None:
    """The head is measured exactly once complete: a body in the same read does not count."""
    body = b'{"payload": "4111111111111111"}' + b" " * 100_000
    head = (
        f"POST /StringTokens HTTP/1.1\r\nHost: x\r\nX-Api-Key: {tenant.api_key}\r\n"
        f"Content-Type: application/json\r\nX-Pad: {'p' * 60_000}\r\nContent-Length: {len(body)}\r\n\r\n"
    ).encode()
    with _connect(server) as sock:
        sock.sendall(head + body)
        assert _read_answer(sock)[0] == 201
