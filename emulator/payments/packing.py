"""A settled transaction packed into one tuple of plain values, and back.

Python's garbage collector walks every container object it tracks: a :class:`Transaction`
is one, so a ledger of tens of thousands of them made each young-generation collection
walk every transaction recorded since the last one (40 ms pauses under load, see
docs/performance.md). A tuple whose items are all plain values (text, numbers,
``Decimal``, ``datetime``, ``None`` and such tuples) is walked by the first collection
after it was made, which then stops tracking it for good. The ledger keeps its most
recent transactions as objects and packs the older ones with :func:`pack`; :func:`unpack`
gives an equal :class:`Transaction` back when one is read.

A packed transaction starts with what the ledger reads without unpacking — :data:`FLAGS`
(may it still be open; is it a charge or authorization; does it settle), its weight and
its ``myRef`` — and the rest are its fields with the vocabulary's members as their text;
those a plain charge leaves at their defaults take one ``None`` together.
Packing one costs a fifth of a microsecond: the ledger packs each transaction as it
leaves its newest ones, on the request path.
"""

from __future__ import annotations

from dataclasses import fields
from datetime import UTC, datetime
from typing import Any

from emulator.payments.clock import Clock
from emulator.payments.model import ZERO
from emulator.payments.transaction import OperationEntry, Transaction
from emulator.vocabulary import ORIGINALS, Operation, RejectReason, ResultCode

Packed = tuple[Any, ...]
"""What :func:`pack` makes: ``(flags, weight, myRef, *the other fields)``."""

# the flags, a packed transaction's first item
MAY_BE_OPEN = 1  # a successful authorization not captured nor voided, or a pending result
ORIGINAL = 2  # a charge or an authorization (what a status by myRef finds)
SETTLES = 4  # a pending result that takes its scenario's final one in time (settles_to)
FLAGS, WEIGHT, MY_REF = 0, 1, 2  # where the ledger reads them
_OPERATIONS = {member.value: member for member in Operation}
_CODES = {member.value: member for member in ResultCode}
_REASONS = {member.value: member for member in RejectReason}
# what pack() keeps of a Transaction: every field but its clock (the ledger's) and its
# weight (in the head); a field added to Transaction and not here stops the import
_KEPT = (
    "reference", "operation", "gateway", "account", "amount", "currency", "result_code", "reject_reason",
    "created_at", "my_ref", "card_number", "authorization_code", "parent", "attempt_number", "attempts",
    "expires_at", "settles_to", "settle_at", "captured_amount", "refunded_amount", "captured_by", "voided_by",
    "operations", "busy",
)  # fmt: skip
if {spec.name for spec in fields(Transaction)} != {*_KEPT, "clock", "weight"}:
    raise ImportError("emulator.payments.packing does not pack every field of Transaction")


def _moment(value: datetime | None) -> datetime | None:
    """A time as kept: in UTC when it has a zone (a naive one stays naive)."""
    if value is None or value.tzinfo is None or value.tzinfo is UTC:
        return value
    return value.astimezone(UTC)


def may_be_open(tx: Transaction) -> bool:
    """Whether ``tx`` could still be authorized or pending (a capture, void or settlement
    may come): when not, a packed one is finished for good."""
    if tx.result_code == ResultCode.ACCEPTED:
        return True
    return (
        tx.operation == Operation.PRE_AUTH
        and tx.result_code == ResultCode.SUCCESS
        and not tx.captured_by
        and not tx.voided_by
    )


_PLAIN = (None, 1, 1, None, None, None)  # parent, attempt_number, attempts, settles_to, captured_by, voided_by


def pack(tx: Transaction) -> Packed:
    """``tx`` as a tuple of plain values (it must not be busy at a gateway: that is the
    request's to end). What a plain charge leaves at its defaults (no parent, expiry,
    settlement, capture, refund, void or history) is one ``None``."""
    if tx.busy is not None:
        raise ValueError("a transaction busy at a gateway stays an object")
    reason, history = tx.reject_reason, tx.operations
    flags = (
        (MAY_BE_OPEN if may_be_open(tx) else 0)
        | (ORIGINAL if tx.operation in ORIGINALS else 0)
        | (SETTLES if tx.settles_to else 0)
    )
    rest: tuple[Any, ...] | None = None
    if not (
        tx.captured_amount is ZERO  # the shared zero: a zero written otherwise keeps its text
        and tx.refunded_amount is ZERO
        and tx.expires_at is None
        and tx.settle_at is None
        and not history
        and (tx.parent, tx.attempt_number, tx.attempts, tx.settles_to, tx.captured_by, tx.voided_by) == _PLAIN
    ):
        rest = (
            tx.parent, tx.attempt_number, tx.attempts, _moment(tx.expires_at), tx.settles_to, _moment(tx.settle_at),
            tx.captured_amount, tx.refunded_amount, tx.captured_by, tx.voided_by,
            tuple(
                (entry.operation._value_, entry.reference, entry.amount, entry.result_code._value_, _moment(entry.time))
                for entry in history
            ) if history else (),
        )  # fmt: skip
    return (
        flags, tx.weight, tx.my_ref, tx.reference, tx.operation._value_, tx.gateway, tx.account, tx.amount,
        tx.currency, tx.result_code._value_, None if reason is None else str(reason), _moment(tx.created_at),
        tx.card_number, tx.authorization_code, rest,
    )  # fmt: skip


def weight(packed: Packed) -> int:
    """The weight of a packed transaction."""
    heft: int = packed[WEIGHT]
    return heft


_PLAIN_REST = (None, 1, 1, None, None, None, ZERO, ZERO, None, None, ())


def unpack(packed: Packed, clock: Clock | None) -> Transaction:
    """The :class:`Transaction` that :func:`pack` made ``packed`` of, on ``clock``."""
    (
        _, heft, my_ref, reference, operation, gateway, account, amount, currency, code, reason, created, card,
        approval, rest,
    ) = packed  # fmt: skip
    (
        parent, attempt_number, attempts, expires, settles_to, settle_at, captured, refunded, captured_by, voided_by,
        history,
    ) = _PLAIN_REST if rest is None else rest  # fmt: skip
    return Transaction(
        reference,
        _OPERATIONS[operation],
        gateway,
        account,
        amount,
        currency,
        _CODES[code],
        None if reason is None else _REASONS.get(reason, reason),
        created,
        my_ref,
        card,
        approval,
        parent,
        attempt_number,
        attempts,
        expires,
        settles_to,
        settle_at,
        captured,
        refunded,
        captured_by,
        voided_by,
        tuple(
            OperationEntry(_OPERATIONS[op], ref, value, _CODES[result], when)
            for op, ref, value, result, when in history
        ),
        None,
        clock,
        heft,
    )
