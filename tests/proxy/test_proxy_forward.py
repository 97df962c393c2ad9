"""``payemu proxy`` (emulator/proxy/forward.py): answers as the upstream gave them,
violations named in X-Payemu-Violations and the journal, 502/504 for a lost upstream, the
HAR recording (validated against HAR 1.2 and grepped for secrets), a killed proxy."""

from __future__ import annotations

import json
import signal
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import jsonschema
import pytest

from emulator.app.build import create_app
from emulator.domain.config import Settings
from emulator.edge.server import loopback_socket
from emulator.proxy import har
from emulator.proxy.forward import VIOLATIONS_HEADER, Matcher, Proxy, Upstream, violations_header
from emulator.proxy.har import HarWriter, read_entries
from tests.support.paths import TESTS_DIR
from tests.support.servers import PayemuProcess, ThreadServer, in_thread
from tests.support.upstreams import DROPPED_FIELD, mutating_upstream, payemu_upstream, slow_app

KEY = "sandbox-api-key"
HEADERS = {"X-Api-Key": KEY}
CARD = "4111111111111111"
CVV = "739"
HAR_SCHEMA = json.loads((TESTS_DIR / "data" / "har-1.2.schema.json").read_text())
ACCOUNT = {"paymentGatewayName": "NULLSuccess", "credentials": []}


def charge(amount: float = 25.0, account: str = "proxyMain") -> dict[str, Any]:
    card = {"cardHolderName": "Jane Smith", "cardNumber": CARD, "expirationMonth": 12, "expirationYear": 2030}
    return {"amount": amount, "currency": "USD", "paymentGatewayAccountName": account, "card": {**card, "cvv": CVV}}


# the same calls, sent directly and through the proxy
CALLS: list[tuple[str, str, Any]] = [
    ("GET", "/Utils/apiKey", None),
    ("PUT", "/PaymentGatewayAccounts/proxyMain", ACCOUNT),
    ("POST", "/PaymentGateway/charge", charge()),
    ("POST", "/PaymentGateway/authorize", charge(10.0)),
    ("POST", "/PaymentGateway/charge", {"currency": "USD"}),  # a 400 array
    ("GET", "/PaymentGatewayAccounts/nosuchAccount", None),  # a 404
    ("GET", "/Tools/luhn?number=4111111111111111", None),
    ("POST", "/StringTokens", {"payload": f"card {CARD}"}),
    ("GET", "/PaymentGateway", None),
]


@contextmanager
def proxy_to(upstream: str, record: Path | None = None, timeout: float = 30.0) -> Iterator[ThreadServer]:
    local = create_app(Settings(any_key=True))
    recorder = HarWriter(record) if record else None
    try:
        with in_thread(app=Proxy(local, Upstream(upstream, timeout), recorder)) as server:
            yield server
    finally:
        if recorder:
            recorder.close()


def send_all(base: str) -> list[httpx.Response]:
    with httpx.Client(base_url=base, headers=HEADERS, trust_env=False) as client:
        return [client.request(method, path, json=body) for method, path, body in CALLS]


MEANINGFUL = ("content-type", "location", "retry-after", "x-payemu-warnings")


def test_answers_through_the_proxy_are_byte_identical_to_direct_ones(tmp_path: Path) -> None:
    with payemu_upstream(seed=11) as direct, payemu_upstream(seed=11) as behind:
        straight = send_all(direct.url)
        with proxy_to(behind.url, tmp_path / "run.har") as proxy:
            proxied = send_all(proxy.url)
    for (method, path, body), one, other in zip(CALLS, straight, proxied, strict=True):
        assert other.status_code == one.status_code, (method, path)
        assert other.content == one.content, (method, path)
        for name in MEANINGFUL:
            mine, theirs = one.headers.get(name), other.headers.get(name)
            if name == "location" and mine is not None:
                mine, theirs = mine.split("/", 3)[-1], (theirs or "").split("/", 3)[-1]
            assert theirs == mine, (method, path, name)
        if body == {"currency": "USD"}:  # the one request that breaks the document
            assert other.headers[VIOLATIONS_HEADER].startswith("request amount: The Amount field is required.")
        else:
            assert VIOLATIONS_HEADER not in other.headers, (path, other.headers.get(VIOLATIONS_HEADER))
    assert {one.status_code for one in straight} >= {200, 400, 404}


