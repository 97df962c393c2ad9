"""The payment page as people read it: card-field autocomplete, readable times and money, a favicon."""

from __future__ import annotations

import re
from datetime import UTC, datetime

import pytest
from starlette.testclient import TestClient

from emulator.tenants.tenants import Tenant
from emulator.ui import format as pagefmt
from tests.conftest import setup_ewallet_tenant

BODY = {
    "operation": "CHARGE",
    "mode": "TEST",
    "currencyCode": "USD",
    "amount": 1234.5,
    "paymentGatewayAccountId": "backup",
}


@pytest.fixture
def page(client: TestClient, tenant: Tenant) -> str:
    setup_ewallet_tenant(tenant)
    token = client.post("/EWalletOperations", json=BODY).json()["token"]
    return client.get(f"/_emulator/pay/{token}").text


@pytest.mark.parametrize("hint", ["cc-name", "cc-number", "cc-exp-month", "cc-exp-year", "cc-csc"])
def test_card_fields_carry_autocomplete_hints(page: str, hint: str) -> None:
    assert f'autocomplete="{hint}"' in page


def test_amount_reads_with_two_decimals(page: str) -> None:
    assert "Pay 1,234.50 USD" in page


def test_expiry_is_not_an_iso_timestamp(page: str) -> None:
    assert "session expires" in page
    assert not re.search(r"session expires \d{4}-\d\d-\d\dT", page)


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (datetime(2026, 11, 22, 2, 14, 49, tzinfo=UTC), "22 Nov 2026, 02:14 UTC"),
        ("2026-11-22T02:14:49.123Z", "22 Nov 2026, 02:14 UTC"),
        (None, ""),
        ("not a time", "not a time"),
    ],
)
def test_readable_times(value: datetime | str | None, text: str) -> None:
    assert pagefmt.readable(value) == text


@pytest.mark.parametrize(("amount", "currency", "text"), [(120.0, None, "120.00"), (1234.5, "EUR", "1,234.50 EUR")])
def test_money(amount: float, currency: str | None, text: str) -> None:
    assert pagefmt.money(amount, currency) == text


def test_favicon_is_served(anon: TestClient) -> None:
    icon = anon.get("/favicon.ico")
    assert icon.status_code == 200
    assert icon.headers["content-type"] == "image/svg+xml"
    assert icon.text.startswith("<svg")
