"""No input crashes payemu, nothing grows without bound, and an exposed
instance is safe. The crash and growth cases are data (tests/cases/hostile.yaml); each
asserts the error answer and that the server still answers /_emulator/health."""

from __future__ import annotations

import codecs
import os
import signal
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest

from emulator.app.build import create_app
from emulator.cli.main import banner
from emulator.domain.config import LIMIT_KEYS, KeySpec, Limits, Settings
from tests.support.bodies import STRIPE, card
from tests.support.paths import REPO_ROOT
from tests.support.servers import PayemuProcess, ThreadServer, in_thread, payemu
from tests.support.waiting import until
from tests.support.yamldata import load_yaml

ROOT = REPO_ROOT
CASES: list[dict[str, Any]] = load_yaml((ROOT / "tests" / "cases" / "hostile.yaml").read_text())["cases"]
LIMITS = Limits(
    tenants=5, tenant_idle_seconds=3600, tokens=20, transactions=15, journal_bytes=64 * 1024, sessions=5, named=10
)
KEYS = tuple(KeySpec(f"case-key-{i}", f"merchant-{i}", 30001 + i, True) for i in range(len(CASES) + 8))
FILL = {
    "deep_brackets": "[" * 30000,
    "deep_dashes": "- " * 20000 + "x",
    "long_key": "k" * 900_000,
    "huge_int": "9" * 5000,
}
CARD = card(cardHolderName="A B", cardNumber="4242424242424242")


@pytest.fixture(scope="module")
def server() -> Iterator[ThreadServer]:
    with in_thread(Settings(keys=KEYS, limits=LIMITS, request_timeout_seconds=1.5)) as running:
        yield running


def healthy(base_url: str) -> dict[str, Any]:
    answer = httpx.get(base_url + "/_emulator/health", timeout=10)
    assert answer.status_code == 200
    body: dict[str, Any] = answer.json()
    return body


def _fill(text: str, n: int) -> str:
    for name, value in FILL.items():
        text = text.replace("{" + name + "}", value)
    return text.replace("{n}", str(n))


def _send(client: httpx.Client, case: dict[str, Any], n: int) -> httpx.Response:
    headers = {"Content-Type": case["type"]}
    if "raw" in case:
        content = codecs.escape_decode(case["raw"].encode("latin-1"))[0]
    else:
        content = _fill(case["body"], n).encode()
    return client.request(case["method"], _fill(case["path"], n), content=content, headers=headers)


@pytest.mark.parametrize("index", range(len(CASES)), ids=[c["name"] for c in CASES])
def test_hostile_case(server: ThreadServer, index: int) -> None:
    case = CASES[index]
    with httpx.Client(base_url=server.base_url, headers={"X-Api-Key": KEYS[index].key}, timeout=60) as client:
        answers = [_send(client, case, n) for n in range(case.get("repeat", 1))]
    answer = answers[-1]
    assert answer.status_code == case["status"], answer.text[:500]
    assert answer.headers["content-type"] == "application/json"
    [entry] = answer.json()
    if "field" in case:
        assert entry["fieldName"] == case["field"]
    assert case["message"] in " ".join(entry["errors"])
    if "max_bytes" in case:
        assert len(answer.content) <= case["max_bytes"]
    assert all(a.status_code < 500 or a.status_code == 507 for a in answers)
    healthy(server.base_url)


def test_finished_transactions_are_dropped_oldest_first(server: ThreadServer) -> None:
    key = KEYS[len(CASES)].key
    body = {"amount": 5, "currency": "USD", "card": CARD, "paymentGatewayAccount": STRIPE}
    with httpx.Client(base_url=server.base_url, headers={"X-Api-Key": key}, timeout=30) as client:
        made = [client.post("/PaymentGateway/charge", json=body).json()["gatewayReference"] for _ in range(25)]
        kept = [t["reference"] for t in client.get("/_emulator/transactions").json()["transactions"]]
    assert kept == made[-LIMITS.transactions :]
    assert healthy(server.base_url)["limits"]["transactionsPerTenant"]["limit"] == LIMITS.transactions


