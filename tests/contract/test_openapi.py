"""The published schema holds everything the interface document names."""

from __future__ import annotations

import json
from typing import Any

import pytest
from openapi_spec_validator import validate

from emulator.contract.openapi import OpenApi, to_json_schema
from tests.support.paths import TESTS_DIR
from tests.support.yamldata import load_yaml

# What the interface document says (field tables, enumerations, limits), kept as data in
# the repository so that the suite needs nothing beside it.
FACTS: dict[str, Any] = load_yaml((TESTS_DIR / "data" / "interface-facts.yaml").read_text(encoding="utf-8"))


def _schemas(openapi: OpenApi) -> dict[str, Any]:
    return openapi.document["components"]["schemas"]


def _fields(heading: str) -> list[str]:
    return list(FACTS["fieldTables"][heading.removeprefix("### ")])


FIELD_TABLES = {
    "### OperationResult": ["Payments.OperationResult"],
    "### Card object": ["PayTools_Api.Models.CardInputModel"],
    "### PaymentGatewayAccount (inline credentials)": ["PayTools_Api.Models.PaymentGatewayAccount"],
    "### Stored Payment Gateway Account": ["PayTools_Api.Models.PaymentGatewayAccountFullOutputModel"],
    "### Gateway catalog entry": ["PayTools_Shared.Models.PaymentGateway.PaymentGatewayDescriptionModel"],
    "### ValidationErrorMessage": ["PayTools_Shared.Models.ValidationErrorMessage"],
    "### API key status": ["PayTools_Api.Models.AuthenticationResult"],
    "### eWallet session request": ["eWallet.Models.StartEWalletsSessionRequest"],
}


@pytest.mark.parametrize("heading", list(FIELD_TABLES))
def test_every_field_of_each_table(openapi: OpenApi, heading: str) -> None:
    fields = _fields(heading)
    assert fields, heading
    for component in FIELD_TABLES[heading]:
        properties = _schemas(openapi)[component]["properties"]
        assert set(fields) <= set(properties), (component, set(fields) - set(properties))


def test_string_token_fields(openapi: OpenApi) -> None:
    schemas = _schemas(openapi)
    assert set(_fields("### String token")) == set(schemas["PayTools_Api.Models.StringTokenOutputModel"]["properties"])
    assert set(schemas["PayTools_Api.Models.StringTokenMetaDataOutputModel"]["properties"]) == {
        "token",
        "createTime",
    }


def test_operation_result_carries_reject_reason(openapi: OpenApi) -> None:
    result = _schemas(openapi)["Payments.OperationResult"]
    assert result["additionalProperties"] is False
    assert result["properties"]["rejectReasonCode"]["nullable"] is True
    assert {"currency", "amount", "operationType", "operationResultCode"} <= set(result["required"])


def test_common_payment_fields(openapi: OpenApi) -> None:
    fields = _fields("### Common payment request fields")
    request = _schemas(openapi)["PayTools_Api.Models.AuthRequestModel"]["properties"]
    assert set(fields) - {"refTransId"} <= set(request)
    capture = _schemas(openapi)["PayTools_Api.Models.CaptureVoidRequestModel"]["properties"]
    assert "refTransId" in capture


ENUMS = {
    "Operation (`operationType`)": "Payments.Operation",
    "Result (`operationResultCode`)": "Payments.Result",
    "Network token brand (`networkTokenBrand`)": "Payments.NetworkTokenSchemes",
    "eWallet operation (`operation`)": "eWallet.Enums.Operation",
    "eWallet mode (`mode`)": "eWallet.Enums.Mode",
    "Card brand (`allowedBrands`, `threeDsBrands`, stored card `brand`)": "Payments.CardTypes",
}


def test_every_enumeration(openapi: OpenApi) -> None:
    for title, component in ENUMS.items():
        expected = FACTS["enumerations"][title]
        assert _schemas(openapi)[component]["enum"] == expected, component


def test_every_currency(openapi: OpenApi) -> None:
    codes = FACTS["currencies"]
    assert len(codes) == 179
    assert _schemas(openapi)["Payments.CurrencyCode"]["enum"] == codes


def test_every_endpoint_of_the_document(openapi: OpenApi) -> None:
    named = {tuple(endpoint.split(" ", 1)) for endpoint in FACTS["endpoints"]}
    assert len(named) == 18  # the document names 18; tokenize and validateResults have no path there
    served = {(op.method, op.path) for op in openapi.operations.values()}
    assert named <= served, named - served
    assert ("POST", "/PaymentGateway/tokenize") in served
    assert ("POST", "/EWalletOperations/validateResults") in served


def test_limits(openapi: OpenApi) -> None:
    limits = FACTS["limits"]
    schemas = _schemas(openapi)
    payload = schemas["PayTools_Api.Models.StringTokenIntputModel"]["properties"]["payload"]
    assert (payload["minLength"], payload["maxLength"]) == tuple(limits["stringTokenPayload"].values())
    auth = schemas["PayTools_Api.Models.AuthRequestModel"]["properties"]
    assert auth["certificateName"]["maxLength"] == limits["certificateName"]["maxLength"]
    assert auth["currency"]["minLength"] == limits["paymentCurrency"]["minLength"]
    session = schemas["eWallet.Models.StartEWalletsSessionRequest"]["properties"]
    assert session["storedCards"]["maxItems"] == limits["sessionStoredCards"]["maxItems"]
    params = {(op.path, p.name): p for op in openapi.operations.values() for p in op.parameters}
    name = openapi.find("GET", "/PaymentGatewayAccounts/{name}")
    assert name is not None
    raw = name.raw["parameters"][0]["schema"]["pattern"]
    assert raw == limits["gatewayAccountName"]["pattern"]
    token = params[("/StringTokens/{token}", "token")]
    length = limits["stringTokenId"]["length"]
    assert token.validator.is_valid("a" * length)
    assert not token.validator.is_valid("a" * (length - 1))


def test_info_and_security(openapi: OpenApi) -> None:
    info = openapi.document["info"]
    assert info["version"] == "Prod"
    assert "1.0.11.6" in info["description"]
    scheme = openapi.document["components"]["securitySchemes"]["ApiKeyAuth"]
    assert (scheme["type"], scheme["in"], scheme["name"]) == ("apiKey", "header", "X-Api-Key")
    assert all(op.secured for op in openapi.operations.values())


def test_document_is_valid_openapi(openapi: OpenApi) -> None:
    validate(openapi.document)


def test_conversion_of_nullable_forms() -> None:
    assert to_json_schema({"type": "string", "nullable": True}) == {"type": ["string", "null"]}
    assert to_json_schema({"$ref": "#/components/schemas/X", "description": "d"}) == {"$ref": "#/definitions/X"}
    converted = to_json_schema({"allOf": [{"$ref": "#/components/schemas/X"}], "nullable": True})
    assert converted == {"anyOf": [{"type": "null"}, {"allOf": [{"$ref": "#/definitions/X"}]}]}
    assert to_json_schema({"nullable": True}) == {}
    assert to_json_schema({"type": "integer", "format": "int32"}) == {"type": "integer"}


def test_nested_models_are_bare_references(openapi: OpenApi) -> None:
    """As the published export writes them: no ``anyOf [$ref, {enum: [null]}]`` anywhere."""
    text = json.dumps(openapi.document)
    assert '{"enum": [null]}' not in text
    assert "ValidationErrorMessageList" not in text
