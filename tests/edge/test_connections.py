"""emulator.edge.connections: the connection cap (below the file-descriptor limit) and the
write timeout, with real sockets on 127.0.0.1 (a few dozen, each test bounded in time)."""

from __future__ import annotations

import contextlib
import json
import logging
import resource
import socket
import time
from collections.abc import Iterator
from urllib.parse import urlsplit

import httpx
import pytest

from emulator.domain.config import Settings
from emulator.edge.connections import ConnectionCap, default_cap
from tests.support.servers import ThreadServer, in_thread
from tests.support.waiting import until

CAP = 12


@pytest.fixture
def capped() -> Iterator[ThreadServer]:
    with in_thread(Settings(max_connections=CAP, write_timeout_seconds=0.5)) as running:
        yield running


def _open(running: ThreadServer) -> int:
    return len(running.server.server_state.connections)


def _connect(running: ThreadServer) -> socket.socket:
    address = urlsplit(running.url)
    return socket.create_connection((address.hostname, address.port), timeout=10)


def _closed_by_server(sock: socket.socket) -> bool:
    sock.settimeout(0.01)
    try:
        return sock.recv(1) == b""
    except TimeoutError:
        return False
    except ConnectionResetError:
        return True


# -- the cap -----------------------------------------------------------------------------
def test_the_default_cap_leaves_room_below_the_descriptor_limit() -> None:
    assert default_cap(1024) == 896
    assert default_cap(20_000) == 17_500
    assert default_cap(100) == 36
    assert default_cap(40) == 16  # never under MIN_CAP
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    assert default_cap() == default_cap(soft) < soft


class _Conn:
    def __init__(self, since: int | None) -> None:
        self.since = since
        self.closed = False

    def waiting_since(self) -> int | None:
        return self.since

    def make_room(self) -> None:
        self.closed = True


def test_the_cap_closes_the_longest_waiting_idle_connection(caplog: pytest.LogCaptureFixture) -> None:
    cap = ConnectionCap(3)
    busy, idle_old, idle_new, newcomer = _Conn(None), _Conn(1), _Conn(5), _Conn(0)
    everyone = [busy, idle_new, idle_old, newcomer]
    with caplog.at_level(logging.WARNING, logger="payemu"):
        assert cap.admit(newcomer, everyone, 3)  # within the cap: nothing closed, nothing logged
        assert not any(c.closed for c in everyone) and not caplog.records
        assert cap.admit(newcomer, everyone, 4)
        assert idle_old.closed and not idle_new.closed and not busy.closed and not newcomer.closed
        idle_new.since = None  # now every other one is running a request
        assert not cap.admit(newcomer, [busy, idle_new, newcomer], 4)
    assert len(caplog.records) == 1  # reaching the cap is said once
    assert "the cap of 3 (--max-connections" in caplog.records[0].getMessage()
    cap.released(3)
    assert cap.reached  # still near the cap
    cap.released(1)
    assert not cap.reached  # fell back under 90 %: the next time is logged again


def test_a_flood_of_idle_and_slow_connections_does_not_starve_requests(
    capped: ThreadServer, caplog: pytest.LogCaptureFixture
) -> None:
    idle = [_connect(capped) for _ in range(CAP)]  # connected, never a byte
    until(lambda: _open(capped) == CAP)
    slow = []
    with caplog.at_level(logging.WARNING, logger="payemu"):
        for n in range(CAP):  # part of a head, or a head and part of a body, each: each takes
            sock = _connect(capped)  # the place of the oldest idle one
            sock.sendall(b"GET /Utils/apiKey HTTP/1.1\r\nHost: x\r\n" if n % 2 else SLOW_BODY)
            slow.append(sock)
        until(lambda: all(_closed_by_server(sock) for sock in idle))
        for _ in range(5):  # legitimate clients, each on a new connection
            answer = httpx.get(capped.url + "/Utils/apiKey", headers={"X-Api-Key": "sandbox-api-key"}, timeout=10)
            assert answer.status_code == 200, answer.text
        assert _open(capped) <= CAP + 1
    reached = [r for r in caplog.records if "connections open, the cap" in r.getMessage()]
    assert len(reached) == 1
    for sock in idle + slow:
        sock.close()


SLOW_BODY = (
    b"POST /StringTokens HTTP/1.1\r\nHost: x\r\nX-Api-Key: sandbox-api-key\r\n"
    b"Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{"
)


