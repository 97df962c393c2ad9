"""One attempt at one simulated gateway: requirements, scenario outcome, vocabulary."""

from __future__ import annotations

import asyncio
import json
import re
import time
from dataclasses import replace
from decimal import Decimal
from typing import TYPE_CHECKING, Any

import pytest

from emulator.catalog.catalog import ALPHABETS
from emulator.catalog.loader import load_catalog
from emulator.catalog.templates import render
from emulator.domain.datafiles import gateway_files
from emulator.domain.model import Card, Money, OperationResult
from emulator.domain.vocabulary import Operation, ResultCode
from emulator.engine.simulator import AttemptInput, GatewayAccount, attempt, requirement_failure
from emulator.scenarios import Attempt, Match, Rule, RuleOutcome, ScenarioBook
from emulator.scenarios.model import RUNTIME_SOURCE
from emulator.stores.transaction import Transaction
from emulator.tenants.tenants import Tenant
from tests.conftest import bare_tenant

if TYPE_CHECKING:
    from emulator.scenarios.rulebook import RuleHolder

CATALOG = load_catalog()
CARD = "4111111111111111"
PLACEHOLDER = re.compile(r"\{[A-Za-z]+[0-9]?\}")
CREDENTIALS = {
    "Stripe": {"SecretKey": "sk_test_1"},
    "Adyen": {"ApiKey": "k", "MerchantAccount": "m"},
    "AuthorizeNet": {"ApiLoginId": "l", "TransactionKey": "t"},
    "Elavon": {"MerchantId": "m", "Password": "p", "RebatePWD": "r"},
    "Worldpay": {"SecurenetId": "i", "SecureNetKey": "k"},
    "FirstDataIPG": {"StoreId": "s", "UserId": "u", "Password": "p"},
    "AMEX": {"MerchantNumber": "n", "AccessCode": "c"},
    "Cardstream": {"MerchantId": "m", "SignatureKey": "s"},
}


class RecordingBook(ScenarioBook):
    """A real scenario book (no files, none of payemu's rules; the gateways' own triggers)
    that notes what it is asked."""

    def __init__(self) -> None:
        super().__init__(builtin=None, gateways=gateway_files())
        self.calls: list[tuple[Attempt, bool]] = []

    def decide(
        self,
        tenant: RuleHolder,
        attempt: Attempt,
        mock: bool = False,
        documented: RuleOutcome | None = None,
        mode: RuleOutcome | None = None,
    ) -> RuleOutcome | None:
        self.calls.append((attempt, mock))
        return super().decide(tenant, attempt, mock, documented, mode)


def given(tenant: Tenant, gateway: str, outcome: RuleOutcome | None) -> None:
    """``outcome`` as the tenant's own rule for ``gateway`` (mock gateways heed a rule
    that names them); None: a rule that matches no card, so the book is still asked."""
    match = Match(gateway=gateway.casefold(), card_numbers=None if outcome else frozenset({"0"}))
    tenant.rules.add([Rule("given", match, (outcome or RuleOutcome("Success"),), False, RUNTIME_SOURCE, 0)])


def account(gateway: str, **overrides: Any) -> GatewayAccount:
    spec = CATALOG.get(gateway)
    assert spec is not None
    made = GatewayAccount(spec, "main", dict(CREDENTIALS.get(spec.name, {})), "cert1")
    return replace(made, **overrides)


def item(operation: str = "Charge", **overrides: Any) -> AttemptInput:
    """An attempt; ``amount``, ``currency`` and ``card_number`` may be overridden too."""
    money = Money.of(overrides.pop("amount", 10.5), overrides.pop("currency", "USD"))
    card = Card(number=overrides.pop("card_number", CARD))
    base = AttemptInput(
        operation=Operation(operation),
        money=money,
        card=card,
        my_ref="order-123456",
        order_desc="Books",
        client_ip="203.0.113.7",
    )
    return replace(base, **overrides)


