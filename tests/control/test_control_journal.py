"""Control: the request journal — filters, bounded size, masking."""

from __future__ import annotations

import json
import re
from collections.abc import Callable

import pytest
from starlette.applications import Starlette
from starlette.testclient import TestClient

from emulator.cli.main import build_parser, settings_from
from emulator.domain.config import ConfigError
from tests.conftest import LIVE, SANDBOX

CARD = "4111111111111111"
FULL_PAN = re.compile(r"(?<!\d)\d{13,19}(?!\d)")


def _journal(client: TestClient, headers: dict[str, str] = SANDBOX, **params: object) -> dict[str, object]:
    response = client.get("/_emulator/requests", params=params, headers=headers)
    assert response.status_code == 200, response.text
    return response.json()


def test_an_entry_holds_the_whole_exchange(client: TestClient) -> None:
    client.get("/Utils/apiKey")
    client.get("/Utils/apiKey", headers=LIVE)
    journal = _journal(client)
    assert journal["dropped"] == 0
    assert journal["size"] == 1000
    [entry] = journal["requests"]
    assert entry["method"] == "GET"
    assert entry["path"] == "/Utils/apiKey"
    assert entry["status"] == 200
    assert entry["operationId"] == "ValidateApiKey"
    assert entry["response"]["userName"] == "sandbox-merchant"
    assert entry["request"] is None
    assert entry["attempts"] == []
    assert entry["id"] == 1
    assert entry["latencyMs"] >= 0
    assert entry["latencyMs"] == round(entry["latencyMs"], 3)  # milliseconds to the microsecond
    assert entry["time"].endswith("Z")


def test_errors_are_journaled_too(client: TestClient) -> None:
    client.post("/StringTokens", json={"nonsense": 1})
    [entry] = _journal(client)["requests"]
    assert entry["status"] == 400
    assert "payload" in {e["fieldName"] for e in entry["response"]}
    assert entry["warnings"] == ["unknown-property=nonsense"]


def test_filter_by_path_prefix_and_limit(client: TestClient) -> None:
    client.get("/Utils/apiKey")
    client.get("/PaymentGateway")
    client.get("/Utils/apiKey")
    assert [e["id"] for e in _journal(client, path="/Utils")["requests"]] == [1, 3]
    assert [e["path"] for e in _journal(client, path="/PaymentGateway")["requests"]] == ["/PaymentGateway"]
    assert [e["id"] for e in _journal(client, limit=2)["requests"]] == [2, 3]
    assert _journal(client, path="/nothing")["requests"] == []


def test_filter_by_time(make_app: Callable[..., Starlette]) -> None:
    with TestClient(make_app(seed=5), headers=SANDBOX) as client:
        client.get("/Utils/apiKey")
        middle = client.post("/_emulator/clock", json={"advance": "1h"}).json()["now"]
        client.get("/PaymentGateway")
        client.post("/_emulator/clock", json={"advance": "1h"})
        client.get("/Utils/apiKey")
        assert [e["id"] for e in _journal(client, since=middle)["requests"]] == [2, 3]
        # the frozen clock stood still between the advance and the second request
        assert [e["id"] for e in _journal(client, until=middle)["requests"]] == [1, 2]
        # other spellings of the same moment: no milliseconds, an offset, no zone (UTC)
        plain = middle.replace(".000Z", "")
        assert [e["id"] for e in _journal(client, since=plain + "Z")["requests"]] == [2, 3]
        assert [e["id"] for e in _journal(client, since=plain + "+00:00")["requests"]] == [2, 3]
        assert [e["id"] for e in _journal(client, since=plain, until=plain)["requests"]] == [2]


BAD_FILTERS = [
    ("since", "yesterday"),
    ("until", "2030-13-01"),
    ("limit", "0"),
    ("limit", "many"),
    ("status", "ok"),
    ("status", "42"),
    ("resultCode", "Declined"),
    ("method", "GET POST"),
]


@pytest.mark.parametrize(("name", "value"), BAD_FILTERS)
@pytest.mark.parametrize("path", ["/_emulator/requests", "/_emulator/requests/count"])
def test_bad_filters(client: TestClient, path: str, name: str, value: str) -> None:
    response = client.get(path, params={name: value})
    assert response.status_code == 400
    assert response.json()[0]["fieldName"] == name
    assert client.get(path).status_code == 200  # and the server keeps serving


STRIPE_KEY = [{"key": "SecretKey", "value": "sk_test_x"}]


def _charge(
    client: TestClient, amount: float, gateway: str, my_ref: str | None = None, card: str = "4242424242424242"
) -> int:
    credentials = STRIPE_KEY if gateway == "Stripe" else []
    body: dict[str, object] = {
        "amount": amount,
        "currency": "USD",
        "card": {
            "cardHolderName": "Ada",
            "cardNumber": card,
            "expirationMonth": 12,
            "expirationYear": 2030,
        },
        "paymentGatewayAccount": {"paymentGatewayName": gateway, "credentials": credentials},
    }
    if my_ref:
        body["myRef"] = my_ref
    return client.post("/PaymentGateway/charge", json=body).status_code


