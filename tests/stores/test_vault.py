"""The string-token vault: storage per tenant, @token card references, and its HTTP API."""

from __future__ import annotations

import json
from typing import Any

import pytest
from starlette.testclient import TestClient

from emulator.domain.errors import ApiError
from emulator.domain.model import Card
from emulator.stores import vault
from emulator.tenants.tenants import Tenant
from tests.conftest import LIVE, SANDBOX, bare_tenant

CARD = {"cardHolderName": "Jane Doe", "expirationMonth": 12, "expirationYear": 2030}


def resolve_card(tenant: Tenant, card: dict[str, Any]) -> dict[str, Any]:
    """``vault.resolve_card`` on a request's card JSON, back as the JSON fields it filled."""
    resolved = vault.resolve_card(tenant, Card.from_json(card))
    fields = {
        "cardNumber": resolved.number,
        "cardHolderName": resolved.holder,
        "expirationMonth": resolved.expiration_month,
        "expirationYear": resolved.expiration_year,
        "cvv": resolved.cvv,
        "cardType": resolved.brand,
        "ownerID": resolved.owner_id,
    }
    return {key: value for key, value in fields.items() if value is not None}


def _error(caught: pytest.ExceptionInfo[ApiError]) -> tuple[int, list[dict[str, Any]]]:
    return caught.value.status, caught.value.body


# -- the store ---------------------------------------------------------------------------
def test_store_get_delete() -> None:
    tenant = bare_tenant("k1", 7)
    entry = vault.store(tenant, "secret")
    assert len(entry.token) == 32
    assert entry.token.isalnum()
    assert entry.token.isascii()
    assert entry.create_time == tenant.now()
    assert tenant.vault.get(entry.token) is entry
    assert tenant.vault.delete(entry.token) is True
    assert tenant.vault.get(entry.token) is None
    assert tenant.vault.delete(entry.token) is False


def test_tokens_come_from_the_tenant_seed() -> None:
    def tokens(key: str) -> list[str]:
        tenant = bare_tenant(key, 7)
        return [vault.store(tenant, "x").token for _ in range(3)]

    assert tokens("a") == tokens("a")
    assert tokens("a") != tokens("b")
    assert len(set(tokens("a"))) == 3


def test_store_retries_on_a_collision(monkeypatch: pytest.MonkeyPatch) -> None:
    tenant = bare_tenant("k1", 7)
    taken = vault.store(tenant, "one").token
    ids = iter([taken, "B" * 32])
    monkeypatch.setattr(tenant, "random_string", lambda length: next(ids))
    assert vault.store(tenant, "two").token == "B" * 32
    assert tenant.vault[taken].payload == "one"


def test_store_refuses_payloads_outside_the_limits() -> None:
    tenant = bare_tenant("k1", 7)
    assert len(vault.store(tenant, "é" * 16384).payload) == 16384
    for payload in ("", "x" * 16385):
        with pytest.raises(ApiError) as caught:
            vault.store(tenant, payload)
        assert _error(caught)[1][0]["fieldName"] == "payload"


def test_repr_hides_the_payload() -> None:
    entry = vault.store(bare_tenant("k1", 7), "4111111111111111")
    assert "4111" not in repr(entry)
    assert "16 characters" in repr(entry)


# -- resolve_card --------------------------------------------------------------------------
def test_a_digits_token_is_the_card_number() -> None:
    tenant = bare_tenant("k1", 7)
    token = vault.store(tenant, "4111111111111111").token
    card = {**CARD, "cardNumber": f"@{token}", "cvv": "123"}
    resolved = resolve_card(tenant, card)
    assert resolved == {**card, "cardNumber": "4111111111111111"}
    assert card["cardNumber"] == f"@{token}"  # the request is not changed


def test_a_digits_token_may_be_spaced() -> None:
    tenant = bare_tenant("k1", 7)
    token = vault.store(tenant, " 4242 4242-4242 4242 ").token
    assert resolve_card(tenant, {**CARD, "cardNumber": f"@{token}"})["cardNumber"] == "4242424242424242"


def test_a_json_token_fills_the_card() -> None:
    tenant = bare_tenant("k1", 7)
    payload = json.dumps(
        {
            "CARDNUMBER": "5555555555554444",
            "cardholdername": "Token Holder",
            "ExpirationMonth": "07",
            "expirationyear": 2031,
            "CVV": 987,
            "colour": "red",
        }
    )
    token = vault.store(tenant, payload).token
    resolved = resolve_card(tenant, {"cardNumber": f"@{token}", "cardHolderName": "Request Holder"})
    assert resolved == {
        "cardNumber": "5555555555554444",
        "cardHolderName": "Request Holder",
        "expirationMonth": 7,
        "expirationYear": 2031,
        "cvv": "987",
    }


