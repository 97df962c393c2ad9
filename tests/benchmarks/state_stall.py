"""How long a ``--state`` save holds the event loop (the figure in docs/state.md).

    python -m tests.benchmarks.state_stall [--transactions 20000] [--tokens 1000] [--entries 1000] [--no-gc]

One tenant is filled to the default per-tenant limits (20,000 transactions, string tokens
of 16 KB up to the 16 MB token budget, 1,000 journal entries of card payments, still
unmasked), with the garbage collector tuned as ``payemu serve`` tunes it, then saved
three ways while a probe task asks the loop to wake it every millisecond and notes how
late each wake-up came: the first save (every record new), a save after 500 more
transactions and captures of 500 old ones, and a save with nothing to do. Printed per
save: its wall time, the longest step the saver measured itself
(:attr:`Saver.longest_step`, and the longest in CPU time, which leaves out the time other
processes had the CPU) and the probe's worst lateness (what a request would have waited).
Never part of the suite.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import tempfile
import time
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path

from emulator.domain.config import Settings
from emulator.domain.vocabulary import Operation, ResultCode
from emulator.edge.server import GC_THRESHOLDS
from emulator.state.database import Writer
from emulator.state.saver import Saver
from emulator.stores.ledger import Transaction
from emulator.stores.vault import StringToken
from emulator.tenants.tenants import Tenant, TenantRegistry


def _collector(off: bool) -> None:
    gc.set_threshold(*GC_THRESHOLDS)  # as payemu serve runs (emulator.edge.server.serve_forever)
    if off:
        gc.disable()  # to tell the saver's own work from the collections any allocation may start


def fill(tenant: Tenant, transactions: int, tokens: int, entries: int, start: int = 0) -> None:
    now = datetime.now(UTC)
    for number in range(start, start + transactions):
        tenant.ledger.add(
            Transaction(
                f"NULL-{number:020d}", Operation.PRE_AUTH, "NULLSuccess", "demo", Decimal("12.50"), "USD",
                ResultCode.SUCCESS, None, now, f"order-{number}", "4111111111111111", "123456",
                clock=tenant.clock,
            )
        )  # fmt: skip
    for number in range(start, start + tokens):
        tenant.vault.add(StringToken(f"{number:032d}", "4" * 16000, now))
    body = json.dumps({"amount": 12.5, "card": {"cardNumber": "4111111111111111", "cvv": "123"}}).encode()
    for _ in range(entries):
        tenant.journal.record(
            (now, "POST", "/PaymentGateway/authorize", "", "Authorize", "1.0", 200, 1.5, body, body, [], None, None)
        )


class Probe:
    """Wakes every millisecond; ``worst`` is the latest a wake-up came, in seconds."""

    def __init__(self) -> None:
        self.worst = 0.0
        self.running = True

    async def run(self) -> None:
        while self.running:
            asked = time.perf_counter()
            await asyncio.sleep(0.001)
            self.worst = max(self.worst, time.perf_counter() - asked - 0.001)


async def measured(label: str, saver: Saver) -> None:
    probe = Probe()
    task = asyncio.create_task(probe.run())
    await asyncio.sleep(0.01)
    probe.worst = 0.0
    saver.longest_step = saver.longest_step_cpu = 0.0
    started = time.perf_counter()
    rows = await saver.save()
    took = time.perf_counter() - started
    probe.running = False
    await task
    print(
        f"{label:<34} {rows:>7} rows {took * 1000:>8.0f} ms;"
        f" longest step {saver.longest_step * 1000:5.1f} ms wall, {saver.longest_step_cpu * 1000:4.1f} ms CPU;"
        f" loop late by at most {probe.worst * 1000:5.1f} ms"
    )


async def main(transactions: int, tokens: int, entries: int, no_gc: bool = False) -> None:
    _collector(no_gc)
    registry = TenantRegistry(Settings())
    tenant = registry.get("sandbox-api-key")
    assert tenant is not None
    fill(tenant, transactions, tokens, entries)
    with tempfile.TemporaryDirectory() as folder:
        writer = Writer(Path(folder) / "state.sqlite")
        saver = Saver(registry, writer)
        await measured("first save (every record new)", saver)
        fill(tenant, 500, 0, 500, start=transactions)
        for tx in tenant.ledger.transactions()[:500]:
            tx.captured_by, tx.captured_amount = "capture", tx.amount
        tenant.last_used = time.monotonic()
        await measured("500 new, 500 captured, 500 entries", saver)
        await measured("nothing changed", saver)
        writer.close().result()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--transactions", type=int, default=20_000)
    parser.add_argument("--tokens", type=int, default=1_000)
    parser.add_argument("--entries", type=int, default=1_000)
    parser.add_argument("--no-gc", action="store_true", help="with the garbage collector off")
    options = parser.parse_args()
    asyncio.run(main(options.transactions, options.tokens, options.entries, options.no_gc))
