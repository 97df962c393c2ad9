"""Control: runtime scenario rules per tenant, the effective table, reloading files."""

from __future__ import annotations

import gc
import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest
from starlette.applications import Starlette
from starlette.testclient import TestClient

from emulator.scenarios import Attempt
from tests.conftest import LIVE, SANDBOX

CARD = "4111111111111111"


def rule(name: str, result: str = "Rejected", **when: object) -> dict[str, object]:
    then: dict[str, object] = {"operationResultCode": result}
    if result == "Rejected":
        then["rejectReasonCode"] = "InsufficientFunds"
    return {"name": name, "when": when or {"cardNumber": CARD}, "then": then}


def attempt(card: str = CARD, amount: float = 10.0) -> Attempt:
    return Attempt(card_number=card, amount=amount, currency="USD", operation="Charge", gateway="Stripe", account="a")


def names(client: TestClient, headers: dict[str, str] = SANDBOX) -> list[str]:
    """Every rule's name, in order, page after page."""
    found: list[str] = []
    query = ""
    while True:
        page = client.get(f"/_emulator/scenarios{query}", headers=headers).json()
        found += [r["name"] for r in page["rules"]]
        if page["next"] is None:
            return found
        query = f"?after={page['next']}"


def test_list_shows_the_file_rules_with_their_source(client: TestClient) -> None:
    rules = client.get("/_emulator/scenarios").json()["rules"]
    assert rules, "the built-in test cards are listed"
    files = {r["source"].rsplit(":", 1)[0] for r in rules}  # payemu's conventions, then each gateway's triggers
    assert all(f.endswith("default-scenarios.yaml") or "/emulator/data/gateways/" in f for f in files), files
    assert any(f.endswith("/gateways/Stripe.yaml") for f in files)
    assert all(r["source"].rsplit(":", 1)[1].isdigit() for r in rules)


def test_add_one_rule_as_json(app: Starlette, client: TestClient) -> None:
    response = client.post("/_emulator/scenarios", json=rule("broke"))
    assert response.status_code == 201
    assert response.json() == {"rules": [{**rule("broke"), "source": "runtime"}]}
    assert names(client)[0] == "broke"
    tenant = app.state.runtime.tenants.get("sandbox-api-key")
    outcome = app.state.runtime.scenarios.decide(tenant, attempt())
    assert (outcome.operation_result_code, outcome.reject_reason_code, outcome.rule) == (
        "Rejected",
        "InsufficientFunds",
        "broke",
    )


def test_add_a_file_as_yaml(client: TestClient) -> None:
    text = (
        "scenarios:\n"
        "  - name: slow\n"
        "    when: {amount: {min: 100, max: 200}}\n"
        "    then: {operationResultCode: Success, delayMs: 50}\n"
        "  - name: flaky\n"
        "    when: {cardNumber: '4111111111111111'}\n"
        "    sequence:\n"
        "      - {operationResultCode: TemporaryFailure}\n"
        "      - {operationResultCode: Success}\n"
    )
    response = client.post("/_emulator/scenarios", content=text, headers={"Content-Type": "application/yaml"})
    assert response.status_code == 201
    assert [r["name"] for r in response.json()["rules"]] == ["slow", "flaky"]
    assert names(client)[:2] == ["slow", "flaky"]


def test_a_list_and_a_scenarios_object_as_json(client: TestClient) -> None:
    assert client.post("/_emulator/scenarios", json=[rule("a"), rule("b")]).status_code == 201
    assert client.post("/_emulator/scenarios", json={"scenarios": [rule("c")]}).status_code == 201
    # the newest batch first, each batch in its own order, then the files
    assert names(client)[:3] == ["c", "a", "b"]


def test_runtime_rules_are_per_tenant(app: Starlette, client: TestClient) -> None:
    client.post("/_emulator/scenarios", json=rule("mine"))
    assert "mine" not in names(client, LIVE)
    live = app.state.runtime.tenants.get("live-api-key")
    sandbox = app.state.runtime.tenants.get("sandbox-api-key")
    assert app.state.runtime.scenarios.decide(sandbox, attempt()).rule == "mine"
    theirs = app.state.runtime.scenarios.decide(live, attempt())
    assert theirs is None or theirs.rule != "mine"


