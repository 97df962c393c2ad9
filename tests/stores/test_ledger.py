"""The ledger's rules, states and reservations, without HTTP."""

from __future__ import annotations

import json
from datetime import timedelta
from decimal import Decimal
from typing import Any

import pytest

from emulator.domain import budget as weights
from emulator.domain.model import Money, OperationResult
from emulator.domain.vocabulary import Operation, RejectReason, ResultCode
from emulator.stores import ledger, recording, rules
from emulator.stores.transaction import weight_of_texts
from emulator.tenants.tenants import Tenant
from tests.conftest import bare_tenant

CARD = "4111111111111111"
_counter = iter(range(1_000_000))


def add(
    who: Tenant,
    operation: str,
    amount: float = 100.0,
    code: str = "Success",
    gateway: str = "Stripe",
    parent: ledger.Transaction | None = None,
    currency: str = "USD",
    **extra: Any,
) -> ledger.Transaction:
    result = OperationResult(
        Operation(operation),
        ResultCode(code),
        Money.of(amount, currency),
        None,
        gateway_name=gateway,
        gateway_reference=f"ref{next(_counter)}",
        reject_reason=RejectReason.CARD_DECLINED if code == "Rejected" else None,
        authorization_code="A1B2C3" if code == "Success" else None,
    )
    when = recording.record(
        who,
        result,
        account="main",
        card_number=CARD,
        my_ref=extra.pop("my_ref", "order-1"),
        authorization_days=7,
        parent=parent,
        **extra,
    )
    found = who.ledger.find(result.gateway_reference)  # the ledger's own, as the engine reads and changes it
    assert found is not None and found.created_at == when
    return found


def check(
    who: Tenant,
    tx: ledger.Transaction,
    operation: str,
    amount: float = 10.0,
    gateway: str = "Stripe",
    currency: str | None = "USD",
) -> str | None:
    refusal = rules.check(tx, Operation(operation), gateway, currency, Decimal(str(amount)), who.now())
    return refusal.reason if refusal else None


def test_capture_rules() -> None:
    who = bare_tenant()
    auth = add(who, "PreAuth", 100)
    assert check(who, auth, "Capture", 115) is None, "up to 115 % of the authorized amount"
    assert check(who, auth, "Capture", 115.01) == "AmountExceeded"
    assert check(who, auth, "Capture", gateway="Adyen") == "GatewayMismatch"
    assert check(who, auth, "Capture", currency="EUR") == "CurrencyMismatch"
    assert check(who, add(who, "Charge"), "Capture") == "OperationNotAllowed"
    assert check(who, add(who, "PreAuth", code="Rejected"), "Capture") == "OperationNotAllowed"
    add(who, "Capture", 90, parent=auth)
    assert auth.captured_by
    assert auth.captured_amount == 90
    assert check(who, auth, "Capture") == "AlreadyCaptured"
    voided = add(who, "PreAuth")
    add(who, "Void", parent=voided)
    assert check(who, voided, "Capture") == "AlreadyVoided"


def test_authorization_expires_on_the_tenant_clock() -> None:
    who = bare_tenant()
    auth = add(who, "PreAuth")
    who.clock.advance(timedelta(days=7))
    assert check(who, auth, "Capture") is None
    assert auth.state(who.now()) == "Authorized"
    who.clock.advance(timedelta(seconds=1))
    assert check(who, auth, "Capture") == "AuthorizationExpired"
    assert auth.state(who.now()) == "Expired"
    assert check(who, auth, "Void") is None, "an expired hold can still be voided"


def test_void_rules() -> None:
    who = bare_tenant()
    charge = add(who, "Charge")
    assert check(who, charge, "Void") is None
    auth = add(who, "PreAuth")
    capture = add(who, "Capture", parent=auth)
    assert check(who, auth, "Void") == "AlreadyCaptured"
    assert check(who, capture, "Void") == "OperationNotAllowed"
    refunded = add(who, "Charge")
    add(who, "Refund", 5, parent=refunded)
    assert check(who, refunded, "Void") == "AlreadyRefunded"
    void = add(who, "Void", parent=charge)
    assert check(who, charge, "Void") == "AlreadyVoided"
    assert check(who, void, "Void") == "OperationNotAllowed"
    assert check(who, void, "Refund") == "OperationNotAllowed"


