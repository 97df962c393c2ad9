"""Load through a real server (uvicorn on a socket, requests truly concurrent): partial
refunds racing on one charge, a thousand charges over ten tenants, token writes racing
deletes. The 100 concurrent captures of one authorization are in test_concurrency.py."""

from __future__ import annotations

import asyncio
import random
import ssl
from collections import Counter
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from emulator.domain.config import Settings
from emulator.testing import Payemu
from tests.support.bodies import CARD, NULL_SUCCESS, STRIPE
from tests.support.servers import ThreadServer, in_thread

TLS = ssl.create_default_context()  # unused on plain HTTP, but httpx builds one per client unless given
# uvicorn closes a connection idle for 5 s, httpx reuses one idle for up to 5 s: on a loaded
# machine a request could go out on a connection the server was closing (a ReadError). The
# clients here reuse a connection only within a second of its last answer, and the server
# (in this process, so it shares the clients' interpreter lock) keeps one for 60 s: a
# starved loop can't run the keep-alive timer ahead of a request already in the socket.
KEPT_ALIVE = httpx.Limits(keepalive_expiry=1.0)


@pytest.fixture(scope="module")
def server() -> Iterator[ThreadServer]:
    with in_thread(Settings(), keep_alive=60) as running:
        yield running


@pytest.fixture
def tenant(server: ThreadServer) -> Iterator[Payemu]:
    made = server.tenant()
    yield made
    made.close()


async def _fire(
    base_url: str, calls: list[tuple[str, str, str, dict[str, Any] | None]], connections: int = 100
) -> list[httpx.Response]:
    """Send ``(api key, method, path, body)`` calls at once over ``connections`` sockets
    (one client each: httpx's shared pool gets slow with many connections); the answers
    come back in the order of ``calls``."""
    answers: list[httpx.Response | None] = [None] * len(calls)
    queue = iter(enumerate(calls))

    async def worker() -> None:
        async with httpx.AsyncClient(base_url=base_url, timeout=60, verify=TLS, limits=KEPT_ALIVE) as client:
            for index, (key, method, path, body) in queue:
                answers[index] = await client.request(method, path, json=body, headers={"X-Api-Key": key})

    await asyncio.gather(*(worker() for _ in range(min(connections, len(calls)))))
    return [answer for answer in answers if answer is not None]


def fire(server: ThreadServer, calls: list[tuple[str, str, str, dict[str, Any] | None]]) -> list[httpx.Response]:
    return asyncio.run(_fire(server.base_url, calls))


def _store_account(tenant: Payemu, name: str, account: dict[str, Any]) -> None:
    answer = tenant.client.put(f"/PaymentGatewayAccounts/{name}", json=account)
    assert answer.status_code == 200, answer.text


# -- partial refunds ----------------------------------------------------------------------
@pytest.mark.parametrize("delay_ms", [0, 5])
def test_100_concurrent_partial_refunds_never_exceed_the_charge(
    server: ThreadServer, tenant: Payemu, delay_ms: int
) -> None:
    _store_account(tenant, "main", STRIPE)
    if delay_ms:
        tenant.add_scenario(
            {
                "name": "slow-refund",
                "when": {"operation": "Refund"},
                "then": {"operationResultCode": "Success", "delayMs": delay_ms},
            }
        )
    charge = tenant.client.post(
        "/PaymentGateway/charge",
        json={"amount": 50.0, "currency": "USD", "card": CARD, "paymentGatewayAccountName": "main"},
    )
    assert charge.status_code == 200, charge.text
    reference = charge.json()["gatewayReference"]
    rng = random.Random(delay_ms)
    amounts = [rng.choice((0.5, 1.0, 1.25, 2.0, 3.0)) for _ in range(100)]
    assert sum(amounts) > 100  # twice the charge is asked back
    body = {"refTransId": reference, "currency": "USD", "paymentGatewayAccountName": "main", "card": CARD}
    calls = [(tenant.api_key, "PUT", "/PaymentGateway/refund", {**body, "amount": a}) for a in amounts]
    answers = fire(server, calls)

    statuses = Counter(a.status_code for a in answers)
    assert set(statuses) <= {200, 409}, statuses
    refunded = [a.json()["amount"] for a in answers if a.status_code == 200]
    assert refunded, sum(refunded)
    assert round(sum(refunded), 2) <= 50.0, sum(refunded)
    reasons = Counter(a.json()["rejectReasonCode"] for a in answers if a.status_code == 409)
    assert set(reasons) <= {"OperationInProgress", "AmountExceeded", "AlreadyRefunded"}, reasons
    if delay_ms:
        assert reasons["OperationInProgress"], "the refunds did not overlap at the gateway"
    for answer in answers:
        assert answer.json()["operationType"] == "Refund"

    [original] = [t for t in tenant.transactions() if t["reference"] == reference]
    refunds = [t for t in tenant.transactions() if t["operation"] == "Refund"]
    assert original["refundedAmount"] == pytest.approx(sum(refunded))
    assert len(refunds) == len(refunded)
    assert all(t["parent"] == reference for t in refunds)
    assert sorted(t["amount"] for t in refunds) == sorted(refunded)
    if round(sum(refunded), 2) == 50.0:
        assert original["state"] == "Refunded"
    else:
        assert original["state"] == "PartiallyRefunded"
    # nothing stays reserved: one more refund of what is left goes through or is refused as refunded
    left = round(50.0 - sum(refunded), 2)
    last = tenant.client.put("/PaymentGateway/refund", json={**body, "amount": left or 1.0})
    assert last.status_code == (200 if left else 409), last.text


