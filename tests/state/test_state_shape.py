"""A state file holds payemu's schema and nothing else (emulator.state.schema_check): a trigger,
a view, an index or a column payemu does not make is refused at start with one line
naming it and exit status 2, the file left byte for byte; a save that does not land
(a trigger added while serving, a write that goes nowhere) stops the acknowledgements of
the tenants it was for with a 503 and a line in the log."""

from __future__ import annotations

import logging
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from starlette.applications import Starlette
from starlette.testclient import TestClient

from emulator.domain.config import Settings
from emulator.state import database
from emulator.state import schema_check as shape
from emulator.state.database import read
from emulator.state.errors import StateError
from emulator.tenants.tenants import Tenant
from tests.conftest import SANDBOX
from tests.support.bodies import CARD
from tests.support.servers import free_port, payemu
from tests.support.statefiles import journal_file

ACCOUNT = {"paymentGatewayName": "NULLSuccess", "credentials": []}
REFUSAL = (
    "payemu could not save this API key's state to its --state file (see payemu's log), so it acknowledges"
    " nothing more for it until restarted."
)
WIPE = "CREATE TRIGGER wipe AFTER INSERT ON records BEGIN DELETE FROM records WHERE rowid = new.rowid; END"


def _charge(client: TestClient) -> dict[str, object]:
    body = {"amount": 12.5, "currency": "USD", "card": CARD, "paymentGatewayAccountName": "demo"}
    answer = client.post("/PaymentGateway/charge", json=body)
    return {"status": answer.status_code, **answer.json()}


@pytest.fixture
def valid(make_app: Callable[..., Starlette], tmp_path: Path) -> Path:
    """A state file payemu wrote: an account, a string token and a charge."""
    path = tmp_path / "demo.sqlite"
    with TestClient(make_app(state_path=str(path)), headers=SANDBOX) as client:
        assert client.put("/PaymentGatewayAccounts/demo", json=ACCOUNT).status_code == 200
        assert client.post("/StringTokens", json={"payload": "kept"}).status_code == 201
        assert _charge(client)["status"] == 200
    return path


def _serve(path: Path) -> tuple[int, list[str]]:
    result = payemu("serve", "--port", str(free_port()), "--state", str(path))
    return result.returncode, result.stderr.splitlines()


def _altered(path: Path, sql: str) -> bytes:
    with sqlite3.connect(path) as db:
        db.execute(sql)
    db.close()
    return path.read_bytes()


HOSTILE = [
    (WIPE, "the trigger 'wipe' on 'records' is not part of payemu's schema"),
    ("CREATE VIEW every_doc AS SELECT doc FROM records", "the view 'every_doc' is not part of payemu's schema"),
    ("CREATE INDEX by_doc ON records (doc)", "the index 'by_doc' on 'records' is not part of payemu's schema"),
    (
        "ALTER TABLE records ADD COLUMN note TEXT",
        "the table 'records' is not as payemu makes it (columns tenant, kind, id, doc, note where payemu makes"
        " tenant, kind, id, doc)",
    ),
    ("CREATE TABLE notes (text TEXT)", "the table 'notes' is not part of payemu's schema"),
]


@pytest.mark.parametrize(("sql", "said"), HOSTILE, ids=["trigger", "view", "index", "column", "table"])
def test_an_object_payemu_does_not_make_is_refused_and_the_file_left_as_it_was(
    valid: Path, sql: str, said: str
) -> None:
    before = _altered(valid, sql)
    assert _serve(valid) == (2, [f"payemu: {valid}: refused, {said}"])
    assert valid.read_bytes() == before


def test_a_missing_table_is_refused(valid: Path) -> None:
    _altered(valid, "DROP TABLE journal")
    with pytest.raises(StateError, match=r"refused, the table 'journal' of payemu's schema is missing$"):
        read(valid, Settings())


def test_a_damaged_page_is_refused(valid: Path) -> None:
    data = bytearray(valid.read_bytes())
    size = int.from_bytes(data[16:18], "big") or 65536
    data[size : size + 8] = b"\xff" * 8  # the header of page 2, a table's b-tree page
    valid.write_bytes(bytes(data))
    with pytest.raises(StateError, match=r"demo\.sqlite: (refused, SQLite finds it damaged|not a payemu state file)"):
        read(valid, Settings())


