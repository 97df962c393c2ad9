"""Back-pressure for ``--state``: no answer leaves while the file trails by more than
:data:`LAG_SECONDS`.

The saver notes when the collection of each save that reached the disk began: everything
acknowledged before that moment is in the file. :class:`Gate` holds each answer's first
message while that moment is more than :data:`LAG_SECONDS` old, until a save catches up.
Held answers free the event loop and the cores for the saver and its writer thread, so
a load however heavy cannot outrun the file: a change is on disk at most
:data:`BOUND_SECONDS` after its acknowledgement (docs/state.md has the reasoning and the
figures). A quiet server pays one clock reading per answer."""

from __future__ import annotations

import asyncio
import contextlib
import time

from starlette.types import ASGIApp, Message, Receive, Scope, Send

LAG_SECONDS = 0.5  # how far the file may trail the acknowledgements before answers wait
BOUND_SECONDS = 1.0  # the promise: an acknowledged change is on disk within this


class Durable:
    """The moment up to which every change is on disk, and a way to wait for it to move."""

    def __init__(self) -> None:
        self.until = time.monotonic()
        self.broken = False  # a save failed: waiting would hold every answer for nothing
        self.stopped = False  # no save will come (the saving stopped with the server's lifespan)
        self._moved = asyncio.Event()

    def saved(self, started: float) -> None:
        """A save whose collection began at ``started`` (monotonic) is committed."""
        self.until = max(self.until, started)
        self.broken = False
        self._moved.set()
        self._moved = asyncio.Event()

    def failed(self) -> None:
        self.broken = True
        self._moved.set()

    def stop(self) -> None:
        """No save comes after this one: answers no longer wait (they would wait for ever)."""
        self.stopped = True
        self._moved.set()

    def behind(self) -> bool:
        return not self.broken and not self.stopped and time.monotonic() - self.until > LAG_SECONDS

    async def catch_up(self) -> None:
        """Return once the file trails by at most :data:`LAG_SECONDS` (or saving failed)."""
        while self.behind():
            moved = self._moved
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(moved.wait(), LAG_SECONDS)


class Gate:
    """ASGI middleware: an answer starts only once :meth:`Durable.catch_up` returns."""

    def __init__(self, app: ASGIApp, durable: Durable) -> None:
        self.app = app
        self.durable = durable

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        durable = self.durable

        async def sending(message: Message) -> None:
            if message["type"] == "http.response.start" and durable.behind():
                await durable.catch_up()
            await send(message)

        await self.app(scope, receive, sending)
