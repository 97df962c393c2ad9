"""emulator.http.direct: documented operations on fixed paths are answered from the
protocol, after every connection ready in the turn was read, without a task unless they
wait; everything else (forwarded headers, other paths, the card form's port) keeps
uvicorn's ASGI path. Each answer is checked against the served schema."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

import pytest
import uvicorn
from uvicorn.server import ServerState

from emulator.accesslog import AccessLog
from emulator.config import Settings
from emulator.http import direct
from emulator.http.app import create_app
from emulator.http.entry import App
from emulator.http.pages.cardform import PortSplit
from emulator.http.pages.cardform import app as form_app
from emulator.http.protocol import http_protocol

KEY = b"sandbox-api-key"


class _Transport:
    def __init__(self) -> None:
        self.writes: list[bytes] = []
        self.closed = False

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return {"sockname": ("127.0.0.1", 8080), "peername": ("127.0.0.1", 50000)}.get(name, default)

    def write(self, data: bytes) -> None:
        self.writes.append(data)

    def is_closing(self) -> bool:
        return self.closed

    def close(self) -> None:
        self.closed = True

    def abort(self) -> None:
        self.closed = True

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass

    def set_write_buffer_limits(self, high: int | None = None, low: int | None = None) -> None:
        pass


class _Spy:
    """The ASGI app uvicorn's path runs: counts its calls, then hands them on."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.calls: list[str] = []

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            self.calls.append(scope["path"])
        await self.app(scope, receive, send)


def _connections(app: App, count: int, direct_app: Any = None) -> tuple[_Spy, ServerState, list[Any], list[_Transport]]:
    spy = _Spy(app)
    config = uvicorn.Config(spy, http=http_protocol(app.state.runtime.settings, direct_app or app), log_level="warning")
    config.load()
    state = ServerState()
    connections, wires = [], []
    for _ in range(count):
        connection = config.http_protocol_class(config=config, server_state=state, app_state={})
        wire = _Transport()
        connection.connection_made(wire)
        connections.append(connection)
        wires.append(wire)
    return spy, state, connections, wires


def _post(path: str, body: dict[str, Any], *headers: str) -> bytes:
    raw = json.dumps(body).encode()
    extra = "".join(f"{line}\r\n" for line in headers)
    head = (
        f"POST {path} HTTP/1.1\r\nHost: payemu.test\r\nX-Api-Key: {KEY.decode()}\r\n{extra}"
        f"Content-Type: application/json\r\nContent-Length: {len(raw)}\r\n\r\n"
    )
    return head.encode() + raw


CHARGE = {
    "amount": 10.5,
    "currency": "USD",
    "paymentGatewayAccount": {"paymentGatewayName": "NULLSuccess", "credentials": []},
    "card": {"cardHolderName": "Jo", "cardNumber": "4111111111111111", "expirationMonth": 12, "expirationYear": 2031},
}


def _answer(wire: _Transport) -> tuple[int, dict[str, str], Any]:
    head, _, body = b"".join(wire.writes).partition(b"\r\n\r\n")
    lines = head.decode().split("\r\n")
    headers = dict(line.split(": ", 1) for line in lines[1:])
    return int(lines[0].split()[1]), {name.lower(): value for name, value in headers.items()}, json.loads(body)


def _turns(until: Callable[[], bool]) -> None:
    async def run() -> None:
        for _ in range(100):
            if until():
                return
            await asyncio.sleep(0)

    asyncio.get_event_loop().run_until_complete(run())


@pytest.fixture
def loop() -> Any:
    made = asyncio.new_event_loop()
    asyncio.set_event_loop(made)
    yield made
    made.close()
    asyncio.set_event_loop(None)


def test_requests_read_in_one_turn_are_answered_after_every_read_and_without_a_task(loop: Any) -> None:
    app = create_app(Settings(log_level="warning"))
    spy, state, connections, wires = _connections(app, 2)
    seen_tasks: list[int] = []
    for connection in connections:  # both read in the same turn
        connection.data_received(_post("/PaymentGateway/charge", CHARGE))
        seen_tasks.append(len(state.tasks))
    assert not any(connection.cycle.response_started for connection in connections)  # nothing answered while reading
    _turns(lambda: all(wire.writes for wire in wires))
    assert seen_tasks == [0, 0]
    assert not state.tasks
    assert spy.calls == []  # no ASGI call: uvicorn's middleware, the card form's switch and the app's layers skipped
    for wire in wires:
        status, headers, body = _answer(wire)
        assert status == 200
        assert headers["content-type"] == "application/json"
        assert body["operationResultCode"] == "Success"
        assert body["gatewayName"] == "NULLSuccess"
    assert app.state.runtime.violations == []


def test_a_direct_answer_that_waits_goes_on_as_a_task_uvicorn_tracks(loop: Any) -> None:
    app = create_app(Settings(log_level="warning"))
    spy, state, [connection], [wire] = _connections(app, 1)
    request = _post("/StringTokens", {"payload": "kept secret"})
    connection.data_received(request[:-5])  # the body's end has not come
    _turns(lambda: bool(state.tasks))
    assert len(state.tasks) == 1  # waiting for the body, in a task a stop would wait for
    assert wire.writes == []
    connection.data_received(request[-5:])
    _turns(lambda: bool(wire.writes) and not state.tasks)
    status, headers, body = _answer(wire)
    assert status == 201
    assert headers["location"] == f"http://payemu.test/StringTokens/{body['token']}"
    assert not state.tasks
    assert spy.calls == []
    assert app.state.runtime.violations == []


