"""Request heads weighed as payemu holds them (emulator.edge.heads), against a real
``payemu serve``: heads still arriving and heads waiting in a pipeline count in the
bytes in flight, a head of thousands of tiny headers gets a ``431``, the bytes in flight
past their bound a ``503``, and the server's peak RSS (VmHWM) stays well under the
documented 384 MiB. Loopback only; each probe is bounded in connections and seconds."""

from __future__ import annotations

import contextlib
import json
import socket
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest

from emulator.edge.connections import IN_FLIGHT_BYTES
from emulator.edge.guard_base import HEADER_OBJECT_BYTES
from emulator.edge.heads import too_heavy
from tests.support.probes import answers_of
from tests.support.servers import HEALTH, PayemuProcess, peak_rss_mib

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
DOCUMENTED_MIB = 384
MARGIN_MIB = 128  # the probes must stay this far under the documented ceiling
HEAD_WEIGHT = 4 * 65536  # max_head_weight with the default max_head_bytes


@pytest.fixture
def served() -> Iterator[tuple[int, subprocess.Popen[Any]]]:
    """A fresh server per probe, so its peak RSS is the probe's own."""
    with PayemuProcess("serve", "--log-level", "error", "--card-form-port", "0") as running:
        yield running.port, running.process


def connect(port: int) -> socket.socket:
    return socket.create_connection(("127.0.0.1", port), timeout=10)


def healthy(port: int) -> bool:
    with connect(port) as sock:
        sock.sendall(f"GET {HEALTH} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".encode())
        received = b""
        while chunk := sock.recv(65536):
            received += chunk
    return bool(json.loads(received.partition(b"\r\n\r\n")[2])["status"] == "ok")


def statuses(raw: bytes) -> list[int]:
    """The status of each answer in ``raw`` (answers one after another on a connection)."""
    found = []
    while raw.startswith(b"HTTP/1.1 "):
        head, _, rest = raw.partition(b"\r\n\r\n")
        found.append(int(head.split()[1]))
        length = next(int(line.split(b":")[1]) for line in head.lower().split(b"\r\n") if b"content-length:" in line)
        raw = rest[length:]
    return found


def test_the_weight_per_header_is_not_less_than_what_a_header_holds() -> None:
    """HEADER_OBJECT_BYTES against the RSS that 200,000 headers held as uvicorn holds them take,
    in a fresh interpreter (in this one, memory an earlier test freed would hide the growth)."""
    measured = subprocess.run([sys.executable, "-c", _HEADERS_RSS], capture_output=True, text=True, timeout=60)
    per_header = float(measured.stdout)
    assert 100 < per_header <= HEADER_OBJECT_BYTES


_HEADERS_RSS = """
def rss():
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * 4096
before, held = rss(), []
for _ in range(200_000):
    held.append((b"Ab".lower(), bytes(bytearray(b"c"))))  # as uvicorn's on_header keeps them
print((rss() - before) / len(held) - 3)
"""


def test_400_unfinished_heads_of_tiny_headers_are_refused_and_keep_the_peak_low(served: tuple[int, Any]) -> None:
    """The probe: 400 connections each sending a head of 10,700 ``ab:c`` lines (64,200
    bytes, under the 64 KiB text limit) and never finishing it. Before heads were weighed
    the server's peak was 547 MiB (800 connections: 1,044 MiB)."""
    port, process = served
    head = b"GET /Utils/apiKey HTTP/1.1\r\nHost: x\r\n" + b"ab:c\r\n" * 10_700
    socks = []
    for _ in range(400):
        sock = connect(port)
        sock.settimeout(2)
        with contextlib.suppress(OSError):  # refused part way: the rest meets a closed socket
            sock.sendall(head)
        socks.append(sock)
    got = answers_of(socks, 20)
    peak = peak_rss_mib(process.pid)
    for sock in socks:
        sock.close()
    refused = [raw for raw in got if raw.startswith(b"HTTP/1.1 431 ")]
    assert len(refused) >= 390, f"{len(refused)} of 400 refused"
    assert json.loads(refused[0].partition(b"\r\n\r\n")[2]) == [
        {"fieldName": "headers", "errors": [too_heavy(HEAD_WEIGHT)]}
    ]
    assert peak < DOCUMENTED_MIB - MARGIN_MIB, f"peak RSS {peak:.0f} MiB"
    assert healthy(port)


