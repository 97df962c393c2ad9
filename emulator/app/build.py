"""``create_app(settings)``: the Starlette application and its route table."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from emulator import api
from emulator.app.application import App
from emulator.contract.openapi import OpenApi
from emulator.contract.wire import json_response
from emulator.domain import errors
from emulator.domain.config import Settings
from emulator.endpoints import versions
from emulator.endpoints.deferred import Deferred
from emulator.endpoints.pipeline import Call, Reply
from emulator.endpoints.routing import FastRouter, build_routes
from emulator.tenants.runtime import Runtime
from emulator.ui import apidocs, home

if TYPE_CHECKING:
    from emulator.state import Persistence

log = logging.getLogger("payemu")
SWAGGER_PATH = "/swagger/1.0/swagger.json"
# where payemu's own routes are (emulator.control, emulator.ui): built on their first request
OWN_PREFIXES = ("/_emulator", "/favicon.ico")


async def not_built(call: Call) -> Reply:
    """Answer for an operation of another document (``--openapi``) that payemu has no handler for."""
    message = f"{call.operation.operation_id} is not built in this version of payemu."
    return Reply(501, errors.ApiError(501, [(None, [message])]).body)


@contextlib.asynccontextmanager
async def lifespan(app: Starlette) -> AsyncIterator[None]:
    """Background tasks live as long as the server: the scenario-file watcher of ``--watch``
    and the periodic save of ``--state`` (saved once more on the way out)."""
    runtime: Runtime = app.state.runtime
    if runtime.settings.watch:
        from emulator.scenarios import watcher

        runtime.watcher = watcher.start(runtime)
    persistence: Persistence | None = app.state.persistence  # --state (emulator.state)
    if persistence is not None:
        await persistence.start()
    try:
        yield
    finally:
        if runtime.watcher is not None:
            runtime.watcher.stop()
            runtime.watcher = None
        if persistence is not None:
            await persistence.stop()


def create_app(settings: Settings | None = None, openapi: OpenApi | None = None) -> App:
    """The emulator as an ASGI app; ``app.state.runtime`` is its :class:`Runtime`."""
    settings = settings or Settings()
    if openapi is None:
        openapi = versions.load_checked(settings.openapi_path) if settings.openapi_path else OpenApi.load()
    runtime = Runtime(settings, openapi)
    persistence = None
    if settings.state_path:  # --state: the last run's tenants, or StateError
        from emulator.state import open_state

        persistence = open_state(runtime, settings.state_path)
        runtime.index_sessions()
    handlers = api.handlers()
    routes: list[BaseRoute] = [Route(SWAGGER_PATH, _swagger(runtime), methods=["GET"])]
    table = versions.handlers_for(openapi, handlers)
    routes += build_routes(runtime, openapi, table, not_built, chooser=versions.endpoint_for)
    routes.append(Deferred(OWN_PREFIXES, lambda: _own_routes(runtime)))
    routes += home.routes(runtime) + apidocs.routes(runtime)  # first contact: GET / and /docs
    app = App(
        routes=routes,
        lifespan=lifespan,
    )
    app.router = FastRouter(app.router.routes, lifespan=lifespan)
    if persistence is not None:  # --state: answers wait while the file trails (no wrapper without it)
        from emulator.state.gate import Gate

        app.add_middleware(Gate, durable=persistence.durable)
    app.state.runtime = runtime
    app.state.persistence = persistence
    return app


def _own_routes(runtime: Runtime) -> list[BaseRoute]:
    """The control API, the hosted page, the dashboard and the eWallet library's endpoints
    (built on the first request under :data:`OWN_PREFIXES`)."""
    from emulator import control
    from emulator.ui import routes as pages

    return [*control.routes(runtime), *pages.routes(runtime)]


def _swagger(runtime: Runtime) -> Any:
    async def swagger(request: Request) -> Response:
        tenant = runtime.tenants.get(request.headers.get("x-api-key"))
        return json_response(200, versions.served_by(runtime, tenant).document)

    return swagger
