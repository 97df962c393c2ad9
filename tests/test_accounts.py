"""Stored Payment Gateway Accounts: the store and its HTTP API."""

from __future__ import annotations

from datetime import timedelta

import pytest

from emulator import accounts
from emulator.config import KeySpec, Settings
from emulator.errors import ApiError
from emulator.gateways.catalog import load_catalog
from emulator.tenants import Tenant

CATALOG = load_catalog()


def _tenant(key: str = "k") -> Tenant:
    return Tenant(KeySpec(key, "u", 1, True), Settings(), 3)


# -- the store ---------------------------------------------------------------------------
def test_put_canonicalizes_gateway_and_keys() -> None:
    tenant = _tenant()
    body = {"paymentGatewayName": "adyen", "credentials": [
        {"key": "apikey", "value": "AQE1"}, {"key": "MERCHANTACCOUNT", "value": None},
        {"key": "shopperInteraction", "value": "Ecommerce"},
    ]}
    account = accounts.put(tenant, CATALOG, "adyenMain", body)
    assert account.gateway == "Adyen"
    assert account.credentials == [("ApiKey", "AQE1"), ("MerchantAccount", None), ("ShopperInteraction", "Ecommerce")]
    assert account.credential_map() == {"ApiKey": "AQE1", "MerchantAccount": None, "ShopperInteraction": "Ecommerce"}
    assert account.creation_time == tenant.now()
    assert tenant.accounts["adyenMain"] is account
    assert accounts.get(tenant, "adyenMain") is account
    assert accounts.get(tenant, "adyenmain") is None  # names are exact


def test_missing_required_credentials_are_stored() -> None:
    account = accounts.put(_tenant(), CATALOG, "elavon1", {"paymentGatewayName": "Elavon", "credentials": []})
    assert account.credential_map() == {}


def test_replace_resets_creation_time() -> None:
    tenant = _tenant()
    first = accounts.put(tenant, CATALOG, "main", {"paymentGatewayName": "Stripe", "credentials": []})
    tenant.clock.advance(timedelta(days=2))
    second = accounts.put(tenant, CATALOG, "main", {"paymentGatewayName": "NULLSuccess", "credentials": []})
    assert second.creation_time - first.creation_time == timedelta(days=2)
    assert accounts.listing(tenant) == [second]


def test_unknown_gateway_lists_the_known_ones() -> None:
    with pytest.raises(ApiError) as caught:
        accounts.put(_tenant(), CATALOG, "x1x", {"paymentGatewayName": "Nope", "credentials": []})
    assert caught.value.status == 400
    (entry,) = caught.value.body
    assert entry["fieldName"] == "paymentGatewayName"
    assert "'Nope'" in entry["errors"][0] and "Stripe" in entry["errors"][0] and "NULLSuccess" in entry["errors"][0]


def test_every_credential_problem_is_named() -> None:
    body = {"paymentGatewayName": "Stripe", "credentials": [
        {"key": "SecretKey", "value": "sk_test_1"}, {"key": "ApiKey", "value": "x"},
        {"key": "secretkey", "value": "y"}, {"key": None, "value": "z"}, {"value": "w"},
    ]}
    with pytest.raises(ApiError) as caught:
        accounts.put(_tenant(), CATALOG, "stripe1", body)
    errors = {e["fieldName"]: e["errors"][0] for e in caught.value.body}
    assert set(errors) == {"credentials[1].key", "credentials[2].key", "credentials[3].key", "credentials[4].key"}
    assert errors["credentials[1].key"] == "'ApiKey' is not a credential of Stripe. Stripe accepts: SecretKey."
    assert "more than once" in errors["credentials[2].key"]
    assert errors["credentials[3].key"].startswith("The Key field is required.")


def test_a_gateway_without_credentials_refuses_any() -> None:
    with pytest.raises(ApiError) as caught:
        accounts.put(_tenant(), CATALOG, "null1", {"paymentGatewayName": "NULLSuccess",
                                                   "credentials": [{"key": "SecretKey", "value": "x"}]})
    assert caught.value.body == [{"fieldName": "credentials[0].key", "errors": [
        "'SecretKey' is not a credential of NULLSuccess. NULLSuccess takes no credentials."]}]


def test_a_refused_put_keeps_the_old_account() -> None:
    tenant = _tenant()
    old = accounts.put(tenant, CATALOG, "main", {"paymentGatewayName": "Stripe", "credentials": []})
    with pytest.raises(ApiError):
        accounts.put(tenant, CATALOG, "main", {"paymentGatewayName": "Nope", "credentials": []})
    assert tenant.accounts["main"] is old


def test_require_listing_delete() -> None:
    tenant = _tenant()
    for name in ("zeta", "Alpha", "beta"):
        accounts.put(tenant, CATALOG, name, {"paymentGatewayName": "NULLSuccess", "credentials": []})
    assert [a.name for a in accounts.listing(tenant)] == ["Alpha", "beta", "zeta"]
    assert accounts.require(tenant, "beta").name == "beta"
    assert accounts.delete(tenant, "beta") is True
    assert accounts.delete(tenant, "beta") is False
    with pytest.raises(ApiError) as caught:
        accounts.require(tenant, "beta", "paymentGatewayAccountName")
    assert caught.value.status == 404
    assert caught.value.body == [{"fieldName": "paymentGatewayAccountName",
                                  "errors": ["No payment gateway account named beta."]}]


def test_output_models() -> None:
    tenant = _tenant()
    account = accounts.put(tenant, CATALOG, "stripe1", {"paymentGatewayName": "Stripe",
                                                        "credentials": [{"key": "SecretKey", "value": "sk"}]})
    assert account.to_full() == {
        "name": "stripe1", "creationTime": account.to_brief()["creationTime"], "paymentGatewayName": "Stripe",
        "credentials": [{"key": "SecretKey", "value": "sk"}],
    }
    assert set(account.to_brief()) == {"name", "paymentGatewayName", "creationTime"}
    assert account.to_brief()["creationTime"].endswith("Z")
