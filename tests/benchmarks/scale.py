"""How the charge path holds up as payemu's state grows: charge rate, p99 and RSS with the
stores at 0, 10, 50 and 100 % of the default limits, in memory and with ``--state``.

    python -m tests.benchmarks.scale [--steps 0 10 50 100] [--duration 3] [--rounds 5] [--memory-only | --state-only]

At each step a fresh payemu (``--any-key``, default limits, pinned to core 0) is filled
before it is measured:

* **tenants**: the step's share of the 1,000-tenant limit exist;
* **transactions and journal**: each of the :data:`MEASURED` tenants the load charges
  holds the step's share of its 20,000 transactions (its journal fills with them: at
  10 % it is already ~30 % of its 8 MiB, from 50 % on it is full and drops its oldest
  entry at every request);
* **bytes**: the other tenants hold string tokens until everything stored weighs the
  step's share of the process's 256 MiB budget. The byte budgets are what binds first:
  20,000 transactions for each of 1,000 tenants would be ~25 GB, so "100 %" means every
  budget full — each new charge makes room by dropping the oldest finished transaction
  or journal entry, which is the work that could grow with the state.

Then wrk (core 1, ``--connections``) charges NULLSuccess under the measured tenants' keys
for ``--rounds`` runs of ``--duration`` seconds (median shown). The load adds
transactions too: the table shows what the process held before and after. Needs Debian's
``wrk``. Not part of the test suite.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import httpx

from tests.benchmarks.run import CHARGE, HERE, Load, free_port, median, pinned, rss_mb, start, stop, wrk_output

MEASURED = 4  # tenants the load charges (16 connections spread over them)
TENANTS = 1000
TRANSACTIONS = 20_000
MEMORY_BYTES = 256 * 1024 * 1024
TOKEN_PAYLOAD = 16_000  # characters of each filler string token (the schema allows 16,384)
MEASURED_PREFIX = "scale-m"
FILLER_PREFIX = "scale-o"


@dataclass
class Step:
    percent: int
    state: bool
    load: Load
    tenants: int
    stored_before: int
    stored_after: int
    transactions: int
    journal_bytes: int
    rss_mb: float


def _health(base: str, key: str) -> dict[str, dict[str, int]]:
    answer = httpx.get(base + "/_emulator/health", headers={"X-Api-Key": key}, timeout=30)
    answer.raise_for_status()
    limits: dict[str, dict[str, int]] = answer.json()["limits"]
    return limits


def _wrk(url: str, body: object, prefix: str, keys: int, options: list[str], limit: int = 0) -> str:
    """wrk (core 1) POSTing ``body`` to ``url`` under ``keys`` keys in turn (keys.lua;
    ``limit``: end after that many answers); what it printed."""
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as handle:
        json.dump(body, handle)
    env = {**os.environ, "BODY_FILE": handle.name, "KEY_PREFIX": prefix, "KEYS": str(keys), "LIMIT": str(limit)}
    argv = ["wrk", "-t1", *options, "-s", str(HERE / "keys.lua"), url]
    try:
        return subprocess.run(pinned(1, argv), env=env, capture_output=True, text=True, check=True).stdout
    finally:
        os.unlink(handle.name)


def _count(base: str, body: object, prefix: str, keys: int, total: int, path: str) -> None:
    """``total`` POSTs of ``body`` to ``path``, under ``keys`` keys in turn."""
    if total > 0:
        _wrk(base + path, body, prefix, keys, [f"-c{min(16, total)}", "-d600s"], limit=total)


def fill(base: str, percent: int) -> None:
    """Fill a fresh payemu to ``percent`` of its default limits (see the module doc)."""
    share = percent / 100
    # the measured tenants' transactions (and with them their journals)
    _count(base, CHARGE, MEASURED_PREFIX, MEASURED, round(share * TRANSACTIONS) * MEASURED, "/PaymentGateway/charge")
    others = max(0, round(share * TENANTS) - MEASURED)
    if not others:
        return
    # every other tenant exists, holding an equal part of the bytes still missing
    stored = _health(base, f"{MEASURED_PREFIX}0")["memoryBytes"]["used"]
    missing = max(0, int(share * MEMORY_BYTES) - stored)
    per_token = TOKEN_PAYLOAD + 200  # the payload and the token's own weight, about
    tokens = max(others, missing // per_token)
    _count(base, {"payload": "x" * TOKEN_PAYLOAD}, FILLER_PREFIX, others, tokens, "/StringTokens")


def measure_step(percent: int, state: bool, duration: int, rounds: int, connections: int) -> Step:
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    argv = [sys.executable, "-m", "emulator", "serve", "--any-key", "--log-level", "warning", "--port", str(port)]
    scratch = Path(tempfile.mkdtemp(prefix="payemu-scale-"))
    if state:
        argv += ["--state", str(scratch / "state.db")]
    proc, _ = start(argv, base, "/Utils/apiKey")
    try:
        fill(base, percent)
        before = _health(base, f"{MEASURED_PREFIX}0")
        loads = [charges(base, duration, connections) for _ in range(rounds + 1)][1:]  # the first run warms up
        after = _health(base, f"{MEASURED_PREFIX}0")
        return Step(
            percent,
            state,
            median(loads),
            after["tenants"]["used"],
            before["memoryBytes"]["used"],
            after["memoryBytes"]["used"],
            after["transactionsPerTenant"]["used"],
            after["journalBytesPerTenant"]["used"],
            rss_mb(proc.pid),
        )
    finally:
        stop(proc)
        shutil.rmtree(scratch, ignore_errors=True)


def charges(base: str, duration: int, connections: int) -> Load:
    options = [f"-c{connections}", f"-d{duration}s", "--latency"]
    out = _wrk(base + "/PaymentGateway/charge", CHARGE, MEASURED_PREFIX, MEASURED, options)
    return wrk_output(out, "charge")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, nargs="+", default=[0, 10, 50, 100], help="percent of the limits")
    parser.add_argument("--duration", type=int, default=3, help="seconds of each measured run")
    parser.add_argument("--rounds", type=int, default=5, help="measured runs per step (median shown)")
    parser.add_argument("--connections", type=int, default=16)
    modes = parser.add_mutually_exclusive_group()
    modes.add_argument("--memory-only", action="store_true", help="without --state")
    modes.add_argument("--state-only", action="store_true", help="only with --state")
    args = parser.parse_args()
    if not shutil.which("wrk"):
        print("wrk is missing: apt-get install wrk", file=sys.stderr)
        return 2
    states = [False] if args.memory_only else [True] if args.state_only else [False, True]
    print(
        f"load: wrk -t1 -c{args.connections}, {args.rounds} runs of {args.duration} s per step (median), charges "
        f"under {MEASURED} keys; payemu on core 0 with its default limits"
    )
    print(
        f"{'state':<8}{'step':>5}{'tenants':>9}{'tx/key':>8}{'journal':>9}{'stored MB':>16}"
        f"{'req/s':>9}{'p50 ms':>8}{'p99 ms':>8}{'errors':>8}{'RSS MB':>8}{'vs 0 %':>8}"
    )
    for state in states:
        first: float | None = None
        for percent in args.steps:
            step = measure_step(percent, state, args.duration, args.rounds, args.connections)
            first = first or step.load.rps
            stored = f"{step.stored_before / 2**20:.0f} → {step.stored_after / 2**20:.0f}"
            print(
                f"{'--state' if state else 'memory':<8}{percent:>4}%{step.tenants:>9}{step.transactions:>8}"
                f"{step.journal_bytes / 2**20:>7.1f}MB{stored:>16}{step.load.rps:>9.0f}{step.load.p50_ms:>8.2f}"
                f"{step.load.p99_ms:>8.2f}{step.load.errors:>8}{step.rss_mb:>8.0f}{step.load.rps / first:>8.2f}",
                flush=True,
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
