"""Every row of the built-in test cards and amounts (scenarios/default.yaml, the table
of docs/test-cards.md), for every operation it lists, through a real server over HTTP, as a newcomer with
curl would send it: `payemu serve` defaults, inline Stripe credentials, no setup.

Each row and operation runs in its own fresh API key (``--any-key``), all concurrently.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import httpx
import pytest

from emulator.domain.config import Settings
from emulator.domain.vocabulary import DECLINE_REASONS, HTTP_STATUS
from emulator.scenarios import BUILTIN, Rule, RuleOutcome
from emulator.scenarios.loader import load_files
from tests.support.bodies import STRIPE
from tests.support.servers import ThreadServer, in_thread

RULES = load_files([], BUILTIN)
BACKUP = {
    "paymentGatewayName": "Adyen",
    "credentials": [{"key": "ApiKey", "value": "a"}, {"key": "MerchantAccount", "value": "m"}],
}
ORDINARY_CARD = "4111111111111111"
ORDINARY_AMOUNT = 25.0
ORIGINAL_AMOUNT = 9500.0  # not a test amount: the charge or authorization a capture or refund refers to
PATHS = {
    "Charge": ("POST", "charge"),
    "PreAuth": ("POST", "authorize"),
    "Tokenize": ("POST", "tokenize"),
    "Capture": ("PUT", "capture"),
    "Refund": ("PUT", "refund"),
}
DROPPED = (httpx.RemoteProtocolError, httpx.ReadError, httpx.ConnectError)


def cases() -> list[tuple[str, Rule, str, str | float]]:
    """(id, rule, operation, card number or amount) for every row and operation."""
    found = []
    for rule in RULES:
        when = rule.data["when"]
        values = when.get("cardNumber", when.get("amount"))
        if values is None or when.get("gateway", "Stripe") != "Stripe":
            continue  # other gateways' triggers (holder names, post codes): tests/catalog/test_gateway_cases.py
        operations = when["operation"] if isinstance(when["operation"], list) else [when["operation"]]
        for value in values if isinstance(values, list) else [values]:
            for operation in operations:
                found.append((f"{rule.name}-{value}-{operation}", rule, operation, value))
    return found


CASES = cases()


@pytest.fixture(scope="module")
def server() -> Iterator[ThreadServer]:
    # seeded: each tenant's clock stands still until advanced, so an Accepted payment settles
    # when the test moves the clock, never earlier because the machine was slow
    with in_thread(Settings(any_key=True, seed=1)) as running:
        yield running


class Walk:
    """One row and operation, in its own API key."""

    def __init__(
        self, server: ThreadServer, client: httpx.AsyncClient, key: str, rule: Rule, operation: str, value: str | float
    ) -> None:
        self.server, self.client, self.key, self.rule, self.operation = server, client, key, rule, operation
        self.card = value if isinstance(value, str) else ORDINARY_CARD
        self.amount = value if isinstance(value, float) else ORDINARY_AMOUNT
        self.my_ref = f"ref-{key}"

    async def send(self, method: str, path: str, body: dict[str, Any]) -> httpx.Response:
        return await self.client.request(method, f"/PaymentGateway/{path}", json=body, headers={"X-Api-Key": self.key})

    def card_json(self) -> dict[str, Any]:
        amex = self.card.startswith(("34", "37"))  # the gateways check the CVV length per brand
        return {
            "cardHolderName": "Jane Doe",
            "cardNumber": self.card,
            "expirationMonth": 12,
            "expirationYear": 2030,
            "cvv": "1234" if amex else "123",
        }

    async def body(self, **extra: Any) -> dict[str, Any]:
        if self.operation == "Tokenize":
            return {"card": self.card_json(), "paymentGatewayAccount": STRIPE}
        if self.operation in ("Capture", "Refund"):
            first = "authorize" if self.operation == "Capture" else "charge"
            original = await self.send(
                "POST",
                first,
                {
                    "amount": ORIGINAL_AMOUNT,
                    "currency": "USD",
                    "card": self.card_json(),
                    "myRef": self.my_ref,
                    "paymentGatewayAccount": STRIPE,
                },
            )
            assert original.status_code == 200, original.text
            return {
                "refTransId": original.json()["gatewayReference"],
                "amount": self.amount,
                "currency": "USD",
                "card": self.card_json(),
                "paymentGatewayAccount": STRIPE,
            }
        return {
            "amount": self.amount,
            "currency": "USD",
            "card": self.card_json(),
            "myRef": self.my_ref,
            "paymentGatewayAccount": STRIPE,
            **extra,
        }

    def expect(self, response: httpx.Response, outcome: RuleOutcome) -> dict[str, Any]:
        code = outcome.operation_result_code
        where = f"{self.rule.name} {self.operation}"
        assert response.status_code == HTTP_STATUS[code], f"{where}: {response.text}"
        result = response.json()
        assert result["operationResultCode"] == code, where
        assert result["operationType"] == self.operation, where
        assert result["gatewayName"] == "Stripe", where
        assert result["rejectReasonCode"] == outcome.reject_reason_code, where
        assert result["gatewayReference"], where
        if code == "TemporaryFailure":
            assert response.headers["Retry-After"] == "1", where
        return result

    async def status(self) -> httpx.Response:
        return await self.send("POST", "status", {"myRef": self.my_ref, "paymentGatewayAccount": STRIPE})

    async def run(self) -> None:
        outcome = self.rule.outcomes[0]
        if self.rule.is_sequence:
            for step in [*self.rule.outcomes, self.rule.outcomes[-1]]:
                self.expect(await self.send(*PATHS[self.operation], await self.body()), step)
        elif "attempt" in self.rule.data["when"]:
            await self.failover(outcome)
        elif outcome.fault != "none":
            await self.fault(outcome)
        elif outcome.delay_ms:
            began = time.perf_counter()
            self.expect(await self.send(*PATHS[self.operation], await self.body()), outcome)
            assert time.perf_counter() - began >= outcome.delay_ms / 1000
        elif outcome.operation_result_code == "Accepted":
            await self.settle(outcome)
        else:
            self.expect(await self.send(*PATHS[self.operation], await self.body()), outcome)

    async def failover(self, outcome: RuleOutcome) -> None:
        self.expect(await self.send(*PATHS[self.operation], await self.body()), outcome)
        stored = await self.client.put("/PaymentGatewayAccounts/backup", json=BACKUP, headers={"X-Api-Key": self.key})
        assert stored.status_code == 200
        body = await self.body(fallbackUpgs=[{"paymentGatewayAccountName": "backup"}])
        response = await self.send(*PATHS[self.operation], body)
        assert response.status_code == 200, response.text
        assert response.json()["gatewayName"] == "Adyen", response.text

    async def fault(self, outcome: RuleOutcome) -> None:
        body = await self.body()
        with pytest.raises(DROPPED):
            await self.send(*PATHS[self.operation], body)
        if self.operation == "Tokenize":
            return
        found = await self.status()
        if outcome.fault == "reset" and self.operation in ("Charge", "PreAuth"):
            assert found.status_code == 409
            assert found.json()["rejectReasonCode"] == "TransactionNotFound"
            return
        assert found.status_code == 200, found.text
        state = found.json()["operationResultDescription"]
        expected = {
            ("lostResponse", "Charge"): "Charged",
            ("lostResponse", "PreAuth"): "Authorized",
            ("lostResponse", "Capture"): "Captured",
            ("lostResponse", "Refund"): "PartiallyRefunded",
            ("reset", "Capture"): "Authorized",
            ("reset", "Refund"): "Charged",
        }
        assert state.endswith(f" {expected[outcome.fault, self.operation]}."), f"{self.rule.name}: {state}"

    async def settle(self, outcome: RuleOutcome) -> None:
        self.expect(await self.send(*PATHS[self.operation], await self.body()), outcome)
        pending = await self.status()
        assert pending.status_code == 200
        assert pending.json()["operationResultCode"] == "Accepted"
        tenant = self.server.app.state.runtime.tenants.get(self.key)
        tenant.clock.advance(timedelta(seconds=outcome.settle_after_seconds or 0))
        final = await self.status()
        code = outcome.settles_to
        assert final.json()["operationResultCode"] == code, final.text
        assert final.status_code == (200 if code == "Success" else 409)


def test_every_row_and_operation_through_a_real_server(server: ThreadServer) -> None:
    async def main() -> None:
        limits = httpx.Limits(max_connections=len(CASES), max_keepalive_connections=0)
        async with httpx.AsyncClient(base_url=server.url, limits=limits, timeout=30) as client:
            walks = [
                Walk(server, client, f"cards-{index}", rule, operation, value)
                for index, (_, rule, operation, value) in enumerate(CASES)
            ]
            results = await asyncio.gather(*(walk.run() for walk in walks), return_exceptions=True)
        failures = [f"{CASES[i][0]}: {r!r}" for i, r in enumerate(results) if isinstance(r, BaseException)]
        assert not failures, "\n".join(failures)

    asyncio.run(main())


def test_the_walk_covers_every_result_code_and_reason() -> None:
    outcomes = [o for _, rule, _, _ in CASES for o in rule.outcomes]
    codes = {o.operation_result_code for o in outcomes}
    assert codes == set(HTTP_STATUS)
    reasons = {o.reject_reason_code for o in outcomes} - {None}
    assert reasons >= set(DECLINE_REASONS), "every decline reason has a built-in test card"
    assert {o.fault for o in outcomes} == {"none", "reset", "lostResponse"}
    assert len(CASES) > 100