def test_same_name_replaces_and_restarts_its_sequence(app: Starlette, client: TestClient) -> None:
    flaky = {
        "name": "flaky",
        "when": {"cardNumber": CARD},
        "sequence": [{"operationResultCode": "TemporaryFailure"}, {"operationResultCode": "Success"}],
    }
    client.post("/_emulator/scenarios", json=flaky)
    client.post("/_emulator/scenarios", json=rule("other", amount=1))
    tenant = app.state.runtime.tenants.get("sandbox-api-key")
    book = app.state.runtime.scenarios
    assert [book.decide(tenant, attempt()).operation_result_code for _ in range(3)] == [
        "TemporaryFailure",
        "Success",
        "Success",
    ]
    client.post("/_emulator/scenarios", json=flaky)
    assert names(client)[:2] == ["flaky", "other"]
    assert names(client).count("flaky") == 1
    assert book.decide(tenant, attempt()).operation_result_code == "TemporaryFailure"


def test_remove_one_and_all(client: TestClient) -> None:
    client.post("/_emulator/scenarios", json=[rule("a"), rule("b"), rule("c")])
    removed = client.delete("/_emulator/scenarios/b")
    assert removed.status_code == 200
    assert removed.json() == {"removed": ["b"]}
    assert names(client)[:2] == ["a", "c"]
    missing = client.delete("/_emulator/scenarios/b")
    assert missing.status_code == 404
    assert missing.json()[0]["fieldName"] == "name"
    everything = client.delete("/_emulator/scenarios")
    assert everything.json() == {"removed": ["a", "c"]}
    assert all(r["source"] != "runtime" for r in client.get("/_emulator/scenarios").json()["rules"])


def test_file_rules_cannot_be_removed(client: TestClient) -> None:
    first_file_rule = names(client)[0]
    response = client.delete(f"/_emulator/scenarios/{first_file_rule}")
    assert response.status_code == 404
    assert "file rules are changed in their files" in response.json()[0]["errors"][0]


def test_reset_drops_runtime_rules(client: TestClient) -> None:
    client.post("/_emulator/scenarios", json=rule("gone"))
    client.post("/_emulator/reset")
    assert "gone" not in names(client)


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (
            [rule("ok"), {"name": "bad", "when": {"cardNumber": CARD}, "then": {"operationResultCode": "Bogus"}}],
            [("scenarios[1].then.operationResultCode", "'Bogus' is not one of")],
        ),
        (
            {"name": "x", "when": {"colour": "red"}, "then": {"operationResultCode": "Success"}},
            [("scenarios[0].when.colour", "")],
        ),
        ({"scenarios": [rule("dup"), rule("dup")]}, [("body", "duplicate rule name 'dup'")]),
        ({"scenarios": [rule("a")], "extra": 1}, [("body", "unknown key 'extra'")]),
        ([5], [("body", "")]),
        (
            {"name": "g", "when": {"gateway": "Strip"}, "then": {"operationResultCode": "Rejected"}},
            [("scenarios[0].when.gateway", "unknown gateway 'Strip'; did you mean 'Stripe'? (one of ")],
        ),
        (
            {"name": "a", "when": {"account": "mainstripe"}, "then": {"operationResultCode": "Rejected"}},
            [("scenarios[0].when.account", "unknown account 'mainstripe' (allowed: none)")],
        ),
    ],
)
def test_bad_rules_are_400_naming_the_rule_path(
    client: TestClient, body: object, expected: list[tuple[str, str]]
) -> None:
    response = client.post("/_emulator/scenarios", json=body)
    assert response.status_code == 400, response.text
    entries = response.json()
    assert [e["fieldName"] for e in entries] == [field for field, _ in expected]
    for entry, (_, words) in zip(entries, expected, strict=True):
        assert words in entry["errors"][0]
    assert all(r["source"] != "runtime" for r in client.get("/_emulator/scenarios").json()["rules"])


