"""The size of a request head: its URL (``414`` past ``max_url_bytes``) and its request line
and headers (``431`` past ``max_head_bytes``), each pipelined head measured on its own.

A head is measured as it arrives, a slice at a time (:mod:`emulator.edge.reading`), and
exactly once complete: bytes of a body in the same read do not count.
"""

from __future__ import annotations

from emulator.edge.guard_base import GuardBase, Refused


class HeadLimits(GuardBase):
    """The head guard (see the module doc)."""

    def on_url(self, url: bytes) -> None:
        super().on_url(url)
        if len(self.url) > self.max_url:
            self.refuse(414, "url", f"The request URL is longer than {self.max_url} bytes.")
            raise Refused

    def on_headers_complete(self) -> None:
        # (head_fed, the bytes parsed since the head began, is never less than its size)
        if self.head_fed > self.max_head and head_size(self.url, self.headers) > self.max_head:
            self.refuse(431, "headers", too_large(self.max_head))
            raise Refused
        self.in_head, self.in_body, self.head_due = False, True, None
        super().on_headers_complete()
        answering = self.answering
        while answering and answering[0].response_complete:
            answering.popleft()
        answering.append(self.cycle)

    def head_over(self) -> bool:
        """Called after each slice of a head being received: True (and refused) once it
        has passed its bound."""
        if self.head_fed > self.max_head:
            self.refuse(431, "headers", too_large(self.max_head))
            return True
        return False


def head_size(url: bytes, headers: list[tuple[bytes, bytes]]) -> int:
    """The bytes of a parsed request head: the URL and each header with its separators."""
    return len(url) + sum(len(name) + len(value) + 4 for name, value in headers)


def too_large(max_head: int) -> str:
    """The message of the ``431`` for a head past ``max_head`` bytes."""
    return f"The request line and headers are larger than {max_head} bytes."
