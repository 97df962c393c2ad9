"""emulator.contract.dotnet_binder: a number with a fraction in an integer field is found wherever
the schema puts the field (objects, arrays, arrays of objects), and only there."""

from __future__ import annotations

from typing import Any

import pytest

from emulator.contract import dotnet_binder as binder

PATHS: tuple[binder.Path, ...] = (
    ("card", "expirationMonth"),
    ("card", "expirationYear"),
    ("storedCards", None, "expirationMonth"),
    ("counts", None),
    ("top",),
)


@pytest.mark.parametrize(
    ("value", "fields"),
    [
        ({"card": {"expirationMonth": 12, "expirationYear": 2030}, "amount": 10.5}, []),
        ({"card": {"expirationMonth": 12.0, "expirationYear": 2030}}, ["card.expirationMonth"]),
        ({"card": {"expirationMonth": 1, "expirationYear": 2030.5}}, ["card.expirationYear"]),
        ({"storedCards": [{"expirationMonth": 1}, {"expirationMonth": 2.0}]}, ["storedCards[1].expirationMonth"]),
        ({"counts": [1, 2, 3.5]}, ["counts[2]"]),
        ({"top": 4.0}, ["top"]),
        ({"card": "not an object", "storedCards": {"expirationMonth": 1.5}, "counts": 1.5}, []),
        ({"other": {"expirationMonth": 1.5}}, []),
        ([1.5], []),
    ],
)
def test_a_fraction_is_found_in_an_integer_field_only(value: Any, fields: list[str]) -> None:
    found = binder.fractions(value, PATHS, binder.tree(PATHS))
    assert [name for name, _ in found] == fields
    assert binder.has_fraction(value, binder.tree(PATHS)) is bool(fields)
    assert binder.fractions(value, PATHS) == found  # the tree made on the spot gives the same


def test_the_tree_groups_paths_by_their_names() -> None:
    assert binder.tree(PATHS) == {
        "card": {"expirationMonth": {}, "expirationYear": {}},
        "storedCards": {None: {"expirationMonth": {}}},
        "counts": {None: {}},
        "top": {},
    }


def test_a_body_that_is_itself_an_integer() -> None:
    assert [name for name, _ in binder.fractions(3.5, ((),))] == ["body"]
    assert binder.fractions(3, ((),)) == []