def test_a_damaged_table_page_is_found_by_sqlites_check(tmp_path: Path) -> None:
    """Pages no query at start reads (a journal's leaf) are checked too."""
    path = tmp_path / "state.sqlite"
    journal_file(path, 3, 50)
    data = bytearray(path.read_bytes())
    size = int.from_bytes(data[16:18], "big")
    leaf = max(at for at in range(size, len(data), size) if data[at] == 0x0A)  # an index b-tree leaf
    cells = int.from_bytes(data[leaf + 3 : leaf + 5], "big")
    data[leaf + 8 : leaf + 8 + 2 * cells] = b"\x3f\xff" * cells  # every cell pointer out of the page
    path.write_bytes(bytes(data))
    with pytest.raises(StateError, match=r"state\.sqlite: refused, SQLite finds it damaged \((?!\*)"):
        read(path, Settings())


def test_the_file_is_read_with_what_sqlite_offers_for_untrusted_files(valid: Path) -> None:
    with shape.open_read_only(valid) as db:
        assert db.execute("PRAGMA trusted_schema").fetchone() == (0,)
        assert db.execute("PRAGMA cell_size_check").fetchone() == (1,)
        with pytest.raises(sqlite3.OperationalError):
            db.execute("DELETE FROM records")
    db.close()


def _until_refused(owner: Tenant) -> None:
    deadline = time.monotonic() + 10
    while owner.unsaved is None and time.monotonic() < deadline:
        time.sleep(0.02)


def test_a_trigger_added_while_serving_stops_the_acknowledgements(
    make_app: Callable[..., Starlette], valid: Path, caplog: pytest.LogCaptureFixture
) -> None:
    app = make_app(state_path=str(valid))
    with caplog.at_level(logging.ERROR, logger="payemu"), TestClient(app, headers=SANDBOX) as client:
        owner = app.state.runtime.tenants.get("sandbox-api-key")
        _altered(valid, WIPE)  # by another program, once payemu had read the file
        assert _charge(client)["status"] == 200  # acknowledged: the save that writes it finds the trigger
        _until_refused(owner)
        refused = client.post("/StringTokens", json={"payload": "after"})
        assert refused.status_code == 503, refused.text
        assert refused.json() == [{"fieldName": None, "errors": [REFUSAL]}]
    said = [r.getMessage() for r in caplog.records if "did not land" in r.getMessage()]
    assert said == [
        f"a save to {valid} did not land: {valid} was changed by another program: the trigger 'wipe' on 'records'"
        " is not part of payemu's schema; every API key now gets 503 until restarted"
    ]
    assert app.state.persistence.failed
    with sqlite3.connect(valid) as db:  # what was saved before is still there
        assert db.execute("SELECT count(*) FROM records WHERE kind = 'transaction'").fetchone() == (1,)
    db.close()


def test_a_write_that_goes_nowhere_is_noticed(
    make_app: Callable[..., Starlette], valid: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    real = database._check_landed

    def vanished(db: sqlite3.Connection, query: str, row: tuple[Any, ...]) -> None:
        if "records" in query:  # every record written goes nowhere
            db.execute("DELETE FROM records WHERE tenant = ? AND kind = ? AND id = ?", row[:3])
        real(db, query, row)

    app = make_app(state_path=str(valid))
    with caplog.at_level(logging.ERROR, logger="payemu"), TestClient(app, headers=SANDBOX) as client:
        owner = app.state.runtime.tenants.get("sandbox-api-key")
        other = client.post("/_emulator/tenants", json={"userName": "other"}).json()["apiKey"]
        monkeypatch.setattr(database, "_check_landed", vanished)
        assert client.post("/StringTokens", json={"payload": "lost"}).status_code == 201
        _until_refused(owner)
        refused = client.post("/StringTokens", json={"payload": "after"})
        assert refused.status_code == 503, refused.text
        theirs = client.put("/PaymentGatewayAccounts/theirs", json=ACCOUNT, headers={"X-Api-Key": other})
        assert theirs.status_code == 200  # another key's saves still land
        time.sleep(0.6)
    assert [r.getMessage() for r in caplog.records if "did not land" in r.getMessage()] == [
        f"a save to {valid} did not land: a row written was not in the file when read back; the API key of"
        f" shard {owner.shard} now gets 503 until restarted"
    ]
    with sqlite3.connect(valid) as db:
        docs = [doc for (doc,) in db.execute("SELECT doc FROM tenants")]
        assert db.execute("SELECT count(*) FROM records WHERE kind = 'stringToken'").fetchone() == (1,)
    db.close()
    assert any('"theirs"' in doc for doc in docs)
