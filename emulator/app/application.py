"""The application payemu's server runs: Starlette with one router (:mod:`emulator.endpoints.routing`) and
payemu's one exception layer (:mod:`emulator.app.failures`), which also answers a request the
server's stop cuts (:mod:`emulator.app.shutdown`).

The exception layer is the application's own call, around the router: one coroutine
between the server and the router rather than Starlette's call and a middleware (about
2,200 instructions a charge). With user middleware (``--state``'s gate, a test's), it sits inside
them instead, as :class:`~emulator.app.failures.JsonErrors`, as Starlette's exception
middleware would."""

from __future__ import annotations

from starlette.applications import Starlette
from starlette.types import ASGIApp, Receive, Scope, Send

from emulator.app import failures


class App(Starlette):
    """Starlette whose own call is payemu's exception layer (see the module doc)."""

    def build_middleware_stack(self) -> ASGIApp:
        # the router's own stack (the router itself: payemu gives it no middleware), one call
        # nearer than the router, whose __call__ only calls it; user middleware wraps the
        # exception layer, so its answers pass through them as every other answer does
        app: ASGIApp = self.router.middleware_stack
        if self.user_middleware:
            app = failures.JsonErrors(app)
            for cls, args, kwargs in reversed(self.user_middleware):
                app = cls(app, *args, **kwargs)
        return app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        scope["app"] = self
        if self.middleware_stack is None:
            self.middleware_stack = self.build_middleware_stack()
        try:
            await self.middleware_stack(scope, receive, send)
        except BaseException as exc:
            if self.user_middleware or scope["type"] != "http":  # (answered inside the user middleware)
                raise
            await failures.answer(exc, scope, receive, send)
