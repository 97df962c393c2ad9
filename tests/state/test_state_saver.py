"""Durable writes (emulator.state.saver): with ``--state`` a write acknowledged more than a
second before a SIGKILL is back after the restart; SIGTERM loses nothing and leaves no
temporary file; a save that fails is logged and the process exits non-zero; each save
writes only what changed."""

from __future__ import annotations

import asyncio
import signal
import socket
import sqlite3
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
from starlette.applications import Starlette
from starlette.testclient import TestClient

from emulator.domain.config import Settings
from emulator.domain.vocabulary import ResultCode
from emulator.state import encode, schema
from emulator.state import saver as saver_module
from emulator.state.database import Writer, read
from emulator.state.saver import Saver
from emulator.stores import vault
from emulator.stores.journal import Journal
from emulator.stores.ledger import Ledger
from emulator.stores.transaction import GatewayToken
from emulator.tenants.tenants import TenantRegistry
from tests.conftest import SANDBOX
from tests.support.bodies import CARD
from tests.support.servers import PayemuProcess
from tests.support.statefiles import leftovers

ACCOUNT = {"paymentGatewayName": "NULLSuccess", "credentials": []}
LOAD_WRITES = 5000  # the load's bound; the kill comes first


def load(base: str, stop: threading.Event, acked: list[tuple[float, str, str]]) -> None:
    """String tokens, and an authorization every fifth write, until ``stop``; each
    acknowledged write is noted with the time its answer arrived."""
    with httpx.Client(base_url=base, headers=SANDBOX, timeout=5) as client:
        client.put("/PaymentGatewayAccounts/demo", json=ACCOUNT)
        for number in range(LOAD_WRITES):
            if stop.is_set():
                return
            try:
                if number % 5 == 4:
                    body = {"amount": 1.0, "currency": "USD", "card": CARD, "paymentGatewayAccountName": "demo"}
                    answer = client.post("/PaymentGateway/authorize", json=body)
                    kind, ident = "transaction", answer.json()["gatewayReference"]
                else:
                    answer = client.post("/StringTokens", json={"payload": f"payload-{number}"})
                    kind, ident = "token", answer.json()["token"]
            except (httpx.TransportError, ValueError):
                return  # killed
            if answer.status_code in (200, 201):
                acked.append((time.monotonic(), kind, ident))


def test_sigkill_keeps_every_write_acknowledged_a_second_before(tmp_path: Path) -> None:
    path = tmp_path / "state.sqlite"
    server = PayemuProcess("serve", "--state", str(path))
    stop = threading.Event()
    acked: list[tuple[float, str, str]] = []
    writer = threading.Thread(target=load, args=(server.url, stop, acked))
    writer.start()
    try:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and (not acked or acked[-1][0] - acked[0][0] < 2.0):
            time.sleep(0.05)
        killed_at = time.monotonic()
        server.kill()  # SIGKILL, writes still coming
    finally:
        stop.set()
        writer.join()
        server.close()
    settled = [(kind, ident) for at, kind, ident in acked if at < killed_at - 1.0]
    assert len(settled) >= 20, "the load did not get going"
    again = PayemuProcess("serve", "--state", str(path))
    try:
        with httpx.Client(base_url=again.url, headers=SANDBOX) as client:
            listed = client.get("/_emulator/transactions").json()["transactions"]
            references = {tx["reference"] for tx in listed}
            missing = [ident for kind, ident in settled if kind == "transaction" and ident not in references]
            for kind, ident in settled:
                if kind == "token" and client.get(f"/StringTokens/{ident}").status_code != 200:
                    missing.append(ident)
        assert missing == [], f"{len(missing)} of {len(settled)} writes acknowledged over 1 s before the kill were lost"
        status, _ = again.stop(signal.SIGTERM)
        assert status == 0
    finally:
        again.close()
    assert leftovers(path) == []


def test_sigkill_under_a_saturating_load_loses_no_write_older_than_the_bound() -> None:
    from emulator.state.gate import BOUND_SECONDS
    from tests.support.durability import run

    # four keep-alive clients charging as fast as payemu answers: before the answers waited
    # for the file, it trailed by 10 s and more after 20 s of this
    out = run(clients=4, seconds=8)
    assert len(out.acked) > 200, "the load did not get going"
    late = out.lost_beyond(BOUND_SECONDS)
    assert late == [], out.report(BOUND_SECONDS)


