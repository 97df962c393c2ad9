"""``payemu serve --replay`` (emulator/proxy/replay.py): the recorded answers for the
recorded requests, in order; the simulation (and a journal note) or, strict, a near-miss
error for the rest."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from starlette.applications import Starlette
from starlette.testclient import TestClient

from emulator.cli.main import main
from emulator.proxy.replay import NO_MATCH_STATUS, REPLAY_HEADER, Recording, Replay, canonical_body
from tests.proxy.test_proxy_forward import ACCOUNT, HEADERS, charge, proxy_to
from tests.support.servers import PayemuProcess
from tests.support.upstreams import payemu_upstream

CALLS: list[tuple[str, str, Any]] = [
    ("PUT", "/PaymentGatewayAccounts/proxyMain", ACCOUNT),
    ("POST", "/PaymentGateway/charge", charge(25.0)),
    ("POST", "/PaymentGateway/charge", charge(25.0)),  # the same request again: a second answer
    ("POST", "/PaymentGateway/charge", {"currency": "USD"}),
    ("GET", "/Tools/luhn?number=4111111111111111&metaData=true", None),
    ("GET", "/PaymentGatewayAccounts/proxyMain", None),
]


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[httpx.Response]]:
    """A recording of CALLS through ``payemu proxy`` to a second payemu, and the answers."""
    record = tmp_path_factory.mktemp("replay") / "session.har"
    with (
        payemu_upstream() as upstream,
        proxy_to(upstream.url, record) as proxy,
        httpx.Client(base_url=proxy.url, headers=HEADERS, trust_env=False) as client,
    ):
        answers = [client.request(method, path, json=body) for method, path, body in CALLS]
    return record, answers


@pytest.fixture
def replaying(
    recorded: tuple[Path, list[httpx.Response]], make_app: Callable[..., Starlette]
) -> Callable[..., TestClient]:
    def make(strict: bool = False) -> TestClient:
        app = make_app()
        return TestClient(Replay(app, Recording(recorded[0]), strict), headers=HEADERS)  # type: ignore[arg-type]

    return make


@pytest.fixture
def replay(replaying: Callable[..., TestClient]) -> Iterator[TestClient]:
    with replaying() as client:
        yield client


def test_recorded_requests_get_the_recorded_answers_in_order(
    replay: TestClient, recorded: tuple[Path, list[httpx.Response]]
) -> None:
    _, answers = recorded
    first, second = answers[1].json()["gatewayReference"], answers[2].json()["gatewayReference"]
    assert first != second
    for (method, path, body), answer in zip(CALLS, answers, strict=True):
        again = replay.request(method, path, json=body)
        assert again.status_code == answer.status_code, (method, path)
        assert again.content == answer.content, (method, path)
        assert again.headers["content-type"] == answer.headers["content-type"]
        assert again.headers[REPLAY_HEADER].startswith("session.har entry ")


def test_query_order_and_json_spacing_do_not_matter(replay: TestClient) -> None:
    answer = replay.get("/Tools/luhn?metaData=true&number=4111111111111111")
    assert answer.headers[REPLAY_HEADER] == "session.har entry 5"
    account = replay.put(
        "/PaymentGatewayAccounts/proxyMain",
        content=b'{ "credentials": [],  "paymentGatewayName": "NULLSuccess" }',
        headers={"Content-Type": "application/json"},
    )
    assert account.headers[REPLAY_HEADER] == "session.har entry 1"


def test_an_unmatched_request_goes_to_the_simulation_and_the_journal_says_so(replay: TestClient) -> None:
    answer = replay.get("/Utils/apiKey")
    assert answer.status_code == 200
    assert answer.json()["isSandbox"] is True
    assert REPLAY_HEADER not in answer.headers
    assert answer.headers["X-Payemu-Warnings"] == "replay: not in session.har; answered by the simulation"
    journal = replay.get("/_emulator/requests").json()["requests"]
    assert journal[-1]["path"] == "/Utils/apiKey"
    assert journal[-1]["warnings"] == ["replay: not in session.har; answered by the simulation"]


def test_used_up_answers_no_longer_match(replay: TestClient) -> None:
    for _ in range(2):
        assert replay.post("/PaymentGateway/charge", json=charge(25.0)).headers[REPLAY_HEADER]
    third = replay.post("/PaymentGateway/charge", json=charge(25.0))
    assert REPLAY_HEADER not in third.headers
    assert third.status_code == 400  # the simulation: this tenant has no account proxyMain


def test_replayed_answers_are_journaled(replay: TestClient) -> None:
    replay.post("/PaymentGateway/charge", json=charge(25.0))
    [entry] = replay.get("/_emulator/requests").json()["requests"]
    assert entry["operationId"] == "GatewayCharge"
    assert entry["warnings"] == ["replayed: session.har entry 2: POST /PaymentGateway/charge"]
    assert entry["request"]["card"]["cardNumber"] == "411111******1111"


def test_strict_names_the_nearest_recorded_request_and_the_difference(
    replaying: Callable[..., TestClient],
) -> None:
    with replaying(strict=True) as strict:
        answer = strict.post("/PaymentGateway/charge", json=charge(26.0))
        other_path = strict.get("/PaymentGatewayAccounts/proxyOther")
    assert answer.status_code == NO_MATCH_STATUS
    assert answer.headers[REPLAY_HEADER] == "no-match"
    [error] = answer.json()
    assert error["fieldName"] == "replay"
    message = error["errors"][0]
    assert message.startswith("No request recorded in session.har matches POST /PaymentGateway/charge.")
    assert "Nearest: entry 2: POST /PaymentGateway/charge; body amount: 26.0 sent, 25.0 recorded." in message
    assert (
        "Nearest: entry 6: GET /PaymentGatewayAccounts/proxyMain; path /PaymentGatewayAccounts/proxyOther sent"
        in (other_path.json()[0]["errors"][0])
    )


def test_a_masked_card_number_matches_the_recorded_one() -> None:
    one = canonical_body(json.dumps({"card": {"cardNumber": "4111111111111111", "cvv": "123"}}))
    other = canonical_body(json.dumps({"card": {"cvv": "999", "cardNumber": "4111119999991111"}}))
    assert one == other == '{"card":{"cardNumber":"411111******1111"}}'


def test_serve_replay_options_are_checked(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["serve", "--replay-strict"]) == 2
    assert "--replay-strict needs --replay FILE" in capsys.readouterr().err
    bad = tmp_path / "bad.har"
    bad.write_text('{"log": {"version": "1.2"}}')
    assert main(["serve", "--replay", str(bad)]) == 2
    err = capsys.readouterr().err
    assert "bad.har" in err
    assert "no log.entries" in err


def test_payemu_serve_replay_answers_from_the_file(recorded: tuple[Path, list[httpx.Response]]) -> None:
    record, answers = recorded
    argv = ["serve", "--replay", str(record), "--replay-strict", "--log-level", "warning"]
    with PayemuProcess(*argv, wait_path="/swagger/1.0/swagger.json", env={"PAYEMU_CARD_FORM_PORT": "0"}) as process:
        with httpx.Client(base_url=process.url, headers=HEADERS, trust_env=False) as client:
            method, path, body = CALLS[1]
            again = client.request(method, path, json=body)
            missed = client.request(method, path, json=charge(99.0))
        _, output = process.stop(timeout=20)
    assert again.status_code == answers[1].status_code
    assert again.content == answers[1].content
    assert missed.status_code == NO_MATCH_STATUS
    assert "body amount: 99.0 sent, 25.0 recorded" in missed.json()[0]["errors"][0]
    assert f"replay         {record} (6 exchanges, strict" in output
