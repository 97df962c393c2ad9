"""Two payemu instances behind HAProxy (deploy/haproxy.cfg), for real on one machine.

50 tenants are created through the balancer (half with a key HAProxy mints, half with a key
the client chooses); each runs the payment flows, a string token, an eWallet session paid
on the hosted page and validated, and opens its dashboard. Then each instance is asked
directly, with the admin key, what it holds: every tenant on exactly one instance, with
its whole journal, ledger and tokens. Last, one instance is stopped gracefully in the
middle of a request and started again from its --state.
"""

from __future__ import annotations

import base64
import json
import secrets
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest

from emulator.tenants.tenants import shard_of
from tests.support.balancer import Haproxy, Instance
from tests.support.bodies import card

pytestmark = pytest.mark.haproxy  # without HAProxy: skipped with a summary line (tests/conftest.py)

TENANTS = 50
ADMIN_KEY = "scale-admin-" + secrets.token_hex(8)
ADMIN = {"X-Admin-Key": ADMIN_KEY}
CARD = card(cardHolderName="Ada Lovelace", expirationYear=2031, cvv="123")
PAGE_CARD = {**CARD, "cardNumber": "5555555555554444", "cvv": "321"}
ACCOUNT = {"paymentGatewayName": "NULLSuccess", "credentials": []}
# what each tenant's journal must hold, in order (the control API is not journaled)
JOURNALED = [
    ("PUT", "/PaymentGatewayAccounts/main"),
    ("POST", "/PaymentGateway/charge"),
    ("POST", "/PaymentGateway/authorize"),
    ("PUT", "/PaymentGateway/capture"),
    ("PUT", "/PaymentGateway/refund"),
    ("POST", "/StringTokens"),
    ("GET", "/StringTokens/{token}"),
    ("POST", "/EWalletOperations"),
    ("POST", "/_emulator/pay/{session}"),
    ("POST", "/EWalletOperations/validateResults"),
]


@dataclass
class Cluster:
    instances: list[Instance]
    haproxy: Haproxy
    client: httpx.Client

    def holders(self) -> dict[str, dict[str, dict[str, Any]]]:
        """Instance name → {API key → its entry in that instance's tenant list}, asked of
        each instance directly with the admin key."""
        found = {}
        for instance in self.instances:
            with instance.admin() as direct:
                listed = direct.get("/_emulator/tenants")
                assert listed.status_code == 200, listed.text
                found[instance.name] = {t["apiKey"]: t for t in listed.json()["tenants"]}
        return found


@dataclass
class TenantRun:
    """What one tenant did through the balancer."""

    key: str
    minted: bool
    references: list[str] = field(default_factory=list)
    string_token: str = ""
    session: str = ""
    result_token: str = ""
    payment_reference: str = ""
    validated: dict[str, Any] = field(default_factory=dict)
    page: str = ""
    dashboard: str = ""


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    workdir = tmp_path_factory.mktemp("scaleout")
    instances = [Instance(name, workdir / f"{name}.sqlite", ADMIN_KEY) for name in ("payemu1", "payemu2")]
    started: list[Instance] = []
    haproxy = None
    try:
        for instance in instances:
            instance.start()
            started.append(instance)
        haproxy = Haproxy(instances, workdir)
        with httpx.Client(base_url=haproxy.url, timeout=30) as client:
            yield Cluster(instances, haproxy, client)
    finally:
        if haproxy is not None:
            haproxy.stop()
        for instance in started:
            instance.stop()


def _ok(response: httpx.Response, status: int = 200) -> dict[str, Any]:
    assert response.status_code == status, f"{response.request.method} {response.request.url}: {response.text}"
    body: dict[str, Any] = response.json()
    return body


def _create(client: httpx.Client, index: int) -> TenantRun:
    if index % 2:
        chosen = f"team-{index}-{secrets.token_hex(6)}"
        created = _ok(client.post("/_emulator/tenants", json={"apiKey": chosen}, headers=ADMIN), 201)
        assert created["apiKey"] == chosen
        return TenantRun(chosen, minted=False)
    created = _ok(client.post("/_emulator/tenants", headers=ADMIN), 201)
    return TenantRun(created["apiKey"], minted=True)


