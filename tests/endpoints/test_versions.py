"""Other published versions: --openapi documents checked at start, answers shaped for the
document, a version chosen per tenant through the control API, the journal naming it."""

from __future__ import annotations

import copy
import gc
import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from starlette.applications import Starlette
from starlette.testclient import TestClient

from emulator.cli.main import main
from emulator.contract.openapi import OpenApi, default_schema_path
from tests.conftest import LIVE, SANDBOX
from tests.support.bodies import CARD
from tests.support.paths import TESTS_DIR
from tests.support.servers import free_port, payemu
from tests.support.yamldata import load_yaml

DATA = TESTS_DIR / "data"
OLDER = DATA / "openapi-1.0.9.36.json"
CASES = load_yaml((TESTS_DIR / "cases" / "bad_documents.yaml").read_text())
DEFAULT_DOCUMENT = default_schema_path()
ACCOUNT = {"paymentGatewayName": "Stripe", "credentials": [{"key": "SecretKey", "value": "sk_test_sk_v"}]}


def _write(case: dict[str, Any], into: Path) -> Path:
    path = into / case.get("file", "document.json")
    if "text" in case:
        path.write_text(case["text"] * case.get("times", 1))
    elif "changes" in case:
        document = json.loads(OLDER.read_text())
        for change in case["changes"]:
            *parents, last = change["at"]
            holder = document
            for key in parents:
                holder = holder[key]
            if "to" in change:
                holder[last] = change["to"]
            else:
                del holder[last]
        path.write_text(json.dumps(document))
    return path


