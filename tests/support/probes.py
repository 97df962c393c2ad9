"""What clients can make payemu hold beyond its HTTP edge, probed on a real server: each
probe starts a fresh ``payemu serve --any-key`` on 127.0.0.1, sends its requests, and
notes the process's peak resident memory (``VmHWM``) and the budget the control API
reports (``memoryBytes`` of ``GET /_emulator/health``). For the memory tests
(tests/system/test_memory_probes.py) and ``python -m tests.benchmarks.held``."""

from __future__ import annotations

import http.client
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.support.paths import REPO_ROOT
from tests.support.servers import HEALTH, PayemuProcess

MIB = 1024 * 1024
CEILING_MIB = 384  # docs/reference/limits.md: budget (256 MiB) + overhead (128 MiB)


@dataclass
class Probe:
    """The figures of one probe run."""

    name: str
    peak_mib: float = 0.0
    budget_mib: float = 0.0
    statuses: dict[int, int] = field(default_factory=dict)

    def line(self) -> str:
        answers = ", ".join(f"{status}: {count:,}" for status, count in sorted(self.statuses.items()))
        return (
            f"{self.name}: peak RSS {self.peak_mib:.0f} MiB (ceiling {CEILING_MIB}), "
            f"budget reports {self.budget_mib:.0f} MiB; answers {answers}"
        )


class Client:
    """One keep-alive connection; each answer's status counted, its body read whole."""

    def __init__(self, port: int, probe: Probe) -> None:
        self.connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        self.probe = probe

    def send(self, method: str, path: str, key: str, body: bytes | None = None, media: str = "application/json") -> Any:
        headers = {"X-Api-Key": key, "Content-Type": media}
        self.connection.request(method, path, body, headers)
        answer = self.connection.getresponse()
        data = answer.read()
        self.probe.statuses[answer.status] = self.probe.statuses.get(answer.status, 0) + 1
        return answer.status, data


def peak_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmHWM")


def run(name: str, steps: Callable[[Client], None], checkout: Path = REPO_ROOT, *options: str) -> Probe:
    """Start a server of ``checkout`` (with ``options``), run ``steps`` against it, and measure."""
    probe = Probe(name)
    options = ("--any-key", "--log-level", "warning", "--no-card-form", *options)
    with PayemuProcess("serve", *options, cwd=checkout) as process:
        client = Client(process.port, probe)
        steps(client)
        health = http.client.HTTPConnection("127.0.0.1", process.port, timeout=60)
        health.request("GET", HEALTH)
        limits = json.loads(health.getresponse().read()).get("limits", {})
        probe.budget_mib = limits.get("memoryBytes", {}).get("used", 0) / MIB
        assert process.process.poll() is None, "the server died"
        probe.peak_mib = peak_mib(process.pid)
    return probe


# -- the probes ---------------------------------------------------------------------------
def journal_reads(keys: int = 16, posts: int = 8) -> Callable[[Client], None]:
    """Per key: ``posts`` refused eWallet operations (400: no gateway account named) with a
    1 MiB ``allowedeWalletAccountIds`` of short strings, journaled with their bodies, then
    one count and one listing of the journal."""
    ids = json.dumps([f"w{n:05d}" for n in range(104_000)])
    fields = '"operation": "CHARGE", "mode": "TEST", "currencyCode": "USD", "amount": 5'
    body = f'{{{fields}, "allowedeWalletAccountIds": {ids}}}'.encode()

    def steps(client: Client) -> None:
        for key in range(keys):
            name = f"journal-probe-{key}"
            for _ in range(posts):
                client.send("POST", "/EWalletOperations", name, body)
            client.send("GET", "/_emulator/requests/count", name)
            client.send("GET", "/_emulator/requests", name)

    return steps


def accounts(keys: int = 20, per_key: int = 1000, chars: int = 4096) -> Callable[[Client], None]:
    """Per key: ``per_key`` stored gateway accounts, each with three credentials of ``chars``
    (at most 4,096 each; no gateway takes more than three)."""

    def steps(client: Client) -> None:
        for key in range(keys):
            name = f"accounts-probe-{key}"
            for number in range(per_key):
                credentials = [{"key": k, "value": f"{number:08d}" + "s" * (chars - 8)} for k in _CREDENTIALS]
                account = f"account{number}"
                body = {"name": account, "paymentGatewayName": "Zeamster", "credentials": credentials}
                client.send("PUT", f"/PaymentGatewayAccounts/{account}", name, json.dumps(body).encode())

    return steps


_CREDENTIALS = ("UserId", "UserApiKey", "DeveloperId")  # Zeamster's


def interfaces(keys: int = 45, padding: int = 950_000) -> Callable[[Client], None]:
    """Per key: ``PUT /_emulator/interface`` with the published document padded to about
    ``padding`` bytes by a long description."""
    document = json.loads((REPO_ROOT / "emulator" / "data" / "openapi.json").read_text())
    size = len(json.dumps(document))
    document["info"]["description"] = "d" * max(0, padding - size)
    body = json.dumps(document).encode()

    def steps(client: Client) -> None:
        for key in range(keys):
            client.send("PUT", "/_emulator/interface", f"interface-probe-{key}", body)

    return steps


PROBES: dict[str, Callable[[], Callable[[Client], None]]] = {
    "journal": journal_reads,
    "accounts": accounts,
    "interface": interfaces,
}
