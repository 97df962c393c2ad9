"""The gateway catalog is data, checked when loaded."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from starlette.testclient import TestClient

from emulator.gateways.catalog import CATALOG_PATH, CatalogError, load_catalog
from tests.conftest import SANDBOX

REQUIRED = {
    "NULLSuccess",
    "NULLFailure",
    "Stripe",
    "Adyen",
    "AuthorizeNet",
    "Elavon",
    "Worldpay",
    "FirstDataIPG",
    "AMEX",
}
REASONS = {
    "CardDeclined",
    "InsufficientFunds",
    "ExpiredCard",
    "InvalidCardNumber",
    "InvalidCvv",
    "LostOrStolenCard",
    "SuspectedFraud",
    "DoNotHonor",
    "LimitExceeded",
    "AuthenticationRequired",
}


def test_the_shipped_catalog() -> None:
    catalog = load_catalog()
    assert set(catalog.names()) >= REQUIRED
    assert any(g.requires_order_desc for g in catalog)
    assert catalog.get("stripe") is catalog.get("Stripe")
    assert catalog.get("Stripe").credentials == ("SecretKey",)  # type: ignore[union-attr]
    assert catalog.get("Adyen").accepted_credentials == ("ApiKey", "MerchantAccount", "ShopperInteraction")  # type: ignore[union-attr]
    assert catalog.get("Elavon").credentials == ("MerchantId", "Password", "RebatePWD")  # type: ignore[union-attr]
    assert catalog.get("AuthorizeNet").credentials == ("ApiLoginId", "TransactionKey")  # type: ignore[union-attr]
    assert catalog.get("Worldpay").credentials == ("SecurenetId", "SecureNetKey")  # type: ignore[union-attr]
    first_data = catalog.get("FirstDataIPG")
    assert first_data is not None
    assert first_data.requires_certificate
    assert first_data.requires_client_ip
    amex = catalog.get("AMEX")
    assert amex is not None
    assert amex.min_my_ref == 6
    assert {"Charge", "Refund"} <= amex.unsupported
    assert catalog.get("NULLSuccess").always == "Success"  # type: ignore[union-attr]
    assert catalog.get("NULLFailure").always == "Rejected"  # type: ignore[union-attr]
    assert catalog.get("NULLSuccess").credentials == ()  # type: ignore[union-attr]
    for gateway in catalog:
        assert 7 <= gateway.authorization_days <= 30, gateway.name
        if not gateway.always:
            assert set(gateway.codes) >= REASONS, gateway.name
        assert gateway.code_for("SomethingNew") == gateway.codes["Rejected"]


def test_description_is_the_catalog_entry_shape() -> None:
    entry = load_catalog().get("Adyen").to_description()  # type: ignore[union-attr]
    assert set(entry) == {
        "name",
        "displayName",
        "paymentGatewayUrl",
        "description",
        "credentialsNames",
        "supportsNetworkToken",
    }
    assert entry["credentialsNames"] == ["ApiKey", "MerchantAccount", "ShopperInteraction"]


def _write(tmp_path: Path, mutate) -> Path:  # type: ignore[no-untyped-def]
    data = yaml.safe_load(CATALOG_PATH.read_text())
    mutate(data)
    path = tmp_path / "catalog.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


@pytest.mark.parametrize(
    ("mutate", "fragment"),
    [
        (lambda d: d["gateways"][2].pop("credentialsNames"), "Stripe: gateways[2]: 'credentialsNames' is a required"),
        (lambda d: d["gateways"][2].update(authorizationDays="week"), "Stripe: gateways[2].authorizationDays"),
        (lambda d: d["gateways"][3].update(colour="red"), "Adyen: gateways[3]: Additional properties"),
        (lambda d: d["gateways"][2]["codes"].pop("Success"), "'Success' is a required property"),
        (lambda d: d["gateways"].append(dict(d["gateways"][2])), "gateway Stripe is listed twice"),
        (lambda d: d["gateways"][4].update(unsupportedOperations=["Teleport"]), "unsupportedOperations[0]"),
    ],
)
def test_a_malformed_catalog_is_refused_clearly(tmp_path: Path, mutate, fragment: str) -> None:  # type: ignore[no-untyped-def]
    path = _write(tmp_path, mutate)
    with pytest.raises(CatalogError) as caught:
        load_catalog(path)
    assert str(path) in str(caught.value)
    assert fragment in str(caught.value)


def test_an_unreadable_catalog_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "catalog.yaml"
    path.write_text("gateways: [\n")
    with pytest.raises(CatalogError, match="cannot read the gateway catalog"):
        load_catalog(path)


# -- CONTRIBUTING's recipe "a gateway": data only ----------------------------------------
def test_recipe_a_gateway_added_by_data_alone_takes_accounts_and_charges(tmp_path: Path, make_app: Any) -> None:
    """The recipe followed once: a copy of catalog.yaml with one more entry (no code) is
    loaded, checked, and a charge goes through the new gateway in its own vocabulary."""
    data = yaml.safe_load(CATALOG_PATH.read_text(encoding="utf-8"))
    data["gateways"].append(
        {
            "name": "Examplepay",
            "displayName": "Examplepay",
            "paymentGatewayUrl": "https://examplepay.invalid",
            "description": "A gateway added by data in a test (CONTRIBUTING.md, How to add a gateway).",
            "credentialsNames": ["ShopId", "ShopSecret"],
            "supportsNetworkToken": False,
            "tokenizes": False,
            "authorizationDays": 5,
            "reference": {"prefix": "EXP-", "length": 12, "alphabet": "digits"},
            "authorizationCode": {"length": 4, "alphabet": "digits"},
            "codes": {
                "Success": {"code": "OK", "description": "Approved."},
                "Rejected": {"code": "NO", "description": "Declined."},
                "CardDeclined": {"code": "NO-CARD", "description": "The card was declined."},
                **{
                    code: {"code": code.upper(), "description": f"{code}."}
                    for code in (
                        "Accepted",
                        "TemporaryFailure",
                        "FatalFailure",
                        "NotImplemented",
                        "AuthenticationFailed",
                    )
                },
            },
            "response": {"ref": "{reference}", "result": "{gatewayResultCode}", "cents": "{amountMinor}"},
        }
    )
    path = tmp_path / "catalog.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    catalog = load_catalog(path)
    app = make_app()
    app.state.runtime.catalog = catalog  # the running emulator's catalog, as `payemu` loads it at start
    with TestClient(app, headers=SANDBOX) as client:
        credentials = [{"key": "shopid", "value": "s1"}, {"key": "ShopSecret", "value": "x"}]
        stored = client.put(
            "/PaymentGatewayAccounts/exampleMain", json={"paymentGatewayName": "examplepay", "credentials": credentials}
        )
        assert stored.status_code == 200, stored.text
        assert stored.json()["paymentGatewayName"] == "Examplepay"
        assert [c["key"] for c in stored.json()["credentials"]] == ["ShopId", "ShopSecret"]
        charge = {
            "amount": 12.5,
            "currency": "EUR",
            "paymentGatewayAccountName": "exampleMain",
            "card": {
                "cardNumber": "4111111111111111",
                "cardHolderName": "Ann Lee",
                "expirationMonth": 12,
                "expirationYear": 2039,
                "cvv": "123",
            },
        }
        answer = client.post("/PaymentGateway/charge", json=charge)
        assert answer.status_code == 200, answer.text
        result = answer.json()
        assert result["gatewayName"] == "Examplepay"
        assert result["gatewayResultCode"] == "OK"
        assert result["gatewayReference"].startswith("EXP-")
        assert len(result["authorizationCode"]) == 4
        assert result["customGatewayResponse"] == {
            "ref": result["gatewayReference"],
            "result": "OK",
            "cents": 1250,
        }
        unknown = client.put(
            "/PaymentGatewayAccounts/wrong", json={"paymentGatewayName": "Examplepay", "credentials": [{"key": "Nope"}]}
        )
        assert unknown.status_code == 400
        assert "ShopId, ShopSecret" in unknown.text
