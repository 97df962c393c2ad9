from __future__ import annotations

import contextlib
import json
import re

import orjson
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from emulator.domain import masking
from emulator.domain.masking import mask, mask_pan, mask_text, needs_masking


def test_mask_pan_keeps_first_six_and_last_four() -> None:
    assert mask_pan("4111111111111111") == "411111******1111"
    assert mask_pan("378282246310005") == "378282*****0005"
    assert mask_pan("@abcdefabcdefabcdefabcdefabcdefab") == "@abcdefabcdefabcdefabcdefabcdefab"


def test_mask_text_finds_numbers_in_free_text() -> None:
    assert mask_text("card 4000000000009995 declined") == "card 400000******9995 declined"
    assert mask_text("order 12345") == "order 12345"


def test_mask_removes_cvv_and_redacts_payloads_and_credentials() -> None:
    body = {
        "card": {"cardNumber": "4111111111111111", "cvv": "123", "CVV": "999", "cardHolderName": "Jane"},
        "payload": '{"cardNumber": "4111111111111111"}',
        "paymentGatewayAccount": {"credentials": [{"key": "SecretKey", "value": "sk_test_123"}]},
        "notes": ["pay 5555555555554444"],
    }
    masked = mask(body)
    text = json.dumps(masked)
    assert "4111111111111111" not in text
    assert "5555555555554444" not in text
    assert "123" not in json.dumps(masked["card"])
    assert "999" not in text
    assert "sk_test_123" not in text
    assert masked["card"]["cardNumber"] == "411111******1111"
    assert masked["paymentGatewayAccount"]["credentials"][0]["key"] == "SecretKey"
    assert body["card"]["cvv"] == "123"  # the original is untouched


def test_grouped_numbers_and_numbers_sent_as_numbers_are_masked_too() -> None:
    assert mask_text("4111 1111 1111 1111") == "4111 11** **** 1111"
    assert mask_text("pan 3782-822463-10005.") == "pan 3782-82****-*0005."
    assert mask_text("order 12345 2030-01-01 1234 5678") == "order 12345 2030-01-01 1234 5678"
    masked = mask({"cardNumber": 4111111111111111, "amounts": [5555555555554444, 10.5], "ok": True, "n": 42})
    assert masked == {"cardNumber": "411111******1111", "amounts": ["555555******4444", 10.5], "ok": True, "n": 42}


def test_a_card_number_sent_as_a_property_name_is_masked() -> None:
    masked = mask({"card": {"4111111111111111": "x"}, "4242424242424242": 1})
    assert masked == {"card": {"411111******1111": "x"}, "424242******4242": 1}


# -- needs_masking: the journal skips the walk where a JSON text cannot need it --------

_KEYS = st.sampled_from(
    ["cardNumber", "Number", "pan", "CVV", "cvv2", "cvc", "securityCode", "payload", "clearPayload", "password",
     "secret", "credentials", "value", "gatewayReference", "amount", "attemptNumber", "note", "4111111111111111"]
)  # fmt: skip
_TEXTS = st.one_of(
    st.text(max_size=30),
    st.text(alphabet="0123456789 -eE.", max_size=30),
    st.sampled_from(["4111111111111111", "4111 1111 1111 1111", "3782-822463-10005", "order 12345", "é 4111"]),
)
_NUMBERS = st.one_of(
    st.integers(), st.floats(allow_nan=False, allow_infinity=False), st.sampled_from([4111111111111111, 1.9e16])
)
_CREDENTIALS = st.builds(lambda v: {"credentials": [{"key": "k", "value": v}]}, st.text(max_size=3))
_VALUES = st.recursive(
    st.one_of(st.none(), st.booleans(), _NUMBERS, _TEXTS, _CREDENTIALS),
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.one_of(_KEYS, st.text(max_size=15)), inner, max_size=4)
    ),
    max_leaves=12,
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_VALUES)
def test_a_text_needs_masking_passes_over_nothing_mask_would_change(value: object) -> None:
    texts = [json.dumps(value).encode(), json.dumps(value, ensure_ascii=False).encode()]
    with contextlib.suppress(TypeError):  # orjson refuses integers past 64 bits
        texts.append(orjson.dumps(value))
    for text in texts:
        if not needs_masking(text):
            assert mask(value) == value, text


def test_needs_masking_finds_every_key_mask_acts_on_and_passes_a_plain_answer() -> None:
    for key in ("cardNumber", "NUMBER", "pan", "cvv", "CVV2", "cvc", "securityCode", "payload", "clearPayload",
                "password", "secret", "Credentials"):  # fmt: skip
        assert needs_masking(json.dumps({key: 1}).encode()), key
    answer = {"operationResultCode": "Success", "gatewayReference": "NULL-60FTGA813HBHB7MPPZO2", "amount": 10.5,
              "attemptNumber": 1, "timestamp": "2026-11-24T10:24:43.393Z"}  # fmt: skip
    assert not needs_masking(json.dumps(answer).encode())
    for spelled in (
        '{"n": "411111111111\\u0031111"}',
        '{"n": "٤١١١١١١١١١١١١١١١"}',
        '{"n": 1.9e16}',
        '{"n": "4111 1111"}',
    ):
        assert needs_masking(spelled.encode()), spelled


def test_the_key_pattern_is_exactly_the_keys_mask_acts_on() -> None:
    """_MASKED_KEY spells the key sets out as a trie: it must stay equal to them."""
    keys = masking._CARD | masking._DROP | masking._REDACT | {"credentials"}
    for key in keys:
        assert re.fullmatch(masking._MASKED_KEY, f'"{key}"'.encode()), key
    for near in ("cardnumbers", "numbe", "pans", "cv", "cvv3", "secrets", "payloads", "credential", "value"):
        assert not re.fullmatch(masking._MASKED_KEY, f'"{near}"'.encode()), near
