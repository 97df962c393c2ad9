"""Sharding hooks in one process: the shard id, keys minted by a load balancer, and the
list of an instance's tenants (the two-instance run behind HAProxy is test_scaleout.py)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from starlette.applications import Starlette
from starlette.testclient import TestClient

from emulator.tenants.tenants import shard_of
from tests.conftest import SANDBOX, setup_ewallet_tenant

ADMIN = "admin-secret-1"
CHARGE = {
    "amount": 5,
    "currency": "USD",
    "paymentGatewayAccount": {"paymentGatewayName": "NULLSuccess", "credentials": []},
    "card": {"cardHolderName": "Ada", "cardNumber": "4111111111111111", "expirationMonth": 12, "expirationYear": 2031},
}

NEW_CARD = {
    "cardHolderName": "Jane Doe",
    "cardNumber": "5555555555554444",
    "expirationMonth": 7,
    "expirationYear": 2031,
    "cvv": "321",
}


@pytest.mark.parametrize(
    ("key", "shard"),
    [
        # computed once with `printf %s KEY | sha1sum | cut -c1-16`, the same as HAProxy's
        # req.hdr(X-Api-Key),sha1,bytes(0,8),hex,lower
        ("sandbox-api-key", "b115ceca7c1dd188"),
        ("a b&é", "cc304a3760f2a3f7"),
    ],
)
def test_shard_of_is_the_start_of_the_keys_sha1(key: str, shard: str) -> None:
    assert shard_of(key) == shard


@pytest.fixture
def guarded(make_app: Callable[..., Starlette]) -> Iterator[TestClient]:
    with TestClient(make_app(admin_key=ADMIN, any_key=True), headers={"X-Admin-Key": ADMIN}) as client:
        yield client


def test_a_minted_key_from_the_header(guarded: TestClient) -> None:
    created = guarded.post("/_emulator/tenants", headers={"X-Payemu-New-Key": "test-minted-1"})
    assert created.status_code == 201
    assert created.json()["apiKey"] == "test-minted-1"
    assert created.json()["shard"] == shard_of("test-minted-1")


def test_the_body_key_wins_over_the_header(guarded: TestClient) -> None:
    created = guarded.post("/_emulator/tenants", json={"apiKey": "chosen-9"}, headers={"X-Payemu-New-Key": "other"})
    assert created.json()["apiKey"] == "chosen-9"


def test_a_minted_key_that_is_taken_is_a_conflict(guarded: TestClient) -> None:
    taken = guarded.post("/_emulator/tenants", headers={"X-Payemu-New-Key": "sandbox-api-key"})
    assert taken.status_code == 409
    assert taken.json() == [{"fieldName": "X-Payemu-New-Key", "errors": ["This API key is already in use."]}]


@pytest.mark.parametrize("key", ["has space", "x" * 257])
def test_a_bad_minted_key_is_refused(guarded: TestClient, key: str) -> None:
    refused = guarded.post("/_emulator/tenants", headers={"X-Payemu-New-Key": key})
    assert refused.status_code == 400
    assert refused.json()[0]["fieldName"] == "X-Payemu-New-Key"


def test_the_list_counts_each_tenants_stores(guarded: TestClient) -> None:
    key = guarded.post("/_emulator/tenants", json={"apiKey": "counted"}).json()["apiKey"]
    headers = {"X-Api-Key": key}
    assert guarded.post("/PaymentGateway/charge", json=CHARGE, headers=headers).status_code == 200
    assert guarded.post("/StringTokens", json={"payload": "kept"}, headers=headers).status_code == 201
    listed = guarded.get("/_emulator/tenants")
    assert listed.status_code == 200
    (entry,) = [t for t in listed.json()["tenants"] if t["apiKey"] == key]
    assert entry == {
        "apiKey": key,
        "shard": shard_of(key),
        "accountId": entry["accountId"],
        "userName": entry["userName"],
        "isSandbox": True,
        "transactions": 1,
        "stringTokens": 1,
        "sessions": 0,
        "journal": 2,
    }


def test_listing_creates_no_tenant(guarded: TestClient) -> None:
    before = {t["apiKey"] for t in guarded.get("/_emulator/tenants").json()["tenants"]}
    after = {t["apiKey"] for t in guarded.get("/_emulator/tenants", headers=SANDBOX).json()["tenants"]}
    assert after == before


def test_the_list_needs_the_admin_key(guarded: TestClient) -> None:
    refused = guarded.get("/_emulator/tenants", headers={"X-Admin-Key": "wrong-key-1"})
    assert refused.status_code == 401
    assert refused.json()[0]["fieldName"] == "X-Admin-Key"


# -- a restarted instance: its tenants and the tokens it issued ---------------------------
def _paid_result_token(client: TestClient) -> str:
    tenant = client.app.state.runtime.tenants.get("sandbox-api-key")  # type: ignore[attr-defined]
    setup_ewallet_tenant(tenant)
    body = {
        "operation": "CHARGE",
        "mode": "TEST",
        "currencyCode": "USD",
        "amount": 9.5,
        "paymentGatewayAccountId": "backup",
    }
    session = client.post("/EWalletOperations", json=body).json()["token"]
    paid = client.post(f"/_emulator/pay/{session}", json={"card": NEW_CARD})
    assert paid.status_code == 200, paid.text
    return str(paid.json()["resultToken"])


def test_a_restarted_instance_accepts_its_earlier_result_tokens(
    make_app: Callable[..., Starlette], tmp_path: Path
) -> None:
    path = str(tmp_path / "state.sqlite")
    with TestClient(make_app(state_path=path), headers=SANDBOX) as first:
        token = _paid_result_token(first)
        before = first.post("/EWalletOperations/validateResults", json=token).json()
    with TestClient(make_app(state_path=path), headers=SANDBOX) as second:
        after = second.post("/EWalletOperations/validateResults", json=token)
    assert after.status_code == 200, after.text
    assert after.json() == before
