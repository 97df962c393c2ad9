"""Control: the tenant's virtual clock."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta

import pytest
from starlette.applications import Starlette
from starlette.testclient import TestClient

from tests.conftest import LIVE, SANDBOX


def _at(text: str) -> datetime:
    return datetime.fromisoformat(text)


def test_read_the_clock(client: TestClient) -> None:
    body = client.get("/_emulator/clock").json()
    assert body["offset"] == 0
    assert body["frozen"] is False
    assert body["now"].endswith("Z")
    assert abs((_at(body["now"]) - datetime.now(_at(body["now"]).tzinfo)).total_seconds()) < 60


@pytest.mark.parametrize(("advance", "seconds"), [("8d", 8 * 86400), ("1h30m", 5400), (90, 90), (0.5, 0.5)])
def test_advance(make_app: Callable[..., Starlette], advance: object, seconds: float) -> None:
    with TestClient(make_app(seed=1), headers=SANDBOX) as client:
        before = client.get("/_emulator/clock").json()
        response = client.post("/_emulator/clock", json={"advance": advance})
        assert response.status_code == 200
        after = response.json()
    assert after["frozen"] is True
    assert after["offset"] == seconds
    assert _at(after["now"]) - _at(before["now"]) == timedelta(seconds=seconds)


def test_advances_add_up_and_stay_per_tenant(client: TestClient) -> None:
    client.post("/_emulator/clock", json={"advance": "1d"})
    client.post("/_emulator/clock", json={"advance": "12h"})
    assert client.get("/_emulator/clock").json()["offset"] == 1.5 * 86400
    assert client.get("/_emulator/clock", headers=LIVE).json()["offset"] == 0


def test_the_journal_uses_the_tenants_clock(make_app: Callable[..., Starlette]) -> None:
    with TestClient(make_app(seed=1), headers=SANDBOX) as client:
        client.get("/Utils/apiKey")
        client.post("/_emulator/clock", json={"advance": "8d"})
        client.get("/Utils/apiKey")
        first, second = client.get("/_emulator/requests").json()["requests"]
    assert _at(second["time"]) - _at(first["time"]) == timedelta(days=8)


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"advance": "8x"}, "'8x' is not a duration (use e.g. 30s, 15m, 2h, 8d, 1w, 1d12h)."),
        ({"advance": "-1d"}, "The clock only moves forward: negative durations are refused."),
        ({"advance": -5}, "The clock only moves forward: negative durations are refused."),
        ({"advance": -0.5}, "The clock only moves forward: negative durations are refused."),
        ({"advance": "99999999999d"}, "The clock cannot move past 9000-01-01."),
        ({"advance": 1e300}, "The clock cannot move past 9000-01-01."),
        ({"advance": "2000000w"}, "The clock cannot move past 9000-01-01."),
    ],
)
def test_bad_durations(client: TestClient, body: dict[str, object], message: str) -> None:
    response = client.post("/_emulator/clock", json=body)
    assert response.status_code == 400
    assert response.json() == [{"fieldName": "advance", "errors": [message]}]
    assert client.get("/_emulator/clock").json()["offset"] == 0


@pytest.mark.parametrize("body", [{}, {"advance": None}, {"advance": True}, {"advance": ""}])
def test_schema_rejects(client: TestClient, body: dict[str, object]) -> None:
    response = client.post("/_emulator/clock", json=body)
    assert response.status_code == 400
    assert response.json()[0]["fieldName"] == "advance"
