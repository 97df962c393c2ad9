"""Each gateway's documented sandbox triggers, one case file per gateway
(tests/cases/gateway_<name>.yaml, every row citing its source): the trigger gives the
documented answer on its own gateway, payload fields included, and does not fire on the
others. Every response is checked against the schema by the ``client`` fixture."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from starlette.applications import Starlette
from starlette.testclient import TestClient

from tests.casedata import patched
from tests.conftest import LIVE, SANDBOX
from tests.test_payments import check

CASES = Path(__file__).parent / "cases"
FILES = sorted(CASES.glob("gateway_*.yaml"))
DATA = {path.stem.removeprefix("gateway_"): yaml.safe_load(path.read_text()) for path in FILES}
OTHERS = {  # every other real gateway a trigger must not fire on
    "Elavon": [
        {"key": "MerchantId", "value": "m"},
        {"key": "Password", "value": "p"},
        {"key": "RebatePWD", "value": "r"},
    ],
    "Worldpay": [{"key": "SecurenetId", "value": "s"}, {"key": "SecureNetKey", "value": "k"}],
    "Cardstream": [{"key": "MerchantId", "value": "m"}, {"key": "SignatureKey", "value": "k"}],
    **{data["gateway"]: data["credentials"] for data in DATA.values()},
}
BASE: dict[str, Any] = {
    "amount": 25.0,
    "currency": "USD",
    "myRef": "order-1001",
    "orderDesc": "Test order",
    "payerDetails": {"clientIPAddress": "203.0.113.7", "countryCode": "US"},
    "card": {
        "cardHolderName": "Jane Smith",
        "cardNumber": "4111111111111111",
        "expirationMonth": 12,
        "expirationYear": 2030,
        "cvv": "123",
    },
}
MODIFY = {
    "capture": ("PUT", "capture", "authorize"),
    "void": ("DELETE", "void", "authorize"),
    "refund": ("PUT", "refund", "charge"),
}
ABSENT = "(absent)"
ROWS = [(name, row) for name, data in DATA.items() for row in data["rows"]]


def _account(gateway: str) -> dict[str, Any]:
    return {"paymentGatewayAccount": {"paymentGatewayName": gateway, "credentials": OTHERS[gateway]}}


def run(client: TestClient, gateway: str, row: dict[str, Any]) -> Any:
    body = {**patched(BASE, row.get("set", {})), **_account(gateway)}
    op = row.get("op", "charge")
    if op not in MODIFY:
        return client.post(f"/PaymentGateway/{op}", json=body)
    method, path, first = MODIFY[op]
    original = client.post(f"/PaymentGateway/{first}", json=body)
    assert original.status_code == 200, original.text
    refer = {"refTransId": original.json()["gatewayReference"], "amount": 25.0, "currency": "USD", "card": body["card"]}
    return client.request(method, f"/PaymentGateway/{path}", json={**refer, **_account(gateway)})


def field(payload: Any, dotted: str) -> Any:
    """The value at ``dotted`` in ``payload``; ``(absent)`` when a key on the way is not there."""
    for part in dotted.split("."):
        if not isinstance(payload, dict) or part not in payload:
            return ABSENT
        payload = payload[part]
    return payload


def test_every_gateway_with_triggers_has_a_case_file() -> None:
    assert set(DATA) == {"stripe", "adyen", "authorizenet"}
    for name, data in DATA.items():
        assert data["gateway"].lower() == name
        assert all(row.get("source", "").startswith("https://") for row in data["rows"]), name


@pytest.mark.parametrize(("name", "row"), ROWS, ids=[f"{name}-{row['name']}" for name, row in ROWS])
def test_trigger_answers_as_its_gateway_documents(
    make_app: Callable[..., Starlette], name: str, row: dict[str, Any]
) -> None:
    gateway = DATA[name]["gateway"]
    with TestClient(make_app(seed=row.get("seed")), headers=SANDBOX) as client:
        response = run(client, gateway, row)
    where = f"{gateway}: {row['name']} ({row['source']})"
    check(response, row["expect"], {}, where)
    payload = response.json()["customGatewayResponse"]
    for dotted, expected in row.get("payload", {}).items():
        assert field(payload, dotted) == expected, f"{where}: customGatewayResponse.{dotted} in {payload}"
    for dotted in row.get("has", []):
        assert field(payload, dotted) not in (ABSENT, None), f"{where}: {dotted} missing in {payload}"


@pytest.mark.parametrize(
    ("name", "row"), [r for r in ROWS if "op" not in r[1]], ids=[f"{n}-{r['name']}" for n, r in ROWS if "op" not in r]
)
def test_trigger_does_not_fire_on_other_gateways(client: TestClient, name: str, row: dict[str, Any]) -> None:
    own = DATA[name]["gateway"]
    expected = row.get("elsewhere", {"operationResultCode": "Success"})
    for gateway in OTHERS:
        if gateway == own or gateway in row.get("sharedWith", ()):
            continue
        answer = run(client, gateway, row).json()
        for key, value in expected.items():
            assert answer[key] == value, f"{row['name']} ({own}'s trigger) on {gateway}: {answer}"


CREDENTIALS = yaml.safe_load((CASES / "credentials.yaml").read_text())["cases"]


@pytest.mark.parametrize("case", CREDENTIALS, ids=[c["name"] for c in CREDENTIALS])
def test_credentials_are_checked_in_shape(client: TestClient, case: dict[str, Any]) -> None:
    body = patched(BASE, {"card.cardNumber": case.get("card", "4111111111111111")})
    body["paymentGatewayAccount"] = case["account"]
    headers = SANDBOX if case["key"] == "sandbox" else LIVE
    response = client.post("/PaymentGateway/charge", json=body, headers=headers)
    expect = {**case["expect"], **({"description": case["description"]} if "description" in case else {})}
    check(response, expect, {}, f"{case['name']} ({case['source']})")
    assert case["account"]["credentials"][0]["value"] not in response.json()["operationResultDescription"]