def test_sigterm_loses_nothing_and_leaves_no_temporary_file(tmp_path: Path) -> None:
    path = tmp_path / "state.sqlite"
    server = PayemuProcess("serve", "--state", str(path))
    try:
        with httpx.Client(base_url=server.url, headers=SANDBOX) as client:
            tokens = [client.post("/StringTokens", json={"payload": f"p{n}"}).json()["token"] for n in range(30)]
            client.post("/_emulator/settings", json={"strict": True})
        assert (tmp_path / "state.sqlite-wal").exists()  # written ahead while serving
        status, output = server.stop(signal.SIGTERM)  # at once: the last writes are not saved yet
    finally:
        server.close()
    assert status == 0, output
    assert "Traceback" not in output
    assert leftovers(path) == []
    (tenant,) = [t for t in read(path, Settings()) if t.key == "sandbox-api-key"]
    assert sorted(tenant.vault) == sorted(tokens)
    assert tenant.overrides.strict is True


def test_sigterm_with_clients_that_never_finish_still_saves_everything(tmp_path: Path) -> None:
    path = tmp_path / "state.sqlite"
    server = PayemuProcess("serve", "--state", str(path), "--shutdown-timeout", "1")
    slow = []
    try:
        with httpx.Client(base_url=server.url, headers=SANDBOX) as client:
            tokens = [client.post("/StringTokens", json={"payload": f"p{n}"}).json()["token"] for n in range(20)]
        for _ in range(5):  # half a request each, never finished
            sock = socket.create_connection(("127.0.0.1", server.port))
            sock.sendall(b"POST /StringTokens HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 100\r\n\r\n{")
            slow.append(sock)
        status, output = server.stop(signal.SIGTERM)
    finally:
        server.close()
        for sock in slow:
            sock.close()
    assert status == 0, output
    assert leftovers(path) == []
    (tenant,) = [t for t in read(path, Settings()) if t.key == "sandbox-api-key"]
    assert sorted(tenant.vault) == sorted(tokens)


def test_a_failing_save_is_logged_and_the_exit_status_is_1(tmp_path: Path) -> None:
    path = tmp_path / "state.sqlite"
    server = PayemuProcess("serve", "--state", str(path))
    try:
        with sqlite3.connect(path, timeout=5) as db:  # the file's writer lock, held by another process
            db.execute("BEGIN EXCLUSIVE")
            httpx.post(server.url + "/StringTokens", json={"payload": "p"}, headers=SANDBOX)
            time.sleep(0.5)
            status, output = server.stop(signal.SIGTERM)
            db.rollback()
    finally:
        server.close()
    assert status == 1, output
    assert f"could not save the state to {path}: database is locked" in output
    assert f"the state in {path} is not complete" in output


def _saver(registry: TenantRegistry, path: Path) -> Saver:
    return Saver(registry, Writer(path))


def _app_and_saver(make_app: Callable[..., Starlette], tmp_path: Path) -> tuple[Starlette, TenantRegistry, Saver]:
    app = make_app()
    registry = app.state.runtime.tenants
    return app, registry, _saver(registry, tmp_path / "state.sqlite")


def _rows(saver: Saver) -> list[tuple[str, list[Any]]]:
    return [(sql.split()[0], list(rows)) for sql, rows in asyncio.run(saver.collect())]


def test_a_save_writes_only_what_changed(make_app: Callable[..., Starlette], tmp_path: Path) -> None:
    app, registry, saver = _app_and_saver(make_app, tmp_path)
    with TestClient(app, headers=SANDBOX) as client:
        client.put("/PaymentGatewayAccounts/demo", json=ACCOUNT)
        body = {"amount": 5.0, "currency": "USD", "card": CARD, "paymentGatewayAccountName": "demo"}
        charge = client.post("/PaymentGateway/authorize", json=body).json()
        first = asyncio.run(saver.collect())
        assert any("INTO records" in sql and len(rows) == 1 for sql, rows in first)
        assert asyncio.run(saver.collect()) == []  # nothing changed
        client.put("/PaymentGateway/capture", json={**body, "refTransId": charge["gatewayReference"]})
        again = asyncio.run(saver.collect())
    records = [rows for sql, rows in again if "INTO records" in sql]
    assert len(records) == 1
    written = sorted(row[2] for row in records[0])
    capture = [ref for ref in registry.get("sandbox-api-key").ledger if ref != charge["gatewayReference"]]
    assert written == sorted([charge["gatewayReference"], *capture])  # the capture, and its authorization
    assert saver.longest_step > 0


