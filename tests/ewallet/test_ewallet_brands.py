"""Card brand detection of the payment page (the BIN table, through the simulator's brand_of)."""

from __future__ import annotations

import pytest

from emulator.contract.openapi import OpenApi
from emulator.ewallet import payment


@pytest.mark.parametrize(
    ("number", "brand"),
    [
        ("4111111111111111", "Visa"),
        ("4917610000000000", "Electron"),
        ("5555555555554444", "MasterCard"),
        ("2223003122003222", "MasterCard"),
        ("378282246310005", "AMEX"),
        ("6011111111111117", "Discover"),
        ("3566002020360505", "JCB"),
        ("36227206271667", "DinersClub"),
        ("9000000000000000", "Unspecified"),
    ],
)
def test_detect(number: str, brand: str) -> None:
    assert payment.brand(number) == brand


def test_every_brand_is_a_schema_card_type(openapi: OpenApi) -> None:
    from emulator.domain import cards

    allowed = set(openapi.document["components"]["schemas"]["Payments.CardTypes"]["enum"])
    assert set(cards.default_table().brands) <= allowed
