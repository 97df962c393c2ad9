"""``payemu serve --state FILE`` as a child process, for the tests of the state file that
need a real process (signals, exit status, stderr)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.serving import free_port, wait_until_up

ROOT = Path(__file__).resolve().parents[1]


def payemu(*args: str, timeout: float = 30) -> subprocess.CompletedProcess[str]:
    """Run ``payemu ARGS`` to the end (for commands that must not start a server)."""
    return subprocess.run(
        [sys.executable, "-m", "emulator", *args], cwd=ROOT, capture_output=True, text=True, timeout=timeout
    )


class StateServer:
    """A payemu server on a free port keeping its state in ``path``."""

    def __init__(self, path: Path, *extra: str, up_within: float = 30) -> None:
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "emulator", "serve", "--port", str(self.port), "--state", str(path), *extra],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
        try:
            wait_until_up(self.base, self.proc, timeout=up_within)
        except BaseException:
            self.kill()
            raise

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def stop(self, sig: int) -> tuple[int, str]:
        """Send ``sig``; the exit status and everything the server printed."""
        self.proc.send_signal(sig)
        status = self.proc.wait(timeout=30)
        return status, self.proc.stdout.read() if self.proc.stdout else ""


def leftovers(path: Path) -> list[str]:
    """Files beside the state file that are not it (temporary files, SQLite's logs)."""
    return sorted(p.name for p in path.parent.iterdir() if p.name != path.name and path.name in p.name)


# A journal entry as payemu stores it (a charge answered 200, masked), 1.7 KB of JSON;
# ENTRY % number is the entry of that id.
ENTRY = (
    '{"time":"2026-11-28T00:50:32.844Z","method":"POST","path":"/PaymentGateway/charge","query":"",'
    '"operationId":"GatewayCharge","interfaceVersion":"1.0.11.6","status":200,"latencyMs":11.695,'
    '"request":{"amount":12.5,"currency":"USD","card":{"cardHolderName":"Jane Smith",'
    '"cardNumber":"411111******1111","expirationMonth":12,"expirationYear":2031},"paymentGatewayAccountName":"demo"},'
    '"response":{"authorizationCode":"PHXJGS","currency":"USD","amount":12.5,"operationType":"Charge",'
    '"operationResultCode":"Success","operationResultDescription":"Charge approved.","customGatewayResponse":'
    '{"mock":true,"result":"0","message":"Approved by the mock gateway","reference":"NULL-REL8TRUBCWLDHBMMYKPE",'
    '"operation":"Charge"},"gatewayName":"NULLSuccess","gatewayReference":"NULL-REL8TRUBCWLDHBMMYKPE",'
    '"gatewayResultCode":"0","gatewayResultDescription":"Approved by the mock gateway","gatewayResultSubCode":null,'
    '"gatewayResultSubDescription":null,"gatewayToken":null,"rejectReasonCode":null},"attempts":[{"attemptNumber":1,'
    '"paymentGatewayAccountName":"demo","gatewayName":"NULLSuccess","isFallback":false,'
    '"timestamp":"2026-11-28T00:50:32.837Z","result":{"authorizationCode":"PHXJGS","currency":"USD","amount":12.5,'
    '"operationType":"Charge","operationResultCode":"Success","operationResultDescription":"Charge approved.",'
    '"customGatewayResponse":{"mock":true,"result":"0","message":"Approved by the mock gateway",'
    '"reference":"NULL-REL8TRUBCWLDHBMMYKPE","operation":"Charge"},"gatewayName":"NULLSuccess",'
    '"gatewayReference":"NULL-REL8TRUBCWLDHBMMYKPE","gatewayResultCode":"0",'
    '"gatewayResultDescription":"Approved by the mock gateway","gatewayResultSubCode":null,'
    '"gatewayResultSubDescription":null,"gatewayToken":null,"rejectReasonCode":null}}],"id":%d}'
)


def journal_file(path: Path, tenants: int, entries: int, pad: int = 0) -> None:
    """A state file of ``tenants`` keys (``key-0`` …) with ``entries`` journal entries each,
    each ``pad`` characters longer than :data:`ENTRY` (a member the format lets through)."""
    import sqlite3

    from emulator.config import KeySpec, Settings
    from emulator.payments.tenants import Tenant
    from emulator.state import encode, schema

    with sqlite3.connect(path) as db:
        db.execute("PRAGMA page_size = 16384")  # as payemu makes it (a row fits its page)
        db.execute("PRAGMA journal_mode = OFF")
        db.execute("PRAGMA synchronous = OFF")
        for table in schema.TABLES:
            db.execute(table)
        db.executemany(schema.UPSERT_META, [("format", schema.FORMAT), ("version", str(schema.VERSION))])
        for number in range(tenants):
            key = f"key-{number}"
            head = encode.text(encode.tenant(Tenant(KeySpec(key, key, 30000 + number, True), Settings(), None)))
            db.execute(schema.UPSERT_TENANT, (key, head))
            padded = ENTRY.replace('"id":', f'"note":"{"x" * pad}","id":') if pad else ENTRY
            db.executemany(schema.UPSERT_ENTRY, ((key, at, padded % at) for at in range(1, entries + 1)))
    db.close()
