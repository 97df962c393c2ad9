"""The rule index: an attempt is tested only against the rules filed under its card and
amount, and the index never changes which rule decides."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from emulator.scenarios import Attempt, Rule, ScenarioBook
from emulator.scenarios.ruleindex import RuleIndex

BASE = Attempt(
    card_number="4111111111111111",
    amount=25.0,
    currency="USD",
    operation="Charge",
    gateway="Stripe",
    account="stripeMain",
)


@pytest.fixture(scope="module")
def book() -> ScenarioBook:
    return ScenarioBook()


def _first(rules: tuple[Rule, ...], attempt: Attempt) -> Rule | None:
    return next((rule for rule in rules if rule.match.matches(attempt)), None)


def _named(index: RuleIndex) -> tuple[list[str | None], list[float]]:
    """Every card number and amount the rules name, and one each that none names."""
    cards = sorted({n for rule in index.rules for n in rule.match.card_numbers or ()})
    amounts = sorted({rule.match.amount for rule in index.rules if rule.match.amount is not None})
    return [*cards, "4111111111111111", None], [*amounts, 25.0, 0.01]


@pytest.mark.parametrize("gateway", ["Stripe", "Adyen", "Authorize.Net", "Braintree"])
def test_the_index_decides_as_the_rules_in_order(book: ScenarioBook, gateway: str) -> None:
    """For every card and amount the gateway's rules name (and some they do not), the first
    matching candidate of each tier is the first matching rule of that tier in file order."""
    index = book._file_rules(gateway, False)
    triggers, generic = index.rules[: index.generic], index.rules[index.generic :]
    cards, amounts = _named(index)
    assert len(cards) > 3
    assert len(amounts) > 3
    for card in cards:
        for amount in amounts:
            attempt = replace(BASE, gateway=gateway, card_number=card, amount=amount)
            found = index.candidates(attempt)
            assert _first(found[0], attempt) is _first(triggers, attempt), (card, amount)
            assert _first(found[1], attempt) is _first(generic, attempt), (card, amount)


def test_an_attempt_is_tested_against_the_rules_of_its_card_and_amount_only(book: ScenarioBook) -> None:
    index = book._file_rules("Stripe", False)
    plain = index.candidates(BASE)
    assert sum(map(len, plain)) < len(index.rules) // 2
    assert all(rule.match.card_numbers is None for tier in plain for rule in tier)
    assert all(rule.match.amount is None for tier in plain for rule in tier)
    listed = index.candidates(replace(BASE, card_number="4000000000000002"))
    assert any(rule.match.card_numbers for tier in listed for rule in tier)


def test_an_amount_within_the_tolerance_finds_its_rule(tmp_path: Path) -> None:
    path = tmp_path / "rules.yaml"
    path.write_text(
        "- {name: cents, when: {amount: 10.05}, then: {operationResultCode: Rejected}}\n"
        "- {name: odd, when: {amount: 10.005}, then: {operationResultCode: Rejected}}\n"
    )
    index = ScenarioBook([path], builtin=None)._file_rules("Stripe", False)
    for amount, rule in ((10.05 + 1e-10, "cents"), (10.05 - 1e-10, "cents"), (10.005, "odd"), (10.0051, None)):
        found = _first(index.candidates(replace(BASE, amount=amount))[0], replace(BASE, amount=amount))
        assert (found.name if found else None) == rule


def test_an_amount_that_is_not_finite_is_tested_against_the_unfiled_rules(book: ScenarioBook) -> None:
    index = book._file_rules("Stripe", False)
    assert index.candidates(replace(BASE, amount=float("inf"))) == index.candidates(replace(BASE, amount=1.5))
