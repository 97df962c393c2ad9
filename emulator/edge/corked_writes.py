"""Answers written together at the end of the event loop's turn ("corked"), not one by one.

A :class:`Corked` transport puts what is written in its loop's batch, sent at the start of
the next turn: the turn's answers go out together, and the next turn finds more requests
ready (written one by one, each answer ran the kernel's network path between requests).
A connection's writes keep their order, a head and its body go in one system call, closing
sends the batch first, and past :data:`MOST_HELD` bytes a connection's batch goes at once.
Resuming reading asks the protocol first (``may_resume``): its guards may keep a
connection unread.
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
