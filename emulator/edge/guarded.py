"""The protocol payemu's server runs: uvicorn's httptools protocol with payemu's guards,
one concern to a module (docs/http-limits-and-exposure.md): :mod:`~emulator.edge.reading`
(slices, pipelines, bytes in flight, bodies, half-close), :mod:`~emulator.edge.heads` (URL
and head sizes and weights), :mod:`~emulator.edge.refusals` (JSON errors in their place),
:mod:`~emulator.edge.deadlines` (one timer); here, the connection's life: the cap of
:mod:`~emulator.edge.connections`, the corked transport, each request's
``scope["extensions"]``. The server's limits are class attributes of a subclass made per
server (:func:`emulator.edge.protocol.http_protocol`).
"""

from __future__ import annotations

import asyncio
from collections import deque
from typing import Any, cast

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from emulator.contract.wire import ABORT
from emulator.edge import connections
from emulator.edge.corked_writes import Corked
from emulator.edge.deadlines import Deadlines
from emulator.edge.heads import HeadLimits
from emulator.edge.reading import Reading
from emulator.edge.refusals import Refusals

# uvicorn's own methods this guard calls, read off its class once (see GuardBase)
uvicorn_connection_made = HttpToolsProtocol.connection_made
uvicorn_connection_lost = HttpToolsProtocol.connection_lost
uvicorn_on_message_begin = HttpToolsProtocol.on_message_begin


class GuardedProtocol(Refusals, Deadlines, HeadLimits, Reading):
    """uvicorn's protocol with payemu's guards (see the module doc). Each method of
    uvicorn's is overridden by one guard at most, which calls uvicorn's own read off its
    class (``uvicorn_on_body(self, body)``, see
    :class:`~emulator.edge.guard_base.GuardBase`): on the charge path that is cheaper than
    ``super()``, which walks the guards' classes on every call."""

    def connection_made(self, transport: Any) -> None:
        corked = Corked(transport, self.loop, self.may_resume)
        self.batch = corked.batch
        uvicorn_connection_made(self, cast(asyncio.Transport, corked))
        transport.set_write_buffer_limits(high=connections.WRITE_HIGH_WATER, low=connections.WRITE_LOW_WATER)
        self.answering = deque()
        self.extensions = {ABORT: self.transport.abort}  # each request's scope["extensions"]
        cap = self.cap
        self.waiting_from = next(cap.waiting_order)
        count = len(self.connections)
        if count > cap.limit and not cap.admit(self, self.connections, count):
            self.refuse(503, "connection", f"payemu has {cap.limit} connections open (its cap); retry shortly.")
            return
        self.head_due = self.loop.time() + self.head_timeout
        self.watch_for(self.head_due)

    def connection_lost(self, exc: Exception | None) -> None:
        self.stop_deadlines()
        self.count(-(self.held_counted + self.head_weight + self.waiting_weight + self.body_bytes))
        self.held = b""
        self.held_counted = self.head_weight = self.waiting_weight = self.body_bytes = 0
        uvicorn_connection_lost(self, exc)
        self.cap.released(len(self.connections))

    def on_message_begin(self) -> None:
        uvicorn_on_message_begin(self)
        self.scope["extensions"] = self.extensions  # type: ignore[typeddict-item]  # (payemu's own extension)
        self.in_head = True
        self.head_fed = self.chunk
        self.body_bytes = 0
        self.declared = None
        now = self.loop.time()
        self.head_due = now + self.head_timeout
        self.request_due = now + self.request_timeout
        self.waiting_from = next(self.cap.waiting_order)
        if self.watch is None or now + self.first_due < self.watch_at:  # (else it fires soon enough)
            self.watch_for(now + self.first_due)

    # -- the connection cap (connections.Waiting) ----------------------------------------
    def waiting_since(self) -> int | None:
        if self.refusal is not None or self.transport.is_closing():
            return None
        if self.in_head or self.in_body or all(c.response_complete for c, _ in self.answering):
            return self.waiting_from  # a request arriving (however slowly), or idle
        return None

    def make_room(self) -> None:
        self.transport.close()
