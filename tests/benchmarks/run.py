"""payemu's benchmark: the same HTTP load against payemu and a bare Starlette app.

Both servers run pinned to core 0 (taskset), wrk to core 1; they take turns under the same
load, --rounds times per path, and the medians are printed, so the machine's drift weighs
on both. payemu's charge runs everything (validation both ways, the NULLSuccess gateway,
the ledger, the journal); its token limits and byte budgets are raised for the load.
Start-up is the median of five launches after an untimed one, with the bytecode cache on
as in an installed payemu (--startup measures only that, in turns with the bare app's, and
idle RSS, and needs no wrk).
Then idle RSS and, with --transactions N, bytes per stored transaction. --forwarded-for
adds an X-Forwarded-For header to every request, as the shipped HAProxy does. --against
CHECKOUT serves another checkout of payemu ("before") in the same turns, so a change is
compared with the code it changes in the same hour. Needs wrk (apt-get install wrk); not
part of the test suite.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
KEY = "sandbox-api-key"
CARD = {
    "cardHolderName": "Bench Mark",
    "cardNumber": "4111111111111111",
    "expirationMonth": 12,
    "expirationYear": 2031,
    "cvv": "123",
}
CHARGE = {
    "amount": 10.5,
    "currency": "USD",
    "paymentGatewayAccount": {"paymentGatewayName": "NULLSuccess", "credentials": []},
    "card": CARD,
}
PATHS = {
    "charge": ("POST", "/PaymentGateway/charge", CHARGE),
    "string-token": ("POST", "/StringTokens", {"payload": "a secret string to keep"}),
    "api-key": ("GET", "/Utils/apiKey", None),
}

BENCH_CONFIG = (  # room for every string token a run stores, in count and in bytes
    "limits:\n  tokensPerTenant: 100000000\n  tokenBytesPerTenant: 100000000000\n"
    "  memoryBytesPerTenant: 100000000000\n  memoryBytes: 100000000000\n"
)


@dataclass
class Load:
    rps: float
    p50_ms: float
    p99_ms: float
    errors: int


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def pinned(core: int, argv: list[str]) -> list[str]:
    return ["taskset", "-c", str(core), *argv] if shutil.which("taskset") else argv


# Servers keep Python's bytecode cache as an installed payemu does, even where the
# environment turns it off (PYTHONDONTWRITEBYTECODE): without it every start compiles
# payemu's modules afresh, a fifth of the start-up.
SERVER_ENV = {name: value for name, value in os.environ.items() if name != "PYTHONDONTWRITEBYTECODE"}

# the yardstick: a bare Starlette app on uvicorn with payemu's loop and parser
BARE = [
    sys.executable,
    "-m",
    "uvicorn",
    "tests.benchmarks.bare_app:app",
    "--loop",
    "uvloop",
    "--http",
    "httptools",
    "--no-access-log",
    "--log-level",
    "warning",
]


def answers_200(base: str, path: str) -> bool:
    """Whether a GET of ``path`` answers 200: a bare socket, so a poll that finds nothing
    listening costs microseconds (an HTTP client's set-up costs tens of milliseconds, which
    would blur the start-up it measures)."""
    host, port = base.removeprefix("http://").split(":")
    head = f"GET {path} HTTP/1.1\r\nHost: {host}\r\nX-Api-Key: {KEY}\r\nConnection: close\r\n\r\n"
    with socket.create_connection((host, int(port)), timeout=1) as sock:
        sock.sendall(head.encode())
        return sock.recv(64).startswith(b"HTTP/1.1 200 ")


def start(argv: list[str], base: str, probe: str, cwd: Path = ROOT) -> tuple[subprocess.Popen[bytes], float]:
    """Start a server in ``cwd``; return it and the seconds until ``probe`` first answered 200.
    The polling runs on core 1 while it lasts, off the server's core."""
    here = os.sched_getaffinity(0)
    if shutil.which("taskset") and len(here) > 1:
        os.sched_setaffinity(0, {sorted(here)[1]})
    began = time.perf_counter()
    proc = subprocess.Popen(
        pinned(0, argv), cwd=cwd, env=SERVER_ENV, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        deadline = began + 30
        while time.perf_counter() < deadline:
            try:
                if answers_200(base, probe):
                    return proc, time.perf_counter() - began
            except OSError:
                time.sleep(0.002)
    finally:
        os.sched_setaffinity(0, here)
    proc.kill()
    raise RuntimeError(f"server did not start: {argv}")


def stop(proc: subprocess.Popen[bytes]) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def _ms(text: str) -> float:
    found = re.fullmatch(r"([\d.]+)(us|ms|s|m)", text)
    if found is None:
        raise ValueError(f"wrk printed a latency I cannot read: {text!r}")
    value, unit = found.groups()
    return float(value) * {"us": 0.001, "ms": 1.0, "s": 1000.0, "m": 60000.0}[unit]


FORWARDED_FOR: str | None = None  # --forwarded-for: the X-Forwarded-For of every request


def wrk(base: str, name: str, duration: int, connections: int) -> Load:
    method, path, body = PATHS[name]
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as handle:
        json.dump(body or {}, handle)
    env = {**os.environ, "BODY_FILE": handle.name, "METHOD": method, "API_KEY": KEY}
    argv = ["wrk", "-t1", f"-c{connections}", f"-d{duration}s", "--latency", "-s", str(HERE / "post.lua"), base + path]
    if method == "GET":
        env["BODY_FILE"] = "/dev/null"
    if FORWARDED_FOR:
        env["FORWARDED_FOR"] = FORWARDED_FOR
    out = subprocess.run(pinned(1, argv), env=env, capture_output=True, text=True, check=True).stdout
    os.unlink(handle.name)
    return wrk_output(out, name)


def wrk_output(out: str, name: str) -> Load:
    """What wrk printed (with ``--latency``): req/s, p50, p99 and the failed requests
    (non-2xx answers and socket errors)."""
    if "Latency Distribution" not in out:
        raise RuntimeError(f"wrk gave no latency figures for {name}:\n{out}")
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))  # type: ignore[union-attr]
    p50 = _ms(re.search(r"^\s+50%\s+(\S+)", out, re.M).group(1))  # type: ignore[union-attr]
    p99 = _ms(re.search(r"^\s+99%\s+(\S+)", out, re.M).group(1))  # type: ignore[union-attr]
    bad = re.search(r"Non-2xx or 3xx responses:\s+(\d+)", out)
    errors = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", out)
    failed = sum(int(n) for n in errors.groups()) if errors else 0
    return Load(rps, p50, p99, (int(bad.group(1)) if bad else 0) + failed)