def _count(client: TestClient, **params: object) -> int:
    response = client.get("/_emulator/requests/count", params=params)
    assert response.status_code == 200, response.text
    answer = response.json()
    assert list(answer) == ["count"]
    return int(answer["count"])


def test_filters_by_method_status_operation_result_gateway_and_my_ref(client: TestClient) -> None:
    rule = {"name": "no-funds", "when": {"amount": 42.0}, "then": {"operationResultCode": "Rejected"}}
    assert client.post("/_emulator/scenarios", json=rule).status_code == 201
    assert _charge(client, 42.0, "NULLSuccess", my_ref="order-1") == 409
    assert _charge(client, 10.0, "NULLSuccess", my_ref="order-2") == 200
    assert _charge(client, 10.0, "NULLFailure") == 409
    client.get("/Utils/apiKey")
    ids = {
        "status": ([1, 3], {"status": 409}),
        "method": ([4], {"method": "get"}),
        "operationId": ([1, 2, 3], {"operationId": "GatewayCharge"}),
        "resultCode": ([1, 3], {"resultCode": "Rejected"}),
        "gateway": ([3], {"gateway": "nullfailure"}),
        "myRef": ([2], {"myRef": "order-2"}),
        "combined": ([1], {"status": 409, "gateway": "NULLSuccess"}),
        "none": ([], {"status": 201}),
    }
    for name, (expected, params) in ids.items():
        assert [e["id"] for e in _journal(client, **params)["requests"]] == expected, name
        assert _count(client, **params) == len(expected), name
    assert _count(client) == 4
    assert _count(client, resultCode="Rejected", limit=1) == 1


def test_every_attempt_names_the_rule_that_decided_it(client: TestClient) -> None:
    rule = {"name": "no-funds", "when": {"amount": 42.0}, "then": {"operationResultCode": "Rejected"}}
    assert client.post("/_emulator/scenarios", json=rule).status_code == 201
    _charge(client, 42.0, "NULLSuccess")
    _charge(client, 10.0, "NULLSuccess")
    _charge(client, 10.0, "Stripe")  # 4242 4242 4242 4242: Stripe's own success card
    _charge(client, 9011.0, "Stripe", card="4111111111111111")  # a built-in test amount on a generic test card
    decided, default, stripe_card, amount = (e["attempts"][0] for e in _journal(client)["requests"])
    assert (decided["rule"], decided["ruleSource"]) == ("no-funds", "runtime")
    assert (default["rule"], default["ruleSource"]) == (None, None)
    listed = {
        r["name"]: r["source"] for r in client.get("/_emulator/scenarios", params={"pageSize": 1000}).json()["rules"]
    }
    assert (stripe_card["rule"], amount["rule"]) == ("stripe-success-card", "insufficient-funds-amount")
    for attempt in (stripe_card, amount):  # their source as the scenario listing reports it
        assert attempt["ruleSource"] == listed[attempt["rule"]]


def test_bounded_oldest_dropped_first(make_app: Callable[..., Starlette]) -> None:
    with TestClient(make_app(journal_size=3), headers=SANDBOX) as client:
        for _ in range(5):
            client.get("/Utils/apiKey")
        journal = _journal(client)
    assert journal["size"] == 3
    assert journal["dropped"] == 2
    assert [e["id"] for e in journal["requests"]] == [3, 4, 5]


def test_journal_size_on_the_command_line() -> None:
    parser = build_parser()
    assert settings_from(parser.parse_args(["serve", "--journal-size", "50"])).journal_size == 50
    assert settings_from(parser.parse_args(["serve"])).journal_size == 1000
    with pytest.raises(ConfigError, match="at least 1"):
        settings_from(parser.parse_args(["serve", "--journal-size", "0"]))


def test_card_data_is_masked_in_bodies_and_queries(client: TestClient) -> None:
    payload = json.dumps({"cardNumber": CARD, "cvv": "737", "expirationMonth": 12, "expirationYear": 2030})
    client.post("/StringTokens", json={"payload": payload})
    client.get("/Tools/luhn", params={"number": CARD})
    client.post(
        "/Tools/validate", json={"cardNumber": CARD, "cvv": "737", "expirationMonth": 12, "expirationYear": 2030}
    )
    journal = _journal(client)
    text = json.dumps(journal)
    assert CARD not in text
    assert not FULL_PAN.search(text)
    # the CVV in what the client sent (the whole text also holds times and random tokens,
    # where the digits 737 may turn up by chance)
    sent = json.dumps([(entry["request"], entry["query"]) for entry in journal["requests"]])
    assert "737" not in sent
    luhn = _journal(client, path="/Tools/luhn")["requests"][0]
    assert luhn["query"] == "number=411111******1111"
