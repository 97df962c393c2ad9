"""The ledger's rules: which later operation a transaction allows, within its gateway's
limits (capture amount, refund window), and the reservation that keeps two concurrent
requests on one transaction from both succeeding."""

from __future__ import annotations

from datetime import datetime, timedelta
from decimal import Decimal

from emulator.domain.clock import isoformat
from emulator.domain.model import ZERO, text
from emulator.domain.records import dataclass
from emulator.domain.vocabulary import Operation, RejectReason, ResultCode
from emulator.stores.ledger import _ORIGINALS, Transaction

# A capture may exceed the authorized amount (estimate authorized, actual captured) by
# up to 15 % where the gateway documents no limit, as card schemes tolerate for tips and
# fuel; refunds never exceed the original.
CAPTURE_TOLERANCE = Decimal("1.15")


@dataclass(frozen=True)
class RuleLimits:
    """What the gateway allows beyond the ledger's own rules: how much a capture may take
    of its authorization (a multiple), and after how many days a refund is refused."""

    capture: Decimal = CAPTURE_TOLERANCE
    refund_days: int | None = None


ANY = RuleLimits()


@dataclass(frozen=True)
class Refusal:
    """Why a rule refused an operation: the reason code and the message the answer gives."""

    reason: RejectReason
    description: str


# -- the rules ---------------------------------------------------------------------------
def check(
    tx: Transaction,
    operation: Operation,
    gateway: str,
    currency: str | None,
    amount: Decimal,
    now: datetime,
    limits: RuleLimits = ANY,
) -> Refusal | None:
    """Why ``operation`` may not refer to ``tx`` through ``gateway`` (whose ``limits`` apply),
    or None (settles first)."""
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
    refusal = _RULES[operation](tx, amount, now, limits)
    if refusal is None and tx.busy:
        refusal = Refusal(
            RejectReason.OPERATION_IN_PROGRESS,
            f"A {tx.busy} of transaction {tx.reference} is in progress; retry when it has completed.",
        )
    return refusal


def _capture(tx: Transaction, amount: Decimal, now: datetime, limits: RuleLimits) -> Refusal | None:
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
    limit = tx.money.times(limits.capture).rounded().amount
    if amount > limit:
        share = f"{float(limits.capture) * 100:g} % of" if limits.capture != 1 else "the"
        return Refusal(
            RejectReason.AMOUNT_EXCEEDED,
            f"Capture of {text(amount)} is above {text(limit)} ({share} authorized {text(tx.amount)}).",
        )
    return None


def _void(tx: Transaction, amount: Decimal, now: datetime, limits: RuleLimits) -> Refusal | None:
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


def _refund(tx: Transaction, amount: Decimal, now: datetime, limits: RuleLimits) -> Refusal | None:
    if limits.refund_days is not None and now - tx.created_at > timedelta(days=limits.refund_days):
        return Refusal(
            RejectReason.OPERATION_NOT_ALLOWED,
            f"Transaction {tx.reference} is more than {limits.refund_days} days old; it can no longer be refunded.",
        )
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
_NOUN = {
    Operation.CHARGE: "a charge",
    Operation.PRE_AUTH: "an authorization",
    Operation.CAPTURE: "a capture",
    Operation.VOID: "a void",
    Operation.REFUND: "a refund",
    Operation.TOKENIZE: "a tokenization",
}


def reserve(tx: Transaction, operation: Operation) -> None:
    """Mark ``tx`` as busy with ``operation``: right after :func:`check`, with no ``await`` between."""
    tx.busy = operation


def release(tx: Transaction) -> None:
    tx.busy = None
