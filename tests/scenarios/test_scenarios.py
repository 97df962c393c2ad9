"""Deciding an attempt: every ``when`` key, every ``then`` key, rule order, mock gateways,
sequences, reload; and the built-in test cards of scenarios/default.yaml."""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

import pytest

from emulator.domain.cards import luhn_valid
from emulator.domain.config import Settings
from emulator.scenarios import (
    REJECT_REASONS,
    RESULT_CODES,
    Attempt,
    RuleOutcome,
    ScenarioBook,
    ScenarioError,
    parse_rules,
    rulebook,
)
from emulator.scenarios.build import build_rule
from emulator.tenants.tenants import Tenant, TenantRegistry

BASE = Attempt(
    card_number="4111111111111111",
    amount=25.0,
    currency="USD",
    operation="Charge",
    gateway="Stripe",
    account="stripeMain",
    attempt=1,
)


@pytest.fixture
def tenants() -> TenantRegistry:
    return TenantRegistry(Settings())


@pytest.fixture
def tenant(tenants: TenantRegistry) -> Tenant:
    tenant = tenants.get("sandbox-api-key")
    assert tenant is not None
    return tenant


def book_of(tmp_path: Path, text: str, builtin: bool = False) -> ScenarioBook:
    path = tmp_path / "rules.yaml"
    path.write_text(text)
    return ScenarioBook([path]) if builtin else ScenarioBook([path], builtin=None)


def result(book: ScenarioBook, tenant: Tenant, mock: bool = False, **changes: object) -> str | None:
    outcome = book.decide(tenant, replace(BASE, **changes), mock=mock)  # type: ignore[arg-type]
    return outcome.rule if outcome else None


# -- matching -----------------------------------------------------------------------------


def test_card_number_digits_only_list_and_no_card(tmp_path: Path, tenant: Tenant) -> None:
    book = book_of(
        tmp_path,
        """
- {name: one, when: {cardNumber: "4000 0000 0000 0002"}, then: {operationResultCode: Rejected}}
- {name: many, when: {cardNumber: ["5555555555554444", 378282246310005]}, then: {operationResultCode: Rejected}}
""",
    )
    assert result(book, tenant, card_number="4000000000000002") == "one"
    assert result(book, tenant, card_number="4000-0000-0000-0002") == "one"
    assert result(book, tenant, card_number="378282246310005") == "many"
    assert result(book, tenant, card_number="5555555555554444") == "many"
    assert result(book, tenant, card_number="4000000000000010") is None
    assert result(book, tenant, card_number=None) is None


def test_amount_exact_with_tolerance_and_inclusive_ranges(tmp_path: Path, tenant: Tenant) -> None:
    book = book_of(
        tmp_path,
        """
- {name: exact, when: {amount: 20.01}, then: {operationResultCode: Rejected}}
- {name: band, when: {amount: {min: 100, max: 199.99}}, then: {operationResultCode: Rejected}}
- {name: floor, when: {amount: {min: 5000}}, then: {operationResultCode: Rejected}}
- {name: ceiling, when: {amount: {max: 1}}, then: {operationResultCode: Rejected}}
""",
    )
    assert result(book, tenant, amount=20.01) == "exact"
    assert result(book, tenant, amount=0.1 + 19.91) == "exact"  # 20.009999999999998
    assert result(book, tenant, amount=20.02) is None
    assert result(book, tenant, amount=100) == "band"
    assert result(book, tenant, amount=199.99) == "band"
    assert result(book, tenant, amount=199.991) is None
    assert result(book, tenant, amount=5000) == "floor"
    assert result(book, tenant, amount=1e9) == "floor"
    assert result(book, tenant, amount=0) == "ceiling"
    assert result(book, tenant, amount=1.0) == "ceiling"
    assert result(book, tenant, amount=1.01) is None


