"""The dashboard's chart of outcomes over time, as geometry for a server-rendered SVG.

Buckets take the shortest round step (:data:`STEPS`) that shows the span in at most
:data:`MAX_BUCKETS` bars; at least :data:`MIN_BUCKETS` are drawn, so a burst in one second
is one bar among a few. Each result code has a colour, a fill pattern and a glyph, so the
chart reads without telling colours apart."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from emulator.domain.vocabulary import RESULT_CODES, ResultCode
from emulator.ui import format as pagefmt

if TYPE_CHECKING:
    from emulator.stores.transaction import Transaction

WIDTH = 600
HEIGHT = 120
GAP = 2
MAX_BUCKETS = 24
MIN_BUCKETS = 6
DAY = 86_400
# round bucket widths in seconds, shortest first
STEPS = (
    1,
    2,
    5,
    10,
    15,
    30,
    60,
    120,
    300,
    600,
    900,
    1800,
    3600,
    2 * 3600,
    3 * 3600,
    6 * 3600,
    12 * 3600,
    DAY,
    2 * DAY,
    7 * DAY,
    14 * DAY,
    30 * DAY,
    90 * DAY,
    365 * DAY,
)
# result code → the glyph shown with its name (legend, badges): shape as well as colour
GLYPHS = {
    "Success": "✔",
    "Accepted": "◷",
    "Rejected": "✖",
    "TemporaryFailure": "↻",
    "FatalFailure": "▲",
    "NotImplemented": "∅",
}
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def answered(tx: Transaction) -> str:
    """The result code the client was answered: an Accepted one stays so after it settles."""
    return ResultCode.ACCEPTED.value if tx.settle_at is not None else tx.result_code.value


def step_text(seconds: int) -> str:
    """``300`` → ``5 minutes``."""
    for unit, size in (("day", DAY), ("hour", 3600), ("minute", 60)):
        if seconds >= size and seconds % size == 0:
            count = seconds // size
            return f"{count} {unit}{'s' if count > 1 else ''}"
    return f"{seconds} second{'s' if seconds != 1 else ''}"


def _seconds(moment: datetime) -> float:
    return (moment.astimezone(UTC) - EPOCH).total_seconds()


def bucket_step(start: datetime, end: datetime, max_buckets: int = MAX_BUCKETS) -> int:
    """The shortest round step (seconds) showing ``start``…``end`` in ``max_buckets`` bars."""
    first, last = _seconds(start), _seconds(end)
    for step in STEPS:
        if int(last // step) - int(first // step) + 1 <= max_buckets:
            return step
    span = last - first
    return int(span // (max_buckets - 1)) + 1


def buckets(
    moments: list[datetime], max_buckets: int = MAX_BUCKETS, min_buckets: int = MIN_BUCKETS
) -> tuple[int, datetime, int]:
    """(step in seconds, first bucket's start, number of buckets) for ``moments``."""
    start, end = min(moments), max(moments)
    step = bucket_step(start, end, max_buckets)
    first = int(_seconds(start) // step)
    last = int(_seconds(end) // step)
    count = last - first + 1
    if count < min_buckets:
        first -= min_buckets - count
        count = min_buckets
    return step, EPOCH + timedelta(seconds=first * step), count


def outcomes(points: Iterable[tuple[datetime, str]]) -> dict[str, Any]:
    """Bars, legend and time range of ``points`` ((time, result code) of each operation)."""
    pairs = list(points)
    empty_legend = [{"code": c, "glyph": GLYPHS[c], "count": 0} for c in RESULT_CODES]
    if not pairs:
        return {"bars": [], "legend": empty_legend, "width": WIDTH, "height": HEIGHT, "codes": RESULT_CODES}
    step, origin, count = buckets([moment for moment, _ in pairs])
    counts: list[Counter[str]] = [Counter() for _ in range(count)]
    for moment, code in pairs:
        index = int((_seconds(moment) - _seconds(origin)) // step)
        counts[min(max(index, 0), count - 1)][code] += 1
    tallest = max(sum(bucket.values()) for bucket in counts)
    bar_width = (WIDTH - GAP * (count - 1)) / count
    bars = []
    for index, bucket in enumerate(counts):
        segments = []
        top = float(HEIGHT)
        for code in _ordered(bucket):
            height = bucket[code] / tallest * HEIGHT
            top -= height
            segments.append({"code": code, "count": bucket[code], "y": round(top, 2), "height": round(height, 2)})
        begins = origin + timedelta(seconds=index * step)
        summary = ", ".join(f"{s['count']} {s['code']}" for s in segments) or "none"
        bars.append(
            {
                "x": round(index * (bar_width + GAP), 2),
                "width": round(bar_width, 2),
                "total": sum(bucket.values()),
                "segments": segments,
                "label": f"{pagefmt.short(begins)} (+{step_text(step)}): {summary}",
            }
        )
    total = Counter(code for _, code in pairs)
    legend = [{"code": c, "glyph": GLYPHS.get(c, "■"), "count": total[c]} for c in _ordered(total, every=True)]
    return {
        "bars": bars,
        "legend": legend,
        "width": WIDTH,
        "height": HEIGHT,
        "codes": RESULT_CODES,
        "step": step,
        "stepText": step_text(step),
        "from": pagefmt.short(origin),
        "to": pagefmt.short(origin + timedelta(seconds=count * step)),
    }


def _ordered(counts: Counter[str], every: bool = False) -> list[str]:
    """The result codes in the vocabulary's order, then any other code counted."""
    known = [c for c in RESULT_CODES if every or counts[c]]
    return known + sorted(c for c in counts if c not in RESULT_CODES and counts[c])
