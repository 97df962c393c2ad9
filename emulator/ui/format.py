"""How pages show values to people: money, times in plain words, JSON masked and indented."""

from __future__ import annotations

import json
from collections.abc import Collection
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from emulator.domain.masking import mask

FAVICON = Path(__file__).parent / "static" / "favicon.svg"


def money(amount: float, currency: str | None = None) -> str:
    """``120.0`` → ``120.00``; with a currency ``1,234.50 USD``."""
    text = f"{amount:,.2f}"
    return f"{text} {currency}" if currency else text


def pretty(value: Any, keep: Collection[str] = ()) -> str:
    """``value`` masked (``keep`` stays) as indented JSON."""
    return json.dumps(mask(value, keep=keep), indent=2, ensure_ascii=False, default=str)


def readable(moment: datetime | str | None) -> str:
    """``2026-11-22T02:14:49.123Z`` → ``22 Nov 2026, 02:14 UTC``."""
    if moment is None or moment == "":
        return ""
    if isinstance(moment, str):
        try:
            at = datetime.fromisoformat(moment.replace("Z", "+00:00")).astimezone(UTC)
        except ValueError:
            return moment
    else:
        at = moment.astimezone(UTC)
    return f"{at.day} {at:%b %Y, %H:%M} UTC"


async def favicon(request: Request) -> Response:
    return Response(FAVICON.read_bytes(), media_type="image/svg+xml", headers={"Cache-Control": "max-age=86400"})


def short(moment: datetime) -> str:
    """A table's time: ``23 Nov 14:00:08`` (UTC, to the second)."""
    at = moment.astimezone(UTC)
    return f"{at.day} {at:%b %H:%M:%S}"


def readable_short(moment: str | None) -> str:
    """:func:`short` of an ISO time as the journal stores it (other text unchanged)."""
    if not moment:
        return ""
    try:
        return short(datetime.fromisoformat(moment.replace("Z", "+00:00")))
    except ValueError:
        return moment
