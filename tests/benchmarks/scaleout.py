"""Scaling out: the charge path through HAProxy (deploy/haproxy.cfg) with one and with two
payemu instances, and one instance without HAProxy for reference.

    python -m tests.benchmarks.scaleout [--duration 10] [--connections 32] [--keys 64] [--rounds 3]

wrk sends the same charge as tests/benchmarks/run.py, each request under the next of
``--keys`` API keys (``--any-key`` makes each a tenant), so HAProxy spreads the tenants
over the instances. Nothing is pinned to a core: on a 2-core machine the instances, HAProxy
and wrk share both cores, as they would on a small host. Printed: requests/s, p50 and p99
latency and non-2xx answers per setup (the round with the median requests/s; the setups
take turns, round after round, so a neighbour's load on a shared machine falls on all of
them alike), then the two-instance / one-instance ratio. Needs
Debian's ``wrk`` and ``haproxy``. Not part of the test suite.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import secrets
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from tests.balancer import Haproxy, Instance
from tests.benchmarks.run import BENCH_CONFIG, CHARGE, HERE, Load, _ms

ADMIN_KEY = "bench-admin-" + secrets.token_hex(8)


def wrk(url: str, duration: int, connections: int, keys: int) -> Load:
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as handle:
        json.dump(CHARGE, handle)
    env = {**os.environ, "BODY_FILE": handle.name, "KEYS": str(keys), "KEY_PREFIX": "bench-"}
    argv = ["wrk", "-t1", f"-c{connections}", f"-d{duration}s", "--latency", "-s", str(HERE / "keys.lua")]
    out = subprocess.run([*argv, url + "/PaymentGateway/charge"], env=env, capture_output=True, text=True, check=True)
    os.unlink(handle.name)
    text = out.stdout
    if "Latency Distribution" not in text:
        raise RuntimeError(f"wrk gave no latency figures:\n{text}")
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", text).group(1))  # type: ignore[union-attr]
    p50 = _ms(re.search(r"^\s+50%\s+(\S+)", text, re.M).group(1))  # type: ignore[union-attr]
    p99 = _ms(re.search(r"^\s+99%\s+(\S+)", text, re.M).group(1))  # type: ignore[union-attr]
    bad = re.search(r"Non-2xx or 3xx responses:\s+(\d+)", text)
    return Load(rps, p50, p99, int(bad.group(1)) if bad else 0)


def run_setup(count: int, balanced: bool, workdir: Path, args: argparse.Namespace) -> Load:
    """Start ``count`` instances (behind HAProxy when ``balanced``), warm up, measure."""
    config = workdir / "bench.yaml"
    config.write_text(BENCH_CONFIG)
    instances = [
        Instance(f"payemu{n}", None, ADMIN_KEY, workdir / f"payemu{n}.log", extra=["--config", str(config)])
        for n in range(1, count + 1)
    ]
    started: list[Instance] = []
    haproxy = None
    try:
        for instance in instances:
            instance.start()
            started.append(instance)
        url = instances[0].url
        if balanced:
            haproxy = Haproxy(instances, workdir)
            url = haproxy.url
        wrk(url, 2, args.connections, args.keys)  # warm-up: every key's tenant made
        return wrk(url, args.duration, args.connections, args.keys)
    finally:
        if haproxy is not None:
            haproxy.stop()
        for instance in started:
            instance.stop()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--duration", type=int, default=10)
    parser.add_argument("--connections", type=int, default=32)
    parser.add_argument("--keys", type=int, default=64, help="API keys (tenants) the load is spread over")
    parser.add_argument("--rounds", type=int, default=3, help="runs of each setup, taking turns; the median is shown")
    args = parser.parse_args()
    for tool in ("wrk", "haproxy"):
        if not shutil.which(tool):
            print(f"{tool} is missing: apt-get install {tool}", file=sys.stderr)
            return 2
    workdir = Path(tempfile.mkdtemp(prefix="payemu-scaleout-"))
    setups = {
        "1 instance, no HAProxy": (1, False),
        "1 instance + HAProxy": (1, True),
        "2 instances + HAProxy": (2, True),
    }
    load_before = os.getloadavg()[0]
    runs: dict[str, list[Load]] = {label: [] for label in setups}
    for _ in range(args.rounds):
        for label, (count, balanced) in setups.items():
            runs[label].append(run_setup(count, balanced, workdir, args))
    results = {label: sorted(loads, key=lambda load: load.rps)[len(loads) // 2] for label, loads in runs.items()}
    print(
        f"load: POST /PaymentGateway/charge, wrk -t1 -c{args.connections} -d{args.duration}s over {args.keys} keys,"
        f" {os.cpu_count()} cores shared by all processes; median of {args.rounds} rounds;"
        f" machine load average {load_before:.1f} before, {os.getloadavg()[0]:.1f} after"
    )
    print(f"{'setup':<26}{'req/s':>10}{'p50 ms':>9}{'p99 ms':>9}{'non-2xx':>9}")
    for label, load in results.items():
        every = ", ".join(f"{run.rps:.0f}" for run in runs[label])
        print(f"{label:<26}{load.rps:>10.0f}{load.p50_ms:>9.2f}{load.p99_ms:>9.2f}{load.errors:>9}   (rounds: {every})")
    one, two = results["1 instance + HAProxy"], results["2 instances + HAProxy"]
    print(f"ratio, 2 instances / 1 instance (both through HAProxy): {two.rps / one.rps:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
