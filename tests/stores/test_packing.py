"""Packed transactions: every field comes back equal, and the head says what the ledger
reads without unpacking."""

from __future__ import annotations

import gc
from dataclasses import fields
from datetime import UTC, datetime, timedelta, timezone
from decimal import Decimal

import pytest

from emulator.domain.clock import Clock
from emulator.domain.model import Money, OperationResult
from emulator.domain.vocabulary import Operation, RejectReason, ResultCode
from emulator.stores import ledger, packing
from emulator.stores.transaction import OperationEntry, Transaction
from tests.conftest import bare_tenant
from tests.stores.test_ledger import add

WHEN = datetime(2026, 11, 24, 9, 30, 15, 123456, tzinfo=UTC)


def full() -> Transaction:
    """A transaction with no field left at its default."""
    return Transaction(
        "ref-Ω-1",
        Operation.PRE_AUTH,
        "Stripe",
        "main",
        Decimal("10.105"),
        "KWD",
        ResultCode.ACCEPTED,
        RejectReason.CARD_DECLINED,
        WHEN,
        "order \ud800 ✓",  # a lone surrogate: JSON lets a client send one
        "4111111111111111",
        "A1B2C3",
        "ref-parent",
        2,
        3,
        WHEN + timedelta(days=7),
        "Success",
        WHEN + timedelta(seconds=5),
        Decimal("9.5"),
        Decimal("0.25"),
        "ref-capture",
        "ref-void",
        (
            OperationEntry(Operation.CAPTURE, "ref-capture", Decimal("9.5"), ResultCode.SUCCESS, WHEN),
            OperationEntry(Operation.REFUND, "ref-refund", Decimal("0.25"), ResultCode.REJECTED, WHEN),
        ),
        None,
        None,
        812,
    )


def test_every_field_comes_back_equal_and_of_its_type() -> None:
    tx = full()
    clock = Clock()
    back = packing.unpack(packing.pack(tx), clock)
    for spec in fields(Transaction):
        if spec.name != "clock":
            assert getattr(back, spec.name) == getattr(tx, spec.name), spec.name
            assert type(getattr(back, spec.name)) is type(getattr(tx, spec.name)), spec.name
    assert back.clock is clock
    assert back.operations[0].time.tzinfo is UTC


def test_a_transaction_at_its_defaults_comes_back_equal() -> None:
    """The common case packs shorter (its defaults one None, no myRef); a zero written
    otherwise keeps how it was written."""
    tx = Transaction(
        "ref-2", Operation.CHARGE, "NULLSuccess", None, Decimal("10.5"), "USD", ResultCode.SUCCESS, None, WHEN
    )
    back = packing.unpack(packing.pack(tx), None)
    assert back == tx
    assert (back.captured_amount, back.refunded_amount, back.operations, back.my_ref) == (0, 0, (), None)
    tx.refunded_amount = Decimal("0.00")
    assert str(packing.unpack(packing.pack(tx), None).refunded_amount) == "0.00"


def test_a_reason_that_is_not_the_vocabulary_s_stays_text() -> None:
    tx = full()
    tx.reject_reason = "SomethingElse"
    assert packing.unpack(packing.pack(tx), None).reject_reason == "SomethingElse"


def test_times_keep_their_instant_and_naive_ones_stay_naive() -> None:
    tx = full()
    tx.created_at = datetime(2026, 1, 2, 3, 4, 5, 6, tzinfo=timezone(timedelta(hours=5)))
    tx.expires_at = datetime(2026, 1, 2, 3, 4, 5, 6)
    back = packing.unpack(packing.pack(tx), None)
    assert back.created_at == tx.created_at
    assert back.created_at.tzinfo is UTC
    assert back.expires_at == tx.expires_at
    assert back.expires_at is not None and back.expires_at.tzinfo is None


def test_the_head_has_the_weight_and_the_flags() -> None:
    tx = full()
    blob = packing.pack(tx)
    assert packing.weight(blob) == 812
    assert blob[0] == packing.MAY_BE_OPEN | packing.ORIGINAL | packing.SETTLES
    charged = Transaction("r", Operation.CHARGE, "Stripe", None, Decimal(1), "USD", ResultCode.SUCCESS, None, WHEN)
    assert packing.pack(charged)[0] == packing.ORIGINAL
    authorized = Transaction("a", Operation.PRE_AUTH, "Stripe", None, Decimal(1), "USD", ResultCode.SUCCESS, None, WHEN)
    assert packing.pack(authorized)[0] == packing.MAY_BE_OPEN | packing.ORIGINAL
    authorized.captured_by = "c"
    assert packing.pack(authorized)[0] == packing.ORIGINAL, "captured: finished for good"
    refund = Transaction("f", Operation.REFUND, "Stripe", None, Decimal(1), "USD", ResultCode.SUCCESS, None, WHEN)
    assert packing.pack(refund)[0] == 0


@pytest.mark.parametrize(
    ("held", "asked", "found"),
    [("order-1", "order-1", True), ("order-1", "order-", False), ("order-1", "order-12", False), (None, "", False)],
)
def test_a_my_ref_is_matched_whole_without_unpacking(held: str | None, asked: str, found: bool) -> None:
    tx = full()
    tx.my_ref = held
    blob = packing.pack(tx)
    assert blob.startswith(packing.my_ref_key(asked), packing.MY_REF_AT) is found
    assert packing.unpack(blob, None).my_ref == held


def test_a_busy_transaction_is_not_packed() -> None:
    tx = full()
    tx.busy = Operation.CAPTURE
    with pytest.raises(ValueError, match="busy"):
        packing.pack(tx)


def test_a_packed_transaction_is_nothing_the_collector_tracks() -> None:
    tx = full()
    assert gc.is_tracked(tx)
    assert not gc.is_tracked(packing.pack(tx))


def test_a_ledger_filling_up_brings_no_young_collection_nearer() -> None:
    """A packed transaction is not counted towards the next young collection either (a
    tuple of plain values would be, until that collection: a ledger filling up then made
    young collections of tens of thousands of tuples, 50 ms each)."""
    who = bare_tenant(transactions=5_000)
    gc.collect()
    gc.disable()
    try:
        before = gc.get_count()[0]
        for _ in range(3_000):
            add(who, "Charge")
        grown = gc.get_count()[0] - before
    finally:
        gc.enable()
    assert len(who.ledger) == 3_000
    assert grown < 3 * ledger.RECENT, "what stays tracked: the newest transactions, kept as objects"


def test_a_new_plain_transaction_packs_from_its_answer_as_from_the_object() -> None:
    for operation, code, reason, my_ref, when in [
        (Operation.CHARGE, ResultCode.SUCCESS, None, "order-1", WHEN),
        (Operation.CHARGE, ResultCode.REJECTED, RejectReason.CARD_DECLINED, None, WHEN),
        (Operation.TOKENIZE, ResultCode.SUCCESS, None, "order \ud800 ✓", WHEN.replace(tzinfo=None)),
    ]:
        tx = Transaction(
            "ref-new", operation, "Stripe", "main", Decimal("10.5"), "USD", code, reason, when, my_ref, "4111", "A1"
        )
        tx.weight = tx.weight_of()
        answer = OperationResult(
            operation,
            code,
            Money(Decimal("10.5"), "USD"),
            "said",
            authorization_code="A1",
            gateway_name="Stripe",
            gateway_reference="ref-new",
            reject_reason=reason,
        )
        assert packing.pack_answer(answer, "main", "4111", my_ref, when, tx.weight) == packing.pack(tx)
