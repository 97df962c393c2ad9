"""emulator.app.shutdown: requests still running when a stopping server's shutdown
timeout runs out get the service's JSON 503, and no traceback reaches the console
(a real ``payemu serve`` in a subprocess, SIGTERM)."""

from __future__ import annotations

import json
import signal
import socket
import threading
import time
from pathlib import Path
from typing import Any

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


def test_requests_cut_by_the_shutdown_get_a_json_503_and_no_traceback(tmp_path: Path) -> None:
    rules = tmp_path / "slow.yaml"
    rules.write_text(SLOW_RULES)
    options = ("--no-card-form", "--shutdown-timeout", "1", "--request-timeout", "600", "--scenarios", str(rules))
    answers: dict[str, Any] = {}
    with PayemuProcess("serve", *options) as process:
        base, port = process.url, process.port
        account = {"paymentGatewayName": "Stripe", "credentials": [{"key": "SecretKey", "value": "sk_test_x"}]}
        assert httpx.put(base + "/PaymentGatewayAccounts/acct1", json=account, headers=KEY).status_code == 200

        def slow_charge() -> None:  # a scenario's delay: the answer would come in 30 s
            body = {"amount": 77.0, "currency": "USD", "card": CARD, "paymentGatewayAccountName": "acct1"}
            answers["charge"] = httpx.post(base + "/PaymentGateway/charge", json=body, headers=KEY, timeout=20)

        charging = threading.Thread(target=slow_charge)
        charging.start()
        stalled = socket.create_connection(("127.0.0.1", port), timeout=20)  # a body that never ends
        stalled.sendall(
            b"POST /StringTokens HTTP/1.1\r\nHost: x\r\nX-Api-Key: sandbox-api-key\r\n"
            b"Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{"
        )
        time.sleep(0.5)  # both requests are running
        code, _ = process.stop(signal.SIGTERM, timeout=20)
        charging.join(timeout=20)
        received = b""
        while chunk := stalled.recv(65536):
            received += chunk
        stalled.close()
        output = process.output()
    assert code == 0, output
    assert "Traceback" not in output and "CancelledError" not in output, output
    assert "Exception in ASGI application" not in output, output

    charge = answers["charge"]
    assert charge.status_code == 503, charge.text
    assert charge.headers["content-type"] == "application/json"
    assert charge.headers["x-content-type-options"] == "nosniff"
    assert charge.headers["retry-after"] == "1"
    assert charge.json() == [{"fieldName": None, "errors": [charge.json()[0]["errors"][0]]}]
    assert "payemu is stopping" in charge.json()[0]["errors"][0]

    head, _, body = received.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 503 "), received
    assert b"content-type: application/json" in head
    assert "payemu is stopping" in json.loads(body)[0]["errors"][0]
