"""The pytest plugin: its fixtures (used right here — the plugin is installed with payemu),
the in-process server, reusing a running one, and staying out of the way."""

from __future__ import annotations

import re
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from emulator.domain.config import Settings
from emulator.testing import ControlError, Payemu, PayemuServer
from tests.support.plugins_off import BLOCKED

CARD = "4111111111111111"


def test_the_fixture_is_a_fresh_tenant(payemu: Payemu, payemu_server: PayemuServer) -> None:
    assert payemu.base_url == payemu_server.base_url
    status = payemu.client.get("/Utils/apiKey").json()
    assert status == {"status": "OK", "userName": payemu.user_name, "accountId": payemu.account_id, "isSandbox": True}
    assert payemu.api_key not in ("sandbox-api-key", "live-api-key")
    [entry] = payemu.requests()
    assert (entry["path"], entry["status"], entry["id"]) == ("/Utils/apiKey", 200, 1)


def test_journal_helpers(payemu: Payemu) -> None:
    payemu.client.get("/Utils/apiKey")
    payemu.client.get("/PaymentGateway")
    assert [e["path"] for e in payemu.requests()] == ["/Utils/apiKey", "/PaymentGateway"]
    assert [e["path"] for e in payemu.requests(path="/PaymentGateway")] == ["/PaymentGateway"]
    assert [e["id"] for e in payemu.requests(limit=1)] == [2]


def test_clock_helpers(payemu: Payemu) -> None:
    assert payemu.clock()["offset"] == 0
    assert payemu.advance_clock("8d")["offset"] == 8 * 86400
    assert payemu.advance_clock(60)["offset"] == 8 * 86400 + 60
    with pytest.raises(ControlError, match="400") as caught:
        payemu.advance_clock("soon")
    assert caught.value.status == 400
    assert "advance" in caught.value.body


def test_scenario_helpers(payemu: Payemu) -> None:
    added = payemu.add_scenario(
        {
            "name": "broke",
            "when": {"cardNumber": CARD},
            "then": {"operationResultCode": "Rejected", "rejectReasonCode": "DoNotHonor"},
        }
    )
    assert added[0]["name"] == "broke"
    assert added[0]["source"] == "runtime"
    payemu.add_scenario("- name: slow\n  when: {amount: 5}\n  then: {operationResultCode: Success, delayMs: 10}\n")
    assert [r["name"] for r in payemu.scenarios()[:2]] == ["slow", "broke"]
    assert payemu.remove_scenario("slow") == ["slow"]
    assert payemu.remove_scenario() == ["broke"]
    with pytest.raises(ControlError, match=re.escape("scenarios[0].then.operationResultCode")):
        payemu.add_scenario({"name": "bad", "then": {"operationResultCode": "Maybe"}})


def test_certificates_transactions_and_reset(payemu: Payemu) -> None:
    assert payemu.add_certificate("shopCert") == ["shopCert"]
    assert payemu.transactions() == []
    payemu.client.get("/Utils/apiKey")
    payemu.advance_clock("1h")
    payemu.reset()
    assert payemu.requests() == []
    assert payemu.clock()["offset"] == 0
    assert payemu.client.get("/_emulator/certificates").json() == {"certificates": []}


def test_tenants_are_isolated_and_removed_on_close(payemu_server: PayemuServer) -> None:
    first, second = payemu_server.tenant(), payemu_server.tenant()
    try:
        first.client.get("/Utils/apiKey")
        first.add_scenario({"name": "mine", "then": {"operationResultCode": "Success"}})
        assert second.requests() == []
        assert "mine" not in [r["name"] for r in second.scenarios()]
    finally:
        first.close()
        second.close()
    with httpx.Client(base_url=payemu_server.base_url, headers={"X-Api-Key": first.api_key}) as client:
        assert client.get("/Utils/apiKey").status_code == 401


def test_a_seeded_server_gives_each_label_its_own_fixed_key() -> None:
    server = PayemuServer.start(Settings(seed=11))
    try:
        one = server.tenant(label="tests/test_x.py::test_a")
        one.close()
        again = server.tenant(label="tests/test_x.py::test_a")
        other = server.tenant(label="tests/test_x.py::test_b")
        assert again.api_key == one.api_key != other.api_key
        assert again.api_key.startswith("pytest-")
        busy = server.tenant(label="tests/test_x.py::test_a")  # the key is in use: a random one
        assert busy.api_key.startswith("test-")
        for tenant in (again, other, busy):
            tenant.close()
    finally:
        server.stop()


