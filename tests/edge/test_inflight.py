"""The bytes of requests still arriving, against a real ``payemu serve``: pipelined bytes
are held a few requests at a time, bodies being received count against their bound (a
``503`` past it), and the server's peak RSS (read from /proc) stays under the documented
384 MiB. Loopback only; each flood is bounded in bytes and seconds."""

from __future__ import annotations

import contextlib
import json
import select
import socket
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from emulator.edge.connections import IN_FLIGHT_BYTES
from tests.support.servers import HEALTH, PayemuProcess

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
MIB = 1 << 20
DOCUMENTED_MIB = 384


@pytest.fixture(scope="module")
def served() -> Iterator[tuple[int, PayemuProcess]]:
    with PayemuProcess("serve", "--log-level", "error", "--card-form-port", "0") as process:
        yield process.port, process


def peak_mib(pid: int) -> float:
    """The process's peak RSS so far (VmHWM)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmHWM")


def connect(port: int) -> socket.socket:
    return socket.create_connection(("127.0.0.1", port), timeout=10)


def health(port: int) -> dict[str, Any]:
    with connect(port) as sock:
        sock.sendall(f"GET {HEALTH} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".encode())
        received = b""
        while chunk := sock.recv(65536):
            received += chunk
    head, _, body = received.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200 "), received[:200]
    found: dict[str, Any] = json.loads(body)
    return found


def test_16_mib_of_pipelined_requests_keep_the_peak_under_the_bound(served: tuple[int, Any]) -> None:
    port, process = served
    flood = b"GET / HTTP/1.1\r\n\r\n" * (MIB // 18)
    read = [0]

    def reader(sock: socket.socket) -> None:
        with contextlib.suppress(OSError):
            while chunk := sock.recv(1 << 16):
                read[0] += len(chunk)

    with connect(port) as sock:  # one client that reads its answers while it sends
        sock.settimeout(2)
        thread = threading.Thread(target=reader, args=(sock,), daemon=True)
        thread.start()
        with contextlib.suppress(OSError):
            for _ in range(16):
                sock.sendall(flood)
        sock.shutdown(socket.SHUT_RDWR)
    stalled = [connect(port) for _ in range(30)]  # and 30 that never read, 1 MiB each
    for sock in stalled:
        sock.settimeout(0.1)
        with contextlib.suppress(OSError):
            sock.sendall(flood)
    peak = peak_mib(process.pid)
    for sock in stalled:
        sock.close()
    assert read[0] > 0  # answered, in the meantime
    assert peak < DOCUMENTED_MIB / 2, f"peak RSS {peak:.0f} MiB"
    assert health(port)["status"] == "ok"


def test_partial_bodies_count_against_the_bound_and_get_a_503_past_it(served: tuple[int, Any]) -> None:
    port, process = served
    body = b'{"payload": "' + b"x" * (MIB - 200)
    head = (
        b"POST /StringTokens HTTP/1.1\r\nHost: x\r\nX-Api-Key: sandbox-api-key\r\n"
        b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n" % (len(body) + 1)
    )
    count = IN_FLIGHT_BYTES // MIB + 16  # each holds its body but the last byte
    holding, refused = [], []
    for _ in range(count):
        sock = connect(port)
        sock.settimeout(5)
        try:
            sock.sendall(head + body)
        except OSError:
            refused.append(sock)
            continue
        holding.append(sock)
    # the refusals come while the others hold on: wait for answers (a loaded machine is slow)
    waiting, answered = holding + refused, []
    deadline = time.monotonic() + 10
    while waiting and sum(raw.startswith(b"HTTP/1.1 503 ") for raw in answered) < 8 and time.monotonic() < deadline:
        ready, _, _ = select.select(waiting, [], [], 0.2)
        for sock in ready:
            with contextlib.suppress(OSError):
                answered.append(sock.recv(65536))
            waiting.remove(sock)
    peak = peak_mib(process.pid)
    for sock in holding + refused:
        sock.close()
    over = [raw for raw in answered if raw.startswith(b"HTTP/1.1 503 ")]
    assert len(over) >= 8, f"{len(over)} of {count} refused"
    entries = json.loads(over[0].partition(b"\r\n\r\n")[2])
    assert entries == [
        {
            "fieldName": "request",
            "errors": [f"payemu holds {IN_FLIGHT_BYTES // MIB} MiB of requests arriving; retry shortly."],
        }
    ]
    assert peak < DOCUMENTED_MIB, f"peak RSS {peak:.0f} MiB"
    assert health(port)["status"] == "ok"
