"""Bounded memory: the hooks (``admit_*``) that decide, when a store grows, what goes at a limit.

Every limit, its config key and what happens there: docs/reference/limits.md. A limit that
cannot make room answers 507 (:func:`emulator.domain.errors.limit_reached`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from emulator.tenants.runtime import Runtime


def usage(runtime: Runtime) -> dict[str, dict[str, float]]:
    """Each limit and its use (per-tenant limits: the fullest tenant)."""
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
