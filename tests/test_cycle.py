"""emulator.http.cycle: payemu's request cycle is uvicorn's, built with less; its signal
behaves as asyncio's Event for the cycle's reader, and a whole answer goes out in one
write with the server's headers."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from uvicorn.protocols.http.flow_control import FlowControl
from uvicorn.protocols.http.httptools_impl import RequestResponseCycle

from emulator.http import cycle as cycles
from emulator.http.cycle import Cycle, Signal


class _Transport:
    def __init__(self) -> None:
        self.writes: list[bytes] = []
        self.closed = False

    def write(self, data: bytes) -> None:
        self.writes.append(data)

    def close(self) -> None:
        self.closed = True

    def is_closing(self) -> bool:
        return self.closed

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass


def _cycle(keep_alive: bool = True, method: str = "POST", defaults: Any = None) -> tuple[Cycle, _Transport, list[str]]:
    transport = _Transport()
    done: list[str] = []
    made = Cycle(
        {"type": "http", "method": method, "headers": []},
        transport,
        FlowControl(transport),  # type: ignore[arg-type]
        defaults if defaults is not None else [(b"date", b"Fri, 27 Nov 2026 18:00:00 GMT"), (b"server", b"uvicorn")],
        keep_alive,
        False,
        lambda: done.append("answered"),
    )
    return made, transport, done


def test_a_signal_wakes_every_waiter_and_clears_as_an_event() -> None:
    async def run() -> list[Any]:
        signal, event = Signal(), asyncio.Event()
        seen: list[Any] = [signal.is_set(), event.is_set()]
        waiting = [asyncio.ensure_future(signal.wait()) for _ in range(2)]
        await asyncio.sleep(0)
        seen.append([w.done() for w in waiting])
        signal.set()
        event.set()
        seen.append(await asyncio.gather(*waiting))
        seen.append(await signal.wait())  # set: answered at once
        signal.clear()
        event.clear()
        seen.append((signal.is_set(), event.is_set()))
        late = asyncio.ensure_future(signal.wait())
        await asyncio.sleep(0)
        late.cancel()  # a waiter cancelled leaves no waiter behind
        await asyncio.sleep(0)
        seen.append(signal._waiters)
        return seen

    assert asyncio.run(run()) == [False, False, [False, False], [True, True], True, (False, False), []]


def test_a_cycle_is_uvicorns_with_what_every_request_starts_with() -> None:
    made, transport, _ = _cycle()
    assert isinstance(made, RequestResponseCycle)
    assert (made.disconnected, made.more_body, made.response_started, made.response_complete) == (
        False,
        True,
        False,
        False,
    )
    assert made.body == bytearray()
    assert made.transport is transport
    other, _, _ = _cycle()
    made.body += b"x"
    made.disconnected = True
    assert other.body == bytearray()  # nothing of one request's is another's
    assert other.disconnected is False


def test_a_whole_answer_is_one_write_with_the_servers_headers() -> None:
    made, transport, done = _cycle()
    assert made.whole(200, b"content-length: 2\r\n", b"{}") is None  # written at once
    assert transport.writes == [
        b"HTTP/1.1 200 OK\r\ndate: Fri, 27 Nov 2026 18:00:00 GMT\r\nserver: uvicorn\r\ncontent-length: 2\r\n\r\n{}"
    ]
    assert made.response_complete
    assert made.message_event.is_set()
    assert done == ["answered"]
    assert not transport.closed


def test_a_whole_answer_closes_what_is_not_kept_alive_and_heads_have_no_body() -> None:
    made, transport, _ = _cycle(keep_alive=False, method="HEAD", defaults=[(b"server", b"uvicorn")])
    assert made.whole(404, b"content-length: 2\r\n", b"{}") is None
    assert transport.writes == [
        b"HTTP/1.1 404 Not Found\r\nserver: uvicorn\r\ncontent-length: 2\r\nconnection: close\r\n\r\n"
    ]
    assert transport.closed


def test_the_servers_headers_are_joined_again_when_uvicorn_replaces_them() -> None:
    first = [(b"date", b"Fri, 27 Nov 2026 18:00:00 GMT")]
    assert cycles._header_block(first) == b"date: Fri, 27 Nov 2026 18:00:00 GMT\r\n"
    second = [(b"date", b"Fri, 27 Nov 2026 18:00:01 GMT")]  # a new list, a second later
    assert cycles._header_block(second) == b"date: Fri, 27 Nov 2026 18:00:01 GMT\r\n"
    assert cycles._header_block(first) == b"date: Fri, 27 Nov 2026 18:00:00 GMT\r\n"


def test_an_answer_to_a_client_gone_is_not_written_and_a_second_is_refused() -> None:
    gone, transport, done = _cycle()
    gone.disconnected = True
    assert gone.whole(200, b"", b"") is None
    assert transport.writes == []
    assert done == []
    made, _, _ = _cycle()
    made.whole(200, b"content-length: 0\r\n", b"")
    with pytest.raises(RuntimeError, match="started already"):
        made.whole(200, b"content-length: 0\r\n", b"")


def test_an_answer_to_a_client_that_reads_nothing_waits_for_the_buffer_to_drain() -> None:
    async def run() -> tuple[list[bytes], list[bytes], list[str]]:
        made, transport, done = _cycle()
        made.flow.pause_writing()  # the transport's buffer is full
        waiting = made.whole(200, b"content-length: 2\r\n", b"{}")
        assert waiting is not None
        writing = asyncio.ensure_future(waiting)  # type: ignore[arg-type]
        await asyncio.sleep(0)
        before = list(transport.writes)
        made.flow.resume_writing()  # the client read: the answer goes out
        await writing
        return before, transport.writes, done

    before, after, done = asyncio.run(run())
    assert before == []
    assert len(after) == 1
    assert after[0].endswith(b"content-length: 2\r\n\r\n{}")
    assert done == ["answered"]
