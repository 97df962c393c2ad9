"""emulator.http.validation: when a valid body may skip the case-insensitive rewrite, and
the fast validator's form of a schema (the same verdicts, fewer exceptions)."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import fastjsonschema
import pytest

from emulator.http.openapi import OpenApi
from emulator.http.validation import FastForm, SchemaCompiler

OLDER = Path(__file__).resolve().parent / "data" / "openapi-1.0.9.36.json"

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


# -- the fast validator's form (FastForm) -----------------------------------------------------
NULLABLE_DEFINITIONS: dict[str, Any] = {
    **DEFINITIONS,
    "Tree": {"type": "object", "properties": {"child": {"anyOf": [{"type": "null"}, {"$ref": "#/definitions/Tree"}]}}},
}


@pytest.mark.parametrize(
    ("schema", "fast"),
    [
        # a nullable reference: the referenced schema with null added (to its enum too)
        (
            {"anyOf": [{"type": "null"}, {"$ref": "#/definitions/Brand"}]},
            {"type": ["string", "null"], "enum": ["Visa", "MasterCard", None]},
        ),
        # an inline object, null second, an annotation beside it
        (
            {"description": "d", "anyOf": [{"type": "object", "required": ["a"]}, {"type": "null"}]},
            {"type": ["object", "null"], "required": ["a"]},
        ),
        # null beside a schema that constrains nothing: anything goes
        ({"anyOf": [{"type": "null"}, {"description": "any JSON", "x-payemu-source": {}}]}, {}),
        # left alone: two non-null branches; a sibling constraint; oneOf over a type that takes null already
        ({"anyOf": [{"type": "string"}, {"type": "integer"}]}, None),
        ({"anyOf": [{"type": "null"}, {"type": "string"}], "minLength": 2}, None),
        ({"oneOf": [{"type": "null"}, {"type": ["string", "null"]}]}, None),
    ],
)
def test_fast_form_merges_a_null_branch_only_where_that_is_the_same_schema(schema: Any, fast: Any) -> None:
    assert FastForm(NULLABLE_DEFINITIONS).schema(schema) == (schema if fast is None else fast)


def test_fast_form_does_not_inline_a_definition_into_itself() -> None:
    tree = FastForm(NULLABLE_DEFINITIONS).definitions()["Tree"]
    assert tree["properties"]["child"] == {"anyOf": [{"type": "null"}, {"$ref": "#/definitions/Tree"}]}


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


def _passes(validate: Any, value: Any) -> bool:
    try:
        validate(value)
    except fastjsonschema.JsonSchemaException:
        return False
    return True


@pytest.mark.parametrize("document", ["served", "1.0.9.36"])
def test_the_fast_validator_agrees_with_jsonschema_on_every_schema_of_a_document(document: str) -> None:
    api = OpenApi.load(None if document == "served" else OLDER)
    schemas = {id(c): c for op in api.operations.values() for c in [op.body, *op.responses.values()] if c}
    assert len(schemas) > 15
    rng = random.Random(7)
    checked = 0
    for compiled in schemas.values():
        # the same library over the schema as written (formats included)
        as_written = fastjsonschema.compile({"definitions": api.compiler.definitions, **compiled.schema})
        for _ in range(150):
            value = _sample(compiled.schema, api.compiler.definitions, rng)
            assert compiled.is_valid(value) is _passes(as_written, value), (compiled.schema, value)
            checked += 1
    assert checked > 2000
