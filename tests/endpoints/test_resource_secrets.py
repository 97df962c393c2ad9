"""Credential values and string-token payloads never reach a log or the journal."""

from __future__ import annotations

import json
import logging

import pytest
from starlette.testclient import TestClient

CREDENTIAL = "sk_test_SuperSecretCredential42"
PAYLOAD = "TopSecretPayload-4111111111111111"
CARD_JSON = '{"cardNumber": "5555555555554444", "cvv": "737"}'


def test_no_payload_or_credential_in_logs_or_journal(client: TestClient, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    put = client.put(
        "/PaymentGatewayAccounts/stripe1",
        json={"paymentGatewayName": "Stripe", "credentials": [{"key": "SecretKey", "value": CREDENTIAL}]},
    )
    assert put.status_code == 200
    assert client.get("/PaymentGatewayAccounts/stripe1").json()["credentials"][0]["value"] == CREDENTIAL
    bad = client.put(
        "/PaymentGatewayAccounts/stripe2",
        json={"paymentGatewayName": "Stripe", "credentials": [{"key": "Nope", "value": CREDENTIAL}]},
    )
    assert bad.status_code == 400
    assert CREDENTIAL not in bad.text
    tokens = []
    for payload in (PAYLOAD, CARD_JSON):
        created = client.post("/StringTokens", json={"payload": payload})
        assert created.status_code == 201
        tokens.append(created.json()["token"])
        assert client.get(f"/StringTokens/{tokens[-1]}").json()["clearPayload"] == payload
        assert client.get(f"/StringTokens/{tokens[-1]}/meta").status_code == 200
    client.delete(f"/StringTokens/{tokens[0]}")
    client.delete("/PaymentGatewayAccounts/stripe1")

    logged = "\n".join(f"{r.getMessage()} {r.args!r} {r.exc_text or ''}" for r in caplog.records)
    journal = json.dumps(list(client.app.state.runtime.tenants.get("sandbox-api-key").journal))
    assert len(client.app.state.runtime.tenants.get("sandbox-api-key").journal) >= 9
    for text in (logged, journal):
        for secret in (CREDENTIAL, PAYLOAD, "4111111111111111", "5555555555554444", CARD_JSON):
            assert secret not in text
