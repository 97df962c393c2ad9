"""Property-based fuzzing of every operation of payemu's own schemas with schemathesis.

Every operation of the published interface and of the control API is called in-process
with generated requests: the examples, coverage (boundary and negated values, missing
and wrong-typed parameters, wrong media types and methods) and fuzzing phases, positive
and negative data. Every answer must be no server error, a documented status, a
documented media type and a body that matches the schema; on top of that the pipeline's
own response validator must have seen no violation.

Random data mostly ends in a 400 (an unknown account, reference or token), so half of the
positive cases are steered onto things that exist in the fuzzing tenant — stored
accounts, transactions, string tokens and certificates — to reach the success paths too.

Bounded for CI: a fixed seed, ``deterministic`` (Hypothesis ``derandomize``), a small
``max-examples`` per operation and no example database. Deeper local run::

    PAYEMU_FUZZ_EXAMPLES=200 PAYEMU_FUZZ_SEED=1 python -m pytest tests/contract/test_fuzz.py
"""

from __future__ import annotations

import hashlib
import json
import os
import random
from typing import Any

import pytest
import schemathesis
from schemathesis.config import SchemathesisConfig
from schemathesis.specs.openapi import checks as openapi_checks
from starlette.testclient import TestClient

from emulator.app.build import create_app
from emulator.domain.config import Settings
from emulator.scenarios import parse_rules
from emulator.tenants.tenants import Tenant
from tests.support.bodies import card

PUBLIC_KEY = "fuzz-public-api-key"
CONTROL_KEY = "fuzz-control-api-key"
# 5 generated cases a mode per operation, on top of the examples and the coverage phase's
# systematic cases, which take most of the module's 40 s: 20 added 15 s.
EXAMPLES = int(os.environ.get("PAYEMU_FUZZ_EXAMPLES", "5"))
SEED = int(os.environ.get("PAYEMU_FUZZ_SEED", "20240607"))

ACCOUNTS: dict[str, dict[str, Any]] = {
    "fuzzSuccess": {"paymentGatewayName": "NULLSuccess", "credentials": []},
    "fuzzFailure": {"paymentGatewayName": "NULLFailure", "credentials": []},
    "fuzzStripe": {"paymentGatewayName": "Stripe", "credentials": [{"key": "SecretKey", "value": "sk_test_sk_fuzz"}]},
    "fuzzAdyen": {
        "paymentGatewayName": "Adyen",
        "credentials": [{"key": "ApiKey", "value": "ak"}, {"key": "MerchantAccount", "value": "fuzz"}],
    },
}
SCRATCH_ACCOUNTS = ["fuzzScratch1", "fuzzScratch2"]
CARDS = ("4111111111111111", "5555555555554444", "378282246310005", "4000000000000002", "4000009006000007")
AMOUNTS = (1.0, 5.5, 20.0)
CARD = card(cardHolderName="Fuzz Tester", cardNumber=CARDS[0], expirationYear=2031)
CERTIFICATE = "fuzzCert"
# The built-in rules that close the connection or sleep would turn a fuzz run into a test
# of patience; this tenant answers them at once instead (the fault paths have own tests).
CALM_RULES = """
- name: fuzz-calm-amounts
  when: {amount: {min: 9030.00, max: 9032.00}}
  then: {operationResultCode: Success}
- name: fuzz-calm-cards
  when: {cardNumber: ["4000009030000007", "4000009031000006", "4000009032000005"]}
  then: {operationResultCode: Success}
"""

APP = create_app(Settings(any_key=True, seed=SEED, log_level="warning"))
RUNTIME = APP.state.runtime
CONFIG = SchemathesisConfig.from_dict(
    {
        "seed": SEED,
        "generation": {"mode": "all", "max-examples": EXAMPLES, "deterministic": True, "database": "none"},
        "phases": {"stateful": {"enabled": False}},
        "suppress-health-check": ["all"],
    }
)
PUBLIC = schemathesis.openapi.from_asgi("/swagger/1.0/swagger.json", APP, config=CONFIG)
CONTROL = schemathesis.openapi.from_asgi("/_emulator/openapi.json", APP, config=CONFIG)
# Emulated gateway outcomes that the interface answers with a 5xx (DESIGN: FatalFailure →
# 500, TemporaryFailure → 503); any other 5xx is a payemu error.
EMULATED_5XX = {500: "FatalFailure", 503: "TemporaryFailure"}