def median(loads: list[Load]) -> Load:
    """The middle of several runs: median req/s, p50 and p99; every error counted."""
    middle = len(loads) // 2
    return Load(
        sorted(load.rps for load in loads)[middle],
        sorted(load.p50_ms for load in loads)[middle],
        sorted(load.p99_ms for load in loads)[middle],
        sum(load.errors for load in loads),
    )


def measure(
    servers: dict[str, list[str]],
    probe: str,
    names: list[str],
    duration: int,
    connections: int,
    rounds: int,
    cwds: dict[str, Path] | None = None,
) -> dict[str, dict[str, Load]]:
    """Each path against every server (started in its ``cwds`` entry, else here), the
    servers taking turns for ``rounds`` rounds (so a machine that slows down or speeds up
    during the run weighs on all alike); per server and path, the median of its rounds."""
    running: dict[str, tuple[subprocess.Popen[bytes], str]] = {}
    try:
        for label, argv in servers.items():
            port = free_port()
            base = f"http://127.0.0.1:{port}"
            cwd = (cwds or {}).get(label, ROOT)
            running[label] = (start([*argv, "--port", str(port)], base, probe, cwd)[0], base)
        results: dict[str, dict[str, Load]] = {label: {} for label in servers}
        for name in names:
            runs: dict[str, list[Load]] = {label: [] for label in servers}
            for _, base in running.values():
                wrk(base, name, 2, connections)  # warm-up
            for _ in range(rounds):
                for label, (_, base) in running.items():
                    runs[label].append(wrk(base, name, duration, connections))
            for label in servers:
                results[label][name] = median(runs[label])
        return results
    finally:
        for proc, _ in running.values():
            stop(proc)


def startup_and_idle(runs: int = 5, bare: list[str] | None = None) -> tuple[float, float, float | None]:
    """Median seconds from launch to the first 200, and the median idle RSS, of ``runs``
    starts after one untimed start (which fills the bytecode cache); with ``bare`` (the
    yardstick's command, less its port), that server starts in turns with payemu and the
    third value is its median start-up."""
    times, rss, yardstick = [], [], []
    for run in range(runs + 1):
        if bare is not None:
            port = free_port()
            proc, seconds = start([*bare, "--port", str(port)], f"http://127.0.0.1:{port}", "/Utils/apiKey")
            stop(proc)
            if run:
                yardstick.append(seconds)
        port = free_port()
        base = f"http://127.0.0.1:{port}"
        argv = [sys.executable, "-m", "emulator", "serve", "--port", str(port), "--log-level", "warning"]
        proc, seconds = start(argv, base, "/Utils/apiKey")
        if run:
            times.append(seconds)
            rss.append(rss_mb(proc.pid))
        stop(proc)
    return _median(times), _median(rss), _median(yardstick) if yardstick else None


