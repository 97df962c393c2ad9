"""Card data never leaves payemu unmasked: first six and last four digits at most."""

from __future__ import annotations

import re
from typing import Any

_PAN = re.compile(r"\d{12,20}")
# 12 to 20 digits in a row, or grouped as on a card with one kind of separator
# ("4111 1111 1111 1111", "3782-822463-10005")
_PAN_IN_TEXT = re.compile(r"(?<!\d)(?:\d{12,20}|\d{4}([ -])\d{4,6}(?:\1\d{1,7}){1,3})(?!\d)")
_BIG = 10**11  # a JSON number this large may be a card number sent as a number
_DROP = frozenset({"cvv", "cvc", "cvv2", "securitycode"})
_REDACT = frozenset({"payload", "clearpayload", "password", "secret"})
_SCALARS = (int, float, bool, type(None))


def mask_pan(number: str) -> str:
    """``4111111111111111`` → ``411111******1111``; anything else is returned as is."""
    if _PAN.fullmatch(number):
        return number[:6] + "*" * (len(number) - 10) + number[-4:]
    return number


def mask_text(text: str) -> str:
    """Mask every run of 12 to 20 digits inside free text (grouped or not): all but the
    first six and last four digits become ``*``, separators stay."""
    return _PAN_IN_TEXT.sub(_mask_run, text)


def _mask_run(match: re.Match[str]) -> str:
    run = match.group(0)
    if run.isdigit():
        return run[:6] + "*" * (len(run) - 10) + run[-4:]
    total = sum(ch.isdigit() for ch in run)
    if not 12 <= total <= 20:
        return run
    seen = 0
    out = []
    for ch in run:
        if ch.isdigit():
            seen += 1
            out.append(ch if seen <= 6 or seen > total - 4 else "*")
        else:
            out.append(ch)
    return "".join(out)


def _mask_number(value: int | float) -> int | float | str:
    """A number of 12+ digits (a card number sent as a number) becomes masked text."""
    if -_BIG < value < _BIG:
        return value
    return mask_text(str(int(value)))


def mask(value: Any, credentials: bool = False) -> Any:
    """A copy of a JSON value fit for the journal, logs and pages: card numbers masked,
    CVVs removed, string-token payloads and credential values redacted."""
    kind = type(value)
    if kind is str:
        return mask_text(value) if len(value) >= 12 else value  # type: ignore[arg-type]
    if kind is int or kind is float:
        return _mask_number(value)
    if kind is dict:
        out: dict[str, Any] = {}
        for key, item in value.items():
            lower = key.lower()
            if lower in _DROP:
                continue
            if lower in _REDACT and type(item) is str:
                out[key] = f"[redacted: {len(item)} characters]"
            elif credentials and lower == "value":
                out[key] = "[redacted]" if item is not None else None
            elif type(item) in _SCALARS:
                out[key] = _mask_number(item) if type(item) is int or type(item) is float else item
            else:
                out[key] = mask(item, credentials or lower == "credentials")
        return out
    if kind is list:
        return [mask(item, credentials) for item in value]
    return value
