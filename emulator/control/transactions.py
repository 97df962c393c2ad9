"""Control: the caller's ledger, as the engine's masked ``Transaction.to_json()``."""

from __future__ import annotations

from itertools import islice

from emulator.domain import errors
from emulator.endpoints.pipeline import Call, Handler, Reply
from emulator.stores.transaction import Transaction

PAGE_SIZE = 1000
PAGE_BYTES = 4 * 1024 * 1024  # transaction weight per page (a 512 KB myRef counts in full)


async def list_transactions(call: Call) -> Reply:
    """One page, oldest first, of at most ``pageSize`` transactions and :data:`PAGE_BYTES`
    of their weight (always one at least); ``next`` is the reference to pass as ``after``
    for the following page (null on the last)."""
    ledger = call.tenant.ledger
    size = call.query.get("pageSize") or PAGE_SIZE
    after = call.query.get("after")
    start = 0
    if after:
        if after not in ledger:
            raise errors.invalid("after", "No transaction has this cursor (it may have been dropped); start again.")
        start = list(ledger).index(after) + 1
    page: list[Transaction] = []
    weight = 0
    for tx in islice(ledger.values(), start, start + size):
        if page and weight + tx.weight > PAGE_BYTES:
            break
        page.append(tx)
        weight += tx.weight
    cursor = page[-1].reference if page and start + len(page) < len(ledger) else None
    return Reply(200, {"transactions": [t.to_json() for t in page], "next": cursor})


HANDLERS: dict[str, Handler] = {"ControlTransactions": list_transactions}
