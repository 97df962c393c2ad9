"""Answers written together once the event loop's callbacks have run ("corked"), not one by one.

A :class:`Corked` transport keeps what is written for its loop's :class:`Batch`, so the
answers go out together and the loop's next turn finds more requests ready. A read queues
the flush behind the requests it started (behind those of every read of the turn): their
answers leave in the turn they ran. A write no read waits on (a pipelined request, an
answer that waited) queues it for the next turn's start. A connection's writes go out in
order in one system call; closing sends them first, and past :data:`MOST_HELD` bytes they
go at once. Resuming reading asks the protocol first (``may_resume``).
"""

from __future__ import annotations

import asyncio
import functools
import logging
import weakref
from collections.abc import Callable
from typing import Any

log = logging.getLogger("payemu")

MOST_HELD = 64 * 1024  # bytes one connection may have waiting for the end of the turn


class Batch:
    """One event loop's connections with writes waiting, in the order each first wrote,
    and the flushes queued to send them (see the module doc)."""

    __slots__ = ("after_reads", "due", "flush_after_reads", "loop", "waiting")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.waiting: list[Corked] = []
        self.due: asyncio.Handle | None = None  # the flush a write queued
        self.after_reads: asyncio.Handle | None = None  # the flush behind the requests of this turn's reads
        # made once: a callback queued with no arguments costs the loop less on every read
        self.flush_after_reads = functools.partial(self.flush, True)

    def read(self) -> None:
        """A read was parsed: the flush goes behind the callbacks it queued (the requests
        it started), moved there when an earlier read of the turn had queued it."""
        if self.after_reads is not None:
            self.after_reads.cancel()
        self.after_reads = self.loop.call_soon(self.flush_after_reads)

    def flush(self, after_reads: bool = False) -> None:
        """Write what every waiting connection has waiting (those still open)."""
        if after_reads:
            self.after_reads = None
        else:
            self.due = None
        waiting, self.waiting = self.waiting, []
        for corked in waiting:
            corked.queued = False
            corked.send()


# per event loop, its batch (kept as long as the loop is)
_batches: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Batch] = weakref.WeakKeyDictionary()


def batch_of(loop: asyncio.AbstractEventLoop) -> Batch:
    """The batch of ``loop``'s connections."""
    batch = _batches.get(loop)
    if batch is None:
        batch = _batches[loop] = Batch(loop)
    return batch


class Corked:
    """A connection's transport whose writes wait for the end of the loop's turn."""

    __slots__ = ("batch", "held", "is_closing", "may_resume", "parts", "queued", "transport")

    def __init__(
        self, transport: Any, loop: asyncio.AbstractEventLoop, may_resume: Callable[[], bool] = lambda: True
    ) -> None:
        self.transport: asyncio.Transport = transport
        self.may_resume = may_resume
        self.is_closing: Callable[[], bool] = transport.is_closing  # asked on every answer: no call in between
        self.batch = batch_of(loop)  # its loop's, shared by the loop's connections
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
            if batch.due is None and batch.after_reads is None:  # no flush queued: one at the next turn's start
                batch.due = batch.loop.call_soon(batch.flush)
            batch.waiting.append(self)

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

    # The rest of asyncio's transport interface, passed on as it is. No ``__getattr__``: on
    # Python 3.11 a class with one has none of its attributes read by the specialized path.
    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return self.transport.get_extra_info(name, default)

    def set_protocol(self, protocol: asyncio.BaseProtocol) -> None:
        self.transport.set_protocol(protocol)

    def get_protocol(self) -> asyncio.BaseProtocol:
        return self.transport.get_protocol()

    def is_reading(self) -> bool:
        return self.transport.is_reading()

    def pause_reading(self) -> None:
        self.transport.pause_reading()

    def set_write_buffer_limits(self, high: int | None = None, low: int | None = None) -> None:
        self.transport.set_write_buffer_limits(high, low)

    def get_write_buffer_size(self) -> int:
        return self.transport.get_write_buffer_size()

    def get_write_buffer_limits(self) -> tuple[int, int]:
        return self.transport.get_write_buffer_limits()

    def writelines(self, list_of_data: Any) -> None:
        self.transport.writelines(list_of_data)

    def write_eof(self) -> None:
        self.transport.write_eof()

    def can_write_eof(self) -> bool:
        return self.transport.can_write_eof()
