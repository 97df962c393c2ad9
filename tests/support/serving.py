"""``payemu serve`` in a process of its own, for the tests that signal, stop or measure a
real server: a free port, the command, the wait for its health answer, and what it printed."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from emulator.domain.config import Settings
from emulator.testing import Payemu, PayemuServer
from tests.support.paths import REPO_ROOT

ROOT = REPO_ROOT


def free_port() -> int:
    """A loopback port nothing listens on (as the kernel hands it out)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def serve(port: int, *options: str, **popen: Any) -> subprocess.Popen[Any]:
    """``python -m emulator serve --port PORT OPTIONS`` from the repository, started, not
    yet waited for. Its output is piped (stderr into stdout unless ``popen`` says else)."""
    popen.setdefault("stdout", subprocess.PIPE)
    popen.setdefault("stderr", subprocess.STDOUT)
    popen.setdefault("cwd", ROOT)
    return subprocess.Popen([sys.executable, "-m", "emulator", "serve", "--port", str(port), *options], **popen)


def wait_until_up(
    base: str, process: subprocess.Popen[Any], timeout: float = 30, path: str = "/swagger/1.0/swagger.json"
) -> None:
    """Return once ``base`` answers ``path`` (payemu's document by default; a proxy forwards
    it) with anything but a server error; fail, with what the server printed, if it exits
    first or does not answer within ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            if httpx.get(base + path, timeout=1).status_code < 500:
                return
        except httpx.HTTPError:
            pass
        if process.poll() is not None:
            raise AssertionError(f"the server exited early: {process.communicate(timeout=5)}")
        if time.monotonic() > deadline:
            raise AssertionError("the server did not come up")
        time.sleep(0.05)


HEALTH = "/_emulator/health"


def output_of(process: subprocess.Popen[Any]) -> str:
    """Everything the server printed; killed first if it is still running."""
    if process.poll() is None:
        process.kill()
    out, _ = process.communicate(timeout=30)
    return out.decode() if isinstance(out, bytes) else out or ""


def server_and_tenant(**settings: Any) -> tuple[Any, Any]:
    """Two fixtures for a test module: ``server``, a payemu server in this process with
    ``settings`` (warnings only) for the module, and ``tenant``, a new tenant of it for each
    test. ``server, tenant = server_and_tenant(...)`` at the module's top."""

    @pytest.fixture(scope="module")
    def server() -> Iterator[PayemuServer]:
        running = PayemuServer.start(Settings(log_level="warning", **settings))
        yield running
        running.stop()

    @pytest.fixture
    def tenant(server: PayemuServer) -> Iterator[Payemu]:
        made = server.tenant()
        yield made
        made.close()

    return server, tenant


def slow_charge(tenant: Payemu, delay_ms: int) -> bytes:
    """The JSON body of a charge that ``tenant``'s scenario answers after ``delay_ms``
    (the scenario and a Stripe account ``main`` are set up here)."""
    rule = {
        "name": "slow",
        "when": {"operation": "Charge"},
        "then": {"operationResultCode": "Success", "delayMs": delay_ms},
    }
    tenant.add_scenario(rule)
    account = {"paymentGatewayName": "Stripe", "credentials": [{"key": "SecretKey", "value": "sk_test_sk"}]}
    assert tenant.client.put("/PaymentGatewayAccounts/main", json=account).status_code == 200
    card = {"cardHolderName": "A B", "cardNumber": "4111111111111111", "expirationMonth": 1, "expirationYear": 2031}
    body = {"paymentGatewayAccountName": "main", "amount": 5, "currency": "USD", "card": card}
    return json.dumps(body).encode()


def peak_rss_mib(pid: int) -> float:
    """The peak RSS so far (VmHWM, from /proc: Linux only) of process ``pid``, in MiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmHWM")
