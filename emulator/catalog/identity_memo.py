"""Bounded memos keyed by an object's identity.

Gateway specs and catalog templates are found again by identity (``id``), not by value:
hashing a spec or a template tree on every attempt would cost more than what is
remembered. Each entry keeps its object, so that ``id`` is not reused while the entry
lives, and is checked against it; a memo that reaches its limit starts over.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any, Generic, TypeVar

V = TypeVar("V")


class IdentityMemo(Generic[V]):
    """What ``make(*args)`` gave for ``key`` (a tuple starting with ``id(owner)``)."""

    __slots__ = ("_found", "limit")

    def __init__(self, limit: int = 4096) -> None:
        self.limit = limit
        self._found: dict[Hashable, tuple[object, V]] = {}

    def get(self, key: Hashable, owner: object, make: Callable[..., V], *args: Any) -> V:
        hit = self._found.get(key)
        if hit is None or hit[0] is not owner:
            if len(self._found) >= self.limit:
                self._found.clear()
            hit = self._found[key] = (owner, make(*args))
        return hit[1]

    def __len__(self) -> int:
        return len(self._found)
