"""Pages of a long dashboard list, so the page's height stays bounded however much a tenant holds."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Generic, TypeVar
from urllib.parse import urlencode

from emulator.domain.records import dataclass

T = TypeVar("T")
U = TypeVar("U")

# list → its query parameter
PARAMS = {"payments": "page", "sessions": "spage", "tokens": "tpage", "journal": "jpage"}


def number(raw: str | None) -> int:
    """A page number from the query (1 when absent or not a positive number)."""
    try:
        value = int(raw or "1")
    except ValueError:
        return 1
    return max(value, 1)


@dataclass(frozen=True)
class Pager(Generic[T]):
    items: Sequence[T]  # the rows of this page
    number: int  # 1-based, within 1..pages
    pages: int
    total: int
    first_index: int  # 1-based index of the first row shown (0 when none)
    prev_url: str | None
    next_url: str | None

    def shown_as(self, items: Sequence[U]) -> Pager[U]:
        return Pager(items, self.number, self.pages, self.total, self.first_index, self.prev_url, self.next_url)

    @property
    def last_index(self) -> int:
        return self.first_index + len(self.items) - 1 if self.items else 0


def paginate(
    rows: Sequence[T],
    param: str,
    asked: Mapping[str, str],
    base: str,
    keep: Mapping[str, str],
    size: int,
) -> Pager[T]:
    """The page of ``rows`` asked in ``asked[param]``, with links keeping the other lists' pages."""
    pages = max(1, -(-len(rows) // size))
    current = min(number(asked.get(param)), pages)
    start = (current - 1) * size
    shown = rows[start : start + size]

    def url(page: int) -> str:
        query = {**keep, **{k: v for k, v in asked.items() if v and v != "1"}, param: str(page)}
        if page == 1:
            del query[param]
        return f"{base}?{urlencode(query)}"

    return Pager(
        shown,
        current,
        pages,
        len(rows),
        start + 1 if shown else 0,
        url(current - 1) if current > 1 else None,
        url(current + 1) if current < pages else None,
    )
