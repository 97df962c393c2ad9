"""Answers written together at the end of the event loop's turn ("corked"), not one by one.

A :class:`Corked` transport keeps what is written until the start of the loop's next turn:
the turn's answers go out together, and the next turn finds more requests ready (written
one by one, each answer ran the kernel's network path between requests). A connection's
writes of one turn go out in their order in one system call (a head and its body, or a
few pipelined answers); closing sends them first, and past :data:`MOST_HELD` bytes they go
at once. Resuming reading asks the protocol first (``may_resume``): its guards may keep a
connection unread.
"""

from __future__ import annotations

import asyncio
import logging
import weakref
from collections.abc import Callable
from typing import Any

log = logging.getLogger("payemu")

MOST_HELD = 64 * 1024  # bytes one connection may have waiting for the end of the turn

# per event loop, the connections with writes waiting, in the order each first wrote in the turn
# (kept as long as the loop is)
_batches: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, list[Corked]] = weakref.WeakKeyDictionary()


def flush(batch: list[Corked]) -> None:
    """Write what every connection of ``batch`` has waiting (those still open)."""
    waiting = batch[:]
    batch.clear()
    for corked in waiting:
        corked.queued = False
        corked.send()


class Corked:
    """A connection's transport whose writes wait for the end of the loop's turn."""

    __slots__ = ("batch", "held", "is_closing", "loop", "may_resume", "parts", "queued", "transport")

    def __init__(
        self, transport: Any, loop: asyncio.AbstractEventLoop, may_resume: Callable[[], bool] = lambda: True
    ) -> None:
        self.transport = transport
        self.loop = loop
        self.may_resume = may_resume
        self.is_closing: Callable[[], bool] = transport.is_closing  # asked on every answer: no call in between
        self.batch = _batches.setdefault(loop, [])  # its loop's, shared by the loop's connections
        self.parts: list[bytes] = []  # written this turn, in order
        self.held = 0  # ... their bytes
        self.queued = False  # in its loop's batch

    def write(self, data: bytes) -> None:
        if self.held:  # it wrote earlier in this turn: this goes with it
            self.parts.append(data)
            self.held += len(data)
            if self.held > MOST_HELD:
                self.send()
            return
        if len(data) > MOST_HELD:
            self.transport.write(data)
            return
        self.parts.append(data)
        self.held = len(data)
        if not self.queued:
            self.queued = True
            batch = self.batch
            if not batch:
                self.loop.call_soon(flush, batch)
            batch.append(self)

    def send(self) -> None:
        """Write what waits now (nothing to a connection already closing)."""
        parts = self.parts
        if not parts:
            return
        data = parts[0] if len(parts) == 1 else b"".join(parts)
        parts.clear()
        self.held = 0
        transport = self.transport
        if transport.is_closing():
            return
        try:
            transport.write(data)
        except Exception:  # one connection's failure is not the others'
            log.exception("payemu could not write an answer")

    def close(self) -> None:
        self.send()
        self.transport.close()

    def abort(self) -> None:
        self.send()
        self.transport.abort()

    def resume_reading(self) -> None:
        if self.may_resume():
            self.transport.resume_reading()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.transport, name)
