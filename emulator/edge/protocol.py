"""The HTTP protocol payemu's server runs: uvicorn's httptools protocol and request cycle,
with payemu's guards added around them (docs/http-limits-and-exposure.md).

The guards live only in the asyncio protocol methods and the parser's callbacks, each
calling uvicorn's own, and in the transport uvicorn is given (:mod:`emulator.edge.corked_writes`):
the head's and the URL's size (``431``, ``414``), the head and request deadlines
(``408``), the connection cap and the write timeout (:mod:`emulator.edge.connections`),
the bytes in flight, and refusals that keep their place in a pipelined connection (a
refusal waits for the answers before it). Reads are parsed a slice at a time, and a
connection with :data:`MOST_QUEUED` requests waiting is not read further.
"""

from __future__ import annotations

import asyncio
from collections import deque
from http import HTTPStatus
from typing import TYPE_CHECKING, Any, cast

from emulator.contract.wire import ABORT, dumps
from emulator.domain import errors
from emulator.domain.config import ConfigError
from emulator.edge import connections
from emulator.edge.corked_writes import Corked

if TYPE_CHECKING:
    from emulator.domain.config import Settings

SLICE = 1024  # bytes of a read parsed at a time outside a body (so requests queue a few at a time)
MOST_QUEUED = 4  # requests waiting behind the one answered before the connection is no longer read


class MissingParser(ConfigError):
    """httptools is not installed: payemu's guards are built on its parser."""


def require_parser() -> None:
    """Raise :class:`MissingParser` when httptools is not installed."""
    try:
        import httptools  # noqa: F401
    except ImportError:
        raise MissingParser(
            "the httptools package is missing (pip install httptools): payemu's HTTP guards need it"
        ) from None


