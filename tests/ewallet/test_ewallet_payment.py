"""Paying a session: the page's choice, the engine request, the stored result (the real
engine answers; NULLFailure declines, NULLSuccess approves)."""

from __future__ import annotations

import asyncio
import json
import re
from datetime import timedelta
from decimal import Decimal
from typing import Any

import pytest

from emulator.domain import errors
from emulator.domain.model import AccountRef, AttemptRecord, Card, DropConnection, PaymentRequest
from emulator.domain.vocabulary import Operation
from emulator.engine import engine as engine_module
from emulator.ewallet import payment
from emulator.stores import ewallet_sessions as sessions
from emulator.stores import vault
from emulator.stores.ewallet_sessions import Session
from emulator.tenants.runtime import Runtime
from emulator.tenants.tenants import Tenant
from tests.conftest import EWALLET_CARD as CARD
from tests.conftest import setup_ewallet_tenant

NEW_CARD = {
    "cardHolderName": "Jane Doe",
    "cardNumber": "5555555555554444",
    "expirationMonth": 7,
    "expirationYear": 2031,
    "cvv": "321",
}


@pytest.fixture
def mocks_tokenize(tenant: Tenant) -> None:
    """The older mock-PSP page's reading, where NULLSuccess tokenizes (the eWallet flow
    tokenizes through it here; the newest page's reading is tests/engine/test_mock_psps.py)."""
    tenant.overrides.mock_tokenization = "supported"


def _session(tenant: Tenant, **changes: Any) -> Session:
    stored = setup_ewallet_tenant(tenant)
    body: dict[str, Any] = {
        "operation": "CHARGE",
        "mode": "TEST",
        "currencyCode": "USD",
        "amount": 20.5,
        "paymentGatewayAccountId": "primary",
        "fallbackUpgs": [{"paymentGatewayAccountId": "backup"}],
        "storedCards": [
            {
                "token": stored,
                "lastDigits": "1111",
                "expirationMonth": 12,
                "expirationYear": 2030,
                "brand": "Visa",
                "nameOnCard": "Stored Holder",
            }
        ],
    }
    body.update(changes)
    return sessions.create(tenant, body)


def _pay(
    runtime: Runtime, tenant: Tenant, session: Session, body: Any, log: list[AttemptRecord] | None = None
) -> payment.Paid:
    return asyncio.run(payment.pay(runtime, tenant, session, body, "203.0.113.9", log if log is not None else []))


def test_stored_card_and_cvv_with_failover(
    runtime: Runtime, tenant: Tenant, engine_calls: list[PaymentRequest]
) -> None:
    session = _session(tenant, countryCode="US", paymentNote="Order 9")
    log: list[AttemptRecord] = []
    paid = _pay(runtime, tenant, session, {"storedCard": 0, "cvv": "123"}, log)
    (request,) = engine_calls
    assert request.operation == Operation.CHARGE
    assert request.card == Card(
        number="@" + session.stored_cards[0]["token"],
        holder="Stored Holder",
        expiration_month=12,
        expiration_year=2030,
        cvv="123",
    )
    assert request.account_name == "primary"
    assert request.fallbacks == (AccountRef("backup"),)
    assert (request.amount, request.currency, request.my_ref) == (Decimal("20.5"), "USD", session.reference)
    assert request.order_desc == "Order 9"
    assert request.client_ip == "203.0.113.9"
    assert request.generate_token is False
    assert paid.result.success
    assert session.paid_by == paid.result.result_id
    assert session.state(tenant.now()) == "paid"
    assert paid.summary["providerAccountId"] == "backup"
    assert paid.summary["attempts"] == 2
    assert paid.summary["maskedCard"] == "411111******1111"
    assert [(a.account, a.result.code) for a in log] == [("primary", "Rejected"), ("backup", "Success")]
    charged = tenant.ledger[paid.summary["gatewayReference"]]
    assert (charged.card_number, charged.my_ref, charged.amount) == (CARD, session.reference, Decimal("20.5"))


