"""Flood each path that stores something and print payemu's RSS before and after.

    python -m tests.benchmarks.flood [--seconds 20] [--workers 4] [--only tokens,...]

For each flood a fresh ``payemu serve --any-key`` is started (default limits); ``workers``
threads send requests back to back for ``seconds``; the RSS of the server process is read
from /proc before and after, with the count of answers by status. With the limits of
:mod:`emulator.payments.limits` the RSS after each flood stays bounded, whatever the duration.
Not part of the test suite.
"""

from __future__ import annotations

import argparse
import itertools
import socket
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[2]
KEY = "sandbox-api-key"
STRIPE = {"paymentGatewayName": "Stripe", "credentials": [{"key": "SecretKey", "value": "sk_test_x"}]}
CARD = {"cardHolderName": "A B", "cardNumber": "4242424242424242", "expirationMonth": 12, "expirationYear": 2030}
Sender = Callable[[httpx.Client, int], httpx.Response]


def _tenants(client: httpx.Client, n: int) -> httpx.Response:
    return client.post("/_emulator/tenants", json={})


def _any_key(client: httpx.Client, n: int) -> httpx.Response:
    return client.get("/Utils/apiKey", headers={"X-Api-Key": f"flood-key-{n}-{time.monotonic_ns()}"})


def _tokens(client: httpx.Client, n: int) -> httpx.Response:
    return client.post("/StringTokens", json={"payload": "x" * 16384})


def _charges(client: httpx.Client, n: int) -> httpx.Response:
    body = {"amount": 5, "currency": "USD", "card": CARD, "paymentGatewayAccount": STRIPE, "myRef": f"r{n}"}
    return client.post("/PaymentGateway/charge", json=body)


def _journal(client: httpx.Client, n: int) -> httpx.Response:
    """16 KB journaled per request, the token deleted again (so only the journal grows)."""
    made = client.post("/StringTokens", json={"payload": "j" * 16384})
    if made.status_code == 201:
        return client.delete(f"/StringTokens/{made.json()['token']}")
    return made


def _sessions(client: httpx.Client, n: int) -> httpx.Response:
    body = {
        "operation": "CHARGE",
        "mode": "TEST",
        "currencyCode": "USD",
        "amount": 3.0,
        "paymentGatewayAccountId": "primary",
        "paymentNote": "n" * 2000,
    }
    return client.post("/EWalletOperations", json=body)


def _deep_yaml(client: httpx.Client, n: int) -> httpx.Response:
    return client.post("/_emulator/scenarios", content=b"[" * 30000, headers={"Content-Type": "application/yaml"})


FLOODS: dict[str, Sender] = {
    "tenants": _tenants,
    "any-key": _any_key,
    "tokens": _tokens,
    "charges": _charges,
    "journal": _journal,
    "sessions": _sessions,
    "deep-yaml": _deep_yaml,
}


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS")


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def _start() -> tuple[subprocess.Popen[bytes], str]:
    port = _free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "emulator", "serve", "--port", str(port), "--any-key", "--log-level", "error"],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{port}"
    for _ in range(300):
        try:
            if httpx.get(base + "/_emulator/health", timeout=1).status_code == 200:
                return process, base
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    process.kill()
    raise RuntimeError("payemu did not start")


def flood(name: str, seconds: float, workers: int) -> dict[str, Any]:
    process, base = _start()
    try:
        with httpx.Client(base_url=base, headers={"X-Api-Key": KEY}, timeout=30) as setup:
            setup.put("/PaymentGatewayAccounts/primary", json=STRIPE)
        before = rss_mib(process.pid)
        statuses: Counter[int] = Counter()
        counter = itertools.count()
        lock = threading.Lock()
        stop_at = time.monotonic() + seconds

        def work() -> None:
            with httpx.Client(base_url=base, headers={"X-Api-Key": KEY}, timeout=30) as client:
                while time.monotonic() < stop_at:
                    status = FLOODS[name](client, next(counter)).status_code
                    with lock:
                        statuses[status] += 1

        threads = [threading.Thread(target=work) for _ in range(workers)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        after = rss_mib(process.pid)
        health = httpx.get(base + "/_emulator/health", timeout=10).json()
    finally:
        process.terminate()
        process.wait(timeout=30)
    return {
        "flood": name,
        "before": before,
        "after": after,
        "statuses": dict(sorted(statuses.items())),
        "alive": health["status"] == "ok",
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=20.0, help="flood duration per path (default 20)")
    parser.add_argument("--workers", type=int, default=4, help="client threads (default 4)")
    parser.add_argument("--only", default="", help="comma-separated floods: " + ",".join(FLOODS))
    args = parser.parse_args(argv)
    names = [n for n in args.only.split(",") if n] or list(FLOODS)
    print(f"{'flood':<10} {'RSS before':>11} {'RSS after':>10}  answers (status: count)")
    for name in names:
        found = flood(name, args.seconds, args.workers)
        statuses = ", ".join(f"{status}: {count}" for status, count in found["statuses"].items())
        print(
            f"{name:<10} {found['before']:>8.1f} MiB {found['after']:>7.1f} MiB  {statuses}"
            f"{'' if found['alive'] else '  (SERVER DOWN)'}",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
