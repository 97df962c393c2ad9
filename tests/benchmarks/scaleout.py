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
import resource
import secrets
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from tests.benchmarks.run import BENCH_CONFIG, CHARGE, HERE, Load, _ms
from tests.support.balancer import Haproxy, Instance

ADMIN_KEY = "bench-admin-" + secrets.token_hex(8)


@dataclass
class Measured:
    load: Load
    cpu: dict[str, float]  # share of one core used during the measured run: payemu, haproxy, wrk


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of process ``pid`` so far (all its threads)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


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


def run_setup(count: int, balanced: bool, workdir: Path, args: argparse.Namespace) -> Measured:
    """Start ``count`` instances (behind HAProxy when ``balanced``), warm up, measure."""
    config = workdir / "bench.yaml"
    config.write_text(BENCH_CONFIG)
    instances = [Instance(f"payemu{n}", None, ADMIN_KEY, extra=["--config", str(config)]) for n in range(1, count + 1)]
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
        pids = {
            "payemu": [i.process.pid for i in instances if i.process],
            "haproxy": [haproxy.process.pid] if haproxy else [],
        }
        before = {name: sum(cpu_seconds(pid) for pid in group) for name, group in pids.items()}
        children = resource.getrusage(resource.RUSAGE_CHILDREN)
        load = wrk(url, args.duration, args.connections, args.keys)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = {
            name: (sum(cpu_seconds(pid) for pid in group) - before[name]) / args.duration
            for name, group in pids.items()
        }
        cpu["wrk"] = (after.ru_utime + after.ru_stime - children.ru_utime - children.ru_stime) / args.duration
        return Measured(load, cpu)
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
    runs: dict[str, list[Measured]] = {label: [] for label in setups}
    for _ in range(args.rounds):
        for label, (count, balanced) in setups.items():
            runs[label].append(run_setup(count, balanced, workdir, args))
    results = {label: sorted(done, key=lambda m: m.load.rps)[len(done) // 2] for label, done in runs.items()}
    print(
        f"load: POST /PaymentGateway/charge, wrk -t1 -c{args.connections} -d{args.duration}s over {args.keys} keys,"
        f" {os.cpu_count()} cores shared by all processes; median of {args.rounds} rounds;"
        f" machine load average {load_before:.1f} before, {os.getloadavg()[0]:.1f} after"
    )
    head = f"{'setup':<24}{'req/s':>8}{'p50 ms':>8}{'p99 ms':>8}{'non-2xx':>8}"
    print(f"{head}  {'cores used by: payemu':>21} {'haproxy':>7} {'wrk':>5}   req/s of each round")
    for label, measured in results.items():
        load, cpu = measured.load, measured.cpu
        every = ", ".join(f"{m.load.rps:.0f}" for m in runs[label])
        print(
            f"{label:<24}{load.rps:>8.0f}{load.p50_ms:>8.2f}{load.p99_ms:>8.2f}{load.errors:>8}"
            f"  {cpu['payemu']:>21.2f} {cpu['haproxy']:>7.2f} {cpu['wrk']:>5.2f}   {every}"
        )
    one, two = results["1 instance + HAProxy"], results["2 instances + HAProxy"]
    print(f"ratio, 2 instances / 1 instance (both through HAProxy): {two.load.rps / one.load.rps:.2f}")
    per_core = [m.load.rps / m.cpu["payemu"] for m in (one, two)]
    print(f"charges per core-second of payemu: {per_core[0]:.0f} (1 instance), {per_core[1]:.0f} (2 instances)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
