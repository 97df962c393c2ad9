"""The promises beyond memory, probed on a checkout of payemu: one line per probe, for a
before and after (the memory probes are ``python -m tests.benchmarks.held``, the kill -9
under load ``python -m tests.benchmarks.durability``).

    python -m tests.benchmarks.promises [--checkout DIR] [--only halfclose,smuggling,...]

Each probe starts what it needs (a ``payemu serve`` on 127.0.0.1, a ``payemu`` command)
from ``--checkout`` with this interpreter, bounded in time (and ``state migrate`` to 2 GiB
of address space). Printed: what came back. Never part of the suite.
"""

from __future__ import annotations

import argparse
import json
import resource
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import httpx

from tests.support.paths import REPO_ROOT
from tests.support.servers import PayemuProcess

HUGE = "1" * 5000
AS_LIMIT = 2 * 1024**3  # what state migrate may map at most here


def _command(checkout: Path, *argv: str, seconds: float = 20, limit: int | None = None) -> tuple[int, str, float]:
    """Exit status, stderr and peak RSS (MiB) of ``payemu ARGV`` run in ``checkout``."""

    def bounded() -> None:
        if limit:
            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    try:
        done = subprocess.run(
            [sys.executable, "-m", "emulator", *argv],
            cwd=checkout,
            capture_output=True,
            text=True,
            timeout=seconds,
            preexec_fn=bounded,
        )
    except subprocess.TimeoutExpired as expired:
        err = expired.stderr.decode() if isinstance(expired.stderr, bytes) else (expired.stderr or "")
        return -1, err + "(still running: stopped)", 0.0
    peak = max(before, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss) / 1024
    return done.returncode, done.stderr, peak


def _lines(err: str) -> str:
    lines = err.strip().splitlines()
    if not lines:
        return "no output"
    return f"{len(lines)} line(s): {lines[-1][:110]}"


def _raw(port: int, data: bytes, shut: bool = False) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(data)
        if shut:
            sock.shutdown(socket.SHUT_WR)
        received = b""
        try:
            while chunk := sock.recv(65536):
                received += chunk
        except OSError:
            pass
    return received


def _status(raw: bytes) -> str:
    return raw.split(b"\r\n", 1)[0].decode(errors="replace") if raw else "no answer"


def halfclose(checkout: Path) -> str:
    with PayemuProcess("serve", "--log-level", "warning", "--no-card-form", cwd=checkout) as server:
        headers = {"X-Api-Key": "sandbox-api-key"}
        account = {"paymentGatewayName": "Stripe", "credentials": [{"key": "SecretKey", "value": "sk_test_x"}]}
        httpx.put(f"{server.url}/PaymentGatewayAccounts/main", json=account, headers=headers, timeout=10)
        card = {"cardHolderName": "A B", "cardNumber": "4242424242424242", "expirationMonth": 1, "expirationYear": 2031}
        body = json.dumps({"paymentGatewayAccountName": "main", "amount": 5, "currency": "USD", "card": card})
        head = (
            "POST /PaymentGateway/charge HTTP/1.1\r\nHost: x\r\nX-Api-Key: sandbox-api-key\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
        )
        answer = _raw(server.port, (head + body).encode(), shut=True)
        time.sleep(0.3)
        journal = httpx.get(f"{server.url}/_emulator/requests", params={"path": "/PaymentGateway"}, headers=headers)
        ran = [entry.get("status") for entry in journal.json().get("requests", journal.json())][-1:]
    return f"charge then SHUT_WR: answer {_status(answer)}; journal status {ran}"


SMUGGLING = {
    "obs-fold": b"GET /Utils/apiKey HTTP/1.1\r\nHost: x\r\nX-A: a\r\n b\r\nConnection: close\r\n\r\n",
    "Bad Name": b"GET /Utils/apiKey HTTP/1.1\r\nHost: x\r\nBad Name: v\r\nConnection: close\r\n\r\n",
    "bytes after chunk": b"POST /StringTokens HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
    b"Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n5\r\nhelloXX0\r\n\r\n",
    "CL in trailers": b"POST /StringTokens HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
    b"Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n5\r\nhello\r\n0\r\nContent-Length: 5\r\n\r\n",
}