def test_a_violating_upstream_answer_comes_back_as_it_came_and_is_flagged(tmp_path: Path) -> None:
    with payemu_upstream() as upstream, mutating_upstream(upstream.url) as mutating:
        with httpx.Client(base_url=mutating.url, headers=HEADERS, trust_env=False) as direct:
            direct.put("/PaymentGatewayAccounts/proxyMain", json=ACCOUNT)
            expected_400 = direct.post("/PaymentGateway/charge", json={"currency": "USD"})
            expected_charge = direct.post("/PaymentGateway/charge", json=charge())
        with (
            proxy_to(mutating.url, tmp_path / "bad.har") as proxy,
            httpx.Client(base_url=proxy.url, headers=HEADERS, trust_env=False) as client,
        ):
            bad_400 = client.post("/PaymentGateway/charge", json={"currency": "USD"})
            bad_charge = client.post("/PaymentGateway/charge", json=charge())
            journal = client.get("/_emulator/requests").json()
            page = client.get("/_emulator/", params={"key": KEY}, headers={"Accept": "text/html"}).text
    assert bad_400.status_code == 400
    assert isinstance(bad_400.json(), dict)  # the mutated object, as the upstream sent it
    assert bad_400.json().keys() == expected_400.json().keys()
    flagged = bad_400.headers[VIOLATIONS_HEADER]
    assert "response 400" in flagged
    assert "array" in flagged
    assert bad_charge.status_code == 202
    assert DROPPED_FIELD not in bad_charge.json()
    assert bad_charge.json().keys() == expected_charge.json().keys()
    assert (
        f"{DROPPED_FIELD}: The {DROPPED_FIELD[:1].upper()}{DROPPED_FIELD[1:]} field is required"
        in (bad_charge.headers[VIOLATIONS_HEADER])
    )
    entries = [e for e in journal["requests"] if e["path"] == "/PaymentGateway/charge"]
    assert len(entries) == 2
    notes = [" ".join(e.get("warnings") or []) for e in entries]
    assert "violation: response 400" in notes[0]
    assert f"violation: response 202 {DROPPED_FIELD}: The GatewayName field is required." in notes[1]
    assert entries[1]["operationId"] == "GatewayCharge"
    assert entries[1]["request"]["card"]["cardNumber"] == "411111******1111"  # the journal's masking
    assert "violation: response 400" in page  # the dashboard shows the journal's warnings
    recorded = read_entries(tmp_path / "bad.har")
    assert any(DROPPED_FIELD in " ".join(item.get("_payemuViolations", [])) for item in recorded)


def test_a_violating_request_is_forwarded_and_flagged() -> None:
    with payemu_upstream() as upstream, proxy_to(upstream.url) as proxy:
        answer = httpx.get(f"{proxy.url}/Tools/iin", params={"iin": "12"}, headers=HEADERS, trust_env=False)
    assert answer.status_code == 400  # the upstream's own answer
    assert answer.json()[0]["fieldName"] == "iin"
    assert "request query parameter iin" in answer.headers[VIOLATIONS_HEADER]


def test_the_recording_is_har_1_2_and_holds_no_card_number_cvv_or_key(tmp_path: Path) -> None:
    record = tmp_path / "run.har"
    with payemu_upstream() as upstream, proxy_to(upstream.url, record) as proxy:
        send_all(proxy.url)
    text = record.read_text()
    document = json.loads(text)
    jsonschema.validate(document, HAR_SCHEMA)
    assert len(document["log"]["entries"]) == len(CALLS)
    assert CARD not in text
    assert "411111******1111" in text
    assert '"cvv"' not in text.lower()
    assert f'\\"cvv\\":\\"{CVV}\\"' not in text
    assert KEY not in text
    headers = [h for e in document["log"]["entries"] for h in e["request"]["headers"] if h["name"] == "x-api-key"]
    assert headers
    assert {h["value"] for h in headers} == {"[redacted]"}


def test_an_unreachable_upstream_is_a_json_502() -> None:
    sock = loopback_socket()
    port = sock.getsockname()[1]
    sock.close()  # nothing listens there now
    with proxy_to(f"http://127.0.0.1:{port}") as proxy:
        answer = httpx.get(f"{proxy.url}/Utils/apiKey", headers=HEADERS, trust_env=False)
    assert answer.status_code == 502
    assert answer.headers["content-type"] == "application/json"
    assert answer.json()[0]["fieldName"] == "upstream"
    assert "could not be reached" in answer.json()[0]["errors"][0]