def test_in_process_start_up_reports_its_time() -> None:
    """A fresh interpreter starts a server and it answers; the start-up time is printed,
    not asserted (speed figures belong to `python -m tests.benchmarks.run`, whose start-up
    figure is the one the README gives)."""
    script = (
        "import time; began = time.perf_counter()\n"
        "from emulator.testing import PayemuServer\n"
        "server = PayemuServer.start()\n"
        "total = time.perf_counter() - began\n"
        "import httpx; assert httpx.get(server.base_url + '/_emulator/health').status_code == 200\n"
        "server.stop(); print(f'{total:.3f} {server.startup_seconds:.3f}')\n"
    )
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    best = tuple(map(float, run.stdout.split()))
    print(f"in-process server start-up: {best[0]:.3f} s with imports, {best[1]:.3f} s without")
    assert 0 < best[1] <= best[0]


def test_stop_frees_the_port() -> None:
    server = PayemuServer.start()
    url = server.base_url
    server.stop()
    with pytest.raises(httpx.ConnectError):
        httpx.get(url + "/_emulator/health", timeout=2)


def test_connect_to_a_running_server() -> None:
    running = PayemuServer.start(Settings(seed=1))
    try:
        remote = PayemuServer.connect(running.base_url + "/")
        assert remote.base_url == running.base_url
        assert remote.seeded is True
        assert remote.app is None
        tenant = remote.tenant()
        assert tenant.client.get("/Utils/apiKey").status_code == 200
        tenant.close()
        remote.stop()  # a remote server is not ours to stop
        assert httpx.get(running.base_url + "/_emulator/health").status_code == 200
    finally:
        running.stop()
    with pytest.raises(RuntimeError, match="no payemu answers"):
        PayemuServer.connect(running.base_url, wait=0.5)


def test_importing_the_plugin_starts_and_imports_nothing() -> None:
    code = (
        "import sys, threading, emulator.testing\n"
        "print(sorted(m for m in ('uvicorn', 'httpx', 'emulator.app.build', 'starlette') if m in sys.modules),"
        " threading.active_count())"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[] 1"


def test_a_suite_that_does_not_use_it_is_untouched(tmp_path: Path) -> None:
    (tmp_path / "test_plain.py").write_text("def test_plain():\n    assert 1 + 1 == 2\n")
    began = time.perf_counter()
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *BLOCKED, "test_plain.py"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "1 passed" in result.stdout
    assert "payemu:" not in result.stdout
    assert time.perf_counter() - began < 30


def test_tenants_share_one_pool_that_outlives_them(payemu_server: PayemuServer) -> None:
    first = payemu_server.tenant()
    first.client.get("/Utils/apiKey")
    first.close()
    second = payemu_server.tenant()  # the pool stays open when a tenant's client closes
    try:
        assert second.client.get("/Utils/apiKey").json()["userName"] == second.user_name
        assert second._pool is first._pool is payemu_server.pool
    finally:
        second.close()


def test_a_connection_the_server_closed_while_idle_is_opened_again() -> None:
    """The kept-alive control connection survives a server that closes it between calls
    (uvicorn does after its keep-alive timeout)."""
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
    from threading import Thread

    from emulator.cli.sharedpool import SharedPool

    connections = []

    class ClosesAfterEachAnswer(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def setup(self) -> None:
            super().setup()
            connections.append(self.client_address)

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers["Content-Length"]))
            body = b'{"ok": true}'
            self.send_response(201)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            self.close_connection = True  # without saying so: the client finds out on its next call

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), ClosesAfterEachAnswer)
    Thread(target=server.serve_forever, daemon=True).start()
    pool = SharedPool()
    try:
        base = f"http://127.0.0.1:{server.server_address[1]}"
        for _ in range(3):
            assert pool.call(base, "POST", "/_emulator/tenants", {"sandbox": True}) == (201, '{"ok": true}')
        assert len(connections) == 3
    finally:
        pool.close()
        server.shutdown()
        server.server_close()