def test_explicit_fields_win_over_the_json_token() -> None:
    tenant = bare_tenant("k1", 7)
    token = vault.store(
        tenant, json.dumps({"cardNumber": "4111111111111111", "cvv": "111", "expirationYear": 2040})
    ).token
    resolved = resolve_card(tenant, {**CARD, "cardNumber": f"@{token}", "cvv": "222"})
    assert resolved["cvv"] == "222"
    assert resolved["expirationYear"] == 2030
    assert resolved["cardNumber"] == "4111111111111111"


def test_a_cvv_token() -> None:
    tenant = bare_tenant("k1", 7)
    number = vault.store(tenant, "4111111111111111").token
    cvv = vault.store(tenant, "1234").token
    resolved = resolve_card(tenant, {**CARD, "cardNumber": f"@{number}", "cvv": f"@{cvv}"})
    assert resolved["cvv"] == "1234"
    assert resolved["cardNumber"] == "4111111111111111"
    json_cvv = vault.store(tenant, '{"Cvv": "321"}').token
    assert resolve_card(tenant, {**CARD, "cardNumber": "4111111111111111", "cvv": f"@{json_cvv}"})["cvv"] == "321"


def test_a_card_without_references_is_copied_unchanged() -> None:
    card = {**CARD, "cardNumber": "4111111111111111", "cvv": None}
    resolved = resolve_card(bare_tenant("k1", 7), card)
    assert resolved == {**CARD, "cardNumber": "4111111111111111"}


@pytest.mark.parametrize(
    "payload",
    ["hello", "12345", "4111-abcd", '{"cardHolderName": "x"}', '{"cardNumber": "12ab"}', "[1, 2]", '{"cardNumber": '],
)
def test_a_token_without_a_card_number_is_refused(payload: str) -> None:
    tenant = bare_tenant("k1", 7)
    token = vault.store(tenant, payload).token
    with pytest.raises(ApiError) as caught:
        resolve_card(tenant, {**CARD, "cardNumber": f"@{token}"})
    expected = [{"fieldName": "card.cardNumber", "errors": ["The token does not hold a card number."]}]
    assert _error(caught) == (400, expected)


@pytest.mark.parametrize("payload", ["12", "12345", "abc", '{"cvv": "1"}', '{"number": "4111"}'])
def test_a_cvv_token_without_a_code_is_refused(payload: str) -> None:
    tenant = bare_tenant("k1", 7)
    token = vault.store(tenant, payload).token
    with pytest.raises(ApiError) as caught:
        resolve_card(tenant, {**CARD, "cardNumber": "4111111111111111", "cvv": f"@{token}"})
    assert _error(caught) == (400, [{"fieldName": "card.cvv", "errors": ["The token does not hold a security code."]}])


def test_unknown_deleted_and_foreign_tokens_are_refused() -> None:
    tenant, other = bare_tenant("a", 7), bare_tenant("b", 7)
    deleted = vault.store(tenant, "4111111111111111").token
    tenant.vault.delete(deleted)
    foreign = vault.store(other, "4111111111111111").token
    for token in (deleted, foreign, "Z" * 32):
        with pytest.raises(ApiError) as caught:
            resolve_card(tenant, {**CARD, "cardNumber": f"@{token}"})
        status, body = _error(caught)
        assert status == 400
        assert body[0]["fieldName"] == "card.cardNumber"
        assert token in body[0]["errors"][0]
    with pytest.raises(ApiError) as caught:
        resolve_card(tenant, {**CARD, "cardNumber": "4111111111111111", "cvv": f"@{deleted}"})
    assert _error(caught)[1][0]["fieldName"] == "card.cvv"
    with pytest.raises(ApiError) as caught:
        resolve_card(tenant, {**CARD, "cardNumber": "@short"})
    assert _error(caught)[1][0]["fieldName"] == "card.cardNumber"


# -- the HTTP API --------------------------------------------------------------------------
def test_post_get_meta_delete(client: TestClient) -> None:
    created = client.post("/StringTokens", json={"payload": "4111111111111111"})
    assert created.status_code == 201, created.text
    meta = created.json()
    token = meta["token"]
    assert set(meta) == {"token", "createTime"}
    assert len(token) == 32
    assert token.isalnum()
    assert created.headers["location"] == f"http://testserver/StringTokens/{token}"
    full = client.get(f"/StringTokens/{token}")
    assert full.status_code == 200
    assert full.json() == {"clearPayload": "4111111111111111", "token": token, "createTime": meta["createTime"]}
    assert client.get(f"/StringTokens/{token}/meta").json() == meta
    deleted = client.delete(f"/StringTokens/{token}")
    assert deleted.status_code == 200
    assert deleted.content == b""
    for method, path in (("GET", token), ("GET", f"{token}/meta"), ("DELETE", token)):
        gone = client.request(method, f"/StringTokens/{path}")
        assert gone.status_code == 404, path
        assert gone.json() == [{"fieldName": "token", "errors": [f"No string token {token} exists for this API key."]}]


