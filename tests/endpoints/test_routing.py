"""A documented path's route: Starlette's Route in every way a router reads it, its regular
expression compiled when first read."""

from __future__ import annotations

from typing import Any

import pytest
from starlette.routing import Match, NoMatchFound, Route
from starlette.testclient import TestClient

from emulator.endpoints.routing import OperationRoute
from tests.conftest import SANDBOX


def _endpoint() -> Any:
    async def app(scope: Any, receive: Any, send: Any) -> None:
        raise AssertionError("not called")

    return app


@pytest.mark.parametrize(
    ("path", "methods", "url", "method"),
    [
        ("/Utils/apiKey", ["GET"], "/Utils/apiKey", "GET"),
        ("/Utils/apiKey", ["GET"], "/Utils/apiKey", "HEAD"),
        ("/Utils/apiKey", ["GET"], "/Utils/apiKey", "POST"),
        ("/StringTokens/{token}", ["GET", "DELETE"], "/StringTokens/abc", "DELETE"),
        ("/StringTokens/{token}", ["GET", "DELETE"], "/StringTokens/abc/meta", "GET"),
        ("/StringTokens/{token}/meta", ["GET"], "/StringTokens/a%20b/meta", "GET"),
        ("/PaymentGateway", ["GET"], "/PaymentGateway/", "GET"),
    ],
)
def test_it_matches_as_starlettes_route_does(path: str, methods: list[str], url: str, method: str) -> None:
    ours = OperationRoute(path, dict.fromkeys(methods))  # type: ignore[arg-type]
    theirs = Route(path, _endpoint(), methods=methods, name=path)
    scope = {"type": "http", "path": url, "root_path": "", "method": method}
    (match, child), (expected, expected_child) = ours.matches(scope), theirs.matches(scope)
    assert match is expected
    assert (child.get("path_params"), ours.methods) == (expected_child.get("path_params"), theirs.methods)
    assert (ours.path_format, ours.param_convertors.keys()) == (theirs.path_format, theirs.param_convertors.keys())
    if match is not Match.NONE:
        assert child["endpoint"] is ours.operations


def test_its_regular_expression_is_compiled_when_first_read() -> None:
    route = OperationRoute("/StringTokens/{token}", dict.fromkeys(["GET"]))  # type: ignore[arg-type]
    assert "path_regex" not in vars(route)
    assert route.url_path_for("/StringTokens/{token}", token="t1") == "/StringTokens/t1"
    assert vars(route)["path_regex"].pattern == "^/StringTokens/(?P<token>[^/]+)$"
    with pytest.raises(NoMatchFound):
        route.url_path_for("/StringTokens/{token}")
    with pytest.raises(AttributeError, match="no attribute 'elsewhere'"):
        route.elsewhere  # noqa: B018


def test_a_fixed_path_is_answered_without_compiling_it(client: TestClient) -> None:
    assert client.get("/Utils/apiKey", headers=SANDBOX).json()["status"] == "OK"
    routes = {route.path: route for route in client.app.router.routes if isinstance(route, OperationRoute)}  # type: ignore[attr-defined]
    assert "path_regex" not in vars(routes["/Utils/apiKey"])
    answer = client.get("/StringTokens/nothing-here", headers=SANDBOX)  # found by Starlette's scan
    assert (answer.status_code, answer.json()[0]["fieldName"]) == (400, "token")
    assert "path_regex" in vars(routes["/StringTokens/{token}"])
