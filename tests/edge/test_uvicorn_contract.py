"""What payemu's guarded protocol relies on in uvicorn and httptools, one test per
behaviour, run on uvicorn's own classes (not payemu's) with the one fake transport of
:mod:`tests.support.transport`: a uvicorn or httptools release that changes one of them
fails the test named after it. ``.ci/run`` runs them on the lowest pins and the newest.

The guards use these (emulator/edge/): reading.py feeds the parser itself after calling
``data_received(b"")``; it counts ``pipeline`` and learns of finished answers through
``resume_reading``; heads.py weighs ``headers`` as they grow and measures ``url``;
refusals.py stops the parser by raising in a callback and looks for its cycle in
``pipeline``; guarded.py sets ``scope["extensions"]`` in ``on_message_begin``;
forwarded.py hands a request without ``X-Forwarded-*`` headers to the app uvicorn's
proxy-headers middleware wraps. The application's exception layer (emulator/app/failures.py)
learns that an answer had begun from the cycle refusing a second ``http.response.start``.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Awaitable, Callable
from typing import Any

import httptools
import pytest
import uvicorn
from uvicorn.middleware.proxy_headers import ProxyHeadersMiddleware
from uvicorn.protocols.http.flow_control import FlowControl
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol, RequestResponseCycle
from uvicorn.server import ServerState

from tests.support.transport import FakeTransport

GET = b"GET /a HTTP/1.1\r\nHost: x\r\n\r\n"
ASGI = Callable[[Any, Any, Any], Awaitable[None]]


def answering(release: asyncio.Event | None = None, scopes: list[Any] | None = None) -> ASGI:
    """An ASGI app answering 200 "ok" (after ``release`` is set, when given), noting each scope."""

    async def app(scope: Any, receive: Any, send: Any) -> None:
        if scopes is not None:
            scopes.append(scope)
        if release is not None:
            await release.wait()
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"2")]})
        await send({"type": "http.response.body", "body": b"ok"})

    return app


def connected(app: ASGI) -> tuple[HttpToolsProtocol, FakeTransport]:
    """uvicorn's own httptools protocol serving ``app``, connected to a fake transport
    (called inside a running event loop)."""
    config = uvicorn.Config(app, http="httptools", log_level="warning", lifespan="off")
    config.load()
    protocol = HttpToolsProtocol(config=config, server_state=ServerState(), app_state={})
    transport = FakeTransport()
    protocol.connection_made(transport)  # type: ignore[arg-type]
    return protocol, transport


async def turns(count: int = 5) -> None:
    for _ in range(count):
        await asyncio.sleep(0)


def test_data_received_with_no_bytes_parses_nothing_and_the_parser_can_be_fed_directly() -> None:
    async def run() -> None:
        protocol, transport = connected(answering())
        protocol.data_received(b"")  # uvicorn's per-read bookkeeping only
        await turns()
        assert transport.written == []
        protocol.parser.feed_data(GET)  # payemu feeds the parser itself
        await turns()
        assert b"".join(transport.written).startswith(b"HTTP/1.1 200 OK\r\n")
        assert protocol.timeout_keep_alive_task is not None  # armed once the answer is out
        protocol.data_received(b"")
        assert protocol.timeout_keep_alive_task is None  # a read (even of nothing) disarms it
        protocol.connection_lost(None)

    asyncio.run(run())


def test_a_pipelined_request_waits_in_pipeline_as_a_cycle_and_app_tuple() -> None:
    async def run() -> None:
        release = asyncio.Event()
        app = answering(release)
        protocol, transport = connected(app)
        protocol.parser.feed_data(GET + GET + GET)
        await turns()
        assert isinstance(protocol.pipeline, deque)
        assert len(protocol.pipeline) == 2
        for cycle, queued_app in protocol.pipeline:
            assert isinstance(cycle, RequestResponseCycle)
            assert queued_app is protocol.app  # the loaded app (uvicorn wraps it)
        assert protocol.cycle is protocol.pipeline[0][0]  # the newest is the current cycle
        assert not transport.reading  # uvicorn pauses reading while requests wait
        release.set()
        await turns(20)
        assert len(protocol.pipeline) == 0
        assert b"".join(transport.written).count(b"HTTP/1.1 200 OK") == 3
        protocol.connection_lost(None)

    asyncio.run(run())


def test_cycle_response_complete_is_set_once_the_answer_is_written() -> None:
    async def run() -> None:
        release = asyncio.Event()
        protocol, transport = connected(answering(release))
        protocol.parser.feed_data(GET)
        await turns()
        cycle = protocol.cycle
        assert not cycle.response_started
        assert not cycle.response_complete
        release.set()
        await turns()
        assert cycle.response_started
        assert cycle.response_complete
        assert transport.written  # the answer was written to the transport given at connection_made
        protocol.connection_lost(None)

    asyncio.run(run())


def test_flow_control_sets_its_flag_before_the_transport_resumes_and_pauses_once() -> None:
    transport = FakeTransport()
    flow = FlowControl(transport)  # type: ignore[arg-type]
    seen: list[bool] = []

    def on_resume() -> None:  # what payemu's transport does: may keep reading paused
        seen.append(flow.read_paused)
        flow.pause_reading()

    transport.on_resume = on_resume
    flow.pause_reading()
    flow.pause_reading()
    assert transport.pauses == 1  # a second pause does not reach the transport
    flow.resume_reading()
    assert seen == [False]  # the flag was cleared before the transport was asked
    assert flow.read_paused  # re-paused from inside resume: the next resume asks again
    assert transport.pauses == 2
    transport.on_resume = None
    flow.resume_reading()
    flow.resume_reading()
    assert transport.resumes == 2  # a resume while not paused does not reach the transport


def test_a_finished_answer_resumes_reading_before_the_next_pipelined_request_starts() -> None:
    async def run() -> None:
        release = asyncio.Event()
        protocol, transport = connected(answering(release))
        protocol.parser.feed_data(GET + GET)
        await turns()
        first = protocol.pipeline[0][0] if protocol.pipeline else None
        assert first is not None
        seen: list[tuple[int, bool]] = []
        transport.on_resume = lambda: seen.append((len(protocol.pipeline), first.response_complete))
        release.set()
        await turns(20)
        # the first answer's completion resumed reading while the second still waited
        assert seen[0] == (1, False)
        protocol.connection_lost(None)

    asyncio.run(run())


def test_on_message_begin_makes_a_new_scope_without_extensions_that_the_app_receives() -> None:
    async def run() -> None:
        scopes: list[Any] = []
        protocol, _ = connected(answering(scopes=scopes))
        made: list[Any] = []
        original = protocol.on_message_begin

        def on_message_begin() -> None:
            original()
            made.append(protocol.scope)
            assert "extensions" not in protocol.scope
            protocol.scope["extensions"] = {"payemu": len(made)}  # type: ignore[typeddict-unknown-key]

        protocol.on_message_begin = on_message_begin  # type: ignore[method-assign]
        protocol.parser = httptools.HttpRequestParser(protocol)  # (the parser binds callbacks when made)
        protocol.parser.feed_data(GET)
        await turns()
        protocol.parser.feed_data(GET)
        await turns()
        assert len(made) == 2
        assert made[0] is not made[1]
        assert scopes == made  # the very dicts: set in on_message_begin, seen by the app
        assert [scope["extensions"] for scope in scopes] == [{"payemu": 1}, {"payemu": 2}]
        protocol.connection_lost(None)

    asyncio.run(run())


def test_headers_and_url_grow_as_the_head_is_parsed_in_slices() -> None:
    async def run() -> None:
        protocol, _ = connected(answering())
        protocol.parser.feed_data(b"GET /a?q=12")
        protocol.parser.feed_data(b"34 HTTP/1.1\r\nHost: x\r\nAb: c\r\nDe: f\r\nG")
        assert protocol.url == b"/a?q=1234"  # fragments joined
        assert protocol.headers == [(b"host", b"x"), (b"ab", b"c"), (b"de", b"f")]  # lowered, as they come
        assert protocol.scope["headers"] is protocol.headers  # the list the request keeps
        protocol.connection_lost(None)

    asyncio.run(run())


def test_an_exception_in_a_parser_callback_stops_the_parser_with_a_parser_error() -> None:
    class Stop(Exception):
        pass

    class Callbacks:
        def on_url(self, url: bytes) -> None:
            raise Stop

    parser = httptools.HttpRequestParser(Callbacks())
    with pytest.raises(httptools.HttpParserError) as raised:
        parser.feed_data(GET)
    assert type(raised.value).__name__ == "HttpParserCallbackError"


def test_eof_received_returns_nothing_so_the_transport_closes() -> None:
    async def run() -> None:
        protocol, _ = connected(answering())
        assert protocol.eof_received() is None
        protocol.connection_lost(None)

    asyncio.run(run())


def test_the_protocol_is_in_connections_from_connection_made_until_lost() -> None:
    async def run() -> None:
        protocol, transport = connected(answering())
        assert protocol in protocol.connections
        assert protocol.transport is transport  # writes go to the transport it was given
        protocol.connection_lost(None)
        assert protocol not in protocol.connections

    asyncio.run(run())


def test_the_loaded_app_is_the_proxy_headers_middleware_holding_the_app_as_its_app() -> None:
    app = answering()
    config = uvicorn.Config(app, http="httptools", log_level="warning", lifespan="off")
    config.load()
    assert isinstance(config.loaded_app, ProxyHeadersMiddleware)
    assert config.loaded_app.app is app


@pytest.mark.parametrize("peer", ["127.0.0.1", "203.0.113.7"])
def test_the_proxy_headers_middleware_passes_a_request_without_forwarding_headers_unchanged(peer: str) -> None:
    scopes: list[Any] = []
    middleware = ProxyHeadersMiddleware(answering(scopes=scopes), trusted_hosts="*")

    async def send(message: Any) -> None:
        pass

    headers = [(b"host", b"x"), (b"x-forwarded-host", b"y"), (b"forwarded", b"for=198.51.100.1")]
    scope = {"type": "http", "scheme": "http", "client": (peer, 5000), "headers": headers}
    asyncio.run(middleware(dict(scope), None, send))  # type: ignore[arg-type]
    assert scopes == [scope]


def test_on_headers_complete_runs_the_request_in_the_app_the_protocol_holds_then() -> None:
    async def run() -> None:
        protocol, transport = connected(answering())
        other_scopes: list[Any] = []
        protocol.app = answering(scopes=other_scopes)
        protocol.parser.feed_data(GET)
        await turns()
        assert len(other_scopes) == 1
        assert b"".join(transport.written).startswith(b"HTTP/1.1 200 OK\r\n")
        protocol.connection_lost(None)

    asyncio.run(run())


@pytest.mark.parametrize("complete", [False, True])
def test_a_second_response_start_is_refused_once_the_answer_began(complete: bool) -> None:
    refused: list[Exception] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"2")]})
        if complete:
            await send({"type": "http.response.body", "body": b"ok"})
        try:
            await send({"type": "http.response.start", "status": 500, "headers": []})
        except RuntimeError as exc:
            refused.append(exc)

    async def run() -> None:
        protocol, transport = connected(app)
        protocol.parser.feed_data(GET)
        await turns()
        assert len(refused) == 1
        assert b"".join(transport.written).count(b"HTTP/1.1 ") == 1
        protocol.connection_lost(None)

    asyncio.run(run())