def test_forwarded_headers_and_other_paths_take_uvicorns_asgi_path(loop: Any) -> None:
    app = create_app(Settings(log_level="warning"))
    spy, state, connections, wires = _connections(app, 3)
    connections[0].data_received(_post("/StringTokens", {"payload": "a"}, "X-Forwarded-Proto: https"))
    connections[1].data_received(_post("/StringTokens", {"payload": "b"}))
    connections[2].data_received(b"GET /_emulator/tenants/no-such-key HTTP/1.1\r\nHost: payemu.test\r\n\r\n")
    _turns(lambda: all(wire.writes for wire in wires) and not state.tasks)
    forwarded, plain, other = (_answer(wire) for wire in wires)
    # uvicorn's proxy-headers middleware read X-Forwarded-Proto: the Location says https
    assert forwarded[0] == 201
    assert forwarded[1]["location"].startswith("https://payemu.test/StringTokens/")
    assert plain[1]["location"].startswith("http://payemu.test/StringTokens/")
    assert other[0] in (401, 404)  # a path with a parameter: the router's, whatever it answers
    assert spy.calls == ["/StringTokens", "/_emulator/tenants/no-such-key"]
    assert app.state.runtime.violations == []


def test_the_card_forms_port_and_a_wrapper_that_logs(loop: Any) -> None:
    app = create_app(Settings(log_level="warning"))
    split = PortSplit(app, form_app(), 4200)
    charge = {"type": "http", "method": "POST", "path": "/PaymentGateway/charge", "headers": []}
    endpoint = app.direct(charge)
    assert endpoint is not None
    assert split.direct({**charge, "server": ("127.0.0.1", 8080)}) is endpoint
    assert split.direct({**charge, "server": ("127.0.0.1", 4200)}) is None  # the form's own port
    assert app.direct({**charge, "path": "/PaymentGateway/charge/"}) is None
    assert app.direct({**charge, "method": "GET"}) is None
    logged: list[str] = []

    class _Out:
        def write(self, text: str) -> None:
            logged.append(text)

        def flush(self) -> None:
            pass

    wrapped = AccessLog(split, _Out())  # type: ignore[arg-type]
    assert wrapped.direct(charge) is endpoint
    spy, _state, [connection], [wire] = _connections(app, 1, direct_app=wrapped)
    connection.data_received(_post("/PaymentGateway/charge", CHARGE))
    _turns(lambda: bool(wire.writes))
    assert _answer(wire)[0] == 200
    assert spy.calls == []
    assert len(logged) == 1
    assert " POST /PaymentGateway/charge 200 " in logged[0]
    assert KEY.decode() not in logged[0]


class _Failing:
    """A direct app whose answers go wrong, as a bug would."""

    def __init__(self, how: str) -> None:
        self.how = how

    def direct(self, scope: Any) -> Any:
        return "found"

    async def answer_direct(self, found: Any, scope: Any, receive: Any, send: Any, whole: Any, body: Any) -> None:
        if self.how == "raise":
            raise RuntimeError("a bug")


@pytest.mark.parametrize(
    ("how", "logged"), [("raise", "Exception in ASGI application"), ("nothing", "without starting")]
)
def test_a_direct_answer_that_fails_is_logged_and_answered_500(
    loop: Any, how: str, logged: str, capfd: pytest.CaptureFixture[str]
) -> None:
    app = create_app(Settings(log_level="warning"))
    spy, _state, [connection], [wire] = _connections(app, 1, direct_app=_Failing(how))
    connection.data_received(_post("/PaymentGateway/charge", CHARGE))
    _turns(lambda: bool(wire.writes))
    assert b"".join(wire.writes).startswith(b"HTTP/1.1 500 ")
    assert logged in capfd.readouterr().err  # uvicorn's error log, as for an ASGI app
    assert spy.calls == []


def test_a_queue_left_by_a_closed_loop_is_not_kept() -> None:
    made = asyncio.new_event_loop()
    try:

        async def answering() -> None:
            return None

        tasks: set[asyncio.Task[Any]] = set()
        direct.queue(made, answering(), tasks)
        made.run_until_complete(asyncio.sleep(0))
        assert made not in direct._queued
        assert not tasks
    finally:
        made.close()


def test_a_body_in_at_once_is_handed_over_and_still_bounded(loop: Any) -> None:
    app = create_app(Settings(log_level="warning", max_body_bytes=100))
    _spy, _state, connections, wires = _connections(app, 2)
    connections[0].data_received(_post("/StringTokens", {"payload": "x" * 200}))  # in one read: over the bound
    connections[1].data_received(_post("/StringTokens", {"payload": "fits"}))
    _turns(lambda: all(wire.writes for wire in wires))
    status, _, body = _answer(wires[0])
    assert status == 413
    assert body[0]["fieldName"] == "body"
    assert "larger than 100 bytes" in body[0]["errors"][0]
    assert _answer(wires[1])[0] == 201
    assert connections[1].cycle.body == bytearray()  # handed over, as uvicorn's receive hands it
    assert app.state.runtime.violations == []
