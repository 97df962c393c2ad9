"""Helpers for black-box cases kept as data (tests/cases/*.yaml)."""

from __future__ import annotations

import copy
from typing import Any


def patched(base: dict[str, Any], changes: dict[str, Any]) -> dict[str, Any]:
    """A deep copy of ``base`` with dotted-path ``changes`` applied; a value of ``~``
    deletes the key."""
    body = copy.deepcopy(base)
    for dotted, value in changes.items():
        *parents, last = dotted.split(".")
        target = body
        for part in parents:
            target = target.setdefault(part, {})
        if value == "~":
            target.pop(last, None)
        else:
            target[last] = copy.deepcopy(value)
    return body
