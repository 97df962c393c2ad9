"""``payemu verify``'s comparison of two answers, its drift table and its ``--json`` report.

Answers are compared on what a client depends on: the status, ``Location`` and
``Retry-After``, the kind of body, and the fields present with their JSON types and enum
values; other values (references, times) differ between any two services. The report's
format is documented in docs/proxy-record-verify.md; later versions add keys, never change them."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict
from typing import Any

from emulator.contract.openapi import OpenApi
from emulator.domain.records import dataclass

REPORT_FORMAT = "payemu-verify"
REPORT_VERSION = 1
COMPARED_HEADERS = ("Location", "Retry-After")
ABSENT = "absent"


@dataclass
class RecordedAnswer:
    """What one side answered to one step (``status`` 0: not sent; ``skipped`` says why)."""

    status: int
    headers: Mapping[str, str]
    body: Any  # the JSON value; None for no body; a str for a body that is not JSON
    is_json: bool = True
    skipped: str | None = None


@dataclass
class Drift:
    operation: str
    step: str
    aspect: str
    field: str | None
    upstream: str
    payemu: str
    ledger: list[str] = dataclasses.field(default_factory=list)


def enum_fields(api: OpenApi) -> dict[str, frozenset[str]]:
    """Property name → its enumeration's values, for the whole document."""
    schemas = api.document.get("components", {}).get("schemas", {})
    found: dict[str, set[str]] = {}

    def target(node: Any) -> Any:
        for _ in range(8):
            if isinstance(node, dict) and "$ref" in node:
                node = schemas.get(str(node["$ref"]).rsplit("/", 1)[-1], {})
            elif isinstance(node, dict) and node.get("allOf") and len(node["allOf"]) == 1:
                node = node["allOf"][0]
            else:
                break
        return node

    for schema in schemas.values():
        for name, prop in (schema.get("properties") or {}).items():
            resolved = target(prop)
            if isinstance(resolved, dict) and resolved.get("type") == "array":
                resolved = target(resolved.get("items"))
            if isinstance(resolved, dict) and resolved.get("enum"):
                found.setdefault(name, set()).update(str(v) for v in resolved["enum"] if v is not None)
    return {name: frozenset(values) for name, values in found.items()}


def body_kind(answer: RecordedAnswer) -> str:
    body = answer.body
    if body is None:
        return "empty"
    if not answer.is_json:
        return "text"
    if isinstance(body, list):
        if body and all(isinstance(item, dict) and {"fieldName", "errors"} <= set(item) for item in body):
            return "ValidationErrorMessage array"
        return "array"
    if isinstance(body, dict):
        if "operationResultCode" in body:
            return "OperationResult"
        return "object"
    return _type(body)


def _type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def shape(value: Any, path: str = "") -> dict[str, set[str]]:
    """Every field path (``card.cardNumber``, ``errors[]``) → the JSON types seen there."""
    found: dict[str, set[str]] = {}
    stack: list[tuple[str, Any]] = [(path, value)]
    while stack:
        where, item = stack.pop()
        if where:
            found.setdefault(where, set()).add(_type(item))
        if isinstance(item, dict):
            stack.extend((f"{where}.{key}" if where else str(key), sub) for key, sub in item.items())
        elif isinstance(item, list):
            stack.extend((f"{where}[]", sub) for sub in item)
    return found


def enum_values(value: Any, enums: Mapping[str, frozenset[str]]) -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    stack: list[tuple[str, str, Any]] = [("", "", value)]
    while stack:
        where, name, item = stack.pop()
        if isinstance(item, dict):
            stack.extend((f"{where}.{key}" if where else str(key), str(key), sub) for key, sub in item.items())
        elif isinstance(item, list):
            stack.extend((f"{where}[]", name, sub) for sub in item)
        elif isinstance(item, str) and name in enums:
            found.setdefault(where, set()).add(item)
    return found


def _ignored(path: str, ignore: Sequence[str]) -> bool:
    return any(path == prefix or path.startswith((prefix + ".", prefix + "[")) for prefix in ignore)


def _field_entry(path: str, by_field: Mapping[str, str]) -> str | None:
    """The ledger entry of the nearest field of ``path`` that names one."""
    for name in reversed(path.replace("[]", "").split(".")):
        if name in by_field:
            return by_field[name]
    return None


