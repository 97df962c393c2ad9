"""Control: the caller's request journal (the public API's requests, masked), listed or counted
through filters. A filter naming what no entry can hold (a gateway not in the catalog, an
operationId or method no journaled route has) is refused with the allowed values, as an
unknown query parameter is (:mod:`emulator.control.strict`)."""

from __future__ import annotations

from datetime import UTC, datetime

from emulator.control.strict import refuse_unknown_value
from emulator.domain import errors
from emulator.domain.clock import isoformat
from emulator.endpoints.pipeline import Call, Endpoint, Handler, Reply
from emulator.endpoints.routing import OperationRoute
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


def _journaled(call: Call) -> list[Endpoint]:
    """Every endpoint whose requests the journal records: the app's routes (the published
    interface, the payment page, the eWallet library) and the caller's own interface version."""
    endpoints: list[Endpoint] = []
    app = call.request.scope.get("app")
    for route in getattr(app, "routes", ()):
        if isinstance(route, OperationRoute):
            endpoints += [endpoint for endpoint in route.endpoints.values() if endpoint.journal]
    return endpoints


def _check_values(call: Call) -> None:
    """A 400 for a gateway, operationId or method filter that no journal entry can hold."""
    query = call.query
    if query.get("gateway") is not None:
        refuse_unknown_value("gateway", query["gateway"], call.runtime.catalog.names(), fold=True)
    if query.get("operationId") is None and query.get("method") is None:
        return
    operations = [endpoint.operation for endpoint in _journaled(call)]
    own = call.runtime.interfaces.get(call.tenant)
    if own is not None:
        operations += own.operations.values()
    if not operations:  # an app without routes (a handler called directly): nothing to check against
        return
    refuse_unknown_value("operationId", query.get("operationId"), [op.operation_id for op in operations])
    methods = {op.method for op in operations}
    refuse_unknown_value("method", query.get("method"), methods | ({"HEAD"} if "GET" in methods else set()), fold=True)


def _found(call: Call) -> list[tuple[int, int]]:
    """The id and weight of the caller's journal entries that pass the query's filters,
    oldest first (``limit`` keeps the newest)."""
    _check_values(call)
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