def test_currency_operation_gateway_account_attempt(tmp_path: Path, tenant: Tenant) -> None:
    book = book_of(
        tmp_path,
        """
- {name: cur, when: {currency: eur}, then: {operationResultCode: Rejected}}
- {name: ops, when: {operation: [Refund, capture]}, then: {operationResultCode: Rejected}}
- {name: op, when: {operation: void}, then: {operationResultCode: Rejected}}
- {name: gw, when: {gateway: adyen}, then: {operationResultCode: Rejected}}
- {name: acct, when: {account: backupAcct}, then: {operationResultCode: Rejected}}
- {name: second, when: {attempt: 2}, then: {operationResultCode: Rejected}}
- {name: later, when: {attempt: [3, 4]}, then: {operationResultCode: Rejected}}
""",
    )
    assert result(book, tenant) is None
    assert result(book, tenant, currency="EUR") == "cur"
    assert result(book, tenant, currency="eur") == "cur"
    assert result(book, tenant, operation="Capture") == "ops"
    assert result(book, tenant, operation="REFUND") == "ops"
    assert result(book, tenant, operation="Void") == "op"
    assert result(book, tenant, gateway="Adyen") == "gw"
    assert result(book, tenant, account="BACKUPACCT") == "acct"
    assert result(book, tenant, account=None) is None
    assert result(book, tenant, attempt=2) == "second"
    assert result(book, tenant, attempt=4) == "later"
    assert result(book, tenant, attempt=5) is None


def test_every_key_of_when_must_match(tmp_path: Path, tenant: Tenant) -> None:
    book = book_of(
        tmp_path,
        """
- name: all
  when: {cardNumber: "4111111111111111", amount: 25, currency: USD, operation: Charge,
         gateway: Stripe, account: stripeMain, attempt: 1}
  then: {operationResultCode: Rejected}
""",
    )
    assert result(book, tenant) == "all"
    for change in (
        {"card_number": "4242424242424242"},
        {"amount": 26.0},
        {"currency": "GBP"},
        {"operation": "PreAuth"},
        {"gateway": "Adyen"},
        {"account": "other"},
        {"attempt": 2},
    ):
        assert result(book, tenant, **change) is None, change


def test_every_then_key_reaches_the_outcome(tmp_path: Path, tenant: Tenant) -> None:
    book = book_of(
        tmp_path,
        """
- name: declined
  when: {amount: 1}
  then: {operationResultCode: Rejected, rejectReasonCode: DoNotHonor, gatewayResultCode: "05",
         gatewayResultDescription: Do not honour, delayMs: 250, fault: reset}
- name: pending
  when: {amount: 2}
  then: {operationResultCode: Accepted, settlesTo: FatalFailure, settleAfterSeconds: 30, fault: lostResponse}
- name: native
  when: {amount: 3}
  then: {operationResultCode: Rejected, gatewayFields: {refusalReasonCode: "9", additionalData.raw: 91}}
""",
    )
    assert book.decide(tenant, replace(BASE, amount=1.0)) == RuleOutcome(
        "Rejected", "DoNotHonor", "05", "Do not honour", 250, "reset", None, None, "declined"
    )
    assert book.decide(tenant, replace(BASE, amount=2.0)) == RuleOutcome(
        "Accepted", None, None, None, 0, "lostResponse", "FatalFailure", 30.0, "pending"
    )
    native = book.decide(tenant, replace(BASE, amount=3.0))
    assert native is not None
    assert native.gateway_fields == (("refusalReasonCode", "9"), ("additionalData.raw", 91))
    assert native.notes() == ["refusalReasonCode 9", "additionalData.raw 91"]


# -- order, mock gateways -------------------------------------------------------------------


def test_runtime_rules_then_user_files_then_built_in_cards(tmp_path: Path, tenant: Tenant) -> None:
    mine = "- {name: mine, when: {cardNumber: '4000000000000002'}, then: {operationResultCode: Success}}\n"
    book = book_of(tmp_path, mine, builtin=True)
    declined = replace(BASE, card_number="4000000000009995")
    assert result(book, tenant, card_number="4000009011000000") == "insufficient-funds-card"
    assert result(book, tenant, card_number="4000000000000002") == "mine"  # user file beats default
    tenant.rules.add(
        [parse_rules("{name: rt, when: {amount: 25}, then: {operationResultCode: FatalFailure}}", "runtime")[0]]
    )
    assert book.decide(tenant, declined) == RuleOutcome("FatalFailure", rule="rt")
    names = [r.name for r in book.rules(tenant)]
    assert names[:2] == ["rt", "mine"]
    assert names.index("stripe-generic-decline-card") < names.index("success-amount")  # PRECEDENCE
    assert [r.location for r in book.rules(tenant)][:2] == ["runtime", f"{tmp_path / 'rules.yaml'}:1"]
    assert book.files() == [tmp_path / "rules.yaml", book.builtin]


