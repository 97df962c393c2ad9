"""A tenant's virtual clock: real time plus an offset, or frozen at a seeded start."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

_UNITS = {
    "ms": timedelta(milliseconds=1),
    "s": timedelta(seconds=1),
    "m": timedelta(minutes=1),
    "h": timedelta(hours=1),
    "d": timedelta(days=1),
    "w": timedelta(weeks=1),
}
NEGATIVE = "the clock only moves forward: negative durations are refused"
_PART = r"(\d+(?:\.\d+)?)(ms|s|m|h|d|w)"


class Clock:
    """Real time plus an advanced offset; with ``start``, frozen there until advanced (seeded runs repeat)."""

    def __init__(self, start: datetime | None = None) -> None:
        self._start = start
        self._offset = timedelta(0)

    @property
    def frozen(self) -> bool:
        return self._start is not None

    @property
    def offset(self) -> timedelta:
        return self._offset

    def now(self) -> datetime:
        base = self._start if self._start is not None else datetime.now(UTC)
        return base + self._offset if self._offset else base

    def advance(self, delta: timedelta) -> datetime:
        if delta < timedelta(0):
            raise ValueError("the clock only moves forward")
        self._offset += delta
        return self.now()


def parse_duration(text: str | int | float) -> timedelta:
    """``"8d"``, ``"1h30m"``, ``"250ms"``, or a number of seconds."""
    if isinstance(text, bool):
        raise ValueError("a duration is a number of seconds or text like '8d' or '1h30m'")
    if isinstance(text, int | float):
        if text < 0:
            raise ValueError(NEGATIVE)
        return timedelta(seconds=text)
    compact = text.strip().replace(" ", "")
    if not compact:
        raise ValueError("a duration cannot be empty")
    if compact.startswith("-"):
        raise ValueError(NEGATIVE)
    if re.fullmatch(r"\d+(?:\.\d+)?", compact):
        return timedelta(seconds=float(compact))
    total = timedelta(0)
    position = 0
    for match in re.finditer(_PART, compact):
        if match.start() != position:
            break
        total += float(match.group(1)) * _UNITS[match.group(2)]
        position = match.end()
    if position != len(compact):
        raise ValueError(f"'{text}' is not a duration (use e.g. 30s, 15m, 2h, 8d, 1w, 1d12h)")
    return total


def isoformat(moment: datetime) -> str:
    """UTC, millisecond precision, 'Z' suffix: 2026-11-22T02:14:49.123Z."""
    if moment.tzinfo is not UTC:
        moment = moment.astimezone(UTC)
    # formatted field by field: isoformat(timespec=...) then a slice took 1.3 µs, this 0.8
    # (an f-string with the same format specs takes 1.4)
    return "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ" % (  # noqa: UP031
        moment.year, moment.month, moment.day, moment.hour, moment.minute, moment.second, moment.microsecond // 1000,
    )  # fmt: skip