def test_an_account_must_be_the_tenants_own(client: TestClient) -> None:
    """An account is checked where a tenant exists: the rule names one the caller stored."""
    account = {"paymentGatewayName": "Stripe", "credentials": [{"key": "SecretKey", "value": "sk_test_x"}]}
    stored = client.put("/PaymentGatewayAccounts/mainstripe", json=account)
    assert stored.status_code == 200, stored.text
    mistyped = {"name": "a", "when": {"account": "mainstrip"}, "then": {"operationResultCode": "Rejected"}}
    response = client.post("/_emulator/scenarios", json=mistyped)
    assert response.status_code == 400
    [entry] = response.json()
    assert entry["errors"] == ["unknown account 'mainstrip'; did you mean 'mainstripe'? (allowed: mainstripe)"]
    right = {**mistyped, "when": {"account": "MAINSTRIPE"}}  # matched as the engine does, case ignored
    assert client.post("/_emulator/scenarios", json=right).status_code == 201
    # another tenant has no such account
    assert client.post("/_emulator/scenarios", json=right, headers=LIVE).status_code == 400


def test_yaml_problems_carry_the_line(client: TestClient) -> None:
    text = "- name: a\n  when: {amount: 5}\n  then:\n    operationResultCode: Nope\n"
    response = client.post("/_emulator/scenarios", content=text, headers={"Content-Type": "text/yaml"})
    assert response.status_code == 400
    entry = response.json()[0]
    assert entry["fieldName"] == "scenarios[0].then.operationResultCode"
    assert entry["errors"][0].startswith("line 4: ")
    syntax = client.post("/_emulator/scenarios", content="- name: [", headers={"Content-Type": "text/yaml"})
    assert syntax.status_code == 400
    assert syntax.json()[0]["fieldName"] == "body"
    assert "YAML syntax error" in syntax.json()[0]["errors"][0]


def test_json_text_keeps_its_lines(client: TestClient) -> None:
    text = json.dumps([rule("a"), {"name": "b", "then": {"operationResultCode": "Rejected", "delayMs": -1}}], indent=2)
    response = client.post("/_emulator/scenarios", content=text, headers={"Content-Type": "application/json"})
    assert response.status_code == 400
    entry = response.json()[0]
    assert entry["fieldName"] == "scenarios[1].then.delayMs"
    line = int(entry["errors"][0].split(":")[0].removeprefix("line "))
    assert '"delayMs": -1' in text.splitlines()[line - 1]


@pytest.mark.parametrize(
    ("content", "media", "status", "field"),
    [
        (b"", "application/json", 400, "body"),
        (b"   \n", "application/yaml", 400, "body"),
        (b"name: a", "application/x-www-form-urlencoded", 415, "Content-Type"),
        (b"name: a", "", 415, "Content-Type"),
        (b"\xff\xfe", "application/yaml", 400, "body"),
    ],
)
def test_unusable_bodies(client: TestClient, content: bytes, media: str, status: int, field: str) -> None:
    headers = {"Content-Type": media} if media else {}
    response = client.post("/_emulator/scenarios", content=content, headers=headers)
    assert response.status_code == status
    assert response.json()[0]["fieldName"] == field


