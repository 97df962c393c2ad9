"""emulator.stores.admission, with --any-key: who may turn a new key into a tenant, and
which run-time tenant makes room for a new one at the limit."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest
from starlette.applications import Starlette
from starlette.testclient import TestClient

from emulator.domain.config import Limits
from emulator.tenants.tenants import Tenant
from tests.support.bodies import CARD

ADMIN = "admin-secret-1"
ACCOUNT = {"paymentGatewayName": "Stripe", "credentials": [{"key": "SecretKey", "value": "sk_test_x"}]}


def _tenants(app: Starlette) -> dict[str, Tenant]:
    return {tenant.key: tenant for tenant in app.state.runtime.tenants}


# -- the any-key lockout ---------------------------------------------------------------------
def test_1000_warm_keys_do_not_lock_a_new_ci_job_out(make_app: Callable[..., Starlette]) -> None:
    """Exposed (--host 0.0.0.0) with --any-key and an admin key: a stranger's new keys make
    no tenant, so they cannot fill the tenant limit; a CI job carrying the admin key gets in."""
    app = make_app(host="0.0.0.0", any_key=True, admin_key=ADMIN, limits=Limits(tenants=1000))
    before = set(_tenants(app))
    with TestClient(app) as client:
        for n in range(1000):
            refused = client.get("/Utils/apiKey", headers={"X-Api-Key": f"warm-{n}"})
            assert refused.status_code == 401, refused.text
        assert "--any-key-needs-admin" in refused.json()[0]["errors"][0]
        assert set(_tenants(app)) == before  # not one tenant made
        job = {"X-Api-Key": "ci-job-42"}
        wrong = client.get("/Utils/apiKey", headers={**job, "X-Admin-Key": "not-the-key"})
        assert wrong.status_code == 401
        first = client.get("/Utils/apiKey", headers={**job, "X-Admin-Key": ADMIN})
        assert first.status_code == 200, first.text
        assert client.get("/Utils/apiKey", headers=job).status_code == 200  # then the key alone
        assert client.post("/StringTokens", json={"payload": "kept"}, headers=job).status_code == 201
    assert set(_tenants(app)) == before | {"ci-job-42"}


@pytest.mark.parametrize(
    ("host", "needs_admin", "opens"),
    [
        ("127.0.0.1", None, True),  # loopback: --any-key stays open, as before
        ("localhost", None, True),
        ("::1", None, True),
        ("0.0.0.0", None, False),  # beyond loopback: the admin key is needed
        ("192.168.1.20", None, False),
        ("0.0.0.0", False, True),  # --no-any-key-needs-admin
        ("127.0.0.1", True, False),  # --any-key-needs-admin
    ],
)
def test_who_may_make_a_tenant_with_any_key(
    make_app: Callable[..., Starlette], host: str, needs_admin: bool | None, opens: bool
) -> None:
    app = make_app(host=host, any_key=True, admin_key=ADMIN, any_key_needs_admin=needs_admin)
    with TestClient(app) as client:
        answer = client.get("/Utils/apiKey", headers={"X-Api-Key": "fresh-key"})
    assert answer.status_code == (200 if opens else 401), answer.text
    assert ("fresh-key" in _tenants(app)) is opens


# -- eviction order --------------------------------------------------------------------------
def _authorize(client: TestClient, key: str) -> Any:
    headers = {"X-Api-Key": key}
    assert client.put("/PaymentGatewayAccounts/acct1", json=ACCOUNT, headers=headers).status_code == 200
    body = {"amount": 10.0, "currency": "USD", "card": CARD, "paymentGatewayAccountName": "acct1"}
    answer = client.post("/PaymentGateway/authorize", json=body, headers=headers)
    assert answer.status_code == 200, answer.text
    return answer.json()


def test_idle_tenants_make_room_those_with_open_authorizations_last_active_ones_never(
    make_app: Callable[..., Starlette],
) -> None:
    app = make_app(limits=Limits(tenants=3, tenant_idle_seconds=300))
    with TestClient(app) as client:
        made = [client.post("/_emulator/tenants", json={}).json()["apiKey"] for _ in range(3)]
        holding, idle, active = made
        authorization = _authorize(client, holding)
        tenants = _tenants(app)
        long_ago = time.monotonic() - 10_000
        tenants[holding].last_used = long_ago  # idle longest, but holds an open authorization
        tenants[idle].last_used = long_ago + 10  # idle, nothing open
        fourth = client.post("/_emulator/tenants", json={}).json()["apiKey"]
        assert set(_tenants(app)) >= {holding, active, fourth} and idle not in _tenants(app)
        fifth = client.post("/_emulator/tenants", json={}).json()["apiKey"]  # only `holding` is idle
        assert holding not in _tenants(app) and fifth in _tenants(app)
        full = client.post("/_emulator/tenants", json={})  # every run-time tenant is active
        assert full.status_code == 507, full.text
        assert "none has been idle for 300 s" in full.json()[0]["errors"][0]
        assert {active, fourth, fifth} <= set(_tenants(app))
        assert {"sandbox-api-key", "live-api-key"} <= set(_tenants(app))  # declared: never removed
    assert authorization["operationResultCode"] == "Success"


def test_a_captured_authorization_is_not_open(make_app: Callable[..., Starlette]) -> None:
    from emulator.stores.admission import holds_open_authorizations

    app = make_app()
    with TestClient(app) as client:
        key = client.post("/_emulator/tenants", json={}).json()["apiKey"]
        authorization = _authorize(client, key)
        tenant = _tenants(app)[key]
        assert holds_open_authorizations(tenant)
        capture = {
            "refTransId": authorization["gatewayReference"],
            "amount": 10.0,
            "currency": "USD",
            "card": CARD,
            "paymentGatewayAccountName": "acct1",
        }
        captured = client.put("/PaymentGateway/capture", json=capture, headers={"X-Api-Key": key})
        assert captured.status_code == 200, captured.text
        assert not holds_open_authorizations(tenant)


def test_the_banner_says_whether_new_keys_need_the_admin_key() -> None:
    from emulator.cli.banner import _any_key_note
    from emulator.domain.config import Settings

    assert _any_key_note(Settings(any_key=True)) == " (+ any key: --any-key)"
    assert "with X-Admin-Key" in _any_key_note(Settings(any_key=True, host="0.0.0.0"))
    assert _any_key_note(Settings(host="0.0.0.0")) == ""
