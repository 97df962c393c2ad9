"""Loading a state file is bounded like serving (emulator.state.decode.Builder): what is
over a journal's bounds, a tenant's budget or the process's is dropped oldest first,
journal entries before transactions, with one log line; a server started on a file of
150,000 journal entries holds its memory under the documented peak."""

from __future__ import annotations

import logging
import signal
import sqlite3
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest
from starlette.applications import Starlette
from starlette.testclient import TestClient

from emulator.domain.config import Limits, Settings
from emulator.state.database import read
from tests.conftest import SANDBOX
from tests.support.servers import PayemuProcess
from tests.support.statefiles import ENTRY, journal_file, peak_mib

PEAK_MIB = 384  # docs/state.md and docs/reference/limits.md: the bound of a process at the default limits
TENANTS, ENTRIES, PAD = 150, 1000, 300  # 150,000 entries of 2 KB: more than memoryBytes (256 MiB) holds


@pytest.fixture(scope="module")
def full_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("full") / "full.sqlite"
    journal_file(path, TENANTS, ENTRIES, PAD)
    return path


def test_a_150000_entry_journal_starts_within_the_budgets(full_file: Path) -> None:
    server = PayemuProcess("serve", "--state", str(full_file), "--no-card-form", up_within=180)
    try:
        peak = peak_mib(server.pid)
        # the process's budget sheds the largest tenants' journals first, each emptied before
        # the next; among equal tenants any may go: find one that kept entries
        for tenant in range(TENANTS - 1, -1, -1):
            headers = {"X-Api-Key": f"key-{tenant}"}
            # the newest entry (a page holds 1 MiB of entries: these are 2 KB each)
            newest = httpx.get(server.url + "/_emulator/requests?limit=1", headers=headers, timeout=30)
            if newest.status_code != 200 or newest.json()["requests"]:
                break
        status, printed = server.stop(signal.SIGTERM)
    finally:
        server.close()
    assert peak < PEAK_MIB, f"peak {peak:.0f} MiB"
    assert status == 0, printed
    said = [line for line in printed.splitlines() if "over the journal's bounds or the byte budgets" in line]
    assert len(said) == 1, printed
    assert f"{full_file}: " in said[0] and " journal entries and 0 records " in said[0]
    held = newest.json()["requests"]
    assert held and held[-1]["id"] == ENTRIES  # the newest entries stay; the oldest went
    with sqlite3.connect(full_file) as db:  # and the file holds what the server held
        (rows,) = db.execute("SELECT count(*) FROM journal").fetchone()
    db.close()
    assert rows < TENANTS * ENTRIES


def test_what_is_over_the_process_budget_goes_journal_first_oldest_first(
    make_app: Callable[..., Starlette], tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "state.sqlite"
    card = {"cardHolderName": "J S", "cardNumber": "4111111111111111", "expirationMonth": 12, "expirationYear": 2031}
    with TestClient(make_app(state_path=str(path)), headers=SANDBOX) as client:
        client.put("/PaymentGatewayAccounts/demo", json={"paymentGatewayName": "NULLSuccess", "credentials": []})
        for _ in range(60):
            body = {"amount": 5.0, "currency": "USD", "card": card, "paymentGatewayAccountName": "demo"}
            assert client.post("/PaymentGateway/charge", json=body).status_code == 200
    everything = read(path, Settings())
    (owner,) = [tenant for tenant in everything if tenant.key == "sandbox-api-key"]
    entries, transactions = len(owner.journal), len(owner.ledger)
    room = owner.budget.used - owner.journal.bytes // 2  # half the journal's bytes over the budget
    with caplog.at_level(logging.WARNING, logger="payemu"):
        tenants = read(path, Settings(limits=Limits(memory_bytes=room)))
    (owner,) = [tenant for tenant in tenants if tenant.key == "sandbox-api-key"]
    assert sum(tenant.budget.used for tenant in tenants) <= room
    assert len(owner.ledger) == transactions  # every transaction kept: journal entries went first
    kept = [entry["id"] for entry in owner.journal]
    assert 0 < len(kept) < entries
    assert kept == list(range(entries - len(kept) + 1, entries + 1))  # the newest, in order
    (said,) = [r.getMessage() for r in caplog.records if "or the byte budgets" in r.getMessage()]
    assert said.startswith(f"{path}: {entries - len(kept)} journal entries and 0 records were over")


def test_a_journal_longer_than_its_bounds_is_read_from_its_newest(tmp_path: Path) -> None:
    path = tmp_path / "long.sqlite"
    journal_file(path, 1, 5000)
    with sqlite3.connect(path) as db:  # an entry past the journal's bounds is never read
        db.execute("UPDATE journal SET doc = 'not JSON' WHERE id = 1")
    db.close()
    (owner,) = read(path, Settings(journal_size=100))
    assert [entry["id"] for entry in owner.journal] == list(range(4901, 5001))
    assert owner.budget.used <= 100 * (len(ENTRY) + 10)


def test_past_the_journal_the_oldest_finished_transactions_go_and_leave_the_file_too(
    make_app: Callable[..., Starlette], tmp_path: Path
) -> None:
    path = tmp_path / "state.sqlite"
    card = {"cardHolderName": "J S", "cardNumber": "4111111111111111", "expirationMonth": 12, "expirationYear": 2031}
    with TestClient(make_app(state_path=str(path)), headers=SANDBOX) as client:
        client.put("/PaymentGatewayAccounts/demo", json={"paymentGatewayName": "NULLSuccess", "credentials": []})
        references = []
        for _ in range(40):
            body = {"amount": 5.0, "currency": "USD", "card": card, "paymentGatewayAccountName": "demo"}
            references.append(client.post("/PaymentGateway/charge", json=body).json()["gatewayReference"])
    (owner,) = [tenant for tenant in read(path, Settings()) if tenant.key == "sandbox-api-key"]
    room = owner.budget.used - owner.journal.bytes - owner.ledger.bytes // 2
    limits = Limits(memory_bytes=room)
    app = make_app(state_path=str(path), limits=limits)
    with TestClient(app, headers=SANDBOX):
        held = [tx.reference for tx in app.state.runtime.tenants.get("sandbox-api-key").ledger.transactions()]
        assert 0 < len(held) < len(references)
        assert held == references[-len(held) :]  # the newest stay
    with sqlite3.connect(path) as db:
        kept = [ident for (ident,) in db.execute("SELECT id FROM records WHERE kind = 'transaction' ORDER BY rowid")]
    db.close()
    assert kept == held
    assert sum(tenant.budget.used for tenant in read(path, Settings(limits=limits))) <= room
