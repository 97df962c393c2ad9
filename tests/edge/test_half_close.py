"""A request that arrived whole is answered though the client half-closed right after it
(``shutdown(SHUT_WR)``, what ``nc -N``, some proxies and health checkers do), with real
sockets on 127.0.0.1: a fast charge, one a scenario delays, and pipelined requests."""

from __future__ import annotations

import contextlib
import json
import socket
from urllib.parse import urlsplit

from emulator.testing import Payemu
from tests.support.bodies import slow_charge
from tests.support.servers import server_and_tenant

server, tenant = server_and_tenant()


def _half_closed(tenant: Payemu, raw: bytes) -> bytes:
    """Send ``raw``, shut the sending side, and read until the server closes."""
    address = urlsplit(tenant.base_url)
    with socket.create_connection((address.hostname, address.port), timeout=10) as sock:
        sock.sendall(raw)
        sock.shutdown(socket.SHUT_WR)
        received = b""
        with contextlib.suppress(ConnectionResetError):
            while chunk := sock.recv(65536):
                received += chunk
    return received


def _charge(tenant: Payemu, delay_ms: int) -> bytes:
    body = slow_charge(tenant, delay_ms)
    head = (
        f"POST /PaymentGateway/charge HTTP/1.1\r\nHost: payemu\r\nX-Api-Key: {tenant.api_key}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
    )
    return head.encode() + body


def _answers(raw: bytes) -> list[tuple[int, dict[str, object] | list[object]]]:
    found = []
    while raw:
        head, _, rest = raw.partition(b"\r\n\r\n")
        length = next(int(line.split(b":")[1]) for line in head.lower().split(b"\r\n") if b"content-length:" in line)
        found.append((int(head.split()[1]), json.loads(rest[:length])))
        raw = rest[length:]
    return found


def test_a_fast_charge_is_answered_on_a_half_closed_connection(tenant: Payemu) -> None:
    got = _answers(_half_closed(tenant, _charge(tenant, 0)))
    assert [status for status, _ in got] == [200]
    assert got[0][1]["operationResultCode"] == "Success"  # type: ignore[call-overload]
    assert tenant.client.get("/_emulator/requests/count").json()["count"] >= 1


def test_a_delayed_charge_is_answered_on_a_half_closed_connection(tenant: Payemu) -> None:
    got = _answers(_half_closed(tenant, _charge(tenant, 800)))
    assert [status for status, _ in got] == [200]
    assert got[0][1]["operationResultCode"] == "Success"  # type: ignore[call-overload]


def test_pipelined_requests_before_the_half_close_are_all_answered_in_order(tenant: Payemu) -> None:
    api_key = f"GET /Utils/apiKey HTTP/1.1\r\nHost: payemu\r\nX-Api-Key: {tenant.api_key}\r\n\r\n".encode()
    got = _answers(_half_closed(tenant, _charge(tenant, 300) + api_key * 6))
    assert [status for status, _ in got] == [200] * 7
    assert got[0][1]["operationResultCode"] == "Success"  # type: ignore[call-overload]
    assert [answer["status"] for _, answer in got[1:]] == ["OK"] * 6  # type: ignore[call-overload]


def test_a_head_cut_short_by_the_half_close_closes_without_an_answer(tenant: Payemu) -> None:
    assert _half_closed(tenant, b"GET /Utils/apiKey HTTP/1.1\r\nHost: pay") == b""
