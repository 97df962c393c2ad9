"""Memory budgets in bytes: what every stored thing weighs, and the budgets it is held against.

A store charges an item's weight to its tenant's :class:`Budget` (which draws on the
process's) when it keeps it and releases it when it lets it go. Weights are estimated
without walking the item: a fixed overhead per kind (``tests/domain/test_budget.py``) plus the
sizes of its strings."""

from __future__ import annotations

import sys
import time
import weakref
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, Protocol

from emulator.domain import errors

MIB = 1024 * 1024
UNLIMITED = 1 << 62
# fixed overheads (bytes) of one stored item, besides its variable strings
TRANSACTION = 600  # a slotted Transaction, its Decimal amounts, datetimes and ledger slot
OPERATION = 260  # one entry of a transaction's history (capture, void, refund)
GATEWAY_TOKEN = 320
STRING_TOKEN = 260  # a StringToken, its token string and vault slot
SESSION = 1200  # a Session, its dicts and index entry (its request is weighed by weigh())
SESSION_RESULT = 900
RULE = 2000  # a compiled rule (its expanded YAML is weighed by the loader)
ACCOUNT = 700  # a stored gateway account, its list, creation time and store slot
CREDENTIAL = 120  # one credential pair of a stored account (its value is weighed apart)
CERTIFICATE = 120  # a certificate name's slot in its tenant's set (the name apart)
# An interface document (PUT /_emulator/interface): room for INTERFACE_FACTOR bytes per byte
# of its text is made before it is parsed (orjson's build of a 1 MB document peaks near 12 MB;
# YAML's at YAML_VALUE per value); once parsed it weighs INTERFACE_PER_BYTE times what the
# parsed document holds (weigh()) plus INTERFACE_PER_VALUE per schema value its validators
# compile (SchemaCompiler.footprint), taken before they are built. Measured retained/peak
# per document shape: at most 3.7 times the parsed document, 380 bytes per compiled value.
INTERFACE_FACTOR = 12
YAML_VALUE = 400  # PyYAML's build of one value, at its peak (about 350 bytes measured)
INTERFACE_PER_BYTE = 4
INTERFACE_PER_VALUE = 450
RANKS = (0, 1)  # what goes first at a full budget: journal entries (0), then finished transactions (1)
# At the process's budget a search sorts every tenant by size. The order it finds serves until
# SHED_AT_LEAST bytes have gone by it, freed SHED_SLICE at a time: one request that frees a
# whole MiB of transactions at once holds the event loop for about 1.5 ms.
SHED_AT_LEAST = 1 * MIB
SHED_SLICE = 64 * 1024  # freed by one request at the process's budget, beyond what it needs
BARREN_SECONDS = 1.0  # after a search that freed nothing, the next one waits this long (a 507 meanwhile)


if TYPE_CHECKING:  # a type for the checker only (no class made at run time)

    class Sheddable(Protocol):
        """A store whose oldest items may be dropped for anyone's sake."""

        def shed(self, nbytes: int) -> int:
            """Drop the oldest items until ``nbytes`` are freed; the bytes freed."""
            ...


def text(value: str | bytes | None) -> int:
    """The bytes a string costs (0 for None), in constant time."""
    return 0 if value is None else sys.getsizeof(value)


def weigh(value: Any, limit: int = UNLIMITED) -> int:
    """The bytes a JSON-like value holds, walked once, up to ``limit``; off the charge path."""
    total = 0
    stack = [value]
    while stack and total <= limit:
        item = stack.pop()
        total += sys.getsizeof(item)
        if isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list | tuple):
            stack.extend(item)
    return total


