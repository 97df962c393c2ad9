"""The HTTP protocol payemu's server runs: uvicorn's httptools protocol with the guards
that httptools lacks, and three savings per request.

* **Head size**: the request line and headers may take at most ``max_head_bytes``
  (64 KiB by default). httptools buffers a header of any length and any number of
  headers, so one client sending an endless header could grow the server without bound.
  A longer head gets a ``431`` JSON error and the connection is closed. The bytes are
  counted per read of the socket, so a head that completes within the read that crosses
  the limit is still served: what is held stays under the limit plus one read (256 KiB).
* **URL size**: a request target longer than ``max_url_bytes`` (8 KiB by default) gets a
  ``414`` JSON error and the connection is closed; the head, once complete, is measured
  exactly too (a body in the same read does not count toward the ``431``).
* **Malformed requests**: what the parser refuses (``Content-Length`` with
  ``Transfer-Encoding``, control characters in a header, a bad request line) gets a
  ``400`` JSON error naming the parser's reason, where uvicorn answers ``text/plain``.
* **Connections and slow readers**: the cap and the write timeout of :mod:`emulator.http.connections`.
* **Head deadline**: the request line and headers must arrive within
  ``head_timeout_seconds`` (30 s by default) of the connection opening or of the request's
  first byte, otherwise a ``408`` JSON error and the connection is closed (closed without
  an answer when not a byte came): a slowloris client cannot hold a connection for ever.
* **Request deadline**: the whole request — head and body — must arrive within
  ``request_timeout_seconds`` (60 s by default) of its first byte, otherwise a ``408``
  JSON error on ``body`` and the connection is closed: a client sending its body a byte
  every few seconds cannot hold a connection (nor the server's shutdown) for ever. The
  application sees the client disconnect, which it journals as such.

All three deadlines, the write deadline and uvicorn's keep-alive one, are kept by one timer per
connection (a watchdog that, when it fires, looks at the deadlines then running and sleeps again until
the earliest), not by arming and cancelling timers on every request. The answers of a turn of the event
loop go out together at its end, a response's head and body in one write (:mod:`emulator.http.cork`).
An application that has its whole answer at once (payemu's documented operations) may hand it over in
one call, the ``payemu.whole`` scope extension (:data:`WHOLE`), which skips the checks uvicorn makes
of each header of a ``send``.

Bodies are bounded by the pipeline (``max_body_bytes``, a ``413``). Without httptools
installed, uvicorn's h11 protocol is used; h11 bounds the head itself (16 KiB).
"""

from __future__ import annotations

import asyncio
import re
import weakref
from collections.abc import Mapping
from functools import partial
from http import HTTPStatus
from typing import TYPE_CHECKING, Any, cast
from urllib.parse import unquote

from emulator.http import connections, direct, errors
from emulator.http.cork import Corked
from emulator.http.cycle import Cycle
from emulator.http.direct import forwarded
from emulator.http.wire import dumps

if TYPE_CHECKING:
    from emulator.config import Settings


