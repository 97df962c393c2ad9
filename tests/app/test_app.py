"""The app: authentication, routing errors, the served schema, route coverage."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml
from starlette.applications import Starlette
from starlette.testclient import TestClient

from emulator import api
from emulator.api import apikey
from emulator.app.build import SWAGGER_PATH
from emulator.contract.openapi import OpenApi, default_schema_path
from emulator.endpoints.pipeline import Call, Reply
from tests.conftest import LIVE, SANDBOX
from tests.support.paths import TESTS_DIR

# An older published export of the interface (1.0.9.36), kept in the repository.
OLDER = TESTS_DIR / "data" / "openapi-1.0.9.36.json"


def test_api_key_status(client: TestClient) -> None:
    response = client.get("/Utils/apiKey")
    assert response.status_code == 200
    assert response.json() == {
        "status": "OK",
        "userName": "sandbox-merchant",
        "accountId": 10001,
        "isSandbox": True,
    }


def test_live_key_is_its_own_account(client: TestClient) -> None:
    body = client.get("/Utils/apiKey", headers=LIVE).json()
    assert body["isSandbox"] is False
    assert body["accountId"] == 10002


@pytest.mark.parametrize(
    ("headers", "message"),
    [({}, "The X-Api-Key header is missing."), ({"X-Api-Key": "nope"}, "The API key is not valid.")],
)
def test_unauthenticated(anon: TestClient, headers: dict[str, str], message: str) -> None:
    response = anon.get("/Utils/apiKey", headers=headers)
    assert response.status_code == 401
    assert response.json() == [{"fieldName": "X-Api-Key", "errors": [message]}]


def test_any_key_makes_fresh_sandbox_tenants(make_app: Callable[..., Starlette]) -> None:
    with TestClient(make_app(any_key=True)) as client:
        first = client.get("/Utils/apiKey", headers={"X-Api-Key": "ci-job-1"}).json()
        second = client.get("/Utils/apiKey", headers={"X-Api-Key": "ci-job-2"}).json()
        again = client.get("/Utils/apiKey", headers={"X-Api-Key": "ci-job-1"}).json()
    assert first["isSandbox"]
    assert second["isSandbox"]
    assert first["accountId"] != second["accountId"]
    assert again == first


def test_unknown_route_is_json_404(anon: TestClient) -> None:
    response = anon.get("/nothing/here")
    assert response.status_code == 404
    assert response.json() == [{"fieldName": "path", "errors": ["No resource at GET /nothing/here."]}]


def test_wrong_method_is_json_405_with_allow(anon: TestClient) -> None:
    response = anon.patch("/StringTokens")
    assert response.status_code == 405
    assert response.headers["allow"] == "POST"
    assert response.json()[0]["fieldName"] == "method"


def test_swagger_is_the_published_document(anon: TestClient) -> None:
    response = anon.get(SWAGGER_PATH)
    assert response.status_code == 200
    assert response.json() == json.loads(default_schema_path().read_text())
    assert response.json()["info"]["version"] == "Prod"


def test_every_schema_operation_has_a_route_and_back(app: Starlette, openapi: OpenApi) -> None:
    handled = set(api.handlers())
    documented = {op.operation_id for op in openapi.operations.values()}
    assert handled == documented, "every documented operation has a handler, and nothing else does"
    routes = {
        (method, route.path)
        for route in app.routes
        for method in (getattr(route, "methods", None) or ())
        if not route.path.startswith("/_emulator") and route.path not in (SWAGGER_PATH, "/favicon.ico", "/", "/docs")
    }
    served = {(m, p) for m, p in routes if m != "HEAD"}
    assert served == {(op.method, op.path) for op in openapi.operations.values()}


def test_an_operation_without_a_handler_is_a_clear_501(
    monkeypatch: pytest.MonkeyPatch, make_app: Callable[..., Starlette]
) -> None:
    """An operation of another document that payemu has no handler for: a clear 501, never
    a fake success."""
    monkeypatch.setitem(api.MODULES, "apikey", ())
    with TestClient(make_app(), headers=LIVE) as client:
        response = client.get("/Utils/apiKey")
    assert response.status_code == 501
    message = "ValidateApiKey is not built in this version of payemu."
    assert response.json() == [{"fieldName": None, "errors": [message]}]


def test_a_response_breaking_the_schema_is_a_500_naming_it(
    monkeypatch: pytest.MonkeyPatch, make_app: Callable[..., Starlette]
) -> None:
    async def broken(call: Call) -> Reply:
        return Reply(200, {"status": "OK", "userName": "x", "accountId": "not a number", "isSandbox": True})

    monkeypatch.setattr(apikey, "HANDLERS", {"ValidateApiKey": broken})
    app = make_app()
    with TestClient(app, headers=LIVE) as client:
        response = client.get("/Utils/apiKey")
    assert response.status_code == 500
    message = response.json()[0]["errors"][0]
    assert "ValidateApiKey" in message
    assert "accountId" in message
    assert len(app.state.runtime.violations) == 1
    app.state.runtime.violations.clear()


def test_a_crashing_handler_is_a_json_500_and_the_server_goes_on(
    monkeypatch: pytest.MonkeyPatch, make_app: Callable[..., Starlette]
) -> None:
    calls = {"n": 0}

    async def flaky(call: Call) -> Reply:
        calls["n"] += 1
        if calls["n"] == 1:
            raise RuntimeError("boom")
        return await apikey.validate_api_key(call)

    monkeypatch.setattr(apikey, "HANDLERS", {"ValidateApiKey": flaky})
    with TestClient(make_app(), headers=LIVE) as client:
        first = client.get("/Utils/apiKey")
        second = client.get("/Utils/apiKey")
    assert first.status_code == 500
    assert first.json() == [{"fieldName": None, "errors": ["payemu hit an internal error; see its log."]}]
    assert "Traceback" not in first.text
    assert second.status_code == 200


def test_runs_against_another_published_copy(make_app: Callable[..., Starlette]) -> None:
    """--openapi: the 1.0.9.36 export knows no fallbackUpgs on charge: ignored as the
    service's binder ignores unknown members (and named in the warnings), a 400 when strict."""
    other = OpenApi.load(OLDER)
    with TestClient(make_app(openapi=other), headers=LIVE) as client:
        assert client.get("/Utils/apiKey").status_code == 200
        assert client.get(SWAGGER_PATH).json()["info"]["description"].startswith("Code Version 1.0.9.36")
        response = client.post("/PaymentGateway/charge", json={"fallbackUpgs": []})
        client.post("/_emulator/settings", json={"strict": True})
        strict = client.post("/PaymentGateway/charge", json={"fallbackUpgs": []})
    assert response.status_code == 400
    # that export declares its 400 body as one ValidationErrorMessage; the runtime sends a list
    assert "fallbackUpgs" not in {entry["fieldName"] for entry in response.json()}
    assert response.headers["X-Payemu-Warnings"] == "unknown-property=fallbackUpgs"
    assert "fallbackUpgs" in {entry["fieldName"] for entry in strict.json()}


