"""Card data never leaves payemu unmasked: first six and last four digits at most."""

from __future__ import annotations

import re
from typing import Any

_PAN = re.compile(r"\d{12,20}")
_PAN_IN_TEXT = re.compile(r"(?<!\d)(\d{6})(\d{2,10})(\d{4})(?!\d)")
_DROP = frozenset({"cvv", "cvc", "cvv2", "securitycode"})
_REDACT = frozenset({"payload", "clearpayload", "password", "secret"})
_SCALARS = (int, float, bool, type(None))


def mask_pan(number: str) -> str:
    """``4111111111111111`` → ``411111******1111``; anything else is returned as is."""
    if _PAN.fullmatch(number):
        return number[:6] + "*" * (len(number) - 10) + number[-4:]
    return number


def mask_text(text: str) -> str:
    """Mask every run of 12 to 20 digits inside free text."""
    return _PAN_IN_TEXT.sub(lambda m: m.group(1) + "*" * len(m.group(2)) + m.group(3), text)


def mask(value: Any, credentials: bool = False) -> Any:
    """A copy of a JSON value fit for the journal, logs and pages: card numbers masked,
    CVVs removed, string-token payloads and credential values redacted."""
    kind = type(value)
    if kind is str:
        return mask_text(value) if len(value) >= 12 else value  # type: ignore[arg-type]
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
                out[key] = item
            else:
                out[key] = mask(item, credentials or lower == "credentials")
        return out
    if kind is list:
        return [mask(item, credentials) for item in value]
    return value