def test_refunds_are_partial_and_repeated_never_above_the_original() -> None:
    who = bare_tenant()
    charge = add(who, "Charge", 100)
    assert check(who, add(who, "PreAuth"), "Refund") == "OperationNotAllowed"
    for _ in range(3):
        assert check(who, charge, "Refund", 30) is None
        add(who, "Refund", 30, parent=charge)
    assert charge.state(who.now()) == "PartiallyRefunded"
    assert charge.refunded_amount == 90
    assert check(who, charge, "Refund", 10.01) == "AmountExceeded"
    add(who, "Refund", 10, parent=charge)
    assert charge.state(who.now()) == "Refunded"
    assert check(who, charge, "Refund", 0.01) == "AlreadyRefunded"
    declined = add(who, "Charge", 100)
    add(who, "Refund", 40, code="Rejected", parent=declined)
    assert declined.refunded_amount == 0, "a declined refund changes nothing"
    assert declined.operations[0].result_code == "Rejected"


def test_refund_of_a_capture() -> None:
    who = bare_tenant()
    auth = add(who, "PreAuth", 100)
    capture = add(who, "Capture", 80, parent=auth)
    assert check(who, capture, "Refund", 80) is None
    assert check(who, capture, "Refund", 80.01) == "AmountExceeded"


def test_status_rules() -> None:
    who = bare_tenant()
    assert check(who, add(who, "Charge", code="Rejected"), "Status", currency=None) is None
    auth = add(who, "PreAuth")
    assert check(who, auth, "Status", currency=None) is None
    assert check(who, auth, "Status", gateway="stripe", currency=None) is None, "gateway names are case-insensitive"
    assert check(who, auth, "Status", gateway="Adyen", currency=None) == "GatewayMismatch"
    assert check(who, add(who, "Capture", parent=auth), "Status", currency=None) == "OperationNotAllowed"


def test_accepted_settles_after_its_time() -> None:
    who = bare_tenant()
    pending = add(who, "Charge", code="Accepted", settles_to="Rejected", settle_after_seconds=5)
    assert pending.state(who.now()) == "Pending"
    assert check(who, pending, "Refund") == "OperationNotAllowed"
    who.clock.advance(timedelta(seconds=5))
    assert pending.state(who.now()) == "Declined"
    assert (pending.result_code, pending.reject_reason) == ("Rejected", "CardDeclined")
    ok = add(who, "PreAuth", code="Accepted", settles_to="Success", settle_after_seconds=1)
    who.clock.advance(timedelta(seconds=1))
    assert check(who, ok, "Capture") is None
    assert ok.state(who.now()) == "Authorized"
    forever = add(who, "Charge", code="Accepted")
    who.clock.advance(timedelta(days=30))
    assert forever.state(who.now()) == "Pending", "no settlesTo: pending until the rule says otherwise"


def test_reservation_refuses_a_second_operation() -> None:
    who = bare_tenant()
    auth = add(who, "PreAuth")
    rules.reserve(auth, Operation.CAPTURE)
    assert check(who, auth, "Capture") == "OperationInProgress"
    assert check(who, auth, "Void") == "OperationInProgress"
    assert check(who, auth, "Status", currency=None) is None, "status reads without waiting"
    rules.release(auth)
    assert check(who, auth, "Capture") is None


@pytest.mark.parametrize(
    ("operation", "code", "state"),
    [
        ("Charge", "Success", "Charged"),
        ("PreAuth", "Success", "Authorized"),
        ("Charge", "Rejected", "Declined"),
        ("Charge", "TemporaryFailure", "Failed"),
        ("Charge", "Accepted", "Pending"),
        ("Tokenize", "Success", "Tokenized"),
    ],
)
def test_states(operation: str, code: str, state: str) -> None:
    who = bare_tenant()
    assert add(who, operation, code=code).state(who.now()) == state


def test_to_json_is_masked_and_follows_the_clock() -> None:
    who = bare_tenant()
    auth = add(who, "PreAuth", 50, my_ref="order-9")
    add(who, "Capture", 50, parent=auth)
    data = auth.to_json()
    assert data["cardMasked"] == "411111******1111"
    assert CARD not in json.dumps(data)
    assert data["state"] == "Captured"
    assert data["capturedAmount"] == 50
    assert data["myRef"] == "order-9"
    assert [o["operation"] for o in data["operations"]] == ["Capture"]
    assert set(data) >= {
        "reference",
        "operation",
        "gateway",
        "account",
        "amount",
        "currency",
        "state",
        "resultCode",
        "createdAt",
        "myRef",
        "cardMasked",
        "capturedAmount",
        "refundedAmount",
        "operations",
        "attempts",
    }
    late = add(who, "PreAuth")
    who.clock.advance(timedelta(days=8))
    assert late.to_json()["state"] == "Expired"
    assert CARD not in repr(late)


