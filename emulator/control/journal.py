"""Control: the caller's request journal (the public API's requests, masked)."""

from __future__ import annotations

from datetime import UTC, datetime

from emulator.domain import errors
from emulator.domain.clock import isoformat
from emulator.endpoints.pipeline import Call, Handler, Reply
from emulator.stores.journal import Filters

PAGE_SIZE = 1000
# Entries per page are also bounded by their weight (their masked JSON text): a page is
# parsed whole before it is answered, and parsed text holds several times its length.
PAGE_BYTES = 1024 * 1024


def _moment(name: str, text: str | None) -> str | None:
    """An ISO 8601 time as the journal writes it (UTC, milliseconds, Z), so comparing
    the text compares the times; a time without an offset is read as UTC."""
    if text is None:
        return None
    try:
        moment = datetime.fromisoformat(text.strip())
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=UTC)
        return isoformat(moment)
    except (ValueError, OverflowError):
        raise errors.invalid(name, f"'{text}' is not an ISO 8601 time (e.g. 2030-01-01T12:00:00Z).") from None


def _found(call: Call) -> list[tuple[int, int]]:
    """The id and weight of the caller's journal entries that pass the query's filters,
    oldest first (``limit`` keeps the newest)."""
    query = call.query
    filters = Filters(
        method=query.get("method"),
        status=query.get("status"),
        operation_id=query.get("operationId"),
        result_code=query.get("resultCode"),
        gateway=query.get("gateway"),
        my_ref=query.get("myRef"),
    )
    found = call.tenant.journal.matching(
        path=query.get("path") or None,
        since=_moment("since", query.get("since")),
        until=_moment("until", query.get("until")),
        filters=filters,
    )
    limit = query.get("limit")
    return found[-limit:] if limit else found


async def requests(call: Call) -> Reply:
    query = call.query
    journal = call.tenant.journal
    found = _found(call)
    after = query.get("after")
    if after is not None:
        found = [(number, weight) for number, weight in found if number > after]
    size = query.get("pageSize") or PAGE_SIZE
    taken: list[int] = []
    weighed = 0
    for number, weight in found[:size]:
        if taken and weighed + weight > PAGE_BYTES:
            break
        taken.append(number)
        weighed += weight
    page = journal.entries(taken)
    cursor = taken[-1] if len(found) > len(taken) else None
    return Reply(
        200,
        {"requests": page, "dropped": journal.dropped, "size": journal.size, "bytes": journal.bytes, "next": cursor},
    )


async def count(call: Call) -> Reply:
    return Reply(200, {"count": len(_found(call))})


HANDLERS: dict[str, Handler] = {"ControlJournal": requests, "ControlJournalCount": count}
