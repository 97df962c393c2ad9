"""Concurrent requests on one transaction never both succeed — through a real uvicorn
server (the ASGI test client would serialize them)."""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from emulator.domain.config import Settings
from emulator.scenarios import parse_rules
from emulator.tenants.tenants import Tenant
from tests.conftest import SANDBOX
from tests.support.bodies import CARD, STRIPE_MAIN
from tests.support.servers import ThreadServer, in_thread


class Server:
    """The real server and the sandbox key's tenant in it."""

    def __init__(self, running: ThreadServer) -> None:
        self.url = running.base_url
        self.tenant: Tenant = running.app.state.runtime.tenants.get(SANDBOX["X-Api-Key"])


@pytest.fixture
def server() -> Iterator[Server]:
    with in_thread(Settings()) as running:
        with httpx.Client(base_url=running.base_url, headers=SANDBOX) as client:
            account = {"paymentGatewayName": "Stripe", "credentials": [{"key": "SecretKey", "value": "sk_test_sk"}]}
            assert client.put("/PaymentGatewayAccounts/stripeMain", json=account).status_code == 200
        yield Server(running)


def pay(server: Server, path: str, body: dict[str, Any]) -> dict[str, Any]:
    with httpx.Client(base_url=server.url, headers=SANDBOX) as client:
        response = client.post(path, json=body)
    assert response.status_code == 200, response.text
    return response.json()


async def storm(server: Server, method: str, path: str, bodies: list[dict[str, Any]]) -> list[httpx.Response]:
    limits = httpx.Limits(max_connections=len(bodies), max_keepalive_connections=len(bodies))
    async with httpx.AsyncClient(base_url=server.url, headers=SANDBOX, limits=limits, timeout=30) as client:
        return list(await asyncio.gather(*(client.request(method, path, json=body) for body in bodies)))


@pytest.mark.parametrize("delay_ms", [0, 50])
def test_100_concurrent_captures_give_exactly_one_success(server: Server, delay_ms: int) -> None:
    then = f"{{operationResultCode: Success, delayMs: {delay_ms}}}"
    server.tenant.rules.add(parse_rules(f"{{name: slow-capture, when: {{operation: Capture}}, then: {then}}}", "test"))
    auth = pay(server, "/PaymentGateway/authorize", {"amount": 40.0, "currency": "USD", "card": CARD, **STRIPE_MAIN})
    body = {"refTransId": auth["gatewayReference"], "amount": 40.0, "currency": "USD", "card": CARD, **STRIPE_MAIN}
    responses = asyncio.run(storm(server, "PUT", "/PaymentGateway/capture", [body] * 100))
    statuses = Counter(r.status_code for r in responses)
    assert statuses == {200: 1, 409: 99}, statuses
    reasons = Counter(r.json()["rejectReasonCode"] for r in responses if r.status_code == 409)
    assert set(reasons) <= {"AlreadyCaptured", "OperationInProgress"}, reasons
    if delay_ms:
        assert reasons["OperationInProgress"] > 0, "the captures overlapped at the gateway"
    tx = server.tenant.ledger[auth["gatewayReference"]]
    captures = [op for op in tx.operations if op.operation == "Capture"]
    assert len(captures) == 1
    assert tx.captured_by == captures[0].reference
    assert tx.busy is None


def test_concurrent_refunds_never_exceed_the_charge(server: Server) -> None:
    server.tenant.rules.add(
        parse_rules(
            "{name: slow-refund, when: {operation: Refund}, then: {operationResultCode: Success, delayMs: 20}}", "test"
        )
    )
    charge = pay(server, "/PaymentGateway/charge", {"amount": 5.0, "currency": "USD", "card": CARD, **STRIPE_MAIN})
    body = {"refTransId": charge["gatewayReference"], "amount": 1.0, "currency": "USD", "card": CARD, **STRIPE_MAIN}
    done = 0
    for _ in range(10):  # waves of 20 concurrent refunds of 1.00 until nothing is left
        responses = asyncio.run(storm(server, "PUT", "/PaymentGateway/refund", [body] * 20))
        assert all(r.status_code in (200, 409) for r in responses)
        done += sum(r.status_code == 200 for r in responses)
        if any(r.status_code == 409 and r.json()["rejectReasonCode"] == "AlreadyRefunded" for r in responses):
            break
    tx = server.tenant.ledger[charge["gatewayReference"]]
    assert done == 5
    assert tx.refunded_amount == 5.0
    assert tx.state(server.tenant.now()) == "Refunded"
