"""The running emulator: settings, the loaded schema, the tenants and the subsystems."""

from __future__ import annotations

import time
import weakref
from collections.abc import Iterable, Mapping
from functools import cached_property
from typing import TYPE_CHECKING

from emulator.contract.openapi import OpenApi
from emulator.domain import errors
from emulator.domain.config import Settings
from emulator.scenarios import ScenarioBook
from emulator.stores.ewallet_sessions import SessionIndex
from emulator.tenants.tenants import OnFirstUse, Tenant, TenantRegistry

if TYPE_CHECKING:
    from emulator.catalog.catalog import Catalog
    from emulator.scenarios.watcher import Watcher
    from emulator.tenants.services import Compiler


class Runtime:
    """Shared by every request; handlers reach it as ``call.runtime``."""

    def __init__(self, settings: Settings, api: OpenApi) -> None:
        self.settings = settings
        self.api = api
        self.tenants = TenantRegistry(settings)
        self.scenarios: ScenarioBook = ScenarioBook.load(settings)
        self.violations: list[str] = []
        self.session_index: SessionIndex[Tenant] = SessionIndex()  # payment pages find their tenant in O(1) (hardening)
        self._preload(self.tenants)
        self.index_sessions()
        self.started = time.monotonic()
        self.control_api: OpenApi | None = None  # set when the control routes are built
        self.watcher: Watcher | None = None  # the scenario-file watcher of ``--watch``
        # the published document a tenant chose through /_emulator/interface (the endpoints
        # built for it are held by the document: OpenApi.endpoints, emulator.endpoints.versions)
        self.interfaces: weakref.WeakKeyDictionary[Tenant, OpenApi] = weakref.WeakKeyDictionary()
        # what each of those weighs, charged to its tenant's budget (emulator.endpoints.versions.choose)
        self.interface_weights: weakref.WeakKeyDictionary[Tenant, int] = weakref.WeakKeyDictionary()

    def _load_catalog(self) -> None:
        """The gateway catalog, its modules imported when first read (a key's status check,
        ``payemu serve``'s first answer, needs none); each gateway's file is read when that
        gateway is first asked for."""
        from emulator.catalog import loader as catalog_files

        self.catalog = catalog_files.on_demand()

    catalog: OnFirstUse[Catalog] = OnFirstUse(_load_catalog)

    @cached_property
    def currencies(self) -> Mapping[str, str]:
        """The schema's currency codes, each to itself: one string per code, shared by transactions."""
        schemas = self.api.document.get("components", {}).get("schemas", {})
        return {code: code for code in schemas.get("Payments.CurrencyCode", {}).get("enum", ())}

    @property
    def compiler(self) -> Compiler:
        """The schema compiler of the published document."""
        return self.api.compiler

    def reset_tenant(self, tenant: Tenant) -> None:
        """Empty ``tenant``; a configured key gets its demo state again."""
        tenant.reset()
        tenant.budget.charge(self.interface_weights.get(tenant, 0))  # the chosen interface stays
        self._preload([tenant])
        self.index_sessions(tenant)

    def _preload(self, tenants: Iterable[Tenant]) -> None:
        """Give ``tenants`` the config file's demo state (accounts, tokens, sessions) per key;
        the preloader is imported only when the config file has some."""
        if self.settings.preload:
            from emulator.tenants import preload

            for tenant in tenants:
                preload.apply_to(self, tenant)

    def index_sessions(self, tenant: Tenant | None = None) -> None:
        """Index the sessions that did not come through the API (preloaded or restored)."""
        for owner in [tenant] if tenant is not None else list(self.tenants):
            for token in owner.sessions:
                self.session_index.add(token, owner, self.tenants)

    def authenticate(self, key: str | None, headers: Mapping[bytes, bytes] | None = None) -> Tenant:
        """The tenant of ``key``, or a 401 (``headers``: for the admin key a new key may need)."""
        if not key:
            raise errors.unauthenticated("The X-Api-Key header is missing.")
        tenant = self.tenants.get(key)
        if tenant is None:
            settings = self.settings
            if settings.any_key and settings.any_key_admin_required:
                given = headers.get(b"x-admin-key") if headers is not None else None
                if (
                    given is not None
                    and settings.admin_key is not None
                    and settings.admits_admin(given.decode("latin-1"))
                ):
                    tenant = self.tenants.admit_key(key)
                if tenant is None:
                    raise errors.unauthenticated(
                        "The API key is not valid. On this payemu a new key becomes a tenant only with the "
                        "X-Admin-Key header (--any-key-needs-admin), or through POST /_emulator/tenants."
                    )
            else:
                raise errors.unauthenticated("The API key is not valid.")
        if tenant.unsaved is not None:
            raise errors.unavailable(
                "payemu could not save this API key's state to its --state file (see payemu's log), so it"
                " acknowledges nothing more for it until restarted."
            )
        return tenant