@pytest.mark.usefixtures("mocks_tokenize")
@pytest.mark.parametrize(
    ("operation", "engine_operation", "generate"),
    [("CHARGE_AND_TOKENIZE", "Charge", True), ("PREAUTH_AND_TOKENIZE", "PreAuth", True)],
)
def test_operations_map_to_the_engine(
    runtime: Runtime,
    tenant: Tenant,
    engine_calls: list[PaymentRequest],
    operation: str,
    engine_operation: str,
    generate: bool,
) -> None:
    session = _session(tenant, operation=operation)
    paid = _pay(runtime, tenant, session, {"card": NEW_CARD})
    (request,) = engine_calls
    assert request.operation == engine_operation
    assert request.generate_token is generate
    assert request.card == Card.from_json(NEW_CARD)
    model = paid.result.data["tokenAndMaskedCardModel"]
    assert re.fullmatch(r"NULLTOK-[A-Z0-9]{24}", model["token"])
    assert tenant.ledger.token(model["token"]) is not None
    assert model["bankCard"] == {
        "type": "MasterCard",
        "nameOnCard": "Jane Doe",
        "issueNumber": None,
        "ownerId": None,
        "securityCode": None,
        "number": "555555******4444",
        "expirationMonth": 7,
        "expirationYear": 2031,
    }


@pytest.mark.usefixtures("mocks_tokenize")
def test_tokenize_session(runtime: Runtime, tenant: Tenant, engine_calls: list[PaymentRequest]) -> None:
    session = _session(tenant, operation="TOKENIZE", amount=0, paymentGatewayAccountId="backup", fallbackUpgs=None)
    paid = _pay(runtime, tenant, session, {"card": NEW_CARD})
    (request,) = engine_calls
    assert request.operation == Operation.TOKENIZE
    assert (request.amount, request.currency, request.fallbacks) == (None, None, ())
    assert re.fullmatch(r"NULLTOK-[A-Z0-9]{24}", paid.result.data["tokenAndMaskedCardModel"]["token"])
    assert paid.summary["operationType"] == "Tokenize"


@pytest.mark.usefixtures("mocks_tokenize")
def test_tokenize_falls_over_in_the_engine(
    runtime: Runtime, tenant: Tenant, engine_calls: list[PaymentRequest]
) -> None:
    """One engine call with every fallback; its attempts are numbered across the accounts."""
    tenant.certificates.register("c1")
    tenant.certificates.register("c2")
    session = _session(
        tenant,
        operation="TOKENIZE",
        amount=0,
        paymentGatewayCertName="c1",
        fallbackUpgs=[
            {"paymentGatewayAccountId": "primary"},
            {"paymentGatewayAccountId": "backup", "paymentGatewayCertName": "c2"},
        ],
    )
    log: list[AttemptRecord] = []
    paid = _pay(runtime, tenant, session, {"card": NEW_CARD}, log)
    (request,) = engine_calls
    assert (request.account_name, request.certificate) == ("primary", "c1")
    assert request.fallbacks == (AccountRef("primary"), AccountRef("backup", "c2"))
    attempts = paid.result.data["attempts"]
    assert [(a["attemptNumber"], a["isFallback"], a["paymentGatewayAccountId"]) for a in attempts] == [
        (1, False, "primary"),
        (2, True, "primary"),
        (3, True, "backup"),
    ]
    assert paid.result.success
    assert paid.summary["providerAccountId"] == "backup"
    assert [a.number for a in log] == [1, 2, 3]


