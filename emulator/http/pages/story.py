"""One payment's story for the dashboard's detail view (``/_emulator/?key=...&tx=REF``).

Starting from any reference, the story gathers the transaction it belongs to (following
``parent`` up to the first operation), every later operation on it (captures, voids,
refunds, and refunds of a capture) and the failover attempts of the same requests (the
journal entry that made an operation lists all its attempts). Each is an event of the
timeline, in time order, with its amount and result code.
"""

from __future__ import annotations

from collections import defaultdict
from typing import TYPE_CHECKING, Any

from emulator.http.pages import format as pagefmt
from emulator.payments.clock import isoformat

if TYPE_CHECKING:
    from emulator.payments.ledger import Transaction
    from emulator.payments.tenants import Tenant

LABELS = {
    "PreAuth": "Authorization",
    "Charge": "Charge",
    "Capture": "Capture",
    "Refund": "Refund",
    "Void": "Void",
    "Tokenize": "Tokenization",
    "Status": "Status check",
}


def _attempt_groups(tenant: Tenant) -> dict[str, list[str]]:
    """reference → the references of every attempt of the same request (journal order)."""
    groups: dict[str, list[str]] = {}
    for entry in tenant.journal:
        refs = [
            str(a["result"]["gatewayReference"])
            for a in entry.get("attempts") or []
            if isinstance(a, dict) and isinstance(a.get("result"), dict) and a["result"].get("gatewayReference")
        ]
        if len(refs) > 1:
            for ref in refs:
                groups[ref] = refs
    return groups


def family(tenant: Tenant, reference: str) -> list[Transaction]:
    """The transactions of ``reference``'s story, in the order the ledger recorded them."""
    ordered = tenant.ledger.transactions()
    by_ref = {tx.reference: tx for tx in ordered}
    children: dict[str, list[str]] = defaultdict(list)
    for tx in ordered:
        if tx.parent:
            children[tx.parent].append(tx.reference)
    groups = _attempt_groups(tenant)
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
    """The detail view of ``reference``: its summary and the timeline, or None when the
    ledger does not hold it."""
    members = family(tenant, reference)
    if not members:
        return None
    now = tenant.now()
    order = {tx.reference: index for index, tx in enumerate(members)}
    members.sort(key=lambda tx: (tx.created_at, order[tx.reference]))
    events = [_event(tx, now) for tx in members]
    chosen = next(tx for tx in members if tx.reference == reference)
    return {
        "reference": reference,
        "summary": _event(chosen, now),
        "events": events,
        "card": next((e["card"] for e in events if e["card"]), None),
    }


def _event(tx: Transaction, now: Any) -> dict[str, Any]:
    data = tx.to_json(now)
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
    }
