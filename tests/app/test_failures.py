"""The exception layer: what a request's uncaught exception is answered with."""

from __future__ import annotations

import asyncio
import json
import socket
from typing import Any

import pytest
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route
from starlette.testclient import TestClient
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from emulator.app import shutdown
from emulator.app.application import App
from emulator.app.failures import JsonErrors
from tests.support.servers import in_thread

INTERNAL = [{"fieldName": None, "errors": ["payemu hit an internal error; see its log."]}]


async def fine(request: Request) -> Response:
    return JSONResponse({"ok": True})


async def broken(request: Request) -> Response:
    raise RuntimeError("boom")


async def teapot(request: Request) -> Response:
    raise HTTPException(418, "short and stout")


async def half(request: Request) -> Response:
    async def parts() -> Any:
        yield b'{"partial":'
        raise RuntimeError("gone midway")

    return StreamingResponse(parts(), media_type="application/json")


class Stamp:
    """A user middleware: the layer keeps Starlette's own middleware list."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        async def stamped(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message["headers"], (b"x-stamp", b"1")]
            await send(message)

        await self.app(scope, receive, stamped)


def app() -> App:
    routes = [Route(f"/{f.__name__}", f) for f in (fine, broken, teapot, half)]
    return App(routes=routes, middleware=[Middleware(Stamp)])


def test_a_crash_is_a_json_500_and_the_next_request_is_served() -> None:
    with TestClient(app(), raise_server_exceptions=False) as client:
        crashed = client.get("/broken")
        after = client.get("/fine")
    assert crashed.status_code == 500
    assert crashed.json() == INTERNAL
    assert "boom" not in crashed.text
    assert crashed.headers["x-content-type-options"] == "nosniff"
    assert after.json() == {"ok": True}


def test_the_crash_still_reaches_the_server() -> None:
    with TestClient(app()) as client, pytest.raises(RuntimeError, match="boom"):
        client.get("/broken")


def test_routing_errors_and_http_errors_are_json() -> None:
    with TestClient(app()) as client:
        missing = client.get("/nowhere")
        wrong = client.post("/fine")
        pot = client.get("/teapot")
    assert missing.status_code == 404
    assert missing.json() == [{"fieldName": "path", "errors": ["No resource at GET /nowhere."]}]
    assert wrong.status_code == 405
    assert "GET" in wrong.headers["allow"]
    assert pot.status_code == 418
    assert pot.json() == [{"fieldName": None, "errors": ["short and stout"]}]


def test_a_crash_after_the_answer_began_sends_no_second_answer() -> None:
    # on a real server (Starlette 0.40's TestClient drops a body cut short): what went out
    # stays the only answer, and the connection closes without a second one
    with (
        in_thread(app=app(), log_level="critical") as running,
        socket.create_connection(("127.0.0.1", running.port), timeout=10) as sock,
    ):
        sock.sendall(b"GET /half HTTP/1.1\r\nHost: payemu\r\n\r\n")
        wire = b""
        while chunk := sock.recv(65536):
            wire += chunk
    assert wire.startswith(b"HTTP/1.1 200 ")
    assert wire.count(b"HTTP/1.1 ") == 1
    head, _, body = wire.partition(b"\r\n\r\n")
    assert b"transfer-encoding: chunked" in head.lower()
    assert body == b'b\r\n{"partial":\r\n'  # the one chunk sent, and no last chunk


def test_user_middleware_still_wraps_the_app() -> None:
    with TestClient(app()) as client:
        assert client.get("/fine").headers["x-stamp"] == "1"
        assert client.get("/nowhere").headers["x-stamp"] == "1"


def test_a_request_the_stop_cancels_gets_the_json_503() -> None:
    async def cancelled(scope: Scope, receive: Receive, send: Send) -> None:
        raise asyncio.CancelledError

    sent: list[Message] = []

    async def send(message: Message) -> None:
        sent.append(message)

    async def receive() -> Message:
        return {"type": "http.request", "body": b"", "more_body": False}

    scope = {"type": "http", "method": "POST", "path": "/PaymentGateway/charge", "headers": []}
    asyncio.run(JsonErrors(cancelled)(scope, receive, send))
    assert sent[0]["status"] == 503
    assert (b"retry-after", b"1") in sent[0]["headers"]
    assert json.loads(sent[1]["body"]) == [{"fieldName": None, "errors": [shutdown.MESSAGE]}]
