"""``GET /PaymentGateway`` lists the catalog: every gateway file, with its credential names."""

from __future__ import annotations

from starlette.testclient import TestClient

from emulator.catalog.catalog import LEVEL_NOTES
from emulator.domain.datafiles import gateway_files
from tests.support.yamldata import load_yaml

# every gateway the public record names (gateway requirements guide, PCI Booking's guidance
# page, the library and portal pages)
NAMED = {
    "NULLSuccess",
    "NULLFailure",
    "3GDirectPay",
    "Adyen",
    "AdyenCheckout",
    "Airwallex",
    "AMEX",
    "AuthorizeNet",
    "Azul",
    "BAC",
    "Better",
    "Cardstream",
    "Caterpay",
    "Credorax",
    "Elavon",
    "FirstDataIPG",
    "Gateline",
    "Stripe",
    "Wirecard",
    "Worldpay",
    "Zeamster",
}


def test_lists_every_gateway_file(client: TestClient) -> None:
    response = client.get("/PaymentGateway")
    assert response.status_code == 200
    listed = response.json()
    data = [load_yaml(path.read_text(encoding="utf-8")) for path in gateway_files()]
    assert [g["name"] for g in listed] == [g["name"] for g in data]
    for entry, source in zip(listed, data, strict=True):
        assert entry == {
            "name": source["name"],
            "displayName": source["displayName"],
            "paymentGatewayUrl": source["paymentGatewayUrl"],
            # the file's description, then how much payemu knows of the gateway (its level)
            "description": f"{source['description']} payemu level {source['level']}: {LEVEL_NOTES[source['level']]}.",
            "credentialsNames": source["credentialsNames"],  # the required ones (the gateway-accounts guide)
            "supportsNetworkToken": source["supportsNetworkToken"],
        }
    assert len(listed) >= 25
    assert {g["name"] for g in listed} >= NAMED
    by_name = {g["name"]: g["credentialsNames"] for g in listed}
    assert by_name["Stripe"] == ["SecretKey"]
    assert by_name["NULLSuccess"] == []
    assert by_name["3GDirectPay"] == ["CompanyID", "ServiceType"]
    assert by_name["BAC"][:3] == ["TerminalID", "Username", "Password"]
    assert by_name["Better"][:2] == ["APIKey", "PartnerId"]
    assert by_name["Elavon"] == ["MerchantId", "Password", "RebatePWD"]
    # the required credentials only (the gateway-accounts guide's example: Adyen, ["ApiKey","MerchantAccount"])
    assert by_name["Adyen"] == ["ApiKey", "MerchantAccount"]
    assert by_name["AuthorizeNet"] == ["ApiLoginId", "TransactionKey"]
    assert not {"ShopperInteraction", "RecurringProcessingModel", "Currency"} & set(by_name["AdyenCheckout"])
    assert "CustomerID" not in by_name["Airwallex"]


def test_guessed_credential_names_are_served_with_their_label(client: TestClient) -> None:
    """The served schema labels the credential names payemu had to guess (x-payemu-source)."""
    document = client.get("/swagger/1.0/swagger.json")
    assert document.status_code == 200
    schemas = document.json()["components"]["schemas"]
    model = schemas["PayTools_Shared.Models.PaymentGateway.PaymentGatewayDescriptionModel"]
    assert "invented-credentials" in str(model["properties"]["credentialsNames"]["x-payemu-source"])
