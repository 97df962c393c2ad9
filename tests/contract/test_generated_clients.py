"""Real clients, generated with openapi-python-client, drive a live payemu.

Three clients are generated once per session: from the schema payemu serves and from the
two older published exports kept in tests/data (1.0.9.36 and 1.0.7.15). Each drives every
operation of its document that payemu serves, error paths included (an unknown account's
delete, a failed status lookup, a gateway's own refusal, a fraction for an integer, card
tools' grouped numbers), against a live server serving that document — the older ones
also against a server whose tenant chose them through the control API. Every answer must
have a declared status (the clients raise on any other), parse, and carry exactly the
fields the document declares (a parsed model turned back into JSON has the same keys) —
except the 400 body where an export declares one object: the runtime sends an array
there, as the interface document says it always did, and the test asserts exactly that.
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

from emulator.app.build import create_app
from emulator.contract.openapi import OpenApi, default_schema_path
from emulator.domain.config import Settings
from tests.support.bodies import card
from tests.support.paths import TESTS_DIR
from tests.support.servers import in_thread
from tests.support.yamldata import load_yaml

OLDER = TESTS_DIR / "data" / "openapi-1.0.9.36.json"
OLDEST = TESTS_DIR / "data" / "openapi-1.0.7.15.yaml"
KEY = "sandbox-api-key"
# a tenant's own interface document is compiled while its PUT waits, which on a loaded
# machine took longer than httpx's default timeout of five seconds
INTERFACE_SECONDS = 60

CARD = card(cardHolderName="Client Test", expirationYear=2031, cvv="123")
ACCOUNT = {"paymentGatewayName": "Stripe", "credentials": [{"key": "SecretKey", "value": "sk_test_sk_client"}]}


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
            "oldest": _generate(OLDEST, into, "payemu_oldest_client"),
        }
    finally:
        sys.path.remove(str(into))


HTTP_METHODS = ("get", "put", "post", "delete", "patch", "options", "head")


def _operations(document: dict[str, Any]) -> Iterator[tuple[str, str, dict[str, Any]]]:
    """``(path, method, operation)`` of every operation; extensions of a path item (the
    served schema's ``x-payemu-source``) are not operations."""
    for path, item in document["paths"].items():
        for method, op in item.items():
            if method in HTTP_METHODS:
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


_CALL = re.compile(r'"method": "(\w+)",\s*"url": f?"([^"]+)"')
_PLACE = re.compile(r"\{[^}]*\}")


def _served_ids() -> dict[tuple[str, str], str]:
    """Operation ids of payemu's own document by (method, path): the driver's names."""
    served = json.loads(default_schema_path().read_text())
    return {(method, path): op["operationId"] for path, method, op in _operations(served)}


class Driver:
    """Calls operations through a generated client (named by payemu's own operation ids,
    found in any document by method and path) and checks every answer."""

    def __init__(self, package: ModuleType, url: str, document: dict[str, Any]) -> None:
        self.package = package
        self.client = package.client.Client(base_url=url, headers={"X-Api-Key": KEY}, raise_on_unexpected_status=True)
        self.document = document
        served = _served_ids()
        generated: dict[tuple[str, str], str] = {}
        root = Path(inspect.getfile(package)).parent
        for file in root.glob("api/*/*.py"):
            found = _CALL.search(file.read_text())
            if found:
                module = f"{package.__name__}.api.{file.parent.name}.{file.stem}"
                generated[(found[1], _PLACE.sub("{}", found[2]))] = module
        self.modules = {
            served[(method, path)]: (path, method, generated[(method, _PLACE.sub("{}", path))])
            for path, method, _ in _operations(document)
            if (method, path) in served
        }
        self.called: set[str] = set()
        self.errata: list[str] = []  # 400 arrays where the document declares one object

    def has(self, operation_id: str) -> bool:
        return operation_id in self.modules

    def call(self, operation_id: str, body: Any = None, **kwargs: Any) -> tuple[int, Any, Any]:
        path, method, name = self.modules[operation_id]
        module = importlib.import_module(name)
        if body is not None:
            hint = typing.get_type_hints(module.sync_detailed)["body"]
            model = next((h for h in typing.get_args(hint) or (hint,) if hasattr(h, "from_dict")), None)
            kwargs["body"] = model.from_dict(body) if model else body
        response = module.sync_detailed(client=self.client, **kwargs)
        self.called.add(operation_id)
        raw = json.loads(response.content) if response.content else None
        parsed = response.parsed
        status = int(response.status_code)
        declared = self.document["paths"][path][method]["responses"].get(str(status))
        if declared is None:  # a runtime answer (the binder's 400) the export lists nowhere
            assert status == 400, (operation_id, status, raw)
            return status, raw, parsed
        schema = next(iter(declared.get("content", {}).values()), {}).get("schema", {})
        if isinstance(raw, list) and "$ref" in schema:  # an export's one-object 400
            self.errata.append(f"{operation_id} {status}")
            return status, raw, parsed
        if "content" in declared and raw is not None:
            assert parsed is not None, (operation_id, response.status_code, raw)
            as_json = [p.to_dict() for p in parsed] if isinstance(parsed, list) else parsed
            as_json = as_json.to_dict() if hasattr(as_json, "to_dict") else as_json
            assert _keys(as_json) == _keys(raw), (operation_id, "fields beyond the document", raw)
        return status, raw, parsed


def _drive(driver: Driver, url: str) -> dict[str, Any]:
    """Every operation of the document that payemu serves, then its error paths; returns
    what later asserts look at."""
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
    seen["authorized"] = authorized["gatewayReference"]
    if driver.has("GatewayStatus"):
        status = driver.call(
            "GatewayStatus", {"refTransId": authorized["gatewayReference"], "paymentGatewayAccountName": "clientAcct"}
        )
        assert status[1]["operationType"] == "Status"
    if driver.has("GatewayTokenize"):
        tokenized = driver.call("GatewayTokenize", {"card": CARD, "paymentGatewayAccountName": "clientAcct"})
        assert tokenized[1]["operationType"] == "Tokenize"

    stored = driver.call("StoreStringToken", {"payload": "client secret"})
    assert stored[0] == 201
    token = stored[1]["token"]
    assert driver.call("StringTokenRetrieve", token=token)[1]["clearPayload"] == "client secret"
    assert driver.call("StringTokenRetrieveMetaData", token=token)[1]["token"] == token
    assert driver.call("Delete", token=token)[0] == 200
    assert driver.call("StringTokenRetrieve", token=token)[0] == 404

    if driver.has("StartSession"):
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

    if driver.has("BrandLookup"):
        assert driver.call("BrandLookup", iin="411111")[1]["brand"] == "VISA"
    if driver.has("IinLookup"):
        assert driver.call("IinLookup", iin="411111")[1]["cardBrand"] == "VISA"
    if driver.has("LuhnCheck"):
        assert driver.call("LuhnCheck", number="4111111111111111")[1]["luhnValid"] is True
    if driver.has("CountryLookup"):
        assert driver.call("CountryLookup", iin="411111")[1]["countryCode"] == "US"
    if driver.has("CardValidate"):
        payer = {"clientIPAddress": "81.2.69.160", "countryCode": "GB"}
        assert driver.call("CardValidate", payer, iin="411111")[0] == 200
    seen.update(_error_paths(driver, payment, seen["authorized"]))
    assert driver.call("PaymentGatewayAccountDelete", name="clientAcct")[0] == 200
    return seen


def _error_paths(driver: Driver, payment: dict[str, Any], authorized: str) -> dict[str, Any]:
    """The error paths a generated client meets, each answered with a status the document
    declares (the binder's 400 aside, which ASP.NET sends for every operation)."""
    seen: dict[str, Any] = {}
    gone = driver.call("PaymentGatewayAccountDelete", name="noSuchAccount")
    responses = driver.document["paths"]["/PaymentGatewayAccounts/{name}"]["delete"]["responses"]
    # 404 where declared; else the binder's 400 where declared; else the bodiless 200
    assert gone[0] == (404 if "404" in responses else 400 if "400" in responses else 200), gone
    assert gone[1] is None if gone[0] == 200 else gone[1][0]["fieldName"] == "name"
    seen["unknown delete"] = gone[0]
    # a stored account without its credential: the gateway refuses (a gateway result, 409)
    bare = {"paymentGatewayName": "Stripe", "credentials": []}
    assert driver.call("PaymentGatewayAccountSet", bare, name="bareAcct")[0] == 200
    if driver.has("GatewayStatus"):
        lookup = driver.call("GatewayStatus", {"refTransId": authorized, "paymentGatewayAccountName": "bareAcct"})
        assert lookup[0] == 409, lookup
        seen["status refused"] = lookup[1]
    # a field the gateway's record requires (BAC: "CVV mandatory"), left out
    bac = {
        "paymentGatewayName": "BAC",
        "credentials": [{"key": k, "value": "v"} for k in ("TerminalID", "Username", "Password")],
    }
    no_cvv = {**payment, "amount": 10.0, "paymentGatewayAccountName": None, "paymentGatewayAccount": bac}
    no_cvv["card"] = {key: value for key, value in CARD.items() if key != "cvv"}
    refused = driver.call("GatewayCharge", no_cvv)
    assert refused[0] == 409, refused
    assert "card.cvv" in refused[1]["operationResultDescription"]
    fraction = driver.call("GatewayCharge", {**payment, "amount": 10.0, "card": {**CARD, "expirationMonth": 12.0}})
    assert fraction[0] == 400, fraction
    assert fraction[1][0]["fieldName"] == "card.expirationMonth"
    if driver.has("LuhnCheck"):
        grouped = driver.call("LuhnCheck", number="4111 1111 1111 1111")
        assert grouped[1]["luhnValid"] is True
    assert driver.call("PaymentGatewayAccountDelete", name="bareAcct")[0] == 200
    return seen


def _operation_ids(document: dict[str, Any]) -> set[str]:
    return {op["operationId"] for _, _, op in _operations(document)}


def test_the_served_schema_client_drives_every_operation(generated: dict[str, ModuleType]) -> None:
    app = create_app(Settings(log_level="warning"))
    with in_thread(app=app) as server:
        document = json.loads(default_schema_path().read_text())
        driver = Driver(generated["served"], server.url, document)
        seen = _drive(driver, server.url)
    assert driver.called == _operation_ids(document)
    assert seen["charge 409"]["rejectReasonCode"] == "CardDeclined"
    assert seen["charge 400"][0]["fieldName"] == "currency"
    assert not app.state.runtime.violations


def _older_answers(generated: dict[str, ModuleType], app: Any, per_tenant: bool) -> tuple[Driver, dict[str, Any]]:
    with in_thread(app=app) as server:
        document = json.loads(OLDER.read_text())
        if per_tenant:
            address = f"{server.url}/_emulator/interface"
            chosen = httpx.put(address, json=document, headers={"X-Api-Key": KEY}, timeout=INTERFACE_SECONDS)
            assert chosen.json()["interfaceVersion"] == "1.0.9.36", chosen.text
        driver = Driver(generated["older"], server.url, document)
        seen = _drive(driver, server.url)
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
    # that export declares one object; the runtime sends the array, as it always did
    assert seen["charge 400"][0]["fieldName"] == "currency"
    assert "GatewayCharge 400" in driver.errata
    assert "attempts" not in seen["validateResults"]


# Statuses payemu's document declares where the export lists none: an unknown account name
# is a 404 (the interface document lists 404 for a missing resource; under the export it
# is the binder's 400).
EXTRA_RESPONSES = {("delete", "/PaymentGatewayAccounts/{name}"): {"404"}}


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


def test_driver_finds_a_module_for_every_served_operation(generated: dict[str, ModuleType]) -> None:
    """Each generated package has a module for every operation of its document that
    payemu serves (found by method and path, whatever the document calls it)."""
    served = _served_ids()
    documents = {"served": default_schema_path(), "older": OLDER, "oldest": OLDEST}
    for name, package in generated.items():
        document = load_yaml(documents[name].read_text())
        shared = {(m, p) for p, m, _ in _operations(document)} & set(served)
        driver = Driver(package, "http://127.0.0.1:9", document)
        assert set(driver.modules) == {served[key] for key in shared}
        assert len(shared) >= (19 if name != "oldest" else 15)


@pytest.mark.parametrize("per_tenant", [False, True], ids=["--openapi", "control API (YAML)"])
def test_the_oldest_client_drives_what_payemu_serves_of_its_document(
    generated: dict[str, ModuleType], per_tenant: bool
) -> None:
    """The 1.0.7.15 export: its payment, token, account, catalog, key and tool operations
    (its other areas — card forms, 3-D Secure, network tokens — are not emulated)."""
    oldest = OpenApi.load(OLDEST)
    app = create_app(Settings(log_level="warning")) if per_tenant else create_app(Settings(), openapi=oldest)
    with in_thread(app=app) as server:
        if per_tenant:
            text = OLDEST.read_text()
            chosen = httpx.put(
                f"{server.url}/_emulator/interface",
                content=text,
                headers={"X-Api-Key": KEY, "Content-Type": "application/yaml"},
                timeout=INTERFACE_SECONDS,
            )
            assert chosen.json()["interfaceVersion"] == "1.0.7.15", chosen.text
        document = load_yaml(OLDEST.read_text())
        driver = Driver(generated["oldest"], server.url, document)
        seen = _drive(driver, server.url)
    assert not app.state.runtime.violations
    assert driver.called == set(driver.modules)
    assert {"GatewayCharge", "LuhnCheck", "StoreStringToken", "PaymentGatewayAccountDelete"} <= driver.called
    assert seen["unknown delete"] == 200  # 1.0.7.15 declares only a bodiless 200 there
