"""The items :mod:`emulator.stores.ledger` keeps (transactions, their history, gateway
tokens) and what each weighs."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import MISSING, field, fields
from datetime import datetime
from decimal import Decimal
from sys import getsizeof
from typing import Any

from emulator.domain import budget as weights
from emulator.domain.clock import Clock, isoformat
from emulator.domain.masking import mask_pan
from emulator.domain.model import ZERO, JsonObject, Money
from emulator.domain.records import dataclass
from emulator.domain.vocabulary import Operation, RejectReason, ResultCode

_FAILED_STATE = {ResultCode.REJECTED: "Declined", ResultCode.ACCEPTED: "Pending"}
_DONE_STATE = {
    Operation.CHARGE: "Charged",
    Operation.PRE_AUTH: "Authorized",
    Operation.CAPTURE: "Captured",
    Operation.VOID: "Voided",
    Operation.REFUND: "Refunded",
    Operation.TOKENIZE: "Tokenized",
}


@dataclass(frozen=True)
class OperationEntry:
    """One operation on a transaction (a charge, capture, void or refund) as its history shows it."""

    operation: Operation
    reference: str
    amount: Decimal
    result_code: ResultCode
    time: datetime

    def to_json(self) -> JsonObject:
        return {
            "operation": self.operation.value,
            "reference": self.reference,
            "amount": float(self.amount),
            "resultCode": self.result_code.value,
            "time": isoformat(self.time),
        }


@dataclass(slots=True)
class Transaction:
    """One operation a gateway processed; slotted, as a ledger holds tens of thousands."""

    # ``card_number`` stays in memory (later operations' rules match on it); to_json masks it.

    reference: str
    operation: Operation  # Charge, PreAuth, Capture, Void, Refund, Tokenize
    gateway: str
    account: str | None
    amount: Decimal
    currency: str
    result_code: ResultCode
    reject_reason: str | None
    created_at: datetime
    my_ref: str | None = None
    card_number: str | None = field(default=None, repr=False)
    authorization_code: str | None = None
    parent: str | None = None  # the reference this operation refers to (capture, void, refund)
    attempt_number: int = 1
    attempts: int = 1  # attempts made by the request that created it
    expires_at: datetime | None = None  # authorizations: when the hold lapses
    settles_to: str | None = None
    settle_at: datetime | None = None
    captured_amount: Decimal = ZERO
    refunded_amount: Decimal = ZERO
    captured_by: str | None = None
    voided_by: str | None = None
    # its history, oldest first: a tuple, so a transaction without one holds no list (one
    # object less per transaction for the garbage collector to walk)
    operations: tuple[OperationEntry, ...] = ()
    busy: Operation | None = None  # the operation in progress at the gateway
    clock: Clock | None = field(default=None, repr=False, compare=False)  # the tenant's
    weight: int = 0  # bytes charged to the tenant's budget (weight_of), with its history

    def weight_of(self) -> int:
        """What the transaction holds in bytes (constant time)."""
        return weight_of_texts(
            self.reference, self.card_number, self.authorization_code, self.my_ref
        ) + weights.OPERATION * len(self.operations)

    def __setstate__(self, state: Any) -> None:
        """Unpickling: the slots, or an older file's ``__dict__``; missing fields take defaults."""
        if isinstance(state, tuple):  # (instance dict, slots): what object.__getstate__ gives
            state = {**(state[0] or {}), **(state[1] or {})}
        for name, default in _DEFAULTS.items():
            setattr(self, name, default())
        for name, value in state.items():
            setattr(self, name, value)

    def settle(self, now: datetime) -> None:
        """An Accepted operation takes its scenario's final result once its time has come."""
        if (
            self.result_code == ResultCode.ACCEPTED
            and self.settles_to
            and self.settle_at is not None
            and now >= self.settle_at
        ):
            self.result_code = ResultCode(self.settles_to)
            self.reject_reason = RejectReason.CARD_DECLINED if self.settles_to == ResultCode.REJECTED else None
            self.settles_to = None

    @property
    def money(self) -> Money:
        return Money(self.amount, self.currency)

    @property
    def successful(self) -> bool:
        return self.result_code == ResultCode.SUCCESS

    def expired(self, now: datetime) -> bool:
        return self.expires_at is not None and now > self.expires_at

    def state(self, now: datetime) -> str:
        self.settle(now)
        if self.result_code != ResultCode.SUCCESS:
            return _FAILED_STATE.get(self.result_code, "Failed")
        if self.voided_by:
            return "Voided"
        if self.operation == Operation.PRE_AUTH:
            if self.captured_by:
                return "Captured"
            return "Expired" if self.expired(now) else "Authorized"
        if self.operation in (Operation.CHARGE, Operation.CAPTURE) and self.refunded_amount > ZERO:
            return "Refunded" if self.refunded_amount >= self.amount else "PartiallyRefunded"
        return _DONE_STATE.get(self.operation, "Completed")

    def to_json(self, now: datetime | None = None) -> JsonObject:
        """The transaction for the control API and the dashboard (card masked, no CVV)."""
        now = now or (self.clock.now() if self.clock else self.created_at)
        number = self.card_number
        return {
            "reference": self.reference,
            "operation": self.operation.value,
            "gateway": self.gateway,
            "account": self.account,
            "amount": float(self.amount),
            "currency": self.currency,
            "state": self.state(now),
            "resultCode": self.result_code.value,
            "rejectReasonCode": str(self.reject_reason) if self.reject_reason is not None else None,
            "createdAt": isoformat(self.created_at),
            "expiresAt": isoformat(self.expires_at) if self.expires_at else None,
            "myRef": self.my_ref,
            "cardMasked": mask_pan(number) if number else None,
            "parent": self.parent,
            "capturedAmount": float(self.captured_amount),
            "refundedAmount": float(self.refunded_amount),
            "operations": [entry.to_json() for entry in self.operations],
            "attempts": self.attempts,
        }