def http_protocol(settings: Settings) -> type[asyncio.Protocol]:
    """The ``http`` argument of ``uvicorn.Config``: uvicorn's httptools protocol with the
    guards and limits of ``settings``; :class:`MissingParser` without httptools."""
    require_parser()
    import httptools
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

    max_head, max_url, max_body = settings.max_head_bytes, settings.max_url_bytes, settings.max_body_bytes
    head_timeout, request_timeout = settings.head_timeout_seconds, settings.request_timeout_seconds
    write_timeout, first_due = settings.write_timeout_seconds, min(head_timeout, request_timeout)
    cap = connections.ConnectionCap(settings.max_connections or connections.default_cap())
    flight = connections.InFlight(connections.IN_FLIGHT_BYTES)

    class GuardedProtocol(HttpToolsProtocol):
        """uvicorn's protocol with payemu's guards (see the module doc)."""

        held = b""  # read and not yet parsed: the rest of a read while requests wait
        held_counted = 0  # ... as counted in flight
        counted = 0  # this connection's bytes in flight: ``held`` and the body arriving
        chunk = 0  # the bytes being parsed
        gated = False  # reading paused by payemu (through uvicorn's flow control)
        refusal: bytes | None = None  # a refusal waiting for the answers before it
        before: tuple[Any, ...] = ()  # ... those answers' request cycles
        in_head = in_body = False  # the request arriving: its head, its body
        head_fed = body_bytes = 0
        declared: int | None = None  # its Content-Length (0: none), once looked up
        head_due: float | None = None  # the deadlines now running (event-loop times)
        request_due: float | None = None
        write_due: float | None = None
        watch: asyncio.TimerHandle | None = None  # the one timer: fires at or before the earliest
        watch_at = 0.0
        waiting_from = 0  # cap.waiting_order as the connection last began waiting

        # -- the asyncio protocol ---------------------------------------------------
        def connection_made(self, transport: Any) -> None:
            super().connection_made(cast(asyncio.Transport, Corked(transport, self.loop, self.may_resume)))
            transport.set_write_buffer_limits(high=connections.WRITE_HIGH_WATER, low=connections.WRITE_LOW_WATER)
            self.answering: deque[Any] = deque()  # the request cycles whose answers are not all out
            self.extensions = {ABORT: self.transport.abort}  # each request's scope["extensions"]
            self.waiting_from = next(cap.waiting_order)
            count = len(self.connections)
            if count > cap.limit and not cap.admit(self, self.connections, count):
                self.refuse(503, "connection", f"payemu has {cap.limit} connections open (its cap); retry shortly.")
                return
            self.head_due = self.loop.time() + head_timeout
            self.watch_for(self.head_due)

        def connection_lost(self, exc: Exception | None) -> None:
            self.head_due = self.request_due = self.write_due = None
            if self.watch is not None:
                self.watch.cancel()
            self.held, self.held_counted = b"", 0
            self.count(-self.counted)
            super().connection_lost(exc)
            cap.released(len(self.connections))

        def data_received(self, data: bytes) -> None:
            if self.refusal is not None or self.transport.is_closing():
                return
            super().data_received(b"")  # uvicorn's own of a read (its keep-alive timer); parsed below
            self.held = self.held + data if self.held else data
            self.feed()

        def pause_writing(self) -> None:
            super().pause_writing()
            self.write_due = self.loop.time() + write_timeout
            self.watch_for(self.write_due)

        def resume_writing(self) -> None:
            self.write_due = None
            super().resume_writing()

        # -- the parser's callbacks -------------------------------------------------
        def on_message_begin(self) -> None:
            super().on_message_begin()
            cast("dict[str, Any]", self.scope)["extensions"] = self.extensions
            self.in_head, self.head_fed, self.body_bytes, self.declared = True, self.chunk, 0, None
            now = self.loop.time()
            self.head_due, self.request_due = now + head_timeout, now + request_timeout
            self.waiting_from = next(cap.waiting_order)
            if self.watch is None or now + first_due < self.watch_at:  # (else it fires soon enough)
                self.watch_for(now + first_due)

        def on_url(self, url: bytes) -> None:
            super().on_url(url)
            if len(self.url) > max_url:
                self.refuse(414, "url", f"The request URL is longer than {max_url} bytes.")
                raise Refused

        def on_headers_complete(self) -> None:
            # (head_fed, the bytes parsed since the head began, is never less than its size)
            if self.head_fed > max_head and head_size(self.url, self.headers) > max_head:
                self.refuse(431, "headers", f"The request line and headers are larger than {max_head} bytes.")
                raise Refused
            self.in_head, self.in_body, self.head_due = False, True, None
            super().on_headers_complete()
            answering = self.answering
            while answering and answering[0].response_complete:
                answering.popleft()
            answering.append(self.cycle)

        def on_body(self, body: bytes) -> None:
            super().on_body(body)
            self.body_bytes += len(body)
            self.count(len(body))
            if self.body_bytes > max_body:
                self.refuse(413, "body", f"The request body is larger than {max_body} bytes.")
            elif flight.used > flight.limit:
                self.refuse(503, "request", crowded())

        def on_message_complete(self) -> None:
            super().on_message_complete()
            self.in_body, self.request_due = False, None
            self.count(-self.body_bytes)
            self.body_bytes = 0

        # -- reading a slice at a time, and only while few requests wait ------------
        def feed(self) -> None:
            while self.held and len(self.pipeline) < MOST_QUEUED:
                size = SLICE
                if self.in_body:
                    if self.declared is None:
                        length = next((v for n, v in self.headers if n == b"content-length"), b"0")
                        self.declared = int(length) if length.isdigit() else 0
                    # up to the body's end, where the next request may begin (chunked: 64 KiB)
                    size = max(self.declared - self.body_bytes, SLICE) if self.declared else 65536
                held = self.held
                chunk, self.held = (held, b"") if len(held) <= size else (held[:size], held[size:])
                self.chunk = len(chunk)
                if self.in_head:
                    self.head_fed += self.chunk
                try:
                    self.parser.feed_data(chunk)
                except httptools.HttpParserUpgrade:
                    pass  # payemu serves no upgrade: the request was answered as a plain one
                except httptools.HttpParserError as exc:
                    self.refuse(400, "request", malformed(exc))  # (no-op once refused by a callback)
                if self.refusal is not None:
                    return
                if self.in_head and self.head_fed > max_head:
                    self.refuse(431, "headers", f"The request line and headers are larger than {max_head} bytes.")
                    return
            if len(self.held) != self.held_counted:  # what is kept for later counts in flight
                self.count(len(self.held) - self.held_counted)
                self.held_counted = len(self.held)
                if flight.used > flight.limit:
                    self.refuse(503, "request", crowded())
                elif self.held:
                    self.gated = True
                    self.flow.pause_reading()

        def holding(self) -> bool:
            return bool(self.held) or self.refusal is not None or len(self.pipeline) >= MOST_QUEUED

        def may_resume(self) -> bool:
            """Asked by the transport as uvicorn resumes reading: False (and reading stays
            paused, uvicorn's flag set again) while payemu holds the connection."""
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

        def count(self, nbytes: int) -> None:
            self.counted += nbytes
            flight.used += nbytes

        # -- refusals, in their place -----------------------------------------------
        def refuse(self, status: int, field: str, message: str) -> None:
            """Answer the request arriving with a JSON error and close, once the answers
            to the requests before it are out."""
            if self.refusal is not None or self.transport.is_closing():
                return
            own = self.cycle if self.in_body else None  # the refused request's, when its head is in
            for queued in list(self.pipeline):
                if queued[0] is own:
                    self.pipeline.remove(queued)
            started = own is not None and own.response_started
            self.before = tuple(c for c in self.answering if c is not own or started)
            self.refusal = b"" if started else refusal(status, field, message)
            self.in_head = self.in_body = False
            self.head_due = self.request_due = None
            self.count(-self.held_counted)
            self.held, self.held_counted = b"", 0
            self.gated = True
            self.flow.pause_reading()
            self.refuse_when_due()

        def refuse_when_due(self) -> None:
            if all(cycle.response_complete for cycle in self.before):
                if self.refusal:
                    self.transport.write(self.refusal)
                self.transport.close()

        # -- the connection cap -----------------------------------------------------
        def waiting_since(self) -> int | None:
            if self.refusal is not None or self.transport.is_closing():
                return None
            if self.in_head or self.in_body or all(c.response_complete for c in self.answering):
                return self.waiting_from  # a request arriving (however slowly), or idle
            return None

        def make_room(self) -> None:
            self.transport.close()

        # -- the deadlines, one timer ------------------------------------------------
        def watch_for(self, due: float) -> None:
            """Make sure the timer fires no later than ``due``; once it fires it looks at
            the deadlines then running and sleeps again until the earliest."""
            if self.watch is not None:
                if self.watch_at <= due:
                    return
                self.watch.cancel()
            self.watch_at = due
            self.watch = self.loop.call_at(due, self.check)

        def check(self) -> None:
            self.watch = None
            now = self.loop.time()
            if self.write_due is not None and now >= self.write_due:
                self.transport.abort()  # a client that reads nothing: what waits for it is dropped
            elif self.transport.is_closing():
                if self.write_due is not None:
                    self.watch_for(self.write_due)
            elif self.request_due is not None and now >= self.request_due:
                message = f"The request (headers and body) did not arrive within {request_timeout:g} s."
                self.refuse(408, "body", message)
            elif self.head_due is not None and now >= self.head_due:
                if self.in_head:
                    message = f"The request line and headers did not arrive within {head_timeout:g} s."
                    self.refuse(408, "headers", message)
                else:  # not a byte came: closed quietly, as uvicorn closes idle connections
                    self.transport.close()
            else:
                pending = [due for due in (self.head_due, self.request_due, self.write_due) if due is not None]
                if pending:
                    self.watch_for(min(pending))

    return GuardedProtocol


