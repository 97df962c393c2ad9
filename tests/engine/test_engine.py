"""The payment engine called directly, as eWallet sessions call it."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
from starlette.applications import Starlette

from emulator.api.payments import status_of
from emulator.domain.errors import ApiError
from emulator.domain.model import AttemptRecord, DropConnection, PaymentRequest, decimal_of
from emulator.domain.vocabulary import Operation
from emulator.engine import engine
from emulator.scenarios import parse_rules
from emulator.stores.accounts import StoredAccount
from emulator.tenants.runtime import Runtime
from emulator.tenants.tenants import Tenant
from tests.support.bodies import CARD


@pytest.fixture
def world(make_app: Callable[..., Starlette]) -> tuple[Runtime, Tenant]:
    runtime: Runtime = make_app(seed=9).state.runtime
    tenant = runtime.tenants.get("sandbox-api-key")
    assert tenant is not None
    now = tenant.now()
    tenant.accounts.put(StoredAccount("stripeMain", "Stripe", [("SecretKey", "sk_test_engine")], now))
    tenant.accounts.put(StoredAccount("adyenMain", "Adyen", [("ApiKey", "a"), ("MerchantAccount", "m")], now))
    tenant.accounts.put(StoredAccount("nullFail", "NULLFailure", [], now))
    return runtime, tenant


@dataclass
class Answer:
    """An engine Outcome as the HTTP edge renders it."""

    result: dict[str, Any]
    status: int
    headers: dict[str, str]
    attempts: list[dict[str, Any]]


def process(
    world: tuple[Runtime, Tenant], operation: str, body: dict[str, Any], attempts: list[dict[str, Any]] | None = None
) -> Answer:
    """The engine on a request body parsed as the HTTP handlers parse it; ``attempts``
    receives the attempts as JSON, as the journal does."""
    runtime, tenant = world
    made: list[AttemptRecord] = []
    request = PaymentRequest.from_body(Operation(operation), body)
    try:
        outcome = asyncio.run(engine.process(runtime, tenant, request, made))
    finally:
        if attempts is not None:
            attempts.extend(record.to_json() for record in made)
    status, headers = status_of(runtime, tenant, Operation(operation), outcome)  # decided at the edge
    return Answer(outcome.result.to_json(), status, headers, [record.to_json() for record in outcome.attempts])


def charge(**changes: Any) -> dict[str, Any]:
    return {"amount": 12.5, "currency": "usd", "card": dict(CARD), "paymentGatewayAccountName": "stripeMain", **changes}


def errors_of(caught: pytest.ExceptionInfo[ApiError]) -> dict[str | None, list[str]]:
    return dict(caught.value.entries)


def test_outcome_carries_result_status_and_the_attempts(world: tuple[Runtime, Tenant]) -> None:
    journal: list[dict[str, Any]] = []
    outcome = process(world, "Charge", charge(fallbackUpgs=[{"paymentGatewayAccountName": "adyenMain"}]), journal)
    assert outcome.status == 200
    assert outcome.headers == {}
    assert outcome.result["currency"] == "USD"
    assert outcome.result["gatewayName"] == "Stripe"
    assert journal == outcome.attempts
    assert len(outcome.attempts) == 1
    entry = outcome.attempts[0]
    assert set(entry) == {
        "attemptNumber",
        "paymentGatewayAccountName",
        "gatewayName",
        "isFallback",
        "timestamp",
        "rule",
        "ruleSource",
        "result",
    }
    assert entry["result"] == outcome.result
    assert entry["timestamp"].endswith("Z")


@pytest.mark.parametrize(
    ("code", "status", "headers"),
    [
        ("Success", 200, {}),
        ("Accepted", 202, {}),
        ("Rejected", 409, {}),
        ("NotImplemented", 409, {}),
        ("FatalFailure", 500, {}),
        ("TemporaryFailure", 503, {"Retry-After": "1"}),
    ],
)
def test_status_per_result_code(world: tuple[Runtime, Tenant], code: str, status: int, headers: dict[str, str]) -> None:
    tenant = world[1]
    rule = f"{{name: r, when: {{gateway: Stripe}}, then: {{operationResultCode: {code}}}}}"
    tenant.rules.add(parse_rules(rule, "t"))
    outcome = process(world, "Charge", charge())
    assert (outcome.result["operationResultCode"], outcome.status, outcome.headers) == (code, status, headers)


def test_credentials(world: tuple[Runtime, Tenant]) -> None:
    with pytest.raises(ApiError) as caught:
        process(world, "Charge", charge(paymentGatewayAccountName=None))
    message = "Give paymentGatewayAccountName or paymentGatewayAccount."
    assert errors_of(caught) == {"paymentGatewayAccountName": [message]}
    with pytest.raises(ApiError) as caught:
        process(world, "PreAuth", charge(paymentGatewayAccountName="ghost"))
    assert caught.value.status == 400
    assert "ghost" in errors_of(caught)["paymentGatewayAccountName"][0]
    inline = {"paymentGatewayName": "nullsuccess", "credentials": []}
    outcome = process(world, "Charge", charge(paymentGatewayAccountName="ghost", paymentGatewayAccount=inline))
    assert outcome.result["gatewayName"] == "NULLSuccess"
    assert outcome.attempts[0]["paymentGatewayAccountName"] is None


def test_every_fallback_is_checked_before_any_attempt(world: tuple[Runtime, Tenant]) -> None:
    _, tenant = world
    upgs = [
        {"paymentGatewayAccountName": "adyenMain"},
        {"paymentGatewayAccountName": "ghost"},
        {"paymentGatewayAccountName": "stripeMain", "paymentGatewayCertName": "noSuchCert"},
    ]
    with pytest.raises(ApiError) as caught:
        process(world, "Charge", charge(fallbackUpgs=upgs))
    assert set(errors_of(caught)) == {
        "fallbackUpgs[1].paymentGatewayAccountName",
        "fallbackUpgs[2].paymentGatewayCertName",
    }
    assert tenant.ledger == {}


def test_currency(world: tuple[Runtime, Tenant]) -> None:
    runtime, _ = world
    assert engine.currency_of(runtime, " jpy ") == "JPY"
    with pytest.raises(ApiError) as caught:
        engine.currency_of(runtime, "XYZ")
    assert errors_of(caught) == {"currency": ["Unknown currency code 'XYZ'."]}
    assert len(engine.currencies(runtime)) > 150


def test_tokenize_has_no_amount_and_remembers_the_card(world: tuple[Runtime, Tenant]) -> None:
    _, tenant = world
    outcome = process(
        world,
        "Tokenize",
        {"card": dict(CARD, cardNumber="4000000000009995"), "paymentGatewayAccountName": "stripeMain"},
    )
    assert outcome.status == 409
    assert outcome.result["rejectReasonCode"] == "InsufficientFunds"
    outcome = process(world, "Tokenize", {"card": dict(CARD), "paymentGatewayAccountName": "stripeMain"})
    result = outcome.result
    assert (outcome.status, result["amount"], result["currency"]) == (200, 0.0, "USD")
    token = tenant.ledger.token(result["gatewayToken"])
    assert token.gateway == "Stripe"
    assert token.card_number == CARD["cardNumber"]
    assert engine.token_for(tenant, result["gatewayToken"], "Stripe") == (CARD["cardNumber"], None)
    number, problem = engine.token_for(tenant, result["gatewayToken"], "Adyen")
    assert number == CARD["cardNumber"]
    assert problem is not None
    assert "issued by Stripe" in problem
    assert engine.token_for(tenant, None, "Stripe") == (None, None)


def test_string_token_card_is_resolved_and_matched(world: tuple[Runtime, Tenant]) -> None:
    from emulator.stores import vault

    _, tenant = world
    token = vault.store(tenant, '{"cardNumber": "4000 0000 0000 9995", "cvv": "123"}')
    outcome = process(world, "Charge", charge(card=dict(CARD, cardNumber="@" + token.token)))
    assert outcome.result["rejectReasonCode"] == "InsufficientFunds"
    tx = tenant.ledger[outcome.result["gatewayReference"]]
    assert tx.card_number == "4000000000009995"
    assert tx.to_json()["cardMasked"] == "400000******9995"


def test_reset_fault_drops_before_recording(world: tuple[Runtime, Tenant]) -> None:
    _, tenant = world
    with pytest.raises(DropConnection) as caught:
        process(world, "Charge", charge(amount=9032.0))
    assert caught.value.reason == "reset"
    assert tenant.ledger == {}


def test_lost_response_records_then_drops(world: tuple[Runtime, Tenant]) -> None:
    _, tenant = world
    journal: list[dict[str, Any]] = []
    with pytest.raises(DropConnection) as caught:
        process(world, "PreAuth", charge(amount=9031.0, myRef="lost-1"), journal)
    assert caught.value.reason == "lostResponse"
    (tx,) = tenant.ledger.values()
    assert tx.my_ref == "lost-1"
    assert tx.result_code == "Success"
    assert len(journal) == 1
    found = process(world, "Status", {"myRef": "lost-1", "paymentGatewayAccountName": "stripeMain"})
    assert found.status == 200
    assert found.result["gatewayReference"] == tx.reference


def test_lost_response_on_a_capture_commits_it(world: tuple[Runtime, Tenant]) -> None:
    _, tenant = world
    # authorized above the capture: Stripe never captures more than it authorized
    auth = process(world, "PreAuth", charge(amount=9099.0)).result["gatewayReference"]
    body = {"refTransId": auth, "amount": 9031.0, "currency": "USD", "paymentGatewayAccountName": "stripeMain"}
    with pytest.raises(DropConnection):
        process(world, "Capture", body)
    assert tenant.ledger[auth].captured_by is not None
    assert tenant.ledger[auth].busy is None
    again = process(world, "Capture", body)
    assert again.result["rejectReasonCode"] == "AlreadyCaptured"


def test_reset_on_a_capture_releases_the_authorization(world: tuple[Runtime, Tenant]) -> None:
    _, tenant = world
    # authorized above the capture: Stripe never captures more than it authorized
    auth = process(world, "PreAuth", charge(amount=9099.0)).result["gatewayReference"]
    body = {"refTransId": auth, "amount": 9032.0, "currency": "USD", "paymentGatewayAccountName": "stripeMain"}
    with pytest.raises(DropConnection):
        process(world, "Capture", body)
    tx = tenant.ledger[auth]
    assert tx.captured_by is None
    assert tx.busy is None
    assert len(tenant.ledger) == 1
    assert process(world, "Capture", dict(body, amount=9000.0)).status == 200


def test_status_scenarios_can_fail_the_lookup(world: tuple[Runtime, Tenant]) -> None:
    _, tenant = world
    reference = process(world, "Charge", charge()).result["gatewayReference"]
    lookup = {"refTransId": reference, "paymentGatewayAccountName": "stripeMain"}
    tenant.rules.add(
        parse_rules(
            "{name: s, when: {operation: Status}, sequence: [{operationResultCode: TemporaryFailure},"
            " {operationResultCode: Rejected, rejectReasonCode: DoNotHonor}, {operationResultCode: Success}]}",
            "t",
        )
    )
    failed = process(world, "Status", lookup)
    assert failed.status == 409, "status is documented with 200, 400, 401 and 409 only"
    assert failed.result["operationResultCode"] == "TemporaryFailure"
    assert failed.result["gatewayReference"] != reference
    declined = process(world, "Status", lookup)
    assert declined.status == 409
    assert declined.result["rejectReasonCode"] == "DoNotHonor"
    found = process(world, "Status", lookup)
    assert found.status == 200
    assert found.result["gatewayReference"] == reference


def test_not_a_payment_operation(world: tuple[Runtime, Tenant]) -> None:
    with pytest.raises(ValueError):
        process(world, "Teleport", {})


EVERY_KEY = """
name: every-key
when:
  cardNumber: ["4111 1111 1111 1111", "5555555555554444"]
  amount: {min: 10, max: 20}
  currency: eur
  operation: [PreAuth]
  gateway: adyen
  account: ADYENMAIN
  attempt: 2
