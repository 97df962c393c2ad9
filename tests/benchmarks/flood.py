"""Every hostile flood of the memory budgets against a ``payemu serve`` subprocess, with its peak RSS.

    python -m tests.benchmarks.flood [--seconds 15] [--workers 4] [--only myref,tokens,...]
                                     [--memory-mib 256] [--overhead-mib 128]

For each flood a fresh ``payemu serve --any-key`` starts on 127.0.0.1 (default limits, or
``limits.memoryBytes`` of ``--memory-mib`` through a config file); ``workers`` threads
send requests back to back for ``seconds`` (raw sockets for the slow ones); a sampler
reads the server's RSS from /proc every 50 ms. Printed per flood: the answers by status,
the peak RSS, the configured budget plus the documented overhead (docs/reference/limits.md)
and PASS when the peak stays under it (and, where the flood says so, when legitimate
clients were served, the listing stayed bounded, the exit was clean). Never part of the
test suite; the figures of docs/reference/limits.md come from here.
"""

from __future__ import annotations

import argparse
import itertools
import os
import resource
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[2]
MIB = 1024 * 1024
BIG = 512 * 1024
KEY = "sandbox-api-key"
STRIPE = {"paymentGatewayName": "Stripe", "credentials": [{"key": "SecretKey", "value": "sk_test_x"}]}
CARD = {"cardHolderName": "A B", "cardNumber": "4242424242424242", "expirationMonth": 12, "expirationYear": 2030}
OUTCOME = "{operationResultCode: Rejected, gatewayResultDescription: '" + "y" * 500 + "'}"
ALIAS_RULE = "- name: r%d\n  sequence: [&o " + OUTCOME + ", " + ", ".join(["*o"] * 999) + "]\n"
MAX_LISTING = 64 * MIB  # what one answer may be at most (the listing's page bound is far below)


@dataclass
class Run:
    """What a flood saw: answers by status, and the checks besides the RSS."""

    base: str
    pid: int
    statuses: Counter[int | str] = field(default_factory=Counter)
    notes: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    held: list[socket.socket] = field(default_factory=list)  # slow clients' sockets, open till the end
    marks: list[float] = field(default_factory=list)  # RSS at chosen points (the leak check)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def count(self, status: int | str) -> None:
        with self.lock:
            self.statuses[status] += 1


Sender = Callable[[httpx.Client, int, Run], None]


def _key(n: int, every: int) -> dict[str, str]:
    return {"X-Api-Key": f"flood-{n // every}"}


# -- the memory floods: one request per call ------------------------------------------------
def _myref(client: httpx.Client, n: int, run: Run) -> None:
    body = {"amount": 5, "currency": "USD", "card": CARD, "paymentGatewayAccount": STRIPE, "myRef": f"{n}" + "m" * BIG}
    run.count(client.post("/PaymentGateway/charge", json=body, headers=_key(n, 100)).status_code)


def _card_number(client: httpx.Client, n: int, run: Run) -> None:
    card = {**CARD, "cardNumber": "4" * BIG}
    body = {"amount": 5, "currency": "USD", "card": card, "paymentGatewayAccount": STRIPE, "myRef": f"d{n}"}
    run.count(client.post("/PaymentGateway/charge", json=body, headers=_key(n, 100)).status_code)


def _payment_note(client: httpx.Client, n: int, run: Run) -> None:
    headers = _key(n, 100)
    if n % 100 == 0 or n < 8:
        client.put("/PaymentGatewayAccounts/primary", json=STRIPE, headers=headers)
    body = {"operation": "CHARGE", "mode": "TEST", "currencyCode": "USD", "amount": 3.0}
    body |= {"paymentGatewayAccountId": "primary", "paymentNote": f"{n}" + "n" * BIG}
    run.count(client.post("/EWalletOperations", json=body, headers=headers).status_code)


def _tokens(client: httpx.Client, n: int, run: Run) -> None:
    answer = client.post("/StringTokens", json={"payload": "x" * 16384}, headers=_key(n, 1024))
    run.count(answer.status_code)


