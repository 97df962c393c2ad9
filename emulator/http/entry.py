"""The way in: documented operations on fixed paths skip Starlette's layers.

Starlette stays the application: its router, middleware and exception handlers serve
everything else (paths with parameters, pages, 404, 405, HEAD, a tenant served another
interface version). But a request whose ``(method, path)`` names a documented operation
on a fixed path — every payment call — is found with one dictionary lookup and handed
straight to its :class:`~emulator.http.pipeline.Endpoint`, whose answer is written to the
ASGI ``send`` without building a Starlette ``Response``. Same pipeline, same answers: only
the route matching, two middleware layers and a response object fewer.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.types import Receive, Scope, Send

from emulator.http import errors, shutdown
from emulator.http.direct import Whole
from emulator.http.pipeline import Answer, Endpoint
from emulator.http.protocol import WHOLE, header_lines
from emulator.http.routing import OperationRoute
from emulator.http.wire import JSON_MEDIA, NOSNIFF_LINE, dumps
from emulator.payments.model import DropConnection

log = logging.getLogger("payemu")
_JSON = JSON_MEDIA.encode("latin-1")
_JSON_LINE = b"content-type: " + _JSON + b"\r\n" + NOSNIFF_LINE  # with nosniff: one constant
_JSON_HEADERS = ((b"content-type", _JSON), (b"x-content-type-options", b"nosniff"))
_NO_LENGTH = frozenset({204, 304})  # statuses that carry no Content-Length (as Starlette)


class App(Starlette):
    """Starlette with a dictionary of fixed-path operations in front (see the module doc)."""

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.operations: dict[tuple[str, str], tuple[Endpoint, bool]] = {}
        for route in self.router.routes:
            if isinstance(route, OperationRoute) and "{" not in route.path:
                for method, endpoint in route.endpoints.items():
                    self.operations.setdefault((method, route.path), (endpoint, route.chooser is not None))

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            endpoint = self.direct(scope)
            if endpoint is not None:
                extensions = scope.get("extensions")
                await self.answer_direct(endpoint, scope, receive, send, extensions.get(WHOLE) if extensions else None)
                return
        try:  # (free unless raised: Python 3.11's exceptions cost nothing until thrown)
            await super().__call__(scope, receive, send)
        except asyncio.CancelledError:
            if scope["type"] != "http":
                raise
            await shutdown.cut(scope, send)  # the server's stop cut it: a JSON 503, no traceback

    def direct(self, scope: Scope) -> Endpoint | None:
        """The endpoint of a documented operation on a fixed path (one dictionary lookup),
        else None (:mod:`emulator.http.direct`)."""
        found = self.operations.get((scope["method"], scope["path"]))
        # a tenant may be served another interface version: the router chooses then
        if found is None or (found[1] and found[0].runtime.interfaces):
            return None
        return found[0]

    async def answer_direct(
        self,
        endpoint: Endpoint,
        scope: Scope,
        receive: Receive,
        send: Send,
        whole: Whole | None,
        body: bytes | None = None,
    ) -> None:
        """Answer a request :meth:`direct` found: straight from the protocol (``whole``,
        and the ``body`` when it is all in) or through the ASGI way (``whole`` the scope's
        extension, when the server has it)."""
        scope["app"] = self
        try:
            try:
                answer = await endpoint.respond(Request(scope, receive, send), body)
            except DropConnection:  # in-process (no transport to abort): the client sees it raised
                raise
            except Exception:  # the pipeline answers its own errors; this is a last resort
                log.exception("payemu bug while answering %s %s", scope["method"], scope["path"])
                error = errors.internal("payemu hit an internal error; see its log.")
                answer = Answer(error.status, error.headers, dumps(error.body))
            if answer is None:
                return  # the connection is closed without an answer
            payload = answer.payload
            if whole is not None and answer.status >= 200 and answer.status not in _NO_LENGTH:
                # payemu's server: the answer in one call (emulator.http.protocol.WHOLE)
                extra = header_lines(answer.headers) if answer.headers else b""
                if extra is not None:
                    if payload is None:
                        waiting = whole(answer.status, b"content-length: 0\r\n" + extra, b"")
                    else:
                        lines = _JSON_LINE + b"content-length: %d\r\n" % len(payload) + extra
                        waiting = whole(answer.status, lines, payload)
                    if waiting is not None:
                        await waiting
                    return
            await _send(answer, send)
        except asyncio.CancelledError:
            await shutdown.cut(scope, send)  # the server's stop cut it: a JSON 503, no traceback


async def _send(answer: Answer, send: Send) -> None:
    """``answer`` through the ASGI ``send``: head, then body."""
    payload = answer.payload
    headers: list[tuple[bytes, bytes]] = []
    if payload is not None:
        headers += _JSON_HEADERS
    if answer.status >= 200 and answer.status not in _NO_LENGTH:
        headers.append((b"content-length", str(len(payload or b"")).encode("latin-1")))
    for name, value in answer.headers.items():
        headers.append((name.lower().encode("latin-1"), value.encode("latin-1")))
    await send({"type": "http.response.start", "status": answer.status, "headers": headers})
    await send({"type": "http.response.body", "body": payload or b""})
