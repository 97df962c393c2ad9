"""``--state FILE`` (emulator.state): a restart keeps accounts, tokens, transactions, the
journal, runtime tenants' accountIds and /_emulator/settings; a foreign or newer file is
refused; card data at rest is masked and CVVs are never written."""

from __future__ import annotations

import re
import sqlite3
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.applications import Starlette
from starlette.testclient import TestClient

from emulator import state
from emulator.domain.config import Settings
from emulator.domain.model import Money, OperationResult
from emulator.domain.vocabulary import Operation, ResultCode
from emulator.state.database import read
from emulator.state.errors import StateError
from emulator.stores import recording
from tests.conftest import SANDBOX
from tests.support.bodies import card
from tests.support.servers import free_port, payemu

CARD = card(expirationYear=2031, cvv="987")
ACCOUNT = {"paymentGatewayName": "NULLSuccess", "credentials": []}
PAYLOAD = '{"cardNumber": "5555555555554444", "cvv": "246", "expirationMonth": 1, "expirationYear": 2032}'


def first_run(make_app: Callable[..., Starlette], path: Path) -> dict[str, Any]:
    with TestClient(make_app(state_path=str(path)), headers=SANDBOX) as client:
        assert client.put("/PaymentGatewayAccounts/demo", json=ACCOUNT).status_code == 200
        token = client.post("/StringTokens", json={"payload": PAYLOAD}).json()["token"]
        charge = client.post(
            "/PaymentGateway/authorize",
            json={"amount": 120.0, "currency": "USD", "card": CARD, "paymentGatewayAccountName": "demo"},
        ).json()
        captured = client.put(
            "/PaymentGateway/capture",
            json={
                "refTransId": charge["gatewayReference"],
                "amount": 120.0,
                "currency": "USD",
                "card": CARD,
                "paymentGatewayAccountName": "demo",
            },
        )
        assert captured.status_code == 200, captured.text
        client.post("/_emulator/clock", json={"advance": "1d"})
        assert client.post("/_emulator/settings", json={"successStatus": "always-202"}).status_code == 200
        made = client.post("/_emulator/tenants", json={"userName": "ci-job-7"}).json()
        journal = client.get("/_emulator/requests").json()["requests"]
    return {"token": token, "reference": charge["gatewayReference"], "journal": journal, "tenant": made}


@pytest.fixture
def saved(make_app: Callable[..., Starlette], tmp_path: Path) -> tuple[Path, dict[str, Any]]:
    path = tmp_path / "demo.sqlite"
    return path, first_run(make_app, path)


@pytest.fixture
def second(make_app: Callable[..., Starlette], saved: tuple[Path, dict[str, Any]]) -> Iterator[TestClient]:
    """The second run, served (its lifespan and its saver running) while the test asks it."""
    with TestClient(make_app(state_path=str(saved[0])), headers=SANDBOX) as client:
        yield client


def test_account_survives(second: TestClient) -> None:
    assert second.get("/PaymentGatewayAccounts/demo").json()["paymentGatewayName"] == "NULLSuccess"


def test_string_token_survives_without_its_cvv(second: TestClient, saved: tuple[Path, dict[str, Any]]) -> None:
    held = second.get(f"/StringTokens/{saved[1]['token']}").json()["clearPayload"]
    assert "5555555555554444" in held
    assert "246" not in held


def test_transaction_survives_captured(second: TestClient, saved: tuple[Path, dict[str, Any]]) -> None:
    listed = second.get("/_emulator/transactions").json()["transactions"]
    (tx,) = [t for t in listed if t["reference"] == saved[1]["reference"]]
    assert tx["capturedAmount"] == 120.0


def test_journal_survives(second: TestClient, saved: tuple[Path, dict[str, Any]]) -> None:
    before = saved[1]["journal"]
    after = second.get("/_emulator/requests").json()["requests"]
    assert [e["id"] for e in after[: len(before)]] == [e["id"] for e in before]


def test_clock_offset_survives(second: TestClient) -> None:
    assert second.get("/_emulator/clock").json()["offset"] >= 86400


def test_settings_overrides_survive(second: TestClient) -> None:
    settings = second.get("/_emulator/settings").json()
    assert (settings["successStatus"], settings["overridden"]) == ("always-202", ["successStatus"])


def test_runtime_tenant_keeps_its_account_id(second: TestClient, saved: tuple[Path, dict[str, Any]]) -> None:
    made = saved[1]["tenant"]
    again = second.get("/Utils/apiKey", headers={"X-Api-Key": made["apiKey"]})
    assert again.status_code == 200, again.text
    assert (again.json()["accountId"], again.json()["userName"]) == (made["accountId"], "ci-job-7")
    newer = second.post("/_emulator/tenants", json={}).json()
    assert newer["accountId"] > made["accountId"]  # ids are not handed out twice


