"""Control: the caller's request journal (the public API's requests, masked)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from emulator.domain import errors
from emulator.domain.clock import isoformat
from emulator.endpoints.pipeline import Call, Handler, Reply
from emulator.stores.journal import Filters

PAGE_SIZE = 1000


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


def _found(call: Call) -> list[dict[str, Any]]:
    """The caller's journal entries that pass the query's filters, oldest first."""
    query = call.query
    filters = Filters(
        method=query.get("method"),
        status=query.get("status"),
        operation_id=query.get("operationId"),
        result_code=query.get("resultCode"),
        gateway=query.get("gateway"),
        my_ref=query.get("myRef"),
    )
    return call.tenant.journal.query(
        path=query.get("path") or None,
        since=_moment("since", query.get("since")),
        until=_moment("until", query.get("until")),
        limit=query.get("limit"),
        filters=filters,
    )


async def requests(call: Call) -> Reply:
    query = call.query
    journal = call.tenant.journal
    found = _found(call)
    after = query.get("after")
    if after is not None:
        found = [entry for entry in found if entry["id"] > after]
    size = query.get("pageSize") or PAGE_SIZE
    page = found[:size]
    cursor = page[-1]["id"] if len(found) > size else None
    return Reply(
        200,
        {"requests": page, "dropped": journal.dropped, "size": journal.size, "bytes": journal.bytes, "next": cursor},
    )


async def count(call: Call) -> Reply:
    return Reply(200, {"count": len(_found(call))})


HANDLERS: dict[str, Handler] = {"ControlJournal": requests, "ControlJournalCount": count}
