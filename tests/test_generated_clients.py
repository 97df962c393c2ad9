"""Real clients, generated with openapi-python-client, drive a live payemu.

Two clients are generated once per session: one from the schema payemu serves, one from
the older published export kept in tests/data (1.0.9.36). Each drives every operation of
its document against a live server serving that document — the older one also against a
server whose tenant chose the older document through the control API. Every answer must
have a declared status (the clients raise on any other), parse, and carry exactly the
fields the document declares (a parsed model turned back into JSON has the same keys).
"""

from __future__ import annotations

import importlib
import inspect
import json
import re
import subprocess
import sys
import typing
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import httpx
import pytest

from emulator.config import Settings
from emulator.http.app import create_app
from emulator.http.openapi import OpenApi, default_schema_path
from tests.live_server import LiveServer

OLDER = Path(__file__).resolve().parent / "data" / "openapi-1.0.9.36.json"
KEY = "sandbox-api-key"
CARD = {
    "cardHolderName": "Client Test",
    "cardNumber": "4111111111111111",
    "expirationMonth": 12,
    "expirationYear": 2031,
    "cvv": "123",
}
ACCOUNT = {"paymentGatewayName": "Stripe", "credentials": [{"key": "SecretKey", "value": "sk_client"}]}


def _generate(document: Path, into: Path, name: str) -> ModuleType:
    script = Path(sys.executable).parent / "openapi-python-client"
    config = into / "client-config.yaml"
    config.write_text("post_hooks: []\n")  # no formatter run: nothing to fetch, quicker
    subprocess.run(
        [
            str(script),
            "generate",
            "--path",
            str(document),
            "--output-path",
            str(into / name),
            "--meta",
            "none",
            "--config",
            str(config),
        ],
        check=True,
        capture_output=True,
        text=True,
        timeout=120,
    )
    return importlib.import_module(name)


@pytest.fixture(scope="session")
def generated(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, ModuleType]]:
    into = tmp_path_factory.mktemp("clients")
    sys.path.insert(0, str(into))
    try:
        yield {
            "served": _generate(default_schema_path(), into, "payemu_served_client"),
            "older": _generate(OLDER, into, "payemu_older_client"),
        }
    finally:
        sys.path.remove(str(into))


def _operations(document: dict[str, Any]) -> Iterator[tuple[str, str, dict[str, Any]]]:
    """``(path, method, operation)`` of every operation; extensions of a path item (the
    served schema's ``x-payemu-source``) are not operations."""
    for path, item in document["paths"].items():
        for method, op in item.items():
            if not method.startswith("x-"):
                yield path, method, op