def _rules(client: httpx.Client, n: int, run: Run) -> None:
    """Alias-expanded rules (1,000 outcomes of 500 characters each, under 1 KB of YAML),
    up to 1,000 per key; every 50th call lists them, streamed, its size noted."""
    headers = {**_key(n, 1000), "Content-Type": "application/yaml"}
    if n % 50 == 49:
        started, size = time.monotonic(), 0
        with client.stream("GET", "/_emulator/scenarios", headers=headers) as answer:
            for chunk in answer.iter_bytes():
                size += len(chunk)
        run.count(f"GET {answer.status_code}")
        with run.lock:
            run.notes.append(f"listing {size / MIB:.1f} MiB in {time.monotonic() - started:.2f} s")
            if size > MAX_LISTING:
                run.failed.append(f"a listing of {size / MIB:.0f} MiB")
        return
    run.count(client.post("/_emulator/scenarios", content=ALIAS_RULE % n, headers=headers).status_code)


_DOCUMENT = (ROOT / "emulator" / "data" / "openapi.json").read_bytes()


SWAPS = 500  # interface swaps of the leak check (RSS stays flat over 500 swaps)
LEAK_MIB = 48  # RSS growth between the 50th and the 500th swap that counts as a leak


def _interface(client: httpx.Client, n: int, run: Run) -> None:
    """PUT /_emulator/interface, then one charge (the version's endpoints are built); the
    RSS after the 50th and the 500th swap are compared (more than :data:`LEAK_MIB` apart:
    a leak). The flood runs past ``--seconds`` until 500 swaps are made."""
    if n >= SWAPS:
        return
    put = client.put("/_emulator/interface", content=_DOCUMENT, headers={"Content-Type": "application/json"})
    body = {"amount": 5, "currency": "USD", "card": CARD, "paymentGatewayAccount": STRIPE, "myRef": f"i{n}"}
    run.count(put.status_code)
    run.count(client.post("/PaymentGateway/charge", json=body).status_code)
    if n in (50, SWAPS - 1):
        with run.lock:
            run.marks.append(rss_mib(run.pid))
            if len(run.marks) == 2:
                run.notes.append(f"RSS {run.marks[0]:.0f} MiB after 50 swaps, {run.marks[1]:.0f} MiB after {SWAPS}")
                if run.marks[1] - run.marks[0] > LEAK_MIB:
                    run.failed.append("RSS grows with the swaps: a leak")


def _tenants(client: httpx.Client, n: int, run: Run) -> None:
    run.count(client.post("/_emulator/tenants", json={}).status_code)


def _new_keys(client: httpx.Client, n: int, run: Run) -> None:
    run.count(client.get("/Utils/apiKey", headers={"X-Api-Key": f"flood-key-{n}-{time.monotonic_ns()}"}).status_code)


def _journal(client: httpx.Client, n: int, run: Run) -> None:
    """16 KB journaled per request, the token deleted again (so only the journal grows)."""
    made = client.post("/StringTokens", json={"payload": "j" * 16384})
    if made.status_code == 201:
        made = client.delete(f"/StringTokens/{made.json()['token']}")
    run.count(made.status_code)


def _deep_yaml(client: httpx.Client, n: int, run: Run) -> None:
    headers = {"Content-Type": "application/yaml"}
    run.count(client.post("/_emulator/scenarios", content=b"[" * 30000, headers=headers).status_code)


# -- slow clients: raw sockets ------------------------------------------------------------
def _connect(run: Run) -> socket.socket:
    host, port = run.base.removeprefix("http://").split(":")
    return socket.create_connection((host, int(port)), timeout=10)


def _slow_readers(client: httpx.Client, n: int, run: Run) -> None:
    """Ask for big answers (the journal, filled with 512 KB charges: 8 MiB) and never read them."""
    if n == 0:
        body = {"amount": 5, "currency": "USD", "card": CARD, "paymentGatewayAccount": STRIPE, "myRef": "s" * BIG}
        for _ in range(20):
            client.post("/PaymentGateway/charge", json=body)
    sock = _connect(run)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    request = f"GET /_emulator/journal HTTP/1.1\r\nHost: x\r\nX-Api-Key: {KEY}\r\n\r\n".encode()
    try:
        for _ in range(20):  # pipelined: 20 answers asked for, none read
            sock.sendall(request)
        run.count("sent, unread")
    except OSError as exc:
        run.count(type(exc).__name__)
    with run.lock:
        run.held.append(sock)  # open and unread till the flood ends
    time.sleep(1.0)


