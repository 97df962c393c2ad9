"""Reading requests as leniently as the real service does, and saying so.

The real service (ASP.NET) ignores unknown members, reads numbers sent as strings and
still takes old spellings; payemu does too and reports each leniency as a ``kind=field``
warning (``X-Payemu-Warnings``, the journal, the dashboard). Strict mode answers each
with a 400 instead. Case-insensitive names are the documented binding, not a leniency."""

from __future__ import annotations

import math
from typing import Any
from urllib.parse import quote

from emulator.contract.validation import Compiled
from emulator.domain import errors
from emulator.domain.errors import field_path
from emulator.domain.masking import mask_text

WARNINGS_HEADER = "X-Payemu-Warnings"
# Older names the service still binds: old name → current property of the same object.
RENAMED = {"clientCertificate": "paymentGatewayCertName"}
_NUMBER_KINDS = ("number", "integer")
MAX_WARNINGS = 20  # in one header; property names are %-encoded (a header is ASCII)


class _Reader:
    def __init__(self, definitions: dict[str, Any]) -> None:
        self.definitions = definitions
        self.found: list[tuple[str, str, str]] = []  # (kind, field, message)

    def resolve(self, schema: Any, value: Any) -> Any:
        """The schema for ``value``: references followed, the first non-null branch that fits."""
        for _ in range(32):
            if not isinstance(schema, dict):
                return schema
            if "$ref" in schema:
                schema = self.definitions.get(schema["$ref"].rsplit("/", 1)[-1], {})
                continue
            branches = schema.get("anyOf") or schema.get("oneOf")
            if branches:
                useful = [self.resolve(b, value) for b in branches]
                useful = [
                    b for b in useful if isinstance(b, dict) and b.get("enum") != [None] and b.get("type") != "null"
                ]
                schema = next((b for b in useful if _fits(b, value)), useful[0] if useful else {})
                continue
            return schema
        return schema

    def read(self, schema: Any, value: Any, path: list[Any]) -> Any:
        schema = self.resolve(schema, value)
        if not isinstance(schema, dict):
            return value
        if not path and _kinds(schema) == {"string"} and _wrapped_token(value):
            self.found.append(
                ("wrapped-token", "body", 'The body is {"token": ...}; the documented body is the string.')
            )
            return value["token"]
        enum = schema.get("enum")
        if type(value) is int and isinstance(enum, list) and all(isinstance(v, str) or v is None for v in enum):
            return self._enum_number(enum, value, path)
        if isinstance(value, str) and _kinds(schema) & set(_NUMBER_KINDS) and "string" not in _kinds(schema):
            number = _number(value, "integer" in _kinds(schema) and "number" not in _kinds(schema))
            if number is not None:
                where = field_path(path) or "body"
                self.found.append(
                    ("number-as-string", where, f"The field {where} is a number sent as a string ({value!r}).")
                )
                return number
            return value
        if isinstance(value, dict) and isinstance(schema.get("properties"), dict):
            return self._object(schema, value, path)
        if isinstance(value, list) and isinstance(schema.get("items"), dict):
            return [self.read(schema["items"], item, [*path, i]) for i, item in enumerate(value)]
        return value

    def _enum_number(self, enum: list[Any], value: int, path: list[Any]) -> Any:
        """An enum sent as its number, its place in the document's list (as System.Text.Json reads it)."""
        names = [v for v in enum if v is not None]
        if not 0 <= value < len(names):
            return value  # no member has that number: the schema check names the field
        where = field_path(path) or "body"
        self.found.append(("enum-as-integer", where, f"The field {where} is an enum sent as its number ({value})."))
        return names[value]

    def _object(self, schema: dict[str, Any], value: dict[str, Any], path: list[Any]) -> dict[str, Any]:
        props: dict[str, Any] = schema["properties"]
        closed = schema.get("additionalProperties") is False
        out: dict[str, Any] = {}
        for key, item in value.items():
            if key in props:
                out[key] = self.read(props[key], item, [*path, key])
                continue
            if not closed:
                out[key] = item
                continue
            where = field_path([*path, key]) or key
            new = RENAMED.get(key)
            if new in props:
                self.found.append(("renamed-property", where, f"The property {key} is now called {new}."))
                if value.get(new) is None:
                    out[new] = self.read(props[new], item, [*path, new])
                continue
            self.found.append(
                ("unknown-property", where, f"Unknown property '{key}'. Allowed properties: {', '.join(props)}.")
            )
        return out


def _wrapped_token(value: Any) -> bool:
    """``{"token": "..."}`` where the body is a bare string (the eWallet library's example)."""
    return isinstance(value, dict) and list(value) == ["token"] and isinstance(value["token"], str)


def _kinds(schema: dict[str, Any]) -> set[str]:
    kind = schema.get("type")
    return set(kind) if isinstance(kind, list) else {kind} if isinstance(kind, str) else set()


def _fits(schema: dict[str, Any], value: Any) -> bool:
    kinds = _kinds(schema)
    if isinstance(value, dict):
        return "properties" in schema or "object" in kinds
    if isinstance(value, list):
        return "array" in kinds
    return not kinds or bool(kinds - {"object", "array"})


def _number(text: str, integer: bool) -> int | float | None:
    """``"10.00"`` → 10.0 as .NET reads a quoted number; None when it is not one."""
    text = text.strip()
    if not text or not text.isascii():
        return None
    try:
        if integer:
            return int(text)
        number = float(text)
    except ValueError:
        return None
    if not math.isfinite(number) or text.lower().lstrip("+-") in ("nan", "inf", "infinity"):
        return None
    return number


def read(body: Compiled, value: Any, strict: bool, warnings: list[str]) -> Any:
    """``value`` read leniently against the body schema, each leniency added to ``warnings``."""
    if strict:
        return value  # the schema check then answers each leniency with its 400, with every other problem
    reader = _Reader(body._compiler.definitions)  # the compiler's own table
    relaxed = reader.read(body.schema, value, [])
    if not reader.found:
        return value
    warnings.extend(
        f"{kind}={quote(mask_text(where)[:100], safe='.[]_-*')}" for kind, where, _ in reader.found[:MAX_WARNINGS]
    )
    if len(reader.found) > MAX_WARNINGS:
        warnings.append(f"more={len(reader.found) - MAX_WARNINGS}")
    return relaxed


def forgiven(body: Any, problems: list[errors.FieldErrors]) -> list[errors.FieldErrors]:
    """Schema problems left once a ``userToken`` stands in for the card (then not required)."""
    if not isinstance(body, dict) or not body.get("userToken"):
        return problems
    excused = {"card": "The Card field is required.", "card.cardNumber": "The CardNumber field is required."}
    return [(name, msgs) for name, msgs in problems if not (name in excused and msgs == [excused[name]])]