def test_an_upstream_that_does_not_answer_in_time_is_a_json_504() -> None:
    with in_thread(app=slow_app(5.0)) as slow, proxy_to(slow.base_url, timeout=0.2) as proxy:
        answer = httpx.get(f"{proxy.base_url}/Utils/apiKey", headers=HEADERS, trust_env=False, timeout=10)
    assert answer.status_code == 504
    assert answer.json() == [{"fieldName": "upstream", "errors": [f"{slow.base_url} did not answer within 0.2 s."]}]


def test_matcher_finds_templated_operations(openapi: Any) -> None:
    matcher = Matcher(openapi)
    op, params = matcher.find("GET", "/StringTokens/@abc/meta")
    assert op is not None
    assert op.operation_id == "StringTokenRetrieveMetaData"
    assert params == {"token": "@abc"}
    assert matcher.find("PATCH", "/PaymentGateway/charge")[0] is None


def test_the_violations_header_is_one_bounded_line() -> None:
    text = violations_header(["a\r\nb", *(f"problem {n}" for n in range(2000))])
    assert "\n" not in text
    assert len(text) < 4100
    assert text.endswith("(2001 violations in all; see the journal)")


def test_a_killed_proxy_leaves_a_readable_recording(tmp_path: Path) -> None:
    record = tmp_path / "killed.har"
    with payemu_upstream() as upstream:
        argv = ["proxy", "--upstream", upstream.url, "--record", str(record), "--log-level", "warning"]
        # up once the swagger document, forwarded to the upstream, answers
        with PayemuProcess(*argv, wait_path="/swagger/1.0/swagger.json", env={"PAYEMU_CARD_FORM_PORT": "0"}) as process:
            with httpx.Client(base_url=process.url, headers=HEADERS, trust_env=False) as client:
                assert client.put("/PaymentGatewayAccounts/proxyMain", json=ACCOUNT).status_code == 200
                assert client.post("/PaymentGateway/charge", json=charge()).status_code == 200
            process.stop(signal.SIGKILL, timeout=10)
    document = json.loads(record.read_text())
    jsonschema.validate(document, HAR_SCHEMA)
    methods = [e["request"]["method"] for e in document["log"]["entries"]]
    assert methods[-2:] == ["PUT", "POST"]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["proxy", "--upstream", "ftp://x"], "is not an http(s) URL"),
        (["proxy", "--upstream", "http://127.0.0.1:9", "--timeout", "0"], "--timeout must be a positive"),
    ],
)
def test_proxy_usage_errors_exit_2(argv: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    from emulator.cli.main import main

    assert main(argv) == 2
    assert message in capsys.readouterr().err


def test_a_violation_quoting_a_card_number_shows_it_masked() -> None:
    body = {**charge(), CARD: 1}  # a property named after the card: the message quotes it
    with (
        payemu_upstream() as upstream,
        proxy_to(upstream.url) as proxy,
        httpx.Client(base_url=proxy.url, headers=HEADERS, trust_env=False) as client,
    ):
        client.put("/PaymentGatewayAccounts/proxyMain", json=ACCOUNT)
        answer = client.post("/PaymentGateway/charge", json=body)
        journal = client.get("/_emulator/requests").json()["requests"]
    recording = json.dumps(
        har.entry(
            started=har.now(),
            elapsed_ms=1.0,
            method="POST",
            url="http://up/PaymentGateway/charge",
            request_headers=[],
            request_body=json.dumps(body).encode(),
            status=200,
            response_headers=[("X-Payemu-Warnings", f"unknown-property={CARD}")],
            response_body=answer.content,
        )
    )
    assert CARD not in recording
    flagged = answer.headers[VIOLATIONS_HEADER]
    assert "Unknown property '411111******1111'" in flagged
    assert CARD not in flagged
    assert CARD not in json.dumps(journal)


def test_an_upstream_answer_is_read_within_a_bound() -> None:
    import asyncio

    from emulator.proxy.forward import AnswerTooLarge, fetch

    transport = httpx.MockTransport(lambda request: httpx.Response(200, content=b"x" * 100))

    async def read(limit: int) -> bytes:
        async with httpx.AsyncClient(transport=transport) as client:
            return (await fetch(client, client.build_request("GET", "http://up/"), limit=limit)).content

    assert asyncio.run(read(100)) == b"x" * 100
    with pytest.raises(AnswerTooLarge, match="larger than 99 bytes"):
        asyncio.run(read(99))
