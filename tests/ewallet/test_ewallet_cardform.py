"""emulator.ewallet.cardform: the card form's store of entered cards and OTP
challenges is per tenant, each bounded on its own."""

from __future__ import annotations

import gc
from types import SimpleNamespace
from typing import Any

import pytest

from emulator.domain.config import KeySpec, Settings
from emulator.domain.errors import ApiError
from emulator.ewallet.cardform import MAX_ENTRIES, OTP_CODE, Desk
from emulator.tenants.tenants import Tenant

CHOICE = {"card": {"cardNumber": "4111111111111111", "cvv": "123"}}


def _tenant(key: str) -> Tenant:
    return Tenant(KeySpec(key, key, 30001, True), Settings(), 7)


def _session(token: str) -> Any:
    return SimpleNamespace(token=token)


def test_one_tenants_10001_cards_do_not_evict_anothers() -> None:
    desk = Desk()
    shop, busy = _tenant("shop-key"), _tenant("busy-key")
    shop_session, busy_session = _session("S" * 32), _session("B" * 32)
    kept = desk.enter(shop, shop_session, CHOICE)
    first = desk.enter(busy, busy_session, CHOICE)
    for _ in range(MAX_ENTRIES):  # 10,001 in all
        desk.enter(busy, busy_session, CHOICE)
    assert desk.entry(shop, shop_session, kept).choice == CHOICE  # still there
    assert desk.held(busy) == MAX_ENTRIES and desk.held(shop) == 1
    with pytest.raises(ApiError):  # the busy tenant's own oldest went first
        desk.entry(busy, busy_session, first)


def test_a_reference_is_found_only_by_its_own_tenant_and_session() -> None:
    desk = Desk()
    shop, other = _tenant("shop-key"), _tenant("other-key")
    session = _session("S" * 32)
    reference = desk.enter(shop, session, CHOICE)
    for tenant, asked in ((other, session), (shop, _session("T" * 32))):
        with pytest.raises(ApiError) as refused:
            desk.entry(tenant, asked, reference)
        assert refused.value.status == 400
        assert refused.value.body[0]["fieldName"] == "cardRef"


def test_challenges_are_per_tenant_too() -> None:
    desk = Desk(limit=3)
    shop, busy = _tenant("shop-key"), _tenant("busy-key")
    session = _session("S" * 32)
    entry = desk.entry(shop, session, desk.enter(shop, session, CHOICE))
    challenge = desk.challenge(shop, session, entry)
    for _ in range(10):
        desk.challenge(busy, session, desk.entry(busy, session, desk.enter(busy, session, CHOICE)))
    assert desk.answer(shop, session, challenge, OTP_CODE).status == "Success"
    assert desk.passed(shop, session, challenge) is entry
    with pytest.raises(ApiError):
        desk.find_challenge(busy, session, challenge)


def test_a_tenant_that_goes_takes_its_entries_with_it() -> None:
    desk = Desk()
    tenant = _tenant("gone-key")
    desk.enter(tenant, _session("S" * 32), CHOICE)
    assert len(desk._books) == 1
    del tenant
    gc.collect()
    assert len(desk._books) == 0
