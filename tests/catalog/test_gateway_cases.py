"""Each gateway's case file (tests/cases/gateways/<Name>.yaml, every row citing its source):
an account and a charge on every gateway; each trigger gives the documented answer on its
own gateway, payload fields included, and does not fire on any other. Every response is
checked against the schema by the ``make_app`` fixture."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from starlette.applications import Starlette
from starlette.testclient import TestClient

from emulator.app.build import create_app
from emulator.catalog.loader import load_catalog
from emulator.contract.openapi import OpenApi
from emulator.domain.config import DEFAULT_KEYS, KeySpec, Settings
from emulator.scenarios.rulebook import ScenarioBook
from tests.api.test_payments import check
from tests.conftest import LIVE, SANDBOX
from tests.support.casedata import patched
from tests.support.paths import TESTS_DIR
from tests.support.quickclient import QuickClient, Sender
from tests.support.yamldata import load_yaml

CASES = TESTS_DIR / "cases"
FILES = sorted((CASES / "gateways").glob("*.yaml"))
DATA = {path.stem: load_yaml(path.read_text(encoding="utf-8")) for path in FILES}
CATALOG = load_catalog()
BOOK = ScenarioBook()  # the built-in rules: the gateways' own test cards and payemu's
CERTIFICATE = "gatewayCert"
LIVE_KEY = DEFAULT_KEYS[1]
KEYS = (
    KeySpec("sandbox-api-key", "sandbox-merchant", 10001, True, (CERTIFICATE,)),
    KeySpec(LIVE_KEY.key, LIVE_KEY.user_name, LIVE_KEY.account_id, LIVE_KEY.is_sandbox, (CERTIFICATE,)),
)
BASE: dict[str, Any] = {
    "amount": 25.0,
    "currency": "USD",
    "myRef": "order-1001",
    "orderDesc": "Test order",
    "certificateName": CERTIFICATE,
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
MOCKS = {g.name for g in CATALOG if g.always}
# the triggers, each also run on every other gateway (not payemu's generic sandbox, not the mocks)
# (a row `onlyHere` is one of several inputs of one rule, another of which is run elsewhere)
OWN = [
    (n, r) for n, r in ROWS if "op" not in r and r["source"] != "payemu" and n not in MOCKS and not r.get("onlyHere")
]
COMPARED = ("operationResultCode", "rejectReasonCode", "gatewayResultCode")
# a case file's `sameSandboxAs`: gateways whose sandbox is the same one (Stripe's API variants, the PayU
# countries): their triggers fire on each other, either way round
SAME = {name: set(data.get("sameSandboxAs", ())) for name, data in DATA.items()}


def same_sandbox(one: str, other: str) -> bool:
    return other in SAME.get(one, ()) or one in SAME.get(other, ())


def _input(row: dict[str, Any]) -> str:
    """The row's input as a key: equal for equal inputs, whatever their order."""
    return json.dumps(row.get("set", {}), sort_keys=True, default=str)


# a row's `sharedWith` holds either way round: the other gateway's row for the same input is skipped here too
SHARED_BACK = {(name, _input(row)): set(row.get("sharedWith", ())) for name, row in ROWS}


@pytest.fixture
def client(make_app: Callable[..., Starlette]) -> Iterator[TestClient]:
    with TestClient(make_app(keys=KEYS), headers=SANDBOX) as made:
        yield made


def _account(gateway: str, row: dict[str, Any] | None = None) -> dict[str, Any]:
    credentials = (row or {}).get("credentials", DATA[gateway]["credentials"])
    return {"paymentGatewayAccount": {"paymentGatewayName": gateway, "credentials": credentials}}


def run(client: Sender, gateway: str, row: dict[str, Any]) -> Any:
    body = {**patched(BASE, row.get("set", {})), **_account(gateway, row)}
    op = row.get("op", "charge")
    if op == "tokenize":
        return client.post("/PaymentGateway/tokenize", json={"card": body["card"], **_account(gateway, row)})
    if op not in MODIFY:
        return client.post(f"/PaymentGateway/{op}", json=body)
    method, path, first = MODIFY[op]
    reference = "84000000001"  # a reference the gateway never issued
    if not row.get("unknown"):
        original = client.post(f"/PaymentGateway/{first}", json=body)
        assert original.status_code == 200, original.text
        reference = original.json()["gatewayReference"]
    refer = {"refTransId": reference, "amount": 25.0, "currency": "USD", "card": body["card"]}
    refer.update(certificateName=CERTIFICATE, **row.get("refer", {}))
    answer = client.request(method, f"/PaymentGateway/{path}", json={**refer, **_account(gateway, row)})
    if row.get("twice"):
        assert answer.status_code == 200, answer.text
        answer = client.request(method, f"/PaymentGateway/{path}", json={**refer, **_account(gateway, row)})
    return answer


