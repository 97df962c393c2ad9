"""The dashboard's chart of outcomes over time: how many transactions got each result code
in each time bucket, as geometry for a server-rendered SVG (stacked bars, no script)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from emulator.http.pages import format as pagefmt

if TYPE_CHECKING:
    from emulator.payments.ledger import Transaction

BUCKETS = 12
WIDTH = 600
HEIGHT = 120
GAP = 4
# result code → CSS class of its bars (colours live in payemu.css)
CODE_ORDER = ("Success", "Accepted", "Rejected", "Failed")


def _bucket_of(moment: datetime, start: datetime, span: float, count: int) -> int:
    if span <= 0:
        return 0
    return min(int((moment - start).total_seconds() / span * count), count - 1)


def outcomes(transactions: Sequence[Transaction], buckets: int = BUCKETS) -> dict[str, Any]:
    """Bars (one per bucket, each with one segment per result code present), the legend
    and the time range; ``{"bars": []}`` without transactions."""
    if not transactions:
        return {"bars": [], "legend": [], "width": WIDTH, "height": HEIGHT}
    times = [tx.created_at for tx in transactions]
    start, end = min(times), max(times)
    span = (end - start).total_seconds()
    count = buckets if span > 0 else 1
    counts: list[Counter[str]] = [Counter() for _ in range(count)]
    for tx in transactions:
        counts[_bucket_of(tx.created_at, start, span, count)][tx.result_code.value] += 1
    codes = sorted({code for bucket in counts for code in bucket}, key=_code_rank)
    tallest = max(sum(bucket.values()) for bucket in counts)
    bar_width = (WIDTH - GAP * (count - 1)) / count
    bars = []
    for index, bucket in enumerate(counts):
        segments = []
        top = float(HEIGHT)
        for code in codes:
            if not bucket[code]:
                continue
            height = bucket[code] / tallest * HEIGHT
            top -= height
            segments.append({"code": code, "count": bucket[code], "y": round(top, 2), "height": round(height, 2)})
        bars.append(
            {
                "x": round(index * (bar_width + GAP), 2),
                "width": round(bar_width, 2),
                "total": sum(bucket.values()),
                "segments": segments,
                "label": ", ".join(f"{s['count']} {s['code']}" for s in segments) or "none",
            }
        )
    return {
        "bars": bars,
        "legend": [{"code": code, "count": sum(bucket[code] for bucket in counts)} for code in codes],
        "width": WIDTH,
        "height": HEIGHT,
        "from": pagefmt.short(start),
        "to": pagefmt.short(end),
    }


def _code_rank(code: str) -> tuple[int, str]:
    return (CODE_ORDER.index(code) if code in CODE_ORDER else len(CODE_ORDER), code)
