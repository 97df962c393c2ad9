"""Control: every name a caller gives must exist. Unknown query parameters and filter
values are JSON 400s naming them, with what is allowed (tests/cases/unknown_names.yaml)."""

from __future__ import annotations

from typing import Any

import pytest
from starlette.testclient import TestClient

from emulator.domain.datafiles import parse_yaml
from tests.support.paths import REPO_ROOT

CASES: list[dict[str, Any]] = parse_yaml((REPO_ROOT / "tests/cases/unknown_names.yaml").read_text())["cases"]


@pytest.mark.parametrize("case", CASES, ids=[case["name"] for case in CASES])
def test_a_name_that_does_not_exist_is_refused(client: TestClient, case: dict[str, Any]) -> None:
    method = case.get("method", "GET")
    response = client.request(method, case["path"])
    assert response.status_code == case["status"], response.text
    if case["status"] != 400:
        return
    [entry] = response.json()
    assert entry["fieldName"] == case["field"]
    [message] = entry["errors"]
    for piece in case["says"]:
        assert piece in message
    # the server keeps serving the same operation without the stray parameter
    assert client.request(method, case["path"].split("?", 1)[0]).status_code == 200


def test_every_mistake_of_one_request_is_named(client: TestClient) -> None:
    response = client.get("/_emulator/requests", params={"stauts": 409, "gatway": "x", "status": 200})
    assert response.status_code == 400
    assert sorted(entry["fieldName"] for entry in response.json()) == ["gatway", "stauts"]


def test_a_known_filter_value_still_filters(client: TestClient) -> None:
    client.get("/Utils/apiKey")
    assert client.get("/_emulator/requests/count", params={"operationId": "ValidateApiKey"}).json() == {"count": 1}
    assert client.get("/_emulator/requests/count", params={"method": "get"}).json() == {"count": 1}
    assert client.get("/_emulator/requests/count", params={"operationId": "GatewayCharge"}).json() == {"count": 0}
