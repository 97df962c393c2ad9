"""The control API as a whole: its document, its routes, tenants, reset, health."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest
from openapi_spec_validator import validate
from starlette.applications import Starlette
from starlette.testclient import TestClient

from emulator import INTERFACE_VERSION, __version__, control
from emulator.contract.openapi import OpenApi
from emulator.tenants.tenants import shard_of
from tests.conftest import LIVE, SANDBOX
from tests.support.paths import REPO_ROOT

ROOT = REPO_ROOT


def test_the_document_is_valid_openapi_and_packaged() -> None:
    document = json.loads((ROOT / "schemas" / "control.json").read_text())
    validate(document)
    assert document["openapi"] == "3.0.3"
    assert (ROOT / "emulator" / "data" / "control.json").read_text() == (ROOT / "schemas" / "control.json").read_text()


def test_every_operation_has_a_handler_and_back() -> None:
    api = OpenApi.load(control.control_schema_path())
    assert set(control.handlers()) == {op.operation_id for op in api.operations.values()}
    assert all(op.path.startswith(control.PREFIX + "/") for op in api.operations.values())
    open_ops = {op.operation_id for op in api.operations.values() if not op.secured}
    assert open_ops == {"ControlHealth", "ControlCreateTenant", "ControlListTenants"}


def test_the_document_is_served(anon: TestClient) -> None:
    response = anon.get("/_emulator/openapi.json")
    assert response.status_code == 200
    assert response.json() == json.loads(control.control_schema_path().read_text())


def test_health_needs_no_key(anon: TestClient) -> None:
    body = anon.get("/_emulator/health").json()
    assert body["status"] == "ok"
    assert body["version"] == __version__
    assert body["interfaceVersion"] == INTERFACE_VERSION
    assert body["tenants"] == 2
    assert body["seeded"] is False
    assert 0 <= body["uptimeSeconds"] < 60


def test_health_says_when_seeded(make_app: Callable[..., Starlette]) -> None:
    with TestClient(make_app(seed=7)) as client:
        assert client.get("/_emulator/health").json()["seeded"] is True


def test_other_calls_need_a_valid_key(anon: TestClient) -> None:
    for method, path in [("GET", "/_emulator/clock"), ("POST", "/_emulator/reset"), ("GET", "/_emulator/requests")]:
        response = anon.request(method, path, headers={"X-Api-Key": "nope"})
        assert response.status_code == 401, path
        assert response.json() == [{"fieldName": "X-Api-Key", "errors": ["The API key is not valid."]}]


def test_control_errors_are_json_arrays(client: TestClient) -> None:
    wrong_method = client.put("/_emulator/clock")
    assert wrong_method.status_code == 405
    assert wrong_method.headers["allow"] == "GET, HEAD, POST"
    unknown_field = client.post("/_emulator/clock", json={"advance": "1d", "rewind": "2d"})
    assert unknown_field.status_code == 400
    assert unknown_field.json()[0]["fieldName"] == "rewind"
    not_json = client.post("/_emulator/clock", content=b"advance=1d", headers={"Content-Type": "text/plain"})
    assert not_json.status_code == 415
    assert not_json.json()[0]["fieldName"] == "Content-Type"


def test_control_calls_are_not_journaled(client: TestClient) -> None:
    client.get("/Utils/apiKey")
    client.get("/_emulator/clock")
    client.post("/_emulator/clock", json={"advance": "1s"})
    client.post("/_emulator/certificates", json={"name": "c"})
    journal = client.get("/_emulator/requests").json()["requests"]
    assert [entry["path"] for entry in journal] == ["/Utils/apiKey"]


# -- tenants -------------------------------------------------------------------------------
def test_create_tenant_without_a_key(anon: TestClient) -> None:
    first = anon.post("/_emulator/tenants")
    second = anon.post("/_emulator/tenants", json={})
    assert first.status_code == second.status_code == 201
    a, b = first.json(), second.json()
    assert a["apiKey"] != b["apiKey"]
    assert a["accountId"] != b["accountId"]
    assert a["isSandbox"] is True
    status = anon.get("/Utils/apiKey", headers={"X-Api-Key": a["apiKey"]}).json()
    assert status == {"status": "OK", "userName": a["userName"], "accountId": a["accountId"], "isSandbox": True}


def test_create_live_tenant_with_a_chosen_key_and_name(anon: TestClient) -> None:
    created = anon.post("/_emulator/tenants", json={"sandbox": False, "userName": "shop", "apiKey": "ci-42"})
    assert created.status_code == 201
    assert created.json() == {
        "apiKey": "ci-42",
        "accountId": created.json()["accountId"],
        "userName": "shop",
        "isSandbox": False,
        "shard": shard_of("ci-42"),
    }
    again = anon.post("/_emulator/tenants", json={"apiKey": "ci-42"})
    assert again.status_code == 409
    assert again.json() == [{"fieldName": "apiKey", "errors": ["This API key is already in use."]}]
    taken = anon.post("/_emulator/tenants", json={"apiKey": "sandbox-api-key"})
    assert taken.status_code == 409


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"sandbox": "yes"}, "sandbox"),
        ({"apiKey": "has space"}, "apiKey"),
        ({"apiKey": ""}, "apiKey"),
        ({"color": "red"}, "color"),
        ({"userName": 5}, "userName"),
    ],
)
def test_create_tenant_bad_input(anon: TestClient, body: dict[str, object], field: str) -> None:
    response = anon.post("/_emulator/tenants", json=body)
    assert response.status_code == 400
    assert [entry["fieldName"] for entry in response.json()] == [field]


def test_tenants_are_isolated(anon: TestClient) -> None:
    a = {"X-Api-Key": anon.post("/_emulator/tenants").json()["apiKey"]}
    b = {"X-Api-Key": anon.post("/_emulator/tenants").json()["apiKey"]}
    anon.post("/_emulator/certificates", json={"name": "only-a"}, headers=a)
    anon.post("/_emulator/clock", json={"advance": "3d"}, headers=a)
    anon.get("/Utils/apiKey", headers=a)
    assert anon.get("/_emulator/certificates", headers=b).json() == {"certificates": []}
    assert anon.get("/_emulator/clock", headers=b).json()["offset"] == 0
    assert anon.get("/_emulator/requests", headers=b).json()["requests"] == []


def test_delete_a_created_tenant(anon: TestClient) -> None:
    key = {"X-Api-Key": anon.post("/_emulator/tenants").json()["apiKey"]}
    before = anon.get("/_emulator/health").json()["tenants"]
    response = anon.delete("/_emulator/tenants/current", headers=key)
    assert response.status_code == 204
    assert response.content == b""
    assert anon.get("/_emulator/health").json()["tenants"] == before - 1
    assert anon.get("/Utils/apiKey", headers=key).status_code == 401


def test_configured_keys_cannot_be_deleted(client: TestClient) -> None:
    response = client.delete("/_emulator/tenants/current", headers=LIVE)
    assert response.status_code == 409
    assert response.json()[0]["fieldName"] == "X-Api-Key"
    assert client.get("/Utils/apiKey", headers=LIVE).status_code == 200


def test_reset_empties_the_callers_tenant_only(client: TestClient) -> None:
    for headers in (SANDBOX, LIVE):
        client.get("/Utils/apiKey", headers=headers)
        client.post("/_emulator/certificates", json={"name": "c1"}, headers=headers)
        client.post("/_emulator/clock", json={"advance": "2d"}, headers=headers)
    response = client.post("/_emulator/reset")
    assert response.status_code == 200
    assert response.json()["status"] == "reset"
    assert client.get("/_emulator/requests").json()["requests"] == []
    assert client.get("/_emulator/certificates").json() == {"certificates": []}
    assert client.get("/_emulator/clock").json()["offset"] == 0
    assert len(client.get("/_emulator/requests", headers=LIVE).json()["requests"]) == 1
    assert client.get("/_emulator/certificates", headers=LIVE).json() == {"certificates": ["c1"]}


def test_reset_keeps_configured_certificates(make_app: Callable[..., Starlette]) -> None:
    from emulator.domain.config import KeySpec

    app = make_app(keys=(KeySpec("k", "u", 1, True, ("portalCert",)),))
    with TestClient(app, headers={"X-Api-Key": "k"}) as client:
        client.post("/_emulator/certificates", json={"name": "extra"})
        assert client.get("/_emulator/certificates").json() == {"certificates": ["extra", "portalCert"]}
        client.post("/_emulator/reset")
        assert client.get("/_emulator/certificates").json() == {"certificates": ["portalCert"]}


def test_reset_replays_a_seeded_tenant(make_app: Callable[..., Starlette]) -> None:
    with TestClient(make_app(seed=3), headers=SANDBOX) as client:
        first = client.get("/_emulator/clock").json()
        client.post("/_emulator/clock", json={"advance": "1h"})
        assert client.post("/_emulator/reset").json()["now"] == first["now"]
        assert client.get("/_emulator/clock").json() == first
