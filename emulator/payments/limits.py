"""Bounded memory: how much payemu keeps, and what it does at each limit.

Everything payemu holds is in memory. Each store that a client can grow has a limit
(defaults below, config keys under ``limits:`` in the config file):

=====================  =====================  ===========================================
limit                  config key             at the limit
=====================  =====================  ===========================================
run-time tenants       ``tenants``            the idle one used least recently is removed
                                              (idle: no request for ``tenantIdleSeconds``);
                                              declared keys are never removed; none idle:
                                              507
string tokens          ``tokensPerTenant``    507 (tokens are the client's data)
token bytes            ``tokenBytesPerTenant`` 507
transactions           ``transactionsPerTenant`` the oldest finished transaction is dropped;
                                              none finished (all authorized, pending or
                                              busy): 507
journal bytes          ``journalBytesPerTenant`` the oldest entries are dropped
payment sessions       ``sessionsPerTenant``  the oldest session is dropped
=====================  =====================  ===========================================

A limit that cannot make room answers **507 Insufficient Storage** with payemu's JSON
error body (:func:`emulator.http.errors.limit_reached`). Where something is added to a store
(the tenant registry, ``vault.store``, ``ledger.record`` and ``remember_token``, stored
accounts and certificates) the hooks of this module (``admit_*``) decide, through the
stores' own methods (``Vault.bytes``, ``Ledger.evict_oldest_finished``, ...). Stores that
only ever forget their oldest entries bound themselves with the limit the tenant gives
them: ``Sessions.limit``, ``RuleSet.sequence_limit`` and the journal's byte budget.
"""

from __future__ import annotations

import time
from collections.abc import Collection
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any

from emulator.http import errors

if TYPE_CHECKING:
    from datetime import datetime

    from emulator.config import KeySpec
    from emulator.payments.tenants import Tenant, TenantRegistry
    from emulator.runtime import Runtime

MIB = 1024 * 1024


@dataclass
class Limits:
    tenants: int = 1000  # created at run time (POST /_emulator/tenants, --any-key)
    tenant_idle_seconds: float = 300.0
    tokens: int = 10_000
    token_bytes: int = 16 * MIB
    transactions: int = 20_000
    journal_bytes: int = 8 * MIB
    sessions: int = 10_000
    named: int = 1000  # stored gateway accounts and client certificates
    sequences: int = 10_000  # scenario sequence counters (rule, card)


CONFIG_KEYS: dict[str, str] = {
    "tenants": "tenants",
    "tenantIdleSeconds": "tenant_idle_seconds",
    "tokensPerTenant": "tokens",
    "tokenBytesPerTenant": "token_bytes",
    "transactionsPerTenant": "transactions",
    "journalBytesPerTenant": "journal_bytes",
    "sessionsPerTenant": "sessions",
    "namedItemsPerTenant": "named",
    "sequencesPerTenant": "sequences",
}

CONFIG_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        name: {"type": "number", "exclusiveMinimum": 0}
        if name == "tenantIdleSeconds"
        else {"type": "integer", "minimum": 1}
        for name in CONFIG_KEYS
    },
}


def from_config(data: dict[str, Any], limits: Limits) -> Limits:
    """``limits`` with the values of a config file's ``limits:`` mapping applied."""
    for key, attribute in CONFIG_KEYS.items():
        if key in data:
            setattr(limits, attribute, data[key])
    return limits


def _limits(tenant: Tenant) -> Limits:
    limits: Limits = tenant.limits
    return limits


# -- tenants -------------------------------------------------------------------------------
def touch(tenant: Tenant) -> None:
    """Note that ``tenant`` was just used (it is not idle)."""
    tenant.last_used = time.monotonic()


def admit_tenant(registry: TenantRegistry, spec: KeySpec) -> None:
    """Make room for a tenant created at run time: remove an idle run-time tenant when the
    limit is reached (those holding open authorizations last: :mod:`emulator.payments.admission`),
    or raise a 507 when none is idle."""
    settings = registry.settings
    declared = {declared.key for declared in settings.keys}
    if spec.key in declared:
        return
    limits: Limits = settings.limits
    created = [tenant for tenant in registry if tenant.key not in declared]
    if len(created) < limits.tenants:
        return
    from emulator.payments.admission import room_maker  # the eviction order (docs/http-limits-and-exposure.md)

    leaving = room_maker(created, limits.tenant_idle_seconds)
    if leaving is None:
        raise errors.limit_reached(
            "X-Api-Key",
            f"payemu holds its limit of {limits.tenants} tenants created at run time and none has been idle "
            f"for {limits.tenant_idle_seconds:g} s (config: limits.tenants).",
        )
    registry.remove(leaving.key)
    leaving.sessions.clear()  # its payment pages close too (the session index checks this)


