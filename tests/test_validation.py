"""emulator.http.validation: when a valid body may skip the case-insensitive rewrite."""

from __future__ import annotations

from typing import Any

import pytest

from emulator.http.validation import SchemaCompiler

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