def test_location_follows_the_base_url(make_app) -> None:  # type: ignore[no-untyped-def]
    with TestClient(make_app(), base_url="http://emu.example:9000", headers=SANDBOX) as client:
        created = client.post("/StringTokens", json={"payload": "x"})
        location = created.headers["location"]
        assert location == f"http://emu.example:9000/StringTokens/{created.json()['token']}"
        assert client.get(location).json()["clearPayload"] == "x"


@pytest.mark.parametrize("payload", ["x", "x" * 16384, "é" * 16384, "😀" * 16384, '{"cardNumber": "4111111111111111"}'])
def test_payload_limits_that_pass(client: TestClient, payload: str) -> None:
    created = client.post("/StringTokens", json={"payload": payload})
    assert created.status_code == 201, created.text[:200]
    assert client.get(f"/StringTokens/{created.json()['token']}").json()["clearPayload"] == payload


@pytest.mark.parametrize("payload", ["", "x" * 16385, "é" * 16385, None, 42, ["x"]])
def test_payload_limits_that_fail(client: TestClient, payload: Any) -> None:
    response = client.post("/StringTokens", json={"payload": payload})
    assert response.status_code == 400
    assert [e["fieldName"] for e in response.json()] == ["payload"]
    assert client.app.state.runtime.tenants.get("sandbox-api-key").vault == {}


@pytest.mark.parametrize("token", ["A" * 31, "A" * 33, "A" * 31 + "-", "A" * 31 + "_"])
@pytest.mark.parametrize("suffix", ["", "/meta"])
def test_token_id_limits_that_fail(client: TestClient, token: str, suffix: str) -> None:
    response = client.get(f"/StringTokens/{token}{suffix}")
    assert response.status_code == 400
    assert [e["fieldName"] for e in response.json()] == ["token"]
    assert client.delete(f"/StringTokens/{token}").status_code == 400


def test_well_formed_unknown_token_is_404(client: TestClient) -> None:
    for method, suffix in (("GET", ""), ("GET", "/meta"), ("DELETE", "")):
        response = client.request(method, f"/StringTokens/{'A' * 32}{suffix}")
        assert response.status_code == 404
        assert response.json()[0]["fieldName"] == "token"


def test_tokens_are_per_key(client: TestClient) -> None:
    token = client.post("/StringTokens", json={"payload": "mine"}).json()["token"]
    for method, suffix in (("GET", ""), ("GET", "/meta"), ("DELETE", "")):
        response = client.request(method, f"/StringTokens/{token}{suffix}", headers=LIVE)
        assert response.status_code == 404
        assert response.json()[0]["fieldName"] == "token"
    assert client.get(f"/StringTokens/{token}").json()["clearPayload"] == "mine"


def test_seeded_tokens_replay(make_app) -> None:  # type: ignore[no-untyped-def]
    def run() -> list[dict[str, Any]]:
        with TestClient(make_app(seed=11), headers=SANDBOX) as client:
            return [client.post("/StringTokens", json={"payload": str(i)}).json() for i in range(3)]

    assert run() == run()


def test_payments_read_tokens_of_their_own_key_only(client: TestClient) -> None:
    payload = json.dumps({"cardNumber": "4242424242424242", "cvv": "123"})
    token = client.post("/StringTokens", json={"payload": payload}).json()["token"]
    charge = {
        "amount": 10,
        "currency": "USD",
        "paymentGatewayAccount": {"paymentGatewayName": "NULLSuccess", "credentials": []},
        "card": {**CARD, "cardNumber": f"@{token}"},
    }
    assert client.post("/PaymentGateway/charge", json=charge).status_code == 200
    foreign = client.post("/PaymentGateway/charge", json=charge, headers=LIVE)
    assert foreign.status_code == 400
    assert foreign.json()[0]["fieldName"] == "card.cardNumber"
    client.delete(f"/StringTokens/{token}")
    gone = client.post("/PaymentGateway/charge", json=charge)
    assert gone.status_code == 400
    assert gone.json() == [
        {"fieldName": "card.cardNumber", "errors": [f"The string token {token} does not exist for this API key."]}
    ]


def test_location_follows_each_request_host(make_app) -> None:  # type: ignore[no-untyped-def]
    with TestClient(make_app(), headers=SANDBOX) as client:
        for host in ("emu.example:9000", "[::1]:8080", "emu.example:9000", "other.test"):
            created = client.post("/StringTokens", json={"payload": "x"}, headers={"Host": host})
            assert created.headers["location"] == f"http://{host}/StringTokens/{created.json()['token']}"
