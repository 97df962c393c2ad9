"""Session storage: lookup across tenants, pruning, limits."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from starlette.applications import Starlette

from emulator.stores import ewallet_sessions as sessions
from emulator.tenants.tenants import Tenant
from tests.conftest import setup_ewallet_tenant as setup_tenant
from tests.conftest import tenant_of

BODY: dict[str, Any] = {
    "operation": "CHARGE",
    "mode": "TEST",
    "currencyCode": "USD",
    "amount": 3.0,
    "paymentGatewayAccountId": "primary",
}


def _tenant(app: Starlette, key: str) -> Tenant:
    tenant = tenant_of(app, key)
    setup_tenant(tenant)
    return tenant


def test_find_across_tenants(app: Starlette) -> None:
    sandbox, live = _tenant(app, "sandbox-api-key"), _tenant(app, "live-api-key")
    runtime = app.state.runtime
    first, second = sessions.create(sandbox, BODY, runtime), sessions.create(live, BODY, runtime)
    assert sessions.find(app.state.runtime, first.token) == (sandbox, first)
    assert sessions.find(app.state.runtime, second.token) == (live, second)
    assert sessions.find(app.state.runtime, "unknown") is None


def test_old_expired_sessions_are_pruned(app: Starlette) -> None:
    tenant = _tenant(app, "sandbox-api-key")
    old = sessions.create(tenant, BODY)
    tenant.clock.advance(sessions.SESSION_LIFETIME + sessions.KEEP_EXPIRED - timedelta(seconds=1))
    sessions.create(tenant, BODY)
    assert old.token in tenant.sessions  # expired, still kept for its results
    tenant.clock.advance(timedelta(seconds=1))
    newest = sessions.create(tenant, BODY)
    assert old.token not in tenant.sessions
    assert newest.token in tenant.sessions


def test_session_count_is_bounded(app: Starlette, monkeypatch: pytest.MonkeyPatch) -> None:
    tenant = _tenant(app, "sandbox-api-key")
    monkeypatch.setattr(tenant.sessions, "limit", 3)
    made = [sessions.create(tenant, BODY).token for _ in range(5)]
    assert list(tenant.sessions) == made[-3:]
    assert [s.token for s in sessions.iter_sessions(tenant)] == made[-3:][::-1]


def test_check_request_lists_every_problem(app: Starlette) -> None:
    tenant = _tenant(app, "sandbox-api-key")
    problems = sessions.check_request(
        tenant, {**BODY, "amount": 0, "paymentGatewayAccountId": None, "paymentGatewayCertName": "x"}
    )
    assert [name for name, _ in problems] == ["amount", "paymentGatewayAccountId", "paymentGatewayCertName"]
