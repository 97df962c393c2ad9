"""``emulator.domain.model``: a request's card read the same way wherever it is read."""

from __future__ import annotations

from emulator.domain.model import Card, PaymentRequest
from emulator.domain.vocabulary import CHARGE


def test_a_requests_card_is_what_card_from_json_reads() -> None:
    card = {
        "cardNumber": "4111111111111111",
        "cardHolderName": "Ada Lovelace",
        "expirationMonth": 12,
        "expirationYear": 2030,
        "cvv": "123",
        "cardType": "Visa",
        "ownerID": "owner-1",
    }
    for given in (card, {"cardNumber": "4242424242424242"}):
        assert PaymentRequest.from_body(CHARGE, {"card": given}).card == Card.from_json(given)
    assert PaymentRequest.from_body(CHARGE, {}).card is None
