"""Request heads, measured and weighed: a URL past ``max_url_bytes`` gets a ``414``, a
request line and headers past ``max_head_bytes`` a ``431``, each pipelined head on its own
(as it arrives, a slice at a time, and exactly once complete).

A head is also weighed as uvicorn holds it (its text plus ``HEADER_OBJECT_BYTES`` a header)
in the bytes in flight, from its first slice until its answer is out: past
``max_head_weight`` while arriving, a ``431``; one connection's waiting heads past
``max_waiting_heads`` stop its reading; past the in-flight bound, a ``503``.
"""

from __future__ import annotations

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from emulator.edge.forwarded import forwarding
from emulator.edge.guard_base import HEADER_OBJECT_BYTES, GuardBase, Refused
from emulator.edge.refusals import crowded

# uvicorn's own methods this guard calls, read off its class once (see GuardBase)
uvicorn_on_url = HttpToolsProtocol.on_url
uvicorn_on_headers_complete = HttpToolsProtocol.on_headers_complete


class HeadLimits(GuardBase):
    """The head guard (see the module doc)."""

    def on_url(self, url: bytes) -> None:
        uvicorn_on_url(self, url)
        if len(self.url) > self.max_url:
            self.refuse(414, "url", f"The request URL is longer than {self.max_url} bytes.")
            raise Refused

    def on_headers_complete(self) -> None:
        fed, headers = self.head_fed, self.headers  # (the bytes parsed since the head began: never less than its size)
        if fed > self.max_head and head_size(self.url, headers) > self.max_head:
            self.refuse(431, "headers", too_large(self.max_head))
            raise Refused
        weight = fed + HEADER_OBJECT_BYTES * len(headers)
        if weight > self.max_head_weight:
            self.refuse(431, "headers", too_heavy(self.max_head_weight))
            raise Refused
        flight = self.flight
        flight.used += weight - self.head_weight
        if flight.used > flight.limit:
            self.head_weight = weight
            self.refuse(503, "request", crowded())
            raise Refused
        self.in_head = False
        self.in_body = True
        self.head_due = None
        self.head_weight = 0
        self.app = self.forwarded_app if forwarding(headers) else self.direct_app  # the app uvicorn runs it in
        uvicorn_on_headers_complete(self)
        self.settle()
        self.answering.append((self.cycle, weight))
        self.waiting_weight += weight

    def head_over(self) -> bool:
        """Called after each slice of a head still arriving: its weight counted, and True
        (the request refused) once it has passed a bound."""
        if self.head_fed > self.max_head:
            self.refuse(431, "headers", too_large(self.max_head))
            return True
        weight = self.head_fed + HEADER_OBJECT_BYTES * len(self.headers)
        self.count(weight - self.head_weight)
        self.head_weight = weight
        if weight > self.max_head_weight:
            self.refuse(431, "headers", too_heavy(self.max_head_weight))
            return True
        if self.flight.used > self.flight.limit:
            self.refuse(503, "request", crowded())
            return True
        return False


def head_size(url: bytes, headers: list[tuple[bytes, bytes]]) -> int:
    """The bytes of a parsed request head: the URL and each header with its separators."""
    return len(url) + sum(len(name) + len(value) + 4 for name, value in headers)


def too_large(max_head: int) -> str:
    """The message of the ``431`` for a head past ``max_head`` bytes."""
    return f"The request line and headers are larger than {max_head} bytes."


def too_heavy(max_weight: int) -> str:
    """The message of the ``431`` for a head that weighs more than ``max_weight`` as held."""
    return (
        f"The request line and headers take more than {max_weight} bytes to hold "
        f"(their text and {HEADER_OBJECT_BYTES} bytes for each header): send fewer headers."
    )
