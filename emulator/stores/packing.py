"""A finished transaction packed into one ``bytes`` object, and back.

``bytes`` is not tracked by the garbage collector, where a :class:`Transaction` (or even a
tuple, until its first collection) is: a filling ledger of objects made young collections
of tens of milliseconds. A packed transaction is a short head the ledger reads without
unpacking (flags, weight, ``myRef``) and :mod:`marshal` data of plain values. The bytes
are only ever made by :func:`pack` and never leave the process: nothing read from a file
or a request is unmarshalled.
"""

from __future__ import annotations

import marshal
import struct
from dataclasses import fields
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any, cast

from emulator.domain.clock import Clock
from emulator.domain.model import ZERO, OperationResult
from emulator.domain.vocabulary import ORIGINALS, Operation, RejectReason, ResultCode
from emulator.stores.transaction import OperationEntry, Transaction

# flags, the head's first byte
MAY_BE_OPEN = 1  # a successful authorization not captured nor voided, or a pending result
ORIGINAL = 2  # a charge or an authorization (what a status by myRef finds)
SETTLES = 4  # a pending result that takes its scenario's final one in time (settles_to)
_HEAD = struct.Struct("<BQI")  # flags, weight, length of the myRef's UTF-8 text
_NO_MY_REF = 0xFFFFFFFF
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
    raise ImportError("emulator.stores.packing does not pack every field of Transaction")

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_NAIVE_EPOCH = datetime(1970, 1, 1)
_MICROSECOND = timedelta(microseconds=1)
_PLAIN = (None, 1, 1, None, None, None)  # parent, attempt_number, attempts, settles_to, captured_by, voided_by


def _utf8(text: str) -> bytes:
    return text.encode("utf-8", "surrogatepass")  # a JSON string may hold a lone surrogate


def my_ref_key(my_ref: str) -> bytes:
    """What a packed transaction with this ``myRef`` holds after its first byte (for
    ``blob.startswith(key, MY_REF_AT)``, with no unpacking)."""
    text = _utf8(my_ref)
    return struct.pack("<I", len(text)) + text


MY_REF_AT = 1 + 8  # where my_ref_key() starts in a packed transaction


def _moment(value: datetime | None) -> bytes | int | tuple[int] | None:
    """A time as plain values: a UTC time as its fields, the 10 bytes its pickle holds (no
    arithmetic); another instant as microseconds since 1970 (read back in UTC); a naive time
    as those in a tuple."""
    if value is None:
        return None
    if value.tzinfo is UTC:
        return _fields(value)
    if value.tzinfo is None:
        return ((value - _NAIVE_EPOCH) // _MICROSECOND,)
    return (value - _EPOCH) // _MICROSECOND


def _fields(value: datetime) -> bytes:
    """A datetime's fields, year to microsecond, as its pickle keeps them (``datetime(them, tzinfo)`` reads them)."""
    return cast(bytes, value.__reduce__()[1][0])


def _datetime(value: bytes | int | tuple[int] | None) -> datetime | None:
    if value is None:
        return None
    if isinstance(value, bytes):
        return datetime(value, UTC)  # type: ignore[arg-type,call-arg]
    if isinstance(value, tuple):
        return _NAIVE_EPOCH + timedelta(microseconds=value[0])
    return _EPOCH + timedelta(microseconds=value)


def _amount(value: Decimal) -> str | None:
    return None if value is ZERO else str(value)  # None: the shared zero, most captured and refunded amounts


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


def pack(tx: Transaction) -> bytes:
    """``tx`` as bytes (it must not be busy at a gateway: that is the request's to end)."""
    if tx.busy is not None:
        raise ValueError("a transaction busy at a gateway stays an object")
    reason, history = tx.reject_reason, tx.operations
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
            _amount(tx.captured_amount), _amount(tx.refunded_amount), tx.captured_by, tx.voided_by,
            tuple(
                (entry.operation._value_, entry.reference, str(entry.amount), entry.result_code._value_,
                 _moment(entry.time))
                for entry in history
            ),
        )  # fmt: skip
    body = (
        tx.reference, tx.operation._value_, tx.gateway, tx.account, str(tx.amount), tx.currency,
        tx.result_code._value_, None if reason is None else str(reason), _moment(tx.created_at), tx.card_number,
        tx.authorization_code, rest,
    )  # fmt: skip
    flags = (
        (MAY_BE_OPEN if may_be_open(tx) else 0)
        | (ORIGINAL if tx.operation in ORIGINALS else 0)
        | (SETTLES if tx.settles_to else 0)
    )
    return _packed(flags, tx.weight, tx.my_ref, body)


