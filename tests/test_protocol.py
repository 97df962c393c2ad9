"""The guarded HTTP protocol: its limits come from the settings, and the head deadline
never cuts a request whose head has arrived (slow bodies, slow answers, keep-alive); a
response goes out in one write, and a connection keeps its deadlines with one timer.
Floods and slowloris clients themselves are in test_hostile.py."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import json
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest
import uvicorn
import yaml
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol, RequestResponseCycle
from uvicorn.server import ServerState

from emulator.config import Settings
from emulator.http.app import create_app
from emulator.http.protocol import WHOLE, header_lines, http_protocol, refusal
from emulator.server import loopback_socket
from emulator.testing import Payemu, PayemuServer

HEAD_TIMEOUT = 0.5


@pytest.fixture(scope="module")
def server() -> Iterator[PayemuServer]:
    running = PayemuServer.start(Settings(log_level="warning", head_timeout_seconds=HEAD_TIMEOUT))
    yield running
    running.stop()


@pytest.fixture
def tenant(server: PayemuServer) -> Iterator[Payemu]:
    made = server.tenant()
    yield made
    made.close()


def test_the_protocol_takes_its_limits_from_the_settings() -> None:
    protocol = http_protocol(Settings(max_head_bytes=1000, head_timeout_seconds=2.5))
    assert isinstance(protocol, type)
    assert issubclass(protocol, HttpToolsProtocol)
    assert protocol.__name__ == "GuardedHttpToolsProtocol"


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
    tenant.add_scenario(
        {
            "name": "slow",
            "when": {"operation": "Charge"},
            "then": {"operationResultCode": "Success", "delayMs": int(HEAD_TIMEOUT * 2000)},
        }
    )
    account = {"paymentGatewayName": "Stripe", "credentials": [{"key": "SecretKey", "value": "sk_test_sk"}]}
    assert tenant.client.put("/PaymentGatewayAccounts/main", json=account).status_code == 200
    body = json.dumps(
        {
            "paymentGatewayAccountName": "main",
            "amount": 5,
            "currency": "USD",
            "card": {
                "cardHolderName": "A B",
                "cardNumber": "4111111111111111",
                "expirationMonth": 1,
                "expirationYear": 2031,
            },
        }
    )
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


# -- one write per response, one timer per connection -------------------------------------
class _Transport:
    def __init__(self) -> None:
        self.writes: list[bytes] = []
        self.closed = self.aborted = False

    def write(self, data: bytes) -> None:
        self.writes.append(data)

    def close(self) -> None:
        self.closed = True

    def abort(self) -> None:
        self.aborted = True

    def get_extra_info(self, name: str) -> str:
        return f"info:{name}"


@contextlib.contextmanager
def _serving(keep_alive: float, counting: list[str]) -> Iterator[str]:
    """A payemu app under the guarded protocol with a short keep-alive time, whose
    protocol notes each timer it asks its event loop for."""
    settings = Settings(log_level="warning", head_timeout_seconds=HEAD_TIMEOUT)
    guarded = http_protocol(settings)
    assert isinstance(guarded, type)

    class Counted(guarded):  # type: ignore[valid-type, misc]
        def connection_made(self, transport: Any) -> None:
            real = self.loop

            class Loop:
                def __getattr__(self, name: str) -> Any:
                    if name in ("call_at", "call_later"):
                        counting.append(name)
                    return getattr(real, name)

            self.loop = Loop()
            super().connection_made(transport)

    sock = loopback_socket()
    config = uvicorn.Config(
        create_app(settings), http=Counted, loop="uvloop", log_level="warning", timeout_keep_alive=keep_alive
    )
    running = uvicorn.Server(config)
    thread = threading.Thread(target=running.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    while not running.started:
        time.sleep(0.01)
    try:
        yield f"127.0.0.1:{sock.getsockname()[1]}"
    finally:
        running.should_exit = True
        thread.join(10)


def _api_key_request() -> bytes:
    return b"GET /Utils/apiKey HTTP/1.1\r\nHost: payemu\r\nX-Api-Key: sandbox-api-key\r\n\r\n"


def test_a_connection_of_many_requests_arms_a_timer_or_two_not_three_per_request() -> None:
    timers: list[str] = []
    with _serving(keep_alive=5, counting=timers) as address:
        host, port = address.split(":")
        with socket.create_connection((host, int(port)), timeout=10) as sock:
            for _ in range(50):
                sock.sendall(_api_key_request())
                status, answer = _read_answer(sock)
                assert status == 200
                assert json.loads(answer)["status"] == "OK"
    assert 1 <= len(timers) <= 3  # uvicorn and the guards armed 3 per request before


def test_a_kept_alive_connection_closes_after_the_keep_alive_time_and_not_before() -> None:
    with _serving(keep_alive=0.4, counting=[]) as address:
        host, port = address.split(":")
        with socket.create_connection((host, int(port)), timeout=10) as sock:
            for _ in range(4):  # each next request comes within the keep-alive time
                sock.sendall(_api_key_request())
                assert _read_answer(sock)[0] == 200
                time.sleep(0.2)
            began = time.monotonic()
            assert sock.recv(1024) == b""  # closed by the server, idle
            assert 0.1 <= time.monotonic() - began <= 2.0


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


# -- the whole answer in one call (emulator.http.protocol.WHOLE) ------------------------
class _Wire(_Transport):
    """A connection's transport as the protocol sees it."""

    closed_by_server = False  # closed before the client left

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return {"sockname": ("127.0.0.1", 8000), "peername": ("127.0.0.1", 5555)}.get(name, default)

    def is_closing(self) -> bool:
        return self.closed or self.aborted

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass

    def set_write_buffer_limits(self, high: int | None = None, low: int | None = None) -> None:
        self.limits = (high, low)


