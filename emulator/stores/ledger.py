"""The ledger: every gateway transaction of a tenant, and its gateway tokens.

Every attempt that reached a gateway is a :class:`Transaction` under its
``gatewayReference`` (declines too, so status can report them); what may follow what is
:mod:`emulator.stores.rules`. A finished transaction is kept packed as bytes
(:mod:`emulator.stores.packing`), which the garbage collector does not walk; only those
that may still change stay objects. :meth:`Ledger.find` unpacks one for good, other reads
get equal copies.
"""

from __future__ import annotations

from collections import OrderedDict, deque
from collections.abc import Iterator, Mapping
from datetime import datetime

from emulator.domain import budget as weights
from emulator.domain import errors
from emulator.domain.budget import Budget
from emulator.domain.clock import Clock
from emulator.domain.model import OperationResult
from emulator.domain.vocabulary import ORIGINALS, Operation
from emulator.stores import packing
from emulator.stores.transaction import GatewayToken, OperationEntry, Transaction, token_weight, weight_of_texts

__all__ = ["GatewayToken", "Ledger", "OperationEntry", "Transaction"]

MAX_TRANSACTIONS = 20_000  # per tenant by default (config: limits.transactionsPerTenant)
MAX_GATEWAY_TOKENS = 10_000  # per tenant by default (config: limits.tokensPerTenant)
RECENT = 64  # transactions per ledger kept as objects: those that may change, and those found since

_ORIGINALS: dict[Operation, tuple[Operation, ...]] = {
    Operation.CAPTURE: (Operation.PRE_AUTH,),
    Operation.VOID: (Operation.CHARGE, Operation.PRE_AUTH),
    Operation.REFUND: (Operation.CHARGE, Operation.CAPTURE),
    Operation.STATUS: (Operation.CHARGE, Operation.PRE_AUTH),
}
_OPEN_STATES = frozenset({"Authorized", "Pending"})  # a capture, void or settlement may still come


