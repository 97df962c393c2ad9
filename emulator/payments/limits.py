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
bytes per tenant       ``memoryBytesPerTenant`` journal entries first, then the oldest
                                              finished transactions and sessions; string
                                              tokens and rules: 507 (payments.budget)
bytes of the process   ``memoryBytes``        the same, of every tenant (the largest
                                              tenant's first)
=====================  =====================  ===========================================

A limit that cannot make room answers **507 Insufficient Storage** with payemu's JSON
error body (:func:`emulator.errors.limit_reached`). Where something is added to a store
(the tenant registry, ``vault.store``, ``recording.record`` and ``remember_token``, stored
accounts and certificates) the hooks of this module (``admit_*``) decide, through the
stores' own methods (``Vault.bytes``, ``Ledger.evict_oldest_finished``, ...). Stores that
only ever forget their oldest entries bound themselves with the limit the tenant gives
them: ``Sessions.limit``, ``RuleSet.sequence_limit`` and the journal's byte budget.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from emulator.runtime import Runtime


def usage(runtime: Runtime) -> dict[str, dict[str, float]]:
    """Each limit with what is used of it (per-tenant limits: the fullest tenant)."""
    settings = runtime.settings
    limits = settings.limits
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
        "memoryBytesPerTenant": (max((t.budget.used for t in tenants), default=0), limits.tenant_bytes),
        "memoryBytes": (runtime.tenants.budget.used, limits.memory_bytes),
    }
    return {name: {"used": used, "limit": limit} for name, (used, limit) in report.items()}