def _exchange(protocol: Any, app: Any, requests: list[bytes]) -> _Wire:
    """Feed ``requests`` to one connection of ``protocol`` serving ``app``, each after the
    last was answered; the transport holds what was written."""
    config = uvicorn.Config(app, http=protocol, log_level="warning")
    config.load()
    state = ServerState()
    state.default_headers = [(b"date", b"Mon, 23 Nov 2026 18:00:00 GMT"), (b"server", b"uvicorn")]

    async def run() -> _Wire:
        wire = _Wire()
        connection = config.http_protocol_class(config=config, server_state=state, app_state={})
        connection.connection_made(wire)
        for request in requests:
            connection.data_received(request)
            for _ in range(1000):
                await asyncio.sleep(0)
                if connection.cycle.response_complete or wire.is_closing():
                    break
        wire.closed_by_server = wire.is_closing()
        connection.connection_lost(None)
        return wire

    return asyncio.run(run())


def test_an_operation_answers_in_one_write_byte_for_byte_as_uvicorns_send() -> None:
    settings = Settings(log_level="warning")
    app = create_app(settings)
    guarded = _exchange(http_protocol(settings), app, [_api_key_request()] * 2)
    plain = _exchange(HttpToolsProtocol, app, [_api_key_request()] * 2)
    assert len(guarded.writes) == 2  # head and body together, per answer
    assert guarded.writes[0].startswith(
        b"HTTP/1.1 200 OK\r\ndate: Mon, 23 Nov 2026 18:00:00 GMT\r\nserver: uvicorn\r\n"
    )
    assert b"content-type: application/json\r\n" in guarded.writes[0]
    assert json.loads(guarded.writes[0].partition(b"\r\n\r\n")[2])["status"] == "OK"
    assert b"".join(guarded.writes) == b"".join(plain.writes)
    assert not guarded.closed_by_server


