"""The error bodies, as the HTTP modules import them: everything lives in :mod:`emulator.errors`
(the bottom layer, so the domain raises the same errors without importing ``http``)."""

from emulator.errors import (
    LIMIT_STATUS,
    MAX_MESSAGE_CHARS,
    ApiError,
    FieldErrors,
    clipped,
    error_body,
    internal,
    invalid,
    invalid_many,
    limit_reached,
    merge,
    method_not_allowed,
    not_found,
    too_large,
    unauthenticated,
    unsupported_media_type,
)

__all__ = [
    "LIMIT_STATUS",
    "MAX_MESSAGE_CHARS",
    "ApiError",
    "FieldErrors",
    "clipped",
    "error_body",
    "internal",
    "invalid",
    "invalid_many",
    "limit_reached",
    "merge",
    "method_not_allowed",
    "not_found",
    "too_large",
    "unauthenticated",
    "unsupported_media_type",
]
