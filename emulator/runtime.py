"""The running emulator: settings, the loaded schema, the tenants and the subsystems."""

from __future__ import annotations

from typing import Any

from emulator import errors
from emulator.config import Settings
from emulator.gateways.catalog import Catalog, load_catalog
from emulator.openapi import OpenApi
from emulator.scenarios import ScenarioBook
from emulator.tenants import Tenant, TenantRegistry


class Runtime:
    """Shared by every request; reached by handlers as ``call.runtime``."""

    def __init__(self, settings: Settings, api: OpenApi) -> None:
        self.settings = settings
        self.api = api
        self.tenants = TenantRegistry(settings)
        self.catalog: Catalog = load_catalog()
        self.scenarios: ScenarioBook = ScenarioBook.load(settings)
        self.violations: list[str] = []
        self.extras: dict[str, Any] = {}

    def authenticate(self, key: str | None) -> Tenant:
        """The tenant of ``key``, or a 401."""
        if not key:
            raise errors.unauthenticated("The X-Api-Key header is missing.")
        tenant = self.tenants.get(key)
        if tenant is None:
            raise errors.unauthenticated("The API key is not valid.")
        return tenant