def _median(values: list[float]) -> float:
    return sorted(values)[len(values) // 2]


def per_transaction(count: int) -> tuple[float, float]:
    """RSS growth per stored transaction, measured in a child process that stores ``count``."""
    code = "from tests.benchmarks.fill import main; main()"
    out = subprocess.run(
        [sys.executable, "-c", code, str(count)], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout
    data = json.loads(out.strip().splitlines()[-1])
    return data["bytesPerTransaction"], data["seconds"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--duration", type=int, default=10)
    parser.add_argument("--connections", type=int, default=16)
    parser.add_argument("--transactions", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=3, help="turns each server takes per path (median)")
    parser.add_argument("--paths", nargs="+", default=list(PATHS), choices=list(PATHS))
    parser.add_argument("--forwarded-for", help="an X-Forwarded-For header on every request (as behind HAProxy)")
    parser.add_argument(
        "--against",
        type=Path,
        metavar="CHECKOUT",
        help="another payemu checkout (e.g. the previous release in a git worktree) served in the same "
        "turns as 'before', with its own .venv's Python when it has one",
    )
    parser.add_argument(
        "--startup", action="store_true", help="only the start-up to the first answer and the idle RSS (no wrk)"
    )
    args = parser.parse_args()
    if args.startup:
        seconds, idle, floor = startup_and_idle(bare=BARE)
        assert floor is not None
        print(
            f"start-up to first 200: {seconds * 1000:.0f} ms; bare Starlette on uvicorn {floor * 1000:.0f} ms "
            f"(medians of 5, taking turns; payemu's own part {(seconds - floor) * 1000:.0f} ms); "
            f"load average {os.getloadavg()[0]:.2f}"
        )
        print(f"RSS idle: {idle:.1f} MB")
        return 0
    global FORWARDED_FOR
    FORWARDED_FOR = args.forwarded_for
    if not shutil.which("wrk"):
        print("wrk is missing: apt-get install wrk", file=sys.stderr)
        return 2
    uvicorn = BARE
    # a load test stores far more string tokens than a tenant may keep by default (a 507
    # past the limit): the benchmark's payemu raises that limit, and nothing else
    config = Path(tempfile.mkdtemp()) / "bench.yaml"
    config.write_text(BENCH_CONFIG)
    serve = ["-m", "emulator", "serve", "--log-level", "warning", "--config", str(config)]
    servers = {"bare": uvicorn, "payemu": [sys.executable, *serve]}
    cwds: dict[str, Path] = {}
    if args.against is not None:
        other = args.against.resolve()
        own = other / ".venv" / "bin" / "python"
        servers["before"] = [str(own) if own.exists() else sys.executable, *serve]
        cwds["before"] = other  # python -m runs the package found there first
    found = measure(servers, "/Utils/apiKey", args.paths, args.duration, args.connections, args.rounds, cwds)
    bare = found["bare"]
    print(
        f"load: wrk -t1 -c{args.connections} -d{args.duration}s, servers on core 0, wrk on core 1; "
        f"the servers take turns, {args.rounds} rounds, medians shown"
        + (f"; X-Forwarded-For: {args.forwarded_for}" if args.forwarded_for else "")
    )
    print(f"{'path':<14}{'server':<12}{'req/s':>10}{'p50 ms':>9}{'p99 ms':>9}{'non-2xx':>9}")
    for name in args.paths:
        for label in servers:
            load = found[label][name]
            print(f"{name:<14}{label:<12}{load.rps:>10.0f}{load.p50_ms:>9.2f}{load.p99_ms:>9.2f}{load.errors:>9}")
        for label in servers:
            if label != "bare":
                ratio = found[label][name].rps / bare[name].rps
                print(f"{name:<14}{'ratio' if label == 'payemu' else label + ' ratio':<12}{ratio:>10.2f}")
    seconds, idle, _ = startup_and_idle()
    print(f"start-up to first 200: {seconds * 1000:.0f} ms (median of 5)")
    print(f"RSS idle: {idle:.1f} MB")
    if args.transactions:
        per, took = per_transaction(args.transactions)
        print(f"RSS per stored transaction: {per:.0f} bytes ({args.transactions} stored in {took:.0f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
