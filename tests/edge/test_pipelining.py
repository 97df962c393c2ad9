"""Pipelined requests on one connection, with real sockets on 127.0.0.1: answers leave in
request order, a refusal waits for the answers before it, each head is measured on its
own, an early 413 closes, and a connection is not read while requests wait on it."""

from __future__ import annotations

import contextlib
import json
import socket
import threading
import time
from urllib.parse import urlsplit

import pytest

from emulator.testing import Payemu
from tests.support.bodies import slow_charge
from tests.support.servers import server_and_tenant

REQUEST_TIMEOUT = 1.0
DELAY_MS = 1500  # the charge's answer comes after the later request's deadline


server, tenant = server_and_tenant(request_timeout_seconds=REQUEST_TIMEOUT)


def connect(base_url: str) -> socket.socket:
    address = urlsplit(base_url)
    return socket.create_connection((address.hostname, address.port), timeout=10)


def until_closed(sock: socket.socket) -> bytes:
    """Everything the server sends until it closes the connection."""
    received = b""
    with contextlib.suppress(ConnectionResetError):
        while chunk := sock.recv(65536):
            received += chunk
    return received


def answers(raw: bytes) -> list[tuple[int, dict[str, str], bytes]]:
    """The responses in ``raw``, in order: status, headers (lower-case names), body."""
    found = []
    while raw:
        head, _, rest = raw.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        headers = dict(line.lower().split(": ", 1) for line in lines[1:])
        length = int(headers["content-length"])
        found.append((int(lines[0].split()[1]), headers, rest[:length]))
        raw = rest[length:]
    return found


def request(tenant: Payemu, method: str, path: str, body: bytes | None = None, extra: str = "") -> bytes:
    length = f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n" if body is not None else ""
    head = f"{method} {path} HTTP/1.1\r\nHost: payemu\r\nX-Api-Key: {tenant.api_key}\r\n{extra}{length}\r\n"
    return head.encode("latin-1") + (body or b"")


def delayed_charge(tenant: Payemu) -> bytes:
    return request(tenant, "POST", "/PaymentGateway/charge", slow_charge(tenant, DELAY_MS))


def test_a_timed_out_request_behind_a_slow_charge_is_refused_after_the_charges_answer(tenant: Payemu) -> None:
    never_finished = request(tenant, "POST", "/StringTokens", b"{").replace(b"Length: 1", b"Length: 100")
    with connect(tenant.base_url) as sock:
        began = time.monotonic()
        sock.sendall(delayed_charge(tenant) + never_finished)
        got = answers(until_closed(sock))
    assert [status for status, _, _ in got] == [200, 408]
    assert json.loads(got[0][2])["operationResultCode"] == "Success"
    assert got[1][1]["connection"] == "close"
    assert json.loads(got[1][2]) == [
        {
            "fieldName": "body",
            "errors": [f"The request (headers and body) did not arrive within {REQUEST_TIMEOUT:g} s."],
        }
    ]
    assert time.monotonic() - began >= DELAY_MS / 1000


def test_a_pipelined_long_url_behind_a_slow_charge_is_refused_after_the_charges_answer(tenant: Payemu) -> None:
    long_url = f"GET /Utils/apiKey?q={'a' * 9000} HTTP/1.1\r\nHost: x\r\n\r\n".encode()
    with connect(tenant.base_url) as sock:
        sock.sendall(delayed_charge(tenant) + long_url)
        got = answers(until_closed(sock))
    assert [status for status, _, _ in got] == [200, 414]
    assert json.loads(got[0][2])["operationResultCode"] == "Success"
    assert json.loads(got[1][2])[0]["fieldName"] == "url"


@pytest.mark.parametrize("size", [70_000, 150_000])
def test_each_pipelined_head_is_measured_on_its_own(tenant: Payemu, size: int) -> None:
    first = request(tenant, "GET", "/Utils/apiKey")
    second = request(tenant, "GET", "/Utils/apiKey", extra=f"X-Pad: {'p' * size}\r\n")
    with connect(tenant.base_url) as sock:
        sock.sendall(first + second)  # in one write: the second head arrives in the first's read
        got = answers(until_closed(sock))
    assert [status for status, _, _ in got] == [200, 431]
    assert json.loads(got[0][2])["status"] == "OK"
    assert json.loads(got[1][2]) == [
        {"fieldName": "headers", "errors": ["The request line and headers are larger than 65536 bytes."]}
    ]


def test_answers_leave_in_request_order(tenant: Payemu) -> None:
    tokens = [request(tenant, "POST", "/StringTokens", json.dumps({"payload": f"n{n}"}).encode()) for n in range(12)]
    with connect(tenant.base_url) as sock:
        sock.sendall(b"".join(tokens) + request(tenant, "GET", "/Utils/apiKey", extra="Connection: close\r\n"))
        got = answers(until_closed(sock))
    assert [status for status, _, _ in got] == [201] * 12 + [200]
    for n, (_, _, body) in enumerate(got[:12]):
        token = json.loads(body)["token"]
        assert tenant.client.get(f"/StringTokens/{token}").json()["clearPayload"] == f"n{n}"


def test_an_early_413_closes_the_connection(tenant: Payemu) -> None:
    head = request(tenant, "POST", "/StringTokens", b"").replace(b"Length: 0", b"Length: 2000000")
    with connect(tenant.base_url) as sock:
        sock.sendall(head + b'{"payload": "')
        got = answers(until_closed(sock))  # closed without waiting for the rest of the body
    assert len(got) == 1
    status, headers, body = got[0]
    assert status == 413
    assert headers["connection"] == "close"
    assert json.loads(body) == [{"fieldName": "body", "errors": ["The request body is larger than 1048576 bytes."]}]


def test_a_connection_with_requests_waiting_is_not_read_further(tenant: Payemu) -> None:
    """16 MiB of pipelined requests from a client that reads nothing: the server holds
    at most a few of them, and the client's writes stall."""
    sent = [0]
    line = request(tenant, "GET", "/Utils/apiKey")
    chunk = line * (1 << 20 // len(line))

    def flood(sock: socket.socket) -> None:
        with contextlib.suppress(OSError):
            while sent[0] < 16 << 20:
                sent[0] += sock.send(chunk)

    with connect(tenant.base_url) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        sock.settimeout(2)
        thread = threading.Thread(target=flood, args=(sock,), daemon=True)
        thread.start()
        thread.join(2)
        assert thread.is_alive(), "the server read all 16 MiB"
        assert sent[0] < 8 << 20  # socket buffers, one read and a few requests: far less
    assert tenant.client.get("/Utils/apiKey").json()["status"] == "OK"
