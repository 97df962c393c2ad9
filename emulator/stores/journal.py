"""The per-tenant request journal: bounded in entries and in bytes (each entry weighed as
its JSON text), oldest dropped first.

A call is recorded as an :class:`Entry` (a named tuple, far smaller than a dict) and
rendered and masked the first time anything reads it; every way out (iteration,
:meth:`Journal.query`) hands out masked entries only, so card numbers, CVVs, token
payloads and credential values never leave it and the request path pays nothing for
masking.
"""

from __future__ import annotations

import contextlib
import json
from bisect import bisect_right
from collections import deque
from collections.abc import Iterator, Sequence
from datetime import datetime
from itertools import count
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

import orjson

from emulator.contract.wire import dumps
from emulator.domain import budget as weights
from emulator.domain.budget import Budget
from emulator.domain.clock import isoformat
from emulator.domain.masking import References, mask, mask_query, mask_text, needs_masking
from emulator.domain.safeparse import has_long_number

_MASKED_FIELDS = ("request", "response", "attempts")


class Entry(NamedTuple):
    """One recorded call, as :meth:`Journal.record` takes it (rendered and masked into its
    entry, a dict keyed by :data:`FIELDS`, when first read)."""

    time: datetime | str  # written as ISO text when first read
    method: str
    path: str
    query: str
    operation_id: str | None
    interface_version: str | None
    status: int | None  # None: the connection was dropped
    latency_ms: float  # rounded when first read
    request: Any  # the body received: its value, or its JSON text (bytes)
    response: Any  # the body answered: its value, or its JSON text (bytes)
    attempts: list[Any]  # the engine's AttemptRecords, or their JSON
    fault: str | None = None  # why the connection was dropped; left out of the entry when None
    warnings: list[str] | None = None  # leniencies used to read the request; left out when None


# the entry's keys, in the order of Entry's fields
FIELDS = (
    "time",
    "method",
    "path",
    "query",
    "operationId",
    "interfaceVersion",
    "status",
    "latencyMs",
    "request",
    "response",
    "attempts",
    "fault",
    "warnings",
)
_OPTIONAL = frozenset({"fault", "warnings"})
UNLIMITED = 1 << 62
if len(FIELDS) != len(Entry._fields):
    raise ImportError("journal.FIELDS does not name every field of journal.Entry")


if TYPE_CHECKING:  # a type for the checker only (no class made at run time)

    class Renders(Protocol):
        """An attempt kept as recorded (an AttemptRecord), rendered when first read."""

        def to_json(self) -> dict[str, Any]: ...


def _jsonable(value: object) -> object:
    to_json = getattr(value, "to_json", None)
    return to_json() if callable(to_json) else str(value)


def _loads(text: bytes) -> Any:
    """A recorded request's or answer's JSON text as its value: by orjson, or by the
    standard library where a long run of digits could be an integer past 64 bits (orjson
    reads those as floats; an answer can hold one, from a scenario's YAML)."""
    return json.loads(text) if has_long_number(text) else orjson.loads(text)


def _rendered(attempts: list[dict[str, Any] | Renders] | None) -> list[dict[str, Any]]:
    return [a if isinstance(a, dict) else a.to_json() for a in attempts or ()]


def weigh(entry: dict[str, Any]) -> int:
    """The bytes an entry stands for: the length of its JSON text (an estimate of what it
    holds in memory, good enough to bound it)."""
    try:
        return len(json.dumps(entry, ensure_ascii=False, default=_jsonable, check_circular=False))
    except (TypeError, ValueError, RecursionError):
        return 64 * 1024


def _entry(number: int, values: tuple[Any, ...]) -> dict[str, Any]:
    """A recorded :class:`Entry` as its entry (not yet rendered nor masked)."""
    entry = {
        name: value for name, value in zip(FIELDS, values, strict=True) if value is not None or name not in _OPTIONAL
    }
    entry["id"] = number
    return entry


def _shown(number: int, stored: Entry | bytes | dict[str, Any]) -> dict[str, Any]:
    """An entry as handed out: a shown one as it is, a restored one (its JSON text, masked
    when it was saved) parsed, a recorded call rendered and masked."""
    if isinstance(stored, dict):
        return stored
    if isinstance(stored, bytes):
        entry: dict[str, Any] = _loads(stored)
        for attempt in entry.get("attempts") or ():
            if isinstance(attempt, dict):  # a file written before attempts named their rule
                attempt.setdefault("rule", None)
                attempt.setdefault("ruleSource", None)
        return entry
    return _render_and_mask(_entry(number, stored))