def not_a_payemu_error(ctx: Any, response: Any, case: Any) -> bool | None:
    """schemathesis' ``not_a_server_error``, except for a gateway failure payemu emulates."""
    expected = EMULATED_5XX.get(response.status_code)
    if expected and response.headers.get("content-type", [""])[0].startswith("application/json"):
        body = json.loads(response.content)
        if isinstance(body, dict) and body.get("operationResultCode") == expected:
            return None
    return schemathesis.checks.not_a_server_error(ctx, response, case)


CHECKS = [
    not_a_payemu_error,
    openapi_checks.response_schema_conformance,
    openapi_checks.status_code_conformance,
    openapi_checks.content_type_conformance,
]


class Pool:
    """What exists in the public fuzzing tenant, for steering cases onto it."""

    def __init__(self) -> None:
        self.references: list[str] = []
        self.tokens: list[str] = []
        self.my_refs: list[str] = []


POOL = Pool()


def _prepare(tenant: Tenant) -> None:
    """Give the public fuzzing tenant accounts, payments, tokens and a certificate (again,
    if a case deleted them)."""
    missing = [
        name
        for name, account in ACCOUNTS.items()
        if name not in tenant.accounts or tenant.accounts[name].gateway != account["paymentGatewayName"]
    ]
    if not missing and POOL.references and all(t in tenant.vault for t in POOL.tokens):
        return
    if not any(rule.name == "fuzz-calm-amounts" for rule in tenant.rules):
        tenant.rules.add(parse_rules(CALM_RULES, "tests/contract/test_fuzz.py"))
    tenant.certificates.register(CERTIFICATE)
    with TestClient(APP, headers={"X-Api-Key": PUBLIC_KEY}) as client:
        for name in missing:
            answer = client.put(f"/PaymentGatewayAccounts/{name}", json=ACCOUNTS[name])
            assert answer.status_code == 200, answer.text
        for number, operation in enumerate(("charge", "authorize", "charge")):
            my_ref = f"fuzz-order-{len(POOL.my_refs) + number}"
            body = {"amount": 20.0, "currency": "USD", "card": CARD, "myRef": my_ref}
            body["paymentGatewayAccountName"] = "fuzzStripe"
            answer = client.post(f"/PaymentGateway/{operation}", json=body)
            assert answer.status_code == 200, answer.text
            POOL.references.append(answer.json()["gatewayReference"])
            POOL.my_refs.append(my_ref)
        POOL.tokens = [t for t in POOL.tokens if t in tenant.vault]
        for payload in (CARDS[0], '{"cardNumber": "5555555555554444", "cvv": "123"}'):
            answer = client.post("/StringTokens", json={"payload": payload})
            assert answer.status_code == 201, answer.text
            POOL.tokens.append(answer.json()["token"])


def _steer(value: Any, rng: random.Random) -> Any:
    """``value`` with, most of the time each, the names that must exist replaced by
    names that do, and amounts out of a payment's range by ones in it."""
    if isinstance(value, list):
        return [_steer(item, rng) for item in value]
    if not isinstance(value, dict):
        return value
    gateways = [gateway.name for gateway in RUNTIME.catalog]
    choices: dict[str, list[Any]] = {
        "paymentGatewayAccountName": list(ACCOUNTS),
        "paymentGatewayAccountId": list(ACCOUNTS),
        "paymentGatewayName": gateways,
        "refTransId": POOL.references,
        "myRef": POOL.my_refs,
        "certificateName": [CERTIFICATE],
        "paymentGatewayCertName": [CERTIFICATE],
        "cardNumber": [*CARDS, *(f"@{token}" for token in POOL.tokens)],
        "currency": ["USD", "EUR", "GBP"],
        "currencyCode": ["USD", "EUR"],
        "clientIPAddress": ["81.2.69.160", "8.8.8.8"],
    }
    steered: dict[str, Any] = {}
    for key, item in value.items():
        options = choices.get(key)
        if options and rng.random() < 0.9:
            steered[key] = rng.choice(options)
        elif key == "amount" and isinstance(item, int | float) and not 0 < item <= 1000 and rng.random() < 0.9:
            steered[key] = rng.choice(AMOUNTS)
        elif key == "credentials" and isinstance(item, list) and rng.random() < 0.5:
            steered[key] = []
        else:
            steered[key] = _steer(item, rng)
    return steered


def _rng(case: Any) -> random.Random:
    """A random source fixed by the case itself, so a run is reproducible."""
    text = f"{case.operation.label}|{case.body!r}|{case.path_parameters!r}|{case.query!r}"
    return random.Random(hashlib.sha256(text.encode()).digest())