def _flows(client: httpx.Client, run: TenantRun) -> None:
    key = {"X-Api-Key": run.key}
    account = {"paymentGatewayAccountName": "main"}
    _ok(client.put("/PaymentGatewayAccounts/main", json=ACCOUNT, headers=key))
    charge = _ok(
        client.post(
            "/PaymentGateway/charge", json={"amount": 10, "currency": "USD", "card": CARD, **account}, headers=key
        )
    )
    auth = _ok(
        client.post(
            "/PaymentGateway/authorize", json={"amount": 20, "currency": "USD", "card": CARD, **account}, headers=key
        )
    )
    follow = {"currency": "USD", "card": CARD, **account}
    capture = _ok(
        client.put(
            "/PaymentGateway/capture",
            json={"refTransId": auth["gatewayReference"], "amount": 20, **follow},
            headers=key,
        )
    )
    refund = _ok(
        client.put(
            "/PaymentGateway/refund",
            json={"refTransId": charge["gatewayReference"], "amount": 4, **follow},
            headers=key,
        )
    )
    run.references = [r["gatewayReference"] for r in (charge, auth, capture, refund)]
    run.string_token = _ok(client.post("/StringTokens", json={"payload": f"secret of {run.key}"}, headers=key), 201)[
        "token"
    ]
    held = _ok(client.get(f"/StringTokens/{run.string_token}", headers=key))
    assert held["clearPayload"] == f"secret of {run.key}"
    session = {
        "operation": "CHARGE",
        "mode": "TEST",
        "currencyCode": "USD",
        "amount": 7.5,
        "paymentGatewayAccountId": "main",
    }
    run.session = _ok(client.post("/EWalletOperations", json=session, headers=key))["token"]
    # the payment page and its POST carry no key: the session token names the tenant
    page = client.get(f"/_emulator/pay/{run.session}", headers={"Accept": "text/html"})
    assert page.status_code == 200, page.text
    run.page = page.text
    paid = _ok(client.post(f"/_emulator/pay/{run.session}", json={"card": PAGE_CARD}))
    run.result_token, run.payment_reference = paid["resultToken"], paid["gatewayReference"]
    run.validated = _ok(client.post("/EWalletOperations/validateResults", json=run.result_token, headers=key))
    dashboard = client.get("/_emulator/", params={"key": run.key, "admin": ADMIN_KEY})
    assert dashboard.status_code == 200, dashboard.text
    run.dashboard = dashboard.text


@pytest.fixture(scope="module")
def runs(cluster: Cluster) -> list[TenantRun]:
    made = [_create(cluster.client, index) for index in range(TENANTS)]
    for run in made:
        _flows(cluster.client, run)
    return made


@pytest.fixture(scope="module")
def direct(cluster: Cluster) -> Iterator[dict[str, httpx.Client]]:
    """Each instance asked directly, with the admin key, by its name."""
    clients = {instance.name: instance.admin() for instance in cluster.instances}
    try:
        yield clients
    finally:
        for client in clients.values():
            client.close()


@pytest.fixture(scope="module")
def holders(cluster: Cluster, runs: list[TenantRun]) -> dict[str, dict[str, dict[str, Any]]]:
    return cluster.holders()


def _home(holders: dict[str, dict[str, dict[str, Any]]], key: str) -> str:
    (name,) = [name for name, held in holders.items() if key in held]
    return name


# -- creating tenants through the balancer -------------------------------------------------
def test_minted_keys_are_haproxys(runs: list[TenantRun]) -> None:
    minted = [run.key for run in runs if run.minted]
    assert all(key.startswith("test-") and len(key) == len("test-") + 36 for key in minted)


def test_every_tenant_is_on_exactly_one_instance(runs: list[TenantRun], holders: dict[str, dict[str, Any]]) -> None:
    places = {run.key: [name for name, held in holders.items() if run.key in held] for run in runs}
    assert {key: len(found) for key, found in places.items()} == {run.key: 1 for run in runs}


def test_both_instances_hold_tenants(runs: list[TenantRun], holders: dict[str, dict[str, Any]]) -> None:
    counts = {name: sum(run.key in held for run in runs) for name, held in holders.items()}
    assert min(counts.values()) >= 5, counts


def test_each_tenant_holds_all_it_made(runs: list[TenantRun], holders: dict[str, dict[str, dict[str, Any]]]) -> None:
    sizes = {run.key: holders[_home(holders, run.key)][run.key] for run in runs}
    expected = {"transactions": 5, "stringTokens": 1, "sessions": 1, "journal": len(JOURNALED)}
    assert {key: {name: entry[name] for name in expected} for key, entry in sizes.items()} == {
        run.key: expected for run in runs
    }


# -- the whole journal, ledger and tokens, asked of the instance that holds the tenant ------
def test_journals_are_whole(
    direct: dict[str, httpx.Client], runs: list[TenantRun], holders: dict[str, dict[str, Any]]
) -> None:
    for run in runs:
        home = direct[_home(holders, run.key)]
        entries = _ok(home.get("/_emulator/requests", headers={"X-Api-Key": run.key}))["requests"]
        paths = [(e["method"], e["path"]) for e in sorted(entries, key=lambda e: e["id"])]
        wanted = [(m, p.format(token=run.string_token, session=run.session)) for m, p in JOURNALED]
        assert paths == wanted, run.key
        assert {e["status"] for e in entries} == {200, 201}


def test_ledgers_are_whole(
    direct: dict[str, httpx.Client], runs: list[TenantRun], holders: dict[str, dict[str, Any]]
) -> None:
    for run in runs:
        home = direct[_home(holders, run.key)]
        listed = _ok(home.get("/_emulator/transactions", headers={"X-Api-Key": run.key}))["transactions"]
        references = {t["reference"] for t in listed}
        assert references == {*run.references, run.payment_reference}, run.key