def test_a_removed_tenant_is_deleted_from_the_file(make_app: Callable[..., Starlette], tmp_path: Path) -> None:
    _app, registry, saver = _app_and_saver(make_app, tmp_path)
    made = registry.create()
    asyncio.run(saver.collect())
    registry.remove(made.key)
    deletes = [rows for sql, rows in asyncio.run(saver.collect()) if sql.startswith("DELETE")]
    assert deletes and all(rows == [(made.key,)] for rows in deletes)


def _charges(client: TestClient, count: int) -> list[str]:
    body = {"amount": 5.0, "currency": "USD", "card": CARD, "paymentGatewayAccountName": "demo"}
    return [client.post("/PaymentGateway/charge", json=body).json()["gatewayReference"] for _ in range(count)]


def test_a_save_looks_only_at_the_transactions_that_changed(
    make_app: Callable[..., Starlette], tmp_path: Path, monkeypatch: Any
) -> None:
    """A tenant holding many transactions: after the first save, the next compares only
    what the ledger noted (a new charge, the ones dropped), not every transaction held."""
    app, registry, saver = _app_and_saver(make_app, tmp_path)
    compared: list[str] = []
    printed = encode.transaction_print
    monkeypatch.setattr(encode, "transaction_print", lambda tx: compared.append(tx.reference) or printed(tx))
    with TestClient(app, headers=SANDBOX) as client:
        client.put("/PaymentGatewayAccounts/demo", json=ACCOUNT)
        held = _charges(client, 150)
        asyncio.run(saver.collect())
        assert sorted(compared) == sorted(held)  # the first save compares them all
        compared.clear()
        (newest,) = _charges(client, 1)
        ledger = registry.get("sandbox-api-key").ledger
        ledger.shed(1)  # the oldest finished transaction goes
        rows = _rows(saver)
    assert compared == [newest]  # not the 149 others
    assert ("DELETE", [("sandbox-api-key", "transaction", held[0])]) in rows
    upserts = [row for verb, batch in rows if verb == "INSERT" for row in batch if row[1] == "transaction"]
    assert [row[2] for row in upserts] == [newest]


def _stretches(saver: Saver, monkeypatch: Any, *watched: tuple[Any, str]) -> list[int]:
    """Steps of no length, and how many calls of the ``watched`` functions (an object and
    a name) each stretch of a save between two hand-backs of the loop made."""
    monkeypatch.setattr(saver_module, "STEP_SECONDS", -1.0)
    stretches = [0]
    step = saver._pause

    async def pause() -> None:
        stretches.append(0)
        await step()

    def counting(called: Callable[..., Any]) -> Callable[..., Any]:
        def counted(*args: Any, **named: Any) -> Any:
            stretches[-1] += 1
            return called(*args, **named)

        return counted

    monkeypatch.setattr(saver, "_pause", pause)
    for target, name in watched:
        monkeypatch.setattr(target, name, counting(getattr(target, name)))
    return stretches


def test_a_save_hands_the_loop_back_between_any_two_transactions_it_looks_at(
    make_app: Callable[..., Starlette], tmp_path: Path, monkeypatch: Any
) -> None:
    """No stretch of a save asks about more than one transaction. (Which of thousands of
    changed transactions were still to settle was asked in one go, after the last
    hand-back: 4-7 ms on the loop under the scale benchmark's load.)"""
    app, registry, saver = _app_and_saver(make_app, tmp_path)
    with TestClient(app, headers=SANDBOX) as client:
        client.put("/PaymentGatewayAccounts/demo", json=ACCOUNT)
        _charges(client, 40)
        asyncio.run(saver.collect())
        stretches = _stretches(saver, monkeypatch, (Ledger, "settles"))
        newer = _charges(client, 60)
        registry.get("sandbox-api-key").ledger.shed(5)
        rows = _rows(saver)
    upserts = [row[2] for verb, batch in rows if verb == "INSERT" for row in batch if row[1] == "transaction"]
    assert upserts == newer
    assert sum(stretches) >= 60 and max(stretches) == 1, stretches


