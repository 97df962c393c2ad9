"""Result tokens (signing, verifying) and the EWalletResultData built from an outcome."""

from __future__ import annotations

import base64
import json
from datetime import UTC, datetime
from typing import Any

import pytest
from starlette.applications import Starlette

from emulator.domain import errors
from emulator.domain.model import Money, OperationResult
from emulator.domain.vocabulary import Operation, RejectReason, ResultCode
from emulator.ewallet import results
from emulator.ewallet.results import CardView
from emulator.stores import ewallet_sessions as sessions
from emulator.stores import ewallet_tokens as tokens
from emulator.tenants.tenants import Tenant, shard_of
from tests.conftest import setup_ewallet_tenant as setup_tenant
from tests.conftest import tenant_of

NOW = datetime(2030, 5, 1, 12, 0, tzinfo=UTC)
CARD = CardView("4111111111111111", "Visa", "Jane", None, 12, 2030)


def _session(tenant: Tenant, operation: str = "CHARGE") -> sessions.Session:
    setup_tenant(tenant)
    return sessions.create(
        tenant,
        {
            "operation": operation,
            "mode": "TEST",
            "currencyCode": "USD",
            "amount": 5.0,
            "paymentGatewayAccountId": "primary",
        },
    )


def operation_result(
    operation: str,
    code: str,
    gateway: str,
    amount: float,
    currency: str,
    reference: str | None,
    token: str | None = None,
) -> dict[str, Any]:
    """An OperationResult as the engine renders it, with a gateway payload to hide."""
    approved = code == "Success"
    return OperationResult(
        Operation(operation),
        ResultCode(code),
        Money.of(amount, currency),
        "Approved" if approved else "Declined",
        authorization_code="AUTH42" if approved else None,
        custom_gateway_response={"raw": "gateway payload"},
        gateway_name=gateway,
        gateway_reference=reference,
        gateway_result_code="00" if approved else "05",
        gateway_token=token,
        reject_reason=None if approved else RejectReason.CARD_DECLINED,
    ).to_json()


def _attempt(number: int, account: str, code: str, reference: str | None, token: str | None = None) -> dict[str, Any]:
    return {
        "attemptNumber": number,
        "paymentGatewayAccountName": account,
        "gatewayName": "NULLSuccess",
        "isFallback": number > 1,
        "timestamp": NOW if number == 1 else "2030-05-01T12:00:01.000Z",
        "result": operation_result("Charge", code, "NULLSuccess", 5.0, "USD", reference, token),
    }


def test_tokens_sign_and_verify() -> None:
    body = {"a": 1, "s": "sess", "r": "res"}
    token = tokens.encode(body, "0123456789abcdef", b"k" * 32)
    assert tokens.decode(token, b"k" * 32) == body
    assert set(token) <= set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.")
    assert token.count(".") == 2
    assert tokens.kid(token) == "0123456789abcdef"
    assert tokens.decode(token, b"x" * 32) is None
    head, payload, signature = token.split(".")
    forged = base64.urlsafe_b64encode(b'{"a":2,"r":"res","s":"sess"}').rstrip(b"=").decode()
    for bad in (f"{head}.{forged}.{signature}", f"{head}.{payload}.", f"{payload}.{signature}", "", "é.é.é", payload):
        assert tokens.decode(bad, b"k" * 32) is None


def test_a_tenant_signs_with_its_own_secret(make_app: Any) -> None:
    runtime = make_app(seed=3).state.runtime
    first, second = runtime.tenants.create(), runtime.tenants.create()
    token = first.sign_token({"x": 1})
    assert first.open_token(token) == {"x": 1}
    assert second.open_token(token) is None
    assert tokens.kid(token) == shard_of(first.key)


def test_seeded_tenants_sign_alike_and_random_ones_differ(make_app: Any) -> None:
    seeded = [make_app(seed=3).state.runtime.tenants.create() for _ in range(2)]
    assert seeded[0].key == seeded[1].key
    assert seeded[0].sign_token({"x": 1}) == seeded[1].sign_token({"x": 1})
    unseeded = [make_app().state.runtime.tenants.create() for _ in range(2)]
    assert unseeded[0].sign_token({"x": 1}) != unseeded[1].sign_token({"x": 1})


def test_shard_id_is_the_sha1_prefix_of_the_key() -> None:
    assert shard_of("abc") == "a9993e364706816a"  # the first 16 hex digits of SHA-1("abc")