def test_the_journal_is_bounded_in_bytes(server: ThreadServer) -> None:
    key = KEYS[len(CASES) + 1].key
    with httpx.Client(base_url=server.base_url, headers={"X-Api-Key": key}, timeout=30) as client:
        for n in range(40):  # 20 tokens, then 20 answers of 507: all journaled with their 8 KB body
            client.post("/StringTokens", json={"payload": "y" * 8000 + str(n)})
        journal = client.get("/_emulator/requests").json()
    assert journal["bytes"] <= LIMITS.journal_bytes
    assert journal["dropped"] > 0
    assert healthy(server.base_url)["limits"]["journalBytesPerTenant"]["used"] <= LIMITS.journal_bytes


def test_health_reports_every_limit(server: ThreadServer) -> None:
    reported = healthy(server.base_url)["limits"]
    assert set(reported) == set(LIMIT_KEYS) - {"tenantIdleSeconds"}


def test_idle_run_time_tenants_are_evicted_and_declared_ones_never() -> None:
    from starlette.testclient import TestClient

    from emulator.app.build import create_app

    settings = Settings(limits=Limits(tenants=2, tenant_idle_seconds=0))
    client = TestClient(create_app(settings))
    keys = [client.post("/_emulator/tenants", json={}).json()["apiKey"] for _ in range(4)]
    runtime = client.app.state.runtime  # type: ignore[attr-defined]
    held = {tenant.key for tenant in runtime.tenants}
    assert held == {"sandbox-api-key", "live-api-key", *keys[-2:]}


def test_a_slow_body_gets_a_408_and_the_server_goes_on(server: ThreadServer) -> None:
    address = urlsplit(server.base_url)
    with socket.create_connection((address.hostname, address.port), timeout=10) as sock:
        sock.sendall(
            b"POST /StringTokens HTTP/1.1\r\nHost: x\r\nX-Api-Key: "
            + KEYS[-1].key.encode()
            + b"\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"
        )
        started = time.monotonic()
        answer = sock.recv(4096)
        waited = time.monotonic() - started
    assert answer.startswith(b"HTTP/1.1 408")
    assert b"did not arrive within 1.5 s" in answer
    assert waited < 5
    healthy(server.base_url)


def test_a_client_leaving_mid_body_is_journaled_as_such(server: ThreadServer, caplog: pytest.LogCaptureFixture) -> None:
    key = KEYS[-2].key
    address = urlsplit(server.base_url)
    with socket.create_connection((address.hostname, address.port), timeout=10) as sock:
        sock.sendall(
            b"POST /StringTokens HTTP/1.1\r\nHost: x\r\nX-Api-Key: "
            + key.encode()
            + b'\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"pay'
        )
        time.sleep(0.3)
    expected = [("/StringTokens", None, "client-disconnected")]

    def journaled() -> list[tuple[str, int | None, str | None]]:
        entries = httpx.get(server.base_url + "/_emulator/requests", headers={"X-Api-Key": key}).json()["requests"]
        return [(e["path"], e["status"], e.get("fault")) for e in entries]

    until(lambda: journaled() == expected, 10, "the journal did not note the departure")  # on the server's time
    assert journaled() == expected
    assert "payemu bug" not in caplog.text


def test_sigterm_with_a_stalled_client_exits_within_the_timeout(tmp_path: Path) -> None:
    with PayemuProcess(
        "serve", "--shutdown-timeout", "1", "--request-timeout", "600", "--log-level", "warning"
    ) as served:
        stalled = socket.create_connection(("127.0.0.1", served.port), timeout=1)
        stalled.sendall(
            b"POST /StringTokens HTTP/1.1\r\nHost: x\r\nX-Api-Key: sandbox-api-key\r\n"
            b"Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{"
        )
        time.sleep(0.3)
        started = time.monotonic()
        code, output = served.stop(signal.SIGTERM, timeout=15)
        took = time.monotonic() - started
        stalled.close()
    assert code == 0, output
    assert took < 1 + 2 + 2  # the timeout, the fallback's margin, slack for a loaded machine
    assert "payemu stopped" in output


