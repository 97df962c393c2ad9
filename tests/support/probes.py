"""What clients can make payemu hold beyond its HTTP edge, probed on a real server: each
probe starts a fresh ``payemu serve --any-key`` on 127.0.0.1, sends its requests, and
notes the process's peak resident memory (``VmHWM``) and the budget the control API
reports (``memoryBytes`` of ``GET /_emulator/health``). For the memory tests
(tests/system/test_memory_probes.py) and ``python -m tests.benchmarks.held``."""

from __future__ import annotations

import contextlib
import http.client
import json
import select
import socket
import time
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
    statuses: dict[int | str, int] = field(default_factory=dict)  # a str: how a connection ended

    def line(self) -> str:
        answers = ", ".join(f"{status}: {count:,}" for status, count in sorted(self.statuses.items(), key=str))
        return (
            f"{self.name}: peak RSS {self.peak_mib:.0f} MiB (ceiling {CEILING_MIB}), "
            f"budget reports {self.budget_mib:.0f} MiB; answers {answers}"
        )


class Client:
    """One keep-alive connection; each answer's status counted, its body read whole."""

    def __init__(self, port: int, probe: Probe) -> None:
        self.connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        self.port = port
        self.probe = probe

    def count(self, status: int | str) -> None:
        self.probe.statuses[status] = self.probe.statuses.get(status, 0) + 1

    def send(self, method: str, path: str, key: str, body: bytes | None = None, media: str = "application/json") -> Any:
        headers = {"X-Api-Key": key, "Content-Type": media}
        self.connection.request(method, path, body, headers)
        answer = self.connection.getresponse()
        data = answer.read()
        self.count(answer.status)
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


FIVE = ("ApiKey", "MerchantAccount", "ShopperInteraction", "RecurringProcessingModel", "Currency")  # AdyenCheckout's


def accounts(
    keys: int = 20,
    per_key: int = 1000,
    chars: int = 4096,
    names: tuple[str, ...] = FIVE,
    gateway: str = "AdyenCheckout",
) -> Callable[[Client], None]:
    """Per key: ``per_key`` stored gateway accounts on ``gateway``, each with a credential
    of ``chars`` characters (at most 4,096) per name of ``names``: by default the five
    AdyenCheckout takes (two required, three optional)."""

    def steps(client: Client) -> None:
        for key in range(keys):
            name = f"accounts-probe-{key}"
            for number in range(per_key):
                credentials = [{"key": k, "value": f"{number:08d}" + "s" * (chars - 8)} for k in names]
                account = f"acct{number}"
                body = {"name": account, "paymentGatewayName": gateway, "credentials": credentials}
                client.send("PUT", f"/PaymentGatewayAccounts/{account}", name, json.dumps(body).encode())

    return steps


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


def answers_of(socks: list[socket.socket], seconds: float) -> list[bytes]:
    """What each socket received until the server closed it (or ``seconds`` passed)."""
    return read_until_closed(socks, seconds)[0]


def read_until_closed(socks: list[socket.socket], seconds: float) -> tuple[list[bytes], list[socket.socket]]:
    """What each socket received until the server closed it (or ``seconds`` passed), and
    the sockets the server had not closed by then."""
    received = {sock: b"" for sock in socks}
    waiting = list(socks)
    deadline = time.monotonic() + seconds
    while waiting and time.monotonic() < deadline:
        ready, _, _ = select.select(waiting, [], [], 0.2)
        for sock in ready:
            try:
                chunk = sock.recv(65536)
            except OSError:
                chunk = b""
            received[sock] += chunk
            if not chunk:
                waiting.remove(sock)
    return [received[sock] for sock in socks], waiting


def _raw_connections(client: Client, count: int, data: bytes, seconds: float) -> None:
    """``count`` connections each sending ``data``, then what each got back within
    ``seconds``: the status of each answer, or ``closed``/``open`` for a connection
    that got none (a refusal part way through a send counts as closed)."""
    socks = []
    for _ in range(count):
        sock = socket.create_connection(("127.0.0.1", client.port), timeout=10)
        sock.settimeout(2)
        with contextlib.suppress(OSError):
            sock.sendall(data)
        socks.append(sock)
    got_all, waiting = read_until_closed(socks, seconds)
    for sock, got in zip(socks, got_all, strict=True):
        statuses = _statuses(got)
        for status in statuses:
            client.count(status)
        if not statuses:
            client.count("open" if sock in waiting else "closed")
        sock.close()


def _statuses(raw: bytes) -> list[int]:
    """The status of each answer in ``raw``, answers one after another on a connection."""
    found = []
    while raw.startswith(b"HTTP/1.1 "):
        head, _, rest = raw.partition(b"\r\n\r\n")
        found.append(int(head.split()[1]))
        lengths = [line.split(b":")[1] for line in head.lower().split(b"\r\n") if line.startswith(b"content-length:")]
        raw = rest[int(lengths[0]) if lengths else len(rest) :]
    return found


def unfinished_heads(connections: int = 400, lines: int = 10_700) -> Callable[[Client], None]:
    """``connections`` each sending a request head of ``lines`` ``ab:c`` header lines
    (64,200 bytes: under the 64 KiB text limit) and never finishing it."""
    head = b"GET /Utils/apiKey HTTP/1.1\r\nHost: x\r\n" + b"ab:c\r\n" * lines

    def steps(client: Client) -> None:
        _raw_connections(client, connections, head, 20)

    return steps


def pipelined_heads(connections: int = 100, headers: int = 12_500, delay_ms: int = 5_000) -> Callable[[Client], None]:
    """``connections`` each sending a charge a scenario delays by ``delay_ms``, then 8
    complete heads of ``headers`` headers each, pipelined behind it (the peak does not
    depend on the delay once every head has arrived)."""

    def steps(client: Client) -> None:
        key = "pipeline-probe"
        rule = {
            "name": "slow",
            "when": {"operation": "Charge"},
            "then": {"operationResultCode": "Success", "delayMs": delay_ms},
        }
        client.send("POST", "/_emulator/scenarios", key, json.dumps(rule).encode())
        account = {"paymentGatewayName": "Stripe", "credentials": [{"key": "SecretKey", "value": "sk_test_probe"}]}
        client.send("PUT", "/PaymentGatewayAccounts/main", key, json.dumps(account).encode())
        card = {"cardHolderName": "A B", "cardNumber": "4111111111111111", "expirationMonth": 1, "expirationYear": 2031}
        body = json.dumps({"paymentGatewayAccountName": "main", "amount": 5, "currency": "USD", "card": card}).encode()
        charge = (
            f"POST /PaymentGateway/charge HTTP/1.1\r\nHost: x\r\nX-Api-Key: {key}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
        ).encode() + body
        heavy = f"GET /Utils/apiKey HTTP/1.1\r\nHost: x\r\nX-Api-Key: {key}\r\n".encode() + b"a:b\r\n" * headers
        last = f"GET /Utils/apiKey HTTP/1.1\r\nHost: x\r\nX-Api-Key: {key}\r\nConnection: close\r\n\r\n".encode()
        _raw_connections(client, connections, charge + (heavy + b"\r\n") * 7 + last, delay_ms / 1000 + 25)

    return steps


PROBES: dict[str, Callable[[], Callable[[Client], None]]] = {
    "heads": unfinished_heads,
    "pipelined": pipelined_heads,
    "journal": journal_reads,
    "accounts": accounts,
    "interface": interfaces,
}
