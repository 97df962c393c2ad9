"""emulator.contract.validation: when a valid body may skip the case-insensitive rewrite, and
the fast validator (jsonschema-rs) judging as jsonschema, which writes the messages."""

from __future__ import annotations

import random
from typing import Any

import pytest
from jsonschema import Draft7Validator, FormatChecker

from emulator.contract.openapi import OpenApi
from emulator.contract.validation import SchemaCompiler
from tests.support.paths import TESTS_DIR

OLDER = TESTS_DIR / "data" / "openapi-1.0.9.36.json"

DEFINITIONS: dict[str, Any] = {
    "Brand": {"type": "string", "enum": ["Visa", "MasterCard"]},
    "Card": {
        "type": "object",
        "properties": {"brand": {"$ref": "#/definitions/Brand"}, "number": {"type": "string"}},
        "additionalProperties": False,
    },
}


@pytest.mark.parametrize(
    ("schema", "closed"),
    [
        ({"$ref": "#/definitions/Card"}, True),
        ({"type": "array", "items": {"$ref": "#/definitions/Card"}}, True),
        ({"type": "object", "properties": {"card": {"$ref": "#/definitions/Card"}}}, False),  # extra names pass
        ({"anyOf": [{"$ref": "#/definitions/Brand"}, {"type": "null"}]}, True),
        ({"anyOf": [{"$ref": "#/definitions/Brand"}, {"type": "string"}]}, False),  # "visa" passes as text
        ({"anyOf": [{"enum": ["Visa"]}, {"type": "string"}]}, False),  # "visa" is valid and would be rewritten
    ],
)
def test_canonical_when_valid(schema: dict[str, Any], closed: bool) -> None:
    assert SchemaCompiler(DEFINITIONS).compile(schema).canonical_when_valid is closed


def test_a_valid_body_of_a_closed_schema_is_what_normalizing_gives() -> None:
    compiled = SchemaCompiler(DEFINITIONS).compile({"$ref": "#/definitions/Card"})
    body = {"brand": "Visa", "number": "4111"}
    assert compiled.is_valid(body)
    assert compiled.normalize(dict(body)) == body
    assert not compiled.is_valid({"Brand": "visa"})
    assert compiled.normalize({"Brand": "visa"}) == {"brand": "Visa"}


# -- the fast validator agrees with jsonschema ---------------------------------------------
def _sample(schema: Any, definitions: dict[str, Any], rng: random.Random, depth: int = 0) -> Any:
    """A value shaped by ``schema``, valid or not: fields left out, set to null or to a
    value of another type at random (what a validator's verdicts differ on)."""
    if rng.random() < 0.08 or depth > 6 or not isinstance(schema, dict):
        return rng.choice([None, "x", "", 0, 2.5, -1, True, [], {}, "Visa", "visa", 10**20, "2020-01-01"])
    if "$ref" in schema:
        return _sample(definitions.get(schema["$ref"].rsplit("/", 1)[-1]), definitions, rng, depth + 1)
    for keyword in ("anyOf", "oneOf", "allOf"):
        if schema.get(keyword):
            return _sample(rng.choice(schema[keyword]), definitions, rng, depth + 1)
    if schema.get("enum"):
        return rng.choice(schema["enum"])
    kinds = schema.get("type", "object" if "properties" in schema else "string")
    kind = rng.choice(kinds) if isinstance(kinds, list) else kinds
    if kind == "object":
        return {
            name: _sample(sub, definitions, rng, depth + 1)
            for name, sub in (schema.get("properties") or {}).items()
            if rng.random() < 0.85
        } | ({"unknownName": 1} if rng.random() < 0.05 else {})
    if kind == "array":
        return [_sample(schema.get("items"), definitions, rng, depth + 1) for _ in range(rng.randrange(3))]
    return {"string": "text", "integer": 7, "number": 10.5, "boolean": False, "null": None}.get(kind, "x")


@pytest.mark.parametrize("document", ["served", "1.0.9.36"])
def test_the_fast_validator_agrees_with_jsonschema_on_every_schema_of_a_document(document: str) -> None:
    api = OpenApi.load(None if document == "served" else OLDER)
    schemas = {id(c): c for op in api.operations.values() for c in [op.body, *op.responses.values()] if c}
    assert len(schemas) > 15
    rng = random.Random(7)
    checked = 0
    for compiled in schemas.values():
        # the library that writes the error messages (formats included)
        strict = Draft7Validator(
            {"definitions": api.compiler.definitions, **compiled.schema}, format_checker=FormatChecker()
        )
        for _ in range(150):
            value = _sample(compiled.schema, api.compiler.definitions, rng)
            verdict = compiled.is_valid(value)
            assert verdict is strict.is_valid(value), (compiled.schema, value)
            assert (compiled.errors(value) == []) is verdict  # errors name a field whenever invalid
            checked += 1
    assert checked > 2000


@pytest.mark.parametrize(
    ("value", "valid"),
    [
        ({"brand": "Visa", "number": "\ud800"}, True),  # a lone surrogate: no UTF-8 form, judged by jsonschema
        ({"brand": "Visa", 7: "x"}, False),  # a key that is not text
        ({"brand": "Visa", "number": "4111"}, True),
        ({"brand": "visa"}, False),
    ],
)
def test_a_value_the_fast_validator_cannot_take_is_judged_by_jsonschema(value: Any, valid: bool) -> None:
    compiled = SchemaCompiler(DEFINITIONS).compile({"$ref": "#/definitions/Card"})
    assert compiled.is_valid(value) is valid


def test_a_validator_is_given_the_definitions_its_schema_reaches() -> None:
    definitions = {
        **DEFINITIONS,
        "Wallet": {
            "type": "object",
            "properties": {"cards": {"type": "array", "items": {"$ref": "#/definitions/Card"}}},
        },
        "a/b": {"type": "integer"},  # a name with a slash: ~1 in a JSON pointer
        "Unused": {"type": 12},  # no schema reaches it: jsonschema-rs would refuse it if handed it
    }
    compiler = SchemaCompiler(definitions)
    wallet = compiler.compile({"$ref": "#/definitions/Wallet"})
    count, reached = compiler.reached(wallet.schema)
    assert sorted(reached) == ["Brand", "Card", "Wallet"]
    assert count == 2 + 7 + 8 + 5  # every value of the schema, Wallet, Card and Brand
    assert wallet.is_valid({"cards": [{"brand": "Visa", "number": "4111"}]})
    assert not wallet.is_valid({"cards": [{"brand": "Amex"}]})
    assert wallet.errors({"cards": [{"brand": "Amex"}]})  # jsonschema resolves the same references
    slashed = compiler.compile({"properties": {"n": {"$ref": "#/definitions/a~1b"}}})
    assert list(compiler.reached(slashed.schema)[1]) == ["a/b"]
    assert slashed.is_valid({"n": 3}) and not slashed.is_valid({"n": "3"})
    assert compiler.footprint() == count + compiler.reached(slashed.schema)[0]
