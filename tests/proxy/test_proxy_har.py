"""HAR 1.2 writing and reading (emulator/proxy/har.py): masking as the journal masks, a
file that is complete after every entry, foreign files refused."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from emulator.proxy.har import HarError, HarWriter, entry, masked_text, now, read_entries
from tests.proxy.test_proxy_forward import HAR_SCHEMA

KEY = "secret-key-4242"


def exchange(body: dict[str, object] | None = None, url: str = "http://up.example/PaymentGateway/charge") -> dict:
    sent = body or {"amount": 1.0, "card": {"cardNumber": "4111111111111111", "cvv": "123"}}
    return entry(
        started=now(),
        elapsed_ms=12.5,
        method="POST",
        url=url,
        request_headers=[("X-Api-Key", KEY), ("Content-Type", "application/json"), ("Cookie", "a=b")],
        request_body=json.dumps(sent).encode(),
        status=200,
        response_headers=[("content-type", "application/json"), ("location", "http://up.example/x")],
        response_body=b'{"userName":"' + KEY.encode() + b'","n":1}',
        secrets=[KEY],
        violations=["response 200 n: The field N must be a string."],
    )


def test_an_entry_is_har_1_2_and_masked() -> None:
    item = exchange()
    document = {"log": {"version": "1.2", "creator": {"name": "t", "version": "1"}, "entries": [item]}}
    jsonschema.validate(document, HAR_SCHEMA)
    text = json.dumps(item)
    assert "4111111111111111" not in text
    assert "411111******1111" in text
    assert "cvv" not in text
    assert KEY not in text
    assert {h["name"]: h["value"] for h in item["request"]["headers"]}["X-Api-Key"] == "[redacted]"
    assert {h["name"]: h["value"] for h in item["request"]["headers"]}["Cookie"] == "[redacted]"
    assert item["response"]["redirectURL"] == "http://up.example/x"
    assert item["_payemuViolations"] == ["response 200 n: The field N must be a string."]


def test_card_numbers_in_the_query_and_path_are_masked() -> None:
    item = exchange(url="http://up.example/Tools/luhn/4111111111111111?number=4111111111111111&x=1")
    assert "4111111111111111" not in json.dumps(item)
    assert item["request"]["queryString"][0] == {"name": "number", "value": "411111******1111"}


def test_a_body_masking_leaves_alone_is_kept_byte_for_byte() -> None:
    text = '{ "amount" : 1.50,\n "currency": "USD" }'
    assert masked_text(text) == text
    assert masked_text('{"cvv": "123"}') == "{}"


def test_the_file_is_complete_after_every_entry_and_is_appended_to(tmp_path: Path) -> None:
    path = tmp_path / "r.har"
    writer = HarWriter(path)
    assert read_entries(path) == []
    for number in range(1, 4):
        writer.append(exchange({"amount": number}))
        document = json.loads(path.read_text())  # while the writer still holds the file
        jsonschema.validate(document, HAR_SCHEMA)
        assert len(document["log"]["entries"]) == number
    writer.close()
    again = HarWriter(path)
    again.append(exchange({"amount": 4}))
    again.close()
    amounts = [json.loads(e["request"]["postData"]["text"])["amount"] for e in read_entries(path)]
    assert amounts == [1, 2, 3, 4]


def test_a_file_payemu_did_not_write_is_refused(tmp_path: Path) -> None:
    other = tmp_path / "other.har"
    other.write_text('{"log": {"version": "1.2", "entries": []}, "x": 1}')
    with pytest.raises(HarError, match="not a recording payemu wrote"):
        HarWriter(other)
    notes = tmp_path / "notes.txt"
    notes.write_text("hello")
    with pytest.raises(HarError, match="not JSON"):
        HarWriter(notes)
    assert notes.read_text() == "hello"


def test_reading_is_bounded_and_checked(tmp_path: Path) -> None:
    path = tmp_path / "big.har"
    path.write_text('{"log": {"version": "1.2", "entries": [{"request": {}, "response": {}}]}}')
    assert len(read_entries(path)) == 1
    with pytest.raises(HarError, match="more than the 10 a recording may have"):
        read_entries(path, max_bytes=10)
    path.write_text('{"log": {"version": "1.2", "entries": [{"request": {}}]}}')
    with pytest.raises(HarError, match="entry 1 has no request and response"):
        read_entries(path)
    with pytest.raises(HarError, match=r"missing\.har"):
        read_entries(tmp_path / "missing.har")
