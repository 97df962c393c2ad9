"""The journal: bounded, oldest first out, and masked on every way out."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from emulator.stores import journal as journal_module
from emulator.stores.journal import FIELDS, Entry, Filters, Journal

PAN = "4111111111111111"


def _entry(n: int, body: object = None) -> Entry:
    """A call as the pipeline records it."""
    return Entry(
        time=f"2030-01-01T00:00:{n:02d}.000Z",
        method="POST",
        path="/PaymentGateway/charge" if n % 2 else "/StringTokens",
        query=f"number={PAN}",
        operation_id=None,
        interface_version=None,
        status=200,
        latency_ms=0.0,
        request=body,
        response={"ok": True},
        attempts=[],
    )


def test_bounded_and_counts_what_it_dropped() -> None:
    journal = Journal(3)
    for n in range(5):
        journal.record(_entry(n))
    assert len(journal) == 3
    assert journal.dropped == 2
    assert [e["id"] for e in journal] == [3, 4, 5]


def test_every_way_out_is_masked() -> None:
    journal = Journal(10)
    body = {"card": {"cardNumber": PAN, "cvv": "123"}, "payload": "secret"}
    journal.record(_entry(1, body))
    for entries in (list(journal), journal.query(), journal.query(path="/Payment")):
        text = json.dumps(entries)
        assert PAN not in text
        assert '"cvv"' not in text
        assert "secret" not in text
        assert entries[0]["request"]["card"]["cardNumber"] == "411111******1111"
        assert entries[0]["query"] == "number=411111******1111"
        assert "_raw" not in entries[0]
    assert body["card"]["cvv"] == "123"  # the caller's object is not changed


def test_query_filters() -> None:
    journal = Journal(10)
    for n in range(6):
        journal.record(_entry(n))
    assert [e["id"] for e in journal.query(path="/StringTokens")] == [1, 3, 5]
    assert [e["id"] for e in journal.query(since="2030-01-01T00:00:04.000Z")] == [5, 6]
    assert [e["id"] for e in journal.query(until="2030-01-01T00:00:01.000Z")] == [1, 2]
    assert [e["id"] for e in journal.query(limit=2)] == [5, 6]


def _call(n: int, fault: str | None = None, answer: bytes = b'{"ok":true}') -> Entry:
    """A call as the pipeline records it: the request and answer as their JSON text."""
    request = json.dumps({"card": {"cardNumber": PAN, "cvv": "123"}}).encode()
    return Entry(
        time=datetime(2030, 1, 1, 0, 0, n, tzinfo=UTC),
        method="POST",
        path="/PaymentGateway/charge",
        query="",
        operation_id="GatewayCharge",
        interface_version="1.0.11.6",
        status=200,
        latency_ms=1.23456,
        request=request,
        response=answer,
        attempts=[],
        fault=fault,
    )


def test_a_recorded_call_reads_as_an_entry_and_keeps_its_place() -> None:
    journal = Journal(3)
    assert FIELDS[0] == "time" and FIELDS[-2:] == ("fault", "warnings") and len(FIELDS) == len(Entry._fields)
    assert journal.record(_entry(0)) == 1
    assert journal.record(_call(1), weight=100) == 2
    assert journal.record(_call(2, fault="reset"), weight=100) == 3
    assert journal.record(_call(3)) == 4  # no weight given: weighed as its entry
    entries = list(journal)
    assert [e["id"] for e in entries] == [2, 3, 4]
    first = entries[0]
    assert list(first) == [*FIELDS[:-2], "id"]  # fault and warnings left out when None
    assert first["time"] == "2030-01-01T00:00:01.000Z"
    assert first["latencyMs"] == 1.235
    assert first["request"] == {"card": {"cardNumber": "411111******1111"}}
    assert first["response"] == {"ok": True}
    assert entries[1]["fault"] == "reset"
    assert journal.bytes > 200  # the two weights given and the one weighed (the first was dropped)
    assert list(journal) == entries  # read twice: the same entries
    assert journal.query(limit=1)[0]["id"] == 4


def test_an_answer_recorded_as_text_keeps_an_integer_past_64_bits() -> None:
    """orjson would read 2**100 as a float: the journal shows the integer the answer held."""
    journal = Journal(3)
    answer = b'{"customGatewayResponse":{"trace":1267650600228229401496703205376},"amount":10.5}'
    journal.record(_call(1, answer=answer), weight=100)
    (entry,) = list(journal)
    assert entry["response"] == {"customGatewayResponse": {"trace": 2**100}, "amount": 10.5}


def test_entries_after_masks_only_the_new_ones() -> None:
    journal = Journal(10)
    for n in range(5):
        journal.record(_entry(n, {"cardNumber": PAN}))
    assert (journal.oldest_id(), journal.newest_id()) == (1, 5)
    fresh = journal.entries_after(3, limit=1)
    assert [e["id"] for e in fresh] == [4]
    assert PAN not in json.dumps(fresh)
    assert [e["id"] for e in journal.entries_after(3, limit=10)] == [4, 5]
    assert journal.entries_after(5, limit=10) == []


def test_entries_after_finds_its_place_among_ids_with_gaps() -> None:
    """A journal read back from a state file may have gaps in its ids (entries dropped
    before a save); the entries after any id are found all the same."""
    source = Journal(20)
    for n in range(12):
        source.record(_entry(n))
    kept = [entry for entry in source if entry["id"] in {2, 3, 7, 8, 11}]
    journal = Journal(20)
    journal.load(kept)
    journal.record(_entry(99))  # numbered after the last loaded one: 12
    held = [2, 3, 7, 8, 11, 12]
    for after in range(0, 14):
        expected = [ident for ident in held if ident > after]
        assert [e["id"] for e in journal.entries_after(after, limit=100)] == expected, after
        assert [e["id"] for e in journal.entries_after(after, limit=2)] == expected[:2], after
        for until in (0, 3, 7, 10, 12):  # and none past an id (a save stops at the newest it saw)
            upto = [ident for ident in expected if ident <= until]
            assert [e["id"] for e in journal.entries_after(after, limit=100, until=until)] == upto, (after, until)


def test_entries_after_an_old_id_renders_only_what_it_returns(monkeypatch: pytest.MonkeyPatch) -> None:
    """A save takes the entries after the last one saved a few at a time: only those are
    rendered and masked, not every newer entry at each call."""
    journal = Journal(5000)
    for n in range(4000):
        journal.record(_call(n % 60), weight=100)
    rendered: list[object] = []
    real = journal_module._render_and_mask
    monkeypatch.setattr(journal_module, "_render_and_mask", lambda entry: rendered.append(entry) or real(entry))
    assert [e["id"] for e in journal.entries_after(10, limit=8)] == list(range(11, 19))
    assert len(rendered) == 8


def test_loaded_entries_keep_their_ids_and_the_bounds() -> None:
    source = Journal(10)
    for n in range(5):
        source.record(_entry(n))
    journal = Journal(3)
    journal.load(list(source))
    assert [e["id"] for e in journal] == [3, 4, 5]
    assert journal.record(_entry(9)) == 6


def test_entries_of_an_older_state_file_name_no_rule() -> None:
    """A state file written before attempts named their rule: read back, each attempt
    says null (what the control schema requires of every attempt)."""
    journal = Journal(5)
    old = {**_entry_dict(1), "attempts": [{"attemptNumber": 1, "gatewayName": "NULLSuccess"}]}
    journal.load([old])
    [entry] = list(journal)
    assert entry["attempts"] == [{"attemptNumber": 1, "gatewayName": "NULLSuccess", "rule": None, "ruleSource": None}]


def _entry_dict(number: int) -> dict[str, object]:
    return {**dict(zip(FIELDS[:-2], _entry(number)[:-2], strict=True)), "id": number}


def test_filters_keep_what_every_one_given_matches() -> None:
    journal = Journal(10)
    charge = _entry(1, {"myRef": "order-1"})._replace(
        attempts=[{"gatewayName": "NULLSuccess"}], response={"operationResultCode": "Rejected"}, status=409
    )
    journal.record(charge)
    journal.record(_entry(2)._replace(method="GET", response=[{"fieldName": "x"}], status=400))
    ids = {
        Filters(method="post"): [1],
        Filters(status=400): [2],
        Filters(result_code="Rejected"): [1],
        Filters(gateway="nullsuccess"): [1],
        Filters(my_ref="order-1", status=409): [1],
        Filters(my_ref="order-1", status=400): [],
        Filters(): [1, 2],
    }
    for filters, expected in ids.items():
        assert [e["id"] for e in journal.query(filters=filters)] == expected, filters
