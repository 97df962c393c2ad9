"""Recording a gateway attempt in a tenant's ledger (and what it does to an earlier
transaction), and keeping the gateway tokens a gateway minted.

:func:`record` is the one way in: a capture, void or refund lands in the history of the
transaction it refers to, and changes it when it succeeded; the ledger packs what is
finished (:meth:`Ledger.add`, :meth:`Ledger.add_finished`).
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Protocol

from emulator.domain import budget as weights
from emulator.domain.clock import Clock
from emulator.domain.model import OperationResult
from emulator.domain.vocabulary import ACCEPTED, CAPTURE, PRE_AUTH, REFUND, VOID
from emulator.stores.ledger import GatewayToken, Ledger, OperationEntry, Transaction

__all__ = ["RecordingHolder", "record", "remember_token"]


class RecordingHolder(Protocol):
    """What :func:`record` and :func:`remember_token` need of a tenant: its ledger and clock."""

    ledger: Ledger
    clock: Clock

    def now(self) -> datetime: ...


def record(
    tenant: RecordingHolder,
    result: OperationResult,
    account: str | None,
    card_number: str | None,
    my_ref: str | None,
    authorization_days: int,
    parent: Transaction | None = None,
    attempt_number: int = 1,
    settles_to: str | None = None,
    settle_after_seconds: float | None = None,
) -> datetime:
    """Record one attempt's OperationResult in the ledger (and, for an operation on an
    earlier transaction, apply it there when it succeeded); the time it was recorded. A
    plain attempt — the first of its request, on no earlier transaction, neither an
    authorization nor pending: finished as it is made — goes to the ledger as the answer
    itself, which the ledger packs without a Transaction object (:meth:`Ledger.add_finished`)."""
    now = tenant.clock.now()  # what tenant.now() gives, with one call less
    operation, code, reference, gateway = result.operation, result.code, result.gateway_reference, result.gateway_name
    if reference is None or gateway is None:
        raise ValueError("only an attempt that reached a gateway is a transaction")
    ledger = tenant.ledger
    if parent is None and attempt_number == 1 and code != ACCEPTED and operation != PRE_AUTH:
        ledger.add_finished(result, account, card_number, my_ref, now)
        return now
    money = result.money
    tx = Transaction(  # positional, in the field order
        reference,
        operation,
        gateway,
        account,
        money.amount,  # amount
        money.currency,  # currency
        code,  # result_code
        result.reject_reason,  # reject_reason
        now,  # created_at
        my_ref,
        card_number,
        result.authorization_code,
        parent.reference if parent else None,
        attempt_number,
        attempt_number,  # attempts
        clock=tenant.clock,
    )
    tx.weight = tx.weight_of()
    if operation == PRE_AUTH:
        tx.expires_at = now + timedelta(days=authorization_days)
    if code == ACCEPTED and settles_to:
        tx.settles_to = settles_to
        tx.settle_at = now + timedelta(seconds=settle_after_seconds or 0)
    weight = tx.weight
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
    return now


def _apply(parent: Transaction, tx: Transaction) -> None:
    if tx.operation == CAPTURE:
        parent.captured_by = tx.reference
        parent.captured_amount = tx.amount
    elif tx.operation == VOID:
        parent.voided_by = tx.reference
    elif tx.operation == REFUND:
        parent.refunded_amount += tx.amount


def remember_token(
    tenant: RecordingHolder, token: str, gateway: str, account: str | None, card_number: str | None
) -> None:
    """Keep a token a gateway minted (a later payment's ``userToken``)."""
    tenant.ledger.remember_token(GatewayToken(token, gateway, account, card_number, tenant.now()))
