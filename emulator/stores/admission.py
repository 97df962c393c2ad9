"""Which run-time tenant makes room for a new one at the tenant limit.

Only idle tenants (no request for ``limits.tenantIdleSeconds``) are removed, those holding
no open authorization first, each group least recently used first. When every one is
active, the new tenant is refused with a 507. Declared keys never count."""

from __future__ import annotations

import time
from collections.abc import Iterable
from datetime import datetime
from typing import TYPE_CHECKING, Protocol, TypeVar

if TYPE_CHECKING:  # types for the checker only (no class made at run time)
    from emulator.stores.ledger import Ledger

    class AdmissionHolder(Protocol):
        last_used: float
        ledger: Ledger

        def now(self) -> datetime: ...


Tenant = TypeVar("Tenant", bound="AdmissionHolder")


def holds_open_authorizations(tenant: AdmissionHolder) -> bool:
    """True when a transaction of ``tenant`` may still be captured, voided or settled."""
    return tenant.ledger.holds_open(tenant.now())


def room_maker(created: Iterable[Tenant], idle_seconds: float) -> Tenant | None:
    """The run-time tenant to remove for a new one, or None when all are active."""
    idle_before = time.monotonic() - idle_seconds
    idle = sorted((tenant for tenant in created if tenant.last_used <= idle_before), key=lambda t: t.last_used)
    holding: Tenant | None = None
    for tenant in idle:  # least recently used first
        if not holds_open_authorizations(tenant):
            return tenant
        if holding is None:
            holding = tenant
    return holding