_ASCII_TEXT = getsizeof("")  # what sys.getsizeof() gives an ASCII string beyond one byte a character


def weight_of_texts(reference: str, card: str | None, approval: str | None, my_ref: str | None) -> int:
    """The bytes of a transaction without history (``budget.text()`` of each string, spelled
    out: for ASCII text, the figure ``sys.getsizeof`` gives, read from its length)."""
    heft = weights.TRANSACTION + (_ASCII_TEXT + len(reference) if reference.isascii() else getsizeof(reference))
    if card is not None:
        heft += _ASCII_TEXT + len(card) if card.isascii() else getsizeof(card)
    if approval is not None:
        heft += _ASCII_TEXT + len(approval) if approval.isascii() else getsizeof(approval)
    if my_ref is not None:
        heft += _ASCII_TEXT + len(my_ref) if my_ref.isascii() else getsizeof(my_ref)
    return heft


# each field's default, as a factory (read by Transaction.__setstate__)
_DEFAULTS: dict[str, Callable[[], Any]] = {
    spec.name: spec.default_factory if spec.default_factory is not MISSING else (lambda value=spec.default: value)  # type: ignore[misc]
    for spec in fields(Transaction)
    if spec.default is not MISSING or spec.default_factory is not MISSING
}


@dataclass(frozen=True)
class GatewayToken:
    """A token a gateway issued for a card, with the gateway and account it belongs to."""

    token: str
    gateway: str
    account: str | None
    card_number: str | None
    created_at: datetime

    def __repr__(self) -> str:  # keep the card number out of debug output
        return f"GatewayToken(token={self.token!r}, gateway={self.gateway!r})"


def token_weight(token: GatewayToken) -> int:
    return weights.GATEWAY_TOKEN + weights.text(token.token) + weights.text(token.card_number)
