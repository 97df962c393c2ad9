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

from collections import OrderedDict
from collections.abc import Iterator, Mapping
from datetime import datetime, timedelta
from typing import Protocol

from emulator import errors
from emulator.payments import budget as weights
from emulator.payments.budget import Budget
from emulator.payments.clock import Clock
from emulator.payments.model import OperationResult
from emulator.payments.transaction import GatewayToken, OperationEntry, Transaction, token_weight
from emulator.vocabulary import ORIGINALS, Operation, ResultCode

__all__ = ["GatewayToken", "Holder", "Ledger", "OperationEntry", "Transaction", "record", "remember_token"]

MAX_TRANSACTIONS = 20_000  # per tenant by default (config: limits.transactionsPerTenant)
MAX_GATEWAY_TOKENS = 10_000  # per tenant by default (config: limits.tokensPerTenant)

_ORIGINALS: dict[Operation, tuple[Operation, ...]] = {
    Operation.CAPTURE: (Operation.PRE_AUTH,),
    Operation.VOID: (Operation.CHARGE, Operation.PRE_AUTH),
    Operation.REFUND: (Operation.CHARGE, Operation.CAPTURE),
    Operation.STATUS: (Operation.CHARGE, Operation.PRE_AUTH),
}
_OPEN_STATES = frozenset({"Authorized", "Pending"})  # a capture, void or settlement may still come