def _render_and_mask(entry: dict[str, Any]) -> dict[str, Any]:
    shown: set[str] = set()  # fields whose JSON text holds nothing mask() would change
    for name in ("request", "response"):
        if isinstance(entry.get(name), bytes):
            text = entry[name]
            entry[name] = _loads(text)  # recorded as its JSON text
            if not needs_masking(text):
                shown.add(name)
    if isinstance(entry.get("time"), datetime):
        entry["time"] = isoformat(entry["time"])
    if isinstance(entry.get("latencyMs"), float):
        entry["latencyMs"] = round(entry["latencyMs"], 3)
    if "attempts" in entry:
        entry["attempts"] = _rendered(entry["attempts"])
        with contextlib.suppress(TypeError, orjson.JSONEncodeError):
            if not needs_masking(orjson.dumps(entry["attempts"])):
                shown.add("attempts")
    masked = [name for name in _MASKED_FIELDS if name in entry and name not in shown]
    keep = References(*(entry.get(name) for name in _MASKED_FIELDS))
    for name in masked:
        entry[name] = mask(entry[name], keep=keep)
    if entry.get("query"):
        entry["query"] = mask_query(entry["query"], keep)
    if entry.get("path"):
        entry["path"] = mask_text(entry["path"], keep)
    return entry


class Filters(NamedTuple):
    """What :meth:`Journal.query` keeps besides path and time (None: anything)."""

    method: str | None = None  # case-insensitive
    status: int | None = None
    operation_id: str | None = None
    result_code: str | None = None  # the answer's operationResultCode
    gateway: str | None = None  # any attempt's gatewayName, case-insensitive
    my_ref: str | None = None  # the request's (or the answer's) myRef

    def keep(self, entry: dict[str, Any]) -> bool:
        """Whether the masked ``entry`` passes every filter given."""
        if self.method is not None and entry["method"].upper() != self.method.upper():
            return False
        if self.status is not None and entry["status"] != self.status:
            return False
        if self.operation_id is not None and entry["operationId"] != self.operation_id:
            return False
        request, response = _fields(entry["request"]), _fields(entry["response"])
        if self.result_code is not None and response.get("operationResultCode") != self.result_code:
            return False
        if self.my_ref is not None and self.my_ref not in (request.get("myRef"), response.get("myRef")):
            return False
        if self.gateway is None:
            return True
        wanted = self.gateway.casefold()
        return any(str(attempt.get("gatewayName", "")).casefold() == wanted for attempt in entry["attempts"])


_ANYTHING = Filters()


def _fields(body: object) -> dict[str, Any]:
    return body if isinstance(body, dict) else {}