def run(
    gateway: str,
    operation: str = "Charge",
    outcome: RuleOutcome | None = None,
    who: Tenant | None = None,
    **overrides: Any,
) -> tuple[dict[str, Any], RecordingBook]:
    book = RecordingBook()
    tenant = who or bare_tenant(seed=7)
    given(tenant, gateway, outcome)
    result, _, _ = asyncio.run(attempt(book, tenant, account(gateway), item(operation, **overrides)))
    return result.to_json(), book


def test_operation_result_has_all_fifteen_keys() -> None:
    result = OperationResult(
        Operation.CHARGE, ResultCode.SUCCESS, Money.of(1.0, "USD"), "ok", gateway_name="Stripe"
    ).to_json()
    assert len(result) == 15
    assert result["gatewayName"] == "Stripe"
    assert result["rejectReasonCode"] is None
    assert result["amount"] == 1.0


def test_render_keeps_types_and_fills_text() -> None:
    values = {"amount": 10.5, "approved": True, "code": None, "reference": "ch_1", "last4": "1111"}
    template = {
        "a": "{amount}",
        "b": "{approved}",
        "c": "id {reference}/{code}/{approved}",
        "d": ["{last4}"],
        "e": "{unknown}",
        "f": 3,
        "g": "plain",
    }
    assert render(template, values) == {
        "a": 10.5,
        "b": True,
        "c": "id ch_1//true",
        "d": ["1111"],
        "e": "{unknown}",
        "f": 3,
        "g": "plain",
    }


@pytest.mark.parametrize(
    ("amount", "currency", "minor"), [(10.23, "USD", 1023), (1500, "JPY", 1500), (1.5, "KWD", 1500)]
)
def test_minor_units(amount: float, currency: str, minor: int) -> None:
    assert Money.of(amount, currency).minor_units() == minor


@pytest.mark.parametrize(
    ("gateway", "operation", "changes", "code", "fragment"),
    [
        ("AMEX", "Charge", {}, "NotImplemented", "AMEX does not support Charge. Use PreAuth then Capture."),
        ("AMEX", "Refund", {}, "NotImplemented", "does not support Refund"),
        ("AMEX", "Tokenize", {}, "NotImplemented", "does not support Tokenize"),
        ("Elavon", "Charge", {"network_token_brand": "Visa"}, "NotImplemented", "network tokens"),
        ("FirstDataIPG", "Charge", {"client_ip": None}, "FatalFailure", "payerDetails.clientIPAddress"),
        ("AMEX", "PreAuth", {"my_ref": "12345"}, "FatalFailure", "myRef of at least 6"),
        ("AMEX", "PreAuth", {"my_ref": None}, "FatalFailure", "myRef of at least 6"),
    ],
)
def test_requirements_refuse_before_the_scenario(
    gateway: str, operation: str, changes: dict[str, Any], code: str, fragment: str
) -> None:
    refused = requirement_failure(account(gateway), item(operation, **changes))
    assert refused is not None
    assert refused[0] == code
    assert fragment in refused[2]
    result, book = run(gateway, operation, RuleOutcome("Success"), **changes)
    assert result["operationResultCode"] == code
    assert fragment in result["operationResultDescription"]
    assert result["gatewayName"] == CATALOG.get(gateway).name  # type: ignore[union-attr]
    assert result["gatewayReference"], "every attempt at a gateway has a reference"
    assert book.calls == []


def test_requirements_met() -> None:
    assert requirement_failure(account("AMEX"), item("PreAuth", my_ref="123456")) is None
    assert requirement_failure(account("Cardstream"), item("Capture", order_desc=None)) is None
    # the record says Cardstream uses orderDesc, not that it refuses a payment without it
    assert requirement_failure(account("Cardstream"), item("PreAuth", order_desc=None)) is None
    assert requirement_failure(account("FirstDataIPG"), item("Capture", client_ip=None)) is None
    assert requirement_failure(account("Stripe"), item("Charge", network_token_brand="Visa")) is None


