"""emulator.control.tenants: the tenant listing needs the admin key whenever one is
set, and shows API keys in full only then."""

from __future__ import annotations

from collections.abc import Callable

from starlette.applications import Starlette
from starlette.testclient import TestClient

from emulator.control.tenants import masked_key

ADMIN = "admin-secret-1"


def test_without_an_admin_key_the_keys_are_masked(make_app: Callable[..., Starlette]) -> None:
    with TestClient(make_app()) as client:
        key = client.post("/_emulator/tenants", json={}).json()["apiKey"]
        listed = client.get("/_emulator/tenants")
    assert listed.status_code == 200
    shown = [tenant["apiKey"] for tenant in listed.json()["tenants"]]
    assert shown == ["san…key", "liv…key", masked_key(key)]
    assert masked_key(key) == key[:6] + "…" + key[-4:]
    assert not any(full in listed.text for full in ("sandbox-api-key", "live-api-key", key))


def test_with_an_admin_key_the_listing_needs_it_and_shows_keys_in_full(make_app: Callable[..., Starlette]) -> None:
    with TestClient(make_app(admin_key=ADMIN)) as client:
        key = client.post("/_emulator/tenants", json={}, headers={"X-Admin-Key": ADMIN}).json()["apiKey"]
        for headers in ({}, {"X-Admin-Key": "wrong-key-1"}, {"X-Api-Key": key}):
            refused = client.get("/_emulator/tenants", headers=headers)
            assert refused.status_code == 401, refused.text
            assert refused.json()[0]["fieldName"] == "X-Admin-Key"
            assert key not in refused.text
        listed = client.get("/_emulator/tenants", headers={"X-Admin-Key": ADMIN})
    assert listed.status_code == 200
    assert [tenant["apiKey"] for tenant in listed.json()["tenants"]] == ["sandbox-api-key", "live-api-key", key]


def test_a_masked_key_shows_at_most_six_and_four() -> None:
    for key in ("k", "abcdefgh", "sandbox-api-key", "x" * 32, "y" * 256):
        shown = masked_key(key)
        head, _, tail = shown.partition("…")
        assert len(head) <= 6 and len(tail) <= 4
        assert len(head) + len(tail) <= len(key) // 2  # never most of a short key
        assert key.startswith(head) and key.endswith(tail)
