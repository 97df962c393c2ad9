"""Stored Payment Gateway Accounts: the store and its HTTP API."""

from __future__ import annotations

from datetime import timedelta

import pytest
from starlette.testclient import TestClient

from emulator.api import accounts as api_accounts
from emulator.catalog.loader import load_catalog
from emulator.domain.errors import ApiError
from emulator.stores import accounts
from tests.conftest import LIVE, SANDBOX, bare_tenant
from tests.support.bodies import account

CATALOG = load_catalog()


# -- the store ---------------------------------------------------------------------------
def test_put_canonicalizes_gateway_and_keys() -> None:
    tenant = bare_tenant()
    body = {
        "paymentGatewayName": "adyen",
        "credentials": [
            {"key": "apikey", "value": "AQE1"},
            {"key": "MERCHANTACCOUNT", "value": None},
            {"key": "shopperInteraction", "value": "Ecommerce"},
        ],
    }
    account = accounts.put(tenant, CATALOG, "adyenMain", body)
    assert account.gateway == "Adyen"
    assert account.credentials == [("ApiKey", "AQE1"), ("MerchantAccount", None), ("ShopperInteraction", "Ecommerce")]
    assert account.credential_map() == {"ApiKey": "AQE1", "MerchantAccount": None, "ShopperInteraction": "Ecommerce"}
    assert account.creation_time == tenant.now()
    assert tenant.accounts["adyenMain"] is account
    assert tenant.accounts.get("adyenMain") is account
    assert tenant.accounts.get("adyenmain") is None  # names are exact


def test_missing_required_credentials_are_stored() -> None:
    account = accounts.put(bare_tenant(), CATALOG, "elavon1", {"paymentGatewayName": "Elavon", "credentials": []})
    assert account.credential_map() == {}


def test_replace_resets_creation_time() -> None:
    tenant = bare_tenant()
    first = accounts.put(tenant, CATALOG, "main", {"paymentGatewayName": "Stripe", "credentials": []})
    tenant.clock.advance(timedelta(days=2))
    second = accounts.put(tenant, CATALOG, "main", {"paymentGatewayName": "NULLSuccess", "credentials": []})
    assert second.creation_time - first.creation_time == timedelta(days=2)
    assert tenant.accounts.listing() == [second]


def test_unknown_gateway_lists_the_known_ones() -> None:
    with pytest.raises(ApiError) as caught:
        accounts.put(bare_tenant(), CATALOG, "x1x", {"paymentGatewayName": "Nope", "credentials": []})
    assert caught.value.status == 400
    (entry,) = caught.value.body
    assert entry["fieldName"] == "paymentGatewayName"
    assert "'Nope'" in entry["errors"][0]
    assert f"GET /PaymentGateway lists the {len(CATALOG)} known gateways." in entry["errors"][0]
    with pytest.raises(ApiError) as near:
        accounts.put(bare_tenant(), CATALOG, "x1x", {"paymentGatewayName": "strpe", "credentials": []})
    assert "Unknown payment gateway 'strpe'. Did you mean Stripe?" in near.value.body[0]["errors"][0]


def test_every_credential_problem_is_named() -> None:
    body = {
        "paymentGatewayName": "Stripe",
        "credentials": [
            {"key": "SecretKey", "value": "sk_test_1"},
            {"key": "ApiKey", "value": "x"},
            {"key": "secretkey", "value": "y"},
            {"key": None, "value": "z"},
            {"value": "w"},
        ],
    }
    with pytest.raises(ApiError) as caught:
        accounts.put(bare_tenant(), CATALOG, "stripe1", body)
    errors = {e["fieldName"]: e["errors"][0] for e in caught.value.body}
    assert set(errors) == {"credentials[1].key", "credentials[2].key", "credentials[3].key", "credentials[4].key"}
    assert errors["credentials[1].key"] == "'ApiKey' is not a credential of Stripe. Stripe accepts: SecretKey."
    assert "more than once" in errors["credentials[2].key"]
    assert errors["credentials[3].key"].startswith("The Key field is required.")


def test_a_gateway_without_credentials_refuses_any() -> None:
    with pytest.raises(ApiError) as caught:
        accounts.put(
            bare_tenant(),
            CATALOG,
            "null1",
            {"paymentGatewayName": "NULLSuccess", "credentials": [{"key": "SecretKey", "value": "x"}]},
        )
    assert caught.value.body == [
        {
            "fieldName": "credentials[0].key",
            "errors": ["'SecretKey' is not a credential of NULLSuccess. NULLSuccess takes no credentials."],
        }
    ]


def test_a_refused_put_keeps_the_old_account() -> None:
    tenant = bare_tenant()
    old = accounts.put(tenant, CATALOG, "main", {"paymentGatewayName": "Stripe", "credentials": []})
    with pytest.raises(ApiError):
        accounts.put(tenant, CATALOG, "main", {"paymentGatewayName": "Nope", "credentials": []})
    assert tenant.accounts["main"] is old