def test_find_by_reference_or_latest_my_ref() -> None:
    who = bare_tenant()
    first = add(who, "Charge", my_ref="same")
    second = add(who, "PreAuth", my_ref="same")
    add(who, "Capture", parent=second, my_ref="same")
    assert who.ledger.find(first.reference) is first
    assert who.ledger.find(None, "same") is second, "the latest charge or authorization"
    assert who.ledger.find("nope") is None
    assert who.ledger.find(None, "other") is None
    assert who.ledger.find("nope", "same") is None, "refTransId wins over myRef"


def test_gateway_tokens_keep_the_card_out_of_repr() -> None:
    who = bare_tenant()
    recording.remember_token(who, "tok_1", "Stripe", "main", CARD)
    token = who.ledger.token("tok_1")
    assert token is not None
    assert token.card_number == CARD
    assert CARD not in repr(token)


# -- older transactions packed (emulator.stores.packing) ------------------------------------
def _objects(who: Tenant) -> list[str]:
    """The references the ledger keeps as objects (the rest are packed into bytes)."""
    return [ref for ref, stored in who.ledger._transactions.items() if isinstance(stored, ledger.Transaction)]


def _weights_add_up(who: Tenant) -> bool:
    return who.ledger.bytes == sum(tx.weight for tx in who.ledger.transactions())


def test_a_finished_transaction_is_packed_as_it_is_recorded_and_an_open_one_kept_as_an_object() -> None:
    who = bare_tenant()
    results = {
        "charge": ("Charge", "Success"),
        "declined": ("Charge", "Rejected"),
        "authorization": ("PreAuth", "Success"),
        "pending": ("Charge", "Accepted"),
    }
    recorded = {}
    for name, (operation, code) in results.items():
        result = OperationResult(
            Operation(operation),
            ResultCode(code),
            Money.of(10, "USD"),
            None,
            gateway_name="Stripe",
            gateway_reference=f"rec-{name}",
            reject_reason=RejectReason.CARD_DECLINED if code == "Rejected" else None,
        )
        recorded[name] = recording.record(
            who, result, account=None, card_number=CARD, my_ref=None, authorization_days=7
        )
    stored = who.ledger._transactions
    assert [type(stored[f"rec-{name}"]) for name in results] == [bytes, bytes, ledger.Transaction, ledger.Transaction]
    charge = who.ledger.find("rec-charge")
    assert charge is not None and charge.created_at == recorded["charge"]
    assert who.ledger.find("rec-charge") is charge, "found: an object of the ledger's from now on"
    assert _weights_add_up(who)


def test_older_transactions_are_packed_and_read_back_equal() -> None:
    who = bare_tenant()
    made = [add(who, "Charge", my_ref=f"order-{n}") for n in range(ledger.RECENT + 10)]
    assert _objects(who) == [tx.reference for tx in made[10:]]
    oldest = made[0]
    copy = who.ledger[oldest.reference]
    assert copy == oldest
    assert copy is not who.ledger[oldest.reference], "a packed one is read as a fresh copy"
    assert copy.to_json() == oldest.to_json()
    assert who.ledger.transactions() == made
    found = who.ledger.find(oldest.reference)
    assert found == oldest
    assert who.ledger.find(oldest.reference) is found, "found: the ledger keeps it as an object again"
    assert _weights_add_up(who)


def test_an_operation_on_a_packed_transaction_lands_in_the_ledger() -> None:
    who = bare_tenant()
    charge = add(who, "Charge", 100)
    for _ in range(ledger.RECENT + 5):
        add(who, "Charge")
    assert charge.reference not in _objects(who)
    parent = who.ledger.find(charge.reference)
    assert parent is not None
    assert check(who, parent, "Refund", 30) is None
    rules.reserve(parent, Operation.REFUND)
    for _ in range(ledger.RECENT + 5):
        add(who, "Charge")
    assert who.ledger._transactions[charge.reference] is parent, "busy at a gateway: never packed"
    add(who, "Refund", 30, parent=parent)
    rules.release(parent)
    add(who, "Refund", 20, parent=charge)  # a stale object: the ledger's own one is changed
    for _ in range(ledger.RECENT + 5):
        add(who, "Charge")
    assert charge.reference not in _objects(who)
    now = who.ledger[charge.reference]
    assert now.refunded_amount == 50
    assert [entry.amount for entry in now.operations] == [30, 20]
    assert now.state(who.now()) == "PartiallyRefunded"
    assert _weights_add_up(who)


