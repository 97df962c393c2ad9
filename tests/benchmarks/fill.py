"""Store N charges through the payment engine in this process and report RSS growth.

    python -c "from tests.benchmarks.fill import main; main()" 1000000

Prints one JSON line: transactions stored, seconds, RSS before/after, bytes per transaction.
"""

from __future__ import annotations

import asyncio
import gc
import json
import sys
import time
from pathlib import Path

from emulator.app.build import create_app
from emulator.domain.config import Limits, Settings
from emulator.domain.model import PaymentRequest
from emulator.domain.vocabulary import Operation
from emulator.engine import engine
from tests.benchmarks.run import CHARGE


def rss_bytes() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    return 0


async def fill(count: int) -> tuple[int, float]:
    # the ledger keeps every charge of this run: the limits, in count and in bytes, are
    # raised above what it stores
    room = 1 << 40
    app = create_app(Settings(limits=Limits(transactions=count + 10, tenant_bytes=room, memory_bytes=room)))
    runtime = app.state.runtime
    tenant = runtime.tenants.get("sandbox-api-key")
    request = PaymentRequest.from_body(Operation.CHARGE, json.loads(json.dumps(CHARGE)))
    await engine.process(runtime, tenant, request, [])  # warm caches
    gc.collect()
    before = rss_bytes()
    began = time.perf_counter()
    for _ in range(count):
        await engine.process(runtime, tenant, request, [])
    seconds = time.perf_counter() - began
    gc.collect()
    assert len(tenant.ledger) >= count
    return rss_bytes() - before, seconds


def main() -> None:
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000
    grown, seconds = asyncio.run(fill(count))
    print(
        json.dumps(
            {
                "transactions": count,
                "seconds": round(seconds, 1),
                "rssGrowthBytes": grown,
                "bytesPerTransaction": round(grown / count, 1),
            }
        )
    )


if __name__ == "__main__":
    main()
