"""The per-tenant request journal: bounded, oldest dropped first, bodies masked."""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator
from itertools import count
from typing import Any


class Journal:
    def __init__(self, size: int) -> None:
        self.size = size
        self._entries: deque[dict[str, Any]] = deque(maxlen=size)
        self._ids = count(1)
        self.dropped = 0

    def record(self, entry: dict[str, Any]) -> dict[str, Any]:
        """Store an entry (already masked by the caller) and give it a sequence id."""
        if len(self._entries) == self._entries.maxlen:
            self.dropped += 1
        entry["id"] = next(self._ids)
        self._entries.append(entry)
        return entry

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return iter(list(self._entries))

    def __len__(self) -> int:
        return len(self._entries)

    def query(
        self,
        path: str | None = None,
        since: str | None = None,
        until: str | None = None,
        limit: int | None = None,
    ) -> list[dict[str, Any]]:
        """Entries oldest first; ``path`` matches a prefix, ``since``/``until`` compare the
        ISO times; ``limit`` keeps the newest."""
        found = [
            e for e in self._entries
            if (path is None or e["path"].startswith(path))
            and (since is None or e["time"] >= since)
            and (until is None or e["time"] <= until)
        ]
        return found[-limit:] if limit else found