def test_missing_credential_fails_authentication_naming_the_key_not_values() -> None:
    stripe = account("Adyen", credentials={"ApiKey": "very-secret-value", "MerchantAccount": None})
    refused = requirement_failure(stripe, item())
    assert refused is not None
    code, key, text = refused
    assert (code, key) == ("FatalFailure", "AuthenticationFailed")
    assert "MerchantAccount" in text
    assert "main" in text
    assert "very-secret-value" not in text
    result = asyncio.run(attempt(RecordingBook(), bare_tenant(seed=7), stripe, item()))[0].to_json()
    assert result["gatewayResultCode"] == "401"  # Adyen's AuthenticationFailed code
    assert result["rejectReasonCode"] is None
    assert result["authorizationCode"] is None


def test_certificate_is_named_by_the_field_of_its_attempt() -> None:
    first_data = account("FirstDataIPG", certificate=None)
    assert "certificateName" in requirement_failure(first_data, item())[2]  # type: ignore[index]
    assert "paymentGatewayCertName" in requirement_failure(first_data, item(number=2))[2]  # type: ignore[index]


@pytest.mark.parametrize("gateway", [g for g in CREDENTIALS])
def test_success_speaks_the_gateways_vocabulary(gateway: str) -> None:
    spec = CATALOG.get(gateway)
    assert spec is not None
    operation = "PreAuth" if "Charge" in spec.unsupported else "Charge"
    card = spec.test_cards[0] if spec.test_cards else CARD  # a test account refuses other cards
    result, book = run(gateway, operation, my_ref="order-123456", card_number=card)
    fmt = spec.reference
    prefix = fmt.prefix_for(operation)
    assert result["gatewayReference"].startswith(prefix)
    tail = result["gatewayReference"][len(prefix) :]
    assert len(tail) == fmt.length
    assert set(tail) <= set(fmt.alphabet)
    assert result["gatewayResultCode"] == spec.codes["Success"].code
    code_format = spec.authorization_code
    assert len(result["authorizationCode"]) == code_format.length
    assert set(result["authorizationCode"]) <= set(code_format.alphabet)
    assert not PLACEHOLDER.search(json.dumps(result)), "every placeholder is filled"
    assert result["operationResultCode"] == "Success"
    assert result["rejectReasonCode"] is None
    assert result["gatewayToken"] is None
    assert book.calls[0][1] is False
    assert book.calls[0][0].gateway == spec.name


def test_custom_response_is_shaped_like_the_gateway_payload() -> None:
    result, _ = run("Stripe", amount=10.23)
    payload = result["customGatewayResponse"]
    assert payload["id"] == result["gatewayReference"]
    assert payload["amount"] == 1023
    assert payload["paid"] is True
    assert payload["currency"] == "usd"
    assert payload["payment_method_details"]["card"] == {"brand": "Visa", "last4": "1111"}
    first_data, _ = run("FirstDataIPG")
    approval = first_data["customGatewayResponse"]["ipgapi:IPGApiOrderResponse"]["ApprovalCode"]
    assert approval == f"Y:{first_data['authorizationCode']}:0000000000:PPXM:" == first_data["gatewayResultDescription"]


@pytest.mark.parametrize(
    ("gateway", "reason", "native"),
    [
        ("Stripe", "InsufficientFunds", "insufficient_funds"),
        ("Worldpay", "ExpiredCard", "54"),
        ("AuthorizeNet", "SomethingNew", "2"),
        ("Adyen", None, "Refused"),
    ],
)
def test_declines_use_native_codes(gateway: str, reason: str | None, native: str) -> None:
    result, _ = run(gateway, outcome=RuleOutcome("Rejected", reject_reason_code=reason))
    assert result["operationResultCode"] == "Rejected"
    assert result["rejectReasonCode"] == (reason or "CardDeclined")
    assert result["gatewayResultCode"] == native
    assert result["authorizationCode"] is None
    assert result["gatewayReference"]
    assert result["customGatewayResponse"] is not None


