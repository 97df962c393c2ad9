"""The dashboard's payments: one row per payment, its attempts and follow-ups folded under it.

A payment's attempts come from its request's journal entry, else (the entry dropped) by
attempt number, operation, amount and currency; its follow-ups are the captures, voids,
refunds on it and the status checks the journal recorded. Only what the pages already
read is read here: ledger transactions and masked journal entries."""

from __future__ import annotations

from collections.abc import Container, Iterable, Mapping, Sequence
from dataclasses import field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from emulator.domain.clock import isoformat
from emulator.domain.masking import mask_pan
from emulator.domain.records import dataclass
from emulator.ui import format as pagefmt

if TYPE_CHECKING:
    from emulator.stores.ledger import Transaction

# operations that start a payment (the ledger's values of Transaction.operation)
STARTS = frozenset({"Charge", "PreAuth", "Tokenize"})
LABELS = {
    "PreAuth": "Authorization",
    "Charge": "Charge",
    "Capture": "Capture",
    "Refund": "Refund",
    "Void": "Void",
    "Tokenize": "Tokenization",
    "Status": "Status check",
}
# query parameter → what it compares on each operation of a payment
FILTERS = ("state", "gateway", "result")


@dataclass
class Native:
    """What the gateway answered to one attempt, in its own vocabulary."""

    code: str | None = None
    description: str | None = None
    rule: str | None = None  # the scenario rule that decided the attempt (None: the gateway's default)
    rule_source: str | None = None  # where it is written (``file:line``, ``runtime``)


@dataclass
class AttemptView:
    number: int
    reference: str
    gateway: str
    account: str | None
    code: str
    reject_reason: str | None
    native: Native
    time: datetime

    @property
    def fallback(self) -> bool:
        return self.number > 1

    @property
    def time_text(self) -> str:
        return pagefmt.short(self.time)


@dataclass
class FollowUp:
    operation: str
    reference: str
    amount_text: str
    code: str
    reject_reason: str | None
    gateway: str | None
    time: datetime
    native: Native = field(default_factory=Native)
    entry: Mapping[str, Any] | None = None  # a status check's journal entry

    @property
    def label(self) -> str:
        return LABELS.get(self.operation, self.operation)

    @property
    def time_text(self) -> str:
        return pagefmt.short(self.time)


@dataclass
class Payment:
    first: Transaction
    attempts: list[AttemptView] = field(default_factory=list)
    follow_ups: list[FollowUp] = field(default_factory=list)
    members: list[Transaction] = field(default_factory=list)  # every transaction of it

    @property
    def last(self) -> AttemptView:
        return self.attempts[-1]

    @property
    def reference(self) -> str:
        """The reference the merchant was given: the last attempt's."""
        return self.last.reference

    @property
    def label(self) -> str:
        return LABELS.get(self.first.operation.value, self.first.operation.value)

    @property
    def time(self) -> datetime:
        return self.first.created_at

    @property
    def time_text(self) -> str:
        return pagefmt.short(self.first.created_at)

    @property
    def time_iso(self) -> str:
        return isoformat(self.first.created_at)

    @property
    def amount_text(self) -> str:
        return pagefmt.money(float(self.first.amount), self.first.currency)

    @property
    def my_ref(self) -> str | None:
        return self.first.my_ref

    @property
    def card(self) -> str | None:
        number = self.first.card_number
        return mask_pan(number) if number else None

    @property
    def failover(self) -> bool:
        return len(self.attempts) > 1


def _final_tx(payment: Payment) -> Transaction:
    return next(tx for tx in payment.members if tx.reference == payment.reference)


def state(payment: Payment, now: datetime) -> str:
    return _final_tx(payment).state(now)


def code(payment: Payment, now: datetime) -> str:
    """The payment's result code now (an Accepted one may have settled since)."""
    final = _final_tx(payment)
    final.settle(now)
    return final.result_code.value


@dataclass
class JournalIndex:
    """What the journal tells: each request's attempts, their native answers, the status checks."""

    groups: dict[str, list[str]] = field(default_factory=dict)
    native: dict[str, Native] = field(default_factory=dict)
    statuses: dict[str, list[FollowUp]] = field(default_factory=dict)
    entries: dict[str, Mapping[str, Any]] = field(default_factory=dict)  # reference → its journal entry
    results: dict[str, Mapping[str, Any]] = field(default_factory=dict)  # reference → its attempt's result


def _when(value: Any) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None


def index_journal(entries: Iterable[Mapping[str, Any]], wanted: Container[str] = ()) -> JournalIndex:
    """What ``entries`` tell, each entry looked at in turn: only the entries (and results)
    of the references in ``wanted`` are kept, so a journal read as a stream is never held
    whole (parsed, an entry holds many times its text)."""
    found = JournalIndex()
    for entry in entries:
        refs: list[str] = []
        for attempt in entry.get("attempts") or ():
            result = attempt.get("result") if isinstance(attempt, Mapping) else None
            if not isinstance(result, Mapping) or not result.get("gatewayReference"):
                continue
            ref = str(result["gatewayReference"])
            native = _native(result, attempt)
            if result.get("operationType") == "Status":
                when = _when(attempt.get("timestamp")) or _when(entry.get("time"))
                if when is not None:
                    kept = entry if ref in wanted else None
                    found.statuses.setdefault(ref, []).append(_status_check(ref, result, when, kept, native))
                continue
            refs.append(ref)
            found.native[ref] = native
            if ref in wanted:
                found.entries[ref] = entry
                found.results[ref] = result
        if len(refs) > 1:
            for ref in refs:
                found.groups[ref] = refs
    return found