def _steer_case(case: Any) -> None:
    meta = case.meta
    if meta is None or meta.generation.mode.name.lower() != "positive":
        return
    rng = _rng(case)
    if rng.random() < 0.5:
        return
    if isinstance(case.body, dict):
        case.body = _steer(case.body, rng)
    path = dict(case.path_parameters or {})
    if "name" in path and case.operation.path.startswith("/PaymentGatewayAccounts"):
        # reads find the prepared accounts; writes and deletes use names of their own
        path["name"] = rng.choice(list(ACCOUNTS) if case.method.upper() == "GET" else SCRATCH_ACCOUNTS)
    if "token" in path and POOL.tokens:
        path["token"] = rng.choice(POOL.tokens)
    if "name" in path and case.operation.path.startswith("/_emulator/certificates"):
        path["name"] = CERTIFICATE
    if path:
        case.path_parameters = path


def _remember(case: Any, response: Any) -> None:
    if response.status_code != 200 or not case.operation.path.startswith("/PaymentGateway/"):
        return
    reference = response.json().get("gatewayReference")
    if reference and reference not in POOL.references:
        POOL.references.append(reference)


# Each operation's test is a test item of its own, named by the operation. On pytest 9.2
# schemathesis' items (one per operation) all got the function's bare node id, and xdist,
# which hands out tests by node id, ran one operation of each schema: the API key as a
# parameter puts the operation back into the id (tests/conftest.py refuses duplicates).
@PUBLIC.parametrize()
@pytest.mark.parametrize("key", [PUBLIC_KEY], ids=["fuzz"])
def test_published_operation(case: Any, key: str) -> None:
    _prepare(RUNTIME.tenants.get(key))
    _steer_case(case)
    response = case.call_and_validate(headers={"X-Api-Key": key}, checks=CHECKS)
    _remember(case, response)
    assert not RUNTIME.violations, RUNTIME.violations


@CONTROL.parametrize()
@pytest.mark.parametrize("key", [CONTROL_KEY], ids=["fuzz"])
def test_control_operation(case: Any, key: str) -> None:
    RUNTIME.tenants.get(key).certificates.register(CERTIFICATE)
    _steer_case(case)
    case.call_and_validate(headers={"X-Api-Key": key}, checks=CHECKS)
    assert not RUNTIME.violations, RUNTIME.violations


# -- what the fuzzer found, kept (more cases in tests/cases/bad_input.yaml) -----------------
def test_a_surrogate_pair_escape_is_text_and_a_lone_one_is_refused() -> None:
    with TestClient(APP, headers={"X-Api-Key": "fuzz-regression-key"}) as client:
        stored = client.post(
            "/StringTokens", content=b'{"payload": "\\ud83d\\ude00 paid"}', headers={"Content-Type": "application/json"}
        )
        assert stored.status_code == 201, stored.text
        assert client.get(f"/StringTokens/{stored.json()['token']}").json()["clearPayload"] == "\U0001f600 paid"
        lone = client.post(
            "/StringTokens", content=b'{"payload": "\\ud83d paid"}', headers={"Content-Type": "application/json"}
        )
        assert lone.status_code == 400
        assert lone.json()[0]["fieldName"] == "body"
        assert "lone surrogate" in lone.json()[0]["errors"][0]


def test_runtime_rules_with_surrogate_escapes_get_a_400() -> None:
    """A rule body whose key is \\ud800\\udc00 (surrogates UTF-8 cannot carry) is refused
    with a clear 400 naming the YAML problem, never a 500."""
    with TestClient(APP, headers={"X-Api-Key": "fuzz-regression-key"}) as client:
        answer = client.post(
            "/_emulator/scenarios", content=b'{"\\ud800\\udc00": null}', headers={"Content-Type": "application/json"}
        )
    assert answer.status_code == 400, answer.text
    entry = answer.json()[0]
    assert entry["fieldName"] == "body"
    assert "unknown key" in entry["errors"][0] or "YAML syntax error" in entry["errors"][0]


@pytest.mark.parametrize("text", ["[" * 5000 + "]" * 5000, "- " * 5000 + "x", "{a: " * 3000 + "1" + "}" * 3000])
def test_runtime_rules_nested_too_deeply_get_a_400(text: str) -> None:
    with TestClient(APP, headers={"X-Api-Key": "fuzz-regression-key"}) as client:
        answer = client.post("/_emulator/scenarios", content=text, headers={"Content-Type": "application/yaml"})
    assert answer.status_code == 400, answer.text
    assert answer.json() == [{"fieldName": "body", "errors": ["the YAML is nested more than 64 levels deep"]}]
