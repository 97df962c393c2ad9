"""One payment's story for the dashboard's detail view (``&tx=REF``): the transaction and
every later operation on it and the failover attempts of the same requests, in time
order, with the masked request and answer of each call."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from emulator.domain.clock import isoformat
from emulator.domain.masking import references
from emulator.ui import format as pagefmt
from emulator.ui import payments

if TYPE_CHECKING:
    from emulator.stores.ledger import Transaction
    from emulator.tenants.tenants import Tenant

LABELS = payments.LABELS


def family(tenant: Tenant, reference: str, journal: payments.JournalIndex | None = None) -> list[Transaction]:
    """The transactions of ``reference``'s story, in ledger order."""
    ordered = tenant.ledger.transactions()
    by_ref = {tx.reference: tx for tx in ordered}
    children: dict[str, list[str]] = defaultdict(list)
    for tx in ordered:
        if tx.parent:
            children[tx.parent].append(tx.reference)
    groups = (journal or payments.index_journal(tenant.journal)).groups
    found: set[str] = set()
    pending = [reference]
    while pending:
        ref = pending.pop()
        if ref in found or ref not in by_ref:
            continue
        found.add(ref)
        parent = by_ref[ref].parent
        pending.extend([*children[ref], *groups.get(ref, ()), *([parent] if parent else [])])
    return [tx for tx in ordered if tx.reference in found]


def timeline(tenant: Tenant, reference: str) -> dict[str, Any] | None:
    """The detail view of ``reference``, or None when the ledger does not hold it."""
    members = family(tenant, reference)
    if not members:
        return None
    # read again, keeping the entries of this story only (the first reading kept none)
    journal = payments.index_journal(tenant.journal, {tx.reference for tx in members})
    now = tenant.now()
    order = {tx.reference: index for index, tx in enumerate(members)}
    members.sort(key=lambda tx: (tx.created_at, order[tx.reference]))
    checks = [check for tx in members for check in journal.statuses.get(tx.reference, ())]
    timed = [(tx.created_at, _event(tx, now, journal)) for tx in members] + [(c.time, _check(c)) for c in checks]
    events = [event for _, event in sorted(timed, key=lambda pair: pair[0])]
    chosen = next(tx for tx in members if tx.reference == reference)
    return {
        "reference": reference,
        "summary": _event(chosen, now, journal),
        "myRef": next((tx.my_ref for tx in members if tx.my_ref), None),
        "events": events,
        "card": next((e["card"] for e in events if e["card"]), None),
    }


def _bodies(entry: Mapping[str, Any] | None, attempt: Any = None) -> dict[str, str | None]:
    """The masked request and answer of a journal entry (``attempt``: one attempt's own result)."""
    if entry is None:
        return {"request": None, "response": None, "attempt": None, "call": None}
    keep = references(entry.get("request"), entry.get("response"), entry.get("attempts"))
    return {
        "request": pagefmt.pretty(entry.get("request"), keep),
        "response": pagefmt.pretty(entry.get("response"), keep),
        "attempt": pagefmt.pretty(attempt, keep) if isinstance(attempt, Mapping) else None,
        "call": f"{entry.get('method', '')} {entry.get('path', '')}".strip(),
    }


def _check(check: payments.FollowUp) -> dict[str, Any]:
    return {
        "reference": check.reference,
        "parent": None,
        "label": check.label,
        "operation": check.operation,
        "account": None,
        "gateway": check.gateway,
        "amountText": check.amount_text,
        "resultCode": check.code,
        "rejectReason": check.reject_reason,
        "state": None,
        "time": check.time_text,
        "timeIso": isoformat(check.time),
        "card": None,
        "failed": check.code != "Success",
        "myRef": None,
        "nativeCode": check.native.code,
        "nativeDescription": check.native.description,
        "rule": check.native.rule,
        "ruleSource": check.native.rule_source,
        "bodies": _bodies(check.entry),
        "check": True,
    }


def _event(tx: Transaction, now: Any, journal: payments.JournalIndex) -> dict[str, Any]:
    data = tx.to_json(now)
    native = journal.native.get(tx.reference, payments.Native())
    operation = tx.operation.value
    label = LABELS.get(operation, operation)
    if tx.attempt_number > 1:
        label += f" · attempt {tx.attempt_number} (fallback)"
    return {
        "reference": tx.reference,
        "parent": tx.parent,
        "label": label,
        "operation": operation,
        "account": tx.account,
        "gateway": tx.gateway,
        "amountText": pagefmt.money(float(tx.amount), tx.currency),
        "resultCode": tx.result_code.value,
        "rejectReason": data["rejectReasonCode"],
        "state": data["state"],
        "time": pagefmt.short(tx.created_at),
        "timeIso": isoformat(tx.created_at),
        "card": data["cardMasked"],
        "failed": tx.result_code.value != "Success",
        "myRef": tx.my_ref,
        "nativeCode": native.code,
        "nativeDescription": native.description,
        "rule": native.rule,
        "ruleSource": native.rule_source,
        "bodies": _bodies(
            journal.entries.get(tx.reference),
            journal.results.get(tx.reference) if len(journal.groups.get(tx.reference, ())) > 1 else None,
        ),
        "check": False,
    }
