"""The ledger: every gateway transaction of a tenant, and the rules that relate them.

``tenant.ledger`` (a :class:`Ledger`) maps each ``gatewayReference`` to a :class:`Transaction`: every
attempt that reached a gateway is recorded (declines and failures too, so status can
report them). Operations referring to an earlier one (capture, void, refund, status) are
checked here before any gateway is asked:

* capture ← a successful, unexpired, uncaptured, unvoided authorization, through the
  same gateway, same currency, for at most :data:`CAPTURE_TOLERANCE` × the authorized amount;
* void ← a successful charge or authorization not yet captured, voided or refunded;
* refund ← a successful charge or capture, partially and repeatedly, never above it in total;
* status ← a charge or authorization.

A refusal is a :class:`Refusal` (answered 409 Rejected with its ``rejectReasonCode``).
While an operation on a transaction is at the gateway, the transaction is *reserved*: the
check and the reservation happen with no ``await`` in between, so of concurrent requests
on one transaction at most one proceeds; the others are refused.

Gateway tokens minted by tokenize or ``generateToken`` (the ``userToken`` of later
payments) are kept in the ledger too, as :class:`GatewayToken`.

Amounts are exact :class:`~decimal.Decimal` values (see :mod:`emulator.payments.model`).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from decimal import Decimal
from typing import TYPE_CHECKING

from emulator.payments.clock import Clock, isoformat
from emulator.payments.masking import mask_pan
from emulator.payments.model import ZERO, JsonObject, Money, OperationResult, text
from emulator.vocabulary import ORIGINALS, Operation, RejectReason, ResultCode

if TYPE_CHECKING:
    from emulator.payments.tenants import Tenant

# A capture may exceed the authorized amount (estimate authorized, actual captured) by
# up to 15 %, as card schemes tolerate for tips and fuel; refunds never exceed the original.
CAPTURE_TOLERANCE = Decimal("1.15")
_ORIGINALS: dict[Operation, tuple[Operation, ...]] = {
    Operation.CAPTURE: (Operation.PRE_AUTH,),
    Operation.VOID: (Operation.CHARGE, Operation.PRE_AUTH),
    Operation.REFUND: (Operation.CHARGE, Operation.CAPTURE),
    Operation.STATUS: (Operation.CHARGE, Operation.PRE_AUTH),
}
_FAILED_STATE = {ResultCode.REJECTED: "Declined", ResultCode.ACCEPTED: "Pending"}
_DONE_STATE = {Operation.CHARGE: "Charged", Operation.PRE_AUTH: "Authorized", Operation.CAPTURE: "Captured",
               Operation.VOID: "Voided", Operation.REFUND: "Refunded", Operation.TOKENIZE: "Tokenized"}


@dataclass(frozen=True)
class Refusal:
    """Why the ledger refuses an operation: a ``rejectReasonCode`` and a sentence."""

    reason: RejectReason
    description: str


@dataclass(frozen=True)
class OperationEntry:
    """A later operation on a transaction (capture, void, refund), in its history."""

    operation: Operation
    reference: str
    amount: Decimal
    result_code: ResultCode
    time: datetime

    def to_json(self) -> JsonObject:
        return {"operation": self.operation.value, "reference": self.reference, "amount": float(self.amount),
                "resultCode": self.result_code.value, "time": isoformat(self.time)}


@dataclass
class Transaction:
    """One operation a gateway processed. ``card_number`` stays in memory (scenario rules
    of later operations match on it) and never leaves payemu: :meth:`to_json` masks it."""

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
    operations: list[OperationEntry] = field(default_factory=list)
    busy: Operation | None = None  # the operation in progress at the gateway
    clock: Clock | None = field(default=None, repr=False, compare=False)  # the tenant's

    def settle(self, now: datetime) -> None:
        """An Accepted operation takes its scenario's final result once its time has come."""
        if (self.result_code == ResultCode.ACCEPTED and self.settles_to and self.settle_at is not None
                and now >= self.settle_at):
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
        """Authorized, Captured, Charged, PartiallyRefunded, Refunded, Voided, Expired,
        Pending, Declined or Failed."""
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


@dataclass(frozen=True)
class GatewayToken:
    """A token a gateway minted for a card (tokenize, or ``generateToken``)."""

    token: str
    gateway: str
    account: str | None
    card_number: str | None
    created_at: datetime

    def __repr__(self) -> str:  # keep the card number out of debug output
        return f"GatewayToken(token={self.token!r}, gateway={self.gateway!r})"


