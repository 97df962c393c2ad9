"""Request bodies the tests share: a card, a stored account's body, a charge.

A test that needs another card or secret says only what differs (``card(cvv="123")``,
``account("Stripe", SecretKey="sk_test_1")``), so every body here is written once.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from emulator.testing import Payemu

# Visa's test number (approved by every gateway's sandbox), as a merchant's form sends it.
CARD: dict[str, Any] = {
    "cardHolderName": "Jane Smith",
    "cardNumber": "4111111111111111",
    "expirationMonth": 12,
    "expirationYear": 2030,
}


def card(**changes: Any) -> dict[str, Any]:
    """:data:`CARD` with ``changes`` (another number, holder, expiry, a ``cvv``)."""
    return {**CARD, **changes}


def account(gateway: str, **credentials: str) -> dict[str, Any]:
    """A gateway account's body (``PUT /PaymentGatewayAccounts/{name}``, or inline in a
    payment as ``paymentGatewayAccount``): the gateway's name and its credentials."""
    return {"paymentGatewayName": gateway, "credentials": [{"key": k, "value": v} for k, v in credentials.items()]}


STRIPE = account("Stripe", SecretKey="sk_test_x")
NULL_SUCCESS = account("NULLSuccess")
STRIPE_MAIN = {"paymentGatewayAccountName": "stripeMain"}  # a payment's stored account of that name


def charge(amount: float, account_name: str = "main", **more: Any) -> dict[str, Any]:
    """A charge of ``amount`` USD with :data:`CARD` on the stored account ``account_name``."""
    return {"amount": amount, "currency": "USD", "card": CARD, "paymentGatewayAccountName": account_name, **more}


def slow_charge(tenant: Payemu, delay_ms: int) -> bytes:
    """The JSON body of a charge that ``tenant``'s scenario answers after ``delay_ms``
    (the scenario and a Stripe account ``main`` are set up here)."""
    rule = {
        "name": "slow",
        "when": {"operation": "Charge"},
        "then": {"operationResultCode": "Success", "delayMs": delay_ms},
    }
    tenant.add_scenario(rule)
    assert tenant.client.put("/PaymentGatewayAccounts/main", json=STRIPE).status_code == 200
    return json.dumps(charge(5)).encode()