def test_no_card_number_or_cvv_at_rest(saved: tuple[Path, dict[str, Any]]) -> None:
    raw = saved[0].read_bytes()
    assert b"4111111111111111" not in raw
    # the CVV as a value ("987" bare also turns up by chance: a time's milliseconds, a
    # reference) and any field or column that could hold it ("cvv" inside a random
    # reference or token is chance too, so only the word on its own counts)
    assert b'"987"' not in raw
    assert re.search(rb"(?<![A-Za-z0-9])cvv(?![A-Za-z0-9])", raw, re.IGNORECASE) is None


def test_foreign_sqlite_file_is_refused(tmp_path: Path) -> None:
    other = tmp_path / "other.sqlite"
    with sqlite3.connect(other) as db:
        db.execute("CREATE TABLE notes (text TEXT)")
    with pytest.raises(StateError, match=r"other\.sqlite: not a payemu state file$"):
        read(other, Settings())


def test_newer_format_is_refused(saved: tuple[Path, dict[str, Any]]) -> None:
    with sqlite3.connect(saved[0]) as db:
        db.execute("UPDATE payemu_meta SET value = '99' WHERE name = 'version'")
    with pytest.raises(StateError, match="state format version 99 is not the version 2 this payemu reads"):
        read(saved[0], Settings())


def test_cli_refuses_a_file_that_is_not_sqlite_in_one_line(tmp_path: Path) -> None:
    text = tmp_path / "notes.txt"
    text.write_text("just some notes, long enough to not be an empty database\n" * 20)
    result = payemu("serve", "--port", str(free_port()), "--state", str(text))
    assert result.returncode == 2
    assert result.stderr.splitlines() == [f"payemu: {text}: not a payemu state file"]


def test_sessions_and_runtime_rules_survive(make_app: Callable[..., Starlette], tmp_path: Path) -> None:
    path = tmp_path / "state.sqlite"
    rule = (
        "name: decline-big\nwhen: {amount: {min: 1000}, gateway: NULLSuccess}\nthen: {operationResultCode: Rejected}\n"
    )
    session = {"operation": "CHARGE", "mode": "TEST", "currencyCode": "USD", "amount": 49.99}
    with TestClient(make_app(state_path=str(path)), headers=SANDBOX) as client:
        client.put("/PaymentGatewayAccounts/primary", json=ACCOUNT)
        token = client.post("/EWalletOperations", json={**session, "paymentGatewayAccountId": "primary"}).json()
        added = client.post("/_emulator/scenarios", content=rule, headers={"content-type": "application/yaml"})
        assert added.status_code == 201
    app = make_app(state_path=str(path))
    with TestClient(app, headers=SANDBOX) as client:
        found = app.state.runtime.session_index.find(token["token"])
        assert found is not None
        owner, held = found
        assert (owner.key, held.amount, held.currency) == ("sandbox-api-key", 49.99, "USD")
        rules = client.get("/_emulator/scenarios").json()["rules"]
        assert [r for r in rules if r["source"] == "runtime"] == [
            {
                "name": "decline-big",
                "when": {"amount": {"min": 1000.0}, "gateway": "NULLSuccess"},
                "then": {"operationResultCode": "Rejected"},
                "source": "runtime",
            }
        ]
        body = {"amount": 1500.0, "currency": "USD", "card": CARD, "paymentGatewayAccountName": "primary"}
        assert client.post("/PaymentGateway/charge", json=body).json()["operationResultCode"] == "Rejected"


def test_the_exit_anyway_timer_waits_for_the_last_save(make_app: Callable[..., Starlette], tmp_path: Path) -> None:
    app = make_app(state_path=str(tmp_path / "state.sqlite"))
    persistence = app.state.persistence
    with TestClient(app, headers=SANDBOX):
        assert state.wait_for_final_write(timeout=0.05) == 1  # running: the last save has not been made
        threading.Timer(0.2, persistence.done.set).start()
        assert state.wait_for_final_write(timeout=5) == 0  # waited for it
    assert state.wait_for_final_write(timeout=0.05) == 0  # nothing left to wait for


def test_a_restored_tenant_reads_what_it_records_on_its_own_clock(saved: tuple[Path, dict[str, Any]]) -> None:
    """The file's clock replaces the one a tenant is made with: its ledger, which reads its
    packed transactions on a clock, takes the restored one, also while it holds none (the
    tenant made at run time)."""
    tenants = {tenant.user_name: tenant for tenant in read(saved[0], Settings())}
    made = tenants["ci-job-7"]
    assert len(made.ledger) == 0
    result = OperationResult(
        Operation.CHARGE,
        ResultCode.SUCCESS,
        Money.of(5, "USD"),
        "ok",
        gateway_name="NULLSuccess",
        gateway_reference="r1",
    )
    recording.record(made, result, account=None, card_number=None, my_ref=None, authorization_days=7)
    assert made.ledger["r1"].clock is made.clock
    assert all(tenant.ledger.clock is tenant.clock for tenant in tenants.values())