class Journal:
    def __init__(self, size: int, max_bytes: int = UNLIMITED, budget: Budget | None = None) -> None:
        self.size = size
        self.max_bytes = max_bytes
        # the tenant's byte budget: the journal's entries are the first to go when any
        # budget is full (its own tenant's or the process's, for whichever tenant)
        self.budget = budget or weights.unlimited()
        self.budget.sheddable(self)
        # each Entry as recorded (the caller's tuple, kept as it is); the masked entry (a
        # dict) once read; their ids, and their weigh(), in the same order
        self._entries: deque[Entry | bytes | dict[str, Any]] = deque()
        self._numbers: deque[int] = deque()
        self._weights: deque[int] = deque()
        self._ids = count(1)
        self.dropped = 0
        self.bytes = 0

    def record(self, entry: Entry, weight: int | None = None) -> int:
        """Store a call (masked on first read) and give it a sequence id, which is
        returned; the oldest entries go while there are more than ``size`` or
        ``max_bytes``. ``weight``: the entry's bytes when the caller knows them (else
        :func:`weigh`)."""
        number = next(self._ids)
        entries, weights = self._entries, self._weights
        entries.append(entry)
        self._numbers.append(number)
        if weight is None:
            weight = weigh(_entry(number, entry))
        weights.append(weight)
        self.bytes += weight
        freed = 0  # by the oldest entries past the bounds: the budget is charged the difference once
        size, max_bytes = self.size, self.max_bytes
        while len(entries) > size or (self.bytes > max_bytes and len(entries) > 1):
            freed += self._pop_oldest()
        budget = self.budget
        if not budget.charged(weight - freed) and not budget.make_room(0):
            self.shed(budget.need(0))  # its own entries then, this one included
        return number

    def _pop_oldest(self) -> int:
        """Forget the oldest entry; its weight (the caller releases it from the budget)."""
        self._entries.popleft()
        self._numbers.popleft()
        weight = self._weights.popleft()
        self.bytes -= weight
        self.dropped += 1
        return weight

    def _drop_oldest(self) -> int:
        weight = self._pop_oldest()
        self.budget.release(weight)
        return weight

    def shed(self, nbytes: int) -> int:
        """Drop the oldest entries until ``nbytes`` are freed or none is left (a byte
        budget is full); the bytes freed."""
        freed = 0
        while freed < nbytes and self._entries:
            freed += self._drop_oldest()
        return freed

    def _each(self) -> Iterator[tuple[int, int, dict[str, Any]]]:
        """Each entry's id, weight and masked entry, oldest first. The entry is built for
        the look and not kept (parsed, an entry of 1 MB of text holds ten times that): the
        journal keeps each one's masked JSON text once it was first read, which its weight
        already counts."""
        for index, (number, stored) in enumerate(zip(self._numbers, self._entries, strict=True)):
            entry = _shown(number, stored)
            if not isinstance(stored, bytes):
                self._entries[index] = dumps(entry)  # masked once, kept as text
            yield number, self._weights[index], entry

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return (entry for _, _, entry in self._each())

    # -- persistence (emulator.state) --
    def newest_id(self) -> int:
        """The id of the newest entry (0 when empty)."""
        return self._numbers[-1] if self._numbers else 0

    def oldest_id(self) -> int:
        """The id of the oldest entry held (0 when empty)."""
        return self._numbers[0] if self._numbers else 0

    def entries_after(self, number: int, limit: int, until: int | None = None) -> list[dict[str, Any]]:
        """At most ``limit`` masked entries with an id above ``number`` (and at most
        ``until``), oldest first: only those are rendered and masked, so a save reads what
        is new and nothing else."""
        entries, numbers = self._entries, self._numbers
        # where they start, and where ``until`` ends them, by bisection over the ids (they
        # only grow; a scan back from the newest made a save quadratic in what it wrote)
        first = bisect_right(numbers, number)
        end = len(numbers) if until is None else bisect_right(numbers, until, lo=first)
        # rendered for the caller and not kept: the journal keeps its compact records (a
        # rendered entry is a tree of a dozen objects the garbage collector walks)
        return [_shown(numbers[index], entries[index]) for index in range(first, min(first + limit, end))]

    def load(self, entries: Sequence[tuple[int, bytes] | dict[str, Any]]) -> None:
        """Hold ``entries`` (a state file's: masked entries, or each one's id and JSON
        text; ids increasing) as if recorded, within the same bounds; later entries are
        numbered after them. Each is kept as its text, weighed by its length, until read."""
        for given in entries:
            number, text = (int(given["id"]), orjson.dumps(given)) if isinstance(given, dict) else given
            self._entries.append(text)
            self._numbers.append(number)
            weight = len(text)
            self._weights.append(weight)
            self.bytes += weight
            self.budget.charge(weight)
        if entries:
            self._ids = count(self._numbers[-1] + 1)
        while len(self._entries) > self.size or (self.bytes > self.max_bytes and len(self._entries) > 1):
            self._drop_oldest()
            self.dropped -= 1  # not dropped: never held in this run

    def __len__(self) -> int:
        return len(self._entries)

    def ids(self) -> list[int]:
        """The id of every entry held, oldest first (nothing parsed)."""
        return list(self._numbers)

    def matching(
        self,
        path: str | None = None,
        since: str | None = None,
        until: str | None = None,
        filters: Filters | None = None,
    ) -> list[tuple[int, int]]:
        """The id and weight of each entry that passes, oldest first (each entry looked at
        in turn and let go: only numbers are kept). ``path`` matches a prefix,
        ``since``/``until`` compare the ISO times, ``filters`` the rest."""
        keep = None if filters is None or filters == _ANYTHING else filters.keep
        return [
            (number, weight)
            for number, weight, e in self._each()
            if (path is None or e["path"].startswith(path))
            and (since is None or e["time"] >= since)
            and (until is None or e["time"] <= until)
            and (keep is None or keep(e))
        ]

    def entries(self, numbers: Sequence[int]) -> list[dict[str, Any]]:
        """The masked entries of ``numbers`` (increasing ids) still held, oldest first."""
        held, stored = self._numbers, self._entries
        out = []
        for number in numbers:
            index = bisect_right(held, number) - 1
            if index >= 0 and held[index] == number:
                out.append(_shown(number, stored[index]))
        return out

    def query(
        self,
        path: str | None = None,
        since: str | None = None,
        until: str | None = None,
        limit: int | None = None,
        filters: Filters | None = None,
    ) -> list[dict[str, Any]]:
        """The entries of :meth:`matching`, oldest first; ``limit`` keeps the newest."""
        found = [number for number, _ in self.matching(path, since, until, filters)]
        return self.entries(found[-limit:] if limit else found)