class Ledger(Mapping[str, Transaction]):
    """A tenant's transactions by ``gatewayReference`` (oldest first) and the gateway
    tokens it was given."""

    def __init__(self) -> None:
        self._transactions: dict[str, Transaction] = {}
        self._tokens: dict[str, GatewayToken] = {}

    def __getitem__(self, reference: str) -> Transaction:
        return self._transactions[reference]

    def __iter__(self) -> Iterator[str]:
        return iter(self._transactions)

    def __len__(self) -> int:
        return len(self._transactions)

    def add(self, tx: Transaction) -> None:
        self._transactions[tx.reference] = tx

    def transactions(self) -> list[Transaction]:
        """Every transaction, oldest first."""
        return list(self._transactions.values())

    def find(self, reference: str | None = None, my_ref: str | None = None) -> Transaction | None:
        """By ``gatewayReference``; else the most recent charge or authorization with ``myRef``."""
        if reference:
            return self._transactions.get(reference)
        if my_ref:
            for tx in reversed(self._transactions.values()):
                if tx.my_ref == my_ref and tx.operation in ORIGINALS:
                    return tx
        return None

    def remember_token(self, token: GatewayToken) -> None:
        self._tokens[token.token] = token

    def token(self, user_token: str) -> GatewayToken | None:
        return self._tokens.get(user_token)

    def gateway_tokens(self) -> list[GatewayToken]:
        """Every gateway token, oldest first."""
        return list(self._tokens.values())


# -- recording ---------------------------------------------------------------------------
def record(
    tenant: Tenant,
    result: OperationResult,
    *,
    account: str | None,
    card_number: str | None,
    my_ref: str | None,
    authorization_days: int,
    parent: Transaction | None = None,
    attempt_number: int = 1,
    settles_to: str | None = None,
    settle_after_seconds: float | None = None,
) -> Transaction:
    """Record one attempt's OperationResult as a transaction (and, for an operation on an
    earlier one, apply it there when it succeeded)."""
    now = tenant.now()
    operation = result.operation
    code = result.code
    if result.gateway_reference is None or result.gateway_name is None:
        raise ValueError("only an attempt that reached a gateway is a transaction")
    tx = Transaction(
        reference=result.gateway_reference,
        operation=operation,
        gateway=result.gateway_name,
        account=account,
        amount=result.money.amount,
        currency=result.money.currency,
        result_code=code,
        reject_reason=result.reject_reason,
        created_at=now,
        my_ref=my_ref,
        card_number=card_number,
        authorization_code=result.authorization_code,
        parent=parent.reference if parent else None,
        attempt_number=attempt_number,
        attempts=attempt_number,
        clock=tenant.clock,
    )
    if operation == Operation.PRE_AUTH:
        tx.expires_at = now + timedelta(days=authorization_days)
    if code == ResultCode.ACCEPTED and settles_to:
        tx.settles_to = settles_to
        tx.settle_at = now + timedelta(seconds=settle_after_seconds or 0)
    tenant.ledger.add(tx)
    if parent is not None:
        parent.operations.append(OperationEntry(operation, tx.reference, tx.amount, code, now))
        if result.successful:
            _apply(parent, tx)
    return tx


def _apply(parent: Transaction, tx: Transaction) -> None:
    if tx.operation == Operation.CAPTURE:
        parent.captured_by = tx.reference
        parent.captured_amount = tx.amount
    elif tx.operation == Operation.VOID:
        parent.voided_by = tx.reference
    elif tx.operation == Operation.REFUND:
        parent.refunded_amount += tx.amount


def remember_token(tenant: Tenant, token: str, gateway: str, account: str | None, card_number: str | None) -> None:
    """Keep a token a gateway minted (a later payment's ``userToken``)."""
    tenant.ledger.remember_token(GatewayToken(token, gateway, account, card_number, tenant.now()))