def http_protocol(settings: Settings, app: Any = None) -> type[asyncio.Protocol] | str:
    """The ``http`` argument of ``uvicorn.Config``: the guarded httptools protocol with
    the limits of ``settings``, or ``"h11"`` when httptools is not installed. ``app``: the
    application when it answers some requests directly (a :class:`~emulator.http.direct.Direct`)."""
    try:
        import httptools
        from uvicorn.protocols.http.flow_control import HIGH_WATER_LIMIT, service_unavailable
        from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
    except ImportError:
        return "h11"
    max_head_bytes = settings.max_head_bytes
    max_url_bytes = settings.max_url_bytes
    head_timeout = settings.head_timeout_seconds
    request_timeout = settings.request_timeout_seconds
    write_timeout = settings.write_timeout_seconds
    cap = connections.ConnectionCap(settings.max_connections or connections.default_cap())
    answers = direct.of(app)

    class GuardedHttpToolsProtocol(HttpToolsProtocol):
        """Counts the bytes of each request head and times it (see the module doc)."""

        _head_bytes: int | None = 0  # None once the head is complete (body, response)
        _head_started = False  # a byte of the current request came
        # the deadlines (event-loop times) now running; None: not running
        _head_due: float | None = None
        _request_due: float | None = None  # from the first byte to the body's end
        _write_due: float | None = None  # the client reads nothing while the write buffer is full
        _idle_due: float | None = None  # kept alive, waiting for the next request (uvicorn's)
        _watch: asyncio.TimerHandle | None = None  # the one timer: fires at or before the earliest
        _watch_at = 0.0
        _waiting_from = 0  # cap.waiting_order as it last began waiting (head or idle)

        def connection_made(self, transport: Any) -> None:
            super().connection_made(cast(asyncio.Transport, Corked(transport, self.loop)))  # a Transport by duck typing
            transport.set_write_buffer_limits(high=connections.WRITE_HIGH_WATER, low=connections.WRITE_LOW_WATER)
            count = len(self.connections)
            if count > cap.limit and not cap.admit(self, self.connections, count):
                message = f"payemu has {cap.limit} connections open (its cap), all running requests; retry shortly."
                self._refuse(503, message, "connection")
                return
            self._head_bytes = 0
            self._head_due = self.loop.time() + head_timeout
            self._waiting_from = next(cap.waiting_order)
            self._watch_for(self._head_due)

        def connection_lost(self, exc: Exception | None) -> None:
            self._head_due = self._request_due = self._idle_due = self._write_due = None
            if self._watch is not None:
                self._watch.cancel()
                self._watch = None
            super().connection_lost(exc)
            cap.released(len(self.connections))

        def data_received(self, data: bytes) -> None:
            if self.transport.is_closing():
                return
            self._idle_due = None
            if self._head_bytes is not None:
                self._head_bytes += len(data)
            try:
                self.parser.feed_data(data)
            except httptools.HttpParserUpgrade:
                if self._should_upgrade():
                    self.handle_websocket_upgrade()
                else:
                    self._unsupported_upgrade_warning()
            except httptools.HttpParserError as exc:
                if not self.transport.is_closing():  # else refused by a callback already
                    self._refuse(400, malformed(exc), "request")
                return
            # counted before parsing, checked after: a chunk that ends the head is checked
            # exactly by on_headers_complete
            if self._head_bytes is not None and self._head_bytes > max_head_bytes:
                self._refuse_head()

        def on_message_begin(self) -> None:
            super().on_message_begin()
            now = self.loop.time()
            self._request_due = now + request_timeout
            self._head_started = True
            if self._head_bytes is None:  # the next request on a kept-alive connection
                self._head_bytes = 0
                self._head_due = now + head_timeout
                self._waiting_from = next(cap.waiting_order)
            self._watch_for(self._request_due if self._head_due is None else min(self._head_due, self._request_due))

        def on_headers_complete(self) -> None:
            if len(self.url) > max_url_bytes or (
                self._head_bytes is not None and self._head_bytes > max_head_bytes and head_size(self) > max_head_bytes
            ):
                self._refuse_head()
                raise Refused  # the parser stops; no application call
            self._head_bytes = None
            self._head_started = False
            self._head_due = None
            # uvicorn's, with payemu's request cycle (emulator.http.cycle)
            parser, scope = self.parser, self.scope
            http_version = parser.get_http_version()
            scope["method"] = parser.get_method().decode("ascii")
            if http_version != "1.1":
                scope["http_version"] = http_version
            if parser.should_upgrade() and self._should_upgrade():
                return
            url = httptools.parse_url(self.url)
            raw_path = url.path
            path = raw_path.decode("ascii")
            if "%" in path:
                path = unquote(path)
            root = self.root_path
            scope["path"] = root + path if root else path
            scope["raw_path"] = root.encode("ascii") + raw_path if root else raw_path
            scope["query_string"] = url.query or b""
            app = self.app
            limit = self.limit_concurrency
            if limit is not None and (len(self.connections) >= limit or len(self.tasks) >= limit):
                app = service_unavailable
                self.logger.warning("Exceeded concurrency limit.")
            existing = self.cycle
            self.cycle = cycle = Cycle(
                scope,
                self.transport,
                self.flow,
                self.server_state.default_headers,
                http_version != "1.0" and parser.should_keep_alive(),
                self.expect_100_continue,
                self.on_response_complete,
            )
            if existing is None or existing.response_complete:
                self._start_asgi_task(cycle, app)
            else:  # pipelined: queued until the answers before it are out
                self.flow.pause_reading()
                self.pipeline.appendleft((cycle, app))

        def on_body(self, body: bytes) -> None:
            # uvicorn's, without its question about an upgrade (payemu serves no WebSocket)
            cycle = self.cycle
            if cycle.response_complete:
                return
            cycle.body += body
            if len(cycle.body) > HIGH_WATER_LIMIT:
                self.flow.pause_reading()
            cycle.message_event.set()

        def _start_asgi_task(self, cycle: Any, app: Any) -> None:
            scope = cycle.scope
            if answers is not None:  # a documented operation: straight to its endpoint (emulator.http.direct)
                found = answers.direct(scope)
                if found is not None and not (self.config.proxy_headers and forwarded(scope["headers"])):
                    direct.queue(self.loop, direct.answer(answers, found, cycle), self.tasks)
                    return
            scope["extensions"] = {WHOLE: partial(self._send_whole, weakref.ref(cycle))}
            super()._start_asgi_task(cycle, app)

        def on_message_complete(self) -> None:
            self._request_due = None
            cycle = self.cycle  # uvicorn's, without its question about an upgrade
            if not cycle.response_complete:
                cycle.more_body = False
                cycle.message_event.set()

        def on_response_complete(self) -> None:
            # uvicorn's, except that the keep-alive deadline goes to the watchdog (uvicorn arms a timer)
            self.server_state.total_requests += 1
            if self.transport.is_closing():
                return
            if self.flow.read_paused:
                self.flow.resume_reading()
            if self.pipeline:
                cycle, app = self.pipeline.pop()
                self._start_asgi_task(cycle, app)
            else:
                self._idle_due = self.loop.time() + self.timeout_keep_alive
                self._waiting_from = next(cap.waiting_order)
                self._watch_for(self._idle_due)

        async def _send_whole(self, ref: weakref.ref[Any], status: int, lines: bytes, body: bytes) -> None:
            """The :data:`WHOLE` extension (the cycle held weakly: the scope holds this)."""
            cycle = ref()
            if cycle is not None:
                waiting = cycle.whole(status, lines, body)
                if waiting is not None:
                    await waiting

        # -- the write buffer and the connection cap (emulator.http.connections) --------
        def pause_writing(self) -> None:
            super().pause_writing()
            self._write_due = self.loop.time() + write_timeout
            self._watch_for(self._write_due)

        def resume_writing(self) -> None:
            self._write_due = None
            super().resume_writing()

        def waiting_since(self) -> int | None:
            if self.transport.is_closing() or (self.cycle is not None and not self.cycle.response_complete):
                return None
            if (self._head_bytes is not None and self._head_due is not None) or self._idle_due is not None:
                return self._waiting_from
            return None

        def make_room(self) -> None:
            self.transport.close()

        # -- the watchdog ------------------------------------------------------------
        def _watch_for(self, due: float) -> None:
            """Make sure the watchdog fires no later than ``due``. A request that starts
            and ends before the timer fires costs no timer of its own: the watchdog,
            once it fires, looks at the deadlines then running and sleeps again."""
            if self._watch is not None:
                if self._watch_at <= due:
                    return
                self._watch.cancel()
            self._watch_at = due
            self._watch = self.loop.call_at(due, self._check)

        def _check(self) -> None:
            self._watch = None
            now = self.loop.time()
            if self._write_due is not None and now >= self._write_due:
                self._write_due = None  # a client that reads nothing: what waits for it is dropped
                self.transport.abort()
                return
            if self.transport.is_closing():
                if self._write_due is not None:
                    self._watch_for(self._write_due)
                return
            if self._head_due is not None and now >= self._head_due:
                self._head_too_slow()
            elif self._request_due is not None and now >= self._request_due:
                self._request_too_slow()
            elif self._idle_due is not None and now >= self._idle_due:
                self._idle_due = None
                self.timeout_keep_alive_handler()
            else:
                pending = [
                    due
                    for due in (self._head_due, self._request_due, self._idle_due, self._write_due)
                    if due is not None
                ]
                if pending:
                    self._watch_for(min(pending))

        def _request_too_slow(self) -> None:
            self._request_due = None
            cycle = getattr(self, "cycle", None)
            if cycle is not None and cycle.response_started:  # answered already (e.g. a 413)
                self.transport.close()
            else:
                message = f"The request (headers and body) did not arrive within {request_timeout:g} s."
                self.transport.write(refusal(408, "body", message))
                self.transport.close()

        def _head_too_slow(self) -> None:
            self._head_due = None
            if self._head_started:
                self._refuse(408, f"The request line and headers did not arrive within {head_timeout:g} s.")
            else:  # an idle connection: closed quietly, as uvicorn closes idle kept-alive ones
                self.transport.close()

        def _refuse(self, status: int, message: str, field: str = "headers") -> None:
            if not self.transport.is_closing():
                self.transport.write(refusal(status, field, message))
                self.transport.close()

        def _refuse_head(self) -> None:
            if len(getattr(self, "url", b"")) > max_url_bytes:  # the URL so far, or the whole
                self._refuse(414, f"The request URL is longer than {max_url_bytes} bytes.", "url")
            else:
                self._refuse(431, f"The request line and headers are larger than {max_head_bytes} bytes.")

    return GuardedHttpToolsProtocol