def test_seeding_times_its_steps_from_its_own_start(make_app: Callable[..., Starlette], tmp_path: Path) -> None:
    """Noting what a file held is timed in steps like a save. (It paused before any step
    had started, and the longest step it noted was the time since the machine booted.)"""
    app, registry, saver = _app_and_saver(make_app, tmp_path)
    with TestClient(app, headers=SANDBOX) as client:
        client.put("/PaymentGatewayAccounts/demo", json=ACCOUNT)
        _charges(client, 20)
    asyncio.run(saver.seed(list(registry)))
    assert 0 < saver.longest_step < 1.0
    assert _rows(saver) == []  # noted as written


def test_a_save_renders_journal_entries_in_a_step_of_their_own(
    make_app: Callable[..., Starlette], tmp_path: Path, monkeypatch: Any
) -> None:
    """The journal's entries do not share a step with what the save did before them
    (here, the tenant's own document): each batch starts once the step before is over."""
    app, _registry, saver = _app_and_saver(make_app, tmp_path)
    with TestClient(app, headers=SANDBOX) as client:
        client.put("/PaymentGatewayAccounts/demo", json=ACCOUNT)
        asyncio.run(saver.collect())
        stretches = _stretches(saver, monkeypatch, (encode, "tenant"), (Journal, "entries_after"))
        for _ in range(3):
            assert client.get("/PaymentGatewayAccounts/demo").status_code == 200
        written = _journal_ids(asyncio.run(saver.collect()))
    assert len(written) == 3
    assert sum(stretches) >= 3 and max(stretches) == 1, stretches


def test_a_save_hands_the_loop_back_between_any_two_tenants(
    make_app: Callable[..., Starlette], tmp_path: Path, monkeypatch: Any
) -> None:
    """A thousand tenants that did not change cost a few ms to look at: one per stretch."""
    _app, registry, saver = _app_and_saver(make_app, tmp_path)
    made = [registry.create() for _ in range(30)]
    asyncio.run(saver.collect())
    stretches = _stretches(saver, monkeypatch, (saver_module, "signature"))
    token = vault.store(made[7], "a payload")
    made[7].last_used = time.monotonic()
    written = [row[:3] for sql, batch in asyncio.run(saver.collect()) if sql == schema.UPSERT_RECORD for row in batch]
    assert written == [(made[7].key, schema.STRING_TOKEN, token.token)]
    assert sum(stretches) >= 30 and max(stretches) == 1, stretches


def test_a_store_that_notes_nothing_is_compared_whole_and_what_went_is_deleted(
    make_app: Callable[..., Starlette], tmp_path: Path
) -> None:
    """Gateway tokens are compared in full at every save: a token forgotten since the last
    save is deleted from the file, and the others are not written again."""
    _app, registry, saver = _app_and_saver(make_app, tmp_path)
    ledger = registry.get("sandbox-api-key").ledger
    made = datetime(2026, 1, 1, tzinfo=UTC)
    for number in range(3):
        ledger.remember_token(GatewayToken(f"gw-{number}", "NULLSuccess", "demo", "4111111111111111", made))
    first = [row[2] for verb, batch in _rows(saver) if verb == "INSERT" for row in batch if len(row) == 4]
    assert first == ["gw-0", "gw-1", "gw-2"]
    assert ledger.forget_oldest_token()
    registry.get("sandbox-api-key").last_used = time.monotonic()
    assert _rows(saver) == [("DELETE", [("sandbox-api-key", schema.GATEWAY_TOKEN, "gw-0")])]


def test_a_settlement_is_saved_though_no_operation_noted_it(make_app: Callable[..., Starlette], tmp_path: Path) -> None:
    app, registry, saver = _app_and_saver(make_app, tmp_path)
    with TestClient(app, headers=SANDBOX) as client:
        client.put("/PaymentGatewayAccounts/demo", json=ACCOUNT)
        (reference,) = _charges(client, 1)
    owner = registry.get("sandbox-api-key")
    tx = owner.ledger.find(reference)  # the ledger's own (a read gives a copy)
    assert tx is not None
    tx.result_code, tx.settles_to, tx.settle_at = ResultCode.ACCEPTED, "Success", owner.now() + timedelta(days=1)
    asyncio.run(saver.collect())  # written as pending
    assert _rows(saver) == []
    tx.settle_at = owner.now() - timedelta(seconds=1)
    assert tx.state(owner.now()) == "Charged"  # settled when read, which the ledger does not see
    owner.last_used = time.monotonic()  # (a request read it)
    written = [row for verb, batch in _rows(saver) if verb == "INSERT" for row in batch if row[1] == "transaction"]
    assert [row[2] for row in written] == [reference]
    assert '"resultCode":"Success"' in written[0][3].replace(" ", "")
    assert _rows(saver) == []


