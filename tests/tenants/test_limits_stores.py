"""The store methods the memory limits (emulator.tenants.limits) rely on, without HTTP."""

from __future__ import annotations

import pytest

from emulator.domain.errors import ApiError
from emulator.scenarios.ruleset import RuleSet
from emulator.stores import recording, vault
from tests.conftest import bare_tenant
from tests.stores.test_ledger import add


def test_vault_counts_the_characters_it_holds() -> None:
    who = bare_tenant()
    first = vault.store(who, "a" * 10)
    vault.store(who, "b" * 5)
    assert who.vault.bytes == 15
    who.vault.delete(first.token)
    assert who.vault.bytes == 5


def test_vault_character_limit_is_a_507() -> None:
    who = bare_tenant(token_bytes=12)
    vault.store(who, "a" * 10)
    with pytest.raises(ApiError) as raised:
        vault.store(who, "b" * 3)
    assert raised.value.status == 507


def test_ledger_drops_the_oldest_finished_transaction_first() -> None:
    who = bare_tenant(transactions=3)
    held = add(who, "PreAuth")
    charges = [add(who, "Charge") for _ in range(3)]
    assert list(who.ledger) == [held.reference, *[c.reference for c in charges[1:]]]


def test_ledger_full_of_open_authorizations_is_a_507() -> None:
    who = bare_tenant(transactions=2)
    add(who, "PreAuth")
    add(who, "PreAuth")
    with pytest.raises(ApiError) as raised:
        add(who, "PreAuth")
    assert raised.value.status == 507


def test_ledger_keeps_at_most_so_many_gateway_tokens() -> None:
    who = bare_tenant(tokens=2)
    for n in range(3):
        recording.remember_token(who, f"tok{n}", "Stripe", "main", None)
    assert who.ledger.token_count == 2
    assert who.ledger.token("tok0") is None


def test_rule_set_forgets_the_oldest_sequence_counter() -> None:
    rules = RuleSet(sequence_limit=2)
    rules.next_index("r", "1111")
    rules.next_index("r", "2222")
    rules.next_index("r", "3333")
    assert list(rules.sequences) == [("r", "2222"), ("r", "3333")]
