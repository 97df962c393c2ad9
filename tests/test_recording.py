"""emulator.payments.recording: what record_attempt() keeps is what record() would keep,
a plain attempt packed straight from its result and any other through a Transaction."""

from __future__ import annotations

from typing import Any

import pytest

from emulator.payments import recording
from emulator.payments.model import Money, OperationResult
from emulator.vocabulary import ORIGINALS, Operation, RejectReason, ResultCode
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
def test_an_attempt_is_kept_as_record_keeps_it(name: str, fields: dict[str, Any], kept_as: type) -> None:
    fast, slow = bare_tenant(), bare_tenant()
    options = {"account": "main", "card_number": CARD, "my_ref": "order-7", "authorization_days": 7}
    when = recording.record_attempt(fast, _result(f"r-{name}", **fields), **options)
    recorded = recording.record(slow, _result(f"r-{name}", **fields), **options)
    stored = fast.ledger._transactions[f"r-{name}"]
    assert isinstance(stored, kept_as)
    assert type(slow.ledger._transactions[f"r-{name}"]) is type(stored)
    kept = fast.ledger[f"r-{name}"]
    assert kept.created_at == when
    recorded.created_at = when  # recorded a moment later by the other tenant
    assert kept == recorded
    assert kept.weight == recorded.weight == recorded.weight_of()
    assert fast.ledger.bytes == slow.ledger.bytes == recorded.weight
    by_my_ref = fast.ledger.find(None, "order-7")  # a charge or authorization, packed or not
    assert (by_my_ref is not None) is (recorded.operation in ORIGINALS)


def test_a_follow_up_goes_through_record_and_changes_its_parent() -> None:
    who = bare_tenant()
    options = {"account": "main", "card_number": CARD, "my_ref": None, "authorization_days": 7}
    recording.record_attempt(who, _result("auth", "PreAuth"), **options)
    parent = who.ledger.find("auth")
    assert parent is not None
    recording.record_attempt(who, _result("cap", "Capture", amount=10), parent=parent, **options)
    assert who.ledger.find("auth").captured_by == "cap"  # type: ignore[union-attr]
    assert [entry.reference for entry in who.ledger["auth"].operations] == ["cap"]


def test_an_attempt_at_a_full_ledger_makes_room_as_record_does() -> None:
    who = bare_tenant(transactions=3)
    options = {"account": None, "card_number": None, "my_ref": None, "authorization_days": 7}
    for number in range(5):
        recording.record_attempt(who, _result(f"c{number}"), **options)
    assert list(who.ledger) == ["c2", "c3", "c4"]
    assert who.ledger.bytes == sum(tx.weight for tx in who.ledger.transactions())
