"""One request under payemu's protocol: uvicorn's request cycle, made with less.

uvicorn makes a ``RequestResponseCycle`` for every request, with eleven keyword
arguments and an ``asyncio.Event`` (a deque of waiters, a loop binding) that tells its
``receive`` a body has come. :class:`Cycle` is the same class: its ``send``, ``receive``
and ``run_asgi`` are uvicorn's, untouched. It is only built with less: what every
request starts with is kept on the class (not set on each), and its event is a
:class:`Signal`, asyncio's ``Event`` for the one reader a cycle has, which makes nothing
until someone waits. :meth:`Cycle.whole` writes an answer that is whole at once (status,
header lines, body) in one write, what uvicorn's ``send`` does for such an answer without
its checks of each header (see :data:`emulator.http.protocol.WHOLE`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from uvicorn.protocols.http.httptools_impl import STATUS_LINE, RequestResponseCycle


class Signal:
    """``asyncio.Event`` as a request cycle uses it: ``set``, ``clear``, ``is_set`` and
    ``wait`` (every waiter woken by ``set``), with no list of waiters until one waits."""

    __slots__ = ("_set", "_waiters")

    def __init__(self) -> None:
        self._set = False
        self._waiters: list[asyncio.Future[bool]] | None = None

    def is_set(self) -> bool:
        return self._set

    def set(self) -> None:
        if not self._set:
            self._set = True
            if self._waiters:
                for waiter in self._waiters:
                    if not waiter.done():
                        waiter.set_result(True)

    def clear(self) -> None:
        self._set = False

    async def wait(self) -> bool:
        if self._set:
            return True
        waiter = asyncio.get_running_loop().create_future()
        if self._waiters is None:
            self._waiters = []
        self._waiters.append(waiter)
        try:
            await waiter
            return True
        finally:
            self._waiters.remove(waiter)


class Cycle(RequestResponseCycle):
    """uvicorn's request cycle (see the module doc)."""

    # what every request starts with (an instance's own value, once set, hides these)
    logger = logging.getLogger("uvicorn.error")
    access_logger = logging.getLogger("uvicorn.access")
    access_log = False  # payemu runs uvicorn without its access log (emulator.accesslog is its own)
    disconnected = False
    more_body = True
    response_started = False
    response_complete = False
    chunked_encoding: bool | None = None
    expected_content_length = 0

    def __init__(
        self,
        scope: Any,
        transport: Any,
        flow: Any,
        default_headers: list[tuple[bytes, bytes]],
        keep_alive: bool,
        expect_100_continue: bool,
        on_response: Callable[[], None],
    ) -> None:
        self.scope = scope
        self.transport = transport
        self.flow = flow
        self.default_headers = default_headers
        self.message_event = Signal()  # type: ignore[assignment]
        self.on_response = on_response
        self.keep_alive = keep_alive
        self.waiting_for_100_continue = expect_100_continue
        self.body = bytearray()

    def whole(self, status: int, lines: bytes, body: bytes) -> Awaitable[None] | None:
        """The answer ``status`` with the header ``lines`` (``name: value\r\n`` each,
        valid as given) and the whole ``body``, in one write. Written at once (None),
        unless the client reads nothing for now: then what is returned, awaited, writes it
        once the write buffer has drained."""
        if self.flow.write_paused and not self.disconnected:
            return self._whole_drained(status, lines, body)
        self._write_whole(status, lines, body)
        return None

    async def _whole_drained(self, status: int, lines: bytes, body: bytes) -> None:
        await self.flow.drain()
        self._write_whole(status, lines, body)

    def _write_whole(self, status: int, lines: bytes, body: bytes) -> None:
        if self.disconnected:
            return
        if self.response_started:
            raise RuntimeError("payemu.whole: the response has started already")
        self.response_started = True
        self.waiting_for_100_continue = False
        keep_alive = self.keep_alive
        self.transport.write(
            b"".join(
                (
                    STATUS_LINE[status],
                    _header_block(self.default_headers),
                    lines,
                    b"\r\n" if keep_alive else b"connection: close\r\n\r\n",
                    body if self.scope["method"] != "HEAD" else b"",
                )
            )
        )
        self.response_complete = True
        self.message_event.set()
        if not keep_alive:
            self.transport.close()
        self.on_response()


# uvicorn's default headers (a list it replaces each second) and their header lines: one
# tuple, replaced whole (servers in other threads share it)
_joined: tuple[object, bytes] = (None, b"")


def _header_block(headers: list[tuple[bytes, bytes]]) -> bytes:
    """``headers`` (the server's date and name) as header lines, joined once per list."""
    global _joined
    known, block = _joined
    if known is not headers:
        block = b"".join(name + b": " + value + b"\r\n" for name, value in headers)
        _joined = (headers, block)
    return block