def compare(
    operation: str,
    step: str,
    upstream: RecordedAnswer,
    payemu: RecordedAnswer,
    *,
    enums: Mapping[str, frozenset[str]],
    ledger: Sequence[str] = (),
    field_ledger: Mapping[str, str] | None = None,
    aspect_ledger: Mapping[str, str] | None = None,
    ignore: Sequence[str] = (),
) -> list[Drift]:
    """The differences between two answers to one step."""
    rows: list[Drift] = []
    by_field = field_ledger or {}

    def add(aspect: str, path: str | None, theirs: str, ours: str) -> None:
        named = _field_entry(path, by_field) if path else None
        entries = [named] if named else list(ledger)
        also = (aspect_ledger or {}).get(aspect)
        if also and also not in entries:
            entries.append(also)
        rows.append(Drift(operation, step, aspect, path, theirs, ours, entries))

    if upstream.status != payemu.status:
        add("status", None, str(upstream.status), str(payemu.status))
    for name in COMPARED_HEADERS:
        theirs, ours = _header(upstream.headers, name), _header(payemu.headers, name)
        if (theirs is None) != (ours is None):
            add("header", name, "present" if theirs is not None else ABSENT, "present" if ours is not None else ABSENT)
    kinds = body_kind(upstream), body_kind(payemu)
    if kinds[0] != kinds[1]:
        error = upstream.status >= 400 or payemu.status >= 400
        add("error-body" if error else "field", None if error else "(body)", kinds[0], kinds[1])
        return rows
    if not upstream.is_json or not payemu.is_json:
        return rows
    theirs_shape, ours_shape = shape(upstream.body), shape(payemu.body)
    for path in sorted(set(theirs_shape) | set(ours_shape)):
        if _ignored(path, ignore):
            continue
        theirs_types, ours_types = theirs_shape.get(path), ours_shape.get(path)
        if theirs_types is None or ours_types is None:
            add("field", path, _types(theirs_types), _types(ours_types))
        elif theirs_types != ours_types:
            add("type", path, _types(theirs_types), _types(ours_types))
    theirs_enum, ours_enum = enum_values(upstream.body, enums), enum_values(payemu.body, enums)
    for path in sorted(set(theirs_enum) & set(ours_enum)):
        if not _ignored(path, ignore) and theirs_enum[path] != ours_enum[path]:
            add("enum", path, ", ".join(sorted(theirs_enum[path])), ", ".join(sorted(ours_enum[path])))
    return rows


def _types(types: set[str] | None) -> str:
    return " or ".join(sorted(types)) if types else ABSENT


def _header(headers: Mapping[str, str], name: str) -> str | None:
    lowered = name.lower()
    return next((value for key, value in headers.items() if key.lower() == lowered), None)


# -- rendering --------------------------------------------------------------------------
COLUMNS = ("operation", "step", "aspect", "field", "upstream", "payemu", "ledger")
_WIDEST = 40


def table(rows: Iterable[Drift]) -> str:
    cells = [
        [
            row.operation,
            row.step,
            row.aspect,
            row.field or "-",
            row.upstream,
            row.payemu,
            ", ".join(row.ledger) or "-",
        ]
        for row in sorted(rows, key=lambda r: r.operation)
    ]
    cells = [[text if len(text) <= _WIDEST else text[: _WIDEST - 1] + "…" for text in line] for line in cells]
    widths = [max([len(name), *(len(line[i]) for line in cells)]) for i, name in enumerate(COLUMNS)]
    lines = ["  ".join(name.ljust(w) for name, w in zip(COLUMNS, widths, strict=True)).rstrip()]
    lines += ["  ".join(text.ljust(w) for text, w in zip(line, widths, strict=True)).rstrip() for line in cells]
    return "\n".join(lines)


def document(
    *,
    header: Mapping[str, Any],
    steps: Sequence[Mapping[str, Any]],
    rows: Sequence[Drift],
    operations: int,
) -> dict[str, Any]:
    """The ``--json`` report."""
    drifting = sorted({row.operation for row in rows})
    return {
        "format": REPORT_FORMAT,
        "version": REPORT_VERSION,
        **header,
        "steps": list(steps),
        "drift": [asdict(row) for row in rows],
        "summary": {"steps": len(steps), "operations": operations, "differences": len(rows), "drifting": drifting},
    }
