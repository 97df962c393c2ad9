"""A saturating charge load on ``payemu serve --state``, then SIGKILL, and what the file
kept: for the durability test (tests/state/test_state_saver.py) and its benchmark
(``python -m tests.benchmarks.durability``)."""

from __future__ import annotations

import contextlib
import http.client
import json
import sqlite3
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from tests.support.paths import REPO_ROOT
from tests.support.servers import PayemuProcess

KEY = "sandbox-api-key"
ACCOUNT = {"paymentGatewayName": "NULLSuccess", "credentials": []}
CARD = {"cardHolderName": "Jane Smith", "cardNumber": "4111111111111111", "expirationMonth": 12, "expirationYear": 2031}
CHARGE = json.dumps({"amount": 1.0, "currency": "USD", "card": CARD, "paymentGatewayAccountName": "demo"}).encode()
HEADERS = {"X-Api-Key": KEY, "Content-Type": "application/json"}


@dataclass
class Outcome:
    acked: list[tuple[float, str]] = field(default_factory=list)  # (answer's arrival, reference)
    killed_at: float = 0.0
    saved: set[str] = field(default_factory=set)
    seconds: float = 0.0

    def lost(self) -> list[tuple[float, str]]:
        return [(at, ref) for at, ref in self.acked if ref not in self.saved]

    def lost_beyond(self, bound: float) -> list[tuple[float, str]]:
        """The lost charges acknowledged more than ``bound`` seconds before the kill."""
        return [(at, ref) for at, ref in self.lost() if at < self.killed_at - bound]

    def report(self, bound: float) -> str:
        lost = self.lost()
        oldest = max((self.killed_at - at for at, _ in lost), default=0.0)
        return (
            f"{len(self.acked):,} acknowledged, {len(self.acked) - len(lost):,} in the file, {len(lost):,} lost "
            f"(the oldest {oldest:.2f} s before the kill); lost beyond {bound:g} s: {len(self.lost_beyond(bound))}; "
            f"{len(self.acked) / self.seconds:,.0f} charges/s"
        )


def _client(port: int, stop: threading.Event, out: Outcome, lock: threading.Lock) -> None:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        while not stop.is_set():
            connection.request("POST", "/PaymentGateway/charge", CHARGE, HEADERS)
            answer = connection.getresponse()
            body = answer.read()
            if answer.status == 200:
                reference = json.loads(body)["gatewayReference"]
                with lock:
                    out.acked.append((time.monotonic(), reference))
    except (OSError, http.client.HTTPException, ValueError):
        return  # killed
    finally:
        connection.close()


def run(clients: int, seconds: float, checkout: Path = REPO_ROOT, state: bool = True) -> Outcome:
    """The load, the SIGKILL and what the file kept (see the module doc)."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "state.sqlite"
        options = ["--log-level", "warning", "--no-card-form"] + (["--state", str(path)] if state else [])
        with PayemuProcess("serve", *options, cwd=checkout) as process:
            port = process.port
            setup = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
            setup.request("PUT", "/PaymentGatewayAccounts/demo", json.dumps(ACCOUNT).encode(), HEADERS)
            assert setup.getresponse().status == 200
            setup.close()
            out, stop, lock = Outcome(), threading.Event(), threading.Lock()
            threads = [threading.Thread(target=_client, args=(port, stop, out, lock)) for _ in range(clients)]
            began = time.monotonic()
            for thread in threads:
                thread.start()
            time.sleep(seconds)
            out.killed_at = time.monotonic()
            process.kill()  # SIGKILL
            out.seconds = out.killed_at - began
            stop.set()
            for thread in threads:
                thread.join()
        if state:
            with contextlib.closing(sqlite3.connect(path)) as db:
                rows = db.execute("SELECT id FROM records WHERE kind = 'transaction'")
                out.saved = {ident for (ident,) in rows}
        else:
            out.saved = {ref for _, ref in out.acked}
        return out