@pytest.mark.parametrize("case", CASES, ids=lambda c: c["name"])
def test_a_bad_document_is_one_line_and_status_2(
    case: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _write(case, tmp_path)
    assert main(["serve", "--openapi", str(path), "--port", "1"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    assert err.startswith(f"payemu: --openapi: {path}: ")
    assert case["says"] in err
    assert "Traceback" not in err


def test_the_command_exits_2_without_a_traceback(tmp_path: Path) -> None:
    path = _write(CASES[0], tmp_path)
    done = payemu("serve", "--port", str(free_port()), "--openapi", str(path))
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        f"payemu: --openapi: {path}: not an OpenAPI 3.0 document: it has no 'openapi' field (a Swagger 2.0 document)"
    ]


def test_30000_brackets_exit_2_with_one_line_and_no_traceback(tmp_path: Path) -> None:
    path = tmp_path / "deep.json"
    path.write_text("[" * 30_000)
    done = payemu("serve", "--port", str(free_port()), "--openapi", str(path))
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        f"payemu: --openapi: {path}: refused before parsing: line 1: the JSON is nested more than 64 levels deep"
    ]
    assert done.stdout == ""


def _pay(client: TestClient, amount: float, **extra: Any) -> Any:
    body = {"amount": amount, "currency": "USD", "card": CARD, "paymentGatewayAccountName": "acct1", **extra}
    return client.post("/PaymentGateway/charge", json=body)


@pytest.fixture
def older_app(make_app: Callable[..., Starlette]) -> Starlette:
    return make_app(openapi=OpenApi.load(OLDER))


@pytest.mark.parametrize(
    ("amount", "status", "result"),
    [
        (10.0, 200, "Success"),
        (9001.0, 202, "Accepted"),
        (9010.0, 409, "Rejected"),
        (9006.0, 500, "FatalFailure"),
        (9005.0, 503, "TemporaryFailure"),
    ],
)
def test_every_outcome_with_the_older_document(older_app: Starlette, amount: float, status: int, result: str) -> None:
    older = older_app.state.runtime.api
    with TestClient(older_app, headers=SANDBOX) as client:
        assert client.put("/PaymentGatewayAccounts/acct1", json=ACCOUNT).status_code == 200
        answer = _pay(client, amount)
    assert answer.status_code == status
    body = answer.json()
    assert body["operationResultCode"] == result
    validator = older.find("POST", "/PaymentGateway/charge").responses[status]
    if validator is not None:  # 200 and 202 have a body in that export; 409, 500, 503 none
        assert validator.is_valid(body), body
        assert "rejectReasonCode" not in body


def test_a_status_declared_without_a_body_keeps_the_runtime_body(older_app: Starlette) -> None:
    with TestClient(older_app, headers=SANDBOX) as client:
        client.put("/PaymentGatewayAccounts/acct1", json=ACCOUNT)
        declined = _pay(client, 9010.0).json()
    assert declined["rejectReasonCode"] == "CardDeclined"


def test_the_400_is_an_array_where_that_document_declares_one_object(older_app: Starlette) -> None:
    """The interface document: the 400 "was corrected to be an array …; runtime behavior
    did not change" — so under 1.0.9.36 too the runtime sends an array."""
    with TestClient(older_app, headers=SANDBOX) as client:
        body = client.post("/PaymentGateway/charge", json={"amount": "ten", "currency": "USD", "card": CARD}).json()
    assert body == [{"fieldName": "amount", "errors": ["The field Amount must be a number."]}]


def test_a_runtime_error_status_goes_out_where_the_document_lists_none(older_app: Starlette) -> None:
    with TestClient(older_app, headers=SANDBOX) as client:
        answer = client.post(
            "/StringTokens", content=b"payload=x", headers={"Content-Type": "application/x-www-form-urlencoded"}
        )
    assert answer.status_code == 415
    assert answer.json()[0]["fieldName"] == "Content-Type"


def test_not_found_is_the_binders_400_where_the_document_declares_no_404(older_app: Starlette) -> None:
    """1.0.9.36 declares 200, 400 and 401 for deleting an account: an unknown name is a 400
    naming it (a generated client would raise on a 404)."""
    with TestClient(older_app, headers=SANDBOX) as client:
        answer = client.delete("/PaymentGatewayAccounts/nosuchAccount")
    assert answer.status_code == 400
    assert answer.json() == [{"fieldName": "name", "errors": ["No payment gateway account named nosuchAccount."]}]


def test_an_undeclared_status_is_a_violation(older_app: Starlette) -> None:
    """A status the served document does not declare, other than the runtime's own
    answers, is caught like a schema violation (a 500 naming it)."""
    from emulator.contract import shaping as projection
    from emulator.contract.openapi import OpenApi

    api = OpenApi.load(OLDER)
    op = api.by_id()["GatewayStatus"]
    assert projection.shape(op, 503, {"x": 1}, False)[1] == 503  # checked, and 503 is not declared there
    assert "503" not in op.raw["responses"]
    assert projection.shape(op, 401, [], True)[1] is None  # the key check's 401 goes out as it is


def test_the_journal_names_the_version(make_app: Callable[..., Starlette]) -> None:
    app = make_app()
    with TestClient(app, headers=SANDBOX) as client:
        client.get("/Utils/apiKey")
        client.put("/_emulator/interface", json=json.loads(OLDER.read_text()))
        client.get("/Utils/apiKey")
        entries = client.get("/_emulator/requests").json()["requests"]
    assert [e["interfaceVersion"] for e in entries] == ["1.0.11.6", "1.0.9.36"]


def test_a_tenant_chooses_the_older_version(make_app: Callable[..., Starlette]) -> None:
    app = make_app()
    with TestClient(app, headers=SANDBOX) as old, TestClient(app, headers=LIVE) as new:
        chosen = old.put("/_emulator/interface", json=json.loads(OLDER.read_text()))
        assert chosen.status_code == 200
        assert chosen.json() == {
            "interfaceVersion": "1.0.9.36",
            "source": "PUT /_emulator/interface",
            "operations": 19,
            "serverDefault": False,
        }
        for client in (old, new):
            client.put("/PaymentGatewayAccounts/acct1", json=ACCOUNT)
        assert "rejectReasonCode" not in _pay(old, 10.0).json()
        assert _pay(new, 10.0).json()["rejectReasonCode"] is None
        assert old.post("/PaymentGateway/charge", json={"fallbackUpgs": []}).json()[0]["fieldName"] == "amount"
        assert old.get("/Tools/brand", params={"iin": "411111"}).status_code == 404
        assert new.get("/Tools/brand", params={"iin": "411111"}).status_code == 200
        assert old.get("/swagger/1.0/swagger.json").json()["info"]["description"].startswith("Code Version 1.0.9.36")
        assert old.get("/_emulator/interface").json()["interfaceVersion"] == "1.0.9.36"
        restored = old.delete("/_emulator/interface").json()
        assert restored["interfaceVersion"] == "1.0.11.6"
        assert restored["serverDefault"] is True
        assert _pay(old, 10.0).json()["rejectReasonCode"] is None


def test_a_tenant_cannot_choose_a_bad_document(client: TestClient) -> None:
    document = json.loads(OLDER.read_text())
    broken = copy.deepcopy(document)
    del broken["paths"]["/PaymentGateway/void"]
    answer = client.put("/_emulator/interface", json=broken)
    assert answer.status_code == 400
    assert answer.json() == [
        {
            "fieldName": "body",
            "errors": [
                "The document cannot be served: operations payemu needs are missing: DELETE /PaymentGateway/void."
            ],
        }
    ]
    assert client.get("/_emulator/interface").json()["serverDefault"] is True


def test_a_tenant_chooses_a_yaml_document(make_app: Callable[..., Starlette]) -> None:
    """PUT /_emulator/interface reads YAML as --openapi does."""
    app = make_app()
    text = yaml.safe_dump(json.loads(OLDER.read_text()), sort_keys=False)
    with TestClient(app, headers=SANDBOX) as client:
        chosen = client.put("/_emulator/interface", content=text, headers={"Content-Type": "application/yaml"})
        wrong = client.put("/_emulator/interface", content="a: [", headers={"Content-Type": "application/yaml"})
        form = client.put(
            "/_emulator/interface", content=b"x=1", headers={"Content-Type": "application/x-www-form-urlencoded"}
        )
    assert chosen.status_code == 200
    assert chosen.json()["interfaceVersion"] == "1.0.9.36"
    assert wrong.status_code == 400
    assert wrong.json()[0]["fieldName"] == "body"
    assert form.status_code == 415


def _rss_bytes() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def test_swapping_the_interface_does_not_leak(make_app: Callable[..., Starlette]) -> None:
    """PUT /_emulator/interface then a charge, 12 times: the documents replaced are freed
    with the endpoints built for them (a leak keeps ~1.5 MB a swap)."""
    app = make_app()
    document = json.loads(OLDER.read_text())
    swaps, measured_from = 12, 4
    with TestClient(app, headers=SANDBOX) as client:
        client.put("/PaymentGatewayAccounts/acct1", json=ACCOUNT)
        sizes: list[int] = []
        for swap in range(swaps):
            assert client.put("/_emulator/interface", json=document).status_code == 200
            assert _pay(client, 10.0).json()["operationResultCode"] == "Success"
            if swap + 1 in (measured_from, swaps):
                gc.collect()
                sizes.append(_rss_bytes())
        gc.collect()
        live = [o for o in gc.get_objects() if isinstance(o, OpenApi)]
    # of the documents put, only the one served now is alive
    assert len([api for api in live if api.source == "PUT /_emulator/interface"]) == 1
    per_swap = (sizes[1] - sizes[0]) / (swaps - measured_from)
    assert per_swap < 64 * 1024, sizes  # a kept document and its endpoints are ~1.5 MB


def _shaped(shape: str, values: int) -> dict[str, Any]:
    """The bundled document with a definition of about ``values`` values: ``alone`` (no
    schema refers to it), ``shared`` (forty definitions refer to it, so every validator
    reaching one of them compiles a copy of it) or ``enum`` (one flat list)."""
    document: dict[str, Any] = json.loads(DEFAULT_DOCUMENT.read_text())
    schemas = document["components"]["schemas"]
    if shape == "enum":
        schemas["Big"] = {"type": "string", "enum": [f"{n:x}" for n in range(values)]}
        return document
    schemas["Big"] = {"type": "object", "properties": {f"p{n:x}": {"type": "string"} for n in range(values // 3)}}
    if shape == "shared":
        for name in [name for name in schemas if name != "Big"][:40]:
            schemas[name] = {"allOf": [schemas[name], {"$ref": "#/components/schemas/Big"}]}
    return document


_MEASURE = """
import gc, json, sys
from emulator.contract.openapi import OpenApi, default_schema_path
from emulator.endpoints import versions
def rss():
    return int(open("/proc/self/statm").read().split()[1]) * 4096
document = json.loads(sys.stdin.read())
gc.collect()
before = rss()
api = OpenApi(document, source="x")
weight = versions.weight(api)
api.compiler.warm()
gc.collect()
print(json.dumps({"held": rss() - before, "weight": weight}))
"""


@pytest.mark.parametrize(("shape", "values"), [("alone", 30_000), ("shared", 9_000), ("enum", 60_000)])
def test_a_documents_weight_is_not_less_than_what_its_validators_hold(shape: str, values: int) -> None:
    """versions.weight, computed before any validator is built, against the RSS that building
    them added (a fresh process each): a definition shared by many schemas costs a copy per
    validator reaching it (before it was weighed, 1 MB of them held 648 MiB)."""
    document = json.dumps(_shaped(shape, values))
    measured = subprocess.run(
        [sys.executable, "-c", _MEASURE], input=document, capture_output=True, text=True, timeout=120, check=True
    )
    figures = json.loads(measured.stdout)
    assert figures["held"] > 1024 * 1024, figures  # the build is large enough to measure
    assert figures["weight"] >= figures["held"], figures


def test_a_document_whose_validators_would_outgrow_the_budget_is_refused_before_they_are_built(
    make_app: Callable[..., Starlette],
) -> None:
    app = make_app()
    document = _shaped("shared", 18_000)  # about 0.5 MB of text, some 270 MiB of validators
    with TestClient(app, headers=SANDBOX) as client:
        gc.collect()
        before = _rss_bytes()
        refused = client.put("/_emulator/interface", json=document)
        grown = _rss_bytes() - before
        served = client.get("/_emulator/interface").json()
        health = client.get("/_emulator/health").json()
    assert refused.status_code == 507
    entry = refused.json()[0]
    assert entry["fieldName"] == "body"
    assert entry["errors"][0].startswith("This interface document, compiled, (")
    assert "limits.memoryBytesPerTenant" in entry["errors"][0]
    assert grown < 48 * 1024 * 1024, grown  # parsed, not compiled
    assert served["serverDefault"] is True
    assert health["limits"]["memoryBytes"]["used"] < 1024 * 1024


def test_a_yaml_document_makes_room_for_what_pyyaml_builds_first(make_app: Callable[..., Starlette]) -> None:
    """A 1 MB flow list of 500,000 one-letter values, which PyYAML builds at about 350 bytes
    a value: refused before it is built when the budget cannot hold that."""
    app = make_app()  # 64 MiB for the tenant
    text = "[" + ",".join(["a"] * 500_000) + "]"
    with TestClient(app, headers=SANDBOX) as client:
        gc.collect()
        before = _rss_bytes()
        refused = client.put("/_emulator/interface", content=text, headers={"Content-Type": "application/yaml"})
        grown = _rss_bytes() - before
    assert refused.status_code == 507
    assert refused.json()[0]["errors"][0].startswith("This YAML document, while it is read, (")
    assert grown < 48 * 1024 * 1024, grown
