"""A state file whose documents are not what the format says is refused whole: ``payemu
serve`` prints one line and exits 2 before serving anything (emulator.state.decode)."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest
from starlette.applications import Starlette
from starlette.testclient import TestClient

from emulator.domain.config import Limits, Settings
from emulator.state.database import read
from emulator.state.errors import StateError
from tests.conftest import SANDBOX
from tests.support.bodies import CARD
from tests.support.servers import free_port, payemu


@pytest.fixture
def good(make_app: Callable[..., Starlette], tmp_path: Path) -> Path:
    """A state file payemu wrote: an account, a string token, an authorization and its capture."""
    path = tmp_path / "state.sqlite"
    with TestClient(make_app(state_path=str(path)), headers=SANDBOX) as client:
        client.put("/PaymentGatewayAccounts/demo", json={"paymentGatewayName": "NULLSuccess", "credentials": []})
        client.post("/StringTokens", json={"payload": "4111111111111111"})
        body = {"amount": 10.0, "currency": "USD", "card": CARD, "paymentGatewayAccountName": "demo"}
        charge = client.post("/PaymentGateway/authorize", json=body).json()
        client.put("/PaymentGateway/capture", json={**body, "refTransId": charge["gatewayReference"]})
    return path


def _edit(path: Path, kind: str, change: Callable[[dict[str, object]], None]) -> None:
    with sqlite3.connect(path) as db:
        rowid, text = db.execute("SELECT rowid, doc FROM records WHERE kind = ? ORDER BY rowid", (kind,)).fetchone()
        data = json.loads(text)
        change(data)
        db.execute("UPDATE records SET doc = ? WHERE rowid = ?", (json.dumps(data), rowid))


def wrong_type(path: Path) -> str:
    _edit(path, "transaction", lambda tx: tx.update(amount=10.0))
    return 'refused, a transaction document: amount: 10.0 is not of type "string"'


def wrong_tenant_type(path: Path) -> str:
    with sqlite3.connect(path) as db:
        (text,) = db.execute("SELECT doc FROM tenants WHERE key = 'sandbox-api-key'").fetchone()
        db.execute(
            "UPDATE tenants SET doc = ? WHERE key = 'sandbox-api-key'",
            (text.replace('"sandbox":true', '"sandbox":"yes"'),),
        )
    return 'refused, a tenant document: sandbox: "yes" is not of type "boolean"'


def bad_enum(path: Path) -> str:
    _edit(path, "transaction", lambda tx: tx.update(operation="Steal"))
    return "refused, 'Steal' is not a Operation"


def oversize_field(path: Path) -> str:
    _edit(path, "stringToken", lambda token: token.update(payload="4" * 20000))
    return "refused, a stringToken document: payload: "


def oversize_row(path: Path) -> str:
    with sqlite3.connect(path) as db:
        db.execute("UPDATE records SET doc = ? WHERE kind = 'stringToken'", ("[" + " " * (17 * 1024 * 1024) + "]",))
    return "refused, a stringToken document of 17825794 characters is over the 16777216 allowed"


def not_json(path: Path) -> str:
    with sqlite3.connect(path) as db:
        db.execute("UPDATE records SET doc = 'cos\nos\nsystem\n' WHERE kind = 'stringToken'")
    return "refused, a stringToken document is not JSON"


def orphan_record(path: Path) -> str:
    with sqlite3.connect(path) as db:
        db.execute("UPDATE records SET tenant = 'nobody' WHERE kind = 'stringToken'")
    return "refused, a record of 'nobody', a key the file has no tenant for"


def id_mismatch(path: Path) -> str:
    with sqlite3.connect(path) as db:
        db.execute("UPDATE records SET id = 'someone-else' WHERE kind = 'stringToken'")
    return "refused, a stringToken row whose id is not its document's"


def bad_reference(path: Path) -> str:
    with sqlite3.connect(path) as db:
        _capture, authorization = [
            ref for (ref,) in db.execute("SELECT id FROM records WHERE kind = 'transaction' ORDER BY rowid DESC")
        ]
    _edit(path, "transaction", lambda tx: tx.update(capturedBy=authorization))  # names itself
    return f"refused, transaction '{authorization}' names '{authorization}', not an operation on it"


KINDS = [
    wrong_type,
    wrong_tenant_type,
    bad_enum,
    oversize_field,
    oversize_row,
    not_json,
    orphan_record,
    id_mismatch,
    bad_reference,
]


@pytest.mark.parametrize("spoil", KINDS, ids=[kind.__name__ for kind in KINDS])
def test_refused_on_load(good: Path, spoil: Callable[[Path], str]) -> None:
    expected = spoil(good)
    with pytest.raises(StateError) as caught:
        read(good, Settings())
    message = str(caught.value)
    assert message.startswith(f"{good}: {expected}")
    assert "\n" not in message


@pytest.mark.parametrize("spoil", [wrong_type, orphan_record], ids=["wrong-type", "bad-reference"])
def test_serve_exits_2_with_one_line(good: Path, spoil: Callable[[Path], str]) -> None:
    expected = spoil(good)
    result = payemu("serve", "--port", str(free_port()), "--state", str(good))
    assert result.returncode == 2
    (line,) = result.stderr.splitlines()
    assert line.startswith(f"payemu: {good}: {expected}")
    assert "listening" not in result.stdout


def test_more_records_than_the_limits_allow(good: Path) -> None:
    with pytest.raises(StateError, match="more stringToken records for one key than the 0 allowed"):
        read(good, Settings(limits=Limits(tokens=0)))


def test_a_good_file_reads(good: Path) -> None:
    (tenant,) = [t for t in read(good, Settings()) if t.key == "sandbox-api-key"]
    assert (len(tenant.ledger), len(tenant.vault), list(tenant.accounts)) == (2, 1, ["demo"])
