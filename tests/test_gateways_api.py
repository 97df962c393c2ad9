"""``GET /PaymentGateway`` lists the catalog file."""

from __future__ import annotations

import yaml
from starlette.testclient import TestClient

from emulator.gateways.catalog import CATALOG_PATH


def test_lists_every_catalog_entry(client: TestClient) -> None:
    response = client.get("/PaymentGateway")
    assert response.status_code == 200
    listed = response.json()
    data = yaml.safe_load(CATALOG_PATH.read_text())["gateways"]
    assert [g["name"] for g in listed] == [g["name"] for g in data]
    for entry, source in zip(listed, data, strict=True):
        assert entry == {
            "name": source["name"],
            "displayName": source["displayName"],
            "paymentGatewayUrl": source["paymentGatewayUrl"],
            "description": source["description"],
            "credentialsNames": source["credentialsNames"] + source.get("optionalCredentials", []),
            "supportsNetworkToken": source["supportsNetworkToken"],
        }
    stripe = next(g for g in listed if g["name"] == "Stripe")
    assert stripe["credentialsNames"] == ["SecretKey"]
    assert next(g for g in listed if g["name"] == "NULLSuccess")["credentialsNames"] == []


def test_same_catalog_for_every_key(client: TestClient) -> None:
    assert (
        client.get("/PaymentGateway", headers={"X-Api-Key": "live-api-key"}).json()
        == client.get("/PaymentGateway").json()
    )


def test_needs_a_key(anon: TestClient) -> None:
    response = anon.get("/PaymentGateway")
    assert response.status_code == 401
    assert response.json()[0]["fieldName"] == "X-Api-Key"