def test_tokens_are_whole(
    direct: dict[str, httpx.Client], runs: list[TenantRun], holders: dict[str, dict[str, Any]]
) -> None:
    for run in runs:
        home = direct[_home(holders, run.key)]
        token = home.get(f"/StringTokens/{run.string_token}", headers={"X-Api-Key": run.key})
        assert token.json()["clearPayload"] == f"secret of {run.key}"
        again = home.post("/EWalletOperations/validateResults", json=run.result_token, headers={"X-Api-Key": run.key})
        assert again.json() == run.validated


# -- the keyless paths ---------------------------------------------------------------------
def test_payment_pages_showed_their_session(runs: list[TenantRun]) -> None:
    assert all("7.50 USD" in run.page for run in runs)


def test_results_validated_through_the_balancer(runs: list[TenantRun]) -> None:
    assert [run.validated["providerTransactionId"] for run in runs] == [run.payment_reference for run in runs]


def test_dashboards_showed_their_tenant(runs: list[TenantRun]) -> None:
    assert all(run.references[0] in run.dashboard for run in runs)


def test_tokens_name_their_tenants_shard(runs: list[TenantRun]) -> None:
    for run in runs:
        for token in (run.session, run.result_token):
            header = json.loads(base64.urlsafe_b64decode(token.split(".")[0] + "=="))
            assert header["kid"] == shard_of(run.key)


def _reaches_home(cluster: Cluster, run: TenantRun, headers: dict[str, str]) -> bool:
    """Whether a keyless request with ``headers`` reaches the instance holding ``run``'s
    tenant (asked four times: a request HAProxy cannot place goes round robin)."""
    for _ in range(4):
        listed = _ok(cluster.client.get("/_emulator/tenants", headers={**headers, **ADMIN}))
        if run.key not in {t["apiKey"] for t in listed["tenants"]}:
            return False
    return True


def test_a_bearer_token_reaches_its_tenants_instance(cluster: Cluster, runs: list[TenantRun]) -> None:
    assert all(_reaches_home(cluster, run, {"Authorization": f"Bearer {run.session}"}) for run in runs[:6])


def test_a_key_parameter_reaches_its_tenants_instance(cluster: Cluster, runs: list[TenantRun]) -> None:
    reached = []
    for run in runs[:6]:
        listed = _ok(cluster.client.get("/_emulator/tenants", params={"key": run.key}, headers=ADMIN))
        reached.append(run.key in {t["apiKey"] for t in listed["tenants"]})
    assert reached == [True] * 6


# -- draining and restarting one instance --------------------------------------------------
def _wait_until_busy(haproxy: Haproxy, name: str, request: threading.Thread) -> None:
    """Until HAProxy has a request at ``name`` (or ``request`` is over)."""
    deadline = time.monotonic() + 20
    while int(haproxy.server_stats("scur").get(name) or 0) < 1 and request.is_alive():
        assert time.monotonic() < deadline, f"no request reached {name}: {haproxy.server_stats('scur')}"
        time.sleep(0.01)


def test_a_stopped_instance_finishes_its_requests_and_comes_back_from_its_state(
    cluster: Cluster, runs: list[TenantRun], holders: dict[str, dict[str, Any]]
) -> None:
    first = cluster.instances[0]
    run = next(r for r in runs if _home(holders, r.key) == first.name)
    key = {"X-Api-Key": run.key}
    # a Stripe account and a rule that makes its charge slow
    stripe = {"paymentGatewayName": "Stripe", "credentials": [{"key": "SecretKey", "value": "sk_test_scale"}]}
    _ok(cluster.client.put("/PaymentGatewayAccounts/slow", json=stripe, headers=key))
    slow = {"name": "slow", "when": {"amount": 42.42}, "then": {"operationResultCode": "Success", "delayMs": 1500}}
    _ok(cluster.client.post("/_emulator/scenarios", json=slow, headers=key), 201)
    answers: list[httpx.Response] = []
    body = {"amount": 42.42, "currency": "USD", "card": CARD, "paymentGatewayAccountName": "slow"}
    charging = threading.Thread(
        target=lambda: answers.append(cluster.client.post("/PaymentGateway/charge", json=body, headers=key))
    )
    charging.start()
    _wait_until_busy(cluster.haproxy, first.name, charging)
    assert charging.is_alive()  # the delayed charge is at the instance when it is told to stop
    assert first.stop() == 0  # SIGTERM while the charge is at this instance; waits for the exit
    charging.join(timeout=20)
    (answer,) = answers
    in_flight = _ok(answer)  # finished although its instance was stopping
    assert in_flight["operationResultCode"] == "Success"
    cluster.haproxy.wait_for(first.name, "DOWN")
    first.start()
    cluster.haproxy.wait_for(first.name, "UP")
    listed = _ok(cluster.client.get("/_emulator/transactions", headers=key))["transactions"]
    assert {t["reference"] for t in listed} >= {in_flight["gatewayReference"], *run.references}
    again = cluster.client.post("/EWalletOperations/validateResults", json=run.result_token, headers=key)
    assert _ok(again) == run.validated
    page = cluster.client.get(f"/_emulator/pay/{run.session}", headers={"Accept": "text/html"})
    assert 'data-testid="paid"' in page.text