def test_first_matching_rule_wins(tmp_path: Path, tenant: Tenant) -> None:
    book = book_of(
        tmp_path,
        """
- {name: narrow, when: {amount: 25, currency: USD}, then: {operationResultCode: Rejected}}
- {name: wide, when: {amount: 25}, then: {operationResultCode: Success}}
""",
    )
    assert result(book, tenant) == "narrow"
    assert result(book, tenant, currency="EUR") == "wide"


def test_a_users_rule_applies_on_mock_gateways_too(tmp_path: Path, tenant: Tenant) -> None:
    book = book_of(
        tmp_path,
        """
- {name: by-card, when: {cardNumber: "4111111111111111"}, then: {operationResultCode: Rejected}}
- {name: by-account, when: {account: nullAcct, amount: 7}, then: {operationResultCode: TemporaryFailure}}
- {name: by-gateway, when: {gateway: NULLSuccess}, then: {operationResultCode: FatalFailure}}
""",
        builtin=True,
    )
    mock = {"gateway": "NULLFailure", "account": "nullAcct"}
    assert result(book, tenant, **mock) == "by-card"
    assert result(book, tenant, mock=True, **mock) == "by-card"  # an explicit rule wins everywhere
    assert result(book, tenant, mock=True, card_number="4242424242424242", amount=7.0, **mock) == "by-account"
    assert result(book, tenant, mock=True, card_number="4242424242424242", gateway="nullsuccess") == "by-gateway"
    # ... unless it names another gateway
    assert result(book, tenant, mock=True, card_number="4242424242424242", gateway="NULLFailure") is None


def test_builtin_test_cards_and_amounts_skip_mock_gateways(tenant: Tenant) -> None:
    book = ScenarioBook()
    assert result(book, tenant, card_number="4000000000000002") is not None
    assert result(book, tenant, mock=True, card_number="4000000000000002", gateway="NULLFailure") is None
    assert result(book, tenant, mock=True, amount=9011.0, gateway="NULLFailure") is None
    assert not book.may_match(tenant, mock=True, gateway="NULLSuccess")


def test_a_runtime_rule_applies_on_mock_gateways(tenant: Tenant) -> None:
    book = ScenarioBook()
    tenant.rules.add(
        [
            build_rule(
                {"name": "mine", "when": {"amount": 42.0}, "then": {"operationResultCode": "Rejected"}}, "runtime", 0
            )
        ]
    )
    assert book.may_match(tenant, mock=True, gateway="NULLSuccess")
    outcome = book.decide(tenant, replace(BASE, amount=42.0, gateway="NULLSuccess"), mock=True)
    assert outcome is not None and (outcome.rule, outcome.source) == ("mine", "runtime")
    assert book.decide(tenant, replace(BASE, amount=43.0, gateway="NULLSuccess"), mock=True) is None


# -- sequences ----------------------------------------------------------------------------

SEQUENCE = """
- name: flaky
  when: {amount: 30}
  sequence:
    - {operationResultCode: TemporaryFailure}
    - {operationResultCode: Rejected, rejectReasonCode: LimitExceeded}
    - {operationResultCode: Success}
"""


def codes(book: ScenarioBook, tenant: Tenant, times: int, card: str | None = "4111111111111111") -> list[str]:
    attempt = replace(BASE, amount=30.0, card_number=card)
    return [book.decide(tenant, attempt).operation_result_code for _ in range(times)]  # type: ignore[union-attr]


def test_sequence_entries_in_order_and_the_last_repeats(tmp_path: Path, tenant: Tenant) -> None:
    book = book_of(tmp_path, SEQUENCE)
    assert codes(book, tenant, 5) == ["TemporaryFailure", "Rejected", "Success", "Success", "Success"]
    assert book.decide(tenant, replace(BASE, amount=1.0)) is None  # non-matching calls do not count


