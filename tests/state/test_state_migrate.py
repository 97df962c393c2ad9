"""``payemu state migrate OLD NEW`` (emulator.state.migrate): an old pickled state file is
converted without running anything it holds; a crafted one is refused, by ``serve`` and by
``migrate``, with one line and exit status 2, and its code never runs."""

from __future__ import annotations

import os
import pickle
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from starlette.applications import Starlette
from starlette.testclient import TestClient

from emulator.state.errors import StateError
from emulator.state.migrate import migrate, unpickle
from tests.conftest import SANDBOX
from tests.support.bodies import CARD
from tests.support.paths import REPO_ROOT as ROOT
from tests.support.servers import free_port, payemu

# Written by payemu before transactions had slots (its pickles hold each one's __dict__):
# an authorization of 120.00 USD, captured in full, then the clock advanced a day.
OLD_FILE = ROOT / "tests" / "data" / "state-before-slotted-transactions.sqlite"
OLD_REFERENCE = "NULL-APUEXBTKPRH870WOP57Y"


class Payload:
    """Unpickled, would create the marker file (``os.system`` naming it)."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[Any, ...]:
        return (os.system, (f"touch {self.marker}",))


def old_format_file(path: Path, stores: object) -> Path:
    """A state file as the old writer laid it out, its one tenant's blob pickling ``stores``."""
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE payemu_state (format TEXT NOT NULL, version INTEGER NOT NULL, payemu TEXT)")
        db.execute("INSERT INTO payemu_state VALUES ('payemu-state', 1, '0.1.0')")
        db.execute(
            "CREATE TABLE tenants (key TEXT PRIMARY KEY, user_name TEXT NOT NULL, account_id INTEGER NOT NULL,"
            " is_sandbox INTEGER NOT NULL, stores BLOB NOT NULL)"
        )
        blob = pickle.dumps(stores, protocol=pickle.HIGHEST_PROTOCOL)
        db.execute("INSERT INTO tenants VALUES ('sandbox-api-key', 'sandbox-merchant', 10001, 1, ?)", (blob,))
    db.close()
    return path


@pytest.fixture
def crafted(tmp_path: Path) -> tuple[Path, Path]:
    marker = tmp_path / "marker"
    return old_format_file(tmp_path / "evil.sqlite", {"clock": Payload(marker)}), marker


def test_serve_refuses_the_crafted_pickle_and_runs_nothing(crafted: tuple[Path, Path]) -> None:
    path, marker = crafted
    result = payemu("serve", "--port", str(free_port()), "--state", str(path))
    assert result.returncode == 2
    (line,) = result.stderr.splitlines()
    assert line.startswith(f"payemu: {path}: a state file of payemu's old pickle format")
    assert "payemu state migrate" in line
    assert not marker.exists()


def test_migrate_refuses_the_crafted_pickle_and_runs_nothing(crafted: tuple[Path, Path], tmp_path: Path) -> None:
    path, marker = crafted
    new = tmp_path / "new.sqlite"
    result = payemu("state", "migrate", str(path), str(new))
    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        f"payemu: {path}: refused, the state of key 'sandbox-api-key' cannot be migrated"
        " (posix.system is not something the old state format held)"
    ]
    assert not marker.exists()
    assert not new.exists()
    assert list(tmp_path.iterdir()) == [path]  # no temporary file either


@pytest.mark.parametrize(
    "stores",
    [
        {"clock": __import__("subprocess").Popen},  # a class to call
        {"clock": __import__("builtins").eval},
        {"vault": sqlite3.connect},
    ],
    ids=["Popen", "eval", "sqlite3.connect"],
)
def test_anything_but_the_old_writers_types_is_refused(stores: dict[str, Any], tmp_path: Path) -> None:
    path = old_format_file(tmp_path / "old.sqlite", stores)
    with pytest.raises(StateError, match="is not something the old state format held"):
        migrate(path, tmp_path / "new.sqlite")


def test_the_restricted_unpickler_refuses_a_global_by_name() -> None:
    blob = b"\x80\x04\x8c\x02os\x8c\x06system\x93."  # STACK_GLOBAL os.system, then STOP
    with pytest.raises(pickle.UnpicklingError, match=r"os\.system"):
        unpickle(blob)


def test_an_old_file_migrates_and_serves(make_app: Callable[..., Starlette], tmp_path: Path) -> None:
    new = tmp_path / "new.sqlite"
    result = payemu("state", "migrate", str(OLD_FILE), str(new))
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().endswith(f"2 tenant(s) migrated; serve with --state {new}")
    with TestClient(make_app(state_path=str(new)), headers=SANDBOX) as client:
        listed = client.get("/_emulator/transactions").json()["transactions"]
        (tx,) = [t for t in listed if t["reference"] == OLD_REFERENCE]
        assert (tx["operation"], tx["state"], tx["capturedAmount"]) == ("PreAuth", "Captured", 120.0)
        assert tx["cardMasked"].startswith("411111") and tx["cardMasked"].endswith("1111")
        again = client.put(
            "/PaymentGateway/capture",
            json={
                "refTransId": OLD_REFERENCE,
                "amount": 1.0,
                "currency": "USD",
                "card": CARD,
                "paymentGatewayAccountName": "demo",
            },
        )
        # the migrated account is NULLSuccess's (its references start NULL-), and the mock
        # approves whatever the details, a second capture included (mock-PSP page)
        assert again.json()["gatewayName"] == "NULLSuccess"
        assert again.status_code == 200
        assert again.json()["operationResultCode"] == "Success"
        listed = client.get("/_emulator/transactions").json()["transactions"]
        (tx,) = [t for t in listed if t["reference"] == OLD_REFERENCE]
        assert (tx["state"], tx["capturedAmount"]) == ("Captured", 120.0)  # the migrated transaction keeps its state
        assert client.get("/_emulator/clock").json()["offset"] >= 86400
        assert len(client.get("/_emulator/requests").json()["requests"]) >= 4
    assert [p.name for p in tmp_path.iterdir()] == ["new.sqlite"]


def test_migrate_will_not_overwrite(tmp_path: Path) -> None:
    new = tmp_path / "new.sqlite"
    new.write_bytes(b"mine")
    with pytest.raises(StateError, match="already exists"):
        migrate(OLD_FILE, new)
    assert new.read_bytes() == b"mine"


def test_a_new_format_file_is_not_migrated_again(tmp_path: Path) -> None:
    once = tmp_path / "once.sqlite"
    migrate(OLD_FILE, once)
    with pytest.raises(StateError, match="not a state file of the old format"):
        migrate(once, tmp_path / "twice.sqlite")
