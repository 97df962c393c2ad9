"""JSON and HTTP on the wire: reading a request's body and parameters, writing JSON answers.

NaN, infinities, lone surrogates, huge integers and invalid UTF-8 are refused here with a
400; orjson does the common case, the standard library wherever orjson would answer differently."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from typing import Any

import orjson
from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response
from starlette.types import Message, Receive

from emulator.contract.openapi import Parameter
from emulator.domain import errors
from emulator.domain.safeparse import TooComplex, check_json_depth, orjson_reads

JSON_MEDIA = "application/json"
JSON_MEDIA_BYTES = JSON_MEDIA.encode("latin-1")
ABORT = "payemu.abort"  # scope["extensions"][ABORT](): close the connection without an answer (payemu's server)
_JSON_TYPES = ("application/json", "text/json")
# values the standard library would refuse are refused by orjson too (then json raises)
_STRICT = orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_DATACLASS


def dumps(body: Any) -> bytes:
    try:
        return orjson.dumps(body, option=_STRICT)
    except TypeError:  # integers past 64 bits, lone surrogates, keys that are not strings
        pass
    try:
        return json.dumps(body, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode()
    except UnicodeEncodeError:
        # a lone surrogate (e.g. from a YAML escape) has no UTF-8 form: send it \u-escaped
        return json.dumps(body, separators=(",", ":"), ensure_ascii=True, allow_nan=False).encode()


NOSNIFF = "X-Content-Type-Options"
_NOSNIFF_RAW = (b"x-content-type-options", b"nosniff")
_JSON_HEADERS = [(b"content-type", JSON_MEDIA_BYTES), _NOSNIFF_RAW]


def messages(status: int, headers: dict[str, str], payload: bytes | None, method: str) -> tuple[Message, Message]:
    """An answer (its JSON bytes, None: no body) as the two ASGI messages of a response (the
    headers a Starlette JSON response would have)."""
    if payload is not None and not headers and status >= 200 and status not in (204, 304):
        # most answers: a JSON body and no headers of their own
        raw = [*_JSON_HEADERS, (b"content-length", b"%d" % len(payload))]
    else:
        raw = [(name.lower().encode("latin-1"), value.encode("latin-1")) for name, value in headers.items()]
        named = {name for name, _ in raw}
        if payload is not None and b"content-type" not in named:
            raw += _JSON_HEADERS
        if not (status < 200 or status in (204, 304) or b"content-length" in named):
            raw.append((b"content-length", b"%d" % len(payload or b"")))
    return (
        {"type": "http.response.start", "status": status, "headers": raw},
        {"type": "http.response.body", "body": payload if payload is not None and method != "HEAD" else b""},
    )


class JsonResponse(Response):
    """A JSON answer, with ``nosniff`` so a browser never reads it as a script or a page."""

    media_type = JSON_MEDIA

    def init_headers(self, headers: Mapping[str, str] | None = None) -> None:
        super().init_headers(headers)
        if headers is None or NOSNIFF not in headers:
            self.raw_headers.append(_NOSNIFF_RAW)


def json_response(status: int, body: Any, headers: dict[str, str] | None = None) -> Response:
    if body is None:
        return Response(status_code=status, headers=headers)
    return JsonResponse(dumps(body), status_code=status, headers=headers)


def error_response(error: errors.ApiError) -> Response:
    return json_response(error.status, error.body, error.headers)


# -- reading the request ----------------------------------------------------------------
# compiled by re on the first body that needs it (one with an escape orjson refused)
_SURROGATE = "[\ud800-\udfff]"


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def _finite_float(text: str) -> float:
    number = float(text)
    if math.isinf(number):
        raise ValueError(f"the number {text[:40]} is too large")
    return number


def _has_lone_surrogate(value: Any) -> bool:
    """True when a string or key of ``value`` holds half a UTF-16 surrogate pair."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if re.search(_SURROGATE, item):
                return True
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return False


