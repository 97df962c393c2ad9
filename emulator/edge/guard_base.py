"""What every guard of the protocol shares: the per-connection state and the per-server limits.

:class:`GuardBase` is uvicorn's httptools protocol with the attributes the guards read and
write declared once, and the few methods one guard calls on another declared here so each
guard module can be read (and type-checked) on its own. The guards themselves are the
mixins of :mod:`emulator.edge.deadlines`, :mod:`emulator.edge.refusals`,
:mod:`emulator.edge.heads` and :mod:`emulator.edge.reading`, composed by
:class:`emulator.edge.guarded.GuardedProtocol`. Each overrides only asyncio protocol methods
and parser callbacks, calls uvicorn's own, and reads only public attributes.
"""

from __future__ import annotations

import asyncio
from collections import deque
from typing import Any, ClassVar

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from emulator.edge import connections, corked_writes, forwarded

SLICE = 1024  # bytes of a read parsed at a time outside a body (so requests queue a few at a time)
MOST_QUEUED = 4  # requests waiting behind the one answered before the connection is no longer read
# What one parsed header costs beyond its text while uvicorn holds it: the (name, value)
# tuple, two bytes objects and the list's slot, as the allocator rounds them (169 bytes
# measured for a 3-byte header; tests/edge/test_heads.py measures it against this).
HEADER_OBJECT_BYTES = 176


class GuardBase(HttpToolsProtocol):
    """uvicorn's protocol with the guards' shared state (see the module doc). The
    server's limits are ``limits`` of the per-server subclass that
    :func:`emulator.edge.protocol.http_protocol` makes, copied onto each connection (an
    instance attribute is read faster than a class attribute on the charge path).

    A guard calls uvicorn's method through a module-level name read off uvicorn's class
    once (``uvicorn_on_body = HttpToolsProtocol.on_body``, then ``uvicorn_on_body(self,
    body)``): on Python 3.11 reading an attribute of a class is not specialized, and on
    every call cost a charge about 700 instructions more than reading the module's name."""

    limits: ClassVar[dict[str, Any]] = {}

    # -- the server's limits (from ``limits``) ------------------------------------------
    max_head: int  # bytes of a head's text
    max_head_weight: int  # a head being received, weighed as held (text and objects)
    max_waiting_heads: int  # one connection's heads parsed and not yet answered, weighed
    max_url: int
    max_body: int
    head_timeout: float
    request_timeout: float
    write_timeout: float
    first_due: float  # the earlier of the two deadlines a request starts
    cap: connections.ConnectionCap
    flight: connections.InFlight

    # -- one connection's state (set in __init__: on Python 3.11 an attribute the class
    # also holds is never stored by the specialized path, and these change on every request)
    # (its bytes in flight are ``held_counted``, ``head_weight``, ``waiting_weight`` and
    # ``body_bytes`` together, each counted in the server's as it changes)
    held: bytes  # read and not yet parsed: the rest of a read while requests wait
    held_counted: int  # ... as counted in flight
    chunk: int  # the bytes being parsed
    gated: bool  # reading paused by payemu (through uvicorn's flow control)
    ended: bool  # the client half-closed (EOF) with requests still to answer
    refusal: bytes | None  # a refusal waiting for the answers before it
    before: tuple[Any, ...]  # ... those answers' request cycles
    in_head: bool  # the request arriving: its head ...
    in_body: bool  # ... its body
    head_fed: int  # the bytes parsed since its head began
    body_bytes: int  # its body's bytes so far
    head_weight: int  # the head arriving, as counted in flight
    waiting_weight: int  # the heads of ``answering``, as counted in flight
    declared: int | None  # its Content-Length (0: none), once looked up
    head_due: float | None  # the deadlines now running (event-loop times)
    request_due: float | None
    write_due: float | None
    watch: asyncio.TimerHandle | None  # the one timer: fires at or before the earliest
    watch_at: float
    waiting_from: int  # cap.waiting_order as the connection last began waiting
    answering: deque[tuple[Any, int]]  # (request cycle, its head's weight) whose answers are not all out
    batch: corked_writes.Batch  # the corked writes of the connection's event loop
    forwarded_app: Any  # uvicorn's app, behind its X-Forwarded-* middleware (emulator.edge.forwarded)
    direct_app: Any  # ... the app that middleware wraps, for a request without those headers

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.__dict__.update(self.limits)
        self.held = b""
        self.held_counted = self.chunk = 0
        self.gated = self.ended = False
        self.refusal = None
        self.before = ()
        self.in_head = self.in_body = False
        self.head_fed = self.body_bytes = self.head_weight = self.waiting_weight = 0
        self.declared = None
        self.head_due = self.request_due = self.write_due = None
        self.watch = None
        self.watch_at = 0.0
        self.waiting_from = 0
        self.forwarded_app = self.app
        self.direct_app = forwarded.unwrapped(self.app)

    # -- what one guard asks of another ------------------------------------------------
    def refuse(self, status: int, field: str, message: str) -> None:
        """Answer the request arriving with a JSON error and close (:mod:`emulator.edge.refusals`)."""
        raise NotImplementedError

    def refuse_when_due(self) -> None:
        """Send the refusal once the answers before it are out (:mod:`emulator.edge.refusals`)."""
        raise NotImplementedError

    def head_over(self) -> bool:
        """True (and refused) once the head being received has passed its bound (:mod:`emulator.edge.heads`)."""
        raise NotImplementedError

    def watch_for(self, due: float) -> None:
        """Make sure the deadline timer fires no later than ``due`` (:mod:`emulator.edge.deadlines`)."""
        raise NotImplementedError

    def feed(self) -> None:
        """Parse what is held, a slice at a time (:mod:`emulator.edge.reading`)."""
        raise NotImplementedError

    def settle(self) -> None:
        """Forget the answered requests of ``answering`` and give back their heads' weight."""
        answering = self.answering
        while answering and answering[0][0].response_complete:
            weight = answering.popleft()[1]
            self.waiting_weight -= weight
            self.flight.used -= weight

    def count(self, nbytes: int) -> None:
        """Add ``nbytes`` to the server's bytes in flight."""
        self.flight.used += nbytes


class Refused(Exception):
    """Raised in a parser callback once the request is refused: the parser stops there."""
