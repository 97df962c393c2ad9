"""The guarded HTTP protocol: its limits come from the settings, and the head deadline
never cuts a request whose head has arrived (slow bodies, slow answers, keep-alive).
Floods and slowloris clients themselves are in test_hostile.py."""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Iterator
from urllib.parse import urlsplit

import pytest
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from emulator.config import Settings
from emulator.http.protocol import http_protocol, refusal
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
    account = {"paymentGatewayName": "Stripe", "credentials": [{"key": "SecretKey", "value": "sk"}]}
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
