"""emulator.app.shutdown: requests still running when a stopping server's shutdown
timeout runs out get the service's JSON 503, and no traceback reaches the console
(a real ``payemu serve`` in a subprocess, SIGTERM)."""

from __future__ import annotations

import json
import signal
import socket
from pathlib import Path

import httpx

from tests.support.bodies import CARD
from tests.support.servers import PayemuProcess

KEY = {"X-Api-Key": "sandbox-api-key"}
SLOW_RULES = (
    "scenarios:\n"
    "  - name: very-slow\n"
    "    when: {amount: 77.00}\n"
    "    then: {operationResultCode: Success, delayMs: 30000}\n"
)


def send(port: int, request: bytes) -> socket.socket:
    """A connection with ``request`` written on it, its answer left to read."""
    connection = socket.create_connection(("127.0.0.1", port), timeout=20)
    connection.sendall(request)
    return connection


def answer(connection: socket.socket) -> tuple[str, dict[str, str], bytes]:
    """Status line, headers (lower-cased names) and body, read until the server closes."""
    received = b""
    while chunk := connection.recv(65536):
        received += chunk
    connection.close()
    head, _, body = received.partition(b"\r\n\r\n")
    status, *lines = head.decode("latin-1").split("\r\n")
    headers = {name.strip().lower(): value.strip() for name, _, value in (line.partition(":") for line in lines)}
    return status, headers, body


def test_requests_cut_by_the_shutdown_get_a_json_503_and_no_traceback(tmp_path: Path) -> None:
    rules = tmp_path / "slow.yaml"
    rules.write_text(SLOW_RULES)
    options = ("--no-card-form", "--shutdown-timeout", "1", "--request-timeout", "600", "--scenarios", str(rules))
    with PayemuProcess("serve", *options) as process:
        base, port = process.url, process.port
        account = {"paymentGatewayName": "Stripe", "credentials": [{"key": "SecretKey", "value": "sk_test_x"}]}
        assert httpx.put(base + "/PaymentGatewayAccounts/acct1", json=account, headers=KEY).status_code == 200

        # a scenario's delay: the charge's answer would come in 30 s
        body = json.dumps(
            {"amount": 77.0, "currency": "USD", "card": CARD, "paymentGatewayAccountName": "acct1"}
        ).encode()
        charging = send(
            port,
            b"POST /PaymentGateway/charge HTTP/1.1\r\nHost: x\r\nX-Api-Key: sandbox-api-key\r\n"
            b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body),
        )
        stalled = send(  # a body that never ends
            port,
            b"POST /StringTokens HTTP/1.1\r\nHost: x\r\nX-Api-Key: sandbox-api-key\r\n"
            b"Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{",
        )
        # The server accepts connections in the order they came: once a later one is
        # answered, both requests above are in its hands, however loaded the machine.
        assert httpx.get(base + "/Utils/apiKey", headers=KEY, timeout=20).status_code == 200
        code, _ = process.stop(signal.SIGTERM, timeout=20)
        charge = answer(charging)
        cut = answer(stalled)
        output = process.output()
    assert code == 0, output
    assert "Traceback" not in output and "CancelledError" not in output, output
    assert "Exception in ASGI application" not in output, output

    for status, headers, body in (charge, cut):
        assert status.startswith("HTTP/1.1 503 "), (status, body)
        assert headers["content-type"] == "application/json"
        assert headers["x-content-type-options"] == "nosniff"
        assert headers["retry-after"] == "1"
        errors = json.loads(body)
        assert errors == [{"fieldName": None, "errors": [errors[0]["errors"][0]]}]
        assert "payemu is stopping" in errors[0]["errors"][0]
