"""Shared fixtures: a fresh app per test, and a check that no response broke the schema;
the one factory of a bare tenant (:func:`bare_tenant`) and the tenant of a key in an app
(:func:`tenant_of`). A real server comes from :mod:`tests.support.servers`."""

from __future__ import annotations

import collections
import os
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import pytest
from starlette.applications import Starlette
from starlette.testclient import TestClient

from emulator.app.build import create_app
from emulator.cli.main import CARD_FORM_PORT_ENV
from emulator.contract.openapi import OpenApi
from emulator.domain.config import KeySpec, Limits, Settings
from emulator.domain.model import AttemptRecord, PaymentRequest
from emulator.engine import engine
from emulator.stores import vault
from emulator.stores.accounts import StoredAccount
from emulator.tenants.runtime import Runtime
from emulator.tenants.tenants import Tenant
from tests.support.tools import pytest_runtest_setup, pytest_terminal_summary  # noqa: F401  (hooks)

SANDBOX = {"X-Api-Key": "sandbox-api-key"}
LIVE = {"X-Api-Key": "live-api-key"}

# Every `payemu serve` the tests start leaves port 4200 alone: the eWallet card form is
# served there only for the real library's browser test (tests/ui/test_ewallet_library.py).
os.environ[CARD_FORM_PORT_ENV] = "off"


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """``-n auto``: a worker more than the cores. About a third of the suite's time is spent
    waiting (on ``payemu serve`` processes, a browser, sockets and timers), which a spare
    worker fills: on 2 cores, 3 workers finish the suite in about 0.93 of the time 2 take."""
    return (os.cpu_count() or 1) + 1


# The modules that take longest (each over 10 s, measured with --junitxml), run first so
# that no worker starts one while the others are finishing: the order only, never a result.
LONGEST_FIRST = (
    "tests/contract/test_fuzz.py",
    "tests/docs/test_first_contact_browser.py",
    "tests/catalog/test_gateway_cases_elsewhere.py",
    "tests/ui/test_dashboard_browser.py",
    "tests/state/test_state_saver.py",
    "tests/state/test_state_budgets.py",
    "tests/plugin/test_ci_example.py",
    "tests/system/test_packaging.py",
    "tests/system/test_load.py",
    "tests/ui/test_ewallet_library.py",
    "tests/endpoints/test_versions.py",
    "tests/contract/test_generated_clients.py",
    "tests/ui/test_ewallet_library_form.py",
    "tests/system/test_scaleout.py",
    "tests/ui/test_ewallet_browser.py",
    "tests/edge/test_heads.py",
    "tests/plugin/test_plugin_usage.py",
    "tests/proxy/test_proxy_verify.py",
    "tests/system/test_memory_probes.py",
    "tests/proxy/test_proxy_forward.py",
    "tests/docs/test_docs_examples.py",
    "tests/system/test_hardening.py",
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    seen = collections.Counter(item.nodeid for item in items)
    twice = sorted(nodeid for nodeid, count in seen.items() if count > 1)
    if twice:  # xdist hands tests out by node id: all but one of each would never run
        raise pytest.UsageError("tests share a node id, so only one of them would run: " + ", ".join(twice))
    rank = {name: index for index, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.nodeid.split("::", 1)[0], len(rank)))


@pytest.fixture(scope="session")
def openapi() -> OpenApi:
    return OpenApi.load()


@pytest.fixture
def make_app(openapi: OpenApi) -> Iterator[Callable[..., Starlette]]:
    """Build an app with Settings overrides; after the test, fail if any response the
    app sent broke the schema."""
    made: list[Starlette] = []

    def make(**overrides: Any) -> Starlette:
        custom = overrides.pop("openapi", None)
        app = create_app(Settings(**overrides), openapi=custom or openapi)
        made.append(app)
        return app

    yield make
    for app in made:
        violations = app.state.runtime.violations
        assert not violations, "responses broke the schema:\n" + "\n".join(violations)


@pytest.fixture
def app(make_app: Callable[..., Starlette]) -> Starlette:
    return make_app()


@pytest.fixture
def client(app: Starlette) -> Iterator[TestClient]:
    with TestClient(app, headers=SANDBOX) as test_client:
        yield test_client


@pytest.fixture
def anon(app: Starlette) -> Iterator[TestClient]:
    """A client without an API key."""
    with TestClient(app) as test_client:
        yield test_client


# -- eWallet: the sandbox tenant with two accounts and a stored card ---------------------
EWALLET_CARD = "4111111111111111"


def setup_ewallet_tenant(tenant: Tenant) -> str:
    """Accounts ``primary`` (NULLFailure: declines) and ``backup`` (NULLSuccess: approves);
    returns the vault token of a stored Visa card."""
    tenant.accounts.put(StoredAccount("primary", "NULLFailure", [], tenant.now()))
    tenant.accounts.put(StoredAccount("backup", "NULLSuccess", [], tenant.now()))
    return vault.store(tenant, EWALLET_CARD).token


@pytest.fixture
def runtime(app: Starlette) -> Runtime:
    return app.state.runtime  # type: ignore[no-any-return]


@pytest.fixture
def tenant(runtime: Runtime) -> Tenant:
    """The tenant of the sandbox key."""
    found = runtime.tenants.get("sandbox-api-key")
    assert found is not None
    return found


def tenant_of(app: Starlette, key: str = "sandbox-api-key") -> Tenant:
    """The tenant of ``key`` in ``app``."""
    found = app.state.runtime.tenants.get(key)
    assert found is not None
    return found  # type: ignore[no-any-return]


# -- without an app ------------------------------------------------------------------------
def bare_tenant(key: str = "k", seed: int | None = 3, certificates: Iterable[str] = (), **limits: Any) -> Tenant:
    """A tenant outside any app: a sandbox key with ``certificates``, default settings
    with ``limits`` (:class:`~emulator.domain.config.Limits` fields); ``seed`` seeds its random
    source and clock (None: the operating system's, and the real time)."""
    spec = KeySpec(key, "merchant", 1, True, tuple(certificates))
    return Tenant(spec, Settings(limits=Limits(**limits)), seed)


@pytest.fixture
def engine_calls(monkeypatch: pytest.MonkeyPatch) -> list[PaymentRequest]:
    """Every request the payment engine is given; the real engine answers them."""
    calls: list[PaymentRequest] = []
    real = engine.process

    async def spy(
        runtime: Runtime, tenant: Tenant, request: PaymentRequest, call_attempts: list[AttemptRecord]
    ) -> engine.OperationOutcome:
        calls.append(request)
        return await real(runtime, tenant, request, call_attempts)

    monkeypatch.setattr(engine, "process", spy)
    return calls
