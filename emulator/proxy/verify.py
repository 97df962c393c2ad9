"""``payemu verify``: the conformance script (``emulator/data/conformance.yaml``) against the
upstream and a local payemu, then the drift table.

A key the upstream does not report as a sandbox key ends the run (exit 2) before any
payment. Exit status: 0 nothing drifts, 1 something does, 2 usage or connection errors."""

from __future__ import annotations

import argparse
import asyncio
import json
import secrets
import sys
from collections.abc import Callable, Mapping
from dataclasses import field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TextIO

import httpx

from emulator.domain.datafiles import data_path, parse_yaml
from emulator.domain.records import dataclass
from emulator.domain.release import INTERFACE_VERSION, __version__
from emulator.proxy import report
from emulator.proxy.forward import check_url, fetch

SCRIPT = data_path("conformance.yaml")
BAD_KEY = "payemu-verify-not-a-key"
EXIT_OK, EXIT_DRIFT, EXIT_ERROR = 0, 1, 2


@dataclass
class Step:
    id: str
    operation: str
    method: str
    path: str
    query: dict[str, str] = field(default_factory=dict)
    body: Any = None
    has_body: bool = False
    key: str = "default"  # default | none | bad
    save: dict[str, str] = field(default_factory=dict)
    ignore: list[str] = field(default_factory=list)
    ledger: list[str] = field(default_factory=list)
    mock_only: bool = False


@dataclass
class Script:
    version: int
    steps: list[Step]
    fields: dict[str, str]
    aspects: dict[str, str] = field(default_factory=dict)

    @property
    def operations(self) -> set[str]:
        return {step.operation for step in self.steps}


def load_script(path: str | Path = SCRIPT) -> Script:
    data = parse_yaml(Path(path).read_text(encoding="utf-8"))
    steps = [
        Step(
            id=str(item["id"]),
            operation=str(item["operation"]),
            method=str(item["method"]).upper(),
            path=str(item["path"]),
            query={str(k): str(v) for k, v in (item.get("query") or {}).items()},
            body=item.get("body"),
            has_body="body" in item,
            key=str(item.get("key", "default")),
            save={str(k): str(v) for k, v in (item.get("save") or {}).items()},
            ignore=[str(p) for p in item.get("ignore") or []],
            ledger=[str(e) for e in item.get("ledger") or []],
            mock_only=bool(item.get("mock-only")),
        )
        for item in data["steps"]
    ]
    fields = {str(k): str(v) for k, v in (data.get("fields") or {}).items()}
    aspects = {str(k): str(v) for k, v in (data.get("aspects") or {}).items()}
    return Script(int(data["version"]), steps, fields, aspects)


def fill(value: Any, variables: Mapping[str, str]) -> Any:
    """``value`` with every ``{{name}}`` replaced."""
    if isinstance(value, str):
        while "{{" in value and "}}" in value:
            start = value.index("{{")
            end = value.index("}}", start)
            name = value[start + 2 : end]
            value = value[:start] + variables.get(name, f"missing-{name}") + value[end + 2 :]
        return value
    if isinstance(value, dict):
        return {key: fill(item, variables) for key, item in value.items()}
    if isinstance(value, list):
        return [fill(item, variables) for item in value]
    return value


def pick(value: Any, dotted: str) -> Any:
    for part in dotted.split("."):
        value = value.get(part) if isinstance(value, dict) else None
    return value


class Side:
    """One service the script runs against, with the values its answers gave."""

    def __init__(self, name: str, client: httpx.AsyncClient, key: str, variables: dict[str, str]) -> None:
        self.name = name
        self.client = client
        self.key = key
        self.variables = dict(variables)

    async def send(self, step: Step) -> report.RecordedAnswer:
        headers = {"Accept": "application/json"}
        if step.key == "default":
            headers["X-Api-Key"] = self.key
        elif step.key == "bad":
            headers["X-Api-Key"] = BAD_KEY
        options: dict[str, Any] = {"headers": headers, "params": fill(step.query, self.variables) or None}
        if step.has_body:
            options["json"] = fill(step.body, self.variables)
        request = self.client.build_request(step.method, fill(step.path, self.variables), **options)
        response = await fetch(self.client, request)
        try:
            body, is_json = (json.loads(response.content) if response.content else None), True
        except ValueError:
            body, is_json = response.content.decode("utf-8", "replace"), False
        for name, dotted in step.save.items():
            found = pick(body, dotted)
            if isinstance(found, str) and found:
                self.variables[name] = found
        return report.RecordedAnswer(response.status, dict(response.headers), body, is_json)


class VerifyError(Exception):
    """Ends the run with exit status 2."""


async def preflight(upstream: Side) -> None:
    """Refuse a key the upstream does not report as a sandbox key."""
    answer = await upstream.send(Step("preflight", "ValidateApiKey", "GET", "/Utils/apiKey"))
    if answer.status == 401:
        raise VerifyError("the upstream refused the API key (401 from /Utils/apiKey)")
    if answer.status != 200 or not isinstance(answer.body, dict):
        raise VerifyError(f"/Utils/apiKey answered {answer.status}, not a key description; is the URL right?")
    if answer.body.get("isSandbox") is not True:
        raise VerifyError(
            "refusing to run: /Utils/apiKey does not report a sandbox key (isSandbox is "
            f"{json.dumps(answer.body.get('isSandbox'))}); verify pays, so it needs a sandbox key"
        )