class Refused(Exception):
    """Raised in a parser callback once the request is refused: the parser stops there."""


def head_size(url: bytes, headers: list[tuple[bytes, bytes]]) -> int:
    """The bytes of a parsed request head: the URL and each header with its separators."""
    return len(url) + sum(len(name) + len(value) + 4 for name, value in headers)


def crowded() -> str:
    """The message of the ``503`` once the bytes in flight pass their bound."""
    return f"payemu holds {connections.IN_FLIGHT_BYTES >> 20} MiB of requests arriving; retry shortly."


def malformed(exc: Exception) -> str:
    """The message of the ``400`` for a request that is not valid HTTP/1.1 (httptools'
    reason when it gives one: "Invalid header value char", ...)."""
    reason = str(exc) if type(exc).__name__ != "HttpParserCallbackError" else ""
    return f"The request is not valid HTTP/1.1{': ' + reason if reason else ''}."


def refusal(status: int, field: str, message: str) -> bytes:
    """A complete HTTP/1.1 response with payemu's JSON error body that closes the
    connection (written straight to the transport: no request reached the app)."""
    body = dumps(errors.ApiError(status, [(field, [message])]).body)
    head = (
        f"HTTP/1.1 {status} {HTTPStatus(status).phrase}\r\n"
        "content-type: application/json\r\n"
        "x-content-type-options: nosniff\r\n"
        f"content-length: {len(body)}\r\n"
        "connection: close\r\n\r\n"
    )
    return head.encode("ascii") + body
