"""Control: client certificate names of the tenant."""

from __future__ import annotations

import pytest
from starlette.applications import Starlette
from starlette.testclient import TestClient

from tests.conftest import LIVE


def test_add_list_remove(app: Starlette, client: TestClient) -> None:
    assert client.get("/_emulator/certificates").json() == {"certificates": []}
    added = client.post("/_emulator/certificates", json={"name": "shopCert"})
    assert added.status_code == 201
    assert added.json() == {"certificates": ["shopCert"]}
    assert client.post("/_emulator/certificates", json={"name": "another"}).json() == {
        "certificates": ["another", "shopCert"]
    }
    assert client.post("/_emulator/certificates", json={"name": "shopCert"}).status_code == 201
    removed = client.delete("/_emulator/certificates/shopCert")
    assert removed.status_code == 200
    assert removed.json() == {"certificates": ["another"]}
    assert client.get("/_emulator/certificates", headers=LIVE).json() == {"certificates": []}
    assert app.state.runtime.tenants.get("sandbox-api-key").certificates.names() == ["another"]


def test_remove_unknown(client: TestClient) -> None:
    response = client.delete("/_emulator/certificates/nope")
    assert response.status_code == 404
    assert response.json() == [{"fieldName": "name", "errors": ["No client certificate named 'nope' is registered."]}]


def test_bad_names(client: TestClient) -> None:
    for body in ({}, {"name": ""}, {"name": " padded "}, {"name": "x" * 129}, {"name": 3}):
        response = client.post("/_emulator/certificates", json=body)
        assert response.status_code == 400, body
        assert response.json()[0]["fieldName"] == "name"


def test_at_most_so_many(client: TestClient, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(client.app.state.runtime.tenants.get("sandbox-api-key").certificates, "limit", 2)  # type: ignore[attr-defined]
    client.post("/_emulator/certificates", json={"name": "a"})
    client.post("/_emulator/certificates", json={"name": "b"})
    assert client.post("/_emulator/certificates", json={"name": "a"}).status_code == 201
    response = client.post("/_emulator/certificates", json={"name": "c"})
    # one bound, kept by the store itself: the memory limit's 507 (limits.namedItemsPerTenant)
    assert response.status_code == 507
    assert response.json() == [
        {"fieldName": "name", "errors": ["This API key holds its limit of 2 client certificates; remove some first."]}
    ]