def test_a_flood_of_slow_bodies_makes_room_for_a_legitimate_request(capped: ThreadServer) -> None:
    slow = []
    for _ in range(CAP + 5):  # a head and the first byte of a body each, the rest never sent
        sock = _connect(capped)
        sock.sendall(SLOW_BODY)
        slow.append(sock)
        time.sleep(0.01)
    began = time.monotonic()
    answer = httpx.get(capped.url + "/Utils/apiKey", headers={"X-Api-Key": "sandbox-api-key"}, timeout=10)
    assert answer.status_code == 200, answer.text
    assert answer.json()["status"] == "OK"
    assert time.monotonic() - began < 2  # not after the request timeout
    assert _closed_by_server(slow[0])  # the longest-waiting one made room
    for sock in slow:
        sock.close()


def _slow_charges(running: ThreadServer) -> bytes:
    headers = {"X-Api-Key": "sandbox-api-key"}
    rule = {
        "name": "slow",
        "when": {"operation": "Charge"},
        "then": {"operationResultCode": "Success", "delayMs": 1500},
    }
    assert httpx.post(running.url + "/_emulator/scenarios", json=rule, headers=headers).status_code == 201
    account = {"paymentGatewayName": "Stripe", "credentials": [{"key": "SecretKey", "value": "sk_test_sk"}]}
    assert httpx.put(running.url + "/PaymentGatewayAccounts/main", json=account, headers=headers).status_code == 200
    card = {"cardHolderName": "A B", "cardNumber": "4111111111111111", "expirationMonth": 1, "expirationYear": 2031}
    body = json.dumps({"paymentGatewayAccountName": "main", "amount": 5, "currency": "USD", "card": card}).encode()
    return (
        b"POST /PaymentGateway/charge HTTP/1.1\r\nHost: x\r\nX-Api-Key: sandbox-api-key\r\n"
        b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body)
    )


def test_when_every_connection_runs_a_request_a_new_one_gets_a_json_503(capped: ThreadServer) -> None:
    charge = _slow_charges(capped)
    until(lambda: _open(capped) == 0)
    busy = []
    for _ in range(CAP):  # each a charge a scenario delays: running, not idle
        sock = _connect(capped)
        sock.sendall(charge)
        busy.append(sock)
    until(lambda: _open(capped) == CAP)
    # each request has started: its head is read and its request cycle runs
    until(lambda: all(getattr(c, "cycle", None) is not None for c in capped.server.server_state.connections))
    with _connect(capped) as sock:
        received = b""
        with contextlib.suppress(ConnectionResetError):
            while chunk := sock.recv(65536):
                received += chunk
    head, _, body = received.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 503 "), received
    assert b"content-type: application/json" in head
    assert json.loads(body)[0]["fieldName"] == "connection"
    assert "connections open (its cap)" in json.loads(body)[0]["errors"][0]
    for sock in busy:  # nobody running was cut: each gets its charge's answer
        assert sock.recv(65536).startswith(b"HTTP/1.1 200 ")
        sock.close()
    until(lambda: _open(capped) == 0)
    assert httpx.get(capped.url + "/_emulator/health", timeout=10).status_code == 200


# -- slow readers ------------------------------------------------------------------------
def test_a_client_that_never_reads_its_answers_is_cut_after_the_write_timeout(capped: ThreadServer) -> None:
    size = len(httpx.get(capped.url + "/swagger/1.0/swagger.json", timeout=10).content)
    count = 100  # 100 answers of ~120 KB: far more than the socket buffers and the write buffer hold
    until(lambda: _open(capped) == 0)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    address = urlsplit(capped.url)
    sock.connect((address.hostname, address.port))
    sock.sendall(b"GET /swagger/1.0/swagger.json HTTP/1.1\r\nHost: x\r\n\r\n" * count)
    until(lambda: _open(capped) == 1)
    until(lambda: _open(capped) == 0)  # cut: nothing of it is held any more
    received = 0
    sock.settimeout(10)
    with contextlib.suppress(ConnectionResetError):
        while chunk := sock.recv(1 << 20):
            received += len(chunk)
    sock.close()
    assert received < count * size / 2  # it never had them all
    assert httpx.get(capped.url + "/_emulator/health", timeout=10).status_code == 200


def test_a_slow_but_steady_reader_gets_everything(capped: ThreadServer) -> None:
    size = len(httpx.get(capped.url + "/swagger/1.0/swagger.json", timeout=10).content)
    with _connect(capped) as sock:
        sock.sendall(b"GET /swagger/1.0/swagger.json HTTP/1.1\r\nHost: x\r\n\r\n" * 5)
        received = 0
        while received < 5 * size:
            chunk = sock.recv(16384)
            assert chunk, "the server cut a client that reads"
            received += len(chunk)
            time.sleep(0.001)