def local_app() -> tuple[Any, str]:
    from emulator.app.build import create_app
    from emulator.domain.config import Settings

    settings = Settings()
    settings.card_form_port = None
    key = next(spec.key for spec in settings.keys if spec.is_sandbox)
    return create_app(settings), key


async def run(
    upstream_url: str,
    api_key: str,
    account: str | None = None,
    timeout: float = 30.0,
    out: TextIO | None = None,
    script: Script | None = None,
    transport: httpx.AsyncBaseTransport | None = None,
) -> tuple[int, dict[str, Any]]:
    """Run the script; (exit status, the JSON report)."""
    script = script or load_script()
    app, local_key = local_app()
    api = app.state.runtime.api
    enums = report.enum_fields(api)
    run_id = secrets.token_hex(4)
    variables = {"run": run_id, "ok": account or f"payemuVerifyOk{run_id}", "fail": f"payemuVerifyFail{run_id}"}
    started = datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")
    rows: list[report.Drift] = []
    steps: list[dict[str, Any]] = []
    say: Callable[[str], None] = lambda text: print(text, file=out or sys.stdout, flush=True)  # noqa: E731
    async with (
        httpx.AsyncClient(base_url=upstream_url, timeout=timeout, transport=transport, trust_env=False) as theirs,
        httpx.AsyncClient(base_url="http://payemu.local", transport=httpx.ASGITransport(app=app)) as ours,
    ):
        upstream = Side("upstream", theirs, api_key, variables)
        local = Side("payemu", ours, local_key, variables)
        say(f"payemu verify {__version__}: {upstream_url} against payemu (interface {INTERFACE_VERSION})")
        try:
            await preflight(upstream)
        except httpx.HTTPError as exc:
            raise VerifyError(f"cannot reach {upstream_url}: {exc or type(exc).__name__}") from None
        if account:
            body = {"paymentGatewayName": "NULLSuccess", "credentials": []}
            await ours.put(f"/PaymentGatewayAccounts/{account}", json=body, headers={"X-Api-Key": local_key})
        chosen = [step for step in script.steps if not (account and step.mock_only)]
        width = len(str(len(chosen)))
        for number, step in enumerate(chosen, 1):
            try:
                theirs_answer = await upstream.send(step)
            except httpx.HTTPError as exc:
                raise VerifyError(f"step {step.id}: the upstream did not answer: {exc or type(exc).__name__}") from None
            ours_answer = await local.send(step)
            found = report.compare(
                step.operation,
                step.id,
                theirs_answer,
                ours_answer,
                enums=enums,
                ledger=step.ledger,
                field_ledger=script.fields,
                aspect_ledger=script.aspects,
                ignore=step.ignore,
            )
            rows += found
            verdict = _count(len(found), "difference") if found else "same"
            say(
                f"[{number:>{width}}/{len(chosen)}] {step.operation:<28} {step.id:<24} "
                f"upstream {theirs_answer.status}  payemu {ours_answer.status}  {verdict}"
            )
            steps.append(
                {
                    "id": step.id,
                    "operation": step.operation,
                    "method": step.method,
                    "path": step.path,
                    "upstream": theirs_answer.status,
                    "payemu": ours_answer.status,
                    "differences": len(found),
                }
            )
    documented = {op.operation_id for op in api.operations.values()}
    covered = script.operations & documented
    say("")
    if rows:
        say(f"drift ({_count(len(rows), 'difference')}):")
        say(report.table(rows))
        say("")
    drifting = sorted({row.operation for row in rows})
    say(
        f"summary: {len(steps)} steps over {len(covered)} of {len(documented)} operations; "
        + (
            f"{_count(len(rows), 'difference')} in {_count(len(drifting), 'operation')}: {', '.join(drifting)}"
            if rows
            else "no drift"
        )
    )
    missing = sorted(documented - covered)
    if missing:
        say(f"not covered by the script: {', '.join(missing)}")
    header = {
        "payemu": __version__,
        "interface": INTERFACE_VERSION,
        "script": script.version,
        "upstream": upstream_url,
        "account": account,
        "startedAt": started,
    }
    document = report.document(header=header, steps=steps, rows=rows, operations=len(covered))
    return (EXIT_DRIFT if rows else EXIT_OK), document


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}{'' if number == 1 else 's'}"


def main(args: argparse.Namespace, out: TextIO | None = None) -> int:
    from emulator.domain.config import ConfigError

    url = check_url(args.upstream)
    if not args.api_key.strip():
        raise ConfigError("--api-key must not be empty")
    if args.timeout <= 0:
        raise ConfigError("--timeout must be a positive number of seconds")
    try:
        status, document = asyncio.run(run(url, args.api_key.strip(), args.account, args.timeout, out))
    except VerifyError as exc:
        print(f"payemu verify: {exc}", file=sys.stderr)
        return EXIT_ERROR
    if args.json:
        try:
            Path(args.json).write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
        except OSError as exc:
            print(f"payemu verify: --json {args.json}: {exc.strerror or exc}", file=sys.stderr)
            return EXIT_ERROR
        print(
            f"report written to {args.json} ({report.REPORT_FORMAT} version {report.REPORT_VERSION})",
            file=out or sys.stdout,
        )
    return status