def test_heads_still_arriving_count_in_flight_and_get_a_503_past_the_bound(served: tuple[int, Any]) -> None:
    """Heads under the per-head weight, never finished, from more connections than the
    bytes in flight hold: the ones past the bound are refused with a 503."""
    port, process = served
    lines = (HEAD_WEIGHT - 4096) // (6 + HEADER_OBJECT_BYTES)
    head = b"GET /Utils/apiKey HTTP/1.1\r\nHost: x\r\n" + b"ab:c\r\n" * lines
    count = IN_FLIGHT_BYTES // HEAD_WEIGHT + 40
    socks = []
    for _ in range(count):
        sock = connect(port)
        sock.settimeout(2)
        with contextlib.suppress(OSError):
            sock.sendall(head)
        socks.append(sock)
    got = answers_of(socks, 3)  # the ones that fit wait for the rest of their heads: not closed
    peak = peak_rss_mib(process.pid)
    for sock in socks:
        sock.close()
    crowded = [raw for raw in got if raw.startswith(b"HTTP/1.1 503 ")]
    assert len(crowded) >= 20, f"{len(crowded)} of {count} refused"
    assert len(crowded) < count  # the others were kept, within the bound
    entries = json.loads(crowded[0].partition(b"\r\n\r\n")[2])
    assert entries[0]["fieldName"] == "request"
    assert entries[0]["errors"] == [f"payemu holds {IN_FLIGHT_BYTES >> 20} MiB of requests arriving; retry shortly."]
    assert peak < DOCUMENTED_MIB - MARGIN_MIB, f"peak RSS {peak:.0f} MiB"
    assert healthy(port)


def _slow_charge_request(port: int, key: str, delay_ms: int) -> bytes:
    """A charge that a scenario of ``key``'s tenant answers after ``delay_ms``."""
    import httpx

    base = f"http://127.0.0.1:{port}"
    rule = {
        "name": "slow",
        "when": {"operation": "Charge"},
        "then": {"operationResultCode": "Success", "delayMs": delay_ms},
    }
    headers = {"X-Api-Key": key}
    assert httpx.post(base + "/_emulator/scenarios", json=rule, headers=headers, timeout=10).status_code == 201
    account = {"paymentGatewayName": "Stripe", "credentials": [{"key": "SecretKey", "value": "sk_test_sk"}]}
    assert (
        httpx.put(base + "/PaymentGatewayAccounts/main", json=account, headers=headers, timeout=10).status_code == 200
    )
    card = {"cardHolderName": "A B", "cardNumber": "4111111111111111", "expirationMonth": 1, "expirationYear": 2031}
    body = json.dumps({"paymentGatewayAccountName": "main", "amount": 5, "currency": "USD", "card": card}).encode()
    return (
        f"POST /PaymentGateway/charge HTTP/1.1\r\nHost: x\r\nX-Api-Key: {key}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
    ).encode() + body


@pytest.mark.parametrize(("headers", "connections", "answered"), [(12_500, 100, [200, 431]), (1_200, 30, [200] * 9)])
def test_heads_pipelined_behind_a_slow_charge_are_weighed(
    served: tuple[int, Any], headers: int, connections: int, answered: list[int]
) -> None:
    """The probe: connections each sending a charge delayed by a scenario, then 8 complete
    heads of 12,500 headers (before: 568 MiB at 100 connections and a 20 s delay; here 2 s,
    which the bound does not depend on). Heads that heavy are refused after the charge's
    answer; heads of 1,200 headers (under the per-head weight) wait, a few at a time, and
    are all answered."""
    port, process = served
    charge = _slow_charge_request(port, "sandbox-api-key", 2000)
    pipelined = (
        b"GET /Utils/apiKey HTTP/1.1\r\nHost: x\r\nX-Api-Key: sandbox-api-key\r\n" + b"a:b\r\n" * headers + b"\r\n"
    ) * 7 + b"GET /Utils/apiKey HTTP/1.1\r\nHost: x\r\nX-Api-Key: sandbox-api-key\r\nConnection: close\r\n\r\n"
    socks = []
    for _ in range(connections):
        sock = connect(port)
        sock.settimeout(2)
        with contextlib.suppress(OSError):
            sock.sendall(charge + pipelined)
        socks.append(sock)
    got = answers_of(socks, 30)
    peak = peak_rss_mib(process.pid)
    for sock in socks:
        sock.close()
    assert [statuses(raw) for raw in got] == [answered] * connections
    assert peak < DOCUMENTED_MIB - MARGIN_MIB, f"peak RSS {peak:.0f} MiB"
    assert healthy(port)
