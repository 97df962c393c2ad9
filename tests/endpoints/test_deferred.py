"""payemu's own routes (control API, pages, eWallet library) are built on their first
request, and answer then exactly as routes built at start-up would; an operation's handler
module is imported by its first call."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest
from starlette.applications import Starlette
from starlette.responses import PlainTextResponse
from starlette.routing import Match, Mount, NoMatchFound, Route
from starlette.testclient import TestClient

from emulator import api
from emulator.app.build import OWN_PREFIXES, create_app
from emulator.endpoints.deferred import Deferred, OnFirstCall
from emulator.endpoints.pipeline import Handler
from emulator.endpoints.routing import FastRouter
from tests.conftest import SANDBOX
from tests.support.bodies import NULL_SUCCESS, card

CHARGE = {"amount": 10.5, "currency": "USD", "paymentGatewayAccount": NULL_SUCCESS, "card": card(cvv="123")}


def _own(client: TestClient) -> Deferred:
    found = [route for route in client.app.router.routes if isinstance(route, Deferred)]  # type: ignore[attr-defined]
    assert len(found) == 1
    return found[0]


def test_a_payment_leaves_payemus_own_routes_unbuilt(client: TestClient) -> None:
    own = _own(client)
    answer = client.get("/Utils/apiKey")
    assert answer.status_code == 200 and answer.json()["isSandbox"] is True
    missing = client.get("/Payment/no-such-path/at-all")
    assert missing.status_code == 404
    assert own._build is not None


@pytest.mark.parametrize(
    ("method", "path", "status"),
    [
        ("GET", "/_emulator/openapi.json", 200),  # a fixed path, found by the scan once built
        ("DELETE", "/_emulator/openapi.json", 405),  # a partial match: the route's methods
        ("GET", "/_emulator/no-such-page", 404),
        ("GET", "/favicon.ico", 200),
    ],
)
def test_the_first_request_builds_them_and_gets_starlettes_answer(
    client: TestClient, method: str, path: str, status: int
) -> None:
    answer = client.request(method, path)
    assert answer.status_code == status, answer.text
    assert _own(client)._build is None
    if status == 405:
        assert answer.headers["allow"] == "GET, HEAD"
    if path.endswith("openapi.json") and status == 200:
        assert answer.json()["info"]["title"]


def test_the_route_in_the_scope_is_the_built_one() -> None:
    seen: dict[str, object] = {}

    async def page(request):  # type: ignore[no-untyped-def]
        seen["route"] = request.scope["route"]
        return PlainTextResponse("ok")

    inner = Route("/_own/page", page, methods=["GET"], name="own-page")
    app = Starlette(routes=[Deferred(["/_own"], lambda: [inner])])
    with TestClient(app) as client:
        assert client.get("/_own/page").text == "ok"
        assert client.post("/_own/page").status_code == 405
        assert client.get("/elsewhere").status_code == 404
    assert seen["route"] is inner


def test_a_path_outside_the_prefixes_builds_nothing() -> None:
    built: list[int] = []
    group = Deferred(["/_own"], lambda: built.append(1) or [])  # type: ignore[func-returns-value]
    scope = {"type": "http", "path": "/Payment/x", "root_path": "", "method": "GET"}
    assert group.matches(scope) == (Match.NONE, {})
    assert built == []
    mounted = {**scope, "path": "/base/_own/x", "root_path": "/base"}
    assert group.matches(mounted) == (Match.NONE, {})
    assert built == [1]


def test_a_build_that_fails_is_tried_again() -> None:
    attempts: list[int] = []

    def build() -> list[Route]:
        attempts.append(1)
        if len(attempts) == 1:
            raise RuntimeError("first build fails")
        return [Route("/_own/page", PlainTextResponse("ok"), methods=["GET"])]

    group = Deferred(["/_own"], build)
    scope = {"type": "http", "path": "/_own/page", "root_path": "", "method": "GET"}
    with pytest.raises(RuntimeError):
        group.matches(scope)
    assert group.matches(scope)[0] is Match.FULL
    assert len(attempts) == 2


def test_once_built_the_groups_fixed_paths_are_found_as_the_scan_finds_them() -> None:
    """FastRouter's index of fixed paths takes a group's routes in their place once built:
    a route before the group keeps a path both have, a route after it does not."""
    before = Route("/_own/both", PlainTextResponse("before"), methods=["GET"])
    inner = Route("/_own/page", PlainTextResponse("inner"), methods=["GET"])
    shadowed = Route("/_own/both", PlainTextResponse("inner both"), methods=["GET"])
    after = Route("/_own/page", PlainTextResponse("after"), methods=["GET"])
    router = FastRouter([before, Deferred(["/_own"], lambda: [inner, shadowed]), after])
    assert router._static == {"/_own/both": before}  # not built: the group's paths go to the scan
    with TestClient(router) as client:
        assert client.get("/_own/page").text == "inner"  # built by the scan
        assert router._static == {"/_own/both": before, "/_own/page": inner}
        assert client.get("/_own/page").text == "inner"  # found by the index
        assert client.get("/_own/both").text == "before"


def test_names_resolve_through_the_group() -> None:
    group = Deferred(["/_own"], lambda: [Mount("/_own/static", app=PlainTextResponse("x"), name="own-static")])
    assert group.url_path_for("own-static", path="a.css") == "/_own/static/a.css"
    with pytest.raises(NoMatchFound):
        group.url_path_for("elsewhere")


def test_the_prefixes_cover_every_route_of_the_group(client: TestClient) -> None:
    def paths(routes: list) -> list[str]:  # type: ignore[type-arg]
        return [route.path for route in routes if isinstance(route, Route | Mount)]

    own = paths(_own(client).routes)
    assert len(own) > 20
    assert [path for path in own if not path.startswith(OWN_PREFIXES)] == []


def test_serving_does_not_import_them_until_asked() -> None:
    probe = (
        "import sys\n"
        "from starlette.testclient import TestClient\n"
        "from emulator.app.build import create_app\n"
        f"with TestClient(create_app(), headers={dict(SANDBOX)!r}) as client:\n"
        "    assert client.get('/Utils/apiKey').status_code == 200\n"
        "    print('emulator.control' in sys.modules, 'emulator.ui.routes' in sys.modules)\n"
        "    assert client.get('/_emulator/openapi.json').status_code == 200\n"
        "    print('emulator.control' in sys.modules, 'emulator.ui.routes' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "False", "True", "True"]


def test_the_payment_engine_is_imported_by_the_first_payment() -> None:
    probe = (
        "import sys\n"
        "from starlette.testclient import TestClient\n"
        "from emulator.app.build import create_app\n"
        f"with TestClient(create_app(), headers={dict(SANDBOX)!r}) as client:\n"
        "    assert client.get('/Utils/apiKey').json()['status'] == 'OK'\n"
        "    print('emulator.engine.engine' in sys.modules, 'emulator.api.payments' in sys.modules)\n"
        f"    answer = client.post('/PaymentGateway/charge', json={CHARGE!r}).json()\n"
        "    print(answer['operationResultCode'], 'emulator.engine.engine' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "False", "Success", "True"]


def test_an_endpoint_loads_a_deferred_handler_once_and_then_calls_it_directly(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    loads: list[tuple[str, str]] = []
    real = api._imported

    def counted(module: str, operation_id: str) -> Handler:
        loads.append((module, operation_id))
        return real(module, operation_id)

    monkeypatch.setattr(api, "_imported", counted)
    app = create_app()
    with TestClient(app, headers=SANDBOX) as client:
        answers = [client.get("/Utils/apiKey").json()["status"] for _ in range(3)]
    assert (answers, loads) == (["OK"] * 3, [("apikey", "ValidateApiKey")])


def test_a_load_that_fails_is_tried_again() -> None:
    outcomes = iter([ImportError("half-installed"), "handler"])

    def load() -> Any:
        outcome = next(outcomes)
        if isinstance(outcome, Exception):
            raise outcome
        return outcome

    deferred = OnFirstCall(load)
    with pytest.raises(ImportError, match="half-installed"):
        deferred.load()
    assert deferred.load() == deferred.load() == "handler"
