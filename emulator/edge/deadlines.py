"""The deadlines of a connection, kept by one timer: the head's and the whole request's
(``408`` with payemu's JSON error), an idle connection that never sent a byte (closed
quietly), and a client that reads nothing for ``write_timeout_seconds`` (cut).

The timer fires at or before the earliest deadline running, looks at them all, and sleeps
again until the next: a request starts two deadlines and stops them without touching the
event loop's timers.
"""

from __future__ import annotations

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from emulator.edge.guard_base import GuardBase

# uvicorn's own methods this guard calls, read off its class once (see GuardBase)
uvicorn_pause_writing = HttpToolsProtocol.pause_writing
uvicorn_resume_writing = HttpToolsProtocol.resume_writing


class Deadlines(GuardBase):
    """The deadline guard (see the module doc): uvicorn's write flow control, timed."""

    def pause_writing(self) -> None:
        uvicorn_pause_writing(self)
        self.write_due = self.loop.time() + self.write_timeout
        self.watch_for(self.write_due)

    def resume_writing(self) -> None:
        self.write_due = None
        uvicorn_resume_writing(self)

    def watch_for(self, due: float) -> None:
        """Make sure the timer fires no later than ``due``; once it fires it looks at
        the deadlines then running and sleeps again until the earliest."""
        if self.watch is not None:
            if self.watch_at <= due:
                return
            self.watch.cancel()
        self.watch_at = due
        self.watch = self.loop.call_at(due, self.check)

    def check(self) -> None:
        self.watch = None
        now = self.loop.time()
        if self.write_due is not None and now >= self.write_due:
            self.transport.abort()  # a client that reads nothing: what waits for it is dropped
        elif self.transport.is_closing():
            if self.write_due is not None:
                self.watch_for(self.write_due)
        elif self.request_due is not None and now >= self.request_due:
            message = f"The request (headers and body) did not arrive within {self.request_timeout:g} s."
            self.refuse(408, "body", message)
        elif self.head_due is not None and now >= self.head_due:
            if self.in_head:
                message = f"The request line and headers did not arrive within {self.head_timeout:g} s."
                self.refuse(408, "headers", message)
            else:  # not a byte came: closed quietly, as uvicorn closes idle connections
                self.transport.close()
        else:
            pending = [due for due in (self.head_due, self.request_due, self.write_due) if due is not None]
            if pending:
                self.watch_for(min(pending))

    def stop_deadlines(self) -> None:
        """Stop every deadline and the timer (the connection is gone)."""
        self.head_due = self.request_due = self.write_due = None
        if self.watch is not None:
            self.watch.cancel()
