"""Card brand from the card number, by the BIN table of :mod:`emulator.cards`."""

from __future__ import annotations

from emulator import cards

UNSPECIFIED = "Unspecified"


def detect(number: str) -> str:
    """The brand of a card number (a Payments.CardTypes value), or ``Unspecified``."""
    brand = cards.default_table().lookup(number, whole_card=True).brand
    return brand.name if brand else UNSPECIFIED