def test_a_decline_leaves_the_session_open(
    runtime: Runtime, tenant: Tenant, engine_calls: list[PaymentRequest]
) -> None:
    session = _session(tenant, fallbackUpgs=None)
    paid = _pay(runtime, tenant, session, {"card": NEW_CARD})
    assert not paid.result.success
    assert paid.summary["operationResultCode"] == "Rejected"
    assert session.state(tenant.now()) == "open"
    assert paid.result.data["providerAccountId"] is None
    # the customer may try again; a second result is kept
    _pay(runtime, tenant, session, {"card": NEW_CARD})
    assert len(session.results) == 2


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({}, "card"),
        ({"storedCard": 0}, "cvv"),
        ({"storedCard": 0, "cvv": "12"}, "cvv"),
        ({"storedCard": 3, "cvv": "123"}, "storedCard"),
        ({"storedCard": -1, "cvv": "123"}, "storedCard"),
        ({"card": {**NEW_CARD, "cardNumber": "5555 5555"}}, "card.cardNumber"),
        ({"card": {**NEW_CARD, "expirationMonth": 13}}, "card.expirationMonth"),
        ({"card": {**NEW_CARD, "cvv": "1"}}, "card.cvv"),
        ({"card": {k: v for k, v in NEW_CARD.items() if k != "cvv"}}, "card.cvv"),
        ({"card": NEW_CARD, "storedCard": 0, "cvv": "123"}, "body"),
        ({"card": NEW_CARD, "tip": 1}, "tip"),
        ([], "body"),
    ],
)
def test_bad_choices(
    runtime: Runtime, tenant: Tenant, engine_calls: list[PaymentRequest], body: Any, field: str
) -> None:
    session = _session(tenant)
    with pytest.raises(errors.ApiError) as caught:
        _pay(runtime, tenant, session, body)
    assert caught.value.status == 400
    assert [name for name, _ in caught.value.entries] == [field]
    assert engine_calls == []


def test_brand_not_allowed(runtime: Runtime, tenant: Tenant, engine_calls: list[PaymentRequest]) -> None:
    session = _session(tenant, allowedBrands=["Visa"])
    with pytest.raises(errors.ApiError) as caught:
        _pay(runtime, tenant, session, {"card": NEW_CARD})
    assert caught.value.entries == [("card.cardNumber", ["MasterCard cards are not accepted here; accepted: Visa."])]


def test_paid_expired_and_busy_sessions_refuse(
    runtime: Runtime, tenant: Tenant, engine_calls: list[PaymentRequest]
) -> None:
    session = _session(tenant)
    _pay(runtime, tenant, session, {"card": NEW_CARD})
    with pytest.raises(errors.ApiError) as paid:
        _pay(runtime, tenant, session, {"card": NEW_CARD})
    assert paid.value.status == 409
    other = _session(tenant)
    other.busy = True
    with pytest.raises(errors.ApiError) as busy:
        _pay(runtime, tenant, other, {"card": NEW_CARD})
    assert busy.value.status == 409
    other.busy = False
    tenant.clock.advance(timedelta(minutes=31))
    with pytest.raises(errors.ApiError) as expired:
        _pay(runtime, tenant, other, {"card": NEW_CARD})
    assert expired.value.status == 410
    assert len(engine_calls) == 1


def test_deleted_stored_card(runtime: Runtime, tenant: Tenant, engine_calls: list[PaymentRequest]) -> None:
    session = _session(tenant)
    tenant.vault.delete(session.stored_cards[0]["token"])
    with pytest.raises(errors.ApiError) as caught:
        _pay(runtime, tenant, session, {"storedCard": 0, "cvv": "123"})
    assert caught.value.entries[0][0] == "storedCard"


def test_a_dropped_connection_becomes_a_json_error(
    runtime: Runtime, tenant: Tenant, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def drop(*args: Any) -> Any:
        raise DropConnection("reset")

    monkeypatch.setattr(engine_module, "process", drop)
    session = _session(tenant)
    with pytest.raises(errors.ApiError) as caught:
        _pay(runtime, tenant, session, {"card": NEW_CARD})
    assert caught.value.status == 503
    assert not session.busy
    assert session.state(tenant.now()) == "open"


def test_card_of_a_json_token_takes_its_holder(
    runtime: Runtime, tenant: Tenant, engine_calls: list[PaymentRequest]
) -> None:
    holder_token = vault.store(tenant, json.dumps({"cardNumber": "378282246310005", "cardHolderName": "Ann Lee"}))
    session = _session(
        tenant,
        storedCards=[{"token": holder_token.token, "lastDigits": "0005", "expirationMonth": 5, "expirationYear": 2032}],
    )
    paid = _pay(runtime, tenant, session, {"storedCard": 0, "cvv": "1234"})
    assert engine_calls[0].card is not None
    assert engine_calls[0].card.holder == "Ann Lee"
    card = paid.result.data["tokenAndMaskedCardModel"]["bankCard"]
    assert (card["type"], card["nameOnCard"], card["number"]) == ("AMEX", "Ann Lee", "378282*****0005")
    assert CARD not in json.dumps(paid.summary)
