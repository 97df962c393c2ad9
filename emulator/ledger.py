"""The ledger: every gateway transaction of a tenant, and the rules that relate them.

``tenant.transactions`` maps each ``gatewayReference`` to a :class:`Transaction`: every
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
payments) are kept in ``tenant.gateway_tokens`` as :class:`GatewayToken`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from emulator import limits  # hardening: memory limits (emulator.limits)
from emulator.clock import Clock, isoformat
from emulator.masking import mask_pan

if TYPE_CHECKING:
    from emulator.tenants import Tenant

# A capture may exceed the authorized amount (estimate authorized, actual captured) by
# up to 15 %, as card schemes tolerate for tips and fuel; refunds never exceed the original.
CAPTURE_TOLERANCE = 1.15
_CENT = 1e-9
_ORIGINALS = {"Capture": ("PreAuth",), "Void": ("Charge", "PreAuth"), "Refund": ("Charge", "Capture"),
              "Status": ("Charge", "PreAuth")}
_FAILED_STATE = {"Rejected": "Declined", "Accepted": "Pending"}
_DONE_STATE = {"Charge": "Charged", "PreAuth": "Authorized", "Capture": "Captured", "Void": "Voided",
               "Refund": "Refunded", "Tokenize": "Tokenized"}


@dataclass(frozen=True)
class Refusal:
    """Why the ledger refuses an operation: a ``rejectReasonCode`` and a sentence."""

    reason: str
    description: str


@dataclass
class Transaction:
    """One operation a gateway processed. ``card_number`` stays in memory (scenario rules
    of later operations match on it) and never leaves payemu: :meth:`to_json` masks it."""

    reference: str
    operation: str  # Charge, PreAuth, Capture, Void, Refund
    gateway: str
    account: str | None
    amount: float
    currency: str
    result_code: str
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
    captured_amount: float = 0.0
    refunded_amount: float = 0.0
    captured_by: str | None = None
    voided_by: str | None = None
    operations: list[dict[str, Any]] = field(default_factory=list)
    busy: str | None = None  # the operation in progress at the gateway
    clock: Clock | None = field(default=None, repr=False, compare=False)  # the tenant's

    def settle(self, now: datetime) -> None:
        """An Accepted operation takes its scenario's final result once its time has come."""
        if self.result_code == "Accepted" and self.settles_to and self.settle_at is not None and now >= self.settle_at:
            self.result_code = self.settles_to
            self.reject_reason = "CardDeclined" if self.settles_to == "Rejected" else None
            self.settles_to = None

    @property
    def successful(self) -> bool:
        return self.result_code == "Success"

    def expired(self, now: datetime) -> bool:
        return self.expires_at is not None and now > self.expires_at

    def state(self, now: datetime) -> str:
        """Authorized, Captured, Charged, PartiallyRefunded, Refunded, Voided, Expired,
        Pending, Declined or Failed."""
        self.settle(now)
        if self.result_code != "Success":
            return _FAILED_STATE.get(self.result_code, "Failed")
        if self.voided_by:
            return "Voided"
        if self.operation == "PreAuth":
            if self.captured_by:
                return "Captured"
            return "Expired" if self.expired(now) else "Authorized"
        if self.operation in ("Charge", "Capture") and self.refunded_amount > _CENT:
            return "Refunded" if self.refunded_amount >= self.amount - _CENT else "PartiallyRefunded"
        return _DONE_STATE.get(self.operation, "Completed")

    def to_json(self, now: datetime | None = None) -> dict[str, Any]:
        """The transaction for the control API and the dashboard (card masked, no CVV)."""
        now = now or (self.clock.now() if self.clock else self.created_at)
        number = self.card_number
        return {
            "reference": self.reference,
            "operation": self.operation,
            "gateway": self.gateway,
            "account": self.account,
            "amount": self.amount,
            "currency": self.currency,
            "state": self.state(now),
            "resultCode": self.result_code,
            "rejectReasonCode": self.reject_reason,
            "createdAt": isoformat(self.created_at),
            "expiresAt": isoformat(self.expires_at) if self.expires_at else None,
            "myRef": self.my_ref,
            "cardMasked": mask_pan(number) if number else None,
            "parent": self.parent,
            "capturedAmount": self.captured_amount,
            "refundedAmount": self.refunded_amount,
            "operations": list(self.operations),
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


# -- recording ---------------------------------------------------------------------------
def record(
    tenant: Tenant,
    result: dict[str, Any],
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
    operation = result["operationType"]
    code = result["operationResultCode"]
    tx = Transaction(
        reference=result["gatewayReference"],
        operation=operation,
        gateway=result["gatewayName"],
        account=account,
        amount=result["amount"],
        currency=result["currency"],
        result_code=code,
        reject_reason=result["rejectReasonCode"],
        created_at=now,
        my_ref=my_ref,
        card_number=card_number,
        authorization_code=result["authorizationCode"],
        parent=parent.reference if parent else None,
        attempt_number=attempt_number,
        attempts=attempt_number,
        clock=tenant.clock,
    )
    if operation == "PreAuth":
        tx.expires_at = now + timedelta(days=authorization_days)
    if code == "Accepted" and settles_to:
        tx.settles_to = settles_to
        tx.settle_at = now + timedelta(seconds=settle_after_seconds or 0)
    limits.admit_transaction(tenant)  # hardening: drops the oldest finished transaction or raises a 507
    tenant.transactions[tx.reference] = tx
    if parent is not None:
        parent.operations.append(
            {"operation": operation, "reference": tx.reference, "amount": tx.amount, "resultCode": code,
             "time": isoformat(now)}
        )
        if code in ("Success", "Accepted"):
            _apply(parent, tx)
    return tx


def _apply(parent: Transaction, tx: Transaction) -> None:
    if tx.operation == "Capture":
        parent.captured_by = tx.reference
        parent.captured_amount = tx.amount
    elif tx.operation == "Void":
        parent.voided_by = tx.reference
    elif tx.operation == "Refund":
        parent.refunded_amount = round(parent.refunded_amount + tx.amount, 9)


def remember_token(tenant: Tenant, token: str, gateway: str, account: str | None, card_number: str | None) -> None:
    limits.admit_gateway_token(tenant)  # hardening: drops the oldest gateway token at the limit
    tenant.gateway_tokens[token] = GatewayToken(token, gateway, account, card_number, tenant.now())


def find(tenant: Tenant, reference: str | None = None, my_ref: str | None = None) -> Transaction | None:
    """By ``gatewayReference``; else the most recent charge or authorization with ``myRef``."""
    if reference:
        return tenant.transactions.get(reference)
    if my_ref:
        for tx in reversed(list(tenant.transactions.values())):
            if tx.my_ref == my_ref and tx.operation in ("Charge", "PreAuth"):
                return tx
    return None


# -- the rules ---------------------------------------------------------------------------
def check(
    tx: Transaction, operation: str, gateway: str, currency: str | None, amount: float, now: datetime
) -> Refusal | None:
    """Why ``operation`` (Capture, Void, Refund, Status) may not refer to ``tx`` through
    ``gateway``, or None when it may. Settles a due Accepted transaction first."""
    tx.settle(now)
    if tx.gateway.lower() != gateway.lower():
        return Refusal(
            "GatewayMismatch",
            f"Transaction {tx.reference} was processed by {tx.gateway}, not {gateway}; use an account of {tx.gateway}.",
        )
    allowed = _ORIGINALS[operation]
    if tx.operation not in allowed:
        kinds = " or ".join(_NOUN[o] for o in allowed)
        return Refusal(
            "OperationNotAllowed",
            f"{operation} refers to {kinds}; {tx.reference} is {_NOUN[tx.operation]}.",
        )
    if operation == "Status":
        return None
    if currency is not None and currency != tx.currency:
        return Refusal("CurrencyMismatch", f"Transaction {tx.reference} is in {tx.currency}, not {currency}.")
    if not tx.successful:
        pending = " (still pending)" if tx.result_code == "Accepted" else ""
        return Refusal(
            "OperationNotAllowed",
            f"Transaction {tx.reference} did not succeed ({tx.result_code}{pending}); "
            f"there is nothing to {operation.lower()}.",
        )
    if tx.voided_by:
        return Refusal("AlreadyVoided", f"Transaction {tx.reference} was voided by {tx.voided_by}.")
    refusal = _RULES[operation](tx, amount, now)
    if refusal is None and tx.busy:
        refusal = Refusal(
            "OperationInProgress",
            f"A {tx.busy} of transaction {tx.reference} is in progress; retry when it has completed.",
        )
    return refusal


def _capture(tx: Transaction, amount: float, now: datetime) -> Refusal | None:
    if tx.captured_by:
        return Refusal("AlreadyCaptured", f"Authorization {tx.reference} was already captured by {tx.captured_by}.")
    if tx.expired(now):
        assert tx.expires_at is not None
        return Refusal(
            "AuthorizationExpired",
            f"Authorization {tx.reference} expired at {isoformat(tx.expires_at)}; authorize again.",
        )
    limit = round(tx.amount * CAPTURE_TOLERANCE, 2)
    if amount > limit + _CENT:
        return Refusal(
            "AmountExceeded",
            f"Capture of {amount} is above {limit} (115 % of the authorized {tx.amount}).",
        )
    return None


def _void(tx: Transaction, amount: float, now: datetime) -> Refusal | None:
    if tx.captured_by:
        return Refusal(
            "AlreadyCaptured",
            f"Authorization {tx.reference} was captured by {tx.captured_by}; refund the capture instead.",
        )
    if tx.refunded_amount > _CENT:
        return Refusal("AlreadyRefunded", f"Charge {tx.reference} was already refunded; it cannot be voided.")
    return None


def _refund(tx: Transaction, amount: float, now: datetime) -> Refusal | None:
    remaining = round(tx.amount - tx.refunded_amount, 9)
    if remaining <= _CENT:
        return Refusal("AlreadyRefunded", f"Transaction {tx.reference} is already refunded in full.")
    if amount > remaining + _CENT:
        return Refusal(
            "AmountExceeded",
            f"Refund of {amount} is above the {remaining:g} left to refund of {tx.reference} ({tx.amount:g}).",
        )
    return None


_RULES = {"Capture": _capture, "Void": _void, "Refund": _refund}
_NOUN = {"Charge": "a charge", "PreAuth": "an authorization", "Capture": "a capture", "Void": "a void",
         "Refund": "a refund", "Tokenize": "a tokenization"}


def reserve(tx: Transaction, operation: str) -> None:
    """Mark ``tx`` as having ``operation`` at the gateway. Call right after :func:`check`
    returned None, with no ``await`` in between."""
    tx.busy = operation


def release(tx: Transaction) -> None:
    tx.busy = None
