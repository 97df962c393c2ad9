"""Payment rows from ledger transactions and journal entries (emulator/ui/payments.py)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

from emulator.domain.vocabulary import Operation, ResultCode
from emulator.stores.ledger import Transaction
from emulator.ui import payments

T0 = datetime(2026, 11, 24, 9, 0, 0, tzinfo=UTC)


def tx(
    reference: str,
    operation: Operation = Operation.CHARGE,
    code: ResultCode = ResultCode.SUCCESS,
    *,
    seconds: float = 0,
    attempt: int = 1,
    parent: str | None = None,
    amount: str = "120",
    gateway: str = "NULLSuccess",
    account: str | None = "backup",
    my_ref: str | None = "order-1",
) -> Transaction:
    return Transaction(
        reference=reference,
        operation=operation,
        gateway=gateway,
        account=account,
        amount=Decimal(amount),
        currency="USD",
        result_code=code,
        reject_reason="CardDeclined" if code == ResultCode.REJECTED else None,
        created_at=T0 + timedelta(seconds=seconds),
        my_ref=my_ref,
        card_number="4111111111111111",
        parent=parent,
        attempt_number=attempt,
    )


def result(reference: str, code: str, native: str | None = None, operation: str = "Charge") -> dict[str, Any]:
    return {
        "gatewayReference": reference,
        "operationType": operation,
        "operationResultCode": code,
        "gatewayResultCode": native,
        "gatewayResultDescription": f"native text {native}" if native else None,
        "gatewayName": "NULLSuccess",
        "amount": 120.0,
        "currency": "USD",
    }


def entry(*results: dict[str, Any], time: str = "2026-11-24T09:00:00Z") -> dict[str, Any]:
    return {
        "time": time,
        "request": {"amount": 120},
        "response": results[-1] if results else {},
        "attempts": [{"attemptNumber": n, "timestamp": time, "result": r} for n, r in enumerate(results, start=1)],
    }


def failover() -> tuple[list[Transaction], list[dict[str, Any]]]:
    declined = tx("F-1", code=ResultCode.REJECTED, gateway="NULLFailure", account="failing")
    approved = tx("S-2", attempt=2, seconds=0.2)
    journal = [entry(result("F-1", "Rejected", "05"), result("S-2", "Success", "00"))]
    return [declined, approved], journal


def test_a_failover_is_one_payment_with_both_attempts_and_their_native_codes() -> None:
    transactions, journal = failover()
    [payment] = payments.group(transactions, payments.index_journal(journal))
    assert payment.reference == "S-2"  # what the merchant was given
    assert [(a.number, a.account, a.code, a.native.code) for a in payment.attempts] == [
        (1, "failing", "Rejected", "05"),
        (2, "backup", "Success", "00"),
    ]
    assert payment.failover
    assert payment.attempts[1].fallback
    assert payment.last.native.description == "native text 00"
    assert payments.code(payment, T0) == "Success"
    assert payment.my_ref == "order-1"
    assert payment.card == "411111******1111"


def test_without_the_journal_a_fallback_joins_the_attempt_before_it() -> None:
    transactions, _ = failover()
    [payment] = payments.group(transactions, payments.index_journal([]))
    assert [a.reference for a in payment.attempts] == ["F-1", "S-2"]
    assert payment.last.native == payments.Native()


def test_without_the_journal_a_different_request_is_not_joined() -> None:
    first = tx("A-1", code=ResultCode.REJECTED)
    other = tx("B-2", attempt=2, amount="7", seconds=1)
    rows = payments.group([first, other], payments.index_journal([]))
    assert [[a.reference for a in p.attempts] for p in rows] == [["A-1"], ["B-2"]]


def test_follow_ups_at_any_depth_and_status_checks_fold_under_their_payment() -> None:
    auth = tx("AUTH", Operation.PRE_AUTH)
    capture = tx("CAP", Operation.CAPTURE, seconds=5, parent="AUTH")
    refund = tx("REF", Operation.REFUND, seconds=9, parent="CAP", amount="20")
    auth.captured_by = "CAP"  # as the ledger records a successful capture
    other = tx("OTHER", seconds=3, my_ref="order-2")
    journal = [
        entry(result("AUTH", "Success", "Authorised", "PreAuth")),
        entry(result("AUTH", "Success", "Authorised", "Status"), time="2026-11-24T09:00:07Z"),
    ]
    rows = payments.group([auth, other, capture, refund], payments.index_journal(journal))
    assert [p.reference for p in rows] == ["AUTH", "OTHER"]
    story = rows[0]
    assert [(f.operation, f.reference, f.code) for f in story.follow_ups] == [
        ("Capture", "CAP", "Success"),
        ("Status", "AUTH", "Success"),
        ("Refund", "REF", "Success"),
    ]
    assert story.follow_ups[2].amount_text == "20.00 USD"
    assert story.follow_ups[1].label == "Status check"
    assert payments.state(story, T0 + timedelta(seconds=10)) == "Captured"
    assert rows[1].follow_ups == []


def test_a_follow_up_whose_payment_is_gone_is_a_row_of_its_own() -> None:
    [row] = payments.group([tx("REF", Operation.REFUND, parent="EVICTED")], payments.index_journal([]))
    assert row.reference == "REF"
    assert row.label == "Refund"


def test_rows_newest_first_and_filters_match_any_operation_of_the_payment() -> None:
    transactions, journal = failover()
    later = tx("LATER", seconds=60, gateway="Adyen", account="adyen")
    everything = [*transactions, later]
    assert [p.reference for p in payments.rows(everything, journal, T0)] == ["LATER", "S-2"]
    rejected = payments.rows(everything, journal, T0, {"result": "Rejected"})
    assert [p.reference for p in rejected] == ["S-2"]  # its first attempt was declined
    assert [p.reference for p in payments.rows(everything, journal, T0, {"gateway": "NULLFailure"})] == ["S-2"]
    assert [p.reference for p in payments.rows(everything, journal, T0, {"state": "Declined"})] == ["S-2"]
    both = {"gateway": "Adyen", "result": "Rejected"}
    assert payments.rows(everything, journal, T0, both) == []


def test_journal_entries_without_references_are_ignored() -> None:
    found = payments.index_journal([{"attempts": [{"result": None}, "junk", {"result": {"x": 1}}]}, {}])
    assert found.groups == {} and found.native == {} and found.statuses == {}
