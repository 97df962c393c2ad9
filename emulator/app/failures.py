"""payemu's one exception layer: an exception a request's handling lets out becomes a
JSON error (404 and 405 from the router in payemu's error shape, anything else a 500
naming no internals), and the exception still reaches the server, which logs it; a
request the server's stop cancels gets the JSON 503 of :mod:`emulator.app.shutdown`.

It takes the place of Starlette's two exception middlewares: :func:`answer` runs in the
application's own call (:mod:`emulator.app.application`), or in :class:`JsonErrors` inside
user middleware. It wraps no ``send``: whether an answer had begun is learned by trying
the error answer, which the server refuses (uvicorn raises) when one had."""

from __future__ import annotations

import asyncio
import contextlib
import logging

from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response
from starlette.types import ASGIApp, Receive, Scope, Send

from emulator.app import shutdown
from emulator.contract.wire import error_response
from emulator.domain import errors

log = logging.getLogger("payemu")


class JsonErrors:
    """ASGI middleware: ``app``'s uncaught exceptions answered as JSON (see the module doc)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await self.app(scope, receive, send)
        except BaseException as exc:
            if scope["type"] != "http":
                raise
            await answer(exc, scope, receive, send)


async def answer(exc: BaseException, scope: Scope, receive: Receive, send: Send) -> None:
    """Answer the request of ``scope``, whose handling let ``exc`` out; what the server must
    still see (a crash, or anything but an exception) is raised again."""
    if isinstance(exc, HTTPException):
        try:
            await http_error(Request(scope), exc)(scope, receive, send)
        except Exception:  # the server refuses a second answer: this one had begun
            raise RuntimeError("An HTTP error was raised after its answer began.") from exc
    elif isinstance(exc, asyncio.CancelledError):
        await shutdown.cut(scope, send)  # the server's stop cut it: a JSON 503, no traceback
    elif isinstance(exc, Exception):
        with contextlib.suppress(Exception):  # (refused by the server when the answer had begun)
            await crash(Request(scope), exc)(scope, receive, send)
        raise exc  # the server logs it (a traceback in the server's log, never in the answer)
    else:
        raise exc  # (the process is stopping: KeyboardInterrupt, SystemExit)


def http_error(request: Request, exc: HTTPException) -> Response:
    """The router's 404 and 405 (and any other HTTPException) in payemu's error shape."""
    if exc.status_code == 405:
        allowed = (exc.headers or {}).get("Allow", "").split(", ")
        return error_response(errors.method_not_allowed(request.method, [a for a in allowed if a]))
    if exc.status_code == 404:
        return error_response(errors.not_found("path", f"No resource at {request.method} {request.url.path}."))
    return error_response(errors.ApiError(exc.status_code, [(None, [str(exc.detail)])]))


def crash(request: Request, exc: Exception) -> Response:
    """The 500 of an exception payemu did not expect (a client gone mid-body: nobody to answer)."""
    if isinstance(exc, ClientDisconnect):
        log.info("client disconnected during %s %s", request.method, request.url.path)
        return Response(status_code=499)
    log.error("payemu bug: %r while answering %s %s", exc, request.method, request.url.path)
    return error_response(errors.internal("payemu hit an internal error; see its log."))