def test_my_ref_finds_the_latest_charge_or_authorization_among_packed_ones() -> None:
    who = bare_tenant()
    add(who, "Charge", my_ref="same")
    authorization = add(who, "PreAuth", my_ref="same")
    add(who, "Void", parent=authorization, my_ref="same")
    for _ in range(ledger.RECENT + 5):
        add(who, "Charge", my_ref="other")
    assert authorization.reference not in _objects(who)
    found = who.ledger.find(None, "same")
    assert found is not None
    assert (found.reference, found.state(who.now())) == (authorization.reference, "Voided")
    assert who.ledger.find(None, "sam") is None
    assert who.ledger.find(None, "same ") is None


def test_limits_drop_the_oldest_finished_and_keep_a_packed_open_authorization() -> None:
    limit = ledger.RECENT + 20
    who = bare_tenant(transactions=limit)
    authorization = add(who, "PreAuth")
    pending = add(who, "Charge", code="Accepted")
    charges = [add(who, "Charge") for _ in range(limit + 5)]
    assert authorization.reference in who.ledger
    assert pending.reference in who.ledger
    assert [tx.reference for tx in charges[:7]] == [ref for ref in charges_dropped(who, charges)]
    assert len(who.ledger) == limit
    assert who.ledger.holds_open(who.now())
    assert _weights_add_up(who)
    add(who, "Void", parent=authorization)
    who.ledger.shed(1)
    assert pending.reference in who.ledger, "pending: may still settle"
    assert authorization.reference not in who.ledger, "voided: the oldest finished one goes first"


def charges_dropped(who: Tenant, charges: list[ledger.Transaction]) -> list[str]:
    return [tx.reference for tx in charges if tx.reference not in who.ledger]


def test_a_full_ledger_keeps_few_objects_for_the_garbage_collector() -> None:
    who = bare_tenant(transactions=2_000)
    for _ in range(3_000):
        add(who, "Charge")
    assert len(who.ledger) == 2_000
    assert len(_objects(who)) == ledger.RECENT
    assert _weights_add_up(who)


def test_settles_reads_a_packed_transaction_s_head() -> None:
    who = bare_tenant()
    pending = add(who, "Charge", code="Accepted", settles_to="Success", settle_after_seconds=5)
    forever = add(who, "Charge", code="Accepted")
    done = add(who, "Charge")
    assert who.ledger.settles(pending.reference)
    for _ in range(ledger.RECENT + 5):
        add(who, "Charge")
    assert not {pending.reference, forever.reference, done.reference} & set(_objects(who))
    assert [who.ledger.settles(tx.reference) for tx in (pending, forever, done)] == [True, False, False]
    assert not who.ledger.settles("nope")


def test_more_busy_transactions_than_recent_ones_stay_objects_until_released() -> None:
    who = bare_tenant()
    held = []
    for _ in range(ledger.RECENT + 5):  # a slow gateway: all at the gateway at once
        held.append(add(who, "PreAuth"))
        rules.reserve(held[-1], Operation.CAPTURE)
    add(who, "Charge")  # ends, with nothing it may pack
    assert set(_objects(who)) >= {tx.reference for tx in held}
    for tx in held:
        rules.release(tx)
    add(who, "Charge")
    assert len(_objects(who)) == ledger.RECENT
    assert held[0].reference not in _objects(who), "released: the oldest are packed first"
    assert _weights_add_up(who)


@pytest.mark.parametrize("text", ["", "NULL-ABCDEFGHIJ", "order-7", "café", "注文", "😀 order", "\ud800"])
def test_a_transaction_weighs_what_budget_text_says_of_each_string(text: str) -> None:
    expected = weights.TRANSACTION + sum(weights.text(value) for value in ("ref-1", text, text, text))
    assert weight_of_texts("ref-1", text, text, text) == expected