def test_sequences_count_per_card_and_per_tenant(tmp_path: Path, tenants: TenantRegistry, tenant: Tenant) -> None:
    book = book_of(tmp_path, SEQUENCE)
    assert codes(book, tenant, 1) == ["TemporaryFailure"]
    assert codes(book, tenant, 1, card="4242 4242 4242 4242") == ["TemporaryFailure"]
    assert codes(book, tenant, 1, card=None) == ["TemporaryFailure"]
    assert codes(book, tenant, 1) == ["Rejected"]
    assert codes(book, tenant, 1, card="4242424242424242") == ["Rejected"]
    other = tenants.get("live-api-key")
    assert other is not None
    assert codes(book, other, 1) == ["TemporaryFailure"]
    assert tenant.rules.sequences == {
        ("flaky", "4111111111111111"): 2,
        ("flaky", "4242424242424242"): 2,
        ("flaky", "*"): 1,
    }


def test_a_tenant_reset_starts_sequences_again(tmp_path: Path, tenant: Tenant) -> None:
    book = book_of(tmp_path, SEQUENCE)
    assert codes(book, tenant, 3) == ["TemporaryFailure", "Rejected", "Success"]
    tenant.reset()
    assert codes(book, tenant, 2) == ["TemporaryFailure", "Rejected"]


# -- loading and reloading -----------------------------------------------------------------


