"""Card data never leaves payemu unmasked: first six and last four digits at most.

Card fields are masked whatever they hold (a mistyped number is still a customer's card);
elsewhere only Luhn-valid runs of 13 to 19 digits are. Gateway references of the same
entry (``keep``) are never masked, so a test can take one from the journal and use it."""

from __future__ import annotations

import re
from collections.abc import Container
from typing import Any
from urllib.parse import parse_qsl, quote

from emulator.domain.cards import luhn_valid

# The patterns below are compiled by ``re`` when first used (and kept in its cache): masking
# runs when the journal is read, which most runs of ``payemu serve`` do not wait for.
# 13 to 19 digits in a row, or grouped as on a card with one kind of separator
# ("4111 1111 1111 1111", "3782-822463-10005")
_PAN_IN_TEXT = r"(?<!\d)(?:\d{13,19}|\d{4}([ -])\d{4,6}(?:\1\d{1,7}){1,3})(?!\d)"
_TOKEN_REFERENCE = r"@[A-Za-z0-9]{32}"
_BIG = 10**12  # a JSON number this large may be a card number sent as a number
_CARD = frozenset({"cardnumber", "number", "pan"})
_DROP = frozenset({"cvv", "cvc", "cvv2", "securitycode"})
_REDACT = frozenset({"payload", "clearpayload", "password", "secret"})
# Keys whose values are gateway references or tokens: never masked.
REFERENCE_KEYS = frozenset({"gatewayreference", "reftransid", "gatewaytoken", "usertoken"})
_SCALARS = (int, float, bool, type(None))
# What a JSON text holds wherever mask() would change its value: a card, security-code,
# payload or credentials key; a run of digits a card number could be part of (13 in a
# row, or two groups of four as on a card); a number in exponent form (a card number
# sent as a float); or something that could spell any of those another way (an escape,
# a non-ASCII character: \d and str.lower() reach beyond ASCII). The text is first
# reduced to a few classes of byte in one C call.
_CLASSES = bytes(
    ord("0")
    if chr(byte) in "0123456789"
    else ord("-")
    if chr(byte) in " -"
    else ord("e")
    if chr(byte) in "eE"
    else ord(".")
    for byte in range(256)
)
_EXPONENT = rb"(?:^|[:\[,])\s*-?\d+(?:\.\d+)?[eE]"  # a JSON number in exponent form
# the keys of _CARD, _DROP and _REDACT and "credentials", as a trie (sre does not factor
# an alternation; this one is four times faster than the plain list)
_MASKED_KEY = rb'"(?:c(?:ardnumber|vv2?|vc|redentials|learpayload)|number|pa(?:n|yload|ssword)|se(?:curitycode|cret))"'


def mask_card(value: Any) -> Any:
    """A card field masked whatever it holds; ``@token`` references and null stay."""
    if value is None or isinstance(value, bool):
        return value
    text = str(int(value)) if isinstance(value, (int, float)) else str(value)
    if re.fullmatch(_TOKEN_REFERENCE, text):
        return text
    length = len(text)
    if length > 10:
        return text[:6] + "*" * (length - 10) + text[-4:]
    if length > 4:
        return "*" * (length - 4) + text[-4:]
    return "*" * length


def mask_pan(number: str) -> str:
    return str(mask_card(number))


def mask_text(text: str, keep: Container[str] = ()) -> str:
    """Mask every Luhn-valid run of 13 to 19 digits in free text, but values of ``keep``."""
    return re.sub(_PAN_IN_TEXT, lambda match: _mask_run(match, keep), text)


def _mask_run(match: re.Match[str], keep: Container[str]) -> str:
    run = match.group(0)
    digits = "".join(ch for ch in run if ch.isdigit())
    if not 13 <= len(digits) <= 19 or not luhn_valid(digits) or run in keep or digits in keep:
        return run
    total = len(digits)
    seen = 0
    out = []
    for ch in run:
        if ch.isdigit():
            seen += 1
            out.append(ch if seen <= 6 or seen > total - 4 else "*")
        else:
            out.append(ch)
    return "".join(out)


def _mask_number(value: int | float, keep: Container[str]) -> int | float | str:
    if -_BIG < value < _BIG or isinstance(value, bool):
        return value
    text = str(int(value))
    masked = mask_text(text, keep)
    return value if masked == text else masked


def references(*values: Any) -> frozenset[str]:
    """Every gateway reference or token held under a reference key, at any depth."""
    found: set[str] = set()
    stack = list(values)
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            for key, value in item.items():
                if isinstance(key, str) and key.lower() in REFERENCE_KEYS and isinstance(value, str):
                    found.add(value)
                elif isinstance(value, (dict, list)):
                    stack.append(value)
        elif isinstance(item, list):
            stack.extend(item)
    return frozenset(found)


def needs_masking(text: bytes) -> bool:
    """Whether the JSON ``text`` may hold something :func:`mask` changes (else the walk is skipped)."""
    if not text.isascii() or b"\\" in text:
        return True
    classes = text.translate(_CLASSES)  # a regex over these took eight times as long as three finds
    if b"0000000000000" in classes or b"0000-0000" in classes:
        return True
    if b"0e" in classes and re.search(_EXPONENT, text):  # a digit then an e is common in references
        return True
    return re.search(_MASKED_KEY, text.lower()) is not None


class References:
    """:func:`references` found the first time a check asks (most masking never does)."""

    def __init__(self, *values: Any) -> None:
        self._values: tuple[Any, ...] | None = values
        self._found: frozenset[str] = frozenset()

    def __contains__(self, item: object) -> bool:
        if self._values is not None:
            self._found, self._values = references(*self._values), None
        return item in self._found


def mask(value: Any, credentials: bool = False, keep: Container[str] = ()) -> Any:
    """A copy of a JSON value fit for the journal, logs and pages."""
    kind = type(value)
    if kind is str:
        if len(value) < 13:
            return value
        masked = mask_text(value, keep)  # a reference itself stays whole (keep is asked last: it may be lazy)
        return value if masked != value and value in keep else masked
    if kind is int or kind is float:
        return _mask_number(value, keep)
    if kind is dict:
        out: dict[str, Any] = {}
        for name, item in value.items():
            lower = name.lower() if isinstance(name, str) else ""
            if lower in _DROP:
                continue
            # a card number sent as a property name is masked like one sent as a value
            key = mask_text(name, keep) if isinstance(name, str) and len(name) >= 13 else name
            if lower in _CARD and type(item) in (str, int, float):
                out[key] = mask_card(item)
            elif lower in _REDACT and type(item) is str:
                out[key] = f"[redacted: {len(item)} characters]"
            elif credentials and lower == "value":
                out[key] = "[redacted]" if item is not None else None
            elif type(item) in _SCALARS:
                out[key] = _mask_number(item, keep) if type(item) is int or type(item) is float else item
            else:
                out[key] = mask(item, credentials or lower == "credentials", keep)
        return out
    if kind is list:
        return [mask(item, credentials, keep) for item in value]
    return value


def mask_query(query: str, keep: Container[str] = ()) -> str:
    """A URL query string with card parameters and card numbers masked."""
    if not query:
        return query
    parts = []
    for name, value in parse_qsl(query, keep_blank_values=True):
        shown = mask_card(value) if name.lower() in _CARD else mask_text(value, keep)
        parts.append(f"{quote(name, safe='')}={quote(str(shown), safe='@*')}")
    return "&".join(parts)
