"""Which run-time tenant makes room for a new one, when the tenant limit is reached.

``limits.tenants`` bounds the tenants created at run time (``POST /_emulator/tenants``,
``--any-key``); keys declared in the config file never count and are never removed. At
the limit, a new tenant takes the place of an *idle* one — no request for
``limits.tenantIdleSeconds`` (300 s by default) — chosen in this order:

1. idle tenants holding no open authorization (nothing authorized and not yet captured,
   voided or expired, nothing pending or busy at a gateway), least recently used first;
2. then idle tenants that do hold open authorizations, least recently used first.

An active tenant (used within the idle time) is never removed to make room: when every
run-time tenant is active, the new one is refused with a ``507``. (On an exposed payemu,
``--any-key`` creates tenants only for requests carrying the admin key, so strangers
cannot fill the limit with warm keys: see :attr:`emulator.config.Settings.any_key_admin_required`.)
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from datetime import datetime
from typing import Protocol, TypeVar

from emulator.payments.ledger import Ledger


class Holder(Protocol):
    """What the order reads of a tenant (a Tenant is one)."""

    last_used: float
    ledger: Ledger

    def now(self) -> datetime: ...


Tenant = TypeVar("Tenant", bound=Holder)


def holds_open_authorizations(tenant: Holder) -> bool:
    """True when one of ``tenant``'s transactions may still be captured, voided or settled
    (authorized, pending, or busy at a gateway)."""
    return tenant.ledger.holds_open(tenant.now())


def room_maker(created: Iterable[Tenant], idle_seconds: float) -> Tenant | None:
    """The run-time tenant to remove for a new one (see the module doc), or None when
    every one of ``created`` is active."""
    idle_before = time.monotonic() - idle_seconds
    idle = sorted((tenant for tenant in created if tenant.last_used <= idle_before), key=lambda t: t.last_used)
    holding: Tenant | None = None
    for tenant in idle:  # least recently used first
        if not holds_open_authorizations(tenant):
            return tenant
        if holding is None:
            holding = tenant
    return holding
