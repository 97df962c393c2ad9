"""Answers written together at the end of the event loop's turn ("corked"), not one by one.

Each turn of the event loop reads every connection that is ready and then runs their
requests one after the other. Written as soon as each was ready, every answer's system
call ran the kernel's network path (the loopback's receive side included) between two
requests, and woke the client, whose next request then came in while the rest of the
turn was still being served: the next turn found fewer requests ready, and the turns got
smaller and dearer. A :class:`Corked` transport instead puts what is written in the
loop's batch, and the batch goes out at the start of the next turn (``call_soon``), every
answer of the turn together.

A connection's writes keep their order: all of them go through its :class:`Corked`,
and closing or aborting it first sends the whole batch. A connection's writes made one
after the other (uvicorn writes a response's head, then its body) go out in one system
call. What one connection may have waiting is bounded (:data:`MOST_HELD` bytes): past
it, the batch goes out at once, so a streamed answer that never yields to the loop
cannot grow the batch without bound. An answer waits at most for the rest of the turn
it was made in (under one request, a turn of the loop: microseconds). Resuming reading
asks the protocol first (``may_resume``): payemu's guards may keep a connection unread.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

log = logging.getLogger("payemu")

MOST_HELD = 64 * 1024  # bytes one connection may have waiting in its loop's batch

# per event loop, the writes waiting for the start of its next turn, in the order made
_batches: dict[asyncio.AbstractEventLoop, list[tuple[Corked, bytes]]] = {}


def flush(loop: asyncio.AbstractEventLoop) -> None:
    """Write every answer waiting in ``loop``'s batch (to connections still open)."""
    batch = _batches.pop(loop, None)
    if not batch:
        return
    for corked, data in batch:
        corked.held = 0
        transport = corked.transport
        if transport.is_closing():
            continue
        try:
            transport.write(data)
        except Exception:  # one connection's failure is not the others'
            log.exception("payemu could not write an answer")


class Corked:
    """A connection's transport whose writes wait for the end of the loop's turn."""

    __slots__ = ("held", "loop", "may_resume", "transport")

    def __init__(
        self, transport: Any, loop: asyncio.AbstractEventLoop, may_resume: Callable[[], bool] = lambda: True
    ) -> None:
        self.transport = transport
        self.loop = loop
        self.may_resume = may_resume
        self.held = 0  # bytes of this connection's in the loop's batch

    def write(self, data: bytes) -> None:
        loop = self.loop
        if self.held + len(data) > MOST_HELD:
            flush(loop)
            self.transport.write(data)
            return
        batch = _batches.get(loop)
        if batch is None:
            batch = _batches[loop] = []
            loop.call_soon(flush, loop)
        elif batch[-1][0] is self:  # this connection wrote last: one send for both (a head and its body)
            batch[-1] = (self, batch[-1][1] + data)
            self.held += len(data)
            return
        batch.append((self, data))
        self.held += len(data)

    def close(self) -> None:
        if self.held:
            flush(self.loop)
        self.transport.close()

    def abort(self) -> None:
        if self.held:
            flush(self.loop)
        self.transport.abort()

    def resume_reading(self) -> None:
        if self.may_resume():
            self.transport.resume_reading()

    def is_closing(self) -> bool:
        return bool(self.transport.is_closing())

    def __getattr__(self, name: str) -> Any:
        return getattr(self.transport, name)
