"""What a request still running when the server stops gets.

On SIGTERM (or SIGINT) uvicorn stops accepting, lets running requests finish for the
shutdown timeout (``--shutdown-timeout``, 10 s by default), then cancels those still
running. Such a request — a scenario's ``delayMs``, a client still sending its body — is
answered here, through :mod:`emulator.app.failures`, with the service's JSON error shape:
a ``503`` saying the server is stopping (``Retry-After: 1``, ``Connection: close``), never
uvicorn's ``text/plain`` 500, and the cancellation stops there, so no ``CancelledError``
traceback reaches the console. A request whose answer had started is left to close.
"""

from __future__ import annotations

import logging

from starlette.types import Scope, Send

from emulator.contract.wire import dumps
from emulator.domain import errors

log = logging.getLogger("payemu")
MESSAGE = "payemu is stopping: this request was still running when its shutdown timeout ran out; retry it."
_BODY = dumps(errors.ApiError(503, [(None, [MESSAGE])]).body)
_HEADERS = [
    (b"content-type", b"application/json"),
    (b"x-content-type-options", b"nosniff"),
    (b"content-length", str(len(_BODY)).encode("ascii")),
    (b"retry-after", b"1"),
    (b"connection", b"close"),
]


async def cut(scope: Scope, send: Send) -> None:
    """Answer the request of ``scope``, cancelled by the server's stop, with the 503."""
    log.info("cut by the shutdown: %s %s", scope.get("method"), scope.get("path"))
    try:
        await send({"type": "http.response.start", "status": 503, "headers": _HEADERS})
        await send({"type": "http.response.body", "body": _BODY})
    except Exception:  # the answer had started (or the client is gone): the connection closes
        log.debug("no 503 for %s %s: its answer had started", scope.get("method"), scope.get("path"))
