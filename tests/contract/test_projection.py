"""Answers shaped and checked for the document that serves them (emulator.contract.shaping).

A black-box sweep: each bundled document is served (payemu's own 1.0.11.6 and the two
published exports kept in tests/data), and every operation it shares with payemu is sent
its error paths — no key, an empty body, a body that is not JSON, a body of the wrong media
type, unknown names in its path, junk in its query. Every answer must carry a status the
operation declares, or one of the runtime's own (the key check's 401, the binder's 400, the
HTTP server's 413/415 …); the pipeline's response check would otherwise have recorded a
violation. Every 400 is an array, under every document.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from starlette.applications import Starlette
from starlette.testclient import TestClient

from emulator.contract import shaping as projection
from emulator.contract.openapi import ApiOperation, OpenApi, default_schema_path
from tests.support.paths import TESTS_DIR

DATA = TESTS_DIR / "data"
DOCUMENTS = {
    "1.0.11.6": default_schema_path(),
    "1.0.9.36": DATA / "openapi-1.0.9.36.json",
    "1.0.7.15": DATA / "openapi-1.0.7.15.yaml",
}
KEY = {"X-Api-Key": "sandbox-api-key"}
PATH_VALUES = {"token": "Z" * 32, "name": "noSuchAccount"}
QUERY_VALUES = {"iin": "x", "number": "x", "metaData": "maybe"}


def _requests(api: OpenApi, served: OpenApi) -> Iterator[tuple[ApiOperation, str, str, dict[str, Any]]]:
    """(operation, method, url, httpx arguments) of each error path of each operation
    that both ``api`` and payemu's own document have."""
    for (method, template), op in sorted(api.operations.items()):
        if served.find(method, template) is None:
            continue
        url = template.format(**PATH_VALUES)
        query = {p.name: QUERY_VALUES.get(p.name, "x") for p in op.parameters if p.location == "query"}
        yield op, method, url, {"params": query}  # no key
        yield op, method, url, {"params": query, "headers": KEY}
        if op.body is not None or op.raw_body:
            yield op, method, url, {"params": query, "headers": KEY, "json": {}}
            yield (
                op,
                method,
                url,
                {"params": query, "headers": {**KEY, "Content-Type": "application/json"}, "content": b"{"},
            )
            yield (
                op,
                method,
                url,
                {"params": query, "headers": {**KEY, "Content-Type": "text/csv"}, "content": b"a,b"},
            )


@pytest.mark.parametrize("version", list(DOCUMENTS))
def test_every_error_path_has_a_declared_status(version: str, make_app: Callable[..., Starlette]) -> None:
    api = OpenApi.load(DOCUMENTS[version])
    served = OpenApi.load()
    app = make_app(openapi=api)
    seen: dict[int, int] = {}
    with TestClient(app) as client:
        for op, method, url, arguments in _requests(api, served):
            answer = client.request(method, url, **arguments)
            declared = {int(code) for code in op.raw.get("responses", {}) if code.isdigit()}
            where = f"{version} {op.operation_id} {arguments}"
            assert answer.status_code in declared | projection.RUNTIME_ERRORS, (where, answer.status_code, answer.text)
            if answer.status_code == 400:
                assert isinstance(answer.json(), list), where
            seen[answer.status_code] = seen.get(answer.status_code, 0) + 1
    assert app.state.runtime.violations == []  # no undeclared status, no schema violation
    assert seen.get(401, 0) >= 15  # every operation was asked without a key
    assert seen.get(400, 0) >= 10


def test_a_delete_of_nothing_is_the_bodiless_200_where_that_is_all_the_document_declares(
    make_app: Callable[..., Starlette],
) -> None:
    api = OpenApi.load(DOCUMENTS["1.0.7.15"])
    with TestClient(make_app(openapi=api), headers=KEY) as client:
        answer = client.delete("/PaymentGatewayAccounts/noSuchAccount")
    assert answer.status_code == 200
    assert answer.content == b""


def test_an_undeclared_payment_status_is_a_violation(make_app: Callable[..., Starlette]) -> None:
    """The check itself: an answer the document does not declare (a 503 to status) is
    turned into a 500 naming it and recorded."""
    api = OpenApi.load(DOCUMENTS["1.0.9.36"])
    op = api.find("POST", "/PaymentGateway/status")
    assert op is not None
    body, checked, sent = projection.shape(op, 503, {"operationResultCode": "TemporaryFailure"}, False)
    assert checked == 503
    assert sent == 503
    assert "503" not in op.raw["responses"]
    assert json.dumps(body)