def test_require_listing_delete() -> None:
    tenant = bare_tenant()
    for name in ("zeta", "Alpha", "beta"):
        accounts.put(tenant, CATALOG, name, {"paymentGatewayName": "NULLSuccess", "credentials": []})
    assert [a.name for a in tenant.accounts.listing()] == ["Alpha", "beta", "zeta"]
    assert tenant.accounts.require("beta").name == "beta"
    assert tenant.accounts.delete("beta") is True
    assert tenant.accounts.delete("beta") is False
    with pytest.raises(ApiError) as caught:
        tenant.accounts.require("beta", "paymentGatewayAccountName")
    assert caught.value.status == 404
    assert caught.value.body == [
        {"fieldName": "paymentGatewayAccountName", "errors": ["No payment gateway account named beta."]}
    ]


def test_output_models() -> None:
    tenant = bare_tenant()
    account = accounts.put(
        tenant,
        CATALOG,
        "stripe1",
        {"paymentGatewayName": "Stripe", "credentials": [{"key": "SecretKey", "value": "sk_test_sk"}]},
    )
    assert api_accounts.full(account) == {
        "name": "stripe1",
        "creationTime": api_accounts.brief(account)["creationTime"],
        "paymentGatewayName": "Stripe",
        "credentials": [{"key": "SecretKey", "value": "sk_test_sk"}],
    }
    assert set(api_accounts.brief(account)) == {"name", "paymentGatewayName", "creationTime"}
    assert api_accounts.brief(account)["creationTime"].endswith("Z")


# -- the HTTP API --------------------------------------------------------------------------
STRIPE = account("Stripe", SecretKey="sk_test_abc")


def test_put_get_list_delete(client: TestClient) -> None:
    put = client.put("/PaymentGatewayAccounts/stripeprod", json=STRIPE)
    assert put.status_code == 200, put.text
    full = put.json()
    assert full["name"] == "stripeprod"
    assert full["paymentGatewayName"] == "Stripe"
    assert full["credentials"] == [{"key": "SecretKey", "value": "sk_test_abc"}]
    assert client.get("/PaymentGatewayAccounts/stripeprod").json() == full
    listed = client.get("/PaymentGatewayAccounts")
    assert listed.status_code == 200
    brief = {"name": "stripeprod", "paymentGatewayName": "Stripe", "creationTime": full["creationTime"]}
    assert listed.json() == [brief]
    deleted = client.delete("/PaymentGatewayAccounts/stripeprod")
    assert deleted.status_code == 200
    assert deleted.content == b""
    for method in ("GET", "DELETE"):
        gone = client.request(method, "/PaymentGatewayAccounts/stripeprod")
        assert gone.status_code == 404
        assert gone.json() == [{"fieldName": "name", "errors": ["No payment gateway account named stripeprod."]}]
    assert client.get("/PaymentGatewayAccounts").json() == []


def test_an_empty_list(client: TestClient) -> None:
    response = client.get("/PaymentGatewayAccounts")
    assert response.status_code == 200
    assert response.json() == []


def test_pascal_case_keys_and_gateway_case(client: TestClient) -> None:
    body = {
        "PaymentGatewayName": "authorizenet",
        "Credentials": [{"Key": "apiloginid", "Value": "login"}, {"KEY": "TransactionKey", "VALUE": "tk"}],
    }
    response = client.put("/PaymentGatewayAccounts/anet1", json=body)
    assert response.status_code == 200, response.text
    assert response.json()["paymentGatewayName"] == "AuthorizeNet"
    assert response.json()["credentials"] == [
        {"key": "ApiLoginId", "value": "login"},
        {"key": "TransactionKey", "value": "tk"},
    ]


def test_replace_answers_the_new_account(make_app) -> None:  # type: ignore[no-untyped-def]
    with TestClient(make_app(seed=5), headers=SANDBOX) as client:
        first = client.put("/PaymentGatewayAccounts/main", json=STRIPE).json()
        client.app.state.runtime.tenants.get("sandbox-api-key").clock.advance(timedelta(hours=1))
        null = {"paymentGatewayName": "NULLFailure", "credentials": []}
        second = client.put("/PaymentGatewayAccounts/main", json=null)
        assert second.status_code == 200
        assert second.json()["paymentGatewayName"] == "NULLFailure"
        assert second.json()["credentials"] == []
        assert second.json()["creationTime"] > first["creationTime"]
        assert len(client.get("/PaymentGatewayAccounts").json()) == 1


@pytest.mark.parametrize("name", ["abc", "A" * 64, "Mixed09Case"])
def test_name_limits_that_pass(client: TestClient, name: str) -> None:
    assert client.put(f"/PaymentGatewayAccounts/{name}", json=STRIPE).status_code == 200
    assert client.get(f"/PaymentGatewayAccounts/{name}").json()["name"] == name
    assert client.delete(f"/PaymentGatewayAccounts/{name}").status_code == 200