class Ledger(Mapping[str, Transaction]):
    """A tenant's transactions by ``gatewayReference`` (oldest first) and its gateway
    tokens: at most ``limit`` transactions (the oldest finished one makes room; none
    finished is a 507) and ``token_limit`` gateway tokens (the oldest is forgotten)."""

    def __init__(
        self,
        limit: int = MAX_TRANSACTIONS,
        token_limit: int = MAX_GATEWAY_TOKENS,
        budget: Budget | None = None,
        clock: Clock | None = None,
    ) -> None:
        # by age (bytes: packed); an OrderedDict keeps dropping the oldest O(1) (a dict leaves holes)
        self._transactions: OrderedDict[str, Transaction | bytes] = OrderedDict()
        self._recent: deque[str] = deque()  # references of the objects among them, oldest first
        self.holds = self._transactions.__contains__  # ``reference in ledger`` without a Python call
        # the tenant's (a packed transaction's, when unpacked); a ledger made without one
        # takes that of the first transaction added with a clock
        self.clock = clock
        self._tokens: dict[str, GatewayToken] = {}
        self.limit = limit
        self.token_limit = token_limit
        self.budget = budget or weights.unlimited()  # the tenant's, in bytes
        self.budget.sheddable(self, rank=1)  # finished transactions go after journal entries
        self.bytes = 0  # weight of every transaction and gateway token held
        # references added, changed or dropped since a --state saver last took them, oldest
        # first (None while no saver watches); see emulator.state.saver
        self.changed: dict[str, None] | None = None

    def __getitem__(self, reference: str) -> Transaction:
        """The transaction, to read: a packed one is unpacked into a copy (see :meth:`find`)."""
        return self._view(self._transactions[reference])

    def _view(self, stored: Transaction | bytes) -> Transaction:
        return packing.unpack(stored, self.clock) if type(stored) is bytes else stored  # type: ignore[return-value]

    def _live(self, reference: str) -> Transaction | None:
        """The transaction as the object the ledger keeps (a packed one is unpacked for good)."""
        stored = self._transactions.get(reference)
        if type(stored) is not bytes:
            return stored  # type: ignore[return-value]
        tx = self._transactions[reference] = packing.unpack(stored, self.clock)  # keeps its place
        self._kept(reference)
        return tx

    def _kept(self, reference: str) -> None:
        """``reference`` is now among the objects: the oldest beyond :data:`RECENT` are packed,
        but not one busy at a gateway (its request still changes it: it stays at the front,
        for the next time)."""
        recent, transactions = self._recent, self._transactions
        recent.append(reference)
        busy: list[str] | None = None
        excess = len(recent) - RECENT
        while excess > 0 and len(recent) > 1:  # one from the front each turn, never ``reference``
            oldest = recent.popleft()
            stored = transactions.get(oldest)
            if type(stored) is Transaction:
                if stored.busy is not None:
                    if busy is None:
                        busy = []
                    busy.append(oldest)
                    continue
                transactions[oldest] = packing.pack(stored)
            excess -= 1  # packed now, packed already (found twice) or dropped
        if busy:
            recent.extendleft(reversed(busy))

    def __iter__(self) -> Iterator[str]:
        return iter(self._transactions)

    def __len__(self) -> int:
        return len(self._transactions)

    def __contains__(self, reference: object) -> bool:  # Mapping's would raise and catch a KeyError
        return reference in self._transactions

    def add(self, tx: Transaction) -> None:
        """Keep ``tx`` (already admitted), charging its weight to the budget. The ledger
        packs what is finished: ``tx`` when nothing can change it any more (``tx`` is then
        not the ledger's own: change it through :meth:`find`), else it is kept as an object
        among the newest."""
        if not tx.weight:
            tx.weight = tx.weight_of()
        if tx.clock is not None:
            self.clock = tx.clock
        if tx.busy is None and not packing.may_be_open(tx):
            self._put(tx.reference, packing.pack(tx), tx.weight)
        else:
            self._put(tx.reference, tx, tx.weight)
            self._kept(tx.reference)

    def add_finished(
        self, answer: OperationResult, account: str | None, card_number: str | None, my_ref: str | None, now: datetime
    ) -> None:
        """Keep the transaction a gateway's ``answer`` is, finished as it is made (see
        :func:`~emulator.stores.packing.pack_answer`): admitted, weighed and packed at once."""
        reference = answer.gateway_reference
        assert reference is not None
        heft = weight_of_texts(reference, card_number, answer.authorization_code, my_ref)
        transactions = self._transactions
        # admitted and charged in one step while there is room (as admit() then _put())
        if len(transactions) >= self.limit or not self.budget.took(heft):
            self.admit(now, heft)  # hardening: drops journal entries, the oldest finished transactions, or a 507
            self.budget.charge(heft)
        replaced = transactions.get(reference)
        transactions[reference] = packing.pack_answer(answer, account, card_number, my_ref, now, heft)
        self.bytes += heft
        if replaced is not None:
            self._charge(-_weight(replaced))
        if self.changed is not None:
            self.changed[reference] = None

    def _put(self, reference: str, stored: Transaction | bytes, heft: int) -> None:
        transactions = self._transactions
        replaced = transactions.get(reference)
        transactions[reference] = stored
        self._charge(heft - (_weight(replaced) if replaced is not None else 0))
        if self.changed is not None:
            self.changed[reference] = None

    def _charge(self, heft: int) -> None:
        self.bytes += heft
        self.budget.charge(heft)

    def grow(self, tx: Transaction, weight: int) -> None:
        """``tx`` now holds ``weight`` more bytes (an entry in its history)."""
        if self._transactions.get(tx.reference) is tx:
            tx.weight += weight
            self._charge(weight)
            if self.changed is not None:
                self.changed[tx.reference] = None

    def settles(self, reference: str) -> bool:
        """Whether the transaction is pending a settlement (it has a ``settles_to``), read
        without unpacking it."""
        stored = self._transactions.get(reference)
        if type(stored) is bytes:
            return bool(stored[0] & packing.SETTLES)
        return stored is not None and bool(stored.settles_to)  # type: ignore[union-attr]

    def transactions(self) -> list[Transaction]:
        """Every transaction, oldest first, to read (packed ones unpacked into copies)."""
        view = self._view
        return [view(stored) for stored in self._transactions.values()]

    def find(self, reference: str | None = None, my_ref: str | None = None) -> Transaction | None:
        """By ``gatewayReference``; else the most recent charge or authorization with ``myRef``.
        The transaction found is the ledger's own object (what the engine reserves and
        changes), unpacked if it was packed."""
        if reference:
            return self._live(reference)
        if my_ref:
            key = packing.my_ref_key(my_ref)
            for found, stored in reversed(self._transactions.items()):
                if type(stored) is bytes:
                    if stored[0] & packing.ORIGINAL and stored.startswith(key, packing.MY_REF_AT):
                        return self._live(found)
                elif stored.my_ref == my_ref and stored.operation in ORIGINALS:  # type: ignore[union-attr]
                    return stored  # type: ignore[return-value]
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
        if count == 1 and self._transactions:  # a charge at the limit: the oldest, as a rule
            reference, stored = next(iter(self._transactions.items()))
            if not self._open(stored, now):
                self._drop([(reference, _weight(stored))])
                return True
        finished: list[tuple[str, int]] = []
        for item in self._finished(now):
            if len(finished) == count:
                break
            finished.append(item)
        if len(finished) < count:
            return False
        self._drop(finished)
        return True

    def _open(self, stored: Transaction | bytes, now: datetime | None) -> bool:
        """Whether a transaction may still be captured, voided or settled (authorized,
        pending, or busy at a gateway); a packed one is only unpacked when its flags say it
        may be. ``now``: the tenant's time (None: the transaction's own creation)."""
        if type(stored) is bytes:
            if not stored[0] & packing.MAY_BE_OPEN:
                return False
            stored = packing.unpack(stored, self.clock)
        tx: Transaction = stored  # type: ignore[assignment]
        return tx.busy is not None or tx.state(now or tx.created_at) in _OPEN_STATES

    def _finished(self, now: datetime | None) -> Iterator[tuple[str, int]]:
        """The reference and weight of each finished transaction, oldest first."""
        is_open = self._open
        for reference, stored in self._transactions.items():
            if not is_open(stored, now):
                yield reference, _weight(stored)

    def holds_open(self, now: datetime) -> bool:
        """True when one transaction may still be captured, voided or settled."""
        is_open = self._open
        return any(is_open(stored, now) for stored in self._transactions.values())

    def evict_finished_bytes(self, nbytes: int, now: datetime) -> bool:
        """Drop the oldest finished transactions until ``nbytes`` are freed. False,
        dropping nothing, when all the finished ones together hold less."""
        finished, freed = self._oldest_finished(nbytes, now)
        if freed < nbytes:
            return False
        self._drop(finished)
        return True

    def shed(self, nbytes: int) -> int:
        """Drop the oldest finished transactions until ``nbytes`` are freed or none is
        left (a byte budget is full); the bytes freed."""
        finished, _ = self._oldest_finished(nbytes, self.clock.now() if self.clock else None)
        before = self.bytes
        self._drop(finished)
        return before - self.bytes

    def _oldest_finished(self, nbytes: int, now: datetime | None) -> tuple[list[tuple[str, int]], int]:
        """The oldest finished transactions (reference, weight) holding ``nbytes`` or just
        more (all of them when they hold less), and the bytes they hold."""
        finished: list[tuple[str, int]] = []
        freed = 0
        for item in self._finished(now):
            if freed >= nbytes:
                break
            finished.append(item)
            freed += item[1]
        return finished, freed

    def _drop(self, found: list[tuple[str, int]]) -> None:
        """Forget each (reference, weight) of ``found``."""
        transactions = self._transactions
        for reference, _ in found:
            del transactions[reference]
        self._charge(-sum(heft for _, heft in found))
        if self.changed is not None:
            self.changed.update(dict.fromkeys(reference for reference, _ in found))


def _weight(stored: Transaction | bytes) -> int:
    return packing.weight(stored) if type(stored) is bytes else stored.weight  # type: ignore[union-attr]
