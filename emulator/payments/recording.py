"""Recording a gateway attempt in a tenant's ledger (and what it does to an earlier
transaction), and keeping the gateway tokens a gateway minted.

:func:`record` makes the attempt a :class:`~emulator.payments.ledger.Transaction`: a
capture, void or refund lands in the history of the transaction it refers to, and
changes it when it succeeded. :func:`record_attempt` is the engine's way in: it needs only
the time of the recording, so a plain attempt that no later operation can change by
itself (a charge, a decline, a tokenize, a follow-up's own record aside) goes into the
ledger packed, without a Transaction object on the way (:func:`packing.pack_new`).
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Protocol

from emulator.payments import budget as weights
from emulator.payments import packing
from emulator.payments.clock import Clock
from emulator.payments.ledger import GatewayToken, Ledger, OperationEntry, Transaction
from emulator.payments.model import OperationResult
from emulator.payments.transaction import weight_of_texts
from emulator.vocabulary import Operation, ResultCode

__all__ = ["Holder", "record", "record_attempt", "remember_token"]


class Holder(Protocol):
    """What :func:`record` and :func:`remember_token` need of a tenant: its ledger and clock."""

    ledger: Ledger
    clock: Clock

    def now(self) -> datetime: ...


def record(
    tenant: Holder,
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
    earlier one, apply it there when it succeeded); the transaction is returned (a
    finished one as it was recorded: the ledger keeps it packed, see :meth:`Ledger.add`)."""
    now = tenant.now()
    operation = result.operation
    code = result.code
    if result.gateway_reference is None or result.gateway_name is None:
        raise ValueError("only an attempt that reached a gateway is a transaction")
    money = result.money
    tx = Transaction(  # positional: in the field order
        result.gateway_reference,
        operation,
        result.gateway_name,
        account,
        money.amount,
        money.currency,
        code,
        result.reject_reason,
        now,
        my_ref,
        card_number,
        result.authorization_code,
        parent.reference if parent else None,
        attempt_number,
        attempt_number,  # attempts
        clock=tenant.clock,
    )
    if operation == Operation.PRE_AUTH:
        tx.expires_at = now + timedelta(days=authorization_days)
    if code == ResultCode.ACCEPTED and settles_to:
        tx.settles_to = settles_to
        tx.settle_at = now + timedelta(seconds=settle_after_seconds or 0)
    ledger = tenant.ledger
    tx.weight = weight = tx.weight_of()
    if parent is not None:
        weight += weights.OPERATION  # the entry in the parent's history
    ledger.admit(now, weight)  # hardening: drops journal entries, the oldest finished transactions, or a 507
    ledger.add(tx)
    if parent is not None:
        parent = ledger.find(parent.reference) or parent  # the ledger's own (add() may have packed it)
        parent.operations = (*parent.operations, OperationEntry(operation, tx.reference, tx.amount, code, now))
        ledger.grow(parent, weights.OPERATION)
        if result.successful:
            _apply(parent, tx)
    return tx


def record_attempt(
    tenant: Holder,
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
) -> datetime:
    """:func:`record`, for the engine: the time the attempt was recorded. A plain attempt
    (a first attempt on no earlier transaction, neither an authorization nor pending: what
    :func:`packing.may_be_open` says is finished, with every field :func:`packing.pack`
    leaves out at its default) is packed straight from the result."""
    operation, code, reference = result.operation, result.code, result.gateway_reference
    if (
        parent is not None
        or attempt_number != 1
        or code == ResultCode.ACCEPTED
        or operation == Operation.PRE_AUTH
        or reference is None
        or result.gateway_name is None
    ):
        return record(
            tenant,
            result,
            account=account,
            card_number=card_number,
            my_ref=my_ref,
            authorization_days=authorization_days,
            parent=parent,
            attempt_number=attempt_number,
            settles_to=settles_to,
            settle_after_seconds=settle_after_seconds,
        ).created_at
    now = tenant.now()
    approval = result.authorization_code
    weight = weight_of_texts(reference, card_number, approval, my_ref)
    ledger = tenant.ledger
    ledger.admit(now, weight)  # hardening: drops journal entries, the oldest finished transactions, or a 507
    money = result.money
    packed = packing.pack_new(
        reference,
        operation,
        result.gateway_name,
        account,
        money.amount,
        money.currency,
        code,
        result.reject_reason,
        now,
        my_ref,
        card_number,
        approval,
        weight,
    )
    ledger.add_packed(reference, packed, weight)
    return now


def _apply(parent: Transaction, tx: Transaction) -> None:
    if tx.operation == Operation.CAPTURE:
        parent.captured_by = tx.reference
        parent.captured_amount = tx.amount
    elif tx.operation == Operation.VOID:
        parent.voided_by = tx.reference
    elif tx.operation == Operation.REFUND:
        parent.refunded_amount += tx.amount


def remember_token(tenant: Holder, token: str, gateway: str, account: str | None, card_number: str | None) -> None:
    """Keep a token a gateway minted (a later payment's ``userToken``)."""
    tenant.ledger.remember_token(GatewayToken(token, gateway, account, card_number, tenant.now()))
