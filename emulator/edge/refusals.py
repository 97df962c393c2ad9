"""Refusals in their place: a request payemu will not run gets a whole JSON answer
(payemu's error body, never uvicorn's ``text/plain``) and the connection closes, once the
answers to the requests before it on the connection are out.

uvicorn answers a request httptools rejects with its own ``400`` from inside
``data_received`` (Kludex/uvicorn#1352): payemu's reading guard feeds the parser itself, so
every refusal (``400``, ``408``, ``413``, ``414``, ``431``, ``503``) is made here.
"""

from __future__ import annotations

from http import HTTPStatus

from emulator.contract.wire import dumps
from emulator.domain import errors
from emulator.edge import connections
from emulator.edge.guard_base import GuardBase


class Refusals(GuardBase):
    """The refusal guard (see the module doc)."""

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
        self.before = tuple(c for c, _ in self.answering if c is not own or started)
        self.refusal = b"" if started else refusal(status, field, message)
        if self.in_head:  # the head's headers go now: no request cycle holds them yet
            self.headers.clear()
        self.in_head = self.in_body = False
        self.head_due = self.request_due = None
        self.count(-self.held_counted - self.head_weight)
        self.held, self.held_counted, self.head_weight = b"", 0, 0
        self.gated = True
        self.flow.pause_reading()
        self.refuse_when_due()

    def refuse_when_due(self) -> None:
        if all(cycle.response_complete for cycle in self.before):
            if self.refusal:
                self.transport.write(self.refusal)
            self.transport.close()


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
