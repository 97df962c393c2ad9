"""Shared fixtures: a fresh app per test, and a check that no response broke the schema."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from starlette.applications import Starlette
from starlette.testclient import TestClient

from emulator.app import create_app
from emulator.config import Settings
from emulator.openapi import OpenApi

SANDBOX = {"X-Api-Key": "sandbox-api-key"}
LIVE = {"X-Api-Key": "live-api-key"}


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