# -- string tokens ---------------------------------------------------------------------------
def admit_token(tenant: Tenant, payload: str) -> None:
    """Raise a 507 when storing ``payload`` would pass the tenant's token limits."""
    limits = _limits(tenant)
    vault = tenant.vault
    if len(vault) >= limits.tokens:
        raise errors.limit_reached(
            "payload", f"This API key holds its limit of {limits.tokens} string tokens; delete some first."
        )
    if vault.bytes + len(payload) > limits.token_bytes:
        raise errors.limit_reached(
            "payload",
            f"This API key's string tokens hold their limit of {limits.token_bytes} characters; delete some first.",
        )


def admit_gateway_token(tenant: Tenant) -> None:
    """Gateway tokens (tokenize, ``generateToken``) share the string-token count limit;
    the oldest is forgotten to make room."""
    ledger = tenant.ledger
    while ledger.token_count >= _limits(tenant).tokens and ledger.forget_oldest_token():
        pass


def admit_name(tenant: Tenant, held: Collection[str], name: str, what: str, field: str) -> None:
    """Raise a 507 when a new ``name`` would pass the limit of named items (stored gateway
    accounts, client certificates); replacing an existing one is always fine."""
    limit = _limits(tenant).named
    if name not in held and len(held) >= limit:
        raise errors.limit_reached(field, f"This API key holds its limit of {limit} {what}; remove some first.")


# Scenario sequence counters: the tenant's RuleSet forgets the oldest at its
# ``sequence_limit`` (set from ``sequencesPerTenant``), so that card starts the sequence again.


# -- transactions ----------------------------------------------------------------------------
def admit_transaction(tenant: Tenant, now: datetime | None = None) -> None:
    """Make room for one more transaction: drop the oldest finished ones, or raise a 507
    when every transaction is still open (authorized, pending or busy at a gateway).
    ``now``: the tenant's time, when the caller has it."""
    limits = _limits(tenant)
    ledger = tenant.ledger
    excess = len(ledger) - limits.transactions + 1
    if excess > 0 and not ledger.evict_oldest_finished(excess, now or tenant.now()):
        raise errors.limit_reached(
            "transactions",
            f"This API key holds its limit of {limits.transactions} transactions and all are still open "
            "(authorized, pending or in progress); capture, void or POST /_emulator/reset first.",
        )


# -- usage ----------------------------------------------------------------------------------
def usage(runtime: Runtime) -> dict[str, dict[str, float]]:
    """Each limit with what is used of it (per-tenant limits: the fullest tenant)."""
    settings = runtime.settings
    limits: Limits = settings.limits
    declared = {spec.key for spec in settings.keys}
    tenants = list(runtime.tenants)
    sessions: list[int] = [len(tenant.sessions) for tenant in tenants]
    report: dict[str, tuple[float, float]] = {
        "tenants": (sum(1 for tenant in tenants if tenant.key not in declared), limits.tenants),
        "tokensPerTenant": (max((len(t.vault) for t in tenants), default=0), limits.tokens),
        "tokenBytesPerTenant": (max((t.vault.bytes for t in tenants), default=0), limits.token_bytes),
        "transactionsPerTenant": (max((len(t.ledger) for t in tenants), default=0), limits.transactions),
        "journalBytesPerTenant": (max((t.journal.bytes for t in tenants), default=0), limits.journal_bytes),
        "sessionsPerTenant": (max(sessions, default=0), limits.sessions),
        "namedItemsPerTenant": (
            max((max(len(t.accounts), len(t.certificates)) for t in tenants), default=0),
            limits.named,
        ),
        "sequencesPerTenant": (max((t.rules.sequence_count for t in tenants), default=0), limits.sequences),
    }
    return {name: {"used": used, "limit": limit} for name, (used, limit) in report.items()}


def describe(limits: Limits) -> list[tuple[str, object]]:
    """(config key, value) of every limit, for the README and the banner."""
    by_attribute = {attribute: key for key, attribute in CONFIG_KEYS.items()}
    return [(by_attribute[f.name], getattr(limits, f.name)) for f in fields(limits)]
