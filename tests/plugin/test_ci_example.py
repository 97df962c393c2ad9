"""The example CI project (examples/ci-suite) run as a separate project: through the
plugin's entry point, through ``-p``, with parallel workers against one ``payemu serve``;
then every journal of a full run is scanned for card data."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from emulator.cli.main import CARD_FORM_PORT_ENV
from emulator.domain import masking
from emulator.domain.cards import luhn_valid
from emulator.testing import PayemuServer
from tests.support.paths import REPO_ROOT
from tests.support.plugins_off import ADDOPTS
from tests.support.servers import PayemuProcess, in_thread

ROOT = REPO_ROOT
PROJECT = ROOT / "examples" / "ci-suite"
EXAMPLE_TESTS = 19  # 3 in test_checkout.py, 16 in test_isolation.py
# what looks like a card number: 13 to 19 digits, grouped or not (Luhn checked below)
FULL_PAN = re.compile(r"(?<!\d)\d(?:[ -]?\d){12,18}(?!\d)")
CVV_KEYS = {"cvv", "cvc", "cvv2", "securitycode"}


def _env(**extra: str) -> dict[str, str]:
    # the session's PAYEMU_CARD_FORM_PORT stays (tests/conftest.py: servers keep off port 4200)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PAYEMU_", "PYTEST_")) or k == CARD_FORM_PORT_ENV}
    return {**env, **extra}


def _pytest(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pytest", *args],
        cwd=PROJECT,
        env={**(env or _env()), "PYTEST_ADDOPTS": ADDOPTS},
        capture_output=True,
        text=True,
        timeout=300,
    )


def _passed(result: subprocess.CompletedProcess[str], count: int = EXAMPLE_TESTS) -> None:
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    assert re.search(rf"\b{count} passed\b", result.stdout), result.stdout[-2000:]


def test_the_docs_show_the_example_file_verbatim() -> None:
    readme = (ROOT / "docs" / "ci.md").read_text()
    marker = "<!-- examples/ci-suite/test_checkout.py -->\n```python\n"
    assert marker in readme
    shown = readme.split(marker, 1)[1].split("\n```\n", 1)[0] + "\n"
    assert shown == (PROJECT / "test_checkout.py").read_text()


def test_the_example_project_through_the_entry_point() -> None:
    result = _pytest("-q", "test_checkout.py")
    _passed(result, 3)
    started = re.search(r"payemu: in-process server at \S+ started in ([\d.]+) s", result.stdout)
    assert started, result.stdout[-2000:]
    print(f"in-process server start-up inside the example run: {started.group(1)} s")


def test_the_example_project_with_dash_p() -> None:
    result = _pytest("-q", "-p", "emulator.testing", "test_checkout.py", env=_env(PYTEST_DISABLE_PLUGIN_AUTOLOAD="1"))
    _passed(result, 3)
    without = _pytest("-q", "test_checkout.py", env=_env(PYTEST_DISABLE_PLUGIN_AUTOLOAD="1"))
    assert without.returncode != 0
    assert "fixture 'payemu' not found" in without.stdout


@pytest.fixture
def served() -> Iterator[str]:
    """A real ``payemu serve`` in its own process."""
    outside = [key for key in os.environ if key not in _env()]
    with PayemuProcess("serve", "--journal-size", "50", "--log-level", "warning", unset=outside) as process:
        yield process.url
        status, output = process.stop(signal.SIGTERM)
        assert status == 0, output


def test_parallel_workers_against_one_server(served: str) -> None:
    result = _pytest("-v", "-n", "2", "--payemu-url", served)
    _passed(result)
    assert "[gw0]" in result.stdout
    assert "[gw1]" in result.stdout
    assert "payemu: in-process" not in result.stdout
    health = httpx.get(served + "/_emulator/health").json()
    assert health["tenants"] == 2  # every test's tenant was removed; the two configured keys stay
    via_env = _pytest("-q", "test_checkout.py", env=_env(PAYEMU_URL=served))
    _passed(via_env, 3)


def _keys(value: Any) -> Iterator[str]:
    if isinstance(value, dict):
        for key, item in value.items():
            yield str(key)
            yield from _keys(item)
    elif isinstance(value, list):
        for item in value:
            yield from _keys(item)


def _more_traffic(server: PayemuServer) -> None:
    """What the example does not send: card data in tokens, tools, wrong places, errors."""
    tenant = server.tenant()
    client = tenant.client
    card = {
        "cardHolderName": "Jo",
        "cardNumber": "4000000000009995",
        "expirationMonth": 3,
        "expirationYear": 2031,
        "cvv": "9731",
    }
    details = json.dumps(
        {
            "cardNumber": "4111111111111111",
            "cvv": "842",
            "expirationMonth": 1,
            "expirationYear": 2032,
            "cardHolderName": "Tok",
        }
    )
    token = client.post("/StringTokens", json={"payload": details}).json()["token"]
    client.get(f"/StringTokens/{token}")
    digits = client.post("/StringTokens", json={"payload": "5555555555554444"}).json()["token"]
    null = {"paymentGatewayName": "NULLSuccess"}
    for body in (
        {"amount": 5.0, "currency": "USD", "card": card, "paymentGatewayAccount": null},
        {
            "amount": 5.0,
            "currency": "USD",
            "card": {**card, "cardNumber": f"@{token}", "cvv": None},
            "paymentGatewayAccount": null,
        },
        {"amount": 5.0, "currency": "USD", "card": {**card, "cardNumber": f"@{digits}"}, "paymentGatewayAccount": null},
        {"amount": 5.0, "currency": "USD", "card": {**card, "cardNumber": "4111 1111 1111 1111"}},
        {"amount": 5.0, "currency": "USD", "card": {**card, "cardNumber": 4111111111111111}},
        {"amount": 5.0, "currency": "USD", "card": {**card, "cardHolderName": "4111111111111111", "cvv": "12345"}},
    ):
        client.post("/PaymentGateway/charge", json=body)
    client.post("/PaymentGateway/tokenize", json={"card": card, "paymentGatewayAccount": null})
    client.get("/Tools/luhn", params={"number": "4111111111111111"})
    client.get("/Tools/iin", params={"iin": "411111"})
    client.post("/Tools/validate", json={"cardNumber": "4111111111111111", "cvv": "842"})
    client.post("/EWalletOperations", json={"card": card, "amount": 1})
    tenant.close(remove=False)


def test_no_journal_holds_card_data_after_a_full_run() -> None:
    with in_thread() as server:
        _passed(_pytest("-q", "-n", "2", "--payemu-url", server.base_url, "--payemu-keep-tenants"))
        _more_traffic(server)
        assert server.app is not None
        runtime = server.app.state.runtime
        entries = [entry for tenant in runtime.tenants for entry in tenant.journal]
    assert len(entries) > 2 * EXAMPLE_TESTS
    assert any(entry["attempts"] for entry in entries)
    text = json.dumps(entries)
    for number in ("4242424242424242", "5555555555554444", "4111111111111111", "4000000000009995"):
        assert number not in text
    references = masking.references(entries)
    pans = [run for run in FULL_PAN.findall(text) if luhn_valid(re.sub(r"\D", "", run)) and run not in references]
    assert pans == []
    assert not CVV_KEYS & {key.lower() for key in _keys(entries)}
    assert '"9731"' not in text
    assert '"842"' not in text
    assert '"12345"' not in text
    assert "411111" in text  # masked numbers keep their first six digits
    assert not runtime.violations
