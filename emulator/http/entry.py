"""The application payemu's server runs: Starlette, whose one router finds every request's
endpoint (:class:`~emulator.http.routing.FastRouter`), and whose requests cut by the
server's stop are answered with payemu's JSON ``503`` (:mod:`emulator.http.shutdown`)."""

from __future__ import annotations

import asyncio

from starlette.applications import Starlette
from starlette.types import Receive, Scope, Send

from emulator.http import shutdown


class App(Starlette):
    """Starlette, answering a request the server's stop cancels (see the module doc)."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:  # (free unless raised: Python 3.11's exceptions cost nothing until thrown)
            await super().__call__(scope, receive, send)
        except asyncio.CancelledError:
            if scope["type"] != "http":
                raise
            await shutdown.cut(scope, send)  # the server's stop cut it: a JSON 503, no traceback
