"""The application payemu's server runs: Starlette with one router (:mod:`emulator.http.routing`), payemu's
one exception layer (:mod:`emulator.http.failures`), and the stop's JSON 503 (:mod:`emulator.http.shutdown`)."""

from __future__ import annotations

import asyncio

from starlette.applications import Starlette
from starlette.types import ASGIApp, Receive, Scope, Send

from emulator.http import failures, shutdown


class App(Starlette):
    """Starlette, answering a request the server's stop cancels (see the module doc)."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:  # (free unless raised: Python 3.11's exceptions cost nothing until thrown)
            await super().__call__(scope, receive, send)
        except asyncio.CancelledError:
            if scope["type"] != "http":
                raise
            await shutdown.cut(scope, send)  # the server's stop cut it: a JSON 503, no traceback

    def build_middleware_stack(self) -> ASGIApp:
        app: ASGIApp = failures.JsonErrors(self.router)  # in place of Starlette's two exception layers
        for cls, args, kwargs in reversed(self.user_middleware):
            app = cls(app, *args, **kwargs)
        return app