def test_scenario_codes_and_descriptions_override_the_vocabulary() -> None:
    outcome = RuleOutcome("Rejected", "InsufficientFunds", gateway_result_code="51", gateway_result_description="NSF")
    result, _ = run("Stripe", outcome=outcome)
    assert (result["gatewayResultCode"], result["gatewayResultDescription"]) == ("51", "NSF")
    assert result["customGatewayResponse"]["status"] == "failed"
    assert result["customGatewayResponse"]["outcome"]["reason"] == "51"


def test_scenario_gateway_fields_set_the_gateways_own_answer() -> None:
    """A rule's gatewayFields set fields of the customGatewayResponse by dotted path (Adyen's
    refusalReasonCode for a reason payemu's vocabulary does not tell apart), new objects on the way."""
    fields = (("refusalReasonCode", "9"), ("additionalData.refusalReasonRaw", "91 : Issuer unavailable"))
    outcome = RuleOutcome(
        "Rejected", "CardDeclined", gateway_result_description="Issuer Unavailable", gateway_fields=fields
    )
    payload = run("Adyen", outcome=outcome)[0]["customGatewayResponse"]
    assert payload["refusalReasonCode"] == "9"
    assert payload["refusalReason"] == "Issuer Unavailable"
    assert payload["additionalData"]["refusalReasonRaw"] == "91 : Issuer unavailable"
    assert payload["additionalData"]["cardSummary"] == "1111"  # the template's own fields stay
    plain = run("Adyen", outcome=RuleOutcome("Rejected", "CardDeclined"))[0]["customGatewayResponse"]
    assert plain["refusalReasonCode"] == "2"  # a rule without them leaves the gateway's answer as it is
    assert "refusalReasonRaw" not in plain["additionalData"]


@pytest.mark.parametrize("code", ["TemporaryFailure", "FatalFailure", "NotImplemented", "Accepted"])
def test_other_results(code: str) -> None:
    spec = CATALOG.get("Elavon")
    result, _ = run("Elavon", outcome=RuleOutcome(code))
    assert result["operationResultCode"] == code
    assert result["rejectReasonCode"] is None
    assert result["gatewayResultCode"] == spec.codes[code].code  # type: ignore[union-attr]
    assert result["authorizationCode"] is None  # only an approved (Success) answer carries one


def test_mock_gateways_ask_only_with_the_mock_flag() -> None:
    result, book = run("NULLFailure")
    assert (result["operationResultCode"], result["rejectReasonCode"]) == ("Rejected", "CardDeclined")
    assert book.calls[0][1] is True
    result, book = run("NULLSuccess")
    assert result["operationResultCode"] == "Success"
    assert book.calls[0][1] is True
    result, _ = run("NULLFailure", outcome=RuleOutcome("Success"))
    assert result["operationResultCode"] == "Success"


def test_tokens_on_tokenize_and_generate_token() -> None:
    result, _ = run("Stripe", "Tokenize", amount=0.0)
    assert re.fullmatch(r"pm_[A-Za-z0-9]{24}", result["gatewayToken"])
    assert result["operationType"] == "Tokenize"
    result, _ = run("Adyen", "Charge", generate_token=True)
    assert re.fullmatch(r"\d{16}", result["gatewayToken"])
    result, _ = run("Adyen", "Charge", outcome=RuleOutcome("Rejected"), generate_token=True)
    assert result["gatewayToken"] is None
    result, _ = run("Stripe", "Tokenize", outcome=RuleOutcome("Accepted"))
    assert result["operationResultCode"] == "Success", "tokenize never answers Accepted"


def test_unknown_user_token_is_declined_by_the_gateway() -> None:
    result, book = run("Stripe", token_problem="Stripe does not know the userToken 'x'.")
    assert (result["operationResultCode"], result["rejectReasonCode"]) == ("Rejected", "InvalidCardNumber")
    assert result["gatewayResultCode"] == "incorrect_number"
    assert book.calls == []