class Ledger(Mapping[str, Transaction]):
    """A tenant's transactions by ``gatewayReference`` (oldest first) and the gateway
    tokens it was given: at most ``limit`` transactions (the oldest finished one makes
    room; none finished is a 507) and ``token_limit`` gateway tokens (the oldest is
    forgotten)."""

    def __init__(
        self, limit: int = MAX_TRANSACTIONS, token_limit: int = MAX_GATEWAY_TOKENS, budget: Budget | None = None
    ) -> None:
        # ordered by age; an OrderedDict so that dropping the oldest (limits) and finding
        # the next oldest stay O(1): a plain dict leaves holes at its front to skip
        self._transactions: OrderedDict[str, Transaction] = OrderedDict()
        self._tokens: dict[str, GatewayToken] = {}
        self.limit = limit
        self.token_limit = token_limit
        self.budget = budget or weights.unlimited()  # the tenant's, in bytes
        self.budget.sheddable(self, rank=1)  # finished transactions go after journal entries
        self.bytes = 0  # weight of every transaction and gateway token held
        # references added, changed or dropped since a --state saver last took them (None
        # while no saver watches: nothing is noted); see emulator.state.saver
        self.changed: dict[str, None] | None = None  # a dict: in the order noted (oldest first)

    def __getitem__(self, reference: str) -> Transaction:
        return self._transactions[reference]

    def __iter__(self) -> Iterator[str]:
        return iter(self._transactions)

    def __len__(self) -> int:
        return len(self._transactions)

    def __contains__(self, reference: object) -> bool:  # Mapping's would raise and catch a KeyError
        return reference in self._transactions

    def add(self, tx: Transaction) -> None:
        """Keep ``tx`` (already admitted), charging its weight to the budget."""
        if not tx.weight:
            tx.weight = tx.weight_of()
        replaced = self._transactions.get(tx.reference)
        self._transactions[tx.reference] = tx
        self._charge(tx.weight - (replaced.weight if replaced else 0))
        if self.changed is not None:
            self.changed[tx.reference] = None

    def _charge(self, weight: int) -> None:
        self.bytes += weight
        self.budget.charge(weight)

    def grow(self, tx: Transaction, weight: int) -> None:
        """``tx`` now holds ``weight`` more bytes (an entry in its history)."""
        if self._transactions.get(tx.reference) is tx:
            tx.weight += weight
            self._charge(weight)
            if self.changed is not None:
                self.changed[tx.reference] = None

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
        """Keep a gateway token, forgetting the oldest ones at :attr:`token_limit` or while
        it does not fit the byte budget (a token that alone fits nowhere is kept all the
        same: it is bounded by one request)."""
        weight = token_weight(token)
        while len(self._tokens) >= self.token_limit and self.forget_oldest_token():
            pass
        while not self.budget.make_room(weight) and self.forget_oldest_token():
            pass
        replaced = self._tokens.pop(token.token, None)
        if replaced is not None:
            self._charge(-token_weight(replaced))
        self._tokens[token.token] = token
        self._charge(weight)

    def token(self, user_token: str) -> GatewayToken | None:
        return self._tokens.get(user_token)

    def gateway_tokens(self) -> list[GatewayToken]:
        """Every gateway token, oldest first."""
        return list(self._tokens.values())

    # -- bounded memory --
    def admit(self, now: datetime, weight: int = weights.TRANSACTION) -> None:
        """Make room for one more transaction of ``weight`` bytes: drop journal entries and
        then the oldest finished transactions, or raise a 507 when what is still open
        (authorized, pending or busy at a gateway) leaves no room."""
        excess = len(self._transactions) - self.limit + 1
        if excess > 0 and not self.evict_oldest_finished(excess, now):
            raise errors.limit_reached(
                "transactions",
                f"This API key holds its limit of {self.limit} transactions and all are still open "
                "(authorized, pending or in progress); capture, void or POST /_emulator/reset first.",
            )
        budget = self.budget
        if budget.fits(weight) or budget.make_room(weight):
            return
        if not self.evict_finished_bytes(budget.need(weight), now):
            raise budget.refusal("transactions", weight, "This transaction")

    @property
    def token_count(self) -> int:
        return len(self._tokens)

    def forget_oldest_token(self) -> bool:
        """Forget the oldest gateway token; False when there is none."""
        if not self._tokens:
            return False
        oldest = self._tokens.pop(next(iter(self._tokens)))
        self._charge(-token_weight(oldest))
        return True

    def evict_oldest_finished(self, count: int, now: datetime) -> bool:
        """Drop the ``count`` oldest finished transactions (not authorized, pending or busy
        at a gateway: a capture, void, refund or settlement may still need those). False,
        dropping nothing, when fewer than ``count`` are finished."""
        finished: list[str] = []
        for reference, tx in self._transactions.items():
            if len(finished) == count:
                break
            if tx.busy is None and tx.state(now) not in _OPEN_STATES:
                finished.append(reference)
        if len(finished) < count:
            return False
        self._drop(finished)
        return True

    def evict_finished_bytes(self, nbytes: int, now: datetime) -> bool:
        """Drop the oldest finished transactions until ``nbytes`` are freed. False,
        dropping nothing, when all the finished ones together hold less."""
        finished: list[str] = []
        freed = 0
        for reference, tx in self._transactions.items():
            if freed >= nbytes:
                break
            if tx.busy is None and tx.state(now) not in _OPEN_STATES:
                finished.append(reference)
                freed += tx.weight
        if freed < nbytes:
            return False
        self._drop(finished)
        return True

    def shed(self, nbytes: int) -> int:
        """Drop the oldest finished transactions until ``nbytes`` are freed or none is
        left (a byte budget is full); the bytes freed."""
        finished: list[str] = []
        freed = 0
        for reference, tx in self._transactions.items():
            if freed >= nbytes:
                break
            if tx.busy is None and tx.state(tx.clock.now() if tx.clock else tx.created_at) not in _OPEN_STATES:
                finished.append(reference)
                freed += tx.weight
        before = self.bytes
        self._drop(finished)
        return before - self.bytes

    def _drop(self, references: list[str]) -> None:
        freed = 0
        for reference in references:
            freed += self._transactions.pop(reference).weight
        self._charge(-freed)
        if self.changed is not None:
            self.changed.update(dict.fromkeys(references))


# -- recording ---------------------------------------------------------------------------
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
    earlier one, apply it there when it succeeded)."""
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
        parent.operations = (*parent.operations, OperationEntry(operation, tx.reference, tx.amount, code, now))
        ledger.grow(parent, weights.OPERATION)
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


def remember_token(tenant: Holder, token: str, gateway: str, account: str | None, card_number: str | None) -> None:
    """Keep a token a gateway minted (a later payment's ``userToken``)."""
    tenant.ledger.remember_token(GatewayToken(token, gateway, account, card_number, tenant.now()))
