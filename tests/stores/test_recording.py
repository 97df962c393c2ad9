"""emulator.stores.recording: one way to record an attempt. What the ledger keeps of a
plain attempt, packed from its fields, is what it keeps of the same attempt made a
Transaction; any other attempt is kept as a Transaction."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from emulator.domain.model import Money, OperationResult
from emulator.domain.vocabulary import ORIGINALS, Operation, RejectReason, ResultCode
from emulator.stores import recording
from emulator.stores.transaction import Transaction
from tests.conftest import bare_tenant

CARD = "4111111111111111"


def _result(reference: str, operation: str = "Charge", code: str = "Success", **fields: Any) -> OperationResult:
    return OperationResult(
        Operation(operation),
        ResultCode(code),
        Money.of(fields.pop("amount", 12.5), "USD"),
        "said",
        authorization_code="A1B2C3" if code == "Success" else None,
        gateway_name="Stripe",
        gateway_reference=reference,
        reject_reason=RejectReason.CARD_DECLINED if code == "Rejected" else None,
    )


CASES = [
    ("charge", {}, bytes),
    ("declined", {"code": "Rejected"}, bytes),
    ("tokenize", {"operation": "Tokenize"}, bytes),
    ("authorization", {"operation": "PreAuth"}, object),
    ("pending", {"code": "Accepted"}, object),
]


@pytest.mark.parametrize(("name", "fields", "kept_as"), CASES)
def test_an_attempt_is_kept_as_its_transaction_would_be(name: str, fields: dict[str, Any], kept_as: type) -> None:
    recorded, made = bare_tenant(), bare_tenant()
    options = {"account": "main", "card_number": CARD, "my_ref": "order-7", "authorization_days": 7}
    result = _result(f"r-{name}", **fields)
    when = recording.record(recorded, result, **options)
    stored = recorded.ledger._transactions[f"r-{name}"]
    assert isinstance(stored, kept_as)
    kept = recorded.ledger[f"r-{name}"]
    assert kept.created_at == when
    # the same attempt, made a Transaction by hand and added: the ledger keeps the same
    tx = Transaction(
        reference=f"r-{name}",
        operation=result.operation,
        gateway="Stripe",
        account="main",
        amount=result.money.amount,
        currency="USD",
        result_code=result.code,
        reject_reason=result.reject_reason,
        created_at=when,
        my_ref="order-7",
        card_number=CARD,
        authorization_code=result.authorization_code,
        expires_at=when + timedelta(days=7) if result.operation == Operation.PRE_AUTH else None,
        clock=made.clock,
    )
    made.ledger.add(tx)
    assert type(made.ledger._transactions[f"r-{name}"]) is type(stored)
    if isinstance(stored, bytes):
        assert made.ledger._transactions[f"r-{name}"] == stored  # byte for byte
    assert made.ledger[f"r-{name}"] == kept
    assert kept.weight == tx.weight == tx.weight_of()
    assert recorded.ledger.bytes == made.ledger.bytes == tx.weight
    by_my_ref = recorded.ledger.find(None, "order-7")  # a charge or authorization, packed or not
    assert (by_my_ref is not None) is (tx.operation in ORIGINALS)


def test_a_follow_up_goes_through_record_and_changes_its_parent() -> None:
    who = bare_tenant()
    options = {"account": "main", "card_number": CARD, "my_ref": None, "authorization_days": 7}
    recording.record(who, _result("auth", "PreAuth"), **options)
    parent = who.ledger.find("auth")
    assert parent is not None
    recording.record(who, _result("cap", "Capture", amount=10), parent=parent, **options)
    assert who.ledger.find("auth").captured_by == "cap"  # type: ignore[union-attr]
    assert [entry.reference for entry in who.ledger["auth"].operations] == ["cap"]


def test_an_attempt_at_a_full_ledger_makes_room() -> None:
    who = bare_tenant(transactions=3)
    options = {"account": None, "card_number": None, "my_ref": None, "authorization_days": 7}
    for number in range(5):
        recording.record(who, _result(f"c{number}"), **options)
    assert list(who.ledger) == ["c2", "c3", "c4"]
    assert who.ledger.bytes == sum(tx.weight for tx in who.ledger.transactions())
