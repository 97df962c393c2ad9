"""The one fake transport of the suite: what a protocol writes to and asks of a socket,
for driving uvicorn's protocol (or payemu's guarded one, or a corked transport) without
the network. Modelled on uvicorn's own tests' ``MockTransport``.

What is written is kept in ``written``; with a shared ``log``, every transport that shares
it also notes there, in order, ``(name, data)`` for each write and ``(name, b"<close>")``
or ``(name, b"<abort>")``, so tests can see how writes of several connections interleave.
``reading`` follows pause and resume; ``on_resume`` (when set) is called as reading resumes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


class FakeTransport:
    """A connected socket's transport, as a protocol sees it (see the module doc)."""

    def __init__(self, name: str = "client", log: list[tuple[str, bytes]] | None = None) -> None:
        self.name = name
        self.log = log
        self.written: list[bytes] = []
        self.closed = False
        self.aborted = False
        self.reading = True
        self.pauses = 0  # calls that paused reading
        self.resumes = 0  # calls that resumed it
        self.on_resume: Callable[[], None] | None = None

    def write(self, data: bytes) -> None:
        self.written.append(data)
        if self.log is not None:
            self.log.append((self.name, data))

    def close(self) -> None:
        if self.log is not None:
            self.log.append((self.name, b"<close>"))
        self.closed = True

    def abort(self) -> None:
        if self.log is not None:
            self.log.append((self.name, b"<abort>"))
        self.aborted = True

    def is_closing(self) -> bool:
        return self.closed or self.aborted

    def set_write_buffer_limits(self, high: int | None = None, low: int | None = None) -> None:
        pass

    def pause_reading(self) -> None:
        self.reading = False
        self.pauses += 1

    def resume_reading(self) -> None:
        self.reading = True
        self.resumes += 1
        if self.on_resume is not None:
            self.on_resume()

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return {"sockname": ("127.0.0.1", 8000), "peername": ("127.0.0.1", 50000)}.get(name, default)