class Budget:
    """Bytes held against ``limit``, also charged to the ``parent`` budget (the process's)."""

    def __init__(self, limit: int, name: str, key: str, parent: Budget | None = None) -> None:
        self.limit = limit
        self.name = name  # what the budget is of, for the 507 message
        self.key = key  # its config key under limits:
        self.used = 0
        self.parent: Budget | None = None
        self._line: tuple[Budget, ...] = (self,)  # this budget and every one it draws on (chain())
        self._sheddable: list[tuple[int, Sheddable]] = []
        self._children: weakref.WeakSet[Budget] = weakref.WeakSet()
        self._barren_until: dict[int, float] = {}  # rank → when a search may run again
        self._plans: dict[int, _BudgetPlan] = {}  # rank → the last search's order of the children, while it serves
        if parent is not None:
            self.attach(parent)

    def __repr__(self) -> str:
        return f"Budget({self.name}: {self.used}/{self.limit} bytes)"

    def chain(self) -> Iterable[Budget]:
        return self._line

    def fits(self, weight: int) -> bool:
        for budget in self._line:  # noqa: SIM110 (a loop: all() over a generator costs more)
            if budget.used + weight > budget.limit:
                return False
        return True

    def need(self, weight: int) -> int:
        """The bytes to free before ``weight`` more fit."""
        return max(0, max(budget.used + weight - budget.limit for budget in self.chain()))

    def charge(self, weight: int) -> None:
        for budget in self._line:
            budget.used += weight

    def took(self, weight: int) -> bool:
        """Charge ``weight`` if it fits (``fits(weight)``, then ``charge(weight)``); whether it did."""
        line = self._line
        for budget in line:
            if budget.used + weight > budget.limit:
                return False
        for budget in line:
            budget.used += weight
        return True

    def charged(self, weight: int) -> bool:
        """Charge ``weight``; whether this budget and every one it draws on still hold (``fits(0)``)."""
        holds = True
        for budget in self._line:
            budget.used += weight
            if budget.used > budget.limit:
                holds = False
        return holds

    def release(self, weight: int) -> None:
        for budget in self._line:
            budget.used -= weight

    # -- making room --
    def sheddable(self, store: Sheddable, rank: int = 0) -> None:
        """Register a store to shed: rank 0 (journal entries) before rank 1 (finished transactions)."""
        self._sheddable.append((rank, store))

    def make_room(self, weight: int) -> bool:
        """Shed until ``weight`` more bytes fit (the process's budget: the largest tenant first)."""
        if self.fits(weight):
            return True
        now = time.monotonic()
        for rank in RANKS:
            for budget in self.chain():
                if budget._barren_until.get(rank, 0.0) > now:
                    continue  # nothing could go a moment ago: no new search on every request
                while budget.used + weight > budget.limit:
                    need = budget.used + weight - budget.limit
                    if budget.parent is None:
                        need = max(need, SHED_SLICE)  # the process's: room for the next few too
                    if not budget._shed(need, rank):
                        budget._barren_until[rank] = now + BARREN_SECONDS
                        break
            if self.fits(weight):
                return True
        return False

    def _shed(self, nbytes: int, rank: int) -> int:
        freed = 0
        for store_rank, store in self._sheddable:
            if store_rank == rank:
                freed += store.shed(nbytes - freed)
                if freed >= nbytes:
                    return freed
        if self._children:
            freed += self._shed_children(nbytes - freed, rank)
        return freed

    def _shed_children(self, nbytes: int, rank: int) -> int:
        """Free ``nbytes`` from the tenants, the largest first (see :data:`SHED_AT_LEAST`)."""
        plan = self._plans.pop(rank, None)
        freed = 0 if plan is None else plan.take(self, nbytes, rank)
        if plan is None or freed < nbytes:  # no order kept, or it gave out: a new search
            plan = _BudgetPlan(sorted(self._children, key=lambda child: -child.used))
            freed += plan.take(self, nbytes - freed, rank)
        if freed >= nbytes and plan.credit > 0:
            self._plans[rank] = plan
        return freed

    # -- a tenant's budget in the process's --
    def attach(self, parent: Budget) -> None:
        self.detach()
        self.parent = parent
        parent._children.add(self)
        parent.charge(self.used)
        self._relink()

    def detach(self) -> None:
        """Stop drawing on the parent (the tenant is gone)."""
        if self.parent is not None:
            self.parent.release(self.used)
            self.parent._children.discard(self)
            self.parent._plans.clear()  # they hold the tenants they name
            self.parent = None
            self._relink()

    def _relink(self) -> None:
        self._line = (self, *self.parent._line) if self.parent is not None else (self,)
        for child in self._children:
            child._relink()

    def clear(self) -> None:
        if self.parent is not None:
            self.parent.release(self.used)
        self.used = 0
        self._sheddable.clear()

    def refusal(self, field: str, weight: int, what: str) -> errors.ApiError:
        """The 507 for ``what`` (``weight`` bytes) that does not fit."""
        full = next((budget for budget in self.chain() if budget.used + weight > budget.limit), self)
        return errors.limit_reached(
            field,
            f"{what} ({weight} bytes) does not fit: {full.name} holds {full.used} of its {full.limit} bytes "
            f"(config: limits.{full.key}); delete some or POST /_emulator/reset first.",
        )


class _BudgetPlan:
    """The tenants as the last search ordered them, and what that order may still give."""

    __slots__ = ("at", "credit", "order")

    def __init__(self, order: list[Budget]) -> None:
        self.order = order
        self.at = 0  # the tenants before it had nothing left to give
        self.credit = SHED_AT_LEAST

    def take(self, parent: Budget, nbytes: int, rank: int) -> int:
        freed = 0
        order = self.order
        while self.at < len(order):
            child = order[self.at]
            if child.parent is parent:
                freed += child._shed(nbytes - freed, rank)
                if freed >= nbytes:
                    break
            self.at += 1  # it gave what it had
        self.credit -= freed
        return freed


def unlimited() -> Budget:
    """A budget that never refuses (a store built alone, in a test or a tool)."""
    return Budget(UNLIMITED, "this store", "memoryBytes")