def pack_answer(
    answer: OperationResult,
    account: str | None,
    card_number: str | None,
    my_ref: str | None,
    created_at: datetime,
    heft: int,
) -> bytes:
    """What :func:`pack` makes of the transaction a gateway's ``answer`` is when nothing can
    change it (not an authorization, not pending, on no earlier transaction, the first
    attempt of its request): packed from the answer itself, with no Transaction made."""
    operation, money, reason = answer.operation, answer.money, answer.reject_reason
    # each value made in place: one marshal sees referred to elsewhere is written as a
    # reference (and the bytes would differ from pack()'s)
    body = (
        answer.gateway_reference, operation._value_, answer.gateway_name, account, str(money.amount), money.currency,
        answer.code._value_, None if reason is None else str(reason),
        created_at.__reduce__()[1][0] if created_at.tzinfo is UTC else _moment(created_at), card_number,  # _fields()
        answer.authorization_code, None,
    )  # fmt: skip
    flags = ORIGINAL if operation in ORIGINALS else 0
    if my_ref is None:
        return _HEAD.pack(flags, heft, _NO_MY_REF) + marshal.dumps(body)
    return _packed(flags, heft, my_ref, body)


def _packed(flags: int, weight: int, my_ref: str | None, body: tuple[Any, ...]) -> bytes:
    if my_ref is None:
        return _HEAD.pack(flags, weight, _NO_MY_REF) + marshal.dumps(body)
    text = _utf8(my_ref)
    return b"".join((_HEAD.pack(flags, weight, len(text)), text, marshal.dumps(body)))


def weight(blob: bytes) -> int:
    """The weight of a packed transaction, from its head."""
    return int(_HEAD.unpack_from(blob)[1])


_PLAIN_REST = (None, 1, 1, None, None, None, None, None, None, None, ())


def unpack(blob: bytes, clock: Clock | None) -> Transaction:
    """The :class:`Transaction` that :func:`pack` made ``blob`` of, on ``clock``."""
    _, heft, length = _HEAD.unpack_from(blob)
    start = _HEAD.size
    my_ref: str | None = None
    if length != _NO_MY_REF:
        my_ref = blob[start : start + length].decode("utf-8", "surrogatepass")
        start += length
    body: Any = marshal.loads(memoryview(blob)[start:])
    reference, operation, gateway, account, amount, currency, code, reason, created, card, approval, rest = body
    (
        parent, attempt_number, attempts, expires, settles_to, settle_at, captured, refunded, captured_by, voided_by,
        history,
    ) = _PLAIN_REST if rest is None else rest  # fmt: skip
    return Transaction(
        reference=reference,
        operation=_OPERATIONS[operation],
        gateway=gateway,
        account=account,
        amount=Decimal(amount),
        currency=currency,
        result_code=_CODES[code],
        reject_reason=None if reason is None else _REASONS.get(reason, reason),
        created_at=_datetime(created),  # type: ignore[arg-type]
        my_ref=my_ref,
        card_number=card,
        authorization_code=approval,
        parent=parent,
        attempt_number=attempt_number,
        attempts=attempts,
        expires_at=_datetime(expires),
        settles_to=settles_to,
        settle_at=_datetime(settle_at),
        captured_amount=ZERO if captured is None else Decimal(captured),
        refunded_amount=ZERO if refunded is None else Decimal(refunded),
        captured_by=captured_by,
        voided_by=voided_by,
        operations=tuple(
            OperationEntry(_OPERATIONS[op], ref, Decimal(value), _CODES[result], _datetime(when))  # type: ignore[arg-type]
            for op, ref, value, result, when in history
        ),
        busy=None,
        clock=clock,
        weight=heft,
    )