# -- the rules ---------------------------------------------------------------------------
def check(
    tx: Transaction, operation: Operation, gateway: str, currency: str | None, amount: Decimal, now: datetime
) -> Refusal | None:
    """Why ``operation`` (Capture, Void, Refund, Status) may not refer to ``tx`` through
    ``gateway``, or None when it may. Settles a due Accepted transaction first."""
    tx.settle(now)
    if tx.gateway.lower() != gateway.lower():
        return Refusal(
            RejectReason.GATEWAY_MISMATCH,
            f"Transaction {tx.reference} was processed by {tx.gateway}, not {gateway}; use an account of {tx.gateway}.",
        )
    allowed = _ORIGINALS[operation]
    if tx.operation not in allowed:
        kinds = " or ".join(_NOUN[o] for o in allowed)
        return Refusal(
            RejectReason.OPERATION_NOT_ALLOWED,
            f"{operation} refers to {kinds}; {tx.reference} is {_NOUN[tx.operation]}.",
        )
    if operation == Operation.STATUS:
        return None
    if currency is not None and currency != tx.currency:
        return Refusal(
            RejectReason.CURRENCY_MISMATCH, f"Transaction {tx.reference} is in {tx.currency}, not {currency}."
        )
    if not tx.successful:
        pending = " (still pending)" if tx.result_code == ResultCode.ACCEPTED else ""
        return Refusal(
            RejectReason.OPERATION_NOT_ALLOWED,
            f"Transaction {tx.reference} did not succeed ({tx.result_code}{pending}); "
            f"there is nothing to {operation.lower()}.",
        )
    if tx.voided_by:
        return Refusal(RejectReason.ALREADY_VOIDED, f"Transaction {tx.reference} was voided by {tx.voided_by}.")
    refusal = _RULES[operation](tx, amount, now)
    if refusal is None and tx.busy:
        refusal = Refusal(
            RejectReason.OPERATION_IN_PROGRESS,
            f"A {tx.busy} of transaction {tx.reference} is in progress; retry when it has completed.",
        )
    return refusal


def _capture(tx: Transaction, amount: Decimal, now: datetime) -> Refusal | None:
    if tx.captured_by:
        return Refusal(
            RejectReason.ALREADY_CAPTURED, f"Authorization {tx.reference} was already captured by {tx.captured_by}."
        )
    if tx.expired(now):
        assert tx.expires_at is not None
        return Refusal(
            RejectReason.AUTHORIZATION_EXPIRED,
            f"Authorization {tx.reference} expired at {isoformat(tx.expires_at)}; authorize again.",
        )
    limit = tx.money.times(CAPTURE_TOLERANCE).rounded().amount
    if amount > limit:
        return Refusal(
            RejectReason.AMOUNT_EXCEEDED,
            f"Capture of {text(amount)} is above {text(limit)} (115 % of the authorized {text(tx.amount)}).",
        )
    return None


def _void(tx: Transaction, amount: Decimal, now: datetime) -> Refusal | None:
    if tx.captured_by:
        return Refusal(
            RejectReason.ALREADY_CAPTURED,
            f"Authorization {tx.reference} was captured by {tx.captured_by}; refund the capture instead.",
        )
    if tx.refunded_amount > ZERO:
        return Refusal(
            RejectReason.ALREADY_REFUNDED, f"Charge {tx.reference} was already refunded; it cannot be voided."
        )
    return None


def _refund(tx: Transaction, amount: Decimal, now: datetime) -> Refusal | None:
    remaining = tx.amount - tx.refunded_amount
    if remaining <= ZERO:
        return Refusal(RejectReason.ALREADY_REFUNDED, f"Transaction {tx.reference} is already refunded in full.")
    if amount > remaining:
        return Refusal(
            RejectReason.AMOUNT_EXCEEDED,
            f"Refund of {text(amount)} is above the {float(remaining):g} left to refund of {tx.reference} "
            f"({float(tx.amount):g}).",
        )
    return None


_RULES = {Operation.CAPTURE: _capture, Operation.VOID: _void, Operation.REFUND: _refund}
_NOUN = {Operation.CHARGE: "a charge", Operation.PRE_AUTH: "an authorization", Operation.CAPTURE: "a capture",
         Operation.VOID: "a void", Operation.REFUND: "a refund", Operation.TOKENIZE: "a tokenization"}


def reserve(tx: Transaction, operation: Operation) -> None:
    """Mark ``tx`` as having ``operation`` at the gateway. Call right after :func:`check`
    returned None, with no ``await`` in between."""
    tx.busy = operation


def release(tx: Transaction) -> None:
    tx.busy = None