def _text(value: Any) -> str | None:
    return None if value is None or value == "" else str(value)


def _native(result: Mapping[str, Any], attempt: Mapping[str, Any]) -> Native:
    """The gateway's own answer to an attempt, and the rule that decided it."""
    return Native(
        _text(result.get("gatewayResultCode")),
        _text(result.get("gatewayResultDescription")),
        _text(attempt.get("rule")),
        _text(attempt.get("ruleSource")),
    )


def _status_check(
    ref: str, result: Mapping[str, Any], when: datetime, entry: Mapping[str, Any] | None, native: Native
) -> FollowUp:
    amount = result.get("amount")
    currency = result.get("currency")
    return FollowUp(
        "Status",
        ref,
        pagefmt.money(float(amount), str(currency) if currency else None) if isinstance(amount, int | float) else "",
        str(result.get("operationResultCode") or ""),
        _text(result.get("rejectReasonCode")),
        _text(result.get("gatewayName")),
        when,
        native,
        entry,
    )


def _attempt(tx: Transaction, native: Mapping[str, Native]) -> AttemptView:
    return AttemptView(
        tx.attempt_number,
        tx.reference,
        tx.gateway,
        tx.account,
        tx.result_code.value,
        str(tx.reject_reason) if tx.reject_reason is not None else None,
        native.get(tx.reference, Native()),
        tx.created_at,
    )


def _follow_up(tx: Transaction) -> FollowUp:
    return FollowUp(
        tx.operation.value,
        tx.reference,
        pagefmt.money(float(tx.amount), tx.currency),
        tx.result_code.value,
        str(tx.reject_reason) if tx.reject_reason is not None else None,
        tx.gateway,
        tx.created_at,
    )


def _same_request(payment: Payment, tx: Transaction) -> bool:
    """Without the journal: ``tx`` is the next fallback attempt of ``payment``'s request."""
    first = payment.first
    return (
        payment.attempts[-1].number == tx.attempt_number - 1
        and first.operation == tx.operation
        and first.amount == tx.amount
        and first.currency == tx.currency
        and first.my_ref == tx.my_ref
    )


def group(transactions: Sequence[Transaction], journal: JournalIndex) -> list[Payment]:
    """The payments of ``transactions``, oldest first; a follow-up without its payment is its own row."""
    payments: list[Payment] = []
    owner: dict[str, Payment] = {}  # reference → the payment it belongs to
    for tx in transactions:
        operation = tx.operation.value
        if tx.parent is None and operation in STARTS:
            siblings = journal.groups.get(tx.reference)
            joined = next((owner[ref] for ref in siblings or () if ref in owner), None) if siblings else None
            if joined is None and siblings is None and tx.attempt_number > 1:
                joined = next((p for p in reversed(payments) if _same_request(p, tx)), None)
            if joined is not None:
                joined.attempts.append(_attempt(tx, journal.native))
                joined.members.append(tx)
                owner[tx.reference] = joined
                continue
            payment = Payment(tx, [_attempt(tx, journal.native)], [], [tx])
        else:
            parent = owner.get(tx.parent) if tx.parent else None
            if parent is not None:
                parent.follow_ups.append(_follow_up(tx))
                parent.members.append(tx)
                owner[tx.reference] = parent
                continue
            payment = Payment(tx, [_attempt(tx, journal.native)], [], [tx])  # its original is gone
        payments.append(payment)
        owner[tx.reference] = payment
    for payment in payments:
        checks = [check for tx in payment.members for check in journal.statuses.get(tx.reference, ())]
        if checks:
            payment.follow_ups = sorted([*payment.follow_ups, *checks], key=lambda f: f.time)
    return payments


def _fields(tx: Transaction, now: datetime) -> dict[str, str]:
    return {"state": tx.state(now), "gateway": tx.gateway, "result": tx.result_code.value}


def matches(payment: Payment, filters: Mapping[str, str], now: datetime) -> bool:
    """Whether one of the payment's transactions matches every filter."""
    wanted = {name: value for name, value in filters.items() if name in FILTERS}
    return any(all(_fields(tx, now)[name] == value for name, value in wanted.items()) for tx in payment.members)


def rows(
    transactions: Sequence[Transaction],
    entries: Iterable[Mapping[str, Any]],
    now: datetime,
    filters: Mapping[str, str] | None = None,
) -> list[Payment]:
    """The payments matching ``filters``, newest first."""
    grouped = group(transactions, index_journal(entries))
    return [p for p in reversed(grouped) if not filters or matches(p, filters, now)]