def test_build_with_failover() -> None:
    session = sessions.Session("t" * 40, {"operation": "CHARGE", "amount": 5.0, "currencyCode": "USD"}, NOW, NOW)
    attempts = [_attempt(1, "primary", "Rejected", None), _attempt(2, "backup", "Success", "ref-2")]
    data = results.build(session, attempts[-1]["result"], attempts, CARD, NOW)
    assert data["upgChargeResults"] == attempts[-1]["result"]
    assert data["failedUpgChargeResults"] == [attempts[0]["result"]]
    assert data["directChargeResults"] is None
    assert (data["providerTransactionId"], data["providerAuthorizationCode"], data["providerAccountId"]) == (
        "ref-2",
        "AUTH42",
        "backup",
    )
    assert (data["transactionAmount"], data["transactionCurrency"]) == (5.0, "USD")
    assert data["transactionTimestamp"] == "2030-05-01T12:00:01.000Z"
    first = data["attempts"][0]
    assert first["timestamp"] == "2030-05-01T12:00:00.000Z"
    assert (first["attemptNumber"], first["paymentGatewayAccountId"], first["isFallback"]) == (1, "primary", False)
    assert first["rejectReasonCode"] == "CardDeclined"
    assert data["tokenAndMaskedCardModel"]["token"] is None  # not a tokenizing session
    assert data["tokenAndMaskedCardModel"]["bankCard"]["number"] == "411111******1111"


def test_build_all_failed() -> None:
    session = sessions.Session(
        "t" * 40, {"operation": "CHARGE_AND_TOKENIZE", "amount": 5.0, "currencyCode": "USD"}, NOW, NOW
    )
    attempts = [_attempt(1, "primary", "Rejected", None)]
    data = results.build(session, attempts[0]["result"], attempts, CARD, NOW)
    assert data["providerTransactionId"] is None
    assert data["providerAccountId"] is None
    assert data["tokenAndMaskedCardModel"]["errorMessage"] == "Declined"
    assert data["tokenAndMaskedCardModel"]["token"] is None
    assert len(data["failedUpgChargeResults"]) == 1


def test_build_without_attempts_and_with_an_object_token() -> None:
    session = sessions.Session("t" * 40, {"operation": "TOKENIZE", "amount": 0, "currencyCode": "USD"}, NOW, NOW)
    final = operation_result("Tokenize", "Success", "Stripe", 0.0, "USD", None, None)
    final["gatewayToken"] = {"id": "tok_1"}
    data = results.build(session, final, [], CardView(None, "Unspecified", None, None, 1, 2030), NOW)
    assert data["attempts"] == []
    assert data["transactionTimestamp"] == "2030-05-01T12:00:00.000Z"
    assert data["tokenAndMaskedCardModel"]["token"] == '{"id":"tok_1"}'
    assert data["tokenAndMaskedCardModel"]["tokenLocation"] == "Stripe"
    assert data["tokenAndMaskedCardModel"]["bankCard"]["number"] is None


def test_issue_and_redeem(app: Starlette) -> None:
    tenant = tenant_of(app)
    session = _session(tenant)
    attempts = [_attempt(1, "primary", "Success", "ref-1")]
    data = results.build(session, attempts[0]["result"], attempts, CARD, NOW)
    token = results.issue(tenant, session, "R1", data)
    with pytest.raises(errors.ApiError):
        results.redeem(tenant, token)  # not stored yet
    session.results["R1"] = sessions.SessionResult("R1", NOW, True, data, token)
    assert results.redeem(tenant, token) is data
    with pytest.raises(errors.ApiError) as foreign:
        results.redeem(tenant_of(app, "live-api-key"), token)
    assert foreign.value.entries[0][0] == "resultToken"


def test_client_view_in_the_token(app: Starlette) -> None:
    """What the JS library's parseResultToken reads: no gateway payload, no card number."""
    tenant = tenant_of(app)
    session = _session(tenant)
    attempts = [_attempt(1, "primary", "Success", "ref-1")]
    data = results.build(session, attempts[0]["result"], attempts, CARD, NOW)
    token = results.issue(tenant, session, "R1", data)
    payload = token.split(".")[1]
    claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    assert claims["a"] == tenant.account_id
    assert claims["s"] == session.token
    assert claims["r"] == "R1"
    view = claims["pld"]
    assert view["clientSuccess"] is True
    assert view["selectedPaymentMethod"] == "CardPay"
    assert view["upgChargeResults"]["gatewayReference"] == "ref-1"
    assert view["upgChargeResults"]["customGatewayResponse"] is None
    assert "4111111111111111" not in json.dumps(claims)