def _slow_connections(client: httpx.Client, n: int, run: Run) -> None:
    """Worker 0 opens 1,100 connections that send half a head; the others make
    legitimate requests, each of which must be answered."""
    if n == 0:
        held: list[socket.socket] = []
        for _ in range(1100):
            try:
                sock = _connect(run)
                sock.sendall(b"GET /_emulator/health HTTP/1.1\r\nHost: x\r\n")
                held.append(sock)
            except OSError as exc:
                run.count(f"slow {type(exc).__name__}")
                break
        run.count(f"slow connections held: {len(held)}")
        with run.lock:
            run.held += held
        return
    try:
        answer = client.get("/_emulator/health", timeout=10)
        run.count(answer.status_code)
        ok = answer.status_code == 200
    except httpx.HTTPError as exc:
        run.count(type(exc).__name__)
        ok = False
    if not ok:
        with run.lock:
            if "a legitimate request failed" not in run.failed:
                run.failed.append("a legitimate request failed")
    time.sleep(0.2)


FLOODS: dict[str, Sender] = {
    "myref": _myref,
    "card-number": _card_number,
    "payment-note": _payment_note,
    "tokens": _tokens,
    "rules": _rules,
    "interface": _interface,
    "slow-readers": _slow_readers,
    "slow-connections": _slow_connections,
    "tenants": _tenants,
    "new-keys": _new_keys,
    "journal": _journal,
    "deep-yaml": _deep_yaml,
}
TITLES = {
    "myref": "charges with a 512 KB myRef, a new key every 100",
    "card-number": "declined charges with a 512 KB card number",
    "payment-note": "eWallet sessions with a 512 KB paymentNote",
    "tokens": "16 KB string tokens, a new key every 1,024",
    "rules": "1,000 alias-expanded rules a key, listed every 50",
    "interface": "PUT /_emulator/interface + one charge",
    "slow-readers": "8 clients asking for big answers, never reading",
    "slow-connections": "1,100 slow connections (1,024 descriptors) + legitimate requests",
    "sigterm-save": "SIGTERM with 20 slow clients and a full --state",
    "tenants": "POST /_emulator/tenants",
    "new-keys": "a new key per request (--any-key)",
    "journal": "16 KB journaled per request",
    "deep-yaml": "30,000 [ as YAML runtime rules",
}


# -- the server -------------------------------------------------------------------------------
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


def _descriptors() -> None:  # the default soft limit the issue measured with
    resource.setrlimit(resource.RLIMIT_NOFILE, (1024, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))


@contextmanager
def payemu(memory_mib: int | None, state: Path | None = None) -> Iterator[subprocess.Popen[bytes]]:
    port = _free_port()
    command = [sys.executable, "-m", "emulator", "serve", "--port", str(port), "--any-key", "--log-level", "error"]
    with tempfile.TemporaryDirectory() as scratch:
        if memory_mib is not None:
            config = Path(scratch) / "limits.yaml"
            config.write_text(f"limits:\n  memoryBytes: {memory_mib * MIB}\n")
            command += ["--config", str(config)]
        if state is not None:
            command += ["--state", str(state)]
        process = subprocess.Popen(
            command, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, preexec_fn=_descriptors
        )
        process.base = f"http://127.0.0.1:{port}"  # type: ignore[attr-defined]
        try:
            for _ in range(300):
                try:
                    if httpx.get(process.base + "/_emulator/health", timeout=1).status_code == 200:  # type: ignore[attr-defined]
                        break
                except httpx.HTTPError:
                    time.sleep(0.1)
            else:
                raise RuntimeError("payemu did not start")
            yield process
        finally:
            if process.poll() is None:
                process.kill()
            process.wait(timeout=30)


class Sampler(threading.Thread):
    """The peak RSS of ``pid``, read every 50 ms."""

    def __init__(self, pid: int) -> None:
        super().__init__(daemon=True)
        self.pid, self.peak, self.done = pid, 0.0, threading.Event()

    def run(self) -> None:
        while not self.done.is_set():
            try:
                self.peak = max(self.peak, rss_mib(self.pid))
            except (OSError, RuntimeError):
                return
            self.done.wait(0.05)


