"""A real payemu server for the tests that need real sockets (concurrency, dropped
connections): the same launcher and HTTP stack as ``payemu serve``."""

from __future__ import annotations

from starlette.applications import Starlette

from emulator.edge.server import BackgroundServer


class LiveServer(BackgroundServer):
    def __init__(self, app: Starlette) -> None:
        super().__init__(app, app.state.runtime.settings, backlog=512)