def test_an_answer_through_uvicorns_send_goes_out_in_one_write_too() -> None:
    # Starlette's answers (here its 404) come as a head and a body: one write for both
    settings = Settings(log_level="warning")
    app = create_app(settings)
    request = b"GET /no/such/page HTTP/1.1\r\nHost: payemu\r\nX-Api-Key: sandbox-api-key\r\n\r\n"
    guarded = _exchange(http_protocol(settings), app, [request] * 2)
    plain = _exchange(HttpToolsProtocol, app, [request] * 2)
    assert len(plain.writes) == 4  # uvicorn's own: the head, then the body
    assert len(guarded.writes) == 2
    head, _, body = guarded.writes[0].partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 404 Not Found\r\n")
    assert json.loads(body)
    assert b"".join(guarded.writes) == b"".join(plain.writes)


def test_an_answer_with_headers_of_its_own_is_whole_too_and_the_same_bytes() -> None:
    body = b'{"payload": "4111111111111111"}'
    request = (
        b"POST /StringTokens HTTP/1.1\r\nHost: payemu\r\nX-Api-Key: sandbox-api-key\r\n"
        b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(body)
    ) + body
    answers = []
    for protocol in (http_protocol(Settings()), HttpToolsProtocol):
        settings = Settings(log_level="warning", seed=7)  # the same token from both
        answers.append(_exchange(protocol, create_app(settings), [request]))
    guarded, plain = answers
    assert len(guarded.writes) == 1
    head = guarded.writes[0].partition(b"\r\n\r\n")[0]
    assert head.startswith(b"HTTP/1.1 201 Created\r\n")
    assert b"\r\nlocation: http://payemu/StringTokens/" in head
    assert guarded.writes == [b"".join(plain.writes)]


def test_headers_that_are_not_valid_http_are_left_to_uvicorn() -> None:
    assert header_lines({"Location": "/a", "Retry-After": "1"}) == b"location: /a\r\nretry-after: 1\r\n"
    for bad in ({"X-Split": "a\r\nb"}, {"Bad Name": "x"}, {"X-Euro": "\u20ac"}, {"Content-Length": "3"}):
        assert header_lines(bad) is None


def test_a_whole_answer_to_a_closing_client_says_so_and_closes() -> None:
    settings = Settings(log_level="warning")
    request = _api_key_request().replace(b"\r\n\r\n", b"\r\nConnection: close\r\n\r\n")
    wire = _exchange(http_protocol(settings), create_app(settings), [request])
    assert len(wire.writes) == 1
    assert b"\r\nconnection: close\r\n\r\n" in wire.writes[0]
    assert wire.closed_by_server


def test_the_whole_extension_answers_once_and_leaves_no_reference_cycle() -> None:
    seen: list[str] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        await receive()
        whole = scope["extensions"][WHOLE]
        await whole(201, b"content-type: text/plain\r\ncontent-length: 2\r\n", b"ok")
        try:
            await whole(200, b"content-length: 0\r\n", b"")
        except RuntimeError as exc:
            seen.append(str(exc))

    gc.collect()
    gc.disable()
    gc.set_debug(gc.DEBUG_SAVEALL)  # what the collector finds stays in gc.garbage
    try:
        wire = _exchange(http_protocol(Settings(log_level="warning")), app, [_api_key_request()] * 3)
        gc.collect()
        # The extension holds its request cycle weakly, so a finished request is freed when
        # the next replaces it; only the last is left, held by the connection (which its
        # watchdog timer keeps in a cycle until the collector runs).
        assert len([found for found in gc.garbage if isinstance(found, RequestResponseCycle)]) <= 1
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        gc.enable()
    assert wire.writes == [wire.writes[0]] * 3
    assert wire.writes[0].startswith(b"HTTP/1.1 201 Created\r\n")
    assert wire.writes[0].endswith(b"\r\ncontent-type: text/plain\r\ncontent-length: 2\r\n\r\nok")
    assert seen == ["payemu.whole: the response has started already"] * 3


# -- malformed and over-long requests (tests/cases/malformed_http.yaml) -------------------
MALFORMED = yaml.safe_load((Path(__file__).parent / "cases" / "malformed_http.yaml").read_text())["cases"]


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
