"""Answers written together (emulator.edge.corked_writes): a turn's writes at the start of the
next, the answers to a turn's reads once all their requests ran; in each connection's order,
never more than a bound per connection, and never lost to a close; through the real
server, pipelined requests still get their answers in order."""

from __future__ import annotations

import asyncio
import json
import logging
import socket
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import pytest
import uvicorn
from uvicorn.server import ServerState

from emulator.app.build import create_app
from emulator.domain.config import Settings
from emulator.edge import corked_writes as cork
from emulator.edge.corked_writes import MOST_HELD, Corked
from emulator.edge.protocol import http_protocol
from emulator.testing import PayemuServer
from tests.support.servers import in_thread
from tests.support.transport import FakeTransport


@pytest.fixture
def loop() -> Iterator[asyncio.AbstractEventLoop]:
    made = asyncio.new_event_loop()
    yield made
    made.close()


def _turn(loop: asyncio.AbstractEventLoop) -> None:
    loop.run_until_complete(asyncio.sleep(0))


def test_the_writes_of_a_turn_go_out_together_at_the_start_of_the_next(loop: asyncio.AbstractEventLoop) -> None:
    log: list[tuple[str, bytes]] = []
    first, second = Corked(FakeTransport("a", log), loop), Corked(FakeTransport("b", log), loop)
    first.write(b"a1")
    second.write(b"b1")
    first.write(b"a2")
    assert log == []
    assert (first.held, second.held) == (4, 2)
    _turn(loop)
    assert log == [("a", b"a1a2"), ("b", b"b1")]  # each connection's in its order, in one send
    assert (first.held, second.held) == (0, 0)
    first.write(b"a3")  # a new turn, a new batch
    _turn(loop)
    assert log[-1] == ("a", b"a3")
    assert first.get_extra_info("peername") == ("127.0.0.1", 50000)  # the rest is the transport's


def test_closing_or_aborting_sends_what_waits_first(loop: asyncio.AbstractEventLoop) -> None:
    log: list[tuple[str, bytes]] = []
    other = Corked(FakeTransport("other", log), loop)
    closing = Corked(FakeTransport("closing", log), loop)
    other.write(b"o1")
    closing.write(b"c1")
    closing.close()  # its own answer first; the other connection's waits for the turn's end
    assert log == [("closing", b"c1"), ("closing", b"<close>")]
    assert closing.is_closing()
    closing.write(b"too late")  # a write after the close goes nowhere, as on a closed socket
    aborted = Corked(FakeTransport("aborted", log), loop)
    aborted.write(b"x1")
    aborted.abort()
    _turn(loop)
    assert log[2:] == [("aborted", b"x1"), ("aborted", b"<abort>"), ("other", b"o1")]


