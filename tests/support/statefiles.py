"""State files for the tests of ``--state``: what is left beside one, a journal-heavy one
built directly (:func:`journal_file`), a process's peak memory; ``python -m
tests.support.statefiles`` measures how a server starts on a state file over the budgets."""

from __future__ import annotations

import os
from pathlib import Path

from tests.support.servers import PayemuProcess


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

    from emulator.domain.config import KeySpec, Settings
    from emulator.state import encode, schema
    from emulator.tenants.tenants import Tenant

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


def peak_mib(pid: int) -> float:
    """A process's peak resident memory so far (VmHWM of /proc), in MiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmHWM in /proc (Linux only)")


def measure_start(tenants: int = 150, entries: int = 1000, pad: int = 300) -> None:
    """Build a state file over the default byte budgets, start ``payemu serve --state``
    on it and print how long it took to answer and its peak memory."""
    import signal
    import tempfile
    import time

    with tempfile.TemporaryDirectory() as where:
        path = Path(where) / "full.sqlite"
        journal_file(path, tenants, entries, pad)
        size = path.stat().st_size / 1e6
        started = time.monotonic()
        with PayemuProcess("serve", "--state", str(path), "--no-card-form", up_within=600) as server:
            up = time.monotonic() - started
            peak = peak_mib(server.pid)
            fields = Path(f"/proc/{server.pid}/stat").read_text().rsplit(")", 1)[1].split()
            cpu = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime
            server.stop(signal.SIGTERM)
        print(
            f"{tenants * entries} journal entries, {size:.0f} MB: answering after {up:.1f} s"
            f" ({cpu:.1f} s of CPU), peak {peak:.0f} MiB"
        )


if __name__ == "__main__":
    measure_start()