def _snake(operation_id: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", operation_id).lower()


def _keys(value: Any) -> Any:
    """The shape of a JSON value: the keys of every object, recursively."""
    if isinstance(value, dict):
        return {k: _keys(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_keys(v) for v in value]
    return None


class Driver:
    """Calls operations through a generated client and checks every answer."""

    def __init__(self, package: ModuleType, url: str, document: dict[str, Any]) -> None:
        self.package = package
        self.client = package.client.Client(base_url=url, headers={"X-Api-Key": KEY}, raise_on_unexpected_status=True)
        self.document = document
        self.modules = {_snake(op["operationId"]): (path, method) for path, method, op in _operations(document)}
        self.called: set[str] = set()

    def call(self, operation_id: str, body: Any = None, **kwargs: Any) -> tuple[int, Any, Any]:
        name = _snake(operation_id)
        path, method = self.modules[name]
        tag = self.document["paths"][path][method]["tags"][0]
        module = importlib.import_module(f"{self.package.__name__}.api.{_snake(tag)}.{name}")
        if body is not None:
            hint = typing.get_type_hints(module.sync_detailed)["body"]
            model = next((h for h in typing.get_args(hint) or (hint,) if hasattr(h, "from_dict")), None)
            kwargs["body"] = model.from_dict(body) if model else body
        response = module.sync_detailed(client=self.client, **kwargs)
        self.called.add(operation_id)
        raw = json.loads(response.content) if response.content else None
        parsed = response.parsed
        declared = self.document["paths"][path][method]["responses"][str(int(response.status_code))]
        if "content" in declared:
            assert parsed is not None, (operation_id, response.status_code, raw)
            as_json = [p.to_dict() for p in parsed] if isinstance(parsed, list) else parsed
            as_json = as_json.to_dict() if hasattr(as_json, "to_dict") else as_json
            assert _keys(as_json) == _keys(raw), (operation_id, "fields beyond the document", raw)
        return int(response.status_code), raw, parsed


def _drive(driver: Driver, url: str, tools: bool) -> dict[str, Any]:
    """Every operation of the document; returns what later asserts look at."""
    seen: dict[str, Any] = {}
    assert driver.call("ValidateApiKey")[0] == 200
    gateways = driver.call("GatewayList")
    assert "Stripe" in {g["name"] for g in gateways[1]}
    assert driver.call("PaymentGatewayAccountSet", ACCOUNT, name="clientAcct")[0] == 200
    assert driver.call("PaymentGatewayAccountRetrieve", name="clientAcct")[1]["paymentGatewayName"] == "Stripe"
    assert "clientAcct" in {a["name"] for a in driver.call("PaymentGatewayAccountsList")[1]}

    payment = {"currency": "USD", "card": CARD, "paymentGatewayAccountName": "clientAcct"}
    for amount, status in ((10.0, 200), (9001.0, 202), (9010.0, 409), (9006.0, 500), (9005.0, 503)):
        answer = driver.call("GatewayCharge", {**payment, "amount": amount})
        assert answer[0] == status, answer
        seen[f"charge {status}"] = answer[1]
    refused = driver.call("GatewayCharge", {**payment, "amount": 10.0, "currency": ""})
    assert refused[0] == 400
    seen["charge 400"] = refused[1]

    authorized = driver.call("GatewayAuthorize", {**payment, "amount": 20.0})[1]
    captured = driver.call("GatewayCapture", {**payment, "amount": 20.0, "refTransId": authorized["gatewayReference"]})
    assert captured[1]["operationType"] == "Capture"
    refunded = driver.call("GatewayRefund", {**payment, "amount": 5.0, "refTransId": captured[1]["gatewayReference"]})
    assert refunded[1]["operationType"] == "Refund"
    second = driver.call("GatewayAuthorize", {**payment, "amount": 7.0})[1]
    voided = driver.call("GatewayVoid", {**payment, "amount": 7.0, "refTransId": second["gatewayReference"]})
    assert voided[1]["operationType"] == "Void"
    status = driver.call(
        "GatewayStatus", {"refTransId": authorized["gatewayReference"], "paymentGatewayAccountName": "clientAcct"}
    )
    assert status[1]["operationType"] == "Status"
    tokenized = driver.call("GatewayTokenize", {"card": CARD, "paymentGatewayAccountName": "clientAcct"})
    assert tokenized[1]["operationType"] == "Tokenize"

    stored = driver.call("StoreStringToken", {"payload": "client secret"})
    assert stored[0] == 201
    token = stored[1]["token"]
    assert driver.call("StringTokenRetrieve", token=token)[1]["clearPayload"] == "client secret"
    assert driver.call("StringTokenRetrieveMetaData", token=token)[1]["token"] == token
    assert driver.call("Delete", token=token)[0] == 200
    assert driver.call("StringTokenRetrieve", token=token)[0] == 404

    assert (
        driver.call(
            "PaymentGatewayAccountSet", {"paymentGatewayName": "NULLSuccess", "credentials": []}, name="walletAcct"
        )[0]
        == 200
    )
    session = driver.call(
        "StartSession",
        {
            "operation": "CHARGE",
            "paymentGatewayAccountId": "walletAcct",
            "currencyCode": "USD",
            "countryCode": "US",
            "amount": 12.5,
            "mode": "TEST",
        },
    )
    assert session[0] == 200
    paid = httpx.post(f"{url}/_emulator/pay/{session[1]['token']}", json={"card": CARD}, headers={"X-Api-Key": KEY})
    assert paid.status_code == 200, paid.text
    results = driver.call("ValidateResults", paid.json()["resultToken"])
    assert results[1]["upgChargeResults"]["operationResultCode"] == "Success"
    seen["validateResults"] = results[1]

    if tools:
        assert driver.call("BrandLookup", iin="411111")[1]["brand"] == "Visa"
        assert driver.call("IinLookup", iin="411111")[0] == 200
        assert driver.call("LuhnCheck", number="4111111111111111")[1]["luhnValid"] is True
        assert driver.call("CountryLookup", iin="411111")[1]["countryCode"] == "US"
        payer = {"clientIPAddress": "81.2.69.160", "countryCode": "GB"}
        assert driver.call("CardValidate", payer, iin="411111")[0] == 200
    assert driver.call("PaymentGatewayAccountDelete", name="clientAcct")[0] == 200
    return seen


def _operation_ids(document: dict[str, Any]) -> set[str]:
    return {op["operationId"] for _, _, op in _operations(document)}


def test_the_served_schema_client_drives_every_operation(generated: dict[str, ModuleType]) -> None:
    app = create_app(Settings(log_level="warning"))
    server = LiveServer(app)
    try:
        document = json.loads(default_schema_path().read_text())
        driver = Driver(generated["served"], server.url, document)
        seen = _drive(driver, server.url, tools=True)
    finally:
        server.stop()
    assert driver.called == _operation_ids(document)
    assert seen["charge 409"]["rejectReasonCode"] == "CardDeclined"
    assert seen["charge 400"][0]["fieldName"] == "currency"
    assert not app.state.runtime.violations


def _older_answers(generated: dict[str, ModuleType], app: Any, per_tenant: bool) -> tuple[Driver, dict[str, Any]]:
    server = LiveServer(app)
    try:
        document = json.loads(OLDER.read_text())
        if per_tenant:
            chosen = httpx.put(f"{server.url}/_emulator/interface", json=document, headers={"X-Api-Key": KEY})
            assert chosen.json()["interfaceVersion"] == "1.0.9.36", chosen.text
        driver = Driver(generated["older"], server.url, document)
        seen = _drive(driver, server.url, tools=False)
    finally:
        server.stop()
    assert not app.state.runtime.violations
    return driver, seen


@pytest.mark.parametrize("per_tenant", [False, True], ids=["--openapi", "control API"])
def test_the_older_client_parses_every_answer_of_the_older_document(
    generated: dict[str, ModuleType], per_tenant: bool
) -> None:
    older = OpenApi.load(OLDER)
    app = create_app(Settings(log_level="warning")) if per_tenant else create_app(Settings(), openapi=older)
    driver, seen = _older_answers(generated, app, per_tenant)
    assert driver.called == _operation_ids(older.document)
    assert "rejectReasonCode" not in seen["charge 200"]
    assert seen["charge 400"]["fieldName"] == "currency"  # one object, as that export declares
    assert "attempts" not in seen["validateResults"]


# Statuses payemu sends where the export lists none: an unknown account name is a 404 (the
# interface document lists 404 for a missing resource); a status check can end FatalFailure.
EXTRA_RESPONSES = {("delete", "/PaymentGatewayAccounts/{name}"): {"404"}, ("post", "/PaymentGateway/status"): {"500"}}


def test_clients_take_the_same_names() -> None:
    """For the operations both documents have: the same operation ids, and the same
    component names reached from them (payemu adds components only for fields 1.0.11.6 added)."""
    served = json.loads(default_schema_path().read_text())
    older = json.loads(OLDER.read_text())

    def reached(document: dict[str, Any], node: Any) -> set[str]:
        names: set[str] = set()
        stack = [node]
        while stack:
            item = stack.pop()
            if isinstance(item, dict):
                ref = item.get("$ref", "")
                if ref.startswith("#/components/schemas/") and ref[21:] not in names:
                    names.add(ref[21:])
                    stack.append(document["components"]["schemas"].get(ref[21:], {}))
                stack.extend(v for k, v in item.items() if k != "$ref")
            elif isinstance(item, list):
                stack.extend(item)
        return names

    differences = []
    for path, method, op in _operations(older):
        ours = served["paths"].get(path, {}).get(method)
        if ours is None:
            continue
        if ours["operationId"] != op["operationId"]:
            differences.append(f"{method} {path}: {ours['operationId']} != {op['operationId']}")
        theirs, mine = reached(older, op), reached(served, ours)
        renamed = sorted(theirs - mine)
        if renamed:
            differences.append(f"{method} {path}: components not reached as named {renamed}")
        invented = sorted(n for n in mine - theirs if n in older["components"]["schemas"])
        if invented:
            differences.append(f"{method} {path}: reaches {invented} where the export does not")
        extra = sorted(set(ours["responses"]) - set(op["responses"]) - EXTRA_RESPONSES.get((method, path), set()))
        if extra:
            differences.append(f"{method} {path}: responses {extra} the export does not list")
    assert differences == []


def test_driver_names_every_sub_package(generated: dict[str, ModuleType]) -> None:
    """The generated packages have one module per operation id (what the driver imports)."""
    for name, package in generated.items():
        files = {p.stem for p in Path(inspect.getfile(package)).parent.glob("api/*/*.py")}
        document = json.loads((default_schema_path() if name == "served" else OLDER).read_text())
        assert {_snake(i) for i in _operation_ids(document)} <= files
