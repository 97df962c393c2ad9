"""The mock gateways' tokenization: the newest mock-PSP page says NULLSuccess and NULLFailure
do not tokenize; its older version listed Tokenize. ``mockTokenization`` picks the reading
(server-wide in the config file, per API key through ``POST /_emulator/settings``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from starlette.applications import Starlette
from starlette.testclient import TestClient

from tests.conftest import LIVE, SANDBOX
from tests.support.bodies import CARD


def _tokenize(client: TestClient, gateway: str, headers: dict[str, str] | None = None) -> Any:
    body = {"card": CARD, "paymentGatewayAccount": {"paymentGatewayName": gateway, "credentials": []}}
    return client.post("/PaymentGateway/tokenize", json=body, headers=headers)


@pytest.mark.parametrize("gateway", ["NULLSuccess", "NULLFailure"])
def test_the_mocks_do_not_tokenize_as_the_newest_page_says(client: TestClient, gateway: str) -> None:
    answer = _tokenize(client, gateway)
    assert answer.status_code == 409, answer.text
    result = answer.json()
    assert (result["operationResultCode"], result["gatewayName"], result["gatewayToken"]) == (
        "NotImplemented",
        gateway,
        None,
    )
    charge = {"amount": 10, "currency": "USD", "card": CARD, "generateToken": True}
    charge["paymentGatewayAccount"] = {"paymentGatewayName": "NULLSuccess", "credentials": []}
    charged = client.post("/PaymentGateway/charge", json=charge).json()
    assert (charged["operationResultCode"], charged["gatewayToken"]) == ("Success", None)


def test_the_older_reading_per_api_key(client: TestClient) -> None:
    switched = client.post("/_emulator/settings", json={"mockTokenization": "supported"})
    assert switched.status_code == 200, switched.text
    assert switched.json()["mockTokenization"] == "supported"
    assert switched.json()["overridden"] == ["mockTokenization"]
    answer = _tokenize(client, "NULLSuccess")
    assert answer.status_code == 200, answer.text
    assert answer.json()["gatewayToken"].startswith("NULLTOK-")
    assert _tokenize(client, "NULLSuccess", headers=LIVE).status_code == 409  # another key keeps the default
    declined = _tokenize(client, "NULLFailure").json()
    assert (declined["operationResultCode"], declined["gatewayToken"]) == ("Rejected", None)
    client.post("/_emulator/settings", json={"mockTokenization": None})
    assert _tokenize(client, "NULLSuccess").status_code == 409


def test_the_older_reading_server_wide(make_app: Callable[..., Starlette]) -> None:
    with TestClient(make_app(mock_tokenization="supported"), headers=SANDBOX) as client:
        assert client.get("/_emulator/settings").json()["mockTokenization"] == "supported"
        for headers in (SANDBOX, LIVE):
            answer = _tokenize(client, "NULLSuccess", headers=headers)
            assert answer.status_code == 200, answer.text
            assert answer.json()["operationResultCode"] == "Success"


def test_a_bad_reading_is_a_clear_400(client: TestClient) -> None:
    answer = client.post("/_emulator/settings", json={"mockTokenization": "sometimes"})
    assert answer.status_code == 400
    assert "mockTokenization" in answer.text