def parse_json(raw: bytes) -> Any:
    """The JSON value of a request body, or a 400 naming what is wrong."""
    # Bodies orjson refuses, or with 19+ digit integers it would make floats, are read again
    # by the standard library for the exact value or message.
    try:
        if orjson_reads(raw):
            return orjson.loads(raw)
    except (orjson.JSONDecodeError, TooComplex, RecursionError):
        pass  # the careful reading below names the problem
    try:
        # strict UTF-8 first: json.loads(bytes) would let raw surrogates (ED A0 80) through
        text = raw.decode("utf-8")
        check_json_depth(raw)
        value = json.loads(text, parse_constant=_reject_constant, parse_float=_finite_float)
        if (b"\\ud" in raw or b"\\uD" in raw) and _has_lone_surrogate(value):
            raise errors.invalid("body", "The JSON body holds a \\u escape of a lone surrogate (not Unicode text).")
        return value
    except UnicodeDecodeError:
        raise errors.invalid("body", "The request body is not valid UTF-8.") from None
    except TooComplex as exc:
        raise errors.invalid("body", f"The JSON body is nested too deeply: {exc}.") from None
    except RecursionError:
        raise errors.invalid("body", "The JSON body is nested too deeply.") from None
    except json.JSONDecodeError as exc:
        raise errors.invalid(
            "body", f"The request body is not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}."
        ) from None
    except ValueError as exc:
        if "integer string conversion" in str(exc):  # Python's guard against huge integers
            raise errors.invalid("body", "The JSON body holds a number of more than 4300 digits.") from None
        raise errors.invalid("body", f"The request body is not valid JSON: {exc}.") from None


async def read_body(request: Request, limit: int, declared: str | bytes | None = None) -> bytes:
    """The request's body, read from the ASGI ``receive`` (a 413 past ``limit`` bytes,
    :class:`ClientDisconnect` when the client goes first). ``declared``: the
    Content-Length header when the caller has it at hand (as sent or as text)."""
    if declared is None:
        declared = request.headers.get("content-length")
    return await receive_body(request.receive, limit, declared)


async def receive_body(receive: Receive, limit: int, declared: str | bytes | None) -> bytes:
    """:func:`read_body` from the ASGI ``receive`` itself; ``declared``: the Content-Length
    header (None: not sent)."""
    if declared is not None:
        try:
            if int(declared) > limit:
                raise errors.too_large(limit)
        except ValueError:
            raise errors.invalid("Content-Length", "The Content-Length header is not a number.") from None
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] != "http.request":
            if message["type"] == "http.disconnect":
                raise ClientDisconnect()
            continue
        chunk: bytes = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            raise errors.too_large(limit)
        if not message.get("more_body", False):
            if not chunks:
                return chunk  # the whole body in one message: the common case
            chunks.append(chunk)
            return b"".join(chunks)
        chunks.append(chunk)


def is_json_media(content_type: str) -> bool:
    if content_type == JSON_MEDIA:
        return True
    media = content_type.split(";", 1)[0].strip().lower()
    return media in _JSON_TYPES or (media.startswith("application/") and media.endswith("+json"))


def read_parameter(param: Parameter, raw: str | None) -> tuple[Any, list[errors.FieldErrors]]:
    label = param.name[:1].upper() + param.name[1:]
    if raw is None or (raw == "" and param.location != "query"):
        if param.required:
            return None, [(param.name, [f"The {label} field is required."])]
        return None, []
    value: Any = raw
    try:
        if param.kind == "integer":
            value = int(raw)
        elif param.kind == "number":
            value = _finite_float(raw)
        elif param.kind == "boolean":
            lowered = raw.lower()
            if lowered not in ("true", "false"):
                raise ValueError
            value = lowered == "true"
    except ValueError:
        kind = {"integer": "a whole number", "number": "a number", "boolean": "true or false"}
        return None, [(param.name, [f"The field {label} must be {kind[param.kind]}."])]
    value = param.validator.normalize(value)
    if not param.validator.is_valid(value):
        return None, param.validator.errors(value, root=param.name)
    return value, []