# -- exposed ------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def guarded() -> Iterator[httpx.Client]:
    from starlette.testclient import TestClient

    from emulator.app.build import create_app

    with TestClient(create_app(Settings(admin_key="admin-secret-1"))) as client:
        yield client


@pytest.mark.parametrize(("method", "path"), [("POST", "/_emulator/tenants"), ("POST", "/_emulator/scenarios/reload")])
def test_the_admin_key_guards_control_calls(guarded: httpx.Client, method: str, path: str) -> None:
    headers = {"X-Api-Key": "sandbox-api-key", "Content-Type": "application/json"}
    refused = guarded.request(method, path, headers=headers, content=b"{}")
    assert refused.status_code == 401
    assert refused.json()[0]["fieldName"] == "X-Admin-Key"
    allowed = guarded.request(method, path, headers={**headers, "X-Admin-Key": "admin-secret-1"}, content=b"{}")
    assert allowed.status_code in (200, 201)


def test_the_admin_key_guards_the_dashboard(guarded: httpx.Client) -> None:
    assert guarded.get("/_emulator/").status_code == 401
    page = guarded.get("/_emulator/", params={"admin": "admin-secret-1"})
    assert page.status_code == 200
    assert "admin=admin-secret-1" in page.text  # the live part keeps the key


def test_health_says_whether_an_admin_key_is_set(guarded: httpx.Client) -> None:
    assert guarded.get("/_emulator/health").json()["adminKey"] is True


def test_the_banner_warns_when_exposed_without_a_key() -> None:
    def shown(settings: Settings) -> str:
        return banner(settings, create_app(settings).state.runtime)

    assert "WITHOUT an admin key" in shown(Settings(host="0.0.0.0"))
    assert "WITHOUT" not in shown(Settings(host="0.0.0.0", admin_key="admin-secret-1"))
    assert "WITHOUT" not in shown(Settings(host="127.0.0.1"))


def test_keys_and_tokens_come_from_secrets_without_a_seed(monkeypatch: pytest.MonkeyPatch) -> None:
    from emulator.tenants import tenants

    asked: list[int] = []
    real = os.urandom

    def urandom(size: int) -> bytes:
        asked.append(size)
        return real(size)

    monkeypatch.setattr(tenants.os, "urandom", urandom)
    monkeypatch.setattr(tenants, "_POOLS", {})  # nothing drawn before this test
    unseeded = tenants.TenantRegistry(Settings())
    assert asked == [32, 32], "a token-signing key per configured tenant"
    token = next(iter(unseeded)).random_string(32)
    assert len(asked) == 3, "a token: one read of the OS's secure source"
    assert asked[2] >= 32, "at least a byte per character"
    key = unseeded.create().key
    assert len(asked) == 4, "the new tenant's signing key (the key's characters were drawn with the token's)"
    assert asked[3] == 32
    assert len(token) == 32
    assert key.startswith("test-")
    seeded = tenants.TenantRegistry(Settings(seed=1))
    again = tenants.TenantRegistry(Settings(seed=1))
    assert next(iter(seeded)).random_string(32) == next(iter(again)).random_string(32), "--seed replays"
    assert len(asked) == 4, "a seeded tenant never asks the OS"


def test_pages_send_security_headers(guarded: httpx.Client) -> None:
    page = guarded.get("/_emulator/", params={"admin": "admin-secret-1"})
    assert page.headers["x-frame-options"] == "DENY"
    assert page.headers["x-content-type-options"] == "nosniff"
    assert page.headers["referrer-policy"] == "no-referrer"
    assert "frame-ancestors 'none'" in page.headers["content-security-policy"]