@pytest.mark.parametrize("name", ["ab", "A" * 65, "with-hyphen", "under_score", "sp%20ace"])
@pytest.mark.parametrize("method", ["GET", "PUT", "DELETE"])
def test_name_limits_that_fail(client: TestClient, name: str, method: str) -> None:
    response = client.request(method, f"/PaymentGatewayAccounts/{name}", json=STRIPE if method == "PUT" else None)
    assert response.status_code == 400
    assert [e["fieldName"] for e in response.json()] == ["name"]


@pytest.mark.parametrize(
    ("body", "fields"),
    [
        ({"paymentGatewayName": "Bitpal", "credentials": []}, ["paymentGatewayName"]),
        ({"paymentGatewayName": "", "credentials": []}, ["paymentGatewayName"]),
        ({"paymentGatewayName": "Stripe"}, ["credentials"]),
        ({"paymentGatewayName": "Stripe", "credentials": [{"key": "Password", "value": "x"}]}, ["credentials[0].key"]),
        (
            {
                "paymentGatewayName": "Stripe",
                "credentials": [{"key": "SecretKey", "value": "sk_test_a"}, {"key": "SECRETKEY", "value": "b"}],
            },
            ["credentials[1].key"],
        ),
        (
            {"paymentGatewayName": "Stripe", "credentials": [{"key": "SecretKey", "value": "v" * 4097}]},
            ["credentials[0].value"],
        ),
        ({"paymentGatewayName": "Stripe", "credentials": [{"key": "SecretKey"}] * 51}, ["credentials"]),
    ],
)
def test_bad_bodies(client: TestClient, body: dict, fields: list[str]) -> None:  # type: ignore[type-arg]
    response = client.put("/PaymentGatewayAccounts/stripe1", json=body)
    assert response.status_code == 400, response.text
    assert [e["fieldName"] for e in response.json()] == fields
    assert client.get("/PaymentGatewayAccounts/stripe1").status_code == 404


def test_credential_limits_at_the_edge(client: TestClient) -> None:
    body = {"paymentGatewayName": "Stripe", "credentials": [{"key": "SecretKey", "value": "v" * 4096}]}
    response = client.put("/PaymentGatewayAccounts/stripe1", json=body)
    assert response.status_code == 200
    assert response.json()["credentials"][0]["value"] == "v" * 4096
    adyen = {"paymentGatewayName": "Adyen", "credentials": [{"key": "ApiKey", "value": None}]}
    assert client.put("/PaymentGatewayAccounts/adyen1", json=adyen).json()["credentials"] == [
        {"key": "ApiKey", "value": None}
    ]


def test_unknown_key_error_names_the_accepted_keys(client: TestClient) -> None:
    body = {"paymentGatewayName": "Elavon", "credentials": [{"key": "ApiKey", "value": "x"}]}
    errors = client.put("/PaymentGatewayAccounts/elavon1", json=body).json()
    assert errors == [
        {
            "fieldName": "credentials[0].key",
            "errors": ["'ApiKey' is not a credential of Elavon. Elavon accepts: MerchantId, Password, RebatePWD."],
        }
    ]


def test_accounts_are_per_key(client: TestClient) -> None:
    assert client.put("/PaymentGatewayAccounts/shared1", json=STRIPE).status_code == 200
    for method in ("GET", "DELETE"):
        response = client.request(method, "/PaymentGatewayAccounts/shared1", headers=LIVE)
        assert response.status_code == 404
        assert response.json()[0]["fieldName"] == "name"
    assert client.get("/PaymentGatewayAccounts", headers=LIVE).json() == []
    live = client.put(
        "/PaymentGatewayAccounts/shared1", headers=LIVE, json={"paymentGatewayName": "NULLSuccess", "credentials": []}
    )
    assert live.status_code == 200
    assert client.get("/PaymentGatewayAccounts/shared1").json()["paymentGatewayName"] == "Stripe"


def test_accounts_need_a_key(anon: TestClient) -> None:
    for method, path in (
        ("GET", "/PaymentGatewayAccounts"),
        ("GET", "/PaymentGatewayAccounts/abc"),
        ("DELETE", "/PaymentGatewayAccounts/abc"),
    ):
        response = anon.request(method, path)
        assert response.status_code == 401
        assert response.json()[0]["fieldName"] == "X-Api-Key"


def test_payments_see_a_deleted_account_as_gone(client: TestClient) -> None:
    assert client.put("/PaymentGatewayAccounts/stripe1", json=STRIPE).status_code == 200
    charge = {
        "amount": 10,
        "currency": "USD",
        "paymentGatewayAccountName": "stripe1",
        "card": {
            "cardNumber": "4242424242424242",
            "cardHolderName": "Jane Doe",
            "expirationMonth": 12,
            "expirationYear": 2030,
        },
    }
    approved = client.post("/PaymentGateway/charge", json=charge)
    assert approved.status_code == 200
    assert approved.json()["gatewayName"] == "Stripe"
    assert client.post("/PaymentGateway/charge", json=charge, headers=LIVE).status_code == 400
    client.delete("/PaymentGatewayAccounts/stripe1")
    refused = client.post("/PaymentGateway/charge", json=charge)
    assert refused.status_code == 400
    assert refused.json()[0]["fieldName"] == "paymentGatewayAccountName"