class Refused(Exception):
    """Raised in a parser callback once the request is refused: the parser stops there."""


def malformed(exc: Exception) -> str:
    """The message of the ``400`` for a request that is not valid HTTP/1.1 (httptools'
    reason when it gives one: "Invalid header value char", "Transfer-Encoding can't be
    present with Content-Length", ...)."""
    reason = str(exc) if type(exc).__name__ != "HttpParserCallbackError" else ""
    return f"The request is not valid HTTP/1.1{': ' + reason if reason else ''}."


def head_size(protocol: Any) -> int:
    """The bytes of a parsed request head: the URL and each header (with its separators)."""
    return len(protocol.url) + sum(len(name) + len(value) + 4 for name, value in protocol.headers)


# what uvicorn refuses in a header's name and in its value (uvicorn's own expressions)
_BAD_NAME = re.compile(b'[\x00-\x1f\x7f()<>@,;:\\[\\]={} \t\\\\"]')
_BAD_VALUE = re.compile(b"[\x00-\x08\x0a-\x1f\x7f]")
_FRAMING = frozenset({b"content-length", b"connection", b"transfer-encoding"})


def header_lines(headers: Mapping[str, str]) -> bytes | None:
    """``headers`` as the header lines :data:`WHOLE` takes (``name: value\\r\\n``, names
    in lower case); None when one is not valid HTTP, not Latin-1, or frames the message
    (the caller then sends as usual, and uvicorn refuses what it refuses)."""
    lines: list[bytes] = []
    for name, value in headers.items():
        try:
            raw_name, raw_value = name.lower().encode("latin-1"), value.encode("latin-1")
        except UnicodeEncodeError:
            return None
        if raw_name in _FRAMING or _BAD_NAME.search(raw_name) or _BAD_VALUE.search(raw_value):
            return None
        lines += (raw_name, b": ", raw_value, b"\r\n")
    return b"".join(lines)


WHOLE = "payemu.whole"
"""The scope extension (``scope["extensions"][WHOLE]``) under payemu's server:
``await whole(status, header_lines, body)`` sends a complete response at once; the
header lines (``content-type: …\\r\\n``) must be valid HTTP, and no ``connection``,
``content-length`` other than the body's, or ``transfer-encoding``. It writes no access
log line (payemu runs uvicorn without its access log)."""


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