def test_a_yaml_export_loads(tmp_path: Path) -> None:
    copy = tmp_path / "older.yaml"
    copy.write_text(yaml.safe_dump(json.loads(OLDER.read_text())))
    old = OpenApi.load(copy)
    assert old.find("POST", "/PaymentGateway/status") is not None
    assert old.find("GET", "/Tools/brand") is None


def test_a_card_number_sent_as_a_property_name_never_leaves_unmasked(make_app: Callable[..., Starlette]) -> None:
    """Neither the warnings header nor the journal shows a card number sent as a key."""
    body = {
        "amount": 10,
        "currency": "USD",
        "paymentGatewayAccount": {"paymentGatewayName": "NULLSuccess", "credentials": []},
        "card": {
            "cardHolderName": "J",
            "cardNumber": "4242424242424242",
            "expirationMonth": 12,
            "expirationYear": 2031,
        },
        "4111111111111111": "oops",
    }
    with TestClient(make_app(), headers=SANDBOX) as client:
        answer = client.post("/PaymentGateway/charge", json=body)
        journal = client.get("/_emulator/requests").text
    assert answer.status_code == 200
    assert answer.headers["X-Payemu-Warnings"] == "unknown-property=411111******1111"
    assert "4111111111111111" not in journal
    assert "411111******1111" in journal
