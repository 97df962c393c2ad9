"""The application payemu's server runs: Starlette with one router (:mod:`emulator.http.routing`) and
payemu's one exception layer (:mod:`emulator.http.failures`), which also answers a request the
server's stop cuts (:mod:`emulator.http.shutdown`)."""

from __future__ import annotations

from starlette.applications import Starlette
from starlette.types import ASGIApp

from emulator.http import failures


class App(Starlette):
    """Starlette with payemu's exception layer in place of its own two (see the module doc)."""

    def build_middleware_stack(self) -> ASGIApp:
        app: ASGIApp = failures.JsonErrors(self.router)
        for cls, args, kwargs in reversed(self.user_middleware):
            app = cls(app, *args, **kwargs)
        return app