def smuggling(checkout: Path) -> str:
    import httptools

    with PayemuProcess("serve", "--log-level", "warning", "--no-card-form", cwd=checkout) as server:
        found = {name: _status(_raw(server.port, data)).removeprefix("HTTP/1.1 ") for name, data in SMUGGLING.items()}
    return f"httptools {httptools.__version__}: " + "; ".join(f"{name}: {status}" for name, status in found.items())


def migrate(checkout: Path) -> str:
    from tests.state.test_state_migrate_fuzz import _shared_lists, _with_blob

    with tempfile.TemporaryDirectory() as folder:
        old = _with_blob(Path(folder) / "old.sqlite", _shared_lists(60))
        started = time.monotonic()
        status, err, peak = _command(
            checkout, "state", "migrate", str(old), str(Path(folder) / "new.sqlite"), limit=AS_LIMIT
        )
        took = time.monotonic() - started
    return f"DAG blob: exit {status}, {took:.1f} s, peak {peak:.0f} MiB (address space capped at 2 GiB), {_lines(err)}"


def integers(checkout: Path) -> str:
    with tempfile.TemporaryDirectory() as folder:
        rules = Path(folder) / "rules.yaml"
        rules.write_text(f"- name: big\n  when: {{amount: {HUGE}}}\n  then: {{operationResultCode: Rejected}}\n")
        config = Path(folder) / "config.yaml"
        config.write_text(f"limits:\n  tenants: {HUGE}\n")
        check = _command(checkout, "scenarios", "check", str(rules))
        scenarios = _command(checkout, "serve", "--port", "0", "--scenarios", str(rules), seconds=8)
        configured = _command(checkout, "serve", "--port", "0", "--config", str(config), seconds=8)
    with PayemuProcess("serve", "--log-level", "warning", "--no-card-form", cwd=checkout) as server:
        posted = httpx.post(
            f"{server.url}/_emulator/scenarios",
            content=f"- name: big\n  when: {{amount: {HUGE}}}\n  then: {{operationResultCode: Rejected}}\n",
            headers={"X-Api-Key": "sandbox-api-key", "Content-Type": "application/yaml"},
            timeout=10,
        )
    return (
        f"scenarios check: exit {check[0]}, {_lines(check[1])} | --scenarios: exit {scenarios[0]}, "
        f"{_lines(scenarios[1])} | --config: exit {configured[0]}, {_lines(configured[1])} | "
        f"POST /_emulator/scenarios: {posted.status_code}"
    )


def ready_file(checkout: Path) -> str:
    status, err, _ = _command(
        checkout, "serve", "--port", "0", "--ready-file", "/nonexistent/dir/ready.json", seconds=8
    )
    bound = "Uvicorn running" in err or "listening" in err.lower()
    return f"--ready-file in a missing directory: exit {status}, bound first: {bound}, {_lines(err)}"


def card_form(checkout: Path) -> str:
    with tempfile.TemporaryDirectory() as folder:
        ready = Path(folder) / "ready.json"
        with PayemuProcess(
            "serve",
            "--log-level",
            "warning",
            "--card-form-port",
            "0",
            "--ready-file",
            str(ready),
            cwd=checkout,
            ready_file=ready,
        ) as server:
            form = str(server.ready.get("cardFormUrl") or "").split("/pay")[0].rstrip("/")
            missing = httpx.get(f"{form}/nowhere", timeout=5)
            refused = httpx.post(f"{form}/pay/", timeout=5)
    return (
        f"card form 404: {missing.headers.get('content-type')} | "
        f"405 ({refused.status_code}): {refused.headers.get('content-type')}"
    )


PROBES: dict[str, Callable[[Path], str]] = {
    "halfclose": halfclose,
    "smuggling": smuggling,
    "migrate": migrate,
    "integers": integers,
    "readyfile": ready_file,
    "cardform": card_form,
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", default=",".join(PROBES), help="probes to run, comma-separated")
    parser.add_argument("--checkout", type=Path, default=REPO_ROOT, help="run this checkout of payemu")
    args = parser.parse_args()
    for name in args.only.split(","):
        try:
            line = PROBES[name](args.checkout)
        except Exception as exc:  # a probe that cannot run on that checkout says so
            line = f"could not run: {type(exc).__name__}: {str(exc)[:160]}"
        print(f"{name}: {line}", flush=True)


if __name__ == "__main__":
    main()