def test_load_from_settings_refuses_a_bad_file(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("- {name: x, then: {operationResultCode: Nope}}\n")
    with pytest.raises(ScenarioError) as caught:
        ScenarioBook.load(Settings(scenario_paths=[str(bad), str(tmp_path / "gone.yaml")]))
    assert caught.value.problems == [
        f"{tmp_path / 'gone.yaml'}: no such file or directory",
        f"{bad}:1: rule 'x': then.operationResultCode: 'Nope' is not one of "
        "Success, Accepted, Rejected, TemporaryFailure, FatalFailure, NotImplemented",
    ]


def test_reload_keeps_state_and_picks_up_changes(tmp_path: Path, tenant: Tenant) -> None:
    book = book_of(tmp_path, SEQUENCE)
    path = tmp_path / "rules.yaml"
    assert codes(book, tenant, 1) == ["TemporaryFailure"]
    runtime = "{name: rt, when: {amount: 99}, then: {operationResultCode: Success}}"
    tenant.rules.add([parse_rules(runtime, "runtime")[0]])
    assert not book.changed()
    assert not book.reload_if_changed()
    path.write_text(SEQUENCE + "- {name: added, when: {amount: 31}, then: {operationResultCode: FatalFailure}}\n")
    os.utime(path, ns=(1, 1))  # a different modification time even on coarse clocks
    assert book.changed()
    assert book.reload_if_changed() is True
    assert codes(book, tenant, 1) == ["Rejected"]  # the counter survived the reload
    assert result(book, tenant, amount=31.0) == "added"
    assert result(book, tenant, amount=99.0) == "rt"
    assert book.reload() == 2


def test_a_file_written_while_it_is_read_is_read_again(
    tmp_path: Path, tenant: Tenant, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The watcher's race: the file changes after its rules were read but before the load
    ends. The next check must see it (stamps taken after the read had matched the new file)."""
    book = book_of(tmp_path, SEQUENCE)
    path = tmp_path / "rules.yaml"
    read = rulebook.load_groups

    def read_then_written(*args, **kwargs):  # type: ignore[no-untyped-def]
        found = read(*args, **kwargs)
        path.write_text("- {name: later, when: {amount: 1}, then: {operationResultCode: Rejected}}\n")
        os.utime(path, ns=(2, 2))
        return found

    monkeypatch.setattr(rulebook, "load_groups", read_then_written)
    os.utime(path, ns=(1, 1))
    assert book.reload_if_changed() is True  # reads SEQUENCE; the file is rewritten meanwhile
    monkeypatch.setattr(rulebook, "load_groups", read)
    assert book.changed()
    assert book.reload_if_changed() is True
    assert [r.name for r in book.file_rules] == ["later"]


def test_a_failed_reload_keeps_the_rules_loaded(tmp_path: Path, tenant: Tenant) -> None:
    book = book_of(tmp_path, SEQUENCE)
    (tmp_path / "rules.yaml").write_text("- {name: broken, then: {}}\n")
    with pytest.raises(ScenarioError) as caught:
        book.reload()
    path = tmp_path / "rules.yaml"
    assert caught.value.problems == [f"{path}:1: rule 'broken': then: missing key 'operationResultCode'"]
    assert [r.name for r in book.file_rules] == ["flaky"]


def test_directory_watch_sees_new_files(tmp_path: Path, tenant: Tenant) -> None:
    folder = tmp_path / "rules"
    folder.mkdir()
    book = ScenarioBook([folder], builtin=None)
    assert book.file_rules == ()
    (folder / "new.yaml").write_text("- {name: new, when: {amount: 25}, then: {operationResultCode: Rejected}}\n")
    assert book.reload_if_changed() is True
    assert result(book, tenant) == "new"


def test_listing_the_built_in_file_keeps_its_position(tmp_path: Path, tenant: Tenant) -> None:
    mine = tmp_path / "mine.yaml"
    mine.write_text("- {name: mine, when: {cardNumber: '4000009010000001'}, then: {operationResultCode: Success}}\n")
    book = ScenarioBook([ScenarioBook().builtin or "", mine])  # type: ignore[list-item]
    assert result(book, tenant, card_number="4000009010000001") == "card-declined-card"
    assert len(book.files()) == 2


# -- the built-in test cards ---------------------------------------------------------------


@pytest.fixture(scope="module")
def builtin() -> ScenarioBook:
    return ScenarioBook()


def test_every_result_code_and_reject_reason_has_a_card_and_an_amount(builtin: ScenarioBook) -> None:
    by_card: set[str] = set()
    by_amount: set[str] = set()
    for rule in builtin.file_rules:
        when = rule.data["when"]
        kinds = {o.operation_result_code for o in rule.outcomes} | {o.reject_reason_code or "" for o in rule.outcomes}
        if "cardNumber" in when:
            by_card |= kinds
        if "amount" in when:
            by_amount |= kinds
    for needed in (*RESULT_CODES, *REJECT_REASONS):
        assert needed in by_card, needed
        assert needed in by_amount, needed


def test_test_cards_are_luhn_valid_and_unique_and_amounts_are_in_their_band(builtin: ScenarioBook) -> None:
    cards: list[str] = []
    payemu: list[str] = []
    for rule in builtin.file_rules:
        when = rule.data["when"]
        numbers = when.get("cardNumber", [])
        cards += numbers if isinstance(numbers, list) else [numbers]
        if rule.match.gateway is None:  # payemu's own conventions
            payemu += numbers if isinstance(numbers, list) else [numbers]
            if "amount" in when:
                assert 9000 <= when["amount"] <= 9099.99, rule.name
    invalid = [c for c in cards if not luhn_valid(c)]
    assert cards
    # Credorax's documented decline card and Stripe's incorrect_number card fail the Luhn check
    assert sorted(invalid) == ["4176661000001111", "4242424242424241"]
    assert len(payemu) == len(set(payemu))
    assert not set(payemu) & (set(cards) - set(payemu))  # no gateway's test card is one of payemu's


@pytest.mark.parametrize(
    "card", ["4111111111111111", "4242424242424242", "5555555555554444", "378282246310005", "6011111111111117"]
)
@pytest.mark.parametrize("amount", [10, 25.0, 49.99, 100, 1000, 0.5, 8999.99, 9100])
@pytest.mark.parametrize("operation", ["Charge", "PreAuth", "Capture", "Refund", "Void", "Tokenize"])
def test_ordinary_cards_and_amounts_succeed(
    builtin: ScenarioBook, tenant: Tenant, card: str, amount: float, operation: str
) -> None:
    outcome = builtin.decide(tenant, replace(BASE, card_number=card, amount=float(amount), operation=operation))
    assert outcome is None or (
        outcome.operation_result_code == "Success" and outcome.delay_ms == 0 and outcome.fault == "none"
    )


def test_special_built_in_cards(builtin: ScenarioBook, tenant: Tenant) -> None:
    def decide(card: str, attempt: int = 1) -> RuleOutcome | None:
        return builtin.decide(tenant, replace(BASE, card_number=card, attempt=attempt))

    assert decide("4000000000009995") == RuleOutcome(
        "Rejected", "InsufficientFunds", rule="stripe-insufficient-funds-card"
    )
    assert decide("4000009011000000") == RuleOutcome("Rejected", "InsufficientFunds", rule="insufficient-funds-card")
    assert decide("4000009020000009").operation_result_code == "TemporaryFailure"  # type: ignore[union-attr]
    assert decide("4000009020000009", attempt=2) is None  # the fallback succeeds
    settles = decide("4000009001000002")
    assert settles
    assert (settles.operation_result_code, settles.settles_to, settles.settle_after_seconds) == (
        "Accepted",
        "Success",
        5.0,
    )
    assert decide("4000009002000001").settles_to == "Rejected"  # type: ignore[union-attr]
    assert decide("4000009030000007").delay_ms == 1500  # type: ignore[union-attr]
    assert decide("4000009031000006").fault == "lostResponse"  # type: ignore[union-attr]
    assert decide("4000009032000005").fault == "reset"  # type: ignore[union-attr]
    assert [decide("4000009021000008").operation_result_code for _ in range(4)] == [  # type: ignore[union-attr]
        "TemporaryFailure",
        "TemporaryFailure",
        "Success",
        "Success",
    ]


def test_a_test_amount_beats_a_test_card(builtin: ScenarioBook, tenant: Tenant) -> None:
    outcome = builtin.decide(tenant, replace(BASE, card_number="4000009010000001", amount=9012.0))
    assert outcome == RuleOutcome("Rejected", "ExpiredCard", rule="expired-card-amount")
    assert builtin.decide(tenant, replace(BASE, amount=9012.0, operation="Status")) is None


def test_a_mock_gateway_without_rules_for_it_asks_no_rule(tmp_path: Path, tenant: Tenant) -> None:
    """may_match: False lets the simulator skip describing the attempt (the mock gateways'
    fast path): with the built-in rules alone; a user's file rule or a rule of the tenant
    turns it on, unless the file rule names another gateway."""
    assert not ScenarioBook().may_match(tenant, mock=True, gateway="NULLSuccess")
    plain = book_of(
        tmp_path, "- name: plain\n  when: {cardNumber: '4111111111111111'}\n  then: {operationResultCode: Rejected}\n"
    )
    assert plain.may_match(tenant, mock=True, gateway="NULLSuccess")
    other = book_of(tmp_path, "- name: other\n  when: {gateway: Stripe}\n  then: {operationResultCode: Rejected}\n")
    assert not other.may_match(tenant, mock=True, gateway="NULLSuccess")
    runtime_rule = "{name: mine, when: {cardNumber: '4000000000000002'}, then: {operationResultCode: Rejected}}"
    tenant.rules.add([parse_rules(runtime_rule, "runtime")[0]])
    assert other.may_match(tenant, mock=True, gateway="NULLSuccess")


# -- holderName, postCode, cvv (each gateway's own test inputs) ------------------------------


def test_holder_name_post_code_and_cvv_match_as_written(tmp_path: Path, tenant: Tenant) -> None:
    text = (
        "- {name: holder, when: {gateway: Adyen, holderName: [declined, REFERRAL]},"
        " then: {operationResultCode: Rejected}}\n"
        "- {name: zip, when: {postCode: 46282}, then: {operationResultCode: Rejected}}\n"
        "- {name: code, when: {cvv: [901, '902']}, then: {operationResultCode: Rejected}}\n"
    )
    book = book_of(tmp_path, text, builtin=False)
    adyen = replace(BASE, gateway="Adyen")
    assert book.decide(tenant, replace(adyen, holder_name=" Declined ")).rule == "holder"  # type: ignore[union-attr]
    assert book.decide(tenant, replace(adyen, holder_name="REFERRAL")).rule == "holder"  # type: ignore[union-attr]
    assert book.decide(tenant, replace(BASE, holder_name="DECLINED")) is None  # Adyen's name, on Stripe
    assert book.decide(tenant, replace(adyen, holder_name="Jane DECLINED")) is None
    assert book.decide(tenant, replace(BASE, post_code="46282")).rule == "zip"  # type: ignore[union-attr]
    assert book.decide(tenant, replace(BASE, post_code="46283")) is None
    assert book.decide(tenant, replace(BASE, cvv="901")).rule == "code"  # type: ignore[union-attr]
    assert book.decide(tenant, replace(BASE, cvv="902")).rule == "code"  # type: ignore[union-attr]
    assert book.decide(tenant, replace(BASE, cvv="900")) is None
    assert book.decide(tenant, BASE) is None  # no holder, post code or cvv given


def test_gateway_triggers_fire_on_their_gateway_only(builtin: ScenarioBook, tenant: Tenant) -> None:
    for gateway in ("Adyen", "AuthorizeNet", "Elavon", "Worldpay"):
        assert builtin.decide(tenant, replace(BASE, gateway=gateway, card_number="4000000000000002")) is None, gateway
    assert builtin.decide(tenant, replace(BASE, gateway="Stripe", holder_name="DECLINED")) is None
    assert builtin.decide(tenant, replace(BASE, gateway="Stripe", post_code="46282")) is None
    declined = builtin.decide(tenant, replace(BASE, gateway="Adyen", holder_name="DECLINED"))
    assert declined is not None
    assert declined.rule == "adyen-declined-holder"
    assert builtin.decide(tenant, replace(BASE, gateway="Adyen", amount=9011.0)).rule == "insufficient-funds-amount"  # type: ignore[union-attr]


def test_a_gateway_asks_only_the_file_rules_that_can_match_it() -> None:
    """The built-in triggers name their gateway: a mock gateway that no rule names is not
    asked at all (the charge path skips the lookup), and Adyen never sees Stripe's rules."""
    from types import SimpleNamespace

    from emulator.scenarios.rulebook import ScenarioBook

    book = ScenarioBook()
    empty = SimpleNamespace(rules=())
    assert any(r.match.gateway == "stripe" for r in book.file_rules)
    assert not book.may_match(empty, mock=True, gateway="NULLSuccess")  # type: ignore[arg-type]
    assert book.may_match(empty, mock=False, gateway="Adyen")  # type: ignore[arg-type]
    assert all(r.match.gateway in (None, "adyen") for r in book._file_rules("Adyen", False).rules)


# -- precedence (rulebook.PRECEDENCE) -------------------------------------------------------


def test_precedence_is_user_rule_then_gateway_trigger_then_documented_then_generic(
    tmp_path: Path, tenant: Tenant
) -> None:
    """A user's rule beats the gateway's own trigger, which beats the gateway's documented
    answer to unlisted inputs, which beats payemu's generic test amounts."""
    from emulator.scenarios.rulebook import PRECEDENCE

    assert PRECEDENCE == ("user", "gateway", "sandbox", "generic")
    mine = (
        "- {name: mine, when: {cardNumber: '4000000000000002', amount: 9011}, then: {operationResultCode: Success}}\n"
    )
    book = book_of(tmp_path, mine, builtin=True)
    documented = RuleOutcome("Rejected", "InvalidAmount", rule="documented")
    # Stripe's 4242 card succeeds at any amount: its trigger beats payemu's 9011.00 (InsufficientFunds)
    assert result(book, tenant, card_number="4242424242424242", amount=9011.0) == "stripe-success-card"
    # Stripe's decline card beats the generic amount too
    assert result(book, tenant, card_number="4000000000000002", amount=9010.0) == "stripe-generic-decline-card"
    # the user's rule beats the gateway's trigger for the same card
    assert result(book, tenant, card_number="4000000000000002", amount=9011.0) == "mine"
    # the gateway's documented answer comes after its triggers and before the generic amounts
    attempt = replace(BASE, card_number="4111111111111111", amount=9011.0)
    assert book.decide(tenant, attempt, documented=documented) == documented
    gateway_card = replace(BASE, card_number="4000000000009995", amount=9011.0)
    assert book.decide(tenant, gateway_card, documented=documented).rule == "stripe-insufficient-funds-card"  # type: ignore[union-attr]
    # with nothing documented, the generic amount answers
    assert result(book, tenant, card_number="4111111111111111", amount=9011.0) == "insufficient-funds-amount"
    # a user's rule beats the documented answer
    tenant.rules.add(
        [parse_rules("{name: rt, when: {amount: 9011}, then: {operationResultCode: FatalFailure}}", "runtime")[0]]
    )
    assert book.decide(tenant, attempt, documented=documented).rule == "rt"  # type: ignore[union-attr]
