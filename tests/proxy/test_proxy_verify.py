"""``payemu verify`` (emulator/proxy/verify.py): no drift against the same version, every
mutation of the mutating proxy named with its operation, the safety checks, the script's
coverage of the interface document and of the Fidelity ledger."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from emulator.cli.main import main
from emulator.contract.openapi import OpenApi
from emulator.domain.datafiles import data_path
from emulator.proxy.verify import load_script
from tests.support.upstreams import DROPPED_FIELD, mutating_upstream, payemu_upstream

KEY = "sandbox-api-key"


def verify(url: str, *extra: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    status = main(["verify", "--upstream", url, "--api-key", KEY, *extra])
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def test_no_drift_against_the_same_version(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    report = tmp_path / "drift.json"
    with payemu_upstream() as upstream:
        status, out, _ = verify(upstream.url, "--json", str(report), capsys=capsys)
    assert status == 0, out
    steps = load_script().steps
    assert f"[ 1/{len(steps)}] ValidateApiKey" in out  # progress, operation by operation
    assert "summary: " in out
    assert "24 of 24 operations; no drift" in out
    document = json.loads(report.read_text())
    assert document["format"] == "payemu-verify"
    assert document["version"] == 1
    assert document["drift"] == []
    assert document["summary"]["differences"] == 0
    assert [s["id"] for s in document["steps"]] == [s.id for s in steps]
    assert KEY not in report.read_text()


def _rows(document: dict[str, Any], **match: Any) -> list[dict[str, Any]]:
    return [row for row in document["drift"] if all(row[k] == v for k, v in match.items())]


def test_each_mutation_is_named_with_its_operation(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    report = tmp_path / "drift.json"
    with payemu_upstream() as upstream, mutating_upstream(upstream.url) as mutating:
        status, out, _ = verify(mutating.url, "--json", str(report), capsys=capsys)
    assert status == 1, out
    document = json.loads(report.read_text())
    # a charge's 200 turned into 202
    [charged] = _rows(document, step="charge", aspect="status")
    assert charged["operation"] == "GatewayCharge"
    assert (charged["upstream"], charged["payemu"]) == ("202", "200")
    assert charged["ledger"] == ["success-status"]
    # 400 arrays turned into objects, on every operation that answered a 400
    shapes = _rows(document, aspect="error-body")
    assert {row["step"] for row in shapes} >= {"charge-400", "account-set-400", "iin-400", "capture-without-card"}
    assert {(row["upstream"], row["payemu"]) for row in shapes} == {("object", "ValidationErrorMessage array")}
    assert {row["operation"] for row in shapes} >= {"GatewayCharge", "PaymentGatewayAccountSet", "IinLookup"}
    assert all("error-bodies" in row["ledger"] for row in shapes)
    # a field dropped from every OperationResult
    dropped = _rows(document, aspect="field", field=DROPPED_FIELD)
    assert {row["operation"] for row in dropped} >= {"GatewayCharge", "GatewayAuthorize", "GatewayRefund"}
    assert {row["upstream"] for row in dropped} == {"absent"}
    assert _rows(document, step="charge", aspect="field", field=DROPPED_FIELD)[0]["payemu"] == "string"
    # the printed table names them too
    assert "GatewayCharge" in out
    assert "charge                   upstream 202  payemu 200" in out
    table = out[out.index("drift (") :]
    assert "error-body" in table
    assert f"field       {DROPPED_FIELD}" in table
    assert "summary: " in out
    assert "no drift" not in out
    assert set(document["summary"]["drifting"]) >= {"GatewayCharge", "PaymentGatewayAccountSet", "GatewayRefund"}


def test_a_live_key_is_refused_before_anything_is_paid(capsys: pytest.CaptureFixture[str]) -> None:
    with payemu_upstream() as upstream:
        status = main(["verify", "--upstream", upstream.url, "--api-key", "live-api-key"])
        journal = upstream.app.state.runtime.tenants.get("live-api-key").journal  # type: ignore[attr-defined]
        paths = [entry["path"] for entry in journal]
    assert status == 2
    assert "refusing to run: /Utils/apiKey does not report a sandbox key" in capsys.readouterr().err
    assert paths == ["/Utils/apiKey"]


def test_a_refused_key_and_a_lost_upstream_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    with payemu_upstream() as upstream:
        assert main(["verify", "--upstream", upstream.url, "--api-key", "no-such-key"]) == 2
        assert "refused the API key" in capsys.readouterr().err
    assert main(["verify", "--upstream", upstream.url, "--api-key", KEY]) == 2  # stopped now
    assert f"cannot reach {upstream.url}" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["verify", "--upstream", "sandbox.example.com", "--api-key", KEY], "is not an http(s) URL"),
        (["verify", "--upstream", "http://127.0.0.1:9", "--api-key", " "], "--api-key must not be empty"),
    ],
)
def test_usage_errors_exit_2(argv: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == 2
    assert message in capsys.readouterr().err


def test_usage_without_the_upstream_exits_2() -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["verify", "--api-key", KEY])
    assert exit_.value.code == 2


def test_the_script_covers_every_operation_and_names_real_ledger_entries(openapi: OpenApi) -> None:
    script = load_script()
    documented = {op.operation_id for op in openapi.operations.values()}
    assert script.operations == documented
    ledger = {entry["id"] for entry in yaml.safe_load(data_path("fidelity.yaml").read_text())["choices"]}
    named = {e for step in script.steps for e in step.ledger} | {*script.fields.values(), *script.aspects.values()}
    assert named <= ledger
    assert len({step.id for step in script.steps}) == len(script.steps)
    statuses = {step.id.rsplit("-", 1)[-1] for step in script.steps}
    assert {"400", "401", "404"} <= statuses  # the error paths


def test_the_script_pays_only_through_the_mock_gateways() -> None:
    script = load_script()
    gateways = {
        step.body.get("paymentGatewayName")
        for step in script.steps
        if step.operation == "PaymentGatewayAccountSet" and isinstance(step.body, dict)
    }
    assert gateways == {"NULLSuccess", "NULLFailure", None}  # None: the 400 step
    accounts = {
        step.body.get("paymentGatewayAccountName") or step.body.get("paymentGatewayAccountId")
        for step in script.steps
        if isinstance(step.body, dict) and step.path.startswith(("/PaymentGateway/", "/EWalletOperations"))
    }
    assert accounts == {"{{ok}}", "{{fail}}"}


def test_with_an_account_the_script_pays_through_it(capsys: pytest.CaptureFixture[str]) -> None:
    with payemu_upstream() as upstream:
        tenant = upstream.app.state.runtime.tenants.get(KEY)  # type: ignore[attr-defined]
        from emulator.stores.accounts import StoredAccount

        tenant.accounts.put(StoredAccount("myOwnAccount", "NULLSuccess", [], tenant.now()))
        status, out, _ = verify(upstream.url, "--account", "myOwnAccount", capsys=capsys)
        charges = [e for e in tenant.journal if e["path"] == "/PaymentGateway/charge" and e["status"] == 200]
    assert status == 0, out
    assert "account-ok " not in out  # the script's own NULLSuccess account is not created
    assert charges
    assert {e["request"]["paymentGatewayAccountName"] for e in charges} == {"myOwnAccount"}
