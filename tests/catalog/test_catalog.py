"""The gateway catalog is data, checked when loaded."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml
from starlette.testclient import TestClient

from emulator.catalog.catalog import CATALOG_PATH, CatalogError, GatewaySpec
from emulator.catalog.loader import load_catalog
from emulator.domain.datafiles import gateway_files
from emulator.scenarios import ScenarioBook, ScenarioError
from emulator.stores import accounts as accounts_module
from tests.conftest import SANDBOX
from tests.support.paths import TESTS_DIR
from tests.support.yamldata import load_yaml

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
    assert not catalog.get("Cardstream").requires_order_desc  # type: ignore[union-attr]  # it uses orderDesc
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
    assert entry["credentialsNames"] == ["ApiKey", "MerchantAccount"]  # the gateway-accounts guide's example


def _copy(tmp_path: Path) -> Path:
    """A copy of the shipped catalog (the shared file and every gateway file) to break."""
    shutil.copytree(CATALOG_PATH.parent / "gateways", tmp_path / "gateways")
    shutil.copy(CATALOG_PATH, tmp_path / "catalog.yaml")
    return tmp_path / "catalog.yaml"


@pytest.mark.parametrize(
    ("name", "old", "new", "at", "reason"),
    [  # `at`: the text starting the line the problem is reported at (None: the file's first line)
        ("Stripe", "credentialsNames: [SecretKey]\n", "", None, "'credentialsNames' is a required property"),
        ("Stripe", "authorizationDays: 7", "authorizationDays: week", "authorizationDays:", "is not of type"),
        (
            "Adyen",
            "tokenizes: true",
            "tokenizes: true\ncolour: red",
            "colour:",
            "unknown key 'colour' (allowed: name, ",
        ),
        (
            "Stripe",
            "  Success: {code: succeeded",
            "  Successful: {code: succeeded",
            "codes:",
            "'Success' is a required",
        ),
        ("AMEX", "unsupportedOperations: [Charge", "unsupportedOperations: [Teleport", "unsupportedOperations:", "[0]"),
        (
            "BAC",
            "  requires: {source:",
            "  requirements: {source:",
            "  requirements:",
            "unknown key 'requirements'; did you mean 'requires'?",
        ),
        (
            "Stripe",
            "  credentialsNames: {source:",
            "  # credentialsNames: {source:",
            "credentialsNames:",
            "no provenance",
        ),
        ("Zeamster", "name: Zeamster", "name: Zeemster", "name:", "is not the file's name"),
        (
            "Stripe",
            "  origin: https://docs.stripe.com/testing\n",
            "  origin: payemu\n",
            "  origin: payemu",
            "must be a URL",
        ),
    ],
)
def test_a_bad_gateway_file_is_refused_with_file_line_and_reason(
    tmp_path: Path, name: str, old: str, new: str, at: str | None, reason: str
) -> None:
    path = _copy(tmp_path)
    broken = tmp_path / "gateways" / f"{name}.yaml"
    text = broken.read_text(encoding="utf-8")
    assert old in text, old
    text = text.replace(old, new, 1)
    broken.write_text(text, encoding="utf-8")
    lines = text.splitlines()
    line = 1 if at is None else next(i for i, found in enumerate(lines, start=1) if found.startswith(at))
    with pytest.raises((CatalogError, ScenarioError)) as caught:
        load_catalog(path)
        ScenarioBook(gateways=gateway_files(tmp_path / "gateways"))
    message = str(caught.value)
    assert f"{broken}:{line}" in message, message
    assert reason in message, message


def test_a_gateway_defined_twice_is_refused(tmp_path: Path) -> None:
    path = _copy(tmp_path)
    shutil.copy(tmp_path / "gateways" / "Stripe.yaml", tmp_path / "gateways" / "stripe.yaml")
    with pytest.raises(CatalogError, match=r"is not the file's name|also defined in"):
        load_catalog(path)


def test_an_unreadable_gateway_file_is_refused(tmp_path: Path) -> None:
    path = _copy(tmp_path)
    (tmp_path / "gateways" / "Broken.yaml").write_text("name: [\n")
    with pytest.raises(CatalogError, match=r"Broken.yaml:\d+: cannot read the gateway file"):
        load_catalog(path)


def test_an_unreadable_catalog_is_refused(tmp_path: Path) -> None:
    path = _copy(tmp_path)
    path.write_text("defaults: [\n")
    with pytest.raises(CatalogError, match="cannot read the gateway catalog"):
        load_catalog(path)


# -- CONTRIBUTING's recipe "a gateway": data only ----------------------------------------
def test_recipe_a_gateway_added_by_data_alone_takes_accounts_and_charges(tmp_path: Path, make_app: Any) -> None:
    """The recipe followed once: one more gateway file (no code) is loaded, checked, and a
    charge goes through the new gateway in its own vocabulary."""
    path = _copy(tmp_path)
    (tmp_path / "gateways" / "Examplepay.yaml").write_text(
        yaml.safe_dump(
            {
                "name": "Examplepay",
                "displayName": "Examplepay",
                "level": "credentials",
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
                "provenance": {
                    "name": {"source": "https://examplepay.invalid/docs"},
                    "credentialsNames": {"source": "https://examplepay.invalid/docs"},
                    **{
                        fact: {"guess": "a test gateway"}
                        for fact in (
                            "supportsNetworkToken",
                            "tokenizes",
                            "authorizationDays",
                            "reference",
                            "authorizationCode",
                            "codes",
                            "response",
                        )
                    },
                },
            },
            sort_keys=False,
        ),
        encoding="utf-8",
    )
    catalog = load_catalog(path)
    assert catalog.get("Examplepay") is not None
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


SUPPORTED = load_yaml((TESTS_DIR / "data" / "supported-gateways.yaml").read_text(encoding="utf-8"))


def test_every_gateway_of_the_public_list_is_served(client: TestClient) -> None:
    """Each gateway of PCI Booking's supported list is a catalog entry of ``GET /PaymentGateway``
    (its storing and charging: tests/catalog/test_gateway_cases.py); its two own regions are not gateways."""
    served = {entry["name"] for entry in client.get("/PaymentGateway").json()}
    listed = [item for item in SUPPORTED["gateways"] if "gateway" in item]
    assert len(listed) == 98
    assert sorted(item["shown"] for item in SUPPORTED["gateways"] if "notAGateway" in item) == [
        "PCI Booking EU",
        "PCI Booking USA",
    ]
    for item in listed:
        assert item["gateway"] in served, item["shown"]


@pytest.mark.parametrize("gateway", list(load_catalog()), ids=load_catalog().names())
def test_every_gateway_file_holds_what_its_level_says(gateway: GatewaySpec) -> None:
    """sandbox: its own test inputs (each trigger's origin is a public page: the scenario loader
    refuses one without) or a mock's documented answer; credentials: credential names from the
    record and no test inputs; listed: neither."""
    assert gateway.level == gateway.held_level, f"{gateway.file}: level {gateway.level}, holds {gateway.held_level}"
    if gateway.level == "credentials":
        assert gateway.origin("credentialsNames")[0] == "source", gateway.name


def test_the_catalog_answer_carries_each_gateway_level(client: TestClient) -> None:
    entries = {entry["name"]: entry for entry in client.get("/PaymentGateway").json()}
    assert entries["Stripe"]["description"].endswith(
        "payemu level sandbox: its documented test inputs are modelled, each with its source."
    )
    assert "payemu level credentials:" in entries["BAC"]["description"]
    assert "payemu level listed: only its name is public" in entries["Tyro"]["description"]
    assert entries["Tyro"]["credentialsNames"] == []


def test_a_listed_gateway_takes_any_credential_names_and_the_log_says_so_once(
    client: TestClient, caplog: pytest.LogCaptureFixture
) -> None:
    body = {"paymentGatewayName": "Ryft", "credentials": [{"key": "SecretKey", "value": "sk_anything"}]}
    accounts_module._NOTED.discard("Ryft")  # as in a fresh process
    with caplog.at_level("WARNING", logger="payemu"):
        first = client.put("/PaymentGatewayAccounts/ryftA", json=body)
        second = client.put("/PaymentGatewayAccounts/ryftB", json=body)
    assert first.status_code == 200, first.text
    assert second.json()["credentials"] == [{"key": "SecretKey", "value": "sk_anything"}]
    notes = [r.getMessage() for r in caplog.records if "Ryft" in r.getMessage()]
    assert len(notes) == 1, notes
    assert "level listed" in notes[0]
    refused = client.put(
        "/PaymentGatewayAccounts/stripeA",
        json={"paymentGatewayName": "Stripe", "credentials": [{"key": "Anything", "value": "x"}]},
    )
    assert refused.status_code == 400
    assert "is not a credential of Stripe" in refused.text
