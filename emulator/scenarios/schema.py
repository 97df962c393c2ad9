"""The JSON Schema of one scenario rule (the structural check of every scenario file).

``ienum`` is an extra keyword: a case-insensitive enum (``charge`` is read as ``Charge``).
``x-expected`` names what an ``anyOf`` wants when the value fits none of its branches;
``x-message`` replaces a ``pattern`` failure's message.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from functools import cache
from typing import TYPE_CHECKING, Any

import jsonschema_rs

from emulator.domain.didyoumean import suggestion, unknown
from emulator.domain.vocabulary import AUTHENTICATION_OPTIONS, FAULTS, OPERATIONS, RESULT_CODES, SETTLE_RESULTS

if TYPE_CHECKING:
    from jsonschema import Draft7Validator
    from jsonschema.exceptions import ValidationError

MAX_DELAY_MS = 60000
MAX_GATEWAY_FIELDS = 10
MAX_SETTLE_SECONDS = 365 * 86400

_TEXT: dict[str, Any] = {"type": "string", "minLength": 1, "maxLength": 200}
_CARD: dict[str, Any] = {
    "type": ["string", "integer"],
    "minimum": 0,
    "pattern": r"^\s*[0-9][0-9 -]*$",
    "x-message": "a card number holds digits (spaces and dashes allowed)",
}
_CODE: dict[str, Any] = {"type": ["string", "integer"], "minimum": 0, "minLength": 1, "maxLength": 20}
_CVV: dict[str, Any] = {
    "type": ["string", "integer"],
    "minimum": 0,
    "pattern": "^[0-9]{3,4}$",
    "x-message": "a CVV is 3 or 4 digits",
}
_OPERATION: dict[str, Any] = {"type": "string", "ienum": list(OPERATIONS)}
_AMOUNT: dict[str, Any] = {"type": "number", "minimum": 0}

WHEN: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "cardNumber": {
            "anyOf": [_CARD, {"type": "array", "minItems": 1, "items": _CARD}],
            "x-expected": "a card number or a list of card numbers",
        },
        "amount": {
            "anyOf": [
                _AMOUNT,
                {
                    "type": "object",
                    "additionalProperties": False,
                    "minProperties": 1,
                    "properties": {"min": _AMOUNT, "max": _AMOUNT},
                },
            ],
            "x-expected": "a number or {min, max}",
        },
        "currency": {
            "type": "string",
            "pattern": "^[A-Za-z]{3}$",
            "x-message": "a currency is a three-letter code such as USD",
        },
        "operation": {
            "anyOf": [_OPERATION, {"type": "array", "minItems": 1, "items": _OPERATION}],
            "x-expected": "an operation or a list of operations",
        },
        "gateway": _TEXT,
        "account": _TEXT,
        "holderName": {
            "anyOf": [_TEXT, {"type": "array", "minItems": 1, "items": _TEXT}],
            "x-expected": "a card holder name or a list of them",
        },
        "postCode": {
            "anyOf": [_CODE, {"type": "array", "minItems": 1, "items": _CODE}],
            "x-expected": "a post code or a list of them",
        },
        "cvv": {
            "anyOf": [_CVV, {"type": "array", "minItems": 1, "items": _CVV}],
            "x-expected": "a CVV (3 or 4 digits) or a list of them",
        },
        "attempt": {
            "anyOf": [
                {"type": "integer", "minimum": 1},
                {"type": "array", "minItems": 1, "items": {"type": "integer", "minimum": 1}},
            ],
            "x-expected": "an attempt number (1 = primary) or a list of them",
        },
    },
}

THEN: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["operationResultCode"],
    "properties": {
        "operationResultCode": {"type": "string", "ienum": list(RESULT_CODES)},
        "rejectReasonCode": {
            "type": "string",
            "maxLength": 64,
            "pattern": "^[A-Za-z][A-Za-z0-9_]*$",
            "x-message": "a reject reason is a word such as InsufficientFunds",
        },
        "gatewayResultCode": {"type": ["string", "integer"], "minLength": 1, "maxLength": 64},
        "gatewayResultDescription": {"type": "string", "maxLength": 500},
        "delayMs": {"type": "integer", "minimum": 0, "maximum": MAX_DELAY_MS},
        # the delay is the amount's cents in seconds (Zeamster's $8.XX and $9.XX test amounts)
        "delayFromCents": {"type": "boolean"},
        "fault": {"type": "string", "ienum": list(FAULTS)},
        "settlesTo": {"type": "string", "ienum": list(SETTLE_RESULTS)},
        "settleAfterSeconds": {"type": "number", "minimum": 0, "maximum": MAX_SETTLE_SECONDS},
        # a partial authorization: Success for this amount (major units) when the request asked for more
        "approvedAmount": {"type": "number", "exclusiveMinimum": 0, "maximum": 1e12},
        # eWallet sessions only: how the card form authenticates the customer first
        "authentication": {"type": "string", "ienum": list(AUTHENTICATION_OPTIONS)},
        # fields of the gateway's own answer (customGatewayResponse) set by dotted path, for a
        # native code the gateway gives a reason (Adyen's refusalReasonCode)
        "gatewayFields": {
            "type": "object",
            "maxProperties": MAX_GATEWAY_FIELDS,
            "propertyNames": {
                "maxLength": 100,
                "pattern": r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*){0,4}$",
                "x-message": "a field is a dotted path such as refusalReasonCode or transactionResponse.responseCode",
            },
            "additionalProperties": {"type": ["string", "number", "boolean", "null"], "maxLength": 200},
        },
    },
}

RULE: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["name"],
    "properties": {
        "name": {
            "type": "string",
            "maxLength": 100,
            "pattern": r"^\S(.*\S)?$",
            "x-message": "a rule name is non-empty text without leading or trailing spaces",
        },
        "description": {"type": "string", "maxLength": 500},
        # where the trigger comes from: the URL of the gateway's documentation, or "payemu"
        # for payemu's own conventions (`source` is the file:line the listing adds)
        "origin": {"type": "string", "maxLength": 300},
        "when": WHEN,
        "then": THEN,
        "sequence": {"type": "array", "minItems": 1, "maxItems": 1000, "items": THEN},
    },
}


def _ienum(validator: Any, choices: list[str], instance: Any, schema: dict[str, Any]) -> Iterator[ValidationError]:
    from jsonschema.exceptions import ValidationError

    if isinstance(instance, str) and instance.lower() not in {c.lower() for c in choices}:
        yield ValidationError(
            f"{instance!r} is not one of {', '.join(choices)}{suggestion(instance, choices, fold=True)}"
        )


@cache
def _rule_validator() -> Draft7Validator:
    """jsonschema with ``ienum``: it words every problem (imported on first use: a file
    of valid rules never needs it)."""
    from jsonschema import Draft7Validator, validators

    extended = validators.extend(Draft7Validator, {"ienum": _ienum})  # type: ignore[no-untyped-call]
    validator: Draft7Validator = extended(RULE)
    return validator


_WORD = r"[A-Za-z0-9]+"


def _fast_form(schema: Any) -> Any:
    """``schema`` for jsonschema-rs: each ``ienum`` becomes a pattern of its choices with
    every letter in both cases (``[cC][hH]…``). That pattern takes a value only where
    ``ienum`` does; the other way round (a non-ASCII letter whose lower case is ASCII),
    jsonschema decides, since a value jsonschema-rs refuses is checked again by it."""
    if isinstance(schema, list):
        return [_fast_form(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    out = {key: _fast_form(value) for key, value in schema.items() if key != "ienum"}
    if "ienum" in schema:
        choices = schema["ienum"]
        if not all(re.fullmatch(_WORD, choice) for choice in choices):
            raise ValueError(f"ienum choices must be letters and digits: {choices}")
        either = "|".join("".join(f"[{c.lower()}{c.upper()}]" if c.isalpha() else c for c in x) for x in choices)
        out["allOf"] = [*out.get("allOf", []), {"pattern": f"^(?:{either})$"}]
    return out


@cache
def _fast() -> jsonschema_rs.Draft7Validator:
    return jsonschema_rs.Draft7Validator(_fast_form(RULE), validate_formats=False)


def fits(schema: dict[str, Any], instance: Any) -> bool:
    """Whether ``instance`` has one of the JSON types ``schema`` declares."""
    declared = schema.get("type")
    types = declared if isinstance(declared, list) else [declared]
    return any(_rule_validator().is_type(instance, t) for t in types if t)


def rule_errors(rule: Any) -> Iterator[tuple[list[Any], str]]:
    """(path inside the rule, reason) for every structural problem of ``rule``."""
    try:
        if _fast().is_valid(rule):  # the common case, in microseconds
            return
    except ValueError:  # a value jsonschema-rs cannot take (a key that is not text)
        pass
    for error in sorted(_rule_validator().iter_errors(rule), key=lambda e: list(map(str, e.absolute_path))):
        yield from _explain(error)


def _explain(error: ValidationError) -> Iterator[tuple[list[Any], str]]:
    path = list(error.absolute_path)
    schema = error.schema if isinstance(error.schema, dict) else {}
    if error.validator == "anyOf":
        branches: list[Any] = error.validator_value  # type: ignore[assignment]
        for index, branch in enumerate(branches):
            if fits(branch, error.instance):
                for sub in error.context or []:
                    if sub.relative_schema_path[0] == index:
                        yield from _explain(sub)
                return
        yield path, f"expected {schema.get('x-expected', 'another kind of value')}, got {error.instance!r}"
    elif error.validator == "additionalProperties":
        allowed = list(schema.get("properties", {}))
        keys: dict[str, Any] = error.instance  # type: ignore[assignment]
        for key in keys:
            if key not in allowed:
                yield [*path, key], unknown("key", key, allowed)
    elif error.validator == "required":
        required: list[str] = error.validator_value  # type: ignore[assignment]
        for key in required:
            if isinstance(error.instance, dict) and key not in error.instance:
                yield path, f"missing key {key!r}"
    elif error.validator == "pattern" and "x-message" in schema:
        yield path, f"{schema['x-message']}, got {error.instance!r}"
    elif error.validator == "type":
        wanted = " or ".join(_YAML_NAMES.get(t, t) for t in _as_list(error.validator_value))
        yield path, f"expected {wanted}, got {error.instance!r}"
    else:
        yield path, error.message


_YAML_NAMES = {
    "object": "a mapping",
    "array": "a list",
    "string": "text",
    "number": "a number",
    "integer": "an integer",
}


def _as_list(value: Any) -> list[str]:
    return [str(v) for v in value] if isinstance(value, list) else [str(value)]
