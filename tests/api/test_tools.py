"""The card tools over HTTP: /Tools/country, /brand, /iin, /luhn and POST /Tools/validate."""

from __future__ import annotations

from typing import Any

import pytest
from starlette.testclient import TestClient


def _fields(response: Any) -> list[str]:
    return [entry["fieldName"] for entry in response.json()]


# -- GET /Tools/country --------------------------------------------------------------------
@pytest.mark.parametrize(
    ("iin", "country"),
    [
        ("411111", "US"),
        ("42424242", "US"),
        ("40000082600", "GB"),
        ("353011", "JP"),
        ("378282", "US"),
        ("636297", "BR"),
        ("355555", "JP"),
    ],
)
def test_country(client: TestClient, iin: str, country: str) -> None:
    response = client.get("/Tools/country", params={"iin": iin})
    assert response.status_code == 200
    assert response.json() == {"countryCode": country}


@pytest.mark.parametrize("iin", ["455555", "000000", "99999999999"])
def test_country_unknown_bin(client: TestClient, iin: str) -> None:
    response = client.get("/Tools/country", params={"iin": iin})
    assert response.status_code == 404
    assert response.json() == [{"fieldName": "iin", "errors": [f"No issuing country is known for BIN {iin}."]}]


BAD_IINS = ["", "41111", "411111111111", "41111a", "4111 11", "-411111"]


@pytest.mark.parametrize("path", ["/Tools/country", "/Tools/brand", "/Tools/iin"])
@pytest.mark.parametrize("iin", [*BAD_IINS, None])
def test_iin_parameter_limits(client: TestClient, path: str, iin: str | None) -> None:
    response = client.get(path, params={} if iin is None else {"iin": iin})
    assert response.status_code == 400
    assert _fields(response) == ["iin"]


@pytest.mark.parametrize("path", ["/Tools/country", "/Tools/brand", "/Tools/iin"])
@pytest.mark.parametrize("iin", ["411111", "41111111111"])
def test_iin_parameter_edges_that_pass(client: TestClient, path: str, iin: str) -> None:
    assert client.get(path, params={"iin": iin}).status_code == 200


# -- GET /Tools/brand and /Tools/iin ------------------------------------------------------------
@pytest.mark.parametrize(
    ("iin", "brand", "logo"),
    [
        ("411111", "VISA", "visa.svg"),
        ("491761", "ELECTRON", "visa-electron.svg"),
        ("222300", "MASTERCARD", "mastercard.svg"),
        ("371449", "AMERICAN EXPRESS", "amex.svg"),
        ("601111", "DISCOVER", "discover.svg"),
        ("362272", "DINERS CLUB", "diners.svg"),
        ("620000", "UNIONPAY", "unionpay.svg"),
        ("675964", "MAESTRO", "maestro.svg"),
    ],
)
def test_brand(client: TestClient, iin: str, brand: str, logo: str) -> None:
    response = client.get("/Tools/brand", params={"iin": iin})
    assert response.status_code == 200
    assert response.json() == {"brand": brand, "brandLogoUrl": f"https://payemu.invalid/logos/{logo}"}


def test_brand_unknown(client: TestClient) -> None:
    assert client.get("/Tools/brand", params={"iin": "000000"}).json() == {"brand": None, "brandLogoUrl": None}


def test_iin(client: TestClient) -> None:
    response = client.get("/Tools/iin", params={"iin": "40000082"})
    assert response.status_code == 200
    assert response.json() == {
        "bin": "40000082",
        "cardBrand": "VISA",
        "cardType": "DEBIT",
        "category": "CLASSIC",
        "issuingOrganization": "Payemu Test Bank UK",
        "countryCode": "GB",
        "brandLogoUrl": "https://payemu.invalid/logos/visa.svg",
    }
    unknown = client.get("/Tools/iin", params={"iin": "455555"}).json()
    assert unknown["cardBrand"] == "VISA"
    assert unknown["countryCode"] is None
    assert unknown["issuingOrganization"] is None


# -- GET /Tools/luhn -----------------------------------------------------------------------
def test_luhn(client: TestClient) -> None:
    valid = client.get("/Tools/luhn", params={"number": "4111111111111111"})
    assert valid.status_code == 200
    # iinData is a bare reference (the export's convention): left out rather than null
    assert valid.json() == {"luhnValid": True, "error": None}
    invalid = client.get("/Tools/luhn", params={"number": "4111111111111112", "metaData": "false"})
    assert invalid.json() == {"luhnValid": False, "error": None}


def test_luhn_with_metadata(client: TestClient) -> None:
    body = client.get("/Tools/luhn", params={"number": "5105105105105100", "metaData": "TRUE"}).json()
    assert body["luhnValid"] is True
    assert body["error"] is None
    assert body["iinData"]["bin"] == "510510"
    assert body["iinData"]["category"] == "PREPAID"
    assert body["iinData"]["countryCode"] == "US"


def test_luhn_reports_a_length_the_brand_never_uses(client: TestClient) -> None:
    body = client.get("/Tools/luhn", params={"number": "37828224631000"}).json()
    assert body["error"] == "The number has 14 digits; AMEX card numbers have 15."


@pytest.mark.parametrize("number", ["12345674", "4111111111111111111", "0000000000000000000"])
def test_luhn_length_edges_that_pass(client: TestClient, number: str) -> None:
    assert client.get("/Tools/luhn", params={"number": number}).status_code == 200


