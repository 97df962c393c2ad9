"""Config preload per key: accounts, string tokens, certificates and sessions, through the stores' checks."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from starlette.applications import Starlette
from starlette.testclient import TestClient

from emulator.app.build import create_app
from emulator.domain.config import ConfigError, Settings, load_config_file
from tests.support.paths import TESTS_DIR

DEMO = TESTS_DIR / "data" / "demo-config.yaml"
KEY = {"X-Api-Key": "demo-key"}


@pytest.fixture
def demo(make_app: Callable[..., Starlette]) -> Iterator[TestClient]:
    settings = load_config_file(DEMO)
    app = make_app(**{name: getattr(settings, name) for name in ("keys", "preload")})
    with TestClient(app, headers=KEY) as client:
        yield client


def test_accounts_are_stored_with_their_gateway_and_credentials(demo: TestClient) -> None:
    stored = demo.get("/PaymentGatewayAccounts/demoStripe").json()
    assert stored["paymentGatewayName"] == "Stripe"
    assert stored["credentials"] == [{"key": "SecretKey", "value": "sk_test_demo"}]


def test_both_accounts_are_listed(demo: TestClient) -> None:
    names = sorted(a["name"] for a in demo.get("/PaymentGatewayAccounts").json())
    assert names == ["demoApproves", "demoStripe"]


def test_string_token_keeps_its_fixed_id(demo: TestClient) -> None:
    held = demo.get("/StringTokens/DemoToken00000000000000000000001")
    assert held.status_code == 200
    assert held.json()["clearPayload"].startswith('{"cardNumber": "4111111111111111"')


def test_certificates_are_registered(demo: TestClient) -> None:
    assert "demoClientCert" in demo.get("/_emulator/certificates").json()["certificates"]


def test_session_page_is_ready(demo: TestClient) -> None:
    page = demo.get("/_emulator/pay/DemoSession000000000000000000001")
    assert page.status_code == 200
    assert "12.50" in page.text


def test_reset_brings_the_demo_state_back(demo: TestClient) -> None:
    demo.delete("/PaymentGatewayAccounts/demoStripe")
    demo.post("/_emulator/reset")
    assert demo.get("/PaymentGatewayAccounts/demoStripe").status_code == 200


def test_other_keys_start_empty(demo: TestClient) -> None:
    assert demo.get("/PaymentGatewayAccounts", headers={"X-Api-Key": "live-api-key"}).json() == []


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        (
            "accounts: [{name: a, paymentGatewayName: Stripe, credentials: [{key: Nope, value: x}]}]",
            "config: keys[k].accounts[0].credentials[0].key: 'Nope' is not a credential of Stripe. "
            "Stripe accepts: SecretKey.",
        ),
        (
            "accounts: [{name: a, paymentGatewayName: NoSuchGateway, credentials: []}]",
            "config: keys[k].accounts[0].paymentGatewayName: ",
        ),
        (
            "sessions: [{token: S0000000000000000000000000000001, request: {operation: CHARGE, mode: TEST, "
            "currencyCode: USD, amount: 1, paymentGatewayAccountId: missing}}]",
            "config: keys[k].sessions[0].request.paymentGatewayAccountId: ",
        ),
    ],
)
def test_bad_preload_is_refused_at_start(tmp_path: Path, entry: str, message: str) -> None:
    config = tmp_path / "c.yaml"
    config.write_text(f"keys:\n  - key: k\n    {entry}\n")
    settings = load_config_file(config, Settings())
    with pytest.raises(ConfigError) as refused:
        create_app(settings)
    assert str(refused.value).startswith(message)
