"""Reading a connection a slice at a time, and only while few requests wait on it.

httptools cannot stop part way through a read (MagicStack/httptools#87), so a read is kept
and fed to the parser ``SLICE`` bytes at a time outside a body; a connection with
``MOST_QUEUED`` requests (or heads too heavy) waiting is not read further. What is kept and
bodies arriving count in flight (a ``503`` past the bound); a body past ``max_body_bytes``
gets a ``413`` at once. A finished answer is learned of as uvicorn resumes reading (the
transport asks :meth:`Reading.may_resume`); after the client's EOF, answers still go out.
"""

from __future__ import annotations

import httptools
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from emulator.edge.guard_base import MOST_QUEUED, SLICE, GuardBase
from emulator.edge.refusals import crowded, malformed

# uvicorn's own methods this guard calls, read off its class once (see GuardBase)
uvicorn_data_received = HttpToolsProtocol.data_received
uvicorn_on_body = HttpToolsProtocol.on_body
uvicorn_on_message_complete = HttpToolsProtocol.on_message_complete
uvicorn_eof_received = HttpToolsProtocol.eof_received


class Reading(GuardBase):
    """The reading guard (see the module doc)."""

    def data_received(self, data: bytes) -> None:
        if self.refusal is not None or self.transport.is_closing():
            return
        uvicorn_data_received(self, b"")  # uvicorn's own of a read (its keep-alive timer); parsed below
        self.held = self.held + data if self.held else data
        self.feed()
        self.batch.read()  # the answers to what it started go out once those requests ran

    def on_body(self, body: bytes) -> None:
        uvicorn_on_body(self, body)
        size = len(body)
        self.body_bytes += size
        flight = self.flight
        flight.used += size
        if self.body_bytes > self.max_body:
            self.refuse(413, "body", f"The request body is larger than {self.max_body} bytes.")
        elif flight.used > flight.limit:
            self.refuse(503, "request", crowded())

    def on_message_complete(self) -> None:
        uvicorn_on_message_complete(self)
        self.in_body = False
        self.request_due = None
        size = self.body_bytes
        if size:
            self.flight.used -= size
            self.body_bytes = 0

    def feed(self) -> None:
        limit = self.max_waiting_heads
        if self.waiting_weight > limit:
            self.settle()  # (answers went out since: their heads' weight is given back)
        pipeline, parser = self.pipeline, self.parser
        while self.held and len(pipeline) < MOST_QUEUED and self.waiting_weight <= limit:
            size = SLICE
            if self.in_body:
                if self.declared is None:
                    length = next((v for n, v in self.headers if n == b"content-length"), b"0")
                    self.declared = int(length) if length.isdigit() else 0
                # up to the body's end, where the next request may begin (chunked: 64 KiB)
                size = max(self.declared - self.body_bytes, SLICE) if self.declared else 65536
            held = self.held
            if len(held) <= size:
                chunk = held
                self.held = b""
            else:
                chunk = held[:size]
                self.held = held[size:]
            self.chunk = len(chunk)
            if self.in_head:
                self.head_fed += self.chunk
            try:
                parser.feed_data(chunk)
            except httptools.HttpParserUpgrade:
                pass  # payemu serves no upgrade: the request was answered as a plain one
            except httptools.HttpParserError as exc:
                self.refuse(400, "request", malformed(exc))  # (no-op once refused by a callback)
            if self.refusal is not None:
                return
            if self.in_head and self.head_over():
                return
        if len(self.held) != self.held_counted:  # what is kept for later counts in flight
            self.count(len(self.held) - self.held_counted)
            self.held_counted = len(self.held)
            if self.flight.used > self.flight.limit:
                self.refuse(503, "request", crowded())
            elif self.held:
                self.gated = True
                self.flow.pause_reading()

    def holding(self) -> bool:
        """True while payemu keeps the connection unread: a read not all parsed, a refusal
        waiting, or too many requests (or too heavy heads) waiting for their answers."""
        self.settle()
        return (
            bool(self.held)
            or self.refusal is not None
            or len(self.pipeline) >= MOST_QUEUED
            or self.waiting_weight > self.max_waiting_heads
        )

    def eof_received(self) -> bool | None:  # type: ignore[override]  # (asyncio.Protocol allows True)
        """The client half-closed (``shutdown(SHUT_WR)``, ``nc -N``): the requests that
        arrived whole are still answered, then the connection closes. A request cut short
        (its head or body unfinished) with nothing before it to answer closes at once, as
        uvicorn does."""
        self.settle()
        if self.in_body or not (self.held or self.answering or self.refusal is not None):
            uvicorn_eof_received(self)
            self.transport.close()  # through the corked transport: answers written this turn go first
            return None
        self.ended = True
        self.flow.pause_reading()  # so uvicorn resumes reading, and asks, as each answer is out
        return True

    def may_resume(self) -> bool:
        """Asked by the transport as uvicorn resumes reading: False (and reading stays
        paused, uvicorn's flag set again) while payemu holds the connection; after the
        client's EOF, False, and the connection closes once every answer is out."""
        if self.ended:
            self.flow.pause_reading()
            if self.held:
                self.loop.call_soon(self.unhold)
            elif self.refusal is None and not self.pipeline:
                self.settle()
                if not self.answering:
                    self.transport.close()  # (the transport sends what is written first)
            return False
        if not self.holding():
            self.gated = False
            return True
        self.gated = True
        self.flow.pause_reading()
        self.loop.call_soon(self.unhold)
        return False

    def unhold(self) -> None:
        if self.transport.is_closing():
            return
        if self.refusal is not None:
            self.refuse_when_due()
            return
        self.feed()
        if self.gated and not self.holding():
            self.flow.resume_reading()