def test_at_most_so_many_runtime_rules(client: TestClient, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(client.app.state.runtime.tenants.get("sandbox-api-key").rules, "limit", 2)  # type: ignore[attr-defined]
    assert client.post("/_emulator/scenarios", json=[rule("a"), rule("b")]).status_code == 201
    assert client.post("/_emulator/scenarios", json=rule("a")).status_code == 201  # a replacement
    response = client.post("/_emulator/scenarios", json=rule("c"))
    assert response.status_code == 400
    assert response.json() == [{"fieldName": "body", "errors": ["A tenant holds at most 2 runtime rules."]}]


# -- reloading the files ---------------------------------------------------------------------
def _write(path: Path, *rules: dict[str, object]) -> None:
    path.write_text(json.dumps({"scenarios": list(rules)}))


def test_reload_keeps_state(make_app: Callable[..., Starlette], tmp_path: Path) -> None:
    rules_file = tmp_path / "rules.yaml"
    _write(rules_file, rule("from-file-1"))
    app = make_app(scenario_paths=[str(rules_file)])
    with TestClient(app, headers=SANDBOX) as client:
        client.post("/_emulator/scenarios", json=rule("runtime-rule"))
        client.get("/Utils/apiKey")
        assert names(client)[:2] == ["runtime-rule", "from-file-1"]
        _write(rules_file, rule("from-file-2"), rule("from-file-3"))
        response = client.post("/_emulator/scenarios/reload")
        assert response.status_code == 200
        body = response.json()
        assert body["status"] == "reloaded"
        assert body["rules"] == len(names(client)) - 1
        assert names(client)[:3] == ["runtime-rule", "from-file-2", "from-file-3"]
        assert len(client.get("/_emulator/requests").json()["requests"]) == 1


def test_a_bad_reload_keeps_the_old_rules(make_app: Callable[..., Starlette], tmp_path: Path) -> None:
    rules_file = tmp_path / "rules.yaml"
    _write(rules_file, rule("good"))
    app = make_app(scenario_paths=[str(rules_file)])
    with TestClient(app, headers=SANDBOX) as client:
        rules_file.write_text("scenarios:\n  - name: broken\n    then: {operationResultCode: Nope}\n")
        response = client.post("/_emulator/scenarios/reload")
        assert response.status_code == 400
        [entry] = response.json()
        assert entry["fieldName"] == "scenarios"
        assert entry["errors"][0].startswith(f"{rules_file}:3: ")
        assert names(client)[0] == "good"


def _alias_rule(name: str) -> str:
    """1,000 outcomes, each an alias of one with a 500-character description: under 1 KB
    of YAML, over 500 KB once listed."""
    description = "d" * 500
    outcome = "{operationResultCode: Rejected, gatewayResultDescription: '" + description + "'}"
    return f"- name: {name}\n  sequence: [&o {outcome}, {', '.join(['*o'] * 999)}]\n"


def test_the_listing_comes_in_pages_bounded_in_bytes(client: TestClient) -> None:
    from emulator.control.scenarios import PAGE_BYTES

    yaml_headers = {"Content-Type": "application/yaml"}
    for n in range(12):
        added = client.post("/_emulator/scenarios", content=_alias_rule(f"big{n}"), headers=yaml_headers)
        assert added.status_code == 201, added.text
    seen: list[str] = []
    pages, cursor = 0, None
    while True:
        page = client.get("/_emulator/scenarios", params={"after": cursor} if cursor else {})
        assert page.status_code == 200, page.text
        assert len(page.content) <= PAGE_BYTES
        seen += [r["name"] for r in page.json()["rules"]]
        pages += 1
        cursor = page.json()["next"]
        if cursor is None:
            break
    assert pages >= 3  # 12 rules of over 500 KB each: at most about 7 a page
    assert seen[:12] == [f"big{n}" for n in range(11, -1, -1)]  # newest batch first, as matched
    assert len(seen) == len(set(seen)) and "success-amount" in seen


def test_a_small_page_and_a_bad_cursor(client: TestClient) -> None:
    first = client.get("/_emulator/scenarios", params={"pageSize": 2}).json()
    assert len(first["rules"]) == 2 and first["next"] == "2"
    second = client.get("/_emulator/scenarios", params={"pageSize": 2, "after": first["next"]}).json()
    assert second["rules"][0]["name"] not in [r["name"] for r in first["rules"]]
    refused = client.get("/_emulator/scenarios", params={"after": "99999"})
    assert refused.status_code == 400
    assert refused.json()[0]["fieldName"] == "after"


def test_rules_of_too_many_values_are_refused_before_they_are_built(client: TestClient) -> None:
    """A 1 MB flow list of 520,000 one-letter values: counted as it is read and refused at
    100,000, before the line-keeping loader builds it (which held 190 MiB for it) and before
    the refusal names its rules (a second build)."""
    text = "[" + ",".join(["a"] * 520_000) + "]"
    gc.collect()
    before = _rss_bytes()
    refused = client.post("/_emulator/scenarios", content=text, headers={"Content-Type": "application/yaml"})
    grown = _rss_bytes() - before
    assert refused.status_code == 400
    assert refused.json() == [{"fieldName": "body", "errors": ["the document expands to more than 100000 values"]}]
    assert grown < 32 * 1024 * 1024, grown


def _rss_bytes() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
