"""The application payemu's server runs: Starlette with one router (:mod:`emulator.endpoints.routing`) and
payemu's one exception layer (:mod:`emulator.app.failures`), which also answers a request the
server's stop cuts (:mod:`emulator.app.shutdown`)."""

from __future__ import annotations

from starlette.applications import Starlette
from starlette.types import ASGIApp

from emulator.app import failures


class App(Starlette):
    """Starlette with payemu's exception layer in place of its own two (see the module doc)."""

    def build_middleware_stack(self) -> ASGIApp:
        # the router's own stack (the router itself: payemu gives it no middleware), one call
        # nearer than the router, whose __call__ only calls it
        app: ASGIApp = failures.JsonErrors(self.router.middleware_stack)
        for cls, args, kwargs in reversed(self.user_middleware):
            app = cls(app, *args, **kwargs)
        return app