def test_a_save_looks_only_at_the_string_tokens_that_changed(
    make_app: Callable[..., Starlette], tmp_path: Path, monkeypatch: Any
) -> None:
    app, _registry, saver = _app_and_saver(make_app, tmp_path)
    encoded: list[str] = []
    encoder = encode.string_token
    monkeypatch.setattr(encode, "string_token", lambda entry: encoded.append(entry.token) or encoder(entry))
    with TestClient(app, headers=SANDBOX) as client:
        held = [client.post("/StringTokens", json={"payload": f"p{n}"}).json()["token"] for n in range(100)]
        asyncio.run(saver.collect())
        assert sorted(encoded) == sorted(held)
        encoded.clear()
        newest = client.post("/StringTokens", json={"payload": "new"}).json()["token"]
        assert client.delete(f"/StringTokens/{held[5]}").status_code in (200, 204)
        rows = _rows(saver)
    assert encoded == [newest]  # not the 99 others
    assert ("DELETE", [("sandbox-api-key", schema.STRING_TOKEN, held[5])]) in rows
    assert _rows(saver) == []


def test_what_a_save_writes_reads_back_in_the_stores_order(make_app: Callable[..., Starlette], tmp_path: Path) -> None:
    """The file keeps the ledger's and the vault's order (oldest first), also for records a
    save wrote because their store noted them."""
    app, registry, saver = _app_and_saver(make_app, tmp_path)
    path = saver.writer.path
    with TestClient(app, headers=SANDBOX) as client:
        client.put("/PaymentGatewayAccounts/demo", json=ACCOUNT)
        _charges(client, 3)
        client.post("/StringTokens", json={"payload": "first"})
        asyncio.run(saver.save())  # the first save compares everything
        _charges(client, 12)  # noted: written in the order noted
        for n in range(12):
            client.post("/StringTokens", json={"payload": f"later {n}"})
        asyncio.run(saver.save())
    try:
        held = registry.get("sandbox-api-key")
        (back,) = [t for t in read(path, Settings()) if t.key == "sandbox-api-key"]
        assert list(back.ledger) == list(held.ledger) and len(held.ledger) == 15
        assert list(back.vault) == list(held.vault) and len(held.vault) == 13
    finally:
        saver.writer.close().result()


def _journal_ids(statements: list[tuple[str, list[Any]]]) -> list[int]:
    return [row[1] for sql, rows in statements if sql == schema.UPSERT_ENTRY for row in rows]


def test_a_save_ends_while_requests_keep_adding_journal_entries(
    make_app: Callable[..., Starlette], tmp_path: Path
) -> None:
    """A load that records journal entries faster than a save renders them (a step takes
    8): the save writes the entries held when it came to the journal and ends, and the
    next save takes the rest. (It chased the newest entry, and never ended while such a
    load lasted: the file trailed by the whole of it.)"""
    app, registry, saver = _app_and_saver(make_app, tmp_path)
    with TestClient(app, headers=SANDBOX) as client:
        client.put("/PaymentGatewayAccounts/demo", json=ACCOUNT)
        _charges(client, 40)
        pauses = 0
        step = saver._pause

        async def busy() -> None:  # requests are served while a save hands the loop back
            nonlocal pauses
            pauses += 1
            if pauses <= 300:  # bounded, so that a save chasing the newest entry ends too
                _charges(client, 10)
            await step()

        saver._pause = busy  # type: ignore[method-assign]
        first = _journal_ids(asyncio.run(saver.collect()))
        newest = registry.get("sandbox-api-key").journal.newest_id()
        saver._pause = step  # type: ignore[method-assign]
        second = _journal_ids(asyncio.run(saver.collect()))
    assert pauses < 60, pauses
    assert first == list(range(first[0], first[-1] + 1))
    assert first[-1] < newest  # what came while it ran is the next save's
    assert second == list(range(first[-1] + 1, newest + 1))
