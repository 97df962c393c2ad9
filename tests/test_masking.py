from __future__ import annotations

import json

from emulator.payments.masking import mask, mask_pan, mask_text


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