@pytest.mark.parametrize(
    ("params", "fields"),
    [
        ({"number": "1234567"}, ["number"]),
        ({"number": "4" * 20}, ["number"]),
        ({"number": "4111-1111-"}, ["number"]),
        ({}, ["number"]),
        ({"number": "4111111111111111", "metaData": "yes"}, ["metaData"]),
    ],
)
def test_luhn_bad_input(client: TestClient, params: dict[str, str], fields: list[str]) -> None:
    response = client.get("/Tools/luhn", params=params)
    assert response.status_code == 400
    assert _fields(response) == fields


def test_luhn_number_is_masked_in_the_journal(client: TestClient) -> None:
    client.get("/Tools/luhn", params={"number": "4111111111111111"})
    entry = list(client.app.state.runtime.tenants.get("sandbox-api-key").journal)[-1]
    assert "4111111111111111" not in entry["query"]


# -- POST /Tools/validate ----------------------------------------------------------------------
@pytest.mark.parametrize(
    ("iin", "ip", "billing", "level", "by_ip", "proxy"),
    [
        ("411111", "203.0.113.7", "US", "VeryLow", "US", False),
        ("411111", "198.51.100.7", "US", "Low", "GB", False),
        ("411111", "203.0.113.7", "GB", "Low", "US", False),
        ("411111", "198.51.100.7", "GB", "High", "GB", False),
        ("411111", "198.51.100.7", "DE", "VeryHigh", "GB", False),
        ("411111", "192.0.2.200", "US", "VeryHigh", None, True),
        ("411111", "10.1.2.3", "US", "Low", None, False),
        ("455555", "203.0.113.7", "US", None, "US", False),
    ],
)
def test_validate(
    client: TestClient, iin: str, ip: str, billing: str, level: str | None, by_ip: str | None, proxy: bool
) -> None:
    response = client.post("/Tools/validate", params={"iin": iin}, json={"clientIPAddress": ip, "countryCode": billing})
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["riskLevel"] == level
    assert body["countryByIP"] == by_ip
    assert body["anonymousProxyUsed"] is proxy
    assert body["countryFromBillingAddress"] == billing
    assert body["description"]


def test_validate_reports_the_card(client: TestClient) -> None:
    body = client.post(
        "/Tools/validate",
        params={"iin": "378734"},
        json={"clientIPAddress": "203.0.113.7", "countryCode": "US", "city": "Boston"},
    ).json()
    assert body == {
        "description": "The card, the IP address and the billing address are all from US.",
        "riskLevel": "VeryLow",
        "cardBrand": "AMERICAN EXPRESS",
        "cardType": "CREDIT",
        "cardCategory": "CORPORATE",
        "issuerName": "American Express Test Issuer",
        "issuerCountry": "US",
        "countryByIP": "US",
        "countryFromBillingAddress": "US",
        "anonymousProxyUsed": False,
    }


@pytest.mark.parametrize(
    ("params", "body", "fields"),
    [
        ({"iin": "411111"}, {"clientIPAddress": "not-an-ip", "countryCode": "US"}, ["clientIPAddress"]),
        ({"iin": "411111"}, {"clientIPAddress": "", "countryCode": "US"}, ["clientIPAddress"]),
        ({"iin": "411111"}, {"clientIPAddress": "1" * 65, "countryCode": "US"}, ["clientIPAddress"]),
        ({"iin": "411111"}, {"clientIPAddress": "1" * 64, "countryCode": "US"}, ["clientIPAddress"]),
        ({"iin": "411111"}, {"countryCode": "US"}, ["clientIPAddress"]),
        ({"iin": "411111"}, {"clientIPAddress": "203.0.113.7", "countryCode": "usa"}, ["countryCode"]),
        ({"iin": "411111"}, {"clientIPAddress": "203.0.113.7"}, ["countryCode"]),
        ({"iin": "4111"}, {"clientIPAddress": "203.0.113.7", "countryCode": "US"}, ["iin"]),
        ({}, {"clientIPAddress": "203.0.113.7", "countryCode": "US"}, ["iin"]),
    ],
)
def test_validate_bad_input(
    client: TestClient, params: dict[str, str], body: dict[str, Any], fields: list[str]
) -> None:
    response = client.post("/Tools/validate", params=params, json=body)
    assert response.status_code == 400, response.text
    assert _fields(response) == fields


def test_validate_needs_a_body(client: TestClient) -> None:
    response = client.post("/Tools/validate", params={"iin": "411111"})
    assert response.status_code == 400
    assert _fields(response) == ["body"]


def test_tools_need_a_key(anon: TestClient) -> None:
    for path in (
        "/Tools/country?iin=411111",
        "/Tools/brand?iin=411111",
        "/Tools/iin?iin=411111",
        "/Tools/luhn?number=4111111111111111",
    ):
        response = anon.get(path)
        assert response.status_code == 401
        assert _fields(response) == ["X-Api-Key"]


@pytest.mark.parametrize("number", ["4111 1111 1111 1111", "4111-1111-1111-1111", "4111 1111-1111 1111"])
def test_luhn_reads_a_number_written_in_groups(client: TestClient, number: str) -> None:
    """The tools reference writes card numbers in groups; spaces and dashes are dropped."""
    answer = client.get("/Tools/luhn", params={"number": number, "metaData": "true"})
    assert answer.status_code == 200
    assert answer.json()["luhnValid"] is True
    assert answer.json()["iinData"]["cardBrand"] == "VISA"


@pytest.mark.parametrize("number", ["4111x1111", "41 11", "4111--1111-1111-1111-11111"])
def test_luhn_names_a_number_that_is_not_digits(client: TestClient, number: str) -> None:
    answer = client.get("/Tools/luhn", params={"number": number})
    assert answer.status_code == 400
    assert [e["fieldName"] for e in answer.json()] == ["number"]