def test_a_connection_never_has_more_than_the_bound_waiting(loop: asyncio.AbstractEventLoop) -> None:
    log: list[tuple[str, bytes]] = []
    other = Corked(FakeTransport("other", log), loop)
    streamed = Corked(FakeTransport("streamed", log), loop)
    other.write(b"o1")
    chunk = b"x" * (MOST_HELD // 3 + 1)
    for _ in range(7):  # a streamed answer that never yields to the loop
        streamed.write(chunk)
        assert streamed.held <= MOST_HELD
    # past the bound what waited went out at once, with the write that passed it
    assert log == [("streamed", chunk * 3), ("streamed", chunk * 3)]
    assert streamed.held == len(chunk)
    _turn(loop)  # the rest, and the other connection's, at the turn's end
    assert log[2:] == [("other", b"o1"), ("streamed", chunk)]


def test_a_connections_writes_one_after_the_other_go_out_in_one_send(loop: asyncio.AbstractEventLoop) -> None:
    log: list[tuple[str, bytes]] = []
    first, second = Corked(FakeTransport("a", log), loop), Corked(FakeTransport("b", log), loop)
    first.write(b"HTTP/1.1 200 OK\r\n\r\n")  # a head, then its body: one send
    first.write(b"{}")
    second.write(b"b1")
    first.write(b"a3")  # another connection wrote in between: still the same send
    assert first.held == len(b"HTTP/1.1 200 OK\r\n\r\n{}a3")
    _turn(loop)
    assert log == [("a", b"HTTP/1.1 200 OK\r\n\r\n{}a3"), ("b", b"b1")]


def test_a_closed_connection_is_skipped_and_a_failed_write_stops_no_other(
    loop: asyncio.AbstractEventLoop, caplog: pytest.LogCaptureFixture
) -> None:
    log: list[tuple[str, bytes]] = []

    class Broken(FakeTransport):
        def write(self, data: bytes) -> None:
            raise ConnectionResetError("gone")

    gone, broken, fine = (
        Corked(kind(name, log), loop)
        for kind, name in ((FakeTransport, "gone"), (Broken, "broken"), (FakeTransport, "fine"))
    )
    for corked in (gone, broken, fine):
        corked.write(b"answer")
    gone.transport.closed = True  # the client left before the turn ended
    with caplog.at_level(logging.ERROR, logger="payemu"):
        _turn(loop)
    assert log == [("fine", b"answer")]
    assert "could not write an answer" in caplog.text
    assert cork._batches[loop].waiting == []  # nothing is kept once the batch went out
    assert (gone.parts, broken.parts, fine.parts) == ([], [], [])


def test_the_answers_of_a_turn_go_out_once_every_request_of_it_ran() -> None:
    settings = Settings(log_level="warning")
    config = uvicorn.Config(create_app(settings), http=http_protocol(settings), log_level="warning")
    config.load()
    request = b"GET /Utils/apiKey HTTP/1.1\r\nHost: payemu\r\nX-Api-Key: sandbox-api-key\r\n\r\n"

    async def run() -> tuple[list[tuple[str, bytes]], list[list[bool]]]:
        log: list[tuple[str, bytes]] = []
        connections: list[Any] = []
        seen: list[list[bool]] = []  # at each write to a socket, which requests were answered

        class Watched(FakeTransport):
            def write(self, data: bytes) -> None:
                seen.append([c.cycle.response_complete for c in connections])
                super().write(data)

        for name in ("one", "two"):
            connection = config.http_protocol_class(config=config, server_state=ServerState(), app_state={})
            connection.connection_made(Watched(name, log))
            connections.append(connection)
        for connection in connections:  # both requests read in one turn, as a ready batch is
            connection.data_received(request)
        await asyncio.sleep(0)  # the loop's next turn: both requests run, then their answers go out
        answered = list(log)
        for connection in connections:
            connection.connection_lost(None)
        return answered, seen

    answered, seen = asyncio.run(run())
    assert seen == [[True, True], [True, True]]  # no answer left before every request of the turn ran
    answers = [(name, data) for name, data in answered if data != b"<close>"]
    assert [name for name, _ in answers] == ["one", "two"]
    for _, data in answers:
        assert data.startswith(b"HTTP/1.1 200 OK\r\n")
        assert json.loads(data.partition(b"\r\n\r\n")[2])["status"] == "OK"


@pytest.fixture(scope="module")
def server() -> Iterator[PayemuServer]:
    with in_thread(Settings()) as running:
        yield running


def _answers(sock: socket.socket, count: int) -> list[tuple[int, dict[str, Any]]]:
    """``count`` answers read off one connection, in the order they came."""
    data, found = b"", []
    while len(found) < count:
        while b"\r\n\r\n" not in data:
            data += sock.recv(65536)
        head, _, rest = data.partition(b"\r\n\r\n")
        length = next(
            int(line.split(b":")[1]) for line in head.lower().split(b"\r\n") if line.startswith(b"content-length:")
        )
        while len(rest) < length:
            rest += sock.recv(65536)
        found.append((int(head.split()[1]), json.loads(rest[:length])))
        data = rest[length:]
    return found


def test_pipelined_requests_get_their_answers_in_order(server: PayemuServer) -> None:
    key = server.tenant().api_key
    body = b'{"payload": "kept in order"}'
    requests = (
        f"GET /Utils/apiKey HTTP/1.1\r\nHost: payemu\r\nX-Api-Key: {key}\r\n\r\n".encode()
        + (
            f"POST /StringTokens HTTP/1.1\r\nHost: payemu\r\nX-Api-Key: {key}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
        ).encode()
        + body
        + f"GET /StringTokens/{'0' * 32} HTTP/1.1\r\nHost: payemu\r\nX-Api-Key: {key}\r\n\r\n".encode()
        + f"GET /Utils/apiKey HTTP/1.1\r\nHost: payemu\r\nX-Api-Key: {key}\r\nConnection: close\r\n\r\n".encode()
    )
    address = urlsplit(server.base_url)
    with socket.create_connection((address.hostname, address.port), timeout=10) as sock:
        sock.sendall(requests)  # all four in one write: the server reads them together
        answers = _answers(sock, 4)
        assert sock.recv(1024) == b""  # the last asked to close: the answer came first, then the close
    assert [status for status, _ in answers] == [200, 201, 404, 200]
    assert answers[0][1]["status"] == answers[3][1]["status"] == "OK"
    assert len(answers[1][1]["token"]) == 32
    assert answers[2][1][0]["fieldName"] == "token"
