"""emulator.catalog.templates: a compiled template fills in the catalog's order, with each
answer its own object, whatever mix of constants, placeholders and nested parts it has."""

from __future__ import annotations

from typing import Any

import pytest

from emulator.catalog.templates import compile_template

VALUES = {"reference": "ch_1", "code": "0", "operation": "Charge", "amount": 10.5}


@pytest.mark.parametrize(
    ("template", "expected"),
    [
        ({"mock": True, "result": "{code}", "reference": "{reference}", "operation": "{operation}"},
         {"mock": True, "result": "0", "reference": "ch_1", "operation": "Charge"}),
        ({"only": "{reference}", "kept": 1}, {"only": "ch_1", "kept": 1}),
        ({"kept": 1, "also": None}, {"kept": 1, "also": None}),
        ({"outer": {"id": "{reference}", "n": "{amount}"}, "text": "paid {amount}", "first": "{code}"},
         {"outer": {"id": "ch_1", "n": 10.5}, "text": "paid 10.5", "first": "0"}),
        ({"list": ["{code}", {"op": "{operation}"}], "unknown": "{nope}"},
         {"list": ["0", {"op": "Charge"}], "unknown": "{nope}"}),
    ],
)  # fmt: skip
def test_a_dict_is_filled_in_the_templates_order(template: dict[str, Any], expected: dict[str, Any]) -> None:
    compiled = compile_template(template, VALUES)
    filled = compiled.fill(VALUES)
    assert filled == expected
    assert list(filled) == list(template), "the keys keep the catalog's order (the answer's JSON text does too)"


def test_each_fill_is_an_answer_of_its_own() -> None:
    compiled = compile_template({"id": "{reference}", "fixed": "x", "inner": {"id": "{reference}"}}, VALUES)
    first = compiled.fill(VALUES)
    first["fixed"] = "changed"
    first["inner"]["id"] = "changed"
    second = compiled.fill({**VALUES, "reference": "ch_2"})
    assert second == {"id": "ch_2", "fixed": "x", "inner": {"id": "ch_2"}}
    assert compiled.names == {"reference"}