# -- many tenants ---------------------------------------------------------------------------
def test_1000_charges_over_10_tenants_each_in_its_own_ledger(server: ThreadServer) -> None:
    tenants = [server.tenant() for _ in range(10)]
    try:
        for number, tenant in enumerate(tenants):
            # the same account name everywhere, a different gateway per tenant
            _store_account(tenant, "shop", STRIPE if number % 2 else NULL_SUCCESS)
        calls = []
        owners = []
        for index in range(1000):
            tenant = tenants[index % 10]
            my_ref = f"load-{index % 10}-{index // 10}"
            body = {
                "amount": 1 + index % 97,
                "currency": "EUR",
                "card": CARD,
                "myRef": my_ref,
                "paymentGatewayAccountName": "shop",
            }
            calls.append((tenant.api_key, "POST", "/PaymentGateway/charge", body))
            owners.append(index % 10)
        answers = fire(server, calls)

        assert Counter(a.status_code for a in answers) == {200: 1000}
        sent: dict[int, dict[str, tuple[str, float]]] = {n: {} for n in range(10)}
        for (_, _, _, body), owner, answer in zip(calls, owners, answers, strict=True):
            result = answer.json()
            assert result["operationResultCode"] == "Success"
            assert result["amount"] == body["amount"]
            assert result["gatewayName"] == ("Stripe" if owner % 2 else "NULLSuccess")
            sent[owner][result["gatewayReference"]] = (body["myRef"], body["amount"])

        for number, tenant in enumerate(tenants):
            ledger = tenant.transactions()
            assert len(sent[number]) == 100  # no reference handed out twice
            assert {t["reference"]: (t["myRef"], t["amount"]) for t in ledger} == sent[number]
            assert {t["operation"] for t in ledger} == {"Charge"}
            assert all(t["state"] == "Charged" and t["cardMasked"] == "411111******1111" for t in ledger)
            journal = tenant.requests(path="/PaymentGateway/charge")
            assert len(journal) == 100
            assert {e["status"] for e in journal} == {200}
        references = [ref for n in range(10) for ref in sent[n]]
        assert len(set(references)) == 1000
    finally:
        for tenant in tenants:
            tenant.close()


# -- tokens ---------------------------------------------------------------------------------
def _payload(index: int) -> str:
    """A payload long enough that a torn write would show, unique per index."""
    return f"<{index}>" + chr(0x41 + index % 26) * (1000 + 37 * index) + f"</{index}>"


def test_concurrent_token_writes_and_deletes_never_tear_a_token(server: ThreadServer, tenant: Payemu) -> None:
    key = tenant.api_key
    stored = fire(server, [(key, "POST", "/StringTokens", {"payload": _payload(i)}) for i in range(200)])
    assert Counter(a.status_code for a in stored) == {201: 200}
    tokens = [a.json()["token"] for a in stored]
    assert len(set(tokens)) == 200
    payloads = dict(zip(tokens, (_payload(i) for i in range(200)), strict=True))

    # Each of the first 100 tokens is deleted twice, while every token is read (contents and
    # meta) and 100 new ones are written — all at once, in a shuffled order.
    doomed = tokens[:100]
    calls = [(key, "DELETE", f"/StringTokens/{t}", None) for t in doomed * 2]
    calls += [(key, "GET", f"/StringTokens/{t}", None) for t in tokens]
    calls += [(key, "GET", f"/StringTokens/{t}/meta", None) for t in tokens]
    calls += [(key, "POST", "/StringTokens", {"payload": _payload(i)}) for i in range(200, 300)]
    random.Random(7).shuffle(calls)
    answers = fire(server, calls)

    deletes: Counter[str] = Counter()
    fresh: list[str] = []
    for (_, method, path, body), answer in zip(calls, answers, strict=True):
        token = path.split("/")[2] if method != "POST" else None
        if method == "DELETE":
            assert answer.status_code in (200, 404), answer.text
            deletes[token] += answer.status_code == 200
        elif method == "POST":
            assert answer.status_code == 201, answer.text
            fresh.append(answer.json()["token"])
            payloads[fresh[-1]] = body["payload"]
        elif answer.status_code == 404:
            assert token in doomed, f"token {token} vanished without a delete"
        else:
            assert answer.status_code == 200, answer.text
            read = answer.json()
            assert read["token"] == token
            assert read["createTime"]
            if not path.endswith("/meta"):
                assert read["clearPayload"] == payloads[token]  # whole, and its own
    assert all(deletes[t] == 1 for t in doomed), deletes  # each delete took effect once
    assert len(set(fresh)) == 100
    assert not set(fresh) & set(tokens)

    final = fire(server, [(key, "GET", f"/StringTokens/{t}", None) for t in tokens + fresh])
    for token, answer in zip(tokens + fresh, final, strict=True):
        if token in doomed:
            assert answer.status_code == 404, answer.text
        else:
            assert answer.status_code == 200
            assert answer.json()["clearPayload"] == payloads[token]