def test_payment_page_tokens_find_their_tenant_without_a_scan(monkeypatch: pytest.MonkeyPatch) -> None:
    from starlette.testclient import TestClient

    from emulator.app.build import create_app
    from emulator.tenants.tenants import TenantRegistry

    client = TestClient(create_app(Settings()))
    live = {"X-Api-Key": "live-api-key"}
    assert client.put("/PaymentGatewayAccounts/primary", json=STRIPE, headers=live).status_code == 200
    body = {
        "operation": "CHARGE",
        "mode": "TEST",
        "currencyCode": "USD",
        "amount": 3.0,
        "paymentGatewayAccountId": "primary",
    }
    made = client.post("/EWalletOperations", json=body, headers=live)
    token = made.json()["token"]

    def no_scan(self: TenantRegistry) -> Iterator[Any]:
        raise AssertionError("the payment page scanned every tenant")

    monkeypatch.setattr(TenantRegistry, "__iter__", no_scan)
    page = client.get(f"/_emulator/pay/{token}")
    assert page.status_code == 200
    assert "frame-ancestors 'self' http://localhost:*" in page.headers["content-security-policy"]


def test_a_deep_config_file_is_a_one_line_error(tmp_path: Path) -> None:
    deep = tmp_path / "deep.yaml"
    deep.write_text("[" * 30000)
    for argv in (["scenarios", "check", str(deep)], ["serve", "--config", str(deep)]):
        done = payemu(*argv, env={"PYTHONFAULTHANDLER": "0"})
        assert done.returncode in (1, 2)
        assert done.stderr.strip().splitlines() == [
            line for line in done.stderr.strip().splitlines() if f"{deep}:1:" in line
        ]


def test_secret_strings_drop_the_bytes_that_would_bias_them(monkeypatch: pytest.MonkeyPatch) -> None:
    """62 characters: bytes 248-255 would make the first eight more likely, so they are dropped."""
    from emulator.tenants import tenants

    monkeypatch.setattr(tenants.os, "urandom", lambda size: bytes([255, 0, 61, 248, 62, 247, 1]) * size)
    monkeypatch.setattr(tenants, "_POOLS", {})  # nothing drawn before this test
    alphabet = tenants.ALPHANUMERIC
    expected = alphabet[0] + alphabet[61] + alphabet[0] + alphabet[247 % 62] + alphabet[1]
    assert tenants.secret_string(5) == expected
    assert tenants.secret_string(4, "0123456789") == "0182"  # 10 characters: only 250-255 are dropped


def test_secret_strings_are_drawn_from_the_os_a_pool_at_a_time(monkeypatch: pytest.MonkeyPatch) -> None:
    """One system call serves many tokens, and no character drawn is handed out twice."""
    from emulator.tenants import tenants

    drawn: list[bytes] = []
    real = os.urandom

    def urandom(size: int) -> bytes:
        drawn.append(real(size))
        return drawn[-1]

    monkeypatch.setattr(tenants, "_POOLS", {})
    monkeypatch.setattr(tenants.os, "urandom", urandom)
    made = [tenants.secret_string(32) for _ in range(200)]
    assert len(set(made)) == 200
    assert all(len(token) == 32 and token.isalnum() and token.isascii() for token in made)
    assert 1 < len(drawn) < 10  # 6,400 characters: a 4,096-byte draw serves ~120 tokens
    alphabet = tenants.ALPHANUMERIC
    table = tenants._byte_table(alphabet)
    assert table is not None
    past_multiple = bytes(range(248, 256))  # 248 = 4 * 62: bytes past it are dropped, so no character is likelier
    stream = b"".join(chunk.translate(table, past_multiple) for chunk in drawn).decode()
    assert stream.startswith("".join(made))  # handed out in order, each character once
    assert tenants.secret_string(5000) != tenants.secret_string(5000)  # longer than one draw


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork (POSIX)")
def test_a_forked_child_never_hands_out_its_parents_secret_characters() -> None:
    import multiprocessing

    from emulator.tenants import tenants

    tenants.secret_string(32)  # the parent holds a pool now
    context = multiprocessing.get_context("fork")
    with context.Pool(1) as pool:
        in_child = pool.apply(tenants.secret_string, (32,))
    assert in_child != tenants.secret_string(32)  # the parent's next token: the child drew its own