def test_the_attempt_is_what_scenarios_match_on() -> None:
    _, book = run("Stripe", "PreAuth", amount=20.01, currency="EUR", number=3)
    seen = book.calls[0][0]
    assert seen == Attempt(
        card_number=CARD, amount=20.01, currency="EUR", operation="PreAuth", gateway="Stripe", account="main", attempt=3
    )


def test_seeded_attempts_are_identical() -> None:
    first, _ = run("Worldpay", who=bare_tenant(seed=5))
    again, _ = run("Worldpay", who=bare_tenant(seed=5))
    other, _ = run("Worldpay", who=bare_tenant(seed=6))
    assert first == again
    assert first["gatewayReference"] != other["gatewayReference"]


def test_references_are_unique_per_attempt() -> None:
    who = bare_tenant(seed=7)
    seen = set()
    for _ in range(50):
        result, _ = run("NULLSuccess", who=who)
        seen.add(result["gatewayReference"])
        reference = result["gatewayReference"]
        who.ledger.add(
            Transaction(
                reference, Operation.CHARGE, "NULL", None, Decimal(1), "USD", ResultCode.SUCCESS, None, who.now()
            )
        )
    assert len(seen) == 50
    assert all(set(r[5:]) <= set(ALPHABETS["upper"]) for r in seen)


def test_delay_is_awaited() -> None:
    began = time.perf_counter()
    run("Stripe", outcome=RuleOutcome("Success", delay_ms=60))
    assert time.perf_counter() - began >= 0.06


@pytest.mark.parametrize(
    ("operation", "amount", "waits"),
    [
        ("Charge", 8.3, 30.0),
        ("PreAuth", 8.07, 7.0),
        ("Refund", 8.99, 99.0),
        ("Capture", 9.3, 30.0),
        ("Void", 9.01, 1.0),
    ],
)
def test_zeamster_slow_amounts_wait_their_cents_in_seconds(
    monkeypatch: pytest.MonkeyPatch, operation: str, amount: float, waits: float
) -> None:
    """Zeamster's $8.XX (sale, auth-only, refund) and $9.XX (completion, void) approve after
    the cents in seconds (its test-data page); the wait is recorded here, not slept."""
    slept: list[float] = []

    async def recorded(seconds: float) -> None:
        slept.append(seconds)

    monkeypatch.setattr("emulator.engine.simulator.asyncio.sleep", recorded)
    credentials = {"UserId": "u", "UserApiKey": "k", "DeveloperId": "d"}
    done, _, _ = asyncio.run(
        attempt(
            RecordingBook(),
            bare_tenant(seed=7),
            account("Zeamster", credentials=credentials),
            item(operation, amount=amount),
        )
    )
    assert slept == [waits]
    answer = done.to_json()
    assert answer["operationResultCode"] == "Success"
    assert answer["gatewayResultCode"] == "1000"


def test_zeamster_slow_amounts_keep_to_their_operations(monkeypatch: pytest.MonkeyPatch) -> None:
    """A sale at 9.30 and a completion at 8.30 are ordinary ones: answered at once."""
    slept: list[float] = []

    async def recorded(seconds: float) -> None:
        slept.append(seconds)

    monkeypatch.setattr("emulator.engine.simulator.asyncio.sleep", recorded)
    credentials = {"UserId": "u", "UserApiKey": "k", "DeveloperId": "d"}
    for operation, amount in (("Charge", 9.3), ("Capture", 8.3)):
        asyncio.run(
            attempt(
                RecordingBook(),
                bare_tenant(seed=7),
                account("Zeamster", credentials=credentials),
                item(operation, amount=amount),
            )
        )
    assert slept == []


def test_minor_units_and_rounding_of_the_largest_amounts() -> None:
    """A fuzzer's amount of -2.9e307 once overflowed Decimal's default precision (a 500)."""
    huge = Money.of(-2.9e307, "USD")
    assert huge.minor_units() == int(Decimal("-2.9e307")) * 100
    assert huge.rounded().amount == Decimal("-2.9e307")
    assert Money.of(1.7e308, "KWD").minor_units() == int(Decimal("1.7e308")) * 1000
