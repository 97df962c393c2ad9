"""payemu's own files (the gateways' catalog files with their triggers, the built-in test
cards) are read when first needed, not at start; what they decide is what they decided
read at once, and the test suite still reads and checks every one of them."""

from __future__ import annotations

from pathlib import Path

import pytest

from emulator.catalog.loader import load_catalog, on_demand
from emulator.domain.config import Settings
from emulator.domain.datafiles import gateway_files
from emulator.scenarios import BUILTIN, Attempt, ScenarioBook
from emulator.tenants.tenants import TenantRegistry

GATEWAYS = [path.stem for path in gateway_files()]


@pytest.fixture(scope="module")
def at_once() -> ScenarioBook:
    """Every file read when the book is made (as for gateway files a caller gives)."""
    return ScenarioBook(gateways=gateway_files())


def test_a_new_book_reads_no_file_of_payemu_s_own(tmp_path: Path) -> None:
    rules = tmp_path / "mine.yaml"
    rules.write_text("scenarios:\n  - {name: mine, when: {amount: 1.11}, then: {operationResultCode: Success}}\n")
    book = ScenarioBook([rules])
    assert [rule.name for rule in book._mine] == ["mine"]  # the user's file: read (and checked) at once
    assert book._generic is None and book._triggers == {}


def test_the_banner_counts_the_built_in_rules_before_reading_them() -> None:
    book = ScenarioBook()
    counted = book.counts()[str(BUILTIN)]
    assert book._generic is None
    assert counted == sum(1 for rule in book.file_rules if rule.source == str(BUILTIN)) > 40
    assert book.counts()[str(BUILTIN)] == counted  # and after


def test_read_on_demand_the_rules_are_those_read_at_once(at_once: ScenarioBook) -> None:
    book = ScenarioBook()
    assert book.is_builtin(book.file_rules[-1])
    assert book.file_rules == at_once.file_rules


@pytest.mark.parametrize("gateway", GATEWAYS)
def test_each_gateway_is_decided_by_the_rules_read_at_once(at_once: ScenarioBook, gateway: str) -> None:
    book = ScenarioBook()  # reads this gateway's file only
    for mock in (False, True):
        assert book._file_rules(gateway, mock).rules == at_once._file_rules(gateway, mock).rules
    assert book.test_cards(gateway) == at_once.test_cards(gateway)
    assert book.gateway_cards(gateway) == at_once.gateway_cards(gateway)
    assert set(book._triggers) <= {gateway.casefold()}


def test_whose_rule_decided_without_reading_every_gateway(at_once: ScenarioBook) -> None:
    tenant = TenantRegistry(Settings()).get("sandbox-api-key")
    assert tenant is not None
    book = ScenarioBook()
    attempt = Attempt("4000000000000002", 10.0, "USD", "Charge", "Stripe", None)
    decided = book.decide(tenant, attempt)
    assert decided is not None and decided.rule
    assert not book.users_rule(tenant, decided.rule)  # Stripe's own trigger
    assert set(book._triggers) == {"stripe"}
    for name in {rule.name for rule in at_once.file_rules}:
        assert book.users_rule(tenant, name) is False
    assert book.users_rule(tenant, "no-such-rule") is True


def test_the_catalog_read_on_demand_is_the_catalog_read_at_once() -> None:
    catalog = on_demand()
    everything = load_catalog()
    assert catalog.names() == everything.names() == GATEWAYS
    assert len(catalog) == len(everything)
    assert catalog.get("stripe") == everything.get("Stripe")
    assert catalog.get("no such gateway") is None
    assert list(catalog) == list(everything)