def flood(name: str, seconds: float, workers: int, memory_mib: int | None) -> tuple[float, Run]:
    if name == "sigterm-save":
        return sigterm_save(seconds, workers, memory_mib)
    with payemu(memory_mib) as process:
        run = Run(process.base, process.pid)  # type: ignore[attr-defined]
        sampler = Sampler(process.pid)
        sampler.start()
        counter = itertools.count()
        stop_at = time.monotonic() + seconds

        def work() -> None:
            with httpx.Client(base_url=run.base, headers={"X-Api-Key": KEY}, timeout=30) as client:
                while time.monotonic() < stop_at or (
                    name == "interface" and len(run.marks) < 2 and time.monotonic() < stop_at + 300
                ):
                    try:
                        FLOODS[name](client, next(counter), run)
                    except httpx.HTTPError as exc:
                        run.count(type(exc).__name__)

        threads = [threading.Thread(target=work) for _ in range(workers)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        if process.poll() is not None:
            run.failed.append(f"payemu exited ({process.returncode})")
        sampler.done.set()
        sampler.join()
        for sock in run.held:
            sock.close()
    return sampler.peak, run


def sigterm_save(seconds: float, workers: int, memory_mib: int | None) -> tuple[float, Run]:
    """Fill tokens for ``seconds`` with ``--state``, hold 20 slow clients, send SIGTERM:
    the exit must be clean (0), within the shutdown timeout, with no temp file left."""
    with tempfile.TemporaryDirectory() as scratch:
        state = Path(scratch) / "flood.sqlite"
        with payemu(memory_mib, state) as process:
            run = Run(process.base, process.pid)  # type: ignore[attr-defined]
            sampler = Sampler(process.pid)
            sampler.start()
            counter = itertools.count()
            stop_at = time.monotonic() + seconds

            def work() -> None:
                with httpx.Client(base_url=run.base, timeout=30) as client:
                    while time.monotonic() < stop_at:
                        _tokens(client, next(counter), run)

            threads = [threading.Thread(target=work) for _ in range(workers)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            slow = [_connect(run) for _ in range(20)]
            for sock in slow:
                sock.sendall(b"POST /StringTokens HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{")
            started = time.monotonic()
            process.send_signal(signal.SIGTERM)
            try:
                code = process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                code = None
            sampler.done.set()
            sampler.join()
            run.notes.append(f"exit {code} after {time.monotonic() - started:.1f} s")
            stderr = process.stderr.read().decode(errors="replace") if process.stderr else ""
            if code != 0:
                run.failed.append(f"exit {code}: {stderr.strip()[-200:]}")
            left = [p.name for p in Path(scratch).iterdir() if p.name != state.name]
            if left:
                run.failed.append(f"left behind: {', '.join(left)}")
            for sock in slow:
                sock.close()
    return sampler.peak, run


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=15.0, help="length of each flood (default 15)")
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--only", default="", help="comma-separated floods: " + ", ".join(TITLES))
    parser.add_argument("--memory-mib", type=int, default=None, help="limits.memoryBytes, in MiB (default 256)")
    parser.add_argument("--overhead-mib", type=int, default=128, help="the documented overhead (default 128)")
    args = parser.parse_args(argv)
    names = [n for n in args.only.split(",") if n] or list(TITLES)
    bound = (args.memory_mib or 256) + args.overhead_mib
    print(f"{'flood':<17} {'peak RSS':>9} {'bound':>7}  result  answers / notes")
    failures = 0
    for name in names:
        peak, run = flood(name, args.seconds, args.workers, args.memory_mib)
        passed = peak <= bound and not run.failed
        failures += not passed
        answers = ", ".join(f"{status}: {n}" for status, n in sorted(run.statuses.items(), key=str))
        notes = [note for note in run.notes if note][-2:]
        print(f"{name:<17} {peak:>5.0f} MiB {bound:>3} MiB  {'PASS' if passed else 'FAIL'}    {answers}")
        for line in [*notes, *run.failed]:
            print(f"{'':<44}{line}")
        sys.stdout.flush()
    return 1 if failures else 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    raise SystemExit(main())