then:
  operationResultCode: Rejected
  rejectReasonCode: MyOwnReason
  gatewayResultCode: "R42"
  gatewayResultDescription: Declined by rule
  delayMs: 30
  fault: none
"""
MATCHING = {
    "amount": 15.0,
    "currency": "EUR",
    "card": dict(CARD),
    "paymentGatewayAccountName": "nullFail",
    "fallbackUpgs": [{"paymentGatewayAccountName": "adyenMain"}],
}


@pytest.mark.parametrize(
    ("change", "matches"),
    [
        ({}, True),
        ({"card": dict(CARD, cardNumber="5555555555554444")}, True),
        ({"amount": 20.0}, True),
        ({"card": dict(CARD, cardNumber="4242424242424242")}, False),
        ({"amount": 20.01}, False),
        ({"amount": 9.99}, False),
        ({"currency": "USD"}, False),
        ({"operation": "Charge"}, False),
        ({"fallbackUpgs": [{"paymentGatewayAccountName": "stripeMain"}]}, False),
        ({"paymentGatewayAccountName": "adyenMain", "fallbackUpgs": []}, False),
        (
            {"fallbackUpgs": [{"paymentGatewayAccountName": "nullFail"}, {"paymentGatewayAccountName": "adyenMain"}]},
            False,
        ),
    ],
)
def test_every_when_and_then_key_through_the_engine(
    world: tuple[Runtime, Tenant], change: dict[str, Any], matches: bool
) -> None:
    _, tenant = world
    tenant.rules.add(parse_rules(EVERY_KEY, "test"))
    tenant.accounts.put(StoredAccount("adyenOther", "Adyen", [("ApiKey", "a"), ("MerchantAccount", "m")], tenant.now()))
    operation = change.pop("operation", "PreAuth")
    outcome = process(world, operation, {**MATCHING, **change})
    last = outcome.result
    if matches:
        assert (outcome.status, last["rejectReasonCode"], last["gatewayResultCode"]) == (409, "MyOwnReason", "R42")
        assert last["gatewayResultDescription"] == "Declined by rule"
        assert last["gatewayName"] == "Adyen"
    else:
        assert last["rejectReasonCode"] != "MyOwnReason"
        assert last["gatewayResultCode"] != "R42"


def test_account_key_names_the_stored_account(world: tuple[Runtime, Tenant]) -> None:
    _, tenant = world
    tenant.rules.add(parse_rules(EVERY_KEY, "test"))
    tenant.accounts.put(StoredAccount("adyenOther", "Adyen", [("ApiKey", "a"), ("MerchantAccount", "m")], tenant.now()))
    other = process(world, "PreAuth", {**MATCHING, "fallbackUpgs": [{"paymentGatewayAccountName": "adyenOther"}]})
    assert other.status == 200
    assert other.result["gatewayName"] == "Adyen"


@pytest.mark.parametrize(
    ("sent", "text"),
    [(10.5, "10.5"), (10.0, "10.0"), (10, "10"), (0.1, "0.1"), (-0.0, "-0.0"), (0.0, "0.0"), (1e-7, "1E-7")],
)
def test_an_amount_keeps_the_text_the_client_sent_each_time(sent: float | int, text: str) -> None:
    # floats are remembered (amounts repeat), yet 10 and 10.0, 0.0 and -0.0 stay apart
    for _ in range(2):
        for value in (sent, -0.0, 0.0, 10, 10.0):
            decimal_of(value)
        assert str(decimal_of(sent)) == text
        assert str(PaymentRequest.from_body(Operation.CHARGE, {"amount": sent}).amount) == text


def test_a_partial_authorization_approves_and_keeps_the_lower_amount(make_app: Any) -> None:
    """Authorize.Net's test ZIP 46225 approves 1.23 of what was asked; a capture above
    1.23 then exceeds the authorization (the ledger keeps what was approved)."""
    from starlette.testclient import TestClient

    from tests.conftest import SANDBOX

    account = {
        "paymentGatewayName": "AuthorizeNet",
        "credentials": [{"key": "ApiLoginId", "value": "l"}, {"key": "TransactionKey", "value": "t"}],
    }
    card = {"cardHolderName": "Jane Doe", "cardNumber": "4007000000027", "expirationMonth": 12, "expirationYear": 2030}
    with TestClient(make_app(), headers=SANDBOX) as client:
        body = {"amount": 50.0, "currency": "USD", "card": card, "paymentGatewayAccount": account}
        auth = client.post(
            "/PaymentGateway/authorize",
            json={**body, "payerDetails": {"postCode": "46225", "clientIPAddress": "203.0.113.7", "countryCode": "US"}},
        )
        assert auth.status_code == 200, auth.text
        assert auth.json()["amount"] == 1.23
        assert auth.json()["gatewayResultCode"] == "295"
        refer = {"refTransId": auth.json()["gatewayReference"], "currency": "USD", "card": card}
        refer["paymentGatewayAccount"] = account
        above = client.put("/PaymentGateway/capture", json={**refer, "amount": 5.0})
        assert above.status_code == 409, above.text
        assert above.json()["rejectReasonCode"] == "AmountExceeded"
        within = client.put("/PaymentGateway/capture", json={**refer, "amount": 1.23})
        assert within.status_code == 200, within.text