def field(payload: Any, dotted: str) -> Any:
    """The value at ``dotted`` in ``payload``; ``(absent)`` when a key on the way is not there."""
    for part in dotted.split("."):
        if not isinstance(payload, dict) or part not in payload:
            return ABSENT
        payload = payload[part]
    return payload


def test_every_gateway_has_a_case_file_citing_its_sources() -> None:
    assert set(DATA) == set(CATALOG.names())
    for name, data in DATA.items():
        assert data["gateway"] == name
        assert data["rows"], name
        assert set(data.get("sameSandboxAs", ())) <= set(DATA) - {name}, name
        for row in data["rows"]:
            assert row["source"] == "payemu" or row["source"].startswith("https://"), (name, row["name"])


@pytest.mark.parametrize("name", sorted(DATA), ids=sorted(DATA))
def test_an_account_and_a_charge_on_every_gateway(client: TestClient, name: str) -> None:
    """A stored account for the gateway, and its first payment operation through it."""
    data = DATA[name]
    stored = client.put(
        f"/PaymentGatewayAccounts/cases{name}", json={"paymentGatewayName": name, "credentials": data["credentials"]}
    )
    assert stored.status_code == 200, stored.text
    assert stored.json()["paymentGatewayName"] == name
    charge = data.get("charge", {})
    operation = charge.get("op", "charge")
    body = {**patched(BASE, charge.get("set", {})), "paymentGatewayAccountName": f"cases{name}"}
    answer = client.post(f"/PaymentGateway/{operation}", json=body)
    expect = {"status": 200, "operationResultCode": "Success", **charge.get("expect", {})}
    check(answer, expect, {}, f"{name}: {operation} on a stored account")
    assert answer.json()["gatewayName"] == name
    assert answer.json()["operationType"] == ("PreAuth" if operation == "authorize" else "Charge")


def one_app(openapi: OpenApi) -> Iterator[QuickClient]:
    """One app for many rows (an app per row was a third of this file's time), sent to
    quickly; what it answered is checked against the schema at the end."""
    app = create_app(Settings(keys=KEYS), openapi=openapi)
    with TestClient(app, headers=SANDBOX) as made:
        quick = QuickClient(made)
        yield quick
        quick.close()
    violations = app.state.runtime.violations
    assert not violations, "responses broke the schema:\n" + "\n".join(violations)


@pytest.fixture(scope="module")
def shared(openapi: OpenApi) -> Iterator[QuickClient]:
    """The app of every row that needs no seed of its own."""
    yield from one_app(openapi)


@pytest.mark.parametrize(("name", "row"), ROWS, ids=[f"{name}-{row['name']}" for name, row in ROWS])
def test_trigger_answers_as_its_gateway_documents(
    make_app: Callable[..., Starlette], shared: QuickClient, name: str, row: dict[str, Any]
) -> None:
    if row.get("seed") is None:
        response = run(shared, name, row)
    else:
        with TestClient(make_app(seed=row["seed"], keys=KEYS), headers=SANDBOX) as client:
            response = run(client, name, row)
    where = f"{name}: {row['name']} ({row['source']})"
    check(response, row["expect"], {}, where)
    result = response.json()
    assert result["gatewayName"] == name, where
    payload = result["customGatewayResponse"]
    for dotted, expected in row.get("payload", {}).items():
        assert field(payload, dotted) == expected, f"{where}: customGatewayResponse.{dotted} in {payload}"
    for dotted in row.get("has", []):
        assert field(payload, dotted) not in (ABSENT, None), f"{where}: {dotted} missing in {payload}"
    for key, pattern in row.get("pattern", {}).items():
        assert re.fullmatch(pattern, result[key]), f"{where}: {key} {result[key]!r}"


CREDENTIALS = load_yaml((CASES / "credentials.yaml").read_text())["cases"]


@pytest.mark.parametrize("case", CREDENTIALS, ids=[c["name"] for c in CREDENTIALS])
def test_credentials_are_checked_in_shape(client: TestClient, case: dict[str, Any]) -> None:
    body = patched(BASE, {"card.cardNumber": case.get("card", "4111111111111111")})
    body["paymentGatewayAccount"] = case["account"]
    headers = SANDBOX if case["key"] == "sandbox" else LIVE
    response = client.post("/PaymentGateway/charge", json=body, headers=headers)
    expect = {**case["expect"], **({"description": case["description"]} if "description" in case else {})}
    check(response, expect, {}, f"{case['name']} ({case['source']})")
    assert case["account"]["credentials"][0]["value"] not in response.json()["operationResultDescription"]
