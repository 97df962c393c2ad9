"""The one place error bodies are built; it imports nothing of payemu, so the domain raises
the same errors the edge answers.

Every error is a JSON array of ``{fieldName, errors}`` entries. The domain raises them by
kind (:func:`invalid`, :func:`not_found`, ...), never by number: the status is decided here."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

FieldErrors = tuple[str | None, list[str]]
MAX_MESSAGE_CHARS = 500  # longer messages and field names are cut (they may quote client input)


class ApiError(Exception):
    """An error answered as a ValidationErrorMessage array."""

    def __init__(
        self,
        status: int,
        entries: Iterable[FieldErrors],
        headers: Mapping[str, str] | None = None,
    ) -> None:
        self.status = status
        self.entries = merge(entries)
        self.headers = dict(headers or {})
        super().__init__(f"{status}: {self.entries}")

    @property
    def body(self) -> list[dict[str, Any]]:
        return error_body(self.entries)


def merge(entries: Iterable[FieldErrors]) -> list[FieldErrors]:
    """One entry per field, messages in first-seen order, no repeats."""
    merged: dict[str | None, list[str]] = {}
    for field, messages in entries:
        bucket = merged.setdefault(None if field is None else clipped(field), [])
        for message in messages:
            message = clipped(message)
            if message not in bucket:
                bucket.append(message)
    return list(merged.items())


def clipped(text: str) -> str:
    """``text`` cut to :data:`MAX_MESSAGE_CHARS`, so a huge value never makes a huge message."""
    if len(text) <= MAX_MESSAGE_CHARS:
        return text
    return f"{text[:MAX_MESSAGE_CHARS]}… (cut: {len(text)} characters)"


def field_path(parts: Iterable[str | int], root: str | None = "body") -> str | None:
    """The dotted name of a place in a JSON document (``card.cardNumber``); ``root`` for the whole."""
    text = ""
    for part in parts:
        if isinstance(part, int):
            text += f"[{part}]"
        else:
            text += f".{part}" if text else str(part)
    return text or root


def error_body(entries: Iterable[FieldErrors]) -> list[dict[str, Any]]:
    return [{"fieldName": field, "errors": list(messages)} for field, messages in merge(entries)]


def invalid(field: str | None, *messages: str) -> ApiError:
    return ApiError(400, [(field, list(messages))])


def invalid_many(entries: Iterable[FieldErrors]) -> ApiError:
    return ApiError(400, entries)


def unauthenticated(reason: str) -> ApiError:
    return ApiError(401, [("X-Api-Key", [reason])])


def not_found(field: str | None, message: str) -> ApiError:
    return ApiError(404, [(field, [message])])


def method_not_allowed(method: str, allowed: Iterable[str]) -> ApiError:
    allowed = sorted(allowed)
    return ApiError(
        405,
        [("method", [f"Method {method} is not allowed here; allowed: {', '.join(allowed)}."])],
        headers={"Allow": ", ".join(allowed)},
    )


def conflict(field: str | None, message: str) -> ApiError:
    """409: well formed, but the state of what it names refuses it."""
    return ApiError(409, [(field, [message])])


def gone(field: str | None, message: str) -> ApiError:
    """410: what the request names is no longer usable (an expired session)."""
    return ApiError(410, [(field, [message])])


def unavailable(message: str) -> ApiError:
    """503: a service payemu stands in for did not answer."""
    return ApiError(503, [(None, [message])])


def too_large(limit: int) -> ApiError:
    # sent before the body is all read: the connection closes (its rest is never a request)
    return ApiError(413, [("body", [f"The request body is larger than {limit} bytes."])], {"Connection": "close"})


def unsupported_media_type(content_type: str) -> ApiError:
    shown = content_type or "none"
    return ApiError(
        415,
        [("Content-Type", [f"Expected application/json, got {shown}."])],
    )


LIMIT_STATUS = 507  # Insufficient Storage: a memory limit that cannot make room (emulator.tenants.limits)


def limit_reached(field: str | None, message: str) -> ApiError:
    """507: a store holds its limit and nothing in it may be dropped."""
    return ApiError(LIMIT_STATUS, [(field, [message])])


def internal(message: str) -> ApiError:
    return ApiError(500, [(None, [message])])
